/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_rdma_cm_pd.c - libFuzzer harness for RFC 8797 private
 * data decoding. Invalid input must give the defaults; valid input must
 * re-encode to the same 8 bytes, reserved flag bits aside.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/rpcrdma.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rrr_rdma_cm_pd pd;
	uint8_t out[RRR_RDMA_PD_LEN];

	if (!rrr_rdma_cm_pd_decode(data, size, &pd)) {
		check(pd.send_size == RRR_RDMA_INLINE_DEFAULT);
		check(pd.recv_size == RRR_RDMA_INLINE_DEFAULT);
		check(!pd.remote_inv);
		return 0;
	}
	check(size >= RRR_RDMA_PD_LEN);
	check(pd.send_size >= 1024 && pd.send_size <= RRR_RDMA_INLINE_MAX &&
	      pd.send_size % 1024 == 0);
	check(pd.recv_size >= 1024 && pd.recv_size <= RRR_RDMA_INLINE_MAX &&
	      pd.recv_size % 1024 == 0);
	check(rrr_rdma_cm_pd_encode(out, &pd) == RRR_RDMA_PD_LEN);
	check(memcmp(out, data, 5) == 0);
	check(out[5] == (data[5] & RRR_RDMA_PD_FLAG_REMOTE_INV));
	check(memcmp(out + 6, data + 6, 2) == 0);
	return 0;
}
