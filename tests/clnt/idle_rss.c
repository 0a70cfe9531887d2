/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/idle_rss.c - what an idle RPC-over-RDMA client connection
 * costs the client's process, by RSS (VmRSS of /proc/self/status): NCONN
 * clients (default options, soft provider) connect to one server in a
 * forked process and each makes one call, so each has its credits and has
 * used a call slot, then sits idle. The test asserts that the process grew
 * by at most 256 KiB per connection. Before the client's send queue was
 * sized from its credits, a connection cost about 1.4 MiB: a send queue
 * of 6 x max_segs + 2 entries for each of 2 x max_requests slots (4,018
 * entries of 232 bytes) and its completion queue, which the soft provider
 * writes once when it makes them, and every call slot touched at creation.
 *
 * One client connects and calls before the first measurement, so that the
 * process's own pieces (allocator arenas, the provider's globals) are not
 * counted. Under sanitizers RSS says nothing (their allocators keep freed
 * memory and shadow it): the connections are still made and called, the
 * bound is not asserted.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "../test_env.h"
#include "bench/bench_common.h"
#include "helpers/calls.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(RRR_UNDER_SANITIZER)
#define RSS_MEANINGFUL 0
#else
#define RSS_MEANINGFUL 1
#endif

#define NCONN	  64u
#define IR_PROG	  0x20000097u
#define LIMIT_KIB 256.0

static const struct rrr_svc_proc procs[] = {
    {"null", tc_h_null},
};

static void child_main(int wfd, const void *arg)
{
	struct rrr_svc_program prog = {IR_PROG, 1, procs, 1, NULL};
	struct rrr_svc_opts o;
	uint16_t port = 0;
	struct rrr_svc *svc;

	(void)arg;
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	o.wait_mode = RRR_WAIT_EVENT;
	svc = tc_child_svc(&o, &prog);
	if (rrr_svc_listen_rdma(svc, "127.0.0.1", "0", &port))
		tc_child_fail();
	tc_child_serve(svc, wfd, &port, sizeof(port));
}

static pid_t child;
static struct rrr_clnt *cl[NCONN + 1];

static void stop_all(void)
{
	for (unsigned i = 0; i <= NCONN; i++) {
		rrr_clnt_destroy(cl[i]);
		cl[i] = NULL;
	}
	tc_stop_child(&child);
}

TestSuite(clnt_idle_rss, .fini = stop_all, .timeout = 120);

static void connect_and_call(unsigned i, const char *port)
{
	struct rrr_clnt_opts o;
	struct rrr_call c;

	rrr_clnt_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = port;
	o.wait_mode = RRR_WAIT_EVENT; /* NCONN progress threads share the cores */
	o.timeout_ms = 20000;
	o.connect_timeout_ms = 20000;
	cr_assert_eq(rrr_clnt_create(&o, &cl[i]), 0, "client %u: %s", i, rrr_last_error());
	tc_call_init(&c, IR_PROG, 0);
	cr_assert_eq(rrr_clnt_call(cl[i], &c), 0, "client %u: %s", i, c.error);
}

Test(clnt_idle_rss, an_idle_rdma_connection_costs_little)
{
	uint16_t port = 0;
	char ps[16];
	long r0, r1;
	double per;

	TENV_SOFT_ONLY("the bound is the soft provider's (its rings are in this process)");
	child = tc_fork_server(child_main, NULL, &port, sizeof(port));
	snprintf(ps, sizeof(ps), "%u", port);
	connect_and_call(NCONN, ps);
	r0 = rrr__bench_rss_kib(0);
	cr_assert_gt(r0, 0);
	for (unsigned i = 0; i < NCONN; i++)
		connect_and_call(i, ps);
	r1 = rrr__bench_rss_kib(0);
	per = (double)(r1 - r0) / NCONN;
	cr_log_info("client RSS: %ld KiB, +%ld KiB for %u idle soft-RDMA connections (%.1f KiB "
		    "each)",
		    r0, r1 - r0, NCONN, per);
	fprintf(stderr, "clnt_idle_rss: %u idle soft-RDMA client connections, %.1f KiB each\n",
		NCONN, per);
	if (RSS_MEANINGFUL)
		cr_assert_leq(per, LIMIT_KIB,
			      "an idle soft-RDMA client connection costs %.1f KiB of RSS (at most "
			      "%.0f)",
			      per, LIMIT_KIB);
}
