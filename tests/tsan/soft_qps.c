/* SPDX-License-Identifier: MIT */
/*
 * tests/tsan/soft_qps.c - the soft provider's progress thread with several
 * QPs, each driven by its own thread, in one process so ThreadSanitizer sees
 * the posting threads, the device progress threads and the CQ pollers.
 *
 * Normal operation: two devices opened with progress_thread=1 (a "server"
 * and a "client" side, CRC on); NQ connections between them over loopback,
 * each with its own CQs. Per connection a client thread and a server thread
 * run NITER rounds of:
 *   client: RDMA WRITE pattern(k) into the server's window, then SEND {k}
 *   server: on the RECV, check the window holds pattern(k) (the progress
 *           thread placed it), overwrite it with pattern(~k) by CPU, SEND {k}
 *   client: on the reply, RDMA READ the window and check pattern(~k)
 * so every handover (placement -> completion -> CPU, CPU -> post -> source
 * read by the progress thread) crosses threads with data that is checked.
 *
 * Failure: a wrong byte, a bad completion or a timeout prints where and
 * exits 1; setup failures exit 2; TSan reports exit 66 under `make tsan`.
 *
 * Usage: soft_qps [rounds per connection] (default 1000).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/provider.h>

#define NQ 3
#define WIN 32768
#define NRECV 4
#define WAIT_MS 20000

struct side {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cm *cm;
};

struct conn {
	int id, iters;
	struct rrr_cm_id *sid, *cid;
	struct rrr_cq *scq, *ccq;
	struct rrr_qp *sqp, *cqp;
	uint8_t *win;              /* server window (remote write + read) */
	uint8_t *src, *dst;        /* client buffers */
	uint32_t sbox[NRECV + 1], cbox[NRECV + 1]; /* receive slots, then the send slot */
	struct rrr_mr *win_mr, *s_mr, *c_mr, *src_mr, *dst_mr;
	uint16_t port;
};

static struct side srv, cli;
static struct rrr_cm_id *listener;
static atomic_int failures;
static atomic_long rounds_ok; /* client rounds whose READ came back right */

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "soft_qps: " __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                               \
		atomic_fetch_add(&failures, 1);                                                    \
	} while (0)

static uint8_t pat(uint32_t k, uint32_t i)
{
	return (uint8_t)(i * 11 + k * 7 + (i >> 8));
}

static int side_open(struct side *s)
{
	if (rrr_device_open("soft", "progress_thread=1,crc=1", &s->dev) ||
	    rrr_pd_alloc(s->dev, &s->pd) || rrr_cm_create(s->dev, &s->cm))
		return -1;
	return 0;
}

static int make_qp(struct rrr_pd *pd, struct rrr_cm_id *id, struct rrr_cq *cq, struct rrr_qp **qp)
{
	struct rrr_qp_init_attr a = {
		.pd = pd, .send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64,
		.max_send_sge = 2, .max_recv_sge = 2, .max_rd_atomic = 4,
	};
	return rrr_qp_create(id, &a, qp);
}

static int cm_wait(struct rrr_cm *cm, enum rrr_cm_event_type type, struct rrr_cm_event *ev)
{
	for (;;) {
		int rc = rrr_cm_wait_event(cm, ev, WAIT_MS);

		if (rc)
			return rc;
		if (ev->type == type)
			return 0;
		if (ev->type == RRR_CM_EVENT_REJECTED || ev->type == RRR_CM_EVENT_UNREACHABLE)
			return -ECONNREFUSED;
	}
}

static void *connector(void *arg)
{
	struct conn *c = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rrr_conn_param p = { .ird = 4, .ord = 4 };
	struct rrr_cm_event ev;

	if (rrr_cm_id_create(cli.cm, c, &c->cid) ||
	    rrr_cm_resolve(c->cid, (struct sockaddr *)&sin, sizeof(sin), 2000) ||
	    cm_wait(cli.cm, RRR_CM_EVENT_RESOLVED, &ev) ||
	    make_qp(cli.pd, c->cid, c->ccq, &c->cqp) || rrr_cm_connect(c->cid, &p) ||
	    cm_wait(cli.cm, RRR_CM_EVENT_ESTABLISHED, &ev))
		return (void *)1;
	return NULL;
}

