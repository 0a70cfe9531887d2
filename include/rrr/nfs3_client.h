/* SPDX-License-Identifier: MIT */
/*
 * rrr/nfs3_client.h - an NFS version 3 client over rrr (client/nfs3_clnt.c).
 *
 * MOUNT over TCP (like the kernel client's mountproto=tcp) or over the NFS
 * connection, then typed calls over one or more rrr_clnt connections to the
 * server (RDMA or TCP; opts.nconnect, like the kernel's nconnect mount
 * option), and pipelined whole-range READ/WRITE with a queue depth. The
 * types (handles, attributes, results) and the status codes are those of
 * rrr/nfs3_xdr.h.
 *
 * Errors: every call returns 0 or a NEGATIVE errno, like the rest of the
 * library. When the call could not be made or answered (connection,
 * timeout, garbage) the errno says so and a sentence is in
 * rrr_last_error(). When the server answered with an NFS error, the errno is
 * the one rrr_nfs3_stat_to_errno() gives (NFS3ERR_NOENT -> -ENOENT,
 * NFS3ERR_STALE -> -ESTALE, NFS3ERR_JUKEBOX -> -EAGAIN, ...) and
 * rrr_nfs3_last_status() returns the exact nfsstat3 on the same thread.
 *
 * Threads: a struct rrr_nfs3 may be used by several threads at once, except
 * rrr_nfs3_umount(), which no call may overlap. Every call that talks to
 * the server MAY BLOCK (up to opts.timeout_ms per RPC, longer for the
 * multi-call helpers); the accessors (root, rsize, wsize, nconnect, stats)
 * never block.
 *
 * Connections (nconnect > 1): every call, synchronous or one of a
 * pipelined transfer, goes to the next connection in turn (round-robin over
 * all of them). NFS promises no order between calls in flight at the same
 * time, and across connections they do overtake each other: a call issued
 * after another one COMPLETED sees its effects, nothing more is guaranteed.
 * Each connection recovers on its own (reconnect, idempotent retry); a
 * failure of one fails only the calls sent on it.
 *
 * Ownership: output structs and buffers belong to the caller and are
 * written only on success (0); the handle owns its connections.
 */
#ifndef RRR_NFS3_CLIENT_H
#define RRR_NFS3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/client.h>
#include <rrr/nfs3_xdr.h>
#include <rrr/stats.h>
#include <rrr/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

struct rrr_nfs3;

struct rrr_nfs3_opts {
	const char *transport;     /* "rdma" (default) or "tcp" */
	const char *provider;      /* "soft" (default) or "verbs" */
	const char *provider_opts;
	const char *host;          /* required */
	const char *port;          /* NFS port, default "20049" */
	const char *mount_port;    /* MOUNT over TCP on this port; NULL or "0":
				    * send MNT over the NFS connection */
	const char *export_path;   /* default "/" */
	uint32_t rsize, wsize;     /* default 1 MiB, capped by FSINFO and 1 MiB */
	int timeout_ms;            /* default 30000 */
	uint32_t uid, gid;         /* AUTH_SYS credentials */
	bool auth_none;            /* send AUTH_NONE instead of AUTH_SYS */
	bool no_remote_inv;        /* do not offer Send With Invalidate (RFC 8797) */
	bool fail_fast;            /* rrr_clnt_opts.fail_fast: while the server is
				    * unreachable calls fail at once (-ECONNRESET,
				    * -ENOTCONN) instead of being re-sent after the
				    * reconnect (hard) */
	unsigned nconnect;         /* connections to the server, 1 (default) ..
				    * RRR_NFS3_MAX_NCONNECT; calls are spread
				    * over them round-robin */
	enum rrr_wait_mode wait_mode; /* how the connections' progress threads
				       * wait (rrr/wait.h), default adaptive */
	uint32_t spin_us;          /* their spin budget, 0 = default */
};

#define RRR_NFS3_MAX_NCONNECT 16u

