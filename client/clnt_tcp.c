/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_tcp.c - ONC RPC over TCP with record marking (RFC 5531
 * section 11), a transport of the client core (clnt.c).
 *
 * Normal operation. The core encodes each call into one buffer that begins
 * with 4 bytes reserved for the record marker; a TO_SERVER DDP payload (a
 * WRITE's data) is not in it: the encoder recorded its iovecs and where it
 * belongs (after its length word, then its XDR pad). send() lays the
 * record out with rrr__rm_out_set() (xdr/oncrpc_rm.c, shared with the
 * server: the marker - one fragment, last-fragment bit set - and where the
 * payload goes) and appends an output entry to the queue; the queue is written with non-blocking sendmsg()
 * calls that gather header, the caller's payload buffers, pad and the rest
 * of the arguments, so the payload is never copied or staged in fresh
 * memory. EPOLLOUT is requested only while something remains.
 *
 *   record: [marker][buf 4..payload_pos)[payload iovecs][pad][buf payload_pos..len)
 *
 * Output entries come from a free list kept by the transport (at most
 * max_requests of them), so the steady state allocates nothing. Replies are
 * reassembled by the record-marking reassembler (xdr/oncrpc_rm.c): a 4-byte
 * marker, then the fragment; fragments are concatenated until the
 * last-fragment bit. A complete record is matched
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
 * A reconnect binds the local port of the last connection again (like
 * Linux's client), so a server that keys its duplicate request cache on the
 * client's address and port (rrr-server, Linux nfsd) knows the re-sent
 * calls; when the port is not free the kernel picks one.
 *
 * Hostile peers: a fragment length and the record's total are bounded by
 * MAX_RECORD before any allocation; a record that is too large drops the
 * connection; one too short to carry an xid is counted as a bad reply.
 *
 * Recovery. A read of 0 bytes or a socket error reports -ENOTCONN; the core
 * closes and retries or fails the outstanding calls. If a call is aborted
 * (timeout/cancel) while it is half written, the rest of its record is
 * copied into a buffer the output entry owns, so the record can be
 * finished without touching the caller's memory (which the caller may free
 * once the call completed); if that copy cannot be allocated the
 * connection is shut down instead, never left with half a record.
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
#include "common/rrr_impl.h"
#include "xdr/oncrpc_rm.h"

#define TAG_SOCK    1u
#define MAX_PAYLOAD (1u << 20)
#define MAX_RECORD  (MAX_PAYLOAD + (256u << 10))

/* One record on the output queue: head = buf[0..split), then the payload
 * iovecs and pad bytes of zeros, then buf[split..blen). */
struct out_ent {
	struct out_ent *next;
	struct rrr__clnt_req *req; /* NULL once orphaned */
	uint8_t *owned;		   /* the rest's copy once orphaned, else NULL */
	struct rrr__rm_out r;	   /* the record: req->buf + payload, or owned */
};

struct tcp_xprt {
	int fd;
	struct out_ent *out_head, *out_tail;
	struct out_ent *ent_free; /* spare entries, at most max_requests */
	unsigned nent_free;
	bool want_out;
	/* receive */
	struct rrr__rm rm; /* record reassembly, MAX_RECORD */
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
	rrr__rm_init(&t->rm, MAX_RECORD);
	c->xprt = t;
	return 0;
}

static void tcp_reset_rx(struct tcp_xprt *t)
{
	rrr__rm_reset(&t->rm);
}

/* A non-blocking socket connecting to @ss: from the port of the last
 * connection when there was one and the kernel lets us have it again
 * (SO_REUSEADDR: a port in TIME_WAIT is taken when the peer allows), else
 * from a port the kernel picks. The socket, or -errno. */
static int tcp_open(struct rrr_clnt *c, const struct sockaddr_storage *ss, socklen_t sl)
{
	int fd, one = 1;

	if (c->srclen && c->src.ss_family == ss->ss_family) {
		fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
		    !bind(fd, (const struct sockaddr *)&c->src, c->srclen) &&
		    (!connect(fd, (const struct sockaddr *)ss, sl) || errno == EINPROGRESS))
			return fd;
		close(fd);
	}
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)ss, sl) < 0 && errno != EINPROGRESS) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
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
	fd = tcp_open(c, &ss, sl);
	if (fd < 0)
		return rrr__set_error(fd, "cannot connect to %s:%s over TCP: %s", c->host, c->port,
				      strerror(-fd));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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
	rc = rrr__clnt_watch(c, fd, EPOLLIN, TAG_SOCK);
	if (rc)
		goto fail;
	t->fd = fd;
	t->want_out = false;
	tcp_reset_rx(t);
	c->srclen = sizeof(c->src); /* the next connection comes from this port */
	if (getsockname(fd, (struct sockaddr *)&c->src, &c->srclen) < 0)
		c->srclen = 0;
	return 0;
fail:
	close(fd);
	return rrr__set_error(rc, "cannot connect to %s:%s over TCP: %s", c->host, c->port,
			      strerror(-rc));
}

static struct out_ent *ent_get(struct tcp_xprt *t)
{
	struct out_ent *e = t->ent_free;

	if (!e)
		return malloc(sizeof(*e));
	t->ent_free = e->next;
	t->nent_free--;
	return e;
}

