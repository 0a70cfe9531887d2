/* SPDX-License-Identifier: MIT */
/*
 * blk.h - the blkstore protocol: a block service on its own ONC RPC
 * program, over RPC-over-RDMA (or TCP) with rrr.
 *
 *   INFO   void                          -> blk_stat, hyper boot, hyper size
 *   READ   hyper offset, unsigned count  -> blk_stat, hyper boot [, opaque data<>*]
 *   WRITE  hyper offset, opaque data<>*  -> blk_stat, hyper boot
 *
 * "*" marks the DDP-eligible item (RFC 8166 section 6): the data of READ
 * and WRITE, placed by RDMA straight into / pulled straight from the
 * client's buffers. Every reply carries the server's boot verifier
 * (rrr_svc_req_boot_verifier): the disk lives in the server's memory, so a
 * client that sees a new verifier knows everything it wrote before is gone.
 * Offsets and counts are multiples of 4 KiB; one I/O is 4 KiB .. 1 MiB.
 */
#ifndef BLK_H
#define BLK_H

#include <stdint.h>

#define BLK_PROG   0x20000201u /* user-defined range starts at 0x20000000 */
#define BLK_VERS   1u
#define BLK_SECTOR 4096u
#define BLK_MAX_IO (1u << 20)

enum { BLK_NULL = 0, BLK_INFO = 1, BLK_READ = 2, BLK_WRITE = 3, BLK_NPROCS = 4 };

enum blk_stat {
	BLK_OK = 0,
	BLK_EINVAL = 1, /* not a multiple of 4 KiB, or 0 / more than 1 MiB */
	BLK_ERANGE = 2, /* past the end of the disk */
};

#endif /* BLK_H */
