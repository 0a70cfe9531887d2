/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/overlay.c - rrr-server exporting overlayfs, the file system
 * every container runs on: a lower layer on the host's /tmp file system
 * and an upper layer on a tmpfs (so, without xino, a non-directory reports
 * the st_dev of the layer it lives on, not the overlay's), mounted in a
 * private mount namespace of the test process (the server inherits it).
 * Without nfs_export the server uses path handles, with nfs_export=on
 * kernel handles; in both, what the kernel client did when it found the
 * bug (create then SETATTR, truncate, chmod, write and read in a new
 * directory, GUARDED create, rename across directories, a restart) must
 * work with no stale handle; directories, which such an overlay numbers
 * itself (not persistently, and in a space files share), keep their
 * handles when the kernel evicts them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/nfs_helpers.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;
static bool mounted;

static void mount_nfs(void)
{
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	nfs = th_nfs_mount(&mt);
}

static void setup_overlay(const char *extra)
{
	char p[512];
	th_need_server();
	if (geteuid() != 0)
		cr_skip_test("mounting overlayfs needs root");
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		cr_skip_test("no private mount namespace here (unshare: %s)", strerror(errno));
	cr_assert_eq(th_mkdirs(&srv), 0);
	char lower[400], up[400], upper[420], work[420], opts[1400];
	snprintf(lower, sizeof(lower), "%s/lower", srv.dir);
	snprintf(up, sizeof(up), "%s/up", srv.dir);
	snprintf(upper, sizeof(upper), "%s/upper", up);
	snprintf(work, sizeof(work), "%s/work", up);
	cr_assert_eq(mkdir(lower, 0755), 0);
	cr_assert_eq(mkdir(up, 0755), 0);
	snprintf(p, sizeof(p), "%s/old", lower);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("from the lower layer\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/lowdir", lower);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lowdir/inner", lower);
	cr_assert_eq(mkdir(p, 0755), 0);
	if (mount("tmpfs", up, "tmpfs", 0, "size=64m") < 0)
		cr_skip_test("cannot mount a tmpfs: %s", strerror(errno));
	cr_assert_eq(mkdir(upper, 0755), 0);
	cr_assert_eq(mkdir(work, 0755), 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lower, upper, work,
		 extra);
	if (mount("overlay", srv.export_dir, "overlay", 0, opts) < 0)
		cr_skip_test("cannot mount overlayfs (%s): %s", opts, strerror(errno));
	mounted = true;
	cr_assert_eq(th_server_start(&srv, false), 0);
	mount_nfs();
}

static void setup_plain(void) { setup_overlay(""); }
static void setup_export(void) { setup_overlay(",index=on,nfs_export=on"); }

static void teardown(void)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	if (srv.pid > 0)
		th_server_stop(&srv);
	if (mounted) {
		char up[400];
		umount2(srv.export_dir, MNT_DETACH);
		snprintf(up, sizeof(up), "%s/up", srv.dir);
		umount2(up, MNT_DETACH);
	}
	mounted = false;
	th_cleanup(&srv);
}

TestSuite(nfs_overlay, .init = setup_plain, .fini = teardown, .timeout = 60);
TestSuite(nfs_overlay_export, .init = setup_export, .fini = teardown, .timeout = 60);

