/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/arena.c - request arenas and their per-worker block cache
 * (server/svc.c), and TCP replies that send a result payload from where it
 * lies (server/svc_tcp.c):
 *   - pieces are 64-byte aligned, disjoint, and small ones share a block;
 *   - a block is reused by the next request (same memory, no malloc);
 *   - the cache stays within its bounds however many requests ended at
 *     once, and blocks larger than the cache are freed as before;
 *   - hostile sizes (over 2 GiB) fail, 0 bytes works;
 *   - a thread without a cache (not a worker) allocates and frees;
 *   - a real handler (rrr__svc_dispatch_raw) reuses its READ-sized block;
 *   - over TCP, a payload with results after it, odd lengths, two payloads
 *     in one reply, and a payload followed by an error reply come out
 *     byte-exact.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <rrr/oncrpc.h>
#include <rrr/server.h>
#include <rrr/xdr.h>

#include "helpers/svc_test.h"
#include "server/svc_impl.h"

static void arena_on(void)
{
	cr_assert_eq(rrr__svc_arena_thread(true), 0);
}

static void arena_off(void)
{
	rrr__svc_arena_thread(false);
}

TestSuite(svc_arena, .init = arena_on, .fini = arena_off, .timeout = 30);

static struct rrr__svc_arena_stats stats(void)
{
	struct rrr__svc_arena_stats st;

	rrr__svc_arena_stats(&st);
	return st;
}

Test(svc_arena, small_pieces_share_a_block_aligned_and_disjoint)
{
	struct rrr_svc_req req;
	uint8_t *p[20];
	size_t sz[20];

	memset(&req, 0, sizeof(req));
	for (unsigned i = 0; i < 20; i++) {
		sz[i] = 1 + i * 17;
		p[i] = rrr_svc_req_alloc(&req, sz[i]);
		cr_assert_not_null(p[i]);
		cr_assert_eq((uintptr_t)p[i] % 64, 0, "piece %u not 64-byte aligned", i);
		memset(p[i], (int)i, sz[i]);
	}
	for (unsigned i = 0; i < 20; i++)
		for (size_t k = 0; k < sz[i]; k++)
			cr_assert_eq(p[i][k], i, "piece %u overwritten", i);
	cr_assert_eq(stats().allocated, 1, "20 small pieces fit one small block");
	rrr__svc_req_end(&req);
	cr_assert_null(req.arena);
	cr_assert_eq(stats().cached_small, 1);
}

Test(svc_arena, blocks_are_reused_by_the_next_request)
{
	struct rrr_svc_req req;
	void *big, *small;

	memset(&req, 0, sizeof(req));
	big = rrr_svc_req_alloc(&req, 1u << 20);
	small = rrr_svc_req_alloc(&req, 100);
	cr_assert(big && small);
	memset(big, 1, 1u << 20);
	rrr__svc_req_end(&req);
	struct rrr__svc_arena_stats st = stats();
	cr_assert_eq(st.cached_large, 1);
	cr_assert_eq(st.freed, 0);

	for (int round = 0; round < 100; round++) {
		memset(&req, 0, sizeof(req));
		/* a READ of another size still fits the cached block */
		void *again = rrr_svc_req_alloc(&req, round % 2 ? (1u << 20) : 65536 + 1);
		cr_assert_eq(again, big, "round %d: a fresh buffer instead of the cached one",
			     round);
		cr_assert_not_null(rrr_svc_req_alloc(&req, 100));
		rrr__svc_req_end(&req);
	}
	st = stats();
	cr_assert_eq(st.allocated, 2, "only the first request allocated (%llu)",
		     (unsigned long long)st.allocated);
	cr_assert_geq(st.reused, 100);
	cr_assert_eq(st.freed, 0);
}

