/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_events.c - where a client's completions and connection
 * events run: on the library's progress thread (the default), or on the
 * application's own thread (opts.app_completions: "your loop or ours").
 *
 * Normal operation, default. The progress thread finishes a call (status
 * known, every MR invalid) and runs its callback itself (clnt.c,
 * run_done); connection events recorded by the core (first connection,
 * loss, reconnect) are delivered on the same thread just before the
 * callbacks of that round, so a LOST event comes before the -ECONNRESET
 * completions it caused.
 *
 * Your loop. With app_completions the progress thread still owns the wire
 * (sending, polling, invalidation, decoding), but instead of running a
 * callback it appends the finished request to the ready queue and makes an
 * eventfd (rrr_clnt_fd) readable. The application puts that fd in its own
 * poll/epoll set and calls rrr_clnt_run_completions(), which runs the
 * ready events and callbacks on the application's thread, oldest first,
 * with no library lock held. Synchronous calls are answered inside the
 * library (their completion only wakes the waiting thread), so
 * rrr_clnt_call() works in both modes; rrr_clnt_cancel() and
 * rrr_clnt_destroy() run ready completions themselves while they wait, so
 * they cannot wait for a callback nobody would run.
 *
 * Bounds. Events are kept in a ring of RRR__CLNT_EV_MAX; a program that
 * never delivers them loses the oldest (the generation counter stays
 * exact: rrr_clnt_generation). The ready queue holds at most the calls
 * outstanding, which the caller bounds.
 *
 * Recovery: none of its own; a request in the ready queue is finished
 * (MRs invalid), only its callback is pending.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include <rrr/client.h>

#include "client/clnt_impl.h"
#include "common/rrr_impl.h"

/* The client whose rrr_clnt_run_completions() runs on this thread. */
static _Thread_local const struct rrr_clnt *tls_running;

bool rrr__clnt_in_run(const struct rrr_clnt *c)
{
	return tls_running == c;
}

static void ready_signal(struct rrr_clnt *c)
{
	uint64_t one = 1;

	if (write(c->readyfd, &one, sizeof(one)) < 0) {
		/* counter full: it is readable anyway */
	}
}

void rrr__clnt_event(struct rrr_clnt *c, enum rrr_clnt_conn_event_type type, int reason)
{
	struct rrr_clnt_conn_event *e;

	if (type != RRR_CLNT_LOST)
		__atomic_add_fetch(&c->generation, 1, __ATOMIC_RELAXED);
	if (!c->opts.conn_cb)
		return;
	pthread_mutex_lock(&c->lock);
	if (c->ev_n == RRR__CLNT_EV_MAX) { /* drop the oldest */
		c->ev_head = (c->ev_head + 1) % RRR__CLNT_EV_MAX;
		c->ev_n--;
	}
	e = &c->ev[(c->ev_head + c->ev_n) % RRR__CLNT_EV_MAX];
	e->type = type;
	e->generation = __atomic_load_n(&c->generation, __ATOMIC_RELAXED);
	e->reason = type == RRR_CLNT_LOST ? reason : 0;
	c->ev_n++;
	pthread_mutex_unlock(&c->lock);
	if (c->readyfd >= 0)
		ready_signal(c);
}

/* Pop the oldest event (core lock held); false when none. */
static bool ev_pop(struct rrr_clnt *c, struct rrr_clnt_conn_event *out)
{
	if (!c->ev_n)
		return false;
	*out = c->ev[c->ev_head];
	c->ev_head = (c->ev_head + 1) % RRR__CLNT_EV_MAX;
	c->ev_n--;
	return true;
}

static unsigned deliver_events(struct rrr_clnt *c)
{
	struct rrr_clnt_conn_event e;
	unsigned n = 0;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool got = ev_pop(c, &e);
		pthread_mutex_unlock(&c->lock);
		if (!got)
			return n;
		c->opts.conn_cb(c, &e, c->opts.conn_arg);
		n++;
	}
}

void rrr__clnt_deliver_events(struct rrr_clnt *c)
{
	if (c->opts.conn_cb && c->readyfd < 0)
		(void)deliver_events(c);
}

void rrr__clnt_defer(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	pthread_mutex_lock(&c->lock);
	req->qnext = NULL;
	if (c->ready_tail)
		c->ready_tail->qnext = req;
	else
		c->ready_head = req;
	c->ready_tail = req;
	pthread_cond_broadcast(&c->cond); /* a canceller may run it */
	pthread_mutex_unlock(&c->lock);
	ready_signal(c);
}

int rrr_clnt_fd(const struct rrr_clnt *c)
{
	if (!c || c->readyfd < 0)
		return rrr__set_error(-EINVAL, "rrr_clnt_fd: the client was not created with "
					       "opts.app_completions");
	return c->readyfd;
}

int rrr_clnt_run_completions(struct rrr_clnt *c, unsigned max)
{
	struct rrr__clnt_req *req;
	unsigned n = 0;
	uint64_t v;

	if (!c || c->readyfd < 0)
		return rrr__set_error(-EINVAL, "rrr_clnt_run_completions: the client was not "
					       "created with opts.app_completions");
	if (tls_running == c)
		return rrr__set_error(-EDEADLK, "rrr_clnt_run_completions called from one of "
						"its own callbacks");
	/* consume the signal first: what is queued after this re-arms it */
	if (read(c->readyfd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled, look anyway */
	}
	tls_running = c;
	if (c->opts.conn_cb)
		n += deliver_events(c);
	while (!max || n < max) {
		pthread_mutex_lock(&c->lock);
		req = c->ready_head;
		if (req) {
			c->ready_head = req->qnext;
			if (!c->ready_head)
				c->ready_tail = NULL;
			req->qnext = NULL;
		}
		pthread_mutex_unlock(&c->lock);
		if (!req)
			break;
		rrr__clnt_finish(c, req);
		n++;
	}
	tls_running = NULL;
	pthread_mutex_lock(&c->lock);
	bool more = c->ready_head || c->ev_n;
	pthread_mutex_unlock(&c->lock);
	if (more)
		ready_signal(c);
	return (int)n;
}

uint64_t rrr_clnt_generation(const struct rrr_clnt *c)
{
	return c ? __atomic_load_n(&c->generation, __ATOMIC_RELAXED) : 0;
}
