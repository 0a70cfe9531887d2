/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/data.c - data transfer on a real device with long-lived
 * MRs: SEND/RECV (several SGEs), RDMA WRITE, RDMA READ, and the epoll fd.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers/pair.h"

Test(verbs_data, send_recv_sges, .timeout = 120)
{
	struct rrr_sge sge[2];
	struct rrr_send_wr wr;
	struct rrr_wc wc;
	struct vp p;
	int i;

	vp_open_connected(&p, NULL);
	for (i = 0; i < 4; i++)
		vp_post_recv(&p, 1, 100 + (uint64_t)i, (uint32_t)i * 1024, 1024);
	memcpy(p.cbuf + 10, "abc", 3);
	memcpy(p.cbuf + 5000, "defg", 4);
	sge[0] = (struct rrr_sge){(uintptr_t)p.cbuf + 10, 3, rrr_mr_lkey(p.cmr)};
	sge[1] = (struct rrr_sge){(uintptr_t)p.cbuf + 5000, 4, rrr_mr_lkey(p.cmr)};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RRR_WR_SEND;
	wr.flags = RRR_SEND_SIGNALED | RRR_SEND_SOLICITED;
	wr.sg_list = sge;
	wr.num_sge = 2;
	cr_assert_eq(rrr_qp_post_send(p.cqp, &wr, NULL), 0);
	wc = vp_wait_wc(p.ccq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1u);
	cr_assert_eq(wc.qp, p.cqp);
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.opcode, RRR_WC_RECV);
	cr_assert_eq(wc.wr_id, 100u);
	cr_assert_eq(wc.byte_len, 7u);
	cr_assert_eq(wc.qp, p.sqp);
	cr_assert_eq(wc.wc_flags & RRR_WC_WITH_INV, 0u);
	cr_assert_eq(memcmp(p.sbuf, "abcdefg", 7), 0);
	vp_close(&p);
}

Test(verbs_data, write_and_read, .timeout = 120)
{
	struct rrr_wc wc;
	struct vp p;
	uint32_t i;

	vp_open_connected(&p, NULL);
	for (i = 0; i < 8192; i++)
		p.cbuf[i] = (uint8_t)(i * 7 + 1);
	wc = vp_client_op(&p, RRR_WR_RDMA_WRITE, 2, 0, 8192, (uintptr_t)p.sbuf + 4096,
			  rrr_mr_rkey(p.smr));
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, RRR_WC_RDMA_WRITE);
	cr_assert_eq(memcmp(p.sbuf + 4096, p.cbuf, 8192), 0);

	/* READ it back into another part of the client buffer */
	wc = vp_client_op(&p, RRR_WR_RDMA_READ, 3, 32768, 8192, (uintptr_t)p.sbuf + 4096,
			  rrr_mr_rkey(p.smr));
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, RRR_WC_RDMA_READ);
	cr_assert_eq(memcmp(p.cbuf + 32768, p.cbuf, 8192), 0);
	vp_close(&p);
}

Test(verbs_data, cq_fd_wakes_epoll_waiter, .timeout = 120)
{
	struct pollfd pfd;
	struct rrr_wc wc;
	struct vp p;
	int rc;

	vp_open_connected(&p, NULL);
	vp_post_recv(&p, 1, 1, 0, 64);
	cr_assert_eq(rrr_cq_poll(p.scq, &wc, 1), 0);
	cr_assert_eq(rrr_cq_arm(p.scq), 0);
	pfd.fd = rrr_cq_fd(p.scq);
	pfd.events = POLLIN;
	cr_assert_geq(pfd.fd, 0);
	vp_post_send(&p, 0, 2, 0, 16);
	rc = poll(&pfd, 1, VP_TIMEOUT_MS);
	cr_assert_eq(rc, 1, "the CQ fd did not become readable");
	cr_assert_eq(rrr_cq_ack_event(p.scq), 0);
	cr_assert_eq(rrr_cq_poll(p.scq, &wc, 1), 1);
	cr_assert_eq(wc.opcode, RRR_WC_RECV);
	vp_close(&p);
}

Test(verbs_data, bad_sge_count_rejected, .timeout = 60)
{
	struct rrr_sge sge[8];
	struct rrr_send_wr wr, *bad = NULL;
	struct vp p;

	vp_open_connected(&p, NULL);
	memset(sge, 0, sizeof(sge));
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_SEND;
	wr.sg_list = sge;
	wr.num_sge = 8; /* the QP was created with 4 */
	cr_assert_eq(rrr_qp_post_send(p.cqp, &wr, &bad), -EINVAL);
	cr_assert_eq(bad, &wr);
	vp_close(&p);
}
