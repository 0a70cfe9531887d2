/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/xdr.c - the bounded XDR stream (xdr/xdr.c).
 *
 * Byte-exact encodings written out by hand from RFC 4506, decode of the
 * same bytes, and the error contract: -EMSGSIZE when an encoder runs out of
 * room (at every short buffer size), -EBADMSG when a decoder runs out of
 * input (at every truncation), -E2BIG for counts/lengths over the caller's
 * maximum (including 0xFFFFFFFF), -EINVAL for out-of-range bools/enums.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <rrr/xdr.h>

static struct rrr_xdr enc(void *buf, size_t len)
{
	struct rrr_xdr x;

	rrr_xdr_init(&x, buf, len, RRR_XDR_ENCODE);
	return x;
}

static struct rrr_xdr dec(const void *buf, size_t len)
{
	struct rrr_xdr x;

	rrr_xdr_init(&x, (void *)(uintptr_t)buf, len, RRR_XDR_DECODE);
	return x;
}

Test(xdr, primitives_bytes_exact)
{
	/* clang-format off */
	static const uint8_t want[] = {
		0xDE, 0xAD, 0xBE, 0xEF,                         /* u32 */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* u64 */
		0x00, 0x00, 0x00, 0x01,                         /* bool true */
		0x00, 0x00, 0x00, 0x00,                         /* bool false */
		0x00, 0x00, 0x00, 0x05,                         /* enum 5 */
		'a',  'b',  'c',  0x00,                         /* fixed[3] + 1 pad */
		0x00, 0x00, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, /* opaque<> */
		0x00, 0x00, 0x00, 0x04, 'n', 'f', 's', '3',     /* string, no pad */
		0x00, 0x00, 0x00, 0x00,                         /* empty opaque */
	};
	/* clang-format on */
	uint8_t buf[sizeof(want)];
	struct rrr_xdr x;

	memset(buf, 0xEE, sizeof(buf));
	x = enc(buf, sizeof(buf));
	cr_assert_eq(rrr_xdr_put_u32(&x, 0xDEADBEEF), 0);
	cr_assert_eq(rrr_xdr_put_u64(&x, 0x0102030405060708ull), 0);
	cr_assert_eq(rrr_xdr_put_bool(&x, true), 0);
	cr_assert_eq(rrr_xdr_put_bool(&x, false), 0);
	cr_assert_eq(rrr_xdr_put_enum(&x, 5), 0);
	cr_assert_eq(rrr_xdr_put_fixed(&x, "abc", 3), 0);
	cr_assert_eq(rrr_xdr_put_opaque(&x, "hello", 5), 0);
	cr_assert_eq(rrr_xdr_put_string(&x, "nfs3"), 0);
	cr_assert_eq(rrr_xdr_put_opaque(&x, NULL, 0), 0);
	cr_assert_eq(rrr_xdr_pos(&x), sizeof(want));
	cr_assert_eq(rrr_xdr_remaining(&x), 0);
	cr_assert_arr_eq(buf, want, sizeof(want));

	/* And back. */
	uint32_t u32, e, n;
	uint64_t u64;
	bool b;
	char fixed[3], op[8], str[8];

	x = dec(want, sizeof(want));
	cr_assert_eq(rrr_xdr_get_u32(&x, &u32), 0);
	cr_assert_eq(u32, 0xDEADBEEF);
	cr_assert_eq(rrr_xdr_get_u64(&x, &u64), 0);
	cr_assert_eq(u64, 0x0102030405060708ull);
	cr_assert_eq(rrr_xdr_get_bool(&x, &b), 0);
	cr_assert(b);
	cr_assert_eq(rrr_xdr_get_bool(&x, &b), 0);
	cr_assert_not(b);
	cr_assert_eq(rrr_xdr_get_enum(&x, 5, &e), 0);
	cr_assert_eq(e, 5);
	cr_assert_eq(rrr_xdr_get_fixed(&x, fixed, 3), 0);
	cr_assert_arr_eq(fixed, "abc", 3);
	cr_assert_eq(rrr_xdr_get_opaque(&x, op, sizeof(op), &n), 0);
	cr_assert_eq(n, 5);
	cr_assert_arr_eq(op, "hello", 5);
	cr_assert_eq(rrr_xdr_get_string(&x, str, 7), 0);
	cr_assert_str_eq(str, "nfs3");
	cr_assert_eq(rrr_xdr_get_opaque(&x, op, sizeof(op), &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(rrr_xdr_remaining(&x), 0);
	cr_assert_eq(rrr_xdr_get_u32(&x, &u32), -EBADMSG);
}

/* Encoding into every buffer size shorter than the item fails cleanly and
 * writes nothing past the buffer. */
Test(xdr, encode_no_room_every_size)
{
	uint8_t buf[32];

	for (size_t len = 0; len < 12; len++) {
		struct rrr_xdr x = enc(buf, len);

		memset(buf, 0xEE, sizeof(buf));
		cr_assert_eq(rrr_xdr_put_opaque(&x, "hello", 5), -EMSGSIZE, "len %zu", len);
		for (size_t i = len; i < sizeof(buf); i++)
			cr_assert_eq(buf[i], 0xEE);
		x = enc(buf, len);
		if (len < 8)
			cr_assert_eq(rrr_xdr_put_u64(&x, 1), -EMSGSIZE);
		if (len < 4) {
			cr_assert_eq(rrr_xdr_put_u32(&x, 1), -EMSGSIZE);
			cr_assert_eq(rrr_xdr_put_fixed(&x, "a", 1), -EMSGSIZE);
			cr_assert_eq(rrr_xdr_reserve(&x, 1, NULL), -EMSGSIZE);
			cr_assert_eq(rrr_xdr_skip(&x, 1), -EMSGSIZE);
		}
	}
	struct rrr_xdr x = enc(buf, 16);
	cr_assert_eq(rrr_xdr_reserve(&x, 0x40000001u, NULL), -EMSGSIZE);
	cr_assert_eq(rrr_xdr_put_fixed(&x, buf, UINT32_MAX), -EMSGSIZE);
}

Test(xdr, decode_truncated_every_offset)
{
	static const uint8_t msg[] = {0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o', 0, 0, 0};
	char out[8];
	uint32_t n;

	for (size_t len = 0; len < sizeof(msg); len++) {
		struct rrr_xdr x = dec(msg, len);

		cr_assert_eq(rrr_xdr_get_opaque(&x, out, sizeof(out), &n), -EBADMSG, "len %zu",
			     len);
		x = dec(msg, len);
		cr_assert_eq(rrr_xdr_skip(&x, 9), len < 12 ? -EBADMSG : 0);
		x = dec(msg, len);
		if (len < 8)
			cr_assert_eq(rrr_xdr_get_u64(&x, (uint64_t *)(void *)out), -EBADMSG);
	}
}

Test(xdr, huge_lengths_and_counts)
{
	static const uint8_t huge[] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
	static const uint8_t big[] = {0x00, 0x00, 0x01, 0x00, 0, 0, 0, 0}; /* 256 */
	const void *p;
	char s[16];
	uint32_t n;
	struct rrr_xdr x;

	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_get_opaque_inline(&x, UINT32_MAX - 3, &p, &n), -E2BIG);
	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_get_opaque_inline(&x, 0xFFFFFFFFu, &p, &n), -EBADMSG);
	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_get_string(&x, s, 15), -E2BIG);
	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_get_count(&x, 1000, 4, &n), -E2BIG);
	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_skip(&x, 0xFFFFFFFFu), -EBADMSG);

	/* A count under the max that cannot fit in what is left. */
	x = dec(big, sizeof(big));
	cr_assert_eq(rrr_xdr_get_count(&x, 1000, 4, &n), -EBADMSG);
	x = dec(big, sizeof(big));
	cr_assert_eq(rrr_xdr_get_count(&x, 1000, 0, &n), 0);
	cr_assert_eq(n, 256);
	x = dec(big, sizeof(big));
	cr_assert_eq(rrr_xdr_get_count(&x, 255, 0, &n), -E2BIG);
	/* Worst case for the product: UINT32_MAX * UINT32_MAX must not wrap. */
	x = dec(huge, sizeof(huge));
	cr_assert_eq(rrr_xdr_get_count(&x, UINT32_MAX, UINT32_MAX, &n), -EBADMSG);
}

