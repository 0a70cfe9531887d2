/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma.c - RPC-over-RDMA version 1 transport of the client
 * core (the user-space counterpart of xprtrdma's verbs.c + rpc_rdma.c +
 * frwr_ops.c, on the provider interface and the registration engine).
 *
 * Connection. One device, PD, CQ (sends and receives), CM and MR pool per
 * client, made and freed in clnt_rdma_setup.c, kept across reconnects; a
 * CM id and QP per connection. The connect request carries RFC 8797
 * private data (our inline sizes and "remote invalidation accepted"); the
 * accept's private data gives the peer's, and the negotiated sizes are
 * min(local, peer) - 1024 bytes each when the peer sent none. Receive buffers are posted before connecting.
 * A reconnect asks the provider for the local port of the last connection
 * (rrr_cm_set_source; taken when free), so a server that keys its
 * duplicate request cache on the client's address and port knows the
 * re-sent calls.
 *
 * Credits. The client starts with 1 credit and follows the grant in every
 * reply (0 counts as 1, clamped to max_requests). A call is only sent
 * while in-flight calls < credits, so the server never receives more calls
 * than it granted; other calls wait in the core's queue (credit_stalls).
 * Receives: nrecv buffers (max_requests + RECV_BATCH), of which in-flight
 * + RECV_AHEAD are kept posted, refilled when fewer than in-flight + 2
 * are, the most recently freed buffers first. The receive queue takes
 * them in the order posted, so posting all of them would cycle every
 * connection through all its buffers (a page each); this way a
 * connection with a call or two in flight keeps reusing a few.
 *
 * Send queue. Sized for what the credits can have in flight, not for
 * every slot's longest chain: one longest chain (3 x max_segs REG_MRs, the
 * SEND, 3 x max_segs LOCAL_INVs) plus SQ_PER_CALL entries per credit
 * (max_requests, the most the server can grant): 225 entries with the
 * defaults, where 4,018 took 1.1 MiB with their completion queue (the
 * soft provider writes its rings once when it makes them, so that is
 * what an idle connection holds). A call takes room for its REG_MRs, SEND
 * and LOCAL_INVs when it is sent, gives the REG_MRs' and the SEND's back
 * when the SEND completes and the LOCAL_INVs' when they complete (at once
 * those the server invalidated remotely); a call is sent only while a
 * longest chain fits (can_send), so it waits for room, never fails for
 * want of it (counted in credit_stalls). The rest is taken as traffic
 * comes: the slots are an anonymous mapping whose pages a slot's first
 * call takes, the MR pool grows with the registrations, and the send and
 * receive buffers are reserved, not written.
 *
 * A call. Each in-flight call holds a slot: a send buffer (one
 * long-lived registration for all), three registration I/Os (read-side
 * source, write chunk sink, reply chunk), and its reply-chunk buffer. The
 * planner (clnt_plan.c) picks inline / read chunk / RDMA_NOMSG and the
 * reply chunks; the payload (or the whole call) is registered with remote
 * read access, sinks and the reply chunk with remote write access, and the
 * REG_MR WRs are chained ahead of the SEND. The chains of the calls the
 * core sends in one run are posted together (rdma_flush), a quarter of the
 * credit window at most per post: one doorbell per batch, as the server
 * does with its replies (svc_rdma_sendto.c).
 *
 * A reply. The RECV is matched to its slot by xid. A remote invalidation
 * must name a handle this call owns (else: protocol violation,
 * disconnect); a late reply to a timed-out call may name a handle that
 * call no longer holds, but never one another call in flight holds. The
 * header is decoded and checked against what the call offered
 * (clnt_plan.c); then LOCAL_INVs for every registration still valid
 * are chained and posted (one signaled per I/O); only when all have
 * completed is the RPC reply decoded (from the receive buffer, or from the
 * reply-chunk buffer for RDMA_NOMSG) and the call completed. RDMA_ERROR
 * completes with -EREMOTEIO, garbage with -EBADMSG (bad_replies).
 *
 *   wr_id:  | slot or recv index (56 bits) | io (4) | kind (4) |
 *
 * Timeout / cancel of a sent call: its MRs are invalidated (LOCAL_INV) and
 * only then does the call complete; the slot stays "ghost", holding its
 * credit, until the late reply arrives (or the connection is replaced).
 * If every in-flight call is a ghost the connection is replaced, which is
 * the only way to get credits back from a silent server.
 *
 * Recovery. Any failed completion (flush, remote access error, ...) or a CM
 * disconnect reports the connection lost. close() disconnects, destroys the
 * QP, drains the CQ and recovers (rrr_reg_recover: fresh key, never left
 * valid) every registration of every slot before the core hears which
 * calls failed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <rrr/client.h>
#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"
#include "client/clnt_rdma_impl.h"
#include "common/rrr_impl.h"

