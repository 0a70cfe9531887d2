/* SPDX-License-Identifier: MIT */
/*
 * tests/fio/fio.c - fio with the rrr external ioengine (build/rrr-fio.so)
 * against a real rrr-server on the soft provider, over RPC-over-RDMA and
 * over TCP.
 *
 * Each test starts rrr-server on a fresh export with ephemeral ports,
 * writes a fio job file (the cells of examples/fio/, made small: a few MiB
 * a job) and runs the Debian fio binary on it with --output-format=terse,
 * one line per job. The assertions are on what fio measured and what the
 * server holds: the job's error field is 0, the KiB read and written are
 * exactly the job's size (a write job with verify=crc32c reads all of it
 * back through the engine and checks every block's CRC32C), a mixed job
 * moved both ways, and the file on the export has the job's size. The
 * verify test corrupts 4 bytes of the server's file behind fio's back and
 * expects fio's verify pass over the engine to fail (EILSEQ), which shows
 * the read-back comes from the server and is checked. The option tests
 * expect fio to fail with the engine's sentence; the failure tests, that a
 * failing init, open, READ or close (COMMIT) makes fio exit non-zero with
 * the errno as the job's error.
 *
 * Skips (saying why) when fio is not installed or the engine was not built
 * (no fio source: make deps-fio; sanitizer builds never build it).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/nfs_helpers.h"

#define FIO_TIMEOUT_S 120

static char engine[512];
static char fio_bin[512];
static struct th_server *live; /* stopped by fini() when a test fails */

static void fini(void)
{
	if (live)
		th_cleanup(live);
	live = NULL;
}

TestSuite(fio, .fini = fini);

/* fio on $PATH (or /usr/bin/fio). */
static bool find_fio(void)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL;

	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(fio_bin, sizeof(fio_bin), "%s/fio", d);
		if (!access(fio_bin, X_OK))
			return true;
	}
	return false;
}

static void need_squash(struct th_server *s, bool rdma, bool squash)
{
	int rc;

	if (!find_fio())
		cr_skip_test("fio is not installed (make deps-fio, or apt-get install fio)");
	if (!th_prog("rrr-fio.so", engine, sizeof(engine)))
		cr_skip_test("RRR_BUILD unset or rrr-fio.so not built (no fio source: make "
			     "deps-fio; sanitizer builds do not build the engine)");
	cr_assert_eq(th_mkdirs(s), 0);
	live = s;
	s->root_squash = squash;
	rc = th_server_start(s, rdma);
	if (rc == -ENOENT)
		cr_skip_test("rrr-server not built");
	cr_assert_eq(rc, 0, "rrr-server did not start (rc %d), log %s", rc, s->log);
}

static void need(struct th_server *s, bool rdma)
{
	need_squash(s, rdma, false);
}

/* One job's line of fio's terse (v3) output: 3;fio-3.33;name;group;error;
 * read KiB is field 6, write KiB field 47 (1-based). */
struct jobres {
	char name[64];
	int error;
	unsigned long long rkib, wkib;
};

static int parse_terse(const char *path, struct jobres *out, int cap)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	int n = 0;

	cr_assert(f, "no fio output %s", path);
	while (n < cap && fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok;
		int k = 0;

		if (strncmp(line, "3;", 2))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		for (tok = strtok_r(line, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			k++;
			if (k == 3)
				snprintf(out[n].name, sizeof(out[n].name), "%s", tok);
			else if (k == 5)
				out[n].error = atoi(tok);
			else if (k == 6)
				out[n].rkib = strtoull(tok, NULL, 10);
			else if (k == 47)
				out[n].wkib = strtoull(tok, NULL, 10);
		}
		n++;
	}
	fclose(f);
	return n;
}

/* Run fio on @jobfile (with @args before it, or NULL); stdout (terse) to
 * @out, stderr to @err. Returns fio's exit status. */
