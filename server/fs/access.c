/* SPDX-License-Identifier: MIT */
/*
 * server/fs/access.c - who may use each export: client address lists and
 * read-only, enforced in front of every NFS and MOUNT handler.
 *
 * Normal operation: main.c registers fs_nfs3_guarded and fs_mnt_guarded
 * instead of the handler tables of nfs3_proc.c and mount.c. Each guarded
 * entry finds the request's export (exports.c: the one the first file
 * handle of an NFS call names, the one the path of a MNT names), looks up
 * the connection's peer address (rrr_svc_req_peer: the TCP peer, or the
 * RDMA connection's peer on either provider) in that export's policy and
 * then either calls the real handler or answers itself:
 *   - a connection from an address that no export admits is closed at
 *     accept (fs_access_admit is the server's admission check), so it holds
 *     nothing and counts against no limit; should one exist anyway (a
 *     reload narrowed the lists), its NULLs are dropped unanswered;
 *   - a client outside the export's allow list gets MNT3ERR_ACCES on MNT
 *     and NFS3ERR_ACCES on every NFS procedure except NULL (a ping, answered
 *     when some export admits it), so a handle learnt elsewhere is of no
 *     use to it; EXPORT, DUMP, UMNT and UMNTALL stay open to admitted
 *     clients (showmount works, as on Linux's nfsd);
 *     EXPORT answers here, every export with its allow list as its groups
 *     ("*" for everyone; an export nobody may mount is not listed);
 *   - on a read-only export SETATTR, WRITE, CREATE, MKDIR, SYMLINK, MKNOD,
 *     REMOVE, RMDIR, RENAME and LINK get NFS3ERR_ROFS.
 * The refusal is a normal NFS result: the status, then the procedure's
 * failure arm with every optional attribute absent (RFC 1813: post_op_attr
 * and pre_op_attr are "attributes follow: FALSE"), so any client decodes
 * it. Nothing of the request is looked at beyond its header.
 *
 * Live changes: each export's policy is one immutable object behind a
 * read-write lock; fs_access_set() (start, SIGHUP) builds new ones for
 * every export and swaps them in together, so a request sees the old or
 * the new policy whole, and connections stay up: the next request of an already-connected client that the new list
 * leaves out gets NFS3ERR_ACCES. An empty allow list refuses everyone; no
 * allow key at all lets everyone in (what rrr-server did before).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"

struct policy {
	bool everyone;
	bool read_only;
	char groups[RRR_NFS3_MAXNAMLEN + 1]; /* MOUNT EXPORT: "*" or "10.0.0.0/8,..." */
	unsigned n;
	struct fs_cidr allow[];
};

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct policy *g_policy[FS_CONF_MAX_EXPORTS]; /* by export index */
static atomic_uint_fast64_t g_denied_mount, g_denied_nfs, g_rofs;

/* The allow list as MOUNT EXPORT groups, as many whole entries as fit. */
static void groups_text(struct policy *p)
{
	if (p->everyone) {
		snprintf(p->groups, sizeof(p->groups), "*");
		return;
	}
	size_t used = 0;
	for (unsigned i = 0; i < p->n; i++) {
		const struct fs_cidr *n = &p->allow[i];
		char a[INET6_ADDRSTRLEN], one[INET6_ADDRSTRLEN + 8];
		inet_ntop(n->family, n->addr, a, sizeof(a));
		bool host = n->bits == (n->family == AF_INET ? 32u : 128u);
		int len = host ? snprintf(one, sizeof(one), "%s", a)
			       : snprintf(one, sizeof(one), "%s/%u", a, n->bits);
		if (len < 0 || used + (used ? 1 : 0) + (size_t)len >= sizeof(p->groups))
			break;
		used += (size_t)snprintf(p->groups + used, sizeof(p->groups) - used, "%s%s",
					 used ? "," : "", one);
	}
}

static struct policy *policy_new(const struct fs_conf_export *e)
{
	bool everyone = !(e->set & (1ull << FS_K_ALLOW));
	struct policy *p = calloc(1, sizeof(*p) + sizeof(p->allow[0]) * e->nallow);
	if (!p)
		return NULL;
	p->everyone = everyone;
	p->read_only = e->read_only;
	p->n = everyone ? 0 : e->nallow;
	memcpy(p->allow, e->allow, sizeof(p->allow[0]) * p->n);
	groups_text(p);
	return p;
}

