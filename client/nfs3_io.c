/* SPDX-License-Identifier: MIT */
/*
 * client/nfs3_io.c - NFSv3 READ, WRITE and COMMIT: the one place NFS I/O
 * is encoded, asynchronous first (rrr_nfs3_io_submit), with the
 * synchronous calls and the pipelined helpers built on it.
 *
 * Normal operation. A struct rrr_nfs3_io is prepared once per submission
 * (io_prepare): its arguments are copied into the io's private area, the
 * rrr_call of that area names the codecs of xdr/nfs3.c and the data as the
 * call's DDP payload - TO_SERVER for WRITE (on RDMA the server pulls it
 * from the caller's iovecs with RDMA Read), FROM_SERVER for READ (the
 * server pushes it into them with RDMA Write), each buffer registered for
 * this call only and invalidated before the completion runs. A READ's
 * reply hint lets a small READ come back inline, nothing registered
 * (client/clnt_plan.c). The completion (io_finish) copies the reply's
 * results into the io's out fields and turns an nfsstat3 into its -errno;
 * the caller's callback runs last, on the connection's progress thread.
 *
 *   rrr_nfs3_io_submit(nfs, io)      the mount's next connection
 *   rrr_nfs3_io_submit_clnt(c, io)   a connection of the caller's own
 *   rrr_nfs3_read/_write/_commit     io_prepare + rrr_clnt_call + io_finish
 *   rrr_nfs3_read_all/_write_all     up to @qd ios in flight (below)
 *
 * Pipelining: rrr_nfs3_read_all()/rrr_nfs3_write_all() keep up to @qd ios
 * in flight, each on the next connection; completions only mark a slot
 * done and signal; the submitting thread checks results, re-issues short
 * transfers for the remainder, and refills. The pipeline returns only when
 * every slot has completed, on whichever connection it went, so COMMIT
 * (on any connection) follows every WRITE it covers. UNSTABLE writes are
 * followed by COMMIT; if any reply, from any connection, or the COMMIT
 * carried a different write verifier (the server restarted: its verifier
 * is per server instance, the same on every connection), the whole range
 * is written again once with FILE_SYNC.
 *
 * Recovery: a transport error completes the io with that -errno (the
 * synchronous calls and the pipeline record a sentence in
 * rrr_last_error() on the caller's thread); an NFS error with
 * rrr_nfs3_stat_to_errno() of io->nfs_status, which the synchronous calls
 * also keep for rrr_nfs3_last_status().
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "client/nfs3_impl.h"
#include "common/rrr_impl.h"

#define MAX_QD 128u
/* READ3res without its data: RPC reply header with an AUTH_NONE/AUTH_SYS
 * verifier, status, post_op_attr, count, eof, opaque length (~128 bytes),
 * with room to spare. It lets the transport take a small READ's reply
 * inline (no write chunk, nothing registered) when it fits the receive
 * size (client/clnt_plan.c). */
#define READ_REPLY_HINT 256u

static int enc_read(struct rrr_xdr *x, const void *a)
{
	return rrr_nfs3_xdr_read_args(x, (struct rrr_nfs3_read_args *)(uintptr_t)a);
}

static int dec_read(struct rrr_xdr *x, void *r)
{
	return rrr_nfs3_xdr_read_res(x, r);
}

static int enc_write(struct rrr_xdr *x, const void *a)
{
	return rrr_nfs3_xdr_write_args(x, (struct rrr_nfs3_write_args *)(uintptr_t)a);
}

static int dec_write(struct rrr_xdr *x, void *r)
{
	return rrr_nfs3_xdr_write_res(x, r);
}

static int enc_commit(struct rrr_xdr *x, const void *a)
{
	return rrr_nfs3_xdr_commit_args(x, (struct rrr_nfs3_commit_args *)(uintptr_t)a);
}

static int dec_commit(struct rrr_xdr *x, void *r)
{
	return rrr_nfs3_xdr_commit_res(x, r);
}

static const char *op_name(enum rrr_nfs3_io_op op)
{
	return op == RRR_NFS3_IO_READ ? "READ" : op == RRR_NFS3_IO_WRITE ? "WRITE" : "COMMIT";
}

