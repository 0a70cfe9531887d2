/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/rdma.c - the server over RPC-over-RDMA on the soft provider
 * (or the provider and address of tests/test_env.h), end to end with the
 * client library: inline calls, read chunks (DDP payload to the server),
 * write chunks (DDP payload from the server), reply chunks, RDMA_NOMSG
 * calls, RPC-level errors, odd payload lengths (XDR pad), concurrency, and
 * the server's counters. Data is verified byte by byte or by hash on both
 * sides.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "../test_env.h"
#include "helpers/svc_test.h"

static struct tsvc srv;
static struct rrr_clnt *clnt;

/* A client of @s over RDMA on the provider of tests/test_env.h, @timeout_ms
 * per call, into *@c: rrr_clnt_create()'s result. */
static int clnt_open(const struct tsvc *s, uint32_t timeout_ms, struct rrr_clnt **c)
{
	struct rrr_clnt_opts co;
	char ps[16];

	snprintf(ps, sizeof(ps), "%u", s->rdma_port);
	rrr_clnt_opts_init(&co);
	co.transport = "rdma";
	co.provider = tenv_provider();
	co.provider_opts = tenv_provider_opts();
	co.host = tenv_addr();
	co.port = ps;
	co.timeout_ms = timeout_ms;
	return rrr_clnt_create(&co, c);
}

/* clnt_open() with 10 s per call, asserted. */
static struct rrr_clnt *clnt_of(const struct tsvc *s)
{
	struct rrr_clnt *c = NULL;

	cr_assert_eq(clnt_open(s, 10000, &c), 0, "client: %s", rrr_last_error());
	return c;
}

static void setup(void)
{
	struct rrr_svc_opts o;

	tsvc_opts(&o, 2);
	cr_assert_eq(tsvc_start(&srv, &o, 1), 0, "server start: %s", rrr_last_error());
	clnt = clnt_of(&srv);
}

static void teardown(void)
{
	rrr_clnt_destroy(clnt);
	clnt = NULL;
	cr_assert_eq(tsvc_stop(&srv), 0);
}

TestSuite(svc_rdma, .init = setup, .fini = teardown, .timeout = 60);

struct u32x2 {
	uint32_t a, b;
};

static int enc_u32x2(struct rrr_xdr *x, const void *arg)
{
	const struct u32x2 *v = arg;

	return rrr_xdr_put_u32(x, v->a) ? -EMSGSIZE : rrr_xdr_put_u32(x, v->b);
}

struct u32x3 {
	uint32_t v[3];
};

static int dec_u32x2(struct rrr_xdr *x, void *res)
{
	struct u32x3 *r = res;

	return rrr_xdr_get_u32(x, &r->v[0]) ? -EBADMSG : rrr_xdr_get_u32(x, &r->v[1]);
}

static int dec_u32x3(struct rrr_xdr *x, void *res)
{
	struct u32x3 *r = res;
	int rc = dec_u32x2(x, res);

	return rc ? rc : rrr_xdr_get_u32(x, &r->v[2]);
}

/* @c zeroed, then a call of TPROG version 1 procedure @proc: @enc encodes
 * @args, @dec decodes the result into @res. */
static void call_prep(struct rrr_call *c, uint32_t proc, int (*enc)(struct rrr_xdr *, const void *),
		      const void *args, int (*dec)(struct rrr_xdr *, void *), void *res)
{
	*c = (struct rrr_call){.prog = TPROG, .vers = 1, .proc = proc,
			       .encode = enc, .args = args, .decode = dec, .res = res};
}

/* @c's payload: the one piece @iov, direction @ddp. */
static void payload_one(struct rrr_call *c, enum rrr_ddp_dir ddp, struct iovec *iov)
{
	c->ddp = ddp;
	c->payload = iov;
	c->npayload = 1;
}

