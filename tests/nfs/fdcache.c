/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/fdcache.c - rrr-server's descriptor cache (server/fs/fdcache.c)
 * must not change what READ and WRITE answer: data written through a cached
 * descriptor is on disk and read back; a file removed through the server,
 * unlinked behind its back, or renamed out of the export answers
 * NFS3ERR_STALE (the last one at the latest FS_FDC_TTL = 1 s later); a mode
 * change through SETATTR is seen by the next READ's attributes.
 * Real server process over TCP, ephemeral ports.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "tests/lib/nfs_helpers.h"

static struct th_server srv;
static struct rrr_nfs3 *nfs;

static void setup(void)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	cr_assert_eq(th_server_start(&srv, false), 0);
	struct th_mount mt;
	th_mount_opts(&srv, false, &mt);
	nfs = th_nfs_mount(&mt);
}

static void teardown(void)
{
	if (nfs)
		rrr_nfs3_umount(nfs);
	nfs = NULL;
	th_cleanup(&srv);
}

TestSuite(nfs_fdcache, .init = setup, .fini = teardown, .timeout = 60);

static void make_file(const char *name, const char *data, struct rrr_nfs3_fh *fh)
{
	cr_assert_eq(rrr_nfs3_create(nfs, rrr_nfs3_root(nfs), name, 0644, false, fh), 0);
	struct iovec iov = {.iov_base = (void *)data, .iov_len = strlen(data)};
	uint32_t count = 0;
	cr_assert_eq(rrr_nfs3_write(nfs, fh, 0, &iov, 1, RRR_NFS3_UNSTABLE, &count), 0);
	cr_assert_eq(count, strlen(data));
}

/* READ the whole (small) file: returns the status, data into @buf. */
static int read_all(const struct rrr_nfs3_fh *fh, char *buf, size_t cap, uint32_t *count)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap - 1};
	bool eof = false;
	*count = 0;
	int rc = rrr_nfs3_read(nfs, fh, 0, &iov, 1, count, &eof);
	if (rc == 0)
		buf[*count] = '\0';
	return rc;
}

static void export_path(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", srv.export_dir, name);
}

Test(nfs_fdcache, cached_writes_reach_the_file_and_read_back)
{
	struct rrr_nfs3_fh fh;
	make_file("w", "first", &fh);
	char buf[64];
	uint32_t n;
	for (int i = 0; i < 3; i++) { /* the 2nd and 3rd use the cached descriptors */
		char word[32];
		snprintf(word, sizeof(word), "round%d", i);
		struct iovec iov = {.iov_base = word, .iov_len = strlen(word)};
		uint32_t count = 0;
		cr_assert_eq(rrr_nfs3_write(nfs, &fh, 0, &iov, 1, RRR_NFS3_FILE_SYNC, &count), 0);
		cr_assert_eq(read_all(&fh, buf, sizeof(buf), &n), 0);
		cr_assert_str_eq(buf, word);
	}
	char path[512], disk[64] = {0};
	export_path("w", path, sizeof(path));
	FILE *f = fopen(path, "r");
	cr_assert(f);
	cr_assert_eq(fread(disk, 1, sizeof(disk) - 1, f), 6);
	fclose(f);
	cr_assert_str_eq(disk, "round2");
}

/* A file of the export: its handle and its path. */
struct cached {
	struct rrr_nfs3_fh fh;
	char path[512];
};

/* File @name (holding @data) made and read twice (the second read from
 * the server's open-file cache). */
static struct cached make_cached(const char *name, const char *data)
{
	struct cached c;
	char buf[64];
	uint32_t n;
	make_file(name, data, &c.fh);
	cr_assert_eq(read_all(&c.fh, buf, sizeof(buf), &n), 0);
	cr_assert_eq(read_all(&c.fh, buf, sizeof(buf), &n), 0); /* cached now */
	export_path(name, c.path, sizeof(c.path));
	return c;
}