static int conn_setup(struct conn *c)
{
	struct rrr_conn_param p = { .ird = 4, .ord = 4 };
	struct rrr_cm_event ev;
	pthread_t th;
	void *rv = (void *)1;
	int rc;

	c->win = calloc(1, WIN);
	c->src = calloc(1, WIN);
	c->dst = calloc(1, WIN);
	if (!c->win || !c->src || !c->dst || rrr_cq_create(srv.dev, 256, &c->scq) ||
	    rrr_cq_create(cli.dev, 256, &c->ccq) ||
	    rrr_mr_reg(srv.pd, c->win, WIN,
		       RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ,
		       &c->win_mr) ||
	    rrr_mr_reg(srv.pd, c->sbox, sizeof(c->sbox), RRR_ACCESS_LOCAL_WRITE, &c->s_mr) ||
	    rrr_mr_reg(cli.pd, c->cbox, sizeof(c->cbox), RRR_ACCESS_LOCAL_WRITE, &c->c_mr) ||
	    rrr_mr_reg(cli.pd, c->src, WIN, RRR_ACCESS_LOCAL_WRITE, &c->src_mr) ||
	    /* an iWARP READ sink is placed by tagged DDP: it needs remote write */
	    rrr_mr_reg(cli.pd, c->dst, WIN, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
		       &c->dst_mr))
		return -1;
	if (pthread_create(&th, NULL, connector, c))
		return -1;
	rc = cm_wait(srv.cm, RRR_CM_EVENT_CONNECT_REQUEST, &ev);
	if (!rc) {
		c->sid = ev.id;
		rc = make_qp(srv.pd, c->sid, c->scq, &c->sqp);
	}
	if (!rc)
		rc = rrr_cm_accept(c->sid, &p);
	if (!rc)
		rc = cm_wait(srv.cm, RRR_CM_EVENT_ESTABLISHED, &ev);
	pthread_join(th, &rv);
	return rc || rv ? -1 : 0;
}

static int post_recv(struct rrr_qp *qp, struct rrr_mr *mr, uint32_t *box, int slot)
{
	struct rrr_sge sge = { (uintptr_t)&box[slot], sizeof(uint32_t), rrr_mr_lkey(mr) };
	struct rrr_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 };
	struct rrr_recv_wr *bad;

	return rrr_qp_post_recv(qp, &wr, &bad);
}

/* Wait for one completion of @op; every other completion must be a success. */
static int wait_wc(struct rrr_cq *cq, enum rrr_wc_opcode op, struct rrr_wc *wc, const char *who)
{
	for (int spins = 0; spins < WAIT_MS / 10 && !atomic_load(&failures); spins++) {
		int n = rrr_cq_wait(cq, wc, 1, 10);

		if (n < 0) {
			FAIL("%s: cq_wait %d", who, n);
			return -1;
		}
		if (n == 0)
			continue;
		if (wc->status != RRR_WC_SUCCESS) {
			FAIL("%s: completion %s (opcode %d)", who, rrr_wc_status_str(wc->status),
			     wc->opcode);
			return -1;
		}
		if (wc->opcode == op)
			return 0;
	}
	if (!atomic_load(&failures))
		FAIL("%s: timed out waiting for opcode %d", who, op);
	return -1;
}

static int post_one(struct rrr_qp *qp, enum rrr_wr_opcode op, struct rrr_sge *sge, uint64_t raddr,
		    uint32_t rkey, unsigned flags)
{
	struct rrr_send_wr wr = { .opcode = op, .flags = flags, .sg_list = sge, .num_sge = 1 };
	struct rrr_send_wr *bad;

	int rc;

	wr.u.rdma.remote_addr = raddr;
	wr.u.rdma.rkey = rkey;
	rc = rrr_qp_post_send(qp, &wr, &bad);
	if (rc)
		FAIL("post_send opcode %d: %d (%s)", op, rc, rrr_last_error() ? rrr_last_error() : "");
	return rc;
}

static void *server_main(void *arg)
{
	struct conn *c = arg;
	struct rrr_wc wc;
	char who[32];

	snprintf(who, sizeof(who), "server %d", c->id);
	for (int k = 0; k < c->iters && !atomic_load(&failures); k++) {
		uint32_t len, got;
		int slot;

		if (wait_wc(c->scq, RRR_WC_RECV, &wc, who))
			break;
		slot = (int)wc.wr_id;
		got = c->sbox[slot];
		if (got != (uint32_t)k) {
			FAIL("%s: message %u, want %d", who, got, k);
			break;
		}
		len = 1024 + ((uint32_t)k * 4099) % (WIN - 1024);
		for (uint32_t i = 0; i < len; i++)
			if (c->win[i] != pat((uint32_t)k, i)) {
				FAIL("%s: round %d: window byte %u is %#x, want %#x", who, k, i,
				     c->win[i], pat((uint32_t)k, i));
				return NULL;
			}
		for (uint32_t i = 0; i < len; i++)
			c->win[i] = pat(~(uint32_t)k, i);
		if (post_recv(c->sqp, c->s_mr, c->sbox, slot)) {
			FAIL("%s: post_recv", who);
			break;
		}
		c->sbox[NRECV] = (uint32_t)k;
		struct rrr_sge sge = { (uintptr_t)&c->sbox[NRECV], sizeof(uint32_t),
				       rrr_mr_lkey(c->s_mr) };

		if (post_one(c->sqp, RRR_WR_SEND, &sge, 0, 0, RRR_SEND_SIGNALED) ||
		    wait_wc(c->scq, RRR_WC_SEND, &wc, who))
			break;
	}
	return NULL;
}

