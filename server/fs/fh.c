/* SPDX-License-Identifier: MIT */
/*
 * server/fs/fh.c - file handles of rrr-server, and why they cannot escape.
 *
 * A handle names an inode of the export, never a path:
 *
 *   0        4           8               16              24              32
 *   +--------+-----------+---------------+---------------+---------------+
 *   | "RRF1" | export id | inode number  | generation    | tag (SipHash) |
 *   +--------+-----------+---------------+---------------+---------------+
 *
 * The tag is SipHash-2-4 of the first 24 bytes under a 128-bit key kept in
 * the state directory (created on first start), so handles are stable
 * across restarts and cannot be forged or guessed by clients; the export id
 * is derived from the key and the export's real path. The generation is
 * the inode's birth time (statx), which tells a reused inode number from
 * the file a handle was issued for.
 *
 * Normal operation: a verified handle is turned into a path through a
 * small cache (inode -> path relative to the export root) filled by
 * LOOKUP, CREATE, READDIRPLUS... The path is opened with openat2() relative
 * to the export root's descriptor with RESOLVE_BENEATH | RESOLVE_NO_XDEV |
 * RESOLVE_NO_MAGICLINKS and O_NOFOLLOW|O_PATH: the kernel refuses any
 * resolution that would leave the export (through "..", an absolute
 * symlink, or a symlink that climbs out), and the final component is never
 * followed. The opened object's inode and generation must equal the
 * handle's, so a stale path can never hand out a different file. Without
 * openat2() (old kernels, valgrind) open_walk() does the same job one
 * component at a time.
 *
 * Recovery: after a restart, a rename, or cache eviction the path may be
 * unknown or wrong; the server then walks the export breadth-first (bounded
 * by FS_SCAN_MAX entries, never crossing into other file systems or
 * following symlinks) looking for the inode, and caches what it finds.
 * Not found: NFS3ERR_STALE, remembered for a couple of seconds so that a
 * client replaying handles of deleted files cannot make the server walk the
 * export over and over. Names in requests are single components:
 * '/' , "" and NUL are refused before any system call sees them.
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/fs/fs.h"

#define FH_MAGIC 0x52524631u /* "RRF1" */
#define FH_LEN 32u

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

static uint64_t siphash24(const uint8_t key[16], const uint8_t *in, size_t len)
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
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			goto ephemeral;
		ssize_t n = write(fd, ex->key, sizeof(ex->key));
		int rc = fsync(fd);
		close(fd);
		if (n == (ssize_t)sizeof(ex->key) && rc == 0)
			return 0;
		unlink(path);
	}
ephemeral:
	fs_log("warning: no usable --state-dir (%s); file handles will not survive a restart",
	       state_dir ? state_dir : "none");
	if (getrandom(ex->key, sizeof(ex->key), 0) != (ssize_t)sizeof(ex->key))
		return -EIO;
	return 0;
}

uint64_t fs_gen(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0)
		return 0;
	if (!(sx.stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)sx.stx_btime.tv_sec << 30 ^ sx.stx_btime.tv_nsec;
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
	ex->root_ino = st.st_ino;
	if (!ex->name[0])
		snprintf(ex->name, sizeof(ex->name), "%s", ex->root);
	int rc = load_key(ex, state_dir);
	if (rc < 0) {
		close(ex->root_fd);
		return rc;
	}
	ex->export_id = (uint32_t)siphash24(ex->key, (const uint8_t *)ex->root, strlen(ex->root));
	if (getrandom(ex->write_verf, sizeof(ex->write_verf), 0) != 8) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		put_be64(ex->write_verf, (uint64_t)ts.tv_sec << 30 ^ (uint64_t)ts.tv_nsec);
	}
	pthread_mutex_init(&ex->lock, NULL);
	fs_fdc_init(&ex->fdc);
	return 0;
}

