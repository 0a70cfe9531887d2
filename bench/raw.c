/* SPDX-License-Identifier: MIT */
/*
 * bench/raw.c - rrr-bench raw: provider RDMA WRITE / READ bandwidth and
 * SEND ping-pong latency, each beside plain loopback TCP moving the same
 * bytes in the same run.
 *
 * Method: the benchmark forks a server process; the two talk over a
 * control socketpair (commands, keys, "done"), one provider connection
 * (rrr_cm over loopback) and one plain TCP connection (TCP_NODELAY).
 * Both sides sleep in poll() on the CQ fd when idle, as the TCP side
 * sleeps in read() (the soft provider makes progress in rrr_cq_poll).
 *   write N x S: the client keeps up to --window RDMA WRITEs of S bytes in
 *     flight into the server's registered buffer, then a SEND; the clock
 *     stops when the server's SEND answer arrives (RC ordering: every
 *     WRITE has been placed). TCP: write N x S bytes, the server reads them
 *     all and answers one byte.
 *   read N x S: up to min(window, ORD) RDMA READs of S bytes in flight from
 *     the server's buffer; the clock stops at the last READ completion (the
 *     data is placed). TCP: one request, the server writes N x S bytes.
 *   pingpong S: SEND of S bytes, the server SENDs S bytes back; the round
 *     trip is timed per iteration. TCP: write S, read S, echo.
 * Every measurement is repeated --reps times; medians are reported with
 * their ratio to TCP (bandwidth soft/TCP, latency TCP/soft: 1.0 = as fast
 * as TCP, higher is better in both).
 *
 * Recovery: any failure prints rrr_last_error() and exits 1; the server
 * child is killed on the way out.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rrr/provider.h>

#include "bench.h"
#include "bench_common.h"

#define MAX_SIZES 16
#define CTRL_TIMEOUT_MS 30000

enum cmd_op { C_WRITE = 1, C_READ, C_PING, C_TCP_WRITE, C_TCP_READ, C_TCP_PING, C_QUIT };

struct cmd {
	uint32_t op;
	uint32_t pad;
	uint64_t size, count;
};

struct key {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct conn {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *cq;
	struct rrr_cm *cm;
	struct rrr_cm_id *lid, *id;
	struct rrr_qp *qp;
	struct rrr_mr *mr;  /* bulk buffer */
	struct rrr_mr *smr; /* small messages */
	uint8_t *buf;
	uint8_t *small;
	uint64_t buflen;
	int tcp;
	int ctl;
};

static int fail(const char *what, int rc)
{
	fprintf(stderr, "rrr-bench raw: %s failed: %s (%s)\n", what, strerror(rc < 0 ? -rc : rc),
		rrr_last_error() ? rrr_last_error() : "no detail");
	return 1;
}

