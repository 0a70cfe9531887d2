/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/parallel.c - the calls of one connection use several cores,
 * over RDMA (suite parallel) and over TCP (parallel_tcp), the same cases:
 * two slow calls (each handler 200 ms) sent at once on one connection run
 * on two worker threads at the same time; the server counts the hand-off
 * (offloaded). A slow call alone on its connection is handed off too: a
 * handler that waits for a later call of the same connection (HOLD until
 * RELEASE) is released, which a worker blocked in it could not do. Quick
 * calls stay where they arrive.
 * Each handler counts the handlers running beside it, so that the overlap
 * is asserted directly, never inferred from how long both took (a loaded
 * machine can stretch any time).
 * Over TCP also: a connection its client closes (reset, or an orderly
 * close) while its handler runs on another worker costs nothing else; the
 * handler returns, the server serves on and exits cleanly (under ASan:
 * without a leak or a bad access, tc_child_serve checks).
 * The server runs in a forked process over the soft provider with three
 * workers: a worker that has just run a handed-off handler may not be
 * waiting again yet on a loaded host, and a third one is then idle.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/oncrpc.h>
#include <rrr/server.h>

#include "../test_wait.h"
#include "helpers/calls.h"

#define PA_PROG 0x20000096u
enum { PA_NULL, PA_SLOW, PA_STAT, PA_HOLD, PA_RELEASE, PA_GONE };

/* --- server process ------------------------------------------------------- */

static struct rrr_svc *child_svc;

/* handlers in h_slow now; handlers that started while another ran; HOLDs
 * and GONEs running now */
static atomic_uint running, overlapped, holding;

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

/* result: the server's offloaded counter, the handlers that overlapped,
 * the HOLDs running, the server's disconnects counter */
static int h_stat(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct rrr_xprt_stats st;

	(void)r;
	(void)a;
	rrr_svc_stats(child_svc, &st);
	return rrr_xdr_put_u32(s, (uint32_t)st.offloaded) ||
			   rrr_xdr_put_u32(s, atomic_load(&overlapped)) ||
			   rrr_xdr_put_u32(s, atomic_load(&holding)) ||
			   rrr_xdr_put_u32(s, (uint32_t)st.disconnects)
		   ? -EIO
		   : 0;
}

static atomic_bool released;

/* result: 1 when RELEASE came within 10 s, else 0 (a bounded wait for
 * another call, as a lock handler waits for a holder); then 20 ms of work,
 * so that the procedure is timed as slow however soon RELEASE came */
static int h_hold(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct timespec work = {0, 20 * 1000 * 1000};
	uint32_t got;

	(void)r;
	(void)a;
	atomic_fetch_add(&holding, 1);
	(void)TEST_WAIT_UNTIL(atomic_load(&released), 10000);
	got = atomic_exchange(&released, false);
	nanosleep(&work, NULL); /* the handler's own work, timed: not a wait */
	atomic_fetch_sub(&holding, 1);
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

/* result: 1 when the server's connections changed in number within 10 s
 * (one closed, or a new one accepted), else 0: a handler that returns
 * only once its connection's close has been seen, or a new connection
 * made after it */
static int h_gone(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct rrr_svc_limit_stats ls;
	uint32_t conns;
	bool moved;

	(void)r;
	(void)a;
	rrr_svc_limit_stats(child_svc, &ls);
	conns = ls.conns;
	atomic_fetch_add(&holding, 1);
	moved = TEST_WAIT_UNTIL((rrr_svc_limit_stats(child_svc, &ls), ls.conns != conns), 10000);
	atomic_fetch_sub(&holding, 1);
	return rrr_xdr_put_u32(s, moved) ? -EIO : 0;
}

static const struct rrr_svc_proc procs[] = {
    [PA_NULL] = {"null", tc_h_null},
    [PA_SLOW] = {"slow", h_slow},
    [PA_STAT] = {"stat", h_stat},
    [PA_HOLD] = {"hold", h_hold},
    [PA_RELEASE] = {"release", h_release},
    [PA_GONE] = {"gone", h_gone},
};

static void child_main(int wfd, const void *arg)
{
	struct rrr_svc_program prog = {PA_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]), NULL};
	struct rrr_svc_opts o;

	(void)arg;
	rrr_svc_opts_init(&o);
	o.nthreads = 3;
	o.wait_mode = RRR_WAIT_EVENT;
	child_svc = tc_child_svc(&o, &prog);
	tc_child_serve_both(child_svc, wfd);
}

/* --- client side ---------------------------------------------------------- */

static pid_t child;
static uint16_t ports[2]; /* the ports the child listens on: RDMA, TCP */
static struct rrr_clnt *clnt;

