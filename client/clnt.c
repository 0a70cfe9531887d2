/* SPDX-License-Identifier: MIT */
/*
 * client/clnt.c - transport-independent core of the ONC RPC client.
 *
 * Normal operation. rrr_clnt_create() connects in the caller's thread (so a
 * refused connection is an error the caller sees), then starts one progress
 * thread per client. Submitting a call (rrr_clnt_call_async) takes a request
 * (a finished one kept for reuse with its encode buffer, or a new one),
 * takes an xid, and ENCODES the call in the submitting thread: an
 * encode failure is returned to the submitter and the callback never runs.
 * For RPC-over-RDMA the encoder's DDP hook records the position and iovecs
 * of the TO_SERVER payload instead of copying it, so the transport can
 * decide later (chunk planning) whether to copy it inline or expose it in a
 * read chunk. The request is then put on the submit queue and the progress
 * thread is woken through an eventfd (unless the submitter is the progress
 * thread itself, which picks the call up before it sleeps). Encoding and
 * decoding (the DDP hooks) are in clnt_xdr.c.
 *
 * The progress thread owns everything that touches the wire: it moves
 * submitted requests to the pending queue, sends them while the transport
 * has room (credits), waits in epoll on the eventfd and the transport's
 * fds, lets the transport match replies to requests (xid hash table),
 * decodes replies with the caller's decode callback and runs completion
 * callbacks - with no lock held, so callbacks may submit new calls. Many
 * threads may submit at once; they only touch the submit queue and the
 * live list under the client lock.
 *
 * Timeouts and cancel. Each call has a deadline. On expiry (or on
 * rrr_clnt_cancel) a queued call completes at once (nothing was exposed); a
 * sent call is handed to the transport's abort, which invalidates the
 * call's MRs (LOCAL_INV, or recovery) and only then completes it. Cancel
 * waits until the callback has returned, so after it returns the caller may
 * free the call. The sync wrapper waits on a condition variable.
 *
 * Recovery. When the transport reports the connection lost, the core asks
 * it to close: every MR of every call it held is recovered before close()
 * returns. Then, like the kernel's NFS client on a hard mount, every call
 * still outstanding is re-queued (same xid, so the server's duplicate
 * request cache can recognise a call it already executed; counted as
 * retransmits) and re-sent on the next connection, again after every
 * reconnect, until its own deadline: no call is lost to a connection
 * problem, and a connection killed by one call's late reply (see
 * clnt_rdma.c) costs the other calls a re-send, not a failure. With the
 * fail_fast option only calls marked idempotent are re-queued, once, and
 * the rest complete with -ECONNRESET (the old behaviour). Calls being
 * aborted (timeout, cancel) are never re-sent. The core reconnects
 * when there is work, with exponential backoff (100 ms doubling to 5 s).
 * Calls waiting for a connection still time out. rrr_clnt_destroy fails
 * everything outstanding with -ECANCELED after the transport has closed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"
#include "common/probes.h"
#include "common/rrr_impl.h"

#define TAG_EVENTFD	 0u
#define BACKOFF_MIN_MS	 100u
#define BACKOFF_MAX_MS	 5000u
#define TICK_MS		 200
#define RECONNECT_MAX_MS 2000
#define SPARE_MAX	 64u	     /* finished requests kept for reuse */
#define SPARE_BUF_MAX	 (64u << 10) /* ... with their encode buffer up to this */

uint64_t rrr__clnt_now_ns(void)
{
	return rrr__mono_ns();
}

void rrr_clnt_opts_init(struct rrr_clnt_opts *opts)
{
	if (!opts)
		return;
	memset(opts, 0, sizeof(*opts));
	opts->transport = "rdma";
	opts->provider = "soft";
	opts->port = "20049";
	opts->max_requests = 32;
	opts->inline_send = RRR_RDMA_INLINE_PREF;
	opts->inline_recv = RRR_RDMA_INLINE_PREF;
	opts->max_segs = 16;
	opts->timeout_ms = 30000;
	opts->connect_timeout_ms = 10000;
}

/* --- fds and the xid table ------------------------------------------------ */

int rrr__clnt_watch(struct rrr_clnt *c, int fd, uint32_t events, uint32_t tag)
{
	struct epoll_event ev = {.events = events, .data.u64 = tag};
	int ep = c->epfd;
	unsigned i;

	for (i = 0; i < c->nwatch && c->watch[i].fd != fd; i++)
		;
	if (i == RRR__CLNT_WATCH_MAX)
		return -ENOSPC; /* a transport watching more fds than it may */
	if (c->gdirect) {
		ep = rrr__clnt_group_epfd(c);
		ev.data.u64 = rrr__clnt_group_data(c, tag);
	}
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 &&
	    (errno != EEXIST || epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) < 0))
		return -errno;
	c->watch[i] = (struct rrr__clnt_watch){fd, events, tag};
	if (i == c->nwatch)
		c->nwatch++;
	return 0;
}

