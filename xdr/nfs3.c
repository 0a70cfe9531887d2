/* SPDX-License-Identifier: MIT */
/*
 * xdr/nfs3.c - NFS version 3 argument and result codecs (RFC 1813).
 *
 * Normal operation: each type is described once by a function that walks
 * its fields in wire order through the bidirectional helpers of
 * xdr/nfs3_impl.h; the stream's direction decides whether the walk writes
 * or reads. Discriminated unions (post_op_attr, pre_op_attr, set_*, the
 * status-dependent result arms) encode the discriminant from the struct and
 * then the arm the discriminant selects, so encoder and decoder cannot
 * disagree about layout. DDP-eligible items (READ/WRITE data, READLINK and
 * SYMLINK paths; RFC 8267 section 3) go through rrr_xdr_encode_payload()/
 * rrr_xdr_decode_payload() so that an RPC-over-RDMA transport can move them
 * through chunks.
 *
 * Hostile input: every length or count read from the wire is compared with
 * its limit (64-byte handles, 255-byte names, 1024-byte paths, 1 MiB data,
 * RRR_NFS3_MAX_DIRENTS entries, the caller's array capacity) before it is
 * used; enums are range checked; strings with embedded NUL are rejected.
 * Nothing here allocates, so a failed decode leaves nothing to clean up:
 * the caller drops the message (GARBAGE_ARGS on a server).
 *
 *   fattr3 (84 bytes)                      post_op_attr
 *   +------+------+-------+-----+-----+     +----------+---------------+
 *   | type | mode | nlink | uid | gid |     | follows  | fattr3 if 1   |
 *   +------+------+-------+-----+-----+     +----------+---------------+
 *   | size (8) | used (8) | rdev (8)  |
 *   | fsid (8) | fileid (8)| a/m/ctime (3 x 8) |
 */
#include <errno.h>
#include <string.h>

#include <rrr/nfs3_xdr.h>

#include "xdr/nfs3_impl.h"

/* ------------------------------------------------------------ primitives */
int rrr__x_u32(struct rrr_xdr *x, uint32_t *v)
{
	return rrr__x_enc(x) ? rrr_xdr_put_u32(x, *v) : rrr_xdr_get_u32(x, v);
}

int rrr__x_u64(struct rrr_xdr *x, uint64_t *v)
{
	return rrr__x_enc(x) ? rrr_xdr_put_u64(x, *v) : rrr_xdr_get_u64(x, v);
}

int rrr__x_bool(struct rrr_xdr *x, bool *v)
{
	return rrr__x_enc(x) ? rrr_xdr_put_bool(x, *v) : rrr_xdr_get_bool(x, v);
}

int rrr__x_enum(struct rrr_xdr *x, uint32_t max, uint32_t *v)
{
	if (rrr__x_enc(x))
		return *v > max ? -EINVAL : rrr_xdr_put_enum(x, *v);
	return rrr_xdr_get_enum(x, max, v);
}

int rrr__x_fixed(struct rrr_xdr *x, void *p, uint32_t n)
{
	return rrr__x_enc(x) ? rrr_xdr_put_fixed(x, p, n) : rrr_xdr_get_fixed(x, p, n);
}

int rrr__x_string(struct rrr_xdr *x, char *s, uint32_t max)
{
	if (rrr__x_enc(x)) {
		if (strnlen(s, (size_t)max + 1) > max)
			return -E2BIG;
		return rrr_xdr_put_string(x, s);
	}
	return rrr_xdr_get_string(x, s, max);
}

/* nfsstat3 is an enum with holes; accept any value up to JUKEBOX. */
static int x_stat(struct rrr_xdr *x, uint32_t *st)
{
	return rrr__x_enum(x, RRR_NFS3ERR_JUKEBOX, st);
}

static int x_time(struct rrr_xdr *x, struct rrr_nfs3_time *t)
{
	RRR__X(rrr__x_u32(x, &t->sec));
	return rrr__x_u32(x, &t->nsec);
}

