/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/unit.c - unit tests of the soft provider's pieces: MPA frames
 * and FPDU helpers (the CRC32c trailer's bytes on the wire; the CRC itself
 * is tested in tests/crc32c), DDP/RDMAP header codecs, Terminate codes,
 * and the STag table: every
 * check of rrr__soft_mr_get(), and concurrent lookups racing invalidation
 * (run under TSan with BUILD=build-soft-tsan SANITIZE=thread).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/soft/soft.h"

/* ----------------------------------------------------------- framing */
Test(soft_unit, tagged_header_roundtrip)
{
	uint8_t b[SOFT_HDR_TAGGED];
	struct soft_hdr h;

	cr_assert_eq(rrr__soft_hdr_tagged(b, SOFT_OP_WRITE, true, 0x123456ab, 0x1122334455667788ull,
					  1000), SOFT_HDR_TAGGED);
	cr_assert_eq(soft_get16(b), 14 + 1000);
	cr_assert_eq(b[2], 0xc1); /* T, L, DV=1 */
	cr_assert_eq(b[3], 0x40); /* RV=1, opcode 0 */
	cr_assert_eq(rrr__soft_hdr_len(b), SOFT_HDR_TAGGED);
	cr_assert_eq(rrr__soft_hdr_decode(b, &h), 0);
	cr_assert(h.tagged && h.last && h.ddp_ver == 1 && h.rdmap_ver == 1);
	cr_assert_eq(h.opcode, SOFT_OP_WRITE);
	cr_assert_eq(h.stag, 0x123456ab);
	cr_assert_eq(h.to, 0x1122334455667788ull);
	/* a ULPDU length shorter than the header is refused */
	soft_put16(b, 13);
	cr_assert_eq(rrr__soft_hdr_decode(b, &h), -EPROTO);
}

Test(soft_unit, untagged_header_roundtrip)
{
	uint8_t b[SOFT_HDR_UNTAGGED];
	struct soft_hdr h;

	rrr__soft_hdr_untagged(b, SOFT_OP_SEND_INV, false, 0xdeadbe01, 0, 7, 65536, 300);
	cr_assert_eq(soft_get16(b), 18 + 300);
	cr_assert_eq(b[2], 0x01);
	cr_assert_eq(b[3], 0x44);
	cr_assert_eq(rrr__soft_hdr_len(b), SOFT_HDR_UNTAGGED);
	cr_assert_eq(rrr__soft_hdr_decode(b, &h), 0);
	cr_assert(!h.tagged && !h.last);
	cr_assert_eq(h.stag, 0xdeadbe01);
	cr_assert_eq(h.qn, 0);
	cr_assert_eq(h.msn, 7);
	cr_assert_eq(h.mo, 65536);
	soft_put16(b, 17);
	cr_assert_eq(rrr__soft_hdr_decode(b, &h), -EPROTO);
}

Test(soft_unit, read_request_and_terminate_codec)
{
	struct soft_read_req a = { 0x101, 0x2020202020ull, 4096, 0x303, 0x4040404040ull }, b;
	uint8_t buf[SOFT_READ_REQ_LEN], t[4];

	rrr__soft_read_req_encode(buf, &a);
	rrr__soft_read_req_decode(buf, &b);
	cr_assert(a.sink_stag == b.sink_stag && a.sink_to == b.sink_to && a.size == b.size &&
		  a.src_stag == b.src_stag && a.src_to == b.src_to);
	cr_assert_eq(soft_get32(buf + 12), 4096);
	rrr__soft_term_encode(t, SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_TAGGED, 0x01));
	cr_assert_eq(t[0], 0x11);
	cr_assert_eq(t[1], 0x01);
	cr_assert_eq(rrr__soft_term_decode(t), SOFT_TERM(1, 1, 1));
	cr_assert_eq(rrr__soft_term_wc_status(SOFT_TERM(0, 1, 2)), RRR_WC_REM_ACCESS_ERR);
	cr_assert_eq(rrr__soft_term_wc_status(SOFT_TERM(1, 2, 2)), RRR_WC_REM_INV_REQ_ERR);
	cr_assert_eq(rrr__soft_term_wc_status(SOFT_TERM(0, 2, 6)), RRR_WC_REM_OP_ERR);
}

