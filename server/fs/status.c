/* SPDX-License-Identifier: MIT */
/*
 * server/fs/status.c - the nfsstat3 of an errno (RFC 1813 2.6), for every
 * procedure of rrr-server: the handle layer (fh.c), attributes (attr.c)
 * and the procedures themselves.
 *
 * errno values map onto their nfsstat3 namesakes; ELOOP (a symlink where a
 * directory was needed) and EXDEV from a resolution that tried to leave
 * the export become NFS3ERR_ACCES (the client asked for something it may
 * not have); EAGAIN is NFS3ERR_JUKEBOX (try again later); anything unknown
 * is NFS3ERR_IO, never SERVERFAULT, which Linux clients treat as fatal.
 * A pure function: nothing to recover.
 */
#include <errno.h>
#include <stdint.h>

#include <rrr/nfs3_xdr.h>

#include "server/fs/fs.h"

uint32_t fs_errno_to_stat(int err)
{
	switch (err) {
	case 0: return RRR_NFS3_OK;
	case EPERM: return RRR_NFS3ERR_PERM;
	case ENOENT: return RRR_NFS3ERR_NOENT;
	case ENXIO: return RRR_NFS3ERR_NXIO;
	case EACCES: return RRR_NFS3ERR_ACCES;
	case EEXIST: return RRR_NFS3ERR_EXIST;
	case ENODEV: return RRR_NFS3ERR_NODEV;
	case ENOTDIR: return RRR_NFS3ERR_NOTDIR;
	case EISDIR: return RRR_NFS3ERR_ISDIR;
	case EINVAL: return RRR_NFS3ERR_INVAL;
	case EFBIG: return RRR_NFS3ERR_FBIG;
	case ENOSPC: return RRR_NFS3ERR_NOSPC;
	case EROFS: return RRR_NFS3ERR_ROFS;
	case EMLINK: return RRR_NFS3ERR_MLINK;
	case ENAMETOOLONG: return RRR_NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY: return RRR_NFS3ERR_NOTEMPTY;
	case EDQUOT: return RRR_NFS3ERR_DQUOT;
	case ESTALE: return RRR_NFS3ERR_STALE;
	case EOPNOTSUPP: return RRR_NFS3ERR_NOTSUPP;
	case EAGAIN: return RRR_NFS3ERR_JUKEBOX;
	case ELOOP:
	case EXDEV: return RRR_NFS3ERR_ACCES;
	default: return RRR_NFS3ERR_IO;
	}
}
