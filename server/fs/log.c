/* SPDX-License-Identifier: MIT */
/*
 * server/fs/log.c - rrr-server's log: one line per event on stderr, with a
 * level (syslog(3) priorities: error 3, warning 4, notice 5, info 6,
 * debug 7). Lines above the current level (--log-level, the config key
 * log-level, live on SIGHUP) are dropped.
 *
 * Two formats. On a terminal or into a file: "rrr-server: warning: text"
 * (notice lines carry no level word, as before levels existed). Under
 * systemd, stderr is a stream to the journal and systemd says so in
 * JOURNAL_STREAM ("dev:ino" of that stream): then every line starts with
 * "<N>", which journald reads as the priority (sd-daemon(3)), so
 * `journalctl -p warning -u rrr-server` works without linking libsystemd.
 * RRR_LOG_FORMAT=journal or =plain forces one format.
 *
 * Each line is formatted into a buffer and written with one write(2), so
 * lines of concurrent threads do not interleave.
 *
 * The library's own operator lines (<rrr/log.h>: a peer refused, a
 * connection dropped, an unsafe option) come through the same path:
 * fs_log_set_level() installs lib_line() as the library's log handler and
 * hands it the same threshold, so they carry rrr-server's format and level.
 *
 * Peers. Nothing a client sends may write a line of its own or fill the
 * disk: a string from a request (a MOUNT path) goes in only through
 * fs_log_peer() (control characters and non-UTF-8 as \xNN, cut at 128
 * bytes), and as a last guard every control byte left in a formatted line
 * becomes \xNN here too, so one event is one line. A line a peer can
 * trigger goes through fs_log_limited(): one line per kind and second, the
 * count of those held back in the next one, and a count line from the
 * control thread (fs_log_rate_flush, every second) once a flood stops.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <rrr/log.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"

static atomic_int g_level = LOG_NOTICE;
static int g_journal = -1; /* -1: not decided yet */

static const char *const names[] = {"emerg", "alert", "crit", "error", "warning", "notice",
				     "info", "debug"};

static bool journal(void);
static void lib_line(void *ctx, enum rrr_log_level level, const char *line);

/* Called by main() before any thread starts (and on reload): decides the
 * format then, so threads only read it; routes the library's lines here. */
void fs_log_set_level(int level)
{
	(void)journal();
	atomic_store(&g_level, level);
	rrr_log_set_handler(lib_line, NULL);
	(void)rrr_log_set_level(level >= LOG_DEBUG ? RRR_LOG_DEBUG : (enum rrr_log_level)level);
}

int fs_log_level(void)
{
	return atomic_load(&g_level);
}

int fs_log_level_parse(const char *s)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!strcasecmp(s, "err"))
		return LOG_ERR;
	if (!strcasecmp(s, "warn"))
		return LOG_WARNING;
	if (s[0] >= '3' && s[0] <= '7' && !s[1])
		return s[0] - '0';
	return -1;
}

const char *fs_log_level_name(int level)
{
	return level >= 0 && level <= LOG_DEBUG ? names[level] : "?";
}