static int xfer(int fd, void *buf, size_t len, bool rd)
{
	char *p = buf;

	while (len) {
		ssize_t n = rd ? read(fd, p, len) : write(fd, p, len);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cm_wait(struct conn *c, enum rrr_cm_event_type t, struct rrr_cm_event *ev)
{
	for (;;) {
		int rc = rrr_cm_wait_event(c->cm, ev, CTRL_TIMEOUT_MS);

		if (rc)
			return rc;
		if (ev->type == t)
			return 0;
		if (ev->type == RRR_CM_EVENT_REJECTED || ev->type == RRR_CM_EVENT_UNREACHABLE)
			return -ECONNREFUSED;
	}
}

static int make_qp(struct conn *c, struct rrr_cm_id *id)
{
	struct rrr_qp_init_attr a = {
		.pd = c->pd, .send_cq = c->cq, .recv_cq = c->cq,
		.max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 1, .max_recv_sge = 1,
		.max_rd_atomic = 16,
	};
	return rrr_qp_create(id, &a, &c->qp);
}

/* How both sides wait for completions (--wait, --spin-us): by default
 * sleeping in poll() on the CQ fd, as the TCP side sleeps in read(). */
static enum rrr_wait_mode wait_mode = RRR_WAIT_EVENT;
static uint32_t spin_us;

/* Wait for one completion; require success. */
static int wc1(struct conn *c, struct rrr_wc *wc)
{
	uint64_t end = rrr__bench_now_ns() + (uint64_t)CTRL_TIMEOUT_MS * 1000000ull;

	for (;;) {
		int n = rrr_cq_wait_mode(c->cq, wc, 1, 100, wait_mode, spin_us);

		if (n < 0)
			return n;
		if (n == 1)
			return wc->status == RRR_WC_SUCCESS ? 0 : -EIO;
		if (rrr__bench_now_ns() > end)
			return -ETIMEDOUT;
	}
}

static int post(struct conn *c, enum rrr_wr_opcode op, uint64_t id, void *addr, uint32_t len,
		struct rrr_mr *mr, uint64_t raddr, uint32_t rkey)
{
	struct rrr_sge s = { (uintptr_t)addr, len, rrr_mr_lkey(mr) };
	struct rrr_send_wr w = { .wr_id = id, .opcode = op, .flags = RRR_SEND_SIGNALED,
				 .sg_list = &s, .num_sge = 1 };

	w.u.rdma.remote_addr = raddr;
	w.u.rdma.rkey = rkey;
	return rrr_qp_post_send(c->qp, &w, NULL);
}

static int post_recv(struct conn *c, uint64_t id, void *addr, uint32_t len)
{
	struct rrr_sge s = { (uintptr_t)addr, len, rrr_mr_lkey(c->smr) };
	struct rrr_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 };

	return rrr_qp_post_recv(c->qp, &r, NULL);
}

static int setup_common(struct conn *c, const char *provider, const char *opts, uint64_t buflen)
{
	int rc;

	rc = rrr_device_open(provider, opts, &c->dev);
	if (!rc)
		rc = rrr_pd_alloc(c->dev, &c->pd);
	if (!rc)
		rc = rrr_cq_create(c->dev, 1024, &c->cq);
	if (!rc)
		rc = rrr_cm_create(c->dev, &c->cm);
	if (rc)
		return rc;
	c->buflen = buflen;
	c->buf = aligned_alloc(4096, buflen);
	c->small = aligned_alloc(4096, 1 << 20);
	if (!c->buf || !c->small)
		return -ENOMEM;
	memset(c->buf, 0x42, buflen);
	memset(c->small, 0x24, 1 << 20);
	rc = rrr_mr_reg(c->pd, c->buf, buflen,
			RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ,
			&c->mr);
	if (!rc)
		rc = rrr_mr_reg(c->pd, c->small, 1 << 20, RRR_ACCESS_LOCAL_WRITE, &c->smr);
	return rc;
}

/* ------------------------------------------------------------ server child */
static int server_cmd(struct conn *c, const struct cmd *m)
{
	struct rrr_wc wc;
	int rc = 0;

	switch (m->op) {
	case C_WRITE: /* writes land; then the client's SEND; answer it */
		if ((rc = wc1(c, &wc)) || (rc = post_recv(c, 1, c->small + 8192, 8192)))
			return rc;
		if ((rc = post(c, RRR_WR_SEND, 2, c->small, 8, c->smr, 0, 0)) || (rc = wc1(c, &wc)))
			return rc;
		return 0;
	case C_READ: { /* serve READs until the client says stop */
		struct pollfd p[2] = { { .fd = rrr_cq_fd(c->cq), .events = POLLIN },
				       { .fd = c->ctl, .events = POLLIN } };
		char b;

		for (;;) {
			int n = rrr_cq_poll(c->cq, &wc, 1);

			if (n < 0)
				return n;
			if (n)
				continue;
			if (poll(p, 2, 100) < 0 && errno != EINTR)
				return -errno;
			if ((p[1].revents & POLLIN) && recv(c->ctl, &b, 1, MSG_DONTWAIT) == 1)
				return 0;
			rrr_cq_ack_event(c->cq);
		}
	}
	case C_PING:
		for (uint64_t i = 0; i < m->count; i++) {
			if ((rc = wc1(c, &wc)) || (rc = post_recv(c, 1, c->small + 8192, 8192)))
				return rc;
			if ((rc = post(c, RRR_WR_SEND, 2, c->small, (uint32_t)m->size, c->smr, 0, 0)) ||
			    (rc = wc1(c, &wc)))
				return rc;
		}
		return 0;
	case C_TCP_WRITE: {
		uint64_t left = m->size * m->count;
		char ack = 'a';

		while (left) {
			size_t n = left < m->size ? left : m->size;

			if ((rc = xfer(c->tcp, c->buf, n, true)))
				return rc;
			left -= n;
		}
		return xfer(c->tcp, &ack, 1, false);
	}
	case C_TCP_READ: {
		uint64_t req;

		if ((rc = xfer(c->tcp, &req, sizeof(req), true)))
			return rc;
		for (uint64_t i = 0; i < m->count; i++)
			if ((rc = xfer(c->tcp, c->buf, m->size, false)))
				return rc;
		return 0;
	}
	case C_TCP_PING:
		for (uint64_t i = 0; i < m->count; i++) {
			if ((rc = xfer(c->tcp, c->small, m->size, true)) ||
			    (rc = xfer(c->tcp, c->small, m->size, false)))
				return rc;
		}
		return 0;
	}
	return -EINVAL;
}

static int server_main(int ctl, const char *provider, const char *opts, uint64_t buflen)
{
	struct conn c = { .ctl = ctl, .tcp = -1 };
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(sin);
	struct rrr_cm_event ev;
	uint16_t ports[2];
	struct key k;
	int ls, one = 1, rc;

	rc = setup_common(&c, provider, opts, buflen);
	if (!rc)
		rc = rrr_cm_id_create(c.cm, NULL, &c.lid);
	if (!rc)
		rc = rrr_cm_listen(c.lid, (struct sockaddr *)&sin, sizeof(sin), 4);
	if (!rc)
		rc = rrr_cm_id_local_addr(c.lid, &ss);
	if (rc)
		return fail("server setup", rc);
	ports[0] = ((struct sockaddr_in *)&ss)->sin_port;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&sin, &sl))
		return fail("tcp listen", -errno);
	ports[1] = sin.sin_port;
	if (xfer(ctl, ports, sizeof(ports), false))
		return 1;
	c.tcp = accept(ls, NULL, NULL);
	if (c.tcp < 0)
		return fail("tcp accept", -errno);
	setsockopt(c.tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rc = cm_wait(&c, RRR_CM_EVENT_CONNECT_REQUEST, &ev);
	if (!rc) {
		c.id = ev.id;
		rc = make_qp(&c, c.id);
	}
	if (!rc)
		rc = rrr_cm_accept(c.id, NULL);
	if (!rc)
		rc = cm_wait(&c, RRR_CM_EVENT_ESTABLISHED, &ev);
	if (rc)
		return fail("server accept", rc);
	/* one receive always stands posted (re-posted as it is consumed), so a
	 * client SEND never finds the queue empty */
	rc = post_recv(&c, 1, c.small + 8192, 8192);
	if (rc)
		return fail("server post_recv", rc);
	k.addr = (uintptr_t)c.buf;
	k.rkey = rrr_mr_rkey(c.mr);
	if (xfer(ctl, &k, sizeof(k), false))
		return 1;
	for (;;) {
		struct cmd m;
		char done = 'd';

		if (xfer(ctl, &m, sizeof(m), true) || m.op == C_QUIT)
			break;
		rc = server_cmd(&c, &m);
		if (rc)
			return fail("server command", rc);
		if (m.op != C_READ && xfer(ctl, &done, 1, false))
			break;
	}
	return 0;
}

