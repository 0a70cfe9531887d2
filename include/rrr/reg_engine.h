/* SPDX-License-Identifier: MIT */
/*
 * rrr/reg_engine.h - per-I/O registration engine (FRWR style).
 *
 * A scatterlist becomes one or more registrations (struct rrr_reg_seg:
 * handle, length, offset - an RFC 8166 segment). Where the device's map
 * model sees a hole (see enum rrr_map_model), or an MR's page-list depth
 * is exhausted, the current registration ends and the next begins.
 * docs/registration.md explains the rules with pictures.
 *
 * Lifecycle of one I/O (struct rrr_reg_io):
 *   rrr_reg_map()        take MRs from the pool, map the list, build the
 *                        REG_MR WRs (caller chains them before its SEND)
 *   ... I/O on the wire ...
 *   rrr_reg_remote_invalidated() peer sent Send With Invalidate for a handle:
 *                        that MR is already invalid (no LOCAL_INV needed);
 *                        -EPERM if this I/O does not own the handle
 *   rrr_reg_build_inv()  chained LOCAL_INVs for the still-valid MRs, only
 *                        the last signaled
 *   rrr_reg_inv_done()   the signaled LOCAL_INV completed successfully:
 *                        every MR of the I/O is invalid; MRs return to the pool
 *   rrr_reg_recover()    after a flush/error (any WR of the I/O's chain did
 *                        not complete successfully, or the QP is gone): MRs
 *                        recovered (fresh key, never left valid) and returned
 *
 * Typical client call (xprtrdma style; error handling elided):
 *
 *   rrr_reg_map(pool, sg, n, RRR_ACCESS_REMOTE_WRITE, &req->reg);
 *   encode req->reg.segs[0 .. req->reg.nsegs) into the write list;
 *   req->reg.reg_wr[req->reg.nsegs - 1].next = &send_wr;
 *   rrr_qp_post_send(qp, &req->reg.reg_wr[0], &bad);
 *   ... reply RECV arrives; if wc.wc_flags & RRR_WC_WITH_INV:
 *         if (rrr_reg_remote_invalidated(pool, &req->reg, wc.invalidated_rkey))
 *                 disconnect (protocol violation);
 *   inv = rrr_reg_build_inv(pool, &req->reg, (uint64_t)(uintptr_t)req);
 *   if (!inv) rrr_reg_inv_done(pool, &req->reg), complete the call;
 *   else post inv; on its completion: SUCCESS -> rrr_reg_inv_done(),
 *        anything else -> rrr_reg_recover(); then complete the call.
 *
 * Key rotation: each map rotates the MR's 8-bit key, and the pool hands out
 * free MRs first-freed-first (FIFO) after growing to max_mrs, so reuse is
 * spread across all MRs. A stale handle of one MR matches again only after
 * 256 registrations of that MR, i.e. after at least 256 * (1 + F)
 * registrations on the pool, F being the MRs free when it was freed
 * (256 * max_mrs when I/Os run one at a time; 256 when all are in use).
 * Handles compare in full (24-bit index + 8-bit key).
 *
 * Locking: none inside. All calls on one pool (and the I/Os mapped from it)
 * must be serialised by the caller, e.g. under the connection's lock.
 * The hot path (map, build_inv, inv_done, remote_invalidated) never
 * allocates once the pool has grown, and is O(entries + registrations).
 */
#ifndef RRR_REG_ENGINE_H
#define RRR_REG_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define RRR_REG_MAX_SEGS 64 /* registrations per I/O */

struct rrr_mrpool;

struct rrr_reg_seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

struct rrr_mrpool_opts {
	uint32_t max_mrs;      /* pool size ceiling (credits * segs per call); 0: 128 */
	uint32_t pages_per_mr; /* 0: min(device max_fr_pages, 256) */
};

/* One I/O's registrations. Embed it in your request; it holds no memory of
 * its own beyond this struct. nsegs == 0 means it holds no MR: zero it
 * before first use (rrr_reg_map() sets it; inv_done/recover clear it), so
 * that rrr_reg_recover() on a never-mapped I/O does nothing.
 * segs[i] was registered by mrs[i]; reg_wr[i] registers it; valid[i] is
 * true from rrr_reg_map() until it is known invalid. */
struct rrr_reg_io {
	uint32_t nsegs;
	struct rrr_reg_seg segs[RRR_REG_MAX_SEGS];
	struct rrr_mr *mrs[RRR_REG_MAX_SEGS];
	bool valid[RRR_REG_MAX_SEGS]; /* still needs invalidation */
	uint32_t holes;		      /* splits caused by holes */
	struct rrr_send_wr reg_wr[RRR_REG_MAX_SEGS];
	struct rrr_send_wr inv_wr[RRR_REG_MAX_SEGS];
};

/* Engine counters (part of the per-connection stats). */
struct rrr_reg_stats {
	uint64_t registrations;
	uint64_t hole_splits;
	uint64_t depth_splits;
	uint64_t local_inv;
	uint64_t remote_inv;
	uint64_t recoveries;
	uint64_t mrs_allocated;
	uint64_t pool_empty;
	uint64_t map_errors;	 /* provider refused or mapped other than planned */
	uint64_t recover_errors; /* rrr_mr_recover() failed: MR destroyed */
};

