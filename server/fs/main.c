/* SPDX-License-Identifier: MIT */
/*
 * server/fs/main.c - rrr-server: a sample NFSv3 file server over
 * RPC-over-RDMA (soft or verbs provider) and plain TCP.
 *
 * Normal operation: read the config file (--config, config.c) and the
 * flags (which override the file, key by key), open the exports (fh.c;
 * one or several [export DIR] sections, exports.c), register the
 * NFS (100003 v3) and MOUNT (100005 v3) programs with the server library,
 * listen for RPC-over-RDMA on --port (20049) and for ONC RPC over TCP on
 * --mount-port (MOUNT and NFS, for the kernel client's mountproto=tcp and
 * for libnfs tools) and on --tcp-port (NFS's own 2049 by default, used when
 * it is free), answer SM_NOTIFY over UDP on the mount port number
 * (nsm_udp.c), register the programs with the local rpcbind (rpcb.c) so a
 * client finds them with no port options, then run worker threads until
 * SIGTERM or SIGINT, and unregister. With --port-file the bound ports are written to
 * a file once listening (port 0 picks free ports; tests and the demo use
 * this). The NFS and MOUNT tables go through access.c (allow lists,
 * read-only); a control thread (ctl.c) re-reads the config on SIGHUP and
 * answers `rrr-server --stats` on a unix socket with the live counters.
 *
 * Shutdown and recovery: the signal handler only calls rrr_svc_stop()
 * (async-signal-safe); rrr_svc_run() returns after in-flight requests are
 * answered, then the final counters are printed to stderr and everything
 * is released. A config file that fails on SIGHUP changes nothing (the
 * running settings stay, the log says which line is wrong); keys that
 * need a restart (listeners, provider, threads, export) are logged and
 * ignored until then. Every start draws a new write verifier so clients re-send
 * uncommitted UNSTABLE writes; file handles stay valid (fh.c).
 *
 * Memory: the mmap threshold of malloc is fixed at 128 KiB at start. A
 * connection's buffers (receive and send regions, contexts: megabytes)
 * are large allocations; with glibc's dynamic threshold, the first of them
 * freed raises the threshold, later ones come from the heap, and heaps
 * fragmented by many connections come and gone are not given back: under
 * the soak (rrr-bench soak, connections dropped at 200 ppm) 16 clients
 * took the server from 120 MiB to 630 MiB in 60 s over 400 reconnects;
 * with the fixed threshold it stays at 120-140 MiB (docs/reliability.md).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <syslog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/wait.h>
#include <rrr/provider.h>
#include <rrr/server.h>

#include "server/fs/config.h"
#include "server/fs/drc.h"
#include "server/fs/fs.h"
#include "server/fs/nlm.h"
#include "server/fs/rpcb.h"

static struct rrr_svc *g_svc;
static struct fs_export *g_ex[FS_MAX_EXPORTS]; /* in config order, also in exports.c */
static unsigned g_nex;
static struct fs_conf g_conf;    /* running settings (the control thread swaps the live keys) */
static struct fs_conf g_cli;     /* what the command line set: wins over the file */
static const char *g_config;     /* --config FILE, or NULL */

static void on_signal(int sig)
{
	(void)sig;
	if (g_svc)
		rrr_svc_stop(g_svc);
}

/* The O_DIRECT threshold of nfs3_proc.c's WRITEs (see "Direct writes" there). */
#define FS_DIRECT_WRITE_DEFAULT (256u << 10)

