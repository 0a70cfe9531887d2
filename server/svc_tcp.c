/* SPDX-License-Identifier: MIT */
/*
 * server/svc_tcp.c - ONC RPC over TCP with record marking (RFC 5531
 * section 11), for the server.
 *
 * Wire format: a record is one or more fragments, each preceded by a
 * 4-byte big-endian marker:
 *
 *    0                   1                   2                   3
 *   +-+-------------------------------------------------------------+
 *   |L|              fragment length (31 bits)                      |
 *   +-+-------------------------------------------------------------+
 *   |  fragment bytes ...                                           |
 *   L = 1 on the last fragment of the record.
 *
 * Normal operation. Sockets are non-blocking and live in the epoll set of
 * the worker that owns the connection; that worker alone reads the
 * socket, writes it and touches the connection. Input goes through the
 * record-marking reassembler (xdr/oncrpc_rm.c): read the 4-byte marker,
 * then read the fragment straight into its record buffer (grown
 * geometrically), and when the last fragment is in, the record is one
 * call (struct tcp_call: the request, its reply buffer, the reply record
 * being written). Call objects come from a small cache of the worker
 * thread and go back there when the reply is out, so the steady state
 * allocates nothing and an idle connection holds none (only its
 * reassembler's buffer).
 *
 * Who runs the handler. A quick handler runs at once on the owner, with
 * the call's arguments in the reassembler's buffer (no copy). A slow one
 * (its procedure averages 1 ms or more, or is not timed yet:
 * rrr__svc_offload_wanted, svc_offload.c) is handed to another worker
 * (rrr__svc_offload: an idle one, else one with no handler queued) when
 * one takes it: the call then takes the record buffer with it
 * (rrr__rm_take: no copy; the next record is read into a record buffer of
 * the worker's cache, or a new one, and the taken buffer goes back to the
 * reassembler or that cache when the call ends), its request is lent a
 * block of the owner's arena cache (rrr__svc_req_lend: the memory is given
 * back there), the other worker runs the handler touching only the call,
 * and the call comes back to the owner (tcp_handler_done), which queues
 * its reply. Meanwhile the owner goes on reading and dispatching the
 * connection's further calls, so a handler that waits for a later call of
 * its own connection (a lock) gets it. A reference on the connection
 * (taken by rrr__svc_offload) keeps it until the call is back: a
 * connection closed meanwhile ends the request there, and one whose owner
 * already exited at shutdown frees the call in its destroy.
 *
 * Who writes. Replies go out whole, one record after the other, in the
 * order their calls finished (RPC gives no ordering between calls): a
 * reply is queued behind any reply the socket has not taken yet, and
 * written with sendmsg() from where it lies; one the socket cannot take
 * makes the connection wait for EPOLLOUT, and nothing more is read until
 * every queued reply is out (back-pressure: a client that does not read
 * its replies is sent no more; and a queued reply of a quick call may
 * still point into the reassembler's buffer). Once a reply has left, the
 * handler's after-reply function (rrr_svc_req_after_reply) runs there,
 * the arguments still where it saw them, and the call's request arena is
 * given back.
 *
 * What is bounded. A connection has at most max_requests calls in progress
 * (rrr_svc_opts: the credits of an RDMA connection; handed off, or replies
 * queued); at that many the worker stops reading its socket until one
 * ends, so a client cannot make the server hold more than max_requests
 * records and reply buffers for it. Each is bounded by the record bound
 * below. A worker's cache keeps at most TCP_CACHE_CALLS call objects and
 * TCP_CACHE_RECS record buffers, whatever its connections do; it is freed
 * when the thread exits. A worker takes one handed-off handler at a time
 * (svc.c). A re-sent call that server/fs's duplicate request cache makes
 * wait for its original (on a new connection, after a reconnect) waits
 * wherever the original runs; it is never run twice.
 *
 * Result payloads (a READ's data) are not copied into the reply buffer: a
 * DDP hook on the reply stream records the first payload's iovecs (they
 * point into the request arena, or other memory the handler keeps until
 * the reply is sent, as rrr_svc_req_alloc's contract says) and takes its
 * padded size off the stream's room, so the reply stays within the same
 * bound; the reply is laid out by rrr__rm_out_set() (xdr/oncrpc_rm.c, as
 * the client's calls are) and written with sendmsg() gathering
 *
 *   [marker][reply 0..pay_at)[payload iovecs][pad][reply pay_at..end)
 *
 * Other payloads, and a payload with more iovecs than the copy holds, are
 * copied inline. An error reply (the stream re-initialised) drops it.
 *
 * Hostile input: a record may not exceed max_payload + 64 KiB (the record
 * bound); a fragment that would cross it closes the connection before any
 * memory is allocated for it. At most a few records, and a bounded number
 * of reads, are handled per readiness event (epoll is level-triggered, so
 * the rest waits for the next round) so that one busy connection - even
 * one sending endless zero-length fragments - cannot starve the others.
 *
 * Recovery: any socket error or protocol violation closes the connection
 * at once (a handler away still returns to it first); nothing else is
 * affected. At the end of the stream, and on shutdown, the connection
 * reads no more and closes once its calls in progress are done and their
 * replies out (at once when it has none).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/probes.h"
#include "server/svc_impl.h"
#include "common/rrr_impl.h"
#include "xdr/oncrpc_rm.h"

#define TCP_RECORDS_PER_EVENT 8
/* Reads (markers and fragment pieces) per readiness event: a stream of
 * zero-length fragments completes no record and grows no buffer, so only
 * this bound hands the worker back to its other connections. */
