/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_impl.h - what the transport-independent client core
 * (clnt.c) and its transports (clnt_tcp.c, clnt_rdma.c) share.
 *
 * Division of labour. The core owns the requests: it allocates them,
 * encodes the call in the submitting thread, keeps them on the live list,
 * queues them until a transport can take them, applies timeouts, cancel,
 * retry-on-reconnect and reconnect backoff, decodes the RPC reply and runs
 * the completion callbacks - all on one internal progress thread. A
 * transport owns the connection and every per-call wire resource
 * (send buffers, registrations); it is only ever called from the progress
 * thread, so it needs no locks of its own.
 *
 * Handshake between the two for one call:
 *   core: xprt->send(req)           -> transport puts it on the wire
 *   transport: rrr__clnt_lookup(xid) when a reply arrives, makes every MR
 *   of the call invalid, then rrr__clnt_decode_reply() and
 *   rrr__clnt_complete(req, status).
 *   core: xprt->abort(req) on timeout/cancel: the transport makes the call's
 *   MRs invalid (possibly asynchronously) and then calls
 *   rrr__clnt_complete(); the call may stay "ghost" inside the transport
 *   until its late reply frees the credit.
 *   transport: returns -ENOTCONN from send/progress (or calls
 *   rrr__clnt_conn_lost()) when the connection is gone; the core then calls
 *   xprt->close(), which must leave no MR of any call valid, and retries or
 *   fails the calls the transport still held.
 */
#ifndef RRR_CLIENT_CLNT_IMPL_H
#define RRR_CLIENT_CLNT_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <rrr/client.h>
#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>
#include "common/rrr_impl.h"
#include "transport/wait.h"

/* fds one client watches at most: its eventfd and a transport's (CQ + CM) */
#define RRR__CLNT_WATCH_MAX 4

struct rrr__clnt_req;

#define RRR__CLNT_EV_MAX 8u /* undelivered connection events kept */

enum rrr__req_state {
	RRR__REQ_QUEUED = 0, /* in the core's pending queue: nothing on the wire */
	RRR__REQ_SENT,	     /* owned by the transport, in the xid table */
	RRR__REQ_DONE,	     /* status known, MRs invalid: callback pending */
};

struct rrr__clnt_req {
	struct rrr__clnt_req *lnext, *lprev; /* live list (core lock) */
	struct rrr__clnt_req *qnext;	     /* pending / done queue */
	struct rrr__clnt_req *hnext;	     /* xid hash chain (progress thread) */
	struct rrr__clnt_req *anext;	     /* cancel / expiry batch */
	struct rrr_clnt *clnt;
	struct rrr_call *call;
	rrr_call_done_fn done;
	void *arg;
	uint32_t xid;
	enum rrr__req_state state;
	int status;
	uint64_t deadline_ns; /* 0: none */
	bool retried;
	bool cancel_req; /* cancel asked (core lock) */
	bool aborting;	 /* abort handed to the transport */
	bool finished;	 /* callback returned (core lock) */
	bool hashed;
	bool stalled;	  /* counted as a credit stall */
	unsigned waiters; /* cancellers waiting (core lock) */

	/* The encoded call message (RPC header + args). For RDMA the TO_SERVER
	 * DDP payload is NOT in buf: it was recorded by the encode hook and
	 * belongs at payload_pos (after its length word), followed by its XDR
	 * pad, then buf[payload_pos..len). For TCP buf starts with 4 bytes
	 * reserved for the record marker and holds everything. */
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool has_payload;
	bool payload_seen;     /* the encoder encoded a TO_SERVER payload */
	bool payload_mismatch; /* ... other than call->payload */
	uint32_t payload_pos;
	uint32_t payload_len;
	const struct iovec *payload_iov; /* payload_iov_copy, or the encoder's if longer */
	unsigned payload_niov;
	struct iovec payload_iov_copy[RRR_XDR_PAYLOAD_MAX_IOV];

	/* Reply placement (RDMA write chunk): the server wrote placed_len
	 * bytes straight into the caller's sink. */
	bool placed;
	uint32_t placed_len;

	void *xprt; /* transport's per-call state */
};

