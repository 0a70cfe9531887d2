/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/faults.c - no page faulting of fresh memory per I/O on the
 * steady-state path: a real rrr-server process and this
 * process's NFSv3 client move 1 MiB WRITEs and READs over TCP and over
 * soft RDMA, one at a time, and over four TCP connections 16 at a time
 * (pipelined whole ranges); after a warm-up, the page faults of the server process
 * (/proc/PID/stat minflt + majflt) and of this process (getrusage) stay
 * well under one per I/O. Before the buffer pools, the client staged every
 * 1 MiB WRITE in fresh encode buffers and the server read every 1 MiB READ
 * into a fresh request arena, a page fault per 4 KiB touched.
 *
 * Warm-up: WARM 1 MiB rounds (or rounds of 16 MiB at QD16) so that the
 * per-connection buffers exist; then the window. The provider's rings need
 * none: see the first pass below.
 *
 * The first pass: on a fresh soft RDMA connection, FIRST_PASS 4 KiB WRITEs
 * (more than any of the provider's send, receive and completion rings has
 * entries: up to 4096) right after a few calls that make the client's and
 * server's buffers; the rings are written page by page when the QP and CQ
 * are made (transport/soft: soft_prefault), so even their first pass takes
 * no page fault: 7 on the client and 14 on the server in 5000 I/Os here,
 * against ~270 and ~290 (0.053 / 0.059 per I/O) without it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "tests/test_wait.h"
#include "tests/lib/nfs_helpers.h"


#define IO_SIZE	   (1u << 20)
#define WARM	   30
#define MEASURE	   150
#define FIRST_PASS 5000

static long self_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

/* minflt (field 10) + majflt (field 12) of @pid, or -1. */
static long pid_faults(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long v[12];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return -1;
	p++;
	for (int i = 0; i < 12 - 2; i++) { /* fields 3 .. 12 */
		char *end;

		while (*p == ' ')
			p++;
		if (i == 0) { /* state: a letter */
			p++;
			continue;
		}
		v[i] = strtoul(p, &end, 10);
		p = end;
	}
	return (long)(v[7] + v[9]); /* fields 10 and 12 */
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* QD16 over the connections: whole 16 MiB ranges written and read back.
 * A worker meets a new peak of replies in flight now and then (another
 * request buffer, once, within the cache bound): the median round counts. */
static void pipelined(struct th_server *s, struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh)
{
	enum { WARM_ROUNDS = 3, ROUNDS = 9 };
	const size_t len = 16u << 20;
	const double ios = 2.0 * (double)(len / IO_SIZE); /* per round */
	uint8_t *w = aligned_alloc(4096, len), *r = aligned_alloc(4096, len);
	long cf[ROUNDS], sf[ROUNDS];
	size_t done;

	cr_assert(w && r);
	for (size_t i = 0; i < len; i++)
		w[i] = (uint8_t)(i * 17u + (i >> 12));
	memset(r, 0, len);
	for (int k = 0; k < WARM_ROUNDS + ROUNDS; k++) {
		long c0 = self_faults(), s0 = pid_faults(s->pid);

		cr_assert_eq(
		    rrr_nfs3_write_all(nfs, fh, 0, w, len, 16, 0, RRR_NFS3_UNSTABLE, NULL, NULL),
		    0);
		cr_assert_eq(rrr_nfs3_read_all(nfs, fh, 0, r, len, 16, 0, &done, NULL, NULL), 0);
		cr_assert_eq(done, len);
		if (k >= WARM_ROUNDS) {
			cf[k - WARM_ROUNDS] = self_faults() - c0;
			sf[k - WARM_ROUNDS] = pid_faults(s->pid) - s0;
		}
	}
	cr_assert_eq(memcmp(w, r, len), 0, "READ returned other bytes");
	qsort(cf, ROUNDS, sizeof(long), cmp_long);
	qsort(sf, ROUNDS, sizeof(long), cmp_long);
	double cpi = (double)cf[ROUNDS / 2] / ios, spi = (double)sf[ROUNDS / 2] / ios;
	cr_log_info("tcp nconnect %u QD16, median round: %.3f client, %.3f server page faults "
		    "per 1 MiB I/O (max %.2f, %.2f)",
		    rrr_nfs3_nconnect(nfs), cpi, spi, (double)cf[ROUNDS - 1] / ios,
		    (double)sf[ROUNDS - 1] / ios);
	cr_assert_lt(cpi, 0.25, "client takes %.2f page faults per 1 MiB I/O", cpi);
	cr_assert_lt(spi, 0.25, "server takes %.2f page faults per 1 MiB I/O", spi);
	free(w);
	free(r);
}

/* Soft RDMA, fresh connection: 4 KiB WRITEs from the start (see the top). */
static void first_pass(struct th_server *s, struct rrr_nfs3 *nfs, const struct rrr_nfs3_fh *fh)
{
	_Alignas(4096) static uint8_t buf[4096];
	long c0 = 0, s0 = 0;

	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < 32 + FIRST_PASS; i++) {
		struct iovec wi = {buf, sizeof(buf)};
		uint32_t count = 0;

		if (i == 32) {
			c0 = self_faults();
			s0 = pid_faults(s->pid);
		}
		cr_assert_eq(rrr_nfs3_write(nfs, fh, (uint64_t)(i % 64) * 4096, &wi, 1,
					    RRR_NFS3_UNSTABLE, &count),
			     0);
	}
	double cpi = (double)(self_faults() - c0) / FIRST_PASS;
	double spi = (double)(pid_faults(s->pid) - s0) / FIRST_PASS;

	cr_log_info("soft rdma, first %d 4 KiB WRITEs of a connection: %.4f client, %.4f server "
		    "page faults per I/O",
		    FIRST_PASS, cpi, spi);
	cr_assert_lt(cpi, 0.01, "client takes %.4f page faults per 4 KiB I/O on the first pass",
		     cpi);
	cr_assert_lt(spi, 0.01, "server takes %.4f page faults per 4 KiB I/O on the first pass",
		     spi);
}