/* ------------------------------------------------------------ client side */
static int send_cmd(struct conn *c, uint32_t op, uint64_t size, uint64_t count)
{
	struct cmd m = { .op = op, .size = size, .count = count };

	return xfer(c->ctl, &m, sizeof(m), false);
}

static int wait_done(struct conn *c)
{
	char d;

	return xfer(c->ctl, &d, 1, true);
}

/* count x size one-sided operations @op (RDMA WRITE or READ) on the
 * server's buffer @k, at most @window in flight, each waited for. */
static int post_window(struct conn *c, enum rrr_wr_opcode op, const struct key *k, uint64_t size,
		       uint64_t count, unsigned window)
{
	struct rrr_wc wc;
	uint64_t posted = 0, done = 0;

	while (done < count) {
		while (posted < count && posted - done < window) {
			if (post(c, op, 1, c->buf, (uint32_t)size, c->mr, k->addr, k->rkey))
				return -1;
			posted++;
		}
		if (wc1(c, &wc))
			return -1;
		done++;
	}
	return 0;
}

/* Seconds for count x size RDMA WRITEs (+ SEND/answer), or < 0. */
static double run_write(struct conn *c, const struct key *k, uint64_t size, uint64_t count,
			unsigned window)
{
	struct rrr_wc wc;
	uint64_t t0;

	if (send_cmd(c, C_WRITE, size, count) || post_recv(c, 9, c->small, 64))
		return -1;
	t0 = rrr__bench_now_ns();
	if (post_window(c, RRR_WR_RDMA_WRITE, k, size, count, window))
		return -1;
	if (post(c, RRR_WR_SEND, 2, c->small, 8, c->smr, 0, 0) || wc1(c, &wc) || wc1(c, &wc))
		return -1;
	double s = (double)(rrr__bench_now_ns() - t0) / 1e9;

	return wait_done(c) ? -1 : s;
}

