/* SPDX-License-Identifier: MIT */
/*
 * server/fs/fh.c - file handles of rrr-server, and why they cannot escape.
 *
 * Two kinds of handle, both sealed with a SipHash-2-4 tag over everything
 * before it under a 128-bit key kept in the state directory (created on
 * first start), so clients can neither forge nor alter them; the export id
 * is derived from the key and the export's real path.
 *
 * Kernel handles (mode "kernel", the default where possible), the file
 * system's own persistent handle from name_to_handle_at(2), as knfsd's
 * export operations and NFS-Ganesha's VFS backend use:
 *
 *   0        4           8               16     17    18            18+n  26+n
 *   +--------+-----------+---------------+------+-----+--------------+------+
 *   | "RRK1" | export id | inode number  | type | n   | kernel bytes | tag  |
 *   +--------+-----------+---------------+------+-----+--------------+------+
 *
 * NFSv3 handles hold at most 64 bytes, so n <= 38 (ext4 8, xfs 8-16, btrfs
 * 20, tmpfs 12, overlayfs with nfs_export=on about 32 over ext4); an object
 * whose kernel handle is larger gets a path handle instead. Resolution is
 * O(1) whatever the export's size: open_by_handle_at() on the export
 * root's mount (which also fixes the mount: the kernel decodes the handle
 * on that mount's file system only), then confinement, the defence against
 * the open_by_handle_at() container-escape attacks ("shocker"): the object
 * must lie beneath the export root. The kernel reconnects directories, so
 * the object's /proc/self/fd path is checked to start with the export root
 * and re-opened beneath the root (openat2 RESOLVE_BENEATH) to the same
 * inode. A non-directory whose dentry the kernel cannot place (dropped from
 * its cache, hard links) passes when the export is a whole file system
 * (nothing of that file system lies outside it), or when the path the dmap
 * remembers (dmap.c) re-opens to the same inode; otherwise it is STALE and
 * counted as an escape refused. Handles stay valid across restarts (the
 * key persists) and renames (nothing in them is a path).
 *
 * Path handles (mode "path", the fallback where the kernel cannot give or
 * open handles: no CAP_DAC_READ_SEARCH, a file system without export
 * support, overlayfs without nfs_export=on; RRR_FS_HANDLES=path forces it):
 *
 *   0        4           8               16              24              32
 *   +--------+-----------+---------------+---------------+---------------+
 *   | "RRF1" | export id | inode number  | generation    | tag (SipHash) |
 *   +--------+-----------+---------------+---------------+---------------+
 *
 * The generation is the inode's birth time (statx), which tells a reused
 * inode number from the file a handle was issued for. The inode number is
 * a key (fs_ino_key: FS_KEY_DIR set for directories), because on an
 * overlayfs over layers of different file systems without xino a
 * directory's number is overlay-private - it may equal a file's, and it
 * changes when the directory's inode is evicted and read back; such a
 * directory is still found by its remembered path and its birth time (a
 * scan compares directories by statx, not by the entry's d_ino). The handle is turned
 * into a path through the dmap (inode -> parent, name; persistent, so it
 * works after a restart for everything created or looked up through the
 * server); the path is opened with openat2() relative to the export root's
 * descriptor with RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS
 * and O_NOFOLLOW|O_PATH, and the opened object's inode and generation must
 * equal the handle's, so a stale path never hands out a different file.
 * Without openat2() (old kernels, valgrind) open_walk() does the same job
 * one component at a time. The mount is compared by statx mount id, not
 * st_dev (overlayfs reports the st_dev of the layer a file lives on).
 *
 * Recovery: when the dmap does not know the path (an object created behind
 * the server's back and never looked up through it, an inode renumbered by
 * an overlayfs copy-up), the server walks the export breadth-first (bounded
 * by FS_SCAN_MAX entries, never crossing into other file systems or
 * following symlinks) looking for the inode. Not found: NFS3ERR_STALE,
 * remembered for a couple of seconds so that a client replaying handles of
 * deleted files cannot make the server walk the export over and over. Names
 * in requests are single components: '/', "" and NUL are refused before any
 * system call sees them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/fs/fs.h"

#define FH_MAGIC 0x52524631u /* "RRF1" */
#define FH_LEN 32u
#define KH_MAGIC 0x52524b31u /* "RRK1" */
#define KH_HDR 18u
#define KH_MAX (RRR_NFS3_FHSIZE - KH_HDR - 8u) /* kernel bytes that fit */

