/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/devcheck/devcheck.h - rrr-devcheck internals: a loopback
 * connection on one device (loop.c) and the protection checks (checks.c).
 */
#ifndef RRR_DEVCHECK_H
#define RRR_DEVCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rrr/provider.h>

#include "transport/loop_pair.h"

#define DC_BUF	      (256 * 1024)
#define DC_TIMEOUT_MS 15000

/* Two QPs on one device connected through rdma_cm on @addr. */
struct dc_loop {
	struct rrr_device *dev;
	struct rrr_device_attr attr;
	struct rrr_pd *pd;
	struct rrr_cq *ccq, *scq;
	struct rrr__loop_pair pair; /* CMs, ids, QPs (transport/loop_pair.c) */
	struct rrr_qp *cqp, *sqp;   /* = pair.c.qp, pair.s.qp */
	uint8_t *cbuf, *sbuf; /* page aligned, DC_BUF bytes each */
	struct rrr_mr *cmr;   /* client buffer: local use only */
	struct rrr_mr *smr;   /* server buffer: local write only (window backing) */
};

/* Open @dev with @strategy and connect a loopback pair on @addr. Returns 0 or
 * -errno with a message in @err. */
int dc_loop_open(struct dc_loop *l, const char *dev, const char *strategy, const char *addr,
		 char *err, size_t errlen);
void dc_loop_close(struct dc_loop *l);
/* Client RDMA WRITE of @len bytes to (@raddr, @rkey); the completion status
 * (or RRR_WC_GENERAL_ERR on a timeout / post error). */
enum rrr_wc_status dc_write(struct dc_loop *l, uint64_t raddr, uint32_t rkey, uint32_t len);
/* Server posts one signaled WR and waits for its completion status. */
enum rrr_wc_status dc_server_post(struct dc_loop *l, struct rrr_send_wr *wr);
/* Wait for one completion on @cq. 1, or 0 on timeout. */
int dc_wait(struct rrr_cq *cq, struct rrr_wc *wc);

enum dc_verdict { DC_PASS, DC_FAIL, DC_NA, DC_ERROR };

struct dc_result {
	const char *check;
	const char *strategy;
	enum dc_verdict verdict;
	char detail[160];
};

#define DC_MAX_RESULTS 16

/* Run every check on @dev via @addr; fills @res, returns the count. */
int dc_run_checks(const char *dev, const char *addr, struct dc_result *res, int max);

#endif