static uint64_t wr_id(unsigned kind, uint32_t idx, unsigned io)
{
	return (uint64_t)idx << 8 | (uint64_t)(io & 15u) << 4 | kind;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Copy the registration engine's counters into the client's stats. */
static void sync_stats(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	struct rrr_reg_stats rs;

	if (!x->pool || !x->stats_dirty)
		return;
	x->stats_dirty = false;
	rrr_mrpool_stats(x->pool, &rs);
	RRR__CLNT_STAT_SET(c, registrations, rs.registrations);
	RRR__CLNT_STAT_SET(c, hole_splits, rs.hole_splits);
	RRR__CLNT_STAT_SET(c, local_inv, rs.local_inv);
	RRR__CLNT_STAT_SET(c, remote_inv, rs.remote_inv);
	RRR__CLNT_STAT_SET(c, recoveries, rs.recoveries);
	RRR__CLNT_STAT_SET(c, depth_splits, rs.depth_splits);
	RRR__CLNT_STAT_SET(c, pool_empty, rs.pool_empty);
	RRR__CLNT_STAT_SET(c, map_errors, rs.map_errors);
	RRR__CLNT_STAT_SET(c, recover_errors, rs.recover_errors);
	RRR__CLNT_STAT_SET(c, credits, x->credits);
	RRR__CLNT_STAT_SET(c, max_credits, c->opts.max_requests);
	RRR__CLNT_STAT_SET(c, inline_send, x->eff_send);
	RRR__CLNT_STAT_SET(c, inline_recv, x->eff_recv);
}

/* --- receives ------------------------------------------------------------------ */

static int post_recvs(struct rdma_xprt *x)
{
	struct rrr_recv_wr *head = NULL, *bad;
	uint32_t want = x->inflight + RECV_AHEAD, n = x->nrfree;

	if (!n || !x->qp || x->posted >= want)
		return 0;
	if (n > want - x->posted)
		n = want - x->posted;
	/* the most recently freed first (the top of rfree) */
	for (uint32_t k = x->nrfree - n; k < x->nrfree; k++) {
		uint32_t i = x->rfree[k];

		x->rsge[i].addr = (uint64_t)(uintptr_t)(x->rslab + (size_t)i * x->rsize);
		x->rsge[i].length = x->rsize;
		x->rsge[i].lkey = rrr_mr_lkey(x->rmr);
		x->rwr[i].wr_id = wr_id(WR_RECV, i, 0);
		x->rwr[i].sg_list = &x->rsge[i];
		x->rwr[i].num_sge = 1;
		x->rwr[i].next = head;
		head = &x->rwr[i];
	}
	if (rrr_qp_post_recv(x->qp, head, &bad))
		return -ENOTCONN;
	x->posted += n;
	x->nrfree -= n;
	return 0;
}

static void recycle_recv(struct rdma_xprt *x, int idx)
{
	if (idx >= 0 && x->nrfree < x->nrecv)
		x->rfree[x->nrfree++] = (uint32_t)idx;
}

/* --- connection --------------------------------------------------------------------- */

static int wait_event(struct rdma_xprt *x, enum rrr_cm_event_type want, uint64_t deadline,
		      struct rrr_cm_event *ev)
{
	for (;;) {
		uint64_t now = rrr__clnt_now_ns();
		int ms, rc;

		if (now >= deadline)
			return -ETIMEDOUT;
		ms = (int)((deadline - now) / 1000000ull) + 1;
		rc = rrr_cm_wait_event(x->cm, ev, ms);
		if (rc)
			return rc;
		if (ev->id != x->id)
			continue;
		if (ev->type == want)
			return 0;
		switch (ev->type) {
		case RRR_CM_EVENT_REJECTED:
			return -ECONNREFUSED;
		case RRR_CM_EVENT_UNREACHABLE:
			return ev->status ? ev->status : -EHOSTUNREACH;
		case RRR_CM_EVENT_DISCONNECTED:
		case RRR_CM_EVENT_DEVICE_REMOVAL:
			return -ECONNRESET;
		default:
			continue;
		}
	}
}

static void drop_conn(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	struct rrr_wc wc[32];

	if (x->watching) {
		rrr__clnt_unwatch(c, rrr_cq_fd(x->cq));
		rrr__clnt_unwatch(c, rrr_cm_fd(x->cm));
		x->watching = false;
	}
	if (x->qp) {
		(void)rrr_cm_disconnect(x->id);
		rrr_qp_destroy(x->qp);
		x->qp = NULL;
	}
	while (rrr_cq_poll(x->cq, wc, 32) > 0)
		;
	if (x->id) {
		rrr_cm_id_destroy(x->id);
		x->id = NULL;
	}
	{
		struct rrr_cm_event ev;

		while (rrr_cm_get_event(x->cm, &ev) == 0)
			;
	}
}

/* Remember the connection's local address for the next connect. */
static void keep_source(struct rrr_clnt *c, struct rdma_xprt *x)
{
	struct sockaddr_storage ss;

	c->srclen = 0;
	if (rrr_cm_id_local_addr(x->id, &ss))
		return;
	if (ss.ss_family == AF_INET)
		c->srclen = sizeof(struct sockaddr_in);
	else if (ss.ss_family == AF_INET6)
		c->srclen = sizeof(struct sockaddr_in6);
	c->src = ss;
}

static int rdma_connect(struct rrr_clnt *c, int timeout_ms)
{
	struct rdma_xprt *x = X(c);
	uint64_t deadline = rrr__clnt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rrr_rdma_cm_pd mine, peer;
	uint8_t pdata[RRR_RDMA_PD_LEN];
	struct rrr_qp_init_attr qa;
	struct rrr_conn_param cp;
	struct rrr_cm_event ev;
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc;

	rc = rrr_addr_parse(c->host, c->port, &ss, &sl);
	if (rc)
		return rc;
	rc = rrr_cm_id_create(x->cm, c, &x->id);
	if (rc)
		goto fail;
	/* from the port of the last connection when it is free: the server's
	 * duplicate request cache keys on our address and port */
	if (c->srclen)
		(void)rrr_cm_set_source(x->id, (struct sockaddr *)&c->src, c->srclen);
	rc = rrr_cm_resolve(x->id, (struct sockaddr *)&ss, sl, timeout_ms);
	if (rc)
		goto fail;
	rc = wait_event(x, RRR_CM_EVENT_RESOLVED, deadline, &ev);
	if (rc)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.pd = x->pd;
	qa.send_cq = x->cq;
	qa.recv_cq = x->cq;
	qa.max_send_wr = x->sq_depth;
	qa.max_recv_wr = x->nrecv;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.max_rd_atomic = CLIENT_IRD;
	qa.ctx = c;
	rc = rrr_qp_create(x->id, &qa, &x->qp);
	if (rc)
		goto fail;
	x->posted = 0;
	x->nrfree = 0;
	for (uint32_t i = 0; i < x->nrecv; i++)
		recycle_recv(x, (int)i);
	rc = post_recvs(x);
	if (rc)
		goto fail;

	/* Offer Send With Invalidate only when the device can honour it for
	 * our per-I/O registrations (verbs regmr cannot: a peer's invalidation
	 * of an ibv_reg_mr region fails and kills the connection), and never
	 * for long-lived registrations. */
	mine.remote_inv = !c->opts.no_remote_inv && !c->opts.persistent_reg && !c->opts.bounce &&
			  x->attr.send_with_inv;
	mine.send_size = x->ssize;
	mine.recv_size = x->rsize;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pdata;
	cp.private_data_len = (uint32_t)rrr_rdma_cm_pd_encode(pdata, &mine);
	cp.ird = CLIENT_IRD;
	cp.ord = CLIENT_IRD;
	rc = rrr_cm_connect(x->id, &cp);
	if (rc)
		goto fail;
	rc = wait_event(x, RRR_CM_EVENT_ESTABLISHED, deadline, &ev);
	if (rc)
		goto fail;
	(void)rrr_rdma_cm_pd_decode(ev.private_data, ev.private_data_len, &peer);
	x->remote_inv = mine.remote_inv;
	x->eff_send = peer.recv_size < x->ssize ? peer.recv_size : x->ssize;
	x->eff_recv = peer.send_size < x->rsize ? peer.send_size : x->rsize;
	x->credits = 1;
	x->inflight = 0;
	x->stats_dirty = true; /* the negotiated sizes and the credits */
	rc = rrr__clnt_watch(c, rrr_cq_fd(x->cq), EPOLLIN, TAG_CQ);
	if (rc == 0)
		rc = rrr__clnt_watch(c, rrr_cm_fd(x->cm), EPOLLIN, TAG_CM);
	if (rc)
		goto fail;
	x->watching = true;
	(void)rrr_cq_arm(x->cq);
	keep_source(c, x);
	sync_stats(c);
	return 0;
fail:
	drop_conn(c);
	if (rc == -ECONNREFUSED)
		return rrr__set_error(rc,
				      "%s:%s refused the RPC-over-RDMA connection (is the "
				      "server listening with provider '%s'?)",
				      c->host, c->port, c->provider);
	return rrr__set_error(rc, "cannot connect to %s:%s over RDMA (%s): %s", c->host, c->port,
			      c->provider, strerror(-rc));
}

/* A DONE slot whose SEND has completed is free again (an ORPHANED one
 * holds its credit until the late reply makes it DONE). */
static void slot_release(struct rrr_clnt *c, struct rslot *s)
{
	if (s->state != RRR__RSLOT_DONE || s->req || s->send_pending || s->inv_pending)
		return;
	(void)rrr__rslot_to(c, s, RRR__RSLOT_FREE);
	s->abort_status = 0;
	s->placed = false;
}

static void rdma_close(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);

	drop_conn(c);
	/* chains queued for a flush that never came: unlink; their slots are
	 * recovered below like every other */
	for (struct rrr_send_wr *w = x->db_head, *next; w; w = next) {
		next = w->next;
		if (w->opcode == RRR_WR_SEND)
			w->next = NULL;
	}
	x->db_head = x->db_tail = NULL;
	x->db_n = 0;
	x->db_failed = false;
	for (uint32_t i = 0; i < x->nslots_used; i++) {
		struct rslot *s = &x->slots[i];

		if (s->state == RRR__RSLOT_FREE)
			continue;
		for (int k = 0; k < IO_N; k++)
			if (rslot_io_nsegs(s, k))
				rrr_reg_recover(pool_op(x), &s->io[k]);
		if (s->req)
			s->req->xprt = NULL;
		s->req = NULL;
		s->send_pending = false;
		s->inv_pending = 0;
		s->recv_idx = -1;
		s->sq_chain = s->sq_inv = 0;
		memset(s->sq_invs, 0, sizeof(s->sq_invs));
		/* recovery: registrations recovered, the slot is free */
		(void)rrr__rslot_to(c, s, RRR__RSLOT_FREE);
		s->abort_status = 0;
		s->placed = false;
	}
	x->inflight = 0;
	x->posted = 0;
	x->nrfree = 0;
	x->sq_free = x->sq_depth; /* the QP and its queue are gone */
	rrr__rdma_sendq_reset(x);
	sync_stats(c);
}

