/* SPDX-License-Identifier: MIT */
/*
 * bench/soak.c - rrr-bench soak: many NFSv3 clients writing, reading back
 * and verifying files on one rrr-server while connections drop and the
 * server restarts; reports corrupted and lost bytes, failed calls, RSS and
 * fd counts, and the command that reproduces the run.
 *
 * Normal operation. Set-up spawns build/rrr-server on a fresh temporary
 * export and state directory with ephemeral ports (read back from its port
 * file), or uses a running server given with --host (then there is no
 * restart and no server-side figures). Each of --clients threads mounts the
 * export once (rrr_nfs3_mount, one RPC-over-RDMA connection on the soft
 * provider, its own device) with the soft provider's fault injection in its
 * provider options (fault_seed = --seed + client index, fault_drop_ppm =
 * --drop-ppm, plus --client-opts: transport/soft/fault.c; the server gets
 * --server-drop-ppm and --server-opts), then loops until the deadline over
 * its --files files: fill the write buffer with a pattern keyed by (seed,
 * client, file, generation), CREATE, rrr_nfs3_write_all() with --qd WRITEs
 * of --io-size in flight (UNSTABLE + COMMIT; a changed verifier after the
 * restart rewrites with FILE_SYNC), remember the generation and the
 * rrr_crc32c() of the buffer, rrr_nfs3_read_all() with --qd READs, and
 * compare CRCs (on a mismatch the differing bytes are counted). After the
 * deadline every client reads each of its files once more against the
 * last generation it wrote (the final pass: data lost across the restart
 * shows here). The main thread restarts the server at --restart-at: SIGTERM,
 * wait for it to exit, start it again on the same export, state directory
 * and ports. It samples its own and the server's RSS and open fds once
 * every client has verified its first file and a tenth of the run has
 * passed, before the restart (start), and after the final pass,
 * connections still up (end).
 *
 * Failures, counted apart. A write or read of a file, a CREATE or a mount
 * that returns an error is a failed operation. By default the clients
 * re-send every outstanding call after a reconnect with the same xid
 * (rrr_clnt_opts.fail_fast off; the server's duplicate request cache
 * answers a re-sent non-idempotent call that already ran), so the library
 * promises that no call fails because a connection dropped or the server
 * restarted: any failed operation fails the run. --fail-fast mounts with
 * rrr_nfs3_opts.fail_fast (non-idempotent calls on a dropped connection
 * complete with -ECONNRESET): then failed operations are expected, and only
 * reported. Either way the soak retries a failed operation (after 20 ms,
 * growing to 200 ms) and counts it; one still failing 120 s after the
 * deadline is abandoned (a failure). Corrupted bytes (read back different from what was
 * written and committed) and lost bytes (a read that ended short of what
 * was committed) always fail the run. A run also fails when a client never
 * verified a file, or the restart did not bring the server back.
 *
 * --damage corrupt|truncate checks the checks: before the final pass,
 * client 0's first file is changed in the export behind the server's back
 * (a byte flipped, or its second half cut off), and the run must count it
 * and fail (tests/bench/soak.c).
 *
 * Exit status: 0 pass, 1 fail, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rrr/crc32c.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "bench.h"
#include "bench_common.h"

#define SOAK_MAX_CLIENTS 256u
#define SOAK_MAX_QD	 128u
#define SOAK_GRACE_NS	 (120ull * 1000000000ull) /* retries after the deadline */

struct soak_cfg {
	unsigned clients, qd, files;
	uint64_t io_size, file_size;
	double seconds, restart_at; /* restart_at < 0: no restart */
	uint32_t seed, drop_ppm, server_drop_ppm;
	bool resend, fail_fast, keep; /* resend: failed operations fail the run */
	int damage;		      /* DAMAGE_*: a self-test of the checks (--damage) */
	int timeout_ms;
	const char *server_path, *host, *port, *mount_port, *export_path;
	const char *client_opts, *server_opts; /* more provider options (faults) */
};

enum { DAMAGE_NONE = 0, DAMAGE_CORRUPT, DAMAGE_TRUNCATE };

struct soak_file {
	uint64_t gen; /* generation last committed (0: none yet) */
	uint32_t crc; /* rrr_crc32c of it */
};

struct soak;

struct soak_client {
	struct soak *s;
	unsigned idx;
	pthread_t thr;
	bool started;
	struct rrr_nfs3 *m;
	char popts[640];
	uint8_t *wbuf, *rbuf;
	struct soak_file *f;
	atomic_bool mounted;
	atomic_bool warm; /* a first file written and verified */
	/* results */
	uint64_t rounds, written, verified, final_verified, corrupted, lost;
	uint64_t failed_write, failed_read, failed_create, failed_mount, abandoned;
	char last_err[200];
};

struct soak {
	struct soak_cfg cfg;
	uint64_t t0, deadline, hard;
	atomic_bool stop;
	/* the server (spawned) */
	char dir[PATH_MAX];
	char srv_path[PATH_MAX];
	char port[16], mport[16];
	pid_t pid;
	unsigned restarts;
	int restart_failed; /* 0 ok; else why */
	int term_status[2]; /* exit status of each SIGTERM'd server */
	unsigned nterm;
	struct soak_client *c;
};

