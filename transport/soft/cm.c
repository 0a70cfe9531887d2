/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/cm.c - connection management over TCP with MPA setup.
 *
 * Normal operation: an rrr_cm is an epoll instance (its fd) holding an
 * eventfd that is readable while events are queued, plus the sockets of
 * ids in a setup phase. rrr_cm_get_event() first drives those sockets
 * without blocking (accept, connect completion, MPA frames), then hands
 * out the oldest queued event.
 *
 *   active:  resolve -> RESOLVED (numeric; no lookup) ; connect: TCP connect
 *            (non-blocking) -> send MPA Request (rev 2, IRD/ORD, private
 *            data) -> read Reply -> send RTR (zero-length Write) -> the
 *            socket goes to the QP -> ESTABLISHED  (or REJECTED/UNREACHABLE)
 *   passive: listen -> accept TCP -> read Request -> CONNECT_REQUEST (new
 *            id) ; accept: send Reply -> read RTR -> socket to the QP ->
 *            ESTABLISHED ; reject: Reply with the R bit and private data.
 *
 * The QP never sends before the RTR exchange is over (it is IDLE until the
 * socket is attached), as RFC 6581 requires of the responder. A Request of
 * MPA revision 1 (RFC 5044; no IRD/ORD, no RTR) is accepted in revision 1:
 * CONNECT_REQUEST carries ird = ord = 0 (not negotiated: the QP keeps its
 * own), the Reply (or reject) is revision 1, the socket goes to the QP
 * right after the Reply, and the QP sends nothing - no FPDU, no REG_MR or
 * other send-queue work is started - until it received the initiator's
 * first valid FPDU, as RFC 5044 requires of a responder. Requests of any
 * other revision, or of revision 2 without enhanced setup, are rejected
 * (revision 2 reject) and the connection is closed. As initiator we
 * always speak revision 2 with enhanced setup.
 * Markers are refused: a Request asking for them is rejected and the
 * connection closed; a Reply asking for them fails with UNREACHABLE
 * (-EPROTO) and rrr_last_error() explains.
 *
 * Locking: cm->lock serialises setup progress and id state; it is taken
 * before a QP's lock (handover). The event queue has its own leaf lock
 * (cm->evlock) because QPs report DISCONNECTED while holding their lock.
 *
 * Recovery: a broken setup (EOF, bad key, bad length, bad RTR) closes the
 * socket; the active side gets UNREACHABLE, an unreported passive
 * connection just disappears. rrr_cm_id_destroy() removes queued events
 * that name the id, so no event ever points at freed memory.
 *
 * Hostile or stalled peers (rrr_cm_set_limits): every passive connection
 * in set-up - accepted, no MPA Request yet (REQ_WAIT), or answered and
 * waiting for the RTR (REP_SENT) - has a deadline (setup_timeout_ms,
 * default 10 s). While any exists, a periodic timerfd in the CM's epoll
 * set makes the CM fd readable, and rrr_cm_get_event() closes the ones
 * past their deadline: unreported ones silently, accepted ones with
 * UNREACHABLE (-ETIMEDOUT). At most max_setup (default 256) are in set-up
 * at once: accepting one more first closes the oldest that sent no
 * Request (evicted), so a flood of idle TCP connects costs each of them
 * its slot, not a well-behaved peer, whose Request arrives at once. When
 * accept() fails for lack of file descriptors the oldest such connection
 * is closed to make room; with none, a reserved descriptor is given up to
 * accept the connection and close it at once (shed), so the backlog never
 * fills with connections nobody will serve.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "soft.h"

struct cm_ev {
	struct cm_ev *next;
	struct rrr_cm_event ev;
};

struct soft_cm {
	struct rrr_cm base;
	pthread_mutex_t lock;
	pthread_mutex_t evlock;
	int ep, evfd;
	struct cm_ev *head, *tail;
	struct soft_id *ids; /* all ids of this cm */
	/* set-up limits (cm->lock) */
	int tfd;	/* periodic timer while nsetup > 0, or -1 */
	bool timer_on;
	int reserve_fd; /* given up to shed a connection when out of fds */
	uint32_t setup_timeout_ms, max_setup, nsetup;
	struct rrr_cm_limit_stats lst;
};

