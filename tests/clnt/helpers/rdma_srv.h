/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/rdma_srv.h - a raw RPC-over-RDMA test server written
 * directly on the provider interface (not the server library), so tests can
 * make it misbehave on purpose and count what the client really sent.
 *
 * Program RSRV_PROG version 1 (DDP-eligible items marked *):
 *   0 NULL
 *   1 ECHO      args: *opaque          reply: *opaque (same bytes)
 *   2 FILL      args: u32 n            reply: *opaque of n bytes, byte i = i*7+3
 *   3 BIG       args: u32 n            reply: opaque of n bytes (NOT DDP:
 *                                      inline or reply chunk), byte i = i*5+1
 *   4 SUM       args: *opaque, u32 tag  reply: u32 len, u32 byte sum, u32 tag
 *   5 HANGUP    disconnects
 *   6 SILENT    never replies
 *   7 ERRCHUNK  replies RDMA_ERROR ERR_CHUNK
 *   8 GARBAGE   replies with transport version 2
 *   9 HOLD      remembers the call's write chunk, never replies
 *  10 FOREIGN   NULL reply sent With Invalidate of the remembered handle
 *  11 POKE      RDMA WRITEs 64 bytes of 0xAA to the remembered write chunk,
 *               then (if the write worked) a NULL reply
 *  FILL also remembers its write chunk (for POKE).
 */
#ifndef TESTS_CLNT_RDMA_SRV_H
#define TESTS_CLNT_RDMA_SRV_H

#include <stdbool.h>
#include <stdint.h>

#define RSRV_PROG 0x20000098u
enum {
	RS_NULL,
	RS_ECHO,
	RS_FILL,
	RS_BIG,
	RS_SUM,
	RS_HANGUP,
	RS_SILENT,
	RS_ERRCHUNK,
	RS_GARBAGE,
	RS_HOLD,
	RS_FOREIGN,
	RS_POKE
};

struct rsrv_opts {
	uint32_t credits; /* grant in every reply (default 8; 0 is sent as 0) */
	bool credits_set;
	uint32_t inline_size; /* advertised send/recv (default 4096) */
	bool no_pdata;	      /* accept without RFC 8797 private data */
	int batch_ms;	      /* hold received calls this long before answering */
};

struct rsrv_stats {
	unsigned accepts;
	unsigned calls;
	unsigned max_outstanding; /* most calls received and not yet answered */
	unsigned read_chunk_calls, nomsg_calls, write_chunk_calls, reply_chunk_calls;
	unsigned poke_failed; /* POKE's RDMA WRITE did not complete successfully */
	unsigned poke_ok;
	uint32_t client_inline_send, client_inline_recv;
	bool client_remote_inv;
};

struct rsrv;
int rsrv_start(const struct rsrv_opts *o, struct rsrv **out, uint16_t *port);
void rsrv_stop(struct rsrv *s);
void rsrv_stats(struct rsrv *s, struct rsrv_stats *st);

#endif
