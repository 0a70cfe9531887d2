/* SPDX-License-Identifier: MIT */
/*
 * server/fs/dmap.c - where inodes of the export live: a persistent map
 * inode -> (parent directory inode, name).
 *
 * Why: handles of the fallback mode (fh.c, "path handles": inode number +
 * birth time) name an inode, and the server must find a path to open it.
 * Kernel handles (name_to_handle_at) need a path too, but only to prove
 * that a non-directory of a subtree export still lies beneath the export
 * when the kernel cannot tell (a disconnected dentry after its cache was
 * dropped). Storing one (parent, name) edge per inode instead of a whole
 * path means that renaming a directory updates one entry and the paths of
 * everything beneath it stay right.
 *
 * Normal operation: LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD, LINK and RENAME
 * record the edge they saw (fs_dmap_put); an edge equal to the one already
 * known costs a hash lookup and nothing else. A new or changed edge is also
 * appended to the log file <state-dir>/dmap-<export id>, one record per
 * write(2) on an O_APPEND descriptor:
 *
 *   0        8         16     18
 *   +--------+---------+------+----------------+
 *   | inode  | parent  | len  | name (len)     |   little-endian
 *   +--------+---------+------+----------------+
 *
 * after an 8-byte header "RRRDMAP2". Inodes are keys (fs_ino_key: the inode
 * number, with FS_KEY_DIR set for directories). fs_dmap_path() follows parent edges up
 * to the export root (at most FS_DMAP_DEPTH of them) and joins the names.
 * Every path this map gives is a hint: fh.c opens it beneath the export
 * root and checks inode (and generation) before using it, so a stale or
 * damaged map can cost a STALE answer, never a wrong file.
 *
 * Bounds, whatever clients do: memory by FS_DMAP_MAX entries (beyond that
 * new edges are not remembered - counted, and logged once - and fh.c falls
 * back to a bounded walk of the export); the log by its entries: once it
 * holds FS_DMAP_SLACK records more than twice the live entries it is
 * rewritten from memory (under the lock, while running; the cost is one
 * pass over the map every FS_DMAP_SLACK + n changes). A LOOKUP of a file
 * with several links keeps the edge already known (fs_cache_put's
 * @replace), so alternating between the names of one inode - all a
 * read-only client can do - changes nothing and writes nothing.
 *
 * Recovery: at start the log is replayed (a truncated last record, from a
 * crash in the middle of a write, is dropped); when it holds many more
 * records than live entries, or cannot be read whole (damaged, or larger
 * than the map could ever need), it is rewritten to a temporary file and
 * renamed over the old one. Removals are not logged: the entry of a
 * removed inode only fails its check. Without a state directory the map
 * lives in memory only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fs/fs.h"

#define DMAP_MAGIC "RRRDMAP2" /* keys are fs_ino_key(): a log of before is rewritten */

struct fs_dent {
	struct fs_dent *next;
	uint64_t ino, parent;
	uint16_t len;
	char name[];
};

static uint32_t dbucket(uint64_t ino)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 40) & (FS_DMAP_BUCKETS - 1);
}

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* A new entry: @ino is @name (@len bytes) in @parent, chained before
 * @next. NULL when out of memory. */
static struct fs_dent *dent_new(uint64_t ino, uint64_t parent, const char *name, size_t len,
				struct fs_dent *next)
{
	struct fs_dent *n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	n->ino = ino;
	n->parent = parent;
	n->len = (uint16_t)len;
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->next = next;
	return n;
}

