/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_soft_rx.c - libFuzzer harness for the soft provider's
 * receive engine (transport/soft/rx.c) as a hostile peer sees it: the
 * input is the peer's byte stream after connection setup.
 *
 * Once per process: a soft device, one PD, one CQ, and an arena of memory
 * holding every buffer the victim exposes, filled with a position-dependent
 * guard pattern:
 *
 *   T   fast-reg MR, REMOTE_WRITE|REMOTE_READ, 87 chunks with gaps (chunks
 *       of 3, 13, 16 bytes, 80 chunks of 8 bytes: more than one readv's
 *       SOFT_PAY_IOV iovecs); iova fixed at T_IOVA
 *   R   fast-reg MR, LOCAL_WRITE only, 75 chunks with gaps; the posted
 *       receives' SGEs are addresses in its virtual range and cross gaps
 *   RO  long-lived, REMOTE_READ only          WL  long-lived, REMOTE_WRITE|READ
 *   PD2 long-lived in another PD, REMOTE_WRITE
 *
 * STag keys and the iovas of T, RO, WL and PD2 are fixed (the harness sets
 * them through the internal structs), so the seed corpus can name them.
 * The gaps, PD2 and the parts of R that no receive covers are poisoned
 * for ASan (any access by the engine, a readv or a memcpy, aborts with its
 * stack); they and RO hold the guard pattern, checked after each input.
 *
 * Per input: a fresh QP whose socket is one end of an AF_UNIX stream pair
 * (the harness is the peer at the other end), four receives posted on R,
 * one RDMA READ into T outstanding (so Read Responses have a sink), T and R
 * re-registered if the last input invalidated them. Input byte 0: bit 0 =
 * CRC on; bytes 0-1 seed the sizes of the pieces the rest is written in
 * (1..8, 9..64, 65..2048 bytes or all that is left), and after each piece
 * the engine is driven (rrr_cq_poll) until it read everything or the QP
 * died, the peer draining what the victim sends. Checks (abort): a guard
 * byte changed; a receive completed with more bytes than it had; T changed
 * after it was invalidated; the engine stopped reading while the QP is up
 * and bytes wait (a stuck stream).
 *
 * FUZZ_SOFT_RX_SEEDS=dir writes the seed corpus (valid FPDU sequences with
 * correct CRCs) into dir and exits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sanitizer/asan_interface.h>

#include <rrr/provider.h>

#include "transport/soft/soft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define ARENA (64 * 1024)
#define KEY 0x5c
#define T_IOVA 0x100000ull
#define RO_IOVA 0x300000ull
#define WL_IOVA 0x400000ull
#define PD2_IOVA 0x500000ull
#define STAG_T (1u << 8 | KEY)
#define STAG_R (2u << 8 | KEY)
#define STAG_RO (3u << 8 | KEY)
#define STAG_WL (4u << 8 | KEY)
#define STAG_PD2 (5u << 8 | KEY)
#define READ_WR 99
#define READ_SINK_OFF 50u   /* our RDMA READ: 300 bytes into T at T_IOVA + 50 */
#define READ_LEN 300u

struct piece {
	uint32_t off, len;
};

/* T's chunks (arena offsets): starts are 8-aligned so ASan can poison gaps */
static struct piece t_ch[96];
static unsigned t_n;
static struct piece r_ch[96];
static unsigned r_n;
#define RO_OFF 0x7000u
#define RO_LEN 1024u
#define WL_OFF 0x8000u
#define WL_LEN 2048u
#define PD2_OFF 0x9000u
#define PD2_LEN 512u

/* receives: (virtual offset in R, length) per SGE */
static const struct {
	uint64_t id;
	unsigned nsge;
	struct piece sge[2];
} recvs[] = {
	{ 1, 1, { { 0, 100 } } },
	{ 2, 2, { { 100, 200 }, { 570, 630 } } },
	{ 3, 1, { { 1200, 4000 } } },
	{ 4, 1, { { 10, 10 } } },
};

static struct rrr_device *dev;
static struct rrr_pd *pd, *pd2;
static struct rrr_cq *cq;
static struct rrr_cm *cm;
static struct rrr_mr *mr_t, *mr_r, *mr_ro, *mr_wl, *mr_pd2;
static uint8_t *arena, *ref; /* ref: the guard pattern */
static uint8_t *allowed; /* 1: the engine may write this arena byte */
static uint8_t t_snap[ARENA];
static bool verbose; /* FUZZ_SOFT_RX_VERBOSE: completions and Terminates on stderr */