struct rrr__clnt_xprt_ops {
	const char *name;
	/* Allocate transport state (no connection yet). */
	int (*create)(struct rrr_clnt *c);
	/* Connect, bounded by @timeout_ms; register fds with rrr__clnt_watch().
	 * MAY BLOCK (progress thread only). */
	int (*connect)(struct rrr_clnt *c, int timeout_ms);
	/* Tear the connection down. Every SENT req still owned by the
	 * transport must have no valid MR when this returns (recovered); the
	 * core then walks them. Ghost calls are freed by the transport. */
	void (*close)(struct rrr_clnt *c);
	/* Can one more call be sent now (credits, slots, send-queue room)? */
	bool (*can_send)(struct rrr_clnt *c);
	/* Put @req on the wire. 0: sent (req->state = SENT, hashed);
	 * -EAGAIN: no resources now, keep it queued; -ENOTCONN: connection
	 * gone; other: fail this call with that status (nothing exposed). */
	int (*send)(struct rrr_clnt *c, struct rrr__clnt_req *req);
	/* Optional: post what the send() calls since the last flush queued,
	 * as one batch (one doorbell; send() itself posts a batch that is
	 * full). The core calls it after every run of send(); a call send()
	 * accepted counts as on the wire even before its flush. Returns 0 or -ENOTCONN (the connection is gone: the core
	 * treats the batch's calls like every other sent call, close()
	 * recovers their MRs). */
	int (*flush)(struct rrr_clnt *c);
	/* The fd registered with tag @tag is ready: make progress. Returns 0
	 * or -ENOTCONN when the connection is gone. */
	int (*progress)(struct rrr_clnt *c, uint32_t tag);
	/* The progress thread is about to sleep (optional): ask for the
	 * notifications that must wake it (arm the CQ) and look once more.
	 * Returns > 0 when that look found work (the thread loops instead of
	 * sleeping), 0 to sleep, -ENOTCONN when the connection is gone. Arming
	 * only here, not after every progress step, lets the completions of
	 * work posted between the two (Sends of the next calls) be found by
	 * this look instead of by a notification the thread sends itself. */
	int (*before_sleep)(struct rrr_clnt *c);
	/* Timeout / cancel of a SENT call: make its MRs invalid and complete it
	 * with @status (maybe later, from progress()). */
	void (*abort)(struct rrr_clnt *c, struct rrr__clnt_req *req, int status);
	void (*destroy)(struct rrr_clnt *c);
	uint32_t (*max_payload)(const struct rrr_clnt *c);
};

extern const struct rrr__clnt_xprt_ops rrr__clnt_tcp_ops;
extern const struct rrr__clnt_xprt_ops rrr__clnt_rdma_ops;

struct rrr_clnt {
	/* What every call and every progress round reads or writes comes
	 * first, packed into a few cache lines: a process that spreads its
	 * calls over thousands of clients finds each client's state cold at
	 * every call, and each line a call touches is a miss then
	 * (docs/scaling.md). The rest follows by how often it is used. */
	const struct rrr__clnt_xprt_ops *ops;
	void *xprt; /* transport state */
	pthread_mutex_t lock;
	/* opts.group: the group thread that runs this client's progress
	 * (clnt_group.c) instead of a thread of its own */
	struct rrr__clnt_gthread *gthr;
	unsigned gslot;	 /* its member slot there (group thread only) */
	uint32_t next_xid;
	bool group_left; /* the group thread let go of it (core lock) */
	bool stopping;	 /* destroy asked */
	bool connected;
	bool broken;	 /* transport asks for a new connection */
	bool gdirect;	 /* see watch[] */
	bool self_woken; /* a callback submitted; no eventfd written */
	/* Waking without a system call while the progress side is busy
	 * (clnt.c wake()): a client's own thread sets sleeping around its
	 * wait, and a waker writes evfd only then, after setting wake_req,
	 * which the thread reads after setting sleeping (both sequentially
	 * consistent, so one of the two sees the other). A group member is
	 * queued on its thread's kick list instead (kicked: it is there). */
	atomic_bool sleeping, wake_req, kicked;
	int epfd;
	int evfd;     /* wakes the progress thread */
	int readyfd;  /* -1 without app_completions, see ready_head */
	unsigned ncancel; /* cancels asked, not yet seen (core lock) */
	unsigned nspare;  /* see spare (core lock) */
	unsigned busy_rounds; /* before_sleep found work (see progress_main) */
	/* core lock: */
	struct rrr__clnt_req *submit_head, *submit_tail; /* from callers */
	/* progress thread only: */
	struct rrr__clnt_req *pend_head, *pend_tail; /* waiting for the wire */
	struct rrr__clnt_req *done_head, *done_tail; /* callbacks to run */
	/* completions on the application's thread (opts.app_completions,
	 * clnt_events.c): finished requests wait here for
	 * rrr_clnt_run_completions(); readyfd is readable meanwhile */
	struct rrr__clnt_req *ready_head, *ready_tail; /* core lock */
	/* Finished requests kept for reuse with their ENCODE_START buffer, so a
	 * steady stream of calls does not go through malloc/free (core lock). */
	struct rrr__clnt_req *spare;
	struct rrr__clnt_req live; /* sentinel of the live list (core lock);
				    * its links are its first line */