static void *client_main(void *arg)
{
	struct conn *c = arg;
	uint32_t rkey = rrr_mr_rkey(c->win_mr);
	uint64_t raddr = (uintptr_t)c->win;
	struct rrr_wc wc;
	char who[32];

	snprintf(who, sizeof(who), "client %d", c->id);
	for (int k = 0; k < c->iters && !atomic_load(&failures); k++) {
		uint32_t len = 1024 + ((uint32_t)k * 4099) % (WIN - 1024);
		struct rrr_sge w = { (uintptr_t)c->src, len, rrr_mr_lkey(c->src_mr) };
		struct rrr_sge s = { (uintptr_t)&c->cbox[NRECV], sizeof(uint32_t),
				     rrr_mr_lkey(c->c_mr) };
		struct rrr_sge r = { (uintptr_t)c->dst, len, rrr_mr_lkey(c->dst_mr) };

		for (uint32_t i = 0; i < len; i++)
			c->src[i] = pat((uint32_t)k, i);
		c->cbox[NRECV] = (uint32_t)k;
		if (post_one(c->cqp, RRR_WR_RDMA_WRITE, &w, raddr, rkey, 0) ||
		    post_one(c->cqp, RRR_WR_SEND, &s, 0, 0, RRR_SEND_SIGNALED) ||
		    wait_wc(c->ccq, RRR_WC_SEND, &wc, who) || wait_wc(c->ccq, RRR_WC_RECV, &wc, who))
			break;
		if (c->cbox[wc.wr_id] != (uint32_t)k) {
			FAIL("%s: reply %u, want %d", who, c->cbox[wc.wr_id], k);
			break;
		}
		if (post_recv(c->cqp, c->c_mr, c->cbox, (int)wc.wr_id)) {
			FAIL("%s: post_recv", who);
			break;
		}
		memset(c->dst, 0, len);
		if (post_one(c->cqp, RRR_WR_RDMA_READ, &r, raddr, rkey, RRR_SEND_SIGNALED) ||
		    wait_wc(c->ccq, RRR_WC_RDMA_READ, &wc, who))
			break;
		for (uint32_t i = 0; i < len; i++)
			if (c->dst[i] != pat(~(uint32_t)k, i)) {
				FAIL("%s: round %d: read byte %u is %#x, want %#x", who, k, i,
				     c->dst[i], pat(~(uint32_t)k, i));
				return NULL;
			}
		atomic_fetch_add(&rounds_ok, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 1000;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;
	static struct conn conns[NQ];
	pthread_t th[2 * NQ];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (side_open(&srv) || side_open(&cli) || rrr_cm_id_create(srv.cm, NULL, &listener) ||
	    rrr_cm_listen(listener, (struct sockaddr *)&sin, sizeof(sin), 8) ||
	    rrr_cm_id_local_addr(listener, &ss))
		goto setup;
	for (int i = 0; i < NQ; i++) {
		struct conn *c = &conns[i];

		c->id = i;
		c->iters = iters;
		c->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		if (conn_setup(c))
			goto setup;
		for (int s = 0; s < NRECV; s++)
			if (post_recv(c->sqp, c->s_mr, c->sbox, s) ||
			    post_recv(c->cqp, c->c_mr, c->cbox, s))
				goto setup;
	}
	for (int i = 0; i < NQ; i++) {
		pthread_create(&th[2 * i], NULL, server_main, &conns[i]);
		pthread_create(&th[2 * i + 1], NULL, client_main, &conns[i]);
	}
	for (int i = 0; i < 2 * NQ; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NQ; i++) {
		struct conn *c = &conns[i];

		rrr_qp_destroy(c->cqp);
		rrr_cm_id_destroy(c->cid);
		rrr_qp_destroy(c->sqp);
		rrr_cm_id_destroy(c->sid);
		rrr_mr_dereg(c->win_mr);
		rrr_mr_dereg(c->s_mr);
		rrr_mr_dereg(c->c_mr);
		rrr_mr_dereg(c->src_mr);
		rrr_mr_dereg(c->dst_mr);
		rrr_cq_destroy(c->scq);
		rrr_cq_destroy(c->ccq);
		free(c->win);
		free(c->src);
		free(c->dst);
	}
	rrr_cm_id_destroy(listener);
	rrr_cm_destroy(srv.cm);
	rrr_cm_destroy(cli.cm);
	rrr_pd_free(srv.pd);
	rrr_pd_free(cli.pd);
	rrr_device_close(srv.dev);
	rrr_device_close(cli.dev);
	if (!atomic_load(&failures) && atomic_load(&rounds_ok) != (long)NQ * iters)
		FAIL("%ld rounds completed, want %d", atomic_load(&rounds_ok), NQ * iters);
	printf("soft_qps: %d connections x %d rounds (write, send, reply, read), %ld verified: %s\n",
	       NQ, iters, atomic_load(&rounds_ok), atomic_load(&failures) ? "FAILED" : "ok");
	return atomic_load(&failures) ? 1 : 0;
setup:
	fprintf(stderr, "soft_qps: setup failed: %s\n", rrr_last_error() ? rrr_last_error() : "");
	return 2;
}
