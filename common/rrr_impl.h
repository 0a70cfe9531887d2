/* SPDX-License-Identifier: MIT */
/*
 * common/rrr_impl.h - what every layer of the library shares, and nothing
 * else: error sentences, container_of, "key=value" option lists, the log
 * hook, the monotonic clock, and the counters of struct rrr_xprt_stats.
 *
 * The layers (docs/design.md) are common/ < xdr/ < transport/ < client/,
 * server/ < programs. A file includes its own layer's headers, the public
 * headers <rrr/...>, and this one; it never includes a header private to a
 * layer above, nor a provider's private header (transport/provider_impl.h,
 * transport/soft/, transport/verbs/) unless it is that provider or the
 * generic provider layer. scripts/check-includes.sh (make test) enforces
 * the rule.
 *
 * Errors: a function that fails returns a negative errno; when the error
 * will reach a person, it first records a sentence with rrr__set_error()
 * (what failed, what to do), which rrr_last_error() returns.
 *
 * Logging: lines the library emits on its own, outside any call a program
 * could check, go through rrr__log() to the hook of <rrr/log.h>, never to
 * stdout/stderr directly. Counters and USDT probes (common/probes.h) come
 * first; a log line is for what an operator can act on.
 */
#ifndef RRR_COMMON_RRR_IMPL_H
#define RRR_COMMON_RRR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rrr/log.h>
#include <rrr/stats.h>

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* --- errors (common/error.c) ------------------------------------------------ */

/* Record a human-readable reason for the error about to be returned
 * (read back with rrr_last_error()); printf-style, thread-local. Returns
 * @err so callers can write: return rrr__set_error(-ENODEV, "..."). */
int rrr__set_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Forget the recorded reason of this thread (rrr_last_error() returns NULL). */
void rrr__clear_error(void);

/* --- options (common/opts.c) ------------------------------------------------- */

/* Parse one "key=value[,key=value...]" option list; calls @fn for each pair
 * (the strings live in a copy, valid during the call only). Returns 0 or
 * the first nonzero value @fn returns; -EINVAL (with a sentence) on syntax
 * errors or a list longer than 511 bytes. NULL or "" is an empty list. */
int rrr__opts_parse(const char *opts, int (*fn)(void *arg, const char *key, const char *val),
		    void *arg);

/* --- logging (common/log.c) --------------------------------------------------- */

/* True when a line of @level would reach the handler (cheap: one relaxed
 * load), so a caller can skip building an expensive argument. */
int rrr__log_enabled(enum rrr_log_level level);

/* Format one line and hand it to the installed handler when @level passes
 * the threshold. Thread-safe; never blocks unless the handler does. */
void rrr__log(enum rrr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rrr__log_err(...) rrr__log(RRR_LOG_ERR, __VA_ARGS__)
#define rrr__log_warn(...) rrr__log(RRR_LOG_WARN, __VA_ARGS__)
#define rrr__log_info(...) rrr__log(RRR_LOG_INFO, __VA_ARGS__)
#define rrr__log_debug(...)                                   \
	do {                                                  \
		if (rrr__log_enabled(RRR_LOG_DEBUG))          \
			rrr__log(RRR_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

/*
 * Lines a peer can trigger go out at most once per @every_ms per kind, with
 * the count of those held back since the last one. The caller serialises
 * calls on one limiter (its own lock). Zero-initialised is ready.
 */
struct rrr__ratelimit {
	int64_t last_ms;
	uint64_t held;
	bool used;
};
#define RRR__LOG_EVERY_MS 1000u
/* True when a line may go out now; *@held then gets how many were held
 * back since the previous one (and the count restarts). Never blocks. */
bool rrr__ratelimit_ok(struct rrr__ratelimit *rl, uint32_t every_ms, uint64_t *held);

/*
 * A string a peer sent (a path, a name) made fit for one log line: control
 * characters (C0, DEL, C1) and bytes that are not UTF-8 become \xNN, a
 * backslash becomes \\, a '<' that starts the string becomes \x3c (so it
 * can never start a line as a journal priority), valid UTF-8 is kept; cut
 * after RRR__LOG_PEER_MAX bytes of that text, with "..." to say so.
 */
#define RRR__LOG_PEER_MAX 128u
#define RRR__LOG_PEER_SIZE (RRR__LOG_PEER_MAX + 4u) /* + "..." + NUL */
/* @s (NUL-terminated; NULL reads as "") escaped into @out, which has
 * RRR__LOG_PEER_SIZE bytes; returns @out. Never fails, never blocks. */
const char *rrr__log_peer_str(const char *s, char *out);

struct sockaddr_storage;
/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of @ss into @buf; "?" when unknown. */
void rrr__addr_str(const struct sockaddr_storage *ss, char *buf, size_t len);

/* --- clocks ----------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds / milliseconds: deadlines, timeouts, rate
 * limits. Never fail, never block. */
static inline uint64_t rrr__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int64_t rrr__mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- counters (common/stats.c) ------------------------------------------------- */
/*
 * The one way the library updates and reads the counters of struct
 * rrr_xprt_stats, on the client and on the server. Counters are plain
 * fields updated with relaxed atomics on the hot path (no lock, no
 * ordering: each counter is exact, a snapshot of several is not taken at
 * one instant) and read field by field with relaxed atomic loads by
 * rrr__xprt_stats_load() / rrr__xprt_stats_fold(), from any thread at any
 * time.
 */

/* Add @n to / set @v in the counter @field of the stats at @st. */
#define RRR__STAT_ADD(st, field, n) __atomic_fetch_add(&(st)->field, (n), __ATOMIC_RELAXED)
#define RRR__STAT_SET(st, field, v) __atomic_store_n(&(st)->field, (v), __ATOMIC_RELAXED)

/*
 * Doorbell batching (client/clnt_rdma.c, server/svc_rdma_sendto.c): how many calls
 * or replies that are ready together go out in one post to the send queue.
 * A quarter of the credit window: with the whole window in one post, client
 * and server take turns (one works through 32 messages while the other
 * waits for them); with a quarter, the client is already working on the
 * first replies while the server produces the next ones, so both ends stay
 * busy. Small windows post one at a time.
 */
static inline uint32_t rrr__doorbell_max(uint32_t credits)
{
	return credits >= 8 ? credits / 4 : 1;
}

/* Copy @src into @dst, each field read atomically (relaxed). */
void rrr__xprt_stats_load(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src);
/* Add the counters of the snapshot @s to @dst (both the caller's); the
 * gauges (credits, max_credits, inline_send, inline_recv) are left to the
 * caller, who knows how its parts combine. */
void rrr__xprt_stats_add(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *s);
/* Fold @src into @dst: counters are summed, the gauges (credits,
 * max_credits, inline_send, inline_recv) keep the larger value; @src is
 * read atomically (relaxed), @dst belongs to the caller. */
void rrr__xprt_stats_fold(struct rrr_xprt_stats *dst, const struct rrr_xprt_stats *src);

#endif /* RRR_COMMON_RRR_IMPL_H */