	struct rrr_clnt_opts opts;
	struct rrr_xprt_stats stats; /* core lock */
	struct rrr__clnt_req *xid_hash[256]; /* progress thread only */

	struct rrr__waiter waiter; /* progress thread's wait policy */
	char *host, *port, *provider, *provider_opts;
	pthread_cond_t cond; /* req finished */
	pthread_t thread;
	bool thread_started;
	/* The fds the transport watches (rrr__clnt_watch): in epfd, or, once
	 * the client is in a group (gdirect, its progress context only), in
	 * its group thread's own set, tagged with the member's slot, so the
	 * thread's one epoll_wait says which fds of which clients are ready */
	struct rrr__clnt_watch {
		int fd;
		uint32_t events, tag;
	} watch[RRR__CLNT_WATCH_MAX];
	unsigned nwatch;
	/* local address of the last connection: the transports reconnect from
	 * its port when they can (a server's duplicate request cache keys on
	 * the client's address and port); srclen 0 before the first */
	struct sockaddr_storage src;
	socklen_t srclen;
	unsigned backoff_ms;
	uint64_t next_connect_ns;
	int last_connect_err;
	/* connection events not yet delivered, oldest first (core lock) */
	struct rrr_clnt_conn_event ev[RRR__CLNT_EV_MAX];
	unsigned ev_head, ev_n;
	uint64_t generation; /* relaxed atomic: connections made */
};

/* Monotonic clock in ns. */
uint64_t rrr__clnt_now_ns(void);
/* Add/remove an fd to the progress thread's epoll set; @tag comes back in
 * progress(). */
int rrr__clnt_watch(struct rrr_clnt *c, int fd, uint32_t events, uint32_t tag);
void rrr__clnt_unwatch(struct rrr_clnt *c, int fd);
/* Find the SENT call with @xid (progress thread). */
struct rrr__clnt_req *rrr__clnt_lookup(struct rrr_clnt *c, uint32_t xid);
void rrr__clnt_hash_add(struct rrr_clnt *c, struct rrr__clnt_req *req);
void rrr__clnt_hash_del(struct rrr_clnt *c, struct rrr__clnt_req *req);
/* Encoding a call (clnt_xdr.c): the buffer starts at ENCODE_START bytes
 * and grows up to the transport's bound (RDMA: the arguments without the
 * payload; TCP: the whole record). */
#define RRR__CLNT_ENCODE_START	  4096u
#define RRR__CLNT_ENCODE_MAX_RDMA (1u << 20)
#define RRR__CLNT_ENCODE_MAX_TCP  (64u << 20)
/* Encode @req's call into req->buf in the submitting thread, recording a
 * TO_SERVER payload (not copying it). 0, the encoder's error, -EMSGSIZE,
 * -ENOMEM, or -EINVAL with req->payload_mismatch set (the payload encoded
 * is not call->payload). */
int rrr__clnt_encode_call(struct rrr_clnt *c, struct rrr__clnt_req *req);
/* Decode a reply message (RPC reply header + results) for @req; returns
 * the call status. The reply must be complete and @req's MRs invalid. */