#define TCP_READS_PER_EVENT 256
/* What a worker thread keeps for its connections' next calls. */
#define TCP_CACHE_CALLS 4
#define TCP_CACHE_RECS	2

struct tcp_conn;

/* One call, from its complete record until its reply is out. Touched by
 * the owner only, except while its handler runs on another worker: then
 * that worker touches req, args, res, v and the payload fields, and the
 * owner only rec and the list links. */
struct tcp_call {
	struct tcp_conn *t;
	struct tcp_call *next, *prev; /* t->handed (both), t->sendq or the cache (next) */
	uint32_t max_record;	      /* the room of reply[] after the marker */
	void *rec;		      /* its record's buffer when it took it, else NULL */
	size_t rec_cap;
	struct rrr_svc_req req;
	struct rrr_xdr args, res;
	enum rrr__svc_verdict v;
	struct rrr__rm_out out; /* the reply record being written */
	/* the result payload sent from where it lies (DDP hook) */
	struct rrr_xdr_ddp ddp;
	bool has_pay;
	size_t pay_at; /* reply[] offset where it goes (after its length word) */
	uint32_t pay_len;
	unsigned pay_niov;
	struct iovec pay_iov[RRR_XDR_PAYLOAD_MAX_IOV];
	_Alignas(8) uint8_t reply[]; /* 4-byte marker + reply message, 4 + max_record */
};

struct tcp_conn {
	struct rrr__svc_conn base;
	uint32_t max_record;
	uint32_t max_calls; /* calls in progress at most (opts.max_requests) */
	/* input: record reassembly bounded by max_record (xdr/oncrpc_rm.c) */
	struct rrr__rm rm;
	struct tcp_call *sendq, *sendq_tail; /* replies to write; the first is being written */
	struct tcp_call *handed;	     /* handlers running on other workers */
	uint32_t ncalls;		     /* calls taken and not ended */
	bool shutting;
};

static void tcp_close(struct tcp_conn *t)
{
	rrr__svc_conn_close(&t->base);
}

/* DDP hook of the reply stream: record the first result payload (sent
 * from where it lies), copy any other inline. */
static int reply_payload(struct rrr_xdr *xdr, void *ctx, const struct iovec *iov, unsigned niov,
			 uint32_t len)
{
	struct tcp_call *k = ctx;
	uint64_t padded = ((uint64_t)len + 3u) & ~(uint64_t)3u;

	if (!k->has_pay && niov <= RRR_XDR_PAYLOAD_MAX_IOV) {
		/* the bytes count against the reply's room as if copied */
		if (padded > rrr_xdr_remaining(xdr))
			return -EMSGSIZE;
		xdr->len -= (size_t)padded;
		k->has_pay = true;
		k->pay_at = 4 + rrr_xdr_pos(xdr);
		k->pay_len = len;
		k->pay_niov = niov;
		if (niov)
			memcpy(k->pay_iov, iov, niov * sizeof(*iov));
		return 0;
	}
	return rrr__rm_out_copy(xdr, iov, niov, len);
}

/* ---------------------------------------------------- worker thread cache */