void rrr__clnt_unwatch(struct rrr_clnt *c, int fd)
{
	if (fd < 0)
		return;
	(void)epoll_ctl(c->gdirect ? rrr__clnt_group_epfd(c) : c->epfd, EPOLL_CTL_DEL, fd, NULL);
	for (unsigned i = 0; i < c->nwatch; i++)
		if (c->watch[i].fd == fd) {
			c->watch[i] = c->watch[--c->nwatch];
			break;
		}
}

static unsigned xid_bucket(uint32_t xid)
{
	return (xid ^ (xid >> 8) ^ (xid >> 16)) & 255u;
}

struct rrr__clnt_req *rrr__clnt_lookup(struct rrr_clnt *c, uint32_t xid)
{
	struct rrr__clnt_req *r;

	for (r = c->xid_hash[xid_bucket(xid)]; r; r = r->hnext)
		if (r->xid == xid)
			return r;
	return NULL;
}

void rrr__clnt_hash_add(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	unsigned b = xid_bucket(req->xid);

	if (req->hashed)
		return;
	req->hnext = c->xid_hash[b];
	c->xid_hash[b] = req;
	req->hashed = true;
}

void rrr__clnt_hash_del(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct rrr__clnt_req **pp;

	if (!req->hashed)
		return;
	for (pp = &c->xid_hash[xid_bucket(req->xid)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == req) {
			*pp = req->hnext;
			break;
		}
	}
	req->hnext = NULL;
	req->hashed = false;
}

/* --- queues (progress thread) ----------------------------------------------- */

static void q_append(struct rrr__clnt_req **head, struct rrr__clnt_req **tail,
		     struct rrr__clnt_req *r)
{
	r->qnext = NULL;
	if (*tail)
		(*tail)->qnext = r;
	else
		*head = r;
	*tail = r;
}

static void q_push_front(struct rrr__clnt_req **head, struct rrr__clnt_req **tail,
			 struct rrr__clnt_req *r)
{
	r->qnext = *head;
	*head = r;
	if (!*tail)
		*tail = r;
}

static struct rrr__clnt_req *q_pop(struct rrr__clnt_req **head, struct rrr__clnt_req **tail)
{
	struct rrr__clnt_req *r = *head;

	if (r) {
		*head = r->qnext;
		if (!*head)
			*tail = NULL;
		r->qnext = NULL;
	}
	return r;
}

static bool q_remove(struct rrr__clnt_req **head, struct rrr__clnt_req **tail,
		     struct rrr__clnt_req *r)
{
	struct rrr__clnt_req **pp, *prev = NULL;

	for (pp = head; *pp; prev = *pp, pp = &(*pp)->qnext) {
		if (*pp == r) {
			*pp = r->qnext;
			if (*tail == r)
				*tail = prev;
			r->qnext = NULL;
			return true;
		}
	}
	return false;
}

void rrr__clnt_complete(struct rrr_clnt *c, struct rrr__clnt_req *req, int status)
{
	if (req->state == RRR__REQ_DONE)
		return;
	if (status)
		rrr__clnt_default_error(c, req, status);
	rrr__clnt_hash_del(c, req);
	req->state = RRR__REQ_DONE;
	req->status = status;
	if (status)
		RRR_PROBE3(call_failed, c, req->xid, status);
	q_append(&c->done_head, &c->done_tail, req);
}

static void req_destroy(struct rrr__clnt_req *req)
{
	free(req->buf);
	free(req);
}

/*
 * Give a finished request back (core lock held): up to SPARE_MAX are kept,
 * with their encode buffer when it is at most SPARE_BUF_MAX bytes, for the
 * next submissions; the rest (and larger buffers) are freed. A TO_SERVER
 * payload is not copied into the buffer (DDP hook, both transports), so
 * the first size fits the common calls and the spares hold at most
 * SPARE_MAX * SPARE_BUF_MAX bytes.
 */
static void req_free_locked(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	if (req->buf && req->cap > SPARE_BUF_MAX) {
		free(req->buf);
		req->buf = NULL;
	}
	if (c->nspare >= SPARE_MAX) {
		req_destroy(req);
		return;
	}
	req->qnext = c->spare;
	c->spare = req;
	c->nspare++;
}

static void req_free(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	pthread_mutex_lock(&c->lock);
	req_free_locked(c, req);
	pthread_mutex_unlock(&c->lock);
}

/* A zeroed request, from the spares when there is one (core lock held). */
static struct rrr__clnt_req *req_get_locked(struct rrr_clnt *c)
{
	struct rrr__clnt_req *req = c->spare;
	if (!req)
		return calloc(1, sizeof(*req));
	c->spare = req->qnext;
	c->nspare--;
	uint8_t *buf = req->buf;
	size_t cap = req->cap;
	memset(req, 0, sizeof(*req));
	req->buf = buf;
	req->cap = buf ? cap : 0;
	return req;
}

