/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/rx.c - the receive engine: header checks and direct placement.
 *
 * Normal operation (under qp->lock): the engine alternates between two
 * states. HDR reads the 20 bytes an untagged header has (no FPDU is
 * shorter: a tagged header has 16 and its CRC field follows; those 4 bytes
 * are placed like payload, see take()) and checks the whole header before
 * one payload byte is placed: versions, opcode/queue, MSN and message
 * offset, receive buffer space, and for tagged segments the STag (state,
 * key, PD, rights, bounds of [TO, TO+len)). PAY then readv()s the payload
 * straight into its destination - the registration's chunks for tagged
 * segments, the posted receive buffer for Sends (each SGE is an address in
 * its registration's virtual range, mapped through the chunk list as an
 * lkey is: a registration with gaps is not one range of memory), a small
 * inline buffer for Read Requests and Terminates - followed in the same
 * iovec list by the pad, the CRC and the first 20 bytes of the next FPDU,
 * so a tagged FPDU costs one system call in steady state. A payload spread
 * over more pieces than one readv takes (SOFT_PAY_IOV) is read in several
 * calls, the trailer only behind its last piece. Small messages go through
 * a stage instead (the calling thread's; see HDR_READ below). The CRC is
 * computed over the placed bytes and checked when the trailer is complete
 * (rrr__soft_mpa_trailer_ok, mpa.c); only then is the segment's effect
 * reported (completion, invalidation, read response).
 *
 * Safety: before every readv into a registration (or copy from the stage)
 * the engine takes the in-flight guard of stag.c (re-checking state and
 * key) and drops it after the call, so an invalidation waits at most one
 * readv and nothing is placed after it completed.
 *
 * Calls run one way: qp.c and progress.c call rrr__soft_rx(); it calls
 * down into the transmit engine (tx.c: a Read Response to send, and the
 * QP's error state, rrr__soft_qp_fatal), qp_state.c (send-queue
 * completions), the CQ, the STag table and the codecs, never back up.
 *
 * Recovery: every violation calls rrr__soft_qp_fatal() (tx.c) with the Terminate
 * layer/type/code of RFC 5040/5041 (or MPA's for CRC errors); the QP stops
 * reading at once. End of stream or a socket error moves the QP to error
 * without a Terminate. A peer's Terminate moves the QP to error; the WR it
 * answers completes with the matching remote error, the rest are flushed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/probes.h"
#include "soft.h"

enum { K_NONE = 0, K_TAGGED, K_RECV, K_INLINE };

#define INL_MAX 64u

static void term(struct soft_qp *qp, uint32_t code)
{
	rrr__soft_qp_fatal(qp, code, true);
}

#define T_RDMAP_OP(c) SOFT_TERM(SOFT_TERM_LAYER_RDMAP, SOFT_TERM_RDMAP_REM_OP, c)
#define T_RDMAP_PROT(c) SOFT_TERM(SOFT_TERM_LAYER_RDMAP, SOFT_TERM_RDMAP_REM_PROT, c)
#define T_DDP_T(c) SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_TAGGED, c)
#define T_DDP_U(c) SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_UNTAGGED, c)
#define T_LLP(c) SOFT_TERM(SOFT_TERM_LAYER_LLP, 0, c)

static uint32_t inv_term(int rc)
{
	return rc == -EACCES ? T_RDMAP_PROT(SOFT_ECODE_STAG_PD)
	       : rc == -EPERM ? T_RDMAP_OP(SOFT_ECODE_CANT_INV)
			      : T_RDMAP_PROT(SOFT_ECODE_INV_STAG);
}

/* The READ awaiting a response: the oldest SQ WR in WAIT_RESP. */
static struct soft_swqe *read_head(struct soft_qp *qp)
{
	for (uint32_t i = 0; i < qp->sq_tx && i < qp->sq_count; i++) {
		struct soft_swqe *w = &qp->sq[(qp->sq_head + i) % qp->sq_size];

		if (w->opcode == RRR_WR_RDMA_READ &&
		    (w->st == SOFT_WQE_WAIT_RESP || w->st == SOFT_WQE_ACTIVE))
			return w;
	}
	return NULL;
}

/* Header complete: check it; set up the payload phase. 0 ok, -1 QP dead. */
static int hdr_process(struct soft_qp *qp)
{
	struct soft_hdr *h = &qp->rx.h;
	uint32_t hl, code;

	if (soft_fault_point(qp)) {
		/* injected drop (fault.c): as a lost connection */
		rrr__soft_qp_fatal(qp, 0, false);
		return -1;
	}
	if (rrr__soft_hdr_decode(qp->rx.hb, h)) {
		term(qp, T_LLP(SOFT_ECODE_LLP_BAD_ULPDU));
		return -1;
	}
	if (h->ddp_ver != 1) {
		term(qp, h->tagged ? T_DDP_T(SOFT_ECODE_T_BAD_VER) : T_DDP_U(SOFT_ECODE_UT_BAD_VER));
		return -1;
	}
	if (h->rdmap_ver != 1) {
		term(qp, T_RDMAP_OP(SOFT_ECODE_BAD_VERSION));
		return -1;
	}
	hl = h->tagged ? SOFT_HDR_TAGGED : SOFT_HDR_UNTAGGED;
	qp->rx.pay_len = h->ulpdu_len - (hl - 2);
	qp->rx.pay_done = 0;
	qp->rx.trl_len = soft_mpa_pad(h->ulpdu_len) + 4; /* CRC field always present */
	qp->rx.trl_have = 0;
	qp->rx.crc = qp->crc ? rrr_crc32c(0, qp->rx.hb, hl) : 0;
	qp->rx.kind = K_NONE;

	if (h->tagged) {
		struct soft_mr *mr;

		if (h->opcode == SOFT_OP_READ_RESP) {
			struct soft_swqe *w = read_head(qp);

			if (!w || w->st != SOFT_WQE_WAIT_RESP) {
				term(qp, T_RDMAP_OP(SOFT_ECODE_UNEXP_OP));
				return -1;
			}
			if (h->stag != w->sge[0].lkey) {
				term(qp, T_DDP_T(SOFT_ECODE_INV_STAG));
				return -1;
			}
			if (h->to != w->sge[0].addr + w->done_bytes ||
			    qp->rx.pay_len > w->total - w->done_bytes ||
			    (h->last && w->done_bytes + qp->rx.pay_len != w->total)) {
				term(qp, T_DDP_T(SOFT_ECODE_BOUNDS));
				return -1;
			}
		} else if (h->opcode != SOFT_OP_WRITE) {
			term(qp, T_RDMAP_OP(SOFT_ECODE_UNEXP_OP));
			return -1;
		}
		if (qp->rx.pay_len) {
			code = rrr__soft_mr_get(qp->dev, h->stag, qp->base.pd,
						RRR_ACCESS_REMOTE_WRITE, h->to, qp->rx.pay_len, false,
						&mr);
			if (code) {
				term(qp, code & ~SOFT_GET_FAIL);
				return -1;
			}
			rrr__soft_mr_put(mr);
			qp->rx.kind = K_TAGGED;
		}
		qp->rx.st = SOFT_RX_PAY;
		return 0;
	}

	switch (h->qn) {
	case SOFT_QN_SEND:
		if (h->opcode != SOFT_OP_SEND && h->opcode != SOFT_OP_SEND_INV &&
		    h->opcode != SOFT_OP_SEND_SE && h->opcode != SOFT_OP_SEND_SE_INV) {
			term(qp, T_RDMAP_OP(SOFT_ECODE_UNEXP_OP));
			return -1;
		}
		if (h->msn != qp->rx.msn_send) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_MSN_RANGE));
			return -1;
		}
		if (!qp->rx.in_msg) {
			if (!qp->rq_count) {
				term(qp, T_DDP_U(SOFT_ECODE_UT_NO_BUF));
				return -1;
			}
			/* refuse a bad invalidation before placing anything */
			if (h->opcode == SOFT_OP_SEND_INV || h->opcode == SOFT_OP_SEND_SE_INV) {
				int rc = rrr__soft_inv_check(qp->dev, h->stag, qp->base.pd);

				if (rc) {
					term(qp, inv_term(rc));
					return -1;
				}
			}
			qp->rx.in_msg = true;
			qp->rx.msg_off = 0;
		}
		if (h->mo != qp->rx.msg_off) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_INV_MO));
			return -1;
		}
		if (qp->rx.pay_len > qp->rq[qp->rq_head].total - qp->rx.msg_off) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_TOO_LONG));
			return -1;
		}
		qp->rx.kind = K_RECV;
		break;
	case SOFT_QN_READ:
		if (h->opcode != SOFT_OP_READ_REQ) {
			term(qp, T_RDMAP_OP(SOFT_ECODE_UNEXP_OP));
			return -1;
		}
		if (h->msn != qp->rx.msn_read) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_MSN_RANGE));
			return -1;
		}
		if (qp->rx.pay_len != SOFT_READ_REQ_LEN || !h->last || h->mo != 0) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_TOO_LONG));
			return -1;
		}
		qp->rx.kind = K_INLINE;
		break;
	case SOFT_QN_TERM:
		if (h->opcode != SOFT_OP_TERMINATE) {
			term(qp, T_RDMAP_OP(SOFT_ECODE_UNEXP_OP));
			return -1;
		}
		if (qp->rx.pay_len > INL_MAX || !h->last) {
			term(qp, T_DDP_U(SOFT_ECODE_UT_TOO_LONG));
			return -1;
		}
		qp->rx.kind = K_INLINE;
		break;
	default:
		term(qp, T_DDP_U(SOFT_ECODE_UT_INV_QN));
		return -1;
	}
	if (!qp->rx.pay_len)
		qp->rx.kind = K_NONE;
	qp->rx.st = SOFT_RX_PAY;
	return 0;
}