enum id_state {
	ID_IDLE = 0,
	ID_LISTEN,
	ID_RESOLVED,
	ID_CONNECTING,
	ID_REQ_SENT,
	ID_REQ_WAIT,
	ID_REQ_PENDING,
	ID_REP_SENT,
	ID_ESTABLISHED,
	ID_CLOSED,
};

struct soft_id {
	struct rrr_cm_id base;
	struct soft_cm *cm;
	struct soft_id *next, *prev;
	struct soft_id *listener;
	enum id_state state;
	int fd;
	bool in_ep;
	bool disc_posted;
	bool crc;
	bool rev1;                  /* passive: the peer's Request was MPA rev 1 */
	struct sockaddr_storage dst;
	socklen_t dstlen;
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX + 8];
	size_t have, need;
	struct soft_mpa_rr *peer;   /* received Request/Reply */
	struct soft_mpa_rr *mine;   /* our Request (active side) */
	bool in_setup;              /* passive, set-up not finished: counted in nsetup */
	uint64_t setup_deadline;    /* CLOCK_MONOTONIC ns */
};

static struct soft_cm *soft_cm(struct rrr_cm *c)
{
	return container_of(c, struct soft_cm, base);
}

struct soft_id *rrr__soft_id_of(struct rrr_cm_id *id)
{
	return container_of(id, struct soft_id, base);
}

static void push_ev(struct soft_cm *cm, const struct rrr_cm_event *ev)
{
	struct cm_ev *e = malloc(sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return; /* out of memory: the event is lost; nothing better to do */
	e->ev = *ev;
	e->next = NULL;
	pthread_mutex_lock(&cm->evlock);
	if (cm->tail)
		cm->tail->next = e;
	else
		cm->head = e;
	cm->tail = e;
	if (write(cm->evfd, &one, sizeof(one)) < 0) {
		/* saturated counter: still readable */
	}
	pthread_mutex_unlock(&cm->evlock);
}

static void post(struct soft_id *id, enum rrr_cm_event_type t, int status,
		 const struct soft_mpa_rr *rr)
{
	struct rrr_cm_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = t;
	ev.id = &id->base;
	ev.listen_id = id->listener ? &id->listener->base : NULL;
	ev.status = status;
	if (rr) {
		ev.private_data_len = rr->pd_len;
		memcpy(ev.private_data, rr->pd, rr->pd_len);
		ev.ird = rr->ird;
		ev.ord = rr->ord;
	}
	push_ev(id->cm, &ev);
}

void rrr__soft_cm_conn_lost(struct soft_id *id, int status)
{
	struct soft_cm *cm = id->cm;
	bool do_post;

	pthread_mutex_lock(&cm->evlock);
	do_post = !id->disc_posted;
	id->disc_posted = true;
	pthread_mutex_unlock(&cm->evlock);
	if (do_post)
		post(id, RRR_CM_EVENT_DISCONNECTED, status, NULL);
}

static void ep_set(struct soft_id *id, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = id };

	if (id->fd < 0)
		return;
	if (!events) {
		if (id->in_ep)
			epoll_ctl(id->cm->ep, EPOLL_CTL_DEL, id->fd, &ev);
		id->in_ep = false;
		return;
	}
	epoll_ctl(id->cm->ep, id->in_ep ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, id->fd, &ev);
	id->in_ep = true;
}

static void id_link(struct soft_cm *cm, struct soft_id *id)
{
	id->next = cm->ids;
	id->prev = NULL;
	if (cm->ids)
		cm->ids->prev = id;
	cm->ids = id;
}

static void id_unlink(struct soft_cm *cm, struct soft_id *id)
{
	if (id->prev)
		id->prev->next = id->next;
	else if (cm->ids == id)
		cm->ids = id->next;
	if (id->next)
		id->next->prev = id->prev;
	id->next = id->prev = NULL;
}