/* --- helpers ------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The bytes of (client, file, generation): a keyed xorshift stream. */
static void fill(uint8_t *buf, uint64_t len, uint32_t seed, unsigned client, unsigned file,
		 uint64_t gen)
{
	uint64_t x =
	    splitmix(((uint64_t)seed << 32) ^ ((uint64_t)client << 20) ^ file ^ (gen << 40) ^ gen) |
	    1;

	for (uint64_t i = 0; i < len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
	}
}

static uint64_t diff_bytes(const uint8_t *a, const uint8_t *b, uint64_t len)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < len; i++)
		n += a[i] != b[i];
	return n;
}

static long proc_fds(pid_t pid)
{
	char p[64];
	struct dirent *de;
	long n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory stream's own fd, when it is ours */
}

/* --- the server ------------------------------------------------------------------ */

/* Start rrr-server on s->dir/{export,state}; ports "0" the first time, the
 * same ones after. Waits (15 s at most) for its port file. */
static int spawn_server(struct soak *s)
{
	char pfile[PATH_MAX + 16], state[PATH_MAX + 16], exp[PATH_MAX + 16], log[PATH_MAX + 16];
	char popts[640];
	unsigned rd, mt;
	int rc, st;

	snprintf(pfile, sizeof(pfile), "%s/ports", s->dir);
	snprintf(state, sizeof(state), "%s/state", s->dir);
	snprintf(exp, sizeof(exp), "%s/export", s->dir);
	snprintf(log, sizeof(log), "%s/server.log", s->dir);
	snprintf(popts, sizeof(popts), "fault_seed=%u,fault_drop_ppm=%u%s%s", s->cfg.seed + 100000u,
		 s->cfg.server_drop_ppm, s->cfg.server_opts ? "," : "",
		 s->cfg.server_opts ? s->cfg.server_opts : "");
	unlink(pfile);
	s->pid = fork();
	if (s->pid < 0) {
		s->pid = 0;
		return -errno;
	}
	if (!s->pid) {
		const char *av[24];
		int k, fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		k = rrr__bench_server_argv(av, s->srv_path, exp, state, s->port[0] ? s->port : "0",
					   s->mport[0] ? s->mport : "0", pfile);
		if (s->cfg.server_drop_ppm || s->cfg.server_opts) {
			av[k++] = "--provider-opts";
			av[k++] = popts;
		}
		av[k] = NULL;
		execv(s->srv_path, (char *const *)av);
		_exit(127);
	}
	rc = rrr__bench_server_ports(s->pid, pfile, 15, &rd, &mt);
	if (rc == 0 && rd) {
		/* written once: clients read them without a lock */
		if (!s->port[0]) {
			snprintf(s->port, sizeof(s->port), "%u", rd);
			snprintf(s->mport, sizeof(s->mport), "%u", mt);
		}
		return 0;
	}
	if (rc == -ECHILD) {
		s->pid = 0;
		return -ECONNREFUSED;
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	s->pid = 0;
	return -ETIMEDOUT;
}

/* SIGTERM, wait 10 s, then SIGKILL. Returns the wait status, or -1 killed. */
static int stop_server(struct soak *s)
{
	int st = 0;

	if (s->pid <= 0)
		return 0;
	kill(s->pid, SIGTERM);
	for (int i = 0; i < 1000; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = 0;
			return st;
		}
		usleep(10000);
	}
	kill(s->pid, SIGKILL);
	waitpid(s->pid, &st, 0);
	s->pid = 0;
	return -1;
}

static void print_server_log(struct soak *s)
{
	char log[PATH_MAX + 16], buf[2048];
	size_t n;
	FILE *f;

	snprintf(log, sizeof(log), "%s/server.log", s->dir);
	f = fopen(log, "r");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "rrr-bench soak: server log (%s), first bytes:\n%s\n", log, buf);
}

/* --- a client ------------------------------------------------------------------ */

static bool past(const struct soak *s, uint64_t t)
{
	(void)s;
	return rrr__bench_now_ns() >= t;
}

static void note(struct soak_client *c, const char *what, int rc)
{
	const char *e = rrr_last_error();
	uint32_t st = rrr_nfs3_last_status(); /* this thread's failing call */

	if (snprintf(c->last_err, sizeof(c->last_err), "%s: %s%s%s", what,
		     st ? rrr_nfs3_strstat(st) : strerror(-rc), e ? ": " : "",
		     e ? e : "") < 0)
		c->last_err[0] = '\0';
}

/* Back off after the @n th failure in a row; false once past the grace. */
static bool again(struct soak_client *c, unsigned n)
{
	unsigned ms = 20u * (n < 10 ? n : 10);

	if (past(c->s, c->s->hard)) {
		c->abandoned++;
		return false;
	}
	usleep(ms * 1000u);
	return true;
}

