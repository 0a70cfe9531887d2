/* SPDX-License-Identifier: MIT */
/*
 * rrr/server.h - ONC RPC server over RPC-over-RDMA v1 and plain TCP.
 *
 * Register program dispatch tables, add listeners (RDMA on a provider, TCP
 * with record marking), then run. Worker threads (default: one per CPU)
 * each own a set of connections and run handlers to completion.
 *
 * A handler gets the decoded call header (req), the argument stream
 * positioned after the RPC header, and a result stream positioned after the
 * accepted-reply header. It decodes its args (DDP-eligible items with
 * rrr_xdr_decode_payload(): on RDMA the library has already pulled read
 * chunks into server buffers), encodes its results (DDP-eligible items
 * with rrr_xdr_encode_payload(): on RDMA the library pushes them through
 * the client's write chunk) and returns 0 or a negative errno, like every
 * other function of the library:
 *    0                       SUCCESS: results were encoded
 *    RRR_SVC_GARBAGE_ARGS    (-EBADMSG) args did not decode
 *    RRR_SVC_DROP            (-EINPROGRESS) send no reply at all (the call
 *                            is being answered elsewhere, e.g. a duplicate)
 *    any other negative errno, RRR_SVC_SYSTEM_ERR (-EIO) among them:
 *                            internal failure, SYSTEM_ERR reply
 * (The positive values 1, 2, 3 of earlier versions still mean GARBAGE_ARGS,
 * SYSTEM_ERR and DROP.)
 * Result payload buffers must stay valid until the reply is sent: allocate
 * them with rrr_svc_req_alloc(), which frees them when the request ends.
 *
 * Threads: a handler runs on one worker thread; handlers of different
 * connections run concurrently, and so may handlers of one RDMA
 * connection: a slow handler (one that has taken over 1 ms) of a
 * connection with other calls in progress runs on an idle worker while
 * the connection's own worker goes on receiving (rrr_xprt_stats.offloaded).
 * Shared state needs the program's lock; thread-local state is per worker.
 */
#ifndef RRR_SERVER_H
#define RRR_SERVER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/stats.h>
#include <rrr/wait.h>
#include <rrr/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

struct rrr_svc;
struct rrr_svc_req;

/* Handler results besides 0 (see above): negative errnos. */
#define RRR_SVC_GARBAGE_ARGS (-EBADMSG)
#define RRR_SVC_SYSTEM_ERR (-EIO)
#define RRR_SVC_DROP (-EINPROGRESS)

typedef int (*rrr_svc_handler_fn)(struct rrr_svc_req *req, struct rrr_xdr *args,
				  struct rrr_xdr *res);

/*
 * struct rrr_svc_place - where the data of a call's DDP-eligible argument
 * is to land (see rrr_svc_place_fn): @niov pieces of the application's
 * memory that add up to exactly the payload's length, and the callback that
 * says when the library is done with them.
 */
struct rrr_svc_place {
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;
	/* runs exactly once, on the worker thread, when the request ends (the
	 * reply was sent, or the call failed): @status 0 when the handler ran
	 * on the data, else a negative errno (the connection was lost or the
	 * pull failed: the memory may hold part of the data, and the handler
	 * did not run) */
	void (*release)(void *arg, int status);
	void *arg;
};

/*
 * rrr_svc_place_fn - zero-copy arguments: choose the memory that the
 * DDP-eligible argument of a call (a WRITE's data) is pulled into by RDMA
 * READ, instead of the library's request buffer.
 *
 * Called on the worker thread that owns the connection, before any of the
 * data is pulled, for an RPC-over-RDMA call with exactly one read chunk at a
 * position after the RPC header whose length equals the payload's length
 * word. @args decodes the procedure's arguments that precede the payload
 * (up to, not including, its length word); @len is the payload's length.
 * Fill @out (iov pieces of any alignment, adding up to exactly @len, and a
 * release callback) and return 0: the library registers the pieces for this
 * I/O only (remote write rights only where the device places READ
 * responses like tagged writes), pulls the data straight into them,
 * invalidates the registration before the handler runs, and
 * rrr_xdr_decode_payload() in the handler then describes that memory. Any
 * negative errno instead (an offset out of range, a region that is busy):
 * the data is pulled into the library's buffer as without a place
 * function, and the handler sees it there; @out's release does not run.
 *
 * Not called over TCP (the data arrives inside the record), for inline
 * calls, for RDMA_NOMSG calls or calls with several read chunks: handlers
 * must take the payload wherever rrr_xdr_decode_payload() says it is.
 * The client writes into the memory before the handler runs: give only
 * memory whose contents may change before the handler has seen the call
 * (as an O_DIRECT write into a block device; validate offsets here). Must
 * not block and must not call rrr_svc_req_alloc() (the request has not
 * started); rrr_svc_req_call(), _program_ctx() and _peer() work.
 * Set with rrr_svc_set_place().
 */
