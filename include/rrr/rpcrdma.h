/* SPDX-License-Identifier: MIT */
/*
 * rrr/rpcrdma.h - RPC-over-RDMA version 1 transport header (RFC 8166) and
 * connection private data (RFC 8797).
 *
 * The decoder is the first thing that touches bytes a peer sent; it is
 * written for hostile input. It validates the WHOLE header (every list,
 * every segment, every limit below) before it returns success, so callers
 * may post RDMA operations for the parsed chunks without re-checking
 * structure. It returns a parsed view in a caller-provided struct: no
 * allocation, the segment arrays are bounded by the RRR_RDMA_MAX_* limits
 * and tightened by struct rrr_rdma_limits.
 *
 * Errors from rrr_rdma_hdr_decode():
 *   -EBADMSG          truncated header, a list discriminator not 0/1, an
 *                     RDMA_ERROR code other than ERR_VERS/ERR_CHUNK, or a
 *                     segment count larger than the bytes that follow
 *   -EPROTONOSUPPORT  rdma_vers != 1 (answer RDMA_ERROR ERR_VERS)
 *   -EOPNOTSUPP       rdma_proc is RDMA_MSGP (2) or RDMA_DONE (3), which
 *                     RFC 8166 section 4.5 obsoletes, or unknown (> 4)
 *   -E2BIG            more segments/chunks than the limits allow (ERR_CHUNK)
 *   -EINVAL           chunk rules broken: read position not a multiple of 4,
 *                     a read list in a reply, zero-length segment where
 *                     illegal, overlapping read chunks, a second write chunk
 *                     when limits.max_write_chunks == 1 (ERR_CHUNK)
 *   -EOVERFLOW        the lengths of one chunk sum past UINT32_MAX, or a
 *                     segment's offset + length wraps 64 bits (ERR_CHUNK)
 * Rules in detail, with the answer to send: docs/protocol.md.
 */
#ifndef RRR_RPCRDMA_H
#define RRR_RPCRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rrr/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define RRR_RPCRDMA_VERSION 1u

enum rrr_rdma_proc {
	RRR_RDMA_MSG = 0,
	RRR_RDMA_NOMSG = 1,
	RRR_RDMA_MSGP = 2, /* obsolete: rejected */
	RRR_RDMA_DONE = 3, /* obsolete: rejected */
	RRR_RDMA_ERROR = 4,
};

enum rrr_rdma_errcode {
	RRR_ERR_VERS = 1,
	RRR_ERR_CHUNK = 2,
};

/* Hard ceilings of the parsed representation; limits may only lower them. */
#define RRR_RDMA_MAX_READ_SEGS 64   /* read list entries (segments) */
#define RRR_RDMA_MAX_WRITE_CHUNKS 8 /* chunks in the write list */
#define RRR_RDMA_MAX_CHUNK_SEGS 64  /* segments in one write chunk / reply chunk */

/* An RDMA segment: what the peer may touch. Wire: handle, length, offset(64). */
struct rrr_rdma_seg {
	uint32_t handle;
	uint32_t length;
	uint64_t offset;
};

/* One read list entry: XDR position + segment. Entries with equal position
 * form one read chunk (RFC 8166 section 4.3.1). */
struct rrr_rdma_read_seg {
	uint32_t position;
	struct rrr_rdma_seg seg;
};

struct rrr_rdma_chunk {
	uint32_t nsegs;
	uint32_t total;  /* sum of segment lengths, checked for overflow */
	struct rrr_rdma_seg segs[RRR_RDMA_MAX_CHUNK_SEGS];
};

/*
 * struct rrr_rdma_limits - per-call policy for the decoder.
 * @max_read_segs:    read list entries accepted (<= RRR_RDMA_MAX_READ_SEGS)
 * @max_write_chunks: write chunks accepted (<= RRR_RDMA_MAX_WRITE_CHUNKS);
 *                    1 gives "more than one write chunk" = -EINVAL
 * @max_chunk_segs:   segments per write/reply chunk (<= RRR_RDMA_MAX_CHUNK_SEGS)
 * @is_reply:         decoding a reply: a non-empty read list is -EINVAL
 * @allow_zero_len:   accept zero-length segments (RFC 8166 permits a
 *                    zero-length segment only in a write chunk the responder
 *                    did not use, so a requester decoding a reply sets it)
 */