Test(xdr, bool_enum_range)
{
	static const uint8_t two[] = {0, 0, 0, 2};
	bool b;
	uint32_t e;
	struct rrr_xdr x = dec(two, 4);

	cr_assert_eq(rrr_xdr_get_bool(&x, &b), -EINVAL);
	x = dec(two, 4);
	cr_assert_eq(rrr_xdr_get_enum(&x, 1, &e), -EINVAL);
	x = dec(two, 4);
	cr_assert_eq(rrr_xdr_get_enum(&x, 2, &e), 0);
	cr_assert_eq(e, 2);
}

Test(xdr, string_rejects_nul_and_terminates)
{
	static const uint8_t nul[] = {0, 0, 0, 3, 'a', 0, 'b', 0};
	static const uint8_t ok[] = {0, 0, 0, 3, 'a', 'b', 'c', 0};
	char s[4];
	struct rrr_xdr x = dec(nul, sizeof(nul));

	cr_assert_eq(rrr_xdr_get_string(&x, s, 3), -EINVAL);
	memset(s, 'X', sizeof(s));
	x = dec(ok, sizeof(ok));
	cr_assert_eq(rrr_xdr_get_string(&x, s, 3), 0);
	cr_assert_str_eq(s, "abc");
	x = dec(ok, sizeof(ok));
	cr_assert_eq(rrr_xdr_get_string(&x, s, 2), -E2BIG);
}

