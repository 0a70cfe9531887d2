/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/parallel.c - the calls of one connection use several cores:
 * two slow calls (each handler 200 ms) sent at once on one RDMA connection
 * run on two worker threads at the same time; the server counts the
 * hand-off (offloaded). A slow call alone on its connection is handed off
 * too: a handler that waits for a later call of the same connection (HOLD
 * until RELEASE) is released, which a worker blocked in it could not do.
 * Quick calls stay where they arrive.
 * Each handler counts the handlers running beside it, so that the overlap
 * is asserted directly, never inferred from how long both took (a loaded
 * machine can stretch any time).
 * The server runs in a forked process over the soft provider with two
 * workers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "../test_wait.h"
#include "helpers/calls.h"

#define PA_PROG 0x20000096u
enum { PA_NULL, PA_SLOW, PA_STAT, PA_HOLD, PA_RELEASE };

/* --- server process ------------------------------------------------------- */

static struct rrr_svc *child_svc;

/* handlers in h_slow now; handlers that started while another ran */
static atomic_uint running, overlapped;

/* result: the thread that ran it. Its work takes 200 ms (a slow disk, a
 * back end): the handler's own duration under test, not a wait for anything
 * (so a fixed sleep), and it notes how many handlers ran beside it. */
static int h_slow(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct timespec ts = {0, 200 * 1000 * 1000};
	(void)r;
	(void)a;
	if (atomic_fetch_add(&running, 1) > 0)
		atomic_fetch_add(&overlapped, 1);
	nanosleep(&ts, NULL);
	atomic_fetch_sub(&running, 1);
	return rrr_xdr_put_u32(s, (uint32_t)syscall(SYS_gettid)) ? -EIO : 0;
}

/* result: the server's offloaded counter, the handlers that overlapped */
static int h_stat(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct rrr_xprt_stats st;

	(void)r;
	(void)a;
	rrr_svc_stats(child_svc, &st);
	return rrr_xdr_put_u32(s, (uint32_t)st.offloaded) ||
			   rrr_xdr_put_u32(s, atomic_load(&overlapped))
		   ? -EIO
		   : 0;
}

static atomic_bool released;

/* result: 1 when RELEASE came within 10 s, else 0 (a bounded wait for
 * another call, as a lock handler waits for a holder); then 20 ms of work,
 * so that the procedure is timed as slow however soon RELEASE came */
static int h_hold(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct timespec ts = {0, 1000 * 1000}, work = {0, 20 * 1000 * 1000};
	uint32_t got;
	int i;

	(void)r;
	(void)a;
	for (i = 0; i < 10000 && !atomic_load(&released); i++)
		nanosleep(&ts, NULL);
	got = atomic_exchange(&released, false);
	nanosleep(&work, NULL);
	return rrr_xdr_put_u32(s, got) ? -EIO : 0;
}

static int h_release(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)r;
	(void)a;
	(void)s;
	atomic_store(&released, true);
	return 0;
}

static const struct rrr_svc_proc procs[] = {
    [PA_NULL] = {"null", tc_h_null},
    [PA_SLOW] = {"slow", h_slow},
    [PA_STAT] = {"stat", h_stat},
    [PA_HOLD] = {"hold", h_hold},
    [PA_RELEASE] = {"release", h_release},
};

static void child_main(int wfd, const void *arg)
{
	struct rrr_svc_program prog = {PA_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]), NULL};
	struct rrr_svc_opts o;
	uint16_t port = 0;

	(void)arg;
	rrr_svc_opts_init(&o);
	o.nthreads = 2;
	o.wait_mode = RRR_WAIT_EVENT;
	if (rrr_svc_create(&o, &child_svc) || rrr_svc_register(child_svc, &prog) ||
	    rrr_svc_listen_rdma(child_svc, "127.0.0.1", "0", &port)) {
		fprintf(stderr, "child server: %s\n", rrr_last_error());
		_exit(2);
	}
	tc_child_serve(child_svc, wfd, &port, sizeof(port));
}

/* --- client side ---------------------------------------------------------- */

static pid_t child;
static struct rrr_clnt *clnt;

static void init_rdma(void)
{
	struct rrr_clnt_opts o;
	uint16_t port;
	char ps[16];

	child = tc_fork_server(child_main, NULL, &port, sizeof(port));
	snprintf(ps, sizeof(ps), "%u", port);
	rrr_clnt_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = ps;
	o.timeout_ms = 10000;
	o.connect_timeout_ms = 3000;
	cr_assert_eq(rrr_clnt_create(&o, &clnt), 0, "client: %s", rrr_last_error());
}

static void stop_all(void)
{
	rrr_clnt_destroy(clnt);
	clnt = NULL;
	tc_stop_child(&child);
}

TestSuite(parallel, .init = init_rdma, .fini = stop_all, .timeout = 60);