/* Arm the sweep timer while connections are in set-up, disarm it after. */
static void timer_update(struct soft_cm *cm)
{
	struct itimerspec it;
	uint32_t ms;

	if (cm->tfd < 0 || (cm->nsetup > 0) == cm->timer_on)
		return;
	memset(&it, 0, sizeof(it));
	if (cm->nsetup) {
		ms = cm->setup_timeout_ms / 4;
		ms = ms < 20 ? 20 : ms > 1000 ? 1000 : ms;
		it.it_value.tv_sec = ms / 1000;
		it.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
		it.it_interval = it.it_value;
	}
	if (timerfd_settime(cm->tfd, 0, &it, NULL) == 0)
		cm->timer_on = cm->nsetup > 0;
}

static void setup_begin(struct soft_cm *cm, struct soft_id *id)
{
	if (!id->in_setup) {
		id->in_setup = true;
		cm->nsetup++;
	}
	id->setup_deadline = rrr__mono_ns() + (uint64_t)cm->setup_timeout_ms * 1000000ull;
	timer_update(cm);
}

static void setup_end(struct soft_cm *cm, struct soft_id *id)
{
	if (!id->in_setup)
		return;
	id->in_setup = false;
	cm->nsetup--;
	timer_update(cm);
}

static struct soft_id *id_new(struct soft_cm *cm, void *ctx)
{
	struct soft_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->peer = calloc(1, sizeof(*id->peer));
	if (!id->peer) {
		free(id);
		return NULL;
	}
	id->cm = cm;
	id->fd = -1;
	id->base.cm = &cm->base;
	id->base.ctx = ctx;
	id_link(cm, id);
	return id;
}

static void id_free(struct soft_cm *cm, struct soft_id *id)
{
	struct cm_ev **pp, *e;

	ep_set(id, 0);
	setup_end(cm, id);
	if (id->fd >= 0)
		close(id->fd);
	id_unlink(cm, id);
	/* drop queued events naming this id */
	pthread_mutex_lock(&cm->evlock);
	cm->tail = NULL;
	for (pp = &cm->head; (e = *pp);) {
		if (e->ev.id == &id->base || e->ev.listen_id == &id->base) {
			*pp = e->next;
			free(e);
		} else {
			cm->tail = e;
			pp = &e->next;
		}
	}
	pthread_mutex_unlock(&cm->evlock);
	free(id->peer);
	free(id->mine);
	free(id);
}

/* Write a whole small frame on a fresh socket (it fits the send buffer). */
static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void fail_active(struct soft_id *id, int status, const char *why)
{
	rrr__set_error(status, "soft: connection setup failed: %s", why);
	ep_set(id, 0);
	id->state = ID_CLOSED;
	post(id, RRR_CM_EVENT_UNREACHABLE, status, NULL);
}

static void handover(struct soft_id *id)
{
	struct soft_qp *qp = soft_qp(id->base.qp);

	ep_set(id, 0);
	setup_end(id->cm, id);
	id->state = ID_ESTABLISHED;
	/* ESTABLISHED first: attaching may already see the peer's close */
	post(id, RRR_CM_EVENT_ESTABLISHED, 0, id->peer);
	rrr__soft_qp_attach(qp, id->fd, id->crc, id->peer->ord, id->peer->ird, id->rev1);
	/* watch for the peer's close so DISCONNECTED arrives even when
	 * nobody polls the CQ (as with an RDMA CM) */
	ep_set(id, EPOLLRDHUP);
}

void rrr__soft_cm_qp_gone(struct soft_id *id)
{
	struct soft_cm *cm = id->cm;

	pthread_mutex_lock(&cm->lock);
	if (id->state == ID_ESTABLISHED)
		ep_set(id, 0);
	pthread_mutex_unlock(&cm->lock);
}

/* Read toward id->need; 1 complete, 0 more later, <0 error/EOF. */
static int read_more(struct soft_id *id)
{
	while (id->have < id->need) {
		ssize_t n = read(id->fd, id->buf + id->have, id->need - id->have);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		id->have += (size_t)n;
	}
	return 1;
}

