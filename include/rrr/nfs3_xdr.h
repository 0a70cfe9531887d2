/* SPDX-License-Identifier: MIT */
/*
 * rrr/nfs3_xdr.h - NFS version 3 (RFC 1813) and MOUNT version 3: the types
 * and their XDR codecs (xdr/nfs3.c, xdr/mount3.c). No transport here: the
 * codecs work on any struct rrr_xdr stream, for a client (nfs3_client.h)
 * or a server (rrr-server) alike.
 *
 * Every argument and result type has ONE function, rrr_nfs3_xdr_<type>(xdr,
 * obj), that encodes when the stream was initialised with RRR_XDR_ENCODE
 * and decodes with RRR_XDR_DECODE (the classic SunRPC style: one
 * description, two directions, so the two can never disagree). Limits
 * enforced on decode: file handles <= 64 bytes, names <= 255 bytes, paths
 * <= 1024 bytes, READ/WRITE data <= 1 MiB, directory listings <=
 * RRR_NFS3_MAX_DIRENTS entries, MOUNT lists <= RRR_MNT_MAX_LIST entries.
 * Names and paths are copied and NUL-terminated; embedded NUL bytes are
 * rejected (-EINVAL). DDP-eligible items (READ and WRITE data, READLINK and
 * SYMLINK paths, RFC 8267) go through rrr_xdr_encode_payload()/
 * rrr_xdr_decode_payload(): on decode their iovecs describe where the
 * transport put the bytes (they are NOT copied). Variable lists (directory
 * entries, mount/export lists) are arrays owned by the caller: on decode
 * @entries must point to @cap entries.
 *
 * Contract of every rrr_nfs3_xdr_* and rrr_mnt_xdr_* codec: returns 0 or
 * the errors of rrr/xdr.h (-EMSGSIZE: the stream is too short; -EBADMSG: a
 * value out of its range, e.g. a bad discriminant; -E2BIG: a count or
 * length above the limits above; -EINVAL: an embedded NUL). On a decode
 * error the object may be partly filled and must not be used. Pure
 * functions of the stream and the object: no locking, no allocation, never
 * block; the caller owns both and may use distinct streams from distinct
 * threads.
 */
#ifndef RRR_NFS3_XDR_H
#define RRR_NFS3_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/oncrpc.h>
#include <rrr/xdr.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define RRR_NFS3_PROGRAM 100003u
#define RRR_NFS3_VERSION 3u
#define RRR_MNT_PROGRAM 100005u
#define RRR_MNT_VERSION 3u

#define RRR_NFS3_FHSIZE 64u
#define RRR_NFS3_MAXNAMLEN 255u
#define RRR_NFS3_MAXPATHLEN 1024u
#define RRR_NFS3_MAX_DATA (1u << 20)    /* READ/WRITE payload */
#define RRR_NFS3_MAX_DIRENTS 4096u
#define RRR_MNT_MAX_LIST 1024u
#define RRR_MNT_MAX_FLAVORS 16u

enum rrr_nfs3_proc {
	RRR_NFS3_NULL = 0, RRR_NFS3_GETATTR = 1, RRR_NFS3_SETATTR = 2, RRR_NFS3_LOOKUP = 3,
	RRR_NFS3_ACCESS = 4, RRR_NFS3_READLINK = 5, RRR_NFS3_READ = 6, RRR_NFS3_WRITE = 7,
	RRR_NFS3_CREATE = 8, RRR_NFS3_MKDIR = 9, RRR_NFS3_SYMLINK = 10, RRR_NFS3_MKNOD = 11,
	RRR_NFS3_REMOVE = 12, RRR_NFS3_RMDIR = 13, RRR_NFS3_RENAME = 14, RRR_NFS3_LINK = 15,
	RRR_NFS3_READDIR = 16, RRR_NFS3_READDIRPLUS = 17, RRR_NFS3_FSSTAT = 18,
	RRR_NFS3_FSINFO = 19, RRR_NFS3_PATHCONF = 20, RRR_NFS3_COMMIT = 21,
	RRR_NFS3_NPROCS = 22,
};

