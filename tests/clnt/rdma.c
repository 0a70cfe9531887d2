/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/rdma.c - the RPC-over-RDMA client end to end on the
 * soft provider (real loopback TCP underneath; or the provider named by
 * RRR_TEST_PROVIDER, see tests/test_env.h) against a raw test server
 * (helpers/rdma_srv.c) that counts what the client really sent and can
 * misbehave: every chunk type with data verified, RFC 8797 negotiation,
 * credits never exceeded (server-side count), RDMA_ERROR and garbage,
 * disconnect mid-call, timeout and cancel with MRs invalidated, a server
 * that reuses a handle after the call completed (places nothing), and a
 * server that remote-invalidates a foreign handle (disconnected).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/rpcrdma.h>

#include "../test_env.h"
#include "../test_wait.h"
#include "helpers/calls.h"
#include "helpers/checks.h"
#include "helpers/rdma_srv.h"

static struct rsrv *srv;
static struct rrr_clnt *clnt;
static char portstr[16];

static void start(const struct rsrv_opts *so, void (*tweak)(struct rrr_clnt_opts *))
{
	struct rrr_clnt_opts o;
	uint16_t port;
	int rc;

	rc = rsrv_start(so, &srv, &port);
	if (rc == -ENODEV || rc == -ENOENT || rc == -EOPNOTSUPP)
		cr_skip_test("provider %s not available (%d): cannot run RDMA tests",
			     tenv_provider(), rc);
	cr_assert_eq(rc, 0, "server: %s", rrr_last_error());
	snprintf(portstr, sizeof(portstr), "%u", port);
	rrr_clnt_opts_init(&o);
	o.provider = tenv_provider();
	o.provider_opts = tenv_provider_opts();
	o.host = tenv_addr();
	o.port = portstr;
	o.timeout_ms = 10000;
	if (tweak)
		tweak(&o);
	rc = rrr_clnt_create(&o, &clnt);
	cr_assert_eq(rc, 0, "client: %d %s", rc, rrr_last_error());
}

static void fini(void)
{
	rrr_clnt_destroy(clnt);
	clnt = NULL;
	rsrv_stop(srv);
	srv = NULL;
}

static void init_default(void)
{
	start(NULL, NULL);
}

/* The tests of what a connection loss does to the calls on it use the
 * fail_fast client (a default client would re-send them). */
static void tweak_fail_fast(struct rrr_clnt_opts *o)
{
	o->fail_fast = true;
}

static void init_fail_fast(void)
{
	start(NULL, tweak_fail_fast);
}

static void init_call(struct rrr_call *c, uint32_t proc)
{
	tc_call_init(c, RSRV_PROG, proc);
}

/* The test server's procedures, on the client of this test. */
static const struct tc_target *tgt(void)
{
	static struct tc_target t = {NULL, RSRV_PROG, RS_ECHO, RS_SUM, RS_FILL, RS_BIG};

	t.clnt = clnt;
	return &t;
}

/* FILL of @n bytes into @dst (@cap bytes, two pieces), verified. */
static int fill_into(uint8_t *dst, uint32_t n, uint32_t cap)
{
	return tc_fill(tgt(), dst, n, cap, 2);
}

TestSuite(rdma, .init = init_default, .fini = fini, .timeout = 60);

Test(rdma, negotiation_and_null)
{
	struct rrr_device_attr attr;
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;
	struct rrr_call c;

	cr_assert_eq(tenv_attr(&attr), 0);
	init_call(&c, RS_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.inline_send, 4096);
	cr_assert_eq(st.inline_recv, 4096); /* the test server offers 4096 */
	cr_assert_eq(st.inline_calls, 1);
	cr_assert_eq(st.replies, 1);
	cr_assert_eq(st.credits, 8, "follows the grant");
	cr_assert_eq(ss.client_inline_send, RRR_RDMA_INLINE_PREF);
	cr_assert_eq(ss.client_inline_recv, RRR_RDMA_INLINE_PREF);
	cr_assert_eq(ss.client_remote_inv, attr.send_with_inv,
		     "Send With Invalidate offered exactly when the device (%s) honours it",
		     attr.strategy);
	cr_assert_gt(rrr_clnt_max_payload(clnt), 65536);
}

