/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/plan.c - registration split planning, table driven.
 *
 * Each row is a scatterlist, a map model and a page-list depth, and the
 * segment list expected for it, worked out by hand (see the comment on each
 * row). The planner is pure, so no provider is involved.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "transport/reg_plan.h"

#define PS 4096u
#define BASE UINT64_C(0x10000000) /* page aligned, never dereferenced */
/* An entry at BASE + off (iovec form), and one in page form. */
#define E(off, len) {(void *)(uintptr_t)(BASE + (off)), 0, (len)}
#define P(pg, off, len) {(void *)(uintptr_t)(BASE + (uint64_t)(pg) * PS), (off), (len)}
/* Expected segment: first entry, entries, head_skip, tail_len, address
 * offset from BASE, length, pages, why. */
#define S(f, n, hs, tl, off, len, pg, w)                                                      \
	{.first = (f), .nents = (n), .head_skip = (hs), .tail_len = (tl), .addr = BASE + (off), \
	 .length = (len), .npages = (pg), .why = RRR__SPLIT_##w}

#define PL RRR_MAP_PAGE_LIST
#define VC RRR_MAP_VIRT_CONTIG
#define SG RRR_MAP_SG_GAPS

struct plan_case {
	const char *name;
	enum rrr_map_model model;
	uint32_t max_pages;
	unsigned n;
	struct rrr_sg sg[8];
	int rc; /* expected count or -errno */
	struct rrr__reg_plan_seg exp[6];
};

/* 64 KiB in 16 page-aligned contiguous pages. */
#define SIXTEEN_PAGES                                                                        \
	E(0 * PS, PS), E(1 * PS, PS), E(2 * PS, PS), E(3 * PS, PS), E(4 * PS, PS), E(5 * PS, PS), \
		E(6 * PS, PS), E(7 * PS, PS)

static const struct plan_case cases[] = {
	/* One aligned 64 KiB buffer: one registration everywhere. */
	{"contig64k", PL, 256, 1, {E(0, 65536)}, 1, {S(0, 1, 0, 65536, 0, 65536, 16, END)}},
	{"contig64k", VC, 256, 1, {E(0, 65536)}, 1, {S(0, 1, 0, 65536, 0, 65536, 16, END)}},
	{"contig64k", SG, 256, 1, {E(0, 65536)}, 1, {S(0, 1, 0, 65536, 0, 65536, 16, END)}},

	/* First-byte offset 100, 8 KiB: spans 3 pages, offset keeps the FBO. */
	{"fbo", PL, 256, 1, {E(100, 8192)}, 1, {S(0, 1, 0, 8192, 100, 8192, 3, END)}},
	{"fbo", VC, 256, 1, {E(100, 8192)}, 1, {S(0, 1, 0, 8192, 100, 8192, 3, END)}},
	{"fbo", SG, 256, 1, {E(100, 8192)}, 1, {S(0, 1, 0, 8192, 100, 8192, 3, END)}},
	/* Page form: page 1, offset 4096+50 = address BASE + 8242. */
	{"fbo-page-form", PL, 256, 1, {P(1, PS + 50, 10)}, 1, {S(0, 1, 0, 10, 8242, 10, 1, END)}},

	/* Partial last page: a whole page then 100 bytes of the next. */
	{"partial-last", PL, 256, 2, {E(0, PS), E(PS, 100)}, 1,
	 {S(0, 2, 0, 100, 0, 4196, 2, END)}},
	{"partial-last", VC, 256, 2, {E(0, PS), E(PS, 100)}, 1,
	 {S(0, 2, 0, 100, 0, 4196, 2, END)}},
	{"partial-last", SG, 256, 2, {E(0, PS), E(PS, 100)}, 1,
	 {S(0, 2, 0, 100, 0, 4196, 2, END)}},

	/* Interior hole: page 0, 200 bytes mid page 2, page 4. PAGE_LIST: the
	 * middle entry starts and ends mid-page, so three registrations;
	 * VIRT_CONTIG: nothing is contiguous, three; SG_GAPS: one of 3 pages. */
	{"interior-hole", PL, 256, 3, {E(0, PS), E(2 * PS + 100, 200), E(4 * PS, PS)}, 3,
	 {S(0, 1, 0, PS, 0, PS, 1, HOLE), S(1, 1, 0, 200, 2 * PS + 100, 200, 1, HOLE),
	  S(2, 1, 0, PS, 4 * PS, PS, 1, END)}},
	{"interior-hole", VC, 256, 3, {E(0, PS), E(2 * PS + 100, 200), E(4 * PS, PS)}, 3,
	 {S(0, 1, 0, PS, 0, PS, 1, HOLE), S(1, 1, 0, 200, 2 * PS + 100, 200, 1, HOLE),
	  S(2, 1, 0, PS, 4 * PS, PS, 1, END)}},
	{"interior-hole", SG, 256, 3, {E(0, PS), E(2 * PS + 100, 200), E(4 * PS, PS)}, 1,
	 {S(0, 3, 0, PS, 0, 2 * PS + 200, 3, END)}},

	/* Scattered whole pages: a page list maps them, a window cannot. */
	{"scattered-pages", PL, 256, 3, {E(0, PS), E(3 * PS, PS), E(7 * PS, PS)}, 1,
	 {S(0, 3, 0, PS, 0, 3 * PS, 3, END)}},
	{"scattered-pages", VC, 256, 3, {E(0, PS), E(3 * PS, PS), E(7 * PS, PS)}, 3,
	 {S(0, 1, 0, PS, 0, PS, 1, HOLE), S(1, 1, 0, PS, 3 * PS, PS, 1, HOLE),
	  S(2, 1, 0, PS, 7 * PS, PS, 1, END)}},
	{"scattered-pages", SG, 256, 3, {E(0, PS), E(3 * PS, PS), E(7 * PS, PS)}, 1,
	 {S(0, 3, 0, PS, 0, 3 * PS, 3, END)}},

	/* Contiguous bytes split mid-page (an iovec cut at 100): a page list
	 * sees a hole, a window does not. Bytes 100..4099 reach into page 1, so
	 * the window spans 2 pages and SG_GAPS counts 1 + 2 (page 0 twice). */
	{"contig-midpage-cut", PL, 256, 2, {E(0, 100), E(100, 4000)}, 2,
	 {S(0, 1, 0, 100, 0, 100, 1, HOLE), S(1, 1, 0, 4000, 100, 4000, 2, END)}},
	{"contig-midpage-cut", VC, 256, 2, {E(0, 100), E(100, 4000)}, 1,
	 {S(0, 2, 0, 4000, 0, 4100, 2, END)}},
	{"contig-midpage-cut", SG, 256, 2, {E(0, 100), E(100, 4000)}, 1,
	 {S(0, 2, 0, 4000, 0, 4100, 3, END)}},

	/* A single byte at the very end of a page. */
	{"single-byte", PL, 256, 1, {E(PS - 1, 1)}, 1, {S(0, 1, 0, 1, PS - 1, 1, 1, END)}},
	{"single-byte", VC, 256, 1, {E(PS - 1, 1)}, 1, {S(0, 1, 0, 1, PS - 1, 1, 1, END)}},
	{"single-byte", SG, 256, 1, {E(PS - 1, 1)}, 1, {S(0, 1, 0, 1, PS - 1, 1, 1, END)}},

	/* More entries (8 pages) than the page-list depth (3): 3 + 3 + 2. */
	{"depth-entries", PL, 3, 8, {SIXTEEN_PAGES}, 3,
	 {S(0, 3, 0, PS, 0, 3 * PS, 3, DEPTH), S(3, 3, 0, PS, 3 * PS, 3 * PS, 3, DEPTH),
	  S(6, 2, 0, PS, 6 * PS, 2 * PS, 2, END)}},
	{"depth-entries", VC, 3, 8, {SIXTEEN_PAGES}, 3,
	 {S(0, 3, 0, PS, 0, 3 * PS, 3, DEPTH), S(3, 3, 0, PS, 3 * PS, 3 * PS, 3, DEPTH),
	  S(6, 2, 0, PS, 6 * PS, 2 * PS, 2, END)}},
	{"depth-entries", SG, 3, 8, {SIXTEEN_PAGES}, 3,
	 {S(0, 3, 0, PS, 0, 3 * PS, 3, DEPTH), S(3, 3, 0, PS, 3 * PS, 3 * PS, 3, DEPTH),
	  S(6, 2, 0, PS, 6 * PS, 2 * PS, 2, END)}},

	/* One entry of 6 pages at FBO 100 spans 7 pages; depth 4 cuts it at
	 * BASE + 4 pages: 16284 bytes, then the rest 8292 bytes over 3 pages. */
	{"depth-cut-entry", PL, 4, 1, {E(100, 6 * PS)}, 2,
	 {S(0, 1, 0, 16284, 100, 16284, 4, DEPTH), S(0, 1, 16284, 8292, 4 * PS, 8292, 3, END)}},
	{"depth-cut-entry", VC, 4, 1, {E(100, 6 * PS)}, 2,
	 {S(0, 1, 0, 16284, 100, 16284, 4, DEPTH), S(0, 1, 16284, 8292, 4 * PS, 8292, 3, END)}},
	{"depth-cut-entry", SG, 4, 1, {E(100, 6 * PS)}, 2,
	 {S(0, 1, 0, 16284, 100, 16284, 4, DEPTH), S(0, 1, 16284, 8292, 4 * PS, 8292, 3, END)}},

	/* Depth 3 with an FBO: half a page (1 page) + 4 pages: 2 of the 4 fit,
	 * the cut entry continues in the next registration. */
	{"depth-cut-second", PL, 3, 2, {E(2048, 2048), E(PS, 4 * PS)}, 2,
	 {S(0, 2, 0, 2 * PS, 2048, 2048 + 2 * PS, 3, DEPTH),
	  S(1, 1, 2 * PS, 2 * PS, 3 * PS, 2 * PS, 2, END)}},

	/* Three contiguous 2 KiB entries from BASE+1024, depth 1.
	 * VIRT_CONTIG: one page of range each time, cutting entry 1 at BASE+4096.
	 * PAGE_LIST: entry 0 ends mid-page (hole); entry 1 spans 2 pages and is
	 * cut at the boundary (depth), its rest ends mid-page (hole).
	 * SG_GAPS: entry 0 fills the page (depth), then as PAGE_LIST but the
	 * rest of entry 1 is followed by a depth split, not a hole. */
	{"subpage-depth1", VC, 1, 3, {E(1024, 2048), E(3072, 2048), E(5120, 2048)}, 2,
	 {S(0, 2, 0, 1024, 1024, 3072, 1, DEPTH), S(1, 2, 1024, 2048, PS, 3072, 1, END)}},
	{"subpage-depth1", PL, 1, 3, {E(1024, 2048), E(3072, 2048), E(5120, 2048)}, 4,
	 {S(0, 1, 0, 2048, 1024, 2048, 1, HOLE), S(1, 1, 0, 1024, 3072, 1024, 1, DEPTH),
	  S(1, 1, 1024, 1024, PS, 1024, 1, HOLE), S(2, 1, 0, 2048, 5120, 2048, 1, END)}},
	{"subpage-depth1", SG, 1, 3, {E(1024, 2048), E(3072, 2048), E(5120, 2048)}, 4,
	 {S(0, 1, 0, 2048, 1024, 2048, 1, DEPTH), S(1, 1, 0, 1024, 3072, 1024, 1, DEPTH),
	  S(1, 1, 1024, 1024, PS, 1024, 1, DEPTH), S(2, 1, 0, 2048, 5120, 2048, 1, END)}},

	/* Zero-length entries: leading, interior (at an odd address), trailing
	 * are all skipped and never split; the interior one is inside nents. */
	{"zero-length", PL, 256, 5, {E(0, 0), E(0, PS), E(777, 0), E(PS, PS), E(9000, 0)}, 1,
	 {S(1, 3, 0, PS, 0, 2 * PS, 2, END)}},
	{"zero-length", VC, 256, 5, {E(0, 0), E(0, PS), E(777, 0), E(PS, PS), E(9000, 0)}, 1,
	 {S(1, 3, 0, PS, 0, 2 * PS, 1 + 1, END)}},
	{"zero-length", SG, 256, 5, {E(0, 0), E(0, PS), E(777, 0), E(PS, PS), E(9000, 0)}, 1,
	 {S(1, 3, 0, PS, 0, 2 * PS, 2, END)}},
	/* Zero-length entries just before a hole belong to neither side. */
	{"zero-before-hole", PL, 256, 4, {E(0, 100), E(0, 0), E(0, 0), E(PS, PS)}, 2,
	 {S(0, 1, 0, 100, 0, 100, 1, HOLE), S(3, 1, 0, PS, PS, PS, 1, END)}},

	/* Errors. */
	{"all-empty", PL, 256, 2, {E(0, 0), E(PS, 0)}, -EINVAL, {{0}}},
	{"no-entries", PL, 256, 0, {E(0, 0)}, -EINVAL, {{0}}},
	{"zero-depth", PL, 0, 1, {E(0, PS)}, -EINVAL, {{0}}},
	{"too-many", VC, 256, 7,
	 {E(0, 1), E(2, 1), E(4, 1), E(6, 1), E(8, 1), E(10, 1), E(12, 1)}, -E2BIG, {{0}}},
};

static void check_case(const struct plan_case *c)
{
	struct rrr__reg_plan_seg out[6];
	int rc, k;

	memset(out, 0xa5, sizeof(out));
	rc = rrr__reg_plan(c->sg, c->n, c->model, PS, c->max_pages, out, 6);
	cr_assert_eq(rc, c->rc, "%s/model %d: rc %d, expected %d", c->name, c->model, rc, c->rc);
	for (k = 0; k < rc; k++) {
		const struct rrr__reg_plan_seg *e = &c->exp[k], *o = &out[k];

		cr_expect_eq(o->first, e->first, "%s/%d seg %d first %u != %u", c->name, c->model,
			     k, o->first, e->first);
		cr_expect_eq(o->nents, e->nents, "%s/%d seg %d nents %u != %u", c->name, c->model,
			     k, o->nents, e->nents);
		cr_expect_eq(o->head_skip, e->head_skip, "%s/%d seg %d head_skip %u != %u",
			     c->name, c->model, k, o->head_skip, e->head_skip);
		cr_expect_eq(o->tail_len, e->tail_len, "%s/%d seg %d tail_len %u != %u", c->name,
			     c->model, k, o->tail_len, e->tail_len);
		cr_expect_eq(o->addr, e->addr, "%s/%d seg %d addr +%llu != +%llu", c->name,
			     c->model, k, (unsigned long long)(o->addr - BASE),
			     (unsigned long long)(e->addr - BASE));
		cr_expect_eq(o->fbo, (uint32_t)(e->addr % PS), "%s/%d seg %d fbo %u", c->name,
			     c->model, k, o->fbo);
		cr_expect_eq(o->length, e->length, "%s/%d seg %d length %u != %u", c->name,
			     c->model, k, o->length, e->length);
		cr_expect_eq(o->npages, e->npages, "%s/%d seg %d pages %u != %u", c->name,
			     c->model, k, o->npages, e->npages);
		cr_expect_eq(o->why, e->why, "%s/%d seg %d why %d != %d", c->name, c->model, k,
			     o->why, e->why);
	}
}

Test(plan, table)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
}

