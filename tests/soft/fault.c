/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/fault.c - fault injection (transport/soft/fault.c): options
 * and their bounds, off by default and then never drawing, draws that
 * follow the seed at the rate asked, an injected drop ending the
 * connection on both sides (work flushed, nothing placed, DISCONNECTED),
 * and delays and stalls that slow a 1 MiB RDMA WRITE without changing a
 * byte of it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ----------------------------------------------------------- options */
Test(soft_fault, options_bounds_and_off_by_default)
{
	struct rrr_device *dev;
	struct soft_dev *d;

	cr_assert_eq(rrr_device_open("soft", NULL, &dev), 0);
	d = soft_dev(dev);
	cr_assert(!d->fault_on, "no fault option: injection off");
	cr_assert_eq(d->fault_drop_ppm, 0);
	rrr_device_close(dev);

	cr_assert_eq(rrr_device_open("soft",
				     "fault_seed=7,fault_drop_ppm=10,fault_delay_us=5,"
				     "fault_delay_ppm=20,fault_stall_ms=3,fault_stall_ppm=30",
				     &dev),
		     0);
	d = soft_dev(dev);
	cr_assert(d->fault_on);
	cr_assert_eq(d->fault_seed, 7);
	cr_assert_eq(d->fault_drop_ppm, 10);
	cr_assert_eq(d->fault_delay_us, 5);
	cr_assert_eq(d->fault_delay_ppm, 20);
	cr_assert_eq(d->fault_stall_ms, 3);
	cr_assert_eq(d->fault_stall_ppm, 30);
	rrr_device_close(dev);

	/* a seed alone, or a delay with probability 0, injects nothing */
	cr_assert_eq(
	    rrr_device_open("soft", "fault_seed=9,fault_delay_us=100,fault_delay_ppm=0", &dev), 0);
	cr_assert(!soft_dev(dev)->fault_on);
	rrr_device_close(dev);

	cr_assert_eq(rrr_device_open("soft", "fault_drop_ppm=1000001", &dev), -EINVAL);
	cr_assert_eq(rrr_device_open("soft", "fault_stall_ms=60001", &dev), -EINVAL);
	cr_assert_eq(rrr_device_open("soft", "fault_delay_us=x", &dev), -EINVAL);
}

/* ----------------------------------------------------------- draws */
static struct soft_dev g_dev;
static struct soft_qp g_qp;

static void fake_qp(uint64_t seed, uint32_t drop_ppm)
{
	memset(&g_dev, 0, sizeof(g_dev));
	memset(&g_qp, 0, sizeof(g_qp));
	g_dev.fault_seed = seed;
	g_dev.fault_drop_ppm = drop_ppm;
	g_dev.fault_on = drop_ppm > 0;
	g_qp.dev = &g_dev;
	g_qp.fd = -1; /* a drop then only counts */
	rrr__soft_fault_qp_init(&g_qp);
}

static unsigned draws(uint64_t seed, uint32_t ppm, bool *out, unsigned n)
{
	unsigned hits = 0;

	fake_qp(seed, ppm);
	for (unsigned i = 0; i < n; i++) {
		out[i] = soft_fault_point(&g_qp);
		hits += out[i];
	}
	return hits;
}

Test(soft_fault, draws_follow_the_seed_at_the_rate_asked)
{
	static bool a[10000], b[10000], c[10000];
	struct rrr__soft_fault_stats t0, t1, ds;
	unsigned ha, hb, hc;

	rrr__soft_fault_totals(&t0);
	ha = draws(42, 100000, a, 10000); /* 10 % */
	hb = draws(42, 100000, b, 10000);
	hc = draws(43, 100000, c, 10000);
	rrr__soft_fault_totals(&t1);
	cr_assert_eq(ha, hb);
	cr_assert(!memcmp(a, b, sizeof(a)), "the same seed draws the same points");
	cr_assert(memcmp(a, c, sizeof(a)), "another seed draws other points");
	cr_assert(ha > 850 && ha < 1150, "10 %% of 10000 points, got %u", ha);
	cr_assert(hc > 850 && hc < 1150, "10 %% of 10000 points, got %u", hc);
	cr_assert_eq(t1.points - t0.points, 30000);
	cr_assert_eq(t1.drops - t0.drops, ha + hb + hc);
	/* the device counts its own (g_dev is the last run's) */
	g_dev.base.ops = &rrr__soft_ops;
	cr_assert_eq(rrr__soft_fault_dev_stats(&g_dev.base, &ds), 0);
	cr_assert_eq(ds.drops, hc);

	/* off: the point is one branch, nothing drawn or counted */
	rrr__soft_fault_totals(&t0);
	fake_qp(42, 1000000);
	g_dev.fault_on = false;
	for (int i = 0; i < 1000; i++)
		cr_assert(!soft_fault_point(&g_qp));
	rrr__soft_fault_totals(&t1);
	cr_assert_eq(t1.points, t0.points);
	cr_assert_eq(t1.drops, t0.drops);

	/* every point drops at 1000000 ppm */
	cr_assert_eq(draws(5, 1000000, a, 100), 100);
}

