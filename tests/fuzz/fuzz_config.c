/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_config.c - libFuzzer harness for rrr-server's config
 * file parser (server/fs/config.c, linked in by the Makefile: it belongs
 * to the program, not the library). The input is the file. Whatever parses must
 * leave every field within its bounds and NUL-terminated, every export
 * (there may be several) an absolute path given once, every network a
 * valid prefix that matches its own address; whatever fails must say why.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/fs/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static void bounded(const char *s, size_t cap)
{
	check(memchr(s, '\0', cap) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FS_CONF_MAX_SIZE + 16)
		return 0;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	static struct fs_conf c;
	char err[768];
	err[0] = '\0';
	fs_conf_defaults(&c);
	int rc = fs_conf_parse(&c, "fuzz.conf", buf, size, err, sizeof(err));
	free(buf);
	if (rc < 0) {
		check(rc == -EINVAL);
		check(err[0] != '\0');
		bounded(err, sizeof(err));
		return 0;
	}
	check(c.rdma_port >= 0 && c.rdma_port <= 65535);
	check(c.mount_port >= 0 && c.mount_port <= 65535);
	check(c.tcp_port >= -1 && c.tcp_port <= 65535);
	check(c.threads <= 1024);
	check(c.log_level >= 3 && c.log_level <= 7);
	check(!strcmp(c.provider, "soft") || !strcmp(c.provider, "verbs"));
	bounded(c.listen, sizeof(c.listen));
	bounded(c.provider_opts, sizeof(c.provider_opts));
	bounded(c.state_dir, sizeof(c.state_dir));
	bounded(c.stats_socket, sizeof(c.stats_socket));
	bounded(c.port_file, sizeof(c.port_file));
	bounded(c.export_dir, sizeof(c.export_dir));
	bounded(c.name, sizeof(c.name));
	check(!c.export_dir[0] || c.export_dir[0] == '/');
	check(c.nmore < FS_CONF_MAX_EXPORTS);
	check(fs_conf_nexports(&c) <= FS_CONF_MAX_EXPORTS);
	static struct fs_conf_export e;
	for (unsigned x = 0; x < fs_conf_nexports(&c); x++) {
		fs_conf_export_get(&c, x, &e);
		bounded(e.dir, sizeof(e.dir));
		bounded(e.name, sizeof(e.name));
		check(e.dir[0] == '/');
		check(x == 0 || e.line > 0);
		check(e.nallow <= FS_CONF_MAX_ALLOW);
		for (unsigned i = 0; i < e.nallow; i++) {
			const struct fs_cidr *n = &e.allow[i];
			struct sockaddr_storage ss;
			memset(&ss, 0, sizeof(ss));
			if (n->family == AF_INET) {
				check(n->bits <= 32);
				ss.ss_family = AF_INET;
				memcpy(&((struct sockaddr_in *)&ss)->sin_addr, n->addr, 4);
			} else {
				check(n->family == AF_INET6 && n->bits <= 128);
				ss.ss_family = AF_INET6;
				memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, n->addr, 16);
			}
			check(fs_cidr_match(n, &ss));
		}
		/* no export directory twice (as written) */
		for (unsigned y = 0; y < x; y++) {
			static struct fs_conf_export o;
			fs_conf_export_get(&c, y, &o);
			check(strcmp(o.dir, e.dir) != 0);
		}
	}
	/* merging a parsed config into defaults gives the same restart keys */
	static struct fs_conf d;
	fs_conf_defaults(&d);
	fs_conf_merge(&d, &c);
	char diff[512];
	fs_conf_restart_diff(&c, &d, diff, sizeof(diff));
	check(diff[0] == '\0');
	return 0;
}
