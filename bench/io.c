/* SPDX-License-Identifier: MIT */
/*
 * bench/io.c - rrr-bench io: end-to-end NFSv3 READ and WRITE, side by side.
 *
 * Normal operation. For every cell (operation x size x queue depth x
 * connections) the run
 * measures each selected mode for --seconds, and repeats the whole set of
 * modes --rounds times in round-robin order, summing operations, time and
 * CPU and pooling latency samples per mode; interleaving the modes this way
 * spreads slow drifts of a shared machine (other processes, frequency
 * changes) evenly over all of them instead of charging them to whichever
 * mode happened to run during the disturbance. The modes:
 *
 *   rdma        NFSv3 over RPC-over-RDMA on the chosen provider, the payload
 *               registered per I/O and invalidated before the call completes
 *               (the library's default; the safe way); with the default
 *               8 KiB inline sizes a 4 KiB READ or WRITE travels inline in
 *               the Send instead (copied, nothing registered or exposed)
 *   rdma-chunks the same with 4 KiB inline sizes (the Linux client's and
 *               server's), so 4 KiB payloads go through registered chunks
 *               (RDMA Write / RDMA Read) as well: registration at every size
 *   persistent  the same with one long-lived registration of all memory
 *               (client opts persistent_reg: UNSAFE, the speed baseline)
 *   bounce      the same, copying through pre-registered buffers (client
 *               opts bounce: the approach of NFS-Ganesha's ntirpc)
 *   nfs-tcp     NFSv3 over the library's ONC RPC over TCP transport
 *   tcp         plain loopback TCP request/response moving the same bytes
 *               (bench/bench_common.c): the physical baseline of this machine
 *
 * The NFS modes talk to a real rrr-server process (spawned on a temporary
 * export with an ephemeral port, or an existing one given with --host and
 * --port), through the NFSv3 codecs and rrr_clnt, keeping --qd calls in
 * flight from the completion callback, spread round-robin over --nconnect
 * connections (the NFS client's nconnect; the qd is the total, not per
 * connection). The tcp baseline has one connection: it runs once per
 * operation x size x queue depth, in the first --nconnect cell, and is the
 * xTCP reference of all of them. A file of qd x size bytes is written
 * once and then READ / overwritten (UNSTABLE, no COMMIT) in a cycle, so the
 * server works from its page cache and the figure is the transport's.
 *
 * Reported per mode: IOPS, MB/s (10^6 bytes), latency median and p99 (call
 * submitted to completion callback), CPU per I/O: this process (client,
 * its progress thread and, for tcp, the echo thread) plus the server process
 * read from /proc (10 ms resolution, so runs should last seconds), and page
 * faults (minor + major) per I/O of the client process and of the spawned
 * server over the measured windows (NFS modes; bench/io_nfs.c). Faults
 * per I/O are what the steady state costs in first touches of fresh memory
 * (allocations that return pages to the kernel and fault them back): 0.00
 * means no per-I/O page faulting.
 *
 * Recovery. A failed call ends the cell with its error (the table says
 * FAILED and the error); the remaining cells still run. The spawned server
 * is stopped with SIGTERM (then SIGKILL after 5 s) and the temporary export
 * removed whatever happens.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/wait.h>

#include "bench.h"
#include "bench_common.h"
#include "io_nfs.h"

#define MAX_SIZES 16
#define MAX_QDS	  8
#define MAX_NCS	  8

static const struct {
	enum io_mode mode;
	const char *name;
	const char *desc;
} modes[] = {
    {IO_MODE_RDMA, "rdma", "NFSv3/RDMA, per-I/O registration (default, safe)"},
    {IO_MODE_RDMA_CHUNKS, "rdma-chunks",
     "the same with 4 KiB inline sizes (Linux's): a 4 KiB I/O is registered too"},
    {IO_MODE_PERSISTENT, "persistent", "NFSv3/RDMA, one persistent registration (unsafe)"},
    {IO_MODE_BOUNCE, "bounce", "NFSv3/RDMA, copies through pre-registered buffers"},
    {IO_MODE_NFS_TCP, "nfs-tcp", "NFSv3 over the library's ONC RPC/TCP transport"},
    {IO_MODE_TCP, "tcp", "plain loopback TCP request/response, same bytes"},
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

struct cell {
	bool write;
	uint64_t size;
	unsigned qd;
	unsigned nconnect;
	bool base;    /* first nconnect of its op x size x qd: runs tcp */
	size_t group; /* index of that first cell */
	struct io_result res[NMODES];
	int err[NMODES];
	char msg[NMODES][160]; /* detail of err, if any */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rrr-bench io [options]\n"
		   "End-to-end NFSv3 READ/WRITE through the rrr client and server libraries,\n"
		   "side by side with plain loopback TCP moving the same bytes.\n\n"
		   "  --modes LIST        of rdma,rdma-chunks,persistent,bounce,nfs-tcp,tcp (default: all)\n"
		   "  --ops LIST          read,write (default: both)\n"
		   "  --sizes LIST        I/O sizes, e.g. 4k,1m (default 4k,1m; max 1m)\n"
		   "  --qd LIST           queue depths (default 1,32)\n"
		   "  --nconnect LIST     connections per NFS mode, e.g. 1,2,4 (default 1;\n"
		   "                      1..16); calls go round-robin over them, qd is the\n"
		   "                      total; tcp runs once, in the first nconnect's cells\n"
		   "  --seconds S         measured time per mode per round (default 1)\n"
		   "  --rounds N          round-robin repetitions of all modes (default 3)\n"
		   "  --warmup S          unmeasured time before each measurement (default 0.2)\n"
		   "  --provider NAME     soft (default) or verbs\n"
		   "  --provider-opts S   provider options (see rrr_device_open)\n"
		   "  --server PATH       rrr-server to spawn (default: next to rrr-bench)\n"
		   "  --host H            use a running server instead of spawning one:\n"
		   "  --port P            its NFS/RDMA port (default 20049)\n"
		   "  --tcp-port P        its NFS/TCP port (default: the mount port)\n"
		   "  --mount-port P      its MOUNT/TCP port (default 20048)\n"
		   "  --export PATH       the export to mount (default /)\n"
		   "  --no-remote-inv     do not offer Send With Invalidate to the server\n"
		   "  --wait MODE         how client progress and server workers wait:\n"
		   "                      adaptive (default), event or spin (rrr/wait.h)\n"
		   "  --spin-us N         their spin budget per wait (default 50)\n"
		   "  --json FILE         write the results as JSON\n"
		   "  --help\n"
		   "Modes:\n");
	for (size_t i = 0; i < NMODES; i++)
		fprintf(f, "  %-11s %s\n", modes[i].name, modes[i].desc);
}

