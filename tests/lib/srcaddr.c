/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/srcaddr.c - the test binary's own connect(): it takes
 * precedence over libc's for every caller in the process (librrr.a is
 * linked in statically; executables interpose shared libraries), binds an
 * AF_INET socket to the address th_src_addr() chose, then does the real
 * connect system call. The client library and both providers' TCP
 * connections (TCP transport, soft iWARP) go through it, so the server sees
 * that peer address on RDMA and on TCP. Without th_src_addr() it is a
 * plain connect(). Criterion runs each test in its own process, so the
 * choice never leaks into another test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/lib/srcaddr.h"

static struct in_addr g_src;
static int g_have;

void th_src_addr(const char *addr)
{
	g_have = addr && inet_pton(AF_INET, addr, &g_src) == 1;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (g_have && addr && addr->sa_family == AF_INET) {
		struct sockaddr_in me;
		memset(&me, 0, sizeof(me));
		me.sin_family = AF_INET;
		me.sin_addr = g_src;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 && errno != EINVAL)
			return -1; /* EINVAL: already bound (a retried connect) */
	}
	return (int)syscall(SYS_connect, fd, addr, len);
}