/* Read an MPA Request/Reply frame; 1 when complete. */
static int read_frame(struct soft_id *id, bool reply)
{
	int rc;

	for (;;) {
		rc = read_more(id);
		if (rc <= 0)
			return rc;
		if (id->need == SOFT_MPA_HDR) {
			size_t total;

			rc = rrr__soft_mpa_parse_hdr(id->buf, reply, &total);
			if (rc)
				return rc;
			if (total > SOFT_MPA_HDR) {
				id->need = total;
				continue;
			}
		}
		return rrr__soft_mpa_parse(id->buf, id->have, reply, id->peer) ? -EPROTO : 1;
	}
}

/* Close the oldest connection that has not sent its MPA Request yet;
 * false when there is none. */
static bool evict_oldest(struct soft_cm *cm)
{
	struct soft_id *old = NULL;

	for (struct soft_id *id = cm->ids; id; id = id->next)
		if (id->in_setup && id->state == ID_REQ_WAIT &&
		    (!old || id->setup_deadline < old->setup_deadline))
			old = id;
	if (!old)
		return false;
	id_free(cm, old);
	cm->lst.setup_evicted++;
	return true;
}

/* Close what is past its set-up deadline (timer tick). */
static void sweep(struct soft_cm *cm)
{
	uint64_t now = rrr__mono_ns(), v;

	if (read(cm->tfd, &v, sizeof(v)) < 0) {
		/* not expired yet: nothing to consume */
	}
	for (struct soft_id *id = cm->ids, *nx; id; id = nx) {
		nx = id->next;
		if (!id->in_setup || id->setup_deadline > now)
			continue;
		cm->lst.setup_timeouts++;
		if (id->state == ID_REQ_WAIT) {
			id_free(cm, id); /* never reported: ours */
			continue;
		}
		ep_set(id, 0);
		setup_end(cm, id);
		id->state = ID_CLOSED;
		if (id->fd >= 0)
			shutdown(id->fd, SHUT_RDWR);
		rrr__set_error(-ETIMEDOUT, "soft: peer did not finish MPA set-up in %u ms",
			       cm->setup_timeout_ms);
		post(id, RRR_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
	}
}

/* accept() failed with EMFILE/ENFILE: make room. Returns true to retry. */
static bool out_of_fds(struct soft_cm *cm, struct soft_id *l)
{
	int fd;

	if (evict_oldest(cm))
		return true;
	if (cm->reserve_fd < 0)
		return false;
	close(cm->reserve_fd);
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		cm->lst.accept_shed++;
	}
	cm->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && cm->reserve_fd >= 0;
}

static void on_listen(struct soft_cm *cm, struct soft_id *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct soft_id *id;

		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE) && out_of_fds(cm, l))
				continue;
			return;
		}
		if (cm->nsetup >= cm->max_setup)
			evict_oldest(cm);
		id = id_new(cm, NULL);
		if (!id) {
			close(fd);
			return;
		}
		id->fd = fd;
		id->listener = l;
		id->state = ID_REQ_WAIT;
		id->need = SOFT_MPA_HDR;
		setup_begin(cm, id);
		ep_set(id, EPOLLIN);
	}
}

static void reject_frame(struct soft_id *id, const void *pd, uint32_t len)
{
	struct soft_mpa_rr rr;
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	size_t n;

	memset(&rr, 0, sizeof(rr));
	rr.reply = true;
	rr.reject = true;
	rr.rev = id->peer->rev == 1 ? 1 : 2; /* in the revision the requester speaks */
	rr.pd_len = (uint16_t)len;
	if (len)
		memcpy(rr.pd, pd, len);
	n = rrr__soft_mpa_encode(&rr, buf);
	send_all(id->fd, buf, n);
	shutdown(id->fd, SHUT_RDWR);
}

