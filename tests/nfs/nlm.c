/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/nlm.c - rrr-server's lock manager (server/fs/nlm.c, nsm.c)
 * against a real server process, with NLM v4 calls made by hand through the
 * client library (rrr_clnt), over TCP and over soft RDMA.
 *
 * What is checked: two owners' exclusive locks conflict, shared ones do
 * not, TEST names the holder, UNLOCK lets the other in; a local process on
 * the server (fcntl) and NFS owners see one set of locks; a client whose
 * NSM state changed (it rebooted) loses its old locks; past the per-client
 * limit of (owner, file) pairs a LOCK gets DENIED_NOLOCKS; a read-only
 * export refuses exclusive locks (ROFS) and grants shared ones; after a restart
 * with a client on record, only reclaims are granted in the grace period,
 * and once it is over new locks are; a blocked LOCK is granted when the
 * holder unlocks, with a GRANTED callback to the client's lock manager (a
 * listener of this test, registered with the host's rpcbind; skipped
 * without one), and the restart's SM_NOTIFY reaches the client's status
 * monitor (the same listener). The wire is standard: tshark, capturing on
 * lo, decodes every call and reply as NLM, DENIED and TEST's holder
 * included, with nothing malformed (skipped without tshark or capture
 * permission).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "server/fs/nlm_xdr.h"
#include "server/fs/rpc_call.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/rpcbind.h"
#include "tests/lib/tshark.h"
#include "tests/test_wait.h"

static struct th_server srv;
static struct rrr_nfs3_fh fh;
static char path[400];

/* ------------------------------------------------------------ NLM calls */

/* The end of a test's client @c and then of the server (it must exit 0),
 * its log left for checks. */
static void end_server(struct rrr_clnt *c)
{
	rrr_clnt_destroy(c);
	cr_assert_eq(th_server_stop(&srv), 0);
}

struct enc_ctx {
	uint32_t proc;
	const struct nlm4_args *a;
};

static int enc_args(struct rrr_xdr *x, const void *p)
{
	const struct enc_ctx *c = p;
	return nlm4_enc_args(x, c->proc, c->a);
}

static int dec_res(struct rrr_xdr *x, void *p)
{
	return nlm4_dec_res(x, false, p);
}

static int dec_testres(struct rrr_xdr *x, void *p)
{
	return nlm4_dec_res(x, true, p);
}

static struct nlm4_res res;

/* @proc with @a: the nlm4_stats answered. */
static uint32_t call(struct rrr_clnt *c, uint32_t proc, const struct nlm4_args *a)
{
	struct enc_ctx e = {proc, a};
	struct rrr_call k = {.prog = NLM_PROG, .vers = NLM_VERS4, .proc = proc,
			     .encode = enc_args, .args = &e,
			     .decode = proc == NLM4_TEST ? dec_testres : dec_res, .res = &res,
			     .timeout_ms = 10000};
	int rc = rrr_clnt_call(c, &k);
	cr_assert_eq(rc, 0, "NLM call %u failed: %d (%s)", proc, rc, rrr_last_error());
	return res.stat;
}

/* Owner @owner of client @caller: a lock of [@off, @off+@len) */
static void mk(struct nlm4_args *a, const char *caller, int owner, bool excl, uint64_t off,
	       uint64_t len)
{
	memset(a, 0, sizeof(*a));
	a->cookie.len = 4;
	memcpy(a->cookie.data, &owner, 4);
	a->exclusive = excl;
	snprintf(a->lock.caller, sizeof(a->lock.caller), "%s", caller);
	a->lock.fh.len = fh.len;
	memcpy(a->lock.fh.data, fh.data, fh.len);
	a->lock.oh.len = (uint32_t)snprintf((char *)a->lock.oh.data, 64, "%d@%s", owner, caller);
	a->lock.svid = owner;
	a->lock.offset = off;
	a->lock.len = len;
	a->state = 1;
}

