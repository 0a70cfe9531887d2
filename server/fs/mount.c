/* SPDX-License-Identifier: MIT */
/*
 * server/fs/mount.c - MOUNT version 3 for rrr-server (RFC 1813 appendix I).
 *
 * Normal operation: MNT accepts an export's name (its real path, the
 * name given, or "/" as an alias when there is only one export) or a
 * directory beneath it (exports.c picks the export; the directory is
 * resolved beneath that export's root like every path; ".." and symlinks
 * cannot climb out), answers with that directory's file handle and
 * AUTH_SYS/AUTH_NONE as accepted flavors, and records (client address,
 * path) in that export's list for DUMP, which lists every export's.
 * UMNT/UMNTALL forget the caller's entries. EXPORT lists every export,
 * open to every host ("*"); rrr-server answers EXPORT in access.c instead,
 * with each export's allow list as its groups, and refuses MNT there to
 * clients not on the list of the export they ask for. The same program is served on every listener, so the kernel
 * client (mountproto=tcp) and libnfs find it on the TCP mount port, and
 * RDMA clients may also MNT over their NFS connection.
 *
 * Log: the path of a MNT is the client's text; it reaches the log only
 * escaped and cut (fs_log_peer), and the lines are rate-limited per kind
 * (fs_log_limited), so a client can neither forge a line nor fill the disk.
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
#include <syslog.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"

/* MOUNT calls are counted on the first export, MNT and UMNT on theirs. */
static void count(struct fs_export *ex, unsigned proc)
{
	atomic_fetch_add(&ex->mnt_calls[proc], 1);
}

static int m_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	(void)res;
	(void)req;
	count(fs_exports_at(0), RRR_MNT_NULL);
	return 0;
}

static int m_mnt(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct rrr_mnt_dirpath d;
	if (rrr_mnt_xdr_dirpath(args, &d) < 0) {
		count(fs_exports_at(0), RRR_MNT_MNT);
		return RRR_SVC_GARBAGE_ARGS;
	}
	struct rrr_mnt_res r = {0};
	char host[RRR_NFS3_MAXNAMLEN + 1];
	fs_peer_text(req, host, sizeof(host));
	char rel[PATH_MAX];
	struct fs_obj o = {.fd = -1};
	struct fs_export *ex = fs_exports_by_path(d.path, rel, sizeof(rel));
	count(ex ? ex : fs_exports_at(0), RRR_MNT_MNT);
	char path[RRR__LOG_PEER_SIZE];
	if (!ex) {
		static struct fs_lograte rl = FS_LOGRATE("MNT refused: the path names none of the exports");
		r.status = RRR_MNT3ERR_NOENT;
		if (fs_exports_count() == 1)
			fs_log_limited(&rl, LOG_NOTICE, "MNT of '%s' from %s refused: the export is '%s'",
				       fs_log_peer(d.path, path), host, fs_exports_at(0)->name);
		else
			fs_log_limited(&rl, LOG_NOTICE,
				       "MNT of '%s' from %s refused: not one of the %u exports%s",
				       fs_log_peer(d.path, path), host, fs_exports_count(),
				       strcmp(d.path, "/") ? ""
							   : " (\"/\" names the export only when "
							     "there is one)");
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
			static struct fs_lograte rl = FS_LOGRATE("MNT accepted");
			if (ex->verbose)
				fs_log_limited(&rl, LOG_NOTICE, "%s mounted %s over %s", host,
					       fs_log_peer(d.path, path), rrr_svc_req_transport(req));
		}
	}
	fs_obj_close(&o);
	return rrr_mnt_xdr_mnt_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static int m_dump(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	count(fs_exports_at(0), RRR_MNT_DUMP);
	unsigned nex = fs_exports_count();
	struct rrr_mnt_entry *copy =
		rrr_svc_req_alloc(req, sizeof(copy[0]) * FS_MAX_MOUNTS * (nex ? nex : 1));
	if (!copy)
		return RRR_SVC_SYSTEM_ERR;
	uint32_t n = 0;
	for (unsigned i = 0; i < nex; i++) {
		struct fs_export *ex = fs_exports_at(i);
		pthread_mutex_lock(&ex->lock);
		memcpy(copy + n, ex->mounts, sizeof(ex->mounts[0]) * ex->nmounts);
		n += ex->nmounts;
		pthread_mutex_unlock(&ex->lock);
	}
	struct rrr_mnt_dump_res r = {.entries = copy, .n = n, .cap = n};
	return rrr_mnt_xdr_dump_res(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static void forget_one(struct fs_export *ex, const char *host, const char *dir)
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

/* Forget @host's entries for @dir (NULL: all) in every export. */
static void forget(const char *host, const char *dir)
{
	for (unsigned i = 0; i < fs_exports_count(); i++)
		forget_one(fs_exports_at(i), host, dir);
}

static int m_umnt(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)res;
	count(fs_exports_at(0), RRR_MNT_UMNT);
	struct rrr_mnt_dirpath d;
	if (rrr_mnt_xdr_dirpath(args, &d) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	char host[RRR_NFS3_MAXNAMLEN + 1];
	fs_peer_text(req, host, sizeof(host));
	forget(host, d.path);
	return 0;
}

static int m_umntall(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	(void)res;
	count(fs_exports_at(0), RRR_MNT_UMNTALL);
	char host[RRR_NFS3_MAXNAMLEN + 1];
	fs_peer_text(req, host, sizeof(host));
	forget(host, NULL);
	return 0;
}

static int m_export(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	count(fs_exports_at(0), RRR_MNT_EXPORT);
	unsigned nex = fs_exports_count();
	struct rrr_mnt_export *e = rrr_svc_req_alloc(req, sizeof(*e) * (nex ? nex : 1));
	if (!e)
		return RRR_SVC_SYSTEM_ERR;
	for (unsigned i = 0; i < nex; i++) {
		snprintf(e[i].dir, sizeof(e[i].dir), "%.1024s", fs_exports_at(i)->name);
		snprintf(e[i].groups, sizeof(e[i].groups), "*");
	}
	struct rrr_mnt_export_res r = {.entries = e, .n = nex, .cap = nex};
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