static double run_read(struct conn *c, const struct key *k, uint64_t size, uint64_t count,
		       unsigned window)
{
	uint64_t t0;
	char stop = 's';

	if (window > 16)
		window = 16; /* ORD */
	if (send_cmd(c, C_READ, size, count))
		return -1;
	t0 = rrr__bench_now_ns();
	if (post_window(c, RRR_WR_RDMA_READ, k, size, count, window))
		return -1;
	double s = (double)(rrr__bench_now_ns() - t0) / 1e9;

	return xfer(c->ctl, &stop, 1, false) ? -1 : s;
}

static int run_ping(struct conn *c, uint64_t size, uint64_t iters, struct rrr__bench_samples *lat)
{
	struct rrr_wc wc;

	if (send_cmd(c, C_PING, size, iters))
		return -1;
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t t0 = rrr__bench_now_ns();

		if (post_recv(c, 9, c->small + 4096, (uint32_t)size) ||
		    post(c, RRR_WR_SEND, 2, c->small, (uint32_t)size, c->smr, 0, 0) ||
		    wc1(c, &wc) || wc1(c, &wc))
			return -1;
		rrr__bench_samples_add(lat, (double)(rrr__bench_now_ns() - t0));
	}
	return wait_done(c);
}

static double run_tcp_write(struct conn *c, uint64_t size, uint64_t count)
{
	uint64_t t0;
	char ack;

	if (send_cmd(c, C_TCP_WRITE, size, count))
		return -1;
	t0 = rrr__bench_now_ns();
	for (uint64_t i = 0; i < count; i++)
		if (xfer(c->tcp, c->buf, size, false))
			return -1;
	if (xfer(c->tcp, &ack, 1, true))
		return -1;
	double s = (double)(rrr__bench_now_ns() - t0) / 1e9;

	return wait_done(c) ? -1 : s;
}

static double run_tcp_read(struct conn *c, uint64_t size, uint64_t count)
{
	uint64_t t0, req = count;

	if (send_cmd(c, C_TCP_READ, size, count))
		return -1;
	t0 = rrr__bench_now_ns();
	if (xfer(c->tcp, &req, sizeof(req), false))
		return -1;
	for (uint64_t i = 0; i < count; i++)
		if (xfer(c->tcp, c->buf, size, true))
			return -1;
	double s = (double)(rrr__bench_now_ns() - t0) / 1e9;

	return wait_done(c) ? -1 : s;
}

