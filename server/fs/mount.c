/* SPDX-License-Identifier: MIT */
/*
 * server/fs/mount.c - MOUNT version 3 for rrr-server (RFC 1813 appendix I).
 *
 * Normal operation: MNT accepts the export's name (its real path, the
 * --name given, or "/" as an alias for the only export) or a directory
 * beneath it (resolved beneath the export root like every path; ".." and
 * symlinks cannot climb out), answers with that directory's file handle and AUTH_SYS/AUTH_NONE as accepted
 * flavors, and records (client address, path) for DUMP. UMNT/UMNTALL
 * forget the caller's entries. EXPORT lists the one export, open to every
 * host ("*"); rrr-server answers EXPORT in access.c instead, with the
 * allow list as the groups, and refuses MNT there to clients not on it. The same program is served on every listener, so the kernel
 * client (mountproto=tcp) and libnfs find it on the TCP mount port, and
 * RDMA clients may also MNT over their NFS connection.
 *
 * Recovery: the mount list is advisory (as on every NFS server); it is
 * bounded by FS_MAX_MOUNTS, the oldest entry is dropped when full, and it
 * is not persisted: a restart forgets it, which no client depends on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "server/fs/fs.h"

static struct fs_export *begin(struct rrr_svc_req *req, unsigned proc)
{
	struct fs_export *ex = rrr_svc_req_program_ctx(req);
	atomic_fetch_add(&ex->mnt_calls[proc], 1);
	return ex;
}

static void peer_name(struct rrr_svc_req *req, char *out, size_t len)
{
	struct sockaddr_storage ss;
	snprintf(out, len, "unknown");
	if (rrr_svc_req_peer(req, &ss) < 0)
		return;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, out, (socklen_t)len);
	else if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) /* dual-stack listener: show the IPv4 address */
			inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)len);
		else
			inet_ntop(AF_INET6, a, out, (socklen_t)len);
	}
}

/*
 * Which directory of the export does @path name? The export's real path,
 * its --name, and "/" name the root; "<one of those>/a/b" names a/b beneath
 * it (resolved with RESOLVE_BENEATH like every other path). *rel gets the
 * relative part ("." for the root). false: not this export.
 */
static bool export_matches(const struct fs_export *ex, const char *path, char *rel, size_t len)
{
	const char *bases[] = {ex->root, ex->name};
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 1 && path[0] == '/') {
		snprintf(rel, len, ".");
		return true;
	}
	for (int i = 0; i < 2; i++) {
		size_t b = strlen(bases[i]);
		while (b > 1 && bases[i][b - 1] == '/')
			b--;
		if (n < b || strncmp(bases[i], path, b))
			continue;
		if (n == b) {
			snprintf(rel, len, ".");
			return true;
		}
		if (path[b] == '/' && b > 1) {
			const char *r = path + b;
			while (*r == '/')
				r++;
			snprintf(rel, len, "%.*s", (int)(n - (size_t)(r - path)), r);
			return true;
		}
	}
	return false;
}

static int m_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	(void)res;
	begin(req, RRR_MNT_NULL);
	return 0;
}

