/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_common.c - clocks, samples, JSON, options and the TCP baseline
 * shared by every rrr-bench subcommand.
 *
 * Normal operation. A benchmark takes wall-clock timestamps with
 * CLOCK_MONOTONIC around each operation (vDSO, cheap enough per I/O) and CPU
 * time with CLOCK_THREAD_CPUTIME_ID / CLOCK_PROCESS_CPUTIME_ID around a batch
 * (these are system calls, too costly to wrap one ~100 ns operation), keeps
 * the per-operation figures in a sample set and reports order statistics
 * (median, p99: nearest rank on the sorted set). Results go to a human table
 * on stdout and, with --json, to a file written by the streaming JSON writer
 * below; both carry the command line that reproduces the run and the machine
 * it ran on (nproc, CPU model, kernel), so a figure can always be traced back.
 *
 * The TCP baseline is the physical floor of this machine for moving the
 * same bytes the NFS benchmarks move: one loopback TCP connection, a server
 * thread that reads a request and writes a response, TCP_NODELAY on both
 * ends, requests pipelined up to the queue depth. No protocol, no copies
 * beyond the socket calls: anything built on TCP (the soft provider, ONC RPC
 * over TCP) can only be slower.
 *
 * Recovery. Nothing here retries: a failed socket call ends the run with
 * -errno and the caller prints it; the server thread exits on EOF or error
 * and is always joined. Sample arrays grow by doubling and drop the sample
 * on allocation failure (reported as -ENOMEM by the add).
 */
#include "bench_common.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- clocks ----------------------------------------------------------------- */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t rrr__bench_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t rrr__bench_thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

uint64_t rrr__bench_process_cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

const char *rrr__bench_pid_stat(int pid, char *buf, size_t len)
{
	char path[64];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may contain spaces and parentheses: fields restart
	 * after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		errno = EINVAL;
	return p ? p + 1 : NULL;
}

