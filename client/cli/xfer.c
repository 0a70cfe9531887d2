/* SPDX-License-Identifier: MIT */
/*
 * client/cli/xfer.c - the data path of rrr-client get, cat and put: network
 * I/O and local file I/O as one pipeline.
 *
 * Normal operation. The file is cut into chunks of rsize (get) or wsize
 * (put) bytes. @qd worker threads each take the next chunk in file order
 * and move it with one synchronous READ or WRITE (so @qd calls are in
 * flight, spread round-robin over the mount's connections), while the
 * calling ("main") thread does the local side in file order:
 *
 *   get:  workers READ chunk i into the ring  ->  main write()s chunk i
 *   put:  main preads chunk i into the ring   ->  workers WRITE chunk i
 *
 * The two sides meet in a ring of 2 x qd slots: chunk i uses slot
 * i % nslots, and the slot passes to chunk i + nslots only when chunk i is
 * done on both sides. So the local file I/O of one chunk runs while the
 * next ones are on the wire, at most 2 x qd chunks sit between the two
 * sides, and the memory is bounded (2 x qd x rsize, 16 MiB at --qd 8),
 * allocated once and reused: no page faults on fresh memory in steady
 * state (the ring is asked for transparent huge pages, so even its first
 * touch costs a handful of faults). The ring starts one byte past a page
 * boundary on purpose, and @split cuts each call's payload into two
 * buffers, so the registration engine's hole handling is exercised.
 *
 * get with a direct descriptor (cli_xfer.dfd >= 0, main.c: a regular file
 * on a file system that takes 4 KiB aligned O_DIRECT): the ring is page
 * aligned and every whole chunk goes to the disk with pwrite() on the
 * O_DIRECT descriptor, never through the page cache; a short last chunk
 * goes through @fd. Copying into the page cache costs a fresh page per
 * 4 KiB, and on a VM whose host takes freed memory back a host fault each
 * (256 MiB measured on such a VM: buffered 1.0-1.25 s, direct 0.24 s). A refused direct write (EINVAL) turns the descriptor off and
 * the chunk goes through @fd.
 *
 * put from a mapped file (cli_xfer.map != NULL): the slots carry no
 * buffers; the WRITEs take their bytes straight from a read-only mapping
 * of the source, so the transport copies them once, from the page cache
 * into the socket, instead of pread() into the ring first. The main
 * thread then maps each chunk's pages ahead of the WRITE (reading them
 * from disk if they are not cached) and computes the checksum when asked.
 * Whether to map is the caller's choice (main.c: not for the verbs
 * provider, not with --split).
 *
 * Checksums: CRC32C (rrr_crc32c) only when @crc_on, computed by the main
 * thread in file order while later chunks are on the wire.
 *
 * put and the write verifier. UNSTABLE WRITEs must be committed, and a
 * server that restarted in between may have lost them; it says so with a
 * new write verifier. rrr_nfs3_write() does not return the verifier, so
 * the WRITEs are bracketed by COMMITs: one before the first WRITE (on the
 * freshly created, still empty file, so the server's fsync is cheap)
 * gives the verifier V0, and the final COMMIT must answer V0; any restart
 * in between changes it. If it does not match, the whole range is written
 * again once with FILE_SYNC, as rrr_nfs3_write_all() does.
 *
 * Recovery. The first error (a call's transport error or NFS status, or a
 * local I/O error) stops the pipeline: no new chunk is taken, the calls in
 * flight finish (their own timeouts bound that), the workers are joined,
 * and the error is returned with the library's sentence, copied in the
 * thread that saw it (rrr_last_error() is thread-local). get stops at the
 * first short chunk (end of file): @done is where the file ended.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rrr/provider.h>

#include "client/cli/cli.h"

#define HUGE_SZ	     (2u << 20)
#define WORKER_STACK (256u << 10)

enum slot_state {
	SLOT_FREE,  /* get: waiting for its READ; put: waiting to be loaded */
	SLOT_BUSY,  /* a worker has it on the wire */
	SLOT_READY, /* get: READ done, to be written out; put: loaded, to be sent */
};