typedef int (*rrr_svc_place_fn)(struct rrr_svc_req *req, struct rrr_xdr *args, uint32_t len,
				struct rrr_svc_place *out);

struct rrr_svc_proc {
	const char *name;          /* for logs and counters */
	rrr_svc_handler_fn fn;     /* NULL: PROC_UNAVAIL */
};

struct rrr_svc_program {
	uint32_t prog;
	uint32_t vers;
	const struct rrr_svc_proc *procs;
	uint32_t nprocs;
	void *ctx;                 /* rrr_svc_req_program_ctx() */
};

struct rrr_svc_opts {
	unsigned nthreads;         /* 0: number of online CPUs */
	const char *provider;      /* "soft" (default) or "verbs" */
	const char *provider_opts;
	uint32_t max_requests;     /* credits granted per RDMA connection, and
				    * calls one TCP connection may have in
				    * progress; default 32 */
	uint32_t inline_send;      /* default RRR_RDMA_INLINE_PREF (8192) */
	uint32_t inline_recv;      /* default RRR_RDMA_INLINE_PREF (8192) */
	uint32_t max_segs;         /* segments accepted per chunk, default 64 */
	uint32_t max_payload;      /* max bytes per DDP payload, default 1 MiB;
				    * a call or reply record is bounded by
				    * max_payload + 64 KiB (TCP records, rebuilt
				    * RDMA calls, reply chunks) */
	bool no_remote_inv;        /* never use Send With Invalidate */
	enum rrr_wait_mode wait_mode; /* how workers wait (rrr/wait.h), default
				       * RRR_WAIT_ADAPTIVE */
	uint32_t spin_us;          /* their spin budget, 0 = RRR_WAIT_SPIN_US_DEFAULT */
	/* Limits against stalled, idle and greedy peers (rrr_svc_limit_stats(),
	 * docs/fileserver.md "Limits"). 0 = the default; RRR_SVC_UNLIMITED
	 * turns a limit off. */
	uint32_t setup_timeout_ms; /* RDMA connection set-up (soft: MPA Request,
				    * RTR) must finish within this, default 10000 */
	uint32_t max_setup;        /* RDMA connections in set-up at once per
				    * listener (the oldest is pushed out), default 256 */
	uint32_t idle_timeout_ms;  /* close a connection with no traffic for this
				    * long, default 360000 (6 min, like nfsd) */
	uint32_t max_conns;        /* connections (RDMA + TCP) at once, default
				    * from the host: the least of
				    * (RLIMIT_NOFILE - 128 - max_setup) / 3, half the
				    * memory / 256 KiB, (2^24 - 1) /
				    * ((max_requests + 4) * 4 + 4) (the soft device's
				    * STag space), at least 16; see
				    * rrr_svc_limits_describe() */
	uint32_t max_conns_per_addr; /* ... from one peer IP address, default 128 */
	/*
	 * Admission by address (NULL: every address). Called on the accept
	 * thread with a new connection's peer address before anything is held
	 * for it: right after accept() for TCP and for the soft provider's
	 * RDMA listener (before its MPA Request is even read), at the
	 * connection request for verbs (rejected there). False closes the
	 * connection at once; it is counted in refused_addr, logged
	 * (rate-limited), and never counts against max_conns,
	 * max_conns_per_addr or max_setup. Must not block; must be safe against
	 * the application changing what it admits meanwhile (rrr-server: an
	 * address that no export's allow list names is refused).
	 */
	bool (*admit)(void *ctx, const struct sockaddr_storage *peer);
	void *admit_ctx;
};

#define RRR_SVC_UNLIMITED 0xffffffffu

/* Fill @opts with the defaults documented in struct rrr_svc_opts. Call it
 * before setting fields. Cannot fail; does not block. */
