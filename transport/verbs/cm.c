/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/cm.c - connection management over librdmacm.
 *
 * Normal operation: one rrr_cm is one rdma_event_channel whose fd is set
 * non-blocking and handed to the caller for epoll. rrr_cm_get_event() reads
 * one rdma_cm event, translates it, copies the private data out, and acks it
 * at once (so rdma_destroy_id never waits on us). Address resolution is two
 * steps in rdma_cm (ADDR_RESOLVED then ROUTE_RESOLVED); the first is handled
 * here (rdma_resolve_route with the caller's timeout) and only the second is
 * reported, as RRR_CM_EVENT_RESOLVED. A CONNECT_REQUEST carries a new
 * rdma_cm_id: it gets a new rrr_cm_id (context = the listener's ctx) that the
 * caller accepts or rejects and then owns.
 *
 * Private data: rdma_cm over RoCE/IB carries it in IB CM messages whose
 * private-data fields have fixed sizes, so the receiver sees the sender's
 * bytes followed by zero padding (e.g. 56 bytes for a connect request).
 * Consumers must carry their own length or tolerate trailing zeros (RFC 8797
 * private data does). iWARP devices deliver the exact length.
 *
 * Recovery: ADDR/ROUTE/CONNECT errors and UNREACHABLE become
 * RRR_CM_EVENT_UNREACHABLE with a negative status and a message
 * ("rdma_cm could not resolve ..."); a REJECTED carries -ECONNREFUSED and the
 * reject's private data; a DISCONNECTED is answered at once (rdma_disconnect:
 * the peer's DREQ gets its DREP, our QP goes to error and flushes), so the
 * side that started the disconnect sees its DISCONNECTED promptly;
 * DEVICE_REMOVAL is reported as such: the caller must
 * tear everything down on that device.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_impl.h"

int rrr__verbs_cm_create(struct rrr_device *dev, struct rrr_cm **out)
{
	struct vcm *c = calloc(1, sizeof(*c));
	int fl;

	if (!c)
		return -ENOMEM;
	c->ch = rdma_create_event_channel();
	if (!c->ch) {
		int rc = rrr__verbs_err(-1);

		free(c);
		return rrr__set_error(rc, "verbs: rdma_create_event_channel failed (is "
					  "rdma_ucm loaded?)");
	}
	fl = fcntl(c->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int rc = -errno;

		rdma_destroy_event_channel(c->ch);
		free(c);
		return rc;
	}
	c->pub.dev = dev;
	*out = &c->pub;
	return 0;
}

void rrr__verbs_cm_destroy(struct rrr_cm *cm)
{
	struct vcm *c = VCM(cm);

	rdma_destroy_event_channel(c->ch);
	free(c);
}

int rrr__verbs_cm_fd(struct rrr_cm *cm)
{
	return VCM(cm)->ch->fd;
}

static struct vcm_id *new_id(struct rrr_cm *cm, struct rdma_cm_id *raw, void *ctx)
{
	struct vcm_id *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->pub.cm = cm;
	v->pub.ctx = ctx;
	v->id = raw;
	v->resolve_timeout_ms = 2000;
	raw->context = v;
	return v;
}

int rrr__verbs_cm_id_create(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out)
{
	struct rdma_cm_id *raw;
	struct vcm_id *v;

	if (rdma_create_id(VCM(cm)->ch, &raw, NULL, RDMA_PS_TCP))
		return rrr__set_error(rrr__verbs_err(-1), "verbs: rdma_create_id failed");
	v = new_id(cm, raw, ctx);
	if (!v) {
		rdma_destroy_id(raw);
		return -ENOMEM;
	}
	*out = &v->pub;
	return 0;
}

void rrr__verbs_cm_id_destroy(struct rrr_cm_id *id)
{
	struct vcm_id *v = VID(id);

	if (v->id) {
		v->id->context = NULL;
		rdma_destroy_id(v->id);
	}
	free(v);
}

static int copy_addr(const struct sockaddr *sa, struct sockaddr_storage *ss)
{
	size_t len;

	if (!sa)
		return -ENOTCONN;
	if (sa->sa_family == AF_INET)
		len = sizeof(struct sockaddr_in);
	else if (sa->sa_family == AF_INET6)
		len = sizeof(struct sockaddr_in6);
	else if (sa->sa_family == AF_IB || sa->sa_family == AF_UNSPEC)
		return -ENOTCONN;
	else
		len = sizeof(*ss);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, len);
	return 0;
}

int rrr__verbs_cm_peer_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss)
{
	return copy_addr(rdma_get_peer_addr(VID(id)->id), ss);
}

int rrr__verbs_cm_local_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss)
{
	return copy_addr(rdma_get_local_addr(VID(id)->id), ss);
}

static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a = sa->sa_family == AF_INET6
			    ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
			    : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

