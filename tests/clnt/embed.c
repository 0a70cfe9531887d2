/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/embed.c - what a program built on the client library
 * relies on without reading its source: the limits it sets are kept
 * (max_segs, checked before a call is sent), failures say why (the call's
 * error sentence, rrr_last_error() on the waiting thread), fail_fast fails
 * calls at once while the server is gone, the payload is declared once
 * (struct rrr_call), and connection events tell the program about losses
 * and new server instances. The server runs in a separate process (fork)
 * over the soft provider; it accepts at most 16 segments per chunk.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "helpers/calls.h"

#define EM_PROG 0x20000098u
enum { EM_NULL, EM_FILL, EM_SUM, EM_SLEEP, EM_RC, EM_BOOT, EM_ZC, EM_ZCSTAT };

/* --- server process ------------------------------------------------------- */

static struct rrr_svc *child_svc;

/* args: n; result: n bytes (i * 7 + 3) as a DDP payload */
static int h_fill(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	uint32_t n;

	if (rrr_xdr_get_u32(a, &n) || n > (1u << 20))
		return RRR_SVC_GARBAGE_ARGS;
	return tc_answer_pattern(r, s, n, true);
}

/* args: payload; result: its length and byte sum */
static int h_sum(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;
	uint32_t len, sum;

	(void)r;
	if (rrr_xdr_decode_payload(a, 1u << 20, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	sum = tc_iov_sum(iov, niov);
	return rrr_xdr_put_u32(s, len) || rrr_xdr_put_u32(s, sum) ? RRR_SVC_SYSTEM_ERR : 0;
}

/* args: the value the handler returns */
static int h_rc(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	uint32_t v;

	(void)r;
	(void)s;
	if (rrr_xdr_get_u32(a, &v))
		return RRR_SVC_GARBAGE_ARGS;
	return (int)v;
}

/* result: the server's boot verifier (hyper) */
static int h_boot(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)a;
	return rrr_xdr_put_u64(s, rrr_svc_req_boot_verifier(r));
}

/* Zero copy: the server's own memory (a 1 MiB "disk") is the source of the
 * RDMA WRITE. args: offset, count, fail (the handler then answers
 * SYSTEM_ERR after handing the memory); result: count bytes of the disk. */
static uint8_t zc_disk[1u << 20];
static atomic_uint zc_released, zc_handed;

static void zc_release(void *arg)
{
	(void)arg;
	atomic_fetch_add(&zc_released, 1);
}

static int h_zc(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	uint32_t off, n, fail;
	struct iovec iov[2];
	int rc;

	if (rrr_xdr_get_u32(a, &off) || rrr_xdr_get_u32(a, &n) || rrr_xdr_get_u32(a, &fail) ||
	    off > sizeof(zc_disk) || n > sizeof(zc_disk) - off)
		return RRR_SVC_GARBAGE_ARGS;
	for (uint32_t i = 0; i < sizeof(zc_disk); i++)
		zc_disk[i] = (uint8_t)(i * 11 + 5);
	/* two pieces: the registration engine maps both */
	iov[0] = (struct iovec){zc_disk + off, n / 2};
	iov[1] = (struct iovec){zc_disk + off + n / 2, n - n / 2};
	rc = rrr_svc_req_encode_payload_zc(r, s, iov, 2, n, zc_release, NULL);
	if (rc)
		return rc;
	atomic_fetch_add(&zc_handed, 1);
	return fail ? -EIO : 0;
}

/* result: handed, released, the server's registrations and local_inv */
static int h_zcstat(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct rrr_xprt_stats st;

	(void)r;
	(void)a;
	rrr_svc_stats(child_svc, &st);
	return rrr_xdr_put_u32(s, atomic_load(&zc_handed)) ||
			   rrr_xdr_put_u32(s, atomic_load(&zc_released)) ||
			   rrr_xdr_put_u32(s, (uint32_t)st.registrations) ||
			   rrr_xdr_put_u32(s, (uint32_t)st.local_inv)
		   ? -EIO
		   : 0;
}

static const struct rrr_svc_proc procs[] = {
    [EM_NULL] = {"null", tc_h_null},
    [EM_FILL] = {"fill", h_fill},
    [EM_SUM] = {"sum", h_sum},
    [EM_SLEEP] = {"sleep", tc_h_drop}, /* takes the call and never answers it */
    [EM_RC] = {"rc", h_rc},
    [EM_BOOT] = {"boot", h_boot},
    [EM_ZC] = {"zc", h_zc},
    [EM_ZCSTAT] = {"zcstat", h_zcstat},
};

static void child_main(int wfd, const void *arg)
{
	uint16_t want = *(const uint16_t *)arg;
	struct rrr_svc_program prog = {EM_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]), NULL};
	struct rrr_svc_opts o;
	uint16_t port = 0;
	char ps[16];

	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	o.max_segs = 16; /* a server that accepts 16 segments per chunk */
	snprintf(ps, sizeof(ps), "%u", want);
	child_svc = tc_child_svc(&o, &prog);
	if (rrr_svc_listen_rdma(child_svc, "127.0.0.1", ps, &port))
		tc_child_fail();
	tc_child_serve(child_svc, wfd, &port, sizeof(port));
}

