/* SPDX-License-Identifier: MIT */
/*
 * rrr/client.h - ONC RPC client over RPC-over-RDMA v1 (or plain TCP).
 *
 * A struct rrr_clnt is one connection to one server. Calls carry their own
 * program/version/procedure, XDR encode/decode callbacks and, optionally, a
 * DDP payload: a scatterlist that is the SOURCE of bulk data sent to the
 * server (e.g. NFS WRITE: read chunk) or the SINK of bulk data the server
 * returns (e.g. NFS READ: write chunk). On RDMA the payload is registered
 * right before the call and invalidated before the call completes: the
 * caller never sees a completed call whose memory is still exposed.
 *
 * Threads: a client handle is safe to use from several threads at once.
 * Completion callbacks run on the client's internal progress thread (the
 * default); they must not block for long and may submit new calls. Your
 * loop or ours: with opts.app_completions the progress thread still does
 * all the wire work, but callbacks run on the application's thread inside
 * rrr_clnt_run_completions(), called when rrr_clnt_fd() (for poll/epoll)
 * is readable (examples/blkstore shows both styles).
 *
 * Lifetimes: the struct rrr_call, its args, res and payload buffers belong
 * to the caller and must stay valid until the call completes (callback ran,
 * or the sync call returned). If rrr_clnt_call_async() fails, the callback
 * is never called and the call was not sent.
 *
 * Errors (call status): 0; -ETIMEDOUT timeout; -ECANCELED cancelled;
 * -ECONNRESET connection lost while the call was outstanding and
 * -ENOTCONN no connection to send it on (both only with opts.fail_fast);
 * -EBADMSG undecodable reply;
 * -EPROTO RPC-level error (see call->rpc_stat); -EREMOTEIO RDMA_ERROR reply;
 * -EMSGSIZE the call cannot be conveyed with the negotiated sizes or within
 * max_segs registrations per chunk (found before it is sent).
 * Every failed call carries a sentence in call->error (what failed, what
 * to do), also in rrr_last_error() of the thread running its callback and
 * of the thread that waited in rrr_clnt_call().
 *
 * Failure semantics (docs/client.md, "Failures"):
 *   default (fail_fast false): a lost connection fails no call. Every call
 *     outstanding or issued while the server is unreachable waits and is
 *     re-sent (same xid) after each reconnect until its own deadline
 *     (-ETIMEDOUT), like a hard NFS mount.
 *   fail_fast: while the server is unreachable every call fails at once:
 *     calls in flight when the connection is lost with -ECONNRESET (those
 *     marked idempotent are re-sent once first), calls issued while there
 *     is no connection with -ENOTCONN after one connect attempt (at most one
 *     attempt per 100 ms; a call in between fails without one).
 */
#ifndef RRR_CLIENT_H
#define RRR_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/stats.h>
#include <rrr/wait.h>
#include <rrr/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

struct rrr_clnt;
struct rrr_clnt_group;

/* Connection events (struct rrr_clnt_opts.conn_cb). */
enum rrr_clnt_conn_event_type {
	RRR_CLNT_CONNECTED = 1,	  /* the first connection (generation 1), right
				   * after rrr_clnt_create() */
	RRR_CLNT_LOST = 2,	  /* the connection of @generation is gone */
	RRR_CLNT_RECONNECTED = 3, /* a new connection, @generation one more
				   * than the last: the server may be a new
				   * instance (compare its boot verifier, see
				   * rrr_svc_boot_verifier() in rrr/server.h) */
};

struct rrr_clnt_conn_event {
	enum rrr_clnt_conn_event_type type;
	uint64_t generation; /* counts connections: 1, 2, ... */
	int reason;	     /* LOST: why, a negative errno (-ECONNRESET: the
			      * peer or the transport broke it) */
};

/* Runs once per event, in order, where completions run (the progress
 * thread, or the application's thread with app_completions), never with a
 * library lock held; it may submit calls (rrr_clnt_call_async). */
