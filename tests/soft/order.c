/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/order.c - work requests of one chain execute in order, and a
 * vanished peer never kills the sender with SIGPIPE.
 *
 * in_order_*: a REG_MR followed in the same rrr_qp_post_send() chain by an
 * RDMA READ whose sink SGE uses the MR's new key must work (an RNIC checks
 * local keys when the WR executes, after the REG_MR ran), and a LOCAL_INV
 * followed by a SEND from the invalidated registration must fail at
 * execution with a local protection error (the QP then errors out).
 *
 * dereg_before_start: a fenced RDMA READ whose sink key passed the
 * post-time check waits behind another READ while its sink registration is
 * deregistered; when it starts it must fail locally (a local protection
 * error), not send a Read Request for a sink that no longer exists (the
 * post-time pass is reused only while no registration has left VALID).
 *
 * bytes_before_the_arm_*: a message that lands in the socket after a
 * progress step found it empty and before rrr_cq_arm() (the poll after
 * the arm may then skip reading the socket: cq.c) still wakes a caller
 * sleeping on the CQ fd, and its RECV completes.
 *
 * sigpipe_*: the child vanishes (_exit) while the parent streams RDMA
 * WRITEs at it with SIGPIPE at its default disposition and unblocked; the
 * parent must see error/flush completions, and live.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/provider.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

/* Whether bytes from the peer wait in the QP's socket within @ms. */
static bool socket_readable(struct th_ep *e, int ms)
{
	struct pollfd pfd = {.fd = container_of(e->qp, struct soft_qp, base)->fd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 1;
}

#define SLEN (3 * 4096 + 123)

static int wait_wc(struct th_ep *e, uint64_t id, enum rrr_wc_opcode op, enum rrr_wc_status st)
{
	struct rrr_wc wc;
	int rc = th_wc(e, &wc, TH_TIMEOUT_MS);

	if (rc != 1) {
		fprintf(stderr, "no completion for wr %llu (rc %d)\n", (unsigned long long)id, rc);
		return -1;
	}
	if (wc.wr_id != id || wc.status != st || (st == RRR_WC_SUCCESS && wc.opcode != op)) {
		fprintf(stderr, "wc: id %llu status %d opcode %d, wanted id %llu status %d op %d\n",
			(unsigned long long)wc.wr_id, (int)wc.status, (int)wc.opcode,
			(unsigned long long)id, (int)st, (int)op);
		return -1;
	}
	return 0;
}

/* A signaled SEND of @sge. */
static struct rrr_send_wr send_wr(uint64_t id, struct rrr_sge *sge)
{
	return (struct rrr_send_wr){ .wr_id = id, .opcode = RRR_WR_SEND, .flags = RRR_SEND_SIGNALED,
				     .sg_list = sge, .num_sge = 1 };
}

/* A signaled RDMA READ of the peer's buffer @k into @sge. */
static struct rrr_send_wr read_wr(uint64_t id, struct rrr_sge *sge, const struct th_key *k)
{
	struct rrr_send_wr wr = send_wr(id, sge);

	wr.opcode = RRR_WR_RDMA_READ;
	wr.u.rdma.remote_addr = k->addr;
	wr.u.rdma.rkey = k->rkey;
	return wr;
}

/* ------------------------------------------------- REG_MR then READ in one chain */
static int io_server(struct th_ep *e, void *arg)
{
	uint8_t *sink = malloc(SLEN + 2 * 4096), *ref = malloc(SLEN);
	struct rrr_send_wr reg, rd, inv, snd;
	struct rrr_sge rsge, ssge;
	struct rrr_mr *fr;
	struct rrr_sg sg;
	struct th_key k;
	char done = 'd';

	(void)arg;
	TH_CHECK(sink && ref);
	memset(sink, 0x3c, SLEN + 2 * 4096);
	th_fill(ref, SLEN, 45);
	TH_CHECK(rrr_mr_alloc(e->pd, 8, &fr) == 0);
	sg = (struct rrr_sg){ sink + 4096, 0, SLEN };
	TH_CHECK(rrr_mr_map_sg(fr, &sg, 1, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE) == 1);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);

	/* REG_MR -> READ into the registration just made valid, one chain */
	reg = (struct rrr_send_wr){ .wr_id = 1, .opcode = RRR_WR_REG_MR, .flags = RRR_SEND_SIGNALED,
				    .u.reg = { .mr = fr,
					       .access = RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE } };
	rsge = (struct rrr_sge){ rrr_mr_iova(fr), SLEN, rrr_mr_lkey(fr) };
	rd = read_wr(2, &rsge, &k);
	reg.next = &rd;
	TH_CHECK(rrr_qp_post_send(e->qp, &reg, NULL) == 0);
	TH_CHECK(wait_wc(e, 1, RRR_WC_REG_MR, RRR_WC_SUCCESS) == 0);
	TH_CHECK(wait_wc(e, 2, RRR_WC_RDMA_READ, RRR_WC_SUCCESS) == 0);
	TH_CHECK(memcmp(sink + 4096, ref, SLEN) == 0);
	TH_CHECK(th_count_not(sink, 4096, 0x3c) == 0);
	TH_CHECK(th_count_not(sink + 4096 + SLEN, 4096, 0x3c) == 0);

	/* LOCAL_INV -> SEND from the invalidated registration: the SEND's key
	 * was valid when posted, but not when it runs */
	inv = (struct rrr_send_wr){ .wr_id = 3, .opcode = RRR_WR_LOCAL_INV, .flags = RRR_SEND_SIGNALED,
				    .u.inv.rkey = rrr_mr_rkey(fr) };
	ssge = (struct rrr_sge){ rrr_mr_iova(fr), 64, rrr_mr_lkey(fr) };
	snd = send_wr(4, &ssge);
	inv.next = &snd;
	TH_CHECK(rrr_qp_post_send(e->qp, &inv, NULL) == 0);
	TH_CHECK(wait_wc(e, 3, RRR_WC_LOCAL_INV, RRR_WC_SUCCESS) == 0);
	TH_CHECK(wait_wc(e, 4, RRR_WC_SEND, RRR_WC_LOC_PROT_ERR) == 0);
	TH_CHECK(th_oob_send(e->oob, &done, 1) == 0);
	rrr_qp_destroy(e->qp);
	e->qp = NULL;
	TH_CHECK(rrr_mr_recover(fr) == 0);
	TH_CHECK(rrr_mr_dereg(fr) == 0);
	free(sink);
	free(ref);
	return 0;
}

