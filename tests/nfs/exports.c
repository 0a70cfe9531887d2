/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/exports.c - rrr-server as a multi-user file server, against a
 * real server process over TCP: kernel and path file handles across
 * restarts and renames without a walk of the export, confinement of
 * kernel handles (even a correctly tagged handle, as from a leaked key, of
 * a file outside the export is refused), requests run as their callers
 * (EPERM/EACCES as the kernel decides, root squash, supplementary groups,
 * the fd cache shared by no two users), MKNOD and RFC 1813 create modes,
 * and a directory of 100,000 files used through old handles after a
 * restart without a walk of the export (the time is printed).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "server/fs/fs.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/raw_rpc.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs; /* as root (squashed or not, per suite) */
static struct rrr_clnt *raw;

static struct rrr_nfs3 *mount_as(uint32_t uid, uint32_t gid)
{
	return th_nfs_mount_as(&srv, false, uid, gid);
}

static void connect_all(void)
{
	nfs = mount_as(0, 0);
	cr_assert_eq(th_raw_connect("tcp", srv.mount_port, 10000, false, &raw), 0);
}

static void disconnect_all(void)
{
	th_raw_close(&raw);
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
}

static void start(bool squash, const char *handles)
{
	th_need_server();
	if (geteuid() != 0)
		cr_skip_test("acting as the caller and kernel handles need root");
	if (handles)
		setenv("RRR_FS_HANDLES", handles, 1);
	else
		unsetenv("RRR_FS_HANDLES");
	cr_assert_eq(th_mkdirs(&srv), 0);
	srv.root_squash = squash;
	cr_assert_eq(chmod(srv.export_dir, 0777), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/secret", srv.dir); /* outside the export */
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("top secret\n", f);
	fclose(f);
	cr_assert_eq(th_server_start(&srv, false), 0);
	connect_all();
}

static void restart(void)
{
	disconnect_all();
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	connect_all();
}

static void setup_kernel(void) { start(false, NULL); }
static void setup_path(void) { start(false, "path"); }
static void setup_squash(void) { start(true, NULL); }

static void teardown(void)
{
	disconnect_all();
	th_cleanup(&srv);
	unsetenv("RRR_FS_HANDLES");
}

TestSuite(nfs_exports, .init = setup_kernel, .fini = teardown, .timeout = 60);
TestSuite(nfs_exports_path, .init = setup_path, .fini = teardown, .timeout = 60);
TestSuite(nfs_creds, .init = setup_squash, .fini = teardown, .timeout = 60);

/* ------------------------------------------------------------ raw calls */
static int call_as(uint32_t uid, uint32_t gid, const uint32_t *gids, uint32_t ngids,
		   uint32_t proc, th_xdr_fn enc, void *args, th_xdr_fn dec, void *res)
{
	struct rrr_rpc_cred cred;
	th_auth_sys(&cred, uid, gid);
	cred.sys.ngids = ngids;
	for (uint32_t i = 0; i < ngids; i++)
		cred.sys.gids[i] = gids[i];
	return th_raw_call(raw, RRR_NFS3_PROGRAM, proc, &cred, enc, args, dec, res);
}

static uint32_t create_as(uint32_t uid, uint32_t gid, const uint32_t *gids, uint32_t ngids,
			  const struct rrr_nfs3_fh *dir, const char *name, uint32_t how,
			  uint32_t mode, const uint8_t *verf, struct rrr_nfs3_create_res *r)
{
	struct rrr_nfs3_create_args a = {.where = {.dir = *dir}, .mode = how};
	snprintf(a.where.name, sizeof(a.where.name), "%s", name);
	a.attr.set_mode = true;
	a.attr.mode = mode;
	if (verf)
		memcpy(a.verf, verf, 8);
	memset(r, 0, sizeof(*r));
	cr_assert_eq(call_as(uid, gid, gids, ngids, RRR_NFS3_CREATE, TH_XF(rrr_nfs3_xdr_create_args),
			     &a, TH_XF(rrr_nfs3_xdr_create_res), r), 0);
	return r->status;
}

static uint32_t mknod_as(uint32_t uid, uint32_t type, const char *name, uint32_t maj,
			 uint32_t min, struct rrr_nfs3_create_res *r)
{
	struct rrr_nfs3_mknod_args a = {.where = {.dir = *rrr_nfs3_root(nfs)}, .type = type,
					.attr = {.set_mode = true, .mode = 0644},
					.spec_major = maj, .spec_minor = min};
	snprintf(a.where.name, sizeof(a.where.name), "%s", name);
	memset(r, 0, sizeof(*r));
	cr_assert_eq(call_as(uid, uid, NULL, 0, RRR_NFS3_MKNOD, TH_XF(rrr_nfs3_xdr_mknod_args), &a,
			     TH_XF(rrr_nfs3_xdr_create_res), r), 0);
	return r->status;
}

static void local_path(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", srv.export_dir, rel);
}

/* ------------------------------------------------------------ handles */
static void t_survive_restart_and_renames(const char *mode_line)
{
	cr_assert(th_file_contains(srv.log, mode_line), "start-up line '%s'", mode_line);
	struct rrr_nfs3_fh a, b, c, f;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, rrr_nfs3_root(nfs), "a", 0755, &a), 0);
	cr_assert_eq(rrr_nfs3_mkdir(nfs, &a, "b", 0755, &b), 0);
	cr_assert_eq(rrr_nfs3_mkdir(nfs, &b, "c", 0755, &c), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &c, "f", 0644, true, &f), 0);
	struct iovec iov = {.iov_base = "hello", .iov_len = 5};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &f, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	/* through the server: a directory moves, then behind its back */
	cr_assert_eq(rrr_nfs3_rename(nfs, rrr_nfs3_root(nfs), "a", rrr_nfs3_root(nfs), "z"), 0);
	disconnect_all();
	cr_assert_eq(th_server_stop(&srv), 0);
	char from[600], to[600];
	local_path(from, sizeof(from), "z/b/c");
	local_path(to, sizeof(to), "c2");
	cr_assert_eq(rename(from, to), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	connect_all();
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &f, &at), 0, "file handle valid after restart");
	cr_assert_eq(at.size, 5);
	cr_assert_eq(rrr_nfs3_getattr(nfs, &c, &at), 0, "directory handle valid after restart");
	struct rrr_nfs3_fh g;
	cr_assert_eq(rrr_nfs3_lookup(nfs, &c, "f", &g, NULL), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &c, "new", 0644, true, &g), 0);
	cr_assert_eq(rrr_nfs3_getattr(nfs, &b, &at), 0);
	disconnect_all();
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "fh.scans 0"), "no walk of the export");
	cr_assert(th_file_contains(srv.log, "fh.stale 0"));
}