static void complete_recv(struct soft_qp *qp)
{
	struct soft_hdr *h = &qp->rx.h;
	struct soft_rwqe *r = &qp->rq[qp->rq_head];
	struct rrr_wc wc = {
		.wr_id = r->wr_id,
		.status = RRR_WC_SUCCESS,
		.opcode = RRR_WC_RECV,
		.byte_len = (uint32_t)qp->rx.msg_off,
		.qp = &qp->base,
	};

	if (h->opcode == SOFT_OP_SEND_INV || h->opcode == SOFT_OP_SEND_SE_INV) {
		int rc = rrr__soft_invalidate(qp->dev, h->stag, qp->base.pd, false);

		if (rc) {
			term(qp, inv_term(rc));
			return;
		}
		wc.wc_flags |= RRR_WC_WITH_INV;
		wc.invalidated_rkey = h->stag;
	}
	if (h->opcode == SOFT_OP_SEND_SE || h->opcode == SOFT_OP_SEND_SE_INV)
		wc.wc_flags |= RRR_WC_SOLICITED;
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	qp->rx.in_msg = false;
	qp->rx.msn_send++;
	rrr__soft_cq_push(qp->rcq, &wc);
}

static void got_read_req(struct soft_qp *qp, const uint8_t *b)
{
	struct soft_irq *q;
	struct soft_read_req rr;
	struct soft_mr *mr = NULL;
	uint32_t code;

	rrr__soft_read_req_decode(b, &rr);
	qp->rx.msn_read++;
	if (qp->irq_count >= qp->ird || qp->irq_count >= qp->irq_size) {
		term(qp, T_RDMAP_OP(SOFT_ECODE_UNSPEC));
		return;
	}
	if (rr.size) {
		code = rrr__soft_mr_get(qp->dev, rr.src_stag, qp->base.pd, RRR_ACCESS_REMOTE_READ,
					rr.src_to, rr.size, true, &mr);
		if (code) {
			term(qp, code & ~SOFT_GET_FAIL);
			return;
		}
		rrr__soft_mr_put(mr);
	}
	q = &qp->irq[(qp->irq_head + qp->irq_count) % qp->irq_size];
	q->rr = rr;
	q->off = 0;
	qp->irq_count++;
	qp->rx_read_reqs++;
}

