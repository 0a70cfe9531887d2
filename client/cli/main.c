/* SPDX-License-Identifier: MIT */
/*
 * client/cli/main.c - rrr-client: a command-line NFSv3 client over
 * RPC-over-RDMA (soft or verbs provider) or TCP.
 *
 * Normal operation: parse options, mount the export with rrr_nfs3_mount()
 * (MOUNT over TCP to --mount-port, then NFS over --transport to --port),
 * run one command (ls, stat, get, put, cat, mkdir, rm, mv) and unmount.
 * get, cat and put run as a pipeline (xfer.c): --qd READs or WRITEs of up
 * to rsize/wsize (1 MiB) in flight, over --nconnect connections (2 by
 * default for these commands), while the local file is written or read in
 * file order beside them, through a ring of 2 x qd reused buffers. put
 * sends straight from a mapping of the source file where the transport
 * copies with the CPU (soft, TCP). get preallocates the target with
 * fallocate(). The ring starts one byte past a page boundary on purpose,
 * and --split cuts each call's payload into two buffers, so the
 * registration engine's hole handling is always exercised. CRC32C is
 * computed only for --verify, which reads the remote file back and
 * compares.
 *
 * Errors: the exit status tells a script what went wrong (see --help);
 * messages name the path and the NFS status or the transport's sentence
 * from rrr_last_error().
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#include "client/cli/cli.h"

struct cli {
	struct rrr_nfs3 *nfs;
	const char *transport, *provider;
	unsigned qd;
	uint32_t split;
	uint32_t stable;
	bool verify, progress, quiet, no_map;
	bool direct; /* get: whole chunks to the local file with O_DIRECT */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-client [options] COMMAND [ARGS]\n"
		"\n"
		"NFSv3 client over RPC-over-RDMA (soft or verbs provider) or TCP.\n"
		"Remote paths are relative to the mounted export.\n"
		"\n"
		"commands:\n"
		"  ls [PATH]                  list a directory (READDIRPLUS)\n"
		"  stat PATH                  show attributes\n"
		"  get REMOTE [LOCAL]         copy a remote file here (LOCAL '-' = stdout)\n"
		"  put LOCAL [REMOTE]         copy a local file to the server\n"
		"  cat REMOTE                 print a remote file\n"
		"  mkdir PATH                 make a directory\n"
		"  rm PATH                    remove a file, symlink or empty directory\n"
		"  mv FROM TO                 rename (TO may be an existing directory)\n"
		"\n"
		"options:\n"
		"  --transport rdma|tcp       default rdma\n"
		"  --provider soft|verbs      RDMA provider, default soft\n"
		"  --provider-opts STR        e.g. dev=rxe0\n"
		"  --server HOST              default 127.0.0.1\n"
		"  --port N                   NFS port (default 20049 for rdma, 2049 for tcp)\n"
		"  --mount-port N             MOUNT over TCP port (default 20048; 0 = send MNT\n"
		"                             over the NFS connection)\n"
		"  --export PATH              export to mount (default /)\n"
		"  --nconnect N               connections to the server, 1..16 (default 2 for\n"
		"                             get, put and cat, 1 for the other commands)\n"
		"  --qd N                     READs/WRITEs in flight (default 8, max 128)\n"
		"  --rsize N, --wsize N       bytes per READ/WRITE (default and max 1 MiB)\n"
		"  --split N                  hand each payload over as two buffers cut N bytes in\n"
		"  --no-mmap                  put: read the local file into buffers instead of\n"
		"                             sending from a mapping of it (always so with verbs)\n"
		"  --no-direct                get: write the local file through the page cache\n"
		"                             (default: whole 4 KiB-aligned chunks go O_DIRECT\n"
		"                             where the file system takes it)\n"
		"  --sync                     FILE_SYNC writes instead of UNSTABLE + COMMIT\n"
		"  --verify                   read back and compare CRC32C checksums (without it,\n"
		"                             no checksum is computed)\n"
		"  --progress                 progress bar even when stderr is not a terminal\n"
		"  --no-progress              never draw the progress bar\n"
		"  --stats                    print the connection counters at the end\n"
		"  --timeout MS               per-call timeout (default 30000)\n"
		"  --no-remote-inv            do not offer Send With Invalidate to the server\n"
		"  --fail-fast                while the server is unreachable calls fail at once\n"
		"                             (default: re-send every call after the reconnect)\n"
		"  --wait MODE                how the client waits for replies: adaptive\n"
		"                             (default: spin up to --spin-us while replies\n"
		"                             stream in, else sleep), event or spin\n"
		"  --spin-us N                spin budget per wait in microseconds (default 50)\n"
		"  --help                     this text\n"
		"\n"
		"exit status: 0 ok, 1 the server returned an NFS error, 2 usage error,\n"
		"             3 connection, mount or transport failure, 4 --verify mismatch,\n"
		"             5 local file error\n");
}

