/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/helpers/io.h - the steps of an end-to-end registration test on
 * a struct loop (loop.h): post an I/O's REG_MR chain, invalidate it, have
 * the peer WRITE through its handles, and check where the bytes landed.
 * Each step asserts (Criterion) that it worked.
 */
#ifndef RRR_TESTS_REG_IO_H
#define RRR_TESTS_REG_IO_H

#include <stddef.h>
#include <stdint.h>

#include <rrr/reg_engine.h>

#include "loop.h"

/* Post @r's REG_MR chain on the client QP, its last WR signaled as @id,
 * and wait for that REG_MR's successful completion. */
void rio_post_reg(struct loop *l, struct rrr_reg_io *r, uint64_t id);
/* Invalidate @r through @pool's LOCAL_INV chain (its last WR @id), wait
 * for its successful completion, then rrr_reg_inv_done(); an @r with no
 * valid registration is only ended. */
void rio_local_inv(struct loop *l, struct rrr_mrpool *pool, struct rrr_reg_io *r, uint64_t id);
/* Peer: RDMA WRITE @src[0..) through each of the @nsegs @segs in turn (@src
 * registered on the peer's PD as @src_mr; unsignaled, wr_id 1), then a
 * signaled SEND of its first
 * 8 bytes as @id (SEND_WITH_INV of @inv_rkey when non-zero), so that when
 * the client's RECV completes every write has been placed. Only posted. */
void rio_peer_write_then_send(struct loop *l, const uint8_t *src, struct rrr_mr *src_mr,
			      const struct rrr_reg_seg *segs, uint32_t nsegs, uint32_t inv_rkey,
			      uint64_t id);
/* The @len bytes of @buf hold @src's bytes placed in order in the @n
 * entries of @sg (entries point into @buf) and @guard everywhere else. */
void rio_expect_placed(const uint8_t *buf, size_t len, uint8_t guard, const struct rrr_sg *sg,
		       unsigned n, const uint8_t *src);
/* The end of a test's fixture: disconnect and close @l, destroy @pool,
 * deregister @peer_mr and @client_mr. */
void rio_close(struct loop *l, struct rrr_mrpool *pool, struct rrr_mr *peer_mr,
	       struct rrr_mr *client_mr);

#endif
