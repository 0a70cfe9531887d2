/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_sendq.c - which of the client's SENDs ask for a
 * completion.
 *
 * A completion per SEND costs the client a completion to poll and, on the
 * soft provider, a notification: the SEND usually completes while the
 * progress round that posted it is running, with the CQ still armed from
 * the round before, so each call would pay an eventfd write, a wake-up
 * and a read for it. As xprtrdma does, most SENDs are posted unsignaled:
 * a send queue completes in order, so when a signaled SEND completes,
 * every SEND posted before it has left as well, and their slots (whose
 * send buffers may then be written again) and send-queue room come back
 * with it (rrr__rdma_sendq_implied).
 *
 *   posted:  U U U S U U S        U unsignaled, S signaled
 *   S done:  the U's before it are done too; the U's after it wait
 *
 * Bounds, so that nothing waits for a completion that never comes: fewer
 * than unsig_max unsignaled SENDs at a time (a quarter of the slots, at
 * most UNSIG_MAX), so slots held only by an unsignaled SEND never stop a
 * call the credits allow; and they hold at most half of the send queue
 * beyond one longest chain, so the room a call needs (sq_chain_max) is
 * there while they wait. A client with fewer than 8 slots signals every
 * SEND. UNSIG_MAX is small on purpose: a slot held by an unsignaled SEND
 * cannot be taken by the next call, so the next call takes another slot
 * and its pages; with thousands of connections the pages touched per
 * round of all of them are what costs (docs/scaling.md), and one
 * notification in 4 calls already saves most of what there is to save.
 *
 * Recovery: a failed SEND completes whether signaled or not (a flush); the
 * connection is then replaced, and rrr__rdma_sendq_reset() forgets the
 * record with the QP.
 */
#include "client/clnt_rdma_impl.h"

#define UNSIG_MAX 4u

void rrr__rdma_sendq_reset(struct rdma_xprt *x)
{
	x->unsig_max = x->nslots / 4 < UNSIG_MAX ? x->nslots / 4 : UNSIG_MAX;
	x->unsig_sq_max = (x->sq_depth - x->sq_chain_max) / 2;
	x->unsig_posted = x->unsig_done = 0;
	x->unsig_sq = 0;
}

void rrr__rdma_sendq_choose(struct rdma_xprt *x, struct rslot *s)
{
	uint64_t held = x->unsig_posted - x->unsig_done;

	if (x->unsig && held + 1 < x->unsig_max &&
	    x->unsig_sq + s->sq_chain <= x->unsig_sq_max) {
		s->send_wr.flags = 0;
		s->unsig_seq = x->unsig_posted;
		x->unsig[x->unsig_posted++ % x->nslots] =
		    (struct unsig_send){(uint32_t)(s - x->slots), s->sq_chain};
		x->unsig_sq += s->sq_chain;
		return;
	}
	s->send_wr.flags = RRR_SEND_SIGNALED;
	s->unsig_seq = UINT64_MAX;
	s->unsig_upto = x->unsig_posted;
}

struct rslot *rrr__rdma_sendq_implied(struct rdma_xprt *x, const struct rslot *s)
{
	while (x->unsig_done < s->unsig_upto) {
		uint64_t seq = x->unsig_done++;
		const struct unsig_send *e = &x->unsig[seq % x->nslots];
		struct rslot *u = &x->slots[e->slot];

		x->unsig_sq -= e->chain;
		/* the same SEND still pending: not one that completed on its
		 * own (a flush), after which the slot may have been taken
		 * again */
		if (u->send_pending && u->unsig_seq == seq)
			return u;
	}
	return NULL;
}
