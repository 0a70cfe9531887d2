/* SPDX-License-Identifier: MIT */
/*
 * server/fs/fs.h - internal interfaces of rrr-server, the sample NFSv3 file
 * server: the export (root directory, handle secret, write verifier, mount
 * list), file handle resolution (fh.c), attribute and error mapping
 * (attr.c), and the NFS and MOUNT program tables (nfs3_proc.c, mount.c).
 */
#ifndef RRR_SERVER_FS_H
#define RRR_SERVER_FS_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <rrr/nfs3.h>
#include <rrr/server.h>

#define FS_MAX_MOUNTS 64u
#define FS_CACHE_BUCKETS 4096u
#define FS_CACHE_MAX 65536u
#define FS_SCAN_MAX 1000000u /* directory entries visited to find a handle */
#define FS_MISSED 64u        /* remembered failed scans */
#define FS_MISSED_SECS 2.0   /* ... for this long */

struct fs_cache_ent {
	struct fs_cache_ent *next;
	uint64_t ino;
	char path[]; /* relative to the export root, "." for the root */
};

#define FS_FDC_SLOTS 32u   /* cached open files (two descriptors each at most) */
#define FS_FDC_TTL 1.0      /* seconds an entry is used before its path is re-proved */

/* fdcache.c: data descriptors of recently used regular files. */
struct fs_fdc_ent;
struct fs_fdc {
	pthread_mutex_t lock;
	struct fs_fdc_ent *ents[FS_FDC_SLOTS];
	uint64_t tick;
	atomic_uint_fast64_t hits, misses;
};
/* A descriptor borrowed from the cache; give it back with fs_fdc_put(). */
struct fs_fdh {
	int fd;
	struct fs_fdc_ent *e;
};

struct fs_export {
	int root_fd;                 /* O_PATH | O_DIRECTORY */
	char root[PATH_MAX];         /* realpath of the export */
	char name[PATH_MAX];         /* path clients MNT (default: root) */
	dev_t dev;
	uint64_t root_ino;
	uint8_t key[16];             /* handle MAC key, persistent */
	uint32_t export_id;
	uint8_t write_verf[8];       /* changes at every start */
	bool read_only;
	bool verbose;

	pthread_mutex_t lock;        /* cache and mount list */
	struct fs_cache_ent *cache[FS_CACHE_BUCKETS];
	uint32_t cache_n;
	/* Inodes a scan did not find recently (see fh.c): bounds the cost of a
	 * client replaying handles of deleted files. */
	struct { uint64_t ino; double when; } missed[FS_MISSED];
	uint32_t missed_next;
	struct rrr_mnt_entry mounts[FS_MAX_MOUNTS];
	uint32_t nmounts;

	atomic_uint_fast64_t nfs_calls[RRR_NFS3_NPROCS];
	atomic_uint_fast64_t mnt_calls[RRR_MNT_NPROCS];
	atomic_uint_fast64_t stale, scans, escapes;
	struct fs_fdc fdc;
};

/* A resolved object: an O_PATH descriptor, its stat and its path. */
struct fs_obj {
	int fd;
	struct stat st;
	uint64_t gen;
	char path[PATH_MAX];
};

/* fh.c */
int fs_export_open(struct fs_export *ex, const char *dir, const char *state_dir);
void fs_export_close(struct fs_export *ex);
/* Build the handle of an object of the export. */
void fs_fh_make(const struct fs_export *ex, uint64_t ino, uint64_t gen, struct rrr_nfs3_fh *fh);
/* Check a handle's form and tag (not the object): NFS3_OK with the inode
 * number and generation it names, or BADHANDLE / STALE. */
uint32_t fs_fh_parse(struct fs_export *ex, const struct rrr_nfs3_fh *fh, uint64_t *ino,
		     uint64_t *gen);
/* Resolve a handle: returns NFS3_OK with @o open, or an nfsstat3. */
uint32_t fs_resolve(struct fs_export *ex, const struct rrr_nfs3_fh *fh, struct fs_obj *o);
/* Resolve @name in directory @dir (NFS3_OK or nfsstat3); handles "." and "..". */
uint32_t fs_lookup(struct fs_export *ex, const struct fs_obj *dir, const char *name,
		   struct fs_obj *o);
/* Open a path relative to the export root (beneath it, never following a
 * final symlink): NFS3_OK or nfsstat3. Used by MNT of a subdirectory. */
uint32_t fs_resolve_path(struct fs_export *ex, const char *rel, struct fs_obj *o);
/* Check a name for CREATE/REMOVE/...: NFS3_OK or an nfsstat3. */
uint32_t fs_check_name(const char *name);
/* Remember (or forget) where an inode lives. */
void fs_cache_put(struct fs_export *ex, uint64_t ino, const char *path);
/* Child path of @dir for @name into @out (PATH_MAX); NFS3_OK or NAMETOOLONG. */
uint32_t fs_child_path(const struct fs_obj *dir, const char *name, char *out);
/* Generation of an open object (statx birth time, 0 when unknown). */
uint64_t fs_gen(int fd);
/* Re-open @o's O_PATH descriptor with @flags (O_RDONLY, O_WRONLY...). */
int fs_reopen(const struct fs_obj *o, int flags);
void fs_obj_close(struct fs_obj *o);

/* fdcache.c (see its essay). Locking: internal mutex; never blocks on I/O. */
void fs_fdc_init(struct fs_fdc *c);
void fs_fdc_destroy(struct fs_fdc *c);
/* Borrow the cached descriptor of kind @flags (O_RDONLY or O_WRONLY) for
 * (@ino, @gen), only while its path was proved less than FS_FDC_TTL ago:
 * 0 with @h filled, or -ENOENT (take the slow path, then fs_fdc_offer). */
int fs_fdc_get(struct fs_fdc *c, uint64_t ino, uint64_t gen, int flags, struct fs_fdh *h);
void fs_fdc_put(struct fs_fdc *c, struct fs_fdh *h);
/* Offer a duplicate of @fd, just opened by the full resolution of (@ino, @gen). */
void fs_fdc_offer(struct fs_fdc *c, uint64_t ino, uint64_t gen, int flags, int fd);
/* Drop the entries of @ino / all entries (descriptors close at last put). */
void fs_fdc_forget(struct fs_fdc *c, uint64_t ino);
void fs_fdc_clear(struct fs_fdc *c);

/* attr.c */
void fs_fattr(const struct fs_export *ex, const struct stat *st, struct rrr_nfs3_fattr *a);
void fs_post_op(const struct fs_export *ex, int fd, struct rrr_nfs3_post_op_attr *p);
void fs_wcc_pre(const struct stat *st, struct rrr_nfs3_wcc_data *w);
uint32_t fs_errno_to_stat(int err);
/* Apply a sattr3 to @o; NFS3_OK or nfsstat3. */
/* True for an AUTH_SYS caller with uid 0 (may chown, may set S_ISUID/S_ISGID). */
bool fs_caller_root(const struct rrr_rpc_call *call);
uint32_t fs_apply_sattr(const struct fs_obj *o, const struct rrr_nfs3_sattr *s,
			const struct rrr_rpc_call *call);
uint32_t fs_access(const struct stat *st, const struct rrr_rpc_call *call, uint32_t want);

/* nfs3_proc.c, mount.c */
extern const struct rrr_svc_proc fs_nfs3_procs[RRR_NFS3_NPROCS];
extern const struct rrr_svc_proc fs_mnt_procs[RRR_MNT_NPROCS];

/* main.c: log helpers */
void fs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
