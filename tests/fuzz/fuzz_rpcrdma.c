/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_rpcrdma.c - libFuzzer harness for rrr_rdma_hdr_decode().
 *
 * The first input byte selects the decoder limits (reply or request side,
 * zero-length segments, write-chunk limit); the rest is the header. On
 * success the parsed header must satisfy every promise of rrr/rpcrdma.h,
 * and re-encoding it must reproduce the accepted bytes exactly (the wire
 * form is canonical: discriminators are 0/1, nothing is skipped).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/rpcrdma.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rrr_rdma_hdr hdr;
static uint8_t out[65536];

static void check(int cond)
{
	if (!cond)
		abort();
}

static void check_chunk(const struct rrr_rdma_chunk *c, const struct rrr_rdma_limits *l)
{
	uint64_t sum = 0;

	check(c->nsegs <= l->max_chunk_segs && c->nsegs <= RRR_RDMA_MAX_CHUNK_SEGS);
	check(c->nsegs > 0 || l->allow_zero_len);
	for (uint32_t i = 0; i < c->nsegs; i++) {
		check(c->segs[i].length > 0 || l->allow_zero_len);
		check(c->segs[i].offset <= UINT64_MAX - c->segs[i].length);
		sum += c->segs[i].length;
	}
	check(sum == c->total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rrr_rdma_limits l;
	struct rrr_xdr x;
	uint8_t sel;
	int rc;

	if (size < 1)
		return 0;
	sel = data[0];
	data++;
	size--;
	rrr_rdma_limits_default(&l);
	l.is_reply = sel & 1;
	l.allow_zero_len = (sel >> 1) & 1;
	l.max_write_chunks = (sel >> 2) & 7; /* 0..7 */
	l.max_chunk_segs = (sel & 0x20) ? 4 : 64;
	l.max_read_segs = (sel & 0x40) ? 3 : 64;

	rc = rrr_rdma_hdr_decode(data, size, &l, &hdr);
	if (rc) {
		check(rc < 0);
		return 0;
	}
	check(hdr.vers == 1);
	check(hdr.hdr_len <= size && hdr.hdr_len % 4 == 0 && hdr.hdr_len >= 16);
	if (hdr.proc == RRR_RDMA_ERROR) {
		check(hdr.err == RRR_ERR_VERS || hdr.err == RRR_ERR_CHUNK);
	} else {
		check(hdr.proc == RRR_RDMA_MSG || hdr.proc == RRR_RDMA_NOMSG);
		check(hdr.nread <= l.max_read_segs);
		check(!l.is_reply || hdr.nread == 0);
		for (uint32_t i = 0; i < hdr.nread; i++) {
			check(hdr.read[i].position % 4 == 0);
			check(hdr.read[i].seg.length > 0);
			if (i)
				check(hdr.read[i].position >= hdr.read[i - 1].position);
		}
		check(hdr.nwrite <= l.max_write_chunks);
		for (uint32_t i = 0; i < hdr.nwrite; i++)
			check_chunk(&hdr.write[i], &l);
		if (hdr.has_reply)
			check_chunk(&hdr.reply, &l);
	}

	rrr_xdr_init(&x, out, sizeof(out), RRR_XDR_ENCODE);
	check(rrr_rdma_hdr_encode(&x, &hdr) == 0);
	check(rrr_xdr_pos(&x) == hdr.hdr_len);
	check(memcmp(out, data, hdr.hdr_len) == 0);
	return 0;
}
