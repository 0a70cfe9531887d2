/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma.c - RPC-over-RDMA version 1 (RFC 8166) for the server:
 * listening and accepting (RFC 8797 private data), receive buffers and
 * credits, transport header validation, and the reply path (inline, write
 * chunks, reply chunk, Send With Invalidate), like Linux svcrdma.
 *
 * Connection set-up (accept thread). A CONNECT_REQUEST carries the
 * client's RFC 8797 private data (1024/1024 and no remote invalidation when
 * absent). The server's receive buffers are min(local inline_recv, peer's
 * send size) bytes; its inline replies are at most min(local inline_send,
 * peer's receive size). Remote invalidation is used only when the client's
 * flag says it accepts it, the options allow it and the device can. Each
 * connection gets its own PD (so no other client can reach its READ sinks,
 * which iWARP registers with remote write rights), CQ (its fd goes into the
 * owning worker's epoll), QP, one registered region of receive buffers and one of send buffers;
 * max_requests + batch receives are posted before the accept, and every
 * reply grants max_requests credits.
 *
 * Receive path (worker thread). A receive is first checked as a whole by
 * rrr_rdma_hdr_decode() into the connection's scratch header, against this
 * server's limits (segments per chunk, read segments, write chunks); only
 * then is a request context (from a pool bounded by the credits) taken,
 * the header swapped into it, and the read-chunk plan checked
 * (svc_rdma_rw.c) before any buffer is allocated or RDMA operation posted. Failures answer
 * RDMA_ERROR: ERR_VERS for a version other than 1, ERR_CHUNK for anything else malformed; a message
 * too short to carry a header is dropped. An inline call (RDMA_MSG, no read list) is dispatched
 * straight from the receive buffer; a call with read chunks is rebuilt in a request buffer while
 * its chunks are pulled with RDMA READ (svc_rdma_rw.c), then dispatched. The receive buffer goes
 * back to the repost list as soon as its bytes are no longer needed, and receives are reposted in
 * batches.
 *
 * Reply path. The handler's results are encoded into the send buffer (or,
 * when the client offered a reply chunk, into a larger request buffer);
 * DDP-eligible payloads are diverted into write chunks by the DDP hook. The
 * reply goes inline (RDMA_MSG) when the transport header plus message fit
 * the negotiated inline size, else through the reply chunk (RDMA_NOMSG);
 * when neither is possible the reply becomes SYSTEM_ERR. RDMA WRITEs for
 * the write and reply chunks are chained before the SEND, and only the SEND
 * is signaled; its completion ends the request. Send With Invalidate names
 * the single handle a call carried, never on error replies. A chain that
 * does not fit the send queue waits its turn (counted as a credit stall).
 * Chains that handling one poll batch produces are posted together, up to a
 * quarter of the credit window per post (doorbell batching, see
 * rrr__doorbell_max()); queued READ chains (a pull the batch started) are
 * posted before the next handler runs, so the client sends that call's
 * data while this one's handler works instead of after it.
 *
 * Contexts. A connection has at most max_requests + SVC_RDMA_CTX_SLACK (4)
 * request contexts (each may hold up to max_payload + 64 KiB of registered
 * buffers), not twice the credits: a call that arrives while every context
 * is busy - a client's next call can overtake the Send completion of the
 * reply that freed its credit - waits in a ring with its receive buffer
 * held (counted as a credit stall) and runs when a context is free. So a
 * client can make the server hold no more than credits + 4 contexts, and no
 * more waiting calls than receives posted (max_requests + batch); a client
 * that sends beyond those breaks its own connection.
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
 * Push window. The same bound on the way out: while the write- and
 * reply-chunk bytes of replies posted and not yet completed reach 2 x
 * max_payload, a new call does not start (it waits in the deferred ring,
 * in arrival order, its receive buffer held, counted in push_waits), so
 * at most one more reply than the window is read ahead of the wire. A
 * READ's data is then read from the file just before the provider
 * checksums and sends it, while it is still in the CPU's caches, and the
 * few contexts in use keep reusing their payload buffers; without the
 * window a batch of 32 1 MiB READs would read 32 MiB ahead and the provider
 * would take it back from memory. The window counts what the
 * reply actually carries, not what the client offered, and only a
 * completion retires it: a client that stops reading its socket makes the
 * server hold that much, not a reply buffer per credit.
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

#define RECV_TAG	(1ull << 63)
#define RDMA_BATCH_MAX	16u
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

static void conn_poll(struct svc_rdma_conn *rc);
static void set_gauges(struct svc_rdma_conn *rc);
static void ctx_put(struct svc_rdma_ctx *ctx);
static bool pull_fits(const struct svc_rdma_conn *rc, uint64_t need);
static void pull_end(struct svc_rdma_ctx *ctx);
static bool push_open(const struct svc_rdma_conn *rc);
static void pull_kick(struct svc_rdma_conn *rc);
static void pull_start(struct svc_rdma_ctx *ctx, uint32_t idx, uint32_t len);
/* Post @ctx->chain (sq_need WRs) now or when the send queue has room. */
static void svc_rdma_post_chain(struct svc_rdma_ctx *ctx);
/* Protocol violation or failure: disconnect the connection. */
static void svc_rdma_fail(struct svc_rdma_conn *rc, const char *why);

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------------ contexts */

/* Most contexts one connection held at once, process-wide (tests). */
static uint32_t ctx_peak;

uint32_t rrr__svc_rdma_ctx_peak(void)
{
	return __atomic_load_n(&ctx_peak, __ATOMIC_RELAXED);
}

/* Most reply-chunk bytes one connection had in flight at once (tests). */
static uint64_t push_peak;

uint64_t rrr__svc_rdma_push_peak(void)
{
	return __atomic_load_n(&push_peak, __ATOMIC_RELAXED);
}

static struct svc_rdma_ctx *ctx_get(struct svc_rdma_conn *rc)
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
	rrr__svc_req_end(&ctx->req);
	free(ctx->zc_io);
	rrr__svc_rdma_buf_free(&ctx->arg);
	rrr__svc_rdma_buf_free(&ctx->res);
	rrr__svc_rdma_buf_free(&ctx->pay);
	free(ctx->sink);
	free(ctx->hdr);
	free(ctx);
}

