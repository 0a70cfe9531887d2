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
 * Normal operation. Sockets are non-blocking and live in a worker's epoll
 * set. Input goes through the record-marking reassembler
 * (xdr/oncrpc_rm.c): read the 4-byte marker, then read the fragment
 * straight into its record buffer (grown geometrically), and when the last
 * fragment is in, dispatch the record. The reply is encoded
 * behind a reserved marker word in a per-connection reply buffer, sent as
 * one fragment; if the socket cannot take it all, the connection waits for
 * EPOLLOUT and reads nothing more until the reply is out (back-pressure:
 * one request at a time per connection, handlers run to completion).
 * The request arena is given back once the reply has left.
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
 * Recovery: any socket error, EOF or protocol violation closes the
 * connection; nothing else is affected. On shutdown an idle connection
 * closes at once, one with a reply in flight closes when it is out.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

struct tcp_conn {
	struct rrr__svc_conn base;
	uint32_t max_record;
	/* input: record reassembly bounded by max_record (xdr/oncrpc_rm.c) */
	struct rrr__rm rm;
	/* output */
	uint8_t *reply; /* 4-byte marker + reply message */
	size_t reply_cap;
	struct rrr__rm_out out; /* the reply record being sent */
	bool out_busy;
	bool shutting;
	struct rrr_svc_req req;
	/* the result payload sent from where it lies (DDP hook) */
	struct rrr_xdr_ddp ddp;
	bool has_pay;
	size_t pay_at; /* reply[] offset where it goes (after its length word) */
	uint32_t pay_len;
	unsigned pay_niov;
	struct iovec pay_iov[RRR_XDR_PAYLOAD_MAX_IOV];
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
	struct tcp_conn *t = ctx;
	uint64_t padded = ((uint64_t)len + 3u) & ~(uint64_t)3u;

	if (!t->has_pay && niov <= RRR_XDR_PAYLOAD_MAX_IOV) {
		/* the bytes count against the reply's room as if copied */
		if (padded > rrr_xdr_remaining(xdr))
			return -EMSGSIZE;
		xdr->len -= (size_t)padded;
		t->has_pay = true;
		t->pay_at = 4 + rrr_xdr_pos(xdr);
		t->pay_len = len;
		t->pay_niov = niov;
		if (niov)
			memcpy(t->pay_iov, iov, niov * sizeof(*iov));
		return 0;
	}
	return rrr__rm_out_copy(xdr, iov, niov, len);
}

/* Send what is pending; 1 when all is out, 0 when it must wait, -errno. */
static int tcp_flush(struct tcp_conn *t)
{
	struct rrr_xprt_stats *st = t->base.st;
	struct iovec iov[RRR__RM_OUT_IOV_MAX];
	struct msghdr mh = {.msg_iov = iov};

	while (t->out.off < t->out.len) {
		ssize_t n;

		mh.msg_iovlen = rrr__rm_out_iov(&t->out, iov);
		n = sendmsg(t->base.fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		t->out.off += (size_t)n;
		RRR__STAT_ADD(st, send_bytes, (uint64_t)n);
	}
	t->out_busy = false;
	t->has_pay = false;
	rrr__svc_req_end(&t->req);
	return 1;
}

/* Dispatch the complete record in t->rm; start sending the reply. */
static int tcp_handle_record(struct tcp_conn *t)
{
	struct rrr_xdr args, res;
	enum rrr__svc_verdict v;

	if (!t->reply) {
		t->reply_cap = 4 + (size_t)t->max_record;
		t->reply = malloc(t->reply_cap);
		if (!t->reply)
			return -ENOMEM;
	}
	memset(&t->req, 0, sizeof(t->req));
	t->req.svc = t->base.svc;
	t->req.conn = &t->base;
	t->req.max_payload = rrr__svc_opts(t->base.svc)->max_payload;
	rrr_xdr_init(&args, t->rm.rec, t->rm.len, RRR_XDR_DECODE);
	rrr_xdr_init(&res, t->reply + 4, t->reply_cap - 4, RRR_XDR_ENCODE);
	t->has_pay = false;
	t->ddp.encode = reply_payload;
	t->ddp.decode = NULL;
	t->ddp.ctx = t;
	rrr_xdr_set_ddp(&res, &t->ddp);
	v = rrr__svc_dispatch(&t->req, &args, &res);
	/* the record is reused from here on: the handler's after-reply work
	 * runs now, while its arguments are there */
	rrr__svc_req_after_reply(&t->req, v != RRR__SVC_NO_REPLY);
	rrr__rm_next(&t->rm);
	if (v != RRR__SVC_REPLY_OK)
		t->has_pay = false; /* an error reply replaced the results */
	if (v == RRR__SVC_NO_REPLY) {
		rrr__svc_req_end(&t->req);
		return 1;
	}
	/* the reply's room was bounded by max_record: the record fits a marker */
	if (rrr__rm_out_set(&t->out, t->reply, 4 + rrr_xdr_pos(&res), t->pay_at,
			    t->has_pay ? t->pay_iov : NULL, t->pay_niov, t->pay_len)) {
		rrr__svc_req_end(&t->req);
		return -EMSGSIZE;
	}
	t->out_busy = true;
	RRR__STAT_ADD(t->base.st, replies, 1);
	return tcp_flush(t);
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
	if (t->out_busy) {
		if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLOUT))
			goto fail;
		rc = tcp_flush(t);
		if (rc < 0)
			goto fail;
		if (rc == 0)
			return;
		if (t->shutting) {
			tcp_close(t);
			return;
		}
		rrr__svc_conn_set_events(c, EPOLLIN);
	}
	while (records < TCP_RECORDS_PER_EVENT && reads++ < TCP_READS_PER_EVENT) {
		rc = tcp_read_some(t);
		if (rc == 0)
			return;
		if (rc < 0)
			goto fail;
		if (rc == 2) {
			records++;
			rc = tcp_handle_record(t);
			if (rc < 0)
				goto fail;
			if (rc == 0) {
				rrr__svc_conn_set_events(c, EPOLLOUT);
				return;
			}
			if (t->shutting) {
				tcp_close(t);
				return;
			}
		}
	}
	return;
fail:
	RRR_PROBE2(svc_conn_failed, c, "TCP: socket error, end of stream or protocol violation");
	tcp_close(t);
}

static void tcp_shutdown(struct rrr__svc_conn *c)
{
	struct tcp_conn *t = container_of(c, struct tcp_conn, base);

	t->shutting = true;
	if (!t->out_busy)
		tcp_close(t);
}

static void tcp_destroy(struct rrr__svc_conn *c)
{
	struct tcp_conn *t = container_of(c, struct tcp_conn, base);

	if (t->out_busy)
		rrr__svc_req_end(&t->req);
	if (c->fd >= 0)
		close(c->fd);
	rrr__rm_fini(&t->rm);
	free(t->reply);
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
