/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/tcp.c - the server over TCP record marking: dispatch outcomes
 * (every accept/reject status), multi-fragment records, payloads, hostile
 * fragment sizes, concurrency across workers, counters, and shutdown.
 * Real sockets on loopback, ephemeral ports, every wait bounded.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rrr/client.h>
#include <rrr/oncrpc.h>
#include <rrr/server.h>
#include <rrr/xdr.h>

#include "../test_wait.h"
#include "helpers/svc_test.h"

static struct tsvc srv;

static void setup(void)
{
	struct rrr_svc_opts o;

	rrr_svc_opts_init(&o);
	o.nthreads = 2;
	o.max_payload = 1u << 20;
	cr_assert_eq(tsvc_start(&srv, &o, 0), 0, "server start: %s", strerror(errno));
}

static void teardown(void)
{
	cr_assert_eq(tsvc_stop(&srv), 0);
}

TestSuite(svc_tcp, .init = setup, .fini = teardown, .timeout = 60);

/* Build a call into @buf; returns its length. */
static size_t mkcall(uint8_t *buf, size_t cap, uint32_t xid, uint32_t prog, uint32_t vers,
		     uint32_t proc, const struct rrr_rpc_cred *cred, const uint32_t *words,
		     unsigned nwords, const void *payload, uint32_t plen)
{
	struct rrr_xdr x;
	unsigned i;

	rrr_xdr_init(&x, buf, cap, RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, xid, prog, vers, proc, cred), 0);
	for (i = 0; i < nwords; i++)
		cr_assert_eq(rrr_xdr_put_u32(&x, words[i]), 0);
	if (payload)
		cr_assert_eq(rrr_xdr_put_opaque(&x, payload, plen), 0);
	return rrr_xdr_pos(&x);
}

/* A TCP connection to the test server: its socket (asserted). */
static int connect_srv(void)
{
	int fd = tcp_connect_port(srv.tcp_port);

	cr_assert_geq(fd, 0, "connect to the server: %d", fd);
	return fd;
}

static long roundtrip(int fd, const uint8_t *call, size_t len, size_t frag, uint8_t *rep,
		      size_t cap, struct rrr_rpc_reply *r, struct rrr_xdr *rx)
{
	long n;

	cr_assert_eq(rm_send(fd, call, len, frag), 0);
	n = rm_recv(fd, rep, cap);
	cr_assert_gt(n, 0, "no reply: %ld", n);
	rrr_xdr_init(rx, rep, (size_t)n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_rpc_decode_reply(rx, r), 0);
	return n;
}

