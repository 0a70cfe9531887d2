/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/tcp.c - the client core over ONC RPC/TCP against a tiny
 * loopback server thread (helpers/tcp_srv.c): sync and async calls,
 * payloads with odd lengths into a sink, 64 concurrent calls from several
 * threads, timeout, cancel, peer hang-up mid-call (fail or retry once),
 * RPC-level errors, garbage replies, encode failure, refused connection.
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

#include "helpers/calls.h"
#include "helpers/tcp_srv.h"
#include "../test_wait.h"

static struct tsrv *srv;
static struct rrr_clnt *clnt;

static bool fail_fast;

static void setup(void)
{
	tsrv_start_clnt(&srv, &clnt, 5000, fail_fast);
}

static void setup_fail_fast(void)
{
	fail_fast = true;
	setup();
	fail_fast = false;
}

static void teardown(void)
{
	tsrv_stop_clnt(&srv, &clnt);
}

static void init_call(struct rrr_call *c, uint32_t proc)
{
	tc_call_init(c, TSRV_PROG, proc);
}

TestSuite(tcp, .init = setup, .fini = teardown, .timeout = 60);

Test(tcp, null_call)
{
	struct rrr_call c;
	struct rrr_xprt_stats st;

	init_call(&c, TSRV_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.calls, 1);
	cr_assert_eq(st.replies, 1);
	cr_assert_eq(st.connects, 1);
	cr_assert_gt(rrr_clnt_max_payload(clnt), 65536);
}

static void echo_roundtrip(uint32_t len)
{
	uint8_t *src = malloc(len + 1), *dst = malloc(len + 8);
	struct iovec siov[3], diov[2];
	struct tc_pay ea;
	struct tc_got er = {0};
	struct rrr_call c;
	uint32_t a = len / 3, b = len / 2;

	for (uint32_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 13 + len);
	memset(dst, 0xee, len + 8);
	siov[0] = (struct iovec){src, a};
	siov[1] = (struct iovec){src + a, b - a};
	siov[2] = (struct iovec){src + b, len - b};
	diov[0] = (struct iovec){dst, len / 2};
	diov[1] = (struct iovec){dst + len / 2, len - len / 2 + 8};
	ea = (struct tc_pay){siov, 3, len, 0};
	init_call(&c, TSRV_ECHO);
	tc_codec(&c, tc_enc_pay, &ea, tc_dec_pay, &er);
	c.ddp = RRR_DDP_FROM_SERVER; /* the reply's payload lands in diov */
	c.payload = diov;
	c.npayload = 2;
	{
		int rc_ = rrr_clnt_call(clnt, &c);
		cr_assert_eq(rc_, 0, "len %u rc %d", len, rc_);
	}
	cr_assert_eq(er.len, len);
	cr_assert_eq(c.payload_len, len);
	cr_assert_eq(memcmp(src, dst, len), 0, "len %u", len);
	cr_assert_eq(dst[len], 0xee, "nothing written past the payload");
	free(src);
	free(dst);
}

Test(tcp, echo_payload_sizes)
{
	static const uint32_t sizes[] = {0, 1, 3, 4, 5, 4095, 4097, 65537, 1000001};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		echo_roundtrip(sizes[i]);
}

Test(tcp, fill_into_sink)
{
	uint32_t n = 300001;
	uint8_t *dst = calloc(1, n);
	struct iovec d = {dst, n};
	struct tc_got er = {0};
	struct rrr_call c;

	init_call(&c, TSRV_FILL);
	tc_codec(&c, tc_enc_u32, &n, tc_dec_pay, &er);
	tc_payload(&c, RRR_DDP_FROM_SERVER, &d, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	cr_assert_eq(c.payload_len, n);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(dst[i], (uint8_t)(i * 7 + 3));
	/* a sink too small fails the decode cleanly */
	d.iov_len = n - 1;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EBADMSG);
	free(dst);
}

#define NTHREADS   4
#define PER_THREAD 16