/* Call objects and record buffers that ended on this worker thread, for
 * the next calls of its connections (a connection's calls start and end
 * on its owner). Bounded; freed by the key's destructor when the thread
 * exits. */
struct tcp_cache {
	struct tcp_call *calls; /* through next */
	unsigned ncalls, nrecs;
	void *rec[TCP_CACHE_RECS];
	size_t rec_cap[TCP_CACHE_RECS];
};

static _Thread_local struct tcp_cache *tls_cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_key_ok;

static void cache_free(void *arg)
{
	struct tcp_cache *tc = arg;
	struct tcp_call *k;

	while ((k = tc->calls)) {
		tc->calls = k->next;
		free(k);
	}
	while (tc->nrecs)
		free(tc->rec[--tc->nrecs]);
	free(tc);
	tls_cache = NULL;
}

static void cache_key_make(void)
{
	cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0;
}

/* This thread's cache, made on first use; NULL: none (no memory). */
static struct tcp_cache *cache(void)
{
	struct tcp_cache *tc = tls_cache;

	if (tc)
		return tc;
	pthread_once(&cache_once, cache_key_make);
	if (!cache_key_ok)
		return NULL;
	tc = calloc(1, sizeof(*tc));
	if (tc && pthread_setspecific(cache_key, tc)) {
		free(tc);
		tc = NULL;
	}
	tls_cache = tc;
	return tc;
}

/* Keep @k for a next call, or free it. */
static void cache_put_call(struct tcp_call *k)
{
	struct tcp_cache *tc = cache();

	if (!tc || tc->ncalls >= TCP_CACHE_CALLS) {
		free(k);
		return;
	}
	k->next = tc->calls;
	tc->calls = k;
	tc->ncalls++;
}

/* Keep the record buffer @buf (@cap bytes) for a next hand-off, the
 * largest ones; or free it. */
static void cache_put_rec(void *buf, size_t cap)
{
	struct tcp_cache *tc = cache();
	unsigned i, small = 0;

	if (!tc) {
		free(buf);
		return;
	}
	if (tc->nrecs < TCP_CACHE_RECS) {
		tc->rec[tc->nrecs] = buf;
		tc->rec_cap[tc->nrecs++] = cap;
		return;
	}
	for (i = 1; i < tc->nrecs; i++)
		if (tc->rec_cap[i] < tc->rec_cap[small])
			small = i;
	if (tc->rec_cap[small] < cap) {
		free(tc->rec[small]);
		tc->rec[small] = buf;
		tc->rec_cap[small] = cap;
		return;
	}
	free(buf);
}

/* A record buffer for @t's reassembler, which gave its own to a call. */
static void cache_lend_rec(struct tcp_conn *t)
{
	struct tcp_cache *tc = tls_cache;
	unsigned i, big = 0;

	if (!tc || !tc->nrecs)
		return;
	for (i = 1; i < tc->nrecs; i++)
		if (tc->rec_cap[i] > tc->rec_cap[big])
			big = i;
	rrr__rm_give(&t->rm, tc->rec[big], tc->rec_cap[big]);
	tc->rec[big] = tc->rec[--tc->nrecs];
	tc->rec_cap[big] = tc->rec_cap[tc->nrecs];
}

/* ---------------------------------------------------------------- calls */

/* A call object for the complete record in t->rm (from the cache, or a
 * new one), its request and streams set up; NULL without memory. */
static struct tcp_call *call_get(struct tcp_conn *t)
{
	struct tcp_cache *tc = tls_cache;
	struct tcp_call *k = tc ? tc->calls : NULL;

	if (k) {
		tc->calls = k->next;
		tc->ncalls--;
		if (k->max_record != t->max_record) { /* another server's */
			free(k);
			k = NULL;
		}
	}
	if (!k) {
		k = malloc(sizeof(*k) + 4 + (size_t)t->max_record);
		if (!k)
			return NULL;
		k->max_record = t->max_record;
	}
	k->t = t;
	k->next = k->prev = NULL;
	k->rec = NULL;
	memset(&k->req, 0, sizeof(k->req));
	k->req.svc = t->base.svc;
	k->req.conn = &t->base;
	k->req.max_payload = rrr__svc_opts(t->base.svc)->max_payload;
	rrr_xdr_init(&k->args, t->rm.rec, t->rm.len, RRR_XDR_DECODE);
	rrr_xdr_init(&k->res, k->reply + 4, t->max_record, RRR_XDR_ENCODE);
	k->has_pay = false;
	k->ddp.encode = reply_payload;
	k->ddp.decode = NULL;
	k->ddp.ctx = k;
	rrr_xdr_set_ddp(&k->res, &k->ddp);
	t->ncalls++;
	return k;
}