enum rrr_mnt_proc {
	RRR_MNT_NULL = 0, RRR_MNT_MNT = 1, RRR_MNT_DUMP = 2, RRR_MNT_UMNT = 3,
	RRR_MNT_UMNTALL = 4, RRR_MNT_EXPORT = 5, RRR_MNT_NPROCS = 6,
};

enum rrr_nfsstat3 {
	RRR_NFS3_OK = 0, RRR_NFS3ERR_PERM = 1, RRR_NFS3ERR_NOENT = 2, RRR_NFS3ERR_IO = 5,
	RRR_NFS3ERR_NXIO = 6, RRR_NFS3ERR_ACCES = 13, RRR_NFS3ERR_EXIST = 17,
	RRR_NFS3ERR_XDEV = 18, RRR_NFS3ERR_NODEV = 19, RRR_NFS3ERR_NOTDIR = 20,
	RRR_NFS3ERR_ISDIR = 21, RRR_NFS3ERR_INVAL = 22, RRR_NFS3ERR_FBIG = 27,
	RRR_NFS3ERR_NOSPC = 28, RRR_NFS3ERR_ROFS = 30, RRR_NFS3ERR_MLINK = 31,
	RRR_NFS3ERR_NAMETOOLONG = 63, RRR_NFS3ERR_NOTEMPTY = 66, RRR_NFS3ERR_DQUOT = 69,
	RRR_NFS3ERR_STALE = 70, RRR_NFS3ERR_REMOTE = 71, RRR_NFS3ERR_BADHANDLE = 10001,
	RRR_NFS3ERR_NOT_SYNC = 10002, RRR_NFS3ERR_BAD_COOKIE = 10003,
	RRR_NFS3ERR_NOTSUPP = 10004, RRR_NFS3ERR_TOOSMALL = 10005,
	RRR_NFS3ERR_SERVERFAULT = 10006, RRR_NFS3ERR_BADTYPE = 10007,
	RRR_NFS3ERR_JUKEBOX = 10008,
};

enum rrr_mountstat3 {
	RRR_MNT3_OK = 0, RRR_MNT3ERR_PERM = 1, RRR_MNT3ERR_NOENT = 2, RRR_MNT3ERR_IO = 5,
	RRR_MNT3ERR_ACCES = 13, RRR_MNT3ERR_NOTDIR = 20, RRR_MNT3ERR_INVAL = 22,
	RRR_MNT3ERR_NAMETOOLONG = 63, RRR_MNT3ERR_NOTSUPP = 10004,
	RRR_MNT3ERR_SERVERFAULT = 10006,
};

enum rrr_nfs3_ftype {
	RRR_NF3REG = 1, RRR_NF3DIR = 2, RRR_NF3BLK = 3, RRR_NF3CHR = 4, RRR_NF3LNK = 5,
	RRR_NF3SOCK = 6, RRR_NF3FIFO = 7,
};

enum rrr_nfs3_stable { RRR_NFS3_UNSTABLE = 0, RRR_NFS3_DATA_SYNC = 1, RRR_NFS3_FILE_SYNC = 2 };
enum rrr_nfs3_createmode { RRR_NFS3_UNCHECKED = 0, RRR_NFS3_GUARDED = 1, RRR_NFS3_EXCLUSIVE = 2 };
enum rrr_nfs3_time_how {
	RRR_NFS3_DONT_CHANGE = 0, RRR_NFS3_SET_TO_SERVER_TIME = 1, RRR_NFS3_SET_TO_CLIENT_TIME = 2,
};

#define RRR_NFS3_ACCESS_READ 0x01u
#define RRR_NFS3_ACCESS_LOOKUP 0x02u
#define RRR_NFS3_ACCESS_MODIFY 0x04u
#define RRR_NFS3_ACCESS_EXTEND 0x08u
#define RRR_NFS3_ACCESS_DELETE 0x10u
#define RRR_NFS3_ACCESS_EXECUTE 0x20u

#define RRR_NFS3_FSF_LINK 0x01u
#define RRR_NFS3_FSF_SYMLINK 0x02u
#define RRR_NFS3_FSF_HOMOGENEOUS 0x08u
#define RRR_NFS3_FSF_CANSETTIME 0x10u