void rrr__clnt_finish(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct rrr_call *call = req->call;

	call->priv = NULL;
	/* the callback's thread sees the reason in rrr_last_error() too */
	if (req->status)
		rrr__set_error(req->status, "%s", call->error);
	req->done(call, req->status, req->arg);
	pthread_mutex_lock(&c->lock);
	req->lprev->lnext = req->lnext;
	req->lnext->lprev = req->lprev;
	req->finished = true;
	pthread_cond_broadcast(&c->cond);
	if (req->waiters == 0)
		req_free_locked(c, req);
	pthread_mutex_unlock(&c->lock);
}

static void sync_done(struct rrr_call *call, int status, void *arg);

/* Deliver connection events, then run the callbacks of finished calls
 * (progress thread; no lock held while they run). With app_completions
 * they wait for rrr_clnt_run_completions() instead, except the
 * completions of synchronous calls, which only wake their waiter. */
static void run_done(struct rrr_clnt *c)
{
	struct rrr__clnt_req *req;

	rrr__clnt_deliver_events(c);
	while ((req = q_pop(&c->done_head, &c->done_tail))) {
		if (req->status == -ETIMEDOUT)
			RRR__CLNT_STAT_ADD(c, timeouts, 1);
		if (c->readyfd >= 0 && req->done != sync_done)
			rrr__clnt_defer(c, req);
		else
			rrr__clnt_finish(c, req);
	}
}

/* --- progress thread ----------------------------------------------------------- */

/* The client whose progress thread runs in this thread (NULL elsewhere). */
static _Thread_local struct rrr_clnt *tls_progress;

/*
 * Wake the progress thread. A submission from the progress thread itself (a
 * completion callback that issues the next call, the common pipelined case)
 * needs no eventfd round trip: the thread notes it and, unless collect()
 * has picked the submission up already, polls without sleeping once. A
 * group member goes on its thread's kick list (clnt_group.c). Otherwise
 * the eventfd is written only while the thread waits or is about to:
 * wake_req tells a thread that is still busy to look once more before it
 * sleeps (progress_main), which saves a write and a read per call while
 * calls come faster than the thread sleeps.
 */
static void wake(struct rrr_clnt *c)
{
	uint64_t one = 1;

	if (tls_progress == c) {
		c->self_woken = true;
		return;
	}
	if (c->gthr) {
		rrr__clnt_group_kick(c);
		return;
	}
	atomic_store(&c->wake_req, true);
	if (!atomic_load(&c->sleeping))
		return;
	if (write(c->evfd, &one, sizeof(one)) < 0) {
		/* counter full: the thread is awake anyway */
	}
}

static void abort_req(struct rrr_clnt *c, struct rrr__clnt_req *req, int status)
{
	if (req->state == RRR__REQ_DONE || req->aborting)
		return;
	if (req->state == RRR__REQ_QUEUED) {
		q_remove(&c->pend_head, &c->pend_tail, req);
		rrr__clnt_complete(c, req, status);
		return;
	}
	req->aborting = true;
	req->status = status;
	c->ops->abort(c, req, status);
}

/* The transport lost its connection: close it (MRs recovered), then retry
 * or fail every call it held. */
static void conn_lost(struct rrr_clnt *c)
{
	struct rrr__clnt_req *held = NULL, *r;

	if (!c->connected)
		return;
	c->ops->close(c);
	c->connected = false;
	c->broken = false;
	for (unsigned b = 0; b < 256; b++) {
		while ((r = c->xid_hash[b])) {
			rrr__clnt_hash_del(c, r);
			r->qnext = held;
			held = r;
		}
	}
	RRR__CLNT_STAT_ADD(c, disconnects, 1);
	RRR_PROBE3(clnt_disconnect, c, c->host, c->port);
	if (!c->stopping) /* not for rrr_clnt_destroy() */
		rrr__clnt_event(c, RRR_CLNT_LOST, -ECONNRESET);
	while ((r = held)) {
		held = r->qnext;
		r->qnext = NULL;
		if (r->aborting) {
			rrr__clnt_complete(c, r, r->status);
		} else if (!c->stopping &&
			   (!c->opts.fail_fast || (r->call->idempotent && !r->retried))) {
			/* hard (the default): every call is re-sent after each
			 * reconnect until its own deadline; fail_fast: only
			 * idempotent calls, once */
			r->retried = true;
			r->state = RRR__REQ_QUEUED;
			r->placed = false;
			q_push_front(&c->pend_head, &c->pend_tail, r);
			RRR__CLNT_STAT_ADD(c, retransmits, 1);
		} else {
			rrr__clnt_complete(c, r, -ECONNRESET);
		}
	}
	c->next_connect_ns = rrr__clnt_now_ns(); /* first reconnect at once */
}

