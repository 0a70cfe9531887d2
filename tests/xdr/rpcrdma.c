/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/rpcrdma.c - RPC-over-RDMA v1 header (RFC 8166) and RFC 8797
 * private data (xdr/rpcrdma.c).
 *
 * The reference vectors below are written out byte by byte from the XDR
 * description in RFC 8166 section 4 (not produced by the encoder under
 * test). Each is decoded and checked field by field, re-encoded and
 * compared byte for byte, and truncated at every offset (-EBADMSG). The
 * malformed cases are built with a tiny test-side word writer (wbuf) and
 * each asserts the specific errno the header promises.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <rrr/rpcrdma.h>

#include "helpers/wbuf.h"

/* RDMA_MSG, one read chunk, no write list, no reply chunk. */
/* clang-format off */
static const uint8_t vec_msg_read[] = {
	0x01, 0x02, 0x03, 0x04, /* xid */
	0x00, 0x00, 0x00, 0x01, /* vers 1 */
	0x00, 0x00, 0x00, 0x20, /* credits 32 */
	0x00, 0x00, 0x00, 0x00, /* RDMA_MSG */
	0x00, 0x00, 0x00, 0x01, /* read list: entry follows */
	0x00, 0x00, 0x00, 0x40, /*   position 64 */
	0xAA, 0xBB, 0xCC, 0xDD, /*   handle */
	0x00, 0x00, 0x10, 0x00, /*   length 4096 */
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* offset */
	0x00, 0x00, 0x00, 0x00, /* read list end */
	0x00, 0x00, 0x00, 0x00, /* write list end */
	0x00, 0x00, 0x00, 0x00, /* no reply chunk */
};
/* clang-format on */

/* RDMA_NOMSG reply: one write chunk of two segments, a one-segment reply
 * chunk. */
