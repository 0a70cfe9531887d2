/* SPDX-License-Identifier: MIT */
/*
 * transport/reg_plan.c - where a scatterlist's registrations split.
 *
 * Normal operation: one pass over the scatterlist. A registration opens at
 * the first byte not yet covered (skipping empty entries) and keeps taking
 * whole entries while the device's map model lets the next entry join:
 *
 *   PAGE_LIST    the previous entry ends on a page boundary and the next
 *                starts on one (pages of a page list are whole pages, only
 *                the first may be entered mid-page and only the last may be
 *                left mid-page);
 *   VIRT_CONTIG  the next entry starts at the very byte the previous ended
 *                (one window/MR is one virtual range);
 *   SG_GAPS      always.
 *
 * and while its page list has room. Pages are counted per entry as the pages
 * it spans, which for PAGE_LIST is exact and for SG_GAPS is an upper bound
 * (two small entries on one page count twice); VIRT_CONTIG counts the pages
 * its single range spans. When the page list would overflow, the
 * registration is filled up to a page boundary, cutting the entry there, and
 * the next registration starts at that boundary: a cut is never a hole.
 *
 * The engine hands the provider exactly the planned entries (trimmed where
 * cut), so the provider's own stopping rule in rrr_mr_map_sg() must agree
 * with this one or be more permissive; the engine treats a short map as a
 * provider bug (-EIO).
 *
 * Recovery: none needed, this file has no state. Hostile input: the list
 * comes from the local caller, but every address range is still checked for
 * wrap-around before any arithmetic on it, and every count is bounded
 * (segments by @max_out, pages by @max_pages, lengths by 32 bits).
 */
#include <errno.h>

#include "reg_plan.h"

/* Highest end address accepted; keeps page arithmetic far from wrapping. */
#define PLAN_ADDR_LIMIT (UINT64_C(1) << 63)

static inline uint64_t ent_addr(const struct rrr_sg *e)
{
	return (uint64_t)(uintptr_t)e->page + e->offset;
}

/*
 * A non-empty entry must lie below PLAN_ADDR_LIMIT (2^63). Testing the top
 * bit of the page pointer and of the end is enough: with page < 2^63,
 * page + offset + length (offset, length < 2^32) cannot wrap 64 bits.
 */
static inline bool ent_bad(const struct rrr_sg *e, uint64_t a)
{
	return (((uint64_t)(uintptr_t)e->page | (a + e->length)) & PLAN_ADDR_LIMIT) != 0;
}

static inline bool is_hole(enum rrr_map_model model, uint64_t prev_end, uint64_t next,
			   uint64_t mask)
{
	switch (model) {
	case RRR_MAP_PAGE_LIST:
		return ((prev_end | next) & mask) != 0;
	case RRR_MAP_VIRT_CONTIG:
		return next != prev_end;
	case RRR_MAP_SG_GAPS:
		break;
	}
	return false;
}

/*
 * The planner proper. Always inlined with a constant @model so each model
 * gets its own loop without model tests in it (this runs once per I/O).
 */
static inline __attribute__((always_inline)) int
plan(const struct rrr_sg *sg, unsigned nents, const enum rrr_map_model model, unsigned shift,
     uint32_t max_pages, struct rrr__reg_plan_seg *out, unsigned max_out)
{
	const uint64_t ps = UINT64_C(1) << shift, mask = ps - 1;
	unsigned i = 0, nout = 0;
	uint32_t skip = 0;

	for (;;) {
		struct rrr__reg_plan_seg *seg;
		uint64_t start, base, cur_end;
		uint32_t pages = 0, length = 0, tail = 0;
		unsigned last;
		bool pending_empty = false, has_empty = false;
		enum rrr__reg_split why = RRR__SPLIT_END;

		/* Skip empty entries and entries a depth cut consumed fully. */
		while (i < nents && sg[i].length == skip) {
			i++;
			skip = 0;
		}
		if (i == nents)
			break;
		if (nout == max_out)
			return -E2BIG;
		seg = &out[nout++];
		start = ent_addr(&sg[i]);
		if (skip == 0 && ent_bad(&sg[i], start))
			return -EINVAL;
		start += skip;
		base = start & ~mask;
		cur_end = start;
		seg->first = i;
		seg->head_skip = skip;
		last = i;

		while (i < nents) {
			uint32_t len = sg[i].length - skip, take;
			uint64_t s;

			if (len == 0) { /* empty entry inside: maps nothing */
				pending_empty = true;
				i++;
				continue;
			}
			s = ent_addr(&sg[i]);
			if (skip == 0 && ent_bad(&sg[i], s))
				return -EINVAL;
			s += skip;
			if (i != last && is_hole(model, cur_end, s, mask)) {
				why = RRR__SPLIT_HOLE;
				break;
			}
			if (model == RRR_MAP_VIRT_CONTIG) {
				/* One range: it may grow up to max_pages pages from base. */
				uint64_t room_end = base + ((uint64_t)max_pages << shift);

				if (s >= room_end) {
					why = RRR__SPLIT_DEPTH;
					break;
				}
				take = (s + len <= room_end) ? len : (uint32_t)(room_end - s);
			} else {
				uint64_t pbase = s & ~mask;
				uint64_t p = (((s + len + mask) & ~mask) - pbase) >> shift;

				if (pages + p <= max_pages) {
					take = len;
					pages += (uint32_t)p;
				} else if (pages == max_pages) {
					why = RRR__SPLIT_DEPTH;
					break;
				} else {
					take = (uint32_t)(pbase +
							  ((uint64_t)(max_pages - pages) << shift) -
							  s);
					pages = max_pages;
				}
			}
			length += take;
			cur_end = s + take;
			tail = take;
			last = i;
			has_empty |= pending_empty;
			if (take < len) { /* cut at a page boundary */
				skip += take;
				why = RRR__SPLIT_DEPTH;
				break;
			}
			i++;
			skip = 0;
		}
		if (model == RRR_MAP_VIRT_CONTIG)
			pages = (uint32_t)((((cur_end + mask) & ~mask) - base) >> shift);
		seg->nents = last - seg->first + 1;
		seg->tail_len = tail;
		seg->addr = start;
		seg->fbo = (uint32_t)(start & mask);
		seg->length = length;
		seg->npages = pages;
		seg->has_empty = has_empty;
		seg->why = why;
	}
	return nout ? (int)nout : -EINVAL; /* no byte at all: empty list */
}

