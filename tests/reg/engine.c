/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/engine.c - the registration engine over a fake provider:
 * what it hands the provider, the REG_MR / LOCAL_INV chains it builds, pool
 * growth and FIFO reuse, key rotation, remote invalidation, counters, and
 * every error path (injected failures). End-to-end behaviour on the real
 * soft provider is in tests/reg/soft.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <rrr/reg_engine.h>

#include "helpers/fake_provider.h"

#define PS   4096u
#define BASE UINT64_C(0x20000000)
#define E(off, len)                                                                                \
	{                                                                                          \
		(void *)(uintptr_t)(BASE + (off)), 0, (len)                                        \
	}

static struct fake_dev fd;
static struct rrr_mrpool *pool;
static struct rrr_reg_io io, io2;

static void setup_pool(enum rrr_map_model model, uint32_t dev_pages, uint32_t max_mrs,
		       uint32_t pages_per_mr)
{
	struct rrr_mrpool_opts o = {.max_mrs = max_mrs, .pages_per_mr = pages_per_mr};

	fake_dev_init(&fd, model, dev_pages);
	memset(&io, 0, sizeof(io));
	memset(&io2, 0, sizeof(io2));
	cr_assert_eq(rrr_mrpool_create(&fd.pd, &o, &pool), 0);
}

static void teardown_pool(void)
{
	rrr_mrpool_destroy(pool);
	pool = NULL;
	cr_expect_eq(fd.mrs_alive, 0, "pool destroy leaves %u MRs", fd.mrs_alive);
}

static struct rrr_reg_stats stats(void)
{
	struct rrr_reg_stats st;

	rrr_mrpool_stats(pool, &st);
	return st;
}

/* Invalidate io through LOCAL_INVs "executed" by the fake device. */
static void invalidate(struct rrr_reg_io *i)
{
	struct rrr_send_wr *inv = rrr_reg_build_inv(pool, i, 77);

	if (inv)
		cr_assert_eq(fake_execute(&fd, inv), 0);
	rrr_reg_inv_done(pool, i);
}

