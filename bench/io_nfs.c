/* SPDX-License-Identifier: MIT */
/*
 * bench/io_nfs.c - NFS side of rrr-bench io.
 *
 * Placeholder while the client/server libraries and the NFSv3 client are
 * being written: every NFS mode reports -ENOSYS, so `rrr-bench io --modes
 * tcp` (the plain TCP baseline) already works.
 */
#include <errno.h>
#include <stddef.h>

#include "io_nfs.h"

int rrr__bench_io_nfs_setup(const struct io_nfs_cfg *cfg, struct io_nfs **out)
{
	(void)cfg;
	*out = NULL;
	return -ENOSYS;
}

void rrr__bench_io_nfs_teardown(struct io_nfs *nfs)
{
	(void)nfs;
}

const char *rrr__bench_io_nfs_error(void)
{
	return "the NFSv3 client library is not built into this rrr-bench yet";
}

int rrr__bench_io_nfs_run(struct io_nfs *nfs, enum io_mode mode, bool write, uint64_t size,
			  unsigned qd, double seconds, double warmup, struct io_result *out)
{
	(void)nfs;
	(void)mode;
	(void)write;
	(void)size;
	(void)qd;
	(void)seconds;
	(void)warmup;
	(void)out;
	return -ENOSYS;
}