Test(xdr, reserve_fill_skip)
{
	static const uint8_t want[] = {0, 0, 0, 12, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0};
	uint8_t buf[16];
	size_t at;
	struct rrr_xdr x = enc(buf, sizeof(buf));

	memset(buf, 0xEE, sizeof(buf));
	cr_assert_eq(rrr_xdr_reserve(&x, 1, &at), 0);
	cr_assert_eq(at, 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 7), 0);
	cr_assert_eq(rrr_xdr_skip(&x, 5), 0); /* 5 zero bytes + 3 pad */
	cr_assert_eq(rrr_xdr_fill_u32(&x, at, 12), 0);
	cr_assert_arr_eq(buf, want, sizeof(want));
	/* fill only what was written, aligned */
	cr_assert_eq(rrr_xdr_fill_u32(&x, 16, 1), -EINVAL);
	cr_assert_eq(rrr_xdr_fill_u32(&x, 2, 1), -EINVAL);
	cr_assert_eq(rrr_xdr_fill_u32(&x, 12, 1), 0);

	/* wrong direction */
	x = dec(want, sizeof(want));
	cr_assert_eq(rrr_xdr_put_u32(&x, 1), -EINVAL);
	cr_assert_eq(rrr_xdr_reserve(&x, 1, &at), -EINVAL);
	x = enc(buf, sizeof(buf));
	uint32_t v;
	cr_assert_eq(rrr_xdr_get_u32(&x, &v), -EINVAL);
}

Test(xdr, payload_without_hook_is_opaque)
{
	static const uint8_t want[] = {0,   0,	 0, 6, 'a',  'b',  'c',	 'd',
				       'e', 'f', 0, 0, 0xAB, 0xCD, 0xEF, 0x01};
	uint8_t buf[sizeof(want)];
	struct iovec in[2] = {{(void *)"abc", 3}, {(void *)"def", 3}};
	struct iovec out[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;
	uint32_t len = 0;
	struct rrr_xdr x = enc(buf, sizeof(buf));

	memset(buf, 0xEE, sizeof(buf));
	cr_assert_eq(rrr_xdr_encode_payload(&x, in, 2, 7), -EINVAL); /* len != sum */
	cr_assert_eq(rrr_xdr_encode_payload(&x, in, 2, 6), 0);
	cr_assert_eq(x.ddp_pos, 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 0xABCDEF01), 0);
	cr_assert_arr_eq(buf, want, sizeof(want));

	x = dec(want, sizeof(want));
	cr_assert_eq(rrr_xdr_decode_payload(&x, 5, &len, out, &niov), -E2BIG);
	x = dec(want, sizeof(want));
	cr_assert_eq(rrr_xdr_decode_payload(&x, 6, &len, out, &niov), 0);
	cr_assert_eq(len, 6);
	cr_assert_eq(niov, 1);
	cr_assert_eq(out[0].iov_base, (void *)(want + 4));
	cr_assert_eq(out[0].iov_len, 6);
	cr_assert_eq(rrr_xdr_pos(&x), 12);

	for (size_t l = 0; l < 12; l++) {
		x = dec(want, l);
		cr_assert_eq(rrr_xdr_decode_payload(&x, 64, &len, out, &niov), -EBADMSG);
		x = enc(buf, l);
		cr_assert_eq(rrr_xdr_encode_payload(&x, in, 2, 6), -EMSGSIZE);
	}
}

