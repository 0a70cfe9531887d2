/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/mpa_neg.c - MPA negotiation (RFC 5044, RFC 6581) against
 * scripted peers: every kind of Request a peer may send to the soft
 * responder, and every kind of Reply a responder may send to the soft
 * initiator, played by a raw socket in the test process (the provider's
 * sockets are non-blocking and driven from this thread).
 *
 * Each accepted case then carries traffic both ways with the sequence
 * numbers the RTR left (a Send or Read RTR is message 1 of its queue), so
 * a wrong MSN shows up as a Terminate. Each refused case checks the reject
 * frame, the counter of its reason and, as initiator, rrr_last_error().
 * The table these cases follow is in docs/soft-provider.md.
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

/* ---------------------------------------------------------- the pure rules */

static struct soft_mpa_rr req_of(uint8_t rev, bool h, bool p2p, uint8_t rtr, bool crc)
{
	return (struct soft_mpa_rr){ .rev = rev, .enhanced = h, .p2p = p2p, .rtr = rtr, .crc = crc,
				     .ird = 16, .ord = 16 };
}

/* One row of a negotiation table: the peer's frame (revision, H, the P2P
 * bit, the RTR types it offers or chooses), then what must come of it. */
struct neg_row {
	uint8_t rev;
	bool h, p2p;
	uint8_t rtr_in;
	int reason; /* -1: accepted */
	uint8_t rtr_out;
};

/*
 * Play each of the @n @rows: as the responder (@me NULL) the row is a
 * Request without CRC; as the initiator that sent @me it is a Reply with
 * CRC. An accepted row must end in its RTR type (and, as the responder, in
 * its revision, holding transmission when no RTR is used); a refused one
 * must fail with -EPROTO and its reason (as the responder, saying why).
 */
static void play_rows(const struct neg_row *rows, unsigned n, const struct soft_mpa_rr *me)
{
	for (unsigned i = 0; i < n; i++) {
		struct soft_mpa_rr r = req_of(rows[i].rev, rows[i].h, rows[i].p2p, rows[i].rtr_in,
					      me != NULL);
		struct soft_mpa_neg neg;
		const char *why = NULL;
		int reason = -1, rc;

		r.reply = me != NULL;
		rc = me ? rrr__soft_mpa_check_reply(me, &r, &neg, &reason, &why)
			: rrr__soft_mpa_answer(&r, false, &neg, &reason, &why);
		if (rows[i].reason >= 0) {
			cr_assert_eq(rc, -EPROTO, "row %u accepted", i);
			cr_assert_eq(reason, rows[i].reason, "row %u", i);
			cr_assert(me || (why && *why));
			continue;
		}
		cr_assert_eq(rc, 0, "row %u refused: %s", i, why);
		cr_assert_eq(neg.rtr, rows[i].rtr_out, "row %u: rtr %u, wanted %u", i, neg.rtr,
			     rows[i].rtr_out);
		if (!me) {
			cr_assert_eq(neg.hold_tx, rows[i].rtr_out == SOFT_RTR_NONE, "row %u", i);
			cr_assert_eq(neg.rev, rows[i].rev);
		}
	}
}

Test(soft_mpa_neg, responder_table)
{
	/* rtr_in: the RTR types offered; rtr_out: the one chosen */
	static const struct neg_row rows[] = {
		{1, false, false, 0, -1, SOFT_RTR_NONE},
		{2, false, false, 0, -1, SOFT_RTR_NONE},
		{2, true, false, 0, -1, SOFT_RTR_NONE}, /* siw's default Request */
		{2, true, false, SOFT_RTR_WRITE, -1, SOFT_RTR_NONE}, /* RTR bits without I: none */
		{2, true, true, SOFT_RTR_WRITE, -1, SOFT_RTR_WRITE},
		{2, true, true, SOFT_RTR_READ, -1, SOFT_RTR_READ},
		{2, true, true, SOFT_RTR_SEND, -1, SOFT_RTR_SEND},
		{2, true, true, SOFT_RTR_WRITE | SOFT_RTR_READ, -1, SOFT_RTR_WRITE},
		{2, true, true, SOFT_RTR_SEND | SOFT_RTR_READ, -1, SOFT_RTR_READ},
		{2, true, true, SOFT_RTR_SEND | SOFT_RTR_WRITE | SOFT_RTR_READ, -1, SOFT_RTR_WRITE},
		{2, true, true, 0, -1, SOFT_RTR_WRITE}, /* none offered: Write, as siw */
		{0, false, false, 0, RRR_CM_REFUSED_REVISION, 0},
		{3, true, true, SOFT_RTR_WRITE, RRR_CM_REFUSED_REVISION, 0},
	};

	play_rows(rows, sizeof(rows) / sizeof(rows[0]), NULL);
	/* markers, in either revision */
	for (uint8_t rev = 1; rev <= 2; rev++) {
		struct soft_mpa_rr r = req_of(rev, rev == 2, false, 0, false);
		struct soft_mpa_neg n;
		const char *why;
		int reason;

		r.markers = true;
		cr_assert_eq(rrr__soft_mpa_answer(&r, true, &n, &reason, &why), -EPROTO);
		cr_assert_eq(reason, RRR_CM_REFUSED_MARKERS);
	}
}

