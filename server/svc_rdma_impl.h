/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_impl.h - shared between the files of the RPC-over-RDMA
 * server: svc_rdma_transport.c (listener, accept, contexts, completions,
 * failure and teardown), svc_rdma_recvfrom.c (receive path),
 * svc_rdma_sendto.c (send path) and svc_rdma_rw.c (RDMA READ of read
 * chunks, RDMA WRITE of write and reply chunks, the DDP hook). Everything
 * here runs on the worker thread that owns the connection, except the
 * accept path of svc_rdma_transport.c.
 */
#ifndef RRR_SERVER_SVC_RDMA_IMPL_H
#define RRR_SERVER_SVC_RDMA_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/provider.h>
#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>

#include "server/svc_impl.h"

/* Write chunks accepted per call (RFC 8166 allows more; NFS uses one). */
#define SVC_RDMA_MAX_WRITE_CHUNKS 4u
/* Where the first read chunk of a rebuilt call starts in its buffer (page). */
#define SVC_RDMA_ALIGN 4096u
/* Reply transport header area per request context. */
#define SVC_RDMA_HDR_AREA                                                                          \
	(16u + 4u + 4u + SVC_RDMA_MAX_WRITE_CHUNKS * (8u + 16u * RRR_RDMA_MAX_CHUNK_SEGS) + 8u +   \
	 16u * RRR_RDMA_MAX_CHUNK_SEGS + 64u)
/* Work requests one context may chain: REG_MRs + READs, or WRITEs + SEND. */
#define SVC_RDMA_MAX_WRS                                                                           \
	(SVC_RDMA_MAX_WRITE_CHUNKS * RRR_RDMA_MAX_CHUNK_SEGS + RRR_RDMA_MAX_CHUNK_SEGS +           \
	 RRR_REG_MAX_SEGS + RRR_RDMA_MAX_READ_SEGS + 4u)

struct svc_rdma_conn;

/* A big buffer with its long-lived local registration (lazily made). */
struct svc_rdma_buf {
	uint8_t *p;
	size_t len;
	struct rrr_mr *mr;
};

enum svc_rdma_phase {
	PH_READ = 1, /* RDMA READs of the read chunks in flight */
	PH_INV = 2,  /* LOCAL_INV of the READ sink registrations in flight */
	PH_SEND = 3, /* reply (WRITEs + SEND) in flight */
	PH_REG = 4,  /* REG_MR of the READ sink in flight (READs wait) */
};