/* --- client side ---------------------------------------------------------- */

static pid_t child;
static uint16_t port;
static struct rrr_clnt *clnt;

static void start_server_on(uint16_t want)
{
	child = tc_fork_server(child_main, &want, &port, sizeof(port));
}

static void kill_server(void)
{
	tc_kill_child(&child);
}

static void opts_for(struct rrr_clnt_opts *o, char *ps, size_t pslen)
{
	snprintf(ps, pslen, "%u", port);
	rrr_clnt_opts_init(o);
	o->host = "127.0.0.1";
	o->port = ps;
	o->timeout_ms = 10000;
	o->connect_timeout_ms = 3000;
}

static void stop_all(void)
{
	tc_disconnect_stop(&clnt, &child);
}

static void call_init(struct rrr_call *c, uint32_t proc)
{
	tc_call_init(c, EM_PROG, proc);
}

static int dec_payload(struct rrr_xdr *x, void *r)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;

	return rrr_xdr_decode_payload(x, 1u << 20, (uint32_t *)r, iov, &niov);
}

static int dec_2(struct rrr_xdr *x, void *r)
{
	uint32_t *w = r;

	return rrr_xdr_get_u32(x, &w[0]) || rrr_xdr_get_u32(x, &w[1]) ? -EBADMSG : 0;
}

/* The payload declared once: the encoder names none, the library encodes
 * call.payload. */
static int enc_call_payload(struct rrr_xdr *x, const void *a)
{
	(void)a;
	return rrr_xdr_encode_payload(x, NULL, 0, 0);
}

/* The old way, a second declaration: must name call.payload's memory. */
static int enc_other(struct rrr_xdr *x, const void *a)
{
	const struct iovec *iov = a;

	return rrr_xdr_encode_payload(x, iov, 1, (uint32_t)iov->iov_len);
}

static uint64_t posts_now(void)
{
	struct rrr_xprt_stats st;

	rrr_clnt_stats(clnt, &st);
	return st.send_posts;
}

/* A FILL of @n pieces of 4000 bytes, each at the start of its own pair of
 * pages: on a page-list device every piece is a registration of its own. */
static int fill_pieces(unsigned n, uint8_t **mem, struct iovec *iov, uint32_t *got)
{
	uint32_t want = n * 4000u;
	struct rrr_call c;

	*mem = aligned_alloc(4096, (size_t)n * 8192u);
	cr_assert_not_null(*mem);
	memset(*mem, 0xee, (size_t)n * 8192u);
	for (unsigned i = 0; i < n; i++)
		iov[i] = (struct iovec){*mem + (size_t)i * 8192u, 4000};
	call_init(&c, EM_FILL);
	tc_codec(&c, tc_enc_u32, &want, dec_payload, got);
	tc_payload(&c, RRR_DDP_FROM_SERVER, iov, n);
	return rrr_clnt_call(clnt, &c);
}

static void init_page_list(void)
{
	struct rrr_clnt_opts o;
	char ps[16];

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.provider_opts = "map_model=page_list"; /* holes split registrations */
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
}

TestSuite(embed, .fini = stop_all, .timeout = 60);

/* max_segs (default 16) is kept: a sink of 20 holes needs 20 registrations,
 * so the call fails before it is sent, with -EMSGSIZE and a sentence,
 * instead of reaching a server that accepts 16 and coming back as
 * RDMA_ERROR (-EREMOTEIO). A sink of 16 holes works and lands every byte. */
