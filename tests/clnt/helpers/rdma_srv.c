/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/rdma_srv.c - see rdma_srv.h.
 *
 * One thread, one connection at a time, everything synchronous: a
 * received call is reconstructed (read chunks pulled with RDMA READ and
 * spliced in at their position, the XDR pad re-inserted), decoded,
 * answered (DDP result pushed with RDMA WRITE into the write chunk, a
 * large reply written into the reply chunk and sent as RDMA_NOMSG), and
 * each WR is waited for before the next. All server memory is one
 * registered slab so any buffer can be an RDMA source or sink.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rrr/oncrpc.h>
#include <rrr/provider.h>
#include <rrr/rpcrdma.h>
#include <rrr/xdr.h>

#include "../../test_env.h"
#include "rdma_srv.h"

#define NRX   64u
#define RXSZ  (256u << 10)
#define BIG   (8u << 20)
#define WR_OP (1ull << 40)

struct ddp_rec {
	bool used;
	const void *p;
	uint32_t len;
};

struct rsrv {
	struct rsrv_opts o;
	pthread_t th;
	atomic_bool stop;
	pthread_mutex_t m;
	struct rsrv_stats st;
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *cq;
	struct rrr_cm *cm;
	struct rrr_cm_id *lid;
	struct rrr_cm_id *id;
	struct rrr_qp *qp;
	bool up;
	uint8_t *slab, *rx, *tx, *data, *msg, *rep;
	struct rrr_mr *mr;
	uint32_t pend[NRX], pendlen[NRX], npend;
	uint32_t inproc; /* calls of the batch being answered, not yet answered */
	uint64_t first_pend_ns;
	uint32_t client_recv;
	struct rrr_rdma_seg mem;
	bool have_mem;
	uint64_t next_id;
	struct rrr_rdma_hdr h, hr;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void teardown(struct rsrv *s)
{
	struct rrr_wc wc[16];

	if (!s->id)
		return;
	rrr_cm_disconnect(s->id);
	if (s->qp)
		rrr_qp_destroy(s->qp);
	while (rrr_cq_poll(s->cq, wc, 16) > 0)
		;
	rrr_cm_id_destroy(s->id);
	s->id = NULL;
	s->qp = NULL;
	s->up = false;
	s->npend = 0;
	s->inproc = 0;
	s->have_mem = false;
}

static int post_recv(struct rsrv *s, uint32_t i)
{
	struct rrr_sge sge = {(uint64_t)(uintptr_t)(s->rx + (size_t)i * RXSZ), RXSZ,
			      rrr_mr_lkey(s->mr)};
	struct rrr_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1};

	return rrr_qp_post_recv(s->qp, &wr, NULL);
}

static void add_pend(struct rsrv *s, const struct rrr_wc *wc)
{
	if (s->npend == 0)
		s->first_pend_ns = now_ns();
	s->pend[s->npend] = (uint32_t)wc->wr_id;
	s->pendlen[s->npend] = wc->byte_len;
	s->npend++;
	pthread_mutex_lock(&s->m);
	if (s->npend + s->inproc > s->st.max_outstanding)
		s->st.max_outstanding = s->npend + s->inproc;
	pthread_mutex_unlock(&s->m);
}

/* Poll; RECVs are queued. Returns 0 when @want completed OK, -EIO else. */
static int poll_until(struct rsrv *s, uint64_t want)
{
	uint64_t deadline = now_ns() + 5000000000ull;
	struct rrr_wc wc[16];

	while (now_ns() < deadline) {
		int n = rrr_cq_wait(s->cq, wc, 16, 20), res = 1;

		if (n < 0)
			return -EIO;
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode == RRR_WC_RECV) {
				if (wc[i].status != RRR_WC_SUCCESS) {
					s->up = false;
					continue;
				}
				add_pend(s, &wc[i]);
				continue;
			}
			if (wc[i].wr_id == want) {
				res = wc[i].status == RRR_WC_SUCCESS ? 0 : -EIO;
				continue;
			}
			if (wc[i].status != RRR_WC_SUCCESS)
				s->up = false;
		}
		if (res <= 0)
			return res;
		if (!want)
			return 0;
	}
	return -EIO;
}

