/* SPDX-License-Identifier: MIT */
/*
 * client/nfs3_clnt.c - a typed NFSv3 client over rrr_clnt (RDMA or TCP).
 *
 * Normal operation: rrr_nfs3_mount() sends MOUNT MNT over a short-lived TCP
 * connection to the mount port (as the Linux client does with
 * mountproto=tcp), or over the NFS connection itself when no mount port is
 * given, then opens the NFS connection and asks FSINFO for the transfer
 * limits: rsize/wsize are the smallest of the caller's wish, the server's
 * rtmax/wtmax, the transport's payload limit and 1 MiB. Every typed call is
 * one synchronous rrr_clnt_call() whose encode/decode callbacks are the
 * codecs of xdr/nfs3.c; READ and WRITE hand their data to the transport as
 * a DDP payload (sink or source), so on RDMA the bytes move by RDMA Write /
 * RDMA Read straight between the caller's buffers and the server, each
 * buffer registered just for that call and invalidated before it completes.
 *
 * Connections (nconnect): after FSINFO, mount opens nconnect - 1 more
 * rrr_clnt connections to the same server, one right after the other (the
 * server hands new connections round-robin to its worker threads, so
 * consecutive ones land on different cores). Every call then takes the
 * next connection from one atomic counter (round-robin; no lock, no
 * per-connection state in this file): each rrr_clnt has its own credits,
 * progress thread and recovery, so the connections share nothing here but
 * the counter. Counters are summed over the connections on demand.
 *
 * READ, WRITE and COMMIT (synchronous, asynchronous and pipelined) are in
 * client/nfs3_io.c; this file mounts and makes the namespace calls.
 *
 * Recovery: transport errors end the operation with the negative errno
 * (the message is in rrr_last_error()); an NFS error ends it with the
 * matching negative errno (rrr_nfs3_stat_to_errno()), and the exact
 * nfsstat3 is kept thread-local for rrr_nfs3_last_status(): reset when a
 * public call starts, set when a reply carries an error (nfs_err).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "client/nfs3_impl.h"
#include "common/rrr_impl.h"

#define DIR_MAXCOUNT 32768u
#define DIR_DIRCOUNT 8192u


/* ------------------------------------------------------------ codec adapters */
#define ENC(fn, type)                                                                      \
	static int enc_##fn(struct rrr_xdr *x, const void *a)                              \
	{                                                                                  \
		return rrr_nfs3_xdr_##fn(x, (type *)(uintptr_t)a);                         \
	}
#define DEC(fn, type)                                                                      \
	static int dec_##fn(struct rrr_xdr *x, void *r)                                    \
	{                                                                                  \
		return rrr_nfs3_xdr_##fn(x, (type *)r);                                    \
	}

ENC(fh_args, struct rrr_nfs3_fh_args)
ENC(setattr_args, struct rrr_nfs3_setattr_args)
ENC(diropargs, struct rrr_nfs3_diropargs)
ENC(create_args, struct rrr_nfs3_create_args)
ENC(mkdir_args, struct rrr_nfs3_mkdir_args)
ENC(symlink_args, struct rrr_nfs3_symlink_args)
ENC(rename_args, struct rrr_nfs3_rename_args)
ENC(readdirplus_args, struct rrr_nfs3_readdir_args)
DEC(getattr_res, struct rrr_nfs3_getattr_res)
DEC(wcc_res, struct rrr_nfs3_wcc_res)
DEC(lookup_res, struct rrr_nfs3_lookup_res)
DEC(readlink_res, struct rrr_nfs3_readlink_res)
DEC(create_res, struct rrr_nfs3_create_res)
DEC(rename_res, struct rrr_nfs3_rename_res)
DEC(readdir_res, struct rrr_nfs3_readdir_res)
DEC(fsstat_res, struct rrr_nfs3_fsstat_res)
DEC(fsinfo_res, struct rrr_nfs3_fsinfo_res)

static int enc_dirpath(struct rrr_xdr *x, const void *a)
{
	return rrr_mnt_xdr_dirpath(x, (struct rrr_mnt_dirpath *)(uintptr_t)a);
}

static int dec_mnt_res(struct rrr_xdr *x, void *r)
{
	return rrr_mnt_xdr_mnt_res(x, r);
}