int64_t rrr__bench_pid_cpu_ns(int pid)
{
	char buf[1024];
	const char *p = rrr__bench_pid_stat(pid, buf, sizeof(buf));
	unsigned long long ut = 0, st = 0;
	long hz = sysconf(_SC_CLK_TCK);

	if (!p)
		return -errno;
	/* utime and stime are fields 14 and 15 */
	if (hz <= 0 ||
	    sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	return (int64_t)((ut + st) * (1000000000ull / (unsigned long long)hz));
}

double rrr__bench_clock_overhead_ns(void)
{
	struct rrr__bench_samples s;
	double m;
	int i;

	if (rrr__bench_samples_init(&s, 101))
		return 0;
	for (i = 0; i < 101; i++) {
		uint64_t t0 = rrr__bench_now_ns(), t1;
		int k;

		for (k = 0; k < 100; k++)
			t1 = rrr__bench_now_ns();
		rrr__bench_samples_add(&s, (double)(t1 - t0) / 100.0);
	}
	m = rrr__bench_samples_median(&s);
	rrr__bench_samples_free(&s);
	return m;
}

/* --- samples ------------------------------------------------------------------ */

int rrr__bench_samples_init(struct rrr__bench_samples *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	if (cap) {
		s->v = malloc(cap * sizeof(*s->v));
		if (!s->v)
			return -ENOMEM;
		s->cap = cap;
	}
	return 0;
}

void rrr__bench_samples_free(struct rrr__bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void rrr__bench_samples_reset(struct rrr__bench_samples *s)
{
	s->n = 0;
	s->sorted = false;
}

int rrr__bench_samples_add(struct rrr__bench_samples *s, double x)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		double *nv;

		if (ncap > SIZE_MAX / sizeof(*nv))
			return -ENOMEM;
		nv = realloc(s->v, ncap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = x;
	s->sorted = false;
	return 0;
}

int rrr__bench_samples_merge(struct rrr__bench_samples *s, const struct rrr__bench_samples *from)
{
	size_t i;
	int rc;

	for (i = 0; i < from->n; i++)
		if ((rc = rrr__bench_samples_add(s, from->v[i])))
			return rc;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double rrr__bench_samples_quantile(struct rrr__bench_samples *s, double q)
{
	size_t rank;

	if (!s->n)
		return 0;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
		s->sorted = true;
	}
	if (q <= 0)
		return s->v[0];
	if (q >= 1)
		return s->v[s->n - 1];
	/* nearest rank: ceil(q * n), 1-based */
	rank = (size_t)ceil(q * (double)s->n);
	if (rank < 1)
		rank = 1;
	return s->v[rank - 1];
}

double rrr__bench_samples_median(struct rrr__bench_samples *s)
{
	return rrr__bench_samples_quantile(s, 0.5);
}

double rrr__bench_samples_p99(struct rrr__bench_samples *s)
{
	return rrr__bench_samples_quantile(s, 0.99);
}

double rrr__bench_samples_min(struct rrr__bench_samples *s)
{
	return rrr__bench_samples_quantile(s, 0);
}

double rrr__bench_samples_mean(const struct rrr__bench_samples *s)
{
	double sum = 0;
	size_t i;

	if (!s->n)
		return 0;
	for (i = 0; i < s->n; i++)
		sum += s->v[i];
	return sum / (double)s->n;
}

/* --- JSON --------------------------------------------------------------------- */

int rrr__bench_json_open(struct rrr__bench_json *j, const char *path)
{
	memset(j, 0, sizeof(*j));
	j->f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!j->f)
		return -errno;
	j->first[0] = true;
	return 0;
}

int rrr__bench_json_close(struct rrr__bench_json *j)
{
	int err = j->err;

	if (!j->f)
		return err ? err : -EBADF;
	fputc('\n', j->f);
	if (fflush(j->f) && !err)
		err = -errno;
	if (j->f != stdout && fclose(j->f) && !err)
		err = -errno;
	j->f = NULL;
	if (!err && j->depth)
		err = -EINVAL; /* unbalanced begin/end */
	return err;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Comma, newline + indentation, then the key if any. */
static bool json_item(struct rrr__bench_json *j, const char *key)
{
	if (!j->f || j->err)
		return false;
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (j->depth) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key) {
		json_string(j->f, key);
		fputs(": ", j->f);
	}
	return true;
}

static void json_open(struct rrr__bench_json *j, const char *key, char c)
{
	if (!json_item(j, key))
		return;
	if (j->depth + 1 >= (int)(sizeof(j->first) / sizeof(j->first[0]))) {
		j->err = -E2BIG;
		return;
	}
	fputc(c, j->f);
	j->first[++j->depth] = true;
}

static void json_close_(struct rrr__bench_json *j, char c)
{
	if (!j->f || j->err)
		return;
	if (j->depth <= 0) {
		j->err = -EINVAL;
		return;
	}
	if (!j->first[j->depth]) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth - 1; i++)
			fputs("  ", j->f);
	}
	j->depth--;
	fputc(c, j->f);
}

void rrr__bench_json_obj_begin(struct rrr__bench_json *j, const char *key)
{
	json_open(j, key, '{');
}

void rrr__bench_json_obj_end(struct rrr__bench_json *j)
{
	json_close_(j, '}');
}

void rrr__bench_json_arr_begin(struct rrr__bench_json *j, const char *key)
{
	json_open(j, key, '[');
}

void rrr__bench_json_arr_end(struct rrr__bench_json *j)
{
	json_close_(j, ']');
}

void rrr__bench_json_str(struct rrr__bench_json *j, const char *key, const char *v)
{
	if (json_item(j, key))
		json_string(j->f, v ? v : "");
}