/* Exit status and message for @rc: a positive nfsstat3 (the CLI's own, or
 * the one behind the -errno of the library call just made on this thread)
 * is an NFS error; another negative errno a connection or transport one. */
static int fail_rc(int rc, const char *what)
{
	rc = cli_nfs_rc(rc);
	if (rc < 0) {
		fprintf(stderr, "rrr-client: %s: %s\n", what, rrr_last_error());
		return EXIT_CONN;
	}
	fprintf(stderr, "rrr-client: %s: %s\n", what, rrr_nfs3_strstat((uint32_t)rc));
	return EXIT_NFS;
}

/* Split "a/b/c" into the parent's handle and "c". */
static int parent_of(struct cli *c, const char *path, struct rrr_nfs3_fh *dir, char *name)
{
	char tmp[RRR_NFS3_MAXPATHLEN + 1];
	if (strlen(path) > RRR_NFS3_MAXPATHLEN)
		return RRR_NFS3ERR_NAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s", path);
	size_t n = strlen(tmp);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	char *slash = strrchr(tmp, '/');
	const char *base = slash ? slash + 1 : tmp;
	size_t blen = strlen(base);
	if (!blen || blen > RRR_NFS3_MAXNAMLEN)
		return RRR_NFS3ERR_INVAL;
	memcpy(name, base, blen + 1);
	if (slash)
		*slash = '\0';
	return rrr_nfs3_lookup_path(c->nfs, slash ? tmp : "", dir, NULL);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void mode_string(const struct rrr_nfs3_fattr *a, char out[11])
{
	static const char types[] = "?-dbclsp";
	out[0] = a->type <= 7 ? types[a->type] : '?';
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (a->mode & (0400u >> i)) ? rwx[i] : '-';
	out[10] = '\0';
}

/* ------------------------------------------------------------ ls, stat */
struct ls_list {
	struct rrr_nfs3_dirent *e;
	size_t n, cap;
};

static int ls_collect(void *arg, const struct rrr_nfs3_dirent *e)
{
	struct ls_list *l = arg;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 64;
		struct rrr_nfs3_dirent *ne = realloc(l->e, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		l->e = ne;
		l->cap = nc;
	}
	l->e[l->n++] = *e;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct rrr_nfs3_dirent *)a)->name,
		      ((const struct rrr_nfs3_dirent *)b)->name);
}

static void print_line(const struct rrr_nfs3_fattr *a, const char *name)
{
	char m[11];
	mode_string(a, m);
	time_t t = (time_t)a->mtime.sec;
	struct tm tm;
	char ts[32];
	localtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M", &tm);
	printf("%s %3u %5u %5u %12" PRIu64 " %s %s\n", m, a->nlink, a->uid, a->gid, a->size, ts,
	       name);
}

static int cmd_ls(struct cli *c, const char *path)
{
	struct rrr_nfs3_fh fh;
	struct rrr_nfs3_fattr a;
	int rc = rrr_nfs3_lookup_path(c->nfs, path, &fh, &a);
	if (rc)
		return fail_rc(rc, path);
	if (a.type != RRR_NF3DIR) {
		print_line(&a, path);
		return EXIT_OK;
	}
	struct ls_list l = {0};
	rc = rrr_nfs3_readdirplus(c->nfs, &fh, ls_collect, &l);
	if (rc) {
		free(l.e);
		return rc == -ENOMEM ? EXIT_LOCAL : fail_rc(rc, path);
	}
	if (l.n)
		qsort(l.e, l.n, sizeof(*l.e), by_name);
	for (size_t i = 0; i < l.n; i++) {
		if (l.e[i].attr.present)
			print_line(&l.e[i].attr.attr, l.e[i].name);
		else
			printf("?????????? %s\n", l.e[i].name);
	}
	free(l.e);
	return EXIT_OK;
}