/* The READ source both pairs below use: registers SLEN bytes for remote
 * read, sends their key, and (after a "go" when src_opts.wait_go) polls so
 * the read responder works, until the server says it is done. */
struct src_opts {
	int seed;
	bool wait_go;
};

static int read_source(struct th_ep *e, void *arg)
{
	const struct src_opts *o = arg;
	uint8_t *src = malloc(SLEN);
	struct rrr_mr *mr;
	struct th_key k;
	char done;

	TH_CHECK(src);
	th_fill(src, SLEN, o->seed);
	TH_CHECK(rrr_mr_reg(e->pd, src, SLEN, RRR_ACCESS_REMOTE_READ, &mr) == 0);
	k = (struct th_key){ (uintptr_t)src, SLEN, rrr_mr_rkey(mr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	if (o->wait_go)
		TH_CHECK(th_oob_recv(e->oob, &done, 1, TH_TIMEOUT_MS) == 0);
	th_serve_until_done(e);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	free(src);
	return 0;
}

static const struct src_opts io_src = { .seed = 45 };

TH_PAIR_TEST(soft_order, reg_mr_then_read_in_one_chain, NULL, io_server, read_source,
	     (void *)&io_src)

TH_PAIR_TEST(soft_order, reg_mr_then_read_progress_thread, "progress_thread=1", io_server,
	     read_source, (void *)&io_src)

/* ------------------------------------------------- a sink deregistered before its READ starts */
static int dr_server(struct th_ep *e, void *arg)
{
	uint8_t *a = malloc(SLEN), *b = malloc(SLEN);
	struct rrr_send_wr rd1, rd2;
	struct rrr_sge s1, s2;
	struct rrr_mr *ma, *mb;
	struct th_key k;
	char go = 'g';

	(void)arg;
	TH_CHECK(a && b);
	TH_CHECK(rrr_mr_reg(e->pd, a, SLEN, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			    &ma) == 0);
	TH_CHECK(rrr_mr_reg(e->pd, b, SLEN, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			    &mb) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	/* READ 1 goes out at once; READ 2 is fenced behind it, its sink key
	 * valid now: it passes the post-time check */
	s1 = (struct rrr_sge){ (uintptr_t)a, SLEN, rrr_mr_lkey(ma) };
	s2 = (struct rrr_sge){ (uintptr_t)b, SLEN, rrr_mr_lkey(mb) };
	rd1 = read_wr(1, &s1, &k);
	rd2 = read_wr(2, &s2, &k);
	rd2.flags |= RRR_SEND_FENCE;
	rd1.next = &rd2;
	TH_CHECK(rrr_qp_post_send(e->qp, &rd1, NULL) == 0);
	/* the peer answers only when it polls, after "go": READ 2 has not
	 * started when its sink goes away */
	TH_CHECK(rrr_mr_dereg(mb) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(wait_wc(e, 1, RRR_WC_RDMA_READ, RRR_WC_SUCCESS) == 0);
	TH_CHECK(wait_wc(e, 2, RRR_WC_RDMA_READ, RRR_WC_LOC_PROT_ERR) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_end(e, ma) == 0);
	free(a);
	free(b);
	return 0;
}

/* the peer answers only after "go"; a Read Request for READ 2 would be
 * answered too, and its placement refused at the server */
static const struct src_opts dr_src = { .seed = 7, .wait_go = true };

TH_PAIR_TEST(soft_order, sink_deregistered_before_its_read_starts, NULL, dr_server, read_source,
	     (void *)&dr_src)

/* ------------------------------------------------- bytes that land before the arm */
static int ba_server(struct th_ep *e, void *arg)
{
	uint8_t buf[64];
	struct rrr_mr *mr;
	struct rrr_sge sge;
	struct rrr_recv_wr rw;
	struct rrr_wc wc;
	struct pollfd pfd;
	char go = 'g', sent;
	int n;

	(void)arg;
	TH_CHECK(rrr_mr_reg(e->pd, buf, sizeof(buf), RRR_ACCESS_LOCAL_WRITE, &mr) == 0);
	sge = (struct rrr_sge){ (uintptr_t)buf, sizeof(buf), rrr_mr_lkey(mr) };
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 11;
	rw.sg_list = &sge;
	rw.num_sge = 1;
	TH_CHECK(rrr_qp_post_recv(e->qp, &rw, NULL) == 0);
	/* a progress step that finds the socket empty */
	TH_CHECK(rrr_cq_poll(e->cq, &wc, 1) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	/* the peer's SEND is in our socket (it saw its completion) */
	TH_CHECK(th_oob_recv(e->oob, &sent, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(socket_readable(e, TH_TIMEOUT_MS));
	TH_CHECK(rrr_cq_arm(e->cq) == 0);
	n = rrr_cq_poll(e->cq, &wc, 1);
	TH_CHECK(n >= 0);
	if (n == 0) {
		/* what a sleeper does: the fd must be readable at once */
		pfd = (struct pollfd){ .fd = rrr_cq_fd(e->cq), .events = POLLIN };
		TH_CHECK(poll(&pfd, 1, 2000) == 1);
		TH_CHECK(rrr_cq_ack_event(e->cq) == 0);
		n = rrr_cq_poll(e->cq, &wc, 1);
	}
	TH_CHECK(n == 1 && wc.wr_id == 11 && wc.status == RRR_WC_SUCCESS &&
		 wc.opcode == RRR_WC_RECV && wc.byte_len == 32);
	TH_CHECK(th_check(buf, 32, 5) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	return th_end(e, mr);
}

static int ba_client(struct th_ep *e, void *arg)
{
	uint8_t buf[32];
	struct rrr_mr *mr;
	struct rrr_sge sge;
	struct rrr_send_wr wr;
	struct rrr_wc wc;
	char go;

	(void)arg;
	th_fill(buf, sizeof(buf), 5);
	TH_CHECK(rrr_mr_reg(e->pd, buf, sizeof(buf), 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	sge = (struct rrr_sge){ (uintptr_t)buf, sizeof(buf), rrr_mr_lkey(mr) };
	wr = send_wr(12, &sge);
	TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
	TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1 && wc.wr_id == 12 &&
		 wc.status == RRR_WC_SUCCESS);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(rrr_mr_dereg(mr) == 0);
	return 0;
}

TH_PAIR_TEST(soft_order, bytes_before_the_arm_wake_the_sleeper, NULL, ba_server, ba_client, NULL)

/* ------------------------------------------------- a vanished peer: no SIGPIPE */
#define PLEN (1024 * 1024)

static int sp_server(struct th_ep *e, void *arg)
{
	uint8_t *src = malloc(PLEN);
	struct rrr_sge sge;
	struct rrr_send_wr wr;
	struct rrr_mr *mr;
	struct th_key k;
	sigset_t pipe;
	uint64_t posted = 0, done = 0;
	bool failed = false;
	char go = 'g';

	(void)arg;
	/* the default disposition, not blocked: a SIGPIPE would kill us */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	TH_CHECK(sigprocmask(SIG_UNBLOCK, &pipe, NULL) == 0);
	TH_CHECK(src);
	memset(src, 0xa5, PLEN);
	TH_CHECK(rrr_mr_reg(e->pd, src, PLEN, 0, &mr) == 0);
	TH_CHECK(th_oob_recv(e->oob, &k, sizeof(k), TH_TIMEOUT_MS) == 0);
	TH_CHECK(th_oob_send(e->oob, &go, 1) == 0); /* the child now vanishes */
	sge = (struct rrr_sge){ (uintptr_t)src, PLEN, rrr_mr_lkey(mr) };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_RDMA_WRITE;
	wr.flags = RRR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.u.rdma.remote_addr = k.addr;
	wr.u.rdma.rkey = k.rkey;
	/* stream until a WR fails; at most ~4 s or 4096 WRITEs */
	for (int round = 0; !failed && round < 400 && posted < 4096; round++) {
		struct rrr_wc wc;

		while (posted - done < 8) {
			wr.wr_id = ++posted;
			TH_CHECK(rrr_qp_post_send(e->qp, &wr, NULL) == 0);
		}
		while (th_wc(e, &wc, 10) == 1) {
			done++;
			if (wc.status != RRR_WC_SUCCESS)
				failed = true;
		}
	}
	TH_CHECK(failed);
	/* everything outstanding completes (flushed), nothing hangs */
	while (done < posted) {
		struct rrr_wc wc;

		TH_CHECK(th_wc(e, &wc, TH_TIMEOUT_MS) == 1);
		TH_CHECK(wc.status != RRR_WC_SUCCESS);
		done++;
	}
	TH_CHECK(th_end(e, mr) == 0);
	free(src);
	return 0;
}

static int sp_client(struct th_ep *e, void *arg)
{
	static uint8_t sink[PLEN];
	struct rrr_mr *mr;
	struct th_key k;
	char go;

	(void)arg;
	TH_CHECK(rrr_mr_reg(e->pd, sink, PLEN, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
			    &mr) == 0);
	k = (struct th_key){ (uintptr_t)sink, PLEN, rrr_mr_rkey(mr), 0 };
	TH_CHECK(th_oob_send(e->oob, &k, sizeof(k)) == 0);
	TH_CHECK(th_oob_recv(e->oob, &go, 1, TH_TIMEOUT_MS) == 0);
	TH_CHECK(socket_readable(e, TH_TIMEOUT_MS)); /* the parent's stream started */
	_exit(0); /* vanish: no disconnect, unread data -> RST */
}

TH_PAIR_TEST(soft_order, sigpipe_peer_vanishes_during_writes, NULL, sp_server, sp_client, NULL)

TH_PAIR_TEST(soft_order, sigpipe_peer_vanishes_progress_thread, "progress_thread=1", sp_server,
	     sp_client, NULL)
