/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_common.h - helpers shared by the rrr-bench subcommands.
 *
 * Clocks, sample sets with order statistics, a tiny streaming JSON writer,
 * option parsing helpers (sizes with K/M suffixes, comma lists), a plain
 * loopback TCP echo used as the physical baseline, and printing of the
 * command line that reproduces a run. Nothing here allocates behind the
 * caller's back except the sample arrays and the JSON writer's FILE.
 *
 * Every function returns 0 or a negative errno unless it says otherwise.
 * Nothing here is thread-safe unless it says so: each thread keeps its
 * own sample set and the caller merges them.
 */
#ifndef RRR_BENCH_COMMON_H
#define RRR_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- clocks ------------------------------------------------------------- */

/* CLOCK_MONOTONIC in ns (vDSO, ~20 ns per call). */
uint64_t rrr__bench_now_ns(void);
/* CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID). A system
 * call: measure batches, not single operations. */
uint64_t rrr__bench_thread_cpu_ns(void);
/* CPU time of the whole process (every thread: progress threads, in-process
 * servers) in ns (CLOCK_PROCESS_CPUTIME_ID). */
uint64_t rrr__bench_process_cpu_ns(void);
/* user+system CPU time of another process in ns, from /proc/PID/stat (clock
 * tick resolution, 10 ms: use over runs of seconds). -errno if unreadable. */
int64_t rrr__bench_pid_cpu_ns(int pid);
/* /proc/@pid/stat read into @buf (@len bytes): a pointer to its fields after
 * the command name (the state first), or NULL with errno set. */
const char *rrr__bench_pid_stat(int pid, char *buf, size_t len);
/* Median cost in ns of one rrr__bench_now_ns() call (to report, not to
 * subtract). */
double rrr__bench_clock_overhead_ns(void);

/* --- samples -------------------------------------------------------------- */

struct rrr__bench_samples {
	double *v;
	size_t n, cap;
	bool sorted;
};

/* Reserve room for @cap samples up front (0 is fine: grows on demand). */
int rrr__bench_samples_init(struct rrr__bench_samples *s, size_t cap);
void rrr__bench_samples_free(struct rrr__bench_samples *s);
void rrr__bench_samples_reset(struct rrr__bench_samples *s);
/* Append; grows the array (-ENOMEM on failure, the sample is dropped). */
int rrr__bench_samples_add(struct rrr__bench_samples *s, double x);
/* Append every sample of @from. */
int rrr__bench_samples_merge(struct rrr__bench_samples *s, const struct rrr__bench_samples *from);
/* Quantile q in [0,1] (nearest rank; sorts in place). 0 when empty. */
double rrr__bench_samples_quantile(struct rrr__bench_samples *s, double q);
double rrr__bench_samples_median(struct rrr__bench_samples *s);
double rrr__bench_samples_p99(struct rrr__bench_samples *s);
double rrr__bench_samples_mean(const struct rrr__bench_samples *s);
double rrr__bench_samples_min(struct rrr__bench_samples *s);

/* --- JSON writer ---------------------------------------------------------------
 * Streaming, with automatic commas. Keys are written by the *_key variants
 * inside objects; the plain variants are array elements / the root value.
 * Errors are sticky: rrr__bench_json_close() returns the first one. */
struct rrr__bench_json {
	FILE *f;
	int depth;
	bool first[32];
	int err;
};

/* Open @path for writing ("-" is stdout). */
int rrr__bench_json_open(struct rrr__bench_json *j, const char *path);
int rrr__bench_json_close(struct rrr__bench_json *j);
void rrr__bench_json_obj_begin(struct rrr__bench_json *j, const char *key);
void rrr__bench_json_obj_end(struct rrr__bench_json *j);
void rrr__bench_json_arr_begin(struct rrr__bench_json *j, const char *key);
void rrr__bench_json_arr_end(struct rrr__bench_json *j);
void rrr__bench_json_str(struct rrr__bench_json *j, const char *key, const char *v);
void rrr__bench_json_num(struct rrr__bench_json *j, const char *key, double v);
void rrr__bench_json_int(struct rrr__bench_json *j, const char *key, long long v);
void rrr__bench_json_bool(struct rrr__bench_json *j, const char *key, bool v);
/* The standard "machine" and "command" members of every result file. */
void rrr__bench_json_machine(struct rrr__bench_json *j, int argc, char **argv);
/* The start of sub-command @cmd's result file: opens @path (else says
 * "rrr-bench @cmd: @path: <error>" on stderr and returns -errno), then the
 * root object with "benchmark": @cmd and the machine members. */
