/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/conf_server.h - rrr-server started with a config file
 * the test writes (access control, reload, stats tests).
 */
#ifndef RRR_TESTS_NFS_CONF_SERVER_H
#define RRR_TESTS_NFS_CONF_SERVER_H

#include <stdbool.h>

#include "tests/lib/nfs_helpers.h"

/* Write s->dir/rrr-server.conf: a [server] part with ephemeral ports, the
 * port file, the state dir, RDMA on or off, then "[export EXPORT_DIR]" and
 * the lines @export_lines (may be ""). Path into @conf (400 bytes). */
int th_conf_write(struct th_server *s, bool rdma, const char *export_lines, char *conf);
/* Write s->dir/rrr-server.conf with the text @fmt... alone (printf); path
 * into @conf (400 bytes). 0 or -errno. */
__attribute__((format(printf, 3, 4))) int th_conf_printf(struct th_server *s, char *conf,
							 const char *fmt, ...);
/* Start rrr-server --config @conf (log in s->log; RRR_LOG_FORMAT=plain
 * unless the test set it); waits for the port file up to 10 s. 0 or -errno. */
int th_server_start_conf(struct th_server *s, const char *conf);
/* Wait up to @timeout_s for @needle in the server log. */
bool th_log_wait(struct th_server *s, const char *needle, int timeout_s);
/* Run "PROG ARGS..." through the shell with stdout and stderr into @out;
 * exit status (or -1). @args is shell text. */
int th_sh(const char *prog, const char *args, const char *out);
/* Whether ::1 can be bound here (IPv6 on the loopback). */
bool th_have_ipv6_loopback(void);
/* The value of counter "  @name N" in file @path, or -1. */
long long th_counter(const char *path, const char *name);

#endif
