/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_rw.c - moving bulk data for the RPC-over-RDMA server:
 * RDMA READ of the client's read chunks, RDMA WRITE into its write chunks
 * and reply chunk, and the DDP hook that decides which result payloads go
 * by write chunk (like Linux svc_rdma_rw.c).
 *
 * Read chunks. A call that carries read chunks is rebuilt into one
 * contiguous XDR stream in the request's argument buffer, exactly as if the
 * client had sent it inline:
 *
 *   inline message:  [ A (up to P1) ][ B (P1 .. P2, less chunk 1) ][ C ]
 *   rebuilt stream:  [ A ][ chunk 1 + pad ][ B ][ chunk 2 + pad ][ C ]
 *                         ^P1                   ^P2
 *
 * The inline pieces are copied; the chunk bytes are pulled by RDMA READ
 * straight to their place, and the XDR pad after each chunk is zeroed (RFC
 * 8166 section 3.5.3: the chunk need not carry the pad). An RDMA_NOMSG call
 * has exactly one chunk, at position zero, which is the whole message. The
 * plan is computed and checked (positions in order, inline bytes present,
 * total within the record bound, work requests within the array) before
 * anything is copied or posted; a bad plan is ERR_CHUNK.
 *
 * The READ sink: on devices that place READ responses like tagged writes
 * (iWARP, attr.read_sink_remote_write) the sink needs remote write rights.
 * Rather than exposing a long-lived buffer, the sink is registered for this
 * I/O only through the registration engine (the REG_MR WRs are posted and
 * complete before the READs are posted, since a provider may check a
 * local key when a WR is posted) and invalidated with LOCAL_INV after they complete, before the
 * handler looks at the bytes. Other devices read into the buffer's local
 * long-lived registration. READ WRs are cut where a sink registration ends.
 *
 * Write chunks and the reply chunk. A DDP-eligible result payload goes by
 * write chunk when the call offered an unused one large enough; otherwise
 * it goes inline with its pad. When the call has a write list,
 * rrr_svc_req_alloc() hands out memory from the request's registered
 * payload buffer, so a payload the handler built there is written with no
 * copy; any other payload is copied into that buffer. Only the length word
 * stays inline. When the reply is built, each used chunk's segments are
 * filled in order, never writing more than a segment's length, and the
 * reply header echoes the write list with the byte counts written (0 for
 * unused chunks, no pad written). A payload the handler gave from its own
 * memory (rrr_svc_req_encode_payload_zc) is written from there through a
 * registration of its own: svc_rdma_zc.c.
 *
 * Recovery: nothing here posts; callers post the chains built here. A sink
 * registration whose READ chain failed is recovered (rrr_reg_recover), never
 * left valid.
 *
 * Call direction: the other svc_rdma_*.c files call down into this file;
 * this file calls nothing in them or svc.c. It counts through the counters the
 * connection it is handed points to (rc->base.st) and owns the request
 * buffers with their long-lived registrations (rrr__svc_rdma_buf_get).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

/* ------------------------------------------------------------------ buffers */

int rrr__svc_rdma_buf_get(struct svc_rdma_conn *rc, struct svc_rdma_buf *b, size_t len)
{
	void *p;
	int err;

	if (b->p && b->len >= len)
		return 0;
	if (b->mr) {
		rrr_mr_dereg(b->mr);
		b->mr = NULL;
	}
	free(b->p);
	b->p = NULL;
	b->len = 0;
	len = (len + 4095u) & ~(size_t)4095u;
	if (posix_memalign(&p, 4096, len))
		return -ENOMEM;
	err = rrr_mr_reg(rc->pd, p, len, RRR_ACCESS_LOCAL_WRITE, &b->mr);
	if (err) {
		free(p);
		return err;
	}
	b->p = p;
	b->len = len;
	return 0;
}

int rrr__svc_rdma_sink_take(struct svc_rdma_ctx *ctx, size_t len)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (!ctx->arg.p && rc->nsink_pool)
		ctx->arg = rc->sink_pool[--rc->nsink_pool];
	return rrr__svc_rdma_buf_get(rc, &ctx->arg, len);
}

