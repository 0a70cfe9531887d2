/* SPDX-License-Identifier: MIT */
/*
 * blkclient.c - the blkstore example client: writes a region of the disk
 * at queue depth N with asynchronous calls, reads it back into scatterlists
 * with holes, verifies every byte and every hole, and survives a server
 * restart.
 *
 *   blkclient [--transport rdma|tcp] [--provider soft|verbs] --host H --port P
 *             [--loop lib|app] [--model gaps|page_list] [--mib N] [--qd N]
 *             [--passes N] [--read-passes N] [--until-restart SECONDS]
 *
 * One pass writes --mib MiB (default 16) from offset 0 in I/Os of 4 KiB ..
 * 1 MiB (a fixed cycle of sizes), --qd (default 8) in flight, then reads it
 * back the same way. A READ lands in a scatterlist with holes: pieces of
 * 4 KiB .. 64 KiB, each followed by a 4 KiB hole filled with a canary that
 * must survive. --read-passes N reads the region N more times after the
 * last pass (verified too; for measuring a server's READ path). Exit
 * status: 0 verified, 1 failure, 2 usage.
 *
 * Your loop or ours (--loop): "lib" lets completions run on the library's
 * progress thread (the default of rrr_clnt); "app" creates the client with
 * opts.app_completions and runs them here, in this thread's poll() loop on
 * rrr_clnt_fd(). Either way a completion submits the slot's next I/O.
 *
 * Registration models (--model, RDMA on the soft provider): "gaps" (the
 * soft default: any list is one registration) or "page_list" (soft
 * behaves like an FRWR NIC: whole pages only). The pieces are page-aligned
 * and whole pages, so both need one registration per 256 pages, and a
 * READ's 16 pieces stay within max_segs (16) on either.
 *
 * Restarts. The disk lives in the server's memory, so a restarted server
 * has lost everything written. By default the client waits through the
 * outage: calls in flight are re-sent after the reconnect (the library's
 * hard mode). The connection events (opts.conn_cb) say that the connection
 * was lost and re-established; the boot verifier in every reply, and an
 * INFO call after a reconnect, say whether the server is a new instance.
 * If it is, the pass is repeated from the first WRITE. --until-restart
 * keeps making passes after the first until a restart was handled and a
 * later pass verified (the test script kills and restarts the server).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rrr/rrr.h>

#include "../common/example_clnt.h"
#include "blk.h"

#define MAX_QD	   64u
#define MAX_PIECES 16u
#define CANARY	   0xa5u

static const uint32_t io_sizes[] = {4096, 65536, 1u << 20, 12288, 262144, 131072, 524288, 8192};

struct io_res {
	uint32_t stat;
	uint64_t boot;
};

struct io {
	struct rrr_call call;
	struct job *job;
	uint64_t off;
	uint32_t len;
	struct iovec iov[MAX_PIECES];
	unsigned npieces;
	uint8_t *sink; /* READ: pieces and holes */
	struct io_res res;
};

struct job {
	struct rrr_clnt *clnt;
	bool app_loop;
	bool reading;
	const uint8_t *src; /* the pattern, the whole region */
	uint64_t total, next_off;
	unsigned inflight;
	unsigned io_count; /* picks the next size */
	uint64_t boot;	   /* the server instance we wrote to */
	bool boot_changed; /* a reply came from another instance */
	unsigned mismatches;
	int error; /* a failed call: stop */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static atomic_bool g_reconnected;

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)((off * 2654435761u) >> 13 ^ off >> 12);
}

static int enc_write(struct rrr_xdr *x, const void *a)
{
	const struct io *io = a;
	int rc = rrr_xdr_put_u64(x, io->off);

	/* the data is call.payload: declared there, placed here */
	return rc ? rc : rrr_xdr_encode_payload(x, NULL, 0, 0);
}

static int enc_read(struct rrr_xdr *x, const void *a)
{
	const struct io *io = a;
	int rc = rrr_xdr_put_u64(x, io->off);

	return rc ? rc : rrr_xdr_put_u32(x, io->len);
}

static int dec_res(struct rrr_xdr *x, void *r)
{
	struct io *io = r;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;
	uint32_t len;
	int rc = rrr_xdr_get_u32(x, &io->res.stat);

	if (!rc)
		rc = rrr_xdr_get_u64(x, &io->res.boot);
	if (!rc && io->call.proc == BLK_READ && io->res.stat == BLK_OK) {
		/* the data is already in the sink (RDMA WRITE) or copied
		 * there (inline, TCP): only the length is checked */
		rc = rrr_xdr_decode_payload(x, BLK_MAX_IO, &len, iov, &niov);
		if (!rc && len != io->len)
			rc = -EBADMSG;
	}
	return rc;
}

