/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nfs3_proc.c - the NFSv3 procedures of rrr-server (RFC 1813 ch.3).
 *
 * Normal operation: every handler decodes its arguments with the codecs of
 * rrr/nfs3_xdr.h (a decode failure is GARBAGE_ARGS), resolves file handles
 * through fh.c (which guarantees the object lies beneath the export), does
 * the work with *at() system calls relative to the resolved directory's
 * O_PATH descriptor using single-component names (never a client-supplied
 * path), and encodes the result. NFS errors are results, not RPC errors:
 * a handler returns RRR_SVC_SYSTEM_ERR only when the result cannot be
 * encoded.
 *
 * Data: READ data goes out with rrr_xdr_encode_payload() from a buffer
 * allocated with rrr_svc_req_alloc() (on RDMA the library RDMA-Writes it
 * into the client's write chunk); WRITE data arrives as the iovecs the
 * library decoded (pulled through the read chunk on RDMA). READLINK and
 * SYMLINK paths are DDP-eligible likewise (xdr/nfs3.c).
 *
 * Durability: WRITE with FILE_SYNC does fsync() and DATA_SYNC fdatasync()
 * before the reply is encoded; UNSTABLE writes are left in the page cache
 * and COMMIT fsync()s the file. Both reply with the export's write
 * verifier, drawn at random when the server starts, so a client that sees
 * it change after a restart re-sends its uncommitted writes.
 *
 * Identity: every procedure runs as its caller (cred.c): the wrappers of
 * the procedure table (AS_CALLER) hand it to the worker's agent thread,
 * which acts as the request's (squashed) AUTH_SYS identity, so the kernel
 * checks every open, create, remove, rename and attribute change; READ and
 * WRITE first try the descriptor cache on the worker (a descriptor that the
 * same identity opened) and hand only their slow path over. New objects belong to the caller because
 * the caller made them.
 *
 * Creation (RFC 1813 3.3.8): UNCHECKED creates or keeps an existing regular
 * file (applying only the size asked for); GUARDED fails with EXIST when
 * the name exists; EXCLUSIVE stores the client's verifier in the new
 * file's atime and mtime seconds (31 bits each, as knfsd, so every file
 * system can hold them), and a re-sent EXCLUSIVE CREATE that finds a
 * regular file carrying the same verifier answers OK with that file's
 * handle; the client's SETATTR that follows then sets the real mode and
 * times. MKNOD makes FIFOs and sockets for anyone allowed to create in the
 * directory, and character or block devices where the caller's identity
 * may (root not squashed: the kernel asks for CAP_MKNOD).
 *
 * Recovery: a handle that no longer resolves is NFS3ERR_STALE; a request
 * that fails half way (e.g. CREATE succeeded but the new object cannot be
 * looked up) still replies with what is known, and the client may retry.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"

#define DIR_OVERHEAD 128u /* READDIR(PLUS) result minus its entries, rounded up */

/* The request's export (exports.c: the one its first handle names). */
static struct fs_export *begin(struct rrr_svc_req *req, unsigned proc)
{
	(void)req;
	struct fs_export *ex = fs_req_export();
	atomic_fetch_add(&ex->nfs_calls[proc], 1);
	return ex;
}

/* The identity digest of the request being served (on the agent). */
static uint64_t who(void)
{
	return fs_cred_current()->who;
}

/* Run a whole procedure as its caller (cred.c's agent thread). */
struct job {
	int (*fn)(struct rrr_svc_req *, struct rrr_xdr *, struct rrr_xdr *);
	struct fs_export *ex; /* the request's export, for the agent thread */
	struct rrr_svc_req *req;
	struct rrr_xdr *args, *res;
	int rc;
};

static void run_job(void *p)
{
	struct job *j = p;
	fs_req_export_set(j->ex);
	j->rc = j->fn(j->req, j->args, j->res);
}

static int as_caller(int (*fn)(struct rrr_svc_req *, struct rrr_xdr *, struct rrr_xdr *),
		     struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = fs_req_export();
	struct fs_cred c;
	fs_cred_of_call(ex, rrr_svc_req_call(req), &c);
	struct job j = {fn, ex, req, args, res, RRR_SVC_SYSTEM_ERR};
	int rc = fs_as_caller(ex, &c, run_job, &j);
	if (rc < 0) {
		static struct fs_lograte rl = FS_LOGRATE("cannot act as the caller's uid");
		fs_log_limited(&rl, LOG_WARNING, "cannot act as uid %u gid %u: %s", c.uid, c.gid,
			       strerror(-rc));
		return RRR_SVC_SYSTEM_ERR;
	}
	return j.rc;
}

static int finish(int rc)
{
	return rc < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static const struct rrr_rpc_call *call_of(struct rrr_svc_req *req)
{
	return rrr_svc_req_call(req);
}

/* ------------------------------------------------------------ NULL, GETATTR */
static int p_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)args;
	(void)res;
	begin(req, RRR_NFS3_NULL);
	return 0;
}

static int p_getattr(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_GETATTR);
	struct rrr_nfs3_fh_args a;
	if (rrr_nfs3_xdr_fh_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_getattr_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK)
		fs_fattr(ex, &o.st, &r.attr);
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_getattr_res(res, &r));
}