int rrr__clnt_decode_reply(struct rrr_clnt *c, struct rrr__clnt_req *req, void *msg, size_t len);
/* The call is finished with @status and none of its MRs is valid: queue
 * its callback (removes it from the xid table). */
void rrr__clnt_complete(struct rrr_clnt *c, struct rrr__clnt_req *req, int status);
/* --- completions and connection events (clnt_events.c) ------------------ */

/* Run @req's callback on this thread and finish it (unlink, wake
 * cancellers, recycle); no lock held (clnt.c). */
void rrr__clnt_finish(struct rrr_clnt *c, struct rrr__clnt_req *req);
/* Record a connection event (progress thread); a full queue drops its
 * oldest event. */
void rrr__clnt_event(struct rrr_clnt *c, enum rrr_clnt_conn_event_type type, int reason);
/* Deliver recorded events on this thread (progress thread, without
 * app_completions); no lock held. */
void rrr__clnt_deliver_events(struct rrr_clnt *c);
/* app_completions: queue @req for rrr_clnt_run_completions() and make
 * readyfd readable. */
void rrr__clnt_defer(struct rrr_clnt *c, struct rrr__clnt_req *req);
/* The calling thread is inside rrr_clnt_run_completions() of @c. */
bool rrr__clnt_in_run(const struct rrr_clnt *c);

/* --- progress rounds (clnt.c), run by a client's own thread or a group's --- */

enum { RRR__CLNT_ROUND_WAIT, RRR__CLNT_ROUND_AGAIN, RRR__CLNT_ROUND_STOP };
/* The halves of one progress round around the wait on c->epfd (see
 * clnt.c); one thread per client at a time; callbacks run inside. */
int rrr__clnt_round_begin(struct rrr_clnt *c, int *ms);
void rrr__clnt_round_end(struct rrr_clnt *c, const struct epoll_event *evs, int n);
/* After RRR__CLNT_ROUND_STOP: fail what is left, close the transport. */
void rrr__clnt_round_stop(struct rrr_clnt *c);
/* This thread runs no client's round any more (group threads, between
 * clients). */
void rrr__clnt_round_leave(void);
/* Whether this thread runs @c's progress (its own thread, or the group
 * thread it belongs to): a synchronous call there would wait for itself. */
bool rrr__clnt_on_progress(const struct rrr_clnt *c);

/* --- client groups (clnt_group.c) --- */

/* Give @c (connected, its epoll set made) to the least loaded thread of
 * @g, which runs its rounds from now on: 0, or -errno with a sentence.
 * rrr_clnt_destroy() waits for that thread to let go (c->group_left). */
int rrr__clnt_group_join(struct rrr_clnt_group *g, struct rrr_clnt *c);
/* The epoll set and the event data that watch fd @tag of @c, a member
 * in its group thread's set (rrr__clnt_watch). */
int rrr__clnt_group_epfd(const struct rrr_clnt *c);
uint64_t rrr__clnt_group_data(const struct rrr_clnt *c, uint32_t tag);
/* Whether this thread is the group thread that runs @c. */
bool rrr__clnt_group_here(const struct rrr_clnt *c);
/* rrr_clnt_destroy() of @c on its own group thread (a callback of another
 * member): let go of @c there and then, its last round run. */
void rrr__clnt_group_leave_here(struct rrr_clnt *c);
/* Ask @c's group thread to run a round of @c soon (a submission, cancel or
 * destroy from another thread, or from another member's callback): @c goes
 * on the thread's kick list, and the thread's eventfd is written only if
 * it is waiting. Never blocks beyond the thread's list lock. */
void rrr__clnt_group_kick(struct rrr_clnt *c);

/* --- the sentence of a call's failure (clnt_error.c) ----------------------- */

/* Record why @req fails with @status in its call's error (the first reason
 * recorded wins; later, vaguer ones do not overwrite it). Returns @status. */
