/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/tx.c - the transmit engine: WRs and read responses to FPDUs.
 *
 * Normal operation (under qp->lock): one FPDU at a time is described by an
 * iovec list - [MPA length + DDP/RDMAP header (+ inline Read Request or
 * Terminate payload)] [payload pieces straight from the caller's SGEs or
 * the registration's chunks] [pad + CRC32c] - and handed to sendmsg() on
 * the non-blocking socket, up to tx_batch FPDUs and about tx_bytes bytes
 * per call (batch_room); a short write
 * leaves the rest for the next call (EPOLLOUT is armed meanwhile), and
 * that call first drops the FPDUs already out (batch_compact) and fills
 * the batch up again behind the rest, so every sendmsg stays large. No
 * payload byte is copied by us. An SGE's address is in its registration's
 * virtual range and its bytes are where the chunk list puts them (as an
 * lkey maps them; a registration with gaps is not one range of memory); a
 * segment whose pieces need more than SOFT_PAY_IOV iovecs is cut short.
 * Messages are cut into segments of at most MULPDU - header bytes; a
 * message is never interleaved with another one, so Read Responses are
 * sent between whole SQ messages, before the next SQ WR starts.
 *
 * Order of the send queue: WRs start in posting order; REG_MR and
 * LOCAL_INV execute when reached - and a LOCAL_INV earlier, as soon as no
 * WR before it that is still queued or on the wire names its STag as a
 * local key and no REG_MR or fenced WR precedes it (eager_local_inv): it
 * needs no wire, so a peer that stops reading (zero window) while Read
 * Responses or other FPDUs wait cannot hold a registration valid, and a
 * timed-out call's invalidation completes (in SQ order: at once when the
 * WRs before it are done). A Read Response partly on the wire whose source
 * is invalidated that way aborts the connection at once (no Terminate can
 * get through a zero window). The local keys of a SEND/WRITE/READ are
 * checked again when it starts (a REG_MR earlier in the same chain may
 * only now have made them valid; a failure is a local protection error
 * that moves the QP to error); a fenced WR waits for outstanding
 * READs, a READ waits while ORD READs are outstanding. The Terminate
 * requested by rrr__soft_qp_fatal() goes out right after the FPDU on the
 * wire.
 *
 * Recovery: a Read Response re-checks its source registration (state,
 * key, rights, bounds) before every sendmsg, holding the in-flight guard
 * during the call; if the source was invalidated the connection is
 * aborted (the stream cannot be resynchronised) and the QP errors out.
 * A SEND/WRITE whose source registration the caller invalidates while it
 * is on the wire completes with a local protection error and the QP
 * errors out. A socket error moves the QP to error without a Terminate.
 *
 * The error state lives here because leaving RTS needs the transmit
 * engine: rrr__soft_qp_fatal() moves the QP to ERROR exactly once (the
 * receive engine, a post and the CM call it too): it finishes the FPDU
 * being transmitted (the stream must stay framed), sends a Terminate if
 * asked (bounded wait, 200 ms), shuts the socket down, removes it from
 * every epoll set, flushes every outstanding WR with RRR_WC_WR_FLUSH_ERR
 * (the WR a peer's Terminate answers gets the matching remote error) and
 * reports the lost connection through the QP's one upward hook,
 * qp->conn_lost (set by cm.c; DISCONNECTED to the application). So this
 * file calls only down (qp_state.c, cq.c, the STag table), never qp.c,
 * rx.c or cm.c.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/probes.h"
#include "soft.h"




/*
 * Payload pieces for bytes [off, off+len) of a WR's SGEs. An SGE's address
 * is in its registration's virtual range, and the bytes are where the
 * registration's chunk list puts them (a registration with gaps is not one
 * range of memory). Returns the count (at most @max; the pieces may cover
 * fewer than @len bytes when @max cuts them), or -1 when an SGE's
 * registration is no longer valid (the WR's keys were good when it started:
 * the caller invalidated it since).
 */
static int sge_iov(struct soft_qp *qp, const struct rrr_sge *sg, uint32_t n, uint64_t off,
		   uint64_t len, struct iovec *iov, int max)
{
	int k = 0;

	for (uint32_t i = 0; i < n && len && k < max; i++) {
		uint64_t l = sg[i].length, got = 0;
		struct soft_mr *mr;
		int m;

		if (off >= l) {
			off -= l;
			continue;
		}
		uint64_t take = l - off;

		if (take > len)
			take = len;
		if (rrr__soft_mr_get(qp->dev, sg[i].lkey, qp->base.pd, 0, sg[i].addr + off, take,
				     true, &mr))
			return -1;
		m = rrr__soft_mr_iov(mr, sg[i].addr + off, take, iov + k, max - k);
		rrr__soft_mr_put(mr);
		for (int j = 0; j < m; j++)
			got += iov[k + j].iov_len;
		k += m;
		len -= got;
		off = 0;
		if (got < take)
			break;
	}
	return k;
}

/* Where the next FPDU of the batch goes: its header buffer and first iov. */
static inline uint8_t *fhdr(struct soft_qp *qp)
{
	return qp->txb.hdr[qp->tx.nf];
}

static inline struct iovec *fiov(struct soft_qp *qp)
{
	return qp->txb.iov + qp->tx.niov;
}

/* Seal the FPDU being added: fiov()[0] = header, [1..np] = payload (already
 * there), then pad + CRC; record what its completion means. */
static void fpdu_seal(struct soft_qp *qp, size_t hdrlen, int np, uint32_t paylen,
		      enum soft_tx_kind kind, bool last, uint32_t slot)
{
	uint32_t ulpdu = (uint32_t)hdrlen - 2 + paylen;
	unsigned pad = soft_mpa_pad(ulpdu);
	struct iovec *v = fiov(qp);
	uint8_t *hdr = fhdr(qp), *trl = qp->txb.trl[qp->tx.nf];
	int n = qp->tx.nf;

	qp->tx_fpdus++;
	v[0].iov_base = hdr;
	v[0].iov_len = hdrlen;
	/* pad and CRC field (mpa.c); the field is always there, zero when
	 * CRC is off */
	rrr__soft_mpa_trailer(trl, pad, v, 1 + np, qp->crc);
	v[1 + np].iov_base = trl;
	v[1 + np].iov_len = pad + 4;
	qp->tx.niov += np + 2;
	qp->tx.f[n].end = qp->tx.niov;
	qp->tx.f[n].len = (uint32_t)hdrlen + paylen + pad + 4;
	qp->tx.bytes += qp->tx.f[n].len;
	qp->tx.f[n].kind = kind;
	qp->tx.f[n].last = last;
	qp->tx.f[n].slot = slot;
	qp->tx.nf++;
	qp->tx.active = true;
}

static void fpdu_done(struct soft_qp *qp, int n);

static int tx_write(struct soft_qp *qp)
{
	while (qp->tx.idx < qp->tx.niov) {
		struct soft_mr *guard = NULL;
		struct msghdr msg = { 0 };
		ssize_t n;

		if (qp->tx.src_guard &&
		    rrr__soft_mr_get(qp->dev, qp->tx.src_handle, qp->base.pd,
				     RRR_ACCESS_REMOTE_READ, qp->tx.src_to, qp->tx.src_len, true,
				     &guard))
			return -EIO;
		/* sendmsg with MSG_NOSIGNAL, never writev: a peer that vanished
		 * must end in EPIPE and flushed work, not in a SIGPIPE that
		 * kills the caller's process */
		if (soft_fault_point(qp)) {
			/* injected drop (fault.c): as a broken pipe */
			rrr__soft_mr_put(guard);
			return -EPIPE;
		}
		msg.msg_iov = qp->txb.iov + qp->tx.idx;
		msg.msg_iovlen = qp->tx.niov - qp->tx.idx;
		n = sendmsg(qp->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		qp->tx_calls++;
		rrr__soft_mr_put(guard);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -EAGAIN : -errno;
		}
		while (n > 0) {
			struct iovec *v = &qp->txb.iov[qp->tx.idx];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				qp->tx.idx++;
			} else {
				v->iov_base = (char *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
		/* completions of fully written FPDUs go out now, not at the
		 * end of the batch */
		while (qp->tx.fdone < qp->tx.nf && qp->tx.idx >= qp->tx.f[qp->tx.fdone].end)
			fpdu_done(qp, qp->tx.fdone++);
	}
	return 0;
}

static void fpdu_done(struct soft_qp *qp, int n)
{
	if (qp->tx.f[n].kind == SOFT_TXK_SQ) {
		struct soft_swqe *w = &qp->sq[qp->tx.f[n].slot];

		if (qp->tx.f[n].last) {
			if (w->opcode == RRR_WR_RDMA_READ) {
				w->st = SOFT_WQE_WAIT_RESP;
			} else {
				w->st = SOFT_WQE_DONE;
				rrr__soft_sq_complete(qp);
			}
		}
	} else if (qp->tx.f[n].kind == SOFT_TXK_IRQ) {
		if (qp->tx.f[n].last) {
			qp->tx.kind = SOFT_TXK_NONE;
			qp->irq_head = (qp->irq_head + 1) % qp->irq_size;
			qp->irq_count--;
		}
	}
}

/* No batch in flight: nothing built, nothing written, no lead, guard or
 * IRQ continuation pending. */
static inline void tx_batch_reset(struct soft_qp *qp)
{
	qp->tx.active = false;
	qp->tx.nf = qp->tx.fdone = 0;
	qp->tx.niov = qp->tx.idx = 0;
	qp->tx.bytes = 0;
	qp->tx.lead_busy = false;
	qp->tx.lead_cut = false;
	qp->tx.src_guard = false;
	qp->tx.irq_more = false;
}

/* Report the FPDUs the last writev finished; reset when the batch is out. */
static void batch_progress(struct soft_qp *qp)
{
	while (qp->tx.fdone < qp->tx.nf && qp->tx.idx >= qp->tx.f[qp->tx.fdone].end)
		fpdu_done(qp, qp->tx.fdone++);
	if (qp->tx.fdone == qp->tx.nf) {
		tx_batch_reset(qp);
	}
}

/* Next Read Response segment; false if the source check failed (QP dead). */
static bool build_read_resp(struct soft_qp *qp)
{
	struct soft_irq *q = &qp->irq[qp->irq_head];

	if (q->off == 0 && q->rr.size > qp->mulpdu - (SOFT_HDR_TAGGED - 2))
		rrr__soft_qp_mulpdu_refresh(qp); /* a multi-FPDU response */
	uint32_t maxpay = qp->mulpdu - (SOFT_HDR_TAGGED - 2);
	uint64_t left = q->rr.size - q->off;
	uint32_t seg = left > maxpay ? maxpay : (uint32_t)left;
	bool last = seg == left;
	struct soft_mr *mr = NULL;
	uint32_t rc;
	int np = 0;

	if (seg) {
		rc = rrr__soft_mr_get(qp->dev, q->rr.src_stag, qp->base.pd, RRR_ACCESS_REMOTE_READ,
				      q->rr.src_to + q->off, seg, true, &mr);
		if (rc) {
			rrr__soft_qp_fatal(qp, rc & ~SOFT_GET_FAIL, true);
			return false;
		}
		np = rrr__soft_mr_iov(mr, q->rr.src_to + q->off, seg, fiov(qp) + 1, SOFT_PAY_IOV);
		/* more pieces than iovecs: shorten the segment */
		uint64_t got = 0;

		for (int i = 0; i < np; i++)
			got += fiov(qp)[1 + i].iov_len;
		if (got < seg) {
			seg = (uint32_t)got;
			last = false;
		}
	}
	rrr__soft_hdr_tagged(fhdr(qp), SOFT_OP_READ_RESP, last, q->rr.sink_stag,
			     q->rr.sink_to + q->off, seg);
	fpdu_seal(qp, SOFT_HDR_TAGGED, np, seg, SOFT_TXK_IRQ, last, 0);
	rrr__soft_mr_put(mr);
	if (seg && qp->tx.src_guard) {
		/* the batch continues this response: the guarded source range
		 * grows (same STag, contiguous offsets) */
		qp->tx.src_len += seg;
	} else if (seg) {
		qp->tx.src_guard = true;
		qp->tx.src_handle = q->rr.src_stag;
		qp->tx.src_to = q->rr.src_to + q->off;
		qp->tx.src_len = seg;
	}
	q->off += seg;
	qp->tx.kind = SOFT_TXK_IRQ;
	qp->tx.irq_more = !last;
	return true;
}

/* Start or continue the next SQ WR. Returns false when nothing to send. */
static bool build_sq(struct soft_qp *qp)
{
	while (qp->sq_tx < qp->sq_count) {
		uint32_t slot = (qp->sq_head + qp->sq_tx) % qp->sq_size;
		struct soft_swqe *w = &qp->sq[slot];
		uint32_t hdr = (w->opcode == RRR_WR_RDMA_WRITE) ? SOFT_HDR_TAGGED : SOFT_HDR_UNTAGGED;

		if (w->st == SOFT_WQE_QUEUED && w->total > qp->mulpdu - (hdr - 2) &&
		    w->opcode != RRR_WR_REG_MR && w->opcode != RRR_WR_LOCAL_INV &&
		    w->opcode != RRR_WR_RDMA_READ)
			rrr__soft_qp_mulpdu_refresh(qp); /* a multi-FPDU message */
		uint32_t maxpay = qp->mulpdu - (hdr - 2);
		int rc, np;

		if (w->st == SOFT_WQE_DONE) {
			qp->sq_tx++;
			continue;
		}
		if (w->st == SOFT_WQE_QUEUED && (w->flags & RRR_SEND_FENCE) && qp->reads_out)
			return false;
		if (w->st == SOFT_WQE_QUEUED && w->opcode != RRR_WR_REG_MR &&
		    w->opcode != RRR_WR_LOCAL_INV && rrr__soft_sq_keys_ok(qp, w)) {
			/* local keys are judged in order, when the WR runs:
			 * a local protection error, and the QP goes to error */
			if (qp->tx.active)
				return false; /* after the FPDUs already built */
			w->st = SOFT_WQE_DONE;
			w->status = RRR_WC_LOC_PROT_ERR;
			qp->sq_tx++;
			rrr__soft_qp_fatal(qp, 0, false);
			return false;
		}
		switch (w->opcode) {
		case RRR_WR_REG_MR:
			rc = rrr__soft_mr_validate(w->mr, qp->base.pd, w->access);
			w->st = SOFT_WQE_DONE;
			w->status = rc ? RRR_WC_LOC_PROT_ERR : RRR_WC_SUCCESS;
			qp->sq_tx++;
			rrr__soft_sq_complete(qp);
			continue;
		case RRR_WR_LOCAL_INV:
			rc = rrr__soft_invalidate(qp->dev, w->rkey, qp->base.pd, false);
			w->st = SOFT_WQE_DONE;
			w->status = rc ? RRR_WC_LOC_PROT_ERR : RRR_WC_SUCCESS;
			qp->sq_tx++;
			rrr__soft_sq_complete(qp);
			continue;
		case RRR_WR_RDMA_READ: {
			struct soft_read_req rr = {
				.sink_stag = w->sge[0].lkey,
				.sink_to = w->sge[0].addr,
				.size = (uint32_t)w->total,
				.src_stag = w->rkey,
				.src_to = w->remote_addr,
			};
			if (qp->reads_out >= qp->ord)
				return false;
			rrr__soft_hdr_untagged(fhdr(qp), SOFT_OP_READ_REQ, true, 0, SOFT_QN_READ,
					       qp->tx_msn_read++, 0, SOFT_READ_REQ_LEN);
			rrr__soft_read_req_encode(fhdr(qp) + SOFT_HDR_UNTAGGED, &rr);
			fpdu_seal(qp, SOFT_HDR_UNTAGGED + SOFT_READ_REQ_LEN, 0, 0, SOFT_TXK_SQ, true,
				  slot);
			qp->reads_out++;
			w->st = SOFT_WQE_ACTIVE;
			qp->sq_tx++;
			qp->tx.kind = SOFT_TXK_NONE;
			return true;
		}
		default:
			break;
		}
		/* SEND, SEND_WITH_INV, RDMA_WRITE: next segment */
		uint64_t left = w->total - w->done_bytes;
		uint32_t seg = left > maxpay ? maxpay : (uint32_t)left;
		uint64_t got = 0;

		np = sge_iov(qp, w->sge, w->num_sge, w->done_bytes, seg, fiov(qp) + 1,
			     SOFT_PAY_IOV);
		if (np < 0) {
			/* a source registration was invalidated mid-message: a
			 * local protection error, after the FPDUs already built */
			if (qp->tx.active)
				return false;
			w->st = SOFT_WQE_DONE;
			w->status = RRR_WC_LOC_PROT_ERR;
			qp->sq_tx++;
			rrr__soft_qp_fatal(qp, 0, false);
			return false;
		}
		for (int i = 0; i < np; i++)
			got += fiov(qp)[1 + i].iov_len;
		seg = (uint32_t)got;
		bool last = seg == left;

		if (w->st == SOFT_WQE_QUEUED) {
			w->st = SOFT_WQE_ACTIVE;
			if (w->opcode != RRR_WR_RDMA_WRITE)
				w->msn = qp->tx_msn_send++;
		}
		if (w->opcode == RRR_WR_RDMA_WRITE) {
			rrr__soft_hdr_tagged(fhdr(qp), SOFT_OP_WRITE, last, w->rkey,
					     w->remote_addr + w->done_bytes, seg);
		} else {
			uint8_t op;

			if (w->opcode == RRR_WR_SEND_WITH_INV)
				op = (w->flags & RRR_SEND_SOLICITED) ? SOFT_OP_SEND_SE_INV
								     : SOFT_OP_SEND_INV;
			else
				op = (w->flags & RRR_SEND_SOLICITED) ? SOFT_OP_SEND_SE : SOFT_OP_SEND;
			rrr__soft_hdr_untagged(fhdr(qp), op, last,
					       w->opcode == RRR_WR_SEND_WITH_INV ? w->rkey : 0,
					       SOFT_QN_SEND, w->msn, (uint32_t)w->done_bytes, seg);
		}
		fpdu_seal(qp, hdr, np, seg, SOFT_TXK_SQ, last, slot);
		w->done_bytes += seg;
		if (last)
			qp->sq_tx++;
		qp->tx.kind = last ? SOFT_TXK_NONE : SOFT_TXK_SQ;
		return true;
	}
	return false;
}

/*
 * Payload bytes of the wire work queued besides the message the next FPDU
 * belongs to (the Read Response or SQ WR in progress, else the one that
 * would start next), counted until @enough is reached.
 */
static uint64_t work_behind(const struct soft_qp *qp, uint64_t enough)
{
	bool irq_cur = qp->tx.kind == SOFT_TXK_IRQ ||
		       (qp->tx.kind == SOFT_TXK_NONE && qp->irq_count);
	bool sq_cur = !irq_cur;
	uint64_t b = 0;

	for (uint32_t i = irq_cur ? 1 : 0; i < qp->irq_count && b < enough; i++) {
		const struct soft_irq *q = &qp->irq[(qp->irq_head + i) % qp->irq_size];

		b += q->rr.size - q->off;
	}
	for (uint32_t k = qp->sq_tx; k < qp->sq_count && b < enough; k++) {
		const struct soft_swqe *w = &qp->sq[(qp->sq_head + k) % qp->sq_size];

		if (w->st == SOFT_WQE_DONE || w->opcode == RRR_WR_RDMA_READ ||
		    w->opcode == RRR_WR_REG_MR || w->opcode == RRR_WR_LOCAL_INV)
			continue;
		if (sq_cur) {
			sq_cur = false; /* the message in progress or next */
			continue;
		}
		b += w->total - w->done_bytes;
	}
	return b;
}

/*
 * Is the peer busy rather than waiting for the message we send? It is when
 * it sent bytes we have not read yet (Read Requests, calls: work behind
 * ours that our receive side has not queued yet), or when it has not taken
 * the last lead batch from our socket yet (its receive side is behind: a
 * shorter sendmsg would not let it start any sooner). Two ioctls per
 * lead-sized batch.
 */
static bool peer_busy(const struct soft_qp *qp, uint32_t lead)
{
	int unread = 0, unsent = 0;

	if (ioctl(qp->fd, FIONREAD, &unread) == 0 && unread > 0)
		return true;
	return ioctl(qp->fd, SIOCOUTQ, &unsent) == 0 && (uint32_t)unsent >= lead;
}

/*
 * Room for one more FPDU in the batch? A batch holds SQ FPDUs, or the
 * FPDUs of one Read Response (one guarded source range), or a Terminate;
 * at most tx_batch FPDUs. Lead batches: once a batch holds tx_lead bytes
 * it ends there if no other message of tx_lead bytes or more waits behind
 * the one being sent and the peer is not busy (peer_busy: nothing from it
 * unread, our last batch taken). Then the peer most likely waits for this message
 * (a call at depth 1, a bulk transfer nothing follows), and a short
 * sendmsg lets it start receiving while we checksum the next batch; with
 * work behind, batches stay large, which is what a busy stream needs
 * (fewer sendmsg calls and short writes per MiB). The check runs once a
 * batch (lead_busy or lead_cut remembers the answer, also across the
 * refill after a short write).
 *
 * Cache-sized batches: a batch that holds tx_bytes bytes (default 64 KiB)
 * takes no more FPDUs. Building an FPDU checksums its payload, which
 * brings those bytes into the CPU's caches; the sendmsg that follows
 * copies them into the socket. With 1-2 MiB batches the first FPDUs would
 * leave the caches again before the copy, and both passes would go to
 * memory; with one loopback-MSS FPDU per call the copy finds them (1 MiB
 * at depth 32: 10-25 % less CPU per I/O than 1-2 MiB batches).
 * Small FPDUs still share a call (sixteen 4 KiB Sends per 64 KiB).
 */
static bool batch_room(struct soft_qp *qp)
{
	uint32_t lead = qp->dev->tx_lead;

	if (!qp->tx.nf)
		return true;
	if (qp->tx.src_guard && !qp->tx.irq_more)
		return false;
	if (lead && !qp->tx.lead_busy) {
		if (qp->tx.lead_cut)
			return false; /* decided: the rest of it goes as it is */
		if (qp->tx.bytes >= lead) {
			if (work_behind(qp, lead) < lead && !peer_busy(qp, lead)) {
				qp->tx.lead_cut = true;
				qp->tx_lead_cuts++;
				return false;
			}
			qp->tx.lead_busy = true;
		}
	}
	if (qp->dev->tx_bytes && qp->tx.bytes >= qp->dev->tx_bytes)
		return false;
	return qp->tx.nf < (int)qp->dev->tx_batch &&
	       qp->tx.niov + SOFT_PAY_IOV + 2 <= (int)(sizeof(qp->txb.iov) / sizeof(qp->txb.iov[0]));
}

/* Drop the FPDUs of a partly written batch that are fully out, so the
 * batch can take new ones behind the rest (the next sendmsg carries both). */
static void batch_compact(struct soft_qp *qp)
{
	int k = qp->tx.fdone, rest = qp->tx.nf - k, idx = qp->tx.idx;
	uintptr_t h0 = (uintptr_t)qp->txb.hdr[k], h1 = (uintptr_t)qp->txb.hdr[qp->tx.nf];
	uintptr_t t0 = (uintptr_t)qp->txb.trl[k], t1 = (uintptr_t)qp->txb.trl[qp->tx.nf];

	for (int i = idx; i < qp->tx.niov; i++) {
		uintptr_t b = (uintptr_t)qp->txb.iov[i].iov_base;

		if (b >= h0 && b < h1)
			qp->txb.iov[i].iov_base = (void *)(b - (h0 - (uintptr_t)qp->txb.hdr[0]));
		else if (b >= t0 && b < t1)
			qp->txb.iov[i].iov_base = (void *)(b - (t0 - (uintptr_t)qp->txb.trl[0]));
	}
	for (int j = 0; j < k; j++)
		qp->tx.bytes -= qp->tx.f[j].len;
	memmove(qp->txb.hdr[0], qp->txb.hdr[k], (size_t)rest * sizeof(qp->txb.hdr[0]));
	memmove(qp->txb.trl[0], qp->txb.trl[k], (size_t)rest * sizeof(qp->txb.trl[0]));
	memmove(qp->txb.iov, qp->txb.iov + idx, (size_t)(qp->tx.niov - idx) * sizeof(qp->txb.iov[0]));
	memmove(qp->tx.f, qp->tx.f + k, (size_t)rest * sizeof(qp->tx.f[0]));
	for (int j = 0; j < rest; j++)
		qp->tx.f[j].end -= idx;
	qp->tx.niov -= idx;
	qp->tx.idx = 0;
	qp->tx.nf = rest;
	qp->tx.fdone = 0;
}

/* Does a WR among the first @k of the SQ that is not done name @key as a
 * local key? */
static bool earlier_uses(const struct soft_qp *qp, uint32_t k, uint32_t key)
{
	for (uint32_t j = 0; j < k; j++) {
		const struct soft_swqe *w = &qp->sq[(qp->sq_head + j) % qp->sq_size];

		if (w->st == SOFT_WQE_DONE)
			continue;
		for (uint32_t i = 0; i < w->num_sge; i++)
			if (w->sge[i].lkey == key)
				return true;
	}
	return false;
}

/* Run the LOCAL_INVs that nothing before them can still depend on, without
 * waiting for the wire (see the top of this file). */
static void eager_local_inv(struct soft_qp *qp)
{
	bool any = false, abort = false;

	for (uint32_t k = qp->sq_tx; k < qp->sq_count; k++) {
		struct soft_swqe *w = &qp->sq[(qp->sq_head + k) % qp->sq_size];
		int rc;

		if (w->st != SOFT_WQE_QUEUED)
			continue;
		if (w->opcode == RRR_WR_REG_MR || (w->flags & RRR_SEND_FENCE))
			break; /* keep order behind a registration or a fence */
		if (w->opcode != RRR_WR_LOCAL_INV || earlier_uses(qp, k, w->rkey))
			continue;
		rc = rrr__soft_invalidate(qp->dev, w->rkey, qp->base.pd, false);
		w->st = SOFT_WQE_DONE;
		w->status = rc ? RRR_WC_LOC_PROT_ERR : RRR_WC_SUCCESS;
		any = true;
		/* a Read Response half on the wire from that registration can
		 * neither go on nor be taken back: end the connection now, not
		 * when the peer's window opens again */
		if (!rc && qp->tx.active && qp->tx.src_guard && qp->tx.src_handle == w->rkey)
			abort = true;
	}
	if (any)
		rrr__soft_sq_complete(qp);
	if (abort)
		rrr__soft_qp_fatal(qp, 0, false);
}

void rrr__soft_tx(struct soft_qp *qp)
{
	if (qp->fd < 0)
		return;
	if (qp->state == SOFT_QP_RTS && (qp->tx.active || qp->irq_count)) {
		eager_local_inv(qp);
		if (qp->state != SOFT_QP_RTS)
			return;
	}
	for (;;) {
		if (qp->tx.active && qp->tx.fdone && qp->dev->tx_refill)
			batch_compact(qp);
		/* fill the batch */
		while (!qp->tx.active || (qp->tx.idx == 0 && batch_room(qp))) {
			if (qp->tx.term_pending) {
				if (qp->tx.active)
					break; /* after what is on the wire */
				rrr__soft_hdr_untagged(fhdr(qp), SOFT_OP_TERMINATE, true, 0,
						       SOFT_QN_TERM, qp->tx_msn_term++, 0, 4);
				rrr__soft_term_encode(fhdr(qp) + SOFT_HDR_UNTAGGED, qp->tx.term);
				fpdu_seal(qp, SOFT_HDR_UNTAGGED + 4, 0, 0, SOFT_TXK_NONE, true, 0);
				qp->tx.term_pending = false;
				qp->tx.term_sent = true;
				break;
			}
			if (qp->state != SOFT_QP_RTS || qp->tx_hold)
				break; /* tx_hold: an MPA rev 1 responder speaks second */
			if (qp->tx.kind == SOFT_TXK_IRQ ||
			    (qp->tx.kind == SOFT_TXK_NONE && qp->irq_count)) {
				if (qp->tx.active && !qp->tx.irq_more)
					break; /* not mixed with SQ FPDUs */
				if (!build_read_resp(qp))
					return;
				continue;
			}
			if (qp->tx.irq_more)
				break;
			if (!build_sq(qp)) {
				if (qp->state != SOFT_QP_RTS && !qp->tx.active)
					return; /* a local protection error ended it */
				break;
			}
		}
		if (!qp->tx.active)
			break;
		int rc = tx_write(qp);

		if (rc == -EAGAIN) {
			rrr__soft_qp_want_out(qp, true);
			return;
		}
		if (rc < 0) {
			tx_batch_reset(qp);
			qp->tx.term_pending = false;
			rrr__soft_qp_fatal(qp, 0, false);
			return;
		}
		batch_progress(qp);
	}
	rrr__soft_qp_want_out(qp, false);
}

/* Finish the FPDU on the wire and the Terminate, waiting at most ~200 ms. */
static void drain_tx(struct soft_qp *qp)
{
	for (int i = 0; i < 4 && qp->fd >= 0; i++) {
		struct pollfd p = { .fd = qp->fd, .events = POLLOUT };

		rrr__soft_tx(qp);
		if (!qp->tx.active && !qp->tx.term_pending)
			return;
		if (poll(&p, 1, 50) < 0)
			return;
	}
}

static void flush_all(struct soft_qp *qp, enum rrr_wc_status first, uint32_t vendor)
{
	bool given = false;

	for (uint32_t i = 0; i < qp->sq_count; i++) {
		struct soft_swqe *w = &qp->sq[(qp->sq_head + i) % qp->sq_size];

		if (w->st == SOFT_WQE_DONE)
			continue;
		w->st = SOFT_WQE_DONE;
		if (!given && first != RRR_WC_WR_FLUSH_ERR && i < qp->sq_tx) {
			w->status = first;
			w->vendor_err = vendor;
			given = true;
		} else {
			w->status = RRR_WC_WR_FLUSH_ERR;
		}
	}
	qp->sq_tx = qp->sq_count;
	qp->reads_out = 0;
	rrr__soft_sq_complete(qp);
	while (qp->rq_count) {
		struct rrr_wc wc = {
			.wr_id = qp->rq[qp->rq_head].wr_id,
			.status = RRR_WC_WR_FLUSH_ERR,
			.opcode = RRR_WC_RECV,
			.qp = &qp->base,
		};
		rrr__soft_cq_push(qp->rcq, &wc);
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
	}
	qp->irq_count = 0;
}

void rrr__soft_qp_fatal_status(struct soft_qp *qp, uint32_t term, bool send_term,
			       enum rrr_wc_status first, uint32_t vendor)
{
	if (qp->state == SOFT_QP_ERROR)
		return;
	qp->state = SOFT_QP_ERROR;
	qp->rx.st = SOFT_RX_DEAD;
	if (send_term)
		RRR_PROBE3(terminate, qp, term, 1);
	if (qp->fd >= 0) {
		if (send_term) {
			qp->tx.term_pending = true;
			qp->tx.term = term;
			qp->term_sent = SOFT_GET_FAIL | term;
		}
		drain_tx(qp);
		shutdown(qp->fd, (qp->tx.active || qp->tx.term_pending) ? SHUT_RDWR : SHUT_WR);
		rrr__soft_qp_ep_del(qp);
	}
	tx_batch_reset(qp);
	qp->tx.term_pending = false;
	flush_all(qp, first, vendor);
	if (qp->id && qp->fd >= 0)
		qp->conn_lost(qp->id, send_term ? -EPROTO : 0);
}

void rrr__soft_qp_fatal(struct soft_qp *qp, uint32_t term, bool send_term)
{
	rrr__soft_qp_fatal_status(qp, term, send_term, RRR_WC_WR_FLUSH_ERR, 0);
}
