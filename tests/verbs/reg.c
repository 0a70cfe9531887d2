/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/reg.c - per-I/O registration on a real device, for each
 * strategy: map_sg (virtually contiguous prefix), REG_MR, remote WRITE
 * through the new key, LOCAL_INV, key rotation, that a stale key is refused
 * after invalidation (not for "persistent": it is unsafe by design, and the
 * test shows it), in-order synthetic completions (regmr), remote
 * invalidation with Send With Invalidate (mw), recovery, and QP teardown with
 * a bound window (rxe quirk 4).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "helpers/pair.h"

/* Post @wr (signaled) on the server's QP and wait for its completion:
 * successful, of opcode @op and with @wr's wr_id; @what names it. */
static void server_post(struct vp *p, struct rrr_send_wr *wr, enum rrr_wc_opcode op,
			const char *what)
{
	struct rrr_wc wc;
	int rc = rrr_qp_post_send(p->sqp, wr, NULL);

	cr_assert_eq(rc, 0, "post %s: %d %s", what, rc, rrr_last_error());
	wc = vp_wait_wc(p->scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s: %s", what, rrr_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, op);
	cr_assert_eq(wc.wr_id, wr->wr_id);
}

/* The server registers @mr with @access (REG_MR, work request 0x51). */
static void server_reg(struct vp *p, struct rrr_mr *mr, unsigned access)
{
	struct rrr_send_wr wr = { .wr_id = 0x51, .opcode = RRR_WR_REG_MR, .flags = RRR_SEND_SIGNALED,
				  .u.reg = { .mr = mr, .access = access } };

	server_post(p, &wr, RRR_WC_REG_MR, "REG_MR");
}

/* The server invalidates @rkey (LOCAL_INV, work request 0x52). */
static void server_inv(struct vp *p, uint32_t rkey)
{
	struct rrr_send_wr wr = { .wr_id = 0x52, .opcode = RRR_WR_LOCAL_INV,
				  .flags = RRR_SEND_SIGNALED, .u.inv.rkey = rkey };

	server_post(p, &wr, RRR_WC_LOCAL_INV, "LOCAL_INV");
}

/* A fast-registration MR of @p's PD with the one 4 KiB @page mapped for
 * @access (not yet registered). */
static struct rrr_mr *mapped_page(struct vp *p, uint8_t *page, unsigned access)
{
	struct rrr_sg sg = { page, 0, 4096 };
	struct rrr_mr *mr;

	cr_assert_eq(rrr_mr_alloc(p->pd, 4, &mr), 0);
	cr_assert_eq(rrr_mr_map_sg(mr, &sg, 1, access), 1);
	return mr;
}

static void fast_reg_cycle(const char *strategy, bool protects)
{
	const unsigned acc = RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE;
	struct rrr_mr *mr;
	struct rrr_sg sg[3];
	uint32_t k1, k2;
	struct vp p;
	int n;

	vp_open_connected(&p, vp_opts(strategy));
	cr_assert_eq(rrr_mr_alloc(p.pd, 16, &mr), 0, "%s", rrr_last_error());

	/* two abutting entries and one after a hole: two are mapped */
	sg[0] = (struct rrr_sg){p.sbuf + 8192, 0, 1000};
	sg[1] = (struct rrr_sg){p.sbuf + 8192, 1000, 3096};
	sg[2] = (struct rrr_sg){p.sbuf + 16384, 0, 4096};
	n = rrr_mr_map_sg(mr, sg, 3, acc);
	cr_assert_eq(n, 2, "map_sg: %d %s", n, rrr_last_error());
	cr_assert_eq(rrr_mr_iova(mr), (uint64_t)(uintptr_t)(p.sbuf + 8192));
	cr_assert_eq(rrr_mr_length(mr), 4096u);
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 1, acc), -EINVAL, "map_sg of a mapped MR");
	k1 = rrr_mr_rkey(mr);
	server_reg(&p, mr, acc);
	cr_assert_eq(vp_client_write(&p, rrr_mr_iova(mr), k1, 4096, 3), RRR_WC_SUCCESS);
	cr_assert_eq(memcmp(p.sbuf + 8192, p.cbuf, 4096), 0);
	cr_assert_eq(rrr_mr_dereg(mr), -EBUSY, "dereg of a VALID MR");
	server_inv(&p, k1);

	/* the same range again: a new key */
	cr_assert_eq(rrr_mr_map_sg(mr, sg, 2, acc), 2);
	k2 = rrr_mr_rkey(mr);
	if (protects)
		cr_assert_neq(k1, k2, "the key must rotate on every map");
	server_reg(&p, mr, acc);
	cr_assert_eq(vp_client_write(&p, rrr_mr_iova(mr), k2, 512, 9), RRR_WC_SUCCESS);
	cr_assert_eq(memcmp(p.sbuf + 8192, p.cbuf, 512), 0);
	server_inv(&p, k2);

	/* after invalidation the old key must not work (the QP dies) */
	memset(p.sbuf + 8192, 0, 4096);
	if (protects) {
		cr_assert_eq(vp_client_write(&p, (uintptr_t)(p.sbuf + 8192), k2, 256, 1),
			     RRR_WC_REM_ACCESS_ERR);
		cr_assert_eq(p.sbuf[8192], 0, "a write with an invalidated key landed");
	} else {
		/* persistent: the key outlives the I/O. That is why it is unsafe. */
		cr_assert_eq(vp_client_write(&p, (uintptr_t)(p.sbuf + 8192), k2, 256, 1),
			     RRR_WC_SUCCESS);
	}
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}

