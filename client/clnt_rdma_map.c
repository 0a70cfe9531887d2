/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma_map.c - registering a call's chunks (RPC-over-RDMA
 * client): the read-side source, the write-chunk sink and the reply chunk
 * of one slot (clnt_rdma_impl.h).
 *
 * Normal operation: per I/O. The scatterlist is handed to the
 * registration engine (docs/registration.md) with a bound: at most
 * max_segs registrations per chunk (struct rrr_clnt_opts), the number the
 * chunk planner reserved header room for and the server was promised.
 * The engine plans first and touches no MR when the list needs more, so a
 * call that cannot fit fails before anything is exposed, with -EMSGSIZE
 * and a sentence in the call's error (the map model and page-list depth
 * of the device decide how many registrations a list needs).
 * The benchmark options map through long-lived registrations instead
 * (persistent_reg: caller memory, cached by page range, never
 * invalidated - UNSAFE; bounce: copied through per-slot registered
 * buffers) and fall back to per-I/O registration when they cannot.
 *
 * Recovery: rrr__rdma_recover_ios() recovers every registration of a
 * slot (fresh key, never left valid); the engine unwinds a map that fails
 * half-way by itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/client.h>
#include <rrr/reg_engine.h>
#include <rrr/rpcrdma.h>

#include "client/clnt_impl.h"
#include "client/clnt_rdma_impl.h"
#include "common/rrr_impl.h"

void rrr__rdma_recover_ios(struct rdma_xprt *x, struct rslot *s)
{
	for (int k = 0; k < IO_N; k++)
		if (rslot_io_nsegs(s, k))
			rrr_reg_recover(pool_op(x), &s->io[k]);
}

/* Map @n entries of s->sg into io @k, at most max_segs registrations (the
 * header room the planner reserved, the limit the server was promised);
 * -EAGAIN when the pool is empty. */
int rrr__rdma_map_io(struct rrr_clnt *c, struct rslot *s, int k, unsigned n, unsigned access)
{
	static const char *const what[IO_N] = {"source", "sink", "reply chunk"};
	struct rdma_xprt *x = X(c);
	unsigned max = c->opts.max_segs;
	int rc;

	if (max > (k == IO_SRC ? RRR_RDMA_MAX_READ_SEGS : RRR_RDMA_MAX_CHUNK_SEGS))
		max = k == IO_SRC ? RRR_RDMA_MAX_READ_SEGS : RRR_RDMA_MAX_CHUNK_SEGS;
	s->io_used |= (uint8_t)(1u << k); /* the engine writes the io */
	rc = rrr_reg_map_max(pool_op(x), s->sg, n, access, max, &s->io[k]);
	if (rc == -ENOBUFS)
		return -EAGAIN;
	if (rc == -E2BIG) {
		/* the engine's sentence names the map model and depth */
		if (s->req)
			rrr__clnt_call_error(c, s->req, -EMSGSIZE,
					     "the call's %s needs more than max_segs (%u) "
					     "registrations, so it was not sent: %s; use fewer "
					     "or page-aligned pieces, or a larger max_segs if "
					     "the server accepts it",
					     what[k], max, rrr_last_error() ? rrr_last_error() : "");
		return -EMSGSIZE;
	}
	return rc;
}

const struct rrr_reg_seg *rrr__rdma_segs_of(const struct rslot *s, int k, uint32_t *n)
{
	if (s->nlseg[k]) {
		*n = s->nlseg[k];
		return s->lseg[k];
	}
	*n = rslot_io_nsegs(s, k);
	return s->io[k].segs;
}

/* persistent_reg: one long-lived registration per page range of caller
 * memory, cached for the client's life. UNSAFE by design (benchmarks). */
