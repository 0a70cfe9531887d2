/* SPDX-License-Identifier: MIT */
/*
 * rrr/stats.h - per-connection transport counters, in the spirit of the
 * kernel's /proc/self/mountstats "xprt: rdma" line.
 */
#ifndef RRR_STATS_H
#define RRR_STATS_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

struct rrr_xprt_stats {
	/* calls */
	uint64_t calls;
	uint64_t replies;
	uint64_t bad_replies;
	uint64_t timeouts;
	uint64_t retransmits;
	/* chunk usage */
	uint64_t inline_calls;
	uint64_t read_chunks;
	uint64_t write_chunks;
	uint64_t reply_chunks;
	uint64_t nomsg_calls;
	/* registration engine */
	uint64_t registrations;
	uint64_t hole_splits;
	uint64_t local_inv;
	uint64_t remote_inv;
	uint64_t recoveries;
	/* flow control */
	uint64_t credit_stalls;
	uint32_t credits;          /* current grant */
	uint32_t max_credits;
	uint32_t inline_send;      /* negotiated */
	uint32_t inline_recv;
	/* bytes */
	uint64_t rdma_read_bytes;
	uint64_t rdma_write_bytes;
	uint64_t send_bytes;
	uint64_t recv_bytes;
	/* connection */
	uint64_t connects;
	uint64_t disconnects;
	uint64_t rdma_errors_sent;
	/* RPC-over-RDMA: posts of calls (client) or replies and READ chains
	 * (server) to the send queue - doorbells; several calls or replies
	 * ready at once share one post, so at depth this is below calls */
	uint64_t send_posts;
	/* server: calls whose RDMA READs waited because the connection was
	 * already pulling 2 x max_payload of read-chunk bytes (the pull
	 * window, docs/embedding.md); 0 on a client */
	uint64_t pull_waits;
	/* server: calls that waited because the connection's replies not yet
	 * sent held 2 x max_payload of write- and reply-chunk bytes (the push
	 * window, docs/embedding.md); 0 on a client */
	uint64_t push_waits;
	/* registration engine, more (docs/registration.md, "Counters"): a
	 * registration that ended because its page list was full (the other
	 * cause of a split, besides hole_splits); a map refused for want of a
	 * free MR (-ENOBUFS: the call waits); the provider refused or mapped
	 * other than planned; an MR that could not be recovered (destroyed).
	 * The last two mean a provider bug */
	uint64_t depth_splits;
	uint64_t pool_empty;
	uint64_t map_errors;
	uint64_t recover_errors;
	/* server: handlers run by an idle worker other than the one that owns
	 * the call's connection, so the calls of one connection use several
	 * cores (docs/embedding.md); 0 on a client */
	uint64_t offloaded;
};

/* Print as "key value" lines, prefixed by @prefix (may be ""). */
void rrr_xprt_stats_print(FILE *f, const char *prefix, const struct rrr_xprt_stats *st);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_STATS_H */