static void t_what_clients_do(const char *mode_line)
{
	cr_assert(th_file_contains(srv.log, mode_line), "start-up line '%s'", mode_line);
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(nfs);
	struct rrr_nfs3_fh d, e, f, g;
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, root, "d", 0755, &d), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &d, "f", 0644, true, &f), 0);
	/* touch: SETATTR times right after CREATE */
	struct rrr_nfs3_sattr t = {.atime_how = RRR_NFS3_SET_TO_SERVER_TIME,
				   .mtime_how = RRR_NFS3_SET_TO_SERVER_TIME};
	cr_assert_eq(rrr_nfs3_setattr(nfs, &f, &t), 0, "SETATTR after CREATE");
	struct iovec iov = {.iov_base = "0123456789", .iov_len = 10};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &f, 0, &iov, 1, RRR_NFS3_UNSTABLE, &count), 0);
	uint8_t verf[8];
	cr_assert_eq(rrr_nfs3_commit(nfs, &f, verf), 0);
	struct rrr_nfs3_sattr tr = {.set_size = true, .size = 4};
	cr_assert_eq(rrr_nfs3_setattr(nfs, &f, &tr), 0, "truncate");
	struct rrr_nfs3_sattr ch = {.set_mode = true, .mode = 0600};
	cr_assert_eq(rrr_nfs3_setattr(nfs, &f, &ch), 0, "chmod");
	static char buf[32];
	struct iovec rio = {.iov_base = buf, .iov_len = sizeof(buf)};
	bool eof;
	cr_assert_eq(rrr_nfs3_read(nfs, &f, 0, &rio, 1, &count, &eof), 0, "cat");
	cr_assert_eq(count, 4);
	cr_assert_eq(memcmp(buf, "0123", 4), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &d, "x", 0644, true, &g), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_create(nfs, &d, "x", 0644, true, NULL)), RRR_NFS3ERR_EXIST);
	/* rename across directories, then use every handle */
	cr_assert_eq(rrr_nfs3_mkdir(nfs, root, "e", 0755, &e), 0);
	cr_assert_eq(rrr_nfs3_rename(nfs, &d, "x", &e, "y"), 0);
	cr_assert_eq(rrr_nfs3_setattr(nfs, &g, &ch), 0, "SETATTR of a renamed file");
	cr_assert_eq(rrr_nfs3_rename(nfs, root, "d", &e, "d2"), 0, "a directory moves");
	cr_assert_eq(rrr_nfs3_getattr(nfs, &f, &at), 0);
	cr_assert_eq(at.size, 4);
	/* the lower layer's file reads */
	struct rrr_nfs3_fh old;
	cr_assert_eq(rrr_nfs3_lookup(nfs, root, "old", &old, NULL), 0);
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(rrr_nfs3_read(nfs, &old, 0, &rio, 1, &count, &eof), 0);
	cr_assert_eq(memcmp(buf, "from the lower", 14), 0);

	/* restart under the "mount": every handle of a file made through it */
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	mount_nfs();
	cr_assert_eq(rrr_nfs3_getattr(nfs, &f, &at), 0, "file after restart");
	cr_assert_eq(at.size, 4);
	cr_assert_eq(rrr_nfs3_getattr(nfs, &g, &at), 0, "renamed file after restart");
	cr_assert_eq(rrr_nfs3_getattr(nfs, &d, &at), 0, "moved directory after restart");
	cr_assert_eq(rrr_nfs3_setattr(nfs, &f, &t), 0);
	struct rrr_nfs3_fh h;
	cr_assert_eq(rrr_nfs3_create(nfs, &d, "after", 0644, true, &h), 0);
	cr_assert_eq(rrr_nfs3_setattr(nfs, &h, &t), 0);
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "fh.stale 0"), "no stale handle at all");
}

Test(nfs_overlay, what_clients_do_works_with_path_handles)
{
	t_what_clients_do("file handles: path");
}

Test(nfs_overlay_export, what_clients_do_works_with_kernel_handles)
{
	t_what_clients_do("file handles: kernel");
}

/* With nfs_export=on a lower-layer file keeps its handle across copy-up. */
Test(nfs_overlay_export, copy_up_keeps_the_handle)
{
	struct rrr_nfs3_fh old;
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "old", &old, NULL), 0);
	struct iovec iov = {.iov_base = "FROM", .iov_len = 4};
	uint32_t count;
	cr_assert_eq(rrr_nfs3_write(nfs, &old, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0,
		     "a write copies the file up");
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &old, &at), 0, "same handle after copy-up");
	static char buf[32];
	struct iovec rio = {.iov_base = buf, .iov_len = sizeof(buf)};
	bool eof;
	cr_assert_eq(rrr_nfs3_read(nfs, &old, 0, &rio, 1, &count, &eof), 0);
	cr_assert_eq(memcmp(buf, "FROM the lower", 14), 0);
}

enum { NDIRS = 24, NFILES = 12 };
static struct rrr_nfs3_fh dirs[NDIRS], files[NDIRS][NFILES];

