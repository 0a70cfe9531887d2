/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/mpa_rev1.c - an MPA revision 1 initiator (RFC 5044) against
 * the soft responder, played by a raw socket in the test
 * process itself (the provider's sockets are non-blocking).
 *
 * accept: the Request (rev 1, CRC, private data) reaches the application
 * as CONNECT_REQUEST with its private data; the Reply is revision 1 (no H
 * bit, no IRD/ORD words: PD_Length is the private data alone); no RTR is
 * expected; the responder sends nothing - not even a SEND posted at once -
 * before the initiator's first FPDU; then both directions work.
 * reject: the application's reject is a revision 1 Reply with the R bit
 * and exactly its private data. A revision 1 Request asking for markers is
 * refused with a revision 1 reject.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

/* Open @s listening, connect to it and send a revision 1 Request with
 * @flags and private data @pd: the raw socket. */
static int rev1_connect(struct th_ep *s, uint8_t flags, const char *pd)
{
	uint8_t f[SOFT_MPA_HDR + 64];
	size_t n = strlen(pd);
	int fd = th_open_raw_peer(s, NULL);

	cr_assert(fd >= 0);
	memcpy(f, SOFT_MPA_KEY_REQ, 16);
	f[16] = flags;
	f[17] = 1;
	soft_put16(f + 18, (uint16_t)n);
	memcpy(f + SOFT_MPA_HDR, pd, n);
	cr_assert_eq(th_oob_send(fd, f, SOFT_MPA_HDR + n), 0);
	return fd;
}

/* Read the Reply: it must be revision 1 with @flags and exactly @pd. */
static void expect_rev1_reply(int fd, uint8_t flags, const char *pd)
{
	uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	size_t n = strlen(pd);

	cr_assert_eq(th_oob_recv(fd, f, SOFT_MPA_HDR, TH_TIMEOUT_MS), 0);
	cr_assert_eq(memcmp(f, SOFT_MPA_KEY_REP, 16), 0);
	cr_assert_eq(f[17], 1, "reply revision %u, wanted 1", f[17]);
	cr_assert_eq(f[16], flags, "reply flags 0x%02x, wanted 0x%02x", f[16], flags);
	cr_assert_eq(soft_get16(f + 18), n, "PD_Length %u, wanted %zu", soft_get16(f + 18), n);
	cr_assert_eq(th_oob_recv(fd, f + SOFT_MPA_HDR, n, TH_TIMEOUT_MS), 0);
	cr_assert_eq(memcmp(f + SOFT_MPA_HDR, pd, n), 0);
}

Test(soft_mpa_rev1, accepted_in_rev1_responder_speaks_second, .timeout = 60)
{
	static uint8_t rb[64], sb[8] = "answer!";
	uint8_t f[128];
	struct th_ep s;
	struct rrr_mr *mr;
	struct rrr_wc wc;
	struct soft_hdr h;
	uint32_t ts = 1;
	int fd = rev1_connect(&s, SOFT_MPA_FLAG_C, "rev one"), st = 0;
	size_t n;

	cr_assert_eq(th_accept(&s, "srv", 3), 0, "%s", rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(s.req.private_data_len, 7);
	cr_assert_eq(memcmp(s.req.private_data, "rev one", 7), 0);
	cr_assert_eq(s.req.ird, 0);
	cr_assert_eq(s.req.ord, 0);
	expect_rev1_reply(fd, SOFT_MPA_FLAG_C, "srv");

	/* a receive, and a SEND posted at once: it must wait for our FPDU */
	cr_assert_eq(rrr_mr_reg(s.pd, rb, sizeof(rb), RRR_ACCESS_LOCAL_WRITE, &mr), 0);
	{
		struct rrr_sge sge = { (uintptr_t)rb, sizeof(rb), rrr_mr_lkey(mr) };
		struct rrr_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
		struct rrr_mr *smr;

		cr_assert_eq(rrr_qp_post_recv(s.qp, &r, NULL), 0);
		cr_assert_eq(rrr_mr_reg(s.pd, sb, sizeof(sb), 0, &smr), 0);
		struct rrr_sge ss = { (uintptr_t)sb, sizeof(sb), rrr_mr_lkey(smr) };
		struct rrr_send_wr w = { .wr_id = 2, .opcode = RRR_WR_SEND, .sg_list = &ss,
					 .num_sge = 1, .flags = RRR_SEND_SIGNALED };

		cr_assert_eq(rrr_qp_post_send(s.qp, &w, NULL), 0);
		cr_assert_eq(th_wc(&s, &wc, 200), 0, "a completion before the first FPDU");
		cr_assert(!th_readable(fd, 200), "the responder sent before the initiator's first FPDU");

		/* our first FPDU: a 32-byte Send */
		n = rrr__soft_hdr_untagged(f, SOFT_OP_SEND, true, 0, SOFT_QN_SEND, 1, 0, 32);
		memset(f + n, 0x31, 32);
		n = th_fpdu_close(f, n + 32, true);
		cr_assert_eq(th_oob_send(fd, f, n), 0);
		for (int i = 0; i < 2; i++) {
			cr_assert_eq(th_wc(&s, &wc, TH_TIMEOUT_MS), 1);
			cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
			if (wc.wr_id == 1)
				cr_assert(wc.opcode == RRR_WC_RECV && wc.byte_len == 32);
			else
				cr_assert(wc.wr_id == 2 && wc.opcode == RRR_WC_SEND);
		}
		cr_assert_eq(th_count_not(rb, 32, 0x31), 0);
		/* now the responder's SEND arrives, well formed */
		n = SOFT_HDR_UNTAGGED + 8 + soft_mpa_pad(SOFT_HDR_UNTAGGED - 2 + 8) + 4;
		cr_assert_eq(th_oob_recv(fd, f, n, TH_TIMEOUT_MS), 0);
		cr_assert_eq(rrr__soft_hdr_decode(f, &h), 0);
		cr_assert(!h.tagged && h.opcode == SOFT_OP_SEND && h.qn == SOFT_QN_SEND &&
			  h.msn == 1 && h.mo == 0 && h.last);
		cr_assert_eq(h.ulpdu_len, SOFT_HDR_UNTAGGED - 2 + 8);
		cr_assert_eq(memcmp(f + SOFT_HDR_UNTAGGED, sb, 8), 0);
		uint8_t chk[128];

		memcpy(chk, f, n - 4);
		cr_assert_eq(th_fpdu_close(chk, SOFT_HDR_UNTAGGED + 8, true), n);
		cr_assert_eq(memcmp(chk + n - 4, f + n - 4, 4), 0, "bad CRC on the responder's Send");
		cr_assert_eq(rrr__soft_qp_info(s.qp, &ts, NULL, &st), 0);
		cr_assert_eq(ts, 0);
		cr_assert_eq(st, SOFT_QP_RTS);
		close(fd);
		rrr_qp_destroy(s.qp);
		s.qp = NULL;
		cr_assert_eq(rrr_mr_dereg(smr), 0);
	}
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	th_close(&s);
}

Test(soft_mpa_rev1, rejected_in_rev1, .timeout = 60)
{
	struct th_ep s;
	uint8_t b;
	int fd = rev1_connect(&s, 0, "knock");

	cr_assert_eq(th_cm_wait(&s, RRR_CM_EVENT_CONNECT_REQUEST, TH_TIMEOUT_MS), 0);
	cr_assert_eq(s.ev.private_data_len, 5);
	cr_assert_eq(rrr_cm_reject(s.ev.id, "no", 2), 0);
	expect_rev1_reply(fd, SOFT_MPA_FLAG_R, "no");
	cr_assert_eq(th_oob_recv(fd, &b, 1, TH_TIMEOUT_MS), -ECONNRESET); /* then EOF */
	close(fd);
	rrr_cm_id_destroy(s.ev.id);
	th_close(&s);
}

Test(soft_mpa_rev1, markers_refused_in_rev1, .timeout = 60)
{
	struct th_ep s;
	struct rrr_cm_event ev;
	int fd = rev1_connect(&s, SOFT_MPA_FLAG_M, "");

	/* the CM refuses it on its own: drive it until the reply is out */
	for (int i = 0; i < 100 && !th_readable(fd, 10); i++)
		cr_assert_eq(rrr_cm_get_event(s.cm, &ev), -EAGAIN, "reported event %d", ev.type);
	expect_rev1_reply(fd, SOFT_MPA_FLAG_R, "");
	close(fd);
	th_close(&s);
}
