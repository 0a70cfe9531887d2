/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/config.c - rrr-server's config file parser through
 * `rrr-server --config FILE --check-config` (the parser lives in the
 * program, server/fs/config.c): hostile and broken files are refused with
 * exit status 2 and a message naming file and line; a valid file passes;
 * command-line flags override the file.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/conf_server.h"

static struct th_server srv;
static char prog[512];

static void setup(void)
{
	if (!th_prog("rrr-server", prog, sizeof(prog)))
		cr_skip_test("RRR_BUILD unset or rrr-server not built (run through make test-unit)");
	cr_assert_eq(th_mkdirs(&srv), 0);
}

static void teardown(void)
{
	th_cleanup(&srv);
}

TestSuite(nfs_config, .init = setup, .fini = teardown, .timeout = 60);

/* Write @len bytes of @text as the config, run --check-config with @flags:
 * exit status; output in @out. */
static int check(const char *text, size_t len, const char *flags, char *out)
{
	char conf[400], args[1024];
	snprintf(conf, sizeof(conf), "%s/c.conf", srv.dir);
	snprintf(out, 400, "%s/out.txt", srv.dir);
	FILE *f = fopen(conf, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	snprintf(args, sizeof(args), "--config '%s' --check-config %s", conf, flags);
	return th_sh(prog, args, out);
}

static void refused(const char *text, const char *want)
{
	char out[400];
	cr_assert_eq(check(text, strlen(text), "", out), 2, "refused: %s", text);
	cr_assert(th_file_contains(out, want), "message '%s' for: %s", want, text);
}

Test(nfs_config, valid_file_and_flag_override)
{
	char text[1024], out[400];
	snprintf(text, sizeof(text),
		 "  # a comment\n; another\n\nlisten = 127.0.0.1\n[server]\n rdma-port=20049 \n"
		 "tcp-port = none\nprovider = soft\nlog-level = debug\nmax-requests = 64\n"
		 "inline-send = 4096\nmax-payload = 1048576\nwait = event\n"
		 "[export %s]\nname = /data\nallow = 10.0.0.0/8, 192.0.2.7 ::1 fd00::/8\n"
		 "read-only = no\nroot-squash = yes\n",
		 srv.export_dir);
	cr_assert_eq(check(text, strlen(text), "", out), 0);
	cr_assert(th_file_contains(out, "4 allowed networks, read-write"));
	cr_assert_eq(check(text, strlen(text), "--read-only --allow 127.0.0.1", out), 0);
	cr_assert(th_file_contains(out, "1 allowed network, read-only"), "flags win");
	/* the export may come from the command line alone */
	cr_assert_eq(check("rdma = no\n", 10, "--export /", out), 0);
	cr_assert(th_file_contains(out, "every client"));
}

Test(nfs_config, broken_files_name_the_line)
{
	refused("[server]\nfoo = 1\n", "c.conf:2: unknown key 'foo'");
	refused("rdma-port = 70000\n", "c.conf:1: rdma-port '70000' is not a port");
	refused("rdma-port = 12x\n", "c.conf:1: rdma-port '12x'");
	refused("rdma-port = -1\n", "c.conf:1: rdma-port");
	refused("threads = 99999999999999999999\n", "c.conf:1: threads");
	refused("rdma-port = 1\nrdma-port = 2\n", "c.conf:2: 'rdma-port' is already set on line 1");
	refused("[clients]\n", "c.conf:1: unknown section '[clients]'");
	refused("[server\n", "c.conf:1: a section is");
	refused("[export relative/dir]\n", "c.conf:1: the export 'relative/dir' is not an absolute");
	refused("[export /a]\n[export /a/]\n[export /a]\n", "c.conf:3: the export /a is already on line 1");
	refused("[export /a]\nallow = *\n[export /b]\nallow = *\nallow = ::1\n",
		"c.conf:5: 'allow' is already set on line 4");
	refused("allow = 10.0.0.0/8\n", "c.conf:1: 'allow' belongs in an [export DIR] section");
	refused("[export /a]\nrdma-port = 1\n", "c.conf:2: 'rdma-port' belongs in [server]");
	refused("[export /a]\nallow = 10.0.0.0/33\n", "c.conf:2: allow: '10.0.0.0/33'");
	refused("[export /a]\nallow = 10.0.0.0/\n", "c.conf:2: allow: '10.0.0.0/'");
	refused("[export /a]\nallow = 10.0.0.0/+8\n", "c.conf:2: allow: '10.0.0.0/+8'");
	refused("[export /a]\nallow = ::1/0128\n", "c.conf:2: allow: '::1/0128'");
	refused("[export /a]\nallow = host.example\n", "c.conf:2: allow: 'host.example'");
	refused("[export /a]\nread-only = maybe\n", "c.conf:2: read-only 'maybe' is not yes or no");
	refused("just words\n", "c.conf:1: want 'key = value'");
	refused("log-level = loud\n", "c.conf:1: log-level 'loud'");
	refused("provider = magic\n", "c.conf:1: provider 'magic'");
	refused("state-dir =\n", "c.conf:1: state-dir is empty");
	refused("rdma = no\n", "no export: give --export DIR");
	refused("listen = a b c d e f g h i\n", "c.conf:1: listen has more than 8 addresses");
	refused("listen = 1.2.3.4;rm\n", "c.conf:1: listen: '1.2.3.4;rm'");
}

/* Several [export DIR] sections: each its own keys; overlapping exports,
 * a name twice and too many exports are refused. */
Test(nfs_config, several_exports)
{
	char text[8192], out[400], a[400], b[400], sub[420], link[400];
	snprintf(a, sizeof(a), "%s", srv.export_dir);
	snprintf(b, sizeof(b), "%s/b", srv.dir);
	snprintf(sub, sizeof(sub), "%s/sub", a);
	snprintf(link, sizeof(link), "%s/link", srv.dir);
	cr_assert_eq(mkdir(b, 0755), 0);
	cr_assert_eq(mkdir(sub, 0755), 0);
	cr_assert_eq(symlink(a, link), 0);

	snprintf(text, sizeof(text),
		 "rdma = no\n[export %s]\nallow = 10.0.0.0/8\n[export %s]\nallow = ::1\n"
		 "read-only = yes\nname = /b\n",
		 a, b);
	cr_assert_eq(check(text, strlen(text), "", out), 0);
	cr_assert(th_file_contains(out, "1 allowed network, read-write; export "),
		  "both exports listed, each with its own keys");
	cr_assert(th_file_contains(out, "/b, 1 allowed network, read-only"));
	/* the export flags set the first export only */
	cr_assert_eq(check(text, strlen(text), "--read-only", out), 0);
	cr_assert(th_file_contains(out, "1 allowed network, read-only; export "));

	snprintf(text, sizeof(text), "rdma = no\n[export %s]\n[export %s]\n", a, sub);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "lies inside the export"), "nested");
	snprintf(text, sizeof(text), "rdma = no\n[export %s]\n[export %s]\n", sub, a);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "contains the export"), "nested, outer second");
	snprintf(text, sizeof(text), "rdma = no\n[export %s]\n[export %s]\n", a, link);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "is the same directory as"), "same directory by a symlink");
	snprintf(text, sizeof(text),
		 "rdma = no\n[export %s]\nname = /d\n[export %s]\nname = /d\n", a, b);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "have the same name /d"));
	snprintf(text, sizeof(text), "rdma = no\n[export %s]\n[export /no/such/dir]\n", a);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "the export /no/such/dir: No such file"));

	size_t used = (size_t)snprintf(text, sizeof(text), "rdma = no\n");
	for (int i = 0; i < 17; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "[export /e%d]\n", i);
	cr_assert_eq(check(text, strlen(text), "", out), 2);
	cr_assert(th_file_contains(out, "c.conf:18: more than 16 exports"));
}

