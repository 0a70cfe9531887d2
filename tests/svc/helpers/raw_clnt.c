/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/helpers/raw_clnt.c - the hand-driven RPC-over-RDMA client
 * endpoint of the server tests (see raw_clnt.h).
 */
#include "raw_clnt.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/log.h>

#include "../../test_env.h"

void traw_open(struct traw *r, const struct traw_opts *o)
{
	struct rrr_qp_init_attr qa;
	struct sockaddr_storage ss;
	socklen_t sl;
	char ps[16];
	void *p;

	memset(r, 0, sizeof(*r));
	r->o = *o;
	cr_assert_eq(rrr_device_open(o->provider, o->provider_opts, &r->dev), 0, "%s",
		     rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(rrr_pd_alloc(r->dev, &r->pd), 0);
	cr_assert_eq(rrr_cq_create(r->dev, o->cq_depth, &r->cq), 0);
	cr_assert_eq(rrr_cm_create(r->dev, &r->cm), 0);
	cr_assert_eq(rrr_cm_id_create(r->cm, NULL, &r->id), 0);
	snprintf(ps, sizeof(ps), "%u", o->port);
	cr_assert_eq(rrr_addr_parse(tenv_addr(), ps, &ss, &sl), 0);
	cr_assert_eq(rrr_cm_resolve(r->id, (struct sockaddr *)&ss, sl, 5000), 0);
	cr_assert_eq(traw_wait_ev(r, RRR_CM_EVENT_RESOLVED), 0);
	qa = (struct rrr_qp_init_attr){.pd = r->pd, .send_cq = r->cq, .recv_cq = r->cq,
				       .max_send_wr = o->send_wr, .max_recv_wr = o->recv_wr,
				       .max_send_sge = 1, .max_recv_sge = 1, .max_rd_atomic = o->rd};
	cr_assert_eq(rrr_qp_create(r->id, &qa, &r->qp), 0);
	cr_assert_eq(posix_memalign(&p, 4096, (size_t)o->nbufs * o->bufsz), 0);
	r->mem = p;
	cr_assert_eq(rrr_mr_reg(r->pd, r->mem, (size_t)o->nbufs * o->bufsz, RRR_ACCESS_LOCAL_WRITE,
				&r->mr),
		     0);
}

int traw_wait_ev(struct traw *r, enum rrr_cm_event_type want)
{
	struct rrr_cm_event ev;
	int rc = rrr_cm_wait_event(r->cm, &ev, 5000);

	return rc ? rc : ev.type == want ? 0 : -EPROTO;
}

void traw_post_recv(struct traw *r, unsigned i)
{
	struct rrr_sge sge = {(uint64_t)(uintptr_t)(r->mem + (size_t)i * r->o.bufsz), r->o.bufsz,
			      rrr_mr_lkey(r->mr)};
	struct rrr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	cr_assert_eq(rrr_qp_post_recv(r->qp, &wr, &bad), 0);
}

void traw_connect(struct traw *r, const struct rrr_rdma_cm_pd *pd)
{
	struct rrr_conn_param cp;
	uint8_t pdb[RRR_RDMA_PD_LEN];

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pdb;
	cp.private_data_len = (uint32_t)rrr_rdma_cm_pd_encode(pdb, pd);
	cp.ord = r->o.rd;
	cp.ird = r->o.rd;
	cr_assert_eq(rrr_cm_connect(r->id, &cp), 0);
	cr_assert_eq(traw_wait_ev(r, RRR_CM_EVENT_ESTABLISHED), 0);
}

void traw_close(struct traw *r)
{
	if (r->qp) {
		rrr_cm_disconnect(r->id);
		rrr_qp_destroy(r->qp);
	}
	if (r->id)
		rrr_cm_id_destroy(r->id);
	if (r->mr)
		rrr_mr_dereg(r->mr);
	if (r->cq)
		rrr_cq_destroy(r->cq);
	if (r->cm)
		rrr_cm_destroy(r->cm);
	if (r->pd)
		rrr_pd_free(r->pd);
	if (r->dev)
		rrr_device_close(r->dev);
	free(r->mem);
	memset(r, 0, sizeof(*r));
}
