/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/programs.c - rrr-bench as a user runs it: tiny runs of
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

#include "helpers/progs.h"

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
	bench_need();
	char *help[] = {NULL, "reg", "--help", NULL};
	char *bad[] = {NULL, "io", "--sizes", "2m", NULL};
	char *badmode[] = {NULL, "io", "--modes", "carrier-pigeon", NULL};
	char *none[] = {NULL, NULL};

	cr_assert_eq(bench_run(help, 10), 0);
	cr_assert_eq(bench_run(bad, 10), 2);
	cr_assert_eq(bench_run(badmode, 10), 2);
	cr_assert_eq(bench_run(none, 10), 2);
}

Test(bench_programs, reg_on_soft, .timeout = 120)
{
	bench_need();
	char path[] = "/tmp/rrr-bench-reg-XXXXXX";
	bench_mktemp(path);
	char *argv[] = {NULL,	   "reg", "--sizes", "4k,1m", "--iters", "200",
			"--batch", "50",  "--json",  path,    NULL};
	cr_assert_eq(bench_run(argv, 100), 0);
	char *j = bench_slurp(path);
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
	bench_need();
	char path[] = "/tmp/rrr-bench-io-XXXXXX";
	bench_mktemp(path);
	char *argv[] = {NULL,	    "io", "--sizes",  "4k", "--qd",   "1,4", "--seconds", "0.15",
			"--rounds", "1",  "--warmup", "0",  "--json", path,  NULL};
	cr_assert_eq(bench_run(argv, 160), 0);
	char *j = bench_slurp(path);
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
	bench_need();
	const char *modes[] = {"event", "spin", "adaptive"};

	for (int i = 0; i < 3; i++) {
		char *argv[] = {NULL, "io", "--wait", (char *)modes[i], "--spin-us", "100",
				"--modes", "rdma,nfs-tcp", "--sizes", "4k", "--qd", "1,8",
				"--seconds", "0.1", "--rounds", "1", "--warmup", "0", NULL};

		cr_assert_eq(bench_run(argv, 60), 0, "--wait %s", modes[i]);
	}
	char *bad[] = {NULL, "io", "--wait", "busy", NULL};
	char *badspin[] = {NULL, "io", "--spin-us", "99999", NULL};

	cr_assert_eq(bench_run(bad, 10), 2);
	cr_assert_eq(bench_run(badspin, 10), 2);
}

Test(bench_programs, crc, .timeout = 60)
{
	bench_need();
	char path[] = "/tmp/rrr-bench-crc-XXXXXX";
	char *help[] = {NULL, "crc", "--help", NULL};
	char *badsize[] = {NULL, "crc", "--sizes", "0", NULL};
	char *badreps[] = {NULL, "crc", "--reps", "0", NULL};
	char *extra[] = {NULL, "crc", "now", NULL};

	bench_mktemp(path);
	cr_assert_eq(bench_run(help, 10), 0);
	cr_assert_eq(bench_run(badsize, 10), 2);
	cr_assert_eq(bench_run(badreps, 10), 2);
	cr_assert_eq(bench_run(extra, 10), 2);
	char *argv[] = {NULL,	       "crc", "--sizes", "4k,64k,1m", "--reps", "3",
			"--rep-bytes", "2m",  "--json",	 path,	      NULL};
	cr_assert_eq(bench_run(argv, 50), 0);
	char *j = bench_slurp(path);
	unlink(path);
	/* one object per size and function, each with a positive median */
	cr_assert_eq(count_results(j, "op", "crc32c", "gb_s_median"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "memcpy", "gb_s_median"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "xxh3", "gb_s_median"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "xxh3", "ratio_to_memcpy"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "crc32c", "ratio_to_memcpy"), 3, "%s", j);
	cr_assert_eq(count_results(j, "op", "crc32c", "ns_per_call_median"), 3, "%s", j);
	cr_assert(strstr(j, "\"benchmark\": \"crc\""));
	cr_assert(strstr(j, "\"reps\": 3"), "%s", j);
	cr_assert(strstr(j, "\"size\": 1048576"), "%s", j);
	cr_assert(strstr(j, "\"command\": \"rrr-bench crc --sizes 4k,64k,1m"), "%s", j);
	cr_assert(strstr(j, "\"nproc\": "));
	free(j);
}
