/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_oncrpc_rm.c - libFuzzer harness for the ONC RPC record
 * marking reassembler (xdr/oncrpc_rm.c). The first input byte picks the
 * maximum record size and the feeding step; the rest is the stream. No
 * record may exceed the maximum, nor the buffer grow beyond it; feeding
 * the same stream all at once and in steps must give the same records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xdr/oncrpc_rm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

/* Feed @in in steps of @step; returns a digest of the records (count,
 * lengths, bytes) and the final status in *@status. */
static uint64_t run(const uint8_t *in, size_t n, uint32_t max, size_t step, int *status)
{
	struct rrr__rm r;
	uint64_t h = 1469598103934665603ull;
	size_t off = 0;
	int rc = 0;

	rrr__rm_init(&r, max);
	while (off < n) {
		size_t chunk = n - off < step ? n - off : step, used = 0;

		rc = rrr__rm_feed(&r, in + off, chunk, &used);
		check(used <= chunk);
		off += used;
		if (rc < 0)
			break;
		if (rc == 1) {
			check(r.len <= max);
			h = (h ^ r.len) * 1099511628211ull;
			for (size_t i = 0; i < r.len; i++)
				h = (h ^ r.rec[i]) * 1099511628211ull;
			rrr__rm_next(&r);
		} else {
			check(used == chunk);
		}
		check(r.cap <= max);
	}
	rrr__rm_fini(&r);
	*status = rc < 0 ? rc : 0;
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t maxes[] = {0, 1, 4, 64, 4096, 100000};
	uint64_t a, b;
	int sa, sb;

	if (size < 1)
		return 0;
	uint32_t max = maxes[data[0] % 6];
	size_t step = 1u + (data[0] >> 3);

	a = run(data + 1, size - 1, max, size, &sa);
	b = run(data + 1, size - 1, max, step, &sb);
	check(a == b && sa == sb);
	return 0;
}