void rrr__bench_json_num(struct rrr__bench_json *j, const char *key, double v)
{
	if (!json_item(j, key))
		return;
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void rrr__bench_json_int(struct rrr__bench_json *j, const char *key, long long v)
{
	if (json_item(j, key))
		fprintf(j->f, "%lld", v);
}

void rrr__bench_json_bool(struct rrr__bench_json *j, const char *key, bool v)
{
	if (json_item(j, key))
		fputs(v ? "true" : "false", j->f);
}

int rrr__bench_json_begin(struct rrr__bench_json *j, const char *path, const char *cmd, int argc,
			  char **argv)
{
	int rc = rrr__bench_json_open(j, path);

	if (rc) {
		fprintf(stderr, "rrr-bench %s: %s: %s\n", cmd, path, strerror(-rc));
		return rc;
	}
	rrr__bench_json_obj_begin(j, NULL);
	rrr__bench_json_str(j, "benchmark", cmd);
	rrr__bench_json_machine(j, argc, argv);
	return 0;
}

int rrr__bench_json_end(struct rrr__bench_json *j, const char *path, const char *cmd)
{
	int rc;

	rrr__bench_json_obj_end(j);
	rc = rrr__bench_json_close(j);
	if (rc)
		fprintf(stderr, "rrr-bench %s: %s: %s\n", cmd, path, strerror(-rc));
	return rc;
}

void rrr__bench_json_machine(struct rrr__bench_json *j, int argc, char **argv)
{
	char cmd[2048], cpu[256];
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;
	char date[64] = "";

	if (gmtime_r(&now, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	rrr__bench_json_str(j, "command", rrr__bench_cmdline(argc, argv, cmd, sizeof(cmd)));
	rrr__bench_json_str(j, "date", date);
	rrr__bench_json_obj_begin(j, "machine");
	rrr__bench_json_int(j, "nproc", sysconf(_SC_NPROCESSORS_ONLN));
	rrr__bench_json_str(j, "cpu", rrr__bench_cpu_model(cpu, sizeof(cpu)));
	if (!uname(&u)) {
		rrr__bench_json_str(j, "kernel", u.release);
		rrr__bench_json_str(j, "arch", u.machine);
	}
	rrr__bench_json_num(j, "clock_overhead_ns", rrr__bench_clock_overhead_ns());
	rrr__bench_json_str(j, "loadavg", rrr__bench_loadavg(cpu, sizeof(cpu)));
	rrr__bench_json_obj_end(j);
}

/* --- run context ---------------------------------------------------------------- */

static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "-_=,./:+@%",
			    *s))
			return false;
	return true;
}

const char *rrr__bench_cmdline(int argc, char **argv, char *buf, size_t len)
{
	size_t pos = 0;
	int i;

	if (!len)
		return buf;
	buf[0] = '\0';
#define APPEND(...)                                                                                \
	do {                                                                                       \
		int n_ = snprintf(buf + pos, len - pos, __VA_ARGS__);                              \
		if (n_ < 0 || (size_t)n_ >= len - pos)                                             \
			return buf;                                                                \
		pos += (size_t)n_;                                                                 \
	} while (0)
	APPEND("rrr-bench");
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (shell_safe(a)) {
			APPEND(" %s", a);
			continue;
		}
		APPEND(" '");
		for (; *a; a++) {
			if (*a == '\'')
				APPEND("'\\''");
			else
				APPEND("%c", *a);
		}
		APPEND("'");
	}
#undef APPEND
	return buf;
}

const char *rrr__bench_cpu_model(char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f)) {
		char *c;

		if (strncmp(line, "model name", 10))
			continue;
		c = strchr(line, ':');
		if (!c)
			continue;
		c++;
		while (*c == ' ' || *c == '\t')
			c++;
		c[strcspn(c, "\n")] = '\0';
		snprintf(buf, len, "%s", c);
		break;
	}
	fclose(f);
	return buf;
}

const char *rrr__bench_loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a = 0, b = 0, c = 0;

	snprintf(buf, len, "unknown");
	if (!f)
		return buf;
	if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
	fclose(f);
	return buf;
}

void rrr__bench_print_header(FILE *f, int argc, char **argv)
{
	char cmd[2048], cpu[256];
	struct utsname u;

	fprintf(f, "# command: %s\n", rrr__bench_cmdline(argc, argv, cmd, sizeof(cmd)));
	char la[64];

	fprintf(f, "# machine: nproc=%ld cpu=\"%s\" kernel=%s loadavg=\"%s\"\n",
		sysconf(_SC_NPROCESSORS_ONLN), rrr__bench_cpu_model(cpu, sizeof(cpu)),
		uname(&u) ? "?" : u.release, rrr__bench_loadavg(la, sizeof(la)));
}

/* --- options ------------------------------------------------------------------- */

int rrr__bench_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mul = 1024;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1024ull * 1024 * 1024;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

/* rrr__bench_opt_sizes() with its @range arguments in @ap. */
__attribute__((format(printf, 7, 0))) static int opt_vsizes(const char *cmd, const char *name,
							    const char *arg, uint64_t *out, int max,
							    uint64_t limit, const char *range,
							    va_list ap)
{
	int n = rrr__bench_parse_sizes(arg, out, max), i = 0;

	if (n <= 0) {
		fprintf(stderr, "rrr-bench %s: bad --%s '%s'\n", cmd, name, arg);
		return -1;
	}
	while (i < n && out[i] && out[i] <= limit)
		i++;
	if (i == n)
		return n;
	fprintf(stderr, "rrr-bench %s: ", cmd);
	vfprintf(stderr, range, ap);
	fputc('\n', stderr);
	return -1;
}