static int run_fio_args(const char *args, const char *jobfile, const char *out, const char *err)
{
	char cmd[4096];
	char *const argv[] = {"sh", "-c", cmd, NULL};

	snprintf(cmd, sizeof(cmd), "exec '%s' --output-format=terse %s '%s' 2>'%s'", fio_bin,
		 args ? args : "", jobfile, err);
	return th_run(argv, out, FIO_TIMEOUT_S);
}

static int run_fio(const char *jobfile, const char *out, const char *err)
{
	return run_fio_args(NULL, jobfile, out, err);
}

#define JOB_PATH 400 /* the size of a job's path buffers */

/* The paths of a job in @s's directory: its job file @name, fio's output
 * and its standard error (JOB_PATH bytes each). */
static void job_paths(const struct th_server *s, const char *name, char *jobfile, char *out,
		      char *err)
{
	snprintf(jobfile, JOB_PATH, "%s/%s", s->dir, name);
	snprintf(out, JOB_PATH, "%s/fio.out", s->dir);
	snprintf(err, JOB_PATH, "%s/fio.err", s->dir);
}

/* The [global] section every job file starts with. */
static void global(FILE *f, const struct th_server *s, bool rdma)
{
	fprintf(f,
		"[global]\n"
		"ioengine=external:%s\n"
		"host=127.0.0.1\n"
		"transport=%s\n"
		"port=%u\n"
		"mount_port=%u\n"
		"stonewall\n"
		"verify_state_save=0\n"
		"group_reporting=0\n",
		engine, rdma ? "rdma" : "tcp", rdma ? s->rdma_port : s->mount_port, s->mount_port);
}

/* Write the job file @path: the [global] section for @s (over RDMA with
 * @rdma), then the jobs of format @fmt. */
