/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/limits.c - rrr-server against stalled, idle and greedy peers
 * (server/svc_admit.c, the soft CM's set-up limits), with real processes
 * on loopback:
 *  - 2,000 TCP connects to the RDMA port that never send an MPA Request,
 *    held open, with the server at the usual fd limit of 1,024: rrr-client
 *    still puts and gets a file (before the limits it could not connect);
 *  - stalled connections are closed after --setup-timeout;
 *  - --max-conns-per-addr refuses the connection over the limit;
 *  - --idle-timeout closes a connection without traffic;
 *  - the counters and the operator's log lines say what happened.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/conf_server.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/test_wait.h"

static struct th_server srv;
static int *fds;
static int nfds;

static void teardown(void)
{
	if (getenv("KEEP_LOG") && srv.log[0]) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "cp %s /tmp/i11-last.log", srv.log);
		if (system(cmd)) {
		}
	}
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	fds = NULL;
	nfds = 0;
	th_cleanup(&srv);
}

TestSuite(nfs_limits, .fini = teardown, .timeout = 120);

static void start(unsigned nofile, const char *const *extra)
{
	char p[512];
	if (!th_prog("rrr-server", p, sizeof(p)) || !th_prog("rrr-client", p, sizeof(p)))
		cr_skip_test("RRR_BUILD unset or programs not built (run through make test-unit)");
	cr_assert_eq(th_mkdirs(&srv), 0);
	srv.nofile = nofile;
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, true), 0, "server did not start (log %s)", srv.log);
}

/* Open @n TCP connections to @port that send nothing (non-blocking). */
static void stall(unsigned port, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fds = realloc(fds, sizeof(*fds) * (size_t)(nfds + n));
	cr_assert_not_null(fds);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		cr_assert_geq(fd, 0, "socket %d: %s", i, strerror(errno));
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
			cr_assert_eq(errno, EINPROGRESS, "connect %d: %s", i, strerror(errno));
		fds[nfds++] = fd;
	}
}

/* Wait up to @ms until the TCP handshake of every stalled connection is
 * over (connected, or refused/reset); returns how many are. */
static int settle(int ms)
{
	struct pollfd *pf = calloc((size_t)nfds, sizeof(*pf));
	double end = th_now() + ms / 1000.0;
	int done = 0;
	cr_assert_not_null(pf);
	while (th_now() < end) {
		for (int i = 0; i < nfds; i++)
			pf[i] = (struct pollfd){.fd = fds[i], .events = POLLOUT};
		poll(pf, (nfds_t)nfds, 100);
		done = 0;
		for (int i = 0; i < nfds; i++)
			done += (pf[i].revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
		if (done == nfds)
			break;
		usleep(100000);
	}
	free(pf);
	return done;
}

/* Whether the server closed @fd (EOF or reset) within @ms. */
static bool closed_by_server(int fd, int ms)
{
	double end = th_now() + ms / 1000.0;
	while (th_now() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
		char c;
		if (poll(&pf, 1, 50) == 1) {
			ssize_t r = read(fd, &c, 1);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != ENOTCONN))
				return true;
		}
	}
	return false;
}