Test(verbs_reg, regmr_cycle, .timeout = 120)
{
	fast_reg_cycle("regmr", true);
}

Test(verbs_reg, mw_cycle, .timeout = 120)
{
	fast_reg_cycle("mw", true);
}

Test(verbs_reg, persistent_cycle_is_unsafe, .timeout = 120)
{
	fast_reg_cycle("persistent", false);
}

Test(verbs_reg, regmr_synthetic_completions_in_order, .timeout = 120)
{
	struct rrr_send_wr w[3];
	struct rrr_sge sge;
	struct rrr_mr *mr;
	struct rrr_sg sg;
	struct rrr_wc wc;
	struct vp p;
	int i;

	vp_open_connected(&p, vp_opts("regmr"));
	cr_assert_eq(rrr_mr_alloc(p.pd, 4, &mr), 0);
	sg = (struct rrr_sg){p.sbuf + 4096, 0, 4096};
	cr_assert_eq(rrr_mr_map_sg(mr, &sg, 1, RRR_ACCESS_REMOTE_READ), 1);
	vp_post_recv(&p, 0, 1, 0, 64);
	sge = (struct rrr_sge){(uintptr_t)p.sbuf, 32, rrr_mr_lkey(p.smr)};
	memset(w, 0, sizeof(w));
	w[0].next = &w[1];
	w[0].wr_id = 10;
	w[0].opcode = RRR_WR_SEND;
	w[0].flags = RRR_SEND_SIGNALED;
	w[0].sg_list = &sge;
	w[0].num_sge = 1;
	w[1].next = &w[2];
	w[1].wr_id = 11;
	w[1].opcode = RRR_WR_REG_MR;
	w[1].flags = RRR_SEND_SIGNALED;
	w[1].u.reg.mr = mr;
	w[1].u.reg.access = RRR_ACCESS_REMOTE_READ;
	w[2].wr_id = 12;
	w[2].opcode = RRR_WR_LOCAL_INV;
	w[2].flags = RRR_SEND_SIGNALED;
	w[2].u.inv.rkey = rrr_mr_rkey(mr);
	cr_assert_eq(rrr_qp_post_send(p.sqp, w, NULL), 0, "%s", rrr_last_error());
	for (i = 0; i < 3; i++) {
		wc = vp_wait_wc(p.scq);
		cr_assert_eq(wc.status, RRR_WC_SUCCESS);
		cr_assert_eq(wc.wr_id, 10u + (uint64_t)i, "completion %d out of order", i);
	}
	cr_assert_eq(vp_wait_wc(p.ccq).opcode, RRR_WC_RECV);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}

Test(verbs_reg, mw_remote_invalidation, .timeout = 120)
{
	const unsigned acc = RRR_ACCESS_REMOTE_WRITE;
	struct rrr_mr *mr;
	struct rrr_sg sg;
	struct rrr_wc wc;
	uint32_t key;
	struct vp p;

	vp_open(&p, vp_opts("mw"));
	if (!p.attr.send_with_inv) {
		vp_close(&p);
		cr_skip_test("device has no memory windows / remote invalidation");
	}
	vp_connect(&p, NULL, 0, NULL, 0);
	cr_assert_eq(rrr_mr_alloc(p.pd, 4, &mr), 0);
	sg = (struct rrr_sg){p.sbuf + 4096, 0, 4096};
	cr_assert_eq(rrr_mr_map_sg(mr, &sg, 1, acc), 1);
	key = rrr_mr_rkey(mr);
	server_reg(&p, mr, acc);
	cr_assert_eq(vp_client_write(&p, rrr_mr_iova(mr), key, 128, 5), RRR_WC_SUCCESS);

	/* the client answers with Send With Invalidate of the server's key */
	vp_post_recv(&p, 1, 40, 0, 64);
	wc = vp_client_op(&p, RRR_WR_SEND_WITH_INV, 41, 0, 8, 0, key);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.opcode, RRR_WC_RECV);
	cr_assert(wc.wc_flags & RRR_WC_WITH_INV, "RRR_WC_WITH_INV missing (rxe quirk 3?)");
	cr_assert_eq(wc.invalidated_rkey, key);
	/* the provider knows the MR is INVALID: it can be mapped again */
	cr_assert_eq(rrr_mr_map_sg(mr, &sg, 1, acc), 1);
	cr_assert_neq(rrr_mr_rkey(mr), key);
	cr_assert_eq(rrr_mr_recover(mr), 0);
	/* and the invalidated key no longer works */
	cr_assert_eq(vp_client_write(&p, (uintptr_t)(p.sbuf + 4096), key, 64, 1),
		     RRR_WC_REM_ACCESS_ERR);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}