Test(embed, max_segs_kept_before_sending, .init = init_page_list)
{
	struct iovec iov[20];
	uint8_t *mem = aligned_alloc(4096, 20u * 8192u);
	uint32_t got = 0, want = 20u * 4000u;
	uint64_t posts = posts_now();
	struct rrr_call c;

	cr_assert_not_null(mem);
	for (unsigned i = 0; i < 20; i++)
		iov[i] = (struct iovec){mem + (size_t)i * 8192u, 4000};
	call_init(&c, EM_FILL);
	tc_codec(&c, tc_enc_u32, &want, dec_payload, &got);
	tc_payload(&c, RRR_DDP_FROM_SERVER, iov, 20);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EMSGSIZE, "20 registrations > max_segs 16");
	cr_assert(strstr(c.error, "max_segs"), "the call says why: '%s'", c.error);
	cr_assert_not_null(rrr_last_error());
	cr_assert(strstr(rrr_last_error(), "max_segs"), "and so does rrr_last_error()");
	cr_assert_eq(posts_now(), posts, "nothing was sent");
	free(mem);

	cr_assert_eq(fill_pieces(16, &mem, iov, &got), 0, "16 pieces fit: %s", rrr_last_error());
	cr_assert_eq(got, 16u * 4000u);
	for (unsigned i = 0; i < 16; i++) {
		for (unsigned j = 0; j < 4000; j++)
			cr_assert_eq(mem[(size_t)i * 8192u + j], (uint8_t)((i * 4000u + j) * 7 + 3),
				     "piece %u byte %u", i, j);
		cr_assert_eq(mem[(size_t)i * 8192u + 4000], 0xee, "the hole is untouched");
	}
	free(mem);
}

/* Impossible limits are refused when the client is created. */
Test(embed, impossible_max_segs_refused_at_create)
{
	struct rrr_clnt_opts o;
	struct rrr_clnt *c2 = NULL;
	char ps[16];

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.max_segs = 1000;
	cr_assert_eq(rrr_clnt_create(&o, &c2), -EINVAL);
	cr_assert_null(c2);
	cr_assert(rrr_last_error() && strstr(rrr_last_error(), "max_segs"), "sentence: %s",
		  rrr_last_error() ? rrr_last_error() : "(none)");
}

static void init_default(void)
{
	struct rrr_clnt_opts o;
	char ps[16];

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
}

/* Every error comes with its sentence, on the thread that sees it. */
Test(embed, errors_carry_sentences, .init = init_default)
{
	struct iovec many[65];
	uint8_t byte = 1;
	struct rrr_call c;

	for (int i = 0; i < 65; i++)
		many[i] = (struct iovec){&byte, 1};
	call_init(&c, EM_SUM);
	c.encode = enc_call_payload;
	tc_payload(&c, RRR_DDP_TO_SERVER, many, 65);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EINVAL);
	cr_assert(strstr(c.error, "65"), "the call says why: '%s'", c.error);
	cr_assert(rrr_last_error() && strstr(rrr_last_error(), "65"));

	/* a synchronous timeout: the reason reaches this thread */
	call_init(&c, EM_SLEEP);
	c.timeout_ms = 200;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -ETIMEDOUT);
	cr_assert(strstr(c.error, "timed out"), "the call says why: '%s'", c.error);
	cr_assert(rrr_last_error() && strstr(rrr_last_error(), "timed out"), "last error: %s",
		  rrr_last_error() ? rrr_last_error() : "(none)");

	/* success clears the call's sentence */
	call_init(&c, EM_NULL);
	strcpy(c.error, "stale");
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	cr_assert_eq(c.error[0], '\0');
}

/* The payload is declared once: the encoder that encodes NULL gets
 * call.payload; one that encodes other memory, or none, is refused. */
Test(embed, payload_declared_once, .init = init_default)
{
	uint8_t a[3000], b[3000];
	struct iovec ia = {a, sizeof(a)}, ib = {b, sizeof(b)};
	uint32_t w[2] = {0, 0}, sum = 0;
	struct rrr_call c;

	for (unsigned i = 0; i < sizeof(a); i++) {
		a[i] = (uint8_t)(i * 3 + 1);
		sum += a[i];
		b[i] = 0;
	}
	call_init(&c, EM_SUM);
	c.encode = enc_call_payload;
	c.decode = dec_2;
	c.res = w;
	tc_payload(&c, RRR_DDP_TO_SERVER, &ia, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	cr_assert_eq(w[0], sizeof(a));
	cr_assert_eq(w[1], sum, "the bytes of call.payload were sent");

	/* an encoder that names other memory than call.payload */
	call_init(&c, EM_SUM);
	tc_codec(&c, enc_other, &ib, dec_2, w);
	tc_payload(&c, RRR_DDP_TO_SERVER, &ia, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EINVAL, "a second, different declaration");
	cr_assert(strstr(c.error, "call.payload"), "says why: '%s'", c.error);

	/* an encoder that encodes no payload at all */
	c.encode = tc_enc_u32;
	c.args = &sum;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EINVAL, "declared, never encoded");
	cr_assert(strstr(c.error, "call.payload"), "says why: '%s'", c.error);
}