/* Request context: one call from receive to the completion of its reply. */
struct svc_rdma_ctx {
	struct svc_rdma_conn *rc;
	struct svc_rdma_ctx *next;     /* free list / SQ wait list */
	struct svc_rdma_ctx *after_next; /* rc->after_head */
	uint32_t after_idx;		 /* its receive buffer, held until then */
	struct svc_rdma_ctx *all_next; /* every context of the connection */
	struct rrr_svc_req req;
	struct rrr_rdma_hdr *hdr; /* swapped in from the connection's scratch */
	bool busy;
	enum svc_rdma_phase phase;
	unsigned sq_need;		/* WRs of the chain waiting to be posted */
	unsigned sq_held;		/* WRs of the chain in flight */
	struct rrr_send_wr *chain;	/* chain waiting for send queue room */
	struct rrr_send_wr *read_chain; /* READs to post once PH_REG completes */
	unsigned read_need;
	/* send buffer (in the connection's send region) */
	uint8_t *sendbuf; /* SVC_RDMA_HDR_AREA header + body */
	/* lazily allocated big buffers */
	struct svc_rdma_buf arg; /* rebuilt call (read chunks): from rc's sink pool */
	struct svc_rdma_buf res; /* reply message when a reply chunk was offered */
	struct svc_rdma_buf pay; /* write chunk payload bounce */
	size_t arg_len;
	size_t arg_off; /* the rebuilt call starts at arg.p + arg_off */
	/* pull window (svc_rdma_recvfrom.c): bytes this call's READs count against
	 * it while in flight; the call's place in the wait list and the
	 * receive buffer it holds while it waits */
	uint64_t pull_need;
	bool pulling;
	struct svc_rdma_ctx *pull_next;
	uint32_t pull_idx, pull_len;
	/* push window (svc_rdma_sendto.c): write- and reply-chunk bytes of this
	 * call's reply, counted against it from post to Send completion */
	uint64_t push_bytes;
	/* per-I/O registration of the READ sink */
	struct rrr_reg_io *sink;
	bool sink_mapped;
	/* the receive buffer the call's message is in while its handler runs
	 * (UINT32_MAX: none), reposted once the handler is done */
	uint32_t recv_idx;
	/* the call's argument and result streams while its handler runs
	 * (here or on another worker: rrr__svc_offload) and its verdict */
	struct rrr_xdr args, resx;
	enum rrr__svc_verdict verdict;
	/* reply DDP state */
	struct rrr_xdr_ddp ddp;
	unsigned wchunk_next;
	uint32_t wchunk_len[SVC_RDMA_MAX_WRITE_CHUNKS];
	uint32_t wchunk_off[SVC_RDMA_MAX_WRITE_CHUNKS];
	uint32_t pay_used;
	/* zero-copy result payload (svc_rdma_zc.c): the write chunk it fills
	 * (-1: none), the registration of the application's memory, and
	 * whether its LOCAL_INVs follow the reply's Send */
	int zc_k;
	struct rrr_reg_io *zc_io;
	bool zc_chained;
	/* zero-copy arguments (svc_rdma_place.c): the application's memory
	 * the read chunk is pulled into, and the stream position and length
	 * of the item it holds */
	struct rrr_svc_place *place; /* lazily allocated */
	bool placed;
	int place_status; /* for the release callback */
	size_t place_pos;
	uint32_t place_len;
	struct rrr_xdr_ddp place_ddp;
	uint32_t inv_handle; /* 0: none; else Send With Invalidate it */
	bool has_inv;
	/* work requests */
	struct rrr_send_wr wrs[SVC_RDMA_MAX_WRS];
	struct rrr_sge sges[SVC_RDMA_MAX_WRS + 2];
};