static int op(struct rsrv *s, enum rrr_wr_opcode opc, void *local, uint32_t len, uint64_t raddr,
	      uint32_t rkey, uint32_t inv)
{
	struct rrr_sge sge = {(uint64_t)(uintptr_t)local, len, rrr_mr_lkey(s->mr)};
	struct rrr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_OP + ++s->next_id;
	wr.opcode = opc;
	wr.flags = RRR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	if (opc == RRR_WR_SEND_WITH_INV)
		wr.u.send.invalidate_rkey = inv;
	else {
		wr.u.rdma.remote_addr = raddr;
		wr.u.rdma.rkey = rkey;
	}
	if (rrr_qp_post_send(s->qp, &wr, NULL)) {
		if (getenv("RSRV_DEBUG"))
			fprintf(stderr, "srv: post op %d failed: %s\n", opc, rrr_last_error());
		return -EIO;
	}
	{
		int rc_ = poll_until(s, wr.wr_id);

		if (rc_ && getenv("RSRV_DEBUG"))
			fprintf(stderr, "srv: op %d failed %d\n", opc, rc_);
		return rc_;
	}
}

/* Spread @len bytes from @src over @c's segments; lengths become what was written. */
static int push_chunk(struct rsrv *s, struct rrr_rdma_chunk *c, uint8_t *src, uint32_t len)
{
	uint32_t left = len;

	for (uint32_t i = 0; i < c->nsegs; i++) {
		uint32_t n = c->segs[i].length < left ? c->segs[i].length : left;

		if (n && op(s, RRR_WR_RDMA_WRITE, src, n, c->segs[i].offset, c->segs[i].handle, 0))
			return -EIO;
		c->segs[i].length = n;
		src += n;
		left -= n;
	}
	return left ? -EMSGSIZE : 0;
}

static int rec_encode(struct rrr_xdr *x, void *ctx, const struct iovec *iov, unsigned niov,
		      uint32_t len)
{
	struct ddp_rec *r = ctx;

	(void)x;
	r->used = true;
	r->p = niov ? iov[0].iov_base : NULL;
	r->len = len;
	return 0;
}

static int send_hdr_msg(struct rsrv *s, struct rrr_rdma_hdr *hr, const uint8_t *m, size_t mlen,
			bool with_inv, uint32_t inv)
{
	struct rrr_xdr x;
	size_t hl;

	if (s->inproc)
		s->inproc--;
	rrr_xdr_init(&x, s->tx, RXSZ, RRR_XDR_ENCODE);
	if (rrr_rdma_hdr_encode(&x, hr))
		return -EIO;
	hl = rrr_xdr_pos(&x);
	if (mlen)
		memcpy(s->tx + hl, m, mlen);
	return op(s, with_inv ? RRR_WR_SEND_WITH_INV : RRR_WR_SEND, s->tx, (uint32_t)(hl + mlen), 0,
		  0, inv);
}

static uint32_t grant(struct rsrv *s)
{
	return s->o.credits_set ? s->o.credits : 8;
}

/* Send the reply in s->rep[0..rlen) for call header @h. */
static int reply(struct rsrv *s, const struct rrr_rdma_hdr *h, size_t rlen, bool with_inv,
		 uint32_t inv)
{
	struct rrr_rdma_hdr *hr = &s->hr;
	size_t need;

	memset(hr, 0, offsetof(struct rrr_rdma_hdr, read));
	hr->xid = h->xid;
	hr->vers = 1;
	hr->credits = grant(s);
	hr->proc = RRR_RDMA_MSG;
	hr->nwrite = h->nwrite;
	if (h->nwrite)
		hr->write[0] = h->write[0]; /* lengths already set by push_chunk */
	hr->has_reply = false;
	need = 28 + (h->nwrite ? 8 + 16 * h->write[0].nsegs : 0) + rlen;
	if (need <= s->client_recv)
		return send_hdr_msg(s, hr, s->rep, rlen, with_inv, inv);
	if (!h->has_reply)
		return -EMSGSIZE;
	hr->has_reply = true;
	hr->reply = h->reply;
	if (push_chunk(s, &hr->reply, s->rep, (uint32_t)rlen))
		return -EIO;
	hr->proc = RRR_RDMA_NOMSG;
	return send_hdr_msg(s, hr, NULL, 0, with_inv, inv);
}