int rrr__bench_opt_sizes(const char *cmd, const char *name, const char *arg, uint64_t *out, int max,
			 uint64_t limit, const char *range, ...)
{
	va_list ap;
	int n;

	va_start(ap, range);
	n = opt_vsizes(cmd, name, arg, out, max, limit, range, ap);
	va_end(ap);
	return n;
}

int rrr__bench_opt_uints(const char *cmd, const char *name, const char *arg, unsigned *out, int max,
			 unsigned limit, const char *range, ...)
{
	uint64_t v[64];
	va_list ap;
	int n;

	va_start(ap, range);
	n = opt_vsizes(cmd, name, arg, v, max < 64 ? max : 64, limit, range, ap);
	va_end(ap);
	for (int i = 0; i < n; i++)
		out[i] = (unsigned)v[i]; /* each at most @limit */
	return n;
}

int rrr__bench_opt_count(const char *cmd, const char *arg, unsigned max, unsigned *out,
			 const char *what)
{
	*out = (unsigned)atoi(arg);
	if (*out && *out <= max)
		return 0;
	fprintf(stderr, "rrr-bench %s: %s\n", cmd, what);
	return -1;
}

int rrr__bench_opt_usage(int opt, void (*usage)(FILE *f))
{
	usage(opt == 'h' ? stdout : stderr);
	return opt == 'h' ? 0 : 2;
}

int rrr__bench_opt_done(const char *cmd, int argc, char **argv)
{
	if (optind == argc)
		return 0;
	fprintf(stderr, "rrr-bench %s: unexpected argument '%s'\n", cmd, argv[optind]);
	return 2;
}

int rrr__bench_opt_next(struct rrr__bench_opts *o, int argc, char **argv)
{
	int opt;

	if (!o->started) {
		optind = 1;
		o->started = true;
	}
	while ((opt = getopt_long(argc, argv, "h", o->lopts, NULL)) == 'j')
		o->json = optarg;
	if (opt == -1) {
		o->exit = rrr__bench_opt_done(o->cmd, argc, argv);
		return o->exit ? -1 : 0;
	}
	if (opt == 'h' || opt == '?') {
		o->exit = rrr__bench_opt_usage(opt, o->usage);
		return -1;
	}
	return opt;
}

long rrr__bench_rss_kib(int pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			v = strtol(line + 6, NULL, 10);
	fclose(f);
	return v;
}

int rrr__bench_server_ports(int pid, const char *path, int timeout_s, unsigned *rdma,
			    unsigned *mount)
{
	uint64_t deadline = rrr__bench_now_ns() + (uint64_t)timeout_s * 1000000000ull;
	int st;

	while (rrr__bench_now_ns() < deadline) {
		unsigned rd = 0, mt = 0, tc = 0;
		FILE *f = fopen(path, "r");

		if (f) {
			int got = fscanf(f, "rdma=%u mount=%u tcp=%u", &rd, &mt, &tc);

			fclose(f);
			if (got >= 2 && mt) {
				*rdma = rd;
				*mount = mt;
				return 0;
			}
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -ECHILD;
		usleep(20000);
	}
	return -ETIMEDOUT;
}

int rrr__bench_server_argv(const char **av, const char *path, const char *exp, const char *state,
			   const char *port, const char *mport, const char *pfile)
{
	const char *args[RRR__BENCH_SERVER_ARGC] = {
	    path,
	    "--export", exp,
	    "--state-dir", state,
	    "--no-root-squash",	  /* the bench's clients are root's */
	    "--no-rpcbind",	  /* a private server: not found through rpcbind */
	    "--tcp-port", "none", /* ... nor on NFS's port 2049 */
	    "--listen", "127.0.0.1",
	    "--port", port,
	    "--mount-port", mport,
	    "--port-file", pfile,
	};

	memcpy(av, args, sizeof(args));
	return RRR__BENCH_SERVER_ARGC;
}

void rrr__bench_rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= (int)sizeof(p))
			continue;
		if (de->d_type == DT_DIR)
			rrr__bench_rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

