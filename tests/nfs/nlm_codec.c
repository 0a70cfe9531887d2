/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/nlm_codec.c - rrr-server's NLM v4 / NSM v1 codecs
 * (server/fs/nlm_xdr.c, compiled in by helpers/fs_codecs.c): byte-exact vectors written from the
 * XNFS / RFC 1813 layouts, round trips, and the limits a hostile peer hits
 * (long names and handles, bad booleans and enums, short messages).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "server/fs/nlm_xdr.h"

static uint8_t buf[8192];
static struct nlm4_args a, b;

static void lock_fill(struct nlm4_args *m)
{
	memset(m, 0, sizeof(*m));
	m->cookie.len = 4;
	memcpy(m->cookie.data, "\x01\x02\x03\x04", 4);
	m->block = true;
	m->exclusive = true;
	strcpy(m->lock.caller, "cli");
	m->lock.fh.len = 2;
	m->lock.fh.data[0] = 0xab;
	m->lock.fh.data[1] = 0xcd;
	m->lock.oh.len = 1;
	m->lock.oh.data[0] = 7;
	m->lock.svid = 42;
	m->lock.offset = 0x100000000ull;
	m->lock.len = 5;
	m->reclaim = false;
	m->state = 3;
}

Test(nlm_codec, lock_args_vector)
{
	lock_fill(&a);
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_args(&x, NLM4_LOCK, &a), 0);
	const uint8_t want[] = {
	    0, 0, 0, 4, 1, 2, 3, 4,            /* cookie */
	    0, 0, 0, 1,                        /* block */
	    0, 0, 0, 1,                        /* exclusive */
	    0, 0, 0, 3, 'c', 'l', 'i', 0,      /* caller_name */
	    0, 0, 0, 2, 0xab, 0xcd, 0, 0,      /* fh */
	    0, 0, 0, 1, 7, 0, 0, 0,            /* oh */
	    0, 0, 0, 42,                       /* svid */
	    0, 0, 0, 1, 0, 0, 0, 0,            /* l_offset */
	    0, 0, 0, 0, 0, 0, 0, 5,            /* l_len */
	    0, 0, 0, 0,                        /* reclaim */
	    0, 0, 0, 3,                        /* state */
	};
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));
	rrr_xdr_init(&x, buf, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_args(&x, NLM4_LOCK, &b), 0);
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(want));
	cr_assert_str_eq(b.lock.caller, "cli");
	cr_assert_eq(b.lock.svid, 42);
	cr_assert_eq(b.lock.offset, 0x100000000ull);
	cr_assert_eq(b.lock.len, 5);
	cr_assert_eq(b.state, 3);
	cr_assert(b.block && b.exclusive && !b.reclaim);
	cr_assert_eq(b.lock.fh.len, 2);
	cr_assert_eq(b.lock.fh.data[1], 0xcd);
}

Test(nlm_codec, unlock_and_test_carry_their_fields_only)
{
	lock_fill(&a);
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_args(&x, NLM4_UNLOCK, &a), 0);
	/* cookie 8 + lock (8 + 8 + 8 + 4 + 8 + 8) */
	cr_assert_eq(rrr_xdr_pos(&x), 8u + 44u);
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_args(&x, NLM4_TEST, &a), 0);
	cr_assert_eq(rrr_xdr_pos(&x), 8u + 4u + 44u);
	size_t n = rrr_xdr_pos(&x);
	rrr_xdr_init(&x, buf, n, RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_args(&x, NLM4_TEST, &b), 0);
	cr_assert(b.exclusive && !b.block && b.state == 0);
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_args(&x, NLM4_CANCEL, &a), 0);
	cr_assert_eq(rrr_xdr_pos(&x), 8u + 8u + 44u);
}

Test(nlm_codec, testres_denied_carries_the_holder)
{
	struct nlm4_res r = {.stat = NLM4_DENIED}, d;
	r.cookie.len = 0;
	r.holder.exclusive = true;
	r.holder.svid = -1;
	r.holder.oh.len = 3;
	memcpy(r.holder.oh.data, "abc", 3);
	r.holder.offset = 10;
	r.holder.len = 0;
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_res(&x, true, &r), 0);
	const uint8_t want[] = {0, 0, 0, 0,		/* cookie */
				0, 0, 0, 1,		/* DENIED */
				0, 0, 0, 1,		/* exclusive */
				0xff, 0xff, 0xff, 0xff, /* svid -1 */
				0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0, 0, 0, 0, 10,
				0, 0, 0, 0, 0, 0, 0, 0};
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));
	rrr_xdr_init(&x, buf, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_res(&x, true, &d), 0);
	cr_assert_eq(d.holder.svid, -1);
	cr_assert_eq(d.holder.offset, 10);
	/* GRANTED: no holder on the wire */
	r.stat = NLM4_GRANTED_ST;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_res(&x, true, &r), 0);
	cr_assert_eq(rrr_xdr_pos(&x), 8u);
}

