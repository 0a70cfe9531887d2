/* SPDX-License-Identifier: MIT */
/*
 * tests/tsan/stag.c - the soft provider's STag table under ThreadSanitizer:
 * lock-free lookups (liburcu, memb flavour) racing invalidation, re-mapping
 * and deregistration.
 *
 * Normal operation: NR reader threads look up the handles of NMR live
 * registrations (and of registrations being churned) exactly as the
 * receive path does (rrr__soft_mr_get, place, rrr__soft_mr_put); each
 * reader "places" plain bytes into its own slice of the window. The main
 * thread cycles every live registration: invalidate, mark closed, reuse the
 * pages with plain writes, re-map with a new key, validate, publish the new
 * handle. A churn thread allocates, maps, validates, invalidates and
 * deregisters short-lived registrations (STag slot freed after an RCU grace
 * period, slot reused) and publishes their handles to the readers, so
 * lookups also race the slot being cleared and freed.
 *
 * Checks: a placement that overlaps a closed window (TSan sees it as a
 * race with the owner's reuse writes; the program counts it too), a
 * lookup that succeeds on a deregistered handle, or no successful lookup
 * at all exit 1; setup failures exit 2; TSan reports exit 66 under
 * `make tsan`.
 *
 * Usage: stag [rounds] (default 3000).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/soft/soft.h"

#define NR 3
#define NMR 4
#define WIN 256 /* bytes per window; reader r writes [r*64, r*64+64) */

struct win {
	struct rrr_mr *mr;
	_Atomic uint32_t handle;
	atomic_bool closed;
	uint8_t buf[WIN];
};

struct ctx {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct soft_dev *sd;
	struct win w[NMR];
	_Atomic uint32_t churn_handle; /* a short-lived registration's handle */
	atomic_bool stop;
	atomic_long hits, misses, churn_hits;
	atomic_int violations, next_reader;
	uint8_t churn_buf[WIN];
};

static void *reader(void *arg)
{
	struct ctx *c = arg;
	int me = atomic_fetch_add(&c->next_reader, 1);
	unsigned n = 0;

	while (!atomic_load(&c->stop)) {
		struct win *w = &c->w[n++ % NMR];
		struct soft_mr *m;
		uint32_t h = atomic_load(&w->handle);

		if (rrr__soft_mr_get(c->sd, h, c->pd, RRR_ACCESS_REMOTE_WRITE, (uintptr_t)w->buf,
				     WIN, false, &m)) {
			atomic_fetch_add(&c->misses, 1);
		} else {
			if (atomic_load(&w->closed))
				atomic_fetch_add(&c->violations, 1);
			memset(w->buf + me * 64, (int)(h & 0xff), 64); /* the placement */
			if (atomic_load(&w->closed))
				atomic_fetch_add(&c->violations, 1);
			rrr__soft_mr_put(m);
			atomic_fetch_add(&c->hits, 1);
		}
		/* a lookup of a registration that may be going away right now;
		 * the churn thread never writes its buffer, so read only */
		h = atomic_load(&c->churn_handle);
		if (h && !rrr__soft_mr_get(c->sd, h, c->pd, RRR_ACCESS_REMOTE_WRITE,
					   (uintptr_t)c->churn_buf, 16, false, &m)) {
			volatile uint8_t v = c->churn_buf[me];

			(void)v;
			rrr__soft_mr_put(m);
			atomic_fetch_add(&c->churn_hits, 1);
		}
		if (n % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void *churn(void *arg)
{
	struct ctx *c = arg;
	struct rrr_sg sg = { c->churn_buf, 0, WIN };

	while (!atomic_load(&c->stop)) {
		struct rrr_mr *mr;
		struct soft_mr *m;
		uint32_t h;

		if (rrr_mr_alloc(c->pd, 1, &mr))
			goto bad;
		if (rrr_mr_map_sg(mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE) != 1)
			goto bad;
		m = container_of(mr, struct soft_mr, base);
		if (rrr__soft_mr_validate(m, c->pd, RRR_ACCESS_REMOTE_WRITE))
			goto bad;
		h = rrr_mr_rkey(mr);
		atomic_store(&c->churn_handle, h);
		sched_yield();
		if (rrr__soft_invalidate(c->sd, h, c->pd, false))
			goto bad;
		rrr_mr_dereg(mr); /* clears the slot, waits a grace period */
		/* the handle is dead: a lookup must fail now, forever */
		if (!rrr__soft_mr_get(c->sd, h, c->pd, RRR_ACCESS_REMOTE_WRITE,
				      (uintptr_t)c->churn_buf, 16, false, &m)) {
			rrr__soft_mr_put(m);
			fprintf(stderr, "stag: deregistered handle %#x still found\n", h);
			atomic_fetch_add(&c->violations, 1);
		}
	}
	return NULL;
bad:
	fprintf(stderr, "stag: churn setup failed: %s\n", rrr_last_error());
	atomic_fetch_add(&c->violations, 1);
	return NULL;
}

static int open_win(struct ctx *c, struct win *w)
{
	struct rrr_sg sg = { w->buf, 0, WIN };

	if (rrr_mr_map_sg(w->mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE) != 1 ||
	    rrr__soft_mr_validate(container_of(w->mr, struct soft_mr, base), c->pd,
				  RRR_ACCESS_REMOTE_WRITE))
		return -1;
	atomic_store(&w->closed, false);
	atomic_store(&w->handle, rrr_mr_rkey(w->mr));
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3000;
	struct ctx *c = calloc(1, sizeof(*c));
	pthread_t th[NR + 1];
	int rc;

	if (!c || rrr_device_open("soft", NULL, &c->dev) || rrr_pd_alloc(c->dev, &c->pd))
		return 2;
	c->sd = soft_dev(c->dev);
	for (int i = 0; i < NMR; i++)
		if (rrr_mr_alloc(c->pd, 1, &c->w[i].mr) || open_win(c, &c->w[i]))
			return 2;
	for (int i = 0; i < NR; i++)
		pthread_create(&th[i], NULL, reader, c);
	pthread_create(&th[NR], NULL, churn, c);
	for (int round = 0; round < rounds && !atomic_load(&c->violations); round++) {
		struct win *w = &c->w[round % NMR];
		long seen = atomic_load(&c->hits);

		for (int y = 0; y < 20 && atomic_load(&c->hits) == seen; y++)
			sched_yield();
		if (rrr__soft_invalidate(c->sd, rrr_mr_rkey(w->mr), c->pd, false))
			return 2;
		atomic_store(&w->closed, true);
		memset(w->buf, 0xcc, WIN); /* the owner reuses the pages */
		if (open_win(c, w))
			return 2;
	}
	atomic_store(&c->stop, true);
	for (int i = 0; i <= NR; i++)
		pthread_join(th[i], NULL);
	printf("stag: %d rounds: hits %ld misses %ld churn hits %ld violations %d\n", rounds,
	       atomic_load(&c->hits), atomic_load(&c->misses), atomic_load(&c->churn_hits),
	       atomic_load(&c->violations));
	for (int i = 0; i < NMR; i++) {
		rrr__soft_invalidate(c->sd, rrr_mr_rkey(c->w[i].mr), c->pd, false);
		rrr_mr_dereg(c->w[i].mr);
	}
	rc = atomic_load(&c->violations) || !atomic_load(&c->hits) ? 1 : 0;
	rrr_pd_free(c->pd);
	rrr_device_close(c->dev);
	free(c);
	return rc;
}