static int p_setattr(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_SETATTR);
	struct rrr_nfs3_setattr_args a;
	if (rrr_nfs3_xdr_setattr_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_wcc_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		fs_wcc_pre(&o.st, &r.wcc);
		if (ex->read_only)
			r.status = RRR_NFS3ERR_ROFS;
		else if (a.guard_check && ((uint32_t)o.st.st_ctim.tv_sec != a.guard_ctime.sec ||
					   (uint32_t)o.st.st_ctim.tv_nsec != a.guard_ctime.nsec))
			r.status = RRR_NFS3ERR_NOT_SYNC;
		else
			r.status = fs_apply_sattr(ex, &o, &a.attr);
		fs_fdc_forget(&ex->fdc, (uint64_t)o.st.st_ino);
		fs_post_op(ex, o.fd, &r.wcc.after);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_wcc_res(res, &r));
}

/* ------------------------------------------------------------ LOOKUP, ACCESS */
static int p_lookup(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_LOOKUP);
	struct rrr_nfs3_diropargs a;
	if (rrr_nfs3_xdr_diropargs(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_lookup_res r = {0};
	struct fs_obj d, o = {.fd = -1};
	r.status = fs_resolve(ex, &a.dir, &d);
	if (r.status == RRR_NFS3_OK) {
		r.status = fs_lookup(ex, &d, a.name, &o);
		if (r.status == RRR_NFS3_OK) {
			fs_fh_make(ex, &o, &r.fh);
			r.obj_attr.present = true;
			fs_fattr(ex, &o.st, &r.obj_attr.attr);
		}
		fs_post_op(ex, d.fd, &r.dir_attr);
	}
	fs_obj_close(&o);
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_lookup_res(res, &r));
}

static int p_access(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_ACCESS);
	struct rrr_nfs3_access_args a;
	if (rrr_nfs3_xdr_access_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_access_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		r.access = fs_access(ex, &o, a.access);
		if (ex->read_only)
			r.access &= ~(RRR_NFS3_ACCESS_MODIFY | RRR_NFS3_ACCESS_EXTEND |
				      RRR_NFS3_ACCESS_DELETE);
		r.attr.present = true;
		fs_fattr(ex, &o.st, &r.attr.attr);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_access_res(res, &r));
}

static int p_readlink(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_READLINK);
	struct rrr_nfs3_fh_args a;
	if (rrr_nfs3_xdr_fh_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_readlink_res *r = rrr_svc_req_alloc(req, sizeof(*r));
	if (!r)
		return RRR_SVC_SYSTEM_ERR;
	memset(r, 0, sizeof(*r));
	struct fs_obj o;
	r->status = fs_resolve(ex, &a.fh, &o);
	if (r->status == RRR_NFS3_OK) {
		if (!S_ISLNK(o.st.st_mode)) {
			r->status = RRR_NFS3ERR_INVAL;
		} else {
			ssize_t n = readlinkat(o.fd, "", r->path, RRR_NFS3_MAXPATHLEN);
			if (n < 0)
				r->status = fs_errno_to_stat(errno);
			else
				r->path[n] = '\0';
		}
		r->attr.present = true;
		fs_fattr(ex, &o.st, &r->attr.attr);
	}
	fs_obj_close(&o);
	/* r->path lives until the reply is sent (DDP may RDMA-Write it). */
	return finish(rrr_nfs3_xdr_readlink_res(res, r));
}

/* ------------------------------------------------------------ READ, WRITE, COMMIT */
/*
 * READ through the descriptor cache (fdcache.c): pread() and one fstat()
 * for the EOF flag and the post-op attributes. Returns 0 with @r filled
 * (any status), 1 when the slow path must answer (no cached descriptor, or
 * the file lost its last link), or -1 when the buffer cannot be allocated.
 */
static int read_fast(struct rrr_svc_req *req, struct fs_export *ex,
		     const struct rrr_nfs3_read_args *a, uint32_t count, uint64_t who_,
		     struct rrr_nfs3_read_res *r, struct iovec *iov)
{
	uint64_t ino, gen;
	struct fs_fdh h;
	if (a->offset > INT64_MAX || fs_fh_parse(ex, &a->fh, &ino, &gen) != RRR_NFS3_OK ||
	    fs_fdc_get(&ex->fdc, ino, gen, who_, O_RDONLY, &h) < 0)
		return 1;
	void *buf = count ? rrr_svc_req_alloc(req, count) : NULL;
	if (count && !buf) {
		fs_fdc_put(&ex->fdc, &h);
		return -1;
	}
	ssize_t n = count ? pread(h.fd, buf, count, (off_t)a->offset) : 0;
	int err = n < 0 ? errno : 0;
	struct stat st;
	bool have_st = fstat(h.fd, &st) == 0;
	fs_fdc_put(&ex->fdc, &h);
	if (!have_st || st.st_nlink == 0) {
		/* Unlinked behind our back (or unknown): let the slow path decide. */
		fs_fdc_forget(&ex->fdc, ino);
		return 1;
	}
	r->attr.present = true;
	fs_fattr(ex, &st, &r->attr.attr);
	if (n < 0) {
		r->status = fs_errno_to_stat(err);
		return 0;
	}
	r->status = RRR_NFS3_OK;
	r->count = (uint32_t)n;
	r->eof = a->offset + (uint64_t)n >= (uint64_t)st.st_size;
	iov->iov_base = buf;
	iov->iov_len = (size_t)n;
	r->iov = iov;
	r->niov = n ? 1 : 0;
	r->data_len = (uint32_t)n;
	return 0;
}

