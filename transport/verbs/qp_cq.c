/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/qp_cq.c - completion queues, queue pairs, posting and the
 * translation of ibverbs completions.
 *
 * Normal operation: a CQ is an ibv_cq with its own completion channel. The
 * fd the caller puts in epoll (rrr_cq_fd) is an epoll fd over the channel's
 * fd and an eventfd; the eventfd is written when the provider queues a
 * completion of its own ("synthetic"), because some strategies complete
 * REG_MR / LOCAL_INV without a hardware WR (regmr registers at map time and
 * deregisters at post time, see mr.c). Synthetic completions keep RC
 * ordering: each remembers how many signaled hardware send WRs its QP had
 * posted before it, and is delivered only after that many send completions
 * of the QP were polled; once a completion of the QP failed (the QP is in
 * error) its synthetic completions are delivered as RRR_WC_WR_FLUSH_ERR.
 * While synthetic completions are pending, hardware completions are polled
 * one at a time so they interleave correctly.
 *
 * Posting translates a chain of rrr WRs into batches of ibv WRs (bounded:
 * num_sge <= the QP's max and <= VQP_MAX_SGE); REG_MR and LOCAL_INV go through
 * mr.c, which either yields a hardware WR (memory windows: BIND_MW,
 * LOCAL_INV) or acts at once and asks for a synthetic completion.
 *
 * Polling translates status and opcode; a receive with remote invalidation
 * (IBV_WC_WITH_INV, or on rxe IBV_WC_IP_CSUM_OK: quirk 3, the kernel's
 * WITH_INVALIDATE bit leaks into the user CSUM bit) sets RRR_WC_WITH_INV and
 * invalidated_rkey, and marks our MR of that rkey INVALID.
 *
 * Recovery: a post that fails sets *bad to the first WR not posted; WRs
 * before it were posted (and their side effects made). Destroying a QP
 * first unbinds windows bound through it (rxe quirk 4: destroying a QP with
 * a bound type-2 window hangs), then drops its pending synthetic completions.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs_impl.h"

#define VQP_MAX_SGE 32
#define VQP_BATCH   16

struct vsynth {
	struct vsynth *next;
	struct vqp *qp;
	uint64_t threshold;
	struct rrr_wc wc;
};

/* post_send scratch: one batch of ibv WRs and their SGEs (one per QP). */
struct sbatch {
	struct ibv_send_wr wr[VQP_BATCH];
	struct ibv_sge sge[VQP_BATCH][VQP_MAX_SGE];
	struct rrr_send_wr *src[VQP_BATCH];
	int n;
};

int rrr__verbs_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out)
{
	struct vdev *d = VDEV(dev);
	struct vcq *c = calloc(1, sizeof(*c));
	struct epoll_event ee;
	int rc, fl;

	if (!c)
		return -ENOMEM;
	if (depth > (uint32_t)d->dattr.orig_attr.max_cqe)
		depth = (uint32_t)d->dattr.orig_attr.max_cqe;
	c->efd = c->epfd = -1;
	c->ch = ibv_create_comp_channel(d->ctx);
	if (!c->ch) {
		rc = rrr__verbs_err(-1);
		goto err_free;
	}
	fl = fcntl(c->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		rc = -errno;
		goto err_ch;
	}
	c->cq = ibv_create_cq(d->ctx, (int)depth, c, c->ch, 0);
	if (!c->cq) {
		rc = rrr__verbs_err(-1);
		rrr__set_error(rc, "verbs: ibv_create_cq(%u) failed", depth);
		goto err_ch;
	}
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->efd < 0 || c->epfd < 0) {
		rc = -errno;
		goto err_fds;
	}
	memset(&ee, 0, sizeof(ee));
	ee.events = EPOLLIN;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->ch->fd, &ee) ||
	    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->efd, &ee)) {
		rc = -errno;
		goto err_fds;
	}
	rc = pthread_mutex_init(&c->lock, NULL);
	if (rc) {
		rc = -rc;
		goto err_fds;
	}
	c->synth_tail = &c->synth_head;
	c->pub.dev = dev;
	*out = &c->pub;
	return 0;

err_fds:
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->efd >= 0)
		close(c->efd);
	ibv_destroy_cq(c->cq);
err_ch:
	ibv_destroy_comp_channel(c->ch);
err_free:
	free(c);
	return rc;
}

