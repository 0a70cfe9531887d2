/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/quota.c - a client cannot make the server hold more request
 * contexts (each with up to max_payload + 64 KiB of registered buffers)
 * than its credits and a small slack (SVC_RDMA_CTX_SLACK). A raw
 * RPC-over-RDMA client (provider interface, no progress while it is not
 * polled, so it answers no RDMA READ) sends calls with read chunks in two
 * bursts of a full grant: the server takes a context for each call it can
 * and pulls its chunk; with every context busy, the rest wait holding
 * their receive buffers. Before the bound a client reached 2 x credits.
 * Then the client lets the READs through and every call is answered.
 *
 * The same client shows the pull window: with max_payload 8 KiB the server
 * pulls at most 16 KiB of read chunks at once (four 4 KiB calls); the other
 * calls wait, counted in pull_waits, and start as READs complete.
 *
 * And the push window: a client that asks for 1 MiB write-chunk replies
 * and reads none of them (its socket fills) makes the server hold at most
 * 2 x max_payload + one reply of them, not one per credit; the other calls
 * wait, counted in push_waits, and are answered once the client reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/rpcrdma.h>
#include <rrr/server.h>

#include "../test_env.h"
#include "../test_wait.h"
#include "helpers/raw_clnt.h"
#include "helpers/svc_test.h"
#include "server/svc_rdma_impl.h"
#include "transport/soft/soft.h"

#define CREDITS 8u
#define NCALLS	(2u * CREDITS)
#define NRECV	16u
#define BUFSZ	4096u
#define CHUNK	4096u

static struct tsvc srv;
static struct traw c; /* NRECV receive buffers, then NCALLS send buffers */
static uint8_t *src;  /* NCALLS chunks the server reads */
static struct rrr_mr *src_mr;

static void post_recv(unsigned i)
{
	traw_post_recv(&c, i);
}

static uint32_t setup_max_payload; /* 0: the default */

static void setup(void)
{
	struct rrr_svc_opts o;
	struct rrr_rdma_cm_pd pd = {.remote_inv = false, .send_size = BUFSZ, .recv_size = BUFSZ};
	void *p;

	if (!tenv_is_soft())
		cr_skip_test("needs a client that answers no RDMA READ until it polls (soft)");
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	o.max_requests = CREDITS;
	if (setup_max_payload)
		o.max_payload = setup_max_payload;
	o.provider = tenv_provider();
	o.provider_opts = tenv_provider_opts();
	cr_assert_eq(tsvc_start(&srv, &o, 1), 0, "server start: %s", rrr_last_error());

	const struct traw_opts to = {.provider = "soft", .provider_opts = "progress_thread=0",
				     .port = srv.rdma_port, .cq_depth = 256, .send_wr = 64,
				     .recv_wr = NRECV, .rd = 16, .nbufs = NRECV + NCALLS, .bufsz = BUFSZ};
	traw_open(&c, &to);
	cr_assert_eq(posix_memalign(&p, 4096, NCALLS * CHUNK), 0);
	src = p;
	for (unsigned i = 0; i < NCALLS * CHUNK; i++)
		src[i] = (uint8_t)(i * 7);
	cr_assert_eq(rrr_mr_reg(c.pd, src, NCALLS * CHUNK,
				RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_READ, &src_mr),
		     0);
	for (unsigned i = 0; i < NRECV; i++)
		post_recv(i);
	traw_connect(&c, &pd);
}

static void teardown(void)
{
	if (src_mr)
		rrr_mr_dereg(src_mr);
	src_mr = NULL;
	traw_close(&c);
	free(src);
	src = NULL;
	if (srv.svc)
		cr_assert_eq(tsvc_stop(&srv), 0);
}

TestSuite(svc_quota, .init = setup, .fini = teardown, .timeout = 60);

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Send call @i: its @nw words, big-endian, from its own send buffer. */
static void post_call(unsigned i, const uint32_t *w, size_t nw)
{
	uint8_t *sb = c.mem + (NRECV + i) * BUFSZ;
	struct rrr_sge sge = {(uint64_t)(uintptr_t)sb, (uint32_t)(nw * 4), rrr_mr_lkey(c.mr)};
	struct rrr_send_wr wr = {.wr_id = 1000 + i,
				 .opcode = RRR_WR_SEND,
				 .sg_list = &sge,
				 .num_sge = 1},
			   *bad;

	for (size_t k = 0; k < nw; k++)
		put32(sb + 4 * k, w[k]);
	cr_assert_eq(rrr_qp_post_send(c.qp, &wr, &bad), 0);
}

/* Poll (the client makes progress only while it does) until a reply
 * arrives; returns its receive buffer's index. Fails the test once 10 s
 * have passed since @t0 with @answered of @n replies in. */