/* READ's slow path, as the caller: full resolution, open, pread. */
struct read_ctx {
	struct rrr_svc_req *req;
	struct fs_export *ex;
	const struct rrr_nfs3_read_args *a;
	uint32_t count;
	struct rrr_nfs3_read_res *r;
	struct iovec *iov;
};

static void read_slow(void *p)
{
	struct read_ctx *x = p;
	struct fs_export *ex = x->ex;
	const struct rrr_nfs3_read_args *a = x->a;
	struct rrr_nfs3_read_res *r = x->r;
	uint32_t count = x->count;
	struct fs_obj o;
	r->status = fs_resolve(ex, &a->fh, &o);
	if (r->status == RRR_NFS3_OK) {
		int fd = -1;
		if (S_ISDIR(o.st.st_mode))
			r->status = RRR_NFS3ERR_ISDIR;
		else if (!S_ISREG(o.st.st_mode))
			r->status = RRR_NFS3ERR_INVAL;
		else if ((fd = fs_open_data(ex, &o, O_RDONLY)) < 0)
			r->status = fs_errno_to_stat(-fd);
		else if (a->offset > INT64_MAX)
			r->status = RRR_NFS3ERR_INVAL;
		if (fd >= 0)
			fs_fdc_offer(&ex->fdc, (uint64_t)o.st.st_ino, o.gen, who(), O_RDONLY, fd);
		if (r->status == RRR_NFS3_OK) {
			void *buf = count ? rrr_svc_req_alloc(x->req, count) : NULL;
			ssize_t n = 0;
			if (count && !buf)
				n = -1, errno = ENOMEM;
			else if (count)
				n = pread(fd, buf, count, (off_t)a->offset);
			if (n < 0) {
				r->status = fs_errno_to_stat(errno);
			} else {
				struct stat st;
				r->count = (uint32_t)n;
				r->eof = fstat(fd, &st) == 0 &&
					 a->offset + (uint64_t)n >= (uint64_t)st.st_size;
				x->iov->iov_base = buf;
				x->iov->iov_len = (size_t)n;
				r->iov = x->iov;
				r->niov = n ? 1 : 0;
				r->data_len = (uint32_t)n;
			}
		}
		fs_post_op(ex, fd >= 0 ? fd : o.fd, &r->attr);
		if (fd >= 0)
			close(fd);
	}
	fs_obj_close(&o);
}

/* On the worker: the descriptor cache first, else read_slow as the caller. */
static int p_read(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_READ);
	struct rrr_nfs3_read_args a;
	if (rrr_nfs3_xdr_read_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_read_res r = {0};
	struct iovec iov = {0};
	uint32_t count = a.count;
	uint32_t max = rrr_svc_req_max_payload(req);
	if (max == 0 || max > RRR_NFS3_MAX_DATA)
		max = RRR_NFS3_MAX_DATA;
	if (count > max)
		count = max;
	struct fs_cred c;
	fs_cred_of_call(ex, call_of(req), &c);
	int frc = read_fast(req, ex, &a, count, c.who, &r, &iov);
	if (frc <= 0)
		return frc < 0 ? RRR_SVC_SYSTEM_ERR : finish(rrr_nfs3_xdr_read_res(res, &r));
	struct read_ctx x = {req, ex, &a, count, &r, &iov};
	if (fs_as_caller(ex, &c, read_slow, &x) < 0)
		return RRR_SVC_SYSTEM_ERR;
	return finish(rrr_nfs3_xdr_read_res(res, &r));
}

static int write_fast(struct fs_export *ex, const struct rrr_nfs3_write_args *a,
		      uint32_t count, uint64_t who_, struct rrr_nfs3_write_res *r)
{
	uint64_t ino, gen;
	struct fs_fdh h, d = {.fd = -1, .e = NULL};
	struct stat st;
	if (ex->read_only || a->offset > INT64_MAX - (uint64_t)count ||
	    fs_fh_parse(ex, &a->fh, &ino, &gen) != RRR_NFS3_OK ||
	    fs_fdc_get(&ex->fdc, ino, gen, who_, O_WRONLY, &h) < 0)
		return 1;
	if (fstat(h.fd, &st) < 0 || st.st_nlink == 0 || !S_ISREG(st.st_mode)) {
		fs_fdc_put(&ex->fdc, &h);
		fs_fdc_forget(&ex->fdc, ino);
		return 1;
	}
	if (fs_write_direct_eligible(ex, a, count) && fs_write_new_data(h.fd, a->offset, count, st.st_size) &&
	    fs_fdc_get(&ex->fdc, ino, gen, who_, O_WRONLY | O_DIRECT, &d) < 0) {
		fs_fdc_put(&ex->fdc, &h);
		return 1;
	}
	fs_wcc_pre(&st, &r->wcc);
	r->status = RRR_NFS3_OK;
	fs_write_data(ex, h.fd, d.fd, a, count, r);
	fs_post_op(ex, h.fd, &r->wcc.after);
	fs_fdc_put(&ex->fdc, &d);
	fs_fdc_put(&ex->fdc, &h);
	return 0;
}

/* WRITE's slow path, as the caller. */
struct write_ctx {
	struct fs_export *ex;
	const struct rrr_nfs3_write_args *a;
	uint32_t count;
	struct rrr_nfs3_write_res *r;
};

