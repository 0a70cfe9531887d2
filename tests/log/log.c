/* SPDX-License-Identifier: MIT */
/*
 * tests/log - the library's log hook (include/rrr/log.h): a handler an
 * embedding program installs receives the library's operator lines with
 * their level; the threshold filters; NULL restores the default handler;
 * rrr_last_error() keeps the sentence of the failing call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <rrr/log.h>
#include <rrr/provider.h>

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[512];
static int seen_level, seen_count;

static void grab(void *ctx, enum rrr_log_level level, const char *line)
{
	cr_assert_eq(ctx, &seen_count);
	pthread_mutex_lock(&seen_lock);
	snprintf(seen, sizeof(seen), "%s", line);
	seen_level = level;
	seen_count++;
	pthread_mutex_unlock(&seen_lock);
}

Test(log, handler_gets_provider_warning)
{
	struct rrr_device *dev = NULL;

	rrr_log_set_handler(grab, &seen_count);
	(void)rrr_log_set_level(RRR_LOG_WARN);
	seen_count = 0;
	cr_assert_eq(rrr_device_open("soft", "no_such_option=1", &dev), -EINVAL);
	cr_assert_null(dev);
	cr_assert_eq(seen_count, 1);
	cr_assert_eq(seen_level, RRR_LOG_WARN);
	cr_assert(strstr(seen, "rrr soft: bad option 'no_such_option=1'"), "line: %s", seen);
	cr_assert_null(strchr(seen, '\n'), "a line carries no newline");
	cr_assert(rrr_last_error() && strstr(rrr_last_error(), "no_such_option"),
		  "the failing call keeps its sentence");
	rrr_log_set_handler(NULL, NULL);
}

Test(log, threshold_filters)
{
	struct rrr_device *dev = NULL;
	enum rrr_log_level old;

	rrr_log_set_handler(grab, &seen_count);
	old = rrr_log_set_level(RRR_LOG_ERR);
	seen_count = 0;
	cr_assert_eq(rrr_device_open("soft", "no_such_option=1", &dev), -EINVAL);
	cr_assert_eq(seen_count, 0, "a warning does not pass an ERR threshold");
	cr_assert_eq(rrr_log_set_level(old), RRR_LOG_ERR);
	rrr_log_set_handler(NULL, NULL);
}

Test(log, level_names)
{
	cr_assert_str_eq(rrr_log_level_name(RRR_LOG_ERR), "err");
	cr_assert_str_eq(rrr_log_level_name(RRR_LOG_WARN), "warn");
	cr_assert_str_eq(rrr_log_level_name(RRR_LOG_INFO), "info");
	cr_assert_str_eq(rrr_log_level_name(RRR_LOG_DEBUG), "debug");
	cr_assert_str_eq(rrr_log_level_name((enum rrr_log_level)42), "?");
}

Test(log, device_open_clears_old_sentence)
{
	struct rrr_device *dev = NULL;

	rrr_log_set_handler(grab, &seen_count); /* keep stderr quiet */
	cr_assert_eq(rrr_device_open("soft", "no_such_option=1", &dev), -EINVAL);
	cr_assert_not_null(rrr_last_error());
	cr_assert_eq(rrr_device_open("soft", NULL, &dev), 0);
	cr_assert_null(rrr_last_error());
	rrr_device_close(dev);
	rrr_log_set_handler(NULL, NULL);
}

/* Without a handler, warnings go to stderr as one line each, debug lines
 * not at all (the threshold is RRR_LOG_WARN). */
Test(log, default_handler_writes_warnings_to_stderr, .init = cr_redirect_stderr)
{
	struct rrr_device *dev = NULL;
	char out[1024];
	size_t n;
	FILE *f;

	rrr_log_set_handler(NULL, NULL);
	(void)rrr_log_set_level(RRR_LOG_WARN);
	cr_assert_eq(rrr_device_open("soft", "no_such_option=1", &dev), -EINVAL);
	f = cr_get_redirected_stderr();
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	cr_assert(strncmp(out, "rrr soft: bad option 'no_such_option=1'", 39) == 0, "stderr: %s",
		  out);
	cr_assert_eq(strchr(out, '\n'), out + n - 1, "one line: %s", out);
}