static int dec_u32(struct rrr_xdr *x, void *r)
{
	return rrr_xdr_get_u32(x, r) ? -EBADMSG : 0;
}

struct pending {
	atomic_int slot, done; /* done counts after the result is stored */
	int rc[2];
};

static void slow_done(struct rrr_call *c, int rc, void *arg)
{
	struct pending *p = arg;
	int i = atomic_fetch_add(&p->slot, 1);

	(void)c;
	if (i < 2)
		p->rc[i] = rc;
	atomic_fetch_add(&p->done, 1);
}

static int dec_2u32(struct rrr_xdr *x, void *r)
{
	uint32_t *w = r;

	return rrr_xdr_get_u32(x, &w[0]) || rrr_xdr_get_u32(x, &w[1]) ? -EBADMSG : 0;
}

/* The server's offloaded counter; *@overlap_out (when set): how many slow
 * handlers so far started while another was running. */
static uint32_t offloaded_now2(uint32_t *overlap_out)
{
	struct rrr_call c;
	uint32_t w[2] = {0, 0};

	tc_call_init(&c, PA_PROG, PA_STAT);
	tc_codec(&c, NULL, NULL, dec_2u32, w);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	if (overlap_out)
		*overlap_out = w[1];
	return w[0];
}

static uint32_t offloaded_now(void)
{
	return offloaded_now2(NULL);
}

/* Two slow calls at once, both completed. */
static void two_slow(uint32_t tid[2])
{
	struct rrr_call c[2];
	struct pending p = {0};

	for (int i = 0; i < 2; i++) {
		tc_call_init(&c[i], PA_PROG, PA_SLOW);
		tc_codec(&c[i], NULL, NULL, dec_u32, &tid[i]);
		cr_assert_eq(rrr_clnt_call_async(clnt, &c[i], slow_done, &p), 0, "%s",
			     rrr_last_error());
	}
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&p.done) >= 2, 5000), "both calls completed");
	cr_assert_eq(p.rc[0], 0);
	cr_assert_eq(p.rc[1], 0);
}

Test(parallel, two_slow_calls_of_one_connection_run_at_once)
{
	uint32_t tid[2] = {0, 0}, ov0 = 0, ov1 = 0, ov2 = 0;
	uint32_t before = offloaded_now2(&ov0);

	two_slow(tid);
	cr_assert_neq(tid[0], tid[1], "two workers ran them (threads %u and %u)", tid[0], tid[1]);
	cr_assert_geq(offloaded_now2(&ov1), before + 1, "the hand-off is counted");
	cr_assert_eq(ov1, ov0 + 1, "the second handler started while the first ran");
	/* and again, now that the procedure is known to be slow */
	two_slow(tid);
	cr_assert_neq(tid[0], tid[1]);
	(void)offloaded_now2(&ov2);
	cr_assert_eq(ov2, ov1 + 1, "they overlapped again");
}

/* HOLD alone on the connection, RELEASE sent while it waits: HOLD's
 * result, 1 when released. */
static uint32_t hold_release(void)
{
	struct rrr_call c, q;
	struct pending p = {0};
	uint32_t got = 0;

	tc_call_init(&c, PA_PROG, PA_HOLD);
	tc_codec(&c, NULL, NULL, dec_u32, &got);
	cr_assert_eq(rrr_clnt_call_async(clnt, &c, slow_done, &p), 0, "%s", rrr_last_error());
	tc_call_init(&q, PA_PROG, PA_RELEASE);
	cr_assert_eq(rrr_clnt_call(clnt, &q), 0, "%s", q.error);
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&p.done) >= 1, 15000), "HOLD completed");
	cr_assert_eq(p.rc[0], 0);
	return got;
}

/* A slow call sent alone is handed off as well, whether its procedure is
 * new or known to be slow: the connection's worker goes on receiving, so
 * a later call that the slow handler waits for gets through. */
Test(parallel, a_lone_slow_call_leaves_its_connection_free)
{
	uint32_t before = offloaded_now();

	cr_assert_eq(hold_release(), 1, "RELEASE reached the server while HOLD (new) ran");
	cr_assert_eq(hold_release(), 1, "RELEASE reached the server while HOLD (slow) ran");
	cr_assert_geq(offloaded_now(), before + 2, "both HOLDs were handed off");
}

/* A quick procedure, once timed, runs where it arrives. */
Test(parallel, quick_calls_stay_on_their_worker)
{
	struct rrr_call q;
	uint32_t before;

	tc_call_init(&q, PA_PROG, PA_NULL);
	cr_assert_eq(rrr_clnt_call(clnt, &q), 0, "%s", q.error); /* now timed */
	before = offloaded_now();
	for (int i = 0; i < 20; i++) {
		tc_call_init(&q, PA_PROG, PA_NULL);
		cr_assert_eq(rrr_clnt_call(clnt, &q), 0, "%s", q.error);
	}
	cr_assert_eq(offloaded_now(), before, "no quick call was handed off");
}
