/* SPDX-License-Identifier: MIT */
/*
 * bench/scale.c - rrr-bench scale: one server, many client connections.
 *
 * Normal operation. For each mode (rdma: NFSv3 over soft RPC-over-RDMA;
 * nfs-tcp: NFSv3 over ONC RPC over TCP, the reference) and each count N of
 * --conns, a fresh rrr-server is spawned (bench/io_nfs.c, with an fd limit
 * that N connections need), N rrr_clnt connections are opened from this one
 * process, connection k from 127.0.1.(1 + k % --addrs) (bench/srcaddr.c,
 * so no address exceeds the server's max_conns_per_addr), and then N calls
 * of --size bytes (READ by default) are kept in flight for --seconds, each
 * submission on the next connection in turn: a small load on each
 * connection, about one call at a time. Reported against N: aggregate IOPS,
 * median and p99 latency, CPU per I/O (this process plus the server), and
 * the RSS (VmRSS of /proc/PID/status) that opening the N connections added
 * to the server and to this process, per connection, before any load.
 * Client progress threads and server workers wait for events (--wait
 * event) unless told otherwise: with one progress thread per connection,
 * hundreds of threads share this machine's cores, and spinning ones
 * (adaptive) would take them from each other and from the server. The
 * last line compares the IOPS at the largest N with the peak over all N
 * (the target at 1,024 connections: at least 0.8 of the peak).
 *
 * Each N starts from a fresh server so that RSS per connection is what N
 * idle connections cost, not what earlier rounds left behind. The
 * measurement starts in steady state: after --warmup, calls run unmeasured
 * until about 48 went through each connection (at most 30 s), since a
 * fresh connection touches its receive ring and buffers for the first time
 * in its first few dozen calls. With
 * --json the results go to a file in the format of rrr-bench io (one
 * "results" member per row), which scripts/bench.sh plots.
 *
 * Recovery. A count that fails (connections refused, an fd limit too low
 * for N: this process holds about 5 descriptors per soft-RDMA connection
 * and a progress thread each) is reported as FAILED with the reason and the
 * other counts still run; the spawned server is stopped and its temporary
 * export removed whatever happens.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/wait.h>

#include "bench.h"
#include "bench_common.h"
#include "io_nfs.h"

#define MAX_COUNTS 16
#define WARM_CALLS 48	/* calls per connection before measuring */
#define WARM_MAX_S 30.0 /* ... or this long */

struct row {
	unsigned n;
	int err;
	char msg[200];
	double iops, med_us, p99_us, cpu_us;
	double srv_kib, cli_kib; /* RSS per connection; < 0: not measured */
};

static const struct {
	enum io_mode mode;
	const char *name;
} scale_modes[] = {
    {IO_MODE_RDMA, "rdma"},
    {IO_MODE_NFS_TCP, "nfs-tcp"},
};
#define NSMODES (sizeof(scale_modes) / sizeof(scale_modes[0]))