struct svc_rdma_conn {
	struct rrr__svc_conn base;
	struct rrr__svc_rdma_listener *l;
	struct rrr_cm_id *id;
	struct rrr_cq *cq;
	struct rrr_qp *qp;
	struct rrr_pd *pd;	 /* this connection's own: its MRs answer only its QP */
	struct rrr_mrpool *pool; /* READ sinks, when the device needs it */
	bool sink_remote_write;
	struct rrr_mr *recv_mr, *send_mr;
	uint8_t *recv_region, *send_region;
	uint32_t nrecv;
	uint32_t recv_size;   /* bytes per receive buffer */
	uint32_t inline_send; /* negotiated: min(local send, peer recv) */
	uint32_t max_requests;
	uint32_t max_payload;
	uint32_t max_record;
	bool remote_inv; /* may use Send With Invalidate */
	struct rrr_rdma_limits lim;
	struct rrr_rdma_hdr *scratch; /* receives are validated here first */
	/* receive reposting */
	uint32_t *repost;
	uint32_t nrepost;
	uint32_t batch;
	/* send queue accounting */
	uint32_t sq_depth, sq_free;
	struct svc_rdma_ctx *sq_wait_head, *sq_wait_tail;
	/* chains ready while a poll batch is handled, posted together by
	 * rrr__svc_rdma_db_flush() as one chained post (one doorbell):
	 * see svc_rdma_sendto.c */
	struct svc_rdma_ctx *db_head, *db_tail;
	/* replies in that batch whose handler left after-reply work: run by
	 * rrr__svc_rdma_db_flush() once the batch is posted, then their
	 * receive buffer and sink go back (svc_rdma_recvfrom.c) */
	struct svc_rdma_ctx *after_head;
	uint32_t db_n; /* contexts queued */
	uint32_t db_pulls; /* of them, chains that pull (REG/READ): posted
			    * before a handler runs, see rrr__svc_rdma_dispatch */
	bool db_defer;
	/* request contexts: at most max_requests + SVC_RDMA_CTX_SLACK; a call
	 * that finds none waits (its receive buffer held) in the deferred
	 * ring until one is free */
	struct svc_rdma_ctx *ctx_free, *ctx_all;
	uint32_t nctx, max_ctx, busy;
	uint32_t *defer_idx, *defer_len; /* ring of nrecv entries */
	uint32_t defer_head, ndefer;
	/* pull window: read-chunk bytes in flight (RDMA READs posted, not yet
	 * complete) stay within pull_window (SVC_RDMA_PULL_RECORDS x
	 * max_payload); calls beyond it wait in
	 * order (pull_head..pull_tail), their receive buffers held. Sink
	 * buffers (ctx->arg) come from a LIFO pool, so the next pull lands in
	 * the buffer the last call just left, still in the CPU's caches. */
	uint64_t pull_inflight, pull_window;
	struct svc_rdma_ctx *pull_head, *pull_tail;
	struct svc_rdma_buf *sink_pool; /* max_ctx entries */
	/* push window: write- and reply-chunk bytes posted and not yet
	 * completed stay about within push_window (SVC_RDMA_PUSH_RECORDS x
	 * max_payload): while they reach it, new calls wait in the deferred
	 * ring, their receive buffers held, so a READ's data is read from
	 * the file just before the provider sends it, still in the caches */
	uint64_t push_inflight, push_window;
	uint32_t nsink_pool;
	/* lifecycle */
	bool established;
	bool gauges_set;    /* credits/inline sizes published in the stats */
	bool disconnecting; /* rrr_cm_disconnect() issued */
	bool disconnected;  /* DISCONNECTED event seen */
	bool broken;	    /* QP in error: no more posts */
	bool shutting;	    /* server stopping: no new requests */
	bool detached;	    /* cm id ctx cleared */
};

/* Contexts beyond the credits granted: room for the replies whose Send
 * completion has not been seen yet when the client's next call arrives. */
#define SVC_RDMA_CTX_SLACK 4u

/* Send-queue entries per request context: a reply is a SEND and a few
 * WRITEs, a pull a REG_MR, a READ or a few and a LOCAL_INV; a longer chain
 * waits for room (counted as a credit stall). */
#define SVC_RDMA_SQ_PER_CTX 8u

/* The pull window, in records of max_payload bytes: the read-chunk bytes a
 * connection pulls at once (a call larger than the window still goes,
 * alone). Two: one call's data landing while the next one's Read Request
 * is already with the client (double buffering), so the client always has
 * a Read Request to answer, and the sink buffers in use, reused LIFO, stay
 * in the last-level cache (a 1 MiB copy costs ~40 us within 8 MiB of
 * buffers and ~105 us across 32 MiB on the machine of docs/benchmarks.md;
 * windows of 1, 2, 4, 8 and unlimited measured). */
#define SVC_RDMA_PULL_RECORDS 2u

/* The push window, in records of max_payload bytes (see the connection):
 * a call starts only while fewer reply-chunk bytes than this are waiting
 * to be sent, so at most one more reply than the window is read ahead. */
#define SVC_RDMA_PUSH_RECORDS 2u

/* Receive work requests are tagged with this bit and the buffer index. */
#define SVC_RDMA_RECV_TAG (1ull << 63)
/* Most receives reposted at once (the repost batch is credits / 4). */
#define SVC_RDMA_BATCH_MAX 16u

static inline uint32_t svc_rdma_min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* svc_rdma_transport.c */
/* Tests: the most request contexts one connection had busy at once. */
uint32_t rrr__svc_rdma_ctx_peak(void);
/* A free request context of @rc, marked busy, or NULL when max_ctx are busy
 * or memory ran out. */