/* ------------------------------------------------------------ call helper */
/* The connection for the next call: round-robin over all of them. */
struct rrr_clnt *rrr__nfs3_pick(struct rrr_nfs3 *n)
{
	if (n->nconn == 1)
		return n->clnt[0];
	return n->clnt[atomic_fetch_add_explicit(&n->next, 1, memory_order_relaxed) % n->nconn];
}

const struct rrr_rpc_cred *rrr__nfs3_cred(const struct rrr_nfs3 *n)
{
	return n->use_cred ? &n->cred : NULL;
}

static struct rrr_clnt *pick(struct rrr_nfs3 *n)
{
	return rrr__nfs3_pick(n);
}

static void call_init(struct rrr_nfs3 *n, struct rrr_call *k, uint32_t proc,
		      rrr_xdr_encode_fn enc, const void *args, rrr_xdr_decode_fn dec, void *res)
{
	memset(k, 0, sizeof(*k));
	k->prog = RRR_NFS3_PROGRAM;
	k->vers = RRR_NFS3_VERSION;
	k->proc = proc;
	k->cred = n->use_cred ? &n->cred : NULL;
	k->encode = enc;
	k->args = args;
	k->decode = dec;
	k->res = res;
	k->timeout_ms = n->timeout_ms;
}

/* The nfsstat3 behind the last -errno an NFS call returned on this thread
 * (rrr_nfs3_last_status()): every public call that returns int resets it
 * on entry, nfs_err() sets it when a reply carries an error. */
static _Thread_local uint32_t last_status;

uint32_t rrr_nfs3_last_status(void)
{
	return last_status;
}

void rrr__nfs3_status_reset(void)
{
	last_status = RRR_NFS3_OK;
}

int rrr__nfs3_err(uint32_t st)
{
	if (st == RRR_NFS3_OK)
		return 0;
	last_status = st;
	return rrr_nfs3_stat_to_errno(st);
}

int rrr__nfs3_call_status(int rc, const struct rrr_call *k, const char *what)
{
	if (rc == -EPROTO)
		return rrr__set_error(rc, "%s: the server refused the RPC (status %u)", what,
				      k->rpc_stat);
	if (rc == -EBADMSG)
		return rrr__set_error(rc, "%s: undecodable reply from the server", what);
	if (rc == -ETIMEDOUT)
		return rrr__set_error(rc, "%s: no reply within the timeout", what);
	if (rc < 0 && rc != -ECONNRESET)
		return rrr__set_error(rc, "%s failed: %s", what, strerror(-rc));
	if (rc == -ECONNRESET)
		return rrr__set_error(rc, "%s: the connection to the server was lost", what);
	return rc;
}

static int nfs_err(uint32_t st)
{
	return rrr__nfs3_err(st);
}

static int call_status(int rc, const struct rrr_call *k, const char *what)
{
	return rrr__nfs3_call_status(rc, k, what);
}

static int sync_call(struct rrr_nfs3 *n, uint32_t proc, rrr_xdr_encode_fn enc, const void *args,
		     rrr_xdr_decode_fn dec, void *res, bool idempotent, const char *what)
{
	struct rrr_call k;
	call_init(n, &k, proc, enc, args, dec, res);
	k.idempotent = idempotent;
	return call_status(rrr_clnt_call(pick(n), &k), &k, what);
}

/* ------------------------------------------------------------ mount */
void rrr_nfs3_opts_init(struct rrr_nfs3_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->transport = "rdma";
	o->provider = "soft";
	o->port = "20049";
	o->mount_port = "20048";
	o->export_path = "/";
	o->rsize = o->wsize = RRR_NFS3_MAX_DATA;
	o->timeout_ms = 30000;
	o->uid = (uint32_t)getuid();
	o->gid = (uint32_t)getgid();
	o->nconnect = 1;
}

