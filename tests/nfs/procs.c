/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/procs.c - NFSv3 procedure semantics of rrr-server (RFC 1813)
 * over TCP against a real server process: SETATTR, ACCESS, SYMLINK and
 * READLINK, LINK, MKNOD (NOTSUPP), GUARDED CREATE, RMDIR of a non-empty
 * directory, plain READDIR paging with cookies, FSSTAT, PATHCONF, COMMIT,
 * MOUNT EXPORT/DUMP, and --read-only.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/nfs_helpers.h"
#include "tests/lib/raw_rpc.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;
static struct rrr_clnt *raw; /* for procedures the library does not wrap */

static void connect_all(void)
{
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	nfs = th_nfs_mount(&mt);
	cr_assert_eq(th_raw_connect("tcp", srv.mount_port, 10000, false, &raw), 0);
}

static void setup(void)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	connect_all();
}

static void teardown(void)
{
	th_raw_close(&raw);
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	th_cleanup(&srv);
}

TestSuite(nfs_procs, .init = setup, .fini = teardown, .timeout = 60);

/* One raw NFS call as root (the server squashes AUTH_NONE to nobody). */
static int raw_call(uint32_t prog, uint32_t proc, th_xdr_fn enc, void *args, th_xdr_fn dec,
		    void *res)
{
	return th_raw_call(raw, prog, proc, &th_root_cred, enc, args, dec, res);
}

Test(nfs_procs, setattr_truncate_and_mode)
{
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "f", 0644, false, &fh), 0);
	struct iovec iov = {.iov_base = "0123456789", .iov_len = 10};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
	cr_assert_eq(count, 10);
	struct rrr_nfs3_sattr s = {.set_size = true, .size = 4, .set_mode = true, .mode = 0600};
	cr_assert_eq(rrr_nfs3_setattr(nfs, &fh, &s), 0);
	struct rrr_nfs3_fattr a;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &fh, &a), 0);
	cr_assert_eq(a.size, 4);
	cr_assert_eq(a.mode, 0600);
	char path[400];
	snprintf(path, sizeof(path), "%s/f", srv.export_dir);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 4);
	/* GUARDED create of an existing name */
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "f", 0644, true, &fh)),
		     RRR_NFS3ERR_EXIST);
}

Test(nfs_procs, symlink_readlink_link_access)
{
	struct rrr_nfs3_fh l, f;
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "target", 0644, false, &f), 0);
	cr_assert_eq(rrr_nfs3_symlink(nfs, rrr_nfs3_root(nfs), "lnk", "some/where/../x", &l), 0);
	char buf[RRR_NFS3_MAXPATHLEN + 1];
	cr_assert_eq(rrr_nfs3_readlink(nfs, &l, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "some/where/../x");
	cr_assert_eq(th_nfs_st(rrr_nfs3_readlink(nfs, &f, buf, sizeof(buf))), RRR_NFS3ERR_INVAL);

	struct rrr_nfs3_link_args la = {.file = f, .link = {.dir = *rrr_nfs3_root(nfs)}};
	strcpy(la.link.name, "hard");
	static struct rrr_nfs3_link_res lr;
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_LINK, TH_XF(rrr_nfs3_xdr_link_args), &la,
			      TH_XF(rrr_nfs3_xdr_link_res), &lr), 0);
	cr_assert_eq(lr.status, 0, "LINK: %u", lr.status);
	cr_assert(lr.attr.present);
	cr_assert_eq(lr.attr.attr.nlink, 2);

	struct rrr_nfs3_access_args aa = {.fh = f, .access = 0x3f};
	static struct rrr_nfs3_access_res ar;
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_ACCESS, TH_XF(rrr_nfs3_xdr_access_args), &aa,
			      TH_XF(rrr_nfs3_xdr_access_res), &ar), 0);
	cr_assert_eq(ar.status, 0);
	cr_assert(ar.access & RRR_NFS3_ACCESS_READ);
	cr_assert_eq(ar.access & RRR_NFS3_ACCESS_LOOKUP, 0, "LOOKUP is for directories");
}

