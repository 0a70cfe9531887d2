/* SPDX-License-Identifier: MIT */
/* tests/soft/helpers/harness.c - see harness.h. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "transport/soft/soft.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int th_open(struct th_ep *e, const char *opts)
{
	int rc;

	memset(e, 0, sizeof(*e));
	e->oob = -1;
	rc = rrr_device_open("soft", opts, &e->dev);
	if (!rc)
		rc = rrr_pd_alloc(e->dev, &e->pd);
	if (!rc)
		rc = rrr_cq_create(e->dev, 4096, &e->cq);
	if (!rc)
		rc = rrr_cm_create(e->dev, &e->cm);
	return rc;
}

static int make_qp(struct th_ep *e, struct rrr_cm_id *id)
{
	struct rrr_qp_init_attr a = {
		.pd = e->pd,
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.max_send_wr = 256,
		.max_recv_wr = 256,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_rd_atomic = 8,
	};
	return rrr_qp_create(id, &a, &e->qp);
}

int th_cm_wait(struct th_ep *e, enum rrr_cm_event_type type, int timeout_ms)
{
	long end = now_ms() + timeout_ms;

	for (;;) {
		long left = end - now_ms();
		int rc;

		if (left < 0)
			return -ETIMEDOUT;
		rc = rrr_cm_wait_event(e->cm, &e->ev, (int)left);
		if (rc)
			return rc;
		if (e->ev.type == type)
			return 0;
		if (e->ev.type == RRR_CM_EVENT_REJECTED || e->ev.type == RRR_CM_EVENT_UNREACHABLE)
			return -ECONNREFUSED;
	}
}

int th_listen(struct th_ep *e, uint16_t *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage ss;
	int rc;

	rc = rrr_cm_id_create(e->cm, NULL, &e->lid);
	if (!rc)
		rc = rrr_cm_listen(e->lid, (struct sockaddr *)&sin, sizeof(sin), 8);
	if (!rc)
		rc = rrr_cm_id_local_addr(e->lid, &ss);
	if (!rc)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return rc;
}

int th_accept(struct th_ep *e, const void *pd, uint32_t pdlen)
{
	struct rrr_conn_param p = { .private_data = pd, .private_data_len = pdlen };
	int rc;

	rc = th_cm_wait(e, RRR_CM_EVENT_CONNECT_REQUEST, TH_TIMEOUT_MS);
	if (rc)
		return rc;
	e->req = e->ev;
	e->id = e->ev.id;
	rc = make_qp(e, e->id);
	if (!rc)
		rc = rrr_cm_accept(e->id, &p);
	if (!rc)
		rc = th_cm_wait(e, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS);
	return rc;
}

int th_connect(struct th_ep *e, uint16_t port, const void *pd, uint32_t pdlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rrr_conn_param p = { .private_data = pd, .private_data_len = pdlen };
	int rc;

	rc = rrr_cm_id_create(e->cm, NULL, &e->id);
	if (!rc)
		rc = rrr_cm_resolve(e->id, (struct sockaddr *)&sin, sizeof(sin), 1000);
	if (!rc)
		rc = th_cm_wait(e, RRR_CM_EVENT_RESOLVED, TH_TIMEOUT_MS);
	if (!rc)
		rc = make_qp(e, e->id);
	if (!rc)
		rc = rrr_cm_connect(e->id, &p);
	if (!rc)
		rc = th_cm_wait(e, RRR_CM_EVENT_ESTABLISHED, TH_TIMEOUT_MS);
	if (!rc)
		e->req = e->ev;
	return rc;
}

int th_wc(struct th_ep *e, struct rrr_wc *wc, int timeout_ms)
{
	long end = now_ms() + timeout_ms;

	for (;;) {
		long left = end - now_ms();
		int rc;

		if (left < 0)
			return 0;
		rc = rrr_cq_wait(e->cq, wc, 1, left > 50 ? 50 : (int)left);
		if (rc)
			return rc;
	}
}

void th_close(struct th_ep *e)
{
	if (e->qp)
		rrr_qp_destroy(e->qp);
	if (e->id)
		rrr_cm_id_destroy(e->id);
	if (e->lid)
		rrr_cm_id_destroy(e->lid);
	if (e->cm)
		rrr_cm_destroy(e->cm);
	if (e->cq)
		rrr_cq_destroy(e->cq);
	if (e->pd)
		rrr_pd_free(e->pd);
	if (e->dev)
		rrr_device_close(e->dev);
	if (e->oob >= 0)
		close(e->oob);
	memset(e, 0, sizeof(*e));
	e->oob = -1;
}

int th_end(struct th_ep *e, struct rrr_mr *mr)
{
	rrr_qp_destroy(e->qp);
	e->qp = NULL;
	if (rrr_mr_dereg(mr)) {
		fprintf(stderr, "th_end: deregistration failed: %s\n", rrr_last_error());
		return -1;
	}
	return 0;
}

int th_post_reg(struct th_ep *e, struct rrr_mr *mr, unsigned access, uint64_t id)
{
	struct rrr_send_wr wr = {.wr_id = id, .opcode = RRR_WR_REG_MR, .flags = RRR_SEND_SIGNALED};

	wr.u.reg.mr = mr;
	wr.u.reg.access = access;
	return th_post_one(e, &wr);
}

int th_post_one(struct th_ep *e, struct rrr_send_wr *wr)
{
	struct rrr_wc wc;

	if (rrr_qp_post_send(e->qp, wr, NULL))
		return -1;
	if (th_wc(e, &wc, TH_TIMEOUT_MS) != 1 || wc.status != RRR_WC_SUCCESS || wc.wr_id != wr->wr_id)
		return -1;
	return 0;
}

int th_tcp_connect(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int th_open_raw_peer(struct th_ep *e, const char *opts)
{
	uint16_t port;
	int fd = -1;

	if (!th_open(e, opts) && !th_listen(e, &port))
		fd = th_tcp_connect(port);
	if (fd < 0)
		th_close(e);
	return fd;
}

size_t th_fpdu_close(uint8_t *f, size_t n, bool crc)
{
	size_t end = n + soft_mpa_pad((uint32_t)n - 2);
	uint32_t c;

	memset(f + n, 0, end - n);
	c = crc ? rrr_crc32c(0, f, end) : 0;
	for (unsigned i = 0; i < 4; i++)
		f[end + i] = (uint8_t)(c >> (8 * i));
	return end + 4;
}

bool th_readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) > 0;
}

int th_raw_mpa_connect(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint8_t buf[SOFT_MPA_HDR + SOFT_MPA_PD_MAX], f[64];
	struct soft_mpa_rr rr;
	size_t n, total;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(&rr, 0, sizeof(rr));
	rr.rev = 2;
	rr.enhanced = rr.p2p = true;
	rr.rtr = SOFT_RTR_WRITE;
	rr.crc = true;
	rr.ird = rr.ord = 4;
	n = rrr__soft_mpa_encode(&rr, buf);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) || th_oob_send(fd, buf, n) ||
	    th_oob_recv(fd, buf, SOFT_MPA_HDR, TH_TIMEOUT_MS) ||
	    rrr__soft_mpa_parse_hdr(buf, true, &total) ||
	    th_oob_recv(fd, buf + SOFT_MPA_HDR, total - SOFT_MPA_HDR, TH_TIMEOUT_MS))
		goto fail;
	n = rrr__soft_mpa_rtr(f, SOFT_RTR_WRITE, true);
	if (th_oob_send(fd, f, n))
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

void th_serve_until_done(struct th_ep *e)
{
	char done;

	for (int i = 0; i < 400; i++) {
		struct rrr_wc wc;

		if (th_oob_recv(e->oob, &done, 1, 0) == 0)
			break;
		th_wc(e, &wc, 25);
	}
}

/* One transfer's result @n added to *@off: 0, or -errno (-ECONNRESET for
 * EOF when @eof_fails). An interrupted call moves nothing. */
