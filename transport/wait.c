/* SPDX-License-Identifier: MIT */
/*
 * transport/wait.c - how the library's event loops wait: sleep, spin, or
 * spin while traffic flows (include/rrr/wait.h has the modes).
 *
 * Normal operation: a wait that may spin first looks (epoll_wait with
 * timeout 0); when that finds nothing the thread keeps looking for up to
 * the spin budget, calling sched_yield() between looks so that a
 * thread waiting for this core (the peer process on a two-core machine, a
 * writer thread of the application) runs first. Only then does it sleep in
 * epoll_wait for the rest of the timeout.
 *
 * Adaptive mode decides per wait whether spinning can pay: it spins only
 * when the previous wait ended within the spin budget (events were found by
 * a look, by the spin, or by a sleep shorter than the budget). An idle
 * connection, or a peer that cannot run because this thread holds the core,
 * costs one failed spin and then sleeps at once, while a stream of calls
 * (a reply due within microseconds) is served without a wake-up. This is the hybrid of Linux's busy polling and
 * interrupt mode, decided by the recent past instead of a socket option.
 *
 * A cold waiter also spins now and then (a probe): after 1 wait, then 2,
 * 4 ... up to PROBE_GAP_MAX waits, and a probe that finds events makes it
 * hot again. Without probes a machine whose wake-up from sleep takes
 * longer than the spin budget (a virtual machine whose idle vCPU has to be
 * scheduled again by the host: 50-100 us) would never see a sleep end
 * within the budget, and one slow moment (a peer descheduled, a connection
 * idle between bursts) would leave the loop sleeping - paying a wake-up per
 * message - for as long as traffic flows. An idle loop pays at most one
 * spin per PROBE_GAP_MAX waits.
 *
 * Recovery: none needed; a failed epoll_wait is returned as it is.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/rrr_impl.h"
#include "transport/wait.h"

#define PROBE_GAP_MAX 64u /* waits between two probes of a cold waiter, at most */

int rrr_wait_mode_parse(const char *s, enum rrr_wait_mode *mode)
{
	if (!s || !mode)
		return -EINVAL;
	if (!strcmp(s, "adaptive"))
		*mode = RRR_WAIT_ADAPTIVE;
	else if (!strcmp(s, "event"))
		*mode = RRR_WAIT_EVENT;
	else if (!strcmp(s, "spin"))
		*mode = RRR_WAIT_SPIN;
	else
		return -EINVAL;
	return 0;
}

const char *rrr_wait_mode_name(enum rrr_wait_mode mode)
{
	switch (mode) {
	case RRR_WAIT_EVENT: return "event";
	case RRR_WAIT_SPIN: return "spin";
	case RRR_WAIT_ADAPTIVE: break;
	}
	return "adaptive";
}

void rrr__waiter_init(struct rrr__waiter *w, enum rrr_wait_mode mode, uint32_t spin_us)
{
	memset(w, 0, sizeof(*w));
	w->mode = mode;
	if (!spin_us)
		spin_us = RRR_WAIT_SPIN_US_DEFAULT;
	if (spin_us > RRR_WAIT_SPIN_US_MAX)
		spin_us = RRR_WAIT_SPIN_US_MAX;
	w->spin_ns = (uint64_t)spin_us * 1000u;
	w->probe_gap = 1;
}

/* Adaptive: traffic flows (a look or a spin found events, or a sleep ended
 * within the budget): spin on the next wait. */
static void set_hot(struct rrr__waiter *w, bool hot)
{
	if (hot || w->hot) {
		w->cold_waits = 0;
		w->probe_gap = 1;
	}
	w->hot = hot;
}

int rrr__wait_epoll(struct rrr__waiter *w, int epfd, struct epoll_event *evs, int max,
		    int timeout_ms)
{
	uint64_t t0, budget, now;
	bool probe = false;
	int n;

	w->waits++;
	budget = 0;
	if (timeout_ms != 0) {
		if (w->mode == RRR_WAIT_SPIN || (w->mode == RRR_WAIT_ADAPTIVE && w->hot)) {
			budget = w->spin_ns;
		} else if (w->mode == RRR_WAIT_ADAPTIVE && ++w->cold_waits >= w->probe_gap) {
			/* cold: spin once in a while anyway (see the essay) */
			budget = w->spin_ns;
			probe = true;
			w->probes++;
			w->cold_waits = 0;
			if (w->probe_gap < PROBE_GAP_MAX)
				w->probe_gap *= 2;
		}
	}
	if (budget || timeout_ms == 0) {
		/* a look first; sleeping right away needs none */
		n = epoll_wait(epfd, evs, max, 0);
		if (n != 0 || timeout_ms == 0) {
			if (n > 0 && w->mode == RRR_WAIT_ADAPTIVE)
				set_hot(w, true);
			return n;
		}
	}
	t0 = rrr__mono_ns();
	if (timeout_ms > 0 && budget > (uint64_t)timeout_ms * 1000000ull)
		budget = (uint64_t)timeout_ms * 1000000ull;
	now = t0;
	while (now - t0 < budget) {
		sched_yield();
		n = epoll_wait(epfd, evs, max, 0);
		if (n != 0) {
			if (n > 0) {
				w->spin_hits++;
				if (w->mode == RRR_WAIT_ADAPTIVE)
					set_hot(w, true);
			}
			return n;
		}
		now = rrr__mono_ns();
	}
	if (timeout_ms > 0) {
		uint64_t spent_ms = (now - t0) / 1000000ull;

		timeout_ms = spent_ms >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent_ms;
	}
	w->sleeps++;
	n = epoll_wait(epfd, evs, max, timeout_ms);
	/* hot when a spin of the usual budget would have found it: a spin that
	 * ran out (the peer is slow, or needs this core) turns spinning off
	 * until a wait ends within the budget again, or a probe finds events */
	if (w->mode == RRR_WAIT_ADAPTIVE)
		set_hot(w, !probe && n > 0 && rrr__mono_ns() - t0 < w->spin_ns);
	return n;
}
