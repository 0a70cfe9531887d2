/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/plan.c - RPC-over-RDMA client decisions without a
 * network: chunk planning for every size regime (RFC 8166 / RFC 8267 /
 * xprtrdma rules), header sizes against the real encoder, classification
 * of hand-built replies of every type, and decoding of a reply whose DDP
 * payload was placed by a write chunk.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <rrr/client.h>
#include <rrr/oncrpc.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"

static struct rrr__plan_in base(void)
{
	struct rrr__plan_in in = {
	    .inline_send = 4096,
	    .inline_recv = 4096,
	    .max_segs = 16,
	};
	return in;
}

static struct rrr__plan plan(const struct rrr__plan_in *in, int want_rc)
{
	struct rrr__plan p;

	cr_assert_eq(rrr__clnt_plan(in, &p), want_rc);
	return p;
}

/* @in with a call of @msg_len bytes carrying a @payload_len-byte payload
 * is planned (successfully) as a call of type @want. */
static void call_is(struct rrr__plan_in *in, uint32_t payload_len, uint32_t msg_len,
		    enum rrr__call_type want)
{
	in->payload_len = payload_len;
	in->msg_len = msg_len;
	cr_assert_eq(plan(in, 0).call, want, "payload %u, message %u", payload_len, msg_len);
}

Test(plan, header_sizes_match_encoder)
{
	static struct rrr_rdma_hdr h;
	uint8_t buf[4096];
	struct rrr_xdr x;

	cr_assert_eq(rrr__rdma_hdr_size(0, 0, 0), 28);
	memset(&h, 0, sizeof(h));
	h.vers = 1;
	h.credits = 32;
	h.nread = 3;
	h.nwrite = 1;
	h.write[0].nsegs = 2;
	h.has_reply = true;
	h.reply.nsegs = 5;
	for (int i = 0; i < 5; i++) {
		h.read[i % 3].seg.length = 4;
		h.write[0].segs[i % 2].length = 4;
		h.reply.segs[i].length = 4;
	}
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &h), 0);
	cr_assert_eq(rrr_xdr_pos(&x), rrr__rdma_hdr_size(3, 2, 5));
}

Test(plan, small_call_inline)
{
	struct rrr__plan_in in = base();
	struct rrr__plan p;

	in.msg_len = 200;
	p = plan(&in, 0);
	cr_assert_eq(p.call, RRR__CALL_INLINE);
	cr_assert(!p.write_chunk && !p.reply_chunk);
	/* exactly filling the peer's receive buffer is still inline */
	call_is(&in, 0, 4096 - 28, RRR__CALL_INLINE);
	call_is(&in, 0, 4096 - 24, RRR__CALL_NOMSG); /* no payload to move: NOMSG */
}

Test(plan, small_payload_inline)
{
	struct rrr__plan_in in = base();

	call_is(&in, 1001, 200 + 1004, RRR__CALL_INLINE);
}

Test(plan, large_payload_read_chunk)
{
	struct rrr__plan_in in = base();

	call_is(&in, 100000, 200 + 100000, RRR__CALL_READ_CHUNK);
	/* odd length: the pad is neither inline nor in the chunk */
	call_is(&in, 4097, 200 + 4100, RRR__CALL_READ_CHUNK);
}

Test(plan, large_args_nomsg)
{
	struct rrr__plan_in in = base();

	call_is(&in, 0, 10000, RRR__CALL_NOMSG); /* no payload: e.g. a huge SETATTR/ACL */
	/* payload AND big non-payload args: the rest does not fit either */
	call_is(&in, 100000, 100000 + 5000, RRR__CALL_NOMSG);
}

Test(plan, header_cannot_fit)
{
	struct rrr__plan_in in = base();

	in.inline_send = 1024;
	in.max_segs = 64; /* 64 read segments = 1564-byte header */
	in.msg_len = 5000;
	plan(&in, -EMSGSIZE);
}

Test(plan, sink_write_chunk)
{
	struct rrr__plan_in in = base();
	struct rrr__plan p;

	in.msg_len = 120;
	in.sink_len = 65536; /* no hint: the payload goes to the write chunk */
	p = plan(&in, 0);
	cr_assert(p.write_chunk);
	cr_assert(!p.reply_chunk);
	cr_assert_eq(p.call, RRR__CALL_INLINE);
	/* small READ with a hint: everything comes back inline */
	in.sink_len = 100;
	in.reply_hint = 200;
	p = plan(&in, 0);
	cr_assert(!p.write_chunk);
	/* a hint plus payload that overflow our receive buffer */
	in.sink_len = 4000;
	p = plan(&in, 0);
	cr_assert(p.write_chunk);
	cr_assert(!p.reply_chunk);
}