/* clang-format off */
static const uint8_t vec_nomsg_write_reply[] = {
	0xDE, 0xAD, 0xBE, 0xEF, /* xid */
	0x00, 0x00, 0x00, 0x01, /* vers */
	0x00, 0x00, 0x00, 0x80, /* credits 128 */
	0x00, 0x00, 0x00, 0x01, /* RDMA_NOMSG */
	0x00, 0x00, 0x00, 0x00, /* read list end */
	0x00, 0x00, 0x00, 0x01, /* write chunk follows */
	0x00, 0x00, 0x00, 0x02, /*   2 segments */
	0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x12, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, /* write list end */
	0x00, 0x00, 0x00, 0x01, /* reply chunk present */
	0x00, 0x00, 0x00, 0x01, /*   1 segment */
	0x00, 0x00, 0x00, 0x13, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_err_vers[] = {
	0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
	0x00, 0x00, 0x00, 0x04, /* RDMA_ERROR */
	0x00, 0x00, 0x00, 0x01, /* ERR_VERS */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, /* low, high */
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_err_chunk[] = {
	0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
	0x00, 0x00, 0x00, 0x04, /* RDMA_ERROR */
	0x00, 0x00, 0x00, 0x02, /* ERR_CHUNK */
};
/* clang-format on */

static struct rrr_rdma_hdr H; /* large: keep it off the stack */

static struct rrr_rdma_limits lim_req(void)
{
	struct rrr_rdma_limits l;

	rrr_rdma_limits_default(&l);
	return l;
}

static struct rrr_rdma_limits lim_reply(void)
{
	struct rrr_rdma_limits l = lim_req();

	l.is_reply = true;
	l.allow_zero_len = true;
	return l;
}

static void wseg(struct wbuf *w, uint32_t handle, uint32_t len, uint64_t off)
{
	w32s(w, 4, handle, len, (uint32_t)(off >> 32), (uint32_t)off);
}

static void wprefix(struct wbuf *w, uint32_t proc)
{
	w->n = 0;
	w32s(w, 4, 0x55u, 1u, 16u, proc);
}

static int decode(const struct wbuf *w, struct rrr_rdma_limits l)
{
	return rrr_rdma_hdr_decode(w->b, w->n, &l, &H);
}

Test(rpcrdma, decode_vector_msg_read)
{
	struct rrr_rdma_limits l = lim_req();

	cr_assert_eq(rrr_rdma_hdr_decode(vec_msg_read, sizeof(vec_msg_read), &l, &H), 0);
	cr_assert_eq(H.xid, 0x01020304);
	cr_assert_eq(H.vers, 1);
	cr_assert_eq(H.credits, 32);
	cr_assert_eq(H.proc, RRR_RDMA_MSG);
	cr_assert_eq(H.nread, 1);
	cr_assert_eq(H.read[0].position, 64);
	cr_assert_eq(H.read[0].seg.handle, 0xAABBCCDD);
	cr_assert_eq(H.read[0].seg.length, 4096);
	cr_assert_eq(H.read[0].seg.offset, 0x1122334455667788ull);
	cr_assert_eq(H.nwrite, 0);
	cr_assert_not(H.has_reply);
	cr_assert_eq(H.hdr_len, sizeof(vec_msg_read));
}

Test(rpcrdma, decode_vector_nomsg_write_reply)
{
	struct rrr_rdma_limits l = lim_reply();

	cr_assert_eq(
	    rrr_rdma_hdr_decode(vec_nomsg_write_reply, sizeof(vec_nomsg_write_reply), &l, &H), 0);
	cr_assert_eq(H.xid, 0xDEADBEEF);
	cr_assert_eq(H.credits, 128);
	cr_assert_eq(H.proc, RRR_RDMA_NOMSG);
	cr_assert_eq(H.nread, 0);
	cr_assert_eq(H.nwrite, 1);
	cr_assert_eq(H.write[0].nsegs, 2);
	cr_assert_eq(H.write[0].total, 8192 + 16);
	cr_assert_eq(H.write[0].segs[0].handle, 0x11);
	cr_assert_eq(H.write[0].segs[0].length, 8192);
	cr_assert_eq(H.write[0].segs[0].offset, 0x10000);
	cr_assert_eq(H.write[0].segs[1].handle, 0x12);
	cr_assert_eq(H.write[0].segs[1].offset, 0x20000);
	cr_assert(H.has_reply);
	cr_assert_eq(H.reply.nsegs, 1);
	cr_assert_eq(H.reply.total, 1024);
	cr_assert_eq(H.reply.segs[0].handle, 0x13);
	cr_assert_eq(H.reply.segs[0].offset, 0x30000);
	cr_assert_eq(H.hdr_len, sizeof(vec_nomsg_write_reply));
}

Test(rpcrdma, decode_vectors_error)
{
	cr_assert_eq(rrr_rdma_hdr_decode(vec_err_vers, sizeof(vec_err_vers), NULL, &H), 0);
	cr_assert_eq(H.xid, 7);
	cr_assert_eq(H.proc, RRR_RDMA_ERROR);
	cr_assert_eq(H.err, RRR_ERR_VERS);
	cr_assert_eq(H.vers_low, 1);
	cr_assert_eq(H.vers_high, 1);
	cr_assert_eq(H.hdr_len, sizeof(vec_err_vers));
	cr_assert_eq(rrr_rdma_hdr_decode(vec_err_chunk, sizeof(vec_err_chunk), NULL, &H), 0);
	cr_assert_eq(H.xid, 8);
	cr_assert_eq(H.err, RRR_ERR_CHUNK);
	cr_assert_eq(H.hdr_len, sizeof(vec_err_chunk));
}

static void check_reencode(const uint8_t *vec, size_t len, struct rrr_rdma_limits l)
{
	uint8_t buf[256];
	struct rrr_xdr x;

	cr_assert_eq(rrr_rdma_hdr_decode(vec, len, &l, &H), 0);
	memset(buf, 0xEE, sizeof(buf));
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &H), 0);
	cr_assert_eq(rrr_xdr_pos(&x), len);
	cr_assert_arr_eq(buf, vec, len);
	/* Every shorter buffer: -EMSGSIZE. */
	for (size_t n = 0; n < len; n++) {
		rrr_xdr_init(&x, buf, n, RRR_XDR_ENCODE);
		cr_assert_eq(rrr_rdma_hdr_encode(&x, &H), -EMSGSIZE, "size %zu", n);
	}
}

