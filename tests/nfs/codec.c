/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/codec.c - NFSv3 / MOUNT v3 codecs: byte-exact vectors written
 * from the RFC 1813 layouts, encode/decode round trips, the limits a
 * hostile peer hits, and the DDP hook being used for DDP-eligible items.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rrr/nfs3_xdr.h>

static uint8_t buf[8192];

static size_t enc_len(struct rrr_xdr *x)
{
	return rrr_xdr_pos(x);
}

Test(nfs_codec, lookup_args_vector)
{
	struct rrr_nfs3_diropargs a = {.dir = {.len = 4, .data = {1, 2, 3, 4}}};
	strcpy(a.name, "abc");
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_diropargs(&x, &a), 0);
	const uint8_t want[] = {0, 0, 0, 4, 1, 2, 3, 4, 0, 0, 0, 3, 'a', 'b', 'c', 0};
	cr_assert_eq(enc_len(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));

	struct rrr_nfs3_diropargs b;
	rrr_xdr_init(&x, (void *)want, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_diropargs(&x, &b), 0);
	cr_assert_eq(b.dir.len, 4);
	cr_assert_str_eq(b.name, "abc");
	cr_assert_eq(rrr_xdr_remaining(&x), 0);
}

Test(nfs_codec, getattr_res_vector)
{
	struct rrr_nfs3_getattr_res r = {
		.status = 0,
		.attr = {.type = RRR_NF3REG, .mode = 0644, .nlink = 1, .uid = 1000, .gid = 1000,
			 .size = 0x0102030405060708ull, .used = 4096, .fsid = 7, .fileid = 42,
			 .atime = {1, 2}, .mtime = {3, 4}, .ctime = {5, 6}},
	};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_getattr_res(&x, &r), 0);
	const uint8_t want[] = {
		0, 0, 0, 0,             /* NFS3_OK */
		0, 0, 0, 1,             /* NF3REG */
		0, 0, 0x01, 0xa4,       /* mode 0644 */
		0, 0, 0, 1,             /* nlink */
		0, 0, 0x03, 0xe8,       /* uid */
		0, 0, 0x03, 0xe8,       /* gid */
		1, 2, 3, 4, 5, 6, 7, 8, /* size */
		0, 0, 0, 0, 0, 0, 0x10, 0, /* used */
		0, 0, 0, 0, 0, 0, 0, 0, /* rdev */
		0, 0, 0, 0, 0, 0, 0, 7, /* fsid */
		0, 0, 0, 0, 0, 0, 0, 42, /* fileid */
		0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6,
	};
	cr_assert_eq(enc_len(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));

	struct rrr_nfs3_getattr_res d;
	rrr_xdr_init(&x, (void *)want, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_getattr_res(&x, &d), 0);
	cr_assert_eq(d.attr.type, RRR_NF3REG);
	cr_assert_eq(d.attr.mode, 0644);
	cr_assert_eq(d.attr.uid, 1000);
	cr_assert_eq(d.attr.size, 0x0102030405060708ull);
	cr_assert_eq(d.attr.used, 4096);
	cr_assert_eq(d.attr.fileid, 42);
	cr_assert_eq(d.attr.ctime.sec, 5);
	cr_assert_eq(d.attr.ctime.nsec, 6);
}

Test(nfs_codec, write_args_vector_without_hook)
{
	struct iovec iov = {.iov_base = "xyz", .iov_len = 3};
	struct rrr_nfs3_write_args a = {.fh = {.len = 0}, .offset = 5, .count = 3,
					.stable = RRR_NFS3_FILE_SYNC, .data_len = 3, .iov = &iov,
					.niov = 1};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_write_args(&x, &a), 0);
	const uint8_t want[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3,
				0, 0, 0, 2, 0, 0, 0, 3, 'x', 'y', 'z', 0};
	cr_assert_eq(enc_len(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));

	static struct rrr_nfs3_write_args d;
	rrr_xdr_init(&x, (void *)want, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_write_args(&x, &d), 0);
	cr_assert_eq(d.data_len, 3);
	cr_assert_eq(d.niov, 1);
	cr_assert_eq(memcmp(d.iov[0].iov_base, "xyz", 3), 0);
	cr_assert_eq(d.stable, RRR_NFS3_FILE_SYNC);
}

