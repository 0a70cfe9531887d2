/* SPDX-License-Identifier: MIT */
/*
 * tests/tsan/clnt_svc.c - client and server libraries in ONE process, so
 * ThreadSanitizer sees both sides: a server (worker threads) and one client
 * handle shared by several caller threads, over the soft provider with and
 * without its progress thread, and over TCP.
 *
 * Normal operation: NT caller threads issue, on the same rrr_clnt, a mix of
 * inline echoes, read-chunk sums and write-chunk fills, each with its own
 * byte pattern, and check every byte that comes back. Another thread at
 * the same time issues calls that must time out (the handler sleeps longer
 * than the call's timeout) and asynchronous calls it cancels, checking the
 * status each callback got. Then the client is destroyed and the server
 * stopped while both are quiet.
 *
 * Recovery / failure: a wrong byte, an unexpected status or a callback that
 * ran twice prints what was expected and exits 1; setup failures exit 2.
 * TSan reports (built with SANITIZE=thread, TSAN_OPTIONS=halt_on_error=1
 * exitcode=66 from `make tsan`) end the program with 66.
 *
 * Usage: clnt_svc [iterations per thread] (default 200).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "tests/lib/echo.h"

#define TS_PROG 0x20000098u
#define NT 4
enum { TS_ECHO, TS_SUM, TS_FILL, TS_SLEEP };

static atomic_int failures;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "clnt_svc: " __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                               \
		atomic_fetch_add(&failures, 1);                                                    \
	} while (0)

/* --- server side ---------------------------------------------------------- */

