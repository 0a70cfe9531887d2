/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/hostile.c - a hostile peer against the soft provider.
 *
 * The victim (parent) exposes a window inside a buffer whose surroundings
 * (and the window itself) hold a guard pattern; the attacker (child) uses
 * the provider API with crafted work requests: a forged handle, a stale
 * key, out of bounds, without rights, a handle of another PD, after local
 * invalidation, after remote invalidation, a Send with Invalidate for a
 * handle it was never given, an RDMA READ without rights. Each must end
 * with the victim sending a Terminate with the RFC 5040/5041
 * layer/type/code, its QP in error, its posted receive flushed, and zero
 * bytes placed (every guard byte intact); the attacker must receive the
 * same Terminate and go to error. Raw-frame attackers (plain sockets,
 * their own MPA exchange) check the Terminate FPDU on the wire.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define PG 4096
#define WIN (3 * PG)
#define GUARD 0x5a

enum mode {
	M_FORGED,
	M_STALE,
	M_BOUNDS,
	M_RIGHTS,
	M_OTHER_PD,
	M_AFTER_LOCAL_INV,
	M_AFTER_REMOTE_INV,
	M_SEND_INV_FORGED,
	M_READ_NO_RIGHTS,
};

struct hcase {
	enum mode mode;
	uint32_t term; /* expected packed layer/type/code */
};

static int post_linv(struct th_ep *e, uint32_t rkey, uint64_t id)
{
	struct rrr_send_wr wr = { .wr_id = id, .opcode = RRR_WR_LOCAL_INV,
				  .flags = RRR_SEND_SIGNALED };

	wr.u.inv.rkey = rkey;
	return th_post_one(e, &wr);
}

static int victim(struct th_ep *e, void *arg)
{
	const struct hcase *hc = arg;
	uint8_t *buf = aligned_alloc(PG, WIN + 2 * PG);
	static uint8_t rbuf[2][256];
	struct rrr_mr *mr = NULL, *rmr, *fr = NULL;
	struct rrr_pd *pd2 = NULL;
	struct rrr_sge sge;
	struct rrr_recv_wr rwr;
	struct rrr_wc wc;
	struct th_key k;
	uint32_t ts = 0, tr = 0;
	int st = 0;
	char go = 'g';

	TH_CHECK(buf);
	memset(buf, GUARD, WIN + 2 * PG);
	memset(rbuf, GUARD, sizeof(rbuf));
	TH_CHECK(rrr_mr_reg(e->pd, rbuf, sizeof(rbuf), RRR_ACCESS_LOCAL_WRITE, &rmr) == 0);
	k = (struct th_key){ (uintptr_t)buf + PG, WIN, 0, 0 };
	switch (hc->mode) {
	case M_FORGED:
	case M_BOUNDS:
	case M_SEND_INV_FORGED:
	case M_STALE:
	case M_AFTER_LOCAL_INV:
	case M_AFTER_REMOTE_INV: {
		struct rrr_sg sg = { buf + PG, 0, WIN };

		TH_CHECK(rrr_mr_alloc(e->pd, 8, &fr) == 0);
		TH_CHECK(rrr_mr_map_sg(fr, &sg, 1, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE) == 1);
		TH_CHECK(th_post_reg(e, fr, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE, 90) == 0);
		k.rkey = rrr_mr_rkey(fr);
		if (hc->mode == M_FORGED)
			k.rkey = 0x00beef00u | (k.rkey & 0xff); /* an index never handed out */
		if (hc->mode == M_SEND_INV_FORGED)
			k.tag = (k.rkey + 0x100) | 0x10000000u; /* someone else's handle */
		if (hc->mode == M_STALE) {
			/* rotate: the attacker keeps the old key */
			TH_CHECK(post_linv(e, rrr_mr_rkey(fr), 91) == 0);
			TH_CHECK(rrr_mr_map_sg(fr, &sg, 1, RRR_ACCESS_REMOTE_WRITE) == 1);
			TH_CHECK(th_post_reg(e, fr, RRR_ACCESS_REMOTE_WRITE, 92) == 0);
			TH_CHECK(rrr_mr_rkey(fr) != k.rkey);
		}
		break;
	}
	case M_RIGHTS:
		TH_CHECK(rrr_mr_reg(e->pd, buf + PG, WIN, RRR_ACCESS_REMOTE_READ, &mr) == 0);
		k.rkey = rrr_mr_rkey(mr);
		break;
	case M_READ_NO_RIGHTS:
		TH_CHECK(rrr_mr_reg(e->pd, buf + PG, WIN, RRR_ACCESS_REMOTE_WRITE, &mr) == 0);
		k.rkey = rrr_mr_rkey(mr);
		break;
	case M_OTHER_PD:
		TH_CHECK(rrr_pd_alloc(e->dev, &pd2) == 0);
		TH_CHECK(rrr_mr_reg(pd2, buf + PG, WIN, RRR_ACCESS_REMOTE_WRITE, &mr) == 0);
		k.rkey = rrr_mr_rkey(mr);
		break;
	}
	/* two receives; the first may be consumed by a legitimate Send w/ Inv */
	for (int i = 0; i < 2; i++) {
		sge = (struct rrr_sge){ (uintptr_t)rbuf[i], sizeof(rbuf[i]), rrr_mr_lkey(rmr) };
		rwr = (struct rrr_recv_wr){ .wr_id = 200 + i, .sg_list = &sge, .num_sge = 1 };
		TH_CHECK(rrr_qp_post_recv(e->qp, &rwr, NULL) == 0);
	}
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	if (hc->mode == M_AFTER_LOCAL_INV) {
		TH_CHECK(post_linv(e, k.rkey, 93) == 0);
		TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	}
	if (hc->mode == M_AFTER_REMOTE_INV) {
		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.wr_id == 200 && wc.status == RRR_WC_SUCCESS);
		TH_CHECK((wc.wc_flags & RRR_WC_WITH_INV) && wc.invalidated_rkey == k.rkey);
		memset(rbuf[0], GUARD, sizeof(rbuf[0])); /* that one was legitimate */
	}
	/* the attack: our outstanding receive(s) must be flushed */
	TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
	TH_CHECK(wc.status == RRR_WC_WR_FLUSH_ERR && wc.opcode == RRR_WC_RECV);
	TH_CHECK(rrr__soft_qp_info(e->qp, &ts, &tr, &st) == 0);
	if (ts != (SOFT_GET_FAIL | hc->term))
		fprintf(stderr, "victim sent terminate 0x%x, expected 0x%x\n", ts, hc->term);
	TH_CHECK(ts == (SOFT_GET_FAIL | hc->term));
	TH_CHECK(st == SOFT_QP_ERROR);
	/* zero bytes placed: the whole buffer and the receive buffers */
	TH_CHECK(th_count_not(buf, WIN + 2 * PG, GUARD) == 0);
	TH_CHECK(th_count_not(rbuf, sizeof(rbuf), GUARD) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	rrr_qp_destroy(e->qp);
	e->qp = NULL;
	if (fr) {
		TH_CHECK(rrr_mr_recover(fr) == 0);
		TH_CHECK(rrr_mr_dereg(fr) == 0);
	}
	if (mr)
		TH_CHECK(rrr_mr_dereg(mr) == 0);
	TH_CHECK(rrr_mr_dereg(rmr) == 0);
	if (pd2)
		TH_CHECK(rrr_pd_free(pd2) == 0);
	free(buf);
	return 0;
}

