/* SPDX-License-Identifier: MIT */
/*
 * rrr/wait.h - how a thread waits for completions and messages.
 *
 * The client's progress thread and the server's worker threads sleep in
 * epoll when they have nothing to do. Waking a sleeping thread costs a
 * scheduler round trip (several microseconds, more on a loaded machine),
 * which is most of a small RPC's latency on a fast transport. The wait mode
 * chooses how they wait:
 *
 *   RRR_WAIT_EVENT     sleep at once (the least CPU; every reply costs a
 *                      wake-up, as a blocking TCP reader does)
 *   RRR_WAIT_ADAPTIVE  while traffic is flowing (the last wait ended within
 *                      the spin budget), look for work without sleeping for
 *                      up to spin_us microseconds, yielding the CPU between
 *                      looks, then sleep; an idle thread, or one whose last
 *                      spin ran out, sleeps at once, except for one spin
 *                      after 1, 2, 4 ... 64 such waits (so a machine whose
 *                      wake-ups take longer than spin_us gets back to
 *                      spinning when traffic resumes). The default: small
 *                      calls in a stream skip the wake-up, and a thread never
 *                      burns more than spin_us per wait (so two processes
 *                      sharing two cores do not starve each other)
 *   RRR_WAIT_SPIN      always look for up to spin_us before sleeping, idle or
 *                      not (lowest latency with a core to spare)
 *
 * A yield between looks gives the core to any other runnable thread, so a
 * spinning thread delays nobody by more than one look.
 */
#ifndef RRR_WAIT_H
#define RRR_WAIT_H

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

enum rrr_wait_mode {
	RRR_WAIT_ADAPTIVE = 0, /* the default */
	RRR_WAIT_EVENT,
	RRR_WAIT_SPIN,
};

/* Default spin budget per wait, in microseconds. */
#define RRR_WAIT_SPIN_US_DEFAULT 50u
/* Largest accepted spin budget (10 ms). */
#define RRR_WAIT_SPIN_US_MAX 10000u

/* Parse "event", "adaptive" or "spin" into *@mode. Returns 0 or -EINVAL. */
int rrr_wait_mode_parse(const char *s, enum rrr_wait_mode *mode);
/* "event", "adaptive", "spin"; never NULL. */
const char *rrr_wait_mode_name(enum rrr_wait_mode mode);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_WAIT_H */
