/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/fault.c - fault injection: drop the TCP connection, delay
 * or stall, at random points chosen by a seed.
 *
 * Normal operation: off. The device options (device.c)
 *   fault_seed=N         seed of the draws (default 1); a run with the same
 *                        seed, options and sequence of QPs draws the same
 *   fault_drop_ppm=N     drop the connection at a point with probability
 *                        N per million (default 0)
 *   fault_delay_us=N     sleep N microseconds at a point ...
 *   fault_delay_ppm=N    ... with probability N per million (default
 *                        1000000 once fault_delay_us is set: every point)
 *   fault_stall_ms=N     stop driving the QP for N milliseconds at a point ...
 *   fault_stall_ppm=N    ... with probability N per million (default 1000)
 * turn it on; with none of drop/delay/stall set, dev->fault_on is false and
 * the only cost is one predictable branch per point (soft_fault_point()).
 *
 * A point is each transmit system call (tx.c, before sendmsg) and each
 * received FPDU header (rx.c, before the header is checked), so faults land
 * between and inside messages, in Read Responses, Terminates and replies
 * alike, on either side that has the option. Each QP draws from its own
 * xorshift64* stream, seeded from fault_seed and the QP's creation number
 * on the device, so one QP's traffic does not shift another's draws.
 *
 * Faults:
 *   drop   shutdown(SHUT_RDWR) of the QP's socket; the caller then moves
 *          the QP to error as on a lost connection (no Terminate): the peer reads end of stream,
 *          both sides flush and report DISCONNECTED, as when a cable or a
 *          middlebox cuts TCP. What the upper layer does then (reconnect,
 *          re-send) is what is being tested.
 *   delay  usleep() with the QP lock held: the QP's progress is late by
 *          that much (and, with progress_thread=1, the device's).
 *   stall  the same for milliseconds: the peer sees a host that stopped
 *          (TCP keeps the bytes; its window fills and its sends wait).
 *
 * Counters are process-wide (every soft device of the process), so a
 * program that cannot reach the device a library opened for it (rrr_clnt)
 * can still report what was injected: rrr__soft_fault_totals(). One
 * device's counters are read by rrr__soft_fault_dev_stats() (device.c,
 * which knows a soft device by its ops table).
 *
 * Recovery: nothing to recover; a dropped QP is in error like any other.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "soft.h"

static atomic_uint_fast64_t g_points, g_drops, g_delays, g_stalls;

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void rrr__soft_fault_qp_init(struct soft_qp *qp)
{
	struct soft_dev *d = qp->dev;
	uint64_t n;

	if (!d->fault_on)
		return;
	n = atomic_fetch_add(&d->fault_qps, 1);
	qp->fault_rng = splitmix64(d->fault_seed ^ splitmix64(n + 1));
	if (!qp->fault_rng)
		qp->fault_rng = 1; /* xorshift never leaves 0 */
}

/* xorshift64*: a draw in [0, 1000000). */
static uint32_t draw_ppm(struct soft_qp *qp)
{
	uint64_t x = qp->fault_rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	qp->fault_rng = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dull >> 32) % 1000000u);
}

bool rrr__soft_fault(struct soft_qp *qp)
{
	struct soft_dev *d = qp->dev;

	atomic_fetch_add_explicit(&g_points, 1, memory_order_relaxed);
	if (d->fault_drop_ppm && draw_ppm(qp) < d->fault_drop_ppm) {
		atomic_fetch_add_explicit(&g_drops, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->fault_drops, 1, memory_order_relaxed);
		if (qp->fd >= 0)
			shutdown(qp->fd, SHUT_RDWR);
		return true;
	}
	if (d->fault_stall_ms && draw_ppm(qp) < d->fault_stall_ppm) {
		atomic_fetch_add_explicit(&g_stalls, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->fault_stalls, 1, memory_order_relaxed);
		usleep(d->fault_stall_ms * 1000u);
	}
	if (d->fault_delay_us && draw_ppm(qp) < d->fault_delay_ppm) {
		atomic_fetch_add_explicit(&g_delays, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->fault_delays, 1, memory_order_relaxed);
		usleep(d->fault_delay_us);
	}
	return false;
}

void rrr_soft_fault_totals(struct rrr_soft_fault_stats *st)
{
	struct rrr__soft_fault_stats t;
	rrr__soft_fault_totals(&t);
	st->points = t.points;
	st->drops = t.drops;
	st->delays = t.delays;
	st->stalls = t.stalls;
}

void rrr__soft_fault_totals(struct rrr__soft_fault_stats *st)
{
	st->points = atomic_load(&g_points);
	st->drops = atomic_load(&g_drops);
	st->delays = atomic_load(&g_delays);
	st->stalls = atomic_load(&g_stalls);
}

