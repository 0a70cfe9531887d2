/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/direct.c - rrr-server's direct writes (server/fs/nfs3_proc.c,
 * "Direct writes"): a large, page-aligned WRITE of new data goes to the
 * file with O_DIRECT (the RDMA transport places read-chunk data on a page
 * boundary for it); everything else stays buffered. Whatever path a WRITE
 * takes, READ through the server and the file on disk hold exactly the
 * bytes written, in the order written, mixed with small and unaligned
 * WRITEs and overwrites. The counter io.direct_writes (rrr-server --stats)
 * shows which path was taken (over TCP the data arrives unaligned and is
 * copied into a worker's aligned bounce buffer first). Real server
 * processes, soft RDMA and TCP.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/nfs_helpers.h"

#define MIB (1u << 20)
#define FILE_LEN (4u * MIB)

static struct th_server srv;
static struct rrr_nfs3 *nfs;
static uint8_t *model; /* what the file must hold */

static void start(bool rdma, const char *const *extra)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, rdma), 0);
	struct th_mount mt;
	th_mount_opts(&srv, rdma, &mt);
	mt.o.timeout_ms = 20000;
	mt.o.rsize = mt.o.wsize = MIB;
	nfs = th_nfs_mount(&mt);
	model = calloc(1, FILE_LEN);
	cr_assert_not_null(model);
}

static void teardown(void)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	free(model);
	model = NULL;
	th_cleanup(&srv);
}

TestSuite(nfs_direct, .fini = teardown, .timeout = 90);

/* io.direct_writes of the running server (rrr-server --stats). */
static unsigned long long direct_writes(void)
{
	char prog[512], out[400], line[256];
	cr_assert_not_null(th_prog("rrr-server", prog, sizeof(prog)));
	snprintf(out, sizeof(out), "%s/stats.out", srv.dir);
	char *const argv[] = {prog, "--stats", "--state-dir", srv.state_dir, NULL};
	cr_assert_eq(th_run(argv, out, 20), 0, "rrr-server --stats failed");
	FILE *f = fopen(out, "r");
	cr_assert_not_null(f);
	unsigned long long n = ~0ull;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " io.direct_writes %llu", &n) == 1)
			break;
	fclose(f);
	cr_assert_neq(n, ~0ull, "--stats printed no io.direct_writes");
	return n;
}

/* WRITE @len bytes of pattern @seed at @off (UNSTABLE), into the model too. */
static void put(const struct rrr_nfs3_fh *fh, uint64_t off, uint32_t len, uint8_t seed)
{
	uint8_t *buf = malloc(len + 1);
	cr_assert_not_null(buf);
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 7u + (i >> 12));
	/* from an odd address: the client's alignment must not matter */
	memmove(buf + 1, buf, len);
	struct iovec iov = {.iov_base = buf + 1, .iov_len = len};
	uint32_t count = 0;
	cr_assert_eq(rrr_nfs3_write(nfs, fh, off, &iov, 1, RRR_NFS3_UNSTABLE, &count), 0,
		     "WRITE %u at %llu", len, (unsigned long long)off);
	cr_assert_eq(count, len);
	memcpy(model + off, buf + 1, len);
	free(buf);
}

/* READ the whole file through the server and from the export's disk file. */
static void check(const struct rrr_nfs3_fh *fh, const char *name, size_t len)
{
	uint8_t verf[8];
	cr_assert_eq(rrr_nfs3_commit(nfs, fh, verf), 0);
	uint8_t *got = malloc(len);
	cr_assert_not_null(got);
	for (size_t off = 0; off < len; off += MIB) {
		struct iovec iov = {.iov_base = got + off, .iov_len = len - off < MIB ? len - off : MIB};
		uint32_t count = 0;
		bool eof = false;
		cr_assert_eq(rrr_nfs3_read(nfs, fh, off, &iov, 1, &count, &eof), 0);
		cr_assert_eq(count, iov.iov_len);
	}
	cr_assert(memcmp(got, model, len) == 0, "READ differs from what was written");
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", srv.export_dir, name);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((size_t)st.st_size, len);
	cr_assert_eq(pread(fd, got, len, 0), (ssize_t)len);
	close(fd);
	cr_assert(memcmp(got, model, len) == 0, "the file on disk differs from what was written");
	free(got);
}

static void create(const char *name, struct rrr_nfs3_fh *fh)
{
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), name, 0644, false, fh), 0);
}

Test(nfs_direct, new_data_goes_direct_overwrites_stay_coherent)
{
	start(true, NULL);
	struct rrr_nfs3_fh fh;
	create("d.bin", &fh);
	unsigned long long d0 = direct_writes();
	/* new data, 1 MiB at aligned offsets, out of order (a hole first) */
	put(&fh, 1 * MIB, MIB, 1);
	put(&fh, 0, MIB, 2);
	put(&fh, 3 * MIB, MIB, 3);
	unsigned long long d1 = direct_writes();
	cr_assert_eq(d1 - d0, 3, "three WRITEs of new aligned data: %llu went direct", d1 - d0);
	/* small and unaligned WRITEs, then an overwrite of existing data */
	put(&fh, 4096 + 100, 5000, 4);
	put(&fh, 2 * MIB + 12345, 300000, 5);
	put(&fh, 1 * MIB, MIB, 6);
	cr_assert_eq(direct_writes(), d1, "overwrites and unaligned WRITEs are buffered");
	check(&fh, "d.bin", FILE_LEN);
}

Test(nfs_direct, off_when_direct_write_is_0)
{
	static const char *const extra[] = {"--direct-write", "0", NULL};
	start(true, extra);
	struct rrr_nfs3_fh fh;
	create("b.bin", &fh);
	put(&fh, 0, MIB, 7);
	put(&fh, MIB, MIB, 8);
	cr_assert_eq(direct_writes(), 0, "--direct-write 0: nothing goes direct");
	check(&fh, "b.bin", 2 * MIB);
}

Test(nfs_direct, below_the_threshold_is_buffered)
{
	static const char *const extra[] = {"--direct-write", "2097152", NULL};
	start(true, extra);
	struct rrr_nfs3_fh fh;
	create("t.bin", &fh);
	put(&fh, 0, MIB, 9);
	cr_assert_eq(direct_writes(), 0, "1 MiB is below a 2 MiB threshold");
	check(&fh, "t.bin", MIB);
}

Test(nfs_direct, tcp_writes_are_correct)
{
	start(false, NULL);
	struct rrr_nfs3_fh fh;
	create("c.bin", &fh);
	unsigned long long d0 = direct_writes();
	put(&fh, 0, MIB, 10);
	put(&fh, 2 * MIB, MIB, 11);
	put(&fh, MIB, MIB, 12);
	/* TCP leaves the data unaligned: copied into an aligned bounce buffer */
	cr_assert_eq(direct_writes() - d0, 3, "new aligned-offset data over TCP goes direct");
	put(&fh, 3 * MIB - 4096, 8192, 13);
	put(&fh, 0, MIB, 14);
	cr_assert_eq(direct_writes() - d0, 3, "small WRITEs and overwrites stay buffered");
	check(&fh, "c.bin", 3 * MIB + 4096);
}
