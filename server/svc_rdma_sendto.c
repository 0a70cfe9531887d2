/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_sendto.c - the send path of the RPC-over-RDMA version 1
 * (RFC 8166) server: building the reply's transport header, choosing
 * inline or reply chunk, Send With Invalidate, RDMA_ERROR, posting chains
 * with doorbell batching, waiting for send-queue room, and the push window
 * (like Linux svc_rdma_sendto.c). Runs on the worker thread that owns the
 * connection.
 *
 * Reply path. The handler's results are encoded into the send buffer (or,
 * when the client offered a reply chunk, into a larger request buffer);
 * DDP-eligible payloads are diverted into write chunks by the DDP hook
 * (svc_rdma_rw.c). The reply goes inline (RDMA_MSG) when the transport
 * header plus message fit the negotiated inline size, else through the
 * reply chunk (RDMA_NOMSG); when neither is possible the reply becomes
 * SYSTEM_ERR. RDMA WRITEs for the write and reply chunks are chained
 * before the SEND, and only the SEND is signaled; its completion ends the
 * request. Send With Invalidate names the single handle a call carried,
 * never on error replies. Every reply grants max_requests credits.
 *
 * Posting. A chain that does not fit the send queue waits its turn, in
 * order (counted as a credit stall). Chains that handling one poll batch
 * produces are posted together, up to a quarter of the credit window per
 * post (doorbell batching, see rrr__doorbell_max()); queued READ chains (a
 * pull the batch started) are posted before the next handler runs
 * (svc_rdma_recvfrom.c).
 *
 * Push window. The pull window's bound on the way out: while the write-
 * and reply-chunk bytes of replies posted and not yet completed reach 2 x
 * max_payload, a new call does not start (it waits in the deferred ring,
 * in arrival order, its receive buffer held, counted in push_waits), so
 * at most one more reply than the window is read ahead of the wire. A
 * READ's data is then read from the file just before the provider
 * checksums and sends it, while it is still in the CPU's caches, and the
 * few contexts in use keep reusing their payload buffers; without the
 * window a batch of 32 1 MiB READs would read 32 MiB ahead and the provider
 * would take it back from memory. The window counts what the reply
 * actually carries, not what the client offered, and only a completion
 * retires it: a client that stops reading its socket makes the server hold
 * that much, not a reply buffer per credit.
 *
 * Recovery. A post that fails disconnects the connection
 * (rrr__svc_rdma_fail); the contexts whose chains were not (wholly)
 * posted end at once, the WRs posted before the failure flush. Once the
 * QP is in error nothing more is posted: queued chains end their
 * contexts. A reply that cannot be encoded even as SYSTEM_ERR is dropped.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

/* Most reply-chunk bytes one connection had in flight at once (tests). */
static uint64_t push_peak;