struct conc {
	atomic_int done;
	atomic_int ok;
	pthread_mutex_t m;
	pthread_cond_t cv;
};

struct conc_call {
	struct rrr_call c;
	struct tc_pay ea;
	struct tc_got er; /* no copy: the payload lands in d */
	struct iovec s, d;
	uint8_t src[777], dst[777];
	struct conc *cc;
};

static void conc_done(struct rrr_call *call, int status, void *arg)
{
	struct conc_call *k = arg;

	(void)call;
	if (status == 0 && memcmp(k->src, k->dst, sizeof(k->src)) == 0)
		atomic_fetch_add(&k->cc->ok, 1);
	pthread_mutex_lock(&k->cc->m);
	atomic_fetch_add(&k->cc->done, 1);
	pthread_cond_broadcast(&k->cc->cv);
	pthread_mutex_unlock(&k->cc->m);
}

static void *conc_thread(void *arg)
{
	struct conc_call *k = arg;

	for (int i = 0; i < PER_THREAD; i++, k++) {
		for (unsigned j = 0; j < sizeof(k->src); j++)
			k->src[j] = (uint8_t)(j ^ (uintptr_t)k);
		k->s = (struct iovec){k->src, sizeof(k->src)};
		k->d = (struct iovec){k->dst, sizeof(k->dst)};
		k->ea = (struct tc_pay){&k->s, 1, sizeof(k->src), 0};
		k->er.copy = NULL;
		init_call(&k->c, TSRV_ECHO);
		tc_codec(&k->c, tc_enc_pay, &k->ea, tc_dec_pay, &k->er);
		tc_payload(&k->c, RRR_DDP_FROM_SERVER, &k->d, 1);
		if (rrr_clnt_call_async(clnt, &k->c, conc_done, k) != 0)
			return (void *)1;
	}
	return NULL;
}

Test(tcp, concurrent_64_calls)
{
	static struct conc_call calls[NTHREADS * PER_THREAD];
	struct conc cc = {0};
	pthread_t th[NTHREADS];

	pthread_mutex_init(&cc.m, NULL);
	pthread_cond_init(&cc.cv, NULL);
	for (unsigned i = 0; i < NTHREADS * PER_THREAD; i++)
		calls[i].cc = &cc;
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, conc_thread, &calls[t * PER_THREAD]);
	for (int t = 0; t < NTHREADS; t++) {
		void *rv;

		pthread_join(th[t], &rv);
		cr_assert_null(rv);
	}
	pthread_mutex_lock(&cc.m);
	while (atomic_load(&cc.done) < NTHREADS * PER_THREAD)
		pthread_cond_wait(&cc.cv, &cc.m);
	pthread_mutex_unlock(&cc.m);
	cr_assert_eq(atomic_load(&cc.ok), NTHREADS * PER_THREAD);
}

/* A call of @proc (deadline @timeout_ms, 0: the default; @idempotent) that
 * must end with @want; the client's statistics after it. */
static struct rrr_xprt_stats call_fails(uint32_t proc, int timeout_ms, bool idempotent, int want)
{
	struct rrr_xprt_stats st;
	struct rrr_call c;

	init_call(&c, proc);
	c.timeout_ms = timeout_ms;
	c.idempotent = idempotent;
	cr_assert_eq(rrr_clnt_call(clnt, &c), want);
	rrr_clnt_stats(clnt, &st);
	return st;
}