static int cmd_stat(struct cli *c, const char *path)
{
	struct rrr_nfs3_fh fh;
	struct rrr_nfs3_fattr a;
	int rc = rrr_nfs3_lookup_path(c->nfs, path, &fh, &a);
	if (rc)
		return fail_rc(rc, path);
	static const char *tn[] = {"?", "file", "directory", "block device", "char device",
				   "symlink", "socket", "fifo"};
	char m[11];
	mode_string(&a, m);
	printf("path: %s\ntype: %s\nmode: %s (%04o)\nnlink: %u\nuid: %u\ngid: %u\n"
	       "size: %" PRIu64 "\nused: %" PRIu64 "\nfileid: %" PRIu64 "\nfsid: %" PRIu64 "\n"
	       "atime: %u.%09u\nmtime: %u.%09u\nctime: %u.%09u\n",
	       path, a.type <= 7 ? tn[a.type] : "?", m, a.mode, a.nlink, a.uid, a.gid, a.size,
	       a.used, a.fileid, a.fsid, a.atime.sec, a.atime.nsec, a.mtime.sec, a.mtime.nsec,
	       a.ctime.sec, a.ctime.nsec);
	if (a.type == RRR_NF3LNK) {
		char target[RRR_NFS3_MAXPATHLEN + 1];
		rc = rrr_nfs3_readlink(c->nfs, &fh, target, sizeof(target));
		if (rc)
			return fail_rc(rc, path);
		printf("target: %s\n", target);
	}
	return EXIT_OK;
}

/* ------------------------------------------------------------ transfers */
/* Whether put may hand the source file to the transport mapped: the soft
 * provider and TCP copy it with the CPU from any memory; the verbs
 * provider would pin page-cache pages for an RNIC (refused or unsafe for
 * shared file mappings on current kernels). --split and --no-mmap keep
 * the buffer ring and its geometry (one byte past a page boundary). */
static bool can_map(const struct cli *c)
{
	return !c->no_map && !c->split && (!strcmp(c->transport, "tcp") || !strcmp(c->provider, "soft"));
}

/* A mapped source that shrinks under us (another process truncates it)
 * raises SIGBUS where our code touches it: report it as the local file
 * error it is. */
static void on_sigbus(int sig)
{
	(void)sig;
	static const char m[] = "rrr-client: the local file shrank during the transfer\n";
	ssize_t n = write(STDERR_FILENO, m, sizeof(m) - 1);
	(void)n;
	_exit(EXIT_LOCAL);
}

static void catch_sigbus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

static void xfer_init(struct cli *c, struct cli_xfer *x, const struct rrr_nfs3_fh *fh, bool put,
		      uint64_t size)
{
	memset(x, 0, sizeof(*x));
	x->nfs = c->nfs;
	x->fh = fh;
	x->put = put;
	x->size = size;
	x->qd = c->qd;
	x->split = c->split;
	x->stable = c->stable;
	x->fd = -1;
	x->dfd = -1;
}

/* Exit status and message for a failed transfer. */
static int xfer_fail(const struct cli_xfer *x, const char *remote, const char *local)
{
	if (x->lerr) {
		fprintf(stderr, "rrr-client: %s %s: %s\n", x->lwhat, local, strerror(x->lerr));
		return EXIT_LOCAL;
	}
	fprintf(stderr, "rrr-client: %s: %s\n", remote,
		x->rc < 0 ? x->emsg : rrr_nfs3_strstat((uint32_t)x->rc));
	return x->rc < 0 ? EXIT_CONN : EXIT_NFS;
}

/* CRC32C of the remote file's first @size bytes, read again through the
 * pipeline into a ring that is not written anywhere (without --split: the
 * second pass uses different buffer geometry). Returns an exit status. */
