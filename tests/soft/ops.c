/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/ops.c - every soft-provider operation between two processes on
 * loopback, data verified byte for byte: connect/accept/reject with private
 * data, SEND/RECV (multi-FPDU, several SGEs, solicited), RDMA WRITE, RDMA
 * READ (several outstanding), fast registration with gaps + REG_MR,
 * SEND_WITH_INV, LOCAL_INV, key rotation, disconnect flushing, and the same
 * with crc=0 and with the progress thread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/harness.h"

#define MIB (1024 * 1024)

static int post_recv1(struct th_ep *e, uint64_t id, void *buf, uint32_t len, struct rrr_mr *mr)
{
	struct rrr_sge sge = { (uintptr_t)buf, len, rrr_mr_lkey(mr) };
	struct rrr_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	return rrr_qp_post_recv(e->qp, &wr, NULL);
}

static int post1(struct th_ep *e, enum rrr_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		 struct rrr_mr *mr, uint64_t raddr, uint32_t rkey)
{
	struct rrr_sge sge = { (uintptr_t)buf, len, mr ? rrr_mr_lkey(mr) : 0 };
	struct rrr_send_wr wr = { .wr_id = id, .opcode = op, .flags = RRR_SEND_SIGNALED,
				  .sg_list = &sge, .num_sge = len ? 1 : 0 };

	if (op == RRR_WR_SEND_WITH_INV)
		wr.u.send.invalidate_rkey = rkey;
	else
		wr.u.rdma.remote_addr = raddr, wr.u.rdma.rkey = rkey;
	return rrr_qp_post_send(e->qp, &wr, NULL);
}

#define do_send(e, id, buf, len, mr) post1(e, RRR_WR_SEND, id, buf, len, mr, 0, 0)
#define do_write(e, id, buf, len, mr, ra, rk) post1(e, RRR_WR_RDMA_WRITE, id, buf, len, mr, ra, rk)
#define do_read(e, id, buf, len, mr, ra, rk) post1(e, RRR_WR_RDMA_READ, id, buf, len, mr, ra, rk)
#define do_send_inv(e, id, buf, len, mr, rk) post1(e, RRR_WR_SEND_WITH_INV, id, buf, len, mr, 0, rk)

static int expect_wc(struct th_ep *e, uint64_t id, enum rrr_wc_opcode op, struct rrr_wc *out)
{
	struct rrr_wc wc;
	int rc = th_wc(e, &wc, TH_TIMEOUT_MS);

	if (rc != 1) {
		fprintf(stderr, "no completion for wr %llu (rc %d)\n", (unsigned long long)id, rc);
		return -1;
	}
	if (wc.wr_id != id || wc.status != RRR_WC_SUCCESS || wc.opcode != op) {
		fprintf(stderr, "completion wr %llu status %s opcode %d, wanted wr %llu op %d\n",
			(unsigned long long)wc.wr_id, rrr_wc_status_str(wc.status), wc.opcode,
			(unsigned long long)id, op);
		return -1;
	}
	if (out)
		*out = wc;
	return 0;
}