/* --- sending ------------------------------------------------------------------------ */

static struct rslot *free_slot(struct rdma_xprt *x)
{
	for (uint32_t i = 0; i < x->nslots; i++)
		if (x->keys[i].state == RRR__RSLOT_FREE)
			return &x->slots[i];
	return NULL;
}

static bool rdma_can_send(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	uint32_t ghosts = 0;

	if (!x->qp)
		return false;
	if (x->inflight >= x->credits) {
		for (uint32_t i = 0; i < x->nslots_used; i++)
			if (x->slots[i].state == RRR__RSLOT_ABORTED ||
			    x->slots[i].state == RRR__RSLOT_ORPHANED)
				ghosts++;
		if (ghosts && ghosts >= x->inflight)
			c->broken = true; /* a silent server holds every credit */
		return false;
	}
	if (x->posted < x->inflight + 2 && x->nrfree)
		(void)post_recvs(x);
	if (x->posted < x->inflight + 1)
		return false;
	/* the longest chain a call may need must fit: a call never fails
	 * for want of send-queue room, it waits for the completions that
	 * give room back */
	if (x->sq_free < x->sq_chain_max)
		return false;
	return free_slot(x) != NULL;
}

static struct rrr_send_wr *chain_regs(struct rslot *s, struct rrr_send_wr *tail_wr)
{
	struct rrr_send_wr *head = tail_wr;

