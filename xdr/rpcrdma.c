/* SPDX-License-Identifier: MIT */
/*
 * xdr/rpcrdma.c - RPC-over-RDMA version 1 transport header (RFC 8166) and
 * RDMA-CM connection private data (RFC 8797).
 *
 * Normal operation. The encoder writes what its caller gives it: the header
 * prefix, then for RDMA_MSG / RDMA_NOMSG the three chunk lists, or for
 * RDMA_ERROR the error body. The decoder is the first code that touches
 * bytes from a peer. It parses with a bounded rrr_xdr stream and validates
 * the WHOLE header before it returns 0:
 *
 *   - every list entry is counted against the caller's limits before it is
 *     stored (the parsed arrays have fixed ceilings; nothing is allocated);
 *   - a write/reply chunk's segment count is bounded, then checked against
 *     the bytes left (16 per segment) before the loop;
 *   - read positions are multiples of 4 and non-decreasing; entries with
 *     one position form one chunk, so they are contiguous; a chunk must end
 *     (position + total length) at or before the next chunk's position in
 *     the reconstructed XDR stream - otherwise the chunks overlap;
 *   - segment lengths of one chunk are summed in 64 bits and the sum must
 *     fit in 32 (-EOVERFLOW), and offset + length must not wrap 64 bits;
 *   - zero-length segments and empty chunks are accepted only where the
 *     caller says so (a requester decoding a reply: unused write chunks);
 *   - a read list in a reply is refused.
 *
 * A caller can therefore post RDMA Reads/Writes for the parsed segments
 * (still checking each against its own registrations) without re-checking
 * structure.
 *
 * Recovery. A decode error leaves @hdr as garbage except hdr->xid, which
 * is valid once 4 bytes arrived, so the caller can answer RDMA_ERROR:
 * -EPROTONOSUPPORT -> ERR_VERS, -E2BIG/-EINVAL/-EOVERFLOW -> ERR_CHUNK;
 * -EBADMSG and -EOPNOTSUPP mean the message is dropped. Nothing to undo:
 * the decoder neither allocates nor writes outside @hdr.
 *
 * Contracts (arguments, errors, ownership) of the exported functions are
 * the doc comments in include/rrr/rpcrdma.h. None of them blocks, allocates or
 * takes a lock; a stream or header struct is used by one thread at a time.
 */
#include <errno.h>
#include <string.h>

#include <rrr/rpcrdma.h>

/*
 * Transport header (RFC 8166 section 4), every field a big-endian 32-bit
 * XDR word unless marked (64):
 *
 *   +----------+----------+-------------+-----------+
 *   | rdma_xid | rdma_vers| rdma_credit | rdma_proc |   header prefix
 *   +----------+----------+-------------+-----------+
 *
 *   rdma_proc = RDMA_MSG (0) or RDMA_NOMSG (1):
 *
 *   read list: zero or more entries, each introduced by a 1, ended by a 0
 *   +---+----------+--------+--------+------------+       +---+
 *   | 1 | position | handle | length | offset(64) |  ...  | 0 |
 *   +---+----------+--------+--------+------------+       +---+
 *
 *   write list: zero or more chunks, each a counted segment array
 *   +---+--------+--------+--------+------------+-- ... --+       +---+
 *   | 1 | nsegs  | handle | length | offset(64) |  nsegs  |  ...  | 0 |
 *   +---+--------+--------+--------+------------+-- ... --+       +---+
 *
 *   reply chunk: optional counted segment array
 *   +---+                +---+--------+---------- ... ---------+
 *   | 0 |   (absent)  or | 1 | nsegs  | nsegs x (handle, length, offset) |
 *   +---+                +---+--------+---------- ... ---------+
 *
 *   then, for RDMA_MSG, the RPC message itself (hdr_len marks its start).
 *
 *   rdma_proc = RDMA_ERROR (4):
 *   +--------------+----------+-----------+      +---------------+
 *   | ERR_VERS (1) | vers_low | vers_high |  or  | ERR_CHUNK (2) |
 *   +--------------+----------+-----------+      +---------------+
 */

static void put_seg(struct rrr_xdr *x, const struct rrr_rdma_seg *s, int *rc)
{
	if (*rc)
		return;
	*rc = rrr_xdr_put_u32(x, s->handle);
	if (!*rc)
		*rc = rrr_xdr_put_u32(x, s->length);
	if (!*rc)
		*rc = rrr_xdr_put_u64(x, s->offset);
}

