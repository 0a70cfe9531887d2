/* SPDX-License-Identifier: MIT */
/*
 * server/fs/rpc_call.c - rrr-server as an ONC RPC client, for the calls it
 * makes on its own: registrations with the local rpcbind (rpcb.c), a
 * client's lock manager told that a blocked lock is granted (NLM GRANTED),
 * a client's status monitor told that this server restarted (SM_NOTIFY).
 *
 * Normal operation: a stream socket (the local rpcbind's unix socket, or
 * TCP to the client), one call at a time with AUTH_NONE, record marking
 * (RFC 5531 section 11) on both sides: the call in one fragment, the reply
 * joined from its fragments into the caller's buffer. A client's port is
 * asked of its portmapper, version 2, over TCP:
 *
 *   PMAPPROC_GETPORT (3):  +--------+--------+-------------+--------+
 *                          | prog   | vers   | prot (6=TCP)| port=0 |
 *                          +--------+--------+-------------+--------+
 *   reply:                 | port (u32; 0: not registered)          |
 *
 * Recovery: every connect, send and receive has FS_RPC_TIMEOUT_MS; a peer
 * that does not answer, answers something else (wrong xid, a call) or sends
 * a record larger than the buffer fails the call with -errno, and the
 * caller decides (retry later, give up, log). The peer is not trusted: a
 * reply's length is bounded before anything is read into the buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <rrr/oncrpc.h>

#include "server/fs/rpc_call.h"

#define PMAP_PROG 100000u
#define PMAP_VERS 2u
#define PMAP_GETPORT 3u

static int io_all(int fd, void *buf, size_t len, bool out)
{
	uint8_t *p = buf;
	while (len) {
		struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
		int r = poll(&pfd, 1, FS_RPC_TIMEOUT_MS);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fs_rpc_connect(const struct sockaddr_storage *addr, uint16_t port)
{
	struct sockaddr_storage ss = *addr;
	socklen_t sl;
	if (ss.ss_family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
		sl = sizeof(struct sockaddr_in);
	} else if (ss.ss_family == AF_INET6) {
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		sl = sizeof(struct sockaddr_in6);
	} else {
		return -EAFNOSUPPORT;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	int r = poll(&pfd, 1, FS_RPC_TIMEOUT_MS);
	int err = 0;
	socklen_t el = sizeof(err);
	if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		close(fd);
		return r == 0 ? -ETIMEDOUT : err ? -err : -EIO;
	}
	return fd;
}

int fs_rpc_call(int fd, uint32_t prog, uint32_t vers, uint32_t proc, const void *args,
		size_t alen, uint8_t *buf, uint32_t cap, struct rrr_xdr *res)
{
	static _Atomic uint32_t xid_seed;
	uint32_t seed = xid_seed;
	if (!seed) {
		seed = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
		xid_seed = seed;
	}
	uint32_t my = ++xid_seed;
	uint8_t hdr[4 + 64];
	struct rrr_xdr x;
	rrr_xdr_init(&x, hdr + 4, sizeof(hdr) - 4, RRR_XDR_ENCODE);
	if (rrr_rpc_encode_call(&x, my, prog, vers, proc, NULL) < 0 || alen > FS_RPC_MSG)
		return -EMSGSIZE;
	uint32_t mark = htonl(0x80000000u | (uint32_t)(rrr_xdr_pos(&x) + alen));
	memcpy(hdr, &mark, 4);
	int rc = io_all(fd, hdr, 4 + rrr_xdr_pos(&x), true);
	if (rc == 0 && alen)
		rc = io_all(fd, (void *)args, alen, true);
	if (rc < 0)
		return rc;
	uint32_t len = 0;
	for (bool last = false; !last;) {
		if ((rc = io_all(fd, &mark, 4, false)) < 0)
			return rc;
		mark = ntohl(mark);
		last = (mark & 0x80000000u) != 0;
		uint32_t frag = mark & 0x7fffffffu;
		if (frag > cap - len)
			return -EMSGSIZE;
		if ((rc = io_all(fd, buf + len, frag, false)) < 0)
			return rc;
		len += frag;
	}
	if (len % 4)
		return -EPROTO;
	rrr_xdr_init(res, buf, len, RRR_XDR_DECODE);
	struct rrr_rpc_reply rep;
	if (rrr_rpc_decode_reply(res, &rep) < 0 || rep.xid != my)
		return -EPROTO;
	if (rep.stat != RRR_RPC_MSG_ACCEPTED || rep.accept_stat != RRR_RPC_SUCCESS)
		return -EACCES;
	return 0;
}

int fs_rpc_getport(const struct sockaddr_storage *addr, uint32_t prog, uint32_t vers)
{
	int fd = fs_rpc_connect(addr, 111);
	if (fd < 0)
		return fd;
	uint8_t args[16], buf[256];
	struct rrr_xdr x;
	rrr_xdr_init(&x, args, sizeof(args), RRR_XDR_ENCODE);
	rrr_xdr_put_u32(&x, prog);
	rrr_xdr_put_u32(&x, vers);
	rrr_xdr_put_u32(&x, IPPROTO_TCP);
	rrr_xdr_put_u32(&x, 0);
	int rc = fs_rpc_call(fd, PMAP_PROG, PMAP_VERS, PMAP_GETPORT, args, sizeof(args), buf,
			     sizeof(buf), &x);
	close(fd);
	uint32_t port = 0;
	if (rc == 0 && rrr_xdr_get_u32(&x, &port) < 0)
		rc = -EPROTO;
	if (rc < 0)
		return rc;
	return port > 65535 ? -EPROTO : (int)port;
}