Test(soft_unit, fpdu_pad)
{
	/* 2 + ULPDU + pad is a multiple of 4 */
	for (uint32_t u = 14; u < 80; u++)
		cr_assert_eq((2 + u + soft_mpa_pad(u)) % 4, 0);
	cr_assert_eq(soft_mpa_pad(14), 0);
	cr_assert_eq(soft_mpa_pad(15), 3);
}

Test(soft_unit, mpa_request_reply_roundtrip)
{
	struct soft_mpa_rr a, b;
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	size_t n, total;

	memset(&a, 0, sizeof(a));
	a.rev = 2;
	a.enhanced = a.p2p = true;
	a.rtr = SOFT_RTR_WRITE;
	a.crc = true;
	a.ird = 5;
	a.ord = 9;
	a.pd_len = 196;
	memset(a.pd, 0x3c, 196);
	n = rrr__soft_mpa_encode(&a, buf);
	cr_assert_eq(n, 20 + 4 + 196);
	cr_assert_eq(memcmp(buf, "MPA ID Req Frame", 16), 0);
	cr_assert_eq(buf[16], SOFT_MPA_FLAG_C | SOFT_MPA_FLAG_H);
	cr_assert_eq(buf[17], 2);
	cr_assert_eq(soft_get16(buf + 18), 200);
	cr_assert_eq(rrr__soft_mpa_parse_hdr(buf, false, &total), 0);
	cr_assert_eq(total, n);
	cr_assert_eq(rrr__soft_mpa_parse_hdr(buf, true, &total), -EPROTO); /* wrong key */
	cr_assert_eq(rrr__soft_mpa_parse(buf, n, false, &b), 0);
	cr_assert(b.crc && !b.reject && !b.markers && b.enhanced && b.rev == 2);
	cr_assert_eq(b.ird, 5);
	cr_assert_eq(b.ord, 9);
	cr_assert(b.ird_flags & SOFT_MPA_IRD_P2P);
	cr_assert(b.ord_flags & SOFT_MPA_ORD_RTR_WRITE);
	cr_assert(b.p2p && b.rtr == SOFT_RTR_WRITE);
	cr_assert_eq(b.pd_len, 196);
	cr_assert_eq(memcmp(b.pd, a.pd, 196), 0);
	/* truncated frame, oversized PD_Length */
	cr_assert_eq(rrr__soft_mpa_parse(buf, n - 1, false, &b), -EPROTO);
	soft_put16(buf + 18, 513);
	cr_assert_eq(rrr__soft_mpa_parse_hdr(buf, false, &total), -EMSGSIZE);
	/* reject reply */
	a.reply = true;
	a.reject = true;
	a.pd_len = 3;
	memcpy(a.pd, "no!", 3);
	n = rrr__soft_mpa_encode(&a, buf);
	cr_assert_eq(rrr__soft_mpa_parse(buf, n, true, &b), 0);
	cr_assert(b.reject);
	cr_assert_eq(b.pd_len, 3);
	cr_assert_eq(memcmp(b.pd, "no!", 3), 0);
}