static struct rrr_clnt *connect_to(bool rdma)
{
	char port[16];
	snprintf(port, sizeof(port), "%u", rdma ? srv.rdma_port : srv.mount_port);
	struct rrr_clnt_opts o;
	rrr_clnt_opts_init(&o);
	o.transport = rdma ? "rdma" : "tcp";
	o.host = "127.0.0.1";
	o.port = port;
	o.timeout_ms = 10000;
	struct rrr_clnt *c = NULL;
	cr_assert_eq(rrr_clnt_create(&o, &c), 0, "connect: %s", rrr_last_error());
	return c;
}

/* Start the server (with @extra options) and find the handle of a file. */
static void start(bool rdma, const char *const *extra)
{
	th_need_server();
	if (!srv.dir[0]) {
		cr_assert_eq(th_mkdirs(&srv), 0);
		snprintf(path, sizeof(path), "%s/f", srv.export_dir);
		int fd = open(path, O_CREAT | O_RDWR, 0666);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, "0123456789", 10), 10);
		close(fd);
	}
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, rdma), 0);
	struct th_mount m;
	th_mount_opts(&srv, false, &m);
	struct rrr_nfs3 *nfs = th_nfs_mount(&m);
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "f", &fh, NULL), 0);
	rrr_nfs3_umount(nfs);
}

static void fini(void)
{
	th_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
}

static struct nlm4_args a, b;

static void conflicts(bool rdma)
{
	start(rdma, NULL);
	struct rrr_clnt *c = connect_to(rdma);
	mk(&a, "cli1", 1, true, 0, 0);
	cr_assert_eq(call(c, NLM4_TEST, &a), NLM4_GRANTED_ST, "TEST on a free file");
	mk(&a, "cli1", 1, true, 0, 5);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	mk(&b, "cli2", 2, true, 3, 4);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_DENIED, "exclusive ranges overlap");
	cr_assert_eq(call(c, NLM4_TEST, &b), NLM4_DENIED);
	cr_assert(res.holder.exclusive);
	cr_assert_eq(res.holder.offset, 0);
	cr_assert_eq(res.holder.len, 5);
	mk(&b, "cli2", 2, true, 5, 5);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST, "a range beside it is free");
	/* the same owner again, and a retransmission: still granted */
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	mk(&a, "cli1", 1, false, 0, 5);
	cr_assert_eq(call(c, NLM4_UNLOCK, &a), NLM4_GRANTED_ST);
	mk(&b, "cli2", 2, true, 0, 5);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST, "free after UNLOCK");
	cr_assert_eq(call(c, NLM4_UNLOCK, (mk(&b, "cli2", 2, false, 0, 0), &b)), NLM4_GRANTED_ST);
	/* shared locks of two owners coexist; an exclusive one waits for both */
	mk(&a, "cli1", 1, false, 0, 0);
	mk(&b, "cli2", 2, false, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST, "shared + shared");
	struct nlm4_args x;
	mk(&x, "cli3", 3, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &x), NLM4_DENIED, "exclusive against shared");
	cr_assert_eq(call(c, NLM4_UNLOCK, &a), NLM4_GRANTED_ST);
	cr_assert_eq(call(c, NLM4_UNLOCK, &b), NLM4_GRANTED_ST);
	cr_assert_eq(call(c, NLM4_LOCK, &x), NLM4_GRANTED_ST);
	/* CANCEL of nothing queued: DENIED; a stale handle: STALE_FH */
	cr_assert_eq(call(c, NLM4_CANCEL, &x), NLM4_DENIED);
	x.lock.fh.data[x.lock.fh.len - 1] ^= 0xff;
	cr_assert_eq(call(c, NLM4_LOCK, &x), NLM4_STALE_FH);
	end_server(c);
}

Test(nfs_nlm, conflicts_over_tcp, .fini = fini, .timeout = 60)
{
	conflicts(false);
}

Test(nfs_nlm, conflicts_over_rdma, .fini = fini, .timeout = 60)
{
	conflicts(true);
}

