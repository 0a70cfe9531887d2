/* SPDX-License-Identifier: MIT */
/*
 * xdr/oncrpc_rm.c - ONC RPC record marking reassembly (RFC 5531 section
 * 11), one implementation for the TCP client and server.
 *
 * State machine: reading a marker (mark_have of 4 bytes), then reading a
 * fragment (frag_left bytes) straight into the record buffer; after a
 * fragment with the last bit the record is complete and stays so until
 * the caller takes it (rrr__rm_next). A marker is bounded against the
 * caller's maximum record size - the fragment alone and the record so far
 * plus the fragment, both without overflow - before the buffer grows, so a
 * hostile length costs nothing. A complete record blocks further input,
 * so a caller can never overwrite a record it has not consumed.
 *
 * The contracts are in xdr/oncrpc_rm.h. Nothing here blocks or locks;
 * only the buffer growth allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/oncrpc.h>

#include "xdr/oncrpc_rm.h"

#define RM_FIRST_CAP 4096u

void rrr__rm_init(struct rrr__rm *r, uint32_t max_record)
{
	memset(r, 0, sizeof(*r));
	if (max_record > RRR_RPC_RM_LEN_MASK)
		max_record = RRR_RPC_RM_LEN_MASK;
	r->max_record = max_record;
}

void rrr__rm_fini(struct rrr__rm *r)
{
	free(r->rec);
	r->rec = NULL;
	r->cap = 0;
	rrr__rm_reset(r);
}

void rrr__rm_reset(struct rrr__rm *r)
{
	r->mark_have = 0;
	r->in_frag = false;
	r->last_frag = false;
	r->complete = false;
	r->broken = false;
	r->frag_left = 0;
	r->len = 0;
}

void rrr__rm_next(struct rrr__rm *r)
{
	r->complete = false;
	r->len = 0;
}

void *rrr__rm_take(struct rrr__rm *r, size_t *cap)
{
	void *p = r->complete ? r->rec : NULL;

	*cap = p ? r->cap : 0;
	if (p) {
		r->rec = NULL;
		r->cap = 0;
	}
	if (r->complete)
		rrr__rm_next(r);
	return p;
}

void rrr__rm_give(struct rrr__rm *r, void *buf, size_t cap)
{
	/* without a buffer nothing of the record being read has been kept
	 * (a fragment with bytes allocates first): r->len is 0 */
	if (buf && !r->rec && cap <= r->max_record) {
		r->rec = buf;
		r->cap = cap;
		return;
	}
	free(buf);
}

void *rrr__rm_want(struct rrr__rm *r, size_t *len)
{
	*len = 0;
	if (r->complete || r->broken)
		return NULL;
	if (r->in_frag) {
		*len = r->frag_left;
		return r->rec + r->len;
	}
	*len = 4u - r->mark_have;
	return r->mark + r->mark_have;
}

/* Make room for @need bytes in all. */
static int rm_grow(struct rrr__rm *r, size_t need)
{
	size_t cap = r->cap ? r->cap : RM_FIRST_CAP;
	uint8_t *p;

	if (need <= r->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > r->max_record)
		cap = r->max_record;
	p = realloc(r->rec, cap);
	if (!p)
		return -ENOMEM;
	r->rec = p;
	r->cap = cap;
	return 0;
}

/* A whole marker is in: check it and set up its fragment. */
static int rm_marker(struct rrr__rm *r)
{
	uint32_t m, flen;
	int err;

	m = (uint32_t)r->mark[0] << 24 | (uint32_t)r->mark[1] << 16 | (uint32_t)r->mark[2] << 8 |
	    r->mark[3];
	r->mark_have = 0;
	flen = m & RRR_RPC_RM_LEN_MASK;
	r->last_frag = (m & RRR_RPC_RM_LAST) != 0;
	/* bound before any arithmetic or allocation */
	if (flen > r->max_record || r->len > r->max_record - flen) {
		r->broken = true;
		return -EMSGSIZE;
	}
	err = rm_grow(r, r->len + flen);
	if (err) {
		r->broken = true;
		return err;
	}
	r->frag_left = flen;
	r->in_frag = flen > 0;
	return 0;
}

