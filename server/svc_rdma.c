/* SPDX-License-Identifier: MIT */
/*
 * server/svc_rdma.c - RPC-over-RDMA v1 for the server (placeholder until the
 * provider lands): listening answers -EOPNOTSUPP with a message.
 */
#include <errno.h>
#include <stdlib.h>

#include "server/svc_impl.h"
#include "transport/provider_impl.h"

int rrr__svc_rdma_listen(struct rrr_svc *svc, const char *host, const char *port,
			 uint16_t *bound_port, struct rrr__svc_rdma_listener **out)
{
	(void)svc;
	(void)host;
	(void)port;
	(void)bound_port;
	*out = NULL;
	return rrr__set_error(-EOPNOTSUPP, "RPC-over-RDMA listener not available yet");
}

int rrr__svc_rdma_listener_fd(struct rrr__svc_rdma_listener *l)
{
	(void)l;
	return -1;
}

void rrr__svc_rdma_cm_events(struct rrr__svc_rdma_listener *l)
{
	(void)l;
}

void rrr__svc_rdma_listener_destroy(struct rrr__svc_rdma_listener *l)
{
	(void)l;
}
