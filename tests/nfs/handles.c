/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/handles.c - file handle safety of rrr-server, attacked through
 * the NFSv3 client library over TCP against a real server process:
 * forged and tampered handles, "..", names with '/', symlinks pointing
 * outside the export, handles that must stay valid across a restart, and a
 * write verifier that must change across it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/conf_server.h"
#include "tests/lib/nfs_helpers.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;

static void mount_it(void)
{
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	nfs = th_nfs_mount(&mt);
}

static void setup(void)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/secret", srv.dir); /* outside the export */
	FILE *f = fopen(path, "w");
	fputs("top secret\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sub", srv.export_dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/file", srv.export_dir);
	f = fopen(path, "w");
	fputs("inside\n", f);
	fclose(f);
	char target[512];
	snprintf(path, sizeof(path), "%s/abs-out", srv.export_dir);
	snprintf(target, sizeof(target), "%s/secret", srv.dir);
	cr_assert_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/rel-out", srv.export_dir);
	cr_assert_eq(symlink("../secret", path), 0);
	snprintf(path, sizeof(path), "%s/dir-out", srv.export_dir);
	cr_assert_eq(symlink("..", path), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	mount_it();
}

static void teardown(void)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	th_cleanup(&srv);
}

/* The same attacks against the openat2() resolver and against the
 * component-by-component fallback used where openat2() is missing. */
static void setup_walk(void)
{
	setenv("RRR_FS_NO_OPENAT2", "1", 1);
	setup();
}

static void teardown_walk(void)
{
	teardown();
	unsetenv("RRR_FS_NO_OPENAT2");
}

TestSuite(nfs_handles, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(nfs_handles_walk, .init = setup_walk, .fini = teardown_walk, .timeout = 60);

static void t_dotdot_of_root_is_root(void)
{
	struct rrr_nfs3_fattr root, up;
	cr_assert_eq(rrr_nfs3_getattr(nfs, rrr_nfs3_root(nfs), &root), 0);
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "..", &fh, &up), 0);
	cr_assert_eq(up.fileid, root.fileid, "'..' of the export root stays at the root");
	/* ".." of a subdirectory is its parent. */
	struct rrr_nfs3_fh sub;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "sub", &sub, NULL), 0);
	cr_assert_eq(rrr_nfs3_lookup(nfs, &sub, "..", &fh, &up), 0);
	cr_assert_eq(up.fileid, root.fileid);
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, &sub, "../..", &fh, NULL)), RRR_NFS3ERR_ACCES,
		     "a name with '/' is refused");
}

static void t_symlinks_out_are_not_followed(void)
{
	struct rrr_nfs3_fh fh, fh2;
	struct rrr_nfs3_fattr a;
	static char buf[64];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	uint32_t count = 0;
	bool eof;
	const char *links[] = {"abs-out", "rel-out"};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), links[i], &fh, &a), 0);
		cr_assert_eq(a.type, RRR_NF3LNK, "LOOKUP returns the link itself");
		int rc = rrr_nfs3_read(nfs, &fh, 0, &iov, 1, &count, &eof);
		cr_assert_eq(th_nfs_st(rc), RRR_NFS3ERR_INVAL, "READ of a symlink handle: %d", rc);
		cr_assert_null(memmem(buf, sizeof(buf), "secret", 6));
	}
	/* A symlink to ".." used as a directory goes nowhere. */
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "dir-out", &fh, NULL), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, &fh, "secret", &fh2, NULL)), RRR_NFS3ERR_NOTDIR);
	/* Creating through a symlink to outside does not write outside. */
	cr_assert_neq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "abs-out", 0644, false, &fh2), 0,
		      "CREATE over a symlink must fail");
	char path[512];
	snprintf(path, sizeof(path), "%s/secret", srv.dir);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 11, "the file outside is untouched");
}

static void t_forged_and_tampered_handles(void)
{
	struct rrr_nfs3_fh fh;
	struct rrr_nfs3_fattr a;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "file", &fh, &a), 0);
	cr_assert_eq(rrr_nfs3_getattr(nfs, &fh, NULL), 0);

	/* Point the inode field at the file outside the export. */
	char path[512];
	snprintf(path, sizeof(path), "%s/secret", srv.dir);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	struct rrr_nfs3_fh forged = fh;
	for (int i = 0; i < 8; i++)
		forged.data[8 + i] = (uint8_t)((uint64_t)st.st_ino >> (56 - 8 * i));
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &forged, NULL)), RRR_NFS3ERR_STALE,
		     "a forged inode number fails the tag");

	/* Any flipped bit is refused. */
	for (uint32_t i = 0; i < fh.len * 8; i += 13) {
		struct rrr_nfs3_fh t = fh;
		t.data[i / 8] ^= (uint8_t)(1u << (i % 8));
		int rc = th_nfs_st(rrr_nfs3_getattr(nfs, &t, NULL));
		cr_assert(rc == RRR_NFS3ERR_STALE || rc == RRR_NFS3ERR_BADHANDLE,
			  "bit %u flipped: %d", i, rc);
	}
	/* Wrong lengths, empty, garbage. */
	struct rrr_nfs3_fh shortfh = fh;
	shortfh.len = 16;
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &shortfh, NULL)), RRR_NFS3ERR_BADHANDLE);
	struct rrr_nfs3_fh empty = {.len = 0};
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &empty, NULL)), RRR_NFS3ERR_BADHANDLE);
	struct rrr_nfs3_fh junk = {.len = 64};
	memset(junk.data, 0x5a, 64);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &junk, NULL)), RRR_NFS3ERR_BADHANDLE);
	/* Names the server must refuse before any system call. */
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "", &fh, NULL)), RRR_NFS3ERR_NOENT);
	cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "/etc", &fh, NULL)),
		     RRR_NFS3ERR_ACCES);
}

