/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/helpers/pair.c - loopback connection helper (see pair.h).
 * The connection is the library's loopback pair (transport/loop_pair.c):
 * client and server use separate rdma_cm event channels so each side's
 * events are unambiguous; every wait is bounded by VP_TIMEOUT_MS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pair.h"

const char *vp_opts(const char *strategy)
{
	static char buf[160];
	const char *dev = getenv("RRR_VERBS_DEV");

	buf[0] = '\0';
	if (dev && *dev)
		snprintf(buf, sizeof(buf), "dev=%s", dev);
	if (strategy && *strategy)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%sstrategy=%s",
			 buf[0] ? "," : "", strategy);
	return buf;
}

void vp_open(struct vp *p, const char *opts)
{
	const char *ip = getenv("RRR_VM_ADDR");
	int rc;

	memset(p, 0, sizeof(*p));
	rc = rrr_device_open("verbs", opts ? opts : vp_opts(NULL), &p->dev);
	if (rc == -ENODEV)
		cr_skip_test("no RDMA device: run make test-vm (%s)",
			     rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(rc, 0, "rrr_device_open(verbs, %s): %d %s", opts ? opts : "", rc,
		     rrr_last_error() ? rrr_last_error() : "");
	if (!ip || !*ip) {
		rrr_device_close(p->dev);
		p->dev = NULL;
		cr_skip_test("RDMA device present but RRR_VM_ADDR (IPv4 of its netdev) unset");
	}
	cr_assert_eq(rrr_device_query(p->dev, &p->attr), 0);
	cr_assert_eq(rrr_pd_alloc(p->dev, &p->pd), 0);
	cr_assert_eq(rrr_cq_create(p->dev, 256, &p->ccq), 0);
	cr_assert_eq(rrr_cq_create(p->dev, 256, &p->scq), 0);
	p->cbuf = aligned_alloc(4096, VP_BUF);
	p->sbuf = aligned_alloc(4096, VP_BUF);
	cr_assert(p->cbuf && p->sbuf);
	memset(p->cbuf, 0, VP_BUF);
	memset(p->sbuf, 0, VP_BUF);
	cr_assert_eq(
	    rrr_mr_reg(p->pd, p->cbuf, VP_BUF,
		       RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ,
		       &p->cmr),
	    0);
	cr_assert_eq(
	    rrr_mr_reg(p->pd, p->sbuf, VP_BUF,
		       RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ,
		       &p->smr),
	    0);
	rc = rrr__loop_listen(&p->lp, p->dev, ip);
	cr_assert_eq(rc, 0, "listen on %s: %d %s", ip, rc, rrr_last_error());
	p->ccm = p->lp.c.cm;
	p->scm = p->lp.s.cm;
	p->listen = p->lp.listen;
	p->addr = p->lp.addr;
	p->addrlen = p->lp.addrlen;
	cr_assert_neq(((struct sockaddr_in *)&p->addr)->sin_port, 0);
}

void vp_expect_event(struct rrr_cm *cm, enum rrr_cm_event_type type, struct rrr_cm_event *ev)
{
	int rc = rrr_cm_wait_event(cm, ev, VP_TIMEOUT_MS);

	cr_assert_eq(rc, 0, "waiting for %s: %d %s", rrr_cm_event_str(type), rc,
		     rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(ev->type, type, "expected %s, got %s (status %d: %s)", rrr_cm_event_str(type),
		     rrr_cm_event_str(ev->type), ev->status,
		     rrr_last_error() ? rrr_last_error() : "");
}

void vp_connect(struct vp *p, const void *cpd, uint32_t clen, const void *apd, uint32_t alen)
{
	struct rrr__loop_opts lo = {
	    .c_pd = p->pd,
	    .s_pd = p->pd,
	    .c_cq = p->ccq,
	    .s_cq = p->scq,
	    .qp =
		{
		    .max_send_wr = 64,
		    .max_recv_wr = 64,
		    .max_send_sge = 4,
		    .max_recv_sge = 4,
		    .max_rd_atomic = 4,
		},
	    .connect = {.private_data = cpd, .private_data_len = clen, .ird = 4, .ord = 4},
	    .accept = {.private_data = apd, .private_data_len = alen, .ird = 4, .ord = 4},
	    .timeout_ms = VP_TIMEOUT_MS,
	};
	int rc = rrr__loop_connect(&p->lp, &lo);

	p->cid = p->lp.c.id;
	p->sid = p->lp.s.id;
	p->cqp = p->lp.c.qp;
	p->sqp = p->lp.s.qp;
	cr_assert_eq(rc, 0, "loopback connection: %d %s", rc,
		     rrr_last_error() ? rrr_last_error() : "");
	p->last_req = p->lp.req;
	p->last_est = p->lp.est;
	cr_assert_eq(p->last_req.listen_id, p->listen);
	cr_assert_eq(p->last_req.id, p->sid);
}

struct rrr_wc vp_wait_wc(struct rrr_cq *cq)
{
	struct rrr_wc wc;
	int waited = 0, rc;

	for (;;) {
		rc = rrr_cq_wait(cq, &wc, 1, 200);
		cr_assert_geq(rc, 0, "cq_wait: %d", rc);
		if (rc == 1)
			return wc;
		waited += 200;
		cr_assert_lt(waited, VP_TIMEOUT_MS, "no completion within %d ms", VP_TIMEOUT_MS);
	}
}

void vp_post_recv(struct vp *p, int server, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct rrr_sge sge = {
	    .addr = (uintptr_t)(server ? p->sbuf : p->cbuf) + off,
	    .length = len,
	    .lkey = rrr_mr_lkey(server ? p->smr : p->cmr),
	};
	struct rrr_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};

	cr_assert_eq(rrr_qp_post_recv(server ? p->sqp : p->cqp, &wr, NULL), 0);
}

void vp_post_send(struct vp *p, int server, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct rrr_sge sge = {
	    .addr = (uintptr_t)(server ? p->sbuf : p->cbuf) + off,
	    .length = len,
	    .lkey = rrr_mr_lkey(server ? p->smr : p->cmr),
	};
	struct rrr_send_wr wr = {.wr_id = wr_id,
				 .opcode = RRR_WR_SEND,
				 .flags = RRR_SEND_SIGNALED,
				 .sg_list = &sge,
				 .num_sge = 1};

	cr_assert_eq(rrr_qp_post_send(server ? p->sqp : p->cqp, &wr, NULL), 0);
}

struct rrr_wc vp_client_op(struct vp *p, enum rrr_wr_opcode op, uint64_t wr_id, uint32_t off,
			   uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct rrr_sge sge = {(uintptr_t)p->cbuf + off, len, rrr_mr_lkey(p->cmr)};
	struct rrr_send_wr wr = {.wr_id = wr_id, .opcode = op, .flags = RRR_SEND_SIGNALED,
				 .sg_list = &sge, .num_sge = 1};

	if (op == RRR_WR_SEND_WITH_INV)
		wr.u.send.invalidate_rkey = rkey;
	else
		wr.u.rdma.remote_addr = raddr, wr.u.rdma.rkey = rkey;
	cr_assert_eq(rrr_qp_post_send(p->cqp, &wr, NULL), 0, "%s", rrr_last_error());
	return vp_wait_wc(p->ccq);
}

enum rrr_wc_status vp_client_write(struct vp *p, uint64_t addr, uint32_t rkey, uint32_t len,
				   uint8_t seed)
{
	struct rrr_wc wc;

	for (uint32_t i = 0; i < len; i++)
		p->cbuf[i] = (uint8_t)(seed + i);
	wc = vp_client_op(p, RRR_WR_RDMA_WRITE, 0x77, 0, len, addr, rkey);
	cr_assert_eq(wc.wr_id, 0x77u);
	return wc.status;
}

void vp_close(struct vp *p)
{
	if (!p->dev)
		return;
	/* tests build or destroy ids and QPs through these fields: they are
	 * what the pair has to destroy */
	p->lp.c.id = p->cid;
	p->lp.s.id = p->sid;
	p->lp.c.qp = p->cqp;
	p->lp.s.qp = p->sqp;
	rrr__loop_close(&p->lp);
	rrr_mr_dereg(p->cmr);
	rrr_mr_dereg(p->smr);
	rrr_cq_destroy(p->ccq);
	rrr_cq_destroy(p->scq);
	rrr_pd_free(p->pd);
	rrr_device_close(p->dev);
	free(p->cbuf);
	free(p->sbuf);
	memset(p, 0, sizeof(*p));
}

void vp_open_connected(struct vp *p, const char *opts)
{
	vp_open(p, opts);
	vp_connect(p, NULL, 0, NULL, 0);
}