/*
 * rrr_mrpool_create - a pool of fast-registration MRs on @pd.
 * @opts: NULL for defaults. max_mrs (default 128, at most 65536) bounds how
 * many MRs the pool ever allocates; size it credits * segments per call.
 * pages_per_mr (default min(device max_fr_pages, 256)) is each MR's
 * page-list depth; more than the device's max_fr_pages is -EINVAL.
 * MRs are allocated lazily by rrr_reg_map(), one per registration until
 * max_mrs exist; then freed MRs are reused oldest first. The pool's own
 * bookkeeping grows with its MRs too, so a large max_mrs costs nothing
 * until the traffic needs the MRs.
 * Errors: -EINVAL bad argument, -ENOMEM. MAY BLOCK (device query).
 */
int rrr_mrpool_create(struct rrr_pd *pd, const struct rrr_mrpool_opts *opts,
		      struct rrr_mrpool **out);
/* Destroy the pool and deregister its MRs. All I/Os must have been
 * invalidated or recovered first (their MRs would be destroyed under them).
 * NULL is a no-op. MAY BLOCK. */
void rrr_mrpool_destroy(struct rrr_mrpool *pool);
/* Copy the pool's counters. */
void rrr_mrpool_stats(const struct rrr_mrpool *pool, struct rrr_reg_stats *st);

/*
 * rrr_reg_map - register @sg[0..nents) for one I/O with rights @access.
 * Fills io->segs/nsegs/holes and io->reg_wr[0..nsegs) chained together (the
 * last one's next is NULL; wr_ids are 0; unsignaled, no fence). The caller
 * links the last REG_MR WR to its SEND and posts from &io->reg_wr[0]; the
 * handles in io->segs must not reach the peer unless that chain was posted.
 * Zero-length entries are skipped. Segment offsets are the provider's iova
 * (the address of the first byte, first-byte offset included).
 * Errors (nothing stays mapped, io->nsegs == 0):
 *   -EINVAL   NULL argument, empty list, address range wraps;
 *   -E2BIG    more than RRR_REG_MAX_SEGS registrations needed;
 *   -ENOBUFS  not enough free MRs (pool_empty counts it; retry later);
 *   -ENOMEM   growing the pool failed and no MR was free;
 *   -EIO      the provider mapped other than planned (a provider bug,
 *             map_errors counts it, rrr_last_error() says more).
 * @access: RRR_ACCESS_* rights for the peer; an RDMA READ sink on a device
 * with attr.read_sink_remote_write (iWARP) needs RRR_ACCESS_REMOTE_WRITE.
 * May block only while the pool grows (first max_mrs registrations) and on
 * error paths (recovery of what was already mapped).
 */
int rrr_reg_map(struct rrr_mrpool *pool, const struct rrr_sg *sg, unsigned nents, unsigned access,
		struct rrr_reg_io *io);
/*
 * rrr_reg_map_max - rrr_reg_map() with at most @max_regs registrations
 * (capped at RRR_REG_MAX_SEGS): -E2BIG, with a sentence naming the map
 * model and page-list depth, when the list needs more. The bound is
 * checked by the planner before any MR is taken, so a list that does not
 * fit costs no registration. A chunk of RFC 8166 may carry only as many
 * segments as the peer accepts: this is how a transport keeps its limit.
 * -EINVAL also for @max_regs 0. Other errors and blocking as rrr_reg_map().
 */
int rrr_reg_map_max(struct rrr_mrpool *pool, const struct rrr_sg *sg, unsigned nents,
		    unsigned access, unsigned max_regs, struct rrr_reg_io *io);
/* Same from an iovec ({base, 0, len} entries). -E2BIG beyond 1024 entries;
 * -EINVAL for an entry of 4 GiB or more. */
int rrr_reg_map_iov(struct rrr_mrpool *pool, const struct iovec *iov, unsigned niov,
		    unsigned access, struct rrr_reg_io *io);
/* Peer invalidated @handle (RECV with RRR_WC_WITH_INV). 0 if @io owned it
 * and it was still valid (remote_inv counts it; no LOCAL_INV will be built
 * for it). -EPERM otherwise, including a second invalidation of the same
 * handle: a protocol violation, the caller disconnects (then the flush
 * leads to rrr_reg_recover()). */
int rrr_reg_remote_invalidated(struct rrr_mrpool *pool, struct rrr_reg_io *io, uint32_t handle);
/* Build the LOCAL_INV chain (in io->inv_wr) for MRs still valid; returns its
 * head (NULL if none is needed, then call rrr_reg_inv_done() at once). Only
 * the last WR is signaled, with @wr_id; the others have wr_id 0. The caller
 * may link the last WR's next to more work. local_inv counts each WR. */
struct rrr_send_wr *rrr_reg_build_inv(struct rrr_mrpool *pool, struct rrr_reg_io *io,
				      uint64_t wr_id);
/* The signaled LOCAL_INV completed with RRR_WC_SUCCESS (or none was needed):
 * every MR of @io is invalid; return them to the pool. io->nsegs becomes 0. */
void rrr_reg_inv_done(struct rrr_mrpool *pool, struct rrr_reg_io *io);
/* After a flush or QP error, or when a chain of @io could not be posted:
 * recover every MR of @io (rrr_mr_recover: fresh key, no remote access
 * possible on return) and return it to the pool; an MR that cannot be
 * recovered is destroyed instead. io->nsegs becomes 0. MAY BLOCK. */
void rrr_reg_recover(struct rrr_mrpool *pool, struct rrr_reg_io *io);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_REG_ENGINE_H */
