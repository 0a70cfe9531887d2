/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/soak.c - rrr-bench soak as make test runs it: its
 * options, and the 60-second version of the soak of docs/reliability.md
 * (4 clients x QD8 on one spawned rrr-server, the soft provider dropping
 * client connections at 200 ppm of its fault points, a server restart
 * halfway): 0 corrupted and 0 lost bytes, faults really injected, the
 * restart done, every client verified files, and the reproducing command
 * printed, and 0 failed operations: the clients re-send every outstanding
 * call after a reconnect (the default), so no call may fail because of a
 * dropped connection or the restart. --fail-fast (rrr_nfs3_opts.fail_fast)
 * must reach the clients: there the same drops do fail calls, which the
 * soak retries and reports without failing the run. And the checks
 * themselves: damage done to a file in the export (--damage) is counted as
 * corrupted or lost bytes and fails the run.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/progs.h"

static unsigned long long figure(const char *out, const char *key)
{
	const char *p = strstr(out, key);

	cr_assert(p, "no '%s' in:\n%s", key, out);
	return strtoull(p + strlen(key), NULL, 10);
}

Test(bench_soak, usage)
{
	bench_need();
	char log[] = "/tmp/rrr-bench-soak-log-XXXXXX";
	char *zero[] = {NULL, "soak", "--clients", "0", NULL};
	char *late[] = {NULL, "soak", "--seconds", "10", "--restart-at", "10", NULL};
	char *host[] = {NULL, "soak", "--host", "127.0.0.1", "--restart-at", "1", NULL};
	char *ppm[] = {NULL, "soak", "--drop-ppm", "1000001", NULL};
	char *help[] = {NULL, "soak", "--help", NULL};

	bench_mktemp(log);
	cr_assert_eq(bench_run_log(zero, log, 10), 2);
	bench_log_has(log, "--clients takes 1 .. 256");
	cr_assert_eq(bench_run_log(late, log, 10), 2);
	cr_assert_eq(bench_run_log(host, log, 10), 2);
	cr_assert_eq(bench_run_log(ppm, log, 10), 2);
	cr_assert_eq(bench_run_log(help, log, 10), 0);
	char *out = bench_slurp(log);
	cr_assert(strstr(out, "--resend"), "%s", out);
	cr_assert(strstr(out, "--clients 64 --qd 32 --seconds 600"), "%s", out);
	free(out);
	unlink(log);
}

Test(bench_soak, sixty_seconds_drops_and_a_restart, .timeout = 300)
{
	bench_need();
	char *argv[] = {
	    NULL,	    "soak", "--clients",  "4",	 "--qd",   "8",	 "--seconds", "60",
	    "--restart-at", "30",   "--drop-ppm", "200", "--seed", "11", NULL};
	int rc;
	char *out = bench_run_out(argv, 280, &rc);

	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_eq(figure(out, "corrupted bytes: "), 0, "%s", out);
	cr_assert_eq(figure(out, "lost bytes: "), 0, "%s", out);
	cr_assert_eq(figure(out, "server restarts: "), 1, "%s", out);
	cr_assert_gt(figure(out, "injected in the clients: "), 0, "no drop injected:\n%s", out);
	cr_assert_gt(figure(out, "bytes written and committed, "), 0, "%s", out);
	cr_assert(strstr(out, "final pass "), "%s", out);
	cr_assert(strstr(out, "abandoned: 0"), "%s", out);
	cr_assert(strstr(out, "re-send promised (failed operations fail the run)"), "%s", out);
	cr_assert_eq(figure(out, "failed operations: "), 0, "%s", out);
	cr_assert(strstr(out, "reproduce: rrr-bench soak --clients 4 --qd 8 "), "%s", out);
	cr_assert(!strstr(out, "--fail-fast"), "%s", out);
	cr_assert(strstr(out, "--seed 11 --drop-ppm 200 "), "%s", out);
	cr_assert(strstr(out, "server stop: exit 0"), "%s", out);
	cr_assert(strstr(out, "\nPASS: 0 corrupted, 0 lost bytes, 0 failed operations"), "%s", out);
	free(out);
}

/* --fail-fast reaches the clients: non-idempotent calls in flight on a
 * dropped connection fail (WRITEs, CREATEs), the soak retries them, reports
 * them, and the run still passes on its data checks. */
Test(bench_soak, fail_fast_clients_fail_calls_that_are_retried, .timeout = 150)
{
	bench_need();
	char *argv[] = {
	    NULL, "soak",	  "--fail-fast", "--clients",  "2",    "--qd",	 "8", "--seconds",
	    "6",  "--restart-at", "3",		 "--drop-ppm", "2000", "--seed", "5", NULL};
	int rc;
	char *out = bench_run_out(argv, 140, &rc);

	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "re-send off, --fail-fast"), "%s", out);
	cr_assert_gt(figure(out, "injected in the clients: "), 0, "no drop injected:\n%s", out);
	cr_assert_gt(figure(out, "failed operations: "), 0,
		     "fail_fast clients lost no call to a drop:\n%s", out);
	cr_assert_eq(figure(out, "corrupted bytes: "), 0, "%s", out);
	cr_assert_eq(figure(out, "lost bytes: "), 0, "%s", out);
	cr_assert(strstr(out, "abandoned: 0"), "%s", out);
	cr_assert(strstr(out, " --fail-fast\n"), "%s", out);
	cr_assert(strstr(out, "\nPASS: 0 corrupted, 0 lost bytes; failed operations reported"),
		  "%s", out);
	free(out);
}

/* The checks are checked: a byte flipped, or half the file cut off, in the
 * export behind the server's back before the final pass must be counted
 * (through NFS, end to end) and fail the run. */
static char *damaged_run(const char *how)
{
	char *argv[] = {
	    NULL,	    "soak", "--clients",  "1", "--qd",	   "2",		"--seconds", "2",
	    "--restart-at", "-1",   "--drop-ppm", "0", "--damage", (char *)how, NULL};
	int rc;
	char *out = bench_run_out(argv, 60, &rc);

	cr_assert_eq(rc, 1, "damage %s must fail the run:\n%s", how, out);
	cr_assert(strstr(out, "\nFAIL: "), "%s", out);
	return out;
}

Test(bench_soak, damage_is_counted_and_fails_the_run, .timeout = 120)
{
	bench_need();
	char *out = damaged_run("corrupt");

	cr_assert_eq(figure(out, "corrupted bytes: "), 1, "%s", out);
	cr_assert_eq(figure(out, "lost bytes: "), 0, "%s", out);
	cr_assert(strstr(out, "--damage corrupt"), "%s", out);
	free(out);
	out = damaged_run("truncate");
	/* files of qd x io-size = 2 x 64 KiB, the second half cut */
	cr_assert_eq(figure(out, "lost bytes: "), 65536, "%s", out);
	cr_assert_eq(figure(out, "corrupted bytes: "), 0, "%s", out);
	free(out);
}