/* A hook that moves payloads "out of band": encode records them and leaves
 * only the length word; decode hands back a caller-side sink. */
struct hook_ctx {
	unsigned enc_calls, dec_calls;
	uint32_t last_len;
	char sink[16];
};

static int hook_encode(struct rrr_xdr *xdr, void *ctx, const struct iovec *iov, unsigned niov,
		       uint32_t len)
{
	struct hook_ctx *h = ctx;

	(void)xdr;
	(void)iov;
	(void)niov;
	h->enc_calls++;
	h->last_len = len;
	return 0;
}

static int hook_decode(struct rrr_xdr *xdr, void *ctx, uint32_t len, struct iovec *iov,
		       unsigned *niov)
{
	struct hook_ctx *h = ctx;

	(void)xdr;
	h->dec_calls++;
	h->last_len = len;
	iov[0].iov_base = h->sink;
	iov[0].iov_len = len;
	*niov = 1;
	return 0;
}

Test(xdr, payload_with_hook)
{
	struct hook_ctx h = {0};
	const struct rrr_xdr_ddp ddp = {.encode = hook_encode, .decode = hook_decode, .ctx = &h};
	static const uint8_t want[] = {0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 2};
	uint8_t buf[12];
	struct iovec in = {(void *)"123456789", 9};
	struct iovec out[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;
	uint32_t len;
	struct rrr_xdr x = enc(buf, sizeof(buf));

	rrr_xdr_set_ddp(&x, &ddp);
	cr_assert_eq(rrr_xdr_put_u32(&x, 1), 0);
	cr_assert_eq(rrr_xdr_encode_payload(&x, &in, 1, 9), 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 2), 0);
	cr_assert_arr_eq(buf, want, sizeof(want));
	cr_assert_eq(h.enc_calls, 1);
	cr_assert_eq(h.last_len, 9);
	cr_assert_eq(x.ddp_pos, 4);

	x = dec(want, sizeof(want));
	rrr_xdr_set_ddp(&x, &ddp);
	uint32_t v;
	cr_assert_eq(rrr_xdr_get_u32(&x, &v), 0);
	cr_assert_eq(rrr_xdr_decode_payload(&x, 8, &len, out, &niov), -E2BIG);
	cr_assert_eq(h.dec_calls, 0, "hook must not run on a length over max");
	x = dec(want, sizeof(want));
	rrr_xdr_set_ddp(&x, &ddp);
	cr_assert_eq(rrr_xdr_get_u32(&x, &v), 0);
	cr_assert_eq(rrr_xdr_decode_payload(&x, 9, &len, out, &niov), 0);
	cr_assert_eq(h.dec_calls, 1);
	cr_assert_eq(len, 9);
	cr_assert_eq(niov, 1);
	cr_assert_eq(out[0].iov_base, (void *)h.sink);
	cr_assert_eq(x.ddp_pos, 4);
	cr_assert_eq(rrr_xdr_get_u32(&x, &v), 0);
	cr_assert_eq(v, 2);
}

Test(xdr, odd_length_buffer)
{
	uint8_t buf[7];
	struct rrr_xdr x = enc(buf, sizeof(buf));

	cr_assert_eq(rrr_xdr_put_u32(&x, 1), 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 2), -EMSGSIZE);
	cr_assert_eq(rrr_xdr_put_fixed(&x, "ab", 2), -EMSGSIZE);
	cr_assert_eq(rrr_xdr_remaining(&x), 3);
}
