/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/nconnect.c - the NFSv3 client library with several connections
 * to one server (opts.nconnect), against a real rrr-server process over TCP
 * and over RPC-over-RDMA on the soft provider:
 *   - pipelined write_all/read_all of a few MiB with nconnect 2 and 4: the
 *     server's file and the bytes read back equal the source, and every
 *     connection carried calls (per-connection counters; the summed
 *     counters are their sum);
 *   - synchronous calls go round-robin: 4k GETATTRs put k calls on each
 *     of 4 connections;
 *   - the server gives consecutive connections to different worker
 *     threads: with --threads 2, one connection's 4 KiB WRITEs (quick: not
 *     handed to the idle worker once timed) are served by one server
 *     thread, two connections' by two, each doing a fair share (time on
 *     CPU per thread from /proc/PID/task/TID/schedstat, in ns);
 *   - nconnect 0 and 17 are refused with -EINVAL and a sentence.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/nfs_helpers.h"

static void need_server(void)
{
	th_need_server();
}

/* Start a server; skips when the soft provider cannot listen. */
static void start(struct th_server *s, bool rdma)
{
	need_server();
	cr_assert_eq(th_mkdirs(s), 0);
	int rc = th_server_start(s, rdma);
	if (rdma && rc < 0) {
		th_cleanup(s);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	cr_assert_eq(rc, 0, "server start");
}

static struct rrr_nfs3 *mount_n(struct th_server *s, bool rdma, unsigned nconnect, uint32_t xsize)
{
	struct th_mount mt;
	th_mount_opts(s, rdma, &mt);
	cr_assert_eq(mt.o.nconnect, 1, "default nconnect is 1");
	mt.o.timeout_ms = 20000;
	mt.o.rsize = mt.o.wsize = xsize;
	mt.o.nconnect = nconnect;
	struct rrr_nfs3 *n = th_nfs_mount(&mt);
	cr_assert_eq(rrr_nfs3_nconnect(n), nconnect);
	return n;
}

static uint8_t *random_buf(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);
	cr_assert_not_null(b);
	uint32_t x = seed;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)x;
	}
	return b;
}

