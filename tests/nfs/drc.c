/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/drc.c - rrr-server's duplicate request cache (server/fs/drc.c)
 * against a real server process over TCP: a REMOVE, a GUARDED CREATE, a
 * RENAME and a WRITE re-sent with the same xid - on a new TCP connection,
 * as a client does after a reconnect - get the bytes of the original reply
 * and are not executed again; a different xid is executed; --drc-entries 0
 * shows what happens without the cache (the second REMOVE answers NOENT);
 * the cache stays within its size (evictions) and its counters are printed.
 * The calls are built by hand (record marking, fixed xids) because the
 * client library picks its own xids.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/oncrpc.h>

#include "tests/nfs/helpers/nfs_helpers.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;
static struct rrr_nfs3_fh root;

static void start(const char *const *extra)
{
	char p[512], port[16];
	if (!th_prog("rrr-server", p, sizeof(p)))
		cr_skip_test(
		    "RRR_BUILD unset or rrr-server not built (run through make test-unit)");
	cr_assert_eq(th_mkdirs(&srv), 0);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, false), 0);
	snprintf(port, sizeof(port), "%u", srv.mount_port);
	struct rrr_nfs3_opts o;
	rrr_nfs3_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = port;
	o.mount_port = port;
	o.export_path = srv.export_dir;
	o.timeout_ms = 10000;
	cr_assert_eq(rrr_nfs3_mount(&o, &nfs), 0, "mount: %s", rrr_last_error());
	root = *rrr_nfs3_root(nfs);
}

static void setup(void)
{
	start(NULL);
}

static void setup_small(void)
{
	static const char *const extra[] = {"--drc-entries", "4", NULL};
	start(extra);
}

static void setup_off(void)
{
	static const char *const extra[] = {"--drc-entries", "0", NULL};
	start(extra);
}

static void teardown(void)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	th_cleanup(&srv);
}

/* --- hand-built calls ------------------------------------------------------ */

typedef int (*xfn)(struct rrr_xdr *, void *);
#define XF(f) ((xfn)(void (*)(void))(f))

struct msg {
	uint8_t b[4096];
	size_t len;
};

/* A record-marked NFSv3 CALL with @xid, AUTH_SYS as the caller. */
static void build(struct msg *m, uint32_t xid, uint32_t proc, xfn enc, void *args)
{
	struct rrr_rpc_cred cred;
	struct rrr_xdr x;
	memset(&cred, 0, sizeof(cred));
	cred.flavor = RRR_AUTH_SYS;
	snprintf(cred.sys.machinename, sizeof(cred.sys.machinename), "drc-test");
	cred.sys.uid = getuid();
	cred.sys.gid = getgid();
	rrr_xdr_init(&x, m->b + 4, sizeof(m->b) - 4, RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, xid, RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, proc, &cred),
		     0);
	cr_assert_eq(enc(&x, args), 0);
	uint32_t rm = htonl(0x80000000u | (uint32_t)rrr_xdr_pos(&x));
	memcpy(m->b, &rm, 4);
	m->len = 4 + rrr_xdr_pos(&x);
}

static int dial(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.mount_port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void read_full(int fd, uint8_t *p, size_t n)
{
	while (n) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		cr_assert_eq(poll(&pf, 1, 10000), 1, "no reply within 10 s");
		ssize_t r = read(fd, p, n);
		cr_assert_gt(r, 0, "server closed the connection");
		p += r;
		n -= (size_t)r;
	}
}

/* Send @m on a fresh connection (a reconnect), return the reply record. */
static void roundtrip(const struct msg *m, struct msg *reply)
{
	int fd = dial();
	uint32_t rm;
	cr_assert_eq(write(fd, m->b, m->len), (ssize_t)m->len);
	read_full(fd, (uint8_t *)&rm, 4);
	rm = ntohl(rm);
	cr_assert(rm & 0x80000000u, "one fragment");
	reply->len = rm & 0x7fffffffu;
	cr_assert_leq(reply->len, sizeof(reply->b));
	read_full(fd, reply->b, reply->len);
	close(fd);
}

/* The NFS status word right after the accepted-reply header. */
static uint32_t nfs_status(const struct msg *r)
{
	struct rrr_xdr x;
	struct rrr_rpc_reply h;
	uint32_t st;
	rrr_xdr_init(&x, (void *)r->b, r->len, RRR_XDR_DECODE);
	cr_assert_eq(rrr_rpc_decode_reply(&x, &h), 0);
	cr_assert_eq(h.accept_stat, 0, "SUCCESS");
	cr_assert_eq(rrr_xdr_get_u32(&x, &st), 0);
	return st;
}

