/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/peerlog.c - what a peer can make rrr-server write to its log,
 * against real server processes over TCP.
 *
 * Asserted: a MOUNT path with a newline, a "<0>" journal priority, a forged
 * "rrr-server: reloaded" line, a backslash, an escape sequence and bytes
 * that are not UTF-8 comes out as one line, escaped (\xNN, "\\"), and a long
 * one is cut with "..."; floods of refused MNTs (by the allow list, and of a
 * path that is no export) and of calls whose uid the server cannot take
 * write a few lines, which together account for every event ("(N more
 * since the last line)", and the line that says the count once the flood
 * stops).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "tests/lib/conf_server.h"
#include "tests/lib/raw_rpc.h"
#include "tests/lib/srcaddr.h"

static struct th_server srv;

static void fini(void)
{
	th_src_addr(NULL);
	th_cleanup(&srv);
}

TestSuite(nfs_peerlog, .fini = fini, .timeout = 120);

static void need_server(void)
{
	th_need_server();
}

static struct rrr_clnt *raw_tcp(const char *src)
{
	struct rrr_clnt *c = NULL;
	th_src_addr(src);
	cr_assert_eq(th_raw_connect("tcp", srv.mount_port, 10000, false, &c), 0, "connect: %s",
		     rrr_last_error());
	return c;
}

/* One call of @prog/@proc as AUTH_SYS @uid: args by @enc, result by @dec. */
static int raw_call(struct rrr_clnt *c, uint32_t prog, uint32_t proc, uint32_t uid, th_xdr_fn enc,
		    void *args, th_xdr_fn dec, void *res)
{
	struct rrr_rpc_cred cred;
	th_auth_sys(&cred, uid, 0);
	return th_raw_call(c, prog, proc, &cred, enc, args, dec, res);
}


/* The whole log (at most 1 MiB) into a static buffer. Never put all of it
 * in an assertion's message: Criterion's channel takes a few KiB. */
static const char *log_text(size_t *len)
{
	static char buf[1 << 20];
	FILE *f = fopen(srv.log, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The rate limit's promise for a kind: one line a second (plus the first
 * and the final count line), however slow the machine that ran @secs. */
static unsigned lines_allowed(double secs)
{
	return (unsigned)secs + 3u;
}

struct tally {
	unsigned lines;		/* lines of the kind */
	unsigned long long events; /* the events they account for */
};

/* The lines that contain @a (and @b when not NULL): each is one event plus
 * its "(N more since the last line)", or, ending in "N more since the last
 * line" without parentheses, N events whose line was held back. */
static struct tally tally(const char *a, const char *b)
{
	struct tally t = {0};
	const char *p = log_text(NULL);
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char line[4096];
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
		if (strstr(line, a) && (!b || strstr(line, b))) {
			const char *m = strstr(line, " more since the last line");
			t.lines++;
			if (!m) {
				t.events++;
			} else {
				const char *d = m;
				while (d > line && d[-1] >= '0' && d[-1] <= '9')
					d--;
				unsigned long long held = strtoull(d, NULL, 10);
				t.events += held + (d > line && d[-1] == '(' ? 1 : 0);
			}
		}
		p += n + (e ? 1 : 0);
	}
	return t;
}

/* Wait (10 s at most) until the lines of a kind account for @want events. */
static struct tally tally_wait(const char *a, const char *b, unsigned long long want)
{
	struct tally t = {0};
	time_t end = time(NULL) + 10;
	do {
		t = tally(a, b);
		if (t.events >= want)
			break;
		usleep(50000);
	} while (time(NULL) < end);
	return t;
}

Test(nfs_peerlog, a_mount_path_is_one_escaped_line)
{
	need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	struct rrr_clnt *c = raw_tcp(NULL);
	/* a journal priority first, a forged line after a newline, a
	 * backslash, a terminal escape, a byte that is not UTF-8, UTF-8, and
	 * enough after it to be cut */
	const char *head = "<0>x\n<0>rrr-server: reloaded /etc/rrr/rrr-server.conf: every client "
			   "allowed\\ \x1b[31mred\xff\xc3\xa9";
	const char *want_head = "\\x3c0>x\\x0a<0>rrr-server: reloaded /etc/rrr/rrr-server.conf: "
				"every client allowed\\\\ \\x1b[31mred\\xff\xc3\xa9";
	char evil[600], want[300];
	snprintf(evil, sizeof(evil), "%s%0300d", head, 0);
	snprintf(want, sizeof(want), "'%s%0*d...'", want_head, (int)(128 - strlen(want_head)), 0);
	cr_assert_eq(th_raw_mnt(c, evil, NULL), RRR_MNT3ERR_NOENT);
	rrr_clnt_destroy(c);
	cr_assert(th_log_wait(&srv, "MNT of", 10), "the refusal is logged");
	cr_assert_eq(th_server_stop(&srv), 0, "SIGTERM: clean exit");

	const char *text = log_text(NULL);
	const char *l = text;
	unsigned mnt_lines = 0;
	while (*l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		cr_assert_neq(l[0], '<', "a line starts with '<': %.*s", (int)n, l);
		cr_assert_neq(strncmp(l, "rrr-server: reloaded", 20), 0, "forged line: %.*s", (int)n,
			      l);
		cr_assert_lt(n, 400u, "a line of %zu bytes: %.60s...", n, l);
		if (memmem(l, n, "MNT of", 6))
			mnt_lines++;
		for (size_t i = 0; i < n; i++)
			cr_assert((unsigned char)l[i] >= 0x20 && l[i] != 0x7f,
				  "a control byte 0x%02x in: %.*s", (unsigned char)l[i], (int)n, l);
		l += n + (e ? 1 : 0);
	}
	cr_assert_eq(mnt_lines, 1, "one line for the MNT, not %u:\n%.2000s", mnt_lines, text);
	cr_assert(strstr(text, want), "the path escaped, UTF-8 kept, cut at 128 bytes:\n%s\n%.2000s",
		  want, text);
}

