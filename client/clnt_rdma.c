/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_rdma.c - RPC-over-RDMA v1 transport of the client core.
 * Placeholder while the transport is written: creating an RDMA client
 * fails with -EOPNOTSUPP and a message; use transport "tcp" meanwhile.
 */
#include <errno.h>

#include "client/clnt_impl.h"
#include "transport/provider_impl.h"

static int rdma_create(struct rrr_clnt *c)
{
	(void)c;
	return rrr__set_error(-EOPNOTSUPP, "the RPC-over-RDMA client transport is not "
					   "available yet; use transport \"tcp\"");
}

const struct rrr__clnt_xprt_ops rrr__clnt_rdma_ops = {
	.name = "rdma",
	.create = rdma_create,
};
