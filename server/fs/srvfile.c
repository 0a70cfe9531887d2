/* SPDX-License-Identifier: MIT */
/*
 * server/fs/srvfile.c - the files rrr-server writes for itself: the state
 * directory (handle key, inode path log, stats socket) and the port file.
 *
 * Normal operation: such a file is written whole into a temporary beside
 * it ("FILE.tmp"), created with O_CREAT|O_EXCL|O_NOFOLLOW (a symlink or
 * any file planted at that name is never opened, let alone followed), given
 * its mode with fchmod() (exactly, whatever the umask the server was
 * started with; the process umask is never changed), flushed with fsync()
 * and renamed over FILE, so a reader sees the old file or the new one,
 * never a part, and a symlink at FILE is replaced, not followed.
 *
 * The state directory holds the key that seals every file handle: anyone
 * who can write in it can replace the key or plant files the server will
 * rename. So at start (fs_state_dir_check) a missing state dir is created
 * 0700, and an existing one must be a directory of the server's own user
 * that neither group nor others may write; otherwise the server refuses to
 * start and says what to change.
 *
 * Recovery: a temporary left by a crash (or planted) is unlinked, never
 * opened, and the create retried once; a second collision is an error
 * (-EEXIST), as is any failing step, after which the temporary is removed
 * and FILE is as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fs/fs.h"

int fs_tmp_open(const char *path, char *tmp, size_t len, mode_t mode)
{
	if (snprintf(tmp, len, "%s.tmp", path) >= (int)len)
		return -ENAMETOOLONG;
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			if (fchmod(fd, mode) < 0) {
				int e = errno;
				close(fd);
				unlink(tmp);
				return -e;
			}
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
		/* left by a crash, or planted: remove the name (a symlink
		 * itself, never its target) and create afresh */
		if (unlink(tmp) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EEXIST;
}

int fs_tmp_commit(int fd, const char *tmp, const char *path)
{
	int rc = fsync(fd) < 0 ? -errno : 0;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

int fs_write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	char tmp[PATH_MAX + 8];
	int fd = fs_tmp_open(path, tmp, sizeof(tmp), mode);
	if (fd < 0)
		return fd;
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			unlink(tmp);
			return -e;
		}
		p += w;
		len -= (size_t)w;
	}
	return fs_tmp_commit(fd, tmp, path);
}

int fs_state_dir_check(const char *dir, char *err, size_t len)
{
	struct stat st;
	if (!dir || !*dir)
		return 0;
	if (mkdir(dir, 0700) == 0) {
		/* exactly 0700 whatever the umask; a parent that does not exist
		 * or cannot be written leaves the server without a state dir,
		 * which fh.c reports (handles then do not survive a restart) */
		if (chmod(dir, 0700) < 0) {
			int e = errno;
			snprintf(err, len, "cannot set the mode of the new state dir %s: %s", dir,
				 strerror(e));
			return -e;
		}
	} else if (errno != EEXIST) {
		return 0;
	}
	if (stat(dir, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, len, "the state dir %s is not a directory: remove it, or choose "
				   "another with --state-dir (state-dir =)", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, len, "the state dir %s is owned by uid %u, not by this server's user "
				   "(uid %u), who keeps the file handle key there: chown %u %s, or "
				   "choose another with --state-dir (state-dir =)",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(), dir);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, len, "the state dir %s is group- or other-writable (mode 0%o): anyone "
				   "who can write there can replace the file handle key; chmod go-w "
				   "%s, or choose another with --state-dir (state-dir =)",
			 dir, (unsigned)(st.st_mode & 07777), dir);
		return -EPERM;
	}
	return 0;
}