static uint8_t *read_local(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	uint8_t *b = malloc((size_t)n + 1);
	cr_assert_not_null(b);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* write_all + read_all of 5 MiB + 4097 bytes in 256 KiB calls, @qd in flight. */
static void transfer(bool rdma, unsigned nconnect, unsigned qd)
{
	struct th_server s;
	start(&s, rdma);
	struct rrr_nfs3 *n = mount_n(&s, rdma, nconnect, 256u << 10);
	cr_assert_eq(rrr_nfs3_wsize(n), 256u << 10);
	const size_t len = (5u << 20) + 4097;
	uint8_t *src = random_buf(len, 0x9e3779b9u + nconnect + (rdma ? 100 : 0));
	uint8_t *back = calloc(1, len);
	cr_assert_not_null(back);

	struct rrr_nfs3_fh fh;
	cr_assert_eq(rrr_nfs3_create(n, rrr_nfs3_root(n), "nc.bin", 0644, false, &fh), 0, "%s",
		     rrr_last_error() ? rrr_last_error() : "");
	struct rrr_xprt_stats before[RRR_NFS3_MAX_NCONNECT], after[RRR_NFS3_MAX_NCONNECT], sum;
	for (unsigned i = 0; i < nconnect; i++)
		cr_assert_eq(rrr_nfs3_conn_stats(n, i, &before[i]), 0);

	int rc = rrr_nfs3_write_all(n, &fh, 0, src, len, qd, 0, RRR_NFS3_UNSTABLE, NULL, NULL);
	cr_assert_eq(rc, 0, "write_all: %d %s", rc, rrr_last_error() ? rrr_last_error() : "");
	char path[400];
	snprintf(path, sizeof(path), "%s/nc.bin", s.export_dir);
	size_t got_len;
	uint8_t *disk = read_local(path, &got_len);
	cr_assert_eq(got_len, len, "server file size");
	cr_assert(memcmp(disk, src, len) == 0, "server file equals the source");
	free(disk);

	size_t done = 0;
	rc = rrr_nfs3_read_all(n, &fh, 0, back, len, qd, 0, &done, NULL, NULL);
	cr_assert_eq(rc, 0, "read_all: %d %s", rc, rrr_last_error() ? rrr_last_error() : "");
	cr_assert_eq(done, len);
	cr_assert(memcmp(back, src, len) == 0, "bytes read back equal the source");

	/* 21 WRITEs + COMMIT + 21 READs spread over every connection. */
	uint64_t total = 0;
	for (unsigned i = 0; i < nconnect; i++) {
		cr_assert_eq(rrr_nfs3_conn_stats(n, i, &after[i]), 0);
		uint64_t d = after[i].calls - before[i].calls;
		cr_assert_geq(d, 8, "connection %u carried %llu calls", i, (unsigned long long)d);
		cr_assert_eq(after[i].replies - before[i].replies, d);
		if (rdma)
			cr_assert_gt(after[i].registrations, before[i].registrations,
				     "connection %u registered payloads", i);
		total += d;
	}
	cr_assert_geq(total, 43);
	rrr_nfs3_stats(n, &sum);
	uint64_t calls = 0, regs = 0;
	for (unsigned i = 0; i < nconnect; i++) {
		calls += after[i].calls;
		regs += after[i].registrations;
	}
	cr_assert_eq(sum.calls, calls, "summed counters are the sum of the connections'");
	cr_assert_eq(sum.registrations, regs);
	/* gauges: credits add up, the inline size is the smallest */
	uint32_t credits = 0, inl = UINT32_MAX;
	for (unsigned i = 0; i < nconnect; i++) {
		credits += after[i].credits;
		inl = after[i].inline_send < inl ? after[i].inline_send : inl;
	}
	cr_assert_eq(sum.credits, credits);
	cr_assert_eq(sum.inline_send, inl);
	cr_assert_geq(sum.connects, nconnect);

	struct rrr_xprt_stats bad;
	cr_assert_eq(rrr_nfs3_conn_stats(n, nconnect, &bad), -EINVAL);
	free(src);
	free(back);
	rrr_nfs3_umount(n);
	cr_assert_eq(th_server_stop(&s), 0);
	th_cleanup(&s);
}

Test(nfs_nconnect, tcp_2_read_write_all, .timeout = 120)
{
	transfer(false, 2, 8);
}

Test(nfs_nconnect, tcp_4_read_write_all, .timeout = 120)
{
	transfer(false, 4, 8);
}

Test(nfs_nconnect, soft_rdma_2_read_write_all, .timeout = 120)
{
	transfer(true, 2, 8);
}

Test(nfs_nconnect, soft_rdma_4_read_write_all_qd1, .timeout = 120)
{
	/* QD1: one call at a time, still every connection in turn */
	transfer(true, 4, 1);
}

Test(nfs_nconnect, sync_calls_round_robin, .timeout = 60)
{
	struct th_server s;
	start(&s, false);
	struct rrr_nfs3 *n = mount_n(&s, false, 4, 0);
	struct rrr_xprt_stats b[4], a[4];
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(rrr_nfs3_conn_stats(n, i, &b[i]), 0);
	struct rrr_nfs3_fattr attr;
	for (int i = 0; i < 12; i++)
		cr_assert_eq(rrr_nfs3_getattr(n, rrr_nfs3_root(n), &attr), 0);
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(rrr_nfs3_conn_stats(n, i, &a[i]), 0);
		cr_assert_eq(a[i].calls - b[i].calls, 3, "connection %u: %llu of 12 GETATTRs", i,
			     (unsigned long long)(a[i].calls - b[i].calls));
	}
	rrr_nfs3_umount(n);
	th_cleanup(&s);
}

Test(nfs_nconnect, out_of_range_refused)
{
	struct rrr_nfs3_opts o;
	struct rrr_nfs3 *n = NULL;
	rrr_nfs3_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = "1";
	o.mount_port = "1";
	o.nconnect = 0;
	cr_assert_eq(rrr_nfs3_mount(&o, &n), -EINVAL);
	cr_assert_null(n);
	cr_assert_not_null(rrr_last_error());
	cr_assert(strstr(rrr_last_error(), "nconnect 0"), "%s", rrr_last_error());
	o.nconnect = RRR_NFS3_MAX_NCONNECT + 1;
	cr_assert_eq(rrr_nfs3_mount(&o, &n), -EINVAL);
	cr_assert(strstr(rrr_last_error(), "nconnect 17"), "%s", rrr_last_error());
	cr_assert(strstr(rrr_last_error(), "1 .. 16"), "%s", rrr_last_error());
}