Test(rdma, inline_echo)
{
	uint8_t src[1001];
	struct rrr_xprt_stats st;

	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 3);
	tc_check_echo(tgt(), src, sizeof(src), true);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.inline_calls, 1);
	cr_assert_eq(st.read_chunks, 0);
	cr_assert_eq(st.registrations, 0, "inline calls register nothing");
}

Test(rdma, read_chunk_odd_length)
{
	uint32_t n = 100001;
	uint8_t *src = malloc(n);
	struct iovec s[2] = {{src, 50000}, {src + 50000, n - 50000}};
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;

	for (uint32_t i = 0; i < n; i++)
		src[i] = (uint8_t)(i * 11 + 5);
	tc_check_sum(tgt(), s, 2, 0xfeed);
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.read_chunks, 1);
	cr_assert_eq(ss.read_chunk_calls, 1);
	cr_assert_geq(st.registrations, 1);
	cr_assert_geq(st.local_inv + st.remote_inv, 1, "source invalidated");
	free(src);
}

Test(rdma, write_chunk)
{
	uint32_t n = 300001, cap = 400000;
	uint8_t *dst = malloc(cap);
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;

	memset(dst, 0xee, cap);
	cr_assert_eq(fill_into(dst, n, cap), 0);
	cr_assert_eq(dst[n], 0xee);
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.write_chunks, 1);
	cr_assert_eq(ss.write_chunk_calls, 1);
	cr_assert_geq(st.local_inv + st.remote_inv, 1);
	free(dst);
}

Test(rdma, reply_chunk)
{
	struct rrr_xprt_stats st;

	tc_check_big(tgt(), 50001);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.reply_chunks, 1);
}

Test(rdma, nomsg_call_and_reply)
{
	uint32_t n = 20003;
	uint8_t *src = malloc(n);
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;

	for (uint32_t i = 0; i < n; i++)
		src[i] = (uint8_t)(i ^ (i >> 8));
	tc_check_echo(tgt(), src, n, false);
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.nomsg_calls, 1);
	cr_assert_eq(ss.nomsg_calls, 1);
	cr_assert_eq(st.reply_chunks, 1);
	free(src);
}

#define NT  4
#define PER 16

struct ccall {
	struct rrr_call c;
	uint32_t n;
	uint8_t buf[9000];
	struct iovec iov;
	struct tc_pay p;
	struct tc_got g;
	uint32_t sum;
	struct tc_tally *tally;
};

static void c_done(struct rrr_call *call, int status, void *arg)
{
	struct ccall *k = arg;
	bool good = status == 0;

	if (good && call->proc == RS_FILL) {
		for (uint32_t i = 0; i < k->n; i++)
			good = good && k->buf[i] == (uint8_t)(i * 7 + 3);
	} else if (good) {
		good = k->g.w[0] == k->n && k->g.w[1] == k->sum && k->g.w[2] == 77;
	}
	if (!good)
		fprintf(stderr, "call proc %u n %u status %d\n", call->proc, k->n, status);
	tc_tally_add(k->tally, good);
}

static void *c_thread(void *arg)
{
	struct ccall *k = arg;

	for (int i = 0; i < PER; i++, k++) {
		k->n = 5000 + (uint32_t)i * 97;
		if (i & 1) {
			init_call(&k->c, RS_FILL);
			k->iov = (struct iovec){k->buf, sizeof(k->buf)};
			tc_codec(&k->c, tc_enc_u32, &k->n, tc_dec_pay, &k->g);
			k->c.ddp = RRR_DDP_FROM_SERVER;
		} else {
			k->sum = 0;
			for (uint32_t j = 0; j < k->n; j++) {
				k->buf[j] = (uint8_t)(j + (uintptr_t)k);
				k->sum += k->buf[j];
			}
			k->iov = (struct iovec){k->buf, k->n};
			k->p = (struct tc_pay){&k->iov, 1, k->n, 77};
			init_call(&k->c, RS_SUM);
			tc_codec(&k->c, tc_enc_pay_tag, &k->p, tc_dec_3u32, &k->g);
			k->c.ddp = RRR_DDP_TO_SERVER;
		}
		k->c.payload = &k->iov;
		k->c.npayload = 1;
		if (rrr_clnt_call_async(clnt, &k->c, c_done, k))
			return (void *)1;
	}
	return NULL;
}