Test(svc_tcp, null_and_add)
{
	uint8_t call[256], rep[256];
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;
	uint32_t w[2] = {40, 2}, v;
	int fd = connect_srv();
	size_t len;

	len = mkcall(call, sizeof(call), 7, TPROG, 1, TP_NULL, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.xid, 7);
	cr_assert_eq(r.stat, RRR_RPC_MSG_ACCEPTED);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	cr_assert_eq(rrr_xdr_remaining(&rx), 0);

	len = mkcall(call, sizeof(call), 8, TPROG, 3, TP_ADD, NULL, w, 2, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	cr_assert_eq(rrr_xdr_get_u32(&rx, &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(rrr_xdr_get_u32(&rx, &v), 0);
	cr_assert_eq(v, ~0u, "AUTH_NONE call has no uid");
	cr_assert_eq(rrr_xdr_get_u32(&rx, &v), 0);
	cr_assert_eq(v, 3, "program ctx of version 3");
	close(fd);
}

Test(svc_tcp, auth_sys_passed_to_handler)
{
	uint8_t call[512], rep[256];
	struct rrr_rpc_cred cred = {
	    .flavor = RRR_AUTH_SYS,
	    .sys = {.machinename = "client", .uid = 1234, .gid = 5, .ngids = 2, .gids = {5, 6}}};
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;
	uint32_t w[2] = {1, 2}, v;
	int fd = connect_srv();
	size_t len;

	len = mkcall(call, sizeof(call), 9, TPROG, 1, TP_ADD, &cred, w, 2, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	cr_assert_eq(rrr_xdr_get_u32(&rx, &v), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(rrr_xdr_get_u32(&rx, &v), 0);
	cr_assert_eq(v, 1234);
	close(fd);
}

Test(svc_tcp, accept_errors)
{
	uint8_t call[256], rep[256];
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;
	uint32_t one = 1;
	int fd = connect_srv();
	size_t len;

	len = mkcall(call, sizeof(call), 1, 0x2fffffff, 1, 0, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.stat, RRR_RPC_MSG_ACCEPTED);
	cr_assert_eq(r.accept_stat, RRR_RPC_PROG_UNAVAIL);

	len = mkcall(call, sizeof(call), 2, TPROG, 2, 0, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_PROG_MISMATCH);
	cr_assert_eq(r.mismatch_low, 1);
	cr_assert_eq(r.mismatch_high, 3);

	len = mkcall(call, sizeof(call), 3, TPROG, 1, TP_HOLE, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_PROC_UNAVAIL);

	len = mkcall(call, sizeof(call), 4, TPROG, 1, 999, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_PROC_UNAVAIL);

	len = mkcall(call, sizeof(call), 5, TPROG, 1, TP_GARBAGE, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_GARBAGE_ARGS);
	cr_assert_eq(rrr_xdr_remaining(&rx), 0, "handler's partial results are discarded");

	/* ADD with one argument missing: the handler reports garbage */
	len = mkcall(call, sizeof(call), 6, TPROG, 1, TP_ADD, NULL, &one, 1, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_GARBAGE_ARGS);

	len = mkcall(call, sizeof(call), 7, TPROG, 1, TP_SYSERR, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.accept_stat, RRR_RPC_SYSTEM_ERR);

	/* DROP: no reply; the next call on the same connection is answered */
	len = mkcall(call, sizeof(call), 8, TPROG, 1, TP_DROP, NULL, NULL, 0, NULL, 0);
	cr_assert_eq(rm_send(fd, call, len, 0), 0);
	len = mkcall(call, sizeof(call), 9, TPROG, 1, TP_NULL, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.xid, 9);
	close(fd);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

Test(svc_tcp, rejected_calls)
{
	uint8_t call[256], rep[256];
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;
	int fd = connect_srv();
	size_t len;

	/* rpcvers 3 -> RPC_MISMATCH 2..2 */
	len = mkcall(call, sizeof(call), 11, TPROG, 1, 0, NULL, NULL, 0, NULL, 0);
	put32(call + 8, 3);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.xid, 11);
	cr_assert_eq(r.stat, RRR_RPC_MSG_DENIED);
	cr_assert_eq(r.reject_stat, RRR_RPC_MISMATCH);
	cr_assert_eq(r.mismatch_low, 2);
	cr_assert_eq(r.mismatch_high, 2);

	/* RPCSEC_GSS (6) credential -> AUTH_ERROR BADCRED */
	len = mkcall(call, sizeof(call), 12, TPROG, 1, 0, NULL, NULL, 0, NULL, 0);
	put32(call + 24, 6);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.stat, RRR_RPC_MSG_DENIED);
	cr_assert_eq(r.reject_stat, RRR_RPC_AUTH_ERROR);
	cr_assert_eq(r.auth_stat, RRR_AUTH_BADCRED);

	/* verifier flavor AUTH_SYS -> AUTH_ERROR BADVERF */
	len = mkcall(call, sizeof(call), 13, TPROG, 1, 0, NULL, NULL, 0, NULL, 0);
	put32(call + 32, 1);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.reject_stat, RRR_RPC_AUTH_ERROR);
	cr_assert_eq(r.auth_stat, RRR_AUTH_BADVERF);

	/* a REPLY sent to the server and a truncated call are dropped */
	put32(call + 4, RRR_RPC_REPLY);
	cr_assert_eq(rm_send(fd, call, len, 0), 0);
	cr_assert_eq(rm_send(fd, call, 16, 0), 0);
	len = mkcall(call, sizeof(call), 14, TPROG, 1, 0, NULL, NULL, 0, NULL, 0);
	roundtrip(fd, call, len, 0, rep, sizeof(rep), &r, &rx);
	cr_assert_eq(r.xid, 14);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	close(fd);
}

Test(svc_tcp, echo_multi_fragment)
{
	static const uint32_t sizes[] = {0, 1, 3, 4, 5, 4095, 65537, 1u << 20};
	size_t cap = (1u << 20) + 4096;
	uint8_t *call = malloc(cap), *rep = malloc(cap), *pl = malloc(1u << 20);
	int fd = connect_srv();
	unsigned i;

	cr_assert(call && rep && pl);
	for (i = 0; i < (1u << 20); i++)
		pl[i] = (uint8_t)(i * 7 + 3);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rrr_rpc_reply r;
		struct rrr_xdr rx;
		const void *p;
		uint32_t n;
		size_t len =
		    mkcall(call, cap, 100 + i, TPROG, 1, TP_ECHO, NULL, NULL, 0, pl, sizes[i]);

		/* odd fragment sizes split words and the marker boundaries */
		roundtrip(fd, call, len, i % 2 ? 1000 : 7, rep, cap, &r, &rx);
		cr_assert_eq(r.xid, 100 + i);
		cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS, "size %u", sizes[i]);
		cr_assert_eq(rrr_xdr_get_opaque_inline(&rx, 1u << 20, &p, &n), 0);
		cr_assert_eq(n, sizes[i]);
		cr_assert_eq(memcmp(p, pl, n), 0);
		cr_assert_eq(rrr_xdr_remaining(&rx), 0);
	}
	close(fd);
	free(call);
	free(rep);
	free(pl);
}

/* Sends the record marker @mark on @fd: the server must close the
 * connection; @fd closed. */
static void mark_closes(int fd, uint32_t mark)
{
	uint8_t mk[4], buf[16];

	put32(mk, mark);
	cr_assert_eq(send(fd, mk, 4, MSG_NOSIGNAL), 4);
	cr_assert_eq(recv(fd, buf, sizeof(buf), 0), 0, "server closes the connection");
	close(fd);
}

Test(svc_tcp, oversized_fragment_closes)
{
	uint8_t mk[4];
	int fd = connect_srv(), fd2;

	/* 1 MiB + 64 KiB is the bound; announce 2 GiB - 1 */
	mark_closes(fd, RRR_RPC_RM_LAST | 0x7fffffffu);

	/* two fragments that each fit but sum over the bound */
	fd = connect_srv();
	put32(mk, 0x100000u);
	cr_assert_eq(send(fd, mk, 4, MSG_NOSIGNAL), 4);
	{
		uint8_t *z = calloc(1, 0x100000u);
		size_t off = 0;

		while (off < 0x100000u) {
			ssize_t n = send(fd, z + off, 0x100000u - off, MSG_NOSIGNAL);

			cr_assert_gt(n, 0);
			off += (size_t)n;
		}
		free(z);
	}
	mark_closes(fd, RRR_RPC_RM_LAST | 0x20000u);

	/* the server still serves */
	fd2 = connect_srv();
	{
		uint8_t call[128], rep[128];
		struct rrr_rpc_reply r;
		struct rrr_xdr rx;
		size_t len = mkcall(call, sizeof(call), 5, TPROG, 1, 0, NULL, NULL, 0, NULL, 0);

		roundtrip(fd2, call, len, 0, rep, sizeof(rep), &r, &rx);
		cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	}
	close(fd2);
}

struct conc_arg {
	uint16_t port;
	int ok;
};

static void *conc_thread(void *a)
{
	struct conc_arg *ca = a;
	int fd = tcp_connect_port(ca->port), i;

	if (fd < 0)
		return NULL;
	for (i = 0; i < 200; i++) {
		uint8_t call[128], rep[128];
		struct rrr_xdr x;
		struct rrr_rpc_reply r;
		uint32_t v;
		long n;

		rrr_xdr_init(&x, call, sizeof(call), RRR_XDR_ENCODE);
		rrr_rpc_encode_call(&x, (uint32_t)i, TPROG, 1, TP_ADD, NULL);
		rrr_xdr_put_u32(&x, (uint32_t)i);
		rrr_xdr_put_u32(&x, 1000);
		if (rm_send(fd, call, rrr_xdr_pos(&x), 0))
			break;
		n = rm_recv(fd, rep, sizeof(rep));
		if (n <= 0)
			break;
		rrr_xdr_init(&x, rep, (size_t)n, RRR_XDR_DECODE);
		if (rrr_rpc_decode_reply(&x, &r) || r.xid != (uint32_t)i ||
		    r.accept_stat != RRR_RPC_SUCCESS || rrr_xdr_get_u32(&x, &v) ||
		    v != (uint32_t)i + 1000)
			break;
		ca->ok++;
	}
	close(fd);
	return NULL;
}

Test(svc_tcp, concurrent_connections_and_stats)
{
	struct conc_arg ca[6];
	pthread_t th[6];
	struct rrr_xprt_stats st;
	int i;

	for (i = 0; i < 6; i++) {
		ca[i].port = srv.tcp_port;
		ca[i].ok = 0;
		cr_assert_eq(pthread_create(&th[i], NULL, conc_thread, &ca[i]), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(ca[i].ok, 200, "thread %d: %d calls ok", i, ca[i].ok);
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.calls, 1200);
	cr_assert_geq(st.replies, 1200);
	cr_assert_geq(st.connects, 6);
}

Test(svc_tcp, stop_with_open_connection)
{
	int fd = connect_srv();
	uint8_t buf[8];

	/* half a marker: the server is mid-record when asked to stop */
	cr_assert_eq(send(fd, "\x80\x00", 2, MSG_NOSIGNAL), 2);
	{
		struct rrr_xprt_stats st;

		cr_assert(TEST_WAIT_UNTIL((rrr_svc_stats(srv.svc, &st), st.recv_bytes >= 2), 10000),
			  "the server read the two bytes");
	}
	cr_assert_eq(tsvc_stop(&srv), 0);
	/* closed by stop: a FIN, or a RST when the server closed before it had
	 * read the two bytes (a loaded machine): both mean the server let go */
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	cr_assert(n == 0 || (n < 0 && errno == ECONNRESET),
		  "connection closed by stop (recv %zd, errno %d)", n, n < 0 ? errno : 0);
	close(fd);
}

Test(svc_tcp, api_errors)
{
	struct rrr_svc_program p = {.prog = TPROG, .vers = 1, .procs = NULL, .nprocs = 0};
	struct rrr_svc_opts o;
	struct rrr_svc *s;

	cr_assert_eq(rrr_svc_create(NULL, NULL), -EINVAL);
	rrr_svc_opts_init(&o);
	o.inline_send = 100;
	cr_assert_eq(rrr_svc_create(&o, &s), -EINVAL);
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	cr_assert_eq(rrr_svc_create(&o, &s), 0);
	cr_assert_eq(rrr_svc_register(s, &p), 0);
	cr_assert_eq(rrr_svc_register(s, &p), -EEXIST);
	cr_assert_eq(rrr_svc_listen_tcp(s, "127.0.0.1", "notaport", NULL), -EINVAL);
	/* stop before run: run returns at once */
	rrr_svc_stop(s);
	cr_assert_eq(rrr_svc_run(s), 0);
	rrr_svc_destroy(s);
}

Test(svc_stats, print_format)
{
	struct rrr_xprt_stats st;
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	unsigned lines = 0;
	char *p;

	cr_assert(f);
	memset(&st, 0, sizeof(st));
	st.calls = 12345678901ull;
	st.credits = 32;
	st.rdma_errors_sent = 7;
	rrr_xprt_stats_print(f, "x: ", &st);
	rrr_xprt_stats_print(f, NULL, NULL); /* prints nothing */
	fclose(f);
	cr_assert(strstr(buf, "x: calls 12345678901\n"));
	cr_assert(strstr(buf, "x: credits 32\n"));
	cr_assert(strstr(buf, "x: rdma_errors_sent 7\n"));
	cr_assert(strstr(buf, "x: remote_inv 0\n"));
	cr_assert(strstr(buf, "x: depth_splits 0\n"));
	for (p = buf; *p; p++)
		lines += *p == '\n';
	cr_assert(strstr(buf, "x: offloaded 0\n"));
	cr_assert_eq(lines, 35, "one line per counter");
}

struct tcp_pay {
	const struct iovec *iov;
	uint32_t len;
};

static int enc_tcp_pay(struct rrr_xdr *x, const void *a)
{
	const struct tcp_pay *p = a;

	return rrr_xdr_encode_payload(x, p->iov, 1, p->len);
}

static int dec_tcp_pay(struct rrr_xdr *x, void *r)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;

	return rrr_xdr_decode_payload(x, 16u << 20, r, iov, &niov);
}

/* The client library over TCP against this server: payloads both ways. */
Test(svc_tcp, with_client_library)
{
	const uint32_t len = 300001;
	uint8_t *src = malloc(len), *sink = malloc(len + 8);
	struct iovec in = {src, len}, out = {sink, len + 8};
	struct tcp_pay pa = {&in, len};
	struct rrr_clnt_opts o;
	struct rrr_clnt *c;
	struct rrr_call call;
	uint32_t got = 0, i;
	char port[16];

	cr_assert(src && sink);
	for (i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 13 + 1);
	snprintf(port, sizeof(port), "%u", srv.tcp_port);
	rrr_clnt_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = port;
	o.timeout_ms = 10000;
	cr_assert_eq(rrr_clnt_create(&o, &c), 0, "%s", rrr_last_error());
	/* the echo lands in the sink */
	call = (struct rrr_call){ .prog = TPROG, .vers = 1, .proc = TP_ECHO, .encode = enc_tcp_pay,
				  .args = &pa, .decode = dec_tcp_pay, .res = &got,
				  .ddp = RRR_DDP_FROM_SERVER, .payload = &out, .npayload = 1 };
	cr_assert_eq(rrr_clnt_call(c, &call), 0, "%s", rrr_last_error());
	cr_assert_eq(got, len);
	cr_assert_eq(memcmp(sink, src, len), 0);
	call.proc = TP_HOLE;
	cr_assert_eq(rrr_clnt_call(c, &call), -EPROTO);
	cr_assert_eq(call.rpc_stat, RRR_RPC_PROC_UNAVAIL);
	rrr_clnt_destroy(c);
	free(src);
	free(sink);
}

/*
 * Fairness against a record that never ends: a client streaming zero-length,
 * not-last fragments adds nothing to the record, so the record bound never
 * stops it. On a server with one worker, another connection must still be
 * served while that stream goes on.
 */
static struct tsvc fair_srv;

static void fair_setup(void)
{
	struct rrr_svc_opts o;

	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	cr_assert_eq(tsvc_start(&fair_srv, &o, 0), 0, "server start: %s", strerror(errno));
}

static void fair_teardown(void)
{
	cr_assert_eq(tsvc_stop(&fair_srv), 0);
}

struct flood_arg {
	int fd;
	atomic_bool stop;
	uint8_t zeros[65536]; /* 16384 zero-length, not-last markers */
};

static void *flood_thread(void *a)
{
	struct flood_arg *fa = a;

	while (!atomic_load(&fa->stop))
		if (send(fa->fd, fa->zeros, sizeof(fa->zeros), MSG_NOSIGNAL) < 0)
			break;
	return NULL;
}

Test(svc_tcp_fair, zero_length_fragments_do_not_starve_others, .init = fair_setup,
     .fini = fair_teardown, .timeout = 60)
{
	struct flood_arg fa;
	pthread_t th;
	uint8_t call[128], rep[128];
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;
	size_t len;
	int fd;

	memset(&fa, 0, sizeof(fa));
	fa.fd = tcp_connect_port(fair_srv.tcp_port);
	cr_assert_geq(fa.fd, 0);
	atomic_init(&fa.stop, false);
	cr_assert_eq(pthread_create(&th, NULL, flood_thread, &fa), 0);
	/* the worker is busy with the stream */
	{
		struct rrr_xprt_stats st;

		cr_assert(TEST_WAIT_UNTIL((rrr_svc_stats(fair_srv.svc, &st),
					   st.recv_bytes >= 4 * sizeof(((struct flood_arg *)0)->zeros)),
					  10000),
			  "the server reads the flood (%llu bytes)", (unsigned long long)st.recv_bytes);
	}

	fd = tcp_connect_port(fair_srv.tcp_port);
	cr_assert_geq(fd, 0);
	len = mkcall(call, sizeof(call), 11, TPROG, 1, TP_NULL, NULL, NULL, 0, NULL, 0);
	cr_assert_eq(rm_send(fd, call, len, 0), 0);
	{
		long n = rm_recv(fd, rep, sizeof(rep)); /* bounded by 5 s */

		atomic_store(&fa.stop, true);
		shutdown(fa.fd, SHUT_RDWR);
		pthread_join(th, NULL);
		close(fa.fd);
		cr_assert_gt(n, 0, "no reply while another connection streams empty fragments: %ld",
			     n);
		rrr_xdr_init(&rx, rep, (size_t)n, RRR_XDR_DECODE);
	}
	cr_assert_eq(rrr_rpc_decode_reply(&rx, &r), 0);
	cr_assert_eq(r.xid, 11);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	close(fd);
}