struct slot {
	uint64_t idx; /* the chunk this slot belongs to now */
	enum slot_state state;
	size_t got;	   /* get: bytes the READ returned */
	pthread_cond_t cv; /* the worker of chunk idx waits here */
};

struct eng {
	struct cli_xfer *x;
	uint32_t chunk;
	uint64_t nchunks;
	unsigned nslots;
	struct slot *slots;
	uint8_t *ring;	/* nslots buffers of chunk bytes, or NULL (mapped) */
	void *ring_map; /* what to munmap */
	size_t ring_len;
	uint32_t stable; /* put: this pass's stability */
	pthread_mutex_t mu;
	pthread_cond_t cv_main; /* the main thread waits for a chunk */
	uint64_t next_claim;	/* next chunk a worker takes */
	bool stop;
	int rc;			  /* first call error */
	char emsg[256];		  /* its sentence */
	_Atomic uint64_t written; /* put: bytes acknowledged by WRITE replies */
};

static uint8_t *buf_of(struct eng *e, uint64_t i)
{
	if (e->x->map) /* put only: read, never written */
		return (uint8_t *)(uintptr_t)(e->x->map + i * e->chunk);
	return e->ring + (size_t)(i % e->nslots) * e->chunk;
}

static size_t len_of(struct eng *e, uint64_t i)
{
	uint64_t left = e->x->size - i * e->chunk;
	return left < e->chunk ? (size_t)left : e->chunk;
}

/* Stop the pipeline: workers take no new chunk, everyone wakes up. Called
 * with e->mu held. */
static void stop_locked(struct eng *e)
{
	e->stop = true;
	for (unsigned k = 0; k < e->nslots; k++)
		pthread_cond_broadcast(&e->slots[k].cv);
	pthread_cond_broadcast(&e->cv_main);
}

/* Record the first call error with a sentence (default: the calling
 * thread's rrr_last_error(), or the NFS status name) and stop. */
__attribute__((format(printf, 3, 4))) static void set_rc_msg(struct eng *e, int rc, const char *fmt,
							     ...)
{
	pthread_mutex_lock(&e->mu);
	if (e->rc == 0) {
		e->rc = rc;
		if (fmt) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(e->emsg, sizeof(e->emsg), fmt, ap);
			va_end(ap);
		} else {
			snprintf(e->emsg, sizeof(e->emsg), "%s",
				 rc < 0 ? rrr_last_error() : rrr_nfs3_strstat((uint32_t)rc));
		}
	}
	stop_locked(e);
	pthread_mutex_unlock(&e->mu);
}

/* The error of a library call just made on this thread: an NFS error is kept
 * as its positive nfsstat3 (rrr_nfs3_last_status()), the CLI's convention
 * for exit status 1 and the status name in the message. */
static void set_rc(struct eng *e, int rc)
{
	set_rc_msg(e, cli_nfs_rc(rc), NULL);
}

/* Record the first local I/O error and stop. */
static void local_error(struct eng *e, int err, const char *what)
{
	struct cli_xfer *x = e->x;
	pthread_mutex_lock(&e->mu);
	if (!x->lerr) {
		x->lerr = err ? err : EIO;
		x->lwhat = what;
	}
	stop_locked(e);
	pthread_mutex_unlock(&e->mu);
}

/* WRITE [off, off+len) from @p, re-sending what a short reply left. */
static int write_chunk(struct eng *e, uint64_t off, const uint8_t *p, size_t len)
{
	struct cli_xfer *x = e->x;
	while (len) {
		struct iovec iov[2] = {{(void *)(uintptr_t)p, len}};
		unsigned niov = 1;
		if (x->split && x->split < len) {
			iov[0].iov_len = x->split;
			iov[1].iov_base = (void *)(uintptr_t)(p + x->split);
			iov[1].iov_len = len - x->split;
			niov = 2;
		}
		uint32_t count = 0;
		int rc = rrr_nfs3_write(x->nfs, x->fh, off, iov, niov, e->stable, &count);
		if (rc) {
			set_rc(e, rc);
			return rc;
		}
		if (count == 0 || count > len) {
			set_rc_msg(e, -EIO, "the server wrote %u of %zu bytes at offset %llu",
				   count, len, (unsigned long long)off);
			return -EIO;
		}
		atomic_fetch_add_explicit(&e->written, count, memory_order_relaxed);
		off += count;
		p += count;
		len -= count;
	}
	return 0;
}