static int remote_crc(struct cli *c, const struct rrr_nfs3_fh *fh, uint64_t size,
		      const char *remote, uint32_t *crc)
{
	struct cli_xfer x;
	xfer_init(c, &x, fh, false, size);
	x.split = 0;
	x.crc_on = true;
	cli_xfer_run(&x);
	if (x.lerr || x.rc)
		return xfer_fail(&x, remote, "(verify)");
	if (x.done != size) {
		fprintf(stderr, "rrr-client: %s: %s (the file shrank while it was read back)\n",
			remote, rrr_nfs3_strstat(RRR_NFS3ERR_IO));
		return EXIT_NFS;
	}
	*crc = x.crc;
	return EXIT_OK;
}

/* @path opened again for O_DIRECT writes, if its file system takes them at
 * CLI_DIO_ALIGN (statx STATX_DIOALIGN); else -1 (write through the page cache). */
static int open_direct(const char *path)
{
	int fd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	struct statx sx;
	if (fd < 0)
		return -1;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN) || !sx.stx_dio_mem_align ||
	    !sx.stx_dio_offset_align || CLI_DIO_ALIGN % sx.stx_dio_mem_align ||
	    CLI_DIO_ALIGN % sx.stx_dio_offset_align) {
		close(fd);
		return -1;
	}
	return fd;
}

static int cmd_get(struct cli *c, const char *remote, const char *local, bool to_stdout)
{
	struct rrr_nfs3_fh fh;
	struct rrr_nfs3_fattr a;
	int rc = rrr_nfs3_lookup_path(c->nfs, remote, &fh, &a);
	if (rc)
		return fail_rc(rc, remote);
	if (a.type == RRR_NF3DIR)
		return fail_rc(RRR_NFS3ERR_ISDIR, remote);
	if (!local)
		local = base_name(remote);
	if (!strcmp(local, "-"))
		to_stdout = true;
	if (to_stdout)
		local = "standard output";
	int fd = to_stdout ? STDOUT_FILENO
			   : open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "rrr-client: cannot create %s: %s\n", local, strerror(errno));
		return EXIT_LOCAL;
	}
	/* A regular file gets its blocks up front: a full disk fails here,
	 * and the writes skip ext4's per-page delayed allocation (~30 %
	 * cheaper). Filesystems without fallocate are written as they are. */
	struct stat st;
	bool sized = false, regular = !to_stdout && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (regular && a.size) {
		if (fallocate(fd, 0, 0, (off_t)a.size) == 0) {
			sized = true;
		} else if (errno == ENOSPC || errno == EFBIG || errno == EDQUOT || errno == EIO) {
			fprintf(stderr, "rrr-client: cannot allocate %" PRIu64 " bytes for %s: %s\n",
				a.size, local, strerror(errno));
			close(fd);
			return EXIT_LOCAL;
		}
	}
	struct cli_progress pg;
	cli_progress_start(&pg, c->progress && !to_stdout, "get", a.size);
	struct cli_xfer x;
	xfer_init(c, &x, &fh, false, a.size);
	x.fd = fd;
	x.pos_io = regular;
	x.dfd = regular && c->direct && a.size >= rrr_nfs3_rsize(c->nfs) ? open_direct(local) : -1;
	x.crc_on = c->verify;
	x.pg = &pg;
	double t0 = cli_now();
	cli_xfer_run(&x);
	if (x.dfd >= 0)
		close(x.dfd);
	cli_progress_end(&pg, x.done);
	double dt = cli_now() - t0;
	int ret = (x.lerr || x.rc) ? xfer_fail(&x, remote, local) : EXIT_OK;
	/* The remote file ended early, or the transfer failed: the local
	 * file keeps only the bytes written, as if written without fallocate. */
	if (sized && x.done != a.size && ftruncate(fd, (off_t)x.done) < 0 && ret == EXIT_OK) {
		fprintf(stderr, "rrr-client: truncate %s: %s\n", local, strerror(errno));
		ret = EXIT_LOCAL;
	}
	if (!to_stdout && close(fd) < 0 && ret == EXIT_OK) {
		fprintf(stderr, "rrr-client: close %s: %s\n", local, strerror(errno));
		ret = EXIT_LOCAL;
	}
	if (ret)
		return ret;
	if (c->verify) {
		uint32_t crc2;
		ret = remote_crc(c, &fh, x.done, remote, &crc2);
		if (ret)
			return ret;
		if (crc2 != x.crc) {
			fprintf(stderr, "rrr-client: verify FAILED for %s: crc32c %08x then %08x\n",
				remote, x.crc, crc2);
			return EXIT_VERIFY;
		}
	}
	if (!to_stdout && !c->quiet) {
		printf("get %s -> %s: %" PRIu64 " bytes in %.2fs (%.1f MiB/s)", remote, local,
		       x.done, dt, dt > 0 ? (double)x.done / 1048576.0 / dt : 0.0);
		if (c->verify)
			printf(", crc32c %08x, verified", x.crc);
		printf("\n");
	}
	return EXIT_OK;
}

