/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_slot.c - the state machine of a call's slot on the
 * RPC-over-RDMA client (the drawing is in clnt_rdma_impl.h and
 * docs/design.md): the one table of legal edges and the one function that
 * changes a slot's state.
 *
 * Normal operation: clnt_rdma.c asks rrr__rslot_to() for every change; the
 * edge is checked against the table, the USDT probe rrr:call_state fires
 * with the connection, the call's xid and both states, and the state
 * changes. Recovery: a lost connection takes any slot back to FREE (its
 * registrations are recovered by the caller first). An edge the table
 * does not name is a bug in the transport: the state stays as it was,
 * -EINVAL is returned and the first such bug is logged (what went wrong,
 * with both states), so a test or an operator sees it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "client/clnt_rdma_impl.h"
#include "common/probes.h"
#include "common/rrr_impl.h"

static const char *const names[RRR__RSLOT_NSTATES] = {
	[RRR__RSLOT_FREE] = "FREE",	    [RRR__RSLOT_MAPPED] = "MAPPED",
	[RRR__RSLOT_SENT] = "SENT",	    [RRR__RSLOT_REPLIED] = "REPLIED",
	[RRR__RSLOT_ABORTED] = "ABORTED", [RRR__RSLOT_ORPHANED] = "ORPHANED",
	[RRR__RSLOT_DONE] = "DONE",
};

#define E(from, to) [RRR__RSLOT_##from][RRR__RSLOT_##to] = true
static const bool edges[RRR__RSLOT_NSTATES][RRR__RSLOT_NSTATES] = {
	E(FREE, MAPPED),      /* a call is sent: its chunks are registered */
	E(MAPPED, FREE),      /* mapping or the header failed: nothing was posted */
	E(MAPPED, SENT),      /* the chain is queued */
	E(SENT, REPLIED),     /* the reply arrived */
	E(SENT, ABORTED),     /* timeout or cancel: invalidate before answering */
	E(ABORTED, REPLIED),  /* the late reply arrived while invalidating */
	E(ABORTED, ORPHANED), /* invalidated and answered; the reply still owed */
	E(REPLIED, DONE),     /* invalidated (or nothing to), caller answered */
	E(ORPHANED, DONE),    /* the late reply arrived: its credit is back */
	E(DONE, FREE),	      /* the SEND completed too */
	/* recovery: the connection is gone, registrations recovered */
	E(SENT, FREE),
	E(REPLIED, FREE),
	E(ABORTED, FREE),
	E(ORPHANED, FREE),
};
#undef E

const char *rrr__rslot_state_name(enum rrr__rslot_state st)
{
	return (unsigned)st < RRR__RSLOT_NSTATES ? names[st] : "?";
}

bool rrr__rslot_edge(enum rrr__rslot_state from, enum rrr__rslot_state to)
{
	return (unsigned)from < RRR__RSLOT_NSTATES && (unsigned)to < RRR__RSLOT_NSTATES &&
	       edges[from][to];
}

int rrr__rslot_to(const struct rrr_clnt *c, struct rslot *s, enum rrr__rslot_state to)
{
	static atomic_bool told;
	enum rrr__rslot_state from = s->state;

	if (!rrr__rslot_edge(from, to)) {
		if (!atomic_exchange(&told, true))
			rrr__log_err("rrr client: internal error: a call's slot (xid 0x%08x) may not "
				     "go from %s to %s; please report it",
				     s->xid, rrr__rslot_state_name(from), rrr__rslot_state_name(to));
		return -EINVAL;
	}
	RRR_PROBE4(call_state, c, s->xid, (int)from, (int)to);
	s->state = to;
	if (c && X(c) && X(c)->keys)
		X(c)->keys[s - X(c)->slots].state = (uint8_t)to;
	return 0;
}

void rrr__rslot_set_xid(struct rdma_xprt *x, struct rslot *s, uint32_t xid)
{
	s->xid = xid;
	x->keys[s - x->slots].xid = xid;
}
