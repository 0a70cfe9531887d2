/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/qp.c - queue pairs: work queues, posting, ordering.
 *
 * Normal operation: a QP owns a send queue (ring of copied WRs), a receive
 * queue and an inbound-READ queue (IRD entries). post_send() checks each
 * WR (SGE count, local keys and bounds, READ sink rights) before queueing
 * any of them from the first bad one on - except keys that a REG_MR or
 * LOCAL_INV still queued ahead of the WR may change: those wait for the
 * check the transmit engine makes when the WR starts, in order, as an
 * RNIC checks them (REG_MR then a READ into it, in one chain, works) -
 * then kicks the transmit engine
 * (tx.c) which runs WRs in posting order: SEND/WRITE complete when their
 * last FPDU is handed to TCP, a READ when its response is fully placed
 * (rx.c), REG_MR/LOCAL_INV when the engine reaches them. A WR with
 * RRR_SEND_FENCE does not start while READs are outstanding; at most ORD
 * READs are outstanding. Completions leave the head of the send queue
 * only, so they are reported in posting order (RC semantics), including
 * unsignaled WRs which advance the head silently.
 *
 * Locking: qp->lock protects everything here and the socket state; it is
 * taken by the poster and by whoever drives progress for the QP (a CQ
 * poller or the progress thread). Completions go to the CQ under cq->lock
 * (a leaf lock).
 *
 * Recovery: rrr__soft_qp_fatal() (tx.c, which drains the transmit engine
 * on the way) moves the QP to ERROR exactly once: it finishes the FPDU
 * being transmitted, sends a Terminate if asked, shuts the socket down,
 * flushes every outstanding WR and reports DISCONNECTED to the CM through
 * qp->conn_lost. WRs posted to an ERROR QP complete at once with flush
 * errors.
 *
 * Calls run one way: cm.c and device.c call into this file; it calls
 * down into the engines (rx.c, tx.c), the shared QP state (qp_state.c),
 * progress.c (waiting out the progress thread in rrr__soft_qp_detach) and
 * the CQ, and nothing here calls back up. Binding a QP to its connection
 * id (and unbinding it) is cm.c's: rrr__soft_cm_qp_create/destroy wrap
 * rrr__soft_qp_new/free.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "common/probes.h"
#include "soft.h"

static uint32_t clampu(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int rrr__soft_qp_new(struct rrr_cm_id *id, struct soft_id *sid,
		     void (*conn_lost)(struct soft_id *sid, int status),
		     const struct rrr_qp_init_attr *attr, struct rrr_qp **out)
{
	struct soft_dev *dev = soft_dev(id->cm->dev);
	struct soft_qp *qp;

	if (id->qp)
		return rrr__set_error(-EEXIST, "soft: the connection id already has a QP");
	if (attr->max_send_sge > SOFT_MAX_SGE || attr->max_recv_sge > SOFT_MAX_SGE)
		return rrr__set_error(-EINVAL, "soft: at most %u SGEs per WR", SOFT_MAX_SGE);
	if (attr->max_send_wr > SOFT_MAX_QP_WR || attr->max_recv_wr > SOFT_MAX_QP_WR)
		return rrr__set_error(-EINVAL, "soft: at most %u WRs per queue", SOFT_MAX_QP_WR);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->sq_size = clampu(attr->max_send_wr, 1, SOFT_MAX_QP_WR);
	qp->rq_size = clampu(attr->max_recv_wr, 1, SOFT_MAX_QP_WR);
	qp->ord = clampu(attr->max_rd_atomic ? attr->max_rd_atomic : SOFT_DEF_ORD, 1, SOFT_MAX_ORD);
	qp->ird = qp->ord;
	qp->irq_size = SOFT_MAX_ORD;
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_size, sizeof(*qp->rq));
	qp->irq = calloc(qp->irq_size, sizeof(*qp->irq));
	if (!qp->sq || !qp->rq || !qp->irq) {
		free(qp->sq);
		free(qp->rq);
		free(qp->irq);
		free(qp);
		return -ENOMEM;
	}
	soft_prefault(qp->sq, qp->sq_size * sizeof(*qp->sq));
	soft_prefault(qp->rq, qp->rq_size * sizeof(*qp->rq));
	soft_prefault(qp->irq, qp->irq_size * sizeof(*qp->irq));
	pthread_mutex_init(&qp->lock, NULL);
	qp->dev = dev;
	qp->fd = -1;
	qp->max_send_sge = attr->max_send_sge ? attr->max_send_sge : 1;
	qp->max_recv_sge = attr->max_recv_sge ? attr->max_recv_sge : 1;
	qp->scq = soft_cq(attr->send_cq);
	qp->rcq = soft_cq(attr->recv_cq);
	qp->base.dev = &dev->base;
	qp->base.pd = attr->pd;
	qp->base.send_cq = attr->send_cq;
	qp->base.recv_cq = attr->recv_cq;
	qp->base.id = id;
	qp->base.ctx = attr->ctx;
	qp->tx_msn_send = qp->tx_msn_read = qp->tx_msn_term = 1;
	qp->rx.msn_send = qp->rx.msn_read = qp->rx.msn_term = 1;
	qp->rx.need = SOFT_HDR_TAGGED;
	qp->id = sid;
	qp->conn_lost = conn_lost;
	rrr__soft_fault_qp_init(qp);
	atomic_fetch_add(&qp->scq->refs, 1);
	atomic_fetch_add(&qp->rcq->refs, 1);
	container_of(attr->pd, struct soft_pd, base)->refs++;
	atomic_fetch_add(&dev->nobj, 1);
	id->qp = &qp->base;
	*out = &qp->base;
	return 0;
}

