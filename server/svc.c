/* SPDX-License-Identifier: MIT */
/*
 * server/svc.c - the transport-independent core of the ONC RPC server:
 * program registration, call-header decode and dispatch, the worker thread
 * model, per-request arenas, shutdown and counters.
 *
 * Normal operation. rrr_svc_create() sizes a pool of worker threads (one
 * per online CPU by default). Programs are registered, listeners added
 * (TCP sockets; RDMA listeners on a provider CM), then rrr_svc_run() starts
 * the workers and becomes the accept thread: it waits in epoll on the
 * listeners, the RDMA CM fd and a stop eventfd. A new connection is handed
 * round-robin to a worker through that worker's inbox (mutex + eventfd).
 * Each worker runs its own epoll loop over the connections it owns and
 * runs handlers to completion on its thread, so two cores serve two
 * connections at once and a connection's state is never shared. A slow
 * handler of a connection (RDMA or TCP) may run on an idle worker instead
 * (rrr__svc_offload, svc_offload.c); it touches only its request, and the
 * owner sends the reply.
 *
 * A transport hands a complete RPC message to rrr__svc_dispatch(), which
 * decodes the call header and answers by the book (RFC 5531): RPC_MISMATCH
 * for rpcvers != 2, AUTH_ERROR for credentials other than AUTH_NONE and
 * AUTH_SYS (or a verifier other than AUTH_NONE), PROG_UNAVAIL,
 * PROG_MISMATCH with the lowest and highest registered versions,
 * PROC_UNAVAIL, then the handler; a handler's GARBAGE_ARGS / SYSTEM_ERR /
 * DROP (or any negative errno, which becomes SYSTEM_ERR) replaces whatever
 * results it had encoded. Messages that are not CALLs, or whose header is
 * truncated, are dropped and counted.
 *
 * Call direction. The core is at the bottom and calls nothing of a
 * transport by name: it knows a listener only through its ops table
 * (struct rrr__svc_listener_ops: listen, ready, stop, limit_stats,
 * destroy; the accept thread's epoll data points at the listener) and a
 * connection only through its own (struct rrr__svc_conn_ops: on_event,
 * on_msg, shutdown, destroy; a worker's epoll data points at the
 * connection). The transports (svc_tcp.c, svc_rdma_*.c) call down into the
 * core API of server/svc_impl.h (adopt, dispatch, request end, epoll
 * interest, close, limits) and count through the counters their
 * connection points to (c->st); svc_rdma_rw.c sits below the other
 * svc_rdma_*.c and calls none of them. So one RDMA call is driven from one
 * place: worker (here) -> ops->on_event (svc_rdma_transport.c) ->
 * svc_rdma_recvfrom.c (validate; svc_rdma_rw.c plans the READs),
 * rrr__svc_dispatch() (here), svc_rdma_sendto.c (svc_rdma_rw.c: WRITE
 * chunks); at the Send completion rrr__svc_req_end() (here): every call
 * pointing down and returning; none goes back up a layer.
 *
 * Memory a handler needs until its reply is sent comes from the request
 * arena (rrr_svc_req_alloc): 64-byte aligned pieces of blocks that
 * rrr__svc_req_end() gives back when the transport is done with the reply,
 * to a bounded per-worker cache that the next requests draw from (see
 * "Arena blocks" below), so the steady state allocates nothing.
 *
 * Shutdown and recovery. rrr_svc_stop() only writes the stop eventfd, so
 * it is async-signal-safe. The accept thread then closes the listeners and
 * tells every worker to stop; each worker asks its connections to shut
 * down (no new requests, in-flight replies finish), gives them two seconds,
 * then closes whatever is left. rrr_svc_run() returns when every worker has
 * exited. Workers run with SIGPIPE blocked, so a peer that vanishes while
 * a provider writes to its socket costs that connection, not the process. Counters live per worker
 * (relaxed atomics), so rrr_svc_stats() can sum them from any thread at any time, closed
 * connections included.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rrr/rpcrdma.h>

#include "common/probes.h"
#include "server/svc_impl.h"
#include "transport/wait.h"
#include "common/rrr_impl.h"

#define SVC_MAX_PROGRAMS  32
#define SVC_MAX_LISTENERS 8
#define SVC_MAX_THREADS	  64
#define SVC_STOP_GRACE_MS 2000


struct inbox_item {
	struct inbox_item *next;
	struct rrr__svc_conn *conn;
	bool adopt;
	/* a handler handed to this worker (rrr__svc_offload): run @run, then
	 * the same item goes back to the owner's inbox, which runs @done */
	void (*run)(void *arg);
	void (*done)(void *arg);
	void *arg;
	size_t len;
	_Alignas(8) unsigned char msg[];
};

