/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/oncrpc.c - ONC RPC v2 headers (xdr/oncrpc.c).
 *
 * Vectors are written out by hand from RFC 5531 section 9 and appendix A.
 * Each is decoded, re-encoded byte for byte, and truncated at every offset;
 * malformed variants assert the specific errno from rrr/oncrpc.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <rrr/oncrpc.h>

#include "helpers/wbuf.h"

/* NFSv3 READ call with AUTH_SYS, followed by one argument word. */
/* clang-format off */
static const uint8_t vec_call_sys[] = {
	0x11, 0x22, 0x33, 0x44, /* xid */
	0x00, 0x00, 0x00, 0x00, /* CALL */
	0x00, 0x00, 0x00, 0x02, /* rpcvers 2 */
	0x00, 0x01, 0x86, 0xA3, /* prog 100003 */
	0x00, 0x00, 0x00, 0x03, /* vers 3 */
	0x00, 0x00, 0x00, 0x06, /* proc 6 */
	0x00, 0x00, 0x00, 0x01, /* cred flavor AUTH_SYS */
	0x00, 0x00, 0x00, 0x24, /* body length 36 */
	0x00, 0x00, 0x00, 0x07, /*   stamp */
	0x00, 0x00, 0x00, 0x05, /*   machinename length 5 */
	'n',  'o',  'd',  'e',  '1', 0x00, 0x00, 0x00, /* + pad */
	0x00, 0x00, 0x03, 0xE8, /*   uid 1000 */
	0x00, 0x00, 0x00, 0x64, /*   gid 100 */
	0x00, 0x00, 0x00, 0x02, /*   2 gids */
	0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x14,
	0x00, 0x00, 0x00, 0x00, /* verf AUTH_NONE */
	0x00, 0x00, 0x00, 0x00, /* verf length 0 */
	0xCA, 0xFE, 0xF0, 0x0D, /* first argument word */
};
/* clang-format on */
#define CALL_SYS_HDR (sizeof(vec_call_sys) - 4)

/* clang-format off */
static const uint8_t vec_call_none[] = {
	0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
	0x00, 0x01, 0x86, 0xA5, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, /* MOUNT NULL */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cred AUTH_NONE */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* verf AUTH_NONE */
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_reply_success[] = {
	0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x01, /* xid, REPLY */
	0x00, 0x00, 0x00, 0x00,                         /* MSG_ACCEPTED */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* verf */
	0x00, 0x00, 0x00, 0x00,                         /* SUCCESS */
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_reply_prog_mismatch[] = {
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x02, /* PROG_MISMATCH */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, /* low 2, high 3 */
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_reply_rpc_mismatch[] = {
	0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x01, /* MSG_DENIED */
	0x00, 0x00, 0x00, 0x00, /* RPC_MISMATCH */
	0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02,
};
/* clang-format on */

/* clang-format off */
static const uint8_t vec_reply_auth_error[] = {
	0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01,
	0x00, 0x00, 0x00, 0x01, /* MSG_DENIED */
	0x00, 0x00, 0x00, 0x01, /* AUTH_ERROR */
	0x00, 0x00, 0x00, 0x05, /* AUTH_TOOWEAK */
};
/* clang-format on */

static struct rrr_xdr dec(const void *buf, size_t len)
{
	struct rrr_xdr x;

	rrr_xdr_init(&x, (void *)(uintptr_t)buf, len, RRR_XDR_DECODE);
	return x;
}

static struct rrr_rpc_cred sys_cred(void)
{
	struct rrr_rpc_cred c;

	memset(&c, 0, sizeof(c));
	c.flavor = RRR_AUTH_SYS;
	c.sys.stamp = 7;
	strcpy(c.sys.machinename, "node1");
	c.sys.uid = 1000;
	c.sys.gid = 100;
	c.sys.ngids = 2;
	c.sys.gids[0] = 10;
	c.sys.gids[1] = 20;
	return c;
}

Test(oncrpc, decode_call_auth_sys)
{
	struct rrr_rpc_call call;
	struct rrr_xdr x = dec(vec_call_sys, sizeof(vec_call_sys));
	uint32_t arg;

	cr_assert_eq(rrr_rpc_decode_call(&x, &call), 0);
	cr_assert_eq(call.xid, 0x11223344);
	cr_assert_eq(call.prog, 100003);
	cr_assert_eq(call.vers, 3);
	cr_assert_eq(call.proc, 6);
	cr_assert_eq(call.cred.flavor, RRR_AUTH_SYS);
	cr_assert_eq(call.cred.body_len, 36);
	cr_assert_eq(call.cred.sys.stamp, 7);
	cr_assert_str_eq(call.cred.sys.machinename, "node1");
	cr_assert_eq(call.cred.sys.uid, 1000);
	cr_assert_eq(call.cred.sys.gid, 100);
	cr_assert_eq(call.cred.sys.ngids, 2);
	cr_assert_eq(call.cred.sys.gids[1], 20);
	cr_assert_eq(call.verf_flavor, RRR_AUTH_NONE);
	cr_assert_eq(rrr_xdr_pos(&x), CALL_SYS_HDR, "stream left at the arguments");
	cr_assert_eq(rrr_xdr_get_u32(&x, &arg), 0);
	cr_assert_eq(arg, 0xCAFEF00D);
}

Test(oncrpc, encode_call_vectors)
{
	uint8_t buf[128];
	struct rrr_rpc_cred c = sys_cred();
	struct rrr_xdr x;

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, 0x11223344, 100003, 3, 6, &c), 0);
	cr_assert_eq(rrr_xdr_pos(&x), CALL_SYS_HDR);
	cr_assert_arr_eq(buf, vec_call_sys, CALL_SYS_HDR);

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(&x, 9, 100005, 3, 0, NULL), 0);
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(vec_call_none));
	cr_assert_arr_eq(buf, vec_call_none, sizeof(vec_call_none));

	for (size_t n = 0; n < CALL_SYS_HDR; n++) {
		rrr_xdr_init(&x, buf, n, RRR_XDR_ENCODE);
		cr_assert_eq(rrr_rpc_encode_call(&x, 1, 2, 3, 4, &c), -EMSGSIZE, "size %zu", n);
	}
}

