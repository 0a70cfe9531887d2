/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/access.c - rrr-server's access control, config reload and live
 * counters, against real server processes started with a config file, over
 * TCP and over RPC-over-RDMA on the soft provider (ephemeral ports).
 *
 * The test process is client 127.0.0.2 or client 127.0.0.1 of the same
 * server by choosing the source address of its connections
 * (helpers/srcaddr.c). Asserted: an allowed client mounts and works; a
 * client outside the allow list gets MNT3ERR_ACCES from MNT (over the TCP
 * mount port and over the RDMA connection) and NFS3ERR_ACCES from NFS
 * procedures even with a valid handle, with failure arms that decode; a
 * read-only export answers NFS3ERR_ROFS to modifications and still
 * serves reads; SIGHUP applies a new allow list and read-only to
 * connected clients without dropping them; a bad file on SIGHUP keeps the
 * running settings and the log names the line; `rrr-server --stats`
 * prints the live counters, the same the server prints at SIGTERM; IPv6
 * clients (::1) and IPv4 clients of the dual-stack listener match the
 * right networks; log levels filter and the journal format prefixes <N>.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/conf_server.h"
#include "tests/lib/raw_rpc.h"
#include "tests/lib/srcaddr.h"

#define ALLOWED "127.0.0.2"
#define DENIED "127.0.0.1"

static struct th_server srv;

static void need_server(void)
{
	th_need_server();
}

/* The server (its directories made) started on a configuration of
 * @lines; skips the test when it cannot listen on the soft provider. */
static void start_conf(bool rdma, const char *lines)
{
	char conf[400];
	cr_assert_eq(th_conf_write(&srv, rdma, lines, conf), 0);
	int rc = th_server_start_conf(&srv, conf);
	if (rdma && rc < 0) {
		th_cleanup(&srv);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	cr_assert_eq(rc, 0, "server start");
}

static void start(bool rdma, const char *export_lines)
{
	need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	start_conf(rdma, export_lines);
}

static void fini(void)
{
	th_src_addr(NULL);
	th_cleanup(&srv);
}

TestSuite(nfs_access, .fini = fini, .timeout = 90);

/* A raw client from @src over @rdma (NFS port) or TCP (mount port). */
static struct rrr_clnt *raw_from(const char *src, bool rdma)
{
	struct rrr_clnt *c = NULL;
	th_src_addr(src);
	cr_assert_eq(th_raw_connect(rdma ? "rdma" : "tcp", rdma ? srv.rdma_port : srv.mount_port,
				    10000, false, &c),
		     0, "connect from %s: %s", src, rrr_last_error());
	return c;
}

/* A connection from @src is refused: the connect fails, or the server
 * closes it before answering a NULL. */
static bool refused_from(const char *src, bool rdma)
{
	struct rrr_clnt *c = NULL;
	th_src_addr(src);
	if (th_raw_connect(rdma ? "rdma" : "tcp", rdma ? srv.rdma_port : srv.mount_port, 5000,
			   true, &c) != 0)
		return true;
	int rc = th_raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_NULL, NULL, NULL, NULL, NULL, NULL);
	rrr_clnt_destroy(c);
	return rc != 0;
}

static struct rrr_nfs3 *mount_at(const char *host, const char *path, const char *src, bool rdma,
				 int *rc)
{
	struct th_mount mt;
	th_mount_opts(&srv, rdma, &mt);
	mt.o.host = host;
	mt.o.export_path = path;
	th_src_addr(src);
	struct rrr_nfs3 *n = NULL;
	*rc = rrr_nfs3_mount(&mt.o, &n);
	return n;
}

static struct rrr_nfs3 *mount_host(const char *host, const char *src, bool rdma, int *rc)
{
	return mount_at(host, srv.export_dir, src, rdma, rc);
}

static struct rrr_nfs3 *mount_from(const char *src, bool rdma, int *rc)
{
	return mount_host("127.0.0.1", src, rdma, rc);
}

/* One raw call on @c as root (the server squashes AUTH_NONE to nobody; the
 * test servers run with root-squash = no). */
static int raw_call(struct rrr_clnt *c, uint32_t prog, uint32_t proc, th_xdr_fn enc, void *args,
		    th_xdr_fn dec, void *res)
{
	return th_raw_call(c, prog, proc, &th_root_cred, enc, args, dec, res);
}


static uint32_t raw_getattr(struct rrr_clnt *c, const struct rrr_nfs3_fh *fh)
{
	static struct rrr_nfs3_fh_args a;
	static struct rrr_nfs3_getattr_res r;
	a.fh = *fh;
	memset(&r, 0, sizeof(r));
	cr_assert_eq(raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_GETATTR, TH_XF(rrr_nfs3_xdr_fh_args), &a,
			      TH_XF(rrr_nfs3_xdr_getattr_res), &r), 0, "GETATTR reply decodes");
	return r.status;
}

