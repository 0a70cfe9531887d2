/* SPDX-License-Identifier: MIT */
/*
 * server/fs/config.h - rrr-server's settings (config file and command line),
 * the client address policy, logging with levels, and the control thread
 * (SIGHUP reload, the stats socket). See config.c, access.c, log.c, ctl.c.
 */
#ifndef RRR_SERVER_FS_CONFIG_H
#define RRR_SERVER_FS_CONFIG_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <rrr/server.h>
#include <rrr/wait.h>

#include "common/rrr_impl.h"

#define FS_CONF_MAX_ALLOW 256u   /* networks in one export's allow list */
#define FS_CONF_MAX_LISTEN 8u    /* addresses in listen */
#define FS_CONF_MAX_LINE 4096u   /* bytes in one config line, newline included */
#define FS_CONF_MAX_SIZE (1u << 20) /* bytes in a config file */
#define FS_CONF_MAX_EXPORTS 16u  /* [export DIR] sections in one server */

/* One allowed network: family AF_INET or AF_INET6, prefix length. */
struct fs_cidr {
	int family;
	unsigned bits;
	uint8_t addr[16];
};

/* Keys, one bit each in fs_conf.set (which ones a file or the command line gave). */
enum fs_conf_key {
	FS_K_LISTEN, FS_K_RDMA_PORT, FS_K_MOUNT_PORT, FS_K_TCP_PORT, FS_K_RDMA,
	FS_K_PROVIDER, FS_K_POPTS, FS_K_THREADS, FS_K_STATE_DIR, FS_K_LOG_LEVEL,
	FS_K_STATS_SOCKET, FS_K_WAIT, FS_K_SPIN_US, FS_K_MAX_REQUESTS, FS_K_INLINE_SEND,
	FS_K_INLINE_RECV, FS_K_MAX_SEGS, FS_K_MAX_PAYLOAD, FS_K_PORT_FILE,
	/* limits: 0 = none where the key allows it */
	FS_K_DRC_ENTRIES, FS_K_MAX_CONNS, FS_K_MAX_CONNS_PER_ADDR, FS_K_IDLE_TIMEOUT,
	FS_K_SETUP_TIMEOUT, FS_K_MAX_SETUP,
	/* I/O */
	FS_K_DIRECT_WRITE,
	/* being found and locking */
	FS_K_RPCBIND, FS_K_GRACE,
	/* [export DIR] */
	FS_K_EXPORT, FS_K_NAME, FS_K_READ_ONLY, FS_K_ALLOW, FS_K_ROOT_SQUASH, FS_K_ANON_UID,
	FS_K_ANON_GID,
	FS_K_COUNT
};

/* One export's settings: the keys of an [export DIR] section. */
struct fs_conf_export {
	uint64_t set;                /* 1 << enum fs_conf_key of the export keys given */
	unsigned line;               /* line of its [export] header (0: command line) */
	char dir[PATH_MAX];
	char name[PATH_MAX];
	bool read_only;
	bool root_squash;
	uint32_t anon_uid, anon_gid;
	unsigned nallow;
	struct fs_cidr allow[FS_CONF_MAX_ALLOW];
};

struct fs_conf {
	uint64_t set; /* 1 << enum fs_conf_key for every key given */
	char listen[256];
	int rdma_port, mount_port, tcp_port; /* tcp_port -1: none */
	bool rdma;
	bool rpcbind;                /* register with the local rpcbind (default yes) */
	uint32_t grace;              /* seconds of the lock grace period after a restart */
	char provider[16];
	char provider_opts[512];
	unsigned threads;
	char state_dir[PATH_MAX];
	int log_level;               /* syslog priority, LOG_ERR .. LOG_DEBUG */
	char stats_socket[PATH_MAX]; /* "" = the default, "none" = no socket */
	char port_file[PATH_MAX];
	enum rrr_wait_mode wait_mode;
	uint32_t spin_us;
	uint32_t max_requests, inline_send, inline_recv, max_segs, max_payload; /* 0: default */
	/* used only when their key is set; max_conns, max_conns_per_addr and
	 * idle_timeout_ms 0 = no limit, drc_entries 0 = no cache */
	uint32_t drc_entries, max_conns, max_conns_per_addr, idle_timeout_ms, setup_timeout_ms,
		max_setup;
	/* WRITEs of new data of at least this many bytes go O_DIRECT (0: never);
	 * used only when its key is set, else FS_DIRECT_WRITE_DEFAULT */
	uint32_t direct_write;
	/* the first export (the command line's export flags set these) */
	char export_dir[PATH_MAX];
	char name[PATH_MAX];
	bool read_only;
	bool root_squash;            /* AUTH_SYS uid 0 acts as anon_uid (default yes) */
	uint32_t anon_uid, anon_gid; /* squashed and AUTH_NONE callers (default 65534) */
	unsigned nallow;             /* 0 with FS_K_ALLOW unset: every client */
	struct fs_cidr allow[FS_CONF_MAX_ALLOW];
	unsigned export_line;        /* line of the first [export] header (0: none) */
	/* the second and later [export DIR] sections, in file order */
	unsigned nmore;
	struct fs_conf_export more[FS_CONF_MAX_EXPORTS - 1];
};