static void init_fail_fast(void)
{
	struct rrr_clnt_opts o;
	char ps[16];

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.fail_fast = true;
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* fail_fast: once the server is gone, a call issued afterwards fails at
 * once (not after its 10 s timeout), with a sentence; so does the next
 * one (no wait for the pause between connect attempts). */
Test(embed, fail_fast_new_calls_fail_at_once, .init = init_fail_fast)
{
	struct rrr_call c;
	uint64_t t0;
	int rc;

	call_init(&c, EM_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	kill_server();
	for (int i = 0; i < 2; i++) {
		call_init(&c, EM_NULL);
		t0 = ms_now();
		rc = rrr_clnt_call(clnt, &c);
		cr_assert(rc == -ENOTCONN || rc == -ECONNRESET, "call %d: %d", i, rc);
		cr_assert_lt(ms_now() - t0, 5000, "call %d failed fast (%llu ms)", i,
			     (unsigned long long)(ms_now() - t0));
		cr_assert_neq(c.error[0], '\0', "with a sentence");
		cr_assert(rrr_last_error() && rrr_last_error()[0]);
	}
}

/* Counters the docs name are in struct rrr_xprt_stats: on a page-list
 * device with 4 pages per MR, a 64 KiB page-aligned sink (16 pages) is cut
 * into 4 registrations by depth (3 depth_splits, no hole), and 4 pieces
 * that each end mid-page are 4 registrations split by holes. */
Test(embed, depth_and_hole_splits_counted)
{
	struct rrr_clnt_opts o;
	struct rrr_xprt_stats st0, st;
	struct iovec iov[4];
	uint8_t *mem = aligned_alloc(4096, 65536);
	uint32_t got = 0, want = 65536;
	struct rrr_call c;
	char ps[16];

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.provider_opts = "map_model=page_list,max_fr_pages=4";
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
	cr_assert_not_null(mem);
	iov[0] = (struct iovec){mem, 65536};
	call_init(&c, EM_FILL);
	tc_codec(&c, tc_enc_u32, &want, dec_payload, &got);
	tc_payload(&c, RRR_DDP_FROM_SERVER, iov, 1);
	rrr_clnt_stats(clnt, &st0);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	cr_assert_eq(got, 65536u);
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.registrations - st0.registrations, 4);
	cr_assert_eq(st.depth_splits - st0.depth_splits, 3);
	cr_assert_eq(st.hole_splits - st0.hole_splits, 0);
	free(mem);

	cr_assert_eq(fill_pieces(4, &mem, iov, &got), 0, "%s", rrr_last_error());
	rrr_clnt_stats(clnt, &st0);
	cr_assert_eq(st0.hole_splits - st.hole_splits, 3, "pieces ending mid-page: holes");
	cr_assert_eq(st0.depth_splits, st.depth_splits);
	cr_assert_eq(st0.pool_empty + st0.map_errors + st0.recover_errors, 0);
	free(mem);
}

/* Handlers return 0 or -errno like the rest of the library: -EBADMSG is
 * GARBAGE_ARGS, another negative errno SYSTEM_ERR; the positive codes of
 * earlier versions still work. The client's sentence names the status. */
Test(embed, handler_returns_errno, .init = init_default)
{
	static const struct {
		int rc;
		uint32_t stat;
	} cases[] = {{-EBADMSG, RRR_RPC_GARBAGE_ARGS}, {-ENOMEM, RRR_RPC_SYSTEM_ERR},
		     {RRR_SVC_SYSTEM_ERR, RRR_RPC_SYSTEM_ERR}, {1, RRR_RPC_GARBAGE_ARGS},
		     {2, RRR_RPC_SYSTEM_ERR}};
	struct rrr_call c;

	cr_assert_lt(RRR_SVC_GARBAGE_ARGS, 0);
	cr_assert_lt(RRR_SVC_SYSTEM_ERR, 0);
	cr_assert_lt(RRR_SVC_DROP, 0);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t v = (uint32_t)cases[i].rc;

		call_init(&c, EM_RC);
		c.encode = tc_enc_u32;
		c.args = &v;
		cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO, "case %u", i);
		cr_assert_eq(c.rpc_stat, cases[i].stat, "case %u: rc %d", i, cases[i].rc);
		cr_assert(strstr(c.error, cases[i].stat == RRR_RPC_GARBAGE_ARGS ? "GARBAGE_ARGS"
										   : "SYSTEM_ERR"),
			  "case %u: '%s'", i, c.error);
	}
}