struct kfh {
	struct file_handle h;
	unsigned char bytes[MAX_HANDLE_SZ];
};

/* ------------------------------------------------------------ SipHash-2-4 */
static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define SIPROUND(v0, v1, v2, v3)                                                           \
	do {                                                                               \
		v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32);             \
		v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2;                                 \
		v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0;                                 \
		v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32);             \
	} while (0)

uint64_t fs_siphash24(const uint8_t key[16], const uint8_t *in, size_t len)
{
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
	size_t full = len & ~(size_t)7;
	for (size_t i = 0; i < full; i += 8) {
		uint64_t m = load_le64(in + i);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)in[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* ------------------------------------------------------------ export */
static int load_key(struct fs_export *ex, const char *state_dir)
{
	char path[PATH_MAX];
	if (state_dir && *state_dir) {
		if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
			goto ephemeral;
		if (snprintf(path, sizeof(path), "%s/fh.key", state_dir) >= (int)sizeof(path))
			goto ephemeral;
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			ssize_t n = read(fd, ex->key, sizeof(ex->key));
			close(fd);
			if (n == (ssize_t)sizeof(ex->key))
				return 0;
			fs_log("handle key %s is damaged; remove it to make a new one "
			       "(clients will see stale handles)", path);
			return -EINVAL;
		}
		if (getrandom(ex->key, sizeof(ex->key), 0) != (ssize_t)sizeof(ex->key))
			return -EIO;
		/* whole or not at all (srvfile.c): a crash leaves no short key */
		if (fs_write_file(path, ex->key, sizeof(ex->key), 0600) == 0)
			return 0;
	}
ephemeral:
	fs_log("warning: no usable --state-dir (%s); file handles will not survive a restart",
	       state_dir ? state_dir : "none");
	if (getrandom(ex->key, sizeof(ex->key), 0) != (ssize_t)sizeof(ex->key))
		return -EIO;
	return 0;
}

static uint64_t gen_of(const struct statx *sx)
{
	if (!(sx->stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)sx->stx_btime.tv_sec << 30 ^ sx->stx_btime.tv_nsec;
}

uint64_t fs_gen(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0)
		return 0;
	return gen_of(&sx);
}

static uint64_t mount_id(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

/* Is @fd (just opened beneath the root) on the export's mount? */
static bool same_mount(const struct fs_export *ex, int fd, const struct stat *st)
{
	uint64_t id = ex->mnt_id ? mount_id(fd) : 0;
	if (id)
		return id == ex->mnt_id;
	return st->st_dev == ex->dev;
}

/* @fd (open, owned) when it lies on @ex's mount, else -EXDEV with @fd
 * closed. */
static int on_export_mount(const struct fs_export *ex, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !same_mount(ex, fd, &st)) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

/* Whole file system: the root's mount shows its file system's root ("/"
 * in mountinfo's 4th field) and is mounted on the export root itself. */
static bool is_whole_fs(const struct fs_export *ex)
{
	if (!ex->mnt_id)
		return false;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool whole = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long id;
		char root[2048], point[2048];
		if (sscanf(line, "%llu %*u %*s %2047s %2047s", &id, root, point) != 3)
			continue;
		if (id == ex->mnt_id) {
			whole = !strcmp(root, "/") && !strcmp(point, ex->root);
			break;
		}
	}
	fclose(f);
	return whole;
}

static void probe_mode(struct fs_export *ex)
{
	const char *e = getenv("RRR_FS_HANDLES");
	ex->fh_mode = FS_FH_PATH;
	if (e && !strcmp(e, "path")) {
		snprintf(ex->fh_why, sizeof(ex->fh_why), "forced by RRR_FS_HANDLES=path");
		return;
	}
	struct kfh k;
	int mnt;
	k.h.handle_bytes = MAX_HANDLE_SZ;
	if (ex->mount_fd < 0) {
		snprintf(ex->fh_why, sizeof(ex->fh_why), "the export root cannot be opened: %s",
			 strerror(errno));
		return;
	}
	if (name_to_handle_at(ex->root_fd, "", &k.h, &mnt, AT_EMPTY_PATH) < 0) {
		int err = errno;
		snprintf(ex->fh_why, sizeof(ex->fh_why),
			 "the file system gives no handles (%s%s)", strerror(err),
			 err == EOVERFLOW || err == EOPNOTSUPP ? "; overlayfs needs nfs_export=on" : "");
		return;
	}
	if (k.h.handle_bytes > KH_MAX) {
		snprintf(ex->fh_why, sizeof(ex->fh_why),
			 "its handles are %u bytes, more than the %u that fit in an NFSv3 handle "
			 "with rrr's tag", k.h.handle_bytes, KH_MAX);
		return;
	}
	int fd = open_by_handle_at(ex->mount_fd, &k.h, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		snprintf(ex->fh_why, sizeof(ex->fh_why), "open_by_handle_at: %s%s", strerror(err),
			 err == EPERM ? " (needs CAP_DAC_READ_SEARCH: run as root)" : "");
		return;
	}
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && fs_ino_key(&st) == ex->root_ino;
	close(fd);
	if (!ok) {
		snprintf(ex->fh_why, sizeof(ex->fh_why), "the root's handle opens another inode");
		return;
	}
	ex->fh_mode = FS_FH_KERNEL;
}

void fs_fh_describe(const struct fs_export *ex, char *out, size_t len)
{
	if (ex->fh_mode == FS_FH_KERNEL)
		snprintf(out, len,
			 "file handles: kernel (name_to_handle_at), valid across restarts and "
			 "renames, O(1) to resolve; %s",
			 ex->whole_fs ? "whole file system exported"
				      : "subtree export: a file the kernel cannot place beneath "
					"the export is refused (STALE) unless its path is known");
	else
		snprintf(out, len,
			 "file handles: path (inode + birth time through a remembered path map), "
			 "because %s: files not created or looked up through this server are found "
			 "by a walk of the export after a restart, and an overlayfs copy-up of a "
			 "lower-layer file makes its handles stale",
			 ex->fh_why);
}

int fs_export_open(struct fs_export *ex, const char *dir, const char *state_dir)
{
	if (!realpath(dir, ex->root))
		return -errno;
	ex->root_fd = open(ex->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ex->root_fd < 0)
		return -errno;
	struct stat st;
	if (fstat(ex->root_fd, &st) < 0) {
		int err = -errno;
		close(ex->root_fd);
		return err;
	}
	ex->dev = st.st_dev;
	ex->root_ino = fs_ino_key(&st);
	/* open_by_handle_at refuses O_PATH descriptors (EBADF) */
	ex->mount_fd = openat(ex->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ex->mnt_id = mount_id(ex->root_fd);
	ex->whole_fs = is_whole_fs(ex);
	{
		struct statfs sf;

		ex->overlay = fstatfs(ex->root_fd, &sf) == 0 && sf.f_type == 0x794c7630; /* OVERLAYFS_SUPER_MAGIC */
	}
	if (!ex->name[0])
		snprintf(ex->name, sizeof(ex->name), "%s", ex->root);
	int rc = load_key(ex, state_dir);
	if (rc < 0)
		goto fail_fds;
	ex->export_id = (uint32_t)fs_siphash24(ex->key, (const uint8_t *)ex->root, strlen(ex->root));
	if (getrandom(ex->write_verf, sizeof(ex->write_verf), 0) != 8) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		put_be64(ex->write_verf, (uint64_t)ts.tv_sec << 30 ^ (uint64_t)ts.tv_nsec);
	}
	rc = fs_dmap_open(&ex->dmap, state_dir, ex->export_id);
	if (rc < 0)
		goto fail_dmap;
	probe_mode(ex);
	fs_cred_init(ex);
	pthread_mutex_init(&ex->lock, NULL);
	fs_fdc_init(&ex->fdc);
	return 0;

fail_dmap:
	fs_dmap_close(&ex->dmap);
fail_fds:
	if (ex->mount_fd >= 0)
		close(ex->mount_fd);
	ex->mount_fd = -1;
	close(ex->root_fd);
	ex->root_fd = -1;
	return rc;
}

void fs_export_close(struct fs_export *ex)
{
	pthread_mutex_destroy(&ex->lock);
	fs_dmap_close(&ex->dmap);
	fs_fdc_destroy(&ex->fdc);
	if (ex->mount_fd >= 0)
		close(ex->mount_fd);
	ex->mount_fd = -1;
	if (ex->root_fd >= 0)
		close(ex->root_fd);
	ex->root_fd = -1;
}

/* ------------------------------------------------------------ handles */
static void fh_make_path(const struct fs_export *ex, uint64_t ino, uint64_t gen,
			 struct rrr_nfs3_fh *fh)
{
	memset(fh, 0, sizeof(*fh));
	put_be32(fh->data, FH_MAGIC);
	put_be32(fh->data + 4, ex->export_id);
	put_be64(fh->data + 8, ino);
	put_be64(fh->data + 16, gen);
	put_be64(fh->data + 24, fs_siphash24(ex->key, fh->data, 24));
	fh->len = FH_LEN;
}

void fs_fh_make(struct fs_export *ex, const struct fs_obj *o, struct rrr_nfs3_fh *fh)
{
	if (ex->fh_mode == FS_FH_KERNEL) {
		struct kfh k;
		int mnt;
		k.h.handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(o->fd, "", &k.h, &mnt, AT_EMPTY_PATH) == 0 &&
		    k.h.handle_bytes <= KH_MAX && k.h.handle_type >= 0 && k.h.handle_type < 256) {
			memset(fh, 0, sizeof(*fh));
			put_be32(fh->data, KH_MAGIC);
			put_be32(fh->data + 4, ex->export_id);
			put_be64(fh->data + 8, (uint64_t)o->st.st_ino);
			fh->data[16] = (uint8_t)k.h.handle_type;
			fh->data[17] = (uint8_t)k.h.handle_bytes;
			memcpy(fh->data + KH_HDR, k.h.f_handle, k.h.handle_bytes);
			uint32_t n = KH_HDR + k.h.handle_bytes;
			put_be64(fh->data + n, fs_siphash24(ex->key, fh->data, n));
			fh->len = n + 8;
			atomic_fetch_add(&ex->khandles, 1);
			return;
		}
	}
	atomic_fetch_add(&ex->phandles, 1);
	fh_make_path(ex, fs_ino_key(&o->st), o->gen, fh);
}