static void one(const struct io_nfs_cfg *base, enum io_mode mode, bool write, uint64_t size,
		double seconds, double warmup, struct row *r)
{
	struct io_nfs_cfg cfg = *base;
	struct io_result res;
	struct io_nfs *nfs = NULL;
	long s0, c0, s1, c1;
	int pid, rc;

	memset(&res, 0, sizeof(res));
	r->srv_kib = r->cli_kib = -1;
	cfg.file_size = (uint64_t)r->n * size;
	cfg.max_nconnect = r->n;
	cfg.server_nofile = 4u * r->n + 4096u;
	rc = rrr__bench_io_nfs_setup(&cfg, &nfs);
	if (rc)
		goto out;
	pid = rrr__bench_io_nfs_server_pid(nfs);
	s0 = pid ? rrr__bench_rss_kib(pid) : -1;
	c0 = rrr__bench_rss_kib(0);
	rc = rrr__bench_io_nfs_connect(nfs, mode, r->n);
	if (rc)
		goto out;
	s1 = pid ? rrr__bench_rss_kib(pid) : -1;
	c1 = rrr__bench_rss_kib(0);
	if (s0 >= 0 && s1 >= 0)
		r->srv_kib = (double)(s1 - s0) / r->n;
	if (c0 >= 0 && c1 >= 0)
		r->cli_kib = (double)(c1 - c0) / r->n;
	/* steady state first: every connection's receive ring, request
	 * contexts and buffers are touched in its first few dozen calls (a
	 * fresh connection page-faults until then); warm up until about
	 * WARM_CALLS calls per connection went through, at most WARM_MAX_S */
	{
		double t = 0;
		struct io_result warm;

		memset(&warm, 0, sizeof(warm));
		while (!rc && warm.ops < (uint64_t)WARM_CALLS * r->n && t < WARM_MAX_S) {
			rc = rrr__bench_io_nfs_run(nfs, mode, write, size, r->n, r->n, 0.5,
						   t == 0 ? warmup : 0, &warm);
			t += 0.5 + (t == 0 ? warmup : 0);
		}
		rrr__bench_samples_free(&warm.lat_ns);
		if (rc)
			goto out;
	}
	rc = rrr__bench_io_nfs_run(nfs, mode, write, size, r->n, r->n, seconds, 0, &res);
	if (rc)
		goto out;
	r->iops = res.wall_s > 0 ? (double)res.ops / res.wall_s : 0;
	r->med_us = rrr__bench_samples_median(&res.lat_ns) / 1e3;
	r->p99_us = rrr__bench_samples_p99(&res.lat_ns) / 1e3;
	r->cpu_us = res.ops ? res.cpu_ns / (double)res.ops / 1e3 : 0;
out:
	r->err = rc;
	if (rc) {
		const char *e = rrr__bench_io_nfs_error();

		snprintf(r->msg, sizeof(r->msg), "%s", e ? e : strerror(-rc));
	}
	rrr__bench_samples_free(&res.lat_ns);
	rrr__bench_io_nfs_teardown(nfs);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-bench scale [options]\n"
		"One rrr-server, N client connections from this process, a small load on each:\n"
		"aggregate IOPS, latency, CPU per I/O and RSS per connection against N.\n\n"
		"  --conns LIST        connection counts (default 1,4,16,64,256,1024; max %u)\n"
		"  --modes LIST        of rdma,nfs-tcp (default both)\n"
		"  --op OP             read (default) or write\n"
		"  --size S            bytes per call (default 4k; max 1m)\n"
		"  --addrs K           source addresses 127.0.1.1 .. 127.0.1.K (default 64;\n"
		"                      1..254; 0: the kernel's choice)\n"
		"  --seconds S         measured time per count (default 1)\n"
		"  --warmup S          unmeasured time before it, then unmeasured calls until\n"
		"                      ~48 went through each connection (default 0.2)\n"
		"  --provider NAME     soft (default) or verbs\n"
		"  --provider-opts S   provider options (see rrr_device_open)\n"
		"  --server PATH       rrr-server to spawn (default: next to rrr-bench)\n"
		"  --wait MODE         how client progress threads and server workers wait:\n"
		"                      event (default here: many connections share the cores),\n"
		"                      adaptive or spin (rrr/wait.h)\n"
		"  --client-threads N  progress threads the client connections share (a client\n"
		"                      group, rrr_clnt_group_create; default 0: one per CPU), or\n"
		"                      per-conn: a thread of its own for each connection\n"
		"  --json FILE         write the results as JSON\n"
		"  --help\n",
		IO_MAX_CONNS);
}

static void json_rows(struct rrr__bench_json *j, const char *mode, bool write, uint64_t size,
		      const struct row *rows, int nrows)
{
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		rrr__bench_json_obj_begin(j, NULL);
		rrr__bench_json_str(j, "mode", mode);
		rrr__bench_json_str(j, "op", write ? "write" : "read");
		rrr__bench_json_int(j, "size", (long long)size);
		rrr__bench_json_int(j, "conns", r->n);
		if (r->err) {
			rrr__bench_json_str(j, "error", strerror(-r->err));
			rrr__bench_json_str(j, "error_detail", r->msg);
			rrr__bench_json_obj_end(j);
			continue;
		}
		rrr__bench_json_num(j, "iops", r->iops);
		rrr__bench_json_num(j, "lat_median_us", r->med_us);
		rrr__bench_json_num(j, "lat_p99_us", r->p99_us);
		rrr__bench_json_num(j, "cpu_us_per_op", r->cpu_us);
		rrr__bench_json_num(j, "server_rss_kib_per_conn", r->srv_kib);
		rrr__bench_json_num(j, "client_rss_kib_per_conn", r->cli_kib);
		rrr__bench_json_obj_end(j);
	}
}

