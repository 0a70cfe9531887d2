/* SPDX-License-Identifier: MIT */
/*
 * tests/wait/wait.c - the wait policy of include/rrr/wait.h: mode names,
 * the epoll waits of the client and server loops (transport/wait.c: spin
 * budget, adaptive hot/cold, timeouts), rrr_cq_wait_mode() on a soft CQ,
 * and the client and server options refusing modes out of range.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/provider.h>
#include <rrr/server.h>
#include <rrr/wait.h>

#include "transport/wait.h"

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

Test(wait, mode_names)
{
	enum rrr_wait_mode m;

	cr_assert_eq(rrr_wait_mode_parse("event", &m), 0);
	cr_assert_eq(m, RRR_WAIT_EVENT);
	cr_assert_eq(rrr_wait_mode_parse("adaptive", &m), 0);
	cr_assert_eq(m, RRR_WAIT_ADAPTIVE);
	cr_assert_eq(rrr_wait_mode_parse("spin", &m), 0);
	cr_assert_eq(m, RRR_WAIT_SPIN);
	cr_assert_eq(rrr_wait_mode_parse("busy", &m), -EINVAL);
	cr_assert_eq(rrr_wait_mode_parse(NULL, &m), -EINVAL);
	cr_assert_str_eq(rrr_wait_mode_name(RRR_WAIT_EVENT), "event");
	cr_assert_str_eq(rrr_wait_mode_name(RRR_WAIT_SPIN), "spin");
	cr_assert_str_eq(rrr_wait_mode_name(RRR_WAIT_ADAPTIVE), "adaptive");
	cr_assert_eq(RRR_WAIT_ADAPTIVE, 0, "zeroed options mean the default");
}

struct ep {
	int epfd, p[2];
};

static void ep_open(struct ep *e)
{
	struct epoll_event ev = {.events = EPOLLIN};

	e->epfd = epoll_create1(0);
	cr_assert(e->epfd >= 0);
	cr_assert_eq(pipe(e->p), 0);
	cr_assert_eq(epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->p[0], &ev), 0);
}

static void ep_close(struct ep *e)
{
	close(e->epfd);
	close(e->p[0]);
	close(e->p[1]);
}

struct later {
	int fd;
	unsigned us;
	ssize_t rc;
};

/* (asserts stay on the test's thread: the result is checked after join) */
static void *write_later(void *arg)
{
	struct later *l = arg;

	usleep(l->us);
	l->rc = write(l->fd, "x", 1);
	return NULL;
}

/* An event that comes within the spin budget is found by the spin, without
 * a sleep; one that comes later is found by the sleep. */
Test(wait, spin_finds_events_within_the_budget)
{
	struct rrr__waiter w;
	struct epoll_event ev[4];
	struct ep e;
	pthread_t t;
	struct later l;

	ep_open(&e);
	rrr__waiter_init(&w, RRR_WAIT_SPIN, RRR_WAIT_SPIN_US_MAX); /* 10 ms */
	l = (struct later){e.p[1], 1000, 0};
	cr_assert_eq(pthread_create(&t, NULL, write_later, &l), 0);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 5000), 1);
	pthread_join(t, NULL);
	cr_assert_eq(l.rc, 1);
	/* found by the spin, unless a loaded machine kept the writer off the
	 * CPU for the whole budget: then by the sleep, never by both */
	cr_assert_eq(w.spin_hits + w.sleeps, 1);

	char c;
	cr_assert_eq(read(e.p[0], &c, 1), 1);
	rrr__waiter_init(&w, RRR_WAIT_SPIN, 100); /* 100 us: far below the 200 ms */
	l = (struct later){e.p[1], 200000, 0};
	cr_assert_eq(pthread_create(&t, NULL, write_later, &l), 0);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 5000), 1);
	pthread_join(t, NULL);
	cr_assert_eq(l.rc, 1);
	cr_assert_eq(w.spin_hits, 0);
	cr_assert_eq(w.sleeps, 1);
	ep_close(&e);
}

/* event never spins; adaptive spins after a wait ended within the budget,
 * stops after one that did not, and then only probes now and then. */
Test(wait, event_sleeps_adaptive_follows_the_last_wait)
{
	struct rrr__waiter w;
	struct epoll_event ev[4];
	struct ep e;
	char c;

	ep_open(&e);
	rrr__waiter_init(&w, RRR_WAIT_EVENT, 0);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0);
	cr_assert_eq(w.sleeps, 1);
	cr_assert_eq(w.spin_hits, 0);

	rrr__waiter_init(&w, RRR_WAIT_ADAPTIVE, 1000);
	cr_assert_not(w.hot, "a fresh waiter is cold");
	cr_assert_eq(write(e.p[1], "x", 1), 1);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 100), 1);
	cr_assert(w.hot, "found at once: traffic is flowing");
	cr_assert_eq(w.probes, 1, "a cold waiter's first wait is a probe (a look found it)");
	cr_assert_eq(w.sleeps, 0);
	cr_assert_eq(read(e.p[0], &c, 1), 1);
	/* nothing comes: the spin runs out, then the sleep times out, and the
	 * next wait does not spin */
	uint64_t t0 = now_us();
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 20), 0);
	cr_assert_geq(now_us() - t0, 15000, "the timeout covers spin and sleep");
	cr_assert_not(w.hot);
	cr_assert_eq(w.spin_hits, 0);
	cr_assert_eq(w.sleeps, 1, "a spin that runs out sleeps");
	/* cold now: the next wait probes (spin, then sleep), the one after
	 * sleeps at once */
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 2), 0);
	cr_assert_eq(w.probes, 2);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 2), 0);
	cr_assert_eq(w.probes, 2, "the next probe waits for 2 cold waits");
	cr_assert_eq(w.sleeps, 3);
	ep_close(&e);
}

