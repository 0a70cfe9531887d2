/* SPDX-License-Identifier: MIT */
/*
 * server/svc_offload.c - which calls are handed to another worker: the
 * handler cost table behind rrr__svc_offload_wanted().
 *
 * A connection belongs to one worker, which receives its calls and sends
 * their replies (svc.c). A handler that takes long (a 1 MiB WRITE to a
 * file, a lock that waits) would hold up every other call of that
 * connection behind it and leave the other cores idle, so the transport
 * hands such a handler to an idle worker (rrr__svc_offload) and goes on
 * receiving. The hand-off costs two thread wake-ups (there and back, some
 * 10 to 40 us), more than a quick handler runs (a cached 4 KiB READ: a few
 * microseconds) and moves the call's buffers between caches, so it is
 * worth it only for slow handlers (1 ms: a disk, a lock that waits, a
 * remote back end). Then it is worth it even for a call alone on its
 * connection: the wake-ups cost a few per cent of its latency, and the
 * owner stays free to receive the next call, whenever it comes (a rule
 * that waited for a second call in flight would miss the one sent a
 * moment later).
 *
 * The cost of a procedure is a moving average (1/8 weight to the newest)
 * of its handler's run time, kept per (program, version, procedure) in a
 * small process-wide open-addressing table of relaxed atomics: a
 * heuristic, so a race between two updates only loses one sample. A
 * procedure not timed yet counts as slow (its first calls are handed off
 * when a worker is idle), so two slow first calls of one connection run
 * at once. A full table times nothing more and hands nothing more off for
 * new procedures.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "server/svc_impl.h"

#define COST_SLOTS  1024u /* power of two */
#define COST_PROBES 8u
/* handlers shorter than this run on the connection's own worker: a 1 MiB
 * READ or WRITE through the page cache (some 200 to 600 us) does, since
 * handing it off moves its buffers to another core's caches and, on a host
 * whose other cores are busy anyway (the client on the same machine), cost
 * 7 to 11 % of CPU per I/O at depth 32 (rrr-bench io, 100 us threshold) */
#define OFFLOAD_MIN_NS 1000000

static struct {
	_Atomic uint64_t key; /* 0: free; prog, a 1 bit, low bits of vers and proc */
	_Atomic int64_t ns;   /* moving average */
} costs[COST_SLOTS];

static uint64_t cost_key(uint32_t prog, uint32_t vers, uint32_t proc)
{
	return (uint64_t)prog << 32 | 1ull << 31 | (uint64_t)(vers & 0x7fffu) << 16 | (proc & 0xffffu);
}

static unsigned cost_hash(uint64_t k)
{
	k ^= k >> 29;
	k *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(k >> 40) & (COST_SLOTS - 1);
}

int64_t rrr__svc_cost_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rrr__svc_cost_note(uint32_t prog, uint32_t vers, uint32_t proc, int64_t ns)
{
	uint64_t k = cost_key(prog, vers, proc);
	unsigned h = cost_hash(k);

	for (unsigned i = 0; i < COST_PROBES; i++) {
		unsigned s = (h + i) & (COST_SLOTS - 1);
		uint64_t cur = atomic_load_explicit(&costs[s].key, memory_order_acquire);

		if (cur == 0) {
			uint64_t zero = 0;

			if (!atomic_compare_exchange_strong(&costs[s].key, &zero, k) && zero != k)
				continue;
			atomic_store_explicit(&costs[s].ns, ns, memory_order_relaxed);
			return;
		}
		if (cur == k) {
			int64_t old = atomic_load_explicit(&costs[s].ns, memory_order_relaxed);

			atomic_store_explicit(&costs[s].ns, old + (ns - old) / 8,
					      memory_order_relaxed);
			return;
		}
	}
}

/* The average cost of a procedure's handler in ns; -1 when not timed. */
static int64_t cost_ns(uint32_t prog, uint32_t vers, uint32_t proc)
{
	uint64_t k = cost_key(prog, vers, proc);
	unsigned h = cost_hash(k);

	for (unsigned i = 0; i < COST_PROBES; i++) {
		unsigned s = (h + i) & (COST_SLOTS - 1);
		uint64_t cur = atomic_load_explicit(&costs[s].key, memory_order_acquire);

		if (cur == k)
			return atomic_load_explicit(&costs[s].ns, memory_order_relaxed);
		if (cur == 0)
			return -1;
	}
	return 0; /* the table is full here: run it where it is */
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool rrr__svc_offload_wanted(const uint8_t *msg, size_t len)
{
	int64_t ns;

	/* xid, CALL, rpcvers, prog, vers, proc: anything else is answered
	 * quickly where it is */
	if (len < 24 || be32(msg + 4) != RRR_RPC_CALL)
		return false;
	ns = cost_ns(be32(msg + 12), be32(msg + 16), be32(msg + 20));
	return ns < 0 || ns >= OFFLOAD_MIN_NS;
}