__attribute__((format(printf, 4, 5))) static void write_job(const char *path,
							     const struct th_server *s, bool rdma,
							     const char *fmt, ...)
{
	FILE *f = fopen(path, "w");
	va_list ap;

	cr_assert(f, "%s: %s", path, strerror(errno));
	global(f, s, rdma);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

struct cell {
	const char *name, *rw, *bs, *size, *extra;
	unsigned qd;
	bool verify;
};

/* The cells: sequential and random, read / write / randrw, bs 4k and 1m,
 * iodepth 1 and 32, verify=crc32c on every write-only cell. */
static const struct cell cells[] = {
    {"seq-write-4k-qd1", "write", "4k", "1m", NULL, 1, true},
    {"seq-write-1m-qd32", "write", "1m", "8m", NULL, 32, true},
    {"rand-write-4k-qd32", "randwrite", "4k", "2m", NULL, 32, true},
    {"rand-write-1m-qd1", "randwrite", "1m", "4m", NULL, 1, true},
    {"seq-read-1m-qd1", "read", "1m", "4m", NULL, 1, false},
    {"seq-read-4k-qd32", "read", "4k", "2m", NULL, 32, false},
    {"rand-read-4k-qd32", "randread", "4k", "2m", NULL, 32, false},
    {"rand-read-1m-qd32", "randread", "1m", "8m", NULL, 32, false},
    {"randrw-4k-qd32", "randrw", "4k", "2m", NULL, 32, false},
    {"randrw-1m-qd1", "randrw", "1m", "4m", NULL, 1, false},
    {"nconnect2-randwrite-4k-qd32", "randwrite", "4k", "2m", "nconnect=2", 32, true},
    {"subdir-write-64k-qd8", "write", "64k", "1m", "filename=d1/d2/f.dat", 8, true},
    /* COMMIT paths: fio's fsync every 8 writes and at the end; FILE_SYNC */
    {"fsync-write-4k-qd8", "randwrite", "4k", "1m", "fsync=8\nend_fsync=1", 8, true},
    {"filesync-write-64k-qd8", "write", "64k", "1m", "stable=filesync", 8, true},
};
#define NCELLS (sizeof(cells) / sizeof(cells[0]))

static unsigned long long kib(const char *size)
{
	return strtoull(size, NULL, 10) * 1024ull;
}

static void matrix(bool rdma, const char *extra_global)
{
	struct th_server s;
	struct jobres res[NCELLS + 2];
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], path[700];
	struct stat st;
	FILE *f;
	int n, rc;

	need(&s, rdma);
	job_paths(&s, "matrix.fio", jobfile, out, err);
	f = fopen(jobfile, "w");
	cr_assert(f);
	global(f, &s, rdma);
	if (extra_global)
		fprintf(f, "%s\n", extra_global);
	for (size_t i = 0; i < NCELLS; i++) {
		const struct cell *c = &cells[i];

		fprintf(f, "\n[%s]\nrw=%s\nbs=%s\nsize=%s\niodepth=%u\n", c->name, c->rw, c->bs,
			c->size, c->qd);
		if (!c->extra || strncmp(c->extra, "filename=", 9))
			fprintf(f, "filename=%s.dat\n", c->name);
		if (c->extra)
			fprintf(f, "%s\n", c->extra);
		if (c->verify)
			fprintf(f, "verify=crc32c\n");
	}
	fclose(f);
	rc = run_fio(jobfile, out, err);
	cr_assert_eq(rc, 0, "fio exited %d; see %s and %s (server log %s)", rc, err, out, s.log);
	n = parse_terse(out, res, (int)(NCELLS + 2));
	cr_assert_eq(n, (int)NCELLS, "fio reported %d jobs, want %zu (%s)", n, NCELLS, out);
	for (size_t i = 0; i < NCELLS; i++) {
		const struct cell *c = &cells[i];
		const struct jobres *r = &res[i];
		unsigned long long want = kib(c->size);

		cr_assert_str_eq(r->name, c->name);
		cr_assert_eq(r->error, 0, "%s: fio error %d (%s)", c->name, r->error, err);
		if (!strcmp(c->rw, "randrw")) {
			cr_assert_eq(r->rkib + r->wkib, want, "%s: %llu + %llu KiB, want %llu",
				     c->name, r->rkib, r->wkib, want);
			cr_assert(r->rkib > 0 && r->wkib > 0, "%s: moved only one way", c->name);
		} else if (strstr(c->rw, "write")) {
			cr_assert_eq(r->wkib, want, "%s: wrote %llu KiB, want %llu", c->name,
				     r->wkib, want);
			/* verify=crc32c read every block back */
			cr_assert_eq(r->rkib, c->verify ? want : 0, "%s: read %llu KiB", c->name,
				     r->rkib);
		} else {
			cr_assert_eq(r->rkib, want, "%s: read %llu KiB, want %llu", c->name,
				     r->rkib, want);
			cr_assert_eq(r->wkib, 0, "%s: wrote %llu KiB", c->name, r->wkib);
		}
		/* the server holds a file of the job's size (laid out for reads) */
		if (c->extra && !strncmp(c->extra, "filename=", 9))
			snprintf(path, sizeof(path), "%s/%s", s.export_dir, c->extra + 9);
		else
			snprintf(path, sizeof(path), "%s/%s.dat", s.export_dir, c->name);
		cr_assert_eq(stat(path, &st), 0, "%s: %s missing on the export", c->name, path);
		cr_assert_eq((unsigned long long)st.st_size, want * 1024, "%s: %s is %lld bytes",
			     c->name, path, (long long)st.st_size);
	}
	fini();
}

Test(fio, soft_rdma_matrix, .timeout = 300)
{
	matrix(true, NULL);
}

Test(fio, tcp_matrix, .timeout = 300)
{
	matrix(false, NULL);
}