/* config.c */
/* Defaults: ports 20049 / 20048 / 2049 (when free), RDMA on, soft, log level
 * notice, rpcbind on, a 90 s lock grace period. */
void fs_conf_defaults(struct fs_conf *c);
/* Parse config file @path into @c (on top of what @c holds). 0, or -errno
 * with a sentence naming the file and line in @err. Never reads more than
 * FS_CONF_MAX_SIZE bytes; refuses NUL bytes, overlong lines, unknown
 * sections and keys, a key repeated in one section, more than
 * FS_CONF_MAX_EXPORTS exports or the same export directory twice. Several
 * [export DIR] sections are several exports (fs_conf_export_get); whether
 * their directories overlap is main.c's check (it needs the real paths).
 * MAY BLOCK (file I/O). */
int fs_conf_load(struct fs_conf *c, const char *path, char *err, size_t errlen);
/* The same on @len bytes of @buf (buf[len] must be '\0'; the buffer is
 * modified), @path only for messages. Never blocks. */
int fs_conf_parse(struct fs_conf *c, const char *path, char *buf, size_t len, char *err,
		  size_t errlen);
/* Apply one key given as text (the command line uses this too): 0 or
 * -EINVAL with a sentence in @err (without file or line). */
int fs_conf_set(struct fs_conf *c, enum fs_conf_key k, const char *val, char *err,
		size_t errlen);
/* Copy into @dst every key set in @src (command line over file); the
 * first export's keys land on @dst's first export, and @src's later
 * exports, if it has any, replace @dst's. */
void fs_conf_merge(struct fs_conf *dst, const struct fs_conf *src);
/* How many exports @c has (0 before an export is given). */
unsigned fs_conf_nexports(const struct fs_conf *c);
/* Export @i of @c (0 = the first) into @out. Never fails for i < nexports. */
void fs_conf_export_get(const struct fs_conf *c, unsigned i, struct fs_conf_export *out);
/* Set the live keys (read-only, allow) of export @i from @e. */
void fs_conf_export_set_live(struct fs_conf *c, unsigned i, const struct fs_conf_export *e);
/* Name of a key as written in the file ("rdma-port"). */
const char *fs_conf_key_name(enum fs_conf_key k);
/* Parse "10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8": 0 or -EINVAL. */
int fs_cidr_parse(const char *s, struct fs_cidr *out);
/* Whether @ss lies in @n (an IPv4-mapped IPv6 address is matched as its
 * IPv4 address against IPv4 networks, as itself against IPv6 ones). */
bool fs_cidr_match(const struct fs_cidr *n, const struct sockaddr_storage *ss);
/* The keys that need a restart and differ between @a and @b, as
 * "listen, rdma-port" into @out ("" when none); a change in the list of
 * exports or their restart-only keys reads "exports". */
void fs_conf_restart_diff(const struct fs_conf *a, const struct fs_conf *b, char *out,
			  size_t len);

/* access.c: who may do what, per export (by index, as in
 * fs_conf_export_get and the export table), swapped whole on reload.
 * Thread-safe. 0 or -ENOMEM (the running policy stays). */
int fs_access_set(const struct fs_conf *c);
/* Whether any export's allow list admits @peer (an export without allow
 * lets everyone in): the server's admission check (struct
 * rrr_svc_opts.admit), so an address no export allows is closed at accept
 * (TCP) or refused in MPA (soft RDMA) before anything is held for it, and
 * NULL from it is dropped. Thread-safe against fs_access_set(); never
 * blocks for long (a read lock). @ctx is unused. */