/* Whatever the split, the segments cover every byte of the list exactly
 * once and in order, and no segment exceeds the depth. */
Test(plan, coverage_invariant)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct plan_case *c = &cases[i];
		struct rrr__reg_plan_seg out[6];
		uint64_t want = 0, got = 0;
		unsigned j;
		int rc, k;

		rc = rrr__reg_plan(c->sg, c->n, c->model, PS, c->max_pages, out, 6);
		if (rc < 0)
			continue;
		for (j = 0; j < c->n; j++)
			want += c->sg[j].length;
		for (k = 0; k < rc; k++) {
			got += out[k].length;
			cr_expect_leq(out[k].npages, c->max_pages, "%s", c->name);
		}
		cr_expect_eq(got, want, "%s/%d: %llu bytes covered, list has %llu", c->name,
			     c->model, (unsigned long long)got, (unsigned long long)want);
	}
}

Test(plan, has_empty_flag)
{
	const struct rrr_sg sg[] = {E(0, 0), E(0, PS), E(777, 0), E(PS, PS), E(9000, 0)};
	const struct rrr_sg plain[] = {E(0, PS), E(PS, PS)};
	struct rrr__reg_plan_seg out[2];

	cr_assert_eq(rrr__reg_plan(sg, 5, PL, PS, 256, out, 2), 1);
	cr_expect(out[0].has_empty);
	cr_assert_eq(rrr__reg_plan(plain, 2, PL, PS, 256, out, 2), 1);
	cr_expect_not(out[0].has_empty);
}