static void write_slow(void *p)
{
	struct write_ctx *x = p;
	struct fs_export *ex = x->ex;
	const struct rrr_nfs3_write_args *a = x->a;
	struct rrr_nfs3_write_res *r = x->r;
	uint32_t count = x->count;
	struct fs_obj o;
	r->status = fs_resolve(ex, &a->fh, &o);
	if (r->status == RRR_NFS3_OK) {
		fs_wcc_pre(&o.st, &r->wcc);
		int fd = -1;
		if (ex->read_only)
			r->status = RRR_NFS3ERR_ROFS;
		else if (S_ISDIR(o.st.st_mode))
			r->status = RRR_NFS3ERR_ISDIR;
		else if (!S_ISREG(o.st.st_mode) || a->offset > INT64_MAX - (uint64_t)count)
			r->status = RRR_NFS3ERR_INVAL;
		else if ((fd = fs_open_data(ex, &o, O_WRONLY)) < 0)
			r->status = fs_errno_to_stat(-fd);
		if (r->status == RRR_NFS3_OK) {
			int dfd = fs_write_direct_eligible(ex, a, count) &&
					  fs_write_new_data(fd, a->offset, count, o.st.st_size)
				      ? fs_write_open_direct(ex, &o)
				      : -1;
			fs_fdc_offer(&ex->fdc, (uint64_t)o.st.st_ino, o.gen, who(), O_WRONLY, fd);
			if (dfd >= 0)
				fs_fdc_offer(&ex->fdc, (uint64_t)o.st.st_ino, o.gen, who(),
					     O_WRONLY | O_DIRECT, dfd);
			fs_write_data(ex, fd, dfd, a, count, r);
			if (dfd >= 0)
				close(dfd);
		}
		fs_post_op(ex, fd >= 0 ? fd : o.fd, &r->wcc.after);
		if (fd >= 0)
			close(fd);
	}
	fs_obj_close(&o);
}

/* On the worker: the descriptor cache first, else write_slow as the caller. */
static int p_write(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_WRITE);
	struct rrr_nfs3_write_args *a = rrr_svc_req_alloc(req, sizeof(*a));
	if (!a)
		return RRR_SVC_SYSTEM_ERR;
	if (rrr_nfs3_xdr_write_args(args, a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_write_res r = {0};
	uint32_t count = a->count < a->data_len ? a->count : a->data_len;
	struct fs_cred c;
	fs_cred_of_call(ex, call_of(req), &c);
	if (write_fast(ex, a, count, c.who, &r) == 0)
		return finish(rrr_nfs3_xdr_write_res(res, &r));
	struct write_ctx x = {ex, a, count, &r};
	if (fs_as_caller(ex, &c, write_slow, &x) < 0)
		return RRR_SVC_SYSTEM_ERR;
	return finish(rrr_nfs3_xdr_write_res(res, &r));
}

static int p_commit(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_COMMIT);
	struct rrr_nfs3_commit_args a;
	if (rrr_nfs3_xdr_commit_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_commit_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		fs_wcc_pre(&o.st, &r.wcc);
		/* fsync is no access: any caller with the handle may COMMIT */
		fs_priv_begin();
		int fd = S_ISREG(o.st.st_mode) ? fs_reopen(&o, O_RDONLY) : -EINVAL;
		fs_priv_end();
		if (fd < 0)
			r.status = fs_errno_to_stat(-fd);
		else if (fsync(fd) < 0)
			r.status = fs_errno_to_stat(errno);
		memcpy(r.verf, ex->write_verf, 8);
		fs_post_op(ex, fd >= 0 ? fd : o.fd, &r.wcc.after);
		if (fd >= 0)
			close(fd);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_commit_res(res, &r));
}

/* ------------------------------------------------------------ creation */
/* Resolve the directory of a diropargs and check the name. */
static uint32_t dir_begin(struct fs_export *ex, const struct rrr_nfs3_diropargs *w,
			  struct fs_obj *d, struct rrr_nfs3_wcc_data *wcc)
{
	uint32_t st = fs_resolve(ex, &w->dir, d);
	if (st)
		return st;
	fs_wcc_pre(&d->st, wcc);
	if (!S_ISDIR(d->st.st_mode))
		return RRR_NFS3ERR_NOTDIR;
	if (ex->read_only)
		return RRR_NFS3ERR_ROFS;
	return fs_check_name(w->name);
}

/* Fill a create-style result for @name just made in @d. */
static void created(struct fs_export *ex, struct fs_obj *d, const char *name,
		    struct rrr_nfs3_create_res *r)
{
	struct fs_obj o;
	if (fs_lookup(ex, d, name, &o) == RRR_NFS3_OK) {
		r->fh_present = true;
		fs_fh_make(ex, &o, &r->fh);
		r->attr.present = true;
		fs_fattr(ex, &o.st, &r->attr.attr);
	}
	fs_obj_close(&o);
}

/* The allowed permission bits of a new object: all of them as the caller
 * (the kernel clears what the caller may not set); else the object will be
 * the server account's, and its set-ID bits are for a caller that may set
 * them on that account's files (root after squash, or that account). */
static mode_t allowed_bits(const struct fs_export *ex)
{
	return ex->as_caller || fs_caller_may_setid(geteuid()) ? 07777u : 01777u;
}

/* Give the object @name just made in @d (of type @type) exactly @mode: the
 * process umask (never changed: it is the process's, not the request's)
 * may have taken bits off. Through an O_PATH descriptor opened without
 * following a symlink and checked to be that type, so a name swapped in
 * meanwhile is left alone; as the caller, so the kernel decides (a set-gid
 * bit the caller may not keep is dropped again); a directory keeps the
 * set-gid bit it inherited. Best effort: the object exists either way. */
