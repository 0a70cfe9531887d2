/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/tsan/stag_race.c - STag lookups racing invalidation, as a
 * plain program for ThreadSanitizer (Criterion cannot start under TSan:
 * Snaipe/Criterion#274). tests/soft/unit.c builds this with
 * -fsanitize=thread together with the soft provider's sources and runs it.
 *
 * Readers take the in-flight guard of a registration, check the window is
 * still open and "place" bytes into it; the owner invalidates, scribbles
 * over the pages (reuse), re-maps with a new key and validates again. TSan
 * reports a data race if a placement could overlap the reuse; the program
 * itself counts placements that saw the window closed.
 * Exit status: 0 ok, 1 violation, 2 setup failure.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/soft/soft.h"

/* provider.c names the verbs provider; this program has only soft */
const struct rrr__provider_ops rrr__verbs_ops = { .name = "verbs" };

struct race {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct soft_dev *sd;
	_Atomic uint32_t handle;
	atomic_bool stop, closed;
	atomic_long hits, misses;
	atomic_int violations;
	uint8_t buf[256];
};

static void *reader(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		struct soft_mr *m;
		uint32_t h = atomic_load(&r->handle);

		if (rrr__soft_mr_get(r->sd, h, r->pd, RRR_ACCESS_REMOTE_WRITE, (uintptr_t)r->buf,
				     sizeof(r->buf), false, &m)) {
			atomic_fetch_add(&r->misses, 1);
			sched_yield();
			continue;
		}
		if (atomic_load(&r->closed))
			atomic_fetch_add(&r->violations, 1);
		memset(r->buf, (int)(h & 0xff), 64); /* the placement: plain writes */
		if (atomic_load(&r->closed))
			atomic_fetch_add(&r->violations, 1);
		rrr__soft_mr_put(m);
		atomic_fetch_add(&r->hits, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	struct race *r = calloc(1, sizeof(*r));
	struct rrr_mr *mr;
	struct soft_mr *m;
	struct rrr_sg sg;
	pthread_t th[3];

	if (!r || rrr_device_open("soft", NULL, &r->dev) || rrr_pd_alloc(r->dev, &r->pd))
		return 2;
	r->sd = soft_dev(r->dev);
	sg = (struct rrr_sg){ r->buf, 0, sizeof(r->buf) };
	if (rrr_mr_alloc(r->pd, 1, &mr) || rrr_mr_map_sg(mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE) != 1)
		return 2;
	m = container_of(mr, struct soft_mr, base);
	if (rrr__soft_mr_validate(m, r->pd, RRR_ACCESS_REMOTE_WRITE))
		return 2;
	atomic_store(&r->handle, rrr_mr_rkey(mr));
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, reader, r);
	for (int round = 0; round < rounds; round++) {
		long seen = atomic_load(&r->hits);

		for (int y = 0; y < 20 && atomic_load(&r->hits) == seen; y++)
			sched_yield();
		if (rrr__soft_invalidate(r->sd, rrr_mr_rkey(mr), r->pd, false))
			return 2;
		atomic_store(&r->closed, true);
		memset(r->buf, 0xcc, sizeof(r->buf)); /* the owner reuses the pages */
		if (rrr_mr_map_sg(mr, &sg, 1, RRR_ACCESS_REMOTE_WRITE) != 1)
			return 2;
		atomic_store(&r->closed, false);
		if (rrr__soft_mr_validate(m, r->pd, RRR_ACCESS_REMOTE_WRITE))
			return 2;
		if (round % 4)
			atomic_store(&r->handle, rrr_mr_rkey(mr));
	}
	atomic_store(&r->stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("hits %ld misses %ld violations %d\n", atomic_load(&r->hits),
	       atomic_load(&r->misses), atomic_load(&r->violations));
	rrr__soft_invalidate(r->sd, rrr_mr_rkey(mr), r->pd, false);
	rrr_mr_dereg(mr);
	rrr_pd_free(r->pd);
	rrr_device_close(r->dev);
	return atomic_load(&r->violations) || !atomic_load(&r->hits) ? 1 : 0;
}