static int do_mount(struct soak_client *c)
{
	struct soak *s = c->s;
	struct rrr_nfs3_opts mo;

	rrr_nfs3_opts_init(&mo);
	mo.transport = "rdma";
	mo.provider = "soft";
	mo.provider_opts = c->popts;
	mo.host = s->cfg.host ? s->cfg.host : "127.0.0.1";
	mo.port = s->port;
	mo.mount_port = s->mport;
	mo.export_path = s->cfg.export_path ? s->cfg.export_path : "/";
	mo.rsize = mo.wsize = (uint32_t)s->cfg.io_size;
	mo.timeout_ms = s->cfg.timeout_ms;
	mo.fail_fast = s->cfg.fail_fast;
	mo.uid = getuid();
	mo.gid = getgid();
	for (unsigned n = 1;; n++) {
		int rc = rrr_nfs3_mount(&mo, &c->m);

		if (!rc)
			return 0;
		c->m = NULL;
		c->failed_mount++;
		note(c, "mount", rc);
		if (!again(c, n))
			return rc;
	}
}

static void file_name(struct soak_client *c, unsigned k, char *buf, size_t len)
{
	snprintf(buf, len, "soak-%u-c%u-f%u", c->s->cfg.seed, c->idx, k);
}

/* Write generation @gen of file @k until it is committed. */
static int write_file(struct soak_client *c, unsigned k, uint64_t gen)
{
	struct soak *s = c->s;
	uint64_t len = s->cfg.file_size;
	struct rrr_nfs3_fh fh;
	char name[96];
	int rc;

	fill(c->wbuf, len, s->cfg.seed, c->idx, k, gen);
	file_name(c, k, name, sizeof(name));
	/* being overwritten: the old generation is no longer promised (an
	 * abandoned rewrite must not read as corruption in the final pass) */
	c->f[k].gen = 0;
	for (unsigned n = 1;; n++) {
		rc = rrr_nfs3_create(c->m, rrr_nfs3_root(c->m), name, 0644, false, &fh);
		if (rc) {
			c->failed_create++;
			note(c, "CREATE", rc);
		} else {
			rc = rrr_nfs3_write_all(c->m, &fh, 0, c->wbuf, len, s->cfg.qd, 0,
						RRR_NFS3_UNSTABLE, NULL, NULL);
			if (!rc)
				break;
			c->failed_write++;
			note(c, "write", rc);
		}
		if (!again(c, n))
			return rc;
	}
	c->f[k].gen = gen;
	c->f[k].crc = rrr_crc32c(0, c->wbuf, len);
	c->written += len;
	return 0;
}

/* Read file @k back and compare with its committed generation, whose
 * bytes are in c->wbuf when @have_pattern (else they are made again). */
static int verify_file(struct soak_client *c, unsigned k, bool have_pattern, uint64_t *ok_bytes)
{
	struct soak *s = c->s;
	uint64_t len = s->cfg.file_size;
	struct rrr_nfs3_fh fh;
	char name[96];
	size_t done = 0;
	int rc;

	if (!c->f[k].gen)
		return 0;
	file_name(c, k, name, sizeof(name));
	for (unsigned n = 1;; n++) {
		rc = rrr_nfs3_lookup(c->m, rrr_nfs3_root(c->m), name, &fh, NULL);
		if (rc) {
			c->failed_read++;
			note(c, "LOOKUP", rc);
		} else {
			memset(c->rbuf, 0, len);
			done = 0;
			rc = rrr_nfs3_read_all(c->m, &fh, 0, c->rbuf, len, s->cfg.qd, 0, &done,
					       NULL, NULL);
			if (!rc)
				break;
			c->failed_read++;
			note(c, "read", rc);
		}
		if (rc == -ENOENT && rrr_nfs3_last_status() == RRR_NFS3ERR_NOENT) {
			/* the committed file is gone: all of it is lost */
			c->lost += len;
			return 0;
		}
		if (!again(c, n))
			return rc;
	}
	if (done < len) {
		c->lost += len - done;
		snprintf(c->last_err, sizeof(c->last_err), "file %s: %zu of %llu bytes read back",
			 name, done, (unsigned long long)len);
	}
	if (rrr_crc32c(0, c->rbuf, done) != c->f[k].crc || done < len) {
		if (!have_pattern)
			fill(c->wbuf, len, s->cfg.seed, c->idx, k, c->f[k].gen);
		uint64_t bad = diff_bytes(c->wbuf, c->rbuf, done);

		if (bad) {
			c->corrupted += bad;
			snprintf(c->last_err, sizeof(c->last_err),
				 "file %s generation %llu: %llu bytes differ", name,
				 (unsigned long long)c->f[k].gen, (unsigned long long)bad);
		}
		*ok_bytes += done - bad;
		return 0;
	}
	*ok_bytes += len;
	return 0;
}

/* --damage: change client 0's file 0 behind the server's back, in the
 * export, before the final pass: one byte flipped in its middle (corrupt)
 * or its second half cut off (truncate). The final pass must count it. */