typedef void (*rrr_clnt_conn_fn)(struct rrr_clnt *clnt, const struct rrr_clnt_conn_event *ev,
				 void *arg);

struct rrr_clnt_opts {
	const char *transport;	   /* "rdma" (default) or "tcp" */
	const char *provider;	   /* "soft" (default) or "verbs" */
	const char *provider_opts; /* see rrr_device_open() */
	const char *host;	   /* server address (required) */
	const char *port;	   /* default "20049" */
	uint32_t max_requests;	   /* local credit ceiling, default 32 */
	uint32_t inline_send;	   /* default RRR_RDMA_INLINE_PREF (8192; RFC 8797 max 256 KiB) */
	uint32_t inline_recv;	   /* default RRR_RDMA_INLINE_PREF (8192) */
	uint32_t max_segs;	   /* registrations (RFC 8166 segments) per chunk,
				    * 1 .. 64, 0 = default 16; more: -EINVAL at
				    * create. Never exceeded: a call whose
				    * payload needs more (holes, page-list depth:
				    * docs/registration.md) fails with -EMSGSIZE
				    * before it is sent. Keep it at most what the
				    * server accepts (rrr-server: 64) */
	int timeout_ms;		   /* default call timeout, default 30000 */
	int connect_timeout_ms;	   /* default 10000 */
	bool no_remote_inv;	   /* do not offer Send With Invalidate */
	bool persistent_reg;	   /* UNSAFE, benchmarks only: one long-lived
				    * registration, never invalidated */
	bool bounce;		   /* benchmarks: copy through pre-registered buffers */
	enum rrr_wait_mode wait_mode; /* how the progress thread waits (rrr/wait.h):
				       * default RRR_WAIT_ADAPTIVE */
	uint32_t spin_us;	   /* its spin budget, 0 = RRR_WAIT_SPIN_US_DEFAULT */
	bool fail_fast;		   /* while the server is unreachable every call
				    * fails at once: in flight -ECONNRESET (an
				    * idempotent one is re-sent once first), new
				    * ones -ENOTCONN; default false: every call is
				    * re-sent (same xid) after each reconnect until
				    * its deadline, like a hard NFS mount */
	rrr_clnt_conn_fn conn_cb;  /* connection events, or NULL */
	void *conn_arg;		   /* its last argument */
	bool app_completions;	   /* run completion callbacks (and conn_cb) on
				    * the application's thread: when
				    * rrr_clnt_fd() is readable, call
				    * rrr_clnt_run_completions(); default false:
				    * they run on the client's progress thread */
	struct rrr_clnt_group *group; /* run this client's progress on one of
				    * the group's threads (rrr_clnt_group_create)
				    * instead of a thread of its own; the group's
				    * wait mode applies. NULL (default): its own */
};

/* Fill defaults. */
void rrr_clnt_opts_init(struct rrr_clnt_opts *opts);

enum rrr_ddp_dir {
	RRR_DDP_NONE = 0,
	RRR_DDP_TO_SERVER,   /* payload is a source (read chunk / inline) */
	RRR_DDP_FROM_SERVER, /* payload is a sink (write chunk / inline copy) */
};

/* Size of struct rrr_call.error, the terminating NUL included. */
#define RRR_CALL_ERROR_LEN 192

typedef int (*rrr_xdr_encode_fn)(struct rrr_xdr *xdr, const void *args);
typedef int (*rrr_xdr_decode_fn)(struct rrr_xdr *xdr, void *res);