/* The FPDU is complete and its CRC good: act on it. */
static void fpdu_complete(struct soft_qp *qp, const uint8_t *inl)
{
	struct soft_hdr *h = &qp->rx.h;

	if (h->tagged) {
		qp->bytes_placed += qp->rx.pay_len;
		if (h->opcode == SOFT_OP_READ_RESP) {
			struct soft_swqe *w = read_head(qp);

			w->done_bytes += qp->rx.pay_len;
			if (h->last) {
				w->st = SOFT_WQE_DONE;
				qp->reads_out--;
				rrr__soft_sq_complete(qp);
				rrr__soft_tx(qp);
			}
		}
		return;
	}
	switch (h->qn) {
	case SOFT_QN_SEND:
		qp->rx.msg_off += qp->rx.pay_len;
		if (h->last)
			complete_recv(qp);
		break;
	case SOFT_QN_READ:
		got_read_req(qp, inl);
		if (qp->state == SOFT_QP_RTS)
			rrr__soft_tx(qp);
		break;
	case SOFT_QN_TERM: {
		uint32_t t = qp->rx.pay_len >= 4 ? rrr__soft_term_decode(inl) : 0;

		qp->rx.msn_term++;
		qp->term_rcvd = SOFT_GET_FAIL | t;
		RRR_PROBE3(terminate, qp, t, 0);
		rrr__soft_qp_fatal_status(qp, 0, false, rrr__soft_term_wc_status(t), t);
		break;
	}
	}
}

