/* SPDX-License-Identifier: MIT */
/*
 * transport/loop_pair.c - a connected QP pair in one process (see
 * transport/loop_pair.h for the contracts).
 *
 * Set-up: listen on (addr, port 0) and read back the bound port; create
 * the client id and resolve; then poll the two CMs in turn, 10 ms each,
 * until both ESTABLISHED events are in or the deadline passes: RESOLVED
 * creates the client QP and connects, CONNECT_REQUEST (only the first one;
 * others are rejected) creates the server QP and accepts, any other event
 * is a failure with its status. Nothing here blocks longer than the
 * deadline.
 *
 * Teardown in reverse: destroy the QPs, then the ids (the server's, the
 * client's, the listener), then the CMs; no disconnect is issued (a caller
 * that wants the peer to see one calls rrr_cm_disconnect() first).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "transport/loop_pair.h"
#include "transport/provider_impl.h"

#define LOOP_POLL_MS	    10
#define LOOP_DEFAULT_MS 10000

static int loop_fail(int rc, const char *what)
{
	const char *e = rrr_last_error();
	char why[256];

	if (rc == 0)
		rc = -EIO;
	/* a copy: the message is rewritten in the buffer it comes from */
	snprintf(why, sizeof(why), "%s", e && *e ? e : strerror(-rc));
	return rrr__set_error(rc, "loopback pair: %s: %s", what, why);
}

int rrr__loop_listen(struct rrr__loop_pair *p, struct rrr_device *dev, const char *addr)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->dev = dev;
	if (!dev)
		return -EINVAL;
	rc = rrr_cm_create(dev, &p->c.cm);
	if (!rc)
		rc = rrr_cm_create(dev, &p->s.cm);
	if (rc) {
		rc = loop_fail(rc, "rrr_cm_create");
		goto err;
	}
	rc = rrr_addr_parse(addr ? addr : "127.0.0.1", "0", &p->addr, &p->addrlen);
	if (rc) {
		rc = loop_fail(rc, "address");
		goto err;
	}
	rc = rrr_cm_id_create(p->s.cm, NULL, &p->listen);
	if (!rc)
		rc = rrr_cm_listen(p->listen, (struct sockaddr *)&p->addr, p->addrlen, 8);
	if (!rc)
		rc = rrr_cm_id_local_addr(p->listen, &p->addr);
	if (rc) {
		rc = loop_fail(rc, "listen");
		goto err;
	}
	p->addrlen = p->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						   : sizeof(struct sockaddr_in);
	return 0;

err:
	rrr__loop_close(p);
	return rc;
}

static int side_qp(const struct rrr__loop_opts *o, bool server, struct rrr__loop_side *s)
{
	struct rrr_qp_init_attr qa = o->qp;

	qa.pd = server ? o->s_pd : o->c_pd;
	qa.send_cq = qa.recv_cq = server ? o->s_cq : o->c_cq;
	return rrr_qp_create(s->id, &qa, &s->qp);
}

/* One event of either side; 1 when a side became established. */
static int loop_event(struct rrr__loop_pair *p, const struct rrr__loop_opts *o, bool server,
		      struct rrr_cm_event *ev)
{
	int rc;

	switch (ev->type) {
	case RRR_CM_EVENT_RESOLVED:
		if (server || ev->id != p->c.id || p->c.qp)
			return 0;
		rc = side_qp(o, false, &p->c);
		if (rc)
			return loop_fail(rc, "rrr_qp_create (client)");
		rc = rrr_cm_connect(p->c.id, &o->connect);
		return rc ? loop_fail(rc, "rrr_cm_connect") : 0;
	case RRR_CM_EVENT_CONNECT_REQUEST:
		if (!server)
			return 0;
		if (p->s.id) {
			rrr_cm_reject(ev->id, NULL, 0);
			rrr_cm_id_destroy(ev->id);
			return 0;
		}
		p->req = *ev;
		p->s.id = ev->id;
		rc = side_qp(o, true, &p->s);
		if (rc)
			return loop_fail(rc, "rrr_qp_create (server)");
		rc = rrr_cm_accept(p->s.id, &o->accept);
		return rc ? loop_fail(rc, "rrr_cm_accept") : 0;
	case RRR_CM_EVENT_ESTABLISHED:
		if (!server)
			p->est = *ev;
		return 1;
	default:
		return loop_fail(ev->status ? ev->status : -ECONNREFUSED,
				 rrr_cm_event_str(ev->type));
	}
}

int rrr__loop_connect(struct rrr__loop_pair *p, const struct rrr__loop_opts *o)
{
	int64_t deadline;
	bool est[2] = {false, false};
	int rc;

	if (!p || !o || !p->listen || p->c.id)
		return -EINVAL;
	deadline = rrr__mono_ms() + (o->timeout_ms > 0 ? o->timeout_ms : LOOP_DEFAULT_MS);
	rc = rrr_cm_id_create(p->c.cm, NULL, &p->c.id);
	if (!rc)
		rc = rrr_cm_resolve(p->c.id, (struct sockaddr *)&p->addr, p->addrlen,
				    o->timeout_ms > 0 ? o->timeout_ms : LOOP_DEFAULT_MS);
	if (rc)
		return loop_fail(rc, "resolve");
	while (!est[0] || !est[1]) {
		for (int side = 0; side < 2; side++) {
			struct rrr_cm_event ev;

			if (est[side])
				continue;
			rc = rrr_cm_wait_event(side ? p->s.cm : p->c.cm, &ev, LOOP_POLL_MS);
			if (rc == -ETIMEDOUT || rc == -EAGAIN)
				continue;
			if (rc)
				return loop_fail(rc, "rrr_cm_wait_event");
			rc = loop_event(p, o, side == 1, &ev);
			if (rc < 0)
				return rc;
			if (rc == 1)
				est[side] = true;
		}
		if (rrr__mono_ms() > deadline && (!est[0] || !est[1]))
			return loop_fail(-ETIMEDOUT, "connection set-up");
	}
	return 0;
}

void rrr__loop_close(struct rrr__loop_pair *p)
{
	if (!p)
		return;
	if (p->c.qp)
		rrr_qp_destroy(p->c.qp);
	if (p->s.qp)
		rrr_qp_destroy(p->s.qp);
	if (p->s.id)
		rrr_cm_id_destroy(p->s.id);
	if (p->c.id)
		rrr_cm_id_destroy(p->c.id);
	if (p->listen)
		rrr_cm_id_destroy(p->listen);
	if (p->s.cm)
		rrr_cm_destroy(p->s.cm);
	if (p->c.cm)
		rrr_cm_destroy(p->c.cm);
	memset(p, 0, sizeof(*p));
}