struct rrr__svc_worker {
	struct rrr_svc *svc;
	unsigned idx;
	pthread_t thread;
	bool started;
	int epfd;
	int wakefd;
	struct rrr__waiter waiter; /* how this worker waits */
	pthread_mutex_t lock; /* inbox */
	struct inbox_item *inbox_head, *inbox_tail;
	struct rrr__svc_conn *conns;   /* owned connections */
	struct rrr__svc_conn *closing; /* to reap at the end of an iteration */
	unsigned nconns;
	struct rrr_xprt_stats st;	   /* atomics; cumulative */
	atomic_bool idle;     /* waiting with nothing of its own to do */
	atomic_uint handed;   /* handlers handed to it, not yet run (0 or 1) */
};

struct rrr_svc {
	struct rrr_svc_opts opts;
	struct rrr_svc_program progs[SVC_MAX_PROGRAMS];
	rrr_svc_place_fn *places[SVC_MAX_PROGRAMS]; /* NULL or nprocs entries */
	unsigned nprogs;
	/* listeners (accept thread), SVC_MAX_LISTENERS per transport */
	struct rrr__svc_listener *lis[2 * SVC_MAX_LISTENERS];
	unsigned nlis;
	struct rrr__svc_worker *workers;
	unsigned nworkers;
	atomic_uint rr; /* round-robin cursor */
	int stopfd;	/* eventfd: rrr_svc_stop() */
	int donefd;	/* eventfd: a worker exited */
	atomic_bool stopping;
	atomic_bool running;
	struct rrr__svc_limits limits; /* svc_admit.c */
};

struct rrr__svc_limits *rrr__svc_limits(struct rrr_svc *svc)
{
	return &svc->limits;
}

/* ------------------------------------------------------------------ options */

void rrr_svc_opts_init(struct rrr_svc_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->nthreads = 0;
	opts->provider = "soft";
	opts->provider_opts = NULL;
	opts->max_requests = 32;
	opts->inline_send = RRR_RDMA_INLINE_PREF;
	opts->inline_recv = RRR_RDMA_INLINE_PREF;
	opts->max_segs = 64;
	opts->max_payload = 1024u * 1024u;
	opts->no_remote_inv = false;
}

static int opts_check(struct rrr_svc_opts *o, char *why, size_t len)
{
	if (o->max_requests == 0)
		o->max_requests = 32;
	if (o->inline_send == 0)
		o->inline_send = RRR_RDMA_INLINE_PREF;
	if (o->inline_recv == 0)
		o->inline_recv = RRR_RDMA_INLINE_PREF;
	if (o->max_segs == 0)
		o->max_segs = 64;
	if (o->max_payload == 0)
		o->max_payload = 1024u * 1024u;
	if (!o->provider)
		o->provider = "soft";
	if (o->max_requests > 1024)
		return rrr__set_error(-EINVAL, "max_requests %u is over 1024", o->max_requests);
	if (o->inline_send < 1024 || o->inline_send > 256u * 1024u || o->inline_recv < 1024 ||
	    o->inline_recv > 256u * 1024u)
		return rrr__set_error(-EINVAL, "inline sizes must be within 1 KiB..256 KiB");
	if (o->max_segs > 64)
		o->max_segs = 64;
	if (o->wait_mode > RRR_WAIT_SPIN || o->spin_us > RRR_WAIT_SPIN_US_MAX)
		return rrr__set_error(-EINVAL, "wait mode %d / spin_us %u out of range (spin_us <= %u)",
				      (int)o->wait_mode, o->spin_us, RRR_WAIT_SPIN_US_MAX);
	if (o->max_payload > 64u * 1024u * 1024u)
		return rrr__set_error(-EINVAL, "max_payload %u is over 64 MiB", o->max_payload);
	if (o->nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o->nthreads = n > 0 ? (unsigned)n : 1;
	}
	if (o->nthreads > SVC_MAX_THREADS)
		o->nthreads = SVC_MAX_THREADS;
	rrr__svc_limits_defaults(o, why, len);
	return 0;
}

const struct rrr_svc_opts *rrr__svc_opts(const struct rrr_svc *svc)
{
	return &svc->opts;
}

bool rrr__svc_stopping(const struct rrr_svc *svc)
{
	return atomic_load(&((struct rrr_svc *)svc)->stopping);
}

/* ------------------------------------------------------------------ create */

/* What reached a worker after it exited (a handler that finished on
 * another worker after its owner gave up at shutdown): the reference goes,
 * and the connection's destroy frees the request. Every worker has exited;
 * the listeners still exist (a connection's destroy may use its own). */
static void inbox_leftovers(struct rrr__svc_worker *w)
{
	struct inbox_item *it;

	while ((it = w->inbox_head)) {
		w->inbox_head = it->next;
		if (it->conn && !it->adopt)
			rrr__svc_conn_put(it->conn);
		free(it);
	}
	w->inbox_tail = NULL;
}

static void worker_fini(struct rrr__svc_worker *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->wakefd >= 0)
		close(w->wakefd);
	pthread_mutex_destroy(&w->lock);
}

