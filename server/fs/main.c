/* SPDX-License-Identifier: MIT */
/*
 * server/fs/main.c - rrr-server: a sample NFSv3 file server over
 * RPC-over-RDMA (soft or verbs provider) and plain TCP.
 *
 * Normal operation: parse options, open the export (fh.c), register the
 * NFS (100003 v3) and MOUNT (100005 v3) programs with the server library,
 * listen for RPC-over-RDMA on --port (20049) and for ONC RPC over TCP on
 * --mount-port (MOUNT and NFS, for the kernel client's mountproto=tcp and
 * for libnfs tools) and optionally --tcp-port, then run worker threads
 * until SIGTERM or SIGINT. With --port-file the bound ports are written to
 * a file once listening (port 0 picks free ports; tests and the demo use
 * this).
 *
 * Shutdown and recovery: the signal handler only calls rrr_svc_stop()
 * (async-signal-safe); rrr_svc_run() returns after in-flight requests are
 * answered, then the final counters are printed to stderr and everything
 * is released. Every start draws a new write verifier so clients re-send
 * uncommitted UNSTABLE writes; file handles stay valid (fh.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/wait.h>
#include <rrr/provider.h>
#include <rrr/server.h>

#include "server/fs/fs.h"

static struct rrr_svc *g_svc;

void fs_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("rrr-server: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void on_signal(int sig)
{
	(void)sig;
	if (g_svc)
		rrr_svc_stop(g_svc);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-server --export DIR [options]\n"
		"\n"
		"Serve DIR over NFSv3 (RFC 1813) with RPC-over-RDMA (RFC 8166/8267) and TCP.\n"
		"\n"
		"  --export DIR          directory to export (required)\n"
		"  --name PATH           path clients mount (default: DIR's real path; \"/\" works too)\n"
		"  --provider NAME       soft (user-space iWARP over TCP, default) or verbs\n"
		"  --provider-opts STR   provider options (e.g. dev=rxe0 for verbs)\n"
		"  --listen ADDR         address to listen on (default: all)\n"
		"  --port N              NFS over RDMA port (default 20049; 0 = pick one)\n"
		"  --mount-port N        MOUNT + NFS over TCP port (default 20048; 0 = pick one)\n"
		"  --tcp-port N          another NFS + MOUNT over TCP port (default: none)\n"
		"  --no-rdma             serve TCP only\n"
		"  --threads N           worker threads (default: one per CPU)\n"
		"  --state-dir DIR       where the file handle key lives (default\n"
		"                        /var/lib/rrr-server as root, else ~/.rrr-server)\n"
		"  --read-only           refuse every modification (NFS3ERR_ROFS)\n"
		"  --no-root-squash      AUTH_SYS uid 0 acts as root (default: as --anon-uid)\n"
		"  --anon-uid N, --anon-gid N  identity of squashed and AUTH_NONE callers\n"
		"                        (default 65534)\n"
		"  --port-file FILE      write \"rdma=N mount=N tcp=N\" there once listening\n"
		"  --verbose             log mounts\n"
		"  --wait MODE           how workers wait for requests: adaptive (default: spin\n"
		"                        up to --spin-us while requests stream in, else sleep),\n"
		"                        event (always sleep) or spin (always spin first)\n"
		"  --spin-us N           spin budget per wait in microseconds (default 50)\n"
		"  --help                this text\n"
		"\n"
		"Kernel client:  mount -t nfs -o vers=3,proto=rdma,port=20049,mountproto=tcp,\\\n"
		"                      mountport=20048,nolock SERVER:/PATH /mnt\n"
		"Stops cleanly on SIGTERM or SIGINT and prints its counters.\n"
		"Exit status: 0 clean stop, 1 runtime failure, 2 usage error.\n");
}

static int parse_port(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v > 65535) {
		fprintf(stderr, "rrr-server: bad %s '%s' (want 0..65535)\n", what, s);
		return -1;
	}
	return (int)v;
}

static void print_counters(struct fs_export *ex)
{
	struct rrr_xprt_stats st;
	memset(&st, 0, sizeof(st));
	rrr_svc_stats(g_svc, &st);
	fprintf(stderr, "rrr-server: final counters\n");
	rrr_xprt_stats_print(stderr, "  xprt.", &st);
	for (unsigned i = 0; i < RRR_NFS3_NPROCS; i++) {
		uint64_t n = atomic_load(&ex->nfs_calls[i]);
		if (n)
			fprintf(stderr, "  nfs.%s %llu\n", fs_nfs3_procs[i].name,
				(unsigned long long)n);
	}
	for (unsigned i = 0; i < RRR_MNT_NPROCS; i++) {
		uint64_t n = atomic_load(&ex->mnt_calls[i]);
		if (n)
			fprintf(stderr, "  mount.%s %llu\n", fs_mnt_procs[i].name,
				(unsigned long long)n);
	}
	fprintf(stderr, "  fh.stale %llu\n  fh.scans %llu\n  fh.escapes_refused %llu\n",
		(unsigned long long)atomic_load(&ex->stale),
		(unsigned long long)atomic_load(&ex->scans),
		(unsigned long long)atomic_load(&ex->escapes));
	fprintf(stderr, "  fh.kernel_handles %llu\n  fh.path_handles %llu\n",
		(unsigned long long)atomic_load(&ex->khandles),
		(unsigned long long)atomic_load(&ex->phandles));
	fprintf(stderr, "  fh.fdcache_hits %llu\n  fh.fdcache_misses %llu\n",
		(unsigned long long)atomic_load(&ex->fdc.hits),
		(unsigned long long)atomic_load(&ex->fdc.misses));
}

int main(int argc, char **argv)
{
	enum { O_EXPORT = 256, O_NAME, O_PROVIDER, O_POPTS, O_LISTEN, O_PORT, O_MPORT, O_TPORT,
	       O_NORDMA, O_THREADS, O_STATE, O_RO, O_PORTFILE, O_VERBOSE, O_WAIT, O_SPIN, O_HELP, O_NOSQUASH, O_ANONUID, O_ANONGID };
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
		{"threads", required_argument, NULL, O_THREADS},
		{"state-dir", required_argument, NULL, O_STATE},
		{"read-only", no_argument, NULL, O_RO},
		{"port-file", required_argument, NULL, O_PORTFILE},
		{"verbose", no_argument, NULL, O_VERBOSE},
		{"wait", required_argument, NULL, O_WAIT},
		{"spin-us", required_argument, NULL, O_SPIN},
		{"help", no_argument, NULL, O_HELP},
		{"no-root-squash", no_argument, NULL, O_NOSQUASH},
		{"anon-uid", required_argument, NULL, O_ANONUID},
		{"anon-gid", required_argument, NULL, O_ANONGID},
		{NULL, 0, NULL, 0},
	};
	const char *export_dir = NULL, *name = NULL, *listen = NULL, *state_dir = NULL;
	const char *port_file = NULL;
	int port = 20049, mport = 20048, tport = -1;
	bool no_rdma = false, ro = false, verbose = false, no_squash = false;
	long anon_uid = 65534, anon_gid = 65534;
	struct rrr_svc_opts so;
	rrr_svc_opts_init(&so);
	int c;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_EXPORT: export_dir = optarg; break;
		case O_NAME: name = optarg; break;
		case O_PROVIDER: so.provider = optarg; break;
		case O_POPTS: so.provider_opts = optarg; break;
		case O_LISTEN: listen = optarg; break;
		case O_PORT: if ((port = parse_port(optarg, "--port")) < 0) return 2; break;
		case O_MPORT: if ((mport = parse_port(optarg, "--mount-port")) < 0) return 2; break;
		case O_TPORT: if ((tport = parse_port(optarg, "--tcp-port")) < 0) return 2; break;
		case O_NORDMA: no_rdma = true; break;
		case O_THREADS: so.nthreads = (unsigned)atoi(optarg); break;
		case O_STATE: state_dir = optarg; break;
		case O_RO: ro = true; break;
		case O_PORTFILE: port_file = optarg; break;
		case O_VERBOSE: verbose = true; break;
		case O_WAIT:
			if (rrr_wait_mode_parse(optarg, &so.wait_mode)) {
				fprintf(stderr, "rrr-server: --wait is event, adaptive or spin\n");
				return 2;
			}
			break;
		case O_SPIN: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || v > RRR_WAIT_SPIN_US_MAX) {
				fprintf(stderr, "rrr-server: --spin-us is 0..%u\n", RRR_WAIT_SPIN_US_MAX);
				return 2;
			}
			so.spin_us = (uint32_t)v;
			break;
		}
		case O_NOSQUASH: no_squash = true; break;
		case O_ANONUID:
		case O_ANONGID: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > 0xfffffffeL) {
				fprintf(stderr, "rrr-server: --anon-uid/--anon-gid take 0..4294967294\n");
				return 2;
			}
			*(c == O_ANONUID ? &anon_uid : &anon_gid) = v;
			break;
		}
		case 'h':
		case O_HELP: usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !export_dir) {
		fprintf(stderr, "rrr-server: %s\n",
			export_dir ? "unexpected arguments" : "--export DIR is required");
		usage(stderr);
		return 2;
	}
	if (so.provider && strcmp(so.provider, "soft") && strcmp(so.provider, "verbs")) {
		fprintf(stderr, "rrr-server: unknown provider '%s' (soft or verbs)\n", so.provider);
		return 2;
	}

	char defstate[PATH_MAX];
	if (!state_dir) {
		const char *home = getenv("HOME");
		if (geteuid() == 0 || !home)
			snprintf(defstate, sizeof(defstate), "/var/lib/rrr-server");
		else
			snprintf(defstate, sizeof(defstate), "%s/.rrr-server", home);
		state_dir = defstate;
	}

	static struct fs_export ex;
	ex.root_fd = -1;
	ex.read_only = ro;
	ex.verbose = verbose;
	ex.no_root_squash = no_squash;
	ex.anon_uid = (uint32_t)anon_uid;
	ex.anon_gid = (uint32_t)anon_gid;
	if (name)
		snprintf(ex.name, sizeof(ex.name), "%s", name);
	int rc = fs_export_open(&ex, export_dir, state_dir);
	if (rc < 0) {
		fprintf(stderr, "rrr-server: cannot export '%s': %s\n", export_dir, strerror(-rc));
		return 1;
	}

	rc = rrr_svc_create(&so, &g_svc);
	if (rc < 0) {
		fprintf(stderr, "rrr-server: cannot create the server: %s\n", rrr_last_error());
		fs_export_close(&ex);
		return 1;
	}
	const struct rrr_svc_program nfs = {RRR_NFS3_PROGRAM, RRR_NFS3_VERSION, fs_nfs3_procs,
					    RRR_NFS3_NPROCS, &ex};
	const struct rrr_svc_program mnt = {RRR_MNT_PROGRAM, RRR_MNT_VERSION, fs_mnt_procs,
					    RRR_MNT_NPROCS, &ex};
	if ((rc = rrr_svc_register(g_svc, &nfs)) < 0 || (rc = rrr_svc_register(g_svc, &mnt)) < 0) {
		fprintf(stderr, "rrr-server: cannot register programs: %s\n", rrr_last_error());
		goto fail;
	}

	uint16_t bound_rdma = 0, bound_mount = 0, bound_tcp = 0;
	char pbuf[16];
	if (!no_rdma) {
		snprintf(pbuf, sizeof(pbuf), "%d", port);
		rc = rrr_svc_listen_rdma(g_svc, listen, pbuf, &bound_rdma);
		if (rc < 0) {
			fprintf(stderr, "rrr-server: cannot listen for RDMA (%s) on port %d: %s\n%s",
				so.provider ? so.provider : "soft", port,
				rrr_last_error() ? rrr_last_error() : strerror(-rc),
				rc == -EADDRINUSE ? "  (another server on that port? try --port, "
						    "or --no-rdma)\n"
						  : "");
			goto fail;
		}
	}
	snprintf(pbuf, sizeof(pbuf), "%d", mport);
	rc = rrr_svc_listen_tcp(g_svc, listen, pbuf, &bound_mount);
	if (rc < 0) {
		fprintf(stderr, "rrr-server: cannot listen on TCP mount port %d: %s\n"
			"  (kernel rpc.mountd on 20048? pick another with --mount-port)\n",
			mport, rrr_last_error());
		goto fail;
	}
	if (tport >= 0) {
		snprintf(pbuf, sizeof(pbuf), "%d", tport);
		rc = rrr_svc_listen_tcp(g_svc, listen, pbuf, &bound_tcp);
		if (rc < 0) {
			fprintf(stderr, "rrr-server: cannot listen on TCP port %d: %s\n", tport,
				rrr_last_error());
			goto fail;
		}
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!no_rdma)
		fs_log("exporting %s as '%s': NFS over RDMA (%s) on port %u, NFS+MOUNT over TCP "
		       "on port %u%s",
		       ex.root, ex.name, so.provider ? so.provider : "soft", bound_rdma,
		       bound_mount, ro ? ", read-only" : "");
	else
		fs_log("exporting %s as '%s': NFS+MOUNT over TCP on port %u%s", ex.root, ex.name,
		       bound_mount, ro ? ", read-only" : "");
	if (bound_tcp)
		fs_log("also NFS+MOUNT over TCP on port %u", bound_tcp);
	char fhline[512];
	fs_fh_describe(&ex, fhline, sizeof(fhline));
	fs_log("%s", fhline);
	if (ex.as_caller)
		fs_log("requests run as their callers (fsuid/fsgid/groups per thread); root %s, "
		       "anonymous %u:%u", ex.no_root_squash ? "not squashed" : "squashed",
		       ex.anon_uid, ex.anon_gid);
	else
		fs_log("warning: not root, so every request runs as this server's user; "
		       "permission checks are the server's, not the caller's");
	if (port_file) {
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "rdma=%u mount=%u tcp=%u\n", bound_rdma, bound_mount,
				  bound_tcp) < 0 || fclose(f) != 0 || rename(tmp, port_file) < 0) {
			fprintf(stderr, "rrr-server: cannot write --port-file %s: %s\n", port_file,
				strerror(errno));
			goto fail;
		}
	}

	rc = rrr_svc_run(g_svc);
	if (rc < 0)
		fprintf(stderr, "rrr-server: stopped on error: %s\n", rrr_last_error());
	else
		fs_log("stopped");
	print_counters(&ex);
	rrr_svc_destroy(g_svc);
	g_svc = NULL;
	fs_export_close(&ex);
	return rc < 0 ? 1 : 0;

fail:
	rrr_svc_destroy(g_svc);
	g_svc = NULL;
	fs_export_close(&ex);
	return 1;
}
