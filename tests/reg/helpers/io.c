/* SPDX-License-Identifier: MIT */
/* tests/reg/helpers/io.c - see io.h. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

#define RIO_TMO 5000

/* Wait for the client completion @id: successful, of opcode @op. */
static void client_done(struct loop *l, uint64_t id, enum rrr_wc_opcode op, const char *what)
{
	struct rrr_wc wc;

	cr_assert_eq(loop_wait(l, &l->c, id, &wc, RIO_TMO), 0, "%s completion", what);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s: %s", what, rrr_wc_status_str(wc.status));
	cr_expect_eq(wc.opcode, op, "%s: opcode %d", what, (int)wc.opcode);
}

void rio_post_reg(struct loop *l, struct rrr_reg_io *r, uint64_t id)
{
	struct rrr_send_wr *bad;

	r->reg_wr[r->nsegs - 1].flags |= RRR_SEND_SIGNALED;
	r->reg_wr[r->nsegs - 1].wr_id = id;
	cr_assert_eq(rrr_qp_post_send(l->c.qp, &r->reg_wr[0], &bad), 0);
	client_done(l, id, RRR_WC_REG_MR, "REG_MR");
}

void rio_local_inv(struct loop *l, struct rrr_mrpool *pool, struct rrr_reg_io *r, uint64_t id)
{
	struct rrr_send_wr *inv = rrr_reg_build_inv(pool, r, id), *bad;

	if (inv) {
		cr_assert_eq(rrr_qp_post_send(l->c.qp, inv, &bad), 0);
		client_done(l, id, RRR_WC_LOCAL_INV, "LOCAL_INV");
	}
	rrr_reg_inv_done(pool, r);
}

void rio_peer_write_then_send(struct loop *l, const uint8_t *src, struct rrr_mr *src_mr,
			      const struct rrr_reg_seg *segs, uint32_t nsegs, uint32_t inv_rkey,
			      uint64_t id)
{
	struct rrr_send_wr wr[RRR_REG_MAX_SEGS + 1], *bad;
	struct rrr_sge sge[RRR_REG_MAX_SEGS + 1];
	uint64_t off = 0;
	uint32_t i;

	cr_assert_leq(nsegs, RRR_REG_MAX_SEGS);
	for (i = 0; i < nsegs; i++) {
		sge[i] = (struct rrr_sge){ (uintptr_t)src + off, segs[i].length, rrr_mr_lkey(src_mr) };
		wr[i] = (struct rrr_send_wr){ .wr_id = 1, .opcode = RRR_WR_RDMA_WRITE,
					      .sg_list = &sge[i], .num_sge = 1, .next = &wr[i + 1],
					      .u.rdma = { .remote_addr = segs[i].offset,
							  .rkey = segs[i].handle } };
		off += segs[i].length;
	}
	sge[i] = (struct rrr_sge){ (uintptr_t)src, 8, rrr_mr_lkey(src_mr) };
	wr[i] = (struct rrr_send_wr){ .wr_id = id, .sg_list = &sge[i], .num_sge = 1,
				      .opcode = inv_rkey ? RRR_WR_SEND_WITH_INV : RRR_WR_SEND,
				      .flags = RRR_SEND_SIGNALED,
				      .u.send.invalidate_rkey = inv_rkey };
	cr_assert_eq(rrr_qp_post_send(l->p.qp, &wr[0], &bad), 0);
}

void rio_expect_placed(const uint8_t *buf, size_t len, uint8_t guard, const struct rrr_sg *sg,
		       unsigned n, const uint8_t *src)
{
	uint8_t *want = malloc(len);
	size_t off = 0;

	cr_assert(want);
	memset(want, guard, len);
	for (unsigned i = 0; i < n; i++) {
		size_t at = (size_t)((const uint8_t *)sg[i].page + sg[i].offset - buf);

		memcpy(want + at, src + off, sg[i].length);
		off += sg[i].length;
	}
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(buf[i], want[i], "byte %zu: 0x%02x, expected 0x%02x", i, buf[i],
			     want[i]);
	free(want);
}

void rio_close(struct loop *l, struct rrr_mrpool *pool, struct rrr_mr *peer_mr,
	       struct rrr_mr *client_mr)
{
	loop_disconnect(l);
	rrr_mrpool_destroy(pool);
	rrr_mr_dereg(peer_mr);
	rrr_mr_dereg(client_mr);
	loop_close(l);
}
