/* SPDX-License-Identifier: MIT */
/*
 * xdr/mount3.c - MOUNT version 3 codecs (RFC 1813 appendix I).
 *
 * Normal operation: like xdr/nfs3.c, each type is one bidirectional walk.
 * MNT takes a dirpath (string<1024>) and returns a mountstat3 and, on
 * success, fhandle3 (opaque<64>) plus the list of accepted auth flavors.
 * DUMP and EXPORT return linked lists, flattened on the wire into "value
 * follows" booleans:
 *
 *   mountlist:  [1][hostname<255>][dirpath<1024>] ... [0]
 *   exports:    [1][dirpath<1024>] ([1][group name<255>] ... [0]) ... [0]
 *
 * Hostile input: list lengths are bounded by the caller's array capacity
 * and RRR_MNT_MAX_LIST (-E2BIG beyond); an export's group names are joined
 * with ',' into a 255-byte buffer and extra groups beyond it are rejected;
 * the flavor list is bounded by RRR_MNT_MAX_FLAVORS.
 */
#include <errno.h>
#include <string.h>

#include <rrr/nfs3_xdr.h>

#include "xdr/nfs3_impl.h"

int rrr_mnt_xdr_dirpath(struct rrr_xdr *x, struct rrr_mnt_dirpath *d)
{
	return rrr__x_string(x, d->path, RRR_NFS3_MAXPATHLEN);
}

int rrr_mnt_xdr_mnt_res(struct rrr_xdr *x, struct rrr_mnt_res *r)
{
	RRR__X(rrr__x_enum(x, RRR_MNT3ERR_SERVERFAULT, &r->status));
	if (r->status != RRR_MNT3_OK)
		return 0;
	RRR__X(rrr_nfs3_xdr_fh(x, &r->fh));
	if (rrr__x_enc(x)) {
		if (r->nflavors > RRR_MNT_MAX_FLAVORS)
			return -E2BIG;
		RRR__X(rrr_xdr_put_count(x, r->nflavors));
	} else {
		RRR__X(rrr_xdr_get_count(x, RRR_MNT_MAX_FLAVORS, 4, &r->nflavors));
	}
	for (uint32_t i = 0; i < r->nflavors; i++)
		RRR__X(rrr__x_u32(x, &r->flavors[i]));
	return 0;
}

/* One entry of a list, both ways. */
typedef int (*x_entry_fn)(struct rrr_xdr *x, void *entry);

/* A list flattened into "value follows" booleans, each entry through @fn:
 * encode walks the *@n entries of @entries (@size bytes each); decode
 * fills @entries, at most @cap and RRR_MNT_MAX_LIST (-E2BIG beyond), and
 * counts them in *@n. 0 or -errno. */
static int x_list(struct rrr_xdr *x, void *entries, size_t size, uint32_t *n, uint32_t cap,
		  x_entry_fn fn)
{
	char *base = entries;

	if (rrr__x_enc(x)) {
		for (uint32_t i = 0; i < *n; i++) {
			RRR__X(rrr_xdr_put_bool(x, true));
			RRR__X(fn(x, base + i * size));
		}
		return rrr_xdr_put_bool(x, false);
	}
	*n = 0;
	for (;;) {
		bool follows;
		RRR__X(rrr_xdr_get_bool(x, &follows));
		if (!follows)
			return 0;
		if (*n >= cap || *n >= RRR_MNT_MAX_LIST)
			return -E2BIG;
		RRR__X(fn(x, base + *n * size));
		(*n)++;
	}
}

/* A mountlist entry: hostname, dirpath. */
static int x_mount_entry(struct rrr_xdr *x, void *entry)
{
	struct rrr_mnt_entry *e = entry;

	RRR__X(rrr__x_string(x, e->host, RRR_NFS3_MAXNAMLEN));
	return rrr__x_string(x, e->dir, RRR_NFS3_MAXPATHLEN);
}

int rrr_mnt_xdr_dump_res(struct rrr_xdr *x, struct rrr_mnt_dump_res *r)
{
	return x_list(x, r->entries, sizeof(*r->entries), &r->n, r->cap, x_mount_entry);
}

/* Groups: encode splits @groups at ','; decode joins them with ','. */
static int x_groups(struct rrr_xdr *x, char *groups)
{
	if (rrr__x_enc(x)) {
		const char *p = groups;
		while (*p) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);
			if (n > RRR_NFS3_MAXNAMLEN)
				return -E2BIG;
			if (n > 0) {
				RRR__X(rrr_xdr_put_bool(x, true));
				RRR__X(rrr_xdr_put_opaque(x, p, (uint32_t)n));
			}
			p += n;
			if (*p == ',')
				p++;
		}
		return rrr_xdr_put_bool(x, false);
	}
	size_t used = 0;
	groups[0] = '\0';
	for (uint32_t count = 0;; count++) {
		bool follows;
		char name[RRR_NFS3_MAXNAMLEN + 1];
		RRR__X(rrr_xdr_get_bool(x, &follows));
		if (!follows)
			return 0;
		if (count >= RRR_MNT_MAX_LIST)
			return -E2BIG;
		RRR__X(rrr_xdr_get_string(x, name, RRR_NFS3_MAXNAMLEN));
		size_t n = strlen(name);
		if (used + (used ? 1 : 0) + n > RRR_NFS3_MAXNAMLEN)
			return -E2BIG;
		if (used)
			groups[used++] = ',';
		memcpy(groups + used, name, n);
		used += n;
		groups[used] = '\0';
	}
}

/* An exports entry: dirpath, groups. */
static int x_export_entry(struct rrr_xdr *x, void *entry)
{
	struct rrr_mnt_export *e = entry;

	RRR__X(rrr__x_string(x, e->dir, RRR_NFS3_MAXPATHLEN));
	return x_groups(x, e->groups);
}

int rrr_mnt_xdr_export_res(struct rrr_xdr *x, struct rrr_mnt_export_res *r)
{
	return x_list(x, r->entries, sizeof(*r->entries), &r->n, r->cap, x_export_entry);
}
