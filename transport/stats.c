/* SPDX-License-Identifier: MIT */
/*
 * transport/stats.c - printing of the per-connection transport counters.
 *
 * One "key value" line per counter, in the order of struct rrr_xprt_stats,
 * each prefixed by the caller's prefix, so the output is easy to grep and
 * to diff between two snapshots (like /proc/self/mountstats). Nothing here
 * can fail except the stream itself, and a NULL stream or struct prints
 * nothing.
 */
#include <inttypes.h>
#include <stdio.h>

#include <rrr/stats.h>

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
#undef P64
#undef P32
}