/* A DDP-eligible path (READLINK result, SYMLINK argument). */
static int x_ddp_path(struct rrr_xdr *x, char *path, uint32_t *plen, bool *in_sink)
{
	if (rrr__x_enc(x)) {
		size_t n = strnlen(path, RRR_NFS3_MAXPATHLEN + 1);
		if (n > RRR_NFS3_MAXPATHLEN)
			return -E2BIG;
		struct iovec iov = {.iov_base = path, .iov_len = n};
		return rrr_xdr_encode_payload(x, &iov, 1, (uint32_t)n);
	}
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = RRR_XDR_PAYLOAD_MAX_IOV;
	uint32_t len = 0;
	RRR__X(rrr_xdr_decode_payload(x, RRR_NFS3_MAXPATHLEN, &len, iov, &niov));
	if (len > RRR_NFS3_MAXPATHLEN || niov > RRR_XDR_PAYLOAD_MAX_IOV)
		return -E2BIG;
	if (plen)
		*plen = len;
	if (niov == 0 && len > 0) {
		path[0] = '\0';
		if (!in_sink)
			return -EBADMSG;
		*in_sink = true;
		return 0;
	}
	size_t off = 0;
	for (unsigned i = 0; i < niov; i++) {
		if (iov[i].iov_len > len - off)
			return -EBADMSG;
		memmove(path + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	if (off != len)
		return -EBADMSG;
	path[off] = '\0';
	if (memchr(path, '\0', off))
		return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------ basic types */
int rrr_nfs3_xdr_fh(struct rrr_xdr *x, struct rrr_nfs3_fh *fh)
{
	if (rrr__x_enc(x)) {
		if (fh->len > RRR_NFS3_FHSIZE)
			return -E2BIG;
		return rrr_xdr_put_opaque(x, fh->data, fh->len);
	}
	return rrr_xdr_get_opaque(x, fh->data, RRR_NFS3_FHSIZE, &fh->len);
}

int rrr_nfs3_xdr_fattr(struct rrr_xdr *x, struct rrr_nfs3_fattr *a)
{
	RRR__X(rrr__x_enum(x, RRR_NF3FIFO, &a->type));
	if (!rrr__x_enc(x) && a->type == 0)
		return -EINVAL;
	RRR__X(rrr__x_u32(x, &a->mode));
	RRR__X(rrr__x_u32(x, &a->nlink));
	RRR__X(rrr__x_u32(x, &a->uid));
	RRR__X(rrr__x_u32(x, &a->gid));
	RRR__X(rrr__x_u64(x, &a->size));
	RRR__X(rrr__x_u64(x, &a->used));
	RRR__X(rrr__x_u32(x, &a->rdev_major));
	RRR__X(rrr__x_u32(x, &a->rdev_minor));
	RRR__X(rrr__x_u64(x, &a->fsid));
	RRR__X(rrr__x_u64(x, &a->fileid));
	RRR__X(x_time(x, &a->atime));
	RRR__X(x_time(x, &a->mtime));
	return x_time(x, &a->ctime);
}

int rrr_nfs3_xdr_post_op_attr(struct rrr_xdr *x, struct rrr_nfs3_post_op_attr *a)
{
	RRR__X(rrr__x_bool(x, &a->present));
	return a->present ? rrr_nfs3_xdr_fattr(x, &a->attr) : 0;
}

int rrr_nfs3_xdr_wcc_data(struct rrr_xdr *x, struct rrr_nfs3_wcc_data *w)
{
	RRR__X(rrr__x_bool(x, &w->before_present));
	if (w->before_present) {
		RRR__X(rrr__x_u64(x, &w->before.size));
		RRR__X(x_time(x, &w->before.mtime));
		RRR__X(x_time(x, &w->before.ctime));
	}
	return rrr_nfs3_xdr_post_op_attr(x, &w->after);
}

static int x_set_u32(struct rrr_xdr *x, bool *set, uint32_t *v)
{
	RRR__X(rrr__x_bool(x, set));
	return *set ? rrr__x_u32(x, v) : 0;
}

static int x_set_time(struct rrr_xdr *x, uint32_t *how, struct rrr_nfs3_time *t)
{
	RRR__X(rrr__x_enum(x, RRR_NFS3_SET_TO_CLIENT_TIME, how));
	return *how == RRR_NFS3_SET_TO_CLIENT_TIME ? x_time(x, t) : 0;
}

int rrr_nfs3_xdr_sattr(struct rrr_xdr *x, struct rrr_nfs3_sattr *s)
{
	RRR__X(x_set_u32(x, &s->set_mode, &s->mode));
	RRR__X(x_set_u32(x, &s->set_uid, &s->uid));
	RRR__X(x_set_u32(x, &s->set_gid, &s->gid));
	RRR__X(rrr__x_bool(x, &s->set_size));
	if (s->set_size)
		RRR__X(rrr__x_u64(x, &s->size));
	RRR__X(x_set_time(x, &s->atime_how, &s->atime));
	return x_set_time(x, &s->mtime_how, &s->mtime);
}

int rrr_nfs3_xdr_diropargs(struct rrr_xdr *x, struct rrr_nfs3_diropargs *d)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &d->dir));
	return rrr__x_string(x, d->name, RRR_NFS3_MAXNAMLEN);
}

