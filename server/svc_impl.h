/* SPDX-License-Identifier: MIT */
/*
 * server/svc_impl.h - what the server's transports (svc_tcp.c, svc_rdma_*.c)
 * share with the transport-independent core (svc.c).
 *
 * A connection (struct rrr__svc_conn) is owned by exactly one worker
 * thread from the moment it is adopted until it is destroyed. Its fd (the
 * socket for TCP, the CQ's fd for RDMA) sits in that worker's epoll set,
 * level-triggered, with the connection as epoll data. The worker calls
 * ops->on_event() when the fd is ready and ops->on_msg() for messages the
 * accept thread forwards (RDMA CM events). Everything a connection does
 * happens on its worker thread, so connection state needs no lock; a
 * handler handed to another worker (rrr__svc_offload) touches only its
 * request, and its return comes back to the owner through the inbox.
 *
 * A request (struct rrr_svc_req) is decoded and dispatched by
 * rrr__svc_dispatch(); the transport owns the request's memory and calls
 * rrr__svc_req_end() once the reply has been sent (or dropped).
 */
#ifndef RRR_SERVER_SVC_IMPL_H
#define RRR_SERVER_SVC_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/server.h>
#include <rrr/stats.h>
#include <rrr/xdr.h>

#include "common/rrr_impl.h"

struct rrr_svc;
struct rrr__svc_worker;
struct rrr__svc_conn;

/* Counters: RRR__STAT_ADD/RRR__STAT_SET (common/rrr_impl.h). */

struct rrr__svc_conn_ops {
	const char *name; /* "tcp" or "rdma" */
	/* The fd is ready (EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP). */
	void (*on_event)(struct rrr__svc_conn *c, uint32_t events);
	/* A message forwarded by the accept thread (RDMA: a CM event). */
	void (*on_msg)(struct rrr__svc_conn *c, const void *msg);
	/* The server is stopping: take no new requests, finish what is in
	 * flight, then call rrr__svc_conn_close(). */
	void (*shutdown)(struct rrr__svc_conn *c);
	/* Release everything; the worker has removed the fd from epoll. */
	void (*destroy)(struct rrr__svc_conn *c);
};

struct rrr__svc_conn {
	const struct rrr__svc_conn_ops *ops;
	struct rrr_svc *svc;
	struct rrr__svc_worker *w;
	/* the owning worker's counters (relaxed atomics, RRR__STAT_ADD): set
	 * by rrr__svc_adopt(); a transport counts through this pointer */
	struct rrr_xprt_stats *st;
	int fd;		 /* in the worker's epoll set */
	uint32_t events; /* current epoll interest */
	struct sockaddr_storage peer;
	bool closing;  /* rrr__svc_conn_close() called */
	bool in_epoll; /* fd added to the worker's epoll set */
	int refs;      /* atomic; freed by destroy at 0 */
	struct rrr__svc_conn *next, *prev;
	uint8_t admit_fds; /* descriptors counted for it at admission */
	bool admitted;	 /* counted by rrr__svc_admit() (svc_admit.c) */
	bool idle_shut;	 /* shut down by the idle timeout */
	int64_t last_ms; /* last traffic (worker clock, ms) */
};

/* Per-request arena block (rrr_svc_req_alloc). */
struct rrr__svc_arena;

struct rrr_svc_req {
	struct rrr_svc *svc;
	struct rrr__svc_conn *conn;
	struct rrr_rpc_call call;
	const struct rrr_svc_program *prog;
	struct rrr__svc_arena *arena;
	uint32_t max_payload; /* set by the transport before dispatch */
	/* transport allocator for rrr_svc_req_alloc() (NULL: malloc); memory
	 * it returns lives until the request ends */
	void *(*alloc)(struct rrr_svc_req *req, size_t len);
	void *alloc_ctx;
	/* transport's zero-copy result payload (svc_req.c): 0 when it will
	 * send @iov in place, -EOPNOTSUPP to have it copied; NULL: copy */
	int (*zc)(struct rrr_svc_req *req, struct rrr_xdr *res, const struct iovec *iov,
		  unsigned niov, uint32_t len);
	/* runs once when the request ends (rrr__svc_req_end) */
	void (*release)(void *arg);
	void *release_arg;
	/* rrr_svc_req_after_reply(): runs once after the reply was handed to
	 * the transport, the arguments still valid (rrr__svc_req_after_reply) */
	void (*after_reply)(void *arg, bool replied);
	void *after_reply_arg;
};

/* Run the request's after-reply function, if any, once: @replied says
 * whether a reply went out. The transport calls it while the argument
 * stream the handler saw is still valid. */
