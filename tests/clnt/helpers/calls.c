/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/calls.c - call building blocks and the forked server
 * process of the client tests (see calls.h).
 */
#include "calls.h"
#include "../../test_wait.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Under ASan a server process checks for leaks before it exits (its
 * status says, tc_stop_child_status); elsewhere nothing to check. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define TC_LEAK_CHECK() __lsan_do_recoverable_leak_check()
#else
#define TC_LEAK_CHECK() 0
#endif
#ifdef RRR_UNDER_SANITIZER
#define TC_STOP_MS 20000
#else
#define TC_STOP_MS 3000
#endif

void tc_call_init(struct rrr_call *c, uint32_t prog, uint32_t proc)
{
	memset(c, 0, sizeof(*c));
	c->prog = prog;
	c->vers = 1;
	c->proc = proc;
}

void tc_codec(struct rrr_call *c, rrr_xdr_encode_fn enc, const void *args, rrr_xdr_decode_fn dec,
	      void *res)
{
	c->encode = enc;
	c->args = args;
	c->decode = dec;
	c->res = res;
}

void tc_payload(struct rrr_call *c, enum rrr_ddp_dir ddp, const struct iovec *iov, unsigned n)
{
	c->ddp = ddp;
	c->payload = iov;
	c->npayload = n;
}

int tc_enc_u32(struct rrr_xdr *x, const void *a)
{
	return rrr_xdr_put_u32(x, *(const uint32_t *)a);
}

int tc_enc_pay(struct rrr_xdr *x, const void *a)
{
	const struct tc_pay *p = a;

	return rrr_xdr_encode_payload(x, p->iov, p->niov, p->len);
}

int tc_enc_pay_tag(struct rrr_xdr *x, const void *a)
{
	const struct tc_pay *p = a;
	int rc = rrr_xdr_encode_payload(x, p->iov, p->niov, p->len);

	return rc ? rc : rrr_xdr_put_u32(x, p->tag);
}

int tc_dec_pay(struct rrr_xdr *x, void *r)
{
	struct tc_got *g = r;
	int rc = rrr_xdr_decode_payload(x, 16u << 20, &g->len, g->iov, &g->niov);

	if (!rc && g->copy) {
		uint32_t off = 0;

		for (unsigned i = 0; i < g->niov; i++) {
			memcpy(g->copy + off, g->iov[i].iov_base, g->iov[i].iov_len);
			off += (uint32_t)g->iov[i].iov_len;
		}
	}
	return rc;
}

int tc_dec_opaque(struct rrr_xdr *x, void *r)
{
	struct tc_got *g = r;

	return rrr_xdr_get_opaque(x, g->copy, 16u << 20, &g->len);
}

int tc_dec_3u32(struct rrr_xdr *x, void *r)
{
	struct tc_got *g = r;

	for (int i = 0; i < 3; i++)
		if (rrr_xdr_get_u32(x, &g->w[i]))
			return -EBADMSG;
	return 0;
}

void tc_once_done(struct rrr_call *call, int status, void *arg)
{
	struct tc_once *o = arg;

	(void)call;
	atomic_store(&o->status, status);
	atomic_fetch_add(&o->runs, 1);
}

void tc_run_threads(unsigned n, void *(*fn)(void *), void *arg, size_t stride)
{
	pthread_t th[n];

	for (unsigned t = 0; t < n; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, fn, (char *)arg + t * stride), 0);
	for (unsigned t = 0; t < n; t++) {
		void *rv;

		pthread_join(th[t], &rv);
		cr_assert_null(rv, "thread %u failed", t);
	}
}

void tc_tally_add(struct tc_tally *t, bool good)
{
	if (good)
		atomic_fetch_add(&t->ok, 1);
	atomic_fetch_add(&t->done, 1);
}

void tc_run_tallied(struct tc_tally *t, unsigned n, void *(*fn)(void *), void *arg, size_t stride,
		    int total)
{
	atomic_store(&t->ok, 0);
	atomic_store(&t->done, 0);
	tc_run_threads(n, fn, arg, stride);
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&t->done) == total, 30000), "every call completed");
	cr_assert_eq(atomic_load(&t->ok), total);
}

uint32_t tc_iov_sum(const struct iovec *iov, unsigned n)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		for (size_t j = 0; j < iov[i].iov_len; j++)
			sum += ((const uint8_t *)iov[i].iov_base)[j];
	return sum;
}