static int call_simple(uint32_t proc, struct u32x2 *a, struct u32x3 *r,
		       int (*dec)(struct rrr_xdr *, void *))
{
	struct rrr_call c;

	call_prep(&c, proc, enc_u32x2, a, dec, r);
	return rrr_clnt_call(clnt, &c);
}

Test(svc_rdma, inline_call)
{
	struct u32x2 a = {40, 2};
	struct u32x3 r = {{0}};
	struct rrr_xprt_stats st;

	cr_assert_eq(call_simple(TP_ADD, &a, &r, dec_u32x3), 0, "%s", rrr_last_error());
	cr_assert_eq(r.v[0], 42);
	cr_assert_eq(r.v[1], ~0u);
	cr_assert_eq(r.v[2], 1);
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.inline_calls, 1);
	cr_assert_geq(st.connects, 1);
	cr_assert_eq(st.credits, 32);
}

Test(svc_rdma, rpc_errors)
{
	struct u32x2 a = {1, 2};
	struct u32x3 r;
	struct rrr_call c;

	call_prep(&c, TP_HOLE, enc_u32x2, &a, dec_u32x2, &r);
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_PROC_UNAVAIL);
	c.proc = TP_SYSERR;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_SYSTEM_ERR);
	c.proc = TP_ADD;
	c.prog = 0x2fffffff;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_PROG_UNAVAIL);
	/* the connection still works */
	cr_assert_eq(call_simple(TP_ADD, &a, &r, dec_u32x3), 0);
	cr_assert_eq(r.v[0], 3);
}

struct pay_args {
	const struct iovec *iov;
	unsigned niov;
	uint32_t len;
};

static int enc_payload(struct rrr_xdr *x, const void *arg)
{
	const struct pay_args *p = arg;

	return rrr_xdr_encode_payload(x, p->iov, p->niov, p->len);
}

Test(svc_rdma, read_chunk_payloads)
{
	static const uint32_t sizes[] = {1, 5, 4093, 8192, 100001, 1u << 20};
	uint8_t *buf = malloc(1u << 20);
	struct rrr_xprt_stats st;
	unsigned i;

	cr_assert(buf);
	for (i = 0; i < (1u << 20); i++)
		buf[i] = tpat(9, i);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct iovec iov = {buf, sizes[i]};
		struct pay_args pa = {&iov, 1, sizes[i]};
		struct u32x3 r = {{0}};
		struct rrr_call c;
		int rc;

		call_prep(&c, TP_SUM, enc_payload, &pa, dec_u32x2, &r);
		payload_one(&c, RRR_DDP_TO_SERVER, &iov);
		rc = rrr_clnt_call(clnt, &c);
		cr_assert_eq(rc, 0, "size %u: %d %s", sizes[i], rc, rrr_last_error());
		cr_assert_eq(r.v[0], sizes[i]);
		cr_assert_eq(r.v[1], tfnv(buf, sizes[i]), "size %u: data differs", sizes[i]);
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.read_chunks, 3, "large payloads went by read chunk");
	cr_assert_geq(st.rdma_read_bytes, (1u << 20) + 100001);
	free(buf);
}

struct fill_res {
	uint32_t len;
};

static int dec_fill(struct rrr_xdr *x, void *res)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	struct fill_res *r = res;
	unsigned niov = 0;

	return rrr_xdr_decode_payload(x, 16u << 20, &r->len, iov, &niov);
}