void rrr__svc_req_after_reply(struct rrr_svc_req *req, bool replied);

/* Result of rrr__svc_dispatch(). */
enum rrr__svc_verdict {
	RRR__SVC_REPLY_OK = 0,	/* SUCCESS reply with results in @res */
	RRR__SVC_REPLY_ERR = 1, /* an error reply is in @res; @res was re-initialised
				 * without the DDP hook: drop any DDP state */
	RRR__SVC_NO_REPLY = 2,	/* send nothing */
};

/* Reserve in every reply buffer beyond max_payload (headers, attributes). */
#define RRR__SVC_REPLY_SLACK (64u * 1024u)

/*
 * rrr__svc_dispatch - decode the call header from @args (positioned at the
 * RPC message), pick the program/procedure, run the handler and leave the
 * reply message (header + results) in @res (an ENCODE stream at its start).
 * @req must have svc, conn and max_payload set; the rest is filled here.
 * Returns a verdict; never fails otherwise (errors become RPC error replies).
 */
enum rrr__svc_verdict rrr__svc_dispatch(struct rrr_svc_req *req, struct rrr_xdr *args,
					struct rrr_xdr *res);
/*
 * rrr__svc_place_lookup - decode the call header at @args (positioned at
 * the RPC message) into @req->call and return the place function of its
 * procedure (rrr_svc_set_place), setting @req->prog; NULL when it has none
 * or the header would not be accepted (dispatch then answers the call as
 * it should). @req must have svc and conn set. Worker thread; never blocks.
 */
rrr_svc_place_fn rrr__svc_place_lookup(struct rrr_svc_req *req, struct rrr_xdr *args);
/* Tests and fuzzing: dispatch one RPC message @msg/@len on @svc as if it
 * came from a connection, encoding the reply into @out/@cap (*out_len: its
 * length, 0 for no reply). Returns the verdict or -errno. Not thread-safe
 * against a running server's counters of worker 0 (they are atomics). */
int rrr__svc_dispatch_raw(struct rrr_svc *svc, const void *msg, size_t len, void *out, size_t cap,
			  size_t *out_len);
/* Give back the request's arena (to the calling worker's block cache, or
 * free it); call after the reply was sent or dropped. */
void rrr__svc_req_end(struct rrr_svc_req *req);
/* Start @req's arena (empty) with a block of the calling worker's cache,
 * the largest it has (none: nothing happens), for a handler about to run
 * on another worker: rrr_svc_req_alloc() cuts from it first, and
 * rrr__svc_req_end() on this worker gives it back here. */
void rrr__svc_req_lend(struct rrr_svc_req *req);

/* Arena blocks (svc.c): sizes and the per-worker cache bound. */
#define RRR__SVC_ARENA_SMALL	   8192u       /* small block, 64-byte header included */
#define RRR__SVC_ARENA_LARGE_ROUND (64u << 10) /* large block payloads: multiples */
#define RRR__SVC_ARENA_CACHE_SMALL 32u	       /* small blocks kept per worker */
#define RRR__SVC_ARENA_CACHE_LARGE 4u	       /* large blocks kept per worker */
#define RRR__SVC_ARENA_CACHE_BYTES (4u << 20)  /* their payload bytes, in all */

struct rrr__svc_arena_stats {
	uint64_t allocated; /* blocks malloc'd (cache empty or no fit) */
	uint64_t reused;    /* blocks taken from the cache */
	uint64_t freed;	    /* blocks freed (cache full, or evicted) */
	uint32_t cached_small, cached_large;
	uint64_t cached_bytes; /* small blocks whole + large payloads */
};
/* Tests: give the calling thread an arena block cache like a worker's
 * (@on), or drop it and free its blocks (!@on). -ENOMEM. */
int rrr__svc_arena_thread(bool on);
/* The calling thread's cache counters (zeros without a cache). */
void rrr__svc_arena_stats(struct rrr__svc_arena_stats *st);

/* Worker services for connections. */
/* Change the epoll interest of @c's fd. */
int rrr__svc_conn_set_events(struct rrr__svc_conn *c, uint32_t events);
/* Schedule @c for destruction at the end of the current worker iteration. */
void rrr__svc_conn_close(struct rrr__svc_conn *c);
/* Hand a new connection (fd, ops, peer set) to a worker, round-robin.
 * Called from the accept thread. On error the caller still owns @c. */
int rrr__svc_adopt(struct rrr_svc *svc, struct rrr__svc_conn *c);
/* Forward a message (copied, @len bytes) to @c's worker; @c must hold a
 * reference taken by the caller, which the worker drops after on_msg(). */