int fs_access_set(const struct fs_conf *c)
{
	struct policy *next[FS_CONF_MAX_EXPORTS] = {0}, *old[FS_CONF_MAX_EXPORTS];
	unsigned n = fs_conf_nexports(c);
	struct fs_conf_export *e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		fs_conf_export_get(c, i, e);
		if (!(next[i] = policy_new(e))) {
			for (unsigned j = 0; j < i; j++)
				free(next[j]);
			free(e);
			return -ENOMEM;
		}
	}
	free(e);
	pthread_rwlock_wrlock(&g_lock);
	memcpy(old, g_policy, sizeof(old));
	memcpy(g_policy, next, sizeof(next));
	pthread_rwlock_unlock(&g_lock);
	for (unsigned i = 0; i < FS_CONF_MAX_EXPORTS; i++)
		free(old[i]);
	return 0;
}

void fs_access_free(void)
{
	pthread_rwlock_wrlock(&g_lock);
	for (unsigned i = 0; i < FS_CONF_MAX_EXPORTS; i++) {
		free(g_policy[i]);
		g_policy[i] = NULL;
	}
	pthread_rwlock_unlock(&g_lock);
}

bool fs_access_admit(void *ctx, const struct sockaddr_storage *peer)
{
	unsigned n = fs_exports_count();
	bool ok = n == 0;

	(void)ctx;
	pthread_rwlock_rdlock(&g_lock);
	for (unsigned i = 0; i < n && i < FS_CONF_MAX_EXPORTS && !ok; i++) {
		const struct policy *p = g_policy[i];

		if (!p || p->everyone) {
			ok = true;
			break;
		}
		for (unsigned k = 0; k < p->n && !ok; k++)
			ok = fs_cidr_match(&p->allow[k], peer);
	}
	pthread_rwlock_unlock(&g_lock);
	return ok;
}

static bool req_admitted(struct rrr_svc_req *req)
{
	struct sockaddr_storage ss;

	return rrr_svc_req_peer(req, &ss) == 0 && fs_access_admit(NULL, &ss);
}

/* Whether the peer of @req may use export @ex, and whether @ex is read-only. */
static bool check(struct rrr_svc_req *req, const struct fs_export *ex, bool *read_only)
{
	struct sockaddr_storage ss;
	bool have = rrr_svc_req_peer(req, &ss) == 0;
	bool ok = false;
	pthread_rwlock_rdlock(&g_lock);
	const struct policy *p = ex && ex->index < FS_CONF_MAX_EXPORTS ? g_policy[ex->index] : NULL;
	*read_only = p && p->read_only;
	if (!p || p->everyone) {
		ok = true;
	} else if (have) {
		for (unsigned i = 0; i < p->n && !ok; i++)
			ok = fs_cidr_match(&p->allow[i], &ss);
	}
	pthread_rwlock_unlock(&g_lock);
	return ok;
}

bool fs_access_allowed(struct rrr_svc_req *req, const struct fs_export *ex, bool *read_only)
{
	return check(req, ex, read_only);
}

/* Words of "attributes follow: FALSE" in each procedure's failure arm. */
static const uint8_t fail_words[RRR_NFS3_NPROCS] = {
	[RRR_NFS3_GETATTR] = 0, [RRR_NFS3_SETATTR] = 2, [RRR_NFS3_LOOKUP] = 1,
	[RRR_NFS3_ACCESS] = 1,  [RRR_NFS3_READLINK] = 1, [RRR_NFS3_READ] = 1,
	[RRR_NFS3_WRITE] = 2,   [RRR_NFS3_CREATE] = 2,  [RRR_NFS3_MKDIR] = 2,
	[RRR_NFS3_SYMLINK] = 2, [RRR_NFS3_MKNOD] = 2,   [RRR_NFS3_REMOVE] = 2,
	[RRR_NFS3_RMDIR] = 2,   [RRR_NFS3_RENAME] = 4,  [RRR_NFS3_LINK] = 3,
	[RRR_NFS3_READDIR] = 1, [RRR_NFS3_READDIRPLUS] = 1, [RRR_NFS3_FSSTAT] = 1,
	[RRR_NFS3_FSINFO] = 1,  [RRR_NFS3_PATHCONF] = 1, [RRR_NFS3_COMMIT] = 2,
};