Test(engine, one_registration_64k)
{
	struct rrr_sg sg[16];
	unsigned i;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 8, 0);
	for (i = 0; i < 16; i++)
		sg[i] = (struct rrr_sg)E((uint64_t)i * PS, PS);
	cr_assert_eq(rrr_reg_map(pool, sg, 16, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(io.nsegs, 1u);
	cr_expect_eq(io.holes, 0u);
	cr_expect_eq(io.segs[0].length, 65536u);
	cr_expect_eq(io.segs[0].offset, BASE);
	cr_expect_eq(io.segs[0].handle, rrr_mr_rkey(io.mrs[0]));
	cr_expect(io.valid[0]);
	/* The provider got the caller's own entries, untouched. */
	cr_expect_eq(fake_mr_of(io.mrs[0])->last_nents, 16);
	cr_expect_eq(fake_mr_of(io.mrs[0])->last[15].page, sg[15].page);
	/* One unsignaled REG_MR WR carrying the MR and the rights. */
	cr_expect_eq(io.reg_wr[0].opcode, RRR_WR_REG_MR);
	cr_expect_eq(io.reg_wr[0].next, NULL);
	cr_expect_eq(io.reg_wr[0].flags, 0u);
	cr_expect_eq(io.reg_wr[0].u.reg.mr, io.mrs[0]);
	cr_expect_eq(io.reg_wr[0].u.reg.access, (unsigned)RRR_ACCESS_REMOTE_WRITE);
	cr_assert_eq(fake_execute(&fd, &io.reg_wr[0]), 0);
	cr_expect_eq(fake_mr_of(io.mrs[0])->state, FAKE_VALID);
	invalidate(&io);
	cr_expect_eq(io.nsegs, 0u);
	cr_expect_eq(stats().registrations, 1u);
	cr_expect_eq(stats().local_inv, 1u);
	teardown_pool();
}

/* Interior hole + FBO on a page-list device: three registrations, chained
 * REG_MRs, and a LOCAL_INV chain where only the last WR is signaled. */
Test(engine, holes_chain_and_inv)
{
	const struct rrr_sg sg[] = {E(100, PS - 100), E(PS, PS), E(3 * PS + 8, 50),
				    E(5 * PS, 2 * PS)};
	struct rrr_send_wr *inv, *w;
	unsigned n = 0;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 8, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 4, RRR_ACCESS_REMOTE_READ, &io), 0);
	cr_assert_eq(io.nsegs, 3u);
	cr_expect_eq(io.holes, 2u);
	cr_expect_eq(io.segs[0].offset, BASE + 100);
	cr_expect_eq(io.segs[0].length, 2 * PS - 100);
	cr_expect_eq(io.segs[1].offset, BASE + 3 * PS + 8);
	cr_expect_eq(io.segs[1].length, 50u);
	cr_expect_eq(io.segs[2].offset, BASE + 5 * PS);
	cr_expect_eq(io.segs[2].length, 2 * PS);
	cr_expect_eq(io.reg_wr[0].next, &io.reg_wr[1]);
	cr_expect_eq(io.reg_wr[1].next, &io.reg_wr[2]);
	cr_expect_eq(io.reg_wr[2].next, NULL);
	cr_expect_neq(io.mrs[0], io.mrs[1]);
	cr_expect_neq(io.segs[0].handle, io.segs[1].handle);
	cr_assert_eq(fake_execute(&fd, &io.reg_wr[0]), 0);

	inv = rrr_reg_build_inv(pool, &io, 0xabc);
	for (w = inv; w; w = w->next, n++) {
		cr_expect_eq(w->opcode, RRR_WR_LOCAL_INV);
		cr_expect_eq(w->u.inv.rkey, io.segs[n].handle);
		if (w->next) {
			cr_expect_eq(w->flags & RRR_SEND_SIGNALED, 0u, "only the last is signaled");
		} else {
			cr_expect_eq(w->flags, (unsigned)RRR_SEND_SIGNALED);
			cr_expect_eq(w->wr_id, 0xabcu);
		}
	}
	cr_expect_eq(n, 3u);
	cr_assert_eq(fake_execute(&fd, inv), 0);
	rrr_reg_inv_done(pool, &io);
	cr_expect_eq(stats().registrations, 3u);
	cr_expect_eq(stats().hole_splits, 2u);
	cr_expect_eq(stats().local_inv, 3u);
	teardown_pool();
}

/* A depth cut inside an entry: the provider receives trimmed entries in
 * canonical form, and each registration covers exactly its bytes. */