struct rrr_rdma_limits {
	uint32_t max_read_segs;
	uint32_t max_write_chunks;
	uint32_t max_chunk_segs;
	bool is_reply;
	bool allow_zero_len;
};

/* Parsed transport header. For RDMA_ERROR only xid/vers/credits/proc and the
 * err fields are meaningful. */
struct rrr_rdma_hdr {
	uint32_t xid;
	uint32_t vers;
	uint32_t credits;
	uint32_t proc;
	/* chunk lists */
	uint32_t nread;
	struct rrr_rdma_read_seg read[RRR_RDMA_MAX_READ_SEGS];
	uint32_t nwrite;
	struct rrr_rdma_chunk write[RRR_RDMA_MAX_WRITE_CHUNKS];
	bool has_reply;
	struct rrr_rdma_chunk reply;
	/* RDMA_ERROR body */
	uint32_t err;      /* enum rrr_rdma_errcode */
	uint32_t vers_low; /* ERR_VERS */
	uint32_t vers_high;
	/* byte offset where the RPC message starts (RDMA_MSG) */
	size_t hdr_len;
};

/* Default limits: maxima of the representation, request side. */
void rrr_rdma_limits_default(struct rrr_rdma_limits *lim);

/* Encode @hdr (its read/write/reply lists as given) at the start of @xdr.
 * Returns 0 or -EMSGSIZE. Does not validate semantics: the encoder trusts
 * its caller, the decoder trusts nobody. */
int rrr_rdma_hdr_encode(struct rrr_xdr *xdr, const struct rrr_rdma_hdr *hdr);

/* Decode and fully validate a transport header from @buf/@len into @hdr.
 * On success hdr->hdr_len is the size of the transport header. Errors as
 * listed at the top of this file; @hdr is garbage after an error except
 * that hdr->xid is valid whenever len >= 4 (for error replies). */
int rrr_rdma_hdr_decode(const void *buf, size_t len, const struct rrr_rdma_limits *lim,
			struct rrr_rdma_hdr *hdr);

/* Encode RDMA_ERROR: ERR_VERS (with low/high = 1/1) or ERR_CHUNK. */
int rrr_rdma_err_encode(struct rrr_xdr *xdr, uint32_t xid, uint32_t credits, uint32_t err);

/* --- RFC 8797 connection private data ------------------------------------ */

#define RRR_RDMA_PD_MAGIC 0xF6AB0E18u
#define RRR_RDMA_PD_VERSION 1u
#define RRR_RDMA_PD_LEN 8u
#define RRR_RDMA_PD_FLAG_REMOTE_INV 0x01u
#define RRR_RDMA_INLINE_DEFAULT 1024u
#define RRR_RDMA_INLINE_MAX (256u * 1024u) /* KiB-1 in one byte: 1..256 KiB */
/* rrr's own default inline send/receive size (clients and servers): large
 * enough that a 4 KiB READ or WRITE and its RPC headers travel inline in one
 * Send, with no registration and no RDMA Read/Write round trip, as
 * NVMe-oF's in-capsule data does; the peer's RFC 8797 private data clamps it
 * (the Linux client and server offer 4096). */
#define RRR_RDMA_INLINE_PREF 8192u

struct rrr_rdma_cm_pd {
	bool remote_inv;      /* sender accepts Send With Invalidate */
	uint32_t send_size;   /* sender's max send (bytes, multiple of 1024) */
	uint32_t recv_size;   /* sender's max receive */
};

/* Encode into @buf (at least RRR_RDMA_PD_LEN bytes). Sizes are rounded DOWN
 * to whole KiB and clamped to [1 KiB, 256 KiB]. Returns bytes written. */
size_t rrr_rdma_cm_pd_encode(void *buf, const struct rrr_rdma_cm_pd *pd);
/* Decode; never fails: absent (len 0), short, wrong magic or version yields
 * the RFC 8797 defaults (1024/1024, no remote invalidation) and returns
 * false; valid data returns true. */
bool rrr_rdma_cm_pd_decode(const void *buf, size_t len, struct rrr_rdma_cm_pd *pd);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_RPCRDMA_H */