/* Start the server and connect to it over @transport ("rdma" or "tcp"). */
static void start(const char *transport)
{
	child = tc_fork_server(child_main, NULL, ports, sizeof(ports));
	tc_connect(&clnt, transport, ports, NULL);
}

static void init_rdma(void)
{
	start("rdma");
}

static void init_tcp(void)
{
	start("tcp");
}

static void stop_all(void)
{
	tc_disconnect_stop(&clnt, &child);
}

TestSuite(parallel, .init = init_rdma, .fini = stop_all, .timeout = 60);
TestSuite(parallel_tcp, .init = init_tcp, .fini = stop_all, .timeout = 60);

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

/* What PA_STAT answers. */
struct pa_stat {
	uint32_t offloaded, overlapped, holding, disconnects;
};

static int dec_stat(struct rrr_xdr *x, void *r)
{
	struct pa_stat *st = r;

	return rrr_xdr_get_u32(x, &st->offloaded) || rrr_xdr_get_u32(x, &st->overlapped) ||
			   rrr_xdr_get_u32(x, &st->holding) ||
			   rrr_xdr_get_u32(x, &st->disconnects)
		   ? -EBADMSG
		   : 0;
}

static struct pa_stat stat_now(void)
{
	struct rrr_call c;
	struct pa_stat st = {0};

	tc_call_init(&c, PA_PROG, PA_STAT);
	tc_codec(&c, NULL, NULL, dec_stat, &st);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	return st;
}

static uint32_t offloaded_now(void)
{
	return stat_now().offloaded;
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

static void two_slow_calls_run_at_once(void)
{
	uint32_t tid[2] = {0, 0};
	struct pa_stat s0 = stat_now(), s1, s2;

	two_slow(tid);
	cr_assert_neq(tid[0], tid[1], "two workers ran them (threads %u and %u)", tid[0], tid[1]);
	s1 = stat_now();
	cr_assert_geq(s1.offloaded, s0.offloaded + 1, "the hand-off is counted");
	cr_assert_eq(s1.overlapped, s0.overlapped + 1,
		     "the second handler started while the first ran");
	/* and again, now that the procedure is known to be slow */
	two_slow(tid);
	cr_assert_neq(tid[0], tid[1]);
	s2 = stat_now();
	cr_assert_eq(s2.overlapped, s1.overlapped + 1, "they overlapped again");
}

Test(parallel, two_slow_calls_of_one_connection_run_at_once)
{
	two_slow_calls_run_at_once();
}

Test(parallel_tcp, two_slow_calls_of_one_connection_run_at_once)
{
	two_slow_calls_run_at_once();
}

/* HOLD alone on the connection, RELEASE sent while it waits: HOLD's
 * result, 1 when released. RELEASE goes once HOLD is seen running, by a
 * STAT on the same connection (which gets through as well). */
static uint32_t hold_release(void)
{
	struct rrr_call c, q;
	struct pending p = {0};
	uint32_t got = 0;

	tc_call_init(&c, PA_PROG, PA_HOLD);
	tc_codec(&c, NULL, NULL, dec_u32, &got);
	cr_assert_eq(rrr_clnt_call_async(clnt, &c, slow_done, &p), 0, "%s", rrr_last_error());
	cr_assert(TEST_WAIT_UNTIL(stat_now().holding == 1, 10000), "HOLD runs, STAT gets through");
	tc_call_init(&q, PA_PROG, PA_RELEASE);
	cr_assert_eq(rrr_clnt_call(clnt, &q), 0, "%s", q.error);
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&p.done) >= 1, 15000), "HOLD completed");
	cr_assert_eq(p.rc[0], 0);
	return got;
}

/* A slow call sent alone is handed off as well, whether its procedure is
 * new or known to be slow: the connection's worker goes on receiving, so
 * a later call that the slow handler waits for gets through. */
static void lone_slow_call_leaves_its_connection_free(void)
{
	uint32_t before = offloaded_now();

	cr_assert_eq(hold_release(), 1, "RELEASE reached the server while HOLD (new) ran");
	cr_assert_eq(hold_release(), 1, "RELEASE reached the server while HOLD (slow) ran");
	cr_assert_geq(offloaded_now(), before + 2, "both HOLDs were handed off");
}

Test(parallel, a_lone_slow_call_leaves_its_connection_free)
{
	lone_slow_call_leaves_its_connection_free();
}

Test(parallel_tcp, a_lone_slow_call_leaves_its_connection_free)
{
	lone_slow_call_leaves_its_connection_free();
}

/* A quick procedure, once timed, runs where it arrives. */
static void quick_calls_stay(void)
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

Test(parallel, quick_calls_stay_on_their_worker)
{
	quick_calls_stay();
}