static void t_stable_across_restart_and_verifier_changes(void)
{
	struct rrr_nfs3_fh dir, fh;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, rrr_nfs3_root(nfs), "d", 0755, &dir), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &dir, "f", 0644, false, &fh), 0);
	struct iovec iov = {.iov_base = "hello", .iov_len = 5};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &fh, 0, &iov, 1, RRR_NFS3_UNSTABLE, &count), 0);
	uint8_t v1[8], v2[8];
	cr_assert_eq(rrr_nfs3_commit(nfs, &fh, v1), 0);
	rrr_nfs3_umount(nfs);
	nfs = NULL;

	cr_assert_eq(th_server_stop(&srv), 0);
	/* Rename the directory while the server is down: the path cache is
	 * gone and the old path is wrong, the handle must still resolve. */
	char a[512], b[512];
	snprintf(a, sizeof(a), "%s/d", srv.export_dir);
	snprintf(b, sizeof(b), "%s/moved", srv.export_dir);
	cr_assert_eq(rename(a, b), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	mount_it();
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &fh, &at), 0, "handle valid after restart");
	cr_assert_eq(at.size, 5);
	cr_assert_eq(rrr_nfs3_commit(nfs, &fh, v2), 0);
	cr_assert_neq(memcmp(v1, v2, 8), 0, "write verifier changes on restart");

	/* A removed file's handle goes stale (not BADHANDLE, not another file). */
	cr_assert_eq(rrr_nfs3_remove(nfs, &dir, "f"), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &fh, NULL)), RRR_NFS3ERR_STALE);
}

static int try_mount(const char *path)
{
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	mt.o.export_path = path;
	struct rrr_nfs3 *m = NULL;
	int rc = th_nfs_st(rrr_nfs3_mount(&mt.o, &m));
	if (rc == 0) {
		struct rrr_nfs3_fattr a;
		rc = th_nfs_st(rrr_nfs3_getattr(m, rrr_nfs3_root(m), &a));
		if (rc == 0 && a.type != RRR_NF3DIR)
			rc = -1;
		rrr_nfs3_umount(m);
	}
	return rc; /* 0, -errno, or the server's positive nfsstat3 */
}

static void t_mount_paths_stay_beneath_the_export(void)
{
	char p[600];
	cr_assert_eq(try_mount("/"), 0);
	cr_assert_eq(try_mount(srv.export_dir), 0);
	snprintf(p, sizeof(p), "%s/sub", srv.export_dir);
	cr_assert_eq(try_mount(p), 0, "a subdirectory of the export can be mounted");
	snprintf(p, sizeof(p), "%s/sub/..", srv.export_dir);
	cr_assert_eq(try_mount(p), 0, "'..' inside the export is fine");
	snprintf(p, sizeof(p), "%s/..", srv.export_dir);
	cr_assert_gt(try_mount(p), 0, "'..' above the export is refused");
	snprintf(p, sizeof(p), "%s/dir-out", srv.export_dir);
	cr_assert_gt(try_mount(p), 0, "a symlink out of the export is refused");
	snprintf(p, sizeof(p), "%s/file", srv.export_dir);
	cr_assert_gt(try_mount(p), 0, "a file is not a mount point");
	cr_assert_gt(try_mount("/etc"), 0);
	cr_assert_gt(try_mount(srv.dir), 0, "the export's parent is refused");
}

Test(nfs_handles, dotdot_of_root_is_root)
{
	t_dotdot_of_root_is_root();
}

Test(nfs_handles_walk, dotdot_of_root_is_root)
{
	t_dotdot_of_root_is_root();
}

Test(nfs_handles, symlinks_out_are_not_followed)
{
	t_symlinks_out_are_not_followed();
}

Test(nfs_handles_walk, symlinks_out_are_not_followed)
{
	t_symlinks_out_are_not_followed();
}

Test(nfs_handles, forged_and_tampered_handles)
{
	t_forged_and_tampered_handles();
}

Test(nfs_handles_walk, forged_and_tampered_handles)
{
	t_forged_and_tampered_handles();
}

Test(nfs_handles, stable_across_restart_and_verifier_changes)
{
	t_stable_across_restart_and_verifier_changes();
}

