/* SPDX-License-Identifier: MIT */
/*
 * server/fs/cred.c - rrr-server acts as the caller of each request.
 *
 * Like knfsd and NFS-Ganesha, the server does the work of a request with
 * the identity the request carries, so that the kernel's own permission
 * checks (open, create, remove, rename, chmod, chown, utimes...) decide,
 * not the client's goodwill. On Linux the file system identity is per
 * thread: setfsuid(2)/setfsgid(2) change only the calling thread, and the
 * raw SYS_setgroups system call changes only the calling thread's
 * supplementary groups (glibc's setgroups() would change every thread of
 * the process, which is why it is not used here).
 *
 * Normal operation: nfs3_proc.c calls fs_cred_of_call() and
 * fs_cred_enter() at the start of every NFS procedure and fs_cred_leave()
 * at its end. The identity is the AUTH_SYS uid, gid and gids, with root
 * squashing: uid 0 becomes the anonymous uid, gid 0 (also in the group
 * list) the anonymous gid, unless the export was started with
 * --no-root-squash. AUTH_NONE (and any other flavor) is anonymous. Each
 * thread remembers what it set last, so a stream of requests from one user
 * costs one setfsuid() at the start and one at the end of each request
 * (fsuid 0 between requests: the transport code never runs as a client).
 *
 * Handles are resolved with the server's privilege (fs_priv_begin/end:
 * open_by_handle_at needs CAP_DAC_READ_SEARCH, which the kernel removes
 * from the effective set while fsuid is not 0, and restores when it goes
 * back to 0), as on knfsd a handle gives access without search permission
 * on the directories above the object; everything after that runs as the
 * caller.
 *
 * Not root: a server started by an ordinary user cannot change identity;
 * fs_cred_init() notices and every request runs as that user (the
 * start-up line says so), with the old checks of attr.c for chown and set-ID
 * bits.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/fs/fs.h"

static _Thread_local struct {
	bool set;          /* something other than the server's identity is set */
	uint32_t fsuid;    /* what the thread's fsuid is now */
	struct fs_cred cur;
	bool have_cur;     /* cur holds the fsgid and groups in force */
	unsigned priv;     /* nesting of fs_priv_begin */
	uint32_t saved_fsuid;
} tl;

void fs_cred_init(struct fs_export *ex)
{
	umask(0);
	ex->as_caller = geteuid() == 0;
	if (!ex->anon_uid)
		ex->anon_uid = 65534;
	if (!ex->anon_gid)
		ex->anon_gid = 65534;
}

static uint64_t digest(const struct fs_cred *c)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t v[3 + RRR_RPC_AUTH_SYS_MAX_GIDS] = {c->uid, c->gid, c->ngids};
	for (uint32_t i = 0; i < c->ngids; i++)
		v[3 + i] = c->gids[i];
	for (uint32_t i = 0; i < 3 + c->ngids; i++) {
		h ^= v[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

void fs_cred_of_call(const struct fs_export *ex, const struct rrr_rpc_call *call,
		     struct fs_cred *c)
{
	memset(c, 0, sizeof(*c));
	c->uid = ex->anon_uid;
	c->gid = ex->anon_gid;
	if (call && call->cred.flavor == RRR_AUTH_SYS) {
		const struct rrr_auth_sys *s = &call->cred.sys;
		bool squash = !ex->no_root_squash;
		c->uid = squash && s->uid == 0 ? ex->anon_uid : s->uid;
		c->gid = squash && s->gid == 0 ? ex->anon_gid : s->gid;
		uint32_t n = s->ngids < RRR_RPC_AUTH_SYS_MAX_GIDS ? s->ngids
								  : RRR_RPC_AUTH_SYS_MAX_GIDS;
		for (uint32_t i = 0; i < n; i++)
			c->gids[i] = squash && s->gids[i] == 0 ? ex->anon_gid : s->gids[i];
		c->ngids = n;
	}
	c->who = digest(c);
}

int fs_cred_enter(const struct fs_export *ex, const struct fs_cred *c)
{
	if (!ex->as_caller) {
		tl.cur = *c;
		tl.have_cur = false;
		return 0;
	}
	if (!tl.have_cur || tl.cur.who != c->who || tl.cur.gid != c->gid ||
	    tl.cur.ngids != c->ngids || memcmp(tl.cur.gids, c->gids, c->ngids * sizeof(c->gids[0]))) {
		if (tl.fsuid != 0) {
			setfsuid(0);
			tl.fsuid = 0;
		}
		gid_t g[RRR_RPC_AUTH_SYS_MAX_GIDS];
		for (uint32_t i = 0; i < c->ngids; i++)
			g[i] = c->gids[i];
		/* the raw system call: per thread (glibc's wrapper is per process) */
		if (syscall(SYS_setgroups, (size_t)c->ngids, g) < 0) {
			tl.have_cur = false;
			return -errno;
		}
		setfsgid(c->gid);
		if ((uint32_t)setfsgid((gid_t)-1) != c->gid) {
			tl.have_cur = false;
			return -EPERM;
		}
		tl.cur = *c;
		tl.have_cur = true;
	}
	if (tl.fsuid != c->uid) {
		setfsuid(c->uid);
		if ((uint32_t)setfsuid((uid_t)-1) != c->uid)
			return -EPERM;
		tl.fsuid = c->uid;
	}
	tl.set = true;
	return 0;
}

void fs_cred_leave(void)
{
	if (tl.set && tl.fsuid != 0) {
		setfsuid(0);
		tl.fsuid = 0;
	}
	tl.set = false;
}

void fs_priv_begin(void)
{
	if (tl.priv++ == 0) {
		tl.saved_fsuid = tl.fsuid;
		if (tl.fsuid != 0) {
			setfsuid(0);
			tl.fsuid = 0;
		}
	}
}

void fs_priv_end(void)
{
	if (tl.priv && --tl.priv == 0 && tl.saved_fsuid != tl.fsuid) {
		setfsuid(tl.saved_fsuid);
		tl.fsuid = tl.saved_fsuid;
	}
}

const struct fs_cred *fs_cred_current(void)
{
	return &tl.cur;
}
