/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_xdr.c - encoding a call and decoding its reply, with the
 * DDP hooks of the client (the part of the core that touches XDR).
 *
 * Encoding runs in the submitting thread. The RPC call header and the
 * caller's encode callback write into the request's buffer; the DDP encode
 * hook (record_payload) does not copy a TO_SERVER payload but records its
 * position and iovecs, so the transport decides later (RDMA: inline or
 * read chunk; TCP: sendmsg from the caller's memory). The payload is
 * declared once, in struct rrr_call: the encoder names it with
 * rrr_xdr_encode_payload(xdr, NULL, 0, 0) (the hook's payload), and an
 * encoder that encodes other memory, or none, is refused (-EINVAL), so
 * what is sent is always what the caller declared. A buffer too small is
 * grown (x4) and the call encoded again, up to the transport's bound.
 *
 * Decoding runs on the progress thread once the call's memory is no longer
 * exposed: the RPC reply header, then the caller's decode callback with the
 * DDP decode hook (decode_payload): data a server placed by RDMA WRITE is
 * already in the sink and is only described; inline data is copied into
 * the sink (or described in place when there is none).
 *
 * Recovery: none needed; a failed encode frees the buffer, a bad reply is
 * -EBADMSG for the caller.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/client.h>
#include <rrr/oncrpc.h>
#include <rrr/xdr.h>

#include "client/clnt_impl.h"
#include "common/probes.h"
#include "common/rrr_impl.h"
#include "xdr/oncrpc_rm.h"

/* --- encoding (submitting thread) ------------------------------------------ */

/* The same bytes in the same order: equal after dropping empty entries. */
static bool same_iov(const struct iovec *a, unsigned na, const struct iovec *b, unsigned nb)
{
	unsigned i = 0, j = 0;

	for (;;) {
		while (i < na && !a[i].iov_len)
			i++;
		while (j < nb && !b[j].iov_len)
			j++;
		if (i == na || j == nb)
			return i == na && j == nb;
		if (a[i].iov_base != b[j].iov_base || a[i].iov_len != b[j].iov_len)
			return false;
		i++;
		j++;
	}
}

/* DDP encode hook: record the first TO_SERVER payload (RDMA: the transport
 * decides inline vs read chunk; TCP: it is sent from the caller's iovecs
 * with sendmsg, never copied), copy any other inline. */
static int record_payload(struct rrr_xdr *xdr, void *ctx, const struct iovec *iov, unsigned niov,
			  uint32_t len)
{
	struct rrr__clnt_req *req = ctx;
	const struct rrr_call *call = req->call;

	/* One declaration: a TO_SERVER payload is call->payload; an encoder
	 * that encodes other memory is refused (it would be what is sent
	 * while the caller believes call->payload is). */
	if (call->ddp == RRR_DDP_TO_SERVER && !req->payload_seen) {
		req->payload_seen = true;
		if (call->payload && !same_iov(iov, niov, call->payload, call->npayload)) {
			req->payload_mismatch = true;
			return -EINVAL;
		}
	}
	/* The iovec array may be the encoder's own (on its stack): keep a copy
	 * for the transport. TCP sends the recorded iovecs with sendmsg(): at
	 * most RRR_XDR_PAYLOAD_MAX_IOV of them, more are copied inline. */
	if (!req->has_payload && req->call->ddp == RRR_DDP_TO_SERVER &&
	    (req->clnt->ops != &rrr__clnt_tcp_ops || niov <= RRR_XDR_PAYLOAD_MAX_IOV)) {
		if (xdr->pos > UINT32_MAX)
			return -EMSGSIZE;
		req->has_payload = true;
		req->payload_pos = (uint32_t)xdr->pos;
		req->payload_len = len;
		req->payload_iov = iov;
		req->payload_niov = niov;
		if (niov <= RRR_XDR_PAYLOAD_MAX_IOV) {
			if (niov)
				memcpy(req->payload_iov_copy, iov, niov * sizeof(*iov));
			req->payload_iov = req->payload_iov_copy;
		}
		return 0;
	}
	if (len > UINT32_MAX - 3u)
		return -EMSGSIZE;
	return rrr__rm_out_copy(xdr, iov, niov, len);
}

int rrr__clnt_encode_call(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	const struct rrr_call *call = req->call;
	bool tcp = (c->ops == &rrr__clnt_tcp_ops);
	size_t off = tcp ? 4 : 0;
	size_t cap = RRR__CLNT_ENCODE_START, max = tcp ? RRR__CLNT_ENCODE_MAX_TCP : RRR__CLNT_ENCODE_MAX_RDMA;
	struct rrr_xdr_ddp hook = {.encode = record_payload, .ctx = req};

	if (call->ddp == RRR_DDP_TO_SERVER) {
		hook.payload = call->payload;
		hook.npayload = call->npayload;
	}
	struct rrr_xdr x;
	int rc;

	/* a buffer that grew before is reused at its size: no re-encoding */
	if (req->buf && req->cap > cap && req->cap <= max)
		cap = req->cap;
	for (;;) {
		if (!req->buf || req->cap != cap) {
			free(req->buf);
			req->buf = malloc(cap);
			if (!req->buf)
				return -ENOMEM;
			req->cap = cap;
		}
		req->has_payload = req->payload_seen = req->payload_mismatch = false;
		rrr_xdr_init(&x, req->buf + off, cap - off, RRR_XDR_ENCODE);
		rrr_xdr_set_ddp(&x, &hook);
		rc = rrr_rpc_encode_call(&x, req->xid, call->prog, call->vers, call->proc,
					 call->cred);
		if (rc == 0 && call->encode)
			rc = call->encode(&x, call->args);
		if (rc == 0 && req->payload_mismatch)
			rc = -EINVAL; /* the encoder ignored the refusal */
		if (rc == 0 && call->ddp == RRR_DDP_TO_SERVER && call->npayload &&
		    !req->payload_seen) {
			/* declared but never encoded: it would not be sent */
			req->payload_mismatch = true;
			rc = -EINVAL;
		}
		if (rc == 0) {
			req->len = off + rrr_xdr_pos(&x);
			if (req->has_payload && req->payload_len > UINT32_MAX - 3u - req->len)
				return -EMSGSIZE;
			/* TCP: the whole record (payload and pad included) within
			 * the bound a copied-in payload had */
			if (tcp && req->has_payload &&
			    req->len + (((uint64_t)req->payload_len + 3u) & ~3ull) > max)
				return -EMSGSIZE;
			return 0;
		}
		if (rc != -EMSGSIZE || cap >= max || req->payload_mismatch) {
			free(req->buf);
			req->buf = NULL;
			return rc;
		}
		cap *= 4;
		if (cap > max)
			cap = max;
	}
}

/* --- decoding (progress thread) --------------------------------------------- */

static int fill_sink_iov(const struct rrr_call *call, uint32_t len, struct iovec *iov,
			 unsigned *niov)
{
	unsigned n = 0;
	uint32_t left = len;

	for (unsigned i = 0; i < call->npayload && left; i++) {
		size_t l = call->payload[i].iov_len < left ? call->payload[i].iov_len : left;

		if (!l)
			continue;
		if (n >= RRR_XDR_PAYLOAD_MAX_IOV)
			return -EMSGSIZE;
		iov[n].iov_base = call->payload[i].iov_base;
		iov[n].iov_len = l;
		n++;
		left -= (uint32_t)l;
	}
	if (left)
		return -EMSGSIZE;
	*niov = n;
	return 0;
}

static uint64_t sink_capacity(const struct rrr_call *call)
{
	uint64_t cap = 0;

	if (call->ddp != RRR_DDP_FROM_SERVER || !call->payload)
		return 0;
	for (unsigned i = 0; i < call->npayload; i++)
		cap += call->payload[i].iov_len;
	return cap;
}

/* DDP decode hook: the payload was placed in the sink by RDMA WRITE (write
 * chunk; nothing of it, pad included, is in the inline stream), or is
 * inline and is copied into the sink, or (no sink) is described in place. */
static int decode_payload(struct rrr_xdr *xdr, void *ctx, uint32_t len, struct iovec *iov,
			  unsigned *niov)
{
	struct rrr__clnt_req *req = ctx;
	struct rrr_call *call = req->call;
	uint64_t cap = sink_capacity(call);
	uint8_t *src;
	uint32_t left;
	int rc;

	if (req->placed) {
		req->placed = false;
		if (len > req->placed_len || len > cap)
			return -EBADMSG;
		rc = fill_sink_iov(call, len, iov, niov);
		if (rc)
			return -EBADMSG;
		call->payload_len = len;
		return 0;
	}
	if ((((uint64_t)len + 3u) & ~(uint64_t)3u) > rrr_xdr_remaining(xdr))
		return -EBADMSG;
	src = rrr_xdr_cursor(xdr);
	if (cap) {
		if (len > cap)
			return -EBADMSG;
		left = len;
		for (unsigned i = 0; i < call->npayload && left; i++) {
			size_t l =
			    call->payload[i].iov_len < left ? call->payload[i].iov_len : left;
			memcpy(call->payload[i].iov_base, src, l);
			src += l;
			left -= (uint32_t)l;
		}
		rc = fill_sink_iov(call, len, iov, niov);
		if (rc)
			return -EBADMSG;
		call->payload_len = len;
	} else {
		iov[0].iov_base = src;
		iov[0].iov_len = len;
		*niov = 1;
	}
	return rrr_xdr_skip(xdr, len);
}

int rrr__clnt_decode_reply(struct rrr_clnt *c, struct rrr__clnt_req *req, void *msg, size_t len)
{
	struct rrr_xdr_ddp hook = {.decode = decode_payload, .ctx = req};
	struct rrr_call *call = req->call;
	struct rrr_rpc_reply rp;
	struct rrr_xdr x;
	int rc;

	(void)c;
	RRR_PROBE3(reply_received, c, req->xid, len);
	rrr_xdr_init(&x, msg, len, RRR_XDR_DECODE);
	rc = rrr_rpc_decode_reply(&x, &rp);
	if (rc || rp.xid != req->xid)
		return -EBADMSG;
	if (rp.stat == RRR_RPC_MSG_DENIED) {
		call->rpc_stat =
		    RRR_RPC_STAT_DENIED | (rp.reject_stat & 0xffu) << 8 | (rp.auth_stat & 0xffu);
		return -EPROTO;
	}
	if (rp.accept_stat != RRR_RPC_SUCCESS) {
		call->rpc_stat = rp.accept_stat;
		return -EPROTO;
	}
	call->rpc_stat = 0;
	rrr_xdr_set_ddp(&x, &hook);
	if (call->decode) {
		rc = call->decode(&x, call->res);
		if (rc)
			return -EBADMSG;
	}
	return 0;
}