static int do_mnt(struct rrr_nfs3 *n, struct rrr_clnt *c, const char *path)
{
	struct rrr_mnt_dirpath d;
	if (strlen(path) > RRR_NFS3_MAXPATHLEN)
		return rrr__set_error(-ENAMETOOLONG, "export path too long");
	snprintf(d.path, sizeof(d.path), "%s", path);
	struct rrr_mnt_res r;
	memset(&r, 0, sizeof(r));
	struct rrr_call k;
	call_init(n, &k, RRR_MNT_MNT, enc_dirpath, &d, dec_mnt_res, &r);
	k.prog = RRR_MNT_PROGRAM;
	k.vers = RRR_MNT_VERSION;
	int rc = call_status(rrr_clnt_call(c, &k), &k, "MOUNT MNT");
	if (rc < 0)
		return rc;
	if (r.status != RRR_MNT3_OK) {
		int err = nfs_err(r.status == RRR_MNT3ERR_NOENT ? RRR_NFS3ERR_NOENT
							       : RRR_NFS3ERR_ACCES);

		return rrr__set_error(err, "the server refused to mount '%s' (mountstat3 %u): "
				      "check --export against the server's export name",
				      path, r.status);
	}
	n->root = r.fh;
	return 0;
}

int rrr_nfs3_mount(const struct rrr_nfs3_opts *opts, struct rrr_nfs3 **out)
{
	last_status = RRR_NFS3_OK;
	if (!opts || !opts->host || !out)
		return rrr__set_error(-EINVAL, "rrr_nfs3_mount: a server host is required");
	if (opts->nconnect < 1 || opts->nconnect > RRR_NFS3_MAX_NCONNECT)
		return rrr__set_error(-EINVAL,
				      "rrr_nfs3_mount: nconnect %u is out of range: use 1 .. %u "
				      "connections (rrr_nfs3_opts_init() sets 1)",
				      opts->nconnect, RRR_NFS3_MAX_NCONNECT);
	struct rrr_nfs3 *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	atomic_init(&n->next, 0);
	n->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
	snprintf(n->host, sizeof(n->host), "%s", opts->host);
	snprintf(n->export_path, sizeof(n->export_path), "%s",
		 opts->export_path ? opts->export_path : "/");
	if (!opts->auth_none) {
		n->use_cred = true;
		n->cred.flavor = RRR_AUTH_SYS;
		n->cred.sys.uid = opts->uid;
		n->cred.sys.gid = opts->gid;
		n->cred.sys.ngids = 0;
		if (gethostname(n->cred.sys.machinename, sizeof(n->cred.sys.machinename)) < 0)
			snprintf(n->cred.sys.machinename, sizeof(n->cred.sys.machinename), "rrr");
		n->cred.sys.machinename[RRR_RPC_AUTH_SYS_MAX_MACHINE] = '\0';
	}

	struct rrr_clnt_opts co;
	int rc;
	bool separate_mount = opts->mount_port && *opts->mount_port && strcmp(opts->mount_port, "0");
	if (separate_mount) {
		snprintf(n->mount_port, sizeof(n->mount_port), "%s", opts->mount_port);
		rrr_clnt_opts_init(&co);
		co.transport = "tcp";
		co.host = opts->host;
		co.port = opts->mount_port;
		co.timeout_ms = n->timeout_ms;
		struct rrr_clnt *mc;
		rc = rrr_clnt_create(&co, &mc);
		if (rc < 0)
			goto fail;
		rc = do_mnt(n, mc, n->export_path);
		rrr_clnt_destroy(mc);
		if (rc != 0)
			goto fail;
	}
	rrr_clnt_opts_init(&co);
	co.transport = opts->transport ? opts->transport : "rdma";
	co.provider = opts->provider;
	co.provider_opts = opts->provider_opts;
	co.host = opts->host;
	co.port = opts->port ? opts->port : "20049";
	co.timeout_ms = n->timeout_ms;
	co.no_remote_inv = opts->no_remote_inv;
	co.fail_fast = opts->fail_fast;
	co.wait_mode = opts->wait_mode;
	co.spin_us = opts->spin_us;
	rc = rrr_clnt_create(&co, &n->clnt[0]);
	if (rc < 0)
		goto fail;
	n->nconn = 1;
	if (!separate_mount) {
		rc = do_mnt(n, n->clnt[0], n->export_path);
		if (rc != 0)
			goto fail;
	}

	struct rrr_nfs3_fh_args fa = {.fh = n->root};
	struct rrr_nfs3_fsinfo_res fi;
	memset(&fi, 0, sizeof(fi));
	rc = sync_call(n, RRR_NFS3_FSINFO, enc_fh_args, &fa, dec_fsinfo_res, &fi, true, "FSINFO");
	if (rc < 0)
		goto fail;
	if (fi.status) {
		rc = nfs_err(fi.status);
		rrr__set_error(-EIO, "FSINFO of the export root failed: %s",
			       rrr_nfs3_strstat(fi.status));
		goto fail;
	}
	/* The other connections, one right after the other (see the top). */
	while (n->nconn < opts->nconnect) {
		rc = rrr_clnt_create(&co, &n->clnt[n->nconn]);
		if (rc < 0) {
			char why[256];
			const char *e = rrr_last_error();
			snprintf(why, sizeof(why), "%s", e ? e : strerror(-rc));
			rrr__set_error(rc, "connection %u of %u (nconnect) to %s:%s failed: %s",
				       n->nconn + 1, opts->nconnect, co.host, co.port, why);
			goto fail;
		}
		n->nconn++;
	}
	uint32_t lim = RRR_NFS3_MAX_DATA;
	for (unsigned i = 0; i < n->nconn; i++) {
		uint32_t l = rrr_clnt_max_payload(n->clnt[i]);
		if (l && l < lim)
			lim = l;
	}
	n->rsize = opts->rsize ? opts->rsize : RRR_NFS3_MAX_DATA;
	n->wsize = opts->wsize ? opts->wsize : RRR_NFS3_MAX_DATA;
	if (fi.rtmax && n->rsize > fi.rtmax)
		n->rsize = fi.rtmax;
	if (fi.wtmax && n->wsize > fi.wtmax)
		n->wsize = fi.wtmax;
	if (n->rsize > lim)
		n->rsize = lim;
	if (n->wsize > lim)
		n->wsize = lim;
	*out = n;
	return 0;

fail:
	for (unsigned i = n->nconn; i-- > 0;)
		rrr_clnt_destroy(n->clnt[i]);
	free(n);
	return rc;
}