static int run_tcp_ping(struct conn *c, uint64_t size, uint64_t iters,
			struct rrr__bench_samples *lat)
{
	if (send_cmd(c, C_TCP_PING, size, iters))
		return -1;
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t t0 = rrr__bench_now_ns();

		if (xfer(c->tcp, c->small, size, false) || xfer(c->tcp, c->small + 4096, size, true))
			return -1;
		rrr__bench_samples_add(lat, (double)(rrr__bench_now_ns() - t0));
	}
	return wait_done(c);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-bench raw [options]\n"
		"  --provider NAME   provider (default soft)\n"
		"  --opts STR        provider options (e.g. crc=0,mulpdu=16384)\n"
		"  --sizes LIST      transfer sizes for WRITE/READ (default 4k,64k,1m)\n"
		"  --total SIZE      bytes moved per repetition and size (default 256m)\n"
		"  --window N        RDMA operations in flight (default 8; READ <= 16)\n"
		"  --ping-sizes LIST SEND ping-pong sizes (default 64,4k)\n"
		"  --iters N         ping-pong round trips per repetition (default 2000)\n"
		"  --reps N          repetitions; medians are reported (default 5)\n"
		"  --json FILE       also write the results as JSON\n"
		"  --wait MODE       how both sides wait for completions: event (default:\n"
		"                    sleep in poll() on the CQ fd, as the TCP side sleeps in\n"
		"                    read()), adaptive or spin (rrr/wait.h)\n"
		"  --spin-us N       spin budget per wait (default 50)\n");
}

struct row {
	const char *op;
	uint64_t size;
	double soft, tcp; /* MB/s, or median round trip in us */
	bool lat;
};