int rrr__bench_find_server(const char *path, char *out, size_t len)
{
	char self[PATH_MAX];
	const char *b = getenv("RRR_BUILD");
	ssize_t n;

	if (path) {
		snprintf(out, len, "%s", path);
		return access(out, X_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(out, len, "%s/rrr-server", self) < (int)len &&
			    !access(out, X_OK))
				return 0;
		}
	}
	if (b) {
		snprintf(out, len, "%s/rrr-server", b);
		if (!access(out, X_OK))
			return 0;
	}
	return -ENOENT;
}

int rrr__bench_split(char *buf, char **tok, int max)
{
	int n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
		tok[n++] = t;
	return n;
}

int rrr__bench_parse_sizes(const char *s, uint64_t *out, int max)
{
	char buf[1024], *tok[64];
	int n, i, rc;

	if (strlen(s) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, s);
	n = rrr__bench_split(buf, tok, max < 64 ? max : 64);
	if (n <= 0)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((rc = rrr__bench_parse_size(tok[i], &out[i])))
			return rc;
	return n;
}

int rrr__bench_parse_uints(const char *s, unsigned *out, int max)
{
	uint64_t v[64];
	int n, i;

	n = rrr__bench_parse_sizes(s, v, max < 64 ? max : 64);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (v[i] > 0xffffffffu)
			return -ERANGE;
		out[i] = (unsigned)v[i];
	}
	return n;
}