static int put_chunk(struct rrr_xdr *x, const struct rrr_rdma_chunk *c)
{
	int rc;

	if (c->nsegs > RRR_RDMA_MAX_CHUNK_SEGS)
		return -EINVAL;
	rc = rrr_xdr_put_count(x, c->nsegs);
	for (uint32_t i = 0; i < c->nsegs; i++)
		put_seg(x, &c->segs[i], &rc);
	return rc;
}

void rrr_rdma_limits_default(struct rrr_rdma_limits *lim)
{
	if (!lim)
		return;
	lim->max_read_segs = RRR_RDMA_MAX_READ_SEGS;
	lim->max_write_chunks = RRR_RDMA_MAX_WRITE_CHUNKS;
	lim->max_chunk_segs = RRR_RDMA_MAX_CHUNK_SEGS;
	lim->is_reply = false;
	lim->allow_zero_len = false;
}

int rrr_rdma_hdr_encode(struct rrr_xdr *xdr, const struct rrr_rdma_hdr *hdr)
{
	int rc;

	if (!xdr || !hdr)
		return -EINVAL;
	if (hdr->proc != RRR_RDMA_MSG && hdr->proc != RRR_RDMA_NOMSG && hdr->proc != RRR_RDMA_ERROR)
		return -EINVAL;
	if (hdr->proc == RRR_RDMA_ERROR && hdr->err != RRR_ERR_VERS && hdr->err != RRR_ERR_CHUNK)
		return -EINVAL;
	if (hdr->proc != RRR_RDMA_ERROR &&
	    (hdr->nread > RRR_RDMA_MAX_READ_SEGS || hdr->nwrite > RRR_RDMA_MAX_WRITE_CHUNKS))
		return -EINVAL;

	rc = rrr_xdr_put_u32(xdr, hdr->xid);
	if (!rc)
		rc = rrr_xdr_put_u32(xdr, hdr->vers);
	if (!rc)
		rc = rrr_xdr_put_u32(xdr, hdr->credits);
	if (!rc)
		rc = rrr_xdr_put_enum(xdr, hdr->proc);
	if (rc)
		return rc;

	if (hdr->proc == RRR_RDMA_ERROR) {
		rc = rrr_xdr_put_enum(xdr, hdr->err);
		if (!rc && hdr->err == RRR_ERR_VERS) {
			rc = rrr_xdr_put_u32(xdr, hdr->vers_low);
			if (!rc)
				rc = rrr_xdr_put_u32(xdr, hdr->vers_high);
		}
		return rc;
	}

	for (uint32_t i = 0; i < hdr->nread && !rc; i++) {
		rc = rrr_xdr_put_bool(xdr, true);
		if (!rc)
			rc = rrr_xdr_put_u32(xdr, hdr->read[i].position);
		put_seg(xdr, &hdr->read[i].seg, &rc);
	}
	if (!rc)
		rc = rrr_xdr_put_bool(xdr, false);
	for (uint32_t i = 0; i < hdr->nwrite && !rc; i++) {
		rc = rrr_xdr_put_bool(xdr, true);
		if (!rc)
			rc = put_chunk(xdr, &hdr->write[i]);
	}
	if (!rc)
		rc = rrr_xdr_put_bool(xdr, false);
	if (!rc)
		rc = rrr_xdr_put_bool(xdr, hdr->has_reply);
	if (!rc && hdr->has_reply)
		rc = put_chunk(xdr, &hdr->reply);
	return rc;
}

int rrr_rdma_err_encode(struct rrr_xdr *xdr, uint32_t xid, uint32_t credits, uint32_t err)
{
	struct rrr_rdma_hdr h;

	if (err != RRR_ERR_VERS && err != RRR_ERR_CHUNK)
		return -EINVAL;
	memset(&h, 0, offsetof(struct rrr_rdma_hdr, read));
	h.xid = xid;
	h.vers = RRR_RPCRDMA_VERSION;
	h.credits = credits;
	h.proc = RRR_RDMA_ERROR;
	h.err = err;
	h.vers_low = RRR_RPCRDMA_VERSION;
	h.vers_high = RRR_RPCRDMA_VERSION;
	return rrr_rdma_hdr_encode(xdr, &h);
}

/* ------------------------------------------------------------------ decode */

/* A list discriminator: 0 or 1, anything else is a malformed message. */
static int get_more(struct rrr_xdr *x, bool *more)
{
	int rc = rrr_xdr_get_bool(x, more);

	return rc == -EINVAL ? -EBADMSG : rc;
}

static int get_seg(struct rrr_xdr *x, struct rrr_rdma_seg *s)
{
	int rc = rrr_xdr_get_u32(x, &s->handle);

	if (!rc)
		rc = rrr_xdr_get_u32(x, &s->length);
	if (!rc)
		rc = rrr_xdr_get_u64(x, &s->offset);
	if (rc)
		return rc;
	if (s->offset > UINT64_MAX - s->length)
		return -EOVERFLOW;
	return 0;
}