static void on_ready(struct soft_cm *cm, struct soft_id *id, uint32_t events)
{
	struct soft_dev *dev = soft_dev(cm->base.dev);
	int rc;

	switch (id->state) {
	case ID_LISTEN:
		on_listen(cm, id);
		break;
	case ID_CONNECTING: {
		int err = 0;
		socklen_t el = sizeof(err);
		uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
		size_t n;

		(void)events;
		if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		if (err) {
			fail_active(id, -err, strerror(err));
			break;
		}
		n = rrr__soft_mpa_encode(id->mine, buf);
		rc = send_all(id->fd, buf, n);
		if (rc) {
			fail_active(id, rc, "cannot send the MPA request");
			break;
		}
		id->state = ID_REQ_SENT;
		id->have = 0;
		id->need = SOFT_MPA_HDR;
		ep_set(id, EPOLLIN);
		break;
	}
	case ID_REQ_SENT: {
		uint8_t rtr[SOFT_HDR_TAGGED + 4];

		rc = read_frame(id, true);
		if (rc == 0)
			break;
		if (rc < 0) {
			fail_active(id, rc == -ECONNRESET ? -ECONNREFUSED : -EPROTO,
				    "bad or missing MPA reply");
			break;
		}
		if (id->peer->reject) {
			ep_set(id, 0);
			id->state = ID_CLOSED;
			post(id, RRR_CM_EVENT_REJECTED, -ECONNREFUSED, id->peer);
			break;
		}
		if (id->peer->markers) {
			fail_active(id, -EPROTO, "peer requires MPA markers, which are not supported");
			break;
		}
		if (id->peer->rev != 2 || !id->peer->enhanced ||
		    !(id->peer->ord_flags & SOFT_MPA_ORD_RTR_WRITE)) {
			fail_active(id, -EPROTO, "peer does not speak MPA rev 2 enhanced setup");
			break;
		}
		id->crc = id->peer->crc;
		rc = send_all(id->fd, rtr, rrr__soft_mpa_rtr(rtr, id->crc));
		if (rc) {
			fail_active(id, rc, "cannot send the ready-to-receive message");
			break;
		}
		handover(id);
		break;
	}
	case ID_REQ_WAIT:
		rc = read_frame(id, false);
		if (rc == 0)
			break;
		if (rc < 0 || id->peer->markers ||
		    (id->peer->rev != 1 && !(id->peer->rev == 2 && id->peer->enhanced))) {
			/* unreported connection: refuse and forget it */
			if (rc > 0)
				reject_frame(id, NULL, 0);
			id_free(cm, id);
			break;
		}
		id->rev1 = id->peer->rev == 1;
		setup_end(cm, id); /* the user decides now (accept restarts the clock) */
		id->state = ID_REQ_PENDING;
		id->crc = id->peer->crc || dev->crc;
		ep_set(id, 0);
		post(id, RRR_CM_EVENT_CONNECT_REQUEST, 0, id->peer);
		break;
	case ID_ESTABLISHED:
		if (id->base.qp && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
			struct soft_qp *qp = soft_qp(id->base.qp);
			bool dead;

			rrr__soft_qp_progress(qp, EPOLLIN);
			pthread_mutex_lock(&qp->lock);
			dead = qp->state == SOFT_QP_ERROR;
			pthread_mutex_unlock(&qp->lock);
			if (!dead)
				break;
		}
		ep_set(id, 0);
		break;
	case ID_REP_SENT:
		rc = read_more(id);
		if (rc == 0)
			break;
		if (rc < 0 || !rrr__soft_mpa_is_rtr(id->buf, id->crc)) {
			ep_set(id, 0);
			setup_end(cm, id);
			id->state = ID_CLOSED;
			rrr__set_error(-EPROTO, "soft: peer sent no valid ready-to-receive message");
			post(id, RRR_CM_EVENT_UNREACHABLE, -EPROTO, NULL);
			break;
		}
		handover(id);
		break;
	default:
		ep_set(id, 0);
		break;
	}
}