static int cmd_put(struct cli *c, const char *local, const char *remote)
{
	int fd = open(local, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "rrr-client: cannot read %s: %s\n", local,
			fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return EXIT_LOCAL;
	}
	char rpath[RRR_NFS3_MAXPATHLEN + 1];
	snprintf(rpath, sizeof(rpath), "%s", remote ? remote : base_name(local));
	/* An existing directory as target: put the file into it. */
	struct rrr_nfs3_fattr ta;
	if (rrr_nfs3_lookup_path(c->nfs, rpath, NULL, &ta) == 0 && ta.type == RRR_NF3DIR) {
		size_t n = strlen(rpath);
		snprintf(rpath + n, sizeof(rpath) - n, "%s%s", n && rpath[n - 1] == '/' ? "" : "/",
			 base_name(local));
	}
	struct rrr_nfs3_fh dir, fh;
	char name[RRR_NFS3_MAXNAMLEN + 1];
	int rc = parent_of(c, rpath, &dir, name);
	if (rc == 0)
		rc = rrr_nfs3_create(c->nfs, &dir, name, st.st_mode & 0777, false, &fh);
	if (rc) {
		close(fd);
		return fail_rc(rc, rpath);
	}
	uint64_t size = (uint64_t)st.st_size;
	const uint8_t *map = NULL;
	if (can_map(c) && size > 0 && size <= SIZE_MAX) {
		void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			map = m;
			catch_sigbus();
		}
	}
	struct cli_progress pg;
	cli_progress_start(&pg, c->progress, "put", size);
	struct cli_xfer x;
	xfer_init(c, &x, &fh, true, size);
	x.map = map;
	x.fd = fd;
	x.crc_on = c->verify;
	x.pg = &pg;
	double t0 = cli_now();
	cli_xfer_run(&x);
	cli_progress_end(&pg, x.done);
	double dt = cli_now() - t0;
	if (map)
		munmap((void *)(uintptr_t)map, (size_t)size);
	int ret = EXIT_OK;
	if (x.lerr || x.rc) {
		/* A source truncated under us fails wherever it is noticed: a
		 * short pread, populating the mapping, or the transport's copy
		 * from it (then as a lost connection). Name the real cause. */
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size < size) {
			fprintf(stderr,
				"rrr-client: %s shrank during the transfer (%" PRIu64 " -> %" PRIu64
				" bytes)\n",
				local, size, (uint64_t)st.st_size);
			ret = EXIT_LOCAL;
		} else {
			ret = xfer_fail(&x, rpath, local);
		}
	}
	close(fd);
	if (ret)
		return ret;
	if (c->verify) {
		struct rrr_nfs3_fattr a;
		rc = rrr_nfs3_getattr(c->nfs, &fh, &a);
		if (rc)
			return fail_rc(rc, rpath);
		uint32_t crc2 = 0;
		if (a.size == size) {
			ret = remote_crc(c, &fh, size, rpath, &crc2);
			if (ret)
				return ret;
		}
		if (a.size != size || crc2 != x.crc) {
			fprintf(stderr, "rrr-client: verify FAILED for %s: local %" PRIu64
				" bytes crc32c %08x, remote %" PRIu64 " bytes crc32c %08x\n",
				rpath, size, x.crc, a.size, crc2);
			return EXIT_VERIFY;
		}
	}
	if (!c->quiet) {
		printf("put %s -> %s: %" PRIu64 " bytes in %.2fs (%.1f MiB/s)", local, rpath, size,
		       dt, dt > 0 ? (double)size / 1048576.0 / dt : 0.0);
		if (c->verify)
			printf(", crc32c %08x, verified", x.crc);
		printf("\n");
	}
	return EXIT_OK;
}