/* Constant-time comparison of the tag that follows the first @n bytes. */
static bool tag_ok(const struct fs_export *ex, const struct rrr_nfs3_fh *fh, uint32_t n)
{
	uint8_t want[8];
	put_be64(want, fs_siphash24(ex->key, fh->data, n));
	uint8_t diff = 0;
	for (int i = 0; i < 8; i++)
		diff |= (uint8_t)(want[i] ^ fh->data[n + i]);
	return diff == 0;
}

/* ------------------------------------------------------------ path map */
void fs_cache_put(struct fs_export *ex, uint64_t ino, uint64_t parent_ino, const char *name,
		  bool replace)
{
	if (ino != ex->root_ino)
		fs_dmap_put(&ex->dmap, ino, parent_ino, name, replace);
}

/* ------------------------------------------------------------ resolution */
/*
 * Fallback for kernels without openat2() (before 5.6, or where a sandbox
 * such as valgrind does not know it): normalise the path lexically, refusing
 * any ".." that would climb above the root, then open it one component at a
 * time with O_NOFOLLOW from the root descriptor. Intermediate components
 * must be directories on the export's device (so a symlink or a mount point
 * in the middle stops the walk), which is stricter than RESOLVE_BENEATH and
 * equally unable to leave the export.
 */
static int open_walk(const struct fs_export *ex, const char *path, int flags)
{
	char norm[PATH_MAX];
	const char *comps[PATH_MAX / 2];
	size_t ncomp = 0;
	if (strlen(path) >= sizeof(norm))
		return -ENAMETOOLONG;
	snprintf(norm, sizeof(norm), "%s", path);
	if (norm[0] == '/')
		return -EXDEV;
	for (char *save = NULL, *c = strtok_r(norm, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (ncomp == 0)
				return -EXDEV;
			ncomp--;
			continue;
		}
		comps[ncomp++] = c;
	}
	int dfd = dup(ex->root_fd);
	if (dfd < 0)
		return -errno;
	if (ncomp == 0) {
		int fd = openat(dfd, ".", flags | O_CLOEXEC);
		int err = errno;
		close(dfd);
		return fd < 0 ? -err : fd;
	}
	for (size_t i = 0; i + 1 < ncomp; i++) {
		int nfd = openat(dfd, comps[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int err = errno;
		close(dfd);
		if (nfd < 0)
			return err == ENOTDIR || err == ELOOP ? -EXDEV : -err;
		dfd = on_export_mount(ex, nfd);
		if (dfd < 0)
			return dfd;
	}
	int fd = openat(dfd, comps[ncomp - 1], flags | O_NOFOLLOW | O_CLOEXEC);
	int err = errno;
	close(dfd);
	if (fd < 0)
		return -err;
	return on_export_mount(ex, fd);
}

static atomic_bool no_openat2;

static bool use_openat2(void)
{
	static atomic_bool checked_env;
	if (!atomic_load(&checked_env)) {
		/* RRR_FS_NO_OPENAT2=1 forces the fallback (the tests use it). */
		const char *e = getenv("RRR_FS_NO_OPENAT2");
		if (e && *e == '1')
			atomic_store(&no_openat2, true);
		atomic_store(&checked_env, true);
	}
	return !atomic_load(&no_openat2);
}

/*
 * openat2() with RESOLVE_BENEATH answers EAGAIN when a ".." in the path met
 * a rename or a mount anywhere on the system while it resolved (the kernel
 * cannot then prove the ".." stayed beneath the root). That is a race, not
 * an answer: retry a few times, then resolve this one path with open_walk(),
 * which cannot leave the root either, rather than fail a client's call.
 */
#define FS_OPENAT2_TRIES 4

static int open_beneath(const struct fs_export *ex, const char *path, int flags)
{
	if (use_openat2()) {
		struct open_how how = {
			.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
		};
		for (int i = 0; i < FS_OPENAT2_TRIES; i++) {
			long fd = syscall(SYS_openat2, ex->root_fd, path, &how, sizeof(how));
			if (fd >= 0)
				return (int)fd;
			if (errno == EAGAIN)
				continue;
			if (errno != ENOSYS)
				return -errno;
			atomic_store(&no_openat2, true);
			break;
		}
	}
	return open_walk(ex, path, flags);
}

/* Open @path and check it is (ino, gen). 0, -ESTALE (other object) or -errno. */
static int open_check(struct fs_export *ex, const char *path, uint64_t ino, uint64_t gen,
		      bool check_gen, struct fs_obj *o)
{
	int fd = open_beneath(ex, path, O_PATH);
	if (fd < 0) {
		if (fd == -EXDEV)
			atomic_fetch_add(&ex->escapes, 1);
		return fd;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -ESTALE;
	}
	uint64_t g = fs_gen(fd);
	bool same = fs_ino_key(&st) == ino;
	if ((ino & FS_KEY_DIR) && S_ISDIR(st.st_mode) && check_gen) {
		/* a directory whose overlay-private number changed (its inode
		 * was evicted and read back): its birth time still names it */
		if (!same && gen && g == gen)
			same = true;
		/* the same number, another birth time: the root (held open by
		 * the server, so never replaced), or an overlayfs directory
		 * copied up from a lower layer (its upper copy is newer) */
		else if (same && g != gen && (ino == ex->root_ino || ex->overlay))
			g = gen;
	}
	if (!same) {
		close(fd); /* (the mount is right: RESOLVE_NO_XDEV or open_walk) */
		return -ESTALE;
	}
	if (check_gen && g != gen) {
		close(fd);
		return -ESTALE;
	}
	o->fd = fd;
	o->st = st;
	o->gen = g;
	snprintf(o->path, sizeof(o->path), "%s", path);
	return 0;
}

/* Is the entry @de of the directory @dfd the object of @key (and, for a
 * directory, of birth time @gen)? Files by the entry's inode number;
 * directories by a statx, since their reported number need not be the
 * entry's (overlayfs, see fs_ino_key). */
static bool scan_hit(int dfd, const struct dirent *de, uint64_t key, uint64_t gen)
{
	uint64_t ino = key & ~FS_KEY_DIR;
	struct statx sx;

	if (!(key & FS_KEY_DIR))
		return de->d_ino == ino && de->d_type != DT_DIR;
	if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
		return false;
	if (statx(dfd, de->d_name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_BTIME,
		  &sx) < 0 || !S_ISDIR(sx.stx_mode))
		return false;
	return sx.stx_ino == ino || (gen && gen_of(&sx) == gen);
}

/* Breadth-first search of the export for @ino (a key, fs_ino_key) of birth
 * time @gen; the queue holds paths. */
static int scan_for(struct fs_export *ex, uint64_t ino, uint64_t gen, char *out)
{
	size_t cap = 256, head = 0, tail = 0;
	char **q = calloc(cap, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q[tail++] = strdup(".");
	uint32_t visited = 0;
	int rc = -ESTALE;
	atomic_fetch_add(&ex->scans, 1);
	while (head < tail && rc == -ESTALE) {
		char *dpath = q[head++];
		if (!dpath) {
			rc = -ENOMEM;
			break;
		}
		int dfd = open_beneath(ex, dpath, O_RDONLY | O_DIRECTORY);
		DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!d) {
			if (dfd >= 0)
				close(dfd);
			free(dpath);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d)) && visited++ < FS_SCAN_MAX) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char child[PATH_MAX];
			int n = strcmp(dpath, ".") ? snprintf(child, sizeof(child), "%s/%s", dpath,
							      de->d_name)
						   : snprintf(child, sizeof(child), "%s", de->d_name);
			if (n < 0 || n >= (int)sizeof(child))
				continue;
			if (scan_hit(dirfd(d), de, ino, gen)) {
				struct stat dst;
				snprintf(out, PATH_MAX, "%s", child);
				if (fstat(dirfd(d), &dst) == 0)
					fs_cache_put(ex, ino, fs_ino_key(&dst), de->d_name, true);
				rc = 0;
				break;
			}
			if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
				if (tail == cap) {
					char **nq = realloc(q, cap * 2 * sizeof(*q));
					if (!nq) {
						rc = -ENOMEM;
						break;
					}
					q = nq;
					cap *= 2;
				}
				q[tail++] = strdup(child);
			}
		}
		closedir(d);
		free(dpath);
		if (visited >= FS_SCAN_MAX)
			break;
	}
	for (size_t i = head; i < tail; i++)
		free(q[i]);
	free(q);
	return rc;
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Did a scan for @ino fail within FS_MISSED_SECS? (Then answer STALE at once.) */
static bool recently_missed(struct fs_export *ex, uint64_t ino)
{
	double now = mono_now();
	bool hit = false;
	pthread_mutex_lock(&ex->lock);
	for (uint32_t i = 0; i < FS_MISSED; i++)
		if (ex->missed[i].ino == ino && now - ex->missed[i].when < FS_MISSED_SECS)
			hit = true;
	pthread_mutex_unlock(&ex->lock);
	return hit;
}