static void damage(struct soak_client *c)
{
	struct soak *s = c->s;
	uint64_t len = s->cfg.file_size;
	char name[96], path[PATH_MAX + 128];
	uint8_t b;
	int fd;

	if (!c->f[0].gen || !s->dir[0])
		return;
	file_name(c, 0, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/export/%s", s->dir, name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	if (s->cfg.damage == DAMAGE_TRUNCATE) {
		if (ftruncate(fd, (off_t)(len / 2)) == 0)
			printf("damage: %s cut to %llu bytes\n", path,
			       (unsigned long long)(len / 2));
	} else if (pread(fd, &b, 1, (off_t)(len / 2)) == 1) {
		b ^= 0x5a;
		if (pwrite(fd, &b, 1, (off_t)(len / 2)) == 1)
			printf("damage: %s byte %llu flipped\n", path,
			       (unsigned long long)(len / 2));
	}
	close(fd);
}

static void *client_main(void *arg)
{
	struct soak_client *c = arg;
	struct soak *s = c->s;
	uint64_t gen = 0;

	if (do_mount(c))
		return NULL;
	atomic_store(&c->mounted, true);
	while (!atomic_load(&s->stop) && !past(s, s->deadline)) {
		unsigned k = (unsigned)(c->rounds % s->cfg.files);

		gen++;
		if (write_file(c, k, gen) || verify_file(c, k, true, &c->verified))
			break;
		c->rounds++;
		atomic_store(&c->warm, true);
	}
	if (s->cfg.damage && c->idx == 0)
		damage(c);
	/* the final pass: every file against its last committed generation */
	for (unsigned k = 0; k < s->cfg.files; k++)
		if (verify_file(c, k, false, &c->final_verified))
			break;
	return NULL;
}