Test(engine, depth_cut_trims_entries)
{
	const struct rrr_sg sg[] = {E(100, 6 * PS)};
	struct fake_mr *m0, *m1;

	setup_pool(RRR_MAP_PAGE_LIST, 4, 8, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_assert_eq(io.nsegs, 2u);
	m0 = fake_mr_of(io.mrs[0]);
	m1 = fake_mr_of(io.mrs[1]);
	cr_expect_eq(m0->last_nents, 1);
	cr_expect_eq(m0->last[0].page, (void *)(uintptr_t)BASE);
	cr_expect_eq(m0->last[0].offset, 100u);
	cr_expect_eq(m0->last[0].length, 4 * PS - 100);
	cr_expect_eq(m1->last[0].page, (void *)(uintptr_t)(BASE + 4 * PS));
	cr_expect_eq(m1->last[0].offset, 0u);
	cr_expect_eq(m1->last[0].length, 2 * PS + 100);
	cr_expect_eq(io.segs[1].offset, BASE + 4 * PS);
	cr_expect_eq(io.holes, 0u);
	cr_expect_eq(stats().depth_splits, 1u);
	cr_expect_eq(stats().hole_splits, 0u);
	invalidate(&io);
	teardown_pool();
}

/* Interior empty entries never reach the provider. */
Test(engine, empty_entries_dropped)
{
	const struct rrr_sg sg[] = {E(0, 0), E(0, PS), E(77, 0), E(PS, PS), E(0, 0)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 8, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 5, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_assert_eq(io.nsegs, 1u);
	cr_expect_eq(fake_mr_of(io.mrs[0])->last_nents, 2);
	cr_expect_eq(io.segs[0].length, 2 * PS);
	invalidate(&io);
	teardown_pool();
}

/* A window device maps contiguous iovecs as one coalesced range and splits
 * at every discontinuity. */
Test(engine, virt_contig_coalesces)
{
	const struct iovec iov[] = {
	    {(void *)(uintptr_t)(BASE + 10), 100},
	    {(void *)(uintptr_t)(BASE + 110), 5000},
	    {(void *)(uintptr_t)(BASE + 9 * PS), 10},
	};

	setup_pool(RRR_MAP_VIRT_CONTIG, 1024, 8, 0);
	cr_assert_eq(rrr_reg_map_iov(pool, iov, 3, RRR_ACCESS_REMOTE_READ, &io), 0);
	cr_assert_eq(io.nsegs, 2u);
	cr_expect_eq(fake_mr_of(io.mrs[0])->last_nents, 1);
	cr_expect_eq(io.segs[0].offset, BASE + 10);
	cr_expect_eq(io.segs[0].length, 5100u);
	cr_expect_eq(io.segs[1].offset, BASE + 9 * PS);
	cr_expect_eq(io.holes, 1u);
	invalidate(&io);
	teardown_pool();
}

/* An SG_GAPS device maps a gappy list in one registration. */
Test(engine, sg_gaps_one_registration)
{
	const struct rrr_sg sg[] = {E(5, 10), E(PS + 700, 30), E(8 * PS + 1, PS)};

	setup_pool(RRR_MAP_SG_GAPS, 256, 8, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 3, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(io.nsegs, 1u);
	cr_expect_eq(io.segs[0].length, 10u + 30u + PS);
	cr_expect_eq(io.segs[0].offset, BASE + 5);
	invalidate(&io);
	teardown_pool();
}

Test(engine, remote_invalidation)
{
	const struct rrr_sg sg[] = {E(0, PS), E(2 * PS + 1, 10)};
	struct rrr_send_wr *inv;
	uint32_t h0, h1;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 8, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 2, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io2), 0);
	cr_assert_eq(io.nsegs, 2u);
	h0 = io.segs[0].handle;
	h1 = io.segs[1].handle;
	/* Another I/O's handle, a made-up one, a stale key of ours: -EPERM. */
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, io2.segs[0].handle), -EPERM);
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, 0xdeadbeef), -EPERM);
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, h0 ^ 1), -EPERM);
	cr_expect(io.valid[0] && io.valid[1] && io2.valid[0]);
	/* Ours: accepted once, then -EPERM. */
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, h1), 0);
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io, h1), -EPERM);
	cr_expect_not(io.valid[1]);
	/* Only the still-valid MR gets a LOCAL_INV, and it is signaled. */
	inv = rrr_reg_build_inv(pool, &io, 5);
	cr_assert_not_null(inv);
	cr_expect_eq(inv->u.inv.rkey, h0);
	cr_expect_eq(inv->next, NULL);
	cr_expect_eq(inv->flags, (unsigned)RRR_SEND_SIGNALED);
	cr_assert_eq(fake_execute(&fd, inv), 0);
	/* mark the remotely invalidated one INVALID in the fake too */
	fake_mr_of(io.mrs[1])->state = FAKE_INVALID;
	rrr_reg_inv_done(pool, &io);
	/* All remote: no LOCAL_INV needed at all. */
	cr_expect_eq(rrr_reg_remote_invalidated(pool, &io2, io2.segs[0].handle), 0);
	cr_expect_null(rrr_reg_build_inv(pool, &io2, 6));
	fake_mr_of(io2.mrs[0])->state = FAKE_INVALID;
	rrr_reg_inv_done(pool, &io2);
	cr_expect_eq(stats().remote_inv, 2u);
	cr_expect_eq(stats().local_inv, 1u);
	teardown_pool();
}

