/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_transport.c - the RPC-over-RDMA version 1 (RFC 8166)
 * server's transport: the listener and accepting (RFC 8797 private data),
 * the connection's resources and its pool of request contexts, completion
 * handling, the connection ops the worker calls, and failure and teardown
 * (like Linux svc_rdma_transport.c). The receive path is in
 * svc_rdma_recvfrom.c, the send path in svc_rdma_sendto.c, bulk data
 * (RDMA READ and WRITE of chunks) in svc_rdma_rw.c.
 *
 * Connection set-up (accept thread). A CONNECT_REQUEST carries the
 * client's RFC 8797 private data (1024/1024 and no remote invalidation when
 * absent). The server's receive buffers are min(local inline_recv, peer's
 * send size) bytes; its inline replies are at most min(local inline_send,
 * peer's receive size). Remote invalidation is used only when the client's
 * flag says it accepts it, the options allow it and the device can. Each
 * connection gets its own PD (so no other client can reach its READ sinks,
 * which iWARP registers with remote write rights), CQ (its fd goes into the
 * owning worker's epoll), QP, one registered region of receive buffers and
 * one of send buffers; max_requests + batch receives are posted before the
 * accept. The send queue is sized from the credits (SVC_RDMA_SQ_PER_CTX
 * work requests per request context, at least the longest chain,
 * SVC_RDMA_MAX_WRS), not the device's maximum: the soft provider writes
 * its rings once when they are made, so that is what an idle connection
 * holds (about 170 KiB with 32 credits, where a 4,096-entry send queue and
 * its completion queue took 1.2 MiB). The receive and send regions are
 * reserved, not written: their pages are taken when traffic comes.
 *
 * Completions (worker thread). The worker's epoll says the CQ fd is
 * readable; the connection polls its CQ in batches of 32, hands receives
 * to svc_rdma_recvfrom.c and advances each request context by the phase
 * its completion ends (REG -> READ -> INV -> dispatch -> SEND -> free), with
 * the chains the batch produced posted together at its end (doorbell
 * batching, svc_rdma_sendto.c). After a short batch it arms the CQ and
 * polls once more; then the calls that waited start.
 *
 * Contexts. A connection has at most max_requests + SVC_RDMA_CTX_SLACK (4)
 * request contexts (each may hold up to max_payload + 64 KiB of registered
 * buffers), allocated on first use and kept on a free list, not twice the
 * credits: a call that finds every context busy waits (svc_rdma_recvfrom.c).
 *
 * Recovery. Any failed or flushed completion, a post failure or a client
 * that sends more calls than it has receives for disconnects the connection.
 * In-flight requests finish with their flushed completions (READ sink
 * registrations are recovered, never left valid); when none is busy and the
 * disconnect was issued or seen, the worker closes the connection: QP and
 * CM id are destroyed under the listener's CM lock, then everything else.
 * On server shutdown new calls are ignored, in-flight replies finish, then
 * the connection is disconnected. Why a connection was dropped is a debug
 * line of the log hook (<rrr/log.h>: RRR_DEBUG=1 in the environment, or a
 * handler at RRR_LOG_DEBUG); the counters say how often.
 */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/probes.h"
#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

#define RDMA_POLL_BATCH 32

struct rrr__svc_rdma_listener {
	struct rrr__svc_listener base; /* fd: the CM's */
	struct rrr_svc *svc;
	struct rrr_device *dev;
	struct rrr_device_attr attr;
	struct rrr_pd *pd;
	struct rrr_cm *cm;
	struct rrr_cm_id *lid;
	pthread_mutex_t lock; /* every CM call (the accept thread and workers) */
};

struct cm_msg {
	enum rrr_cm_event_type type;
	int status;
};

/* ------------------------------------------------------------------ contexts */

/* Most contexts one connection held at once, process-wide (tests). */
static uint32_t ctx_peak;

uint32_t rrr__svc_rdma_ctx_peak(void)
{
	return __atomic_load_n(&ctx_peak, __ATOMIC_RELAXED);
}

struct svc_rdma_ctx *rrr__svc_rdma_ctx_get(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *ctx = rc->ctx_free;

	if (ctx) {
		rc->ctx_free = ctx->next;
	} else {
		if (rc->nctx >= rc->max_ctx)
			return NULL;
		ctx = calloc(1, sizeof(*ctx));
		if (!ctx)
			return NULL;
		ctx->hdr = calloc(1, sizeof(*ctx->hdr));
		if (!ctx->hdr) {
			free(ctx);
			return NULL;
		}
		if (rc->sink_remote_write) {
			ctx->sink = calloc(1, sizeof(*ctx->sink));
			if (!ctx->sink) {
				free(ctx->hdr);
				free(ctx);
				return NULL;
			}
		}
		ctx->rc = rc;
		ctx->sendbuf =
		    rc->send_region + (size_t)rc->nctx * (SVC_RDMA_HDR_AREA + rc->inline_send);
		ctx->all_next = rc->ctx_all;
		rc->ctx_all = ctx;
		rc->nctx++;
	}
	ctx->next = NULL;
	ctx->recv_idx = UINT32_MAX;
	ctx->busy = true;
	ctx->chain = NULL;
	ctx->sq_need = ctx->sq_held = 0;
	ctx->has_inv = false;
	memset(&ctx->req, 0, sizeof(ctx->req));
	rc->busy++;
	for (uint32_t p = __atomic_load_n(&ctx_peak, __ATOMIC_RELAXED); rc->busy > p;)
		if (__atomic_compare_exchange_n(&ctx_peak, &p, rc->busy, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
	return ctx;
}

static void ctx_free(struct svc_rdma_ctx *ctx)
{
	rrr__svc_rdma_sink_recover(ctx);
	rrr__svc_rdma_zc_end(ctx);
	rrr__svc_rdma_place_end(ctx);
	rrr__svc_req_end(&ctx->req);
	free(ctx->zc_io);
	free(ctx->place);
	rrr__svc_rdma_buf_free(&ctx->arg);
	rrr__svc_rdma_buf_free(&ctx->res);
	rrr__svc_rdma_buf_free(&ctx->pay);
	free(ctx->sink);
	free(ctx->hdr);
	free(ctx);
}

/* ------------------------------------------------------------------ completions */

static void maybe_finish(struct svc_rdma_conn *rc)
{
	if (rc->base.closing)
		return;
	if (rc->shutting && rc->busy == 0 && !rc->disconnecting)
		rrr__svc_rdma_fail(rc, NULL);
	if ((rc->disconnecting || rc->disconnected) && rc->busy == 0) {
		pthread_mutex_lock(&rc->l->lock);
		if (!rc->detached)
			rrr_cm_id_set_ctx(rc->id, NULL);
		rc->detached = true;
		pthread_mutex_unlock(&rc->l->lock);
		rrr__svc_conn_close(&rc->base);
	}
}

void rrr__svc_rdma_ctx_put(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (!ctx->busy)
		return;
	rrr__svc_req_after_reply(&ctx->req, false); /* ended before its reply */
	if (ctx->recv_idx != UINT32_MAX) { /* a call that ended before its handler */
		rrr__svc_rdma_repost(rc, ctx->recv_idx, false);
		ctx->recv_idx = UINT32_MAX;
	}
	rrr__svc_rdma_sink_recover(ctx);
	rrr__svc_rdma_zc_end(ctx); /* before the release callback */
	rrr__svc_rdma_place_end(ctx);
	rrr__svc_req_end(&ctx->req);
	rrr__svc_rdma_pull_end(ctx);
	rc->push_inflight -= ctx->push_bytes;
	ctx->push_bytes = 0;
	rrr__svc_rdma_sink_give(ctx);
	ctx->busy = false;
	ctx->next = rc->ctx_free;
	rc->ctx_free = ctx;
	rc->busy--;
}

void rrr__svc_rdma_fail(struct svc_rdma_conn *rc, const char *why)
{
	struct svc_rdma_ctx *ctx;

	RRR_PROBE2(svc_conn_failed, &rc->base, why);
	if (why)
		rrr__log_debug("svc_rdma: %s (%s)", why, rrr_last_error() ? rrr_last_error() : "");
	rc->broken = true;
	/* calls that waited for the pull window end here */
	while ((ctx = rc->pull_head)) {
		rc->pull_head = ctx->pull_next;
		rrr__svc_rdma_ctx_put(ctx);
	}
	rc->pull_tail = NULL;
	/* chains that never got posted end here */
	while ((ctx = rc->sq_wait_head)) {
		rc->sq_wait_head = ctx->next;
		rrr__svc_rdma_ctx_put(ctx);
	}
	rc->sq_wait_tail = NULL;
	if (!rc->disconnecting) {
		rc->disconnecting = true;
		pthread_mutex_lock(&rc->l->lock);
		if (!rc->disconnected)
			rrr_cm_disconnect(rc->id);
		pthread_mutex_unlock(&rc->l->lock);
	}
}

static void handle_wc(struct svc_rdma_conn *rc, const struct rrr_wc *wc)
{
	struct svc_rdma_ctx *ctx;
	unsigned phase;

	if (wc->wr_id & SVC_RDMA_RECV_TAG) {
		uint32_t idx = (uint32_t)(wc->wr_id & 0xffffffffu);

		if (wc->status != RRR_WC_SUCCESS) {
			if (wc->status != RRR_WC_WR_FLUSH_ERR)
				rrr__svc_rdma_fail(rc, "receive failed");
			else
				rc->broken = true;
			return;
		}
		if (idx >= rc->nrecv) {
			rrr__svc_rdma_fail(rc, "bad receive completion");
			return;
		}
		if (wc->wc_flags & RRR_WC_WITH_INV) {
			/* We never advertise that we accept Send With
			 * Invalidate (RFC 8797): a client that uses it
			 * anyway has invalidated one of our handles. */
			rrr__svc_rdma_fail(rc, "client sent Send With Invalidate, which the server "
					  "does not accept");
			return;
		}
		rrr__svc_rdma_recv(rc, idx, wc->byte_len, false);
		return;
	}
	ctx = (struct svc_rdma_ctx *)(uintptr_t)(wc->wr_id & ~(uint64_t)7);
	phase = (unsigned)(wc->wr_id & 7);
	if (!ctx)
		return;
	rc->sq_free += ctx->sq_held;
	ctx->sq_held = 0;
	if (wc->status != RRR_WC_SUCCESS) {
		rrr__log_debug("svc_rdma: wc phase %u status %s vendor %u", phase,
			       rrr_wc_status_str(wc->status), wc->vendor_err);
		rrr__svc_rdma_fail(rc, "send-side work request failed");
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	switch (phase) {
	case PH_REG:
		if (rc->broken) {
			rrr__svc_rdma_ctx_put(ctx);
			break;
		}
		ctx->chain = ctx->read_chain;
		ctx->sq_need = ctx->read_need;
		ctx->phase = PH_READ;
		rrr__svc_rdma_post_chain(ctx);
		break;
	case PH_READ:
		rrr__svc_rdma_pull_end(ctx);
		if (rc->broken) {
			rrr__svc_rdma_ctx_put(ctx);
			break;
		}
		rrr__svc_rdma_pull_kick(rc);
		if (rrr__svc_rdma_read_done(ctx)) {
			rrr__svc_rdma_post_chain(ctx);
			break;
		}
		rrr__svc_rdma_dispatch(ctx, ctx->arg.p + ctx->arg_off, ctx->arg_len, UINT32_MAX);
		break;
	case PH_INV:
		rrr__svc_rdma_sink_inv_done(ctx);
		if (rc->broken) {
			rrr__svc_rdma_ctx_put(ctx);
			break;
		}
		rrr__svc_rdma_dispatch(ctx, ctx->arg.p + ctx->arg_off, ctx->arg_len, UINT32_MAX);
		break;
	case PH_SEND:
		rrr__svc_rdma_zc_sent(ctx); /* its LOCAL_INVs completed too */
		rrr__svc_rdma_ctx_put(ctx);
		break;
	default:
		rrr__svc_rdma_ctx_put(ctx);
		break;
	}
	rrr__svc_rdma_sq_kick(rc);
}

/* Whether @wc may bring a call to its handler: a receive, or the end of a
 * pull (READ or LOCAL_INV of the sink). */
static void conn_poll(struct svc_rdma_conn *rc)
{
	struct rrr_wc wc[RDMA_POLL_BATCH];
	bool armed = false;
	int n, i;

	/* Poll; after a short batch (the ring is drained) arm and poll once
	 * more, which also returns what handling the batch produced (the
	 * reply's Send completion); stop when a poll after an arm finds
	 * nothing. Arming right after a short batch instead of after an empty
	 * poll saves one progress step (system calls on the soft provider). */
	for (;;) {
		n = rrr_cq_poll(rc->cq, wc, RDMA_POLL_BATCH);
		if (n < 0) {
			rrr__svc_rdma_fail(rc, "completion queue failed");
			break;
		}
		rc->db_defer = true;
		for (i = 0; i < n; i++)
			handle_wc(rc, &wc[i]);
		rc->db_defer = false;
		rrr__svc_rdma_db_flush(rc);
		if (n == RDMA_POLL_BATCH)
			continue;
		if (n == 0 && armed)
			break;
		rrr_cq_arm(rc->cq);
		armed = true;
	}
	/* calls that waited for a context or the windows */
	rc->db_defer = true;
	rrr__svc_rdma_recv_resume(rc);
	rc->db_defer = false;
	rrr__svc_rdma_db_flush(rc);
	rrr__svc_rdma_repost(rc, UINT32_MAX, true);
	maybe_finish(rc);
}

/* ------------------------------------------------------------------ conn ops */

static void rdma_on_event(struct rrr__svc_conn *c, uint32_t events)
{
	struct svc_rdma_conn *rc = container_of(c, struct svc_rdma_conn, base);

	(void)events;
	if (c->closing)
		return;
	rrr_cq_ack_event(rc->cq);
	conn_poll(rc);
}

void rrr__svc_rdma_set_gauges(struct svc_rdma_conn *rc)
{
	struct rrr_xprt_stats *st = rc->base.st;

	if (rc->gauges_set)
		return;
	rc->gauges_set = true;
	RRR__STAT_SET(st, credits, rc->max_requests);
	RRR__STAT_SET(st, max_credits, rc->max_requests);
	RRR__STAT_SET(st, inline_send, rc->inline_send);
	RRR__STAT_SET(st, inline_recv, rc->recv_size);
}

static void rdma_on_msg(struct rrr__svc_conn *c, const void *msg)
{
	struct svc_rdma_conn *rc = container_of(c, struct svc_rdma_conn, base);
	const struct cm_msg *m = msg;

	switch (m->type) {
	case RRR_CM_EVENT_ESTABLISHED:
		rc->established = true;
		rrr__svc_rdma_set_gauges(rc);
		break;
	case RRR_CM_EVENT_DISCONNECTED:
	case RRR_CM_EVENT_DEVICE_REMOVAL:
	case RRR_CM_EVENT_UNREACHABLE:
	case RRR_CM_EVENT_REJECTED:
		rc->disconnected = true;
		rrr__svc_rdma_fail(rc, NULL);
		break;
	default:
		break;
	}
	conn_poll(rc);
}

void rrr__svc_rdma_handler_done(void *arg)
{
	struct svc_rdma_ctx *ctx = arg;
	struct svc_rdma_conn *rc = ctx->rc;

	if (rc->base.closing) {
		/* not polled any more: the request ends here */
		rrr__svc_rdma_ctx_put(ctx);
		return;
	}
	rc->db_defer = true;
	rrr__svc_rdma_dispatch_done(ctx);
	rc->db_defer = false;
	rrr__svc_rdma_db_flush(rc);
	conn_poll(rc);
}

static void rdma_shutdown(struct rrr__svc_conn *c)
{
	struct svc_rdma_conn *rc = container_of(c, struct svc_rdma_conn, base);

	rc->shutting = true;
	maybe_finish(rc);
}

static void conn_free(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *ctx, *n;

	for (ctx = rc->ctx_all; ctx; ctx = n) {
		n = ctx->all_next;
		ctx_free(ctx);
	}
	while (rc->sink_pool && rc->nsink_pool)
		rrr__svc_rdma_buf_free(&rc->sink_pool[--rc->nsink_pool]);
	free(rc->sink_pool);
	if (rc->pool)
		rrr_mrpool_destroy(rc->pool);
	if (rc->recv_mr)
		rrr_mr_dereg(rc->recv_mr);
	if (rc->send_mr)
		rrr_mr_dereg(rc->send_mr);
	if (rc->cq)
		rrr_cq_destroy(rc->cq);
	if (rc->pd)
		rrr_pd_free(rc->pd);
	free(rc->recv_region);
	free(rc->send_region);
	free(rc->repost);
	free(rc->scratch);
	free(rc->defer_idx);
	free(rc->defer_len);
	free(rc);
}

static void rdma_destroy(struct rrr__svc_conn *c)
{
	struct svc_rdma_conn *rc = container_of(c, struct svc_rdma_conn, base);

	pthread_mutex_lock(&rc->l->lock);
	if (rc->id)
		rrr_cm_id_set_ctx(rc->id, NULL);
	if (rc->qp)
		rrr_qp_destroy(rc->qp);
	rc->qp = NULL;
	if (rc->id)
		rrr_cm_id_destroy(rc->id);
	rc->id = NULL;
	pthread_mutex_unlock(&rc->l->lock);
	conn_free(rc);
}

static const struct rrr__svc_conn_ops rdma_ops = {
    .name = "rdma",
    .on_event = rdma_on_event,
    .on_msg = rdma_on_msg,
    .shutdown = rdma_shutdown,
    .destroy = rdma_destroy,
};

/* ------------------------------------------------------------------ accept */

/* Called with l->lock held. Returns 0 when the connection was accepted. */
static int conn_accept(struct rrr__svc_rdma_listener *l, const struct rrr_cm_event *ev)
{
	const struct rrr_svc_opts *o = rrr__svc_opts(l->svc);
	struct rrr_rdma_cm_pd peer, mine;
	struct rrr_qp_init_attr qa;
	struct rrr_conn_param cp;
	struct svc_rdma_conn *rc;
	uint8_t pd[RRR_RDMA_PD_LEN];
	uint32_t i, ord, ird;
	size_t sz;
	void *p;
	int err = -ENOMEM;

	rrr_rdma_cm_pd_decode(ev->private_data, ev->private_data_len, &peer);
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->l = l;
	rc->id = ev->id;
	rc->base.ops = &rdma_ops;
	rc->base.fd = -1;
	rc->base.events = EPOLLIN;
	rrr_cm_id_peer_addr(ev->id, &rc->base.peer);
	err = rrr__svc_admit(rrr__svc_limits(l->svc), &rc->base, "RDMA", RRR_SVC_CONN_FDS);
	if (err)
		goto err_free;
	rc->recv_size = svc_rdma_min_u32(o->inline_recv, peer.send_size);
	rc->inline_send = svc_rdma_min_u32(o->inline_send, peer.recv_size);
	rc->remote_inv = peer.remote_inv && !o->no_remote_inv && l->attr.send_with_inv;
	rc->max_requests = o->max_requests;
	rc->max_payload = o->max_payload;
	rc->max_record = o->max_payload + RRR__SVC_REPLY_SLACK;
	rc->batch = rc->max_requests / 4;
	if (rc->batch < 1)
		rc->batch = 1;
	if (rc->batch > SVC_RDMA_BATCH_MAX)
		rc->batch = SVC_RDMA_BATCH_MAX;
	rc->nrecv = rc->max_requests + rc->batch;
	rc->max_ctx = rc->max_requests + SVC_RDMA_CTX_SLACK;
	/* the send queue the credits need (a chain that does not fit waits
	 * its turn), never less than the longest chain: a software provider
	 * writes its whole ring when the QP is made, and an idle connection
	 * should not hold a ring of the device's maximum */
	{
		uint32_t max_wr = l->attr.max_qp_wr ? l->attr.max_qp_wr : 1024;

		rc->sq_depth = rc->max_ctx * SVC_RDMA_SQ_PER_CTX;
		/* the longest chain: a context's WRs, then the LOCAL_INVs of a
		 * zero-copy reply payload (svc_rdma_zc.c) */
		if (rc->sq_depth < SVC_RDMA_MAX_WRS + RRR_REG_MAX_SEGS)
			rc->sq_depth = SVC_RDMA_MAX_WRS + RRR_REG_MAX_SEGS;
		if (rc->sq_depth > max_wr)
			rc->sq_depth = max_wr;
	}
	if (rc->sq_depth < SVC_RDMA_MAX_WRS) {
		err = rrr__set_error(-EINVAL, "device send queue (%u WRs) is too small",
				     rc->sq_depth);
		goto err_free;
	}
	rc->sq_free = rc->sq_depth;
	rc->sink_remote_write = l->attr.read_sink_remote_write;
	rc->lim.max_read_segs = svc_rdma_min_u32(o->max_segs, RRR_RDMA_MAX_READ_SEGS);
	rc->lim.max_write_chunks = SVC_RDMA_MAX_WRITE_CHUNKS;
	rc->lim.max_chunk_segs = svc_rdma_min_u32(o->max_segs, RRR_RDMA_MAX_CHUNK_SEGS);
	rc->lim.is_reply = false;
	rc->lim.allow_zero_len = false;

	/* A PD per connection (as Linux svcrdma does): a READ sink registered
	 * with remote write rights must be reachable from this client's QP
	 * only, never from another connection that guessed its handle. */
	err = rrr_pd_alloc(l->dev, &rc->pd);
	if (err)
		goto err_free;
	err = -ENOMEM;
	rc->repost = calloc(rc->nrecv, sizeof(*rc->repost));
	rc->scratch = calloc(1, sizeof(*rc->scratch));
	rc->defer_idx = calloc(rc->nrecv, sizeof(*rc->defer_idx));
	rc->defer_len = calloc(rc->nrecv, sizeof(*rc->defer_len));
	rc->sink_pool = calloc(rc->max_ctx, sizeof(*rc->sink_pool));
	rc->pull_window = SVC_RDMA_PULL_RECORDS * (uint64_t)o->max_payload;
	rc->push_window = SVC_RDMA_PUSH_RECORDS * (uint64_t)o->max_payload;
	sz = (size_t)rc->nrecv * rc->recv_size;
	if (!rc->repost || !rc->scratch || !rc->defer_idx || !rc->defer_len || !rc->sink_pool ||
	    posix_memalign(&p, 4096, sz))
		goto err_free;
	rc->recv_region = p;
	sz = (size_t)rc->max_ctx * (SVC_RDMA_HDR_AREA + rc->inline_send);
	if (posix_memalign(&p, 4096, sz))
		goto err_free;
	rc->send_region = p;
	err = rrr_mr_reg(rc->pd, rc->recv_region, (size_t)rc->nrecv * rc->recv_size,
			 RRR_ACCESS_LOCAL_WRITE, &rc->recv_mr);
	if (!err)
		err = rrr_mr_reg(rc->pd, rc->send_region, sz, RRR_ACCESS_LOCAL_WRITE, &rc->send_mr);
	if (!err)
		err = rrr_cq_create(l->dev, rc->nrecv + rc->sq_depth, &rc->cq);
	if (err)
		goto err_free;
	{ /* READ sinks (when the device needs it), zero-copy reply payloads */
		struct rrr_mrpool_opts po = {.max_mrs = rc->max_ctx * 4, .pages_per_mr = 0};

		err = rrr_mrpool_create(rc->pd, &po, &rc->pool);
		if (err)
			goto err_free;
	}
	ord = ev->ird ? svc_rdma_min_u32(ev->ird, 16) : 16;
	ird = ev->ord ? svc_rdma_min_u32(ev->ord, 16) : 0;
	memset(&qa, 0, sizeof(qa));
	qa.pd = rc->pd;
	qa.send_cq = rc->cq;
	qa.recv_cq = rc->cq;
	qa.max_send_wr = rc->sq_depth;
	qa.max_recv_wr = rc->nrecv;
	qa.max_send_sge = 2;
	qa.max_recv_sge = 1;
	qa.max_rd_atomic = ord;
	qa.ctx = rc;
	err = rrr_qp_create(ev->id, &qa, &rc->qp);
	if (err)
		goto err_free;
	for (i = 0; i < rc->nrecv; i++)
		rc->repost[i] = i;
	err = rrr__svc_rdma_post_recvs(rc, rc->repost, rc->nrecv);
	if (err)
		goto err_qp;
	rc->base.fd = rrr_cq_fd(rc->cq);
	rrr_cq_arm(rc->cq);

	memset(&mine, 0, sizeof(mine));
	mine.remote_inv = false; /* the server never receives Send With Invalidate */
	mine.send_size = o->inline_send;
	mine.recv_size = o->inline_recv;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = (uint32_t)rrr_rdma_cm_pd_encode(pd, &mine);
	cp.ord = ord;
	cp.ird = ird;
	rrr_cm_id_set_ctx(ev->id, rc);
	err = rrr_cm_accept(ev->id, &cp);
	if (err)
		goto err_ctx;
	err = rrr__svc_adopt(l->svc, &rc->base);
	if (err) {
		rrr_cm_disconnect(ev->id);
		goto err_ctx;
	}
	return 0;

err_ctx:
	rrr_cm_id_set_ctx(ev->id, NULL);
err_qp:
	rrr_qp_destroy(rc->qp);
err_free:
	rrr__svc_unadmit(rrr__svc_limits(l->svc), &rc->base);
	conn_free(rc);
	return err;
}

/* The CM fd is readable: handle pending CM events (accept thread). */
static void rdma_listener_ready(struct rrr__svc_listener *base)
{
	struct rrr__svc_rdma_listener *l = container_of(base, struct rrr__svc_rdma_listener, base);
	int i;

	for (i = 0; i < 64; i++) {
		struct rrr_cm_event ev;
		struct rrr__svc_conn *c = NULL;
		int err;

		pthread_mutex_lock(&l->lock);
		err = rrr_cm_get_event(l->cm, &ev);
		if (err) {
			pthread_mutex_unlock(&l->lock);
			return;
		}
		if (ev.type == RRR_CM_EVENT_CONNECT_REQUEST) {
			err = rrr__svc_stopping(l->svc) ? -ESHUTDOWN : conn_accept(l, &ev);
			if (err) {
				if (err != -ESHUTDOWN) {
					struct sockaddr_storage ss;

					memset(&ss, 0, sizeof(ss));
					rrr_cm_id_peer_addr(ev.id, &ss);
					rrr__svc_accept_failed(rrr__svc_limits(l->svc), &ss, "RDMA",
							       err);
				}
				rrr_cm_reject(ev.id, NULL, 0);
				rrr_cm_id_destroy(ev.id);
			}
			pthread_mutex_unlock(&l->lock);
			continue;
		}
		if (ev.id && ev.id != l->lid) {
			c = rrr_cm_id_ctx(ev.id);
			if (c)
				rrr__svc_conn_get(c);
		}
		pthread_mutex_unlock(&l->lock);
		if (c) {
			struct cm_msg m = {.type = ev.type, .status = ev.status};

			if (rrr__svc_post_msg(c, &m, sizeof(m)))
				rrr__svc_conn_put(c);
		}
	}
}

/* ------------------------------------------------------------------ listener */

static int rdma_listener_listen(struct rrr_svc *svc, const char *host, const char *port,
				uint16_t *bound_port, struct rrr__svc_listener **out)
{
	const struct rrr_svc_opts *o = rrr__svc_opts(svc);
	struct rrr__svc_rdma_listener *l;
	struct sockaddr_storage ss;
	socklen_t sl;
	int err;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->svc = svc;
	pthread_mutex_init(&l->lock, NULL);
	err = rrr_device_open(o->provider, o->provider_opts, &l->dev);
	if (err)
		goto err_free;
	err = rrr_device_query(l->dev, &l->attr);
	if (!err)
		err = rrr_pd_alloc(l->dev, &l->pd);
	if (err)
		goto err_dev;
	err = rrr_cm_create(l->dev, &l->cm);
	if (err)
		goto err_pd;
	{
		struct rrr_cm_limits lim = {.setup_timeout_ms = o->setup_timeout_ms,
					    .max_setup = o->max_setup,
					    .admit = o->admit,
					    .admit_ctx = o->admit_ctx};

		err = rrr_cm_set_limits(l->cm, &lim);
		if (err && err != -EOPNOTSUPP)
			goto err_cm;
		err = 0; /* verbs: the kernel's rdma_cm handles set-up */
	}
	err = rrr_cm_id_create(l->cm, NULL, &l->lid);
	if (err)
		goto err_cm;
	err = rrr_addr_parse(host ? host : "0.0.0.0", port, &ss, &sl);
	if (!err)
		err = rrr_cm_listen(l->lid, (struct sockaddr *)&ss, sl, 128);
	if (err)
		goto err_id;
	if (bound_port) {
		struct sockaddr_storage la;

		*bound_port = 0;
		if (!rrr_cm_id_local_addr(l->lid, &la)) {
			if (la.ss_family == AF_INET6)
				*bound_port = ntohs(((struct sockaddr_in6 *)&la)->sin6_port);
			else
				*bound_port = ntohs(((struct sockaddr_in *)&la)->sin_port);
		}
	}
	l->base.fd = rrr_cm_fd(l->cm);
	*out = &l->base;
	return 0;

err_id:
	rrr_cm_id_destroy(l->lid);
err_cm:
	rrr_cm_destroy(l->cm);
err_pd:
	rrr_pd_free(l->pd);
err_dev:
	rrr_device_close(l->dev);
err_free:
	pthread_mutex_destroy(&l->lock);
	free(l);
	if (!rrr_last_error())
		rrr__set_error(err, "cannot listen for RPC-over-RDMA on %s:%s", host ? host : "*",
			       port);
	return err;
}

/* The CM's set-up counters: 0, or -EOPNOTSUPP on verbs (rdma_cm's own). */
static int rdma_listener_limit_stats(struct rrr__svc_listener *base,
				     struct rrr_cm_limit_stats *st)
{
	struct rrr__svc_rdma_listener *l = container_of(base, struct rrr__svc_rdma_listener, base);

	return rrr_cm_limit_stats(l->cm, st);
}

static void rdma_listener_destroy(struct rrr__svc_listener *base)
{
	struct rrr__svc_rdma_listener *l = container_of(base, struct rrr__svc_rdma_listener, base);

	/* every connection was destroyed by its worker before this */
	rrr_cm_id_destroy(l->lid);
	rrr_cm_destroy(l->cm);
	rrr_pd_free(l->pd);
	rrr_device_close(l->dev);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* No stop op: CM events keep flowing (disconnects of the connections the
 * workers close) until every worker has exited. */
const struct rrr__svc_listener_ops rrr__svc_rdma_listener_ops = {
    .name = "RDMA",
    .listen = rdma_listener_listen,
    .ready = rdma_listener_ready,
    .limit_stats = rdma_listener_limit_stats,
    .destroy = rdma_listener_destroy,
};