Test(nfs_codec, read_res_error_vector)
{
	struct rrr_nfs3_read_res r = {.status = RRR_NFS3ERR_NOENT};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_read_res(&x, &r), 0);
	const uint8_t want[] = {0, 0, 0, 2, 0, 0, 0, 0};
	cr_assert_eq(enc_len(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));
}

Test(nfs_codec, mnt_res_vector)
{
	struct rrr_mnt_res r = {.status = 0, .fh = {.len = 2, .data = {0xaa, 0xbb}}, .nflavors = 1,
				.flavors = {RRR_AUTH_SYS}};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_mnt_xdr_mnt_res(&x, &r), 0);
	const uint8_t want[] = {0, 0, 0, 0, 0, 0, 0, 2, 0xaa, 0xbb, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1};
	cr_assert_eq(enc_len(&x), sizeof(want));
	cr_assert_arr_eq(buf, want, sizeof(want));
	struct rrr_mnt_res d;
	rrr_xdr_init(&x, (void *)want, sizeof(want), RRR_XDR_DECODE);
	cr_assert_eq(rrr_mnt_xdr_mnt_res(&x, &d), 0);
	cr_assert_eq(d.nflavors, 1);
	cr_assert_eq(d.flavors[0], RRR_AUTH_SYS);
}

/* Round trips: encode, decode, re-encode: the bytes must be identical
 * (comparing structs would compare their padding). */
