/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_recvfrom.c - the receive path of the RPC-over-RDMA
 * version 1 (RFC 8166) server: receive buffers and their reposting,
 * transport header validation, calls that wait (for a request context or a
 * window), the pull window, and dispatch to the handler (like Linux
 * svc_rdma_recvfrom.c). Runs on the worker thread that owns the connection.
 *
 * Receive buffers. A connection has max_requests + batch receive buffers
 * of min(local inline_recv, peer's send size) bytes in one registered region
 * (svc_rdma_transport.c posts them all before the accept). A receive buffer
 * goes back to the repost list as soon as its bytes are no longer needed,
 * and receives are reposted in batches (a quarter of the credits, at most
 * SVC_RDMA_BATCH_MAX), and at the end of every poll pass.
 *
 * Header validation. A receive is first checked as a whole by
 * rrr_rdma_hdr_decode() into the connection's scratch header, against this
 * server's limits (segments per chunk, read segments, write chunks); only
 * then is a request context (svc_rdma_transport.c, a pool bounded by the
 * credits) taken, the header swapped into it, and the read-chunk plan
 * checked (svc_rdma_rw.c) before any buffer is allocated or RDMA operation
 * posted. Failures answer RDMA_ERROR (svc_rdma_sendto.c): ERR_VERS for a
 * version other than 1, ERR_CHUNK for anything else malformed; a message
 * too short to carry a header is dropped, and so is an RDMA_ERROR or
 * RDMA_DONE from a client.
 *
 * Dispatch. An inline call (RDMA_MSG, no read list) is dispatched straight
 * from the receive buffer; a call with read chunks is rebuilt in a request
 * buffer while its chunks are pulled with RDMA READ (svc_rdma_rw.c), then
 * dispatched when the READs (and the sink's invalidation) complete. READ
 * chains queued in the poll batch are posted before the handler runs, so
 * the client sends the next call's data while this one's handler works.
 * The reply is built by svc_rdma_sendto.c.
 *
 * Deferral. A call that arrives while every context is busy - a client's
 * next call can overtake the Send completion of the reply that freed its
 * credit - or while the push window (svc_rdma_sendto.c) is full waits in a
 * ring with its receive buffer held (counted as a credit stall, or in
 * push_waits) and runs, in arrival order, when there is room
 * (rrr__svc_rdma_recv_resume, at the end of every poll pass). So a client
 * can make the server hold no more than credits + 4 contexts, and no more
 * waiting calls than receives posted (max_requests + batch).
 *
 * Pull window. A connection has at most two records' worth (2 x
 * max_payload) of read-chunk bytes being pulled at once; a call beyond that
 * waits in arrival order with its receive buffer held (counted in
 * pull_waits) and starts when earlier READs complete (a call larger than
 * the window goes alone). The rebuilt call's buffer comes from a LIFO pool
 * and goes back as soon as the reply is built, so at depth the client's
 * Read Responses land in the two or three buffers the last calls just left,
 * still in the CPU's caches, instead of cycling through one cold buffer per
 * context (rrr-bench io, 1 MiB WRITE at depth 32). Calls without read chunks
 * never wait for it.
 *
 * Recovery. A client that sends more calls than it has receives for, a
 * failed receive post or a read plan that cannot be prepared (other than a
 * malformed one) disconnects the connection (rrr__svc_rdma_fail). Once the
 * connection is broken or the server is stopping, receives are dropped and
 * not reposted, and waiting calls are released as contexts (their receive
 * buffers are never reposted on a QP in error).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

static bool pull_fits(const struct svc_rdma_conn *rc, uint64_t need);
static bool push_open(const struct svc_rdma_conn *rc);
static void pull_start(struct svc_rdma_ctx *ctx, uint32_t idx, uint32_t len);

/* ------------------------------------------------------------------ receives */

int rrr__svc_rdma_post_recvs(struct svc_rdma_conn *rc, const uint32_t *idx, uint32_t n)
{
	struct rrr_recv_wr wr[SVC_RDMA_BATCH_MAX * 8];
	struct rrr_sge sge[SVC_RDMA_BATCH_MAX * 8];
	struct rrr_recv_wr *bad;
	uint32_t i, done = 0;

	while (done < n) {
		uint32_t k = svc_rdma_min_u32(n - done, (uint32_t)(sizeof(wr) / sizeof(wr[0])));

		for (i = 0; i < k; i++) {
			uint32_t b = idx[done + i];

			sge[i].addr =
			    (uint64_t)(uintptr_t)(rc->recv_region + (size_t)b * rc->recv_size);
			sge[i].length = rc->recv_size;
			sge[i].lkey = rrr_mr_lkey(rc->recv_mr);
			wr[i].wr_id = SVC_RDMA_RECV_TAG | b;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		}
		if (rrr_qp_post_recv(rc->qp, wr, &bad))
			return -EIO;
		done += k;
	}
	return 0;
}

void rrr__svc_rdma_repost(struct svc_rdma_conn *rc, uint32_t idx, bool flush)
{
	if (idx != UINT32_MAX)
		rc->repost[rc->nrepost++] = idx;
	if (rc->broken || rc->disconnecting) {
		rc->nrepost = 0;
		return;
	}
	if (rc->nrepost && (flush || rc->nrepost >= rc->batch)) {
		if (rrr__svc_rdma_post_recvs(rc, rc->repost, rc->nrepost))
			rrr__svc_rdma_fail(rc, "cannot post receives");
		rc->nrepost = 0;
	}
}

/* ------------------------------------------------------------------ dispatch */

static uint32_t req_max_payload(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (ctx->hdr->nwrite)
		return svc_rdma_min_u32(ctx->hdr->write[0].total, rc->max_payload);
	if (ctx->hdr->has_reply)
		return svc_rdma_min_u32(ctx->hdr->reply.total, rc->max_payload);
	/* the whole reply must go inline: leave room for headers */
	return rc->inline_send > 1024 ? rc->inline_send - 1024 : 0;
}

/* On the worker that took the call (rrr__svc_offload): run the handler. */
static void handler_run(void *arg)
{
	struct svc_rdma_ctx *ctx = arg;

	ctx->verdict = rrr__svc_dispatch(&ctx->req, &ctx->args, &ctx->resx);
}

void rrr__svc_rdma_dispatch_done(struct svc_rdma_ctx *ctx)
{
	uint32_t idx = ctx->recv_idx;

	ctx->recv_idx = UINT32_MAX;
	rrr__svc_rdma_reply(ctx, &ctx->resx, ctx->verdict);
	if (ctx->req.after_reply) {
		/* the reply leaves first (not at the end of the poll batch),
		 * then the handler's after-reply work, the arguments intact */
		if (ctx->rc->db_pulls || ctx->rc->db_defer)
			rrr__svc_rdma_db_flush(ctx->rc);
		rrr__svc_req_after_reply(&ctx->req, ctx->verdict != RRR__SVC_NO_REPLY);
	}
	/* the reply copied what it needs: the receive buffer is free, and
	 * the rebuilt call's buffer goes back to the pool now, still warm,
	 * for the next pull */
	if (idx != UINT32_MAX)
		rrr__svc_rdma_repost(ctx->rc, idx, false);
	rrr__svc_rdma_sink_give(ctx);
}

/* Hand the handler to an idle worker when it is slow (svc_offload.c);
 * true when handed. The
 * other worker touches only the request: memory it may need from the
 * connection (the write-chunk payload buffer) is taken here first, and
 * zero-copy result payloads are copied there (the registration pool is
 * the owner's). */
static bool offload(struct svc_rdma_ctx *ctx, const uint8_t *buf, size_t len)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (!rrr__svc_offload_wanted(buf, len))
		return false;
	if (ctx->hdr->nwrite && rrr__svc_rdma_buf_get(rc, &ctx->pay, rc->max_payload))
		return false;
	ctx->req.zc = NULL;
	if (rrr__svc_offload(&rc->base, handler_run, rrr__svc_rdma_handler_done, ctx)) {
		if (ctx->hdr->nwrite)
			ctx->req.zc = rrr__svc_rdma_zc;
		return false;
	}
	return true;
}

