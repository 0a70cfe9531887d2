/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/helpers/progs.h - running rrr-bench from a test, as a user
 * would: found through $RRR_BUILD, output to a log, bounded in time.
 */
#ifndef RRR_TESTS_BENCH_PROGS_H
#define RRR_TESTS_BENCH_PROGS_H

/* The rrr-bench binary found by bench_need(). */
extern char bench[4096];

/* Skip the test (saying why) unless $RRR_BUILD/rrr-bench can run. */
void bench_need(void);
/* Run rrr-bench with @argv (NULL-terminated, argv[0] ignored), stdout and
 * stderr to @log; killed after @timeout_s (the test fails). Returns the
 * exit status. */
int bench_run_log(char **argv, const char *log, int timeout_s);
/* The same with a temporary log, whose end goes to the test log when the
 * status is neither 0 nor 2 (usage errors, which usage tests expect). */
int bench_run(char **argv, int timeout_s);
/* The whole file at @path, NUL-terminated; the caller frees it. */
char *bench_slurp(const char *path);
/* A fresh empty temporary file from the mkstemp() template @path (asserted). */
void bench_mktemp(char *path);
/* bench_run_log() to a temporary log: its status into *@rc, the log's text
 * returned (the caller frees it; the file is gone). */
char *bench_run_out(char **argv, int timeout_s, int *rc);
/* Asserts that the file @log holds @needle (the log quoted when not). */
void bench_log_has(const char *log, const char *needle);

#endif
