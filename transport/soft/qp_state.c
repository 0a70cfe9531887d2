/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/qp_state.c - the state of one QP that its engines share,
 * at the bottom of the QP files: which epoll sets watch the socket
 * (EPOLLIN always, EPOLLOUT while the transmit engine waits for room), the
 * largest ULPDU the socket's MSS allows, the in-order completion of the
 * send queue's head, and the check of a send WR's local keys.
 *
 * Normal operation: qp.c (posting, attach), rx.c and tx.c (the engines)
 * and tx.c's error path call down into this file; it calls only the CQ
 * (completions, the count of QPs in a CQ's epoll set) and the STag table.
 * Nothing here calls back up: the calls of the soft provider run one way
 * (docs/soft-provider.md, "Files"; scripts/check-soft-layers.sh).
 *
 * Completions leave the head of the send queue only (RC ordering): a WR
 * is reported when it and every WR before it are DONE; unsignaled
 * successful WRs advance the head silently.
 *
 * Locking: every function here runs under qp->lock (the caller holds it);
 * completions go to the CQ under cq->lock, a leaf lock.
 *
 * Recovery: nothing here fails the QP; a bad key is reported to the caller
 * (-EINVAL), which completes the WR with a local protection error
 * (tx.c) or refuses the post (qp.c).
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "soft.h"

static void ep_mod(struct soft_qp *qp, int op)
{
	struct epoll_event ev = { .events = EPOLLIN | (qp->want_out ? EPOLLOUT : 0),
				  .data.ptr = qp };

	if (qp->dev->progress_thread) {
		epoll_ctl(qp->dev->ep, op, qp->fd, &ev);
		return;
	}
	epoll_ctl(qp->scq->ep, op, qp->fd, &ev);
	if (qp->rcq != qp->scq)
		epoll_ctl(qp->rcq->ep, op, qp->fd, &ev);
	if (op == EPOLL_CTL_ADD) {
		rrr__soft_cq_qp_add(qp->scq, qp);
		if (qp->rcq != qp->scq)
			rrr__soft_cq_qp_add(qp->rcq, qp);
	} else if (op == EPOLL_CTL_DEL) {
		rrr__soft_cq_qp_del(qp->scq, qp);
		if (qp->rcq != qp->scq)
			rrr__soft_cq_qp_del(qp->rcq, qp);
	}
}

void rrr__soft_qp_want_out(struct soft_qp *qp, bool on)
{
	if (qp->want_out == on || !qp->in_ep)
		return;
	qp->want_out = on;
	ep_mod(qp, EPOLL_CTL_MOD);
}

/*
 * One FPDU fits one TCP segment (RFC 5044 alignment; Wireshark decodes
 * FPDUs so): ULPDU <= MSS - length - pad - CRC, and <= the device's mulpdu
 * option. The MSS is read again before a message that takes more than one
 * FPDU (tx.c, through rrr__soft_qp_mulpdu_refresh: at most once per
 * SOFT_MSS_REFRESH_NS, so a stream of 4 KiB messages over a 1500-byte MTU
 * does not pay a getsockopt each), not only at connection time, as Linux
 * siw re-reads it before every WR: Linux bounds a new connection's MSS by half
 * the peer's first window (loopback: ~32 KiB at connect, ~64 KiB once the
 * window has grown), so a bound taken once at connect would cut every bulk
 * transfer into twice the FPDUs - twice the receive calls - for the life
 * of the connection.
 */
void rrr__soft_qp_mulpdu_update(struct soft_qp *qp)
{
	int mss = 0;
	socklen_t ml = sizeof(mss);

	qp->mulpdu = qp->dev->mulpdu;
	if (getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &ml) == 0 && mss > 0 &&
	    (uint32_t)mss - 9 < qp->mulpdu && mss >= (int)SOFT_MULPDU_MIN + 9)
		qp->mulpdu = (uint32_t)mss - 9;
}

void rrr__soft_qp_mulpdu_refresh(struct soft_qp *qp)
{
	uint64_t now = rrr__mono_ns();

	if (now - qp->mss_ns < SOFT_MSS_REFRESH_NS)
		return;
	qp->mss_ns = now;
	rrr__soft_qp_mulpdu_update(qp);
}

