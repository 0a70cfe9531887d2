/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/devcheck/loop.c - a loopback RC connection on one device.
 *
 * Normal operation: open the device with the strategy under test and build
 * the loopback pair of transport/loop_pair.c on (addr, ephemeral port): two
 * QPs on the same PD, each with its own CQ and rdma_cm channel. Buffers are
 * registered for local access only, so any remote access in the checks goes
 * through the registration under test. The client's ESTABLISHED is read
 * first: librdmacm sends the RTU while reading the client's event, and only
 * then does the server's ESTABLISHED come.
 *
 * Recovery: any failure tears down what was built (dc_loop_close handles a
 * partly built loop) and says which step failed; every wait is bounded by
 * DC_TIMEOUT_MS. A check that makes the QP fail uses its own loop.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcheck.h"

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(err, len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < len && rrr_last_error())
		snprintf(err + n, len - (size_t)n, ": %s", rrr_last_error());
	return rc < 0 ? rc : -EIO;
}

int dc_loop_open(struct dc_loop *l, const char *dev, const char *strategy, const char *addr,
		 char *err, size_t errlen)
{
	struct rrr__loop_opts lo = {
	    .qp =
		{
		    .max_send_wr = 32,
		    .max_recv_wr = 32,
		    .max_send_sge = 1,
		    .max_recv_sge = 1,
		    .max_rd_atomic = 4,
		},
	    .connect = {.ird = 4, .ord = 4},
	    .accept = {.ird = 4, .ord = 4},
	    .timeout_ms = DC_TIMEOUT_MS,
	};
	char opts[128];
	int rc;

	memset(l, 0, sizeof(*l));
	snprintf(opts, sizeof(opts), "dev=%s,strategy=%s", dev, strategy);
	rc = rrr_device_open("verbs", opts, &l->dev);
	if (rc)
		return fail(err, errlen, rc, "open %s", opts);
	rrr_device_query(l->dev, &l->attr);
	if ((rc = rrr_pd_alloc(l->dev, &l->pd)) || (rc = rrr_cq_create(l->dev, 64, &l->ccq)) ||
	    (rc = rrr_cq_create(l->dev, 64, &l->scq)))
		return fail(err, errlen, rc, "device objects");
	lo.c_pd = lo.s_pd = l->pd;
	lo.c_cq = l->ccq;
	lo.s_cq = l->scq;
	l->cbuf = aligned_alloc(4096, DC_BUF);
	l->sbuf = aligned_alloc(4096, DC_BUF);
	if (!l->cbuf || !l->sbuf)
		return fail(err, errlen, -ENOMEM, "buffers");
	memset(l->cbuf, 0xc1, DC_BUF);
	memset(l->sbuf, 0, DC_BUF);
	if ((rc = rrr_mr_reg(l->pd, l->cbuf, DC_BUF, RRR_ACCESS_LOCAL_WRITE, &l->cmr)) ||
	    (rc = rrr_mr_reg(l->pd, l->sbuf, DC_BUF, RRR_ACCESS_LOCAL_WRITE, &l->smr)))
		return fail(err, errlen, rc, "rrr_mr_reg");
	if ((rc = rrr__loop_listen(&l->pair, l->dev, addr)))
		return fail(err, errlen, rc, "listen on %s", addr);
	if ((rc = rrr__loop_connect(&l->pair, &lo)))
		return fail(err, errlen, rc, "connect/accept/establish on %s", addr);
	l->cqp = l->pair.c.qp;
	l->sqp = l->pair.s.qp;
	return 0;
}

void dc_loop_close(struct dc_loop *l)
{
	l->pair.c.qp = l->cqp;
	l->pair.s.qp = l->sqp;
	rrr__loop_close(&l->pair);
	rrr_mr_dereg(l->cmr);
	rrr_mr_dereg(l->smr);
	rrr_cq_destroy(l->ccq);
	rrr_cq_destroy(l->scq);
	rrr_pd_free(l->pd);
	rrr_device_close(l->dev);
	free(l->cbuf);
	free(l->sbuf);
	memset(l, 0, sizeof(*l));
}

int dc_wait(struct rrr_cq *cq, struct rrr_wc *wc)
{
	int waited = 0, rc;

	while (waited < DC_TIMEOUT_MS) {
		rc = rrr_cq_wait(cq, wc, 1, 100);
		if (rc < 0)
			return 0;
		if (rc == 1)
			return 1;
		waited += 100;
	}
	return 0;
}

enum rrr_wc_status dc_write(struct dc_loop *l, uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct rrr_sge sge = {(uintptr_t)l->cbuf, len, rrr_mr_lkey(l->cmr)};
	struct rrr_send_wr wr;
	struct rrr_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RRR_WR_RDMA_WRITE;
	wr.flags = RRR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.u.rdma.remote_addr = raddr;
	wr.u.rdma.rkey = rkey;
	if (rrr_qp_post_send(l->cqp, &wr, NULL) || !dc_wait(l->ccq, &wc))
		return RRR_WC_GENERAL_ERR;
	return wc.status;
}

enum rrr_wc_status dc_server_post(struct dc_loop *l, struct rrr_send_wr *wr)
{
	struct rrr_wc wc;

	wr->flags |= RRR_SEND_SIGNALED;
	wr->next = NULL;
	if (rrr_qp_post_send(l->sqp, wr, NULL) || !dc_wait(l->scq, &wc))
		return RRR_WC_GENERAL_ERR;
	return wc.status;
}