Test(soft_mpa_neg, crc_either_side)
{
	for (int peer = 0; peer < 2; peer++)
		for (int mine = 0; mine < 2; mine++) {
			struct soft_mpa_rr r = req_of(2, true, false, 0, peer);
			struct soft_mpa_rr me = req_of(2, true, true, SOFT_RTR_WRITE, mine);
			struct soft_mpa_neg n;
			const char *why;
			int reason;

			cr_assert_eq(rrr__soft_mpa_answer(&r, mine, &n, &reason, &why), 0);
			cr_assert_eq(n.crc, peer || mine);
			/* as initiator: a Reply without C does not turn off the C we sent */
			r.reply = true;
			cr_assert_eq(rrr__soft_mpa_check_reply(&me, &r, &n, &reason, &why), 0);
			cr_assert_eq(n.crc, peer || mine);
		}
}

Test(soft_mpa_neg, initiator_table)
{
	struct soft_mpa_rr me = req_of(2, true, true, SOFT_RTR_WRITE | SOFT_RTR_READ, true);
	/* rtr_in: the RTR type the responder chose; rtr_out: the one used */
	static const struct neg_row rows[] = {
		{2, true, true, SOFT_RTR_WRITE, -1, SOFT_RTR_WRITE},
		{2, true, true, SOFT_RTR_READ, -1, SOFT_RTR_READ},
		{2, true, false, 0, -1, SOFT_RTR_NONE},  /* the responder wants no RTR */
		{2, false, false, 0, -1, SOFT_RTR_NONE}, /* rev 2 without H */
		{1, false, false, 0, -1, SOFT_RTR_NONE}, /* a revision 1 responder */
		{2, true, true, SOFT_RTR_SEND, RRR_CM_REFUSED_RTR, 0},
		{2, true, true, SOFT_RTR_WRITE | SOFT_RTR_READ, RRR_CM_REFUSED_RTR, 0},
		{2, true, true, 0, RRR_CM_REFUSED_RTR, 0},
		{3, true, true, SOFT_RTR_WRITE, RRR_CM_REFUSED_REVISION, 0},
	};

	play_rows(rows, sizeof(rows) / sizeof(rows[0]), &me);
}

/* ------------------------------------------------ the soft responder, live */

/* @s opened with @opts and listening, and a raw socket connected to it. */
static int raw_open(struct th_ep *s, const char *opts)
{
	int fd = th_open_raw_peer(s, opts);

	cr_assert(fd >= 0);
	return fd;
}

/* A Request frame: @flags, @rev, and (rev 2 with H) the two words; @pd_len
 * bytes of private data (0x50 + i). */
static size_t request(uint8_t *f, uint8_t flags, uint8_t rev, uint16_t ird_w, uint16_t ord_w,
		      uint16_t pd_len)
{
	bool words = rev == 2 && (flags & SOFT_MPA_FLAG_H);
	size_t n = SOFT_MPA_HDR;

	memcpy(f, SOFT_MPA_KEY_REQ, 16);
	f[16] = flags;
	f[17] = rev;
	soft_put16(f + 18, (uint16_t)(pd_len + (words ? 4 : 0)));
	if (words) {
		soft_put16(f + 20, ird_w);
		soft_put16(f + 22, ord_w);
		n += 4;
	}
	for (uint16_t i = 0; i < pd_len; i++)
		f[n + i] = (uint8_t)(0x50 + i);
	return n + pd_len;
}

struct reply {
	uint8_t flags, rev;
	uint16_t pd_len; /* PD_Length */
	uint16_t ird_w, ord_w;
};

static struct reply read_reply(int fd)
{
	uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	struct reply r;

