/* SPDX-License-Identifier: MIT */
/*
 * fio/rrr_engine.c - the fio external ioengine "rrr": fio's I/O as NFSv3
 * READ/WRITE calls of the rrr client library, over RPC-over-RDMA (soft or
 * verbs provider) or TCP, to any NFSv3 server (rrr-server, the kernel's nfsd).
 *
 *   fio --ioengine=external:/usr/local/lib/rrr/rrr-fio.so --host=SERVER job.fio
 *
 * Normal operation. ->init (in the job's own process or thread, after fio
 * forked it) mounts the export with the NFSv3 client library over one
 * connection, which carries everything but the data: MOUNT, LOOKUP, CREATE,
 * MKDIR, GETATTR, COMMIT, REMOVE. The data goes over `nconnect` more
 * rrr_clnt connections opened with the registration mode the job asked for
 * (per-io: the library's FRWR-style registration per call, the only safe
 * one; persistent and bounce: the benchmark-only modes of rrr-bench, the
 * first of which leaves memory exposed and is labelled UNSAFE). ->open_file
 * maps fio's file name (directory + filename) to a path under the export,
 * creates the missing directories and the file, and, for a job that reads,
 * writes the part of the file the job will read that does not exist yet.
 *
 * fio's async model maps onto the library's like this:
 *   ->queue      fill the io_u's own struct rrr_nfs3_io (READ or WRITE of
 *                the io_u's buffer) and park it on a pending list; FIO_Q_QUEUED.
 *   ->commit     rrr_nfs3_io_submit_clnt() every pending io, each on the next
 *                data connection in turn: real queue depth, fio's iodepth
 *                calls in flight (and iodepth_batch* honoured by fio itself).
 *   completion   the library's callback (on that connection's progress
 *                thread) sets io_u->error / ->resid and appends the io_u
 *                to the done ring, signalling the condition variable.
 *   ->getevents  wait (bounded by fio's timeout) until at least min calls
 *                are done, take up to max of them off the ring.
 *   ->event      the n-th of those.
 * Writes are UNSTABLE by default (like the kernel client) and ->close_file
 * sends COMMIT for a file that was written; fio's fsync/fdatasync (fsync=,
 * end_fsync=) wait for the calls in flight and send COMMIT. stable=filesync
 * makes every WRITE FILE_SYNC instead. fio's verify reads back through the
 * same calls, so verify=crc32c checks the server's bytes.
 *
 * Threads: fio calls every hook from the job's thread; only the completion
 * callback runs elsewhere. The lock guards the done ring and the in-flight
 * count. The fio structures this file touches are those of the fio source
 * it was compiled against (Makefile: FIO_SRC, Debian's source package of the
 * installed fio); ->init refuses to run under another fio version, since
 * fio has no stable plugin ABI.
 *
 * Recovery. A call that fails (transport error, timeout, NFS error) fails
 * its io_u with a positive errno (the NFS status mapped as the library
 * does); fio then stops the job or goes on (continue_on_error). A hook
 * that fails (init, open_file, close_file) sets the job's error with
 * td_verror() as well as returning the errno: fio ignores close_file's
 * result and an open_file failure without td->error, so without it a job
 * that could not open its file ends with err=0 and fio exits 0. Each data
 * connection reconnects by itself (the library's recovery); READs are
 * retried once there, WRITEs are not (not idempotent under UNSTABLE
 * without a verifier check). ->cleanup waits for the calls in flight, then
 * destroys the connections (which invalidates any registration left) and
 * unmounts.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/rrr.h>

#ifndef RRR_FIO_VERSION
#error "build with -DRRR_FIO_VERSION='\"fio-X.Y\"' (the Makefile does)"
#endif

#define MAX_CONN	RRR_NFS3_MAX_NCONNECT
#define FILL_CHUNK	(4u << 20)
#define DRAIN_TIMEOUT_S 60

enum reg_mode { REG_PER_IO = 0, REG_PERSISTENT, REG_BOUNCE };
enum stable_mode { STABLE_UNSTABLE = 0, STABLE_DATA, STABLE_FILE };

/* fio's engine options (td->eo). The first member must not be at offset 0:
 * fio stores a thread_data pointer there. */