struct rrr_call {
	uint32_t prog, vers, proc;
	const struct rrr_rpc_cred *cred; /* NULL: AUTH_NONE */
	rrr_xdr_encode_fn encode;	 /* encodes the payload (TO_SERVER) with
					  * rrr_xdr_encode_payload(xdr, NULL, 0, 0):
					  * the library takes it from .payload */
	const void *args;
	rrr_xdr_decode_fn decode; /* uses rrr_xdr_decode_payload() for the payload */
	void *res;
	enum rrr_ddp_dir ddp;
	/* source (TO_SERVER) or sink (FROM_SERVER): the one declaration of
	 * the payload. An encoder that encodes other memory as the payload
	 * of a TO_SERVER call, or none, is refused with -EINVAL; payload
	 * NULL: the encoder's payload is used (the old way) */
	const struct iovec *payload;
	unsigned npayload;
	uint32_t reply_hint; /* expected max reply size w/o payload; 0 = small.
			      * RDMA: a hint above the inline receive size
			      * gets a reply chunk (else the server can only
			      * answer RDMA_ERROR); a FROM_SERVER sink gets a
			      * write chunk unless the hint says the whole
			      * reply fits inline */
	int timeout_ms;	     /* 0: the client's default; < 0: none */
	bool idempotent;     /* fail_fast clients: may be retried once on a new
			      * connection (others re-send every call) */
	/* results, set when the call completes */
	uint32_t rpc_stat;    /* accept_stat, or RRR_RPC_STAT_DENIED |
			       * reject_stat << 8 | auth_stat, when -EPROTO */
	uint32_t payload_len; /* bytes of payload received (FROM_SERVER) */
	/* when the call failed (status or submit error not 0): a sentence that
	 * says what failed and what to do, "" otherwise. Set before the
	 * callback runs (or rrr_clnt_call() returns); the call's own copy, so
	 * it stays valid as long as the struct (unlike rrr_last_error(), which
	 * is per thread and overwritten by the next failure) */
	char error[RRR_CALL_ERROR_LEN];
	/* private to the library */
	void *priv;
};

/* call->rpc_stat of a denied (MSG_DENIED) reply. */
#define RRR_RPC_STAT_DENIED 0x80000000u

typedef void (*rrr_call_done_fn)(struct rrr_call *call, int status, void *arg);

/*
 * rrr_clnt_group_create - start @nthreads progress threads (0: one per
 * online CPU, at most 64) for clients created with opts.group set to
 * *@out, which then share them instead of starting a thread each: for a
 * program holding many connections (hundreds of clients on a few cores),
 * where a thread per connection costs a context switch per call and
 * memory. Each client is run by one thread, the one with the fewest
 * clients when it is created; its callbacks run there, so a callback that
 * blocks holds up every client of that thread, and a synchronous call
 * (rrr_clnt_call) from a callback on any client of the same thread fails
 * with -EDEADLK. @mode: how the threads wait (rrr/wait.h; RRR_WAIT_EVENT
 * suits many mostly idle connections). MAY BLOCK (starts threads).
 * Returns 0, -EINVAL, -ENOMEM, -EAGAIN (threads), -EMFILE, with a sentence
 * in rrr_last_error().
 */
int rrr_clnt_group_create(unsigned nthreads, enum rrr_wait_mode mode,
			  struct rrr_clnt_group **out);

/*
 * rrr_clnt_group_destroy - stop the group's threads and free it. Every
 * client created with it must be destroyed first: -EBUSY otherwise, and
 * nothing stops. NULL: 0. MAY BLOCK (joins the threads); not from a
 * callback of one of its clients (-EDEADLK).
 */
int rrr_clnt_group_destroy(struct rrr_clnt_group *g);

/*
 * rrr_clnt_create - connect to opts->host:opts->port and start the client's
 * progress thread. MAY BLOCK up to connect_timeout_ms. Errors carry a
 * message in rrr_last_error(): -EINVAL (no host, unknown transport),
 * -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT, -ENODEV/-ENOENT (provider) ...
 * Later connection losses are handled inside (reconnect with backoff).
 */
