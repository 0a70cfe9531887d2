/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/oncrpc_rm.c - ONC RPC record marking reassembly
 * (xdr/oncrpc_rm.c, RFC 5531 section 11): single and multi-fragment
 * records, zero-length fragments, records beyond the maximum refused
 * before any allocation, several records in one feed, byte-at-a-time
 * feeding, and reading in place through want/commit; a record's buffer
 * taken away with it and given back; the layout of an
 * outgoing record under any partial writes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/oncrpc.h>

#include "xdr/oncrpc_rm.h"

/* Append a fragment marker and @len bytes of @p to @out at *@n. */
static void frag(uint8_t *out, size_t *n, const void *p, uint32_t len, bool last)
{
	uint32_t m = len | (last ? RRR_RPC_RM_LAST : 0);

	out[(*n)++] = (uint8_t)(m >> 24);
	out[(*n)++] = (uint8_t)(m >> 16);
	out[(*n)++] = (uint8_t)(m >> 8);
	out[(*n)++] = (uint8_t)m;
	if (len)
		memcpy(out + *n, p, len);
	*n += len;
}

/* Feed all of @in; collect up to 8 complete records (copied). */
struct got {
	unsigned n;
	size_t len[8];
	uint8_t data[8][256];
};

static int feed_all(struct rrr__rm *r, const uint8_t *in, size_t n, size_t step, struct got *g)
{
	size_t off = 0;

	while (off < n) {
		size_t chunk = n - off < step ? n - off : step, used;
		int rc = rrr__rm_feed(r, in + off, chunk, &used);

		if (rc < 0)
			return rc;
		cr_assert_leq(used, chunk);
		off += used;
		if (rc == 1) {
			cr_assert_lt(g->n, 8u);
			cr_assert_leq(r->len, sizeof(g->data[0]));
			g->len[g->n] = r->len;
			if (r->len)
				memcpy(g->data[g->n], r->rec, r->len);
			g->n++;
			rrr__rm_next(r);
		} else {
			cr_assert_eq(used, chunk, "a feed that completes nothing takes everything");
		}
	}
	return 0;
}

/* One fragment: @len bytes of @p, the last of its record or not. */
struct fr {
	const char *p;
	uint32_t len;
	bool last;
};

/* The fragments @fr[@nfr] as one stream fed whole to a reassembler of
 * 1024 bytes at most: asserted to go through, the records into @g. */
static void reassemble(const struct fr *fr, unsigned nfr, struct got *g)
{
	struct rrr__rm r;
	uint8_t in[256];
	size_t n = 0;

	for (unsigned i = 0; i < nfr; i++)
		frag(in, &n, fr[i].p, fr[i].len, fr[i].last);
	rrr__rm_init(&r, 1024);
	cr_assert_eq(feed_all(&r, in, n, n, g), 0);
	rrr__rm_fini(&r);
}

/* The stream @in[@n] fed whole to a reassembler of @max bytes: asserted to
 * hold exactly one record; its length. */
static size_t one_record(const uint8_t *in, size_t n, size_t max)
{
	struct rrr__rm r;
	struct got g = {0};

	rrr__rm_init(&r, max);
	cr_assert_eq(feed_all(&r, in, n, n, &g), 0);
	cr_assert_eq(g.n, 1u);
	rrr__rm_fini(&r);
	return g.len[0];
}

/* Record @i of @g is the @len bytes of @want. */
static void expect_record(const struct got *g, unsigned i, const char *want, size_t len)
{
	cr_assert_eq(g->len[i], len, "record %u", i);
	cr_assert_arr_eq(g->data[i], want, len);
}

Test(oncrpc_rm, one_fragment)
{
	static const struct fr fr[] = {{"hello, world", 12, true}};
	struct got g = {0};

	reassemble(fr, 1, &g);
	cr_assert_eq(g.n, 1u);
	expect_record(&g, 0, "hello, world", 12);
}

Test(oncrpc_rm, fragments_concatenate_into_one_record)
{
	static const struct fr fr[] = {{"abc", 3, false}, {"defg", 4, false}, {"h", 1, true}};
	struct got g = {0};

	reassemble(fr, 3, &g);
	cr_assert_eq(g.n, 1u);
	expect_record(&g, 0, "abcdefgh", 8);
}

Test(oncrpc_rm, zero_length_fragments_add_nothing)
{
	static const struct fr fr[] = {
		{NULL, 0, false}, {"xy", 2, false}, {NULL, 0, false},
		{NULL, 0, true}, /* ends the record "xy" */
		{NULL, 0, true}, /* an empty record: reported, callers judge */
	};
	struct got g = {0};

	reassemble(fr, 5, &g);
	cr_assert_eq(g.n, 2u);
	expect_record(&g, 0, "xy", 2);
	cr_assert_eq(g.len[1], 0u);
}