static void die(const char *why)
{
	fprintf(stderr, "fuzz_soft_rx: %s\n", why);
	abort();
}

static uint8_t guard(size_t i)
{
	return (uint8_t)((i * 131u + 7u) ^ (i >> 8) ^ 0x5a);
}

static struct soft_mr *smr(struct rrr_mr *m)
{
	return container_of(m, struct soft_mr, base);
}

/* Fixed key (and iova unless 0) so that seeds can name the registration. */
static void force(struct rrr_mr *m, uint64_t iova)
{
	struct soft_mr *s = smr(m);

	s->key = KEY;
	s->base.lkey = s->base.rkey = s->index << 8 | KEY;
	if (iova) {
		s->iova = iova;
		s->base.iova = iova;
	}
}

static void map_fast(struct rrr_mr *m, const struct piece *ch, unsigned n, unsigned access,
		     uint64_t iova)
{
	struct rrr_sg sg[96];

	for (unsigned i = 0; i < n; i++)
		sg[i] = (struct rrr_sg){ arena + ch[i].off, 0, ch[i].len };
	if (rrr_mr_map_sg(m, sg, (int)n, access) != (int)n)
		die("map_sg");
	force(m, iova);
}

static void layout(void)
{
	unsigned off;

	/* T: 16, 16, 13, 1000, 3, 4096 bytes with gaps, 80 x 8 at stride 16, 2000 */
	static const struct piece t0[] = { { 0x100, 16 }, { 0x120, 16 }, { 0x200, 13 },
					   { 0x300, 1000 }, { 0x800, 3 }, { 0x900, 4096 } };
	memcpy(t_ch, t0, sizeof(t0));
	t_n = 6;
	for (off = 0x2000; t_n < 86; off += 16)
		t_ch[t_n++] = (struct piece){ off, 8 };
	t_ch[t_n++] = (struct piece){ 0x2800, 2000 };
	/* R: 24, 40, 512, 7, 70 x 8 at stride 16, 4096 */
	static const struct piece r0[] = { { 0x4000, 24 }, { 0x4040, 40 }, { 0x4100, 512 },
					   { 0x4400, 7 } };
	memcpy(r_ch, r0, sizeof(r0));
	r_n = 4;
	for (off = 0x4500; r_n < 74; off += 16)
		r_ch[r_n++] = (struct piece){ off, 8 };
	r_ch[r_n++] = (struct piece){ 0x5000, 4096 };

	allowed = calloc(ARENA, 1);
	if (!allowed)
		die("calloc");
	for (unsigned i = 0; i < t_n; i++)
		memset(allowed + t_ch[i].off, 1, t_ch[i].len);
	memset(allowed + WL_OFF, 1, WL_LEN);
	/* R: only the bytes some receive covers (virtual offset -> chunk) */
	for (size_t k = 0; k < sizeof(recvs) / sizeof(recvs[0]); k++) {
		for (unsigned s = 0; s < recvs[k].nsge; s++) {
			uint64_t v = recvs[k].sge[s].off, left = recvs[k].sge[s].len;

			for (unsigned i = 0; i < r_n && left; i++) {
				if (v >= r_ch[i].len) {
					v -= r_ch[i].len;
					continue;
				}
				uint64_t t = r_ch[i].len - v < left ? r_ch[i].len - v : left;

				memset(allowed + r_ch[i].off + v, 1, t);
				left -= t;
				v = 0;
			}
		}
	}
}

/* Runs of bytes the engine must not touch, poisoned for ASan (RO is read
 * by Read Responses: it is guarded by the pattern only). */
static struct piece runs[256];
static unsigned nruns;

static void find_runs(void)
{
	size_t i = 0;

	while (i < ARENA) {
		size_t j = i;

		while (j < ARENA && !allowed[j] && !(j >= RO_OFF && j < RO_OFF + RO_LEN))
			j++;
		if (j > i) {
			if (nruns == sizeof(runs) / sizeof(runs[0]))
				die("too many guard runs");
			runs[nruns++] = (struct piece){ (uint32_t)i, (uint32_t)(j - i) };
		}
		i = j + 1;
	}
}

static void poison(bool on)
{
	if (!on) {
		ASAN_UNPOISON_MEMORY_REGION(arena, ARENA);
		return;
	}
	for (unsigned i = 0; i < nruns; i++)
		ASAN_POISON_MEMORY_REGION(arena + runs[i].off, runs[i].len);
}