/* What the client (c) and the test server (s) counted. */
struct both_stats {
	struct rrr_xprt_stats c;
	struct rsrv_stats s;
};

/* NT threads of PER calls each (half read chunks, half write chunks), all
 * verified; then what both sides counted. */
static struct both_stats run_concurrent(void)
{
	struct both_stats b;
	static struct ccall calls[NT * PER];
	static struct tc_tally tally;

	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < NT * PER; i++)
		calls[i].tally = &tally;
	tc_run_tallied(&tally, NT, c_thread, calls, PER * sizeof(calls[0]), NT * PER);
	rrr_clnt_stats(clnt, &b.c);
	rsrv_stats(srv, &b.s);
	return b;
}

Test(rdma, concurrent_64)
{
	struct both_stats b = run_concurrent();

	cr_assert_eq(b.c.replies, NT * PER);
	cr_assert_eq(b.c.read_chunks, NT * PER / 2);
	cr_assert_eq(b.c.write_chunks, NT * PER / 2);
}

/* A server that grants @credits, batching replies for @batch_ms. */
static void start_credits(uint32_t credits, int batch_ms)
{
	struct rsrv_opts o = {.credits = credits, .credits_set = true, .batch_ms = batch_ms};

	start(&o, NULL);
}

static void init_credits4(void)
{
	start_credits(4, 15);
}

static void init_credits0(void)
{
	start_credits(0, 5);
}

Test(rdma_credits, never_exceeded, .init = init_credits4, .fini = fini, .timeout = 60)
{
	struct both_stats b = run_concurrent();

	cr_assert_leq(b.s.max_outstanding, 4, "server saw %u calls at once", b.s.max_outstanding);
	cr_assert_geq(b.s.max_outstanding, 2, "the grant was used");
	cr_assert_gt(b.c.credit_stalls, 0);
	cr_assert_eq(b.c.credits, 4);
}

Test(rdma_credits, zero_grant_is_one, .init = init_credits0, .fini = fini, .timeout = 60)
{
	struct both_stats b = run_concurrent();

	cr_assert_eq(b.s.max_outstanding, 1);
	cr_assert_eq(b.c.credits, 1);
}

static void init_nopd(void)
{
	struct rsrv_opts o = {.no_pdata = true};

	start(&o, NULL);
}

Test(rdma_nopd, defaults_1024, .init = init_nopd, .fini = fini, .timeout = 30)
{
	struct rrr_xprt_stats st;
	uint8_t *dst = malloc(70000);

	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.inline_send, 1024);
	cr_assert_eq(st.inline_recv, 1024);
	cr_assert_eq(fill_into(dst, 65536, 70000), 0);
	free(dst);
}

Test(rdma, rdma_error_and_garbage)
{
	struct rrr_xprt_stats st;
	struct rrr_call c;

	init_call(&c, RS_ERRCHUNK);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EREMOTEIO);
	init_call(&c, RS_GARBAGE);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EBADMSG);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.bad_replies, 1);
	init_call(&c, RS_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "connection still usable");
}

/* A call of @proc with a registered 8 KiB sink (deadline @timeout_ms, 0:
 * the default) that must end with @want; the client's statistics after. */
static struct rrr_xprt_stats sink_call_fails(uint32_t proc, int timeout_ms, int want)
{
	uint8_t dst[8192];
	struct iovec d = {dst, sizeof(dst)};
	struct rrr_xprt_stats st;
	struct rrr_call c;

