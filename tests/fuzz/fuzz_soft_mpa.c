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

	for (unsigned t = SOFT_RTR_SEND; t <= SOFT_RTR_READ; t <<= 1) {
		struct soft_read_req rd;

		if (size < rrr__soft_mpa_rtr_len(t))
			continue;
		(void)rrr__soft_mpa_is_rtr(data, t, true, &rd);
		(void)rrr__soft_mpa_is_rtr(data, t, false, NULL);
	}
	if (size >= SOFT_HDR_TAGGED + 4)
		(void)rrr__soft_mpa_is_rtr_read_resp(data, true);
	for (int reply = 0; reply < 2; reply++) {
		if (size >= SOFT_MPA_HDR && rrr__soft_mpa_parse_hdr(data, reply, &total) == 0)
			check(total >= SOFT_MPA_HDR && total <= SOFT_MPA_HDR + SOFT_MPA_PD_MAX);
		if (rrr__soft_mpa_parse(data, size, reply, &rr) != 0)
			continue;
		check(rr.pd_len <= RRR_CM_MAX_PRIVATE_DATA);
		{
			/* the negotiation answers every parsed frame one way or the other */
			struct soft_mpa_rr mine;
			struct soft_mpa_neg neg;
			const char *why = NULL;
			int reason = -1;

			memset(&mine, 0, sizeof(mine));
			mine.rev = 2;
			mine.enhanced = mine.p2p = true;
			mine.rtr = SOFT_RTR_WRITE | SOFT_RTR_READ;
			if (!reply && rrr__soft_mpa_answer(&rr, true, &neg, &reason, &why) == 0)
				check(neg.crc && (neg.rtr == SOFT_RTR_NONE) == neg.hold_tx &&
				      __builtin_popcount(neg.rtr) <= 1);
			else if (!reply)
				check(why && reason >= 0 && reason < RRR_CM_REFUSED_NREASONS);
			if (reply && rrr__soft_mpa_check_reply(&mine, &rr, &neg, &reason, &why) == 0)
				check(neg.rtr == SOFT_RTR_NONE || neg.rtr == SOFT_RTR_WRITE ||
				      neg.rtr == SOFT_RTR_READ);
		}
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
