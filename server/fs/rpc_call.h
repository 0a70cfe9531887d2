/* SPDX-License-Identifier: MIT */
/*
 * server/fs/rpc_call.h - the few ONC RPC calls rrr-server makes itself
 * (rpc_call.c): to the local rpcbind, and to a client's rpcbind, lock
 * manager and status monitor (NLM GRANTED, SM_NOTIFY). Blocking, with a
 * time limit on every step; never on a worker thread's data path.
 */
#ifndef RRR_SERVER_FS_RPC_CALL_H
#define RRR_SERVER_FS_RPC_CALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rrr/xdr.h>

#define FS_RPC_TIMEOUT_MS 2000
#define FS_RPC_MSG 8192u /* the largest call this helper sends */

/* Connect a TCP socket to @addr with @port (network order not needed: host
 * order) within FS_RPC_TIMEOUT_MS: the descriptor or -errno. MAY BLOCK. */
int fs_rpc_connect(const struct sockaddr_storage *addr, uint16_t port);
/* One call on the stream @fd: @args (@alen bytes, the encoded arguments)
 * to @prog/@vers/@proc with AUTH_NONE; the reply record is read into @buf
 * (@cap bytes, fragments joined) and @res is left at the results of an
 * accepted, successful reply. 0; -EPROTO (not a reply to this call),
 * -EACCES (refused: denied, PROG_UNAVAIL, ...), -EMSGSIZE, -ETIMEDOUT or
 * another -errno. MAY BLOCK. */
int fs_rpc_call(int fd, uint32_t prog, uint32_t vers, uint32_t proc, const void *args,
		size_t alen, uint8_t *buf, uint32_t cap, struct rrr_xdr *res);
/* The TCP port @prog/@vers has on the host @addr, asked of its portmapper
 * (port 111, PMAPPROC_GETPORT): the port, 0 when not registered, or -errno.
 * MAY BLOCK. */
int fs_rpc_getport(const struct sockaddr_storage *addr, uint32_t prog, uint32_t vers);

#endif