struct rrr_fio_opts {
	void *pad;
	char *transport;
	char *provider;
	char *provider_opts;
	char *host;
	char *port;
	char *mount_port;
	char *export_path;
	unsigned int nconnect;
	char *reg;
	char *stable;
	unsigned int timeout_ms;
	unsigned int no_remote_inv;
};

/* Per io_u: its call and the call's arguments and results. */
struct rrr_fio_req {
	struct rrr_nfs3_io io;
	struct iovec iov;
	struct io_u *io_u;
	struct rrr_fio *e;
};

/* Per fio file. */
struct rrr_fio_file {
	struct rrr_nfs3_fh fh;
	bool dirty; /* UNSTABLE writes not yet covered by a COMMIT */
};

/* Per job (td->io_ops_data). */
struct rrr_fio {
	struct rrr_nfs3 *nfs;
	struct rrr_clnt *clnt[MAX_CONN];
	unsigned nconn, rr;
	struct rrr_rpc_cred cred;
	uint32_t rsize, wsize;
	enum stable_mode stable;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned cap;	       /* fio's iodepth */
	struct io_u **pending; /* queued, not yet committed (job thread only) */
	unsigned npending;
	struct io_u **done; /* ring of completed calls, under lock */
	unsigned done_head, ndone;
	struct io_u **events; /* the last getevents' io_us (job thread only) */
	unsigned inflight;    /* submitted, not completed, under lock */
};

static struct fio_option options[] = {
    {
	.name = "transport",
	.lname = "rrr transport",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, transport),
	.def = "rdma",
	.help = "rdma (RPC-over-RDMA) or tcp (ONC RPC over TCP)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "provider",
	.lname = "rrr provider",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, provider),
	.def = "soft",
	.help = "RDMA provider: soft (iWARP over TCP in user space) or verbs",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "provider_opts",
	.lname = "rrr provider options",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, provider_opts),
	.help = "the provider's option string (e.g. dev=rxe0 for verbs)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	/* not "server": on fio's command line --server starts a fio server */
	.name = "host",
	.lname = "rrr server address",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, host),
	.def = "127.0.0.1",
	.help = "NFS server address",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "port",
	.lname = "rrr NFS port",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, port),
	.help = "NFS port (default 20049 for rdma, 2049 for tcp)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "mount_port",
	.lname = "rrr MOUNT port",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, mount_port),
	.def = "20048",
	.help = "MOUNT over TCP on this port (0: MOUNT over the NFS connection)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "export",
	.lname = "rrr export",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, export_path),
	.def = "/",
	.help = "export path to MOUNT; fio's directory/filename are paths under it",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "nconnect",
	.lname = "rrr data connections",
	.type = FIO_OPT_INT,
	.off1 = offsetof(struct rrr_fio_opts, nconnect),
	.def = "1",
	.minval = 1,
	.maxval = MAX_CONN,
	.help = "data connections per job; calls go round-robin over them",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "reg",
	.lname = "rrr registration mode",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, reg),
	.def = "per-io",
	.help = "per-io (register per call, invalidate before completion: safe); "
		"bounce (copy through pre-registered buffers; benchmark mode); "
		"persistent (UNSAFE, benchmarks only: one registration never invalidated)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "stable",
	.lname = "rrr WRITE stability",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct rrr_fio_opts, stable),
	.def = "unstable",
	.help = "unstable (COMMIT at fsync and close), datasync or filesync (every WRITE)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "rrr_timeout",
	.lname = "rrr call timeout",
	.type = FIO_OPT_INT,
	.off1 = offsetof(struct rrr_fio_opts, timeout_ms),
	.def = "30000",
	.minval = 1,
	.help = "per-call timeout in milliseconds",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = "no_remote_inv",
	.lname = "rrr no Send With Invalidate",
	.type = FIO_OPT_BOOL,
	.off1 = offsetof(struct rrr_fio_opts, no_remote_inv),
	.def = "0",
	.help = "do not offer Send With Invalidate (RFC 8797): invalidate locally",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_INVALID,
    },
    {
	.name = NULL,
    },
};

