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
 *            (non-blocking; from rrr_cm_set_source()'s address and port
 *            when the kernel lets it, SO_REUSEADDR) -> send MPA Request (rev 2, H, peer-to-peer
 *            with Write and Read RTR offered, IRD/ORD, private data) ->
 *            read Reply -> send the RTR it chose (a Read RTR: and read its
 *            zero-length Read Response, RTR_WAIT) -> the socket goes to the
 *            QP -> ESTABLISHED  (or REJECTED/UNREACHABLE)
 *   passive: listen -> accept TCP -> read Request -> CONNECT_REQUEST (new
 *            id) ; accept: send Reply -> [peer-to-peer: read the RTR,
 *            answer a Read RTR] -> socket to the QP -> ESTABLISHED ;
 *            reject: Reply with the R bit and private data.
 *
 * What each Request is answered with is decided in mpa.c
 * (rrr__soft_mpa_answer; the table is in docs/soft-provider.md). The QP
 * never sends before set-up is over (it is IDLE until the socket is
 * attached). When the initiator asked for no RTR (MPA revision 1, revision
 * 2 without H, or with H but without the peer-to-peer bit, as the Linux
 * kernel's siw does), the socket goes to the QP right after the Reply and
 * the QP sends nothing - no FPDU, no REG_MR or other send-queue work is
 * started - until it received the initiator's first valid FPDU, as RFC
 * 5044 requires of a responder. A Send or Read RTR consumed here was
 * message 1 of its DDP queue: the QP starts that queue's MSN at 2.
 *
 * No silent refusals: every connection refused or dropped during set-up
 * (revision, markers, private data, RTR, not MPA at all) is counted under
 * its reason and logged (cm_limits.c); an initiator's failure also reaches
 * rrr_last_error() with the reason.
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
 * Hostile or stalled peers (rrr_cm_set_limits): set-up deadlines, the cap
 * on connections in set-up, running out of descriptors and admission by
 * address are cm_limits.c's (its essay); cm.c calls it where a connection
 * enters or leaves set-up.
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

#include "cm_impl.h"

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

void rrr__soft_cm_post(struct soft_id *id, enum rrr_cm_event_type t, int status,
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

/* A QP's connection ended (qp->conn_lost, called under qp->lock; the QP
 * engine's one report upward): DISCONNECTED, once. */
static void conn_lost(struct soft_id *id, int status)
{
	struct soft_cm *cm = id->cm;
	bool do_post;

	pthread_mutex_lock(&cm->evlock);
	do_post = !id->disc_posted;
	id->disc_posted = true;
	pthread_mutex_unlock(&cm->evlock);
	if (do_post)
		rrr__soft_cm_post(id, RRR_CM_EVENT_DISCONNECTED, status, NULL);
}

void rrr__soft_cm_ep_set(struct soft_id *id, uint32_t events)
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

void rrr__soft_cm_id_free(struct soft_cm *cm, struct soft_id *id)
{
	struct cm_ev **pp, *e;

	rrr__soft_cm_ep_set(id, 0);
	rrr__soft_cm_setup_end(cm, id);
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
	rrr__soft_cm_ep_set(id, 0);
	id->state = ID_CLOSED;
	rrr__soft_cm_post(id, RRR_CM_EVENT_UNREACHABLE, status, NULL);
}

static void handover(struct soft_id *id, bool active)
{
	struct soft_qp *qp = soft_qp(id->base.qp);
	struct soft_attach a = {
		.crc = id->neg.crc,
		.ird = id->neg.ord, /* the peer's ORD bounds the reads we answer */
		.ord = id->neg.ird,
		.hold_tx = !active && id->neg.hold_tx,
		.rtr_in = active ? SOFT_RTR_NONE : id->neg.rtr,
		.rtr_out = active ? id->neg.rtr : SOFT_RTR_NONE,
	};

	rrr__soft_cm_ep_set(id, 0);
	rrr__soft_cm_setup_end(id->cm, id);
	id->state = ID_ESTABLISHED;
	/* ESTABLISHED first: attaching may already see the peer's close */
	rrr__soft_cm_post(id, RRR_CM_EVENT_ESTABLISHED, 0, id->peer);
	rrr__soft_qp_attach(qp, id->fd, &a);
	/* watch for the peer's close so DISCONNECTED arrives even when
	 * nobody polls the CQ (as with an RDMA CM) */
	rrr__soft_cm_ep_set(id, EPOLLRDHUP);
}

/* The QP of @id goes away: stop watching its socket. */
static void qp_gone(struct soft_id *id)
{
	struct soft_cm *cm = id->cm;

	pthread_mutex_lock(&cm->lock);
	if (id->state == ID_ESTABLISHED)
		rrr__soft_cm_ep_set(id, 0);
	pthread_mutex_unlock(&cm->lock);
}

/* The ops table's qp_create: a QP bound to @base, whose lost connection
 * is reported as this id's DISCONNECTED (qp->conn_lost). */
int rrr__soft_cm_qp_create(struct rrr_cm_id *base, const struct rrr_qp_init_attr *attr,
			   struct rrr_qp **out)
{
	return rrr__soft_qp_new(base, rrr__soft_id_of(base), conn_lost, attr, out);
}

/* The ops table's qp_destroy: out of every epoll set (the CQs' and the
 * progress thread's), out of the CM's, then freed. */
int rrr__soft_cm_qp_destroy(struct rrr_qp *base)
{
	struct soft_qp *qp = soft_qp(base);

	rrr__soft_qp_detach(qp);
	if (qp->id)
		qp_gone(qp->id);
	return rrr__soft_qp_free(base);
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

/* Read an MPA Request/Reply frame; 1 when complete, 0 more later; else
 * -EPROTO not an MPA frame (bad key), -EMSGSIZE PD_Length over the maximum,
 * -EBADMSG enhanced without its IRD/ORD words, or the socket's error
 * (-ECONNRESET at EOF). */
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
		return rrr__soft_mpa_parse(id->buf, id->have, reply, id->peer) ? -EBADMSG : 1;
	}
}

/* The sentence and reason for a Request or Reply read_frame() refused. */
static int frame_refusal(int rc, bool reply, const char **why)
{
	switch (rc) {
	case -EPROTO:
		*why = reply ? "the peer's answer is not an MPA Reply (is it an iWARP peer?)"
			     : "its first bytes are not an MPA Request (is it an iWARP peer?)";
		return RRR_CM_REFUSED_PROTOCOL;
	case -EMSGSIZE:
		*why = reply ? "the peer's MPA Reply declares more than 512 bytes of private data"
			     : "its MPA Request declares more than 512 bytes of private data";
		return RRR_CM_REFUSED_PRIVATE_DATA;
	case -EBADMSG:
		*why = reply ? "the peer's MPA Reply sets H but carries no IRD/ORD words"
			     : "its MPA Request sets H (enhanced) but carries no IRD/ORD words";
		return RRR_CM_REFUSED_PRIVATE_DATA;
	default:
		*why = reply ? "the peer closed the connection before its MPA Reply"
			     : "the peer closed the connection before its MPA Request";
		return RRR_CM_REFUSED_PROTOCOL;
	}
}

/* Close the oldest connection that has not sent its MPA Request yet
 * (cm_limits.c picks it); false when there is none. */
static bool evict_oldest(struct soft_cm *cm)
{
	struct soft_id *old = rrr__soft_cm_oldest_unrequested(cm);

	if (!old)
		return false;
	rrr__soft_cm_id_free(cm, old);
	cm->lst.setup_evicted++;
	return true;
}

/* The set-up timer ticked: close what is past its deadline (cm_limits.c
 * finds and counts them): unreported ones silently, accepted ones with
 * UNREACHABLE (-ETIMEDOUT). */
static void sweep(struct soft_cm *cm)
{
	uint64_t now = rrr__soft_cm_sweep_begin(cm);
	struct soft_id *id, *nx = cm->ids;

	while ((id = rrr__soft_cm_next_expired(cm, &nx, now))) {
		if (id->state == ID_REQ_WAIT) {
			rrr__soft_cm_id_free(cm, id); /* never reported: ours */
			continue;
		}
		rrr__soft_cm_ep_set(id, 0);
		rrr__soft_cm_timed_out(cm, id);
		rrr__soft_cm_post(id, RRR_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
	}
}

static void on_listen(struct soft_cm *cm, struct soft_id *l)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct soft_id *id;

		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE) &&
			    (evict_oldest(cm) || rrr__soft_cm_shed(cm, l)))
				continue;
			return;
		}
		if (cm->admit && !cm->admit(cm->admit_ctx, &ss)) {
			close(fd); /* before anything is held for it */
			rrr__soft_cm_refuse_addr(cm, &ss);
			continue;
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
		rrr__soft_cm_setup_begin(cm, id);
		rrr__soft_cm_ep_set(id, EPOLLIN);
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
	rr.rev = id->peer->rev <= 1 ? 1 : 2; /* the requester's revision, or the nearest we speak */
	rr.enhanced = rr.rev == 2 && id->peer->enhanced;
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
		rrr__soft_cm_ep_set(id, EPOLLIN);
		break;
	}
	case ID_REQ_SENT: {
		uint8_t rtr[SOFT_MPA_RTR_MAX];
		const char *why;
		int reason;

		rc = read_frame(id, true);
		if (rc == 0)
			break;
		if (rc < 0) {
			reason = frame_refusal(rc, true, &why);
			rrr__soft_cm_refused(cm, id, reason, why);
			fail_active(id, rc == -ECONNRESET ? -ECONNREFUSED : -EPROTO, why);
			break;
		}
		if (id->peer->reject) {
			rrr__set_error(-ECONNREFUSED,
				       "soft: the peer rejected the connection (MPA Reply with R)");
			rrr__soft_cm_ep_set(id, 0);
			id->state = ID_CLOSED;
			rrr__soft_cm_post(id, RRR_CM_EVENT_REJECTED, -ECONNREFUSED, id->peer);
			break;
		}
		if (rrr__soft_mpa_check_reply(id->mine, id->peer, &id->neg, &reason, &why)) {
			rrr__soft_cm_refused(cm, id, reason, why);
			fail_active(id, -EPROTO, why);
			break;
		}
		if (id->neg.rtr != SOFT_RTR_NONE) {
			rc = send_all(id->fd, rtr, rrr__soft_mpa_rtr(rtr, id->neg.rtr, id->neg.crc));
			if (rc) {
				fail_active(id, rc, "cannot send the ready-to-receive message");
				break;
			}
		}
		if (id->neg.rtr == SOFT_RTR_READ) {
			/* its zero-length Read Response comes before anything else */
			id->state = ID_RTR_WAIT;
			id->have = 0;
			id->need = SOFT_HDR_TAGGED + 4;
			break;
		}
		handover(id, true);
		break;
	}
	case ID_RTR_WAIT:
		rc = read_more(id);
		if (rc == 0)
			break;
		if (rc < 0 || !rrr__soft_mpa_is_rtr_read_resp(id->buf, id->neg.crc)) {
			const char *why = "the peer did not answer our zero-length RDMA Read "
					  "ready-to-receive message with its Read Response";

			rrr__soft_cm_refused(cm, id, RRR_CM_REFUSED_RTR, why);
			fail_active(id, -EPROTO, why);
			break;
		}
		handover(id, true);
		break;
	case ID_REQ_WAIT: {
		const char *why;
		int reason;

		rc = read_frame(id, false);
		if (rc == 0)
			break;
		if (rc < 0) {
			reason = frame_refusal(rc, false, &why);
			if (rc == -EMSGSIZE || rc == -EBADMSG) {
				/* an MPA Request all the same: answer in its revision */
				id->peer->rev = id->buf[17];
				id->peer->enhanced = id->buf[17] == 2 && (id->buf[16] & SOFT_MPA_FLAG_H);
				reject_frame(id, NULL, 0);
			}
		} else if (rrr__soft_mpa_answer(id->peer, dev->crc, &id->neg, &reason, &why) == 0) {
			rrr__soft_cm_setup_end(cm, id); /* the user decides now (accept restarts the clock) */
			id->state = ID_REQ_PENDING;
			rrr__soft_cm_ep_set(id, 0);
			rrr__soft_cm_post(id, RRR_CM_EVENT_CONNECT_REQUEST, 0, id->peer);
			break;
		} else {
			reject_frame(id, NULL, 0);
		}
		/* unreported connection: refuse, say why, and forget it */
		rrr__soft_cm_refused(cm, id, reason, why);
		rrr__soft_cm_id_free(cm, id);
		break;
	}
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
		rrr__soft_cm_ep_set(id, 0);
		break;
	case ID_REP_SENT: {
		struct soft_read_req rd;
		uint8_t resp[SOFT_HDR_TAGGED + 4];

		rc = read_more(id);
		if (rc == 0)
			break;
		if (rc < 0 || !rrr__soft_mpa_is_rtr(id->buf, id->neg.rtr, id->neg.crc, &rd) ||
		    (id->neg.rtr == SOFT_RTR_READ &&
		     send_all(id->fd, resp, rrr__soft_mpa_rtr_read_resp(resp, &rd, id->neg.crc)))) {
			const char *why = rc < 0 ? "the peer closed the connection before its "
						   "ready-to-receive message"
						 : "the peer's first FPDU is not the ready-to-receive "
						   "message our MPA Reply asked for (RFC 6581)";

			rrr__soft_cm_refused(cm, id, rc < 0 ? RRR_CM_REFUSED_PROTOCOL : RRR_CM_REFUSED_RTR, why);
			rrr__soft_cm_ep_set(id, 0);
			rrr__soft_cm_setup_end(cm, id);
			id->state = ID_CLOSED;
			rrr__set_error(-EPROTO, "soft: %s", why);
			rrr__soft_cm_post(id, RRR_CM_EVENT_UNREACHABLE, -EPROTO, NULL);
			break;
		}
		handover(id, false);
		break;
	}
	default:
		rrr__soft_cm_ep_set(id, 0);
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
			rrr__soft_cm_id_free(cm, id);
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
		rrr__soft_cm_qp_destroy(base->qp);
	}
	pthread_mutex_lock(&cm->lock);
	if (id->state == ID_LISTEN) {
		for (struct soft_id *c = cm->ids, *nx; c; c = nx) {
			nx = c->next;
			if (c->listener == id && c->state == ID_REQ_WAIT)
				rrr__soft_cm_id_free(cm, c);
			else if (c->listener == id)
				c->listener = NULL;
		}
	}
	rrr__soft_cm_id_free(cm, id);
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
	rrr__soft_cm_ep_set(id, EPOLLIN);
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