void rrr_nfs3_umount(struct rrr_nfs3 *n)
{
	if (!n)
		return;
	if (n->mount_port[0]) {
		/* Best-effort UMNT: servers keep the list only as advice. */
		struct rrr_clnt_opts co;
		struct rrr_clnt *mc;
		rrr_clnt_opts_init(&co);
		co.transport = "tcp";
		co.host = n->host;
		co.port = n->mount_port;
		co.timeout_ms = 2000;
		co.connect_timeout_ms = 2000;
		if (rrr_clnt_create(&co, &mc) == 0) {
			struct rrr_mnt_dirpath d;
			snprintf(d.path, sizeof(d.path), "%s", n->export_path);
			struct rrr_call k;
			call_init(n, &k, RRR_MNT_UMNT, enc_dirpath, &d, NULL, NULL);
			k.prog = RRR_MNT_PROGRAM;
			k.vers = RRR_MNT_VERSION;
			k.timeout_ms = 2000;
			(void)rrr_clnt_call(mc, &k);
			rrr_clnt_destroy(mc);
		}
	}
	for (unsigned i = n->nconn; i-- > 0;)
		rrr_clnt_destroy(n->clnt[i]);
	free(n);
}

const struct rrr_nfs3_fh *rrr_nfs3_root(const struct rrr_nfs3 *n)
{
	return &n->root;
}

uint32_t rrr_nfs3_rsize(const struct rrr_nfs3 *n)
{
	return n->rsize;
}

uint32_t rrr_nfs3_wsize(const struct rrr_nfs3 *n)
{
	return n->wsize;
}

unsigned rrr_nfs3_nconnect(const struct rrr_nfs3 *n)
{
	return n->nconn;
}

void rrr_nfs3_stats(struct rrr_nfs3 *n, struct rrr_xprt_stats *st)
{
	rrr_clnt_stats(n->clnt[0], st);
	for (unsigned i = 1; i < n->nconn; i++) {
		struct rrr_xprt_stats c;
		rrr_clnt_stats(n->clnt[i], &c);
		rrr__xprt_stats_add(st, &c);
		/* credits add up over the connections; the inline sizes
		 * that hold for every connection are the smallest */
		st->credits += c.credits;
		st->max_credits += c.max_credits;
		if (c.inline_send < st->inline_send)
			st->inline_send = c.inline_send;
		if (c.inline_recv < st->inline_recv)
			st->inline_recv = c.inline_recv;
	}
}