/* A spin longer than the timeout ends at the timeout without a sleep;
 * timeout 0 only looks. */
Test(wait, spin_is_capped_by_the_timeout)
{
	struct rrr__waiter w;
	struct epoll_event ev[4];
	struct ep e;

	ep_open(&e);
	rrr__waiter_init(&w, RRR_WAIT_SPIN, RRR_WAIT_SPIN_US_MAX);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 2), 0);
	cr_assert_eq(w.sleeps, 1, "what is left of the timeout (nothing) is slept");
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 0), 0, "timeout 0 only looks");
	cr_assert_eq(w.sleeps, 1);
	ep_close(&e);
}

Test(wait, cq_wait_mode_on_soft)
{
	struct rrr_device *dev;
	struct rrr_cq *cq;
	struct rrr_wc wc;

	cr_assert_eq(rrr_device_open("soft", NULL, &dev), 0);
	cr_assert_eq(rrr_cq_create(dev, 16, &cq), 0);
	cr_assert_eq(rrr_cq_wait_mode(cq, &wc, 1, 5, (enum rrr_wait_mode)9, 0), -EINVAL);
	for (int m = RRR_WAIT_ADAPTIVE; m <= RRR_WAIT_SPIN; m++) {
		uint64_t t0 = now_us();

		cr_assert_eq(rrr_cq_wait_mode(cq, &wc, 1, 5, (enum rrr_wait_mode)m, 100), 0,
			     "mode %d: nothing to complete, timeout", m);
		cr_assert_geq(now_us() - t0, 4000, "mode %d waited its 5 ms", m);
	}
	cr_assert_eq(rrr_cq_destroy(cq), 0);
	rrr_device_close(dev);
}

Test(wait, options_out_of_range_are_refused)
{
	struct rrr_clnt_opts co;
	struct rrr_clnt *c = NULL;
	struct rrr_svc_opts so;
	struct rrr_svc *s = NULL;

	rrr_clnt_opts_init(&co);
	co.host = "127.0.0.1";
	co.port = "1";
	co.wait_mode = (enum rrr_wait_mode)7;
	cr_assert_eq(rrr_clnt_create(&co, &c), -EINVAL);
	co.wait_mode = RRR_WAIT_SPIN;
	co.spin_us = RRR_WAIT_SPIN_US_MAX + 1;
	cr_assert_eq(rrr_clnt_create(&co, &c), -EINVAL);
	cr_assert_not_null(strstr(rrr_last_error(), "spin_us"));

	rrr_svc_opts_init(&so);
	so.nthreads = 1;
	so.wait_mode = (enum rrr_wait_mode)7;
	cr_assert_eq(rrr_svc_create(&so, &s), -EINVAL);
	so.wait_mode = RRR_WAIT_EVENT;
	so.spin_us = RRR_WAIT_SPIN_US_MAX + 1;
	cr_assert_eq(rrr_svc_create(&so, &s), -EINVAL);
	so.spin_us = 0;
	cr_assert_eq(rrr_svc_create(&so, &s), 0);
	rrr_svc_destroy(s);
}

/* A cold adaptive waiter probes with a spin after 1, 2, 4 ... 64 waits
 * (so a machine whose wake-ups outlast the spin budget still gets back to
 * spinning while traffic flows), and an event found makes it hot again and
 * restarts the schedule. */
Test(wait, cold_adaptive_waiter_probes_with_backoff)
{
	struct rrr__waiter w;
	struct epoll_event ev[4];
	struct ep e;
	char c;

	ep_open(&e);
	rrr__waiter_init(&w, RRR_WAIT_ADAPTIVE, 100);
	cr_assert_not(w.hot);
	/* nothing ever comes: probes at waits 1, 3, 7, 15, 31, 63 of 100 */
	for (int i = 0; i < 100; i++)
		cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0);
	cr_assert_eq(w.probes, 6, "probes: %llu", (unsigned long long)w.probes);
	cr_assert_eq(w.spin_hits, 0);
	cr_assert_not(w.hot);
	/* the gap stays at 64 waits */
	for (int i = 0; i < 128; i++)
		cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0);
	cr_assert_eq(w.probes, 8, "probes: %llu", (unsigned long long)w.probes);
	/* traffic again: found at once, hot, and the schedule starts over */
	cr_assert_eq(write(e.p[1], "x", 1), 1);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 100), 1);
	cr_assert(w.hot);
	cr_assert_eq(read(e.p[0], &c, 1), 1);
	uint64_t p0 = w.probes;

	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0); /* hot: spins, goes cold */
	cr_assert_not(w.hot);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0); /* first cold wait probes */
	cr_assert_eq(w.probes, p0 + 1);
	/* a probe that finds the event makes the waiter hot */
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 1), 0);
	cr_assert_eq(write(e.p[1], "x", 1), 1);
	cr_assert_eq(rrr__wait_epoll(&w, e.epfd, ev, 4, 100), 1); /* 4th cold wait: a probe */
	cr_assert_eq(w.probes, p0 + 2);
	cr_assert(w.hot);
	ep_close(&e);
}