Test(svc_rdma, write_chunk_payloads)
{
	static const uint32_t sizes[] = {3, 4097, 65536, 300001, 1u << 20};
	uint8_t *sink = malloc((1u << 20) + 8);
	struct rrr_xprt_stats st;
	unsigned i;

	cr_assert(sink);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct iovec iov = {sink, sizes[i]};
		struct u32x2 a = {sizes[i], 0x5a + i};
		struct fill_res r = {0};
		struct rrr_call c;
		uint32_t k;
		int rc;

		memset(sink, 0, (1u << 20) + 8);
		call_prep(&c, TP_FILL, enc_u32x2, &a, dec_fill, &r);
		payload_one(&c, RRR_DDP_FROM_SERVER, &iov);
		rc = rrr_clnt_call(clnt, &c);
		cr_assert_eq(rc, 0, "size %u: %d %s", sizes[i], rc, rrr_last_error());
		cr_assert_eq(r.len, sizes[i]);
		for (k = 0; k < sizes[i]; k++)
			if (sink[k] != (uint8_t)(0x5a + i))
				break;
		cr_assert_eq(k, sizes[i], "size %u: byte %u differs", sizes[i], k);
		cr_assert_eq(sink[sizes[i]], 0, "nothing written past the payload");
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.write_chunks, 3);
	free(sink);
}

struct big_res {
	uint32_t seed, n;
	int ok;
};

static int dec_big(struct rrr_xdr *x, void *res)
{
	struct big_res *r = res;
	const void *p;
	uint32_t n, i;

	if (rrr_xdr_get_opaque_inline(x, 16u << 20, &p, &n))
		return -EBADMSG;
	r->ok = n == r->n;
	for (i = 0; r->ok && i < n; i++)
		if (((const uint8_t *)p)[i] != tpat(r->seed, i))
			r->ok = 0;
	return 0;
}

Test(svc_rdma, reply_chunk)
{
	static const uint32_t sizes[] = {100, 5000, 200003};
	struct rrr_xprt_stats st;
	unsigned i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct u32x2 a = {sizes[i], 77 + i};
		struct big_res r = {77 + i, sizes[i], 0};
		struct rrr_call c;
		int rc;

		call_prep(&c, TP_BIG, enc_u32x2, &a, dec_big, &r);
		c.reply_hint = sizes[i] + 128;
		rc = rrr_clnt_call(clnt, &c);
		cr_assert_eq(rc, 0, "size %u: %d %s", sizes[i], rc, rrr_last_error());
		cr_assert(r.ok, "size %u: reply data differs", sizes[i]);
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.reply_chunks, 1);
}

/* A reply too large for the inline size, with neither a reply chunk nor a
 * write chunk to carry it: the server answers SYSTEM_ERR, inline. */
Test(svc_rdma, reply_too_big_without_chunk)
{
	struct u32x2 a = {20000, 1};
	struct big_res r = {1, 20000, 0};
	struct rrr_call c;
	struct u32x3 ok;

	call_prep(&c, TP_BIG, enc_u32x2, &a, dec_big, &r);
	c.reply_hint = 0; /* "small": the client offers no reply chunk */
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_SYSTEM_ERR);
	/* and a reply chunk too small for the results: same answer */
	c.reply_hint = 8192;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -EPROTO);
	cr_assert_eq(c.rpc_stat, RRR_RPC_SYSTEM_ERR);
	a.a = 1;
	a.b = 2;
	cr_assert_eq(call_simple(TP_ADD, &a, &ok, dec_u32x3), 0);
}

struct op_args {
	const uint8_t *p;
	uint32_t n;
};

static int enc_op(struct rrr_xdr *x, const void *arg)
{
	const struct op_args *a = arg;

	return rrr_xdr_put_opaque(x, a->p, a->n);
}

Test(svc_rdma, nomsg_call)
{
	static const uint32_t sizes[] = {10, 20001, 500000};
	uint8_t *buf = malloc(500000);
	struct rrr_xprt_stats st;
	unsigned i;

	cr_assert(buf);
	for (i = 0; i < 500000; i++)
		buf[i] = tpat(3, i);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct op_args a = {buf, sizes[i]};
		struct u32x3 r = {{0}};
		struct rrr_call c;
		int rc;

		call_prep(&c, TP_HASHOP, enc_op, &a, dec_u32x2, &r);
		rc = rrr_clnt_call(clnt, &c);
		cr_assert_eq(rc, 0, "size %u: %d %s", sizes[i], rc, rrr_last_error());
		cr_assert_eq(r.v[0], sizes[i]);
		cr_assert_eq(r.v[1], tfnv(buf, sizes[i]));
	}
	rrr_svc_stats(srv.svc, &st);
	cr_assert_geq(st.nomsg_calls, 1);
	free(buf);
}