Test(nfs_exports, handles_survive_restart_and_renames_without_a_walk)
{
	t_survive_restart_and_renames("file handles: kernel");
}

Test(nfs_exports_path, handles_survive_restart_and_renames_without_a_walk)
{
	t_survive_restart_and_renames("file handles: path");
}

/*
 * A directory of BIG_FILES files (made behind the server's back, as an
 * existing export would be), BIG_SAMPLE of them looked up through the
 * server; after a restart the old handles of the directory and of those
 * files still work, and new LOOKUPs in the old directory handle too, with
 * no walk of the export (fh.scans 0). The time is printed (a figure, not
 * asserted: timing goals live in benchmarks).
 */
#define BIG_FILES 100000
#define BIG_SAMPLE 1000

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void t_big_directory(const char *mode)
{
	char path[700], name[32];
	local_path(path, sizeof(path), "big");
	cr_assert_eq(mkdir(path, 0755), 0);
	double t0 = mono();
	for (int i = 0; i < BIG_FILES; i++) {
		char p[760];
		snprintf(p, sizeof(p), "%s/f%06d", path, i);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		cr_assert_geq(fd, 0, "create %s", p);
		close(fd);
	}
	double made = mono() - t0;
	static struct rrr_nfs3_fh fh[BIG_SAMPLE];
	struct rrr_nfs3_fh dir;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "big", &dir, NULL), 0);
	for (int i = 0; i < BIG_SAMPLE; i++) {
		snprintf(name, sizeof(name), "f%06d", i * (BIG_FILES / BIG_SAMPLE));
		cr_assert_eq(rrr_nfs3_lookup(nfs, &dir, name, &fh[i], NULL), 0);
	}
	restart();
	t0 = mono();
	struct rrr_nfs3_fattr at;
	for (int i = 0; i < BIG_SAMPLE; i++)
		cr_assert_eq(rrr_nfs3_getattr(nfs, &fh[i], &at), 0, "old handle %d after restart", i);
	double old_handles = mono() - t0;
	t0 = mono();
	for (int i = 0; i < BIG_SAMPLE; i++) {
		struct rrr_nfs3_fh g;
		snprintf(name, sizeof(name), "f%06d", i * (BIG_FILES / BIG_SAMPLE) + 1);
		cr_assert_eq(rrr_nfs3_lookup(nfs, &dir, name, &g, NULL), 0);
	}
	double lookups = mono() - t0;
	disconnect_all();
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "fh.scans 0"), "no walk of the export");
	cr_assert(th_file_contains(srv.log, "fh.stale 0"));
	fprintf(stderr,
		"nfs_exports %s handles: %d-file directory (made in %.1f s) after a restart: "
		"%d GETATTRs of old handles in %.3f s (%.0f us each), %d LOOKUPs in the old "
		"directory handle in %.3f s (%.0f us each), fh.scans 0\n",
		mode, BIG_FILES, made, BIG_SAMPLE, old_handles, old_handles * 1e6 / BIG_SAMPLE,
		BIG_SAMPLE, lookups, lookups * 1e6 / BIG_SAMPLE);
}