int rrr_clnt_create(const struct rrr_clnt_opts *opts, struct rrr_clnt **out);
/* Fails outstanding calls with -ECANCELED (after invalidating or recovering
 * their MRs; their callbacks run before this returns), disconnects and
 * frees. Must not be called from a completion callback of @clnt itself,
 * nor, without a group, from one of another client; a client of a group
 * may be destroyed from a callback of another client of the same group
 * (it is let go there and then). MAY BLOCK. */
void rrr_clnt_destroy(struct rrr_clnt *clnt);
/*
 * rrr_clnt_call_async - encode @call (in the calling thread) and queue it.
 * Never blocks for credits or for the connection (queues instead).
 * @done runs once, on the progress thread, with the call status (see the
 * top of this file); it may submit new calls. Returns 0, or -EINVAL (bad
 * arguments, npayload > RRR_XDR_PAYLOAD_MAX_IOV), -ESHUTDOWN (client being
 * destroyed), -ENOMEM, or the encode callback's error: then @done never
 * runs. -EINVAL also when the encoder's payload is not call->payload
 * (see struct rrr_call). Every error has its sentence in call->error and
 * rrr_last_error(). call->timeout_ms < 0 means no timeout (on a connection
 * problem such a call is re-sent until it is answered or cancelled).
 * Re-sent calls (after a reconnect) keep their xid.
 */
int rrr_clnt_call_async(struct rrr_clnt *clnt, struct rrr_call *call, rrr_call_done_fn done,
			void *arg);
/* Synchronous wrapper: returns the call status (or a submit error), its
 * sentence in call->error and this thread's rrr_last_error().
 * -EDEADLK when called from a completion callback. MAY BLOCK. */
int rrr_clnt_call(struct rrr_clnt *clnt, struct rrr_call *call);
/* Cancel: returns once the call's MRs are invalid AND its callback has
 * returned (with -ECANCELED unless it had already completed otherwise), so
 * the caller may free the call afterwards. -ENOENT if the call is not
 * outstanding; -EDEADLK from a completion callback. MAY BLOCK. */
int rrr_clnt_cancel(struct rrr_clnt *clnt, struct rrr_call *call);
/* Snapshot of the connection counters (registration engine included).
 * Thread-safe. */
void rrr_clnt_stats(struct rrr_clnt *clnt, struct rrr_xprt_stats *st);
/*
 * rrr_clnt_fd - with opts.app_completions: an fd (eventfd) that is readable
 * while completions or connection events are ready to run; put it in
 * poll/epoll (EPOLLIN, level- or edge-triggered) and call
 * rrr_clnt_run_completions() when it is. Owned by the client (do not
 * close or read it). -EINVAL, with a sentence, without app_completions.
 * Thread-safe; never blocks.
 */
int rrr_clnt_fd(const struct rrr_clnt *clnt);
/*
 * rrr_clnt_run_completions - with opts.app_completions: run up to @max (0:
 * all) ready connection events and completion callbacks on the calling
 * thread, in the order they finished; returns how many ran (0 when none
 * was ready), or -EINVAL (with a sentence: no client, no
 * app_completions). Callbacks may submit calls; a callback that calls
 * rrr_clnt_run_completions() again is refused with -EDEADLK. Never blocks
 * beyond the callbacks themselves. Synchronous calls (rrr_clnt_call) do not
 * need it: their completion is delivered inside the library. While
 * rrr_clnt_cancel() and rrr_clnt_destroy() wait, they run ready
 * completions on their own thread.
 */
int rrr_clnt_run_completions(struct rrr_clnt *clnt, unsigned max);
/* The generation of the current (or last) connection: 1 after
 * rrr_clnt_create(), one more after every reconnect. Thread-safe. */
uint64_t rrr_clnt_generation(const struct rrr_clnt *clnt);
/* Largest DDP payload one call should carry (RDMA: what max_segs
 * registrations can map, capped at 1 MiB; TCP: 1 MiB). */
uint32_t rrr_clnt_max_payload(const struct rrr_clnt *clnt);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_CLIENT_H */
