/* SPDX-License-Identifier: MIT */
/*
 * rrr/oncrpc.h - ONC RPC version 2 messages (RFC 5531): call and reply
 * headers, accepted and rejected replies, AUTH_NONE and AUTH_SYS
 * (RFC 5531 appendix A) credentials, and TCP record marking (section 11).
 *
 * Decoders leave the stream positioned at the procedure arguments (call)
 * or results (accepted reply, SUCCESS). Limits: opaque auth bodies are at
 * most 400 bytes (RFC 5531 section 8.2); AUTH_SYS machinename at most 255
 * bytes and at most 16 auxiliary gids (appendix A).
 *
 * Errors: those of rrr/xdr.h, plus
 *   -EPROTO           not a CALL/REPLY where one was expected, rpcvers != 2
 *   -EINVAL           enum out of range, AUTH_SYS body inconsistent
 *   -E2BIG            auth body / machinename / gids over the limits
 */
#ifndef RRR_ONCRPC_H
#define RRR_ONCRPC_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define RRR_RPC_VERS 2u
#define RRR_RPC_MAX_AUTH_BYTES 400u
#define RRR_RPC_AUTH_SYS_MAX_MACHINE 255u
#define RRR_RPC_AUTH_SYS_MAX_GIDS 16u

enum rrr_rpc_msg_type { RRR_RPC_CALL = 0, RRR_RPC_REPLY = 1 };
enum rrr_rpc_reply_stat { RRR_RPC_MSG_ACCEPTED = 0, RRR_RPC_MSG_DENIED = 1 };
enum rrr_rpc_accept_stat {
	RRR_RPC_SUCCESS = 0,
	RRR_RPC_PROG_UNAVAIL = 1,
	RRR_RPC_PROG_MISMATCH = 2,
	RRR_RPC_PROC_UNAVAIL = 3,
	RRR_RPC_GARBAGE_ARGS = 4,
	RRR_RPC_SYSTEM_ERR = 5,
};
enum rrr_rpc_reject_stat { RRR_RPC_MISMATCH = 0, RRR_RPC_AUTH_ERROR = 1 };
enum rrr_rpc_auth_stat {
	RRR_AUTH_OK = 0,
	RRR_AUTH_BADCRED = 1,
	RRR_AUTH_REJECTEDCRED = 2,
	RRR_AUTH_BADVERF = 3,
	RRR_AUTH_REJECTEDVERF = 4,
	RRR_AUTH_TOOWEAK = 5,
	RRR_AUTH_INVALIDRESP = 6,
	RRR_AUTH_FAILED = 7,
};
enum rrr_rpc_auth_flavor { RRR_AUTH_NONE = 0, RRR_AUTH_SYS = 1 };

struct rrr_auth_sys {
	uint32_t stamp;
	char machinename[RRR_RPC_AUTH_SYS_MAX_MACHINE + 1];
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[RRR_RPC_AUTH_SYS_MAX_GIDS];
};

/* A credential as decoded: flavor, and for AUTH_SYS the parsed body.
 * Other flavors keep their raw body (bounded) so a server can reject them. */
struct rrr_rpc_cred {
	uint32_t flavor;
	struct rrr_auth_sys sys;     /* valid when flavor == RRR_AUTH_SYS */
	uint32_t body_len;           /* raw length of the body on the wire */
};

struct rrr_rpc_call {
	uint32_t xid;
	uint32_t prog, vers, proc;
	struct rrr_rpc_cred cred;
	uint32_t verf_flavor;        /* verifier: flavor kept, body skipped */
};

struct rrr_rpc_reply {
	uint32_t xid;
	uint32_t stat;               /* rrr_rpc_reply_stat */
	/* accepted */
	uint32_t verf_flavor;
	uint32_t accept_stat;        /* rrr_rpc_accept_stat */
	uint32_t mismatch_low, mismatch_high; /* PROG_MISMATCH or RPC_MISMATCH */
	/* denied */
	uint32_t reject_stat;        /* rrr_rpc_reject_stat */
	uint32_t auth_stat;          /* rrr_rpc_auth_stat, for AUTH_ERROR */
};

/* Encode a CALL header (verifier AUTH_NONE). @cred NULL means AUTH_NONE. */
int rrr_rpc_encode_call(struct rrr_xdr *xdr, uint32_t xid, uint32_t prog, uint32_t vers,
			uint32_t proc, const struct rrr_rpc_cred *cred);
/* Decode a CALL header; -EPROTO when the message is a REPLY or rpcvers != 2. */
int rrr_rpc_decode_call(struct rrr_xdr *xdr, struct rrr_rpc_call *call);
/* Encode an accepted reply header (verifier AUTH_NONE) with @accept_stat;
 * for PROG_MISMATCH @low/@high are written, otherwise ignored. Results (for
 * SUCCESS) follow. */
int rrr_rpc_encode_accepted(struct rrr_xdr *xdr, uint32_t xid, uint32_t accept_stat,
			    uint32_t low, uint32_t high);
/* Encode a denied reply: RPC_MISMATCH (low=high=2) or AUTH_ERROR(@auth_stat). */
int rrr_rpc_encode_denied(struct rrr_xdr *xdr, uint32_t xid, uint32_t reject_stat,
			  uint32_t auth_stat);
/* Decode any reply header; leaves the stream at the results on SUCCESS. */
int rrr_rpc_decode_reply(struct rrr_xdr *xdr, struct rrr_rpc_reply *reply);

/* Credential helpers. */
int rrr_rpc_encode_cred(struct rrr_xdr *xdr, const struct rrr_rpc_cred *cred);
int rrr_rpc_decode_cred(struct rrr_xdr *xdr, struct rrr_rpc_cred *cred);

/* --- TCP record marking (RFC 5531 section 11) ---------------------------- */
#define RRR_RPC_RM_LAST 0x80000000u
#define RRR_RPC_RM_LEN_MASK 0x7fffffffu

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_ONCRPC_H */