static uint8_t src[70000];

/* FILL of @len bytes of @byte through a write chunk into @sink (@cap
 * bytes) on @cl: the call's status; the length answered into *@got (when
 * not NULL). */
static int fill_byte(struct rrr_clnt *cl, uint32_t len, uint32_t byte, uint8_t *sink, uint32_t cap,
		     uint32_t *got)
{
	struct iovec iov = {sink, cap};
	struct u32x2 a = {len, byte};
	struct fill_res r = {0};
	struct rrr_call c;
	int rc;

	call_prep(&c, TP_FILL, enc_u32x2, &a, dec_fill, &r);
	payload_one(&c, RRR_DDP_FROM_SERVER, &iov);
	rc = rrr_clnt_call(cl, &c);
	if (got)
		*got = r.len;
	return rc;
}

static void *conc_thread(void *arg)
{
	uint8_t *sink = malloc(70000);
	long ok = 0, i, id = (long)arg;
	for (i = 0; sink && i < 60; i++) {
		struct u32x2 a = {(uint32_t)i, 7};
		struct u32x3 r = {{0}};

		switch ((i + id) % 3) {
		case 0: /* inline */
			if (call_simple(TP_ADD, &a, &r, dec_u32x3) == 0 &&
			    r.v[0] == (uint32_t)i + 7)
				ok++;
			break;
		case 1: { /* read chunk */
			struct iovec iov = {src, 65000 + (size_t)i};
			struct pay_args pa = {&iov, 1, 65000 + (uint32_t)i};
			struct rrr_call c;

			call_prep(&c, TP_SUM, enc_payload, &pa, dec_u32x2, &r);
			payload_one(&c, RRR_DDP_TO_SERVER, &iov);
			if (rrr_clnt_call(clnt, &c) == 0 && r.v[1] == tfnv(src, pa.len))
				ok++;
			break;
		}
		default: { /* write chunk */
			uint32_t n = 60000 + (uint32_t)i, got = 0;

			if (fill_byte(clnt, n, (uint32_t)id, sink, 70000, &got) == 0 && got == n &&
			    sink[n - 1] == (uint8_t)id && sink[0] == (uint8_t)id)
				ok++;
			break;
		}
		}
	}
	free(sink);
	return (void *)ok;
}

Test(svc_rdma, concurrent_calls)
{
	pthread_t th[4];
	void *ok;
	int i;

	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = tpat(5, (size_t)i);
	for (i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, conc_thread, (void *)(long)(i + 1)), 0);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], &ok);
		cr_assert_eq((long)ok, 60, "thread %d: %ld of 60 calls ok", i, (long)ok);
	}
}

static int fill_call(struct rrr_clnt *cl, uint32_t len, uint8_t *sink, uint32_t cap)
{
	return fill_byte(cl, len, 0x11, sink, cap, NULL);
}

