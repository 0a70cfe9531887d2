/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/idle_rss.c - what an idle connection costs rrr-server, by RSS
 * (VmRSS of /proc/PID/status) and descriptors (/proc/PID/fd), and how many
 * it holds, with real processes on loopback: NCONN soft-RDMA connections
 * (MPA and RTR done, nothing sent) and NCONN TCP connections from 100
 * source addresses (127.10.0.x, tests/lib/srcaddr.c) to one server with
 * the default limits and an fd limit of 4,096 (3 x NCONN + 1,024 for more,
 * or RRR_IDLE_NOFILE), held at once by holder processes (at most 1,000
 * soft-RDMA or 5,000 TCP connections each: a client holds about 5
 * descriptors and a progress thread per soft-RDMA connection, and the
 * hard fd limit is per process). It asserts:
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
 *  - a client of each kind that connects beside them is served, in well
 *    under a second (reported; asserted within a generous bound), and the
 *    first connections still work.
 * RRR_IDLE_CONNS=N holds N of each instead (RRR_IDLE_CONNS=5000
 * RRR_IDLE_NOFILE=20000: ten thousand connections on one server at an fd
 * limit of 20,000).
 *
 * Accepts are observed, not waited for: rrr_clnt_create() returns once the
 * RDMA connection is established, and a NULL call on a holder's last TCP
 * client answers only after the server's accept thread took every
 * connection queued before it. The holders are forked before this
 * process makes any client of its own (a fork copies no client threads).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>

#include "bench/bench_common.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/proc.h"
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

#define HOLD_RDMA_MAX 1000u /* soft-RDMA connections per holder process */
#define HOLD_TCP_MAX  5000u
#define HOLDERS_MAX   64u

static struct th_server srv;
static unsigned NCONN;
static struct rrr_clnt *beside[2];

/* a process holding connections: @ctl carries commands down ('c': call
 * on the last connection; EOF: exit), @rep its one-line answers up */
static struct holder {
	pid_t pid;
	int ctl, rep;
} holders[HOLDERS_MAX];
static unsigned nholders;

static void teardown(void)
{
	th_src_addr(NULL);
	for (unsigned i = 0; i < 2; i++)
		if (beside[i]) {
			rrr_clnt_destroy(beside[i]);
			beside[i] = NULL;
		}
	for (unsigned i = 0; i < nholders; i++) {
		close(holders[i].ctl);
		close(holders[i].rep);
	}
	for (unsigned i = 0; i < nholders; i++) {
		int st;

		if (waitpid(holders[i].pid, &st, 0) < 0)
			kill(holders[i].pid, SIGKILL);
	}
	nholders = 0;
	th_cleanup(&srv);
}

TestSuite(nfs_idle_rss, .fini = teardown, .timeout = 900);

static int connect_one(unsigned i, const char *transport, unsigned port, struct rrr_clnt **out)
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
	return rrr_clnt_create(&o, out);
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

/* One line from @fd within 120 s (x SLOW) into @buf: 0, or -1. */
static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (poll(&p, 1, (int)(120000 * SLOW)) != 1 || read(fd, buf + n, 1) != 1)
			break;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return n && buf[n - 1] == '\n' ? 0 : -1;
}

static void holder_main(int ctl, int rep, const char *transport, unsigned port, unsigned first,
			unsigned n)
{
	struct rrr_clnt **c = calloc(n, sizeof(*c));
	struct rlimit rl;
	char cmd;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (unsigned i = 0; c && i < n; i++)
		if (connect_one(first + i, transport, port, &c[i])) {
			dprintf(rep, "%s connection %u: %s\n", transport, first + i, rrr_last_error());
			_exit(1);
		}
	if (!c || null_call(c[n - 1])) {
		dprintf(rep, "%s: the call on connection %u failed: %s\n", transport,
			first + n - 1, rrr_last_error());
		_exit(1);
	}
	dprintf(rep, "ok\n");
	while (read(ctl, &cmd, 1) == 1)
		dprintf(rep, "%s\n", null_call(c[n - 1]) ? rrr_last_error() : "ok");
	_exit(0); /* the clients go with the process */
}

/* Fork a holder of @n connections of @transport numbered from @first and
 * wait until it holds them all (its last one answered a NULL call). */
static void hold(const char *transport, unsigned port, unsigned first, unsigned n)
{
	int ctl[2], rep[2];
	char line[512];
	struct holder *h;
	pid_t pid;

	cr_assert_lt(nholders, HOLDERS_MAX, "too many holders (RRR_IDLE_CONNS too large)");
	cr_assert_eq(pipe(ctl), 0);
	cr_assert_eq(pipe(rep), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(ctl[1]);
		close(rep[0]);
		holder_main(ctl[0], rep[1], transport, port, first, n);
	}
	close(ctl[0]);
	close(rep[1]);
	h = &holders[nholders++];
	*h = (struct holder){pid, ctl[1], rep[0]};
	cr_assert_eq(read_line(h->rep, line, sizeof(line)), 0,
		     "%s holder of %u connections from %u: no answer", transport, n, first);
	cr_assert_str_eq(line, "ok\n", "%s holder: %s", transport, line);
}

