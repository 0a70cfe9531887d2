/* SPDX-License-Identifier: MIT */
/*
 * common/log.c - the library's one log hook (include/rrr/log.h).
 *
 * Normal operation: a library file calls rrr__log(level, fmt, ...). When
 * the level passes the threshold (one relaxed atomic load, so a disabled
 * debug line costs a branch), the line is formatted into a stack buffer and
 * handed to the installed handler. The handler and its context are read
 * together under a mutex and called outside it, so a slow handler never
 * holds the lock and a handler may itself log. The default handler writes
 * "line\n" to stderr with one write(2), so lines of concurrent threads do
 * not interleave.
 *
 * The threshold starts at RRR_LOG_WARN, or RRR_LOG_DEBUG when RRR_DEBUG
 * (or the older RRR_SVC_DEBUG) is set in the environment; it is decided
 * once, at the first line or the first rrr_log_set_level().
 *
 * Lines a peer can trigger go through a rate limiter first
 * (rrr__ratelimit_ok: one line per kind and interval, then the count of the
 * lines held back), so no peer can write the log at its own pace; a string
 * a peer sent goes into a line only through rrr__log_peer_str() (escaped,
 * cut), so no peer can write a line of its own.
 *
 * Recovery: nothing here can fail in a way a caller could act on; a line
 * longer than the buffer is cut, a failing stderr is ignored.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rrr_impl.h"

#define LOG_LINE_MAX 512

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static rrr_log_fn g_fn;   /* NULL: default handler */
static void *g_ctx;
static int g_level;       /* 0: not decided yet */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void level_init(void)
{
	int l = RRR_LOG_WARN;

	if (getenv("RRR_DEBUG") || getenv("RRR_SVC_DEBUG"))
		l = RRR_LOG_DEBUG;
	__atomic_store_n(&g_level, l, __ATOMIC_RELAXED);
}

static int level_now(void)
{
	pthread_once(&g_once, level_init);
	return __atomic_load_n(&g_level, __ATOMIC_RELAXED);
}

static void default_handler(const char *line)
{
	char buf[LOG_LINE_MAX + 1];
	int n = snprintf(buf, sizeof(buf), "%s\n", line);
	ssize_t w;

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {
		n = (int)sizeof(buf) - 1;
		buf[n - 1] = '\n';
	}
	w = write(2, buf, (size_t)n);
	(void)w; /* nowhere to report a failing stderr */
}

void rrr_log_set_handler(rrr_log_fn fn, void *ctx)
{
	pthread_mutex_lock(&g_lock);
	g_fn = fn;
	g_ctx = fn ? ctx : NULL;
	pthread_mutex_unlock(&g_lock);
}

enum rrr_log_level rrr_log_set_level(enum rrr_log_level level)
{
	int old;

	pthread_once(&g_once, level_init);
	old = __atomic_exchange_n(&g_level, (int)level, __ATOMIC_RELAXED);
	return (enum rrr_log_level)old;
}

const char *rrr_log_level_name(enum rrr_log_level level)
{
	switch (level) {
	case RRR_LOG_ERR:
		return "err";
	case RRR_LOG_WARN:
		return "warn";
	case RRR_LOG_INFO:
		return "info";
	case RRR_LOG_DEBUG:
		return "debug";
	}
	return "?";
}

int rrr__log_enabled(enum rrr_log_level level)
{
	return (int)level <= level_now();
}

void rrr__log(enum rrr_log_level level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	rrr_log_fn fn;
	void *ctx;
	va_list ap;

	if (!rrr__log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&g_lock);
	fn = g_fn;
	ctx = g_ctx;
	pthread_mutex_unlock(&g_lock);
	if (fn)
		fn(ctx, level, line);
	else
		default_handler(line);
}

bool rrr__ratelimit_ok(struct rrr__ratelimit *rl, uint32_t every_ms, uint64_t *held)
{
	int64_t now = rrr__mono_ms();

	if (rl->used && now - rl->last_ms < (int64_t)every_ms) {
		rl->held++;
		return false;
	}
	rl->used = true;
	rl->last_ms = now;
	*held = rl->held;
	rl->held = 0;
	return true;
}

/* Length of the valid UTF-8 sequence at @p (1..4), or 0 when it is not one
 * (overlong forms, surrogates, beyond U+10FFFF and a cut sequence too) or
 * is a C1 control character (U+0080..U+009F). */
static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned min, cp;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0xa0; /* U+0080..U+009F: C1 controls, escaped */
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0; /* also the NUL that ends the string */
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

const char *rrr__log_peer_str(const char *s, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *start = (const unsigned char *)(s ? s : "");
	const unsigned char *p = start;
	size_t o = 0;

	while (*p) {
		char unit[4];
		size_t n, len = 1; /* bytes written, bytes consumed */

		if (*p == '\\') {
			unit[0] = unit[1] = '\\';
			n = 2;
		} else if (*p >= 0x20 && *p < 0x7f && !(*p == '<' && p == start)) {
			unit[0] = (char)*p;
			n = 1;
		} else if (*p >= 0x80 && (len = utf8_len(p)) != 0) {
			memcpy(unit, p, len);
			n = len;
		} else { /* control, DEL, a leading '<', not UTF-8 */
			len = 1;
			unit[0] = '\\';
			unit[1] = 'x';
			unit[2] = hex[*p >> 4];
			unit[3] = hex[*p & 15];
			n = 4;
		}
		if (o + n > RRR__LOG_PEER_MAX) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(out + o, unit, n);
		o += n;
		p += len;
	}
	out[o] = '\0';
	return out;
}

void rrr__addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[64];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		if (inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a))) {
			snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
			return;
		}
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		    inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], a, sizeof(a))) {
			snprintf(buf, len, "%s:%u", a, ntohs(in6->sin6_port));
			return;
		}
		if (inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a))) {
			snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
			return;
		}
	}
	snprintf(buf, len, "?");
}
