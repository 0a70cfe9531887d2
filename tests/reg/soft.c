/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/soft.c - the registration engine end to end on the soft
 * provider over loopback (or the provider and address of tests/test_env.h;
 * expectations that depend on the device follow its attributes): a client
 * side registers scatterlists with the engine, a peer QP RDMA WRITEs and
 * READs through the handles, and the bytes are verified. After local
 * invalidation, remote invalidation, key rotation and recovery from a
 * flush, the peer's access is refused and places zero bytes (guard
 * patterns all around the registered entries). The last test is the loop
 * `rrr-bench reg` times: REG_MR + LOCAL_INV of a 64 KiB scatterlist posted
 * as one chain, polled to completion.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rrr/reg_engine.h>

#include "../test_env.h"
#include "helpers/io.h"
#include "helpers/loop.h"

#define PS	   4096u
#define CBUF_PAGES 16u
#define PBUF_LEN   (256u * 1024u)
#define GUARD	   0xEE
#define TMO	   5000

static struct loop L;
static struct rrr_mrpool *pool;
static uint8_t *cbuf, *pbuf; /* client memory; peer source/sink */
static struct rrr_mr *pmr;   /* peer's long-lived registration of pbuf */
static uint8_t rbuf[256];    /* client receive buffer */
static struct rrr_mr *rmr;   /* its registration */
static struct rrr_reg_io io, io2;
static uint64_t next_id = 100;

static void setup(void)
{
	struct rrr_mrpool_opts po = {.max_mrs = 16};
	int rc;

	rc = loop_open(&L, tenv_provider(), tenv_provider_opts());
	cr_assert_eq(rc, 0, "%s device: %d %s", tenv_provider(), rc,
		     rrr_last_error() ? rrr_last_error() : "");
	rc = loop_connect(&L, TMO);
	cr_assert_eq(rc, 0, "loopback connect: %d %s", rc,
		     rrr_last_error() ? rrr_last_error() : "");
	cbuf = aligned_alloc(PS, CBUF_PAGES * PS);
	pbuf = aligned_alloc(PS, PBUF_LEN);
	cr_assert(cbuf && pbuf);
	memset(cbuf, GUARD, CBUF_PAGES * PS);
	memset(pbuf, 0, PBUF_LEN);
	memset(&io, 0, sizeof(io));
	memset(&io2, 0, sizeof(io2));
	cr_assert_eq(rrr_mr_reg(L.p.pd, pbuf, PBUF_LEN,
				RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &pmr),
		     0);
	cr_assert_eq(rrr_mr_reg(L.c.pd, rbuf, sizeof(rbuf), RRR_ACCESS_LOCAL_WRITE, &rmr), 0);
	cr_assert_eq(rrr_mrpool_create(L.c.pd, &po, &pool), 0);
}

static void teardown(void)
{
	/* a test that failed midway: never leave an MR valid */
	rrr_reg_recover(pool, &io);
	rrr_reg_recover(pool, &io2);
	rio_close(&L, pool, pmr, rmr);
	free(cbuf);
	free(pbuf);
	pool = NULL;
	pmr = rmr = NULL;
	cbuf = pbuf = NULL;
}

static void fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* Post io's REG_MR chain with the last WR signaled and wait for it. */
static void post_reg(struct rrr_reg_io *r)
{
	rio_post_reg(&L, r, next_id++);
}

/* Local invalidation through the engine's chain; waits for completion. */
static void local_inv(struct rrr_reg_io *r)
{
	rio_local_inv(&L, pool, r, next_id++);
}

/* Map the @n entries of @sg into @r for the peer to write (remote and
 * local write); with @reg, register them too (post_reg). */
static void map_writable(struct rrr_sg *sg, uint32_t n, struct rrr_reg_io *r, bool reg)
{
	cr_assert_eq(rrr_reg_map(pool, sg, n, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE, r), 0);
	if (reg)
		post_reg(r);
}

static void post_client_recv(uint64_t id)
{
	static struct rrr_sge sge;
	static struct rrr_recv_wr wr;
	struct rrr_recv_wr *bad;

	sge = (struct rrr_sge){(uintptr_t)rbuf, sizeof(rbuf), rrr_mr_lkey(rmr)};
	wr = (struct rrr_recv_wr){.wr_id = id, .sg_list = &sge, .num_sge = 1};
	cr_assert_eq(rrr_qp_post_recv(L.c.qp, &wr, &bad), 0);
}

