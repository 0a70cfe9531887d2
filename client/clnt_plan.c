/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_plan.c - RPC-over-RDMA chunk planning for the client (the
 * decisions of xprtrdma's rpcrdma_marshal_req, RFC 8166 section 3.5 and
 * RFC 8267), and validation of the chunks a server returns in a reply.
 *
 * The call. With H the largest transport header the call can need:
 *   1. the whole RPC call (payload and its XDR pad included) fits the
 *      peer's receive size after H          -> RDMA_MSG, inline;
 *   2. else, if it has a TO_SERVER DDP payload and the rest of the call
 *      (without the payload and without its pad) fits
 *                                            -> RDMA_MSG with a read chunk
 *      at the payload's XDR position (the length word stays inline; the
 *      pad travels neither inline nor in the chunk);
 *   3. else                                  -> RDMA_NOMSG: one position-
 *      zero read chunk carries the whole call; only the header is inline.
 *
 * The reply. A FROM_SERVER sink gets a write chunk unless the caller gave a
 * reply_hint and header + hint + payload fit our receive size. A reply
 * whose non-payload part (reply_hint) may not fit our receive size (after
 * the header that echoes the chunks) gets a reply chunk of reply_hint
 * bytes. reply_hint 0 means "small": no reply chunk.
 *
 * Header sizes (XDR words): fixed part xid, vers, credits, proc and the
 * three list discriminators = 7 words; each read list entry 6 words; a
 * write chunk 2 words + 4 per segment; a reply chunk 1 word + 4 per segment.
 *
 * Recovery: none needed; pure functions.
 */
#include <errno.h>

#include "client/clnt_impl.h"

#define HDR_FIXED 28u

uint32_t rrr__rdma_hdr_size(uint32_t nread, uint32_t nwrite, uint32_t nreply)
{
	uint64_t n = HDR_FIXED + 24ull * nread;

	if (nwrite)
		n += 8ull + 16ull * nwrite;
	if (nreply)
		n += 4ull + 16ull * nreply;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static uint64_t pad4(uint64_t n)
{
	return (n + 3u) & ~(uint64_t)3u;
}

int rrr__clnt_plan(const struct rrr__plan_in *in, struct rrr__plan *out)
{
	uint32_t segs = in->max_segs ? in->max_segs : 1;
	uint32_t wsegs, rsegs;
	uint64_t rest;

	out->call = RRR__CALL_INLINE;
	out->write_chunk = false;
	out->reply_chunk = false;
	out->reply_len = 0;
	if (in->payload_len > in->msg_len)
		return -EINVAL;

	/* reply side first: its chunks are part of the call's header */
	if (in->sink_len) {
		uint64_t inl = (uint64_t)HDR_FIXED + in->reply_hint + pad4(in->sink_len);

		if (!in->reply_hint || inl > in->inline_recv)
			out->write_chunk = true;
	}
	wsegs = out->write_chunk ? segs : 0;
	if (in->reply_hint &&
	    (uint64_t)rrr__rdma_hdr_size(0, wsegs, 0) + in->reply_hint > in->inline_recv) {
		out->reply_chunk = true;
		out->reply_len = (uint32_t)pad4(in->reply_hint);
	}
	rsegs = out->reply_chunk ? segs : 0;

	/* the call */
	if ((uint64_t)rrr__rdma_hdr_size(0, wsegs, rsegs) + in->msg_len <= in->inline_send)
		return 0;
	rest = in->msg_len - pad4(in->payload_len);
	if (in->payload_len && pad4(in->payload_len) <= in->msg_len &&
	    (uint64_t)rrr__rdma_hdr_size(segs, wsegs, rsegs) + rest <= in->inline_send) {
		out->call = RRR__CALL_READ_CHUNK;
		return 0;
	}
	if (rrr__rdma_hdr_size(segs, wsegs, rsegs) > in->inline_send)
		return -EMSGSIZE;
	out->call = RRR__CALL_NOMSG;
	return 0;
}

int rrr__clnt_check_chunk(const struct rrr_rdma_chunk *got, const struct rrr_reg_seg *offered,
			  uint32_t noffered, uint32_t *total)
{
	uint64_t sum = 0;
	bool short_seen = false;

	if (got->nsegs > noffered)
		return -EBADMSG;
	for (uint32_t i = 0; i < got->nsegs; i++) {
		const struct rrr_rdma_seg *s = &got->segs[i];

		if (s->handle != offered[i].handle || s->offset != offered[i].offset ||
		    s->length > offered[i].length)
			return -EBADMSG;
		/* data is contiguous only if every segment before the last used
		 * one was filled */
		if (s->length && short_seen)
			return -EBADMSG;
		if (s->length < offered[i].length)
			short_seen = true;
		sum += s->length;
	}
	if (sum > UINT32_MAX)
		return -EBADMSG;
	*total = (uint32_t)sum;
	return 0;
}

int rrr__clnt_parse_reply(const void *buf, size_t len, const struct rrr__offer *offer,
			  struct rrr_rdma_hdr *hdr, struct rrr__reply_view *v)
{
	struct rrr_rdma_limits lim;
	uint32_t total = 0;
	int rc;

	v->kind = RRR__REPLY_BAD;
	v->status = -EBADMSG;
	v->credits = 0;
	v->msg_off = v->msg_len = 0;
	v->placed = false;
	v->placed_len = 0;
	v->reply_len = 0;
	rrr_rdma_limits_default(&lim);
	lim.is_reply = true;
	lim.allow_zero_len = true;
	lim.max_write_chunks = 1;
	rc = rrr_rdma_hdr_decode(buf, len, &lim, hdr);
	if (rc)
		return v->kind;
	v->credits = hdr->credits;
	switch (hdr->proc) {
	case RRR_RDMA_ERROR:
		v->kind = RRR__REPLY_ERROR;
		v->status = -EREMOTEIO;
		return v->kind;
	case RRR_RDMA_MSG:
	case RRR_RDMA_NOMSG:
		break;
	default:
		return v->kind;
	}
	if (hdr->nwrite) {
		if (hdr->nwrite != 1 || !offer->nwrite ||
		    rrr__clnt_check_chunk(&hdr->write[0], offer->write, offer->nwrite, &total))
			return v->kind;
		v->placed = total > 0;
		v->placed_len = total;
	}
	if (hdr->proc == RRR_RDMA_MSG) {
		if (hdr->has_reply &&
		    (!offer->nreply ||
		     rrr__clnt_check_chunk(&hdr->reply, offer->reply, offer->nreply, &total)))
			return v->kind;
		v->msg_off = hdr->hdr_len;
		v->msg_len = len - hdr->hdr_len;
		v->kind = RRR__REPLY_MSG;
		v->status = 0;
		return v->kind;
	}
	/* RDMA_NOMSG: the whole reply is in the reply chunk we offered */
	if (!hdr->has_reply || !offer->nreply ||
	    rrr__clnt_check_chunk(&hdr->reply, offer->reply, offer->nreply, &total) || !total)
		return v->kind;
	v->reply_len = total;
	v->kind = RRR__REPLY_NOMSG;
	v->status = 0;
	return v->kind;
}