static uint64_t counter(const char *log, const char *name)
{
	FILE *f = fopen(log, "r");
	char line[512];
	uint64_t v = 0;
	size_t n = strlen(name);
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		while (*p == ' ')
			p++;
		if (!strncmp(p, name, n) && p[n] == ' ')
			v = strtoull(p + n + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static int client(const char *out, const char *a1, const char *a2, const char *a3)
{
	char prog[512], port[16], mport[16];
	th_prog("rrr-client", prog, sizeof(prog));
	snprintf(port, sizeof(port), "%u", srv.rdma_port);
	snprintf(mport, sizeof(mport), "%u", srv.mount_port);
	const char *argv[] = {prog,
			      "--provider",
			      "soft",
			      "--server",
			      "127.0.0.1",
			      "--port",
			      port,
			      "--mount-port",
			      mport,
			      "--export",
			      srv.export_dir,
			      "--no-progress",
			      "--timeout",
			      "20000",
			      a1,
			      a2,
			      a3,
			      NULL};
	return th_run((char *const *)argv, out, 60);
}

Test(nfs_limits, stalled_connects_do_not_lock_out_clients)
{
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2200)
		cr_skip_test(
		    "needs 2,200 file descriptors for the stalled connections (hard limit %llu)",
		    (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 8192 ? 8192 : rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);

	start(1024, NULL); /* the defaults, at the usual fd limit */
	stall(srv.rdma_port, 2000);
	/* let the kernel and the server take them in (a server without limits
	 * stops accepting at its fd limit: then not all of them get through) */
	int done = settle(8000);
	cr_log_info("%d of 2000 stalled connections through the TCP handshake", done);

	char local[400], back[400], out[400];
	snprintf(local, sizeof(local), "%s/local.bin", srv.dir);
	snprintf(back, sizeof(back), "%s/back.bin", srv.dir);
	snprintf(out, sizeof(out), "%s/client.out", srv.dir);
	cr_assert_eq(th_random_file(local, 300000, 11), 0);
	double t0 = th_now();
	cr_assert_eq(client(out, "put", local, "f.bin"), 0,
		     "rrr-client put failed with 2,000 stalled connections (see %s, %s)", out,
		     srv.log);
	cr_assert_eq(client(out, "get", "f.bin", back), 0, "rrr-client get failed (see %s)",
		     srv.log);
	cr_assert_eq(th_cmp_files(local, back), 0);
	cr_log_info("put + get with 2,000 stalled connections: %.1f s", th_now() - t0);

	cr_assert_eq(th_server_stop(&srv), 0, "the server stopped cleanly (log %s)", srv.log);
	uint64_t ev = counter(srv.log, "limits.setup_evicted");
	cr_log_info("server: %llu stalled connections pushed out (max_setup 256), %llu timed out",
		    (unsigned long long)ev,
		    (unsigned long long)counter(srv.log, "limits.setup_timeouts"));
	/* the kernel completes handshakes faster than the server takes them
	 * in, so some were still queued when it stopped; how many it took in
	 * (and so pushed out) depends on the machine's speed (a sanitizer
	 * build takes in a few hundred): at least one beyond max_setup was */
	cr_assert_gt(ev, 0, "stalled connections were pushed out (log %s)", srv.log);
	cr_assert(th_file_contains(srv.log, "closed RDMA connections in set-up"),
		  "the operator is told (log %s)", srv.log);
}

Test(nfs_limits, setup_timeout_closes_stalled_connections)
{
	static const char *const extra[] = {"--setup-timeout", "500", NULL};
	start(0, extra);
	stall(srv.rdma_port, 50);
	double t0 = th_now();
	for (int i = 0; i < 50; i++)
		cr_assert(closed_by_server(fds[i], 5000), "connection %d still held after %.1f s",
			  i, th_now() - t0);
	cr_log_info("50 stalled connections closed after %.2f s", th_now() - t0);
	cr_assert_lt(th_now() - t0, 10.0); /* each within 5 s; a sanitizer build is slow */
	cr_assert_eq(client(NULL, "ls", NULL, NULL), 0, "a client still works");
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_eq(counter(srv.log, "limits.setup_timeouts"), 50, "log %s", srv.log);
}

/* limits.conns of the running server (rrr-server --stats), or 0. */
static uint64_t live_conns(void)
{
	char prog[512], args[512], out[512];
	th_prog("rrr-server", prog, sizeof(prog));
	snprintf(out, sizeof(out), "%s/live-stats.txt", srv.dir);
	snprintf(args, sizeof(args), "--stats --state-dir '%s'", srv.state_dir);
	if (th_sh(prog, args, out) != 0)
		return 0;
	return counter(out, "limits.conns");
}

Test(nfs_limits, per_address_limit_and_idle_timeout)
{
	static const char *const extra[] = {"--max-conns-per-addr", "2", "--idle-timeout", "3000",
					    NULL};
	start(0, extra);
	stall(srv.mount_port, 2); /* ONC RPC over TCP: two allowed */
	cr_assert(TEST_WAIT_UNTIL(live_conns() >= 2, 10000), "the server holds the first two");
	stall(srv.mount_port, 1); /* the third is refused */
	cr_assert(closed_by_server(fds[2], 2000), "third connection from one address refused");
	cr_assert_not(closed_by_server(fds[0], 300), "the first two are kept");
	/* ... until the idle timeout */
	double t0 = th_now();
	cr_assert(closed_by_server(fds[0], 8000));
	/* the two sit on different workers, whose idle scans run on their own
	 * phases (up to ~750 ms apart) */
	cr_assert(closed_by_server(fds[1], 3000));
	cr_log_info("idle connections closed after %.2f s", th_now() - t0);
	cr_assert_eq(client(NULL, "ls", NULL, NULL), 0, "a client works again");
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_geq(counter(srv.log, "limits.refused_per_addr"), 1);
	cr_assert_geq(counter(srv.log, "limits.idle_closed"), 2);
	cr_assert_eq(counter(srv.log, "limits.max_conns_per_addr"), 2);
	cr_assert(th_file_contains(srv.log, "max_conns_per_addr"), "log %s", srv.log);
	cr_assert(th_file_contains(srv.log, "idle_timeout_ms"), "log %s", srv.log);
}
