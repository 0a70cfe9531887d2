/* SPDX-License-Identifier: MIT */
/*
 * server/svc_req.c - what a handler asks of its request: the call, the
 * program's context, the peer, the transport, the payload room, and
 * zero-copy result payloads.
 *
 * Zero copy. A handler that serves data from memory of its own (an
 * in-memory disk, a page cache) hands it to
 * rrr_svc_req_encode_payload_zc() with a release callback instead of
 * copying it into request memory. When the payload goes by the client's
 * write chunk on RDMA, the transport registers that memory for this
 * request only (local access: it is the source of the RDMA WRITE, the peer
 * gets no handle to it), the WRITE reads it in place, and the registration
 * is invalidated by a LOCAL_INV chained after the reply's Send; once that
 * completed (or, on any failure, once the registration was recovered) the
 * request ends and the release callback runs on the worker thread. In
 * every other case (TCP, inline, no write chunk large enough) the bytes
 * are copied as by rrr_xdr_encode_payload() and the callback runs when the
 * request ends, so a handler never needs two code paths.
 *
 * Recovery: the transport recovers a registration whose chain did not
 * complete before the request ends; the callback runs exactly once.
 */
#include <errno.h>

#include <rrr/server.h>

#include "server/svc_impl.h"
#include "common/rrr_impl.h"

const struct rrr_rpc_call *rrr_svc_req_call(const struct rrr_svc_req *req)
{
	return req ? &req->call : NULL;
}

void *rrr_svc_req_program_ctx(const struct rrr_svc_req *req)
{
	return req && req->prog ? req->prog->ctx : NULL;
}

int rrr_svc_req_peer(const struct rrr_svc_req *req, struct sockaddr_storage *ss)
{
	if (!req || !ss || !req->conn)
		return -EINVAL;
	*ss = req->conn->peer;
	return 0;
}

const char *rrr_svc_req_transport(const struct rrr_svc_req *req)
{
	return req && req->conn ? req->conn->ops->name : "";
}

uint32_t rrr_svc_req_max_payload(const struct rrr_svc_req *req)
{
	return req ? req->max_payload : 0;
}

int rrr_svc_req_after_reply(struct rrr_svc_req *req, void (*fn)(void *arg, bool replied),
			    void *arg)
{
	if (!req || !fn || req->after_reply)
		return rrr__set_error(-EINVAL, "rrr_svc_req_after_reply: a request and a function "
					       "are needed, one per request");
	req->after_reply = fn;
	req->after_reply_arg = arg;
	return 0;
}

void rrr__svc_req_after_reply(struct rrr_svc_req *req, bool replied)
{
	void (*fn)(void *, bool) = req->after_reply;

	if (!fn)
		return;
	req->after_reply = NULL;
	fn(req->after_reply_arg, replied);
}

int rrr_svc_req_encode_payload_zc(struct rrr_svc_req *req, struct rrr_xdr *res,
				  const struct iovec *iov, unsigned niov, uint32_t len,
				  void (*release)(void *arg), void *arg)
{
	int rc;

	if (!req || !res || !release || req->release || (niov && !iov) ||
	    niov > RRR_XDR_PAYLOAD_MAX_IOV)
		return rrr__set_error(-EINVAL, "rrr_svc_req_encode_payload_zc: a request, a result "
					       "stream, a release callback and at most %d pieces "
					       "are needed, one zero-copy payload per reply",
				      RRR_XDR_PAYLOAD_MAX_IOV);
	rc = req->zc ? req->zc(req, res, iov, niov, len) : -EOPNOTSUPP;
	if (rc == -EOPNOTSUPP)
		rc = rrr_xdr_encode_payload(res, iov, niov, len); /* copied */
	if (rc == 0) {
		req->release = release;
		req->release_arg = arg;
	}
	return rc;
}