Test(nfs_nlm, a_local_process_and_nfs_owners_share_the_locks, .fini = fini, .timeout = 60)
{
	start(false, NULL);
	struct rrr_clnt *c = connect_to(false);
	mk(&a, "cli1", 1, true, 0, 4);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	/* a local process asks for the same bytes: held */
	int fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 2, .l_len = 1};
	cr_assert_eq(fcntl(fd, F_SETLK, &fl), -1, "the NFS client's lock is seen locally");
	cr_assert(errno == EAGAIN || errno == EACCES);
	struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
	cr_assert_eq(fcntl(fd, F_GETLK, &q), 0);
	cr_assert_eq(q.l_type, F_WRLCK);
	cr_assert_eq(q.l_len, 4);
	/* the client releases (a close: the whole file), the local lock goes in */
	mk(&a, "cli1", 1, false, 0, 0);
	cr_assert_eq(call(c, NLM4_UNLOCK, &a), NLM4_GRANTED_ST);
	fl.l_start = 0;
	fl.l_len = 0;
	cr_assert_eq(fcntl(fd, F_SETLK, &fl), 0, "free after the client's UNLOCK");
	/* ... and now the client is the one refused, and TEST says so */
	mk(&b, "cli2", 2, false, 8, 1);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_DENIED, "the local lock is seen by NFS");
	cr_assert_eq(call(c, NLM4_TEST, &b), NLM4_DENIED);
	cr_assert(res.holder.exclusive);
	cr_assert_eq(res.holder.svid, getpid(), "a local holder is named by its pid");
	close(fd);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST);
	end_server(c);
}

Test(nfs_nlm, a_rebooted_client_loses_its_old_locks, .fini = fini, .timeout = 60)
{
	start(false, NULL);
	struct rrr_clnt *c = connect_to(false);
	mk(&a, "cli1", 1, true, 0, 0);
	a.state = 5;
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	mk(&b, "cli1", 7, true, 0, 0);
	b.state = 5;
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_DENIED, "another owner of the same client");
	b.state = 7; /* it restarted: its owner 1 is gone */
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST);
	mk(&a, "cli2", 2, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_DENIED);
	end_server(c);
	cr_assert(th_file_contains(srv.log, "nlm.client_reboots 1"));
}

Test(nfs_nlm, the_per_client_limit_holds, .fini = fini, .timeout = 120)
{
	start(false, NULL);
	struct rrr_clnt *c = connect_to(false);
	for (int i = 0; i < 256; i++) {
		mk(&a, "greedy", 1000 + i, false, (uint64_t)i, 1);
		cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST, "owner %d", i);
	}
	mk(&a, "greedy", 5000, false, 300, 1);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_DENIED_NOLOCKS, "past FS_NLM_MAX_FILES");
	/* another client is not held back by this one */
	mk(&b, "modest", 1, false, 300, 1);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_GRANTED_ST);
	/* an owner that closes frees its slot */
	mk(&a, "greedy", 1000, false, 0, 0);
	cr_assert_eq(call(c, NLM4_UNLOCK, &a), NLM4_GRANTED_ST);
	mk(&a, "greedy", 5000, false, 300, 1);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	end_server(c);
	cr_assert(th_file_contains(srv.log, "nlm.limit_reached 1"));
	cr_assert_eq(th_count_lines(srv.log, "FS_NLM_MAX_FILES) of client greedy reached"), 1);
}

