/* SPDX-License-Identifier: MIT */
/*
 * xdr/oncrpc.c - ONC RPC version 2 message headers (RFC 5531) with
 * AUTH_NONE and AUTH_SYS credentials (RFC 5531 appendix A).
 *
 * Normal operation. Encoders write a CALL header (with the caller's
 * credential and an AUTH_NONE verifier) or a REPLY header (accepted or
 * denied) into a bounded rrr_xdr stream; the procedure arguments/results
 * follow, written by the caller. Decoders read the same headers and leave
 * the stream at the arguments (call) or results (accepted reply).
 *
 * Every opaque_auth body on the wire is bounded by 400 bytes (RFC 5531
 * section 8.2) before anything else is done with its length. An AUTH_SYS
 * body is parsed inside a sub-stream exactly as long as the body length
 * says: a body whose fields run past that length, or that leaves bytes
 * over, is inconsistent (-EINVAL); the machine name and the gid array are
 * bounded by 255 bytes and 16 entries (-E2BIG). Credentials of other
 * flavors are skipped and reported with their flavor and body length, so
 * a server can answer AUTH_ERROR/AUTH_BADCRED; verifiers are skipped.
 *
 * Recovery. Errors leave the stream position unspecified; the caller drops
 * the message (or, for a call whose xid was decoded, answers with a denied
 * or GARBAGE_ARGS reply). call->xid / reply->xid are set as soon as the
 * first word is read. Nothing is allocated.
 *
 * Contracts (arguments, errors, ownership) of the exported functions are
 * the doc comments in include/rrr/oncrpc.h. None of them blocks, allocates or
 * takes a lock; a stream or header struct is used by one thread at a time.
 */
#include <errno.h>
#include <string.h>

#include <rrr/oncrpc.h>

/* Largest auth_stat we recognise (RPCSEC_GSS_CTXPROBLEM, RFC 5531 9). */
#define RPC_AUTH_STAT_MAX 14u

/*
 * CALL header (every field a 32-bit XDR word):
 *
 *   +-----+-----------+---------+------+------+------+
 *   | xid | CALL (0)  | rpcvers | prog | vers | proc |
 *   +-----+-----------+---------+------+------+------+
 *   +-------------+----------+--- ... ---+-------------+----------+
 *   | cred flavor | cred len | cred body | verf flavor | verf len |  args...
 *   +-------------+----------+--- ... ---+-------------+----------+
 *
 * AUTH_SYS credential body (appendix A):
 *   +-------+---------+--------------------+-----+-----+-------+-- ... --+
 *   | stamp | namelen | machinename + pad  | uid | gid | ngids | gids    |
 *   +-------+---------+--------------------+-----+-----+-------+-- ... --+
 *
 * REPLY header:
 *   +-----+-----------+---------------+
 *   | xid | REPLY (1) | MSG_ACCEPTED  | verf flavor | verf len | body |
 *   +-----+-----------+---------------+
 *       accept_stat [PROG_MISMATCH: low, high]   results (SUCCESS)...
 *   +-----+-----------+---------------+
 *   | xid | REPLY (1) | MSG_DENIED    | reject_stat |
 *   +-----+-----------+---------------+
 *       RPC_MISMATCH: low, high      AUTH_ERROR: auth_stat
 */

static int put_words(struct rrr_xdr *xdr, const uint32_t *w, unsigned n)
{
	int rc = 0;

	for (unsigned i = 0; i < n && !rc; i++)
		rc = rrr_xdr_put_u32(xdr, w[i]);
	return rc;
}

static int encode_auth_sys(struct rrr_xdr *xdr, const struct rrr_auth_sys *sys)
{
	size_t namelen = strnlen(sys->machinename, sizeof(sys->machinename));
	size_t lenpos;
	int rc;

	if (namelen > RRR_RPC_AUTH_SYS_MAX_MACHINE || sys->ngids > RRR_RPC_AUTH_SYS_MAX_GIDS)
		return -E2BIG;
	rc = rrr_xdr_put_u32(xdr, RRR_AUTH_SYS);
	if (!rc)
		rc = rrr_xdr_reserve(xdr, 1, &lenpos);
	if (rc)
		return rc;
	{
		size_t start = rrr_xdr_pos(xdr);

		rc = rrr_xdr_put_u32(xdr, sys->stamp);
		if (!rc)
			rc = rrr_xdr_put_opaque(xdr, sys->machinename, (uint32_t)namelen);
		if (!rc)
			rc = rrr_xdr_put_u32(xdr, sys->uid);
		if (!rc)
			rc = rrr_xdr_put_u32(xdr, sys->gid);
		if (!rc)
			rc = rrr_xdr_put_count(xdr, sys->ngids);
		if (!rc)
			rc = put_words(xdr, sys->gids, sys->ngids);
		if (!rc)
			rc = rrr_xdr_fill_u32(xdr, lenpos, (uint32_t)(rrr_xdr_pos(xdr) - start));
	}
	return rc;
}