	cr_assert_eq(th_oob_recv(fd, f, SOFT_MPA_HDR, TH_TIMEOUT_MS), 0, "no MPA Reply");
	cr_assert_eq(memcmp(f, SOFT_MPA_KEY_REP, 16), 0);
	r.flags = f[16];
	r.rev = f[17];
	r.pd_len = soft_get16(f + 18);
	cr_assert_leq(r.pd_len, SOFT_MPA_PD_MAX);
	cr_assert_eq(th_oob_recv(fd, f + SOFT_MPA_HDR, r.pd_len, TH_TIMEOUT_MS), 0);
	r.ird_w = r.ord_w = 0;
	if ((r.flags & SOFT_MPA_FLAG_H) && r.pd_len >= 4) {
		r.ird_w = soft_get16(f + 20);
		r.ord_w = soft_get16(f + 22);
	}
	return r;
}

/* Drive the CM (nothing may be reported) until @fd is readable. */
static void drive_until_readable(struct th_ep *e, int fd)
{
	struct rrr_cm_event ev;

	for (int i = 0; i < 500 && !th_readable(fd, 10); i++)
		cr_assert_eq(rrr_cm_get_event(e->cm, &ev), -EAGAIN, "reported event %d", ev.type);
	cr_assert(th_readable(fd, 0), "the soft side sent nothing");
}

/* Begin accepting: CONNECT_REQUEST, a QP, rrr_cm_accept() ("srv"). */
static void accept_begin(struct th_ep *s)
{
	struct rrr_qp_init_attr a = {
		.pd = s->pd, .send_cq = s->cq, .recv_cq = s->cq, .max_send_wr = 64,
		.max_recv_wr = 64, .max_send_sge = 2, .max_recv_sge = 2, .max_rd_atomic = 8,
	};
	struct rrr_conn_param p = { .private_data = "srv", .private_data_len = 3 };

	cr_assert_eq(th_cm_wait(s, RRR_CM_EVENT_CONNECT_REQUEST, TH_TIMEOUT_MS), 0);
	s->req = s->ev;
	s->id = s->ev.id;
	cr_assert_eq(rrr_qp_create(s->id, &a, &s->qp), 0);
	cr_assert_eq(rrr_cm_accept(s->id, &p), 0, "%s", rrr_last_error() ? rrr_last_error() : "");
}

/*
 * After set-up: the peer's Send (MSN @msn_send) reaches a posted receive,
 * and (with @read_msn) a Read Request of MSN @read_msn for 8 bytes of a
 * registration is answered; then the soft side's Send arrives with MSN 1.
 */