Test(plan, bad_arguments)
{
	const struct rrr_sg sg[] = {E(0, PS)};
	const struct rrr_sg wrap[] = {{(void *)(uintptr_t)(UINT64_MAX - 10), 0, 100}};
	const struct rrr_sg wrap_off[] = {{(void *)(uintptr_t)(UINT64_MAX - 10), 20, 1}};
	struct rrr__reg_plan_seg out[2];

	cr_expect_eq(rrr__reg_plan(sg, 1, PL, 3000, 256, out, 2), -EINVAL, "page size 3000");
	cr_expect_eq(rrr__reg_plan(sg, 1, PL, 0, 256, out, 2), -EINVAL, "page size 0");
	cr_expect_eq(rrr__reg_plan(sg, 1, (enum rrr_map_model)7, PS, 256, out, 2), -EINVAL);
	cr_expect_eq(rrr__reg_plan(NULL, 1, PL, PS, 256, out, 2), -EINVAL);
	cr_expect_eq(rrr__reg_plan(sg, 1, PL, PS, 256, NULL, 2), -EINVAL);
	cr_expect_eq(rrr__reg_plan(wrap, 1, SG, PS, 256, out, 2), -EINVAL, "range wraps");
	cr_expect_eq(rrr__reg_plan(wrap_off, 1, SG, PS, 256, out, 2), -EINVAL, "offset wraps");
	cr_expect_eq(rrr__reg_plan(sg, 1, PL, PS, 256, out, 0), -E2BIG, "no room for one");
}