void rrr__soft_qp_ep_add(struct soft_qp *qp)
{
	qp->want_out = false;
	qp->in_ep = true;
	ep_mod(qp, EPOLL_CTL_ADD);
}

void rrr__soft_qp_ep_del(struct soft_qp *qp)
{
	if (!qp->in_ep)
		return;
	ep_mod(qp, EPOLL_CTL_DEL);
	qp->in_ep = false;
}

void rrr__soft_sq_complete(struct soft_qp *qp)
{
	while (qp->sq_count) {
		struct soft_swqe *w = &qp->sq[qp->sq_head];
		static const enum rrr_wc_opcode map[] = {
			[RRR_WR_SEND] = RRR_WC_SEND,
			[RRR_WR_SEND_WITH_INV] = RRR_WC_SEND,
			[RRR_WR_RDMA_WRITE] = RRR_WC_RDMA_WRITE,
			[RRR_WR_RDMA_READ] = RRR_WC_RDMA_READ,
			[RRR_WR_REG_MR] = RRR_WC_REG_MR,
			[RRR_WR_LOCAL_INV] = RRR_WC_LOCAL_INV,
		};

		if (w->st != SOFT_WQE_DONE)
			break;
		if ((w->flags & RRR_SEND_SIGNALED) || w->status != RRR_WC_SUCCESS) {
			struct rrr_wc wc = {
				.wr_id = w->wr_id,
				.status = w->status,
				.opcode = map[w->opcode],
				.qp = &qp->base,
				.vendor_err = w->vendor_err,
			};
			if (w->opcode == RRR_WR_RDMA_READ)
				wc.byte_len = (uint32_t)w->total;
			rrr__soft_cq_push(qp->scq, &wc);
		}
		qp->sq_head = (qp->sq_head + 1) % qp->sq_size;
		qp->sq_count--;
		if (qp->sq_tx)
			qp->sq_tx--;
	}
	/* An empty ring starts again at its first entry, so a QP with a few
	 * WRs in flight keeps using the same few pages instead of walking the
	 * whole ring: with thousands of QPs, memory touched per round of all
	 * of them is what costs (docs/scaling.md). Nothing holds the ring
	 * index of a retired WR (the transmit batch's slots are WRs not yet
	 * DONE). */
	if (!qp->sq_count)
		qp->sq_head = 0;
}

/* Local key check (no Terminate: a local error). With !keys only the
 * lengths are summed: the keys are checked when the WR executes. */
int rrr__soft_sge_check(struct soft_qp *qp, const struct rrr_sge *sg, uint32_t n, unsigned rights,
			 bool keys, uint64_t *total)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct soft_mr *mr;

		if (sg[i].length == 0)
			continue;
		if (keys && rrr__soft_mr_get(qp->dev, sg[i].lkey, qp->base.pd, rights, sg[i].addr,
					     sg[i].length, true, &mr))
			return rrr__set_error(-EINVAL,
					      "soft: SGE %u (lkey 0x%x, %u bytes at 0x%llx) is not "
					      "inside a valid local registration with the needed rights",
					      i, sg[i].lkey, sg[i].length,
					      (unsigned long long)sg[i].addr);
		if (keys)
			rrr__soft_mr_put(mr);
		t += sg[i].length;
	}
	if (t > 0x7fffffffu)
		return rrr__set_error(-EMSGSIZE, "soft: message longer than 2 GiB");
	*total = t;
	return 0;
}

/* Keys that passed at post time and no registration has left VALID since
 * (dev->key_gen unchanged) pass again without a lookup: a registration only
 * becomes unusable by leaving VALID, and one that leaves it between this
 * load and the payload's own lookup (sge_iov) fails there the same way. */
int rrr__soft_sq_keys_ok(struct soft_qp *qp, const struct soft_swqe *w)
{
	uint64_t total;

	if (w->keys_checked && atomic_load(&qp->dev->key_gen) == w->key_gen)
		return 0;
	return rrr__soft_sge_check(qp, w->sge, w->num_sge, soft_sge_rights(w->opcode), true,
				  &total);
}
