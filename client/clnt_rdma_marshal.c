/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_marshal.c - the RPC-over-RDMA v1 transport header of a
 * call (RFC 8166 section 3.4): its read list, write list and reply chunk,
 * each mapped to registrations made for this call only, and the send
 * buffer (header + the inline part of the message). The plan
 * (client/clnt_plan.c) has decided what goes where; this file places it.
 *
 *   read list    RDMA_MSG with a read chunk: the DDP payload (a WRITE's
 *                data) at its XDR position, the rest of the message inline;
 *                RDMA_NOMSG: the whole message at position zero (head,
 *                payload, XDR pad, tail gathered into one chunk).
 *   write list   one write chunk: the caller's sink (a READ's data).
 *   reply chunk  a buffer of the slot's for a reply too large to come inline.
 *
 *   send buffer: [RPC-over-RDMA header][message head][payload][pad][tail]
 *                 (inline)          or [header][message without payload]
 *                 (read chunk)      or [header] (NOMSG)
 *
 * Every function returns 0 or -errno; on failure the registrations made so
 * far stay in the slot, and the caller (rdma_send) recovers them all: a
 * call that was never posted never leaves a registration valid. Runs on
 * the client's progress thread, like the rest of the transport.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/rpcrdma.h>
#include <rrr/xdr.h>

#include "client/clnt_rdma_impl.h"

static void fill_read(struct rrr_rdma_hdr *h, const struct rslot *s, uint32_t position)
{
	uint32_t n;
	const struct rrr_reg_seg *g = rrr__rdma_segs_of(s, IO_SRC, &n);

	for (uint32_t i = 0; i < n; i++) {
		h->read[i].position = position;
		h->read[i].seg.handle = g[i].handle;
		h->read[i].seg.length = g[i].length;
		h->read[i].seg.offset = g[i].offset;
	}
	h->nread = n;
}

static void fill_chunk(struct rrr_rdma_chunk *ch, const struct rslot *s, int k)
{
	uint32_t n;
	const struct rrr_reg_seg *g = rrr__rdma_segs_of(s, k, &n);

	ch->nsegs = n;
	ch->total = 0;
	for (uint32_t i = 0; i < n; i++) {
		ch->segs[i].handle = g[i].handle;
		ch->segs[i].length = g[i].length;
		ch->segs[i].offset = g[i].offset;
		ch->total += g[i].length;
	}
}

int rrr__rdma_marshal_read_list(struct rrr_clnt *c, struct rslot *s,
				const struct rrr__clnt_req *req, const struct rrr__plan *plan,
				struct rrr_rdma_hdr *h)
{
	uint32_t ppad = req->has_payload ? RRR_XDR_PAD(req->payload_len) : 0;
	uint32_t pos = req->has_payload ? req->payload_pos : (uint32_t)req->len;
	unsigned n = 0;
	int rc;

	if (plan->call == RRR__CALL_READ_CHUNK) {
		n = rrr__rdma_sg_from_iov(s->sg, 0, req->payload_iov, req->payload_niov,
					  req->payload_len);
		rc = rrr__rdma_map_chunk(c, s, IO_SRC, n, RRR_ACCESS_REMOTE_READ);
		if (rc)
			return rc;
		fill_read(h, s, pos);
	} else if (plan->call == RRR__CALL_NOMSG) {
		if (pos)
			s->sg[n++] = (struct rrr_sg){req->buf, 0, pos};
		if (req->has_payload) {
			n = rrr__rdma_sg_from_iov(s->sg, n, req->payload_iov, req->payload_niov,
						  req->payload_len);
			memset(s->zpad, 0, sizeof(s->zpad));
			if (ppad > req->payload_len)
				s->sg[n++] = (struct rrr_sg){s->zpad, 0, ppad - req->payload_len};
			if (req->len > pos)
				s->sg[n++] = (struct rrr_sg){req->buf, pos, (uint32_t)req->len - pos};
		}
		rc = rrr__rdma_map_chunk(c, s, IO_SRC, n, RRR_ACCESS_REMOTE_READ);
		if (rc)
			return rc;
		fill_read(h, s, 0);
	}
	return 0;
}

int rrr__rdma_marshal_write_list(struct rrr_clnt *c, struct rslot *s, uint64_t sink,
				 const struct rrr__plan *plan, struct rrr_rdma_hdr *h)
{
	const struct rrr_call *call = s->req->call;
	unsigned n;
	int rc;

	if (!plan->write_chunk)
		return 0;
	n = rrr__rdma_sg_from_iov(s->sg, 0, call->payload, call->npayload, sink);
	rc = rrr__rdma_map_chunk(c, s, IO_SINK, n, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE);
	if (rc)
		return rc;
	h->nwrite = 1;
	fill_chunk(&h->write[0], s, IO_SINK);
	return 0;
}

int rrr__rdma_marshal_reply_chunk(struct rrr_clnt *c, struct rslot *s,
				  const struct rrr__plan *plan, struct rrr_rdma_hdr *h)
{
	int rc;

	if (!plan->reply_chunk)
		return 0;
	if (s->rbuf_cap < plan->reply_len) {
		uint8_t *nb = alloc_pages(plan->reply_len);

		if (!nb)
			return -EAGAIN;
		free(s->rbuf);
		s->rbuf = nb;
		s->rbuf_cap = plan->reply_len;
	}
	s->sg[0] = (struct rrr_sg){s->rbuf, 0, plan->reply_len};
	rc = rrr__rdma_map_io(c, s, IO_REP, 1, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE);
	if (rc)
		return rc;
	h->has_reply = true;
	fill_chunk(&h->reply, s, IO_REP);
	return 0;
}

int rrr__rdma_marshal_send(const struct rdma_xprt *x, struct rslot *s,
			   const struct rrr__clnt_req *req, const struct rrr__plan *plan,
			   const struct rrr_rdma_hdr *h, uint32_t *len)
{
	uint32_t ppad = req->has_payload ? RRR_XDR_PAD(req->payload_len) : 0;
	uint32_t pos = req->has_payload ? req->payload_pos : (uint32_t)req->len;
	struct rrr_xdr xd;
	size_t hlen;
	uint8_t *p;

	rrr_xdr_init(&xd, s->sbuf, x->eff_send, RRR_XDR_ENCODE);
	if (rrr_rdma_hdr_encode(&xd, h))
		return -EMSGSIZE;
	hlen = rrr_xdr_pos(&xd);
	p = s->sbuf + hlen;
	if (plan->call == RRR__CALL_INLINE) {
		if (hlen + req->len + ppad > x->eff_send)
			return -EMSGSIZE;
		memcpy(p, req->buf, pos);
		p += pos;
		if (req->has_payload) {
			rrr__rdma_copy_iov(p, req->payload_iov, req->payload_niov, req->payload_len);
			p += req->payload_len;
			memset(p, 0, ppad - req->payload_len);
			p += ppad - req->payload_len;
			memcpy(p, req->buf + pos, req->len - pos);
			p += req->len - pos;
		}
	} else if (plan->call == RRR__CALL_READ_CHUNK) {
		if (hlen + req->len > x->eff_send)
			return -EMSGSIZE;
		memcpy(p, req->buf, req->len);
		p += req->len;
	}
	*len = (uint32_t)(p - s->sbuf);
	return 0;
}