	for (int k = IO_N - 1; k >= 0; k--) {
		struct rrr_reg_io *io = &s->io[k];

		if (!rslot_io_nsegs(s, k))
			continue;
		io->reg_wr[io->nsegs - 1].next = head;
		head = &io->reg_wr[0];
	}
	return head;
}

/* Post the chains rdma_send() queued as one chained post (one doorbell:
 * the soft provider hands the batch to one socket write, a NIC fetches it
 * in one go). Each chain ends with its call's SEND; the links between
 * chains are cut again once posted. 0 or -ENOTCONN (nothing from the WR
 * the provider refused on was posted; the connection is gone and close()
 * recovers every slot's registrations). */
static int db_post(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	struct rrr_send_wr *head = x->db_head, *bad = NULL, *w, *next;
	int rc;

	if (!head)
		return 0;
	x->db_head = x->db_tail = NULL;
	x->db_n = 0;
	RRR__CLNT_STAT_ADD(c, send_posts, 1);
	rc = x->qp ? rrr_qp_post_send(x->qp, head, &bad) : -ENOTCONN;
	for (w = head; w; w = next) {
		next = w->next;
		if (w->opcode == RRR_WR_SEND)
			w->next = NULL;
	}
	return rc ? -ENOTCONN : 0;
}

static int rdma_send(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct rdma_xprt *x = X(c);
	const struct rrr_call *call = req->call;
	struct rrr_rdma_hdr *h = &x->hdr;
	struct rrr__plan_in in;
	struct rrr__plan plan;
	struct rrr_send_wr *head;
	struct rslot *s;
	uint32_t ppad = req->has_payload ? RRR_XDR_PAD(req->payload_len) : 0;
	uint64_t sink = 0;
	uint32_t slen = 0;
	int rc;

	if (!x->qp)
		return -ENOTCONN;
	s = free_slot(x);
	if (!s || x->sq_free < x->sq_chain_max)
		return -EAGAIN;
	if ((uint32_t)(s - x->slots) >= x->nslots_used)
		x->nslots_used = (uint32_t)(s - x->slots) + 1;
	/* set here, not at creation: a slot's pages are taken by its first call */
	s->sbuf = x->sslab + (size_t)(s - x->slots) * x->ssize;
	s->recv_idx = -1;
	if (call->ddp == RRR_DDP_FROM_SERVER && call->payload)
		sink = rrr__rdma_iov_total(call->payload, call->npayload);
	if (sink > UINT32_MAX)
		return -EMSGSIZE;
	memset(&in, 0, sizeof(in));
	in.inline_send = x->eff_send;
	in.inline_recv = x->eff_recv;
	in.max_segs = c->opts.max_segs;
	in.msg_len = (uint32_t)req->len + ppad;
	in.payload_len = req->has_payload ? req->payload_len : 0;
	in.sink_len = (uint32_t)sink;
	in.reply_hint = call->reply_hint;
	rc = rrr__clnt_plan(&in, &plan);
	if (rc)
		return rrr__clnt_call_error(c, req, rc,
					    "the call's transport header (room for max_segs %u "
					    "segments per chunk) does not fit the server's receive "
					    "size %u: lower max_segs",
					    in.max_segs, in.inline_send);
	s->req = req; /* sentences of the mapping name the call */
	rrr__rslot_set_xid(x, s, req->xid);
	(void)rrr__rslot_to(c, s, RRR__RSLOT_MAPPED);

	for (int k = 0; k < IO_N; k++) {
		/* an io this slot never mapped keeps its pages untaken */
		if (s->io_used & (1u << k))
			s->io[k].nsegs = 0;
		s->nlseg[k] = 0;
	}
	s->bounce_sink = false;
	memset(h, 0, offsetof(struct rrr_rdma_hdr, read));
	h->nwrite = 0;
	h->has_reply = false;
	h->xid = req->xid;
	h->vers = RRR_RPCRDMA_VERSION;
	h->credits = c->opts.max_requests;
	h->proc = plan.call == RRR__CALL_NOMSG ? RRR_RDMA_NOMSG : RRR_RDMA_MSG;

	/* the chunks (client/clnt_rdma_marshal.c), then header + inline part */
	rc = rrr__rdma_marshal_read_list(c, s, req, &plan, h);
	if (!rc)
		rc = rrr__rdma_marshal_write_list(c, s, sink, &plan, h);
	if (!rc)
		rc = rrr__rdma_marshal_reply_chunk(c, s, &plan, h);
	if (!rc)
		rc = rrr__rdma_marshal_send(x, s, req, &plan, h, &slen);
	if (rc)
		goto unmap;

	s->send_sge.addr = (uint64_t)(uintptr_t)s->sbuf;
	s->send_sge.length = slen;
	s->send_sge.lkey = rrr_mr_lkey(x->smr);
	memset(&s->send_wr, 0, sizeof(s->send_wr));
	s->send_wr.wr_id = wr_id(WR_SEND, (uint32_t)(s - x->slots), 0);
	s->send_wr.opcode = RRR_WR_SEND;
	s->send_wr.sg_list = &s->send_sge;
	s->send_wr.num_sge = 1;
	/* send-queue room: the REG_MRs and the SEND now, room for their
	 * LOCAL_INVs until the reply (start_inv) */
	{
		uint32_t nreg = 0;

		for (int k = 0; k < IO_N; k++)
			nreg += rslot_io_nsegs(s, k);
		s->sq_chain = nreg + 1;
		s->sq_inv = nreg;
		x->sq_free -= 2 * nreg + 1;
	}
	rrr__rdma_sendq_choose(x, s); /* signaled or not */
	/* queued for rdma_flush(), which the core calls after this run of
	 * sends: from here on the call counts as posted */
	head = chain_regs(s, &s->send_wr);
	if (x->db_tail)
		x->db_tail->next = head;
	else
		x->db_head = head;
	x->db_tail = &s->send_wr;
	/* a full batch goes out at once (rrr__doorbell_max, the server's
	 * rule too) */
	if (++x->db_n >= rrr__doorbell_max(x->credits) && db_post(c))
		x->db_failed = true;
	(void)rrr__rslot_to(c, s, RRR__RSLOT_SENT);
	s->send_pending = true;
	s->inv_pending = 0;
	s->abort_status = 0;
	s->recv_idx = -1;
	s->req = req;
	rrr__rslot_set_xid(x, s, req->xid);
	req->xprt = s;
	x->inflight++;
	RRR__CLNT_STAT_ADD(c, send_bytes, s->send_sge.length);
	if (plan.call == RRR__CALL_INLINE)
		RRR__CLNT_STAT_ADD(c, inline_calls, 1);
	else if (plan.call == RRR__CALL_READ_CHUNK)
		RRR__CLNT_STAT_ADD(c, read_chunks, 1);
	else
		RRR__CLNT_STAT_ADD(c, nomsg_calls, 1);
	if (plan.write_chunk)
		RRR__CLNT_STAT_ADD(c, write_chunks, 1);
	if (plan.reply_chunk)
		RRR__CLNT_STAT_ADD(c, reply_chunks, 1);
	if (req->has_payload && plan.call != RRR__CALL_INLINE)
		RRR__CLNT_STAT_ADD(c, rdma_read_bytes, req->payload_len);
	return 0;
unmap:
	/* mapped but never posted: recover returns them INVALID to the pool */
	rrr__rdma_recover_ios(x, s);
	s->req = NULL;
	(void)rrr__rslot_to(c, s, RRR__RSLOT_FREE);
	return rc;
}