/* Check @io's in fields and build its call; -EINVAL with a sentence. */
static int io_prepare(struct rrr_nfs3_io *io, const struct rrr_rpc_cred *cred, int timeout_ms)
{
	struct rrr_call *k = &io->priv.call;
	uint64_t len = 0;

	if (io->op != RRR_NFS3_IO_COMMIT) {
		if (io->op != RRR_NFS3_IO_READ && io->op != RRR_NFS3_IO_WRITE)
			return rrr__set_error(-EINVAL, "NFS I/O: unknown op %d (READ, WRITE or COMMIT)",
					      (int)io->op);
		if (!io->iov || io->niov == 0 || io->niov > RRR_XDR_PAYLOAD_MAX_IOV)
			return rrr__set_error(-EINVAL,
					      "%s: %u buffers (give 1 to %u iovecs)", op_name(io->op),
					      io->niov, RRR_XDR_PAYLOAD_MAX_IOV);
		for (unsigned i = 0; i < io->niov; i++)
			len += io->iov[i].iov_len;
		if (len > RRR_NFS3_MAX_DATA)
			return rrr__set_error(-EINVAL, "%s of %llu bytes: one call moves at most %u",
					      op_name(io->op), (unsigned long long)len,
					      RRR_NFS3_MAX_DATA);
	}
	io->nfs_status = RRR_NFS3_OK;
	io->rpc_stat = 0;
	io->done = 0;
	io->eof = false;
	io->committed = 0;
	memset(io->verf, 0, sizeof(io->verf));
	memset(k, 0, sizeof(*k));
	k->prog = RRR_NFS3_PROGRAM;
	k->vers = RRR_NFS3_VERSION;
	k->cred = cred;
	k->timeout_ms = io->timeout_ms ? io->timeout_ms : timeout_ms;
	switch (io->op) {
	case RRR_NFS3_IO_READ:
		io->priv.args.r = (struct rrr_nfs3_read_args){
			.fh = io->fh, .offset = io->offset, .count = (uint32_t)len};
		memset(&io->priv.res.r, 0, sizeof(io->priv.res.r));
		k->proc = RRR_NFS3_READ;
		k->encode = enc_read;
		k->args = &io->priv.args.r;
		k->decode = dec_read;
		k->res = &io->priv.res.r;
		k->ddp = RRR_DDP_FROM_SERVER;
		k->reply_hint = READ_REPLY_HINT;
		k->payload = io->iov;
		k->npayload = io->niov;
		k->idempotent = true;
		break;
	case RRR_NFS3_IO_WRITE: {
		struct rrr_nfs3_write_args *a = &io->priv.args.w;

		memset(a, 0, offsetof(struct rrr_nfs3_write_args, dec_iov));
		a->fh = io->fh;
		a->offset = io->offset;
		a->count = a->data_len = (uint32_t)len;
		a->stable = io->stable;
		a->iov = io->iov;
		a->niov = io->niov;
		memset(&io->priv.res.w, 0, sizeof(io->priv.res.w));
		k->proc = RRR_NFS3_WRITE;
		k->encode = enc_write;
		k->args = a;
		k->decode = dec_write;
		k->res = &io->priv.res.w;
		k->ddp = RRR_DDP_TO_SERVER;
		k->payload = io->iov;
		k->npayload = io->niov;
		break;
	}
	case RRR_NFS3_IO_COMMIT:
		io->priv.args.c = (struct rrr_nfs3_commit_args){
			.fh = io->fh, .offset = io->offset, .count = io->count};
		memset(&io->priv.res.c, 0, sizeof(io->priv.res.c));
		k->proc = RRR_NFS3_COMMIT;
		k->encode = enc_commit;
		k->args = &io->priv.args.c;
		k->decode = dec_commit;
		k->res = &io->priv.res.c;
		k->idempotent = true;
		break;
	}
	return 0;
}

/* The call ended with transport status @status: fill the out fields;
 * returns 0, the -errno of an nfsstat3, or @status. */