void rrr_svc_opts_init(struct rrr_svc_opts *opts);
/* Create a server with @opts (NULL: the defaults; copied) into *@out,
 * owned by the caller (rrr_svc_destroy()): its worker threads' event loops
 * are set up but serve nothing until rrr_svc_run(). Errors: -EINVAL (NULL
 * @out, an option out of its range: a sentence in rrr_last_error()),
 * -ENOMEM, -EMFILE/-ENFILE (no descriptors for the event loops).
 * Thread-safe; does not block. */
int rrr_svc_create(const struct rrr_svc_opts *opts, struct rrr_svc **out);
/* Programs must be registered before rrr_svc_run(). */
int rrr_svc_register(struct rrr_svc *svc, const struct rrr_svc_program *prog);
/*
 * rrr_svc_set_place - give procedure @proc of the registered program
 * @prog/@vers a place function (rrr_svc_place_fn: its WRITE-like calls'
 * data is pulled into the application's memory); NULL removes it. Call
 * after rrr_svc_register() and before rrr_svc_run(). Errors: -EINVAL (no
 * such program or procedure, or the server runs: a sentence in
 * rrr_last_error()), -ENOMEM. Not thread-safe against rrr_svc_run(); never
 * blocks.
 */
int rrr_svc_set_place(struct rrr_svc *svc, uint32_t prog, uint32_t vers, uint32_t proc,
		      rrr_svc_place_fn place);
/* Listen for RPC-over-RDMA on @host:@port (NULL host = any); the bound port
 * is returned in *bound_port when non-NULL (useful with port "0"). */
int rrr_svc_listen_rdma(struct rrr_svc *svc, const char *host, const char *port,
			uint16_t *bound_port);
/* Listen for ONC RPC over TCP (record marking) on @host:@port. */
int rrr_svc_listen_tcp(struct rrr_svc *svc, const char *host, const char *port,
		       uint16_t *bound_port);
/* Run until rrr_svc_stop(): the calling thread accepts connections, the
 * worker threads serve them. Returns 0, or -errno if the workers could not
 * start; -EBUSY if already running. Listeners are closed when it returns
 * (add new ones to run again). MAY BLOCK (that is its job). */
int rrr_svc_run(struct rrr_svc *svc);
/* Ask rrr_svc_run() to return after in-flight requests finish and every
 * connection is closed (connections still busy after 2 s are closed
 * anyway). May be called before rrr_svc_run() (it then returns at once).
 * Async-signal-safe. */
void rrr_svc_stop(struct rrr_svc *svc);
void rrr_svc_destroy(struct rrr_svc *svc);
/* Sum of the counters of all connections (live and closed); gauges
 * (credits, inline sizes) are the largest seen. On a server, bad_replies
 * counts malformed messages received and rdma_errors_sent the RDMA_ERROR
 * answers. Thread-safe, any time. */
void rrr_svc_stats(struct rrr_svc *svc, struct rrr_xprt_stats *st);

struct rrr_svc_limit_stats {
	uint64_t refused_max_conns; /* connections refused: max_conns reached */
	uint64_t refused_per_addr;  /* ... max_conns_per_addr reached */
	uint64_t refused_addr;	    /* refused at once: opts.admit said no to the address */
	uint64_t idle_closed;	    /* closed after idle_timeout_ms without traffic */
	uint64_t setup_timeouts;    /* closed: set-up not finished in setup_timeout_ms */
	uint64_t setup_evicted;	    /* closed in set-up: pushed out by newer ones (max_setup) */
	uint64_t accept_shed;	    /* accepted and closed at once: out of file descriptors */
	uint64_t refused_setup[RRR_CM_REFUSED_NREASONS]; /* refused in RDMA set-up, by reason
							   * (enum rrr_cm_refusal; soft provider) */
	uint32_t conns;		    /* connections now */
	uint32_t max_conns, max_conns_per_addr; /* the limits in force */
};
/* The limits' counters (listeners closed by rrr_svc_run() included).
 * Thread-safe, any time. */
void rrr_svc_limit_stats(struct rrr_svc *svc, struct rrr_svc_limit_stats *st);
/* Print them as "  PREFIXname value" lines (refused_setup as
 * "PREFIXrefused_setup.REASON value", REASON from rrr_cm_refusal_name()). */
