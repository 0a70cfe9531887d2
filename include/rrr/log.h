/* SPDX-License-Identifier: MIT */
/*
 * rrr/log.h - errors and operator messages of the library.
 *
 * Two channels, both for people, never for programs (programs look at
 * return values, counters and USDT probes, docs/tracing.md):
 *
 *   - rrr_last_error(): the sentence recorded by the call that just failed
 *     on this thread (what failed, what to do). Thread-local; the next
 *     failing call on the same thread overwrites it.
 *   - the log hook: lines the library emits on its own, outside any call a
 *     program made and could check (a server dropping a peer, a device
 *     closed with live objects, an unsafe option in use). By default the
 *     library writes RRR_LOG_WARN and RRR_LOG_ERR lines to stderr as
 *     "rrr: <line>\n" and drops the rest; an embedding program installs its
 *     own handler with rrr_log_set_handler() to route them into its log.
 *
 * Debug lines (RRR_LOG_DEBUG) are emitted only when a handler asked for
 * them (rrr_log_set_level()) or, with the default handler, when the
 * environment variable RRR_DEBUG is set at the first line.
 */
#ifndef RRR_LOG_H
#define RRR_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

enum rrr_log_level {
	RRR_LOG_ERR = 3,   /* something failed that an operator must look at */
	RRR_LOG_WARN = 4,  /* something an operator should know about */
	RRR_LOG_INFO = 6,  /* normal but notable (rare) */
	RRR_LOG_DEBUG = 7, /* for whoever debugs the library */
};

/*
 * A log handler: called with the level and one formatted line (no trailing
 * newline, NUL-terminated, at most 511 bytes) and the @ctx given to
 * rrr_log_set_handler(). It may run on any library thread (client progress
 * thread, server worker, provider thread), concurrently with itself: it
 * must be thread-safe and should not block for long. It must not call back
 * into the library except rrr_last_error() and rrr_log_level_name().
 */
typedef void (*rrr_log_fn)(void *ctx, enum rrr_log_level level, const char *line);

/*
 * Route the library's operator lines to @fn(@ctx, ...); NULL restores the
 * default handler (stderr, RRR_LOG_WARN and more severe). Lines with a level
 * numerically above the threshold of rrr_log_set_level() are not formatted.
 * Thread-safe (the handler and its context are swapped together under a
 * lock; a line being emitted on another thread may still reach the old
 * handler). Does not block. Ownership of @ctx stays with the caller, who
 * keeps it valid until the handler is replaced.
 */
void rrr_log_set_handler(rrr_log_fn fn, void *ctx);

/*
 * Lines of @level and more severe (numerically <=) reach the handler; the
 * default is RRR_LOG_WARN (RRR_LOG_DEBUG when RRR_DEBUG is set in the
 * environment). Returns the previous threshold. Thread-safe; does not block.
 */
enum rrr_log_level rrr_log_set_level(enum rrr_log_level level);

/* "err", "warn", "info" or "debug"; "?" for other values. Never NULL. */
const char *rrr_log_level_name(enum rrr_log_level level);

/*
 * The human-readable reason recorded by the last library call that failed
 * on this thread (for an operator), or NULL when none was recorded. The
 * string is thread-local and valid until the next library call on this
 * thread. Does not block.
 * What it covers: every function that returns a negative errno records
 * the sentence before returning, on the calling thread. An RPC call's
 * status is delivered elsewhere (a callback, another thread): its sentence
 * travels with the call (struct rrr_call.error, rrr/client.h) and is also
 * copied here on the thread that runs the callback and on the thread that
 * waited in rrr_clnt_call(). Lines the library emits outside any call go
 * to the log hook instead.
 */
const char *rrr_last_error(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_LOG_H */