int rrr__verbs_cm_listen(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len,
			 int backlog)
{
	struct vcm_id *v = VID(id);
	char a[64];

	(void)len;
	if (rdma_bind_addr(v->id, (struct sockaddr *)addr)) {
		int rc = rrr__verbs_err(-1);

		addr_str(addr, a, sizeof(a));
		return rrr__set_error(rc,
				      "verbs: rdma_bind_addr %s: %s (an address of an "
				      "RDMA-capable netdev is needed)",
				      a, strerror(-rc));
	}
	if (rdma_listen(v->id, backlog > 0 ? backlog : 16))
		return rrr__set_error(rrr__verbs_err(-1), "verbs: rdma_listen failed");
	v->listening = true;
	return 0;
}

int rrr__verbs_cm_set_source(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len)
{
	struct vcm_id *v = VID(id);

	if (v->listening || len > sizeof(v->src))
		return -EINVAL;
	memcpy(&v->src, src, len);
	v->srclen = len;
	return 0;
}

int rrr__verbs_cm_resolve(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len,
			  int timeout_ms)
{
	struct vcm_id *v = VID(id);
	char a[64];

	(void)len;
	if (timeout_ms <= 0)
		timeout_ms = 2000;
	v->resolve_timeout_ms = timeout_ms;
	/* from the source asked for when its port is free, else from any */
	if (v->srclen && v->src.ss_family == dst->sa_family &&
	    !rdma_resolve_addr(v->id, (struct sockaddr *)&v->src, (struct sockaddr *)dst, timeout_ms))
		return 0;
	if (rdma_resolve_addr(v->id, NULL, (struct sockaddr *)dst, timeout_ms)) {
		int rc = rrr__verbs_err(-1);

		addr_str(dst, a, sizeof(a));
		return rrr__set_error(rc, "rdma_cm could not resolve %s: %s", a, strerror(-rc));
	}
	return 0;
}

static void conn_param(struct rdma_conn_param *cp, const struct rrr_conn_param *p,
		       const struct vcm_id *v)
{
	const struct ibv_device_attr *a = NULL;
	struct ibv_device_attr qa;
	uint32_t ird = p ? p->ird : 0, ord = p ? p->ord : 0;

	memset(cp, 0, sizeof(*cp));
	if (v->id->verbs && ibv_query_device(v->id->verbs, &qa) == 0)
		a = &qa;
	if (ird == 0)
		ird = 16;
	if (ord == 0)
		ord = 16;
	if (a && ird > (uint32_t)a->max_qp_rd_atom)
		ird = (uint32_t)a->max_qp_rd_atom;
	if (a && ord > (uint32_t)a->max_qp_init_rd_atom)
		ord = (uint32_t)a->max_qp_init_rd_atom;
	cp->responder_resources = (uint8_t)(ird > 255 ? 255 : ird);
	cp->initiator_depth = (uint8_t)(ord > 255 ? 255 : ord);
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
	if (p && p->private_data_len) {
		cp->private_data = p->private_data;
		cp->private_data_len = (uint8_t)p->private_data_len;
	}
}

int rrr__verbs_cm_connect(struct rrr_cm_id *id, const struct rrr_conn_param *param)
{
	struct vcm_id *v = VID(id);
	struct rdma_conn_param cp;

	if (!id->qp)
		return rrr__set_error(-EINVAL, "verbs: connect needs the QP created first");
	if (param && param->private_data_len > VERBS_CONNECT_PDATA)
		return rrr__set_error(-EINVAL,
				      "verbs: connect private data of %u bytes "
				      "exceeds %u (IB CM REQ)",
				      param->private_data_len, VERBS_CONNECT_PDATA);
	conn_param(&cp, param, v);
	if (rdma_connect(v->id, &cp))
		return rrr__set_error(rrr__verbs_err(-1), "verbs: rdma_connect failed");
	return 0;
}

int rrr__verbs_cm_accept(struct rrr_cm_id *id, const struct rrr_conn_param *param)
{
	struct vcm_id *v = VID(id);
	struct rdma_conn_param cp;

	if (!id->qp)
		return rrr__set_error(-EINVAL, "verbs: accept needs the QP created first");
	conn_param(&cp, param, v);
	if (rdma_accept(v->id, &cp))
		return rrr__set_error(rrr__verbs_err(-1), "verbs: rdma_accept failed");
	return 0;
}

int rrr__verbs_cm_reject(struct rrr_cm_id *id, const void *pdata, uint32_t len)
{
	if (len > VERBS_REJECT_PDATA)
		return rrr__set_error(-EINVAL,
				      "verbs: reject private data of %u bytes exceeds "
				      "%u (IB CM REJ)",
				      len, VERBS_REJECT_PDATA);
	if (rdma_reject(VID(id)->id, pdata, (uint8_t)len))
		return rrr__set_error(rrr__verbs_err(-1), "verbs: rdma_reject failed");
	return 0;
}

int rrr__verbs_cm_disconnect(struct rrr_cm_id *id)
{
	if (rdma_disconnect(VID(id)->id))
		return rrr__verbs_err(-1);
	return 0;
}

