/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/drc.c - rrr-server's duplicate request cache (server/fs/drc.c)
 * against a real server process, over TCP and over soft RDMA.
 *
 * What is replayed: a REMOVE, a GUARDED CREATE, a RENAME and a WRITE re-sent
 * with the same xid from the same client address and port - on a new TCP
 * connection bound to the port of the last one, as a client does after a
 * reconnect - get the bytes of the original reply and are not executed
 * again. What is not: the same xid with anything else different is another
 * call and is executed: other data after the first 256 bytes of a WRITE
 * (TCP, and over RDMA with the data in a read chunk), another credential
 * (uid), another source port, other arguments. --drc-entries 0 shows what
 * happens without the cache (the second REMOVE answers NOENT); the cache
 * stays within its size (evictions) and its counters are printed. The TCP
 * calls are built by hand (record marking, fixed xids, chosen source ports)
 * because the client library picks its own xids; the RDMA calls go through
 * the client library with its next xid set (client/clnt_impl.h).
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

#include "client/clnt_impl.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/raw_rpc.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;
static struct rrr_nfs3_fh root;

static void start_on(const char *const *extra, bool rdma)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, rdma), 0);
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt); /* NFS over TCP whatever the server offers */
	nfs = th_nfs_mount(&mt);
	root = *rrr_nfs3_root(nfs);
}

static void start(const char *const *extra)
{
	start_on(extra, false);
}

static void setup_rdma(void)
{
	start_on(NULL, true);
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

/* A record-marked NFSv3 CALL with @xid, AUTH_SYS as @uid/@gid. */
static void build_as(struct msg *m, uint32_t xid, uint32_t proc, xfn enc, void *args, uint32_t uid,
		     uint32_t gid)
{
	struct rrr_rpc_cred cred;
	struct rrr_xdr x;
	memset(&cred, 0, sizeof(cred));
	cred.flavor = RRR_AUTH_SYS;
	snprintf(cred.sys.machinename, sizeof(cred.sys.machinename), "drc-test");
	cred.sys.uid = uid;
	cred.sys.gid = gid;
	rrr_xdr_init(&x, m->b + 4, sizeof(m->b) - 4, RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, xid, RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, proc, &cred),
		     0);
	cr_assert_eq(enc(&x, args), 0);
	uint32_t rm = htonl(0x80000000u | (uint32_t)rrr_xdr_pos(&x));
	memcpy(m->b, &rm, 4);
	m->len = 4 + rrr_xdr_pos(&x);
}

/* ... as this process's uid and gid. */
static void build(struct msg *m, uint32_t xid, uint32_t proc, xfn enc, void *args)
{
	build_as(m, xid, proc, enc, args, getuid(), getgid());
}

/* A TCP connection to the server from 127.0.0.1:@port (0: the kernel
 * picks); *@bound gets the port it came from. */
static int dial_from(uint16_t port, uint16_t *bound)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.mount_port)};
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port)};
	socklen_t ml = sizeof(me);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0, "bind port %u: %s",
		     (unsigned)port, strerror(errno));
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s",
		     strerror(errno));
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&me, &ml), 0);
	*bound = ntohs(me.sin_port);
	return fd;
}