/* fail_fast and the server cannot be reached: every call waiting for a
 * connection fails now with -ENOTCONN, its sentence naming the reason. */
static void fail_pending(struct rrr_clnt *c, int err)
{
	struct rrr__clnt_req *r;

	while ((r = q_pop(&c->pend_head, &c->pend_tail))) {
		rrr__clnt_call_error(c, r, -ENOTCONN,
				     "not sent: %s:%s cannot be reached (%s) and the client "
				     "fails fast (fail_fast); retry when the server is back",
				     c->host, c->port, strerror(err ? -err : ENOTCONN));
		rrr__clnt_complete(c, r, -ENOTCONN);
	}
}

static void try_connect(struct rrr_clnt *c)
{
	uint64_t now = rrr__clnt_now_ns();
	int rc;

	if (c->connected || !c->pend_head)
		return;
	if (now < c->next_connect_ns) {
		/* fail_fast: a call does not wait out the pause between attempts */
		if (c->opts.fail_fast)
			fail_pending(c, c->last_connect_err);
		return;
	}
	/* bounded so timeouts and cancels are served while the server is away */
	rc = c->ops->connect(c, c->opts.connect_timeout_ms < RECONNECT_MAX_MS
				    ? c->opts.connect_timeout_ms
				    : RECONNECT_MAX_MS);
	if (rc == 0) {
		c->connected = true;
		c->backoff_ms = 0;
		RRR__CLNT_STAT_ADD(c, connects, 1);
		rrr__clnt_event(c, RRR_CLNT_RECONNECTED, 0);
		RRR_PROBE4(clnt_connect, c, c->host, c->port, c->ops->name);
		return;
	}
	RRR_PROBE4(clnt_connect_failed, c, c->host, c->port, rc);
	c->last_connect_err = rc;
	/* fail_fast: calls fail instead of waiting, so the pause stays short
	 * and a server that is back is found by the next call */
	c->backoff_ms = c->backoff_ms && !c->opts.fail_fast ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (c->backoff_ms > BACKOFF_MAX_MS)
		c->backoff_ms = BACKOFF_MAX_MS;
	c->next_connect_ns = rrr__clnt_now_ns() + (uint64_t)c->backoff_ms * 1000000ull;
	if (c->opts.fail_fast)
		fail_pending(c, rc);
}

static void send_queued(struct rrr_clnt *c)
{
	struct rrr__clnt_req *req;
	int rc;

	while (c->connected && c->pend_head) {
		req = c->pend_head;
		if (!c->ops->can_send(c)) {
			/* counted once per call that had to wait */
			if (!req->stalled) {
				req->stalled = true;
				RRR__CLNT_STAT_ADD(c, credit_stalls, 1);
			}
			return;
		}
		q_pop(&c->pend_head, &c->pend_tail);
		req->state = RRR__REQ_SENT;
		rrr__clnt_hash_add(c, req);
		rc = c->ops->send(c, req);
		if (rc == 0) {
			RRR_PROBE3(call_sent, c, req->xid, req->len);
			continue;
		}
		rrr__clnt_hash_del(c, req);
		req->state = RRR__REQ_QUEUED;
		if (rc == -EAGAIN) {
			q_push_front(&c->pend_head, &c->pend_tail, req);
			return;
		}
		if (rc == -ENOTCONN) {
			q_push_front(&c->pend_head, &c->pend_tail, req);
			conn_lost(c);
			return;
		}
		rrr__clnt_complete(c, req, rc);
	}
}

/* Send what is pending, then post it as one batch where the transport
 * batches (ops->flush): a run of calls costs one doorbell. */
static void send_pending(struct rrr_clnt *c)
{
	send_queued(c);
	if (c->connected && c->ops->flush && c->ops->flush(c) == -ENOTCONN)
		conn_lost(c);
}

/* Under the lock: move submissions to the pending queue, collect cancels
 * and expired calls (linked through qnext of a private list), and compute
 * the epoll timeout. */
static int collect(struct rrr_clnt *c, struct rrr__clnt_req **cancels,
		   struct rrr__clnt_req **expired, bool *stopping)
{
	uint64_t now = rrr__clnt_now_ns(), next = now + (uint64_t)TICK_MS * 1000000ull;
	struct rrr__clnt_req *r;
	int ms;

	*cancels = *expired = NULL;
	pthread_mutex_lock(&c->lock);
	c->self_woken = false; /* what it announced is picked up here */
	while ((r = q_pop(&c->submit_head, &c->submit_tail)))
		q_append(&c->pend_head, &c->pend_tail, r);
	for (r = c->live.lnext; r != &c->live; r = r->lnext) {
		if (r->state == RRR__REQ_DONE || r->aborting)
			continue;
		if (r->cancel_req) {
			r->anext = *cancels;
			*cancels = r;
			continue;
		}
		if (r->deadline_ns && r->deadline_ns <= now) {
			r->anext = *expired;
			*expired = r;
		} else if (r->deadline_ns && r->deadline_ns < next) {
			next = r->deadline_ns;
		}
	}
	c->ncancel = 0;
	*stopping = c->stopping;
	pthread_mutex_unlock(&c->lock);
	if (!c->connected && c->pend_head && c->next_connect_ns < next)
		next = c->next_connect_ns > now ? c->next_connect_ns : now;
	ms = (int)((next - now + 999999ull) / 1000000ull);
	return ms;
}