static unsigned next_reply(const struct timespec *t0, unsigned answered, unsigned n)
{
	for (;;) {
		struct rrr_wc wc;
		struct timespec t1;
		int got = rrr_cq_wait(c.cq, &wc, 1, 100);

		clock_gettime(CLOCK_MONOTONIC, &t1);
		cr_assert_lt(t1.tv_sec - t0->tv_sec, 10, "%u of %u answered", answered, n);
		if (got <= 0)
			continue;
		cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
		if (wc.opcode == RRR_WC_RECV)
			return (unsigned)wc.wr_id;
	}
}

/* Call @i: RDMA_MSG, procedure @proc (TP_SUM or TP_SLOWSUM), its @len-byte
 * payload (from src + i * CHUNK) in a read chunk. */
static void send_call_proc(unsigned i, uint32_t len, uint32_t proc)
{
	uint64_t off = (uint64_t)(uintptr_t)(src + i * CHUNK);
	uint32_t xid = 0x7a000000u + i;
	uint32_t w[] = {xid,
			1,
			CREDITS,
			RRR_RDMA_MSG,
			1,
			44,
			rrr_mr_rkey(src_mr),
			len,
			(uint32_t)(off >> 32),
			(uint32_t)off,
			0,
			0,
			0, /* end of read list, no write list, no reply chunk */
			xid,
			RRR_RPC_CALL,
			2,
			TPROG,
			TPROG_V1,
			proc,
			0,
			0,
			0,
			0,
			len};
	post_call(i, w, sizeof(w) / 4);
}

static void send_call_len(unsigned i, uint32_t len)
{
	send_call_proc(i, len, TP_SUM);
}

static void send_call(unsigned i)
{
	send_call_len(i, CHUNK);
}

/* Let the client answer the server's READs (it only makes progress while it
 * polls) until @n replies came back, each checked: RDMA_MSG, RPC success,
 * and the TP_SUM result of call i's chunk of len_of(i) bytes. Fails the test
 * after 10 s. */
static void answer_calls(unsigned n, uint32_t (*len_of)(uint32_t i))
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned answered = 0; answered < n; answered++) {
		unsigned r = next_reply(&t0, answered, n);
		const uint8_t *b = c.mem + r * BUFSZ;
		uint32_t i = get32(b) - 0x7a000000u, len;

		cr_assert_lt(i, NCALLS, "xid of a call we did not send");
		len = len_of(i);
		cr_assert_eq(get32(b + 12), RRR_RDMA_MSG);
		cr_assert_eq(get32(b + 7 * 4 + 5 * 4), RRR_RPC_SUCCESS, "call %u", i);
		cr_assert_eq(get32(b + 13 * 4), len, "call %u: the server read its chunk", i);
		cr_assert_eq(get32(b + 14 * 4), tfnv(src + i * CHUNK, len));
		post_recv(r);
	}
}

static uint32_t chunk_len(uint32_t i)
{
	(void)i;
	return CHUNK;
}

Test(svc_quota, contexts_bounded_by_credits_plus_slack)
{
	struct rrr_xprt_stats st;

	/* the first burst: a full grant, every call waits for its READ */
	for (unsigned i = 0; i < CREDITS; i++)
		send_call(i);
	/* each of them took a context (none is released: no READ is answered) */
	cr_assert(TEST_WAIT_UNTIL(rrr__svc_rdma_ctx_peak() >= CREDITS, 10000),
		  "the server took the first burst (%u contexts)", rrr__svc_rdma_ctx_peak());
	/* a second burst before any reply: a client ignoring its credits */
	for (unsigned i = CREDITS; i < NCALLS; i++)
		send_call(i);
	/* until the server has handled them all: each holds a context or waits */
	cr_assert(TEST_WAIT_UNTIL((rrr_svc_stats(srv.svc, &st),
				   rrr__svc_rdma_ctx_peak() + st.credit_stalls + st.push_waits >=
					   NCALLS),
				  10000),
		  "the server handled every call (%u contexts, %llu waited)",
		  rrr__svc_rdma_ctx_peak(), (unsigned long long)st.credit_stalls);
	cr_assert_geq(st.recv_bytes, NCALLS * 24u * 4u, "the server received every call");
	cr_log_info("contexts busy at most: %u (credits %u + slack %u)", rrr__svc_rdma_ctx_peak(),
		    CREDITS, SVC_RDMA_CTX_SLACK);
	cr_assert_leq(rrr__svc_rdma_ctx_peak(), CREDITS + SVC_RDMA_CTX_SLACK,
		      "the server held %u contexts for a grant of %u", rrr__svc_rdma_ctx_peak(),
		      CREDITS);

	/* now answer the READs: every call completes, the waiting ones too */
	answer_calls(NCALLS, chunk_len);
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.credit_stalls, NCALLS - CREDITS - SVC_RDMA_CTX_SLACK,
		      "the calls over the bound waited for a context");
	cr_assert_eq(st.disconnects, 0,
		     "a client over its grant but within its receives is served");
	cr_assert_leq(rrr__svc_rdma_ctx_peak(), CREDITS + SVC_RDMA_CTX_SLACK,
		      "over the whole run, the server held %u contexts", rrr__svc_rdma_ctx_peak());
}