Test(nfs_nlm, reclaims_in_the_grace_period_after_a_restart, .fini = fini, .timeout = 90)
{
	static const char *const grace[] = {"--grace", "3", NULL};
	start(false, grace);
	struct rrr_clnt *c = connect_to(false);
	mk(&a, "cli1", 1, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST, "no grace period on a first start");
	end_server(c);

	start(false, grace); /* the same state dir: cli1 is on record */
	c = connect_to(false);
	mk(&b, "cli2", 2, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_DENIED_GRACE_PERIOD, "new locks wait");
	cr_assert_eq(call(c, NLM4_TEST, &b), NLM4_DENIED_GRACE_PERIOD);
	a.reclaim = true;
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST, "a reclaim goes in");
	/* once the period is over, cli2 meets cli1's reclaimed lock */
	uint32_t st = NLM4_DENIED_GRACE_PERIOD;
	for (double end = th_now() + 20; th_now() < end && st == NLM4_DENIED_GRACE_PERIOD;
	     usleep(100000))
		st = call(c, NLM4_LOCK, &b);
	cr_assert_eq(st, NLM4_DENIED, "after the grace period: the reclaimed lock holds");
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_DENIED_GRACE_PERIOD,
		     "a reclaim after the grace period is refused, as Linux does");
	end_server(c);
	cr_assert(th_file_contains(srv.log, "may reclaim their locks for 3 s"));
}

Test(nfs_nlm, a_read_only_export_refuses_exclusive_locks, .fini = fini, .timeout = 60)
{
	static const char *const ro[] = {"--read-only", NULL};
	start(false, ro);
	struct rrr_clnt *c = connect_to(false);
	mk(&a, "cli1", 1, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_ROFS);
	mk(&a, "cli1", 1, false, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST, "shared locks are reads");
	end_server(c);
}

/* ------------------------------------------ the client's side: callbacks */

/* SET (@port) or UNSET (0) @prog/@vers on "tcp" with the local rpcbind,
 * over its unix socket (it takes changes only from there): the answer. */
static bool pmap_change(uint32_t prog, uint32_t vers, uint16_t port)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/run/rpcbind.sock");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(fd);
		return false;
	}
	uint8_t args[256], buf[256];
	char uaddr[64];
	snprintf(uaddr, sizeof(uaddr), "127.0.0.1.%u.%u", port >> 8, port & 255);
	struct rrr_xdr x;
	rrr_xdr_init(&x, args, sizeof(args), RRR_XDR_ENCODE);
	rrr_xdr_put_u32(&x, prog);
	rrr_xdr_put_u32(&x, vers);
	rrr_xdr_put_string(&x, "tcp");
	rrr_xdr_put_string(&x, port ? uaddr : "");
	rrr_xdr_put_string(&x, "test");
	bool ok = false;
	if (fs_rpc_call(fd, 100000, 3, port ? 1 : 2, args, rrr_xdr_pos(&x), buf, sizeof(buf),
			&x) == 0)
		rrr_xdr_get_bool(&x, &ok);
	close(fd);
	return ok;
}

/* The fake client's lock manager and status monitor: answers GRANTED
 * (remembering what was granted) and SM_NOTIFY (remembering the state). */
struct fake {
	int lfd;
	uint16_t port;
	pthread_t th;
	/* shared with the fake's thread: atomics, read and written whole */
	atomic_bool stop;
	atomic_int granted; /* GRANTED calls answered */
	_Atomic int32_t granted_svid;
	atomic_int notified; /* SM_NOTIFY calls */
	_Atomic int32_t notify_state;
};

static void serve_one(struct fake *f, int fd)
{
	static uint8_t buf[16384], out[256];
	for (;;) {
		uint32_t mark;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 5000) != 1 || read(fd, &mark, 4) != 4)
			return;
		uint32_t len = ntohl(mark) & 0x7fffffffu;
		if (len > sizeof(buf))
			return;
		size_t got = 0;
		while (got < len) {
			ssize_t n = read(fd, buf + got, len - got);
			if (n <= 0)
				return;
			got += (size_t)n;
		}
		struct rrr_xdr x;
		rrr_xdr_init(&x, buf, len, RRR_XDR_DECODE);
		struct rrr_rpc_call rc;
		if (rrr_rpc_decode_call(&x, &rc) < 0)
			return;
		struct rrr_xdr o;
		rrr_xdr_init(&o, out + 4, sizeof(out) - 4, RRR_XDR_ENCODE);
		rrr_rpc_encode_accepted(&o, rc.xid, RRR_RPC_SUCCESS, 0, 0);
		if (rc.prog == NLM_PROG && rc.proc == NLM4_GRANTED) {
			static struct nlm4_args g;
			if (nlm4_dec_args(&x, NLM4_GRANTED, &g) < 0)
				return;
			f->granted_svid = g.lock.svid;
			struct nlm4_res r = {.cookie = g.cookie, .stat = NLM4_GRANTED_ST};
			nlm4_enc_res(&o, false, &r);
			f->granted++;
		} else if (rc.prog == NSM_PROG && rc.proc == NSM_NOTIFY) {
			struct nlm_notify n;
			if (nlm_dec_notify(&x, &n) < 0)
				return;
			f->notify_state = n.state;
			f->notified++;
		}
		mark = htonl(0x80000000u | (uint32_t)rrr_xdr_pos(&o));
		memcpy(out, &mark, 4);
		if (write(fd, out, 4 + rrr_xdr_pos(&o)) < 0)
			return;
	}
}