Test(rpcrdma, encode_matches_vectors)
{
	check_reencode(vec_msg_read, sizeof(vec_msg_read), lim_req());
	check_reencode(vec_nomsg_write_reply, sizeof(vec_nomsg_write_reply), lim_reply());
	check_reencode(vec_err_vers, sizeof(vec_err_vers), lim_req());
	check_reencode(vec_err_chunk, sizeof(vec_err_chunk), lim_req());
}

Test(rpcrdma, err_encode_bytes)
{
	uint8_t buf[64];
	struct rrr_xdr x;

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_err_encode(&x, 7, 5, RRR_ERR_VERS), 0);
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(vec_err_vers));
	cr_assert_arr_eq(buf, vec_err_vers, sizeof(vec_err_vers));
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_err_encode(&x, 8, 5, RRR_ERR_CHUNK), 0);
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(vec_err_chunk));
	cr_assert_arr_eq(buf, vec_err_chunk, sizeof(vec_err_chunk));
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_err_encode(&x, 8, 5, 3), -EINVAL);
}

static void check_truncation(const uint8_t *vec, size_t len, struct rrr_rdma_limits l)
{
	for (size_t n = 0; n < len; n++) {
		H.xid = 0;
		cr_assert_eq(rrr_rdma_hdr_decode(vec, n, &l, &H), -EBADMSG, "truncated at %zu", n);
		if (n >= 4)
			cr_assert_eq(H.xid, (uint32_t)vec[0] << 24 | (uint32_t)vec[1] << 16 |
						(uint32_t)vec[2] << 8 | vec[3]);
	}
}

Test(rpcrdma, truncation_every_offset)
{
	check_truncation(vec_msg_read, sizeof(vec_msg_read), lim_req());
	check_truncation(vec_nomsg_write_reply, sizeof(vec_nomsg_write_reply), lim_reply());
	check_truncation(vec_err_vers, sizeof(vec_err_vers), lim_req());
	check_truncation(vec_err_chunk, sizeof(vec_err_chunk), lim_req());
	cr_assert_eq(rrr_rdma_hdr_decode(NULL, 0, NULL, &H), -EBADMSG);
}

Test(rpcrdma, wrong_version)
{
	uint8_t m[sizeof(vec_msg_read)];

	for (uint32_t v = 0; v < 4; v++) {
		if (v == 1)
			continue;
		memcpy(m, vec_msg_read, sizeof(m));
		m[7] = (uint8_t)v;
		cr_assert_eq(rrr_rdma_hdr_decode(m, sizeof(m), NULL, &H), -EPROTONOSUPPORT);
		cr_assert_eq(H.xid, 0x01020304, "xid is kept for the ERR_VERS answer");
		/* only the 16-byte prefix is needed to tell */
		cr_assert_eq(rrr_rdma_hdr_decode(m, 16, NULL, &H), -EPROTONOSUPPORT);
	}
	memcpy(m, vec_msg_read, sizeof(m));
	m[4] = 0x80;
	m[7] = 1;
	cr_assert_eq(rrr_rdma_hdr_decode(m, sizeof(m), NULL, &H), -EPROTONOSUPPORT);
}

Test(rpcrdma, obsolete_and_unknown_procs)
{
	struct wbuf w;

	for (uint32_t p = 2; p < 7; p++) {
		if (p == RRR_RDMA_ERROR)
			continue;
		wprefix(&w, p);
		for (int i = 0; i < 8; i++)
			w32(&w, 0);
		cr_assert_eq(decode(&w, lim_req()), -EOPNOTSUPP, "proc %u", p);
	}
	wprefix(&w, 0xFFFFFFFFu);
	cr_assert_eq(decode(&w, lim_req()), -EOPNOTSUPP);
}

Test(rpcrdma, bad_discriminators_and_error_codes)
{
	struct wbuf w;

	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 2); /* read list discriminator */
	cr_assert_eq(decode(&w, lim_req()), -EBADMSG);
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 0xFFFFFFFFu); /* write list */
	w32(&w, 0);
	cr_assert_eq(decode(&w, lim_req()), -EBADMSG);
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 0);
	w32(&w, 7); /* reply chunk */
	cr_assert_eq(decode(&w, lim_req()), -EBADMSG);
	wprefix(&w, RRR_RDMA_ERROR);
	w32(&w, 3); /* no such errcode */
	cr_assert_eq(decode(&w, lim_req()), -EBADMSG);
}

