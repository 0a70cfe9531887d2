/* SPDX-License-Identifier: MIT */
/*
 * server/svc_arena.c - request memory: rrr_svc_req_alloc() and the
 * per-worker cache of arena blocks behind it.
 *
 * Arena blocks. A request's arena is a list of blocks; rrr_svc_req_alloc()
 * cuts 64-byte aligned pieces from the newest block (bump allocation) and
 * takes a new block when it has no room: a SMALL block (ARENA_SMALL bytes,
 * header included) for what fits one, else a LARGE block of the size asked
 * for rounded up to ARENA_LARGE_ROUND.
 *
 * Blocks are recycled, not freed: a worker thread keeps the blocks of the
 * requests that ended on it in its own cache (thread-local, no lock) and
 * hands them to the next requests, so a steady stream of requests - a
 * 1 MiB READ's data buffer included - touches no fresh memory and calls no
 * malloc. The cache is bounded per worker, whatever peers do: at most
 * ARENA_CACHE_SMALL small blocks and ARENA_CACHE_LARGE large blocks of at
 * most ARENA_CACHE_BYTES together; a block beyond the bound is freed as
 * before. Peers cannot make the server hold more than that per worker on
 * top of what their requests hold while they run (as before: until the
 * reply has been sent). Threads that are not workers (rrr_svc_run's accept
 * thread, a test calling rrr__svc_dispatch_raw) have no cache and use
 * malloc/free.
 *
 * A handler handed to another worker (rrr__svc_offload) would draw from
 * that worker's cache while its request ends on the owner, into the
 * owner's: the taker's cache would drain and every request it runs touch
 * fresh memory (a 1 MiB READ: some 250 page faults, enough to keep the
 * procedure timed as slow, so handed off again). So the owner lends the
 * request a block of its own cache first (rrr__svc_req_lend), and the
 * handler's allocations go there as far as it has room.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/svc_impl.h"
#include "common/rrr_impl.h"

struct rrr__svc_arena {
	struct rrr__svc_arena *next;
	size_t cap;  /* bytes after the header */
	size_t used; /* bytes handed out (64-byte multiple) */
		     /* 64-byte aligned payload follows the 64-byte header */
};
#define ARENA_HDR	  64u
#define ARENA_SMALL	  RRR__SVC_ARENA_SMALL
#define ARENA_LARGE_ROUND RRR__SVC_ARENA_LARGE_ROUND
#define ARENA_CACHE_SMALL RRR__SVC_ARENA_CACHE_SMALL
#define ARENA_CACHE_LARGE RRR__SVC_ARENA_CACHE_LARGE
#define ARENA_CACHE_BYTES RRR__SVC_ARENA_CACHE_BYTES

struct rrr__svc_arena_cache {
	struct rrr__svc_arena *small;
	unsigned nsmall;
	struct rrr__svc_arena *large[ARENA_CACHE_LARGE];
	unsigned nlarge;
	size_t large_bytes;
	struct rrr__svc_arena_stats st;
};

/* The cache of the worker running on this thread (NULL elsewhere). */
static _Thread_local struct rrr__svc_arena_cache *tls_arena;


/* A block with at least @cap payload bytes: the smallest cached one that
 * fits, else a new one. */
static struct rrr__svc_arena *arena_block_get(size_t cap)
{
	struct rrr__svc_arena_cache *ac = tls_arena;
	struct rrr__svc_arena *a;
	unsigned best = UINT32_MAX;
	void *p;

	if (ac && cap == ARENA_SMALL - ARENA_HDR && ac->small) {
		a = ac->small;
		ac->small = a->next;
		ac->nsmall--;
		ac->st.reused++;
		return a;
	}
	if (ac && cap > ARENA_SMALL - ARENA_HDR) {
		for (unsigned i = 0; i < ac->nlarge; i++)
			if (ac->large[i]->cap >= cap &&
			    (best == UINT32_MAX || ac->large[i]->cap < ac->large[best]->cap))
				best = i;
		if (best != UINT32_MAX) {
			a = ac->large[best];
			ac->large[best] = ac->large[--ac->nlarge];
			ac->large_bytes -= a->cap;
			ac->st.reused++;
			return a;
		}
	}
	if (posix_memalign(&p, 64, ARENA_HDR + cap))
		return NULL;
	a = p;
	a->cap = cap;
	if (ac)
		ac->st.allocated++;
	return a;
}

/* Keep @a in this thread's cache if the bound allows, else free it. A large
 * block that does not fit beside the cached ones replaces the smallest
 * cached one when it is larger (the big sizes are the ones worth keeping). */