static int h_sum(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;
	uint32_t len, sum = 0;

	(void)r;
	if (rrr_xdr_decode_payload(a, 1u << 20, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	for (unsigned i = 0; i < niov; i++)
		for (size_t j = 0; j < iov[i].iov_len; j++)
			sum += ((uint8_t *)iov[i].iov_base)[j];
	return rrr_xdr_put_u32(s, len) || rrr_xdr_put_u32(s, sum) ? RRR_SVC_SYSTEM_ERR : 0;
}

static int h_fill(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	uint32_t n, seed;
	uint8_t *buf;
	struct iovec out;

	if (rrr_xdr_get_u32(a, &n) || rrr_xdr_get_u32(a, &seed) || n > (1u << 20))
		return RRR_SVC_GARBAGE_ARGS;
	buf = rrr_svc_req_alloc(r, n ? n : 1);
	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	for (uint32_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 7 + seed);
	out = (struct iovec){ buf, n };
	return rrr_xdr_encode_payload(s, &out, 1, n) ? RRR_SVC_SYSTEM_ERR : 0;
}

static int h_sleep(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)r;
	(void)a;
	(void)s;
	usleep(400000); /* far beyond the 30 ms timeout, even under TSan */
	return 0;
}

static const struct rrr_svc_proc procs[] = {
	[TS_ECHO] = { "echo", th_h_echo },
	[TS_SUM] = { "sum", h_sum },
	[TS_FILL] = { "fill", h_fill },
	[TS_SLEEP] = { "sleep", h_sleep },
};

static void *svc_thread(void *arg)
{
	return (void *)(intptr_t)rrr_svc_run(arg);
}

/* --- client side ---------------------------------------------------------- */

struct pay {
	const struct iovec *iov;
	uint32_t len, n, seed;
};

static int enc_pay(struct rrr_xdr *x, const void *a)
{
	const struct pay *p = a;

	return rrr_xdr_encode_payload(x, p->iov, 1, p->len);
}

static int enc_fill(struct rrr_xdr *x, const void *a)
{
	const struct pay *p = a;

	return rrr_xdr_put_u32(x, p->n) || rrr_xdr_put_u32(x, p->seed) ? -EMSGSIZE : 0;
}

struct got {
	uint32_t len, w[2];
	unsigned niov;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	uint8_t *copy;
	uint32_t cap;
};

static int dec_pay(struct rrr_xdr *x, void *r)
{
	struct got *g = r;
	uint32_t off = 0;
	int rc = rrr_xdr_decode_payload(x, g->cap, &g->len, g->iov, &g->niov);

	for (unsigned i = 0; !rc && i < g->niov; i++) {
		if (off + g->iov[i].iov_len > g->cap)
			return -EMSGSIZE;
		memcpy(g->copy + off, g->iov[i].iov_base, g->iov[i].iov_len);
		off += (uint32_t)g->iov[i].iov_len;
	}
	return rc;
}

static int dec_2(struct rrr_xdr *x, void *r)
{
	struct got *g = r;

	return rrr_xdr_get_u32(x, &g->w[0]) || rrr_xdr_get_u32(x, &g->w[1]) ? -EBADMSG : 0;
}

static void call_init(struct rrr_call *c, uint32_t proc)
{
	memset(c, 0, sizeof(*c));
	c->prog = TS_PROG;
	c->vers = 1;
	c->proc = proc;
}

struct run {
	struct rrr_clnt *clnt;
	int iters;
	const char *name;
};

struct worker {
	struct run *run;
	int id;
	uint8_t src[65536], dst[65536];
};

static void one_call(struct worker *w, int i)
{
	struct rrr_clnt *clnt = w->run->clnt;
	uint32_t seed = (uint32_t)(w->id * 37 + i), len, sum = 0;
	struct iovec s = { w->src, 0 }, d = { w->dst, 0 };
	struct pay p = { &s, 0, 0, seed };
	struct got g = { .copy = w->dst, .cap = sizeof(w->dst) };
	struct rrr_call c;
	int rc, op = (w->id + i) % 3;

	len = op == 0 ? 200 + (seed % 1500) : 8192 + (seed * 997) % 40000;
	for (uint32_t j = 0; j < len; j++) {
		w->src[j] = (uint8_t)(j * 13 + seed);
		sum += w->src[j];
	}
	memset(w->dst, 0, sizeof(w->dst));
	s.iov_len = len;
	p.len = len;
	p.n = len;
	call_init(&c, op == 0 ? TS_ECHO : op == 1 ? TS_SUM : TS_FILL);
	c.args = &p;
	c.res = &g;
	if (op == 0) { /* inline both ways */
		c.encode = enc_pay;
		c.decode = dec_pay;
		c.ddp = RRR_DDP_TO_SERVER;
		c.payload = &s;
		c.npayload = 1;
		c.reply_hint = len + 64;
	} else if (op == 1) { /* read chunk */
		c.encode = enc_pay;
		c.decode = dec_2;
		c.ddp = RRR_DDP_TO_SERVER;
		c.payload = &s;
		c.npayload = 1;
	} else { /* write chunk into dst */
		d.iov_len = len;
		c.encode = enc_fill;
		c.decode = dec_pay;
		c.ddp = RRR_DDP_FROM_SERVER;
		c.payload = &d;
		c.npayload = 1;
	}
	rc = rrr_clnt_call(clnt, &c);
	if (rc) {
		FAIL("%s: thread %d call %d (op %d, %u bytes): status %d (%s)", w->run->name, w->id,
		     i, op, len, rc, rrr_last_error());
		return;
	}
	if (op == 0 && (g.len != len || memcmp(w->src, w->dst, len)))
		FAIL("%s: echo %u bytes came back wrong (len %u)", w->run->name, len, g.len);
	if (op == 1 && (g.w[0] != len || g.w[1] != sum))
		FAIL("%s: sum of %u bytes: got len %u sum %u, want %u", w->run->name, len, g.w[0],
		     g.w[1], sum);
	if (op == 2) {
		if (g.len != len)
			FAIL("%s: fill %u bytes: got %u", w->run->name, len, g.len);
		for (uint32_t j = 0; j < len && j < g.len; j++)
			if (w->dst[j] != (uint8_t)(j * 7 + seed)) {
				FAIL("%s: fill byte %u of %u wrong", w->run->name, j, len);
				break;
			}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < w->run->iters && !atomic_load(&failures); i++)
		one_call(w, i);
	return NULL;
}

struct slow {
	struct rrr_call c;
	atomic_int calls, status;
};

static void slow_done(struct rrr_call *call, int status, void *arg)
{
	struct slow *s = arg;

	(void)call;
	atomic_store(&s->status, status);
	atomic_fetch_add(&s->calls, 1);
}

/* Timeouts and cancels, racing the workers on the same handle. */
static void *slow_main(void *arg)
{
	struct run *r = arg;

	for (int i = 0; i < 6 && !atomic_load(&failures); i++) {
		struct slow s = { 0 };
		int rc;

		call_init(&s.c, TS_SLEEP);
		s.c.timeout_ms = 30;
		rc = rrr_clnt_call(r->clnt, &s.c);
		if (rc != -ETIMEDOUT)
			FAIL("%s: a 30 ms call to a 400 ms handler returned %d", r->name, rc);

		call_init(&s.c, TS_SLEEP);
		s.c.timeout_ms = 5000;
		if (rrr_clnt_call_async(r->clnt, &s.c, slow_done, &s)) {
			FAIL("%s: async submit failed: %s", r->name, rrr_last_error());
			continue;
		}
		usleep((useconds_t)(i % 3) * 20000);
		rc = rrr_clnt_cancel(r->clnt, &s.c);
		if (rc && rc != -ENOENT)
			FAIL("%s: cancel returned %d", r->name, rc);
		if (rc == -ENOENT) /* already completed: the callback may still be running */
			for (int k = 0; k < 500 && !atomic_load(&s.calls); k++)
				usleep(1000);
		if (atomic_load(&s.calls) != 1)
			FAIL("%s: callback ran %d times after cancel", r->name, atomic_load(&s.calls));
		else if (atomic_load(&s.status) != -ECANCELED && atomic_load(&s.status) != 0)
			FAIL("%s: cancelled call completed with %d", r->name, atomic_load(&s.status));
	}
	return NULL;
}

static int run_one(const char *name, const char *transport, const char *popts, int iters)
{
	struct rrr_svc_program prog = { TS_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]), NULL };
	static struct worker workers[NT];
	struct rrr_svc_opts so;
	struct rrr_clnt_opts co;
	struct rrr_svc *svc;
	struct run r = { NULL, iters, name };
	pthread_t st, th[NT + 1];
	uint16_t port = 0;
	char portstr[16];
	int rc;

	rrr_svc_opts_init(&so);
	so.nthreads = 3;
	so.provider = "soft";
	so.provider_opts = popts;
	so.max_requests = 8; /* small grant: callers queue for credits */
	if (rrr_svc_create(&so, &svc) || rrr_svc_register(svc, &prog))
		goto setup;
	rc = strcmp(transport, "tcp") == 0 ? rrr_svc_listen_tcp(svc, "127.0.0.1", "0", &port)
					   : rrr_svc_listen_rdma(svc, "127.0.0.1", "0", &port);
	if (rc || pthread_create(&st, NULL, svc_thread, svc))
		goto setup;
	snprintf(portstr, sizeof(portstr), "%u", port);
	rrr_clnt_opts_init(&co);
	co.transport = transport;
	co.provider_opts = popts;
	co.host = "127.0.0.1";
	co.port = portstr;
	co.timeout_ms = 60000;
	co.connect_timeout_ms = 20000;
	if (rrr_clnt_create(&co, &r.clnt))
		goto setup;
	for (int t = 0; t < NT; t++) {
		workers[t].run = &r;
		workers[t].id = t;
		pthread_create(&th[t], NULL, worker_main, &workers[t]);
	}
	pthread_create(&th[NT], NULL, slow_main, &r);
	for (int t = 0; t <= NT; t++)
		pthread_join(th[t], NULL);
	rrr_clnt_destroy(r.clnt);
	rrr_svc_stop(svc);
	pthread_join(st, NULL);
	rrr_svc_destroy(svc);
	printf("clnt_svc: %s: %d calls/thread x %d threads + timeouts/cancels: %s\n", name, iters,
	       NT, atomic_load(&failures) ? "FAILED" : "ok");
	return atomic_load(&failures) ? 1 : 0;
setup:
	fprintf(stderr, "clnt_svc: %s: setup failed: %s\n", name, rrr_last_error());
	return 2;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 200;
	int rc;

	setvbuf(stdout, NULL, _IONBF, 0);
	rc = run_one("soft", "rdma", "progress_thread=0", iters);
	if (!rc)
		rc = run_one("soft+progress_thread", "rdma", "progress_thread=1", iters);
	if (!rc)
		rc = run_one("tcp", "tcp", NULL, iters);
	return rc;
}
