/* SPDX-License-Identifier: MIT */
/*
 * transport/frwr.c - the per-I/O registration engine (include/rrr/reg_engine.h).
 *
 * Normal operation
 * ----------------
 * Every I/O whose payload a peer may touch by RDMA gets its own
 * registrations, created just before the I/O and destroyed (invalidated)
 * before the caller learns the I/O finished, as Linux xprtrdma does with
 * FRWR. rrr_reg_map() first plans where the scatterlist must split
 * (transport/reg_plan.c: holes per the device's map model, and page-list
 * depth), before touching the pool, so an impossible list fails with no side
 * effect. Then, for each planned registration, it takes an MR from the pool,
 * hands the provider exactly the planned entries (trimmed where a depth cut
 * fell inside an entry; VIRT_CONTIG ranges as one coalesced entry) through
 * rrr_mr_map_sg(), which rotates the MR's 8-bit key, and prepares an
 * unsignaled REG_MR work request. The REG_MR WRs are chained; the caller
 * links the last one to its SEND so the registrations and the message
 * carrying their handles go out in one post, in order.
 *
 * When the I/O is over, rrr_reg_build_inv() chains one LOCAL_INV per MR that
 * is still valid, only the last one signaled: send queue completions are in
 * order, so that single completion proves every earlier LOCAL_INV executed.
 * An MR the peer already invalidated with Send With Invalidate
 * (rrr_reg_remote_invalidated()) gets no LOCAL_INV; a handle the I/O does not
 * own, or owns but was already invalidated, is a protocol violation and the
 * caller disconnects. rrr_reg_inv_done() returns the MRs to the pool.
 *
 * The pool grows lazily: while fewer than max_mrs MRs exist, every
 * registration allocates a fresh MR; after that, freed MRs are reused in the
 * order they were freed (a FIFO ring). Handles are index + 8-bit key, so one
 * MR's stale handle matches again only after its key wraps (256 maps of that
 * MR); FIFO reuse maps every MR that was free when it was freed before it,
 * so that takes at least 256 * (1 + those free MRs) registrations on the
 * pool (256 * max_mrs with one I/O at a time). The pool's own arrays grow
 * with its MRs (doubling, from POOL_FIRST_CAP entries), and the iovec
 * scratch list is made by the first rrr_reg_map_iov(): a pool sized for
 * the worst case (every credit with every chunk at max_segs) costs what
 * its traffic used, not max_mrs, so an idle connection's pool is small.
 *
 * Recovery
 * --------
 * If any WR of an I/O's chain fails or is flushed, or could not be posted,
 * the state of its MRs is unknown: one may still be valid. rrr_reg_recover()
 * calls rrr_mr_recover() on every MR of the I/O, which returns the MR to
 * INVALID with a fresh key and guarantees no remote access afterwards; only
 * then is the MR reused. An MR that cannot be recovered is deregistered and
 * dropped from the pool (recover_errors), so it can never be handed out
 * again. A failure inside rrr_reg_map() itself recovers the MRs it had
 * mapped the same way, so the caller never has anything to clean up after an
 * error.
 *
 * The engine keeps no lock; the caller serialises calls on one pool. The hot
 * path (map, build_inv, inv_done) does no allocation once the pool is full
 * grown and is O(entries + registrations).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/reg_engine.h>

#include "provider_impl.h"
#include "reg_plan.h"
#include "common/probes.h"

#define POOL_DEFAULT_MRS   128u
#define POOL_MAX_MRS	   65536u
#define POOL_DEFAULT_PAGES 256u
#define MAP_IOV_MAX	   1024u
#define POOL_FIRST_CAP	   32u

struct rrr_mrpool {
	struct rrr_pd *pd;
	enum rrr_map_model model;
	uint32_t page_size;
	uint32_t pages_per_mr;
	uint32_t max_mrs;
	uint32_t nalloc;	/* MRs in all[] */
	uint32_t cap;		/* entries of all[] and ring[]: nalloc <= cap <= max_mrs */
	uint32_t head, nfree;	/* FIFO of free MRs in ring[] */
	struct rrr_mr **all;	/* every live MR of the pool (for destroy) */
	struct rrr_mr **ring;	/* free MRs, oldest freed at head */
	struct rrr_sg *scratch; /* pages_per_mr trimmed entries (not VIRT_CONTIG) */
	struct rrr_sg *iov_sg;	/* MAP_IOV_MAX entries for rrr_reg_map_iov, made by its first call */
	struct rrr_reg_stats st;
};