/* ------------------------------------------------------------ arguments */
int rrr_nfs3_xdr_fh_args(struct rrr_xdr *x, struct rrr_nfs3_fh_args *a)
{
	return rrr_nfs3_xdr_fh(x, &a->fh);
}

int rrr_nfs3_xdr_setattr_args(struct rrr_xdr *x, struct rrr_nfs3_setattr_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->fh));
	RRR__X(rrr_nfs3_xdr_sattr(x, &a->attr));
	RRR__X(rrr__x_bool(x, &a->guard_check));
	return a->guard_check ? x_time(x, &a->guard_ctime) : 0;
}

int rrr_nfs3_xdr_access_args(struct rrr_xdr *x, struct rrr_nfs3_access_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->fh));
	return rrr__x_u32(x, &a->access);
}

int rrr_nfs3_xdr_read_args(struct rrr_xdr *x, struct rrr_nfs3_read_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->fh));
	RRR__X(rrr__x_u64(x, &a->offset));
	return rrr__x_u32(x, &a->count);
}

int rrr_nfs3_xdr_write_args(struct rrr_xdr *x, struct rrr_nfs3_write_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->fh));
	RRR__X(rrr__x_u64(x, &a->offset));
	RRR__X(rrr__x_u32(x, &a->count));
	RRR__X(rrr__x_enum(x, RRR_NFS3_FILE_SYNC, &a->stable));
	if (rrr__x_enc(x)) {
		if (a->data_len > RRR_NFS3_MAX_DATA)
			return -E2BIG;
		return rrr_xdr_encode_payload(x, a->iov, a->niov, a->data_len);
	}
	a->niov = RRR_XDR_PAYLOAD_MAX_IOV;
	RRR__X(rrr_xdr_decode_payload(x, RRR_NFS3_MAX_DATA, &a->data_len, a->dec_iov, &a->niov));
	a->iov = a->dec_iov;
	return 0;
}

int rrr_nfs3_xdr_create_args(struct rrr_xdr *x, struct rrr_nfs3_create_args *a)
{
	RRR__X(rrr_nfs3_xdr_diropargs(x, &a->where));
	RRR__X(rrr__x_enum(x, RRR_NFS3_EXCLUSIVE, &a->mode));
	if (a->mode == RRR_NFS3_EXCLUSIVE)
		return rrr__x_fixed(x, a->verf, 8);
	return rrr_nfs3_xdr_sattr(x, &a->attr);
}

