/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/slot.c - the state machine of a call's slot on the
 * RPC-over-RDMA client (client/clnt_rdma_slot.c, drawn in docs/design.md):
 * every edge of the drawing is taken, every other pair of states is
 * refused with -EINVAL and leaves the state as it was; and the paths a
 * call really takes (reply; timeout with a late reply) end FREE.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "client/clnt_rdma_impl.h"

#define S(x) RRR__RSLOT_##x

static const struct {
	enum rrr__rslot_state from, to;
} drawn[] = {
	{S(FREE), S(MAPPED)},	   {S(MAPPED), S(FREE)},      {S(MAPPED), S(SENT)},
	{S(SENT), S(REPLIED)},	   {S(SENT), S(ABORTED)},     {S(ABORTED), S(REPLIED)},
	{S(ABORTED), S(ORPHANED)}, {S(REPLIED), S(DONE)},     {S(ORPHANED), S(DONE)},
	{S(DONE), S(FREE)},	   {S(SENT), S(FREE)},	      {S(REPLIED), S(FREE)},
	{S(ABORTED), S(FREE)},	   {S(ORPHANED), S(FREE)},
};

static bool is_drawn(enum rrr__rslot_state f, enum rrr__rslot_state t)
{
	for (size_t i = 0; i < sizeof(drawn) / sizeof(drawn[0]); i++)
		if (drawn[i].from == f && drawn[i].to == t)
			return true;
	return false;
}

Test(slot, every_edge_of_the_drawing_and_no_other)
{
	unsigned taken = 0, refused = 0;

	for (int f = 0; f < RRR__RSLOT_NSTATES; f++)
		for (int t = 0; t < RRR__RSLOT_NSTATES; t++) {
			struct rslot s;
			memset(&s, 0, sizeof(s));
			s.state = (enum rrr__rslot_state)f;
			s.xid = 0x1234;
			int rc = rrr__rslot_to(NULL, &s, (enum rrr__rslot_state)t);
			if (is_drawn(f, t)) {
				cr_assert_eq(rc, 0, "%s -> %s is drawn", rrr__rslot_state_name(f),
					     rrr__rslot_state_name(t));
				cr_assert_eq(s.state, t);
				taken++;
			} else {
				cr_assert_eq(rc, -EINVAL, "%s -> %s is not drawn",
					     rrr__rslot_state_name(f), rrr__rslot_state_name(t));
				cr_assert_eq(s.state, f, "a refused edge leaves the state");
				refused++;
			}
		}
	cr_assert_eq(taken, sizeof(drawn) / sizeof(drawn[0]));
	cr_assert_eq(taken + refused, RRR__RSLOT_NSTATES * RRR__RSLOT_NSTATES);
	cr_assert_str_eq(rrr__rslot_state_name(RRR__RSLOT_NSTATES), "?");
	cr_assert(!rrr__rslot_edge(RRR__RSLOT_NSTATES, RRR__RSLOT_FREE));
}

static void walk(const enum rrr__rslot_state *path, size_t n)
{
	struct rslot s;
	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(rrr__rslot_to(NULL, &s, path[i]), 0, "step %zu to %s", i,
			     rrr__rslot_state_name(path[i]));
	cr_assert_eq(s.state, RRR__RSLOT_FREE);
}

Test(slot, the_paths_a_call_takes_end_free)
{
	static const enum rrr__rslot_state replied[] = {S(MAPPED), S(SENT), S(REPLIED), S(DONE),
							 S(FREE)};
	static const enum rrr__rslot_state late[] = {S(MAPPED),	  S(SENT), S(ABORTED),
						     S(ORPHANED), S(DONE), S(FREE)};
	static const enum rrr__rslot_state late_early[] = {S(MAPPED), S(SENT), S(ABORTED),
							   S(REPLIED), S(DONE), S(FREE)};
	static const enum rrr__rslot_state unmapped[] = {S(MAPPED), S(FREE)};
	static const enum rrr__rslot_state lost[] = {S(MAPPED), S(SENT), S(FREE)};
	walk(replied, sizeof(replied) / sizeof(replied[0]));
	walk(late, sizeof(late) / sizeof(late[0]));
	walk(late_early, sizeof(late_early) / sizeof(late_early[0]));
	walk(unmapped, sizeof(unmapped) / sizeof(unmapped[0]));
	walk(lost, sizeof(lost) / sizeof(lost[0]));
}
