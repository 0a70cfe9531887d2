/* SPDX-License-Identifier: MIT */
/*
 * client/nfs3_impl.h - what the NFSv3 client's files share: the mount
 * (struct rrr_nfs3), the connection picker, the call set-up and the
 * status rules. Internal to client/nfs3_clnt.c (mount, namespace calls)
 * and client/nfs3_io.c (READ/WRITE/COMMIT, synchronous, asynchronous and
 * pipelined).
 */
#ifndef RRR_CLIENT_NFS3_IMPL_H
#define RRR_CLIENT_NFS3_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>

struct rrr_nfs3 {
	struct rrr_clnt *clnt[RRR_NFS3_MAX_NCONNECT];
	unsigned nconn;	  /* connections open in clnt[] */
	atomic_uint next; /* round-robin: calls made so far */
	struct rrr_nfs3_fh root;
	uint32_t rsize, wsize;
	struct rrr_rpc_cred cred;
	bool use_cred;
	int timeout_ms;
	char host[256];
	char mount_port[16];
	char export_path[RRR_NFS3_MAXPATHLEN + 1];
};

/* The next connection of @n (round-robin, lock-free). */
struct rrr_clnt *rrr__nfs3_pick(struct rrr_nfs3 *n);
/* The mount's credentials (NULL: AUTH_NONE). */
const struct rrr_rpc_cred *rrr__nfs3_cred(const struct rrr_nfs3 *n);
/* A public call starts: forget the last nfsstat3 of this thread. */
void rrr__nfs3_status_reset(void);
/* An NFS answer: 0 for NFS3_OK, else remember @st for
 * rrr_nfs3_last_status() and return its -errno. */
int rrr__nfs3_err(uint32_t st);
/* A transport status of call @k for @what, with its sentence recorded. */
int rrr__nfs3_call_status(int rc, const struct rrr_call *k, const char *what);

#endif