int rrr__soft_cm_create(struct rrr_device *dev, struct rrr_cm **out)
{
	struct soft_cm *cm = calloc(1, sizeof(*cm));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	if (!cm)
		return -ENOMEM;
	cm->ep = epoll_create1(EPOLL_CLOEXEC);
	cm->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cm->ep < 0 || cm->evfd < 0 || epoll_ctl(cm->ep, EPOLL_CTL_ADD, cm->evfd, &ev) < 0) {
		int err = -errno;

		if (cm->ep >= 0)
			close(cm->ep);
		if (cm->evfd >= 0)
			close(cm->evfd);
		free(cm);
		return err;
	}
	pthread_mutex_init(&cm->lock, NULL);
	pthread_mutex_init(&cm->evlock, NULL);
	cm->tfd = -1;
	cm->reserve_fd = -1;
	cm->setup_timeout_ms = RRR_CM_SETUP_TIMEOUT_MS;
	cm->max_setup = RRR_CM_MAX_SETUP;
	cm->base.dev = dev;
	atomic_fetch_add(&soft_dev(dev)->nobj, 1);
	*out = &cm->base;
	return 0;
}

void rrr__soft_cm_destroy(struct rrr_cm *base)
{
	struct soft_cm *cm = soft_cm(base);
	struct cm_ev *e;

	pthread_mutex_lock(&cm->lock);
	/* connections never reported to the user belong to us */
	for (struct soft_id *id = cm->ids, *nx; id; id = nx) {
		nx = id->next;
		if (id->state == ID_REQ_WAIT)
			id_free(cm, id);
	}
	pthread_mutex_unlock(&cm->lock);
	while ((e = cm->head)) {
		cm->head = e->next;
		free(e);
	}
	close(cm->ep);
	close(cm->evfd);
	if (cm->tfd >= 0)
		close(cm->tfd);
	if (cm->reserve_fd >= 0)
		close(cm->reserve_fd);
	pthread_mutex_destroy(&cm->lock);
	pthread_mutex_destroy(&cm->evlock);
	atomic_fetch_sub(&soft_dev(base->dev)->nobj, 1);
	free(cm);
}

int rrr__soft_cm_fd(struct rrr_cm *base)
{
	return soft_cm(base)->ep;
}

int rrr__soft_cm_get_event(struct rrr_cm *base, struct rrr_cm_event *ev)
{
	struct soft_cm *cm = soft_cm(base);
	struct epoll_event evs[16];
	struct cm_ev *e;
	int n;

	pthread_mutex_lock(&cm->lock);
	n = epoll_wait(cm->ep, evs, 16, 0);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.ptr == &cm->tfd)
			sweep(cm);
		else if (evs[i].data.ptr)
			on_ready(cm, evs[i].data.ptr, evs[i].events);
	}
	pthread_mutex_unlock(&cm->lock);

	pthread_mutex_lock(&cm->evlock);
	e = cm->head;
	if (e) {
		cm->head = e->next;
		if (!cm->head)
			cm->tail = NULL;
	}
	if (!cm->head) {
		uint64_t v;

		if (read(cm->evfd, &v, sizeof(v)) < 0) {
			/* already zero */
		}
	}
	pthread_mutex_unlock(&cm->evlock);
	if (!e)
		return -EAGAIN;
	*ev = e->ev;
	free(e);
	return 0;
}

int rrr__soft_cm_id_create(struct rrr_cm *base, void *ctx, struct rrr_cm_id **out)
{
	struct soft_cm *cm = soft_cm(base);
	struct soft_id *id;

	pthread_mutex_lock(&cm->lock);
	id = id_new(cm, ctx);
	pthread_mutex_unlock(&cm->lock);
	if (!id)
		return -ENOMEM;
	*out = &id->base;
	return 0;
}

void rrr__soft_cm_id_destroy(struct rrr_cm_id *base)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;

	if (base->qp) {
		/* documented misuse: destroy the QP first; do it for the caller */
		rrr__soft_qp_destroy(base->qp);
	}
	pthread_mutex_lock(&cm->lock);
	if (id->state == ID_LISTEN) {
		for (struct soft_id *c = cm->ids, *nx; c; c = nx) {
			nx = c->next;
			if (c->listener == id && c->state == ID_REQ_WAIT)
				id_free(cm, c);
			else if (c->listener == id)
				c->listener = NULL;
		}
	}
	id_free(cm, id);
	pthread_mutex_unlock(&cm->lock);
}