	init_call(&c, proc);
	tc_payload(&c, RRR_DDP_FROM_SERVER, &d, 1);
	c.timeout_ms = timeout_ms;
	cr_assert_eq(rrr_clnt_call(clnt, &c), want);
	rrr_clnt_stats(clnt, &st);
	return st;
}

Test(rdma, disconnect_mid_call, .init = init_fail_fast)
{
	uint8_t dst[8192];
	struct rrr_xprt_stats st = sink_call_fails(RS_HANGUP, 0, -ECONNRESET);

	cr_assert_geq(st.disconnects, 1);
	cr_assert_geq(st.recoveries + st.local_inv + st.remote_inv, 1, "the sink was recovered");
	/* reconnects on demand */
	cr_assert_eq(fill_into(dst, 5000, sizeof(dst)), 0);
	rrr_clnt_stats(clnt, &st);
	cr_assert_geq(st.connects, 2);
}

Test(rdma, timeout_invalidates)
{
	/* 1 s covers registering and sending on a loaded machine */
	struct rrr_xprt_stats st = sink_call_fails(RS_SILENT, 1000, -ETIMEDOUT);
	struct rrr_call c;

	cr_assert_eq(st.timeouts, 1);
	cr_assert_geq(st.local_inv, 1);
	/* the silent call still holds the only credit: the client replaces
	 * the connection to get it back, and the next call goes through */
	init_call(&c, RS_NULL);
	c.timeout_ms = 5000;
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.connects, 2);
}

Test(rdma, cancel_invalidates)
{
	uint8_t dst[8192];
	struct iovec d = {dst, sizeof(dst)};
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;
	struct tc_once o = {0};
	struct rrr_call c;

	init_call(&c, RS_SILENT);
	tc_payload(&c, RRR_DDP_FROM_SERVER, &d, 1);
	rsrv_stats(srv, &ss);
	unsigned calls = ss.calls;
	cr_assert_eq(rrr_clnt_call_async(clnt, &c, tc_once_done, &o), 0);
	/* cancel once the server has the call: its sink is registered and on
	 * the wire (a call cancelled while still queued registered nothing) */
	for (int i = 0; i < 500; i++) {
		rsrv_stats(srv, &ss);
		if (ss.calls > calls)
			break;
		usleep(10000);
	}
	cr_assert_gt(ss.calls, calls, "the server received the call");
	cr_assert_eq(rrr_clnt_cancel(clnt, &c), 0);
	cr_assert_eq(atomic_load(&o.runs), 1);
	cr_assert_eq(atomic_load(&o.status), -ECANCELED);
	rrr_clnt_stats(clnt, &st);
	cr_assert_geq(st.local_inv, 1);
}

Test(rdma, stale_handle_places_nothing, .init = init_fail_fast)
{
	uint8_t *dst = malloc(8192);
	struct rsrv_stats ss;
	struct rrr_call c;

	cr_assert_eq(fill_into(dst, 4096, 8192), 0);
	/* the server writes 0xAA to the handle of the completed call */
	init_call(&c, RS_POKE);
	c.timeout_ms = 3000;
	cr_assert_neq(rrr_clnt_call(clnt, &c), 0, "the stale write must not succeed");
	/* iWARP: an RDMA WRITE completes at the sender once sent; the target
	 * refuses to place it (Terminate) - what matters is the bytes below.
	 * The client can see the Terminate before the server's thread has
	 * seen its own completion and counted the poke: wait for the count. */
	for (int i = 0; i < 500; i++) {
		rsrv_stats(srv, &ss);
		if (ss.poke_ok + ss.poke_failed)
			break;
		usleep(10000);
	}
	cr_assert_eq(ss.poke_ok + ss.poke_failed, 1, "the server tried the stale write once");
	for (uint32_t i = 0; i < 4096; i++)
		cr_assert_eq(dst[i], (uint8_t)(i * 7 + 3), "byte %u changed", i);
	free(dst);
}

/* A NULL call (its reply raises the grant from 1, so two calls can be
 * out), then @hold: HOLD into the registered sink @d, submitted without
 * waiting (@o sees its end). Returns the bytes sent before @hold. */
