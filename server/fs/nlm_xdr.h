/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nlm_xdr.h - the Network Lock Manager version 4 (NLM, program
 * 100021; X/Open XNFS and RFC 1813 appendix II) and Network Status Monitor
 * (NSM, program 100024 version 1) messages rrr-server speaks, and their
 * codecs (nlm_xdr.c). Every variable field is bounded as the protocol
 * bounds it (netobj and names: 1024 bytes); a decoder copies, so a
 * decoded message outlives its buffer.
 */
#ifndef RRR_SERVER_FS_NLM_XDR_H
#define RRR_SERVER_FS_NLM_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include <rrr/xdr.h>

#define NLM_PROG 100021u
#define NLM_VERS4 4u
#define NSM_PROG 100024u
#define NSM_VERS 1u

#define NLM_MAXOBJ 1024u   /* MAXNETOBJ_SZ: cookie, fh, owner handle */
#define NLM_MAXNAME 1024u  /* LM_MAXSTRLEN, SM_MAXSTRLEN */
#define NSM_PRIV 16u       /* SM_PRIV_SIZE */

enum nlm4_proc {
	NLM4_NULL = 0, NLM4_TEST = 1, NLM4_LOCK = 2, NLM4_CANCEL = 3, NLM4_UNLOCK = 4,
	NLM4_GRANTED = 5, NLM4_TEST_MSG = 6, NLM4_LOCK_MSG = 7, NLM4_CANCEL_MSG = 8,
	NLM4_UNLOCK_MSG = 9, NLM4_GRANTED_MSG = 10, NLM4_TEST_RES = 11, NLM4_LOCK_RES = 12,
	NLM4_CANCEL_RES = 13, NLM4_UNLOCK_RES = 14, NLM4_GRANTED_RES = 15,
	NLM4_NSM_NOTIFY = 16, /* Linux: rpc.statd's reboot callback (an nsm_status) */
	NLM4_SHARE = 20, NLM4_UNSHARE = 21, NLM4_NM_LOCK = 22, NLM4_FREE_ALL = 23,
	NLM4_NPROCS = 24
};

enum nlm4_stats {
	NLM4_GRANTED_ST = 0, NLM4_DENIED = 1, NLM4_DENIED_NOLOCKS = 2, NLM4_BLOCKED = 3,
	NLM4_DENIED_GRACE_PERIOD = 4, NLM4_DEADLCK = 5, NLM4_ROFS = 6, NLM4_STALE_FH = 7,
	NLM4_FBIG = 8, NLM4_FAILED = 9
};

enum nsm_proc {
	NSM_NULL = 0, NSM_STAT = 1, NSM_MON = 2, NSM_UNMON = 3, NSM_UNMON_ALL = 4,
	NSM_SIMU_CRASH = 5, NSM_NOTIFY = 6, NSM_NPROCS = 7
};
enum nsm_res { NSM_STAT_SUCC = 0, NSM_STAT_FAIL = 1 };

/* netobj: opaque<NLM_MAXOBJ>, copied */
struct nlm_obj {
	uint32_t len;
	uint8_t data[NLM_MAXOBJ];
};

struct nlm4_lock {
	char caller[NLM_MAXNAME + 1]; /* caller_name, NUL-terminated */
	struct nlm_obj fh;
	struct nlm_obj oh;            /* the owner handle */
	int32_t svid;                 /* the owner's process id on the client */
	uint64_t offset, len;         /* len 0: to the end of the file, and beyond */
};

/* TEST, LOCK, CANCEL, UNLOCK, GRANTED (and their _MSG forms) in one: the
 * fields a procedure does not carry are left zero. */
struct nlm4_args {
	struct nlm_obj cookie;
	bool block;     /* LOCK, CANCEL */
	bool exclusive; /* TEST, LOCK, CANCEL, GRANTED */
	struct nlm4_lock lock;
	bool reclaim;   /* LOCK */
	int32_t state;  /* LOCK: the client's NSM state */
};

struct nlm4_holder {
	bool exclusive;
	int32_t svid;
	struct nlm_obj oh;
	uint64_t offset, len;
};

/* nlm4_res (stat only) and nlm4_testres (DENIED carries the holder) */
struct nlm4_res {
	struct nlm_obj cookie;
	uint32_t stat;              /* enum nlm4_stats */
	struct nlm4_holder holder;  /* TEST's answer with stat DENIED */
};