/* ------------------------------------------------------------ namespace */
static int cmd_mkdir(struct cli *c, const char *path)
{
	struct rrr_nfs3_fh dir;
	char name[RRR_NFS3_MAXNAMLEN + 1];
	int rc = parent_of(c, path, &dir, name);
	if (rc == 0)
		rc = rrr_nfs3_mkdir(c->nfs, &dir, name, 0755, NULL);
	return rc ? fail_rc(rc, path) : EXIT_OK;
}

static int cmd_rm(struct cli *c, const char *path)
{
	struct rrr_nfs3_fh dir;
	struct rrr_nfs3_fattr a;
	char name[RRR_NFS3_MAXNAMLEN + 1];
	int rc = parent_of(c, path, &dir, name);
	if (rc == 0)
		rc = rrr_nfs3_lookup(c->nfs, &dir, name, NULL, &a);
	if (rc == 0)
		rc = a.type == RRR_NF3DIR ? rrr_nfs3_rmdir(c->nfs, &dir, name)
					  : rrr_nfs3_remove(c->nfs, &dir, name);
	return rc ? fail_rc(rc, path) : EXIT_OK;
}

static int cmd_mv(struct cli *c, const char *from, const char *to)
{
	struct rrr_nfs3_fh fdir, tdir;
	char fname[RRR_NFS3_MAXNAMLEN + 1], tname[RRR_NFS3_MAXNAMLEN + 1];
	char tpath[RRR_NFS3_MAXPATHLEN + 1];
	snprintf(tpath, sizeof(tpath), "%s", to);
	struct rrr_nfs3_fattr ta;
	if (rrr_nfs3_lookup_path(c->nfs, tpath, NULL, &ta) == 0 && ta.type == RRR_NF3DIR) {
		size_t n = strlen(tpath);
		snprintf(tpath + n, sizeof(tpath) - n, "/%s", base_name(from));
	}
	int rc = parent_of(c, from, &fdir, fname);
	if (rc == 0)
		rc = parent_of(c, tpath, &tdir, tname);
	if (rc == 0)
		rc = rrr_nfs3_rename(c->nfs, &fdir, fname, &tdir, tname);
	return rc ? fail_rc(rc, from) : EXIT_OK;
}

/* ------------------------------------------------------------ main */
static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