Test(plan, reply_chunk)
{
	struct rrr__plan_in in = base();
	struct rrr__plan p;

	in.msg_len = 120;
	in.reply_hint = 8001; /* READDIR-like */
	p = plan(&in, 0);
	cr_assert(p.reply_chunk);
	cr_assert_eq(p.reply_len, 8004);
	cr_assert(!p.write_chunk);
	cr_assert_eq(p.call, RRR__CALL_INLINE);
	/* fits after the header: no chunk */
	in.reply_hint = 4096 - 28;
	cr_assert(!plan(&in, 0).reply_chunk);
	/* with a write chunk echoed back the header is larger */
	in.sink_len = 1u << 20;
	in.reply_hint = 4000;
	p = plan(&in, 0);
	cr_assert(p.write_chunk);
	cr_assert(p.reply_chunk);
}

/* --- replies -------------------------------------------------------------- */

static struct rrr_rdma_hdr hh, scratch;
static uint8_t rbuf[8192];

static size_t build(uint32_t proc, bool rpc_body)
{
	struct rrr_xdr x;

	hh.xid = 0x1234;
	hh.vers = 1;
	hh.credits = 7;
	hh.proc = proc;
	rrr_xdr_init(&x, rbuf, sizeof(rbuf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_hdr_encode(&x, &hh), 0);
	if (rpc_body) {
		cr_assert_eq(rrr_rpc_encode_accepted(&x, 0x1234, RRR_RPC_SUCCESS, 0, 0), 0);
		cr_assert_eq(rrr_xdr_put_u32(&x, 42), 0);
	}
	return rrr_xdr_pos(&x);
}

static const struct rrr_reg_seg wsegs[2] = {
    {.handle = 0x100, .length = 8192, .offset = 0x10000},
    {.handle = 0x201, .length = 4096, .offset = 0x40000},
};
static const struct rrr_reg_seg rsegs[1] = {
    {.handle = 0x302, .length = 8192, .offset = 0x80000},
};

static void init_reply(void)
{
	memset(&hh, 0, sizeof(hh));
}

TestSuite(reply, .init = init_reply);

Test(reply, msg_inline)
{
	struct rrr__offer off = {0};
	struct rrr__reply_view v;
	size_t len = build(RRR_RDMA_MSG, true);

	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_MSG);
	cr_assert_eq(v.status, 0);
	cr_assert_eq(v.credits, 7);
	cr_assert_eq(v.msg_off, 28);
	cr_assert_eq(v.msg_len, len - 28);
	cr_assert(!v.placed);
}

Test(reply, msg_with_write_chunk)
{
	struct rrr__offer off = {.nwrite = 2, .write = wsegs};
	struct rrr__reply_view v;
	size_t len;

	hh.nwrite = 1;
	hh.write[0].nsegs = 2;
	hh.write[0].segs[0] = (struct rrr_rdma_seg){0x100, 8192, 0x10000};
	hh.write[0].segs[1] = (struct rrr_rdma_seg){0x201, 1000, 0x40000};
	len = build(RRR_RDMA_MSG, true);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_MSG);
	cr_assert(v.placed);
	cr_assert_eq(v.placed_len, 9192);

	/* not offered */
	off.nwrite = 0;
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	cr_assert_eq(v.status, -EBADMSG);
	off.nwrite = 2;
	/* foreign handle */
	hh.write[0].segs[1].handle = 0x202;
	len = build(RRR_RDMA_MSG, true);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	/* longer than offered */
	hh.write[0].segs[1] = (struct rrr_rdma_seg){0x201, 4097, 0x40000};
	len = build(RRR_RDMA_MSG, true);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	/* a hole: first segment short, second used */
	hh.write[0].segs[0].length = 100;
	hh.write[0].segs[1].length = 100;
	len = build(RRR_RDMA_MSG, true);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	/* unused write chunk (zero lengths): data came inline */
	hh.write[0].segs[0].length = 0;
	hh.write[0].segs[1].length = 0;
	len = build(RRR_RDMA_MSG, true);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_MSG);
	cr_assert(!v.placed);
}

Test(reply, nomsg_reply_chunk)
{
	struct rrr__offer off = {.nreply = 1, .reply = rsegs};
	struct rrr__reply_view v;
	size_t len;

	hh.has_reply = true;
	hh.reply.nsegs = 1;
	hh.reply.segs[0] = (struct rrr_rdma_seg){0x302, 6000, 0x80000};
	len = build(RRR_RDMA_NOMSG, false);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_NOMSG);
	cr_assert_eq(v.reply_len, 6000);
	cr_assert_eq(v.status, 0);
	/* no reply chunk was offered */
	off.nreply = 0;
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	/* offered, but the server claims more than we offered */
	off.nreply = 1;
	hh.reply.segs[0].length = 8193;
	len = build(RRR_RDMA_NOMSG, false);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	/* NOMSG with an empty reply chunk */
	hh.reply.segs[0].length = 0;
	len = build(RRR_RDMA_NOMSG, false);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
}