static void note_missed(struct fs_export *ex, uint64_t ino)
{
	pthread_mutex_lock(&ex->lock);
	ex->missed[ex->missed_next].ino = ino;
	ex->missed[ex->missed_next].when = mono_now();
	ex->missed_next = (ex->missed_next + 1) % FS_MISSED;
	pthread_mutex_unlock(&ex->lock);
}

int fs_fh_export_id(const struct rrr_nfs3_fh *fh, uint32_t *id)
{
	uint32_t magic = fh->len >= 8 ? get_be32(fh->data) : 0;
	if (magic != FH_MAGIC && magic != KH_MAGIC)
		return -EINVAL;
	*id = get_be32(fh->data + 4);
	return 0;
}

uint32_t fs_fh_parse(struct fs_export *ex, const struct rrr_nfs3_fh *fh, uint64_t *ino,
		     uint64_t *gen)
{
	uint32_t magic = fh->len >= 8 ? get_be32(fh->data) : 0;
	uint32_t n;
	if (magic == FH_MAGIC && fh->len == FH_LEN)
		n = 24;
	else if (magic == KH_MAGIC && fh->len >= KH_HDR + 8 && fh->len <= RRR_NFS3_FHSIZE &&
		 fh->data[17] <= KH_MAX && fh->len == KH_HDR + fh->data[17] + 8u)
		n = KH_HDR + fh->data[17];
	else
		return RRR_NFS3ERR_BADHANDLE;
	if (get_be32(fh->data + 4) != ex->export_id || !tag_ok(ex, fh, n)) {
		atomic_fetch_add(&ex->stale, 1);
		return RRR_NFS3ERR_STALE;
	}
	*ino = get_be64(fh->data + 8);
	*gen = magic == FH_MAGIC ? get_be64(fh->data + 16) : get_be64(fh->data + n);
	return RRR_NFS3_OK;
}

