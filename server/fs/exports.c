/* SPDX-License-Identifier: MIT */
/*
 * server/fs/exports.c - the exports of one rrr-server, and which export a
 * request is for.
 *
 * Normal operation: main.c opens every export of the config (fh.c) and
 * adds it here, in config order, before the server runs; the table does
 * not change afterwards, so lookups take no lock. Every file handle
 * carries its export's id (fh.c: bytes 4..7, inside the SipHash tag, a
 * hash of the export's real path under the handle key), so:
 *   - an NFS call belongs to the export its first file handle names
 *     (every NFSv3 procedure but NULL starts with one); access.c peeks at
 *     that handle before anything else and makes it the request's export
 *     (fs_req_export_set); the handlers of nfs3_proc.c use it;
 *   - a MNT belongs to the export its path names (the export's real path,
 *     its name, or a directory beneath either); "/" names the export only
 *     when there is exactly one (with several, "/" is ambiguous: NOENT).
 *
 * Hostile peers: a handle whose export id is none of ours, or too short to
 * carry one, is given to the first export, whose handlers answer it as
 * they answer any bad handle (BADHANDLE or STALE), under the first
 * export's access policy. A handle cannot be moved to another export by
 * rewriting its id: the id is covered by the tag. A second handle of
 * another export in RENAME or LINK is NFS3ERR_XDEV (nfs3_proc.c), as for
 * two file systems. Two exports never overlap (main.c refuses the same
 * directory twice, one inside another, and a name used twice), so an
 * object belongs to one export only and confinement (fh.c) stays per
 * export.
 *
 * Threads: the request's export is a thread-local pointer, set by the
 * worker (access.c) and, for work handed to the caller-identity agent
 * (cred.c), by the agent before it runs the job (nfs3_proc.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/fs/fs.h"

static struct fs_export *g_exports[FS_MAX_EXPORTS];
static unsigned g_nexports;
static _Thread_local struct fs_export *t_req_export;

int fs_exports_add(struct fs_export *ex)
{
	if (g_nexports == FS_MAX_EXPORTS)
		return -ENOSPC;
	for (unsigned i = 0; i < g_nexports; i++)
		if (g_exports[i]->export_id == ex->export_id)
			return -EEXIST;
	ex->index = g_nexports;
	g_exports[g_nexports++] = ex;
	return 0;
}

void fs_exports_clear(void)
{
	memset(g_exports, 0, sizeof(g_exports));
	g_nexports = 0;
}

unsigned fs_exports_count(void)
{
	return g_nexports;
}

struct fs_export *fs_exports_at(unsigned i)
{
	return i < g_nexports ? g_exports[i] : NULL;
}

struct fs_export *fs_exports_by_fh(const struct rrr_nfs3_fh *fh)
{
	uint32_t id;
	if (fs_fh_export_id(fh, &id) == 0)
		for (unsigned i = 0; i < g_nexports; i++)
			if (g_exports[i]->export_id == id)
				return g_exports[i];
	return g_exports[0];
}

struct fs_export *fs_exports_by_args(const struct rrr_xdr *args)
{
	struct rrr_xdr peek = *args; /* a copy: the handler decodes from the start */
	struct rrr_nfs3_fh fh;
	if (g_nexports < 2 || rrr_nfs3_xdr_fh(&peek, &fh) < 0)
		return g_exports[0];
	return fs_exports_by_fh(&fh);
}

/* Trailing slashes off (but keep "/"): the length that counts. */
static size_t trimmed(const char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		n--;
	return n;
}

/* Whether @path names @base or lies beneath it; the part beneath into @rel. */
static bool beneath(const char *base, const char *path, size_t n, char *rel, size_t len)
{
	size_t b = trimmed(base);
	if (n < b || strncmp(base, path, b))
		return false;
	if (n == b) {
		snprintf(rel, len, ".");
		return true;
	}
	if (path[b] != '/' || b == 1)
		return false;
	const char *r = path + b;
	while (*r == '/')
		r++;
	snprintf(rel, len, "%.*s", (int)(n - (size_t)(r - path)), r);
	return true;
}

struct fs_export *fs_exports_by_path(const char *path, char *rel, size_t len)
{
	size_t n = trimmed(path);
	if (n == 1 && path[0] == '/') {
		if (g_nexports != 1)
			return NULL;
		snprintf(rel, len, ".");
		return g_exports[0];
	}
	/* the longest name or real path that @path names or lies beneath wins
	 * (an export named /data/x beside one named /data) */
	struct fs_export *best = NULL;
	size_t best_len = 0;
	for (unsigned i = 0; i < g_nexports; i++) {
		const char *bases[2] = {g_exports[i]->name, g_exports[i]->root};
		for (int j = 0; j < 2; j++) {
			char r[PATH_MAX];
			size_t b = trimmed(bases[j]);
			if (b > best_len && beneath(bases[j], path, n, r, sizeof(r))) {
				best = g_exports[i];
				best_len = b;
				snprintf(rel, len, "%s", r);
			}
		}
	}
	return best;
}

void fs_req_export_set(struct fs_export *ex)
{
	t_req_export = ex;
}

struct fs_export *fs_req_export(void)
{
	return t_req_export ? t_req_export : g_exports[0];
}