static void process(struct rsrv *s, uint32_t idx, uint32_t len)
{
	uint8_t *buf = s->rx + (size_t)idx * RXSZ;
	struct rrr_rdma_hdr *h = &s->h;
	struct rrr_rdma_limits lim;
	struct ddp_rec rec = {0};
	struct rrr_xdr_ddp hook = {.encode = rec_encode, .ctx = &rec};
	struct rrr_rpc_call call;
	struct rrr_xdr a, r;
	size_t mlen = 0, inl_len;
	uint8_t *inl;
	int rc = 0;

	pthread_mutex_lock(&s->m);
	s->st.calls++;
	pthread_mutex_unlock(&s->m);
	rrr_rdma_limits_default(&lim);
	if (rrr_rdma_hdr_decode(buf, len, &lim, h)) {
		post_recv(s, idx);
		return;
	}
	inl = buf + h->hdr_len;
	inl_len = len - h->hdr_len;
	if (h->nread) {
		uint32_t pos = h->read[0].position, total = 0;

		for (uint32_t i = 0; i < h->nread; i++) {
			if (op(s, RRR_WR_RDMA_READ, s->data + total, h->read[i].seg.length,
			       h->read[i].seg.offset, h->read[i].seg.handle, 0)) {
				teardown(s);
				return;
			}
			total += h->read[i].seg.length;
		}
		pthread_mutex_lock(&s->m);
		if (pos == 0)
			s->st.nomsg_calls++;
		else
			s->st.read_chunk_calls++;
		pthread_mutex_unlock(&s->m);
		if (pos == 0) {
			memcpy(s->msg, s->data, total);
			mlen = total;
		} else {
			memcpy(s->msg, inl, pos);
			memcpy(s->msg + pos, s->data, total);
			mlen = pos + total;
			while (mlen & 3)
				s->msg[mlen++] = 0;
			memcpy(s->msg + mlen, inl + pos, inl_len - pos);
			mlen += inl_len - pos;
		}
	} else {
		memcpy(s->msg, inl, inl_len);
		mlen = inl_len;
	}
	pthread_mutex_lock(&s->m);
	if (h->nwrite)
		s->st.write_chunk_calls++;
	if (h->has_reply)
		s->st.reply_chunk_calls++;
	pthread_mutex_unlock(&s->m);
	post_recv(s, idx);

	rrr_xdr_init(&a, s->msg, mlen, RRR_XDR_DECODE);
	if (rrr_rpc_decode_call(&a, &call))
		return;
	if (getenv("RSRV_DEBUG"))
		fprintf(stderr, "srv: xid %x proc %u nread %u nwrite %u reply %d\n", call.xid,
			call.proc, h->nread, h->nwrite, h->has_reply);
	rrr_xdr_init(&r, s->rep, BIG, RRR_XDR_ENCODE);
	if (h->nwrite)
		rrr_xdr_set_ddp(&r, &hook);
	rrr_rpc_encode_accepted(&r, call.xid, RRR_RPC_SUCCESS, 0, 0);
	switch (call.proc) {
	case RS_NULL:
		break;
	case RS_ECHO: {
		struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
		unsigned niov;
		uint32_t n;

		if (rrr_xdr_decode_payload(&a, BIG, &n, iov, &niov))
			return;
		rrr_xdr_encode_payload(&r, iov, niov, n);
		break;
	}
	case RS_FILL:
	case RS_BIG: {
		uint32_t n;
		struct iovec one;

		if (rrr_xdr_get_u32(&a, &n) || n > BIG / 2)
			return;
		for (uint32_t i = 0; i < n; i++)
			s->data[i] =
			    call.proc == RS_FILL ? (uint8_t)(i * 7 + 3) : (uint8_t)(i * 5 + 1);
		one.iov_base = s->data;
		one.iov_len = n;
		if (call.proc == RS_FILL) {
			rrr_xdr_encode_payload(&r, &one, 1, n);
			if (h->nwrite) {
				s->mem = h->write[0].segs[0];
				s->have_mem = true;
			}
		} else {
			rrr_xdr_put_opaque(&r, s->data, n);
		}
		break;
	}
	case RS_SUM: {
		struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
		unsigned niov;
		uint32_t n, tag, sum = 0;

		if (rrr_xdr_decode_payload(&a, BIG, &n, iov, &niov) || rrr_xdr_get_u32(&a, &tag))
			return;
		for (uint32_t i = 0; i < n; i++)
			sum += ((uint8_t *)iov[0].iov_base)[i];
		rrr_xdr_put_u32(&r, n);
		rrr_xdr_put_u32(&r, sum);
		rrr_xdr_put_u32(&r, tag);
		break;
	}
	case RS_HANGUP:
		teardown(s);
		return;
	case RS_SILENT:
		return;
	case RS_ERRCHUNK: {
		struct rrr_xdr e;

		rrr_xdr_init(&e, s->tx, RXSZ, RRR_XDR_ENCODE);
		rrr_rdma_err_encode(&e, h->xid, grant(s), RRR_ERR_CHUNK);
		if (s->inproc)
			s->inproc--;
		if (op(s, RRR_WR_SEND, s->tx, (uint32_t)rrr_xdr_pos(&e), 0, 0, 0))
			teardown(s);
		return;
	}
	case RS_GARBAGE:
		memset(&s->hr, 0, offsetof(struct rrr_rdma_hdr, read));
		s->hr.xid = h->xid;
		s->hr.vers = 2;
		s->hr.credits = grant(s);
		if (send_hdr_msg(s, &s->hr, s->rep, rrr_xdr_pos(&r), false, 0))
			teardown(s);
		return;
	case RS_HOLD:
		if (h->nwrite) {
			s->mem = h->write[0].segs[0];
			s->have_mem = true;
		}
		return;
	case RS_FOREIGN:
		if (reply(s, h, rrr_xdr_pos(&r), true, s->mem.handle))
			teardown(s);
		return;
	case RS_POKE:
		memset(s->data, 0xAA, 64);
		rc = s->have_mem
			 ? op(s, RRR_WR_RDMA_WRITE, s->data, 64, s->mem.offset, s->mem.handle, 0)
			 : -EIO;
		pthread_mutex_lock(&s->m);
		if (rc)
			s->st.poke_failed++;
		else
			s->st.poke_ok++;
		pthread_mutex_unlock(&s->m);
		if (rc) {
			teardown(s);
			return;
		}
		break;
	default:
		break;
	}
	if (rec.used && h->nwrite) {
		if (push_chunk(s, &h->write[0], (uint8_t *)rec.p, rec.len)) {
			teardown(s);
			return;
		}
	}
	if (reply(s, h, rrr_xdr_pos(&r), false, 0))
		teardown(s);
}