int rrr__soft_cm_peer_addr(const struct rrr_cm_id *base, struct sockaddr_storage *ss)
{
	struct soft_id *id = container_of(base, struct soft_id, base);
	socklen_t len = sizeof(*ss);

	if (id->fd < 0 || id->state == ID_LISTEN) {
		if (id->dstlen) {
			memcpy(ss, &id->dst, id->dstlen);
			return 0;
		}
		return -ENOTCONN;
	}
	return getpeername(id->fd, (struct sockaddr *)ss, &len) < 0 ? -errno : 0;
}

int rrr__soft_cm_local_addr(const struct rrr_cm_id *base, struct sockaddr_storage *ss)
{
	struct soft_id *id = container_of(base, struct soft_id, base);
	socklen_t len = sizeof(*ss);

	if (id->fd < 0)
		return -ENOTCONN;
	return getsockname(id->fd, (struct sockaddr *)ss, &len) < 0 ? -errno : 0;
}

int rrr__soft_cm_listen(struct rrr_cm_id *base, const struct sockaddr *addr, socklen_t len,
			int backlog)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	int fd, one = 1, rc = 0;

	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_IDLE) {
		rc = rrr__set_error(-EINVAL, "soft: listen on an id that is in use");
		goto out;
	}
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, len) < 0 || listen(fd, backlog > 0 ? backlog : 128) < 0) {
		rc = rrr__set_error(-errno, "soft: cannot listen: %s", strerror(errno));
		close(fd);
		goto out;
	}
	id->fd = fd;
	id->state = ID_LISTEN;
	ep_set(id, EPOLLIN);
	if (cm->tfd < 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cm->tfd};

		cm->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (cm->tfd >= 0 && epoll_ctl(cm->ep, EPOLL_CTL_ADD, cm->tfd, &ev) < 0) {
			close(cm->tfd);
			cm->tfd = -1;
		}
	}
	if (cm->reserve_fd < 0)
		cm->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int rrr__soft_cm_resolve(struct rrr_cm_id *base, const struct sockaddr *dst, socklen_t len,
			 int timeout_ms)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;

	(void)timeout_ms;
	if (len > sizeof(id->dst) || len < sizeof(sa_family_t))
		return -EINVAL;
	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_IDLE && id->state != ID_RESOLVED) {
		pthread_mutex_unlock(&cm->lock);
		return rrr__set_error(-EINVAL, "soft: resolve on an id that is in use");
	}
	memcpy(&id->dst, dst, len);
	id->dstlen = len;
	id->state = ID_RESOLVED;
	post(id, RRR_CM_EVENT_RESOLVED, 0, NULL);
	pthread_mutex_unlock(&cm->lock);
	return 0;
}