/* --- completion ------------------------------------------------------------------------ */

static void finish_slot(struct rrr_clnt *c, struct rslot *s)
{
	struct rdma_xprt *x = X(c);
	struct rrr__clnt_req *req = s->req;

	if (req) {
		int st = s->abort_status ? s->abort_status : s->status;

		if (!s->abort_status && st == 0 && s->bounce_sink && s->placed) {
			const struct rrr_call *call = req->call;
			uint32_t left = s->placed_len;
			const uint8_t *p = s->bb[1];

			for (unsigned i = 0; i < call->npayload && left; i++) {
				size_t l = call->payload[i].iov_len < left
					       ? call->payload[i].iov_len
					       : left;

				memcpy(call->payload[i].iov_base, p, l);
				p += l;
				left -= (uint32_t)l;
			}
		}
		if (!s->abort_status && st == 0) {
			req->placed = s->placed;
			req->placed_len = s->placed_len;
			st = rrr__clnt_decode_reply(c, req, s->msg, s->msg_len);
			if (st == -EBADMSG)
				RRR__CLNT_STAT_ADD(c, bad_replies, 1);
			if (s->placed)
				RRR__CLNT_STAT_ADD(c, rdma_write_bytes, s->placed_len);
		}
		req->xprt = NULL;
		s->req = NULL;
		rrr__clnt_complete(c, req, st);
	}
	if (s->recv_idx >= 0) {
		recycle_recv(x, s->recv_idx);
		s->recv_idx = -1;
	}
	/* the caller is answered: a replied slot is done, an aborted one
	 * still owes its late reply */
	(void)rrr__rslot_to(c, s,
			    s->state == RRR__RSLOT_ABORTED ? RRR__RSLOT_ORPHANED : RRR__RSLOT_DONE);
	slot_release(c, s);
}