/* Close with a reset: no TIME_WAIT, so the port can be bound again at once. */
static void close_rst(int fd)
{
	struct linger l = {.l_onoff = 1, .l_linger = 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
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

/* Send @m on a fresh connection from 127.0.0.1:*@port (0: any, then set
 * to the port used) and return the reply record. */
static void roundtrip_port(const struct msg *m, struct msg *reply, uint16_t *port)
{
	int fd = dial_from(*port, port);
	uint32_t rm;
	cr_assert_eq(write(fd, m->b, m->len), (ssize_t)m->len);
	read_full(fd, (uint8_t *)&rm, 4);
	rm = ntohl(rm);
	cr_assert(rm & 0x80000000u, "one fragment");
	reply->len = rm & 0x7fffffffu;
	cr_assert_leq(reply->len, sizeof(reply->b));
	read_full(fd, reply->b, reply->len);
	close_rst(fd);
}

/* The client's port: every roundtrip() of a test comes from it, each on a
 * new connection (a reconnect keeps its source port, as Linux's client and
 * rrr_clnt do). */
static uint16_t my_port;

static void roundtrip(const struct msg *m, struct msg *reply)
{
	roundtrip_port(m, reply, &my_port);
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

/* A new file @name is removed by a REMOVE call of @xid (arguments into
 * @d, the call into @m, its reply into @r): NFS3_OK, and it is gone. */
static void removed(uint32_t xid, const char *name, struct rrr_nfs3_diropargs *d, struct msg *m,
		    struct msg *r)
{
	make_file(name);
	dirop(d, name);
	build(m, xid, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), d);
	roundtrip(m, r);
	cr_assert_eq(nfs_status(r), RRR_NFS3_OK);
	cr_assert_not(exists(name));
}

TestSuite(nfs_drc, .fini = teardown, .timeout = 60);

Test(nfs_drc, resent_remove_gets_the_original_reply, .init = setup)
{
	struct rrr_nfs3_diropargs d;
	struct msg m, r1, r2, r3;
	removed(0x5eed0001u, "victim", &d, &m, &r1);
	roundtrip(&m, &r2); /* the client re-sends it after a reconnect */
	cr_assert_eq(r2.len, r1.len);
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0, "the original reply, byte for byte");
	/* a new call (another xid) is executed: the file is gone */
	build(&m, 0x5eed0002u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r3);
	cr_assert_eq(nfs_status(&r3), RRR_NFS3ERR_NOENT);
	/* the same xid with other arguments is another call too */
	removed(0x5eed0001u, "other", &d, &m, &r3);
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

/* --- what makes a call the same call -------------------------------------- */

#define WDATA 1024u

/* Bytes of @path in the export, at most @cap; the count. */
static size_t export_read(const char *name, uint8_t *buf, size_t cap)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", srv.export_dir, name);
	FILE *f = fopen(p, "rb");
	cr_assert_not_null(f, "%s", p);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* A FILE_SYNC WRITE of @len bytes of @data at offset 0 of @fh. */
static void write_msg(struct msg *m, uint32_t xid, const struct rrr_nfs3_fh *fh, const uint8_t *data,
		      uint32_t len, uint32_t uid, uint32_t gid)
{
	struct rrr_nfs3_write_args w;
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	memset(&w, 0, sizeof(w));
	w.fh = *fh;
	w.count = w.data_len = len;
	w.stable = RRR_NFS3_FILE_SYNC;
	w.iov = &iov;
	w.niov = 1;
	build_as(m, xid, RRR_NFS3_WRITE, XF(rrr_nfs3_xdr_write_args), &w, uid, gid);
}

/* Stop the server (its counters go to its log) and check one line. */
static void stop_and_expect(const char *const *lines)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	for (; *lines; lines++)
		cr_assert(th_file_contains(srv.log, *lines), "no \"%.*s\" in %s",
			  (int)strlen(*lines) - 1, *lines, srv.log);
}

/* A new WRITE that reuses an xid, with the same first 256 bytes of
 * arguments (header and the first ~170 data bytes) but other data after
 * them, is another call: executed, its data reaches the file. */
Test(nfs_drc, write_same_xid_other_data_after_256_bytes_runs, .init = setup)
{
	static uint8_t a[WDATA], b[WDATA], got[2 * WDATA];
	struct rrr_nfs3_fh fh;
	struct msg m, r1, r2;
	cr_assert_eq(rrr_nfs3_create(nfs, &root, "w", 0644, false, &fh), 0);
	for (unsigned i = 0; i < WDATA; i++)
		a[i] = b[i] = (uint8_t)(i * 7 + 1);
	for (unsigned i = 512; i < WDATA; i++)
		b[i] = (uint8_t)~a[i];
	write_msg(&m, 0x5eed4001u, &fh, a, WDATA, getuid(), getgid());
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	cr_assert_eq(export_read("w", got, sizeof(got)), WDATA);
	cr_assert_eq(memcmp(got, a, WDATA), 0);
	write_msg(&m, 0x5eed4001u, &fh, b, WDATA, getuid(), getgid());
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3_OK);
	cr_assert_eq(export_read("w", got, sizeof(got)), WDATA);
	cr_assert_eq(memcmp(got, b, WDATA), 0, "the second WRITE's data is in the file");
	/* and that one, re-sent as it is, is replayed */
	roundtrip(&m, &r1);
	cr_assert_eq(r1.len, r2.len);
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0);
	static const char *const want[] = {"nfs.WRITE 2\n", "drc.hits 1\n",
					   "drc.mismatches 1\n", NULL};
	stop_and_expect(want);
}