/* @n connections of @transport from @first, spread over holders */
static void hold_all(const char *transport, unsigned port, unsigned first, unsigned n)
{
	unsigned per = transport[0] == 't' ? HOLD_TCP_MAX : HOLD_RDMA_MAX;

	for (unsigned done = 0; done < n; done += per)
		hold(transport, port, first + done, n - done < per ? n - done : per);
}

/* Every holder still makes a call on its last connection. */
static void holders_call(void)
{
	char line[512];

	for (unsigned i = 0; i < nholders; i++) {
		cr_assert_eq(write(holders[i].ctl, "c", 1), 1);
		cr_assert_eq(read_line(holders[i].rep, line, sizeof(line)), 0);
		cr_assert_str_eq(line, "ok\n", "holder %u: %s", i, line);
	}
}

/* A client of @transport beside the idle ones: connected and served. */
static void beside_one(unsigned k, const char *transport, unsigned port)
{
	double t0 = th_now(), dt;

	th_src_addr(NULL);
	{
		struct rrr_clnt_opts o;
		char p[16];

		snprintf(p, sizeof(p), "%u", port);
		rrr_clnt_opts_init(&o);
		o.transport = transport;
		o.host = "127.0.0.1";
		o.port = p;
		cr_assert_eq(rrr_clnt_create(&o, &beside[k]), 0, "%s", rrr_last_error());
	}
	cr_assert_eq(null_call(beside[k]), 0, "a %s client beside the idle ones is served",
		     transport);
	dt = th_now() - t0;
	fprintf(stderr, "idle_rss: a new %s client connected and served in %.1f ms\n", transport,
		dt * 1e3);
	cr_expect_lt(dt, 1.0 * SLOW, "a new %s client took %.3f s", transport, dt);
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
	if (getrlimit(RLIMIT_NOFILE, &rl))
		cr_skip_test("getrlimit: %s", strerror(errno));
	if (rl.rlim_max < 7u * HOLD_RDMA_MAX)
		cr_skip_test("the hard fd limit (%lu) is too low for a holder of %u connections",
			     (unsigned long)rl.rlim_max, HOLD_RDMA_MAX);
	cr_assert_eq(th_mkdirs(&srv), 0);
	/* the server's fd limit: its default max_conns derives from it,
	 * limit - 384, and it admits 2 descriptors per soft-RDMA connection
	 * and 1 per TCP one within that */
	srv.nofile = 3u * NCONN + 1024u < 4096u ? 4096u : 3u * NCONN + 1024u;
	if (getenv("RRR_IDLE_NOFILE"))
		srv.nofile = (unsigned)strtoul(getenv("RRR_IDLE_NOFILE"), NULL, 10);
	if (srv.nofile > rl.rlim_max)
		cr_skip_test("the hard fd limit (%lu) is too low for the server",
			     (unsigned long)rl.rlim_max);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, true), 0, "server did not start (log %s)", srv.log);

	/* one connection of each kind first: the server's per-process pieces
	 * (worker state, the device's tables, allocator arenas) are made */
	hold("rdma", srv.rdma_port, NCONN - 1, 1);
	hold("tcp", srv.mount_port, NCONN + NCONN - 1, 1);
	r0 = rrr__bench_rss_kib(srv.pid);
	f0 = th_open_fds(srv.pid);
	cr_assert_gt(r0, 0);

	hold_all("rdma", srv.rdma_port, 0, NCONN - 1);
	r1 = rrr__bench_rss_kib(srv.pid);
	f1 = th_open_fds(srv.pid);
	hold_all("tcp", srv.mount_port, NCONN, NCONN - 1);
	r2 = rrr__bench_rss_kib(srv.pid);
	f2 = th_open_fds(srv.pid);

	/* clients beside them, from this process (no holder is forked after) */
	beside_one(0, "rdma", srv.rdma_port);
	beside_one(1, "tcp", srv.mount_port);

	per_rdma = (double)(r1 - r0) / (NCONN - 1);
	per_tcp = (double)(r2 - r1) / (NCONN - 1);
	cr_log_info("server RSS: %ld KiB, +%ld KiB for %u idle soft-RDMA connections "
		    "(%.1f KiB each), +%ld KiB for %u TCP connections (%.1f KiB each)",
		    r0, r1 - r0, NCONN - 1, per_rdma, r2 - r1, NCONN - 1, per_tcp);
	fprintf(stderr, "idle_rss: %u+%u connections held (server fd limit %u); soft-RDMA %.1f "
		"KiB/conn, TCP %.1f KiB/conn\n", NCONN, NCONN, srv.nofile, per_rdma, per_tcp);
	fprintf(stderr, "idle_rss: server descriptors: %ld, +%ld for the soft-RDMA connections, "
		"+%ld for the TCP ones\n", f0, f1 - f0, f2 - f1);
	/* each holder's last connection answered a call: its CQ may have
	 * made its eventfd (a third descriptor) */
	cr_assert_leq(f1 - f0, 2 * (long)(NCONN - 1) + (NCONN - 2) / HOLD_RDMA_MAX + 1,
		      "an idle soft-RDMA connection holds at most 2 descriptors (%ld for %u)",
		      f1 - f0, NCONN - 1);
	cr_assert_leq(f2 - f1, (long)NCONN - 1 + (NCONN - 2) / HOLD_TCP_MAX + 1,
		      "a TCP connection holds 1 (%ld for %u)", f2 - f1, NCONN - 1);
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
	holders_call();
}