static void *worker(void *arg)
{
	struct eng *e = arg;
	struct cli_xfer *x = e->x;
	/* get: the slot must be free (chunk i - nslots written out);
	 * put: chunk i must be loaded. */
	enum slot_state want = x->put ? SLOT_READY : SLOT_FREE;
	for (;;) {
		pthread_mutex_lock(&e->mu);
		if (e->stop || e->next_claim >= e->nchunks) {
			pthread_mutex_unlock(&e->mu);
			return NULL;
		}
		uint64_t i = e->next_claim++;
		struct slot *s = &e->slots[i % e->nslots];
		while (!e->stop && !(s->idx == i && s->state == want))
			pthread_cond_wait(&s->cv, &e->mu);
		if (e->stop) {
			pthread_mutex_unlock(&e->mu);
			return NULL;
		}
		s->state = SLOT_BUSY;
		pthread_mutex_unlock(&e->mu);

		uint64_t off = i * e->chunk;
		size_t len = len_of(e, i), got = 0;
		if (x->put) {
			if (write_chunk(e, off, buf_of(e, i), len))
				return NULL;
		} else {
			int rc = rrr_nfs3_read_all(x->nfs, x->fh, off, buf_of(e, i), len, 1,
						   x->split, &got, NULL, NULL);
			if (rc) {
				set_rc(e, rc);
				return NULL;
			}
		}
		pthread_mutex_lock(&e->mu);
		if (x->put) {
			s->idx = i + e->nslots;
			s->state = SLOT_FREE;
		} else {
			s->got = got;
			s->state = SLOT_READY;
		}
		pthread_cond_broadcast(&e->cv_main);
		pthread_mutex_unlock(&e->mu);
	}
}

/* Wait until chunk @i's slot is in @state; false when stopped. */
static bool main_wait(struct eng *e, uint64_t i, enum slot_state state)
{
	struct slot *s = &e->slots[i % e->nslots];
	pthread_mutex_lock(&e->mu);
	while (!e->stop && !(s->idx == i && s->state == state))
		pthread_cond_wait(&e->cv_main, &e->mu);
	bool ok = !e->stop;
	pthread_mutex_unlock(&e->mu);
	return ok;
}

/* Hand chunk @i's slot on: to chunk i + nslots (get) or to a worker (put). */
static void main_release(struct eng *e, uint64_t i)
{
	struct slot *s = &e->slots[i % e->nslots];
	pthread_mutex_lock(&e->mu);
	if (e->x->put) {
		s->state = SLOT_READY;
	} else {
		s->idx = i + e->nslots;
		s->state = SLOT_FREE;
	}
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&e->mu);
}

/* Move bytes *@done .. @len of @p to (@wr) or from @fd: at @off + *@done
 * (pwrite, pread) when @pos, else at the file position (write); EINTR is
 * retried and *@done counts what moved. 0, or the errno that stopped it
 * (EIO: end of file, or nothing written). */
static int fd_all(int fd, bool wr, bool pos, uint8_t *p, size_t len, off_t off, size_t *done)
{
	while (*done < len) {
		size_t d = *done;
		ssize_t n = !wr	 ? pread(fd, p + d, len - d, off + (off_t)d)
			    : pos ? pwrite(fd, p + d, len - d, off + (off_t)d)
				  : write(fd, p + d, len - d);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		*done += (size_t)n;
	}
	return 0;
}

