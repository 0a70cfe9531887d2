/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/group.c - client groups (rrr_clnt_group_create, opts.group):
 * many clients share a few progress threads. 48 clients, half over RDMA
 * (soft) and half over TCP, in a group of 2 threads add 2 threads to this
 * process, not 48; calls on every one of them complete, from this thread
 * and pipelined from callbacks (a callback submits the next call of its
 * client, or of the next client, which may belong to the other thread);
 * thousands of calls from a thread outside the group lose no wake-up; a call's timeout fires in a group as it does alone; a
 * synchronous call from a callback fails with -EDEADLK instead of waiting
 * for itself; a callback may destroy another client of its thread (whose
 * calls fail with -ECANCELED); the group cannot be destroyed while a
 * client is alive (-EBUSY), and can once they are gone. The server runs in a forked
 * process (soft provider and TCP).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "../test_wait.h"
#include "helpers/calls.h"
#include "tests/lib/proc.h"

#define GR_PROG 0x20000097u
enum { GR_NULL, GR_SLOW, GR_DROP };
#define NCLNT 48

static int h_slow(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct timespec ts = {1, 0}; /* longer than the test's call timeout */

	(void)r;
	(void)a;
	(void)s;
	nanosleep(&ts, NULL);
	return 0;
}

static const struct rrr_svc_proc procs[] = {
    [GR_NULL] = {"null", tc_h_null},
    [GR_SLOW] = {"slow", h_slow},
    [GR_DROP] = {"drop", tc_h_drop}, /* no reply: the call stays outstanding */
};

static const struct rrr_svc_program prog = {GR_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]),
					    NULL};

static pid_t child;
static uint16_t ports[2];
static struct rrr_clnt_group *grp;
static struct rrr_clnt *cl[NCLNT];

static void start(void)
{
	child = tc_fork_program(&prog, 2, ports);
	cr_assert_eq(rrr_clnt_group_create(2, RRR_WAIT_EVENT, &grp), 0, "%s", rrr_last_error());
}

static void stop(void)
{
	for (int i = 0; i < NCLNT; i++) {
		rrr_clnt_destroy(cl[i]);
		cl[i] = NULL;
	}
	cr_expect_eq(rrr_clnt_group_destroy(grp), 0, "%s", rrr_last_error());
	grp = NULL;
	tc_stop_child(&child);
}

TestSuite(clnt_group, .init = start, .fini = stop, .timeout = 60);

static int threads_now(void)
{
	return (int)th_threads();
}

/* client @i: RDMA for even @i, TCP for odd, in the group */
static void connect_one(int i)
{
	struct rrr_clnt_opts o;
	char port[16];

	snprintf(port, sizeof(port), "%u", ports[i % 2]);
	rrr_clnt_opts_init(&o);
	o.transport = i % 2 ? "tcp" : "rdma";
	o.host = "127.0.0.1";
	o.port = port;
	o.timeout_ms = 10000;
	o.group = grp;
	cr_assert_eq(rrr_clnt_create(&o, &cl[i]), 0, "client %d: %s", i, rrr_last_error());
}

/* A chain of calls on one client, each submitted by the previous one's
 * callback (on the group thread); with hop, on the next client, which may
 * belong to the other group thread (as a program that spreads its calls
 * over many connections does). */
struct chain {
	struct rrr_clnt *c;
	struct rrr_call call;
	int left, at;
	bool hop;
	atomic_int done, failed;
};

static void chain_next(struct rrr_call *call, int status, void *arg)
{
	struct chain *ch = arg;

	(void)call;
	if (status)
		atomic_fetch_add(&ch->failed, 1);
	if (status || --ch->left == 0) {
		atomic_store(&ch->done, 1);
		return;
	}
	if (ch->hop) {
		ch->at = (ch->at + 1) % NCLNT;
		ch->c = cl[ch->at];
	}
	tc_call_init(&ch->call, GR_PROG, GR_NULL);
	if (rrr_clnt_call_async(ch->c, &ch->call, chain_next, ch)) {
		atomic_fetch_add(&ch->failed, 1);
		atomic_store(&ch->done, 1);
	}
}

/* A chain of @len calls started on every client at once; all end well. */
static void run_chains(int len, bool hop)
{
	static struct chain ch[NCLNT];

	for (int i = 0; i < NCLNT; i++) {
		ch[i] = (struct chain){.c = cl[i], .at = i, .hop = hop, .left = len};
		tc_call_init(&ch[i].call, GR_PROG, GR_NULL);
		cr_assert_eq(rrr_clnt_call_async(cl[i], &ch[i].call, chain_next, &ch[i]), 0, "%s",
			     rrr_last_error());
	}
	for (int i = 0; i < NCLNT; i++) {
		cr_assert(TEST_WAIT_UNTIL(atomic_load(&ch[i].done), 30000), "chain %d ended", i);
		cr_assert_eq(atomic_load(&ch[i].failed), 0, "chain %d: a call failed", i);
		cr_assert_eq(ch[i].left, 0);
	}
}

Test(clnt_group, many_clients_share_the_groups_threads)
{
	int before = threads_now();

	for (int i = 0; i < NCLNT; i++)
		connect_one(i);
	cr_assert_eq(threads_now(), before, "the clients started no thread of their own "
					    "(%d threads, %d before)", threads_now(), before);
	/* a synchronous call on each, from this thread */
	for (int i = 0; i < NCLNT; i++) {
		struct rrr_call c;

		tc_call_init(&c, GR_PROG, GR_NULL);
		cr_assert_eq(rrr_clnt_call(cl[i], &c), 0, "client %d: %s", i, c.error);
	}
	/* 50 calls on every client at once, each submitted by the last */
	run_chains(50, false);
}