static void dirop(struct rrr_nfs3_diropargs *d, const char *name)
{
	memset(d, 0, sizeof(*d));
	d->dir = root;
	snprintf(d->name, sizeof(d->name), "%s", name);
}

static bool exists(const char *name)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", srv.export_dir, name);
	return stat(p, &st) == 0;
}

static void make_file(const char *name)
{
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(nfs, &root, name, 0644, false, &fh), 0);
}

TestSuite(nfs_drc, .fini = teardown, .timeout = 60);

Test(nfs_drc, resent_remove_gets_the_original_reply, .init = setup)
{
	struct rrr_nfs3_diropargs d;
	struct msg m, r1, r2, r3;
	make_file("victim");
	dirop(&d, "victim");
	build(&m, 0x5eed0001u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	cr_assert_not(exists("victim"));
	roundtrip(&m, &r2); /* the client re-sends it after a reconnect */
	cr_assert_eq(r2.len, r1.len);
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0, "the original reply, byte for byte");
	/* a new call (another xid) is executed: the file is gone */
	build(&m, 0x5eed0002u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r3);
	cr_assert_eq(nfs_status(&r3), RRR_NFS3ERR_NOENT);
	/* the same xid with other arguments is another call too */
	make_file("other");
	dirop(&d, "other");
	build(&m, 0x5eed0001u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r3);
	cr_assert_eq(nfs_status(&r3), RRR_NFS3_OK);
	cr_assert_not(exists("other"));
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "drc.hits 1\n"), "counters in %s", srv.log);
	cr_assert(th_file_contains(srv.log, "nfs.REMOVE 3\n"), "REMOVE ran 3 times, not 4");
}

Test(nfs_drc, resent_guarded_create_and_rename, .init = setup)
{
	struct rrr_nfs3_create_args c;
	struct rrr_nfs3_rename_args rn;
	struct msg m, r1, r2;
	memset(&c, 0, sizeof(c));
	dirop(&c.where, "made");
	c.mode = RRR_NFS3_GUARDED;
	c.attr.set_mode = true;
	c.attr.mode = 0600;
	build(&m, 0x5eed1001u, RRR_NFS3_CREATE, XF(rrr_nfs3_xdr_create_args), &c);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3_OK, "not NFS3ERR_EXIST: answered from the cache");
	cr_assert_eq(r2.len, r1.len);
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0);

	memset(&rn, 0, sizeof(rn));
	dirop(&rn.from, "made");
	dirop(&rn.to, "renamed");
	build(&m, 0x5eed1002u, RRR_NFS3_RENAME, XF(rrr_nfs3_xdr_rename_args), &rn);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3_OK, "not NOENT: answered from the cache");
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0);
	cr_assert(exists("renamed"));
	cr_assert_not(exists("made"));
}

Test(nfs_drc, without_the_cache_a_resent_remove_fails, .init = setup_off)
{
	struct rrr_nfs3_diropargs d;
	struct msg m, r1, r2;
	make_file("victim");
	dirop(&d, "victim");
	build(&m, 0x5eed2001u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3ERR_NOENT, "executed twice: what the cache prevents");
}

Test(nfs_drc, bounded_least_recently_used, .init = setup_small)
{
	struct rrr_nfs3_diropargs d;
	struct msg m, r;
	char name[16];
	/* 6 removes into a 4-entry cache: the first two are evicted */
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		make_file(name);
		dirop(&d, name);
		build(&m, 0x5eed3000u + (uint32_t)i, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs),
		      &d);
		roundtrip(&m, &r);
		cr_assert_eq(nfs_status(&r), RRR_NFS3_OK);
	}
	/* the newest is still cached, the oldest is not */
	dirop(&d, "f5");
	build(&m, 0x5eed3005u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r);
	cr_assert_eq(nfs_status(&r), RRR_NFS3_OK);
	dirop(&d, "f0");
	build(&m, 0x5eed3000u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r);
	cr_assert_eq(nfs_status(&r), RRR_NFS3ERR_NOENT, "evicted: executed again");
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "drc.capacity 4\n"));
	cr_assert(th_file_contains(srv.log, "drc.entries 4\n"));
	cr_assert(th_file_contains(srv.log, "drc.hits 1\n"));
}
