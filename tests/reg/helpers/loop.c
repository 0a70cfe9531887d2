/* SPDX-License-Identifier: MIT */
/* tests/reg/helpers/loop.c - see loop.h. */
#include <errno.h>
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

int loop_connect(struct loop *l, int timeout_ms)
{
	struct rrr__loop_opts lo = {
	    .c_pd = l->c.pd,
	    .s_pd = l->p.pd,
	    .qp =
		{
		    .max_send_wr = 256,
		    .max_recv_wr = 64,
		    .max_send_sge = 2,
		    .max_recv_sge = 1,
		    .max_rd_atomic = 8,
		},
	    .connect = {.ird = 8, .ord = 8},
	    .accept = {.ird = 8, .ord = 8},
	    .timeout_ms = timeout_ms,
	};
	int rc;

	l->c.nwc = l->p.nwc = 0;
	rc = rrr_cq_create(l->dev, CQ_DEPTH, &l->c.cq);
	if (!rc)
		rc = rrr_cq_create(l->dev, CQ_DEPTH, &l->p.cq);
	if (rc)
		return rc;
	lo.c_cq = l->c.cq;
	lo.s_cq = l->p.cq;
	rc = rrr__loop_listen(&l->pair, l->dev, tenv_addr());
	if (!rc)
		rc = rrr__loop_connect(&l->pair, &lo);
	/* the sides' views of the pair (it owns them) */
	l->listen_id = l->pair.listen;
	l->c.cm = l->pair.c.cm;
	l->c.id = l->pair.c.id;
	l->c.qp = l->pair.c.qp;
	l->p.cm = l->pair.s.cm;
	l->p.id = l->pair.s.id;
	l->p.qp = l->pair.s.qp;
	return rc;
}

void loop_disconnect(struct loop *l)
{
	/* the sides' fields are what a test may have changed */
	l->pair.c.id = l->c.id;
	l->pair.s.id = l->p.id;
	l->pair.c.qp = l->c.qp;
	l->pair.s.qp = l->p.qp;
	rrr__loop_close(&l->pair);
	l->listen_id = NULL;
	l->c.cm = l->p.cm = NULL;
	l->c.id = l->p.id = NULL;
	l->c.qp = l->p.qp = NULL;
	if (l->c.cq)
		rrr_cq_destroy(l->c.cq);
	if (l->p.cq)
		rrr_cq_destroy(l->p.cq);
	l->c.cq = l->p.cq = NULL;
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