void rrr__svc_rdma_sink_give(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;

	if (!ctx->arg.p)
		return;
	if (rc->sink_pool && rc->nsink_pool < rc->max_ctx) {
		rc->sink_pool[rc->nsink_pool++] = ctx->arg;
		memset(&ctx->arg, 0, sizeof(ctx->arg));
	} else {
		rrr__svc_rdma_buf_free(&ctx->arg);
	}
}

void rrr__svc_rdma_buf_free(struct svc_rdma_buf *b)
{
	if (b->mr)
		rrr_mr_dereg(b->mr);
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ reads */

/* XDR round-up in 64 bits (RRR_XDR_PAD's mask is 32-bit). */
static inline uint64_t pad64(uint32_t n)
{
	return ((uint64_t)n + 3u) & ~(uint64_t)3u;
}

struct read_chunk {
	uint32_t first, nsegs; /* entries in hdr.read[] */
	uint32_t position;
	uint32_t total;
};

/* Group the read list into chunks; -EINVAL on rule violations. */
static int read_chunks(const struct rrr_rdma_hdr *hdr, struct read_chunk *ch, unsigned *nch)
{
	unsigned i, n = 0;

	for (i = 0; i < hdr->nread; i++) {
		const struct rrr_rdma_read_seg *r = &hdr->read[i];

		if (n == 0 || ch[n - 1].position != r->position) {
			ch[n].first = i;
			ch[n].nsegs = 0;
			ch[n].position = r->position;
			ch[n].total = 0;
			n++;
		}
		if (r->seg.length > UINT32_MAX - ch[n - 1].total)
			return -EOVERFLOW;
		ch[n - 1].total += r->seg.length;
		ch[n - 1].nsegs++;
	}
	*nch = n;
	return 0;
}

/* Sink lkey and room for the byte at @addr; registrations are in order. */
static int sink_at(struct svc_rdma_ctx *ctx, uint64_t addr, uint32_t *lkey, uint64_t *room)
{
	struct rrr_reg_io *io = ctx->sink;
	uint32_t k;

	if (!ctx->sink_mapped) {
		*lkey = rrr_mr_lkey(ctx->arg.mr);
		*room = (uint64_t)(uintptr_t)ctx->arg.p + ctx->arg.len - addr;
		return 0;
	}
	for (k = 0; k < io->nsegs; k++) {
		uint64_t start = io->segs[k].offset, end = start + io->segs[k].length;

		if (addr >= start && addr < end) {
			*lkey = rrr_mr_lkey(io->mrs[k]);
			*room = end - addr;
			return 0;
		}
	}
	return -EFAULT;
}

void rrr__svc_rdma_add_read(struct svc_rdma_ctx *ctx, unsigned *n, struct rrr_send_wr **prev,
			    uint64_t addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct rrr_send_wr *wr = &ctx->wrs[*n];

	memset(wr, 0, sizeof(*wr));
	ctx->sges[*n].addr = addr;
	ctx->sges[*n].length = len;
	ctx->sges[*n].lkey = lkey;
	wr->opcode = RRR_WR_RDMA_READ;
	wr->sg_list = &ctx->sges[*n];
	wr->num_sge = 1;
	wr->u.rdma.remote_addr = raddr;
	wr->u.rdma.rkey = rkey;
	if (*prev)
		(*prev)->next = wr;
	*prev = wr;
	(*n)++;
}

int rrr__svc_rdma_read_chain(struct svc_rdma_ctx *ctx, struct rrr_send_wr *last, unsigned nwr,
			     unsigned nreg)
{
	if (!last || last->opcode != RRR_WR_RDMA_READ)
		return -EINVAL;
	last->next = NULL;
	last->flags = RRR_SEND_SIGNALED;
	last->wr_id = (uint64_t)(uintptr_t)ctx | PH_READ;
	ctx->chain = &ctx->wrs[0];
	if (nreg) {
		/* Register first, READ after the registration completed: a
		 * provider may check the sink's lkey when the READ is posted. */
		ctx->wrs[nreg - 1].next = NULL;
		ctx->wrs[nreg - 1].flags |= RRR_SEND_SIGNALED;
		ctx->wrs[nreg - 1].wr_id = (uint64_t)(uintptr_t)ctx | PH_REG;
		ctx->read_chain = &ctx->wrs[nreg];
		ctx->read_need = nwr - nreg;
		ctx->sq_need = nreg;
		ctx->phase = PH_REG;
		return 0;
	}
	ctx->sq_need = nwr;
	ctx->phase = PH_READ;
	return 0;
}

int rrr__svc_rdma_read_prepare(struct svc_rdma_ctx *ctx, const uint8_t *msg, size_t msg_len)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_rdma_hdr *hdr = ctx->hdr;
	struct read_chunk ch[RRR_RDMA_MAX_READ_SEGS];
	unsigned nch, c, i, nwr = 0, nreg = 0;
	uint64_t full = 0, in = 0;
	struct rrr_send_wr *prev = NULL;
	uint8_t *base;
	int err;

	err = read_chunks(hdr, ch, &nch);
	if (err)
		return err;
	if (hdr->proc == RRR_RDMA_NOMSG) {
		/* the position-zero chunk is the whole message */
		if (nch != 1 || ch[0].position != 0)
			return -EINVAL;
		msg_len = 0;
	}
	/* plan and check everything before touching memory */
	for (c = 0; c < nch; c++) {
		uint64_t gap;

		if (hdr->proc == RRR_RDMA_MSG && ch[c].position == 0)
			return -EINVAL;
		if (ch[c].position < full)
			return -EINVAL;
		gap = ch[c].position - full;
		if (gap > msg_len - in)
			return -EINVAL;
		in += gap;
		full = (uint64_t)ch[c].position + pad64(ch[c].total);
		if (full > rc->max_record)
			return -E2BIG;
	}
	full += msg_len - in;
	if (full > rc->max_record)
		return -E2BIG;
	if (nch == 1) { /* into the application's memory (svc_rdma_place.c)? */
		err = rrr__svc_rdma_place_prepare(ctx, msg, msg_len, ch[0].first, ch[0].nsegs,
						  ch[0].position, ch[0].total);
		if (err != -ENOENT)
			return err;
	}

	/* Start the rebuilt call so that the first chunk's bytes land on a page
	 * boundary: a WRITE's data is then page aligned, which lets the file
	 * server write it with O_DIRECT (and copies run on aligned lines). */
	ctx->arg_off = nch && ch[0].position % SVC_RDMA_ALIGN
			   ? SVC_RDMA_ALIGN - ch[0].position % SVC_RDMA_ALIGN
			   : 0;
	err = rrr__svc_rdma_sink_take(ctx, rc->max_record + SVC_RDMA_ALIGN);
	if (err)
		return err;
	ctx->arg_len = (size_t)full;
	base = ctx->arg.p + ctx->arg_off;

	if (rc->sink_remote_write) {
		struct rrr_sg sg = {.page = ctx->arg.p,
				    .offset = (uint32_t)ctx->arg_off,
				    .length = (uint32_t)full};

		err = rrr_reg_map(rc->pool, &sg, 1,
				  RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, ctx->sink);
		if (err)
			return err == -E2BIG ? -ENOMEM : err;
		ctx->sink_mapped = true;
		nreg = ctx->sink->nsegs;
		RRR__STAT_ADD(rc->base.st, registrations, nreg);
		RRR__STAT_ADD(rc->base.st, hole_splits, ctx->sink->holes);
		if (nreg > 1 + ctx->sink->holes) /* one entry: the rest are depth cuts */
			RRR__STAT_ADD(rc->base.st, depth_splits, nreg - 1 - ctx->sink->holes);
		for (i = 0; i < nreg; i++)
			ctx->wrs[i] = ctx->sink->reg_wr[i];
		for (i = 0; i + 1 < nreg; i++)
			ctx->wrs[i].next = &ctx->wrs[i + 1];
		prev = nreg ? &ctx->wrs[nreg - 1] : NULL;
	}
	nwr = nreg;

	/* copy the inline pieces and build the READs */
	full = 0;
	in = 0;
	for (c = 0; c < nch; c++) {
		uint64_t gap = ch[c].position - full, dst = ch[c].position;

		memcpy(base + full, msg + in, (size_t)gap);
		in += gap;
		for (i = ch[c].first; i < ch[c].first + ch[c].nsegs; i++) {
			const struct rrr_rdma_seg *s = &hdr->read[i].seg;
			uint64_t done = 0;

			while (done < s->length) {
				uint64_t addr = (uint64_t)(uintptr_t)base + dst + done, room;
				uint32_t lkey, piece;

				if (nwr >= SVC_RDMA_MAX_WRS - 2)
					goto too_many;
				err = sink_at(ctx, addr, &lkey, &room);
				if (err)
					goto fail;
				piece =
				    (uint32_t)(s->length - done < room ? s->length - done : room);
				rrr__svc_rdma_add_read(ctx, &nwr, &prev, addr, piece, lkey,
						       s->offset + done, s->handle);
				done += piece;
			}
			dst += s->length;
		}
		/* zero the XDR pad the chunk did not carry */
		while (dst & 3u)
			base[dst++] = 0;
		full = dst;
		RRR__STAT_ADD(rc->base.st, read_chunks, 1);
		RRR__STAT_ADD(rc->base.st, rdma_read_bytes, ch[c].total);
	}
	memcpy(base + full, msg + in, (size_t)(msg_len - in));
	err = rrr__svc_rdma_read_chain(ctx, prev, nwr, nreg);
	if (err)
		goto fail; /* no bytes to read: an empty chunk */
	return 0;

too_many:
	err = -E2BIG;
fail:
	rrr__svc_rdma_sink_recover(ctx);
	return err;
}