/* A counted segment array: write chunk or reply chunk. */
static int get_chunk(struct rrr_xdr *x, const struct rrr_rdma_limits *lim, struct rrr_rdma_chunk *c)
{
	uint64_t total = 0;
	uint32_t n;
	int rc;

	rc = rrr_xdr_get_count(x, lim->max_chunk_segs, 16, &n);
	if (rc)
		return rc;
	if (n == 0 && !lim->allow_zero_len)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		rc = get_seg(x, &c->segs[i]);
		if (rc)
			return rc;
		if (c->segs[i].length == 0 && !lim->allow_zero_len)
			return -EINVAL;
		total += c->segs[i].length;
		if (total > UINT32_MAX)
			return -EOVERFLOW;
	}
	c->nsegs = n;
	c->total = (uint32_t)total;
	return 0;
}

static int get_read_list(struct rrr_xdr *x, const struct rrr_rdma_limits *lim,
			 struct rrr_rdma_hdr *hdr)
{
	uint64_t chunk_start = 0, chunk_total = 0;
	bool more;
	int rc;

	for (;;) {
		struct rrr_rdma_read_seg *r;

		rc = get_more(x, &more);
		if (rc)
			return rc;
		if (!more)
			return 0;
		if (lim->is_reply)
			return -EINVAL;
		if (hdr->nread >= lim->max_read_segs)
			return -E2BIG;
		r = &hdr->read[hdr->nread];
		rc = rrr_xdr_get_u32(x, &r->position);
		if (!rc)
			rc = get_seg(x, &r->seg);
		if (rc)
			return rc;
		if (r->position & 3u)
			return -EINVAL;
		if (r->seg.length == 0)
			return -EINVAL;
		if (hdr->nread == 0 || r->position != chunk_start) {
			/* A new chunk: it must start at or after the end of
			 * the previous one (positions are non-decreasing and
			 * chunks do not overlap). */
			if (hdr->nread && r->position < chunk_start + chunk_total)
				return -EINVAL;
			chunk_start = r->position;
			chunk_total = 0;
		}
		chunk_total += r->seg.length;
		if (chunk_total > UINT32_MAX)
			return -EOVERFLOW;
		hdr->nread++;
	}
}

static int get_write_list(struct rrr_xdr *x, const struct rrr_rdma_limits *lim,
			  struct rrr_rdma_hdr *hdr)
{
	bool more;
	int rc;

	for (;;) {
		rc = get_more(x, &more);
		if (rc)
			return rc;
		if (!more)
			return 0;
		if (hdr->nwrite >= lim->max_write_chunks)
			return lim->max_write_chunks == 1 ? -EINVAL : -E2BIG;
		rc = get_chunk(x, lim, &hdr->write[hdr->nwrite]);
		if (rc)
			return rc;
		hdr->nwrite++;
	}
}

static uint32_t clamp_u32(uint32_t v, uint32_t max)
{
	return v < max ? v : max;
}

int rrr_rdma_hdr_decode(const void *buf, size_t len, const struct rrr_rdma_limits *lim,
			struct rrr_rdma_hdr *hdr)
{
	struct rrr_rdma_limits l;
	struct rrr_xdr x;
	bool more;
	int rc;

	if (!hdr || (!buf && len))
		return -EINVAL;
	if (lim) {
		l = *lim;
		l.max_read_segs = clamp_u32(l.max_read_segs, RRR_RDMA_MAX_READ_SEGS);
		l.max_write_chunks = clamp_u32(l.max_write_chunks, RRR_RDMA_MAX_WRITE_CHUNKS);
		l.max_chunk_segs = clamp_u32(l.max_chunk_segs, RRR_RDMA_MAX_CHUNK_SEGS);
	} else {
		rrr_rdma_limits_default(&l);
	}

	hdr->xid = hdr->vers = hdr->credits = hdr->proc = 0;
	hdr->nread = hdr->nwrite = 0;
	hdr->has_reply = false;
	hdr->reply.nsegs = hdr->reply.total = 0;
	hdr->err = hdr->vers_low = hdr->vers_high = 0;
	hdr->hdr_len = 0;