int rrr_nfs3_conn_stats(struct rrr_nfs3 *n, unsigned idx, struct rrr_xprt_stats *st)
{
	last_status = RRR_NFS3_OK;
	if (idx >= n->nconn)
		return rrr__set_error(-EINVAL, "no connection %u: this mount has %u (nconnect)",
				      idx, n->nconn);
	rrr_clnt_stats(n->clnt[idx], st);
	return 0;
}

/* ------------------------------------------------------------ simple calls */
int rrr_nfs3_null(struct rrr_nfs3 *n)
{
	last_status = RRR_NFS3_OK;
	return sync_call(n, RRR_NFS3_NULL, NULL, NULL, NULL, NULL, true, "NULL");
}

static int name_ok(const char *name)
{
	if (!name || !*name || strlen(name) > RRR_NFS3_MAXNAMLEN || strchr(name, '/'))
		return rrr__set_error(-EINVAL, "bad file name '%s'", name ? name : "");
	return 0;
}

int rrr_nfs3_getattr(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, struct rrr_nfs3_fattr *attr)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_fh_args a = {.fh = *fh};
	struct rrr_nfs3_getattr_res r;
	memset(&r, 0, sizeof(r));
	int rc = sync_call(n, RRR_NFS3_GETATTR, enc_fh_args, &a, dec_getattr_res, &r, true,
			   "GETATTR");
	if (rc < 0)
		return rc;
	if (r.status == RRR_NFS3_OK && attr)
		*attr = r.attr;
	return nfs_err(r.status);
}

int rrr_nfs3_setattr(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh,
		     const struct rrr_nfs3_sattr *sattr)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_setattr_args a;
	memset(&a, 0, sizeof(a));
	a.fh = *fh;
	a.attr = *sattr;
	struct rrr_nfs3_wcc_res r;
	memset(&r, 0, sizeof(r));
	int rc = sync_call(n, RRR_NFS3_SETATTR, enc_setattr_args, &a, dec_wcc_res, &r, true,
			   "SETATTR");
	return rc < 0 ? rc : nfs_err(r.status);
}

int rrr_nfs3_lookup(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name,
		    struct rrr_nfs3_fh *fh, struct rrr_nfs3_fattr *attr)
{
	last_status = RRR_NFS3_OK;
	if (!name || strlen(name) > RRR_NFS3_MAXNAMLEN)
		return rrr__set_error(-EINVAL, "bad file name");
	struct rrr_nfs3_diropargs a;
	a.dir = *dir;
	snprintf(a.name, sizeof(a.name), "%s", name);
	struct rrr_nfs3_lookup_res r;
	memset(&r, 0, sizeof(r));
	int rc = sync_call(n, RRR_NFS3_LOOKUP, enc_diropargs, &a, dec_lookup_res, &r, true,
			   "LOOKUP");
	if (rc < 0)
		return rc;
	if (r.status)
		return nfs_err(r.status);
	if (fh)
		*fh = r.fh;
	if (attr) {
		if (r.obj_attr.present)
			*attr = r.obj_attr.attr;
		else
			return rrr_nfs3_getattr(n, &r.fh, attr);
	}
	return 0;
}

int rrr_nfs3_lookup_path(struct rrr_nfs3 *n, const char *path, struct rrr_nfs3_fh *fh,
			 struct rrr_nfs3_fattr *attr)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_fh cur = n->root;
	const char *p = path ? path : "";
	char comp[RRR_NFS3_MAXNAMLEN + 1];
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, "/");
		if (len > RRR_NFS3_MAXNAMLEN)
			return rrr__set_error(-ENAMETOOLONG, "path component too long");
		memcpy(comp, p, len);
		comp[len] = '\0';
		p += len;
		int rc = rrr_nfs3_lookup(n, &cur, comp, &cur, NULL);
		if (rc)
			return rc;
	}
	if (fh)
		*fh = cur;
	if (attr)
		return rrr_nfs3_getattr(n, &cur, attr);
	return 0;
}