struct svc_rdma_ctx *rrr__svc_rdma_ctx_get(struct svc_rdma_conn *rc);
/* End @ctx's request (recover its sink, leave the windows) and put it back
 * on the free list; nothing when it is not busy. */
void rrr__svc_rdma_ctx_put(struct svc_rdma_ctx *ctx);
/* Protocol violation or failure (@why, NULL: quiet): mark @rc broken, end
 * the calls that wait, disconnect once. */
void rrr__svc_rdma_fail(struct svc_rdma_conn *rc, const char *why);
/* Publish the negotiated credits and inline sizes in the counters, once. */
void rrr__svc_rdma_set_gauges(struct svc_rdma_conn *rc);

/* svc_rdma_recvfrom.c */
/* Post receive buffers @idx[0..n) of @rc. 0 or -EIO. */
int rrr__svc_rdma_post_recvs(struct svc_rdma_conn *rc, const uint32_t *idx, uint32_t n);
/* Give receive buffer @idx back (UINT32_MAX: none) and repost the batch when
 * full or @flush; a failed post fails @rc. */
void rrr__svc_rdma_repost(struct svc_rdma_conn *rc, uint32_t idx, bool flush);
/* A call of @len bytes arrived in receive buffer @idx (@resumed: it waited
 * in the deferred ring): validate, defer, pull or dispatch it. */
void rrr__svc_rdma_recv(struct svc_rdma_conn *rc, uint32_t idx, uint32_t len, bool resumed);
/* Start the calls that waited for a context or a window, while there is room. */
void rrr__svc_rdma_recv_resume(struct svc_rdma_conn *rc);
/* The READs of @ctx completed or it ended: its bytes leave the pull window. */
void rrr__svc_rdma_pull_end(struct svc_rdma_ctx *ctx);
/* Start the pulls that now fit the pull window, in arrival order. */
void rrr__svc_rdma_pull_kick(struct svc_rdma_conn *rc);
/* Run the handler on the call at @buf (@len bytes; in receive buffer
 * @recv_idx, UINT32_MAX when it is not, which is reposted once the handler
 * is done with it) and send its reply. A slow handler runs on an idle
 * worker instead when the connection has other calls (svc_offload.c), its
 * reply sent by rrr__svc_rdma_handler_done() here. */
void rrr__svc_rdma_dispatch(struct svc_rdma_ctx *ctx, uint8_t *buf, size_t len,
			    uint32_t recv_idx);
/* The handler of @ctx returned: send its reply, give its buffers back. */
void rrr__svc_rdma_dispatch_done(struct svc_rdma_ctx *ctx);
/* svc_rdma_transport.c: the return of a handler that ran on another worker
 * (rrr__svc_offload's @done, on the owner): reply, then serve what waited. */
void rrr__svc_rdma_handler_done(void *arg);

/* svc_rdma_sendto.c */
/* Tests: the most write- and reply-chunk bytes one connection had posted
 * and not yet completed at once. */
uint64_t rrr__svc_rdma_push_peak(void);
/* Post @ctx->chain (sq_need WRs) now, at the end of the poll batch, or when
 * the send queue has room; a broken connection ends @ctx instead. */
void rrr__svc_rdma_post_chain(struct svc_rdma_ctx *ctx);
/* Post the chains queued while a poll batch was handled, in order. */
void rrr__svc_rdma_db_flush(struct svc_rdma_conn *rc);
/* The after-reply work of the replies of the batch just flushed (@posted:
 * whether they were posted), then their receive buffers and sinks back. */