/* READ into pieces of up to a 16th of the I/O (at least 4 KiB), each
 * followed by a 4 KiB hole holding the canary. */
static void build_sink(struct io *io)
{
	uint32_t piece = io->len / MAX_PIECES, left = io->len;
	uint8_t *p = io->sink;

	piece = (piece + BLK_SECTOR - 1) / BLK_SECTOR * BLK_SECTOR;
	if (piece < BLK_SECTOR)
		piece = BLK_SECTOR;
	io->npieces = 0;
	while (left) {
		uint32_t n = left < piece ? left : piece;

		io->iov[io->npieces++] = (struct iovec){p, n};
		memset(p + n, CANARY, BLK_SECTOR);
		p += n + BLK_SECTOR;
		left -= n;
	}
}

/* Every byte of the pieces as written, every hole untouched. */
static bool verify(const struct io *io)
{
	uint64_t off = io->off;

	for (unsigned i = 0; i < io->npieces; i++) {
		const uint8_t *p = io->iov[i].iov_base;

		for (size_t j = 0; j < io->iov[i].iov_len; j++)
			if (p[j] != pattern(off + j))
				return false;
		for (size_t j = 0; j < BLK_SECTOR; j++)
			if (p[io->iov[i].iov_len + j] != CANARY)
				return false;
		off += io->iov[i].iov_len;
	}
	return true;
}

static void io_done(struct rrr_call *call, int status, void *arg);

/* Submit the next I/O of the pass on @io, if any (job lock held). */
static int submit_next(struct job *j, struct io *io)
{
	uint32_t len;
	int rc;

	if (j->error || j->next_off >= j->total)
		return 0;
	len = io_sizes[j->io_count++ % (sizeof(io_sizes) / sizeof(io_sizes[0]))];
	if (len > j->total - j->next_off)
		len = (uint32_t)(j->total - j->next_off);
	io->off = j->next_off;
	io->len = len;
	j->next_off += len;
	memset(&io->call, 0, sizeof(io->call));
	io->call.prog = BLK_PROG;
	io->call.vers = BLK_VERS;
	io->call.args = io;
	io->call.decode = dec_res;
	io->call.res = io;
	if (j->reading) {
		build_sink(io);
		io->call.proc = BLK_READ;
		io->call.encode = enc_read;
		io->call.ddp = RRR_DDP_FROM_SERVER;
		io->call.idempotent = true;
	} else {
		io->iov[0] = (struct iovec){(void *)(j->src + io->off), len};
		io->npieces = 1;
		io->call.proc = BLK_WRITE;
		io->call.encode = enc_write;
		io->call.ddp = RRR_DDP_TO_SERVER;
	}
	io->call.payload = io->iov;
	io->call.npayload = io->npieces;
	j->inflight++;
	rc = rrr_clnt_call_async(j->clnt, &io->call, io_done, io);
	if (rc) { /* the callback will not run */
		j->inflight--;
		fprintf(stderr, "blkclient: submit failed: %s (%s)\n", io->call.error,
			strerror(-rc));
		j->error = rc;
	}
	return rc;
}