static bool modifies(uint32_t proc)
{
	switch (proc) {
	case RRR_NFS3_SETATTR: case RRR_NFS3_WRITE: case RRR_NFS3_CREATE: case RRR_NFS3_MKDIR:
	case RRR_NFS3_SYMLINK: case RRR_NFS3_MKNOD: case RRR_NFS3_REMOVE: case RRR_NFS3_RMDIR:
	case RRR_NFS3_RENAME: case RRR_NFS3_LINK:
		return true;
	default:
		return false;
	}
}

static int refuse(struct rrr_xdr *res, uint32_t proc, uint32_t status)
{
	if (rrr_xdr_put_u32(res, status) < 0)
		return RRR_SVC_SYSTEM_ERR;
	for (unsigned i = 0; i < fail_words[proc]; i++)
		if (rrr_xdr_put_u32(res, 0) < 0)
			return RRR_SVC_SYSTEM_ERR;
	return 0;
}

/* Where allowed NFS calls go: the handlers, or the duplicate request
 * cache in front of them (fs_access_set_inner). Set before any thread runs. */
static const struct rrr_svc_proc *g_inner = fs_nfs3_procs;

void fs_access_set_inner(const struct rrr_svc_proc *procs)
{
	g_inner = procs ? procs : fs_nfs3_procs;
}

static int nfs_guard(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const struct rrr_rpc_call *call = rrr_svc_req_call(req);
	uint32_t proc = call->proc; /* the library dispatched on it: < RRR_NFS3_NPROCS */
	bool ro;
	struct fs_export *ex = fs_exports_by_args(args);
	fs_req_export_set(ex);
	if (proc == RRR_NFS3_NULL && !req_admitted(req)) {
		atomic_fetch_add(&g_denied_nfs, 1);
		return RRR_SVC_DROP; /* a ping is no way around the allow lists */
	}
	if (proc != RRR_NFS3_NULL && !check(req, ex, &ro)) {
		atomic_fetch_add(&g_denied_nfs, 1);
		return refuse(res, proc, RRR_NFS3ERR_ACCES);
	}
	if (proc != RRR_NFS3_NULL && ro && modifies(proc)) {
		atomic_fetch_add(&g_rofs, 1);
		return refuse(res, proc, RRR_NFS3ERR_ROFS);
	}
	return g_inner[proc].fn ? g_inner[proc].fn(req, args, res) : RRR_SVC_SYSTEM_ERR;
}

void fs_addr_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
	snprintf(out, len, "?");
	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out, (socklen_t)len);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) /* dual-stack listener: the IPv4 address */
			inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)len);
		else
			inet_ntop(AF_INET6, a, out, (socklen_t)len);
	}
}

void fs_peer_text(struct rrr_svc_req *req, char *out, size_t len)
{
	struct sockaddr_storage ss;

	snprintf(out, len, "unknown");
	if (rrr_svc_req_peer(req, &ss) == 0)
		fs_addr_text(&ss, out, len);
}

/* EXPORT with each export's allow list as its groups (showmount -e); an
 * export nobody may mount is not listed (no groups would read "everyone"). */
