/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_error.c - the sentence that travels with a call's status.
 *
 * Normal operation. A call fails on the client's progress thread (a
 * timeout, a lost connection, a reply that does not decode, a chunk that
 * does not fit), but the person who has to act on it reads the status in
 * a callback or after rrr_clnt_call() on another thread. A thread-local
 * rrr_last_error() cannot carry it there, so the reason is written into
 * the call itself (struct rrr_call.error): the code that knows the
 * specific reason records it (rrr__clnt_call_error; the first reason
 * wins), and when the call completes without one, the generic sentence of
 * its status is filled in (rrr__clnt_default_error), naming the call
 * (program, version, procedure, xid) and the server. The core copies it
 * into rrr_last_error() of the thread that runs the callback and of the
 * thread that waited in rrr_clnt_call(), so programs that print
 * rrr_last_error() keep working. A failed submission records its sentence
 * in both places at once (rrr__clnt_submit_error).
 *
 * Recovery: none needed; nothing is allocated, a long sentence is cut.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rrr/client.h>

#include "client/clnt_impl.h"
#include "common/rrr_impl.h"

int rrr__clnt_call_error(struct rrr_clnt *c, struct rrr__clnt_req *req, int status,
			 const char *fmt, ...)
{
	struct rrr_call *call = req->call;
	va_list ap;
	int n;

	(void)c;
	if (!call || call->error[0])
		return status;
	n = snprintf(call->error, sizeof(call->error), "call %u/%u/%u (xid %#x): ", call->prog,
		     call->vers, call->proc, req->xid);
	if (n < 0 || (size_t)n >= sizeof(call->error))
		return status;
	va_start(ap, fmt);
	vsnprintf(call->error + n, sizeof(call->error) - (size_t)n, fmt, ap);
	va_end(ap);
	return status;
}

static const char *accept_name(uint32_t st)
{
	switch (st) {
	case RRR_RPC_PROG_UNAVAIL:
		return "PROG_UNAVAIL: the server does not serve this program";
	case RRR_RPC_PROG_MISMATCH:
		return "PROG_MISMATCH: the server does not serve this version";
	case RRR_RPC_PROC_UNAVAIL:
		return "PROC_UNAVAIL: the server does not know this procedure";
	case RRR_RPC_GARBAGE_ARGS:
		return "GARBAGE_ARGS: the server could not decode the arguments";
	case RRR_RPC_SYSTEM_ERR:
		return "SYSTEM_ERR: the server's handler failed";
	default:
		return "an RPC error";
	}
}

void rrr__clnt_default_error(struct rrr_clnt *c, struct rrr__clnt_req *req, int status)
{
	const struct rrr_call *call = req->call;

	if (!status || !call || call->error[0])
		return;
	switch (status) {
	case -ETIMEDOUT:
		if (!c->connected)
			rrr__clnt_call_error(c, req, status,
					     "timed out with no connection to %s:%s (last "
					     "connect attempt: %s); is the server running?",
					     c->host, c->port,
					     c->last_connect_err ? strerror(-c->last_connect_err)
								 : "none yet");
		else if (req->state == RRR__REQ_QUEUED)
			rrr__clnt_call_error(c, req, status,
					     "timed out before it could be sent to %s:%s (no "
					     "credit from the server); raise the timeout or "
					     "lower the queue depth",
					     c->host, c->port);
		else
			rrr__clnt_call_error(c, req, status,
					     "timed out waiting for the reply of %s:%s; the "
					     "server is slow or stuck: raise the timeout, or "
					     "retry if the call is idempotent",
					     c->host, c->port);
		return;
	case -ECANCELED:
		rrr__clnt_call_error(c, req, status,
				     "cancelled (rrr_clnt_cancel() or rrr_clnt_destroy())");
		return;
	case -ECONNRESET:
		rrr__clnt_call_error(c, req, status,
				     "the connection to %s:%s was lost and the client fails "
				     "fast (fail_fast): the call may or may not have run; "
				     "retry it if that is safe",
				     c->host, c->port);
		return;
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENOTCONN:
		rrr__clnt_call_error(c, req, status,
				     "not sent: no connection to %s:%s (%s) and the client "
				     "fails fast (fail_fast); is the server running?",
				     c->host, c->port, strerror(-status));
		return;
	case -EBADMSG:
		rrr__clnt_call_error(c, req, status,
				     "the reply of %s:%s could not be decoded (malformed "
				     "header, chunks other than offered, or results the "
				     "decode callback refused)",
				     c->host, c->port);
		return;
	case -EPROTO:
		if (call->rpc_stat & RRR_RPC_STAT_DENIED)
			rrr__clnt_call_error(c, req, status,
					     "%s:%s denied the call (%s); check the "
					     "credentials or the RPC version",
					     c->host, c->port,
					     ((call->rpc_stat >> 8) & 0xffu) == 1 ? "AUTH_ERROR"
										: "RPC_MISMATCH");
		else
			rrr__clnt_call_error(c, req, status, "%s:%s answered %s (rpc_stat %u)",
					     c->host, c->port, accept_name(call->rpc_stat),
					     call->rpc_stat);
		return;
	case -EREMOTEIO:
		rrr__clnt_call_error(c, req, status,
				     "%s:%s refused the call's RPC-over-RDMA header "
				     "(RDMA_ERROR): it accepts fewer segments per chunk or "
				     "another version; lower max_segs (now %u)",
				     c->host, c->port, c->opts.max_segs);
		return;
	case -EMSGSIZE:
		rrr__clnt_call_error(c, req, status,
				     "cannot be conveyed with the sizes negotiated with "
				     "%s:%s (inline sizes, max_segs %u, payload at most %u "
				     "bytes): use a smaller payload",
				     c->host, c->port, c->opts.max_segs, c->ops->max_payload(c));
		return;
	default:
		rrr__clnt_call_error(c, req, status, "failed: %s", strerror(-status));
		return;
	}
}

int rrr__clnt_submit_error(struct rrr_clnt *c, struct rrr_call *call, int status,
			   const char *fmt, ...)
{
	char msg[RRR_CALL_ERROR_LEN];
	va_list ap;

	(void)c;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (call)
		snprintf(call->error, sizeof(call->error), "%s", msg);
	return rrr__set_error(status, "%s", msg);
}