int rrr__bench_json_begin(struct rrr__bench_json *j, const char *path, const char *cmd, int argc,
			  char **argv);
/* The end of that file: ends the root object and closes it; 0, or -errno
 * after "rrr-bench @cmd: @path: <error>" on stderr. */
int rrr__bench_json_end(struct rrr__bench_json *j, const char *path, const char *cmd);

/* --- run context ------------------------------------------------------------ */

/* "rrr-bench reg --sizes 4k,64k ..." as typed (shell-quoted where needed),
 * into @buf. Returns @buf. @argv is the subcommand's argv (argv[0] = "reg"). */
const char *rrr__bench_cmdline(int argc, char **argv, char *buf, size_t len);
/* Print "# command: ..." and "# machine: ..." to @f. */
void rrr__bench_print_header(FILE *f, int argc, char **argv);
/* 1, 5 and 15 minute load averages from /proc/loadavg ("unknown"), into
 * @buf: a benchmark on a busy shared machine says so. */
const char *rrr__bench_loadavg(char *buf, size_t len);
/* CPU model from /proc/cpuinfo ("unknown" if none), into @buf. */
const char *rrr__bench_cpu_model(char *buf, size_t len);

/* --- option helpers -------------------------------------------------------- */

/* "4096", "4k", "64K", "1m", "1M" (binary multiples). */
int rrr__bench_parse_size(const char *s, uint64_t *out);
/* Comma list of sizes into @out (at most @max). Returns the count or -errno. */
int rrr__bench_parse_sizes(const char *s, uint64_t *out, int max);
/* Comma list of unsigned integers (at most @max). Returns the count or -errno. */
int rrr__bench_parse_uints(const char *s, unsigned *out, int max);
/* Split a comma list into at most @max tokens pointing into @buf (a copy
 * of @s made by the caller, modified in place). Returns the count. */
int rrr__bench_split(char *buf, char **tok, int max);
/* Option --@name of sub-command @cmd, a comma list (of sizes: rrr__bench_parse_sizes,
 * or of unsigned integers: rrr__bench_parse_uints) into @out (at most @max),
 * each 1 .. @limit. Returns the count, or -1 after saying on stderr what is
 * wrong: "rrr-bench @cmd: bad --@name '@arg'" when it does not parse, else
 * "rrr-bench @cmd: " and @range (a printf format, with its arguments). */
int rrr__bench_opt_sizes(const char *cmd, const char *name, const char *arg, uint64_t *out, int max,
			 uint64_t limit, const char *range, ...)
    __attribute__((format(printf, 7, 8)));
int rrr__bench_opt_uints(const char *cmd, const char *name, const char *arg, unsigned *out, int max,
			 unsigned limit, const char *range, ...)
    __attribute__((format(printf, 7, 8)));
/* An option of sub-command @cmd, a count (atoi) of 1 .. @max into *@out: 0,
 * or -1 after "rrr-bench @cmd: @what" on stderr. */
int rrr__bench_opt_count(const char *cmd, const char *arg, unsigned max, unsigned *out,
			 const char *what);
/* The option parser of sub-command @cmd: getopt_long() over @lopts, with -h
 * the one short option; --json ('j') and --help ('h') it handles itself. */