/* --- basic types ----------------------------------------------------------- */
struct rrr_nfs3_fh {
	uint32_t len; /* 0..64 */
	uint8_t data[RRR_NFS3_FHSIZE];
};

struct rrr_nfs3_time {
	uint32_t sec, nsec;
};

struct rrr_nfs3_fattr {
	uint32_t type; /* rrr_nfs3_ftype */
	uint32_t mode, nlink, uid, gid;
	uint64_t size, used;
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid, fileid;
	struct rrr_nfs3_time atime, mtime, ctime;
};

struct rrr_nfs3_post_op_attr {
	bool present;
	struct rrr_nfs3_fattr attr;
};

struct rrr_nfs3_wcc_attr {
	uint64_t size;
	struct rrr_nfs3_time mtime, ctime;
};

struct rrr_nfs3_wcc_data {
	bool before_present;
	struct rrr_nfs3_wcc_attr before;
	struct rrr_nfs3_post_op_attr after;
};

struct rrr_nfs3_sattr {
	bool set_mode, set_uid, set_gid, set_size;
	uint32_t mode, uid, gid;
	uint64_t size;
	uint32_t atime_how, mtime_how; /* rrr_nfs3_time_how */
	struct rrr_nfs3_time atime, mtime;
};

struct rrr_nfs3_diropargs {
	struct rrr_nfs3_fh dir;
	char name[RRR_NFS3_MAXNAMLEN + 1];
};

/* --- arguments ------------------------------------------------------------- */
/* GETATTR, READLINK, FSSTAT, FSINFO, PATHCONF take a bare handle. */
struct rrr_nfs3_fh_args {
	struct rrr_nfs3_fh fh;
};

struct rrr_nfs3_setattr_args {
	struct rrr_nfs3_fh fh;
	struct rrr_nfs3_sattr attr;
	bool guard_check;
	struct rrr_nfs3_time guard_ctime;
};

struct rrr_nfs3_access_args {
	struct rrr_nfs3_fh fh;
	uint32_t access;
};

struct rrr_nfs3_read_args {
	struct rrr_nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

struct rrr_nfs3_write_args {
	struct rrr_nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
	uint32_t stable; /* rrr_nfs3_stable */
	/* data<>: encode takes @iov/@niov (sum == data_len); decode fills them */
	uint32_t data_len;
	const struct iovec *iov;
	unsigned niov;
	struct iovec dec_iov[RRR_XDR_PAYLOAD_MAX_IOV];
};

struct rrr_nfs3_create_args {
	struct rrr_nfs3_diropargs where;
	uint32_t mode; /* rrr_nfs3_createmode */
	struct rrr_nfs3_sattr attr;   /* UNCHECKED, GUARDED */
	uint8_t verf[8];              /* EXCLUSIVE */
};

struct rrr_nfs3_mkdir_args {
	struct rrr_nfs3_diropargs where;
	struct rrr_nfs3_sattr attr;
};

struct rrr_nfs3_symlink_args {
	struct rrr_nfs3_diropargs where;
	struct rrr_nfs3_sattr attr;
	char path[RRR_NFS3_MAXPATHLEN + 1]; /* DDP-eligible on the wire */
};

struct rrr_nfs3_mknod_args {
	struct rrr_nfs3_diropargs where;
	uint32_t type; /* rrr_nfs3_ftype */
	struct rrr_nfs3_sattr attr;   /* CHR, BLK, SOCK, FIFO */
	uint32_t spec_major, spec_minor; /* CHR, BLK */
};

struct rrr_nfs3_rename_args {
	struct rrr_nfs3_diropargs from, to;
};

struct rrr_nfs3_link_args {
	struct rrr_nfs3_fh file;
	struct rrr_nfs3_diropargs link;
};

struct rrr_nfs3_readdir_args {
	struct rrr_nfs3_fh dir;
	uint64_t cookie;
	uint8_t cookieverf[8];
	uint32_t dircount; /* READDIR: count; READDIRPLUS: dircount */
	uint32_t maxcount; /* READDIRPLUS only */
};

struct rrr_nfs3_commit_args {
	struct rrr_nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

/* --- results --------------------------------------------------------------- */
/* Results that carry only post_op_attr on failure share a layout prefix. */
struct rrr_nfs3_getattr_res {
	uint32_t status;
	struct rrr_nfs3_fattr attr; /* OK */
};

/* SETATTR, REMOVE, RMDIR */
struct rrr_nfs3_wcc_res {
	uint32_t status;
	struct rrr_nfs3_wcc_data wcc;
};

struct rrr_nfs3_lookup_res {
	uint32_t status;
	struct rrr_nfs3_fh fh;                 /* OK */
	struct rrr_nfs3_post_op_attr obj_attr; /* OK */
	struct rrr_nfs3_post_op_attr dir_attr; /* always */
};

struct rrr_nfs3_access_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	uint32_t access; /* OK */
};

struct rrr_nfs3_readlink_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	char path[RRR_NFS3_MAXPATHLEN + 1]; /* OK; DDP-eligible on the wire */
	/* decode: bytes of the path; when the transport placed them in the
	 * call's sink (no inline copy) @path is left empty and @path_len set */
	uint32_t path_len;
	bool path_in_sink;
};

