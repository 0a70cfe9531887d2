/* SPDX-License-Identifier: MIT */
/*
 * server/fs/write_data.c - how a WRITE's data reaches the file, for
 * nfs3_proc.c's WRITE (its fast path on the worker and its slow path as the
 * caller): the iovecs the library decoded (pulled through the read chunk
 * on RDMA) are written with pwritev(), buffered or direct, then synced as
 * the call's stable_how asks; the reply's count, committed and verifier
 * are filled here. The essay on direct writes is below, beside the code.
 *
 * Recovery: a short or failed write is the reply's status (as errno to
 * nfsstat3, status.c); a direct write the file system refuses (EINVAL) is
 * redone buffered. Nothing here is kept between calls but each worker's
 * bounce buffer (freed when the thread exits).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fs/fs.h"

/* Trim WRITE's iovecs to @count bytes into @iov; returns how many. */
static unsigned write_iov(const struct rrr_nfs3_write_args *a, uint32_t count,
			  struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV])
{
	unsigned niov = 0;
	size_t left = count;
	for (unsigned i = 0; i < a->niov && i < RRR_XDR_PAYLOAD_MAX_IOV && left; i++) {
		iov[niov] = a->iov[i];
		if (iov[niov].iov_len > left)
			iov[niov].iov_len = left;
		left -= iov[niov].iov_len;
		niov++;
	}
	return niov;
}

/*
 * Direct writes. Copying a large WRITE into the page cache costs the server
 * a copy per byte and a fresh page-cache page per 4 KiB (on a VM whose host
 * takes freed guest memory back, a host fault per page: buffered writes of
 * new files ran at 214-274 MB/s on the 2-vCPU VM of docs/benchmarks.md, the
 * disk with O_DIRECT at 1.1 GB/s). A WRITE of new data (past the end of
 * the file or into a hole) of at least ex->direct_min bytes whose offset
 * and length are FS_DIO_ALIGN aligned goes through a second descriptor
 * opened with O_DIRECT, never through the page cache: straight from the
 * receive buffer when its buffers are aligned too (the RDMA transport
 * places read-chunk data on a page boundary for this), else (TCP) after a
 * copy into the worker's aligned bounce buffer (up to FS_DIO_BOUNCE_MAX). The kernel
 * keeps direct and buffered I/O of a file coherent (a direct write writes
 * back and drops cached pages of its range), so READs, smaller WRITEs and
 * other clients see the same bytes. Files whose file system reports no
 * direct-I/O alignment (statx STATX_DIOALIGN), or one coarser than
 * FS_DIO_ALIGN, are written buffered; a direct write that fails with
 * EINVAL is redone buffered. The data is on the device when the reply
 * goes (stronger than UNSTABLE asks); COMMIT still fsyncs the metadata.
 */
#define FS_DIO_ALIGN 4096u
/* Largest unaligned WRITE copied into a worker's bounce buffer for O_DIRECT. */
#define FS_DIO_BOUNCE_MAX (4u << 20)

/* Every buffer of the first @count bytes FS_DIO_ALIGN aligned (address, length)? */
static bool buffers_aligned(const struct rrr_nfs3_write_args *a, uint32_t count)
{
	size_t left = count;
	for (unsigned i = 0; i < a->niov && i < RRR_XDR_PAYLOAD_MAX_IOV && left; i++) {
		size_t len = a->iov[i].iov_len < left ? a->iov[i].iov_len : left;
		if ((uintptr_t)a->iov[i].iov_base % FS_DIO_ALIGN || len % FS_DIO_ALIGN)
			return false;
		left -= len;
	}
	return left == 0;
}

/* The calling worker's bounce buffer of at least @len bytes (aligned, kept
 * for the thread's life, freed at its exit), or NULL. */
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
struct bounce {
	size_t len;
	uint8_t *p;
};

static void bounce_free(void *v)
{
	struct bounce *b = v;
	free(b->p);
	free(b);
}

static void bounce_init(void)
{
	if (pthread_key_create(&bounce_key, bounce_free))
		bounce_key = (pthread_key_t)-1;
}