/* Payload destinations for the bytes still to come; guards taken. */
static int pay_iov(struct soft_qp *qp, struct iovec *iov, struct soft_mr **guards, int *ng,
		   uint8_t *inl)
{
	uint32_t left = qp->rx.pay_len - qp->rx.pay_done;
	uint32_t code;
	int n = 0;

	*ng = 0;
	if (!left)
		return 0;
	switch (qp->rx.kind) {
	case K_TAGGED: {
		uint64_t to = qp->rx.h.to + qp->rx.pay_done;

		code = rrr__soft_mr_get(qp->dev, qp->rx.h.stag, qp->base.pd,
					RRR_ACCESS_REMOTE_WRITE, to, left, false, &guards[0]);
		if (code) {
			term(qp, code & ~SOFT_GET_FAIL);
			return -1;
		}
		*ng = 1;
		return rrr__soft_mr_iov(guards[0], to, left, iov, SOFT_PAY_IOV);
	}
	case K_RECV: {
		struct soft_rwqe *r = &qp->rq[qp->rq_head];
		uint64_t off = qp->rx.msg_off + qp->rx.pay_done;

		for (uint32_t i = 0; i < r->num_sge && left && n < SOFT_PAY_IOV; i++) {
			uint64_t l = r->sge[i].length, got = 0;
			int k;

			if (off >= l) {
				off -= l;
				continue;
			}
			uint64_t take = l - off;

			if (take > left)
				take = left;
			code = rrr__soft_mr_get(qp->dev, r->sge[i].lkey, qp->base.pd,
						RRR_ACCESS_LOCAL_WRITE, r->sge[i].addr + off, take,
						false, &guards[*ng]);
			if (code) {
				/* the local buffer's registration went away: local error */
				for (int g = 0; g < *ng; g++)
					rrr__soft_mr_put(guards[g]);
				*ng = 0;
				rrr__soft_qp_fatal_status(qp, T_RDMAP_OP(SOFT_ECODE_CATA_STREAM),
							  true, RRR_WC_LOC_PROT_ERR, 0);
				return -1;
			}
			/* the SGE's address is in the registration's virtual range:
			 * its bytes are where the chunk list says, not at addr */
			k = rrr__soft_mr_iov(guards[*ng], r->sge[i].addr + off, take, iov + n,
					     SOFT_PAY_IOV - n);
			(*ng)++;
			for (int j = 0; j < k; j++)
				got += iov[n + j].iov_len;
			n += k;
			left -= (uint32_t)got;
			off = 0;
			if (got < take)
				break; /* out of iovecs: the rest next time */
		}
		return n;
	}
	case K_INLINE:
		iov[0].iov_base = inl + qp->rx.pay_done;
		iov[0].iov_len = left;
		return 1;
	}
	return 0;
}

/* Credit @n bytes just placed in @iov (payload entries first, @np of them),
 * then the trailer; returns the bytes left over (the next FPDU's). */
static size_t account(struct soft_qp *qp, const struct iovec *iov, int np, size_t n)
{
	size_t left = n;

	for (int i = 0; i < np && left; i++) {
		size_t t = left < iov[i].iov_len ? left : iov[i].iov_len;

		if (qp->crc)
			qp->rx.crc = rrr_crc32c(qp->rx.crc, iov[i].iov_base, t);
		qp->rx.pay_done += (uint32_t)t;
		left -= t;
	}
	if (left && qp->rx.trl_have < qp->rx.trl_len) {
		size_t t = qp->rx.trl_len - qp->rx.trl_have;

		if (t > left)
			t = left;
		qp->rx.trl_have += (uint32_t)t;
		left -= t;
	}
	return left;
}