bool fs_access_admit(void *ctx, const struct sockaddr_storage *peer);
/* Whether the peer of @req may use export @ex (its allow list), and
 * whether @ex is read-only for it: the lock manager's check (nlm.c).
 * Thread-safe; never blocks for long. */
struct fs_export;
bool fs_access_allowed(struct rrr_svc_req *req, const struct fs_export *ex, bool *read_only);
/* Program tables that check the policy, then call the real handlers
 * (fs_nfs3_procs, fs_mnt_procs): a client outside the allow list gets
 * MNT3ERR_ACCES on MNT and NFS3ERR_ACCES on every NFS procedure but NULL,
 * which is dropped (no reply) unless some export admits the client;
 * on a read-only export modifying procedures get NFS3ERR_ROFS. The export
 * of an NFS call is the one its first file handle names (fs_exports_by_args),
 * of a MNT the one its path names. */
extern const struct rrr_svc_proc fs_nfs3_guarded[];
extern const struct rrr_svc_proc fs_mnt_guarded[];
/* The NFS table fs_nfs3_guarded hands allowed calls to (NULL: fs_nfs3_procs;
 * main.c passes the duplicate request cache's, so a refused client is never
 * answered from the cache). Not thread-safe: call before the server runs. */
void fs_access_set_inner(const struct rrr_svc_proc *procs);
/* "access.denied_mount N" ... lines for the counters. */
void fs_access_print(FILE *f, const char *prefix);
void fs_access_free(void);

/* log.c: stderr, with "<N>" priority prefixes when stderr is the journal
 * (systemd's JOURNAL_STREAM) or with --log-format journal. */
void fs_log_set_level(int level);
int fs_log_level(void);
/* Parse "error|warning|notice|info|debug" (or 3..7): the priority or -1. */
int fs_log_level_parse(const char *s);
const char *fs_log_level_name(int level);
void fs_log_at(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Lines a peer can trigger: one kind (one static struct fs_lograte per call
 * site) goes out at most once per second (RRR__LOG_EVERY_MS); the next line
 * that goes out says how many were held back, "(N more since the last
 * line)", and when the flood stops the control thread writes "KIND: N more
 * since the last line" within about a second (fs_log_rate_flush). Strings a
 * peer sent go into such lines only through fs_log_peer() (escaped, cut).
 */
struct fs_lograte {
	const char *kind; /* what the lines report, for the count line */
	pthread_mutex_t lock;
	struct rrr__ratelimit rl; /* under lock */
	int level;		  /* of the last line, under lock */
	struct fs_lograte *next;  /* in the flush list, once used */
	atomic_bool listed;
};
#define FS_LOGRATE(kind_text) {.kind = (kind_text), .lock = PTHREAD_MUTEX_INITIALIZER}
/* fs_log_at() through the limiter @r. Thread-safe. */
void fs_log_limited(struct fs_lograte *r, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Write the count line of every limiter that held lines back and has not
 * written for a second (@all: whatever the time, at shutdown). */
void fs_log_rate_flush(bool all);
/* A string a peer sent (path, name) safe for a log line: rrr__log_peer_str()
 * into @out (RRR__LOG_PEER_SIZE bytes); returns @out. */
const char *fs_log_peer(const char *s, char *out);

/* ctl.c: the control thread. */
struct fs_ctl;
typedef void (*fs_ctl_reload_fn)(void *arg);
typedef void (*fs_ctl_stats_fn)(FILE *f, void *arg);
/* Default stats socket path for a state dir: STATE_DIR/stats.sock. */
void fs_ctl_default_socket(const char *state_dir, char *out, size_t len);
/* Block SIGHUP in the calling thread (call before any thread starts). */
void fs_ctl_block_sighup(void);
/* Start the thread: SIGHUP calls @reload, a connection to @sock_path (NULL:
 * none) gets what @stats prints. 0 or -errno with a message on stderr.
 * Without @required a socket that cannot be set up is only a warning
 * (except one another live server answers on). */
int fs_ctl_start(const char *sock_path, bool required, fs_ctl_reload_fn reload,
		 fs_ctl_stats_fn stats, void *arg, struct fs_ctl **out);
/* Stop the thread and remove the socket. */
void fs_ctl_stop(struct fs_ctl *ctl);
/* rrr-server --stats: print what the server on @sock_path answers to
 * stdout. Exit status for main: 0, or 1 with a message. */
int fs_ctl_query(const char *sock_path);

#endif