void rrr__svc_rdma_after_run(struct svc_rdma_conn *rc, bool posted);
/* Post the chains that waited for send-queue room and now fit. */
void rrr__svc_rdma_sq_kick(struct svc_rdma_conn *rc);
/* Answer call @xid with RDMA_ERROR @err (RRR_ERR_VERS or RRR_ERR_CHUNK). */
void rrr__svc_rdma_send_error(struct svc_rdma_ctx *ctx, uint32_t xid, uint32_t err);
/* Send the reply @res the handler built (verdict @v), inline or by reply
 * chunk, or SYSTEM_ERR when it cannot go; NO_REPLY ends @ctx. */
void rrr__svc_rdma_reply(struct svc_rdma_ctx *ctx, struct rrr_xdr *res, enum rrr__svc_verdict v);

/* svc_rdma_rw.c: called by the other svc_rdma_*.c files (worker thread of the
 * connection);
 * calls nothing back. */
/* Take a sink buffer for @ctx->arg from the connection's pool (the most
 * recently returned one) when @ctx holds none; then as rrr__svc_rdma_buf_get. */
int rrr__svc_rdma_sink_take(struct svc_rdma_ctx *ctx, size_t len);
/* Give @ctx->arg back to the pool (or free it when the pool is full). */
void rrr__svc_rdma_sink_give(struct svc_rdma_ctx *ctx);
/* Make sure @b holds at least @len bytes, locally registered on rc->pd.
 * 0, -ENOMEM or the registration's -errno (@b is then empty). */
int rrr__svc_rdma_buf_get(struct svc_rdma_conn *rc, struct svc_rdma_buf *b, size_t len);
/* Deregister and free @b's memory; @b is left empty. */
void rrr__svc_rdma_buf_free(struct svc_rdma_buf *b);
/* Plan the rebuilt call from the inline message (@msg/@msg_len) and the read
 * list; copy the inline pieces into ctx->arg and build the READ chain.
 * 0: chain ready (post it); -EINVAL/-E2BIG: ERR_CHUNK; other -errno: fail. */
int rrr__svc_rdma_read_prepare(struct svc_rdma_ctx *ctx, const uint8_t *msg, size_t msg_len);
/* Append one RDMA READ of @len bytes at @raddr/@rkey into @addr (local key
 * @lkey) at ctx->wrs[*n], after *@prev; the caller checked the room. */
void rrr__svc_rdma_add_read(struct svc_rdma_ctx *ctx, unsigned *n, struct rrr_send_wr **prev,
			    uint64_t addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey);
/* Close a pull chain of @nwr WRs whose last is @last (a READ: else
 * -EINVAL): the last READ signals; the @nreg REG_MRs first, if any, signal
 * and the READs wait for them (PH_REG), else PH_READ. Sets ctx->chain. */
int rrr__svc_rdma_read_chain(struct svc_rdma_ctx *ctx, struct rrr_send_wr *last, unsigned nwr,
			     unsigned nreg);
/* The READs completed: build the sink invalidation chain if any.
 * Returns true when a LOCAL_INV chain was set up in ctx->chain. */
bool rrr__svc_rdma_read_done(struct svc_rdma_ctx *ctx);
/* LOCAL_INV completed (or nothing to invalidate). */
void rrr__svc_rdma_sink_inv_done(struct svc_rdma_ctx *ctx);
/* Failure: recover the sink registrations. */
void rrr__svc_rdma_sink_recover(struct svc_rdma_ctx *ctx);
/* Install the DDP hook on @res for the call's write list. */
void rrr__svc_rdma_ddp_init(struct svc_rdma_ctx *ctx, struct rrr_xdr *res);
/* rrr_svc_req_alloc() for calls with a write list: registered memory. */
void *rrr__svc_rdma_req_alloc(struct rrr_svc_req *req, size_t len);
/* Drop DDP state (error replies). */
void rrr__svc_rdma_ddp_reset(struct svc_rdma_ctx *ctx);
/* Append RDMA WRITE WRs for the write chunk payloads at ctx->wrs[*n] and
 * copy the call's write list into @rhdr with the lengths actually written
 * (0 for unused chunks). Returns 0 or -E2BIG (too many WRs). */