/* A library error for fio's log (right after the failing call, on its
 * thread): the server's NFS status, or the errno and the library's sentence. */
static void report(const char *what, int rc)
{
	const char *why = rrr_last_error();
	uint32_t st = rrr_nfs3_last_status();

	if (rc < 0 && st != RRR_NFS3_OK)
		log_err("rrr: %s: NFS error %s\n", what, rrr_nfs3_strstat(st));
	else
		log_err("rrr: %s: %s%s%s\n", what, strerror(-rc), why ? ": " : "", why ? why : "");
}

/* A positive errno for fio from a library result (a negative errno; an NFS
 * error already is the matching errno). */
static int to_errno(int rc)
{
	return rc < 0 ? -rc : EIO;
}

/* The job's error: fio only counts a failure that a hook returns when the
 * job's error is set (td->error, which fio's exit status and the job's err=
 * report); returning an errno alone lets the job end "successfully" having
 * done nothing. Returns @err for the hook to return. */
static int job_error(struct thread_data *td, int err, const char *what)
{
	td_verror(td, err, what);
	return err;
}

static int parse_modes(struct rrr_fio_opts *o, enum reg_mode *reg, enum stable_mode *st)
{
	if (strcmp(o->transport, "rdma") && strcmp(o->transport, "tcp")) {
		log_err("rrr: transport=%s: use rdma or tcp\n", o->transport);
		return -EINVAL;
	}
	if (strcmp(o->provider, "soft") && strcmp(o->provider, "verbs")) {
		log_err("rrr: provider=%s: use soft or verbs\n", o->provider);
		return -EINVAL;
	}
	if (!strcmp(o->reg, "per-io") || !strcmp(o->reg, "per_io")) {
		*reg = REG_PER_IO;
	} else if (!strcmp(o->reg, "persistent")) {
		*reg = REG_PERSISTENT;
	} else if (!strcmp(o->reg, "bounce")) {
		*reg = REG_BOUNCE;
	} else {
		log_err("rrr: reg=%s: use per-io, bounce or persistent (UNSAFE)\n", o->reg);
		return -EINVAL;
	}
	if (*reg != REG_PER_IO && !strcmp(o->transport, "tcp")) {
		log_err("rrr: reg=%s applies to transport=rdma only\n", o->reg);
		return -EINVAL;
	}
	if (!strcmp(o->stable, "unstable")) {
		*st = STABLE_UNSTABLE;
	} else if (!strcmp(o->stable, "datasync")) {
		*st = STABLE_DATA;
	} else if (!strcmp(o->stable, "filesync")) {
		*st = STABLE_FILE;
	} else {
		log_err("rrr: stable=%s: use unstable, datasync or filesync\n", o->stable);
		return -EINVAL;
	}
	return 0;
}

static void rrr_fio_free(struct rrr_fio *e)
{
	for (unsigned k = e->nconn; k-- > 0;)
		rrr_clnt_destroy(e->clnt[k]);
	if (e->nfs)
		rrr_nfs3_umount(e->nfs);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e->pending);
	free(e->done);
	free(e->events);
	free(e);
}