int rrr__clnt_call_error(struct rrr_clnt *c, struct rrr__clnt_req *req, int status,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A call completes with @status and no reason was recorded: write the
 * generic sentence of that status (what failed, where, what to do). */
void rrr__clnt_default_error(struct rrr_clnt *c, struct rrr__clnt_req *req, int status);
/* A submission fails: the sentence goes to the call and to the submitting
 * thread's rrr_last_error(). Returns @status. */
int rrr__clnt_submit_error(struct rrr_clnt *c, struct rrr_call *call, int status,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Counter update: relaxed atomics, no lock (common/rrr_impl.h). */
#define RRR__CLNT_STAT_ADD(c, field, n) RRR__STAT_ADD(&(c)->stats, field, (n))
#define RRR__CLNT_STAT_SET(c, field, v) RRR__STAT_SET(&(c)->stats, field, (v))

/* --- chunk planning (clnt_plan.c), pure functions for unit tests ---------- */

enum rrr__call_type {
	RRR__CALL_INLINE = 0, /* RDMA_MSG, whole call in the SEND */
	RRR__CALL_READ_CHUNK, /* RDMA_MSG, DDP payload in a read chunk at its position */
	RRR__CALL_NOMSG,      /* RDMA_NOMSG, position-zero read chunk carries the call */
};

struct rrr__plan_in {
	uint32_t inline_send; /* negotiated: what the peer can receive */
	uint32_t inline_recv; /* negotiated: what we can receive */
	uint32_t max_segs;    /* segments per chunk we may use */
	uint32_t msg_len;     /* RPC call length with the payload (+pad) inline */
	uint32_t payload_len; /* TO_SERVER DDP payload bytes (0: none) */
	uint32_t sink_len;    /* FROM_SERVER sink capacity (0: none) */
	uint32_t reply_hint;  /* expected reply size w/o payload (0: unknown, small) */
};

struct rrr__plan {
	enum rrr__call_type call;
	bool write_chunk; /* register the sink as a write chunk */
	bool reply_chunk; /* offer a reply chunk of reply_len bytes */
	uint32_t reply_len;
};

/* Largest transport header with @nread read segments, @nwrite write
 * segments (one chunk) and @nreply reply segments. */
uint32_t rrr__rdma_hdr_size(uint32_t nread, uint32_t nwrite, uint32_t nreply);
/* Decide how a call and its reply travel. -EMSGSIZE if they cannot. */
int rrr__clnt_plan(const struct rrr__plan_in *in, struct rrr__plan *out);
/* A chunk the server returned must be the chunk we offered, segment by
 * segment (same handle and offset, length not larger), filled in order.
 * *total gets the bytes it says it wrote. -EBADMSG otherwise. */
int rrr__clnt_check_chunk(const struct rrr_rdma_chunk *got, const struct rrr_reg_seg *offered,
			  uint32_t noffered, uint32_t *total);

enum rrr__reply_kind {
	RRR__REPLY_BAD = 0, /* undecodable or breaks the chunk rules: garbage */
	RRR__REPLY_MSG,	    /* RPC reply inline after the header */
	RRR__REPLY_NOMSG,   /* RPC reply in the reply chunk */
	RRR__REPLY_ERROR,   /* RDMA_ERROR (ERR_VERS / ERR_CHUNK) */
};

/* What a call offered for its reply (segments as registered). */
struct rrr__offer {
	uint32_t nwrite;
	const struct rrr_reg_seg *write;
	uint32_t nreply;
	const struct rrr_reg_seg *reply;
};

struct rrr__reply_view {
	enum rrr__reply_kind kind;
	int status;	  /* 0, -EREMOTEIO (ERROR), -EBADMSG (BAD) */
	uint32_t credits; /* raw grant (valid unless BAD) */
	size_t msg_off;	  /* MSG: the RPC reply is buf[msg_off .. +msg_len) */
	size_t msg_len;
	bool placed; /* the write chunk carried placed_len bytes */
	uint32_t placed_len;
	uint32_t reply_len; /* NOMSG: bytes of RPC reply in the reply chunk */
};

/* Decode and classify a received reply (whose xid matched a call with
 * @offer); @hdr is scratch space. Returns v->kind. Pure. */
int rrr__clnt_parse_reply(const void *buf, size_t len, const struct rrr__offer *offer,
			  struct rrr_rdma_hdr *hdr, struct rrr__reply_view *v);

#endif /* RRR_CLIENT_CLNT_IMPL_H */