static void shutdown_all(struct rrr_clnt *c)
{
	struct rrr__clnt_req *r;

	pthread_mutex_lock(&c->lock);
	while ((r = q_pop(&c->submit_head, &c->submit_tail)))
		q_append(&c->pend_head, &c->pend_tail, r);
	pthread_mutex_unlock(&c->lock);
	while ((r = q_pop(&c->pend_head, &c->pend_tail)))
		rrr__clnt_complete(c, r, -ECANCELED);
	if (c->connected) {
		/* close() recovers every MR; then fail what it held */
		for (unsigned b = 0; b < 256; b++)
			for (r = c->xid_hash[b]; r; r = r->hnext)
				if (!r->aborting) {
					r->aborting = true;
					r->status = -ECANCELED;
				}
		conn_lost(c);
	}
	run_done(c);
}

/*
 * One round of a client's progress, in two halves around the wait: the
 * first moves submissions, serves cancels and timeouts, (re)connects,
 * sends and runs callbacks, then lets the transport arm and look once
 * more; RRR__CLNT_ROUND_AGAIN when that look found work (go round without
 * waiting; every 16th time through the fds too, so they are never
 * starved), RRR__CLNT_ROUND_STOP once rrr_clnt_destroy() asked (run
 * rrr__clnt_round_stop() then), else RRR__CLNT_ROUND_WAIT with *@ms how
 * long the client may sleep (0: only look at its fds). The second half
 * serves the @n ready fds of its epoll set. Run by the client's own
 * progress thread (progress_main) or a group thread (clnt_group.c), one
 * thread per client at a time.
 */
int rrr__clnt_round_begin(struct rrr_clnt *c, int *ms)
{
	struct rrr__clnt_req *cancels, *expired, *r;
	bool stopping;

	tls_progress = c;
	*ms = collect(c, &cancels, &expired, &stopping);
	if (stopping)
		return RRR__CLNT_ROUND_STOP;
	while ((r = cancels)) {
		cancels = r->anext;
		abort_req(c, r, -ECANCELED);
	}
	while ((r = expired)) {
		expired = r->anext;
		abort_req(c, r, -ETIMEDOUT);
	}
	if (c->connected && c->broken)
		conn_lost(c);
	try_connect(c);
	send_pending(c);
	if (c->connected && c->broken)
		conn_lost(c);
	run_done(c);

	/* about to sleep: let the transport arm and look once more */
	bool busy = c->self_woken;

	if (!busy && c->connected && c->ops->before_sleep) {
		int w = c->ops->before_sleep(c);

		if (w < 0)
			conn_lost(c);
		if (w != 0) {
			send_pending(c);
			run_done(c);
			if (++c->busy_rounds % 16)
				return RRR__CLNT_ROUND_AGAIN;
			busy = true;
		}
	}
	/* a callback above submitted: look at the fds, do not sleep */
	if (busy || c->self_woken)
		*ms = 0;
	return RRR__CLNT_ROUND_WAIT;
}

void rrr__clnt_round_end(struct rrr_clnt *c, const struct epoll_event *evs, int n)
{
	tls_progress = c;
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;

		if (tag == TAG_EVENTFD) {
			uint64_t v;

			if (read(c->evfd, &v, sizeof(v)) < 0) {
				/* EAGAIN: nothing to consume */
			}
			continue;
		}
		if (c->connected && c->ops->progress(c, tag) == -ENOTCONN)
			conn_lost(c);
	}
	send_pending(c);
	run_done(c);
}

void rrr__clnt_round_stop(struct rrr_clnt *c)
{
	struct rrr_clnt *was = tls_progress; /* a member whose callback destroys @c */

	tls_progress = c;
	shutdown_all(c);
	tls_progress = was == c ? NULL : was;
}

void rrr__clnt_round_leave(void)
{
	tls_progress = NULL;
}

bool rrr__clnt_on_progress(const struct rrr_clnt *c)
{
	if (c->gthr)
		return rrr__clnt_group_here(c);
	return c->thread_started && pthread_equal(pthread_self(), c->thread);
}

