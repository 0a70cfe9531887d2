/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_zc.c - zero-copy result payloads of the RPC-over-RDMA
 * server: the RDMA WRITE into the client's write chunk reads the
 * application's own memory (rrr_svc_req_encode_payload_zc, svc_req.c)
 * instead of a copy in the request's registered payload buffer.
 *
 * Normal operation. When the handler hands its memory, and the call
 * offered an unused write chunk large enough, the memory is registered for
 * this request only through the connection's registration engine pool
 * (docs/registration.md): the plan is made first (at most the pool's
 * registrations, no MR touched when it does not fit), the REG_MR work
 * requests are chained ahead of the reply's WRITEs, the rights are local
 * only (the source of a WRITE needs no remote access, and the client never
 * sees a handle to it). The WRITEs take their bytes in stream order from
 * the registrations (segment offset = the provider's address of the first
 * byte), cut where a registration ends. After the reply's Send the
 * LOCAL_INVs of those registrations are chained; the Send becomes
 * unsignaled and the last LOCAL_INV carries the reply's completion, so when
 * the worker sees the reply complete, the memory is no longer registered.
 * Then the request ends and the application's release callback runs.
 *
 * Cost: one REG_MR per registration (one for up to the pool's page-list
 * depth of page-aligned memory) and one LOCAL_INV, against a memcpy of the
 * whole payload; on the soft provider the WRITE's bytes go from the
 * application's memory straight to the socket.
 *
 * Recovery. A reply that fails, is never posted (error reply, no reply)
 * or is flushed leaves the registration in an unknown state: it is
 * recovered (rrr_reg_recover: fresh key, never left valid) before the
 * request ends and the release callback runs. When no MR is free the
 * payload is copied instead (the caller cannot tell but by the counters).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

int rrr__svc_rdma_zc(struct rrr_svc_req *req, struct rrr_xdr *res, const struct iovec *iov,
		     unsigned niov, uint32_t len)
{
	struct svc_rdma_ctx *ctx = req->alloc_ctx;
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_sg sg[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned k = ctx->wchunk_next, n = 0;
	uint64_t sum = 0;
	int err;

	if (!rc->pool || ctx->zc_k >= 0 || res->ddp != &ctx->ddp || !len ||
	    k >= ctx->hdr->nwrite || k >= SVC_RDMA_MAX_WRITE_CHUNKS ||
	    len > ctx->hdr->write[k].total)
		return -EOPNOTSUPP;
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len > UINT32_MAX || (iov[i].iov_len && !iov[i].iov_base))
			return -EINVAL;
		sum += iov[i].iov_len;
		if (iov[i].iov_len)
			sg[n++] = (struct rrr_sg){iov[i].iov_base, 0, (uint32_t)iov[i].iov_len};
	}
	if (sum != len)
		return -EINVAL;
	if (!ctx->zc_io) {
		ctx->zc_io = calloc(1, sizeof(*ctx->zc_io));
		if (!ctx->zc_io)
			return -EOPNOTSUPP;
	}
	/* local rights only: the source of an RDMA WRITE */
	err = rrr_reg_map(rc->pool, sg, n, 0, ctx->zc_io);
	if (err)
		return -EOPNOTSUPP; /* no MR free, too many pieces: copy */
	err = rrr_xdr_put_u32(res, len); /* only the length word stays inline */
	if (err) {
		rrr_reg_recover(rc->pool, ctx->zc_io);
		return err;
	}
	/* the REG_MRs go out ahead of the reply's WRITEs, copied into its
	 * chain by rrr__svc_rdma_zc_writes() */
	ctx->zc_k = (int)k;
	ctx->zc_chained = false;
	ctx->wchunk_off[k] = 0;
	ctx->wchunk_len[k] = len;
	ctx->wchunk_next = k + 1;
	RRR__STAT_ADD(rc->base.st, registrations, ctx->zc_io->nsegs);
	return 0;
}

int rrr__svc_rdma_zc_writes(struct svc_rdma_ctx *ctx, const struct rrr_rdma_chunk *in,
			    struct rrr_rdma_chunk *out, unsigned *n)
{
	struct rrr_reg_io *io = ctx->zc_io;
	uint32_t left = out->total, r = 0, roff = 0, i, j;
	int err;

	/* the REG_MRs first, in the same chain: the send queue executes in
	 * order, so each registration is valid before a WRITE reads it */
	for (j = 0; j < io->nsegs; j++) {
		if (*n >= SVC_RDMA_MAX_WRS - 2)
			return -E2BIG;
		ctx->wrs[*n] = io->reg_wr[j];
		ctx->wrs[*n].next = NULL;
		if (*n)
			ctx->wrs[*n - 1].next = &ctx->wrs[*n];
		(*n)++;
	}
	for (i = 0; i < in->nsegs; i++) {
		uint32_t put = left < in->segs[i].length ? left : in->segs[i].length, done = 0;

		out->segs[i] = in->segs[i];
		out->segs[i].length = put;
		while (done < put) {
			struct rrr_rdma_seg part = in->segs[i];
			uint32_t room, take;

			if (r >= io->nsegs)
				return -EFAULT; /* cannot happen: the lengths agree */
			room = io->segs[r].length - roff;
			take = put - done < room ? put - done : room;
			part.offset += done;
			part.length = take;
			err = rrr__svc_rdma_add_write(ctx, n, io->segs[r].offset + roff, take,
						      rrr_mr_lkey(io->mrs[r]), &part);
			if (err)
				return err;
			done += take;
			roff += take;
			if (roff == io->segs[r].length) {
				r++;
				roff = 0;
			}
		}
		left -= put;
	}
	return 0;
}

unsigned rrr__svc_rdma_zc_chain(struct svc_rdma_ctx *ctx, struct rrr_send_wr *send, uint64_t wr_id)
{
	struct rrr_send_wr *inv, *w;
	unsigned cnt = 0;

	if (ctx->zc_k < 0 || !ctx->zc_io || !ctx->zc_io->nsegs ||
	    !ctx->wchunk_len[ctx->zc_k]) /* an error reply: not sent from it */
		return 0;
	inv = rrr_reg_build_inv(ctx->rc->pool, ctx->zc_io, wr_id);
	if (!inv)
		return 0;
	for (w = inv; w; w = w->next)
		cnt++;
	send->flags &= ~RRR_SEND_SIGNALED;
	send->next = inv;
	ctx->zc_chained = true;
	RRR__STAT_ADD(ctx->rc->base.st, local_inv, cnt);
	return cnt;
}

void rrr__svc_rdma_zc_sent(struct svc_rdma_ctx *ctx)
{
	if (ctx->zc_chained && ctx->zc_io && ctx->zc_io->nsegs)
		rrr_reg_inv_done(ctx->rc->pool, ctx->zc_io);
	ctx->zc_chained = false;
	ctx->zc_k = -1;
}

void rrr__svc_rdma_zc_end(struct svc_rdma_ctx *ctx)
{
	if (ctx->zc_io && ctx->zc_io->nsegs)
		rrr_reg_recover(ctx->rc->pool, ctx->zc_io);
	ctx->zc_chained = false;
	ctx->zc_k = -1;
}
