/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/cq.c - completion queues: the ring, its notification, and
 * the count of QP sockets in the CQ's epoll set.
 *
 * Normal operation: a CQ is a ring of struct rrr_wc under cq->lock (a leaf
 * lock: QPs push completions while holding their own lock). The CQ's file
 * descriptor is an epoll instance holding an eventfd (written when a
 * completion arrives on an armed CQ) and, unless the device runs a
 * progress thread, the sockets of every QP that uses this CQ.
 *
 * The eventfd is made by the first notification, not with the CQ: most
 * completions are found by the poller's own progress step, which needs no
 * event (progress.c), so a connection that sits idle never needs one, and
 * a server holding thousands of them keeps two descriptors per connection
 * (socket and CQ epoll) instead of three. Where no eventfd can be made
 * (the fd limit reached), the device's always-readable eventfd joins the
 * CQ's epoll set until the next ack instead: no notification is lost, at
 * worst a wake-up is early. So the fd
 * becomes readable both when completions may be pending and when a socket
 * needs service, and rrr_cq_poll() makes progress (progress.c: when the
 * ring is empty it steps the QPs whose sockets are ready, then drains the
 * ring). This file is at the bottom of the QP files: the engines and
 * qp_state.c push completions and count sockets in here, and it calls
 * nothing of theirs (docs/soft-provider.md, "Files").
 *
 * Recovery: a full ring drops the completion and marks the CQ overflowed;
 * rrr_cq_poll() then returns -EOVERFLOW once the ring is drained (size CQs
 * for all WRs, as with verbs). Destroying a CQ still used by a QP fails
 * with -EBUSY.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "soft.h"

int rrr__soft_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out)
{
	struct soft_cq *cq;

	if (depth > 1u << 20)
		return rrr__set_error(-EINVAL, "soft: CQ depth %u too large", depth);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ring = calloc(depth, sizeof(*cq->ring));
	cq->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!cq->ring || cq->ep < 0) {
		int err = errno ? -errno : -ENOMEM;

		if (cq->ep >= 0)
			close(cq->ep);
		free(cq->ring);
		free(cq);
		return err;
	}
	atomic_init(&cq->evfd, -1);
	soft_prefault(cq->ring, (size_t)depth * sizeof(*cq->ring));
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->prog_lock, NULL);
	pthread_mutex_init(&cq->ev_lock, NULL);
	cq->depth = depth;
	cq->base.dev = dev;
	atomic_fetch_add(&soft_dev(dev)->nobj, 1);
	*out = &cq->base;
	return 0;
}

int rrr__soft_cq_destroy(struct rrr_cq *base)
{
	struct soft_cq *cq = soft_cq(base);

	if (atomic_load(&cq->refs))
		return rrr__set_error(-EBUSY, "soft: CQ still used by a QP");
	close(cq->ep);
	if (atomic_load(&cq->evfd) >= 0)
		close(atomic_load(&cq->evfd));
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->prog_lock);
	pthread_mutex_destroy(&cq->ev_lock);
	atomic_fetch_sub(&soft_dev(base->dev)->nobj, 1);
	free(cq->ring);
	free(cq);
	return 0;
}

/* The CQ's eventfd, made and added to its epoll set on first use; -1 when
 * no descriptor is left, and then the device's always-readable eventfd is
 * in the set (cq->ready_in) until the next ack. */
static int cq_evfd(struct soft_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int fd = atomic_load_explicit(&cq->evfd, memory_order_acquire);

	if (fd >= 0)
		return fd;
	pthread_mutex_lock(&cq->ev_lock);
	fd = atomic_load_explicit(&cq->evfd, memory_order_relaxed);
	if (fd < 0) {
		fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (fd >= 0 && epoll_ctl(cq->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0)
			atomic_store_explicit(&cq->evfd, fd, memory_order_release);
	}
	if (fd < 0 && !atomic_load(&cq->ready_in) &&
	    epoll_ctl(cq->ep, EPOLL_CTL_ADD, soft_dev(cq->base.dev)->ready_fd, &ev) == 0)
		atomic_store(&cq->ready_in, true);
	pthread_mutex_unlock(&cq->ev_lock);
	return fd;
}

void rrr__soft_cq_notify(struct soft_cq *cq)
{
	uint64_t one = 1;
	int fd = cq_evfd(cq);

	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
		/* counter saturated: the fd is readable anyway */
	}
	atomic_store(&cq->ev_set, true);
}