Test(nfs_exports, big_directory_after_restart_without_a_walk)
{
	t_big_directory("kernel");
}

Test(nfs_exports_path, big_directory_after_restart_without_a_walk)
{
	t_big_directory("path");
}

static void t_moved_out_is_stale(void)
{
	struct rrr_nfs3_fh d, f, g;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, rrr_nfs3_root(nfs), "d", 0755, &d), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "f", 0644, true, &f), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &d, "g", 0644, true, &g), 0);
	char from[600], to[600];
	local_path(from, sizeof(from), "f");
	snprintf(to, sizeof(to), "%s/f-out", srv.dir);
	cr_assert_eq(rename(from, to), 0);
	local_path(from, sizeof(from), "d");
	snprintf(to, sizeof(to), "%s/d-out", srv.dir);
	cr_assert_eq(rename(from, to), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &f, NULL)), RRR_NFS3ERR_STALE, "a file moved out");
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &d, NULL)), RRR_NFS3ERR_STALE, "a directory moved out");
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &g, NULL)), RRR_NFS3ERR_STALE, "a file in it");
	struct rrr_nfs3_fh x;
	cr_assert_neq(rrr_nfs3_lookup(nfs, &d, "g", &x, NULL), 0);
	restart();
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &f, NULL)), RRR_NFS3ERR_STALE, "also after a restart");
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &g, NULL)), RRR_NFS3ERR_STALE);
}

Test(nfs_exports, moved_out_of_the_export_is_stale)
{
	t_moved_out_is_stale();
}

Test(nfs_exports_path, moved_out_of_the_export_is_stale)
{
	t_moved_out_is_stale();
}