/* Post LOCAL_INVs for every registration of @s still valid; finish when
 * none is needed. */
static int start_inv(struct rrr_clnt *c, struct rslot *s)
{
	struct rdma_xprt *x = X(c);
	struct rrr_send_wr *head = NULL, *tail = NULL, *bad;
	uint32_t idx = (uint32_t)(s - x->slots);

	s->inv_pending = 0;
	for (int k = 0; k < IO_N; k++) {
		struct rrr_send_wr *w;

		if (!rslot_io_nsegs(s, k))
			continue;
		w = rrr_reg_build_inv(pool_op(x), &s->io[k], wr_id(WR_INV, idx, (unsigned)k));
		if (!w) {
			rrr_reg_inv_done(pool_op(x), &s->io[k]);
			continue;
		}
		if (tail)
			tail->next = w;
		else
			head = w;
		/* held until the signaled one (the last) completes, out of
		 * the room rdma_send() took for them */
		for (tail = w, s->sq_invs[k] = 1; tail->next; tail = tail->next)
			s->sq_invs[k]++;
		s->sq_inv -= s->sq_invs[k];
		s->inv_pending++;
	}
	/* room for LOCAL_INVs not needed (remotely invalidated) goes back */
	x->sq_free += s->sq_inv;
	s->sq_inv = 0;
	if (!head) {
		finish_slot(c, s);
		return 0;
	}
	if (rrr_qp_post_send(x->qp, head, &bad))
		return -ENOTCONN;
	return 0;
}

static struct rslot *find_slot(struct rdma_xprt *x, uint32_t xid)
{
	for (uint32_t i = 0; i < x->nslots_used; i++) {
		const struct rslot_key *k = &x->keys[i];

		if ((k->state == RRR__RSLOT_SENT || k->state == RRR__RSLOT_ABORTED ||
		     k->state == RRR__RSLOT_ORPHANED) &&
		    k->xid == xid)
			return &x->slots[i];
	}
	return NULL;
}

static int owns_handle(struct rdma_xprt *x, struct rslot *s, uint32_t rkey)
{
	for (int k = 0; k < IO_N; k++)
		if (rslot_io_nsegs(s, k) && rrr_reg_remote_invalidated(pool_op(x), &s->io[k], rkey) == 0)
			return 1;
	return 0;
}

/* Does a call other than @self hold @rkey in a registration still valid?
 * Read-only: a ghost's late reply must not name another call's handle. */
static bool held_by_other(const struct rdma_xprt *x, const struct rslot *self, uint32_t rkey)
{
	for (uint32_t i = 0; i < x->nslots_used; i++) {
		const struct rslot *o = &x->slots[i];

		if (o == self || o->state == RRR__RSLOT_FREE)
			continue;
		for (int k = 0; k < IO_N; k++)
			for (uint32_t j = 0; j < rslot_io_nsegs(o, k) && j < RRR_REG_MAX_SEGS; j++)
				if (o->io[k].valid[j] && o->io[k].segs[j].handle == rkey)
					return true;
	}
	return false;
}