static void io_done(struct rrr_call *call, int status, void *arg)
{
	struct io *io = arg;
	struct job *j = io->job;

	pthread_mutex_lock(&j->lock);
	j->inflight--;
	if (status) {
		fprintf(stderr, "blkclient: %s at %llu failed: %s (%s)\n",
			call->proc == BLK_READ ? "READ" : "WRITE", (unsigned long long)io->off,
			call->error, strerror(-status));
		j->error = status;
	} else if (io->res.stat != BLK_OK) {
		fprintf(stderr, "blkclient: the server refused %llu+%u: blk_stat %u\n",
			(unsigned long long)io->off, io->len, io->res.stat);
		j->error = -EIO;
	} else {
		if (io->res.boot != j->boot)
			j->boot_changed = true; /* another server instance */
		if (j->reading && !verify(io))
			j->mismatches++;
		submit_next(j, io);
	}
	if (!j->inflight)
		pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* Run one phase (all WRITEs or all READs) at depth @qd. */
static int run_phase(struct job *j, struct io *ios, unsigned qd, bool reading)
{
	pthread_mutex_lock(&j->lock);
	j->reading = reading;
	j->next_off = 0;
	for (unsigned i = 0; i < qd && !j->error; i++)
		submit_next(j, &ios[i]);
	if (!j->app_loop) {
		/* ours: completions run on the library's thread */
		while (j->inflight)
			pthread_cond_wait(&j->cond, &j->lock);
		pthread_mutex_unlock(&j->lock);
		return j->error;
	}
	/* yours: this thread polls the client's fd and runs completions */
	while (j->inflight) {
		struct pollfd pfd = {.fd = rrr_clnt_fd(j->clnt), .events = POLLIN};

		pthread_mutex_unlock(&j->lock);
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			return -errno;
		if (rrr_clnt_run_completions(j->clnt, 0) < 0)
			return -EIO;
		pthread_mutex_lock(&j->lock);
	}
	pthread_mutex_unlock(&j->lock);
	return j->error;
}

static int dec_info(struct rrr_xdr *x, void *r)
{
	uint64_t *v = r; /* stat, boot, size */
	uint32_t stat;

	if (rrr_xdr_get_u32(x, &stat) || stat != BLK_OK || rrr_xdr_get_u64(x, &v[0]) ||
	    rrr_xdr_get_u64(x, &v[1]))
		return -EBADMSG;
	return 0;
}

/* INFO: the server's boot verifier and disk size. */
static int info(struct rrr_clnt *c, uint64_t *boot, uint64_t *size)
{
	struct rrr_call call = {.prog = BLK_PROG, .vers = BLK_VERS, .proc = BLK_INFO};
	uint64_t v[2];
	int rc;

	call.decode = dec_info;
	call.res = v;
	rc = rrr_clnt_call(c, &call);
	if (rc) {
		fprintf(stderr, "blkclient: INFO failed: %s\n", call.error);
		return rc;
	}
	*boot = v[0];
	*size = v[1];
	return 0;
}

static void on_conn(struct rrr_clnt *c, const struct rrr_clnt_conn_event *ev, void *arg)
{
	(void)c;
	(void)arg;
	if (ev->type == RRR_CLNT_LOST) {
		printf("blkclient: connection lost (generation %llu): %s\n",
		       (unsigned long long)ev->generation, strerror(-ev->reason));
	} else if (ev->type == RRR_CLNT_RECONNECTED) {
		printf("blkclient: connection re-established (generation %llu)\n",
		       (unsigned long long)ev->generation);
		atomic_store(&g_reconnected, true); /* ask who answers, after the pass */
	}
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	printf("usage: blkclient [--transport rdma|tcp] [--provider soft|verbs] --host H --port P\n"
	       "                 [--loop lib|app] [--model gaps|page_list] [--mib N] [--qd N]\n"
	       "                 [--passes N] [--read-passes N] [--until-restart SECONDS]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"loop", required_argument, NULL, 'l'},	 {"model", required_argument, NULL, 'm'},
	    {"mib", required_argument, NULL, 'M'},	 {"qd", required_argument, NULL, 'q'},
	    {"passes", required_argument, NULL, 'n'},	 {"until-restart", required_argument, NULL, 'u'},
	    {"read-passes", required_argument, NULL, 'R'}, EX_CLNT_LONGOPTS,
	};
	const char *loop = "lib", *model = "gaps";
	unsigned qd = 8, passes = 1, restarts = 0, redo = 0, done = 0, rpasses = 0;
	bool verified_after_restart = false;
	double until = 0, deadline = 0;
	uint64_t mib = 16, size = 0;
	struct rrr_clnt_opts o;
	struct job j = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct io *ios;
	uint8_t *src;
	int c, rc;

	rrr_clnt_opts_init(&o);
	while ((c = ex_clnt_getopt(argc, argv, lo, &o)) != -1) {
		switch (c) {
		case 'l': loop = optarg; break;
		case 'm': model = optarg; break;
		case 'M': mib = strtoull(optarg, NULL, 0); break;
		case 'q': qd = (unsigned)atoi(optarg); break;
		case 'n': passes = (unsigned)atoi(optarg); break;
		case 'u': until = atof(optarg); break;
		case 'R': rpasses = (unsigned)atoi(optarg); break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (!o.host || !qd || qd > MAX_QD || !mib || mib > 1024 || !passes ||
	    (strcmp(loop, "lib") && strcmp(loop, "app")) ||
	    (strcmp(model, "gaps") && strcmp(model, "page_list"))) {
		usage();
		return 2;
	}
	j.app_loop = !strcmp(loop, "app");
	o.app_completions = j.app_loop;
	o.conn_cb = on_conn;
	if (!strcmp(model, "page_list"))
		o.provider_opts = "map_model=page_list"; /* soft: like an FRWR NIC */
	rc = rrr_clnt_create(&o, &j.clnt);
	if (rc) {
		fprintf(stderr, "blkclient: %s\n", rrr_last_error());
		return 1;
	}
	j.total = mib << 20;
	src = malloc(j.total);
	ios = calloc(qd, sizeof(*ios));
	if (!src || !ios)
		return 1;
	for (uint64_t i = 0; i < j.total; i++)
		src[i] = pattern(i);
	j.src = src;
	for (unsigned i = 0; i < qd; i++) {
		ios[i].job = &j;
		/* up to 16 pieces and 16 holes of 4 KiB around 1 MiB */
		ios[i].sink = aligned_alloc(4096, BLK_MAX_IO + (MAX_PIECES + 1) * BLK_SECTOR);
		if (!ios[i].sink)
			return 1;
	}
	if (info(j.clnt, &j.boot, &size))
		return 1;
	if (size < j.total) {
		fprintf(stderr, "blkclient: the disk has %llu MiB, fewer than --mib\n",
			(unsigned long long)(size >> 20));
		return 1;
	}
	printf("blkclient: server boot %016llx, %llu MiB disk; %llu MiB per pass at QD %u "
	       "(loop %s, model %s)\n",
	       (unsigned long long)j.boot, (unsigned long long)(size >> 20),
	       (unsigned long long)mib, qd, loop, model);
	fflush(stdout);

	/* --until-restart: on until a pass after a restart verified */
	while (done < passes || (until > 0 && !verified_after_restart)) {
		double t0 = now_s();

		j.boot_changed = false;
		j.mismatches = 0;
		rc = run_phase(&j, ios, qd, false);
		if (!rc)
			rc = run_phase(&j, ios, qd, true);
		if (rc)
			break;
		if (atomic_exchange(&g_reconnected, false)) {
			uint64_t b;

			rc = info(j.clnt, &b, &size);
			if (rc)
				break;
			if (b != j.boot)
				j.boot_changed = true;
		}
		if (j.boot_changed) {
			uint64_t b;

			/* a new instance answered: what it holds is not ours */
			rc = info(j.clnt, &b, &size);
			if (rc)
				break;
			printf("blkclient: server restarted (boot %016llx -> %016llx): its disk is "
			       "empty, writing again\n",
			       (unsigned long long)j.boot, (unsigned long long)b);
			fflush(stdout);
			j.boot = b;
			restarts++;
			if (++redo > 5) {
				fprintf(stderr, "blkclient: the server keeps restarting\n");
				rc = -EIO;
				break;
			}
			continue;
		}
		if (j.mismatches) {
			fprintf(stderr, "blkclient: %u READs did not return what was written\n",
				j.mismatches);
			rc = -EIO;
			break;
		}
		done++;
		redo = 0;
		verified_after_restart = restarts > 0;
		printf("blkclient: pass %u verified (%.0f MiB/s)\n", done,
		       2.0 * (double)mib / (now_s() - t0));
		if (until > 0 && done == 1) {
			printf("blkclient: waiting for a server restart\n");
			deadline = now_s() + until;
		}
		fflush(stdout);
		if (until > 0 && !restarts && now_s() > deadline) {
			fprintf(stderr, "blkclient: no server restart within %.0f s\n", until);
			rc = -ETIMEDOUT;
			break;
		}
	}
	for (unsigned i = 0; !rc && i < rpasses; i++) {
		double t0 = now_s();

		j.mismatches = 0;
		rc = run_phase(&j, ios, qd, true);
		if (!rc && (j.mismatches || j.boot_changed)) {
			fprintf(stderr, "blkclient: read pass %u did not verify\n", i + 1);
			rc = -EIO;
		}
		if (!rc)
			printf("blkclient: read pass %u verified (%.0f MiB/s)\n", i + 1,
			       (double)mib / (now_s() - t0));
	}
	ex_clnt_print_stats("blkclient", j.clnt);
	if (!rc)
		printf("blkclient: ok: %u passes verified, %u restart(s) handled\n", done, restarts);
	rrr_clnt_destroy(j.clnt);
	for (unsigned i = 0; i < qd; i++)
		free(ios[i].sink);
	free(ios);
	free(src);
	return rc ? 1 : 0;
}