static void be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* A kernel handle ("RRK1") of @path, sealed with the server's own key. */
static void seal(const char *path, struct rrr_nfs3_fh *fh)
{
	uint8_t key[16];
	char kp[400], root[PATH_MAX];
	snprintf(kp, sizeof(kp), "%s/fh.key", srv.state_dir);
	FILE *f = fopen(kp, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fread(key, 1, 16, f), 16u);
	fclose(f);
	cr_assert_not_null(realpath(srv.export_dir, root));
	uint32_t id = (uint32_t)fs_siphash24(key, (const uint8_t *)root, strlen(root));
	struct {
		struct file_handle h;
		unsigned char b[MAX_HANDLE_SZ];
	} k;
	k.h.handle_bytes = MAX_HANDLE_SZ;
	int mnt;
	cr_assert_eq(name_to_handle_at(AT_FDCWD, path, &k.h, &mnt, 0), 0);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	memset(fh, 0, sizeof(*fh));
	be(fh->data, 0x52524b31u, 4);
	be(fh->data + 4, id, 4);
	be(fh->data + 8, st.st_ino, 8);
	fh->data[16] = (uint8_t)k.h.handle_type;
	fh->data[17] = (uint8_t)k.h.handle_bytes;
	memcpy(fh->data + 18, k.h.f_handle, k.h.handle_bytes);
	uint32_t n = 18 + k.h.handle_bytes;
	be(fh->data + n, fs_siphash24(key, fh->data, n), 8);
	fh->len = n + 8;
}

Test(nfs_exports, a_sealed_handle_of_a_file_outside_is_refused)
{
	char in[600], out[600];
	local_path(in, sizeof(in), "inside");
	FILE *f = fopen(in, "w");
	cr_assert_not_null(f);
	fputs("inside\n", f);
	fclose(f);
	struct rrr_nfs3_fh fh;
	seal(in, &fh);
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &fh, &at), 0, "the construction is the server's");
	cr_assert_eq(at.size, 7);
	/* a leaked key must still not open anything outside the export */
	snprintf(out, sizeof(out), "%s/secret", srv.dir);
	seal(out, &fh);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &fh, NULL)), RRR_NFS3ERR_STALE);
	static char buf[64];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	uint32_t count = 0;
	bool eof;
	cr_assert_eq(th_nfs_st(rrr_nfs3_read(nfs, &fh, 0, &iov, 1, &count, &eof)), RRR_NFS3ERR_STALE);
	cr_assert_null(memmem(buf, sizeof(buf), "secret", 6));
	seal(srv.dir, &fh); /* the export's parent directory */
	struct rrr_nfs3_fh x;
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, &fh, "secret", &x, NULL)), RRR_NFS3ERR_STALE);
	disconnect_all();
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(!th_file_contains(srv.log, "fh.escapes_refused 0"), "escapes are counted");
}

/* ------------------------------------------------------------ as the caller */
Test(nfs_creds, root_is_squashed_and_chmod_of_anothers_file_is_eperm)
{
	cr_assert(th_file_contains(srv.log, "requests run as their callers"));
	struct rrr_nfs3_fh f;
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "r", 0644, true, &f), 0);
	char p[600];
	struct stat st;
	local_path(p, sizeof(p), "r");
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, 65534u, "root is squashed to the anonymous uid");
	cr_assert_eq(st.st_gid, 65534u);

	struct rrr_nfs3 *u = mount_as(1000, 1000);
	struct rrr_nfs3_sattr m = {.set_mode = true, .mode = 0666};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(u, &f, &m)), RRR_NFS3ERR_PERM, "uid 1000 chmods 65534's file");
	struct rrr_nfs3_sattr own = {.set_uid = true, .uid = 1000};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(u, &f, &own)), RRR_NFS3ERR_PERM);
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(nfs, &f, &own)), RRR_NFS3ERR_PERM, "squashed root may not chown");
	cr_assert_eq(rrr_nfs3_setattr(nfs, &f, &m), 0, "the owner may chmod");
	struct rrr_nfs3_fh g;
	cr_assert_eq(rrr_nfs3_create(u, rrr_nfs3_root(nfs), "u", 0644, true, &g), 0);
	local_path(p, sizeof(p), "u");
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, 1000u, "new files belong to their creator");
	cr_assert_eq(st.st_mode & 0777, 0644u, "the server applies no umask of its own");
	cr_assert_eq(rrr_nfs3_remove(u, rrr_nfs3_root(nfs), "u"), 0);
	rrr_nfs3_umount(u);
}

