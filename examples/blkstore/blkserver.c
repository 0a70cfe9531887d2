/* SPDX-License-Identifier: MIT */
/*
 * blkserver.c - the blkstore example server: an in-memory disk served
 * over RPC-over-RDMA (and TCP) with rrr.
 *
 *   blkserver [--host ADDR] [--rdma-port P] [--tcp-port P] [--provider soft|verbs]
 *             [--threads N] [--size-mib N] [--zero-copy]
 *
 * The disk is --size-mib MiB (default 64) of memory, zero at start. READ
 * and WRITE take 4 KiB .. 1 MiB at 4 KiB-aligned offsets. Port 0 =
 * ephemeral; the bound ports are printed as "blkserver: rdma port N tcp
 * port N boot X". SIGINT/SIGTERM stop it gracefully (counters printed).
 *
 * Handlers run on the library's worker threads, several at once: the disk
 * has a reader-writer lock. WRITE data arrives already pulled by RDMA READ
 * (or inline) and is copied into the disk under the write lock; with
 * --zero-copy a place function (rrr_svc_set_place) gives the library the
 * disk's own memory at the WRITE's offset, the data is pulled straight
 * there, and the handler copies nothing (over TCP, or for a WRITE small
 * enough to travel inline, it still copies). READ data
 * is copied out of the disk under the read lock into request memory
 * (rrr_svc_req_alloc, registered when the client offered a write chunk),
 * because the library sends it after the handler returns, when another
 * WRITE may already change the disk. With --zero-copy READ data is not
 * copied: the disk's own memory is handed to
 * rrr_svc_req_encode_payload_zc(), registered for that reply only and
 * written to the client from in place; no lock is held until the release
 * callback runs (it runs on this worker, which a WRITE waiting for the lock
 * would block), so a READ racing a WRITE of the same blocks may see part of
 * each, as with O_DIRECT on a block device. On exit the server prints its
 * counters and the CPU time it used ("blkserver: cpu_ms user U sys S").
 * Handlers return 0 or a negative errno (RRR_SVC_GARBAGE_ARGS for
 * arguments that do not decode).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <rrr/rrr.h>

#include "../common/example_svc.h"
#include "blk.h"

struct disk {
	pthread_rwlock_t lock;
	uint8_t *mem;
	uint64_t size;
	bool zero_copy;
};

/* --zero-copy: the library no longer reads the disk memory of a reply */
static void zc_release(void *arg)
{
	(void)arg;
}

/* blk_stat of an I/O at @off of @len bytes. */
static uint32_t check_io(const struct disk *d, uint64_t off, uint32_t len)
{
	if (!len || len > BLK_MAX_IO || len % BLK_SECTOR || off % BLK_SECTOR)
		return BLK_EINVAL;
	if (off > d->size || len > d->size - off)
		return BLK_ERANGE;
	return BLK_OK;
}

static int blk_info(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const struct disk *d = rrr_svc_req_program_ctx(req);

	(void)args;
	if (rrr_xdr_put_u32(res, BLK_OK) || rrr_xdr_put_u64(res, rrr_svc_req_boot_verifier(req)) ||
	    rrr_xdr_put_u64(res, d->size))
		return RRR_SVC_SYSTEM_ERR;
	return 0;
}

/* --zero-copy: the disk no longer waits for the library (nothing to do) */
static void place_release(void *arg, int status)
{
	(void)arg;
	(void)status;
}

/* --zero-copy: a WRITE's data goes straight to its blocks (no lock is held
 * while it arrives, as with O_DIRECT on a block device); a WRITE the
 * handler would refuse is declined, so nothing reaches the disk. */
static int blk_write_place(struct rrr_svc_req *req, struct rrr_xdr *args, uint32_t len,
			   struct rrr_svc_place *out)
{
	struct disk *d = rrr_svc_req_program_ctx(req);
	uint64_t off;

	if (!d->zero_copy || rrr_xdr_get_u64(args, &off) || check_io(d, off, len) != BLK_OK)
		return -EINVAL;
	out->iov[0] = (struct iovec){d->mem + off, len};
	out->niov = 1;
	out->release = place_release;
	return 0;
}