Test(svc_arena, cache_bounded_however_many_requests_end)
{
	enum { N = 40 };
	static struct rrr_svc_req reqs[N];
	struct rrr__svc_arena_stats st;

	memset(reqs, 0, sizeof(reqs));
	/* 40 requests live at once, each with a 1 MiB and a small block */
	for (unsigned i = 0; i < N; i++) {
		cr_assert_not_null(rrr_svc_req_alloc(&reqs[i], 1u << 20));
		cr_assert_not_null(rrr_svc_req_alloc(&reqs[i], 8000));
	}
	for (unsigned i = 0; i < N; i++)
		rrr__svc_req_end(&reqs[i]);
	st = stats();
	cr_assert_leq(st.cached_small, RRR__SVC_ARENA_CACHE_SMALL);
	cr_assert_leq(st.cached_large, RRR__SVC_ARENA_CACHE_LARGE);
	cr_assert_leq(st.cached_bytes,
		      (uint64_t)RRR__SVC_ARENA_CACHE_BYTES +
			  (uint64_t)RRR__SVC_ARENA_CACHE_SMALL * RRR__SVC_ARENA_SMALL);
	cr_assert_eq(st.allocated, 2 * N);
	cr_assert_eq(st.freed + st.cached_small + st.cached_large, 2 * N,
		     "every block beyond the bound was freed");

	/* a block larger than the whole cache is never kept */
	memset(&reqs[0], 0, sizeof(reqs[0]));
	cr_assert_not_null(rrr_svc_req_alloc(&reqs[0], RRR__SVC_ARENA_CACHE_BYTES + 1));
	rrr__svc_req_end(&reqs[0]);
	cr_assert_eq(stats().cached_bytes, st.cached_bytes);
	cr_assert_eq(stats().freed, st.freed + 1);
}

Test(svc_arena, bigger_blocks_displace_smaller_ones)
{
	struct rrr_svc_req a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	cr_assert_not_null(rrr_svc_req_alloc(&a, 3u << 20));
	cr_assert_not_null(rrr_svc_req_alloc(&b, 2u << 20));
	rrr__svc_req_end(&b); /* 2 MiB cached */
	rrr__svc_req_end(&a); /* 3 MiB does not fit beside it: replaces it */
	struct rrr__svc_arena_stats st = stats();
	cr_assert_eq(st.cached_large, 1);
	cr_assert_eq(st.cached_bytes, 3u << 20);
	cr_assert_eq(st.freed, 1);
}

Test(svc_arena, hostile_and_empty_sizes)
{
	struct rrr_svc_req req;
	void *p;

	memset(&req, 0, sizeof(req));
	cr_assert_null(rrr_svc_req_alloc(&req, ((size_t)1 << 31) + 1));
	cr_assert_null(rrr_svc_req_alloc(&req, SIZE_MAX));
	cr_assert_null(rrr_svc_req_alloc(NULL, 1));
	p = rrr_svc_req_alloc(&req, 0);
	cr_assert_not_null(p);
	cr_assert_eq((uintptr_t)p % 64, 0);
	cr_assert_neq(rrr_svc_req_alloc(&req, 0), p, "two 0-byte pieces are distinct");
	rrr__svc_req_end(&req);
}

Test(svc_arena_nocache, thread_without_cache_uses_malloc)
{
	struct rrr__svc_arena_stats st;
	struct rrr_svc_req req;

	memset(&req, 0, sizeof(req));
	cr_assert_not_null(rrr_svc_req_alloc(&req, 1u << 20));
	cr_assert_not_null(rrr_svc_req_alloc(&req, 10));
	rrr__svc_req_end(&req);
	rrr__svc_arena_stats(&st);
	cr_assert_eq(st.allocated + st.reused + st.cached_small + st.cached_large, 0);
}

/* A real handler (TP_FILL allocates its payload from the arena) through
 * the dispatcher, on this thread: the READ-sized block is reused. */
