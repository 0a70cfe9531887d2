/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/cm.c - connection management on a real device: resolve,
 * connect/accept with private data, reject with private data, disconnect
 * (flushes), addresses, and the resolve error for a non-RDMA address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers/pair.h"

Test(verbs_cm, connect_accept_private_data_disconnect, .timeout = 120)
{
	static const char hello[] = "rrr-hello", welcome[] = "rrr-welcome";
	struct rrr_cm_event ev;
	struct sockaddr_storage ss;
	struct rrr_wc wc;
	struct vp p;

	vp_open(&p, NULL);
	vp_connect(&p, hello, sizeof(hello), welcome, sizeof(welcome));
	/* IB CM pads private data with zeros up to its field size. */
	cr_assert_geq(p.last_req.private_data_len, sizeof(hello));
	cr_assert_eq(memcmp(p.last_req.private_data, hello, sizeof(hello)), 0);
	cr_assert_geq(p.last_est.private_data_len, sizeof(welcome));
	cr_assert_eq(memcmp(p.last_est.private_data, welcome, sizeof(welcome)), 0);
	cr_assert_eq(p.last_req.ord, 4u);

	cr_assert_eq(rrr_cm_id_peer_addr(p.cid, &ss), 0);
	cr_assert_eq(((struct sockaddr_in *)&ss)->sin_port,
		     ((struct sockaddr_in *)&p.addr)->sin_port);
	cr_assert_eq(rrr_cm_id_local_addr(p.sid, &ss), 0);
	cr_assert_eq(ss.ss_family, AF_INET);
	cr_assert_eq(rrr_cm_id_qp(p.cid), p.cqp);

	/* one message works, then an orderly disconnect flushes a posted recv */
	vp_post_recv(&p, 1, 7, 0, 64);
	memcpy(p.cbuf, "ping", 4);
	vp_post_send(&p, 0, 8, 0, 4);
	wc = vp_wait_wc(p.ccq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.opcode, RRR_WC_SEND);
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS);
	cr_assert_eq(wc.opcode, RRR_WC_RECV);
	cr_assert_eq(wc.byte_len, 4u);
	cr_assert_eq(memcmp(p.sbuf, "ping", 4), 0);

	vp_post_recv(&p, 1, 9, 0, 64);
	cr_assert_eq(rrr_cm_disconnect(p.cid), 0);
	/* The passive side's event answers the DREQ; then the active side's
	 * DISCONNECTED follows (IB CM: DREQ/DREP). */
	vp_expect_event(p.scm, RRR_CM_EVENT_DISCONNECTED, &ev);
	cr_assert_eq(ev.id, p.sid);
	vp_expect_event(p.ccm, RRR_CM_EVENT_DISCONNECTED, &ev);
	cr_assert_eq(ev.id, p.cid);
	wc = vp_wait_wc(p.scq);
	cr_assert_eq(wc.wr_id, 9u);
	cr_assert_eq(wc.status, RRR_WC_WR_FLUSH_ERR);
	vp_close(&p);
}

/* The client's id of @p resolved to the server and given a QP, not connected. */
static void client_qp(struct vp *p)
{
	struct rrr_qp_init_attr qa = {.pd = p->pd, .send_cq = p->ccq, .recv_cq = p->ccq};
	struct rrr_cm_event ev;

	cr_assert_eq(rrr_cm_id_create(p->ccm, NULL, &p->cid), 0);
	cr_assert_eq(rrr_cm_resolve(p->cid, (struct sockaddr *)&p->addr, p->addrlen, 5000), 0);
	vp_expect_event(p->ccm, RRR_CM_EVENT_RESOLVED, &ev);
	cr_assert_eq(rrr_qp_create(p->cid, &qa, &p->cqp), 0);
}

Test(verbs_cm, reject_with_private_data, .timeout = 120)
{
	static const char hello[] = "please", no[] = "go-away";
	struct rrr_conn_param cp = {.private_data = hello, .private_data_len = sizeof(hello)};
	struct rrr_cm_event ev;
	struct vp p;

	vp_open(&p, NULL);
	client_qp(&p);
	cr_assert_eq(rrr_cm_connect(p.cid, &cp), 0);
	vp_expect_event(p.scm, RRR_CM_EVENT_CONNECT_REQUEST, &ev);
	cr_assert_eq(memcmp(ev.private_data, hello, sizeof(hello)), 0);
	cr_assert_eq(rrr_cm_reject(ev.id, no, sizeof(no)), 0);
	rrr_cm_id_destroy(ev.id);
	vp_expect_event(p.ccm, RRR_CM_EVENT_REJECTED, &ev);
	cr_assert_eq(ev.status, -ECONNREFUSED);
	cr_assert_geq(ev.private_data_len, sizeof(no));
	cr_assert_eq(memcmp(ev.private_data, no, sizeof(no)), 0);
	vp_close(&p);
}

Test(verbs_cm, oversized_connect_private_data, .timeout = 60)
{
	uint8_t big[100] = {0};
	struct rrr_conn_param cp = {.private_data = big, .private_data_len = sizeof(big)};
	struct vp p;

	vp_open(&p, NULL);
	client_qp(&p);
	cr_assert_gt(sizeof(big), p.attr.max_private_data);
	cr_assert_eq(rrr_cm_connect(p.cid, &cp), -EINVAL);
	vp_close(&p);
}

Test(verbs_cm, resolve_non_rdma_address_fails_clearly, .timeout = 60)
{
	struct sockaddr_storage ss;
	struct rrr_cm_event ev;
	socklen_t len;
	struct vp p;
	int rc;

	vp_open(&p, NULL);
	cr_assert_eq(rrr_addr_parse("127.0.0.1", "20049", &ss, &len), 0);
	cr_assert_eq(rrr_cm_id_create(p.ccm, NULL, &p.cid), 0);
	rc = rrr_cm_resolve(p.cid, (struct sockaddr *)&ss, len, 2000);
	if (rc == 0) {
		rc = rrr_cm_wait_event(p.ccm, &ev, VP_TIMEOUT_MS);
		cr_assert_eq(rc, 0);
		cr_assert_eq(ev.type, RRR_CM_EVENT_UNREACHABLE, "got %s",
			     rrr_cm_event_str(ev.type));
		cr_assert_lt(ev.status, 0);
	} else {
		cr_assert_lt(rc, 0);
	}
	cr_assert(strstr(rrr_last_error(), "rdma_cm could not resolve"), "%s", rrr_last_error());
	vp_close(&p);
}
