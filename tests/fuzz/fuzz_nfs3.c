/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_nfs3.c - libFuzzer harness for the NFSv3 and MOUNT v3
 * decoders (xdr/nfs3.c, xdr/mount3.c). The first input byte picks a
 * decoder, the rest is the XDR stream. Whatever decodes must respect the
 * limits of rrr/nfs3_xdr.h, and must be canonical: encode(decode(x)) decoded
 * and encoded again gives the same bytes (pad bytes on the wire need not
 * be zero, so the input itself is not compared).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/nfs3_xdr.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		abort();
}

#define DIRCAP 64u
#define LISTCAP 16u

union obj {
	struct rrr_nfs3_fh_args fh;
	struct rrr_nfs3_setattr_args setattr;
	struct rrr_nfs3_access_args access;
	struct rrr_nfs3_diropargs dirop;
	struct rrr_nfs3_read_args read;
	struct rrr_nfs3_write_args write;
	struct rrr_nfs3_create_args create;
	struct rrr_nfs3_mkdir_args mkdir;
	struct rrr_nfs3_symlink_args symlink;
	struct rrr_nfs3_mknod_args mknod;
	struct rrr_nfs3_rename_args rename;
	struct rrr_nfs3_link_args link;
	struct rrr_nfs3_readdir_args readdir;
	struct rrr_nfs3_commit_args commit;
	struct rrr_nfs3_getattr_res getattr_res;
	struct rrr_nfs3_wcc_res wcc_res;
	struct rrr_nfs3_lookup_res lookup_res;
	struct rrr_nfs3_access_res access_res;
	struct rrr_nfs3_readlink_res readlink_res;
	struct rrr_nfs3_read_res read_res;
	struct rrr_nfs3_write_res write_res;
	struct rrr_nfs3_create_res create_res;
	struct rrr_nfs3_rename_res rename_res;
	struct rrr_nfs3_link_res link_res;
	struct rrr_nfs3_readdir_res readdir_res;
	struct rrr_nfs3_fsstat_res fsstat_res;
	struct rrr_nfs3_fsinfo_res fsinfo_res;
	struct rrr_nfs3_pathconf_res pathconf_res;
	struct rrr_nfs3_commit_res commit_res;
	struct rrr_mnt_dirpath dirpath;
	struct rrr_mnt_res mnt_res;
	struct rrr_mnt_dump_res dump_res;
	struct rrr_mnt_export_res export_res;
};

typedef int (*codec_fn)(struct rrr_xdr *, void *);
#define C(f) ((codec_fn)(void (*)(void))(f))

static const codec_fn codecs[] = {
	C(rrr_nfs3_xdr_fh_args),       C(rrr_nfs3_xdr_setattr_args),  C(rrr_nfs3_xdr_access_args),
	C(rrr_nfs3_xdr_diropargs),     C(rrr_nfs3_xdr_read_args),     C(rrr_nfs3_xdr_write_args),
	C(rrr_nfs3_xdr_create_args),   C(rrr_nfs3_xdr_mkdir_args),    C(rrr_nfs3_xdr_symlink_args),
	C(rrr_nfs3_xdr_mknod_args),    C(rrr_nfs3_xdr_rename_args),   C(rrr_nfs3_xdr_link_args),
	C(rrr_nfs3_xdr_readdir_args),  C(rrr_nfs3_xdr_readdirplus_args),
	C(rrr_nfs3_xdr_commit_args),   C(rrr_nfs3_xdr_getattr_res),   C(rrr_nfs3_xdr_wcc_res),
	C(rrr_nfs3_xdr_lookup_res),    C(rrr_nfs3_xdr_access_res),    C(rrr_nfs3_xdr_readlink_res),
	C(rrr_nfs3_xdr_read_res),      C(rrr_nfs3_xdr_write_res),     C(rrr_nfs3_xdr_create_res),
	C(rrr_nfs3_xdr_rename_res),    C(rrr_nfs3_xdr_link_res),      C(rrr_nfs3_xdr_readdir_res),
	C(rrr_nfs3_xdr_readdir_res),   C(rrr_nfs3_xdr_fsstat_res),    C(rrr_nfs3_xdr_fsinfo_res),
	C(rrr_nfs3_xdr_pathconf_res),  C(rrr_nfs3_xdr_commit_res),    C(rrr_mnt_xdr_dirpath),
	C(rrr_mnt_xdr_mnt_res),        C(rrr_mnt_xdr_dump_res),       C(rrr_mnt_xdr_export_res),
};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))
#define READDIR_PLAIN 25u
#define READDIR_PLUS 26u
#define DUMP 33u
#define EXPORT 34u

static struct rrr_nfs3_dirent dirents[2][DIRCAP];
static struct rrr_mnt_entry mounts[2][LISTCAP];
static struct rrr_mnt_export exports[2][LISTCAP];

static void prepare(unsigned sel, union obj *o, int k)
{
	memset(o, 0, sizeof(*o));
	if (sel == READDIR_PLAIN || sel == READDIR_PLUS) {
		o->readdir_res.plus = sel == READDIR_PLUS;
		o->readdir_res.entries = dirents[k];
		o->readdir_res.cap = DIRCAP;
	} else if (sel == DUMP) {
		o->dump_res.entries = mounts[k];
		o->dump_res.cap = LISTCAP;
	} else if (sel == EXPORT) {
		o->export_res.entries = exports[k];
		o->export_res.cap = LISTCAP;
	}
}

static void limits(unsigned sel, const union obj *o)
{
	if (sel == 0)
		check(o->fh.fh.len <= RRR_NFS3_FHSIZE);
	if (sel == 3)
		check(strlen(o->dirop.name) <= RRR_NFS3_MAXNAMLEN);
	if (sel == 5)
		check(o->write.data_len <= RRR_NFS3_MAX_DATA);
	if (sel == 8)
		check(strlen(o->symlink.path) <= RRR_NFS3_MAXPATHLEN);
	if (sel == READDIR_PLAIN || sel == READDIR_PLUS)
		check(o->readdir_res.n <= DIRCAP);
	if (sel == 32)
		check(o->mnt_res.nflavors <= RRR_MNT_MAX_FLAVORS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union obj a, b;
	static uint8_t out1[1 << 17], out2[1 << 17];
	if (size < 1)
		return 0;
	unsigned sel = data[0] % NCODECS;
	struct rrr_xdr x;

	prepare(sel, &a, 0);
	rrr_xdr_init(&x, (void *)(data + 1), size - 1, RRR_XDR_DECODE);
	if (codecs[sel](&x, &a) != 0)
		return 0;
	check(rrr_xdr_pos(&x) <= size - 1);
	limits(sel, &a);

	rrr_xdr_init(&x, out1, sizeof(out1), RRR_XDR_ENCODE);
	if (codecs[sel](&x, &a) != 0)
		return 0; /* e.g. a READ reply whose count disagrees is still refused */
	size_t n1 = rrr_xdr_pos(&x);

	prepare(sel, &b, 1);
	rrr_xdr_init(&x, out1, n1, RRR_XDR_DECODE);
	check(codecs[sel](&x, &b) == 0);
	check(rrr_xdr_remaining(&x) == 0);
	rrr_xdr_init(&x, out2, sizeof(out2), RRR_XDR_ENCODE);
	check(codecs[sel](&x, &b) == 0);
	check(rrr_xdr_pos(&x) == n1);
	check(memcmp(out1, out2, n1) == 0);
	return 0;
}
