/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/srvfiles.c - the files rrr-server writes for itself and the
 * modes of what it creates for clients, against real server processes.
 *
 * Asserted: the port file is 0644 and the handle key 0600 whatever the
 * umask the server was started with (0 here); a symlink planted where the
 * port file's temporary goes is not followed (its target keeps its bytes,
 * the port file is a regular file); a state dir that is group-writable, or
 * owned by another user, stops the start with a sentence that says what to
 * do; an NFS CREATE with mode 0640 and a MKDIR with 0750 get exactly those
 * modes when the server runs with umask 077 (no process-wide umask(0)),
 * and a directory made in a set-gid directory keeps the inherited bit.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "tests/lib/nfs_helpers.h"

static struct th_server srv;

static void fini(void)
{
	th_cleanup(&srv);
}

TestSuite(nfs_srvfiles, .fini = fini, .timeout = 60);

static void need_server(void)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
}

static mode_t mode_of(const char *dir, const char *rel, mode_t type)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(st.st_mode & S_IFMT, type, "%s: type 0%o", p, st.st_mode & S_IFMT);
	return st.st_mode & 07777;
}

Test(nfs_srvfiles, port_file_and_key_have_their_modes_under_umask_0)
{
	need_server();
	umask(0); /* the server inherits it */
	cr_assert_eq(th_server_start(&srv, false), 0);
	cr_assert_eq(mode_of(srv.dir, "ports", S_IFREG), 0644u);
	cr_assert_eq(mode_of(srv.state_dir, "fh.key", S_IFREG), 0600u);
}

Test(nfs_srvfiles, a_symlink_at_the_temporary_path_is_not_followed)
{
	need_server();
	char victim[400], tmp[400];
	snprintf(victim, sizeof(victim), "%s/victim", srv.dir);
	snprintf(tmp, sizeof(tmp), "%s/ports.tmp", srv.dir);
	FILE *f = fopen(victim, "w");
	cr_assert_not_null(f);
	fputs("keep me\n", f);
	fclose(f);
	cr_assert_eq(symlink(victim, tmp), 0);
	cr_assert_eq(th_server_start(&srv, false), 0, "log %s", srv.log);
	cr_assert(th_file_contains(victim, "keep me"), "the symlink's target was written");
	cr_assert(!th_file_contains(victim, "mount="));
	cr_assert_eq(mode_of(srv.dir, "ports", S_IFREG), 0644u, "the port file is a file");
	char ports[400];
	snprintf(ports, sizeof(ports), "%s/ports", srv.dir);
	cr_assert(th_file_contains(ports, "mount="));
}

Test(nfs_srvfiles, a_group_writable_state_dir_is_refused)
{
	need_server();
	cr_assert_eq(chmod(srv.state_dir, 0770), 0);
	cr_assert_eq(th_server_start(&srv, false), -ECHILD, "the server exits (log %s)", srv.log);
	cr_assert(th_file_contains(srv.log, "is group- or other-writable (mode 0770)"),
		  "the log says why (%s)", srv.log);
	cr_assert(th_file_contains(srv.log, "chmod go-w"), "and what to do");
	cr_assert_eq(chmod(srv.state_dir, 0707), 0);
	cr_assert_eq(th_server_start(&srv, false), -ECHILD);
	cr_assert(th_file_contains(srv.log, "(mode 0707)"));
}

Test(nfs_srvfiles, a_state_dir_of_another_user_is_refused)
{
	need_server();
	if (geteuid() != 0)
		cr_skip_test("giving the state dir to another user needs root");
	cr_assert_eq(chown(srv.state_dir, 4242, 4242), 0);
	cr_assert_eq(th_server_start(&srv, false), -ECHILD, "the server exits (log %s)", srv.log);
	cr_assert(th_file_contains(srv.log, "is owned by uid 4242"), "the log says why (%s)",
		  srv.log);
	cr_assert(th_file_contains(srv.log, "chown"), "and what to do");
}

Test(nfs_srvfiles, nfs_modes_are_exact_under_umask_077)
{
	need_server();
	umask(077); /* the server inherits it */
	cr_assert_eq(th_server_start(&srv, false), 0);
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	struct rrr_nfs3 *n = th_nfs_mount(&mt);
	struct rrr_nfs3_fh f, d;
	cr_assert_eq(rrr_nfs3_create(n, rrr_nfs3_root(n), "f", 0640, true, &f), 0);
	cr_assert_eq(mode_of(srv.export_dir, "f", S_IFREG), 0640u);
	cr_assert_eq(rrr_nfs3_mkdir(n, rrr_nfs3_root(n), "d", 0750, &d), 0);
	cr_assert_eq(mode_of(srv.export_dir, "d", S_IFDIR), 0750u);
	cr_assert_eq(rrr_nfs3_create(n, &d, "g", 0666, true, NULL), 0);
	cr_assert_eq(mode_of(srv.export_dir, "d/g", S_IFREG), 0666u);
	/* a directory made in a set-gid directory keeps the inherited bit */
	char sg[400];
	snprintf(sg, sizeof(sg), "%s/sg", srv.export_dir);
	cr_assert_eq(mkdir(sg, 0775), 0);
	cr_assert_eq(chmod(sg, 02775), 0);
	struct rrr_nfs3_fh sgh;
	cr_assert_eq(rrr_nfs3_lookup(n, rrr_nfs3_root(n), "sg", &sgh, NULL), 0);
	cr_assert_eq(rrr_nfs3_mkdir(n, &sgh, "sub", 0750, NULL), 0);
	cr_assert_eq(mode_of(srv.export_dir, "sg/sub", S_IFDIR), 02750u);
	rrr_nfs3_umount(n);
	/* the server's own files keep their modes under its umask too */
	cr_assert_eq(mode_of(srv.dir, "ports", S_IFREG), 0644u);
}