int rrr_nfs3_xdr_mkdir_args(struct rrr_xdr *x, struct rrr_nfs3_mkdir_args *a)
{
	RRR__X(rrr_nfs3_xdr_diropargs(x, &a->where));
	return rrr_nfs3_xdr_sattr(x, &a->attr);
}

int rrr_nfs3_xdr_symlink_args(struct rrr_xdr *x, struct rrr_nfs3_symlink_args *a)
{
	RRR__X(rrr_nfs3_xdr_diropargs(x, &a->where));
	RRR__X(rrr_nfs3_xdr_sattr(x, &a->attr));
	/* On a server the read chunk has been pulled already: never in a sink. */
	return x_ddp_path(x, a->path, NULL, NULL);
}

int rrr_nfs3_xdr_mknod_args(struct rrr_xdr *x, struct rrr_nfs3_mknod_args *a)
{
	RRR__X(rrr_nfs3_xdr_diropargs(x, &a->where));
	RRR__X(rrr__x_enum(x, RRR_NF3FIFO, &a->type));
	switch (a->type) {
	case RRR_NF3CHR:
	case RRR_NF3BLK:
		RRR__X(rrr_nfs3_xdr_sattr(x, &a->attr));
		RRR__X(rrr__x_u32(x, &a->spec_major));
		return rrr__x_u32(x, &a->spec_minor);
	case RRR_NF3SOCK:
	case RRR_NF3FIFO:
		return rrr_nfs3_xdr_sattr(x, &a->attr);
	case 0:
		return -EINVAL;
	default:
		return 0;
	}
}

int rrr_nfs3_xdr_rename_args(struct rrr_xdr *x, struct rrr_nfs3_rename_args *a)
{
	RRR__X(rrr_nfs3_xdr_diropargs(x, &a->from));
	return rrr_nfs3_xdr_diropargs(x, &a->to);
}

int rrr_nfs3_xdr_link_args(struct rrr_xdr *x, struct rrr_nfs3_link_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->file));
	return rrr_nfs3_xdr_diropargs(x, &a->link);
}

int rrr_nfs3_xdr_readdir_args(struct rrr_xdr *x, struct rrr_nfs3_readdir_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->dir));
	RRR__X(rrr__x_u64(x, &a->cookie));
	RRR__X(rrr__x_fixed(x, a->cookieverf, 8));
	RRR__X(rrr__x_u32(x, &a->dircount));
	if (!rrr__x_enc(x))
		a->maxcount = a->dircount;
	return 0;
}

int rrr_nfs3_xdr_readdirplus_args(struct rrr_xdr *x, struct rrr_nfs3_readdir_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->dir));
	RRR__X(rrr__x_u64(x, &a->cookie));
	RRR__X(rrr__x_fixed(x, a->cookieverf, 8));
	RRR__X(rrr__x_u32(x, &a->dircount));
	return rrr__x_u32(x, &a->maxcount);
}

int rrr_nfs3_xdr_commit_args(struct rrr_xdr *x, struct rrr_nfs3_commit_args *a)
{
	RRR__X(rrr_nfs3_xdr_fh(x, &a->fh));
	RRR__X(rrr__x_u64(x, &a->offset));
	return rrr__x_u32(x, &a->count);
}

/* ------------------------------------------------------------ results */
int rrr_nfs3_xdr_getattr_res(struct rrr_xdr *x, struct rrr_nfs3_getattr_res *r)
{
	RRR__X(x_stat(x, &r->status));
	return r->status == RRR_NFS3_OK ? rrr_nfs3_xdr_fattr(x, &r->attr) : 0;
}

int rrr_nfs3_xdr_wcc_res(struct rrr_xdr *x, struct rrr_nfs3_wcc_res *r)
{
	RRR__X(x_stat(x, &r->status));
	return rrr_nfs3_xdr_wcc_data(x, &r->wcc);
}

