/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_xdr_stream.c - libFuzzer harness for the XDR stream.
 *
 * The input is split: the first 16 bytes (zero-padded) are a "program" of
 * decode operations with small maxima, the rest is the stream. Every
 * successful opaque/string/payload decode is re-encoded into a scratch
 * stream (reset per item) and must reproduce the consumed bytes whenever
 * the input's pad bytes were zero (decoders do not insist on zero pad). The stream position must
 * stay aligned and in bounds after every call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/xdr.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

static int pad_is_zero(const uint8_t *p, uint32_t n)
{
	for (uint32_t i = n; i < RRR_XDR_PAD(n); i++)
		if (p[i])
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t copy[4096], enc[8192];
	uint8_t prog[16] = {0};
	struct rrr_xdr x, e;
	size_t plen = size < 16 ? size : 16;

	memcpy(prog, data, plen);
	data += plen;
	size -= plen;
	rrr_xdr_init(&x, (void *)(uintptr_t)data, size, RRR_XDR_DECODE);

	for (unsigned i = 0; i < 16; i++) {
		uint8_t op = prog[i] & 15, arg = prog[i] >> 4;
		size_t start = rrr_xdr_pos(&x);
		uint32_t u32, n;
		uint64_t u64;
		bool b;
		const void *p;
		char s[300];
		struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
		unsigned niov;
		bool reenc = false;
		int rc;

		rrr_xdr_init(&e, enc, sizeof(enc), RRR_XDR_ENCODE);
		switch (op) {
		case 0:
			rc = rrr_xdr_get_u32(&x, &u32);
			if (!rc) {
				reenc = rrr_xdr_put_u32(&e, u32) == 0;
				check(reenc);
			}
			break;
		case 1:
			rc = rrr_xdr_get_u64(&x, &u64);
			if (!rc) {
				reenc = rrr_xdr_put_u64(&e, u64) == 0;
				check(reenc);
			}
			break;
		case 2:
			rc = rrr_xdr_get_bool(&x, &b);
			if (!rc) {
				reenc = rrr_xdr_put_bool(&e, b) == 0;
				check(reenc);
			}
			break;
		case 3:
			rc = rrr_xdr_get_enum(&x, arg, &u32);
			if (!rc) {
				check(u32 <= arg);
				reenc = rrr_xdr_put_enum(&e, u32) == 0;
				check(reenc);
			}
			break;
		case 4:
			rc = rrr_xdr_get_opaque(&x, copy, (uint32_t)arg * 64u, &n);
			if (!rc) {
				check(n <= (uint32_t)arg * 64u);
				if (pad_is_zero(data + start + 4, n))
					reenc = rrr_xdr_put_opaque(&e, copy, n) == 0;
			}
			break;
		case 5:
			rc = rrr_xdr_get_opaque_inline(&x, UINT32_MAX, &p, &n);
			if (!rc) {
				check((const uint8_t *)p + RRR_XDR_PAD(n) <= data + size);
				if (pad_is_zero(p, n))
					reenc = rrr_xdr_put_opaque(&e, p, n) == 0;
			}
			break;
		case 6:
			rc = rrr_xdr_get_string(&x, s, arg * 16u);
			if (!rc) {
				check(strlen(s) <= arg * 16u);
				if (pad_is_zero(data + start + 4, n = (uint32_t)strlen(s)))
					reenc = rrr_xdr_put_string(&e, s) == 0;
			}
			break;
		case 7:
			rc = rrr_xdr_get_count(&x, arg * 100u, 4, &n);
			if (!rc)
				check(n <= arg * 100u && (uint64_t)n * 4 <= rrr_xdr_remaining(&x));
			break;
		case 8:
			rc = rrr_xdr_skip(&x, (uint32_t)arg * 3u);
			break;
		case 9:
			rc = rrr_xdr_decode_payload(&x, (uint32_t)arg << 8, &n, iov, &niov);
			if (!rc) {
				check(niov == 1 && iov[0].iov_len == n);
				if (pad_is_zero(iov[0].iov_base, n))
					reenc = rrr_xdr_encode_payload(&e, iov, 1, n) == 0;
			}
			break;
		case 10:
			rc = rrr_xdr_get_fixed(&x, copy, (uint32_t)arg * 5u);
			break;
		default:
			rc = rrr_xdr_get_u32(&x, &u32);
			if (!rc)
				reenc = rrr_xdr_put_u32(&e, u32) == 0;
			break;
		}
		check(rc == 0 || rc == -EBADMSG || rc == -E2BIG || rc == -EINVAL);
		check(rrr_xdr_pos(&x) <= size && rrr_xdr_pos(&x) % 4 == 0);
		if (rc)
			break;
		if (reenc) {
			check(rrr_xdr_pos(&e) == rrr_xdr_pos(&x) - start);
			check(memcmp(enc, data + start, rrr_xdr_pos(&e)) == 0);
		}
	}
	return 0;
}