/* get: write the chunks out in file order. */
static void main_get(struct eng *e)
{
	struct cli_xfer *x = e->x;
	for (uint64_t i = 0; i < e->nchunks; i++) {
		if (!main_wait(e, i, SLOT_READY))
			return;
		uint8_t *p = buf_of(e, i);
		size_t got = e->slots[i % e->nslots].got, w = 0;
		off_t off = (off_t)(i * e->chunk);
		while (x->dfd >= 0 && w < got && !(((uintptr_t)p | got) % CLI_DIO_ALIGN)) {
			ssize_t n = pwrite(x->dfd, p + w, got - w, off + (off_t)w);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EINVAL) {
				close(x->dfd); /* not after all: buffered from here on */
				x->dfd = -1;
				break;
			}
			if (n <= 0) {
				local_error(e, n < 0 ? errno : EIO, "write to");
				return;
			}
			w += (size_t)n;
		}
		int err = x->fd >= 0 ? fd_all(x->fd, true, x->pos_io, p, got, off, &w) : 0;
		if (err) {
			local_error(e, err, "write to");
			return;
		}
		if (x->crc_on)
			x->crc = rrr_crc32c(x->crc, p, got);
		x->done += got;
		if (x->pg)
			cli_progress_update(x->pg, x->done);
		if (got < len_of(e, i)) /* end of file */
			return;
		main_release(e, i);
	}
}

/* Map the pages of a mapped chunk now (MADV_POPULATE_READ, Linux 5.14+),
 * reading them from disk if the source is not in the page cache, so the
 * transport's send path does not stop on page faults. Kernels without it
 * (EINVAL) fault the pages in on first touch instead; EFAULT/EIO mean the
 * file shrank or cannot be read. */
static bool populate(struct eng *e, const uint8_t *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	if (madvise((void *)a, (size_t)((uintptr_t)p + len - a), MADV_POPULATE_READ) == 0 ||
	    (errno != EFAULT && errno != EIO))
		return true;
	local_error(e, errno, "read");
	return false;
}

/* put: load the chunks in file order: pread into the ring, or populate
 * the mapping's pages, while the chunks before them are on the wire. */
static void main_put(struct eng *e)
{
	struct cli_xfer *x = e->x;
	for (uint64_t i = 0; i < e->nchunks; i++) {
		if (!main_wait(e, i, SLOT_FREE))
			return;
		uint64_t off = i * e->chunk;
		size_t len = len_of(e, i), got = 0;
		uint8_t *p = buf_of(e, i);
		if (x->map && !populate(e, p, len))
			return;
		int err = x->map ? 0 : fd_all(x->fd, false, true, p, len, (off_t)off, &got);
		if (err) {
			local_error(e, err, "read");
			return;
		}
		if (x->crc_on)
			x->crc = rrr_crc32c(x->crc, p, len);
		main_release(e, i);
		if (x->pg)
			cli_progress_update(x->pg, atomic_load(&e->written));
	}
}

/* @len bytes of anonymous memory, 2 MiB aligned and asked for huge pages. */
static void *ring_alloc(size_t len, size_t *maplen)
{
	size_t total = ((len + HUGE_SZ - 1) / HUGE_SZ) * HUGE_SZ;
	uint8_t *p =
	    mmap(NULL, total + HUGE_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + HUGE_SZ > a)
		munmap(a + total, (size_t)(p + HUGE_SZ - a));
#ifdef MADV_HUGEPAGE
	madvise(a, total, MADV_HUGEPAGE);
#endif
	*maplen = total;
	return a;
}

/* One pass over the whole range: start the workers, run the main side,
 * wait for the last call, join. Returns 0 or -errno when no thread could
 * be started. */