static bool fpdu_done(const struct soft_qp *qp)
{
	return qp->rx.pay_done == qp->rx.pay_len && qp->rx.trl_have == qp->rx.trl_len;
}

/* The FPDU is all here: check the CRC, act on it, expect a header. 0 ok,
 * -1 the QP is dead. */
static int fpdu_end(struct soft_qp *qp)
{
	/* without CRC the field is present but not checked (mpa.c) */
	if (qp->crc && !rrr__soft_mpa_trailer_ok(qp->rx.crc, qp->rx.trl, qp->rx.trl_len - 4)) {
		term(qp, T_LLP(SOFT_ECODE_LLP_CRC));
		return -1;
	}
	qp->rx.small = (uint32_t)qp->rx.h.ulpdu_len + 2u + qp->rx.trl_len <= SOFT_RX_SMALL;
	bool held = qp->tx_hold;

	qp->tx_hold = false; /* an MPA rev 1 responder may send from now on */
	fpdu_complete(qp, qp->rx.inl);
	qp->rx.st = SOFT_RX_HDR;
	qp->rx.need = SOFT_HDR_TAGGED;
	qp->rx.have = 0;
	if (held && qp->state == SOFT_QP_RTS)
		rrr__soft_tx(qp);
	return qp->state == SOFT_QP_RTS ? 0 : -1;
}

/* Trailer destination for the bytes still missing, after @np payload
 * entries covering @covered bytes; 1 if added. The trailer follows only
 * when those entries reach the end of the payload: a payload spread over
 * more chunks than one call's iovecs takes several calls, and its bytes
 * must never land in the trailer (or the next header). */
static int trl_iov(struct soft_qp *qp, struct iovec *iov, const struct iovec *pay, int np)
{
	uint64_t covered = 0;

	for (int i = 0; i < np; i++)
		covered += pay[i].iov_len;
	if (covered < (uint64_t)(qp->rx.pay_len - qp->rx.pay_done))
		return 0;
	if (qp->rx.trl_have >= qp->rx.trl_len)
		return 0;
	iov->iov_base = qp->rx.trl + qp->rx.trl_have;
	iov->iov_len = qp->rx.trl_len - qp->rx.trl_have;
	return 1;
}

/*
 * Bytes of the current FPDU that were read before their destination was
 * known (the 4 that follow a tagged header in a HDR_READ, or a staged read
 * of small messages): place them like the readv below would have, under
 * the same guards, and finish the FPDU if they complete it. Returns the
 * bytes taken (at most the rest of this FPDU), or -1 when the QP died.
 */
static ssize_t take(struct soft_qp *qp, const uint8_t *src, size_t n)
{
	struct iovec iov[SOFT_PAY_IOV + 1];
	struct soft_mr *guards[SOFT_MAX_SGE];
	int ng = 0, np, niov;
	size_t off = 0;

	np = pay_iov(qp, iov, guards, &ng, qp->rx.inl);
	if (np < 0)
		return -1;
	niov = np + trl_iov(qp, &iov[np], iov, np);
	for (int i = 0; i < niov && off < n; i++) {
		size_t t = n - off < iov[i].iov_len ? n - off : iov[i].iov_len;

		memcpy(iov[i].iov_base, src + off, t);
		off += t;
	}
	for (int g = 0; g < ng; g++)
		rrr__soft_mr_put(guards[g]);
	(void)account(qp, iov, np, off);
	if (fpdu_done(qp) && fpdu_end(qp))
		return -1;
	return (ssize_t)off;
}

/* What a read or readv of the socket that returned @n means: 1 carry on
 * with the bytes, 0 try again (EINTR), -1 stop (nothing more to read now:
 * epoll brings us back; or end of stream or a socket error: the QP is
 * moved to error without a Terminate). */
static int rd_ok(struct soft_qp *qp, ssize_t n)
{
	if (n > 0)
		return 1;
	if (n < 0 && errno == EINTR)
		return 0;
	if (n == 0 || errno != EAGAIN)
		rrr__soft_qp_fatal(qp, 0, false);
	return -1;
}

