/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/drc_inprogress.c - the duplicate request cache (server/fs/drc.c,
 * linked from rrr-server's objects) with a call still running: a handler that
 * blocks until the test lets it go stands in for a slow REMOVE, and the
 * requests are built by hand (a connection with a chosen peer address and
 * port, the decoded call header, the argument stream). A retransmission
 * that arrives while the original runs - the same client address and port,
 * xid, credential and arguments - is not executed: it waits for the
 * original and gets its reply bytes. The same call from another port is
 * another call and runs at once, beside the first. No sleeps: the test
 * polls the handler's run count and the cache's counters, each poll
 * bounded.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "server/fs/drc.h"
#include "server/svc_impl.h"

static atomic_uint runs;
static pthread_mutex_t rel_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rel_cv = PTHREAD_COND_INITIALIZER;
static bool released;

/* The stand-in REMOVE: counts, blocks until released (10 s at most), then
 * answers NFS3_OK and its run number. */
static int slow_remove(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct timespec ts;
	unsigned n = atomic_fetch_add(&runs, 1) + 1;

	(void)req;
	(void)args;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&rel_mu);
	while (!released)
		if (pthread_cond_timedwait(&rel_cv, &rel_mu, &ts))
			break;
	pthread_mutex_unlock(&rel_mu);
	if (rrr_xdr_put_u32(res, RRR_NFS3_OK) || rrr_xdr_put_u32(res, 0xc0de0000u + n))
		return RRR_SVC_SYSTEM_ERR;
	return 0;
}

static void release(void)
{
	pthread_mutex_lock(&rel_mu);
	released = true;
	pthread_cond_broadcast(&rel_cv);
	pthread_mutex_unlock(&rel_mu);
}

struct fake {
	struct rrr__svc_conn conn;
	struct rrr_svc_req req;
	uint8_t argbuf[64];
	uint8_t resbuf[64];
	struct rrr_xdr args, res;
	int rc;
	pthread_t thr;
};

/* A REMOVE with @xid from 127.0.0.1:@port, AUTH_SYS uid 1000. */
static void fake_init(struct fake *f, uint32_t xid, uint16_t port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&f->conn.peer;
	struct rrr_xdr x;

	memset(f, 0, sizeof(*f));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->req.conn = &f->conn;
	f->req.call.xid = xid;
	f->req.call.prog = RRR_NFS3_PROGRAM;
	f->req.call.vers = RRR_NFS3_VERSION;
	f->req.call.proc = RRR_NFS3_REMOVE;
	f->req.call.cred.flavor = RRR_AUTH_SYS;
	f->req.call.cred.sys.uid = 1000;
	f->req.call.cred.sys.gid = 1000;
	rrr_xdr_init(&x, f->argbuf, sizeof(f->argbuf), RRR_XDR_ENCODE);
	for (uint32_t i = 0; i < sizeof(f->argbuf) / 4; i++)
		cr_assert_eq(rrr_xdr_put_u32(&x, 0xa0000000u + i), 0);
	rrr_xdr_init(&f->args, f->argbuf, sizeof(f->argbuf), RRR_XDR_DECODE);
	rrr_xdr_init(&f->res, f->resbuf, sizeof(f->resbuf), RRR_XDR_ENCODE);
}

static void *run_call(void *arg)
{
	struct fake *f = arg;

	f->rc = fs_drc_nfs3_procs()[RRR_NFS3_REMOVE].fn(&f->req, &f->args, &f->res);
	return NULL;
}

static void start_call(struct fake *f)
{
	cr_assert_eq(pthread_create(&f->thr, NULL, run_call, f), 0);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bounded poll: until the handler ran @n times, or 10 s. */
static bool runs_reach(unsigned n)
{
	for (int64_t end = now_ms() + 10000; now_ms() < end;) {
		if (atomic_load(&runs) >= n)
			return true;
		sched_yield();
	}
	return false;
}

/* Bounded poll: until the cache counted @n waiting duplicates, or 10 s. */
static bool waits_reach(uint64_t n)
{
	struct fs_drc_stats st;

	for (int64_t end = now_ms() + 10000; now_ms() < end;) {
		fs_drc_stats(&st);
		if (st.waits >= n)
			return true;
		sched_yield();
	}
	return false;
}

static struct rrr_svc_proc base[RRR_NFS3_NPROCS];

static void setup(void)
{
	base[RRR_NFS3_REMOVE].name = "REMOVE";
	base[RRR_NFS3_REMOVE].fn = slow_remove;
	cr_assert_eq(fs_drc_init(base, 16), 0);
}

static void teardown(void)
{
	release();
	fs_drc_fini();
}

TestSuite(nfs_drc_inprogress, .init = setup, .fini = teardown, .timeout = 60);

/* The same call (xid 0x1234) from port 40001 in @a and from @port_b in @b;
 * @a started and running. */
static void start_first(struct fake *a, struct fake *b, uint16_t port_b)
{
	fake_init(a, 0x1234u, 40001);
	fake_init(b, 0x1234u, port_b);
	start_call(a);
	cr_assert(runs_reach(1), "the original runs");
}

/* Lets the calls go, waits for @a and @b to end: the cache's counters. */
static struct fs_drc_stats finish(struct fake *a, struct fake *b)
{
	struct fs_drc_stats st;

	release();
	pthread_join(a->thr, NULL);
	pthread_join(b->thr, NULL);
	fs_drc_stats(&st);
	return st;
}

Test(nfs_drc_inprogress, duplicate_waits_for_the_original)
{
	static struct fake a, b;

	start_first(&a, &b, 40001);
	start_call(&b); /* the retransmission, while the original runs */
	cr_assert(waits_reach(1), "the duplicate waits for it");
	cr_assert_eq(atomic_load(&runs), 1, "and is not executed");
	struct fs_drc_stats st = finish(&a, &b);
	cr_assert_eq(atomic_load(&runs), 1, "executed once");
	cr_assert_eq(a.rc, 0);
	cr_assert_eq(b.rc, 0);
	cr_assert_eq(rrr_xdr_pos(&b.res), rrr_xdr_pos(&a.res));
	cr_assert_eq(memcmp(a.resbuf, b.resbuf, rrr_xdr_pos(&a.res)), 0, "the original's reply");
	cr_assert_eq(st.hits, 1);
	cr_assert_eq(st.misses, 1);
	cr_assert_eq(st.drops, 0);
}

Test(nfs_drc_inprogress, same_call_from_another_port_runs_beside_it)
{
	static struct fake a, c;

	start_first(&a, &c, 40002);
	start_call(&c);
	cr_assert(runs_reach(2), "another port: another call, executed while the first runs");
	struct fs_drc_stats st = finish(&a, &c);
	cr_assert_neq(memcmp(a.resbuf, c.resbuf, rrr_xdr_pos(&a.res)), 0, "its own reply");
	cr_assert_eq(st.hits, 0);
	cr_assert_eq(st.waits, 0);
	cr_assert_eq(st.misses, 2);
}