static void *progress_main(void *arg)
{
	struct rrr_clnt *c = arg;
	struct epoll_event evs[16];

	for (;;) {
		int ms, n, st = rrr__clnt_round_begin(c, &ms);

		if (st == RRR__CLNT_ROUND_STOP)
			break;
		if (st == RRR__CLNT_ROUND_AGAIN)
			continue;
		/* sleeping first, then wake_req (see wake()) */
		atomic_store(&c->sleeping, true);
		if (atomic_exchange(&c->wake_req, false))
			ms = 0;
		n = rrr__wait_epoll(&c->waiter, c->epfd, evs, 16, ms);
		atomic_store(&c->sleeping, false);
		rrr__clnt_round_end(c, evs, n);
	}
	rrr__clnt_round_stop(c);
	return NULL;
}

/* --- public API ---------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void clnt_free(struct rrr_clnt *c)
{
	if (c->xprt && c->ops->destroy)
		c->ops->destroy(c);
	if (c->evfd >= 0)
		close(c->evfd);
	if (c->readyfd >= 0)
		close(c->readyfd);
	if (c->epfd >= 0)
		close(c->epfd);
	while (c->spare) {
		struct rrr__clnt_req *r = c->spare;
		c->spare = r->qnext;
		req_destroy(r);
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->host);
	free(c->port);
	free(c->provider);
	free(c->provider_opts);
	free(c);
}

int rrr_clnt_create(const struct rrr_clnt_opts *opts, struct rrr_clnt **out)
{
	struct rrr_clnt *c;
	int rc;

	if (!out)
		return rrr__set_error(-EINVAL, "rrr_clnt_create: no place for the handle (out)");
	*out = NULL;
	if (!opts || !opts->host)
		return rrr__set_error(-EINVAL, "rrr_clnt_create: a server host is required");
	c = calloc(1, sizeof(*c));
	if (!c)
		return rrr__set_error(-ENOMEM, "rrr_clnt_create: out of memory");
	c->epfd = c->evfd = c->readyfd = -1;
	atomic_init(&c->sleeping, false);
	atomic_init(&c->wake_req, false);
	atomic_init(&c->kicked, false);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->live.lnext = c->live.lprev = &c->live;
	c->opts = *opts;
	if (!c->opts.transport || strcmp(c->opts.transport, "rdma") == 0) {
		c->ops = &rrr__clnt_rdma_ops;
	} else if (strcmp(c->opts.transport, "tcp") == 0) {
		c->ops = &rrr__clnt_tcp_ops;
	} else {
		rc = rrr__set_error(-EINVAL, "unknown transport '%s' (use \"rdma\" or \"tcp\")",
				    c->opts.transport);
		goto fail;
	}
	c->host = strdup(opts->host);
	c->port = strdup(opts->port ? opts->port : "20049");
	c->provider = strdup(opts->provider ? opts->provider : "soft");
	c->provider_opts = dup_or_null(opts->provider_opts);
	if (!c->host || !c->port || !c->provider || (opts->provider_opts && !c->provider_opts)) {
		rc = -ENOMEM;
		goto fail;
	}
	c->opts.host = c->host;
	c->opts.port = c->port;
	c->opts.provider = c->provider;
	c->opts.provider_opts = c->provider_opts;
	if (!c->opts.max_requests)
		c->opts.max_requests = 32;
	if (c->opts.max_requests > 1024)
		c->opts.max_requests = 1024;
	if (!c->opts.inline_send)
		c->opts.inline_send = RRR_RDMA_INLINE_PREF;
	if (!c->opts.inline_recv)
		c->opts.inline_recv = RRR_RDMA_INLINE_PREF;
	if (!c->opts.max_segs)
		c->opts.max_segs = 16;
	if (c->opts.max_segs > RRR_RDMA_MAX_CHUNK_SEGS) {
		rc = rrr__set_error(-EINVAL,
				    "max_segs %u is more than RPC-over-RDMA chunks carry here "
				    "(at most %d registrations per chunk; 0 = the default 16)",
				    c->opts.max_segs, RRR_RDMA_MAX_CHUNK_SEGS);
		goto fail;
	}
	if (!c->opts.timeout_ms)
		c->opts.timeout_ms = 30000;
	if (c->opts.connect_timeout_ms <= 0)
		c->opts.connect_timeout_ms = 10000;
	if (c->opts.wait_mode > RRR_WAIT_SPIN || c->opts.spin_us > RRR_WAIT_SPIN_US_MAX) {
		rc = rrr__set_error(-EINVAL, "wait mode %d / spin_us %u out of range (spin_us <= %u)",
				    (int)c->opts.wait_mode, c->opts.spin_us, RRR_WAIT_SPIN_US_MAX);
		goto fail;
	}
	rrr__waiter_init(&c->waiter, c->opts.wait_mode, c->opts.spin_us);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		c->next_xid = (uint32_t)(ts.tv_nsec ^ ts.tv_sec ^ (uintptr_t)c);
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->opts.app_completions)
		c->readyfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->epfd < 0 || c->evfd < 0 || (c->opts.app_completions && c->readyfd < 0)) {
		rc = rrr__set_error(-errno, "rrr_clnt_create: cannot create the client's epoll "
					    "set or eventfd: %s (raise ulimit -n?)",
				    strerror(errno));
		goto fail;
	}
	rc = rrr__clnt_watch(c, c->evfd, EPOLLIN, TAG_EVENTFD);
	if (rc)
		goto fail;
	rc = c->ops->create(c);
	if (rc)
		goto fail;
	rc = c->ops->connect(c, c->opts.connect_timeout_ms);
	if (rc) {
		RRR_PROBE4(clnt_connect_failed, c, c->host, c->port, rc);
		goto fail;
	}
	c->connected = true;
	RRR__CLNT_STAT_SET(c, connects, 1);
	rrr__clnt_event(c, RRR_CLNT_CONNECTED, 0);
	RRR_PROBE4(clnt_connect, c, c->host, c->port, c->ops->name);
	if (c->opts.group) {
		rc = rrr__clnt_group_join(c->opts.group, c);
		if (rc) {
			c->ops->close(c);
			goto fail;
		}
	} else {
		rc = pthread_create(&c->thread, NULL, progress_main, c);
		if (rc) {
			rc = rrr__set_error(-rc,
					    "rrr_clnt_create: cannot start the progress thread: %s",
					    strerror(rc));
			c->ops->close(c);
			goto fail;
		}
		c->thread_started = true;
	}
	*out = c;
	return 0;
fail:
	if (rc == -ENOMEM)
		rrr__set_error(rc, "rrr_clnt_create: out of memory");
	clnt_free(c);
	return rc;
}

void rrr_clnt_destroy(struct rrr_clnt *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	wake(c);
	if (c->thread_started)
		pthread_join(c->thread, NULL);
	if (c->gthr && rrr__clnt_group_here(c)) {
		rrr__clnt_group_leave_here(c); /* a callback of another member */
	} else if (c->gthr) {
		/* its group thread runs the last round, then lets go of it */
		pthread_mutex_lock(&c->lock);
		while (!c->group_left)
			pthread_cond_wait(&c->cond, &c->lock);
		pthread_mutex_unlock(&c->lock);
	}
	/* app_completions: the -ECANCELED callbacks run here */
	if (c->readyfd >= 0 && !rrr__clnt_in_run(c))
		(void)rrr_clnt_run_completions(c, 0);
	clnt_free(c);
}

