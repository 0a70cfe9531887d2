/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_clnt_reply.c - libFuzzer harness for the client's reply
 * classifier (rrr__clnt_parse_reply) and reply decoder
 * (rrr__clnt_decode_reply with a DDP sink), the first code that touches a
 * server's bytes.
 *
 * The first input byte picks what the call offered (write chunk of 1-3
 * segments, reply chunk, both, none) and whether the payload was "placed";
 * the rest is the received message. Checks: a MSG view lies inside the
 * buffer; placed/reply lengths never exceed what was offered; a decoded
 * payload never exceeds the sink, and nothing is written past it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/client.h>

#include "client/clnt_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rrr_rdma_hdr hdr;
static const struct rrr_reg_seg wsegs[3] = {
    {0x100, 4096, 0x10000}, {0x201, 4096, 0x20000}, {0x302, 100, 0x30000}};
static const struct rrr_reg_seg rsegs[1] = {{0x403, 8192, 0x40000}};

static void check(int cond)
{
	if (!cond)
		abort();
}

struct res {
	uint32_t len;
	unsigned niov;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
};

static int dec(struct rrr_xdr *x, void *r)
{
	struct res *p = r;

	return rrr_xdr_decode_payload(x, 1u << 20, &p->len, p->iov, &p->niov);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t sink[5000 + 16];
	struct iovec siov[2] = {{sink, 1000}, {sink + 1000, 4000}};
	struct rrr_call call = {
	    .decode = dec, .ddp = RRR_DDP_FROM_SERVER, .payload = siov, .npayload = 2};
	struct rrr__clnt_req req = {.call = &call};
	struct rrr__reply_view v;
	struct rrr__offer off = {0};
	struct res res;
	uint8_t *copy;
	uint8_t sel;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	off.nwrite = sel & 3u;
	off.write = wsegs;
	if (sel & 4u) {
		off.nreply = 1;
		off.reply = rsegs;
	}
	rrr__clnt_parse_reply(data, size, &off, &hdr, &v);
	switch (v.kind) {
	case RRR__REPLY_MSG:
		check(v.msg_off + v.msg_len == size);
		check(v.status == 0);
		break;
	case RRR__REPLY_NOMSG:
		check(off.nreply && v.reply_len > 0 && v.reply_len <= 8192);
		break;
	case RRR__REPLY_ERROR:
		check(v.status == -EREMOTEIO);
		break;
	default:
		check(v.kind == RRR__REPLY_BAD && v.status == -EBADMSG);
		return 0;
	}
	if (v.placed)
		check(off.nwrite && v.placed_len <= 4096u * 2 + 100);
	if (v.kind != RRR__REPLY_MSG)
		return 0;
	/* decode the RPC part as a reply whose payload may have been placed */
	copy = malloc(v.msg_len ? v.msg_len : 1);
	memcpy(copy, data + v.msg_off, v.msg_len);
	req.xid = v.msg_len >= 4 ? (uint32_t)copy[0] << 24 | (uint32_t)copy[1] << 16 |
				       (uint32_t)copy[2] << 8 | copy[3]
				 : 0;
	req.placed = v.placed || (sel & 8u);
	req.placed_len = v.placed ? v.placed_len : 3000;
	memset(sink + 5000, 0x5a, 16);
	if (rrr__clnt_decode_reply(NULL, &req, copy, v.msg_len) == 0 && call.payload_len) {
		check(call.payload_len <= 5000);
		check(res.len == call.payload_len);
	}
	for (int i = 0; i < 16; i++)
		check(sink[5000 + i] == 0x5a);
	free(copy);
	return 0;
}