/* Insert or (with @replace) replace under the lock; true when the edge changed. */
static bool put_locked(struct fs_dmap *m, uint64_t ino, uint64_t parent, const char *name,
		       size_t len, bool replace)
{
	struct fs_dent **pp = &m->b[dbucket(ino)];
	for (; *pp; pp = &(*pp)->next) {
		struct fs_dent *e = *pp;
		if (e->ino != ino)
			continue;
		if (!replace || (e->parent == parent && e->len == len && !memcmp(e->name, name, len)))
			return false;
		struct fs_dent *n = dent_new(ino, parent, name, len, e->next);
		if (!n)
			return false;
		*pp = n;
		free(e);
		return true;
	}
	if (m->n >= FS_DMAP_MAX) {
		m->full++;
		return false;
	}
	struct fs_dent *n = dent_new(ino, parent, name, len, m->b[dbucket(ino)]);
	if (!n)
		return false;
	m->b[dbucket(ino)] = n;
	m->n++;
	return true;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One record into @rec (18 + len bytes): ino, parent, len, then @name. */
static size_t encode(uint8_t *rec, uint64_t ino, uint64_t parent, const char *name, uint16_t len)
{
	le64(rec, ino);
	le64(rec + 8, parent);
	rec[16] = (uint8_t)len;
	rec[17] = (uint8_t)(len >> 8);
	memcpy(rec + 18, name, len);
	return 18u + len;
}

/* Rewrite the log from memory (at start, or under m->lock). */
static int compact(struct fs_dmap *m)
{
	char tmp[PATH_MAX + 8];
	int fd = fs_tmp_open(m->path, tmp, sizeof(tmp), 0600); /* srvfile.c */
	if (fd < 0)
		return fd;
	int rc = write_all(fd, (const uint8_t *)DMAP_MAGIC, 8);
	uint8_t rec[18 + RRR_NFS3_MAXNAMLEN + 1];
	for (uint32_t i = 0; i < FS_DMAP_BUCKETS && rc == 0; i++)
		for (struct fs_dent *e = m->b[i]; e && rc == 0; e = e->next)
			rc = write_all(fd, rec, encode(rec, e->ino, e->parent, e->name, e->len));
	if (rc == 0) {
		rc = fs_tmp_commit(fd, tmp, m->path);
	} else {
		close(fd);
		unlink(tmp);
	}
	if (rc == 0)
		m->compactions++;
	m->records = m->n;
	return rc;
}

/* Replay the log. False when it could not be read whole: rewrite it. */
static bool load(struct fs_dmap *m, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return false;
	if (st.st_size < 8)
		return st.st_size == 0;
	/* twice the largest map plus the slack: anything longer is not ours */
	if ((uint64_t)st.st_size >
	    (2ull * FS_DMAP_MAX + FS_DMAP_SLACK) * (18u + RRR_NFS3_MAXNAMLEN) + 8u)
		return false;
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len);
	if (!buf)
		return false;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	size_t off = 0;
	if (got >= 8 && !memcmp(buf, DMAP_MAGIC, 8)) {
		off = 8;
		while (off + 18 <= got) {
			size_t nl = (size_t)buf[off + 16] | (size_t)buf[off + 17] << 8;
			if (nl == 0 || nl > RRR_NFS3_MAXNAMLEN || off + 18 + nl > got)
				break;
			char name[RRR_NFS3_MAXNAMLEN + 1];
			memcpy(name, buf + off + 18, nl);
			name[nl] = '\0';
			if (!memchr(name, '/', nl) && strlen(name) == nl)
				put_locked(m, rd64(buf + off), rd64(buf + off + 8), name, nl, true);
			m->records++;
			off += 18 + nl;
		}
	}
	bool whole = got == len && off == got; /* else damaged or cut short: rewrite */
	free(buf);
	return whole;
}

int fs_dmap_open(struct fs_dmap *m, const char *state_dir, uint32_t export_id)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	pthread_mutex_init(&m->lock, NULL);
	m->b = calloc(FS_DMAP_BUCKETS, sizeof(*m->b));
	if (!m->b)
		return -ENOMEM;
	if (!state_dir || !*state_dir)
		return 0;
	if (snprintf(m->path, sizeof(m->path), "%s/dmap-%08x", state_dir, export_id) >=
	    (int)sizeof(m->path))
		return 0;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	bool whole = true;
	if (fd >= 0) {
		whole = load(m, fd);
		close(fd);
	}
	if (m->records > 2 * m->n + FS_DMAP_SLACK || fd < 0 || !whole) {
		int rc = compact(m);
		if (rc < 0) {
			fs_log("warning: cannot write %s (%s); paths of inodes will not survive a "
			       "restart", m->path, strerror(-rc));
			m->path[0] = '\0';
			return 0;
		}
	}
	m->fd = open(m->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (m->fd < 0) {
		fs_log("warning: cannot append to %s (%s); paths of inodes will not survive a "
		       "restart", m->path, strerror(errno));
		m->path[0] = '\0';
	}
	return 0;
}