int rrr__soft_cm_connect(struct rrr_cm_id *base, const struct rrr_conn_param *param)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	struct soft_qp *qp;
	int fd, rc = 0;

	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_RESOLVED || !base->qp) {
		rc = rrr__set_error(-EINVAL, "soft: connect needs a resolved id with a QP");
		goto out;
	}
	qp = soft_qp(base->qp);
	id->mine = calloc(1, sizeof(*id->mine));
	if (!id->mine) {
		rc = -ENOMEM;
		goto out;
	}
	id->mine->crc = soft_dev(cm->base.dev)->crc;
	id->mine->ird = (uint16_t)(param && param->ird ? param->ird : qp->ird);
	id->mine->ord = (uint16_t)(param && param->ord ? param->ord : qp->ord);
	if (param && param->private_data_len) {
		id->mine->pd_len = (uint16_t)param->private_data_len;
		memcpy(id->mine->pd, param->private_data, param->private_data_len);
	}
	fd = socket(id->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&id->dst, id->dstlen) < 0 && errno != EINPROGRESS) {
		rc = rrr__set_error(-errno, "soft: connect failed: %s", strerror(errno));
		close(fd);
		goto out;
	}
	id->fd = fd;
	id->state = ID_CONNECTING;
	ep_set(id, EPOLLOUT);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int rrr__soft_cm_accept(struct rrr_cm_id *base, const struct rrr_conn_param *param)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	struct soft_mpa_rr rr;
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX];
	struct soft_qp *qp;
	int rc = 0;

	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_REQ_PENDING || !base->qp) {
		rc = rrr__set_error(-EINVAL, "soft: accept needs a CONNECT_REQUEST id with a QP");
		goto out;
	}
	qp = soft_qp(base->qp);
	memset(&rr, 0, sizeof(rr));
	rr.reply = true;
	rr.rev = id->rev1 ? 1 : 2;
	rr.crc = id->crc;
	rr.ird = (uint16_t)(param && param->ird ? param->ird : qp->ird);
	rr.ord = (uint16_t)(param && param->ord ? param->ord : qp->ord);
	if (param && param->private_data_len) {
		rr.pd_len = (uint16_t)param->private_data_len;
		memcpy(rr.pd, param->private_data, param->private_data_len);
	}
	rc = send_all(id->fd, buf, rrr__soft_mpa_encode(&rr, buf));
	if (rc) {
		rrr__set_error(rc, "soft: cannot send the MPA reply");
		goto out;
	}
	if (id->rev1) {
		/* RFC 5044: no RTR; the initiator sends the first FPDU, the QP
		 * sends nothing before it arrived (tx_hold) */
		handover(id);
		goto out;
	}
	id->state = ID_REP_SENT;
	id->have = 0;
	id->need = SOFT_HDR_TAGGED + 4;
	setup_begin(cm, id);
	ep_set(id, EPOLLIN);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int rrr__soft_cm_reject(struct rrr_cm_id *base, const void *pdata, uint32_t len)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	int rc = 0;

	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_REQ_PENDING)
		rc = rrr__set_error(-EINVAL, "soft: reject needs a CONNECT_REQUEST id");
	else {
		reject_frame(id, pdata, len);
		id->state = ID_CLOSED;
	}
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int rrr__soft_cm_disconnect(struct rrr_cm_id *base)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	enum id_state st;

	pthread_mutex_lock(&cm->lock);
	st = id->state;
	if (id->fd >= 0)
		ep_set(id, 0);
	if (st != ID_ESTABLISHED && id->fd >= 0) {
		shutdown(id->fd, SHUT_RDWR);
	}
	if (st != ID_LISTEN && st != ID_IDLE)
		id->state = ID_CLOSED;
	pthread_mutex_unlock(&cm->lock);
	if (st == ID_ESTABLISHED && base->qp) {
		struct soft_qp *qp = soft_qp(base->qp);

		pthread_mutex_lock(&qp->lock);
		rrr__soft_qp_fatal(qp, 0, false);
		pthread_mutex_unlock(&qp->lock);
	}
	rrr__soft_cm_conn_lost(id, 0);
	return 0;
}

int rrr__soft_cm_set_limits(struct rrr_cm *base, const struct rrr_cm_limits *lim)
{
	struct soft_cm *cm = soft_cm(base);

	pthread_mutex_lock(&cm->lock);
	if (lim->setup_timeout_ms)
		cm->setup_timeout_ms = lim->setup_timeout_ms;
	if (lim->max_setup)
		cm->max_setup = lim->max_setup;
	if (cm->timer_on) { /* re-arm with the new period */
		cm->timer_on = false;
		timer_update(cm);
	}
	pthread_mutex_unlock(&cm->lock);
	return 0;
}

int rrr__soft_cm_limit_stats(struct rrr_cm *base, struct rrr_cm_limit_stats *st)
{
	struct soft_cm *cm = soft_cm(base);

	pthread_mutex_lock(&cm->lock);
	*st = cm->lst;
	st->setup_now = cm->nsetup;
	pthread_mutex_unlock(&cm->lock);
	return 0;
}
