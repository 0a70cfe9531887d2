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

#include <rrr/nfs3_xdr.h>
#include <rrr/server.h>

#define FS_MAX_MOUNTS 64u
#define FS_MAX_EXPORTS 16u   /* exports of one server (FS_CONF_MAX_EXPORTS) */
#define FS_SCAN_MAX 1000000u /* directory entries visited to find a path handle */
#define FS_MISSED 64u        /* remembered failed scans */
#define FS_MISSED_SECS 2.0   /* ... for this long */
#define FS_DMAP_BUCKETS 65536u
#define FS_DMAP_MAX 4000000u /* inodes whose (parent, name) the server remembers */
#define FS_DMAP_SLACK 4096u  /* log records beyond twice the entries before it is rewritten */
#define FS_DMAP_DEPTH 512u   /* directory levels a remembered path may have */

/*
 * The key that names an object in path handles and in the dmap: its inode
 * number, with FS_KEY_DIR set for directories. Directories and other
 * objects are two number spaces on some file systems: an overlayfs whose
 * layers are on different file systems (a 9p or virtiofs lower, a tmpfs
 * upper) and that has no xino reports the real layer's inode number for a
 * file but an overlay-private, non-persistent one for a directory, so a
 * file and a directory may share a number.
 */
#define FS_KEY_DIR (UINT64_C(1) << 63)
static inline uint64_t fs_ino_key(const struct stat *st)
{
	return (uint64_t)st->st_ino | (S_ISDIR(st->st_mode) ? FS_KEY_DIR : 0);
}

/* dmap.c: inode -> (parent inode, name), persistent in the state directory. */
struct fs_dent;
struct fs_dmap {
	pthread_mutex_t lock;
	struct fs_dent **b;
	uint64_t n, records;
	uint64_t compactions, full;  /* log rewrites; edges not kept, the map full */
	bool full_logged;
	int fd;                      /* O_APPEND log, -1 without a state dir */
	char path[PATH_MAX];
};

/* How handles are made (fh.c's essay). */
enum fs_fh_mode {
	FS_FH_KERNEL, /* name_to_handle_at / open_by_handle_at */
	FS_FH_PATH,   /* inode + birth time, found through the dmap (fallback) */
};

/* cred.c: the identity a request runs with (after squashing). */
struct fs_cred {
	uint32_t uid, gid, ngids;
	uint32_t gids[RRR_RPC_AUTH_SYS_MAX_GIDS];
	uint64_t who; /* a digest of all of the above, for the fd cache */
};

#define FS_FDC_SLOTS 32u   /* cached open files (three descriptors each at most) */
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
	int mount_fd;                /* O_RDONLY root, for open_by_handle_at (-1: none) */
	char root[PATH_MAX];         /* realpath of the export */
	char name[PATH_MAX];         /* path clients MNT (default: root) */
	dev_t dev;
	uint64_t root_ino;           /* the root's key (fs_ino_key) */
	uint64_t mnt_id;             /* statx mount id of root_fd (0: unknown) */
	bool whole_fs;               /* the root is the root of its file system */
	bool overlay;                /* on overlayfs: a directory's birth time changes at copy-up */
	enum fs_fh_mode fh_mode;
	char fh_why[160];            /* why the fallback mode is in use */
	bool as_caller;              /* requests run with the caller's fsuid/fsgid/groups */
	bool no_root_squash;         /* AUTH_SYS uid 0 stays root (default: squashed) */
	uint32_t anon_uid, anon_gid; /* squashed and AUTH_NONE callers */
	uint8_t key[16];             /* handle MAC key, persistent */
	uint32_t export_id;
	unsigned index;              /* in the export table (exports.c), config order */
	uint8_t write_verf[8];       /* changes at every start */
	bool read_only;
	bool verbose;
	uint32_t direct_min;         /* WRITEs of this many bytes go O_DIRECT; 0: never */

	pthread_mutex_t lock;        /* missed list and mount list */
	struct fs_dmap dmap;
	/* Inodes a scan did not find recently (see fh.c): bounds the cost of a
	 * client replaying handles of deleted files. */
	struct { uint64_t ino; double when; } missed[FS_MISSED];
	uint32_t missed_next;
	struct rrr_mnt_entry mounts[FS_MAX_MOUNTS];
	uint32_t nmounts;

	atomic_uint_fast64_t nfs_calls[RRR_NFS3_NPROCS];
	atomic_uint_fast64_t mnt_calls[RRR_MNT_NPROCS];
	atomic_uint_fast64_t stale, scans, escapes, khandles, phandles;
	atomic_uint_fast64_t direct_writes, direct_bounced;
	struct fs_fdc fdc;
};