/* Peer: RDMA WRITE pbuf through @segs, then a SEND (SEND_WITH_INV of
 * @inv_rkey when non-zero): rio_peer_write_then_send(). */
static void peer_write_then_send(const struct rrr_reg_seg *segs, uint32_t nsegs, uint32_t inv_rkey)
{
	rio_peer_write_then_send(&L, pbuf, pmr, segs, nsegs, inv_rkey, 2);
}

/* Expect the client's RECV @id to complete successfully (writes placed). */
static void expect_recv_ok(uint64_t id, struct rrr_wc *wc)
{
	cr_assert_eq(loop_wait(&L, &L.c, id, wc, TMO), 0, "client RECV");
	cr_assert_eq(wc->status, RRR_WC_SUCCESS, "client RECV: %s", rrr_wc_status_str(wc->status));
}

/* Skip the test where the device has no usable Send With Invalidate. */
static void need_send_with_inv(void)
{
	if (!L.attr.send_with_inv)
		cr_skip_test("%s/%s: no usable Send With Invalidate (attr.send_with_inv false)",
			     L.attr.name, L.attr.strategy);
}

/* The peer's SEND_WITH_INV of @rkey reaches the client's RECV @id, which
 * completes successfully saying so: its completion. */
static struct rrr_wc recv_send_inv(uint64_t id, uint32_t rkey)
{
	struct rrr_wc wc;

	post_client_recv(id);
	peer_write_then_send(NULL, 0, rkey);
	expect_recv_ok(id, &wc);
	cr_assert(wc.wc_flags & RRR_WC_WITH_INV, "RECV lacks WITH_INV");
	return wc;
}

/* The peer learns of the refusal from the Terminate: its QP goes to error,
 * so a later SEND is flushed (iWARP completes earlier ones locally). */
static void expect_peer_terminated(void)
{
	struct rrr_send_wr wr, *bad;
	struct rrr_sge sge = {(uintptr_t)pbuf, 8, rrr_mr_lkey(pmr)};
	struct rrr_wc wc;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		wr = (struct rrr_send_wr){.wr_id = 3,
					  .opcode = RRR_WR_SEND,
					  .flags = RRR_SEND_SIGNALED,
					  .sg_list = &sge,
					  .num_sge = 1};
		if (rrr_qp_post_send(L.p.qp, &wr, &bad) != 0)
			return; /* refused at post: in error */
		cr_assert_eq(loop_wait(&L, &L.p, 3, &wc, TMO), 0, "peer probe SEND");
		if (wc.status != RRR_WC_SUCCESS)
			return;
		loop_wait(&L, &L.p, 999, &wc, 10); /* let the Terminate arrive */
	}
	cr_expect_fail("peer QP never left RTS after its access was refused");
}

/* Expect the connection to be torn down by the client side's access check:
 * the client's posted RECV never succeeds. */
static void expect_refused(uint64_t id)
{
	struct rrr_wc wc;
	int rc = loop_wait(&L, &L.c, id, &wc, TMO);

	cr_assert_eq(rc, 0, "client RECV %llu never completed (QP not flushed?)",
		     (unsigned long long)id);
	cr_expect_neq(wc.status, RRR_WC_SUCCESS, "a write through a dead handle was accepted");
	cr_log_info("refused: client RECV %s (vendor_err 0x%x)", rrr_wc_status_str(wc.status),
		    wc.vendor_err);
	expect_peer_terminated();
}

static void expect_all_guard(const char *what)
{
	size_t i;

	for (i = 0; i < CBUF_PAGES * PS; i++)
		cr_assert_eq(cbuf[i], GUARD, "%s: byte %zu changed to 0x%02x", what, i, cbuf[i]);
}

/* The bytes of a segment list land in the entries in order; the rest of
 * cbuf keeps its guard. */
static void expect_placed(const struct rrr_sg *sg, unsigned n)
{
	rio_expect_placed(cbuf, CBUF_PAGES * PS, GUARD, sg, n, pbuf);
}

/* The peer WRITEs @len bytes of pattern @seed through the dead @segs (@n):
 * refused, the client's RECV @id flushed, the peer's QP in error. */