void fs_dmap_close(struct fs_dmap *m)
{
	if (m->b) {
		for (uint32_t i = 0; i < FS_DMAP_BUCKETS; i++) {
			struct fs_dent *e = m->b[i];
			while (e) {
				struct fs_dent *n = e->next;
				free(e);
				e = n;
			}
		}
		free(m->b);
		m->b = NULL;
	}
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	pthread_mutex_destroy(&m->lock);
}

void fs_dmap_put(struct fs_dmap *m, uint64_t ino, uint64_t parent, const char *name,
		 bool replace)
{
	size_t len = strlen(name);
	if (!m->b || len == 0 || len > RRR_NFS3_MAXNAMLEN || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return;
	uint8_t rec[18 + RRR_NFS3_MAXNAMLEN + 1];
	size_t rlen = 0;
	pthread_mutex_lock(&m->lock);
	if (put_locked(m, ino, parent, name, len, replace) && m->fd >= 0) {
		rlen = encode(rec, ino, parent, name, (uint16_t)len);
		/* one write(2) per record, under the lock: records never interleave */
		if (write_all(m->fd, rec, rlen) == 0)
			m->records++;
		if (m->records > 2 * m->n + FS_DMAP_SLACK) {
			/* rewrite from memory; the old descriptor names the old file */
			close(m->fd);
			m->fd = -1;
			int rc = compact(m);
			if (rc == 0) {
				m->fd = open(m->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
				rc = m->fd < 0 ? -errno : 0;
			}
			if (rc < 0)
				fs_log("warning: cannot rewrite %s (%s); paths of new inodes will not "
				       "survive a restart", m->path, strerror(-rc));
		}
	} else if (m->full && !m->full_logged) {
		m->full_logged = true;
		fs_log("warning: the map of inode paths holds %u entries, its limit: paths of "
		       "further inodes are not remembered (path handles of those are found by a "
		       "bounded walk of the export, or go stale)", FS_DMAP_MAX);
	}
	pthread_mutex_unlock(&m->lock);
}

int fs_dmap_path(struct fs_dmap *m, uint64_t ino, uint64_t root_ino, char *out)
{
	const char *names[FS_DMAP_DEPTH];
	unsigned depth = 0;
	int rc = -ENOENT;
	if (!m->b)
		return -ENOENT;
	if (ino == root_ino) {
		snprintf(out, PATH_MAX, ".");
		return 0;
	}
	pthread_mutex_lock(&m->lock);
	uint64_t cur = ino;
	while (depth < FS_DMAP_DEPTH) {
		struct fs_dent *e = m->b[dbucket(cur)];
		while (e && e->ino != cur)
			e = e->next;
		if (!e)
			break;
		names[depth++] = e->name;
		if (e->parent == root_ino) {
			rc = 0;
			break;
		}
		cur = e->parent;
	}
	/* joined before unlocking: entries may be replaced afterwards */
	size_t used = 0;
	if (rc == 0) {
		out[0] = '\0';
		for (unsigned i = depth; i-- > 0;) {
			int n = snprintf(out + used, PATH_MAX - used, "%s%s", used ? "/" : "",
					 names[i]);
			if (n < 0 || (size_t)n >= PATH_MAX - used) {
				rc = -ENAMETOOLONG;
				break;
			}
			used += (size_t)n;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void fs_dmap_print(FILE *f, struct fs_dmap *const *maps, unsigned n)
{
	uint64_t entries = 0, records = 0, compactions = 0, full = 0;

	for (unsigned i = 0; i < n; i++) {
		struct fs_dmap *m = maps[i];

		pthread_mutex_lock(&m->lock);
		entries += m->n;
		records += m->records;
		compactions += m->compactions;
		full += m->full;
		pthread_mutex_unlock(&m->lock);
	}
	fprintf(f, "  dmap.entries %llu\n  dmap.log_records %llu\n  dmap.compactions %llu\n"
		   "  dmap.full %llu\n",
		(unsigned long long)entries, (unsigned long long)records,
		(unsigned long long)compactions, (unsigned long long)full);
}