static int advance(ssize_t n, size_t *off, bool eof_fails)
{
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0 && eof_fails)
		return -ECONNRESET;
	*off += (size_t)n;
	return 0;
}

int th_oob_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	for (size_t off = 0; off < len;) {
		int rc = advance(send(fd, p + off, len - off, MSG_NOSIGNAL), &off, false);

		if (rc)
			return rc;
	}
	return 0;
}

int th_oob_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;
	long end = now_ms() + timeout_ms;

	for (size_t off = 0; off < len;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = end - now_ms();
		int rc;

		if (left < 0 || poll(&pfd, 1, (int)left) == 0)
			return -ETIMEDOUT;
		rc = advance(recv(fd, p + off, len - off, 0), &off, true);
		if (rc)
			return rc;
	}
	return 0;
}

int th_run_pair(const char *opts, th_fn server, th_fn client, void *arg)
{
	return th_run_pair_hook(opts, NULL, server, client, arg);
}

int th_run_pair_hook(const char *opts, int (*after_listen)(uint16_t port, void *arg),
		     th_fn server, th_fn client, void *arg)
{
	struct th_ep e;
	uint16_t port = 0;
	int sv[2], rc, status = -1;
	pid_t pid;
	long end;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -errno;
	/* Fork before any device exists: a child must not inherit the
	 * parent's progress thread in liburcu's reader registry. */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct th_ep c;

		alarm(60);
		close(sv[0]);
		if (th_oob_recv(sv[1], &port, sizeof(port), TH_TIMEOUT_MS))
			_exit(3); /* the server could not start: it says why */
		rc = th_open(&c, opts);
		c.oob = sv[1];
		if (!rc)
			rc = th_connect(&c, port, TH_PD_CLIENT, sizeof(TH_PD_CLIENT));
		if (rc) {
			fprintf(stderr, "client setup failed: %d %s\n", rc,
				rrr_last_error() ? rrr_last_error() : "");
			_exit(2);
		}
		rc = client(&c, arg);
		th_close(&c);
		_exit(rc ? 1 : 0);
	}
	close(sv[1]);
	rc = th_open(&e, opts);
	if (!rc)
		rc = th_listen(&e, &port);
	if (rc)
		fprintf(stderr, "server setup failed: %d %s\n", rc,
			rrr_last_error() ? rrr_last_error() : "");
	if (!rc && after_listen)
		rc = after_listen(port, arg);
	if (rc) {
		close(sv[0]);
		th_close(&e);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return rc;
	}
	e.oob = sv[0];
	rc = th_oob_send(e.oob, &port, sizeof(port));
	if (!rc)
		rc = th_accept(&e, TH_PD_SERVER, sizeof(TH_PD_SERVER));
	if (!rc)
		rc = server(&e, arg);
	if (rc)
		fprintf(stderr, "server side failed: %d (%s)\n", rc,
			rrr_last_error() ? rrr_last_error() : "");
	th_close(&e);
	end = now_ms() + 20000;
	while (now_ms() < end) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		usleep(10000);
	}
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "client timed out\n");
		return -ETIMEDOUT;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "client failed (status 0x%x)\n", status);
		return -1;
	}
	return rc;
}