static int mnt_export(struct rrr_svc_req *req, struct rrr_xdr *res)
{
	(void)req;
	unsigned nex = fs_exports_count(), n = 0;
	atomic_fetch_add(&fs_exports_at(0)->mnt_calls[RRR_MNT_EXPORT], 1);
	struct rrr_mnt_export *e = rrr_svc_req_alloc(req, sizeof(*e) * (nex ? nex : 1));
	if (!e)
		return RRR_SVC_SYSTEM_ERR;
	pthread_rwlock_rdlock(&g_lock);
	for (unsigned i = 0; i < nex; i++) {
		const struct policy *p = i < FS_CONF_MAX_EXPORTS ? g_policy[i] : NULL;
		snprintf(e[n].groups, sizeof(e[n].groups), "%s", p ? p->groups : "*");
		if (!e[n].groups[0])
			continue;
		snprintf(e[n].dir, sizeof(e[n].dir), "%.1024s", fs_exports_at(i)->name);
		n++;
	}
	pthread_rwlock_unlock(&g_lock);
	struct rrr_mnt_export_res r = {.entries = e, .n = n, .cap = nex};
	return rrr_mnt_xdr_export_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

/* The export a MNT's path names (peeked: the handler decodes it again). */
static struct fs_export *mnt_target(const struct rrr_xdr *args)
{
	struct rrr_xdr peek = *args;
	struct rrr_mnt_dirpath d;
	char rel[PATH_MAX];
	if (rrr_mnt_xdr_dirpath(&peek, &d) < 0)
		return NULL;
	return fs_exports_by_path(d.path, rel, sizeof(rel));
}

static int mnt_guard(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const struct rrr_rpc_call *call = rrr_svc_req_call(req);
	uint32_t proc = call->proc;
	bool ro;
	struct fs_export *ex = proc == RRR_MNT_MNT ? mnt_target(args) : NULL;
	if (proc == RRR_MNT_NULL && !req_admitted(req)) {
		atomic_fetch_add(&g_denied_mount, 1);
		return RRR_SVC_DROP;
	}
	/* a path of no export goes on to MNT, which answers NOENT */
	if (ex && !check(req, ex, &ro)) {
		atomic_fetch_add(&g_denied_mount, 1);
		atomic_fetch_add(&ex->mnt_calls[RRR_MNT_MNT], 1);
		char host[INET6_ADDRSTRLEN];
		fs_peer_text(req, host, sizeof(host));
		static struct fs_lograte rl = FS_LOGRATE("MNT refused: not in the allow list");
		fs_log_limited(&rl, LOG_WARNING,
			       "MNT from %s over %s refused: not in the allow list of the export %s",
			       host, rrr_svc_req_transport(req), ex->name);
		struct rrr_mnt_res r = {.status = RRR_MNT3ERR_ACCES};
		return rrr_mnt_xdr_mnt_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
	}
	if (proc == RRR_MNT_EXPORT)
		return mnt_export(req, res);
	return fs_mnt_procs[proc].fn ? fs_mnt_procs[proc].fn(req, args, res) : RRR_SVC_SYSTEM_ERR;
}

const struct rrr_svc_proc fs_nfs3_guarded[RRR_NFS3_NPROCS] = {
	[RRR_NFS3_NULL] = {"NULL", nfs_guard},       [RRR_NFS3_GETATTR] = {"GETATTR", nfs_guard},
	[RRR_NFS3_SETATTR] = {"SETATTR", nfs_guard}, [RRR_NFS3_LOOKUP] = {"LOOKUP", nfs_guard},
	[RRR_NFS3_ACCESS] = {"ACCESS", nfs_guard},   [RRR_NFS3_READLINK] = {"READLINK", nfs_guard},
	[RRR_NFS3_READ] = {"READ", nfs_guard},       [RRR_NFS3_WRITE] = {"WRITE", nfs_guard},
	[RRR_NFS3_CREATE] = {"CREATE", nfs_guard},   [RRR_NFS3_MKDIR] = {"MKDIR", nfs_guard},
	[RRR_NFS3_SYMLINK] = {"SYMLINK", nfs_guard}, [RRR_NFS3_MKNOD] = {"MKNOD", nfs_guard},
	[RRR_NFS3_REMOVE] = {"REMOVE", nfs_guard},   [RRR_NFS3_RMDIR] = {"RMDIR", nfs_guard},
	[RRR_NFS3_RENAME] = {"RENAME", nfs_guard},   [RRR_NFS3_LINK] = {"LINK", nfs_guard},
	[RRR_NFS3_READDIR] = {"READDIR", nfs_guard},
	[RRR_NFS3_READDIRPLUS] = {"READDIRPLUS", nfs_guard},
	[RRR_NFS3_FSSTAT] = {"FSSTAT", nfs_guard},   [RRR_NFS3_FSINFO] = {"FSINFO", nfs_guard},
	[RRR_NFS3_PATHCONF] = {"PATHCONF", nfs_guard}, [RRR_NFS3_COMMIT] = {"COMMIT", nfs_guard},
};

const struct rrr_svc_proc fs_mnt_guarded[RRR_MNT_NPROCS] = {
	[RRR_MNT_NULL] = {"NULL", mnt_guard},     [RRR_MNT_MNT] = {"MNT", mnt_guard},
	[RRR_MNT_DUMP] = {"DUMP", mnt_guard},     [RRR_MNT_UMNT] = {"UMNT", mnt_guard},
	[RRR_MNT_UMNTALL] = {"UMNTALL", mnt_guard}, [RRR_MNT_EXPORT] = {"EXPORT", mnt_guard},
};

void fs_access_print(FILE *f, const char *prefix)
{
	fprintf(f, "%saccess.denied_mount %llu\n%saccess.denied_nfs %llu\n%saccess.rofs %llu\n",
		prefix, (unsigned long long)atomic_load(&g_denied_mount), prefix,
		(unsigned long long)atomic_load(&g_denied_nfs), prefix,
		(unsigned long long)atomic_load(&g_rofs));
}