static uint32_t fs_direct_write(const struct fs_conf *cf)
{
	return (cf->set & (1ull << FS_K_DIRECT_WRITE)) ? cf->direct_write : FS_DIRECT_WRITE_DEFAULT;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-server --export DIR [options]\n"
		"       rrr-server --config FILE [options]\n"
		"       rrr-server --stats [--stats-socket PATH | --config FILE | --state-dir DIR]\n"
		"\n"
		"Serve DIR over NFSv3 (RFC 1813) with RPC-over-RDMA (RFC 8166/8267) and TCP.\n"
		"\n"
		"  --config FILE         read settings from FILE (rrr-server.conf(5)); the flags\n"
		"                        below override it; SIGHUP re-reads it\n"
		"  --check-config        check the config and the flags, then exit (0: valid)\n"
		"  --export DIR          directory to export (required, here or in the config;\n"
		"                        more exports: more [export DIR] sections in the config)\n"
		"  --name PATH           path clients mount (default: DIR's real path; \"/\" works\n"
		"                        too while there is one export)\n"
		"  --allow LIST          client addresses/networks allowed (e.g. \"10.0.0.0/8 ::1\";\n"
		"                        default: every client)\n"
		"  --provider NAME       soft (user-space iWARP over TCP, default) or verbs\n"
		"  --provider-opts STR   provider options (e.g. dev=rxe0 for verbs)\n"
		"  --listen LIST         addresses to listen on, up to 8 (default: all)\n"
		"  --port N              NFS over RDMA port (default 20049; 0 = pick one)\n"
		"  --mount-port N        MOUNT + NFS over TCP port (default 20048; 0 = pick one)\n"
		"  --tcp-port N          NFS + MOUNT over TCP port (default 2049 when free;\n"
		"                        none: only the mount port)\n"
		"  --no-rpcbind          do not register with the local rpcbind\n"
		"  --grace N             lock grace period after a restart, seconds (default 90)\n"
		"  --no-rdma             serve TCP only\n"
		"  --threads N           worker threads (default: one per CPU)\n"
		"  --state-dir DIR       where the file handle key lives (default\n"
		"                        /var/lib/rrr-server as root, else ~/.rrr-server)\n"
		"  --read-only           refuse every modification (NFS3ERR_ROFS)\n"
		"  --no-root-squash      AUTH_SYS uid 0 acts as root (default: as --anon-uid)\n"
		"  --anon-uid N, --anon-gid N  identity of squashed and AUTH_NONE callers\n"
		"                        (default 65534)\n"
		"  --port-file FILE      write \"rdma=N mount=N tcp=N\" there once listening\n"
		"  --log-level LEVEL     error, warning, notice (default), info or debug\n"
		"  --verbose             log mounts (--log-level info)\n"
		"  --stats               print the counters of the running server and exit\n"
		"  --stats-socket PATH   its unix socket (default STATE_DIR/stats.sock;\n"
		"                        \"none\": no socket)\n"
		"  --wait MODE           how workers wait for requests: adaptive (default: spin\n"
		"                        up to --spin-us while requests stream in, else sleep),\n"
		"                        event (always sleep) or spin (always spin first)\n"
		"  --spin-us N           spin budget per wait in microseconds (default 50)\n"
		"  --drc-entries N       duplicate request cache entries for the NFS procedures\n"
		"                        that must not run twice (default 1024, 0 = off)\n"
		"  --direct-write N      WRITEs of new data of N bytes or more at aligned offsets go\n"
		"                        to the disk with O_DIRECT, not through the page cache\n"
		"                        (default 262144; 0 = never)\n"
		"  --max-conns N         connections at once, RDMA + TCP (default: from the fd\n"
		"                        limit, ulimit -n - 128 - max-setup, of which a soft-RDMA\n"
		"                        connection takes 2 and a TCP one 1; less when memory\n"
		"                        holds fewer; logged at start; 0 = no limit)\n"
		"  --max-conns-per-addr N  connections from one IP address (default 128; 0 = no limit)\n"
		"  --idle-timeout MS     close connections without traffic for MS (default 360000;\n"
		"                        0 = never)\n"
		"  --setup-timeout MS    RDMA connection set-up must finish within MS (default 10000)\n"
		"  --max-setup N         RDMA connections in set-up at once; the oldest is pushed\n"
		"                        out (default 256)\n"
		"  --help                this text\n"
		"\n"
		"The export flags (--export, --name, --allow, --read-only, --no-root-squash,\n"
		"--anon-uid, --anon-gid) set the config's first export.\n"
		"Kernel client:  mount -t nfs -o vers=3 SERVER:/PATH /mnt                (TCP)\n"
		"                mount -t nfs -o vers=3,proto=rdma,port=20049 SERVER:/PATH /mnt\n"
		"Stops cleanly on SIGTERM or SIGINT and prints its counters; SIGHUP re-reads\n"
		"--config (allow, read-only, log-level change live).\n"
		"Exit status: 0 clean stop, 1 runtime failure, 2 usage or config error.\n");
}

/* The sum of one counter over every export. */
static uint64_t ex_sum(size_t off)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < g_nex; i++)
		n += atomic_load((atomic_uint_fast64_t *)((char *)g_ex[i] + off));
	return n;
}
#define EX_SUM(field) ((unsigned long long)ex_sum(offsetof(struct fs_export, field)))

static void print_counters(FILE *f, const char *title)
{
	struct rrr_xprt_stats st;
	memset(&st, 0, sizeof(st));
	rrr_svc_stats(g_svc, &st);
	fprintf(f, "rrr-server: %s\n", title);
	rrr_xprt_stats_print(f, "  xprt.", &st);
	for (unsigned i = 0; i < RRR_NFS3_NPROCS; i++) {
		unsigned long long n = EX_SUM(nfs_calls[i]);
		if (n)
			fprintf(f, "  nfs.%s %llu\n", fs_nfs3_procs[i].name, n);
	}
	for (unsigned i = 0; i < RRR_MNT_NPROCS; i++) {
		unsigned long long n = EX_SUM(mnt_calls[i]);
		if (n)
			fprintf(f, "  mount.%s %llu\n", fs_mnt_procs[i].name, n);
	}
	fprintf(f, "  fh.stale %llu\n  fh.scans %llu\n  fh.escapes_refused %llu\n",
		EX_SUM(stale), EX_SUM(scans), EX_SUM(escapes));
	fprintf(f, "  fh.kernel_handles %llu\n  fh.path_handles %llu\n", EX_SUM(khandles),
		EX_SUM(phandles));
	fprintf(f, "  fh.fdcache_hits %llu\n  fh.fdcache_misses %llu\n", EX_SUM(fdc.hits),
		EX_SUM(fdc.misses));
	fprintf(f, "  io.direct_writes %llu\n  io.direct_bounced %llu\n", EX_SUM(direct_writes),
		EX_SUM(direct_bounced));
	{
		struct fs_dmap *maps[FS_CONF_MAX_EXPORTS];
		unsigned nm = 0;

		for (unsigned i = 0; i < g_nex && nm < FS_CONF_MAX_EXPORTS; i++)
			maps[nm++] = &g_ex[i]->dmap;
		fs_dmap_print(f, maps, nm);
	}
	if (g_nex > 1) {
		/* per export: NFS calls (all procedures) */
		for (unsigned i = 0; i < g_nex; i++) {
			uint64_t n = 0;
			for (unsigned j = 0; j < RRR_NFS3_NPROCS; j++)
				n += atomic_load(&g_ex[i]->nfs_calls[j]);
			fprintf(f, "  export.%u.nfs_calls %llu\n", i, (unsigned long long)n);
		}
	}
	fs_access_print(f, "  ");
	fs_drc_print(f);
	fs_nlm_print(f);
	struct rrr_svc_limit_stats ls;
	rrr_svc_limit_stats(g_svc, &ls);
	rrr_svc_limit_stats_print(f, "  limits.", &ls);
}