static void write_refused(const struct rrr_reg_seg *segs, uint32_t n, size_t len, unsigned seed,
			  uint64_t id)
{
	fill_pattern(pbuf, len, seed);
	post_client_recv(id);
	peer_write_then_send(segs, n, 0);
	expect_refused(id);
}

/* A fresh connection on the same PDs (the last one was refused or torn). */
static void reconnect(void)
{
	loop_disconnect(&L);
	cr_assert_eq(loop_connect(&L, TMO), 0);
}

TestSuite(soft, .init = setup, .fini = teardown, .timeout = 60);

/* A gappy scatterlist (FBO, whole page, partial page, an empty entry):
 * the peer WRITEs through the handles, then READs back; bytes verified. */
Test(soft, write_and_read_through_handles)
{
	struct rrr_sg sg[] = {
	    {cbuf, 100, 3000},
	    {cbuf + 2 * PS, 0, PS},
	    {cbuf + 4 * PS, 0, 0},
	    {cbuf + 4 * PS, 512, 1000},
	};
	struct rrr_send_wr rd, *bad;
	struct rrr_sge sge;
	struct rrr_wc wc;
	struct rrr_reg_stats st;
	uint32_t total = 3000 + PS + 1000;
	uint32_t nsegs;

	cr_assert_eq(
	    rrr_reg_map(pool, sg, 4,
			RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ | RRR_ACCESS_LOCAL_WRITE,
			&io),
	    0);
	cr_assert_geq(io.nsegs, 1u);
	if (L.attr.map_model == RRR_MAP_SG_GAPS)
		cr_expect_eq(io.nsegs, 1u, "soft maps gaps in one registration");
	else if (L.attr.map_model == RRR_MAP_VIRT_CONTIG)
		cr_expect_eq(io.nsegs, 3u, "every virtual discontinuity is a hole");
	nsegs = io.nsegs;
	post_reg(&io);
	fill_pattern(pbuf, total, 3);
	post_client_recv(1000);
	peer_write_then_send(io.segs, io.nsegs, 0);
	expect_recv_ok(1000, &wc);
	expect_placed(sg, 4);

	/* READ it back into pbuf + 64 KiB. */
	memset(pbuf + 65536, 0, total);
	sge = (struct rrr_sge){(uintptr_t)pbuf + 65536, io.segs[0].length, rrr_mr_lkey(pmr)};
	rd = (struct rrr_send_wr){.wr_id = 7,
				  .opcode = RRR_WR_RDMA_READ,
				  .flags = RRR_SEND_SIGNALED,
				  .sg_list = &sge,
				  .num_sge = 1};
	rd.u.rdma.remote_addr = io.segs[0].offset;
	rd.u.rdma.rkey = io.segs[0].handle;
	cr_assert_eq(rrr_qp_post_send(L.p.qp, &rd, &bad), 0);
	cr_assert_eq(loop_wait(&L, &L.p, 7, &wc, TMO), 0);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "READ: %s", rrr_wc_status_str(wc.status));
	cr_expect_eq(memcmp(pbuf + 65536, pbuf, io.segs[0].length), 0, "READ bytes");

	local_inv(&io);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.registrations, nsegs, "one registration per segment");
	cr_expect_eq(st.local_inv, nsegs, "every registration invalidated");
}

/* After LOCAL_INV the peer's write is refused and places zero bytes. */
Test(soft, write_after_local_inv_refused)
{
	struct rrr_sg sg[] = {{cbuf + PS, 0, 2 * PS}};
	struct rrr_reg_seg old[RRR_REG_MAX_SEGS];
	uint32_t n;

	map_writable(sg, 1, &io, true);
	n = io.nsegs;
	memcpy(old, io.segs, sizeof(old[0]) * n);
	local_inv(&io);
	write_refused(old, n, 2 * PS, 9, 1001);
	expect_all_guard("write after LOCAL_INV");
}

/* Send With Invalidate of the I/O's own handle: the engine accepts it,
 * needs no LOCAL_INV, and the handle is dead for the peer afterwards. */