Test(oncrpc, decode_call_none)
{
	struct rrr_rpc_call call;
	struct rrr_xdr x = dec(vec_call_none, sizeof(vec_call_none));

	cr_assert_eq(rrr_rpc_decode_call(&x, &call), 0);
	cr_assert_eq(call.xid, 9);
	cr_assert_eq(call.prog, 100005);
	cr_assert_eq(call.cred.flavor, RRR_AUTH_NONE);
	cr_assert_eq(call.cred.body_len, 0);
	cr_assert_eq(rrr_xdr_remaining(&x), 0);
}

static void check_reply_vec(const uint8_t *v, size_t len, struct rrr_rpc_reply *r)
{
	struct rrr_xdr x = dec(v, len);

	cr_assert_eq(rrr_rpc_decode_reply(&x, r), 0);
	cr_assert_eq(rrr_xdr_pos(&x), len);
	for (size_t n = 0; n < len; n++) {
		struct rrr_rpc_reply t;

		x = dec(v, n);
		cr_assert_eq(rrr_rpc_decode_reply(&x, &t), -EBADMSG, "truncated at %zu", n);
	}
}

Test(oncrpc, replies_decode_and_encode)
{
	/* each vector's fields; the encoder given them writes it again */
	static const struct {
		const uint8_t *v;
		size_t len;
		uint32_t xid;
		uint32_t stat; /* accepted: why is accept_stat; denied: reject_stat */
		uint32_t why, auth;
		uint32_t low, high; /* the mismatch range (given, unused, for SUCCESS) */
	} rows[] = {
		{vec_reply_success, sizeof(vec_reply_success), 0x11223344, RRR_RPC_MSG_ACCEPTED,
		 RRR_RPC_SUCCESS, 0, 9, 9},
		{vec_reply_prog_mismatch, sizeof(vec_reply_prog_mismatch), 1, RRR_RPC_MSG_ACCEPTED,
		 RRR_RPC_PROG_MISMATCH, 0, 2, 3},
		{vec_reply_rpc_mismatch, sizeof(vec_reply_rpc_mismatch), 2, RRR_RPC_MSG_DENIED,
		 RRR_RPC_MISMATCH, 0, 2, 2},
		{vec_reply_auth_error, sizeof(vec_reply_auth_error), 3, RRR_RPC_MSG_DENIED,
		 RRR_RPC_AUTH_ERROR, RRR_AUTH_TOOWEAK, 0, 0},
	};
	struct rrr_rpc_reply r;
	uint8_t buf[64];
	struct rrr_xdr x;

	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool accepted = rows[i].stat == RRR_RPC_MSG_ACCEPTED;
		int rc;

		check_reply_vec(rows[i].v, rows[i].len, &r);
		cr_assert_eq(r.xid, rows[i].xid, "row %u", i);
		cr_assert_eq(r.stat, rows[i].stat, "row %u", i);
		cr_assert_eq(accepted ? r.accept_stat : r.reject_stat, rows[i].why, "row %u", i);
		if (rows[i].why == (accepted ? RRR_RPC_PROG_MISMATCH : RRR_RPC_MISMATCH)) {
			cr_assert_eq(r.mismatch_low, rows[i].low, "row %u", i);
			cr_assert_eq(r.mismatch_high, rows[i].high, "row %u", i);
		}
		if (!accepted && rows[i].why == RRR_RPC_AUTH_ERROR)
			cr_assert_eq(r.auth_stat, rows[i].auth, "row %u", i);
		rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
		rc = accepted ? rrr_rpc_encode_accepted(&x, rows[i].xid, rows[i].why, rows[i].low,
							rows[i].high)
			      : rrr_rpc_encode_denied(&x, rows[i].xid, rows[i].why, rows[i].auth);
		cr_assert_eq(rc, 0, "row %u", i);
		cr_assert_eq(rrr_xdr_pos(&x), rows[i].len, "row %u", i);
		cr_assert_arr_eq(buf, rows[i].v, rows[i].len, "row %u", i);
	}

	/* bad arguments to the encoders */
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_accepted(&x, 1, 6, 0, 0), -EINVAL);
	cr_assert_eq(rrr_rpc_encode_denied(&x, 1, 2, 0), -EINVAL);
}