Test(rpcrdma, read_positions_misaligned)
{
	struct wbuf w;

	for (uint32_t pos = 1; pos < 4; pos++) {
		wprefix(&w, RRR_RDMA_MSG);
		w32(&w, 1);
		w32(&w, 64 + pos);
		wseg(&w, 1, 100, 0);
		w32(&w, 0);
		w32(&w, 0);
		w32(&w, 0);
		cr_assert_eq(decode(&w, lim_req()), -EINVAL, "pos %u", 64 + pos);
	}
}

Test(rpcrdma, read_list_in_reply)
{
	struct rrr_rdma_limits l = lim_reply();

	cr_assert_eq(rrr_rdma_hdr_decode(vec_msg_read, sizeof(vec_msg_read), &l, &H), -EINVAL);
}

/* Read list from (position, length) pairs. */
static void wreads(struct wbuf *w, const uint32_t (*e)[2], unsigned n)
{
	wprefix(w, RRR_RDMA_MSG);
	for (unsigned i = 0; i < n; i++) {
		w32(w, 1);
		w32(w, e[i][0]);
		wseg(w, 100 + i, e[i][1], 0x1000ull * i);
	}
	w32(w, 0);
	w32(w, 0);
	w32(w, 0);
}

Test(rpcrdma, read_chunks_ordering_and_overlap)
{
	struct wbuf w;
	/* chunk at 8 of 16 bytes (two segments), chunk at 24: fine */
	static const uint32_t ok[][2] = {{8, 10}, {8, 6}, {24, 4}};
	/* second chunk starts inside the first */
	static const uint32_t overlap[][2] = {{8, 16}, {20, 4}};
	/* unpadded first chunk of 13 bytes ends at 21; next at 20 overlaps */
	static const uint32_t overlap_pad[][2] = {{8, 13}, {20, 4}};
	/* and 24 is the first legal position after it */
	static const uint32_t ok_pad[][2] = {{8, 13}, {24, 4}};
	/* decreasing positions */
	static const uint32_t backwards[][2] = {{64, 4}, {8, 4}};
	/* segments of one chunk not contiguous in the list */
	static const uint32_t split[][2] = {{8, 4}, {16, 4}, {8, 4}};
	/* position-zero chunk (whole call) followed by a data chunk */
	static const uint32_t pz[][2] = {{0, 200}, {200, 4096}};

	wreads(&w, ok, 3);
	cr_assert_eq(decode(&w, lim_req()), 0);
	cr_assert_eq(H.nread, 3);
	cr_assert_eq(H.read[1].position, 8);
	cr_assert_eq(H.read[2].position, 24);
	const struct {
		const uint32_t (*e)[2];
		unsigned n;
		int want;
	} rows[] = {
		{overlap, 2, -EINVAL}, {overlap_pad, 2, -EINVAL}, {ok_pad, 2, 0},
		{backwards, 2, -EINVAL}, {split, 3, -EINVAL},	  {pz, 2, 0},
	};
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		wreads(&w, rows[i].e, rows[i].n);
		cr_assert_eq(decode(&w, lim_req()), rows[i].want, "row %u", i);
	}
}

Test(rpcrdma, zero_length_segments)
{
	struct wbuf w;
	static const uint32_t zr[][2] = {{8, 0}};
	struct rrr_rdma_limits l;

	wreads(&w, zr, 1);
	cr_assert_eq(decode(&w, lim_req()), -EINVAL);
	l = lim_req();
	l.allow_zero_len = true;
	cr_assert_eq(decode(&w, l), -EINVAL, "a zero-length read segment is never legal");

	/* write chunk with a zero-length segment */
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 1);
	w32(&w, 1);
	wseg(&w, 1, 0, 0);
	w32(&w, 0);
	w32(&w, 0);
	cr_assert_eq(decode(&w, lim_req()), -EINVAL);
	cr_assert_eq(decode(&w, lim_reply()), 0);
	cr_assert_eq(H.write[0].total, 0);

	/* write chunk with no segments at all, and an empty reply chunk */
	wprefix(&w, RRR_RDMA_MSG);
	w32s(&w, 6, 0u, 1u, 0u, 0u, 1u, 0u);
	cr_assert_eq(decode(&w, lim_req()), -EINVAL);
	cr_assert_eq(decode(&w, lim_reply()), 0);
	cr_assert_eq(H.nwrite, 1);
	cr_assert_eq(H.write[0].nsegs, 0);
	cr_assert(H.has_reply);
	cr_assert_eq(H.reply.nsegs, 0);
}

