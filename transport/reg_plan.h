/* SPDX-License-Identifier: MIT */
/*
 * transport/reg_plan.h - where a scatterlist's registrations split (internal).
 *
 * A pure function of the scatterlist, the device's map model, its page size
 * and the page-list depth of one MR: no provider, no allocation, no side
 * effect. The registration engine (transport/frwr.c) maps exactly what this
 * plans; tests check it against hand-written segment lists. See
 * docs/registration.md for the rules with pictures.
 */
#ifndef RRR_TRANSPORT_REG_PLAN_H
#define RRR_TRANSPORT_REG_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/provider.h>

/* Why a planned registration ended. */
enum rrr__reg_split {
	RRR__SPLIT_END = 0, /* the list ended */
	RRR__SPLIT_HOLE,    /* the next byte cannot join it (map model) */
	RRR__SPLIT_DEPTH,   /* the MR's page list is full */
};

/*
 * One planned registration: entries sg[first .. first+nents) where the
 * first and last entries have non-zero length (interior zero-length entries
 * are counted in nents but map nothing). A page-list-depth split may cut an
 * entry at a page boundary: then this segment takes the first tail_len
 * bytes of its last entry and the next segment starts head_skip bytes into
 * that same entry.
 */
struct rrr__reg_plan_seg {
	unsigned first;		 /* index of the first (non-empty) entry */
	unsigned nents;		 /* entries spanned, first and last included */
	uint32_t head_skip;	 /* bytes of sg[first] left to the previous seg */
	uint32_t tail_len;	 /* bytes of the last entry taken (from its
				  * start, or from head_skip when nents == 1) */
	uint64_t addr;		 /* virtual address of the first byte */
	uint32_t fbo;		 /* addr % page_size: first-byte offset */
	uint32_t length;	 /* bytes */
	uint32_t npages;	 /* page-list entries this registration uses */
	bool has_empty;		 /* interior zero-length entries present */
	enum rrr__reg_split why; /* why it ended */
};

/*
 * rrr__reg_plan - split @sg[0..nents) into registrations.
 *
 * Rules (see docs/registration.md):
 *  - zero-length entries are skipped; they never cause a split;
 *  - RRR_MAP_PAGE_LIST: between two consecutive non-empty entries of one
 *    registration, the earlier must end and the later must start on a page
 *    boundary, else the registration ends (a hole);
 *  - RRR_MAP_VIRT_CONTIG: the later must start exactly where the earlier
 *    ended, else a hole;
 *  - RRR_MAP_SG_GAPS: no holes;
 *  - every model: a registration uses at most @max_pages pages, counted as
 *    the pages each entry spans (VIRT_CONTIG: the pages its one range spans);
 *    when full it ends at a page boundary, cutting an entry if needed;
 *  - the first byte's offset within its page is kept (fbo); the registration
 *    starts at that byte, not at the page.
 * @max_pages is clamped so that one registration is at most 4 GiB - 1.
 *
 * Returns the number of registrations (>= 1) written to @out, -EINVAL for an
 * empty list, a page size that is not a power of two, @max_pages 0, or an
 * entry whose address range wraps; -E2BIG if more than @max_out are needed.
 * O(nents), never allocates, thread-safe.
 */
int rrr__reg_plan(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
		  uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
		  unsigned max_out);

/* The same without the single-registration fast path (tests compare the
 * two). */
int rrr__reg_plan_general(const struct rrr_sg *sg, unsigned nents, enum rrr_map_model model,
			  uint32_t page_size, uint32_t max_pages, struct rrr__reg_plan_seg *out,
			  unsigned max_out);

#endif /* RRR_TRANSPORT_REG_PLAN_H */