/* A resolved object: an O_PATH descriptor, its stat and (where known) its
 * path relative to the export root ("" when unknown: kernel handles of
 * non-directories need none). gen: the birth time for path handles, the
 * handle's tag for kernel handles (the fd cache's key with the inode). */
struct fs_obj {
	int fd;
	struct stat st;
	uint64_t gen;
	char path[PATH_MAX];
};

/* fh.c */
/* SipHash-2-4 of @in (@len bytes) under @key: what seals handles and
 * makes export ids. Pure. */
uint64_t fs_siphash24(const uint8_t key[16], const uint8_t *in, size_t len);
int fs_export_open(struct fs_export *ex, const char *dir, const char *state_dir);
void fs_export_close(struct fs_export *ex);
/* Build the handle of @o, an object of the export: a kernel handle where
 * the mode and the file system allow and it fits, else a path handle
 * (which also records @o's path where known). Never fails. */
void fs_fh_make(struct fs_export *ex, const struct fs_obj *o, struct rrr_nfs3_fh *fh);
/* One line for the start-up log: which handle mode, what it cannot do. */
void fs_fh_describe(const struct fs_export *ex, char *out, size_t len);
/* The export id a handle carries (not checked against any tag): 0, or
 * -EINVAL when it is too short or not one of ours. */
int fs_fh_export_id(const struct rrr_nfs3_fh *fh, uint32_t *id);
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
/* Remember that @ino is named @name in directory @parent_ino. @replace:
 * the edge is authoritative (RENAME, a scan that found the inode); else
 * (LOOKUP, LINK of a file with several links) a known edge of @ino is
 * kept: any of its names will do, and a client alternating between the
 * names of one inode must not make the map change, or its log grow. */
void fs_cache_put(struct fs_export *ex, uint64_t ino, uint64_t parent_ino, const char *name,
		  bool replace);
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
int fs_fdc_get(struct fs_fdc *c, uint64_t ino, uint64_t gen, uint64_t who, int flags,
	       struct fs_fdh *h);
void fs_fdc_put(struct fs_fdc *c, struct fs_fdh *h);
/* Offer a duplicate of @fd, just opened by the full resolution of (@ino, @gen)
 * with the permission checks of identity @who (fs_cred.who): only a request
 * of the same identity gets it back. */
void fs_fdc_offer(struct fs_fdc *c, uint64_t ino, uint64_t gen, uint64_t who, int flags, int fd);
/* Drop the entries of @ino / all entries (descriptors close at last put). */
void fs_fdc_forget(struct fs_fdc *c, uint64_t ino);
void fs_fdc_clear(struct fs_fdc *c);

/* attr.c */
void fs_fattr(const struct fs_export *ex, const struct stat *st, struct rrr_nfs3_fattr *a);
void fs_post_op(const struct fs_export *ex, int fd, struct rrr_nfs3_post_op_attr *p);
void fs_wcc_pre(const struct stat *st, struct rrr_nfs3_wcc_data *w);
uint32_t fs_errno_to_stat(int err);

