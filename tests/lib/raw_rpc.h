/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/raw_rpc.h - hand-made ONC RPC calls for the integration tests:
 * a plain client to a test server's port, one call of any program and
 * procedure with any credential, the codecs of rrr/nfs3_xdr.h as its
 * encoder and decoder. For the procedures and credentials the NFS client
 * library does not offer.
 */
#ifndef RRR_TESTS_RAW_RPC_H
#define RRR_TESTS_RAW_RPC_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/client.h>
#include <rrr/nfs3_xdr.h>
#include <rrr/oncrpc.h>

/* An XDR codec of rrr/nfs3_xdr.h (any object type), cast by TH_XF(f). */
typedef int (*th_xdr_fn)(struct rrr_xdr *x, void *obj);
#define TH_XF(f) ((th_xdr_fn)(void (*)(void))(f))

/* AUTH_SYS as root (uid 0, gid 0, no groups). */
extern const struct rrr_rpc_cred th_root_cred;

/* @cred becomes AUTH_SYS as @uid/@gid with no supplementary groups. */
void th_auth_sys(struct rrr_rpc_cred *cred, uint32_t uid, uint32_t gid);

/* A client to 127.0.0.1:@port over @transport ("tcp", or "rdma" on the soft
 * provider) that waits @timeout_ms per call and, with @fail_fast, does not
 * reconnect. Returns rrr_clnt_create()'s result; *@out on success. MAY BLOCK. */
int th_raw_connect(const char *transport, unsigned port, int timeout_ms, bool fail_fast,
		   struct rrr_clnt **out);

/* Destroys *@c when set; *@c = NULL. */
void th_raw_close(struct rrr_clnt **c);

/* One version-3 call of @prog/@proc on @c as @cred (NULL: AUTH_NONE): @enc
 * encodes @args, @dec decodes the result into @res (a NULL codec: no body).
 * Returns rrr_clnt_call()'s result. MAY BLOCK. */
int th_raw_call(struct rrr_clnt *c, uint32_t prog, uint32_t proc, const struct rrr_rpc_cred *cred,
		th_xdr_fn enc, void *args, th_xdr_fn dec, void *res);

/* NFSv3 ACCESS (all six bits) on @fh through @c as AUTH_SYS @uid/@uid: the
 * bits granted; the call and its status must succeed (asserted). MAY BLOCK. */
uint32_t th_raw_access(struct rrr_clnt *c, uint32_t uid, const struct rrr_nfs3_fh *fh);

/* MOUNT MNT of @path through @c as root: the mountstat3, and the handle into
 * @fh (may be NULL) when it is OK; the reply must decode (asserted). MAY BLOCK. */
uint32_t th_raw_mnt(struct rrr_clnt *c, const char *path, struct rrr_nfs3_fh *fh);

#endif