void th_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

int th_write_sink(struct th_ep *e, size_t len, uint32_t seed, void *report, size_t report_len)
{
	uint8_t *buf = malloc(len), note[16];
	struct rrr_mr *mr = NULL, *nmr = NULL;
	struct rrr_sge sge;
	struct rrr_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct th_key k;
	struct rrr_wc wc;
	int rc = -1;

	if (!buf)
		return -1;
	memset(buf, 0, len);
	if (rrr_mr_reg(e->pd, buf, len, RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE, &mr) ||
	    rrr_mr_reg(e->pd, note, sizeof(note), RRR_ACCESS_LOCAL_WRITE, &nmr)) {
		fprintf(stderr, "th_write_sink: cannot register the buffers\n");
		goto out;
	}
	sge = (struct rrr_sge){ (uintptr_t)note, sizeof(note), rrr_mr_lkey(nmr) };
	k = (struct th_key){ (uintptr_t)buf, len, rrr_mr_rkey(mr), 0 };
	if (rrr_qp_post_recv(e->qp, &rwr, NULL) || th_oob_send(e->oob, &k, sizeof(k))) {
		fprintf(stderr, "th_write_sink: cannot post the receive or send the key\n");
		goto out;
	}
	if (th_wc(e, &wc, TH_TIMEOUT_MS) != 1 || wc.wr_id != 7 || wc.status != RRR_WC_SUCCESS ||
	    wc.opcode != RRR_WC_RECV) {
		fprintf(stderr, "th_write_sink: no good receive of the client's SEND\n");
		goto out;
	}
	if (th_check(buf, len, seed) ||
	    th_oob_recv(e->oob, report, report_len, TH_TIMEOUT_MS)) {
		fprintf(stderr, "th_write_sink: wrong bytes, or no report from the client\n");
		goto out;
	}
	rc = 0;
out:
	if (nmr && rrr_mr_dereg(nmr))
		rc = -1;
	if (mr && rrr_mr_dereg(mr))
		rc = -1;
	free(buf);
	return rc;
}

int th_check(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (uint8_t)(x >> 16)) {
			fprintf(stderr, "pattern mismatch at byte %zu of %zu\n", i, len);
			return -1;
		}
	}
	return 0;
}

size_t th_count_not(const void *buf, size_t len, uint8_t v)
{
	const uint8_t *p = buf;
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] != v;
	return n;
}