Test(soft_unit, rtr_message)
{
	uint8_t b[SOFT_MPA_RTR_MAX];

	/* the CRC field is always present; zero and unchecked without CRC */
	cr_assert_eq(rrr__soft_mpa_rtr(b, SOFT_RTR_WRITE, false), 20);
	cr_assert_eq(b[16] | b[17] | b[18] | b[19], 0);
	cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, false, NULL));
	b[19] = 0x55;
	cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, false, NULL));
	cr_assert_eq(rrr__soft_mpa_rtr(b, SOFT_RTR_WRITE, true), 20);
	/* the CRC32c of the 16 bytes before it, least significant byte first
	 * (as the provider always sent it, and as siw does) */
	static const uint8_t crc_le[4] = {0xa3, 0x05, 0x72, 0xab};
	cr_assert_arr_eq(b + 16, crc_le, 4);
	cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, true, NULL));
	b[19] ^= 1;
	cr_assert(!rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, true, NULL));
	b[19] ^= 1;
	/* any STag and TO (siw sends STag 1), but a Write of zero length */
	b[7] = 1;
	rrr__soft_mpa_rtr(b, SOFT_RTR_WRITE, false);
	b[7] = 1;
	cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, false, NULL));
	b[3] = (uint8_t)(SOFT_RDMAP_V | SOFT_OP_SEND);
	cr_assert(!rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, false, NULL));
	/* a Write RTR is no Send or Read RTR, and the other way round */
	rrr__soft_mpa_rtr(b, SOFT_RTR_WRITE, true);
	cr_assert(!rrr__soft_mpa_is_rtr(b, SOFT_RTR_SEND, true, NULL));
	cr_assert_eq(rrr__soft_mpa_rtr(b, SOFT_RTR_SEND, true), 24);
	cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_SEND, true, NULL));
	cr_assert(!rrr__soft_mpa_is_rtr(b, SOFT_RTR_WRITE, true, NULL));
	cr_assert_eq(rrr__soft_mpa_rtr(b, SOFT_RTR_READ, true), 52);
	{
		struct soft_read_req rd = {.sink_stag = 9};
		uint8_t r[SOFT_HDR_TAGGED + 4];

		soft_put32(b + SOFT_HDR_UNTAGGED, 0x1234); /* the initiator's sink STag */
		rrr__soft_mpa_rtr(b, SOFT_RTR_READ, false);
		soft_put32(b + SOFT_HDR_UNTAGGED, 0x1234);
		cr_assert(rrr__soft_mpa_is_rtr(b, SOFT_RTR_READ, false, &rd));
		cr_assert_eq(rd.sink_stag, 0x1234);
		cr_assert_eq(rd.size, 0);
		soft_put32(b + SOFT_HDR_UNTAGGED + 12, 1); /* a Read of one byte is no RTR */
		cr_assert(!rrr__soft_mpa_is_rtr(b, SOFT_RTR_READ, false, NULL));
		/* the answer: a zero-length Read Response to the sink STag */
		rd.sink_stag = 0;
		cr_assert_eq(rrr__soft_mpa_rtr_read_resp(r, &rd, true), 20);
		cr_assert(rrr__soft_mpa_is_rtr_read_resp(r, true));
		r[19] ^= 1;
		cr_assert(!rrr__soft_mpa_is_rtr_read_resp(r, true));
	}
}

/* ----------------------------------------------------------- STag table */
struct stag_env {
	struct rrr_device *dev;
	struct rrr_pd *pd, *pd2;
	struct soft_dev *sd;
};

static void env_open(struct stag_env *e)
{
	cr_assert_eq(rrr_device_open("soft", "max_fr_pages=16", &e->dev), 0);
	cr_assert_eq(rrr_pd_alloc(e->dev, &e->pd), 0);
	cr_assert_eq(rrr_pd_alloc(e->dev, &e->pd2), 0);
	e->sd = soft_dev(e->dev);
}

static void env_close(struct stag_env *e)
{
	cr_assert_eq(rrr_pd_free(e->pd), 0);
	cr_assert_eq(rrr_pd_free(e->pd2), 0);
	rrr_device_close(e->dev);
}

#define FAILCODE(l, t, c) (SOFT_GET_FAIL | SOFT_TERM(l, t, c))