/* Connect, mount, open the data connections. Runs in the job's process. */
static int rrr_fio_init(struct thread_data *td)
{
	struct rrr_fio_opts *o = td->eo;
	const char *port;
	struct rrr_nfs3_opts mo;
	struct rrr_clnt_opts co;
	enum reg_mode reg;
	enum stable_mode st;
	struct rrr_fio *e;
	pthread_condattr_t ca;
	int rc, err = ENOMEM;

	if (strcmp(fio_version_string, RRR_FIO_VERSION)) {
		log_err("rrr: this engine was built against %s's headers and cannot run in %s: "
			"rebuild it (make FIO_SRC=<that fio's source>)\n",
			RRR_FIO_VERSION, fio_version_string);
		td_verror(td, ENOEXEC, "rrr engine version");
		return ENOEXEC;
	}
	if (parse_modes(o, &reg, &st)) {
		td_verror(td, EINVAL, "rrr engine options");
		return EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return job_error(td, ENOMEM, "rrr engine init");
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	e->stable = st;
	e->cap = td->o.iodepth ? td->o.iodepth : 1;
	e->pending = calloc(e->cap, sizeof(*e->pending));
	e->done = calloc(e->cap, sizeof(*e->done));
	e->events = calloc(e->cap, sizeof(*e->events));
	if (!e->pending || !e->done || !e->events)
		goto fail;
	e->cred.flavor = RRR_AUTH_SYS;
	e->cred.sys.uid = getuid();
	e->cred.sys.gid = getgid();
	if (gethostname(e->cred.sys.machinename, sizeof(e->cred.sys.machinename) - 1) < 0)
		snprintf(e->cred.sys.machinename, sizeof(e->cred.sys.machinename), "rrr-fio");
	port = o->port ? o->port : (!strcmp(o->transport, "tcp") ? "2049" : "20049");

	rrr_nfs3_opts_init(&mo);
	mo.transport = o->transport;
	mo.provider = o->provider;
	mo.provider_opts = o->provider_opts;
	mo.host = o->host;
	mo.port = port;
	mo.mount_port = o->mount_port;
	mo.export_path = o->export_path;
	mo.timeout_ms = (int)o->timeout_ms;
	mo.uid = getuid();
	mo.gid = getgid();
	mo.no_remote_inv = o->no_remote_inv;
	if ((rc = rrr_nfs3_mount(&mo, &e->nfs))) {
		char what[300];

		snprintf(what, sizeof(what), "mount %s:%s over %s (NFS port %s, MOUNT port %s)",
			 o->host, o->export_path, o->transport, port,
			 o->mount_port ? o->mount_port : "-");
		report(what, rc);
		e->nfs = NULL;
		err = to_errno(rc);
		goto fail;
	}
	e->rsize = rrr_nfs3_rsize(e->nfs);
	e->wsize = rrr_nfs3_wsize(e->nfs);

	rrr_clnt_opts_init(&co);
	co.transport = o->transport;
	co.provider = o->provider;
	co.provider_opts = o->provider_opts;
	co.host = o->host;
	co.port = port;
	co.timeout_ms = (int)o->timeout_ms;
	co.no_remote_inv = o->no_remote_inv;
	co.max_requests = e->cap > 32 ? e->cap : 32;
	co.persistent_reg = reg == REG_PERSISTENT;
	co.bounce = reg == REG_BOUNCE;
	/* (reg=persistent: the library prints its UNSAFE warning itself) */
	for (unsigned k = 0; k < o->nconnect && k < MAX_CONN; k++) {
		if ((rc = rrr_clnt_create(&co, &e->clnt[k]))) {
			report("data connection", rc);
			err = to_errno(rc);
			goto fail;
		}
		e->nconn++;
		if (rrr_clnt_max_payload(e->clnt[k]) < e->rsize)
			e->rsize = rrr_clnt_max_payload(e->clnt[k]);
		if (rrr_clnt_max_payload(e->clnt[k]) < e->wsize)
			e->wsize = rrr_clnt_max_payload(e->clnt[k]);
	}
	td->io_ops_data = e;
	return 0;
fail:
	rrr_fio_free(e);
	td_verror(td, err, "rrr engine init");
	return err;
}

/* Wait until nothing is in flight (bounded). Called with e->lock held. */
static int drain_locked(struct rrr_fio *e)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += DRAIN_TIMEOUT_S;
	while (e->inflight)
		if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) == ETIMEDOUT)
			return -ETIMEDOUT;
	return 0;
}