static uint32_t raw_lookup(struct rrr_clnt *c, const struct rrr_nfs3_fh *dir, const char *name)
{
	static struct rrr_nfs3_diropargs a;
	static struct rrr_nfs3_lookup_res r;
	memset(&a, 0, sizeof(a));
	a.dir = *dir;
	snprintf(a.name, sizeof(a.name), "%s", name);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_LOOKUP, TH_XF(rrr_nfs3_xdr_diropargs), &a,
			      TH_XF(rrr_nfs3_xdr_lookup_res), &r), 0, "LOOKUP reply decodes");
	cr_assert(r.status == RRR_NFS3_OK || !r.dir_attr.present);
	return r.status;
}

static uint32_t raw_create(struct rrr_clnt *c, const struct rrr_nfs3_fh *dir, const char *name)
{
	static struct rrr_nfs3_create_args a;
	static struct rrr_nfs3_create_res r;
	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	snprintf(a.where.name, sizeof(a.where.name), "%s", name);
	a.mode = RRR_NFS3_UNCHECKED;
	memset(&r, 0, sizeof(r));
	cr_assert_eq(raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_CREATE, TH_XF(rrr_nfs3_xdr_create_args),
			      &a, TH_XF(rrr_nfs3_xdr_create_res), &r), 0, "CREATE reply decodes");
	return r.status;
}

static uint32_t raw_null(struct rrr_clnt *c)
{
	return (uint32_t)raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_NULL, NULL, NULL, NULL, NULL);
}

/* `rrr-server --stats` for this server into s.dir/stats.txt: exit status. */
static int stats(char *out)
{
	char prog[512], args[512];
	th_prog("rrr-server", prog, sizeof(prog));
	snprintf(out, 400, "%s/stats.txt", srv.dir);
	snprintf(args, sizeof(args), "--stats --state-dir '%s'", srv.state_dir);
	return th_sh(prog, args, out);
}

