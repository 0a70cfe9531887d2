/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/helpers/harness.h - two-process soft-provider test harness.
 *
 * The parent listens on an ephemeral loopback port and forks the child,
 * which connects; an out-of-band socketpair carries keys and sync bytes
 * so tests need no RDMA traffic to set themselves up. Every wait is
 * bounded (TH_TIMEOUT_MS); a child reports failure through its exit code.
 */
#ifndef TESTS_SOFT_HARNESS_H
#define TESTS_SOFT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rrr/provider.h>

#define TH_TIMEOUT_MS 10000

struct th_ep {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *cq;
	struct rrr_cm *cm;
	struct rrr_cm_id *lid; /* listener (server) */
	struct rrr_cm_id *id;
	struct rrr_qp *qp;
	struct rrr_cm_event ev;  /* last CM event */
	struct rrr_cm_event req; /* server: the CONNECT_REQUEST; client: ESTABLISHED */
	int oob;                /* control socket to the other process */
};

struct th_key {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t tag;
};

int th_open(struct th_ep *e, const char *opts);
int th_listen(struct th_ep *e, uint16_t *port);
/* Wait for a request, create the QP, accept with @pd. */
int th_accept(struct th_ep *e, const void *pd, uint32_t pdlen);
int th_connect(struct th_ep *e, uint16_t port, const void *pd, uint32_t pdlen);
/* Poll until one completion or timeout: 1, 0 on timeout, -errno. */
int th_wc(struct th_ep *e, struct rrr_wc *wc, int timeout_ms);
/* Wait for a CM event of @type (others are skipped): 0 or -errno. */
int th_cm_wait(struct th_ep *e, enum rrr_cm_event_type type, int timeout_ms);
void th_close(struct th_ep *e);
/* The end of one side of a test: destroys @e's QP (th_close frees the
 * rest) and deregisters @mr: 0, or -1 (printed) when that fails. */
int th_end(struct th_ep *e, struct rrr_mr *mr);

/* A signaled REG_MR of @mr with @access as work request @id, and its
 * successful completion: 0, or -1. */
int th_post_reg(struct th_ep *e, struct rrr_mr *mr, unsigned access, uint64_t id);
/* Post @wr (signaled) on @e's QP and wait for its one completion: 0 when
 * it came within TH_TIMEOUT_MS, successful and with @wr's wr_id, else -1. */
int th_post_one(struct th_ep *e, struct rrr_send_wr *wr);

/* A plain TCP socket connected to 127.0.0.1:@port, or -1. */
int th_tcp_connect(uint16_t port);
/* @e opened with @opts and listening, and a plain TCP socket connected to
 * its listener (a hand-made peer): the socket, or -1 with @e closed. */
int th_open_raw_peer(struct th_ep *e, const char *opts);
/* Close the FPDU of @n bytes at @f (from its MPA length field on): zero
 * pad, then the CRC field (CRC32c of all before it, least significant
 * byte first; zero without @crc). Returns the FPDU's whole length. */
size_t th_fpdu_close(uint8_t *f, size_t n, bool crc);
/* True when @fd has bytes (or EOF) to read within @ms milliseconds. */
bool th_readable(int fd, int ms);

/* A raw TCP socket to 127.0.0.1:@port (receive buffer @rcvbuf bytes, 0:
 * the default) through the MPA exchange as an initiator (rev 2, enhanced,
 * peer-to-peer with an RTR WRITE, CRC, IRD/ORD 4), RTR sent: the socket for
 * a hand-made peer's frames, or -1. */
int th_raw_mpa_connect(uint16_t port, int rcvbuf);

/* The responder's side of a one-sided test: polls @e's CQ (so the provider
 * works) until the peer's "done" byte arrives on the OOB socket, at most
 * 400 polls of 25 ms. */
void th_serve_until_done(struct th_ep *e);

int th_oob_send(int fd, const void *buf, size_t len);
int th_oob_recv(int fd, void *buf, size_t len, int timeout_ms);

#define TH_PD_CLIENT "private data from the client"
#define TH_PD_SERVER "private data from the server"

/*
 * Run @server in this process and @client in a forked child, connected.
 * Both get their endpoint; @arg is passed through. Returns 0 when both
 * returned 0 (the child's result is its exit status).
 */
typedef int (*th_fn)(struct th_ep *e, void *arg);
int th_run_pair(const char *opts, th_fn server, th_fn client, void *arg);
/* A test @suite/@name (60 s at most) that asserts th_run_pair(@opts,
 * @server, @client, @arg) returned 0. */
#define TH_PAIR_TEST(suite, name, opts, server, client, arg)                                       \
	Test(suite, name, .timeout = 60)                                                           \
	{                                                                                          \
		cr_assert_eq(th_run_pair(opts, server, client, arg), 0);                           \
	}
/* The same; @after_listen(port, arg) runs before the client starts (a
 * capture, say); a nonzero return aborts with that value. */
int th_run_pair_hook(const char *opts, int (*after_listen)(uint16_t port, void *arg),
		     th_fn server, th_fn client, void *arg);

/*
 * The server side of a test that RDMA-WRITEs into the server: register @len
 * bytes for remote writes, send the client their key (a struct th_key) over
 * oob, wait for the client's SEND (RC order: its WRITEs landed before it),
 * check the pattern of @seed over all @len bytes, then receive the client's
 * @report_len-byte report into @report (the client runs in another process).
 * Returns 0, or -1 after printing which step failed.
 */
int th_write_sink(struct th_ep *e, size_t len, uint32_t seed, void *report, size_t report_len);

/* Fill/verify a deterministic pattern. */
void th_fill(void *buf, size_t len, uint32_t seed);
int th_check(const void *buf, size_t len, uint32_t seed);
/* Number of bytes of @buf not equal to @v. */
size_t th_count_not(const void *buf, size_t len, uint8_t v);

#define TH_CHECK(c)                                                                          \
	do {                                                                                 \
		if (!(c)) {                                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			return -1;                                                           \
		}                                                                            \
	} while (0)

#endif