/* Many lines; each kind accounted for in full; the log stays small. */
Test(nfs_peerlog, refused_mnt_floods_write_a_few_lines_with_counts)
{
	need_server();
	char conf[400], b[400], lines[600];
	cr_assert_eq(th_mkdirs(&srv), 0);
	/* the export is open to all; b only to 127.0.0.2 (a client that no
	 * export admits is refused at connect, by the library) */
	snprintf(b, sizeof(b), "%s/b", srv.dir);
	cr_assert_eq(mkdir(b, 0755), 0);
	snprintf(lines, sizeof(lines), "root-squash = no\n[export %s]\nallow = 127.0.0.2\n", b);
	cr_assert_eq(th_conf_write(&srv, false, lines, conf), 0);
	cr_assert_eq(th_server_start_conf(&srv, conf), 0);
	struct rrr_clnt *c = raw_tcp("127.0.0.1");
	static char longp[1001];
	memset(longp, 'z', sizeof(longp) - 1);
	longp[0] = '/';
	double t0 = mono_s();
	for (int i = 0; i < 3000; i++) {
		cr_assert_eq(th_raw_mnt(c, b, NULL), RRR_MNT3ERR_ACCES);
		cr_assert_eq(th_raw_mnt(c, longp, NULL), RRR_MNT3ERR_NOENT);
	}
	rrr_clnt_destroy(c);
	struct tally a = tally_wait("allow list", NULL, 3000);
	struct tally n = tally_wait("MNT", "exports", 3000);
	unsigned allowed = lines_allowed(mono_s() - t0);
	size_t len;
	const char *text = log_text(&len);
	cr_assert_eq(a.events, 3000u, "allow list: %u lines for %llu refusals:\n%.2000s", a.lines,
		     a.events, text);
	cr_assert_eq(n.events, 3000u, "no export: %u lines for %llu refusals:\n%.2000s", n.lines, n.events,
		     text);
	cr_assert_leq(a.lines, allowed, "allow list: %u lines", a.lines);
	cr_assert_leq(n.lines, allowed, "no export: %u lines", n.lines);
	/* a few hundred bytes a line, against some 300 KB written verbatim */
	cr_assert_lt(len, 4096u + 2u * allowed * 512u, "the log grew to %zu bytes", len);
	cr_assert(strstr(text, "more since the last line"), "the held-back count is stated");
}

Test(nfs_peerlog, an_unmappable_uid_writes_a_few_lines)
{
	need_server();
	if (geteuid() != 0)
		cr_skip_test("acting as the caller needs root");
	cr_assert_eq(th_mkdirs(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	cr_assert(th_file_contains(srv.log, "requests run as their callers"));
	struct rrr_clnt *c = raw_tcp(NULL);
	struct rrr_nfs3_fh root;
	cr_assert_eq(th_raw_mnt(c, srv.export_dir, &root), RRR_MNT3_OK);
	static struct rrr_nfs3_fh_args a;
	static struct rrr_nfs3_getattr_res r;
	a.fh = root;
	unsigned failed = 0;
	double t0 = mono_s();
	for (int i = 0; i < 5000; i++)
		if (raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_GETATTR, 0xffffffffu,
			     TH_XF(rrr_nfs3_xdr_fh_args), &a, TH_XF(rrr_nfs3_xdr_getattr_res), &r) != 0)
			failed++;
	cr_assert_eq(failed, 5000u, "every call as uid 0xffffffff fails");
	cr_assert_eq(raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_GETATTR, 0, TH_XF(rrr_nfs3_xdr_fh_args),
			      &a, TH_XF(rrr_nfs3_xdr_getattr_res), &r), 0, "uid 0 still works");
	rrr_clnt_destroy(c);
	struct tally t = tally_wait("cannot act as", NULL, 5000);
	cr_assert_eq(t.events, 5000u, "%u lines for %llu calls:\n%.2000s", t.lines, t.events,
		     log_text(NULL));
	cr_assert_leq(t.lines, lines_allowed(mono_s() - t0), "%u lines for 5000 calls in %.1f s",
		      t.lines, mono_s() - t0);
}