static void check_guards(void)
{
	poison(false);
	for (unsigned i = 0; i <= nruns; i++) {
		struct piece p = i < nruns ? runs[i] : (struct piece){ RO_OFF, RO_LEN };

		if (memcmp(arena + p.off, ref + p.off, p.len) == 0)
			continue;
		for (size_t j = p.off; j < p.off + p.len; j++)
			if (arena[j] != ref[j]) {
				fprintf(stderr, "fuzz_soft_rx: guard byte at arena+0x%zx changed\n", j);
				abort();
			}
	}
	poison(true);
}

static void post_reg(struct rrr_qp *qp, struct rrr_mr *m, unsigned access)
{
	struct rrr_send_wr wr = { .wr_id = 7, .opcode = RRR_WR_REG_MR, .flags = RRR_SEND_SIGNALED };
	struct rrr_wc wc;
	int n = 0;

	wr.u.reg.mr = m;
	wr.u.reg.access = access;
	if (rrr_qp_post_send(qp, &wr, NULL))
		die("post REG_MR");
	for (int i = 0; i < 100 && n == 0; i++)
		n = rrr_cq_poll(cq, &wc, 1);
	if (n != 1 || wc.status != RRR_WC_SUCCESS || wc.wr_id != 7)
		die("REG_MR did not complete");
}

static void setup_once(void)
{
	if (rrr_device_open("soft", NULL, &dev) || rrr_pd_alloc(dev, &pd) ||
	    rrr_pd_alloc(dev, &pd2) || rrr_cq_create(dev, 4096, &cq) || rrr_cm_create(dev, &cm))
		die("device setup");
	arena = aligned_alloc(4096, ARENA);
	ref = malloc(ARENA);
	if (!arena || !ref)
		die("aligned_alloc");
	for (size_t i = 0; i < ARENA; i++)
		arena[i] = ref[i] = guard(i);
	layout();
	if (rrr_mr_alloc(pd, 96, &mr_t) || rrr_mr_alloc(pd, 96, &mr_r) ||
	    rrr_mr_reg(pd, arena + RO_OFF, RO_LEN, RRR_ACCESS_REMOTE_READ, &mr_ro) ||
	    rrr_mr_reg(pd, arena + WL_OFF, WL_LEN, RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ,
		       &mr_wl) ||
	    rrr_mr_reg(pd2, arena + PD2_OFF, PD2_LEN, RRR_ACCESS_REMOTE_WRITE, &mr_pd2))
		die("registrations");
	force(mr_ro, RO_IOVA);
	force(mr_wl, WL_IOVA);
	force(mr_pd2, PD2_IOVA);
	if (smr(mr_t)->index != 1 || smr(mr_r)->index != 2 || rrr_mr_rkey(mr_ro) != STAG_RO ||
	    rrr_mr_rkey(mr_wl) != STAG_WL || rrr_mr_rkey(mr_pd2) != STAG_PD2)
		die("STag indices are not the ones the seeds name");
	find_runs();
	poison(true);
}

struct conn {
	struct rrr_cm_id *id;
	struct rrr_qp *qp;
	int fd, peer;
	bool t_dead; /* T was seen invalidated: t_snap holds its bytes */
};

static bool alive(struct conn *c)
{
	int st = 0;

	rrr__soft_qp_info(c->qp, NULL, NULL, &st);
	return st == SOFT_QP_RTS;
}