/* WRITE data (write_data.c). Whether a WRITE of @count bytes may go direct
 * (export setting, alignment, bounce limit); whether [off, off + count) of
 * @fd (size @size) holds no data yet; an O_DIRECT descriptor for @o or -1;
 * and the write itself: pwritev through @dfd when >= 0, else @fd, then the
 * sync a->stable asks for, filling r's count, committed and verifier. */
bool fs_write_direct_eligible(const struct fs_export *ex, const struct rrr_nfs3_write_args *a,
			      uint32_t count);
bool fs_write_new_data(int fd, uint64_t off, uint32_t count, off_t size);
int fs_write_open_direct(const struct fs_export *ex, const struct fs_obj *o);
void fs_write_data(struct fs_export *ex, int fd, int dfd, const struct rrr_nfs3_write_args *a,
		   uint32_t count, struct rrr_nfs3_write_res *r);
/* The request's identity (fs_cred_current(), root already squashed) is
 * root: may chown, may make devices, may set S_ISUID/S_ISGID anywhere. Only
 * on the thread that runs the request. */
bool fs_caller_root(void);
/* The request's identity may set the set-ID bits on a file of @owner: root,
 * or the owner (the rule of chmod(2)). Only on the request's thread. */
bool fs_caller_may_setid(uid_t owner);
/* Apply a sattr3 to @o as the request's identity; NFS3_OK or nfsstat3. */
uint32_t fs_apply_sattr(const struct fs_export *ex, const struct fs_obj *o,
			const struct rrr_nfs3_sattr *s);
/* ACCESS bits of @want the caller (the thread's identity) has on @o. */
uint32_t fs_access(const struct fs_export *ex, const struct fs_obj *o, uint32_t want);
/* @ss's address as text into @out (@len bytes), a v4-mapped one (the
 * dual-stack listener) as IPv4, "?" for another family; never fails. */
void fs_addr_text(const struct sockaddr_storage *ss, char *out, size_t len);
/* The caller of @req's address as text ("unknown" when it has none). */
void fs_peer_text(struct rrr_svc_req *req, char *out, size_t len);
/* A data descriptor of @o opened as the caller, with knfsd's owner override
 * (the owner may read/write whatever the mode): fd or -errno. */
int fs_open_data(const struct fs_export *ex, const struct fs_obj *o, int flags);

/* dmap.c (see its essay). Locking: internal mutex. */
int fs_dmap_open(struct fs_dmap *m, const char *state_dir, uint32_t export_id);
void fs_dmap_close(struct fs_dmap *m);
/* Record an edge; appended to the log when new or changed (@replace false:
 * an existing edge of @ino stays). The log is rewritten from memory once it
 * holds FS_DMAP_SLACK records more than twice the live entries, so its size
 * stays bounded by the map's, whatever clients do. */
void fs_dmap_put(struct fs_dmap *m, uint64_t ino, uint64_t parent, const char *name,
		 bool replace);
/* "  dmap.NAME value" lines: entries, log records, compactions, full. */
void fs_dmap_print(FILE *f, struct fs_dmap *const *maps, unsigned n);
/* The remembered path of @ino relative to the root ("a/b"; "." for the root):
 * 0, -ENOENT (unknown) or -ENAMETOOLONG. A hint: open it and check. */
int fs_dmap_path(struct fs_dmap *m, uint64_t ino, uint64_t root_ino, char *out);

/* cred.c (see its essay). The per-thread identity of the calling worker. */
/* Decide whether requests can run as their callers (the server is root).
 * The process umask is left alone: new objects get their client's mode
 * with an explicit chmod (nfs3_proc.c), the server's files theirs too. */
void fs_cred_init(struct fs_export *ex);
/* The identity @call runs with: AUTH_SYS ids, root squashed unless
 * ex->no_root_squash; AUTH_NONE and others get the anonymous ids. */
void fs_cred_of_call(const struct fs_export *ex, const struct rrr_rpc_call *call,
		     struct fs_cred *c);
