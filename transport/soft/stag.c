/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/stag.c - the STag table and guarded access to registrations.
 *
 * A handle (STag, lkey, rkey) is a 24-bit index into the device's table
 * and an 8-bit key (low byte). The table is an array of atomic pointers,
 * cut in chunks of 65,536 that are made as indices reach them, so it grows
 * with the registrations to the whole 24-bit space (16.7 million) with no
 * cap of its own, and a device that registers little holds one chunk,
 * and of it only the pages its indices reached (a chunk is an anonymous
 * mapping, never cleared by hand: each client has a device of its own,
 * and a 512 KiB calloc() from a reused heap would be written whole);
 * writers (registration, deregistration) serialise on dev->lock, readers
 * (the receive path, read responder, post-time checks) never lock: they
 * load the pointer inside an RCU read-side critical section (liburcu, memb
 * flavour). A registration is freed only after rrr__soft_stag_free() has
 * cleared its slot and waited a grace period (deregistration; never on the
 * I/O path).
 *
 * Invalidation without a grace period on the I/O path: every placement or
 * source read announces itself in the MR's in-flight counter BEFORE it
 * checks the state, and withdraws after its readv/writev returns:
 *
 *   placer:      if (state != VALID) fail ;   (filter: keeps failures off the counter)
 *                inflight++ ; if (state != VALID || key/pd/rights/bounds) {inflight--; fail}
 *                readv(...) ; inflight--
 *   invalidator: CAS state VALID -> INVALIDATING ; while (inflight) yield ;
 *                state = INVALID ; report completion
 *
 * All four operations are sequentially consistent, so either the placer
 * sees INVALIDATING and places nothing, or the invalidator sees its
 * increment and waits; the wait lasts one non-blocking readv at most,
 * because a placer re-acquires before every readv. An invalidation
 * therefore never completes while a placement into the registration can
 * still be in flight, and nothing is placed once it completed. The fields
 * of a registration (key, rights, bounds, chunks) change only while it is
 * not VALID; REG_MR publishes them with a release store of VALID.
 *
 * Checks (as RNICs do, with the Terminate each violation answers):
 *   no entry / not VALID / key mismatch -> invalid STag
 *   PD differs from the QP's            -> STag not associated
 *   missing right                       -> access rights violation
 *   [TO, TO+len) outside registration   -> base or bounds violation
 *   TO + len wraps 64 bits              -> TO wrap
 * The layer is DDP (tagged buffer) for placement and RDMAP (remote
 * protection) for read sources and access rights, as Linux siw reports.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <urcu/urcu-memb.h>

#include "soft.h"

/*
 * ThreadSanitizer does not see liburcu's grace periods (liburcu is not
 * instrumented; urcu-memb orders readers with membarrier), so it would
 * report the free after rrr__soft_stag_free() as racing with lookups that
 * ended before the grace period did. Tell it: every read-side critical
 * section releases gp_order as it ends, and a writer acquires gp_order
 * after synchronize_rcu(). Compiled out of other builds.
 */
#if defined(__SANITIZE_THREAD__)
#define SOFT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SOFT_TSAN 1
#endif
#endif
#ifdef SOFT_TSAN
#include <sanitizer/tsan_interface.h>
static char gp_order;
#define rcu_read_end()                                                                             \
	do {                                                                                       \
		__tsan_release(&gp_order);                                                         \
		urcu_memb_read_unlock();                                                           \
	} while (0)
#define rcu_gp_done() __tsan_acquire(&gp_order)
#else
#define rcu_read_end() urcu_memb_read_unlock()
#define rcu_gp_done() ((void)0)
#endif

static pthread_key_t rcu_key;
static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;
static _Thread_local bool rcu_registered;

static void rcu_thread_exit(void *arg)
{
	(void)arg;
	if (rcu_registered) {
		urcu_memb_unregister_thread();
		rcu_registered = false;
	}
}

static void rcu_key_init(void)
{
	pthread_key_create(&rcu_key, rcu_thread_exit);
}

void rrr__soft_rcu_thread(void)
{
	if (rcu_registered)
		return;
	pthread_once(&rcu_once, rcu_key_init);
	urcu_memb_register_thread();
	rcu_registered = true;
	pthread_setspecific(rcu_key, (void *)1);
}

/* splitmix64 finaliser: a keyed, well-mixed function of the allocation
 * count, so the key of one STag says nothing about another's without the
 * device's secret (drawn from getrandom() when the device opened). */
static uint8_t initial_key(uint64_t secret, uint32_t n, uint32_t idx)
{
	uint64_t z = secret + ((uint64_t)n << 24 | idx) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint8_t)(z ^ (z >> 31));
}

/* The slot of @idx, or NULL when its chunk was never made. */
static _Atomic(struct soft_mr *) *stag_slot(struct soft_dev *dev, uint32_t idx)
{
	_Atomic(struct soft_mr *) *chunk;

	if (idx >= SOFT_MAX_STAGS)
		return NULL;
	chunk = atomic_load_explicit(&dev->stag_chunk[idx >> SOFT_STAG_CHUNK_SHIFT],
				     memory_order_acquire);
	return chunk ? &chunk[idx & (SOFT_STAG_CHUNK - 1)] : NULL;
}