/* The pool grows to max_mrs before it reuses anything, then reuses the MR
 * freed longest ago; one MR's handle repeats only after 256 of its maps. */
Test(engine, growth_fifo_and_key_bound)
{
	const struct rrr_sg sg[] = {E(0, PS)};
	struct rrr_mr *order[4];
	uint32_t first_handle[4];
	unsigned i, n;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 4, 0);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
		order[i] = io.mrs[0];
		first_handle[i] = io.segs[0].handle;
		invalidate(&io);
	}
	cr_expect_eq(stats().mrs_allocated, 4u, "grows although MRs were free");
	for (i = 0; i < 4; i++)
		cr_expect_neq(order[i], order[(i + 1) % 4]);
	/* Round robin from here: the same order again, with new keys. */
	for (n = 1; n < 256; n++) {
		for (i = 0; i < 4; i++) {
			cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
			cr_assert_eq(io.mrs[0], order[i]);
			cr_assert_neq(io.segs[0].handle, first_handle[i],
				      "handle of MR %u repeated after %u maps", i, n);
			invalidate(&io);
		}
	}
	/* The 257th map of an MR wraps its 8-bit key: the documented bound,
	 * reached after 256 * 4 registrations on this pool. */
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(io.segs[0].handle, first_handle[0]);
	cr_expect_eq(stats().registrations, 256u * 4 + 1);
	invalidate(&io);
	cr_expect_eq(stats().mrs_allocated, 4u);
	teardown_pool();
}

/* The pool's arrays grow with its MRs (from 32 entries, doubling to
 * max_mrs): MRs freed before a growth come back first, in the order they
 * were freed, once max_mrs exist. */
Test(engine, growth_keeps_fifo_order)
{
	static struct rrr_reg_io ios[100];
	const struct rrr_sg sg[] = {E(0, PS)};
	struct rrr_mr *freed[20];
	unsigned i;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 100, 0);
	for (i = 0; i < 40; i++)
		cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &ios[i]), 0);
	/* 20 back to the pool, in an order of their own */
	for (i = 0; i < 20; i++) {
		struct rrr_reg_io *x = &ios[(i * 7) % 40];
		struct rrr_send_wr *inv;

		freed[i] = x->mrs[0];
		inv = rrr_reg_build_inv(pool, x, 77);
		cr_assert_not_null(inv);
		cr_assert_eq(fake_execute(&fd, inv), 0);
		rrr_reg_inv_done(pool, x);
		x->nsegs = 0;
	}
	/* 60 more are fresh (the arrays grow past 64 meanwhile) */
	for (i = 40; i < 100; i++)
		cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &ios[i]), 0);
	cr_expect_eq(stats().mrs_allocated, 100u);
	/* then the freed ones, oldest freed first */
	for (i = 0; i < 20; i++) {
		cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
		cr_assert_eq(io.mrs[0], freed[i], "reuse %u is the MR freed %u-th", i, i);
		invalidate(&io);
	}
	cr_expect_eq(stats().mrs_allocated, 100u);
	for (i = 0; i < 100; i++)
		if (ios[i].nsegs)
			invalidate(&ios[i]);
	teardown_pool();
}