static void rrr_fio_cleanup(struct thread_data *td)
{
	struct rrr_fio *e = td->io_ops_data;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	if (drain_locked(e))
		log_err("rrr: %u calls still in flight after %d s; cancelling them\n", e->inflight,
			DRAIN_TIMEOUT_S);
	pthread_mutex_unlock(&e->lock);
	rrr_fio_free(e);
	td->io_ops_data = NULL;
}

static int rrr_fio_io_u_init(struct thread_data *td, struct io_u *io_u)
{
	struct rrr_fio_req *r = calloc(1, sizeof(*r));

	(void)td;
	if (!r)
		return 1;
	r->io_u = io_u;
	io_u->engine_data = r;
	return 0;
}

static void rrr_fio_io_u_free(struct thread_data *td, struct io_u *io_u)
{
	(void)td;
	free(io_u->engine_data);
	io_u->engine_data = NULL;
}

/* --- files ------------------------------------------------------------------ */

/* Fill [from, to) of a file with a pattern, so a reading job finds its
 * range: WRITEs over the metadata connection, then COMMIT. */
static int fill_file(struct rrr_fio *e, const struct rrr_nfs3_fh *fh, uint64_t from, uint64_t to)
{
	size_t chunk = FILL_CHUNK;
	uint8_t *buf = malloc(chunk);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < chunk; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (uint64_t off = from; off < to && !rc; off += chunk) {
		size_t len = to - off < chunk ? (size_t)(to - off) : chunk;

		rc = rrr_nfs3_write_all(e->nfs, fh, off, buf, len, 8, 0, RRR_NFS3_UNSTABLE, NULL,
					NULL);
	}
	free(buf);
	return rc;
}

/* Look @name up in @dir; create it (a directory when @dir_wanted) if it is
 * missing and @create. */
static int lookup_or_create(struct rrr_fio *e, const struct rrr_nfs3_fh *dir, const char *name,
			    bool dir_wanted, bool create, struct rrr_nfs3_fh *out,
			    struct rrr_nfs3_fattr *attr)
{
	struct rrr_nfs3_fh parent = *dir, made; /* @out may be @dir */
	int rc = rrr_nfs3_lookup(e->nfs, &parent, name, out, attr);

	if (rc != -ENOENT || rrr_nfs3_last_status() != RRR_NFS3ERR_NOENT || !create)
		return rc;
	rc = dir_wanted ? rrr_nfs3_mkdir(e->nfs, &parent, name, 0755, &made)
			: rrr_nfs3_create(e->nfs, &parent, name, 0644, false, &made);
	if (rc == -EEXIST && rrr_nfs3_last_status() == RRR_NFS3ERR_EXIST)
		rc = 0; /* another job made it meanwhile */
	return rc ? rc : rrr_nfs3_lookup(e->nfs, &parent, name, out, attr);
}

/* fio's file name (directory/filename, '/'-separated) as a path under the
 * export: "." and empty components skipped, ".." refused. */