static int run_pass(struct eng *e)
{
	struct cli_xfer *x = e->x;
	e->next_claim = 0;
	e->stop = false;
	atomic_store(&e->written, 0);
	x->done = 0;
	x->crc = 0;
	for (unsigned k = 0; k < e->nslots; k++) {
		e->slots[k].idx = k;
		e->slots[k].state = SLOT_FREE;
		e->slots[k].got = 0;
	}
	unsigned nw = x->qd < e->nchunks ? x->qd : (unsigned)e->nchunks;
	if (nw == 0)
		return 0;
	pthread_t *th = calloc(nw, sizeof(*th));
	if (!th)
		return -ENOMEM;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, WORKER_STACK);
	unsigned started = 0;
	while (started < nw && pthread_create(&th[started], &at, worker, e) == 0)
		started++;
	pthread_attr_destroy(&at);
	if (started == 0) {
		free(th);
		return -EAGAIN;
	}
	if (x->put)
		main_put(e);
	else
		main_get(e);
	pthread_mutex_lock(&e->mu);
	while (x->put && !e->stop && atomic_load(&e->written) < x->size)
		pthread_cond_wait(&e->cv_main, &e->mu); /* the last WRITEs */
	stop_locked(e);
	pthread_mutex_unlock(&e->mu);
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	free(th);
	if (x->put)
		x->done = atomic_load(&e->written);
	return 0;
}

static int commit(struct eng *e, uint8_t verf[8])
{
	int rc = rrr_nfs3_commit(e->x->nfs, e->x->fh, verf);
	if (rc)
		set_rc(e, rc);
	return rc;
}

static void pass(struct eng *e)
{
	int rc = run_pass(e);
	if (rc)
		local_error(e, -rc, "start the transfer threads for");
}

int cli_xfer_run(struct cli_xfer *x)
{
	struct eng e;
	memset(&e, 0, sizeof(e));
	e.x = x;
	x->done = 0;
	x->crc = 0;
	x->rc = x->lerr = 0;
	x->lwhat = NULL;
	x->emsg[0] = '\0';
	if (x->qd == 0)
		x->qd = 1;
	e.chunk = x->put ? rrr_nfs3_wsize(x->nfs) : rrr_nfs3_rsize(x->nfs);
	if (e.chunk == 0)
		e.chunk = RRR_NFS3_MAX_DATA;
	e.nchunks = (x->size + e.chunk - 1) / e.chunk;
	e.nslots = 2 * x->qd;
	if (e.nslots > e.nchunks)
		e.nslots = e.nchunks ? (unsigned)e.nchunks : 1;
	e.stable = x->stable;
	e.slots = calloc(e.nslots, sizeof(*e.slots));
	if (e.slots && !x->map && e.nchunks) {
		/* +1: one byte past a page boundary, on purpose, unless the
		 * chunks go O_DIRECT */
		size_t skew = !x->put && x->dfd >= 0 ? 0 : 1;
		e.ring_map = ring_alloc((size_t)e.nslots * e.chunk + skew, &e.ring_len);
		e.ring = e.ring_map ? (uint8_t *)e.ring_map + skew : NULL;
	}
	if (!e.slots || (!x->map && e.nchunks && !e.ring)) {
		free(e.slots);
		x->lerr = ENOMEM;
		x->lwhat = "allocate the transfer buffers for";
		return 0;
	}
	pthread_mutex_init(&e.mu, NULL);
	pthread_cond_init(&e.cv_main, NULL);
	for (unsigned k = 0; k < e.nslots; k++)
		pthread_cond_init(&e.slots[k].cv, NULL);

	uint8_t v0[8], v[8];
	bool unstable = x->put && x->stable == RRR_NFS3_UNSTABLE && x->size;
	if (!unstable || commit(&e, v0) == 0) /* V0: see the top of this file */
		pass(&e);
	if (unstable && !e.rc && !x->lerr && commit(&e, v) == 0 && memcmp(v, v0, 8)) {
		/* The server restarted under us: write it all again, stably. */
		uint32_t crc = x->crc;
		e.stable = RRR_NFS3_FILE_SYNC;
		pass(&e);
		if (x->crc_on && x->crc != crc && !e.rc)
			local_error(&e, EIO, "read (it changed during the transfer)");
	}
	if (e.rc)
		snprintf(x->emsg, sizeof(x->emsg), "%s", e.emsg);
	pthread_cond_destroy(&e.cv_main);
	for (unsigned k = 0; k < e.nslots; k++)
		pthread_cond_destroy(&e.slots[k].cv);
	pthread_mutex_destroy(&e.mu);
	if (e.ring_map)
		munmap(e.ring_map, e.ring_len);
	free(e.slots);
	x->rc = e.rc;
	return x->rc;
}