/* --- options, report ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-bench soak [options]\n\n"
		"N clients x QD write files on one rrr-server, read them back and verify\n"
		"their CRC32C, while the soft provider drops connections (fault injection)\n"
		"and the server is restarted (SIGTERM, then started again on the same state\n"
		"dir, export and ports). Exit 0 when no byte was corrupted or lost.\n\n"
		"  --clients N         client connections, one thread each (default 4, max %u)\n"
		"  --qd N              READs/WRITEs in flight per client (default 8, max %u)\n"
		"  --io-size SIZE      rsize/wsize (default 64k)\n"
		"  --file-size SIZE    bytes per file (default qd x io-size)\n"
		"  --files N           files per client, written in turn (default 2)\n"
		"  --seconds S         write/verify for S seconds, then a final pass (default 60)\n"
		"  --restart-at S      restart the server S seconds in (default seconds/2;\n"
		"                      -1: never)\n"
		"  --seed N            seed of the data and of the faults (default 1)\n"
		"  --drop-ppm N        clients' fault_drop_ppm (default 200; 0: no drops)\n"
		"  --server-drop-ppm N the server's fault_drop_ppm (default 0)\n"
		"  --client-opts STR   more soft provider options for the clients, e.g.\n"
		"                      fault_stall_ms=50,fault_stall_ppm=100\n"
		"  --server-opts STR   the same for the server\n"
		"  --timeout-ms N      call timeout (default 10000)\n"
		"  --fail-fast         mount with fail_fast: a connection loss fails the\n"
		"                      non-idempotent calls in flight (no re-send); failed\n"
		"                      operations are then retried and reported, not failures\n"
		"  --resend            the default: the clients re-send every outstanding call\n"
		"                      after a reconnect, and any failed operation fails the run\n"
		"  --server PATH       rrr-server to spawn (default: next to rrr-bench)\n"
		"  --host H --port P --mount-port M --export PATH\n"
		"                      use a running server instead (no restart)\n"
		"  --keep              keep the temporary export and server log\n"
		"  --damage corrupt|truncate\n"
		"                      self-test of the checks: before the final pass, flip\n"
		"                      a byte of (or cut in half) client 0's first file in the\n"
		"                      export; the run must then FAIL (not with --host)\n\n"
		"Goal (docs/reliability.md): rrr-bench soak --clients 64 --qd 32 --seconds 600\n"
		"with 0 corrupted and 0 lost bytes, 0 failed operations, RSS and fds flat.\n",
		SOAK_MAX_CLIENTS, SOAK_MAX_QD);
}

static int parse_uint(const char *name, const char *v, unsigned long lo, unsigned long hi,
		      unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(v, &end, 0);
	if (errno || *end || end == v || *out < lo || *out > hi) {
		fprintf(stderr, "rrr-bench soak: --%s takes %lu .. %lu, not '%s'\n", name, lo, hi,
			v);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct soak_cfg *cfg)
{
	static const struct option lopts[] = {
	    {"clients", required_argument, NULL, 'c'},
	    {"qd", required_argument, NULL, 'q'},
	    {"io-size", required_argument, NULL, 'i'},
	    {"file-size", required_argument, NULL, 'F'},
	    {"files", required_argument, NULL, 'f'},
	    {"seconds", required_argument, NULL, 's'},
	    {"restart-at", required_argument, NULL, 'r'},
	    {"seed", required_argument, NULL, 'S'},
	    {"drop-ppm", required_argument, NULL, 'd'},
	    {"server-drop-ppm", required_argument, NULL, 'D'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"client-opts", required_argument, NULL, 'o'},
	    {"server-opts", required_argument, NULL, 'O'},
	    {"resend", no_argument, NULL, 'R'},
	    {"fail-fast", no_argument, NULL, 'A'},
	    {"server", required_argument, NULL, 'P'},
	    {"host", required_argument, NULL, 'H'},
	    {"port", required_argument, NULL, 'p'},
	    {"mount-port", required_argument, NULL, 'm'},
	    {"export", required_argument, NULL, 'e'},
	    {"keep", no_argument, NULL, 'k'},
	    {"damage", required_argument, NULL, 'x'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct rrr__bench_opts ob = {.cmd = "soak", .lopts = lopts, .usage = usage};
	bool restart_set = false;
	unsigned long v;
	char *end;
	int opt;

	memset(cfg, 0, sizeof(*cfg));
	cfg->clients = 4;
	cfg->qd = 8;
	cfg->io_size = 64 * 1024;
	cfg->files = 2;
	cfg->seconds = 60;
	cfg->seed = 1;
	cfg->drop_ppm = 200;
	cfg->timeout_ms = 10000;
	cfg->resend = true;
	while ((opt = rrr__bench_opt_next(&ob, argc, argv)) > 0) {
		switch (opt) {
		case 'c':
			if (parse_uint("clients", optarg, 1, SOAK_MAX_CLIENTS, &v))
				return 2;
			cfg->clients = (unsigned)v;
			break;
		case 'q':
			if (parse_uint("qd", optarg, 1, SOAK_MAX_QD, &v))
				return 2;
			cfg->qd = (unsigned)v;
			break;
		case 'f':
			if (parse_uint("files", optarg, 1, 1024, &v))
				return 2;
			cfg->files = (unsigned)v;
			break;
		case 'i':
		case 'F': {
			uint64_t sz;

			if (rrr__bench_parse_size(optarg, &sz) || !sz ||
			    sz > (opt == 'i' ? RRR_NFS3_MAX_DATA : (1ull << 30))) {
				fprintf(stderr, "rrr-bench soak: bad --%s '%s'\n",
					opt == 'i' ? "io-size (4k .. 1m)" : "file-size (.. 1g)",
					optarg);
				return 2;
			}
			if (opt == 'i')
				cfg->io_size = sz;
			else
				cfg->file_size = sz;
			break;
		}
		case 's':
		case 'r': {
			double d;

			errno = 0;
			d = strtod(optarg, &end);
			if (errno || *end || end == optarg || d > 1e6 ||
			    (opt == 's' ? d <= 0 : d < -1)) {
				fprintf(stderr, "rrr-bench soak: bad --%s '%s'\n",
					opt == 's' ? "seconds" : "restart-at", optarg);
				return 2;
			}
			if (opt == 's') {
				cfg->seconds = d;
			} else {
				cfg->restart_at = d;
				restart_set = true;
			}
			break;
		}
		case 'S':
			if (parse_uint("seed", optarg, 0, UINT32_MAX / 2, &v))
				return 2;
			cfg->seed = (uint32_t)v;
			break;
		case 'd':
		case 'D':
			if (parse_uint(opt == 'd' ? "drop-ppm" : "server-drop-ppm", optarg, 0,
				       1000000, &v))
				return 2;
			if (opt == 'd')
				cfg->drop_ppm = (uint32_t)v;
			else
				cfg->server_drop_ppm = (uint32_t)v;
			break;
		case 't':
			if (parse_uint("timeout-ms", optarg, 100, 600000, &v))
				return 2;
			cfg->timeout_ms = (int)v;
			break;
		case 'o':
		case 'O':
			if (strlen(optarg) > 500) {
				fprintf(stderr, "rrr-bench soak: --%s is at most 500 characters\n",
					opt == 'o' ? "client-opts" : "server-opts");
				return 2;
			}
			if (opt == 'o')
				cfg->client_opts = optarg;
			else
				cfg->server_opts = optarg;
			break;
		case 'R':
			cfg->resend = true;
			cfg->fail_fast = false;
			break;
		case 'A':
			cfg->fail_fast = true;
			cfg->resend = false;
			break;
		case 'P':
			cfg->server_path = optarg;
			break;
		case 'H':
			cfg->host = optarg;
			break;
		case 'p':
			cfg->port = optarg;
			break;
		case 'm':
			cfg->mount_port = optarg;
			break;
		case 'e':
			cfg->export_path = optarg;
			break;
		case 'k':
			cfg->keep = true;
			break;
		case 'x':
			if (!strcmp(optarg, "corrupt")) {
				cfg->damage = DAMAGE_CORRUPT;
			} else if (!strcmp(optarg, "truncate")) {
				cfg->damage = DAMAGE_TRUNCATE;
			} else {
				fprintf(stderr,
					"rrr-bench soak: --damage is corrupt or truncate\n");
				return 2;
			}
			break;
		}
	}
	if (opt < 0)
		return ob.exit;
	if (cfg->io_size < 4096) {
		fprintf(stderr, "rrr-bench soak: --io-size is 4k .. 1m\n");
		return 2;
	}
	if (!cfg->file_size)
		cfg->file_size = cfg->qd * cfg->io_size;
	if (!restart_set)
		cfg->restart_at = cfg->host ? -1 : cfg->seconds / 2;
	if (cfg->host && cfg->restart_at >= 0) {
		fprintf(stderr, "rrr-bench soak: --restart-at needs a server the soak starts "
				"(not --host)\n");
		return 2;
	}
	if (cfg->host && cfg->damage) {
		fprintf(stderr, "rrr-bench soak: --damage needs a server the soak starts "
				"(not --host)\n");
		return 2;
	}
	if (cfg->restart_at >= cfg->seconds) {
		fprintf(stderr, "rrr-bench soak: --restart-at must be before --seconds\n");
		return 2;
	}
	return -1;
}

/* The options that reproduce this run, every default spelled out. */
static void print_repro(const struct soak_cfg *c)
{
	printf("reproduce: rrr-bench soak --clients %u --qd %u --io-size %llu --file-size %llu "
	       "--files %u --seconds %g --restart-at %g --seed %u --drop-ppm %u "
	       "--server-drop-ppm %u --timeout-ms %d%s",
	       c->clients, c->qd, (unsigned long long)c->io_size, (unsigned long long)c->file_size,
	       c->files, c->seconds, c->restart_at, c->seed, c->drop_ppm, c->server_drop_ppm,
	       c->timeout_ms, c->fail_fast ? " --fail-fast" : "");
	if (c->client_opts)
		printf(" --client-opts '%s'", c->client_opts);
	if (c->server_opts)
		printf(" --server-opts '%s'", c->server_opts);
	if (c->damage)
		printf(" --damage %s", c->damage == DAMAGE_CORRUPT ? "corrupt" : "truncate");
	if (c->host)
		printf(" --host %s --port %s --mount-port %s --export %s", c->host,
		       c->port ? c->port : "20049", c->mount_port ? c->mount_port : "20048",
		       c->export_path ? c->export_path : "/");
	printf("\n");
}

