/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_soft_ddp.c - libFuzzer harness for the soft provider's
 * DDP/RDMAP header, Read Request and Terminate decoders. A header that
 * decodes must re-encode to the same bytes (reserved bits aside) and
 * announce a ULPDU at least as long as itself.
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
	uint8_t out[SOFT_HDR_UNTAGGED];
	struct soft_read_req rr;
	struct soft_hdr h;
	size_t hl;

	if (size >= SOFT_READ_REQ_LEN) {
		uint8_t again[SOFT_READ_REQ_LEN];

		rrr__soft_read_req_decode(data, &rr);
		rrr__soft_read_req_encode(again, &rr);
		check(!memcmp(again, data, SOFT_READ_REQ_LEN));
	}
	if (size >= 4)
		(void)rrr__soft_term_wc_status(rrr__soft_term_decode(data));
	if (size < 4)
		return 0;
	hl = rrr__soft_hdr_len(data);
	if (size < hl || rrr__soft_hdr_decode(data, &h))
		return 0;
	check(h.ulpdu_len >= hl - 2);
	if (h.ddp_ver != 1 || h.rdmap_ver != 1 || (data[2] & 0x3c) || (data[3] & 0x30))
		return 0; /* reserved bits: the engine refuses these by version/opcode */
	if (h.tagged)
		rrr__soft_hdr_tagged(out, h.opcode, h.last, h.stag, h.to, h.ulpdu_len - (hl - 2));
	else
		rrr__soft_hdr_untagged(out, h.opcode, h.last, h.stag, h.qn, h.msn, h.mo,
				       h.ulpdu_len - (hl - 2));
	check(!memcmp(out, data, hl));
	return 0;
}
