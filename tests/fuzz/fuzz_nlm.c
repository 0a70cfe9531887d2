/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_nlm.c - libFuzzer harness for rrr-server's NLM v4 and
 * NSM v1 decoders (server/fs/nlm_xdr.c, linked in by the Makefile: it belongs to
 * the program, not the library). The first input byte picks a decoder
 * (and for the lock arguments the procedure), the rest is the XDR stream.
 * Whatever decodes must keep every length within its limit and every name
 * NUL-terminated, and must be canonical: encode(decode(x)) decodes and
 * encodes again to the same bytes. One kind is a whole NSM call datagram
 * as the UDP listener takes it (nsm_dgram_decode, any length): what it
 * accepts must say why in a valid accept status, an SM_NOTIFY it lets
 * through must carry a name of 1..1024 bytes, and its reply must encode
 * and decode back with the call's xid.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/oncrpc.h>

#include "server/fs/nlm_xdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

union msg {
	struct nlm4_args args;
	struct nlm4_res res;
	struct nlm4_shareargs share;
	struct nlm4_shareres shareres;
	struct nlm_notify notify;
	struct nsm_mon mon;
	struct nsm_status status;
	struct {
		uint32_t res;
		int32_t state;
	} stat;
};

static const uint32_t procs[] = {NLM4_TEST,	  NLM4_LOCK,	  NLM4_CANCEL,	    NLM4_UNLOCK,
				 NLM4_GRANTED,	  NLM4_TEST_MSG,  NLM4_LOCK_MSG,    NLM4_CANCEL_MSG,
				 NLM4_UNLOCK_MSG, NLM4_GRANTED_MSG, NLM4_NM_LOCK};
#define NPROCS (sizeof(procs) / sizeof(procs[0]))
#define KIND_DGRAM (NPROCS + 9)
#define NKINDS (NPROCS + 10)

static int codec(unsigned kind, struct rrr_xdr *x, union msg *m, bool enc)
{
	if (kind < NPROCS)
		return enc ? nlm4_enc_args(x, procs[kind], &m->args)
			   : nlm4_dec_args(x, procs[kind], &m->args);
	switch (kind - NPROCS) {
	case 0: return enc ? nlm4_enc_res(x, false, &m->res) : nlm4_dec_res(x, false, &m->res);
	case 1: return enc ? nlm4_enc_res(x, true, &m->res) : nlm4_dec_res(x, true, &m->res);
	case 2: return enc ? nlm4_enc_shareargs(x, &m->share) : nlm4_dec_shareargs(x, &m->share);
	case 3:
		return enc ? nlm4_enc_shareres(x, &m->shareres) : nlm4_dec_shareres(x, &m->shareres);
	case 4: return enc ? nlm_enc_notify(x, &m->notify) : nlm_dec_notify(x, &m->notify);
	case 5: return enc ? nsm_enc_mon(x, &m->mon) : nsm_dec_mon(x, &m->mon);
	case 6: return enc ? nsm_enc_status(x, &m->status) : nsm_dec_status(x, &m->status);
	default:
		return enc ? nsm_enc_stat_res(x, m->stat.res, m->stat.state)
			   : nsm_dec_stat_res(x, &m->stat.res, &m->stat.state);
	}
}

static void bounded(const union msg *m, unsigned kind)
{
	if (kind < NPROCS) {
		check(m->args.cookie.len <= NLM_MAXOBJ && m->args.lock.fh.len <= NLM_MAXOBJ &&
		      m->args.lock.oh.len <= NLM_MAXOBJ);
		check(memchr(m->args.lock.caller, 0, sizeof(m->args.lock.caller)) != NULL);
	} else if (kind == NPROCS + 1) {
		check(m->res.stat <= NLM4_FAILED && m->res.holder.oh.len <= NLM_MAXOBJ);
	} else if (kind == NPROCS + 2) {
		check(m->share.share.mode <= 3 && m->share.share.access <= 3);
		check(memchr(m->share.share.caller, 0, sizeof(m->share.share.caller)) != NULL);
	}
}

static uint8_t out1[8192], out2[8192];

/* A datagram of @size bytes at @in, as the UDP listener sees it. */
static void dgram(uint8_t *in, size_t size)
{
	static struct nsm_dgram d;
	if (nsm_dgram_decode(in, size, &d) < 0)
		return;
	check(d.accept_stat <= RRR_RPC_GARBAGE_ARGS);
	if (d.accept_stat == RRR_RPC_SUCCESS) {
		check(d.proc == NSM_NULL || d.proc == NSM_NOTIFY);
		size_t n = strnlen(d.notify.name, sizeof(d.notify.name));
		check(n < sizeof(d.notify.name) && (d.proc == NSM_NULL || n >= 1));
	}
	uint8_t out[64];
	struct rrr_xdr x;
	struct rrr_rpc_reply r;
	rrr_xdr_init(&x, out, sizeof(out), RRR_XDR_ENCODE);
	check(nsm_dgram_reply(&x, &d) == 0);
	size_t len = rrr_xdr_pos(&x);
	rrr_xdr_init(&x, out, len, RRR_XDR_DECODE);
	check(rrr_rpc_decode_reply(&x, &r) == 0 && r.xid == d.xid && r.accept_stat == d.accept_stat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned kind = data[0] % NKINDS;
	static union msg m, m2;
	memset(&m, 0, sizeof(m));
	uint8_t *in = malloc(size);
	if (!in)
		return 0;
	memcpy(in, data + 1, size - 1);
	if (kind == KIND_DGRAM) {
		dgram(in, size - 1);
		free(in);
		return 0;
	}
	struct rrr_xdr x;
	rrr_xdr_init(&x, in, (size - 1) & ~(size_t)3, RRR_XDR_DECODE);
	if (codec(kind, &x, &m, false) == 0) {
		bounded(&m, kind);
		rrr_xdr_init(&x, out1, sizeof(out1), RRR_XDR_ENCODE);
		check(codec(kind, &x, &m, true) == 0);
		size_t n1 = rrr_xdr_pos(&x);
		memset(&m2, 0, sizeof(m2));
		rrr_xdr_init(&x, out1, n1, RRR_XDR_DECODE);
		check(codec(kind, &x, &m2, false) == 0);
		check(rrr_xdr_pos(&x) == n1);
		rrr_xdr_init(&x, out2, sizeof(out2), RRR_XDR_ENCODE);
		check(codec(kind, &x, &m2, true) == 0);
		check(rrr_xdr_pos(&x) == n1 && memcmp(out1, out2, n1) == 0);
	}
	free(in);
	return 0;
}