static int m_mnt(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_MNT_MNT);
	struct rrr_mnt_dirpath d;
	if (rrr_mnt_xdr_dirpath(args, &d) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_mnt_res r = {0};
	char host[RRR_NFS3_MAXNAMLEN + 1];
	peer_name(req, host, sizeof(host));
	char rel[PATH_MAX];
	struct fs_obj o = {.fd = -1};
	if (!export_matches(ex, d.path, rel, sizeof(rel))) {
		r.status = RRR_MNT3ERR_NOENT;
		fs_log("MNT of '%s' from %s refused: the export is '%s'", d.path, host, ex->name);
	} else {
		uint32_t st = fs_resolve_path(ex, rel, &o);
		if (st == RRR_NFS3_OK && !S_ISDIR(o.st.st_mode))
			st = RRR_NFS3ERR_NOTDIR;
		if (st != RRR_NFS3_OK) {
			r.status = st == RRR_NFS3ERR_NOENT || st == RRR_NFS3ERR_NOTDIR ||
						   st == RRR_NFS3ERR_ACCES
					   ? st
					   : RRR_MNT3ERR_IO;
		} else {
			fs_fh_make(ex, &o, &r.fh);
			r.nflavors = 2;
			r.flavors[0] = RRR_AUTH_SYS;
			r.flavors[1] = RRR_AUTH_NONE;
			pthread_mutex_lock(&ex->lock);
			if (ex->nmounts == FS_MAX_MOUNTS) {
				memmove(&ex->mounts[0], &ex->mounts[1],
					sizeof(ex->mounts[0]) * (FS_MAX_MOUNTS - 1));
				ex->nmounts--;
			}
			struct rrr_mnt_entry *e = &ex->mounts[ex->nmounts++];
			snprintf(e->host, sizeof(e->host), "%s", host);
			snprintf(e->dir, sizeof(e->dir), "%s", d.path);
			pthread_mutex_unlock(&ex->lock);
			if (ex->verbose)
				fs_log("%s mounted %s over %s", host, d.path,
				       rrr_svc_req_transport(req));
		}
	}
	fs_obj_close(&o);
	return rrr_mnt_xdr_mnt_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static int m_dump(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	struct fs_export *ex = begin(req, RRR_MNT_DUMP);
	struct rrr_mnt_entry *copy = rrr_svc_req_alloc(req, sizeof(ex->mounts));
	if (!copy)
		return RRR_SVC_SYSTEM_ERR;
	pthread_mutex_lock(&ex->lock);
	uint32_t n = ex->nmounts;
	memcpy(copy, ex->mounts, sizeof(ex->mounts[0]) * n);
	pthread_mutex_unlock(&ex->lock);
	struct rrr_mnt_dump_res r = {.entries = copy, .n = n, .cap = n};
	return rrr_mnt_xdr_dump_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static void forget(struct fs_export *ex, const char *host, const char *dir)
{
	pthread_mutex_lock(&ex->lock);
	uint32_t j = 0;
	for (uint32_t i = 0; i < ex->nmounts; i++) {
		bool drop = !strcmp(ex->mounts[i].host, host) &&
			    (!dir || !strcmp(ex->mounts[i].dir, dir));
		if (!drop)
			ex->mounts[j++] = ex->mounts[i];
	}
	ex->nmounts = j;
	pthread_mutex_unlock(&ex->lock);
}

static int m_umnt(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)res;
	struct fs_export *ex = begin(req, RRR_MNT_UMNT);
	struct rrr_mnt_dirpath d;
	if (rrr_mnt_xdr_dirpath(args, &d) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	char host[RRR_NFS3_MAXNAMLEN + 1];
	peer_name(req, host, sizeof(host));
	forget(ex, host, d.path);
	return 0;
}

static int m_umntall(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	(void)res;
	struct fs_export *ex = begin(req, RRR_MNT_UMNTALL);
	char host[RRR_NFS3_MAXNAMLEN + 1];
	peer_name(req, host, sizeof(host));
	forget(ex, host, NULL);
	return 0;
}

static int m_export(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	struct fs_export *ex = begin(req, RRR_MNT_EXPORT);
	struct rrr_mnt_export *e = rrr_svc_req_alloc(req, sizeof(*e));
	if (!e)
		return RRR_SVC_SYSTEM_ERR;
	snprintf(e->dir, sizeof(e->dir), "%.1024s", ex->name);
	snprintf(e->groups, sizeof(e->groups), "*");
	struct rrr_mnt_export_res r = {.entries = e, .n = 1, .cap = 1};
	return rrr_mnt_xdr_export_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

const struct rrr_svc_proc fs_mnt_procs[RRR_MNT_NPROCS] = {
	[RRR_MNT_NULL] = {"NULL", m_null},
	[RRR_MNT_MNT] = {"MNT", m_mnt},
	[RRR_MNT_DUMP] = {"DUMP", m_dump},
	[RRR_MNT_UMNT] = {"UMNT", m_umnt},
	[RRR_MNT_UMNTALL] = {"UMNTALL", m_umntall},
	[RRR_MNT_EXPORT] = {"EXPORT", m_export},
};