int rrr_clnt_call_async(struct rrr_clnt *c, struct rrr_call *call, rrr_call_done_fn done, void *arg)
{
	struct rrr__clnt_req *req;
	int timeout, rc;

	if (call)
		call->error[0] = '\0';
	if (!c || !call || !done)
		return rrr__clnt_submit_error(c, call, -EINVAL,
					      "rrr_clnt_call_async: the client, the call and "
					      "the callback are required");
	if (call->ddp != RRR_DDP_NONE && call->ddp != RRR_DDP_TO_SERVER &&
	    call->ddp != RRR_DDP_FROM_SERVER)
		return rrr__clnt_submit_error(c, call, -EINVAL,
					      "call %u/%u/%u: ddp %d is not an enum rrr_ddp_dir",
					      call->prog, call->vers, call->proc, (int)call->ddp);
	if ((call->npayload && !call->payload) || call->npayload > RRR_XDR_PAYLOAD_MAX_IOV)
		return rrr__clnt_submit_error(c, call, -EINVAL,
					      "call %u/%u/%u: payload of %u pieces (at most "
					      "RRR_XDR_PAYLOAD_MAX_IOV = %d, and not NULL): "
					      "merge adjacent pieces or split the I/O",
					      call->prog, call->vers, call->proc, call->npayload,
					      RRR_XDR_PAYLOAD_MAX_IOV);
	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		pthread_mutex_unlock(&c->lock);
		return rrr__clnt_submit_error(c, call, -ESHUTDOWN,
					      "call %u/%u/%u: the client is being destroyed",
					      call->prog, call->vers, call->proc);
	}
	req = req_get_locked(c);
	if (!req) {
		pthread_mutex_unlock(&c->lock);
		return rrr__clnt_submit_error(c, call, -ENOMEM,
					      "call %u/%u/%u: out of memory for the request",
					      call->prog, call->vers, call->proc);
	}
	req->xid = c->next_xid++;
	pthread_mutex_unlock(&c->lock);
	req->clnt = c;
	req->call = call;
	req->done = done;
	req->arg = arg;
	call->rpc_stat = 0;
	call->payload_len = 0;

	rc = rrr__clnt_encode_call(c, req);
	if (rc) {
		bool mismatch = req->payload_mismatch;

		req_free(c, req);
		if (mismatch)
			return rrr__clnt_submit_error(
			    c, call, -EINVAL,
			    "call %u/%u/%u: the payload the encode callback encoded is not "
			    "call.payload (or it encoded none): declare it once, in struct "
			    "rrr_call, and encode it with rrr_xdr_encode_payload(xdr, NULL, 0, 0)",
			    call->prog, call->vers, call->proc);
		if (rc == -EMSGSIZE)
			return rrr__clnt_submit_error(
			    c, call, rc,
			    "call %u/%u/%u: the arguments do not fit (at most %u bytes "
			    "besides the payload over RDMA, %u in all over TCP): split the "
			    "request",
			    call->prog, call->vers, call->proc, RRR__CLNT_ENCODE_MAX_RDMA, RRR__CLNT_ENCODE_MAX_TCP);
		return rrr__clnt_submit_error(c, call, rc,
					      "call %u/%u/%u: encoding the arguments failed: %s",
					      call->prog, call->vers, call->proc, strerror(-rc));
	}
	timeout = call->timeout_ms ? call->timeout_ms : c->opts.timeout_ms;
	if (timeout > 0)
		req->deadline_ns = rrr__clnt_now_ns() + (uint64_t)timeout * 1000000ull;

	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		req_free_locked(c, req);
		pthread_mutex_unlock(&c->lock);
		return rrr__clnt_submit_error(c, call, -ESHUTDOWN,
					      "call %u/%u/%u: the client is being destroyed",
					      call->prog, call->vers, call->proc);
	}
	call->priv = req;
	req->lnext = &c->live;
	req->lprev = c->live.lprev;
	c->live.lprev->lnext = req;
	c->live.lprev = req;
	q_append(&c->submit_head, &c->submit_tail, req);
	RRR__CLNT_STAT_ADD(c, calls, 1);
	pthread_mutex_unlock(&c->lock);
	wake(c);
	return 0;
}

