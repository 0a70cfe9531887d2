/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_svc_dispatch.c - libFuzzer harness for the server's call
 * dispatch (server/svc.c): any byte string as an RPC message. The server
 * must either drop it or produce a reply that decodes as an RPC reply with
 * the call's xid, never read outside the message, and free every request
 * arena (ASan/LSan check that). The registered program decodes a DDP
 * payload and two words and echoes them, so handler paths run too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/oncrpc.h>
#include <rrr/server.h>

#include "server/svc_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static int echo(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV], out;
	unsigned niov = 0;
	uint32_t len, a, b;
	uint8_t *copy;

	if (rrr_xdr_get_u32(args, &a) || rrr_xdr_get_u32(args, &b) ||
	    rrr_xdr_decode_payload(args, 1u << 16, &len, iov, &niov) || niov != 1)
		return RRR_SVC_GARBAGE_ARGS;
	if (a == 7)
		return RRR_SVC_DROP;
	if (a == 8)
		return -12;
	copy = rrr_svc_req_alloc(req, len);
	if (!copy)
		return RRR_SVC_SYSTEM_ERR;
	memcpy(copy, iov[0].iov_base, len);
	out.iov_base = copy;
	out.iov_len = len;
	if (rrr_xdr_put_u32(res, a + b))
		return -90;
	return rrr_xdr_encode_payload(res, &out, 1, len);
}

static const struct rrr_svc_proc procs[] = {{"null", NULL}, {"echo", echo}};

static struct rrr_svc *svc_get(void)
{
	static struct rrr_svc *svc;
	struct rrr_svc_opts o;
	struct rrr_svc_program p = {.prog = 0x20000001, .vers = 2, .procs = procs, .nprocs = 2};

	if (svc)
		return svc;
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	check(rrr_svc_create(&o, &svc) == 0);
	check(rrr_svc_register(svc, &p) == 0);
	p.vers = 4;
	check(rrr_svc_register(svc, &p) == 0);
	return svc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1u << 17];
	struct rrr_rpc_reply r;
	struct rrr_xdr x;
	size_t n = 0;
	int v;

	if (size > (1u << 17))
		return 0;
	v = rrr__svc_dispatch_raw(svc_get(), data, size, out, sizeof(out), &n);
	check(v >= 0);
	if (n == 0)
		return 0;
	check(size >= 12);
	rrr_xdr_init(&x, out, n, RRR_XDR_DECODE);
	check(rrr_rpc_decode_reply(&x, &r) == 0);
	check(memcmp(out, data, 4) == 0); /* xid echoed */
	return 0;
}