int rrr__soft_qp_attach(struct soft_qp *qp, int fd, const struct soft_attach *a)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_mutex_lock(&qp->lock);
	qp->fd = fd;
	rrr__soft_qp_mulpdu_update(qp);
	qp->crc = a->crc;
	qp->tx_hold = a->hold_tx;
	if (a->ord && a->ord < qp->ord)
		qp->ord = a->ord;
	if (a->ird && a->ird < qp->ird)
		qp->ird = a->ird;
	/* a zero-length Send or Read used as RTR was message 1 of its queue */
	if (a->rtr_in == SOFT_RTR_SEND)
		qp->rx.msn_send = 2;
	else if (a->rtr_in == SOFT_RTR_READ)
		qp->rx.msn_read = 2;
	if (a->rtr_out == SOFT_RTR_SEND)
		qp->tx_msn_send = 2;
	else if (a->rtr_out == SOFT_RTR_READ)
		qp->tx_msn_read = 2;
	if (qp->state == SOFT_QP_IDLE)
		qp->state = SOFT_QP_RTS;
	rrr__soft_qp_ep_add(qp);
	if (qp->state == SOFT_QP_RTS) {
		rrr__soft_tx(qp);
		rrr__soft_rx(qp);
	}
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

void rrr__soft_qp_detach(struct soft_qp *qp)
{
	/* Caller-driven: taking every prog lock guarantees no poller still
	 * holds a pointer to this QP from an epoll event after we return.
	 * Progress thread: leave the set, then let the thread finish a pass. */
	struct soft_cq *a = qp->scq, *b = qp->rcq;

	if (qp->dev->progress_thread) {
		pthread_mutex_lock(&qp->lock);
		rrr__soft_qp_ep_del(qp);
		pthread_mutex_unlock(&qp->lock);
		rrr__soft_dev_quiesce(qp->dev);
		return;
	}
	if (a > b) {
		struct soft_cq *t = a;

		a = b;
		b = t;
	}
	pthread_mutex_lock(&a->prog_lock);
	if (b != a)
		pthread_mutex_lock(&b->prog_lock);
	pthread_mutex_lock(&qp->lock);
	rrr__soft_qp_ep_del(qp);
	pthread_mutex_unlock(&qp->lock);
	if (b != a)
		pthread_mutex_unlock(&b->prog_lock);
	pthread_mutex_unlock(&a->prog_lock);
}