/* @k's reply is out or dropped (on the owner): end its request, give its
 * record buffer back to the reassembler (when that has none) or the
 * cache, and itself to the cache. */
static void call_end(struct tcp_conn *t, struct tcp_call *k)
{
	rrr__svc_req_end(&k->req);
	if (k->rec) {
		if (!t->rm.rec)
			rrr__rm_give(&t->rm, k->rec, k->rec_cap);
		else
			cache_put_rec(k->rec, k->rec_cap);
	}
	t->ncalls--;
	cache_put_call(k);
}

/* Run @k's handler: on the owner, or on the worker it was handed to. */
static void call_run(void *arg)
{
	struct tcp_call *k = arg;

	k->v = rrr__svc_dispatch(&k->req, &k->args, &k->res);
	if (k->v != RRR__SVC_REPLY_OK)
		k->has_pay = false; /* an error reply replaced the results */
}

/* Write the queued replies, whole, in order; 1 when all are out, 0 when
 * the socket must drain first, -errno. */
static int tcp_flush(struct tcp_conn *t)
{
	struct rrr_xprt_stats *st = t->base.st;
	struct iovec iov[RRR__RM_OUT_IOV_MAX];
	struct msghdr mh = {.msg_iov = iov};
	struct tcp_call *k;

	while ((k = t->sendq)) {
		while (k->out.off < k->out.len) {
			ssize_t n;

			mh.msg_iovlen = rrr__rm_out_iov(&k->out, iov);
			n = sendmsg(t->base.fd, &mh, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return 0;
				return -errno;
			}
			k->out.off += (size_t)n;
			RRR__STAT_ADD(st, send_bytes, (uint64_t)n);
		}
		t->sendq = k->next;
		if (!t->sendq)
			t->sendq_tail = NULL;
		/* the reply is out, the arguments still where the handler
		 * saw them (the reassembler reads nothing while replies wait,
		 * and a handed-off call holds its record) */
		rrr__svc_req_after_reply(&k->req, true);
		call_end(t, k);
	}
	return 1;
}

/* @k's handler returned: queue its reply and write what the socket takes.
 * 1 all out, 0 the socket must drain first, -errno. */
static int call_reply(struct tcp_conn *t, struct tcp_call *k)
{
	if (k->v == RRR__SVC_NO_REPLY) {
		call_end(t, k);
		return t->sendq ? 0 : 1;
	}
	/* the reply's room was bounded by max_record: the record fits a marker */
	if (rrr__rm_out_set(&k->out, k->reply, 4 + rrr_xdr_pos(&k->res), k->pay_at,
			    k->has_pay ? k->pay_iov : NULL, k->pay_niov, k->pay_len)) {
		call_end(t, k);
		return -EMSGSIZE;
	}
	RRR__STAT_ADD(t->base.st, replies, 1);
	k->next = NULL;
	if (t->sendq_tail)
		t->sendq_tail->next = k;
	else
		t->sendq = k;
	t->sendq_tail = k;
	return tcp_flush(t);
}

/* May the connection take another call now? Not while replies wait for
 * the socket, at max_calls in progress, or once shutting down. */
static bool tcp_may_read(const struct tcp_conn *t)
{
	return !t->shutting && !t->sendq && t->ncalls < t->max_calls;
}

/* Set the epoll interest from the state: EPOLLOUT while replies wait,
 * EPOLLIN while it may read, none else (a handed-off call will come back);
 * a connection shutting down closes once nothing is in progress. */
static void tcp_arm(struct tcp_conn *t)
{
	if (t->shutting && !t->ncalls) {
		tcp_close(t);
		return;
	}
	rrr__svc_conn_set_events(&t->base, t->sendq ? EPOLLOUT : tcp_may_read(t) ? EPOLLIN : 0);
}

static void call_unhand(struct tcp_conn *t, struct tcp_call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		t->handed = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->next = k->prev = NULL;
}

/* Back on the owner (rrr__svc_offload's @done): reply, and read again if
 * the connection was at its bound. */