/* Enter an RCU read-side section (the caller ends it with rcu_read_end())
 * and load the MR at STag index @idx: NULL when there is none. */
static inline struct soft_mr *stag_read_begin(struct soft_dev *dev, uint32_t idx)
{
	_Atomic(struct soft_mr *) *slot;

	rrr__soft_rcu_thread();
	urcu_memb_read_lock();
	slot = stag_slot(dev, idx);
	return slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
}

/* Under dev->lock: make the chunk that index dev->next_idx falls in, and
 * room in the free list for every index of it. 0 or -ENOMEM. */
static int stag_grow(struct soft_dev *dev)
{
	uint32_t c = dev->next_idx >> SOFT_STAG_CHUNK_SHIFT;
	_Atomic(struct soft_mr *) *chunk;
	uint32_t *fi;

	if (atomic_load_explicit(&dev->stag_chunk[c], memory_order_relaxed))
		return 0;
	fi = realloc(dev->free_idx, (size_t)(c + 1) * SOFT_STAG_CHUNK * sizeof(*fi));
	if (!fi)
		return -ENOMEM;
	dev->free_idx = fi;
	chunk = mmap(NULL, SOFT_STAG_CHUNK * sizeof(*chunk), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (chunk == MAP_FAILED)
		return -ENOMEM;
#ifdef MADV_NOHUGEPAGE
	(void)madvise((void *)chunk, SOFT_STAG_CHUNK * sizeof(*chunk), MADV_NOHUGEPAGE);
#endif
	atomic_store_explicit(&dev->stag_chunk[c], chunk, memory_order_release);
	return 0;
}

void rrr__soft_stag_table_free(struct soft_dev *dev)
{
	for (uint32_t c = 0; c < SOFT_STAG_CHUNKS; c++) {
		_Atomic(struct soft_mr *) *chunk =
		    atomic_load_explicit(&dev->stag_chunk[c], memory_order_relaxed);

		if (chunk)
			munmap((void *)chunk, SOFT_STAG_CHUNK * sizeof(*chunk));
	}
	free(dev->free_idx);
	dev->free_idx = NULL;
}

int rrr__soft_stag_alloc(struct soft_dev *dev, struct soft_mr *mr)
{
	uint32_t idx;

	pthread_mutex_lock(&dev->lock);
	if (dev->nfree) {
		idx = dev->free_idx[--dev->nfree];
	} else if (dev->next_idx < SOFT_MAX_STAGS) {
		if (stag_grow(dev)) {
			pthread_mutex_unlock(&dev->lock);
			return rrr__set_error(-ENOMEM, "soft: no memory to grow the STag "
						       "table past %u registrations",
					      dev->next_idx - 1);
		}
		idx = dev->next_idx++;
	} else {
		pthread_mutex_unlock(&dev->lock);
		return rrr__set_error(-ENOMEM, "soft: STag table full (%u registrations)",
				      SOFT_MAX_STAGS - 1);
	}
	mr->index = idx;
	mr->key = initial_key(dev->key_secret, atomic_fetch_add(&dev->seed, 1), idx);
	atomic_store_explicit(stag_slot(dev, idx), mr, memory_order_release);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

void rrr__soft_stag_free(struct soft_dev *dev, struct soft_mr *mr)
{
	pthread_mutex_lock(&dev->lock);
	atomic_store_explicit(stag_slot(dev, mr->index), NULL, memory_order_release);
	pthread_mutex_unlock(&dev->lock);
	urcu_memb_synchronize_rcu();
	rcu_gp_done();
	pthread_mutex_lock(&dev->lock);
	dev->free_idx[dev->nfree++] = mr->index;
	pthread_mutex_unlock(&dev->lock);
}

/* @code is an RDMAP remote protection code (RFC 5040 section 7.2); the DDP
 * tagged buffer errors of RFC 5041 section 7.2 have no access-rights code
 * (that one is always RDMAP's) and number the rest differently. */
static uint32_t fail(bool rdmap, unsigned code)
{
	if (rdmap || code == SOFT_ECODE_ACCESS)
		return SOFT_GET_FAIL |
		       SOFT_TERM(SOFT_TERM_LAYER_RDMAP, SOFT_TERM_RDMAP_REM_PROT, code);
	switch (code) {
	case SOFT_ECODE_STAG_PD: code = SOFT_ECODE_T_STAG_ASSOC; break;
	case SOFT_ECODE_TO_WRAP: code = SOFT_ECODE_T_TO_WRAP; break;
	case SOFT_ECODE_BOUNDS: code = SOFT_ECODE_T_BOUNDS; break;
	default: code = SOFT_ECODE_T_INV_STAG; break;
	}
	return SOFT_GET_FAIL | SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_TAGGED, code);
}

uint32_t rrr__soft_mr_get(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd,
			  unsigned rights, uint64_t to, uint64_t len, bool rdmap_layer,
			  struct soft_mr **out)
{
	uint32_t idx = handle >> 8;
	struct soft_mr *mr;
	uint32_t rc = 0;

	*out = NULL;
	if (idx == 0 || idx >= SOFT_MAX_STAGS)
		return fail(rdmap_layer, SOFT_ECODE_INV_STAG);
	mr = stag_read_begin(dev, idx);
	if (!mr) {
		rc = fail(rdmap_layer, SOFT_ECODE_INV_STAG);
		goto out;
	}
	/* cheap filter first, so that failing lookups never hold the counter
	 * up and an invalidation cannot be starved by them */
	if (atomic_load(&mr->state) != SOFT_MR_VALID) {
		rc = fail(rdmap_layer, SOFT_ECODE_INV_STAG);
		goto out;
	}
	atomic_fetch_add(&mr->inflight, 1);
	if (atomic_load(&mr->state) != SOFT_MR_VALID || mr->key != (uint8_t)handle) {
		rc = fail(rdmap_layer, SOFT_ECODE_INV_STAG);
	} else if (pd && mr->base.pd != pd) {
		rc = fail(rdmap_layer, SOFT_ECODE_STAG_PD);
	} else if ((mr->rights & rights) != rights) {
		rc = fail(rdmap_layer, SOFT_ECODE_ACCESS);
	} else if (to + len < to) {
		rc = fail(rdmap_layer, SOFT_ECODE_TO_WRAP);
	} else if (to < mr->iova || len > mr->length || to - mr->iova > mr->length - len) {
		rc = fail(rdmap_layer, SOFT_ECODE_BOUNDS);
	}
	if (rc)
		atomic_fetch_sub(&mr->inflight, 1);
	else
		*out = mr;
out:
	rcu_read_end();
	return rc;
}

void rrr__soft_mr_put(struct soft_mr *mr)
{
	if (mr)
		atomic_fetch_sub(&mr->inflight, 1);
}

int rrr__soft_mr_iov(const struct soft_mr *mr, uint64_t to, uint64_t len, struct iovec *iov,
		     int max)
{
	uint64_t off = to - mr->iova;
	uint32_t i = 0;
	int n = 0;

	/* skip whole chunks before off */
	while (i < mr->nchunks && off >= mr->chunks[i].iov_len) {
		off -= mr->chunks[i].iov_len;
		i++;
	}
	while (len && i < mr->nchunks && n < max) {
		uint64_t take = mr->chunks[i].iov_len - off;

		if (take > len)
			take = len;
		iov[n].iov_base = (char *)mr->chunks[i].iov_base + off;
		iov[n].iov_len = take;
		n++;
		len -= take;
		off = 0;
		i++;
	}
	return n;
}

int rrr__soft_invalidate(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd,
			 bool allow_long)
{
	uint32_t idx = handle >> 8;
	struct soft_mr *mr;
	int rc = 0, st;

	if (idx == 0 || idx >= SOFT_MAX_STAGS)
		return -ENOENT;
	mr = stag_read_begin(dev, idx);
	if (!mr || mr->key != (uint8_t)handle) {
		rc = -ENOENT;
		goto out;
	}
	if (pd && mr->base.pd != pd) {
		rc = -EACCES;
		goto out;
	}
	if (!mr->fast && !allow_long) {
		rc = -EPERM;
		goto out;
	}
	st = SOFT_MR_VALID;
	if (!atomic_compare_exchange_strong(&mr->state, &st, SOFT_MR_INVALIDATING)) {
		/* already not valid: MAPPED or INVALID become INVALID */
		if (st == SOFT_MR_INVALIDATING) {
			rc = -EBUSY;
			goto out;
		}
		atomic_store(&mr->state, SOFT_MR_INVALID);
		goto out;
	}
	atomic_fetch_add(&dev->key_gen, 1);
	while (atomic_load(&mr->inflight) != 0)
		sched_yield();
	atomic_store(&mr->state, SOFT_MR_INVALID);
out:
	rcu_read_end();
	return rc;
}

int rrr__soft_inv_check(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd)
{
	uint32_t idx = handle >> 8;
	struct soft_mr *mr;
	int rc = 0;

	if (idx == 0 || idx >= SOFT_MAX_STAGS)
		return -ENOENT;
	mr = stag_read_begin(dev, idx);
	if (!mr || mr->key != (uint8_t)handle || atomic_load(&mr->state) != SOFT_MR_VALID)
		rc = -ENOENT;
	else if (pd && mr->base.pd != pd)
		rc = -EACCES;
	else if (!mr->fast)
		rc = -EPERM;
	rcu_read_end();
	return rc;
}

int rrr__soft_mr_validate(struct soft_mr *mr, struct rrr_pd *pd, unsigned access)
{
	if (!mr->fast || mr->base.pd != pd)
		return -EINVAL;
	if (atomic_load(&mr->state) != SOFT_MR_MAPPED)
		return -EINVAL;
	mr->rights = access | RRR_ACCESS_LOCAL_WRITE;
	atomic_store(&mr->state, SOFT_MR_VALID);
	return 0;
}