static void on_connect(struct rsrv *s, struct rrr_cm_event *ev)
{
	struct rrr_rdma_cm_pd cpd, mine;
	uint8_t pd[RRR_RDMA_PD_LEN];
	struct rrr_qp_init_attr qa = {0};
	struct rrr_conn_param cp = {0};
	struct rrr_cm_event e2;

	if (s->id) {
		rrr_cm_reject(ev->id, NULL, 0);
		rrr_cm_id_destroy(ev->id);
		return;
	}
	rrr_rdma_cm_pd_decode(ev->private_data, ev->private_data_len, &cpd);
	s->client_recv = cpd.recv_size;
	if (s->client_recv > RXSZ)
		s->client_recv = RXSZ;
	pthread_mutex_lock(&s->m);
	s->st.accepts++;
	s->st.client_inline_send = cpd.send_size;
	s->st.client_inline_recv = cpd.recv_size;
	s->st.client_remote_inv = cpd.remote_inv;
	pthread_mutex_unlock(&s->m);
	s->id = ev->id;
	qa.pd = s->pd;
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.max_send_wr = 256;
	qa.max_recv_wr = NRX;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.max_rd_atomic = 16;
	if (rrr_qp_create(s->id, &qa, &s->qp)) {
		rrr_cm_id_destroy(s->id);
		s->id = NULL;
		return;
	}
	for (uint32_t i = 0; i < NRX; i++)
		post_recv(s, i);
	mine.remote_inv = true;
	mine.send_size = s->o.inline_size ? s->o.inline_size : 4096;
	mine.recv_size = mine.send_size;
	if (!s->o.no_pdata) {
		cp.private_data = pd;
		cp.private_data_len = (uint32_t)rrr_rdma_cm_pd_encode(pd, &mine);
	} else {
		s->client_recv = RRR_RDMA_INLINE_DEFAULT;
	}
	if (s->client_recv > mine.send_size)
		s->client_recv = mine.send_size;
	cp.ird = 16;
	cp.ord = 16;
	if (rrr_cm_accept(s->id, &cp)) {
		teardown(s);
		return;
	}
	for (int i = 0; i < 100; i++) {
		if (rrr_cm_wait_event(s->cm, &e2, 50) == 0 && e2.id == s->id &&
		    e2.type == RRR_CM_EVENT_ESTABLISHED) {
			s->up = true;
			return;
		}
	}
	teardown(s);
}