/* --- connection events ----------------------------------------------------- */

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static struct rrr_clnt_conn_event evs[16];
static unsigned nevs;

static void on_conn(struct rrr_clnt *cl, const struct rrr_clnt_conn_event *ev, void *arg)
{
	(void)cl;
	(void)arg;
	pthread_mutex_lock(&ev_mu);
	if (nevs < 16)
		evs[nevs++] = *ev;
	pthread_cond_broadcast(&ev_cv);
	pthread_mutex_unlock(&ev_mu);
}

/* Wait (bounded) until @n events were seen. */
static bool wait_events(unsigned n, int ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	pthread_mutex_lock(&ev_mu);
	while (nevs < n)
		if (pthread_cond_timedwait(&ev_cv, &ev_mu, &ts))
			break;
	ok = nevs >= n;
	pthread_mutex_unlock(&ev_mu);
	return ok;
}

static int dec_u64(struct rrr_xdr *x, void *r)
{
	return rrr_xdr_get_u64(x, r);
}

static uint64_t boot_of_server(void)
{
	struct rrr_call c;
	uint64_t v = 0;

	call_init(&c, EM_BOOT);
	c.decode = dec_u64;
	c.res = &v;
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	cr_assert_neq(v, 0);
	return v;
}

/* A server that restarts is reported: CONNECTED (generation 1), LOST,
 * RECONNECTED (generation 2), and its boot verifier tells the new instance
 * from the old. */
Test(embed, connection_events_and_boot_verifier)
{
	struct rrr_clnt_opts o;
	uint64_t boot1, boot2;
	char ps[16];

	nevs = 0;
	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.conn_cb = on_conn;
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
	cr_assert(wait_events(1, 5000));
	cr_assert_eq(evs[0].type, RRR_CLNT_CONNECTED);
	cr_assert_eq(evs[0].generation, 1);
	cr_assert_eq(rrr_clnt_generation(clnt), 1);
	boot1 = boot_of_server();

	uint16_t p = port;
	kill_server();
	start_server_on(p);
	boot2 = boot_of_server(); /* re-sent after the reconnect */
	cr_assert_neq(boot1, boot2, "a new server instance");
	cr_assert(wait_events(3, 5000), "%u events", nevs);
	cr_assert_eq(evs[1].type, RRR_CLNT_LOST);
	cr_assert_eq(evs[1].generation, 1);
	cr_assert_lt(evs[1].reason, 0);
	cr_assert_eq(evs[2].type, RRR_CLNT_RECONNECTED);
	cr_assert_eq(evs[2].generation, 2);
	cr_assert_eq(rrr_clnt_generation(clnt), 2);
}

/* --- completions on the application's thread ------------------------------- */

static pthread_t app_thread;
static atomic_int app_done, app_wrong_thread;

static void app_cb(struct rrr_call *call, int status, void *arg)
{
	(void)call;
	(void)arg;
	if (!pthread_equal(pthread_self(), app_thread) || status)
		atomic_fetch_add(&app_wrong_thread, 1);
	atomic_fetch_add(&app_done, 1);
}

/* app_completions: 8 async calls complete only inside
 * rrr_clnt_run_completions(), on the thread that polls rrr_clnt_fd(). */
Test(embed, completions_on_application_thread)
{
	struct rrr_clnt_opts o;
	struct rrr_call c[8];
	struct pollfd pfd;
	char ps[16];
	int fd, ran = 0;

	start_server_on(0);
	opts_for(&o, ps, sizeof(ps));
	o.app_completions = true;
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
	fd = rrr_clnt_fd(clnt);
	cr_assert_geq(fd, 0);
	app_thread = pthread_self();
	for (int i = 0; i < 8; i++) {
		call_init(&c[i], EM_NULL);
		cr_assert_eq(rrr_clnt_call_async(clnt, &c[i], app_cb, NULL), 0);
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "the fd becomes readable");
	cr_assert_eq(atomic_load(&app_done), 0, "nothing ran behind the application's back");
	for (int round = 0; round < 100 && ran < 8; round++) {
		if (poll(&pfd, 1, 5000) != 1)
			break;
		int n = rrr_clnt_run_completions(clnt, 0);

		cr_assert_geq(n, 0);
		ran += n;
	}
	cr_assert_eq(ran, 8);
	cr_assert_eq(atomic_load(&app_done), 8);
	cr_assert_eq(atomic_load(&app_wrong_thread), 0, "all ran on this thread, with status 0");
	cr_assert_eq(rrr_clnt_run_completions(clnt, 0), 0, "none left");

	/* a synchronous call needs no run_completions */
	call_init(&c[0], EM_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &c[0]), 0);
}