int rrr__bench_raw_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "provider", required_argument, NULL, 'p' }, { "opts", required_argument, NULL, 'o' },
		{ "sizes", required_argument, NULL, 's' },    { "total", required_argument, NULL, 't' },
		{ "window", required_argument, NULL, 'w' },   { "ping-sizes", required_argument, NULL, 'P' },
		{ "iters", required_argument, NULL, 'i' },    { "reps", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },     { "help", no_argument, NULL, 'h' },
		{ "wait", required_argument, NULL, 'W' },     { "spin-us", required_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	const char *provider = "soft", *opts = NULL, *json = NULL;
	uint64_t sizes[MAX_SIZES] = { 4096, 65536, 1 << 20 }, psizes[MAX_SIZES] = { 64, 4096 };
	uint64_t total = 256ull << 20, iters = 2000, maxsize = 0;
	int nsizes = 3, npsizes = 2, reps = 5, o, sv[2], status, rc = 0;
	unsigned window = 8;
	struct row rows[3 * MAX_SIZES];
	int nrows = 0;
	struct conn c = { .tcp = -1 };
	uint16_t ports[2];
	struct key k;
	pid_t pid;

	optind = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 'p': provider = optarg; break;
		case 'o': opts = optarg; break;
		case 's': nsizes = rrr__bench_parse_sizes(optarg, sizes, MAX_SIZES); break;
		case 't': if (rrr__bench_parse_size(optarg, &total)) nsizes = -1; break;
		case 'w': window = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'P': npsizes = rrr__bench_parse_sizes(optarg, psizes, MAX_SIZES); break;
		case 'i': iters = strtoull(optarg, NULL, 0); break;
		case 'r': reps = atoi(optarg); break;
		case 'j': json = optarg; break;
		case 'W':
			if (rrr_wait_mode_parse(optarg, &wait_mode)) {
				fprintf(stderr, "rrr-bench raw: --wait is event, adaptive or spin\n");
				return 2;
			}
			break;
		case 'U': spin_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		default: return rrr__bench_opt_usage(o, usage);
		}
	}
	if (nsizes <= 0 || npsizes <= 0 || reps <= 0 || !window || !iters || window > 128) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < nsizes; i++) {
		if (sizes[i] == 0 || sizes[i] > (256u << 20)) {
			fprintf(stderr, "rrr-bench raw: sizes must be 1..256m\n");
			return 2;
		}
		if (sizes[i] > maxsize)
			maxsize = sizes[i];
	}
	for (int i = 0; i < npsizes; i++)
		if (psizes[i] == 0 || psizes[i] > 4096) {
			fprintf(stderr, "rrr-bench raw: ping sizes must be 1..4k\n");
			return 2;
		}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return fail("socketpair", -errno);
	pid = fork();
	if (pid < 0)
		return fail("fork", -errno);
	if (pid == 0) {
		close(sv[0]);
		_exit(server_main(sv[1], provider, opts, maxsize));
	}
	close(sv[1]);
	c.ctl = sv[0];
	rrr__bench_print_header(stdout, argc, argv);

	/* connect both transports */
	{
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct rrr_cm_event ev;
		int one = 1;

		rc = setup_common(&c, provider, opts, maxsize);
		if (rc) {
			rc = fail("client setup", rc);
			goto out;
		}
		if (xfer(c.ctl, ports, sizeof(ports), true)) {
			rc = fail("server start", -EIO);
			goto out;
		}
		sin.sin_port = ports[1];
		c.tcp = socket(AF_INET, SOCK_STREAM, 0);
		if (c.tcp < 0 || connect(c.tcp, (struct sockaddr *)&sin, sizeof(sin))) {
			rc = fail("tcp connect", -errno);
			goto out;
		}
		setsockopt(c.tcp, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		sin.sin_port = ports[0];
		rc = rrr_cm_id_create(c.cm, NULL, &c.id);
		if (!rc)
			rc = rrr_cm_resolve(c.id, (struct sockaddr *)&sin, sizeof(sin), 1000);
		if (!rc)
			rc = cm_wait(&c, RRR_CM_EVENT_RESOLVED, &ev);
		if (!rc)
			rc = make_qp(&c, c.id);
		if (!rc)
			rc = rrr_cm_connect(c.id, NULL);
		if (!rc)
			rc = cm_wait(&c, RRR_CM_EVENT_ESTABLISHED, &ev);
		if (!rc && xfer(c.ctl, &k, sizeof(k), true))
			rc = -EIO;
		if (rc) {
			rc = fail("connect", rc);
			goto out;
		}
	}

	printf("%-9s %8s %14s %14s %8s\n", "op", "size", provider, "tcp", "ratio");
	for (int op = 0; op < 2; op++) {
		for (int i = 0; i < nsizes; i++) {
			struct rrr__bench_samples ss = { 0 }, ts = { 0 };
			uint64_t count = total / sizes[i] ? total / sizes[i] : 1;
			double mb = (double)(count * sizes[i]) / 1e6;
			char sz[32];

			for (int r = 0; r < reps; r++) {
				double s = op == 0 ? run_write(&c, &k, sizes[i], count, window)
						   : run_read(&c, &k, sizes[i], count, window);
				double t = op == 0 ? run_tcp_write(&c, sizes[i], count)
						   : run_tcp_read(&c, sizes[i], count);

				if (s <= 0 || t <= 0) {
					rc = fail(op == 0 ? "write run" : "read run", -EIO);
					goto out;
				}
				rrr__bench_samples_add(&ss, mb / s);
				rrr__bench_samples_add(&ts, mb / t);
			}
			rows[nrows] = (struct row){ op == 0 ? "write" : "read", sizes[i],
						    rrr__bench_samples_median(&ss),
						    rrr__bench_samples_median(&ts), false };
			printf("%-9s %8s %9.0f MB/s %9.0f MB/s %8.2f\n", rows[nrows].op,
			       rrr__bench_fmt_size(sizes[i], sz, sizeof(sz)), rows[nrows].soft,
			       rows[nrows].tcp, rows[nrows].soft / rows[nrows].tcp);
			fflush(stdout);
			nrows++;
			rrr__bench_samples_free(&ss);
			rrr__bench_samples_free(&ts);
		}
	}
	for (int i = 0; i < npsizes; i++) {
		struct rrr__bench_samples sl = { 0 }, tl = { 0 }, sm = { 0 }, tm = { 0 };
		char sz[32];

		for (int r = 0; r < reps; r++) {
			if (run_ping(&c, psizes[i], iters, &sl) ||
			    run_tcp_ping(&c, psizes[i], iters, &tl)) {
				rc = fail("ping-pong run", -EIO);
				goto out;
			}
			rrr__bench_samples_add(&sm, rrr__bench_samples_median(&sl) / 1e3);
			rrr__bench_samples_add(&tm, rrr__bench_samples_median(&tl) / 1e3);
			rrr__bench_samples_reset(&sl);
			rrr__bench_samples_reset(&tl);
		}
		rows[nrows] = (struct row){ "pingpong", psizes[i], rrr__bench_samples_median(&sm),
					    rrr__bench_samples_median(&tm), true };
		printf("%-9s %8s %11.1f us %11.1f us %8.2f\n", "pingpong",
		       rrr__bench_fmt_size(psizes[i], sz, sizeof(sz)), rows[nrows].soft,
		       rows[nrows].tcp, rows[nrows].tcp / rows[nrows].soft);
		nrows++;
		rrr__bench_samples_free(&sl);
		rrr__bench_samples_free(&tl);
		rrr__bench_samples_free(&sm);
		rrr__bench_samples_free(&tm);
	}
	printf("# ratio: bandwidth %s/tcp, latency tcp/%s (1.00 = as fast as plain TCP); "
	       "medians of %d repetitions\n",
	       provider, provider, reps);
	if (json) {
		struct rrr__bench_json j;

		if (rrr__bench_json_open(&j, json)) {
			rc = fail("json open", -errno);
			goto out;
		}
		rrr__bench_json_obj_begin(&j, NULL);
		rrr__bench_json_str(&j, "bench", "raw");
		rrr__bench_json_machine(&j, argc, argv);
		rrr__bench_json_str(&j, "provider", provider);
		rrr__bench_json_str(&j, "opts", opts ? opts : "");
		rrr__bench_json_int(&j, "reps", reps);
		rrr__bench_json_int(&j, "window", window);
		rrr__bench_json_str(&j, "wait", rrr_wait_mode_name(wait_mode));
		rrr__bench_json_arr_begin(&j, "results");
		for (int i = 0; i < nrows; i++) {
			rrr__bench_json_obj_begin(&j, NULL);
			rrr__bench_json_str(&j, "op", rows[i].op);
			rrr__bench_json_int(&j, "size", (long long)rows[i].size);
			if (rows[i].lat) {
				rrr__bench_json_num(&j, "provider_rtt_us", rows[i].soft);
				rrr__bench_json_num(&j, "tcp_rtt_us", rows[i].tcp);
				rrr__bench_json_num(&j, "ratio", rows[i].tcp / rows[i].soft);
			} else {
				rrr__bench_json_num(&j, "provider_mb_s", rows[i].soft);
				rrr__bench_json_num(&j, "tcp_mb_s", rows[i].tcp);
				rrr__bench_json_num(&j, "ratio", rows[i].soft / rows[i].tcp);
			}
			rrr__bench_json_obj_end(&j);
		}
		rrr__bench_json_arr_end(&j);
		rrr__bench_json_obj_end(&j);
		if (rrr__bench_json_close(&j))
			rc = fail("json write", -EIO);
	}
out:
	send_cmd(&c, C_QUIT, 0, 0);
	if (c.qp) {
		rrr_cm_disconnect(c.id);
		rrr_qp_destroy(c.qp);
	}
	if (c.id)
		rrr_cm_id_destroy(c.id);
	if (c.mr)
		rrr_mr_dereg(c.mr);
	if (c.smr)
		rrr_mr_dereg(c.smr);
	if (c.cm)
		rrr_cm_destroy(c.cm);
	if (c.cq)
		rrr_cq_destroy(c.cq);
	if (c.pd)
		rrr_pd_free(c.pd);
	if (c.dev)
		rrr_device_close(c.dev);
	free(c.buf);
	free(c.small);
	if (c.tcp >= 0)
		close(c.tcp);
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return rc;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return rc;
}