static void conn_open(struct conn *c, bool crc)
{
	struct rrr_qp_init_attr a = {
		.pd = pd, .send_cq = cq, .recv_cq = cq,
		.max_send_wr = 64, .max_recv_wr = 16,
		.max_send_sge = SOFT_MAX_SGE, .max_recv_sge = SOFT_MAX_SGE,
		.max_rd_atomic = 8,
	};
	int sv[2];

	memset(c, 0, sizeof(*c));
	if (rrr_cm_id_create(cm, NULL, &c->id) || rrr_qp_create(c->id, &a, &c->qp))
		die("qp");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		die("socketpair");
	c->fd = sv[0];
	c->peer = sv[1];
	struct soft_attach at = {.crc = crc, .ird = 8, .ord = 8};

	if (rrr__soft_qp_attach(soft_qp(c->qp), c->fd, &at))
		die("attach");
	if (atomic_load(&smr(mr_t)->state) != SOFT_MR_VALID) {
		map_fast(mr_t, t_ch, t_n,
			 RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ | RRR_ACCESS_LOCAL_WRITE,
			 T_IOVA);
		post_reg(c->qp, mr_t,
			 RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ | RRR_ACCESS_LOCAL_WRITE);
	}
	if (atomic_load(&smr(mr_r)->state) != SOFT_MR_VALID) {
		map_fast(mr_r, r_ch, r_n, RRR_ACCESS_LOCAL_WRITE, 0);
		post_reg(c->qp, mr_r, RRR_ACCESS_LOCAL_WRITE);
	}
	for (size_t k = 0; k < sizeof(recvs) / sizeof(recvs[0]); k++) {
		struct rrr_sge sge[2];
		struct rrr_recv_wr wr = { .wr_id = recvs[k].id, .sg_list = sge,
					  .num_sge = recvs[k].nsge };

		for (unsigned s = 0; s < recvs[k].nsge; s++)
			sge[s] = (struct rrr_sge){ rrr_mr_iova(mr_r) + recvs[k].sge[s].off,
						   recvs[k].sge[s].len, rrr_mr_lkey(mr_r) };
		if (rrr_qp_post_recv(c->qp, &wr, NULL))
			die("post_recv");
	}
	{
		struct rrr_sge sge = { T_IOVA + READ_SINK_OFF, READ_LEN, STAG_T };
		struct rrr_send_wr wr = { .wr_id = READ_WR, .opcode = RRR_WR_RDMA_READ,
					  .sg_list = &sge, .num_sge = 1,
					  .flags = RRR_SEND_SIGNALED };

		wr.u.rdma.rkey = 0x77700u;
		wr.u.rdma.remote_addr = 0;
		if (rrr_qp_post_send(c->qp, &wr, NULL))
			die("post READ");
	}
}

static void drain_peer(struct conn *c)
{
	static uint8_t sink[65536];

	while (read(c->peer, sink, sizeof(sink)) > 0)
		;
}

static uint64_t recv_total(uint64_t id)
{
	for (size_t k = 0; k < sizeof(recvs) / sizeof(recvs[0]); k++) {
		if (recvs[k].id == id) {
			uint64_t t = 0;

			for (unsigned s = 0; s < recvs[k].nsge; s++)
				t += recvs[k].sge[s].len;
			return t;
		}
	}
	return 0;
}

static void check_t_after_inv(struct conn *c)
{
	bool dead = atomic_load(&smr(mr_t)->state) != SOFT_MR_VALID;

	/* T's chunks are never poisoned */
	if (dead && !c->t_dead) {
		for (unsigned i = 0; i < t_n; i++)
			memcpy(t_snap + t_ch[i].off, arena + t_ch[i].off, t_ch[i].len);
		c->t_dead = true;
	} else if (c->t_dead) {
		for (unsigned i = 0; i < t_n; i++)
			if (memcmp(t_snap + t_ch[i].off, arena + t_ch[i].off, t_ch[i].len))
				die("bytes placed into T after its invalidation");
	}
}

/* One progress step: completions checked; returns unread bytes (socket + stage). */
static size_t drive(struct conn *c)
{
	struct rrr_wc wc[64];
	int n, avail = 0;
	struct soft_qp *qp = soft_qp(c->qp);

	n = rrr_cq_poll(cq, wc, 64);
	for (int i = 0; i < n; i++) {
		if (verbose)
			fprintf(stderr, "wc id %llu op %d status %d len %u\n",
				(unsigned long long)wc[i].wr_id, (int)wc[i].opcode,
				(int)wc[i].status, wc[i].byte_len);
		if (wc[i].opcode == RRR_WC_RECV && wc[i].status == RRR_WC_SUCCESS &&
		    wc[i].byte_len > recv_total(wc[i].wr_id))
			die("a receive completed with more bytes than it has");
	}
	rrr__soft_qp_progress(qp, EPOLLIN);
	drain_peer(c);
	check_t_after_inv(c);
	if (ioctl(c->fd, FIONREAD, &avail) < 0)
		avail = 0;
	pthread_mutex_lock(&qp->lock);
	size_t staged = qp->rx.st_len - qp->rx.st_off;
	pthread_mutex_unlock(&qp->lock);
	return (size_t)avail + staged;
}

/* Drive until everything written was read, or the QP died. */
static void settle(struct conn *c)
{
	size_t last = (size_t)-1;
	int still = 0;

	for (;;) {
		size_t left = drive(c);

		if (!alive(c) || left == 0)
			return;
		if (left == last) {
			if (++still > 64)
				die("the receive engine stopped reading: bytes wait, the QP is up");
		} else {
			still = 0;
		}
		last = left;
	}
}