Test(verbs_reg, remote_inv_opt_out, .timeout = 60)
{
	struct rrr_send_wr wr, *bad = NULL;
	char opts[160];
	struct vp p;

	snprintf(opts, sizeof(opts), "%s,remote_inv=0", vp_opts(NULL));
	vp_open(&p, opts);
	cr_assert_not(p.attr.send_with_inv);
	vp_connect(&p, NULL, 0, NULL, 0);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_SEND_WITH_INV;
	wr.u.send.invalidate_rkey = 0x1234;
	cr_assert_eq(rrr_qp_post_send(p.cqp, &wr, &bad), -EOPNOTSUPP);
	cr_assert_eq(bad, &wr);
	vp_close(&p);
}

Test(verbs_reg, recover_kills_old_key, .timeout = 120)
{
	const unsigned acc = RRR_ACCESS_REMOTE_WRITE;
	struct rrr_mr *mr;
	uint32_t key;
	struct vp p;

	vp_open_connected(&p, vp_opts("mw"));
	mr = mapped_page(&p, p.sbuf, acc);
	key = rrr_mr_rkey(mr);
	server_reg(&p, mr, acc);
	cr_assert_eq(rrr_mr_recover(mr), 0);
	cr_assert_neq(rrr_mr_rkey(mr), key);
	cr_assert_eq(vp_client_write(&p, (uintptr_t)p.sbuf, key, 64, 1), RRR_WC_REM_ACCESS_ERR);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}

Test(verbs_reg, qp_destroy_with_bound_window_is_prompt, .timeout = 120)
{
	struct rrr_mr *mr;
	struct timespec a, b;
	struct vp p;

	vp_open_connected(&p, vp_opts("mw"));
	mr = mapped_page(&p, p.sbuf, RRR_ACCESS_REMOTE_WRITE);
	server_reg(&p, mr, RRR_ACCESS_REMOTE_WRITE);
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(rrr_qp_destroy(p.sqp), 0);
	p.sqp = NULL;
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_lt(b.tv_sec - a.tv_sec, 10,
		     "QP destroy with a bound window took %lds "
		     "(rxe quirk 4 not handled)",
		     (long)(b.tv_sec - a.tv_sec));
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}

Test(verbs_reg, regmr_synthetic_completion_flushes_on_dead_qp, .timeout = 120)
{
	struct rrr_send_wr wr;
	struct rrr_mr *mr;
	struct rrr_wc wc;
	struct vp p;

	vp_open_connected(&p, vp_opts("regmr"));
	/* a WRITE with a key that does not exist kills the client QP */
	cr_assert_eq(vp_client_write(&p, (uintptr_t)p.sbuf, 0x00abcd00, 16, 1), RRR_WC_REM_ACCESS_ERR);
	mr = mapped_page(&p, p.cbuf + 4096, RRR_ACCESS_REMOTE_WRITE);
	wr = (struct rrr_send_wr){ .wr_id = 0x61, .opcode = RRR_WR_REG_MR,
				   .flags = RRR_SEND_SIGNALED, .u.reg.mr = mr };
	cr_assert_eq(rrr_qp_post_send(p.cqp, &wr, NULL), 0);
	wc = vp_wait_wc(p.ccq);
	cr_assert_eq(wc.wr_id, 0x61u);
	cr_assert_eq(wc.status, RRR_WC_WR_FLUSH_ERR, "got %s", rrr_wc_status_str(wc.status));
	cr_assert_eq(rrr_mr_recover(mr), 0);
	cr_assert_eq(rrr_mr_dereg(mr), 0);
	vp_close(&p);
}
