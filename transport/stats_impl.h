/* SPDX-License-Identifier: MIT */
/*
 * transport/stats_impl.h - the one way the library updates and reads the
 * counters of struct rrr_xprt_stats, on the client and on the server.
 *
 * Counters are plain fields updated with relaxed atomics on the hot path
 * (no lock, no ordering: each counter is exact, a snapshot of several is
 * not taken at one instant) and read field by field with relaxed atomic
 * loads by rrr__xprt_stats_load() / rrr__xprt_stats_fold(), from any thread
 * at any time.
 */
#ifndef RRR_TRANSPORT_STATS_IMPL_H
#define RRR_TRANSPORT_STATS_IMPL_H

#include <rrr/stats.h>

/* Add @n to / set @v in the counter @field of the stats at @st. */
#define RRR__STAT_ADD(st, field, n) __atomic_fetch_add(&(st)->field, (n), __ATOMIC_RELAXED)
#define RRR__STAT_SET(st, field, v) __atomic_store_n(&(st)->field, (v), __ATOMIC_RELAXED)

/* Copy @src into @dst, each field read atomically (relaxed). */
void rrr__xprt_stats_load(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src);
/* Fold @src into @dst: counters are summed, the gauges (credits,
 * max_credits, inline_send, inline_recv) keep the larger value; @src is
 * read atomically (relaxed), @dst belongs to the caller. */
void rrr__xprt_stats_fold(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src);

#endif /* RRR_TRANSPORT_STATS_IMPL_H */