/* --- which server threads read the sockets --------------------------------- */

struct thread_io {
	int tid;
	unsigned long long run_ns;
};

/* Time on CPU (ns, /proc/PID/task/TID/schedstat: exact, not sampled by
 * ticks) of every thread of @pid but the main one (the accept thread) and
 * the file system agents ("rrr-fs-agent": the slow paths of requests run
 * there as their callers, server/fs/cred.c), i.e. of the workers. */
static int server_threads(int pid, struct thread_io *t, int max)
{
	char dir[64], path[128];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)) && n < max) {
		int tid = atoi(de->d_name);
		if (tid <= 0 || tid == pid)
			continue;
		char comm[32] = "";
		snprintf(path, sizeof(path), "%s/%d/comm", dir, tid);
		FILE *cf = fopen(path, "r");
		if (cf) {
			if (!fgets(comm, sizeof(comm), cf))
				comm[0] = '\0';
			fclose(cf);
		}
		if (!strncmp(comm, "rrr-fs-agent", 12))
			continue;
		snprintf(path, sizeof(path), "%s/%d/schedstat", dir, tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned long long r = 0;
		if (fscanf(f, "%llu", &r) == 1) {
			t[n].tid = tid;
			t[n].run_ns = r;
			n++;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Server threads that did at least a fifth of the server's work (time on
 * CPU of the non-main threads) while @n wrote @len bytes. */
static int busy_workers(struct th_server *s, struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh,
			const uint8_t *buf, size_t len)
{
	struct thread_io t0[64], t1[64];
	unsigned long long d[64], total = 0;
	int n0 = server_threads(s->pid, t0, 64);
	cr_assert_eq(rrr_nfs3_write_all(n, fh, 0, buf, len, 8, 0, RRR_NFS3_UNSTABLE, NULL, NULL), 0,
		     "%s", rrr_last_error() ? rrr_last_error() : "");
	int n1 = server_threads(s->pid, t1, 64), busy = 0;
	for (int i = 0; i < n1; i++) {
		unsigned long long r0 = 0;
		for (int j = 0; j < n0; j++)
			if (t0[j].tid == t1[i].tid)
				r0 = t0[j].run_ns;
		d[i] = t1[i].run_ns - r0;
		total += d[i];
		cr_log_info("server thread %d ran %llu us", t1[i].tid, d[i] / 1000);
	}
	cr_assert_gt(total, 0, "the server's worker threads ran");
	for (int i = 0; i < n1; i++)
		if (d[i] * 5 >= total)
			busy++;
	return busy;
}

static void workers(bool rdma)
{
	enum { XSIZE = 4096 };
	struct th_server s; /* th_server_start runs it with --threads 2 */
	start(&s, rdma);
	const size_t len = 4u << 20;
	uint8_t *src = random_buf(len, 77);
	struct rrr_nfs3_fh fh;

	/* control: one connection's data is read by one thread. The WRITEs
	 * are 4 KiB: quick, so they stay on their connection's worker once
	 * timed (a handler averaging 1 ms or more - a 1 MiB WRITE can, on a
	 * busy host - runs on an idle worker, the other one here) */
	struct rrr_nfs3 *n = mount_n(&s, rdma, 1, XSIZE);
	cr_assert_eq(rrr_nfs3_create(n, rrr_nfs3_root(n), "w.bin", 0644, false, &fh), 0);
	cr_assert_eq(busy_workers(&s, n, &fh, src, len), 1,
		     "one connection: one server thread serves it");
	rrr_nfs3_umount(n);

	/* two connections, made one after the other: two workers, half each */
	n = mount_n(&s, rdma, 2, XSIZE);
	cr_assert_eq(busy_workers(&s, n, &fh, src, len), 2,
		     "nconnect=2: two server worker threads each serve a share");
	rrr_nfs3_umount(n);
	free(src);
	cr_assert_eq(th_server_stop(&s), 0);
	th_cleanup(&s);
}

TH_TEST_BOTH(nfs_nconnect, two_connections_two_server_workers, workers, 120)
