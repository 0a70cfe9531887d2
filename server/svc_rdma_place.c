/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma_place.c - zero-copy arguments of the RPC-over-RDMA
 * server: a WRITE's data is pulled by RDMA READ straight into memory the
 * application chose (rrr_svc_place_fn, rrr_svc_set_place) instead of the
 * request's rebuilt call buffer, so a handler that keeps the data (a block
 * store's disk, a cache) copies nothing.
 *
 * When. A call qualifies when it is RDMA_MSG with exactly one read chunk,
 * at a position after the RPC header, whose total length equals the XDR
 * length word just before that position (a DDP-eligible item, RFC 8166
 * section 3.4.5), and its procedure has a place function. The inline
 * message is then the whole call but that item's bytes:
 *
 *   inline message:  [ RPC header | args ... | len ][ args after the item ]
 *                                                  ^ position P (read chunk)
 *   placed data:     application iov[0..n), exactly len bytes
 *
 * The place function decodes the arguments before the item (a WRITE's
 * offset) from the inline bytes and returns the memory; nothing has been
 * pulled or registered yet, so an offset out of range costs nothing.
 *
 * Registration. The memory is registered for this I/O only through the
 * connection's registration engine pool, as the library's own READ sink is
 * on iWARP: local write rights, plus remote write where the device places
 * READ responses like tagged writes (attr.read_sink_remote_write); the
 * REG_MRs complete before the READs are posted, and the LOCAL_INVs after
 * the READs complete, before the handler runs (svc_rdma_transport.c's
 * phases PH_REG, PH_READ, PH_INV, unchanged). READ WRs are cut where an
 * iov piece or a registration ends.
 *
 * Dispatch. The call's stream is the inline message itself (copied into
 * the request's buffer, as a rebuilt call is); a decode hook describes the
 * placed memory when the handler decodes the item at position P, and
 * treats any other payload as plain opaque in the stream.
 *
 * Release. The application's release callback runs exactly once, when the
 * request ends (rrr__svc_rdma_ctx_put), after the registration was
 * invalidated or recovered: status 0 when the handler ran, else -EIO (the
 * call failed before it: the memory may hold part of the data). When the
 * memory cannot be registered or the READs do not fit the work request
 * array, the callback runs at once with that error and the call takes the
 * ordinary path (its data lands in library memory; the handler copes, as
 * it must over TCP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/svc_rdma_impl.h"
#include "common/rrr_impl.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Give the application its memory back (once) with @status. */
static void place_release(struct svc_rdma_ctx *ctx, int status)
{
	struct rrr_svc_place *pl = ctx->place;

	ctx->placed = false;
	if (pl && pl->release) {
		void (*fn)(void *, int) = pl->release;

		pl->release = NULL;
		fn(pl->arg, status);
	}
}

/* Check what the place function returned; 0 or -EINVAL. */
static int place_check(const struct rrr_svc_place *pl, uint32_t len)
{
	uint64_t sum = 0;

	if (!pl->release || !pl->niov || pl->niov > RRR_XDR_PAYLOAD_MAX_IOV)
		return -EINVAL;
	for (unsigned i = 0; i < pl->niov; i++) {
		if (pl->iov[i].iov_len > UINT32_MAX || (pl->iov[i].iov_len && !pl->iov[i].iov_base))
			return -EINVAL;
		sum += pl->iov[i].iov_len;
	}
	return sum == len ? 0 : -EINVAL;
}

/* Build the READs of the chunk's segments into the placed memory after the
 * ctx->wrs[0..nreg) REG_MRs; 0 or -E2BIG/-EFAULT. */
static int place_reads(struct svc_rdma_ctx *ctx, uint32_t first, uint32_t nsegs, unsigned nreg)
{
	const struct rrr_svc_place *pl = ctx->place;
	const struct rrr_reg_io *io = ctx->sink;
	struct rrr_send_wr *prev = nreg ? &ctx->wrs[nreg - 1] : NULL;
	unsigned nwr = nreg, piece = 0, r;
	size_t in_piece = 0;

	for (uint32_t i = first; i < first + nsegs; i++) {
		const struct rrr_rdma_seg *s = &ctx->hdr->read[i].seg;
		uint64_t done = 0;

		while (done < s->length) {
			uint64_t addr, left = s->length - done, room;

			while (piece < pl->niov && in_piece == pl->iov[piece].iov_len) {
				piece++;
				in_piece = 0;
			}
			if (piece == pl->niov || nwr >= SVC_RDMA_MAX_WRS - 2)
				return piece == pl->niov ? -EFAULT : -E2BIG;
			addr = (uint64_t)(uintptr_t)pl->iov[piece].iov_base + in_piece;
			/* the registration holding @addr */
			for (r = 0; r < io->nsegs; r++)
				if (addr >= io->segs[r].offset &&
				    addr - io->segs[r].offset < io->segs[r].length)
					break;
			if (r == io->nsegs)
				return -EFAULT;
			room = pl->iov[piece].iov_len - in_piece;
			if (io->segs[r].offset + io->segs[r].length - addr < room)
				room = io->segs[r].offset + io->segs[r].length - addr;
			if (left > room)
				left = room;
			rrr__svc_rdma_add_read(ctx, &nwr, &prev, addr, (uint32_t)left,
					       rrr_mr_lkey(io->mrs[r]), s->offset + done, s->handle);
			done += left;
			in_piece += (size_t)left;
		}
	}
	return rrr__svc_rdma_read_chain(ctx, prev, nwr, nreg) ? -EFAULT : 0;
}

/* Register the placed memory and build REG_MRs + READs; 0 or -errno (the
 * registration is then recovered). */
static int place_map(struct svc_rdma_ctx *ctx, uint32_t first, uint32_t nsegs)
{
	struct svc_rdma_conn *rc = ctx->rc;
	struct rrr_svc_place *pl = ctx->place;
	struct rrr_sg sg[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned n = 0, nreg, i;
	uint32_t access = RRR_ACCESS_LOCAL_WRITE;
	int err;

	if (!ctx->sink) {
		ctx->sink = calloc(1, sizeof(*ctx->sink));
		if (!ctx->sink)
			return -ENOMEM;
	}
	for (i = 0; i < pl->niov; i++)
		if (pl->iov[i].iov_len)
			sg[n++] = (struct rrr_sg){pl->iov[i].iov_base, 0, (uint32_t)pl->iov[i].iov_len};
	if (rc->sink_remote_write)
		access |= RRR_ACCESS_REMOTE_WRITE;
	err = rrr_reg_map(rc->pool, sg, n, access, ctx->sink);
	if (err)
		return err;
	ctx->sink_mapped = true;
	nreg = ctx->sink->nsegs;
	if (nreg == 0 || nreg >= SVC_RDMA_MAX_WRS - 2) {
		rrr__svc_rdma_sink_recover(ctx);
		return -E2BIG;
	}
	for (i = 0; i < nreg; i++)
		ctx->wrs[i] = ctx->sink->reg_wr[i];
	for (i = 0; i + 1 < nreg; i++)
		ctx->wrs[i].next = &ctx->wrs[i + 1];
	err = place_reads(ctx, first, nsegs, nreg);
	if (err) {
		rrr__svc_rdma_sink_recover(ctx);
		return err;
	}
	RRR__STAT_ADD(rc->base.st, registrations, nreg);
	RRR__STAT_ADD(rc->base.st, hole_splits, ctx->sink->holes);
	return 0;
}

int rrr__svc_rdma_place_prepare(struct svc_rdma_ctx *ctx, const uint8_t *msg, size_t msg_len,
				uint32_t first, uint32_t nsegs, uint32_t position, uint32_t total)
{
	struct svc_rdma_conn *rc = ctx->rc;
	rrr_svc_place_fn place;
	struct rrr_xdr args;
	int err;

	if (!rc->pool || ctx->hdr->proc != RRR_RDMA_MSG || !total || position < 44 ||
	    position % 4 || position > msg_len || be32(msg + position - 4) != total)
		return -ENOENT;
	memset(&ctx->req, 0, sizeof(ctx->req));
	ctx->req.svc = rc->base.svc;
	ctx->req.conn = &rc->base;
	/* the header and the arguments before the item's length word */
	rrr_xdr_init(&args, (void *)(uintptr_t)msg, position - 4, RRR_XDR_DECODE);
	place = rrr__svc_place_lookup(&ctx->req, &args);
	if (!place)
		return -ENOENT;
	if (!ctx->place) {
		ctx->place = malloc(sizeof(*ctx->place));
		if (!ctx->place)
			return -ENOENT;
	}
	memset(ctx->place, 0, sizeof(*ctx->place));
	if (place(&ctx->req, &args, total, ctx->place))
		return -ENOENT; /* the library's buffer, as without one */
	ctx->placed = true;
	ctx->place_status = -EIO;
	err = place_check(ctx->place, total);
	if (!err)
		err = rrr__svc_rdma_sink_take(ctx, rc->max_record + SVC_RDMA_ALIGN);
	if (!err)
		err = place_map(ctx, first, nsegs);
	if (err) {
		if (err == -EINVAL)
			rrr__log_debug("svc_rdma: a place function returned memory that does not "
				       "add up to the %u bytes of the payload",
				       total);
		place_release(ctx, err);
		return -ENOENT;
	}
	/* the call's stream is the inline message: the item's bytes are placed */
	memcpy(ctx->arg.p, msg, msg_len);
	ctx->arg_off = 0;
	ctx->arg_len = msg_len;
	ctx->place_pos = position;
	ctx->place_len = total;
	RRR__STAT_ADD(rc->base.st, read_chunks, 1);
	RRR__STAT_ADD(rc->base.st, rdma_read_bytes, total);
	return 0;
}

/* The decode hook of a placed call's stream (rrr_xdr_ddp.decode). */
static int place_decode(struct rrr_xdr *xdr, void *arg, uint32_t len, struct iovec *iov,
			unsigned *niov)
{
	struct svc_rdma_ctx *ctx = arg;

	if (ctx->placed && rrr_xdr_pos(xdr) == ctx->place_pos && len == ctx->place_len) {
		memcpy(iov, ctx->place->iov, ctx->place->niov * sizeof(*iov));
		*niov = ctx->place->niov;
		ctx->place_pos = SIZE_MAX; /* described once */
		return 0;
	}
	/* any other payload is plain opaque in the stream */
	iov[0].iov_base = (void *)rrr_xdr_cursor(xdr);
	iov[0].iov_len = len;
	*niov = 1;
	return rrr_xdr_skip(xdr, len);
}

void rrr__svc_rdma_place_args(struct svc_rdma_ctx *ctx, struct rrr_xdr *args)
{
	if (!ctx->placed)
		return;
	ctx->place_ddp = (struct rrr_xdr_ddp){.decode = place_decode, .ctx = ctx};
	rrr_xdr_set_ddp(args, &ctx->place_ddp);
	ctx->place_status = 0; /* the handler runs on the data */
}

void rrr__svc_rdma_place_end(struct svc_rdma_ctx *ctx)
{
	if (ctx->placed)
		place_release(ctx, ctx->place_status);
}