static int blk_write(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct disk *d = rrr_svc_req_program_ctx(req);
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;
	uint64_t off;
	uint32_t len, stat;

	if (rrr_xdr_get_u64(args, &off) ||
	    rrr_xdr_decode_payload(args, BLK_MAX_IO, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	stat = check_io(d, off, len);
	if (stat == BLK_OK && !(niov == 1 && iov[0].iov_base == d->mem + off)) {
		uint8_t *p = d->mem + off; /* not placed there already: copy */

		pthread_rwlock_wrlock(&d->lock);
		for (unsigned i = 0; i < niov; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
		pthread_rwlock_unlock(&d->lock);
	}
	if (rrr_xdr_put_u32(res, stat) || rrr_xdr_put_u64(res, rrr_svc_req_boot_verifier(req)))
		return RRR_SVC_SYSTEM_ERR;
	return 0;
}

static int blk_read(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct disk *d = rrr_svc_req_program_ctx(req);
	struct iovec out;
	uint64_t off;
	uint32_t len, stat;
	uint8_t *buf;

	if (rrr_xdr_get_u64(args, &off) || rrr_xdr_get_u32(args, &len))
		return RRR_SVC_GARBAGE_ARGS;
	stat = check_io(d, off, len);
	if (stat == BLK_OK && len > rrr_svc_req_max_payload(req))
		stat = BLK_EINVAL; /* the client offered less room */
	if (rrr_xdr_put_u32(res, stat) || rrr_xdr_put_u64(res, rrr_svc_req_boot_verifier(req)))
		return RRR_SVC_SYSTEM_ERR;
	if (stat != BLK_OK)
		return 0;
	if (d->zero_copy) {
		out = (struct iovec){d->mem + off, len};
		return rrr_svc_req_encode_payload_zc(req, res, &out, 1, len, zc_release, NULL);
	}
	buf = rrr_svc_req_alloc(req, len); /* lives until the reply is sent */
	if (!buf)
		return -ENOMEM;
	pthread_rwlock_rdlock(&d->lock);
	memcpy(buf, d->mem + off, len);
	pthread_rwlock_unlock(&d->lock);
	out = (struct iovec){buf, len};
	return rrr_xdr_encode_payload(res, &out, 1, len);
}

static const struct rrr_svc_proc blk_procs[BLK_NPROCS] = {
    [BLK_NULL] = {"null", ex_svc_null},
    [BLK_INFO] = {"info", blk_info},
    [BLK_READ] = {"read", blk_read},
    [BLK_WRITE] = {"write", blk_write},
};

/* --zero-copy: WRITE data pulled by RDMA READ straight into the disk. */
static int blk_zero_copy_setup(struct rrr_svc *svc)
{
	return rrr_svc_set_place(svc, BLK_PROG, BLK_VERS, BLK_WRITE, blk_write_place);
}

static void usage(void)
{
	printf("usage: blkserver [--host ADDR] [--rdma-port P] [--tcp-port P] "
	       "[--provider soft|verbs] [--threads N] [--size-mib N] [--zero-copy]\n"
	       "  port 0 = ephemeral, \"-\" = no listener of that kind\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"size-mib", required_argument, NULL, 's'},
	    {"zero-copy", no_argument, NULL, 'z'},
	    EX_SVC_LONGOPTS,
	};
	struct disk disk = {.size = 64ull << 20};
	struct rrr_svc_program prog = {
	    .prog = BLK_PROG,
	    .vers = BLK_VERS,
	    .procs = blk_procs,
	    .nprocs = BLK_NPROCS,
	    .ctx = &disk,
	};
	struct ex_svc_cfg cfg;
	struct rrr_svc *svc;
	struct rusage ru;
	int c, rc;

	ex_svc_cfg_init(&cfg, BLK_MAX_IO);
	while ((c = ex_svc_getopt(argc, argv, lo, &cfg)) != -1) {
		switch (c) {
		case 's':
			disk.size = (uint64_t)strtoull(optarg, NULL, 0) << 20;
			break;
		case 'z':
			disk.zero_copy = true;
			break;
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (!disk.size || disk.size > (16ull << 30)) {
		fprintf(stderr, "blkserver: --size-mib must be 1 .. 16384\n");
		return 2;
	}
	disk.mem = calloc(1, disk.size);
	if (!disk.mem || pthread_rwlock_init(&disk.lock, NULL)) {
		fprintf(stderr, "blkserver: no memory for a %llu MiB disk\n",
			(unsigned long long)(disk.size >> 20));
		return 1;
	}

	if (disk.zero_copy)
		cfg.setup = blk_zero_copy_setup; /* WRITE data placed in the disk */
	if (ex_svc_start("blkserver", &cfg, &prog, &svc))
		return 1;
	printf("blkserver: rdma port %u tcp port %u boot %016llx\n", cfg.rp, cfg.tp,
	       (unsigned long long)rrr_svc_boot_verifier(svc));
	fflush(stdout);
	rc = ex_svc_run("blkserver", svc);
	getrusage(RUSAGE_SELF, &ru);
	printf("blkserver: cpu_ms user %ld sys %ld\n",
	       ru.ru_utime.tv_sec * 1000L + ru.ru_utime.tv_usec / 1000L,
	       ru.ru_stime.tv_sec * 1000L + ru.ru_stime.tv_usec / 1000L);
	rrr_svc_destroy(svc);
	free(disk.mem);
	return rc ? 1 : 0;
}