static uint64_t start_hold(struct rrr_call *hold, struct iovec *d, struct tc_once *o)
{
	struct rrr_xprt_stats st;
	struct rrr_call c;

	init_call(&c, RS_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	init_call(hold, RS_HOLD);
	tc_payload(hold, RRR_DDP_FROM_SERVER, d, 1);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(rrr_clnt_call_async(clnt, hold, tc_once_done, o), 0);
	return st.send_bytes;
}

Test(rdma, foreign_invalidation_disconnects, .init = init_fail_fast)
{
	uint8_t dst[8192];
	struct iovec d = {dst, sizeof(dst)};
	struct rrr_xprt_stats st;
	struct tc_once o = {0};
	struct rrr_call hold, c;
	uint64_t sent = start_hold(&hold, &d, &o);

	/* the held call is on the wire before the foreign one */
	cr_assert(TEST_WAIT_UNTIL((rrr_clnt_stats(clnt, &st), st.send_bytes > sent), 10000));
	init_call(&c, RS_FOREIGN);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -ECONNRESET);
	for (int i = 0; i < 200 && !atomic_load(&o.runs); i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&o.runs), 1);
	cr_assert_eq(atomic_load(&o.status), -ECONNRESET);
	rrr_clnt_stats(clnt, &st);
	cr_assert_geq(st.disconnects, 1);
}

/* A late reply to a timed-out call (a ghost) that invalidates the handle of
 * another call still in flight is just as foreign: the client must notice and
 * disconnect, not accept it because the call it answers is already over. */
static void init_batch600(void)
{
	struct rsrv_opts o = {.batch_ms = 600};

	start(&o, tweak_fail_fast);
}

Test(rdma_ghost, late_reply_foreign_invalidation_disconnects, .init = init_batch600, .fini = fini,
     .timeout = 60)
{
	uint8_t dst[8192];
	struct iovec d = {dst, sizeof(dst)};
	struct rrr_xprt_stats st;
	struct tc_once o = {0};
	struct rrr_call hold, c;

	(void)start_hold(&hold, &d, &o);
	/* FOREIGN right behind HOLD (one submit queue keeps them in order; a
	 * pause would only eat into its timeout): answered in the server's
	 * next batch, long after the call gave up */
	init_call(&c, RS_FOREIGN);
	c.timeout_ms = 150;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -ETIMEDOUT);
	for (int i = 0; i < 300 && !atomic_load(&o.runs); i++)
		usleep(10000);
	if (!atomic_load(&o.runs))
		rrr_clnt_cancel(clnt, &hold);
	cr_assert_eq(atomic_load(&o.status), -ECONNRESET,
		     "the held call ended with %d: the foreign invalidation went unnoticed",
		     atomic_load(&o.status));
	rrr_clnt_stats(clnt, &st);
	cr_assert_geq(st.disconnects, 1);
}

/* --- benchmark options: long-lived registrations ------------------------------ */

static void tweak_persistent(struct rrr_clnt_opts *o)
{
	o->persistent_reg = true;
}

static void tweak_bounce(struct rrr_clnt_opts *o)
{
	o->bounce = true;
}

static void init_persistent(void)
{
	start(NULL, tweak_persistent);
}

static void init_bounce(void)
{
	start(NULL, tweak_bounce);
}

static void long_lived_shapes(void)
{
	uint32_t n = 100001, sum = 0, m = 200003;
	uint8_t *src = malloc(n), *dst = malloc(m + 8);
	struct iovec s = {src, n};
	struct tc_pay p = {&s, 1, n, 5};
	struct tc_got g = {0};
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;
	struct rrr_call c;

	for (uint32_t i = 0; i < n; i++) {
		src[i] = (uint8_t)(i * 3 + 1);
		sum += src[i];
	}
	for (int round = 0; round < 2; round++) {
		init_call(&c, RS_SUM);
		tc_codec(&c, tc_enc_pay_tag, &p, tc_dec_3u32, &g);
		tc_payload(&c, RRR_DDP_TO_SERVER, &s, 1);
		cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
		cr_assert_eq(g.w[0], n);
		cr_assert_eq(g.w[1], sum);
		cr_assert_eq(g.w[2], 5);
		memset(dst, 0, m + 8);
		cr_assert_eq(fill_into(dst, m, m + 8), 0);
		for (uint32_t i = 0; i < m; i++)
			cr_assert_eq(dst[i], (uint8_t)(i * 7 + 3));
	}
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.registrations, 0, "no per-I/O registration for payloads");
	cr_assert_eq(st.read_chunks, 2);
	cr_assert_eq(st.write_chunks, 2);
	cr_assert(!ss.client_remote_inv, "long-lived MRs: no Send With Invalidate offered");
	free(src);
	free(dst);
}