/* Without app_completions there is no fd. */
Test(embed, no_fd_without_app_completions, .init = init_default)
{
	cr_assert_eq(rrr_clnt_fd(clnt), -EINVAL);
	cr_assert_eq(rrr_clnt_run_completions(clnt, 0), -EINVAL);
	cr_assert_not_null(rrr_last_error());
}

/* --- zero-copy server payloads --------------------------------------------- */

static int enc_u32x3(struct rrr_xdr *x, const void *a)
{
	const uint32_t *v = a;

	return rrr_xdr_put_u32(x, v[0]) || rrr_xdr_put_u32(x, v[1]) || rrr_xdr_put_u32(x, v[2])
		   ? -EMSGSIZE
		   : 0;
}

static int dec_4(struct rrr_xdr *x, void *r)
{
	uint32_t *w = r;

	for (int i = 0; i < 4; i++)
		if (rrr_xdr_get_u32(x, &w[i]))
			return -EBADMSG;
	return 0;
}

static uint32_t zc_regs, zc_invs; /* the server's, at the last zc_stat() */

static void zc_stat(uint32_t *handed, uint32_t *released)
{
	uint32_t w[4];
	struct rrr_call c;

	call_init(&c, EM_ZCSTAT);
	c.decode = dec_4;
	c.res = w;
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	*handed = w[0];
	*released = w[1];
	zc_regs = w[2];
	zc_invs = w[3];
}

/* The handler's own memory is written to the client's sink in place (two
 * pieces at odd offsets, sizes from 4 KiB to 1 MiB), the release callback
 * runs once per reply after it was sent, also when the handler fails after
 * handing the memory, and inline replies (no write chunk) copy. */
static void zc_case(void)
{
	static const uint32_t sizes[] = {4096, 100000, 1u << 19, (1u << 20) - 8};
	uint8_t *dst = malloc((1u << 20) + 64);
	struct iovec d = {dst, (1u << 20) + 64};
	uint32_t got, handed, released;
	struct rrr_call c;

	cr_assert_not_null(dst);
	for (unsigned t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		uint32_t off = sizes[t] > 1000000 ? 8 : 1000, args[3] = {off, sizes[t], 0};

		memset(dst, 0xee, d.iov_len);
		call_init(&c, EM_ZC);
		tc_codec(&c, enc_u32x3, args, dec_payload, &got);
		tc_payload(&c, RRR_DDP_FROM_SERVER, &d, 1);
		cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%u: %s", sizes[t], c.error);
		cr_assert_eq(got, sizes[t]);
		for (uint32_t i = 0; i < sizes[t]; i++)
			cr_assert_eq(dst[i], (uint8_t)((off + i) * 11 + 5), "size %u byte %u",
				     sizes[t], i);
		cr_assert_eq(dst[sizes[t]], 0xee, "nothing past the payload");
	}
	zc_stat(&handed, &released);
	cr_assert_eq(handed, 4);
	cr_assert_eq(released, 4, "released once per reply, after it was sent");
	cr_assert_geq(zc_regs, 4, "the memory was registered, not copied (%u)", zc_regs);
	cr_assert_eq(zc_invs, zc_regs, "and every registration invalidated");

	/* the handler fails after handing its memory: SYSTEM_ERR, released */
	uint32_t args[3] = {0, 65536, 1};
	call_init(&c, EM_ZC);
	tc_codec(&c, enc_u32x3, args, dec_payload, &got);
	tc_payload(&c, RRR_DDP_FROM_SERVER, &d, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_SYSTEM_ERR);
	zc_stat(&handed, &released);
	cr_assert_eq(handed, 5);
	cr_assert_eq(released, 5, "released after a failure too");
	free(dst);
}

Test(embed, zero_copy_reply_payload, .init = init_default)
{
	struct rrr_xprt_stats st;

	zc_case();
	rrr_clnt_stats(clnt, &st);
	cr_assert_eq(st.bad_replies, 0);
}

Test(embed, zero_copy_reply_payload_page_list, .init = init_page_list)
{
	zc_case();
}
