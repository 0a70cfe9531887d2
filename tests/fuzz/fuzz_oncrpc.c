/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_oncrpc.c - libFuzzer harness for the ONC RPC decoders:
 * call header, reply header and a bare credential, chosen by the first
 * input byte. Decoded values must respect the limits of rrr/oncrpc.h; a
 * decoded AUTH_NONE/AUTH_SYS credential must survive encode + decode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/oncrpc.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_cred(const struct rrr_rpc_cred *c)
{
	uint8_t out[512];
	struct rrr_rpc_cred back;
	struct rrr_xdr x;

	check(c->body_len <= RRR_RPC_MAX_AUTH_BYTES);
	if (c->flavor == RRR_AUTH_NONE)
		check(c->body_len == 0);
	if (c->flavor != RRR_AUTH_SYS && c->flavor != RRR_AUTH_NONE)
		return;
	if (c->flavor == RRR_AUTH_SYS) {
		check(strlen(c->sys.machinename) <= RRR_RPC_AUTH_SYS_MAX_MACHINE);
		check(c->sys.ngids <= RRR_RPC_AUTH_SYS_MAX_GIDS);
	}
	/* Pad bytes on the wire need not be zero, so compare values, not
	 * bytes: encode, decode again, and expect the same credential. */
	rrr_xdr_init(&x, out, sizeof(out), RRR_XDR_ENCODE);
	check(rrr_rpc_encode_cred(&x, c) == 0);
	check(rrr_xdr_pos(&x) == 8 + (size_t)c->body_len);
	rrr_xdr_init(&x, out, rrr_xdr_pos(&x), RRR_XDR_DECODE);
	check(rrr_rpc_decode_cred(&x, &back) == 0);
	check(back.flavor == c->flavor && back.body_len == c->body_len);
	if (c->flavor == RRR_AUTH_SYS) {
		check(back.sys.stamp == c->sys.stamp && back.sys.uid == c->sys.uid);
		check(back.sys.gid == c->sys.gid && back.sys.ngids == c->sys.ngids);
		check(strcmp(back.sys.machinename, c->sys.machinename) == 0);
		check(memcmp(back.sys.gids, c->sys.gids, c->sys.ngids * sizeof(uint32_t)) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rrr_xdr x;
	int rc;

	if (size < 1)
		return 0;
	rrr_xdr_init(&x, (void *)(uintptr_t)(data + 1), size - 1, RRR_XDR_DECODE);
	switch (data[0] % 3) {
	case 0: {
		struct rrr_rpc_call call;

		rc = rrr_rpc_decode_call(&x, &call);
		if (rc == 0)
			check_cred(&call.cred);
		break;
	}
	case 1: {
		struct rrr_rpc_reply r;

		rc = rrr_rpc_decode_reply(&x, &r);
		if (rc == 0) {
			check(r.stat <= RRR_RPC_MSG_DENIED);
			check(r.accept_stat <= RRR_RPC_SYSTEM_ERR);
			check(r.reject_stat <= RRR_RPC_AUTH_ERROR);
		}
		break;
	}
	default: {
		struct rrr_rpc_cred c;

		rc = rrr_rpc_decode_cred(&x, &c);
		if (rc == 0)
			check_cred(&c);
		break;
	}
	}
	check(rc <= 0);
	check(rrr_xdr_pos(&x) <= size - 1 && rrr_xdr_pos(&x) % 4 == 0);
	return 0;
}