Test(clnt_group, callbacks_submit_on_other_members)
{
	for (int i = 0; i < NCLNT; i++)
		connect_one(i);
	run_chains(100, true);
}

/* A thread outside the group submits while the group thread goes to sleep
 * and wakes, thousands of times: no wake-up is lost (a lost one hangs a
 * call until the test's time-out). */
Test(clnt_group, calls_from_outside_wake_the_group_thread)
{
	connect_one(0);
	connect_one(1);
	for (int k = 0; k < 2000; k++) {
		struct rrr_call c;

		tc_call_init(&c, GR_PROG, GR_NULL);
		cr_assert_eq(rrr_clnt_call(cl[k % 2], &c), 0, "call %d: %s", k, c.error);
	}
}

Test(clnt_group, a_timeout_fires_in_a_group)
{
	struct rrr_call c;

	connect_one(0);
	connect_one(1);
	for (int i = 0; i < 2; i++) {
		tc_call_init(&c, GR_PROG, GR_SLOW);
		c.timeout_ms = 100;
		cr_assert_eq(rrr_clnt_call(cl[i], &c), -ETIMEDOUT, "client %d", i);
		/* and the client goes on */
		tc_call_init(&c, GR_PROG, GR_NULL);
		cr_assert_eq(rrr_clnt_call(cl[i], &c), 0, "client %d: %s", i, c.error);
	}
}

struct inner {
	struct rrr_clnt *other;
	atomic_int rc, done;
};

static void call_from_callback(struct rrr_call *call, int status, void *arg)
{
	struct inner *in = arg;
	struct rrr_call c;

	(void)call;
	(void)status;
	tc_call_init(&c, GR_PROG, GR_NULL);
	atomic_store(&in->rc, rrr_clnt_call(in->other, &c));
	atomic_store(&in->done, 1);
}

Test(clnt_group, a_synchronous_call_from_a_callback_fails)
{
	struct rrr_clnt_group *one;
	struct inner in = {0};
	struct rrr_call c;
	struct rrr_clnt_opts o;
	struct rrr_clnt *a, *b;
	char port[16];

	/* two clients of a one-thread group: a callback of one that waited
	 * for a call of the other would wait for its own thread */
	cr_assert_eq(rrr_clnt_group_create(1, RRR_WAIT_EVENT, &one), 0, "%s", rrr_last_error());
	snprintf(port, sizeof(port), "%u", ports[0]);
	rrr_clnt_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = port;
	o.group = one;
	cr_assert_eq(rrr_clnt_create(&o, &a), 0, "%s", rrr_last_error());
	cr_assert_eq(rrr_clnt_create(&o, &b), 0, "%s", rrr_last_error());
	in.other = b;
	tc_call_init(&c, GR_PROG, GR_NULL);
	cr_assert_eq(rrr_clnt_call_async(a, &c, call_from_callback, &in), 0);
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&in.done), 10000));
	cr_assert_eq(atomic_load(&in.rc), -EDEADLK);
	cr_assert_eq(rrr_clnt_group_destroy(one), -EBUSY, "clients of the group are alive");
	rrr_clnt_destroy(a);
	rrr_clnt_destroy(b);
	cr_assert_eq(rrr_clnt_group_destroy(one), 0, "%s", rrr_last_error());
}

struct killer {
	struct rrr_clnt *victim;
	atomic_int done;
};

static void destroy_other(struct rrr_call *call, int status, void *arg)
{
	struct killer *k = arg;

	(void)call;
	(void)status;
	rrr_clnt_destroy(k->victim);
	atomic_store(&k->done, 1);
}

/* A callback of one member destroys another member of its thread. */
Test(clnt_group, a_callback_destroys_another_member)
{
	struct rrr_clnt_group *one;
	struct rrr_clnt_opts o;
	struct rrr_clnt *a, *b;
	struct killer k = {0};
	struct tc_once slow = {0};
	struct rrr_call c, s;
	char port[16];

	cr_assert_eq(rrr_clnt_group_create(1, RRR_WAIT_EVENT, &one), 0, "%s", rrr_last_error());
	snprintf(port, sizeof(port), "%u", ports[1]);
	rrr_clnt_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = port;
	o.group = one;
	cr_assert_eq(rrr_clnt_create(&o, &a), 0, "%s", rrr_last_error());
	cr_assert_eq(rrr_clnt_create(&o, &b), 0, "%s", rrr_last_error());
	/* b has a call in flight (never answered): destroy fails it with
	 * -ECANCELED */
	tc_call_init(&s, GR_PROG, GR_DROP);
	cr_assert_eq(rrr_clnt_call_async(b, &s, tc_once_done, &slow), 0);
	k.victim = b;
	tc_call_init(&c, GR_PROG, GR_NULL);
	cr_assert_eq(rrr_clnt_call_async(a, &c, destroy_other, &k), 0);
	cr_assert(TEST_WAIT_UNTIL(atomic_load(&k.done), 10000));
	cr_assert_eq(atomic_load(&slow.runs), 1, "the victim's call completed once");
	cr_assert_eq(atomic_load(&slow.status), -ECANCELED);
	/* a goes on */
	tc_call_init(&c, GR_PROG, GR_NULL);
	cr_assert_eq(rrr_clnt_call(a, &c), 0, "%s", c.error);
	rrr_clnt_destroy(a);
	cr_assert_eq(rrr_clnt_group_destroy(one), 0, "%s", rrr_last_error());
}