static int worker_init(struct rrr_svc *svc, struct rrr__svc_worker *w, unsigned idx)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

	memset(w, 0, sizeof(*w));
	w->svc = svc;
	w->idx = idx;
	w->epfd = -1;
	w->wakefd = -1;
	rrr__waiter_init(&w->waiter, svc->opts.wait_mode, svc->opts.spin_us);
	pthread_mutex_init(&w->lock, NULL);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	w->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->epfd < 0 || w->wakefd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &ev)) {
		int err = -errno;

		worker_fini(w);
		return rrr__set_error(err, "server worker set-up failed: %s", strerror(-err));
	}
	return 0;
}

int rrr_svc_create(const struct rrr_svc_opts *opts, struct rrr_svc **out)
{
	char why[sizeof(((struct rrr__svc_limits *)0)->why)] = "";
	struct rrr_svc *svc;
	unsigned i;
	int rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	if (opts)
		svc->opts = *opts;
	else
		rrr_svc_opts_init(&svc->opts);
	rc = opts_check(&svc->opts, why, sizeof(why));
	if (rc)
		goto err_free;
	rrr__svc_limits_init(&svc->limits, &svc->opts, why);
	svc->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	svc->donefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (svc->stopfd < 0 || svc->donefd < 0) {
		rc = -errno;
		goto err_fds;
	}
	svc->nworkers = svc->opts.nthreads;
	svc->workers = calloc(svc->nworkers, sizeof(*svc->workers));
	if (!svc->workers) {
		rc = -ENOMEM;
		goto err_fds;
	}
	for (i = 0; i < svc->nworkers; i++) {
		rc = worker_init(svc, &svc->workers[i], i);
		if (rc)
			goto err_workers;
	}
	*out = svc;
	return 0;

err_workers:
	while (i--)
		worker_fini(&svc->workers[i]);
	free(svc->workers);
err_fds:
	if (svc->stopfd >= 0)
		close(svc->stopfd);
	if (svc->donefd >= 0)
		close(svc->donefd);
	rrr__svc_limits_fini(&svc->limits);
err_free:
	free(svc);
	return rc;
}

int rrr_svc_register(struct rrr_svc *svc, const struct rrr_svc_program *prog)
{
	unsigned i;

	if (!svc || !prog || (prog->nprocs && !prog->procs))
		return -EINVAL;
	if (atomic_load(&svc->running))
		return rrr__set_error(-EBUSY, "register programs before rrr_svc_run()");
	for (i = 0; i < svc->nprogs; i++)
		if (svc->progs[i].prog == prog->prog && svc->progs[i].vers == prog->vers)
			return rrr__set_error(-EEXIST, "program %u version %u already registered",
					      prog->prog, prog->vers);
	if (svc->nprogs == SVC_MAX_PROGRAMS)
		return rrr__set_error(-ENOSPC, "at most %d program versions", SVC_MAX_PROGRAMS);
	svc->progs[svc->nprogs++] = *prog;
	return 0;
}

int rrr_svc_set_place(struct rrr_svc *svc, uint32_t prog, uint32_t vers, uint32_t proc,
		      rrr_svc_place_fn place)
{
	unsigned i;

	if (!svc)
		return -EINVAL;
	if (atomic_load(&svc->running))
		return rrr__set_error(-EINVAL, "rrr_svc_set_place: set place functions before "
					       "rrr_svc_run()");
	for (i = 0; i < svc->nprogs; i++)
		if (svc->progs[i].prog == prog && svc->progs[i].vers == vers)
			break;
	if (i == svc->nprogs || proc >= svc->progs[i].nprocs)
		return rrr__set_error(-EINVAL, "rrr_svc_set_place: program %u version %u has no "
					       "procedure %u (register the program first)",
				      prog, vers, proc);
	if (!svc->places[i]) {
		svc->places[i] = calloc(svc->progs[i].nprocs, sizeof(*svc->places[i]));
		if (!svc->places[i])
			return -ENOMEM;
	}
	svc->places[i][proc] = place;
	return 0;
}

/* Add a listener of the transport @ops (at most SVC_MAX_LISTENERS each). */
static int listener_add(struct rrr_svc *svc, const struct rrr__svc_listener_ops *ops,
			const char *host, const char *port, uint16_t *bound_port)
{
	struct rrr__svc_listener *l;
	unsigned i, same = 0;
	int rc;

	if (!svc || !port)
		return -EINVAL;
	for (i = 0; i < svc->nlis; i++)
		same += svc->lis[i]->ops == ops;
	if (same == SVC_MAX_LISTENERS)
		return rrr__set_error(-ENOSPC, "at most %d %s listeners", SVC_MAX_LISTENERS,
				      ops->name);
	rc = ops->listen(svc, host, port, bound_port, &l);
	if (rc)
		return rc;
	l->ops = ops;
	l->svc = svc;
	l->stopped = false;
	svc->lis[svc->nlis++] = l;
	return 0;
}

int rrr_svc_listen_tcp(struct rrr_svc *svc, const char *host, const char *port,
		       uint16_t *bound_port)
{
	return listener_add(svc, &rrr__svc_tcp_listener_ops, host, port, bound_port);
}