void rrr_svc_limit_stats_print(FILE *f, const char *prefix, const struct rrr_svc_limit_stats *st);
/* One line for the operator's log at start: the connection limits in force
 * and, when max_conns was left to its default, which of the host's limits
 * it came from (the fd limit, memory, registrations) with the figures of
 * each. Written into @buf (@len bytes, NUL-terminated, cut to fit).
 * Returns the length the whole line needs (as snprintf), or -EINVAL.
 * Thread-safe, any time after rrr_svc_create(); never blocks. */
int rrr_svc_limits_describe(struct rrr_svc *svc, char *buf, size_t len);

/* --- inside a handler ------------------------------------------------------ */
/* The decoded call header of @req (xid, program, version, procedure,
 * credentials), valid while the handler runs; NULL for a NULL @req. */
const struct rrr_rpc_call *rrr_svc_req_call(const struct rrr_svc_req *req);
/* The ctx of the program (struct rrr_svc_program) the call is for; NULL
 * for a NULL @req. Never blocks. */
void *rrr_svc_req_program_ctx(const struct rrr_svc_req *req);
/* Peer address of the connection. */
int rrr_svc_req_peer(const struct rrr_svc_req *req, struct sockaddr_storage *ss);
/* "rdma" or "tcp". */
const char *rrr_svc_req_transport(const struct rrr_svc_req *req);
/* Memory that lives until the request's reply has been sent; 64-byte
 * aligned; NULL on failure. Use it for result payloads. */
void *rrr_svc_req_alloc(struct rrr_svc_req *req, size_t len);
/* Upper bound of a result payload the client can take for this request:
 * on RDMA the first write chunk's size, else the reply chunk's size, else
 * what fits inline (inline size - 1 KiB); on TCP the configured max. */
uint32_t rrr_svc_req_max_payload(const struct rrr_svc_req *req);
/*
 * rrr_svc_req_encode_payload_zc - encode a DDP-eligible result payload
 * from the application's own memory without copying it: like
 * rrr_xdr_encode_payload(@res, @iov, @niov, @len), but on RDMA, when the
 * payload goes by the client's write chunk, @iov is registered for this
 * request only (local access, as the source of the RDMA WRITE; the client
 * gets no handle to it), written from in place, and the registration is
 * invalidated after the reply is sent. Otherwise (TCP, inline, no write
 * chunk) the bytes are copied at once. Either way @release(@arg) runs
 * exactly once, on the worker thread, when the library no longer uses the
 * memory (the reply was sent and its registration invalidated, or the
 * request failed and it was recovered); until then the memory must stay
 * valid and should not change (the client receives what it holds when the
 * WRITE reads it). One per reply. Errors: -EINVAL (with a sentence: no
 * release callback, more than RRR_XDR_PAYLOAD_MAX_IOV pieces, a second
 * one), those of rrr_xdr_encode_payload(); then @release does not run.
 * Never blocks (the registration is a work request posted with the reply).
 */
int rrr_svc_req_encode_payload_zc(struct rrr_svc_req *req, struct rrr_xdr *res,
				  const struct iovec *iov, unsigned niov, uint32_t len,
				  void (*release)(void *arg), void *arg);
/*
 * rrr_svc_req_after_reply - from a handler: have @fn(@arg, replied) run once
 * on the worker right after this request's reply was handed to the
 * transport (replied = true), or, when the request ends without a reply (a
 * dropped call, a connection that closed first), when it ends (false).
 * Either way the argument stream the handler was given (inline bytes and
 * data pulled from read chunks) is still valid there, and the client may
 * already have the reply: work that needs the arguments but not for the
 * reply (a checksum kept for later, accounting) goes there, off the
 * reply's latency. One per request: -EINVAL (with a sentence) for a second
 * one or a NULL @fn. Never blocks.
 */
int rrr_svc_req_after_reply(struct rrr_svc_req *req, void (*fn)(void *arg, bool replied),
			    void *arg);
/* The server's boot verifier: 64 bits drawn when the process created its
 * first server, the same for all its servers, never 0, and different in
 * the next process. Carry it in your protocol's replies (as NFS does its
 * write verifier) so a client can tell a restarted server, whose volatile
 * state is gone, from a reconnect to the same one. @svc may be NULL.
 * Thread-safe; never blocks. */
uint64_t rrr_svc_boot_verifier(const struct rrr_svc *svc);
/* The same, from a handler. */
uint64_t rrr_svc_req_boot_verifier(const struct rrr_svc_req *req);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_SERVER_H */