static int io_finish(struct rrr_nfs3_io *io, int status)
{
	io->rpc_stat = io->priv.call.rpc_stat;
	if (status)
		return status;
	switch (io->op) {
	case RRR_NFS3_IO_READ:
		io->nfs_status = io->priv.res.r.status;
		io->done = io->priv.res.r.count;
		io->eof = io->priv.res.r.eof;
		break;
	case RRR_NFS3_IO_WRITE:
		io->nfs_status = io->priv.res.w.status;
		io->done = io->priv.res.w.count;
		io->committed = io->priv.res.w.committed;
		memcpy(io->verf, io->priv.res.w.verf, 8);
		break;
	case RRR_NFS3_IO_COMMIT:
		io->nfs_status = io->priv.res.c.status;
		memcpy(io->verf, io->priv.res.c.verf, 8);
		break;
	}
	if (io->nfs_status != RRR_NFS3_OK) {
		io->done = 0;
		return rrr_nfs3_stat_to_errno(io->nfs_status);
	}
	return 0;
}

static void io_done(struct rrr_call *call, int status, void *arg)
{
	struct rrr_nfs3_io *io = arg;

	(void)call;
	status = io_finish(io, status);
	io->priv.done(io, status, io->priv.arg);
}

int rrr_nfs3_io_submit_clnt(struct rrr_clnt *clnt, const struct rrr_rpc_cred *cred,
			    struct rrr_nfs3_io *io, rrr_nfs3_io_done_fn done, void *arg)
{
	int rc;

	if (!clnt || !io || !done)
		return rrr__set_error(-EINVAL, "NFS I/O: no connection, io or callback");
	rc = io_prepare(io, cred, 0);
	if (rc)
		return rc;
	io->priv.done = done;
	io->priv.arg = arg;
	rc = rrr_clnt_call_async(clnt, &io->priv.call, io_done, io);
	if (rc)
		return rrr__nfs3_call_status(rc, &io->priv.call, op_name(io->op));
	return 0;
}

int rrr_nfs3_io_submit(struct rrr_nfs3 *n, struct rrr_nfs3_io *io, rrr_nfs3_io_done_fn done,
		       void *arg)
{
	int rc;

	if (!n || !io || !done)
		return rrr__set_error(-EINVAL, "NFS I/O: no mount, io or callback");
	rc = io_prepare(io, rrr__nfs3_cred(n), n->timeout_ms);
	if (rc)
		return rc;
	io->priv.done = done;
	io->priv.arg = arg;
	rc = rrr_clnt_call_async(rrr__nfs3_pick(n), &io->priv.call, io_done, io);
	if (rc)
		return rrr__nfs3_call_status(rc, &io->priv.call, op_name(io->op));
	return 0;
}

/* ------------------------------------------------------------ synchronous */
/* One io on the caller's thread; returns as rrr_nfs3_read() does. */
static int io_sync(struct rrr_nfs3 *n, struct rrr_nfs3_io *io)
{
	int rc = io_prepare(io, rrr__nfs3_cred(n), n->timeout_ms);

	if (rc)
		return rc;
	rc = rrr_clnt_call(rrr__nfs3_pick(n), &io->priv.call);
	if (rc)
		return rrr__nfs3_call_status(io_finish(io, rc), &io->priv.call, op_name(io->op));
	rc = io_finish(io, 0);
	return rc ? rrr__nfs3_err(io->nfs_status) : 0;
}

int rrr_nfs3_read(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		  const struct iovec *iov, unsigned niov, uint32_t *count, bool *eof)
{
	rrr__nfs3_status_reset();
	struct rrr_nfs3_io *io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->op = RRR_NFS3_IO_READ;
	io->fh = *fh;
	io->offset = offset;
	io->iov = iov;
	io->niov = niov;
	int rc = io_sync(n, io);
	if (rc == 0) {
		*count = io->done;
		*eof = io->eof;
	}
	free(io);
	return rc;
}

int rrr_nfs3_write(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		   const struct iovec *iov, unsigned niov, uint32_t stable, uint32_t *count)
{
	rrr__nfs3_status_reset();
	struct rrr_nfs3_io *io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->op = RRR_NFS3_IO_WRITE;
	io->fh = *fh;
	io->offset = offset;
	io->iov = iov;
	io->niov = niov;
	io->stable = stable;
	int rc = io_sync(n, io);
	if (rc == 0)
		*count = io->done;
	free(io);
	return rc;
}

int rrr_nfs3_commit(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint8_t verf[8])
{
	rrr__nfs3_status_reset();
	struct rrr_nfs3_io *io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->op = RRR_NFS3_IO_COMMIT;
	io->fh = *fh;
	int rc = io_sync(n, io);
	if (rc == 0 && verf)
		memcpy(verf, io->verf, 8);
	free(io);
	return rc;
}