int rrr__bench_scale_main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"conns", required_argument, NULL, 'c'},  {"modes", required_argument, NULL, 'm'},
	    {"op", required_argument, NULL, 'o'},     {"size", required_argument, NULL, 's'},
	    {"addrs", required_argument, NULL, 'a'},  {"seconds", required_argument, NULL, 't'},
	    {"warmup", required_argument, NULL, 'w'}, {"provider", required_argument, NULL, 'P'},
	    {"provider-opts", required_argument, NULL, 'O'},
	    {"server", required_argument, NULL, 'S'}, {"json", required_argument, NULL, 'j'},
	    {"wait", required_argument, NULL, 'W'},
	    {"client-threads", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	unsigned counts[MAX_COUNTS] = {1, 4, 16, 64, 256, 1024}, addrs = 64;
	int ncounts = 6, opt, status = 0;
	bool on[NSMODES] = {true, true}, write = false;
	uint64_t size = 4096;
	double seconds = 1.0, warmup = 0.2;
	/* event: hundreds of progress threads in one process on a few cores;
	 * spinning ones would take the cores from each other */
	struct io_nfs_cfg cfg = {.provider = "soft", .export_path = "/", .wait = "event"};
	static struct row rows[NSMODES][MAX_COUNTS];
	const char *json = NULL;
	struct rlimit rl;
	long cthreads = 0; /* the clients' shared progress threads; < 0: one each */
	enum rrr_wait_mode gwait = RRR_WAIT_EVENT;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			ncounts =
			    rrr__bench_opt_uints("scale", "conns", optarg, counts, MAX_COUNTS,
						 IO_MAX_CONNS, "counts are 1 .. %u", IO_MAX_CONNS);
			if (ncounts < 0)
				return 2;
			break;
		case 'm':
			on[0] = strstr(optarg, "rdma") != NULL;
			on[1] = strstr(optarg, "nfs-tcp") != NULL;
			if (!on[0] && !on[1]) {
				fprintf(stderr, "rrr-bench scale: --modes takes rdma,nfs-tcp\n");
				return 2;
			}
			break;
		case 'o':
			if (strcmp(optarg, "read") && strcmp(optarg, "write")) {
				fprintf(stderr, "rrr-bench scale: --op is read or write\n");
				return 2;
			}
			write = !strcmp(optarg, "write");
			break;
		case 's':
			if (rrr__bench_parse_size(optarg, &size) || !size || size > (1u << 20)) {
				fprintf(stderr, "rrr-bench scale: --size is 1 .. 1m\n");
				return 2;
			}
			break;
		case 'a':
			addrs = (unsigned)strtoul(optarg, NULL, 10);
			if (addrs > 254) {
				fprintf(stderr, "rrr-bench scale: --addrs is 0 .. 254\n");
				return 2;
			}
			break;
		case 't':
			seconds = strtod(optarg, NULL);
			if (!(seconds > 0)) {
				fprintf(stderr, "rrr-bench scale: --seconds must be > 0\n");
				return 2;
			}
			break;
		case 'w':
			warmup = strtod(optarg, NULL);
			if (warmup < 0) {
				fprintf(stderr, "rrr-bench scale: --warmup must be >= 0\n");
				return 2;
			}
			break;
		case 'P': cfg.provider = optarg; break;
		case 'O': cfg.provider_opts = optarg; break;
		case 'S': cfg.server_path = optarg; break;
		case 'W': {
			enum rrr_wait_mode wm;

			if (rrr_wait_mode_parse(optarg, &wm)) {
				fprintf(stderr, "rrr-bench scale: --wait is adaptive, event or spin\n");
				return 2;
			}
			cfg.wait = optarg;
			break;
		}
		case 'T':
			if (!strcmp(optarg, "per-conn")) {
				cthreads = -1;
				break;
			}
			cthreads = strtol(optarg, NULL, 10);
			if (cthreads < 0 || cthreads > 64) {
				fprintf(stderr, "rrr-bench scale: --client-threads is 0 .. 64 or "
						"per-conn\n");
				return 2;
			}
			break;
		case 'j': json = optarg; break;
		default: return rrr__bench_opt_usage(opt, usage);
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	cfg.argv0 = argv[0];
	cfg.src_addrs = addrs;
	(void)rrr_wait_mode_parse(cfg.wait, &gwait);
	if (cthreads >= 0 && rrr_clnt_group_create((unsigned)cthreads, gwait, &cfg.group)) {
		fprintf(stderr, "rrr-bench scale: %s\n", rrr_last_error());
		return 1;
	}
	/* many connections in one process: as many descriptors as allowed */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	rrr__bench_print_header(stdout, argc, argv);
	printf("# %s %s per call, about one call in flight per connection; connection k from "
	       "127.0.1.(1 + k %% %u); RSS: what opening the connections added, per connection\n",
	       write ? "WRITE" : "READ", rrr__bench_fmt_size(size, (char[16]){0}, 16), addrs);
	for (size_t m = 0; m < NSMODES; m++) {
		double peak = 0;

		if (!on[m])
			continue;
		printf("\n%-8s %6s %10s %9s %9s %10s %13s %13s\n", "mode", "conns", "IOPS", "med us",
		       "p99 us", "CPU us/IO", "srv KiB/conn", "cli KiB/conn");
		for (int i = 0; i < ncounts; i++) {
			struct row *r = &rows[m][i];

			r->n = counts[i];
			one(&cfg, scale_modes[m].mode, write, size, seconds, warmup, r);
			if (r->err) {
				printf("%-8s %6u FAILED: %s\n", scale_modes[m].name, r->n, r->msg);
				status = 1;
				continue;
			}
			if (r->iops > peak)
				peak = r->iops;
			printf("%-8s %6u %10.0f %9.1f %9.1f %10.1f %13.1f %13.1f\n",
			       scale_modes[m].name, r->n, r->iops, r->med_us, r->p99_us, r->cpu_us,
			       r->srv_kib, r->cli_kib);
			fflush(stdout);
		}
		for (int i = ncounts; i-- > 0;)
			if (!rows[m][i].err && peak > 0) {
				printf("%-8s IOPS at %u connections / peak: %.2f (target at 1024: >= "
				       "0.8)\n",
				       scale_modes[m].name, rows[m][i].n, rows[m][i].iops / peak);
				break;
			}
	}
	if (json) {
		struct rrr__bench_json j;
		int rc = rrr__bench_json_open(&j, json);

		if (rc) {
			fprintf(stderr, "rrr-bench scale: cannot write %s: %s\n", json,
				strerror(-rc));
			return 1;
		}
		rrr__bench_json_obj_begin(&j, NULL);
		rrr__bench_json_str(&j, "benchmark", "scale");
		rrr__bench_json_machine(&j, argc, argv);
		rrr__bench_json_str(&j, "provider", cfg.provider);
		rrr__bench_json_num(&j, "seconds", seconds);
		rrr__bench_json_int(&j, "addrs", addrs);
		rrr__bench_json_arr_begin(&j, "results");
		for (size_t m = 0; m < NSMODES; m++)
			if (on[m])
				json_rows(&j, scale_modes[m].name, write, size, rows[m], ncounts);
		rrr__bench_json_arr_end(&j);
		rrr__bench_json_obj_end(&j);
		if ((rc = rrr__bench_json_close(&j))) {
			fprintf(stderr, "rrr-bench scale: writing %s: %s\n", json, strerror(-rc));
			return 1;
		}
	}
	rrr_clnt_group_destroy(cfg.group);
	return status;
}