static int attacker(struct th_ep *e, void *arg)
{
	const struct hcase *hc = arg;
	static uint8_t src[WIN + 64];
	struct rrr_mr *mr;
	struct rrr_sge sge;
	struct rrr_send_wr wr;
	struct th_key k;
	uint32_t ts = 0, tr = 0;
	int st = 0;
	char go;

	memset(src, 0xa5, sizeof(src));
	TH_CHECK(rrr_mr_reg(e->pd, src, sizeof(src),
			    RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	if (hc->mode == M_AFTER_LOCAL_INV)
		TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.flags = RRR_SEND_SIGNALED;
	sge = (struct rrr_sge){ (uintptr_t)src, 512, rrr_mr_lkey(mr) };
	wr.opcode = RRR_WR_RDMA_WRITE;
	wr.u.rdma.remote_addr = k.addr;
	wr.u.rdma.rkey = k.rkey;
	switch (hc->mode) {
	case M_BOUNDS:
		wr.u.rdma.remote_addr = k.addr + k.len - 100; /* 412 bytes past the end */
		break;
	case M_AFTER_REMOTE_INV: {
		struct rrr_send_wr inv = { .wr_id = 5, .opcode = RRR_WR_SEND_WITH_INV,
					   .sg_list = &sge, .num_sge = 1 };
		inv.u.send.invalidate_rkey = k.rkey;
		inv.next = &wr; /* then write through the invalidated handle */
		sge.length = 16;
		TH_CHECK(rrr_qp_post_send(e->qp, &inv, NULL) == 0);
		goto wait;
	}
	case M_SEND_INV_FORGED:
		wr.opcode = RRR_WR_SEND_WITH_INV;
		wr.u.send.invalidate_rkey = k.tag;
		sge.length = 64;
		break;
	case M_READ_NO_RIGHTS:
		wr.opcode = RRR_WR_RDMA_READ;
		memset(src, GUARD, sizeof(src));
		break;
	default:
		break;
	}
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
wait:
	/* the Terminate arrives; our QP goes to error */
	for (int i = 0; i < 400; i++) {
		struct rrr_wc wc;

		TH_CHECK(rrr__soft_qp_info(e->qp, &ts, &tr, &st) == 0);
		if (tr)
			break;
		th_wc(e, &wc, 25);
	}
	if (tr != (SOFT_GET_FAIL | hc->term))
		fprintf(stderr, "attacker got terminate 0x%x, expected 0x%x\n", tr, hc->term);
	TH_CHECK(tr == (SOFT_GET_FAIL | hc->term));
	TH_CHECK(st == SOFT_QP_ERROR);
	if (hc->mode == M_READ_NO_RIGHTS)
		TH_CHECK(th_count_not(src, 512, GUARD) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	return th_end(e, mr);
}

#define T_DDP_T(c) SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_TAGGED, c)
#define T_PROT(c) SOFT_TERM(SOFT_TERM_LAYER_RDMAP, SOFT_TERM_RDMAP_REM_PROT, c)

static void run(enum mode m, uint32_t term)
{
	struct hcase hc = { m, term };

	cr_assert_eq(th_run_pair(NULL, victim, attacker, &hc), 0);
}

/* One test: attack @m, the victim must answer Terminate @term. */
#define HOSTILE_TEST(name, m, term)                                                                \
	Test(soft_hostile, name, .timeout = 60)                                                    \
	{                                                                                          \
		run(m, term);                                                                      \
	}

HOSTILE_TEST(forged_handle, M_FORGED, T_DDP_T(SOFT_ECODE_INV_STAG))
HOSTILE_TEST(stale_key, M_STALE, T_DDP_T(SOFT_ECODE_INV_STAG))
HOSTILE_TEST(out_of_bounds, M_BOUNDS, T_DDP_T(SOFT_ECODE_BOUNDS))
HOSTILE_TEST(write_without_rights, M_RIGHTS, T_PROT(SOFT_ECODE_ACCESS))
HOSTILE_TEST(read_without_rights, M_READ_NO_RIGHTS, T_PROT(SOFT_ECODE_ACCESS))
HOSTILE_TEST(handle_of_other_pd, M_OTHER_PD, T_DDP_T(SOFT_ECODE_T_STAG_ASSOC))
HOSTILE_TEST(write_after_local_invalidate, M_AFTER_LOCAL_INV, T_DDP_T(SOFT_ECODE_INV_STAG))
HOSTILE_TEST(write_after_remote_invalidate, M_AFTER_REMOTE_INV, T_DDP_T(SOFT_ECODE_INV_STAG))
HOSTILE_TEST(send_with_invalidate_foreign_handle, M_SEND_INV_FORGED, T_PROT(SOFT_ECODE_INV_STAG))

/* ----------------------------------------------------------- raw frames
 * The attacker speaks MPA itself over a plain socket: Request, Reply, RTR,
 * then one crafted FPDU. The victim must answer with a Terminate FPDU
 * (checked byte for byte on the wire: QN 2, opcode 7, layer/type/code),
 * then close; its QP goes to error and its receive is flushed. */
enum raw_mode { R_BAD_CRC, R_BAD_QN, R_BAD_DDP_VERSION, R_SHORT_ULPDU };

static int raw_attacker(uint16_t port, enum raw_mode m, uint32_t *term_out)
{
	uint8_t f[64];
	size_t n;
	int fd = th_raw_mpa_connect(port, 0);

	if (fd < 0)
		return -1;
	/* a 32-byte Send on QN 0, MSN 1, then spoiled as asked */
	n = rrr__soft_hdr_untagged(f, SOFT_OP_SEND, true, 0, 0, 1, 0, 32);
	memset(f + n, 0x33, 32);
	n += 32;
	if (m == R_BAD_QN)
		soft_put32(f + 8, 7);
	if (m == R_BAD_DDP_VERSION)
		f[2] = (uint8_t)((f[2] & ~3) | 2);
	if (m == R_SHORT_ULPDU)
		soft_put16(f, 10); /* shorter than the untagged header */
	uint32_t c = rrr_crc32c(0, f, n);

	if (m == R_BAD_CRC)
		c ^= 1;
	f[n] = (uint8_t)c, f[n + 1] = (uint8_t)(c >> 8), f[n + 2] = (uint8_t)(c >> 16);
	f[n + 3] = (uint8_t)(c >> 24);
	if (th_oob_send(fd, f, n + 4))
		return -1;
	/* the Terminate: untagged header + 4 bytes + CRC, then EOF */
	if (th_oob_recv(fd, f, SOFT_HDR_UNTAGGED + 4 + 4, TH_TIMEOUT_MS))
		return -1;
	struct soft_hdr h;

	if (rrr__soft_hdr_decode(f, &h) || h.tagged || h.qn != SOFT_QN_TERM ||
	    h.opcode != SOFT_OP_TERMINATE || !h.last || h.msn != 1 ||
	    h.ulpdu_len != SOFT_HDR_UNTAGGED - 2 + 4)
		return -1;
	c = rrr_crc32c(0, f, SOFT_HDR_UNTAGGED + 4);
	if (f[24] != (uint8_t)c || f[25] != (uint8_t)(c >> 8) || f[26] != (uint8_t)(c >> 16) ||
	    f[27] != (uint8_t)(c >> 24))
		return -1;
	*term_out = rrr__soft_term_decode(f + SOFT_HDR_UNTAGGED);
	close(fd);
	return 0;
}

static void run_raw(enum raw_mode m, uint32_t want)
{
	struct th_ep s;
	static uint8_t rb[256];
	struct rrr_mr *mr;
	struct rrr_wc wc;
	uint16_t port;
	uint32_t ts = 0;
	int st = 0, status;
	pid_t pid;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork(); /* before any device exists (see harness.c) */
	cr_assert(pid >= 0);
	if (pid == 0) {
		uint32_t got = 0;

		alarm(30);
		close(sv[0]);
		if (th_oob_recv(sv[1], &port, sizeof(port), TH_TIMEOUT_MS) ||
		    raw_attacker(port, m, &got))
			_exit(2);
		_exit(got == want ? 0 : 1);
	}
	close(sv[1]);
	cr_assert_eq(th_open(&s, NULL), 0);
	cr_assert_eq(th_listen(&s, &port), 0);
	cr_assert_eq(th_oob_send(sv[0], &port, sizeof(port)), 0);
	cr_assert_eq(th_accept(&s, NULL, 0), 0);
	memset(rb, GUARD, sizeof(rb));
	cr_assert_eq(rrr_mr_reg(s.pd, rb, sizeof(rb), RRR_ACCESS_LOCAL_WRITE, &mr), 0);
	{
		struct rrr_sge sge = { (uintptr_t)rb, sizeof(rb), rrr_mr_lkey(mr) };
		struct rrr_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };

		cr_assert_eq(rrr_qp_post_recv(s.qp, &r, NULL), 0);
	}
	cr_assert_eq(th_wc(&s, &wc, TH_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, RRR_WC_WR_FLUSH_ERR);
	cr_assert_eq(rrr__soft_qp_info(s.qp, &ts, NULL, &st), 0);
	cr_assert_eq(ts, SOFT_GET_FAIL | want, "terminate 0x%x, expected 0x%x", ts, want);
	cr_assert_eq(st, SOFT_QP_ERROR);
	if (m != R_BAD_CRC) /* a bad CRC is found after placement, as on any RNIC */
		cr_assert_eq(th_count_not(rb, sizeof(rb), GUARD), 0);
	waitpid(pid, &status, 0);
	close(sv[0]);
	rrr_qp_destroy(s.qp);
	s.qp = NULL;
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	th_close(&s);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the attacker did not read the expected Terminate (status 0x%x)", status);
}

/* One raw-frame test: frame spoiled as @m, the victim must answer @term. */
#define RAW_TEST(name, m, term)                                                                    \
	Test(soft_hostile, name, .timeout = 60)                                                    \
	{                                                                                          \
		run_raw(m, term);                                                                  \
	}

#define T_UNTAGGED(c) SOFT_TERM(SOFT_TERM_LAYER_DDP, SOFT_TERM_DDP_UNTAGGED, c)
#define T_LLP(c) SOFT_TERM(SOFT_TERM_LAYER_LLP, 0, c)

RAW_TEST(raw_bad_crc, R_BAD_CRC, T_LLP(SOFT_ECODE_LLP_CRC))
RAW_TEST(raw_bad_queue_number, R_BAD_QN, T_UNTAGGED(SOFT_ECODE_UT_INV_QN))
RAW_TEST(raw_bad_ddp_version, R_BAD_DDP_VERSION, T_UNTAGGED(SOFT_ECODE_UT_BAD_VER))
RAW_TEST(raw_ulpdu_shorter_than_header, R_SHORT_ULPDU, T_LLP(SOFT_ECODE_LLP_BAD_ULPDU))
