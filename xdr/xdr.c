/* SPDX-License-Identifier: MIT */
/*
 * xdr/xdr.c - bounded XDR streams (RFC 4506).
 *
 * Normal operation. A stream is a cursor (pos) over a caller-owned buffer
 * (buf, len). Every item is a whole number of 4-byte units, so pos stays a
 * multiple of 4. Each primitive first computes the padded size of the item
 * in 64-bit arithmetic (a uint32_t length plus 3 cannot wrap there), checks
 * it against what is left, and only then touches the buffer: an encoder
 * that runs out of room returns -EMSGSIZE without writing a partial item,
 * and a decoder that runs out of input returns -EBADMSG without reading
 * past the end. Counts and lengths taken from the wire are compared with
 * the caller's maximum before they are used for anything else (the
 * CVE-2024-53151 lesson: bound, then compute).
 *
 * DDP payloads go through an optional hook (struct rrr_xdr_ddp) so the
 * RPC-over-RDMA transport can move them by RDMA; without a hook a payload
 * is an ordinary variable-length opaque, and decoding returns one iovec
 * that points into the stream buffer.
 *
 * Recovery. There is nothing to recover: after an error the stream position
 * is unspecified and the caller discards the stream (or re-inits it). No
 * function allocates, so no error path leaks.
 *
 * Contracts (arguments, errors, ownership) of the exported functions are
 * the doc comments in include/rrr/xdr.h. None of them blocks, allocates or
 * takes a lock; a stream or header struct is used by one thread at a time.
 */
#include <errno.h>
#include <string.h>

#include <rrr/xdr.h>

static inline uint64_t xdr_padded(uint32_t n)
{
	return ((uint64_t)n + 3u) & ~(uint64_t)3u;
}