static void copy_pdata(struct rrr_cm_event *ev, const void *p, uint8_t len)
{
	uint32_t n = len;

	if (!p)
		n = 0;
	if (n > RRR_CM_MAX_PRIVATE_DATA)
		n = RRR_CM_MAX_PRIVATE_DATA;
	ev->private_data_len = n;
	if (n)
		memcpy(ev->private_data, p, n);
}

static int unreachable_status(int st, int dflt)
{
	if (st < 0 && st > -4096)
		return st;
	return dflt;
}

/* Translate one event; returns 1 if @ev was filled, 0 to skip it, or -errno. */
static int translate(struct vcm *c, struct rdma_cm_event *e, struct rrr_cm_event *ev)
{
	struct vcm_id *v = e->id ? e->id->context : NULL;
	char a[64];

	memset(ev, 0, sizeof(*ev));
	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!v)
			return 0;
		if (rdma_resolve_route(v->id, v->resolve_timeout_ms) == 0)
			return 0;
		ev->type = RRR_CM_EVENT_UNREACHABLE;
		ev->id = &v->pub;
		ev->status = rrr__verbs_err(-1);
		rrr__set_error(ev->status, "rdma_cm could not resolve the route: %s",
			       strerror(-ev->status));
		return 1;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_RESOLVED;
		ev->id = &v->pub;
		return 1;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_UNREACHABLE;
		ev->id = &v->pub;
		ev->status = unreachable_status(e->status, -EHOSTUNREACH);
		if (rdma_get_peer_addr(v->id)->sa_family)
			addr_str(rdma_get_peer_addr(v->id), a, sizeof(a));
		else
			snprintf(a, sizeof(a), "the address");
		rrr__set_error(ev->status,
			       "rdma_cm could not resolve %s: %s (is it the "
			       "address of an RDMA-capable netdev? loopback 127.0.0.1 is "
			       "not)",
			       a, strerror(-ev->status));
		return 1;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_UNREACHABLE;
		ev->id = &v->pub;
		ev->status = unreachable_status(e->status, -ETIMEDOUT);
		rrr__set_error(ev->status, "rdma_cm connection failed: %s", strerror(-ev->status));
		return 1;
	case RDMA_CM_EVENT_CONNECT_REQUEST: {
		struct vcm_id *l = e->listen_id ? e->listen_id->context : NULL;
		struct vcm_id *nv;

		if (!l) {
			rdma_reject(e->id, NULL, 0);
			rdma_destroy_id(e->id);
			return 0;
		}
		nv = new_id(&c->pub, e->id, l->pub.ctx);
		if (!nv) {
			rdma_reject(e->id, NULL, 0);
			rdma_destroy_id(e->id);
			return 0;
		}
		ev->type = RRR_CM_EVENT_CONNECT_REQUEST;
		ev->id = &nv->pub;
		ev->listen_id = &l->pub;
		ev->ird = e->param.conn.responder_resources;
		ev->ord = e->param.conn.initiator_depth;
		copy_pdata(ev, e->param.conn.private_data, e->param.conn.private_data_len);
		return 1;
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_ESTABLISHED;
		ev->id = &v->pub;
		ev->ird = e->param.conn.responder_resources;
		ev->ord = e->param.conn.initiator_depth;
		copy_pdata(ev, e->param.conn.private_data, e->param.conn.private_data_len);
		return 1;
	case RDMA_CM_EVENT_REJECTED:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_REJECTED;
		ev->id = &v->pub;
		ev->status = -ECONNREFUSED;
		copy_pdata(ev, e->param.conn.private_data, e->param.conn.private_data_len);
		return 1;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* Answer the peer's DREQ now (the DREP), so its DISCONNECTED is
		 * prompt, and move our QP to error (flushing its WRs). */
		rdma_disconnect(e->id);
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_DISCONNECTED;
		ev->id = &v->pub;
		return 1;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (!v)
			return 0;
		ev->type = RRR_CM_EVENT_DEVICE_REMOVAL;
		ev->id = &v->pub;
		ev->status = -ENODEV;
		rrr__set_error(-ENODEV, "verbs: the RDMA device was removed");
		return 1;
	default:
		/* CONNECT_RESPONSE (not used: QPs are rdma_cm's), TIMEWAIT_EXIT,
		 * ADDR_CHANGE, multicast: nothing for the caller. */
		return 0;
	}
}

int rrr__verbs_cm_get_event(struct rrr_cm *cm, struct rrr_cm_event *ev)
{
	struct vcm *c = VCM(cm);
	struct rdma_cm_event *e;
	int rc;

	for (;;) {
		if (rdma_get_cm_event(c->ch, &e)) {
			rc = rrr__verbs_err(-1);
			if (rc == -EWOULDBLOCK)
				return -EAGAIN;
			return rc;
		}
		rc = translate(c, e, ev);
		rdma_ack_cm_event(e);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
}
