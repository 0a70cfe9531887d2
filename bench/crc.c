/* SPDX-License-Identifier: MIT */
/*
 * bench/crc.c - rrr-bench crc: GB/s of rrr_crc32c() beside memcpy() of the
 * same bytes, per buffer size, on this CPU; and of XXH3 (libxxhash, the
 * checksum rrr-server's duplicate request cache takes of each call's
 * arguments, server/fs/drc.c).
 *
 * Why beside memcpy: the soft provider's receive path places the bytes
 * (a kernel copy) and then checksums them, its send path checksums and the
 * kernel copies, so "CRC per byte" matters in proportion to a copy of the
 * same bytes. A ratio crc/memcpy of 1.0 means the CRC costs as much CPU as
 * one more copy.
 *
 * Method. One source buffer of the largest size (64-byte aligned, filled
 * with varied bytes) and, for memcpy, one destination of the same size;
 * both are touched by an untimed warm-up pass before anything is measured,
 * so the figures are for warm buffers (for 1 MiB: in L2/L3, the state an
 * FPDU is in right after its copy). A repetition calls the function on the
 * same buffer back to back until about --rep-bytes bytes went through it,
 * timed as a whole with CLOCK_MONOTONIC (one clock read per repetition,
 * negligible). Each CRC call starts from 0 as every FPDU does; results are
 * folded into a sink so no call can be dropped. memcpy is called through a
 * volatile pointer so the compiler cannot elide or shorten it. Per size the
 * three alternate, repetition by repetition (crc, xxh3, memcpy on even ones,
 * the reverse on odd ones), so machine noise lands on all alike; the median
 * over --reps repetitions is reported (and the best, to show the spread).
 * GB/s are 10^9 bytes per second.
 *
 * Before timing, rrr_crc32c() must give 0xE3069283 for "123456789": a fast
 * wrong CRC is no result. Recovery: none needed; a failed check or an
 * allocation failure exits 1, a bad option 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <xxh_x86dispatch.h> /* XXH3_64bits_dispatch: libxxhash on x86-64 */
#else
#include <xxhash.h>
#endif

#include <rrr/crc32c.h>

#include "bench.h"
#include "bench_common.h"

#define MAX_SIZES 16
#define MAX_SIZE  (256u << 20)

enum op { OP_CRC = 0, OP_XXH3, OP_MEMCPY, OP_NUM };
static const char *const op_names[OP_NUM] = {"crc32c", "xxh3", "memcpy"};

static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

/* XXH3 as server/fs/drc.c takes it: libxxhash's dispatcher on x86-64. */
static uint64_t xxh3(const void *p, size_t len)
{
#if defined(__x86_64__)
	return XXH3_64bits_dispatch(p, len);
#else
	return XXH3_64bits(p, len);
#endif
}
static volatile uint32_t sink;

struct cell {
	struct rrr__bench_samples gbps;
	uint64_t calls; /* per repetition */
};

/* One timed repetition of @calls calls on @size bytes; returns GB/s. */
static double run_rep(enum op op, uint8_t *dst, const uint8_t *src, size_t size, uint64_t calls)
{
	uint64_t t0, t1;
	uint32_t acc = 0;

	t0 = rrr__bench_now_ns();
	if (op == OP_CRC) {
		for (uint64_t i = 0; i < calls; i++)
			acc ^= rrr_crc32c(0, src, size);
	} else if (op == OP_XXH3) {
		for (uint64_t i = 0; i < calls; i++)
			acc ^= (uint32_t)xxh3(src, size);
	} else {
		for (uint64_t i = 0; i < calls; i++)
			copy_fn(dst, src, size);
	}
	t1 = rrr__bench_now_ns();
	sink ^= acc ^ dst[size - 1];
	return t1 > t0 ? (double)(calls * size) / (double)(t1 - t0) : 0;
}

static void cpu_features(char *buf, size_t len)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	__builtin_cpu_init();
	snprintf(buf, len, "sse4.2=%d pclmul=%d avx2=%d avx512f=%d vpclmulqdq=%d",
		 !!__builtin_cpu_supports("sse4.2"), !!__builtin_cpu_supports("pclmul"),
		 !!__builtin_cpu_supports("avx2"), !!__builtin_cpu_supports("avx512f"),
		 !!__builtin_cpu_supports("vpclmulqdq"));