static void stats_cb(FILE *f, void *arg)
{
	(void)arg;
	print_counters(f, "counters");
}

/* Defaults that depend on who runs it: state dir, stats socket. */
static void fill_defaults(struct fs_conf *c)
{
	if (!c->state_dir[0]) {
		const char *home = getenv("HOME");
		if (geteuid() == 0 || !home)
			snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/rrr-server");
		else
			snprintf(c->state_dir, sizeof(c->state_dir), "%s/.rrr-server", home);
	}
	if (!c->stats_socket[0])
		fs_ctl_default_socket(c->state_dir, c->stats_socket, sizeof(c->stats_socket));
}

/* File (if any) then flags into @c: 0, or -EINVAL with the reason in @err. */
static int build_conf(struct fs_conf *c, char *err, size_t len)
{
	fs_conf_defaults(c);
	if (g_config) {
		int rc = fs_conf_load(c, g_config, err, len);
		if (rc < 0)
			return rc;
	}
	fs_conf_merge(c, &g_cli);
	fill_defaults(c);
	if (!c->export_dir[0]) {
		snprintf(err, len, "no export: give --export DIR or an [export DIR] section%s%s",
			 g_config ? " in " : "", g_config ? g_config : "");
		return -EINVAL;
	}
	return 0;
}

static void describe_access(const struct fs_conf_export *e, char *out, size_t len)
{
	if (!(e->set & (1ull << FS_K_ALLOW)))
		snprintf(out, len, "every client");
	else if (!e->nallow)
		snprintf(out, len, "no client (empty allow list)");
	else
		snprintf(out, len, "%u allowed network%s", e->nallow, e->nallow == 1 ? "" : "s");
}