int rrr_rpc_encode_cred(struct rrr_xdr *xdr, const struct rrr_rpc_cred *cred)
{
	static const uint32_t none[2] = {RRR_AUTH_NONE, 0};

	if (!cred || cred->flavor == RRR_AUTH_NONE)
		return put_words(xdr, none, 2);
	if (cred->flavor == RRR_AUTH_SYS)
		return encode_auth_sys(xdr, &cred->sys);
	return -EINVAL;
}

/* Parse an AUTH_SYS body that occupies exactly @len bytes at @p. */
static int decode_auth_sys(const void *p, uint32_t len, struct rrr_auth_sys *sys)
{
	struct rrr_xdr sub;
	int rc;

	rrr_xdr_init(&sub, (void *)(uintptr_t)p, len, RRR_XDR_DECODE);
	rc = rrr_xdr_get_u32(&sub, &sys->stamp);
	if (!rc)
		rc = rrr_xdr_get_string(&sub, sys->machinename, RRR_RPC_AUTH_SYS_MAX_MACHINE);
	if (!rc)
		rc = rrr_xdr_get_u32(&sub, &sys->uid);
	if (!rc)
		rc = rrr_xdr_get_u32(&sub, &sys->gid);
	if (!rc)
		rc = rrr_xdr_get_count(&sub, RRR_RPC_AUTH_SYS_MAX_GIDS, 4, &sys->ngids);
	for (uint32_t i = 0; !rc && i < sys->ngids; i++)
		rc = rrr_xdr_get_u32(&sub, &sys->gids[i]);
	if (rc == -EBADMSG)
		return -EINVAL; /* fields run past the declared body length */
	if (rc)
		return rc;
	if (rrr_xdr_remaining(&sub) != 0)
		return -EINVAL;
	return 0;
}

int rrr_rpc_decode_cred(struct rrr_xdr *xdr, struct rrr_rpc_cred *cred)
{
	const void *body;
	uint32_t len;
	int rc;

	if (!cred)
		return -EINVAL;
	rc = rrr_xdr_get_u32(xdr, &cred->flavor);
	if (rc)
		return rc;
	rc = rrr_xdr_get_opaque_inline(xdr, RRR_RPC_MAX_AUTH_BYTES, &body, &len);
	if (rc)
		return rc;
	cred->body_len = len;
	switch (cred->flavor) {
	case RRR_AUTH_NONE:
		return len == 0 ? 0 : -EINVAL;
	case RRR_AUTH_SYS:
		return decode_auth_sys(body, len, &cred->sys);
	default:
		return 0; /* kept as flavor + length; the server rejects it */
	}
}

/* A verifier: flavor kept, body (bounded) skipped. */
static int decode_verf(struct rrr_xdr *xdr, uint32_t *flavor)
{
	const void *body;
	uint32_t len;
	int rc;

	rc = rrr_xdr_get_u32(xdr, flavor);
	if (!rc)
		rc = rrr_xdr_get_opaque_inline(xdr, RRR_RPC_MAX_AUTH_BYTES, &body, &len);
	return rc;
}

int rrr_rpc_encode_call(struct rrr_xdr *xdr, uint32_t xid, uint32_t prog, uint32_t vers,
			uint32_t proc, const struct rrr_rpc_cred *cred)
{
	const uint32_t head[6] = {xid, RRR_RPC_CALL, RRR_RPC_VERS, prog, vers, proc};
	static const uint32_t verf[2] = {RRR_AUTH_NONE, 0};
	int rc;

	rc = put_words(xdr, head, 6);
	if (!rc)
		rc = rrr_rpc_encode_cred(xdr, cred);
	if (!rc)
		rc = put_words(xdr, verf, 2);
	return rc;
}

