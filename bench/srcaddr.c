/* SPDX-License-Identifier: MIT */
/*
 * bench/srcaddr.c - where rrr-bench's outgoing IPv4 connections come from,
 * so that one process can be many clients of one server (rrr-bench scale:
 * connections from several source addresses, as many clients would make,
 * within the server's max_conns_per_addr).
 *
 * Normal operation: rrr__bench_src_addr(k) picks 127.0.1.(1 + k % 254);
 * this program's own connect() - it takes precedence over libc's for every
 * caller in the process, the client library and both providers' TCP
 * sockets included (the executable interposes the shared libraries) -
 * binds an AF_INET socket to it and then makes the real connect system
 * call. Until rrr__bench_src_addr() is called it is a plain connect(), so
 * every other subcommand is untouched.
 *
 * Recovery: a bind that fails (the address is not local: loopback only)
 * is ignored and the kernel chooses, as without this file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_nfs.h"

static _Atomic uint32_t g_src; /* network order; 0: none */

void rrr__bench_src_addr(unsigned k)
{
	atomic_store(&g_src, htonl(0x7f000100u | (1u + k % 254u)));
}

int connect(int fd, const struct sockaddr *addr, socklen_t len);

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	uint32_t src = atomic_load(&g_src);

	if (src && addr && addr->sa_family == AF_INET &&
	    ((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
		struct sockaddr_in me;
		int one = 1;

		memset(&me, 0, sizeof(me));
		me.sin_family = AF_INET;
		me.sin_addr.s_addr = src;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 && errno != EINVAL) {
			/* not local: the kernel's choice */
		}
	}
	return (int)syscall(SYS_connect, fd, addr, len);
}