Test(rdma_opts, persistent_reg, .init = init_persistent, .fini = fini, .timeout = 30)
{
	long_lived_shapes();
}

Test(rdma_opts, bounce, .init = init_bounce, .fini = fini, .timeout = 30)
{
	long_lived_shapes();
}

/* --- wait modes: the progress thread waits by each policy (rrr/wait.h) ------- */

static void tweak_wait_event(struct rrr_clnt_opts *o)
{
	o->wait_mode = RRR_WAIT_EVENT;
}

static void tweak_wait_spin(struct rrr_clnt_opts *o)
{
	o->wait_mode = RRR_WAIT_SPIN;
	o->spin_us = 200;
}

static void init_wait_event(void)
{
	start(NULL, tweak_wait_event);
}

static void init_wait_spin(void)
{
	start(NULL, tweak_wait_spin);
}

/* Many synchronous echoes, each a full sleep or spin of the progress
 * thread: every reply arrives, with its bytes. */
static void echoes(void)
{
	uint8_t src[300], dst[300];
	struct iovec s = {src, sizeof(src)};
	struct tc_pay p = {&s, 1, sizeof(src), 0};
	struct rrr_call c;

	for (int i = 0; i < 200; i++) {
		struct tc_got g = {.copy = dst};

		memset(src, i, sizeof(src));
		init_call(&c, RS_ECHO);
		tc_codec(&c, tc_enc_pay, &p, tc_dec_pay, &g);
		tc_payload(&c, RRR_DDP_TO_SERVER, &s, 1);
		cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "call %d", i);
		cr_assert_eq(g.len, sizeof(src));
		cr_assert_eq(memcmp(src, dst, sizeof(src)), 0, "call %d", i);
	}
}

Test(rdma_wait, event, .init = init_wait_event, .fini = fini, .timeout = 60)
{
	echoes();
}

Test(rdma_wait, spin, .init = init_wait_spin, .fini = fini, .timeout = 60)
{
	echoes();
}

/* --- many segments per chunk: a device with a shallow page list ------------- */

static void tweak_shallow(struct rrr_clnt_opts *o)
{
	o->provider_opts = "max_fr_pages=4";
}

static void init_shallow(void)
{
	TENV_SOFT_ONLY("the soft device option max_fr_pages=4 makes the shallow page list");
	start(NULL, tweak_shallow);
}

Test(rdma_segs, multi_segment_chunks, .init = init_shallow, .fini = fini, .timeout = 30)
{
	uint32_t n = 100001, sum = 0;
	uint8_t *src = malloc(n), *dst = malloc(n + 5);
	struct iovec s[2] = {{src, 777}, {src + 777, n - 777}};
	struct tc_pay p = {s, 2, n, 9};
	struct tc_got g = {0};
	struct rrr_xprt_stats st;
	struct rrr_call c;

	cr_assert_eq(rrr_clnt_max_payload(clnt), 16u * 4u * 4096u);
	for (uint32_t i = 0; i < n; i++) {
		src[i] = (uint8_t)(i * 17);
		sum += src[i];
	}
	init_call(&c, RS_SUM);
	tc_codec(&c, tc_enc_pay_tag, &p, tc_dec_3u32, &g);
	tc_payload(&c, RRR_DDP_TO_SERVER, s, 2);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	cr_assert_eq(g.w[1], sum);
	cr_assert_eq(fill_into(dst, n, n + 5), 0);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(dst[i], (uint8_t)(i * 7 + 3));
	rrr_clnt_stats(clnt, &st);
	cr_assert_geq(st.registrations, 14, "one registration per 4 pages");
	cr_assert_eq(st.registrations, st.local_inv + st.remote_inv);
	free(src);
	free(dst);
}