/* Whether @a lies inside @b or is @b (real paths, no trailing slash but "/"). */
static bool path_within(const char *a, const char *b)
{
	size_t n = strlen(b);
	if (!strcmp(b, "/"))
		return true;
	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

/*
 * The exports of @c must exist and not overlap: no directory twice (by any
 * path), none inside another (a handle of the inner one would also be a
 * handle of the outer one's tree, with the outer one's policy), no name
 * twice (MNT would be ambiguous). 0, or -EINVAL with the reason in @err.
 * The real paths go to @real (FS_MAX_EXPORTS x PATH_MAX) when not NULL.
 */
static int check_exports(const struct fs_conf *c, char (*real)[PATH_MAX], char *err, size_t len)
{
	unsigned n = fs_conf_nexports(c);
	struct fs_conf_export *e = calloc(2, sizeof(*e));
	char (*rp)[PATH_MAX] = calloc(FS_MAX_EXPORTS, PATH_MAX);
	char (*nm)[PATH_MAX] = calloc(FS_MAX_EXPORTS, PATH_MAX);
	int rc = -ENOMEM;
	if (!e || !rp || !nm) {
		snprintf(err, len, "out of memory");
		goto out;
	}
	rc = -EINVAL;
	for (unsigned i = 0; i < n && i < FS_MAX_EXPORTS; i++) {
		fs_conf_export_get(c, i, &e[0]);
		if (!realpath(e[0].dir, rp[i])) {
			snprintf(err, len, "the export %.256s%s: %s", e[0].dir,
				 e[0].line ? "" : " (--export)", strerror(errno));
			goto out;
		}
		snprintf(nm[i], PATH_MAX, "%s", e[0].name[0] ? e[0].name : rp[i]);
		for (unsigned j = 0; j < i; j++) {
			fs_conf_export_get(c, j, &e[1]);
			const char *what = !strcmp(rp[i], rp[j])           ? "is the same directory as"
					   : path_within(rp[i], rp[j]) ? "lies inside"
					   : path_within(rp[j], rp[i]) ? "contains"
								       : NULL;
			if (what) {
				snprintf(err, len,
					 "the export %.128s (%.128s) %s the export %.128s (%.128s): "
					 "exports must not overlap; export the outer one, or give "
					 "them separate trees",
					 e[0].dir, rp[i], what, e[1].dir, rp[j]);
				goto out;
			}
			if (!strcmp(nm[i], nm[j])) {
				snprintf(err, len,
					 "the exports %.128s and %.128s have the same name %.128s: "
					 "give one another name",
					 e[1].dir, e[0].dir, nm[i]);
				goto out;
			}
		}
	}
	if (real)
		memcpy(real, rp, (size_t)FS_MAX_EXPORTS * PATH_MAX);
	rc = 0;
out:
	free(e);
	free(rp);
	free(nm);
	return rc;
}

/* SIGHUP, on the control thread. */
static void reload_cb(void *arg)
{
	(void)arg;
	if (!g_config) {
		fs_log_at(LOG_NOTICE, "SIGHUP: started without --config, nothing to re-read");
		return;
	}
	/* only this thread reloads; g_conf is read by no other */
	static struct fs_conf next, upd;
	static struct fs_conf_export e, r;
	char err[768], diff[512], who[96];
	if (build_conf(&next, err, sizeof(err)) < 0 || check_exports(&next, NULL, err, sizeof(err)) < 0) {
		fs_log_at(LOG_ERR, "SIGHUP: keeping the running settings: %s", err);
		return;
	}
	fs_conf_restart_diff(&g_conf, &next, diff, sizeof(diff));
	/* the live keys of each running export from the export of the same
	 * directory in the new file; an export gone from it keeps its settings */
	upd = g_conf;
	upd.log_level = next.log_level;
	unsigned nrun = fs_conf_nexports(&g_conf), nnext = fs_conf_nexports(&next);
	for (unsigned i = 0; i < nrun; i++) {
		fs_conf_export_get(&g_conf, i, &r);
		unsigned j;
		for (j = 0; j < nnext; j++) {
			fs_conf_export_get(&next, j, &e);
			if (!strcmp(e.dir, r.dir))
				break;
		}
		if (j == nnext) {
			fs_log_at(LOG_WARNING, "SIGHUP: the export %s is no longer in %s: still served "
					       "with its settings until the next start", r.dir, g_config);
			continue;
		}
		fs_conf_export_set_live(&upd, i, &e);
	}
	if (fs_access_set(&upd) < 0) {
		fs_log_at(LOG_ERR, "SIGHUP: out of memory; keeping the running settings");
		return;
	}
	if (diff[0])
		fs_log_at(LOG_WARNING, "SIGHUP: %s changed in %s: takes effect at the next start",
			  diff, g_config);
	g_conf = upd;
	/* logged at the old level, so a reload is always seen (unless the old
	 * level was below notice) */
	for (unsigned i = 0; i < nrun; i++) {
		fs_conf_export_get(&g_conf, i, &r);
		describe_access(&r, who, sizeof(who));
		if (nrun == 1)
			fs_log_at(LOG_NOTICE, "reloaded %s: %s, %s, log level %s", g_config, who,
				  r.read_only ? "read-only" : "read-write",
				  fs_log_level_name(g_conf.log_level));
		else
			fs_log_at(LOG_NOTICE, "reloaded %s: export %s: %s, %s", g_config, r.dir, who,
				  r.read_only ? "read-only" : "read-write");
	}
	if (nrun > 1)
		fs_log_at(LOG_NOTICE, "reloaded %s: log level %s", g_config,
			  fs_log_level_name(g_conf.log_level));
	fs_log_set_level(g_conf.log_level);
}

/* The mappings clients look for (rpcb.c): NFS v3 on TCP (the NFS port, or
 * the mount port without one) and RDMA, MOUNT v3, NLM v4 and NSM v1 on TCP
 * (the mount port), NSM v1 on UDP (@udp), each for IPv4 and IPv6; @host is
 * the first listen address (NULL: all). */
static void register_rpcbind(const struct fs_conf *cf, const char *host, uint16_t rdma,
			     uint16_t mount, uint16_t tcp, uint16_t udp)
{
	static const char *const nid[3][2] = {{"tcp", "tcp6"}, {"rdma", "rdma6"}, {"udp", "udp6"}};
	struct fs_rpcb_reg r[FS_RPCB_MAX_REGS];
	unsigned n = 0;
	const struct {
		uint32_t prog, vers;
		int net; /* index in nid */
		uint16_t port;
	} want[] = {
		{RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, 0, tcp ? tcp : mount},
		{RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, 1, rdma},
		{RRR_MNT_PROGRAM, RRR_MNT_VERSION, 0, mount},
		{NLM_PROG, NLM_VERS4, 0, mount},
		{NSM_PROG, NSM_VERS, 0, mount},
		{NSM_PROG, NSM_VERS, 2, udp},
	};
	for (int f = 0; f < 2; f++)
		for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
			if (!want[w].port)
				continue;
			r[n] = (struct fs_rpcb_reg){.prog = want[w].prog, .vers = want[w].vers};
			snprintf(r[n].netid, sizeof(r[n].netid), "%s", nid[want[w].net][f]);
			if (fs_rpcb_uaddr(f ? AF_INET6 : AF_INET, host, want[w].port, r[n].uaddr))
				n++;
		}
	fs_rpcb_start(cf->state_dir, r, n);
}

/* Open export @i of the config as g_ex[i] and add it to the table. */
static int open_export(const struct fs_conf *cf, unsigned i, const char *real)
{
	struct fs_conf_export *e = malloc(sizeof(*e));
	struct fs_export *ex = calloc(1, sizeof(*ex));
	if (!e || !ex) {
		free(e);
		free(ex);
		fprintf(stderr, "rrr-server: out of memory opening the exports\n");
		return -ENOMEM;
	}
	fs_conf_export_get(cf, i, e);
	ex->root_fd = -1;
	ex->mount_fd = -1;
	ex->verbose = cf->log_level >= LOG_INFO;
	ex->direct_min = fs_direct_write(cf);
	ex->no_root_squash = !e->root_squash;
	ex->anon_uid = e->anon_uid;
	ex->anon_gid = e->anon_gid;
	if (e->name[0])
		snprintf(ex->name, sizeof(ex->name), "%s", e->name);
	int rc = fs_export_open(ex, real, cf->state_dir);
	if (rc < 0) {
		fprintf(stderr, "rrr-server: cannot export '%s': %s\n", e->dir, strerror(-rc));
		free(e);
		free(ex);
		return rc;
	}
	g_ex[g_nex++] = ex;
	rc = fs_exports_add(ex);
	if (rc < 0)
		fprintf(stderr, "rrr-server: cannot serve '%s' beside the other exports: %s\n",
			e->dir, rc == -EEXIST ? "its handle id is another export's; give it another "
						"path (a bind mount) or remove STATE_DIR/fh.key"
					      : strerror(-rc));
	free(e);
	return rc;
}

