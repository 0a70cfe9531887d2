/* SPDX-License-Identifier: MIT */
/*
 * server/fs/fdcache.c - open data descriptors of recently used files.
 *
 * Resolving a handle the safe way (fh.c) costs an openat2() beneath the
 * export root, an fstat() and a statx() to compare inode and generation,
 * a re-open through /proc/self/fd to get a readable descriptor, and two
 * close() calls: about ten system calls before the one pread() a READ
 * needs. This cache keeps, per (inode, generation) of a recently resolved
 * regular file, the data descriptors that such a resolution produced, so
 * that READ and WRITE of a hot file cost pread/pwritev plus one fstat().
 *
 * Normal operation: READ/WRITE verify the handle's tag first (fs_fh_parse:
 * a client cannot name an inode it was not given a handle for), then look
 * for a live entry of that (inode, generation) with a descriptor of the
 * wanted kind (O_RDONLY, O_WRONLY or O_WRONLY|O_DIRECT for large aligned
 * WRITEs, each opened lazily: a file is never held open for writing because
 * it was read). A miss takes the old slow path
 * (fs_resolve + fs_reopen) and offers a duplicate of its descriptor to the
 * cache. Entries are reference counted: a worker holds one while it does
 * its I/O, so eviction or invalidation by another thread never closes a
 * descriptor in use; the last reference closes it.
 *
 * Why this keeps fh.c's guarantees: a descriptor only enters the cache
 * after the full resolution proved the handle's inode lies beneath the
 * export and has the handle's generation, and it refers to that inode for
 * as long as it is open. What can change afterwards is the namespace:
 *
 *   - REMOVE, RMDIR and RENAME through this server drop every entry
 *     (fs_fdc_clear), SETATTR drops the file's entry (fs_fdc_forget);
 *   - an unlink outside the server shows as st_nlink == 0 in the fstat()
 *     every fast path does; the caller then forgets the entry and takes
 *     the slow path, which answers NFS3ERR_STALE as before;
 *   - a rename outside the server (even out of the export) is noticed by
 *     revalidation: an entry is used for at most FS_FDC_TTL seconds after
 *     the slow path last proved where the file is, then the next I/O takes
 *     the slow path again (which re-proves it or fails as before).
 *
 * A READ whose slow path was already under way when another worker ran
 * REMOVE may offer its descriptor after the clear; the nlink check (the
 * file's last name is gone) and the TTL bound what such an entry can serve.
 *
 * Across users: requests run as their callers (cred.c), so a descriptor
 * carries the permission checks of the identity that opened it. Entries
 * are keyed by (inode, generation, identity digest): a request of another
 * user (or group set) never borrows it and opens its own through the slow
 * path, where the kernel checks its permissions; SETATTR (a chmod) drops
 * the file's entries.
 *
 * Bounds: at most FS_FDC_SLOTS entries (three descriptors each); the least
 * recently used unreferenced-by-I/O entry is replaced. All state is under
 * one mutex held for a linear scan of FS_FDC_SLOTS entries, never across a
 * system call other than close() of an evicted descriptor.
 *
 * Recovery: nothing persistent; a failed insert (no memory, no
 * descriptor) only means the next I/O takes the slow path again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "server/fs/fs.h"

struct fs_fdc_ent {
	uint64_t ino, gen;
	uint64_t who;	/* identity whose permission checks opened fd[] */
	int fd[3];	/* [0] O_RDONLY, [1] O_WRONLY, [2] O_WRONLY|O_DIRECT; -1: not open */
	unsigned refs;	/* one for the table while listed, one per user */
	double checked; /* when the slow path last proved the path */
	uint64_t used;	/* tick of the last lookup, for LRU */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int kind(int flags)
{
	if ((flags & O_ACCMODE) != O_WRONLY)
		return 0;
	return flags & O_DIRECT ? 2 : 1;
}

void fs_fdc_init(struct fs_fdc *c)
{
	pthread_mutex_init(&c->lock, NULL);
	for (unsigned i = 0; i < FS_FDC_SLOTS; i++)
		c->ents[i] = NULL;
	c->tick = 0;
	atomic_store(&c->hits, 0);
	atomic_store(&c->misses, 0);
}

/* Drop one reference; returns the entry to free (fds closed outside the
 * lock by the caller) or NULL. */
static struct fs_fdc_ent *unref_locked(struct fs_fdc_ent *e)
{
	return --e->refs == 0 ? e : NULL;
}

