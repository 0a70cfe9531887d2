/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/raw_rpc.c - hand-made ONC RPC calls (see raw_rpc.h). The
 * codec pair travels through struct rrr_call's opaque args/res as a small
 * {codec, object} box, so any codec of rrr/nfs3_xdr.h serves unchanged.
 */
#include "tests/lib/raw_rpc.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

const struct rrr_rpc_cred th_root_cred = {.flavor = RRR_AUTH_SYS};

void th_auth_sys(struct rrr_rpc_cred *cred, uint32_t uid, uint32_t gid)
{
	memset(cred, 0, sizeof(*cred));
	cred->flavor = RRR_AUTH_SYS;
	cred->sys.uid = uid;
	cred->sys.gid = gid;
}

int th_raw_connect(const char *transport, unsigned port, int timeout_ms, bool fail_fast,
		   struct rrr_clnt **out)
{
	char p[16];
	snprintf(p, sizeof(p), "%u", port);
	struct rrr_clnt_opts co;
	rrr_clnt_opts_init(&co);
	co.transport = transport;
	co.provider = "soft";
	co.host = "127.0.0.1";
	co.port = p;
	co.timeout_ms = timeout_ms;
	co.fail_fast = fail_fast;
	*out = NULL;
	return rrr_clnt_create(&co, out);
}

void th_raw_close(struct rrr_clnt **c)
{
	if (*c)
		rrr_clnt_destroy(*c);
	*c = NULL;
}

struct box {
	th_xdr_fn fn;
	void *obj;
};

static int box_enc(struct rrr_xdr *x, const void *arg)
{
	const struct box *b = arg;
	return b->fn ? b->fn(x, b->obj) : 0;
}

static int box_dec(struct rrr_xdr *x, void *arg)
{
	struct box *b = arg;
	return b->fn ? b->fn(x, b->obj) : 0;
}

int th_raw_call(struct rrr_clnt *c, uint32_t prog, uint32_t proc, const struct rrr_rpc_cred *cred,
		th_xdr_fn enc, void *args, th_xdr_fn dec, void *res)
{
	struct box a = {enc, args}, r = {dec, res};
	struct rrr_call k = {.prog = prog, .vers = 3, .proc = proc, .cred = cred,
			     .encode = box_enc, .args = &a, .decode = box_dec, .res = &r};

	return rrr_clnt_call(c, &k);
}

uint32_t th_raw_access(struct rrr_clnt *c, uint32_t uid, const struct rrr_nfs3_fh *fh)
{
	struct rrr_rpc_cred cred;
	th_auth_sys(&cred, uid, uid);
	struct rrr_nfs3_access_args a = {.fh = *fh, .access = 0x3f};
	struct rrr_nfs3_access_res r;
	memset(&r, 0, sizeof(r));
	cr_assert_eq(th_raw_call(c, RRR_NFS3_PROGRAM, RRR_NFS3_ACCESS, &cred,
				 TH_XF(rrr_nfs3_xdr_access_args), &a, TH_XF(rrr_nfs3_xdr_access_res),
				 &r),
		     0, "ACCESS as uid %u: %s", uid, rrr_last_error());
	cr_assert_eq(r.status, 0, "ACCESS as uid %u: status %u", uid, r.status);
	return r.access;
}

uint32_t th_raw_mnt(struct rrr_clnt *c, const char *path, struct rrr_nfs3_fh *fh)
{
	static struct rrr_mnt_dirpath d;
	static struct rrr_mnt_res r;
	memset(&r, 0, sizeof(r));
	snprintf(d.path, sizeof(d.path), "%s", path);
	cr_assert_eq(th_raw_call(c, RRR_MNT_PROGRAM, RRR_MNT_MNT, &th_root_cred,
				 TH_XF(rrr_mnt_xdr_dirpath), &d, TH_XF(rrr_mnt_xdr_mnt_res), &r),
		     0, "MNT reply decodes");
	if (fh && r.status == RRR_MNT3_OK)
		*fh = r.fh;
	return r.status;
}
