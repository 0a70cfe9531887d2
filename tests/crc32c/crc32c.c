/* SPDX-License-Identifier: MIT */
/*
 * tests/crc32c/crc32c.c - rrr_crc32c() (transport/crc32c.c, ISA-L inside):
 * the RFC 3720 B.4 vectors as they go on the wire (least significant byte
 * first), "123456789", chaining at every split point, every start alignment
 * and every length 0..300 against a bitwise reference that lives only here,
 * a 1 MiB buffer (one shot, in pieces, against the reference), and threads
 * racing on the first call of a fresh process (ISA-L picks its method then).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/crc32c.h>
#include <rrr/rrr.h> /* the umbrella header declares it too */

/* The definition, one bit at a time: reflected 0x82F63B78, preset and
 * final inversion, chaining like rrr_crc32c(). */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void le(uint32_t v, uint8_t *b)
{
	b[0] = (uint8_t)v, b[1] = (uint8_t)(v >> 8), b[2] = (uint8_t)(v >> 16),
	b[3] = (uint8_t)(v >> 24);
}

/* Deterministic bytes that are neither constant nor periodic. */
static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		b[i] = (uint8_t)(x >> 11);
	}
}

Test(crc32c, rfc3720_vectors_on_the_wire)
{
	uint8_t buf[32], out[4];
	static const uint8_t zeros[4] = {0xaa, 0x36, 0x91, 0x8a};
	static const uint8_t ones[4] = {0x43, 0xab, 0xa8, 0x62};
	static const uint8_t inc[4] = {0x4e, 0x79, 0xdd, 0x46};
	static const uint8_t dec[4] = {0x5c, 0xdb, 0x3f, 0x11};

	memset(buf, 0, 32);
	cr_assert_eq(rrr_crc32c(0, buf, 32), 0x8A9136AAu);
	le(rrr_crc32c(0, buf, 32), out);
	cr_assert_arr_eq(out, zeros, 4);
	memset(buf, 0xff, 32);
	cr_assert_eq(rrr_crc32c(0, buf, 32), 0x62A8AB43u);
	le(rrr_crc32c(0, buf, 32), out);
	cr_assert_arr_eq(out, ones, 4);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	cr_assert_eq(rrr_crc32c(0, buf, 32), 0x46DD794Eu);
	le(rrr_crc32c(0, buf, 32), out);
	cr_assert_arr_eq(out, inc, 4);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	cr_assert_eq(rrr_crc32c(0, buf, 32), 0x113FDB5Cu);
	le(rrr_crc32c(0, buf, 32), out);
	cr_assert_arr_eq(out, dec, 4);
}

Test(crc32c, check_value_and_empty)
{
	cr_assert_eq(rrr_crc32c(0, "123456789", 9), 0xE3069283u);
	cr_assert_eq(ref_crc32c(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
	/* nothing to add: the value passes through, NULL allowed */
	cr_assert_eq(rrr_crc32c(0, NULL, 0), 0);
	cr_assert_eq(rrr_crc32c(0xE3069283u, NULL, 0), 0xE3069283u);
	cr_assert_eq(rrr_crc32c(0xE3069283u, "x", 0), 0xE3069283u);
}

Test(crc32c, chaining_at_every_split_point)
{
	uint8_t buf[1024];

	fill(buf, sizeof(buf), 1);
	uint32_t whole = rrr_crc32c(0, buf, sizeof(buf));

	cr_assert_eq(whole, ref_crc32c(0, buf, sizeof(buf)));
	for (size_t i = 0; i <= sizeof(buf); i++) {
		uint32_t c = rrr_crc32c(0, buf, i);

		cr_assert_eq(rrr_crc32c(c, buf + i, sizeof(buf) - i), whole, "split at %zu", i);
	}
	/* three pieces, the middle one crossing any internal block size */
	for (size_t i = 0; i < sizeof(buf); i += 7)
		for (size_t j = i; j <= sizeof(buf); j += 61) {
			uint32_t c = rrr_crc32c(0, buf, i);

			c = rrr_crc32c(c, buf + i, j - i);
			cr_assert_eq(rrr_crc32c(c, buf + j, sizeof(buf) - j), whole,
				     "split at %zu and %zu", i, j);
		}
	/* one byte at a time */
	uint32_t c = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		c = rrr_crc32c(c, buf + i, 1);
	cr_assert_eq(c, whole);
}

Test(crc32c, every_alignment_and_length_0_to_300)
{
	_Alignas(64) uint8_t src[64 + 300];

	fill(src, sizeof(src), 7);
	for (size_t off = 0; off < 64; off++)
		for (size_t len = 0; len <= 300; len++) {
			cr_assert_eq(rrr_crc32c(0, src + off, len), ref_crc32c(0, src + off, len),
				     "offset %zu length %zu", off, len);
			/* and continuing a running value */
			cr_assert_eq(rrr_crc32c(0x12345678u, src + off, len),
				     ref_crc32c(0x12345678u, src + off, len),
				     "offset %zu length %zu", off, len);
		}
}

Test(crc32c, one_mib)
{
	size_t n = (size_t)1 << 20;
	uint8_t *b = malloc(n + 8);

	cr_assert(b);
	fill(b, n + 8, 42);
	for (size_t off = 0; off < 8; off += 3) {
		uint32_t want = ref_crc32c(0, b + off, n);
		uint32_t c = 0;

		cr_assert_eq(rrr_crc32c(0, b + off, n), want, "offset %zu", off);
		/* in FPDU-like pieces of 16 + 32768 bytes */
		for (size_t done = 0; done < n;) {
			size_t t = n - done < 16 ? n - done : 16;

			c = rrr_crc32c(c, b + off + done, t);
			done += t;
			t = n - done < 32768 ? n - done : 32768;
			c = rrr_crc32c(c, b + off + done, t);
			done += t;
		}
		cr_assert_eq(c, want, "offset %zu in pieces", off);
	}
	/* a single flipped bit anywhere changes the value */
	uint32_t base = rrr_crc32c(0, b, n);

	for (size_t i = 0; i < n; i += 65537) {
		b[i] ^= 0x10;
		cr_assert_neq(rrr_crc32c(0, b, n), base, "bit flip at %zu", i);
		b[i] ^= 0x10;
	}
	free(b);
}

static uint8_t race_buf[100000];

static void *race_thread(void *arg)
{
	uint32_t *out = arg;

	for (int i = 0; i < 50; i++)
		out[i] = rrr_crc32c(0, race_buf + i, sizeof(race_buf) - 64);
	return NULL;
}

/* Each Criterion test is a fresh process: these threads make its first
 * calls at once, while ISA-L chooses its method (see transport/crc32c.c). */
Test(crc32c, concurrent_first_calls)
{
	enum { N = 4 };
	pthread_t t[N];
	static uint32_t out[N][50];

	fill(race_buf, sizeof(race_buf), 3);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, race_thread, out[i]), 0);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	for (int k = 0; k < 50; k++) {
		uint32_t want = ref_crc32c(0, race_buf + k, sizeof(race_buf) - 64);

		for (int i = 0; i < N; i++)
			cr_assert_eq(out[i][k], want, "thread %d call %d", i, k);
	}
}
