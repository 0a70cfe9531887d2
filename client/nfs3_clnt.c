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
 * Pipelining: rrr_nfs3_read_all()/rrr_nfs3_write_all() keep up to @qd calls
 * in flight with rrr_clnt_call_async(), each on the next connection;
 * completions (on that connection's progress thread) only mark a slot done
 * and signal; the submitting thread checks results, re-issues short
 * transfers for the remainder, and refills. The pipeline returns only when
 * every slot has completed, on whichever connection it went, so COMMIT
 * (on any connection) follows every WRITE it covers.
 *
 * Recovery: transport errors end the operation with the negative errno
 * (the message is in rrr_last_error()); an NFS error ends it with the
 * matching negative errno (rrr_nfs3_stat_to_errno()), and the exact
 * nfsstat3 is kept thread-local for rrr_nfs3_last_status(): reset when a
 * public call starts, set when a reply carries an error (nfs_err). UNSTABLE writes are followed by COMMIT; if any reply,
 * from any connection, or the COMMIT carried a different write verifier
 * (the server restarted: its verifier is per server instance, the same on
 * every connection), the whole range is written again once with FILE_SYNC.
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

#include "common/rrr_impl.h"

#define MAX_QD 128u
#define DIR_MAXCOUNT 32768u
#define DIR_DIRCOUNT 8192u
/* READ3res without its data: RPC reply header with an AUTH_NONE/AUTH_SYS
 * verifier, status, post_op_attr, count, eof, opaque length (~128 bytes),
 * with room to spare. It lets the transport take a small READ's reply
 * inline (no write chunk, nothing registered) when it fits the receive
 * size (client/clnt_plan.c). */
#define READ_REPLY_HINT 256u

struct rrr_nfs3 {
	struct rrr_clnt *clnt[RRR_NFS3_MAX_NCONNECT];
	unsigned nconn;	  /* connections open in clnt[] */
	atomic_uint next; /* round-robin: calls made so far */
	struct rrr_nfs3_fh root;
	uint32_t rsize, wsize;
	struct rrr_rpc_cred cred;
	bool use_cred;
	int timeout_ms;
	char host[256];
	char mount_port[16];
	char export_path[RRR_NFS3_MAXPATHLEN + 1];
};

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
ENC(read_args, struct rrr_nfs3_read_args)
ENC(write_args, struct rrr_nfs3_write_args)
ENC(create_args, struct rrr_nfs3_create_args)
ENC(mkdir_args, struct rrr_nfs3_mkdir_args)
ENC(symlink_args, struct rrr_nfs3_symlink_args)
ENC(rename_args, struct rrr_nfs3_rename_args)
ENC(readdirplus_args, struct rrr_nfs3_readdir_args)
ENC(commit_args, struct rrr_nfs3_commit_args)
DEC(getattr_res, struct rrr_nfs3_getattr_res)
DEC(wcc_res, struct rrr_nfs3_wcc_res)
DEC(lookup_res, struct rrr_nfs3_lookup_res)
DEC(readlink_res, struct rrr_nfs3_readlink_res)
DEC(read_res, struct rrr_nfs3_read_res)
DEC(write_res, struct rrr_nfs3_write_res)
DEC(create_res, struct rrr_nfs3_create_res)
DEC(rename_res, struct rrr_nfs3_rename_res)
DEC(readdir_res, struct rrr_nfs3_readdir_res)
DEC(fsstat_res, struct rrr_nfs3_fsstat_res)
DEC(fsinfo_res, struct rrr_nfs3_fsinfo_res)
DEC(commit_res, struct rrr_nfs3_commit_res)

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
static struct rrr_clnt *pick(struct rrr_nfs3 *n)
{
	if (n->nconn == 1)
		return n->clnt[0];
	return n->clnt[atomic_fetch_add_explicit(&n->next, 1, memory_order_relaxed) % n->nconn];
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

/* An NFS answer: 0 for NFS3_OK, else remember @st and return its -errno. */
static int nfs_err(uint32_t st)
{
	if (st == RRR_NFS3_OK)
		return 0;
	last_status = st;
	return rrr_nfs3_stat_to_errno(st);
}

static int call_status(int rc, const struct rrr_call *k, const char *what)
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

int rrr_nfs3_commit(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint8_t verf[8])
{
	last_status = RRR_NFS3_OK;
	struct rrr_nfs3_commit_args a = {.fh = *fh, .offset = 0, .count = 0};
	struct rrr_nfs3_commit_res r;
	memset(&r, 0, sizeof(r));
	int rc = sync_call(n, RRR_NFS3_COMMIT, enc_commit_args, &a, dec_commit_res, &r, true,
			   "COMMIT");
	if (rc < 0)
		return rc;
	if (r.status == RRR_NFS3_OK && verf)
		memcpy(verf, r.verf, 8);
	return nfs_err(r.status);
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

/* ------------------------------------------------------------ READ / WRITE */
int rrr_nfs3_read(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		  const struct iovec *iov, unsigned niov, uint32_t *count, bool *eof)
{
	last_status = RRR_NFS3_OK;
	size_t len = 0;
	for (unsigned i = 0; i < niov; i++)
		len += iov[i].iov_len;
	if (len > RRR_NFS3_MAX_DATA || niov > RRR_XDR_PAYLOAD_MAX_IOV)
		return rrr__set_error(-EINVAL, "READ larger than 1 MiB or too many buffers");
	struct rrr_nfs3_read_args a = {.fh = *fh, .offset = offset, .count = (uint32_t)len};
	struct rrr_nfs3_read_res *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	struct rrr_call k;
	call_init(n, &k, RRR_NFS3_READ, enc_read_args, &a, dec_read_res, r);
	k.ddp = RRR_DDP_FROM_SERVER;
	k.reply_hint = READ_REPLY_HINT;
	k.payload = iov;
	k.npayload = niov;
	k.idempotent = true;
	int rc = call_status(rrr_clnt_call(pick(n), &k), &k, "READ");
	if (rc == 0) {
		rc = nfs_err(r->status);
		if (rc == 0) {
			*count = r->count;
			*eof = r->eof;
		}
	}
	free(r);
	return rc;
}

int rrr_nfs3_write(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		   const struct iovec *iov, unsigned niov, uint32_t stable, uint32_t *count)
{
	last_status = RRR_NFS3_OK;
	size_t len = 0;
	for (unsigned i = 0; i < niov; i++)
		len += iov[i].iov_len;
	if (len > RRR_NFS3_MAX_DATA || niov > RRR_XDR_PAYLOAD_MAX_IOV)
		return rrr__set_error(-EINVAL, "WRITE larger than 1 MiB or too many buffers");
	struct rrr_nfs3_write_args *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fh = *fh;
	a->offset = offset;
	a->count = a->data_len = (uint32_t)len;
	a->stable = stable;
	a->iov = iov;
	a->niov = niov;
	struct rrr_nfs3_write_res r;
	memset(&r, 0, sizeof(r));
	struct rrr_call k;
	call_init(n, &k, RRR_NFS3_WRITE, enc_write_args, a, dec_write_res, &r);
	k.ddp = RRR_DDP_TO_SERVER;
	k.payload = iov;
	k.npayload = niov;
	int rc = call_status(rrr_clnt_call(pick(n), &k), &k, "WRITE");
	if (rc == 0) {
		rc = nfs_err(r.status);
		if (rc == 0)
			*count = r.count;
	}
	free(a);
	return rc;
}

/* One in-flight READ or WRITE of a pipelined transfer. */
struct slot {
	struct rrr_call call;
	struct rrr_nfs3_read_args rargs;
	struct rrr_nfs3_write_args wargs;
	struct rrr_nfs3_read_res rres;
	struct rrr_nfs3_write_res wres;
	struct iovec iov[2];
	uint64_t off;   /* file offset of this call */
	uint32_t len;   /* bytes asked for */
	int status;     /* transport status, set by the callback */
	bool busy, done;
	struct pipe *p;
};

struct pipe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ndone;
};

static void slot_done(struct rrr_call *call, int status, void *arg)
{
	struct slot *s = arg;
	(void)call;
	pthread_mutex_lock(&s->p->lock);
	s->status = status;
	s->done = true;
	s->p->ndone++;
	pthread_cond_signal(&s->p->cond);
	pthread_mutex_unlock(&s->p->lock);
}

struct xfer {
	struct rrr_nfs3 *n;
	const struct rrr_nfs3_fh *fh;
	bool write;
	uint8_t *buf;     /* file offset base corresponds to buf[0] */
	uint64_t base;
	size_t len;
	uint32_t chunk, split, stable;
	uint64_t eof_at;  /* read: first offset known to be past EOF */
	bool verf_set, verf_changed;
	uint8_t verf[8];
};

static int slot_submit(struct xfer *x, struct slot *s, uint64_t off, uint32_t len)
{
	struct rrr_nfs3 *n = x->n;
	uint8_t *p = x->buf + (off - x->base);
	s->off = off;
	s->len = len;
	s->done = false;
	s->status = 0;
	unsigned niov = 1;
	s->iov[0].iov_base = p;
	s->iov[0].iov_len = len;
	if (x->split && x->split < len) {
		s->iov[0].iov_len = x->split;
		s->iov[1].iov_base = p + x->split;
		s->iov[1].iov_len = len - x->split;
		niov = 2;
	}
	if (x->write) {
		memset(&s->wargs, 0, sizeof(s->wargs));
		s->wargs.fh = *x->fh;
		s->wargs.offset = off;
		s->wargs.count = s->wargs.data_len = len;
		s->wargs.stable = x->stable;
		s->wargs.iov = s->iov;
		s->wargs.niov = niov;
		memset(&s->wres, 0, sizeof(s->wres));
		call_init(n, &s->call, RRR_NFS3_WRITE, enc_write_args, &s->wargs, dec_write_res,
			  &s->wres);
		s->call.ddp = RRR_DDP_TO_SERVER;
	} else {
		s->rargs.fh = *x->fh;
		s->rargs.offset = off;
		s->rargs.count = len;
		memset(&s->rres, 0, sizeof(s->rres));
		call_init(n, &s->call, RRR_NFS3_READ, enc_read_args, &s->rargs, dec_read_res,
			  &s->rres);
		s->call.ddp = RRR_DDP_FROM_SERVER;
		s->call.idempotent = true;
		s->call.reply_hint = READ_REPLY_HINT;
	}
	s->call.payload = s->iov;
	s->call.npayload = niov;
	int rc = rrr_clnt_call_async(pick(n), &s->call, slot_done, s);
	if (rc == 0)
		s->busy = true;
	return rc;
}

/* Check a completed slot; returns 0, -errno or a POSITIVE nfsstat3 (the
 * pipeline turns it into -errno with nfs_err()); *resub gets the
 * remainder to re-issue (offset, length) when the transfer was short. */
static int slot_check(struct xfer *x, struct slot *s, uint64_t *roff, uint32_t *rlen)
{
	*rlen = 0;
	if (s->status < 0)
		return call_status(s->status, &s->call, x->write ? "WRITE" : "READ");
	uint32_t got;
	if (x->write) {
		if (s->wres.status)
			return (int)s->wres.status;
		got = s->wres.count;
		if (x->stable == RRR_NFS3_UNSTABLE) {
			if (!x->verf_set) {
				memcpy(x->verf, s->wres.verf, 8);
				x->verf_set = true;
			} else if (memcmp(x->verf, s->wres.verf, 8)) {
				x->verf_changed = true;
			}
		}
		if (got == 0 && s->len)
			return rrr__set_error(-EIO, "the server wrote 0 bytes at offset %llu",
					      (unsigned long long)s->off);
	} else {
		if (s->rres.status)
			return (int)s->rres.status;
		got = s->rres.count;
		if (got > s->len)
			return rrr__set_error(-EBADMSG, "READ returned more than asked");
		if (s->rres.eof || got == 0) {
			uint64_t end = s->off + got;
			if (end < x->eof_at)
				x->eof_at = end;
			return 0;
		}
	}
	if (got < s->len) {
		*roff = s->off + got;
		*rlen = s->len - got;
	}
	return 0;
}

static int run_pipeline(struct xfer *x, unsigned qd, rrr_nfs3_progress_fn progress, void *arg,
			size_t *done_bytes)
{
	if (qd == 0)
		qd = 1;
	if (qd > MAX_QD)
		qd = MAX_QD;
	struct slot *slots = calloc(qd, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	struct pipe p = {.ndone = 0};
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (unsigned i = 0; i < qd; i++)
		slots[i].p = &p;

	uint64_t next = x->base, end = x->base + x->len, moved = 0;
	/* Pending remainders of short transfers, re-issued before new ranges. */
	uint64_t pend_off[MAX_QD];
	uint32_t pend_len[MAX_QD];
	unsigned npend = 0, busy = 0;
	int rc = 0;
	x->eof_at = UINT64_MAX;

	for (;;) {
		/* Fill free slots. */
		for (unsigned i = 0; i < qd && rc == 0; i++) {
			if (slots[i].busy)
				continue;
			uint64_t off;
			uint32_t len;
			if (npend) {
				npend--;
				off = pend_off[npend];
				len = pend_len[npend];
			} else if (next < end && next < x->eof_at) {
				off = next;
				len = (uint32_t)((end - next) < x->chunk ? end - next : x->chunk);
				next += len;
			} else {
				break;
			}
			rc = slot_submit(x, &slots[i], off, len);
			if (rc < 0)
				rc = call_status(rc, &slots[i].call, x->write ? "WRITE" : "READ");
			else
				busy++;
		}
		if (busy == 0)
			break;
		/* Wait for at least one completion. */
		pthread_mutex_lock(&p.lock);
		while (p.ndone == 0)
			pthread_cond_wait(&p.cond, &p.lock);
		pthread_mutex_unlock(&p.lock);
		for (unsigned i = 0; i < qd; i++) {
			struct slot *s = &slots[i];
			pthread_mutex_lock(&p.lock);
			bool d = s->busy && s->done;
			if (d) {
				p.ndone--;
				s->busy = false;
			}
			pthread_mutex_unlock(&p.lock);
			if (!d)
				continue;
			busy--;
			uint64_t roff;
			uint32_t rlen;
			int src = slot_check(x, s, &roff, &rlen);
			if (src != 0 && rc == 0)
				rc = src > 0 ? nfs_err((uint32_t)src) : src;
			if (src == 0) {
				uint64_t got = s->len - rlen;
				if (!x->write && s->off + got > x->eof_at)
					got = x->eof_at > s->off ? x->eof_at - s->off : 0;
				moved += got;
				if (rlen && npend < MAX_QD && rc == 0) {
					pend_off[npend] = roff;
					pend_len[npend] = rlen;
					npend++;
				}
			}
		}
		if (progress && rc == 0)
			progress(arg, moved);
	}
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	free(slots);
	if (done_bytes) {
		uint64_t total = x->eof_at < end ? x->eof_at - x->base : x->len;
		*done_bytes = (size_t)total;
	}
	return rc;
}

int rrr_nfs3_read_all(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		      void *buf, size_t len, unsigned qd, uint32_t split, size_t *done,
		      rrr_nfs3_progress_fn progress, void *arg)
{
	last_status = RRR_NFS3_OK;
	struct xfer x = {.n = n, .fh = fh, .write = false, .buf = buf, .base = offset,
			 .len = len, .chunk = n->rsize, .split = split};
	if (offset > UINT64_MAX - len)
		return rrr__set_error(-EINVAL, "read range overflows");
	return run_pipeline(&x, qd, progress, arg, done);
}

int rrr_nfs3_write_all(struct rrr_nfs3 *n, const struct rrr_nfs3_fh *fh, uint64_t offset,
		       const void *buf, size_t len, unsigned qd, uint32_t split, uint32_t stable,
		       rrr_nfs3_progress_fn progress, void *arg)
{
	last_status = RRR_NFS3_OK;
	if (offset > UINT64_MAX - len)
		return rrr__set_error(-EINVAL, "write range overflows");
	struct xfer x = {.n = n, .fh = fh, .write = true, .buf = (uint8_t *)(uintptr_t)buf,
			 .base = offset, .len = len, .chunk = n->wsize, .split = split,
			 .stable = stable};
	int rc = run_pipeline(&x, qd, progress, arg, NULL);
	if (rc || stable != RRR_NFS3_UNSTABLE || len == 0)
		return rc;
	uint8_t cverf[8];
	rc = rrr_nfs3_commit(n, fh, cverf);
	if (rc)
		return rc;
	if (!x.verf_changed && x.verf_set && !memcmp(cverf, x.verf, 8))
		return 0;
	/* The server restarted under us: what it had not committed may be lost. */
	struct xfer again = x;
	again.stable = RRR_NFS3_FILE_SYNC;
	again.verf_set = again.verf_changed = false;
	return run_pipeline(&again, qd, progress, arg, NULL);
}