int rrr__svc_post_msg(struct rrr__svc_conn *c, const void *msg, size_t len);
/*
 * rrr__svc_offload - run @run(@arg) on an idle worker other than @c's
 * owner, then @done(@arg) back on the owner (whatever happened to @c
 * meanwhile: @done checks c->closing), so a slow handler does not hold up
 * the other calls of its connection. Takes a reference on @c until @done
 * returned. 0: handed over (neither runs on the caller); -EAGAIN: no
 * worker is idle, or the server is stopping; -ENOMEM: then run it
 * yourself. Owner's thread; never blocks.
 */
int rrr__svc_offload(struct rrr__svc_conn *c, void (*run)(void *arg), void (*done)(void *arg),
		     void *arg);
/*
 * Handler costs (svc_offload.c): a moving average of how long each
 * procedure's handler ran, process-wide, and whether a call at @msg
 * (@len bytes of RPC message) is worth handing to another worker:
 * when its procedure has not been timed yet, or when its handlers take
 * long enough (1 ms) that two thread wake-ups are small beside them.
 * Thread-safe; never blocks.
 */
int64_t rrr__svc_cost_clock(void);
void rrr__svc_cost_note(uint32_t prog, uint32_t vers, uint32_t proc, int64_t ns);
bool rrr__svc_offload_wanted(const uint8_t *msg, size_t len);
void rrr__svc_conn_get(struct rrr__svc_conn *c);
void rrr__svc_conn_put(struct rrr__svc_conn *c);
const struct rrr_svc_opts *rrr__svc_opts(const struct rrr_svc *svc);
bool rrr__svc_stopping(const struct rrr_svc *svc);

/* --- listeners --------------------------------------------------------------
 *
 * A listener belongs to one transport and lives on the accept thread. The
 * core (svc.c) knows it only through its ops table: it creates it with
 * ops->listen(), puts l->fd in the accept thread's epoll set with @l as
 * epoll data, calls ops->ready() when the fd is readable, ops->stop() when
 * the server stops, ops->limit_stats() for the set-up counters and
 * ops->destroy() once every worker has exited. A transport hands the
 * connections it accepts to the core with rrr__svc_adopt(); it never calls
 * back into svc.c otherwise.
 */
struct rrr__svc_listener;

struct rrr__svc_listener_ops {
	const char *name; /* "TCP" or "RDMA" (messages) */
	/* Listen on @host (NULL: any):@port; *@bound_port gets the port bound
	 * (when non-NULL). 0 with *@out set, or -errno with the error text set
	 * (rrr_last_error). Called before rrr_svc_run(). */
	int (*listen)(struct rrr_svc *svc, const char *host, const char *port,
		      uint16_t *bound_port, struct rrr__svc_listener **out);
	/* l->fd is readable: accept (TCP) or handle CM events (RDMA). Accept
	 * thread; never called after stop(). */
	void (*ready)(struct rrr__svc_listener *l);
	/* The server is stopping: take no more connections and close l->fd
	 * (the core has removed it from epoll). NULL: the listener keeps being
	 * called until destroy (RDMA: CM events keep flowing while the
	 * workers close their connections). */
	void (*stop)(struct rrr__svc_listener *l);
	/* The listener's set-up counters; NULL or -EOPNOTSUPP: none. Called
	 * under the limits lock (from any thread). */
	int (*limit_stats)(struct rrr__svc_listener *l, struct rrr_cm_limit_stats *st);
	/* Release everything. Every connection was destroyed before. */
	void (*destroy)(struct rrr__svc_listener *l);
};

struct rrr__svc_listener {
	const struct rrr__svc_listener_ops *ops;
	struct rrr_svc *svc;
	int fd;	      /* in the accept thread's epoll set; -1 once closed */
	bool stopped; /* stop() called: ready() is not called any more */
};

extern const struct rrr__svc_listener_ops rrr__svc_tcp_listener_ops;  /* svc_tcp.c */
extern const struct rrr__svc_listener_ops rrr__svc_rdma_listener_ops; /* svc_rdma_transport.c */

/* --- svc_admit.c: admission, idle and set-up limits, shedding -------------- */

#define RRR_SVC_IDLE_TIMEOUT_MS	   360000u
#define RRR_SVC_STAG_BUDGET	   ((1u << 24) - 1u) /* registrations the soft device's STag space holds */
#define RRR_SVC_CONN_FDS	   2u /* descriptors an idle soft-RDMA connection holds */
#define RRR_SVC_CONN_MEM	   (256u << 10) /* what an idle connection may cost, at most */
#define RRR_SVC_MAX_CONNS_PER_ADDR 128u
#define RRR__SVC_PEER_BUCKETS	   64u