Test(nfs_procs, mknod_fifo_rmdir_notempty_remove_noent)
{
	struct rrr_nfs3_mknod_args ma = {.where = {.dir = *rrr_nfs3_root(nfs)}, .type = RRR_NF3FIFO,
					 .attr = {.set_mode = true, .mode = 0640}};
	strcpy(ma.where.name, "fifo");
	static struct rrr_nfs3_create_res cr;
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_MKNOD, TH_XF(rrr_nfs3_xdr_mknod_args), &ma,
			      TH_XF(rrr_nfs3_xdr_create_res), &cr), 0);
	cr_assert_eq(cr.status, 0, "MKNOD FIFO: %u", cr.status);
	cr_assert(cr.fh_present && cr.attr.present);
	cr_assert_eq(cr.attr.attr.type, RRR_NF3FIFO);
	cr_assert_eq(cr.attr.attr.mode, 0640);
	ma.type = RRR_NF3REG; /* not MKNOD's to make */
	strcpy(ma.where.name, "reg");
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_MKNOD, TH_XF(rrr_nfs3_xdr_mknod_args), &ma,
			      TH_XF(rrr_nfs3_xdr_create_res), &cr), 0);
	cr_assert_eq(cr.status, RRR_NFS3ERR_BADTYPE);

	struct rrr_nfs3_fh d;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, rrr_nfs3_root(nfs), "d", 0755, &d), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &d, "x", 0644, false, NULL), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_rmdir(nfs, rrr_nfs3_root(nfs), "d")), RRR_NFS3ERR_NOTEMPTY);
	cr_assert_eq(th_nfs_st(rrr_nfs3_remove(nfs, rrr_nfs3_root(nfs), "nope")), RRR_NFS3ERR_NOENT);
	/* an NFS error is a negative errno; the exact status is kept per thread
	 * until the next call */
	cr_assert_eq(rrr_nfs3_remove(nfs, rrr_nfs3_root(nfs), "nope"), -ENOENT);
	cr_assert_eq(rrr_nfs3_last_status(), RRR_NFS3ERR_NOENT);
	cr_assert_eq(rrr_nfs3_getattr(nfs, rrr_nfs3_root(nfs), NULL), 0);
	cr_assert_eq(rrr_nfs3_last_status(), RRR_NFS3_OK);
	cr_assert_eq(rrr_nfs3_remove(nfs, rrr_nfs3_root(nfs), "a/b"), -EINVAL, "nothing sent");
	cr_assert_eq(rrr_nfs3_last_status(), RRR_NFS3_OK);
	cr_assert_eq(rrr_nfs3_rename(nfs, &d, "x", rrr_nfs3_root(nfs), "moved"), 0);
	cr_assert_eq(rrr_nfs3_rmdir(nfs, rrr_nfs3_root(nfs), "d"), 0);
	cr_assert_eq(rrr_nfs3_remove(nfs, rrr_nfs3_root(nfs), "moved"), 0);
}

Test(nfs_procs, readdir_pages_with_cookies)
{
	char path[400];
	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "%s/entry-%03d", srv.export_dir, i);
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		fclose(f);
	}
	static struct rrr_nfs3_dirent ents[512];
	static bool seen[300];
	struct rrr_nfs3_readdir_args a = {.dir = *rrr_nfs3_root(nfs), .dircount = 1024};
	int pages = 0, total = 0;
	for (;;) {
		static struct rrr_nfs3_readdir_res r;
		memset(&r, 0, sizeof(r));
		r.entries = ents;
		r.cap = 512;
		cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_READDIR,
				      TH_XF(rrr_nfs3_xdr_readdir_args), &a, TH_XF(rrr_nfs3_xdr_readdir_res),
				      &r), 0);
		cr_assert_eq(r.status, 0);
		pages++;
		for (uint32_t i = 0; i < r.n; i++) {
			int k;
			cr_assert_eq(sscanf(r.entries[i].name, "entry-%d", &k), 1);
			cr_assert_not(seen[k], "entry %d listed twice", k);
			seen[k] = true;
			total++;
		}
		if (r.eof)
			break;
		cr_assert_gt(r.n, 0);
		a.cookie = r.entries[r.n - 1].cookie;
		cr_assert_lt(pages, 100);
	}
	cr_assert_eq(total, 300);
	cr_assert_gt(pages, 3, "1 KiB count forces several pages (%d)", pages);
	/* Too small to hold one entry */
	a.cookie = 0;
	a.dircount = 64;
	static struct rrr_nfs3_readdir_res small;
	small.entries = ents;
	small.cap = 512;
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_READDIR, TH_XF(rrr_nfs3_xdr_readdir_args), &a,
			      TH_XF(rrr_nfs3_xdr_readdir_res), &small), 0);
	cr_assert_eq(small.status, RRR_NFS3ERR_TOOSMALL);
}