int rrr_nfs3_readlink(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, char *buf, size_t cap)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_fh_args a = {.fh = *fh};
	struct rrr_nfs3_readlink_res *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct rrr_call k;
	call_init(n, &k, RRR_NFS3_READLINK, enc_fh_args, &a, dec_readlink_res, r);
	struct iovec sink = {.iov_base = r->path, .iov_len = RRR_NFS3_MAXPATHLEN};
	k.ddp = RRR_DDP_FROM_SERVER;
	k.payload = &sink;
	k.npayload = 1;
	k.idempotent = true;
	int rc = call_status(rrr_clnt_call(pick(n), &k), &k, "READLINK");
	if (rc == 0 && r->status == RRR_NFS3_OK) {
		/* The path is in r->path either way (decoded inline or placed there). */
		uint32_t len = r->path_len <= RRR_NFS3_MAXPATHLEN ? r->path_len : 0;
		r->path[len] = '\0';
		if (len + 1 > cap)
			rc = rrr__set_error(-ENAMETOOLONG, "symlink target longer than the buffer");
		else
			memcpy(buf, r->path, len + 1);
	} else if (rc == 0) {
		rc = nfs_err(r->status);
	}
	free(r);
	return rc;
}

static int do_create(struct rrr_nfs3 *n, uint32_t proc, rrr_xdr_encode_fn enc, const void *args,
		     struct rrr_nfs3_fh *fh, const struct rrr_nfs3_diropargs *where,
		     const char *what)
{
	struct rrr_nfs3_create_res r;
	memset(&r, 0, sizeof(r));
	int rc = sync_call(n, proc, enc, args, dec_create_res, &r, false, what);
	if (rc < 0)
		return rc;
	if (r.status)
		return nfs_err(r.status);
	if (fh) {
		if (r.fh_present)
			*fh = r.fh;
		else
			return rrr_nfs3_lookup(n, &where->dir, where->name, fh, NULL);
	}
	return 0;
}

int rrr_nfs3_create(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name,
		    uint32_t mode, bool guarded, struct rrr_nfs3_fh *fh)
{
	last_status = RRR_NFS3_OK;
	int rc = name_ok(name);
	if (rc)
		return rc;
	struct rrr_nfs3_create_args a;
	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	snprintf(a.where.name, sizeof(a.where.name), "%s", name);
	a.mode = guarded ? RRR_NFS3_GUARDED : RRR_NFS3_UNCHECKED;
	a.attr.set_mode = true;
	a.attr.mode = mode;
	if (!guarded) {
		a.attr.set_size = true; /* truncate an existing file */
		a.attr.size = 0;
	}
	return do_create(n, RRR_NFS3_CREATE, enc_create_args, &a, fh, &a.where, "CREATE");
}

int rrr_nfs3_mkdir(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name,
		   uint32_t mode, struct rrr_nfs3_fh *fh)
{
	last_status = RRR_NFS3_OK;
	int rc = name_ok(name);
	if (rc)
		return rc;
	struct rrr_nfs3_mkdir_args a;
	memset(&a, 0, sizeof(a));
	a.where.dir = *dir;
	snprintf(a.where.name, sizeof(a.where.name), "%s", name);
	a.attr.set_mode = true;
	a.attr.mode = mode;
	return do_create(n, RRR_NFS3_MKDIR, enc_mkdir_args, &a, fh, &a.where, "MKDIR");
}

int rrr_nfs3_symlink(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name,
		     const char *target, struct rrr_nfs3_fh *fh)
{
	last_status = RRR_NFS3_OK;
	int rc = name_ok(name);
	if (rc)
		return rc;
	if (!target || strlen(target) > RRR_NFS3_MAXPATHLEN)
		return rrr__set_error(-ENAMETOOLONG, "symlink target too long");
	struct rrr_nfs3_symlink_args *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->where.dir = *dir;
	snprintf(a->where.name, sizeof(a->where.name), "%s", name);
	snprintf(a->path, sizeof(a->path), "%s", target);
	/* The path is DDP-eligible: the transport may send it in a read chunk. */
	struct iovec src = {.iov_base = a->path, .iov_len = strlen(a->path)};
	struct rrr_nfs3_create_res r;
	memset(&r, 0, sizeof(r));
	struct rrr_call k;
	call_init(n, &k, RRR_NFS3_SYMLINK, enc_symlink_args, a, dec_create_res, &r);
	k.ddp = RRR_DDP_TO_SERVER;
	k.payload = &src;
	k.npayload = 1;
	rc = call_status(rrr_clnt_call(pick(n), &k), &k, "SYMLINK");
	if (rc == 0) {
		rc = nfs_err(r.status);
		if (rc == 0 && fh) {
			if (r.fh_present)
				*fh = r.fh;
			else
				rc = rrr_nfs3_lookup(n, dir, name, fh, NULL);
		}
	}
	free(a);
	return rc;
}