static int parse_modes(const char *s, bool *on)
{
	char buf[256], *tok[16];
	int n, i;

	if (strlen(s) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, s);
	n = rrr__bench_split(buf, tok, 16);
	if (n <= 0)
		return -EINVAL;
	memset(on, 0, NMODES * sizeof(*on));
	for (i = 0; i < n; i++) {
		size_t m;

		for (m = 0; m < NMODES; m++)
			if (!strcmp(tok[i], modes[m].name))
				break;
		if (m == NMODES) {
			fprintf(stderr, "rrr-bench io: unknown mode '%s'\n", tok[i]);
			return -EINVAL;
		}
		on[m] = true;
	}
	return 0;
}

static int run_tcp(const struct cell *c, double seconds, double warmup, struct io_result *out)
{
	struct rrr__bench_tcp_opts o = {
	    .size = c->size,
	    /* about the size of an NFS READ call / WRITE reply header */
	    .small = 128,
	    .qd = c->qd,
	    .write = c->write,
	    .seconds = seconds,
	};
	struct rrr__bench_tcp_result r;
	int rc;

	/* warm-up: an unmeasured run of its own */
	if (warmup > 0) {
		struct rrr__bench_tcp_opts w = o;

		w.seconds = warmup;
		if ((rc = rrr__bench_tcp_echo(&w, &r)))
			return rc;
		rrr__bench_samples_free(&r.lat_ns);
	}
	if ((rc = rrr__bench_tcp_echo(&o, &r)))
		return rc;
	out->server_cpu_counted = true; /* the echo thread is in this process */
	out->ops += r.ops;
	out->wall_s += r.wall_s;
	out->cpu_ns += r.cpu_ns_per_op * (double)r.ops;
	rc = rrr__bench_samples_merge(&out->lat_ns, &r.lat_ns);
	rrr__bench_samples_free(&r.lat_ns);
	return rc;
}