static void traffic(struct th_ep *s, int fd, bool crc, uint32_t msn_send, uint32_t read_msn)
{
	static uint8_t rb[64], sb[8] = "answer!", src[8] = "readme!";
	struct rrr_mr *mr, *smr, *rmr;
	struct rrr_wc wc;
	struct soft_hdr h;
	uint8_t f[256];
	size_t n;

	cr_assert_eq(rrr_mr_reg(s->pd, rb, sizeof(rb), RRR_ACCESS_LOCAL_WRITE, &mr), 0);
	cr_assert_eq(rrr_mr_reg(s->pd, sb, sizeof(sb), 0, &smr), 0);
	cr_assert_eq(rrr_mr_reg(s->pd, src, sizeof(src), RRR_ACCESS_REMOTE_READ, &rmr), 0);
	struct rrr_sge sge = { (uintptr_t)rb, sizeof(rb), rrr_mr_lkey(mr) };
	struct rrr_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };

	cr_assert_eq(rrr_qp_post_recv(s->qp, &r, NULL), 0);
	n = rrr__soft_hdr_untagged(f, SOFT_OP_SEND, true, 0, SOFT_QN_SEND, msn_send, 0, 16);
	memset(f + n, 0x31, 16);
	n = th_fpdu_close(f, n + 16, crc);
	cr_assert_eq(th_oob_send(fd, f, n), 0);
	cr_assert_eq(th_wc(s, &wc, TH_TIMEOUT_MS), 1, "the peer's first Send did not arrive");
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	cr_assert(wc.opcode == RRR_WC_RECV && wc.byte_len == 16);
	if (read_msn) {
		struct soft_read_req q = { .sink_stag = 0x777, .sink_to = 0, .size = 8,
					   .src_stag = rrr_mr_rkey(rmr), .src_to = (uintptr_t)src };

		n = rrr__soft_hdr_untagged(f, SOFT_OP_READ_REQ, true, 0, SOFT_QN_READ, read_msn, 0,
					   SOFT_READ_REQ_LEN);
		rrr__soft_read_req_encode(f + n, &q);
		n = th_fpdu_close(f, n + SOFT_READ_REQ_LEN, crc);
		cr_assert_eq(th_oob_send(fd, f, n), 0);
		for (int i = 0; i < 500 && !th_readable(fd, 0); i++)
			cr_assert_eq(th_wc(s, &wc, 10), 0); /* drives the QP; no completion */
		cr_assert_eq(th_oob_recv(fd, f, SOFT_HDR_TAGGED + 8 + 4, TH_TIMEOUT_MS), 0);
		cr_assert_eq(rrr__soft_hdr_decode(f, &h), 0);
		cr_assert(h.tagged && h.opcode == SOFT_OP_READ_RESP && h.stag == 0x777,
			  "opcode %u stag %x", h.opcode, h.stag);
		cr_assert_eq(memcmp(f + SOFT_HDR_TAGGED, src, 8), 0);
	}
	struct rrr_sge ss = { (uintptr_t)sb, sizeof(sb), rrr_mr_lkey(smr) };
	struct rrr_send_wr w = { .wr_id = 2, .opcode = RRR_WR_SEND, .sg_list = &ss, .num_sge = 1,
				 .flags = RRR_SEND_SIGNALED };

	cr_assert_eq(rrr_qp_post_send(s->qp, &w, NULL), 0);
	cr_assert_eq(th_wc(s, &wc, TH_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	n = SOFT_HDR_UNTAGGED + 8 + 4;
	cr_assert_eq(th_oob_recv(fd, f, n, TH_TIMEOUT_MS), 0);
	cr_assert_eq(rrr__soft_hdr_decode(f, &h), 0);
	cr_assert(!h.tagged && h.opcode == SOFT_OP_SEND && h.qn == SOFT_QN_SEND && h.msn == 1);
	if (crc) {
		uint8_t chk[64];

		memcpy(chk, f, n - 4);
		th_fpdu_close(chk, n - 4, true);
		cr_assert_eq(memcmp(chk + n - 4, f + n - 4, 4), 0, "bad CRC from the soft side");
	}
	rrr_qp_destroy(s->qp);
	s->qp = NULL;
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	cr_assert_eq(rrr_mr_dereg(smr), 0);
	cr_assert_eq(rrr_mr_dereg(rmr), 0);
}

/* One accepted Request: the Reply's fields, the RTR it asks for, traffic. */
static void accepted(const char *opts, uint8_t flags, uint8_t rev, uint16_t ird_w, uint16_t ord_w,
		     uint8_t want_rtr, bool want_crc)
{
	uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	struct th_ep s;
	struct reply r;
	int fd = raw_open(&s, opts);

	cr_assert_eq(th_oob_send(fd, f, request(f, flags, rev, ird_w, ord_w, 5)), 0);
	accept_begin(&s);
	cr_assert_eq(s.req.private_data_len, 5);
	cr_assert_eq(s.req.private_data[0], 0x50);
	r = read_reply(fd);
	cr_assert_eq(r.rev, rev, "reply revision %u, wanted %u", r.rev, rev);
	cr_assert_eq(!!(r.flags & SOFT_MPA_FLAG_C), want_crc, "reply flags 0x%02x", r.flags);
	cr_assert_eq(r.flags & (SOFT_MPA_FLAG_M | SOFT_MPA_FLAG_R), 0);
	cr_assert_eq(!!(r.flags & SOFT_MPA_FLAG_H), rev == 2 && (flags & SOFT_MPA_FLAG_H));
	if (!(flags & SOFT_MPA_FLAG_H) || rev != 2) {
		cr_assert_eq(r.pd_len, 3); /* no IRD/ORD words */
	} else {
		cr_assert_eq(r.pd_len, 7);
		cr_assert_eq(!!(r.ird_w & SOFT_MPA_IRD_P2P), want_rtr != SOFT_RTR_NONE,
			     "reply IRD word 0x%04x", r.ird_w);
		cr_assert_eq(!!(r.ird_w & SOFT_MPA_IRD_RTR_SEND), want_rtr == SOFT_RTR_SEND);
		cr_assert_eq(!!(r.ord_w & SOFT_MPA_ORD_RTR_WRITE), want_rtr == SOFT_RTR_WRITE,
			     "reply ORD word 0x%04x", r.ord_w);
		cr_assert_eq(!!(r.ord_w & SOFT_MPA_ORD_RTR_READ), want_rtr == SOFT_RTR_READ);
	}
	if (want_rtr == SOFT_RTR_NONE) {
		/* the initiator speaks first: nothing before its first FPDU */
		cr_assert_eq(th_cm_wait(&s, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS), 0);
		cr_assert(!th_readable(fd, 100), "the responder sent before the initiator's first FPDU");
		traffic(&s, fd, want_crc, 1, 1);
	} else {
		uint8_t rtr[SOFT_MPA_RTR_MAX];
		size_t n = rrr__soft_mpa_rtr(rtr, want_rtr, want_crc);

		if (want_rtr == SOFT_RTR_WRITE)
			soft_put32(rtr + 4, 1); /* siw's STag for it; recompute the CRC */
		n = th_fpdu_close(rtr, n - 4 - soft_mpa_pad(soft_get16(rtr)), want_crc);
		cr_assert_eq(th_oob_send(fd, rtr, n), 0);
		cr_assert_eq(th_cm_wait(&s, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS), 0,
			     "not established after the RTR");
		if (want_rtr == SOFT_RTR_READ) {
			uint8_t resp[SOFT_HDR_TAGGED + 4];

			cr_assert_eq(th_oob_recv(fd, resp, sizeof(resp), TH_TIMEOUT_MS), 0);
			cr_assert(rrr__soft_mpa_is_rtr_read_resp(resp, want_crc),
				  "no zero-length Read Response to the Read RTR");
		}
		traffic(&s, fd, want_crc, want_rtr == SOFT_RTR_SEND ? 2 : 1,
			want_rtr == SOFT_RTR_READ ? 2 : 1);
	}
	close(fd);
	th_close(&s);
}

#define H SOFT_MPA_FLAG_H
#define C SOFT_MPA_FLAG_C
#define P2P SOFT_MPA_IRD_P2P
#define W SOFT_MPA_ORD_RTR_WRITE
#define R SOFT_MPA_ORD_RTR_READ
#define S SOFT_MPA_IRD_RTR_SEND

Test(soft_mpa_neg, rev2_no_p2p_like_siw, .timeout = 60)
{
	/* siw's Request: 10 02 000c 0010 0010 */
	accepted(NULL, H, 2, 16, 16, SOFT_RTR_NONE, true);
	accepted("crc=0", H, 2, 16, 16, SOFT_RTR_NONE, false);
	accepted("crc=0", H | C, 2, 16, 16, SOFT_RTR_NONE, true);
}

Test(soft_mpa_neg, rev2_without_h, .timeout = 60)
{
	accepted("crc=0", 0, 2, 0, 0, SOFT_RTR_NONE, false);
}

Test(soft_mpa_neg, rtr_write, .timeout = 60)
{
	accepted(NULL, H | C, 2, P2P | 16, W | 16, SOFT_RTR_WRITE, true);
	accepted(NULL, H, 2, P2P | 16, W | R | 16, SOFT_RTR_WRITE, true);
	accepted("crc=0", H, 2, P2P | S | 16, W | R | 16, SOFT_RTR_WRITE, false);
	accepted("crc=0", H, 2, P2P | 16, 16, SOFT_RTR_WRITE, false); /* none offered */
}

Test(soft_mpa_neg, rtr_read, .timeout = 60)
{
	accepted(NULL, H | C, 2, P2P | 16, R | 16, SOFT_RTR_READ, true);
	accepted("crc=0", H, 2, P2P | S | 16, R | 16, SOFT_RTR_READ, false);
}

Test(soft_mpa_neg, rtr_send, .timeout = 60)
{
	accepted(NULL, H | C, 2, P2P | S | 16, 16, SOFT_RTR_SEND, true);
	accepted("crc=0", H, 2, P2P | S | 16, 16, SOFT_RTR_SEND, false);
}

/* A refused Request: a reject frame in @want_rev (or nothing), the counter. */
static void refused(const uint8_t *f, size_t n, int want_rev, enum rrr_cm_refusal reason)
{
	struct rrr_cm_limit_stats st;
	struct th_ep s;
	uint8_t b;
	int fd = raw_open(&s, NULL);

	if (n)
		cr_assert_eq(th_oob_send(fd, f, n), 0);
	else
		shutdown(fd, SHUT_WR);
	drive_until_readable(&s, fd);
	if (want_rev > 0) {
		struct reply r = read_reply(fd);

		cr_assert_eq(r.rev, want_rev, "reject revision %u", r.rev);
		cr_assert(r.flags & SOFT_MPA_FLAG_R, "reply flags 0x%02x: no reject", r.flags);
	}
	cr_assert_eq(th_oob_recv(fd, &b, 1, TH_TIMEOUT_MS), -ECONNRESET, "not closed");
	cr_assert_eq(rrr_cm_limit_stats(s.cm, &st), 0);
	for (int i = 0; i < RRR_CM_REFUSED_NREASONS; i++)
		cr_assert_eq(st.refused[i], i == (int)reason ? 1u : 0u, "refused[%s] = %llu",
			     rrr_cm_refusal_name(i), (unsigned long long)st.refused[i]);
	close(fd);
	th_close(&s);
}

Test(soft_mpa_neg, refusals_counted, .timeout = 60)
{
	uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX + 8];
	size_t n;

	refused(f, request(f, SOFT_MPA_FLAG_M | H, 2, 16, 16, 0), 2, RRR_CM_REFUSED_MARKERS);
	refused(f, request(f, SOFT_MPA_FLAG_M, 1, 0, 0, 0), 1, RRR_CM_REFUSED_MARKERS);
	refused(f, request(f, H, 3, 16, 16, 0), 2, RRR_CM_REFUSED_REVISION);
	refused(f, request(f, 0, 0, 0, 0, 0), 1, RRR_CM_REFUSED_REVISION);
	/* H promises the IRD/ORD words: PD_Length 2 cannot hold them */
	n = request(f, 0, 2, 0, 0, 2);
	f[16] = H;
	refused(f, n, 2, RRR_CM_REFUSED_PRIVATE_DATA);
	/* PD_Length over 512 */
	n = request(f, H, 2, 16, 16, 0);
	soft_put16(f + 18, SOFT_MPA_PD_MAX + 1);
	refused(f, n, 2, RRR_CM_REFUSED_PRIVATE_DATA);
	/* not MPA at all; closed before a Request */
	memcpy(f, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	refused(f, 27, 0, RRR_CM_REFUSED_PROTOCOL);
	refused(f, 0, 0, RRR_CM_REFUSED_PROTOCOL);
}

Test(soft_mpa_neg, private_data_up_to_the_maximum, .timeout = 60)
{
	static const uint16_t lens[] = {0, 1, 196, SOFT_MPA_PD_MAX - 4};

	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
		struct th_ep s;
		struct reply r;
		int fd = raw_open(&s, NULL);

		cr_assert_eq(th_oob_send(fd, f, request(f, H, 2, 16, 16, lens[i])), 0);
		accept_begin(&s);
		/* callers see at most RRR_CM_MAX_PRIVATE_DATA of it */
		cr_assert_eq(s.req.private_data_len,
			     lens[i] < RRR_CM_MAX_PRIVATE_DATA ? lens[i] : RRR_CM_MAX_PRIVATE_DATA);
		for (unsigned k = 0; k < s.req.private_data_len; k++)
			cr_assert_eq(((const uint8_t *)s.req.private_data)[k], (uint8_t)(0x50 + k));
		r = read_reply(fd);
		cr_assert_eq(r.flags & SOFT_MPA_FLAG_R, 0);
		close(fd);
		rrr_qp_destroy(s.qp);
		s.qp = NULL;
		th_close(&s);
	}
}