static int handle_recv(struct rrr_clnt *c, const struct rrr_wc *wc)
{
	struct rdma_xprt *x = X(c);
	uint32_t idx = (uint32_t)(wc->wr_id >> 8);
	uint8_t *buf;
	uint32_t len = wc->byte_len;
	struct rrr__reply_view v;
	struct rrr__offer off;
	struct rslot *s;

	if (idx >= x->nrecv)
		return -ENOTCONN;
	if (x->posted)
		x->posted--;
	buf = x->rslab + (size_t)idx * x->rsize;
	RRR__CLNT_STAT_ADD(c, recv_bytes, len);
	s = (len >= 4 && len <= x->rsize) ? find_slot(x, be32(buf)) : NULL;
	/* a ghost: its caller was (or is being) answered after a timeout or
	 * cancel; only the late reply is still owed */
	bool ghost = s && (s->state == RRR__RSLOT_ABORTED || s->state == RRR__RSLOT_ORPHANED);
	if (wc->wc_flags & RRR_WC_WITH_INV) {
		/* A ghost's own registrations may already be back in the pool,
		 * so its late reply may name a handle it no longer holds - but
		 * never one that another call in flight still holds. */
		if (!s || (ghost ? held_by_other(x, s, wc->invalidated_rkey)
				    : !owns_handle(x, s, wc->invalidated_rkey))) {
			recycle_recv(x, (int)idx);
			rrr__set_error(-EPROTO,
				       "server %s:%s invalidated handle 0x%08x that the "
				       "call does not own: disconnecting",
				       c->host, c->port, wc->invalidated_rkey);
			/* an operator must hear of a misbehaving server */
			rrr__log_err("rrr client: %s", rrr_last_error());
			return -ENOTCONN;
		}
	}
	if (!s) {
		RRR__CLNT_STAT_ADD(c, bad_replies, 1);
		recycle_recv(x, (int)idx);
		return 0;
	}
	off.write = rrr__rdma_segs_of(s, IO_SINK, &off.nwrite);
	off.reply = rrr__rdma_segs_of(s, IO_REP, &off.nreply);
	if (ghost) {
		/* the engine may have reused these MRs: offer nothing */
		off.nwrite = off.nreply = 0;
	}
	rrr__clnt_parse_reply(buf, len, &off, &x->hdr, &v);
	if (v.kind != RRR__REPLY_BAD) {
		uint32_t cr = v.credits ? v.credits : 1;

		cr = cr > c->opts.max_requests ? c->opts.max_requests : cr;
		if (cr != x->credits) {
			x->credits = cr;
			x->stats_dirty = true;
		}
	}
	if (x->inflight)
		x->inflight--;
	if (ghost) {
		recycle_recv(x, (int)idx);
		/* ABORTED: its invalidation finishes it (with the abort's
		 * status); ORPHANED: its credit is back */
		(void)rrr__rslot_to(c, s,
				    s->state == RRR__RSLOT_ABORTED ? RRR__RSLOT_REPLIED : RRR__RSLOT_DONE);
		slot_release(c, s);
		return 0;
	}
	(void)rrr__rslot_to(c, s, RRR__RSLOT_REPLIED);
	RRR__CLNT_STAT_ADD(c, replies, 1);
	s->status = v.status;
	s->placed = v.placed;
	s->placed_len = v.placed_len;
	s->msg = NULL;
	s->msg_len = 0;
	switch (v.kind) {
	case RRR__REPLY_MSG:
		s->msg = buf + v.msg_off;
		s->msg_len = v.msg_len;
		s->recv_idx = (int)idx;
		break;
	case RRR__REPLY_NOMSG:
		s->msg = s->rbuf;
		s->msg_len = v.reply_len;
		recycle_recv(x, (int)idx);
		break;
	case RRR__REPLY_BAD:
		RRR__CLNT_STAT_ADD(c, bad_replies, 1);
		/* fall through */
	default:
		recycle_recv(x, (int)idx);
		break;
	}
	return start_inv(c, s);
}

/* Slot @s's SEND and the REG_MRs ahead of it have left the queue (its own
 * completion, or a later signaled SEND's). */
static void send_done(struct rdma_xprt *x, struct rslot *s)
{
	s->send_pending = false;
	x->sq_free += s->sq_chain;
	s->sq_chain = 0;
}