Test(nlm_codec, share_notify_and_nsm_vectors)
{
	struct nlm4_shareargs s = {0}, s2;
	strcpy(s.share.caller, "h");
	s.share.fh.len = 1;
	s.share.mode = 2;
	s.share.access = 3;
	s.reclaim = true;
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_shareargs(&x, &s), 0);
	const uint8_t want[] = {0, 0, 0, 0, 0, 0, 0, 1, 'h', 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1};
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));
	rrr_xdr_init(&x, buf, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_shareargs(&x, &s2), 0);
	cr_assert(s2.reclaim && s2.share.mode == 2 && s2.share.access == 3);

	struct nlm_notify n = {.state = 7}, n2;
	strcpy(n.name, "client.example");
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm_enc_notify(&x, &n), 0);
	cr_assert_eq(rrr_xdr_pos(&x), 4u + 16u + 4u);
	rrr_xdr_init(&x, buf, rrr_xdr_pos(&x), RRR_XDR_DECODE);
	cr_assert_eq(nlm_dec_notify(&x, &n2), 0);
	cr_assert_str_eq(n2.name, "client.example");
	cr_assert_eq(n2.state, 7);

	struct nsm_mon m = {0}, m2;
	strcpy(m.mon_name, "c");
	strcpy(m.id.my_name, "localhost");
	m.id.prog = NLM_PROG;
	m.id.vers = 3;
	m.id.proc = NLM4_NSM_NOTIFY;
	m.priv[15] = 9;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nsm_enc_mon(&x, &m), 0);
	cr_assert_eq(rrr_xdr_pos(&x), 8u + 16u + 12u + 16u);
	rrr_xdr_init(&x, buf, rrr_xdr_pos(&x), RRR_XDR_DECODE);
	cr_assert_eq(nsm_dec_mon(&x, &m2), 0);
	cr_assert_eq(m2.id.prog, NLM_PROG);
	cr_assert_eq(m2.priv[15], 9);

	uint32_t res;
	int32_t st;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nsm_enc_stat_res(&x, NSM_STAT_SUCC, 5), 0);
	rrr_xdr_init(&x, buf, 8, RRR_XDR_DECODE);
	cr_assert_eq(nsm_dec_stat_res(&x, &res, &st), 0);
	cr_assert(res == NSM_STAT_SUCC && st == 5);
}

Test(nlm_codec, hostile_input_is_refused)
{
	struct rrr_xdr x;
	/* a cookie longer than MAXNETOBJ_SZ */
	const uint8_t big[] = {0, 0, 0x04, 0x01};
	rrr_xdr_init(&x, (void *)big, sizeof(big), RRR_XDR_DECODE);
	cr_assert_lt(nlm4_dec_args(&x, NLM4_LOCK, &b), 0);
	/* block = 2 is no boolean */
	const uint8_t badbool[] = {0, 0, 0, 0, 0, 0, 0, 2};
	rrr_xdr_init(&x, (void *)badbool, sizeof(badbool), RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_args(&x, NLM4_LOCK, &b), -EINVAL);
	/* a caller name with a NUL */
	const uint8_t nul[] = {0, 0, 0, 0, 0, 0, 0, 2, 'a', 0, 0, 0};
	rrr_xdr_init(&x, (void *)nul, sizeof(nul), RRR_XDR_DECODE);
	cr_assert_eq(nlm4_dec_args(&x, NLM4_UNLOCK, &b), -EINVAL);
	/* a status past FAILED */
	const uint8_t st[] = {0, 0, 0, 0, 0, 0, 0, 10};
	struct nlm4_res r;
	rrr_xdr_init(&x, (void *)st, sizeof(st), RRR_XDR_DECODE);
	cr_assert_lt(nlm4_dec_res(&x, false, &r), 0);
	/* a share mode past deny-read-write */
	struct nlm4_shareargs s = {0};
	s.share.mode = 3;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_shareargs(&x, &s), 0);
	buf[4 + 4 + 4 + 4 + 3] = 4; /* cookie, caller, fh, oh: the mode's last byte */
	rrr_xdr_init(&x, buf, rrr_xdr_pos(&x), RRR_XDR_DECODE);
	cr_assert_lt(nlm4_dec_shareargs(&x, &s), 0);
	/* every prefix of a good LOCK is short */
	lock_fill(&a);
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm4_enc_args(&x, NLM4_LOCK, &a), 0);
	size_t n = rrr_xdr_pos(&x);
	for (size_t cut = 0; cut < n; cut += 4) {
		rrr_xdr_init(&x, buf, cut, RRR_XDR_DECODE);
		cr_assert_lt(nlm4_dec_args(&x, NLM4_LOCK, &b), 0, "prefix %zu decoded", cut);
	}
	/* a name over the limit is not encoded */
	struct nlm_notify nn = {0};
	memset(nn.name, 'x', NLM_MAXNAME + 1);
	nn.name[NLM_MAXNAME] = 'y';
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(nlm_enc_notify(&x, &nn), -E2BIG);
}
