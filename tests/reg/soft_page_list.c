/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/soft_page_list.c - the registration engine's hole and depth
 * splitting, end to end, on the soft device opened with
 * map_model=page_list,max_fr_pages=4 (it then behaves like an FRWR page
 * list: rrr_mr_map_sg stops at page holes, max_fr_pages counts pages).
 * A scatterlist with two holes and a run longer than one page list must
 * become four registrations; the peer WRITEs through all four handles and
 * the bytes land in the entries in order, guards untouched; LOCAL_INV of
 * all four leaves the stats balanced. Soft only (a device option).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/reg_engine.h>

#include "../test_env.h"
#include "helpers/io.h"
#include "helpers/loop.h"

#define PS     4096u
#define NPAGES 12u
#define GUARD  0xEE
#define TMO    5000

static struct loop L;
static struct rrr_mrpool *pool;
static uint8_t *cbuf, *pbuf, rbuf[64];
static struct rrr_mr *pmr, *rmr;
static struct rrr_reg_io io;

static void setup(void)
{
	struct rrr_mrpool_opts po = { .max_mrs = 16 };

	if (!tenv_is_soft())
		return;
	cr_assert_eq(loop_open(&L, "soft", "map_model=page_list,max_fr_pages=4"), 0, "%s",
		     rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(L.attr.map_model, RRR_MAP_PAGE_LIST);
	cr_assert_eq(loop_connect(&L, TMO), 0);
	cbuf = aligned_alloc(PS, NPAGES * PS);
	pbuf = aligned_alloc(PS, NPAGES * PS);
	cr_assert(cbuf && pbuf);
	memset(cbuf, GUARD, NPAGES * PS);
	for (size_t i = 0; i < NPAGES * PS; i++)
		pbuf[i] = (uint8_t)(i * 13 + 5);
	cr_assert_eq(rrr_mr_reg(L.p.pd, pbuf, NPAGES * PS, RRR_ACCESS_LOCAL_WRITE, &pmr), 0);
	cr_assert_eq(rrr_mr_reg(L.c.pd, rbuf, sizeof(rbuf), RRR_ACCESS_LOCAL_WRITE, &rmr), 0);
	cr_assert_eq(rrr_mrpool_create(L.c.pd, &po, &pool), 0);
	memset(&io, 0, sizeof(io));
}

static void teardown(void)
{
	if (!tenv_is_soft())
		return;
	rrr_reg_recover(pool, &io);
	rio_close(&L, pool, pmr, rmr);
	free(cbuf);
	free(pbuf);
}

TestSuite(soft_page_list, .init = setup, .fini = teardown, .timeout = 60);

Test(soft_page_list, holes_and_depth_split_then_write_through_all)
{
	/* [100, 3100) ends mid-page: hole. Pages 2..6 (5 pages, 3 entries)
	 * exceed the 4-page list: cut at a page boundary. Then an entry
	 * starting mid-page: hole. Four registrations. */
	struct rrr_sg sg[] = {
		{ cbuf, 100, 3000 },
		{ cbuf + 2 * PS, 0, PS },
		{ cbuf + 3 * PS, 0, PS },
		{ cbuf + 4 * PS, 0, 3 * PS },
		{ cbuf + 8 * PS, 512, 1000 },
	};
	struct rrr_recv_wr rwr;
	struct rrr_reg_stats st;
	struct rrr_sge rsge;
	struct rrr_wc wc;
	uint64_t total = 0;

	TENV_SOFT_ONLY("map_model is a soft device option");
	cr_assert_eq(rrr_reg_map(pool, sg, 5, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE, &io),
		     0);
	cr_assert_eq(io.nsegs, 4u, "two holes and one depth cut: %u registrations", io.nsegs);
	cr_expect_eq(io.holes, 2u);
	rio_post_reg(&L, &io, 10);

	rsge = (struct rrr_sge){ (uintptr_t)rbuf, sizeof(rbuf), rrr_mr_lkey(rmr) };
	rwr = (struct rrr_recv_wr){ .wr_id = 11, .sg_list = &rsge, .num_sge = 1 };
	cr_assert_eq(rrr_qp_post_recv(L.c.qp, &rwr, NULL), 0);
	rio_peer_write_then_send(&L, pbuf, pmr, io.segs, io.nsegs, 0, 12);
	cr_assert_eq(loop_wait(&L, &L.c, 11, &wc, TMO), 0);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "RECV: %s", rrr_wc_status_str(wc.status));
	for (uint32_t i = 0; i < io.nsegs; i++)
		total += io.segs[i].length;
	cr_assert_eq(total, 3000u + 5 * PS + 1000u);
	/* bytes placed in order, guards intact */
	rio_expect_placed(cbuf, NPAGES * PS, GUARD, sg, 5, pbuf);

	rio_local_inv(&L, pool, &io, 13);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.registrations, 4u);
	cr_expect_eq(st.local_inv, 4u);
}