static void close_exports(void)
{
	fs_exports_clear();
	for (unsigned i = 0; i < g_nex; i++) {
		fs_export_close(g_ex[i]);
		free(g_ex[i]);
		g_ex[i] = NULL;
	}
	g_nex = 0;
}

static int cli_set(enum fs_conf_key k, const char *v)
{
	char err[512];
	if (fs_conf_set(&g_cli, k, v, err, sizeof(err)) < 0) {
		fprintf(stderr, "rrr-server: --%s: %s\n",
			k == FS_K_RDMA_PORT ? "port" : k == FS_K_EXPORT ? "export" : fs_conf_key_name(k),
			err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_EXPORT = 256, O_NAME, O_PROVIDER, O_POPTS, O_LISTEN, O_PORT, O_MPORT, O_TPORT,
	       O_NORDMA, O_NORPCB, O_GRACE, O_THREADS, O_STATE, O_RO, O_PORTFILE, O_VERBOSE, O_WAIT, O_SPIN, O_HELP,
	       O_CONFIG, O_CHECK, O_ALLOW, O_LOGLEVEL, O_STATS, O_STATSSOCK, O_DRC, O_DIRECTW, O_MAXC,
	       O_MAXCA, O_IDLE, O_SETUP, O_MAXSETUP, O_NOSQUASH, O_ANONUID, O_ANONGID };
	static const struct option lopts[] = {
		{"export", required_argument, NULL, O_EXPORT},
		{"name", required_argument, NULL, O_NAME},
		{"provider", required_argument, NULL, O_PROVIDER},
		{"provider-opts", required_argument, NULL, O_POPTS},
		{"listen", required_argument, NULL, O_LISTEN},
		{"port", required_argument, NULL, O_PORT},
		{"mount-port", required_argument, NULL, O_MPORT},
		{"tcp-port", required_argument, NULL, O_TPORT},
		{"no-rdma", no_argument, NULL, O_NORDMA},
		{"no-rpcbind", no_argument, NULL, O_NORPCB},
		{"grace", required_argument, NULL, O_GRACE},
		{"threads", required_argument, NULL, O_THREADS},
		{"state-dir", required_argument, NULL, O_STATE},
		{"read-only", no_argument, NULL, O_RO},
		{"port-file", required_argument, NULL, O_PORTFILE},
		{"verbose", no_argument, NULL, O_VERBOSE},
		{"wait", required_argument, NULL, O_WAIT},
		{"spin-us", required_argument, NULL, O_SPIN},
		{"config", required_argument, NULL, O_CONFIG},
		{"check-config", no_argument, NULL, O_CHECK},
		{"allow", required_argument, NULL, O_ALLOW},
		{"log-level", required_argument, NULL, O_LOGLEVEL},
		{"stats", no_argument, NULL, O_STATS},
		{"stats-socket", required_argument, NULL, O_STATSSOCK},
		{"drc-entries", required_argument, NULL, O_DRC},
		{"direct-write", required_argument, NULL, O_DIRECTW},
		{"max-conns", required_argument, NULL, O_MAXC},
		{"max-conns-per-addr", required_argument, NULL, O_MAXCA},
		{"idle-timeout", required_argument, NULL, O_IDLE},
		{"setup-timeout", required_argument, NULL, O_SETUP},
		{"max-setup", required_argument, NULL, O_MAXSETUP},
		{"no-root-squash", no_argument, NULL, O_NOSQUASH},
		{"anon-uid", required_argument, NULL, O_ANONUID},
		{"anon-gid", required_argument, NULL, O_ANONGID},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	bool check_only = false, stats = false;
	int c, bad = 0;
	memset(&g_cli, 0, sizeof(g_cli));
	/* large per-connection buffers go back to the kernel when freed (see
	 * the top of this file); setting it also stops glibc's adjustment */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_EXPORT: bad |= cli_set(FS_K_EXPORT, optarg); break;
		case O_NAME: bad |= cli_set(FS_K_NAME, optarg); break;
		case O_PROVIDER: bad |= cli_set(FS_K_PROVIDER, optarg); break;
		case O_POPTS: bad |= cli_set(FS_K_POPTS, optarg); break;
		case O_LISTEN: bad |= cli_set(FS_K_LISTEN, optarg); break;
		case O_PORT: bad |= cli_set(FS_K_RDMA_PORT, optarg); break;
		case O_MPORT: bad |= cli_set(FS_K_MOUNT_PORT, optarg); break;
		case O_TPORT: bad |= cli_set(FS_K_TCP_PORT, optarg); break;
		case O_NORDMA: bad |= cli_set(FS_K_RDMA, "no"); break;
		case O_NORPCB: bad |= cli_set(FS_K_RPCBIND, "no"); break;
		case O_GRACE: bad |= cli_set(FS_K_GRACE, optarg); break;
		case O_THREADS: bad |= cli_set(FS_K_THREADS, optarg); break;
		case O_STATE: bad |= cli_set(FS_K_STATE_DIR, optarg); break;
		case O_RO: bad |= cli_set(FS_K_READ_ONLY, "yes"); break;
		case O_PORTFILE: bad |= cli_set(FS_K_PORT_FILE, optarg); break;
		case O_VERBOSE: bad |= cli_set(FS_K_LOG_LEVEL, "info"); break;
		case O_WAIT: bad |= cli_set(FS_K_WAIT, optarg); break;
		case O_SPIN: bad |= cli_set(FS_K_SPIN_US, optarg); break;
		case O_ALLOW: bad |= cli_set(FS_K_ALLOW, optarg); break;
		case O_LOGLEVEL: bad |= cli_set(FS_K_LOG_LEVEL, optarg); break;
		case O_STATSSOCK: bad |= cli_set(FS_K_STATS_SOCKET, optarg); break;
		case O_DRC: bad |= cli_set(FS_K_DRC_ENTRIES, optarg); break;
		case O_DIRECTW: bad |= cli_set(FS_K_DIRECT_WRITE, optarg); break;
		case O_MAXC: bad |= cli_set(FS_K_MAX_CONNS, optarg); break;
		case O_MAXCA: bad |= cli_set(FS_K_MAX_CONNS_PER_ADDR, optarg); break;
		case O_IDLE: bad |= cli_set(FS_K_IDLE_TIMEOUT, optarg); break;
		case O_SETUP: bad |= cli_set(FS_K_SETUP_TIMEOUT, optarg); break;
		case O_MAXSETUP: bad |= cli_set(FS_K_MAX_SETUP, optarg); break;
		case O_NOSQUASH: bad |= cli_set(FS_K_ROOT_SQUASH, "no"); break;
		case O_ANONUID: bad |= cli_set(FS_K_ANON_UID, optarg); break;
		case O_ANONGID: bad |= cli_set(FS_K_ANON_GID, optarg); break;
		case O_CONFIG: g_config = optarg; break;
		case O_CHECK: check_only = true; break;
		case O_STATS: stats = true; break;
		case 'h':
		case O_HELP: usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (bad)
		return 2;
	if (optind != argc) {
		fprintf(stderr, "rrr-server: unexpected arguments\n");
		usage(stderr);
		return 2;
	}

	char err[768];
	if (stats) {
		fs_conf_defaults(&g_conf);
		if (g_config && fs_conf_load(&g_conf, g_config, err, sizeof(err)) < 0) {
			fprintf(stderr, "rrr-server: %s\n", err);
			return 2;
		}
		fs_conf_merge(&g_conf, &g_cli);
		fill_defaults(&g_conf);
		if (!strcmp(g_conf.stats_socket, "none")) {
			fprintf(stderr, "rrr-server: stats-socket is none: the server has no stats "
					"socket to ask\n");
			return 1;
		}
		return fs_ctl_query(g_conf.stats_socket);
	}
	if (build_conf(&g_conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "rrr-server: %s\n", err);
		if (!g_config && !g_conf.export_dir[0])
			usage(stderr);
		return 2;
	}
	static char real[FS_MAX_EXPORTS][PATH_MAX];
	if (check_exports(&g_conf, real, err, sizeof(err)) < 0) {
		fprintf(stderr, "rrr-server: %s\n", err);
		return 2;
	}
	if (check_only) {
		static struct fs_conf_export e;
		char who[96];
		printf("rrr-server: %s is valid:", g_config ? g_config : "the command line");
		for (unsigned i = 0; i < fs_conf_nexports(&g_conf); i++) {
			fs_conf_export_get(&g_conf, i, &e);
			describe_access(&e, who, sizeof(who));
			printf("%s export %s, %s, %s", i ? ";" : "", real[i], who,
			       e.read_only ? "read-only" : "read-write");
		}
		printf("\n");
		return 0;
	}
	fs_log_set_level(g_conf.log_level);
	if (fs_state_dir_check(g_conf.state_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "rrr-server: %s\n", err);
		return 1;
	}

	static const struct fs_conf *const cf = &g_conf;
	struct rrr_svc_opts so;
	rrr_svc_opts_init(&so);
	so.provider = cf->provider;
	so.provider_opts = cf->provider_opts[0] ? cf->provider_opts : NULL;
	so.nthreads = cf->threads;
	so.wait_mode = cf->wait_mode;
	so.spin_us = cf->spin_us;
	so.admit = fs_access_admit; /* an address no export allows is closed at accept */
	if (cf->max_requests)
		so.max_requests = cf->max_requests;
	if (cf->inline_send)
		so.inline_send = cf->inline_send;
	if (cf->inline_recv)
		so.inline_recv = cf->inline_recv;
	if (cf->max_segs)
		so.max_segs = cf->max_segs;
	if (cf->max_payload)
		so.max_payload = cf->max_payload;
	/* limits: a key given with 0 means "none" (the library's RRR_SVC_UNLIMITED) */
#define FS_LIMIT(key, field)                                                                      \
	do {                                                                                      \
		if (cf->set & (1ull << (key)))                                                    \
			so.field = cf->field ? cf->field : RRR_SVC_UNLIMITED;                     \
	} while (0)
	FS_LIMIT(FS_K_MAX_CONNS, max_conns);
	FS_LIMIT(FS_K_MAX_CONNS_PER_ADDR, max_conns_per_addr);
	FS_LIMIT(FS_K_IDLE_TIMEOUT, idle_timeout_ms);
	FS_LIMIT(FS_K_SETUP_TIMEOUT, setup_timeout_ms);
	FS_LIMIT(FS_K_MAX_SETUP, max_setup);
#undef FS_LIMIT
	unsigned drc_entries = (cf->set & (1ull << FS_K_DRC_ENTRIES)) ? cf->drc_entries
								       : FS_DRC_DEFAULT_ENTRIES;
	const char *port_file = cf->port_file[0] ? cf->port_file : NULL;
	bool no_rdma = !cf->rdma;

	if (fs_access_set(cf) < 0) {
		fprintf(stderr, "rrr-server: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < fs_conf_nexports(cf); i++) {
		if (open_export(cf, i, real[i]) < 0) {
			close_exports();
			fs_access_free();
			return 1;
		}
	}
	struct fs_export *ex = g_ex[0];

	/* before any thread exists, so only the control thread sees SIGHUP */
	fs_ctl_block_sighup();
	struct fs_ctl *ctl = NULL;
	int rc = rrr_svc_create(&so, &g_svc);
	if (rc < 0) {
		fprintf(stderr, "rrr-server: cannot create the server: %s\n", rrr_last_error());
		close_exports();
		fs_access_free();
		return 1;
	}
	if ((rc = fs_drc_init(fs_nfs3_procs, drc_entries)) < 0) {
		fprintf(stderr, "rrr-server: no memory for %u duplicate request cache entries "
				"(lower drc-entries)\n", drc_entries);
		goto fail;
	}
	fs_access_set_inner(fs_drc_nfs3_procs());
	const struct rrr_svc_program nfs = {RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, fs_nfs3_guarded,
					    RRR_NFS3_NPROCS, ex};
	const struct rrr_svc_program mnt = {RRR_MNT_PROGRAM, RRR_MNT_VERSION, fs_mnt_guarded,
					    RRR_MNT_NPROCS, ex};
	const struct rrr_svc_program nlm = {NLM_PROG, NLM_VERS4, fs_nlm_procs, NLM4_NPROCS, ex};
	const struct rrr_svc_program nsm = {NSM_PROG, NSM_VERS, fs_nsm_procs, NSM_NPROCS, ex};
	if ((rc = rrr_svc_register(g_svc, &nfs)) < 0 || (rc = rrr_svc_register(g_svc, &mnt)) < 0 ||
	    (rc = rrr_svc_register(g_svc, &nlm)) < 0 || (rc = rrr_svc_register(g_svc, &nsm)) < 0) {
		fprintf(stderr, "rrr-server: cannot register programs: %s\n", rrr_last_error());
		goto fail;
	}

	uint16_t bound_rdma = 0, bound_mount = 0, bound_tcp = 0;
	char pbuf[16], lbuf[sizeof(cf->listen)], *save = NULL;
	const char *addrs[FS_CONF_MAX_LISTEN];
	unsigned naddr = 0;
	snprintf(lbuf, sizeof(lbuf), "%s", cf->listen);
	for (char *t = strtok_r(lbuf, " \t,", &save); t && naddr < FS_CONF_MAX_LISTEN;
	     t = strtok_r(NULL, " \t,", &save))
		addrs[naddr++] = t;
	if (!naddr)
		addrs[naddr++] = NULL; /* every address */
	/* the same ports on every address: port 0 picks them on the first */
	for (unsigned i = 0; i < naddr; i++) {
		const char *h = addrs[i], *hn = h ? h : "*";
		if (!no_rdma) {
			snprintf(pbuf, sizeof(pbuf), "%d", i ? bound_rdma : cf->rdma_port);
			rc = rrr_svc_listen_rdma(g_svc, h, pbuf, i ? NULL : &bound_rdma);
			if (rc < 0) {
				fprintf(stderr,
					"rrr-server: cannot listen for RDMA (%s) on %s port %s: %s\n%s",
					cf->provider, hn, pbuf,
					rrr_last_error() ? rrr_last_error() : strerror(-rc),
					rc == -EADDRINUSE ? "  (another server on that port? try --port, "
							    "or --no-rdma)\n"
							  : "");
				goto fail;
			}
		}
		snprintf(pbuf, sizeof(pbuf), "%d", i ? bound_mount : cf->mount_port);
		rc = rrr_svc_listen_tcp(g_svc, h, pbuf, i ? NULL : &bound_mount);
		if (rc < 0) {
			fprintf(stderr, "rrr-server: cannot listen on TCP mount port %s on %s: %s\n"
				"  (kernel rpc.mountd on 20048? pick another with --mount-port)\n",
				pbuf, hn, rrr_last_error());
			goto fail;
		}
		if (cf->tcp_port >= 0 && (i == 0 || bound_tcp)) {
			snprintf(pbuf, sizeof(pbuf), "%d", i ? bound_tcp : cf->tcp_port);
			rc = rrr_svc_listen_tcp(g_svc, h, pbuf, i ? NULL : &bound_tcp);
			if (rc == -EADDRINUSE && i == 0 && !(cf->set & (1ull << FS_K_TCP_PORT))) {
				/* the default 2049 is used only when free */
				fs_log_at(LOG_NOTICE, "TCP port %s is taken (the kernel's nfsd?): NFS "
					  "over TCP on the mount port %u only; --tcp-port picks "
					  "another", pbuf, bound_mount);
				rc = 0;
				bound_tcp = 0;
			} else if (rc < 0) {
				fprintf(stderr, "rrr-server: cannot listen on TCP port %s on %s: %s\n",
					pbuf, hn, rrr_last_error());
				goto fail;
			}
		}
	}

	rc = fs_ctl_start(strcmp(cf->stats_socket, "none") ? cf->stats_socket : NULL,
			  (cf->set & (1ull << FS_K_STATS_SOCKET)) != 0, reload_cb, stats_cb, NULL, &ctl);
	if (rc < 0)
		goto fail;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	char who[96];
	static struct fs_conf_export first;
	fs_conf_export_get(cf, 0, &first);
	describe_access(&first, who, sizeof(who));
	if (!no_rdma)
		fs_log("exporting %s as '%s': NFS over RDMA (%s) on port %u, NFS+MOUNT over TCP "
		       "on port %u%s",
		       ex->root, ex->name, cf->provider, bound_rdma, bound_mount,
		       cf->read_only ? ", read-only" : "");
	else
		fs_log("exporting %s as '%s': NFS+MOUNT over TCP on port %u%s", ex->root, ex->name,
		       bound_mount, cf->read_only ? ", read-only" : "");
	if (bound_tcp)
		fs_log("also NFS+MOUNT over TCP on port %u", bound_tcp);
	{
		char lim[512];

		rrr_svc_limits_describe(g_svc, lim, sizeof(lim));
		fs_log("%s", lim);
	}
	if (cf->listen[0])
		fs_log("listening on %s", cf->listen);
	char fhline[512];
	fs_fh_describe(ex, fhline, sizeof(fhline));
	fs_log("%s", fhline);
	for (unsigned i = 1; i < g_nex; i++) {
		static struct fs_conf_export e;
		char ewho[96];
		fs_conf_export_get(cf, i, &e);
		describe_access(&e, ewho, sizeof(ewho));
		fs_log("also exporting %s as '%s'%s", g_ex[i]->root, g_ex[i]->name,
		       e.read_only ? ", read-only" : "");
		fs_fh_describe(g_ex[i], fhline, sizeof(fhline));
		fs_log("  %s: %s", g_ex[i]->name, fhline);
		fs_log_at(LOG_INFO, "  %s: open to %s", g_ex[i]->name, ewho);
	}
	if (ex->as_caller)
		fs_log("requests run as their callers (fsuid/fsgid/groups per thread); root %s, "
		       "anonymous %u:%u", ex->no_root_squash ? "not squashed" : "squashed",
		       ex->anon_uid, ex->anon_gid);
	else
		fs_log("warning: not root, so every request runs as this server's user; "
		       "permission checks are the server's, not the caller's");
	fs_log_at(LOG_INFO, "open to %s; stats socket %s; config %s", who, cf->stats_socket,
		  g_config ? g_config : "none (flags only)");
	if ((rc = fs_nlm_start(cf->state_dir, cf->grace)) < 0) {
		fprintf(stderr, "rrr-server: cannot start the lock manager: %s\n", strerror(-rc));
		goto fail;
	}
	/* SM_NOTIFY over UDP at the lock manager's port number; without it the
	 * server runs on (logged) */
	uint16_t bound_udp = 0;
	fs_nsm_udp_start(addrs, naddr, bound_mount, &bound_udp);
	/* found through rpcbind before the port file says the server is up */
	if (cf->rpcbind)
		register_rpcbind(cf, addrs[0], no_rdma ? 0 : bound_rdma, bound_mount, bound_tcp,
				 bound_udp);
	if (port_file) {
		char text[96];
		int n = snprintf(text, sizeof(text), "rdma=%u mount=%u tcp=%u\n", bound_rdma,
				 bound_mount, bound_tcp);
		rc = fs_write_file(port_file, text, (size_t)n, 0644);
		if (rc < 0) {
			fprintf(stderr, "rrr-server: cannot write --port-file %s: %s\n", port_file,
				strerror(-rc));
			goto fail;
		}
	}

	rc = rrr_svc_run(g_svc);
	fs_rpcb_stop();
	fs_nsm_udp_stop();
	fs_nlm_stop();
	if (rc < 0)
		fprintf(stderr, "rrr-server: stopped on error: %s\n", rrr_last_error());
	else
		fs_log("stopped");
	fs_ctl_stop(ctl);
	fs_log_rate_flush(true);
	print_counters(stderr, "final counters");
	rrr_svc_destroy(g_svc);
	g_svc = NULL;
	close_exports();
	fs_access_free();
	fs_drc_fini();
	return rc < 0 ? 1 : 0;

fail:
	fs_rpcb_stop();
	fs_nsm_udp_stop();
	fs_nlm_stop();
	fs_ctl_stop(ctl);
	rrr_svc_destroy(g_svc);
	g_svc = NULL;
	close_exports();
	fs_access_free();
	fs_drc_fini();
	return 1;
}