Test(oncrpc_rm, several_records_byte_at_a_time)
{
	static const char *recs[] = {"first", "second record", "3"};
	struct rrr__rm r;
	struct got g = {0};
	uint8_t in[128];
	size_t n = 0;

	frag(in, &n, recs[0], 5, true);
	frag(in, &n, "second", 6, false);
	frag(in, &n, " record", 7, true);
	frag(in, &n, recs[2], 1, true);
	for (size_t step = 1; step <= n; step++) {
		memset(&g, 0, sizeof(g));
		rrr__rm_init(&r, 64);
		cr_assert_eq(feed_all(&r, in, n, step, &g), 0, "step %zu", step);
		cr_assert_eq(g.n, 3u, "step %zu", step);
		for (unsigned i = 0; i < 3; i++) {
			cr_assert_eq(g.len[i], strlen(recs[i]), "step %zu record %u", step, i);
			cr_assert_arr_eq(g.data[i], recs[i], g.len[i]);
		}
		rrr__rm_fini(&r);
	}
}

Test(oncrpc_rm, oversize_fragment_refused_before_allocation)
{
	struct rrr__rm r;
	uint8_t in[8] = {0xff, 0xff, 0xff, 0xff}; /* last, 2^31 - 1 bytes */
	size_t used;

	rrr__rm_init(&r, 1024);
	cr_assert_eq(rrr__rm_feed(&r, in, 4, &used), -EMSGSIZE);
	cr_assert_null(r.rec, "nothing allocated for a refused fragment");
	/* the stream stays refused */
	cr_assert_eq(rrr__rm_feed(&r, in, 4, &used), -EMSGSIZE);
	cr_assert_eq(used, 0u);
	rrr__rm_fini(&r);
}

Test(oncrpc_rm, oversize_record_of_small_fragments_refused)
{
	struct rrr__rm r;
	struct got g = {0};
	uint8_t in[256], body[40];
	size_t n = 0;

	memset(body, 'a', sizeof(body));
	frag(in, &n, body, 40, false);
	frag(in, &n, body, 40, false);
	frag(in, &n, body, 20, true); /* 100 bytes: one more than allowed */
	rrr__rm_init(&r, 99);
	cr_assert_eq(feed_all(&r, in, n, 1, &g), -EMSGSIZE);
	cr_assert_eq(g.n, 0u);
	cr_assert_leq(r.cap, 99u, "the buffer never grows beyond the maximum");
	rrr__rm_fini(&r);

	/* exactly the maximum is accepted */
	n = 0;
	frag(in, &n, body, 40, false);
	frag(in, &n, body, 40, false);
	frag(in, &n, body, 19, true);
	cr_assert_eq(one_record(in, n, 99), 99u);
}

Test(oncrpc_rm, want_commit_reads_in_place)
{
	struct rrr__rm r;
	uint8_t in[64];
	size_t n = 0, off = 0, room;
	int rc = 0;

	frag(in, &n, "in place", 8, true);
	rrr__rm_init(&r, 64);
	while (off < n) {
		uint8_t *dst = rrr__rm_want(&r, &room);
		size_t take;

		cr_assert_not_null(dst);
		cr_assert_gt(room, 0u);
		take = room < n - off ? room : n - off;
		memcpy(dst, in + off, take);
		off += take;
		rc = rrr__rm_commit(&r, take);
		cr_assert_geq(rc, 0);
	}
	cr_assert_eq(rc, 1);
	cr_assert_eq(r.len, 8u);
	cr_assert_arr_eq(r.rec, "in place", 8);
	cr_assert_null(rrr__rm_want(&r, &room), "a complete record blocks input");
	rrr__rm_next(&r);
	cr_assert_not_null(rrr__rm_want(&r, &room));
	cr_assert_eq(room, 4u, "a new record starts with its marker");
	rrr__rm_fini(&r);
}

/* A record taken with its buffer stays intact while the next is read into
 * a new one; a buffer given back is reused only when none is held. */
