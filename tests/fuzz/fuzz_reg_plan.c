/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_reg_plan.c - libFuzzer harness for the registration split
 * planner (transport/reg_plan.c). Not a decoder of peer data, but the code
 * every I/O runs through, with arithmetic on caller addresses and lengths.
 *
 * Input: byte 0 picks the map model, byte 1 the page-list depth (1..64),
 * byte 2 the page size (512 B .. 64 KiB); then 8 bytes per entry: page
 * step (u16), offset (u16), length (u32), from a fixed base address.
 * Checks: the fast path and the general planner agree exactly; the
 * segments cover every byte once, in order, as their fields say; no
 * segment exceeds the depth; interior boundaries obey the model's rule; a
 * hole split really is a hole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/reg_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXE 64
#define BASE UINT64_C(0x100000000)

static void check(int cond)
{
	if (!cond)
		abort();
}

static uint64_t addr_of(const struct rrr_sg *e)
{
	return (uint64_t)(uintptr_t)e->page + e->offset;
}

static void walk(const struct rrr_sg *sg, unsigned n, enum rrr_map_model model, uint32_t ps,
		 uint32_t depth, const struct rrr__reg_plan_seg *seg, int nseg)
{
	unsigned ci = 0;
	uint32_t coff = 0;
	int k;

	for (k = 0; k < nseg; k++) {
		const struct rrr__reg_plan_seg *s = &seg[k];
		uint64_t remaining = s->length, prev_end = 0;
		unsigned last = ci;
		uint32_t last_take = 0;
		int pieces = 0;

		while (ci < n && sg[ci].length == coff) {
			ci++;
			coff = 0;
		}
		check(ci < n);
		check(s->first == ci && s->head_skip == coff);
		check(s->addr == addr_of(&sg[ci]) + coff);
		check(s->fbo == (uint32_t)(s->addr & (ps - 1)));
		check(s->length > 0 && s->npages >= 1 && s->npages <= depth);
		while (remaining) {
			uint32_t avail = sg[ci].length - coff, take;
			uint64_t a = addr_of(&sg[ci]) + coff;

			if (avail == 0) {
				ci++;
				coff = 0;
				check(ci < n);
				continue;
			}
			take = avail < remaining ? avail : (uint32_t)remaining;
			if (pieces++) {
				if (model == RRR_MAP_PAGE_LIST)
					check(((prev_end | a) & (ps - 1)) == 0);
				if (model == RRR_MAP_VIRT_CONTIG)
					check(a == prev_end);
			}
			prev_end = a + take;
			remaining -= take;
			coff += take;
			last = ci;
			last_take = take;
		}
		check(s->first + s->nents - 1 == last);
		check(s->tail_len == last_take);
		if (s->why == RRR__SPLIT_HOLE && k + 1 < nseg) {
			uint64_t next = seg[k + 1].addr;

			check(model != RRR_MAP_SG_GAPS);
			if (model == RRR_MAP_PAGE_LIST)
				check(((prev_end | next) & (ps - 1)) != 0);
			else
				check(next != prev_end);
		}
		if (k + 1 == nseg)
			check(s->why == RRR__SPLIT_END);
	}
	while (ci < n && sg[ci].length == coff) {
		ci++;
		coff = 0;
	}
	check(ci == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rrr__reg_plan_seg a[MAXE], b[MAXE];
	struct rrr_sg sg[MAXE];
	enum rrr_map_model model;
	uint32_t depth, ps;
	uint64_t at = BASE;
	unsigned n = 0;
	int ra, rb, k;

	if (size < 3)
		return 0;
	model = (enum rrr_map_model)(data[0] % 3);
	depth = 1 + data[1] % 64;
	ps = 512u << (data[2] % 8);
	data += 3;
	size -= 3;
	while (size >= 8 && n < MAXE) {
		uint16_t step, off;
		uint32_t len;

		memcpy(&step, data, 2);
		memcpy(&off, data + 2, 2);
		memcpy(&len, data + 4, 4);
		at += (uint64_t)(step % 16) * ps;
		sg[n].page = (void *)(uintptr_t)(at & ~(uint64_t)(ps - 1));
		sg[n].offset = (uint32_t)(at & (ps - 1)) + (off % ps);
		sg[n].length = len % (1u << 22);
		at = addr_of(&sg[n]) + sg[n].length;
		n++;
		data += 8;
		size -= 8;
	}
	if (n == 0)
		return 0;
	ra = rrr__reg_plan(sg, n, model, ps, depth, a, MAXE);
	rb = rrr__reg_plan_general(sg, n, model, ps, depth, b, MAXE);
	check(ra == rb);
	for (k = 0; k < ra; k++)
		check(memcmp(&a[k], &b[k], sizeof(a[k])) == 0 ||
		      (a[k].first == b[k].first && a[k].nents == b[k].nents &&
		       a[k].head_skip == b[k].head_skip && a[k].tail_len == b[k].tail_len &&
		       a[k].addr == b[k].addr && a[k].fbo == b[k].fbo &&
		       a[k].length == b[k].length && a[k].npages == b[k].npages &&
		       a[k].has_empty == b[k].has_empty && a[k].why == b[k].why));
	if (ra > 0)
		walk(sg, n, model, ps, depth, a, ra);
	return 0;
}
