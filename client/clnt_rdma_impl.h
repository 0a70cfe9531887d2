/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_impl.h - what the RPC-over-RDMA client transport
 * (clnt_rdma.c: connection, sending, replies) and its chunk mapping
 * (clnt_rdma_map.c: per-I/O, persistent and bounce registrations of a
 * call's chunks) share: the per-connection state and the per-call slot.
 * Everything here runs on the client's progress thread (clnt_impl.h).
 */
#ifndef RRR_CLIENT_CLNT_RDMA_IMPL_H
#define RRR_CLIENT_CLNT_RDMA_IMPL_H

#include <stdlib.h>
#include <sys/uio.h>

#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"

#define TAG_CQ		1u
#define TAG_CM		2u
#define WR_RECV		0u
#define WR_SEND		1u
#define WR_INV		2u
#define RECV_BATCH	8u /* receive buffers beyond max_requests */
/* receives kept posted beyond the calls in flight (clnt_rdma.c post_recvs) */
#define RECV_AHEAD	4u
#define CLIENT_IRD	16u
#define MAX_PAYLOAD_CAP (1u << 20)
#define PCACHE_MAX	256u
#define POOL_MRS_MAX	65536u /* rrr_mrpool_create()'s bound */
/* Send-queue entries per credit beyond one longest chain: a call holds
 * its REG_MRs and SEND until the SEND completes, then room for its
 * LOCAL_INVs until they complete (1 to 3 entries for a typical call: a
 * registration or two, the SEND, their invalidation). */
#define SQ_PER_CALL	4u

enum { IO_SRC = 0, IO_SINK, IO_REP, IO_N };

/*
 * The life of a call's slot (docs/design.md, "Request lifecycle (client)"),
 * one state per slot, changed only by rrr__rslot_to(), which rejects an
 * edge this table does not name and fires the USDT probe rrr:call_state:
 *
 *   FREE --send--> MAPPED --queued--> SENT --reply--> REPLIED --invalidated,
 *    ^               |                  |                ^     caller answered--> DONE
 *    |   mapping     |          timeout,|      late reply|                          |
 *    +---failed------+          cancel  v                |                          |
 *    |                               ABORTED ------------+                          |
 *    |                                  | invalidated, caller answered              |
 *    |                                  v                                           |
 *    |                               ORPHANED --late reply (holds a credit till)--> DONE
 *    +--------------------------- SEND completed <----------------------------------+
 *
 * plus recovery: a lost connection takes every slot back to FREE (its
 * registrations recovered, never left valid). Outstanding work requests
 * are counted beside the state (send_pending, inv_pending): a slot leaves
 * DONE only when its SEND has completed.
 */
enum rrr__rslot_state {
	RRR__RSLOT_FREE = 0,
	RRR__RSLOT_MAPPED,   /* registrations being made; nothing posted */
	RRR__RSLOT_SENT,     /* queued or posted; waiting for the reply */
	RRR__RSLOT_REPLIED,  /* reply in; the call's registrations being invalidated */
	RRR__RSLOT_ABORTED,  /* timed out or cancelled before the reply: invalidating */
	RRR__RSLOT_ORPHANED, /* the caller was answered; waiting for the late reply */
	RRR__RSLOT_DONE,     /* the caller was answered; waiting for the SEND's completion */
	RRR__RSLOT_NSTATES
};

struct rslot {
	enum rrr__rslot_state state;
	bool send_pending; /* SEND WR not completed */
	unsigned inv_pending;
	struct rrr__clnt_req *req;
	uint32_t xid;
	int status;	  /* reply status */
	int abort_status; /* != 0: complete with this (timeout / cancel) */
	int recv_idx;	  /* receive buffer held until decode, or -1 */
	uint8_t *msg;
	size_t msg_len;
	bool placed;
	uint32_t placed_len;
	uint8_t *sbuf;
	uint8_t *rbuf; /* reply chunk buffer */
	uint32_t rbuf_cap;
	uint8_t zpad[4];
	/* long-lived segments (persistent_reg / bounce): never invalidated */
	uint32_t nlseg[IO_N];
	/* bit k: io[k] was mapped by a call of this slot, so its pages are
	 * taken; an io never mapped is never read (rslot_io_nsegs) */
	uint8_t io_used;
	uint8_t *bb[2]; /* bounce buffers: [0] source, [1] sink */
	struct rrr_mr *bbmr[2];
	bool bounce_sink; /* the write chunk points at bb[1] */
	struct rrr_send_wr send_wr;
	struct rrr_sge send_sge;
	/* send-queue room held (rdma_xprt.sq_free): the REG_MRs and SEND
	 * until the SEND completes, then the LOCAL_INVs of io k until the
	 * signaled one completes; sq_inv is what start_inv() may still post */
	uint32_t sq_chain, sq_inv, sq_invs[IO_N];
	/* clnt_rdma_sendq.c: a signaled SEND's completion also finishes the
	 * unsignaled SENDs posted before it, up to this count */
	uint64_t unsig_upto;
	uint64_t unsig_seq; /* its SEND's place among the unsignaled, or UINT64_MAX */
	/* The large parts last (about 30 KiB, 7 pages): a slot's pages are
	 * taken when first written, and a call writes only the parts of the
	 * chunks it has, so a small call's slot holds a page or two. Pages
	 * never written are not read either (io_used): a read maps the
	 * shared zero page, and on a host with shadow paging (a
	 * paravirtualised guest) each such read costs microseconds, not the
	 * nanoseconds of a page that was written. */
	struct rrr_sg sg[RRR_XDR_PAYLOAD_MAX_IOV + 3];
	struct rrr_reg_io io[IO_N];
	struct rrr_reg_seg lseg[IO_N][RRR_RDMA_MAX_CHUNK_SEGS];
};

/* Segments io @k of @s holds: 0 for an io this slot never mapped, without
 * reading its (untaken) pages. */
static inline uint32_t rslot_io_nsegs(const struct rslot *s, int k)
{
	return (s->io_used >> k) & 1u ? s->io[k].nsegs : 0;
}

struct rdma_xprt {
	/* What every call touches comes first, in as few cache lines as it
	 * fits (see struct rrr_clnt); set-up state and scratch after it. */

	/* calls' chains (REG_MRs + SEND) that rdma_send() queued for the next
	 * rdma_flush(): linked SEND -> next chain, posted as one */
	struct rrr_send_wr *db_head, *db_tail;
	uint32_t db_n;	 /* calls queued */
	bool db_failed; /* a post made by rdma_send() failed: connection gone */
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *cq;
	struct rrr_qp *qp;
	struct rrr_mrpool *pool;
	bool watching;

	uint32_t nslots;
	/* slots [0, nslots_used) have been taken by a call at least once;
	 * the rest were never written, and loops over slots stop here
	 * rather than read their untaken pages */
	uint32_t nslots_used;
	struct rslot *slots; /* its pages are taken by their slots' first calls */
	size_t slots_len;
	/* each slot's state and xid again, side by side (nslots entries):
	 * finding a free slot or the slot of a reply's xid reads these few
	 * lines, not a line of every slot (each on pages of its own); written
	 * where the slot's are (rrr__rslot_to, rrr__rslot_set_xid) */
	struct rslot_key {
		uint32_t xid;
		uint8_t state;
	} *keys;
	/* send queue: sq_depth entries, of which sq_free are not held by a
	 * call; a call is sent only when its longest chain (sq_chain_max:
	 * 3 x max_segs REG_MRs, the SEND, 3 x max_segs LOCAL_INVs) fits */
	uint32_t sq_depth, sq_free, sq_chain_max;
	/* SENDs posted without a completion (clnt_rdma_sendq.c): their slots
	 * in post order (nslots entries), counted from the connection's
	 * start; what they hold of the send queue; the bounds on both */
	struct unsig_send {
		uint32_t slot, chain; /* the slot, the send-queue room it holds */
	} *unsig;
	uint64_t unsig_posted, unsig_done;
	uint32_t unsig_sq, unsig_max, unsig_sq_max;
	uint8_t *sslab;
	struct rrr_mr *smr;
	uint32_t ssize;

	uint32_t nrecv;
	uint8_t *rslab;
	struct rrr_mr *rmr;
	uint32_t rsize;
	struct rrr_recv_wr *rwr;
	struct rrr_sge *rsge;
	uint32_t *rfree; /* receive buffers waiting to be reposted */
	uint32_t nrfree;
	uint32_t posted;

	uint32_t credits;
	uint32_t inflight; /* sent, reply not received (ghosts included) */
	bool stats_dirty;  /* the pool or the credits changed since sync_stats */
	uint32_t eff_send, eff_recv;
	bool remote_inv; /* we told the peer it may use Send With Invalidate */

	struct rrr_device_attr attr;
	struct rrr_cm *cm;
	struct rrr_cm_id *id;
	/* persistent_reg: long-lived registrations of caller memory, by range */
	uint32_t npc;
	struct pcache {
		uint8_t *base;
		size_t len;
		struct rrr_mr *mr;
	} pc[PCACHE_MAX];
	struct rrr_rdma_hdr hdr; /* scratch */
};

static inline struct rdma_xprt *X(const struct rrr_clnt *c)
{
	return c->xprt;
}

/* The registration pool, for a call that may change its counters: the
 * client's copy of them (sync_stats) is refreshed after the next progress
 * step, and not read at all after steps that made no such call. */
static inline struct rrr_mrpool *pool_op(struct rdma_xprt *x)
{
	x->stats_dirty = true;
	return x->pool;
}

/* Page-aligned allocation of at least @len bytes. */
static inline void *alloc_pages(size_t len)
{
	return aligned_alloc(4096, (len + 4095u) & ~(size_t)4095u);
}

/* --- clnt_rdma_setup.c ---------------------------------------------------- */

/* The transport ops' create and destroy: make the client's device, PD, CQ,
 * CM, MR pool, slots and buffers (0, or -errno with a sentence and nothing
 * left made), and free them (closing a connection still up first). */
int rrr__rdma_create(struct rrr_clnt *c);
void rrr__rdma_destroy(struct rrr_clnt *c);

/* --- clnt_rdma_sendq.c ---------------------------------------------------- */

/* Set the bounds (after nslots and the send queue are sized) and empty the
 * record: at set-up, and when a connection is gone (its QP with it). */
void rrr__rdma_sendq_reset(struct rdma_xprt *x);
/* Whether slot @s's SEND (its chain in s->sq_chain) asks for a completion:
 * sets s->send_wr.flags and records the choice. Never fails. */
void rrr__rdma_sendq_choose(struct rdma_xprt *x, struct rslot *s);
/* After @s's signaled SEND completed: the next slot whose unsignaled SEND,
 * posted before it, is therefore complete too (taken off the record), or
 * NULL when there is none left. */
struct rslot *rrr__rdma_sendq_implied(struct rdma_xprt *x, const struct rslot *s);

/* --- clnt_rdma_map.c ------------------------------------------------------ */

/* Recover (fresh key, never left valid) every registration of slot @s. */
void rrr__rdma_recover_ios(struct rdma_xprt *x, struct rslot *s);
/* Map @n entries of s->sg per I/O into io @k, at most max_segs
 * registrations: -EAGAIN when the pool is empty, -EMSGSIZE (with the
 * call's sentence) when the list needs more registrations. */
int rrr__rdma_map_io(struct rrr_clnt *c, struct rslot *s, int k, unsigned n, unsigned access);
/* The segments io @k offered (long-lived ones for persistent_reg/bounce). */
const struct rrr_reg_seg *rrr__rdma_segs_of(const struct rslot *s, int k, uint32_t *n);
/* Map a chunk for io @k: long-lived (benchmark options) or per I/O. */
int rrr__rdma_map_chunk(struct rrr_clnt *c, struct rslot *s, int k, unsigned n, unsigned access);
/* Append @niov iovecs (at most @limit bytes, empty ones skipped) to @sg
 * from index @n; returns the new count. */
unsigned rrr__rdma_sg_from_iov(struct rrr_sg *sg, unsigned n, const struct iovec *iov,
			       unsigned niov, uint64_t limit);
uint64_t rrr__rdma_iov_total(const struct iovec *iov, unsigned n);
/* Copy @len bytes gathered from @iov to @dst. */
void rrr__rdma_copy_iov(uint8_t *dst, const struct iovec *iov, unsigned n, uint32_t len);

/* client/clnt_rdma_marshal.c: the call's transport header, chunk by chunk
 * (0 or -errno; registrations made stay in @s for the caller to recover). */
struct rrr__plan;
int rrr__rdma_marshal_read_list(struct rrr_clnt *c, struct rslot *s,
				const struct rrr__clnt_req *req, const struct rrr__plan *plan,
				struct rrr_rdma_hdr *h);
int rrr__rdma_marshal_write_list(struct rrr_clnt *c, struct rslot *s, uint64_t sink,
				 const struct rrr__plan *plan, struct rrr_rdma_hdr *h);
int rrr__rdma_marshal_reply_chunk(struct rrr_clnt *c, struct rslot *s,
				  const struct rrr__plan *plan, struct rrr_rdma_hdr *h);
/* Header and the inline part of the message into s->sbuf; *@len its bytes.
 * -EMSGSIZE when they exceed the negotiated inline size. */
int rrr__rdma_marshal_send(const struct rdma_xprt *x, struct rslot *s,
			   const struct rrr__clnt_req *req, const struct rrr__plan *plan,
			   const struct rrr_rdma_hdr *h, uint32_t *len);

/* The state's name, for probes and messages. */
const char *rrr__rslot_state_name(enum rrr__rslot_state st);
/* Whether @from -> @to is an edge of the slot's life (the table above). */
bool rrr__rslot_edge(enum rrr__rslot_state from, enum rrr__rslot_state to);
/* Move slot @s (of connection @c, for the probe and x->keys; NULL in unit
 * tests) to @to: 0, or -EINVAL when the table has no such edge (the state
 * is then unchanged and the bug is logged once). */
int rrr__rslot_to(const struct rrr_clnt *c, struct rslot *s, enum rrr__rslot_state to);
/* Give slot @s of @x the xid of its call (s->xid and x->keys). */
void rrr__rslot_set_xid(struct rdma_xprt *x, struct rslot *s, uint32_t xid);
/* A slot in use: every state but FREE. */
static inline bool rrr__rslot_busy(const struct rslot *s)
{
	return s->state != RRR__RSLOT_FREE;
}

#endif /* RRR_CLIENT_CLNT_RDMA_IMPL_H */