#else
	snprintf(buf, len, "unknown");
#endif
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rrr-bench crc [options]\n"
		   "GB/s of rrr_crc32c() (ISA-L) and of XXH3 (libxxhash: rrr-server's\n"
		   "duplicate request cache) beside memcpy() of the same warm bytes.\n\n"
		   "  --sizes LIST      buffer sizes (default 4k,64k,1m; 1 .. 256m)\n"
		   "  --reps N          repetitions per size and function; medians are\n"
		   "                    reported (default 11)\n"
		   "  --rep-bytes SIZE  bytes through the function per repetition\n"
		   "                    (default 64m; at least one call)\n"
		   "  --json FILE       also write the results as JSON\n"
		   "  --help\n");
}

int rrr__bench_crc_main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"sizes", required_argument, NULL, 's'},
	    {"reps", required_argument, NULL, 'r'},
	    {"rep-bytes", required_argument, NULL, 'b'},
	    {"json", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	uint64_t sizes[MAX_SIZES] = {4096, 65536, 1u << 20}, rep_bytes = 64u << 20, maxsize = 0;
	int nsizes = 3, reps = 11, opt, status = 0, rc;
	struct rrr__bench_opts ob = {.cmd = "crc", .lopts = lopts, .usage = usage};
	const char *json;
	struct cell cells[MAX_SIZES][OP_NUM];
	uint8_t *src = NULL, *dst = NULL;
	char feat[160];
	char *end;
	long v;

	while ((opt = rrr__bench_opt_next(&ob, argc, argv)) > 0) {
		switch (opt) {
		case 's':
			nsizes = rrr__bench_opt_sizes("crc", "sizes", optarg, sizes, MAX_SIZES,
						      MAX_SIZE, "sizes are 1 .. 256m");
			if (nsizes < 0)
				return 2;
			break;
		case 'r':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 100000) {
				fprintf(stderr, "rrr-bench crc: --reps is 1 .. 100000\n");
				return 2;
			}
			reps = (int)v;
			break;
		case 'b':
			if (rrr__bench_parse_size(optarg, &rep_bytes) || !rep_bytes ||
			    rep_bytes > (1ull << 40)) {
				fprintf(stderr, "rrr-bench crc: bad --rep-bytes '%s'\n", optarg);
				return 2;
			}
			break;
		}
	}
	if (opt < 0)
		return ob.exit;
	json = ob.json;
	for (int i = 0; i < nsizes; i++)
		maxsize = sizes[i] > maxsize ? sizes[i] : maxsize;
	if (rrr_crc32c(0, "123456789", 9) != 0xE3069283u) {
		fprintf(stderr, "rrr-bench crc: rrr_crc32c(\"123456789\") is %08x, not e3069283\n",
			rrr_crc32c(0, "123456789", 9));
		return 1;
	}

	memset(cells, 0, sizeof(cells));
	src = aligned_alloc(64, (maxsize + 63) / 64 * 64);
	dst = aligned_alloc(64, (maxsize + 63) / 64 * 64);
	if (!src || !dst) {
		fprintf(stderr, "rrr-bench crc: out of memory\n");
		status = 1;
		goto out;
	}
	for (uint64_t i = 0; i < maxsize; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 9));
	memset(dst, 0, maxsize);

	cpu_features(feat, sizeof(feat));
	rrr__bench_print_header(stdout, argc, argv);
	printf("# cpu features: %s (ISA-L and libxxhash pick their code by them at run time)\n",
	       feat);
	printf("# warm buffers, 64-byte aligned; ~%llu bytes per repetition; medians of %d\n"
	       "# repetitions (crc, xxh3 and memcpy alternating); GB/s = 10^9 bytes/s;\n"
	       "# x = crc/memcpy GB/s (1.00: the CRC costs as much as a copy of the bytes,\n"
	       "# 0.50: twice as much)\n",
	       (unsigned long long)rep_bytes, reps);
	printf("%-6s %12s %12s %12s %12s %12s %12s %6s\n", "size", "crc.GB/s", "crc.best",
	       "xxh3.GB/s", "xxh3.best", "memcpy.GB/s", "memcpy.best", "x");
	for (int si = 0; si < nsizes; si++) {
		size_t size = (size_t)sizes[si];
		uint64_t calls = rep_bytes / size ? rep_bytes / size : 1;
		double med[OP_NUM];
		char szb[32];

		for (int o = 0; o < OP_NUM; o++) {
			cells[si][o].calls = calls;
			if ((rc = rrr__bench_samples_init(&cells[si][o].gbps, (size_t)reps))) {
				fprintf(stderr, "rrr-bench crc: %s\n", strerror(-rc));
				status = 1;
				goto out;
			}
			run_rep((enum op)o, dst, src, size, calls); /* warm-up */
		}
		for (int r = 0; r < reps; r++)
			for (int k = 0; k < OP_NUM; k++) {
				enum op o = (enum op)((r & 1) ? OP_NUM - 1 - k : k);

				rrr__bench_samples_add(&cells[si][o].gbps,
						       run_rep(o, dst, src, size, calls));
			}
		for (int o = 0; o < OP_NUM; o++)
			med[o] = rrr__bench_samples_median(&cells[si][o].gbps);
		printf("%-6s %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %6.2f\n",
		       rrr__bench_fmt_size(sizes[si], szb, sizeof(szb)), med[OP_CRC],
		       rrr__bench_samples_quantile(&cells[si][OP_CRC].gbps, 1.0), med[OP_XXH3],
		       rrr__bench_samples_quantile(&cells[si][OP_XXH3].gbps, 1.0), med[OP_MEMCPY],
		       rrr__bench_samples_quantile(&cells[si][OP_MEMCPY].gbps, 1.0),
		       med[OP_MEMCPY] > 0 ? med[OP_CRC] / med[OP_MEMCPY] : 0);
		fflush(stdout);
	}

	if (json) {
		struct rrr__bench_json j;

		if (rrr__bench_json_begin(&j, json, "crc", argc, argv)) {
			status = 1;
			goto out;
		}
		rrr__bench_json_str(&j, "cpu_features", feat);
		rrr__bench_json_int(&j, "reps", reps);
		rrr__bench_json_int(&j, "rep_bytes", (long long)rep_bytes);
		rrr__bench_json_arr_begin(&j, "results");
		for (int si = 0; si < nsizes; si++) {
			double mcopy = rrr__bench_samples_median(&cells[si][OP_MEMCPY].gbps);

			for (int o = 0; o < OP_NUM; o++) {
				struct cell *c = &cells[si][o];
				double m = rrr__bench_samples_median(&c->gbps);

				rrr__bench_json_obj_begin(&j, NULL);
				rrr__bench_json_str(&j, "op", op_names[o]);
				rrr__bench_json_int(&j, "size", (long long)sizes[si]);
				rrr__bench_json_int(&j, "calls_per_rep", (long long)c->calls);
				rrr__bench_json_num(&j, "gb_s_median", m);
				rrr__bench_json_num(&j, "gb_s_best",
						    rrr__bench_samples_quantile(&c->gbps, 1.0));
				rrr__bench_json_num(&j, "gb_s_worst",
						    rrr__bench_samples_quantile(&c->gbps, 0.0));
				rrr__bench_json_num(&j, "ns_per_call_median",
						    m > 0 ? (double)sizes[si] / m : 0);
				if (o != OP_MEMCPY && mcopy > 0)
					rrr__bench_json_num(&j, "ratio_to_memcpy", m / mcopy);
				rrr__bench_json_obj_end(&j);
			}
		}
		rrr__bench_json_arr_end(&j);
		if (rrr__bench_json_end(&j, json, "crc"))
			status = 1;
	}
out:
	for (int si = 0; si < nsizes; si++)
		for (int o = 0; o < OP_NUM; o++)
			rrr__bench_samples_free(&cells[si][o].gbps);
	free(src);
	free(dst);
	return status;
}
