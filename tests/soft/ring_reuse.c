/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/ring_reuse.c - an empty send queue and an empty completion
 * queue start again at their first entry (transport/soft/qp_state.c,
 * progress.c): a QP with one WR at a time keeps using the same entries,
 * and so the same few pages, instead of walking its whole rings, which
 * with thousands of QPs is what costs (docs/scaling.md). The client
 * writes the sink in 16 RDMA WRITEs, one at a time, and after each one's
 * completion both ring heads are back at 0; every byte lands.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define LEN (64 * 1024)
#define PIECES 16

static int sink(struct th_ep *e, void *arg)
{
	uint64_t heads;

	TH_CHECK(th_write_sink(e, LEN, 9, &heads, sizeof(heads)) == 0);
	*(uint64_t *)arg = heads;
	return 0;
}

static int writer(struct th_ep *e, void *arg)
{
	uint8_t *src = malloc(LEN);
	struct soft_qp *qp = soft_qp(e->qp);
	struct rrr_mr *mr;
	struct th_key k;
	uint64_t moved = 0; /* WRs after which a head was not 0 */
	size_t piece = LEN / PIECES;

	(void)arg;
	TH_CHECK(src);
	th_fill(src, LEN, 9);
	TH_CHECK(rrr_mr_reg(e->pd, src, LEN, 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	for (int i = 0; i <= PIECES; i++) {
		struct rrr_sge sge = {(uintptr_t)src + (size_t)i * piece, (uint32_t)piece,
				      rrr_mr_lkey(mr)};
		struct rrr_send_wr wr = {.wr_id = (uint64_t)i + 1, .opcode = RRR_WR_RDMA_WRITE,
					 .flags = RRR_SEND_SIGNALED, .sg_list = &sge,
					 .num_sge = 1};
		struct rrr_wc wc;
		uint32_t sq_head, cq_head;

		if (i == PIECES) { /* the last: a SEND that tells the sink */
			sge = (struct rrr_sge){(uintptr_t)src, 4, rrr_mr_lkey(mr)};
			wr.opcode = RRR_WR_SEND;
		} else {
			wr.u.rdma.remote_addr = k.addr + (size_t)i * piece;
			wr.u.rdma.rkey = k.rkey;
		}
		TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.status == RRR_WC_SUCCESS && wc.wr_id == (uint64_t)i + 1);
		pthread_mutex_lock(&qp->lock);
		sq_head = qp->sq_head;
		pthread_mutex_unlock(&qp->lock);
		pthread_mutex_lock(&qp->scq->lock);
		cq_head = qp->scq->head;
		pthread_mutex_unlock(&qp->scq->lock);
		if (sq_head || cq_head)
			moved++;
	}
	TH_CHECK(th_oob_send(e->oob, &moved, sizeof(moved)) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

Test(soft_rings, one_wr_at_a_time_reuses_the_first_entries, .timeout = 60)
{
	uint64_t moved = 99;

	cr_assert_eq(th_run_pair(NULL, sink, writer, &moved), 0);
	cr_assert_eq(moved, 0, "after %llu of %d WRs a ring head was not back at 0",
		     (unsigned long long)moved, PIECES + 1);
}