static void print_row(const struct cell *c, size_t m, const struct io_result *r, int err,
		      const struct io_result *base_tcp, const struct io_result *base_pers)
{
	char sz[32];
	double iops, mbs, med, p99, cpu;

	printf("%-5s %5s %3u %2u  %-10s ", c->write ? "write" : "read",
	       rrr__bench_fmt_size(c->size, sz, sizeof(sz)), c->qd,
	       modes[m].mode == IO_MODE_TCP ? 1 : c->nconnect, modes[m].name);
	if (err) {
		printf(" FAILED: %s%s%s\n", strerror(-err), c->msg[m][0] ? ": " : "", c->msg[m]);
		return;
	}
	iops = r->wall_s > 0 ? (double)r->ops / r->wall_s : 0;
	mbs = iops * (double)c->size / 1e6;
	med = rrr__bench_samples_median((struct rrr__bench_samples *)&r->lat_ns) / 1e3;
	p99 = rrr__bench_samples_p99((struct rrr__bench_samples *)&r->lat_ns) / 1e3;
	cpu = r->ops ? r->cpu_ns / (double)r->ops / 1e3 : 0;
	printf("%10.0f %9.1f %9.1f %9.1f %9.2f", iops, mbs, med, p99, cpu);
	if (modes[m].mode == IO_MODE_TCP || modes[m].mode == IO_MODE_NFS_TCP || !r->ops)
		printf(" %5s", "-");
	else
		printf(" %5.2f", (double)r->registrations / (double)r->ops);
	if (base_tcp && base_tcp->ops && base_tcp->wall_s > 0 && modes[m].mode != IO_MODE_TCP)
		printf("  %5.2f", iops / ((double)base_tcp->ops / base_tcp->wall_s));
	else
		printf("  %5s", "-");
	if (base_pers && base_pers->ops && base_pers->wall_s > 0 &&
	    modes[m].mode != IO_MODE_PERSISTENT && modes[m].mode != IO_MODE_TCP &&
	    modes[m].mode != IO_MODE_NFS_TCP)
		printf("  %5.2f", iops / ((double)base_pers->ops / base_pers->wall_s));
	else
		printf("  %5s", "-");
	if (r->faults_counted && r->ops)
		printf(" %6.2f", (double)(r->client_minflt + r->client_majflt) / (double)r->ops);
	else
		printf(" %6s", "-");
	if (r->server_faults_counted && r->ops)
		printf(" %6.2f", (double)(r->server_minflt + r->server_majflt) / (double)r->ops);
	else
		printf(" %6s", "-");
	printf("\n");
}

/* Whether mode @m runs (and is reported) in cell @c. */
static bool runs_in(const struct cell *c, size_t m, const bool *on)
{
	return on[m] && (modes[m].mode != IO_MODE_TCP || c->base);
}

/* The members "@who_minflt", "@who_majflt" and "@who_faults_per_op" of a
 * result of @ops operations. */
static void json_faults(struct rrr__bench_json *j, const char *who, uint64_t minflt,
			uint64_t majflt, uint64_t ops)
{
	char key[32];

	snprintf(key, sizeof(key), "%s_minflt", who);
	rrr__bench_json_int(j, key, (long long)minflt);
	snprintf(key, sizeof(key), "%s_majflt", who);
	rrr__bench_json_int(j, key, (long long)majflt);
	snprintf(key, sizeof(key), "%s_faults_per_op", who);
	rrr__bench_json_num(j, key, ops ? (double)(minflt + majflt) / (double)ops : 0);
}

