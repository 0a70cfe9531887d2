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

static inline bool is_hole(enum rrr_map_model model, uint64_t prev_end, uint64_t next,
			   uint64_t mask)
{
	switch (model) {
	case RRR_MAP_PAGE_LIST:
		return (prev_end & mask) != 0 || (next & mask) != 0;
	case RRR_MAP_VIRT_CONTIG:
		return next != prev_end;
	case RRR_MAP_SG_GAPS:
		break;
	}
	return false;
}

static int check_list(const struct rrr_sg *sg, unsigned nents)
{
	bool any = false;
	unsigned i;

	for (i = 0; i < nents; i++) {
		uint64_t a;

		if (sg[i].length == 0)
			continue;
		a = ent_addr(&sg[i]);
		if (a < (uint64_t)(uintptr_t)sg[i].page || a >= PLAN_ADDR_LIMIT ||
		    sg[i].length > PLAN_ADDR_LIMIT - a)
			return -EINVAL;
		any = true;
	}
	return any ? 0 : -EINVAL;
}

int rrr__reg_plan(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
		  uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
		  unsigned max_out)
{
	uint64_t ps = page_size, mask = ps - 1;
	unsigned i = 0, nout = 0;
	uint32_t skip = 0;
	int rc;

	if (!sg || !out || nents == 0 || page_size == 0 || (page_size & (page_size - 1)) ||
	    max_pages == 0)
		return -EINVAL;
	if (model != RRR_MAP_PAGE_LIST && model != RRR_MAP_VIRT_CONTIG &&
	    model != RRR_MAP_SG_GAPS)
		return -EINVAL;
	if (max_pages > UINT32_MAX / page_size)
		max_pages = UINT32_MAX / page_size;
	rc = check_list(sg, nents);
	if (rc)
		return rc;

	for (;;) {
		struct rrr__reg_plan_seg *seg;
		uint64_t start, base, cur_end = 0;
		uint32_t pages = 0, length = 0, tail = 0;
		unsigned last;
		bool first = true, pending_empty = false, has_empty = false;
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
		start = ent_addr(&sg[i]) + skip;
		base = start & ~mask;
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
			s = ent_addr(&sg[i]) + skip;
			if (!first && is_hole(model, cur_end, s, mask)) {
				why = RRR__SPLIT_HOLE;
				break;
			}
			if (model == RRR_MAP_VIRT_CONTIG) {
				/* One range: it may grow up to max_pages pages from base. */
				uint64_t room_end = base + (uint64_t)max_pages * ps;

				if (s >= room_end) {
					why = RRR__SPLIT_DEPTH;
					break;
				}
				take = (s + len <= room_end) ? len : (uint32_t)(room_end - s);
			} else {
				uint64_t pbase = s & ~mask;
				uint64_t p = ((s + len + mask) & ~mask) - pbase;

				p /= ps;
				if (pages + p <= max_pages) {
					take = len;
					pages += (uint32_t)p;
				} else if (pages == max_pages) {
					why = RRR__SPLIT_DEPTH;
					break;
				} else {
					take = (uint32_t)(pbase + (uint64_t)(max_pages - pages) * ps - s);
					pages = max_pages;
				}
			}
			length += take;
			cur_end = s + take;
			tail = take;
			last = i;
			first = false;
			has_empty = has_empty || pending_empty;
			pending_empty = false;
			if (take < len) { /* cut at a page boundary */
				skip += take;
				why = RRR__SPLIT_DEPTH;
				break;
			}
			i++;
			skip = 0;
		}
		if (model == RRR_MAP_VIRT_CONTIG)
			pages = (uint32_t)((((cur_end + mask) & ~mask) - base) / ps);
		seg->nents = last - seg->first + 1;
		seg->tail_len = tail;
		seg->addr = start;
		seg->fbo = (uint32_t)(start & mask);
		seg->length = length;
		seg->npages = pages;
		seg->has_empty = has_empty;
		seg->why = why;
	}
	return (int)nout;
}
