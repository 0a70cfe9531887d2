/* SPDX-License-Identifier: MIT */
/*
 * transport/wait.h - the wait policy of include/rrr/wait.h, for the
 * library's own event loops (client progress thread, server workers).
 */
#ifndef RRR_TRANSPORT_WAIT_H
#define RRR_TRANSPORT_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include <rrr/wait.h>

struct rrr__waiter {
	enum rrr_wait_mode mode;
	uint64_t spin_ns;
	bool hot;   /* adaptive: the last wait ended soon after it began */
	/* adaptive, while cold: waits since going cold or since the last
	 * probe, and how many make the next probe (1, 2, 4 ... 64) */
	uint32_t cold_waits, probe_gap;
	/* counters (owner thread only) */
	uint64_t waits, spin_hits, sleeps, probes;
};

/* Set up a waiter; @spin_us 0 means RRR_WAIT_SPIN_US_DEFAULT. */
void rrr__waiter_init(struct rrr__waiter *w, enum rrr_wait_mode mode, uint32_t spin_us);

/*
 * epoll_wait(@epfd, @evs, @max, @timeout_ms) under the policy of @w: with
 * @timeout_ms 0 it only looks; otherwise it may look repeatedly (yielding
 * in between) for up to the spin budget, capped by @timeout_ms, before it
 * sleeps for the rest of @timeout_ms (-1: forever). Returns what epoll_wait
 * returns (events, 0 on timeout, -1 with errno). Owner thread only. MAY
 * BLOCK.
 */
int rrr__wait_epoll(struct rrr__waiter *w, int epfd, struct epoll_event *evs, int max,
		    int timeout_ms);

#endif /* RRR_TRANSPORT_WAIT_H */