/* --- send-queue room: a chain that does not fit waits -------------------------- */

/* Credits 4 (of the server's 8), registrations of 4 pages: the send queue
 * is sized for one longest chain (6 x max_segs + 1) and 4 entries per
 * credit, not for 4 longest chains. */
static void tweak_shallow_4(struct rrr_clnt_opts *o)
{
	o->provider_opts = "max_fr_pages=4";
	o->max_requests = 4;
}

static void init_shallow_4(void)
{
	struct rsrv_opts so = {.batch_ms = 15};

	TENV_SOFT_ONLY("the soft device option max_fr_pages=4 makes the shallow page list");
	start(&so, tweak_shallow_4);
}

#define LC_N	 8
#define LC_PAGES 60 /* 15 registrations of 4 pages: one chain of 15 REG_MRs + SEND */

struct lcall {
	struct rrr_call c;
	struct iovec iov;
	struct tc_pay p;
	struct tc_got g;
	uint32_t sum;
	struct tc_once once;
};

/* Calls whose chains (15 registrations each, and 15 invalidations to
 * follow) do not all fit the send queue at once: each waits for room
 * instead of failing, and all complete with their data intact; the room,
 * not the credits, is what bounded the calls in flight. */
Test(rdma_segs, long_chains_wait_for_send_queue_room, .init = init_shallow_4, .fini = fini,
     .timeout = 60)
{
	static struct lcall k[LC_N];
	size_t len = (size_t)LC_PAGES * 4096u;
	uint8_t *buf = aligned_alloc(4096, len * LC_N);
	struct rrr_xprt_stats st;
	struct rsrv_stats ss;

	cr_assert_not_null(buf);
	memset(k, 0, sizeof(k));
	for (int i = 0; i < LC_N; i++) {
		uint8_t *p = buf + (size_t)i * len;

		for (size_t j = 0; j < len; j++) {
			p[j] = (uint8_t)(j * 13 + (size_t)i);
			k[i].sum += p[j];
		}
		k[i].iov = (struct iovec){p, len};
		k[i].p = (struct tc_pay){&k[i].iov, 1, (uint32_t)len, 40u + (uint32_t)i};
		init_call(&k[i].c, RS_SUM);
		tc_codec(&k[i].c, tc_enc_pay_tag, &k[i].p, tc_dec_3u32, &k[i].g);
		tc_payload(&k[i].c, RRR_DDP_TO_SERVER, &k[i].iov, 1);
		cr_assert_eq(rrr_clnt_call_async(clnt, &k[i].c, tc_once_done, &k[i].once), 0, "%s",
			     rrr_last_error());
	}
	for (int i = 0; i < LC_N; i++) {
		cr_assert(TEST_WAIT_UNTIL(atomic_load(&k[i].once.runs) == 1, 30000),
			  "call %d completed", i);
		cr_assert_eq(atomic_load(&k[i].once.status), 0, "call %d: %s", i, k[i].c.error);
		cr_assert_eq(k[i].g.w[0], (uint32_t)len);
		cr_assert_eq(k[i].g.w[1], k[i].sum, "call %d's payload arrived intact", i);
		cr_assert_eq(k[i].g.w[2], 40u + (uint32_t)i);
	}
	rrr_clnt_stats(clnt, &st);
	rsrv_stats(srv, &ss);
	cr_assert_eq(st.registrations, (uint64_t)LC_N * 15u, "15 registrations per call");
	cr_assert_eq(st.credits, 4);
	cr_assert_lt(ss.max_outstanding, 4,
		     "send-queue room, not the 4 credits, bounded the calls in flight (%u)",
		     ss.max_outstanding);
	free(buf);
}