static void run(bool rdma, unsigned nconnect, bool first)
{
	struct th_server s;
	struct th_mount mt;
	struct rrr_nfs3 *nfs;
	struct rrr_nfs3_fh fh;
	uint8_t *wbuf, *rbuf;
	long c0 = 0, s0 = 0, c1, s1;

#ifdef TEST_ALLOC_SANITIZER
	cr_skip_test("a sanitizer's allocator hands out fresh memory on every malloc: page "
		     "faults say nothing there");
#endif
	th_need_server();
	cr_assert_eq(th_mkdirs(&s), 0);
	int rc = th_server_start(&s, rdma);
	if (rdma && rc < 0) {
		th_cleanup(&s);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	cr_assert_eq(rc, 0, "server start");
	th_mount_opts(&s, rdma, &mt);
	mt.o.timeout_ms = 20000;
	mt.o.nconnect = nconnect;
	nfs = th_nfs_mount(&mt);
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), "f", 0644, false, &fh), 0);
	wbuf = aligned_alloc(4096, IO_SIZE);
	rbuf = aligned_alloc(4096, IO_SIZE);
	cr_assert(wbuf && rbuf);
	for (uint32_t i = 0; i < IO_SIZE; i++)
		wbuf[i] = (uint8_t)(i * 31u + 7u);
	memset(rbuf, 0, IO_SIZE);

	if (first) {
		first_pass(&s, nfs, &fh);
		goto out;
	}
	if (nconnect > 1) {
		pipelined(&s, nfs, &fh);
		goto out;
	}
	for (int i = 0; i < WARM + MEASURE; i++) {
		struct iovec wi = {wbuf, IO_SIZE}, ri = {rbuf, IO_SIZE};
		uint64_t off = (uint64_t)(i % 4) * IO_SIZE;
		uint32_t count = 0;
		bool eof;

		if (i == WARM) {
			c0 = self_faults();
			s0 = pid_faults(s.pid);
		}
		cr_assert_eq(rrr_nfs3_write(nfs, &fh, off, &wi, 1, RRR_NFS3_UNSTABLE, &count), 0);
		cr_assert_eq(count, IO_SIZE);
		cr_assert_eq(rrr_nfs3_read(nfs, &fh, off, &ri, 1, &count, &eof), 0);
		cr_assert_eq(count, IO_SIZE);
		if (i == 0 || i == WARM + MEASURE - 1)
			cr_assert_eq(memcmp(rbuf, wbuf, IO_SIZE), 0, "READ returned other bytes");
	}
	c1 = self_faults();
	s1 = pid_faults(s.pid);
	cr_assert_geq(s0, 0);
	cr_assert_geq(s1, 0);
	/* 2 I/Os per round */
	double cpi = (double)(c1 - c0) / (2.0 * MEASURE), spi = (double)(s1 - s0) / (2.0 * MEASURE);
	cr_log_info("%s: %.3f client, %.3f server page faults per 1 MiB I/O", mt.o.transport, cpi,
		    spi);
	cr_assert_lt(cpi, 0.25, "%s: client takes %.2f page faults per 1 MiB I/O", mt.o.transport,
		     cpi);
	cr_assert_lt(spi, 0.25, "%s: server takes %.2f page faults per 1 MiB I/O", mt.o.transport,
		     spi);
out:
	rrr_nfs3_umount(nfs);
	free(wbuf);
	free(rbuf);
	th_server_stop(&s);
	th_cleanup(&s);
}

Test(nfs_faults, tcp_1mib_read_write_no_faults_per_io, .timeout = 120)
{
	run(false, 1, false);
}

Test(nfs_faults, tcp_nconnect4_qd16_no_faults_per_io, .timeout = 120)
{
	run(false, 4, false);
}

Test(nfs_faults, soft_rdma_1mib_read_write_no_faults_per_io, .timeout = 120)
{
	run(true, 1, false);
}

Test(nfs_faults, soft_rdma_first_pass_over_the_rings_no_faults, .timeout = 120)
{
	run(true, 1, true);
}