Test(nfs_creds, permissions_are_the_kernels_and_the_fd_cache_is_per_user)
{
	struct rrr_nfs3_fh f, d;
	struct rrr_nfs3 *u = mount_as(1000, 1000);
	struct rrr_nfs3 *w = mount_as(2000, 2000);
	cr_assert_eq(rrr_nfs3_create(u, rrr_nfs3_root(nfs), "private", 0600, true, &f), 0);
	struct iovec iov = {.iov_base = "mine", .iov_len = 4};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(u, &f, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	static char buf[16];
	struct iovec rio = {.iov_base = buf, .iov_len = sizeof(buf)};
	bool eof;
	for (int i = 0; i < 3; i++) /* the owner's reads fill the descriptor cache */
		cr_assert_eq(rrr_nfs3_read(u, &f, 0, &rio, 1, &count, &eof), 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(th_nfs_st(rrr_nfs3_read(w, &f, 0, &rio, 1, &count, &eof)), RRR_NFS3ERR_ACCES,
		     "another user reads a 0600 file");
	cr_assert_null(memmem(buf, sizeof(buf), "mine", 4));
	cr_assert_eq(th_nfs_st(rrr_nfs3_write(w, &f, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count)),
		     RRR_NFS3ERR_ACCES);
	cr_assert_eq(th_nfs_st(rrr_nfs3_read(nfs, &f, 0, &rio, 1, &count, &eof)), RRR_NFS3ERR_ACCES,
		     "squashed root is nobody");
	uint32_t acc = th_raw_access(raw, 2000, &f);
	cr_assert_eq(acc & (RRR_NFS3_ACCESS_READ | RRR_NFS3_ACCESS_MODIFY), 0u, "ACCESS agrees");
	acc = th_raw_access(raw, 1000, &f);
	cr_assert_eq(acc & (RRR_NFS3_ACCESS_READ | RRR_NFS3_ACCESS_MODIFY),
		     RRR_NFS3_ACCESS_READ | RRR_NFS3_ACCESS_MODIFY);
	cr_assert_eq(acc & RRR_NFS3_ACCESS_EXECUTE, 0u);

	/* times: "now" needs write permission, a given time ownership; the
	 * client sends mtime alone (SET_TO_SERVER_TIME) when it truncates */
	struct rrr_nfs3_fh pub;
	cr_assert_eq(rrr_nfs3_create(u, rrr_nfs3_root(nfs), "public", 0666, true, &pub), 0);
	struct rrr_nfs3_sattr now = {.set_size = true, .size = 0,
				     .mtime_how = RRR_NFS3_SET_TO_SERVER_TIME};
	cr_assert_eq(rrr_nfs3_setattr(w, &pub, &now), 0, "O_TRUNC of a 0666 file by another user");
	struct rrr_nfs3_sattr given = {.mtime_how = RRR_NFS3_SET_TO_CLIENT_TIME,
				       .mtime = {.sec = 946684800}};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(w, &pub, &given)), RRR_NFS3ERR_PERM);
	cr_assert_eq(rrr_nfs3_setattr(u, &pub, &given), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(w, &f, &now)), RRR_NFS3ERR_ACCES, "no write permission");

	/* a directory of 1000's: 2000 may not create, remove or rename in it */
	cr_assert_eq(rrr_nfs3_mkdir(u, rrr_nfs3_root(nfs), "d", 0755, &d), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(w, &d, "x", 0644, true, NULL)), RRR_NFS3ERR_ACCES);
	cr_assert_eq(rrr_nfs3_create(u, &d, "x", 0644, true, NULL), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_remove(w, &d, "x")), RRR_NFS3ERR_ACCES);
	cr_assert_eq(th_nfs_st(rrr_nfs3_rename(w, &d, "x", rrr_nfs3_root(nfs), "stolen")), RRR_NFS3ERR_ACCES);
	struct rrr_nfs3_sattr m = {.set_mode = true, .mode = 0700};
	cr_assert_eq(rrr_nfs3_setattr(u, &d, &m), 0);
	struct rrr_nfs3_fh x;
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(w, &d, "x", &x, NULL)), RRR_NFS3ERR_ACCES,
		     "LOOKUP needs search permission");
	cr_assert_eq(rrr_nfs3_lookup(u, &d, "x", &x, NULL), 0);

	/* owner override: a 0444 file its owner just created can be written */
	struct rrr_nfs3_fh ro;
	cr_assert_eq(rrr_nfs3_create(u, rrr_nfs3_root(nfs), "ro", 0444, true, &ro), 0);
	cr_assert_eq(rrr_nfs3_write(u, &ro, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_write(w, &ro, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count)),
		     RRR_NFS3ERR_ACCES);
	rrr_nfs3_umount(w);
	rrr_nfs3_umount(u);
}