static void allowed_and_denied(bool rdma)
{
	start(rdma, "allow = " ALLOWED "\n");

	/* allowed: mount, create, write, read back */
	int rc;
	struct rrr_nfs3 *ok = mount_from(ALLOWED, rdma, &rc);
	cr_assert_eq(rc, 0, "mount from " ALLOWED ": %s", rrr_last_error());
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(ok, rrr_nfs3_root(ok), "f", 0644, false, &fh), 0);
	struct iovec iov = {.iov_base = "allowed", .iov_len = 7};
	uint32_t count = 0;
	cr_assert_eq(rrr_nfs3_write(ok, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	cr_assert_eq(count, 7);
	char back[16] = {0};
	struct iovec riov = {.iov_base = back, .iov_len = sizeof(back)};
	bool eof;
	cr_assert_eq(rrr_nfs3_read(ok, &fh, 0, &riov, 1, &count, &eof), 0);
	cr_assert_eq(count, 7);
	cr_assert_eq(memcmp(back, "allowed", 7), 0);
	struct rrr_nfs3_fh root = *rrr_nfs3_root(ok);

	/* denied: no export admits the address, so its connections are closed
	 * at accept, over the TCP mount port and over this transport (the
	 * per-export refusals of admitted clients: the two-export tests) */
	struct rrr_nfs3 *no = mount_from(DENIED, rdma, &rc);
	cr_assert_null(no);
	cr_assert_neq(rc, 0, "rrr_nfs3_mount from " DENIED " succeeded");
	cr_assert(refused_from(DENIED, false), "a TCP connection from " DENIED " was served");
	cr_assert(refused_from(DENIED, rdma), "a connection from " DENIED " was served");
	char path[400];
	snprintf(path, sizeof(path), "%s/evil", srv.export_dir);
	cr_assert_neq(access(path, F_OK), 0, "nothing was created");

	/* the allowed client's raw calls pass the same checks */
	struct rrr_clnt *c2 = raw_from(ALLOWED, rdma);
	cr_assert_eq(th_raw_mnt(c2, srv.export_dir, NULL), RRR_MNT3_OK);
	cr_assert_eq(raw_getattr(c2, &root), RRR_NFS3_OK);
	cr_assert_eq(raw_lookup(c2, &root, "f"), RRR_NFS3_OK);

	/* EXPORT shows the allow list as its groups */
	static struct rrr_mnt_export exps[2];
	static struct rrr_mnt_export_res er = {.entries = exps, .cap = 2};
	cr_assert_eq(raw_call(c2, RRR_MNT_PROGRAM, RRR_MNT_EXPORT, NULL, NULL,
			      TH_XF(rrr_mnt_xdr_export_res), &er), 0);
	cr_assert_eq(er.n, 1);
	cr_assert_str_eq(exps[0].groups, ALLOWED);
	cr_assert_str_eq(exps[0].dir, srv.export_dir);

	char out[400];
	cr_assert_eq(stats(out), 0, "rrr-server --stats");
	cr_assert_eq(th_counter(out, "access.denied_mount"), 0, "no MNT got through");
	cr_assert_eq(th_counter(out, "access.denied_nfs"), 0);
	cr_assert_geq(th_counter(out, "limits.refused_addr"), 3);
	cr_assert_geq(th_counter(out, "nfs.LOOKUP"), 1);
	cr_assert(th_log_wait(&srv, "connection from " DENIED, 5), "the refusal is logged");

	rrr_clnt_destroy(c2);
	rrr_nfs3_umount(ok);
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_geq(th_counter(srv.log, "limits.refused_addr"), 3, "SIGTERM prints the counter");
}

Test(nfs_access, allow_list_tcp)
{
	allowed_and_denied(false);
}

Test(nfs_access, allow_list_rdma)
{
	allowed_and_denied(true);
}

static void read_only(bool rdma)
{
	start(rdma, "allow = 127.0.0.0/8\nread-only = yes\n");
	char path[400];
	snprintf(path, sizeof(path), "%s/old", srv.export_dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("old data", f);
	fclose(f);
	int rc;
	struct rrr_nfs3 *n = mount_from(DENIED, rdma, &rc); /* 127.0.0.1 is in 127/8 */
	cr_assert_eq(rc, 0, "mount: %s", rrr_last_error());
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(n);
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_lookup(n, root, "old", &fh, NULL), 0);
	char back[16] = {0};
	struct iovec riov = {.iov_base = back, .iov_len = sizeof(back)};
	uint32_t count = 0;
	bool eof;
	cr_assert_eq(rrr_nfs3_read(n, &fh, 0, &riov, 1, &count, &eof), 0, "reads still work");
	cr_assert_eq(count, 8);
	struct iovec iov = {.iov_base = "new", .iov_len = 3};
	cr_assert_eq(th_nfs_st(rrr_nfs3_write(n, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count)), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(n, root, "c", 0644, false, NULL)), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_mkdir(n, root, "d", 0755, NULL)), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_rename(n, root, "old", root, "new")), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_remove(n, root, "old")), RRR_NFS3ERR_ROFS);
	struct rrr_nfs3_sattr s = {.set_size = true, .size = 0};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(n, &fh, &s)), RRR_NFS3ERR_ROFS);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 8, "the file is untouched");
	rrr_nfs3_umount(n);
	char out[400];
	cr_assert_eq(stats(out), 0);
	cr_assert_eq(th_counter(out, "access.rofs"), 6);
	cr_assert_eq(th_counter(out, "access.denied_nfs"), 0);
}

Test(nfs_access, read_only_tcp)
{
	read_only(false);
}

Test(nfs_access, read_only_rdma)
{
	read_only(true);
}

static void rewrite(const char *export_lines)
{
	char conf[400];
	cr_assert_eq(th_conf_write(&srv, false, export_lines, conf), 0);
}

/*
 * Addresses outside every allow list hold nothing: 200 idle connections
 * from one (more than max_conns, 160 at ulimit -n 1024) to the port under
 * test are each closed at once, counted and logged in a few rate-limited
 * lines, and an allowed client is served beside them.
 */
static void lockout(bool rdma)
{
	enum { N = 200 };
	static int fds[N];
	start(rdma, "allow = " ALLOWED "\n");
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	inet_pton(AF_INET, DENIED, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons(rdma ? srv.rdma_port : srv.mount_port);
	for (int i = 0; i < N; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert(fds[i] >= 0);
		cr_assert_eq(bind(fds[i], (struct sockaddr *)&src, sizeof(src)), 0);
		cr_assert_eq(connect(fds[i], (struct sockaddr *)&dst, sizeof(dst)), 0);
	}
	/* each is closed by the server, without a byte sent by us */
	for (int i = 0; i < N; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};
		char b;
		cr_assert_eq(poll(&p, 1, 10000), 1, "connection %d from " DENIED " is held", i);
		cr_assert_leq(read(fds[i], &b, 1), 0, "connection %d got data", i);
	}
	int rc;
	struct rrr_nfs3 *ok = mount_from(ALLOWED, rdma, &rc);
	cr_assert_eq(rc, 0, "an allowed client beside them: %s", rrr_last_error());
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(ok, rrr_nfs3_root(ok), "served", 0644, false, &fh), 0);
	char out[400];
	cr_assert_eq(stats(out), 0);
	cr_assert_geq(th_counter(out, "limits.refused_addr"), N);
	cr_assert_eq(th_counter(out, "limits.refused_max_conns"), 0);
	cr_assert(th_log_wait(&srv, "connection from " DENIED, 5), "the refusal is logged");
	rrr_nfs3_umount(ok);
	cr_assert_eq(th_server_stop(&srv), 0);
	int lines = th_count_lines(srv.log, "not admitted");
	cr_assert(lines >= 1 && lines <= 5, "%d log lines for %d refusals: not rate-limited", lines, N);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