int rrr_svc_listen_rdma(struct rrr_svc *svc, const char *host, const char *port,
			uint16_t *bound_port)
{
	return listener_add(svc, &rrr__svc_rdma_listener_ops, host, port, bound_port);
}

/* ------------------------------------------------------------------ dispatch */

static uint32_t peek_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Restart @res at its beginning without the DDP hook, for an error reply. */
static void res_reset(struct rrr_xdr *res)
{
	rrr_xdr_init(res, res->buf, res->len, RRR_XDR_ENCODE);
}

static enum rrr__svc_verdict reply_accepted_err(struct rrr_xdr *res, uint32_t xid, uint32_t stat,
						uint32_t low, uint32_t high)
{
	res_reset(res);
	if (rrr_rpc_encode_accepted(res, xid, stat, low, high))
		return RRR__SVC_NO_REPLY;
	return RRR__SVC_REPLY_ERR;
}

static enum rrr__svc_verdict reply_denied(struct rrr_xdr *res, uint32_t xid, uint32_t rstat,
					  uint32_t astat)
{
	res_reset(res);
	if (rrr_rpc_encode_denied(res, xid, rstat, astat))
		return RRR__SVC_NO_REPLY;
	return RRR__SVC_REPLY_ERR;
}

static enum rrr__svc_verdict dispatch(struct rrr_svc_req *req, struct rrr_xdr *args,
				      struct rrr_xdr *res)
{
	struct rrr_svc *svc = req->svc;
	struct rrr_xprt_stats *st = req->conn->st;
	const struct rrr_svc_program *p = NULL;
	const struct rrr_svc_proc *proc;
	uint32_t xid, low = UINT32_MAX, high = 0;
	bool prog_found = false;
	unsigned i;
	int rc;

	req->prog = NULL;
	RRR__STAT_ADD(st, calls, 1);
	if (rrr_xdr_remaining(args) < 12) {
		RRR__STAT_ADD(st, bad_replies, 1);
		return RRR__SVC_NO_REPLY;
	}
	xid = peek_be32(rrr_xdr_cursor(args));
	if (peek_be32(rrr_xdr_cursor(args) + 4) != RRR_RPC_CALL) {
		RRR__STAT_ADD(st, bad_replies, 1);
		return RRR__SVC_NO_REPLY;
	}
	if (peek_be32(rrr_xdr_cursor(args) + 8) != RRR_RPC_VERS)
		return reply_denied(res, xid, RRR_RPC_MISMATCH, 0);
	rc = rrr_rpc_decode_call(args, &req->call);
	if (rc == -EBADMSG) {
		RRR__STAT_ADD(st, bad_replies, 1);
		return RRR__SVC_NO_REPLY;
	}
	RRR_PROBE5(svc_call, req->conn, xid, req->call.prog, req->call.vers, req->call.proc);
	if (rc)
		return reply_denied(res, xid, RRR_RPC_AUTH_ERROR, RRR_AUTH_BADCRED);
	if (req->call.cred.flavor != RRR_AUTH_NONE && req->call.cred.flavor != RRR_AUTH_SYS)
		return reply_denied(res, xid, RRR_RPC_AUTH_ERROR, RRR_AUTH_BADCRED);
	if (req->call.verf_flavor != RRR_AUTH_NONE)
		return reply_denied(res, xid, RRR_RPC_AUTH_ERROR, RRR_AUTH_BADVERF);

	for (i = 0; i < svc->nprogs; i++) {
		if (svc->progs[i].prog != req->call.prog)
			continue;
		prog_found = true;
		if (svc->progs[i].vers < low)
			low = svc->progs[i].vers;
		if (svc->progs[i].vers > high)
			high = svc->progs[i].vers;
		if (svc->progs[i].vers == req->call.vers)
			p = &svc->progs[i];
	}
	if (!prog_found)
		return reply_accepted_err(res, xid, RRR_RPC_PROG_UNAVAIL, 0, 0);
	if (!p)
		return reply_accepted_err(res, xid, RRR_RPC_PROG_MISMATCH, low, high);
	if (req->call.proc >= p->nprocs || !p->procs[req->call.proc].fn)
		return reply_accepted_err(res, xid, RRR_RPC_PROC_UNAVAIL, 0, 0);
	proc = &p->procs[req->call.proc];
	req->prog = p;

	rc = rrr_rpc_encode_accepted(res, xid, RRR_RPC_SUCCESS, 0, 0);
	if (rc)
		return RRR__SVC_NO_REPLY;
	{
		int64_t t0 = rrr__svc_cost_clock();

		rc = proc->fn(req, args, res);
		rrr__svc_cost_note(req->call.prog, req->call.vers, req->call.proc,
				   rrr__svc_cost_clock() - t0);
	}
	if (rc == 0)
		return RRR__SVC_REPLY_OK;
	/* 0 or -errno; 1 and 3 are the positive codes of earlier versions */
	if (rc == RRR_SVC_DROP || rc == 3)
		return RRR__SVC_NO_REPLY;
	if (rc == RRR_SVC_GARBAGE_ARGS || rc == 1)
		return reply_accepted_err(res, xid, RRR_RPC_GARBAGE_ARGS, 0, 0);
	return reply_accepted_err(res, xid, RRR_RPC_SYSTEM_ERR, 0, 0);
}