static int rrr_fio_open_file(struct thread_data *td, struct fio_file *f)
{
	struct rrr_fio *e = td->io_ops_data;
	struct rrr_fio_file *ff = f->engine_data;
	struct rrr_nfs3_fh dir;
	struct rrr_nfs3_fattr attr;
	char path[PATH_MAX], *save = NULL, *comp, *next;
	uint64_t need;
	int rc;

	if (!e)
		return job_error(td, EINVAL, "rrr open_file");
	if (ff)
		return 0;
	if (snprintf(path, sizeof(path), "%s", f->file_name) >= (int)sizeof(path)) {
		log_err("rrr: file name too long: %s\n", f->file_name);
		return job_error(td, ENAMETOOLONG, "rrr open_file");
	}
	ff = calloc(1, sizeof(*ff));
	if (!ff)
		return job_error(td, ENOMEM, "rrr open_file");
	dir = *rrr_nfs3_root(e->nfs);
	comp = strtok_r(path, "/", &save);
	rc = -ENOENT;
	while (comp) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, ".")) {
			comp = next;
			continue;
		}
		if (!strcmp(comp, "..")) {
			log_err("rrr: %s: '..' is not allowed in a path on the export\n",
				f->file_name);
			free(ff);
			return job_error(td, EINVAL, "rrr open_file");
		}
		rc = lookup_or_create(e, &dir, comp, next != NULL, true, next ? &dir : &ff->fh,
				      &attr);
		if (rc) {
			char what[PATH_MAX + 32];

			snprintf(what, sizeof(what), "open %s (at '%s')", f->file_name, comp);
			report(what, rc);
			free(ff);
			return job_error(td, to_errno(rc), "rrr open_file");
		}
		if (next && attr.type != RRR_NF3DIR) {
			log_err("rrr: open %s: '%s' is not a directory on the export\n",
				f->file_name, comp);
			free(ff);
			return job_error(td, ENOTDIR, "rrr open_file");
		}
		comp = next;
	}
	if (rc) {
		log_err("rrr: open %s: no file name\n", f->file_name);
		free(ff);
		return job_error(td, EINVAL, "rrr open_file");
	}
	if (attr.type != RRR_NF3REG) {
		log_err("rrr: open %s: not a regular file on the export\n", f->file_name);
		free(ff);
		return job_error(td, EISDIR, "rrr open_file");
	}
	/* a job that reads needs its range to exist */
	need = f->file_offset + f->io_size;
	if (td_read(td) && attr.size < need) {
		rc = fill_file(e, &ff->fh, attr.size, need);
		if (!rc)
			rc = rrr_nfs3_commit(e->nfs, &ff->fh, (uint8_t[8]){0});
		if (rc) {
			report("laying out the file for reading", rc);
			free(ff);
			return job_error(td, to_errno(rc), "rrr open_file");
		}
	}
	f->engine_data = ff;
	return 0;
}

static int commit_file(struct rrr_fio *e, struct rrr_fio_file *ff)
{
	uint8_t verf[8];
	int rc;

	if (!ff->dirty)
		return 0;
	rc = rrr_nfs3_commit(e->nfs, &ff->fh, verf);
	if (rc) {
		report("COMMIT", rc);
		return to_errno(rc);
	}
	ff->dirty = false;
	return 0;
}

static int rrr_fio_close_file(struct thread_data *td, struct fio_file *f)
{
	struct rrr_fio *e = td->io_ops_data;
	struct rrr_fio_file *ff = f->engine_data;
	int rc = 0;

	if (!ff)
		return 0;
	if (e) {
		pthread_mutex_lock(&e->lock);
		rc = drain_locked(e);
		pthread_mutex_unlock(&e->lock);
		if (rc)
			log_err("rrr: close %s: calls still in flight after %d s\n", f->file_name,
				DRAIN_TIMEOUT_S);
		rc = rc ? ETIMEDOUT : commit_file(e, ff);
	}
	free(ff);
	f->engine_data = NULL;
	/* fio ignores what close returns: the job's error carries it */
	return rc ? job_error(td, rc, "rrr close_file") : 0;
}