Test(nfs_creds, supplementary_groups_count)
{
	char p[600];
	local_path(p, sizeof(p), "team");
	cr_assert_eq(mkdir(p, 0770), 0);
	cr_assert_eq(chown(p, 0, 3000), 0);
	cr_assert_eq(chmod(p, 0770), 0);
	struct rrr_nfs3_fh d;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "team", &d, NULL), 0);
	static struct rrr_nfs3_create_res r;
	const uint32_t gids[] = {100, 3000};
	cr_assert_eq(create_as(1000, 1000, gids, 1, &d, "a", RRR_NFS3_GUARDED, 0644, NULL, &r),
		     RRR_NFS3ERR_ACCES, "not in the group");
	cr_assert_eq(create_as(1000, 1000, gids, 2, &d, "a", RRR_NFS3_GUARDED, 0644, NULL, &r), 0,
		     "in the group through the supplementary list");
	cr_assert_eq(create_as(1000, 3000, NULL, 0, &d, "b", RRR_NFS3_GUARDED, 0644, NULL, &r), 0,
		     "in the group as the primary gid");
	const uint32_t zero[] = {0};
	cr_assert_eq(create_as(1000, 1000, zero, 1, rrr_nfs3_root(nfs), "z", RRR_NFS3_GUARDED,
			       0644, NULL, &r), 0);
	local_path(p, sizeof(p), "team/a");
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_uid, 1000u);
}

Test(nfs_creds, mknod_fifo_and_socket_for_users_devices_for_root_only)
{
	static struct rrr_nfs3_create_res r;
	cr_assert_eq(mknod_as(1000, RRR_NF3FIFO, "fifo", 0, 0, &r), 0);
	cr_assert_eq(r.attr.attr.type, RRR_NF3FIFO);
	cr_assert_eq(r.attr.attr.uid, 1000u);
	cr_assert_eq(mknod_as(1000, RRR_NF3SOCK, "sock", 0, 0, &r), 0);
	cr_assert_eq(r.attr.attr.type, RRR_NF3SOCK);
	cr_assert_eq(mknod_as(1000, RRR_NF3CHR, "null", 1, 3, &r), RRR_NFS3ERR_PERM);
	cr_assert_eq(mknod_as(0, RRR_NF3CHR, "null", 1, 3, &r), RRR_NFS3ERR_PERM,
		     "squashed root makes no devices");
	cr_assert_eq(mknod_as(1000, RRR_NF3DIR, "dir", 0, 0, &r), RRR_NFS3ERR_BADTYPE);
	char p[600];
	struct stat st;
	local_path(p, sizeof(p), "fifo");
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode));
	local_path(p, sizeof(p), "sock");
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
}