/* Path of the object @fd relative to the export root, by the kernel's own
 * name for it (/proc/self/fd), re-opened beneath the root to the same
 * inode: 0 with @rel, or -ESTALE (unplaceable, deleted, or outside). */
static int placed_beneath(struct fs_export *ex, int fd, const struct stat *st, char *rel)
{
	char proc[64], lp[PATH_MAX];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, lp, sizeof(lp) - 1);
	if (n <= 0)
		return -ESTALE;
	lp[n] = '\0';
	size_t rl = strcmp(ex->root, "/") ? strlen(ex->root) : 0;
	if (strncmp(lp, ex->root, rl) || (lp[rl] != '/' && lp[rl] != '\0'))
		return -ESTALE;
	const char *r = lp + rl;
	while (*r == '/')
		r++;
	snprintf(rel, PATH_MAX, "%s", *r ? r : ".");
	int vfd = open_beneath(ex, rel, O_PATH);
	if (vfd < 0)
		return -ESTALE;
	struct stat vst;
	bool same = fstat(vfd, &vst) == 0 && vst.st_ino == st->st_ino && vst.st_dev == st->st_dev;
	close(vfd);
	return same ? 0 : -ESTALE;
}

/* A kernel handle: open_by_handle_at on the root's mount, then confinement. */
static uint32_t resolve_kernel(struct fs_export *ex, const struct rrr_nfs3_fh *fh, uint64_t ino,
			       uint64_t key, struct fs_obj *o)
{
	struct kfh k;
	k.h.handle_type = fh->data[16];
	k.h.handle_bytes = fh->data[17];
	memcpy(k.h.f_handle, fh->data + KH_HDR, k.h.handle_bytes);
	fs_priv_begin();
	int fd = open_by_handle_at(ex->mount_fd, &k.h, O_PATH | O_CLOEXEC);
	uint32_t status = RRR_NFS3ERR_STALE;
	struct stat st;
	char rel[PATH_MAX];
	if (fd < 0)
		goto out;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != ino ||
	    (st.st_nlink == 0 && !S_ISDIR(st.st_mode)))
		goto out;
	if (placed_beneath(ex, fd, &st, rel) == 0) {
		status = RRR_NFS3_OK;
	} else if (S_ISDIR(st.st_mode) && st.st_nlink == 0) {
		/* a removed directory */
	} else if (!S_ISDIR(st.st_mode) && fs_dmap_path(&ex->dmap, ino, ex->root_ino, rel) == 0 &&
		   open_check(ex, rel, ino, 0, false, o) == 0) {
		fs_obj_close(o);
		status = RRR_NFS3_OK;
	} else if (ex->whole_fs && !S_ISDIR(st.st_mode)) {
		rel[0] = '\0'; /* on the export's file system, which is all exported */
		status = RRR_NFS3_OK;
	} else {
		atomic_fetch_add(&ex->escapes, 1);
	}