/* ----------------------------------------------------------- drop */
static int drop_server(struct th_ep *e, void *arg)
{
	static uint8_t buf[4096];
	struct rrr_mr *mr;
	struct rrr_wc wc;
	struct rrr_sge sge = {(uintptr_t)buf, sizeof(buf), 0};
	struct rrr_recv_wr wr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1};
	char go = 'g';

	(void)arg;
	memset(buf, 0xee, sizeof(buf));
	TH_CHECK(rrr_mr_reg(e->pd, buf, sizeof(buf), RRR_ACCESS_LOCAL_WRITE, &mr) == 0);
	sge.lkey = rrr_mr_lkey(mr);
	TH_CHECK(rrr_qp_post_recv(e->qp, &wr, NULL) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	/* the client's first transmit point dropped the connection */
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
	TH_CHECK(wc.wr_id == 7 && wc.status == RRR_WC_WR_FLUSH_ERR);
	TH_CHECK(th_count_not(buf, sizeof(buf), 0xee) == 0); /* nothing placed */
	return th_end(e, mr);
}

static int drop_client(struct th_ep *e, void *arg)
{
	static uint8_t buf[1000];
	struct rrr__soft_fault_stats st;
	struct rrr_mr *mr;
	struct rrr_wc wc;
	struct rrr_sge sge = {(uintptr_t)buf, sizeof(buf), 0};
	struct rrr_send_wr wr = {.wr_id = 1,
				 .opcode = RRR_WR_SEND,
				 .flags = RRR_SEND_SIGNALED,
				 .sg_list = &sge,
				 .num_sge = 1};
	char go;

	(void)arg;
	th_fill(buf, sizeof(buf), 3);
	TH_CHECK(rrr_mr_reg(e->pd, buf, sizeof(buf), 0, &mr) == 0);
	sge.lkey = rrr_mr_lkey(mr);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
	TH_CHECK(wc.wr_id == 1 && wc.status != RRR_WC_SUCCESS);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr__soft_fault_dev_stats(e->dev, &st) == 0);
	TH_CHECK(st.drops == 1 && st.delays == 0 && st.stalls == 0);
	return th_end(e, mr);
}

TH_PAIR_TEST(soft_fault, drop_ends_the_connection_on_both_sides, "fault_drop_ppm=1000000",
	     drop_server, drop_client, NULL)

/* ----------------------------------------------------------- delay, stall */
#define DLEN (1024 * 1024 + 77)

static int slow_server(struct th_ep *e, void *arg)
{
	static uint8_t sink[DLEN], note[64];
	struct rrr_mr *mr, *nmr;
	struct rrr_wc wc;
	struct th_key k;
	struct rrr_sge sge = {(uintptr_t)note, sizeof(note), 0};
	struct rrr_recv_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1};

	(void)arg;
	memset(sink, 0, sizeof(sink));
	TH_CHECK(rrr_mr_reg(e->pd, sink, sizeof(sink),
			    RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &mr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, note, sizeof(note), RRR_ACCESS_LOCAL_WRITE, &nmr) == 0);
	sge.lkey = rrr_mr_lkey(nmr);
	TH_CHECK(rrr_qp_post_recv(e->qp, &wr, NULL) == 0);
	k = (struct th_key){(uintptr_t)sink, sizeof(sink), rrr_mr_rkey(mr), 0};
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	/* the SEND behind the WRITE says the WRITE has been placed */
	TH_CHECK(th_wc(e, &wc, 30000) == 1);
	TH_CHECK(wc.wr_id == 9 && wc.status == RRR_WC_SUCCESS);
	TH_CHECK(th_check(sink, DLEN, 11) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, 30000) == 0);
	TH_CHECK(th_end(e, nmr) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	return 0;
}

static int slow_client(struct th_ep *e, void *arg)
{
	static uint8_t src[DLEN];
	struct rrr__soft_fault_stats st;
	struct rrr_mr *mr;
	struct rrr_wc wc;
	struct th_key k;
	struct rrr_sge sge = {(uintptr_t)src, DLEN, 0};
	struct rrr_send_wr wr[2] = {
	    {.wr_id = 1, .opcode = RRR_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1},
	    {.wr_id = 2, .opcode = RRR_WR_SEND, .flags = RRR_SEND_SIGNALED},
	};
	uint64_t t0;

	(void)arg;
	th_fill(src, DLEN, 11);
	TH_CHECK(rrr_mr_reg(e->pd, src, sizeof(src), 0, &mr) == 0);
	sge.lkey = rrr_mr_lkey(mr);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	wr[0].u.rdma.remote_addr = k.addr;
	wr[0].u.rdma.rkey = k.rkey;
	wr[0].next = &wr[1];
	t0 = now_us();
	TH_CHECK(rrr_qp_post_send(e->qp, wr, NULL) == 0);
	TH_CHECK(th_wc(e, &wc, 30000) == 1);
	TH_CHECK(wc.wr_id == 2 && wc.status == RRR_WC_SUCCESS);
	TH_CHECK(rrr__soft_fault_dev_stats(e->dev, &st) == 0);
	fprintf(stderr, "fault delay/stall: %llu delays, %llu stalls, %llu us\n",
		(unsigned long long)st.delays, (unsigned long long)st.stalls,
		(unsigned long long)(now_us() - t0));
	TH_CHECK(st.drops == 0 && st.delays > 0 && st.stalls > 0);
	/* at least what was slept */
	TH_CHECK(now_us() - t0 >= st.delays * 200 + st.stalls * 20000);
	TH_CHECK(rrr_cm_disconnect(e->id) == 0);
	return th_end(e, mr);
}

/* small FPDUs, one per sendmsg: ~1000 transmit points for the WRITE */
Test(soft_fault, delay_and_stall_keep_every_byte, .timeout = 60)
{
	cr_assert_eq(th_run_pair("mulpdu=1024,tx_batch=1,fault_seed=3,fault_delay_us=200,"
				 "fault_stall_ms=20,fault_stall_ppm=20000",
				 slow_server, slow_client, NULL),
		     0);
}