struct sync_wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int status;
};

static void sync_done(struct rrr_call *call, int status, void *arg)
{
	struct sync_wait *w = arg;

	(void)call;
	pthread_mutex_lock(&w->m);
	w->status = status;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

int rrr_clnt_call(struct rrr_clnt *c, struct rrr_call *call)
{
	struct sync_wait w = {.done = false};
	int rc;

	if (!c)
		return rrr__clnt_submit_error(c, call, -EINVAL, "rrr_clnt_call: no client");
	if (rrr__clnt_on_progress(c))
		return rrr__clnt_submit_error(c, call, -EDEADLK,
					      "rrr_clnt_call from a completion callback would wait "
					      "for itself: use rrr_clnt_call_async()");
	pthread_mutex_init(&w.m, NULL);
	pthread_cond_init(&w.cv, NULL);
	rc = rrr_clnt_call_async(c, call, sync_done, &w);
	if (rc == 0) {
		pthread_mutex_lock(&w.m);
		while (!w.done)
			pthread_cond_wait(&w.cv, &w.m);
		pthread_mutex_unlock(&w.m);
		rc = w.status;
		/* the reason reaches the waiting thread's rrr_last_error() */
		if (rc)
			rrr__set_error(rc, "%s", call->error);
	}
	pthread_cond_destroy(&w.cv);
	pthread_mutex_destroy(&w.m);
	return rc;
}

int rrr_clnt_cancel(struct rrr_clnt *c, struct rrr_call *call)
{
	struct rrr__clnt_req *r;

	if (!c || !call)
		return rrr__set_error(-EINVAL, "rrr_clnt_cancel: the client and the call are required");
	if (rrr__clnt_on_progress(c) || rrr__clnt_in_run(c))
		return rrr__set_error(-EDEADLK, "rrr_clnt_cancel from a completion callback would "
						"wait for itself");
	pthread_mutex_lock(&c->lock);
	for (r = c->live.lnext; r != &c->live; r = r->lnext)
		if (r->call == call && !r->finished)
			break;
	if (r == &c->live) {
		pthread_mutex_unlock(&c->lock);
		return rrr__set_error(-ENOENT, "rrr_clnt_cancel: the call is not outstanding "
					       "(already completed, or never submitted)");
	}
	r->cancel_req = true;
	r->waiters++;
	c->ncancel++;
	pthread_mutex_unlock(&c->lock);
	wake(c);
	pthread_mutex_lock(&c->lock);
	while (!r->finished) {
		/* app_completions: its callback may be waiting in the ready
		 * queue; run what is ready here rather than wait for it */
		if (c->ready_head) {
			pthread_mutex_unlock(&c->lock);
			(void)rrr_clnt_run_completions(c, 0);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	if (--r->waiters == 0)
		req_free_locked(c, r);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void rrr_clnt_stats(struct rrr_clnt *c, struct rrr_xprt_stats *st)
{
	if (!c || !st)
		return;
	rrr__xprt_stats_load(st, &c->stats);
}

uint32_t rrr_clnt_max_payload(const struct rrr_clnt *c)
{
	if (!c)
		return 0;
	return c->ops->max_payload(c);
}