Test(nfs_procs, fsstat_pathconf_commit_mount_lists)
{
	struct rrr_nfs3_fsstat_res fs;
	cr_assert_eq(rrr_nfs3_fsstat(nfs, rrr_nfs3_root(nfs), &fs), 0);
	cr_assert_gt(fs.tbytes, 0);
	cr_assert_geq(fs.tbytes, fs.fbytes);

	struct rrr_nfs3_fh_args pa = {.fh = *rrr_nfs3_root(nfs)};
	static struct rrr_nfs3_pathconf_res pr;
	cr_assert_eq(raw_call(RRR_NFS3_PROGRAM, RRR_NFS3_PATHCONF, TH_XF(rrr_nfs3_xdr_fh_args), &pa,
			      TH_XF(rrr_nfs3_xdr_pathconf_res), &pr), 0);
	cr_assert_eq(pr.status, 0);
	cr_assert_eq(pr.name_max, 255);
	cr_assert(pr.case_preserving);

	struct rrr_nfs3_fh fh;
	uint8_t v1[8], v2[8];
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "c", 0644, false, &fh), 0);
	cr_assert_eq(rrr_nfs3_commit(nfs, &fh, v1), 0);
	cr_assert_eq(rrr_nfs3_commit(nfs, &fh, v2), 0);
	cr_assert_eq(memcmp(v1, v2, 8), 0, "verifier stable while the server runs");
	cr_assert_eq(th_nfs_st(rrr_nfs3_commit(nfs, rrr_nfs3_root(nfs), v2)), RRR_NFS3ERR_INVAL);

	static struct rrr_mnt_export exps[4];
	static struct rrr_mnt_export_res er = {.entries = exps, .cap = 4};
	cr_assert_eq(raw_call(RRR_MNT_PROGRAM, RRR_MNT_EXPORT, NULL, NULL,
			      TH_XF(rrr_mnt_xdr_export_res), &er), 0);
	cr_assert_eq(er.n, 1);
	cr_assert_str_eq(exps[0].groups, "*");
	static struct rrr_mnt_entry ml[8];
	static struct rrr_mnt_dump_res dr = {.entries = ml, .cap = 8};
	cr_assert_eq(raw_call(RRR_MNT_PROGRAM, RRR_MNT_DUMP, NULL, NULL, TH_XF(rrr_mnt_xdr_dump_res),
			      &dr), 0);
	cr_assert_geq(dr.n, 1, "our mount is listed");
	cr_assert_str_eq(ml[0].host, "127.0.0.1");
}

Test(nfs_procs, read_only_export)
{
	rrr_clnt_destroy(raw);
	raw = NULL;
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	/* restart read-only: th_server_start has no flag, so run it by hand */
	char prog[512], ports[400];
	th_prog("rrr-server", prog, sizeof(prog));
	snprintf(ports, sizeof(ports), "%s/ports", srv.dir);
	unlink(ports);
	pid_t pid = fork();
	if (pid == 0) {
		closefrom(3);
		execl(prog, prog, "--export", srv.export_dir, "--state-dir", srv.state_dir,
		      "--no-rdma", "--mount-port", "0", "--port-file", ports, "--read-only",
		      (char *)NULL);
		_exit(127);
	}
	srv.pid = pid;
	for (int i = 0; i < 500 && access(ports, F_OK) != 0; i++)
		usleep(20000);
	FILE *f = fopen(ports, "r");
	cr_assert_not_null(f);
	unsigned r, m, t;
	cr_assert_eq(fscanf(f, "rdma=%u mount=%u tcp=%u", &r, &m, &t), 3);
	fclose(f);
	srv.mount_port = m;
	connect_all();
	cr_assert_eq(th_nfs_st(rrr_nfs3_mkdir(nfs, rrr_nfs3_root(nfs), "d", 0755, NULL)), RRR_NFS3ERR_ROFS);
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "f", 0644, false, NULL)),
		     RRR_NFS3ERR_ROFS);
	cr_assert_eq(rrr_nfs3_getattr(nfs, rrr_nfs3_root(nfs), NULL), 0);
}

/* The server acts as its caller: ownership changes, set-ID bits and even a
 * plain chmod of another user's file are refused as the kernel would. */
Test(nfs_procs, setattr_privileged_changes_need_root)
{
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "p", 0644, false, &fh), 0);

	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	mt.o.uid = 1000;
	mt.o.gid = 1000;
	struct rrr_nfs3 *user = th_nfs_mount(&mt);

	struct rrr_nfs3_sattr chown_s = {.set_uid = true, .uid = 1000};
	cr_expect_eq(th_nfs_st(rrr_nfs3_setattr(user, &fh, &chown_s)), RRR_NFS3ERR_PERM);
	struct rrr_nfs3_sattr suid_s = {.set_mode = true, .mode = 04755};
	cr_expect_eq(th_nfs_st(rrr_nfs3_setattr(user, &fh, &suid_s)), RRR_NFS3ERR_PERM);
	struct rrr_nfs3_sattr plain = {.set_mode = true, .mode = 0600};
	cr_expect_eq(th_nfs_st(rrr_nfs3_setattr(user, &fh, &plain)), RRR_NFS3ERR_PERM,
		     "uid 1000 may not chmod root's file");
	rrr_nfs3_umount(user);

	char path[400];
	struct stat st;
	snprintf(path, sizeof(path), "%s/p", srv.export_dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0644);
	cr_expect_neq(st.st_uid, 1000u);
	/* root may */
	if (getuid() == 0) {
		cr_expect_eq(rrr_nfs3_setattr(nfs, &fh, &chown_s), 0);
		cr_assert_eq(stat(path, &st), 0);
		cr_expect_eq(st.st_uid, 1000u);
	}
}
