/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/integration.c - real rrr-server and rrr-client processes on
 * loopback (free ports): put / ls / get with checksums, mkdir / mv / rm,
 * over TCP and over RPC-over-RDMA on the soft provider; libnfs tools
 * (Debian libnfs-utils) against rrr-server over TCP.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/nfs_helpers.h"

static char client_prog[512];

static void need_programs(void)
{
	th_need_server_and_client(client_prog);
}

/* Run rrr-client with the common connection options plus @cmd... */
static int client(struct th_server *s, bool rdma, const char *out, ...)
{
	char port[16], mport[16];
	snprintf(port, sizeof(port), "%u", rdma ? s->rdma_port : s->mount_port);
	snprintf(mport, sizeof(mport), "%u", s->mount_port);
	const char *argv[24] = {client_prog, "--transport", rdma ? "rdma" : "tcp",
				"--provider", "soft", "--server", "127.0.0.1", "--port", port,
				"--mount-port", mport, "--export", s->export_dir, "--timeout",
				"20000", "--no-progress"};
	int n = 16;
	va_list ap;
	va_start(ap, out);
	const char *a;
	while (n < 22 && (a = va_arg(ap, const char *)))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return th_run((char *const *)argv, out, 60);
}

static void workload(bool rdma)
{
	need_programs();
	struct th_server s;
	cr_assert_eq(th_mkdirs(&s), 0);
	int rc = th_server_start(&s, rdma);
	if (rdma && rc < 0) {
		th_cleanup(&s);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d): "
			     "RDMA path unavailable in this build", rc);
	}
	cr_assert_eq(rc, 0, "server start");

	char local[400], back[400], out[400], path[400];
	snprintf(local, sizeof(local), "%s/local.bin", s.dir);
	snprintf(back, sizeof(back), "%s/back.bin", s.dir);
	snprintf(out, sizeof(out), "%s/out.txt", s.dir);
	/* 3 MiB + 4097: odd size, several 1 MiB READs/WRITEs, a partial tail */
	cr_assert_eq(th_random_file(local, (3u << 20) + 4097, rdma ? 7 : 3), 0);

	cr_assert_eq(client(&s, rdma, out, "--verify", "--qd", "4", "put", local, NULL), 0);
	cr_assert(th_file_contains(out, "verified"));
	snprintf(path, sizeof(path), "%s/local.bin", s.export_dir);
	cr_assert_eq(th_cmp_files(local, path), 0, "server copy equals the source");

	cr_assert_eq(client(&s, rdma, out, "ls", NULL), 0);
	cr_assert(th_file_contains(out, "local.bin"));
	cr_assert(th_file_contains(out, "3149825"), "ls shows the size");

	cr_assert_eq(client(&s, rdma, out, "--verify", "--split", "1000", "get", "local.bin", back, NULL),
		     0);
	cr_assert_eq(th_cmp_files(local, back), 0, "round trip equals the source");

	cr_assert_eq(client(&s, rdma, NULL, "mkdir", "dir", NULL), 0);
	cr_assert_eq(client(&s, rdma, NULL, "mv", "local.bin", "dir", NULL), 0);
	snprintf(path, sizeof(path), "%s/dir/local.bin", s.export_dir);
	cr_assert_eq(access(path, F_OK), 0, "mv into the directory");
	cr_assert_eq(client(&s, rdma, NULL, "mv", "dir/local.bin", "dir/renamed", NULL), 0);
	cr_assert_eq(client(&s, rdma, out, "stat", "dir/renamed", NULL), 0);
	cr_assert(th_file_contains(out, "size: 3149825"));
	cr_assert_eq(client(&s, rdma, NULL, "rm", "dir/renamed", NULL), 0);
	cr_assert_eq(client(&s, rdma, NULL, "rm", "dir", NULL), 0);
	snprintf(path, sizeof(path), "%s/dir", s.export_dir);
	cr_assert_neq(access(path, F_OK), 0, "directory removed");

	/* Exit codes a script can use. */
	cr_assert_eq(client(&s, rdma, NULL, "stat", "missing", NULL), 1);
	cr_assert_eq(client(&s, rdma, NULL, "frobnicate", NULL), 2);

	cr_assert_eq(client(&s, rdma, out, "--stats", "ls", NULL), 0);
	cr_assert(th_file_contains(out, "registrations"), "--stats prints the counters");
	cr_assert_eq(th_server_stop(&s), 0, "clean stop on SIGTERM");
	cr_assert(th_file_contains(s.log, "final counters"));
	th_cleanup(&s);
}

TH_TEST_BOTH(nfs_integration, put_ls_get_mkdir_mv_rm, workload, 120)

Test(nfs_integration, connection_refused_exit_code, .timeout = 60)
{
	need_programs();
	const char *argv[] = {client_prog, "--transport", "tcp", "--server", "127.0.0.1",
			      "--port", "1", "--mount-port", "1", "--timeout", "3000", "ls", NULL};
	cr_assert_eq(th_run((char *const *)argv, "/dev/null", 30), 3);
}

Test(nfs_integration, libnfs_tools_over_tcp, .timeout = 120)
{
	need_programs();
	if (access("/usr/bin/nfs-ls", X_OK) != 0 || access("/usr/bin/nfs-cp", X_OK) != 0)
		cr_skip_test("libnfs-utils (nfs-ls, nfs-cp) not installed: make deps");
	struct th_server s;
	cr_assert_eq(th_mkdirs(&s), 0);
	cr_assert_eq(th_server_start(&s, false), 0);
	char local[400], back[400], url[1024], out[400], q[64];
	snprintf(local, sizeof(local), "%s/l.bin", s.dir);
	snprintf(back, sizeof(back), "%s/b.bin", s.dir);
	snprintf(out, sizeof(out), "%s/ls.txt", s.dir);
	snprintf(q, sizeof(q), "?version=3&nfsport=%u&mountport=%u", s.mount_port, s.mount_port);
	cr_assert_eq(th_random_file(local, (1u << 20) * 2 + 123, 11), 0);

	snprintf(url, sizeof(url), "nfs://127.0.0.1%s/viaweb.bin%s", s.export_dir, q);
	const char *cp1[] = {"nfs-cp", local, url, NULL};
	cr_assert_eq(th_run((char *const *)cp1, "/dev/null", 60), 0, "nfs-cp put");
	char path[400];
	snprintf(path, sizeof(path), "%s/viaweb.bin", s.export_dir);
	cr_assert_eq(th_cmp_files(local, path), 0);

	const char *cp2[] = {"nfs-cp", url, back, NULL};
	cr_assert_eq(th_run((char *const *)cp2, "/dev/null", 60), 0, "nfs-cp get");
	cr_assert_eq(th_cmp_files(local, back), 0);

	char lsurl[1024];
	snprintf(lsurl, sizeof(lsurl), "nfs://127.0.0.1%s%s", s.export_dir, q);
	const char *ls[] = {"nfs-ls", lsurl, NULL};
	cr_assert_eq(th_run((char *const *)ls, out, 60), 0, "nfs-ls");
	cr_assert(th_file_contains(out, "viaweb.bin"));
	cr_assert(th_file_contains(out, "2097275"));
	cr_assert_eq(th_server_stop(&s), 0);
	th_cleanup(&s);
}