enum rrr__svc_verdict rrr__svc_dispatch(struct rrr_svc_req *req, struct rrr_xdr *args,
					struct rrr_xdr *res)
{
	enum rrr__svc_verdict v = dispatch(req, args, res);

	if (v != RRR__SVC_NO_REPLY)
		RRR_PROBE4(svc_reply, req->conn, req->call.xid, (int)v, rrr_xdr_pos(res));
	return v;
}

rrr_svc_place_fn rrr__svc_place_lookup(struct rrr_svc_req *req, struct rrr_xdr *args)
{
	struct rrr_svc *svc = req->svc;
	unsigned i;

	if (rrr_xdr_remaining(args) < 12 || peek_be32(rrr_xdr_cursor(args) + 4) != RRR_RPC_CALL ||
	    peek_be32(rrr_xdr_cursor(args) + 8) != RRR_RPC_VERS ||
	    rrr_rpc_decode_call(args, &req->call) ||
	    (req->call.cred.flavor != RRR_AUTH_NONE && req->call.cred.flavor != RRR_AUTH_SYS) ||
	    req->call.verf_flavor != RRR_AUTH_NONE)
		return NULL; /* dispatch answers it as it should */
	for (i = 0; i < svc->nprogs; i++) {
		const struct rrr_svc_program *p = &svc->progs[i];

		if (p->prog == req->call.prog && p->vers == req->call.vers) {
			if (!svc->places[i] || req->call.proc >= p->nprocs ||
			    !p->procs[req->call.proc].fn)
				return NULL;
			req->prog = p;
			return svc->places[i][req->call.proc];
		}
	}
	return NULL;
}

/* A connection that never lives in epoll: for rrr__svc_dispatch_raw(). */
static void raw_noop(struct rrr__svc_conn *c)
{
	(void)c;
}

static const struct rrr__svc_conn_ops raw_ops = {
    .name = "raw",
    .shutdown = raw_noop,
    .destroy = raw_noop,
};

int rrr__svc_dispatch_raw(struct rrr_svc *svc, const void *msg, size_t len, void *out, size_t cap,
			  size_t *out_len)
{
	struct rrr__svc_conn c;
	struct rrr_svc_req req;
	struct rrr_xdr args, res;
	enum rrr__svc_verdict v;
	void *copy;

	if (!svc || (!msg && len) || !out || !out_len)
		return -EINVAL;
	/* a private, 8-byte aligned copy: XDR streams want aligned words */
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, msg, len);
	memset(&c, 0, sizeof(c));
	c.ops = &raw_ops;
	c.svc = svc;
	c.w = &svc->workers[0];
	c.st = &c.w->st;
	c.fd = -1;
	memset(&req, 0, sizeof(req));
	req.svc = svc;
	req.conn = &c;
	req.max_payload = svc->opts.max_payload;
	rrr_xdr_init(&args, copy, len, RRR_XDR_DECODE);
	rrr_xdr_init(&res, out, cap, RRR_XDR_ENCODE);
	v = rrr__svc_dispatch(&req, &args, &res);
	*out_len = v == RRR__SVC_NO_REPLY ? 0 : rrr_xdr_pos(&res);
	rrr__svc_req_end(&req);
	free(copy);
	return (int)v;
}

/* ------------------------------------------------------------------ workers */

int rrr__svc_conn_set_events(struct rrr__svc_conn *c, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};

	if (c->events == events)
		return 0;
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		return -errno;
	c->events = events;
	return 0;
}

void rrr__svc_conn_get(struct rrr__svc_conn *c)
{
	__atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
}

void rrr__svc_conn_put(struct rrr__svc_conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		c->ops->destroy(c);
}

static void list_del(struct rrr__svc_conn **head, struct rrr__svc_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

static void list_add(struct rrr__svc_conn **head, struct rrr__svc_conn *c)
{
	c->prev = NULL;
	c->next = *head;
	if (*head)
		(*head)->prev = c;
	*head = c;
}

void rrr__svc_conn_close(struct rrr__svc_conn *c)
{
	struct rrr__svc_worker *w = c->w;

	if (c->closing)
		return;
	c->closing = true;
	list_del(&w->conns, c);
	list_add(&w->closing, c);
}

static void reap(struct rrr__svc_worker *w)
{
	struct rrr__svc_conn *c;

	while ((c = w->closing)) {
		list_del(&w->closing, c);
		if (c->in_epoll)
			epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		c->in_epoll = false;
		w->nconns--;
		RRR__STAT_ADD(&w->st, disconnects, 1);
		RRR_PROBE3(svc_disconnect, c, c->ops->name, c->idle_shut);
		rrr__svc_unadmit(&w->svc->limits, c);
		rrr__svc_conn_put(c);
	}
}

static void wake(int fd)
{
	uint64_t one = 1;
	ssize_t n = write(fd, &one, sizeof(one));

	(void)n;
}

static int inbox_push(struct rrr__svc_worker *w, struct inbox_item *it)
{
	it->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->inbox_tail)
		w->inbox_tail->next = it;
	else
		w->inbox_head = it;
	w->inbox_tail = it;
	pthread_mutex_unlock(&w->lock);
	wake(w->wakefd);
	return 0;
}

