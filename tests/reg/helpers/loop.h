/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/helpers/loop.h - two connected QPs of one provider over
 * loopback (127.0.0.1, ephemeral port) in one process: a "client" side that
 * registers memory with the engine and a "peer" side that RDMA READs and
 * WRITEs through the handles. Each side has its own PD, CM and CQ; the
 * connection is the library's loopback pair (transport/loop_pair.h).
 * Completions of both CQs are collected by one pump so a single thread can
 * wait on either side whatever the provider's progress model.
 */
#ifndef RRR_TESTS_REG_LOOP_H
#define RRR_TESTS_REG_LOOP_H

#include <rrr/provider.h>

#include "transport/loop_pair.h"

#define LOOP_STASH 256

struct loop_side {
	struct rrr_pd *pd;
	struct rrr_cm *cm;    /* cm, id, qp: the pair's (it owns them) */
	struct rrr_cm_id *id;
	struct rrr_cq *cq;
	struct rrr_qp *qp;
	int nwc;
	struct rrr_wc wc[LOOP_STASH];
};

struct loop {
	struct rrr_device *dev;
	struct rrr_device_attr attr;
	struct rrr_cm_id *listen_id;
	struct loop_side c, p; /* client (registers), peer (accesses) */
	struct rrr__loop_pair pair; /* transport/loop_pair.c */
};

/* Open @provider with @opts and allocate both PDs. 0 or -errno. */
int loop_open(struct loop *l, const char *provider, const char *opts);
/* Create CMs, CQs and QPs and connect them (bounded by @timeout_ms). */
int loop_connect(struct loop *l, int timeout_ms);
/* Destroy QPs, ids, CQs and CMs (keeps PDs and device). */
void loop_disconnect(struct loop *l);
void loop_close(struct loop *l);
/* Wait up to @timeout_ms for the completion with @wr_id on @side. Returns 0
 * and fills @wc, or -ETIMEDOUT. Completions of either side seen meanwhile
 * are stashed for later waits. */
int loop_wait(struct loop *l, struct loop_side *side, uint64_t wr_id, struct rrr_wc *wc,
	      int timeout_ms);
/* Wait for any completion with a status other than success on @side. */
int loop_wait_error(struct loop *l, struct loop_side *side, struct rrr_wc *wc, int timeout_ms);

#endif
