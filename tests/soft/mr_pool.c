/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/mr_pool.c - memory of the soft provider's registrations
 * (transport/soft/mr.c): a fast-registration MR maps up to SOFT_MR_INLINE
 * pieces in its record and makes its max_pages array on the first larger
 * map, keeping it; deregistered records are recycled (after the grace
 * period rrr_mr_dereg waits) into a bounded free list and come back zeroed,
 * with fresh handles that the table resolves to the new registration only.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/soft/soft.h"

static struct rrr_device *dev;
static struct rrr_pd *pd;

static void setup(void)
{
	cr_assert_eq(rrr_device_open("soft", "max_fr_pages=16", &dev), 0);
	cr_assert_eq(rrr_pd_alloc(dev, &pd), 0);
}

static void teardown(void)
{
	cr_assert_eq(rrr_pd_free(pd), 0);
	rrr_device_close(dev);
}

TestSuite(soft_mr_pool, .init = setup, .fini = teardown, .timeout = 120);

/* Map @n one-byte pieces of @buf (every other byte), make it VALID, and
 * check that a lookup over the whole registration yields those pieces. */
static void map_check(struct rrr_mr *mr, uint8_t *buf, int n)
{
	struct soft_mr *m = container_of(mr, struct soft_mr, base), *got;
	struct rrr_sg sg[16];
	struct iovec iov[16];
	uint32_t h;

	for (int i = 0; i < n; i++)
		sg[i] = (struct rrr_sg){buf, (uint32_t)(2 * i), 1};
	cr_assert_eq(rrr_mr_map_sg(mr, sg, n, RRR_ACCESS_REMOTE_WRITE), n);
	cr_assert_eq(rrr__soft_mr_validate(m, pd, RRR_ACCESS_REMOTE_WRITE), 0);
	h = rrr_mr_rkey(mr);
	cr_assert_eq(rrr__soft_mr_get(soft_dev(dev), h, pd, RRR_ACCESS_REMOTE_WRITE,
				      rrr_mr_iova(mr), (uint64_t)n, false, &got),
		     0);
	cr_assert_eq(got, m);
	cr_assert_eq(rrr__soft_mr_iov(got, rrr_mr_iova(mr), (uint64_t)n, iov, 16), n);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(iov[i].iov_base, buf + 2 * i, "piece %d of %d", i, n);
		cr_assert_eq(iov[i].iov_len, 1);
	}
	rrr__soft_mr_put(got);
	cr_assert_eq(rrr__soft_invalidate(soft_dev(dev), h, pd, false), 0);
}

Test(soft_mr_pool, pieces_in_record_then_array_kept)
{
	static uint8_t buf[64];
	struct rrr_mr *mr;
	struct soft_mr *m;

	cr_assert_eq(rrr_mr_alloc(pd, 16, &mr), 0);
	m = container_of(mr, struct soft_mr, base);
	cr_assert_null(m->big, "no page-list array before a map needs one");
	map_check(mr, buf, 1);
	map_check(mr, buf, SOFT_MR_INLINE);
	cr_assert_null(m->big, "%u pieces fit the record", SOFT_MR_INLINE);
	map_check(mr, buf, SOFT_MR_INLINE + 1);
	cr_assert_not_null(m->big);
	cr_assert_eq(m->chunks, m->big);
	struct iovec *big = m->big;
	map_check(mr, buf, 16);
	map_check(mr, buf, 2);
	cr_assert_eq(m->big, big, "the array is kept, not made again");
	cr_assert_eq(rrr_mr_dereg(mr), 0);
}

Test(soft_mr_pool, records_recycled_zeroed_with_fresh_handles)
{
	enum { N = 8 };
	static uint8_t buf[64];
	struct rrr_mr *mr[N], *again[N];
	struct soft_mr *old[N];
	unsigned f0 = rrr__soft_mr_free_count();

	for (int i = 0; i < N; i++) {
		cr_assert_eq(rrr_mr_alloc(pd, 16, &mr[i]), 0);
		map_check(mr[i], buf, 6); /* every record gets its big array */
		old[i] = container_of(mr[i], struct soft_mr, base);
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(rrr_mr_dereg(mr[i]), 0);
	cr_assert_eq(rrr__soft_mr_free_count(), f0 + N);
	for (int i = 0; i < N; i++) {
		struct soft_mr *m;
		bool seen = false;

		cr_assert_eq(rrr_mr_alloc(pd, 3, &again[i]), 0);
		m = container_of(again[i], struct soft_mr, base);
		for (int k = 0; k < N; k++)
			seen |= m == old[k];
		cr_assert(seen, "a new record instead of a recycled one");
		cr_assert_null(m->big, "recycled without the old array");
		cr_assert_eq(m->maxchunks, 3);
		cr_assert_eq(atomic_load(&m->state), SOFT_MR_INVALID);
		cr_assert_eq(atomic_load(&m->inflight), 0);
		cr_assert_eq(rrr_mr_length(again[i]), 0);
		/* the table resolves its handle to it once VALID */
		map_check(again[i], buf, 3);
	}
	cr_assert_eq(rrr__soft_mr_free_count(), f0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rrr_mr_dereg(again[i]), 0);
	/* long-lived registrations use and give back the same records */
	struct rrr_mr *ll;
	cr_assert_eq(rrr_mr_reg(pd, buf, sizeof(buf), RRR_ACCESS_REMOTE_READ, &ll), 0);
	cr_assert_eq(rrr__soft_mr_free_count(), f0 + N - 1);
	cr_assert_eq(rrr_mr_length(ll), sizeof(buf));
	cr_assert_eq(rrr_mr_dereg(ll), 0);
	cr_assert_eq(rrr__soft_mr_free_count(), f0 + N);
}

Test(soft_mr_pool, free_list_bounded)
{
	enum { N = SOFT_MR_FREE_MAX + 60 };
	static struct rrr_mr *mr[N];

	for (int i = 0; i < N; i++)
		cr_assert_eq(rrr_mr_alloc(pd, 1, &mr[i]), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(rrr_mr_dereg(mr[i]), 0);
	cr_assert_eq(rrr__soft_mr_free_count(), SOFT_MR_FREE_MAX);
}
