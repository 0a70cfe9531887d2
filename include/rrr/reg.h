/* SPDX-License-Identifier: MIT */
/*
 * rrr/reg.h - per-I/O registration engine (FRWR style).
 *
 * A scatterlist becomes one or more registrations (struct rrr_reg_seg:
 * handle, length, offset - an RFC 8166 segment). Where the device's map
 * model sees a hole (see enum rrr_map_model), or an MR's page-list depth
 * is exhausted, the current registration ends and the next begins.
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
 *   rrr_reg_inv_done()   the signaled LOCAL_INV completed: every MR of the
 *                        I/O is invalid; MRs return to the pool
 *   rrr_reg_recover()    after a flush/error: MRs recovered (fresh key,
 *                        never left valid) and returned to the pool
 *
 * Key rotation: each map rotates the MR's 8-bit key; the pool hands out
 * MRs round-robin so reuse is spread across all MRs. A stale handle
 * matches again only after 256 * pool_size registrations (documented bound).
 *
 * Locking: a pool is used by one thread at a time (the connection's).
 */
#ifndef RRR_REG_H
#define RRR_REG_H

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
	uint32_t max_mrs;       /* pool size ceiling (credits * segs per call) */
	uint32_t pages_per_mr;  /* 0: the device's max_fr_pages */
};

/* One I/O's registrations. Embed it in your request; it holds no memory of
 * its own beyond this struct. */
struct rrr_reg_io {
	uint32_t nsegs;
	struct rrr_reg_seg segs[RRR_REG_MAX_SEGS];
	struct rrr_mr *mrs[RRR_REG_MAX_SEGS];
	bool valid[RRR_REG_MAX_SEGS];          /* still needs invalidation */
	uint32_t holes;                        /* splits caused by holes */
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
};

int rrr_mrpool_create(struct rrr_pd *pd, const struct rrr_mrpool_opts *opts,
		      struct rrr_mrpool **out);
/* All I/Os must have been invalidated or recovered. */
void rrr_mrpool_destroy(struct rrr_mrpool *pool);
void rrr_mrpool_stats(const struct rrr_mrpool *pool, struct rrr_reg_stats *st);

/*
 * rrr_reg_map - register @sg[0..nents) for one I/O with rights @access.
 * Fills io->segs/nsegs and io->reg_wr[0..nsegs) chained together (the last
 * one's next is NULL; wr_ids are 0; unsignaled). The caller links the last
 * REG_MR WR to its SEND. Errors: -ENOBUFS pool exhausted (try later);
 * -E2BIG more than RRR_REG_MAX_SEGS registrations needed; -EINVAL empty list.
 * On error nothing stays mapped.
 */
int rrr_reg_map(struct rrr_mrpool *pool, const struct rrr_sg *sg, unsigned nents,
		unsigned access, struct rrr_reg_io *io);
/* Same from an iovec. */
int rrr_reg_map_iov(struct rrr_mrpool *pool, const struct iovec *iov, unsigned niov,
		    unsigned access, struct rrr_reg_io *io);
/* Peer invalidated @handle (RECV with RRR_WC_WITH_INV). 0 if @io owned it,
 * -EPERM otherwise (protocol violation: disconnect). */
int rrr_reg_remote_invalidated(struct rrr_mrpool *pool, struct rrr_reg_io *io, uint32_t handle);
/* Build the LOCAL_INV chain for MRs still valid; returns its head (NULL if
 * none is needed, then call rrr_reg_inv_done() at once). The last WR is
 * signaled with @wr_id. */
struct rrr_send_wr *rrr_reg_build_inv(struct rrr_mrpool *pool, struct rrr_reg_io *io,
				      uint64_t wr_id);
/* Every MR of @io is invalid: return them to the pool. */
void rrr_reg_inv_done(struct rrr_mrpool *pool, struct rrr_reg_io *io);
/* After a flush or QP error: recover every MR of @io and return it. */
void rrr_reg_recover(struct rrr_mrpool *pool, struct rrr_reg_io *io);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_REG_H */