static void cache_clear_locked(struct fs_export *ex)
{
	for (uint32_t i = 0; i < FS_CACHE_BUCKETS; i++) {
		struct fs_cache_ent *e = ex->cache[i];
		while (e) {
			struct fs_cache_ent *n = e->next;
			free(e);
			e = n;
		}
		ex->cache[i] = NULL;
	}
	ex->cache_n = 0;
}

void fs_export_close(struct fs_export *ex)
{
	pthread_mutex_lock(&ex->lock);
	cache_clear_locked(ex);
	pthread_mutex_unlock(&ex->lock);
	pthread_mutex_destroy(&ex->lock);
	fs_fdc_destroy(&ex->fdc);
	if (ex->root_fd >= 0)
		close(ex->root_fd);
	ex->root_fd = -1;
}

/* ------------------------------------------------------------ handles */
void fs_fh_make(const struct fs_export *ex, uint64_t ino, uint64_t gen, struct rrr_nfs3_fh *fh)
{
	memset(fh, 0, sizeof(*fh));
	put_be32(fh->data, FH_MAGIC);
	put_be32(fh->data + 4, ex->export_id);
	put_be64(fh->data + 8, ino);
	put_be64(fh->data + 16, gen);
	put_be64(fh->data + 24, siphash24(ex->key, fh->data, 24));
	fh->len = FH_LEN;
}

/* Constant-time comparison of the tag. */
static bool tag_ok(const struct fs_export *ex, const struct rrr_nfs3_fh *fh)
{
	uint8_t want[8];
	put_be64(want, siphash24(ex->key, fh->data, 24));
	uint8_t diff = 0;
	for (int i = 0; i < 8; i++)
		diff |= (uint8_t)(want[i] ^ fh->data[24 + i]);
	return diff == 0;
}

/* ------------------------------------------------------------ path cache */
static uint32_t bucket(uint64_t ino)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 52) & (FS_CACHE_BUCKETS - 1);
}

void fs_cache_put(struct fs_export *ex, uint64_t ino, const char *path)
{
	size_t n = strlen(path);
	struct fs_cache_ent *e = malloc(sizeof(*e) + n + 1);
	if (!e)
		return;
	e->ino = ino;
	memcpy(e->path, path, n + 1);
	pthread_mutex_lock(&ex->lock);
	struct fs_cache_ent **pp = &ex->cache[bucket(ino)];
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->ino == ino) {
			struct fs_cache_ent *old = *pp;
			e->next = old->next;
			*pp = e;
			free(old);
			pthread_mutex_unlock(&ex->lock);
			return;
		}
	}
	if (ex->cache_n >= FS_CACHE_MAX)
		cache_clear_locked(ex); /* crude but bounded; scans refill it */
	e->next = ex->cache[bucket(ino)];
	ex->cache[bucket(ino)] = e;
	ex->cache_n++;
	pthread_mutex_unlock(&ex->lock);
}

static bool cache_get(struct fs_export *ex, uint64_t ino, char *out)
{
	bool found = false;
	pthread_mutex_lock(&ex->lock);
	for (struct fs_cache_ent *e = ex->cache[bucket(ino)]; e; e = e->next) {
		if (e->ino == ino) {
			snprintf(out, PATH_MAX, "%s", e->path);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ex->lock);
	return found;
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
		struct stat st;
		if (fstat(nfd, &st) < 0 || st.st_dev != ex->dev) {
			close(nfd);
			return -EXDEV;
		}
		dfd = nfd;
	}
	int fd = openat(dfd, comps[ncomp - 1], flags | O_NOFOLLOW | O_CLOEXEC);
	int err = errno;
	close(dfd);
	if (fd < 0)
		return -err;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_dev != ex->dev) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