int rrr__soft_qp_free(struct rrr_qp *base)
{
	struct soft_qp *qp = soft_qp(base);
	struct soft_dev *dev = qp->dev;

	pthread_mutex_lock(&qp->lock);
	if (qp->state != SOFT_QP_ERROR) {
		qp->id = NULL; /* the id is being torn down by its owner; no event */
		rrr__soft_qp_fatal(qp, 0, false);
	}
	pthread_mutex_unlock(&qp->lock);
	if (base->id)
		base->id->qp = NULL;
	atomic_fetch_sub(&qp->scq->refs, 1);
	atomic_fetch_sub(&qp->rcq->refs, 1);
	container_of(base->pd, struct soft_pd, base)->refs--;
	atomic_fetch_sub(&dev->nobj, 1);
	pthread_mutex_destroy(&qp->lock);
	free(qp->sq);
	free(qp->rq);
	free(qp->irq);
	free(qp);
	return 0;
}

/* Is a REG_MR or LOCAL_INV of one of these SGEs' STags queued and not yet
 * executed? Then the keys can only be judged in order, at execution. */
static bool sq_changes_keys(const struct soft_qp *qp, const struct rrr_sge *sg, uint32_t n)
{
	for (uint32_t i = qp->sq_tx; i < qp->sq_count; i++) {
		const struct soft_swqe *w = &qp->sq[(qp->sq_head + i) % qp->sq_size];
		uint32_t idx;

		if (w->st == SOFT_WQE_DONE)
			continue;
		if (w->opcode == RRR_WR_REG_MR)
			idx = w->mr->index;
		else if (w->opcode == RRR_WR_LOCAL_INV)
			idx = w->rkey >> 8;
		else
			continue;
		for (uint32_t j = 0; j < n; j++)
			if (sg[j].length && sg[j].lkey >> 8 == idx)
				return true;
	}
	return false;
}

/* Post time: keys valid now pass; keys that an earlier queued REG_MR will
 * make valid are left to the execution check (rrr__soft_sq_keys_ok). */
static int post_check(struct soft_qp *qp, const struct rrr_send_wr *wr, uint64_t *total,
		      uint64_t *gen, bool *checked)
{
	unsigned rights = soft_sge_rights(wr->opcode);
	int rc;

	/* read before the check: an invalidation racing it moves the
	 * generation after this load, so the WR is checked again when it
	 * starts (rrr__soft_sq_keys_ok) */
	*gen = atomic_load(&qp->dev->key_gen);
	rc = rrr__soft_sge_check(qp, wr->sg_list, wr->num_sge, rights, true, total);
	*checked = rc == 0;
	if (rc == -EINVAL && sq_changes_keys(qp, wr->sg_list, wr->num_sge))
		rc = rrr__soft_sge_check(qp, wr->sg_list, wr->num_sge, rights, false, total);
	return rc;
}