Test(svc_arena, handler_payload_block_reused)
{
	struct rrr_svc_opts o;
	struct rrr_svc *svc;
	static uint8_t call[256], out[(1u << 20) + 4096];
	struct rrr_xdr x;
	size_t len, olen;

	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	cr_assert_eq(rrr_svc_create(&o, &svc), 0);
	cr_assert_eq(tprog_register(svc), 0);
	for (unsigned i = 0; i < 50; i++) {
		rrr_xdr_init(&x, call, sizeof(call), RRR_XDR_ENCODE);
		cr_assert_eq(rrr_rpc_encode_call(&x, 7 + i, TPROG, 1, TP_FILL, NULL), 0);
		cr_assert_eq(rrr_xdr_put_u32(&x, 1u << 20), 0);
		cr_assert_eq(rrr_xdr_put_u32(&x, 0x5a), 0);
		len = rrr_xdr_pos(&x);
		cr_assert_eq(rrr__svc_dispatch_raw(svc, call, len, out, sizeof(out), &olen),
			     RRR__SVC_REPLY_OK);
		cr_assert_gt(olen, 1u << 20);
		cr_assert_eq(out[olen - 1], 0x5a);
	}
	struct rrr__svc_arena_stats st = stats();
	cr_assert_leq(st.allocated, 2, "blocks allocated: %llu", (unsigned long long)st.allocated);
	cr_assert_geq(st.reused, 49);
	rrr_svc_destroy(svc);
}

/* ------------------------------------------------------------ TCP replies */

#define ZPROG 0x20000177u
static uint8_t zpat(size_t i)
{
	return (uint8_t)(i * 29u + 5u + (i >> 9));
}

/* The argument n (at most @max) into *@n, and n pattern bytes from the
 * arena into *@p: 0, or the handler's answer. */
static int z_args(struct rrr_svc_req *req, struct rrr_xdr *args, uint32_t max, uint32_t *n,
		  uint8_t **p)
{
	if (rrr_xdr_get_u32(args, n) || *n > max)
		return RRR_SVC_GARBAGE_ARGS;
	*p = rrr_svc_req_alloc(req, *n);
	if (!*p)
		return RRR_SVC_SYSTEM_ERR;
	for (uint32_t i = 0; i < *n; i++)
		(*p)[i] = zpat(i);
	return 0;
}

/* u32 n -> payload of n pattern bytes (from the arena), then u32 0xfeedf00d */
static int z_tail(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov;
	uint32_t n;
	uint8_t *p;
	int rc = z_args(req, args, 1u << 20, &n, &p);

	if (rc)
		return rc;
	iov.iov_base = p;
	iov.iov_len = n;
	rc = rrr_xdr_encode_payload(res, &iov, 1, n); /* the iovec is on this stack */
	if (rc)
		return rc;
	return rrr_xdr_put_u32(res, 0xfeedf00du);
}

/* u32 n -> two payloads of n bytes in three pieces each (second copied) */
static int z_two(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov[3];
	uint32_t n;
	uint8_t *p;
	int rc = z_args(req, args, 1u << 19, &n, &p);

	if (rc)
		return rc;
	iov[0] = (struct iovec){p, n / 3};
	iov[1] = (struct iovec){p + n / 3, 0};
	iov[2] = (struct iovec){p + n / 3, n - n / 3};
	for (int k = 0; k < 2; k++) {
		rc = rrr_xdr_encode_payload(res, iov, 3, n);
		if (rc)
			return rc;
	}
	return 0;
}

/* a payload encoded, then the handler fails: SYSTEM_ERR, no payload bytes */
static int z_fail(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov;
	uint8_t *p = rrr_svc_req_alloc(req, 1000);

	(void)args;
	if (!p)
		return RRR_SVC_SYSTEM_ERR;
	memset(p, 0x77, 1000);
	iov.iov_base = p;
	iov.iov_len = 1000;
	(void)rrr_xdr_encode_payload(res, &iov, 1, 1000);
	return RRR_SVC_SYSTEM_ERR;
}

static const struct rrr_svc_proc zprocs[] = {
    {"null", NULL},
    {"tail", z_tail},
    {"two", z_two},
    {"fail", z_fail},
};

static struct rrr_svc *zsvc;
static pthread_t zth;
static uint16_t zport;

static void *zrun(void *arg)
{
	(void)arg;
	rrr_svc_run(zsvc);
	return NULL;
}