/* Directories and files made alternately, so their numbers interleave. */
static void make_tree(const struct rrr_nfs3_fh *top)
{
	for (int d = 0; d < NDIRS; d++) {
		char name[32];
		snprintf(name, sizeof(name), "dir%02d", d);
		cr_assert_eq(rrr_nfs3_mkdir(nfs, top, name, 0755, &dirs[d]), 0, "mkdir %s", name);
		for (int f = 0; f < NFILES; f++) {
			snprintf(name, sizeof(name), "file%02d.h", f);
			cr_assert_eq(rrr_nfs3_create(nfs, &dirs[d], name, 0644, true, &files[d][f]), 0,
				     "create dir%02d/%s: %s", d, name, rrr_last_error());
		}
	}
}

/* Every handle resolves: GETATTR, and a LOOKUP of each file in its directory. */
static void all_resolve(const char *when)
{
	for (int d = 0; d < NDIRS; d++) {
		cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &dirs[d], NULL)), 0,
			     "%s: directory %d is stale", when, d);
		for (int f = 0; f < NFILES; f++) {
			char name[32];
			snprintf(name, sizeof(name), "file%02d.h", f);
			cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &files[d][f], NULL)), 0,
				     "%s: dir%02d/%s is stale", when, d, name);
			cr_assert_eq(th_nfs_st(rrr_nfs3_lookup(nfs, &dirs[d], name, NULL, NULL)), 0,
				     "%s: LOOKUP dir%02d/%s", when, d, name);
		}
	}
}

/*
 * Without xino, the overlay numbers its directories itself: a number that
 * may equal a file's, and that changes when the kernel evicts the
 * directory's inode and reads it back. A tree of directories and files made
 * alternately resolves by handle, after files are re-created over existing
 * ones (REMOVE, then EXCLUSIVE CREATE, as tar does), after a directory
 * rename, and after a restart. (Evicting the directories takes dropping the
 * kernel's caches, which would disturb the tests running beside this one:
 * tests/vm/tests.d/75-path-handles-overlay.sh does that in the VM.)
 */
Test(nfs_overlay, directories_keep_their_handles_when_evicted)
{
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(nfs);
	struct rrr_nfs3_fh top;
	cr_assert_eq(rrr_nfs3_mkdir(nfs, root, "tree", 0755, &top), 0);
	make_tree(&top);
	all_resolve("made");

	/* re-created over existing files: REMOVE, then EXCLUSIVE CREATE (tar) */
	for (int d = 0; d < NDIRS; d += 5) {
		cr_assert_eq(rrr_nfs3_remove(nfs, &dirs[d], "file00.h"), 0);
		cr_assert_eq(rrr_nfs3_create(nfs, &dirs[d], "file00.h", 0644, true, &files[d][0]), 0,
			     "re-create dir%02d/file00.h: %s", d, rrr_last_error());
	}
	/* a directory rename: handles beneath it stay */
	cr_assert_eq(rrr_nfs3_rename(nfs, &top, "dir03", &top, "dir03-moved"), 0);
	all_resolve("after a rename");

	/* a restart, caches dropped again: the remembered paths and birth times */
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	mount_nfs();
	all_resolve("after a server restart");
}

/*
 * A directory of the lower layer gets a new upper copy (a new birth time)
 * the first time something is made in it: its handle, and that of a
 * directory beneath it, still resolve.
 */
Test(nfs_overlay, lower_directories_keep_their_handles_through_copy_up)
{
	const struct rrr_nfs3_fh *root = rrr_nfs3_root(nfs);
	struct rrr_nfs3_fh low, inner, f;
	cr_assert_eq(rrr_nfs3_lookup(nfs, root, "lowdir", &low, NULL), 0);
	cr_assert_eq(rrr_nfs3_lookup(nfs, &low, "inner", &inner, NULL), 0);
	cr_assert_eq(rrr_nfs3_create(nfs, &inner, "new", 0644, true, &f), 0, "copy-up: %s",
		     rrr_last_error());
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &low, NULL)), 0, "lowdir after its copy-up");
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &inner, NULL)), 0, "inner after its copy-up");
	cr_assert_eq(rrr_nfs3_create(nfs, &inner, "second", 0644, true, NULL), 0);
	cr_assert_eq(th_nfs_st(rrr_nfs3_getattr(nfs, &f, NULL)), 0);
}