static void exact_mode(int dfd, const char *name, mode_t type, mode_t mode)
{
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return;
	}
	/* a directory keeps the set-gid bit it inherited from a set-gid parent */
	if (type == S_IFDIR)
		mode |= st.st_mode & S_ISGID;
	if ((st.st_mode & S_IFMT) == type && (st.st_mode & 07777) != mode) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		(void)chmod(proc, mode);
	}
	close(fd);
}

/* EXCLUSIVE create verifier as stored in atime and mtime seconds. */
static void verf_times(const uint8_t v[8], struct timespec ts[2])
{
	uint32_t v0 = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
	uint32_t v1 = (uint32_t)v[4] << 24 | (uint32_t)v[5] << 16 | (uint32_t)v[6] << 8 | v[7];
	ts[0] = (struct timespec){.tv_sec = (time_t)(v0 & 0x7fffffffu)};
	ts[1] = (struct timespec){.tv_sec = (time_t)(v1 & 0x7fffffffu)};
}

static uint32_t create_file(struct fs_export *ex, struct fs_obj *d,
			    const struct rrr_nfs3_create_args *a)
{
	const char *name = a->where.name;
	mode_t mode = a->mode != RRR_NFS3_EXCLUSIVE && a->attr.set_mode
			      ? a->attr.mode & allowed_bits(ex)
			      : 0644;
	int fd = openat(d->fd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd >= 0) {
		uint32_t st = RRR_NFS3_OK;
		struct stat fst;
		/* the client applied its umask already; the server's must not */
		if (fstat(fd, &fst) == 0 && (fst.st_mode & 07777) != mode)
			(void)fchmod(fd, mode);
		if (a->mode == RRR_NFS3_EXCLUSIVE) {
			struct timespec ts[2];
			verf_times(a->verf, ts);
			if (futimens(fd, ts) < 0)
				st = fs_errno_to_stat(errno);
		} else if (a->attr.set_size && a->attr.size &&
			   ftruncate(fd, (off_t)(a->attr.size > INT64_MAX ? INT64_MAX
									 : a->attr.size)) < 0) {
			st = fs_errno_to_stat(errno);
		}
		close(fd);
		return st;
	}
	if (errno != EEXIST || a->mode == RRR_NFS3_GUARDED)
		return fs_errno_to_stat(errno);
	struct fs_obj o;
	uint32_t st = fs_lookup(ex, d, name, &o);
	if (st != RRR_NFS3_OK)
		return st == RRR_NFS3ERR_NOENT ? RRR_NFS3ERR_EXIST : st;
	if (!S_ISREG(o.st.st_mode)) {
		st = RRR_NFS3ERR_EXIST;
	} else if (a->mode == RRR_NFS3_EXCLUSIVE) {
		/* a re-sent EXCLUSIVE create: the same verifier is success */
		struct timespec ts[2];
		verf_times(a->verf, ts);
		if (o.st.st_atim.tv_sec != ts[0].tv_sec || o.st.st_mtim.tv_sec != ts[1].tv_sec)
			st = RRR_NFS3ERR_EXIST;
	} else if (a->attr.set_size) {
		/* UNCHECKED over an existing file: only the size is applied */
		struct rrr_nfs3_sattr sz = {.set_size = true, .size = a->attr.size};
		st = fs_apply_sattr(ex, &o, &sz);
		fs_fdc_forget(&ex->fdc, (uint64_t)o.st.st_ino);
	}
	fs_obj_close(&o);
	return st;
}

static int p_create(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_CREATE);
	struct rrr_nfs3_create_args a;
	if (rrr_nfs3_xdr_create_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_create_res r = {0};
	struct fs_obj d;
	r.status = dir_begin(ex, &a.where, &d, &r.dir_wcc);
	if (r.status == RRR_NFS3_OK) {
		if (a.mode > RRR_NFS3_EXCLUSIVE)
			r.status = RRR_NFS3ERR_INVAL;
		else
			r.status = create_file(ex, &d, &a);
		if (r.status == RRR_NFS3_OK)
			created(ex, &d, a.where.name, &r);
		fs_post_op(ex, d.fd, &r.dir_wcc.after);
	}
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_create_res(res, &r));
}

static int p_mkdir(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_MKDIR);
	struct rrr_nfs3_mkdir_args a;
	if (rrr_nfs3_xdr_mkdir_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_create_res r = {0};
	struct fs_obj d;
	r.status = dir_begin(ex, &a.where, &d, &r.dir_wcc);
	if (r.status == RRR_NFS3_OK) {
		mode_t mode = a.attr.set_mode ? a.attr.mode & allowed_bits(ex) : 0755;
		if (mkdirat(d.fd, a.where.name, mode) < 0) {
			r.status = fs_errno_to_stat(errno);
		} else {
			exact_mode(d.fd, a.where.name, S_IFDIR, mode);
			created(ex, &d, a.where.name, &r);
		}
		fs_post_op(ex, d.fd, &r.dir_wcc.after);
	}
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_create_res(res, &r));
}