Test(nfs_access, outsiders_hold_nothing_tcp)
{
	lockout(false);
}

Test(nfs_access, outsiders_hold_nothing_rdma)
{
	lockout(true);
}

/* A NULL obeys the allow lists too: once a reload leaves a connected
 * client out of every list, its pings go unanswered. */
Test(nfs_access, null_obeys_allow_list)
{
	start(false, "allow = " ALLOWED "\n");
	struct rrr_clnt *c = raw_from(ALLOWED, false);
	cr_assert_eq(raw_null(c), 0);
	char conf[400];
	cr_assert_eq(th_conf_write(&srv, false, "allow = 192.0.2.0/24\n", conf), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "reloaded", 10));
	cr_assert_neq(raw_null(c), 0, "a NULL from outside every allow list was answered");
	rrr_clnt_destroy(c);
}

/* SIGHUP: a new allow list and read-only reach connected clients; the
 * connections stay; a bad file changes nothing. */
Test(nfs_access, sighup_reload)
{
	start(false, "allow = " ALLOWED "\n");
	int rc;
	struct rrr_nfs3 *a = mount_from(ALLOWED, false, &rc);
	cr_assert_eq(rc, 0);
	struct rrr_nfs3_fh root = *rrr_nfs3_root(a);
	cr_assert(refused_from(DENIED, false), DENIED " is not admitted");

	/* swap: 127.0.0.1 in, 127.0.0.2 out, read-only */
	rewrite("allow = " DENIED "\nread-only = yes\n");
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "reloaded", 10), "the reload is logged");
	cr_assert(th_file_contains(srv.log, "1 allowed network, read-only"));
	struct rrr_clnt *d = raw_from(DENIED, false);
	cr_assert_eq(th_raw_mnt(d, srv.export_dir, NULL), RRR_MNT3_OK, DENIED " may connect and mount now");
	cr_assert_eq(raw_create(d, &root, "ro"), RRR_NFS3ERR_ROFS, "the export is read-only now");
	/* the connection of the client left out stays, and is refused per call */
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(a, &root, NULL)), RRR_NFS3ERR_ACCES);
	rrr_clnt_destroy(d);
	rrr_nfs3_umount(a);
	cr_assert_eq(th_server_stop(&srv), 0);
}

Test(nfs_access, stats_without_server)
{
	need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	char out[400];
	cr_assert_eq(stats(out), 1);
	cr_assert(th_file_contains(out, "no running rrr-server answers on"));
}

/* IPv6 clients: ::1 allowed by an IPv6 entry, IPv4 clients of the same
 * dual-stack listener matched as IPv4 (127.0.0.1 out, then in via /8). */
Test(nfs_access, ipv6_and_mapped_ipv4_tcp)
{
	need_server();
	if (!th_have_ipv6_loopback())
		cr_skip_test("no IPv6 on the loopback here (::1 cannot be bound)");
	start(false, "allow = ::1/128\n");
	int rc;
	struct rrr_nfs3 *v6 = mount_host("::1", NULL, false, &rc);
	cr_assert_eq(rc, 0, "mount from ::1: %s", rrr_last_error());
	cr_assert_eq(rrr_nfs3_getattr(v6, rrr_nfs3_root(v6), NULL), 0);
	struct rrr_nfs3 *v4 = mount_from(NULL, false, &rc);
	cr_assert_null(v4);
	cr_assert_neq(rc, 0, "127.0.0.1 is not ::1");
	rrr_nfs3_umount(v6);
	/* ::ffff:127.0.0.0/104 is an IPv4 network written as IPv6 */
	rewrite("allow = ::ffff:127.0.0.0/104\n");
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "reloaded", 10));
	v4 = mount_from(NULL, false, &rc);
	cr_assert_eq(rc, 0, "127.0.0.1 in ::ffff:127.0.0.0/104: %s", rrr_last_error());
	rrr_nfs3_umount(v4);
	v6 = mount_host("::1", NULL, false, &rc);
	cr_assert_null(v6);
	cr_assert_neq(rc, 0, "::1 is not in it");
}