int rrr__svc_adopt(struct rrr_svc *svc, struct rrr__svc_conn *c)
{
	struct inbox_item *it = calloc(1, sizeof(*it));
	unsigned idx;

	if (!it)
		return -ENOMEM;
	idx = atomic_fetch_add(&svc->rr, 1) % svc->nworkers;
	c->svc = svc;
	c->w = &svc->workers[idx];
	c->st = &c->w->st;
	c->refs = 1;
	c->closing = false;
	it->conn = c;
	it->adopt = true;
	return inbox_push(c->w, it);
}

int rrr__svc_post_msg(struct rrr__svc_conn *c, const void *msg, size_t len)
{
	struct inbox_item *it = malloc(sizeof(*it) + len);

	if (!it)
		return -ENOMEM;
	it->conn = c;
	it->adopt = false;
	it->run = NULL;
	it->done = NULL;
	it->arg = NULL;
	it->len = len;
	memcpy(it->msg, msg, len);
	return inbox_push(c->w, it);
}

int rrr__svc_offload(struct rrr__svc_conn *c, void (*run)(void *arg), void (*done)(void *arg),
		     void *arg)
{
	struct rrr_svc *svc = c->svc;
	struct inbox_item *it;
	unsigned i, start;

	if (svc->nworkers < 2 || atomic_load(&svc->stopping))
		return -EAGAIN;
	start = c->w->idx + 1;
	/* an idle worker with no handler queued yet takes it, else any worker
	 * with none queued (busy with its own events a moment, or not yet
	 * back in its wait: the handler waits in its inbox, and this
	 * connection's worker stays free to receive); the claim is the
	 * handed count going from 0 to 1 */
	for (i = 0; i < 2 * (svc->nworkers - 1); i++) {
		struct rrr__svc_worker *w =
			&svc->workers[(start + i % (svc->nworkers - 1)) % svc->nworkers];
		bool want_idle = i < svc->nworkers - 1;
		unsigned none = 0;

		if (w == c->w ||
		    (want_idle && !atomic_load_explicit(&w->idle, memory_order_relaxed)) ||
		    !atomic_compare_exchange_strong(&w->handed, &none, 1))
			continue;
		it = calloc(1, sizeof(*it));
		if (!it) {
			atomic_store(&w->handed, 0);
			return -ENOMEM;
		}
		rrr__svc_conn_get(c); /* dropped on the owner after @done */
		it->conn = c;
		it->run = run;
		it->done = done;
		it->arg = arg;
		RRR__STAT_ADD(c->st, offloaded, 1);
		return inbox_push(w, it);
	}
	return -EAGAIN;
}

/* An inbox item that is not an adoption: a message for a connection, a
 * handler to run here, or a handler's return to its owner. */
static void inbox_item_run(struct rrr__svc_worker *w, struct inbox_item *it)
{
	struct rrr__svc_conn *c = it->conn;

	if (it->run) {
		it->run(it->arg);
		it->run = NULL;
		atomic_store(&w->handed, 0);
		if (c->w != w) {
			inbox_push(c->w, it); /* back to the owner, for @done */
			return;
		}
	}
	if (it->done)
		it->done(it->arg);
	else if (!c->closing && c->ops->on_msg)
		c->ops->on_msg(c, it->msg);
	rrr__svc_conn_put(c);
	free(it);
}

static void drain_inbox(struct rrr__svc_worker *w, bool stopping)
{
	struct inbox_item *it, *n;
	uint64_t v;
	ssize_t r = read(w->wakefd, &v, sizeof(v));

	(void)r;
	pthread_mutex_lock(&w->lock);
	it = w->inbox_head;
	w->inbox_head = w->inbox_tail = NULL;
	pthread_mutex_unlock(&w->lock);
	for (; it; it = n) {
		struct rrr__svc_conn *c = it->conn;

		n = it->next;
		if (it->adopt) {
			struct epoll_event ev = {.events = c->events, .data.ptr = c};

			if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev)) {
				list_add(&w->conns, c);
				w->nconns++;
				rrr__svc_conn_close(c);
			} else {
				c->in_epoll = true;
				c->last_ms = rrr__mono_ms();
				list_add(&w->conns, c);
				w->nconns++;
				RRR__STAT_ADD(&w->st, connects, 1);
				RRR_PROBE3(svc_connect, c, c->ops->name, &c->peer);
				if (stopping)
					c->ops->shutdown(c);
			}
			free(it);
		} else {
			inbox_item_run(w, it);
		}
	}
}

