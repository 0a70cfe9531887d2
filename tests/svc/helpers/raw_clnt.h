/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/helpers/raw_clnt.h - a hand-driven RPC-over-RDMA client
 * endpoint for the server tests: a device, a QP connected to the test
 * server and a registered array of equal buffers, and nothing else. The
 * test posts every receive and send itself, so it can send what no client
 * library would and withhold what one would do on its own.
 */
#ifndef RRR_TESTS_SVC_RAW_CLNT_H
#define RRR_TESTS_SVC_RAW_CLNT_H

#include <stdint.h>

#include <rrr/provider.h>
#include <rrr/rpcrdma.h>

struct traw_opts {
	const char *provider, *provider_opts;
	uint16_t port;		/* the server's RDMA port on tenv_addr() */
	unsigned cq_depth;	/* CQ entries */
	unsigned send_wr, recv_wr; /* QP depths */
	unsigned rd;		/* RDMA READs in flight (QP, ORD and IRD) */
	unsigned nbufs;		/* buffers in mem, each bufsz bytes */
	uint32_t bufsz;
};

struct traw {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *cq;
	struct rrr_cm *cm;
	struct rrr_cm_id *id;
	struct rrr_qp *qp;
	struct rrr_mr *mr; /* over mem, local write */
	uint8_t *mem;      /* nbufs page-aligned buffers of bufsz */
	struct traw_opts o;
};

/* Opens the device, resolves the server, creates the QP and registers the
 * buffers of @o (every step asserted); not yet connected. */
void traw_open(struct traw *r, const struct traw_opts *o);
/* The next CM event within 5 s: 0 when it is @want, -EPROTO when another,
 * or the wait's error. */
int traw_wait_ev(struct traw *r, enum rrr_cm_event_type want);
/* Posts buffer @i as receive work request @i (asserted). */
void traw_post_recv(struct traw *r, unsigned i);
/* Connects with RPC-over-RDMA private data @pd, ORD and IRD o.rd, and
 * waits for ESTABLISHED (asserted). */
void traw_connect(struct traw *r, const struct rrr_rdma_cm_pd *pd);
/* Disconnects and frees all of @r (any part may be missing); zeroes it. */
void traw_close(struct traw *r);

#endif