static int p_symlink(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_SYMLINK);
	struct rrr_nfs3_symlink_args *a = rrr_svc_req_alloc(req, sizeof(*a));
	if (!a)
		return RRR_SVC_SYSTEM_ERR;
	if (rrr_nfs3_xdr_symlink_args(args, a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_create_res r = {0};
	struct fs_obj d;
	r.status = dir_begin(ex, &a->where, &d, &r.dir_wcc);
	if (r.status == RRR_NFS3_OK) {
		/* The target is stored verbatim; the server itself never follows it. */
		if (symlinkat(a->path, d.fd, a->where.name) < 0) {
			r.status = fs_errno_to_stat(errno);
		} else {
			created(ex, &d, a->where.name, &r);
		}
		fs_post_op(ex, d.fd, &r.dir_wcc.after);
	}
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_create_res(res, &r));
}

static int p_mknod(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_MKNOD);
	/* zeroed: the decoder fills attr and spec only for the types that carry them */
	struct rrr_nfs3_mknod_args a = {0};
	if (rrr_nfs3_xdr_mknod_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_create_res r = {0};
	struct fs_obj d;
	r.status = dir_begin(ex, &a.where, &d, &r.dir_wcc);
	if (r.status == RRR_NFS3_OK) {
		mode_t type = 0;
		dev_t dev = 0;
		switch (a.type) {
		case RRR_NF3FIFO: type = S_IFIFO; break;
		case RRR_NF3SOCK: type = S_IFSOCK; break;
		case RRR_NF3CHR: type = S_IFCHR; dev = makedev(a.spec_major, a.spec_minor); break;
		case RRR_NF3BLK: type = S_IFBLK; dev = makedev(a.spec_major, a.spec_minor); break;
		default: r.status = RRR_NFS3ERR_BADTYPE; break; /* REG, DIR, LNK: not MKNOD's */
		}
		if ((type == S_IFCHR || type == S_IFBLK) && !ex->as_caller && !fs_caller_root())
			r.status = RRR_NFS3ERR_PERM;
		mode_t mode = a.attr.set_mode ? a.attr.mode & allowed_bits(ex) : 0644;
		if (r.status == RRR_NFS3_OK) {
			if (mknodat(d.fd, a.where.name, type | (mode & 07777), dev) < 0) {
				r.status = fs_errno_to_stat(errno);
			} else {
				exact_mode(d.fd, a.where.name, type, mode & 07777);
				created(ex, &d, a.where.name, &r);
			}
		}
		fs_post_op(ex, d.fd, &r.dir_wcc.after);
	}
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_create_res(res, &r));
}

/* ------------------------------------------------------------ removal, rename, link */
static int do_remove(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res,
		     unsigned proc, int flags)
{
	struct fs_export *ex = begin(req, proc);
	struct rrr_nfs3_diropargs a;
	if (rrr_nfs3_xdr_diropargs(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_wcc_res r = {0};
	struct fs_obj d;
	r.status = dir_begin(ex, &a, &d, &r.wcc);
	if (r.status == RRR_NFS3_OK) {
		if (unlinkat(d.fd, a.name, flags) < 0)
			r.status = fs_errno_to_stat(errno == EISDIR && !flags ? EISDIR : errno);
		fs_fdc_clear(&ex->fdc); /* the cache must not outlive a name */
		fs_post_op(ex, d.fd, &r.wcc.after);
	}
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_wcc_res(res, &r));
}

static int p_remove(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return do_remove(req, args, res, RRR_NFS3_REMOVE, 0);
}

static int p_rmdir(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return do_remove(req, args, res, RRR_NFS3_RMDIR, AT_REMOVEDIR);
}

/* Whether @fh is a handle of another of our exports (RENAME and LINK
 * across exports are XDEV, as across file systems). */
static bool other_export(const struct fs_export *ex, const struct rrr_nfs3_fh *fh)
{
	struct fs_export *o = fs_exports_by_fh(fh);
	uint32_t id;
	return o != ex && fs_fh_export_id(fh, &id) == 0 && id == o->export_id;
}

static int p_rename(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_RENAME);
	struct rrr_nfs3_rename_args a;
	if (rrr_nfs3_xdr_rename_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_rename_res r = {0};
	struct fs_obj fd_ = {.fd = -1}, td = {.fd = -1};
	r.status = dir_begin(ex, &a.from, &fd_, &r.from_wcc);
	if (r.status == RRR_NFS3_OK && other_export(ex, &a.to.dir))
		r.status = RRR_NFS3ERR_XDEV;
	if (r.status == RRR_NFS3_OK)
		r.status = dir_begin(ex, &a.to, &td, &r.to_wcc);
	if (r.status == RRR_NFS3_OK) {
		struct stat st;
		bool known = fstatat(fd_.fd, a.from.name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		int rrc = renameat(fd_.fd, a.from.name, td.fd, a.to.name);
		fs_fdc_clear(&ex->fdc); /* moved or replaced: re-prove paths */
		if (rrc < 0)
			r.status = fs_errno_to_stat(errno);
		else if (known) /* one edge: what lies beneath a moved directory follows */
			fs_cache_put(ex, fs_ino_key(&st), fs_ino_key(&td.st), a.to.name,
				     true);
	}
	fs_post_op(ex, fd_.fd, &r.from_wcc.after);
	fs_post_op(ex, td.fd, &r.to_wcc.after);
	fs_obj_close(&fd_);
	fs_obj_close(&td);
	return finish(rrr_nfs3_xdr_rename_res(res, &r));
}

static int p_link(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_LINK);
	struct rrr_nfs3_link_args a;
	if (rrr_nfs3_xdr_link_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_link_res r = {0};
	struct fs_obj f = {.fd = -1}, d = {.fd = -1};
	r.status = fs_resolve(ex, &a.file, &f);
	if (r.status == RRR_NFS3_OK && other_export(ex, &a.link.dir))
		r.status = RRR_NFS3ERR_XDEV;
	if (r.status == RRR_NFS3_OK)
		r.status = dir_begin(ex, &a.link, &d, &r.dir_wcc);
	if (r.status == RRR_NFS3_OK && S_ISDIR(f.st.st_mode))
		r.status = RRR_NFS3ERR_ISDIR;
	if (r.status == RRR_NFS3_OK) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f.fd);
		if (linkat(AT_FDCWD, proc, d.fd, a.link.name, AT_SYMLINK_FOLLOW) < 0)
			r.status = fs_errno_to_stat(errno);
		else
			fs_cache_put(ex, fs_ino_key(&f.st), fs_ino_key(&d.st), a.link.name,
				     false);
	}
	fs_post_op(ex, f.fd, &r.attr);
	fs_post_op(ex, d.fd, &r.dir_wcc.after);
	fs_obj_close(&f);
	fs_obj_close(&d);
	return finish(rrr_nfs3_xdr_link_res(res, &r));
}