int rrr__soft_post_send(struct rrr_qp *base, struct rrr_send_wr *wr, struct rrr_send_wr **bad)
{
	struct soft_qp *qp = soft_qp(base);
	int rc = 0;

	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		struct soft_swqe *w;
		uint64_t total = 0, gen = 0;
		bool checked = false;

		if (qp->sq_count == qp->sq_size) {
			rc = rrr__set_error(-ENOMEM, "soft: send queue full (%u WRs)", qp->sq_size);
			break;
		}
		if (wr->num_sge > qp->max_send_sge) {
			rc = rrr__set_error(-EINVAL, "soft: %u SGEs exceed the QP's max_send_sge %u",
					    wr->num_sge, qp->max_send_sge);
			break;
		}
		switch (wr->opcode) {
		case RRR_WR_SEND:
		case RRR_WR_SEND_WITH_INV:
		case RRR_WR_RDMA_WRITE:
			rc = post_check(qp, wr, &total, &gen, &checked);
			break;
		case RRR_WR_RDMA_READ:
			if (wr->num_sge != 1) {
				rc = rrr__set_error(-EINVAL, "soft: RDMA READ needs exactly one SGE");
				break;
			}
			rc = post_check(qp, wr, &total, &gen, &checked);
			break;
		case RRR_WR_REG_MR:
			if (!wr->u.reg.mr || wr->u.reg.mr->dev != base->dev || !wr->u.reg.mr->max_pages)
				rc = rrr__set_error(-EINVAL, "soft: REG_MR needs a fast-reg MR");
			break;
		case RRR_WR_LOCAL_INV:
			break;
		default:
			rc = rrr__set_error(-EINVAL, "soft: unknown opcode %d", (int)wr->opcode);
		}
		if (rc)
			break;
		w = &qp->sq[(qp->sq_head + qp->sq_count) % qp->sq_size];
		/* field by field, not memset: the unused SGE slots stay as
		 * they are (never read past num_sge); this runs per WR */
		w->remote_addr = 0;
		w->rkey = 0;
		w->mr = NULL;
		w->access = 0;
		w->done_bytes = 0;
		w->msn = 0;
		w->st = SOFT_WQE_QUEUED;
		w->status = RRR_WC_SUCCESS;
		w->vendor_err = 0;
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->flags;
		w->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
		w->total = total;
		w->key_gen = gen;
		w->keys_checked = checked;
		switch (wr->opcode) {
		case RRR_WR_RDMA_WRITE:
		case RRR_WR_RDMA_READ:
			w->remote_addr = wr->u.rdma.remote_addr;
			w->rkey = wr->u.rdma.rkey;
			break;
		case RRR_WR_SEND_WITH_INV:
			w->rkey = wr->u.send.invalidate_rkey;
			break;
		case RRR_WR_REG_MR:
			w->mr = container_of(wr->u.reg.mr, struct soft_mr, base);
			w->access = wr->u.reg.access;
			break;
		case RRR_WR_LOCAL_INV:
			w->rkey = wr->u.inv.rkey;
			break;
		default:
			break;
		}
		if (qp->state == SOFT_QP_ERROR) {
			w->st = SOFT_WQE_DONE;
			w->status = RRR_WC_WR_FLUSH_ERR;
		}
		qp->sq_count++;
	}
	*bad = wr;
	if (qp->state == SOFT_QP_RTS)
		rrr__soft_tx(qp);
	else if (qp->state == SOFT_QP_ERROR) {
		qp->sq_tx = qp->sq_count;
		rrr__soft_sq_complete(qp);
	}
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

int rrr__soft_post_recv(struct rrr_qp *base, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad)
{
	struct soft_qp *qp = soft_qp(base);
	int rc = 0;

	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		struct soft_rwqe *r;
		uint64_t total = 0;

		if (qp->rq_count == qp->rq_size) {
			rc = rrr__set_error(-ENOMEM, "soft: receive queue full (%u WRs)",
					    qp->rq_size);
			break;
		}
		if (wr->num_sge > qp->max_recv_sge) {
			rc = rrr__set_error(-EINVAL, "soft: %u SGEs exceed the QP's max_recv_sge %u",
					    wr->num_sge, qp->max_recv_sge);
			break;
		}
		rc = rrr__soft_sge_check(qp, wr->sg_list, wr->num_sge, RRR_ACCESS_LOCAL_WRITE, true,
					 &total);
		if (rc)
			break;
		if (qp->state == SOFT_QP_ERROR) {
			struct rrr_wc wc = { .wr_id = wr->wr_id, .status = RRR_WC_WR_FLUSH_ERR,
					     .opcode = RRR_WC_RECV, .qp = base };
			rrr__soft_cq_push(qp->rcq, &wc);
			continue;
		}
		r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_size];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(*r->sge));
		r->total = total;
		qp->rq_count++;
	}
	*bad = wr;
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

int rrr__soft_qp_info(struct rrr_qp *base, uint32_t *term_sent, uint32_t *term_rcvd, int *state)
{
	struct soft_qp *qp = soft_qp(base);

	pthread_mutex_lock(&qp->lock);
	if (term_sent)
		*term_sent = qp->term_sent;
	if (term_rcvd)
		*term_rcvd = qp->term_rcvd;
	if (state)
		*state = qp->state;
	pthread_mutex_unlock(&qp->lock);
	return 0;
}
