/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_tcp.c - ONC RPC over TCP with record marking (RFC 5531
 * section 11), a transport of the client core (clnt.c).
 *
 * Normal operation. The core encodes each call into one buffer that begins
 * with 4 bytes reserved for the record marker (the DDP payload is plain
 * opaque here, copied inline by the XDR layer). send() fills the marker -
 * one fragment, last-fragment bit set - and appends the request to the
 * output queue; the queue is written with non-blocking writes, and EPOLLOUT
 * is requested only while something remains. Replies are read into a
 * reassembly buffer: a 4-byte marker, then the fragment; fragments are
 * concatenated until the last-fragment bit. A complete record is matched
 * to its call by xid, decoded by the core (the payload is copied into the
 * caller's sink) and completed. Replies for unknown xids (late replies to
 * calls that timed out) are dropped.
 *
 *   record marker:  +-+-------------------------------+
 *                   |L|  fragment length (31 bits)     |   then the bytes
 *                   +-+-------------------------------+
 *
 * There are no credits on TCP: can_send() is always true.
 *
 * Hostile peers: a fragment length and the record's total are bounded by
 * MAX_RECORD before any allocation; a record that is too large, or a
 * zero-length record, drops the connection.
 *
 * Recovery. A read of 0 bytes or a socket error reports -ENOTCONN; the core
 * closes and retries or fails the outstanding calls. If a call is aborted
 * (timeout/cancel) while it is half written, its buffer is handed to the
 * output queue so the record can be finished without touching the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rrr/client.h>

#include "client/clnt_impl.h"
#include "transport/provider_impl.h"

#define TAG_SOCK    1u
#define MAX_PAYLOAD (1u << 20)
#define MAX_RECORD  (MAX_PAYLOAD + (256u << 10))

struct out_ent {
	struct out_ent *next;
	struct rrr__clnt_req *req; /* NULL once orphaned */
	uint8_t *buf;		   /* req->buf, or owned when orphaned */
	size_t len, off;
};

struct tcp_xprt {
	int fd;
	struct out_ent *out_head, *out_tail;
	bool want_out;
	/* receive */
	uint8_t hdr[4];
	uint32_t hdr_have;
	uint32_t frag_left; /* bytes still to read of the current fragment */
	bool in_frag;
	bool last_frag;
	uint8_t *msg;
	size_t msg_len, msg_cap;
};

static struct tcp_xprt *X(const struct rrr_clnt *c)
{
	return c->xprt;
}

static int tcp_create(struct rrr_clnt *c)
{
	struct tcp_xprt *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->fd = -1;
	c->xprt = t;
	return 0;
}

static void tcp_reset_rx(struct tcp_xprt *t)
{
	t->hdr_have = 0;
	t->frag_left = 0;
	t->in_frag = false;
	t->last_frag = false;
	t->msg_len = 0;
}

static int tcp_connect(struct rrr_clnt *c, int timeout_ms)
{
	struct tcp_xprt *t = X(c);
	struct sockaddr_storage ss;
	socklen_t sl;
	struct pollfd pfd;
	int fd, rc, one = 1, err = 0;
	socklen_t el = sizeof(err);

	rc = rrr_addr_parse(c->host, c->port, &ss, &sl);
	if (rc)
		return rc;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return rrr__set_error(-errno, "socket: %s", strerror(errno));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
			goto fail;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			rc = poll(&pfd, 1, timeout_ms);
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			rc = -ETIMEDOUT;
			goto fail;
		}
		if (rc < 0) {
			rc = -errno;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		if (err) {
			rc = -err;
			goto fail;
		}
	}
	rc = rrr__clnt_watch(c, fd, EPOLLIN, TAG_SOCK);
	if (rc)
		goto fail;
	t->fd = fd;
	t->want_out = false;
	tcp_reset_rx(t);
	return 0;
fail:
	close(fd);
	return rrr__set_error(rc, "cannot connect to %s:%s over TCP: %s", c->host, c->port,
			      strerror(-rc));
}