/* ------------------------------------------------------------ READDIR(PLUS) */
/*
 * Cookies are the directory stream positions (telldir) after each entry, so
 * a later call resumes with seekdir(). The cookie verifier is always zero:
 * positions stay meaningful while the directory changes on the file
 * systems this sample targets. "." and ".." are not listed.
 */
static int do_readdir(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res,
		      bool plus)
{
	struct fs_export *ex = begin(req, plus ? RRR_NFS3_READDIRPLUS : RRR_NFS3_READDIR);
	struct rrr_nfs3_readdir_args a;
	if ((plus ? rrr_nfs3_xdr_readdirplus_args(args, &a) : rrr_nfs3_xdr_readdir_args(args, &a)) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_readdir_res r = {.plus = plus};
	struct fs_obj d;
	r.status = fs_resolve(ex, &a.dir, &d);
	DIR *dir = NULL;
	if (r.status == RRR_NFS3_OK && !S_ISDIR(d.st.st_mode))
		r.status = RRR_NFS3ERR_NOTDIR;
	if (r.status == RRR_NFS3_OK) {
		int dfd = fs_reopen(&d, O_RDONLY | O_DIRECTORY);
		dir = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!dir) {
			r.status = fs_errno_to_stat(dfd < 0 ? -dfd : errno);
			if (dfd >= 0)
				close(dfd);
		}
	}
	/* Budget: the client's maxcount, what the reply stream can hold. */
	size_t room = rrr_xdr_remaining(res);
	uint32_t maxcount = a.maxcount;
	if (maxcount > room)
		maxcount = (uint32_t)(room > UINT32_MAX ? UINT32_MAX : room);
	if (r.status == RRR_NFS3_OK && maxcount < DIR_OVERHEAD + 64)
		r.status = RRR_NFS3ERR_TOOSMALL;
	if (r.status == RRR_NFS3_OK) {
		uint32_t cap = (maxcount - DIR_OVERHEAD) / 24 + 1;
		if (cap > RRR_NFS3_MAX_DIRENTS)
			cap = RRR_NFS3_MAX_DIRENTS;
		r.entries = calloc(cap, sizeof(*r.entries));
		if (!r.entries)
			r.status = RRR_NFS3ERR_JUKEBOX;
		if (a.cookie)
			seekdir(dir, (long)a.cookie);
		uint32_t used = DIR_OVERHEAD, dused = 0;
		r.eof = true;
		while (r.status == RRR_NFS3_OK) {
			errno = 0;
			struct dirent *de = readdir(dir);
			if (!de) {
				if (errno)
					r.status = fs_errno_to_stat(errno);
				break;
			}
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			struct rrr_nfs3_dirent *e = &r.entries[r.n];
			memset(e, 0, sizeof(*e));
			e->fileid = de->d_ino;
			snprintf(e->name, sizeof(e->name), "%s", de->d_name);
			e->cookie = (uint64_t)telldir(dir);
			if (plus) {
				struct fs_obj o;
				if (fs_lookup(ex, &d, de->d_name, &o) == RRR_NFS3_OK) {
					e->attr.present = true;
					fs_fattr(ex, &o.st, &e->attr.attr);
					e->fh_present = true;
					fs_fh_make(ex, &o, &e->fh);
				}
				fs_obj_close(&o);
			}
			uint32_t sz = rrr_nfs3_dirent_size(e, plus);
			uint32_t dsz = 8 + 4 + RRR_XDR_PAD((uint32_t)strlen(e->name)) + 8;
			if (used + sz > maxcount || (plus && dused + dsz > a.dircount && r.n) ||
			    r.n + 1 >= cap) {
				r.eof = false;
				break;
			}
			used += sz;
			dused += dsz;
			r.n++;
		}
		if (r.status == RRR_NFS3_OK && r.n == 0 && !r.eof)
			r.status = RRR_NFS3ERR_TOOSMALL;
	}
	if (dir)
		closedir(dir);
	if (d.fd >= 0)
		fs_post_op(ex, d.fd, &r.dir_attr);
	fs_obj_close(&d);
	int rc = rrr_nfs3_xdr_readdir_res(res, &r);
	free(r.entries);
	return finish(rc);
}

static int p_readdir(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return do_readdir(req, args, res, false);
}