/* A read of @fh answers NFS3ERR_STALE. */
static void expect_stale(const struct rrr_nfs3_fh *fh)
{
	char buf[64];
	uint32_t n;
	cr_assert_eq(th_nfs_st(read_all(fh, buf, sizeof(buf), &n)), RRR_NFS3ERR_STALE);
}

Test(nfs_fdcache, remove_through_the_server_is_stale_at_once)
{
	struct cached c = make_cached("r", "data");
	char keep[512];
	/* a second link outside the export keeps the inode alive (nlink 1) */
	snprintf(keep, sizeof(keep), "%s/keep", srv.dir);
	cr_assert_eq(link(c.path, keep), 0);
	cr_assert_eq(rrr_nfs3_remove(nfs, rrr_nfs3_root(nfs), "r"), 0);
	expect_stale(&c.fh);
	struct iovec iov = {.iov_base = "x", .iov_len = 1};
	uint32_t count;
	cr_assert_eq(th_nfs_st(rrr_nfs3_write(nfs, &c.fh, 0, &iov, 1, RRR_NFS3_UNSTABLE, &count)),
		     RRR_NFS3ERR_STALE);
}

Test(nfs_fdcache, unlink_behind_the_servers_back_is_stale)
{
	struct cached c = make_cached("u", "data");
	cr_assert_eq(unlink(c.path), 0);
	expect_stale(&c.fh);
}

Test(nfs_fdcache, rename_out_of_the_export_is_stale_after_the_ttl)
{
	struct cached c = make_cached("m", "secret");
	char out[512];
	snprintf(out, sizeof(out), "%s/outside", srv.dir);
	cr_assert_eq(rename(c.path, out), 0);
	struct timespec ts = {1, 300 * 1000 * 1000}; /* FS_FDC_TTL + margin */
	nanosleep(&ts, NULL);
	expect_stale(&c.fh);
}

Test(nfs_fdcache, setattr_mode_shows_in_the_next_read)
{
	struct rrr_nfs3_fh fh;
	make_file("s", "0123456789", &fh);
	char buf[64];
	uint32_t n;
	cr_assert_eq(read_all(&fh, buf, sizeof(buf), &n), 0);
	struct rrr_nfs3_sattr s = {.set_size = true, .size = 4, .set_mode = true, .mode = 0600};
	cr_assert_eq(rrr_nfs3_setattr(nfs, &fh, &s), 0);
	cr_assert_eq(read_all(&fh, buf, sizeof(buf), &n), 0);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(buf, "0123");
	struct rrr_nfs3_fattr a;
	cr_assert_eq(rrr_nfs3_getattr(nfs, &fh, &a), 0);
	cr_assert_eq(a.mode, 0600);
}

/* The server's final counters (its log): the value of "  @name N". */
static long long log_counter(const char *name)
{
	FILE *f = fopen(srv.log, "r");
	cr_assert(f, "no server log");
	char line[512];
	long long v = -1;
	size_t n = strlen(name);
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		while (*p == ' ')
			p++;
		if (!strncmp(p, name, n) && p[n] == ' ')
			v = atoll(p + n + 1);
	}
	fclose(f);
	return v;
}

Test(nfs_fdcache, repeated_reads_and_writes_hit_the_cache)
{
	struct rrr_nfs3_fh fh;
	make_file("h", "hot", &fh);
	char buf[64];
	uint32_t n;
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(read_all(&fh, buf, sizeof(buf), &n), 0);
		cr_assert_str_eq(buf, "hot");
	}
	struct iovec iov = {.iov_base = "HOT", .iov_len = 3};
	uint32_t count;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(rrr_nfs3_write(nfs, &fh, 0, &iov, 1, RRR_NFS3_UNSTABLE, &count), 0);
	rrr_nfs3_umount(nfs);
	nfs = NULL;
	cr_assert_eq(th_server_stop(&srv), 0);
	/* 4 READ and 3 WRITE hits expected; a stall past FS_FDC_TTL costs one */
	cr_assert_geq(log_counter("fh.fdcache_hits"), 4);
	cr_assert_geq(log_counter("fh.fdcache_misses"), 1);
}
