/* SPDX-License-Identifier: MIT */
/*
 * bench/io_nfs.h - the NFS side of rrr-bench io: a server to talk to, and
 * one measured run of NFSv3 READ or WRITE through rrr_clnt in a given mode.
 */
#ifndef RRR_BENCH_IO_NFS_H
#define RRR_BENCH_IO_NFS_H

#include <stdbool.h>
#include <stdint.h>

#include "bench_common.h"

enum io_mode {
	IO_MODE_RDMA = 0,   /* per-I/O registration (library default) */
	IO_MODE_RDMA_CHUNKS, /* the same with 4 KiB inline sizes: chunks from 4 KiB */
	IO_MODE_PERSISTENT, /* client opts persistent_reg */
	IO_MODE_BOUNCE,	    /* client opts bounce */
	IO_MODE_NFS_TCP,    /* ONC RPC over TCP */
	IO_MODE_TCP,	    /* plain TCP echo (bench/bench_common.c), not NFS */
};

/* Accumulated over rounds. */
struct io_result {
	uint64_t ops;
	double wall_s;
	double cpu_ns;			  /* client process + server process */
	bool server_cpu_counted;	  /* false: server CPU not visible */
	struct rrr__bench_samples lat_ns; /* per-call latency */
	/* client transport counters over the measured windows (NFS modes),
	 * summed over the run's connections */
	uint64_t registrations, local_inv, remote_inv;
	/* page faults (minor, major) over the measured windows: this process
	 * (getrusage RUSAGE_SELF: client and its progress threads) and the
	 * spawned server (/proc/PID/stat); NFS modes only */
	bool faults_counted, server_faults_counted;
	uint64_t client_minflt, client_majflt, server_minflt, server_majflt;
};

struct io_nfs_cfg {
	const char *provider;
	const char *provider_opts;
	const char *server_path; /* NULL: rrr-server next to argv0 / $RRR_BUILD */
	const char *argv0;
	const char *host;	/* NULL: spawn a server */
	const char *port;	/* RDMA port of an existing server */
	const char *tcp_port;	/* NFS/TCP port of an existing server */
	const char *mount_port; /* MOUNT/TCP port of an existing server */
	const char *export_path;
	bool no_remote_inv;    /* do not offer Send With Invalidate */
	const char *wait;      /* --wait for client and server (NULL: default) */
	const char *spin_us;   /* --spin-us for client and server (NULL: default) */
	uint64_t file_size;    /* bytes the benchmark file needs */
	unsigned max_nconnect; /* connections per mode opened at first use
				* (io: 1..IO_MAX_NCONNECT; scale: 1..IO_MAX_CONNS) */
	unsigned src_addrs;    /* 0: the kernel's source address; else connection k
				* comes from 127.0.1.(1 + k % src_addrs) (bench/srcaddr.c) */
	unsigned server_nofile; /* 0: inherited; else the spawned server's fd limit */
	struct rrr_clnt_group *group; /* the clients share its progress threads; NULL: a
				       * thread each */
};

#define IO_MAX_NCONNECT 16
#define IO_MAX_CONNS	4096

struct io_nfs;

/* Spawn (or reach) the server, mount, create the benchmark file. MAY BLOCK.
 * On failure a reason is in rrr__bench_io_nfs_error(). */
int rrr__bench_io_nfs_setup(const struct io_nfs_cfg *cfg, struct io_nfs **out);
void rrr__bench_io_nfs_teardown(struct io_nfs *nfs);
const char *rrr__bench_io_nfs_error(void);
/* Run @mode for @seconds (after @warmup unmeasured seconds) with @qd calls
 * of @size bytes in flight, spread round-robin over @nconnect connections
 * (1 .. cfg.max_nconnect); adds to @out. MAY BLOCK. */
/* Open @mode's connections now (else the first run does), e.g. to measure
 * what they cost before any load. 0 or -errno. MAY BLOCK. */
int rrr__bench_io_nfs_connect(struct io_nfs *nfs, enum io_mode mode, unsigned qd);
/* The spawned server's pid, or 0 when it is not ours. */
int rrr__bench_io_nfs_server_pid(const struct io_nfs *nfs);
/* Where the next connections come from (bench/srcaddr.c): 127.0.1.(1 + k),
 * k < 254. */
void rrr__bench_src_addr(unsigned k);

int rrr__bench_io_nfs_run(struct io_nfs *nfs, enum io_mode mode, bool write, uint64_t size,
			  unsigned qd, unsigned nconnect, double seconds, double warmup,
			  struct io_result *out);

#endif