static void json_cell(struct rrr__bench_json *j, const struct cell *c, bool *on)
{
	for (size_t m = 0; m < NMODES; m++) {
		const struct io_result *r = &c->res[m];
		struct rrr__bench_samples *lat = (struct rrr__bench_samples *)&r->lat_ns;
		double iops;

		if (!runs_in(c, m, on))
			continue;
		rrr__bench_json_obj_begin(j, NULL);
		rrr__bench_json_str(j, "op", c->write ? "write" : "read");
		rrr__bench_json_int(j, "size", (long long)c->size);
		rrr__bench_json_int(j, "qd", c->qd);
		rrr__bench_json_int(j, "nconnect", modes[m].mode == IO_MODE_TCP ? 1 : c->nconnect);
		rrr__bench_json_str(j, "mode", modes[m].name);
		if (c->err[m]) {
			rrr__bench_json_str(j, "error", strerror(-c->err[m]));
			if (c->msg[m][0])
				rrr__bench_json_str(j, "error_detail", c->msg[m]);
			rrr__bench_json_obj_end(j);
			continue;
		}
		iops = r->wall_s > 0 ? (double)r->ops / r->wall_s : 0;
		rrr__bench_json_int(j, "ops", (long long)r->ops);
		rrr__bench_json_num(j, "seconds", r->wall_s);
		rrr__bench_json_num(j, "iops", iops);
		rrr__bench_json_num(j, "mb_per_s", iops * (double)c->size / 1e6);
		rrr__bench_json_num(j, "lat_median_us", rrr__bench_samples_median(lat) / 1e3);
		rrr__bench_json_num(j, "lat_p99_us", rrr__bench_samples_p99(lat) / 1e3);
		rrr__bench_json_num(j, "cpu_us_per_op",
				    r->ops ? r->cpu_ns / (double)r->ops / 1e3 : 0);
		rrr__bench_json_bool(j, "server_cpu_counted", r->server_cpu_counted);
		if (modes[m].mode != IO_MODE_TCP) {
			rrr__bench_json_int(j, "client_registrations", (long long)r->registrations);
			rrr__bench_json_int(j, "client_local_inv", (long long)r->local_inv);
			rrr__bench_json_int(j, "client_remote_inv", (long long)r->remote_inv);
		}
		if (r->faults_counted)
			json_faults(j, "client", r->client_minflt, r->client_majflt, r->ops);
		if (r->server_faults_counted)
			json_faults(j, "server", r->server_minflt, r->server_majflt, r->ops);
		rrr__bench_json_obj_end(j);
	}
}