int rrr__svc_rdma_write_chunks(struct svc_rdma_ctx *ctx, struct rrr_rdma_hdr *rhdr, unsigned *n);
/* Append WRITEs placing @len bytes of @src (registered by @mr) into the
 * call's reply chunk and set @rhdr's reply chunk with the lengths written.
 * -EMSGSIZE when @len exceeds the chunk. */
int rrr__svc_rdma_write_reply_chunk(struct svc_rdma_ctx *ctx, const uint8_t *src, struct rrr_mr *mr,
			       uint32_t len, struct rrr_rdma_hdr *rhdr, unsigned *n);
/* Exactly one distinct handle in the whole call: the one the reply may
 * invalidate with Send With Invalidate (ctx->has_inv, ctx->inv_handle). */
void rrr__svc_rdma_pick_inv(struct svc_rdma_ctx *ctx);
/* Append one RDMA WRITE of @len bytes at @src (local key @lkey) to the
 * segment @seg; -E2BIG when the WR array is full. */
int rrr__svc_rdma_add_write(struct svc_rdma_ctx *ctx, unsigned *n, uint64_t src, uint32_t len,
			    uint32_t lkey, const struct rrr_rdma_seg *seg);

/* --- zero-copy result payloads (svc_rdma_zc.c) ---------------------------- */

/* The transport's rrr_svc_req_encode_payload_zc(): register the
 * application's @iov for the next write chunk and write the length word;
 * -EOPNOTSUPP when it cannot (no such chunk, no MR free): copy instead. */
int rrr__svc_rdma_zc(struct rrr_svc_req *req, struct rrr_xdr *res, const struct iovec *iov,
		     unsigned niov, uint32_t len);
/* WRITEs of write chunk @in from the registered application memory;
 * @out gets the lengths written. */
int rrr__svc_rdma_zc_writes(struct svc_rdma_ctx *ctx, const struct rrr_rdma_chunk *in,
			    struct rrr_rdma_chunk *out, unsigned *n);
/* Chain the LOCAL_INVs of the registration after the reply's @send (which
 * becomes unsignaled: the last LOCAL_INV signals the reply, with @wr_id);
 * returns how many WRs were added (0: nothing to invalidate). */
unsigned rrr__svc_rdma_zc_chain(struct svc_rdma_ctx *ctx, struct rrr_send_wr *send,
				uint64_t wr_id);
/* The reply's chain completed: the registration is invalid. */
void rrr__svc_rdma_zc_sent(struct svc_rdma_ctx *ctx);
/* The request ends: recover a registration still valid (failure paths). */
void rrr__svc_rdma_zc_end(struct svc_rdma_ctx *ctx);

/* --- zero-copy arguments (svc_rdma_place.c) ------------------------------- */

/* A call with one read chunk (@first, @nsegs entries of the read list, at
 * @position, @total bytes) whose procedure has a place function: ask it for
 * memory, register it and build the REG_MR + READ chain into it, with the
 * inline message @msg/@msg_len as the call's stream. 0: chain ready (as
 * rrr__svc_rdma_read_prepare); -ENOENT: not placed, take the ordinary
 * path. */
int rrr__svc_rdma_place_prepare(struct svc_rdma_ctx *ctx, const uint8_t *msg, size_t msg_len,
				uint32_t first, uint32_t nsegs, uint32_t position, uint32_t total);
/* Before the handler runs: install the decode hook that describes the
 * placed memory on @args (nothing for a call that was not placed). */
void rrr__svc_rdma_place_args(struct svc_rdma_ctx *ctx, struct rrr_xdr *args);
/* The request ends (its registration invalidated or recovered): run the
 * application's release callback, once. */
void rrr__svc_rdma_place_end(struct svc_rdma_ctx *ctx);

#endif /* RRR_SERVER_SVC_RDMA_IMPL_H */