static int map_persistent(struct rrr_clnt *c, struct rslot *s, int k, unsigned n)
{
	struct rdma_xprt *x = X(c);
	unsigned access = RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_READ | RRR_ACCESS_REMOTE_WRITE;

	if (n > RRR_RDMA_MAX_CHUNK_SEGS)
		return -EMSGSIZE;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = (uint8_t *)s->sg[i].page + s->sg[i].offset;
		struct pcache *e = NULL;

		for (uint32_t j = 0; j < x->npc; j++) {
			if (p >= x->pc[j].base &&
			    p + s->sg[i].length <= x->pc[j].base + x->pc[j].len) {
				e = &x->pc[j];
				break;
			}
		}
		if (!e) {
			uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095u;
			uintptr_t hi = ((uintptr_t)p + s->sg[i].length + 4095u) & ~(uintptr_t)4095u;

			if (x->npc == PCACHE_MAX)
				return -ENOSPC;
			e = &x->pc[x->npc];
			if (rrr_mr_reg(x->pd, (void *)lo, hi - lo, access, &e->mr))
				return -ENOSPC;
			e->base = (uint8_t *)lo;
			e->len = hi - lo;
			x->npc++;
		}
		s->lseg[k][i].handle = rrr_mr_rkey(e->mr);
		s->lseg[k][i].length = s->sg[i].length;
		s->lseg[k][i].offset = rrr_mr_iova(e->mr) + (uint64_t)(p - e->base);
	}
	s->nlseg[k] = n;
	return 0;
}

/* bounce: copy through a long-lived registered buffer of the slot. */
static int map_bounce(struct rrr_clnt *c, struct rslot *s, int k, unsigned n)
{
	struct rdma_xprt *x = X(c);
	int b = k == IO_SRC ? 0 : 1;
	uint32_t cap = c->ops->max_payload(c) + 64u * 1024u;
	uint64_t total = 0;

	for (unsigned i = 0; i < n; i++)
		total += s->sg[i].length;
	if (total > cap)
		return -ENOSPC;
	if (!s->bb[b]) {
		s->bb[b] = alloc_pages(cap);
		if (!s->bb[b])
			return -ENOSPC;
		if (rrr_mr_reg(x->pd, s->bb[b], cap,
			       RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_READ |
				   RRR_ACCESS_REMOTE_WRITE,
			       &s->bbmr[b])) {
			free(s->bb[b]);
			s->bb[b] = NULL;
			return -ENOSPC;
		}
	}
	if (k == IO_SRC) {
		uint8_t *d = s->bb[0];

		for (unsigned i = 0; i < n; i++) {
			memcpy(d, (uint8_t *)s->sg[i].page + s->sg[i].offset, s->sg[i].length);
			d += s->sg[i].length;
		}
	} else {
		s->bounce_sink = true;
	}
	s->lseg[k][0].handle = rrr_mr_rkey(s->bbmr[b]);
	s->lseg[k][0].length = (uint32_t)total;
	s->lseg[k][0].offset = rrr_mr_iova(s->bbmr[b]);
	s->nlseg[k] = 1;
	return 0;
}

/* Map a chunk for io @k: long-lived (options) or per-I/O (the default);
 * the options fall back to per-I/O registration when they cannot. */
int rrr__rdma_map_chunk(struct rrr_clnt *c, struct rslot *s, int k, unsigned n, unsigned access)
{
	if (k != IO_REP && c->opts.persistent_reg && map_persistent(c, s, k, n) == 0)
		return 0;
	if (k != IO_REP && !c->opts.persistent_reg && c->opts.bounce && map_bounce(c, s, k, n) == 0)
		return 0;
	s->nlseg[k] = 0;
	return rrr__rdma_map_io(c, s, k, n, access);
}

unsigned rrr__rdma_sg_from_iov(struct rrr_sg *sg, unsigned n, const struct iovec *iov, unsigned niov,
			    uint64_t limit)
{
	for (unsigned i = 0; i < niov && limit; i++) {
		uint64_t l = iov[i].iov_len < limit ? iov[i].iov_len : limit;

		if (!l)
			continue;
		sg[n].page = iov[i].iov_base;
		sg[n].offset = 0;
		sg[n].length = (uint32_t)l;
		n++;
		limit -= l;
	}
	return n;
}

uint64_t rrr__rdma_iov_total(const struct iovec *iov, unsigned n)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

void rrr__rdma_copy_iov(uint8_t *dst, const struct iovec *iov, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(dst, iov[i].iov_base, l);
		dst += l;
		len -= (uint32_t)l;
	}
}