static void *srv_main(void *arg)
{
	struct rsrv *s = arg;
	struct rrr_cm_event ev;
	struct rrr_wc wc[16];

	while (!atomic_load(&s->stop)) {
		while (rrr_cm_get_event(s->cm, &ev) == 0) {
			if (ev.type == RRR_CM_EVENT_CONNECT_REQUEST)
				on_connect(s, &ev);
			else if (ev.id == s->id && (ev.type == RRR_CM_EVENT_DISCONNECTED ||
						    ev.type == RRR_CM_EVENT_DEVICE_REMOVAL))
				teardown(s);
		}
		if (!s->id) {
			if (rrr_cm_wait_event(s->cm, &ev, 20) == 0 &&
			    ev.type == RRR_CM_EVENT_CONNECT_REQUEST)
				on_connect(s, &ev);
			continue;
		}
		{
			int n = rrr_cq_wait(s->cq, wc, 16, 10);

			for (int i = 0; i < n; i++) {
				if (wc[i].opcode == RRR_WC_RECV && wc[i].status == RRR_WC_SUCCESS)
					add_pend(s, &wc[i]);
				else if (wc[i].status != RRR_WC_SUCCESS)
					s->up = false;
			}
		}
		if (!s->up) {
			teardown(s);
			continue;
		}
		if (s->npend && (s->o.batch_ms <= 0 || now_ns() - s->first_pend_ns >=
							   (uint64_t)s->o.batch_ms * 1000000ull)) {
			uint32_t n = s->npend, ids[NRX], lens[NRX];

			memcpy(ids, s->pend, n * sizeof(ids[0]));
			memcpy(lens, s->pendlen, n * sizeof(lens[0]));
			s->npend = 0;
			for (uint32_t i = 0; i < n && s->id; i++) {
				s->inproc = n - i;
				process(s, ids[i], lens[i]);
			}
			s->inproc = 0;
		}
	}
	teardown(s);
	return NULL;
}

int rsrv_start(const struct rsrv_opts *o, struct rsrv **out, uint16_t *port)
{
	struct rsrv *s = calloc(1, sizeof(*s));
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage ss;
	size_t slab = (size_t)NRX * RXSZ + RXSZ + 3u * BIG;
	int rc;

	if (!s)
		return -ENOMEM;
	if (o)
		s->o = *o;
	pthread_mutex_init(&s->m, NULL);
	if (inet_pton(AF_INET, tenv_addr(), &sin.sin_addr) != 1)
		return -EINVAL;
	rc = rrr_device_open(tenv_provider(), tenv_provider_opts(), &s->dev);
	if (!rc)
		rc = rrr_pd_alloc(s->dev, &s->pd);
	if (!rc)
		rc = rrr_cq_create(s->dev, 1024, &s->cq);
	if (!rc)
		rc = rrr_cm_create(s->dev, &s->cm);
	if (!rc)
		rc = rrr_cm_id_create(s->cm, s, &s->lid);
	if (!rc)
		rc = rrr_cm_listen(s->lid, (struct sockaddr *)&sin, sizeof(sin), 8);
	if (!rc)
		rc = rrr_cm_id_local_addr(s->lid, &ss);
	if (rc)
		return rc;
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	s->slab = aligned_alloc(4096, slab);
	s->rx = s->slab;
	s->tx = s->rx + (size_t)NRX * RXSZ;
	s->data = s->tx + RXSZ;
	s->msg = s->data + BIG;
	s->rep = s->msg + BIG;
	rc = rrr_mr_reg(s->pd, s->slab, slab, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			&s->mr);
	if (rc)
		return rc;
	pthread_create(&s->th, NULL, srv_main, s);
	*out = s;
	return 0;
}

void rsrv_stop(struct rsrv *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	rrr_mr_dereg(s->mr);
	rrr_cm_id_destroy(s->lid);
	rrr_cm_destroy(s->cm);
	rrr_cq_destroy(s->cq);
	rrr_pd_free(s->pd);
	rrr_device_close(s->dev);
	free(s->slab);
	free(s);
}

void rsrv_stats(struct rsrv *s, struct rsrv_stats *st)
{
	pthread_mutex_lock(&s->m);
	*st = s->st;
	pthread_mutex_unlock(&s->m);
}
