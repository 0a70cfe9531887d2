/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/mr.c - memory registration operations of the soft provider.
 *
 * Normal operation: a long-lived registration (rrr_mr_reg) is one chunk
 * [addr, addr+len), VALID at once, with lkey == rkey. A fast-registration
 * MR (rrr_mr_alloc) owns an array of max_pages chunks; rrr_mr_map_sg()
 * copies the scatterlist into it as a list of (address, length) pieces -
 * the soft "RNIC" accepts arbitrary gaps (RRR_MAP_SG_GAPS), so every
 * non-empty entry becomes one chunk and iova is the virtual address of
 * the first byte. With the device option map_model=page_list the map
 * stops where an FRWR page list would (an entry after the first that does
 * not start on a 4 KiB page boundary, or whose predecessor does not end on
 * one; max_pages then counts the pages the entries span). Each map rotates the 8-bit key; the REG_MR work request
 * makes the mapping VALID (stag.c), LOCAL_INV or a peer's Send with
 * Invalidate makes it INVALID again.
 *
 * Memory. The registration engine (transport/frwr.c) allocates one MR per
 * registration while its pool grows to max_mrs (on a client, credits x 3 x
 * segments: the first thousand or so I/Os), and reuses them after that.
 * So allocating an MR must not touch fresh memory: a record is small, and
 * its pieces live in the record (SOFT_MR_INLINE of them, the common case:
 * one contiguous buffer is one piece); the array of max_pages pieces is
 * allocated only on the first map that needs more, and kept. Records come
 * from a process-wide free list of deregistered ones (at most MR_FREE_MAX,
 * without their big arrays) before malloc, so connections that come and go
 * reuse them. A record enters that list only after rrr__soft_stag_free()
 * returned, i.e. after an RCU grace period: no lookup can still hold it.
 *
 * Recovery: rrr_mr_recover() forces INVALID (waiting out placements, as
 * an invalidation does) and rotates the key, so no old handle matches.
 * rrr_mr_dereg() clears the table slot and waits an RCU grace period
 * before recycling the record, so a concurrent lookup never touches a
 * record that was reused or freed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "soft.h"

#define MR_FREE_MAX SOFT_MR_FREE_MAX /* deregistered records kept for reuse */

static pthread_mutex_t mr_free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct soft_mr *mr_free;
static unsigned mr_nfree;

/* A zeroed record: a recycled one, else a new one. */
static struct soft_mr *mr_new(void)
{
	struct soft_mr *mr;

	pthread_mutex_lock(&mr_free_lock);
	mr = mr_free;
	if (mr) {
		mr_free = mr->free_next;
		mr_nfree--;
	}
	pthread_mutex_unlock(&mr_free_lock);
	if (!mr)
		return calloc(1, sizeof(*mr));
	memset(mr, 0, sizeof(*mr));
	return mr;
}

/* @mr is unreachable (its STag slot cleared and a grace period over, or it
 * never had one): keep it for reuse within the bound, else free it. */
static void mr_recycle(struct soft_mr *mr)
{
	free(mr->big);
	mr->big = NULL;
	pthread_mutex_lock(&mr_free_lock);
	if (mr_nfree < MR_FREE_MAX) {
		mr->free_next = mr_free;
		mr_free = mr;
		mr_nfree++;
		mr = NULL;
	}
	pthread_mutex_unlock(&mr_free_lock);
	free(mr);
}

unsigned rrr__soft_mr_free_count(void)
{
	unsigned n;

	pthread_mutex_lock(&mr_free_lock);
	n = mr_nfree;
	pthread_mutex_unlock(&mr_free_lock);
	return n;
}

static void set_handles(struct soft_mr *mr)
{
	mr->base.lkey = mr->base.rkey = mr->index << 8 | mr->key;
}

/* Give the set-up @mr of @pd an STag (its lkey and rkey) and count it on
 * @pd and @dev: 0 with it in *@out, or -errno with @mr recycled. */
static inline int mr_publish(struct soft_dev *dev, struct rrr_pd *pd, struct soft_mr *mr,
			     struct rrr_mr **out)
{
	int rc = rrr__soft_stag_alloc(dev, mr);

	if (rc) {
		mr_recycle(mr);
		return rc;
	}
	set_handles(mr);
	container_of(pd, struct soft_pd, base)->refs++;
	atomic_fetch_add(&dev->nobj, 1);
	*out = &mr->base;
	return 0;
}

int rrr__soft_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
		     struct rrr_mr **out)
{
	struct soft_dev *dev = soft_dev(pd->dev);
	struct soft_mr *mr;

	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	mr = mr_new();
	if (!mr)
		return -ENOMEM;
	mr->dev = dev;
	mr->base.dev = pd->dev;
	mr->base.pd = pd;
	mr->base.access = access;
	mr->rights = access | RRR_ACCESS_LOCAL_WRITE;
	mr->inl[0].iov_base = addr;
	mr->inl[0].iov_len = len;
	mr->chunks = mr->inl;
	mr->nchunks = mr->maxchunks = 1;
	mr->iova = (uintptr_t)addr;
	mr->length = len;
	mr->base.iova = mr->iova;
	mr->base.length = len;
	atomic_init(&mr->state, SOFT_MR_VALID);
	return mr_publish(dev, pd, mr, out);
}