static void *fake_main(void *p)
{
	struct fake *f = p;
	while (!f->stop) {
		struct pollfd pfd = {.fd = f->lfd, .events = POLLIN};
		if (poll(&pfd, 1, 100) != 1)
			continue;
		int fd = accept(f->lfd, NULL, NULL);
		if (fd >= 0) {
			serve_one(f, fd);
			close(fd);
		}
	}
	return NULL;
}

static void fake_fini(void)
{
	fini();
	th_rpcbind_release();
}

Test(nfs_nlm, a_blocked_lock_is_granted_by_callback_and_a_restart_is_notified,
     .fini = fake_fini, .timeout = 120)
{
	th_need_server();
	if (!th_rpcbind_need())
		cr_skip_test("no rpcbind on this host (apt-get install rpcbind), or not root to "
			     "start it: the callbacks find the client's ports through it");
	static struct fake f;
	memset(&f, 0, sizeof(f));
	f.lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof(sin);
	cr_assert_eq(bind(f.lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(f.lfd, 8), 0);
	cr_assert_eq(getsockname(f.lfd, (struct sockaddr *)&sin, &sl), 0);
	f.port = ntohs(sin.sin_port);
	if (!pmap_change(NLM_PROG, NLM_VERS4, f.port) || !pmap_change(NSM_PROG, NSM_VERS, f.port))
		cr_skip_test("this host's rpcbind does not take our test lock manager "
			     "(another one, the kernel's lockd, is registered)");
	cr_assert_eq(pthread_create(&f.th, NULL, fake_main, &f), 0);

	static const char *const grace[] = {"--grace", "1", NULL};
	start(false, grace);
	struct rrr_clnt *c = connect_to(false);
	mk(&a, "cli1", 1, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	mk(&b, "cli2", 2, true, 0, 0);
	b.block = true;
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_BLOCKED);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_BLOCKED, "a retransmission: still queued");
	cr_assert_eq(f.granted, 0);
	cr_assert_eq(call(c, NLM4_UNLOCK, (mk(&a, "cli1", 1, false, 0, 0), &a)), NLM4_GRANTED_ST);
	for (double end = th_now() + 10; th_now() < end && f.granted == 0;)
		usleep(20000);
	cr_assert_eq(f.granted, 1, "GRANTED callback after the holder's UNLOCK");
	cr_assert_eq(f.granted_svid, 2);
	mk(&a, "cli1", 1, true, 0, 0);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_DENIED, "the granted lock is held");
	/* a blocked LOCK that is cancelled is never granted */
	a.block = true;
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_BLOCKED);
	cr_assert_eq(call(c, NLM4_CANCEL, &a), NLM4_GRANTED_ST);
	b.block = false;
	cr_assert_eq(call(c, NLM4_UNLOCK, (mk(&b, "cli2", 2, false, 0, 0), &b)), NLM4_GRANTED_ST);
	usleep(300000); /* longer than the retry period: nothing may be granted now */
	cr_assert_eq(f.granted, 1);
	end_server(c);

	/* the restart tells the clients on record (127.0.0.1: our fake statd) */
	start(false, grace);
	for (double end = th_now() + 20; th_now() < end && f.notified == 0;)
		usleep(20000);
	cr_assert_geq(f.notified, 1, "SM_NOTIFY after the restart");
	cr_assert(f.notify_state > 1 && (f.notify_state & 1), "an odd state number, advanced");
	cr_assert_eq(th_server_stop(&srv), 0);
	f.stop = true;
	pthread_join(f.th, NULL);
	close(f.lfd);
	pmap_change(NLM_PROG, NLM_VERS4, 0);
	pmap_change(NSM_PROG, NSM_VERS, 0);
}