Test(soft_unit, stag_checks)
{
	struct stag_env e;
	static uint8_t buf[3 * 4096];
	struct rrr_sg sg[2] = { { buf, 10, 100 }, { buf + 8192, 0, 50 } };
	struct rrr_mr *mr;
	struct soft_mr *m, *got;
	uint32_t h, old;
	uint64_t va;

	env_open(&e);
	cr_assert_eq(rrr_mr_alloc(e.pd, 17, &mr), -EINVAL); /* over max_fr_pages */
	cr_assert_eq(rrr_mr_alloc(e.pd, 4, &mr), 0);
	m = container_of(mr, struct soft_mr, base);
	old = rrr_mr_rkey(mr);
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 2, RRR_ACCESS_REMOTE_WRITE), 2);
	h = rrr_mr_rkey(mr);
	cr_assert_eq(h >> 8, old >> 8);
	cr_assert_neq(h & 0xff, old & 0xff);
	va = rrr_mr_iova(mr);
	cr_assert_eq(va, (uintptr_t)buf + 10);
	cr_assert_eq(rrr_mr_length(mr), 150);
	/* MAPPED is not VALID yet */
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_INV_STAG));
	cr_assert_eq(rrr__soft_mr_validate(m, e.pd, RRR_ACCESS_REMOTE_WRITE), 0);
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, RRR_ACCESS_REMOTE_WRITE, va, 150, false, &got), 0);
	cr_assert_eq(got, m);
	{
		struct iovec iov[4];
		int n = rrr__soft_mr_iov(got, va + 95, 10, iov, 4);

		cr_assert_eq(n, 2);
		cr_assert_eq(iov[0].iov_base, buf + 105);
		cr_assert_eq(iov[0].iov_len, 5);
		cr_assert_eq(iov[1].iov_base, buf + 8192);
		cr_assert_eq(iov[1].iov_len, 5);
	}
	rrr__soft_mr_put(got);
	/* key, index, PD, rights, bounds, wrap */
	cr_assert_eq(rrr__soft_mr_get(e.sd, h ^ 1, e.pd, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_INV_STAG));
	cr_assert_eq(rrr__soft_mr_get(e.sd, 0x00fff000, e.pd, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_INV_STAG));
	cr_assert_eq(rrr__soft_mr_get(e.sd, 0xffffff00, e.pd, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_INV_STAG));
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd2, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_T_STAG_ASSOC), "DDP tagged 0x02 (RFC 5041)");
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, RRR_ACCESS_REMOTE_READ, va, 1, false, &got),
		     FAILCODE(0, 1, SOFT_ECODE_ACCESS));
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va, 151, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_BOUNDS));
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va - 1, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_BOUNDS));
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va + 150, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_BOUNDS));
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, UINT64_MAX - 2, 10, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_T_TO_WRAP), "DDP tagged 0x03 (RFC 5041)");
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va, 151, true, &got),
		     FAILCODE(0, 1, SOFT_ECODE_BOUNDS));
	/* invalidation: wrong key, wrong pd, then ok; the handle is dead */
	cr_assert_eq(rrr_mr_dereg(mr), -EBUSY);
	cr_assert_eq(rrr__soft_invalidate(e.sd, h ^ 1, e.pd, false), -ENOENT);
	cr_assert_eq(rrr__soft_invalidate(e.sd, h, e.pd2, false), -EACCES);
	cr_assert_eq(rrr__soft_inv_check(e.sd, h, e.pd), 0);
	cr_assert_eq(rrr__soft_invalidate(e.sd, h, e.pd, false), 0);
	cr_assert_eq(rrr__soft_inv_check(e.sd, h, e.pd), -ENOENT);
	cr_assert_eq(rrr__soft_mr_get(e.sd, h, e.pd, 0, va, 1, false, &got),
		     FAILCODE(1, 1, SOFT_ECODE_INV_STAG));
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	/* long-lived MRs cannot be invalidated remotely */
	cr_assert_eq(rrr_mr_reg(e.pd, buf, 100, RRR_ACCESS_REMOTE_READ, &mr), 0);
	cr_assert_eq(rrr_mr_lkey(mr), rrr_mr_rkey(mr));
	cr_assert_eq(rrr__soft_invalidate(e.sd, rrr_mr_rkey(mr), e.pd, false), -EPERM);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	env_close(&e);
}

Test(soft_unit, map_sg_limits)
{
	struct stag_env e;
	static uint8_t buf[64];
	struct rrr_sg sg[20];
	struct rrr_mr *mr;

	env_open(&e);
	for (int i = 0; i < 20; i++)
		sg[i] = (struct rrr_sg){ buf, (uint32_t)i, 1 };
	cr_assert_eq(rrr_mr_alloc(e.pd, 16, &mr), 0);
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 20, 0), 16); /* max_pages entries */
	cr_assert_eq(rrr_mr_length(mr), 16);
	sg[0].length = 0;
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 20, 0), -EINVAL);
	cr_assert_eq(rrr_mr_recover(mr), 0);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	env_close(&e);
}

/* map_model=page_list: the device advertises RRR_MAP_PAGE_LIST and
 * rrr_mr_map_sg() stops where an FRWR page list has a hole; max_pages
 * counts pages. The default stays SG_GAPS. */