int rrr__bench_io_main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"modes", required_argument, NULL, 'm'},
	    {"ops", required_argument, NULL, 'o'},
	    {"sizes", required_argument, NULL, 's'},
	    {"qd", required_argument, NULL, 'q'},
	    {"nconnect", required_argument, NULL, 'n'},
	    {"seconds", required_argument, NULL, 't'},
	    {"rounds", required_argument, NULL, 'r'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"provider", required_argument, NULL, 'P'},
	    {"provider-opts", required_argument, NULL, 'O'},
	    {"server", required_argument, NULL, 'S'},
	    {"host", required_argument, NULL, 'H'},
	    {"port", required_argument, NULL, 'p'},
	    {"tcp-port", required_argument, NULL, 'T'},
	    {"mount-port", required_argument, NULL, 'M'},
	    {"no-remote-inv", no_argument, NULL, 'N'},
	    {"wait", required_argument, NULL, 'W'},
	    {"spin-us", required_argument, NULL, 'U'},
	    {"export", required_argument, NULL, 'E'},
	    {"json", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool on[NMODES], do_read = true, do_write = true, need_nfs = false;
	uint64_t sizes[MAX_SIZES] = {4096, 1u << 20};
	unsigned qds[MAX_QDS] = {1, 32}, ncs[MAX_NCS] = {1}, maxnc = 1;
	int nsizes = 2, nqds = 2, nncs = 1, rounds = 3, opt, rc, status = 0;
	double seconds = 1.0, warmup = 0.2;
	struct io_nfs_cfg cfg = {.provider = "soft", .export_path = "/"};
	struct io_nfs *nfs = NULL;
	struct cell *cells = NULL;
	size_t ncells = 0, ci;
	struct rrr__bench_opts ob = {.cmd = "io", .lopts = lopts, .usage = usage};
	const char *json;

	for (size_t m = 0; m < NMODES; m++)
		on[m] = true;
	while ((opt = rrr__bench_opt_next(&ob, argc, argv)) > 0) {
		switch (opt) {
		case 'm':
			if (parse_modes(optarg, on))
				return 2;
			break;
		case 'o':
			do_read = strstr(optarg, "read") != NULL;
			do_write = strstr(optarg, "write") != NULL;
			if (!do_read && !do_write) {
				fprintf(stderr, "rrr-bench io: --ops takes read,write\n");
				return 2;
			}
			break;
		case 's':
			nsizes = rrr__bench_opt_sizes("io", "sizes", optarg, sizes, MAX_SIZES,
						      1u << 20, "sizes are 1 .. 1m");
			if (nsizes < 0)
				return 2;
			break;
		case 'q':
			nqds = rrr__bench_opt_uints("io", "qd", optarg, qds, MAX_QDS, 128,
						    "queue depths are 1 .. 128");
			if (nqds < 0)
				return 2;
			break;
		case 'n':
			nncs = rrr__bench_opt_uints(
			    "io", "nconnect", optarg, ncs, MAX_NCS, IO_MAX_NCONNECT,
			    "--nconnect takes 1 .. %d connections", IO_MAX_NCONNECT);
			if (nncs < 0)
				return 2;
			break;
		case 't':
			seconds = atof(optarg);
			if (!(seconds > 0 && seconds <= 3600)) {
				fprintf(stderr, "rrr-bench io: bad --seconds '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			rounds = atoi(optarg);
			if (rounds < 1 || rounds > 1000) {
				fprintf(stderr, "rrr-bench io: bad --rounds '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			warmup = atof(optarg);
			if (!(warmup >= 0 && warmup <= 60)) {
				fprintf(stderr, "rrr-bench io: bad --warmup '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P':
			cfg.provider = optarg;
			break;
		case 'O':
			cfg.provider_opts = optarg;
			break;
		case 'S':
			cfg.server_path = optarg;
			break;
		case 'H':
			cfg.host = optarg;
			break;
		case 'p':
			cfg.port = optarg;
			break;
		case 'T':
			cfg.tcp_port = optarg;
			break;
		case 'M':
			cfg.mount_port = optarg;
			break;
		case 'N':
			cfg.no_remote_inv = true;
			break;
		case 'W': {
			enum rrr_wait_mode wm;

			if (rrr_wait_mode_parse(optarg, &wm)) {
				fprintf(stderr, "rrr-bench io: --wait is event, adaptive or spin\n");
				return 2;
			}
			cfg.wait = optarg;
			break;
		}
		case 'U': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || v > RRR_WAIT_SPIN_US_MAX) {
				fprintf(stderr, "rrr-bench io: --spin-us is 0..%u\n", RRR_WAIT_SPIN_US_MAX);
				return 2;
			}
			cfg.spin_us = optarg;
			break;
		}
		case 'E':
			cfg.export_path = optarg;
			break;
		}
	}
	if (opt < 0)
		return ob.exit;
	json = ob.json;
	for (size_t m = 0; m < NMODES; m++)
		if (on[m] && modes[m].mode != IO_MODE_TCP)
			need_nfs = true;

	for (int i = 0; i < nncs; i++)
		maxnc = ncs[i] > maxnc ? ncs[i] : maxnc;
	cells = calloc((size_t)(nsizes * nqds * nncs * 2), sizeof(*cells));
	if (!cells)
		return 1;
	for (int w = 0; w < 2; w++) {
		if ((w && !do_write) || (!w && !do_read))
			continue;
		for (int s = 0; s < nsizes; s++)
			for (int q = 0; q < nqds; q++) {
				size_t first = ncells;

				for (int k = 0; k < nncs; k++) {
					struct cell *c = &cells[ncells++];

					c->write = w;
					c->size = sizes[s];
					c->qd = qds[q];
					c->nconnect = ncs[k];
					c->base = k == 0;
					c->group = first;
					for (size_t m = 0; m < NMODES; m++)
						rrr__bench_samples_init(&c->res[m].lat_ns, 0);
				}
			}
	}

	rrr__bench_print_header(stdout, argc, argv);
	if (need_nfs) {
		uint64_t maxsz = 0;
		unsigned maxqd = 0;

		for (int i = 0; i < nsizes; i++)
			maxsz = sizes[i] > maxsz ? sizes[i] : maxsz;
		for (int i = 0; i < nqds; i++)
			maxqd = qds[i] > maxqd ? qds[i] : maxqd;
		cfg.file_size = maxsz * maxqd;
		cfg.max_nconnect = maxnc;
		cfg.argv0 = argv[0];
		rc = rrr__bench_io_nfs_setup(&cfg, &nfs);
		if (rc) {
			fprintf(stderr, "rrr-bench io: NFS setup failed: %s%s%s\n", strerror(-rc),
				rrr__bench_io_nfs_error() ? ": " : "",
				rrr__bench_io_nfs_error() ? rrr__bench_io_nfs_error() : "");
			fprintf(stderr, "rrr-bench io: NFS modes skipped; run --modes tcp for "
					"the baseline alone\n");
			for (size_t m = 0; m < NMODES; m++)
				if (modes[m].mode != IO_MODE_TCP)
					for (ci = 0; ci < ncells; ci++)
						cells[ci].err[m] = rc;
			status = 1;
		}
	}
	printf("# %d round(s) x %.2f s per mode per cell, warm-up %.2f s; latency in us;\n"
	       "# nc = connections (nconnect; qd is the total over them); cpu = us of CPU\n"
	       "# per I/O, client + server; regs = client registrations per I/O (0 when the\n"
	       "# mode registers nothing per I/O); xTCP = IOPS / tcp IOPS (one connection);\n"
	       "# xPers = IOPS / persistent IOPS; flt.c, flt.s = page faults (minor+major)\n"
	       "# per I/O of the client process and of the server process\n",
	       rounds, seconds, warmup);
	printf("%-5s %5s %3s %2s  %-10s %10s %9s %9s %9s %9s %5s  %5s  %5s %6s %6s\n", "op", "size",
	       "qd", "nc", "mode", "IOPS", "MB/s", "lat.med", "lat.p99", "cpu", "regs", "xTCP",
	       "xPers", "flt.c", "flt.s");

	for (ci = 0; ci < ncells; ci++) {
		struct cell *c = &cells[ci];
		size_t tcp_i = NMODES, pers_i = NMODES;

		for (int r = 0; r < rounds; r++)
			for (size_t m = 0; m < NMODES; m++) {
				if (!runs_in(c, m, on) || c->err[m])
					continue;
				if (modes[m].mode == IO_MODE_TCP)
					rc = run_tcp(c, seconds, r ? 0 : warmup, &c->res[m]);
				else
					rc = rrr__bench_io_nfs_run(
					    nfs, modes[m].mode, c->write, c->size, c->qd,
					    c->nconnect, seconds, r ? 0 : warmup, &c->res[m]);
				if (rc) {
					c->err[m] = rc;
					if (modes[m].mode != IO_MODE_TCP &&
					    rrr__bench_io_nfs_error())
						snprintf(c->msg[m], sizeof(c->msg[m]), "%s",
							 rrr__bench_io_nfs_error());
					status = 1;
				}
			}
		for (size_t m = 0; m < NMODES; m++) {
			if (modes[m].mode == IO_MODE_TCP && on[m] && !cells[c->group].err[m])
				tcp_i = m;
			if (modes[m].mode == IO_MODE_PERSISTENT && on[m] && !c->err[m])
				pers_i = m;
		}
		for (size_t m = 0; m < NMODES; m++)
			if (runs_in(c, m, on))
				print_row(c, m, &c->res[m], c->err[m],
					  tcp_i < NMODES ? &cells[c->group].res[tcp_i] : NULL,
					  pers_i < NMODES ? &c->res[pers_i] : NULL);
		fflush(stdout);
	}
	if (nfs)
		rrr__bench_io_nfs_teardown(nfs);

	if (json) {
		struct rrr__bench_json j;

		if (rrr__bench_json_begin(&j, json, "io", argc, argv)) {
			status = 1;
		} else {
			rrr__bench_json_str(&j, "provider", cfg.provider);
			rrr__bench_json_str(&j, "provider_opts",
					    cfg.provider_opts ? cfg.provider_opts : "");
			rrr__bench_json_int(&j, "rounds", rounds);
			rrr__bench_json_num(&j, "seconds_per_round", seconds);
			rrr__bench_json_arr_begin(&j, "results");
			for (ci = 0; ci < ncells; ci++)
				json_cell(&j, &cells[ci], on);
			rrr__bench_json_arr_end(&j);
			if (rrr__bench_json_end(&j, json, "io"))
				status = 1;
		}
	}
	for (ci = 0; ci < ncells; ci++)
		for (size_t m = 0; m < NMODES; m++)
			rrr__bench_samples_free(&cells[ci].res[m].lat_ns);
	free(cells);
	return status;
}