static int p_readdirplus(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return do_readdir(req, args, res, true);
}

/* ------------------------------------------------------------ file system info */
static int p_fsstat(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_FSSTAT);
	struct rrr_nfs3_fh_args a;
	if (rrr_nfs3_xdr_fh_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_fsstat_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		struct statvfs sv;
		if (fstatvfs(o.fd, &sv) < 0) {
			r.status = fs_errno_to_stat(errno);
		} else {
			r.tbytes = (uint64_t)sv.f_blocks * sv.f_frsize;
			r.fbytes = (uint64_t)sv.f_bfree * sv.f_frsize;
			r.abytes = (uint64_t)sv.f_bavail * sv.f_frsize;
			r.tfiles = sv.f_files;
			r.ffiles = sv.f_ffree;
			r.afiles = sv.f_favail;
		}
		r.attr.present = true;
		fs_fattr(ex, &o.st, &r.attr.attr);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_fsstat_res(res, &r));
}

static int p_fsinfo(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_FSINFO);
	struct rrr_nfs3_fh_args a;
	if (rrr_nfs3_xdr_fh_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_fsinfo_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		r.rtmax = r.rtpref = r.wtmax = r.wtpref = RRR_NFS3_MAX_DATA;
		r.rtmult = r.wtmult = 4096;
		r.dtpref = 64 * 1024;
		r.maxfilesize = INT64_MAX;
		r.time_delta.nsec = 1;
		r.properties = RRR_NFS3_FSF_LINK | RRR_NFS3_FSF_SYMLINK |
			       RRR_NFS3_FSF_HOMOGENEOUS | RRR_NFS3_FSF_CANSETTIME;
		r.attr.present = true;
		fs_fattr(ex, &o.st, &r.attr.attr);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_fsinfo_res(res, &r));
}

static int p_pathconf(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct fs_export *ex = begin(req, RRR_NFS3_PATHCONF);
	struct rrr_nfs3_fh_args a;
	if (rrr_nfs3_xdr_fh_args(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct rrr_nfs3_pathconf_res r = {0};
	struct fs_obj o;
	r.status = fs_resolve(ex, &a.fh, &o);
	if (r.status == RRR_NFS3_OK) {
		r.linkmax = 32000;
		r.name_max = RRR_NFS3_MAXNAMLEN;
		r.no_trunc = true;
		r.chown_restricted = true;
		r.case_preserving = true;
		r.attr.present = true;
		fs_fattr(ex, &o.st, &r.attr.attr);
	}
	fs_obj_close(&o);
	return finish(rrr_nfs3_xdr_pathconf_res(res, &r));
}

/* Every procedure runs as its caller on the worker's agent thread (cred.c);
 * READ and WRITE try the descriptor cache on the worker first. */
#define AS_CALLER(p)                                                                       \
	static int w_##p(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res) \
	{                                                                                  \
		return as_caller(p_##p, req, args, res);                                   \
	}
AS_CALLER(null)
AS_CALLER(getattr)
AS_CALLER(setattr)
AS_CALLER(lookup)
AS_CALLER(access)
AS_CALLER(readlink)
AS_CALLER(create)
AS_CALLER(mkdir)
AS_CALLER(symlink)
AS_CALLER(mknod)
AS_CALLER(remove)
AS_CALLER(rmdir)
AS_CALLER(rename)
AS_CALLER(link)
AS_CALLER(readdir)
AS_CALLER(readdirplus)
AS_CALLER(fsstat)
AS_CALLER(fsinfo)
AS_CALLER(pathconf)
AS_CALLER(commit)

const struct rrr_svc_proc fs_nfs3_procs[RRR_NFS3_NPROCS] = {
	[RRR_NFS3_NULL] = {"NULL", w_null},
	[RRR_NFS3_GETATTR] = {"GETATTR", w_getattr},
	[RRR_NFS3_SETATTR] = {"SETATTR", w_setattr},
	[RRR_NFS3_LOOKUP] = {"LOOKUP", w_lookup},
	[RRR_NFS3_ACCESS] = {"ACCESS", w_access},
	[RRR_NFS3_READLINK] = {"READLINK", w_readlink},
	[RRR_NFS3_READ] = {"READ", p_read},
	[RRR_NFS3_WRITE] = {"WRITE", p_write},
	[RRR_NFS3_CREATE] = {"CREATE", w_create},
	[RRR_NFS3_MKDIR] = {"MKDIR", w_mkdir},
	[RRR_NFS3_SYMLINK] = {"SYMLINK", w_symlink},
	[RRR_NFS3_MKNOD] = {"MKNOD", w_mknod},
	[RRR_NFS3_REMOVE] = {"REMOVE", w_remove},
	[RRR_NFS3_RMDIR] = {"RMDIR", w_rmdir},
	[RRR_NFS3_RENAME] = {"RENAME", w_rename},
	[RRR_NFS3_LINK] = {"LINK", w_link},
	[RRR_NFS3_READDIR] = {"READDIR", w_readdir},
	[RRR_NFS3_READDIRPLUS] = {"READDIRPLUS", w_readdirplus},
	[RRR_NFS3_FSSTAT] = {"FSSTAT", w_fsstat},
	[RRR_NFS3_FSINFO] = {"FSINFO", w_fsinfo},
	[RRR_NFS3_PATHCONF] = {"PATHCONF", w_pathconf},
	[RRR_NFS3_COMMIT] = {"COMMIT", w_commit},
};