static void conn_close(struct conn *c)
{
	struct rrr_wc wc[64];

	if (verbose) {
		uint32_t ts = 0, tr = 0;
		int st = 0;

		rrr__soft_qp_info(c->qp, &ts, &tr, &st);
		fprintf(stderr, "end: state %d terminate sent 0x%x received 0x%x, %llu bytes placed\n",
			st, ts, tr, (unsigned long long)soft_qp(c->qp)->bytes_placed);
	}
	close(c->peer);
	rrr_qp_destroy(c->qp);
	close(c->fd);
	rrr_cm_id_destroy(c->id);
	while (rrr_cq_poll(cq, wc, 64) > 0)
		;
	{
		struct rrr_cm_event ev;

		while (rrr_cm_get_event(cm, &ev) == 0)
			;
	}
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conn c;
	uint32_t seed;
	size_t off = 2;

	if (size < 2)
		return 0;
	if (!dev)
		setup_once();
	seed = (uint32_t)data[0] << 8 | data[1] | 0x10000u;
	conn_open(&c, data[0] & 1);
	settle(&c);
	while (off < size && alive(&c)) {
		uint32_t r = rnd(&seed);
		size_t len;

		switch (r & 3) {
		case 0:
			len = 1 + (r >> 2) % 8;
			break;
		case 1:
			len = 9 + (r >> 2) % 56;
			break;
		case 2:
			len = 65 + (r >> 2) % 1984;
			break;
		default:
			len = size - off;
		}
		if (len > size - off)
			len = size - off;
		while (len && alive(&c)) {
			ssize_t w = send(c.peer, data + off, len, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w < 0 && errno != EAGAIN && errno != EINTR)
				break; /* the victim shut the connection */
			if (w > 0) {
				off += (size_t)w;
				len -= (size_t)w;
			}
			settle(&c);
		}
		if (len)
			break;
	}
	settle(&c);
	check_guards();
	conn_close(&c);
	check_guards();
	return 0;
}

/* ---------------------------------------------------------- seed corpus */
static size_t fpdu_end(uint8_t *f, size_t n, bool crc)
{
	unsigned pad = soft_mpa_pad((uint32_t)n - 2);
	uint32_t c;

	memset(f + n, 0, pad);
	c = crc ? rrr_crc32c(0, f, n + pad) : 0;
	n += pad;
	f[n] = (uint8_t)c;
	f[n + 1] = (uint8_t)(c >> 8);
	f[n + 2] = (uint8_t)(c >> 16);
	f[n + 3] = (uint8_t)(c >> 24);
	return n + 4;
}

static size_t send_fpdu(uint8_t *f, bool crc, uint8_t op, bool last, uint32_t inv, uint32_t msn,
			uint32_t mo, uint32_t len, uint8_t fill)
{
	size_t n = rrr__soft_hdr_untagged(f, op, last, inv, SOFT_QN_SEND, msn, mo, len);

	memset(f + n, fill, len);
	return fpdu_end(f, n + len, crc);
}

static size_t tagged_fpdu(uint8_t *f, bool crc, uint8_t op, bool last, uint32_t stag, uint64_t to,
			  uint32_t len, uint8_t fill)
{
	size_t n = rrr__soft_hdr_tagged(f, op, last, stag, to, len);

	for (uint32_t i = 0; i < len; i++)
		f[n + i] = (uint8_t)(fill + i);
	return fpdu_end(f, n + len, crc);
}

static size_t read_req(uint8_t *f, bool crc, uint32_t msn, uint32_t src_stag, uint64_t src_to,
		       uint32_t size)
{
	struct soft_read_req rr = { .sink_stag = 0x4242u, .sink_to = 0x1000, .size = size,
				    .src_stag = src_stag, .src_to = src_to };
	size_t n = rrr__soft_hdr_untagged(f, SOFT_OP_READ_REQ, true, 0, SOFT_QN_READ, msn, 0,
					   SOFT_READ_REQ_LEN);

	rrr__soft_read_req_encode(f + n, &rr);
	return fpdu_end(f, n + SOFT_READ_REQ_LEN, crc);
}

static void write_seed(const char *dir, const char *name, const uint8_t *b, size_t n)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(b, 1, n, fp) != n || fclose(fp))
		die("cannot write a seed");
}