/* ------------------------------------------------------------ pipelined */
/* One in-flight READ or WRITE of a pipelined transfer. */
struct slot {
	struct rrr_nfs3_io io;
	struct iovec iov[2];
	uint64_t off; /* file offset of this call */
	uint32_t len; /* bytes asked for */
	int status;   /* the io's status, set by the callback */
	bool busy, done;
	struct pipe *p;
};

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ndone;
};

static void slot_done(struct rrr_nfs3_io *io, int status, void *arg)
{
	struct slot *s = arg;
	(void)io;
	pthread_mutex_lock(&s->p->lock);
	s->status = status;
	s->done = true;
	s->p->ndone++;
	pthread_cond_signal(&s->p->cond);
	pthread_mutex_unlock(&s->p->lock);
}

struct xfer {
	struct rrr_nfs3 *n;
	const struct rrr_nfs3_fh *fh;
	bool write;
	uint8_t *buf;     /* file offset base corresponds to buf[0] */
	uint64_t base;
	size_t len;
	uint32_t chunk, split, stable;
	uint64_t eof_at;  /* read: first offset known to be past EOF */
	bool verf_set, verf_changed;
	uint8_t verf[8];
};

static int slot_submit(struct xfer *x, struct slot *s, uint64_t off, uint32_t len)
{
	uint8_t *p = x->buf + (off - x->base);
	struct rrr_nfs3_io *io = &s->io;

	s->off = off;
	s->len = len;
	s->done = false;
	s->status = 0;
	unsigned niov = 1;
	s->iov[0].iov_base = p;
	s->iov[0].iov_len = len;
	if (x->split && x->split < len) {
		s->iov[0].iov_len = x->split;
		s->iov[1].iov_base = p + x->split;
		s->iov[1].iov_len = len - x->split;
		niov = 2;
	}
	io->op = x->write ? RRR_NFS3_IO_WRITE : RRR_NFS3_IO_READ;
	io->fh = *x->fh;
	io->offset = off;
	io->iov = s->iov;
	io->niov = niov;
	io->stable = x->stable;
	io->timeout_ms = 0;
	int rc = rrr_nfs3_io_submit(x->n, io, slot_done, s);
	if (rc == 0)
		s->busy = true;
	return rc;
}

/* Check a completed slot; returns 0 or -errno (an NFS error's nfsstat3
 * kept for rrr_nfs3_last_status()); *@rlen gets the remainder to re-issue
 * at *@roff when the transfer was short. */
static int slot_check(struct xfer *x, struct slot *s, uint64_t *roff, uint32_t *rlen)
{
	const struct rrr_nfs3_io *io = &s->io;
	uint32_t got = io->done;

	*rlen = 0;
	if (s->status < 0)
		return io->nfs_status != RRR_NFS3_OK
			       ? rrr__nfs3_err(io->nfs_status)
			       : rrr__nfs3_call_status(s->status, &io->priv.call,
						       x->write ? "WRITE" : "READ");
	if (x->write) {
		if (x->stable == RRR_NFS3_UNSTABLE) {
			if (!x->verf_set) {
				memcpy(x->verf, io->verf, 8);
				x->verf_set = true;
			} else if (memcmp(x->verf, io->verf, 8)) {
				x->verf_changed = true;
			}
		}
		if (got == 0 && s->len)
			return rrr__set_error(-EIO, "the server wrote 0 bytes at offset %llu",
					      (unsigned long long)s->off);
	} else {
		if (got > s->len)
			return rrr__set_error(-EBADMSG, "READ returned more than asked");
		if (io->eof || got == 0) {
			uint64_t end = s->off + got;
			if (end < x->eof_at)
				x->eof_at = end;
			return 0;
		}
	}
	if (got < s->len) {
		*roff = s->off + got;
		*rlen = s->len - got;
	}
	return 0;
}

