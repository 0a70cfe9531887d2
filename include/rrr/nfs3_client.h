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
	bool fail_fast;            /* rrr_clnt_opts.fail_fast: a connection loss fails
				    * non-idempotent calls (-ECONNRESET) instead of
				    * re-sending them after the reconnect (hard) */
	unsigned nconnect;         /* connections to the server, 1 (default) ..
				    * RRR_NFS3_MAX_NCONNECT; calls are spread
				    * over them round-robin */
	enum rrr_wait_mode wait_mode; /* how the connections' progress threads
				       * wait (rrr/wait.h), default adaptive */
	uint32_t spin_us;          /* their spin budget, 0 = default */
};

#define RRR_NFS3_MAX_NCONNECT 16u

void rrr_nfs3_opts_init(struct rrr_nfs3_opts *opts);
/* Connect (opts->nconnect connections, one after the other, all to the same
 * server and port), MOUNT the export, FSINFO the root over the first one.
 * rsize/wsize are also capped by every connection's payload limit. Errors:
 * -EINVAL (no host; nconnect 0 or above RRR_NFS3_MAX_NCONNECT: a caller
 * that filled the struct without rrr_nfs3_opts_init() gets this), those of
 * rrr_clnt_create() for any connection (then none is left open), a negative
 * errno or positive status of MNT/FSINFO. MAY BLOCK. */
int rrr_nfs3_mount(const struct rrr_nfs3_opts *opts, struct rrr_nfs3 **out);
/* UMNT (best effort), disconnect every connection, free. No call may be in
 * progress. MAY BLOCK. */
void rrr_nfs3_umount(struct rrr_nfs3 *nfs);
const struct rrr_nfs3_fh *rrr_nfs3_root(const struct rrr_nfs3 *nfs);
uint32_t rrr_nfs3_rsize(const struct rrr_nfs3 *nfs);
uint32_t rrr_nfs3_wsize(const struct rrr_nfs3 *nfs);
/* Number of connections (opts.nconnect). */
unsigned rrr_nfs3_nconnect(const struct rrr_nfs3 *nfs);
/* Counters summed over every connection: event counters and bytes add up;
 * credits and max_credits are the sums of the connections' grants (calls
 * the client may have in flight in all); inline_send/inline_recv are the
 * smallest negotiated. Thread-safe. */
void rrr_nfs3_stats(struct rrr_nfs3 *nfs, struct rrr_xprt_stats *st);
/* Counters of connection @idx (0 .. nconnect-1; 0 carries MOUNT when there
 * is no mount port, and FSINFO). -EINVAL when @idx is out of range.
 * Thread-safe. */
int rrr_nfs3_conn_stats(struct rrr_nfs3 *nfs, unsigned idx, struct rrr_xprt_stats *st);

int rrr_nfs3_null(struct rrr_nfs3 *nfs);
int rrr_nfs3_getattr(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		     struct rrr_nfs3_fattr *attr);
int rrr_nfs3_setattr(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		     const struct rrr_nfs3_sattr *sattr);
/* @attr may be NULL. */
int rrr_nfs3_lookup(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		    struct rrr_nfs3_fh *fh, struct rrr_nfs3_fattr *attr);
/* Walk a '/'-separated path from the root (empty or "/" = root). */
int rrr_nfs3_lookup_path(struct rrr_nfs3 *nfs, const char *path, struct rrr_nfs3_fh *fh,
			 struct rrr_nfs3_fattr *attr);
int rrr_nfs3_readlink(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, char *buf,
		      size_t cap);
/* Create (UNCHECKED, or GUARDED when @exclusive) a regular file. */
int rrr_nfs3_create(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		    uint32_t mode, bool guarded, struct rrr_nfs3_fh *fh);
int rrr_nfs3_mkdir(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		   uint32_t mode, struct rrr_nfs3_fh *fh);
int rrr_nfs3_symlink(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name,
		     const char *target, struct rrr_nfs3_fh *fh);
int rrr_nfs3_remove(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name);
int rrr_nfs3_rmdir(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir, const char *name);
int rrr_nfs3_rename(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *from_dir,
		    const char *from, const struct rrr_nfs3_fh *to_dir, const char *to);
int rrr_nfs3_commit(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint8_t verf[8]);
int rrr_nfs3_fsstat(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh,
		    struct rrr_nfs3_fsstat_res *res);

/* READDIRPLUS the whole directory; @fn runs once per entry ("." and ".."
 * skipped); a non-zero return from @fn stops and is returned. */
typedef int (*rrr_nfs3_dirent_fn)(void *arg, const struct rrr_nfs3_dirent *e);
int rrr_nfs3_readdirplus(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *dir,
			 rrr_nfs3_dirent_fn fn, void *arg);

/* One READ/WRITE: data goes to/from @iov (DDP payload); outputs: count, eof. */
int rrr_nfs3_read(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		  const struct iovec *iov, unsigned niov, uint32_t *count, bool *eof);
int rrr_nfs3_write(struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh, uint64_t offset,
		   const struct iovec *iov, unsigned niov, uint32_t stable, uint32_t *count);

/* Progress callback for the pipelined helpers: bytes done so far. */
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
 * MAY BLOCK.
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