/* Fill @opts with the defaults shown in struct rrr_nfs3_opts (uid/gid of
 * the calling process, nconnect 1, MOUNT over TCP on port 20048). Call it
 * before setting fields, so fields added later get their defaults. Cannot
 * fail; does not block; @opts belongs to the caller. */
void rrr_nfs3_opts_init(struct rrr_nfs3_opts *opts);

/* Connect (opts->nconnect connections, one after the other, all to the same
 * server and port), MOUNT the export, FSINFO the root over the first one.
 * rsize/wsize are also capped by every connection's payload limit. On
 * success *@out is a new handle owned by the caller (rrr_nfs3_umount());
 * @opts and its strings are copied and may be freed at once. Errors:
 * -EINVAL (no host; nconnect 0 or above RRR_NFS3_MAX_NCONNECT: a caller
 * that filled the struct without rrr_nfs3_opts_init() gets this), -ENOMEM,
 * those of rrr_clnt_create() for any connection (then none is left open),
 * -EACCES or -ENOENT when the server refuses the MOUNT (the export is not
 * there or not for this client; rrr_nfs3_last_status() says
 * NFS3ERR_ACCES/NFS3ERR_NOENT), the -errno of an FSINFO error. A sentence
 * is in rrr_last_error(). MAY BLOCK. */
int rrr_nfs3_mount(const struct rrr_nfs3_opts *opts, struct rrr_nfs3 **out);

/* UMNT (best effort), disconnect every connection, free @nfs (NULL is
 * ignored). No call may be in progress or start on @nfs from any thread.
 * MAY BLOCK (up to the timeout for the UMNT). */
void rrr_nfs3_umount(struct rrr_nfs3 *nfs);

/* The handle of the mounted export's root, valid as long as @nfs. Never
 * NULL; does not block; thread-safe. */
const struct rrr_nfs3_fh *rrr_nfs3_root(const struct rrr_nfs3 *nfs);

/* The largest READ / WRITE payload of one call (bytes, <= RRR_NFS3_MAX_DATA),
 * fixed at mount. Does not block; thread-safe. */
uint32_t rrr_nfs3_rsize(const struct rrr_nfs3 *nfs);
uint32_t rrr_nfs3_wsize(const struct rrr_nfs3 *nfs);

/* Number of connections (opts.nconnect). Does not block; thread-safe. */
unsigned rrr_nfs3_nconnect(const struct rrr_nfs3 *nfs);

/* Counters summed over every connection into *@st (the caller's): event
 * counters and bytes add up; credits and max_credits are the sums of the
 * connections' grants (calls the client may have in flight in all);
 * inline_send/inline_recv are the smallest negotiated. Thread-safe (each
 * counter read atomically, not all at one instant); does not block. */
void rrr_nfs3_stats(struct rrr_nfs3 *nfs, struct rrr_xprt_stats *st);

/* Counters of connection @idx (0 .. nconnect-1; 0 carries MOUNT when there
 * is no mount port, and FSINFO) into *@st. Returns 0, or -EINVAL when @idx
 * is out of range. Thread-safe; does not block. */
int rrr_nfs3_conn_stats(struct rrr_nfs3 *nfs, unsigned idx, struct rrr_xprt_stats *st);

/* The nfsstat3 (enum rrr_nfsstat3) the server answered to the last
 * rrr_nfs3_* call of this thread that returns int: RRR_NFS3_OK when that
 * call succeeded or failed without an NFS error (transport, timeout, bad
 * arguments), else the exact status behind its negative errno (e.g.
 * NFS3ERR_BADHANDLE and NFS3ERR_STALE, which map to different errnos but
 * say more). Thread-local; does not block. */
uint32_t rrr_nfs3_last_status(void);