int rrr__soft_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out)
{
	struct soft_dev *dev = soft_dev(pd->dev);
	struct soft_mr *mr;

	if (max_pages > dev->max_fr_pages)
		return rrr__set_error(-EINVAL, "soft: max_pages %u exceeds max_fr_pages %u",
				      max_pages, dev->max_fr_pages);
	mr = mr_new();
	if (!mr)
		return -ENOMEM;
	mr->chunks = mr->inl; /* the big array comes with the first large map */
	mr->dev = dev;
	mr->fast = true;
	mr->maxchunks = max_pages;
	mr->base.dev = pd->dev;
	mr->base.pd = pd;
	mr->base.max_pages = max_pages;
	atomic_init(&mr->state, SOFT_MR_INVALID);
	return mr_publish(dev, pd, mr, out);
}

int rrr__soft_mr_dereg(struct rrr_mr *base)
{
	struct soft_mr *mr = container_of(base, struct soft_mr, base);
	struct soft_dev *dev = mr->dev;
	int st = atomic_load(&mr->state);

	if (mr->fast && (st == SOFT_MR_VALID || st == SOFT_MR_INVALIDATING))
		return rrr__set_error(-EBUSY, "soft: MR 0x%x is still valid; invalidate first",
				      base->rkey);
	/* long-lived: stop placements first, then unpublish */
	atomic_store(&mr->state, SOFT_MR_INVALID);
	atomic_fetch_add(&dev->key_gen, 1);
	while (atomic_load(&mr->inflight) != 0)
		sched_yield();
	rrr__soft_stag_free(dev, mr);
	container_of(base->pd, struct soft_pd, base)->refs--;
	atomic_fetch_sub(&dev->nobj, 1);
	mr_recycle(mr); /* after the grace period rrr__soft_stag_free waited */
	return 0;
}

int rrr__soft_mr_map_sg(struct rrr_mr *base, const struct rrr_sg *sg, int nents, unsigned access)
{
	struct soft_mr *mr = container_of(base, struct soft_mr, base);
	int st = atomic_load(&mr->state);
	uint64_t total = 0, pages = 0, prev_end = 0;
	uint32_t n = 0;
	int i;

	if (st != SOFT_MR_INVALID && st != SOFT_MR_MAPPED)
		return rrr__set_error(-EINVAL, "soft: map_sg on a registration that is valid");
	if (sg[0].length == 0)
		return -EINVAL;
	for (i = 0; i < nents && n < mr->maxchunks; i++) {
		if (sg[i].length == 0)
			continue;
		if (total + sg[i].length > (1ull << 40))
			break;
		if (mr->dev->page_list) {
			uint64_t a = (uintptr_t)sg[i].page + sg[i].offset, e = a + sg[i].length;
			uint64_t np = ((e + SOFT_PL_MASK) >> SOFT_PL_SHIFT) - (a >> SOFT_PL_SHIFT);

			/* a page list: only the first entry may start mid-page,
			 * only the last may end mid-page; max_pages counts pages */
			if (n && ((prev_end | a) & SOFT_PL_MASK))
				break;
			if (pages + np > mr->maxchunks) {
				if (n)
					break;
				return rrr__set_error(-EINVAL, "soft: the first entry spans %llu pages, "
							       "more than the MR's %u",
						      (unsigned long long)np, mr->maxchunks);
			}
			pages += np;
			prev_end = e;
		}
		if (n == SOFT_MR_INLINE && mr->chunks == mr->inl) {
			/* first map of more pieces than the record holds:
			 * the array stays with the MR (not VALID: no reader) */
			if (!mr->big)
				mr->big = malloc((size_t)mr->maxchunks * sizeof(*mr->big));
			if (!mr->big)
				return rrr__set_error(-ENOMEM,
						      "soft: no memory for an MR's page list");
			memcpy(mr->big, mr->inl, sizeof(mr->inl));
			mr->chunks = mr->big;
		}
		mr->chunks[n].iov_base = (char *)sg[i].page + sg[i].offset;
		mr->chunks[n].iov_len = sg[i].length;
		total += sg[i].length;
		n++;
	}
	/* consume trailing zero-length entries */
	while (i < nents && sg[i].length == 0)
		i++;
	mr->nchunks = n;
	mr->iova = (uintptr_t)mr->chunks[0].iov_base;
	mr->length = total;
	mr->rights = access | RRR_ACCESS_LOCAL_WRITE;
	mr->base.access = access;
	mr->key++;
	set_handles(mr);
	mr->base.iova = mr->iova;
	mr->base.length = total;
	atomic_store(&mr->state, SOFT_MR_MAPPED);
	return i;
}

int rrr__soft_mr_recover(struct rrr_mr *base)
{
	struct soft_mr *mr = container_of(base, struct soft_mr, base);
	int st = SOFT_MR_VALID;

	if (!mr->fast)
		return 0;
	if (atomic_compare_exchange_strong(&mr->state, &st, SOFT_MR_INVALIDATING)) {
		atomic_fetch_add(&mr->dev->key_gen, 1);
		while (atomic_load(&mr->inflight) != 0)
			sched_yield();
	} else {
		while (st == SOFT_MR_INVALIDATING) {
			sched_yield();
			st = atomic_load(&mr->state);
		}
	}
	mr->key++;
	set_handles(mr);
	atomic_store(&mr->state, SOFT_MR_INVALID);
	return 0;
}