static void tcp_handler_done(void *arg)
{
	struct tcp_call *k = arg;
	struct tcp_conn *t = k->t;

	call_unhand(t, k);
	if (t->base.closing) {
		call_end(t, k); /* the socket is gone: the request ends here */
		return;
	}
	if (call_reply(t, k) < 0) {
		RRR_PROBE2(svc_conn_failed, &t->base, "TCP: socket error");
		tcp_close(t);
		return;
	}
	tcp_arm(t);
}

/* Hand @k's handler to an idle worker; true when handed. The call takes
 * the record's buffer (the other worker reads its arguments there while
 * the next record is read into another). */
static bool call_hand_off(struct tcp_conn *t, struct tcp_call *k)
{
	/* its memory from this worker's cache, where it goes back */
	rrr__svc_req_lend(&k->req);
	if (rrr__svc_offload(&t->base, call_run, tcp_handler_done, k))
		return false;
	/* from here the other worker touches k's request and streams only */
	k->rec = rrr__rm_take(&t->rm, &k->rec_cap);
	cache_lend_rec(t);
	k->prev = NULL;
	k->next = t->handed;
	if (t->handed)
		t->handed->prev = k;
	t->handed = k;
	return true;
}

/* Dispatch the complete record in t->rm: a slow handler is handed off, a
 * quick one runs here and its reply starts out. 1 on to the next record,
 * 0 a reply waits for the socket, -errno. */
static int tcp_handle_record(struct tcp_conn *t)
{
	struct tcp_call *k = call_get(t);

	if (!k)
		return -ENOMEM;
	if (rrr__svc_offload_wanted(t->rm.rec, t->rm.len) && call_hand_off(t, k))
		return 1;
	call_run(k);
	rrr__rm_next(&t->rm);
	return call_reply(t, k);
}

/* Read one chunk of input; 1 progress, 0 would block, -errno / -EPIPE on EOF. */
static int tcp_read_some(struct tcp_conn *t)
{
	struct rrr_xprt_stats *st = t->base.st;
	size_t room;
	ssize_t n;
	void *dst;
	int rc;

	/* the rest of the marker or of the fragment, read in place */
	dst = rrr__rm_want(&t->rm, &room);
	if (!dst)
		return -EMSGSIZE; /* refused before; cannot happen otherwise */
	n = recv(t->base.fd, dst, room, 0);
	if (n < 0) {
		if (errno == EINTR)
			return 1;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	if (n == 0)
		return -EPIPE;
	RRR__STAT_ADD(st, recv_bytes, (uint64_t)n);
	rc = rrr__rm_commit(&t->rm, (size_t)n);
	if (rc < 0)
		return rc; /* beyond the record bound, or no memory */
	return rc == 1 ? 2 : 1; /* 2: record complete */
}

static void tcp_on_event(struct rrr__svc_conn *c, uint32_t events)
{
	struct tcp_conn *t = container_of(c, struct tcp_conn, base);
	int records = 0, reads = 0, rc;

	if (c->closing)
		return;
	if (t->sendq) {
		if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLOUT))
			goto fail;
		if (tcp_flush(t) < 0)
			goto fail;
	}
	/* waiting for nothing of the socket (a handler away, or at the
	 * bound), an error or hang-up still wakes us: the peer is gone */
	if (!t->sendq && !tcp_may_read(t) && events & (EPOLLERR | EPOLLHUP))
		goto fail;
	while (tcp_may_read(t) && records < TCP_RECORDS_PER_EVENT &&
	       reads++ < TCP_READS_PER_EVENT) {
		rc = tcp_read_some(t);
		if (rc == 0)
			break;
		if (rc == -EPIPE) {
			/* end of stream: the calls in progress are still
			 * answered (a client may half-close), then it closes */
			RRR_PROBE2(svc_conn_failed, c, "TCP: end of stream");
			t->shutting = true;
			break;
		}
		if (rc < 0)
			goto fail;
		if (rc == 2) {
			records++;
			if (tcp_handle_record(t) < 0)
				goto fail;
		}
	}
	tcp_arm(t);
	return;
fail:
	RRR_PROBE2(svc_conn_failed, c, "TCP: socket error or protocol violation");
	tcp_close(t);
}

static void tcp_shutdown(struct rrr__svc_conn *c)
{
	struct tcp_conn *t = container_of(c, struct tcp_conn, base);

	t->shutting = true;
	tcp_arm(t);
}

