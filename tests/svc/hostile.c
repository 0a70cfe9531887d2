/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/hostile.c - a hostile RPC-over-RDMA client built on the raw
 * provider interface (soft, or the provider of tests/test_env.h) sends
 * malformed transport headers; the server must answer RDMA_ERROR (ERR_VERS /
 * ERR_CHUNK) without issuing a single RDMA operation for the bogus segments,
 * drop what cannot be answered, keep the connection usable, and keep
 * serving other clients.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/rpcrdma.h>
#include <rrr/server.h>

#include "../test_env.h"
#include "helpers/raw_clnt.h"
#include "helpers/svc_test.h"

#define NRECV 8
#define BUFSZ 4096

static struct tsvc srv;
static struct traw raw; /* NRECV receive buffers, then one send buffer */

static void post_recv(unsigned i)
{
	traw_post_recv(&raw, i);
}

static void raw_connect(uint16_t port)
{
	const struct traw_opts o = {.provider = tenv_provider(), .provider_opts = tenv_provider_opts(),
				    .port = port, .cq_depth = 64, .send_wr = 16, .recv_wr = NRECV,
				    .rd = 4, .nbufs = NRECV + 1, .bufsz = BUFSZ};
	const struct rrr_rdma_cm_pd pd = {.remote_inv = true, .send_size = BUFSZ, .recv_size = BUFSZ};

	traw_open(&raw, &o);
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(i);
	traw_connect(&raw, &pd);
}

static void setup(void)
{
	struct rrr_svc_opts o;

	tsvc_opts(&o, 1);
	cr_assert_eq(tsvc_start(&srv, &o, 1), 0, "server start: %s", rrr_last_error());
	raw_connect(srv.rdma_port);
}

static void teardown(void)
{
	traw_close(&raw);
	cr_assert_eq(tsvc_stop(&srv), 0);
}

