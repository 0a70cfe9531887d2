/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/test_programs.c - rrr-bench as a user runs it: tiny runs of
 * `reg`, `io` (a real rrr-server process, real sockets, ephemeral ports)
 * and `crc` that must exit 0 and write JSON with the figures of every
 * strategy, mode and size asked for; usage errors exit 2. Found through
 * $RRR_BUILD.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char bench[4096];

static void need_bench(void)
{
	const char *b = getenv("RRR_BUILD");

	if (!b)
		cr_skip_test("RRR_BUILD is not set (run through make test-unit)");
	snprintf(bench, sizeof(bench), "%s/rrr-bench", b);
	if (access(bench, X_OK))
		cr_skip_test("%s not built", bench);
}

/* Print the end of the run's output into the test log (when it failed). */
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

/* Run rrr-bench with @argv (NULL-terminated, argv[0] ignored); output to a
 * temporary log shown when the status is not 0; killed after @timeout_s.
 * Returns the exit status. */
static int run(char **argv, int timeout_s)
{
	char log[] = "/tmp/rrr-bench-test-log-XXXXXX";
	int lfd = mkstemp(log);
	pid_t pid;
	int st = 0, rc = -1;

	cr_assert(lfd >= 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		int fd = lfd;

		dup2(fd, 1);
		dup2(fd, 2);
		argv[0] = bench;
		execv(bench, argv);
		_exit(127);
	}
	close(lfd);
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
	if (rc != 0 && rc != 2) /* 2: usage errors, expected by the usage test */
		show_log(log);
	unlink(log);
	cr_assert(rc >= 0, "rrr-bench did not finish in %d s", timeout_s);
	return rc;
}

static char *slurp(const char *path)
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

/* Count the objects of the results array that have "key": "val" and a
 * positive number for @numkey. The writer puts one member per line. */
static int count_results(const char *json, const char *key, const char *val, const char *numkey)
{
	char want[128], numk[64];
	const char *p = strstr(json, "\"results\"");
	int n = 0;

	cr_assert(p, "no results array");
	snprintf(want, sizeof(want), "\"%s\": \"%s\"", key, val);
	snprintf(numk, sizeof(numk), "\"%s\": ", numkey);
	while ((p = strstr(p, want))) {
		const char *end = strstr(p, "}");
		const char *q = strstr(p, numk);

		if (q && end && q < end && atof(q + strlen(numk)) > 0)
			n++;
		p += strlen(want);
	}
	return n;
}

Test(bench_programs, usage)
{
	need_bench();
	char *help[] = {NULL, "reg", "--help", NULL};
	char *bad[] = {NULL, "io", "--sizes", "2m", NULL};
	char *badmode[] = {NULL, "io", "--modes", "carrier-pigeon", NULL};
	char *none[] = {NULL, NULL};

	cr_assert_eq(run(help, 10), 0);
	cr_assert_eq(run(bad, 10), 2);
	cr_assert_eq(run(badmode, 10), 2);
	cr_assert_eq(run(none, 10), 2);
}

Test(bench_programs, reg_on_soft, .timeout = 120)
{
	need_bench();
	char path[] = "/tmp/rrr-bench-reg-XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	char *argv[] = {NULL,	   "reg", "--sizes", "4k,1m", "--iters", "200",
			"--batch", "50",  "--json",  path,    NULL};
	cr_assert_eq(run(argv, 100), 0);
	char *j = slurp(path);
	unlink(path);
	/* 2 sizes x 3 layouts, each strategy */
	cr_assert_eq(count_results(j, "strategy", "frwr", "wall_median_ns"), 6);
	cr_assert_eq(count_results(j, "strategy", "persistent", "cpu_median_ns"), 6);
	cr_assert_eq(count_results(j, "strategy", "frwr", "wall_ratio_to_persistent"), 6);
	cr_assert_null(strstr(j, "\"error\""), "%s", j);
	cr_assert(strstr(j, "\"command\": \"rrr-bench reg --sizes 4k,1m"));
	cr_assert(strstr(j, "\"nproc\": "));
	free(j);
}

