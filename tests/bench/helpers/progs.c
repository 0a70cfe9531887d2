/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/helpers/progs.c - see progs.h.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

char bench[4096];

void bench_need(void)
{
	const char *b = getenv("RRR_BUILD");

	if (!b)
		cr_skip_test("RRR_BUILD is not set (run through make test-unit)");
	snprintf(bench, sizeof(bench), "%s/rrr-bench", b);
	if (access(bench, X_OK))
		cr_skip_test("%s not built", bench);
}

int bench_run_log(char **argv, const char *log, int timeout_s)
{
	FILE *lf = fopen(log, "w");
	pid_t pid;
	int st = 0, rc = -1;

	cr_assert_not_null(lf, "%s: %s", log, strerror(errno));
	pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		dup2(fileno(lf), 1);
		dup2(fileno(lf), 2);
		closefrom(3);
		argv[0] = bench;
		execv(bench, argv);
		_exit(127);
	}
	fclose(lf);
	for (int i = 0; i < timeout_s * 20; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		usleep(50000);
	}
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	cr_assert(rc >= 0, "rrr-bench did not finish in %d s", timeout_s);
	return rc;
}

/* Print the end of the run's output into the test log. */
static void show_log(const char *log)
{
	char buf[4096];
	FILE *f = fopen(log, "r");
	size_t n;

	if (!f)
		return;
	fseek(f, -(long)sizeof(buf) + 1, SEEK_END);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	cr_log_error("rrr-bench output (end):\n%s", buf);
}

int bench_run(char **argv, int timeout_s)
{
	char log[] = "/tmp/rrr-bench-test-log-XXXXXX";
	int lfd = mkstemp(log), rc;

	cr_assert(lfd >= 0);
	close(lfd);
	rc = bench_run_log(argv, log, timeout_s);
	if (rc != 0 && rc != 2)
		show_log(log);
	unlink(log);
	return rc;
}

char *bench_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	cr_assert(f, "%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return buf;
}

void bench_mktemp(char *path)
{
	int fd = mkstemp(path);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	close(fd);
}

char *bench_run_out(char **argv, int timeout_s, int *rc)
{
	char log[] = "/tmp/rrr-bench-log-XXXXXX";
	char *out;

	bench_mktemp(log);
	*rc = bench_run_log(argv, log, timeout_s);
	out = bench_slurp(log);
	unlink(log);
	return out;
}

void bench_log_has(const char *log, const char *needle)
{
	char *out = bench_slurp(log);

	cr_assert(strstr(out, needle), "no '%s' in:\n%s", needle, out);
	free(out);
}