Test(nfs_handles_walk, stable_across_restart_and_verifier_changes)
{
	t_stable_across_restart_and_verifier_changes();
}

Test(nfs_handles, mount_paths_stay_beneath_the_export)
{
	t_mount_paths_stay_beneath_the_export();
}

Test(nfs_handles_walk, mount_paths_stay_beneath_the_export)
{
	t_mount_paths_stay_beneath_the_export();
}

/* Renames a file back and forth outside the export until told to stop,
 * counting the renames done. */
static atomic_bool renaming;
static atomic_long renames;

static void *rename_storm(void *arg)
{
	(void)arg;
	char a[600], b[600];
	snprintf(a, sizeof(a), "%s/storm-a", srv.dir);
	snprintf(b, sizeof(b), "%s/storm-b", srv.dir);
	FILE *f = fopen(a, "w");
	if (f)
		fclose(f);
	while (atomic_load(&renaming)) {
		if (rename(a, b) == 0 && rename(b, a) == 0)
			atomic_fetch_add(&renames, 2);
	}
	return NULL;
}

/*
 * A ".." inside the export resolves while files are renamed anywhere on the
 * machine: the kernel's beneath-resolution answers "try again" when a
 * rename races a "..", and the server must not pass that on to a client.
 */
static void t_dotdot_holds_during_renames_elsewhere(void)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/sub/..", srv.export_dir);
	pthread_t t;
	atomic_store(&renaming, true);
	atomic_store(&renames, 0);
	cr_assert_eq(pthread_create(&t, NULL, rename_storm, NULL), 0);
	int bad = 0, last = 0;
	for (int i = 0; i < 200; i++) {
		int rc = try_mount(p);
		if (rc != 0) {
			bad++;
			last = rc;
		}
	}
	atomic_store(&renaming, false);
	pthread_join(t, NULL);
	cr_assert_gt(atomic_load(&renames), 0, "no rename ran beside the mounts");
	cr_assert_eq(bad, 0, "%d of 200 mounts of sub/.. failed during renames (last %d)", bad, last);
}

Test(nfs_handles, dotdot_holds_during_renames_elsewhere)
{
	t_dotdot_holds_during_renames_elsewhere();
}

Test(nfs_handles_walk, dotdot_holds_during_renames_elsewhere)
{
	t_dotdot_holds_during_renames_elsewhere();
}

/* Size of the export's handle map log in the state directory (one export). */
static long dmap_size(void)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "cat '%s'/dmap-* 2>/dev/null | wc -c", srv.state_dir);
	FILE *p = popen(cmd, "r");
	long n = -1;
	cr_assert_not_null(p);
	if (fscanf(p, "%ld", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

/*
 * Nothing a client does makes the handle map's log grow without bound: a
 * read-only client alternating LOOKUPs of two hard links of one file
 * writes nothing, and renames back and forth (a client with write access)
 * are folded by the rewrite while running.
 */
Test(nfs_handles, map_log_stays_bounded, .timeout = 120)
{
	char a[600], b[600];
	snprintf(a, sizeof(a), "%s/link-a", srv.export_dir);
	snprintf(b, sizeof(b), "%s/link-b", srv.export_dir);
	FILE *f = fopen(a, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(link(a, b), 0);
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(nfs);
	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_lookup(nfs, root, "link-a", &fh, NULL), 0);
	long before = dmap_size();
	cr_assert_geq(before, 8, "no handle map log in %s", srv.state_dir);
	for (int i = 0; i < 4000; i++)
		cr_assert_eq(rrr_nfs3_lookup(nfs, root, i & 1 ? "link-a" : "link-b", &fh, NULL), 0);
	long after = dmap_size();
	cr_assert_lt(after - before, 256, "4,000 LOOKUPs of two links grew the log by %ld bytes",
		     after - before);

	/* renames: at most FS_DMAP_SLACK (4096) records beyond the live ones */
	struct rrr_nfs3_fh sub;
	cr_assert_eq(rrr_nfs3_lookup(nfs, root, "sub", &sub, NULL), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &sub, "x", 0644, false, NULL), 0);
	for (int i = 0; i < 12000; i++)
		cr_assert_eq(rrr_nfs3_rename(nfs, &sub, i & 1 ? "y" : "x", &sub, i & 1 ? "x" : "y"), 0);
	long renamed = dmap_size();
	cr_assert_lt(renamed, 200000, "12,000 renames: the log is %ld bytes", renamed);
	char out[700], prog[512], args[512];
	th_prog("rrr-server", prog, sizeof(prog));
	snprintf(out, sizeof(out), "%s/stats.txt", srv.dir);
	snprintf(args, sizeof(args), "--stats --state-dir '%s'", srv.state_dir);
	cr_assert_eq(th_sh(prog, args, out), 0);
	cr_assert_geq(th_counter(out, "dmap.compactions"), 1);
	cr_assert_eq(th_counter(out, "dmap.full"), 0);
}
