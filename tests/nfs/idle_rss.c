/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/idle_rss.c - what an idle connection costs rrr-server, by RSS
 * (VmRSS of /proc/PID/status), and how many it holds, with real processes
 * on loopback: this test opens NCONN soft-RDMA connections (MPA and RTR
 * done, nothing sent) and NCONN TCP connections from 100 source addresses
 * (127.10.0.x, helpers/srcaddr.c) to one server with the default limits
 * and an fd limit of 4,096 (6 x NCONN + 1,024 for more), holds them all,
 * and asserts:
 *  - every connection is accepted: more soft-RDMA connections than the 442
 *    that a fixed STag table of 65,536 entries allowed before, and TCP
 *    connections beside them (max_conns comes from the fd limit, 3,712,
 *    and descriptors are counted: 2 per soft-RDMA connection, 1 per TCP);
 *  - an idle soft-RDMA connection holds at most 2 descriptors (socket and
 *    CQ epoll set: no eventfd until its CQ is first notified), a TCP one 1;
 *  - the server's RSS grew by at most 256 KiB per soft-RDMA connection and
 *    64 KiB per TCP connection (before the send queue was sized from the
 *    credits, an idle soft-RDMA connection cost about 1.2 MiB: a
 *    4,096-entry send queue and its completion queue, written once at
 *    creation);
 *  - a client that connects beside them is served, in well under a second.
 * RRR_IDLE_CONNS=N in the environment holds N of each instead (the server's
 * fd limit follows; the test's own must allow ~10 per pair).
 *
 * Accepts are observed, not waited for: rrr_clnt_create() returns once the
 * RDMA connection is established, and a NULL call on the last TCP client
 * answers only after the server's accept thread took every connection
 * queued before it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <rrr/client.h>

#include "bench/bench_common.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/srcaddr.h"

#define NCONN_DEF 500u

/* Sanitizers slow everything down and their allocators keep freed memory
 * and shadow it: time bounds scale, RSS says nothing there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(RRR_UNDER_SANITIZER)
#define SLOW 4.0
#define RSS_MEANINGFUL 0
#else
#define SLOW 1.0
#define RSS_MEANINGFUL 1
#endif

static struct th_server srv;
static unsigned NCONN;
static struct rrr_clnt **cl;


static void teardown(void)
{
	th_src_addr(NULL);
	for (unsigned i = 0; cl && i < 2 * NCONN + 1; i++)
		if (cl[i]) {
			rrr_clnt_destroy(cl[i]);
			cl[i] = NULL;
		}
	free(cl);
	cl = NULL;
	th_cleanup(&srv);
}

TestSuite(nfs_idle_rss, .fini = teardown, .timeout = 180);

/* descriptors process @pid holds */
static long open_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	long n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_one(unsigned i, const char *transport, unsigned port)
{
	struct rrr_clnt_opts o;
	char src[32], p[16];

	snprintf(src, sizeof(src), "127.10.0.%u", 1 + i % 100);
	snprintf(p, sizeof(p), "%u", port);
	th_src_addr(src);
	rrr_clnt_opts_init(&o);
	o.transport = transport;
	o.host = "127.0.0.1";
	o.port = p;
	o.connect_timeout_ms = 20000;
	return rrr_clnt_create(&o, &cl[i + (transport[0] == 't' ? NCONN : 0)]);
}

static int null_call(struct rrr_clnt *c)
{
	struct rrr_call call;

	memset(&call, 0, sizeof(call));
	call.prog = 100003;
	call.vers = 3;
	call.proc = 0;
	call.timeout_ms = 20000;
	return rrr_clnt_call(c, &call);
}

Test(nfs_idle_rss, idle_connections_cost_little)
{
	static const char *const extra[] = {"--idle-timeout", "600000", NULL};
	struct rlimit rl;
	char p[512];
	long r0, r1, r2, f0, f1, f2;
	double per_rdma, per_tcp;

	if (!th_prog("rrr-server", p, sizeof(p)))
		cr_skip_test("RRR_BUILD unset or programs not built (run through make test-unit)");
	NCONN = getenv("RRR_IDLE_CONNS") ? (unsigned)strtoul(getenv("RRR_IDLE_CONNS"), NULL, 10)
					 : NCONN_DEF;
	if (NCONN < 2)
		NCONN = 2;
	cl = calloc(2 * NCONN + 1, sizeof(*cl));
	cr_assert_not_null(cl);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur < 10u * NCONN + 256u)
		cr_skip_test("the fd limit (%lu) is too low for %u connections",
			     (unsigned long)rl.rlim_cur, 2 * NCONN);
	cr_assert_eq(th_mkdirs(&srv), 0);
	/* the server's fd limit: its default max_conns derives from it,
	 * limit - 384, and it admits 2 descriptors per soft-RDMA connection
	 * and 1 per TCP one within that */
	srv.nofile = 3u * NCONN + 1024u < 4096u ? 4096u : 3u * NCONN + 1024u;
	if (srv.nofile > rl.rlim_max)
		cr_skip_test("the hard fd limit (%lu) is too low for the server",
			     (unsigned long)rl.rlim_max);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, true), 0, "server did not start (log %s)", srv.log);

	/* one connection of each kind first: the server's per-process pieces
	 * (worker state, the device's tables, allocator arenas) are made */
	cr_assert_eq(connect_one(NCONN - 1, "rdma", srv.rdma_port), 0, "%s", rrr_last_error());
	cr_assert_eq(null_call(cl[NCONN - 1]), 0);
	cr_assert_eq(connect_one(NCONN - 1, "tcp", srv.mount_port), 0, "%s", rrr_last_error());
	cr_assert_eq(null_call(cl[2 * NCONN - 1]), 0);
	r0 = rrr__bench_rss_kib(srv.pid);
	f0 = open_fds(srv.pid);
	cr_assert_gt(r0, 0);

	for (unsigned i = 0; i < NCONN - 1; i++)
		cr_assert_eq(connect_one(i, "rdma", srv.rdma_port), 0, "RDMA connection %u: %s", i,
			     rrr_last_error());
	r1 = rrr__bench_rss_kib(srv.pid);
	f1 = open_fds(srv.pid);
	for (unsigned i = 0; i < NCONN - 1; i++)
		cr_assert_eq(connect_one(i, "tcp", srv.mount_port), 0, "TCP connection %u: %s", i,
			     rrr_last_error());
	/* the last TCP client's call is answered after every accept before it */
	th_src_addr(NULL);
	{
		struct rrr_clnt_opts o;
		char port[16];

		snprintf(port, sizeof(port), "%u", srv.mount_port);
		rrr_clnt_opts_init(&o);
		o.transport = "tcp";
		o.host = "127.0.0.1";
		o.port = port;
		double t0 = now_s(), dt;

		cr_assert_eq(rrr_clnt_create(&o, &cl[2 * NCONN]), 0, "%s", rrr_last_error());
		cr_assert_eq(null_call(cl[2 * NCONN]), 0, "a client beside the idle ones is served");
		dt = now_s() - t0;
		fprintf(stderr, "idle_rss: a new client connected and served in %.1f ms\n",
			dt * 1e3);
		cr_expect_lt(dt, 1.0 * SLOW, "a new client took %.3f s", dt);
	}
	r2 = rrr__bench_rss_kib(srv.pid);
	f2 = open_fds(srv.pid);
	per_rdma = (double)(r1 - r0) / (NCONN - 1);
	per_tcp = (double)(r2 - r1) / NCONN;
	cr_log_info("server RSS: %ld KiB, +%ld KiB for %u idle soft-RDMA connections "
		    "(%.1f KiB each), +%ld KiB for %u TCP connections (%.1f KiB each)",
		    r0, r1 - r0, NCONN - 1, per_rdma, r2 - r1, NCONN, per_tcp);
	fprintf(stderr, "idle_rss: %u+%u connections held; soft-RDMA %.1f KiB/conn, TCP %.1f "
		"KiB/conn\n", NCONN, NCONN, per_rdma, per_tcp);
	fprintf(stderr, "idle_rss: server descriptors: %ld, +%ld for the soft-RDMA connections, "
		"+%ld for the TCP ones\n", f0, f1 - f0, f2 - f1);
	cr_assert_leq(f1 - f0, 2 * (long)(NCONN - 1),
		      "an idle soft-RDMA connection holds at most 2 descriptors (%ld for %u)",
		      f1 - f0, NCONN - 1);
	cr_assert_leq(f2 - f1, (long)NCONN + 1, "a TCP connection holds 1 (%ld for %u)", f2 - f1,
		      NCONN);
	if (RSS_MEANINGFUL) {
		cr_assert_leq(per_rdma, 256.0, "an idle soft-RDMA connection costs %.1f KiB",
			      per_rdma);
		cr_assert_leq(per_tcp, 64.0, "an idle TCP connection costs %.1f KiB", per_tcp);
	}
	/* the server said at start what its limits are and why */
	cr_assert(th_file_contains(srv.log, "connections (RDMA + TCP) from the fd limit: the fd "
					    "limit"),
		  "the start-up line names where max_conns came from (log %s)", srv.log);
	/* and the first connections still work */
	cr_assert_eq(null_call(cl[NCONN - 1]), 0);
	cr_assert_eq(null_call(cl[2 * NCONN - 1]), 0);
}