int rrr_nfs3_xdr_lookup_res(struct rrr_xdr *x, struct rrr_nfs3_lookup_res *r)
{
	RRR__X(x_stat(x, &r->status));
	if (r->status == RRR_NFS3_OK) {
		RRR__X(rrr_nfs3_xdr_fh(x, &r->fh));
		RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->obj_attr));
	}
	return rrr_nfs3_xdr_post_op_attr(x, &r->dir_attr);
}

int rrr_nfs3_xdr_access_res(struct rrr_xdr *x, struct rrr_nfs3_access_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	return r->status == RRR_NFS3_OK ? rrr__x_u32(x, &r->access) : 0;
}

int rrr_nfs3_xdr_readlink_res(struct rrr_xdr *x, struct rrr_nfs3_readlink_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	if (!rrr__x_enc(x))
		r->path_in_sink = false;
	return x_ddp_path(x, r->path, &r->path_len, &r->path_in_sink);
}

int rrr_nfs3_xdr_read_res(struct rrr_xdr *x, struct rrr_nfs3_read_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_u32(x, &r->count));
	RRR__X(rrr__x_bool(x, &r->eof));
	if (rrr__x_enc(x)) {
		if (r->data_len > RRR_NFS3_MAX_DATA)
			return -E2BIG;
		return rrr_xdr_encode_payload(x, r->iov, r->niov, r->data_len);
	}
	r->niov = RRR_XDR_PAYLOAD_MAX_IOV;
	RRR__X(rrr_xdr_decode_payload(x, RRR_NFS3_MAX_DATA, &r->data_len, r->dec_iov, &r->niov));
	r->iov = r->dec_iov;
	if (r->count != r->data_len)
		return -EBADMSG;
	return 0;
}

int rrr_nfs3_xdr_write_res(struct rrr_xdr *x, struct rrr_nfs3_write_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_wcc_data(x, &r->wcc));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_u32(x, &r->count));
	RRR__X(rrr__x_enum(x, RRR_NFS3_FILE_SYNC, &r->committed));
	return rrr__x_fixed(x, r->verf, 8);
}

int rrr_nfs3_xdr_create_res(struct rrr_xdr *x, struct rrr_nfs3_create_res *r)
{
	RRR__X(x_stat(x, &r->status));
	if (r->status == RRR_NFS3_OK) {
		RRR__X(rrr__x_bool(x, &r->fh_present));
		if (r->fh_present)
			RRR__X(rrr_nfs3_xdr_fh(x, &r->fh));
		RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	}
	return rrr_nfs3_xdr_wcc_data(x, &r->dir_wcc);
}

int rrr_nfs3_xdr_rename_res(struct rrr_xdr *x, struct rrr_nfs3_rename_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_wcc_data(x, &r->from_wcc));
	return rrr_nfs3_xdr_wcc_data(x, &r->to_wcc);
}

int rrr_nfs3_xdr_link_res(struct rrr_xdr *x, struct rrr_nfs3_link_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	return rrr_nfs3_xdr_wcc_data(x, &r->dir_wcc);
}

/*
 * dirlist3 / dirlistplus3: a linked list flattened into "value follows"
 * booleans, then eof.
 *   [1][fileid 8][name<255>][cookie 8]{plus: post_op_attr post_op_fh3} ... [0][eof]
 */
static int x_dirent(struct rrr_xdr *x, struct rrr_nfs3_dirent *e, bool plus)
{
	RRR__X(rrr__x_u64(x, &e->fileid));
	RRR__X(rrr__x_string(x, e->name, RRR_NFS3_MAXNAMLEN));
	RRR__X(rrr__x_u64(x, &e->cookie));
	if (!plus)
		return 0;
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &e->attr));
	RRR__X(rrr__x_bool(x, &e->fh_present));
	return e->fh_present ? rrr_nfs3_xdr_fh(x, &e->fh) : 0;
}