/* The benchmark registration modes move the same bytes (verify checks). */
Test(fio, soft_rdma_bounce_and_persistent, .timeout = 120)
{
	struct th_server s;
	struct jobres res[4];
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH];
	int rc;

	need(&s, true);
	job_paths(&s, "reg.fio", jobfile, out, err);
	write_job(jobfile, &s, true, "rw=randwrite\nbs=64k\nsize=2m\niodepth=16\nverify=crc32c\n"
		  "[bounce]\nreg=bounce\nfilename=bounce.dat\n"
		  "[persistent]\nreg=persistent\nfilename=persistent.dat\n");
	rc = run_fio(jobfile, out, err);
	cr_assert_eq(rc, 0, "fio exited %d; see %s", rc, err);
	cr_assert_eq(parse_terse(out, res, 4), 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(res[i].error, 0, "%s: error %d", res[i].name, res[i].error);
		cr_assert_eq(res[i].wkib, 2048);
		cr_assert_eq(res[i].rkib, 2048);
	}
	cr_assert(th_file_contains(err, "UNSAFE"), "reg=persistent did not warn (%s)", err);
	fini();
}

/* fio's verify reads the server's bytes through the engine: 4 bytes
 * changed on the export behind fio's back fail the verify pass. */
Test(fio, verify_detects_corruption_on_the_server, .timeout = 120)
{
	struct th_server s;
	struct jobres res[2];
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], path[400];
	FILE *f;
	int rc;

	need(&s, true);
	job_paths(&s, "v.fio", jobfile, out, err);
	snprintf(path, sizeof(path), "%s/v.dat", s.export_dir);
	write_job(jobfile, &s, true,
		  "rw=write\nbs=4k\nsize=1m\niodepth=16\nverify=crc32c\nfilename=v.dat\n"
		  "[write]\ndo_verify=0\n[check]\nverify_only=1\n");
	rc = run_fio(jobfile, out, err);
	cr_assert_eq(rc, 0, "fio exited %d; see %s", rc, err);
	cr_assert_eq(parse_terse(out, res, 2), 2);
	cr_assert_eq(res[0].wkib, 1024);
	cr_assert_eq(res[1].error, 0);
	cr_assert_eq(res[1].rkib, 1024);

	f = fopen(path, "r+");
	cr_assert(f);
	cr_assert_eq(fseek(f, 300001, SEEK_SET), 0);
	cr_assert_eq(fwrite("XXXX", 1, 4, f), 4u);
	fclose(f);
	rc = run_fio_args("--section=check", jobfile, out, err);
	cr_assert_neq(rc, 0, "fio did not notice the corruption");
	cr_assert_eq(parse_terse(out, res, 2), 1);
	cr_assert_eq(res[0].error, EILSEQ, "verify pass error %d, want EILSEQ", res[0].error);
	cr_assert(th_file_contains(err, "verify"), "no verify failure in %s", err);
	fini();
}

/* unlink=1 removes the file on the export, and never a local file of the
 * same name (the job's file name is an absolute path that exists here). */
Test(fio, unlink_removes_on_the_export_only, .timeout = 120)
{
	struct th_server s;
	struct jobres res[2];
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], local[400], remote[700];
	struct stat st;
	FILE *f;
	int rc;

	need(&s, true);
	job_paths(&s, "u.fio", jobfile, out, err);
	snprintf(local, sizeof(local), "%s/u.dat", s.dir);
	snprintf(remote, sizeof(remote), "%s%s", s.export_dir, local);
	f = fopen(local, "w");
	cr_assert(f);
	fputs("local file, keep\n", f);
	fclose(f);
	write_job(jobfile, &s, true, "[keep]\nrw=write\nbs=4k\nsize=64k\nfilename=%s\n", local);
	rc = run_fio(jobfile, out, err);
	cr_assert_eq(rc, 0, "fio exited %d; see %s", rc, err);
	cr_assert_eq(parse_terse(out, res, 2), 1);
	cr_assert_eq(res[0].wkib, 64);
	cr_assert_eq(stat(remote, &st), 0, "%s not written on the export", remote);
	cr_assert_eq(st.st_size, 65536);
	f = fopen(jobfile, "a");
	cr_assert(f);
	fprintf(f, "unlink=1\n");
	fclose(f);
	rc = run_fio(jobfile, out, err);
	cr_assert_eq(rc, 0, "fio exited %d; see %s", rc, err);
	cr_assert_neq(stat(remote, &st), 0, "unlink=1 left %s on the export", remote);
	cr_assert_eq(stat(local, &st), 0, "unlink=1 removed the local %s", local);
	cr_assert(th_file_contains(local, "local file, keep"));
	fini();
}