static void arena_block_put(struct rrr__svc_arena *a)
{
	struct rrr__svc_arena_cache *ac = tls_arena;
	unsigned small_i;

	if (!ac) {
		free(a);
		return;
	}
	if (a->cap == ARENA_SMALL - ARENA_HDR) {
		if (ac->nsmall < ARENA_CACHE_SMALL) {
			a->next = ac->small;
			ac->small = a;
			ac->nsmall++;
			return;
		}
	} else if (a->cap <= ARENA_CACHE_BYTES) {
		while (ac->nlarge && (ac->nlarge == ARENA_CACHE_LARGE ||
				      ac->large_bytes + a->cap > ARENA_CACHE_BYTES)) {
			small_i = 0;
			for (unsigned i = 1; i < ac->nlarge; i++)
				if (ac->large[i]->cap < ac->large[small_i]->cap)
					small_i = i;
			if (ac->large[small_i]->cap >= a->cap)
				break;
			ac->large_bytes -= ac->large[small_i]->cap;
			free(ac->large[small_i]);
			ac->st.freed++;
			ac->large[small_i] = ac->large[--ac->nlarge];
		}
		if (ac->nlarge < ARENA_CACHE_LARGE &&
		    ac->large_bytes + a->cap <= ARENA_CACHE_BYTES) {
			ac->large[ac->nlarge++] = a;
			ac->large_bytes += a->cap;
			return;
		}
	}
	free(a);
	ac->st.freed++;
}

static void arena_cache_drain(struct rrr__svc_arena_cache *ac)
{
	struct rrr__svc_arena *a;

	while ((a = ac->small)) {
		ac->small = a->next;
		free(a);
	}
	ac->nsmall = 0;
	while (ac->nlarge)
		free(ac->large[--ac->nlarge]);
	ac->large_bytes = 0;
}

void rrr__svc_req_lend(struct rrr_svc_req *req)
{
	struct rrr__svc_arena_cache *ac = tls_arena;
	struct rrr__svc_arena *a;
	unsigned best = 0;

	if (!ac || req->arena)
		return;
	if (ac->nlarge) {
		for (unsigned i = 1; i < ac->nlarge; i++)
			if (ac->large[i]->cap > ac->large[best]->cap)
				best = i;
		a = ac->large[best];
		ac->large[best] = ac->large[--ac->nlarge];
		ac->large_bytes -= a->cap;
	} else if (ac->small) {
		a = ac->small;
		ac->small = a->next;
		ac->nsmall--;
	} else {
		return;
	}
	ac->st.reused++;
	a->used = 0;
	a->next = NULL;
	req->arena = a;
}

void *rrr_svc_req_alloc(struct rrr_svc_req *req, size_t len)
{
	struct rrr__svc_arena *a;
	size_t need, cap;
	void *p;

	if (!req || len > (size_t)1 << 31)
		return NULL;
	if (req->alloc) {
		p = req->alloc(req, len);
		if (p)
			return p;
	}
	need = (len + 63u) & ~(size_t)63u;
	if (!need)
		need = 64;
	a = req->arena;
	if (!a || a->cap - a->used < need) {
		if (need <= ARENA_SMALL - ARENA_HDR)
			cap = ARENA_SMALL - ARENA_HDR;
		else
			cap = (need + ARENA_LARGE_ROUND - 1) & ~(size_t)(ARENA_LARGE_ROUND - 1);
		a = arena_block_get(cap);
		if (!a)
			return NULL;
		a->used = 0;
		a->next = req->arena;
		req->arena = a;
	}
	p = (char *)a + ARENA_HDR + a->used;
	a->used += need;
	return p;
}

void rrr__svc_req_end(struct rrr_svc_req *req)
{
	struct rrr__svc_arena *a = req->arena, *n;

	/* the transports run it while the arguments are valid; a request that
	 * ends without them having done so still runs it exactly once */
	rrr__svc_req_after_reply(req, false);

	if (req->release) { /* zero-copy payload (svc_req.c): no longer used */
		req->release(req->release_arg);
		req->release = NULL;
	}

	for (; a; a = n) {
		n = a->next;
		arena_block_put(a);
	}
	req->arena = NULL;
	req->prog = NULL;
}

void rrr__svc_arena_stats(struct rrr__svc_arena_stats *st)
{
	if (!st)
		return;
	if (tls_arena) {
		*st = tls_arena->st;
		st->cached_small = tls_arena->nsmall;
		st->cached_large = tls_arena->nlarge;
		st->cached_bytes =
		    tls_arena->large_bytes + (uint64_t)tls_arena->nsmall * ARENA_SMALL;
	} else {
		memset(st, 0, sizeof(*st));
	}
}

int rrr__svc_arena_thread(bool on)
{
	if (on && !tls_arena) {
		tls_arena = calloc(1, sizeof(*tls_arena));
		return tls_arena ? 0 : -ENOMEM;
	}
	if (!on && tls_arena) {
		arena_cache_drain(tls_arena);
		free(tls_arena);
		tls_arena = NULL;
	}
	return 0;
}
