/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_setup.c - making and freeing the RPC-over-RDMA client
 * transport's resources (clnt_rdma.c's create and destroy ops).
 *
 * Normal operation: one device, PD, CQ, CM and MR pool per client, kept
 * across reconnects (the CM id and QP are per connection, clnt_rdma.c).
 * The inline sizes are clamped to [1024, RRR_RDMA_INLINE_MAX] and rounded
 * down to KiB; the send queue is sized for what max_requests calls hold at
 * once, never less than one longest chain (clnt_rdma.c's essay says why);
 * nslots = 2 x max_requests call slots, nrecv = max_requests + RECV_BATCH
 * receive buffers. What is sized for the worst case is reserved, not
 * written: the slots are an anonymous mapping whose pages a slot's first
 * call takes, the send and receive slabs are registered once and their
 * pages are taken as traffic comes, the MR pool grows with the
 * registrations.
 *
 * Errors: set-up fails with the provider's error or -ENOMEM, or -EINVAL
 * with a sentence saying which option to change (max_segs against
 * inline_send or the device's send queue); whatever was made is freed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rrr/client.h>
#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"
#include "client/clnt_rdma_impl.h"
#include "common/rrr_impl.h"

/* @len zeroed bytes whose pages are taken when first written, not before:
 * an anonymous mapping (calloc may clear reused heap memory), no huge
 * pages (one would take 2 MiB at the first write). NULL when out of
 * memory; freed by lazy_free(p, len). */
static void *lazy_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_NOHUGEPAGE
	(void)madvise(p, len, MADV_NOHUGEPAGE);
#endif
	return p;
}

static void lazy_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

int rrr__rdma_create(struct rrr_clnt *c)
{
	struct rdma_xprt *x;
	struct rrr_mrpool_opts po = {0};
	int rc;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	c->xprt = x;
	rc = rrr_device_open(c->provider, c->provider_opts, &x->dev);
	if (rc)
		goto fail;
	rc = rrr_device_query(x->dev, &x->attr);
	if (rc)
		goto fail;
	if (c->opts.inline_send < 1024)
		c->opts.inline_send = 1024;
	if (c->opts.inline_recv < 1024)
		c->opts.inline_recv = 1024;
	if (c->opts.inline_send > RRR_RDMA_INLINE_MAX)
		c->opts.inline_send = RRR_RDMA_INLINE_MAX;
	if (c->opts.inline_recv > RRR_RDMA_INLINE_MAX)
		c->opts.inline_recv = RRR_RDMA_INLINE_MAX;
	x->ssize = c->opts.inline_send & ~1023u;
	x->rsize = c->opts.inline_recv & ~1023u;
	if (rrr__rdma_hdr_size(c->opts.max_segs, c->opts.max_segs, c->opts.max_segs) > x->ssize) {
		rc = rrr__set_error(-EINVAL,
				    "max_segs %u needs a transport header larger than "
				    "inline_send %u: lower max_segs or raise inline_send",
				    c->opts.max_segs, x->ssize);
		goto fail;
	}
	/* The send queue: room for what max_requests calls (the most credits
	 * the server can grant us) hold at once, never less than one longest
	 * chain; a call waits (can_send) until its longest chain fits. The
	 * soft provider writes its rings once when it makes them, so the
	 * ring's size is what an idle connection holds. */
	x->sq_chain_max = 6u * c->opts.max_segs + 1u;
	x->sq_depth = x->sq_chain_max + SQ_PER_CALL * c->opts.max_requests;
	if (x->attr.max_qp_wr && x->sq_depth > x->attr.max_qp_wr)
		x->sq_depth = x->attr.max_qp_wr;
	if (x->sq_depth < x->sq_chain_max) {
		rc = rrr__set_error(-EINVAL, "device send queue (%u WRs) too small for max_segs %u",
				    x->sq_depth, c->opts.max_segs);
		goto fail;
	}
	x->sq_free = x->sq_depth;
	x->nslots = 2u * c->opts.max_requests;
	x->nrecv = c->opts.max_requests + RECV_BATCH;
	if (x->attr.max_qp_wr && x->nrecv > x->attr.max_qp_wr)
		x->nrecv = x->attr.max_qp_wr;

	rc = rrr_pd_alloc(x->dev, &x->pd);
	if (rc)
		goto fail;
	rc = rrr_cq_create(x->dev, x->sq_depth + x->nrecv, &x->cq);
	if (rc)
		goto fail;
	rc = rrr_cm_create(x->dev, &x->cm);
	if (rc)
		goto fail;
	/* every credit with every chunk at max_segs (a call that finds the
	 * pool empty waits for invalidations to return MRs); the pool grows
	 * to it with the traffic */
	po.max_mrs = c->opts.max_requests * 3u * c->opts.max_segs;
	if (po.max_mrs > POOL_MRS_MAX)
		po.max_mrs = POOL_MRS_MAX;
	rc = rrr_mrpool_create(x->pd, &po, &x->pool);
	if (rc)
		goto fail;

	x->slots_len = (size_t)x->nslots * sizeof(*x->slots);
	x->slots = lazy_alloc(x->slots_len);
	x->sslab = alloc_pages((size_t)x->nslots * x->ssize);
	x->rslab = alloc_pages((size_t)x->nrecv * x->rsize);
	x->rwr = calloc(x->nrecv, sizeof(*x->rwr));
	x->rsge = calloc(x->nrecv, sizeof(*x->rsge));
	x->rfree = calloc(x->nrecv, sizeof(*x->rfree));
	x->unsig = calloc(x->nslots, sizeof(*x->unsig));
	x->keys = calloc(x->nslots, sizeof(*x->keys)); /* all FREE */
	if (!x->slots || !x->sslab || !x->rslab || !x->rwr || !x->rsge || !x->rfree ||
	    !x->unsig || !x->keys) {
		rc = -ENOMEM;
		goto fail;
	}
	rrr__rdma_sendq_reset(x);
	rc = rrr_mr_reg(x->pd, x->sslab, (size_t)x->nslots * x->ssize, RRR_ACCESS_LOCAL_WRITE,
			&x->smr);
	if (rc)
		goto fail;
	rc = rrr_mr_reg(x->pd, x->rslab, (size_t)x->nrecv * x->rsize, RRR_ACCESS_LOCAL_WRITE,
			&x->rmr);
	if (rc)
		goto fail;
	if (c->opts.persistent_reg)
		rrr__log_warn("rrr: WARNING: persistent_reg is UNSAFE (benchmarks only): caller "
			      "memory stays remotely accessible after calls complete");
	return 0;
fail:
	if (rc != -ENOMEM && !rrr_last_error())
		rrr__set_error(rc, "RPC-over-RDMA client set-up failed: %s", strerror(-rc));
	rrr__rdma_destroy(c);
	return rc;
}

void rrr__rdma_destroy(struct rrr_clnt *c)
{
	struct rdma_xprt *x = X(c);

	if (!x)
		return;
	if (x->id)
		c->ops->close(c);
	if (x->smr)
		rrr_mr_dereg(x->smr);
	if (x->rmr)
		rrr_mr_dereg(x->rmr);
	if (x->slots) {
		for (uint32_t i = 0; i < x->nslots_used; i++) {
			free(x->slots[i].rbuf);
			for (int b = 0; b < 2; b++) {
				if (x->slots[i].bbmr[b])
					rrr_mr_dereg(x->slots[i].bbmr[b]);
				free(x->slots[i].bb[b]);
			}
		}
	}
	for (uint32_t i = 0; i < x->npc; i++)
		rrr_mr_dereg(x->pc[i].mr);
	if (x->pool)
		rrr_mrpool_destroy(x->pool);
	if (x->cm)
		rrr_cm_destroy(x->cm);
	if (x->cq)
		rrr_cq_destroy(x->cq);
	if (x->pd)
		rrr_pd_free(x->pd);
	if (x->dev)
		rrr_device_close(x->dev);
	lazy_free(x->slots, x->slots_len);
	free(x->sslab);
	free(x->rslab);
	free(x->rwr);
	free(x->rsge);
	free(x->unsig);
	free(x->keys);
	free(x->rfree);
	free(x);
	c->xprt = NULL;
}