/*
 * Every header read asks for HDR_READ bytes: an untagged header is that
 * long and no FPDU is shorter (a tagged header with no payload still has
 * its 4-byte CRC field), so the read never takes a byte of the FPDU after
 * this one, an untagged header arrives in one system call instead of two,
 * and for a tagged header the last 4 bytes are its first payload or
 * trailer bytes (take).
 *
 * Small messages (the last FPDU was at most SOFT_RX_SMALL bytes) are read
 * differently: one read of up to SOFT_RX_STAGE bytes into a stage (the
 * calling thread's, below), from which headers, payloads and trailers are
 * then copied (payloads into their destinations under the same checks and
 * guards as a readv). A 4 KiB request or reply then costs one system call
 * instead of two, and several queued small messages one in all. Bulk
 * streams keep direct placement: a large FPDU switches back to header
 * reads and a readv of its payload straight into the registration.
 */
#define HDR_READ SOFT_HDR_UNTAGGED

/* The QP stopped receiving (error, Terminate): nothing more to read. */
static bool rx_dead(const struct soft_qp *qp)
{
	return qp->state != SOFT_QP_RTS || qp->rx.st == SOFT_RX_DEAD;
}

/*
 * Where a read of small messages goes: the calling thread's stage, not the
 * QP's. A thread that drives many QPs (a server worker, a client group
 * thread) then reads every QP's small messages into the same few pages,
 * which stay in its cache and TLB, where a stage per QP adds two pages per
 * connection that each call finds cold once thousands of connections take
 * turns. Bytes still staged when the engine stops (its budget spent) move
 * to the QP's own stage (rrr__soft_rx), so nothing outlives one run in the
 * thread's. NULL, and the QP's stage is used, when the thread has none and
 * none can be made, or while another QP's run on this thread holds it.
 */
static pthread_key_t stage_key;
static pthread_once_t stage_once = PTHREAD_ONCE_INIT;
static bool stage_key_ok;

struct thread_stage {
	bool busy;
	uint8_t buf[SOFT_RX_STAGE];
};

static void stage_key_make(void)
{
	stage_key_ok = pthread_key_create(&stage_key, free) == 0;
}

static struct thread_stage *thread_stage_take(void)
{
	struct thread_stage *ts;

	pthread_once(&stage_once, stage_key_make);
	if (!stage_key_ok)
		return NULL;
	ts = pthread_getspecific(stage_key);
	if (!ts) {
		ts = malloc(sizeof(*ts));
		if (!ts)
			return NULL;
		if (pthread_setspecific(stage_key, ts)) {
			free(ts);
			return NULL;
		}
		ts->busy = false;
	}
	if (ts->busy)
		return NULL;
	ts->busy = true;
	return ts;
}