/*
 * The typed calls below each send one RPC (a few for lookup_path and
 * readdirplus, and a LOOKUP or GETATTR when the reply left out what was
 * asked) on the next connection and wait for its reply. Each returns 0, or
 * a negative errno: the transport's (-ETIMEDOUT, -ECONNRESET, -EPROTO the
 * server refused the RPC, -EBADMSG undecodable reply, -ENOMEM), -EINVAL or
 * -ENAMETOOLONG for a name that is empty, contains '/', or is longer than
 * RRR_NFS3_MAXNAMLEN (nothing is sent), or the errno of the server's NFS
 * error (rrr_nfs3_stat_to_errno(); rrr_nfs3_last_status() has the
 * nfsstat3). Outputs are written only on success and may be NULL where
 * said. Thread-safe; MAY BLOCK (up to opts.timeout_ms per RPC, more across
 * a reconnect). Calls marked non-idempotent (CREATE, MKDIR, SYMLINK,
 * REMOVE, RMDIR, RENAME, WRITE) are re-sent after a reconnect only without
 * opts.fail_fast, and then the server's duplicate request cache decides.
 */

/* NULL procedure: 0 when the server answers. */
int rrr_nfs3_null(struct rrr_nfs3 *nfs);
/* GETATTR @fh into *@attr (may be NULL: only checks the handle). */
int rrr_nfs3_getattr(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		     struct rrr_nfs3_fattr *attr);
/* SETATTR @fh to *@sattr (mode, uid, gid, size, times as its set_ flags say). */
int rrr_nfs3_setattr(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		     const struct rrr_nfs3_sattr *sattr);
/* LOOKUP @name in @dir: its handle into *@fh, its attributes into *@attr
 * (each may be NULL). */
int rrr_nfs3_lookup(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		    struct rrr_nfs3_fh *fh, struct rrr_nfs3_fattr *attr);
/* Walk a '/'-separated path from the root (empty or "/" = root), one LOOKUP
 * per component; *@fh and *@attr (each may be NULL) of the last one. The
 * error is that of the component that failed. */
int rrr_nfs3_lookup_path(struct rrr_nfs3 *nfs, const char *path, struct rrr_nfs3_fh *fh,
			 struct rrr_nfs3_fattr *attr);
/* READLINK @fh into @buf (NUL-terminated); -ENAMETOOLONG when the target
 * and its NUL do not fit in @cap bytes. */
int rrr_nfs3_readlink(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, char *buf,
		      size_t cap);
/* CREATE a regular file @name in @dir with @mode: UNCHECKED (an existing
 * file is truncated), or GUARDED when @guarded (-EEXIST when it exists).
 * Its handle into *@fh (may be NULL). Not idempotent. */
int rrr_nfs3_create(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		    uint32_t mode, bool guarded, struct rrr_nfs3_fh *fh);
/* MKDIR @name in @dir with @mode; its handle into *@fh (may be NULL). Not
 * idempotent. */
int rrr_nfs3_mkdir(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		   uint32_t mode, struct rrr_nfs3_fh *fh);
/* SYMLINK @name in @dir pointing at @target (-ENAMETOOLONG above
 * RRR_NFS3_MAXPATHLEN); its handle into *@fh (may be NULL). Not idempotent. */
int rrr_nfs3_symlink(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		     const char *target, struct rrr_nfs3_fh *fh);
/* REMOVE the non-directory @name in @dir. Not idempotent. */
int rrr_nfs3_remove(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name);
/* RMDIR the empty directory @name in @dir (-ENOTEMPTY otherwise). Not
 * idempotent. */
int rrr_nfs3_rmdir(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name);
/* RENAME @from in @from_dir to @to in @to_dir. Not idempotent. */
int rrr_nfs3_rename(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *from_dir,
		    const char *from, const struct rrr_nfs3_fh *to_dir, const char *to);
/* COMMIT the whole file @fh; the server's write verifier into @verf (may be
 * NULL), to compare with those of UNSTABLE WRITE replies. */
int rrr_nfs3_commit(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint8_t verf[8]);
/* FSSTAT of the file system holding @fh into *@res (not NULL; zeroed first). */
int rrr_nfs3_fsstat(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		    struct rrr_nfs3_fsstat_res *res);

/* Called once per directory entry by rrr_nfs3_readdirplus(), on the
 * calling thread; @e is valid during the call only. Non-zero stops. */