static int do_remove(struct rrr_nfs3 *n, uint32_t proc, const struct rrr_nfs3_fh *dir,
		     const char *name, const char *what)
{
	int rc = name_ok(name);
	if (rc)
		return rc;
	struct rrr_nfs3_diropargs a;
	a.dir = *dir;
	snprintf(a.name, sizeof(a.name), "%s", name);
	struct rrr_nfs3_wcc_res r;
	memset(&r, 0, sizeof(r));
	rc = sync_call(n, proc, enc_diropargs, &a, dec_wcc_res, &r, false, what);
	return rc < 0 ? rc : nfs_err(r.status);
}

int rrr_nfs3_remove(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name)
{
	last_status = RRR_NFS3_OK;
	return do_remove(n, RRR_NFS3_REMOVE, dir, name, "REMOVE");
}

int rrr_nfs3_rmdir(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir, const char *name)
{
	last_status = RRR_NFS3_OK;
	return do_remove(n, RRR_NFS3_RMDIR, dir, name, "RMDIR");
}

int rrr_nfs3_rename(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *from_dir, const char *from,
		    const struct rrr_nfs3_fh *to_dir, const char *to)
{
	last_status = RRR_NFS3_OK;
	int rc = name_ok(from);
	if (rc || (rc = name_ok(to)))
		return rc;
	struct rrr_nfs3_rename_args a;
	a.from.dir = *from_dir;
	snprintf(a.from.name, sizeof(a.from.name), "%s", from);
	a.to.dir = *to_dir;
	snprintf(a.to.name, sizeof(a.to.name), "%s", to);
	struct rrr_nfs3_rename_res r;
	memset(&r, 0, sizeof(r));
	rc = sync_call(n, RRR_NFS3_RENAME, enc_rename_args, &a, dec_rename_res, &r, false,
		       "RENAME");
	return rc < 0 ? rc : nfs_err(r.status);
}

int rrr_nfs3_fsstat(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh,
		    struct rrr_nfs3_fsstat_res *res)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_fh_args a = {.fh = *fh};
	memset(res, 0, sizeof(*res));
	int rc = sync_call(n, RRR_NFS3_FSSTAT, enc_fh_args, &a, dec_fsstat_res, res, true,
			   "FSSTAT");
	return rc < 0 ? rc : nfs_err(res->status);
}

int rrr_nfs3_readdirplus(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *dir,
			 rrr_nfs3_dirent_fn fn, void *arg)
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_readdir_args a;
	memset(&a, 0, sizeof(a));
	a.dir = *dir;
	a.dircount = DIR_DIRCOUNT;
	a.maxcount = DIR_MAXCOUNT;
	uint32_t cap = DIR_MAXCOUNT / 32 + 1;
	struct rrr_nfs3_readdir_res r;
	memset(&r, 0, sizeof(r));
	r.plus = true;
	r.cap = cap;
	r.entries = calloc(cap, sizeof(*r.entries));
	if (!r.entries)
		return -ENOMEM;
	int rc = 0;
	for (unsigned rounds = 0; rounds < 1000000u; rounds++) {
		struct rrr_call k;
		call_init(n, &k, RRR_NFS3_READDIRPLUS, enc_readdirplus_args, &a, dec_readdir_res,
			  &r);
		k.idempotent = true;
		k.reply_hint = DIR_MAXCOUNT + 512;
		rc = call_status(rrr_clnt_call(pick(n), &k), &k, "READDIRPLUS");
		if (rc < 0)
			break;
		if (r.status) {
			rc = nfs_err(r.status);
			break;
		}
		for (uint32_t i = 0; i < r.n && rc == 0; i++) {
			if (!strcmp(r.entries[i].name, ".") || !strcmp(r.entries[i].name, ".."))
				continue;
			rc = fn(arg, &r.entries[i]);
		}
		if (rc || r.eof || r.n == 0)
			break;
		a.cookie = r.entries[r.n - 1].cookie;
		memcpy(a.cookieverf, r.cookieverf, 8);
	}
	free(r.entries);
	return rc;
}