static int open_beneath(const struct fs_export *ex, const char *path, int flags)
{
	static atomic_bool no_openat2;
	static atomic_bool checked_env;
	if (!atomic_load(&checked_env)) {
		/* RRR_FS_NO_OPENAT2=1 forces the fallback (the tests use it). */
		const char *e = getenv("RRR_FS_NO_OPENAT2");
		if (e && *e == '1')
			atomic_store(&no_openat2, true);
		atomic_store(&checked_env, true);
	}
	if (!atomic_load(&no_openat2)) {
		struct open_how how = {
			.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, ex->root_fd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS)
			return -errno;
		atomic_store(&no_openat2, true);
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
	if (fstat(fd, &st) < 0 || st.st_ino != ino || st.st_dev != ex->dev) {
		close(fd);
		return -ESTALE;
	}
	uint64_t g = fs_gen(fd);
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

/* Breadth-first search of the export for @ino; the queue holds paths. */
static int scan_for(struct fs_export *ex, uint64_t ino, char *out)
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
			if (de->d_ino == ino) {
				snprintf(out, PATH_MAX, "%s", child);
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

uint32_t fs_fh_parse(struct fs_export *ex, const struct rrr_nfs3_fh *fh, uint64_t *ino,
		     uint64_t *gen)
{
	if (fh->len != FH_LEN || get_be32(fh->data) != FH_MAGIC)
		return RRR_NFS3ERR_BADHANDLE;
	if (get_be32(fh->data + 4) != ex->export_id || !tag_ok(ex, fh)) {
		atomic_fetch_add(&ex->stale, 1);
		return RRR_NFS3ERR_STALE;
	}
	*ino = get_be64(fh->data + 8);
	*gen = get_be64(fh->data + 16);
	return RRR_NFS3_OK;
}

uint32_t fs_resolve(struct fs_export *ex, const struct rrr_nfs3_fh *fh, struct fs_obj *o)
{
	o->fd = -1;
	uint64_t ino, gen;
	uint32_t st = fs_fh_parse(ex, fh, &ino, &gen);
	if (st != RRR_NFS3_OK)
		return st;
	char path[PATH_MAX];
	if (ino == ex->root_ino)
		snprintf(path, sizeof(path), ".");
	else if (!cache_get(ex, ino, path))
		path[0] = '\0';
	if (path[0] && open_check(ex, path, ino, gen, true, o) == 0)
		return RRR_NFS3_OK;
	if (ino == ex->root_ino || recently_missed(ex, ino) || scan_for(ex, ino, path) < 0 ||
	    open_check(ex, path, ino, gen, true, o) < 0) {
		if (ino != ex->root_ino)
			note_missed(ex, ino);
		atomic_fetch_add(&ex->stale, 1);
		return RRR_NFS3ERR_STALE;
	}
	fs_cache_put(ex, ino, path);
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

uint32_t fs_lookup(struct fs_export *ex, const struct fs_obj *dir, const char *name,
		   struct fs_obj *o)
{
	char path[PATH_MAX];
	o->fd = -1;
	if (!S_ISDIR(dir->st.st_mode))
		return RRR_NFS3ERR_NOTDIR;
	if (!strcmp(name, "."))
		snprintf(path, sizeof(path), "%s", dir->path);
	else if (!strcmp(name, "..")) {
		/* The parent of the root is the root: nothing above is reachable. */
		snprintf(path, sizeof(path), "%s", dir->path);
		char *slash = strrchr(path, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(path, sizeof(path), ".");
	} else {
		uint32_t st = fs_check_name(name);
		if (st)
			return st;
		st = fs_child_path(dir, name, path);
		if (st)
			return st;
	}
	return fs_resolve_path(ex, path, o);
}

uint32_t fs_resolve_path(struct fs_export *ex, const char *rel, struct fs_obj *o)
{
	o->fd = -1;
	int fd = open_beneath(ex, rel, O_PATH);
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
	snprintf(o->path, sizeof(o->path), "%s", rel);
	if (o->st.st_ino != ex->root_ino)
		fs_cache_put(ex, (uint64_t)o->st.st_ino, rel);
	return RRR_NFS3_OK;
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
