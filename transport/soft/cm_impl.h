/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/cm_impl.h - the soft provider's connection manager, shared
 * by its two files: cm.c (ids, events, the MPA exchange, the rrr_cm_* entry
 * points) and cm_limits.c (set-up deadlines, the cap on connections in
 * set-up, running out of descriptors, admission by address, and the
 * counting and logging of every refusal). Private to transport/soft/cm*.c.
 * cm.c calls cm_limits.c, never the other way: cm_limits.c decides and
 * counts, cm.c closes connections and queues events.
 *
 * Locking: cm->lock serialises set-up progress and id state (every
 * function below is called with it held unless it says otherwise); the
 * event queue has its own leaf lock (cm->evlock).
 */
#ifndef RRR_SOFT_CM_IMPL_H
#define RRR_SOFT_CM_IMPL_H

#include "soft.h"

struct cm_ev {
	struct cm_ev *next;
	struct rrr_cm_event ev;
};

struct soft_cm {
	struct rrr_cm base;
	pthread_mutex_t lock;
	pthread_mutex_t evlock;
	int ep, evfd;
	struct cm_ev *head, *tail;
	struct soft_id *ids; /* all ids of this cm */
	/* set-up limits (cm->lock) */
	int tfd;	/* periodic timer while nsetup > 0, or -1 */
	bool timer_on;
	int reserve_fd; /* given up to shed a connection when out of fds */
	uint32_t setup_timeout_ms, max_setup, nsetup;
	bool (*admit)(void *ctx, const struct sockaddr_storage *peer);
	void *admit_ctx;
	struct rrr_cm_limit_stats lst;
	struct rrr__ratelimit rl[RRR_CM_REFUSED_NREASONS + 1]; /* last: RTR timeouts */
};

enum id_state {
	ID_IDLE = 0,
	ID_LISTEN,
	ID_RESOLVED,
	ID_CONNECTING,
	ID_REQ_SENT,
	ID_REQ_WAIT,
	ID_REQ_PENDING,
	ID_REP_SENT,
	ID_RTR_WAIT, /* active: our Read RTR sent, its Read Response not yet in */
	ID_ESTABLISHED,
	ID_CLOSED,
};

struct soft_id {
	struct rrr_cm_id base;
	struct soft_cm *cm;
	struct soft_id *next, *prev;
	struct soft_id *listener;
	enum id_state state;
	int fd;
	bool in_ep;
	bool disc_posted;
	struct soft_mpa_neg neg;    /* what set-up agreed (after the Request/Reply) */
	struct sockaddr_storage dst;
	socklen_t dstlen;
	struct sockaddr_storage src; /* active: connect from here if free (srclen 0: any) */
	socklen_t srclen;
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX + SOFT_MPA_RTR_MAX];
	size_t have, need;
	struct soft_mpa_rr *peer;   /* received Request/Reply */
	struct soft_mpa_rr *mine;   /* our Request (active side) */
	bool in_setup;              /* passive, set-up not finished: counted in nsetup */
	uint64_t setup_deadline;    /* CLOCK_MONOTONIC ns */
};

static inline struct soft_cm *soft_cm(struct rrr_cm *c)
{
	return container_of(c, struct soft_cm, base);
}

/* cm.c (its own; cm_limits.c, below it, never calls them) */
/* Queue an event for @id (with @rr's private data and IRD/ORD). */
void rrr__soft_cm_post(struct soft_id *id, enum rrr_cm_event_type t, int status,
		       const struct soft_mpa_rr *rr);
/* Watch @id's socket for @events in the CM's epoll set (0: stop). */
void rrr__soft_cm_ep_set(struct soft_id *id, uint32_t events);
/* Close and free @id, dropping the queued events that name it. */
void rrr__soft_cm_id_free(struct soft_cm *cm, struct soft_id *id);

/* cm_limits.c */
/* @id enters / leaves set-up: counted in nsetup, deadline setup_timeout_ms. */
void rrr__soft_cm_setup_begin(struct soft_cm *cm, struct soft_id *id);
void rrr__soft_cm_setup_end(struct soft_cm *cm, struct soft_id *id);
/* The oldest connection that sent no MPA Request yet (cm.c evicts it); NULL if none. */
struct soft_id *rrr__soft_cm_oldest_unrequested(struct soft_cm *cm);
/* The timer ticked: consume it; the time to judge deadlines by. */
uint64_t rrr__soft_cm_sweep_begin(struct soft_cm *cm);
/* The next id from *@next past its deadline (counted); *@next moves past it. */
struct soft_id *rrr__soft_cm_next_expired(struct soft_cm *cm, struct soft_id **next,
					  uint64_t now);
/* An accepted id past its deadline: out of set-up, closed, logged. */
void rrr__soft_cm_timed_out(struct soft_cm *cm, struct soft_id *id);
/* accept() failed with EMFILE/ENFILE on listener @l and nothing could be
 * evicted: shed one connection with the reserved descriptor. True to retry. */
bool rrr__soft_cm_shed(struct soft_cm *cm, struct soft_id *l);
/* Count a refused or failed set-up of @id under @reason (enum
 * rrr_cm_refusal) and log @why with the peer's address (rate-limited). */
void rrr__soft_cm_refused(struct soft_cm *cm, struct soft_id *id, int reason, const char *why);
/* A connection from @ss that the application does not admit, closed at once. */
void rrr__soft_cm_refuse_addr(struct soft_cm *cm, const struct sockaddr_storage *ss);

#endif