/* ------------------------------------------------------------------ receives */

static int post_recvs(struct svc_rdma_conn *rc, const uint32_t *idx, uint32_t n)
{
	struct rrr_recv_wr wr[RDMA_BATCH_MAX * 8];
	struct rrr_sge sge[RDMA_BATCH_MAX * 8];
	struct rrr_recv_wr *bad;
	uint32_t i, done = 0;

	while (done < n) {
		uint32_t k = min_u32(n - done, (uint32_t)(sizeof(wr) / sizeof(wr[0])));

		for (i = 0; i < k; i++) {
			uint32_t b = idx[done + i];

			sge[i].addr =
			    (uint64_t)(uintptr_t)(rc->recv_region + (size_t)b * rc->recv_size);
			sge[i].length = rc->recv_size;
			sge[i].lkey = rrr_mr_lkey(rc->recv_mr);
			wr[i].wr_id = RECV_TAG | b;
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

static void repost(struct svc_rdma_conn *rc, uint32_t idx, bool flush)
{
	if (idx != UINT32_MAX)
		rc->repost[rc->nrepost++] = idx;
	if (rc->broken || rc->disconnecting) {
		rc->nrepost = 0;
		return;
	}
	if (rc->nrepost && (flush || rc->nrepost >= rc->batch)) {
		if (post_recvs(rc, rc->repost, rc->nrepost))
			svc_rdma_fail(rc, "cannot post receives");
		rc->nrepost = 0;
	}
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
			ctx_put(ctx);
		}
	}
	if (failed)
		svc_rdma_fail(rc, "cannot post send work requests");
}

static void db_flush(struct svc_rdma_conn *rc);

/* Take send-queue room for @ctx's chain and post it, or queue it for the
 * end of the poll batch being handled (db_flush); a quarter of the credit
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
			db_flush(rc);
		return;
	}
	post_batch(rc, ctx);
}

/* Post what the poll batch produced (replies, READ chains), in order. */
static void db_flush(struct svc_rdma_conn *rc)
{
	struct svc_rdma_ctx *head = rc->db_head;

	rc->db_head = rc->db_tail = NULL;
	rc->db_n = rc->db_pulls = 0;
	if (!head)
		return;
	if (rc->broken) {
		/* the QP is in error: nothing more is posted */
		while (head) {
			struct svc_rdma_ctx *next = head->next;

			head->next = NULL;
			rc->sq_free += head->sq_held;
			head->sq_held = head->sq_need = 0;
			ctx_put(head);
			head = next;
		}
		return;
	}
	post_batch(rc, head);
}

static void svc_rdma_post_chain(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (rc->broken) {
		ctx_put(ctx);
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

static void sq_kick(struct svc_rdma_conn *rc)
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

static void send_rdma_error(struct svc_rdma_ctx *ctx, uint32_t xid, uint32_t err)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_send_wr *wr = &ctx->wrs[0];
	struct rrr_sge *sge = &ctx->sges[SVC_RDMA_MAX_WRS];
	struct rrr_xdr x;

	rrr_xdr_init(&x, ctx->sendbuf, SVC_RDMA_HDR_AREA, RRR_XDR_ENCODE);
	if (rrr_rdma_err_encode(&x, xid, rc->max_requests, err)) {
		ctx_put(ctx);
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
	svc_rdma_post_chain(ctx);
}

/* Re-encode @res as a SYSTEM_ERR reply for the call. */
static void reply_syserr(struct svc_rdma_ctx *ctx, struct rrr_xdr *res)
{
	rrr_xdr_init(res, res->buf, res->len, RRR_XDR_ENCODE);
	rrr_rpc_encode_accepted(res, ctx->hdr->xid, RRR_RPC_SYSTEM_ERR, 0, 0);
	rrr__svc_rdma_ddp_reset(ctx);
}

static void svc_rdma_reply(struct svc_rdma_ctx *ctx, struct rrr_xdr *res, enum rrr__svc_verdict v)
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
		ctx_put(ctx);
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
	svc_rdma_post_chain(ctx);
	return;

syserr:
	if (tried_err) {
		/* even a bare SYSTEM_ERR does not fit: nothing can be said */
		ctx_put(ctx);
		return;
	}
	tried_err = true;
	v = RRR__SVC_REPLY_ERR;
	reply_syserr(ctx, res);
	goto again;
}

/* ------------------------------------------------------------------ dispatch */

static uint32_t req_max_payload(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (ctx->hdr->nwrite)
		return min_u32(ctx->hdr->write[0].total, rc->max_payload);
	if (ctx->hdr->has_reply)
		return min_u32(ctx->hdr->reply.total, rc->max_payload);
	/* the whole reply must go inline: leave room for headers */
	return rc->inline_send > 1024 ? rc->inline_send - 1024 : 0;
}

static void svc_rdma_dispatch(struct svc_rdma_ctx *ctx, uint8_t *buf, size_t len)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_xdr args, res;
	enum rrr__svc_verdict v;

	/* Read Requests queued in this poll batch go out before the handler
	 * runs: the client sends the next call's data while this one is
	 * written to the file, instead of idling behind the pwrite (replies
	 * keep waiting for the batch's doorbell) */
	if (rc->db_pulls)
		db_flush(rc);
	memset(&ctx->req, 0, sizeof(ctx->req));
	ctx->req.svc = rc->base.svc;
	ctx->req.conn = &rc->base;
	ctx->req.max_payload = req_max_payload(ctx);
	if (ctx->hdr->nwrite) {
		ctx->req.alloc = rrr__svc_rdma_req_alloc;
		ctx->req.alloc_ctx = ctx;
		ctx->req.zc = rrr__svc_rdma_zc;
	}
	rrr_xdr_init(&args, buf, len, RRR_XDR_DECODE);
	if (ctx->hdr->has_reply && !rrr__svc_rdma_buf_get(rc, &ctx->res, rc->max_record))
		rrr_xdr_init(&res, ctx->res.p, rc->max_record, RRR_XDR_ENCODE);
	else
		rrr_xdr_init(&res, ctx->sendbuf + SVC_RDMA_HDR_AREA, rc->inline_send,
			     RRR_XDR_ENCODE);
	rrr__svc_rdma_ddp_init(ctx, &res);
	v = rrr__svc_dispatch(&ctx->req, &args, &res);
	svc_rdma_reply(ctx, &res, v);
	/* the reply copied what it needs: the rebuilt call's buffer goes back
	 * to the pool now, still warm, for the next pull */
	rrr__svc_rdma_sink_give(ctx);
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

static void handle_recv(struct svc_rdma_conn *rc, uint32_t idx, uint32_t len, bool resumed)
{
	struct rrr_xprt_stats *st = rc->base.st;
	uint8_t *buf = rc->recv_region + (size_t)idx * rc->recv_size;
	struct svc_rdma_ctx *ctx;
	int err;

	if (!resumed) {
		RRR__STAT_ADD(st, recv_bytes, len);
		set_gauges(rc); /* the ESTABLISHED event may still be on its way */
	}
	if (rc->shutting || rc->broken || len > rc->recv_size) {
		repost(rc, idx, false);
		return;
	}
	if (!resumed && rc->ndefer) {
		/* behind the calls already waiting for a context */
		if (!defer_call(rc, idx, len)) {
			repost(rc, idx, false);
			svc_rdma_fail(rc, "client sent more calls than it was granted");
		}
		return;
	}
	if (len < 16) {
		RRR__STAT_ADD(st, bad_replies, 1);
		repost(rc, idx, false);
		return;
	}
	/* validate the whole header before anything is taken or posted */
	err = rrr_rdma_hdr_decode(buf, len, &rc->lim, rc->scratch);
	if (err) {
		uint32_t xid = be32(buf), proc = be32(buf + 12);

		RRR__STAT_ADD(st, bad_replies, 1);
		repost(rc, idx, false);
		if (err == -EOPNOTSUPP && proc == RRR_RDMA_DONE)
			return;
		ctx = ctx_get(rc);
		if (!ctx) {
			svc_rdma_fail(rc, "client sent more calls than it was granted");
			return;
		}
		send_rdma_error(ctx, xid, err == -EPROTONOSUPPORT ? RRR_ERR_VERS : RRR_ERR_CHUNK);
		return;
	}
	if (rc->scratch->proc != RRR_RDMA_MSG && rc->scratch->proc != RRR_RDMA_NOMSG) {
		/* a client has no business sending RDMA_ERROR: drop it */
		RRR__STAT_ADD(st, bad_replies, 1);
		repost(rc, idx, false);
		return;
	}
	ctx = push_open(rc) ? ctx_get(rc) : NULL;
	if (!ctx) {
		/* every context busy (credits + slack), or the replies in
		 * flight fill the push window: wait */
		if (!defer_call(rc, idx, len)) {
			repost(rc, idx, false);
			svc_rdma_fail(rc, "client sent more calls than it was granted");
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
			repost(rc, idx, false);
			send_rdma_error(ctx, ctx->hdr->xid, RRR_ERR_CHUNK);
			return;
		}
		RRR__STAT_ADD(st, inline_calls, 1);
		svc_rdma_dispatch(ctx, buf + ctx->hdr->hdr_len, len - ctx->hdr->hdr_len);
		/* results were copied out: the receive buffer is free */
		repost(rc, idx, false);
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
static void pull_end(struct svc_rdma_ctx *ctx)
{
	if (ctx->pulling) {
		ctx->rc->pull_inflight -= ctx->pull_need;
		ctx->pulling = false;
	}
}

/* Start the pulls that now fit, in arrival order. */
static void pull_kick(struct svc_rdma_conn *rc)
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
	repost(rc, idx, false); /* inline pieces were copied (or refused) */
	if (err == -EINVAL || err == -E2BIG || err == -EOVERFLOW) {
		RRR__STAT_ADD(st, bad_replies, 1);
		send_rdma_error(ctx, ctx->hdr->xid, RRR_ERR_CHUNK);
		return;
	}
	if (err) {
		ctx_put(ctx);
		rrr__log_debug("svc_rdma: read_prepare: %d", err);
		svc_rdma_fail(rc, "cannot prepare the read chunks of a call");
		return;
	}
	rc->pull_inflight += ctx->pull_need;
	ctx->pulling = true;
	svc_rdma_post_chain(ctx);
}

/* ------------------------------------------------------------------ completions */

static void maybe_finish(struct svc_rdma_conn *rc)
{
	if (rc->base.closing)
		return;
	if (rc->shutting && rc->busy == 0 && !rc->disconnecting)
		svc_rdma_fail(rc, NULL);
	if ((rc->disconnecting || rc->disconnected) && rc->busy == 0) {
		pthread_mutex_lock(&rc->l->lock);
		if (!rc->detached)
			rrr_cm_id_set_ctx(rc->id, NULL);
		rc->detached = true;
		pthread_mutex_unlock(&rc->l->lock);
		rrr__svc_conn_close(&rc->base);
	}
}

static void ctx_put(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (!ctx->busy)
		return;
	rrr__svc_rdma_sink_recover(ctx);
	rrr__svc_rdma_zc_end(ctx); /* before the release callback */
	rrr__svc_req_end(&ctx->req);
	pull_end(ctx);
	rc->push_inflight -= ctx->push_bytes;
	ctx->push_bytes = 0;
	rrr__svc_rdma_sink_give(ctx);
	ctx->busy = false;
	ctx->next = rc->ctx_free;
	rc->ctx_free = ctx;
	rc->busy--;
}

static void svc_rdma_fail(struct svc_rdma_conn *rc, const char *why)
{
	struct svc_rdma_ctx *ctx;

	RRR_PROBE2(svc_conn_failed, &rc->base, why);
	if (why)
		rrr__log_debug("svc_rdma: %s (%s)", why, rrr_last_error() ? rrr_last_error() : "");
	rc->broken = true;
	/* calls that waited for the pull window end here */
	while ((ctx = rc->pull_head)) {
		rc->pull_head = ctx->pull_next;
		ctx_put(ctx);
	}
	rc->pull_tail = NULL;
	/* chains that never got posted end here */
	while ((ctx = rc->sq_wait_head)) {
		rc->sq_wait_head = ctx->next;
		ctx_put(ctx);
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

	if (wc->wr_id & RECV_TAG) {
		uint32_t idx = (uint32_t)(wc->wr_id & 0xffffffffu);

		if (wc->status != RRR_WC_SUCCESS) {
			if (wc->status != RRR_WC_WR_FLUSH_ERR)
				svc_rdma_fail(rc, "receive failed");
			else
				rc->broken = true;
			return;
		}
		if (idx >= rc->nrecv) {
			svc_rdma_fail(rc, "bad receive completion");
			return;
		}
		if (wc->wc_flags & RRR_WC_WITH_INV) {
			/* We never advertise that we accept Send With
			 * Invalidate (RFC 8797): a client that uses it
			 * anyway has invalidated one of our handles. */
			svc_rdma_fail(rc, "client sent Send With Invalidate, which the server "
					  "does not accept");
			return;
		}
		handle_recv(rc, idx, wc->byte_len, false);
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
		svc_rdma_fail(rc, "send-side work request failed");
		ctx_put(ctx);
		return;
	}
	switch (phase) {
	case PH_REG:
		if (rc->broken) {
			ctx_put(ctx);
			break;
		}
		ctx->chain = ctx->read_chain;
		ctx->sq_need = ctx->read_need;
		ctx->phase = PH_READ;
		svc_rdma_post_chain(ctx);
		break;
	case PH_READ:
		pull_end(ctx);
		if (rc->broken) {
			ctx_put(ctx);
			break;
		}
		pull_kick(rc);
		if (rrr__svc_rdma_read_done(ctx)) {
			svc_rdma_post_chain(ctx);
			break;
		}
		svc_rdma_dispatch(ctx, ctx->arg.p + ctx->arg_off, ctx->arg_len);
		break;
	case PH_INV:
		rrr__svc_rdma_sink_inv_done(ctx);
		if (rc->broken) {
			ctx_put(ctx);
			break;
		}
		svc_rdma_dispatch(ctx, ctx->arg.p + ctx->arg_off, ctx->arg_len);
		break;
	case PH_SEND:
		rrr__svc_rdma_zc_sent(ctx); /* its LOCAL_INVs completed too */
		ctx_put(ctx);
		break;
	default:
		ctx_put(ctx);
		break;
	}
	sq_kick(rc);
}

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
			svc_rdma_fail(rc, "completion queue failed");
			break;
		}
		rc->db_defer = true;
		for (i = 0; i < n; i++)
			handle_wc(rc, &wc[i]);
		rc->db_defer = false;
		db_flush(rc);
		if (n == RDMA_POLL_BATCH)
			continue;
		if (n == 0 && armed)
			break;
		rrr_cq_arm(rc->cq);
		armed = true;
	}
	/* calls that waited for a context, while contexts are free, and pulls
	 * that now fit the window */
	rc->db_defer = true;
	pull_kick(rc);
	while (rc->ndefer && (((rc->ctx_free || rc->nctx < rc->max_ctx) && push_open(rc)) ||
			      rc->broken || rc->shutting)) {
		uint32_t h = rc->defer_head;

		rc->defer_head = (h + 1) % rc->nrecv;
		rc->ndefer--;
		handle_recv(rc, rc->defer_idx[h], rc->defer_len[h], true);
	}
	rc->db_defer = false;
	db_flush(rc);
	repost(rc, UINT32_MAX, true);
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

static void set_gauges(struct svc_rdma_conn *rc)
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
		set_gauges(rc);
		break;
	case RRR_CM_EVENT_DISCONNECTED:
	case RRR_CM_EVENT_DEVICE_REMOVAL:
	case RRR_CM_EVENT_UNREACHABLE:
	case RRR_CM_EVENT_REJECTED:
		rc->disconnected = true;
		svc_rdma_fail(rc, NULL);
		break;
	default:
		break;
	}
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
	err = rrr__svc_admit(rrr__svc_limits(l->svc), &rc->base, "RDMA");
	if (err)
		goto err_free;
	rc->recv_size = min_u32(o->inline_recv, peer.send_size);
	rc->inline_send = min_u32(o->inline_send, peer.recv_size);
	rc->remote_inv = peer.remote_inv && !o->no_remote_inv && l->attr.send_with_inv;
	rc->max_requests = o->max_requests;
	rc->max_payload = o->max_payload;
	rc->max_record = o->max_payload + RRR__SVC_REPLY_SLACK;
	rc->batch = rc->max_requests / 4;
	if (rc->batch < 1)
		rc->batch = 1;
	if (rc->batch > RDMA_BATCH_MAX)
		rc->batch = RDMA_BATCH_MAX;
	rc->nrecv = rc->max_requests + rc->batch;
	rc->max_ctx = rc->max_requests + SVC_RDMA_CTX_SLACK;
	rc->sq_depth = min_u32(l->attr.max_qp_wr ? l->attr.max_qp_wr : 1024, 4096);
	if (rc->sq_depth < SVC_RDMA_MAX_WRS) {
		err = rrr__set_error(-EINVAL, "device send queue (%u WRs) is too small",
				     rc->sq_depth);
		goto err_free;
	}
	rc->sq_free = rc->sq_depth;
	rc->sink_remote_write = l->attr.read_sink_remote_write;
	rc->lim.max_read_segs = min_u32(o->max_segs, RRR_RDMA_MAX_READ_SEGS);
	rc->lim.max_write_chunks = SVC_RDMA_MAX_WRITE_CHUNKS;
	rc->lim.max_chunk_segs = min_u32(o->max_segs, RRR_RDMA_MAX_CHUNK_SEGS);
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
	ord = ev->ird ? min_u32(ev->ird, 16) : 16;
	ird = ev->ord ? min_u32(ev->ord, 16) : 0;
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
	err = post_recvs(rc, rc->repost, rc->nrecv);
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
