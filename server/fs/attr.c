/* SPDX-License-Identifier: MIT */
/*
 * server/fs/attr.c - attributes and errors of rrr-server (RFC 1813 2.5, 2.6).
 *
 * Normal operation: struct stat becomes fattr3 (type from the mode's format
 * bits, mode's permission and setid bits only, used = 512-byte blocks,
 * fsid = the export id so a client sees one file system per export,
 * fileid = inode number). Weak cache consistency data is the attributes
 * before the operation (size, mtime, ctime) and a fresh fstat after it.
 * Identity: every decision here is made for the request's identity after
 * root squash (fs_cred_current(), set by cred.c before the procedure runs),
 * never for the raw AUTH_SYS uid, whoever runs the server.
 *
 * SETATTR applies mode, owner, size and times through the object's O_PATH
 * descriptor (via its /proc/self/fd link where the system call needs a
 * real descriptor), never through a path, as the caller (cred.c): the
 * kernel decides who may chmod, chown or set times. ACCESS asks the kernel
 * too (faccessat2 with AT_EACCESS, which checks the thread's fsuid, fsgid
 * and groups), so its answers are the checks the operations will meet.
 * Owner override, as knfsd: the owner of a file may read and write it
 * through an open data descriptor whatever its mode (a client creates a
 * 0444 file and then writes it, as a local process could through the
 * descriptor open() returned).
 *
 * Errors become nfsstat3 in status.c (fs_errno_to_stat).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "server/fs/fs.h"

static uint32_t ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR: return RRR_NF3DIR;
	case S_IFBLK: return RRR_NF3BLK;
	case S_IFCHR: return RRR_NF3CHR;
	case S_IFLNK: return RRR_NF3LNK;
	case S_IFSOCK: return RRR_NF3SOCK;
	case S_IFIFO: return RRR_NF3FIFO;
	default: return RRR_NF3REG;
	}
}

static struct rrr_nfs3_time nt(struct timespec ts)
{
	return (struct rrr_nfs3_time){.sec = (uint32_t)ts.tv_sec, .nsec = (uint32_t)ts.tv_nsec};
}

void fs_fattr(const struct fs_export *ex, const struct stat *st, struct rrr_nfs3_fattr *a)
{
	a->type = ftype(st->st_mode);
	a->mode = st->st_mode & 07777;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64_t)st->st_size;
	a->used = (uint64_t)st->st_blocks * 512u;
	a->rdev_major = major(st->st_rdev);
	a->rdev_minor = minor(st->st_rdev);
	a->fsid = ex->export_id;
	a->fileid = st->st_ino;
	a->atime = nt(st->st_atim);
	a->mtime = nt(st->st_mtim);
	a->ctime = nt(st->st_ctim);
}

void fs_post_op(const struct fs_export *ex, int fd, struct rrr_nfs3_post_op_attr *p)
{
	struct stat st;
	p->present = fd >= 0 && fstat(fd, &st) == 0;
	if (p->present)
		fs_fattr(ex, &st, &p->attr);
}

void fs_wcc_pre(const struct stat *st, struct rrr_nfs3_wcc_data *w)
{
	w->before_present = true;
	w->before.size = (uint64_t)st->st_size;
	w->before.mtime = nt(st->st_mtim);
	w->before.ctime = nt(st->st_ctim);
}

static struct timespec how_to_ts(uint32_t how, struct rrr_nfs3_time t)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = UTIME_OMIT};
	if (how == RRR_NFS3_SET_TO_SERVER_TIME)
		ts.tv_nsec = UTIME_NOW;
	else if (how == RRR_NFS3_SET_TO_CLIENT_TIME) {
		ts.tv_sec = t.sec;
		ts.tv_nsec = t.nsec < 1000000000u ? t.nsec : 0;
	}
	return ts;
}

bool fs_caller_root(void)
{
	return fs_cred_current()->uid == 0;
}

bool fs_caller_may_setid(uid_t owner)
{
	const struct fs_cred *c = fs_cred_current();
	return c->uid == 0 || c->uid == owner;
}

int fs_open_data(const struct fs_export *ex, const struct fs_obj *o, int flags)
{
	int fd = fs_reopen(o, flags);
	if (fd == -EACCES && ex->as_caller && fs_cred_current()->uid == o->st.st_uid) {
		fs_priv_begin();
		fd = fs_reopen(o, flags);
		fs_priv_end();
	}
	return fd;
}

uint32_t fs_apply_sattr(const struct fs_export *ex, const struct fs_obj *o,
			const struct rrr_nfs3_sattr *s)
{
	char proc[64];
	if (!ex->as_caller) {
		/* The server cannot act as the caller (not root), so it enforces
		 * the privileged changes itself, for the caller's identity after
		 * root squash (fs_cred_current): only root may change ownership;
		 * only root or the file's owner may set the set-ID bits (as the
		 * kernel's chmod). Every file here is the server account's, so a
		 * caller other than root sets them only if it is that account.
		 * Checked before anything is applied: all or nothing. */
		if (((s->set_uid && s->uid != o->st.st_uid) ||
		     (s->set_gid && s->gid != o->st.st_gid)) &&
		    !fs_caller_root())
			return RRR_NFS3ERR_PERM;
		if (s->set_mode && (s->mode & (S_ISUID | S_ISGID)) &&
		    !fs_caller_may_setid(o->st.st_uid))
			return RRR_NFS3ERR_PERM;
	}

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	bool lnk = S_ISLNK(o->st.st_mode);
	if (s->set_size) {
		if (S_ISDIR(o->st.st_mode))
			return RRR_NFS3ERR_ISDIR;
		if (!S_ISREG(o->st.st_mode))
			return RRR_NFS3ERR_INVAL;
		int fd = fs_open_data(ex, o, O_WRONLY);
		if (fd < 0)
			return fs_errno_to_stat(-fd);
		int rc = ftruncate(fd, (off_t)(s->size > INT64_MAX ? INT64_MAX : s->size));
		int err = errno;
		close(fd);
		if (rc < 0)
			return fs_errno_to_stat(err);
	}
	if (s->set_uid || s->set_gid) {
		uid_t uid = s->set_uid ? s->uid : (uid_t)-1;
		gid_t gid = s->set_gid ? s->gid : (gid_t)-1;
		if (fchownat(o->fd, "", uid, gid, AT_EMPTY_PATH) < 0)
			return fs_errno_to_stat(errno);
	}
	if (s->set_mode && !lnk) {
		if (chmod(proc, s->mode & 07777) < 0)
			return fs_errno_to_stat(errno);
	}
	if ((s->atime_how || s->mtime_how) && !lnk) {
		struct timespec ts[2] = {how_to_ts(s->atime_how, s->atime),
					 how_to_ts(s->mtime_how, s->mtime)};
		int rc = utimensat(AT_FDCWD, proc, ts, 0);
		/* "Set to the server's time" needs write permission only, as on
		 * knfsd; utimensat() asks a non-owner for that only when both
		 * times are UTIME_NOW (the client sends mtime alone on O_TRUNC). */
		if (rc < 0 && (errno == EPERM || errno == EACCES) && ex->as_caller &&
		    s->atime_how != RRR_NFS3_SET_TO_CLIENT_TIME &&
		    s->mtime_how != RRR_NFS3_SET_TO_CLIENT_TIME &&
		    syscall(SYS_faccessat2, o->fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) == 0) {
			fs_priv_begin();
			rc = utimensat(AT_FDCWD, proc, ts, 0);
			fs_priv_end();
		}
		if (rc < 0)
			return fs_errno_to_stat(errno);
	}
	return RRR_NFS3_OK;
}