static void zsetup(void)
{
	struct rrr_svc_opts o;
	struct rrr_svc_program p = {.prog = ZPROG, .vers = 1, .procs = zprocs, .nprocs = 4};

	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	cr_assert_eq(rrr_svc_create(&o, &zsvc), 0);
	cr_assert_eq(rrr_svc_register(zsvc, &p), 0);
	cr_assert_eq(rrr_svc_listen_tcp(zsvc, "127.0.0.1", "0", &zport), 0);
	cr_assert_eq(pthread_create(&zth, NULL, zrun, NULL), 0);
}

static void zteardown(void)
{
	rrr_svc_stop(zsvc);
	pthread_join(zth, NULL);
	rrr_svc_destroy(zsvc);
}

TestSuite(svc_tcp_payload, .init = zsetup, .fini = zteardown, .timeout = 60);

static long zcall(int fd, uint32_t xid, uint32_t proc, uint32_t arg, uint8_t *rep, size_t cap,
		  struct rrr_xdr *rx, struct rrr_rpc_reply *r)
{
	uint8_t call[128];
	struct rrr_xdr x;
	long n;

	rrr_xdr_init(&x, call, sizeof(call), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, xid, ZPROG, 1, proc, NULL), 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, arg), 0);
	cr_assert_eq(rm_send(fd, call, rrr_xdr_pos(&x), 0), 0);
	n = rm_recv(fd, rep, cap);
	cr_assert_gt(n, 0, "no reply: %ld", n);
	rrr_xdr_init(rx, rep, (size_t)n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_rpc_decode_reply(rx, r), 0);
	cr_assert_eq(r->xid, xid);
	return n;
}

static void check_pattern(struct rrr_xdr *rx, uint32_t n)
{
	const void *p;
	uint32_t got;

	cr_assert_eq(rrr_xdr_get_opaque_inline(rx, 1u << 20, &p, &got), 0);
	cr_assert_eq(got, n);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(((const uint8_t *)p)[i], zpat(i), "byte %u of %u", i, n);
}

Test(svc_tcp_payload, payload_then_results_odd_lengths)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 5, 4095, 4097, 65537, 1u << 20};
	size_t cap = (1u << 20) + 4096;
	uint8_t *rep = malloc(cap);
	int fd = tcp_connect_port(zport);

	cr_assert_not_null(rep);
	cr_assert_geq(fd, 0);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct rrr_rpc_reply r;
		struct rrr_xdr rx;
		uint32_t tail;
		long n = zcall(fd, 10 + i, 1, sizes[i], rep, cap, &rx, &r);

		cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
		check_pattern(&rx, sizes[i]);
		cr_assert_eq(rrr_xdr_get_u32(&rx, &tail), 0);
		cr_assert_eq(tail, 0xfeedf00du, "results after the payload (size %u)", sizes[i]);
		cr_assert_eq(rrr_xdr_remaining(&rx), 0, "record of %ld bytes", n);
	}
	close(fd);
	free(rep);
}

Test(svc_tcp_payload, two_payloads_and_error_after_payload)
{
	size_t cap = (1u << 20) + 4096;
	uint8_t *rep = malloc(cap);
	int fd = tcp_connect_port(zport);
	struct rrr_rpc_reply r;
	struct rrr_xdr rx;

	cr_assert_not_null(rep);
	cr_assert_geq(fd, 0);
	zcall(fd, 1, 2, 100003, rep, cap, &rx, &r);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	check_pattern(&rx, 100003);
	check_pattern(&rx, 100003);
	cr_assert_eq(rrr_xdr_remaining(&rx), 0);

	zcall(fd, 2, 3, 0, rep, cap, &rx, &r);
	cr_assert_eq(r.accept_stat, RRR_RPC_SYSTEM_ERR);
	cr_assert_eq(rrr_xdr_remaining(&rx), 0, "no payload bytes after an error reply");

	/* the connection is still in step */
	zcall(fd, 3, 1, 7, rep, cap, &rx, &r);
	cr_assert_eq(r.accept_stat, RRR_RPC_SUCCESS);
	check_pattern(&rx, 7);
	close(fd);
	free(rep);
}