static bool rx_run(struct soft_qp *qp, uint8_t *tstage)
{
	int budget = 64;
	bool drained = false; /* a read in this call came back short */

	while (qp->state == SOFT_QP_RTS && qp->rx.st != SOFT_RX_DEAD && budget-- > 0) {
		/* staged bytes first */
		if (qp->rx.st_off < qp->rx.st_len) {
			const uint8_t *src = qp->rx.stp + qp->rx.st_off;
			size_t avail = qp->rx.st_len - qp->rx.st_off;

			if (qp->rx.st == SOFT_RX_HDR) {
				size_t t = HDR_READ - qp->rx.have;

				if (t > avail)
					t = avail;
				memcpy(qp->rx.hb + qp->rx.have, src, t);
				qp->rx.have += (uint32_t)t;
				qp->rx.st_off += (uint32_t)t;
				if (qp->rx.have >= SOFT_HDR_TAGGED)
					qp->rx.need = (uint32_t)rrr__soft_hdr_len(qp->rx.hb);
				if (qp->rx.have < qp->rx.need)
					continue;
				/* a tagged header's 4 extra bytes go back to the stage */
				qp->rx.st_off -= qp->rx.have - qp->rx.need;
				qp->rx.have = qp->rx.need;
				if (hdr_process(qp))
					return rx_dead(qp);
				continue;
			}
			ssize_t k = take(qp, src, avail);

			if (k < 0)
				return rx_dead(qp);
			qp->rx.st_off += (uint32_t)k;
			continue;
		}
		qp->rx.st_off = qp->rx.st_len = 0;
		if (qp->rx.st == SOFT_RX_HDR) {
			if (qp->rx.have < qp->rx.need) {
				if (drained)
					return true; /* epoll brings us back */
				if (qp->rx.small && qp->rx.have == 0) {
					qp->rx.stp = tstage ? tstage : qp->rxb.stage;
					ssize_t n = read(qp->fd, qp->rx.stp, SOFT_RX_STAGE);
					int ok = rd_ok(qp, n);

					if (ok <= 0) {
						if (ok == 0)
							continue;
						return true;
					}
					qp->rx.st_len = (uint32_t)n;
					drained = n < (ssize_t)SOFT_RX_STAGE;
					continue;
				}
				size_t ask = HDR_READ - qp->rx.have;
				ssize_t n = read(qp->fd, qp->rx.hb + qp->rx.have, ask);
				int ok = rd_ok(qp, n);

				if (ok <= 0) {
					if (ok == 0)
						continue;
					return true;
				}
				qp->rx.have += (uint32_t)n;
				if (qp->rx.have >= SOFT_HDR_TAGGED)
					qp->rx.need = (uint32_t)rrr__soft_hdr_len(qp->rx.hb);
				drained = (size_t)n < ask;
				continue;
			}
			uint32_t early = qp->rx.have - qp->rx.need;

			if (hdr_process(qp))
				return rx_dead(qp);
			if (early && take(qp, qp->rx.hb + qp->rx.need, early) < 0)
				return rx_dead(qp);
			continue;
		}
		/* PAY: payload, trailer, and the next FPDU's first HDR_READ bytes */
		struct iovec iov[SOFT_PAY_IOV + 3];
		struct soft_mr *guards[SOFT_MAX_SGE];
		uint8_t nexthdr[HDR_READ];
		int ng = 0, np, niov, ntrl;
		ssize_t n;

		if (drained)
			return true;
		np = pay_iov(qp, iov, guards, &ng, qp->rx.inl);
		if (np < 0)
			return rx_dead(qp);
		ntrl = trl_iov(qp, &iov[np], iov, np);
		niov = np + ntrl;
		if (ntrl || qp->rx.trl_have == qp->rx.trl_len) {
			iov[niov].iov_base = nexthdr;
			iov[niov].iov_len = sizeof(nexthdr);
			niov++;
		}
		size_t want = 0;

		for (int i = 0; i < niov; i++)
			want += iov[i].iov_len;
		n = readv(qp->fd, iov, niov);
		for (int g = 0; g < ng; g++)
			rrr__soft_mr_put(guards[g]);
		int ok = rd_ok(qp, n);

		if (ok <= 0) {
			if (ok == 0)
				continue;
			return true;
		}
		size_t left = account(qp, iov, np, (size_t)n);

		drained = (size_t)n < want;
		if (!fpdu_done(qp))
			continue;
		if (fpdu_end(qp))
			return rx_dead(qp);
		memcpy(qp->rx.hb, nexthdr, left);
		qp->rx.have = (uint32_t)left;
		if (left >= SOFT_HDR_TAGGED)
			qp->rx.need = (uint32_t)rrr__soft_hdr_len(qp->rx.hb);
	}
	return rx_dead(qp); /* budget spent: staged or unread bytes may remain */
}

void rrr__soft_rx(struct soft_qp *qp)
{
	/* not idle while it runs: an arm meanwhile must not skip a step */
	struct thread_stage *ts = thread_stage_take();
	bool idle;

	atomic_store_explicit(&qp->rx_idle, false, memory_order_relaxed);
	idle = rx_run(qp, ts ? ts->buf : NULL);
	if (ts) {
		if (qp->rx.st_off < qp->rx.st_len && qp->rx.stp == ts->buf) {
			memcpy(qp->rxb.stage, ts->buf + qp->rx.st_off, qp->rx.st_len - qp->rx.st_off);
			qp->rx.st_len -= qp->rx.st_off;
			qp->rx.st_off = 0;
			qp->rx.stp = qp->rxb.stage;
		}
		ts->busy = false;
	}
	atomic_store_explicit(&qp->rx_idle, idle, memory_order_release);
}