static void tcp_close(struct rrr_clnt *c)
{
	struct tcp_xprt *t = X(c);
	struct out_ent *e;

	if (t->fd >= 0) {
		rrr__clnt_unwatch(c, t->fd);
		close(t->fd);
		t->fd = -1;
	}
	while ((e = t->out_head)) {
		t->out_head = e->next;
		if (!e->req)
			free(e->buf);
		else
			e->req->xprt = NULL;
		free(e);
	}
	t->out_tail = NULL;
	tcp_reset_rx(t);
}

static bool tcp_can_send(struct rrr_clnt *c)
{
	return X(c)->fd >= 0;
}

static int set_out_interest(struct rrr_clnt *c, bool want)
{
	struct tcp_xprt *t = X(c);

	if (t->want_out == want)
		return 0;
	t->want_out = want;
	return rrr__clnt_watch(c, t->fd, EPOLLIN | (want ? EPOLLOUT : 0), TAG_SOCK);
}

/* Write as much of the output queue as the socket takes. */
static int flush_out(struct rrr_clnt *c)
{
	struct tcp_xprt *t = X(c);
	struct out_ent *e;

	while ((e = t->out_head)) {
		ssize_t n = send(t->fd, e->buf + e->off, e->len - e->off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return set_out_interest(c, true) ? -ENOTCONN : 0;
			return -ENOTCONN;
		}
		e->off += (size_t)n;
		RRR__CLNT_STAT_ADD(c, send_bytes, (uint64_t)n);
		if (e->off < e->len)
			continue;
		t->out_head = e->next;
		if (!t->out_head)
			t->out_tail = NULL;
		if (e->req)
			e->req->xprt = NULL;
		else
			free(e->buf);
		free(e);
	}
	return set_out_interest(c, false) ? -ENOTCONN : 0;
}

static int tcp_send(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct tcp_xprt *t = X(c);
	struct out_ent *e;
	uint32_t rm;

	if (t->fd < 0)
		return -ENOTCONN;
	if (req->len - 4 > RRR_RPC_RM_LEN_MASK)
		return -EMSGSIZE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -EAGAIN;
	rm = RRR_RPC_RM_LAST | (uint32_t)(req->len - 4);
	req->buf[0] = (uint8_t)(rm >> 24);
	req->buf[1] = (uint8_t)(rm >> 16);
	req->buf[2] = (uint8_t)(rm >> 8);
	req->buf[3] = (uint8_t)rm;
	e->req = req;
	e->buf = req->buf;
	e->len = req->len;
	req->xprt = e;
	if (t->out_tail)
		t->out_tail->next = e;
	else
		t->out_head = e;
	t->out_tail = e;
	RRR__CLNT_STAT_ADD(c, inline_calls, 1);
	return flush_out(c);
}

/* Detach @req from the output queue: unsent -> removed; half sent -> the
 * queue takes its buffer. */
static void detach_out(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct tcp_xprt *t = X(c);
	struct out_ent **pp, *prev = NULL, *e;

	if (!req->xprt)
		return;
	for (pp = &t->out_head; (e = *pp); prev = e, pp = &e->next) {
		if (e->req != req)
			continue;
		if (e->off == 0) {
			*pp = e->next;
			if (t->out_tail == e)
				t->out_tail = prev;
			free(e);
		} else {
			e->req = NULL;
			req->buf = NULL; /* now owned by the queue entry */
		}
		break;
	}
	req->xprt = NULL;
}

static void tcp_abort(struct rrr_clnt *c, struct rrr__clnt_req *req, int status)
{
	detach_out(c, req);
	rrr__clnt_complete(c, req, status);
}