Test(soft, remote_invalidation)
{
	struct rrr_sg sg[] = {{cbuf, 0, PS}};
	struct rrr_reg_stats st;
	struct rrr_reg_seg old;
	struct rrr_wc wc;

	need_send_with_inv();
	map_writable(sg, 1, &io, false);
	cr_assert_eq(io.nsegs, 1u);
	post_reg(&io);
	old = io.segs[0];
	wc = recv_send_inv(1002, io.segs[0].handle);
	cr_assert_eq(wc.invalidated_rkey, io.segs[0].handle);
	cr_assert_eq(rrr_reg_remote_invalidated(pool, &io, wc.invalidated_rkey), 0);
	cr_expect_null(rrr_reg_build_inv(pool, &io, 1), "no LOCAL_INV after remote inv");
	rrr_reg_inv_done(pool, &io);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.remote_inv, 1u);
	cr_expect_eq(st.local_inv, 0u);

	write_refused(&old, 1, PS, 11, 1003);
	expect_all_guard("write after remote invalidation");
}

/* Send With Invalidate of a handle the I/O does not own: -EPERM; the
 * caller disconnects and recovers, and no MR stays valid. */
Test(soft, foreign_remote_invalidation)
{
	struct rrr_sg a[] = {{cbuf, 0, PS}}, b[] = {{cbuf + 4 * PS, 0, PS}};
	struct rrr_reg_seg old_a, old_b;
	struct rrr_reg_stats st;
	struct rrr_wc wc;

	need_send_with_inv();
	map_writable(a, 1, &io, false);
	map_writable(b, 1, &io2, false);
	post_reg(&io);
	post_reg(&io2);
	old_a = io.segs[0];
	old_b = io2.segs[0];
	wc = recv_send_inv(1004, io2.segs[0].handle);
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, wc.invalidated_rkey), -EPERM);
	/* the caller's reaction: disconnect, then recover every I/O */
	rrr_cm_disconnect(L.c.id);
	rrr_reg_recover(pool, &io);
	rrr_reg_recover(pool, &io2);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.recoveries, 2u);
	cr_expect_eq(st.remote_inv, 0u);

	/* a fresh connection on the same PDs: both old handles are dead */
	reconnect();
	write_refused(&old_a, 1, PS, 13, 1005);
	reconnect();
	write_refused(&old_b, 1, PS, 13, 1006);
	expect_all_guard("writes after recovery");
}

/* A pool of one MR: the second I/O reuses it with a new key; the first
 * I/O's handle is refused although the MR is valid again on the same pages. */
Test(soft, key_rotation_old_handle_refused)
{
	struct rrr_sg sg[] = {{cbuf + 3 * PS, 0, PS}};
	struct rrr_mrpool_opts one = {.max_mrs = 1};
	struct rrr_reg_seg old;
	struct rrr_mr *mr;
	struct rrr_wc wc;

	rrr_mrpool_destroy(pool);
	pool = NULL;
	cr_assert_eq(rrr_mrpool_create(L.c.pd, &one, &pool), 0);

	map_writable(sg, 1, &io, true);
	old = io.segs[0];
	mr = io.mrs[0];
	local_inv(&io);

	map_writable(sg, 1, &io, false);
	cr_assert_eq(io.mrs[0], mr, "pool of one reuses its MR");
	cr_assert_neq(io.segs[0].handle, old.handle, "key rotated");
	if (strcmp(L.attr.strategy, "regmr") != 0) /* regmr: the kernel picks each key */
		cr_expect_eq(io.segs[0].handle >> 8, old.handle >> 8, "same index");
	post_reg(&io);

	/* the new handle works */
	fill_pattern(pbuf, PS, 17);
	post_client_recv(1007);
	peer_write_then_send(io.segs, 1, 0);
	expect_recv_ok(1007, &wc);
	expect_placed(sg, 1);

	/* the stale one is refused, zero bytes placed */
	memset(cbuf, GUARD, CBUF_PAGES * PS);
	write_refused(&old, 1, PS, 19, 1008);
	expect_all_guard("write with a rotated-out key");
}

/* The documented bound, on the real provider: with one MR, its handle is
 * new for 255 registrations and comes back on the 256th. */
