/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/io_nconnect.c - rrr-bench io with --nconnect (several
 * connections per NFS mode) and its page-fault figures, run as a user runs
 * it against a real rrr-server process (real sockets, ephemeral ports):
 * every NFS mode gets one result per connection count, the tcp baseline
 * one per operation x size x queue depth; NFS results carry client and
 * server page faults per I/O, the table has the nc and flt columns; bad
 * --nconnect values are usage errors (exit 2). Found through $RRR_BUILD.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/progs.h"

/* The value of member @key inside the object [obj, end), or NULL. */
static const char *member(const char *obj, const char *end, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(obj, k);
	return p && p < end ? p + strlen(k) : NULL;
}

struct tally {
	int objs, with_ops, with_faults, with_server_faults;
};

/* Tally the results with "mode": @mode and "nconnect": @nc. */
static struct tally tally(const char *json, const char *mode, int nc)
{
	struct tally t = {0};
	char want[64];
	const char *p = strstr(json, "\"results\"");

	cr_assert(p, "no results array");
	snprintf(want, sizeof(want), "\"mode\": \"%s\"", mode);
	while ((p = strstr(p + 1, "{"))) {
		const char *end = strstr(p, "}"), *m, *v;

		if (!end)
			break;
		m = strstr(p, want);
		v = member(p, end, "nconnect");
		if (m && m < end && v && atoi(v) == nc) {
			t.objs++;
			if ((v = member(p, end, "ops")) && atof(v) > 0)
				t.with_ops++;
			if ((v = member(p, end, "client_faults_per_op")) && atof(v) >= 0 &&
			    member(p, end, "client_minflt"))
				t.with_faults++;
			if ((v = member(p, end, "server_faults_per_op")) && atof(v) >= 0 &&
			    member(p, end, "server_majflt"))
				t.with_server_faults++;
		}
		p = end;
	}
	return t;
}

Test(bench_io_nconnect, usage)
{
	bench_need();
	char log[] = "/tmp/rrr-bench-nc-log-XXXXXX";
	char *zero[] = {NULL, "io", "--nconnect", "0", NULL};
	char *big[] = {NULL, "io", "--nconnect", "1,17", NULL};
	char *junk[] = {NULL, "io", "--nconnect", "two", NULL};
	char *help[] = {NULL, "io", "--help", NULL};

	bench_mktemp(log);
	cr_assert_eq(bench_run_log(zero, log, 10), 2);
	cr_assert_eq(bench_run_log(big, log, 10), 2);
	bench_log_has(log, "--nconnect takes 1 .. 16");
	cr_assert_eq(bench_run_log(junk, log, 10), 2);
	cr_assert_eq(bench_run_log(help, log, 10), 0);
	bench_log_has(log, "--nconnect LIST");
	unlink(log);
}

Test(bench_io_nconnect, cells_per_connection_count_with_faults, .timeout = 180)
{
	bench_need();
	char path[] = "/tmp/rrr-bench-nc-XXXXXX", log[] = "/tmp/rrr-bench-nc-log-XXXXXX";
	int fd = mkstemp(path), lfd = mkstemp(log);

	cr_assert(fd >= 0 && lfd >= 0);
	close(fd);
	close(lfd);
	char *argv[] = {NULL,	      "io",  "--modes",	  "rdma,nfs-tcp,tcp",
			"--sizes",    "4k",  "--qd",	  "2",
			"--nconnect", "1,2", "--seconds", "0.15",
			"--rounds",   "1",   "--warmup",  "0",
			"--json",     path,  NULL};
	int rc = bench_run_log(argv, log, 160);
	char *out = bench_slurp(log);
	cr_assert_eq(rc, 0, "%s", out);
	char *j = bench_slurp(path);
	unlink(path);
	unlink(log);
	cr_assert_null(strstr(j, "\"error\""), "%s", j);
	/* read + write, each with nconnect 1 and 2, for every NFS mode */
	for (int nc = 1; nc <= 2; nc++) {
		struct tally r = tally(j, "rdma", nc), t = tally(j, "nfs-tcp", nc);

		cr_assert_eq(r.objs, 2, "rdma nconnect=%d: %d results\n%s", nc, r.objs, j);
		cr_assert_eq(r.with_ops, 2);
		cr_assert_eq(r.with_faults, 2, "client faults per I/O reported");
		cr_assert_eq(r.with_server_faults, 2, "server faults per I/O reported");
		cr_assert_eq(t.objs, 2, "nfs-tcp nconnect=%d", nc);
		cr_assert_eq(t.with_ops, 2);
		cr_assert_eq(t.with_faults, 2);
		cr_assert_eq(t.with_server_faults, 2);
	}
	/* the one-connection tcp baseline runs once per op x size x qd */
	struct tally b1 = tally(j, "tcp", 1), b2 = tally(j, "tcp", 2);
	cr_assert_eq(b1.objs, 2, "%s", j);
	cr_assert_eq(b1.with_ops, 2);
	cr_assert_eq(b1.with_faults, 0, "no fault figures for the in-process echo");
	cr_assert_eq(b2.objs, 0);
	/* the table: nc and fault columns, rows for both connection counts */
	cr_assert(strstr(out, " nc ") && strstr(out, "flt.c") && strstr(out, "flt.s"), "%s", out);
	cr_assert(strstr(out, "read     4k   2  2  rdma"), "%s", out);
	cr_assert(strstr(out, "write    4k   2  1  tcp"), "%s", out);
	cr_assert_null(strstr(out, "  2  tcp"), "tcp has one connection\n%s", out);
	free(out);
	free(j);
}