static void deliver(struct rrr_clnt *c)
{
	struct tcp_xprt *t = X(c);
	struct rrr__clnt_req *req;
	uint32_t xid;
	int st;

	if (t->msg_len < 4) {
		RRR__CLNT_STAT_ADD(c, bad_replies, 1);
		return;
	}
	xid = (uint32_t)t->msg[0] << 24 | (uint32_t)t->msg[1] << 16 | (uint32_t)t->msg[2] << 8 |
	      t->msg[3];
	req = rrr__clnt_lookup(c, xid);
	if (!req || req->aborting) {
		/* late reply to a call that timed out or was cancelled */
		return;
	}
	/* a reply also means the whole call was written: drop its out entry */
	detach_out(c, req);
	st = rrr__clnt_decode_reply(c, req, t->msg, t->msg_len);
	pthread_mutex_lock(&c->lock);
	c->stats.replies++;
	if (st == -EBADMSG)
		c->stats.bad_replies++;
	pthread_mutex_unlock(&c->lock);
	rrr__clnt_complete(c, req, st);
}

static int read_some(struct rrr_clnt *c)
{
	struct tcp_xprt *t = X(c);
	uint8_t tmp[65536];
	ssize_t n;
	size_t i = 0;

	n = recv(t->fd, tmp, sizeof(tmp), 0);
	if (n == 0)
		return -ENOTCONN;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return -EAGAIN;
		return -ENOTCONN;
	}
	RRR__CLNT_STAT_ADD(c, recv_bytes, (uint64_t)n);
	while (i < (size_t)n) {
		if (!t->in_frag) {
			uint32_t rm, flen;

			t->hdr[t->hdr_have++] = tmp[i++];
			if (t->hdr_have < 4)
				continue;
			t->hdr_have = 0;
			rm = (uint32_t)t->hdr[0] << 24 | (uint32_t)t->hdr[1] << 16 |
			     (uint32_t)t->hdr[2] << 8 | t->hdr[3];
			flen = rm & RRR_RPC_RM_LEN_MASK;
			if (flen > MAX_RECORD || t->msg_len > MAX_RECORD - flen)
				return -ENOTCONN; /* hostile or broken peer */
			if (t->msg_len + flen > t->msg_cap) {
				size_t cap = t->msg_cap ? t->msg_cap : 8192;
				uint8_t *m;

				while (cap < t->msg_len + flen)
					cap *= 2;
				m = realloc(t->msg, cap);
				if (!m)
					return -ENOTCONN;
				t->msg = m;
				t->msg_cap = cap;
			}
			t->frag_left = flen;
			t->last_frag = (rm & RRR_RPC_RM_LAST) != 0;
			t->in_frag = true;
		}
		if (t->frag_left) {
			size_t take = (size_t)n - i < t->frag_left ? (size_t)n - i : t->frag_left;

			memcpy(t->msg + t->msg_len, tmp + i, take);
			t->msg_len += take;
			t->frag_left -= (uint32_t)take;
			i += take;
		}
		if (t->frag_left == 0) {
			t->in_frag = false;
			if (t->last_frag) {
				deliver(c);
				t->msg_len = 0;
			}
		}
	}
	return 0;
}

static int tcp_progress(struct rrr_clnt *c, uint32_t tag)
{
	struct tcp_xprt *t = X(c);
	int rc;

	(void)tag;
	if (t->fd < 0)
		return -ENOTCONN;
	if (t->out_head && flush_out(c))
		return -ENOTCONN;
	for (int i = 0; i < 64; i++) {
		rc = read_some(c);
		if (rc == -EAGAIN)
			break;
		if (rc)
			return -ENOTCONN;
	}
	return 0;
}

static void tcp_destroy(struct rrr_clnt *c)
{
	struct tcp_xprt *t = X(c);

	if (!t)
		return;
	tcp_close(c);
	free(t->msg);
	free(t);
	c->xprt = NULL;
}

static uint32_t tcp_max_payload(const struct rrr_clnt *c)
{
	(void)c;
	return MAX_PAYLOAD;
}

const struct rrr__clnt_xprt_ops rrr__clnt_tcp_ops = {
    .name = "tcp",
    .create = tcp_create,
    .connect = tcp_connect,
    .close = tcp_close,
    .can_send = tcp_can_send,
    .send = tcp_send,
    .progress = tcp_progress,
    .abort = tcp_abort,
    .destroy = tcp_destroy,
    .max_payload = tcp_max_payload,
};