/* REMOVE on the export (fio's unlink=1): never a local unlink(). */
static int rrr_fio_unlink_file(struct thread_data *td, struct fio_file *f)
{
	struct rrr_fio *e = td->io_ops_data;
	struct rrr_nfs3_fh dir;
	char path[PATH_MAX], *slash;
	const char *name;
	int rc;

	if (!e)
		return 0; /* before init (fio's layout): nothing of ours exists */
	if (snprintf(path, sizeof(path), "%s", f->file_name) >= (int)sizeof(path))
		return ENAMETOOLONG;
	slash = strrchr(path, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		rc = rrr_nfs3_lookup_path(e->nfs, path, &dir, NULL);
	} else {
		name = path;
		dir = *rrr_nfs3_root(e->nfs);
		rc = 0;
	}
	if (!rc)
		rc = rrr_nfs3_remove(e->nfs, &dir, name);
	/* fio unlinks (unlink=1) before it closes: a file that is gone has
	 * nothing to COMMIT (its handle is stale now) */
	if (!rc && f->engine_data)
		((struct rrr_fio_file *)f->engine_data)->dirty = false;
	if (rc == -ENOENT)
		return ENOENT;
	return rc ? to_errno(rc) : 0;
}

/* The size of the file is what the job says (size=): fio must not stat a
 * local file of the same name. */
static int rrr_fio_get_file_size(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	f->real_file_size = -1ULL;
	fio_file_set_size_known(f);
	return 0;
}

/* --- I/O --------------------------------------------------------------------- */

