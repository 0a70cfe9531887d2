/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/mpa.c - MPA connection setup frames and FPDU helpers
 * (RFC 5044, enhanced setup of RFC 6581).
 *
 * Request / Reply frame (both directions, network byte order):
 *
 *   0                   1                   2                   3
 *   +---------------------------------------------------------------+
 *   |  Key: "MPA ID Req Frame" or "MPA ID Rep Frame" (16 bytes)     |
 *   +-+-+-+-+-------+---------------+-------------------------------+
 *   |M|C|R|H| Res   |   Revision    |          PD_Length            |
 *   +-+-+-+-+-------+---------------+-------------------------------+
 *   |P|Z|   IRD (14 bits)           |W|R|   ORD (14 bits)           |  rev 2 only
 *   +-------------------------------+-------------------------------+
 *   |  private data (PD_Length - 4 bytes) ...                       |
 *   +---------------------------------------------------------------+
 *
 * We request revision 2 with the H (enhanced) bit, P (peer-to-peer) and
 * the zero-length RDMA Write as ready-to-receive (RTR) message. A revision
 * 1 Request (RFC 5044) is answered in revision 1: no IRD/ORD words, no H
 * bit, PD_Length is the private data alone (cm.c: no RTR either; the
 * responder waits for the initiator's first FPDU). Markers (M) are never
 * offered; a peer that asks for them is refused with a reject reply and a
 * clear error. CRC (C) is used when either side asks for it.
 *
 * FPDU: | ULPDU length (16) | ULPDU ... | pad to 4 | CRC32c (4) |
 * The CRC field is always present; without negotiated CRC it is sent as
 * zero and not checked (as RFC 5044 and Linux siw do).
 * The RTR is the FPDU of a zero-length tagged RDMA Write to STag 0, TO 0.
 *
 * Recovery: parsers validate every length against the bytes present and
 * never read past them; a bad frame returns -EPROTO/-EMSGSIZE and the CM
 * closes the connection.
 */
#include <errno.h>
#include <string.h>

#include "soft.h"

size_t rrr__soft_mpa_encode(const struct soft_mpa_rr *rr, uint8_t *buf)
{
	bool v1 = rr->rev == 1; /* RFC 5044: no IRD/ORD, no enhanced setup */
	uint16_t irdord = v1 ? 0 : 4;
	uint16_t pd = rr->pd_len;

	if (pd > SOFT_MPA_PD_MAX - irdord)
		pd = (uint16_t)(SOFT_MPA_PD_MAX - irdord);
	memcpy(buf, rr->reply ? SOFT_MPA_KEY_REP : SOFT_MPA_KEY_REQ, 16);
	buf[16] = (uint8_t)((rr->crc ? SOFT_MPA_FLAG_C : 0) | (rr->reject ? SOFT_MPA_FLAG_R : 0) |
			    (v1 ? 0 : SOFT_MPA_FLAG_H));
	buf[17] = v1 ? 1 : 2;
	soft_put16(buf + 18, (uint16_t)(pd + irdord));
	if (!v1) {
		soft_put16(buf + 20,
			   (uint16_t)(SOFT_MPA_IRD_P2P | (rr->ird & SOFT_MPA_IRDORD_MASK)));
		soft_put16(buf + 22,
			   (uint16_t)(SOFT_MPA_ORD_RTR_WRITE | (rr->ord & SOFT_MPA_IRDORD_MASK)));
	}
	memcpy(buf + SOFT_MPA_HDR + irdord, rr->pd, pd);
	return SOFT_MPA_HDR + irdord + pd;
}

int rrr__soft_mpa_parse_hdr(const uint8_t *buf, bool reply, size_t *total)
{
	uint16_t pdl;

	if (memcmp(buf, reply ? SOFT_MPA_KEY_REP : SOFT_MPA_KEY_REQ, 16) != 0)
		return -EPROTO;
	pdl = soft_get16(buf + 18);
	if (pdl > SOFT_MPA_PD_MAX)
		return -EMSGSIZE;
	*total = SOFT_MPA_HDR + pdl;
	return 0;
}

int rrr__soft_mpa_parse(const uint8_t *buf, size_t len, bool reply, struct soft_mpa_rr *rr)
{
	size_t total;
	uint16_t pdl;
	int rc;

	if (len < SOFT_MPA_HDR)
		return -EPROTO;
	rc = rrr__soft_mpa_parse_hdr(buf, reply, &total);
	if (rc)
		return rc;
	if (len < total)
		return -EPROTO;
	memset(rr, 0, sizeof(*rr));
	rr->reply = reply;
	rr->markers = buf[16] & SOFT_MPA_FLAG_M;
	rr->crc = buf[16] & SOFT_MPA_FLAG_C;
	rr->reject = buf[16] & SOFT_MPA_FLAG_R;
	rr->rev = buf[17];
	rr->enhanced = rr->rev == 2 && (buf[16] & SOFT_MPA_FLAG_H); /* reserved in rev 1 */
	pdl = soft_get16(buf + 18);
	if (rr->rev == 2 && rr->enhanced && !rr->reject) {
		uint16_t ird, ord;

		if (pdl < 4)
			return -EPROTO;
		ird = soft_get16(buf + 20);
		ord = soft_get16(buf + 22);
		rr->ird = ird & SOFT_MPA_IRDORD_MASK;
		rr->ord = ord & SOFT_MPA_IRDORD_MASK;
		rr->ird_flags = ird & ~SOFT_MPA_IRDORD_MASK;
		rr->ord_flags = ord & ~SOFT_MPA_IRDORD_MASK;
		pdl -= 4;
		buf += 4;
	} else if (rr->rev == 2 && rr->enhanced && rr->reject && pdl >= 4) {
		pdl -= 4;
		buf += 4;
	}
	if (pdl > RRR_CM_MAX_PRIVATE_DATA)
		pdl = RRR_CM_MAX_PRIVATE_DATA; /* bytes beyond what callers can see */
	rr->pd_len = pdl;
	memcpy(rr->pd, buf + SOFT_MPA_HDR, pdl);
	return 0;
}

size_t rrr__soft_mpa_rtr(uint8_t *buf, bool crc)
{
	size_t n = rrr__soft_hdr_tagged(buf, SOFT_OP_WRITE, true, 0, 0, 0);
	uint32_t c = crc ? rrr_crc32c(0, buf, n) : 0;

	buf[n] = (uint8_t)c;
	buf[n + 1] = (uint8_t)(c >> 8);
	buf[n + 2] = (uint8_t)(c >> 16);
	buf[n + 3] = (uint8_t)(c >> 24);
	return n + 4;
}

bool rrr__soft_mpa_is_rtr(const uint8_t *buf, bool crc)
{
	uint8_t ref[SOFT_HDR_TAGGED + 4];
	size_t n = rrr__soft_mpa_rtr(ref, crc);

	/* without CRC the field is not checked */
	return memcmp(ref, buf, crc ? n : n - 4) == 0;
}