bool rrr__svc_rdma_read_done(struct svc_rdma_ctx *ctx)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_send_wr *head, *w;
	unsigned n = 0;

	if (!ctx->sink_mapped)
		return false;
	head = rrr_reg_build_inv(rc->pool, ctx->sink, (uint64_t)(uintptr_t)ctx | PH_INV);
	if (!head) {
		rrr__svc_rdma_sink_inv_done(ctx);
		return false;
	}
	for (w = head; w; w = w->next)
		n++;
	RRR__STAT_ADD(rc->base.st, local_inv, n);
	ctx->chain = head;
	ctx->sq_need = n;
	ctx->phase = PH_INV;
	return true;
}

void rrr__svc_rdma_sink_inv_done(struct svc_rdma_ctx *ctx)
{
	if (ctx->sink_mapped) {
		rrr_reg_inv_done(ctx->rc->pool, ctx->sink);
		ctx->sink_mapped = false;
	}
}

void rrr__svc_rdma_sink_recover(struct svc_rdma_ctx *ctx)
{
	if (ctx->sink_mapped) {
		rrr_reg_recover(ctx->rc->pool, ctx->sink);
		RRR__STAT_ADD(ctx->rc->base.st, recoveries, 1);
		ctx->sink_mapped = false;
	}
}