static void destroy(struct fs_fdc_ent *e)
{
	if (!e)
		return;
	for (int k = 0; k < 3; k++)
		if (e->fd[k] >= 0)
			close(e->fd[k]);
	free(e);
}

/* Unlist slot @i; returns what must be destroyed outside the lock. */
static struct fs_fdc_ent *unlist_locked(struct fs_fdc *c, unsigned i)
{
	struct fs_fdc_ent *e = c->ents[i];
	c->ents[i] = NULL;
	if (!e)
		return NULL;
	return unref_locked(e);
}

void fs_fdc_destroy(struct fs_fdc *c)
{
	fs_fdc_clear(c);
	pthread_mutex_destroy(&c->lock);
}

int fs_fdc_get(struct fs_fdc *c, uint64_t ino, uint64_t gen, uint64_t who, int flags,
	       struct fs_fdh *h)
{
	int k = kind(flags);
	double now = now_s();
	h->e = NULL;
	h->fd = -1;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < FS_FDC_SLOTS; i++) {
		struct fs_fdc_ent *e = c->ents[i];
		if (!e || e->ino != ino || e->gen != gen || e->who != who)
			continue;
		if (e->fd[k] < 0 || now - e->checked >= FS_FDC_TTL || now < e->checked)
			break;
		e->refs++;
		e->used = ++c->tick;
		h->e = e;
		h->fd = e->fd[k];
		break;
	}
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(h->e ? &c->hits : &c->misses, 1);
	return h->e ? 0 : -ENOENT;
}

void fs_fdc_put(struct fs_fdc *c, struct fs_fdh *h)
{
	if (!h->e)
		return;
	pthread_mutex_lock(&c->lock);
	struct fs_fdc_ent *dead = unref_locked(h->e);
	pthread_mutex_unlock(&c->lock);
	destroy(dead);
	h->e = NULL;
	h->fd = -1;
}

void fs_fdc_offer(struct fs_fdc *c, uint64_t ino, uint64_t gen, uint64_t who, int flags, int fd)
{
	int k = kind(flags);
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return;
	double now = now_s();
	struct fs_fdc_ent *fresh = NULL, *dead = NULL;
	pthread_mutex_lock(&c->lock);
	unsigned victim = FS_FDC_SLOTS, empty = FS_FDC_SLOTS;
	uint64_t oldest = UINT64_MAX;
	for (unsigned i = 0; i < FS_FDC_SLOTS; i++) {
		struct fs_fdc_ent *e = c->ents[i];
		if (!e) {
			if (empty == FS_FDC_SLOTS)
				empty = i;
			continue;
		}
		if (e->ino == ino && e->gen == gen && e->who == who) {
			/* The slow path just proved the path again. */
			e->checked = now;
			if (e->fd[k] < 0) {
				e->fd[k] = dup_fd;
				dup_fd = -1;
			}
			pthread_mutex_unlock(&c->lock);
			if (dup_fd >= 0)
				close(dup_fd);
			return;
		}
		if (e->used < oldest) {
			oldest = e->used;
			victim = i;
		}
	}
	unsigned slot = empty != FS_FDC_SLOTS ? empty : victim;
	fresh = calloc(1, sizeof(*fresh));
	if (fresh && slot < FS_FDC_SLOTS) {
		dead = unlist_locked(c, slot);
		fresh->ino = ino;
		fresh->gen = gen;
		fresh->who = who;
		fresh->fd[0] = fresh->fd[1] = fresh->fd[2] = -1;
		fresh->fd[k] = dup_fd;
		fresh->refs = 1;
		fresh->checked = now;
		fresh->used = ++c->tick;
		c->ents[slot] = fresh;
		fresh = NULL;
		dup_fd = -1;
	}
	pthread_mutex_unlock(&c->lock);
	free(fresh);
	if (dup_fd >= 0)
		close(dup_fd);
	destroy(dead);
}

void fs_fdc_forget(struct fs_fdc *c, uint64_t ino)
{
	struct fs_fdc_ent *dead[FS_FDC_SLOTS];
	unsigned n = 0;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < FS_FDC_SLOTS; i++)
		if (c->ents[i] && c->ents[i]->ino == ino)
			dead[n++] = unlist_locked(c, i);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < n; i++)
		destroy(dead[i]);
}

void fs_fdc_clear(struct fs_fdc *c)
{
	struct fs_fdc_ent *dead[FS_FDC_SLOTS];
	unsigned n = 0;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < FS_FDC_SLOTS; i++)
		if (c->ents[i])
			dead[n++] = unlist_locked(c, i);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < n; i++)
		destroy(dead[i]);
}