/* A huge depth is clamped so one registration stays below 4 GiB. */
Test(plan, length_fits_32_bits)
{
	const struct rrr_sg sg[] = {E(0, UINT32_MAX), E(UINT32_MAX, UINT32_MAX)};
	struct rrr__reg_plan_seg out[4];
	int rc, k;
	uint64_t total = 0;

	rc = rrr__reg_plan(sg, 2, VC, PS, UINT32_MAX, out, 4);
	cr_assert_gt(rc, 1);
	for (k = 0; k < rc; k++) {
		cr_expect_leq(out[k].npages, UINT32_MAX / PS);
		total += out[k].length;
	}
	cr_expect_eq(total, 2ull * UINT32_MAX);
}

/* Many single-byte entries one page apart (a page-list worst case): each is
 * its own registration under PAGE_LIST and VIRT_CONTIG, one under SG_GAPS. */
Test(plan, many_holes)
{
	struct rrr_sg sg[64];
	struct rrr__reg_plan_seg out[64];
	unsigned i;

	for (i = 0; i < 64; i++) {
		sg[i].page = (void *)(uintptr_t)(BASE + (uint64_t)i * PS);
		sg[i].offset = 7;
		sg[i].length = 1;
	}
	cr_expect_eq(rrr__reg_plan(sg, 64, PL, PS, 256, out, 64), 64);
	cr_expect_eq(out[63].why, RRR__SPLIT_END);
	cr_expect_eq(out[62].why, RRR__SPLIT_HOLE);
	cr_expect_eq(rrr__reg_plan(sg, 64, VC, PS, 256, out, 64), 64);
	cr_expect_eq(rrr__reg_plan(sg, 64, SG, PS, 256, out, 64), 1);
	cr_expect_eq(out[0].length, 64u);
	cr_expect_eq(out[0].npages, 64u);
	cr_expect_eq(rrr__reg_plan(sg, 64, SG, PS, 16, out, 64), 4);
	cr_expect_eq(rrr__reg_plan(sg, 64, PL, PS, 256, out, 63), -E2BIG);
}

