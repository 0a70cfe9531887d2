/* SPDX-License-Identifier: MIT */
/*
 * transport/crc32c.c - the one CRC32C of the tree (rrr/crc32c.h): MPA
 * FPDUs in the soft provider, file checksums in the programs.
 *
 * Normal operation: rrr_crc32c() hands the bytes to ISA-L's crc32_iscsi()
 * (Intel's Intelligent Storage Acceleration Library, Debian package
 * libisal-dev). We do not keep a CRC of our own because ISA-L already is
 * the fastest known method on x86-64 and is maintained and tested by
 * others: on its first call it looks at the CPU (cpuid) and from then on
 * jumps straight to the best of
 *   - crc32_iscsi_by16_10: AVX-512 + VPCLMULQDQ, folding 256 bytes per
 *     step with carry-less multiplies;
 *   - crc32_iscsi_01: the SSE4.2 crc32 instruction in three interleaved
 *     streams (it has a latency of three cycles but issues one per cycle),
 *     the streams combined with PCLMULQDQ instead of shift tables;
 *   - crc32_iscsi_00: crc32 only; crc32_iscsi_base: a table, anywhere.
 * The dispatch is a pointer ISA-L stores on the first call; concurrent
 * first calls store the same value, so there is nothing to initialise here.
 *
 * Two adaptations. ISA-L does neither the pre- nor the post-inversion of
 * standard CRC-32C: it works on the raw register. We invert on entry and on
 * return, so the public value is the standard one (0xE3069283 for
 * "123456789") and a running value chains across calls: the inversion on
 * return is undone by the one on the next entry. And ISA-L takes the length
 * as an int, so buffers of 2 GiB and more are fed in 1 GiB pieces (the raw
 * register continues across them with no inversion between).
 *
 * Short buffers skip AVX-512. On x86-64 a call for fewer than
 * RRR_CRC_SHORT bytes goes to crc32_iscsi_01 (SSE4.2 + PCLMULQDQ, xmm
 * registers only) when the CPU has both, whatever the dispatcher would
 * pick. by16_10 is the faster loop (41-65 GB/s against 22 GB/s on the
 * Xeon of docs/benchmarks.md "CRC32C", `rrr-bench crc`), but a thread that touches
 * zmm registers makes each of its context switches save and restore the
 * AVX-512 state, which a ping-pong of small messages pays twice per round
 * trip: soft SEND ping-pong 64 B 10.6-10.7 us with by16_10 for every FPDU,
 * 8.3-8.5 us with crc32_iscsi_01 (4 KiB: 11.5-13.8 vs 9.6-10.1 us; `rrr-bench
 * raw --wait spin`). A 4 KiB FPDU costs 0.2 us in crc32_iscsi_01; large
 * FPDUs keep the wide loop.
 *
 * Recovery: none needed; a pure function of its arguments. ISA-L is a build
 * dependency like any other package (no fallback copy of a CRC here).
 */
#include <isa-l/crc.h>
#include <stddef.h>
#include <stdint.h>

#include <rrr/crc32c.h>

#define PIECE ((size_t)1 << 30) /* < INT_MAX: ISA-L's length is an int */
#define RRR_CRC_SHORT ((size_t)16 << 10) /* below: no AVX-512 (see above) */

#if defined(__x86_64__)
/* ISA-L's SSE4.2 + PCLMULQDQ variant: exported by libisal (multibinary
 * symbol crc32_iscsi_01_slver), not declared in <isa-l/crc.h>. */
unsigned int crc32_iscsi_01(unsigned char *buffer, int len, unsigned int init_crc);

static int short_ok = -1; /* -1 unknown, 0 no, 1 yes; racing first calls agree */

static unsigned int crc_short(unsigned char *p, int n, unsigned int c)
{
	int ok = __atomic_load_n(&short_ok, __ATOMIC_RELAXED);

	if (ok < 0) {
		__builtin_cpu_init();
		ok = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
		__atomic_store_n(&short_ok, ok, __ATOMIC_RELAXED);
	}
	return ok ? crc32_iscsi_01(p, n, c) : crc32_iscsi(p, n, c);
}
#else
static unsigned int crc_short(unsigned char *p, int n, unsigned int c)
{
	return crc32_iscsi(p, n, c);
}
#endif

uint32_t rrr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* ISA-L only reads the buffer; its prototype lacks the const. */
	unsigned char *p = (unsigned char *)buf;
	unsigned int c = ~crc;

	if (len < RRR_CRC_SHORT)
		return ~crc_short(p, (int)len, c);
	while (len) {
		size_t n = len < PIECE ? len : PIECE;

		c = crc32_iscsi(p, (int)n, c);
		p += n;
		len -= n;
	}
	return ~c;
}