/* Completion, on a connection's progress thread. */
static void done_cb(struct rrr_nfs3_io *io, int status, void *arg)
{
	struct rrr_fio_req *r = arg;
	struct rrr_fio *e = r->e;
	struct io_u *io_u = r->io_u;
	uint32_t count = io->done;

	if (status) {
		/* a transport error, or the errno of the NFS status
		 * (NFS3ERR_ACCES: EACCES), as the synchronous calls return it */
		io_u->error = (unsigned)-status;
	} else {
		if (count > io_u->xfer_buflen)
			count = (uint32_t)io_u->xfer_buflen;
		io_u->resid = io_u->xfer_buflen - count;
		io_u->error = 0;
	}
	pthread_mutex_lock(&e->lock);
	e->done[(e->done_head + e->ndone) % e->cap] = io_u;
	e->ndone++;
	e->inflight--;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static void prep_call(struct rrr_fio *e, struct rrr_fio_req *r, struct io_u *io_u)
{
	struct rrr_fio_file *ff = io_u->file->engine_data;
	struct rrr_nfs3_io *io = &r->io;

	r->e = e;
	r->iov.iov_base = io_u->xfer_buf;
	r->iov.iov_len = io_u->xfer_buflen;
	io->fh = ff->fh;
	io->offset = io_u->offset;
	io->iov = &r->iov;
	io->niov = 1;
	io->timeout_ms = 0;
	if (io_u->ddir == DDIR_WRITE) {
		io->op = RRR_NFS3_IO_WRITE;
		io->stable = e->stable == STABLE_FILE	 ? RRR_NFS3_FILE_SYNC
			     : e->stable == STABLE_DATA ? RRR_NFS3_DATA_SYNC
							: RRR_NFS3_UNSTABLE;
		if (e->stable == STABLE_UNSTABLE)
			ff->dirty = true;
	} else {
		io->op = RRR_NFS3_IO_READ;
	}
}

static int rrr_fio_commit(struct thread_data *td);

/* fio's fsync/fdatasync: everything queued goes out, completes, COMMIT. */
static enum fio_q_status sync_file(struct thread_data *td, struct rrr_fio *e, struct io_u *io_u)
{
	int rc;

	if (rrr_fio_commit(td))
		io_u->error = EIO;
	pthread_mutex_lock(&e->lock);
	rc = drain_locked(e);
	pthread_mutex_unlock(&e->lock);
	if (rc)
		io_u->error = ETIMEDOUT;
	else if (!io_u->error)
		io_u->error = (unsigned)commit_file(e, io_u->file->engine_data);
	return FIO_Q_COMPLETED;
}

static enum fio_q_status rrr_fio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct rrr_fio *e = td->io_ops_data;
	uint32_t max;

	fio_ro_check(td, io_u);
	if (ddir_sync(io_u->ddir))
		return sync_file(td, e, io_u);
	if (io_u->ddir != DDIR_READ && io_u->ddir != DDIR_WRITE) {
		log_err("rrr: %s is not supported (NFSv3 has no trim)\n", io_ddir_name(io_u->ddir));
		io_u->error = EOPNOTSUPP;
		return FIO_Q_COMPLETED;
	}
	max = io_u->ddir == DDIR_WRITE ? e->wsize : e->rsize;
	if (io_u->xfer_buflen > max) {
		log_err("rrr: %llu-byte %s is above the server's and transport's limit of %u "
			"bytes per call: use bs<=%u\n",
			io_u->xfer_buflen, io_ddir_name(io_u->ddir), max, max);
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (e->npending >= e->cap)
		return FIO_Q_BUSY;
	prep_call(e, io_u->engine_data, io_u);
	e->pending[e->npending++] = io_u;
	return FIO_Q_QUEUED;
}

/* Send everything queued since the last commit. A call the library
 * refuses completes at once with that error. */
static int rrr_fio_commit(struct thread_data *td)
{
	struct rrr_fio *e = td->io_ops_data;

	for (unsigned i = 0; i < e->npending; i++) {
		struct io_u *io_u = e->pending[i];
		struct rrr_fio_req *r = io_u->engine_data;
		struct rrr_clnt *cl = e->clnt[e->rr++ % e->nconn];
		int rc;

		pthread_mutex_lock(&e->lock);
		e->inflight++;
		pthread_mutex_unlock(&e->lock);
		rc = rrr_nfs3_io_submit_clnt(cl, &e->cred, &r->io, done_cb, r);
		if (rc) {
			report(io_u->ddir == DDIR_WRITE ? "WRITE" : "READ", rc);
			io_u->error = (unsigned)-rc;
			pthread_mutex_lock(&e->lock);
			e->inflight--;
			e->done[(e->done_head + e->ndone) % e->cap] = io_u;
			e->ndone++;
			pthread_mutex_unlock(&e->lock);
		}
	}
	e->npending = 0;
	return 0;
}

static int rrr_fio_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			     const struct timespec *t)
{
	struct rrr_fio *e = td->io_ops_data;
	struct timespec until;
	unsigned n = 0;

	if (t) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += t->tv_sec;
		until.tv_nsec += t->tv_nsec;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	if (max > e->cap)
		max = e->cap;
	pthread_mutex_lock(&e->lock);
	while (e->ndone < min && e->inflight) {
		if (t) {
			if (pthread_cond_timedwait(&e->cond, &e->lock, &until) == ETIMEDOUT)
				break;
		} else {
			pthread_cond_wait(&e->cond, &e->lock);
		}
	}
	while (n < max && e->ndone) {
		e->events[n++] = e->done[e->done_head];
		e->done_head = (e->done_head + 1) % e->cap;
		e->ndone--;
	}
	pthread_mutex_unlock(&e->lock);
	return (int)n;
}

static struct io_u *rrr_fio_event(struct thread_data *td, int event)
{
	struct rrr_fio *e = td->io_ops_data;

	return e->events[event];
}

/* What fio's dlopen() looks up (the only symbol this object exports). */
__attribute__((visibility("default"))) struct ioengine_ops ioengine;
struct ioengine_ops ioengine = {
    .name = "rrr",
    .version = FIO_IOOPS_VERSION,
    .flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_MEMALIGN,
    .init = rrr_fio_init,
    .queue = rrr_fio_queue,
    .commit = rrr_fio_commit,
    .getevents = rrr_fio_getevents,
    .event = rrr_fio_event,
    .cleanup = rrr_fio_cleanup,
    .open_file = rrr_fio_open_file,
    .close_file = rrr_fio_close_file,
    .unlink_file = rrr_fio_unlink_file,
    .get_file_size = rrr_fio_get_file_size,
    .io_u_init = rrr_fio_io_u_init,
    .io_u_free = rrr_fio_io_u_free,
    .options = options,
    .option_struct_size = sizeof(struct rrr_fio_opts),
};