int rrr__verbs_cq_destroy(struct rrr_cq *cq)
{
	struct vcq *c = VCQ(cq);
	struct vsynth *s, *n;
	int rc;

	if (c->nqp)
		return -EBUSY;
	if (c->unacked)
		ibv_ack_cq_events(c->cq, c->unacked);
	rc = ibv_destroy_cq(c->cq);
	if (rc)
		return rrr__verbs_err(rc);
	ibv_destroy_comp_channel(c->ch);
	close(c->epfd);
	close(c->efd);
	for (s = c->synth_head; s; s = n) {
		n = s->next;
		free(s);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

int rrr__verbs_cq_fd(struct rrr_cq *cq)
{
	return VCQ(cq)->epfd;
}

int rrr__verbs_cq_ack_event(struct rrr_cq *cq)
{
	struct vcq *c = VCQ(cq);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	uint64_t v;

	while (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx) == 0) {
		ibv_ack_cq_events(ev_cq, 1);
	}
	if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

int rrr__verbs_cq_arm(struct rrr_cq *cq)
{
	struct vcq *c = VCQ(cq);
	int rc = ibv_req_notify_cq(c->cq, 0);
	uint64_t one = 1;

	if (rc)
		return rrr__verbs_err(rc);
	pthread_mutex_lock(&c->lock);
	if (c->synth_head && write(c->efd, &one, sizeof(one)) < 0)
		rc = -errno;
	pthread_mutex_unlock(&c->lock);
	return rc == -EAGAIN ? 0 : rc;
}

int rrr__verbs_synth_queue(struct vqp *qp, const struct rrr_wc *wc)
{
	struct vcq *c = VCQ(qp->pub.send_cq);
	struct vsynth *s = calloc(1, sizeof(*s));
	uint64_t one = 1;

	if (!s)
		return -ENOMEM;
	s->qp = qp;
	s->threshold = qp->sig_posted;
	s->wc = *wc;
	s->wc.qp = &qp->pub;
	pthread_mutex_lock(&c->lock);
	*c->synth_tail = s;
	c->synth_tail = &s->next;
	pthread_mutex_unlock(&c->lock);
	if (write(c->efd, &one, sizeof(one)) < 0) {
		/* counter saturated: still readable, nothing lost */
	}
	return 0;
}

/* Move ready synthetic completions to @wc; caller holds c->lock. */
static int emit_synth(struct vcq *c, struct rrr_wc *wc, int room)
{
	struct vsynth **pp = &c->synth_head, *s;
	int k = 0;

	while ((s = *pp) && k < room) {
		if (s->qp->sig_done >= s->threshold) {
			if (s->qp->errored)
				s->wc.status = RRR_WC_WR_FLUSH_ERR;
			wc[k++] = s->wc;
			*pp = s->next;
			free(s);
		} else {
			pp = &s->next;
		}
	}
	c->synth_tail = pp;
	while (*c->synth_tail)
		c->synth_tail = &(*c->synth_tail)->next;
	return k;
}

static enum rrr_wc_status map_status(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return RRR_WC_SUCCESS;
	case IBV_WC_LOC_LEN_ERR:
		return RRR_WC_LOC_LEN_ERR;
	case IBV_WC_LOC_PROT_ERR:
		return RRR_WC_LOC_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR:
		return RRR_WC_WR_FLUSH_ERR;
	case IBV_WC_MW_BIND_ERR:
		return RRR_WC_MW_BIND_ERR;
	case IBV_WC_REM_INV_REQ_ERR:
		return RRR_WC_REM_INV_REQ_ERR;
	case IBV_WC_REM_ACCESS_ERR:
		return RRR_WC_REM_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR:
		return RRR_WC_REM_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RRR_WC_RETRY_EXC_ERR;
	case IBV_WC_FATAL_ERR:
		return RRR_WC_FATAL_ERR;
	default:
		return RRR_WC_GENERAL_ERR;
	}
}

static struct vqp *find_qp(struct vcq *c, uint32_t qp_num, bool *is_send_cq)
{
	struct vqp *q;

	for (q = c->sq_qps; q; q = q->next_send)
		if (q->qp->qp_num == qp_num) {
			*is_send_cq = true;
			return q;
		}
	for (q = c->rq_qps; q; q = q->next_recv)
		if (q->qp->qp_num == qp_num) {
			*is_send_cq = false;
			return q;
		}
	return NULL;
}

static void translate(struct vcq *c, const struct ibv_wc *iw, struct rrr_wc *w)
{
	struct vdev *d = VDEV(c->pub.dev);
	bool on_sq = false, is_send;
	struct vqp *q = find_qp(c, iw->qp_num, &on_sq);

	memset(w, 0, sizeof(*w));
	w->wr_id = iw->wr_id;
	w->status = map_status(iw->status);
	w->vendor_err = iw->vendor_err;
	w->qp = q ? &q->pub : NULL;
	if (q && iw->status != IBV_WC_SUCCESS)
		q->errored = true;
	if (iw->status == IBV_WC_SUCCESS || !q || q->pub.send_cq == q->pub.recv_cq)
		is_send = !(iw->opcode & IBV_WC_RECV);
	else
		is_send = on_sq;
	if (is_send) {
		switch (iw->opcode) {
		case IBV_WC_RDMA_WRITE:
			w->opcode = RRR_WC_RDMA_WRITE;
			break;
		case IBV_WC_RDMA_READ:
			w->opcode = RRR_WC_RDMA_READ;
			break;
		case IBV_WC_BIND_MW:
			w->opcode = RRR_WC_REG_MR;
			break;
		case IBV_WC_LOCAL_INV:
			w->opcode = RRR_WC_LOCAL_INV;
			break;
		default:
			w->opcode = RRR_WC_SEND;
			break;
		}
		if (q)
			q->sig_done++;
		return;
	}
	w->opcode = RRR_WC_RECV;
	w->byte_len = iw->byte_len;
	if (iw->status != IBV_WC_SUCCESS)
		return;
	if ((iw->wc_flags & IBV_WC_WITH_INV) ||
	    (d->quirks.wc_inv_as_csum && (iw->wc_flags & IBV_WC_IP_CSUM_OK) &&
	     !(iw->wc_flags & IBV_WC_WITH_IMM))) {
		w->wc_flags |= RRR_WC_WITH_INV;
		w->invalidated_rkey = iw->invalidated_rkey;
		rrr__verbs_mr_remote_invalidated(d, iw->invalidated_rkey);
	}
}

int rrr__verbs_cq_poll(struct rrr_cq *cq, struct rrr_wc *wc, int n)
{
	struct vcq *c = VCQ(cq);
	struct ibv_wc iw[VQP_BATCH];
	int count = 0, r, i;

	pthread_mutex_lock(&c->lock);
	count += emit_synth(c, wc, n);
	while (count < n) {
		int want = n - count;

		if (want > VQP_BATCH)
			want = VQP_BATCH;
		if (c->synth_head)
			want = 1;
		r = ibv_poll_cq(c->cq, want, iw);
		if (r < 0) {
			pthread_mutex_unlock(&c->lock);
			return count ? count : -EIO;
		}
		if (r == 0)
			break;
		for (i = 0; i < r; i++)
			translate(c, &iw[i], &wc[count++]);
		if (c->synth_head)
			count += emit_synth(c, wc + count, n - count);
	}
	pthread_mutex_unlock(&c->lock);
	return count;
}

/* --- QPs ------------------------------------------------------------------ */

int rrr__verbs_qp_create(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr,
			 struct rrr_qp **out)
{
	struct vcm_id *v = VID(id);
	struct vpd *p = VPD(attr->pd);
	struct vcq *sc = VCQ(attr->send_cq), *rc_ = VCQ(attr->recv_cq);
	struct ibv_qp_init_attr ia;
	struct vqp *q;

	if (id->qp)
		return -EEXIST;
	if (!v->id->verbs)
		return rrr__set_error(-EINVAL, "verbs: create the QP after RESOLVED or "
					       "CONNECT_REQUEST");
	if (v->id->verbs != p->pd->context)
		return rrr__set_error(-EINVAL,
				      "verbs: the connection is on device %s, not "
				      "on the PD's device %s",
				      ibv_get_device_name(v->id->verbs->device),
				      attr->pd->dev->attr.name);
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->batch = malloc(sizeof(*q->batch));
	if (!q->batch) {
		free(q);
		return -ENOMEM;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = sc->cq;
	ia.recv_cq = rc_->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = attr->max_send_wr ? attr->max_send_wr : 16;
	ia.cap.max_recv_wr = attr->max_recv_wr ? attr->max_recv_wr : 16;
	ia.cap.max_send_sge = attr->max_send_sge ? attr->max_send_sge : 1;
	ia.cap.max_recv_sge = attr->max_recv_sge ? attr->max_recv_sge : 1;
	if (ia.cap.max_send_sge > VQP_MAX_SGE || ia.cap.max_recv_sge > VQP_MAX_SGE) {
		free(q->batch);
		free(q);
		return rrr__set_error(-EINVAL, "verbs: at most %d SGEs per WR", VQP_MAX_SGE);
	}
	if (rdma_create_qp(v->id, p->pd, &ia)) {
		int rc = rrr__verbs_err(-1);

		free(q->batch);
		free(q);
		return rrr__set_error(rc, "verbs: rdma_create_qp failed: %s", strerror(-rc));
	}
	q->qp = v->id->qp;
	q->max_send_sge = ia.cap.max_send_sge;
	q->max_recv_sge = ia.cap.max_recv_sge;
	q->pub.dev = attr->pd->dev;
	q->pub.pd = attr->pd;
	q->pub.send_cq = attr->send_cq;
	q->pub.recv_cq = attr->recv_cq;
	q->pub.id = id;
	q->pub.ctx = attr->ctx;
	pthread_mutex_lock(&sc->lock);
	q->next_send = sc->sq_qps;
	sc->sq_qps = q;
	sc->nqp++;
	pthread_mutex_unlock(&sc->lock);
	pthread_mutex_lock(&rc_->lock);
	q->next_recv = rc_->rq_qps;
	rc_->rq_qps = q;
	rc_->nqp++;
	pthread_mutex_unlock(&rc_->lock);
	pthread_mutex_lock(&p->lock);
	p->nqp++;
	pthread_mutex_unlock(&p->lock);
	id->qp = &q->pub;
	*out = &q->pub;
	return 0;
}

static void unlink_qp(struct vcq *c, struct vqp *q, bool send)
{
	struct vqp **pp;
	struct vsynth **sp, *s;

	pthread_mutex_lock(&c->lock);
	for (pp = send ? &c->sq_qps : &c->rq_qps; *pp;
	     pp = send ? &(*pp)->next_send : &(*pp)->next_recv) {
		if (*pp == q) {
			*pp = send ? q->next_send : q->next_recv;
			c->nqp--;
			break;
		}
	}
	for (sp = &c->synth_head; (s = *sp);) {
		if (s->qp == q) {
			*sp = s->next;
			free(s);
		} else {
			sp = &s->next;
		}
	}
	c->synth_tail = &c->synth_head;
	while (*c->synth_tail)
		c->synth_tail = &(*c->synth_tail)->next;
	pthread_mutex_unlock(&c->lock);
}

int rrr__verbs_qp_destroy(struct rrr_qp *qp)
{
	struct vqp *q = VQP(qp);
	struct vcm_id *v = VID(qp->id);
	struct vpd *p = VPD(qp->pd);

	rrr__verbs_mr_qp_gone(q);
	unlink_qp(VCQ(qp->send_cq), q, true);
	unlink_qp(VCQ(qp->recv_cq), q, false);
	rdma_destroy_qp(v->id);
	qp->id->qp = NULL;
	pthread_mutex_lock(&p->lock);
	p->nqp--;
	pthread_mutex_unlock(&p->lock);
	free(q->batch);
	free(q);
	return 0;
}

static unsigned map_flags(unsigned f)
{
	unsigned o = 0;

	if (f & RRR_SEND_SIGNALED)
		o |= IBV_SEND_SIGNALED;
	if (f & RRR_SEND_FENCE)
		o |= IBV_SEND_FENCE;
	if (f & RRR_SEND_SOLICITED)
		o |= IBV_SEND_SOLICITED;
	return o;
}

static void copy_sges(struct ibv_sge *dst, const struct rrr_sge *src, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

static int flush_send(struct vqp *q, struct sbatch *b, struct rrr_send_wr **bad)
{
	struct ibv_send_wr *ibad = NULL;
	int rc, i, done;

	if (b->n == 0)
		return 0;
	for (i = 0; i + 1 < b->n; i++)
		b->wr[i].next = &b->wr[i + 1];
	b->wr[b->n - 1].next = NULL;
	rc = ibv_post_send(q->qp, b->wr, &ibad);
	done = rc ? (ibad ? (int)(ibad - b->wr) : 0) : b->n;
	for (i = 0; i < done; i++) {
		if (b->wr[i].send_flags & IBV_SEND_SIGNALED)
			q->sig_posted++;
		if (b->src[i]->opcode == RRR_WR_REG_MR || b->src[i]->opcode == RRR_WR_LOCAL_INV)
			rrr__verbs_mr_posted(q, b->src[i]);
	}
	if (rc) {
		*bad = b->src[done < b->n ? done : 0];
		b->n = 0;
		return rrr__verbs_err(rc);
	}
	b->n = 0;
	return 0;
}

int rrr__verbs_post_send(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad)
{
	struct vqp *q = VQP(qp);
	struct vdev *d = VDEV(qp->dev);
	struct sbatch *b = q->batch;
	int rc = 0;

	b->n = 0;
	for (; wr; wr = wr->next) {
		struct ibv_send_wr *w = &b->wr[b->n];
		bool real = true;

		*bad = wr;
		if (wr->num_sge > q->max_send_sge || (wr->num_sge && !wr->sg_list)) {
			rc = -EINVAL;
			break;
		}
		memset(w, 0, sizeof(*w));
		w->wr_id = wr->wr_id;
		w->send_flags = map_flags(wr->flags);
		w->num_sge = (int)wr->num_sge;
		w->sg_list = b->sge[b->n];
		copy_sges(b->sge[b->n], wr->sg_list, wr->num_sge);
		switch (wr->opcode) {
		case RRR_WR_SEND:
			w->opcode = IBV_WR_SEND;
			break;
		case RRR_WR_SEND_WITH_INV:
			if (!d->remote_inv) {
				rc = rrr__set_error(-EOPNOTSUPP,
						    "verbs: remote invalidation is "
						    "off on %s (remote_inv=0)",
						    d->pub.attr.name);
				break;
			}
			w->opcode = IBV_WR_SEND_WITH_INV;
			w->invalidate_rkey = wr->u.send.invalidate_rkey;
			break;
		case RRR_WR_RDMA_WRITE:
		case RRR_WR_RDMA_READ:
			w->opcode =
			    wr->opcode == RRR_WR_RDMA_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
			w->wr.rdma.remote_addr = wr->u.rdma.remote_addr;
			w->wr.rdma.rkey = wr->u.rdma.rkey;
			break;
		case RRR_WR_REG_MR:
		case RRR_WR_LOCAL_INV:
			rc = rrr__verbs_mr_prepare_wr(q, wr, w, &real);
			break;
		default:
			rc = -EINVAL;
			break;
		}
		if (rc)
			break;
		if (real) {
			b->src[b->n++] = wr;
			if (b->n == VQP_BATCH) {
				rc = flush_send(q, b, bad);
				if (rc)
					break;
			}
			continue;
		}
		/* Synthetic: everything before it goes to the hardware first. */
		rc = flush_send(q, b, bad);
		if (rc)
			break;
		*bad = wr;
		rrr__verbs_mr_posted(q, wr);
		if (wr->flags & RRR_SEND_SIGNALED) {
			struct rrr_wc sw;

			memset(&sw, 0, sizeof(sw));
			sw.wr_id = wr->wr_id;
			sw.status = RRR_WC_SUCCESS;
			sw.opcode = wr->opcode == RRR_WR_REG_MR ? RRR_WC_REG_MR : RRR_WC_LOCAL_INV;
			rc = rrr__verbs_synth_queue(q, &sw);
			if (rc)
				break;
		}
	}
	if (rc == 0)
		rc = flush_send(q, b, bad);
	else if (b->n) {
		/* An invalid WR stops the chain: post what preceded it. */
		struct rrr_send_wr *stop = *bad;
		int rc2 = flush_send(q, b, bad);

		if (rc2)
			rc = rc2;
		else
			*bad = stop;
	}
	return rc;
}

int rrr__verbs_post_recv(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad)
{
	struct vqp *q = VQP(qp);
	struct ibv_recv_wr w[VQP_BATCH], *ibad;
	struct ibv_sge sge[VQP_BATCH][VQP_MAX_SGE];
	struct rrr_recv_wr *src[VQP_BATCH];
	int n, rc, i;

	while (wr) {
		for (n = 0; wr && n < VQP_BATCH; wr = wr->next, n++) {
			if (wr->num_sge > q->max_recv_sge || (wr->num_sge && !wr->sg_list)) {
				*bad = wr;
				break;
			}
			memset(&w[n], 0, sizeof(w[n]));
			w[n].wr_id = wr->wr_id;
			w[n].num_sge = (int)wr->num_sge;
			w[n].sg_list = sge[n];
			for (i = 0; i < (int)wr->num_sge; i++) {
				sge[n][i].addr = wr->sg_list[i].addr;
				sge[n][i].length = wr->sg_list[i].length;
				sge[n][i].lkey = wr->sg_list[i].lkey;
			}
			src[n] = wr;
			w[n].next = NULL;
			if (n)
				w[n - 1].next = &w[n];
		}
		if (n) {
			ibad = NULL;
			rc = ibv_post_recv(q->qp, w, &ibad);
			if (rc) {
				*bad = src[ibad ? (int)(ibad - w) : 0];
				return rrr__verbs_err(rc);
			}
		}
		if (wr && (wr->num_sge > q->max_recv_sge || (wr->num_sge && !wr->sg_list))) {
			*bad = wr;
			return -EINVAL;
		}
	}
	return 0;
}