Test(engine, pool_exhaustion)
{
	const struct rrr_sg one[] = {E(0, PS)};
	const struct rrr_sg two[] = {E(0, 10), E(PS, 10)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 2, 0);
	cr_assert_eq(rrr_reg_map(pool, one, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	/* two registrations needed, one MR left: refused before mapping any */
	cr_expect_eq(rrr_reg_map(pool, two, 2, RRR_ACCESS_REMOTE_WRITE, &io2), -ENOBUFS);
	cr_expect_eq(io2.nsegs, 0u);
	cr_expect_eq(stats().pool_empty, 1u);
	cr_expect_eq(fd.map_calls, 1u);
	cr_assert_eq(rrr_reg_map(pool, one, 1, RRR_ACCESS_REMOTE_WRITE, &io2), 0);
	cr_expect_eq(rrr_reg_map(pool, one, 1, RRR_ACCESS_REMOTE_WRITE, &io2), -ENOBUFS);
	invalidate(&io);
	cr_expect_eq(rrr_reg_map(pool, one, 1, RRR_ACCESS_REMOTE_WRITE, &io2), 0);
	invalidate(&io2);
	teardown_pool();
}

Test(engine, too_many_segments)
{
	struct rrr_sg sg[RRR_REG_MAX_SEGS + 1];
	unsigned i;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 128, 0);
	for (i = 0; i <= RRR_REG_MAX_SEGS; i++)
		sg[i] = (struct rrr_sg)E((uint64_t)i * PS + 1, 1);
	cr_expect_eq(rrr_reg_map(pool, sg, RRR_REG_MAX_SEGS + 1, RRR_ACCESS_REMOTE_WRITE, &io),
		     -E2BIG);
	cr_expect_eq(fd.map_calls, 0u, "planned before mapping");
	cr_expect_eq(rrr_reg_map(pool, sg, RRR_REG_MAX_SEGS, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(io.nsegs, (uint32_t)RRR_REG_MAX_SEGS);
	invalidate(&io);
	teardown_pool();
}

Test(engine, bad_arguments)
{
	const struct rrr_sg empty[] = {E(0, 0)};
	const struct rrr_sg sg[] = {E(0, 1)};
	struct rrr_mrpool_opts big = {.pages_per_mr = 512};
	struct rrr_mrpool *p2 = (void *)1;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 8, 0);
	cr_expect_eq(rrr_reg_map(pool, empty, 1, 0, &io), -EINVAL);
	cr_expect_eq(rrr_reg_map(pool, sg, 0, 0, &io), -EINVAL);
	cr_expect_eq(rrr_reg_map(NULL, sg, 1, 0, &io), -EINVAL);
	cr_expect_eq(rrr_reg_map(pool, sg, 1, 0, NULL), -EINVAL);
	cr_expect_eq(rrr_mrpool_create(&fd.pd, &big, &p2), -EINVAL, "deeper than device");
	cr_expect_null(p2);
	cr_expect_eq(rrr_mrpool_create(NULL, NULL, &p2), -EINVAL);
	rrr_reg_recover(pool, &io); /* nothing mapped: no-op */
	cr_expect_eq(stats().recoveries, 0u);
	teardown_pool();
}

/* A map failure on the second registration recovers the first MR; the
 * caller has nothing to clean up and the pool is whole again. */
Test(engine, map_failure_unwinds)
{
	const struct rrr_sg sg[] = {E(0, 10), E(PS, 10), E(2 * PS, 10)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 3, 0);
	fd.fail_map_call = 2;
	cr_expect_eq(rrr_reg_map(pool, sg, 3, RRR_ACCESS_REMOTE_WRITE, &io), -ENOMEM);
	cr_expect_eq(io.nsegs, 0u);
	cr_expect_eq(stats().map_errors, 1u);
	cr_expect_eq(stats().recoveries, 2u);
	cr_expect_eq(stats().registrations, 0u);
	/* every MR is INVALID and free: a full-size map succeeds */
	cr_assert_eq(rrr_reg_map(pool, sg, 3, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	invalidate(&io);
	teardown_pool();
}

/* A provider that maps fewer entries than its model allows is caught. */
Test(engine, short_map_is_eio)
{
	const struct rrr_sg sg[] = {E(0, PS), E(PS, PS)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 2, 0);
	fd.short_map_call = 1;
	cr_expect_eq(rrr_reg_map(pool, sg, 2, RRR_ACCESS_REMOTE_WRITE, &io), -EIO);
	cr_expect_not_null(rrr_last_error());
	cr_expect_eq(stats().map_errors, 1u);
	cr_assert_not_null(fd.mrs[1]);
	cr_expect_eq(fd.mrs[1]->state, FAKE_INVALID, "recovered after the short map");
	teardown_pool();
}

/* After a flush every MR of the I/O is recovered (fresh key, INVALID), old
 * handles match nothing, and the MRs are reused. */
Test(engine, recovery_after_flush)
{
	const struct rrr_sg sg[] = {E(0, 10), E(PS, 10)};
	uint32_t h0, h1;

	setup_pool(RRR_MAP_PAGE_LIST, 256, 2, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 2, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_assert_eq(fake_execute(&fd, &io.reg_wr[0]), 0);
	h0 = io.segs[0].handle;
	h1 = io.segs[1].handle;
	rrr_reg_recover(pool, &io);
	cr_expect_eq(io.nsegs, 0u);
	cr_expect_null(fake_find(&fd, h0));
	cr_expect_null(fake_find(&fd, h1));
	cr_expect_eq(fd.mrs[1]->state, FAKE_INVALID);
	cr_expect_eq(fd.mrs[2]->state, FAKE_INVALID);
	cr_expect_eq(stats().recoveries, 2u);
	cr_assert_eq(rrr_reg_map(pool, sg, 2, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	invalidate(&io);
	teardown_pool();
}

/* An MR that cannot be recovered is destroyed, never reused. */
Test(engine, unrecoverable_mr_dropped)
{
	const struct rrr_sg sg[] = {E(0, 10)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 1, 0);
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	fd.fail_recover = true;
	rrr_reg_recover(pool, &io);
	cr_expect_eq(stats().recover_errors, 1u);
	cr_expect_eq(fd.deregs, 1u);
	cr_expect_eq(fd.mrs_alive, 0u);
	fd.fail_recover = false;
	/* the pool may grow a replacement */
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(stats().mrs_allocated, 2u);
	invalidate(&io);
	teardown_pool();
}

/* Growth failure with nothing free is reported, not hidden. */
Test(engine, alloc_failure)
{
	const struct rrr_sg sg[] = {E(0, 10)};

	setup_pool(RRR_MAP_PAGE_LIST, 256, 4, 0);
	fd.fail_alloc = true;
	cr_expect_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), -ENOMEM);
	fd.fail_alloc = false;
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	invalidate(&io);
	/* growth fails but a free MR exists: reuse it */
	fd.fail_alloc = true;
	cr_assert_eq(rrr_reg_map(pool, sg, 1, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	invalidate(&io);
	teardown_pool();
}

Test(engine, iovec_limits)
{
	static struct iovec iov[1025];
	unsigned i;

	setup_pool(RRR_MAP_SG_GAPS, 256, 8, 0);
	for (i = 0; i < 1025; i++) {
		iov[i].iov_base = (void *)(uintptr_t)(BASE + (uint64_t)i * 8);
		iov[i].iov_len = 8;
	}
	cr_expect_eq(rrr_reg_map_iov(pool, iov, 1025, RRR_ACCESS_REMOTE_WRITE, &io), -E2BIG);
	cr_assert_eq(rrr_reg_map_iov(pool, iov, 256, RRR_ACCESS_REMOTE_WRITE, &io), 0);
	cr_expect_eq(io.nsegs, 1u, "256 8-byte entries: 256 pages counted, one MR");
	cr_expect_eq(io.segs[0].length, 2048u);
	invalidate(&io);
	iov[0].iov_len = (size_t)UINT32_MAX + 1;
	cr_expect_eq(rrr_reg_map_iov(pool, iov, 1, RRR_ACCESS_REMOTE_WRITE, &io), -EINVAL);
	cr_expect_eq(rrr_reg_map_iov(pool, NULL, 1, RRR_ACCESS_REMOTE_WRITE, &io), -EINVAL);
	teardown_pool();
}
