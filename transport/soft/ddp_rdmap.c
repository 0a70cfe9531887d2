/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/ddp_rdmap.c - DDP (RFC 5041) and RDMAP (RFC 5040) headers.
 *
 * Each encoder writes the MPA ULPDU length in front of the DDP header, so
 * the result is the start of an FPDU. Tagged (16 bytes with MPA length):
 *
 *   +-------------------------------+-+-+-------+---+---+---+-------+
 *   |    MPA ULPDU length (16)      |T|L| rsvd  |DV |RV |rsv|opcode |
 *   +-------------------------------+-+-+-------+---+---+---+-------+
 *   |                         Data Sink STag                        |
 *   +---------------------------------------------------------------+
 *   |                  Data Sink Tagged Offset (64)                 |
 *   +---------------------------------------------------------------+
 *
 * Untagged (20 bytes): after the two control bytes
 *   | Invalidate STag (RDMAP, else 0) | QN | MSN | MO |  (32 bits each)
 *
 * T=1 tagged, L=1 last segment, DV = 1 (DDP version), RV = 1 (RDMAP
 * version). Read Request payload (QN 1, 28 bytes): sink STag, sink TO,
 * message size, source STag, source TO. Terminate payload (QN 2):
 *   | layer:4 | etype:4 | ecode:8 | M D R | reserved:13 |
 * We set M=D=R=0 (no copied header).
 *
 * Recovery: decoders only interpret bytes; every semantic check (versions,
 * QN, MSN, bounds) is done by rx.c, which answers with a Terminate.
 */
#include <errno.h>

#include "soft.h"

size_t rrr__soft_hdr_tagged(uint8_t *b, uint8_t op, bool last, uint32_t stag, uint64_t to,
			    uint32_t payload)
{
	soft_put16(b, (uint16_t)(SOFT_HDR_TAGGED - 2 + payload));
	b[2] = (uint8_t)(SOFT_DDP_T | (last ? SOFT_DDP_L : 0) | SOFT_DDP_V);
	b[3] = (uint8_t)(SOFT_RDMAP_V | (op & 0xf));
	soft_put32(b + 4, stag);
	soft_put64(b + 8, to);
	return SOFT_HDR_TAGGED;
}

size_t rrr__soft_hdr_untagged(uint8_t *b, uint8_t op, bool last, uint32_t inv_stag,
			      uint32_t qn, uint32_t msn, uint32_t mo, uint32_t payload)
{
	soft_put16(b, (uint16_t)(SOFT_HDR_UNTAGGED - 2 + payload));
	b[2] = (uint8_t)((last ? SOFT_DDP_L : 0) | SOFT_DDP_V);
	b[3] = (uint8_t)(SOFT_RDMAP_V | (op & 0xf));
	soft_put32(b + 4, inv_stag);
	soft_put32(b + 8, qn);
	soft_put32(b + 12, msn);
	soft_put32(b + 16, mo);
	return SOFT_HDR_UNTAGGED;
}

size_t rrr__soft_hdr_len(const uint8_t *b)
{
	return (b[2] & SOFT_DDP_T) ? SOFT_HDR_TAGGED : SOFT_HDR_UNTAGGED;
}

int rrr__soft_hdr_decode(const uint8_t *b, struct soft_hdr *h)
{
	h->ulpdu_len = soft_get16(b);
	h->tagged = b[2] & SOFT_DDP_T;
	h->last = b[2] & SOFT_DDP_L;
	h->ddp_ver = b[2] & 3;
	h->rdmap_ver = b[3] >> 6;
	h->opcode = b[3] & 0xf;
	h->stag = soft_get32(b + 4);
	if (h->tagged) {
		if (h->ulpdu_len < SOFT_HDR_TAGGED - 2)
			return -EPROTO;
		h->to = soft_get64(b + 8);
		h->qn = h->msn = h->mo = 0;
	} else {
		if (h->ulpdu_len < SOFT_HDR_UNTAGGED - 2)
			return -EPROTO;
		h->to = 0;
		h->qn = soft_get32(b + 8);
		h->msn = soft_get32(b + 12);
		h->mo = soft_get32(b + 16);
	}
	return 0;
}

void rrr__soft_read_req_encode(uint8_t *b, const struct soft_read_req *r)
{
	soft_put32(b, r->sink_stag);
	soft_put64(b + 4, r->sink_to);
	soft_put32(b + 12, r->size);
	soft_put32(b + 16, r->src_stag);
	soft_put64(b + 20, r->src_to);
}

void rrr__soft_read_req_decode(const uint8_t *b, struct soft_read_req *r)
{
	r->sink_stag = soft_get32(b);
	r->sink_to = soft_get64(b + 4);
	r->size = soft_get32(b + 12);
	r->src_stag = soft_get32(b + 16);
	r->src_to = soft_get64(b + 20);
}

void rrr__soft_term_encode(uint8_t *b, uint32_t term)
{
	b[0] = (uint8_t)((SOFT_TERM_LAYER(term) << 4) | SOFT_TERM_TYPE(term));
	b[1] = (uint8_t)SOFT_TERM_CODE(term);
	b[2] = 0;
	b[3] = 0;
}

uint32_t rrr__soft_term_decode(const uint8_t *b)
{
	return SOFT_TERM(b[0] >> 4, b[0] & 0xf, b[1]);
}

enum rrr_wc_status rrr__soft_term_wc_status(uint32_t term)
{
	unsigned l = SOFT_TERM_LAYER(term), t = SOFT_TERM_TYPE(term);

	if ((l == SOFT_TERM_LAYER_RDMAP && t == SOFT_TERM_RDMAP_REM_PROT) ||
	    (l == SOFT_TERM_LAYER_DDP && t == SOFT_TERM_DDP_TAGGED))
		return RRR_WC_REM_ACCESS_ERR;
	if (l == SOFT_TERM_LAYER_DDP && t == SOFT_TERM_DDP_UNTAGGED)
		return RRR_WC_REM_INV_REQ_ERR;
	return RRR_WC_REM_OP_ERR;
}