/* The same xid and arguments from another user is another call: executed
 * as that user (uid 4242 may not write a 0644 file it does not own). */
Test(nfs_drc, same_xid_other_uid_runs, .init = setup)
{
	static uint8_t a[WDATA];
	struct rrr_nfs3_fh fh;
	struct msg m, r1, r2;
	cr_assert_eq(rrr_nfs3_create(nfs, &root, "owned", 0644, false, &fh), 0);
	memset(a, 0x5a, sizeof(a));
	write_msg(&m, 0x5eed5001u, &fh, a, WDATA, getuid(), getgid());
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	write_msg(&m, 0x5eed5001u, &fh, a, WDATA, 4242, 4242);
	roundtrip(&m, &r2);
	if (getuid() == 0) /* a server run by root acts as the caller */
		cr_assert_eq(nfs_status(&r2), RRR_NFS3ERR_ACCES, "not the owner's cached OK");
	/* other groups are another credential too */
	struct rrr_nfs3_diropargs d;
	make_file("g");
	dirop(&d, "g");
	build(&m, 0x5eed5002u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	build_as(&m, 0x5eed5002u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d, getuid(),
		 getgid() + 1);
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3ERR_NOENT, "executed: the file is gone");
	static const char *const want[] = {"nfs.WRITE 2\n", "nfs.REMOVE 2\n", "drc.hits 0\n",
					   NULL};
	stop_and_expect(want);
}

/* The same call from another source port is another client's call. */
Test(nfs_drc, same_call_from_another_port_runs, .init = setup)
{
	struct rrr_nfs3_diropargs d;
	struct msg m, r1, r2;
	uint16_t other = 0;
	make_file("victim");
	dirop(&d, "victim");
	build(&m, 0x5eed6001u, RRR_NFS3_REMOVE, XF(rrr_nfs3_xdr_diropargs), &d);
	roundtrip(&m, &r1);
	cr_assert_eq(nfs_status(&r1), RRR_NFS3_OK);
	roundtrip_port(&m, &r2, &other);
	cr_assert_neq(other, my_port);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3ERR_NOENT, "executed again: not replayed");
	/* from the first port it is still the original call */
	roundtrip(&m, &r2);
	cr_assert_eq(nfs_status(&r2), RRR_NFS3_OK);
	cr_assert_eq(memcmp(r1.b, r2.b, r1.len), 0);
	static const char *const want[] = {"nfs.REMOVE 2\n", "drc.hits 1\n", NULL};
	stop_and_expect(want);
}

/* --- over soft RDMA: the WRITE data comes in a read chunk ------------------ */

#define RDATA (64u << 10)

struct wcall {
	struct rrr_nfs3_write_args a;
	struct rrr_nfs3_write_res r;
	struct iovec iov;
	struct rrr_rpc_cred cred;
	struct rrr_call c;
};

static int enc_write(struct rrr_xdr *x, const void *a)
{
	return rrr_nfs3_xdr_write_args(x, (struct rrr_nfs3_write_args *)a);
}

static int dec_write(struct rrr_xdr *x, void *r)
{
	return rrr_nfs3_xdr_write_res(x, r);
}

