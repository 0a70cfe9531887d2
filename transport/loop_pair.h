/* SPDX-License-Identifier: MIT */
/*
 * transport/loop_pair.h - two connected RC QPs of one device in one
 * process, over the provider's CM on a loopback (or local) address and an
 * ephemeral port: the fixture of the benchmarks (bench/bench_reg.c), rrr-devcheck
 * (transport/verbs/devcheck/loop.c) and the tests that need a connected
 * QP pair (tests/reg, tests/verbs). Internal to the library's own
 * programs and tests; not installed.
 *
 * Each side has its own CM, so an event is unambiguous about its side.
 * The caller owns the device, the PDs and the CQs; the pair owns the CMs,
 * the ids and the QPs. Connection set-up runs on the calling thread: both
 * CMs are polled in turn, so it works whether a provider makes progress
 * on its own threads (soft) or in the kernel (verbs), and the client's
 * ESTABLISHED is taken as it comes (librdmacm sends the RTU while the
 * client reads it; only then does the server's come).
 */
#ifndef RRR_TRANSPORT_LOOP_PAIR_H
#define RRR_TRANSPORT_LOOP_PAIR_H

#include <sys/socket.h>

#include <rrr/provider.h>

struct rrr__loop_side {
	struct rrr_cm *cm;    /* owned */
	struct rrr_cm_id *id; /* owned */
	struct rrr_qp *qp;    /* owned */
};

struct rrr__loop_pair {
	struct rrr_device *dev;	       /* the caller's */
	struct rrr_cm_id *listen;      /* on s.cm */
	struct sockaddr_storage addr;  /* where it listens, port included */
	socklen_t addrlen;
	struct rrr__loop_side c, s;    /* client (connects), server (accepts) */
	struct rrr_cm_event req;       /* the server's CONNECT_REQUEST */
	struct rrr_cm_event est;       /* the client's ESTABLISHED */
};

struct rrr__loop_opts {
	struct rrr_pd *c_pd, *s_pd;   /* may be the same PD */
	struct rrr_cq *c_cq, *s_cq;   /* each side's send and receive CQ */
	struct rrr_qp_init_attr qp;   /* sizes; pd and CQs are set per side */
	struct rrr_conn_param connect; /* the client's (private data, ird/ord) */
	struct rrr_conn_param accept;  /* the server's */
	int timeout_ms;		       /* for the whole set-up; 0: 10 s */
};

/* Create both CMs and listen on @addr (numeric; NULL: 127.0.0.1), port 0.
 * 0, or -errno with rrr_last_error() naming the step that failed; on error
 * everything made here is destroyed. */
int rrr__loop_listen(struct rrr__loop_pair *p, struct rrr_device *dev, const char *addr);
/* Resolve, create the QPs, connect and accept, and wait for both
 * ESTABLISHED events within @o->timeout_ms. 0, or -errno (-ETIMEDOUT, or
 * the event's status) with rrr_last_error() naming the step; what was
 * built stays for rrr__loop_close(). */
int rrr__loop_connect(struct rrr__loop_pair *p, const struct rrr__loop_opts *o);
/* Destroy the QPs, ids and CMs (a partly built pair too) without a
 * disconnect (call rrr_cm_disconnect(p->c.id) first for one); @p is zeroed. The device, PDs and CQs are the caller's. */
void rrr__loop_close(struct rrr__loop_pair *p);

#endif /* RRR_TRANSPORT_LOOP_PAIR_H */
