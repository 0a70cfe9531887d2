/* SPDX-License-Identifier: MIT */
/* tests/reg/helpers/loop.c - see loop.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "../../test_env.h"
#include "loop.h"

#define CQ_DEPTH 1024

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int loop_open(struct loop *l, const char *provider, const char *opts)
{
	int rc;

	memset(l, 0, sizeof(*l));
	rc = rrr_device_open(provider, opts, &l->dev);
	if (rc)
		return rc;
	rrr_device_query(l->dev, &l->attr);
	rc = rrr_pd_alloc(l->dev, &l->c.pd);
	if (!rc)
		rc = rrr_pd_alloc(l->dev, &l->p.pd);
	if (rc)
		loop_close(l);
	return rc;
}

static int side_qp(struct loop_side *s, struct rrr_cm_id *id)
{
	struct rrr_qp_init_attr qa = {
	    .pd = s->pd,
	    .send_cq = s->cq,
	    .recv_cq = s->cq,
	    .max_send_wr = 256,
	    .max_recv_wr = 64,
	    .max_send_sge = 2,
	    .max_recv_sge = 1,
	    .max_rd_atomic = 8,
	};

	return rrr_qp_create(id, &qa, &s->qp);
}

struct accept_arg {
	struct loop *l;
	int timeout_ms;
	int rc;
};

static void *accept_thread(void *arg)
{
	struct accept_arg *a = arg;
	struct loop *l = a->l;
	struct rrr_conn_param cp = {.ird = 8, .ord = 8};
	struct rrr_cm_event ev;
	int rc;

	rc = rrr_cm_wait_event(l->p.cm, &ev, a->timeout_ms);
	if (rc == 0 && ev.type != RRR_CM_EVENT_CONNECT_REQUEST)
		rc = -EPROTO;
	if (rc == 0) {
		l->p.id = ev.id;
		rc = side_qp(&l->p, ev.id);
	}
	if (rc == 0)
		rc = rrr_cm_accept(l->p.id, &cp);
	if (rc == 0)
		rc = rrr_cm_wait_event(l->p.cm, &ev, a->timeout_ms);
	if (rc == 0 && ev.type != RRR_CM_EVENT_ESTABLISHED)
		rc = -ECONNREFUSED;
	a->rc = rc;
	return NULL;
}

int loop_connect(struct loop *l, int timeout_ms)
{
	struct rrr_conn_param cp = {.ird = 8, .ord = 8};
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage ss;
	struct accept_arg aa = {.l = l, .timeout_ms = timeout_ms, .rc = -EINVAL};
	struct rrr_cm_event ev;
	pthread_t thr;
	int rc;

	l->c.nwc = l->p.nwc = 0;
	if (inet_pton(AF_INET, tenv_addr(), &sin.sin_addr) != 1)
		return -EINVAL;
	rc = rrr_cm_create(l->dev, &l->c.cm);
	if (!rc)
		rc = rrr_cm_create(l->dev, &l->p.cm);
	if (!rc)
		rc = rrr_cq_create(l->dev, CQ_DEPTH, &l->c.cq);
	if (!rc)
		rc = rrr_cq_create(l->dev, CQ_DEPTH, &l->p.cq);
	if (!rc)
		rc = rrr_cm_id_create(l->p.cm, NULL, &l->listen_id);
	if (!rc)
		rc = rrr_cm_listen(l->listen_id, (struct sockaddr *)&sin, sizeof(sin), 4);
	if (!rc)
		rc = rrr_cm_id_local_addr(l->listen_id, &ss);
	if (rc)
		return rc;
	sin.sin_port = ((struct sockaddr_in *)&ss)->sin_port;
	if (pthread_create(&thr, NULL, accept_thread, &aa))
		return -EAGAIN;
	rc = rrr_cm_id_create(l->c.cm, NULL, &l->c.id);
	if (!rc)
		rc = rrr_cm_resolve(l->c.id, (struct sockaddr *)&sin, sizeof(sin), timeout_ms);
	if (!rc)
		rc = rrr_cm_wait_event(l->c.cm, &ev, timeout_ms);
	if (!rc && ev.type != RRR_CM_EVENT_RESOLVED)
		rc = -EHOSTUNREACH;
	if (!rc)
		rc = side_qp(&l->c, l->c.id);
	if (!rc)
		rc = rrr_cm_connect(l->c.id, &cp);
	if (!rc)
		rc = rrr_cm_wait_event(l->c.cm, &ev, timeout_ms);
	if (!rc && ev.type != RRR_CM_EVENT_ESTABLISHED)
		rc = -ECONNREFUSED;
	if (rc && l->c.id) {
		/* make the acceptor give up rather than wait the full timeout */
		rrr_cm_disconnect(l->c.id);
	}
	pthread_join(thr, NULL);
	return rc ? rc : aa.rc;
}

static void side_down(struct loop_side *s)
{
	if (s->qp)
		rrr_qp_destroy(s->qp);
	s->qp = NULL;
	if (s->id)
		rrr_cm_id_destroy(s->id);
	s->id = NULL;
	if (s->cq)
		rrr_cq_destroy(s->cq);
	s->cq = NULL;
}

void loop_disconnect(struct loop *l)
{
	side_down(&l->c);
	side_down(&l->p);
	if (l->listen_id)
		rrr_cm_id_destroy(l->listen_id);
	l->listen_id = NULL;
	if (l->c.cm)
		rrr_cm_destroy(l->c.cm);
	if (l->p.cm)
		rrr_cm_destroy(l->p.cm);
	l->c.cm = l->p.cm = NULL;
}

void loop_close(struct loop *l)
{
	loop_disconnect(l);
	if (l->c.pd)
		rrr_pd_free(l->c.pd);
	if (l->p.pd)
		rrr_pd_free(l->p.pd);
	l->c.pd = l->p.pd = NULL;
	if (l->dev)
		rrr_device_close(l->dev);
	l->dev = NULL;
}

static void pump(struct loop *l)
{
	struct loop_side *sides[2] = {&l->c, &l->p};
	int i, got = 0;

	for (i = 0; i < 2; i++) {
		struct loop_side *s = sides[i];
		int room = LOOP_STASH - s->nwc, n;

		if (!s->cq || room <= 0)
			continue;
		n = rrr_cq_poll(s->cq, &s->wc[s->nwc], room);
		if (n > 0) {
			s->nwc += n;
			got += n;
		}
	}
	if (!got) { /* be gentle on a shared machine */
		struct timespec ts = {0, 20000};

		nanosleep(&ts, NULL);
	}
}

static int take(struct loop_side *s, int k, struct rrr_wc *wc)
{
	*wc = s->wc[k];
	memmove(&s->wc[k], &s->wc[k + 1], sizeof(s->wc[0]) * (size_t)(s->nwc - k - 1));
	s->nwc--;
	return 0;
}

int loop_wait(struct loop *l, struct loop_side *side, uint64_t wr_id, struct rrr_wc *wc,
	      int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	do {
		int k;

		pump(l);
		for (k = 0; k < side->nwc; k++)
			if (side->wc[k].wr_id == wr_id)
				return take(side, k, wc);
	} while (now_ms() < end);
	return -ETIMEDOUT;
}

int loop_wait_error(struct loop *l, struct loop_side *side, struct rrr_wc *wc, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	do {
		int k;

		pump(l);
		for (k = 0; k < side->nwc; k++)
			if (side->wc[k].status != RRR_WC_SUCCESS)
				return take(side, k, wc);
	} while (now_ms() < end);
	return -ETIMEDOUT;
}