/* WRITE @len bytes of @data at 0 of @fh with xid @xid on @c; its status. */
static uint32_t rdma_write(struct rrr_clnt *c, uint32_t xid, const struct rrr_nfs3_fh *fh,
			   const uint8_t *data, uint32_t len)
{
	struct wcall w;
	memset(&w, 0, sizeof(w));
	w.iov.iov_base = (void *)data;
	w.iov.iov_len = len;
	w.a.fh = *fh;
	w.a.count = w.a.data_len = len;
	w.a.stable = RRR_NFS3_FILE_SYNC;
	w.a.iov = &w.iov;
	w.a.niov = 1;
	w.cred.flavor = RRR_AUTH_SYS;
	snprintf(w.cred.sys.machinename, sizeof(w.cred.sys.machinename), "drc-test");
	w.cred.sys.uid = getuid();
	w.cred.sys.gid = getgid();
	w.c.prog = RRR_NFS3_PROGRAM;
	w.c.vers = RRR_NFS3_VERSION;
	w.c.proc = RRR_NFS3_WRITE;
	w.c.cred = &w.cred;
	w.c.encode = enc_write;
	w.c.args = &w.a;
	w.c.decode = dec_write;
	w.c.res = &w.r;
	w.c.ddp = RRR_DDP_TO_SERVER;
	w.c.payload = &w.iov;
	w.c.npayload = 1;
	c->next_xid = xid; /* the library's own counter: a re-used xid */
	cr_assert_eq(rrr_clnt_call(c, &w.c), 0, "%s", rrr_last_error());
	return w.r.status;
}

/* Same xid, same header, other bytes in the read chunk (far past the first
 * 256): executed; the identical call re-sent is replayed, once pulled. */
Test(nfs_drc, rdma_write_same_xid_other_chunk_data_runs, .init = setup_rdma)
{
	static uint8_t a[RDATA], b[RDATA], got[2 * RDATA];
	struct rrr_nfs3_fh fh;
	struct rrr_clnt *c;
	struct rrr_xprt_stats st;
	cr_assert_eq(rrr_nfs3_create(nfs, &root, "r", 0644, false, &fh), 0);
	for (unsigned i = 0; i < RDATA; i++)
		a[i] = b[i] = (uint8_t)(i * 13 + 5);
	b[RDATA - 100] ^= 0xff;
	cr_assert_eq(th_raw_connect("rdma", srv.rdma_port, 10000, false, &c), 0, "%s",
		     rrr_last_error());
	cr_assert_eq(rdma_write(c, 0x5eed7001u, &fh, a, RDATA), RRR_NFS3_OK);
	cr_assert_eq(export_read("r", got, sizeof(got)), RDATA);
	cr_assert_eq(memcmp(got, a, RDATA), 0);
	cr_assert_eq(rdma_write(c, 0x5eed7001u, &fh, b, RDATA), RRR_NFS3_OK);
	cr_assert_eq(export_read("r", got, sizeof(got)), RDATA);
	cr_assert_eq(memcmp(got, b, RDATA), 0, "the second WRITE's chunk reached the file");
	cr_assert_eq(rdma_write(c, 0x5eed7001u, &fh, b, RDATA), RRR_NFS3_OK); /* re-sent */
	rrr_clnt_stats(c, &st);
	cr_assert_eq(st.read_chunks, 3, "the data went by read chunk, not inline");
	rrr_clnt_destroy(c);
	static const char *const want[] = {"nfs.WRITE 2\n", "drc.hits 1\n",
					   "drc.mismatches 1\n", NULL};
	stop_and_expect(want);
}

/* --- the client library reconnects from its port --------------------------- */

static void setup_idle(void)
{
	static const char *const extra[] = {"--idle-timeout", "500", NULL};
	start_on(extra, true);
}

static int enc_dirop(struct rrr_xdr *x, const void *a)
{
	return rrr_nfs3_xdr_diropargs(x, (struct rrr_nfs3_diropargs *)a);
}