static uint8_t *bounce_get(size_t len)
{
	pthread_once(&bounce_once, bounce_init);
	if (bounce_key == (pthread_key_t)-1)
		return NULL;
	struct bounce *b = pthread_getspecific(bounce_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(bounce_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->len < len) {
		void *p;
		if (posix_memalign(&p, FS_DIO_ALIGN, FS_DIO_BOUNCE_MAX))
			return NULL;
		free(b->p);
		b->p = p;
		b->len = FS_DIO_BOUNCE_MAX;
	}
	return b->p;
}

bool fs_write_direct_eligible(const struct fs_export *ex, const struct rrr_nfs3_write_args *a,
			    uint32_t count)
{
	return ex->direct_min && count >= ex->direct_min && !(a->offset % FS_DIO_ALIGN) &&
	       !(count % FS_DIO_ALIGN) && (count <= FS_DIO_BOUNCE_MAX || buffers_aligned(a, count));
}

/* Does [off, off + count) of @fd (size @size) hold no data yet: past the end
 * of the file, or a hole? Only new data goes direct: an overwrite of data
 * the page cache may hold stays a copy into those pages. lseek() moves the
 * shared file offset, which no caller uses (all I/O is positional). */
bool fs_write_new_data(int fd, uint64_t off, uint32_t count, off_t size)
{
	if (off + count > (uint64_t)size)
		return true;
	off_t d = lseek(fd, (off_t)off, SEEK_DATA);
	return (d < 0 && errno == ENXIO) || (d >= 0 && (uint64_t)d >= off + count);
}

/* An O_DIRECT descriptor for @o if its file system takes FS_DIO_ALIGN
 * aligned direct I/O; -1 otherwise (write buffered). */
int fs_write_open_direct(const struct fs_export *ex, const struct fs_obj *o)
{
	int fd = fs_open_data(ex, o, O_WRONLY | O_DIRECT);
	struct statx sx;
	if (fd < 0)
		return -1;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN) || !sx.stx_dio_mem_align ||
	    !sx.stx_dio_offset_align || FS_DIO_ALIGN % sx.stx_dio_mem_align ||
	    FS_DIO_ALIGN % sx.stx_dio_offset_align) {
		close(fd);
		return -1;
	}
	return fd;
}

/* pwritev (through @dfd when >= 0, else @fd), then the sync @a->stable asks
 * for; fills count/committed/verf. */
void fs_write_data(struct fs_export *ex, int fd, int dfd, const struct rrr_nfs3_write_args *a,
		       uint32_t count, struct rrr_nfs3_write_res *r)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = write_iov(a, count, iov);
	ssize_t n = -1;
	if (dfd >= 0) {
		uint8_t *b = NULL;
		if (!buffers_aligned(a, count) && (b = bounce_get(count)) != NULL) {
			/* one copy into a hot, aligned buffer still beats one into
			 * fresh page-cache pages (see "Direct writes") */
			size_t o = 0;
			for (unsigned i = 0; i < niov; i++) {
				memcpy(b + o, iov[i].iov_base, iov[i].iov_len);
				o += iov[i].iov_len;
			}
			iov[0] = (struct iovec){.iov_base = b, .iov_len = o};
			niov = 1;
			atomic_fetch_add(&ex->direct_bounced, 1);
		}
		if (b || buffers_aligned(a, count))
			n = pwritev(dfd, iov, (int)niov, (off_t)a->offset);
		if (n >= 0)
			atomic_fetch_add(&ex->direct_writes, 1);
		else if (b) {
			/* redo buffered from the caller's buffers */
			niov = write_iov(a, count, iov);
			errno = EINVAL;
		} else if (!buffers_aligned(a, count))
			errno = EINVAL;
	}
	if (n < 0 && (dfd < 0 || errno == EINVAL))
		n = count ? pwritev(fd, iov, (int)niov, (off_t)a->offset) : 0;
	if (n < 0) {
		r->status = fs_errno_to_stat(errno);
		return;
	}
	r->count = (uint32_t)n;
	r->committed = a->stable;
	int rc = 0;
	if (a->stable == RRR_NFS3_FILE_SYNC)
		rc = fsync(fd);
	else if (a->stable == RRR_NFS3_DATA_SYNC)
		rc = fdatasync(fd);
	if (rc < 0)
		r->status = fs_errno_to_stat(errno);
	memcpy(r->verf, ex->write_verf, 8);
}

/*
 * WRITE through the descriptor cache: fstat (pre-op attributes, and a file
 * that lost its last link goes to the slow path before any byte is
 * written), pwritev, fstat. Returns 0 with @r filled, 1 for the slow path
 * (also when a direct-eligible WRITE finds no O_DIRECT descriptor: the slow
 * path opens one).
 */
