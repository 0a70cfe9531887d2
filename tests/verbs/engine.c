/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/engine.c - the registration engine (rrr/reg_engine.h) on a real
 * verbs device, for the regmr and mw strategies: a scatterlist with a hole
 * becomes two registrations (RRR_MAP_VIRT_CONTIG), the peer WRITEs through
 * every handle and the bytes land exactly there (guards untouched), the
 * engine's LOCAL_INV chain (or the peer's Send With Invalidate, mw) revokes
 * them, and a stale handle is refused afterwards.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rrr/reg_engine.h>

#include "helpers/pair.h"

#define GUARD 0xEE

static void engine_roundtrip(const char *strategy, bool remote_inv)
{
	const unsigned acc = RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE;
	struct rrr_mrpool_opts po = {.max_mrs = 8};
	static struct rrr_reg_io io;
	struct rrr_mrpool *pool;
	struct rrr_send_wr *inv;
	struct rrr_reg_stats st;
	struct rrr_sg sg[3];
	struct rrr_wc wc;
	struct vp p;
	uint32_t i, stale;
	int rc;

	vp_open(&p, vp_opts(strategy));
	if (remote_inv && !p.attr.send_with_inv) {
		vp_close(&p);
		cr_skip_test("no remote invalidation with strategy=%s here", strategy);
	}
	vp_connect(&p, NULL, 0, NULL, 0);
	cr_assert_eq(rrr_mrpool_create(p.pd, &po, &pool), 0, "%s", rrr_last_error());
	memset(p.sbuf, GUARD, VP_BUF);
	/* [8K+100, +3996) abuts [12K, +1000); [20K, +500) is after a hole */
	sg[0] = (struct rrr_sg){p.sbuf + 8192, 100, 3996};
	sg[1] = (struct rrr_sg){p.sbuf + 12288, 0, 1000};
	sg[2] = (struct rrr_sg){p.sbuf + 20480, 0, 500};
	memset(&io, 0, sizeof(io));
	rc = rrr_reg_map(pool, sg, 3, acc, &io);
	cr_assert_eq(rc, 0, "rrr_reg_map: %d %s", rc, rrr_last_error());
	cr_assert_eq(io.nsegs, 2u, "a hole must split VIRT_CONTIG registrations");
	cr_assert_eq(io.segs[0].length, 4996u);
	cr_assert_eq(io.segs[0].offset, (uint64_t)(uintptr_t)(p.sbuf + 8192 + 100));
	cr_assert_eq(io.segs[1].length, 500u);
	io.reg_wr[io.nsegs - 1].flags |= RRR_SEND_SIGNALED;
	io.reg_wr[io.nsegs - 1].wr_id = 5;
	cr_assert_eq(rrr_qp_post_send(p.sqp, &io.reg_wr[0], NULL), 0, "%s", rrr_last_error());
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 5u);

	for (i = 0; i < io.nsegs; i++)
		cr_assert_eq(vp_client_write(&p, io.segs[i].offset, io.segs[i].handle, io.segs[i].length,
					(uint8_t)(i * 40)),
			     RRR_WC_SUCCESS);
	for (i = 0; i < 4996; i++)
		cr_assert_eq(p.sbuf[8192 + 100 + i], (uint8_t)i, "byte %u of seg 0", i);
	for (i = 0; i < 500; i++)
		cr_assert_eq(p.sbuf[20480 + i], (uint8_t)(40 + i), "byte %u of seg 1", i);
	cr_assert_eq(p.sbuf[8192 + 99], GUARD);
	cr_assert_eq(p.sbuf[12288 + 1000], GUARD);
	cr_assert_eq(p.sbuf[20480 - 1], GUARD);
	cr_assert_eq(p.sbuf[20480 + 500], GUARD);

	stale = io.segs[0].handle;
	if (remote_inv) {
		vp_post_recv(&p, 1, 70, 60000, 64);
		cr_assert_eq(vp_client_op(&p, RRR_WR_SEND_WITH_INV, 71, 0, 4, 0, stale).status,
			     RRR_WC_SUCCESS);
		wc = vp_wait_wc(p.scq);
		cr_assert_eq(wc.status, RRR_WC_SUCCESS);
		cr_assert(wc.wc_flags & RRR_WC_WITH_INV);
		cr_assert_eq(wc.invalidated_rkey, stale);
		cr_assert_eq(rrr_reg_remote_invalidated(pool, &io, wc.invalidated_rkey), 0);
	}
	inv = rrr_reg_build_inv(pool, &io, 6);
	cr_assert_not_null(inv);
	cr_assert_eq(rrr_qp_post_send(p.sqp, inv, NULL), 0, "%s", rrr_last_error());
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 6u);
	rrr_reg_inv_done(pool, &io);
	rrr_mrpool_stats(pool, &st);
	cr_assert_eq(st.registrations, 2u);
	cr_assert_eq(st.remote_inv, remote_inv ? 1u : 0u);
	cr_assert_eq(st.map_errors, 0u);

	memset(p.sbuf + 8192, GUARD, 8192);
	cr_assert_eq(vp_client_write(&p, (uintptr_t)(p.sbuf + 8192 + 100), stale, 64, 1),
		     RRR_WC_REM_ACCESS_ERR);
	cr_assert_eq(p.sbuf[8192 + 100], GUARD, "a write through a revoked handle landed");
	rrr_mrpool_destroy(pool);
	vp_close(&p);
}

Test(verbs_engine, regmr_hole_split_write_invalidate, .timeout = 120)
{
	engine_roundtrip("regmr", false);
}

Test(verbs_engine, mw_hole_split_write_invalidate, .timeout = 120)
{
	engine_roundtrip("mw", false);
}

Test(verbs_engine, mw_remote_invalidation, .timeout = 120)
{
	engine_roundtrip("mw", true);
}