Test(oncrpc_rm, take_keeps_a_record_while_the_next_is_read)
{
	struct rrr__rm r;
	struct got g = {0};
	uint8_t in[64], *first, *second;
	size_t n = 0, cap = 1, cap2;

	rrr__rm_init(&r, 64);
	cr_assert_null(rrr__rm_take(&r, &cap), "no record yet");
	cr_assert_eq(cap, 0u);
	frag(in, &n, "first", 5, true);
	cr_assert_eq(rrr__rm_feed(&r, in, n, &cap), 1);
	first = rrr__rm_take(&r, &cap);
	cr_assert_not_null(first);
	cr_assert_geq(cap, 5u);
	cr_assert_null(r.rec, "the reassembler keeps no buffer");
	n = 0;
	frag(in, &n, "second", 6, true);
	cr_assert_eq(feed_all(&r, in, n, n, &g), 0);
	expect_record(&g, 0, "second", 6);
	cr_assert_arr_eq(first, "first", 5, "the taken record is untouched");
	second = r.rec;
	rrr__rm_give(&r, first, cap); /* one is held: freed */
	cr_assert_eq(r.rec, second);
	cr_assert_null(rrr__rm_take(&r, &cap2), "no record is complete");
	n = 0;
	frag(in, &n, "third", 5, true);
	cr_assert_eq(rrr__rm_feed(&r, in, n, &cap2), 1);
	second = rrr__rm_take(&r, &cap2);
	cr_assert_null(r.rec);
	rrr__rm_give(&r, second, cap2); /* none held: kept */
	cr_assert_eq(r.rec, second);
	cr_assert_eq(r.cap, cap2);
	rrr__rm_give(&r, NULL, 0);
	rrr__rm_fini(&r);
}

Test(oncrpc_rm, reset_forgets_partial_record_and_refusal)
{
	struct rrr__rm r;
	struct got g = {0};
	uint8_t big[4] = {0x80, 0x01, 0x00, 0x00}, in[32];
	size_t n = 0, used;

	rrr__rm_init(&r, 16);
	cr_assert_eq(rrr__rm_feed(&r, big, 4, &used), -EMSGSIZE);
	rrr__rm_reset(&r);
	frag(in, &n, "ok", 2, true);
	cr_assert_eq(feed_all(&r, in, n, n, &g), 0);
	cr_assert_eq(g.n, 1u);
	rrr__rm_fini(&r);
}

/* ------------------------------------------------------------ sending */

/* Write @o as a peer would receive it, @step bytes per "sendmsg". */
static size_t drain(struct rrr__rm_out *o, uint8_t *out, size_t step)
{
	size_t n = 0;

	while (o->off < o->len) {
		struct iovec iov[RRR__RM_OUT_IOV_MAX];
		unsigned k = rrr__rm_out_iov(o, iov);
		size_t room = step;

		cr_assert_gt(k, 0u, "the rest of an unfinished record has iovecs");
		for (unsigned i = 0; i < k && room; i++) {
			size_t take = iov[i].iov_len < room ? iov[i].iov_len : room;

			memcpy(out + n, iov[i].iov_base, take);
			n += take;
			room -= take;
			o->off += take;
		}
	}
	cr_assert_eq(rrr__rm_out_iov(o, NULL), 0u, "nothing left once written");
	return n;
}

/* The layout [marker][head][payload][pad][tail], whatever the writes'
 * sizes; the receiving side reassembles exactly the message. */
Test(oncrpc_rm, out_record_with_payload_any_partial_writes)
{
	uint8_t buf[4 + 12], out[256];
	const char *a = "abcde", *b = "fg";
	struct iovec p[3] = {{(void *)a, 5}, {NULL, 0}, {(void *)b, 2}};
	struct rrr__rm_out o;

	memcpy(buf + 4, "HEAD", 4);
	memcpy(buf + 8, "TAILtail", 8);
	for (size_t step = 1; step <= 40; step++) {
		cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 8, p, 3, 7), 0);
		cr_assert_eq(o.len, 4u + 4 + 7 + 1 + 8);
		size_t n = drain(&o, out, step);
		cr_assert_eq(n, o.len);
		cr_assert_eq(memcmp(out, "\x80\x00\x00\x14" "HEADabcdefg\0TAILtail", n), 0,
			     "step %zu", step);
		cr_assert_eq(one_record(out, n, 64), 20u);
	}
}

Test(oncrpc_rm, out_record_without_payload_and_refusals)
{
	uint8_t buf[4 + 3] = {0, 0, 0, 0, 'x', 'y', 'z'}, out[16];
	struct iovec p[RRR_XDR_PAYLOAD_MAX_IOV + 1];
	struct rrr__rm_out o;

	cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 0, NULL, 0, 0), 0);
	cr_assert_eq(drain(&o, out, 3), 7u);
	cr_assert_eq(memcmp(out, "\x80\x00\x00\x03xyz", 7), 0);
	memset(p, 0, sizeof(p));
	cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 3, p, 1, 0), -EINVAL, "inside the marker");
	cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 8, p, 1, 0), -EINVAL, "past the message");
	cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 4, p, RRR_XDR_PAYLOAD_MAX_IOV + 1, 0),
		     -EINVAL, "too many iovecs");
	cr_assert_eq(rrr__rm_out_set(&o, buf, 3, 0, NULL, 0, 0), -EINVAL, "no room for the marker");
	cr_assert_eq(rrr__rm_out_set(&o, buf, sizeof(buf), 4, p, 1, 0x7ffffffdu), -EMSGSIZE,
		     "longer than a marker can say");
}