#define ROUND_TRIP(fn, type, val)                                                          \
	do {                                                                               \
		static type rt_a, rt_b;                                                    \
		rt_a = (val);                                                              \
		memset(&rt_b, 0, sizeof(rt_b));                                            \
		struct rrr_xdr rt_x;                                                       \
		rrr_xdr_init(&rt_x, buf, sizeof(buf), RRR_XDR_ENCODE);                     \
		cr_assert_eq(fn(&rt_x, &rt_a), 0, #fn " encode");                          \
		size_t rt_n = rrr_xdr_pos(&rt_x);                                          \
		rrr_xdr_init(&rt_x, buf, rt_n, RRR_XDR_DECODE);                            \
		cr_assert_eq(fn(&rt_x, &rt_b), 0, #fn " decode");                          \
		cr_assert_eq(rrr_xdr_remaining(&rt_x), 0, #fn " consumed all");            \
		static uint8_t rt_buf2[8192];                                              \
		rrr_xdr_init(&rt_x, rt_buf2, sizeof(rt_buf2), RRR_XDR_ENCODE);             \
		cr_assert_eq(fn(&rt_x, &rt_b), 0, #fn " re-encode");                       \
		cr_assert_eq(rrr_xdr_pos(&rt_x), rt_n, #fn " same length");                \
		cr_assert_eq(memcmp(buf, rt_buf2, rt_n), 0, #fn " same bytes");            \
	} while (0)

Test(nfs_codec, round_trips)
{
	struct rrr_nfs3_sattr s = {.set_mode = true, .mode = 0700, .set_size = true, .size = 99,
				   .atime_how = RRR_NFS3_SET_TO_CLIENT_TIME, .atime = {7, 8},
				   .mtime_how = RRR_NFS3_SET_TO_SERVER_TIME};
	struct rrr_nfs3_setattr_args sa = {.fh = {.len = 8}, .attr = s, .guard_check = true,
					   .guard_ctime = {1, 1}};
	ROUND_TRIP(rrr_nfs3_xdr_setattr_args, struct rrr_nfs3_setattr_args, sa);

	struct rrr_nfs3_create_args ca = {.where = {.dir = {.len = 32}, .name = "file"},
					  .mode = RRR_NFS3_GUARDED, .attr = s};
	ROUND_TRIP(rrr_nfs3_xdr_create_args, struct rrr_nfs3_create_args, ca);
	struct rrr_nfs3_create_args ce = {.where = {.dir = {.len = 1}, .name = "x"},
					  .mode = RRR_NFS3_EXCLUSIVE, .verf = {1, 2, 3, 4, 5, 6, 7, 8}};
	ROUND_TRIP(rrr_nfs3_xdr_create_args, struct rrr_nfs3_create_args, ce);

	struct rrr_nfs3_rename_args ra = {.from = {.dir = {.len = 3}, .name = "a"},
					  .to = {.dir = {.len = 64}, .name = "b"}};
	ROUND_TRIP(rrr_nfs3_xdr_rename_args, struct rrr_nfs3_rename_args, ra);

	struct rrr_nfs3_mknod_args ma = {.where = {.name = "dev"}, .type = RRR_NF3CHR,
					 .spec_major = 1, .spec_minor = 3};
	ROUND_TRIP(rrr_nfs3_xdr_mknod_args, struct rrr_nfs3_mknod_args, ma);

	struct rrr_nfs3_readdir_args rd = {.dir = {.len = 2}, .cookie = 77, .cookieverf = {9},
					   .dircount = 100, .maxcount = 1000};
	ROUND_TRIP(rrr_nfs3_xdr_readdirplus_args, struct rrr_nfs3_readdir_args, rd);

	struct rrr_nfs3_wcc_data w = {.before_present = true, .before = {.size = 5},
				      .after = {.present = true, .attr = {.type = RRR_NF3DIR}}};
	struct rrr_nfs3_write_res wr = {.status = 0, .wcc = w, .count = 10,
					.committed = RRR_NFS3_UNSTABLE, .verf = {1, 1, 2, 3}};
	ROUND_TRIP(rrr_nfs3_xdr_write_res, struct rrr_nfs3_write_res, wr);

	struct rrr_nfs3_create_res cr = {.status = 0, .fh_present = true, .fh = {.len = 32},
					 .attr = {.present = true, .attr = {.type = RRR_NF3REG}},
					 .dir_wcc = w};
	ROUND_TRIP(rrr_nfs3_xdr_create_res, struct rrr_nfs3_create_res, cr);

	struct rrr_nfs3_fsinfo_res fi = {.rtmax = 1 << 20, .wtmax = 1 << 20, .maxfilesize = 1ull << 62,
					 .properties = 0x1b};
	ROUND_TRIP(rrr_nfs3_xdr_fsinfo_res, struct rrr_nfs3_fsinfo_res, fi);

	struct rrr_nfs3_pathconf_res pc = {.linkmax = 3, .name_max = 255, .no_trunc = true};
	ROUND_TRIP(rrr_nfs3_xdr_pathconf_res, struct rrr_nfs3_pathconf_res, pc);

	struct rrr_nfs3_commit_res cm = {.status = RRR_NFS3ERR_IO, .wcc = w};
	ROUND_TRIP(rrr_nfs3_xdr_commit_res, struct rrr_nfs3_commit_res, cm);
}

Test(nfs_codec, readdirplus_round_trip)
{
	static struct rrr_nfs3_dirent e[3], d[3];
	for (int i = 0; i < 3; i++) {
		e[i].fileid = 100 + (uint64_t)i;
		e[i].cookie = 1000 + (uint64_t)i;
		snprintf(e[i].name, sizeof(e[i].name), "entry-%d", i);
		e[i].attr.present = i != 1;
		e[i].attr.attr.type = RRR_NF3REG;
		e[i].fh_present = true;
		e[i].fh.len = 32;
	}
	struct rrr_nfs3_readdir_res r = {.plus = true, .entries = e, .n = 3, .eof = true};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_readdir_res(&x, &r), 0);
	size_t n = rrr_xdr_pos(&x);
	uint32_t expect = 4 + 4 + 8 + 4 + 4; /* status, dir attr, verf, end, eof */
	for (int i = 0; i < 3; i++)
		expect += rrr_nfs3_dirent_size(&e[i], true);
	cr_assert_eq(n, expect, "dirent_size accounts for every byte");

	struct rrr_nfs3_readdir_res o = {.plus = true, .entries = d, .cap = 3};
	rrr_xdr_init(&x, buf, n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_readdir_res(&x, &o), 0);
	cr_assert_eq(o.n, 3);
	cr_assert(o.eof);
	cr_assert_str_eq(o.entries[2].name, "entry-2");
	cr_assert_not(o.entries[1].attr.present);

	/* More entries than the caller's array: refused, never overflowed. */
	struct rrr_nfs3_readdir_res small = {.plus = true, .entries = d, .cap = 2};
	rrr_xdr_init(&x, buf, n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_readdir_res(&x, &small), -E2BIG);
}

Test(nfs_codec, mount_lists_round_trip)
{
	struct rrr_mnt_export ex[2] = {{.dir = "/a", .groups = "*"}, {.dir = "/b", .groups = "h1,h2"}};
	struct rrr_mnt_export_res r = {.entries = ex, .n = 2};
	struct rrr_xdr x;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_mnt_xdr_export_res(&x, &r), 0);
	size_t n = rrr_xdr_pos(&x);
	static struct rrr_mnt_export out[2];
	struct rrr_mnt_export_res d = {.entries = out, .cap = 2};
	rrr_xdr_init(&x, buf, n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_mnt_xdr_export_res(&x, &d), 0);
	cr_assert_eq(d.n, 2);
	cr_assert_str_eq(out[1].groups, "h1,h2");
	cr_assert_str_eq(out[0].dir, "/a");

	static struct rrr_mnt_entry me[1] = {{.host = "10.0.0.1", .dir = "/x"}};
	struct rrr_mnt_dump_res dr = {.entries = me, .n = 1};
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_mnt_xdr_dump_res(&x, &dr), 0);
	n = rrr_xdr_pos(&x);
	static struct rrr_mnt_entry mo[1];
	struct rrr_mnt_dump_res dd = {.entries = mo, .cap = 1};
	rrr_xdr_init(&x, buf, n, RRR_XDR_DECODE);
	cr_assert_eq(rrr_mnt_xdr_dump_res(&x, &dd), 0);
	cr_assert_str_eq(mo[0].host, "10.0.0.1");
}

Test(nfs_codec, hostile_inputs_rejected)
{
	struct rrr_xdr x;
	struct rrr_nfs3_fh_args fa;
	/* 65-byte file handle */
	uint8_t big_fh[4 + 68] = {0, 0, 0, 65};
	rrr_xdr_init(&x, big_fh, sizeof(big_fh), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_fh_args(&x, &fa), -E2BIG);

	/* 256-byte name */
	static uint8_t longname[4 + 4 + 260];
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "\0\0\0\0\0\0\x01\x00", 8);
	struct rrr_nfs3_diropargs da;
	rrr_xdr_init(&x, longname, sizeof(longname), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_diropargs(&x, &da), -E2BIG);

	/* embedded NUL in a name */
	const uint8_t nul[] = {0, 0, 0, 0, 0, 0, 0, 3, 'a', 0, 'b', 0};
	rrr_xdr_init(&x, (void *)nul, sizeof(nul), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_diropargs(&x, &da), -EINVAL);

	/* truncated: name length says 8, 4 bytes follow */
	const uint8_t trunc[] = {0, 0, 0, 0, 0, 0, 0, 8, 'a', 'b', 'c', 'd'};
	rrr_xdr_init(&x, (void *)trunc, sizeof(trunc), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_diropargs(&x, &da), -EBADMSG);

	/* fattr3 type 8 does not exist */
	struct rrr_nfs3_getattr_res gr;
	static uint8_t badtype[88];
	badtype[7] = 8;
	rrr_xdr_init(&x, badtype, sizeof(badtype), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_getattr_res(&x, &gr), -EINVAL);

	/* WRITE with 1 MiB + 1 of data */
	static struct rrr_nfs3_write_args wa;
	const uint8_t bigw[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
				0, 0, 0, 0, 0, 0x10, 0, 1};
	rrr_xdr_init(&x, (void *)bigw, sizeof(bigw), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_write_args(&x, &wa), -E2BIG);

	/* stable_how 3 does not exist */
	const uint8_t badstable[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3};
	rrr_xdr_init(&x, (void *)badstable, sizeof(badstable), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_write_args(&x, &wa), -EINVAL);

	/* post_op_attr discriminant 2 */
	const uint8_t badbool[] = {0, 0, 0, 2, 0, 0, 0, 2};
	struct rrr_nfs3_wcc_res wr;
	rrr_xdr_init(&x, (void *)badbool, sizeof(badbool), RRR_XDR_DECODE);
	cr_assert_lt(rrr_nfs3_xdr_wcc_res(&x, &wr), 0);

	/* MNT with 17 flavors */
	const uint8_t flav[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 17};
	struct rrr_mnt_res mr;
	rrr_xdr_init(&x, (void *)flav, sizeof(flav), RRR_XDR_DECODE);
	cr_assert_eq(rrr_mnt_xdr_mnt_res(&x, &mr), -E2BIG);

	/* READLINK path with a NUL byte */
	const uint8_t rl[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 0, 'b', 0};
	static struct rrr_nfs3_readlink_res rr;
	rrr_xdr_init(&x, (void *)rl, sizeof(rl), RRR_XDR_DECODE);
	cr_assert_eq(rrr_nfs3_xdr_readlink_res(&x, &rr), -EINVAL);

	/* Encoding a handle longer than 64 bytes is refused too. */
	struct rrr_nfs3_fh_args bad = {.fh = {.len = 65}};
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	cr_assert_eq(rrr_nfs3_xdr_fh_args(&x, &bad), -E2BIG);
}

/* A DDP hook that moves payloads "out of band": only the length stays. */
static unsigned hook_calls;
static uint32_t hook_len;
static int hook_encode(struct rrr_xdr *xdr, void *ctx, const struct iovec *iov, unsigned niov,
		       uint32_t len)
{
	(void)xdr;
	(void)ctx;
	(void)iov;
	(void)niov;
	hook_calls++;
	hook_len = len;
	return 0;
}

typedef int (*obj_codec)(struct rrr_xdr *x, void *obj);
#define CODEC(f) ((obj_codec)(void (*)(void))(f))

/* Encode @obj with @codec into buf, the payload hook set: 0 from the codec,
 * and the hook has run @calls times in all, the last with @len bytes. The
 * stream, for more checks. */
static struct rrr_xdr encode_hooked(obj_codec codec, void *obj, unsigned calls, uint32_t len)
{
	static struct rrr_xdr_ddp hook = {.encode = hook_encode};
	struct rrr_xdr x;

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	rrr_xdr_set_ddp(&x, &hook);
	cr_assert_eq(codec(&x, obj), 0);
	cr_assert_eq(hook_calls, calls);
	cr_assert_eq(hook_len, len);
	return x;
}

Test(nfs_codec, ddp_items_use_the_payload_hook)
{
	struct rrr_xdr x;
	struct iovec iov[2] = {{.iov_base = "abcd", .iov_len = 4}, {.iov_base = "efg", .iov_len = 3}};

	static struct rrr_nfs3_write_args wa;
	wa.count = wa.data_len = 7;
	wa.iov = iov;
	wa.niov = 2;
	hook_calls = 0;
	x = encode_hooked(CODEC(rrr_nfs3_xdr_write_args), &wa, 1, 7);
	cr_assert_eq(rrr_xdr_pos(&x), 4 + 8 + 4 + 4 + 4, "data left the inline stream");

	static struct rrr_nfs3_read_res rr;
	rr.count = rr.data_len = 7;
	rr.iov = iov;
	rr.niov = 2;
	encode_hooked(CODEC(rrr_nfs3_xdr_read_res), &rr, 2, 7);

	static struct rrr_nfs3_symlink_args sa;
	strcpy(sa.where.name, "l");
	strcpy(sa.path, "../target");
	encode_hooked(CODEC(rrr_nfs3_xdr_symlink_args), &sa, 3, 9);

	static struct rrr_nfs3_readlink_res rl;
	strcpy(rl.path, "/x/y");
	encode_hooked(CODEC(rrr_nfs3_xdr_readlink_res), &rl, 4, 4);
}

Test(nfs_codec, status_names_and_errno)
{
	cr_assert_str_eq(rrr_nfs3_strstat(RRR_NFS3ERR_STALE), "NFS3ERR_STALE");
	cr_assert_eq(rrr_nfs3_stat_to_errno(RRR_NFS3ERR_NOENT), -ENOENT);
	cr_assert_eq(rrr_nfs3_stat_to_errno(RRR_NFS3_OK), 0);
	cr_assert_eq(rrr_nfs3_stat_to_errno(RRR_NFS3ERR_NOTSUPP), -EOPNOTSUPP);
}
