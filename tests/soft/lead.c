/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/lead.c - lead batches (device option tx_lead, transport/soft/
 * tx.c batch_room): a message that is all a QP has to send goes out in
 * sendmsg calls of about tx_lead bytes, so the peer starts receiving while
 * the sender checksums the rest; a message with other messages queued
 * behind it keeps full batches. Both are checked through the QP's
 * counters (tx_lead_cuts, tx_calls), and every byte is checked to land.
 *
 * Also cache-sized batches (device option tx_bytes, the same function): a
 * batch takes no more FPDUs once it holds tx_bytes bytes, so a 1 MiB WRITE
 * goes in at least 1 MiB / (tx_bytes + one FPDU) sendmsg calls.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define LEN (1024 * 1024)
#define NPIECES 8 /* the queued case: LEN in NPIECES WRITEs, one chain */

struct lead_arg {
	int pieces; /* 1: one WRITE of LEN; NPIECES: LEN in pieces, one chain */
	uint64_t cuts, calls; /* the client's counters, reported over oob */
};

static int lead_server(struct th_ep *e, void *arg)
{
	struct lead_arg *a = arg;
	uint64_t ctr[2];

	TH_CHECK(th_write_sink(e, LEN, 5, ctr, sizeof(ctr)) == 0);
	a->cuts = ctr[0];
	a->calls = ctr[1];
	return 0;
}

static int lead_client(struct th_ep *e, void *arg)
{
	struct lead_arg *a = arg;
	uint8_t *src = malloc(LEN);
	struct rrr_sge sge[NPIECES + 1];
	struct rrr_send_wr wr[NPIECES + 1];
	struct rrr_mr *mr;
	struct th_key k;
	struct soft_qp *qp = soft_qp(e->qp);
	uint64_t ctr[2];
	int n = a->pieces, i;
	size_t piece = LEN / (size_t)n;

	TH_CHECK(src);
	th_fill(src, LEN, 5);
	TH_CHECK(rrr_mr_reg(e->pd, src, LEN, 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		sge[i] = (struct rrr_sge){ (uintptr_t)src + i * piece, (uint32_t)piece,
					   rrr_mr_lkey(mr) };
		wr[i] = (struct rrr_send_wr){ .next = &wr[i + 1], .wr_id = (uint64_t)i + 1,
					      .opcode = RRR_WR_RDMA_WRITE, .sg_list = &sge[i],
					      .num_sge = 1 };
		wr[i].u.rdma.remote_addr = k.addr + i * piece;
		wr[i].u.rdma.rkey = k.rkey;
	}
	/* then a SEND, signaled: RC order makes the WRITEs visible before it */
	sge[n] = (struct rrr_sge){ (uintptr_t)src, 4, rrr_mr_lkey(mr) };
	wr[n] = (struct rrr_send_wr){ .wr_id = 100, .opcode = RRR_WR_SEND,
				      .flags = RRR_SEND_SIGNALED, .sg_list = &sge[n], .num_sge = 1 };
	pthread_mutex_lock(&qp->lock);
	ctr[0] = qp->tx_lead_cuts;
	ctr[1] = qp->tx_calls;
	pthread_mutex_unlock(&qp->lock);
	TH_CHECK(rrr_qp_post_send(e->qp, wr, NULL) == 0);
	for (;;) {
		struct rrr_wc wc;

		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.status == RRR_WC_SUCCESS);
		if (wc.wr_id == 100)
			break;
	}
	pthread_mutex_lock(&qp->lock);
	ctr[0] = qp->tx_lead_cuts - ctr[0];
	ctr[1] = qp->tx_calls - ctr[1];
	pthread_mutex_unlock(&qp->lock);
	TH_CHECK(th_oob_send(e->oob, ctr, sizeof(ctr)) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

/* One 1 MiB WRITE and nothing behind it, on an idle connection: the first
 * batch ends at ~64 KiB (nothing unread, nothing of ours in the socket), so
 * the WRITE takes at least two sendmsg calls. Later batches are cut too
 * while the peer keeps up (up to 16 calls on a quiet machine); a loaded
 * peer that falls behind gets full batches (SIOCOUTQ), so only the first
 * cut is certain. */
Test(soft_lead, lone_message_goes_in_lead_batches, .timeout = 60)
{
	struct lead_arg a = { .pieces = 1 };

	cr_assert_eq(th_run_pair("tx_lead=65536,tx_bytes=0", lead_server, lead_client, &a), 0);
	cr_log_info("lone 1 MiB WRITE, tx_lead=65536: %llu lead cuts, %llu sendmsg calls",
		    (unsigned long long)a.cuts, (unsigned long long)a.calls);
	cr_assert_geq(a.cuts, 1, "a lone message was not cut into lead batches (%llu cuts)",
		      (unsigned long long)a.cuts);
	cr_assert_geq(a.calls, 2);
}

/* The same bytes as 8 WRITEs of 128 KiB posted as one chain: work is queued
 * behind every WRITE but the last, so only the last one (128 KiB = two lead
 * batches) can be cut. */
Test(soft_lead, queued_work_keeps_batches_full, .timeout = 60)
{
	struct lead_arg a = { .pieces = NPIECES };

	cr_assert_eq(th_run_pair("tx_lead=65536,tx_bytes=0", lead_server, lead_client, &a), 0);
	cr_log_info("8 x 128 KiB WRITEs in one chain, tx_lead=65536: %llu lead cuts, %llu calls",
		    (unsigned long long)a.cuts, (unsigned long long)a.calls);
	cr_assert_leq(a.cuts, 2, "batches were cut although work was queued (%llu cuts)",
		      (unsigned long long)a.cuts);
}

/* tx_lead=0 turns the rule off. */
Test(soft_lead, off_when_zero, .timeout = 60)
{
	struct lead_arg a = { .pieces = 1 };

	cr_assert_eq(th_run_pair("tx_lead=0,tx_bytes=0", lead_server, lead_client, &a), 0);
	cr_assert_eq(a.cuts, 0);
}

/* A bad value is refused with the option named. */
Test(soft_lead, bad_value_refused)
{
	struct rrr_device *d = NULL;

	cr_assert_eq(rrr_device_open("soft", "tx_lead=100000000", &d), -EINVAL);
	cr_assert_null(d);
}

/* tx_bytes closes a batch at that many bytes: with FPDUs of at most 16 KiB
 * (mulpdu) and batches closed at 64 KiB, no call carries more than 80 KiB,
 * so a lone 1 MiB WRITE (lead batches off) takes at least 13 calls; every
 * byte lands (th_write_sink checks). */
Test(soft_lead, batches_close_at_tx_bytes, .timeout = 60)
{
	struct lead_arg a = { .pieces = 1 };

	cr_assert_eq(th_run_pair("tx_lead=0,tx_bytes=65536,mulpdu=16384", lead_server, lead_client,
				 &a),
		     0);
	cr_log_info("lone 1 MiB WRITE, tx_bytes=65536: %llu sendmsg calls",
		    (unsigned long long)a.calls);
	cr_assert_geq(a.calls, LEN / (65536 + 16384) + 1,
		      "batches were not closed at tx_bytes (%llu calls for 1 MiB)",
		      (unsigned long long)a.calls);
	cr_assert_eq(a.cuts, 0);
}

Test(soft_lead, tx_bytes_bad_value_refused)
{
	struct rrr_device *d = NULL;

	cr_assert_eq(rrr_device_open("soft", "tx_bytes=100000000", &d), -EINVAL);
	cr_assert_null(d);
	cr_assert_eq(rrr_device_open("soft", "tx_bytes=0", &d), 0);
	rrr_device_close(d);
}