/* Permission bits against the request's identity after root squash
 * (fs_cred_current: AUTH_NONE is the anonymous user; root may do all but
 * execute what has no execute bit). The answer of a server that cannot act
 * as its callers. */
static uint32_t access_bits(const struct stat *st, uint32_t want)
{
	const struct fs_cred *c = fs_cred_current();
	uint32_t uid = c->uid, gid = c->gid;
	mode_t m = st->st_mode;
	bool isdir = S_ISDIR(m);
	unsigned bits;
	if (uid == 0) {
		bits = 7;
		if (!isdir && !(m & 0111))
			bits &= ~1u;
	} else if (uid == st->st_uid) {
		bits = (m >> 6) & 7;
	} else {
		bool in_group = gid == st->st_gid;
		for (uint32_t i = 0; i < c->ngids && i < RRR_RPC_AUTH_SYS_MAX_GIDS; i++)
			if (c->gids[i] == st->st_gid)
				in_group = true;
		bits = in_group ? (m >> 3) & 7 : m & 7;
	}
	uint32_t got = 0;
	if (bits & 4)
		got |= RRR_NFS3_ACCESS_READ;
	if (bits & 2)
		got |= RRR_NFS3_ACCESS_MODIFY | RRR_NFS3_ACCESS_EXTEND |
		       (isdir ? RRR_NFS3_ACCESS_DELETE : 0);
	if (bits & 1)
		got |= isdir ? RRR_NFS3_ACCESS_LOOKUP : RRR_NFS3_ACCESS_EXECUTE;
	return got & want;
}

uint32_t fs_access(const struct fs_export *ex, const struct fs_obj *o, uint32_t want)
{
	if (!ex->as_caller)
		return access_bits(&o->st, want);
	bool isdir = S_ISDIR(o->st.st_mode);
	int ok[3]; /* R, W, X */
	static const int modes[3] = {R_OK, W_OK, X_OK};
	for (int i = 0; i < 3; i++) {
		long rc = syscall(SYS_faccessat2, o->fd, "", modes[i], AT_EACCESS | AT_EMPTY_PATH);
		if (rc < 0 && errno == ENOSYS)
			return access_bits(&o->st, want);
		ok[i] = rc == 0;
	}
	uint32_t got = 0;
	if (ok[0])
		got |= RRR_NFS3_ACCESS_READ;
	if (ok[1])
		got |= RRR_NFS3_ACCESS_MODIFY | RRR_NFS3_ACCESS_EXTEND;
	if (isdir && ok[1] && ok[2])
		got |= RRR_NFS3_ACCESS_DELETE;
	if (ok[2])
		got |= isdir ? RRR_NFS3_ACCESS_LOOKUP : RRR_NFS3_ACCESS_EXECUTE;
	return got & want;
}