uint32_t rrr_nfs3_dirent_size(const struct rrr_nfs3_dirent *e, bool plus)
{
	uint32_t n = 4 + 8 + 4 + RRR_XDR_PAD((uint32_t)strnlen(e->name, RRR_NFS3_MAXNAMLEN)) + 8;
	if (plus) {
		n += 4 + (e->attr.present ? 84 : 0);
		n += 4 + (e->fh_present ? 4 + RRR_XDR_PAD(e->fh.len) : 0);
	}
	return n;
}

int rrr_nfs3_xdr_readdir_res(struct rrr_xdr *x, struct rrr_nfs3_readdir_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->dir_attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_fixed(x, r->cookieverf, 8));
	if (rrr__x_enc(x)) {
		for (uint32_t i = 0; i < r->n; i++) {
			RRR__X(rrr_xdr_put_bool(x, true));
			RRR__X(x_dirent(x, &r->entries[i], r->plus));
		}
		RRR__X(rrr_xdr_put_bool(x, false));
		return rrr_xdr_put_bool(x, r->eof);
	}
	r->n = 0;
	for (;;) {
		bool follows;
		RRR__X(rrr_xdr_get_bool(x, &follows));
		if (!follows)
			break;
		if (r->n >= r->cap || r->n >= RRR_NFS3_MAX_DIRENTS)
			return -E2BIG;
		struct rrr_nfs3_dirent *e = &r->entries[r->n];
		memset(e, 0, sizeof(*e));
		RRR__X(x_dirent(x, e, r->plus));
		r->n++;
	}
	return rrr_xdr_get_bool(x, &r->eof);
}

int rrr_nfs3_xdr_fsstat_res(struct rrr_xdr *x, struct rrr_nfs3_fsstat_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_u64(x, &r->tbytes));
	RRR__X(rrr__x_u64(x, &r->fbytes));
	RRR__X(rrr__x_u64(x, &r->abytes));
	RRR__X(rrr__x_u64(x, &r->tfiles));
	RRR__X(rrr__x_u64(x, &r->ffiles));
	RRR__X(rrr__x_u64(x, &r->afiles));
	return rrr__x_u32(x, &r->invarsec);
}

int rrr_nfs3_xdr_fsinfo_res(struct rrr_xdr *x, struct rrr_nfs3_fsinfo_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_u32(x, &r->rtmax));
	RRR__X(rrr__x_u32(x, &r->rtpref));
	RRR__X(rrr__x_u32(x, &r->rtmult));
	RRR__X(rrr__x_u32(x, &r->wtmax));
	RRR__X(rrr__x_u32(x, &r->wtpref));
	RRR__X(rrr__x_u32(x, &r->wtmult));
	RRR__X(rrr__x_u32(x, &r->dtpref));
	RRR__X(rrr__x_u64(x, &r->maxfilesize));
	RRR__X(x_time(x, &r->time_delta));
	return rrr__x_u32(x, &r->properties);
}

int rrr_nfs3_xdr_pathconf_res(struct rrr_xdr *x, struct rrr_nfs3_pathconf_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_post_op_attr(x, &r->attr));
	if (r->status != RRR_NFS3_OK)
		return 0;
	RRR__X(rrr__x_u32(x, &r->linkmax));
	RRR__X(rrr__x_u32(x, &r->name_max));
	RRR__X(rrr__x_bool(x, &r->no_trunc));
	RRR__X(rrr__x_bool(x, &r->chown_restricted));
	RRR__X(rrr__x_bool(x, &r->case_insensitive));
	return rrr__x_bool(x, &r->case_preserving);
}

int rrr_nfs3_xdr_commit_res(struct rrr_xdr *x, struct rrr_nfs3_commit_res *r)
{
	RRR__X(x_stat(x, &r->status));
	RRR__X(rrr_nfs3_xdr_wcc_data(x, &r->wcc));
	return r->status == RRR_NFS3_OK ? rrr__x_fixed(x, r->verf, 8) : 0;
}