/* ------------------------------------------------- the wire: tshark decodes */

static void capture_fini(void)
{
	th_tshark_stop();
	fini();
}

Test(nfs_nlm, tshark_decodes_calls_and_replies, .fini = capture_fini, .timeout = 120)
{
	if (system("command -v tshark >/dev/null 2>&1") != 0)
		cr_skip_test("tshark is not installed (Debian package tshark)");
	start(false, NULL);
	char pcap[400], why[256];
	snprintf(pcap, sizeof(pcap), "/tmp/rrr-nlm-%d.pcapng", (int)getpid());
	char filter[64];
	snprintf(filter, sizeof(filter), "tcp port %u", srv.mount_port);
	if (th_tshark_start(filter, pcap, why, sizeof(why)) < 0)
		cr_skip_test("%s", why);
	struct rrr_clnt *c = connect_to(false);
	/* the capture is live once a probe (NLM NULL) shows up in the file */
	long n = 0;
	for (double end = th_now() + 20; th_now() < end && n < 1;) {
		struct rrr_call k = {.prog = NLM_PROG, .vers = NLM_VERS4, .proc = NLM4_NULL,
				     .timeout_ms = 10000};
		cr_assert_eq(rrr_clnt_call(c, &k), 0);
		usleep(100000);
		n = th_tshark_frames(pcap, "nlm.procedure_v4 == 0");
	}
	if (n < 1)
		cr_skip_test("tshark captured nothing on lo in 20 s");
	long base = th_tshark_frames(pcap, "nlm");
	mk(&a, "cli1", 1, true, 0, 5);
	cr_assert_eq(call(c, NLM4_LOCK, &a), NLM4_GRANTED_ST);
	mk(&b, "cli2", 2, true, 3, 4);
	cr_assert_eq(call(c, NLM4_LOCK, &b), NLM4_DENIED);
	cr_assert_eq(call(c, NLM4_TEST, &b), NLM4_DENIED);
	cr_assert_eq(call(c, NLM4_CANCEL, &b), NLM4_DENIED);
	cr_assert_eq(call(c, NLM4_UNLOCK, &a), NLM4_GRANTED_ST);
	rrr_clnt_destroy(c);
	/* dumpcap may still be writing: wait for the ten frames */
	for (double end = th_now() + 10; th_now() < end && n < base + 10; usleep(100000))
		n = th_tshark_frames(pcap, "nlm");
	th_tshark_stop();
	cr_assert_eq(th_tshark_frames(pcap, "nlm") - base, 10, "five calls and their replies decoded as NLM");
	cr_assert_eq(th_tshark_frames(pcap, "nlm.procedure_v4 == 2 && rpc.msgtyp == 0"), 2, "two LOCK calls");
	cr_assert_eq(th_tshark_frames(pcap, "nlm.stat == 1"), 2, "DENIED in the LOCK and CANCEL replies");
	cr_assert_eq(th_tshark_frames(pcap, "nlm.test_stat.stat == 1 && nlm.holder && "
				  "nlm.lock.l_len64 == 5 && nlm.exclusive == 1"),
		     1, "TEST's DENIED reply with its holder decoded");
	cr_assert_eq(th_tshark_frames(pcap, "_ws.malformed || _ws.expert.severity >= \"Error\""), 0);
	cr_assert_eq(th_server_stop(&srv), 0);
	unlink(pcap);
}