Test(soft, key_wraps_after_256_maps)
{
	struct rrr_sg sg[] = {{cbuf, 0, PS}};
	struct rrr_mrpool_opts one = {.max_mrs = 1};
	uint32_t first = 0;
	unsigned n;

	TENV_SOFT_ONLY("the 8-bit key of one soft MR; verbs keys come from the device");
	rrr_mrpool_destroy(pool);
	pool = NULL;
	cr_assert_eq(rrr_mrpool_create(L.c.pd, &one, &pool), 0);
	for (n = 0; n <= 256; n++) {
		cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
		if (n == 0)
			first = io.segs[0].handle;
		else if (n < 256)
			cr_assert_neq(io.segs[0].handle, first, "handle repeated after %u maps", n);
		else
			cr_expect_eq(io.segs[0].handle, first, "8-bit key wraps after 256 maps");
		post_reg(&io);
		local_inv(&io);
	}
}

/* A QP flush with registrations valid: recovery leaves no MR valid. */
Test(soft, recovery_after_flush)
{
	struct rrr_sg sg[] = {{cbuf, 0, PS}, {cbuf + 5 * PS + 8, 0, 100}, {cbuf + 8 * PS, 0, PS}};
	struct rrr_reg_seg old[RRR_REG_MAX_SEGS];
	struct rrr_send_wr *bad, *inv;
	struct rrr_reg_stats st;
	struct rrr_wc wc;
	uint32_t n, i;
	int rc;

	map_writable(sg, 3, &io, true);
	n = io.nsegs;
	memcpy(old, io.segs, sizeof(old[0]) * n);

	/* the connection fails; the invalidation chain is flushed or refused */
	rrr_cm_disconnect(L.c.id);
	inv = rrr_reg_build_inv(pool, &io, 55);
	rc = rrr_qp_post_send(L.c.qp, inv, &bad);
	if (rc == 0) {
		cr_assert_eq(loop_wait(&L, &L.c, 55, &wc, TMO), 0, "flushed LOCAL_INV");
		if (wc.status == RRR_WC_SUCCESS)
			cr_log_info("LOCAL_INV on a disconnected QP succeeded; recovering anyway");
	}
	rrr_reg_recover(pool, &io);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.recoveries, n);
	cr_expect_eq(io.nsegs, 0u);

	for (i = 0; i < n; i++) {
		reconnect();
		write_refused(&old[i], 1, PS, 23, 1100 + i);
	}
	expect_all_guard("writes after recovery");
	/* the pool is usable again */
	cr_assert_eq(rrr_reg_map(pool, sg, 3, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	for (i = 0; i < io.nsegs; i++)
		cr_expect_neq(io.segs[i].handle, old[i].handle);
	rrr_reg_recover(pool, &io);
}

/*
 * The `rrr-bench reg` loop: map a 64 KiB scatterlist of 16 pages, post
 * REG_MR chained to the LOCAL_INV chain (one signaled WR), poll, release.
 * No network round trip is involved. Prints CPU ns per I/O; asserts only
 * behaviour (every cycle completes, counters add up).
 */
Test(soft, reg_inv_cycle_64k)
{
	struct rrr_sg sg[16];
	struct rrr_send_wr *bad;
	struct rrr_reg_stats st;
	struct timespec t0, t1;
	/* verbs under TCG (VM) is slow: fewer cycles, same assertions */
	const unsigned iters = tenv_is_soft() ? 20000 : 500;
	unsigned i, k;
	double ns;

	for (k = 0; k < 16; k++)
		sg[k] = (struct rrr_sg){cbuf, k * PS, PS};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (i = 0; i < iters; i++) {
		struct rrr_wc wc;
		int n;

		cr_assert_eq(rrr_reg_map(pool, sg, 16, RRR_ACCESS_REMOTE_WRITE, &io), 0);
		io.reg_wr[io.nsegs - 1].next = rrr_reg_build_inv(pool, &io, i);
		cr_assert_eq(rrr_qp_post_send(L.c.qp, &io.reg_wr[0], &bad), 0);
		do
			n = rrr_cq_poll(L.c.cq, &wc, 1);
		while (n == 0);
		cr_assert_eq(n, 1);
		cr_assert_eq(wc.status, RRR_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, i);
		rrr_reg_inv_done(pool, &io);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / iters;
	cr_log_info("%s/%s REG_MR + LOCAL_INV of 64 KiB (16 entries): %.0f ns CPU per I/O",
		    L.attr.provider, L.attr.strategy, ns);
	rrr_mrpool_stats(pool, &st);
	cr_expect_eq(st.registrations, iters);
	cr_expect_eq(st.local_inv, iters);
	cr_expect_eq(st.recoveries, 0u);
}