TestSuite(svc_hostile, .init = setup, .fini = teardown, .timeout = 60);

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send @nw words; return the reply length (0: none within @ms) and copy it. */
static long xchg(const uint32_t *w, unsigned nw, uint32_t *rep, unsigned maxw, int ms)
{
	uint8_t *sb = raw.mem + NRECV * BUFSZ;
	struct rrr_sge sge = {(uint64_t)(uintptr_t)sb, nw * 4, rrr_mr_lkey(raw.mr)};
	struct rrr_send_wr wr = {.wr_id = 1000,
				 .opcode = RRR_WR_SEND,
				 .flags = RRR_SEND_SIGNALED,
				 .sg_list = &sge,
				 .num_sge = 1},
			   *bad;
	long got = -1;
	unsigned i;
	bool sent = false;
	int64_t deadline;

	for (i = 0; i < nw; i++) {
		sb[4 * i] = (uint8_t)(w[i] >> 24);
		sb[4 * i + 1] = (uint8_t)(w[i] >> 16);
		sb[4 * i + 2] = (uint8_t)(w[i] >> 8);
		sb[4 * i + 3] = (uint8_t)w[i];
	}
	cr_assert_eq(rrr_qp_post_send(raw.qp, &wr, &bad), 0);
	deadline = now_ms() + ms;
	while (!sent || got < 0) {
		struct rrr_wc wc;
		int n = rrr_cq_wait(raw.cq, &wc, 1, 50);

		if (n == 0) {
			if (now_ms() < deadline)
				continue;
			if (sent)
				return 0;
			cr_assert_fail("send did not complete");
		}
		cr_assert_eq(n, 1);
		cr_assert_eq(wc.status, RRR_WC_SUCCESS, "wc %s", rrr_wc_status_str(wc.status));
		if (wc.opcode == RRR_WC_RECV) {
			const uint8_t *b = raw.mem + wc.wr_id * BUFSZ;

			for (i = 0; i < wc.byte_len / 4 && i < maxw; i++)
				rep[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
					 (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
			got = (long)wc.byte_len;
			post_recv((unsigned)wc.wr_id);
		} else {
			sent = true;
		}
	}
	return got;
}

/* An RDMA_ERROR reply to @xid with @err. */
static void expect_error(const uint32_t *w, unsigned nw, uint32_t err)
{
	uint32_t rep[16];
	long n = xchg(w, nw, rep, 16, 3000);

	cr_assert_geq(n, 20, "an RDMA_ERROR reply (got %ld bytes)", n);
	cr_assert_eq(rep[0], w[0], "xid echoed");
	cr_assert_eq(rep[1], 1);
	cr_assert_eq(rep[3], RRR_RDMA_ERROR);
	cr_assert_eq(rep[4], err);
	if (err == RRR_ERR_VERS) {
		cr_assert_eq(n, 28);
		cr_assert_eq(rep[5], 1);
		cr_assert_eq(rep[6], 1);
	}
}

/* A valid inline NULL call still works on this connection. */
static void expect_alive(uint32_t xid)
{
	uint32_t w[] = {xid, 1,	    32, RRR_RDMA_MSG, 0, 0, 0, xid, RRR_RPC_CALL,
			2,   TPROG, 1,	TP_NULL,      0, 0, 0, 0};
	uint32_t rep[32];
	long n = xchg(w, sizeof(w) / 4, rep, 32, 3000);

	cr_assert_eq(n, 7 * 4 + 6 * 4, "inline reply (got %ld bytes)", n);
	cr_assert_eq(rep[0], xid);
	cr_assert_eq(rep[3], RRR_RDMA_MSG);
	cr_assert_eq(rep[2], 32, "credits granted");
	cr_assert_eq(rep[7], xid);
	cr_assert_eq(rep[8], RRR_RPC_REPLY);
	cr_assert_eq(rep[12], RRR_RPC_SUCCESS);
}

Test(svc_hostile, bad_version)
{
	uint32_t w[] = {0x111, 2, 32, RRR_RDMA_MSG, 0, 0, 0};

	expect_error(w, 7, RRR_ERR_VERS);
	expect_alive(0x112);
}

Test(svc_hostile, garbage_headers)
{
	uint32_t disc[] = {0x201, 1, 32, RRR_RDMA_MSG, 7, 0, 0};
	uint32_t trunc[] = {0x202, 1, 32, RRR_RDMA_MSG, 1, 4};
	uint32_t msgp[] = {0x203, 1, 32, RRR_RDMA_MSGP, 0, 0, 0, 0, 0};
	uint32_t nomsg[] = {0x204, 1, 32, RRR_RDMA_NOMSG, 0, 0, 0};
	uint32_t short8[] = {0x205, 1};

	expect_error(disc, 7, RRR_ERR_CHUNK);
	expect_error(trunc, 6, RRR_ERR_CHUNK);
	expect_error(msgp, 9, RRR_ERR_CHUNK);
	expect_error(nomsg, 7, RRR_ERR_CHUNK);
	/* too short to be a header: dropped, no reply */
	{
		uint32_t rep[8];

		cr_assert_eq(xchg(short8, 2, rep, 8, 300), 0);
	}
	expect_alive(0x206);
}

Test(svc_hostile, oversized_counts_rejected_before_rdma)
{
	struct rrr_xprt_stats st;
	uint32_t w[1024];
	unsigned n = 0, i;

	/* a write chunk claiming 1000 segments */
	w[n++] = 0x301;
	w[n++] = 1;
	w[n++] = 32;
	w[n++] = RRR_RDMA_MSG;
	w[n++] = 0;    /* no read list */
	w[n++] = 1;    /* write list: one chunk */
	w[n++] = 1000; /* nsegs */
	for (i = 0; i < 40; i++) {
		w[n++] = 0xdead00 + i;
		w[n++] = 4096;
		w[n++] = 0;
		w[n++] = 0x1000;
	}
	expect_error(w, n, RRR_ERR_CHUNK);

	/* 65 read segments, over the limit of 64 */
	n = 0;
	w[n++] = 0x302;
	w[n++] = 1;
	w[n++] = 32;
	w[n++] = RRR_RDMA_MSG;
	for (i = 0; i < 65; i++) {
		w[n++] = 1;
		w[n++] = 4 * (i + 1);
		w[n++] = 0xbeef00;
		w[n++] = 4;
		w[n++] = 0;
		w[n++] = 0x2000;
	}
	w[n++] = 0;
	w[n++] = 0;
	w[n++] = 0;
	expect_error(w, n, RRR_ERR_CHUNK);

	/* a read chunk far bigger than the record bound (2 x 2 GiB - 1) */
	{
		uint32_t big[] = {0x303,
				  1,
				  32,
				  RRR_RDMA_MSG,
				  1,
				  28,
				  0xbeef01,
				  0x7fffffff,
				  0,
				  0x1000,
				  1,
				  28,
				  0xbeef02,
				  0x7fffffff,
				  0,
				  0x1000,
				  0,
				  0,
				  0,
				  0x303,
				  RRR_RPC_CALL,
				  2,
				  TPROG,
				  1,
				  TP_SUM,
				  0,
				  0,
				  0,
				  0,
				  0x100};

		expect_error(big, sizeof(big) / 4, RRR_ERR_CHUNK);
	}
	/* a read chunk positioned past the inline message */
	{
		uint32_t past[] = {
		    0x304, 1, 32,    RRR_RDMA_MSG, 1, 4096,  0xbeef03, 16,     0, 0x1000, 0,
		    0,	   0, 0x304, RRR_RPC_CALL, 2, TPROG, 1,	       TP_SUM, 0, 0,	  0,
		    0,	   16};

		expect_error(past, sizeof(past) / 4, RRR_ERR_CHUNK);
	}
	/* RDMA_MSG with a position-zero read chunk */
	{
		uint32_t pz[] = {
		    0x305, 1, 32,    RRR_RDMA_MSG, 1, 0,     0xbeef04, 64,	0, 0x1000, 0,
		    0,	   0, 0x305, RRR_RPC_CALL, 2, TPROG, 1,	       TP_NULL, 0, 0,	   0,
		    0};

		expect_error(pz, sizeof(pz) / 4, RRR_ERR_CHUNK);
	}
	expect_alive(0x306);
	rrr_svc_stats(srv.svc, &st);
	cr_assert_eq(st.rdma_read_bytes, 0, "no RDMA READ for a rejected header");
	cr_assert_eq(st.rdma_write_bytes, 0, "no RDMA WRITE for a rejected header");
	cr_assert_eq(st.registrations, 0, "nothing registered for a rejected header");
	cr_assert_geq(st.rdma_errors_sent, 5);
}

Test(svc_hostile, bad_rpc_inside_good_header)
{
	/* RDMA header fine, RPC message garbage: rpcvers 9 -> RPC_MISMATCH */
	uint32_t w[] = {0x401, 1,     32, RRR_RDMA_MSG, 0, 0, 0, 0x401, RRR_RPC_CALL,
			9,     TPROG, 1,  TP_NULL,	0, 0, 0, 0};
	uint32_t rep[32];
	long n = xchg(w, sizeof(w) / 4, rep, 32, 3000);

	cr_assert_eq(n, 7 * 4 + 6 * 4);
	cr_assert_eq(rep[3], RRR_RDMA_MSG);
	cr_assert_eq(rep[9], RRR_RPC_MSG_DENIED);
	cr_assert_eq(rep[10], RRR_RPC_MISMATCH);
	expect_alive(0x402);
}
