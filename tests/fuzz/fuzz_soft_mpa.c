/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_soft_mpa.c - libFuzzer harness for the soft provider's
 * MPA Request/Reply parser and RTR check. A frame that parses must have
 * bounded private data, and re-encoding what was parsed must parse to the
 * same values (revision 1 frames: in revision 1, without IRD/ORD).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/soft/soft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	struct soft_mpa_rr rr, again;
	size_t total, n;

	if (size >= SOFT_HDR_TAGGED + 4) {
		(void)rrr__soft_mpa_is_rtr(data, true);
		(void)rrr__soft_mpa_is_rtr(data, false);
	}
	for (int reply = 0; reply < 2; reply++) {
		if (size >= SOFT_MPA_HDR && rrr__soft_mpa_parse_hdr(data, reply, &total) == 0)
			check(total >= SOFT_MPA_HDR && total <= SOFT_MPA_HDR + SOFT_MPA_PD_MAX);
		if (rrr__soft_mpa_parse(data, size, reply, &rr) != 0)
			continue;
		check(rr.pd_len <= RRR_CM_MAX_PRIVATE_DATA);
		if (rr.rev == 1) {
			/* revision 1 (RFC 5044): no IRD/ORD words, no H bit */
			check(!rr.enhanced);
			n = rrr__soft_mpa_encode(&rr, buf);
			check(n == SOFT_MPA_HDR + rr.pd_len && buf[17] == 1);
			check(rrr__soft_mpa_parse(buf, n, reply, &again) == 0);
			check(again.rev == 1 && again.reject == rr.reject && again.crc == rr.crc);
			check(again.pd_len == rr.pd_len && !memcmp(again.pd, rr.pd, rr.pd_len));
			continue;
		}
		if (rr.reject || rr.rev != 2 || !rr.enhanced)
			continue;
		n = rrr__soft_mpa_encode(&rr, buf);
		check(rrr__soft_mpa_parse(buf, n, reply, &again) == 0);
		check(again.pd_len == rr.pd_len && !memcmp(again.pd, rr.pd, rr.pd_len));
		check(again.ird == rr.ird && again.ord == rr.ord && again.crc == rr.crc);
	}
	return 0;
}