static void wwrites(struct wbuf *w, unsigned nchunks, uint32_t nsegs)
{
	wprefix(w, RRR_RDMA_MSG);
	w32(w, 0);
	for (unsigned c = 0; c < nchunks; c++) {
		w32(w, 1);
		w32(w, nsegs);
		for (uint32_t s = 0; s < nsegs; s++)
			wseg(w, s, 512, 0);
	}
	w32(w, 0);
	w32(w, 0);
}

Test(rpcrdma, limits)
{
	struct wbuf w;
	struct rrr_rdma_limits l = lim_req();

	/* more write chunks than allowed: -EINVAL when the limit is 1 */
	wwrites(&w, 2, 1);
	l.max_write_chunks = 1;
	cr_assert_eq(decode(&w, l), -EINVAL);
	l.max_write_chunks = 2;
	cr_assert_eq(decode(&w, l), 0);
	wwrites(&w, 3, 1);
	cr_assert_eq(decode(&w, l), -E2BIG);
	l.max_write_chunks = 0;
	wwrites(&w, 1, 1);
	cr_assert_eq(decode(&w, l), -E2BIG);
	wwrites(&w, RRR_RDMA_MAX_WRITE_CHUNKS + 1, 1);
	cr_assert_eq(decode(&w, lim_req()), -E2BIG);
	wwrites(&w, RRR_RDMA_MAX_WRITE_CHUNKS, 1);
	cr_assert_eq(decode(&w, lim_req()), 0);
	cr_assert_eq(H.nwrite, RRR_RDMA_MAX_WRITE_CHUNKS);

	/* segments per chunk */
	l = lim_req();
	l.max_chunk_segs = 4;
	wwrites(&w, 1, 5);
	cr_assert_eq(decode(&w, l), -E2BIG);
	wwrites(&w, 1, 4);
	cr_assert_eq(decode(&w, l), 0);
	/* limits above the ceilings are clamped to them */
	l.max_chunk_segs = 1000;
	wwrites(&w, 1, RRR_RDMA_MAX_CHUNK_SEGS + 1);
	cr_assert_eq(decode(&w, l), -E2BIG);

	/* read list entries */
	uint32_t e[RRR_RDMA_MAX_READ_SEGS + 1][2];
	for (unsigned i = 0; i < RRR_RDMA_MAX_READ_SEGS + 1; i++) {
		e[i][0] = 8;
		e[i][1] = 4;
	}
	wreads(&w, (const uint32_t(*)[2])e, RRR_RDMA_MAX_READ_SEGS);
	cr_assert_eq(decode(&w, lim_req()), 0);
	cr_assert_eq(H.nread, RRR_RDMA_MAX_READ_SEGS);
	wreads(&w, (const uint32_t(*)[2])e, RRR_RDMA_MAX_READ_SEGS + 1);
	cr_assert_eq(decode(&w, lim_req()), -E2BIG);
	l = lim_req();
	l.max_read_segs = 2;
	wreads(&w, (const uint32_t(*)[2])e, 3);
	cr_assert_eq(decode(&w, l), -E2BIG);
}

Test(rpcrdma, huge_counts)
{
	struct wbuf w;

	/* 0xFFFFFFFF segments in a write chunk: over the limit */
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 1);
	w32(&w, 0xFFFFFFFFu);
	cr_assert_eq(decode(&w, lim_req()), -E2BIG);
	/* same in the reply chunk */
	wprefix(&w, RRR_RDMA_MSG);
	w32s(&w, 4, 0u, 0u, 1u, 0x40000000u);
	cr_assert_eq(decode(&w, lim_req()), -E2BIG);
	/* within the limit but the bytes are not there */
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 1);
	w32(&w, RRR_RDMA_MAX_CHUNK_SEGS);
	wseg(&w, 1, 1, 0);
	cr_assert_eq(decode(&w, lim_req()), -EBADMSG);
}