static int count(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

/* Levels filter; under the journal format lines carry <N> priorities. */
Test(nfs_access, log_levels_and_journal_prefixes)
{
	need_server();
	setenv("RRR_LOG_FORMAT", "journal", 1);
	start(false, "allow = " ALLOWED "\n");
	int rc;
	struct rrr_nfs3 *n = mount_from(DENIED, false, &rc);
	cr_assert_null(n);
	cr_assert(th_log_wait(&srv, "<4>rrr server: refused a TCP connection from " DENIED, 5),
		  "warning, priority 4");
	cr_assert(th_file_contains(srv.log, "<5>exporting "), "notice, priority 5");
	cr_assert(!th_file_contains(srv.log, "<6>"), "no info lines at the default level");
	cr_assert(!th_file_contains(srv.log, "rrr-server: "), "no plain prefixes");
	/* log-level = error by reload: the reload itself is still logged, the
	 * next refusal is not */
	char conf[400];
	rc = th_conf_printf(&srv, conf,
			    "log-level = error\nrdma = no\nrdma-port = 0\nmount-port = 0\n"
			    "threads = 2\nport-file = %s/ports\nstate-dir = %s\n[export %s]\n"
			    "allow = " ALLOWED "\n",
			    srv.dir, srv.state_dir, srv.export_dir);
	cr_assert_eq(rc, 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "<5>reloaded", 10));
	cr_assert(th_file_contains(srv.log, "log level error"));
	/* the control thread logs the reload before it lowers the level; it
	 * answers the stats socket only after the whole reload */
	char sync_out[400];
	cr_assert_eq(stats(sync_out), 0);
	int before = count(srv.log, "<4>rrr server: refused");
	cr_assert_geq(before, 1);
	n = mount_from(DENIED, false, &rc);
	cr_assert_null(n);
	cr_assert_eq(count(srv.log, "<4>rrr server: refused"), before,
		     "the second refusal is below the level");
	char out[400];
	cr_assert_eq(stats(out), 0);
	cr_assert_geq(th_counter(out, "limits.refused_addr"), 2, "but counted");
}