static void setup_small(void)
{
	setup_max_payload = 8192; /* pull window: 2 x 8 KiB */
	setup();
}

static void teardown_small(void)
{
	teardown();
	setup_max_payload = 0;
}

Test(svc_quota, pulls_bounded_by_the_window, .init = setup_small, .fini = teardown_small)
{
	struct rrr_xprt_stats st;

	/* a full grant of 4 KiB read chunks; nothing answered yet */
	for (unsigned i = 0; i < CREDITS; i++)
		send_call(i);
	/* until every call holds its context and, past the window, waits */
	cr_assert(TEST_WAIT_UNTIL((rrr_svc_stats(srv.svc, &st),
				   rrr__svc_rdma_ctx_peak() >= CREDITS &&
					   st.pull_waits >= CREDITS - 2u * 8192u / CHUNK),
				  10000),
		  "the server handled every call (%u contexts, %llu waited)",
		  rrr__svc_rdma_ctx_peak(), (unsigned long long)st.pull_waits);
	cr_assert_geq(st.recv_bytes, CREDITS * 24u * 4u, "the server received every call");
	cr_log_info("pull window 16 KiB, %u calls of %u bytes: %llu waited", CREDITS, CHUNK,
		    (unsigned long long)st.pull_waits);
	cr_assert_eq(st.pull_waits, CREDITS - 2u * 8192u / CHUNK,
		     "calls beyond the window wait for it (%llu waited)",
		     (unsigned long long)st.pull_waits);

	/* answer the READs: the waiting calls start as earlier pulls end */
	answer_calls(CREDITS, chunk_len);
	rrr_svc_stats(srv.svc, &st);
	cr_assert_eq(st.disconnects, 0);
	cr_assert_eq(st.rdma_read_bytes, (uint64_t)CREDITS * CHUNK, "every chunk pulled once");
	cr_assert_eq(st.pull_waits, CREDITS - 2u * 8192u / CHUNK, "no call waited twice");
}

/* A chunk larger than the whole window (20 KiB against 16 KiB) goes alone,
 * and the calls behind it follow. */
static uint32_t big_first_len(uint32_t i)
{
	cr_assert(i == 0 || i == 6 || i == 7, "call %u was not sent", i);
	return i == 0 ? 5 * CHUNK : CHUNK;
}

Test(svc_quota, a_chunk_larger_than_the_window_goes_alone, .init = setup_small,
     .fini = teardown_small)
{
	struct rrr_xprt_stats st;

	send_call_len(0, big_first_len(0)); /* 20 KiB against a 16 KiB window */
	send_call(6); /* 4 KiB each, from beyond the big chunk's bytes */
	send_call(7);
	answer_calls(3, big_first_len);
	rrr_svc_stats(srv.svc, &st);
	cr_assert_eq(st.disconnects, 0);
	cr_assert_eq(st.rdma_read_bytes, (uint64_t)big_first_len(0) + 2 * CHUNK);
}

/* Read Requests that a poll batch queued go out before a handler runs. Call
 * 0 fills the 16 KiB window and its handler takes TP_SLOW_MS; call 4 waits
 * for the window. When call 0's READ completes, call 4's READ is queued
 * and call 0's handler starts: the client must get call 4's Read Request
 * while that handler sleeps, before call 0's reply (held until the end of
 * the poll batch, it would leave in the same write as that reply and the
 * client would idle through every WRITE's pwrite). No timing is assumed: the
 * client polls until it has seen both Read Requests, and no reply may come
 * first. */
static uint32_t slow_first_len(uint32_t i)
{
	cr_assert(i == 0 || i == 4, "call %u was not sent", i);
	return i == 0 ? 4 * CHUNK : CHUNK;
}

