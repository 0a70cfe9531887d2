/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/progress.c - who drives a QP's socket, and how a QP
 * that goes away waits until nobody does.
 *
 * Normal operation: one progress step of a QP (rrr__soft_qp_progress)
 * takes qp->lock and runs the receive engine (rx.c) when the socket is
 * readable (or hung up), then the transmit engine (tx.c). It is run by
 * one of two drivers:
 *
 * - caller-driven (the default): rrr_cq_poll(). The CQ's fd is an epoll
 *   set holding the CQ's eventfd and the sockets of the QPs that use it
 *   (cq.c); when the ring is empty the poll collects ready sockets
 *   without waiting and steps each QP, then drains the ring (completions
 *   already there are returned without a system call; the sockets are
 *   served by the first poll that finds it empty, and the fd stays
 *   readable meanwhile). Pollers of one CQ share the progress work
 *   through cq->prog_lock (try-lock: a second poller just drains the
 *   ring).
 * - progress_thread=1: one device thread (rrr__soft_progress_main) sleeps
 *   in epoll_wait() on the device's set (every QP socket plus a wake-up
 *   eventfd), steps ready QPs taking only each QP's lock, and counts
 *   finished passes (dev->epoch). No lock is held across epoll_wait() (a
 *   mutex held there starved destroyers). It wakes at least every 20 ms
 *   to notice a stop request.
 *
 * A QP leaving (rrr__soft_qp_detach, qp.c) takes its CQs' prog_locks, or
 * with the thread leaves the device's set and waits for two more passes
 * (rrr__soft_dev_quiesce), so no driver ever touches a freed QP.
 *
 * Calls run one way: device.c (ops table, thread start), cm.c and qp.c
 * call into this file; it calls down into rx.c, tx.c and the CQ ring.
 *
 * Locking: cq->prog_lock (try-lock, only under cq->lock) -> qp->lock ->
 * cq->lock (soft.h). Recovery: none here; the engines move a broken QP
 * to error themselves.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "soft.h"

void rrr__soft_qp_progress(struct soft_qp *qp, uint32_t events)
{
	pthread_mutex_lock(&qp->lock);
	if (qp->state == SOFT_QP_RTS) {
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			rrr__soft_rx(qp);
		if (qp->state == SOFT_QP_RTS)
			rrr__soft_tx(qp);
	}
	pthread_mutex_unlock(&qp->lock);
}

/*
 * One caller-driven progress step, run by rrr__soft_cq_poll with the CQ's
 * prog_lock held (taken, with cq->quiet set and the solo QP read, in the
 * critical section that found the ring empty: one cq->lock round trip per
 * step). Completions it produces are pushed while cq->quiet is set: they
 * disarm the CQ like any completion but write no event, because the
 * poller that runs this step drains the ring right after it and returns
 * them (rrr__soft_cq_poll writes the event after all if it leaves some
 * behind). That saves an eventfd write, an extra epoll_wait and its read
 * for every completion found by polling.
 *
 * A CQ serving one QP (one connection, the usual case) skips the
 * epoll_wait: the step drives that QP's receive engine directly, whose
 * first read says EAGAIN when there is nothing, at the cost epoll_wait had,
 * and returns data at once when there is.
 */
static void progress(struct soft_qp *solo, struct soft_cq *cq)
{
	struct epoll_event evs[32];
	int n;

	if (solo) {
		rrr__soft_qp_progress(solo, EPOLLIN);
		return;
	}
	n = epoll_wait(cq->ep, evs, 32, 0);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.ptr)
			rrr__soft_qp_progress(evs[i].data.ptr, evs[i].events);
	}
}

int rrr__soft_cq_poll(struct rrr_cq *base, struct rrr_wc *wc, int n)
{
	struct soft_cq *cq = soft_cq(base);
	struct soft_dev *dev = soft_dev(base->dev);
	int k = 0;

	/* the ring first: completions already there (REG_MR and LOCAL_INV
	 * complete during post_send) cost no epoll_wait; the sockets are
	 * driven only when the ring is empty, which it must become before a
	 * caller can be waiting on anything else */
	pthread_mutex_lock(&cq->lock);
	bool skip = cq->skip_step;

	cq->skip_step = false;
	if (!cq->count && !dev->progress_thread && !skip &&
	    pthread_mutex_trylock(&cq->prog_lock) == 0) {
		/* prog_lock is only tried under cq->lock, never waited for,
		 * so taking it here cannot deadlock against qp_detach (which
		 * holds it and then takes cq->lock); quiet and solo are set
		 * and read in the same critical section as the ring check */
		struct soft_qp *solo = cq->solo;

		cq->quiet = true;
		pthread_mutex_unlock(&cq->lock);
		progress(solo, cq);
		pthread_mutex_lock(&cq->lock);
		cq->quiet = false;
		pthread_mutex_unlock(&cq->prog_lock);
	}
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->depth;
		cq->count--;
	}
	if (!cq->count)
		cq->head = 0; /* reuse the first entries (see rrr__soft_sq_complete) */
	if (!k && cq->overflow) {
		cq->overflow = false;
		pthread_mutex_unlock(&cq->lock);
		return rrr__set_error(-EOVERFLOW, "soft: completion queue overflowed");
	}
	/* a notification taken by our progress step for completions we are
	 * not returning: deliver it after all */
	bool late = cq->quieted && cq->count;

	cq->quieted = false;
	pthread_mutex_unlock(&cq->lock);
	if (late)
		rrr__soft_cq_notify(cq);
	return k;
}

void *rrr__soft_progress_main(void *arg)
{
	struct soft_dev *d = arg;
	struct epoll_event evs[32];

	rrr__soft_rcu_thread();
	atomic_store(&d->thr_ready, true);
	while (!atomic_load(&d->thr_stop)) {
		int n = epoll_wait(d->ep, evs, 32, 20);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr) {
				rrr__soft_qp_progress(evs[i].data.ptr, evs[i].events);
			} else {
				uint64_t v;

				if (read(d->wake_fd, &v, sizeof(v)) < 0) {
					/* already drained */
				}
			}
		}
		/* one full pass done: events collected before a QP left the
		 * set are all handled (rrr__soft_dev_quiesce waits for this) */
		atomic_fetch_add(&d->epoch, 1);
	}
	return NULL;
}

void rrr__soft_dev_quiesce(struct soft_dev *d)
{
	uint64_t e, one = 1;

	if (!d->thr_running || pthread_equal(pthread_self(), d->thr))
		return;
	e = atomic_load(&d->epoch);
	/* two increments: the pass running now ends, then a pass that began
	 * after the caller removed its socket */
	while (atomic_load(&d->epoch) < e + 2) {
		if (write(d->wake_fd, &one, sizeof(one)) < 0) {
			/* counter saturated: the thread is awake anyway */
		}
		usleep(200);
	}
}