/* listen = several addresses: the same ports on each, both transports. */
Test(nfs_access, listen_on_two_addresses)
{
	need_server();
	if (!th_have_ipv6_loopback())
		cr_skip_test("no IPv6 on the loopback here (::1 cannot be bound)");
	cr_assert_eq(th_mkdirs(&srv), 0);
	char conf[400];
	int rc = th_conf_printf(&srv, conf,
				"listen = 127.0.0.1, ::1\nrdma-port = 0\nmount-port = 0\nthreads = 2\n"
				"port-file = %s/ports\nstate-dir = %s\n[export %s]\n"
				"allow = 127.0.0.1 ::1\n",
				srv.dir, srv.state_dir, srv.export_dir);
	cr_assert_eq(rc, 0);
	rc = th_server_start_conf(&srv, conf);
	if (rc < 0) {
		th_cleanup(&srv);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	const char *hosts[] = {"127.0.0.1", "::1"};
	for (int rdma = 0; rdma < 2; rdma++)
		for (int i = 0; i < 2; i++) {
			struct rrr_nfs3 *n = mount_host(hosts[i], NULL, rdma, &rc);
			cr_assert_eq(rc, 0, "mount via %s over %s: %s", hosts[i], rdma ? "rdma" : "tcp",
				     rrr_last_error());
			cr_assert_eq(rrr_nfs3_getattr(n, rrr_nfs3_root(n), NULL), 0);
			rrr_nfs3_umount(n);
		}
	cr_assert(th_file_contains(srv.log, "listening on 127.0.0.1, ::1"));
}

/* The stats socket: a default path that cannot be bound is a warning, a
 * chosen one an error; two servers on one path: the second refuses. */
Test(nfs_access, stats_socket_paths)
{
	need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	/* a state dir whose socket path is longer than sun_path allows */
	char deep[400];
	snprintf(deep, sizeof(deep), "%s/%0100d", srv.dir, 0);
	char conf[400];
	int rc = th_conf_printf(&srv, conf,
				"rdma = no\nmount-port = 0\nthreads = 1\nport-file = %s/ports\n"
				"state-dir = %s\n[export %s]\n",
				srv.dir, deep, srv.export_dir);
	cr_assert_eq(rc, 0);
	cr_assert_eq(th_server_start_conf(&srv, conf), 0, "runs without the default socket");
	cr_assert(th_file_contains(srv.log, "running without a stats socket"));
	cr_assert_eq(th_server_stop(&srv), 0);

	/* chosen: must work */
	rc = th_conf_printf(&srv, conf,
			    "rdma = no\nmount-port = 0\nthreads = 1\nport-file = %s/ports\n"
			    "state-dir = %s\nstats-socket = %s/s\n[export %s]\n",
			    srv.dir, srv.state_dir, deep, srv.export_dir);
	cr_assert_eq(rc, 0);
	cr_assert_eq(th_server_start_conf(&srv, conf), -ECHILD, "a chosen path that fails stops it");
	cr_assert(th_file_contains(srv.log, "stats socket path"));

	/* two servers, one socket */
	rc = th_conf_printf(&srv, conf,
			    "rdma = no\nmount-port = 0\nthreads = 1\nport-file = %s/ports\n"
			    "state-dir = %s\nstats-socket = %s/shared.sock\n[export %s]\n",
			    srv.dir, srv.state_dir, srv.dir, srv.export_dir);
	cr_assert_eq(rc, 0);
	cr_assert_eq(th_server_start_conf(&srv, conf), 0);
	struct th_server second = srv;
	snprintf(second.log, sizeof(second.log), "%s/second.log", srv.dir);
	cr_assert_eq(th_server_start_conf(&second, conf), -ECHILD);
	cr_assert(th_file_contains(second.log, "another rrr-server answers on the stats socket"));
	char prog[512], args[600], out[400];
	th_prog("rrr-server", prog, sizeof(prog));
	snprintf(out, sizeof(out), "%s/stats.txt", srv.dir);
	snprintf(args, sizeof(args), "--config '%s' --stats", conf);
	cr_assert_eq(th_sh(prog, args, out), 0, "the first still answers, found through --config");
	cr_assert(th_file_contains(out, "rrr-server: counters"));
	cr_assert_eq(th_server_stop(&srv), 0);
	snprintf(args, sizeof(args), "%s/shared.sock", srv.dir);
	cr_assert_neq(access(args, F_OK), 0, "the socket file is removed at stop");
}

/* Bulk READ and WRITE (write and read chunks on RDMA) of a client the
 * allow list leaves out after a reload: NFS3ERR_ACCES, the file unchanged. */
static void bulk_denied(bool rdma)
{
	start(rdma, "allow = " ALLOWED "\n");
	int rc;
	struct rrr_nfs3 *n = mount_from(ALLOWED, rdma, &rc);
	cr_assert_eq(rc, 0, "mount: %s", rrr_last_error());
	size_t len = 256u << 10;
	char *buf = malloc(len), *back = malloc(len);
	cr_assert(buf && back);
	memset(buf, 'a', len);
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(n, rrr_nfs3_root(n), "big", 0644, false, &fh), 0);
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	uint32_t count = 0;
	cr_assert_eq(rrr_nfs3_write(n, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	cr_assert_eq(count, len);

	char conf[400];
	cr_assert_eq(th_conf_write(&srv, rdma, "allow = 192.0.2.0/24\n", conf), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "reloaded", 10));
	struct iovec riov = {.iov_base = back, .iov_len = len};
	bool eof;
	cr_assert_eq(th_nfs_st(rrr_nfs3_read(n, &fh, 0, &riov, 1, &count, &eof)), RRR_NFS3ERR_ACCES);
	memset(buf, 'b', len);
	cr_assert_eq(th_nfs_st(rrr_nfs3_write(n, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count)),
		     RRR_NFS3ERR_ACCES);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(n, &fh, NULL)), RRR_NFS3ERR_ACCES);
	/* the connection still works once allowed again */
	cr_assert_eq(th_conf_write(&srv, rdma, "allow = " ALLOWED "\n", conf), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	for (int i = 0; i < 500 && rrr_nfs3_getattr(n, &fh, NULL) != 0; i++)
		usleep(10000);
	cr_assert_eq(rrr_nfs3_read(n, &fh, 0, &riov, 1, &count, &eof), 0);
	cr_assert_eq(count, len);
	cr_assert_eq(back[0], 'a');
	cr_assert_eq(back[len - 1], 'a', "the refused WRITE changed nothing");
	rrr_nfs3_umount(n);
	free(buf);
	free(back);
	char out[400];
	cr_assert_eq(stats(out), 0);
	cr_assert_geq(th_counter(out, "access.denied_nfs"), 3);
}

Test(nfs_access, bulk_io_denied_tcp)
{
	bulk_denied(false);
}

Test(nfs_access, bulk_io_denied_rdma)
{
	bulk_denied(true);
}

/* ------------------------------------------------------------ two exports */
/*
 * One server, two exports: A (the helper's export dir, open to everyone)
 * and B (srv.dir/b, with @b_lines). Each export's allow list and read-only
 * apply to its own MNT and to NFS calls with its handles, over TCP and
 * RDMA; a handle cannot be moved to the other export; EXPORT lists both.
 */