Test(bench_programs, io_all_modes_on_soft, .timeout = 180)
{
	need_bench();
	char path[] = "/tmp/rrr-bench-io-XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	char *argv[] = {NULL,	    "io", "--sizes",  "4k", "--qd",   "1,4", "--seconds", "0.15",
			"--rounds", "1",  "--warmup", "0",  "--json", path,  NULL};
	cr_assert_eq(run(argv, 160), 0);
	char *j = slurp(path);
	unlink(path);
	/* read+write x qd 1,4 = 4 cells per mode, each with operations */
	cr_assert_eq(count_results(j, "mode", "rdma", "ops"), 4, "%s", j);
	cr_assert_eq(count_results(j, "mode", "persistent", "ops"), 4);
	cr_assert_eq(count_results(j, "mode", "bounce", "ops"), 4);
	cr_assert_eq(count_results(j, "mode", "nfs-tcp", "ops"), 4);
	cr_assert_eq(count_results(j, "mode", "tcp", "ops"), 4);
	cr_assert_eq(count_results(j, "mode", "rdma-chunks", "ops"), 4);
	/* 4 KiB travels inline with the default 8 KiB inline sizes (nothing
	 * registered); with 4 KiB inline sizes it goes through registered chunks */
	cr_assert_eq(count_results(j, "mode", "rdma", "client_registrations"), 0, "%s", j);
	cr_assert_eq(count_results(j, "mode", "rdma-chunks", "client_registrations"), 4, "%s", j);
	cr_assert_null(strstr(j, "\"error\""), "%s", j);
	free(j);
}

/* rrr-server and the client under each wait mode (--wait reaches both). */
Test(bench_programs, io_wait_modes, .timeout = 120)
{
	need_bench();
	const char *modes[] = {"event", "spin", "adaptive"};

	for (int i = 0; i < 3; i++) {
		char *argv[] = {NULL, "io", "--wait", (char *)modes[i], "--spin-us", "100",
				"--modes", "rdma,nfs-tcp", "--sizes", "4k", "--qd", "1,8",
				"--seconds", "0.1", "--rounds", "1", "--warmup", "0", NULL};

		cr_assert_eq(run(argv, 60), 0, "--wait %s", modes[i]);
	}
	char *bad[] = {NULL, "io", "--wait", "busy", NULL};
	char *badspin[] = {NULL, "io", "--spin-us", "99999", NULL};

	cr_assert_eq(run(bad, 10), 2);
	cr_assert_eq(run(badspin, 10), 2);
}

Test(bench_programs, crc, .timeout = 60)
{
	need_bench();
	char path[] = "/tmp/rrr-bench-crc-XXXXXX";
	int fd = mkstemp(path);
	char *help[] = {NULL, "crc", "--help", NULL};
	char *badsize[] = {NULL, "crc", "--sizes", "0", NULL};
	char *badreps[] = {NULL, "crc", "--reps", "0", NULL};
	char *extra[] = {NULL, "crc", "now", NULL};

	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(run(help, 10), 0);
	cr_assert_eq(run(badsize, 10), 2);
	cr_assert_eq(run(badreps, 10), 2);
	cr_assert_eq(run(extra, 10), 2);
	char *argv[] = {NULL,	       "crc", "--sizes", "4k,64k,1m", "--reps", "3",
			"--rep-bytes", "2m",  "--json",	 path,	      NULL};
	cr_assert_eq(run(argv, 50), 0);
	char *j = slurp(path);
	unlink(path);
	/* one object per size and function, each with a positive median */
	cr_assert_eq(count_results(j, "op", "crc32c", "gb_s_median"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "memcpy", "gb_s_median"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "crc32c", "ratio_to_memcpy"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "crc32c", "ns_per_call_median"), 3, "%s", j);
	cr_assert(strstr(j, "\"benchmark\": \"crc\""));
	cr_assert(strstr(j, "\"reps\": 3"), "%s", j);
	cr_assert(strstr(j, "\"size\": 1048576"), "%s", j);
	cr_assert(strstr(j, "\"command\": \"rrr-bench crc --sizes 4k,64k,1m"), "%s", j);
	cr_assert(strstr(j, "\"nproc\": "));
	free(j);
}
