/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/tcp_srv.c - see tcp_srv.h. One thread; poll() with a
 * 50 ms tick so tsrv_stop() is prompt; records are read whole (blocking
 * reads with a receive timeout) since the client sends one fragment.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <rrr/oncrpc.h>
#include <rrr/xdr.h>

#include "tcp_srv.h"

#include <criterion/criterion.h>
#include <stdio.h>

struct tsrv {
	int lfd;
	pthread_t th;
	atomic_bool stop;
	atomic_uint accepts;
	atomic_uint calls;
};

static int read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);

		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static int send_record(int fd, uint8_t *buf, size_t len)
{
	uint32_t rm = htonl(RRR_RPC_RM_LAST | (uint32_t)len);

	memcpy(buf, &rm, 4);
	return write_full(fd, buf, len + 4);
}

/* Serve one call; -1 closes the connection. */
static int serve_one(struct tsrv *s, int fd, uint8_t *in, size_t inlen, uint8_t *out, size_t outcap)
{
	struct rrr_xdr a, r;
	struct rrr_rpc_call call;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;
	uint32_t len, n;

	atomic_fetch_add(&s->calls, 1);
	rrr_xdr_init(&a, in, inlen, RRR_XDR_DECODE);
	if (rrr_rpc_decode_call(&a, &call))
		return -1;
	rrr_xdr_init(&r, out + 4, outcap - 4, RRR_XDR_ENCODE);
	switch (call.proc) {
	case TSRV_NULL:
		rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_SUCCESS, 0, 0);
		break;
	case TSRV_ECHO:
		if (rrr_xdr_decode_payload(&a, 8u << 20, &len, iov, &niov)) {
			rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_GARBAGE_ARGS, 0, 0);
			break;
		}
		rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_SUCCESS, 0, 0);
		if (rrr_xdr_encode_payload(&r, iov, niov, len))
			return -1;
		break;
	case TSRV_SILENT:
		return 0;
	case TSRV_HANGUP:
		return -1;
	case TSRV_UNAVAIL:
		rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_PROC_UNAVAIL, 0, 0);
		break;
	case TSRV_GARBAGE:
		rrr_xdr_put_u32(&r, call.xid);
		rrr_xdr_put_u32(&r, 7);
		break;
	case TSRV_FILL: {
		uint8_t *p;
		struct iovec one;

		if (rrr_xdr_get_u32(&a, &n) || n > (4u << 20))
			return -1;
		p = malloc(n ? n : 1);
		for (uint32_t i = 0; i < n; i++)
			p[i] = (uint8_t)(i * 7 + 3);
		one.iov_base = p;
		one.iov_len = n;
		rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_SUCCESS, 0, 0);
		rrr_xdr_encode_payload(&r, &one, 1, n);
		free(p);
		break;
	}
	default:
		rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_PROC_UNAVAIL, 0, 0);
	}
	return send_record(fd, out, rrr_xdr_pos(&r));
}

static void serve_conn(struct tsrv *s, int fd)
{
	size_t outcap = 9u << 20;
	uint8_t *out = malloc(outcap), *in = NULL;
	struct timeval tv = {.tv_sec = 5};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (!atomic_load(&s->stop)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint32_t rm, len;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if (read_full(fd, &rm, 4))
			break;
		rm = ntohl(rm);
		len = rm & RRR_RPC_RM_LEN_MASK;
		if (!(rm & RRR_RPC_RM_LAST) || len > (9u << 20))
			break;
		in = realloc(in, len ? len : 1);
		if (read_full(fd, in, len))
			break;
		if (serve_one(s, fd, in, len, out, outcap))
			break;
	}
	free(in);
	free(out);
	close(fd);
}

static void *srv_main(void *arg)
{
	struct tsrv *s = arg;

	while (!atomic_load(&s->stop)) {
		struct pollfd p = {.fd = s->lfd, .events = POLLIN};
		int fd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		atomic_fetch_add(&s->accepts, 1);
		serve_conn(s, fd);
	}
	return NULL;
}

int tsrv_start(struct tsrv **out, uint16_t *port)
{
	struct tsrv *s = calloc(1, sizeof(*s));
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sin);
	int one = 1;

	if (!s)
		return -ENOMEM;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(s->lfd, 8) ||
	    getsockname(s->lfd, (struct sockaddr *)&sin, &sl)) {
		close(s->lfd);
		free(s);
		return -errno;
	}
	*port = ntohs(sin.sin_port);
	pthread_create(&s->th, NULL, srv_main, s);
	*out = s;
	return 0;
}

void tsrv_stop(struct tsrv *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	close(s->lfd);
	free(s);
}

unsigned tsrv_accepts(struct tsrv *s)
{
	return atomic_load(&s->accepts);
}

unsigned tsrv_calls(struct tsrv *s)
{
	return atomic_load(&s->calls);
}

void tsrv_start_clnt(struct tsrv **srv, struct rrr_clnt **clnt, uint32_t timeout_ms, bool fail_fast)
{
	struct rrr_clnt_opts o;
	uint16_t port;
	char ps[16];

	cr_assert_eq(tsrv_start(srv, &port), 0);
	snprintf(ps, sizeof(ps), "%u", port);
	rrr_clnt_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = ps;
	o.timeout_ms = timeout_ms;
	o.fail_fast = fail_fast;
	cr_assert_eq(rrr_clnt_create(&o, clnt), 0, "%s", rrr_last_error());
}

void tsrv_stop_clnt(struct tsrv **srv, struct rrr_clnt **clnt)
{
	rrr_clnt_destroy(*clnt);
	*clnt = NULL;
	tsrv_stop(*srv);
	*srv = NULL;
}