Test(soft_unit, map_model_page_list)
{
	static uint8_t buf[8 * 4096] __attribute__((aligned(4096)));
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_mr *mr;
	struct rrr_sg sg[4];
	struct rrr_device_attr at;

	cr_assert_eq(rrr_device_open("soft", "map_model=bogus", &dev), -EINVAL);
	cr_assert_eq(rrr_device_open("soft", "map_model=gaps", &dev), 0);
	cr_assert_eq(rrr_device_query(dev, &at), 0);
	cr_assert_eq(at.map_model, RRR_MAP_SG_GAPS);
	cr_assert(at.sg_gaps);
	rrr_device_close(dev);
	cr_assert_eq(rrr_device_open("soft", "map_model=page_list,max_fr_pages=4", &dev), 0);
	cr_assert_eq(rrr_device_query(dev, &at), 0);
	cr_assert_eq(at.map_model, RRR_MAP_PAGE_LIST);
	cr_assert(!at.sg_gaps);
	cr_assert_eq(rrr_pd_alloc(dev, &pd), 0);
	cr_assert_eq(rrr_mr_alloc(pd, 4, &mr), 0);
	/* first entry may start mid-page, last may end mid-page */
	sg[0] = (struct rrr_sg){ buf, 100, 4096 - 100 };
	sg[1] = (struct rrr_sg){ buf + 4096, 0, 4096 };
	sg[2] = (struct rrr_sg){ buf + 3 * 4096, 0, 10 };
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 3, RRR_ACCESS_REMOTE_WRITE), 3);
	cr_assert_eq(rrr_mr_length(mr), 4096 - 100 + 4096 + 10);
	/* an entry after the first not starting on a page boundary: hole */
	sg[1].offset = 8;
	sg[1].length = 4088;
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 3, RRR_ACCESS_REMOTE_WRITE), 1);
	cr_assert_eq(rrr_mr_length(mr), 4096 - 100);
	/* an entry before the last not ending on one: hole */
	sg[0] = (struct rrr_sg){ buf, 0, 4000 };
	sg[1] = (struct rrr_sg){ buf + 4096, 0, 4096 };
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 2, RRR_ACCESS_REMOTE_WRITE), 1);
	/* zero-length entries inside are skipped, not holes */
	sg[0] = (struct rrr_sg){ buf, 0, 4096 };
	sg[1] = (struct rrr_sg){ buf + 100, 0, 0 };
	sg[2] = (struct rrr_sg){ buf + 4096, 0, 4096 };
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 3, RRR_ACCESS_REMOTE_WRITE), 3);
	/* pages, not entries, are counted: 3 + 2 pages > 4 */
	sg[0] = (struct rrr_sg){ buf, 0, 3 * 4096 };
	sg[1] = (struct rrr_sg){ buf + 4 * 4096, 0, 2 * 4096 };
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 2, RRR_ACCESS_REMOTE_WRITE), 1);
	cr_assert_eq(rrr_mr_length(mr), 3 * 4096);
	/* a first entry larger than the page list is refused */
	sg[0] = (struct rrr_sg){ buf, 1, 4 * 4096 };
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 1, RRR_ACCESS_REMOTE_WRITE), -EINVAL);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	cr_assert_eq(rrr_pd_free(pd), 0);
	rrr_device_close(dev);
}

/* Initial keys come from getrandom() per device: two devices that make
 * the same sequence of allocations get different keys (the chance that 16
 * random bytes agree is 2^-128), and the old linear pattern (seed*31+idx)
 * is gone. Every map still rotates the key. */
static void stag_keys(uint8_t keys[16])
{
	struct stag_env e;
	struct rrr_mr *mr[16];

	env_open(&e);
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(rrr_mr_alloc(e.pd, 1, &mr[i]), 0);
		keys[i] = (uint8_t)rrr_mr_rkey(mr[i]);
	}
	for (int i = 0; i < 16; i++)
		cr_assert_eq(rrr_mr_dereg(mr[i]), 0);
	env_close(&e);
}

Test(soft_unit, stag_initial_keys_unpredictable)
{
	uint8_t a[16], b[16];
	int linear = 0;

	stag_keys(a);
	stag_keys(b);
	cr_assert_neq(memcmp(a, b, sizeof(a)), 0, "two devices drew the same 16 keys");
	for (int i = 1; i < 15; i++) /* constant differences mean a guessable sequence */
		linear += (uint8_t)(a[i + 1] - a[i]) == (uint8_t)(a[i] - a[i - 1]);
	cr_assert_lt(linear, 13, "initial keys follow an arithmetic progression");
}