Test(svc_rdma, send_with_invalidate)
{
	static uint8_t sink[200000];
	struct rrr_xprt_stats s0, s1, c0, c1;
	struct rrr_device_attr attr;
	unsigned inv;

	rrr_svc_stats(srv.svc, &s0);
	rrr_clnt_stats(clnt, &c0);
	/* one handle (the write chunk): the server invalidates it remotely */
	cr_assert_eq(fill_call(clnt, 150000, sink, sizeof(sink)), 0, "%s", rrr_last_error());
	rrr_svc_stats(srv.svc, &s1);
	rrr_clnt_stats(clnt, &c1);
	/* a device without usable Send With Invalidate (verbs regmr): the
	 * client never offers it and the server never uses it */
	cr_assert_eq(tenv_attr(&attr), 0);
	inv = attr.send_with_inv ? 1 : 0;
	cr_assert_eq(s1.remote_inv, s0.remote_inv + inv, "%s", attr.strategy);
	cr_assert_eq(c1.remote_inv, c0.remote_inv + inv, "the client saw the remote invalidation");

	/* an error reply never invalidates: the handler refuses (len > sink) */
	c0 = c1;
	s0 = s1;
	cr_assert_eq(fill_call(clnt, 190000, sink, 100000), -EPROTO);
	rrr_svc_stats(srv.svc, &s1);
	rrr_clnt_stats(clnt, &c1);
	cr_assert_eq(s1.remote_inv, s0.remote_inv, "no Send With Invalidate on an error reply");
	cr_assert_gt(c1.local_inv, c0.local_inv, "the client invalidated locally");
}

Test(svc_rdma, no_remote_inv_option)
{
	static uint8_t sink[100000];
	struct rrr_svc_opts o;
	struct rrr_clnt *c2;
	struct tsvc s2;
	struct rrr_xprt_stats st, cst;

	tsvc_opts(&o, 1);
	o.no_remote_inv = true;
	o.inline_send = 1024; /* and a small inline size: replies need chunks sooner */
	cr_assert_eq(tsvc_start(&s2, &o, 1), 0);
	c2 = clnt_of(&s2);
	cr_assert_eq(fill_call(c2, 99999, sink, sizeof(sink)), 0, "%s", rrr_last_error());
	cr_assert_eq(sink[99998], 0x11);
	rrr_svc_stats(s2.svc, &st);
	rrr_clnt_stats(c2, &cst);
	cr_assert_eq(st.remote_inv, 0);
	cr_assert_eq(cst.remote_inv, 0);
	cr_assert_gt(cst.local_inv, 0);
	cr_assert_eq(st.inline_send, 1024, "negotiated inline send size");
	rrr_clnt_destroy(c2);
	cr_assert_eq(tsvc_stop(&s2), 0);
}

Test(svc_rdma, stop_with_connected_client)
{
	struct u32x2 a = {1, 1};
	struct u32x3 r;
	int rc;

	cr_assert_eq(call_simple(TP_ADD, &a, &r, dec_u32x3), 0);
	cr_assert_eq(tsvc_stop(&srv), 0, "stop returns with a client connected");
	rc = call_simple(TP_ADD, &a, &r, dec_u32x3);
	cr_assert(rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -ETIMEDOUT || rc == -ENOTCONN,
		  "call after stop fails cleanly: %d", rc);
}

static void noop_done(struct rrr_call *call, int status, void *arg)
{
	(void)status;
	(void)arg;
	free(call);
}

static void *disc_thread(void *arg)
{
	uint8_t *buf = arg;
	struct rrr_clnt *c;
	int i;

	if (clnt_open(&srv, 5000, &c))
		return (void *)1;
	/* in-flight async calls with big payloads, then vanish; the shared
	 * iov/args are set once, before the first call is queued (the
	 * progress thread reads them while later calls are submitted) */
	static struct iovec iov;
	static struct pay_args pa;
	static struct u32x3 r;

	iov.iov_base = buf;
	iov.iov_len = 1u << 20;
	pa.iov = &iov;
	pa.niov = 1;
	pa.len = 1u << 20;
	for (i = 0; i < 8; i++) {
		struct rrr_call *call = calloc(1, sizeof(*call));

		call->prog = TPROG;
		call->vers = 1;
		call->proc = TP_SUM;
		call->encode = enc_payload;
		call->args = &pa;
		call->decode = dec_u32x2;
		call->res = &r;
		call->ddp = RRR_DDP_TO_SERVER;
		call->payload = &iov;
		call->npayload = 1;
		if (rrr_clnt_call_async(c, call, noop_done, NULL))
			free(call);
	}
	rrr_clnt_destroy(c);
	return NULL;
}