static void seeds(const char *dir)
{
	static uint8_t b[32768];
	size_t n;
	/* T's virtual offset where the 80 8-byte chunks start */
	uint64_t small = 16 + 16 + 13 + 1000 + 3 + 4096;

	for (int crc = 0; crc < 2; crc++) {
		const char *sfx = crc ? "" : "_nocrc";
		char name[64];

		/* Sends: one into each receive, the second in two FPDUs */
		b[0] = (uint8_t)(0x10 | crc), b[1] = 0x2d, n = 2;
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 1, 0, 64, 0x11);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, false, 0, 2, 0, 300, 0x22);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND_SE, true, 0, 2, 300, 500, 0x23);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 3, 0, 4000, 0x33);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 4, 0, 10, 0x44);
		snprintf(name, sizeof(name), "sends%s", sfx);
		write_seed(dir, name, b, n);

		/* WRITEs into T (one across 80 small chunks), WL, then a Send */
		b[0] = (uint8_t)(0x20 | crc), b[1] = 0x07, n = 2;
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_T, T_IOVA, 2048, 1);
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_T, T_IOVA + small - 4, 2048,
				 2);
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_WL, WL_IOVA + 3, 1000, 3);
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_T, T_IOVA + 40, 0, 0);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 1, 0, 100, 0x55);
		snprintf(name, sizeof(name), "writes%s", sfx);
		write_seed(dir, name, b, n);

		/* Read Requests (T across chunks, RO), a Send between */
		b[0] = (uint8_t)(0x30 | crc), b[1] = 0x99, n = 2;
		n += read_req(b + n, crc, 1, STAG_T, T_IOVA + 10, 3000);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 1, 0, 16, 0x66);
		n += read_req(b + n, crc, 2, STAG_RO, RO_IOVA, RO_LEN);
		n += read_req(b + n, crc, 3, STAG_WL, WL_IOVA + 100, 0);
		snprintf(name, sizeof(name), "reads%s", sfx);
		write_seed(dir, name, b, n);

		/* the Read Response our RDMA READ waits for, in two segments */
		b[0] = (uint8_t)(0x40 | crc), b[1] = 0x31, n = 2;
		n += tagged_fpdu(b + n, crc, SOFT_OP_READ_RESP, false, STAG_T,
				 T_IOVA + READ_SINK_OFF, 100, 7);
		n += tagged_fpdu(b + n, crc, SOFT_OP_READ_RESP, true, STAG_T,
				 T_IOVA + READ_SINK_OFF + 100, READ_LEN - 100, 8);
		n += send_fpdu(b + n, crc, SOFT_OP_SEND, true, 0, 1, 0, 8, 0x77);
		snprintf(name, sizeof(name), "read_response%s", sfx);
		write_seed(dir, name, b, n);

		/* Send with Invalidate of T, then a WRITE into it (refused) */
		b[0] = (uint8_t)(0x50 | crc), b[1] = 0x64, n = 2;
		n += send_fpdu(b + n, crc, SOFT_OP_SEND_INV, true, STAG_T, 1, 0, 32, 0x88);
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_T, T_IOVA, 64, 9);
		snprintf(name, sizeof(name), "send_inv%s", sfx);
		write_seed(dir, name, b, n);

		/* WRITE into another PD's registration and into RO (refused) */
		b[0] = (uint8_t)(0x60 | crc), b[1] = 0x05, n = 2;
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_PD2, PD2_IOVA, 64, 10);
		snprintf(name, sizeof(name), "other_pd%s", sfx);
		write_seed(dir, name, b, n);
		b[0] = (uint8_t)(0x70 | crc), b[1] = 0x15, n = 2;
		n += tagged_fpdu(b + n, crc, SOFT_OP_WRITE, true, STAG_RO, RO_IOVA, 64, 11);
		snprintf(name, sizeof(name), "read_only%s", sfx);
		write_seed(dir, name, b, n);

		/* a peer's Terminate */
		b[0] = (uint8_t)(0x80 | crc), b[1] = 0x01, n = 2;
		n += rrr__soft_hdr_untagged(b + n, SOFT_OP_TERMINATE, true, 0, SOFT_QN_TERM, 1, 0, 4);
		rrr__soft_term_encode(b + n, SOFT_TERM(SOFT_TERM_LAYER_RDMAP,
						       SOFT_TERM_RDMAP_REM_PROT, SOFT_ECODE_ACCESS));
		n = 2 + fpdu_end(b + 2, n - 2 + 4, crc);
		snprintf(name, sizeof(name), "terminate%s", sfx);
		write_seed(dir, name, b, n);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_SOFT_RX_SEEDS");

	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_SOFT_RX_VERBOSE") != NULL;
	if (dir) {
		seeds(dir);
		exit(0);
	}
	return 0;
}