struct rrr_nfs3_read_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	uint32_t count; /* OK */
	bool eof;       /* OK */
	/* data<>: encode takes iov/niov (sum == data_len); decode fills dec_iov */
	uint32_t data_len;
	const struct iovec *iov;
	unsigned niov;
	struct iovec dec_iov[RRR_XDR_PAYLOAD_MAX_IOV];
};

struct rrr_nfs3_write_res {
	uint32_t status;
	struct rrr_nfs3_wcc_data wcc;
	uint32_t count;     /* OK */
	uint32_t committed; /* OK */
	uint8_t verf[8];    /* OK */
};

/* CREATE, MKDIR, SYMLINK, MKNOD */
struct rrr_nfs3_create_res {
	uint32_t status;
	bool fh_present;                   /* OK */
	struct rrr_nfs3_fh fh;             /* OK */
	struct rrr_nfs3_post_op_attr attr; /* OK */
	struct rrr_nfs3_wcc_data dir_wcc;  /* always */
};

struct rrr_nfs3_rename_res {
	uint32_t status;
	struct rrr_nfs3_wcc_data from_wcc, to_wcc;
};

struct rrr_nfs3_link_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	struct rrr_nfs3_wcc_data dir_wcc;
};

/* One READDIR (plus == false) or READDIRPLUS entry. */
struct rrr_nfs3_dirent {
	uint64_t fileid;
	uint64_t cookie;
	char name[RRR_NFS3_MAXNAMLEN + 1];
	struct rrr_nfs3_post_op_attr attr; /* plus only */
	bool fh_present;                   /* plus only */
	struct rrr_nfs3_fh fh;             /* plus only */
};

struct rrr_nfs3_readdir_res {
	bool plus; /* set by the caller before encode/decode: READDIRPLUS? */
	uint32_t status;
	struct rrr_nfs3_post_op_attr dir_attr;
	uint8_t cookieverf[8]; /* OK */
	/* OK: encode writes @n entries; decode fills at most @cap (-E2BIG beyond) */
	struct rrr_nfs3_dirent *entries;
	uint32_t n, cap;
	bool eof;
};

struct rrr_nfs3_fsstat_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	uint64_t tbytes, fbytes, abytes, tfiles, ffiles, afiles;
	uint32_t invarsec;
};

struct rrr_nfs3_fsinfo_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	uint32_t rtmax, rtpref, rtmult, wtmax, wtpref, wtmult, dtpref;
	uint64_t maxfilesize;
	struct rrr_nfs3_time time_delta;
	uint32_t properties;
};

struct rrr_nfs3_pathconf_res {
	uint32_t status;
	struct rrr_nfs3_post_op_attr attr;
	uint32_t linkmax, name_max;
	bool no_trunc, chown_restricted, case_insensitive, case_preserving;
};

/* COMMIT */
struct rrr_nfs3_commit_res {
	uint32_t status;
	struct rrr_nfs3_wcc_data wcc;
	uint8_t verf[8]; /* OK */
};