static void *worker_main(void *arg)
{
	struct rrr__svc_worker *w = arg;
	struct rrr_svc *svc = w->svc;
	struct epoll_event evs[64];
	bool shut = false;
	int64_t deadline = 0, next_idle_scan = 0;
	uint32_t idle = svc->opts.idle_timeout_ms;
	int idle_tick = idle == RRR_SVC_UNLIMITED ? -1 : idle / 4 > 1000 ? 1000 : (int)(idle / 4) + 1;

	(void)rrr__svc_arena_thread(true); /* without memory: malloc/free */
	for (;;) {
		bool stopping = atomic_load(&svc->stopping);
		int timeout = stopping ? 20 : idle_tick;
		int64_t now;
		int n, i;

		if (stopping && !shut) {
			struct rrr__svc_conn *c, *next;

			shut = true;
			deadline = rrr__mono_ms() + SVC_STOP_GRACE_MS;
			for (c = w->conns; c; c = next) {
				next = c->next;
				c->ops->shutdown(c);
			}
			reap(w);
		}
		if (shut && !w->conns && !w->closing)
			break;
		if (shut && rrr__mono_ms() > deadline) {
			while (w->conns)
				rrr__svc_conn_close(w->conns);
			reap(w);
			break;
		}
		/* nothing to do: a connection of another worker may hand us a
		 * handler (rrr__svc_offload) until we find events of our own.
		 * A wait that timed out leaves us idle: the idle scan below is
		 * short, and a worker that is slow to be scheduled on a busy
		 * host is as good a taker as any (the handler waits in its
		 * inbox), better than the connection's owner, which would not
		 * receive while it runs the handler. */
		atomic_store(&w->idle, !shut);
		n = rrr__wait_epoll(&w->waiter, w->epfd, evs, 64, timeout);
		if (n != 0)
			atomic_store(&w->idle, false);
		if (n < 0 && errno != EINTR)
			break;
		now = rrr__mono_ms();
		for (i = 0; i < n; i++) {
			struct rrr__svc_conn *c = evs[i].data.ptr;

			if (!c) {
				drain_inbox(w, shut);
				continue;
			}
			c->last_ms = now;
			c->ops->on_event(c, evs[i].events);
		}
		if (idle_tick >= 0 && !shut && now >= next_idle_scan) {
			struct rrr__svc_conn *c, *next;

			/* no traffic for idle_timeout_ms: finish and close */
			next_idle_scan = now + idle_tick;
			for (c = w->conns; c; c = next) {
				next = c->next;
				if (c->idle_shut || now - c->last_ms < (int64_t)idle)
					continue;
				c->idle_shut = true;
				rrr__svc_idle_closed(&svc->limits, idle);
				c->ops->shutdown(c);
			}
		}
		reap(w);
	}
	/* late adoptions and messages: close them too */
	drain_inbox(w, true);
	while (w->conns)
		rrr__svc_conn_close(w->conns);
	reap(w);
	rrr__svc_arena_thread(false); /* later request ends on this thread free() */
	wake(svc->donefd);
	return NULL;
}

/* ------------------------------------------------------------------ run/stop */

/* The server is stopping: listeners with a stop op leave epoll and close
 * their fd (TCP); the others keep running until destroy_listeners() (RDMA:
 * CM events keep flowing while workers close connections). */
static void stop_listeners(struct rrr_svc *svc, int epfd)
{
	for (unsigned i = 0; i < svc->nlis; i++) {
		struct rrr__svc_listener *l = svc->lis[i];

		if (l->stopped || !l->ops->stop)
			continue;
		if (epfd >= 0 && l->fd >= 0)
			epoll_ctl(epfd, EPOLL_CTL_DEL, l->fd, NULL);
		l->ops->stop(l);
		l->stopped = true;
	}
}

static int listener_limit_stats(struct rrr__svc_listener *l, struct rrr_cm_limit_stats *st)
{
	return l->ops->limit_stats ? l->ops->limit_stats(l, st) : -EOPNOTSUPP;
}

/* Destroy the listeners, keeping their set-up counters. */
static void destroy_listeners(struct rrr_svc *svc)
{
	pthread_mutex_lock(&svc->limits.lock);
	for (unsigned i = 0; i < svc->nlis; i++) {
		struct rrr_cm_limit_stats st;

		if (listener_limit_stats(svc->lis[i], &st) == 0)
			rrr__svc_fold_cm(&svc->limits, &st);
		svc->lis[i]->ops->destroy(svc->lis[i]);
		svc->lis[i] = NULL;
	}
	svc->nlis = 0;
	pthread_mutex_unlock(&svc->limits.lock);
}

/* @l's fd is readable (accept thread). The set-up counters are compared
 * around the call, so set-up timeouts and evictions get logged. */
static void listener_ready(struct rrr_svc *svc, struct rrr__svc_listener *l)
{
	struct rrr_cm_limit_stats b, a;
	int have;

	if (l->stopped)
		return;
	have = listener_limit_stats(l, &b) == 0;
	l->ops->ready(l);
	if (have && listener_limit_stats(l, &a) == 0)
		rrr__svc_setup_seen(&svc->limits, &b, &a, svc->opts.setup_timeout_ms,
				    svc->opts.max_setup);
}

