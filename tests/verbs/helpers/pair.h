/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/helpers/pair.h - a connected loopback pair of QPs on a real
 * verbs device (rxe0 in the test VM), for the verbs-provider tests.
 *
 * vp_open() skips the calling test (cr_skip_test) with the reason when there
 * is no RDMA device or no address to use: on a host without RDMA the suite
 * says "no RDMA device: run make test-vm". The device and address come from
 * RRR_VERBS_DEV (default: the first device) and RRR_VM_ADDR (the IPv4 address
 * of the device's netdev; set by tests/vm/guest.sh).
 */
#ifndef RRR_TESTS_VERBS_PAIR_H
#define RRR_TESTS_VERBS_PAIR_H

#include <stdint.h>
#include <rrr/provider.h>

#include "transport/loop_pair.h"

#define VP_TIMEOUT_MS 20000
#define VP_BUF	      65536

struct vp {
	struct rrr__loop_pair lp; /* owns the CMs, ids and QPs below */
	struct rrr_device *dev;
	struct rrr_device_attr attr;
	struct rrr_pd *pd;
	struct rrr_cm *ccm, *scm;
	struct rrr_cq *ccq, *scq;
	struct rrr_cm_id *listen, *cid, *sid;
	struct rrr_qp *cqp, *sqp;
	struct sockaddr_storage addr; /* listener address (with its port) */
	socklen_t addrlen;
	/* long-lived buffers, registered with local write + remote read/write */
	uint8_t *cbuf, *sbuf;
	struct rrr_mr *cmr, *smr;
	struct rrr_cm_event last_req; /* the server's CONNECT_REQUEST */
	struct rrr_cm_event last_est; /* the client's ESTABLISHED */
};

/* Open the device with @opts (NULL: auto) and everything but the QPs and
 * the connection. Skips the test when no device/address. */
void vp_open(struct vp *p, const char *opts);
/* Resolve, create QPs, connect with @cpd/@clen, accept with @apd/@alen.
 * Asserts each step. */
void vp_connect(struct vp *p, const void *cpd, uint32_t clen, const void *apd, uint32_t alen);
/* vp_open(@p, @opts), then vp_connect() without private data. */
void vp_open_connected(struct vp *p, const char *opts);
/* Wait for the next CM event on @cm; asserts it is @type. */
void vp_expect_event(struct rrr_cm *cm, enum rrr_cm_event_type type, struct rrr_cm_event *ev);
/* Wait for exactly one completion on @cq; returns it. */
struct rrr_wc vp_wait_wc(struct rrr_cq *cq);
/* Post one receive of @len bytes at @off of the server (s=1) or client buffer. */
void vp_post_recv(struct vp *p, int server, uint64_t wr_id, uint32_t off, uint32_t len);
/* Post a signaled SEND from the client or server buffer. */
void vp_post_send(struct vp *p, int server, uint64_t wr_id, uint32_t off, uint32_t len);
/* One signaled @op posted by the client (work request @wr_id, @len bytes of
 * its buffer at @off): to @raddr/@rkey for RDMA WRITE and READ, invalidating
 * @rkey for SEND_WITH_INV. Waits for the client's completion and returns it. */
struct rrr_wc vp_client_op(struct vp *p, enum rrr_wr_opcode op, uint64_t wr_id, uint32_t off,
			   uint32_t len, uint64_t raddr, uint32_t rkey);
/* The client WRITEs @len bytes of pattern (@seed + i) to @addr/@rkey: the
 * completion's status (its wr_id asserted). */
enum rrr_wc_status vp_client_write(struct vp *p, uint64_t addr, uint32_t rkey, uint32_t len,
				   uint8_t seed);
void vp_close(struct vp *p);
/* The strategy option for the device's default plus @strategy. */
const char *vp_opts(const char *strategy);

#endif