/* --- MOUNT v3 -------------------------------------------------------------- */
struct rrr_mnt_dirpath {
	char path[RRR_NFS3_MAXPATHLEN + 1];
};

struct rrr_mnt_res {
	uint32_t status; /* rrr_mountstat3 */
	struct rrr_nfs3_fh fh;
	uint32_t nflavors;
	uint32_t flavors[RRR_MNT_MAX_FLAVORS];
};

struct rrr_mnt_entry {
	char host[RRR_NFS3_MAXNAMLEN + 1];
	char dir[RRR_NFS3_MAXPATHLEN + 1];
};

/* DUMP: mountlist. */
struct rrr_mnt_dump_res {
	struct rrr_mnt_entry *entries;
	uint32_t n, cap;
};

/* EXPORT: exports; each export lists its groups joined by ',' in @groups. */
struct rrr_mnt_export {
	char dir[RRR_NFS3_MAXPATHLEN + 1];
	char groups[RRR_NFS3_MAXNAMLEN + 1];
};

struct rrr_mnt_export_res {
	struct rrr_mnt_export *entries;
	uint32_t n, cap;
};

/* --- codecs (direction from the stream) ------------------------------------ */
/* Basic types. Every codec below: encode or decode (the stream's direction)
 * one object; 0 or -EMSGSIZE/-EBADMSG/-E2BIG/-EINVAL (the contract at the
 * top of this file). No locking, no allocation, never blocks. */
int rrr_nfs3_xdr_fh(struct rrr_xdr *xdr, struct rrr_nfs3_fh *fh);
int rrr_nfs3_xdr_fattr(struct rrr_xdr *xdr, struct rrr_nfs3_fattr *a);
int rrr_nfs3_xdr_post_op_attr(struct rrr_xdr *xdr, struct rrr_nfs3_post_op_attr *a);
int rrr_nfs3_xdr_wcc_data(struct rrr_xdr *xdr, struct rrr_nfs3_wcc_data *w);
int rrr_nfs3_xdr_sattr(struct rrr_xdr *xdr, struct rrr_nfs3_sattr *s);
int rrr_nfs3_xdr_diropargs(struct rrr_xdr *xdr, struct rrr_nfs3_diropargs *d);

/* Call arguments, one codec per procedure's argument type (a server decodes,
 * a client encodes). WRITE data and SYMLINK paths are DDP payload. */
int rrr_nfs3_xdr_fh_args(struct rrr_xdr *xdr, struct rrr_nfs3_fh_args *a);
int rrr_nfs3_xdr_setattr_args(struct rrr_xdr *xdr, struct rrr_nfs3_setattr_args *a);
int rrr_nfs3_xdr_access_args(struct rrr_xdr *xdr, struct rrr_nfs3_access_args *a);
int rrr_nfs3_xdr_read_args(struct rrr_xdr *xdr, struct rrr_nfs3_read_args *a);
int rrr_nfs3_xdr_write_args(struct rrr_xdr *xdr, struct rrr_nfs3_write_args *a);
int rrr_nfs3_xdr_create_args(struct rrr_xdr *xdr, struct rrr_nfs3_create_args *a);
int rrr_nfs3_xdr_mkdir_args(struct rrr_xdr *xdr, struct rrr_nfs3_mkdir_args *a);
int rrr_nfs3_xdr_symlink_args(struct rrr_xdr *xdr, struct rrr_nfs3_symlink_args *a);
int rrr_nfs3_xdr_mknod_args(struct rrr_xdr *xdr, struct rrr_nfs3_mknod_args *a);
int rrr_nfs3_xdr_rename_args(struct rrr_xdr *xdr, struct rrr_nfs3_rename_args *a);
int rrr_nfs3_xdr_link_args(struct rrr_xdr *xdr, struct rrr_nfs3_link_args *a);
int rrr_nfs3_xdr_readdir_args(struct rrr_xdr *xdr, struct rrr_nfs3_readdir_args *a);
int rrr_nfs3_xdr_readdirplus_args(struct rrr_xdr *xdr, struct rrr_nfs3_readdir_args *a);
int rrr_nfs3_xdr_commit_args(struct rrr_xdr *xdr, struct rrr_nfs3_commit_args *a);