int main(int argc, char **argv)
{
	enum { OPT_TRANSPORT = 256, OPT_PROVIDER, OPT_POPTS, OPT_SERVER, OPT_PORT, OPT_MPORT, OPT_EXPORT, OPT_QD,
	       OPT_RSIZE, OPT_WSIZE, OPT_SPLIT, OPT_SYNC, OPT_VERIFY, OPT_PROGRESS, OPT_NOPROGRESS, OPT_STATS,
	       OPT_TIMEOUT, OPT_QUIET, OPT_NOREMINV, OPT_FAILFAST, OPT_NCONNECT, OPT_NOMMAP, OPT_NODIRECT, OPT_WAIT, OPT_SPIN, OPT_HELP };
	static const struct option lopts[] = {
		{"transport", required_argument, NULL, OPT_TRANSPORT},
		{"provider", required_argument, NULL, OPT_PROVIDER},
		{"provider-opts", required_argument, NULL, OPT_POPTS},
		{"server", required_argument, NULL, OPT_SERVER},
		{"port", required_argument, NULL, OPT_PORT},
		{"mount-port", required_argument, NULL, OPT_MPORT},
		{"export", required_argument, NULL, OPT_EXPORT},
		{"qd", required_argument, NULL, OPT_QD},
		{"rsize", required_argument, NULL, OPT_RSIZE},
		{"wsize", required_argument, NULL, OPT_WSIZE},
		{"split", required_argument, NULL, OPT_SPLIT},
		{"sync", no_argument, NULL, OPT_SYNC},
		{"verify", no_argument, NULL, OPT_VERIFY},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NOPROGRESS},
		{"stats", no_argument, NULL, OPT_STATS},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"no-remote-inv", no_argument, NULL, OPT_NOREMINV},
		{"fail-fast", no_argument, NULL, OPT_FAILFAST},
		{"nconnect", required_argument, NULL, OPT_NCONNECT},
		{"wait", required_argument, NULL, OPT_WAIT},
		{"spin-us", required_argument, NULL, OPT_SPIN},
		{"no-mmap", no_argument, NULL, OPT_NOMMAP},
		{"no-direct", no_argument, NULL, OPT_NODIRECT},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct rrr_nfs3_opts o;
	rrr_nfs3_opts_init(&o);
	o.host = "127.0.0.1";
	const char *port = NULL;
	struct cli c = {.qd = 8,
			.stable = RRR_NFS3_UNSTABLE,
			.progress = isatty(STDERR_FILENO),
			.direct = true};
	bool stats = false, nconnect_set = false;
	uint32_t v;
	int opt;
	while ((opt = getopt_long(argc, argv, "+h", lopts, NULL)) != -1) {
		switch (opt) {
		case OPT_TRANSPORT:
			if (strcmp(optarg, "rdma") && strcmp(optarg, "tcp")) {
				fprintf(stderr, "rrr-client: --transport is rdma or tcp\n");
				return EXIT_USAGE;
			}
			o.transport = optarg;
			break;
		case OPT_PROVIDER:
			if (strcmp(optarg, "soft") && strcmp(optarg, "verbs")) {
				fprintf(stderr, "rrr-client: --provider is soft or verbs\n");
				return EXIT_USAGE;
			}
			o.provider = optarg;
			break;
		case OPT_POPTS: o.provider_opts = optarg; break;
		case OPT_SERVER: o.host = optarg; break;
		case OPT_PORT: port = optarg; break;
		case OPT_MPORT: o.mount_port = optarg; break;
		case OPT_EXPORT: o.export_path = optarg; break;
		case OPT_QD:
			if (!parse_u32(optarg, 1, 128, &v)) {
				fprintf(stderr, "rrr-client: --qd is 1..128\n");
				return EXIT_USAGE;
			}
			c.qd = v;
			break;
		case OPT_RSIZE:
		case OPT_WSIZE:
			if (!parse_u32(optarg, 512, RRR_NFS3_MAX_DATA, &v)) {
				fprintf(stderr, "rrr-client: --rsize/--wsize are 512..1048576\n");
				return EXIT_USAGE;
			}
			if (opt == OPT_RSIZE)
				o.rsize = v;
			else
				o.wsize = v;
			break;
		case OPT_SPLIT:
			if (!parse_u32(optarg, 0, RRR_NFS3_MAX_DATA, &c.split)) {
				fprintf(stderr, "rrr-client: bad --split\n");
				return EXIT_USAGE;
			}
			break;
		case OPT_SYNC: c.stable = RRR_NFS3_FILE_SYNC; break;
		case OPT_VERIFY: c.verify = true; break;
		case OPT_PROGRESS: c.progress = true; break;
		case OPT_NOPROGRESS: c.progress = false; break;
		case OPT_STATS: stats = true; break;
		case OPT_TIMEOUT:
			if (!parse_u32(optarg, 1, 3600000, &v)) {
				fprintf(stderr, "rrr-client: bad --timeout\n");
				return EXIT_USAGE;
			}
			o.timeout_ms = (int)v;
			break;
		case OPT_QUIET: c.quiet = true; break;
		case OPT_NOREMINV: o.no_remote_inv = true; break;
		case OPT_FAILFAST: o.fail_fast = true; break;
		case OPT_WAIT:
			if (rrr_wait_mode_parse(optarg, &o.wait_mode)) {
				fprintf(stderr, "rrr-client: --wait is event, adaptive or spin\n");
				return EXIT_USAGE;
			}
			break;
		case OPT_SPIN:
			if (!parse_u32(optarg, 0, RRR_WAIT_SPIN_US_MAX, &v)) {
				fprintf(stderr, "rrr-client: --spin-us is 0..%u\n", RRR_WAIT_SPIN_US_MAX);
				return EXIT_USAGE;
			}
			o.spin_us = v;
			break;
		case OPT_NCONNECT:
			if (!parse_u32(optarg, 1, RRR_NFS3_MAX_NCONNECT, &v)) {
				fprintf(stderr, "rrr-client: --nconnect is 1..%u\n", RRR_NFS3_MAX_NCONNECT);
				return EXIT_USAGE;
			}
			o.nconnect = v;
			nconnect_set = true;
			break;
		case OPT_NOMMAP: c.no_map = true; break;
		case OPT_NODIRECT: c.direct = false; break;
		case 'h':
		case OPT_HELP: usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	int nargs = argc - optind - 1;
	char **args = argv + optind + 1;
	struct { const char *name; int min, max; } cmds[] = {
		{"ls", 0, 1}, {"stat", 1, 1}, {"get", 1, 2}, {"put", 1, 2}, {"cat", 1, 1},
		{"mkdir", 1, 1}, {"rm", 1, 1}, {"mv", 2, 2},
	};
	bool known = false;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmd, cmds[i].name))
			continue;
		known = true;
		if (nargs < cmds[i].min || nargs > cmds[i].max) {
			fprintf(stderr, "rrr-client: wrong number of arguments for '%s'\n", cmd);
			return EXIT_USAGE;
		}
	}
	if (!known) {
		fprintf(stderr, "rrr-client: unknown command '%s' (see --help)\n", cmd);
		return EXIT_USAGE;
	}
	o.port = port ? port : (!strcmp(o.transport, "tcp") ? "2049" : "20049");
	/* Bulk transfers default to two connections: rrr-server gives each
	 * connection to one worker thread, so two let two server cores work
	 * (docs/benchmarks.md, "Against NFS-Ganesha"); one is enough for the
	 * namespace commands. */
	bool bulk = !strcmp(cmd, "get") || !strcmp(cmd, "put") || !strcmp(cmd, "cat");
	if (!nconnect_set)
		o.nconnect = bulk ? 2 : 1;
	c.transport = o.transport;
	c.provider = o.provider;

	int rc = rrr_nfs3_mount(&o, &c.nfs);
	if (rc) {
		fprintf(stderr, "rrr-client: cannot mount %s:%s: %s\n", o.host, o.export_path,
			rrr_last_error());
		return EXIT_CONN;
	}
	int ret;
	if (!strcmp(cmd, "ls"))
		ret = cmd_ls(&c, nargs ? args[0] : "");
	else if (!strcmp(cmd, "stat"))
		ret = cmd_stat(&c, args[0]);
	else if (!strcmp(cmd, "get"))
		ret = cmd_get(&c, args[0], nargs > 1 ? args[1] : NULL, false);
	else if (!strcmp(cmd, "cat"))
		ret = cmd_get(&c, args[0], NULL, true);
	else if (!strcmp(cmd, "put"))
		ret = cmd_put(&c, args[0], nargs > 1 ? args[1] : NULL);
	else if (!strcmp(cmd, "mkdir"))
		ret = cmd_mkdir(&c, args[0]);
	else if (!strcmp(cmd, "rm"))
		ret = cmd_rm(&c, args[0]);
	else
		ret = cmd_mv(&c, args[0], args[1]);
	if (stats) {
		struct rrr_xprt_stats st;
		memset(&st, 0, sizeof(st));
		rrr_nfs3_stats(c.nfs, &st);
		printf("connection counters (%s%s%s):\n", o.transport,
			strcmp(o.transport, "tcp") ? "/" : "",
			strcmp(o.transport, "tcp") ? o.provider : "");
		rrr_xprt_stats_print(stdout, "  ", &st);
	}
	rrr_nfs3_umount(c.nfs);
	return ret;
}