/*
 * Fast path for the common case: the whole list, with no empty entry, fits
 * one registration. One branch-light pass of independent per-entry work;
 * returns 1 with out[0] filled, or 0 when the general planner must decide
 * (a hole, too deep, an empty or bad entry). Gives exactly what plan()
 * gives whenever it returns 1 (tests/reg/plan.c checks both on random lists).
 */
static inline __attribute__((always_inline)) int plan_fast(const struct rrr_sg *sg, unsigned nents,
							   const enum rrr_map_model model,
							   unsigned shift, uint32_t max_pages,
							   struct rrr__reg_plan_seg *out)
{
	const uint64_t mask = (UINT64_C(1) << shift) - 1;
	uint64_t a0 = ent_addr(&sg[0]), prev_end = a0, acc = 0, pages = 0, length = 0;
	uint64_t bad = 0;
	unsigned i;

	/* Branch-free body: problems are accumulated in the top bit of @bad
	 * (see ent_bad(); length - 1 sets it for an empty entry) and judged
	 * after the loop. */
	for (i = 0; i < nents; i++) {
		uint64_t p = (uint64_t)(uintptr_t)sg[i].page, a = p + sg[i].offset;
		uint64_t e = a + sg[i].length;

		bad |= p | e | ((uint64_t)sg[i].length - 1);
		if (model == RRR_MAP_PAGE_LIST)
			acc |= i ? (prev_end | a) : 0;
		else if (model == RRR_MAP_VIRT_CONTIG)
			acc |= a ^ prev_end;
		if (model != RRR_MAP_VIRT_CONTIG)
			pages += ((e + mask) >> shift) - (a >> shift);
		length += sg[i].length;
		prev_end = e;
	}
	bad &= PLAN_ADDR_LIMIT;
	if (bad)
		return 0;
	if (model == RRR_MAP_PAGE_LIST && (acc & mask))
		return 0;
	if (model == RRR_MAP_VIRT_CONTIG) {
		if (acc)
			return 0;
		pages = (((prev_end + mask) & ~mask) - (a0 & ~mask)) >> shift;
	}
	if (pages > max_pages)
		return 0;
	out->first = 0;
	out->nents = nents;
	out->head_skip = 0;
	out->tail_len = sg[nents - 1].length;
	out->addr = a0;
	out->fbo = (uint32_t)(a0 & mask);
	out->length = (uint32_t)length;
	out->npages = (uint32_t)pages;
	out->has_empty = false;
	out->why = RRR__SPLIT_END;
	return 1;
}

static inline __attribute__((always_inline)) int
plan_model(const struct rrr_sg *sg, unsigned nents, const enum rrr_map_model model, unsigned shift,
	   uint32_t max_pages, struct rrr__reg_plan_seg *out, unsigned max_out, bool fast)
{
	if (fast && max_out && plan_fast(sg, nents, model, shift, max_pages, out))
		return 1;
	return plan(sg, nents, model, shift, max_pages, out, max_out);
}

static int plan_dispatch(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
			 uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
			 unsigned max_out, bool fast)
{
	unsigned shift;

	if (!sg || !out || nents == 0 || page_size == 0 || (page_size & (page_size - 1)) ||
	    max_pages == 0)
		return -EINVAL;
	shift = (unsigned)__builtin_ctz(page_size); /* no division on the hot path */
	if (max_pages > UINT32_MAX / page_size)
		max_pages = UINT32_MAX / page_size;
	switch (model) {
	case RRR_MAP_PAGE_LIST:
		return plan_model(sg, nents, RRR_MAP_PAGE_LIST, shift, max_pages, out, max_out,
				  fast);
	case RRR_MAP_VIRT_CONTIG:
		return plan_model(sg, nents, RRR_MAP_VIRT_CONTIG, shift, max_pages, out, max_out,
				  fast);
	case RRR_MAP_SG_GAPS:
		return plan_model(sg, nents, RRR_MAP_SG_GAPS, shift, max_pages, out, max_out, fast);
	}
	return -EINVAL;
}

int rrr__reg_plan(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
		  uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
		  unsigned max_out)
{
	return plan_dispatch(sg, nents, model, page_size, max_pages, out, max_out, true);
}

int rrr__reg_plan_general(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
			  uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
			  unsigned max_out)
{
	return plan_dispatch(sg, nents, model, page_size, max_pages, out, max_out, false);
}