static inline void be32_store(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t be32_load(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Room for @n more bytes? Returns 0, or the op-specific "no room" error. */
static inline int xdr_room(const struct rrr_xdr *xdr, uint64_t n)
{
	if (n > (uint64_t)(xdr->len - xdr->pos))
		return xdr->op == RRR_XDR_ENCODE ? -EMSGSIZE : -EBADMSG;
	return 0;
}

static inline int xdr_is(const struct rrr_xdr *xdr, enum rrr_xdr_op op)
{
	return xdr && xdr->op == op && xdr->pos <= xdr->len;
}

/* A stream of @op (position in bounds) with room for @n more bytes?
 * Returns 0, -EINVAL, or the op-specific "no room" error. */
static inline int xdr_take(const struct rrr_xdr *xdr, enum rrr_xdr_op op, uint64_t n)
{
	if (!xdr_is(xdr, op))
		return -EINVAL;
	return xdr_room(xdr, n);
}

/* Decode an unsigned int of at most @max into *@w: 0, -EINVAL above @max,
 * or the error of rrr_xdr_get_u32(). */
static int xdr_get_upto(struct rrr_xdr *xdr, uint32_t max, uint32_t *w)
{
	int rc = rrr_xdr_get_u32(xdr, w);

	if (rc)
		return rc;
	return *w > max ? -EINVAL : 0;
}

void rrr_xdr_init(struct rrr_xdr *xdr, void *buf, size_t len, enum rrr_xdr_op op)
{
	xdr->buf = buf;
	xdr->len = buf ? len : 0;
	xdr->pos = 0;
	xdr->op = op;
	xdr->ddp = NULL;
	xdr->ddp_pos = 0;
}

void rrr_xdr_set_ddp(struct rrr_xdr *xdr, const struct rrr_xdr_ddp *ddp)
{
	xdr->ddp = ddp;
}

int rrr_xdr_put_u32(struct rrr_xdr *xdr, uint32_t v)
{
	int rc = xdr_take(xdr, RRR_XDR_ENCODE, 4);

	if (rc)
		return rc;
	be32_store(xdr->buf + xdr->pos, v);
	xdr->pos += 4;
	return 0;
}

int rrr_xdr_get_u32(struct rrr_xdr *xdr, uint32_t *v)
{
	int rc = v ? xdr_take(xdr, RRR_XDR_DECODE, 4) : -EINVAL;

	if (rc)
		return rc;
	*v = be32_load(xdr->buf + xdr->pos);
	xdr->pos += 4;
	return 0;
}

int rrr_xdr_put_u64(struct rrr_xdr *xdr, uint64_t v)
{
	int rc = xdr_take(xdr, RRR_XDR_ENCODE, 8);

	if (rc)
		return rc;
	be32_store(xdr->buf + xdr->pos, (uint32_t)(v >> 32));
	be32_store(xdr->buf + xdr->pos + 4, (uint32_t)v);
	xdr->pos += 8;
	return 0;
}

int rrr_xdr_get_u64(struct rrr_xdr *xdr, uint64_t *v)
{
	int rc = v ? xdr_take(xdr, RRR_XDR_DECODE, 8) : -EINVAL;

	if (rc)
		return rc;
	*v = (uint64_t)be32_load(xdr->buf + xdr->pos) << 32 | be32_load(xdr->buf + xdr->pos + 4);
	xdr->pos += 8;
	return 0;
}

int rrr_xdr_put_bool(struct rrr_xdr *xdr, bool v)
{
	return rrr_xdr_put_u32(xdr, v ? 1u : 0u);
}

int rrr_xdr_get_bool(struct rrr_xdr *xdr, bool *v)
{
	uint32_t w;
	int rc = v ? xdr_get_upto(xdr, 1, &w) : -EINVAL;

	if (rc)
		return rc;
	*v = w == 1;
	return 0;
}

int rrr_xdr_put_enum(struct rrr_xdr *xdr, uint32_t v)
{
	return rrr_xdr_put_u32(xdr, v);
}

int rrr_xdr_get_enum(struct rrr_xdr *xdr, uint32_t max, uint32_t *v)
{
	uint32_t w;
	int rc = v ? xdr_get_upto(xdr, max, &w) : -EINVAL;

	if (rc)
		return rc;
	*v = w;
	return 0;
}

/* Copy @n bytes then zero pad; room for xdr_padded(n) already checked. */
static void xdr_emit(struct rrr_xdr *xdr, const void *p, uint32_t n)
{
	size_t padded = (size_t)xdr_padded(n);

	if (n)
		memcpy(xdr->buf + xdr->pos, p, n);
	if (padded > n)
		memset(xdr->buf + xdr->pos + n, 0, padded - n);
	xdr->pos += padded;
}

int rrr_xdr_put_fixed(struct rrr_xdr *xdr, const void *p, uint32_t n)
{
	int rc = n && !p ? -EINVAL : xdr_take(xdr, RRR_XDR_ENCODE, xdr_padded(n));

	if (rc)
		return rc;
	xdr_emit(xdr, p, n);
	return 0;
}

int rrr_xdr_get_fixed(struct rrr_xdr *xdr, void *p, uint32_t n)
{
	int rc = n && !p ? -EINVAL : xdr_take(xdr, RRR_XDR_DECODE, xdr_padded(n));

	if (rc)
		return rc;
	if (n)
		memcpy(p, xdr->buf + xdr->pos, n);
	xdr->pos += (size_t)xdr_padded(n);
	return 0;
}

int rrr_xdr_put_opaque(struct rrr_xdr *xdr, const void *p, uint32_t n)
{
	int rc = n && !p ? -EINVAL : xdr_take(xdr, RRR_XDR_ENCODE, 4 + xdr_padded(n));

	if (rc)
		return rc;
	be32_store(xdr->buf + xdr->pos, n);
	xdr->pos += 4;
	xdr_emit(xdr, p, n);
	return 0;
}

int rrr_xdr_get_opaque_inline(struct rrr_xdr *xdr, uint32_t max, const void **p, uint32_t *n)
{
	uint32_t len;
	int rc;

	if (!p || !n)
		return -EINVAL;
	rc = rrr_xdr_get_u32(xdr, &len);
	if (rc)
		return rc;
	if (len > max)
		return -E2BIG;
	rc = xdr_room(xdr, xdr_padded(len));
	if (rc)
		return rc;
	*p = xdr->buf + xdr->pos;
	*n = len;
	xdr->pos += (size_t)xdr_padded(len);
	return 0;
}

int rrr_xdr_get_opaque(struct rrr_xdr *xdr, void *p, uint32_t max, uint32_t *n)
{
	const void *src;
	uint32_t len;
	int rc;

	if (!n || (max && !p))
		return -EINVAL;
	rc = rrr_xdr_get_opaque_inline(xdr, max, &src, &len);
	if (rc)
		return rc;
	if (len)
		memcpy(p, src, len);
	*n = len;
	return 0;
}

int rrr_xdr_put_string(struct rrr_xdr *xdr, const char *s)
{
	size_t n;

	if (!s)
		return -EINVAL;
	n = strlen(s);
	if (n > UINT32_MAX - 3u)
		return -EINVAL;
	return rrr_xdr_put_opaque(xdr, s, (uint32_t)n);
}

int rrr_xdr_get_string(struct rrr_xdr *xdr, char *s, uint32_t max)
{
	const void *src;
	uint32_t len;
	int rc;

	if (!s || max == UINT32_MAX)
		return -EINVAL;
	rc = rrr_xdr_get_opaque_inline(xdr, max, &src, &len);
	if (rc)
		return rc;
	if (len && memchr(src, '\0', len))
		return -EINVAL;
	if (len)
		memcpy(s, src, len);
	s[len] = '\0';
	return 0;
}

int rrr_xdr_put_count(struct rrr_xdr *xdr, uint32_t count)
{
	return rrr_xdr_put_u32(xdr, count);
}

int rrr_xdr_get_count(struct rrr_xdr *xdr, uint32_t max, uint32_t min_elem_bytes, uint32_t *count)
{
	uint32_t c;
	int rc;

	if (!count)
		return -EINVAL;
	rc = rrr_xdr_get_u32(xdr, &c);
	if (rc)
		return rc;
	if (c > max)
		return -E2BIG;
	/* Both factors are < 2^32, so the product fits in 64 bits. */
	if ((uint64_t)c * min_elem_bytes > (uint64_t)(xdr->len - xdr->pos))
		return -EBADMSG;
	*count = c;
	return 0;
}

int rrr_xdr_reserve(struct rrr_xdr *xdr, uint32_t nwords, size_t *pos)
{
	uint64_t n = (uint64_t)nwords * 4u;
	int rc = xdr_take(xdr, RRR_XDR_ENCODE, n);

	if (rc)
		return rc;
	if (pos)
		*pos = xdr->pos;
	memset(xdr->buf + xdr->pos, 0, (size_t)n);
	xdr->pos += (size_t)n;
	return 0;
}

int rrr_xdr_fill_u32(struct rrr_xdr *xdr, size_t pos, uint32_t v)
{
	if (!xdr_is(xdr, RRR_XDR_ENCODE) || (pos & 3u) || pos > xdr->pos || xdr->pos - pos < 4)
		return -EINVAL;
	be32_store(xdr->buf + pos, v);
	return 0;
}

int rrr_xdr_skip(struct rrr_xdr *xdr, uint32_t n)
{
	int rc;

	if (!xdr || xdr->pos > xdr->len || (xdr->op != RRR_XDR_ENCODE && xdr->op != RRR_XDR_DECODE))
		return -EINVAL;
	rc = xdr_room(xdr, xdr_padded(n));
	if (rc)
		return rc;
	if (xdr->op == RRR_XDR_ENCODE)
		memset(xdr->buf + xdr->pos, 0, (size_t)xdr_padded(n));
	xdr->pos += (size_t)xdr_padded(n);
	return 0;
}

int rrr_xdr_encode_payload(struct rrr_xdr *xdr, const struct iovec *iov, unsigned niov,
			   uint32_t len)
{
	uint64_t sum = 0;
	size_t at;
	int rc;

	if (!xdr_is(xdr, RRR_XDR_ENCODE) || (niov && !iov))
		return -EINVAL;
	if (!iov) {
		/* the payload the call declared (struct rrr_xdr_ddp.payload) */
		if (!xdr->ddp || !xdr->ddp->payload)
			return -EINVAL;
		iov = xdr->ddp->payload;
		niov = xdr->ddp->npayload;
		len = 0;
		for (unsigned i = 0; i < niov; i++) {
			if (iov[i].iov_len > UINT32_MAX - (uint64_t)len)
				return -EMSGSIZE;
			len += (uint32_t)iov[i].iov_len;
		}
	}
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len > UINT32_MAX || (iov[i].iov_len && !iov[i].iov_base))
			return -EINVAL;
		sum += iov[i].iov_len;
		if (sum > len)
			return -EINVAL;
	}
	if (sum != len)
		return -EINVAL;

	at = xdr->pos;
	if (xdr->ddp && xdr->ddp->encode) {
		rc = rrr_xdr_put_u32(xdr, len);
		if (rc)
			return rc;
		xdr->ddp_pos = at;
		return xdr->ddp->encode(xdr, xdr->ddp->ctx, iov, niov, len);
	}

	rc = xdr_room(xdr, 4 + xdr_padded(len));
	if (rc)
		return rc;
	be32_store(xdr->buf + xdr->pos, len);
	xdr->pos += 4;
	xdr->ddp_pos = at;
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len)
			memcpy(xdr->buf + xdr->pos, iov[i].iov_base, iov[i].iov_len);
		xdr->pos += iov[i].iov_len;
	}
	while (xdr->pos & 3u)
		xdr->buf[xdr->pos++] = 0;
	return 0;
}

int rrr_xdr_decode_payload(struct rrr_xdr *xdr, uint32_t max, uint32_t *len, struct iovec *iov,
			   unsigned *niov)
{
	size_t at;
	uint32_t n;
	int rc;

	if (!xdr_is(xdr, RRR_XDR_DECODE) || !len || !iov || !niov)
		return -EINVAL;
	at = xdr->pos;
	rc = rrr_xdr_get_u32(xdr, &n);
	if (rc)
		return rc;
	if (n > max)
		return -E2BIG;
	xdr->ddp_pos = at;
	if (xdr->ddp && xdr->ddp->decode) {
		unsigned got = 0;

		rc = xdr->ddp->decode(xdr, xdr->ddp->ctx, n, iov, &got);
		if (rc)
			return rc;
		if (got > RRR_XDR_PAYLOAD_MAX_IOV)
			return -EINVAL;
		*len = n;
		*niov = got;
		return 0;
	}
	rc = xdr_room(xdr, xdr_padded(n));
	if (rc)
		return rc;
	iov[0].iov_base = xdr->buf + xdr->pos;
	iov[0].iov_len = n;
	xdr->pos += (size_t)xdr_padded(n);
	*len = n;
	*niov = 1;
	return 0;
}