/* ------------------------------------------------------------------ pool */

int rrr_mrpool_create(struct rrr_pd *pd, const struct rrr_mrpool_opts *opts,
		      struct rrr_mrpool **out)
{
	struct rrr_device_attr attr;
	struct rrr_mrpool *pool;
	uint32_t max_mrs = opts && opts->max_mrs ? opts->max_mrs : POOL_DEFAULT_MRS;
	uint32_t pages = opts ? opts->pages_per_mr : 0;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!pd)
		return -EINVAL;
	rc = rrr_device_query(pd->dev, &attr);
	if (rc)
		return rc;
	if (attr.page_size == 0 || (attr.page_size & (attr.page_size - 1)) ||
	    attr.max_fr_pages == 0)
		return rrr__set_error(-EINVAL, "device %s reports page size %u, depth %u",
				      attr.name, attr.page_size, attr.max_fr_pages);
	if (max_mrs > POOL_MAX_MRS)
		return rrr__set_error(-EINVAL, "MR pool of %u MRs exceeds %u", max_mrs,
				      POOL_MAX_MRS);
	if (pages == 0)
		pages =
		    attr.max_fr_pages < POOL_DEFAULT_PAGES ? attr.max_fr_pages : POOL_DEFAULT_PAGES;
	if (pages > attr.max_fr_pages)
		return rrr__set_error(-EINVAL, "%u pages per MR exceeds the device's %u", pages,
				      attr.max_fr_pages);

	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->pd = pd;
	pool->model = attr.map_model;
	pool->page_size = attr.page_size;
	pool->pages_per_mr = pages;
	pool->max_mrs = max_mrs;
	pool->cap = max_mrs < POOL_FIRST_CAP ? max_mrs : POOL_FIRST_CAP;
	pool->all = calloc(pool->cap, sizeof(*pool->all));
	pool->ring = calloc(pool->cap, sizeof(*pool->ring));
	if (pool->model != RRR_MAP_VIRT_CONTIG)
		pool->scratch = calloc(pages, sizeof(*pool->scratch));
	if (!pool->all || !pool->ring ||
	    (pool->model != RRR_MAP_VIRT_CONTIG && !pool->scratch)) {
		rrr_mrpool_destroy(pool);
		return -ENOMEM;
	}
	*out = pool;
	return 0;
}

void rrr_mrpool_destroy(struct rrr_mrpool *pool)
{
	uint32_t i;

	if (!pool)
		return;
	for (i = 0; i < pool->nalloc; i++)
		rrr_mr_dereg(pool->all[i]);
	free(pool->iov_sg);
	free(pool->scratch);
	free(pool->ring);
	free(pool->all);
	free(pool);
}

void rrr_mrpool_stats(const struct rrr_mrpool *pool, struct rrr_reg_stats *st)
{
	if (pool && st)
		*st = pool->st;
}

static inline void pool_put(struct rrr_mrpool *pool, struct rrr_mr *mr)
{
	uint32_t tail = pool->head + pool->nfree;

	if (tail >= pool->cap)
		tail -= pool->cap;
	pool->ring[tail] = mr;
	pool->nfree++;
}

/* Room for more MRs in all[] and ring[] (twice as many, at most max_mrs),
 * the free ones kept in their FIFO order: 0 or -ENOMEM (the arrays are
 * then as they were). Only while the pool grows, when an MR is allocated
 * anyway. */