uint64_t rrr__svc_rdma_push_peak(void)
{
	return __atomic_load_n(&push_peak, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ sending */

/*
 * Doorbell batching. Replies (and READ chains) that handling one poll batch
 * produces are posted together, so a software provider writes them to the
 * socket in one call and the peer is woken once, not once per reply; a
 * batch holds at most rrr__doorbell_max() of them (common/rrr_impl.h says
 * why).
 */

/* Post the chains of the contexts from @head on (linked through ->next;
 * send-queue room already taken) as one chained post, in order. The
 * provider sees one doorbell: a software provider hands the whole batch to
 * one socket write, as a NIC fetches a doorbell's WRs in one go. */
static void post_batch(struct svc_rdma_conn *rc, struct svc_rdma_ctx *head)
{
	struct rrr_send_wr *bad = NULL, *first = NULL, *tail = NULL;
	struct svc_rdma_ctx *ctx, *next;
	bool failed = false;

	for (ctx = head; ctx; ctx = ctx->next) {
		struct rrr_send_wr *w = ctx->chain;

		if (tail)
			tail->next = w;
		else
			first = w;
		while (w->next)
			w = w->next;
		tail = w;
	}
	if (!first)
		return;
	RRR__STAT_ADD(rc->base.st, send_posts, 1);
	if (rrr_qp_post_send(rc->qp, first, &bad) == 0)
		bad = NULL;
	else if (!bad)
		bad = first;
	/* undo the links between chains; a context any of whose WRs is at or
	 * after @bad was not (wholly) posted: nothing from @bad on was posted,
	 * earlier WRs will flush (a posted prefix is unsignaled; the
	 * context's buffers live until the connection is freed) */
	for (ctx = head; ctx; ctx = next) {
		struct rrr_send_wr *w = ctx->chain;

		next = ctx->next;
		ctx->next = NULL;
		for (;; w = w->next) {
			if (w == bad)
				failed = true;
			if (--ctx->sq_need == 0 || !w->next)
				break;
		}
		w->next = NULL;
		ctx->sq_need = 0;
		if (failed) {
			rc->sq_free += ctx->sq_held;
			ctx->sq_held = 0;
			rrr__svc_rdma_ctx_put(ctx);
		}
	}
	if (failed)
		rrr__svc_rdma_fail(rc, "cannot post send work requests");
}

/* Take send-queue room for @ctx's chain and post it, or queue it for the
 * end of the poll batch being handled (rrr__svc_rdma_db_flush); a quarter of the credit
 * window goes out at once (rrr__doorbell_max). */
static void do_post(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	rc->sq_free -= ctx->sq_need;
	ctx->sq_held = ctx->sq_need;
	ctx->next = NULL;
	if (rc->db_defer) {
		if (rc->db_tail)
			rc->db_tail->next = ctx;
		else
			rc->db_head = ctx;
		rc->db_tail = ctx;
		if (ctx->phase == PH_REG || ctx->phase == PH_READ)
			rc->db_pulls++;
		if (++rc->db_n >= rrr__doorbell_max(rc->max_requests))
			rrr__svc_rdma_db_flush(rc);
		return;
	}
	post_batch(rc, ctx);
}

/* Post what the poll batch produced (replies, READ chains), in order. */
void rrr__svc_rdma_db_flush(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *head = rc->db_head;

	rc->db_head = rc->db_tail = NULL;
	rc->db_n = rc->db_pulls = 0;
	if (!head) {
		rrr__svc_rdma_after_run(rc, true); /* replies that went otherwise */
		return;
	}
	if (rc->broken) {
		rrr__svc_rdma_after_run(rc, false);
		/* the QP is in error: nothing more is posted */
		while (head) {
			struct svc_rdma_ctx *next = head->next;

			head->next = NULL;
			rc->sq_free += head->sq_held;
			head->sq_held = head->sq_need = 0;
			rrr__svc_rdma_ctx_put(head);
			head = next;
		}
		return;
	}
	post_batch(rc, head);
	rrr__svc_rdma_after_run(rc, true);
}

void rrr__svc_rdma_post_chain(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (rc->broken) {
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	if (rc->sq_wait_head || rc->sq_free < ctx->sq_need) {
		ctx->next = NULL;
		if (rc->sq_wait_tail)
			rc->sq_wait_tail->next = ctx;
		else
			rc->sq_wait_head = ctx;
		rc->sq_wait_tail = ctx;
		RRR__STAT_ADD(rc->base.st, credit_stalls, 1);
		return;
	}
	do_post(ctx);
}

void rrr__svc_rdma_sq_kick(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *ctx;

	while ((ctx = rc->sq_wait_head) && !rc->broken && rc->sq_free >= ctx->sq_need) {
		rc->sq_wait_head = ctx->next;
		if (!rc->sq_wait_head)
			rc->sq_wait_tail = NULL;
		ctx->next = NULL;
		do_post(ctx);
	}
}

void rrr__svc_rdma_send_error(struct svc_rdma_ctx *ctx, uint32_t xid, uint32_t err)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_send_wr *wr = &ctx->wrs[0];
	struct rrr_sge *sge = &ctx->sges[SVC_RDMA_MAX_WRS];
	struct rrr_xdr x;

	rrr_xdr_init(&x, ctx->sendbuf, SVC_RDMA_HDR_AREA, RRR_XDR_ENCODE);
	if (rrr_rdma_err_encode(&x, xid, rc->max_requests, err)) {
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uint64_t)(uintptr_t)ctx->sendbuf;
	sge->length = (uint32_t)rrr_xdr_pos(&x);
	sge->lkey = rrr_mr_lkey(rc->send_mr);
	wr->opcode = RRR_WR_SEND;
	wr->flags = RRR_SEND_SIGNALED;
	wr->wr_id = (uint64_t)(uintptr_t)ctx | PH_SEND;
	wr->sg_list = sge;
	wr->num_sge = 1;
	ctx->chain = wr;
	ctx->sq_need = 1;
	ctx->phase = PH_SEND;
	RRR__STAT_ADD(rc->base.st, rdma_errors_sent, 1);
	RRR__STAT_ADD(rc->base.st, send_bytes, sge->length);
	rrr__svc_rdma_post_chain(ctx);
}

/* Re-encode @res as a SYSTEM_ERR reply for the call. */
static void reply_syserr(struct svc_rdma_ctx *ctx, struct rrr_xdr *res)
{
	rrr_xdr_init(res, res->buf, res->len, RRR_XDR_ENCODE);
	rrr_rpc_encode_accepted(res, ctx->hdr->xid, RRR_RPC_SYSTEM_ERR, 0, 0);
	rrr__svc_rdma_ddp_reset(ctx);
}

void rrr__svc_rdma_reply(struct svc_rdma_ctx *ctx, struct rrr_xdr *res, enum rrr__svc_verdict v)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_xprt_stats *st = rc->base.st;
	static _Thread_local struct rrr_rdma_hdr rhdr;
	struct rrr_send_wr *send;
	struct rrr_sge *sge = &ctx->sges[SVC_RDMA_MAX_WRS];
	struct rrr_mr *body_mr;
	struct rrr_xdr hx;
	unsigned n;
	size_t hlen, mlen;
	bool inline_ok, via_reply = false, tried_err = false;

	if (v == RRR__SVC_NO_REPLY) {
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	if (v == RRR__SVC_REPLY_ERR)
		rrr__svc_rdma_ddp_reset(ctx);
	body_mr = res->buf == ctx->sendbuf + SVC_RDMA_HDR_AREA ? rc->send_mr : ctx->res.mr;
again:
	/* the fixed part only: the lists are read up to their counts (the
	 * whole header is ~11 KB, most of it unused list room) */
	memset(&rhdr, 0, offsetof(struct rrr_rdma_hdr, read));
	rhdr.nwrite = 0;
	rhdr.has_reply = false;
	rhdr.err = rhdr.vers_low = rhdr.vers_high = 0;
	rhdr.xid = ctx->hdr->xid;
	rhdr.vers = RRR_RPCRDMA_VERSION;
	rhdr.credits = rc->max_requests;
	rhdr.proc = RRR_RDMA_MSG;
	n = 0;
	mlen = rrr_xdr_pos(res);
	if (rrr__svc_rdma_write_chunks(ctx, &rhdr, &n))
		goto syserr;
	rrr_xdr_init(&hx, ctx->sendbuf, SVC_RDMA_HDR_AREA, RRR_XDR_ENCODE);
	if (rrr_rdma_hdr_encode(&hx, &rhdr))
		goto syserr;
	hlen = rrr_xdr_pos(&hx);
	inline_ok = hlen + mlen <= rc->inline_send;
	if (!inline_ok) {
		if (!ctx->hdr->has_reply || mlen > ctx->hdr->reply.total)
			goto syserr;
		if (rrr__svc_rdma_write_reply_chunk(ctx, res->buf, body_mr, (uint32_t)mlen, &rhdr, &n))
			goto syserr;
		rhdr.proc = RRR_RDMA_NOMSG;
		rrr_xdr_init(&hx, ctx->sendbuf, SVC_RDMA_HDR_AREA, RRR_XDR_ENCODE);
		if (rrr_rdma_hdr_encode(&hx, &rhdr))
			goto syserr;
		hlen = rrr_xdr_pos(&hx);
		if (hlen > rc->inline_send)
			goto syserr;
		via_reply = true;
	}

	send = &ctx->wrs[n];
	memset(send, 0, sizeof(*send));
	sge[0].addr = (uint64_t)(uintptr_t)ctx->sendbuf;
	sge[0].length = (uint32_t)hlen;
	sge[0].lkey = rrr_mr_lkey(rc->send_mr);
	send->sg_list = sge;
	send->num_sge = 1;
	if (!via_reply && mlen) {
		sge[1].addr = (uint64_t)(uintptr_t)res->buf;
		sge[1].length = (uint32_t)mlen;
		sge[1].lkey = rrr_mr_lkey(body_mr);
		send->num_sge = 2;
	}
	send->opcode = RRR_WR_SEND;
	if (v == RRR__SVC_REPLY_OK && !tried_err && ctx->has_inv && rc->remote_inv) {
		send->opcode = RRR_WR_SEND_WITH_INV;
		send->u.send.invalidate_rkey = ctx->inv_handle;
		RRR__STAT_ADD(st, remote_inv, 1);
	}
	send->flags = RRR_SEND_SIGNALED;
	send->wr_id = (uint64_t)(uintptr_t)ctx | PH_SEND;
	if (n)
		ctx->wrs[n - 1].next = send;
	ctx->chain = &ctx->wrs[0];
	/* + the LOCAL_INVs of a zero-copy payload, which then signal */
	ctx->sq_need = n + 1 + rrr__svc_rdma_zc_chain(ctx, send, send->wr_id);
	ctx->phase = PH_SEND;
	ctx->push_bytes = via_reply ? mlen : 0;
	for (unsigned k = 0; k < ctx->wchunk_next && k < SVC_RDMA_MAX_WRITE_CHUNKS; k++)
		ctx->push_bytes += ctx->wchunk_len[k];
	rc->push_inflight += ctx->push_bytes;
	for (uint64_t p = __atomic_load_n(&push_peak, __ATOMIC_RELAXED); rc->push_inflight > p;)
		if (__atomic_compare_exchange_n(&push_peak, &p, rc->push_inflight, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	RRR__STAT_ADD(st, replies, 1);
	RRR__STAT_ADD(st, send_bytes, hlen + (via_reply ? 0 : mlen));
	rrr__svc_rdma_post_chain(ctx);
	return;

syserr:
	if (tried_err) {
		/* even a bare SYSTEM_ERR does not fit: nothing can be said */
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	tried_err = true;
	v = RRR__SVC_REPLY_ERR;
	reply_syserr(ctx, res);
	goto again;
}

