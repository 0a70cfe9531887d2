/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/sendq.c - which SENDs of the RPC-over-RDMA client ask for a
 * completion (client/clnt_rdma_sendq.c), without a connection: fewer than
 * a quarter of the slots (4 at most) of SENDs in a row go unsignaled; a
 * signaled SEND's completion hands back exactly the unsignaled SENDs
 * posted before it, in order, and none posted after it, nor a slot's
 * later SEND for an earlier one that completed on its own; unsignaled SENDs
 * never hold more than half of the send queue beyond one longest chain;
 * a client with fewer than 4 slots signals every SEND; a lost connection
 * forgets the record.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "client/clnt_rdma_impl.h"

static struct rdma_xprt x;
static struct rslot slots[64];
static struct unsig_send ring[64];

static void setup(uint32_t nslots, uint32_t sq_depth, uint32_t chain_max)
{
	memset(&x, 0, sizeof(x));
	memset(slots, 0, sizeof(slots));
	x.nslots = nslots;
	x.slots = slots;
	x.unsig = ring;
	x.sq_depth = sq_depth;
	x.sq_chain_max = chain_max;
	rrr__rdma_sendq_reset(&x);
}

/* post slot @i's SEND with a chain of @chain entries: signaled? */
static bool post(int i, uint32_t chain)
{
	slots[i].sq_chain = chain;
	slots[i].send_pending = true;
	rrr__rdma_sendq_choose(&x, &slots[i]);
	return slots[i].send_wr.flags & RRR_SEND_SIGNALED;
}

/* the signaled SEND of slot @i completed: the slots handed back */
static int implied(int i, int *out)
{
	struct rslot *u;
	int n = 0;

	while ((u = rrr__rdma_sendq_implied(&x, &slots[i]))) {
		u->send_pending = false;
		out[n++] = (int)(u - slots);
	}
	return n;
}

Test(sendq, a_signaled_send_every_four_at_most)
{
	int got[64];

	setup(64, 225, 97);
	cr_assert_eq(x.unsig_max, 4);
	for (int i = 0; i < 3; i++)
		cr_assert_not(post(i, 2), "SEND %d unsignaled", i);
	cr_assert(post(3, 2), "the 4th asks for a completion");
	cr_assert(post(4, 2), "and so does every SEND until it comes");
	cr_assert_eq(implied(3, got), 3, "its completion hands back the 3 before it");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(got[i], i, "in post order");
	cr_assert_eq(x.unsig_sq, 0, "their send-queue room is back");
	cr_assert_eq(implied(4, got), 0, "nothing left for the next one");
	cr_assert_not(post(5, 2), "unsignaled again");
}

Test(sendq, a_completion_hands_back_only_what_was_posted_before_it)
{
	int got[64];

	setup(64, 225, 97); /* unsignaled SENDs hold at most 64 entries */
	cr_assert_not(post(0, 2));
	cr_assert(post(1, 70), "a long chain past the bound is signaled");
	cr_assert_not(post(2, 2), "posted after it, before its completion");
	cr_assert_not(post(3, 2));
	cr_assert_eq(implied(1, got), 1, "its completion hands back the one before it");
	cr_assert_eq(got[0], 0);
	/* a failed (flushed) unsignaled SEND completes on its own; a later
	 * signaled completion skips it */
	slots[2].send_pending = false;
	cr_assert(post(4, 70));
	cr_assert_eq(implied(4, got), 1, "the flushed one is not handed back twice");
	cr_assert_eq(got[0], 3);
	cr_assert_eq(x.unsig_sq, 0);
}

/* A SEND that completed on its own (a flush), its slot taken again by a
 * new unsignaled SEND: a signaled completion hands the slot back once,
 * for the new SEND, never for the old entry while the new one is out. */
Test(sendq, a_slot_taken_again_is_handed_back_for_its_new_send_only)
{
	int got[64];

	setup(64, 225, 97);
	cr_assert_not(post(0, 2));
	slots[0].send_pending = false; /* completed on its own */
	cr_assert_not(post(0, 2), "the slot's next SEND");
	cr_assert(post(1, 70));
	cr_assert_eq(implied(1, got), 1);
	cr_assert_eq(got[0], 0);
	/* and while a new SEND of slot 0 is out, no old entry touches it */
	cr_assert_not(post(0, 2));
	cr_assert(post(2, 70));
	slots[0].send_pending = false;
	cr_assert_not(post(0, 2), "taken again before the completion came");
	cr_assert(post(3, 70));
	cr_assert_eq(implied(2, got), 0, "the entry before 2 is slot 0's old SEND");
	cr_assert(slots[0].send_pending, "slot 0's new SEND is still out");
	cr_assert_eq(implied(3, got), 1);
	cr_assert_eq(got[0], 0);
}

Test(sendq, unsignaled_sends_hold_at_most_half_the_spare_send_queue)
{
	setup(64, 225, 97); /* (225 - 97) / 2 = 64 entries */
	cr_assert_not(post(0, 30));
	cr_assert_not(post(1, 30));
	cr_assert(post(2, 30), "a third would hold 90 of the 64 allowed");
	cr_assert_leq(x.unsig_sq, 64);
}

Test(sendq, few_slots_signal_every_send)
{
	setup(3, 225, 97);
	for (int i = 0; i < 3; i++)
		cr_assert(post(i, 2), "SEND %d signaled", i);
	setup(4, 225, 97); /* one unsignaled SEND in a row at most: none */
	cr_assert(post(0, 2));
	setup(8, 225, 97); /* 2: one unsignaled, then a signaled one */
	cr_assert_not(post(0, 2));
	cr_assert(post(1, 2));
	setup(12, 225, 97); /* 3 */
	cr_assert_not(post(0, 2));
	cr_assert_not(post(1, 2));
	cr_assert(post(2, 2));
}

Test(sendq, a_lost_connection_forgets_the_record)
{
	int got[64];

	setup(64, 225, 97);
	cr_assert_not(post(0, 2));
	cr_assert_not(post(1, 2));
	rrr__rdma_sendq_reset(&x); /* the QP is gone, and its SENDs */
	cr_assert_eq(x.unsig_sq, 0);
	cr_assert_not(post(2, 2));
	cr_assert(post(3, 70));
	cr_assert_eq(implied(3, got), 1, "only what the new connection posted");
	cr_assert_eq(got[0], 2);
}