const char *rrr__bench_fmt_size(uint64_t v, char *buf, size_t len)
{
	if (v && !(v % (1024 * 1024)))
		snprintf(buf, len, "%llum", (unsigned long long)(v / (1024 * 1024)));
	else if (v && !(v % 1024))
		snprintf(buf, len, "%lluk", (unsigned long long)(v / 1024));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

/* --- TCP baseline ------------------------------------------------------------------
 *
 * Wire format of the echo (host order, both ends are this process):
 *
 *    0                   1                   2                   3
 *   +-------------------------------+-------------------------------+
 *   | request body length           | response body length          |
 *   +-------------------------------+-------------------------------+
 *   | request body ...                                               |
 *
 * The response is the 8-byte header again followed by its body. Lengths are
 * bounded by ECHO_MAX before the server allocates anything.
 */
#define ECHO_MAX (64u << 20)

struct echo_hdr {
	uint32_t req_len;
	uint32_t resp_len;
};

static int full_writev2(int fd, const void *a, size_t alen, const void *b, size_t blen)
{
	struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
	int cnt = blen ? 2 : 1;
	size_t left = alen + blen;

	while (left) {
		ssize_t w = writev(fd, iov, cnt);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		left -= (size_t)w;
		/* advance the iovecs past w bytes */
		for (int i = 0; i < cnt && w; i++) {
			size_t take = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;

			iov[i].iov_base = (char *)iov[i].iov_base + take;
			iov[i].iov_len -= take;
			w -= (ssize_t)take;
		}
	}
	return 0;
}

static int full_read(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!r)
			return -ECONNRESET;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

struct echo_srv {
	int fd;
	int err;
	pthread_t thr;
};

static void *echo_server(void *arg)
{
	struct echo_srv *s = arg;
	char *buf = NULL;
	size_t cap = 0;

	for (;;) {
		struct echo_hdr h;
		size_t need;
		int rc = full_read(s->fd, &h, sizeof(h));

		if (rc) {
			if (rc != -ECONNRESET)
				s->err = rc;
			break;
		}
		if (h.req_len > ECHO_MAX || h.resp_len > ECHO_MAX) {
			s->err = -E2BIG;
			break;
		}
		need = h.req_len > h.resp_len ? h.req_len : h.resp_len;
		if (need > cap) {
			char *nb = realloc(buf, need);

			if (!nb) {
				s->err = -ENOMEM;
				break;
			}
			buf = nb;
			memset(buf + cap, 0x5a, need - cap);
			cap = need;
		}
		if (h.req_len && (rc = full_read(s->fd, buf, h.req_len))) {
			s->err = rc;
			break;
		}
		if ((rc = full_writev2(s->fd, &h, sizeof(h), buf, h.resp_len))) {
			s->err = rc;
			break;
		}
	}
	free(buf);
	return NULL;
}

static int tcp_pair(int *cfd, int *sfd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int one = 1, l, c = -1, s = -1, rc;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		goto fail;
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		goto fail;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
	*cfd = c;
	*sfd = s;
	return 0;
fail:
	rc = -errno;
	if (s >= 0)
		close(s);
	if (c >= 0)
		close(c);
	close(l);
	return rc;
}

int rrr__bench_tcp_echo(const struct rrr__bench_tcp_opts *o, struct rrr__bench_tcp_result *r)
{
	struct echo_srv srv = {.fd = -1};
	struct echo_hdr h;
	uint64_t *sent_at = NULL, deadline, t_start = 0, cpu0 = 0, sent = 0, done = 0;
	uint64_t total = o->max_ops ? o->max_ops + o->warmup_ops : UINT64_MAX;
	uint32_t req_len, resp_len;
	char *buf = NULL;
	int cfd = -1, rc;
	bool measuring = false, stop = false;
	unsigned qd = o->qd ? o->qd : 1;

	memset(r, 0, sizeof(*r));
	if (o->size > ECHO_MAX || o->small > ECHO_MAX || qd > 4096)
		return -E2BIG;
	req_len = o->write ? (uint32_t)o->size : o->small;
	resp_len = o->write ? o->small : (uint32_t)o->size;
	if ((rc = rrr__bench_samples_init(&r->lat_ns, 1 << 16)))
		return rc;
	sent_at = calloc(qd, sizeof(*sent_at));
	buf = malloc(o->size > o->small ? o->size : o->small);
	if (!sent_at || !buf) {
		rc = -ENOMEM;
		goto out;
	}
	memset(buf, 0xa5, o->size > o->small ? o->size : o->small);
	if ((rc = tcp_pair(&cfd, &srv.fd)))
		goto out;
	if ((rc = -pthread_create(&srv.thr, NULL, echo_server, &srv))) {
		close(srv.fd);
		srv.fd = -1;
		goto out;
	}

	h.req_len = req_len;
	h.resp_len = resp_len;
	deadline = UINT64_MAX;
	if (!o->warmup_ops) {
		measuring = true;
		t_start = rrr__bench_now_ns();
		cpu0 = rrr__bench_process_cpu_ns();
		if (o->seconds > 0)
			deadline = t_start + (uint64_t)(o->seconds * 1e9);
	}
	/* Keep qd requests in flight; responses come back in order. */
	while (done < total) {
		struct echo_hdr rh;
		uint64_t now;

		while (!stop && sent < total && sent - done < qd) {
			sent_at[sent % qd] = rrr__bench_now_ns();
			if ((rc = full_writev2(cfd, &h, sizeof(h), buf, req_len)))
				goto out_join;
			sent++;
		}
		if (done == sent)
			break;
		if ((rc = full_read(cfd, &rh, sizeof(rh))))
			goto out_join;
		if (rh.resp_len != resp_len) {
			rc = -EBADMSG;
			goto out_join;
		}
		if (resp_len && (rc = full_read(cfd, buf, resp_len)))
			goto out_join;
		now = rrr__bench_now_ns();
		if (measuring) {
			rrr__bench_samples_add(&r->lat_ns, (double)(now - sent_at[done % qd]));
			r->ops++;
		}
		done++;
		if (!measuring && done >= o->warmup_ops) {
			measuring = true;
			t_start = rrr__bench_now_ns();
			cpu0 = rrr__bench_process_cpu_ns();
			if (o->seconds > 0)
				deadline = t_start + (uint64_t)(o->seconds * 1e9);
		}
		if (measuring && now >= deadline)
			stop = true; /* drain what is in flight, send no more */
	}
	if (measuring && r->ops) {
		/* The drained tail counts: it ran inside the wall time. */
		r->wall_s = (double)(rrr__bench_now_ns() - t_start) / 1e9;
		r->cpu_ns_per_op = (double)(rrr__bench_process_cpu_ns() - cpu0) / (double)r->ops;
	}
	rc = 0;
out_join:
	shutdown(cfd, SHUT_RDWR);
	pthread_join(srv.thr, NULL);
	close(srv.fd);
	if (!rc && srv.err)
		rc = srv.err;
out:
	if (cfd >= 0)
		close(cfd);
	free(sent_at);
	free(buf);
	if (rc)
		rrr__bench_samples_free(&r->lat_ns);
	return rc;
}
