/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/mss.c - FPDU size follows the TCP MSS of the moment
 * (transport/soft/qp_state.c rrr__soft_qp_mulpdu_refresh): before a message that
 * takes more than one FPDU the sender reads TCP_MAXSEG again (at most once
 * a millisecond), so an FPDU fits one segment of the connection as it is
 * now (RFC 5044 alignment), not as it was at connect time - Linux bounds a new
 * connection's MSS by half the peer's first window, which on loopback
 * halves every FPDU for the connection's life if read only once. The
 * device option mulpdu still caps it. Checked through the QP's tx_fpdus
 * counter (reported through the server, which runs in the test's process);
 * every byte is checked to land.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define LEN (1024 * 1024)
#define ROUNDS 32 /* at most; stops at the first WRITE with one MSS throughout */

struct mss_arg {
	uint32_t cap;           /* the device's mulpdu (set by the test) */
	uint32_t mulpdu_first;  /* the bound after attach */
	uint32_t mulpdu, mss;   /* the bound around the measured WRITE, the MSS then */
	uint64_t fpdus;         /* FPDUs of the measured WRITE */
	bool stable;            /* the MSS did not move during it */
};

static int mss_server(struct th_ep *e, void *arg)
{
	return th_write_sink(e, LEN, 5, arg, sizeof(struct mss_arg));
}

static int post_wait(struct th_ep *e, struct rrr_send_wr *wr)
{
	struct rrr_wc wc;

	if (rrr_qp_post_send(e->qp, wr, NULL) != 0 || th_wc(e, &wc, TH_TIMEOUT_MS) != 1)
		return -1;
	return wc.status == RRR_WC_SUCCESS && wc.wr_id == wr->wr_id ? 0 : -1;
}

static uint32_t qp_mulpdu(struct soft_qp *qp)
{
	uint32_t v;

	pthread_mutex_lock(&qp->lock);
	v = qp->mulpdu;
	pthread_mutex_unlock(&qp->lock);
	return v;
}

/* WRITEs of LEN until one ran with one MSS throughout, after the MSS grew
 * (at most ROUNDS; the connection's window grows meanwhile), the last one
 * measured; then a SEND that tells the server the bytes are there. */
static int mss_client(struct th_ep *e, void *arg)
{
	struct mss_arg *a = arg;
	uint8_t *src = malloc(LEN);
	struct soft_qp *qp = soft_qp(e->qp);
	struct rrr_mr *mr;
	struct th_key k;
	struct rrr_sge sge;
	struct rrr_send_wr wr = { .opcode = RRR_WR_RDMA_WRITE, .flags = RRR_SEND_SIGNALED,
				  .sg_list = &sge, .num_sge = 1 };
	socklen_t ml = sizeof(int);
	int mss = 0;

	TH_CHECK(src);
	th_fill(src, LEN, 5);
	TH_CHECK(rrr_mr_reg(e->pd, src, LEN, 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	a->mulpdu_first = qp_mulpdu(qp);
	sge = (struct rrr_sge){ (uintptr_t)src, LEN, rrr_mr_lkey(mr) };
	wr.u.rdma.remote_addr = k.addr;
	wr.u.rdma.rkey = k.rkey;
	for (int i = 0; i < ROUNDS; i++) {
		uint32_t before = qp_mulpdu(qp);
		uint64_t f0;

		pthread_mutex_lock(&qp->lock);
		f0 = qp->tx_fpdus;
		pthread_mutex_unlock(&qp->lock);
		wr.wr_id = (uint64_t)i + 1;
		TH_CHECK(post_wait(e, &wr) == 0);
		pthread_mutex_lock(&qp->lock);
		a->fpdus = qp->tx_fpdus - f0;
		a->mulpdu = qp->mulpdu;
		TH_CHECK(getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &ml) == 0);
		pthread_mutex_unlock(&qp->lock);
		a->mss = (uint32_t)mss;
		/* measured: a WRITE that started and ended with one MSS (the
		 * window grows over the first ones; slower under load) */
		a->stable = i > 0 && before == a->mulpdu &&
			    a->mulpdu == (a->mss - 9 < a->cap ? a->mss - 9 : a->cap);
		if (a->stable && (a->mulpdu > a->mulpdu_first || a->mulpdu == a->cap))
			break;
	}
	sge.length = 4;
	wr = (struct rrr_send_wr){ .wr_id = 100, .opcode = RRR_WR_SEND,
				   .flags = RRR_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1 };
	TH_CHECK(post_wait(e, &wr) == 0);
	TH_CHECK(th_oob_send(e->oob, a, sizeof(*a)) == 0); /* the server reports */
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

static uint64_t fpdus_for(uint32_t mulpdu)
{
	uint32_t pay = mulpdu - (SOFT_HDR_TAGGED - 2);

	return (LEN + pay - 1) / pay;
}

/* Default mulpdu: the FPDUs of a 1 MiB WRITE are sized by the MSS of the
 * moment, capped at the device's 65520. */
Test(soft_mss, fpdus_follow_the_current_mss, .timeout = 60)
{
	struct mss_arg a = { .cap = SOFT_MULPDU_DEF };

	cr_assert_eq(th_run_pair(NULL, mss_server, mss_client, &a), 0);
	cr_log_info("MSS bound at connect %u, now %u (TCP_MAXSEG %u): %llu FPDUs for 1 MiB",
		    a.mulpdu_first, a.mulpdu, a.mss, (unsigned long long)a.fpdus);
	cr_assert(a.stable, "the MSS kept changing; nothing to measure");
	uint32_t want = a.mss - 9 < SOFT_MULPDU_DEF ? a.mss - 9 : SOFT_MULPDU_DEF;

	cr_assert_eq(a.mulpdu, want, "bound %u, the current MSS says %u", a.mulpdu, want);
	cr_assert_eq(a.fpdus, fpdus_for(a.mulpdu), "%llu FPDUs, %llu expected",
		     (unsigned long long)a.fpdus, (unsigned long long)fpdus_for(a.mulpdu));
	cr_assert_geq(a.mulpdu, a.mulpdu_first);
}

/* The device option still caps the FPDU, however large the MSS grows. */
Test(soft_mss, mulpdu_option_caps_it, .timeout = 60)
{
	struct mss_arg a = { .cap = 4096 };

	cr_assert_eq(th_run_pair("mulpdu=4096", mss_server, mss_client, &a), 0);
	cr_assert(a.stable);
	cr_assert_eq(a.mulpdu, 4096);
	cr_assert_eq(a.fpdus, fpdus_for(4096), "%llu FPDUs, %llu expected",
		     (unsigned long long)a.fpdus, (unsigned long long)fpdus_for(4096));
}