Test(oncrpc, call_truncated_every_offset)
{
	struct rrr_rpc_call call;

	for (size_t n = 0; n < CALL_SYS_HDR; n++) {
		struct rrr_xdr x = dec(vec_call_sys, n);

		call.xid = 0;
		cr_assert_eq(rrr_rpc_decode_call(&x, &call), -EBADMSG, "truncated at %zu", n);
		if (n >= 4)
			cr_assert_eq(call.xid, 0x11223344);
	}
	for (size_t n = 0; n < sizeof(vec_call_none); n++) {
		struct rrr_xdr x = dec(vec_call_none, n);

		cr_assert_eq(rrr_rpc_decode_call(&x, &call), -EBADMSG, "truncated at %zu", n);
	}
}

Test(oncrpc, wrong_type_and_version)
{
	uint8_t m[sizeof(vec_call_sys)];
	struct rrr_rpc_call call;
	struct rrr_rpc_reply r;
	struct rrr_xdr x;

	memcpy(m, vec_call_sys, sizeof(m));
	m[11] = 3; /* rpcvers 3 */
	x = dec(m, sizeof(m));
	cr_assert_eq(rrr_rpc_decode_call(&x, &call), -EPROTO);
	cr_assert_eq(call.xid, 0x11223344);

	x = dec(vec_reply_success, sizeof(vec_reply_success));
	cr_assert_eq(rrr_rpc_decode_call(&x, &call), -EPROTO);
	x = dec(vec_call_sys, sizeof(vec_call_sys));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -EPROTO);
	memcpy(m, vec_call_sys, sizeof(m));
	m[7] = 2; /* msg_type 2 */
	x = dec(m, sizeof(m));
	cr_assert_eq(rrr_rpc_decode_call(&x, &call), -EPROTO);
}

Test(oncrpc, reply_enums_out_of_range)
{
	uint8_t m[64];
	struct rrr_rpc_reply r;
	struct rrr_xdr x;

	memcpy(m, vec_reply_success, sizeof(vec_reply_success));
	m[11] = 2; /* reply_stat */
	x = dec(m, sizeof(vec_reply_success));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -EINVAL);
	memcpy(m, vec_reply_success, sizeof(vec_reply_success));
	m[23] = 6; /* accept_stat */
	x = dec(m, sizeof(vec_reply_success));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -EINVAL);
	memcpy(m, vec_reply_auth_error, sizeof(vec_reply_auth_error));
	m[15] = 2; /* reject_stat */
	x = dec(m, sizeof(vec_reply_auth_error));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -EINVAL);
	memcpy(m, vec_reply_auth_error, sizeof(vec_reply_auth_error));
	m[16] = 0xFF; /* auth_stat huge */
	x = dec(m, sizeof(vec_reply_auth_error));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -EINVAL);
	/* a reply verifier over 400 bytes */
	memcpy(m, vec_reply_success, sizeof(vec_reply_success));
	m[18] = 0x01;
	m[19] = 0x91; /* 401 */
	x = dec(m, sizeof(vec_reply_success));
	cr_assert_eq(rrr_rpc_decode_reply(&x, &r), -E2BIG);
}

static int decode_cred(const struct wbuf *w, struct rrr_rpc_cred *c)
{
	struct rrr_xdr x = dec(w->b, w->n);

	return rrr_rpc_decode_cred(&x, c);
}

/* AUTH_SYS body with @namelen name bytes and @ngids gids; @delta is added
 * to the declared body length. */