static int pool_grow(struct rrr_mrpool *pool)
{
	uint32_t cap = pool->cap * 2u, i;
	struct rrr_mr **all, **ring;

	if (cap > pool->max_mrs)
		cap = pool->max_mrs;
	ring = malloc((size_t)cap * sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	all = realloc(pool->all, (size_t)cap * sizeof(*all));
	if (!all) {
		free(ring);
		return -ENOMEM;
	}
	pool->all = all;
	for (i = 0; i < pool->nfree; i++) {
		uint32_t j = pool->head + i;

		ring[i] = pool->ring[j >= pool->cap ? j - pool->cap : j];
	}
	free(pool->ring);
	pool->ring = ring;
	pool->head = 0;
	pool->cap = cap;
	return 0;
}

/* Grow while below max_mrs (fresh MRs spread keys best), else reuse the MR
 * freed longest ago. */
static inline int pool_get(struct rrr_mrpool *pool, struct rrr_mr **out)
{
	int rc = -ENOBUFS;

	if (pool->nalloc < pool->max_mrs &&
	    (pool->nalloc < pool->cap || (rc = pool_grow(pool)) == 0)) {
		struct rrr_mr *mr;

		rc = rrr_mr_alloc(pool->pd, pool->pages_per_mr, &mr);
		if (rc == 0) {
			pool->all[pool->nalloc++] = mr;
			pool->st.mrs_allocated++;
			*out = mr;
			return 0;
		}
	}
	if (pool->nfree == 0)
		return rc;
	*out = pool->ring[pool->head];
	if (++pool->head == pool->cap)
		pool->head = 0;
	pool->nfree--;
	return 0;
}

/* The MR could not be recovered: destroy it and forget it, so it is never
 * handed out again. If even that fails it stays in all[] (destroy retries)
 * but never returns to the ring. */
static void pool_drop(struct rrr_mrpool *pool, struct rrr_mr *mr)
{
	uint32_t i;

	if (rrr_mr_dereg(mr) != 0)
		return;
	for (i = 0; i < pool->nalloc; i++) {
		if (pool->all[i] == mr) {
			pool->all[i] = pool->all[--pool->nalloc];
			return;
		}
	}
}

static void recover_one(struct rrr_mrpool *pool, struct rrr_mr *mr)
{
	pool->st.recoveries++;
	if (rrr_mr_recover(mr) == 0) {
		pool_put(pool, mr);
		return;
	}
	pool->st.recover_errors++;
	pool_drop(pool, mr);
}

/* --------------------------------------------------------------- mapping */

/*
 * Map one planned registration on @mr. The provider gets the planned entries
 * themselves when they need no trimming, else a trimmed copy in canonical
 * form (page-aligned page, offset < page size) without empty entries. For
 * VIRT_CONTIG the planned range is contiguous, so it goes as one entry.
 */
static int map_one(struct rrr_mrpool *pool, const struct rrr_sg *sg,
		   const struct rrr__reg_plan_seg *p, unsigned access, struct rrr_mr *mr)
{
	const struct rrr_sg *list = sg + p->first;
	const struct rrr_sg *last = sg + p->first + p->nents - 1;
	uint64_t mask = (uint64_t)pool->page_size - 1;
	struct rrr_sg one;
	int want = (int)p->nents, rc;
	bool whole_tail = p->nents == 1 ? p->head_skip + p->tail_len == last->length
					: p->tail_len == last->length;

	if (pool->model == RRR_MAP_VIRT_CONTIG) {
		if (p->nents != 1 || p->head_skip || !whole_tail) {
			one.page = (void *)(uintptr_t)(p->addr & ~mask);
			one.offset = (uint32_t)(p->addr & mask);
			one.length = p->length;
			list = &one;
			want = 1;
		}
	} else if (p->head_skip || !whole_tail || p->has_empty) {
		unsigned j;

		want = 0;
		for (j = 0; j < p->nents; j++) {
			const struct rrr_sg *e = &sg[p->first + j];
			uint64_t a = (uint64_t)(uintptr_t)e->page + e->offset;
			uint32_t len = e->length;

			if (len == 0)
				continue;
			if (j == 0) {
				a += p->head_skip;
				len -= p->head_skip;
			}
			if (j == p->nents - 1)
				len = p->tail_len;
			if ((uint32_t)want == pool->pages_per_mr)
				return -EIO; /* cannot happen: each entry spans >= 1 page */
			pool->scratch[want].page = (void *)(uintptr_t)(a & ~mask);
			pool->scratch[want].offset = (uint32_t)(a & mask);
			pool->scratch[want].length = len;
			want++;
		}
		list = pool->scratch;
	}
	rc = rrr_mr_map_sg(mr, list, want, access);
	if (rc < 0)
		return rrr__set_error(rc, "mapping %d entries of %u bytes on an MR failed (%d)",
				      want, p->length, rc);
	if (rc != want || mr->length != p->length)
		return rrr__set_error(-EIO,
				      "provider mapped %d of %d entries (%llu of %u bytes): "
				      "its map model disagrees with the registration engine",
				      rc, want, (unsigned long long)mr->length, p->length);
	return 0;
}

/* @wr as a lone, unsignaled @opcode without scatter/gather entries. */
static inline void wr_init(struct rrr_send_wr *wr, enum rrr_wr_opcode opcode)
{
	wr->next = NULL;
	wr->wr_id = 0;
	wr->opcode = opcode;
	wr->flags = 0;
	wr->sg_list = NULL;
	wr->num_sge = 0;
}

static inline void set_reg_wr(struct rrr_send_wr *wr, struct rrr_mr *mr, unsigned access)
{
	wr_init(wr, RRR_WR_REG_MR);
	wr->u.reg.mr = mr;
	wr->u.reg.access = access;
}

static const char *model_name(enum rrr_map_model m)
{
	return m == RRR_MAP_PAGE_LIST ? "page_list" : m == RRR_MAP_VIRT_CONTIG ? "virt_contig" : "gaps";
}

int rrr_reg_map(struct rrr_mrpool *pool, const struct rrr_sg *sg, unsigned nents, unsigned access,
		struct rrr_reg_io *io)
{
	return rrr_reg_map_max(pool, sg, nents, access, RRR_REG_MAX_SEGS, io);
}

int rrr_reg_map_max(struct rrr_mrpool *pool, const struct rrr_sg *sg, unsigned nents,
		    unsigned access, unsigned max_regs, struct rrr_reg_io *io)
{
	struct rrr__reg_plan_seg plan[RRR_REG_MAX_SEGS];
	uint32_t holes = 0, depth = 0;
	int n, k, rc;

	if (!io)
		return -EINVAL;
	io->nsegs = 0;
	io->holes = 0;
	if (!pool || !sg || nents == 0 || max_regs == 0)
		return -EINVAL;
	if (max_regs > RRR_REG_MAX_SEGS)
		max_regs = RRR_REG_MAX_SEGS;
	n = rrr__reg_plan(sg, nents, pool->model, pool->page_size, pool->pages_per_mr, plan,
			  max_regs);
	if (n == -E2BIG)
		return rrr__set_error(-E2BIG,
				      "scatterlist of %u entries needs more than %u "
				      "registrations (map model %s, %u pages per registration)",
				      nents, max_regs, model_name(pool->model),
				      pool->pages_per_mr);
	if (n < 0)
		return n;
	if ((uint32_t)n > pool->nfree + (pool->max_mrs - pool->nalloc)) {
		pool->st.pool_empty++;
		return -ENOBUFS;
	}

	for (k = 0; k < n; k++) {
		struct rrr_mr *mr;

		rc = pool_get(pool, &mr);
		if (rc) {
			pool->st.pool_empty++;
			goto unwind;
		}
		rc = map_one(pool, sg, &plan[k], access, mr);
		if (rc) {
			pool->st.map_errors++;
			recover_one(pool, mr);
			goto unwind;
		}
		io->mrs[k] = mr;
		io->valid[k] = true;
		io->segs[k].handle = mr->rkey; /* = rrr_mr_rkey(), without the call */
		io->segs[k].length = plan[k].length;
		io->segs[k].offset = mr->iova;
		set_reg_wr(&io->reg_wr[k], mr, access);
		if (k > 0)
			io->reg_wr[k - 1].next = &io->reg_wr[k];
		holes += plan[k].why == RRR__SPLIT_HOLE;
		depth += plan[k].why == RRR__SPLIT_DEPTH;
	}
	io->nsegs = (uint32_t)n;
	io->holes = holes;
	pool->st.registrations += (uint64_t)n;
	pool->st.hole_splits += holes;
	RRR_PROBE4(reg_map, pool, io, n, holes);
	pool->st.depth_splits += depth;
	return 0;

unwind:
	while (k-- > 0)
		recover_one(pool, io->mrs[k]);
	return rc;
}

int rrr_reg_map_iov(struct rrr_mrpool *pool, const struct iovec *iov, unsigned niov,
		    unsigned access, struct rrr_reg_io *io)
{
	unsigned i;

	if (!io)
		return -EINVAL;
	io->nsegs = 0;
	if (!pool || !iov || niov == 0)
		return -EINVAL;
	if (niov > MAP_IOV_MAX)
		return rrr__set_error(-E2BIG, "iovec of %u entries exceeds %u", niov, MAP_IOV_MAX);
	if (!pool->iov_sg) {
		pool->iov_sg = calloc(MAP_IOV_MAX, sizeof(*pool->iov_sg));
		if (!pool->iov_sg)
			return -ENOMEM;
	}
	for (i = 0; i < niov; i++) {
		if (iov[i].iov_len > UINT32_MAX)
			return rrr__set_error(-EINVAL, "iovec entry %u of %zu bytes is >= 4 GiB", i,
					      iov[i].iov_len);
		pool->iov_sg[i].page = iov[i].iov_base;
		pool->iov_sg[i].offset = 0;
		pool->iov_sg[i].length = (uint32_t)iov[i].iov_len;
	}
	return rrr_reg_map(pool, pool->iov_sg, niov, access, io);
}

/* ---------------------------------------------------------- invalidation */

int rrr_reg_remote_invalidated(struct rrr_mrpool *pool, struct rrr_reg_io *io, uint32_t handle)
{
	uint32_t i;

	if (!pool || !io)
		return -EINVAL;
	for (i = 0; i < io->nsegs; i++) {
		if (io->segs[i].handle != handle)
			continue;
		if (!io->valid[i])
			break;
		io->valid[i] = false;
		pool->st.remote_inv++;
		RRR_PROBE3(remote_inv, pool, io, handle);
		return 0;
	}
	/* No rrr__set_error() here: a caller holding several I/Os per call
	 * asks each in turn, and only it knows whether nobody owned @handle. */
	return -EPERM;
}

struct rrr_send_wr *rrr_reg_build_inv(struct rrr_mrpool *pool, struct rrr_reg_io *io,
				      uint64_t wr_id)
{
	struct rrr_send_wr *head = NULL, *prev = NULL;
	uint32_t i, n = 0;

	if (!pool || !io)
		return NULL;
	for (i = 0; i < io->nsegs; i++) {
		struct rrr_send_wr *wr = &io->inv_wr[i];

		if (!io->valid[i])
			continue;
		wr_init(wr, RRR_WR_LOCAL_INV);
		wr->u.inv.rkey = io->segs[i].handle;
		if (prev)
			prev->next = wr;
		else
			head = wr;
		prev = wr;
		n++;
	}
	if (prev) {
		prev->flags = RRR_SEND_SIGNALED;
		prev->wr_id = wr_id;
	}
	pool->st.local_inv += n;
	return head;
}

void rrr_reg_inv_done(struct rrr_mrpool *pool, struct rrr_reg_io *io)
{
	uint32_t i;

	if (!pool || !io)
		return;
	RRR_PROBE3(local_inv_done, pool, io, io->nsegs);
	for (i = 0; i < io->nsegs && i < RRR_REG_MAX_SEGS; i++) {
		io->valid[i] = false;
		pool_put(pool, io->mrs[i]);
	}
	io->nsegs = 0;
}

void rrr_reg_recover(struct rrr_mrpool *pool, struct rrr_reg_io *io)
{
	uint32_t i;

	if (!pool || !io)
		return;
	for (i = 0; i < io->nsegs && i < RRR_REG_MAX_SEGS; i++) {
		io->valid[i] = false;
		recover_one(pool, io->mrs[i]);
	}
	io->nsegs = 0;
}