Test(svc_rdma, client_vanishes_mid_call)
{
	uint8_t *buf = calloc(1, 1u << 20);
	struct u32x2 a = {2, 3};
	struct u32x3 r;
	pthread_t th;
	int i;

	for (i = 0; i < 3; i++) {
		cr_assert_eq(pthread_create(&th, NULL, disc_thread, buf), 0);
		pthread_join(th, NULL);
	}
	/* the server keeps serving the fixture's client */
	cr_assert_eq(call_simple(TP_ADD, &a, &r, dec_u32x3), 0);
	cr_assert_eq(r.v[0], 5);
	free(buf);
}

/* A READ sink that needs several registrations (small page-list depth):
 * the READs are cut at registration boundaries; CRC on, progress thread on. */
Test(svc_rdma, sink_split_across_registrations)
{
	const uint32_t len = (1u << 20) - 3;
	uint8_t *buf = malloc(len);
	struct rrr_svc_opts o;
	struct rrr_clnt_opts co;
	struct rrr_clnt *c2;
	struct tsvc s2;
	struct rrr_xprt_stats st;
	struct iovec iov;
	struct pay_args pa;
	struct u32x3 r = {{0}};
	struct rrr_call c;
	char p2[16];
	uint32_t i;

	TENV_SOFT_ONLY("soft device options max_fr_pages=16,crc=1 make the sink split");
	cr_assert(buf);
	for (i = 0; i < len; i++)
		buf[i] = tpat(21, i);
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	o.provider_opts = "max_fr_pages=16,crc=1,progress_thread=1";
	cr_assert_eq(tsvc_start(&s2, &o, 1), 0, "%s", rrr_last_error());
	snprintf(p2, sizeof(p2), "%u", s2.rdma_port);
	rrr_clnt_opts_init(&co);
	co.transport = "rdma";
	co.provider_opts = "crc=1";
	co.host = "127.0.0.1";
	co.port = p2;
	co.timeout_ms = 10000;
	cr_assert_eq(rrr_clnt_create(&co, &c2), 0, "%s", rrr_last_error());
	iov.iov_base = buf;
	iov.iov_len = len;
	pa.iov = &iov;
	pa.niov = 1;
	pa.len = len;
	call_prep(&c, TP_SUM, enc_payload, &pa, dec_u32x2, &r);
	payload_one(&c, RRR_DDP_TO_SERVER, &iov);
	cr_assert_eq(rrr_clnt_call(c2, &c), 0, "%s", rrr_last_error());
	cr_assert_eq(r.v[0], len);
	cr_assert_eq(r.v[1], tfnv(buf, len));
	rrr_svc_stats(s2.svc, &st);
	cr_assert_geq(st.registrations, 16, "the sink took many registrations (%llu)",
		      (unsigned long long)st.registrations);
	cr_assert_eq(st.local_inv, st.registrations, "every sink registration invalidated");
	rrr_clnt_destroy(c2);
	cr_assert_eq(tsvc_stop(&s2), 0);
	free(buf);
}

static int enc_u32(struct rrr_xdr *x, const void *arg)
{
	return rrr_xdr_put_u32(x, *(const uint32_t *)arg);
}

/* A payload from memory the library did not hand out is copied into the
 * registered payload buffer, then written: same bytes either way. */
Test(svc_rdma, write_chunk_from_foreign_memory)
{
	static const uint32_t sizes[] = {1, 4098, 1u << 20};
	uint8_t *sink = malloc((1u << 20) + 4);
	unsigned i;

	cr_assert(sink);
	for (i = 0; i < 3; i++) {
		struct iovec iov = {sink, (1u << 20) + 4};
		struct fill_res r = {0};
		struct rrr_call c;
		uint32_t len = sizes[i], k;

		memset(sink, 0, (1u << 20) + 4);
		call_prep(&c, TP_STATIC, enc_u32, &len, dec_fill, &r);
		payload_one(&c, RRR_DDP_FROM_SERVER, &iov);
		cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", rrr_last_error());
		cr_assert_eq(r.len, len);
		for (k = 0; k < len; k++)
			if (sink[k] != tpat(99, k))
				break;
		cr_assert_eq(k, len, "size %u: byte %u differs", len, k);
	}
	free(sink);
}

