/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/unpriv.c - rrr-server started by an ordinary user (the test,
 * as root, starts it as uid 4242 with no supplementary groups), over TCP.
 * Such a server cannot act as its callers: every file is the server's
 * account's, and the server itself decides who may chown or set the set-ID
 * bits. Asserted: root squash decides the identity before any of that, so
 * a squashed uid 0 is the anonymous user everywhere: its CREATE and MKDIR
 * with set-ID bits get none, its SETATTR of 06755 on a file that is not its
 * own is EPERM and changes nothing, ACCESS answers for "other"; an
 * unsquashed root still may (the nfsd rule: only root, or the owner of
 * the file, sets the set-ID bits; a new file of a non-root caller is
 * created without them).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "tests/lib/nfs_helpers.h"
#include "tests/lib/raw_rpc.h"

#define SERVER_UID 4242u

static struct th_server srv;

static void fini(void)
{
	th_cleanup(&srv);
}

TestSuite(nfs_unpriv, .fini = fini, .timeout = 60);

static void start(bool squash)
{
	th_need_server();
	if (geteuid() != 0)
		cr_skip_test("starting the server as another user needs root");
	cr_assert_eq(th_mkdirs(&srv), 0);
	cr_assert_eq(th_chown_tree(&srv, SERVER_UID, SERVER_UID), 0);
	srv.root_squash = squash;
	srv.run_uid = SERVER_UID;
	srv.run_gid = SERVER_UID;
	cr_assert_eq(th_server_start(&srv, false), 0, "server start (log %s)", srv.log);
	cr_assert(th_file_contains(srv.log, "not root, so every request runs as this server's user"));
}

static struct rrr_nfs3 *mount_as(uint32_t uid)
{
	return th_nfs_mount_as(&srv, false, uid, uid);
}

/* ACCESS (all bits) on @fh as AUTH_SYS @uid: the bits granted. */
static uint32_t access_as(uint32_t uid, const struct rrr_nfs3_fh *fh)
{
	struct rrr_clnt *c = NULL;
	cr_assert_eq(th_raw_connect("tcp", srv.mount_port, 10000, false, &c), 0);
	uint32_t bits = th_raw_access(c, uid, fh);
	rrr_clnt_destroy(c);
	return bits;
}

static mode_t mode_of(const char *rel)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", srv.export_dir, rel);
	cr_assert_eq(lstat(p, &st), 0, "%s", p);
	cr_assert_eq(st.st_uid, SERVER_UID, "%s belongs to the server's account", p);
	return st.st_mode & 07777;
}

Test(nfs_unpriv, squashed_root_sets_no_setid_bits)
{
	start(true);
	struct rrr_nfs3 *root = mount_as(0), *user = mount_as(1000);
	const struct rrr_nfs3_fh *top = rrr_nfs3_root(root);
	struct rrr_nfs3_fh f, d, theirs;

	cr_assert_eq(rrr_nfs3_create(root, top, "suid", 04755, true, &f), 0);
	cr_assert_eq(mode_of("suid"), 0755u, "CREATE 04755 by a squashed root: no set-uid bit");
	cr_assert_eq(rrr_nfs3_mkdir(root, top, "sgid", 02775, &d), 0);
	cr_assert_eq(mode_of("sgid"), 0775u, "MKDIR 02775 by a squashed root: no set-gid bit");

	cr_assert_eq(rrr_nfs3_create(user, top, "theirs", 0755, true, &theirs), 0);
	struct rrr_nfs3_sattr s = {.set_mode = true, .mode = 06755};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(root, &theirs, &s)), RRR_NFS3ERR_PERM,
		     "SETATTR 06755 by a squashed root on another user's file");
	cr_assert_eq(mode_of("theirs"), 0755u, "nothing changed");
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(root, &f, &s)), RRR_NFS3ERR_PERM,
		     "nor on its own new file (the server's account's, not the anonymous user's)");
	cr_assert_eq(mode_of("suid"), 0755u);
	struct rrr_nfs3_sattr own = {.set_uid = true, .uid = 0};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(root, &theirs, &own)), RRR_NFS3ERR_PERM,
		     "a squashed root may not chown");

	/* ACCESS answers for the anonymous user: "other" of a 0750 file */
	struct rrr_nfs3_sattr m750 = {.set_mode = true, .mode = 0750};
	cr_assert_eq(rrr_nfs3_setattr(user, &theirs, &m750), 0);
	struct rrr_nfs3_fattr at;
	cr_assert_eq(rrr_nfs3_getattr(root, &theirs, &at), 0);
	cr_assert_eq(at.mode, 0750u);
	uint32_t acc = access_as(0, &theirs);
	cr_assert_eq(acc & (RRR_NFS3_ACCESS_READ | RRR_NFS3_ACCESS_MODIFY | RRR_NFS3_ACCESS_EXECUTE),
		     0u, "squashed root gets no access to a 0750 file (ACCESS 0x%x)", acc);
	rrr_nfs3_umount(user);
	rrr_nfs3_umount(root);
}

Test(nfs_unpriv, unsquashed_root_may_set_setid_bits)
{
	start(false);
	struct rrr_nfs3 *root = mount_as(0), *user = mount_as(1000);
	const struct rrr_nfs3_fh *top = rrr_nfs3_root(root);
	struct rrr_nfs3_fh f, g;

	cr_assert_eq(rrr_nfs3_create(root, top, "suid", 04755, true, &f), 0);
	cr_assert_eq(mode_of("suid"), 04755u);
	cr_assert_eq(rrr_nfs3_create(user, top, "u", 04755, true, &g), 0);
	cr_assert_eq(mode_of("u"), 0755u, "uid 1000's new file: no set-uid bit");
	struct rrr_nfs3_sattr s = {.set_mode = true, .mode = 06755};
	cr_assert_eq(th_nfs_st(rrr_nfs3_setattr(user, &g, &s)), RRR_NFS3ERR_PERM);
	cr_assert_eq(rrr_nfs3_setattr(root, &g, &s), 0, "root may");
	cr_assert_eq(mode_of("u"), 06755u);
	rrr_nfs3_umount(user);
	rrr_nfs3_umount(root);
}