/* A NULL call that must succeed (the client is usable). */
static void null_ok(void)
{
	struct rrr_call c;

	init_call(&c, TSRV_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
}

Test(tcp, timeout)
{
	struct rrr_xprt_stats st = call_fails(TSRV_SILENT, 200, false, -ETIMEDOUT);

	cr_assert_eq(st.timeouts, 1);
	null_ok(); /* the connection is still usable */
}

Test(tcp, cancel)
{
	struct rrr_call c;
	struct tc_once o = {0};

	struct rrr_xprt_stats st;
	rrr_clnt_stats(clnt, &st);
	uint64_t sent = st.send_bytes;
	init_call(&c, TSRV_SILENT);
	cr_assert_eq(rrr_clnt_call_async(clnt, &c, tc_once_done, &o), 0);
	/* cancel a call that is on the wire, not one still queued */
	cr_assert(TEST_WAIT_UNTIL((rrr_clnt_stats(clnt, &st), st.send_bytes > sent), 10000));
	cr_assert_eq(rrr_clnt_cancel(clnt, &c), 0);
	cr_assert_eq(atomic_load(&o.runs), 1, "callback ran before cancel returned");
	cr_assert_eq(atomic_load(&o.status), -ECANCELED);
	cr_assert_eq(rrr_clnt_cancel(clnt, &c), -ENOENT);
}

Test(tcp, hangup_fails_then_reconnects, .init = setup_fail_fast)
{
	struct rrr_call c;
	struct rrr_xprt_stats st;

	init_call(&c, TSRV_HANGUP);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -ECONNRESET);
	init_call(&c, TSRV_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.disconnects, 1);
	cr_assert_eq(st.connects, 2);
	cr_assert_eq(tsrv_accepts(srv), 2);
}

Test(tcp, hangup_idempotent_retried_once, .init = setup_fail_fast)
{
	struct rrr_xprt_stats st = call_fails(TSRV_HANGUP, 0, true, -ECONNRESET);

	cr_assert_eq(st.retransmits, 1);
	cr_assert_eq(tsrv_calls(srv), 2, "sent twice: original and one retry");
}

/* Default (hard) client: a call whose connection drops is re-sent after
 * every reconnect, idempotent or not, until its deadline. */
Test(tcp, hangup_hard_resends_until_deadline)
{
	struct rrr_xprt_stats st = call_fails(TSRV_HANGUP, 1500, false, -ETIMEDOUT);

	cr_assert_geq(st.retransmits, 1);
	cr_assert_geq(tsrv_calls(srv), 2, "sent again on the next connection");
	cr_assert_leq(tsrv_calls(srv), st.retransmits + 1, "at most once per connection");
	null_ok();
}

Test(tcp, rpc_errors)
{
	struct rrr_call c;
	struct rrr_xprt_stats st;

	init_call(&c, TSRV_UNAVAIL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_PROC_UNAVAIL);
	init_call(&c, TSRV_GARBAGE);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EBADMSG);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.bad_replies, 1);
}

static int enc_fail(struct rrr_xdr *x, const void *a)
{
	(void)x;
	(void)a;
	return -EINVAL;
}

Test(tcp, encode_failure_never_calls_back)
{
	struct rrr_call c;
	struct tc_once o = {0};

	init_call(&c, TSRV_NULL);
	c.encode = enc_fail;
	cr_assert_eq(rrr_clnt_call_async(clnt, &c, tc_once_done, &o), -EINVAL);
	/* a call after it completes on the same thread that would have run
	 * the failed call's callback: had there been one, it ran by now */
	init_call(&c, TSRV_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	cr_assert_eq(atomic_load(&o.runs), 0);
	cr_assert_eq(rrr_clnt_call_async(clnt, NULL, tc_once_done, &o), -EINVAL);
}

Test(tcp_noserver, refused, .timeout = 20)
{
	struct rrr_clnt_opts o;
	struct rrr_clnt *cl = NULL;
	struct tsrv *s;
	uint16_t port;
	char ps[16];

	/* a port that was just free: start+stop a server */
	cr_assert_eq(tsrv_start(&s, &port), 0);
	tsrv_stop(s);
	snprintf(ps, sizeof(ps), "%u", port);
	rrr_clnt_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = ps;
	cr_assert_eq(rrr_clnt_create(&o, &cl), -ECONNREFUSED);
	cr_assert_null(cl);
	cr_assert_not_null(rrr_last_error());
	o.transport = "carrier-pigeon";
	cr_assert_eq(rrr_clnt_create(&o, &cl), -EINVAL);
}
