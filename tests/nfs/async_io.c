/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/async_io.c - the asynchronous NFS I/O API of <rrr/nfs3_client.h>
 * (rrr_nfs3_io_submit, rrr_nfs3_io_submit_clnt) against a real rrr-server
 * process, over TCP and over RPC-over-RDMA on the soft provider:
 *   - 64 WRITEs of 64 KiB at queue depth 8, each from two iovecs with a
 *     hole between them, then 64 READs back into other buffers at the same
 *     depth: the out fields (bytes done, eof, verifier) and the bytes equal
 *     the source; COMMIT's verifier equals the WRITEs';
 *   - a call on a connection of the caller's own (rrr_nfs3_io_submit_clnt);
 *   - an NFS error completes the io with its -errno and nfs_status;
 *   - refused submissions (unknown op, no iovec, too many, more than 1 MiB)
 *     return -EINVAL with a sentence and never run the callback.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

#include "tests/lib/nfs_helpers.h"

#define NIO 64u
#define QD 8u
#define LEN (64u << 10)
#define SPAN (LEN + 4096u) /* an io's memory: half, a 4 KiB hole, half */

static struct th_server srv;

static void fini(void)
{
	th_cleanup(&srv);
}

TestSuite(nfs_async_io, .fini = fini, .timeout = 120);

static struct rrr_nfs3 *start_and_mount(bool rdma)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	int rc = th_server_start(&srv, rdma);
	if (rdma && rc < 0) {
		th_cleanup(&srv);
		cr_skip_test("rrr-server could not listen on the soft provider (rc %d)", rc);
	}
	cr_assert_eq(rc, 0, "server start");
	struct th_mount mt;
	th_mount_opts(&srv, rdma, &mt);
	mt.o.timeout_ms = 20000;
	mt.o.nconnect = 2;
	struct rrr_nfs3 *n = th_nfs_mount(&mt);
	return n;
}

/* A queue of ios kept QD deep by the completions themselves. */
struct q {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rrr_nfs3 *n;
	struct rrr_nfs3_io io[QD];
	struct iovec iov[QD][2];
	enum rrr_nfs3_io_op op;
	struct rrr_nfs3_fh fh;
	uint8_t *buf;
	unsigned next, done, inflight;
	int err;
	uint32_t bad_done;
	bool verf_set, verf_differs;
	uint8_t verf[8];
};

static void q_done(struct rrr_nfs3_io *io, int status, void *arg);

/* Submit the next io into slot @k (lock held); false when none is left. */
static bool q_next(struct q *q, unsigned k)
{
	if (q->next >= NIO)
		return false;
	unsigned i = q->next++;
	struct rrr_nfs3_io *io = &q->io[k];
	uint8_t *p = q->buf + (size_t)i * SPAN;
	/* two pieces with a hole of 4 KiB between them in memory, each io in
	 * its own span (ios in flight never share a byte) */
	q->iov[k][0] = (struct iovec){p, LEN / 2};
	q->iov[k][1] = (struct iovec){p + LEN / 2 + 4096, LEN / 2};
	memset(io, 0, sizeof(*io));
	io->op = q->op;
	io->fh = q->fh;
	io->offset = (uint64_t)i * LEN;
	io->iov = q->iov[k];
	io->niov = 2;
	io->stable = RRR_NFS3_UNSTABLE;
	q->inflight++;
	int rc = rrr_nfs3_io_submit(q->n, io, q_done, q);
	if (rc) {
		q->inflight--;
		q->err = rc;
		return false;
	}
	return true;
}