	/* The decoder never writes through the stream. */
	rrr_xdr_init(&x, (void *)(uintptr_t)buf, len, RRR_XDR_DECODE);
	rc = rrr_xdr_get_u32(&x, &hdr->xid);
	if (rc)
		return rc;
	/* The four-word prefix is the same in every version (RFC 8166 4.2). */
	if (len < 16)
		return -EBADMSG;
	(void)rrr_xdr_get_u32(&x, &hdr->vers);
	(void)rrr_xdr_get_u32(&x, &hdr->credits);
	(void)rrr_xdr_get_u32(&x, &hdr->proc);
	if (hdr->vers != RRR_RPCRDMA_VERSION)
		return -EPROTONOSUPPORT;

	switch (hdr->proc) {
	case RRR_RDMA_MSG:
	case RRR_RDMA_NOMSG:
		break;
	case RRR_RDMA_ERROR:
		rc = rrr_xdr_get_u32(&x, &hdr->err);
		if (rc)
			return rc;
		if (hdr->err == RRR_ERR_VERS) {
			rc = rrr_xdr_get_u32(&x, &hdr->vers_low);
			if (!rc)
				rc = rrr_xdr_get_u32(&x, &hdr->vers_high);
			if (rc)
				return rc;
		} else if (hdr->err != RRR_ERR_CHUNK) {
			return -EBADMSG;
		}
		hdr->hdr_len = rrr_xdr_pos(&x);
		return 0;
	default: /* RDMA_MSGP, RDMA_DONE (obsolete, RFC 8166 4.5), unknown */
		return -EOPNOTSUPP;
	}

	rc = get_read_list(&x, &l, hdr);
	if (!rc)
		rc = get_write_list(&x, &l, hdr);
	if (!rc)
		rc = get_more(&x, &more);
	if (rc)
		return rc;
	if (more) {
		rc = get_chunk(&x, &l, &hdr->reply);
		if (rc)
			return rc;
		hdr->has_reply = true;
	}
	hdr->hdr_len = rrr_xdr_pos(&x);
	return 0;
}

/* ------------------------------------------------------- RFC 8797 private data */

/*
 * Connection private data (RFC 8797 section 7), 8 bytes:
 *
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |               format identifier 0xF6AB0E18 (big endian)       |
 *   +---------------+-------------+-+---------------+---------------+
 *   |  version (1)  |  reserved   |I|   send size   | receive size  |
 *   +---------------+-------------+-+---------------+---------------+
 *
 *   I: the sender accepts Send With Invalidate. Sizes: (bytes / 1024) - 1.
 */

static uint8_t pd_size_byte(uint32_t bytes)
{
	uint32_t kib = bytes / 1024u;

	if (kib < 1)
		kib = 1;
	if (kib > RRR_RDMA_INLINE_MAX / 1024u)
		kib = RRR_RDMA_INLINE_MAX / 1024u;
	return (uint8_t)(kib - 1u);
}

size_t rrr_rdma_cm_pd_encode(void *buf, const struct rrr_rdma_cm_pd *pd)
{
	uint8_t *p = buf;

	if (!buf || !pd)
		return 0;
	p[0] = (uint8_t)(RRR_RDMA_PD_MAGIC >> 24);
	p[1] = (uint8_t)(RRR_RDMA_PD_MAGIC >> 16);
	p[2] = (uint8_t)(RRR_RDMA_PD_MAGIC >> 8);
	p[3] = (uint8_t)RRR_RDMA_PD_MAGIC;
	p[4] = (uint8_t)RRR_RDMA_PD_VERSION;
	p[5] = pd->remote_inv ? (uint8_t)RRR_RDMA_PD_FLAG_REMOTE_INV : 0;
	p[6] = pd_size_byte(pd->send_size);
	p[7] = pd_size_byte(pd->recv_size);
	return RRR_RDMA_PD_LEN;
}

bool rrr_rdma_cm_pd_decode(const void *buf, size_t len, struct rrr_rdma_cm_pd *pd)
{
	const uint8_t *p = buf;
	uint32_t magic;

	if (!pd)
		return false;
	pd->remote_inv = false;
	pd->send_size = RRR_RDMA_INLINE_DEFAULT;
	pd->recv_size = RRR_RDMA_INLINE_DEFAULT;
	if (!buf || len < RRR_RDMA_PD_LEN)
		return false;
	magic = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (magic != RRR_RDMA_PD_MAGIC || p[4] != RRR_RDMA_PD_VERSION)
		return false;
	/* Reserved flag bits are ignored, as RFC 8797 asks of receivers. */
	pd->remote_inv = (p[5] & RRR_RDMA_PD_FLAG_REMOTE_INV) != 0;
	pd->send_size = ((uint32_t)p[6] + 1u) * 1024u;
	pd->recv_size = ((uint32_t)p[7] + 1u) * 1024u;
	return true;
}
