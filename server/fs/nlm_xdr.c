/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nlm_xdr.c - codecs of the NLM v4 and NSM v1 messages
 * (nlm_xdr.h), byte for byte as XNFS / RFC 1813 and the Linux kernel and
 * rpc.statd put them on the wire (tshark decodes them as "nlm" and "stat").
 *
 * Normal operation: the lock manager (nlm.c) decodes a call's arguments
 * into a fixed struct (copies, bounded by the protocol's limits), acts,
 * and encodes the reply; it encodes GRANTED, SM_NOTIFY and SM_MON calls
 * the same way. One decoder per argument type, the fields a procedure
 * does not carry left zero.
 *
 * Recovery: a peer's message is hostile. Every length is checked against
 * its limit before anything is copied, booleans must be 0 or 1, names must
 * hold no NUL; a decoder that fails says how (-errno) and the caller
 * answers GARBAGE_ARGS. Nothing is allocated, so nothing leaks.
 *
 * The messages (u32/i32/u64: 4/4/8 bytes big-endian; netobj and string:
 * length word, bytes, zero pad to 4):
 *
 *   nlm4_lock:    +-------------+--------+--------+--------+----------+-------+
 *                 | caller_name | fh     | oh     | svid   | l_offset | l_len |
 *                 | string<1024>| netobj | netobj | i32    | u64      | u64   |
 *                 +-------------+--------+--------+--------+----------+-------+
 *   TEST, GRANTED: cookie(netobj) exclusive(bool) alock(nlm4_lock)
 *   LOCK, NM_LOCK: cookie block(bool) exclusive(bool) alock reclaim(bool) state(i32)
 *   CANCEL:        cookie block exclusive alock
 *   UNLOCK:        cookie alock
 *   nlm4_res:      cookie stat(enum nlm4_stats)
 *   nlm4_testres:  cookie stat [stat == DENIED: exclusive(bool) svid(i32)
 *                               oh(netobj) l_offset(u64) l_len(u64)]
 *   nlm4_share:    caller_name fh oh mode(enum fsh4_mode) access(enum fsh4_access)
 *   SHARE/UNSHARE: cookie share(nlm4_share) reclaim(bool)
 *   nlm4_shareres: cookie stat sequence(i32)
 *   FREE_ALL (nlm4_notify), SM_NOTIFY (stat_chge): name(string) state(i32)
 *
 *   SM_MON (mon):  mon_name(string) my_name(string) my_prog my_vers my_proc
 *                  (u32 each) priv(opaque[16])
 *   sm_stat_res:   res(enum: 0 succ, 1 fail) state(i32)
 *   statd's callback (status): mon_name(string) state(i32) priv(opaque[16])
 *
 * An NSM call datagram (UDP, nsm_udp.c) is decoded whole here: the RPC
 * call header by the ONC RPC codec (rrr/oncrpc.h), then the program,
 * version and procedure (NULL and SM_NOTIFY only), then the stat_chge, and
 * nothing may follow it; what is not a call gets no answer, the rest an
 * accepted reply with the status that says why (RFC 5531).
 */
#include <errno.h>
#include <string.h>

#include <rrr/oncrpc.h>

#include "server/fs/nlm_xdr.h"

#define TRY(e)                                                                                    \
	do {                                                                                      \
		int rc_ = (e);                                                                    \
		if (rc_ < 0)                                                                      \
			return rc_;                                                               \
	} while (0)

static int get_obj(struct rrr_xdr *x, struct nlm_obj *o)
{
	return rrr_xdr_get_opaque(x, o->data, NLM_MAXOBJ, &o->len);
}

static int put_obj(struct rrr_xdr *x, const struct nlm_obj *o)
{
	return o->len > NLM_MAXOBJ ? -E2BIG : rrr_xdr_put_opaque(x, o->data, o->len);
}

static int get_i32(struct rrr_xdr *x, int32_t *v)
{
	uint32_t u;
	TRY(rrr_xdr_get_u32(x, &u));
	*v = (int32_t)u;
	return 0;
}

static int put_name(struct rrr_xdr *x, const char *s)
{
	return strnlen(s, NLM_MAXNAME + 1) > NLM_MAXNAME ? -E2BIG : rrr_xdr_put_string(x, s);
}

static int get_lock(struct rrr_xdr *x, struct nlm4_lock *l)
{
	TRY(rrr_xdr_get_string(x, l->caller, NLM_MAXNAME));
	TRY(get_obj(x, &l->fh));
	TRY(get_obj(x, &l->oh));
	TRY(get_i32(x, &l->svid));
	TRY(rrr_xdr_get_u64(x, &l->offset));
	return rrr_xdr_get_u64(x, &l->len);
}

static int put_lock(struct rrr_xdr *x, const struct nlm4_lock *l)
{
	TRY(put_name(x, l->caller));
	TRY(put_obj(x, &l->fh));
	TRY(put_obj(x, &l->oh));
	TRY(rrr_xdr_put_u32(x, (uint32_t)l->svid));
	TRY(rrr_xdr_put_u64(x, l->offset));
	return rrr_xdr_put_u64(x, l->len);
}

/* Which of block / exclusive / reclaim+state a procedure's arguments carry. */
static void shape(uint32_t proc, bool *block, bool *excl, bool *tail)
{
	*block = proc == NLM4_LOCK || proc == NLM4_LOCK_MSG || proc == NLM4_NM_LOCK ||
		 proc == NLM4_CANCEL || proc == NLM4_CANCEL_MSG;
	*excl = proc != NLM4_UNLOCK && proc != NLM4_UNLOCK_MSG;
	*tail = proc == NLM4_LOCK || proc == NLM4_LOCK_MSG || proc == NLM4_NM_LOCK;
}

int nlm4_dec_args(struct rrr_xdr *x, uint32_t proc, struct nlm4_args *a)
{
	bool block, excl, tail;
	shape(proc, &block, &excl, &tail);
	a->block = a->exclusive = a->reclaim = false;
	a->state = 0;
	TRY(get_obj(x, &a->cookie));
	if (block)
		TRY(rrr_xdr_get_bool(x, &a->block));
	if (excl)
		TRY(rrr_xdr_get_bool(x, &a->exclusive));
	TRY(get_lock(x, &a->lock));
	if (tail) {
		TRY(rrr_xdr_get_bool(x, &a->reclaim));
		TRY(get_i32(x, &a->state));
	}
	return 0;
}

int nlm4_enc_args(struct rrr_xdr *x, uint32_t proc, const struct nlm4_args *a)
{
	bool block, excl, tail;
	shape(proc, &block, &excl, &tail);
	TRY(put_obj(x, &a->cookie));
	if (block)
		TRY(rrr_xdr_put_bool(x, a->block));
	if (excl)
		TRY(rrr_xdr_put_bool(x, a->exclusive));
	TRY(put_lock(x, &a->lock));
	if (tail) {
		TRY(rrr_xdr_put_bool(x, a->reclaim));
		TRY(rrr_xdr_put_u32(x, (uint32_t)a->state));
	}
	return 0;
}

int nlm4_dec_res(struct rrr_xdr *x, bool test, struct nlm4_res *r)
{
	memset(&r->holder, 0, sizeof(r->holder));
	TRY(get_obj(x, &r->cookie));
	TRY(rrr_xdr_get_enum(x, NLM4_FAILED, &r->stat));
	if (test && r->stat == NLM4_DENIED) {
		TRY(rrr_xdr_get_bool(x, &r->holder.exclusive));
		TRY(get_i32(x, &r->holder.svid));
		TRY(get_obj(x, &r->holder.oh));
		TRY(rrr_xdr_get_u64(x, &r->holder.offset));
		TRY(rrr_xdr_get_u64(x, &r->holder.len));
	}
	return 0;
}

int nlm4_enc_res(struct rrr_xdr *x, bool test, const struct nlm4_res *r)
{
	TRY(put_obj(x, &r->cookie));
	TRY(rrr_xdr_put_enum(x, r->stat));
	if (test && r->stat == NLM4_DENIED) {
		TRY(rrr_xdr_put_bool(x, r->holder.exclusive));
		TRY(rrr_xdr_put_u32(x, (uint32_t)r->holder.svid));
		TRY(put_obj(x, &r->holder.oh));
		TRY(rrr_xdr_put_u64(x, r->holder.offset));
		TRY(rrr_xdr_put_u64(x, r->holder.len));
	}
	return 0;
}

int nlm4_dec_shareargs(struct rrr_xdr *x, struct nlm4_shareargs *a)
{
	TRY(get_obj(x, &a->cookie));
	TRY(rrr_xdr_get_string(x, a->share.caller, NLM_MAXNAME));
	TRY(get_obj(x, &a->share.fh));
	TRY(get_obj(x, &a->share.oh));
	TRY(rrr_xdr_get_enum(x, 3, &a->share.mode));
	TRY(rrr_xdr_get_enum(x, 3, &a->share.access));
	return rrr_xdr_get_bool(x, &a->reclaim);
}

int nlm4_enc_shareargs(struct rrr_xdr *x, const struct nlm4_shareargs *a)
{
	TRY(put_obj(x, &a->cookie));
	TRY(put_name(x, a->share.caller));
	TRY(put_obj(x, &a->share.fh));
	TRY(put_obj(x, &a->share.oh));
	TRY(rrr_xdr_put_enum(x, a->share.mode));
	TRY(rrr_xdr_put_enum(x, a->share.access));
	return rrr_xdr_put_bool(x, a->reclaim);
}

int nlm4_dec_shareres(struct rrr_xdr *x, struct nlm4_shareres *r)
{
	TRY(get_obj(x, &r->cookie));
	TRY(rrr_xdr_get_enum(x, NLM4_FAILED, &r->stat));
	return get_i32(x, &r->sequence);
}

int nlm4_enc_shareres(struct rrr_xdr *x, const struct nlm4_shareres *r)
{
	TRY(put_obj(x, &r->cookie));
	TRY(rrr_xdr_put_enum(x, r->stat));
	return rrr_xdr_put_u32(x, (uint32_t)r->sequence);
}

int nlm_dec_notify(struct rrr_xdr *x, struct nlm_notify *n)
{
	TRY(rrr_xdr_get_string(x, n->name, NLM_MAXNAME));
	return get_i32(x, &n->state);
}

int nlm_enc_notify(struct rrr_xdr *x, const struct nlm_notify *n)
{
	TRY(put_name(x, n->name));
	return rrr_xdr_put_u32(x, (uint32_t)n->state);
}

int nsm_dec_mon(struct rrr_xdr *x, struct nsm_mon *m)
{
	TRY(rrr_xdr_get_string(x, m->mon_name, NLM_MAXNAME));
	TRY(rrr_xdr_get_string(x, m->id.my_name, NLM_MAXNAME));
	TRY(rrr_xdr_get_u32(x, &m->id.prog));
	TRY(rrr_xdr_get_u32(x, &m->id.vers));
	TRY(rrr_xdr_get_u32(x, &m->id.proc));
	return rrr_xdr_get_fixed(x, m->priv, NSM_PRIV);
}

int nsm_enc_mon(struct rrr_xdr *x, const struct nsm_mon *m)
{
	TRY(put_name(x, m->mon_name));
	TRY(put_name(x, m->id.my_name));
	TRY(rrr_xdr_put_u32(x, m->id.prog));
	TRY(rrr_xdr_put_u32(x, m->id.vers));
	TRY(rrr_xdr_put_u32(x, m->id.proc));
	return rrr_xdr_put_fixed(x, m->priv, NSM_PRIV);
}

int nsm_dec_status(struct rrr_xdr *x, struct nsm_status *s)
{
	TRY(rrr_xdr_get_string(x, s->mon_name, NLM_MAXNAME));
	TRY(get_i32(x, &s->state));
	return rrr_xdr_get_fixed(x, s->priv, NSM_PRIV);
}

int nsm_enc_status(struct rrr_xdr *x, const struct nsm_status *s)
{
	TRY(put_name(x, s->mon_name));
	TRY(rrr_xdr_put_u32(x, (uint32_t)s->state));
	return rrr_xdr_put_fixed(x, s->priv, NSM_PRIV);
}

int nsm_dec_stat_res(struct rrr_xdr *x, uint32_t *res, int32_t *state)
{
	TRY(rrr_xdr_get_enum(x, NSM_STAT_FAIL, res));
	return get_i32(x, state);
}

int nsm_enc_stat_res(struct rrr_xdr *x, uint32_t res, int32_t state)
{
	TRY(rrr_xdr_put_enum(x, res));
	return rrr_xdr_put_u32(x, (uint32_t)state);
}

int nsm_dgram_decode(void *buf, size_t len, struct nsm_dgram *out)
{
	memset(out, 0, sizeof(*out));
	if (len > NSM_DGRAM_MAX)
		return -EMSGSIZE;
	struct rrr_xdr x;
	struct rrr_rpc_call c;
	rrr_xdr_init(&x, buf, len, RRR_XDR_DECODE);
	TRY(rrr_rpc_decode_call(&x, &c));
	out->xid = c.xid;
	out->proc = c.proc;
	if (c.prog != NSM_PROG)
		out->accept_stat = RRR_RPC_PROG_UNAVAIL;
	else if (c.vers != NSM_VERS)
		out->accept_stat = RRR_RPC_PROG_MISMATCH;
	else if (c.proc != NSM_NULL && c.proc != NSM_NOTIFY)
		out->accept_stat = RRR_RPC_PROC_UNAVAIL;
	else if (c.proc == NSM_NOTIFY &&
		 (nlm_dec_notify(&x, &out->notify) < 0 || !out->notify.name[0]))
		out->accept_stat = RRR_RPC_GARBAGE_ARGS;
	else if (rrr_xdr_remaining(&x))
		out->accept_stat = RRR_RPC_GARBAGE_ARGS;
	else
		out->accept_stat = RRR_RPC_SUCCESS;
	if (out->accept_stat != RRR_RPC_SUCCESS)
		memset(&out->notify, 0, sizeof(out->notify));
	return 0;
}

int nsm_dgram_reply(struct rrr_xdr *x, const struct nsm_dgram *d)
{
	return rrr_rpc_encode_accepted(x, d->xid, d->accept_stat, NSM_VERS, NSM_VERS);
}