typedef int (*rrr_nfs3_dirent_fn)(void *arg, const struct rrr_nfs3_dirent *e);
/* READDIRPLUS the whole directory @dir, as many calls as it takes; @fn runs
 * once per entry ("." and ".." skipped); a non-zero return from @fn stops
 * the walk and is returned as is. -ENOMEM when the entry array cannot be
 * allocated. */
int rrr_nfs3_readdirplus(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir,
			 rrr_nfs3_dirent_fn fn, void *arg);

/* One READ at @offset into @iov (@niov <= RRR_XDR_PAYLOAD_MAX_IOV buffers,
 * together at most RRR_NFS3_MAX_DATA bytes, else -EINVAL): the data is the
 * DDP payload (on RDMA the server writes straight into @iov, registered for
 * this call only). *@count gets the bytes read, *@eof whether the file ends
 * there (neither NULL). The buffers must stay valid until the call returns. */
int rrr_nfs3_read(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		  const struct iovec *iov, unsigned niov, uint32_t *count, bool *eof);
/* One WRITE of @iov (limits as for rrr_nfs3_read) at @offset with @stable
 * (enum rrr_nfs3_stable); *@count (not NULL) gets the bytes the server took.
 * Not idempotent. */
int rrr_nfs3_write(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		   const struct iovec *iov, unsigned niov, uint32_t stable, uint32_t *count);

/* ------------------------------------------------------------ asynchronous I/O */
/*
 * Asynchronous READ, WRITE and COMMIT: the one way NFS I/O is encoded (the
 * synchronous calls above, the pipelined helpers below, rrr-client,
 * rrr-bench and the fio engine all go through it). The caller owns a
 * struct rrr_nfs3_io per call in flight, fills its "in" fields, submits it,
 * and reads the "out" fields in the completion callback:
 *
 *   io->op = RRR_NFS3_IO_WRITE; io->fh = fh; io->offset = off;
 *   io->iov = iov; io->niov = 1; io->stable = RRR_NFS3_UNSTABLE;
 *   rc = rrr_nfs3_io_submit(nfs, io, done, arg);      // done(io, status, arg)
 *
 * The data is the call's DDP payload: on RDMA the server reads it from (or
 * writes it into) the caller's iovecs, each registered for this call only
 * and invalidated before the callback runs. @iov, the buffers and @io stay
 * the caller's to keep valid until the callback has run.
 */
enum rrr_nfs3_io_op {
	RRR_NFS3_IO_READ = 1,
	RRR_NFS3_IO_WRITE = 2,
	RRR_NFS3_IO_COMMIT = 3,
};

struct rrr_nfs3_io;

/* Completion of an I/O, on the connection's progress thread: @status is 0
 * (NFS3_OK), the -errno of the server's nfsstat3 (io->nfs_status has it:
 * rrr_nfs3_stat_to_errno()), or a transport error as for rrr_clnt_call_async
 * (-ETIMEDOUT, -ECONNRESET, -ECANCELED, -EPROTO with io->rpc_stat ...). It
 * may submit further I/O; it must not block. */
typedef void (*rrr_nfs3_io_done_fn)(struct rrr_nfs3_io *io, int status, void *arg);