/* Results, one codec per procedure's result type (a server encodes, a
 * client decodes; READ data and READLINK paths are DDP payload; READDIR
 * entries go to the caller's array of r->cap). */
int rrr_nfs3_xdr_getattr_res(struct rrr_xdr *xdr, struct rrr_nfs3_getattr_res *r);
int rrr_nfs3_xdr_wcc_res(struct rrr_xdr *xdr, struct rrr_nfs3_wcc_res *r);
int rrr_nfs3_xdr_lookup_res(struct rrr_xdr *xdr, struct rrr_nfs3_lookup_res *r);
int rrr_nfs3_xdr_access_res(struct rrr_xdr *xdr, struct rrr_nfs3_access_res *r);
int rrr_nfs3_xdr_readlink_res(struct rrr_xdr *xdr, struct rrr_nfs3_readlink_res *r);
int rrr_nfs3_xdr_read_res(struct rrr_xdr *xdr, struct rrr_nfs3_read_res *r);
int rrr_nfs3_xdr_write_res(struct rrr_xdr *xdr, struct rrr_nfs3_write_res *r);
int rrr_nfs3_xdr_create_res(struct rrr_xdr *xdr, struct rrr_nfs3_create_res *r);
int rrr_nfs3_xdr_rename_res(struct rrr_xdr *xdr, struct rrr_nfs3_rename_res *r);
int rrr_nfs3_xdr_link_res(struct rrr_xdr *xdr, struct rrr_nfs3_link_res *r);
int rrr_nfs3_xdr_readdir_res(struct rrr_xdr *xdr, struct rrr_nfs3_readdir_res *r);
int rrr_nfs3_xdr_fsstat_res(struct rrr_xdr *xdr, struct rrr_nfs3_fsstat_res *r);
int rrr_nfs3_xdr_fsinfo_res(struct rrr_xdr *xdr, struct rrr_nfs3_fsinfo_res *r);
int rrr_nfs3_xdr_pathconf_res(struct rrr_xdr *xdr, struct rrr_nfs3_pathconf_res *r);
int rrr_nfs3_xdr_commit_res(struct rrr_xdr *xdr, struct rrr_nfs3_commit_res *r);
/* Encoded size in bytes of one directory entry (for a server filling a
 * READDIR reply up to the client's count). Pure; never fails or blocks. */
uint32_t rrr_nfs3_dirent_size(const struct rrr_nfs3_dirent *e, bool plus);

/* MOUNT v3: the MNT/UMNT argument, the MNT result, the DUMP and EXPORT
 * lists (decoded into the caller's arrays, at most RRR_MNT_MAX_LIST
 * entries). Same contract as the NFS codecs. */
int rrr_mnt_xdr_dirpath(struct rrr_xdr *xdr, struct rrr_mnt_dirpath *d);
int rrr_mnt_xdr_mnt_res(struct rrr_xdr *xdr, struct rrr_mnt_res *r);
int rrr_mnt_xdr_dump_res(struct rrr_xdr *xdr, struct rrr_mnt_dump_res *r);
int rrr_mnt_xdr_export_res(struct rrr_xdr *xdr, struct rrr_mnt_export_res *r);

/* Human-readable name of an nfsstat3 ("NFS3ERR_NOENT"; "NFS3ERR_(unknown)"
 * for values RFC 1813 does not define): a static string, never NULL. Pure;
 * thread-safe; never blocks. */
const char *rrr_nfs3_strstat(uint32_t status);
/* The closest negative errno for an nfsstat3: 0 for NFS3_OK; the same
 * number for the statuses that are Linux errnos (NOENT -> -ENOENT, ...);
 * STALE -> -ESTALE, BADHANDLE -> -EBADF, NOTSUPP -> -EOPNOTSUPP,
 * SERVERFAULT -> -EREMOTEIO, JUKEBOX -> -EAGAIN, NOT_SYNC, BAD_COOKIE,
 * TOOSMALL and BADTYPE -> -EINVAL; -EIO for unknown values. The NFS client
 * returns exactly this for an NFS error. Pure; never blocks. */
int rrr_nfs3_stat_to_errno(uint32_t status);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_NFS3_XDR_H */