Test(reply, rdma_error)
{
	struct rrr__offer off = {0};
	struct rrr__reply_view v;
	struct rrr_xdr x;

	rrr_xdr_init(&x, rbuf, sizeof(rbuf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_err_encode(&x, 0x1234, 3, RRR_ERR_VERS), 0);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, rrr_xdr_pos(&x), &off, &scratch, &v),
		     RRR__REPLY_ERROR);
	cr_assert_eq(v.status, -EREMOTEIO);
	cr_assert_eq(v.credits, 3);
	rrr_xdr_init(&x, rbuf, sizeof(rbuf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rdma_err_encode(&x, 0x1234, 1, RRR_ERR_CHUNK), 0);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, rrr_xdr_pos(&x), &off, &scratch, &v),
		     RRR__REPLY_ERROR);
	cr_assert_eq(v.status, -EREMOTEIO);
}

Test(reply, garbage)
{
	struct rrr__offer off = {0};
	struct rrr__reply_view v;
	size_t len = build(RRR_RDMA_MSG, true);

	cr_assert_eq(rrr__clnt_parse_reply(rbuf, 3, &off, &scratch, &v), RRR__REPLY_BAD);
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, 20, &off, &scratch, &v), RRR__REPLY_BAD);
	rbuf[7] = 2; /* version 2 */
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	rbuf[7] = 1;
	rbuf[15] = 3; /* RDMA_DONE: obsolete */
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	rbuf[15] = 9;
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	rbuf[15] = 0;
	rbuf[19] = 1; /* a read list in a reply */
	cr_assert_eq(rrr__clnt_parse_reply(rbuf, len, &off, &scratch, &v), RRR__REPLY_BAD);
	cr_assert_eq(v.status, -EBADMSG);
}

/* --- decoding a placed payload ---------------------------------------------- */

struct pres {
	uint32_t len;
	unsigned niov;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	uint32_t after;
};

static int dec_payload_then_u32(struct rrr_xdr *x, void *r)
{
	struct pres *p = r;
	int rc = rrr_xdr_decode_payload(x, 1u << 20, &p->len, p->iov, &p->niov);

	return rc ? rc : rrr_xdr_get_u32(x, &p->after);
}

Test(reply, placed_payload_decode)
{
	static uint8_t sink[10000];
	struct iovec siov[2] = {{sink, 3000}, {sink + 3000, 7000}};
	struct rrr_call call = {.decode = dec_payload_then_u32,
				.ddp = RRR_DDP_FROM_SERVER,
				.payload = siov,
				.npayload = 2};
	struct rrr__clnt_req req = {.call = &call, .xid = 0x55};
	struct pres res;
	uint8_t msg[256];
	struct rrr_xdr x;
	size_t len;

	call.res = &res;
	/* accepted SUCCESS, payload length 5001 (bytes placed by RDMA WRITE,
	 * no bytes and no pad inline), then a trailing word */
	rrr_xdr_init(&x, msg, sizeof(msg), RRR_XDR_ENCODE);
	rrr_rpc_encode_accepted(&x, 0x55, RRR_RPC_SUCCESS, 0, 0);
	rrr_xdr_put_u32(&x, 5001);
	rrr_xdr_put_u32(&x, 0xabcd);
	len = rrr_xdr_pos(&x);
	req.placed = true;
	req.placed_len = 5001;
	cr_assert_eq(rrr__clnt_decode_reply(NULL, &req, msg, len), 0);
	cr_assert_eq(res.len, 5001);
	cr_assert_eq(call.payload_len, 5001);
	cr_assert_eq(res.niov, 2);
	cr_assert_eq(res.iov[0].iov_base, sink);
	cr_assert_eq(res.iov[1].iov_len, 2001);
	cr_assert_eq(res.after, 0xabcd);
	/* the server says it wrote less than the length word claims */
	req.placed = true;
	req.placed_len = 5000;
	cr_assert_eq(rrr__clnt_decode_reply(NULL, &req, msg, len), -EBADMSG);
	/* xid mismatch */
	req.xid = 0x56;
	cr_assert_eq(rrr__clnt_decode_reply(NULL, &req, msg, len), -EBADMSG);
}

Test(reply, denied_and_unavail)
{
	struct rrr_call call = {0};
	struct rrr__clnt_req req = {.call = &call, .xid = 9};
	uint8_t msg[128];
	struct rrr_xdr x;

	rrr_xdr_init(&x, msg, sizeof(msg), RRR_XDR_ENCODE);
	rrr_rpc_encode_denied(&x, 9, RRR_RPC_AUTH_ERROR, RRR_AUTH_TOOWEAK);
	cr_assert_eq(rrr__clnt_decode_reply(NULL, &req, msg, rrr_xdr_pos(&x)), -EPROTO);
	cr_assert_eq(call.rpc_stat,
		     RRR_RPC_STAT_DENIED | RRR_RPC_AUTH_ERROR << 8 | RRR_AUTH_TOOWEAK);
	rrr_xdr_init(&x, msg, sizeof(msg), RRR_XDR_ENCODE);
	rrr_rpc_encode_accepted(&x, 9, RRR_RPC_PROG_UNAVAIL, 0, 0);
	cr_assert_eq(rrr__clnt_decode_reply(NULL, &req, msg, rrr_xdr_pos(&x)), -EPROTO);
	cr_assert_eq(call.rpc_stat, RRR_RPC_PROG_UNAVAIL);
}