static int run_pipeline(struct xfer *x, unsigned qd, rrr_nfs3_progress_fn progress, void *arg,
			size_t *done_bytes)
{
	if (qd == 0)
		qd = 1;
	if (qd > MAX_QD)
		qd = MAX_QD;
	struct slot *slots = calloc(qd, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	struct pipe p = {.ndone = 0};
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (unsigned i = 0; i < qd; i++)
		slots[i].p = &p;

	uint64_t next = x->base, end = x->base + x->len, moved = 0;
	/* Pending remainders of short transfers, re-issued before new ranges. */
	uint64_t pend_off[MAX_QD];
	uint32_t pend_len[MAX_QD];
	unsigned npend = 0, busy = 0;
	int rc = 0;
	x->eof_at = UINT64_MAX;

	for (;;) {
		/* Fill free slots. */
		for (unsigned i = 0; i < qd && rc == 0; i++) {
			if (slots[i].busy)
				continue;
			uint64_t off;
			uint32_t len;
			if (npend) {
				npend--;
				off = pend_off[npend];
				len = pend_len[npend];
			} else if (next < end && next < x->eof_at) {
				off = next;
				len = (uint32_t)((end - next) < x->chunk ? end - next : x->chunk);
				next += len;
			} else {
				break;
			}
			rc = slot_submit(x, &slots[i], off, len);
			if (rc == 0)
				busy++;
		}
		if (busy == 0)
			break;
		/* Wait for at least one completion. */
		pthread_mutex_lock(&p.lock);
		while (p.ndone == 0)
			pthread_cond_wait(&p.cond, &p.lock);
		pthread_mutex_unlock(&p.lock);
		for (unsigned i = 0; i < qd; i++) {
			struct slot *s = &slots[i];
			pthread_mutex_lock(&p.lock);
			bool d = s->busy && s->done;
			if (d) {
				p.ndone--;
				s->busy = false;
			}
			pthread_mutex_unlock(&p.lock);
			if (!d)
				continue;
			busy--;
			uint64_t roff;
			uint32_t rlen;
			int src = slot_check(x, s, &roff, &rlen);
			if (src != 0 && rc == 0)
				rc = src;
			if (src == 0) {
				uint64_t got = s->len - rlen;
				if (!x->write && s->off + got > x->eof_at)
					got = x->eof_at > s->off ? x->eof_at - s->off : 0;
				moved += got;
				if (rlen && npend < MAX_QD && rc == 0) {
					pend_off[npend] = roff;
					pend_len[npend] = rlen;
					npend++;
				}
			}
		}
		if (progress && rc == 0)
			progress(arg, moved);
	}
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	free(slots);
	if (done_bytes) {
		uint64_t total = x->eof_at < end ? x->eof_at - x->base : x->len;
		*done_bytes = (size_t)total;
	}
	return rc;
}

int rrr_nfs3_read_all(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		      void *buf, size_t len, unsigned qd, uint32_t split, size_t *done,
		      rrr_nfs3_progress_fn progress, void *arg)
{
	rrr__nfs3_status_reset();
	struct xfer x = {.n = n, .fh = fh, .write = false, .buf = buf, .base = offset,
			 .len = len, .chunk = n->rsize, .split = split};
	if (offset > UINT64_MAX - len)
		return rrr__set_error(-EINVAL, "read range overflows");
	return run_pipeline(&x, qd, progress, arg, done);
}

int rrr_nfs3_write_all(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		       const void *buf, size_t len, unsigned qd, uint32_t split, uint32_t stable,
		       rrr_nfs3_progress_fn progress, void *arg)
{
	rrr__nfs3_status_reset();
	if (offset > UINT64_MAX - len)
		return rrr__set_error(-EINVAL, "write range overflows");
	struct xfer x = {.n = n, .fh = fh, .write = true, .buf = (uint8_t *)(uintptr_t)buf,
			 .base = offset, .len = len, .chunk = n->wsize, .split = split,
			 .stable = stable};
	int rc = run_pipeline(&x, qd, progress, arg, NULL);
	if (rc || stable != RRR_NFS3_UNSTABLE || len == 0)
		return rc;
	uint8_t cverf[8];
	rc = rrr_nfs3_commit(n, fh, cverf);
	if (rc)
		return rc;
	if (!x.verf_changed && x.verf_set && !memcmp(cverf, x.verf, 8))
		return 0;
	/* The server restarted under us: what it had not committed may be lost. */
	struct xfer again = x;
	again.stable = RRR_NFS3_FILE_SYNC;
	again.verf_set = again.verf_changed = false;
	return run_pipeline(&again, qd, progress, arg, NULL);
}
