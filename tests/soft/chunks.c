/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/chunks.c - registrations made of many pieces with gaps.
 *
 * write_into_128_chunks: one 2,048-byte RDMA WRITE FPDU
 * into a registration of 128 16-byte pieces with 16-byte gaps - more
 * pieces than one readv takes (SOFT_PAY_IOV) - lands byte for byte in the
 * pieces, every gap byte intact, the QP stays up and the Send behind it
 * arrives; a second one, read through the receive stage, too; and an RDMA
 * READ of the same registration (Read Responses cut at SOFT_PAY_IOV pieces)
 * returns the bytes in order.
 *
 * local_sges_on_gapped_mrs (item 4): local SGEs are addresses in their
 * registration's virtual range, mapped through its chunk list as an RNIC
 * maps an lkey: a RECV on a registration with gaps places exactly the
 * registered bytes (3 uneven pieces, and 128 pieces: more than one
 * readv's iovecs), a SEND and an RDMA WRITE from such a registration send
 * exactly its bytes, and an RDMA READ into one fills its pieces; no gap
 * byte is touched.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define GUARD 0x5a
#define NP 128   /* pieces */
#define PIECE 16 /* bytes each, and as many bytes of gap after each */
#define BIG (NP * PIECE)

/* A fast-reg MR over NP pieces of PIECE bytes at stride 2 * PIECE in @a
 * (2 * BIG bytes, GUARD-filled), made valid with @access. */
static int reg_pieces(struct th_ep *e, uint8_t *a, unsigned access, struct rrr_mr **out)
{
	struct rrr_sg sg[NP];

	memset(a, GUARD, 2 * BIG);
	for (int i = 0; i < NP; i++)
		sg[i] = (struct rrr_sg){ a + 2 * PIECE * i, 0, PIECE };
	TH_CHECK(rrr_mr_alloc(e->pd, NP, out) == 0);
	TH_CHECK(rrr_mr_map_sg(*out, sg, NP, access) == NP);
	TH_CHECK(rrr_mr_length(*out) == BIG);
	TH_CHECK(th_post_reg(e, *out, access, 900) == 0);
	return 0;
}

/* The pieces hold th_fill(@len bytes, @seed) in order from virtual offset
 * @voff, every other byte of @a is GUARD. */
static int pieces_hold(const uint8_t *a, uint32_t voff, uint32_t len, uint32_t seed)
{
	uint8_t *want = malloc(2 * BIG), *ref = malloc(len);
	int rc;

	TH_CHECK(want && ref);
	memset(want, GUARD, 2 * BIG);
	th_fill(ref, len, seed);
	for (uint32_t v = voff; v < voff + len; v++)
		want[2 * PIECE * (v / PIECE) + v % PIECE] = ref[v - voff];
	rc = memcmp(a, want, 2 * BIG) ? -1 : 0;
	if (rc) {
		for (uint32_t i = 0; i < 2 * BIG; i++)
			if (a[i] != want[i]) {
				fprintf(stderr, "piece memory differs first at byte %u (%s)\n", i,
					(i / PIECE) % 2 ? "a gap" : "a piece");
				break;
			}
	}
	free(want);
	free(ref);
	return rc;
}

static int post_one(struct th_ep *e, enum rrr_wr_opcode op, uint64_t id, uint64_t addr,
		    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct rrr_sge sge = { addr, len, lkey };
	struct rrr_send_wr wr = { .wr_id = id, .opcode = op, .flags = RRR_SEND_SIGNALED,
				  .sg_list = &sge, .num_sge = 1 };

	wr.u.rdma.remote_addr = raddr;
	wr.u.rdma.rkey = rkey;
	return rrr_qp_post_send(e->qp, &wr, NULL);
}

static int post_recv_one(struct th_ep *e, uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct rrr_sge sge = { addr, len, lkey };
	struct rrr_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	return rrr_qp_post_recv(e->qp, &wr, NULL);
}

static int expect(struct th_ep *e, uint64_t id, enum rrr_wc_opcode op, uint32_t len)
{
	struct rrr_wc wc;

	if (th_wc(e, &wc, TH_TIMEOUT_MS) != 1) {
		fprintf(stderr, "no completion for wr %llu\n", (unsigned long long)id);
		return -1;
	}
	if (wc.wr_id != id || wc.status != RRR_WC_SUCCESS || wc.opcode != op ||
	    (op == RRR_WC_RECV && wc.byte_len != len)) {
		fprintf(stderr, "completion wr %llu status %s op %d len %u; wanted wr %llu op %d len %u\n",
			(unsigned long long)wc.wr_id, rrr_wc_status_str(wc.status), wc.opcode,
			wc.byte_len, (unsigned long long)id, op, len);
		return -1;
	}
	return 0;
}

static int healthy(struct th_ep *e)
{
	uint32_t ts = 1, tr = 1;
	int st = -1;

	TH_CHECK(rrr__soft_qp_info(e->qp, &ts, &tr, &st) == 0);
	if (ts || tr || st != SOFT_QP_RTS)
		fprintf(stderr, "QP state %d, terminate sent 0x%x received 0x%x\n", st, ts, tr);
	return ts || tr || st != SOFT_QP_RTS ? -1 : 0;
}

/* Drive the QP (caller-driven progress: the peer's READs need it) until
 * the peer's byte arrives on the side channel. */
static int serve_until_oob(struct th_ep *e)
{
	struct rrr_wc wc;
	char go;

	for (int i = 0; i < TH_TIMEOUT_MS / 10; i++) {
		TH_CHECK(th_wc(e, &wc, 10) == 0);
		if (th_oob_recv(e->oob, &go, 1, 0) == 0)
			return 0;
	}
	return -1;
}

static int release(struct rrr_mr *fr)
{
	TH_CHECK(rrr_mr_recover(fr) == 0);
	TH_CHECK(rrr_mr_dereg(fr) == 0);
	return 0;
}

/* ----------------------------------------------------------- item 3 */
static int w128_server(struct th_ep *e, void *arg)
{
	uint8_t *a = malloc(2 * BIG), note[2][16];
	struct rrr_mr *fr, *nmr;
	struct th_key k;
	char go = 'g';

	(void)arg;
	TH_CHECK(a);
	TH_CHECK(reg_pieces(e, a, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ |
				      RRR_ACCESS_LOCAL_WRITE, &fr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, note, sizeof(note), RRR_ACCESS_LOCAL_WRITE, &nmr) == 0);
	for (int i = 0; i < 2; i++)
		TH_CHECK(post_recv_one(e, 10 + i, (uintptr_t)note[i], 16, rrr_mr_lkey(nmr)) == 0);
	k = (struct th_key){ rrr_mr_iova(fr), BIG, rrr_mr_rkey(fr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	/* WRITE 1 (header read + readv of 64 pieces at a time), then a Send */
	TH_CHECK(expect(e, 10, RRR_WC_RECV, 8) == 0);
	TH_CHECK(pieces_hold(a, 0, BIG, 1) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	/* WRITE 2 (small messages: read into the stage, placed from it) */
	TH_CHECK(expect(e, 11, RRR_WC_RECV, 8) == 0);
	TH_CHECK(pieces_hold(a, 0, BIG, 2) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	/* the peer READs it all back, then says so */
	TH_CHECK(serve_until_oob(e) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(pieces_hold(a, 0, BIG, 2) == 0);
	rrr_qp_destroy(e->qp);
	e->qp = NULL;
	TH_CHECK(release(fr) == 0);
	TH_CHECK(rrr_mr_dereg(nmr) == 0);
	free(a);
	return 0;
}

static int w128_client(struct th_ep *e, void *arg)
{
	uint8_t *src = malloc(2 * BIG), *sink = malloc(BIG), note[8] = "written";
	struct rrr_mr *mr, *smr, *nmr;
	struct th_key k;
	char go;

	(void)arg;
	TH_CHECK(src && sink);
	th_fill(src, BIG, 1);
	th_fill(src + BIG, BIG, 2);
	memset(sink, 0, BIG);
	TH_CHECK(rrr_mr_reg(e->pd, src, 2 * BIG, 0, &mr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, note, sizeof(note), 0, &nmr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, sink, BIG, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			    &smr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	for (int i = 0; i < 2; i++) {
		TH_CHECK(post_one(e, RRR_WR_RDMA_WRITE, 20 + i, (uintptr_t)src + i * BIG, BIG,
				  rrr_mr_lkey(mr), k.addr, k.rkey) == 0);
		TH_CHECK(post_one(e, RRR_WR_SEND, 30 + i, (uintptr_t)note, 8, rrr_mr_lkey(nmr), 0,
				  0) == 0);
		TH_CHECK(expect(e, 20 + i, RRR_WC_RDMA_WRITE, 0) == 0);
		TH_CHECK(expect(e, 30 + i, RRR_WC_SEND, 0) == 0);
		TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	}
	/* Read Responses from 128 pieces: cut at SOFT_PAY_IOV pieces each */
	TH_CHECK(post_one(e, RRR_WR_RDMA_READ, 40, (uintptr_t)sink, BIG, rrr_mr_lkey(smr), k.addr,
			  k.rkey) == 0);
	TH_CHECK(expect(e, 40, RRR_WC_RDMA_READ, 0) == 0);
	TH_CHECK(th_check(sink, BIG, 2) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(th_oob_send(e->oob, "d", 1) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	TH_CHECK(rrr_mr_dereg(nmr) == 0);
	TH_CHECK(rrr_mr_dereg(smr) == 0);
	free(src);
	free(sink);
	return 0;
}

TH_PAIR_TEST(soft_chunks, write_into_128_chunks, NULL, w128_server, w128_client, NULL)

/* ----------------------------------------------------------- item 4 */
#define A_LEN 8192
#define SMALL_LEN 300 /* virtual [10, 310) of a 350-byte registration */
static const struct {
	uint32_t off, len;
} g_ch[3] = { { 100, 100 }, { 1000, 50 }, { 2000, 200 } };

/* The 3-piece registration holds th_fill(SMALL_LEN, @seed) from virtual
 * offset 10, every other byte of @a is GUARD. */
static int small_holds(const uint8_t *a, uint32_t seed)
{
	uint8_t want[A_LEN], ref[SMALL_LEN];
	uint32_t v = 0, r = 0;

	memset(want, GUARD, sizeof(want));
	th_fill(ref, SMALL_LEN, seed);
	for (int c = 0; c < 3; c++)
		for (uint32_t i = 0; i < g_ch[c].len; i++, v++)
			if (v >= 10 && r < SMALL_LEN)
				want[g_ch[c].off + i] = ref[r++];
	for (uint32_t i = 0; i < A_LEN; i++)
		if (a[i] != want[i]) {
			fprintf(stderr, "byte %u of the gapped buffer is 0x%02x, wanted 0x%02x\n", i,
				a[i], want[i]);
			return -1;
		}
	return 0;
}

static int gap_server(struct th_ep *e, void *arg)
{
	uint8_t *a = malloc(A_LEN), *b = malloc(2 * BIG);
	unsigned acc = RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE;
	struct rrr_mr *g, *h;
	struct rrr_sg sg[3];
	struct th_key k;
	char go = 'g';

	(void)arg;
	TH_CHECK(a && b);
	memset(a, GUARD, A_LEN);
	for (int i = 0; i < 3; i++)
		sg[i] = (struct rrr_sg){ a + g_ch[i].off, 0, g_ch[i].len };
	TH_CHECK(rrr_mr_alloc(e->pd, 3, &g) == 0);
	TH_CHECK(rrr_mr_map_sg(g, sg, 3, acc) == 3);
	TH_CHECK(th_post_reg(e, g, acc, 901) == 0);
	TH_CHECK(reg_pieces(e, b, acc, &h) == 0);
	/* RECVs: 300 bytes across 3 uneven pieces; 2,048 across 128 pieces */
	TH_CHECK(post_recv_one(e, 1, rrr_mr_iova(g) + 10, SMALL_LEN, rrr_mr_lkey(g)) == 0);
	TH_CHECK(post_recv_one(e, 2, rrr_mr_iova(h), BIG, rrr_mr_lkey(h)) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(expect(e, 1, RRR_WC_RECV, SMALL_LEN) == 0);
	TH_CHECK(small_holds(a, 3) == 0);
	TH_CHECK(expect(e, 2, RRR_WC_RECV, BIG) == 0);
	TH_CHECK(pieces_hold(b, 0, BIG, 4) == 0);
	TH_CHECK(healthy(e) == 0);
	/* back: SENDs from both, an RDMA WRITE from the 3-piece one */
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	TH_CHECK(post_one(e, RRR_WR_SEND, 3, rrr_mr_iova(g) + 10, SMALL_LEN, rrr_mr_lkey(g), 0,
			  0) == 0);
	TH_CHECK(post_one(e, RRR_WR_SEND, 4, rrr_mr_iova(h), BIG, rrr_mr_lkey(h), 0, 0) == 0);
	TH_CHECK(post_one(e, RRR_WR_RDMA_WRITE, 5, rrr_mr_iova(g) + 10, SMALL_LEN, rrr_mr_lkey(g),
			  k.addr, k.rkey) == 0);
	/* an RDMA READ of the peer's 2,048 bytes into the 128 pieces */
	TH_CHECK(post_one(e, RRR_WR_RDMA_READ, 6, rrr_mr_iova(h), BIG, rrr_mr_lkey(h),
			  k.addr + SMALL_LEN, k.rkey) == 0);
	TH_CHECK(expect(e, 3, RRR_WC_SEND, 0) == 0);
	TH_CHECK(expect(e, 4, RRR_WC_SEND, 0) == 0);
	TH_CHECK(expect(e, 5, RRR_WC_RDMA_WRITE, 0) == 0);
	TH_CHECK(expect(e, 6, RRR_WC_RDMA_READ, 0) == 0);
	TH_CHECK(pieces_hold(b, 0, BIG, 5) == 0);
	TH_CHECK(small_holds(a, 3) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	rrr_qp_destroy(e->qp);
	e->qp = NULL;
	TH_CHECK(release(g) == 0);
	TH_CHECK(release(h) == 0);
	free(a);
	free(b);
	return 0;
}

static int gap_client(struct th_ep *e, void *arg)
{
	uint8_t *src = malloc(SMALL_LEN + BIG), *back = malloc(SMALL_LEN + BIG);
	uint8_t *win = malloc(SMALL_LEN + BIG);
	struct rrr_mr *smr, *bmr, *wmr;
	struct th_key k;
	char go;

	(void)arg;
	TH_CHECK(src && back && win);
	th_fill(src, SMALL_LEN, 3);
	th_fill(src + SMALL_LEN, BIG, 4);
	memset(back, 0, SMALL_LEN + BIG);
	memset(win, 0, SMALL_LEN);
	th_fill(win + SMALL_LEN, BIG, 5); /* what the server READs */
	TH_CHECK(rrr_mr_reg(e->pd, src, SMALL_LEN + BIG, 0, &smr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, back, SMALL_LEN + BIG, RRR_ACCESS_LOCAL_WRITE, &bmr) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, win, SMALL_LEN + BIG,
			    RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ, &wmr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(post_one(e, RRR_WR_SEND, 1, (uintptr_t)src, SMALL_LEN, rrr_mr_lkey(smr), 0, 0) ==
		 0);
	TH_CHECK(post_one(e, RRR_WR_SEND, 2, (uintptr_t)src + SMALL_LEN, BIG, rrr_mr_lkey(smr), 0,
			  0) == 0);
	TH_CHECK(expect(e, 1, RRR_WC_SEND, 0) == 0);
	TH_CHECK(expect(e, 2, RRR_WC_SEND, 0) == 0);
	TH_CHECK(post_recv_one(e, 3, (uintptr_t)back, SMALL_LEN, rrr_mr_lkey(bmr)) == 0);
	TH_CHECK(post_recv_one(e, 4, (uintptr_t)back + SMALL_LEN, BIG, rrr_mr_lkey(bmr)) == 0);
	k = (struct th_key){ (uintptr_t)win, SMALL_LEN + BIG, rrr_mr_rkey(wmr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	TH_CHECK(expect(e, 3, RRR_WC_RECV, SMALL_LEN) == 0);
	TH_CHECK(expect(e, 4, RRR_WC_RECV, BIG) == 0);
	TH_CHECK(serve_until_oob(e) == 0); /* the server READs from us */
	/* exactly the registered bytes came back: no gap byte among them */
	TH_CHECK(th_check(back, SMALL_LEN, 3) == 0);
	TH_CHECK(th_check(back + SMALL_LEN, BIG, 4) == 0);
	TH_CHECK(th_check(win, SMALL_LEN, 3) == 0);
	TH_CHECK(healthy(e) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_cm_wait(e, RRR_CM_EVENT_DISCONNECTED, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_mr_dereg(smr) == 0);
	TH_CHECK(rrr_mr_dereg(bmr) == 0);
	TH_CHECK(rrr_mr_dereg(wmr) == 0);
	free(src);
	free(back);
	free(win);
	return 0;
}

TH_PAIR_TEST(soft_chunks, local_sges_on_gapped_mrs, NULL, gap_server, gap_client, NULL)