static char exp_b[400];

static void start_two(bool rdma, const char *b_lines)
{
	need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	snprintf(exp_b, sizeof(exp_b), "%s/b", srv.dir);
	cr_assert_eq(mkdir(exp_b, 0755), 0);
	char lines[2048];
	snprintf(lines, sizeof(lines), "root-squash = no\n[export %s]\nname = /b\n%s", exp_b,
		 b_lines);
	start_conf(rdma, lines);
}

static struct rrr_nfs3 *mount_export(const char *path, const char *src, bool rdma, int *rc)
{
	return mount_at("127.0.0.1", path, src, rdma, rc);
}

static void two_exports(bool rdma)
{
	start_two(rdma, "allow = " ALLOWED "\nread-only = yes\nroot-squash = no\n");
	char path[500];
	snprintf(path, sizeof(path), "%s/data", exp_b);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("bee", f);
	fclose(f);
	cr_assert(th_log_wait(&srv, "also exporting ", 5), "the second export is logged");

	/* A: everyone, read-write */
	int rc;
	struct rrr_nfs3 *a = mount_export(srv.export_dir, DENIED, rdma, &rc);
	cr_assert_eq(rc, 0, "mount A from " DENIED ": %s", rrr_last_error());
	struct rrr_nfs3_fh fa, aroot = *rrr_nfs3_root(a);
	cr_assert_eq(rrr_nfs3_create(a, &aroot, "a1", 0644, false, &fa), 0);
	/* B: not for 127.0.0.1, by its name and by its path */
	struct rrr_nfs3 *no = mount_export("/b", DENIED, rdma, &rc);
	cr_assert_null(no);
	cr_assert_eq(th_nfs_st(rc), RRR_NFS3ERR_ACCES, "mount B from " DENIED " gives %d", rc);
	no = mount_export(exp_b, DENIED, rdma, &rc);
	cr_assert_null(no);
	cr_assert_eq(th_nfs_st(rc), RRR_NFS3ERR_ACCES);

	/* B from 127.0.0.2: reads, no writes */
	struct rrr_nfs3 *b = mount_export("/b", ALLOWED, rdma, &rc);
	cr_assert_eq(rc, 0, "mount B from " ALLOWED ": %s", rrr_last_error());
	struct rrr_nfs3_fh broot = *rrr_nfs3_root(b), fb, x;
	cr_assert_eq(rrr_nfs3_lookup(b, &broot, "data", &fb, NULL), 0);
	char back[8] = {0};
	struct iovec riov = {.iov_base = back, .iov_len = sizeof(back)};
	uint32_t count = 0;
	bool eof;
	cr_assert_eq(rrr_nfs3_read(b, &fb, 0, &riov, 1, &count, &eof), 0);
	cr_assert_eq(count, 3);
	cr_assert_eq(memcmp(back, "bee", 3), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(b, &broot, "nope", 0644, false, &x)), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(b, &broot, "a1", &x, NULL)), RRR_NFS3ERR_NOENT,
		     "B's root is B's directory, not A's");

	/* B's handles from 127.0.0.1 (learnt elsewhere): ACCES; A's: fine */
	struct rrr_clnt *d = raw_from(DENIED, rdma);
	cr_assert_eq(raw_getattr(d, &broot), RRR_NFS3ERR_ACCES);
	cr_assert_eq(raw_getattr(d, &fb), RRR_NFS3ERR_ACCES);
	cr_assert_eq(raw_lookup(d, &broot, "data"), RRR_NFS3ERR_ACCES);
	cr_assert_eq(raw_getattr(d, &aroot), RRR_NFS3_OK);
	cr_assert_eq(th_raw_mnt(d, "/b", NULL), RRR_MNT3ERR_ACCES, "MNT of B over %s",
		     rdma ? "RDMA" : "TCP");
	cr_assert_eq(th_raw_mnt(d, srv.export_dir, NULL), RRR_MNT3_OK);
	cr_assert_eq(th_raw_mnt(d, "/", NULL), RRR_MNT3ERR_NOENT, "\"/\" is ambiguous with two exports");

	/* a handle cannot change export: B's handle with A's export id */
	struct rrr_nfs3_fh forged = fb;
	memcpy(forged.data + 4, aroot.data + 4, 4);
	cr_assert_eq(raw_getattr(d, &forged), RRR_NFS3ERR_STALE, "the tag covers the export id");
	struct rrr_clnt *okc = raw_from(ALLOWED, rdma);
	cr_assert_eq(raw_getattr(okc, &forged), RRR_NFS3ERR_STALE);
	cr_assert_eq(raw_getattr(okc, &fb), RRR_NFS3_OK);
	/* RENAME and LINK across exports: XDEV, nothing moves */
	struct rrr_nfs3 *a2 = mount_export(srv.export_dir, ALLOWED, rdma, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_rename(a2, &aroot, "a1", &broot, "moved")), RRR_NFS3ERR_XDEV);
	snprintf(path, sizeof(path), "%s/a1", srv.export_dir);
	cr_assert_eq(access(path, F_OK), 0, "a1 is still in A");

	/* EXPORT lists both, each with its groups */
	static struct rrr_mnt_export exps[4];
	static struct rrr_mnt_export_res er = {.entries = exps, .cap = 4};
	cr_assert_eq(raw_call(d, RRR_MNT_PROGRAM, RRR_MNT_EXPORT, NULL, NULL,
			      TH_XF(rrr_mnt_xdr_export_res), &er), 0);
	cr_assert_eq(er.n, 2);
	cr_assert_str_eq(exps[0].dir, srv.export_dir);
	cr_assert_str_eq(exps[0].groups, "*");
	cr_assert_str_eq(exps[1].dir, "/b");
	cr_assert_str_eq(exps[1].groups, ALLOWED);

	char out[400];
	cr_assert_eq(stats(out), 0);
	cr_assert_geq(th_counter(out, "export.0.nfs_calls"), 2);
	cr_assert_geq(th_counter(out, "export.1.nfs_calls"), 4);
	cr_assert_eq(th_counter(out, "access.rofs"), 1);
	cr_assert_eq(th_counter(out, "access.denied_mount"), 3);
	cr_assert_eq(th_counter(out, "access.denied_nfs"), 3);
	rrr_clnt_destroy(okc);
	rrr_clnt_destroy(d);
	rrr_nfs3_umount(a2);
	rrr_nfs3_umount(b);
	rrr_nfs3_umount(a);
	cr_assert_eq(th_server_stop(&srv), 0);
}