/* Wrong options and an unreachable server fail the job with a sentence. */
Test(fio, bad_options_and_no_server_fail_with_a_reason, .timeout = 120)
{
	static const struct {
		const char *opt, *want;
	} bad[] = {
	    {"transport=ib", "transport=ib: use rdma or tcp"},
	    {"reg=sometimes", "reg=sometimes: use per-io, bounce or persistent"},
	    {"transport=tcp\nreg=bounce", "applies to transport=rdma only"},
	    {"stable=maybe", "stable=maybe"},
	    {"export=/no/such/export", "mount 127.0.0.1:/no/such/export"},
	};
	struct th_server s;
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH];

	need(&s, true);
	job_paths(&s, "bad.fio", jobfile, out, err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		write_job(jobfile, &s, true,
			  "[bad]\nrw=read\nbs=4k\nsize=64k\nfilename=x.dat\n%s\n", bad[i].opt);
		rc = run_fio(jobfile, out, err);
		cr_assert_neq(rc, 0, "fio accepted %s", bad[i].opt);
		cr_assert(th_file_contains(err, bad[i].want), "%s: no '%s' in %s", bad[i].opt,
			  bad[i].want, err);
	}
	/* nobody listens on the server's MOUNT port once it is gone */
	th_server_stop(&s);
	{
		int rc;

		write_job(jobfile, &s, true,
			  "[nobody]\nrw=read\nbs=4k\nsize=64k\nfilename=x.dat\nrrr_timeout=2000\n");
		rc = run_fio(jobfile, out, err);
		cr_assert_neq(rc, 0);
		cr_assert(th_file_contains(err, "rrr: mount 127.0.0.1:/"), "no mount failure in %s",
			  err);
	}
	fini();
}

/*
 * A failing engine fails its job: fio exits non-zero and the job's error
 * (terse field 5) is the errno of what failed, for each of the engine's
 * failure paths that a test can reach for sure.
 */
static void expect_job_error(const char *jobfile, const char *out, const char *err, int want,
			     const char *words)
{
	struct jobres res[2];
	int rc = run_fio(jobfile, out, err);

	cr_assert_neq(rc, 0, "fio exited 0 (%s)", err);
	cr_assert_eq(parse_terse(out, res, 2), 1, "one job in %s", out);
	cr_assert_eq(res[0].error, want, "job error %d, want %d (%s)", res[0].error, want, err);
	cr_assert(th_file_contains(err, words), "no '%s' in %s", words, err);
}

/* open: root squashed, the export root-owned 0755: CREATE is refused */
Test(fio, a_failing_open_fails_the_job, .timeout = 120)
{
	struct th_server s;
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], path[700];
	struct stat st;

	need_squash(&s, false, true);
	job_paths(&s, "open.fio", jobfile, out, err);
	write_job(jobfile, &s, false, "[open]\nrw=write\nbs=4k\nsize=64k\nfilename=x.dat\n");
	expect_job_error(jobfile, out, err, EACCES, "NFS3ERR_ACCES");
	snprintf(path, sizeof(path), "%s/x.dat", s.export_dir);
	cr_assert_neq(stat(path, &st), 0, "nothing was created");
	fini();
}