/* Back to the free list (bounded by max_requests), its owned buffer freed. */
static void ent_put(struct rrr_clnt *c, struct out_ent *e)
{
	struct tcp_xprt *t = X(c);

	if (!e->req)
		free(e->owned);
	else
		e->req->xprt = NULL;
	e->owned = NULL;
	if (t->nent_free >= c->opts.max_requests) {
		free(e);
		return;
	}
	e->next = t->ent_free;
	t->ent_free = e;
	t->nent_free++;
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
		ent_put(c, e);
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
	struct iovec iov[RRR__RM_OUT_IOV_MAX];
	struct msghdr mh = {.msg_iov = iov};
	struct out_ent *e;

	while ((e = t->out_head)) {
		ssize_t n;

		mh.msg_iovlen = rrr__rm_out_iov(&e->r, iov);
		n = sendmsg(t->fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return set_out_interest(c, true) ? -ENOTCONN : 0;
			return -ENOTCONN;
		}
		e->r.off += (size_t)n;
		RRR__CLNT_STAT_ADD(c, send_bytes, (uint64_t)n);
		if (e->r.off < e->r.len)
			continue;
		t->out_head = e->next;
		if (!t->out_head)
			t->out_tail = NULL;
		ent_put(c, e);
	}
	return set_out_interest(c, false) ? -ENOTCONN : 0;
}

static int tcp_send(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct tcp_xprt *t = X(c);
	struct rrr__rm_out r;
	struct out_ent *e;
	int rc;

	if (t->fd < 0)
		return -ENOTCONN;
	/* payload_pos counts from the XDR stream, after the marker */
	if (req->has_payload && 4 + (uint64_t)req->payload_pos > req->len)
		return -EINVAL;
	rc = rrr__rm_out_set(&r, req->buf, req->len, 4 + (size_t)req->payload_pos,
			     req->has_payload ? req->payload_iov : NULL, req->payload_niov,
			     req->payload_len);
	if (rc)
		return rc;
	e = ent_get(t);
	if (!e)
		return -EAGAIN;
	e->next = NULL;
	e->req = req;
	e->owned = NULL;
	e->r = r;
	req->xprt = e;
	if (t->out_tail)
		t->out_tail->next = e;
	else
		t->out_head = e;
	t->out_tail = e;
	RRR__CLNT_STAT_ADD(c, inline_calls, 1);
	return flush_out(c);
}

/* Copy the unwritten rest of @e's record into a buffer @e owns (the
 * caller's payload and the request's buffer are no longer used); false
 * when it cannot be allocated (e->buf then is nothing to free). */
static bool orphan(struct out_ent *e)
{
	struct iovec iov[RRR__RM_OUT_IOV_MAX];
	unsigned n = rrr__rm_out_iov(&e->r, iov);
	size_t rest = e->r.len - e->r.off;
	uint8_t *p = malloc(rest ? rest : 1), *q = p;

	if (p)
		for (unsigned i = 0; i < n; i++) {
			memcpy(q, iov[i].iov_base, iov[i].iov_len);
			q += iov[i].iov_len;
		}
	e->owned = p;
	/* the rest as plain bytes: no marker to write, no payload */
	e->r = (struct rrr__rm_out){.buf = p, .blen = p ? rest : 0, .split = p ? rest : 0,
				    .len = p ? rest : 0};
	return p != NULL;
}

/* Detach @req from the output queue: unsent -> removed; half sent -> the
 * entry keeps a copy of the rest of the record. */
static void detach_out(struct rrr_clnt *c, struct rrr__clnt_req *req)
{
	struct tcp_xprt *t = X(c);
	struct out_ent **pp, *prev = NULL, *e;

	if (!req->xprt)
		return;
	for (pp = &t->out_head; (e = *pp); prev = e, pp = &e->next) {
		if (e->req != req)
			continue;
		if (e->r.off == 0) {
			*pp = e->next;
			if (t->out_tail == e)
				t->out_tail = prev;
			ent_put(c, e);
			break;
		}
		/* half written: the entry keeps a private copy of the rest */
		e->req = NULL;
		if (!orphan(e)) {
			/* cannot finish the record: end the connection, it
			 * must not carry half a record followed by the next */
			*pp = e->next;
			if (t->out_tail == e)
				t->out_tail = prev;
			ent_put(c, e);
			if (t->fd >= 0)
				shutdown(t->fd, SHUT_RDWR);
			c->broken = true;
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
	uint8_t *msg = t->rm.rec;
	struct rrr__clnt_req *req;
	uint32_t xid;
	int st;

	if (t->rm.len < 4) {
		RRR__CLNT_STAT_ADD(c, bad_replies, 1);
		return;
	}
	xid = (uint32_t)msg[0] << 24 | (uint32_t)msg[1] << 16 | (uint32_t)msg[2] << 8 | msg[3];
	req = rrr__clnt_lookup(c, xid);
	if (!req || req->aborting) {
		/* late reply to a call that timed out or was cancelled */
		return;
	}
	/* a reply also means the whole call was written: drop its out entry */
	detach_out(c, req);
	st = rrr__clnt_decode_reply(c, req, msg, t->rm.len);
	RRR__CLNT_STAT_ADD(c, replies, 1);
	if (st == -EBADMSG)
		RRR__CLNT_STAT_ADD(c, bad_replies, 1);
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
		size_t used;
		int rc = rrr__rm_feed(&t->rm, tmp + i, (size_t)n - i, &used);

		i += used;
		if (rc < 0)
			return -ENOTCONN; /* hostile or broken peer, or no memory */
		if (rc == 1) {
			deliver(c);
			rrr__rm_next(&t->rm);
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
	while (t->ent_free) {
		struct out_ent *e = t->ent_free;

		t->ent_free = e->next;
		free(e);
	}
	rrr__rm_fini(&t->rm);
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