static bool journal(void)
{
	if (g_journal >= 0)
		return g_journal;
	const char *f = getenv("RRR_LOG_FORMAT");
	bool j = false;
	if (f && !strcmp(f, "journal")) {
		j = true;
	} else if (!f || strcmp(f, "plain")) {
		const char *js = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;
		if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
		    (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
			j = true;
	}
	g_journal = j;
	return j;
}

/* One line: prefix, the text of @fmt, @suffix (may be ""), newline. */
static void vlog_suffix(int level, const char *suffix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void vlog_suffix(int level, const char *suffix, const char *fmt, va_list ap)
{
	static const char hex[] = "0123456789abcdef";
	char text[2048], line[2048 + 64];
	int n, m;
	if (journal())
		n = snprintf(line, sizeof(line), "<%d>", level);
	else if (level == LOG_NOTICE)
		n = snprintf(line, sizeof(line), "rrr-server: ");
	else
		n = snprintf(line, sizeof(line), "rrr-server: %s: ", fs_log_level_name(level));
	if (n < 0)
		return;
	m = vsnprintf(text, sizeof(text), fmt, ap);
	if (m < 0)
		return;
	size_t len = (size_t)n;
	/* a control byte that got this far (a caller forgot fs_log_peer) still
	 * cannot end the line: \xNN, as fs_log_peer writes it */
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (len + 4 > sizeof(line) - 2)
			break;
		if (*p < 0x20 || *p == 0x7f) {
			line[len++] = '\\';
			line[len++] = 'x';
			line[len++] = hex[*p >> 4];
			line[len++] = hex[*p & 15];
		} else {
			line[len++] = (char)*p;
		}
	}
	for (const char *p = suffix; *p && len < sizeof(line) - 2; p++)
		line[len++] = *p;
	line[len++] = '\n';
	ssize_t w = write(2, line, len);
	(void)w; /* nowhere to report a failing stderr */
}

static void vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vlog(int level, const char *fmt, va_list ap)
{
	if (level > atomic_load(&g_level))
		return;
	vlog_suffix(level, "", fmt, ap);
}

void fs_log_at(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

/* The old entry point (fh.c, mount.c): notice, or warning when the text
 * says so. */
void fs_log(const char *fmt, ...)
{
	int level = LOG_NOTICE;
	if (!strncmp(fmt, "warning: ", 9)) {
		level = LOG_WARNING;
		fmt += 9;
	}
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

/* The library's log handler: its levels are syslog priorities too. */
static void lib_line(void *ctx, enum rrr_log_level level, const char *line)
{
	(void)ctx;
	fs_log_at((int)level, "%s", line);
}

/* ------------------------------------------------------------ peers */
static pthread_mutex_t g_rates_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fs_lograte *g_rates; /* every limiter used so far */

const char *fs_log_peer(const char *s, char *out)
{
	return rrr__log_peer_str(s, out);
}

void fs_log_limited(struct fs_lograte *r, int level, const char *fmt, ...)
{
	if (level > atomic_load(&g_level))
		return;
	if (!atomic_load(&r->listed)) {
		pthread_mutex_lock(&g_rates_lock);
		if (!atomic_load(&r->listed)) {
			r->next = g_rates;
			g_rates = r;
			atomic_store(&r->listed, true);
		}
		pthread_mutex_unlock(&g_rates_lock);
	}
	uint64_t held = 0;
	pthread_mutex_lock(&r->lock);
	bool ok = rrr__ratelimit_ok(&r->rl, RRR__LOG_EVERY_MS, &held);
	r->level = level;
	pthread_mutex_unlock(&r->lock);
	if (!ok)
		return;
	char suffix[64] = "";
	if (held)
		snprintf(suffix, sizeof(suffix), " (%llu more since the last line)",
			 (unsigned long long)held);
	va_list ap;
	va_start(ap, fmt);
	vlog_suffix(level, suffix, fmt, ap);
	va_end(ap);
}

static void count_line(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void count_line(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void fs_log_rate_flush(bool all)
{
	int64_t now = rrr__mono_ms();
	pthread_mutex_lock(&g_rates_lock);
	for (struct fs_lograte *r = g_rates; r; r = r->next) {
		uint64_t held = 0;
		int level;
		pthread_mutex_lock(&r->lock);
		if (r->rl.held && (all || now - r->rl.last_ms >= (int64_t)RRR__LOG_EVERY_MS)) {
			held = r->rl.held;
			r->rl.held = 0;
			r->rl.last_ms = now; /* the count line is this kind's line */
		}
		level = r->level;
		pthread_mutex_unlock(&r->lock);
		if (held)
			count_line(level, "%s: %llu more since the last line", r->kind,
				   (unsigned long long)held);
	}
	pthread_mutex_unlock(&g_rates_lock);
}
