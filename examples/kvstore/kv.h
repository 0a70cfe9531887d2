/* SPDX-License-Identifier: MIT */
/*
 * kv.h - the "kvstore" example RPC program: a tiny key-value service that
 * shows how to embed rrr in a protocol of your own. Values are
 * DDP-eligible, so on RPC-over-RDMA they move by RDMA READ (PUT) and
 * RDMA WRITE (GET) instead of being copied through the inline messages.
 *
 *   program KV_PROG (0x20000200, user range) version 1:
 *     0 NULL  void                              -> void
 *     1 PUT   string key<255>, opaque value<>*   -> kv_stat
 *     2 GET   string key<255>                    -> kv_stat [, opaque value<>*]
 *     3 DEL   string key<255>                    -> kv_stat
 *   (* DDP-eligible: encoded with rrr_xdr_encode_payload())
 */
#ifndef KV_H
#define KV_H

#include <stdint.h>

#define KV_PROG	     0x20000200u
#define KV_VERS	     1u
#define KV_MAX_KEY   255u
#define KV_MAX_VALUE (1u << 20)

enum kv_proc { KV_NULL = 0, KV_PUT = 1, KV_GET = 2, KV_DEL = 3, KV_NPROCS = 4 };
enum kv_stat { KV_OK = 0, KV_NOENT = 1, KV_TOOBIG = 2, KV_NOSPC = 3 };

#endif
