/* SPDX-License-Identifier: MIT */
/*
 * common/stats.c - printing of the per-connection transport counters.
 *
 * One "key value" line per counter, in the order of struct rrr_xprt_stats,
 * each prefixed by the caller's prefix, so the output is easy to grep and
 * to diff between two snapshots (like /proc/self/mountstats). Nothing here
 * can fail except the stream itself, and a NULL stream or struct prints
 * nothing.
 *
 * Also the library's one way to read counters that other threads update
 * with relaxed atomics (RRR__STAT_ADD/SET of common/rrr_impl.h): a snapshot (client) and a
 * fold of many (the server's per-worker counters).
 */
#include <inttypes.h>
#include <stdio.h>

#include <rrr/stats.h>

#include "common/rrr_impl.h"

void rrr_xprt_stats_print(FILE *f, const char *prefix, const struct rrr_xprt_stats *st)
{
	if (!f || !st)
		return;
	if (!prefix)
		prefix = "";
#define P64(name) fprintf(f, "%s" #name " %" PRIu64 "\n", prefix, st->name)
#define P32(name) fprintf(f, "%s" #name " %" PRIu32 "\n", prefix, st->name)
	P64(calls);
	P64(replies);
	P64(bad_replies);
	P64(timeouts);
	P64(retransmits);
	P64(inline_calls);
	P64(read_chunks);
	P64(write_chunks);
	P64(reply_chunks);
	P64(nomsg_calls);
	P64(registrations);
	P64(hole_splits);
	P64(local_inv);
	P64(remote_inv);
	P64(recoveries);
	P64(credit_stalls);
	P32(credits);
	P32(max_credits);
	P32(inline_send);
	P32(inline_recv);
	P64(rdma_read_bytes);
	P64(rdma_write_bytes);
	P64(send_bytes);
	P64(recv_bytes);
	P64(connects);
	P64(disconnects);
	P64(rdma_errors_sent);
	P64(send_posts);
	P64(pull_waits);
	P64(push_waits);
	P64(depth_splits);
	P64(pool_empty);
	P64(map_errors);
	P64(recover_errors);
	P64(offloaded);
#undef P64
#undef P32
}

void rrr__xprt_stats_load(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src)
{
#define L(f) dst->f = __atomic_load_n(&src->f, __ATOMIC_RELAXED)
	L(calls);
	L(replies);
	L(bad_replies);
	L(timeouts);
	L(retransmits);
	L(inline_calls);
	L(read_chunks);
	L(write_chunks);
	L(reply_chunks);
	L(nomsg_calls);
	L(registrations);
	L(hole_splits);
	L(local_inv);
	L(remote_inv);
	L(recoveries);
	L(credit_stalls);
	L(rdma_read_bytes);
	L(rdma_write_bytes);
	L(send_bytes);
	L(recv_bytes);
	L(connects);
	L(disconnects);
	L(rdma_errors_sent);
	L(send_posts);
	L(pull_waits);
	L(push_waits);
	L(depth_splits);
	L(pool_empty);
	L(map_errors);
	L(recover_errors);
	L(offloaded);
	L(credits);
	L(max_credits);
	L(inline_send);
	L(inline_recv);
#undef L
}

void rrr__xprt_stats_add(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *s)
{
#define SUM(f) dst->f += s->f
	SUM(calls);
	SUM(replies);
	SUM(bad_replies);
	SUM(timeouts);
	SUM(retransmits);
	SUM(inline_calls);
	SUM(read_chunks);
	SUM(write_chunks);
	SUM(reply_chunks);
	SUM(nomsg_calls);
	SUM(registrations);
	SUM(hole_splits);
	SUM(local_inv);
	SUM(remote_inv);
	SUM(recoveries);
	SUM(credit_stalls);
	SUM(rdma_read_bytes);
	SUM(rdma_write_bytes);
	SUM(send_bytes);
	SUM(recv_bytes);
	SUM(connects);
	SUM(disconnects);
	SUM(rdma_errors_sent);
	SUM(send_posts);
	SUM(pull_waits);
	SUM(push_waits);
	SUM(depth_splits);
	SUM(pool_empty);
	SUM(map_errors);
	SUM(recover_errors);
	SUM(offloaded);
#undef SUM
}

void rrr__xprt_stats_fold(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src)
{
	struct rrr_xprt_stats s;

	rrr__xprt_stats_load(&s, src);
	rrr__xprt_stats_add(dst, &s);
#define MAX(f) dst->f = s.f > dst->f ? s.f : dst->f
	MAX(credits);
	MAX(max_credits);
	MAX(inline_send);
	MAX(inline_recv);
#undef MAX
}
