/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/helpers/fixture.c - test program, threaded server fixture and a
 * raw TCP record-marking client for the server tests.
 */
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rrr/oncrpc.h>
#include <rrr/xdr.h>

#include "../../test_env.h"
#include "svc_test.h"

static int tp_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	return 0;
}

static int tp_echo(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV], out;
	unsigned niov = 0, i;
	uint32_t len;
	size_t off = 0;
	uint8_t *buf;

	if (rrr_xdr_decode_payload(args, 16u << 20, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	buf = rrr_svc_req_alloc(req, len);
	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	for (i = 0; i < niov; i++) {
		if (iov[i].iov_len > len - off)
			return RRR_SVC_SYSTEM_ERR;
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	if (off != len)
		return RRR_SVC_SYSTEM_ERR;
	out.iov_base = buf;
	out.iov_len = len;
	return rrr_xdr_encode_payload(res, &out, 1, len);
}

static int tp_garbage(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	rrr_xdr_put_u32(res, 0xdeadbeef); /* discarded by the library */
	return RRR_SVC_GARBAGE_ARGS;
}

static int tp_syserr(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	return RRR_SVC_SYSTEM_ERR;
}

static int tp_drop(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	return RRR_SVC_DROP;
}

static int tp_add(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const struct rrr_rpc_call *call = rrr_svc_req_call(req);
	uint32_t a, b;
	int rc;

	if (rrr_xdr_get_u32(args, &a) || rrr_xdr_get_u32(args, &b))
		return RRR_SVC_GARBAGE_ARGS;
	rc = rrr_xdr_put_u32(res, a + b);
	if (!rc)
		rc = rrr_xdr_put_u32(res,
				     call->cred.flavor == RRR_AUTH_SYS ? call->cred.sys.uid : ~0u);
	if (!rc)
		rc = rrr_xdr_put_u32(res, *(uint32_t *)rrr_svc_req_program_ctx(req));
	return rc;
}

static int tp_fill(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	uint32_t len, byte;
	struct iovec iov;
	uint8_t *buf;

	if (rrr_xdr_get_u32(args, &len) || rrr_xdr_get_u32(args, &byte))
		return RRR_SVC_GARBAGE_ARGS;
	if (len > rrr_svc_req_max_payload(req))
		return RRR_SVC_GARBAGE_ARGS;
	buf = rrr_svc_req_alloc(req, len);
	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	memset(buf, (int)byte, len);
	iov.iov_base = buf;
	iov.iov_len = len;
	return rrr_xdr_encode_payload(res, &iov, 1, len);
}

static uint8_t static_pat[1u << 20];

static void fill_static(void)
{
	size_t i;

	for (i = 0; i < sizeof(static_pat); i++)
		static_pat[i] = tpat(99, i);
}

uint32_t tfnv(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static int tp_sum(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0, i;
	uint32_t len, h = 2166136261u;
	size_t seen = 0;

	(void)req;
	if (rrr_xdr_decode_payload(args, 16u << 20, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	for (i = 0; i < niov; i++) {
		const uint8_t *b = iov[i].iov_base;

		for (size_t k = 0; k < iov[i].iov_len; k++)
			h = (h ^ b[k]) * 16777619u;
		seen += iov[i].iov_len;
	}
	if (seen != len)
		return RRR_SVC_SYSTEM_ERR;
	if (rrr_xdr_put_u32(res, len) || rrr_xdr_put_u32(res, h))
		return RRR_SVC_SYSTEM_ERR;
	return 0;
}

static int tp_slowsum(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	usleep(TP_SLOW_MS * 1000u);
	return tp_sum(req, args, res);
}

static int tp_big(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	uint32_t n, seed;
	uint8_t *buf;
	size_t i;

	if (rrr_xdr_get_u32(args, &n) || rrr_xdr_get_u32(args, &seed) || n > (4u << 20))
		return RRR_SVC_GARBAGE_ARGS;
	buf = rrr_svc_req_alloc(req, n);
	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	for (i = 0; i < n; i++)
		buf[i] = tpat(seed, i);
	return rrr_xdr_put_opaque(res, buf, n);
}

static int tp_hashop(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const void *p;
	uint32_t n;

	(void)req;
	if (rrr_xdr_get_opaque_inline(args, 16u << 20, &p, &n))
		return RRR_SVC_GARBAGE_ARGS;
	if (rrr_xdr_put_u32(res, n) || rrr_xdr_put_u32(res, tfnv(p, n)))
		return RRR_SVC_SYSTEM_ERR;
	return 0;
}

/* Payload from memory the library did not hand out (not registered). */
static int tp_static(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct iovec iov;
	uint32_t len;

	(void)req;
	pthread_once(&once, fill_static);
	if (rrr_xdr_get_u32(args, &len) || len > sizeof(static_pat))
		return RRR_SVC_GARBAGE_ARGS;
	iov.iov_base = static_pat;
	iov.iov_len = len;
	return rrr_xdr_encode_payload(res, &iov, 1, len);
}

static const struct rrr_svc_proc tprocs[TP_NPROCS] = {
    [TP_NULL] = {"null", tp_null},
    [TP_ECHO] = {"echo", tp_echo},
    [TP_GARBAGE] = {"garbage", tp_garbage},
    [TP_SYSERR] = {"syserr", tp_syserr},
    [TP_DROP] = {"drop", tp_drop},
    [TP_HOLE] = {"hole", NULL},
    [TP_ADD] = {"add", tp_add},
    [TP_FILL] = {"fill", tp_fill},
    [TP_SUM] = {"sum", tp_sum},
    [TP_BIG] = {"big", tp_big},
    [TP_HASHOP] = {"hashop", tp_hashop},
    [TP_STATIC] = {"static", tp_static},
    [TP_SLOWSUM] = {"slowsum", tp_slowsum},
};

static uint32_t ctx_v1 = 1, ctx_v3 = 3;

int tprog_register(struct rrr_svc *svc)
{
	struct rrr_svc_program p = {
	    .prog = TPROG,
	    .vers = TPROG_V1,
	    .procs = tprocs,
	    .nprocs = TP_NPROCS,
	    .ctx = &ctx_v1,
	};
	int rc = rrr_svc_register(svc, &p);

	if (rc)
		return rc;
	p.vers = TPROG_V3;
	p.ctx = &ctx_v3;
	return rrr_svc_register(svc, &p);
}

static void *run_thread(void *arg)
{
	struct tsvc *t = arg;

	t->run_rc = rrr_svc_run(t->svc);
	return NULL;
}

int tsvc_start(struct tsvc *t, const struct rrr_svc_opts *opts, int rdma)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = rrr_svc_create(opts, &t->svc);
	if (rc)
		return rc;
	rc = tprog_register(t->svc);
	if (!rc)
		rc = rrr_svc_listen_tcp(t->svc, "127.0.0.1", "0", &t->tcp_port);
	if (!rc && rdma)
		rc = rrr_svc_listen_rdma(t->svc, tenv_addr(), "0", &t->rdma_port);
	if (!rc)
		rc = -pthread_create(&t->th, NULL, run_thread, t);
	if (rc) {
		rrr_svc_destroy(t->svc);
		t->svc = NULL;
	}
	return rc;
}

int tsvc_stop(struct tsvc *t)
{
	struct timespec ts;
	int rc;

	if (!t->svc)
		return 0;
	rrr_svc_stop(t->svc);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	rc = pthread_timedjoin_np(t->th, NULL, &ts);
	if (rc)
		return -rc;
	rrr_svc_destroy(t->svc);
	t->svc = NULL;
	return t->run_rc;
}

int tcp_connect_port(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t len)
{
	uint8_t *b = p;

	while (len) {
		ssize_t n = recv(fd, b, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

int rm_send(int fd, const void *buf, size_t len, size_t frag)
{
	const uint8_t *b = buf;

	if (!frag)
		frag = len ? len : 1;
	do {
		size_t n = len < frag ? len : frag;
		uint32_t m = (uint32_t)n | (n == len ? RRR_RPC_RM_LAST : 0);
		uint8_t mk[4] = {(uint8_t)(m >> 24), (uint8_t)(m >> 16), (uint8_t)(m >> 8),
				 (uint8_t)m};
		int rc = write_all(fd, mk, 4);

		if (!rc)
			rc = write_all(fd, b, n);
		if (rc)
			return rc;
		b += n;
		len -= n;
	} while (len);
	return 0;
}

long rm_recv(int fd, void *buf, size_t cap)
{
	size_t have = 0;
	bool last = false;

	while (!last) {
		uint8_t mk[4];
		uint32_t m, n;
		int rc = read_all(fd, mk, 4);

		if (rc)
			return rc;
		m = (uint32_t)mk[0] << 24 | (uint32_t)mk[1] << 16 | (uint32_t)mk[2] << 8 | mk[3];
		n = m & RRR_RPC_RM_LEN_MASK;
		last = m & RRR_RPC_RM_LAST;
		if (n > cap - have)
			return -EMSGSIZE;
		rc = read_all(fd, (uint8_t *)buf + have, n);
		if (rc)
			return rc;
		have += n;
	}
	return (long)have;
}

void tsvc_opts(struct rrr_svc_opts *o, unsigned nthreads)
{
	rrr_svc_opts_init(o);
	o->nthreads = nthreads;
	o->provider = tenv_provider();
	o->provider_opts = tenv_provider_opts();
}