static void sample(struct soak *s, long *rss, long *fds, long *srss, long *sfds)
{
	*rss = rrr__bench_rss_kib(0);
	*fds = proc_fds(getpid());
	*srss = s->pid > 0 ? rrr__bench_rss_kib(s->pid) : -1;
	*sfds = s->pid > 0 ? proc_fds(s->pid) + 1 : -1; /* not our dir stream */
}

static void restart(struct soak *s)
{
	int st = stop_server(s), rc = -1;

	s->term_status[s->nterm++ % 2] = st;
	for (int i = 0; i < 20 && rc; i++) {
		rc = spawn_server(s);
		if (rc)
			usleep(500000); /* the ports may still be taken a moment */
	}
	if (rc) {
		s->restart_failed = rc;
		print_server_log(s);
	} else {
		s->restarts++;
	}
}

int rrr__bench_soak_main(int argc, char **argv)
{
	struct soak *s = calloc(1, sizeof(*s));
	struct rrr_soft_fault_stats f0, f1;
	struct rrr_xprt_stats tot;
	long rss0 = -1, fds0 = -1, srss0 = -1, sfds0 = -1, rss1, fds1, srss1, sfds1;
	uint64_t sum[12] = {0};
	unsigned mounted = 0, never = 0;
	bool pass;
	int rc, status = 1;

	if (!s)
		return 1;
	rc = parse_args(argc, argv, &s->cfg);
	if (rc >= 0) {
		free(s);
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	rrr__bench_print_header(stdout, argc, argv);
	char when[32] = "never";

	if (s->cfg.restart_at >= 0)
		snprintf(when, sizeof(when), "at %g s", s->cfg.restart_at);
	printf("soak: %u clients x QD%u, %u files of %llu bytes each, io %llu, %g s, seed %u, "
	       "client drops %u ppm, server drops %u ppm, server restart %s, re-send %s\n",
	       s->cfg.clients, s->cfg.qd, s->cfg.files, (unsigned long long)s->cfg.file_size,
	       (unsigned long long)s->cfg.io_size, s->cfg.seconds, s->cfg.seed, s->cfg.drop_ppm,
	       s->cfg.server_drop_ppm, when,
	       s->cfg.resend ? "promised (failed operations fail the run)"
			     : "off, --fail-fast (failed operations are retried and reported)");
	fflush(stdout);
	s->c = calloc(s->cfg.clients, sizeof(*s->c));
	if (!s->c)
		goto out;
	if (s->cfg.host) {
		snprintf(s->port, sizeof(s->port), "%s", s->cfg.port ? s->cfg.port : "20049");
		snprintf(s->mport, sizeof(s->mport), "%s",
			 s->cfg.mount_port ? s->cfg.mount_port : "20048");
	} else {
		if (rrr__bench_find_server(s->cfg.server_path, s->srv_path, sizeof(s->srv_path))) {
			fprintf(stderr, "rrr-bench soak: rrr-server not found (build it, or pass "
					"--server PATH)\n");
			goto out;
		}
		snprintf(s->dir, sizeof(s->dir), "/tmp/rrr-soak.XXXXXX");
		if (!mkdtemp(s->dir)) {
			s->dir[0] = '\0';
			perror("rrr-bench soak: mkdtemp");
			goto out;
		}
		char sub[PATH_MAX + 16];

		snprintf(sub, sizeof(sub), "%s/state", s->dir);
		mkdir(sub, 0700);
		snprintf(sub, sizeof(sub), "%s/export", s->dir);
		mkdir(sub, 0755);
		if ((rc = spawn_server(s))) {
			fprintf(stderr, "rrr-bench soak: %s did not start (%s)\n", s->srv_path,
				strerror(-rc));
			print_server_log(s);
			goto out;
		}
		printf("server: pid %d, export %s/export, rdma port %s, mount port %s\n",
		       (int)s->pid, s->dir, s->port, s->mport);
		fflush(stdout);
	}
	rrr_soft_fault_totals(&f0);
	s->t0 = rrr__bench_now_ns();
	s->deadline = s->t0 + (uint64_t)(s->cfg.seconds * 1e9);
	s->hard = s->deadline + SOAK_GRACE_NS;
	for (unsigned i = 0; i < s->cfg.clients; i++) {
		struct soak_client *c = &s->c[i];

		c->s = s;
		c->idx = i;
		snprintf(c->popts, sizeof(c->popts), "fault_seed=%u,fault_drop_ppm=%u%s%s",
			 s->cfg.seed + i, s->cfg.drop_ppm, s->cfg.client_opts ? "," : "",
			 s->cfg.client_opts ? s->cfg.client_opts : "");
		c->wbuf = aligned_alloc(4096, (s->cfg.file_size + 4095) / 4096 * 4096);
		c->rbuf = aligned_alloc(4096, (s->cfg.file_size + 4095) / 4096 * 4096);
		c->f = calloc(s->cfg.files, sizeof(*c->f));
		if (!c->wbuf || !c->rbuf || !c->f) {
			fprintf(stderr, "rrr-bench soak: out of memory for client %u\n", i);
			atomic_store(&s->stop, true);
			break;
		}
		if (pthread_create(&c->thr, NULL, client_main, c)) {
			fprintf(stderr, "rrr-bench soak: cannot start client thread %u\n", i);
			atomic_store(&s->stop, true);
			break;
		}
		c->started = true;
	}
	/* start figures once every client has verified its first file (buffers
	 * touched, connections up, the server's pools made): 30 s at most */
	for (int w = 0; w < 3000; w++) {
		unsigned warm = 0;

		mounted = 0;
		for (unsigned i = 0; i < s->cfg.clients; i++) {
			mounted += atomic_load(&s->c[i].mounted);
			warm += atomic_load(&s->c[i].warm);
		}
		if (warm == s->cfg.clients || atomic_load(&s->stop) || past(s, s->deadline))
			break;
		usleep(10000);
	}
	/* ... and a tenth of the run in, before the restart: allocators warm */
	while (!atomic_load(&s->stop) && !past(s, s->t0 + (uint64_t)(s->cfg.seconds * 1e8)) &&
	       (s->cfg.restart_at < 0 ||
		!past(s, s->t0 + (uint64_t)(s->cfg.restart_at * 1e9) - 100000000ull)))
		usleep(10000);
	sample(s, &rss0, &fds0, &srss0, &sfds0);
	printf("start: %u of %u clients mounted, figures at %.1f s; rss %ld KiB, fds %ld", mounted,
	       s->cfg.clients, (double)(rrr__bench_now_ns() - s->t0) / 1e9, rss0, fds0);
	if (srss0 >= 0)
		printf("; server rss %ld KiB, fds %ld", srss0, sfds0);
	printf("\n");
	fflush(stdout);
	if (s->cfg.restart_at >= 0 && !atomic_load(&s->stop)) {
		uint64_t at = s->t0 + (uint64_t)(s->cfg.restart_at * 1e9);

		while (!past(s, at))
			usleep(10000);
		restart(s);
		printf("restart: %s at %.1f s (old server: %s %d)\n",
		       s->restart_failed ? "FAILED" : "done",
		       (double)(rrr__bench_now_ns() - s->t0) / 1e9,
		       s->term_status[0] < 0	      ? "killed after 10 s, status"
		       : WIFEXITED(s->term_status[0]) ? "exit"
						      : "signal",
		       s->term_status[0] < 0	      ? -1
		       : WIFEXITED(s->term_status[0]) ? WEXITSTATUS(s->term_status[0])
						      : WTERMSIG(s->term_status[0]));
		fflush(stdout);
	}
	for (unsigned i = 0; i < s->cfg.clients; i++)
		if (s->c[i].started)
			pthread_join(s->c[i].thr, NULL);
	sample(s, &rss1, &fds1, &srss1, &sfds1);
	rrr_soft_fault_totals(&f1);
	memset(&tot, 0, sizeof(tot));
	for (unsigned i = 0; i < s->cfg.clients; i++) {
		struct soak_client *c = &s->c[i];
		struct rrr_xprt_stats st;

		if (c->m) {
			rrr_nfs3_stats(c->m, &st);
			tot.calls += st.calls;
			tot.replies += st.replies;
			tot.timeouts += st.timeouts;
			tot.retransmits += st.retransmits;
			tot.connects += st.connects;
			tot.disconnects += st.disconnects;
			rrr_nfs3_umount(c->m);
			c->m = NULL;
		}
		sum[0] += c->rounds;
		sum[1] += c->written;
		sum[2] += c->verified;
		sum[3] += c->final_verified;
		sum[4] += c->corrupted;
		sum[5] += c->lost;
		sum[6] += c->failed_write;
		sum[7] += c->failed_read;
		sum[8] += c->failed_create;
		sum[9] += c->failed_mount;
		sum[10] += c->abandoned;
		never += c->verified == 0;
		if (c->last_err[0])
			printf("client %u: last failure: %s\n", i, c->last_err);
	}
	uint64_t failed = sum[6] + sum[7] + sum[8] + sum[9];

	printf("data: %llu rounds, %llu bytes written and committed, %llu verified, final pass "
	       "%llu verified\n",
	       (unsigned long long)sum[0], (unsigned long long)sum[1], (unsigned long long)sum[2],
	       (unsigned long long)sum[3]);
	printf("corrupted bytes: %llu\n", (unsigned long long)sum[4]);
	printf("lost bytes: %llu\n", (unsigned long long)sum[5]);
	printf("failed operations: %llu (write %llu, read %llu, create %llu, mount %llu), each "
	       "retried by the soak; abandoned: %llu\n",
	       (unsigned long long)failed, (unsigned long long)sum[6], (unsigned long long)sum[7],
	       (unsigned long long)sum[8], (unsigned long long)sum[9], (unsigned long long)sum[10]);
	printf("calls: %llu sent, %llu replies, %llu re-sent by the library, %llu timed out; "
	       "connections: %llu made, %llu lost\n",
	       (unsigned long long)tot.calls, (unsigned long long)tot.replies,
	       (unsigned long long)tot.retransmits, (unsigned long long)tot.timeouts,
	       (unsigned long long)tot.connects, (unsigned long long)tot.disconnects);
	printf("injected in the clients: %llu drops, %llu delays, %llu stalls at %llu points\n",
	       (unsigned long long)(f1.drops - f0.drops),
	       (unsigned long long)(f1.delays - f0.delays),
	       (unsigned long long)(f1.stalls - f0.stalls),
	       (unsigned long long)(f1.points - f0.points));
	printf("server restarts: %u%s\n", s->restarts, s->restart_failed ? " (one FAILED)" : "");
	if (srss0 >= 0) {
		printf("rss KiB: soak %ld -> %ld, server %ld -> %ld%s\n", rss0, rss1, srss0, srss1,
		       s->restarts ? " (a new process since the restart)" : "");
		printf("fds: soak %ld -> %ld, server %ld -> %ld\n", fds0, fds1, sfds0, sfds1);
	} else {
		printf("rss KiB: soak %ld -> %ld (the server is not the soak's child)\n", rss0,
		       rss1);
		printf("fds: soak %ld -> %ld\n", fds0, fds1);
	}
	print_repro(&s->cfg);
	pass = sum[4] == 0 && sum[5] == 0 && sum[10] == 0 && never == 0 && !s->restart_failed &&
	       mounted == s->cfg.clients && !(s->cfg.resend && failed);
	if (!s->cfg.host) {
		int st = stop_server(s);

		printf("server stop: %s %d\n",
		       st < 0	       ? "killed after 10 s, status"
		       : WIFEXITED(st) ? "exit"
				       : "signal",
		       st < 0	       ? -1
		       : WIFEXITED(st) ? WEXITSTATUS(st)
				       : WTERMSIG(st));
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			pass = false;
			print_server_log(s);
		}
	}
	if (pass)
		printf("PASS: 0 corrupted, 0 lost bytes%s\n",
		       s->cfg.resend ? ", 0 failed operations"
				     : "; failed operations reported, not counted (--fail-fast)");
	else
		printf("FAIL:%s%s%s%s%s%s\n", sum[4] ? " corrupted bytes" : "",
		       sum[5] ? " lost bytes" : "", sum[10] ? " abandoned operations" : "",
		       never || mounted != s->cfg.clients ? " a client never verified a file" : "",
		       s->restart_failed ? " the server did not come back" : "",
		       s->cfg.resend && failed ? " failed operations (re-send promised)" : "");
	status = pass ? 0 : 1;
out:
	fflush(stdout);
	if (s->pid > 0)
		stop_server(s);
	if (s->dir[0] && !s->cfg.keep)
		rrr__bench_rm_tree(s->dir);
	else if (s->dir[0])
		printf("kept: %s\n", s->dir);
	if (s->c)
		for (unsigned i = 0; i < s->cfg.clients; i++) {
			free(s->c[i].wbuf);
			free(s->c[i].rbuf);
			free(s->c[i].f);
		}
	free(s->c);
	free(s);
	return status;
}