void rrr__soft_cq_push(struct soft_cq *cq, const struct rrr_wc *wc)
{
	bool wake = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->depth) {
		cq->overflow = true;
	} else {
		cq->ring[(cq->head + cq->count) % cq->depth] = *wc;
		cq->count++;
	}
	if (cq->armed) {
		cq->armed = false;
		if (cq->quiet)
			cq->quieted = true; /* the poller takes it (see progress()) */
		else
			wake = true;
	}
	pthread_mutex_unlock(&cq->lock);
	if (wake)
		rrr__soft_cq_notify(cq);
}

void rrr__soft_cq_qp_add(struct soft_cq *cq, struct soft_qp *qp)
{
	pthread_mutex_lock(&cq->lock);
	cq->nqp++;
	cq->solo = cq->nqp == 1 ? qp : NULL;
	pthread_mutex_unlock(&cq->lock);
}

/* Called with the CQ's prog_lock held (rrr__soft_qp_detach), so no progress
 * step still uses the QP when it returns. */
void rrr__soft_cq_qp_del(struct soft_cq *cq, struct soft_qp *qp)
{
	pthread_mutex_lock(&cq->lock);
	if (cq->nqp)
		cq->nqp--;
	if (cq->solo == qp || cq->nqp != 1)
		cq->solo = NULL; /* with one left, progress finds it through epoll */
	pthread_mutex_unlock(&cq->lock);
}

int rrr__soft_cq_fd(struct rrr_cq *base)
{
	return soft_cq(base)->ep;
}

int rrr__soft_cq_ack_event(struct rrr_cq *base)
{
	struct soft_cq *cq = soft_cq(base);
	uint64_t v;
	int fd;

	/* most wake-ups come from a socket, not the eventfd: skip the read
	 * that could only say EAGAIN (a write racing this is read next time;
	 * the fd stays readable until then) */
	if (!atomic_exchange(&cq->ev_set, false))
		return 0;
	if (atomic_load_explicit(&cq->ready_in, memory_order_relaxed)) {
		/* the fallback: the device's eventfd leaves the set; a
		 * notification after this adds it again, and one before it
		 * pushed its completion first, for the caller's next poll */
		pthread_mutex_lock(&cq->ev_lock);
		if (atomic_load(&cq->ready_in) &&
		    epoll_ctl(cq->ep, EPOLL_CTL_DEL, soft_dev(base->dev)->ready_fd, NULL) == 0)
			atomic_store(&cq->ready_in, false);
		pthread_mutex_unlock(&cq->ev_lock);
	}
	fd = atomic_load_explicit(&cq->evfd, memory_order_acquire);
	if (fd >= 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/* Like ibv_req_notify_cq: only a completion added after the arm notifies;
 * completions already in the ring are found by the poll every caller makes
 * after arming (rrr_cq_arm's contract), so they cost no eventfd write. */
int rrr__soft_cq_arm(struct rrr_cq *base)
{
	struct soft_cq *cq = soft_cq(base);

	pthread_mutex_lock(&cq->lock);
	cq->armed = true;
	/* The poll that follows an arm catches completions that came before
	 * it. When the one QP's receive engine stopped for want of socket
	 * bytes, with nothing staged, a progress step can only find what the
	 * socket holds, and a socket with bytes keeps the CQ fd readable (the
	 * sockets are in its epoll set, level-triggered), so the caller's
	 * sleep ends at once; a send that did not fit waits for EPOLLOUT the
	 * same way. That poll then checks the ring only: one read() that would
	 * say EAGAIN fewer per wait. Only when this CQ is the QP's send and
	 * receive CQ: a step on another CQ could be taking the QP's socket
	 * bytes into its stage right now, and this poll would not wait for it
	 * on qp->lock as a step would. (A caller that sleeps without that
	 * poll, against rrr_cq_arm's contract, costs itself one extra wake-up:
	 * its first poll checks the ring only, and the socket stays readable.)
	 * The solo QP stays alive while it is solo (rrr__soft_cq_qp_del runs
	 * under cq->lock). */
	cq->skip_step = cq->solo && cq->solo->scq == cq && cq->solo->rcq == cq &&
			atomic_load_explicit(&cq->solo->rx_idle, memory_order_acquire);
	pthread_mutex_unlock(&cq->lock);
	return 0;
}