static int dec_status(struct rrr_xdr *x, void *r)
{
	return rrr_xdr_get_u32(x, r);
}

/* REMOVE @name with xid @xid on @c; the NFS status. */
static uint32_t clnt_remove(struct rrr_clnt *c, uint32_t xid, const char *name)
{
	struct rrr_nfs3_diropargs d;
	struct rrr_rpc_cred cred = {.flavor = RRR_AUTH_SYS,
				    .sys = {.machinename = "drc-test", .uid = getuid(), .gid = getgid()}};
	uint32_t st = 0xffffffffu;
	struct rrr_call k = {.prog = RRR_NFS3_PROGRAM, .vers = RRR_NFS3_VERSION, .proc = RRR_NFS3_REMOVE,
			     .cred = &cred, .encode = enc_dirop, .args = &d, .decode = dec_status,
			     .res = &st};
	dirop(&d, name);
	c->next_xid = xid;
	cr_assert_eq(rrr_clnt_call(c, &k), 0, "%s", rrr_last_error());
	return st;
}

/* The server closes the idle connection after the REMOVE ran (its reply
 * could as well have been lost with it); the client re-sends the call with
 * its xid on the next connection, which comes from the same port: the
 * cache answers, the file is not removed twice (no NOENT). */
/*
 * One try: REMOVE @name with @xid, wait for the server to close the idle
 * connection, send the same REMOVE again. True when it was answered from
 * the cache (NFS3_OK), false when it ran again (NOENT).
 */
static bool resend_once(const char *transport, unsigned port, uint32_t xid, const char *name)
{
	struct rrr_clnt *c;
	struct rrr_xprt_stats st;
	make_file(name);
	cr_assert_eq(th_raw_connect(transport, port, 10000, false, &c), 0, "%s", rrr_last_error());
	cr_assert_eq(clnt_remove(c, xid, name), RRR_NFS3_OK);
	cr_assert_not(exists(name));
	for (int i = 0; i < 1000; i++) { /* bounded: 10 s */
		rrr_clnt_stats(c, &st);
		if (st.disconnects)
			break;
		struct pollfd none = {.fd = -1};
		poll(&none, 1, 10);
	}
	cr_assert_eq(st.disconnects, 1, "the server closed the idle connection");
	uint32_t again = clnt_remove(c, xid, name);
	rrr_clnt_stats(c, &st);
	cr_assert_eq(st.connects, 2);
	rrr_clnt_destroy(c);
	cr_assert(again == RRR_NFS3_OK || again == RRR_NFS3ERR_NOENT, "status %u", again);
	return again == RRR_NFS3_OK;
}

/* The re-sent call comes from the port of the first connection and is
 * answered from the cache. Taking the port again is the kernel's choice
 * (the server's side of the old connection may still be in TIME_WAIT and
 * refuse it for a moment), so up to three tries, one hit needed. */
static void resend_after_reconnect(const char *transport, unsigned port)
{
	int hits = 0, tries = 0;
	while (tries < 3 && !hits) {
		char name[32];
		snprintf(name, sizeof(name), "victim%d", tries);
		hits += resend_once(transport, port, 0x5eed8001u + (uint32_t)tries, name);
		tries++;
	}
	cr_assert_eq(hits, 1, "no re-sent REMOVE of %d was answered from the cache", tries);
	char want_remove[32];
	snprintf(want_remove, sizeof(want_remove), "nfs.REMOVE %d\n", 2 * tries - 1);
	const char *const want[] = {want_remove, "drc.hits 1\n", NULL};
	stop_and_expect(want);
}

Test(nfs_drc, tcp_client_reconnects_from_its_port, .init = setup_idle)
{
	resend_after_reconnect("tcp", srv.mount_port);
}

Test(nfs_drc, rdma_client_reconnects_from_its_port, .init = setup_idle)
{
	resend_after_reconnect("rdma", srv.rdma_port);
}
