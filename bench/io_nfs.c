/* SPDX-License-Identifier: MIT */
/*
 * bench/io_nfs.c - the NFS side of rrr-bench io.
 *
 * Normal operation. Set-up spawns build/rrr-server on a fresh temporary
 * export with ephemeral RDMA and TCP ports (read back from its start-up
 * line), or uses a running server given on the command line; mounts the
 * export once with the NFSv3 client library and writes the benchmark file
 * (qd x size bytes, so every in-flight call has its own range). Each mode
 * then gets its own rrr_clnt connections, made on first use and kept for
 * the whole run, with the client options that select it (persistent_reg,
 * bounce, transport "tcp"): --nconnect's largest value of them, opened one
 * right after the other, so the server's round-robin hands consecutive
 * ones to different workers (as rrr_nfs3_mount does). A measured run keeps
 * @qd NFSv3 READ or WRITE calls in flight over the first @nconnect of
 * them, each submission on the next connection in turn (the library's
 * round-robin): the completion callback (on that connection's progress
 * thread) records the latency and resubmits the slot until the deadline;
 * the main thread waits on a condition variable. CPU is this process's
 * CPU clock plus the server's utime+stime.
 *
 * Page faults: minor+major faults of this process (getrusage) and of the
 * spawned server (/proc/PID/stat minflt, majflt) over the measured window
 * only, so connection set-up, buffer first touch and warm-up are outside
 * it. The latency sample array, the one thing this file grows during a
 * run, is sized from the rate seen so far and touched before the window.
 *
 * WRITEs are UNSTABLE without COMMIT; READs come from the server's page
 * cache. The payload buffers are page-aligned and owned by the slots.
 *
 * Recovery. A failed call (negative status or an NFS error) stops the run:
 * no more submissions, the in-flight ones drain (bounded by the call
 * timeout), and the first error is returned. Teardown destroys every
 * client (which invalidates their MRs), unmounts, stops the server
 * (SIGTERM, SIGKILL after 5 s) and removes the temporary export.
 */
#include "io_nfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rrr/wait.h>
#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/provider.h>

#define NMODES_NFS 5
#define MAX_QD	   IO_MAX_CONNS /* one call in flight per connection at most (scale) */
#define BENCH_FILE "rrr-bench-io.dat"

struct io_nfs {
	struct io_nfs_cfg cfg;
	char dir[PATH_MAX]; /* temporary directory ("" if not ours) */
	char export_dir[PATH_MAX + 16];
	pid_t server; /* 0 if not ours */
	char port[16], tcp_port[16], mount_port[16];
	char log[PATH_MAX + 16]; /* server output */
	const char *host;
	struct rrr_nfs3_fh fh;	  /* the benchmark file */
	struct rrr_rpc_cred cred; /* AUTH_SYS as this process (servers refuse AUTH_NONE) */
	bool created;		  /* ... exists on the server */
	uint32_t rsize, wsize;	  /* the server's limits (FSINFO, capped at 1 MiB) */
	struct rrr_clnt **clnt[NMODES_NFS]; /* max_nconnect each, made at first use */
	uint8_t *bufs; /* file_size bytes: qd payload buffers of size */
};

static __thread char g_err[512];

const char *rrr__bench_io_nfs_error(void)
{
	return g_err[0] ? g_err : NULL;
}

static int set_err(int rc, const char *fmt, const char *what)
{
	const char *e = rrr_last_error();

	/* truncation of an error message is fine */
	if (snprintf(g_err, sizeof(g_err), "%s: %s%s%s", fmt ? fmt : "", what ? what : "",
		     e ? ": " : "", e ? e : "") < 0)
		g_err[0] = '\0';
	return rc;
}

/* Connections per mode. */
static unsigned nconn_of(const struct io_nfs *n)
{
	return n->cfg.max_nconnect ? n->cfg.max_nconnect : 1;
}

/* --- the server ------------------------------------------------------------ */