Test(nfs_exports, mknod_device_as_unsquashed_root)
{
	static struct rrr_nfs3_create_res r;
	cr_assert_eq(mknod_as(0, RRR_NF3CHR, "null", 1, 3, &r), 0);
	cr_assert_eq(r.attr.attr.type, RRR_NF3CHR);
	cr_assert_eq(r.attr.attr.rdev_major, 1u);
	cr_assert_eq(r.attr.attr.rdev_minor, 3u);
	cr_assert_eq(mknod_as(0, RRR_NF3BLK, "blk", 7, 0, &r), 0);
	char p[600];
	struct stat st;
	local_path(p, sizeof(p), "null");
	cr_assert_eq(lstat(p, &st), 0);
	cr_assert(S_ISCHR(st.st_mode));
	cr_assert_eq(st.st_rdev, makedev(1, 3));
}

/* ------------------------------------------------------------ create modes */
Test(nfs_exports, create_unchecked_guarded_exclusive)
{
	static struct rrr_nfs3_create_res r, r2;
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(nfs);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "f", RRR_NFS3_GUARDED, 0640, NULL, &r), 0);
	struct iovec iov = {.iov_base = "data", .iov_len = 4};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &r.fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "f", RRR_NFS3_GUARDED, 0640, NULL, &r2),
		     RRR_NFS3ERR_EXIST);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "f", RRR_NFS3_UNCHECKED, 0600, NULL, &r2),
		     0, "UNCHECKED over an existing file");
	cr_assert(r2.fh_present && r2.attr.present);
	cr_assert_eq(r2.attr.attr.size, 4u, "keeps its data");
	cr_assert_eq(r2.attr.attr.mode, 0640u, "and its mode");
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "d", RRR_NFS3_UNCHECKED, 0600, NULL, &r2),
		     0);
	cr_assert_eq(rrr_nfs3_mkdir(nfs, root, "dir", 0755, NULL), 0);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "dir", RRR_NFS3_UNCHECKED, 0600, NULL,
			       &r2), RRR_NFS3ERR_EXIST, "UNCHECKED over a directory");

	const uint8_t v1[8] = {0x81, 2, 3, 4, 0xf5, 6, 7, 8}, v2[8] = {9, 9, 9, 9, 9, 9, 9, 9};
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "x", RRR_NFS3_EXCLUSIVE, 0, v1, &r), 0);
	cr_assert(r.fh_present);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "x", RRR_NFS3_EXCLUSIVE, 0, v1, &r2), 0,
		     "a re-sent EXCLUSIVE create with the same verifier");
	cr_assert(r2.fh_present);
	cr_assert_eq(r2.fh.len, r.fh.len);
	cr_assert_eq(memcmp(r2.fh.data, r.fh.data, r.fh.len), 0, "answers the same handle");
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "x", RRR_NFS3_EXCLUSIVE, 0, v2, &r2),
		     RRR_NFS3ERR_EXIST, "another verifier");
	/* the client's SETATTR after an exclusive create */
	struct rrr_nfs3 *u = mount_as(1000, 1000);
	struct rrr_nfs3_sattr s = {.set_mode = true, .mode = 0640, .atime_how =
				   RRR_NFS3_SET_TO_SERVER_TIME, .mtime_how = RRR_NFS3_SET_TO_SERVER_TIME};
	cr_assert_eq(rrr_nfs3_setattr(u, &r.fh, &s), 0);
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(u, &r.fh, &at), 0);
	cr_assert_eq(at.mode, 0640u);
	cr_assert_eq(at.uid, 1000u);
	cr_assert_eq(rrr_nfs3_write(u, &r.fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	rrr_nfs3_umount(u);
	cr_assert_eq(create_as(1000, 1000, NULL, 0, root, "x", RRR_NFS3_EXCLUSIVE, 0, v1, &r2),
		     RRR_NFS3ERR_EXIST, "after its SETATTR the verifier is gone");
}