struct rrr_nfs3_io {
	/* in */
	enum rrr_nfs3_io_op op;
	struct rrr_nfs3_fh fh;
	uint64_t offset;
	const struct iovec *iov; /* READ: where the data lands; WRITE: the data */
	unsigned niov;		 /* READ/WRITE: 1 .. RRR_XDR_PAYLOAD_MAX_IOV */
	uint32_t count;		 /* COMMIT: bytes from @offset (0: to the end) */
	uint32_t stable;	 /* WRITE: enum rrr_nfs3_stable */
	int timeout_ms;		 /* 0: the connection's default; < 0: none */
	/* out, valid in the callback */
	uint32_t nfs_status; /* nfsstat3 of the reply (RRR_NFS3_OK when status is 0) */
	uint32_t rpc_stat;   /* as rrr_call.rpc_stat, when status is -EPROTO */
	uint32_t done;	     /* READ: bytes read; WRITE: bytes the server took */
	bool eof;	     /* READ: the file ends there */
	uint32_t committed;  /* WRITE: enum rrr_nfs3_stable the server gave */
	uint8_t verf[8];     /* WRITE, COMMIT: the server instance's write verifier */
	/* private to the library */
	struct {
		struct rrr_call call;
		union {
			struct rrr_nfs3_read_args r;
			struct rrr_nfs3_write_args w;
			struct rrr_nfs3_commit_args c;
		} args;
		union {
			struct rrr_nfs3_read_res r;
			struct rrr_nfs3_write_res w;
			struct rrr_nfs3_commit_res c;
		} res;
		rrr_nfs3_io_done_fn done;
		void *arg;
	} priv;
};

/*
 * rrr_nfs3_io_submit - send @io on the next connection of @nfs (round-robin
 * over nconnect) with the mount's credentials and timeout. Never blocks
 * (the call is queued behind the connection's credits). Returns 0, then
 * @done runs exactly once; or -EINVAL (unknown op, no or too many iovecs,
 * more than RRR_NFS3_MAX_DATA bytes), -ENOMEM, -ESHUTDOWN (the connection
 * is being destroyed), with a sentence in rrr_last_error(): then @done never
 * runs. Thread-safe: any thread may submit, also from a callback.
 */
int rrr_nfs3_io_submit(struct rrr_nfs3 *nfs, struct rrr_nfs3_io *io, rrr_nfs3_io_done_fn done,
		       void *arg);
/*
 * rrr_nfs3_io_submit_clnt - as rrr_nfs3_io_submit, on a connection the
 * caller made itself (rrr_clnt_create() to the server's NFS port, program
 * RRR_NFS3_PROGRAM), with @cred (NULL: AUTH_NONE). For programs that manage
 * their own connections (a benchmark, an I/O engine). Same errors.
 */
int rrr_nfs3_io_submit_clnt(struct rrr_clnt *clnt, const struct rrr_rpc_cred *cred,
			    struct rrr_nfs3_io *io, rrr_nfs3_io_done_fn done, void *arg);

/* Progress callback for the pipelined helpers: bytes done so far. Runs on
 * the calling thread, between completions; must not call back into @nfs. */
typedef void (*rrr_nfs3_progress_fn)(void *arg, uint64_t done);

/*
 * Pipelined I/O: move @len bytes between @buf and the file at @offset with
 * up to @qd READs/WRITEs in flight, each at most rsize/wsize bytes. WRITE
 * uses UNSTABLE and ends with COMMIT (restarting from the first byte once if
 * the write verifier changed), unless @stable is FILE_SYNC/DATA_SYNC.
 * rrr_nfs3_read_all stops at EOF; *done gets the bytes moved. @split > 0
 * hands each call's payload to the transport as two iovecs cut @split bytes
 * into the chunk (exercises registration holes). With nconnect > 1 the
 * calls go round-robin over the connections (@qd is the total in flight,
 * not per connection); COMMIT is sent only after every WRITE on every
 * connection has completed, and the verifiers of all WRITE replies and of
 * the COMMIT must agree, or the range is written again with FILE_SYNC.
 * Returns 0 or the first error (as for the typed calls above; -EINVAL when
 * @offset + @len overflows, -EIO when the server wrote nothing, -EBADMSG
 * when it read more than asked); every call in flight has completed before
 * it returns, so @buf is the caller's again. Thread-safe; MAY BLOCK.
 */
int rrr_nfs3_read_all(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		      void *buf, size_t len, unsigned qd, uint32_t split, size_t *done,
		      rrr_nfs3_progress_fn progress, void *arg);
int rrr_nfs3_write_all(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		       const void *buf, size_t len, unsigned qd, uint32_t split, uint32_t stable,
		       rrr_nfs3_progress_fn progress, void *arg);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_NFS3_CLIENT_H */