static void wsys(struct wbuf *w, uint32_t namelen, uint32_t ngids, int delta, uint8_t fill)
{
	uint32_t body = 4 + 4 + RRR_XDR_PAD(namelen) + 4 + 4 + 4 + 4 * ngids;

	w->n = 0;
	w32s(w, 4, (uint32_t)RRR_AUTH_SYS, (uint32_t)((int)body + delta), 1u, namelen);
	for (uint32_t i = 0; i < RRR_XDR_PAD(namelen); i++)
		w->b[w->n++] = i < namelen ? fill : 0;
	w32(w, 0);
	w32(w, 0);
	w32(w, ngids);
	for (uint32_t i = 0; i < ngids; i++)
		w32(w, i);
	for (int i = 0; i < delta; i++)
		w->b[w->n++] = 0;
}

Test(oncrpc, auth_sys_limits)
{
	struct wbuf w;
	struct rrr_rpc_cred c;

	wsys(&w, 255, 16, 0, 'm');
	cr_assert_eq(decode_cred(&w, &c), 0);
	cr_assert_eq(strlen(c.sys.machinename), 255);
	cr_assert_eq(c.sys.ngids, 16);
	cr_assert_eq(c.sys.gids[15], 15);

	wsys(&w, 256, 0, 0, 'm');
	cr_assert_eq(decode_cred(&w, &c), -E2BIG);
	wsys(&w, 4, 17, 0, 'm');
	cr_assert_eq(decode_cred(&w, &c), -E2BIG);
	/* embedded NUL in the machine name */
	wsys(&w, 4, 0, 0, 0);
	cr_assert_eq(decode_cred(&w, &c), -EINVAL);
	/* declared body longer than its fields: leftover bytes */
	wsys(&w, 4, 1, 4, 'm');
	cr_assert_eq(decode_cred(&w, &c), -EINVAL);
	/* declared body shorter than its fields */
	wsys(&w, 4, 1, -4, 'm');
	cr_assert_eq(decode_cred(&w, &c), -EINVAL);
	/* gid count that cannot fit the body */
	w.n = 0;
	w32s(&w, 7, (uint32_t)RRR_AUTH_SYS, 20u, 0u, 0u, 0u, 0u, 16u);
	cr_assert_eq(decode_cred(&w, &c), -EINVAL);
}

Test(oncrpc, cred_body_bounds)
{
	struct wbuf w;
	struct rrr_rpc_cred c;

	w.n = 0;
	w32(&w, 6); /* RPCSEC_GSS: kept, not parsed */
	w32(&w, 8);
	w32(&w, 1);
	w32(&w, 2);
	cr_assert_eq(decode_cred(&w, &c), 0);
	cr_assert_eq(c.flavor, 6);
	cr_assert_eq(c.body_len, 8);

	w.n = 0;
	w32(&w, 6);
	w32(&w, 401);
	cr_assert_eq(decode_cred(&w, &c), -E2BIG);
	w.n = 0;
	w32(&w, 6);
	w32(&w, 0xFFFFFFFFu);
	cr_assert_eq(decode_cred(&w, &c), -E2BIG);
	w.n = 0;
	w32(&w, 6);
	w32(&w, 400); /* allowed, but the bytes are missing */
	cr_assert_eq(decode_cred(&w, &c), -EBADMSG);
	/* AUTH_NONE must have an empty body */
	w.n = 0;
	w32(&w, RRR_AUTH_NONE);
	w32(&w, 4);
	w32(&w, 0);
	cr_assert_eq(decode_cred(&w, &c), -EINVAL);
}

Test(oncrpc, cred_encode_round_trip_and_limits)
{
	uint8_t buf[512];
	struct rrr_rpc_cred in = sys_cred(), out;
	struct rrr_xdr x;

	memset(in.sys.machinename, 'z', 255);
	in.sys.machinename[255] = 0;
	in.sys.ngids = 16;
	for (unsigned i = 0; i < 16; i++)
		in.sys.gids[i] = 1000 + i;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_cred(&x, &in), 0);
	size_t len = rrr_xdr_pos(&x);
	cr_assert_eq(len, 8 + 4 + 4 + 256 + 12 + 64);
	x = dec(buf, len);
	cr_assert_eq(rrr_rpc_decode_cred(&x, &out), 0);
	cr_assert_eq(out.body_len, len - 8);
	cr_assert_str_eq(out.sys.machinename, in.sys.machinename);
	cr_assert_eq(out.sys.gids[15], 1015);

	in.sys.ngids = 17;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_cred(&x, &in), -E2BIG);
	in.sys.ngids = 0;
	in.flavor = 6;
	cr_assert_eq(rrr_rpc_encode_cred(&x, &in), -EINVAL);
}
