/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/cli.c - rrr-client's pipelined get / cat / put (client/cli/
 * xfer.c) against a real rrr-server on loopback, over soft RDMA and TCP:
 * bytes equal after every path (put from a mapping, put through the ring,
 * --split, get with whole chunks O_DIRECT (the default) and --no-direct,
 * cat to stdout) for sizes around the chunk size (0, 1,
 * chunk - 1, chunk, several chunks + 1, more chunks than ring slots),
 * --nconnect (how many connections the counters show, range checks), and
 * local file errors giving exit status 5.
 *
 * Small --rsize/--wsize (64 KiB) and --qd 3 make the ring (2 x qd slots)
 * wrap many times in a file of about a megabyte.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/nfs_helpers.h"

#define CHUNK 65536u

static char client_prog[512];

static void need_programs(void)
{
	th_need_server_and_client(client_prog);
}

struct env {
	struct th_server s;
	bool rdma;
	char port[16], mport[16];
	char out[400];
};

static void start(struct env *e, bool rdma)
{
	need_programs();
	e->rdma = rdma;
	cr_assert_eq(th_mkdirs(&e->s), 0);
	int rc = th_server_start(&e->s, rdma);
	if (rdma && rc < 0) {
		th_cleanup(&e->s);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	cr_assert_eq(rc, 0, "server start");
	snprintf(e->port, sizeof(e->port), "%u", rdma ? e->s.rdma_port : e->s.mount_port);
	snprintf(e->mport, sizeof(e->mport), "%u", e->s.mount_port);
	snprintf(e->out, sizeof(e->out), "%s/out.txt", e->s.dir);
}

static void stop(struct env *e)
{
	cr_assert_eq(th_server_stop(&e->s), 0, "clean stop on SIGTERM");
	th_cleanup(&e->s);
}

/* argv of one rrr-client run: common options, then @args (NULL-ended),
 * optionally behind "sh -c PRELUDE" (for ulimit / trap). */
static int run_client(struct env *e, const char *out, const char *prelude, va_list ap)
{
	const char *argv[64];
	int n = 0;
	char script[256];
	if (prelude) {
		snprintf(script, sizeof(script), "%s; exec \"$0\" \"$@\"", prelude);
		argv[n++] = "sh";
		argv[n++] = "-c";
		argv[n++] = script;
	}
	const char *common[] = {client_prog,
				"--transport",
				e->rdma ? "rdma" : "tcp",
				"--provider",
				"soft",
				"--server",
				"127.0.0.1",
				"--port",
				e->port,
				"--mount-port",
				e->mport,
				"--export",
				e->s.export_dir,
				"--timeout",
				"20000",
				"--no-progress",
				"--rsize",
				"65536",
				"--wsize",
				"65536",
				"--qd",
				"3"};
	for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		argv[n++] = common[i];
	const char *a;
	while (n < 63 && (a = va_arg(ap, const char *)))
		argv[n++] = a;
	argv[n] = NULL;
	return th_run((char *const *)argv, out, 60);
}

static int client(struct env *e, const char *out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = run_client(e, out, NULL, ap);
	va_end(ap);
	return rc;
}

static int client_sh(struct env *e, const char *prelude, const char *out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = run_client(e, out, prelude, ap);
	va_end(ap);
	return rc;
}

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* Every data path for one size; names carry the size. */
static void paths_for_size(struct env *e, size_t size, uint32_t seed)
{
	char name[64], local[400], remote[400], back[400], tmp[96];
	snprintf(name, sizeof(name), "f%zu.bin", size);
	path_in(local, sizeof(local), e->s.dir, name);
	cr_assert_eq(th_random_file(local, size, seed), 0);

	/* put from a mapping of the source (the default for soft and TCP) */
	cr_assert_eq(client(e, e->out, "put", local, name, NULL), 0, "put %zu", size);
	path_in(remote, sizeof(remote), e->s.export_dir, name);
	cr_assert_eq(th_cmp_files(local, remote), 0, "put (mapped) of %zu bytes", size);
	cr_assert_not(th_file_contains(e->out, "crc32c"), "no checksum without --verify");

	/* put through the buffer ring, and with split payloads */
	snprintf(tmp, sizeof(tmp), "ring-%s", name);
	cr_assert_eq(client(e, NULL, "--no-mmap", "put", local, tmp, NULL), 0);
	path_in(remote, sizeof(remote), e->s.export_dir, tmp);
	cr_assert_eq(th_cmp_files(local, remote), 0, "put --no-mmap of %zu bytes", size);
	snprintf(tmp, sizeof(tmp), "split-%s", name);
	cr_assert_eq(client(e, e->out, "--split", "1000", "--verify", "put", local, tmp, NULL), 0);
	cr_assert(th_file_contains(e->out, "verified"));
	cr_assert(th_file_contains(e->out, "crc32c"), "--verify prints the checksum");
	path_in(remote, sizeof(remote), e->s.export_dir, tmp);
	cr_assert_eq(th_cmp_files(local, remote), 0, "put --split of %zu bytes", size);

	/* get, get --split over one connection, get --verify */
	path_in(back, sizeof(back), e->s.dir, "back.bin");
	cr_assert_eq(client(e, e->out, "get", name, back, NULL), 0, "get %zu", size);
	cr_assert_eq(th_cmp_files(local, back), 0, "get of %zu bytes", size);
	cr_assert_eq(file_size(back), (long)size);
	cr_assert_not(th_file_contains(e->out, "crc32c"), "no checksum without --verify");
	unlink(back);
	cr_assert_eq(client(e, NULL, "--no-direct", "get", name, back, NULL), 0);
	cr_assert_eq(th_cmp_files(local, back), 0, "get --no-direct of %zu bytes", size);
	cr_assert_eq(file_size(back), (long)size);
	unlink(back);
	cr_assert_eq(client(e, NULL, "--split", "700", "--nconnect", "1", "get", name, back, NULL),
		     0);
	cr_assert_eq(th_cmp_files(local, back), 0, "get --split of %zu bytes", size);
	unlink(back);
	cr_assert_eq(client(e, e->out, "--verify", "get", name, back, NULL), 0);
	cr_assert(th_file_contains(e->out, "verified"));
	cr_assert_eq(th_cmp_files(local, back), 0, "get --verify of %zu bytes", size);

	/* a target that exists and is longer is truncated first */
	cr_assert_eq(th_random_file(back, size + 3 * CHUNK + 5, seed + 1), 0);
	cr_assert_eq(client(e, NULL, "get", name, back, NULL), 0);
	cr_assert_eq(th_cmp_files(local, back), 0, "get over a longer file, %zu bytes", size);
	cr_assert_eq(file_size(back), (long)size);

	/* cat to stdout */
	char catted[400];
	path_in(catted, sizeof(catted), e->s.dir, "cat.out");
	cr_assert_eq(client(e, catted, "cat", name, NULL), 0);
	cr_assert_eq(th_cmp_files(local, catted), 0, "cat of %zu bytes", size);
	cr_assert_eq(client(e, catted, "get", name, "-", NULL), 0);
	cr_assert_eq(th_cmp_files(local, catted), 0, "get - of %zu bytes", size);
	unlink(back);
	unlink(catted);
}

static void all_sizes(bool rdma)
{
	struct env e;
	start(&e, rdma);
	/* 0, 1, chunk - 1, chunk, 3 chunks + 1, 1 MiB + 7 (17 chunks through a
	 * ring of 6 slots) */
	const size_t sizes[] = {0, 1, CHUNK - 1, CHUNK, 3 * CHUNK + 1, (1u << 20) + 7};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		paths_for_size(&e, sizes[i], 17 + (uint32_t)i);

	/* FILE_SYNC writes */
	char local[400], remote[400];
	path_in(local, sizeof(local), e.s.dir, "sync.bin");
	cr_assert_eq(th_random_file(local, 5 * CHUNK + 9, 5), 0);
	cr_assert_eq(client(&e, NULL, "--sync", "--verify", "put", local, "sync.bin", NULL), 0);
	path_in(remote, sizeof(remote), e.s.export_dir, "sync.bin");
	cr_assert_eq(th_cmp_files(local, remote), 0, "put --sync");
	stop(&e);
}

TH_TEST_BOTH(nfs_cli, get_put_cat_sizes, all_sizes, 240)

Test(nfs_cli, nconnect, .timeout = 120)
{
	struct env e;
	start(&e, true);
	char local[400], remote[400], back[400];
	path_in(local, sizeof(local), e.s.dir, "nc.bin");
	path_in(back, sizeof(back), e.s.dir, "nc-back.bin");
	cr_assert_eq(th_random_file(local, 40 * CHUNK + 123, 9), 0);

	/* get and put default to two connections, the other commands to one */
	cr_assert_eq(client(&e, e.out, "--stats", "put", local, "nc.bin", NULL), 0);
	cr_assert(th_file_contains(e.out, "connects 2"), "put: two connections by default");
	cr_assert_eq(client(&e, e.out, "--stats", "get", "nc.bin", back, NULL), 0);
	cr_assert(th_file_contains(e.out, "connects 2"), "get: two connections by default");
	cr_assert_eq(th_cmp_files(local, back), 0);
	cr_assert_eq(client(&e, e.out, "--stats", "ls", NULL), 0);
	cr_assert(th_file_contains(e.out, "connects 1"), "ls: one connection");

	/* explicit counts, data equal on every one */
	cr_assert_eq(client(&e, e.out, "--nconnect", "2", "--stats", "--qd", "5", "put", local,
			    "nc2.bin", NULL),
		     0);
	cr_assert(th_file_contains(e.out, "connects 2"));
	path_in(remote, sizeof(remote), e.s.export_dir, "nc2.bin");
	cr_assert_eq(th_cmp_files(local, remote), 0, "put --nconnect 2");
	unlink(back);
	cr_assert_eq(client(&e, e.out, "--nconnect", "3", "--stats", "--verify", "get", "nc2.bin",
			    back, NULL),
		     0);
	cr_assert(th_file_contains(e.out, "connects 3"));
	cr_assert_eq(th_cmp_files(local, back), 0, "get --nconnect 3");
	unlink(back);
	cr_assert_eq(client(&e, e.out, "--nconnect", "1", "--stats", "get", "nc2.bin", back, NULL),
		     0);
	cr_assert(th_file_contains(e.out, "connects 1"));
	cr_assert_eq(th_cmp_files(local, back), 0, "get --nconnect 1");

	/* range: 1..16 */
	cr_assert_eq(client(&e, NULL, "--nconnect", "0", "ls", NULL), 2);
	cr_assert_eq(client(&e, NULL, "--nconnect", "17", "ls", NULL), 2);
	cr_assert_eq(client(&e, NULL, "--nconnect", "x", "ls", NULL), 2);
	stop(&e);
}

Test(nfs_cli, local_errors_exit_5, .timeout = 120)
{
	struct env e;
	start(&e, true);
	char local[400], back[400], dir[400];
	path_in(local, sizeof(local), e.s.dir, "le.bin");
	cr_assert_eq(th_random_file(local, 20 * CHUNK + 1, 4), 0);
	cr_assert_eq(client(&e, NULL, "put", local, "le.bin", NULL), 0);

	/* the target refuses the bytes: write() fails with ENOSPC */
	if (access("/dev/full", W_OK) == 0) {
		cr_assert_eq(client(&e, NULL, "get", "le.bin", "/dev/full", NULL), 5,
			     "get to /dev/full");
		cr_assert_eq(client(&e, "/dev/full", "cat", "le.bin", NULL), 5, "cat > /dev/full");
	}
	/* file size limit (RLIMIT_FSIZE, SIGXFSZ ignored): the preallocation
	 * fails with EFBIG before any byte moves */
	path_in(back, sizeof(back), e.s.dir, "limited.bin");
	cr_assert_eq(client_sh(&e, "trap '' XFSZ; ulimit -f 64", NULL, "get", "le.bin", back, NULL),
		     5, "get beyond the file size limit");
	/* a target whose directory does not exist, a missing or odd source */
	path_in(back, sizeof(back), e.s.dir, "no/such/dir/x.bin");
	cr_assert_eq(client(&e, NULL, "get", "le.bin", back, NULL), 5);
	path_in(back, sizeof(back), e.s.dir, "missing.bin");
	cr_assert_eq(client(&e, NULL, "put", back, "m.bin", NULL), 5);
	path_in(dir, sizeof(dir), e.s.dir, "export");
	cr_assert_eq(client(&e, NULL, "put", dir, "d.bin", NULL), 5, "put of a directory");
	/* remote errors keep their codes */
	path_in(back, sizeof(back), e.s.dir, "x.bin");
	cr_assert_eq(client(&e, NULL, "get", "nothing-here", back, NULL), 1);
	stop(&e);
}