/* An RDMA_MSG whose write list holds one chunk of two segments (handles 1
 * and 2, offset 0) of @len1 and @len2 bytes; no reply chunk. */
static void wwrite2(struct wbuf *w, uint32_t len1, uint32_t len2)
{
	wprefix(w, RRR_RDMA_MSG);
	w32s(w, 3, 0u, 1u, 2u);
	wseg(w, 1, len1, 0);
	wseg(w, 2, len2, 0);
	w32s(w, 2, 0u, 0u);
}

Test(rpcrdma, length_sum_overflow)
{
	struct wbuf w;
	static const uint32_t rd[][2] = {{8, 0xFFFFFFF0u}, {8, 0x100}};

	wwrite2(&w, 0xFFFFFFF0u, 0x100);
	cr_assert_eq(decode(&w, lim_req()), -EOVERFLOW);

	wprefix(&w, RRR_RDMA_MSG);
	w32s(&w, 4, 0u, 0u, 1u, 2u);
	wseg(&w, 1, 0x80000000u, 0);
	wseg(&w, 2, 0x80000000u, 0);
	cr_assert_eq(decode(&w, lim_req()), -EOVERFLOW);

	wreads(&w, rd, 2);
	cr_assert_eq(decode(&w, lim_req()), -EOVERFLOW);

	/* exactly UINT32_MAX is fine */
	wwrite2(&w, 0xFFFFFF00u, 0xFF);
	cr_assert_eq(decode(&w, lim_req()), 0);
	cr_assert_eq(H.write[0].total, UINT32_MAX);

	/* offset + length wrapping 64 bits */
	wprefix(&w, RRR_RDMA_MSG);
	w32(&w, 0);
	w32(&w, 1);
	w32(&w, 1);
	wseg(&w, 1, 0x10, 0xFFFFFFFFFFFFFFF8ull);
	w32(&w, 0);
	w32(&w, 0);
	cr_assert_eq(decode(&w, lim_req()), -EOVERFLOW);
}

Test(rpcrdma, encode_round_trip_all_lists)
{
	static struct rrr_rdma_hdr in;
	uint8_t buf[4096];
	struct rrr_xdr x;

	memset(&in, 0, sizeof(in));
	in.xid = 42;
	in.vers = 1;
	in.credits = 7;
	in.proc = RRR_RDMA_MSG;
	in.nread = 2;
	in.read[0] = (struct rrr_rdma_read_seg){.position = 12, .seg = {9, 100, 0x1000}};
	in.read[1] = (struct rrr_rdma_read_seg){.position = 112, .seg = {10, 8, 0x2000}};
	in.nwrite = 2;
	in.write[0].nsegs = 1;
	in.write[0].segs[0] = (struct rrr_rdma_seg){3, 4096, 0xABCDEF0000ull};
	in.write[1].nsegs = 2;
	in.write[1].segs[0] = (struct rrr_rdma_seg){4, 1, 1};
	in.write[1].segs[1] = (struct rrr_rdma_seg){5, 2, 2};
	in.has_reply = true;
	in.reply.nsegs = 1;
	in.reply.segs[0] = (struct rrr_rdma_seg){6, 65536, 0};

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &in), 0);
	/* 16 prefix + 2*(4+20) reads + 4 + (4+4+16) + (4+4+32) + 4 + 4+4+16 */
	cr_assert_eq(rrr_xdr_pos(&x), 16 + 48 + 4 + 24 + 40 + 4 + 24);
	cr_assert_eq(rrr_rdma_hdr_decode(buf, rrr_xdr_pos(&x), NULL, &H), 0);
	cr_assert_eq(H.nread, 2);
	cr_assert_eq(H.read[1].position, 112);
	cr_assert_eq(H.read[1].seg.offset, 0x2000);
	cr_assert_eq(H.nwrite, 2);
	cr_assert_eq(H.write[0].segs[0].offset, 0xABCDEF0000ull);
	cr_assert_eq(H.write[1].nsegs, 2);
	cr_assert_eq(H.write[1].total, 3);
	cr_assert(H.has_reply);
	cr_assert_eq(H.reply.segs[0].length, 65536);
	cr_assert_eq(H.hdr_len, rrr_xdr_pos(&x));

	/* encoder refuses what it cannot represent */
	in.proc = RRR_RDMA_MSGP;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &in), -EINVAL);
	in.proc = RRR_RDMA_MSG;
	in.nread = RRR_RDMA_MAX_READ_SEGS + 1;
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &in), -EINVAL);
}

