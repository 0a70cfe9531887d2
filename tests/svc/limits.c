/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/limits.c - the server library's connection limits
 * (server/svc_admit.c) through struct rrr_svc_opts, with an in-process
 * server and raw TCP clients on loopback: max_conns and max_conns_per_addr
 * refuse the connection over the limit (closed at once) and count it; a
 * slot given back by a closed connection is usable again; idle_timeout_ms
 * closes a connection without traffic; RRR_SVC_UNLIMITED turns limits off;
 * the defaults are filled in.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rrr/provider.h>
#include <rrr/server.h>

#include "helpers/svc_test.h"

static struct tsvc srv;

static void teardown(void)
{
	if (srv.svc)
		cr_assert_eq(tsvc_stop(&srv), 0);
	memset(&srv, 0, sizeof(srv));
}

TestSuite(svc_limits, .fini = teardown, .timeout = 60);

static void start(uint32_t max_conns, uint32_t per_addr, uint32_t idle_ms)
{
	struct rrr_svc_opts o;

	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	o.max_conns = max_conns;
	o.max_conns_per_addr = per_addr;
	o.idle_timeout_ms = idle_ms;
	cr_assert_eq(tsvc_start(&srv, &o, 0), 0, "server start: %s", rrr_last_error());
}

/* Whether the server closed @fd (EOF) within @ms. */
static bool closed_within(int fd, int ms)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&pf, 1, ms) != 1)
		return false;
	return read(fd, &c, 1) <= 0;
}

static void wait_conns(uint32_t want)
{
	struct rrr_svc_limit_stats ls;

	for (int i = 0; i < 200; i++) {
		rrr_svc_limit_stats(srv.svc, &ls);
		if (ls.conns == want)
			return;
		usleep(10000);
	}
	cr_assert_eq(ls.conns, want, "connections counted");
}

Test(svc_limits, max_conns_refuses_and_gives_back)
{
	struct rrr_svc_limit_stats ls;
	int a, b, c;

	start(2, RRR_SVC_UNLIMITED, RRR_SVC_UNLIMITED);
	a = tcp_connect_port(srv.tcp_port);
	b = tcp_connect_port(srv.tcp_port);
	cr_assert_geq(a, 0);
	cr_assert_geq(b, 0);
	wait_conns(2);
	c = tcp_connect_port(srv.tcp_port);
	cr_assert_geq(c, 0, "the kernel completes the handshake");
	cr_assert(closed_within(c, 2000), "the third connection is closed at once");
	close(c);
	cr_assert_not(closed_within(a, 200), "the first two are served");
	rrr_svc_limit_stats(srv.svc, &ls);
	cr_assert_eq(ls.refused_max_conns, 1);
	cr_assert_eq(ls.refused_per_addr, 0);
	cr_assert_eq(ls.max_conns, 2);
	/* a closed connection gives its slot back */
	close(a);
	wait_conns(1);
	c = tcp_connect_port(srv.tcp_port);
	cr_assert_geq(c, 0);
	cr_assert_not(closed_within(c, 300), "admitted again");
	wait_conns(2);
	close(b);
	close(c);
}

Test(svc_limits, per_address)
{
	struct rrr_svc_limit_stats ls;
	int fd[4];

	start(RRR_SVC_UNLIMITED, 3, RRR_SVC_UNLIMITED);
	for (int i = 0; i < 4; i++) {
		fd[i] = tcp_connect_port(srv.tcp_port);
		cr_assert_geq(fd[i], 0);
		if (i < 3)
			wait_conns((uint32_t)i + 1);
	}
	cr_assert(closed_within(fd[3], 2000), "the fourth from 127.0.0.1 is refused");
	rrr_svc_limit_stats(srv.svc, &ls);
	cr_assert_eq(ls.refused_per_addr, 1);
	cr_assert_eq(ls.refused_max_conns, 0);
	cr_assert_eq(ls.conns, 3);
	for (int i = 0; i < 4; i++)
		close(fd[i]);
}

Test(svc_limits, idle_timeout_closes)
{
	struct rrr_svc_limit_stats ls;
	struct timespec t0, t1;
	int a;

	start(0, 0, 300);
	/* before connecting: the server's idle clock starts when it adopts
	 * the connection, which may be before connect() returns here */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	a = tcp_connect_port(srv.tcp_port);
	cr_assert_geq(a, 0);
	cr_assert(closed_within(a, 3000), "closed after 300 ms without traffic");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_geq((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000, 250,
		      "not before the timeout");
	close(a);
	wait_conns(0);
	rrr_svc_limit_stats(srv.svc, &ls);
	cr_assert_eq(ls.idle_closed, 1);
	cr_assert_geq(ls.max_conns, 16, "the default was filled in");
	cr_assert_eq(ls.max_conns_per_addr, 128);
}