Test(svc_quota, read_requests_go_out_before_a_slow_handler, .init = setup_small,
     .fini = teardown_small, .timeout = 30)
{
	struct soft_qp *qp = soft_qp(c.qp);
	struct timespec t0, t1;
	uint64_t reqs = 0;

	send_call_proc(0, slow_first_len(0), TP_SLOWSUM);
	send_call(4);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (reqs < 2) {
		struct rrr_wc wc;
		int got = rrr_cq_wait(c.cq, &wc, 1, 10);

		cr_assert_geq(got, 0);
		pthread_mutex_lock(&qp->lock);
		reqs = qp->rx_read_reqs;
		pthread_mutex_unlock(&qp->lock);
		cr_assert(got == 0 || wc.opcode != RRR_WC_RECV,
			  "call 0's reply came with %llu of 2 Read Requests: call 4's waited for "
			  "call 0's handler", (unsigned long long)reqs);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "%llu of 2 Read Requests",
			     (unsigned long long)reqs);
	}
	cr_log_info("both Read Requests after %ld ms, call 0's handler still running",
		    (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	answer_calls(2, slow_first_len);
}

/* Call @i: RDMA_MSG, TP_FILL of @len bytes of (0x40 + @i), the result's
 * payload into a write chunk of one segment at @sink + @i * @len. */
static void send_fill_call(unsigned i, uint32_t len, uint8_t *sink, struct rrr_mr *sink_mr)
{
	uint64_t off = (uint64_t)(uintptr_t)(sink + (size_t)i * len);
	uint32_t xid = 0x7b000000u + i;
	uint32_t w[] = {xid, 1, CREDITS, RRR_RDMA_MSG,
			0, /* no read list */
			1, 1, rrr_mr_rkey(sink_mr), len, (uint32_t)(off >> 32), (uint32_t)off,
			0, /* end of the write list */
			0, /* no reply chunk */
			xid, RRR_RPC_CALL, 2, TPROG, TPROG_V1, TP_FILL, 0, 0, 0, 0, len, 0x40u + i};

	post_call(i, w, sizeof(w) / 4);
}

Test(svc_quota, replies_in_flight_bounded_by_the_push_window, .timeout = 60)
{
	const uint32_t len = 1u << 20; /* the default max_payload: window 2 MiB */
	struct rrr_xprt_stats st;
	struct rrr_mr *sink_mr;
	uint8_t *sink;
	struct timespec t0;

	cr_assert_eq(posix_memalign((void **)&sink, 4096, (size_t)CREDITS * len), 0);
	memset(sink, 0, (size_t)CREDITS * len);
	cr_assert_eq(rrr_mr_reg(c.pd, sink, (size_t)CREDITS * len,
				RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &sink_mr),
		     0);
	/* a full grant of 1 MiB READ-like calls, and no polling: the client
	 * reads nothing, so the server's socket fills after a few hundred KB */
	for (unsigned i = 0; i < CREDITS; i++)
		send_fill_call(i, len, sink, sink_mr);
	/* until the calls beyond the window wait for it */
	cr_assert(TEST_WAIT_UNTIL((rrr_svc_stats(srv.svc, &st), st.push_waits > 0), 10000),
		  "calls beyond the window wait for it (%llu bytes received)",
		  (unsigned long long)st.recv_bytes);
	cr_log_info("push window 2 MiB, %u calls of 1 MiB: %llu waited, at most %llu bytes in "
		    "flight", CREDITS, (unsigned long long)st.push_waits,
		    (unsigned long long)rrr__svc_rdma_push_peak());
	cr_assert_gt(st.push_waits, 0, "calls beyond the window wait for it");
	cr_assert_leq(rrr__svc_rdma_push_peak(), (uint64_t)SVC_RDMA_PUSH_RECORDS * len + len,
		      "the server held %llu bytes of replies for a window of %u",
		      (unsigned long long)rrr__svc_rdma_push_peak(), SVC_RDMA_PUSH_RECORDS * len);

	/* now read: every call is answered, the waiting ones too */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned answered = 0; answered < CREDITS; answered++) {
		unsigned r = next_reply(&t0, answered, CREDITS);
		const uint8_t *b = c.mem + r * BUFSZ;
		uint32_t i = get32(b) - 0x7b000000u;

		cr_assert_lt(i, CREDITS, "xid of a call we did not send");
		cr_assert_eq(get32(b + 12), RRR_RDMA_MSG);
		cr_assert_eq(get32(b + 5 * 4), 1, "call %u: a write list", i);
		cr_assert_eq(get32(b + 8 * 4), len, "call %u: the whole payload written", i);
		for (size_t k = 0; k < len; k += 4093)
			cr_assert_eq(sink[(size_t)i * len + k], 0x40u + i, "call %u byte %zu", i, k);
		cr_assert_eq(sink[(size_t)i * len + len - 1], 0x40u + i);
		post_recv(r);
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_eq(st.disconnects, 0);
	cr_assert_leq(rrr__svc_rdma_push_peak(), (uint64_t)SVC_RDMA_PUSH_RECORDS * len + len,
		      "over the whole run, the server held %llu bytes of replies",
		      (unsigned long long)rrr__svc_rdma_push_peak());
	cr_assert_eq(st.rdma_write_bytes, (uint64_t)CREDITS * len, "every reply written once");
	rrr_mr_dereg(sink_mr);
	free(sink);
}