/* Accept-thread epoll tags besides the listeners themselves. */
static char stop_tag, done_tag;

int rrr_svc_run(struct rrr_svc *svc)
{
	struct epoll_event ev, evs[16];
	unsigned i, started = 0, done = 0;
	sigset_t block, oldmask;
	bool expect = false;
	int epfd, rc = 0;

	if (!svc)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&svc->running, &expect, true))
		return rrr__set_error(-EBUSY, "rrr_svc_run() is already running");
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0) {
		rc = -errno;
		goto out;
	}
	/* epoll data: &stop_tag, &done_tag, or a listener */
	ev.events = EPOLLIN;
	ev.data.ptr = &stop_tag;
	epoll_ctl(epfd, EPOLL_CTL_ADD, svc->stopfd, &ev);
	ev.data.ptr = &done_tag;
	epoll_ctl(epfd, EPOLL_CTL_ADD, svc->donefd, &ev);
	for (i = 0; i < svc->nlis; i++) {
		ev.data.ptr = svc->lis[i];
		epoll_ctl(epfd, EPOLL_CTL_ADD, svc->lis[i]->fd, &ev);
	}
	atomic_store(&svc->stopping, false);
	/* Workers inherit a mask with SIGPIPE blocked: a provider writing to
	 * a socket whose peer vanished gets EPIPE instead of the signal
	 * killing the whole process. */
	sigemptyset(&block);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &oldmask);
	for (i = 0; i < svc->nworkers; i++) {
		/* a worker not yet scheduled has nothing to do: a handler
		 * handed to it waits in its inbox for its first wait */
		atomic_store(&svc->workers[i].idle, true);
		rc = -pthread_create(&svc->workers[i].thread, NULL, worker_main, &svc->workers[i]);
		if (rc)
			break;
		svc->workers[i].started = true;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	if (rc) {
		rrr__set_error(rc, "cannot start server worker threads");
		wake(svc->stopfd);
	}

	while (done < started) {
		int n = epoll_wait(epfd, evs, 16, -1), k;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			wake(svc->stopfd);
			n = 0;
		}
		for (k = 0; k < n; k++) {
			void *tag = evs[k].data.ptr;
			uint64_t v;
			ssize_t r;

			if (tag == &stop_tag) {
				r = read(svc->stopfd, &v, sizeof(v));
				(void)r;
				if (!atomic_load(&svc->stopping)) {
					stop_listeners(svc, epfd);
					atomic_store(&svc->stopping, true);
					for (i = 0; i < svc->nworkers; i++)
						wake(svc->workers[i].wakefd);
				}
			} else if (tag == &done_tag) {
				r = read(svc->donefd, &v, sizeof(v));
				if (r == (ssize_t)sizeof(v))
					done += (unsigned)v;
			} else {
				listener_ready(svc, tag);
			}
		}
	}
	for (i = 0; i < svc->nworkers; i++) {
		if (svc->workers[i].started) {
			pthread_join(svc->workers[i].thread, NULL);
			svc->workers[i].started = false;
		}
	}
	for (i = 0; i < svc->nworkers; i++)
		inbox_leftovers(&svc->workers[i]);
	destroy_listeners(svc);
	close(epfd);
out:
	atomic_store(&svc->running, false);
	return rc;
}

void rrr_svc_stop(struct rrr_svc *svc)
{
	if (svc)
		wake(svc->stopfd); /* write(2) only: async-signal-safe */
}

void rrr_svc_destroy(struct rrr_svc *svc)
{
	unsigned i;

	if (!svc)
		return;
	destroy_listeners(svc);
	for (i = 0; i < svc->nworkers; i++)
		worker_fini(&svc->workers[i]);
	free(svc->workers);
	close(svc->stopfd);
	close(svc->donefd);
	rrr__svc_limits_fini(&svc->limits);
	for (i = 0; i < svc->nprogs; i++)
		free(svc->places[i]);
	free(svc);
}

void rrr_svc_stats(struct rrr_svc *svc, struct rrr_xprt_stats *out)
{
	unsigned i;

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!svc)
		return;
	for (i = 0; i < svc->nworkers; i++)
		rrr__xprt_stats_fold(out, &svc->workers[i].st);
}

void rrr_svc_limit_stats(struct rrr_svc *svc, struct rrr_svc_limit_stats *st)
{
	struct rrr__svc_limits *L;

	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!svc)
		return;
	L = &svc->limits;
	pthread_mutex_lock(&L->lock);
	struct rrr_cm_limit_stats live = L->cm_folded;

	for (unsigned i = 0; i < svc->nlis; i++) {
		struct rrr_cm_limit_stats c;

		if (listener_limit_stats(svc->lis[i], &c) == 0)
			rrr__svc_cm_add(&live, &c);
	}
	rrr__svc_limit_stats_fill(L, &live, st);
	pthread_mutex_unlock(&L->lock);
}