int rrr__rm_commit(struct rrr__rm *r, size_t n)
{
	int err;

	if (r->broken)
		return -EMSGSIZE;
	if (r->complete || !n)
		return r->complete ? 1 : 0;
	if (r->in_frag) {
		if (n > r->frag_left)
			n = r->frag_left;
		r->len += n;
		r->frag_left -= (uint32_t)n;
		if (r->frag_left)
			return 0;
		r->in_frag = false;
	} else {
		if (n > 4u - r->mark_have)
			n = 4u - r->mark_have;
		r->mark_have += (unsigned)n;
		if (r->mark_have < 4)
			return 0;
		err = rm_marker(r);
		if (err)
			return err;
		if (r->in_frag)
			return 0;
	}
	/* a fragment (possibly empty) ended */
	if (!r->last_frag)
		return 0;
	r->last_frag = false;
	r->complete = true;
	return 1;
}

int rrr__rm_feed(struct rrr__rm *r, const void *p, size_t n, size_t *used)
{
	const uint8_t *in = p;
	size_t off = 0;
	int rc = 0;

	while (off < n) {
		size_t room, take;
		void *dst = rrr__rm_want(r, &room);

		if (!dst) {
			rc = r->broken ? -EMSGSIZE : 1;
			break;
		}
		take = n - off < room ? n - off : room;
		memcpy(dst, in + off, take);
		off += take;
		rc = rrr__rm_commit(r, take);
		if (rc)
			break;
	}
	*used = off;
	return rc;
}

/* ------------------------------------------------------------ sending */
static const uint8_t zero_pad[4];

int rrr__rm_out_set(struct rrr__rm_out *o, uint8_t *buf, size_t blen, size_t split,
		    const struct iovec *piov, unsigned pniov, uint32_t plen)
{
	uint64_t len = blen;
	uint32_t pad = 0, rm;

	if (blen < 4)
		return -EINVAL;
	if (piov) {
		if (split < 4 || split > blen || pniov > RRR_XDR_PAYLOAD_MAX_IOV)
			return -EINVAL;
		pad = (4u - (plen & 3u)) & 3u;
		len += (uint64_t)plen + pad;
	} else {
		split = blen;
		pniov = 0;
		plen = 0;
	}
	if (len - 4 > RRR_RPC_RM_LEN_MASK)
		return -EMSGSIZE;
	rm = RRR_RPC_RM_LAST | (uint32_t)(len - 4);
	buf[0] = (uint8_t)(rm >> 24);
	buf[1] = (uint8_t)(rm >> 16);
	buf[2] = (uint8_t)(rm >> 8);
	buf[3] = (uint8_t)rm;
	*o = (struct rrr__rm_out){.buf = buf, .blen = blen, .split = split, .piov = piov,
				  .pniov = pniov, .plen = plen, .pad = pad, .len = (size_t)len};
	return 0;
}

/* Append [p, p+len) minus what @skip still covers to @iov. */
static void iov_add(struct iovec *iov, unsigned *n, size_t *skip, const void *p, size_t len)
{
	if (*skip >= len) {
		*skip -= len;
		return;
	}
	iov[*n].iov_base = (uint8_t *)p + *skip;
	iov[*n].iov_len = len - *skip;
	(*n)++;
	*skip = 0;
}

unsigned rrr__rm_out_iov(const struct rrr__rm_out *o, struct iovec *iov)
{
	size_t skip = o->off;
	unsigned n = 0;

	iov_add(iov, &n, &skip, o->buf, o->split);
	for (unsigned i = 0; i < o->pniov; i++)
		if (o->piov[i].iov_len)
			iov_add(iov, &n, &skip, o->piov[i].iov_base, o->piov[i].iov_len);
	iov_add(iov, &n, &skip, zero_pad, o->pad);
	iov_add(iov, &n, &skip, o->buf + o->split, o->blen - o->split);
	return n;
}

int rrr__rm_out_copy(struct rrr_xdr *xdr, const struct iovec *iov, unsigned niov, uint32_t len)
{
	uint8_t *p = rrr_xdr_cursor(xdr);
	int rc = rrr_xdr_skip(xdr, len); /* zero-fills len + pad, checks room */

	if (rc)
		return rc;
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return 0;
}