Test(nfs_config, hostile_bytes)
{
	char out[400];
	/* a NUL byte */
	cr_assert_eq(check("rdma = no\0x\n", 12, "", out), 2);
	cr_assert(th_file_contains(out, "a NUL byte"));
	/* a line over the limit */
	size_t n = 5000;
	char *big = malloc(n + 16);
	cr_assert_not_null(big);
	memcpy(big, "name = ", 7);
	memset(big + 7, 'a', n);
	big[n + 7] = '\n';
	cr_assert_eq(check(big, n + 8, "", out), 2);
	cr_assert(th_file_contains(out, "c.conf:1: line longer than"));
	free(big);
	/* a file over the size limit */
	size_t m = (1u << 20) + 10;
	char *huge = malloc(m);
	cr_assert_not_null(huge);
	memset(huge, '\n', m);
	cr_assert_eq(check(huge, m, "", out), 2);
	cr_assert(th_file_contains(out, "larger than"));
	free(huge);
	/* too many networks */
	size_t cap = 300 * 16 + 64, used = 0;
	char *many = malloc(cap);
	cr_assert_not_null(many);
	used += (size_t)snprintf(many, cap, "[export /a]\nallow =");
	for (int i = 0; i < 300; i++)
		used += (size_t)snprintf(many + used, cap - used, " 10.0.%d.%d", i / 250, i % 250);
	many[used++] = '\n';
	cr_assert_eq(check(many, used, "", out), 2);
	cr_assert(th_file_contains(out, "c.conf:2: allow lists more than 256 networks"));
	free(many);
	/* a missing file */
	char args[600];
	snprintf(args, sizeof(args), "--config '%s/nope.conf' --check-config", srv.dir);
	cr_assert_eq(th_sh(prog, args, out), 2);
	cr_assert(th_file_contains(out, "cannot open config file"));
}

Test(nfs_config, bad_flags_are_usage_errors)
{
	char out[400];
	snprintf(out, sizeof(out), "%s/out.txt", srv.dir);
	cr_assert_eq(th_sh(prog, "--export / --port 99999 --check-config", out), 2);
	cr_assert(th_file_contains(out, "--port: rdma-port '99999' is not a port"));
	cr_assert_eq(th_sh(prog, "--export / --allow nonsense --check-config", out), 2);
	cr_assert(th_file_contains(out, "--allow"));
	cr_assert_eq(th_sh(prog, "--export / --log-level chatty --check-config", out), 2);
	cr_assert_eq(th_sh(prog, "--export / --log-level warning --check-config", out), 0);
}

Test(nfs_config, rpcbind_and_grace_keys)
{
	char text[1024], out[400];
	snprintf(text, sizeof(text), "[server]\nrpcbind = no\ngrace = 5\ntcp-port = 2049\n[export %s]\n",
		 srv.export_dir);
	cr_assert_eq(check(text, strlen(text), "", out), 0);
	cr_assert_eq(check(text, strlen(text), "--no-rpcbind --grace 0", out), 0);
	snprintf(text, sizeof(text), "grace = 3601\n[export %s]\n", srv.export_dir);
	refused(text, "grace '3601' is not a number in 0..3600");
	snprintf(text, sizeof(text), "rpcbind = maybe\n[export %s]\n", srv.export_dir);
	refused(text, "rpcbind 'maybe' is not yes or no");
}