int rrr__soft_cm_set_source(struct rrr_cm_id *base, const struct sockaddr *src, socklen_t len)
{
	struct soft_id *id = rrr__soft_id_of(base);
	struct soft_cm *cm = id->cm;
	int rc = 0;

	pthread_mutex_lock(&cm->lock);
	if (id->state != ID_IDLE)
		rc = rrr__set_error(-EINVAL, "soft: set the source before resolving");
	else if (len > sizeof(id->src))
		rc = -EINVAL;
	else {
		memcpy(&id->src, src, len);
		id->srclen = len;
	}
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

/* A non-blocking TCP socket connecting to @id's peer, from its source
 * address when that is set and free (SO_REUSEADDR: the port of a closed
 * connection in TIME_WAIT is taken again when the kernel allows it), else
 * from one the kernel picks; the socket, or -errno. */
static int connect_socket(struct soft_id *id)
{
	int fd, one = 1;

	if (id->srclen && id->src.ss_family == id->dst.ss_family) {
		fd = socket(id->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
		    !bind(fd, (struct sockaddr *)&id->src, id->srclen) &&
		    (!connect(fd, (struct sockaddr *)&id->dst, id->dstlen) || errno == EINPROGRESS))
			return fd;
		int err = errno;

		rrr__log_debug("soft: cannot connect from the source port asked for (%s): the "
			       "kernel picks one",
			       strerror(err));
		close(fd);
	}
	fd = socket(id->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&id->dst, id->dstlen) < 0 && errno != EINPROGRESS) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
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
	rrr__soft_cm_post(id, RRR_CM_EVENT_RESOLVED, 0, NULL);
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
	id->mine->rev = 2;
	id->mine->enhanced = true;
	id->mine->p2p = true;
	id->mine->rtr = SOFT_RTR_WRITE | SOFT_RTR_READ;
	id->mine->crc = soft_dev(cm->base.dev)->crc;
	id->mine->ird = (uint16_t)(param && param->ird ? param->ird : qp->ird);
	id->mine->ord = (uint16_t)(param && param->ord ? param->ord : qp->ord);
	if (param && param->private_data_len) {
		id->mine->pd_len = (uint16_t)param->private_data_len;
		memcpy(id->mine->pd, param->private_data, param->private_data_len);
	}
	fd = connect_socket(id);
	if (fd < 0) {
		rc = rrr__set_error(fd, "soft: connect failed: %s", strerror(-fd));
		goto out;
	}
	id->fd = fd;
	id->state = ID_CONNECTING;
	rrr__soft_cm_ep_set(id, EPOLLOUT);
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
	rr.rev = id->neg.rev;
	rr.enhanced = id->neg.enhanced;
	rr.p2p = id->neg.rtr != SOFT_RTR_NONE;
	rr.rtr = id->neg.rtr;
	rr.crc = id->neg.crc;
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
	if (id->neg.rtr == SOFT_RTR_NONE) {
		/* no RTR: the initiator sends the first FPDU, the QP sends
		 * nothing before it arrived (hold_tx) */
		handover(id, false);
		goto out;
	}
	id->state = ID_REP_SENT;
	id->have = 0;
	id->need = rrr__soft_mpa_rtr_len(id->neg.rtr);
	rrr__soft_cm_setup_begin(cm, id);
	rrr__soft_cm_ep_set(id, EPOLLIN);
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
		cm->lst.refused[RRR_CM_REFUSED_APP]++;
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
		rrr__soft_cm_ep_set(id, 0);
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
	conn_lost(id, 0);
	return 0;
}