struct option;
struct rrr__bench_opts {
	const char *cmd; /* "crc": its name in messages */
	const struct option *lopts;
	void (*usage)(FILE *f);
	const char *json; /* out: --json's argument, or NULL */
	int exit;	  /* out: when rrr__bench_opt_next() returned -1, the exit code */
	bool started;
};
/* The next option of @argv for the caller to handle (> 0); 0 once every
 * argument was read and all were options; -1 when the sub-command is to
 * exit with @o->exit: 0 after --help (@o->usage on stdout), 2 after an
 * unknown option (@o->usage on stderr) or a stray argument (named on
 * stderr, rrr__bench_opt_done()). */
int rrr__bench_opt_next(struct rrr__bench_opts *o, int argc, char **argv);
/* A sub-command's default: case of getopt: for 'h' prints @usage to stdout and
 * returns 0, for anything else prints it to stderr and returns 2 (the exit code). */
int rrr__bench_opt_usage(int opt, void (*usage)(FILE *f));
/* After getopt: 0 when every argument was an option, else names the first
 * stray one ("rrr-bench @cmd: unexpected argument") on stderr and returns 2. */
int rrr__bench_opt_done(const char *cmd, int argc, char **argv);
/* VmRSS of process @pid (0: this process) in KiB, or -1. */
long rrr__bench_rss_kib(int pid);
/* Waits up to @timeout_s for rrr-server @pid to write its port file @path
 * ("rdma=R mount=M tcp=T"): 0 with *@rdma (0 without RDMA) and *@mount,
 * -ECHILD when the server exited first (reaped), -ETIMEDOUT. */
int rrr__bench_server_ports(int pid, const char *path, int timeout_s, unsigned *rdma,
			    unsigned *mount);
/* The arguments of a private rrr-server @path, from av[0]: serving @exp
 * with its state in @state, root not squashed, not in rpcbind, no NFS
 * port 2049, on 127.0.0.1 ports @port and @mport ("0": ephemeral) written
 * to @pfile. Returns how many (RRR__BENCH_SERVER_ARGC); the caller adds
 * its own and the NULL. */
#define RRR__BENCH_SERVER_ARGC 17
int rrr__bench_server_argv(const char **av, const char *path, const char *exp, const char *state,
			   const char *port, const char *mport, const char *pfile);
/* Removes @dir and everything below it (best effort, symlinks not followed). */
void rrr__bench_rm_tree(const char *dir);
/* rrr-server's path into @out (@len bytes): @path when set (it must be
 * executable), else next to this program, else in $RRR_BUILD. 0 or -errno
 * (-ENOENT: found nowhere). */
int rrr__bench_find_server(const char *path, char *out, size_t len);
/* Human size: "4k", "1m", "1536". */
const char *rrr__bench_fmt_size(uint64_t v, char *buf, size_t len);

/* --- plain loopback TCP baseline -------------------------------------------
 * A request/response echo over one connected loopback TCP socket pair, run
 * in-process (the server side is a thread): the physical baseline of this
 * machine for moving the same bytes as an NFS READ or WRITE.
 *   READ-like:  request of @small bytes, response of @size bytes
 *   WRITE-like: request of @size bytes, response of @small bytes
 * @qd requests are kept outstanding on the one connection (pipelined), as
 * an RPC client does with credits.
 */
struct rrr__bench_tcp_opts {
	uint64_t size;	     /* bulk bytes per operation */
	uint32_t small;	     /* the other direction: header-sized message */
	unsigned qd;	     /* outstanding requests (>= 1) */
	bool write;	     /* WRITE-like (bulk goes client -> server) */
	double seconds;	     /* run for this long ... */
	uint64_t max_ops;    /* ... or this many operations (0: no limit) */
	uint64_t warmup_ops; /* not measured */
};

struct rrr__bench_tcp_result {
	uint64_t ops;
	double wall_s;
	double cpu_ns_per_op;		  /* process CPU (client + server thread) per op */
	struct rrr__bench_samples lat_ns; /* per-operation latency (caller frees) */
};

/* Runs the echo; MAY BLOCK for o->seconds. */
int rrr__bench_tcp_echo(const struct rrr__bench_tcp_opts *o, struct rrr__bench_tcp_result *r);

#endif /* RRR_BENCH_COMMON_H */