/* Concurrent lookups against invalidate/re-register: a reader holding a
 * reference must never see the window closed, and its "placement" writes
 * must never race with the owner's reuse of the buffer (TSan checks the
 * latter: the writer scribbles over the buffer after every invalidation). */
struct race {
	struct stag_env e;
	struct rrr_mr *mr;
	_Atomic uint32_t handle;
	atomic_bool stop;
	atomic_bool closed;
	atomic_long hits, misses;
	uint8_t buf[256];
	atomic_int violations;
	atomic_int next_reader; /* each reader places into its own 64 bytes */
};

static void *reader(void *arg)
{
	struct race *r = arg;
	int me = atomic_fetch_add(&r->next_reader, 1) & 3;

	while (!atomic_load(&r->stop)) {
		struct soft_mr *m;
		uint32_t h = atomic_load(&r->handle);

		if (rrr__soft_mr_get(r->e.sd, h, r->e.pd, RRR_ACCESS_REMOTE_WRITE,
				     (uintptr_t)r->buf, sizeof(r->buf), false, &m)) {
			atomic_fetch_add(&r->misses, 1);
			continue;
		}
		if (atomic_load(&r->closed))
			atomic_fetch_add(&r->violations, 1);
		for (size_t i = 0; i < 16; i++)
			((volatile uint8_t *)r->buf)[me * 64 + i * 4] = (uint8_t)h; /* the "placement" */
		if (atomic_load(&r->closed))
			atomic_fetch_add(&r->violations, 1);
		rrr__soft_mr_put(m);
		atomic_fetch_add(&r->hits, 1);
	}
	return NULL;
}

Test(soft_unit, stag_concurrent_lookup_vs_invalidate, .timeout = 120)
{
	struct race *r = calloc(1, sizeof(*r));
	struct rrr_sg sg;
	pthread_t th[3];
	struct soft_mr *m;

	cr_assert(r);
	env_open(&r->e);
	sg = (struct rrr_sg){ r->buf, 0, sizeof(r->buf) };
	cr_assert_eq(rrr_mr_alloc(r->e.pd, 1, &r->mr), 0);
	m = container_of(r->mr, struct soft_mr, base);
	cr_assert_eq(rrr_mr_map_sg(r->mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE), 1);
	cr_assert_eq(rrr__soft_mr_validate(m, r->e.pd, RRR_ACCESS_REMOTE_WRITE), 0);
	atomic_store(&r->handle, rrr_mr_rkey(r->mr));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, reader, r), 0);
	/* At least 300 rounds, and on until the readers were seen both to hit
	 * and to miss (on a loaded machine they may not be scheduled at first);
	 * bounded by 60 s of wall time. */
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int round = 0;; round++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (round >= 300 &&
		    ((atomic_load(&r->hits) > 0 && atomic_load(&r->misses) > 0) ||
		     now.tv_sec - t0.tv_sec > 60))
			break;
		uint32_t h = rrr_mr_rkey(r->mr);
		long seen = atomic_load(&r->hits);

		/* let the readers in while the window is open */
		for (int y = 0; y < 20 && atomic_load(&r->hits) == seen; y++)
			sched_yield();

		cr_assert_eq(rrr__soft_invalidate(r->e.sd, h, r->e.pd, false), 0);
		atomic_store(&r->closed, true);
		memset(r->buf, 0xcc, sizeof(r->buf)); /* owner reuses the pages */
		cr_assert_eq(rrr_mr_map_sg(r->mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE), 1);
		atomic_store(&r->closed, false);
		cr_assert_eq(rrr__soft_mr_validate(m, r->e.pd, RRR_ACCESS_REMOTE_WRITE), 0);
		if (round % 4)
			atomic_store(&r->handle, rrr_mr_rkey(r->mr)); /* else a stale one */
	}
	atomic_store(&r->stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&r->violations), 0);
	cr_assert_gt(atomic_load(&r->hits), 0);
	cr_assert_gt(atomic_load(&r->misses), 0);
	cr_assert_eq(rrr__soft_invalidate(r->e.sd, rrr_mr_rkey(r->mr), r->e.pd, false), 0);
	cr_assert_eq(rrr_mr_dereg(r->mr), 0);
	env_close(&r->e);
	free(r);
}
