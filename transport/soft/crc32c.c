/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/crc32c.c - CRC32c (Castagnoli) for MPA FPDUs.
 *
 * Normal operation: rrr__soft_crc32c() continues a running CRC over a
 * buffer. Where the CPU has SSE4.2 (checked once with cpuid) it uses the
 * crc32 instruction eight bytes at a time, in three interleaved lanes for
 * long buffers (see crc_hw); elsewhere a byte-wise table generated at
 * first use. Both produce the standard CRC32c value
 * (reflected polynomial 0x82F63B78, initial and final inversion), so a
 * running value can be passed from one call to the next: the functions
 * undo the final inversion on entry and redo it on return. MPA sends the
 * value least significant byte first, as iSCSI does (RFC 3720 B.4).
 *
 * Recovery: none needed; pure functions.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "soft.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[i] = c;
	}
}

uint32_t rrr__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_init);
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
/*
 * Three-lane hardware CRC. The crc32 instruction has a latency of three
 * cycles but a throughput of one per cycle, so one dependency chain uses a
 * third of the unit. We run three chains over three adjacent blocks of
 * LANE bytes and combine them: in the raw (non-inverted) register domain
 * CRC(A || B) = shift(CRC(A), |B|) ^ CRC0(B), where shift(c, n) is the
 * register after n zero bytes - linear in c, so four 256-entry tables
 * (one per byte of c) hold shift by LANE bytes, built once with the same
 * instruction over zeros.
 */
#define LANE 4096

static uint32_t shift_tab[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t raw_hw(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t r = c;

	while (len && ((uintptr_t)p & 7)) {
		r = __builtin_ia32_crc32qi((uint32_t)r, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		r = __builtin_ia32_crc32di(r, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		r = __builtin_ia32_crc32qi((uint32_t)r, *p++);
	return (uint32_t)r;
}

__attribute__((target("sse4.2"))) static void shift_init(void)
{
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint64_t r = b << (8 * k);

			for (int i = 0; i < LANE / 8; i++)
				r = __builtin_ia32_crc32di(r, 0);
			shift_tab[k][b] = (uint32_t)r;
		}
}

static inline uint32_t shift_lane(uint32_t c)
{
	return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
	       shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
							 size_t len)
{
	uint32_t c = ~crc;

	if (len >= 3 * LANE) {
		pthread_once(&shift_once, shift_init);
		while (len && ((uintptr_t)p & 7)) {
			c = __builtin_ia32_crc32qi(c, *p++);
			len--;
		}
		while (len >= 3 * LANE) {
			uint64_t c0 = c, c1 = 0, c2 = 0;

			for (size_t i = 0; i < LANE; i += 8) {
				uint64_t a, b, d;

				memcpy(&a, p + i, 8);
				memcpy(&b, p + LANE + i, 8);
				memcpy(&d, p + 2 * LANE + i, 8);
				c0 = __builtin_ia32_crc32di(c0, a);
				c1 = __builtin_ia32_crc32di(c1, b);
				c2 = __builtin_ia32_crc32di(c2, d);
			}
			c = shift_lane(shift_lane((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
			p += 3 * LANE;
			len -= 3 * LANE;
		}
	}
	return ~raw_hw(c, p, len);
}

static int hw_state; /* 0 unknown, 1 yes, 2 no; benign race (same value) */

bool rrr__soft_crc32c_hw(void)
{
	int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);

	if (!s) {
		unsigned a, b, c, d;

		s = (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2)) ? 1 : 2;
		__atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
	}
	return s == 1;
}

uint32_t rrr__soft_crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (rrr__soft_crc32c_hw())
		return crc_hw(crc, buf, len);
	return rrr__soft_crc32c_sw(crc, buf, len);
}
#else
bool rrr__soft_crc32c_hw(void)
{
	return false;
}

uint32_t rrr__soft_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return rrr__soft_crc32c_sw(crc, buf, len);
}
#endif