/* ---------------------------------------------------------------- RFC 8797 */

Test(rpcrdma_pd, decode_vector)
{
	/* magic, version 1, flags I=1, send size 0 (1 KiB), recv size 15 (16 KiB) */
	static const uint8_t v[] = {0xF6, 0xAB, 0x0E, 0x18, 0x01, 0x01, 0x00, 0x0F};
	struct rrr_rdma_cm_pd pd;

	cr_assert(rrr_rdma_cm_pd_decode(v, sizeof(v), &pd));
	cr_assert(pd.remote_inv);
	cr_assert_eq(pd.send_size, 1024);
	cr_assert_eq(pd.recv_size, 16384);
}

Test(rpcrdma_pd, encode_vector_and_clamp)
{
	static const uint8_t want[] = {0xF6, 0xAB, 0x0E, 0x18, 0x01, 0x00, 0xFF, 0x03};
	struct rrr_rdma_cm_pd pd = {
	    .remote_inv = false, .send_size = 1u << 20, .recv_size = 4096 + 1000};
	uint8_t buf[RRR_RDMA_PD_LEN];

	cr_assert_eq(rrr_rdma_cm_pd_encode(buf, &pd), RRR_RDMA_PD_LEN);
	cr_assert_arr_eq(buf, want, sizeof(want));

	pd = (struct rrr_rdma_cm_pd){.remote_inv = true, .send_size = 0, .recv_size = 1023};
	cr_assert_eq(rrr_rdma_cm_pd_encode(buf, &pd), RRR_RDMA_PD_LEN);
	cr_assert_eq(buf[5], 0x01);
	cr_assert_eq(buf[6], 0x00);
	cr_assert_eq(buf[7], 0x00);

	/* round trip of every representable size */
	for (uint32_t k = 1; k <= 256; k++) {
		struct rrr_rdma_cm_pd out;

		pd = (struct rrr_rdma_cm_pd){
		    .remote_inv = k & 1, .send_size = k * 1024, .recv_size = (257 - k) * 1024};
		rrr_rdma_cm_pd_encode(buf, &pd);
		cr_assert(rrr_rdma_cm_pd_decode(buf, sizeof(buf), &out));
		cr_assert_eq(out.send_size, pd.send_size);
		cr_assert_eq(out.recv_size, pd.recv_size);
		cr_assert_eq(out.remote_inv, pd.remote_inv);
	}
}

Test(rpcrdma_pd, invalid_gives_defaults)
{
	static const uint8_t good[] = {0xF6, 0xAB, 0x0E, 0x18, 0x01, 0x01, 0x07, 0x07};
	uint8_t m[16];
	struct rrr_rdma_cm_pd pd;

	for (size_t n = 0; n < sizeof(good); n++) {
		pd.send_size = 0;
		cr_assert_not(rrr_rdma_cm_pd_decode(good, n, &pd), "len %zu", n);
		cr_assert_eq(pd.send_size, RRR_RDMA_INLINE_DEFAULT);
		cr_assert_eq(pd.recv_size, RRR_RDMA_INLINE_DEFAULT);
		cr_assert_not(pd.remote_inv);
	}
	cr_assert_not(rrr_rdma_cm_pd_decode(NULL, 8, &pd));
	memcpy(m, good, 8);
	m[3] = 0x19;
	cr_assert_not(rrr_rdma_cm_pd_decode(m, 8, &pd));
	cr_assert_eq(pd.recv_size, 1024);
	memcpy(m, good, 8);
	m[4] = 2;
	cr_assert_not(rrr_rdma_cm_pd_decode(m, 8, &pd));
	cr_assert_not(pd.remote_inv);
	/* reserved flag bits ignored, trailing bytes ignored */
	memcpy(m, good, 8);
	m[5] = 0xFE;
	memset(m + 8, 0xAA, 8);
	cr_assert(rrr_rdma_cm_pd_decode(m, 16, &pd));
	cr_assert_not(pd.remote_inv);
	cr_assert_eq(pd.send_size, 8192);
}