static void stop_server(struct io_nfs *n)
{
	int st;

	if (n->server <= 0)
		return;
	kill(n->server, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(n->server, &st, WNOHANG) == n->server) {
			n->server = 0;
			return;
		}
		usleep(10000);
	}
	kill(n->server, SIGKILL);
	waitpid(n->server, &st, 0);
	n->server = 0;
}

/* Start the server on @n->dir with ephemeral ports: it writes them to a
 * port file once it listens. Its output goes to a log file in the export's
 * parent (shown on failure). */
static int spawn_server(struct io_nfs *n)
{
	char path[PATH_MAX], pfile[PATH_MAX + 16], state[PATH_MAX + 16], exp[PATH_MAX + 16];
	unsigned rd, mt;
	int rc;

	if ((rc = rrr__bench_find_server(n->cfg.server_path, path, sizeof(path))))
		return set_err(rc, "rrr-server not found (build it, or pass --server PATH)", NULL);
	snprintf(pfile, sizeof(pfile), "%s/ports", n->dir);
	snprintf(state, sizeof(state), "%s/state", n->dir);
	snprintf(exp, sizeof(exp), "%s/export", n->dir);
	snprintf(n->log, sizeof(n->log), "%s/server.log", n->dir);
	if (mkdir(state, 0700) || mkdir(exp, 0755))
		return set_err(-errno, "mkdir", n->dir);
	n->server = fork();
	if (n->server < 0) {
		n->server = 0;
		return set_err(-errno, "fork", NULL);
	}
	if (!n->server) {
		const char *av[32];
		int k, fd = open(n->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (n->cfg.server_nofile) {
			struct rlimit rl;

			if (!getrlimit(RLIMIT_NOFILE, &rl)) {
				rl.rlim_cur = n->cfg.server_nofile < rl.rlim_max ? n->cfg.server_nofile
										 : rl.rlim_max;
				setrlimit(RLIMIT_NOFILE, &rl);
			}
		}
		k = rrr__bench_server_argv(av, path, exp, state, "0", "0", pfile);
		av[k++] = "--provider";
		av[k++] = n->cfg.provider;
		if (n->cfg.provider_opts) {
			av[k++] = "--provider-opts";
			av[k++] = n->cfg.provider_opts;
		}
		if (n->cfg.wait) {
			av[k++] = "--wait";
			av[k++] = n->cfg.wait;
		}
		if (n->cfg.spin_us) {
			av[k++] = "--spin-us";
			av[k++] = n->cfg.spin_us;
		}
		av[k] = NULL;
		execv(path, (char *const *)av);
		_exit(127);
	}
	rc = rrr__bench_server_ports(n->server, pfile, 15, &rd, &mt);
	if (rc == 0) {
		snprintf(n->port, sizeof(n->port), "%u", rd);
		snprintf(n->tcp_port, sizeof(n->tcp_port), "%u", mt);
		snprintf(n->mount_port, sizeof(n->mount_port), "%u", mt);
		return 0;
	}
	if (rc == -ECHILD)
		n->server = 0;
	stop_server(n);
	{
		char logtxt[400] = "";
		FILE *f = fopen(n->log, "r");

		if (f) {
			size_t k = fread(logtxt, 1, sizeof(logtxt) - 1, f);

			logtxt[k] = '\0';
			fclose(f);
		}
		if (snprintf(g_err, sizeof(g_err), "%s did not start: %s", path, logtxt) < 0)
			g_err[0] = '\0';
	}
	return -ECONNREFUSED;
}

/* --- set-up ------------------------------------------------------------------ */

int rrr__bench_io_nfs_setup(const struct io_nfs_cfg *cfg, struct io_nfs **out)
{
	struct rrr_nfs3_opts mo;
	struct rrr_nfs3 *m = NULL;
	struct io_nfs *n;
	uint8_t *data = NULL;
	int rc;

	g_err[0] = '\0';
	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->cfg = *cfg;
	n->cred.flavor = RRR_AUTH_SYS;
	n->cred.sys.uid = getuid();
	n->cred.sys.gid = getgid();
	if (gethostname(n->cred.sys.machinename, sizeof(n->cred.sys.machinename) - 1) < 0)
		snprintf(n->cred.sys.machinename, sizeof(n->cred.sys.machinename), "rrr-bench");
	if (cfg->host) {
		n->host = cfg->host;
		snprintf(n->port, sizeof(n->port), "%s", cfg->port ? cfg->port : "20049");
		snprintf(n->mount_port, sizeof(n->mount_port), "%s",
			 cfg->mount_port ? cfg->mount_port : "20048");
		snprintf(n->tcp_port, sizeof(n->tcp_port), "%s",
			 cfg->tcp_port ? cfg->tcp_port : n->mount_port);
	} else {
		snprintf(n->dir, sizeof(n->dir), "/tmp/rrr-bench-io.XXXXXX");
		if (!mkdtemp(n->dir)) {
			rc = -errno;
			n->dir[0] = '\0';
			set_err(rc, "mkdtemp", NULL);
			goto fail;
		}
		n->host = "127.0.0.1";
		snprintf(n->export_dir, sizeof(n->export_dir), "%s/export", n->dir);
		if ((rc = spawn_server(n)))
			goto fail;
	}

	rrr_nfs3_opts_init(&mo);
	mo.transport = "rdma";
	mo.provider = cfg->provider;
	mo.provider_opts = cfg->provider_opts;
	mo.host = n->host;
	mo.port = n->port;
	mo.mount_port = n->mount_port;
	mo.export_path = cfg->host ? cfg->export_path : "/";
	mo.uid = getuid();
	mo.gid = getgid();
	mo.no_remote_inv = cfg->no_remote_inv;
	if ((rc = rrr_nfs3_mount(&mo, &m))) {
		set_err(rc < 0 ? rc : -EIO, "mount", mo.export_path);
		rc = rc < 0 ? rc : -EIO;
		goto fail;
	}
	rc = rrr_nfs3_create(m, rrr_nfs3_root(m), BENCH_FILE, 0644, false, &n->fh);
	if (rc) {
		set_err(rc < 0 ? rc : -EIO, "CREATE", rrr_nfs3_last_status() ? rrr_nfs3_strstat(rrr_nfs3_last_status()) : "");
		rc = rc < 0 ? rc : -EIO;
		goto fail;
	}
	data = aligned_alloc(4096, (cfg->file_size + 4095) / 4096 * 4096);
	if (!data) {
		rc = -ENOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < cfg->file_size; i++)
		data[i] = (uint8_t)(i * 131 + 7);
	rc = rrr_nfs3_write_all(m, &n->fh, 0, data, cfg->file_size, 8, 0, RRR_NFS3_FILE_SYNC, NULL,
				NULL);
	free(data);
	if (rc) {
		set_err(rc < 0 ? rc : -EIO, "writing the benchmark file",
			rrr_nfs3_last_status() ? rrr_nfs3_strstat(rrr_nfs3_last_status()) : "");
		rc = rc < 0 ? rc : -EIO;
		goto fail;
	}
	n->rsize = rrr_nfs3_rsize(m);
	n->wsize = rrr_nfs3_wsize(m);
	rrr_nfs3_umount(m);
	m = NULL;
	n->created = true;
	*out = n;
	return 0;
fail:
	if (m)
		rrr_nfs3_umount(m);
	rrr__bench_io_nfs_teardown(n);
	return rc;
}

void rrr__bench_io_nfs_teardown(struct io_nfs *n)
{
	if (!n)
		return;
	for (int i = 0; i < NMODES_NFS; i++) {
		for (unsigned k = n->clnt[i] ? nconn_of(n) : 0; k-- > 0;)
			if (n->clnt[i][k])
				rrr_clnt_destroy(n->clnt[i][k]);
		free(n->clnt[i]);
	}
	if (n->created && !n->dir[0]) {
		/* someone else's server: remove the benchmark file */
		struct rrr_nfs3_opts mo;
		struct rrr_nfs3 *m;

		rrr_nfs3_opts_init(&mo);
		mo.provider = n->cfg.provider;
		mo.provider_opts = n->cfg.provider_opts;
		mo.host = n->host;
		mo.port = n->port;
		mo.mount_port = n->mount_port;
		mo.export_path = n->cfg.export_path;
		mo.uid = getuid();
		mo.gid = getgid();
		mo.no_remote_inv = n->cfg.no_remote_inv;
		if (!rrr_nfs3_mount(&mo, &m)) {
			rrr_nfs3_remove(m, rrr_nfs3_root(m), BENCH_FILE);
			rrr_nfs3_umount(m);
		}
	}
	stop_server(n);
	if (n->dir[0])
		rrr__bench_rm_tree(n->dir);
	free(n->bufs);
	free(n);
}

/* --- a measured run ---------------------------------------------------------- */

struct run;

struct slot {
	struct rrr_nfs3_io io;
	struct iovec iov;
	uint64_t t0;
	unsigned idx;
	struct run *run;
};

struct run {
	struct io_nfs *n;
	struct rrr_clnt **clnt; /* nconn connections */
	unsigned nconn, rr;	/* round-robin cursor, under lock */
	bool write;
	uint32_t size;
	unsigned qd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight;
	bool stop, measuring;
	int err;
	char msg[160]; /* what the first failed call said */
	uint64_t ops, next_off;
	uint64_t completed; /* every completion, warm-up included */
	struct rrr__bench_samples lat;
	struct slot slots[]; /* qd */
};

static void done_cb(struct rrr_nfs3_io *io, int status, void *arg);

/* A slot's turn, under run->lock: it counts as in flight and gets the
 * next connection. The submission itself (submit) runs outside the lock:
 * it encodes and may send, and the progress threads that resubmit from
 * their completions must not wait on each other for that. */
static struct rrr_clnt *take_turn(struct run *r)
{
	r->inflight++;
	return r->clnt[r->rr++ % r->nconn];
}

/* Fill and submit slot @s on @c (its turn taken): 0, or the submission's
 * error, after which the caller gives the turn back (give_back). */
static int submit(struct run *r, struct slot *s, struct rrr_clnt *c)
{
	struct rrr_nfs3_io *io = &s->io;

	io->op = r->write ? RRR_NFS3_IO_WRITE : RRR_NFS3_IO_READ;
	io->fh = r->n->fh;
	io->offset = (uint64_t)s->idx * r->size;
	io->iov = &s->iov;
	io->niov = 1;
	io->stable = RRR_NFS3_UNSTABLE;
	s->t0 = rrr__bench_now_ns();
	return rrr_nfs3_io_submit_clnt(c, &r->n->cred, io, done_cb, s);
}

/* A submission failed (its callback never runs): the run stops. */
static void give_back(struct run *r, int rc)
{
	pthread_mutex_lock(&r->lock);
	r->inflight--;
	if (!r->err)
		r->err = rc;
	r->stop = true;
	if (!r->inflight)
		pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void done_cb(struct rrr_nfs3_io *io, int status, void *arg)
{
	struct slot *s = arg;
	struct run *r = s->run;
	uint64_t now = rrr__bench_now_ns();
	uint32_t nfsst = io->nfs_status;
	struct rrr_clnt *c;
	int rc;

	pthread_mutex_lock(&r->lock);
	r->inflight--;
	r->completed++;
	if (status && nfsst)
		status = -EIO;
	if (!status && !r->write && io->done != r->size)
		status = -EIO; /* short read: the file was set up for this size */
	if (status) {
		if (!r->err) {
			/* recorded here (progress thread), reported by the runner */
			r->err = status;
			if (status == -EIO && nfsst)
				snprintf(r->msg, sizeof(r->msg), "NFS error %s",
					 rrr_nfs3_strstat(nfsst));
			else if (status == -EIO)
				snprintf(r->msg, sizeof(r->msg),
					 "short READ: %u of %u bytes at offset %llu",
					 io->done, r->size, (unsigned long long)io->offset);
			else if (status == -EPROTO)
				snprintf(r->msg, sizeof(r->msg), "RPC error, stat 0x%x",
					 io->rpc_stat);
		}
		r->stop = true;
	} else if (r->measuring) {
		rrr__bench_samples_add(&r->lat, (double)(now - s->t0));
		r->ops++;
	}
	c = r->stop ? NULL : take_turn(r);
	if (!r->inflight)
		pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (c && (rc = submit(r, s, c)))
		give_back(r, rc);
}

/* The connections of @mode: all max_nconnect of them made at first use,
 * one right after the other. */
static int get_clnts(struct io_nfs *n, enum io_mode mode, unsigned qd, struct rrr_clnt ***out)
{
	unsigned nc = nconn_of(n);
	struct rrr_clnt_opts o;
	int rc;

	if (n->clnt[mode]) {
		*out = n->clnt[mode];
		return 0;
	}
	n->clnt[mode] = calloc(nc, sizeof(*n->clnt[mode]));
	if (!n->clnt[mode])
		return -ENOMEM;
	rrr_clnt_opts_init(&o);
	o.host = n->host;
	o.provider = n->cfg.provider;
	o.provider_opts = n->cfg.provider_opts;
	/* credits: the whole depth on few connections (io), the default on
	 * many (scale: about one call each) */
	o.max_requests = nc > IO_MAX_NCONNECT || qd <= 32 ? 32 : qd;
	o.no_remote_inv = n->cfg.no_remote_inv;
	o.group = n->cfg.group;
	if (n->cfg.wait)
		(void)rrr_wait_mode_parse(n->cfg.wait, &o.wait_mode); /* checked by io.c */
	if (n->cfg.spin_us)
		o.spin_us = (uint32_t)strtoul(n->cfg.spin_us, NULL, 10);
	if (mode == IO_MODE_NFS_TCP) {
		o.transport = "tcp";
		o.port = n->tcp_port;
	} else {
		o.transport = "rdma";
		o.port = n->port;
		o.persistent_reg = mode == IO_MODE_PERSISTENT;
		if (mode == IO_MODE_RDMA_CHUNKS)
			o.inline_send = o.inline_recv = 4096;
		o.bounce = mode == IO_MODE_BOUNCE;
	}
	for (unsigned k = 0; k < nc; k++) {
		if (n->cfg.src_addrs)
			rrr__bench_src_addr(k % n->cfg.src_addrs);
		rc = rrr_clnt_create(&o, &n->clnt[mode][k]);
		if (rc) {
			while (k-- > 0)
				rrr_clnt_destroy(n->clnt[mode][k]);
			free(n->clnt[mode]);
			n->clnt[mode] = NULL;
			return set_err(rc, "connect", o.transport);
		}
	}
	*out = n->clnt[mode];
	return 0;
}

int rrr__bench_io_nfs_connect(struct io_nfs *n, enum io_mode mode, unsigned qd)
{
	struct rrr_clnt **cl;

	if (!n || mode >= NMODES_NFS)
		return -EINVAL;
	g_err[0] = '\0';
	return get_clnts(n, mode, qd, &cl);
}

int rrr__bench_io_nfs_server_pid(const struct io_nfs *n)
{
	return n && n->server > 0 ? (int)n->server : 0;
}

/* Minor and major faults of another process from /proc/PID/stat (fields
 * 10 and 12). -errno if unreadable. */
static int pid_faults(int pid, uint64_t *minflt, uint64_t *majflt)
{
	char buf[1024];
	const char *p = rrr__bench_pid_stat(pid, buf, sizeof(buf));
	unsigned long long mi = 0, ma = 0;

	if (!p)
		return -errno;
	if (sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &mi, &ma) != 2)
		return -EINVAL;
	*minflt = mi;
	*majflt = ma;
	return 0;
}

static void self_faults(uint64_t *minflt, uint64_t *majflt)
{
	struct rusage ru;

	memset(&ru, 0, sizeof(ru));
	getrusage(RUSAGE_SELF, &ru);
	*minflt = (uint64_t)ru.ru_minflt;
	*majflt = (uint64_t)ru.ru_majflt;
}

/* A latency sample array of @cap, faulted in now rather than inside the
 * measured window. */
static int lat_alloc(struct rrr__bench_samples *s, size_t cap)
{
	int rc = rrr__bench_samples_init(s, cap);

	if (!rc)
		memset(s->v, 0, cap * sizeof(*s->v));
	return rc;
}

static void stats_sum(struct rrr_clnt **cl, unsigned nc, struct rrr_xprt_stats *sum)
{
	struct rrr_xprt_stats st;

	memset(sum, 0, sizeof(*sum));
	for (unsigned k = 0; k < nc; k++) {
		rrr_clnt_stats(cl[k], &st);
		sum->registrations += st.registrations;
		sum->local_inv += st.local_inv;
		sum->remote_inv += st.remote_inv;
	}
}

int rrr__bench_io_nfs_run(struct io_nfs *n, enum io_mode mode, bool write, uint64_t size,
			  unsigned qd, unsigned nconnect, double seconds, double warmup,
			  struct io_result *out)
{
	struct rrr_xprt_stats st0, st1;
	struct rrr_clnt **cl = NULL;
	struct run *r;
	uint64_t t0 = 0, t1, c0 = 0, c1, cmin0, cmaj0, cmin1, cmaj1;
	uint64_t smin0 = 0, smaj0 = 0, smin1 = 0, smaj1 = 0;
	int64_t s0 = -1, s1 = -1;
	bool sflt = false;
	size_t cap;
	int rc;

	if (!n || mode >= NMODES_NFS || !qd || qd > MAX_QD || !size || size > RRR_NFS3_MAX_DATA ||
	    size * qd > n->cfg.file_size || !nconnect ||
	    nconnect > (n->cfg.max_nconnect ? n->cfg.max_nconnect : 1))
		return -EINVAL;
	g_err[0] = '\0';
	if (size > (write ? n->wsize : n->rsize)) {
		snprintf(g_err, sizeof(g_err), "the server takes at most %u bytes per %s (FSINFO)",
			 write ? n->wsize : n->rsize, write ? "WRITE" : "READ");
		return -EMSGSIZE;
	}
	if (!n->bufs) {
		/* one buffer per in-flight call: qd x size <= file_size */
		size_t len = (n->cfg.file_size + 4095) / 4096 * 4096;

		n->bufs = aligned_alloc(4096, len);
		if (!n->bufs)
			return -ENOMEM;
		memset(n->bufs, 0x6b, len);
	}
	if ((rc = get_clnts(n, mode, qd, &cl)))
		return rc;
	r = calloc(1, sizeof(*r) + (size_t)qd * sizeof(r->slots[0]));
	if (!r)
		return -ENOMEM;
	r->n = n;
	r->clnt = cl;
	r->nconn = nconnect;
	r->write = write;
	r->size = (uint32_t)size;
	r->qd = qd;
	/* room for this window's latencies: 1.5 x the rate of earlier rounds
	 * (or of the warm-up, below), at least 64 Ki samples */
	cap = 1u << 16;
	if (out->ops && out->wall_s > 0)
		cap = (size_t)((double)out->ops / out->wall_s * seconds * 1.5) + 4096;
	if (cap < (1u << 16))
		cap = 1u << 16;
	if ((rc = lat_alloc(&r->lat, cap))) {
		free(r);
		return rc;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	for (unsigned i = 0; i < qd; i++) {
		r->slots[i].idx = i;
		r->slots[i].run = r;
		r->slots[i].iov.iov_base = n->bufs + (size_t)i * size;
		r->slots[i].iov.iov_len = size;
	}

	pthread_mutex_lock(&r->lock);
	r->measuring = warmup <= 0;
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < qd; i++) {
		struct rrr_clnt *c;

		pthread_mutex_lock(&r->lock);
		c = r->stop ? NULL : take_turn(r);
		pthread_mutex_unlock(&r->lock);
		if (!c)
			break;
		if ((rc = submit(r, &r->slots[i], c)))
			give_back(r, rc);
	}
	if (warmup > 0) {
		uint64_t w0 = rrr__bench_now_ns(), w1;
		struct rrr__bench_samples fresh;
		double wrate;

		usleep((useconds_t)(warmup * 1e6));
		pthread_mutex_lock(&r->lock);
		w1 = rrr__bench_now_ns();
		wrate = (double)r->completed / ((double)(w1 - w0) / 1e9);
		pthread_mutex_unlock(&r->lock);
		if (!out->ops && wrate * seconds * 1.5 + 4096 > (double)cap &&
		    !lat_alloc(&fresh, (size_t)(wrate * seconds * 1.5) + 4096)) {
			/* nothing was recorded yet (not measuring): just swap */
			pthread_mutex_lock(&r->lock);
			rrr__bench_samples_free(&r->lat);
			r->lat = fresh;
			pthread_mutex_unlock(&r->lock);
		}
		pthread_mutex_lock(&r->lock);
		r->measuring = true;
		pthread_mutex_unlock(&r->lock);
	}
	stats_sum(cl, nconnect, &st0);
	t0 = rrr__bench_now_ns();
	c0 = rrr__bench_process_cpu_ns();
	if (n->server > 0) {
		s0 = rrr__bench_pid_cpu_ns(n->server);
		sflt = !pid_faults(n->server, &smin0, &smaj0);
	}
	pthread_mutex_lock(&r->lock);
	r->ops = 0;
	rrr__bench_samples_reset(&r->lat);
	pthread_mutex_unlock(&r->lock);
	self_faults(&cmin0, &cmaj0);
	usleep((useconds_t)(seconds * 1e6));
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	self_faults(&cmin1, &cmaj1);
	t1 = rrr__bench_now_ns();
	c1 = rrr__bench_process_cpu_ns();
	stats_sum(cl, nconnect, &st1);
	if (n->server > 0) {
		s1 = rrr__bench_pid_cpu_ns(n->server);
		sflt = sflt && !pid_faults(n->server, &smin1, &smaj1);
	}
	{
		uint64_t ops = r->ops;

		while (r->inflight)
			pthread_cond_wait(&r->cond, &r->lock);
		r->ops = ops; /* the drained tail ran after t1 */
	}
	pthread_mutex_unlock(&r->lock);

	rc = r->err;
	g_err[0] = '\0';
	if (rc && r->msg[0])
		snprintf(g_err, sizeof(g_err), "%s", r->msg);
	if (!rc) {
		out->ops += r->ops;
		out->wall_s += (double)(t1 - t0) / 1e9;
		out->cpu_ns += (double)(c1 - c0);
		out->server_cpu_counted = s0 >= 0 && s1 >= 0;
		if (out->server_cpu_counted)
			out->cpu_ns += (double)(s1 - s0);
		out->registrations += st1.registrations - st0.registrations;
		out->local_inv += st1.local_inv - st0.local_inv;
		out->remote_inv += st1.remote_inv - st0.remote_inv;
		out->faults_counted = true;
		out->client_minflt += cmin1 - cmin0;
		out->client_majflt += cmaj1 - cmaj0;
		out->server_faults_counted = sflt;
		if (sflt) {
			out->server_minflt += smin1 - smin0;
			out->server_majflt += smaj1 - smaj0;
		}
		rc = rrr__bench_samples_merge(&out->lat_ns, &r->lat);
	}
	rrr__bench_samples_free(&r->lat);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return rc;
}