/* Doorbell batching: 32 calls submitted together (from a completion
 * callback, so the progress thread sends them in one run) go out in posts
 * of a quarter of the credit window on the client, and the server answers
 * a batch of calls received together with far fewer posts than replies.
 * Every reply is still right. */
#define DB_N 32

struct db_state {
	struct rrr_call calls[DB_N];
	struct u32x2 args[DB_N];
	struct u32x3 res[DB_N];
	int status[DB_N];
	int submit_err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void db_done(struct rrr_call *call, int status, void *arg)
{
	struct db_state *s = arg;

	pthread_mutex_lock(&s->lock);
	s->status[call - s->calls] = status;
	s->done++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void db_first_done(struct rrr_call *call, int status, void *arg)
{
	struct db_state *s = arg;

	(void)call;
	(void)status;
	for (int i = 0; i < DB_N; i++) {
		struct rrr_call *c = &s->calls[i];

		s->args[i].a = (uint32_t)i;
		s->args[i].b = 1000;
		c->prog = TPROG;
		c->vers = 1;
		c->proc = TP_ADD;
		c->encode = enc_u32x2;
		c->args = &s->args[i];
		c->decode = dec_u32x3;
		c->res = &s->res[i];
		if (rrr_clnt_call_async(clnt, c, db_done, s))
			s->submit_err++;
	}
}

Test(svc_rdma, one_doorbell_per_batch)
{
	static struct db_state s;
	struct rrr_call first;
	struct u32x2 a = {1, 2};
	struct u32x3 r;
	struct rrr_xprt_stats c0, c1, s0, s1;

	/* credits are granted by the first reply: warm up */
	cr_assert_eq(call_simple(TP_ADD, &a, &r, dec_u32x3), 0);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	rrr_clnt_stats(clnt, &c0);
	rrr_svc_stats(srv.svc, &s0);
	first = (struct rrr_call){ .prog = TPROG, .vers = 1, .proc = TP_ADD, .encode = enc_u32x2,
				   .args = &a, .decode = dec_u32x3, .res = &r };
	cr_assert_eq(rrr_clnt_call_async(clnt, &first, db_first_done, &s), 0);
	pthread_mutex_lock(&s.lock);
	while (s.done < DB_N && s.submit_err == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 20;
		cr_assert_eq(pthread_cond_timedwait(&s.cond, &s.lock, &ts), 0, "calls not answered");
	}
	pthread_mutex_unlock(&s.lock);
	cr_assert_eq(s.submit_err, 0);
	for (int i = 0; i < DB_N; i++) {
		cr_assert_eq(s.status[i], 0, "call %d: %d", i, s.status[i]);
		cr_assert_eq(s.res[i].v[0], (uint32_t)i + 1000);
	}
	rrr_clnt_stats(clnt, &c1);
	rrr_svc_stats(srv.svc, &s1);
	cr_assert_eq(c1.calls - c0.calls, DB_N + 1);
	/* the first call, then the 32 in posts of a quarter of the credit
	 * window (32 credits: 4 posts of 8) */
	cr_assert_eq(c1.send_posts - c0.send_posts, 1 + 4, "client posts: %llu",
		     (unsigned long long)(c1.send_posts - c0.send_posts));
	cr_assert_eq(s1.replies - s0.replies, DB_N + 1);
	cr_assert_leq(s1.send_posts - s0.send_posts, DB_N / 2, "server posts: %llu for %d replies",
		      (unsigned long long)(s1.send_posts - s0.send_posts), DB_N + 1);
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.cond);
}