struct nlm4_share {
	char caller[NLM_MAXNAME + 1];
	struct nlm_obj fh;
	struct nlm_obj oh;
	uint32_t mode;   /* fsh4_mode: 0 deny none .. 3 deny read-write */
	uint32_t access; /* fsh4_access: 0 none .. 3 read-write */
};
struct nlm4_shareargs {
	struct nlm_obj cookie;
	struct nlm4_share share;
	bool reclaim;
};
struct nlm4_shareres {
	struct nlm_obj cookie;
	uint32_t stat;
	int32_t sequence;
};

/* FREE_ALL's nlm4_notify, and NSM's SM_NOTIFY stat_chge: a name and a state */
struct nlm_notify {
	char name[NLM_MAXNAME + 1];
	int32_t state;
};

/* NSM */
struct nsm_my_id {
	char my_name[NLM_MAXNAME + 1];
	uint32_t prog, vers, proc;
};
struct nsm_mon {
	char mon_name[NLM_MAXNAME + 1];
	struct nsm_my_id id;
	uint8_t priv[NSM_PRIV];
};
/* statd's callback to a monitor (NLM4_NSM_NOTIFY): the host that rebooted */
struct nsm_status {
	char mon_name[NLM_MAXNAME + 1];
	int32_t state;
	uint8_t priv[NSM_PRIV];
};

/* One NSM call datagram (UDP), decoded whole by nsm_dgram_decode(). */
struct nsm_dgram {
	uint32_t xid;
	uint32_t proc;            /* the call's procedure */
	uint32_t accept_stat;     /* the answer: RRR_RPC_SUCCESS (act on @proc),
				   * PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS */
	struct nlm_notify notify; /* SM_NOTIFY's stat_chge (SUCCESS and NSM_NOTIFY) */
};
#define NSM_DGRAM_MAX 2048u /* the largest call taken: header, two 400-byte auth bodies, stat_chge */

/* Decode the datagram @buf (@len bytes) as an NSM v1 call, as a hostile peer
 * may send it: 0 with @out to answer (only NULL and SM_NOTIFY are SUCCESS;
 * SM_NOTIFY's mon_name must be 1..NLM_MAXNAME bytes; nothing may follow
 * the arguments), or -errno when it is no ONC RPC call at all (-EMSGSIZE:
 * short or over NSM_DGRAM_MAX, -EPROTO: a reply or rpcvers != 2, -EINVAL,
 * -E2BIG: a bad credential): no answer then. */
int nsm_dgram_decode(void *buf, size_t len, struct nsm_dgram *out);
/* The reply to @d into @x: accepted, @d->accept_stat (PROG_MISMATCH: 1..1),
 * no results (NULL and SM_NOTIFY return void). 0 or -EMSGSIZE. */
int nsm_dgram_reply(struct rrr_xdr *x, const struct nsm_dgram *d);

/* Decoders: 0, or -errno (-EMSGSIZE: short, -E2BIG: a field too long,
 * -EINVAL: a bad boolean, enum or string) with @out unspecified. */
int nlm4_dec_args(struct rrr_xdr *x, uint32_t proc, struct nlm4_args *out);
int nlm4_dec_res(struct rrr_xdr *x, bool test, struct nlm4_res *out);
int nlm4_dec_shareargs(struct rrr_xdr *x, struct nlm4_shareargs *out);
int nlm4_dec_shareres(struct rrr_xdr *x, struct nlm4_shareres *out);
int nlm_dec_notify(struct rrr_xdr *x, struct nlm_notify *out);
int nsm_dec_mon(struct rrr_xdr *x, struct nsm_mon *out);
int nsm_dec_status(struct rrr_xdr *x, struct nsm_status *out);
/* SM_STAT/SM_MON's sm_stat_res: result and state */
int nsm_dec_stat_res(struct rrr_xdr *x, uint32_t *res, int32_t *state);

/* Encoders: 0 or -EMSGSIZE when @x is full. */
int nlm4_enc_args(struct rrr_xdr *x, uint32_t proc, const struct nlm4_args *a);
int nlm4_enc_res(struct rrr_xdr *x, bool test, const struct nlm4_res *r);
int nlm4_enc_shareargs(struct rrr_xdr *x, const struct nlm4_shareargs *a);
int nlm4_enc_shareres(struct rrr_xdr *x, const struct nlm4_shareres *r);
int nlm_enc_notify(struct rrr_xdr *x, const struct nlm_notify *n);
int nsm_enc_mon(struct rrr_xdr *x, const struct nsm_mon *m);
int nsm_enc_status(struct rrr_xdr *x, const struct nsm_status *s);
int nsm_enc_stat_res(struct rrr_xdr *x, uint32_t res, int32_t state);

#endif