static void q_done(struct rrr_nfs3_io *io, int status, void *arg)
{
	struct q *q = arg;
	pthread_mutex_lock(&q->lock);
	q->inflight--;
	q->done++;
	if (status && !q->err)
		q->err = status;
	if (!status && io->done != LEN)
		q->bad_done = io->done;
	if (!status && io->op == RRR_NFS3_IO_WRITE) {
		if (!q->verf_set) {
			memcpy(q->verf, io->verf, 8);
			q->verf_set = true;
		} else if (memcmp(q->verf, io->verf, 8)) {
			q->verf_differs = true;
		}
	}
	if (!q->err)
		q_next(q, (unsigned)(io - q->io));
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/* Submits the one io @io (through @n, or else through client @own) and
 * waits for its completion, which q_done() records in @q. */
static void q_one(struct q *q, struct rrr_nfs3 *n, struct rrr_clnt *own, struct rrr_nfs3_io *io)
{
	pthread_mutex_lock(&q->lock);
	q->inflight = 1;
	cr_assert_eq(n ? rrr_nfs3_io_submit(n, io, q_done, q)
		       : rrr_nfs3_io_submit_clnt(own, NULL, io, q_done, q),
		     0);
	while (q->inflight)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

static void q_run(struct q *q)
{
	pthread_mutex_lock(&q->lock);
	q->next = q->done = 0;
	for (unsigned k = 0; k < QD; k++)
		q_next(q, k);
	while (q->inflight)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

static void write_read_back(bool rdma)
{
	struct rrr_nfs3 *n = start_and_mount(rdma);
	size_t span = (size_t)NIO * SPAN;
	uint8_t *src = malloc(span), *dst = calloc(1, span);
	cr_assert(src && dst);
	for (size_t i = 0; i < span; i++)
		src[i] = (uint8_t)(i * 131 + 7);

	static struct q q;
	memset(&q, 0, sizeof(q));
	pthread_mutex_init(&q.lock, NULL);
	pthread_cond_init(&q.cond, NULL);
	q.n = n;
	cr_assert_eq(rrr_nfs3_create(n, rrr_nfs3_root(n), "async", 0644, false, &q.fh), 0);

	q.op = RRR_NFS3_IO_WRITE;
	q.buf = src;
	q_run(&q);
	cr_assert_eq(q.err, 0, "WRITE: %d", q.err);
	cr_assert_eq(q.done, NIO);
	cr_assert_eq(q.bad_done, 0u, "a WRITE took %u bytes", q.bad_done);
	cr_assert(q.verf_set && !q.verf_differs, "one verifier for every WRITE");

	/* COMMIT, asynchronously too */
	struct rrr_nfs3_io c;
	memset(&c, 0, sizeof(c));
	c.op = RRR_NFS3_IO_COMMIT;
	c.fh = q.fh;
	q_one(&q, n, NULL, &c);
	cr_assert_eq(q.err, 0);
	cr_assert_eq(memcmp(c.verf, q.verf, 8), 0, "COMMIT's verifier is the WRITEs'");

	q.op = RRR_NFS3_IO_READ;
	q.buf = dst;
	q_run(&q);
	cr_assert_eq(q.err, 0, "READ: %d", q.err);
	cr_assert_eq(q.bad_done, 0u, "a READ returned %u bytes", q.bad_done);
	for (unsigned i = 0; i < NIO; i++) {
		size_t o = (size_t)i * SPAN;
		cr_assert_eq(memcmp(dst + o, src + o, LEN / 2), 0, "io %u, first piece", i);
		cr_assert_eq(memcmp(dst + o + LEN / 2 + 4096, src + o + LEN / 2 + 4096, LEN / 2), 0,
			     "io %u, second piece", i);
	}

	/* the last READ of the file says eof, on a connection of our own */
	char port[16];
	snprintf(port, sizeof(port), "%u", rdma ? srv.rdma_port : srv.mount_port);
	struct rrr_clnt_opts co;
	rrr_clnt_opts_init(&co);
	co.host = "127.0.0.1";
	co.port = port;
	co.transport = rdma ? "rdma" : "tcp";
	co.provider = "soft";
	struct rrr_clnt *own;
	cr_assert_eq(rrr_clnt_create(&co, &own), 0, "connect: %s", rrr_last_error());
	struct iovec last = {dst, LEN};
	struct rrr_nfs3_io r;
	memset(&r, 0, sizeof(r));
	r.op = RRR_NFS3_IO_READ;
	r.fh = q.fh;
	r.offset = (uint64_t)(NIO - 1) * LEN;
	r.iov = &last;
	r.niov = 1;
	q_one(&q, NULL, own, &r);
	cr_assert_eq(q.err, 0);
	cr_assert_eq(r.done, LEN);
	cr_assert(r.eof, "the last block ends the file");
	cr_assert_eq(memcmp(dst, src + (size_t)(NIO - 1) * SPAN, LEN / 2), 0);

	/* an NFS error: a handle that names nothing */
	struct rrr_nfs3_io bad;
	memset(&bad, 0, sizeof(bad));
	bad.op = RRR_NFS3_IO_READ;
	bad.fh = q.fh;
	bad.fh.data[bad.fh.len - 1] ^= 0x5a;
	bad.iov = &last;
	bad.niov = 1;
	q_one(&q, NULL, own, &bad);
	cr_assert_lt(q.err, 0, "a forged handle fails");
	cr_assert_neq(bad.nfs_status, RRR_NFS3_OK, "the io carries the nfsstat3");
	cr_assert_eq(q.err, rrr_nfs3_stat_to_errno(bad.nfs_status));
	cr_assert_eq(bad.done, 0u);

	rrr_clnt_destroy(own);
	rrr_nfs3_umount(n);
	free(src);
	free(dst);
}

Test(nfs_async_io, write_read_commit_tcp)
{
	write_read_back(false);
}

Test(nfs_async_io, write_read_commit_rdma)
{
	write_read_back(true);
}

static void never(struct rrr_nfs3_io *io, int status, void *arg)
{
	(void)io;
	(void)status;
	(void)arg;
	cr_assert_fail("the callback of a refused submission ran");
}

Test(nfs_async_io, refused_submissions_never_call_back)
{
	struct rrr_nfs3 *n = start_and_mount(false);
	static uint8_t b[16];
	struct iovec one = {b, sizeof(b)}, many[RRR_XDR_PAYLOAD_MAX_IOV + 1];
	struct iovec big[2] = {{b, RRR_NFS3_MAX_DATA}, {b, 1}};
	for (unsigned i = 0; i < RRR_XDR_PAYLOAD_MAX_IOV + 1; i++)
		many[i] = one;
	struct rrr_nfs3_io io;
	memset(&io, 0, sizeof(io));
	io.fh = *rrr_nfs3_root(n);
	io.op = (enum rrr_nfs3_io_op)9;
	io.iov = &one;
	io.niov = 1;
	cr_assert_eq(rrr_nfs3_io_submit(n, &io, never, NULL), -EINVAL);
	cr_assert(strstr(rrr_last_error(), "unknown op"), "%s", rrr_last_error());
	io.op = RRR_NFS3_IO_WRITE;
	io.niov = 0;
	cr_assert_eq(rrr_nfs3_io_submit(n, &io, never, NULL), -EINVAL);
	cr_assert(strstr(rrr_last_error(), "iovecs"), "%s", rrr_last_error());
	io.iov = many;
	io.niov = RRR_XDR_PAYLOAD_MAX_IOV + 1;
	cr_assert_eq(rrr_nfs3_io_submit(n, &io, never, NULL), -EINVAL);
	io.op = RRR_NFS3_IO_READ;
	io.iov = big;
	io.niov = 2;
	cr_assert_eq(rrr_nfs3_io_submit(n, &io, never, NULL), -EINVAL);
	cr_assert(strstr(rrr_last_error(), "at most"), "%s", rrr_last_error());
	cr_assert_eq(rrr_nfs3_io_submit(n, &io, NULL, NULL), -EINVAL, "no callback");
	rrr_nfs3_umount(n);
}