int rrr_rpc_decode_call(struct rrr_xdr *xdr, struct rrr_rpc_call *call)
{
	uint32_t mtype, rpcvers;
	int rc;

	if (!call)
		return -EINVAL;
	rc = rrr_xdr_get_u32(xdr, &call->xid);
	if (!rc)
		rc = rrr_xdr_get_u32(xdr, &mtype);
	if (rc)
		return rc;
	if (mtype != RRR_RPC_CALL)
		return -EPROTO;
	rc = rrr_xdr_get_u32(xdr, &rpcvers);
	if (rc)
		return rc;
	if (rpcvers != RRR_RPC_VERS)
		return -EPROTO;
	rc = rrr_xdr_get_u32(xdr, &call->prog);
	if (!rc)
		rc = rrr_xdr_get_u32(xdr, &call->vers);
	if (!rc)
		rc = rrr_xdr_get_u32(xdr, &call->proc);
	if (!rc)
		rc = rrr_rpc_decode_cred(xdr, &call->cred);
	if (!rc)
		rc = decode_verf(xdr, &call->verf_flavor);
	return rc;
}

int rrr_rpc_encode_accepted(struct rrr_xdr *xdr, uint32_t xid, uint32_t accept_stat, uint32_t low,
			    uint32_t high)
{
	const uint32_t w[8] = {
	    xid, RRR_RPC_REPLY, RRR_RPC_MSG_ACCEPTED, RRR_AUTH_NONE, 0, accept_stat, low, high};

	if (accept_stat > RRR_RPC_SYSTEM_ERR)
		return -EINVAL;
	return put_words(xdr, w, accept_stat == RRR_RPC_PROG_MISMATCH ? 8 : 6);
}

int rrr_rpc_encode_denied(struct rrr_xdr *xdr, uint32_t xid, uint32_t reject_stat,
			  uint32_t auth_stat)
{
	uint32_t w[6] = {xid, RRR_RPC_REPLY, RRR_RPC_MSG_DENIED, reject_stat, 0, 0};

	if (reject_stat == RRR_RPC_MISMATCH) {
		w[4] = RRR_RPC_VERS;
		w[5] = RRR_RPC_VERS;
		return put_words(xdr, w, 6);
	}
	if (reject_stat != RRR_RPC_AUTH_ERROR || auth_stat > RPC_AUTH_STAT_MAX)
		return -EINVAL;
	w[4] = auth_stat;
	return put_words(xdr, w, 5);
}

int rrr_rpc_decode_reply(struct rrr_xdr *xdr, struct rrr_rpc_reply *reply)
{
	uint32_t mtype;
	int rc;

	if (!reply)
		return -EINVAL;
	memset(reply, 0, sizeof(*reply));
	rc = rrr_xdr_get_u32(xdr, &reply->xid);
	if (!rc)
		rc = rrr_xdr_get_u32(xdr, &mtype);
	if (rc)
		return rc;
	if (mtype != RRR_RPC_REPLY)
		return -EPROTO;
	rc = rrr_xdr_get_enum(xdr, RRR_RPC_MSG_DENIED, &reply->stat);
	if (rc)
		return rc;

	if (reply->stat == RRR_RPC_MSG_ACCEPTED) {
		rc = decode_verf(xdr, &reply->verf_flavor);
		if (!rc)
			rc = rrr_xdr_get_enum(xdr, RRR_RPC_SYSTEM_ERR, &reply->accept_stat);
		if (!rc && reply->accept_stat == RRR_RPC_PROG_MISMATCH) {
			rc = rrr_xdr_get_u32(xdr, &reply->mismatch_low);
			if (!rc)
				rc = rrr_xdr_get_u32(xdr, &reply->mismatch_high);
		}
		return rc;
	}

	rc = rrr_xdr_get_enum(xdr, RRR_RPC_AUTH_ERROR, &reply->reject_stat);
	if (rc)
		return rc;
	if (reply->reject_stat == RRR_RPC_MISMATCH) {
		rc = rrr_xdr_get_u32(xdr, &reply->mismatch_low);
		if (!rc)
			rc = rrr_xdr_get_u32(xdr, &reply->mismatch_high);
		return rc;
	}
	return rrr_xdr_get_enum(xdr, RPC_AUTH_STAT_MAX, &reply->auth_stat);
}