static int handle_wc(struct rrr_clnt *c, const struct rrr_wc *wc)
{
	struct rdma_xprt *x = X(c);
	unsigned kind = (unsigned)(wc->wr_id & 15u), io = (unsigned)((wc->wr_id >> 4) & 15u);
	uint64_t idx = wc->wr_id >> 8;
	struct rslot *s;

	if (kind == WR_RECV) {
		if (wc->status != RRR_WC_SUCCESS)
			return -ENOTCONN;
		return handle_recv(c, wc);
	}
	if (idx >= x->nslots || io >= IO_N)
		return -ENOTCONN;
	s = &x->slots[idx];
	if (kind == WR_SEND) {
		struct rslot *u;

		send_done(x, s);
		if (wc->status != RRR_WC_SUCCESS)
			return -ENOTCONN;
		slot_release(c, s);
		/* and the unsignaled SENDs posted before it */
		while ((u = rrr__rdma_sendq_implied(x, s))) {
			send_done(x, u);
			slot_release(c, u);
		}
		return 0;
	}
	if (kind != WR_INV)
		return -ENOTCONN;
	if (s->inv_pending)
		s->inv_pending--;
	x->sq_free += s->sq_invs[io];
	s->sq_invs[io] = 0;
	if (wc->status != RRR_WC_SUCCESS) {
		rrr_reg_recover(pool_op(x), &s->io[io]);
		return -ENOTCONN;
	}
	rrr_reg_inv_done(pool_op(x), &s->io[io]);
	if (s->inv_pending == 0)
		finish_slot(c, s);
	return 0;
}

/* Poll and handle completions until a short batch; returns how many were
 * handled, or a negative errno when the connection is lost. */
static int poll_cq(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	struct rrr_wc wc[32];
	int n, rc, total = 0;

	for (int rounds = 0; rounds < 64; rounds++) {
		n = rrr_cq_poll(x->cq, wc, 32);
		if (n < 0)
			return -ENOTCONN;
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			rc = handle_wc(c, &wc[i]);
			if (rc)
				return rc;
		}
		total += n;
		/* A short batch drained the CQ: the caller arms and polls once
		 * more, so a second empty poll here would only cost a progress
		 * step (system calls on the soft provider). */
		if (n < 32)
			break;
	}
	return total;
}

static int rdma_progress(struct rrr_clnt *c, uint32_t tag)
{
	struct rdma_xprt *x = X(c);
	int rc = 0;

	if (!x->qp)
		return -ENOTCONN;
	if (tag == TAG_CM) {
		struct rrr_cm_event ev;

		while (rrr_cm_get_event(x->cm, &ev) == 0) {
			if (ev.id == x->id && (ev.type == RRR_CM_EVENT_DISCONNECTED ||
					       ev.type == RRR_CM_EVENT_DEVICE_REMOVAL ||
					       ev.type == RRR_CM_EVENT_UNREACHABLE))
				rc = -ENOTCONN;
		}
		if (rc)
			return rc;
	}
	(void)rrr_cq_ack_event(x->cq);
	rc = poll_cq(c);
	if (rc > 0)
		rc = 0; /* the CQ is armed in rdma_before_sleep */
	if (rc == 0 && x->posted < x->inflight + 2)
		rc = post_recvs(x);
	sync_stats(c);
	return rc;
}

/* Arm, then poll: the thread sleeps only after a poll that followed the arm
 * found nothing (a completion that poll returns may not leave an event
 * behind: the soft provider drops the notification of completions its own
 * poller takes). */
static int rdma_before_sleep(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);
	int rc;

	if (!x->qp)
		return 0;
	(void)rrr_cq_arm(x->cq);
	rc = poll_cq(c);
	if (rc > 0 && x->posted < x->inflight + 2) {
		int r2 = post_recvs(x);

		if (r2 < 0)
			return r2;
	}
	if (rc != 0)
		sync_stats(c);
	return rc;
}

static void rdma_abort(struct rrr_clnt *c, struct rrr__clnt_req *req, int status)
{
	struct rslot *s = req->xprt;

	if (!s) {
		rrr__clnt_complete(c, req, status);
		return;
	}
	s->abort_status = status;
	if (s->state != RRR__RSLOT_SENT)
		return; /* invalidation already running; finish uses abort_status */
	(void)rrr__rslot_to(c, s, RRR__RSLOT_ABORTED);
	if (start_inv(c, s))
		c->broken = true;
}

static uint32_t rdma_max_payload(const struct rrr_clnt *c)
{
	const struct rdma_xprt *x = X(c);
	uint64_t pages = x->attr.max_fr_pages ? x->attr.max_fr_pages : 256;
	uint64_t m;

	if (pages > 256)
		pages = 256;
	m = (uint64_t)c->opts.max_segs * pages * (x->attr.page_size ? x->attr.page_size : 4096);
	return m > MAX_PAYLOAD_CAP ? MAX_PAYLOAD_CAP : (uint32_t)m;
}

/* Post what rdma_send() queued but did not post itself. */
static int rdma_flush(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);

	if (x->db_failed) {
		x->db_failed = false;
		return -ENOTCONN;
	}
	return db_post(c);
}

const struct rrr__clnt_xprt_ops rrr__clnt_rdma_ops = {
    .name = "rdma",
    .create = rrr__rdma_create,
    .connect = rdma_connect,
    .close = rdma_close,
    .can_send = rdma_can_send,
    .send = rdma_send,
    .flush = rdma_flush,
    .progress = rdma_progress,
    .before_sleep = rdma_before_sleep,
    .abort = rdma_abort,
    .destroy = rrr__rdma_destroy,
    .max_payload = rdma_max_payload,
};