/* ------------------------------------------------------------ status names */
static const struct {
	uint32_t st;
	const char *name;
	int err;
} stat_tab[] = {
	{RRR_NFS3_OK, "NFS3_OK", 0},
	{RRR_NFS3ERR_PERM, "NFS3ERR_PERM", EPERM},
	{RRR_NFS3ERR_NOENT, "NFS3ERR_NOENT", ENOENT},
	{RRR_NFS3ERR_IO, "NFS3ERR_IO", EIO},
	{RRR_NFS3ERR_NXIO, "NFS3ERR_NXIO", ENXIO},
	{RRR_NFS3ERR_ACCES, "NFS3ERR_ACCES", EACCES},
	{RRR_NFS3ERR_EXIST, "NFS3ERR_EXIST", EEXIST},
	{RRR_NFS3ERR_XDEV, "NFS3ERR_XDEV", EXDEV},
	{RRR_NFS3ERR_NODEV, "NFS3ERR_NODEV", ENODEV},
	{RRR_NFS3ERR_NOTDIR, "NFS3ERR_NOTDIR", ENOTDIR},
	{RRR_NFS3ERR_ISDIR, "NFS3ERR_ISDIR", EISDIR},
	{RRR_NFS3ERR_INVAL, "NFS3ERR_INVAL", EINVAL},
	{RRR_NFS3ERR_FBIG, "NFS3ERR_FBIG", EFBIG},
	{RRR_NFS3ERR_NOSPC, "NFS3ERR_NOSPC", ENOSPC},
	{RRR_NFS3ERR_ROFS, "NFS3ERR_ROFS", EROFS},
	{RRR_NFS3ERR_MLINK, "NFS3ERR_MLINK", EMLINK},
	{RRR_NFS3ERR_NAMETOOLONG, "NFS3ERR_NAMETOOLONG", ENAMETOOLONG},
	{RRR_NFS3ERR_NOTEMPTY, "NFS3ERR_NOTEMPTY", ENOTEMPTY},
	{RRR_NFS3ERR_DQUOT, "NFS3ERR_DQUOT", EDQUOT},
	{RRR_NFS3ERR_STALE, "NFS3ERR_STALE", ESTALE},
	{RRR_NFS3ERR_REMOTE, "NFS3ERR_REMOTE", EREMOTE},
	{RRR_NFS3ERR_BADHANDLE, "NFS3ERR_BADHANDLE", EBADF},
	{RRR_NFS3ERR_NOT_SYNC, "NFS3ERR_NOT_SYNC", EINVAL},
	{RRR_NFS3ERR_BAD_COOKIE, "NFS3ERR_BAD_COOKIE", EINVAL},
	{RRR_NFS3ERR_NOTSUPP, "NFS3ERR_NOTSUPP", EOPNOTSUPP},
	{RRR_NFS3ERR_TOOSMALL, "NFS3ERR_TOOSMALL", EINVAL},
	{RRR_NFS3ERR_SERVERFAULT, "NFS3ERR_SERVERFAULT", EREMOTEIO},
	{RRR_NFS3ERR_BADTYPE, "NFS3ERR_BADTYPE", EINVAL},
	{RRR_NFS3ERR_JUKEBOX, "NFS3ERR_JUKEBOX", EAGAIN},
};

const char *rrr_nfs3_strstat(uint32_t status)
{
	for (size_t i = 0; i < sizeof(stat_tab) / sizeof(stat_tab[0]); i++)
		if (stat_tab[i].st == status)
			return stat_tab[i].name;
	return "NFS3ERR_(unknown)";
}

int rrr_nfs3_stat_to_errno(uint32_t status)
{
	for (size_t i = 0; i < sizeof(stat_tab) / sizeof(stat_tab[0]); i++)
		if (stat_tab[i].st == status)
			return -stat_tab[i].err;
	return -EIO;
}