enum {
	RRR__SVC_LOG_MAX_CONNS = 0,
	RRR__SVC_LOG_PER_ADDR,
	RRR__SVC_LOG_IDLE,
	RRR__SVC_LOG_SETUP,
	RRR__SVC_LOG_SHED,
	RRR__SVC_LOG_ACCEPT,
	RRR__SVC_LOG_ADDR,
	RRR__SVC_LOG_KINDS
};

struct rrr__svc_peer;

struct rrr__svc_limits {
	pthread_mutex_t lock;
	struct rrr__svc_peer *peers[RRR__SVC_PEER_BUCKETS];
	uint32_t nconns;
	uint32_t max_conns, max_per_addr;
	uint64_t fds, fd_room; /* descriptors admitted connections hold; the most */
	uint32_t idle_ms;
	char why[400]; /* where max_conns came from (rrr_svc_limits_describe) */
	struct rrr_svc_limit_stats st;	     /* counters (lock) */
	struct rrr_cm_limit_stats cm_folded; /* of listeners already destroyed (lock) */
	int reserve_fd;			     /* given up to shed when out of fds */
	bool (*admit)(void *ctx, const struct sockaddr_storage *peer); /* opts.admit */
	void *admit_ctx;
	int64_t last_log[RRR__SVC_LOG_KINDS];
	uint64_t pending_log[RRR__SVC_LOG_KINDS];
};

/* Fill the limits' defaults of @o; max_conns from the host (svc_admit.c
 * says how), and a sentence of where it came from into @why (@len bytes). */
void rrr__svc_limits_defaults(struct rrr_svc_opts *o, char *why, size_t len);
/* Set up @L from the filled options @o; @why says where max_conns came
 * from (rrr_svc_limits_describe). 0. */
int rrr__svc_limits_init(struct rrr__svc_limits *L, const struct rrr_svc_opts *o,
			 const char *why);
void rrr__svc_limits_fini(struct rrr__svc_limits *L);
struct rrr__svc_limits *rrr__svc_limits(struct rrr_svc *svc);
/* Admit @c (its peer set), which holds @fds descriptors, or refuse it:
 * -EACCES when the application's admission check (opts.admit) refuses its
 * address, -EBUSY at a limit (max_conns, per address, or the descriptors
 * the fd limit leaves; counted, logged, rate-limited). Accept thread;
 * thread-safe. */
int rrr__svc_admit(struct rrr__svc_limits *L, struct rrr__svc_conn *c, const char *transport,
		   unsigned fds);
/* Count and log (rate-limited) a connection refused for its address. */
void rrr__svc_refused_addr(struct rrr__svc_limits *L, const struct sockaddr_storage *peer,
			   const char *transport);
/* Give back @c's admission (no-op if it had none). Thread-safe. */
void rrr__svc_unadmit(struct rrr__svc_limits *L, struct rrr__svc_conn *c);
/* Count (and log) one connection closed by the idle timeout. */
void rrr__svc_idle_closed(struct rrr__svc_limits *L, uint32_t idle_ms);
/* Log when a CM's set-up counters moved from @before to @now. */
void rrr__svc_setup_seen(struct rrr__svc_limits *L, const struct rrr_cm_limit_stats *before,
			 const struct rrr_cm_limit_stats *now, uint32_t setup_ms, uint32_t max_setup);
/* A connection request the server could not take for a reason of its own
 * (not a limit: those log in rrr__svc_admit): one rate-limited line. */
void rrr__svc_accept_failed(struct rrr__svc_limits *L, const struct sockaddr_storage *peer,
			    const char *transport, int err);
/* Add the CM set-up counters of @src to @dst. */
void rrr__svc_cm_add(struct rrr_cm_limit_stats *dst, const struct rrr_cm_limit_stats *src);
/* The server's limit counters into *@st: its own and @cm, the CM counters
 * of every listener, live and destroyed (L->lock held by the caller). */
void rrr__svc_limit_stats_fill(const struct rrr__svc_limits *L,
			       const struct rrr_cm_limit_stats *cm, struct rrr_svc_limit_stats *st);
/* Keep a destroyed listener's CM counters (lock held by the caller). */
void rrr__svc_fold_cm(struct rrr__svc_limits *L, const struct rrr_cm_limit_stats *st);
/* accept() on @lfd failed with EMFILE/ENFILE: accept one connection with the
 * reserved descriptor and close it. true when one was shed (try again). */
bool rrr__svc_shed(struct rrr__svc_limits *L, int lfd);

#endif /* RRR_SERVER_SVC_IMPL_H */