/* Random lists: the fast path and the general planner agree exactly, and
 * every table row gives the same through both. */
Test(plan, fast_path_matches_general)
{
	static const enum rrr_map_model models[] = {PL, VC, SG};
	uint32_t seed = 12345;
	unsigned iter, m;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rrr__reg_plan_seg a[6], b[6];
		const struct plan_case *c = &cases[i];
		int ra = rrr__reg_plan(c->sg, c->n, c->model, PS, c->max_pages, a, 6);
		int rb = rrr__reg_plan_general(c->sg, c->n, c->model, PS, c->max_pages, b, 6);

		cr_assert_eq(ra, rb, "%s", c->name);
	}
	for (iter = 0; iter < 20000; iter++) {
		struct rrr_sg sg[8];
		struct rrr__reg_plan_seg a[8], b[8];
		uint64_t at = BASE;
		unsigned n, j;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % 8;
		for (j = 0; j < n; j++) {
			uint32_t r;

			seed = seed * 1103515245u + 12345u;
			r = seed >> 8;
			/* mostly page-aligned and adjacent, sometimes not */
			if (r & 1)
				at += (r >> 1) % 3 * PS;
			if (r & 2)
				at += (r >> 3) % PS;
			sg[j] = (struct rrr_sg){(void *)(uintptr_t)(at & ~(uint64_t)(PS - 1)),
						(uint32_t)(at & (PS - 1)),
						(r & 4) ? (r >> 4) % (3 * PS) : PS * (1 + (r >> 4) % 3)};
			if ((r & 0x70) == 0x70)
				sg[j].length = 0;
			at += sg[j].length;
		}
		for (m = 0; m < 3; m++) {
			uint32_t depth = 1 + (seed >> 20) % 12;
			int ra = rrr__reg_plan(sg, n, models[m], PS, depth, a, 8);
			int rb = rrr__reg_plan_general(sg, n, models[m], PS, depth, b, 8);
			int k;

			cr_assert_eq(ra, rb, "iter %u model %u: %d vs %d", iter, m, ra, rb);
			for (k = 0; k < ra; k++)
				cr_assert(a[k].first == b[k].first && a[k].nents == b[k].nents &&
						  a[k].head_skip == b[k].head_skip &&
						  a[k].tail_len == b[k].tail_len && a[k].addr == b[k].addr &&
						  a[k].fbo == b[k].fbo && a[k].length == b[k].length &&
						  a[k].npages == b[k].npages &&
						  a[k].has_empty == b[k].has_empty && a[k].why == b[k].why,
					  "iter %u model %u seg %d differs", iter, m, k);
		}
	}
}