/* ------------------------------------------------------------------ DDP hook */

static int ddp_encode(struct rrr_xdr *xdr, void *arg, const struct iovec *iov, unsigned niov,
		      uint32_t len)
{
	struct svc_rdma_ctx *ctx = arg;
	struct svc_rdma_conn *rc = ctx->rc;
	unsigned k = ctx->wchunk_next, i;
	uint8_t *dst;
	size_t at;
	int err;

	if (k < ctx->hdr->nwrite && k < SVC_RDMA_MAX_WRITE_CHUNKS &&
	    len <= ctx->hdr->write[k].total && niov == 1 && ctx->pay.p &&
	    (const uint8_t *)iov[0].iov_base >= ctx->pay.p &&
	    (size_t)((const uint8_t *)iov[0].iov_base - ctx->pay.p) <= ctx->pay.len - len) {
		/* the handler built it in request memory, which is registered:
		 * RDMA WRITE straight from there, no copy */
		ctx->wchunk_off[k] = (uint32_t)((const uint8_t *)iov[0].iov_base - ctx->pay.p);
		ctx->wchunk_len[k] = len;
		ctx->wchunk_next = k + 1;
		return 0;
	}
	if (k < ctx->hdr->nwrite && k < SVC_RDMA_MAX_WRITE_CHUNKS &&
	    len <= ctx->hdr->write[k].total && len <= rc->max_payload - ctx->pay_used) {
		err = rrr__svc_rdma_buf_get(rc, &ctx->pay, rc->max_payload);
		if (err)
			return err;
		dst = ctx->pay.p + ctx->pay_used;
		for (i = 0; i < niov; i++) {
			if (iov[i].iov_len)
				memcpy(dst, iov[i].iov_base, iov[i].iov_len);
			dst += iov[i].iov_len;
		}
		ctx->wchunk_off[k] = ctx->pay_used;
		ctx->wchunk_len[k] = len;
		ctx->wchunk_next = k + 1;
		ctx->pay_used += len;
		/* keep the next payload 4-byte aligned, within the buffer */
		ctx->pay_used = ctx->pay_used > rc->max_payload - 3 ? rc->max_payload
								    : RRR_XDR_PAD(ctx->pay_used);
		return 0; /* only the length word stays inline; no pad */
	}
	/* inline: bytes and pad follow the length word */
	at = rrr_xdr_pos(xdr);
	err = rrr_xdr_skip(xdr, len);
	if (err)
		return err;
	dst = xdr->buf + at;
	for (i = 0; i < niov; i++) {
		if (iov[i].iov_len)
			memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
	return 0;
}

void *rrr__svc_rdma_req_alloc(struct rrr_svc_req *req, size_t len)
{
	struct svc_rdma_ctx *ctx = req->alloc_ctx;
	struct svc_rdma_conn *rc = ctx->rc;
	uint32_t at;

	if (len > rc->max_payload || rrr__svc_rdma_buf_get(rc, &ctx->pay, rc->max_payload))
		return NULL;
	at = (ctx->pay_used + 63u) & ~63u;
	if (at < ctx->pay_used || at > rc->max_payload || len > rc->max_payload - at)
		return NULL;
	ctx->pay_used = at + (uint32_t)len;
	return ctx->pay.p + at;
}

void rrr__svc_rdma_ddp_reset(struct svc_rdma_ctx *ctx)
{
	ctx->wchunk_next = 0;
	ctx->pay_used = 0;
	memset(ctx->wchunk_len, 0, sizeof(ctx->wchunk_len));
}

void rrr__svc_rdma_ddp_init(struct svc_rdma_ctx *ctx, struct rrr_xdr *res)
{
	rrr__svc_rdma_ddp_reset(ctx);
	ctx->zc_k = -1;
	if (ctx->hdr->nwrite == 0)
		return;
	ctx->ddp.encode = ddp_encode;
	ctx->ddp.decode = NULL;
	ctx->ddp.ctx = ctx;
	rrr_xdr_set_ddp(res, &ctx->ddp);
}

/* ------------------------------------------------------------------ writes */

int rrr__svc_rdma_add_write(struct svc_rdma_ctx *ctx, unsigned *n, uint64_t src, uint32_t len,
			    uint32_t lkey, const struct rrr_rdma_seg *seg)
{
	struct rrr_send_wr *wr;

	if (*n >= SVC_RDMA_MAX_WRS - 2)
		return -E2BIG;
	wr = &ctx->wrs[*n];
	memset(wr, 0, sizeof(*wr));
	ctx->sges[*n].addr = src;
	ctx->sges[*n].length = len;
	ctx->sges[*n].lkey = lkey;
	wr->opcode = RRR_WR_RDMA_WRITE;
	wr->sg_list = &ctx->sges[*n];
	wr->num_sge = 1;
	wr->u.rdma.remote_addr = seg->offset;
	wr->u.rdma.rkey = seg->handle;
	if (*n)
		ctx->wrs[*n - 1].next = wr;
	(*n)++;
	return 0;
}

/* Add WRITEs of @left bytes from @src (in @mr) along the segments of @in,
 * each cut to what is left of @left, and describe them in @out's segments.
 * 0 or the -errno of rrr__svc_rdma_add_write(). */
static inline int write_along(struct svc_rdma_ctx *ctx, const struct rrr_rdma_chunk *in,
			      struct rrr_rdma_chunk *out, uint64_t src, uint32_t left,
			      struct rrr_mr *mr, unsigned *n)
{
	for (uint32_t i = 0; i < in->nsegs; i++) {
		uint32_t put = left < in->segs[i].length ? left : in->segs[i].length;
		int err;

		out->segs[i] = in->segs[i];
		out->segs[i].length = put;
		if (!put)
			continue;
		err = rrr__svc_rdma_add_write(ctx, n, src, put, rrr_mr_lkey(mr), &in->segs[i]);
		if (err)
			return err;
		src += put;
		left -= put;
	}
	return 0;
}

int rrr__svc_rdma_write_chunks(struct svc_rdma_ctx *ctx, struct rrr_rdma_hdr *rhdr, unsigned *n)
{
	struct svc_rdma_conn *rc = ctx->rc;
	unsigned k;
	int err;

	rhdr->nwrite = ctx->hdr->nwrite;
	for (k = 0; k < ctx->hdr->nwrite; k++) {
		const struct rrr_rdma_chunk *in = &ctx->hdr->write[k];
		struct rrr_rdma_chunk *out = &rhdr->write[k];
		uint32_t left = k < SVC_RDMA_MAX_WRITE_CHUNKS ? ctx->wchunk_len[k] : 0;
		uint64_t src = left ? (uint64_t)(uintptr_t)ctx->pay.p + ctx->wchunk_off[k] : 0;

		out->nsegs = in->nsegs;
		out->total = left;
		if (left > in->total)
			return -EMSGSIZE; /* cannot happen: the hook checked */
		if ((int)k == ctx->zc_k && left) {
			/* the application's memory, registered for this reply */
			err = rrr__svc_rdma_zc_writes(ctx, in, out, n);
			if (err)
				return err;
			RRR__STAT_ADD(rc->base.st, write_chunks, 1);
			RRR__STAT_ADD(rc->base.st, rdma_write_bytes, out->total);
			continue;
		}
		err = write_along(ctx, in, out, src, left, ctx->pay.mr, n);
		if (err)
			return err;
		if (out->total) {
			RRR__STAT_ADD(rc->base.st, write_chunks, 1);
			RRR__STAT_ADD(rc->base.st, rdma_write_bytes, out->total);
		}
	}
	return 0;
}

int rrr__svc_rdma_write_reply_chunk(struct svc_rdma_ctx *ctx, const uint8_t *src, struct rrr_mr *mr,
			       uint32_t len, struct rrr_rdma_hdr *rhdr, unsigned *n)
{
	const struct rrr_rdma_chunk *in = &ctx->hdr->reply;
	struct rrr_rdma_chunk *out = &rhdr->reply;
	int err;

	if (!ctx->hdr->has_reply || len > in->total)
		return -EMSGSIZE;
	rhdr->has_reply = true;
	out->nsegs = in->nsegs;
	out->total = len;
	err = write_along(ctx, in, out, (uint64_t)(uintptr_t)src, len, mr, n);
	if (err)
		return err;
	RRR__STAT_ADD(ctx->rc->base.st, reply_chunks, 1);
	RRR__STAT_ADD(ctx->rc->base.st, rdma_write_bytes, len);
	return 0;
}

/* ------------------------------------------------------------------ remote invalidation */

/* Exactly one distinct handle in the whole call: the one to invalidate. */
void rrr__svc_rdma_pick_inv(struct svc_rdma_ctx *ctx)
{
	const struct rrr_rdma_hdr *h = ctx->hdr;
	uint32_t handle = 0, i, k;
	unsigned cnt = 0;

#define SEEN(x)                                                                                    \
	do {                                                                                       \
		if (cnt == 0) {                                                                    \
			handle = (x);                                                              \
			cnt = 1;                                                                   \
		} else if ((x) != handle) {                                                        \
			cnt = 2;                                                                   \
		}                                                                                  \
	} while (0)
	for (i = 0; i < h->nread; i++)
		SEEN(h->read[i].seg.handle);
	for (k = 0; k < h->nwrite; k++)
		for (i = 0; i < h->write[k].nsegs; i++)
			SEEN(h->write[k].segs[i].handle);
	if (h->has_reply)
		for (i = 0; i < h->reply.nsegs; i++)
			SEEN(h->reply.segs[i].handle);
#undef SEEN
	ctx->has_inv = cnt == 1;
	ctx->inv_handle = handle;
}