/* ----------------------------------------------------------- private data */
static int pd_server(struct th_ep *e, void *arg)
{
	(void)arg;
	TH_CHECK(e->req.private_data_len == sizeof(TH_PD_CLIENT));
	TH_CHECK(memcmp(e->req.private_data, TH_PD_CLIENT, sizeof(TH_PD_CLIENT)) == 0);
	TH_CHECK(e->req.ird > 0 && e->req.ord > 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	return 0;
}

static int pd_client(struct th_ep *e, void *arg)
{
	(void)arg;
	TH_CHECK(e->req.private_data_len == sizeof(TH_PD_SERVER));
	TH_CHECK(memcmp(e->req.private_data, TH_PD_SERVER, sizeof(TH_PD_SERVER)) == 0);
	TH_CHECK(rrr_cm_disconnect(e->id) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	return 0;
}

TH_PAIR_TEST(soft_ops, connect_private_data_disconnect, NULL, pd_server, pd_client, NULL)

Test(soft_ops, reject_with_private_data, .timeout = 60)
{
	struct th_ep s, c;
	uint16_t port;
	pid_t pid;
	int status;

	cr_assert_eq(th_open(&s, NULL), 0);
	cr_assert_eq(th_listen(&s, &port), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int rc;

		alarm(30);
		rc = th_open(&c, NULL);
		if (!rc)
			rc = th_connect(&c, port, "hi", 2);
		/* expect REJECTED carrying "go away" */
		if (rc != -ECONNREFUSED || c.ev.type != RRR_CM_EVENT_REJECTED ||
		    c.ev.private_data_len != 7 || memcmp(c.ev.private_data, "go away", 7))
			_exit(1);
		th_close(&c);
		_exit(0);
	}
	cr_assert_eq(th_cm_wait(&s, RRR_CM_EVENT_CONNECT_REQUEST, TH_TIMEOUT_MS), 0);
	cr_assert_eq(s.ev.private_data_len, 2);
	cr_assert_eq(rrr_cm_reject(s.ev.id, "go away", 7), 0);
	waitpid(pid, &status, 0);
	rrr_cm_id_destroy(s.ev.id);
	th_close(&s);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "client saw no proper reject");
}

/* ----------------------------------------------------------- send / recv */
#define SR_BIG 200000

static int sr_server(struct th_ep *e, void *arg)
{
	static uint8_t bufs[4][256 * 1024];
	struct rrr_mr *mr;
	struct rrr_wc wc;
	char go = 'g';

	(void)arg;
	memset(bufs, 0xee, sizeof(bufs));
	TH_CHECK(rrr_mr_reg(e->pd, bufs, sizeof(bufs), RRR_ACCESS_LOCAL_WRITE, &mr) == 0);
	for (int i = 0; i < 4; i++)
		TH_CHECK(post_recv1(e, 100 + i, bufs[i], sizeof(bufs[i]), mr) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);

	TH_CHECK(expect_wc(e, 100, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(wc.byte_len == 100 && th_check(bufs[0], 100, 1) == 0);
	TH_CHECK(bufs[0][100] == 0xee);
	TH_CHECK(expect_wc(e, 101, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(wc.byte_len == SR_BIG && th_check(bufs[1], SR_BIG, 2) == 0);
	TH_CHECK(bufs[1][SR_BIG] == 0xee);
	TH_CHECK(expect_wc(e, 102, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(wc.byte_len == 0);
	TH_CHECK(expect_wc(e, 103, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(wc.byte_len == 3 && (wc.wc_flags & RRR_WC_SOLICITED) && !memcmp(bufs[3], "end", 3));
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	return th_end(e, mr);
}

static int sr_client(struct th_ep *e, void *arg)
{
	static uint8_t src[SR_BIG + 100];
	struct rrr_mr *mr;
	struct rrr_sge sg[2];
	struct rrr_send_wr wr;
	char go;

	(void)arg;
	TH_CHECK(rrr_mr_reg(e->pd, src, sizeof(src), 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	th_fill(src, 100, 1);
	TH_CHECK(do_send(e, 1, src, 100, mr) == 0);
	TH_CHECK(expect_wc(e, 1, RRR_WC_SEND, NULL) == 0);
	/* 200000 bytes from two SGEs: several FPDUs */
	static uint8_t pat[SR_BIG];
	th_fill(pat, SR_BIG, 2);
	memcpy(src, pat, 70001);
	memcpy(src + 70001 + 99, pat + 70001, SR_BIG - 70001);
	sg[0] = (struct rrr_sge){ (uintptr_t)src, 70001, rrr_mr_lkey(mr) };
	sg[1] = (struct rrr_sge){ (uintptr_t)src + 70001 + 99, SR_BIG - 70001, rrr_mr_lkey(mr) };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RRR_WR_SEND;
	wr.sg_list = sg;
	wr.num_sge = 2;
	wr.flags = 0; /* unsignaled */
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(do_send(e, 3, NULL, 0, NULL) == 0);
	memcpy(src, "end", 3);
	wr = (struct rrr_send_wr){ .wr_id = 4, .opcode = RRR_WR_SEND,
				   .flags = RRR_SEND_SIGNALED | RRR_SEND_SOLICITED,
				   .sg_list = sg, .num_sge = 1 };
	sg[0].length = 3;
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	/* unsignaled WR 2 produces nothing; 3 then 4 in order */
	TH_CHECK(expect_wc(e, 3, RRR_WC_SEND, NULL) == 0);
	TH_CHECK(expect_wc(e, 4, RRR_WC_SEND, NULL) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_cm_disconnect(e->id) == 0);
	return th_end(e, mr);
}

TH_PAIR_TEST(soft_ops, send_recv, NULL, sr_server, sr_client, NULL)

TH_PAIR_TEST(soft_ops, send_recv_crc_off, "crc=0,mulpdu=1000", sr_server, sr_client, NULL)

TH_PAIR_TEST(soft_ops, send_recv_progress_thread, "progress_thread=1", sr_server, sr_client, NULL)

/* ----------------------------------------------------------- RDMA WRITE / READ */
#define WLEN (MIB + 13)

static int wr_server(struct th_ep *e, void *arg)
{
	uint8_t *buf = malloc(WLEN + 2 * 4096);
	uint8_t note[16];
	struct rrr_mr *mr, *nmr;
	struct th_key k;
	struct rrr_wc wc;

	(void)arg;
	TH_CHECK(buf);
	memset(buf, 0x5a, WLEN + 2 * 4096);
	TH_CHECK(rrr_mr_reg(e->pd, buf + 4096, WLEN, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			    &mr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, note, sizeof(note), RRR_ACCESS_LOCAL_WRITE, &nmr) == 0);
	TH_CHECK(post_recv1(e, 7, note, sizeof(note), nmr) == 0);
	k = (struct th_key){ (uintptr_t)buf + 4096, WLEN, rrr_mr_rkey(mr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	TH_CHECK(expect_wc(e, 7, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(th_check(buf + 4096, WLEN, 9) == 0);
	TH_CHECK(th_count_not(buf, 4096, 0x5a) == 0);
	TH_CHECK(th_count_not(buf + 4096 + WLEN, 4096, 0x5a) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	TH_CHECK(rrr_mr_dereg(nmr) == 0);
	free(buf);
	return 0;
}

/* WLEN bytes holding the pattern of @seed, registered on @e's PD with
 * @access into *@mr: the buffer (free it), or NULL (nothing left). */
static uint8_t *filled_mr(struct th_ep *e, uint32_t seed, unsigned access, struct rrr_mr **mr)
{
	uint8_t *buf = malloc(WLEN);

	if (!buf)
		return NULL;
	th_fill(buf, WLEN, seed);
	if (rrr_mr_reg(e->pd, buf, WLEN, access, mr)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int wr_client(struct th_ep *e, void *arg)
{
	struct rrr_mr *mr;
	uint8_t *src = filled_mr(e, 9, 0, &mr);
	struct th_key k;

	(void)arg;
	TH_CHECK(src);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	/* two WRITEs (halves) then a SEND: RC ordering makes the data visible */
	TH_CHECK(do_write(e, 1, src, WLEN / 2, mr, k.addr, k.rkey) == 0);
	TH_CHECK(do_write(e, 2, src + WLEN / 2, WLEN - WLEN / 2, mr, k.addr + WLEN / 2, k.rkey) == 0);
	TH_CHECK(do_send(e, 3, src, 4, mr) == 0);
	TH_CHECK(expect_wc(e, 1, RRR_WC_RDMA_WRITE, NULL) == 0);
	TH_CHECK(expect_wc(e, 2, RRR_WC_RDMA_WRITE, NULL) == 0);
	TH_CHECK(expect_wc(e, 3, RRR_WC_SEND, NULL) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

TH_PAIR_TEST(soft_ops, rdma_write, NULL, wr_server, wr_client, NULL)

static int rd_server(struct th_ep *e, void *arg)
{
	struct rrr_mr *mr;
	uint8_t *buf = filled_mr(e, 21, RRR_ACCESS_REMOTE_READ, &mr);
	struct th_key k;

	(void)arg;
	TH_CHECK(buf);
	k = (struct th_key){ (uintptr_t)buf, WLEN, rrr_mr_rkey(mr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	/* the responder works while we poll */
	th_serve_until_done(e);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(buf);
	return 0;
}

static int rd_client(struct th_ep *e, void *arg)
{
	uint8_t *dst = malloc(WLEN + 8192), *ref = malloc(WLEN);
	struct rrr_mr *mr;
	struct th_key k;
	char done = 'd';

	(void)arg;
	TH_CHECK(dst && ref);
	memset(dst, 0x11, WLEN + 8192);
	th_fill(ref, WLEN, 21);
	TH_CHECK(rrr_mr_reg(e->pd, dst + 4096, WLEN,
			    RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	/* three outstanding READs of different pieces */
	TH_CHECK(do_read(e, 1, dst + 4096, 1000, mr, k.addr, k.rkey) == 0);
	TH_CHECK(do_read(e, 2, dst + 4096 + 1000, WLEN - 1000 - 77, mr, k.addr + 1000, k.rkey) == 0);
	TH_CHECK(do_read(e, 3, dst + 4096 + WLEN - 77, 77, mr, k.addr + WLEN - 77, k.rkey) == 0);
	TH_CHECK(expect_wc(e, 1, RRR_WC_RDMA_READ, NULL) == 0);
	TH_CHECK(expect_wc(e, 2, RRR_WC_RDMA_READ, NULL) == 0);
	TH_CHECK(expect_wc(e, 3, RRR_WC_RDMA_READ, NULL) == 0);
	TH_CHECK(memcmp(dst + 4096, ref, WLEN) == 0);
	TH_CHECK(th_count_not(dst, 4096, 0x11) == 0);
	TH_CHECK(th_count_not(dst + 4096 + WLEN, 4096, 0x11) == 0);
	TH_CHECK(th_oob_send(e->oob, &done, 1) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(dst);
	free(ref);
	return 0;
}

TH_PAIR_TEST(soft_ops, rdma_read, NULL, rd_server, rd_client, NULL)

TH_PAIR_TEST(soft_ops, rdma_read_progress_thread, "progress_thread=1", rd_server, rd_client, NULL)

/* ----------------------------------------------------------- FRWR, SEND_WITH_INV, LOCAL_INV */
static const uint32_t fr_len[3] = { 5000, 4096, 777 };

static int fr_server(struct th_ep *e, void *arg)
{
	uint8_t *a = malloc(3 * 16384), note[8];
	struct rrr_mr *fr, *nmr;
	struct rrr_sg sg[4];
	struct rrr_send_wr wr;
	struct rrr_wc wc;
	struct th_key k;
	uint32_t old;
	uint8_t *cursor;

	(void)arg;
	TH_CHECK(a);
	memset(a, 0x77, 3 * 16384);
	TH_CHECK(rrr_mr_alloc(e->pd, 16, &fr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, note, sizeof(note), RRR_ACCESS_LOCAL_WRITE, &nmr) == 0);
	/* three chunks with gaps, plus a zero-length entry */
	sg[0] = (struct rrr_sg){ a, 100, fr_len[0] };
	sg[1] = (struct rrr_sg){ a + 16384, 0, fr_len[1] };
	sg[2] = (struct rrr_sg){ a + 16384, 0, 0 };
	sg[3] = (struct rrr_sg){ a + 32768, 5, fr_len[2] };
	TH_CHECK(rrr_mr_map_sg(fr, sg, 4, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE) == 4);
	TH_CHECK(rrr_mr_iova(fr) == (uintptr_t)a + 100);
	TH_CHECK(rrr_mr_length(fr) == fr_len[0] + fr_len[1] + fr_len[2]);
	wr = (struct rrr_send_wr){ .wr_id = 50, .opcode = RRR_WR_REG_MR, .flags = RRR_SEND_SIGNALED,
				   .u.reg = { .mr = fr,
					      .access = RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_LOCAL_WRITE } };
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(expect_wc(e, 50, RRR_WC_REG_MR, NULL) == 0);
	TH_CHECK(post_recv1(e, 51, note, sizeof(note), nmr) == 0);
	k = (struct th_key){ rrr_mr_iova(fr), rrr_mr_length(fr), rrr_mr_rkey(fr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	TH_CHECK(expect_wc(e, 51, RRR_WC_RECV, &wc) == 0);
	TH_CHECK(wc.wc_flags & RRR_WC_WITH_INV);
	TH_CHECK(wc.invalidated_rkey == k.rkey);
	/* the chunks hold the stream in order; gaps untouched */
	uint8_t *ref = malloc(k.len);
	TH_CHECK(ref);
	th_fill(ref, k.len, 33);
	cursor = ref;
	TH_CHECK(memcmp(a + 100, cursor, fr_len[0]) == 0);
	cursor += fr_len[0];
	TH_CHECK(memcmp(a + 16384, cursor, fr_len[1]) == 0);
	cursor += fr_len[1];
	TH_CHECK(memcmp(a + 32768 + 5, cursor, fr_len[2]) == 0);
	TH_CHECK(th_count_not(a, 100, 0x77) == 0);
	TH_CHECK(th_count_not(a + 100 + fr_len[0], 16384 - 100 - fr_len[0], 0x77) == 0);
	TH_CHECK(th_count_not(a + 16384 + fr_len[1], 16384 - fr_len[1] + 5, 0x77) == 0);
	TH_CHECK(th_count_not(a + 32768 + 5 + fr_len[2], 16384 - 5 - fr_len[2], 0x77) == 0);
	free(ref);
	/* remote invalidation made it INVALID: map again, key rotates */
	old = k.rkey;
	TH_CHECK(rrr_mr_map_sg(fr, sg, 1, RRR_ACCESS_REMOTE_WRITE) == 1);
	TH_CHECK(rrr_mr_rkey(fr) >> 8 == old >> 8);
	TH_CHECK((rrr_mr_rkey(fr) & 0xff) != (old & 0xff));
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(expect_wc(e, 50, RRR_WC_REG_MR, NULL) == 0);
	TH_CHECK(rrr_mr_dereg(fr) == -EBUSY);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 52;
	wr.opcode = RRR_WR_LOCAL_INV;
	wr.flags = RRR_SEND_SIGNALED;
	wr.u.inv.rkey = rrr_mr_rkey(fr);
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(expect_wc(e, 52, RRR_WC_LOCAL_INV, NULL) == 0);
	TH_CHECK(rrr_mr_recover(fr) == 0);
	TH_CHECK(rrr_mr_dereg(fr) == 0);
	TH_CHECK(rrr_mr_dereg(nmr) == 0);
	free(a);
	return 0;
}

static int fr_client(struct th_ep *e, void *arg)
{
	struct th_key k;
	uint8_t *src;
	struct rrr_mr *mr;

	(void)arg;
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	src = malloc(k.len);
	TH_CHECK(src);
	th_fill(src, k.len, 33);
	TH_CHECK(rrr_mr_reg(e->pd, src, k.len, 0, &mr) == 0);
	/* two WRITEs crossing chunk boundaries, then SEND_WITH_INV */
	TH_CHECK(do_write(e, 1, src, 4000, mr, k.addr, k.rkey) == 0);
	TH_CHECK(do_write(e, 2, src + 4000, (uint32_t)k.len - 4000, mr, k.addr + 4000, k.rkey) == 0);
	TH_CHECK(do_send_inv(e, 3, src, 8, mr, k.rkey) == 0);
	TH_CHECK(expect_wc(e, 1, RRR_WC_RDMA_WRITE, NULL) == 0);
	TH_CHECK(expect_wc(e, 2, RRR_WC_RDMA_WRITE, NULL) == 0);
	TH_CHECK(expect_wc(e, 3, RRR_WC_SEND, NULL) == 0);
	/* wait until the server is done before tearing down */
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

TH_PAIR_TEST(soft_ops, frwr_gaps_send_with_inv_local_inv, NULL, fr_server, fr_client, NULL)

/* ----------------------------------------------------------- disconnect flushes */
static int fl_server(struct th_ep *e, void *arg)
{
	static uint8_t b[2][64];
	struct rrr_mr *mr;
	struct rrr_wc wc;
	char go = 'g';

	(void)arg;
	TH_CHECK(rrr_mr_reg(e->pd, b, sizeof(b), RRR_ACCESS_LOCAL_WRITE, &mr) == 0);
	TH_CHECK(post_recv1(e, 1, b[0], 64, mr) == 0);
	TH_CHECK(post_recv1(e, 2, b[1], 64, mr) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	for (uint64_t i = 1; i <= 2; i++) {
		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.wr_id == i && wc.status == RRR_WC_WR_FLUSH_ERR && wc.opcode == RRR_WC_RECV);
	}
	/* posting to an errored QP completes with a flush error at once */
	TH_CHECK(post_recv1(e, 3, b[0], 64, mr) == 0);
	TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
	TH_CHECK(wc.wr_id == 3 && wc.status == RRR_WC_WR_FLUSH_ERR);
	return th_end(e, mr);
}

static int fl_client(struct th_ep *e, void *arg)
{
	char go;

	(void)arg;
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_cm_disconnect(e->id) == 0);
	return 0;
}

TH_PAIR_TEST(soft_ops, disconnect_flushes, NULL, fl_server, fl_client, NULL)

/* ----------------------------------------------------------- many connections, one CQ */
#define NCONN 4

static int mk_qp(struct th_ep *e, struct rrr_cm_id *id, struct rrr_qp **qp)
{
	struct rrr_qp_init_attr a = { .pd = e->pd, .send_cq = e->cq, .recv_cq = e->cq,
				      .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	return rrr_qp_create(id, &a, qp);
}

static int mc_server(struct th_ep *e, void *arg)
{
	static uint8_t b[NCONN][64];
	struct rrr_qp *qps[NCONN] = { e->qp };
	struct rrr_cm_id *ids[NCONN] = { e->id };
	struct rrr_mr *mr;
	struct rrr_wc wc;
	bool seen[NCONN] = { false };
	char go = 'g';

	(void)arg;
	for (int i = 1; i < NCONN; i++) {
		TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_CONNECT_REQUEST, TH_TIMEOUT_MS) == 0);
		ids[i] = e->ev.id;
		TH_CHECK(mk_qp(e, ids[i], &qps[i]) == 0);
		TH_CHECK(rrr_cm_accept(ids[i], NULL) == 0);
		TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS) == 0);
	}
	TH_CHECK(rrr_mr_reg(e->pd, b, sizeof(b), RRR_ACCESS_LOCAL_WRITE, &mr) == 0);
	for (int i = 0; i < NCONN; i++) {
		struct rrr_sge s = { (uintptr_t)b[i], 64, rrr_mr_lkey(mr) };
		struct rrr_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1 };

		TH_CHECK(rrr_qp_post_recv(qps[i], &r, NULL) == 0);
	}
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	/* one CQ shared by all QPs: each message arrives on its own QP */
	for (int n = 0; n < NCONN; n++) {
		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.status == RRR_WC_SUCCESS && wc.wr_id < NCONN);
		TH_CHECK(wc.qp == qps[wc.wr_id] && !seen[wc.wr_id]);
		TH_CHECK(wc.byte_len == 64 && th_check(b[wc.wr_id], 64, 100 + (uint32_t)wc.wr_id) == 0);
		seen[wc.wr_id] = true;
	}
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	for (int i = 1; i < NCONN; i++) {
		rrr_qp_destroy(qps[i]);
		rrr_cm_id_destroy(ids[i]);
	}
	return th_end(e, mr);
}

static int mc_client(struct th_ep *e, void *arg)
{
	static uint8_t b[NCONN][64];
	struct rrr_qp *qps[NCONN] = { e->qp };
	struct rrr_cm_id *ids[NCONN] = { e->id };
	struct sockaddr_storage ss;
	struct rrr_mr *mr;
	char go;

	(void)arg;
	TH_CHECK(rrr_cm_id_peer_addr(e->id, &ss) == 0);
	for (int i = 1; i < NCONN; i++) {
		TH_CHECK(rrr_cm_id_create(e->cm, NULL, &ids[i]) == 0);
		TH_CHECK(rrr_cm_resolve(ids[i], (struct sockaddr *)&ss, sizeof(struct sockaddr_in),
					1000) == 0);
		TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_RESOLVED, TH_TIMEOUT_MS) == 0);
		TH_CHECK(mk_qp(e, ids[i], &qps[i]) == 0);
		TH_CHECK(rrr_cm_connect(ids[i], NULL) == 0);
		TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS) == 0);
		TH_CHECK(e->ev.id == ids[i]);
	}
	TH_CHECK(rrr_mr_reg(e->pd, b, sizeof(b), 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	for (int i = NCONN - 1; i >= 0; i--) {
		struct rrr_sge s = { (uintptr_t)b[i], 64, rrr_mr_lkey(mr) };
		struct rrr_send_wr w = { .wr_id = (uint64_t)i, .opcode = RRR_WR_SEND,
					 .flags = RRR_SEND_SIGNALED, .sg_list = &s, .num_sge = 1 };
		struct rrr_wc wc;

		th_fill(b[i], 64, 100 + (uint32_t)i);
		TH_CHECK(rrr_qp_post_send(qps[i], &w, NULL) == 0);
		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1 && wc.status == RRR_WC_SUCCESS);
		TH_CHECK(wc.qp == qps[i]);
	}
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	for (int i = 1; i < NCONN; i++) {
		rrr_qp_destroy(qps[i]);
		rrr_cm_id_destroy(ids[i]);
	}
	return th_end(e, mr);
}

TH_PAIR_TEST(soft_ops, many_connections_one_cq, NULL, mc_server, mc_client, NULL)

TH_PAIR_TEST(soft_ops, many_connections_progress_thread, "progress_thread=1", mc_server, mc_client,
	     NULL)