out:
	fs_priv_end();
	if (status != RRR_NFS3_OK) {
		if (fd >= 0)
			close(fd);
		atomic_fetch_add(&ex->stale, 1);
		return status;
	}
	o->fd = fd;
	o->st = st;
	o->gen = key;
	snprintf(o->path, sizeof(o->path), "%s", rel);
	return RRR_NFS3_OK;
}

uint32_t fs_resolve(struct fs_export *ex, const struct rrr_nfs3_fh *fh, struct fs_obj *o)
{
	o->fd = -1;
	uint64_t ino, gen;
	uint32_t st = fs_fh_parse(ex, fh, &ino, &gen);
	if (st != RRR_NFS3_OK)
		return st;
	if (get_be32(fh->data) == KH_MAGIC)
		return resolve_kernel(ex, fh, ino, gen, o);
	char path[PATH_MAX];
	fs_priv_begin(); /* a handle needs no search permission above the object */
	if (fs_dmap_path(&ex->dmap, ino, ex->root_ino, path) < 0)
		path[0] = '\0';
	if (path[0] && open_check(ex, path, ino, gen, true, o) == 0) {
		fs_priv_end();
		return RRR_NFS3_OK;
	}
	if (ino == ex->root_ino || recently_missed(ex, ino) || scan_for(ex, ino, gen, path) < 0 ||
	    open_check(ex, path, ino, gen, true, o) < 0) {
		fs_priv_end();
		if (ino != ex->root_ino)
			note_missed(ex, ino);
		atomic_fetch_add(&ex->stale, 1);
		return RRR_NFS3ERR_STALE;
	}
	fs_priv_end();
	return RRR_NFS3_OK;
}