Test(parallel_tcp, quick_calls_stay_on_their_worker)
{
	quick_calls_stay();
}

/* --- a TCP connection closed while its handler runs elsewhere ------------- */

/* Send the call record of procedure @proc (no arguments, AUTH_NONE) with
 * @xid on @fd. */
static void raw_call(int fd, uint32_t xid, uint32_t proc)
{
	uint32_t w[11] = {RRR_RPC_RM_LAST | 40u, xid, RRR_RPC_CALL, RRR_RPC_VERS, PA_PROG, 1, proc,
			  RRR_AUTH_NONE, 0, RRR_AUTH_NONE, 0};

	for (unsigned i = 0; i < 11; i++)
		w[i] = htonl(w[i]);
	cr_assert_eq(send(fd, w, sizeof(w), MSG_NOSIGNAL), (ssize_t)sizeof(w));
}

/* Read one reply record from @fd (5 s at most): its xid, and up to @nres
 * words of its results into @res (an accepted, successful reply). */
static uint32_t raw_reply(int fd, uint32_t *res, unsigned nres)
{
	uint32_t buf[64];
	size_t have = 0, want = 8;

	while (have < want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		cr_assert_eq(poll(&p, 1, 5000), 1, "a reply came");
		n = recv(fd, (uint8_t *)buf + have, want - have, 0);
		cr_assert_gt(n, 0, "a reply came");
		have += (size_t)n;
		if (want == 8 && have >= 4) {
			want = 4 + (ntohl(buf[0]) & RRR_RPC_RM_LEN_MASK);
			cr_assert_leq(want, sizeof(buf));
		}
	}
	/* marker, xid, REPLY, MSG_ACCEPTED, verifier (2), SUCCESS, results */
	for (unsigned i = 0; i < nres; i++) {
		cr_assert_geq(have, 4 * (8 + i));
		cr_assert_eq(ntohl(buf[6]), RRR_RPC_SUCCESS);
		res[i] = ntohl(buf[7 + i]);
	}
	return ntohl(buf[1]);
}

static int raw_connect(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(ports[1])};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	return fd;
}

/* PA_STAT's "running now" asked on @fd itself; asserts the answer came. */
static uint32_t raw_holding(int fd)
{
	static uint32_t xid = 100;
	uint32_t w[4];

	raw_call(fd, ++xid, PA_STAT);
	cr_assert_eq(raw_reply(fd, w, 4), xid);
	return w[2];
}

/* GONE on a connection of its own; the connection answers STAT while GONE
 * runs (so GONE runs on another worker), then its client closes it: by a
 * reset when @reset (GONE returns once the server has closed it), else
 * in order (GONE returns once a new connection comes). */
static void close_while_away(bool reset)
{
	struct pa_stat st = stat_now();
	int fd = raw_connect();

	raw_call(fd, 1, PA_GONE);
	cr_assert(TEST_WAIT_UNTIL(raw_holding(fd) == 1, 10000),
		  "GONE runs while its connection is served");
	if (reset) {
		struct linger l = {.l_onoff = 1, .l_linger = 0};

		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	}
	close(fd);
	if (!reset) {
		fd = raw_connect();
		raw_call(fd, 2, PA_NULL);
		cr_assert_eq(raw_reply(fd, NULL, 0), 2u);
		close(fd);
	}
	cr_assert(TEST_WAIT_UNTIL(stat_now().holding == 0, 15000), "GONE returned");
	cr_assert(TEST_WAIT_UNTIL(stat_now().disconnects >= st.disconnects + 1, 5000),
		  "the connection is gone");
}

Test(parallel_tcp, a_connection_closed_while_its_handler_runs_elsewhere_is_released)
{
	int fd, status;

	close_while_away(true);
	close_while_away(false);
	/* the server serves on, new connections too */
	fd = raw_connect();
	raw_call(fd, 7, PA_NULL);
	cr_assert_eq(raw_reply(fd, NULL, 0), 7u);
	close(fd);
	(void)offloaded_now();
	rrr_clnt_destroy(clnt);
	clnt = NULL;
	status = tc_stop_child_status(&child);
#if defined(__SANITIZE_THREAD__)
	/* under TSan the SIGTERM reaches the server while its main thread
	 * sleeps in epoll_wait, and TSan holds the handler back until that
	 * thread makes another call it intercepts, which nothing prompts
	 * here: the server is killed at the bound, and its exit status says
	 * nothing (the leak check it is for is ASan's) */
	(void)status;
	return;
#endif
	cr_assert_eq(status, 0, "the server exited cleanly (status %d; 5: it leaked, under ASan; -1: killed)", status);
}