/* ------------------------------------------------ the soft initiator, live */

struct ini {
	struct th_ep c;
	int lfd, fd;
	uint8_t req_flags;
	uint16_t req_ird_w, req_ord_w;
};

/* rrr connects to a raw listener; its Request is read and checked. */
static void ini_start(struct ini *t, const char *opts)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rrr_qp_init_attr a;
	socklen_t sl = sizeof(sin);
	uint8_t f[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	uint16_t pdl;

	memset(t, 0, sizeof(*t));
	t->lfd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(t->lfd >= 0);
	cr_assert_eq(bind(t->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(t->lfd, 4), 0);
	cr_assert_eq(getsockname(t->lfd, (struct sockaddr *)&sin, &sl), 0);
	cr_assert_eq(th_open(&t->c, opts), 0);
	cr_assert_eq(rrr_cm_id_create(t->c.cm, NULL, &t->c.id), 0);
	cr_assert_eq(rrr_cm_resolve(t->c.id, (struct sockaddr *)&sin, sizeof(sin), 1000), 0);
	cr_assert_eq(th_cm_wait(&t->c, RRR_CM_EVENT_RESOLVED, TH_TIMEOUT_MS), 0);
	memset(&a, 0, sizeof(a));
	a.pd = t->c.pd;
	a.send_cq = a.recv_cq = t->c.cq;
	a.max_send_wr = a.max_recv_wr = 64;
	a.max_send_sge = a.max_recv_sge = 2;
	a.max_rd_atomic = 8;
	cr_assert_eq(rrr_qp_create(t->c.id, &a, &t->c.qp), 0);
	struct rrr_conn_param p = { .private_data = "cli", .private_data_len = 3 };

	cr_assert_eq(rrr_cm_connect(t->c.id, &p), 0);
	t->fd = -1;
	for (int i = 0; i < 500 && t->fd < 0; i++) {
		struct rrr_cm_event ev;
		struct pollfd pl = { .fd = t->lfd, .events = POLLIN };

		cr_assert_eq(rrr_cm_get_event(t->c.cm, &ev), -EAGAIN);
		if (poll(&pl, 1, 10) > 0)
			t->fd = accept(t->lfd, NULL, NULL);
	}
	cr_assert(t->fd >= 0);
	drive_until_readable(&t->c, t->fd);
	cr_assert_eq(th_oob_recv(t->fd, f, SOFT_MPA_HDR, TH_TIMEOUT_MS), 0);
	cr_assert_eq(memcmp(f, SOFT_MPA_KEY_REQ, 16), 0);
	cr_assert_eq(f[17], 2);
	t->req_flags = f[16];
	pdl = soft_get16(f + 18);
	cr_assert_eq(pdl, 4 + 3);
	cr_assert_eq(th_oob_recv(t->fd, f + SOFT_MPA_HDR, pdl, TH_TIMEOUT_MS), 0);
	t->req_ird_w = soft_get16(f + 20);
	t->req_ord_w = soft_get16(f + 22);
	cr_assert_eq(memcmp(f + 24, "cli", 3), 0);
}

static void ini_reply(struct ini *t, uint8_t flags, uint8_t rev, uint16_t ird_w, uint16_t ord_w)
{
	uint8_t f[SOFT_MPA_HDR + 8];
	size_t n = request(f, flags, rev, ird_w, ord_w, 2);

	memcpy(f, SOFT_MPA_KEY_REP, 16);
	cr_assert_eq(th_oob_send(t->fd, f, n), 0);
}

static void ini_end(struct ini *t)
{
	close(t->fd);
	close(t->lfd);
	th_close(&t->c);
}

Test(soft_mpa_neg, initiator_request_offers_write_and_read, .timeout = 60)
{
	struct ini t;

	ini_start(&t, NULL);
	cr_assert_eq(t.req_flags, H | C, "request flags 0x%02x", t.req_flags);
	cr_assert_eq(t.req_ird_w & ~SOFT_MPA_IRDORD_MASK, P2P, "IRD word 0x%04x", t.req_ird_w);
	cr_assert_eq(t.req_ord_w & ~SOFT_MPA_IRDORD_MASK, W | R, "ORD word 0x%04x", t.req_ord_w);
	ini_end(&t);
}

/* The responder chose @rtr (or none): rrr sends it, then speaks. */
static void ini_accepted(uint8_t flags, uint8_t rev, uint16_t ird_w, uint16_t ord_w, uint8_t rtr)
{
	uint8_t f[SOFT_MPA_RTR_MAX];
	struct soft_read_req rd;
	struct ini t;
	bool crc = true;

	ini_start(&t, NULL);
	ini_reply(&t, flags, rev, ird_w, ord_w);
	if (rtr == SOFT_RTR_READ) {
		drive_until_readable(&t.c, t.fd);
		cr_assert_eq(th_oob_recv(t.fd, f, rrr__soft_mpa_rtr_len(rtr), TH_TIMEOUT_MS), 0);
		cr_assert(rrr__soft_mpa_is_rtr(f, rtr, crc, &rd), "no Read RTR");
		cr_assert_eq(th_oob_send(t.fd, f, rrr__soft_mpa_rtr_read_resp(f, &rd, crc)), 0);
	}
	cr_assert_eq(th_cm_wait(&t.c, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS), 0, "%s",
		     rrr_last_error() ? rrr_last_error() : "");
	if (rtr == SOFT_RTR_WRITE) {
		cr_assert_eq(th_oob_recv(t.fd, f, rrr__soft_mpa_rtr_len(rtr), TH_TIMEOUT_MS), 0);
		cr_assert(rrr__soft_mpa_is_rtr(f, rtr, crc, NULL), "no Write RTR");
	}
	/* rrr's first Send: MSN 1 on QN 0 */
	{
		static uint8_t sb[8] = "hello!!";
		struct rrr_mr *mr;
		struct rrr_wc wc;
		struct soft_hdr h;

		cr_assert_eq(rrr_mr_reg(t.c.pd, sb, sizeof(sb), 0, &mr), 0);
		struct rrr_sge ss = { (uintptr_t)sb, sizeof(sb), rrr_mr_lkey(mr) };
		struct rrr_send_wr w = { .wr_id = 2, .opcode = RRR_WR_SEND, .sg_list = &ss,
					 .num_sge = 1, .flags = RRR_SEND_SIGNALED };

		cr_assert_eq(rrr_qp_post_send(t.c.qp, &w, NULL), 0);
		cr_assert_eq(th_wc(&t.c, &wc, TH_TIMEOUT_MS), 1);
		cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
		cr_assert_eq(th_oob_recv(t.fd, f, SOFT_HDR_UNTAGGED + 8 + 4, TH_TIMEOUT_MS), 0);
		cr_assert_eq(rrr__soft_hdr_decode(f, &h), 0);
		cr_assert(!h.tagged && h.opcode == SOFT_OP_SEND && h.msn == 1);
		rrr_qp_destroy(t.c.qp);
		t.c.qp = NULL;
		cr_assert_eq(rrr_mr_dereg(mr), 0);
	}
	ini_end(&t);
}

Test(soft_mpa_neg, initiator_rtr_write, .timeout = 60)
{
	ini_accepted(H | C, 2, P2P | 16, W | 16, SOFT_RTR_WRITE);
}

Test(soft_mpa_neg, initiator_rtr_read, .timeout = 60)
{
	ini_accepted(H | C, 2, P2P | 16, R | 16, SOFT_RTR_READ);
}

Test(soft_mpa_neg, initiator_no_rtr, .timeout = 60)
{
	ini_accepted(H | C, 2, 16, 16, SOFT_RTR_NONE); /* a responder without peer-to-peer */
	ini_accepted(C, 2, 0, 0, SOFT_RTR_NONE);       /* rev 2 without H */
	ini_accepted(C, 1, 0, 0, SOFT_RTR_NONE);       /* a revision 1 responder */
}

static void ini_refused(uint8_t flags, uint8_t rev, uint16_t ird_w, uint16_t ord_w,
			enum rrr_cm_refusal reason, const char *says)
{
	struct rrr_cm_limit_stats st;
	struct ini t;

	ini_start(&t, NULL);
	ini_reply(&t, flags, rev, ird_w, ord_w);
	cr_assert_eq(th_cm_wait(&t.c, RRR_CM_EVENT_UNREACHABLE, TH_TIMEOUT_MS), 0);
	cr_assert_eq(t.c.ev.status, -EPROTO);
	cr_assert(rrr_last_error() && strstr(rrr_last_error(), says), "rrr_last_error(): %s",
		  rrr_last_error() ? rrr_last_error() : "(none)");
	cr_assert_eq(rrr_cm_limit_stats(t.c.cm, &st), 0);
	cr_assert_eq(st.refused[reason], 1);
	ini_end(&t);
}

Test(soft_mpa_neg, initiator_refusals, .timeout = 60)
{
	ini_refused(H | C, 2, P2P | S | 16, 16, RRR_CM_REFUSED_RTR, "ready-to-receive");
	ini_refused(H | C, 2, P2P | 16, 16, RRR_CM_REFUSED_RTR, "ready-to-receive");
	ini_refused(H | C | SOFT_MPA_FLAG_M, 2, P2P | 16, W | 16, RRR_CM_REFUSED_MARKERS, "markers");
	ini_refused(H | C, 3, P2P | 16, W | 16, RRR_CM_REFUSED_REVISION, "revision");
}

Test(soft_mpa_neg, initiator_rejected, .timeout = 60)
{
	struct ini t;

	ini_start(&t, NULL);
	ini_reply(&t, H | C | SOFT_MPA_FLAG_R, 2, 0, 0);
	cr_assert_eq(th_cm_wait(&t.c, RRR_CM_EVENT_REJECTED, TH_TIMEOUT_MS), 0);
	cr_assert_eq(t.c.ev.status, -ECONNREFUSED);
	cr_assert_eq(t.c.ev.private_data_len, 2);
	ini_end(&t);
}
