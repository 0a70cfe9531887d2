/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/nfs_helpers.c - process helpers for the NFS tests.
 *
 * The server is started with --port 0 --mount-port 0 --port-file, so tests
 * run in parallel without port clashes; the port file appears (atomically,
 * by rename) once the listeners are up. Children are always reaped: a
 * child that outlives its timeout gets SIGKILL. Children close every
 * inherited descriptor above stderr before exec, so no server or client
 * holds the test runner's pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rrr/nfs3_client.h>

#include "tests/lib/nfs_helpers.h"

const char *th_prog(const char *prog, char *buf, size_t len)
{
	const char *b = getenv("RRR_BUILD");
	if (!b)
		return NULL;
	snprintf(buf, len, "%s/%s", b, prog);
	return access(buf, X_OK) == 0 ? buf : NULL;
}

void th_need_server(void)
{
	char p[512];
	if (!th_prog("rrr-server", p, sizeof(p)))
		cr_skip_test(
		    "RRR_BUILD unset or rrr-server not built (run through make test-unit)");
}

void th_need_server_and_client(char client[512])
{
	char p[512];
	if (!th_prog("rrr-server", p, sizeof(p)) || !th_prog("rrr-client", client, 512))
		cr_skip_test("RRR_BUILD unset or rrr-server/rrr-client not built "
			     "(run through make test-unit)");
}

int th_mkdirs(struct th_server *s)
{
	memset(s, 0, sizeof(*s));
	s->pid = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/rrr-nfs-test-XXXXXX");
	if (!mkdtemp(s->dir))
		return -errno;
	snprintf(s->export_dir, sizeof(s->export_dir), "%s/export", s->dir);
	snprintf(s->state_dir, sizeof(s->state_dir), "%s/state", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/server.log", s->dir);
	if (mkdir(s->export_dir, 0755) < 0 || mkdir(s->state_dir, 0700) < 0)
		return -errno;
	return 0;
}

double th_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

pid_t th_server_fork(struct th_server *s, char prog[512], char ports[320])
{
	if (!th_prog("rrr-server", prog, 512))
		return -ENOENT;
	snprintf(ports, 320, "%s/ports", s->dir);
	unlink(ports);
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	closefrom(3); /* never hand Criterion's pipes to the server */
	return 0;
}

int th_server_start(struct th_server *s, bool rdma)
{
	char prog[512], ports[320];
	pid_t pid = th_server_fork(s, prog, ports);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		if (s->run_uid && (setgroups(0, NULL) < 0 || setgid(s->run_gid) < 0 ||
				   setuid(s->run_uid) < 0))
			_exit(126);
		if (s->nofile) {
			struct rlimit rl;
			if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
				rl.rlim_cur = s->nofile;
				setrlimit(RLIMIT_NOFILE, &rl);
			}
		}
		const char *argv[32] = {prog, "--export", s->export_dir, "--state-dir", s->state_dir,
					"--port", "0", "--mount-port", "0", "--port-file", ports,
					"--threads", "2", rdma ? "--provider" : "--no-rdma",
					rdma ? "soft" : NULL, NULL};
		int n = rdma ? 15 : 14;
		if (!s->root_squash)
			argv[n++] = "--no-root-squash";
		if (!s->rpcbind) { /* a test's server on free ports: not found through rpcbind */
			argv[n++] = "--no-rpcbind";
			argv[n++] = "--tcp-port";
			argv[n++] = "none";
		}
		for (int i = 0; s->extra_args && s->extra_args[i] && n < 31; i++)
			argv[n++] = s->extra_args[i];
		argv[n] = NULL;
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	s->pid = pid;
	return th_server_wait_ports(s, ports);
}

int th_server_wait_ports(struct th_server *s, const char *ports)
{
	pid_t pid = s->pid;
	double end = th_now() + 10;
	while (th_now() < end) {
		FILE *f = fopen(ports, "r");
		if (f) {
			unsigned r = 0, m = 0, t = 0;
			int n = fscanf(f, "rdma=%u mount=%u tcp=%u", &r, &m, &t);
			fclose(f);
			if (n == 3) {
				s->rdma_port = r;
				s->mount_port = m;
				return 0;
			}
		}
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			s->pid = -1;
			return -ECHILD;
		}
		usleep(20000);
	}
	th_server_stop(s);
	return -ETIMEDOUT;
}

static int wait_timeout(pid_t pid, int timeout_s)
{
	double end = th_now() + timeout_s;
	int st;
	while (th_now() < end) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		if (r < 0)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

int th_server_stop(struct th_server *s)
{
	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	int rc = wait_timeout(s->pid, 10);
	s->pid = -1;
	return rc;
}

int th_chown_tree(struct th_server *s, uid_t uid, gid_t gid)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "chown -R %u:%u '%s'", (unsigned)uid, (unsigned)gid, s->dir);
	return system(cmd) == 0 ? 0 : -EPERM;
}

void th_cleanup(struct th_server *s)
{
	if (s->pid > 0)
		th_server_stop(s);
	if (s->dir[0]) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
		if (system(cmd) != 0) {
			/* leave it; /tmp is cleaned eventually */
		}
	}
}

int th_run(char *const argv[], const char *out_path, int timeout_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (out_path) {
			int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				close(fd);
			}
		}
		closefrom(3);
		execvp(argv[0], argv);
		_exit(127);
	}
	return wait_timeout(pid, timeout_s);
}

int th_random_file(const char *path, size_t len, uint32_t seed)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	uint32_t x = seed ? seed : 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		fputc((int)(x & 0xff), f);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

int th_cmp_files(const char *a, const char *b)
{
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	int rc = (fa && fb) ? 0 : -1;
	while (rc == 0) {
		int ca = fgetc(fa), cb = fgetc(fb);
		if (ca != cb)
			rc = 1;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return rc;
}

bool th_file_contains(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

int th_count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

int th_nfs_st(int rc)
{
	uint32_t st = rrr_nfs3_last_status();

	if (rc >= 0 || st == RRR_NFS3_OK)
		return rc;
	cr_assert_eq(rc, rrr_nfs3_stat_to_errno(st), "%s comes back as %d, not as its errno",
		     rrr_nfs3_strstat(st), rc);
	return (int)st;
}

void th_mount_opts(const struct th_server *s, bool rdma, struct th_mount *m)
{
	snprintf(m->port, sizeof(m->port), "%u", rdma ? s->rdma_port : s->mount_port);
	snprintf(m->mport, sizeof(m->mport), "%u", s->mount_port);
	rrr_nfs3_opts_init(&m->o);
	m->o.transport = rdma ? "rdma" : "tcp";
	m->o.provider = "soft";
	m->o.host = "127.0.0.1";
	m->o.port = m->port;
	m->o.mount_port = m->mport;
	m->o.export_path = s->export_dir;
	m->o.timeout_ms = 10000;
}

struct rrr_nfs3 *th_nfs_mount(struct th_mount *m)
{
	struct rrr_nfs3 *n = NULL;
	int rc = rrr_nfs3_mount(&m->o, &n);

	cr_assert_eq(rc, 0, "mount %s over %s: %d, %s", m->o.export_path, m->o.transport, rc,
		     rrr_last_error() ? rrr_last_error() : "");
	return n;
}

struct rrr_nfs3 *th_nfs_mount_as(const struct th_server *s, bool rdma, uint32_t uid, uint32_t gid)
{
	struct th_mount mt;

	th_mount_opts(s, rdma, &mt);
	mt.o.uid = uid;
	mt.o.gid = gid;
	return th_nfs_mount(&mt);
}