uint32_t fs_check_name(const char *name)
{
	if (!name[0])
		return RRR_NFS3ERR_NOENT;
	if (strchr(name, '/'))
		return RRR_NFS3ERR_ACCES;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return RRR_NFS3ERR_INVAL;
	if (strlen(name) > RRR_NFS3_MAXNAMLEN)
		return RRR_NFS3ERR_NAMETOOLONG;
	return RRR_NFS3_OK;
}

uint32_t fs_child_path(const struct fs_obj *dir, const char *name, char *out)
{
	int n = strcmp(dir->path, ".") ? snprintf(out, PATH_MAX, "%s/%s", dir->path, name)
				       : snprintf(out, PATH_MAX, "%s", name);
	if (n < 0 || n >= PATH_MAX)
		return RRR_NFS3ERR_NAMETOOLONG;
	return RRR_NFS3_OK;
}

/* Open @name (a single component, "..", or ".") relative to the directory
 * @dirfd, never leaving the export's mount, never following a final symlink. */
static int open_in_dir(const struct fs_export *ex, int dirfd, const char *name)
{
	struct open_how how = {
		.flags = (uint64_t)(O_PATH | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
	};
	if (use_openat2()) {
		long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd >= 0 ? (int)fd : -errno;
		atomic_store(&no_openat2, true);
	}
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return on_export_mount(ex, fd);
}

/* Make @o the object of @fd (an O_PATH descriptor, or -errno of the open:
 * -EXDEV counts as an escape from @ex) at @path: RRR_NFS3_OK with @o
 * owning @fd, or the NFS status with @fd closed. */
static uint32_t obj_from_fd(struct fs_export *ex, int fd, const char *path, struct fs_obj *o)
{
	if (fd < 0) {
		if (fd == -EXDEV)
			atomic_fetch_add(&ex->escapes, 1);
		return fs_errno_to_stat(-fd);
	}
	if (fstat(fd, &o->st) < 0) {
		int err = errno;
		close(fd);
		return fs_errno_to_stat(err);
	}
	o->fd = fd;
	o->gen = fs_gen(fd);
	snprintf(o->path, sizeof(o->path), "%s", path);
	return RRR_NFS3_OK;
}

uint32_t fs_lookup(struct fs_export *ex, const struct fs_obj *dir, const char *name,
		   struct fs_obj *o)
{
	o->fd = -1;
	if (!S_ISDIR(dir->st.st_mode))
		return RRR_NFS3ERR_NOTDIR;
	bool dot = !strcmp(name, "."), dotdot = !strcmp(name, "..");
	bool at_root = fs_ino_key(&dir->st) == ex->root_ino && dir->st.st_dev == ex->dev;
	char path[PATH_MAX] = "";
	if (!dot && !dotdot) {
		uint32_t st = fs_check_name(name);
		if (st)
			return st;
		if (dir->path[0] && (st = fs_child_path(dir, name, path)) != RRR_NFS3_OK)
			return st;
	} else if (dir->path[0]) {
		snprintf(path, sizeof(path), "%s", dir->path);
		if (dotdot) {
			/* The parent of the root is the root: nothing above is reachable. */
			char *slash = strrchr(path, '/');
			if (slash)
				*slash = '\0';
			else
				snprintf(path, sizeof(path), ".");
		}
	}
	/* As the caller: the kernel checks search permission on @dir. */
	int fd = open_in_dir(ex, dir->fd, dot || (dotdot && at_root) ? "." : name);
	uint32_t st = obj_from_fd(ex, fd, path, o);
	if (st != RRR_NFS3_OK)
		return st;
	if (!dot && !dotdot)
		fs_cache_put(ex, fs_ino_key(&o->st), fs_ino_key(&dir->st), name,
			     S_ISDIR(o->st.st_mode) || o->st.st_nlink <= 1);
	return RRR_NFS3_OK;
}

uint32_t fs_resolve_path(struct fs_export *ex, const char *rel, struct fs_obj *o)
{
	o->fd = -1;
	return obj_from_fd(ex, open_beneath(ex, rel, O_PATH), rel, o);
}

int fs_reopen(const struct fs_obj *o, int flags)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	int fd = open(proc, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_ino != o->st.st_ino || st.st_dev != o->st.st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

void fs_obj_close(struct fs_obj *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}
