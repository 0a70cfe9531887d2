/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/mpa.c - MPA connection set-up frames, the negotiation
 * rules of RFC 5044 and RFC 6581, and the ready-to-receive (RTR) messages.
 *
 * Request / Reply frame (both directions, network byte order):
 *
 *   0                   1                   2                   3
 *   +---------------------------------------------------------------+
 *   |  Key: "MPA ID Req Frame" or "MPA ID Rep Frame" (16 bytes)     |
 *   +-+-+-+-+-------+---------------+-------------------------------+
 *   |M|C|R|H| Res   |   Revision    |          PD_Length            |
 *   +-+-+-+-+-------+---------------+-------------------------------+
 *   |I|S|   IRD (14 bits)           |W|R|   ORD (14 bits)           |  rev 2 with H
 *   +-------------------------------+-------------------------------+
 *   |  private data (PD_Length - 4 bytes) ...                       |
 *   +---------------------------------------------------------------+
 *
 *   I: peer-to-peer (an RTR message follows the Reply); S, W, R: the RTR
 *   may be a zero-length Send, RDMA Write or RDMA Read. A Request offers
 *   any of them; a Reply with I chooses exactly one.
 *
 * Negotiation, as responder (rrr__soft_mpa_answer; every case is a row of
 * the table in docs/soft-provider.md and a test in tests/soft/mpa_neg.c):
 *   - revision 1 (RFC 5044): answered in revision 1, no IRD/ORD, no RTR;
 *     the responder sends nothing before the initiator's first FPDU.
 *   - revision 2 without H: the same, answered in revision 2 without H.
 *   - revision 2 with H, I clear (the Linux kernel's siw by default): IRD/ORD
 *     exchanged, no RTR; the initiator sends the first FPDU and the
 *     responder sends nothing before it.
 *   - revision 2 with H, I set: I set in the Reply with one RTR type chosen
 *     from those offered, Write first, then Read, then Send; none offered:
 *     Write (as siw does). The responder waits for that RTR (a Read RTR is
 *     answered with a zero-length Read Response) before its QP may send.
 *   - other revisions, markers, a PD_Length over 512 or an enhanced frame
 *     without its IRD/ORD words: refused with a Reject (R) in the
 *     requester's revision, counted and logged by reason (cm.c).
 *   - CRC: used when either side's frame has C (RFC 5044); a Reply never
 *     clears a C the Request set.
 * As initiator we send revision 2 with H, I, and W and R offered (the RTR
 * types Linux siw and iWARP NICs accept); a Reply in revision 1, or
 * without H, or without I, means no RTR (we speak first anyway). A Reply
 * choosing an RTR type we did not offer is refused.
 *
 * FPDU: | ULPDU length (16) | ULPDU ... | pad to 4 | CRC32c (4) |
 * The CRC field is always present; without negotiated CRC it is sent as
 * zero and not checked (as RFC 5044 and Linux siw do). The trailer of
 * every FPDU is made and checked here: rrr__soft_mpa_trailer() (the
 * transmit engine, tx.c) and rrr__soft_mpa_trailer_ok() (the receive
 * engine, rx.c, which sums the CRC over the header and payload as they
 * are placed - one pass over the bytes - and hands the sum here with the
 * trailer). The CRC32c itself is the library's rrr_crc32c()
 * (transport/crc32c.c). Markers are never used (refused at set-up).
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
	bool words = rr->rev == 2 && rr->enhanced;
	uint16_t irdord = words ? 4 : 0;
	uint16_t pd = rr->pd_len;

	if (pd > SOFT_MPA_PD_MAX - irdord)
		pd = (uint16_t)(SOFT_MPA_PD_MAX - irdord);
	memcpy(buf, rr->reply ? SOFT_MPA_KEY_REP : SOFT_MPA_KEY_REQ, 16);
	buf[16] = (uint8_t)((rr->crc ? SOFT_MPA_FLAG_C : 0) | (rr->reject ? SOFT_MPA_FLAG_R : 0) |
			    (words ? SOFT_MPA_FLAG_H : 0));
	buf[17] = rr->rev;
	soft_put16(buf + 18, (uint16_t)(pd + irdord));
	if (words) {
		uint16_t ird = rr->ird & SOFT_MPA_IRDORD_MASK, ord = rr->ord & SOFT_MPA_IRDORD_MASK;

		if (rr->p2p) {
			ird |= SOFT_MPA_IRD_P2P;
			ird |= (rr->rtr & SOFT_RTR_SEND) ? SOFT_MPA_IRD_RTR_SEND : 0;
			ord |= (rr->rtr & SOFT_RTR_WRITE) ? SOFT_MPA_ORD_RTR_WRITE : 0;
			ord |= (rr->rtr & SOFT_RTR_READ) ? SOFT_MPA_ORD_RTR_READ : 0;
		}
		soft_put16(buf + 20, ird);
		soft_put16(buf + 22, ord);
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
	rr->pd_wire = pdl;
	if (rr->enhanced && pdl >= 4) {
		uint16_t ird = soft_get16(buf + 20), ord = soft_get16(buf + 22);

		rr->ird = ird & SOFT_MPA_IRDORD_MASK;
		rr->ord = ord & SOFT_MPA_IRDORD_MASK;
		rr->ird_flags = ird & ~SOFT_MPA_IRDORD_MASK;
		rr->ord_flags = ord & ~SOFT_MPA_IRDORD_MASK;
		rr->p2p = ird & SOFT_MPA_IRD_P2P;
		rr->rtr = (uint8_t)(((ird & SOFT_MPA_IRD_RTR_SEND) ? SOFT_RTR_SEND : 0) |
				    ((ord & SOFT_MPA_ORD_RTR_WRITE) ? SOFT_RTR_WRITE : 0) |
				    ((ord & SOFT_MPA_ORD_RTR_READ) ? SOFT_RTR_READ : 0));
		pdl -= 4;
		buf += 4;
	} else if (rr->enhanced && !rr->reject) {
		return -EPROTO; /* H promises the IRD/ORD words */
	}
	if (pdl > RRR_CM_MAX_PRIVATE_DATA)
		pdl = RRR_CM_MAX_PRIVATE_DATA; /* bytes beyond what callers can see */
	rr->pd_len = pdl;
	memcpy(rr->pd, buf + SOFT_MPA_HDR, pdl);
	return 0;
}

static int refuse(int r, const char *sentence, int *reason, const char **why)
{
	*reason = r;
	*why = sentence;
	return -EPROTO;
}

int rrr__soft_mpa_answer(const struct soft_mpa_rr *req, bool want_crc, struct soft_mpa_neg *neg,
			 int *reason, const char **why)
{
	memset(neg, 0, sizeof(*neg));
	if (req->rev != 1 && req->rev != 2)
		return refuse(RRR_CM_REFUSED_REVISION,
			      "its MPA Request is of a revision other than 1 or 2", reason, why);
	if (req->markers)
		return refuse(RRR_CM_REFUSED_MARKERS,
			      "its MPA Request asks for markers, which rrr does not support "
			      "(turn markers off on the peer)",
			      reason, why);
	neg->rev = req->rev;
	neg->enhanced = req->enhanced;
	neg->crc = req->crc || want_crc;
	if (req->enhanced) {
		neg->ird = req->ird;
		neg->ord = req->ord;
	}
	if (req->enhanced && req->p2p) {
		neg->rtr = (req->rtr & SOFT_RTR_WRITE)  ? SOFT_RTR_WRITE
			   : (req->rtr & SOFT_RTR_READ) ? SOFT_RTR_READ
			   : (req->rtr & SOFT_RTR_SEND) ? SOFT_RTR_SEND
							: SOFT_RTR_WRITE;
	} else {
		neg->rtr = SOFT_RTR_NONE;
		neg->hold_tx = true; /* the initiator speaks first */
	}
	return 0;
}

int rrr__soft_mpa_check_reply(const struct soft_mpa_rr *mine, const struct soft_mpa_rr *rep,
			      struct soft_mpa_neg *neg, int *reason, const char **why)
{
	unsigned n;

	memset(neg, 0, sizeof(*neg));
	if (rep->rev != 1 && rep->rev != 2)
		return refuse(RRR_CM_REFUSED_REVISION,
			      "the peer's MPA Reply is of a revision other than 1 or 2", reason, why);
	if (rep->markers)
		return refuse(RRR_CM_REFUSED_MARKERS,
			      "the peer requires MPA markers, which rrr does not support", reason,
			      why);
	neg->rev = rep->rev;
	neg->enhanced = rep->enhanced;
	neg->crc = rep->crc || mine->crc;
	if (rep->enhanced) {
		neg->ird = rep->ird;
		neg->ord = rep->ord;
	}
	if (!rep->enhanced || !rep->p2p)
		return 0; /* client-server model: we, the initiator, speak first */
	if (!mine->p2p)
		return refuse(RRR_CM_REFUSED_RTR,
			      "the peer's MPA Reply asks for a ready-to-receive message we did not "
			      "offer (peer-to-peer bit set)",
			      reason, why);
	n = (unsigned)__builtin_popcount(rep->rtr);
	if (n != 1 || !(rep->rtr & mine->rtr))
		return refuse(RRR_CM_REFUSED_RTR,
			      n ? "the peer's MPA Reply chose a ready-to-receive message type rrr did "
				  "not offer (rrr offers zero-length RDMA Write and Read)"
				: "the peer's MPA Reply sets peer-to-peer but chooses no "
				  "ready-to-receive message type",
			      reason, why);
	neg->rtr = rep->rtr;
	return 0;
}

/* The CRC field: CRC32c, least significant byte first. */
static void crc_put(uint8_t *b, uint32_t c)
{
	b[0] = (uint8_t)c;
	b[1] = (uint8_t)(c >> 8);
	b[2] = (uint8_t)(c >> 16);
	b[3] = (uint8_t)(c >> 24);
}

static uint32_t crc_get(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Pad with zeros, then the CRC field (CRC32c of everything before it,
 * least significant byte first, as the data path sends it; zero without
 * @crc). Returns the FPDU's whole length. */
static size_t fpdu_close(uint8_t *buf, size_t n, bool crc)
{
	unsigned pad = soft_mpa_pad((uint32_t)n - 2);
	uint32_t c;

	memset(buf + n, 0, pad);
	n += pad;
	c = crc ? rrr_crc32c(0, buf, n) : 0;
	crc_put(buf + n, c);
	return n + 4;
}

void rrr__soft_mpa_trailer(uint8_t *trl, unsigned pad, const struct iovec *v, int n, bool crc)
{
	memset(trl, 0, 8);
	if (crc) {
		uint32_t c = 0;

		for (int i = 0; i < n; i++)
			c = rrr_crc32c(c, v[i].iov_base, v[i].iov_len);
		crc_put(trl + pad, rrr_crc32c(c, trl, pad)); /* the pad bytes: zeros */
	}
}

bool rrr__soft_mpa_trailer_ok(uint32_t crc, const uint8_t *trl, unsigned pad)
{
	return rrr_crc32c(crc, trl, pad) == crc_get(trl + pad);
}

static bool crc_ok(const uint8_t *buf, size_t len, bool crc)
{
	uint32_t c, got;

	if (!crc)
		return true; /* without CRC the field is not checked */
	c = rrr_crc32c(0, buf, len - 4);
	got = crc_get(buf + len - 4);
	return c == got;
}

size_t rrr__soft_mpa_rtr_len(unsigned type)
{
	switch (type) {
	case SOFT_RTR_SEND:
		return SOFT_HDR_UNTAGGED + 4;
	case SOFT_RTR_READ:
		return SOFT_HDR_UNTAGGED + SOFT_READ_REQ_LEN + 4;
	default:
		return SOFT_HDR_TAGGED + 4;
	}
}

size_t rrr__soft_mpa_rtr(uint8_t *buf, unsigned type, bool crc)
{
	size_t n;

	switch (type) {
	case SOFT_RTR_SEND:
		n = rrr__soft_hdr_untagged(buf, SOFT_OP_SEND, true, 0, SOFT_QN_SEND, 1, 0, 0);
		break;
	case SOFT_RTR_READ: {
		struct soft_read_req rd = {0};

		n = rrr__soft_hdr_untagged(buf, SOFT_OP_READ_REQ, true, 0, SOFT_QN_READ, 1, 0,
					   SOFT_READ_REQ_LEN);
		rrr__soft_read_req_encode(buf + n, &rd);
		n += SOFT_READ_REQ_LEN;
		break;
	}
	default:
		n = rrr__soft_hdr_tagged(buf, SOFT_OP_WRITE, true, 0, 0, 0);
		break;
	}
	return fpdu_close(buf, n, crc);
}

bool rrr__soft_mpa_is_rtr(const uint8_t *buf, unsigned type, bool crc, struct soft_read_req *rd)
{
	size_t len = rrr__soft_mpa_rtr_len(type);
	struct soft_hdr h;

	if (rrr__soft_hdr_decode(buf, &h) || h.ddp_ver != 1 || h.rdmap_ver != 1 || !h.last ||
	    (size_t)h.ulpdu_len + 2 + 4 != len || !crc_ok(buf, len, crc))
		return false;
	switch (type) {
	case SOFT_RTR_SEND:
		return !h.tagged && h.opcode == SOFT_OP_SEND && h.qn == SOFT_QN_SEND && h.msn == 1 &&
		       h.mo == 0;
	case SOFT_RTR_READ: {
		struct soft_read_req r;

		if (h.tagged || h.opcode != SOFT_OP_READ_REQ || h.qn != SOFT_QN_READ || h.msn != 1 ||
		    h.mo != 0)
			return false;
		rrr__soft_read_req_decode(buf + SOFT_HDR_UNTAGGED, &r);
		if (r.size != 0)
			return false;
		if (rd)
			*rd = r;
		return true;
	}
	default: /* any STag and TO: RFC 6581 leaves them to the initiator (siw sends STag 1) */
		return h.tagged && h.opcode == SOFT_OP_WRITE;
	}
}

size_t rrr__soft_mpa_rtr_read_resp(uint8_t *buf, const struct soft_read_req *rd, bool crc)
{
	size_t n = rrr__soft_hdr_tagged(buf, SOFT_OP_READ_RESP, true, rd->sink_stag, rd->sink_to, 0);

	return fpdu_close(buf, n, crc);
}

bool rrr__soft_mpa_is_rtr_read_resp(const uint8_t *buf, bool crc)
{
	struct soft_hdr h;

	return !rrr__soft_hdr_decode(buf, &h) && h.tagged && h.last && h.ddp_ver == 1 &&
	       h.rdmap_ver == 1 && h.opcode == SOFT_OP_READ_RESP &&
	       h.ulpdu_len == SOFT_HDR_TAGGED - 2 && h.stag == 0 && h.to == 0 &&
	       crc_ok(buf, SOFT_HDR_TAGGED + 4, crc);
}