/* Free @k, which never came back to call_end() (the connection ended). */
static void call_drop(struct tcp_call *k)
{
	rrr__svc_req_end(&k->req);
	free(k->rec);
	free(k);
}

static void tcp_destroy(struct rrr__svc_conn *c)
{
	struct tcp_conn *t = container_of(c, struct tcp_conn, base);
	struct tcp_call *k;

	while ((k = t->sendq)) {
		t->sendq = k->next;
		call_drop(k);
	}
	/* handed off when the owner exited at shutdown: every worker has
	 * exited, so no handler runs (svc.c, inbox_leftovers) */
	while ((k = t->handed)) {
		t->handed = k->next;
		call_drop(k);
	}
	if (c->fd >= 0)
		close(c->fd);
	rrr__rm_fini(&t->rm);
	free(t);
}

static const struct rrr__svc_conn_ops tcp_ops = {
    .name = "tcp",
    .on_event = tcp_on_event,
    .on_msg = NULL,
    .shutdown = tcp_shutdown,
    .destroy = tcp_destroy,
};

/* The listening socket is readable: accept what is pending. */
static void tcp_listener_ready(struct rrr__svc_listener *l)
{
	struct rrr_svc *svc = l->svc;
	const struct rrr_svc_opts *o = rrr__svc_opts(svc);
	int lfd = l->fd, i;

	for (i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct tcp_conn *t;
		int fd, one = 1;

		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* out of fds: shed one so the backlog does not fill up
			 * and the listener does not stay readable for nothing */
			if ((errno == EMFILE || errno == ENFILE) &&
			    rrr__svc_shed(rrr__svc_limits(svc), lfd))
				continue;
			return; /* EAGAIN, or a transient error: epoll calls again */
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		t = calloc(1, sizeof(*t));
		if (!t) {
			close(fd);
			continue;
		}
		t->base.ops = &tcp_ops;
		t->base.fd = fd;
		t->base.events = EPOLLIN;
		t->base.peer = ss;
		t->max_record = o->max_payload + RRR__SVC_REPLY_SLACK;
		t->max_calls = o->max_requests;
		rrr__rm_init(&t->rm, t->max_record);
		if (rrr__svc_admit(rrr__svc_limits(svc), &t->base, "TCP", 1)) {
			close(fd);
			free(t);
			continue;
		}
		if (rrr__svc_adopt(svc, &t->base)) {
			rrr__svc_unadmit(rrr__svc_limits(svc), &t->base);
			close(fd);
			free(t);
		}
	}
}

static int tcp_listener_listen(struct rrr_svc *svc, const char *host, const char *port,
			       uint16_t *bound_port, struct rrr__svc_listener **out)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct rrr__svc_listener *l;
	int fd = -1, rc, one = 1, zero = 0;

	(void)svc;
	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		free(l);
		return rrr__set_error(-EINVAL, "cannot resolve %s:%s: %s", host ? host : "*", port,
				      gai_strerror(rc));
	}
	rc = -EADDRNOTAVAIL;
	/* prefer IPv6 dual-stack for the wildcard address */
	for (int pass = 0; pass < 2 && fd < 0; pass++) {
		for (ai = res; ai; ai = ai->ai_next) {
			if ((pass == 0) != (ai->ai_family == AF_INET6))
				continue;
			fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				rc = -errno;
				continue;
			}
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6 && !host)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
				break;
			rc = -errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0) {
		free(l);
		return rrr__set_error(rc, "cannot listen on TCP %s:%s: %s", host ? host : "*", port,
				      strerror(-rc));
	}
	if (bound_port) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		getsockname(fd, (struct sockaddr *)&ss, &sl);
		if (ss.ss_family == AF_INET6)
			*bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		else
			*bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	l->fd = fd;
	*out = l;
	return 0;
}

static void tcp_listener_stop(struct rrr__svc_listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

static void tcp_listener_destroy(struct rrr__svc_listener *l)
{
	tcp_listener_stop(l);
	free(l);
}

const struct rrr__svc_listener_ops rrr__svc_tcp_listener_ops = {
    .name = "TCP",
    .listen = tcp_listener_listen,
    .ready = tcp_listener_ready,
    .stop = tcp_listener_stop,
    .destroy = tcp_listener_destroy,
};