void rrr__svc_rdma_dispatch(struct svc_rdma_ctx *ctx, uint8_t *buf, size_t len,
			    uint32_t recv_idx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	ctx->recv_idx = recv_idx;

	/* Read Requests queued in this poll batch go out before the handler
	 * runs: the client sends the next call's data while this one is
	 * written to the file, instead of idling behind the pwrite (replies
	 * keep waiting for the batch's doorbell) */
	if (rc->db_pulls)
		rrr__svc_rdma_db_flush(rc);
	memset(&ctx->req, 0, sizeof(ctx->req));
	ctx->req.svc = rc->base.svc;
	ctx->req.conn = &rc->base;
	ctx->req.max_payload = req_max_payload(ctx);
	if (ctx->hdr->nwrite) {
		ctx->req.alloc = rrr__svc_rdma_req_alloc;
		ctx->req.alloc_ctx = ctx;
		ctx->req.zc = rrr__svc_rdma_zc;
	}
	rrr_xdr_init(&ctx->args, buf, len, RRR_XDR_DECODE);
	rrr__svc_rdma_place_args(ctx, &ctx->args);
	if (ctx->hdr->has_reply && !rrr__svc_rdma_buf_get(rc, &ctx->res, rc->max_record))
		rrr_xdr_init(&ctx->resx, ctx->res.p, rc->max_record, RRR_XDR_ENCODE);
	else
		rrr_xdr_init(&ctx->resx, ctx->sendbuf + SVC_RDMA_HDR_AREA, rc->inline_send,
			     RRR_XDR_ENCODE);
	rrr__svc_rdma_ddp_init(ctx, &ctx->resx);
	if (offload(ctx, buf, len))
		return; /* rrr__svc_rdma_handler_done() sends the reply */
	handler_run(ctx);
	rrr__svc_rdma_dispatch_done(ctx);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A call that found no free context, or the push window full, waits here,
 * its receive buffer held (so a client can have no more calls waiting than
 * receives posted). */
static bool defer_call(struct svc_rdma_conn *rc, uint32_t idx, uint32_t len)
{
	uint32_t t;

	if (rc->ndefer >= rc->nrecv)
		return false;
	t = (rc->defer_head + rc->ndefer) % rc->nrecv;
	rc->defer_idx[t] = idx;
	rc->defer_len[t] = len;
	rc->ndefer++;
	/* counted once, by why it waits */
	if (push_open(rc))
		RRR__STAT_ADD(rc->base.st, credit_stalls, 1);
	else
		RRR__STAT_ADD(rc->base.st, push_waits, 1);
	return true;
}

void rrr__svc_rdma_recv(struct svc_rdma_conn *rc, uint32_t idx, uint32_t len, bool resumed)
{
	struct rrr_xprt_stats *st = rc->base.st;
	uint8_t *buf = rc->recv_region + (size_t)idx * rc->recv_size;
	struct svc_rdma_ctx *ctx;
	int err;

	if (!resumed) {
		RRR__STAT_ADD(st, recv_bytes, len);
		rrr__svc_rdma_set_gauges(rc); /* the ESTABLISHED event may still be on its way */
	}
	if (rc->shutting || rc->broken || len > rc->recv_size) {
		rrr__svc_rdma_repost(rc, idx, false);
		return;
	}
	if (!resumed && rc->ndefer) {
		/* behind the calls already waiting for a context */
		if (!defer_call(rc, idx, len)) {
			rrr__svc_rdma_repost(rc, idx, false);
			rrr__svc_rdma_fail(rc, "client sent more calls than it was granted");
		}
		return;
	}
	if (len < 16) {
		RRR__STAT_ADD(st, bad_replies, 1);
		rrr__svc_rdma_repost(rc, idx, false);
		return;
	}
	/* validate the whole header before anything is taken or posted */
	err = rrr_rdma_hdr_decode(buf, len, &rc->lim, rc->scratch);
	if (err) {
		uint32_t xid = be32(buf), proc = be32(buf + 12);

		RRR__STAT_ADD(st, bad_replies, 1);
		rrr__svc_rdma_repost(rc, idx, false);
		if (err == -EOPNOTSUPP && proc == RRR_RDMA_DONE)
			return;
		ctx = rrr__svc_rdma_ctx_get(rc);
		if (!ctx) {
			rrr__svc_rdma_fail(rc, "client sent more calls than it was granted");
			return;
		}
		rrr__svc_rdma_send_error(ctx, xid, err == -EPROTONOSUPPORT ? RRR_ERR_VERS : RRR_ERR_CHUNK);
		return;
	}
	if (rc->scratch->proc != RRR_RDMA_MSG && rc->scratch->proc != RRR_RDMA_NOMSG) {
		/* a client has no business sending RDMA_ERROR: drop it */
		RRR__STAT_ADD(st, bad_replies, 1);
		rrr__svc_rdma_repost(rc, idx, false);
		return;
	}
	ctx = push_open(rc) ? rrr__svc_rdma_ctx_get(rc) : NULL;
	if (!ctx) {
		/* every context busy (credits + slack), or the replies in
		 * flight fill the push window: wait */
		if (!defer_call(rc, idx, len)) {
			rrr__svc_rdma_repost(rc, idx, false);
			rrr__svc_rdma_fail(rc, "client sent more calls than it was granted");
		}
		return;
	}
	{
		struct rrr_rdma_hdr *h = ctx->hdr;

		ctx->hdr = rc->scratch;
		rc->scratch = h;
	}
	rrr__svc_rdma_pick_inv(ctx);
	if (ctx->hdr->nread == 0) {
		if (ctx->hdr->proc == RRR_RDMA_NOMSG) {
			/* RDMA_NOMSG call without its position-zero chunk */
			RRR__STAT_ADD(st, bad_replies, 1);
			rrr__svc_rdma_repost(rc, idx, false);
			rrr__svc_rdma_send_error(ctx, ctx->hdr->xid, RRR_ERR_CHUNK);
			return;
		}
		RRR__STAT_ADD(st, inline_calls, 1);
		/* the receive buffer is reposted once the handler is done */
		rrr__svc_rdma_dispatch(ctx, buf + ctx->hdr->hdr_len, len - ctx->hdr->hdr_len, idx);
		return;
	}
	if (ctx->hdr->proc == RRR_RDMA_NOMSG)
		RRR__STAT_ADD(st, nomsg_calls, 1);
	ctx->pull_need = 0;
	for (uint32_t i = 0; i < ctx->hdr->nread; i++)
		ctx->pull_need += ctx->hdr->read[i].seg.length;
	if (rc->pull_head || !pull_fits(rc, ctx->pull_need)) {
		/* behind the window: wait in order, holding the receive */
		RRR__STAT_ADD(st, pull_waits, 1);
		ctx->pull_idx = idx;
		ctx->pull_len = len;
		ctx->pull_next = NULL;
		if (rc->pull_tail)
			rc->pull_tail->pull_next = ctx;
		else
			rc->pull_head = ctx;
		rc->pull_tail = ctx;
		return;
	}
	pull_start(ctx, idx, len);
}

/* May a new call start, as far as the push window goes? */
static bool push_open(const struct svc_rdma_conn *rc)
{
	return rc->push_inflight < rc->push_window;
}

/* May a pull of @need bytes start now? One always may when none is in
 * flight (a chunk larger than the window goes alone). */
static bool pull_fits(const struct svc_rdma_conn *rc, uint64_t need)
{
	return !rc->pull_inflight || rc->pull_inflight + need <= rc->pull_window;
}

/* The READs of @ctx completed or it ended: its bytes leave the window. */
void rrr__svc_rdma_pull_end(struct svc_rdma_ctx *ctx)
{
	if (ctx->pulling) {
		ctx->rc->pull_inflight -= ctx->pull_need;
		ctx->pulling = false;
	}
}

/* Start the pulls that now fit, in arrival order. */
void rrr__svc_rdma_pull_kick(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *ctx;

	while ((ctx = rc->pull_head) && !rc->broken && pull_fits(rc, ctx->pull_need)) {
		rc->pull_head = ctx->pull_next;
		if (!rc->pull_head)
			rc->pull_tail = NULL;
		pull_start(ctx, ctx->pull_idx, ctx->pull_len);
	}
}

/* Rebuild the call of @ctx (receive buffer @idx, @len bytes) and post the
 * READs of its chunks; the receive buffer is reposted. */
static void pull_start(struct svc_rdma_ctx *ctx, uint32_t idx, uint32_t len)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_xprt_stats *st = rc->base.st;
	uint8_t *buf = rc->recv_region + (size_t)idx * rc->recv_size;
	int err;

	err = rrr__svc_rdma_read_prepare(ctx, buf + ctx->hdr->hdr_len, len - ctx->hdr->hdr_len);
	rrr__svc_rdma_repost(rc, idx, false); /* inline pieces were copied (or refused) */
	if (err == -EINVAL || err == -E2BIG || err == -EOVERFLOW) {
		RRR__STAT_ADD(st, bad_replies, 1);
		rrr__svc_rdma_send_error(ctx, ctx->hdr->xid, RRR_ERR_CHUNK);
		return;
	}
	if (err) {
		rrr__svc_rdma_ctx_put(ctx);
		rrr__log_debug("svc_rdma: read_prepare: %d", err);
		rrr__svc_rdma_fail(rc, "cannot prepare the read chunks of a call");
		return;
	}
	rc->pull_inflight += ctx->pull_need;
	ctx->pulling = true;
	rrr__svc_rdma_post_chain(ctx);
}

/* ------------------------------------------------------------------ deferral */

/* Start the calls that waited for a context or a window, in order, once
 * there is room (or the connection is ending: they are then dropped). */
void rrr__svc_rdma_recv_resume(struct svc_rdma_conn *rc)
{
	/* calls that waited for a context, while contexts are free, and pulls
	 * that now fit the window */
	rrr__svc_rdma_pull_kick(rc);
	while (rc->ndefer && (((rc->ctx_free || rc->nctx < rc->max_ctx) && push_open(rc)) ||
			      rc->broken || rc->shutting)) {
		uint32_t h = rc->defer_head;

		rc->defer_head = (h + 1) % rc->nrecv;
		rc->ndefer--;
		rrr__svc_rdma_recv(rc, rc->defer_idx[h], rc->defer_len[h], true);
	}
}