/* Make the calling thread act as @c (fsuid, fsgid, supplementary groups,
 * per thread): 0 or -errno (then the request must fail with ACCES). */
int fs_cred_enter(const struct fs_export *ex, const struct fs_cred *c);
/* Back to the server's own identity (fsuid 0) after a request. */
void fs_cred_leave(void);
/* Around handle resolution (open_by_handle_at needs CAP_DAC_READ_SEARCH,
 * dropped from the effective set while fsuid is not 0): nestable. */
void fs_priv_begin(void);
void fs_priv_end(void);
/* The identity the thread acts as now (the last fs_cred_enter). */
const struct fs_cred *fs_cred_current(void);
/* Run @fn(@arg) as @c on the calling worker's agent thread (created on
 * first use), waiting for it: the worker's own credentials never change
 * (RDMA devices refuse writes from a thread whose credentials changed).
 * Without ex->as_caller, runs @fn here. 0, or -errno when the identity
 * could not be taken (@fn did not run) or no agent could be started.
 * MAY BLOCK (the file system work of a request). */
int fs_as_caller(const struct fs_export *ex, const struct fs_cred *c, void (*fn)(void *),
		 void *arg);

/* srvfile.c (see its essay): the server's own files. */
/* Create @path's temporary ("@path.tmp", into @tmp of @len bytes) with
 * O_EXCL|O_NOFOLLOW and exactly @mode (a stale or planted entry there is
 * unlinked first, never followed): the descriptor, or -errno. */
int fs_tmp_open(const char *path, char *tmp, size_t len, mode_t mode);
/* fsync and close @fd, rename @tmp over @path (removed on failure). 0 or
 * -errno; @fd is closed either way. MAY BLOCK. */
int fs_tmp_commit(int fd, const char *tmp, const char *path);
/* Replace @path with @len bytes of @buf, mode exactly @mode, atomically
 * (a temporary renamed over it). 0 or -errno. MAY BLOCK. */
int fs_write_file(const char *path, const void *buf, size_t len, mode_t mode);
/* Create the state dir @dir (0700) when it is missing; refuse one that is
 * not a directory, is another user's, or group- or other-writable: 0, or
 * -errno with a sentence (what is wrong, what to do) in @err. A dir that
 * cannot be created is not an error here (the server then runs without). */
int fs_state_dir_check(const char *dir, char *err, size_t len);

/* exports.c (see its essay): the export table, filled before the server
 * runs and fixed afterwards (lookups take no lock). */
/* Add @ex (opened) as the next export: 0, -ENOSPC past FS_MAX_EXPORTS, or
 * -EEXIST when another export has the same id. Sets ex->index. Not
 * thread-safe: before the server runs. */
int fs_exports_add(struct fs_export *ex);
void fs_exports_clear(void);
unsigned fs_exports_count(void);
/* Export @i (config order) or NULL. */
struct fs_export *fs_exports_at(unsigned i);
/* The export @fh names; the first export when it names none of ours. */
struct fs_export *fs_exports_by_fh(const struct rrr_nfs3_fh *fh);
/* The export of an NFS call: the one its first file handle names (peeked,
 * @args is not moved); the first export without one. */
struct fs_export *fs_exports_by_args(const struct rrr_xdr *args);
/* The export a MNT path names ("/" only with one export), the directory
 * relative to its root into @rel ("." for the root); NULL: none. */
struct fs_export *fs_exports_by_path(const char *path, char *rel, size_t len);
/* The calling thread's current request export (the first export when
 * none was set). Never blocks. */
void fs_req_export_set(struct fs_export *ex);
struct fs_export *fs_req_export(void);

/* nfs3_proc.c, mount.c */
extern const struct rrr_svc_proc fs_nfs3_procs[RRR_NFS3_NPROCS];
extern const struct rrr_svc_proc fs_mnt_procs[RRR_MNT_NPROCS];

/* main.c: log helpers */
void fs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