Test(nfs_access, two_exports_tcp)
{
	two_exports(false);
}

Test(nfs_access, two_exports_rdma)
{
	two_exports(true);
}

/* SIGHUP changes B's allow list; A's clients keep their connection. */
Test(nfs_access, two_exports_sighup)
{
	start_two(false, "allow = " ALLOWED "\nroot-squash = no\n");
	int rc;
	struct rrr_nfs3 *a = mount_export(srv.export_dir, DENIED, false, &rc);
	cr_assert_eq(rc, 0);
	struct rrr_nfs3_fh aroot = *rrr_nfs3_root(a);
	struct rrr_clnt *d = raw_from(DENIED, false);
	cr_assert_eq(th_raw_mnt(d, "/b", NULL), RRR_MNT3ERR_ACCES);

	char lines[1024], conf[400];
	snprintf(lines, sizeof(lines),
		 "root-squash = no\n[export %s]\nname = /b\nallow = " ALLOWED " " DENIED
		 "\nroot-squash = no\nread-only = yes\n",
		 exp_b);
	cr_assert_eq(th_conf_write(&srv, false, lines, conf), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	/* one "reloaded" line per export, each its own write: wait for B's */
	cr_assert(th_log_wait(&srv, "2 allowed networks, read-only", 10), "B's new policy");
	cr_assert(th_file_contains(srv.log, "reloaded"), "the reload is logged");
	cr_assert(!th_file_contains(srv.log, "takes effect at the next start"),
		  "only live keys changed");
	cr_assert_eq(th_raw_mnt(d, "/b", NULL), RRR_MNT3_OK, "the same connection may mount B now");
	cr_assert_eq(rrr_nfs3_getattr(a, &aroot, NULL), 0, "A's client is still connected");

	/* a third export in the file needs a restart: reported, not applied */
	char c_dir[420];
	snprintf(c_dir, sizeof(c_dir), "%s/c", srv.dir);
	cr_assert_eq(mkdir(c_dir, 0755), 0);
	size_t n = strlen(lines);
	snprintf(lines + n, sizeof(lines) - n, "[export %s]\n", c_dir);
	cr_assert_eq(th_conf_write(&srv, false, lines, conf), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	cr_assert(th_log_wait(&srv, "exports changed", 10), "the new export is reported");
	cr_assert_eq(th_raw_mnt(d, c_dir, NULL), RRR_MNT3ERR_NOENT, "and not served before a restart");

	struct rrr_xprt_stats st;
	memset(&st, 0, sizeof(st));
	rrr_clnt_stats(d, &st);
	cr_assert_eq(st.connects, 1, "one connection through the reloads");
	cr_assert_eq(st.disconnects, 0);
	rrr_clnt_destroy(d);
	rrr_nfs3_umount(a);
	cr_assert_eq(th_server_stop(&srv), 0);
}