int tc_answer_pattern(struct rrr_svc_req *r, struct rrr_xdr *s, uint32_t n, bool ddp)
{
	uint8_t *buf = rrr_svc_req_alloc(r, n ? n : 1);
	struct iovec out = {buf, n};

	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	for (uint32_t i = 0; i < n; i++)
		buf[i] = ddp ? (uint8_t)(i * 7 + 3) : (uint8_t)(i * 5 + 1);
	if (ddp)
		return rrr_xdr_encode_payload(s, &out, 1, n) ? RRR_SVC_SYSTEM_ERR : 0;
	return rrr_xdr_put_opaque(s, buf, n) ? RRR_SVC_SYSTEM_ERR : 0;
}

int tc_h_null(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)r;
	(void)a;
	(void)s;
	return 0;
}

int tc_h_drop(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)r;
	(void)a;
	(void)s;
	return RRR_SVC_DROP;
}

pid_t tc_fork_server(void (*child_main)(int wfd, const void *arg), const void *arg, void *ports,
		     size_t len)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		alarm(60); /* never outlive a broken test */
		child_main(p[1], arg);
		_exit(4); /* child_main ends in tc_child_serve() */
	}
	close(p[1]);
	cr_assert_eq(read(p[0], ports, len), (ssize_t)len, "server process did not start");
	close(p[0]);
	return pid;
}

static struct rrr_svc *serving;

static void on_term(int sig)
{
	(void)sig;
	if (serving)
		rrr_svc_stop(serving);
}

_Noreturn void tc_child_serve(struct rrr_svc *svc, int wfd, const void *ports, size_t len)
{
	serving = svc;
	signal(SIGTERM, on_term);
	if (write(wfd, ports, len) != (ssize_t)len)
		_exit(3);
	close(wfd);
	rrr_svc_run(svc);
	rrr_svc_destroy(svc);
	_exit(TC_LEAK_CHECK() ? 5 : 0);
}

_Noreturn void tc_child_fail(void)
{
	fprintf(stderr, "child server: %s\n", rrr_last_error());
	_exit(2);
}

struct rrr_svc *tc_child_svc(const struct rrr_svc_opts *o, const struct rrr_svc_program *prog)
{
	struct rrr_svc *svc;

	if (rrr_svc_create(o, &svc) || rrr_svc_register(svc, prog))
		tc_child_fail();
	return svc;
}

_Noreturn void tc_child_serve_both(struct rrr_svc *svc, int wfd)
{
	uint16_t ports[2] = {0, 0};

	if (rrr_svc_listen_rdma(svc, "127.0.0.1", "0", &ports[0]) ||
	    rrr_svc_listen_tcp(svc, "127.0.0.1", "0", &ports[1]))
		tc_child_fail();
	tc_child_serve(svc, wfd, ports, sizeof(ports));
}

struct program_args {
	const struct rrr_svc_program *prog;
	unsigned nthreads;
};

static void program_main(int wfd, const void *arg)
{
	const struct program_args *pa = arg;
	struct rrr_svc_opts o;

	rrr_svc_opts_init(&o);
	o.nthreads = pa->nthreads;
	o.wait_mode = RRR_WAIT_EVENT;
	tc_child_serve_both(tc_child_svc(&o, pa->prog), wfd);
}

pid_t tc_fork_program(const struct rrr_svc_program *prog, unsigned nthreads, uint16_t ports[2])
{
	struct program_args pa = {prog, nthreads};

	return tc_fork_server(program_main, &pa, ports, 2 * sizeof(ports[0]));
}

void tc_connect(struct rrr_clnt **clnt, const char *transport, const uint16_t ports[2],
		const char *provider_opts)
{
	struct rrr_clnt_opts o;
	char ps[16];

	snprintf(ps, sizeof(ps), "%u", ports[strcmp(transport, "tcp") == 0]);
	rrr_clnt_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = ps;
	o.transport = transport;
	o.provider_opts = provider_opts;
	o.timeout_ms = 10000;
	o.connect_timeout_ms = 3000;
	cr_assert_eq(rrr_clnt_create(&o, clnt), 0, "client: %s", rrr_last_error());
}

void tc_disconnect_stop(struct rrr_clnt **clnt, pid_t *child)
{
	rrr_clnt_destroy(*clnt);
	*clnt = NULL;
	tc_stop_child(child);
}

int tc_stop_child_status(pid_t *pid)
{
	int st;

	if (*pid <= 0)
		return -1;
	kill(*pid, SIGTERM);
	/* a sanitizer's exit (its reports, its leak check) takes a while */
	if (TEST_WAIT_UNTIL(waitpid(*pid, &st, WNOHANG) == *pid, TC_STOP_MS)) {
		*pid = 0;
		return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	tc_kill_child(pid);
	return -1;
}

void tc_stop_child(pid_t *pid)
{
	(void)tc_stop_child_status(pid);
}

void tc_kill_child(pid_t *pid)
{
	int st;

	kill(*pid, SIGKILL);
	waitpid(*pid, &st, 0);
	*pid = 0;
}