/* init: nobody listens */
Test(fio, a_failing_init_fails_the_job, .timeout = 120)
{
	struct th_server s;
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH];

	need(&s, false);
	job_paths(&s, "init.fio", jobfile, out, err);
	th_server_stop(&s);
	write_job(jobfile, &s, false,
		  "[init]\nrw=write\nbs=4k\nsize=64k\nfilename=x.dat\nrrr_timeout=2000\n");
	expect_job_error(jobfile, out, err, ECONNREFUSED, "rrr: mount 127.0.0.1:/");
	fini();
}

/* I/O: a file the squashed root may not read (uid 1000's, mode 0200),
 * already as long as the job, so open does not write to it: READ fails
 * with the server's NFS3ERR_ACCES, which the job reports as EACCES */
Test(fio, a_failing_read_fails_the_job, .timeout = 120)
{
	struct th_server s;
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], path[700];

	need_squash(&s, false, true);
	if (geteuid() != 0)
		cr_skip_test("giving the file to uid 1000 needs root");
	job_paths(&s, "io.fio", jobfile, out, err);
	snprintf(path, sizeof(path), "%s/r.dat", s.export_dir);
	cr_assert_eq(th_random_file(path, 65536, 7), 0);
	cr_assert_eq(chown(path, 1000, 1000), 0);
	cr_assert_eq(chmod(path, 0200), 0);
	write_job(jobfile, &s, false, "[io]\nrw=read\nbs=4k\nsize=64k\nfilename=r.dat\n");
	expect_job_error(jobfile, out, err, EACCES, "Permission denied");
	fini();
}

/* close: the job's writes are UNSTABLE, so closing the file sends COMMIT.
 * fio thinks for 10 s after the last of its 16 blocks; once the server's
 * file has all the bytes (a bounded poll, far inside those 10 s) the test
 * stops the server (SIGSTOP), so that COMMIT, and only it, times out. */
Test(fio, a_failing_close_fails_the_job, .timeout = 120)
{
	struct th_server s;
	struct jobres res[2];
	char jobfile[JOB_PATH], out[JOB_PATH], err[JOB_PATH], path[700], cmd[2048];
	struct stat st = {0};
	pid_t pid;
	int status = -1;

	need(&s, false);
	job_paths(&s, "close.fio", jobfile, out, err);
	snprintf(path, sizeof(path), "%s/c.dat", s.export_dir);
	write_job(jobfile, &s, false,
		  "[close]\nrw=write\nbs=4k\nsize=64k\nfilename=c.dat\nrrr_timeout=2000\n"
		  "thinktime=10s\nthinktime_blocks=16\n");
	snprintf(cmd, sizeof(cmd), "exec '%s' --output-format=terse '%s' >'%s' 2>'%s'", fio_bin,
		 jobfile, out, err);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		closefrom(3);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 400; i++) { /* 8 s at most */
		if (stat(path, &st) == 0 && st.st_size == 65536)
			break;
		usleep(20000);
	}
	bool all = st.st_size == 65536;
	kill(s.pid, SIGSTOP);
	for (int i = 0; i < 3000 && waitpid(pid, &status, WNOHANG) == 0; i++) /* 60 s */
		usleep(20000);
	kill(s.pid, SIGCONT);
	if (!WIFEXITED(status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		cr_assert_fail("fio did not finish (%s)", err);
	}
	cr_assert(all, "the writes did not all arrive in 8 s (%s)", err);
	cr_assert_neq(WEXITSTATUS(status), 0, "fio exited 0 (%s)", err);
	cr_assert_eq(parse_terse(out, res, 2), 1);
	cr_assert_eq(res[0].wkib, 64);
	cr_assert_eq(res[0].error, ETIMEDOUT, "job error %d (%s)", res[0].error, err);
	cr_assert(th_file_contains(err, "rrr: COMMIT"), "no COMMIT failure in %s", err);
	fini();
}
