/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/conf_server.c - see conf_server.h. Same rules as
 * nfs_helpers.c: ephemeral ports, bounded waits, children close inherited
 * descriptors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/conf_server.h"

int th_conf_write(struct th_server *s, bool rdma, const char *export_lines, char *conf)
{
	snprintf(conf, 400, "%s/rrr-server.conf", s->dir);
	FILE *f = fopen(conf, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"# written by the test\n[server]\nrdma = %s\nrdma-port = 0\nmount-port = 0\n"
		"threads = 2\nrpcbind = no\ntcp-port = none\nport-file = %s/ports\nstate-dir = %s\n\n[export %s]\n%s\n%s",
		rdma ? "yes" : "no", s->dir, s->state_dir, s->export_dir, export_lines,
		/* the tests run as root and write as root, as th_server does */
		strstr(export_lines, "root-squash") ? "" : "root-squash = no\n");
	return fclose(f) == 0 ? 0 : -EIO;
}

int th_conf_printf(struct th_server *s, char *conf, const char *fmt, ...)
{
	va_list ap;
	snprintf(conf, 400, "%s/rrr-server.conf", s->dir);
	FILE *f = fopen(conf, "w");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) == 0 ? 0 : -EIO;
}

int th_server_start_conf(struct th_server *s, const char *conf)
{
	char prog[512], ports[320];
	pid_t pid = th_server_fork(s, prog, ports);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		setenv("RRR_LOG_FORMAT", "plain", 0); /* a test may ask for journal */
		execl(prog, prog, "--config", conf, (char *)NULL);
		_exit(127);
	}
	s->pid = pid;
	return th_server_wait_ports(s, ports);
}

bool th_log_wait(struct th_server *s, const char *needle, int timeout_s)
{
	double end = th_now() + timeout_s;
	while (th_now() < end) {
		if (th_file_contains(s->log, needle))
			return true;
		usleep(20000);
	}
	return false;
}

int th_sh(const char *prog, const char *args, const char *out)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "timeout 20 '%s' %s >'%s' 2>&1 </dev/null", prog, args, out);
	int st = system(cmd);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

long long th_counter(const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512], key[256];
	long long v = -1, x;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %255s %lld", key, &x) == 2 && !strcmp(key, name))
			v = x;
	fclose(f);
	return v;
}

bool th_have_ipv6_loopback(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_loopback;
	bool ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}
