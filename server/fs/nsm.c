/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nsm.c - what rrr-server's lock manager does about restarts
 * (the server's side of the Network Status Monitor protocol): its state
 * number, the clients it tells that it restarted, the grace period in
 * which they reclaim their locks.
 *
 * Normal operation: the state number lives in STATE_DIR/nsm-state; every
 * start reads it and moves it to the next odd number (odd: up, as statd
 * counts), and it is what NLM calls see as the server's state. A client
 * granted a lock for the first time is appended to STATE_DIR/nsm-clients
 * ("ADDRESS NAME" per line, at most FS_NSM_MAX_CLIENTS). At the next start
 * the clients listed there are the ones that held locks when the server
 * went away: the background thread of nlm.c sends each one SM_NOTIFY
 * (mon_name: this server's address as the client sees it, the source
 * address of the connection; state: the new number) to its statd, found
 * through its portmapper, over TCP. The client's statd tells its lock
 * manager, which reclaims its locks (LOCK with reclaim set). During the
 * grace period (`grace` seconds, 90 by default, as knfsd) only reclaims
 * are granted; other LOCK, TEST and SHARE calls get DENIED_GRACE_PERIOD
 * and the client tries again. With no client to tell there is no grace
 * period: nothing can be reclaimed.
 *
 * A client that rebooted is noticed by its SM_NOTIFY (nsm_svc.c, over UDP
 * or TCP: its locks are released), by its new NSM state in its next LOCK
 * (nlm.c drops the locks it held under its old state), or by FREE_ALL.
 * rrr-server registers NSM with rpcbind only where nobody holds it: it
 * does not take the program from the host's rpc.statd, which the host's
 * own NFS client needs (its clients are then noticed at their next LOCK).
 *
 * Recovery: a state file that cannot be read starts at 1 (clients see a
 * restart either way); one that cannot be written is logged, and the
 * server runs (clients may then miss one restart). The clients file keeps
 * its old entries until they reclaim, so a server that crashes again in
 * the grace period still tells them next time. A client that does not
 * answer SM_NOTIFY is tried 5 times, 2 s apart, then logged (rate-limited)
 * and forgotten: its locks are gone, as they would be on any server.
 *
 * SM_NOTIFY (program 100024, version 1, procedure 6), a stat_chge:
 *   +---------------------------+-----------+
 *   | mon_name (string<1024>)   | state i32 |
 *   +---------------------------+-----------+   reply: void
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"
#include "server/fs/nlm.h"
#include "server/fs/rpc_call.h"

#define NOTIFY_TRIES 5
#define NOTIFY_GAP_S 2.0

struct client {
	struct sockaddr_storage addr;
	char name[NLM_MAXNAME + 1];
	unsigned tries;
	double next;
	bool done;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_state;
static _Atomic double g_grace_end;
static char g_dir[PATH_MAX];
static struct client *g_prev; /* the previous run's clients, to tell */
static unsigned g_nprev;
static struct client *g_cur;  /* everyone listed in the file now */
static unsigned g_ncur;
static atomic_uint_fast64_t g_notified, g_notify_failed, g_clients_full;

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


static bool parse_addr(const char *s, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return true;
	}
	return false;
}

/* The same host: the same address (a v4-mapped one is its IPv4 address). */
static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	char x[INET6_ADDRSTRLEN], y[INET6_ADDRSTRLEN];
	fs_addr_text(a, x, sizeof(x));
	fs_addr_text(b, y, sizeof(y));
	return strcmp(x, y) == 0;
}

static int read_clients(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	char line[NLM_MAXNAME + 80], ip[INET6_ADDRSTRLEN + 1];
	while (fgets(line, sizeof(line), f) && g_ncur < FS_NSM_MAX_CLIENTS) {
		struct client c = {0};
		char *sp = strchr(line, ' ');
		if (!sp || (size_t)(sp - line) >= sizeof(ip))
			continue;
		memcpy(ip, line, (size_t)(sp - line));
		ip[sp - line] = 0;
		if (!parse_addr(ip, &c.addr))
			continue;
		snprintf(c.name, sizeof(c.name), "%s", sp + 1);
		c.name[strcspn(c.name, "\r\n")] = 0;
		g_cur[g_ncur++] = c;
	}
	fclose(f);
	return 0;
}

int fs_nsm_init(const char *state_dir)
{
	g_cur = calloc(FS_NSM_MAX_CLIENTS, sizeof(*g_cur));
	g_prev = calloc(FS_NSM_MAX_CLIENTS, sizeof(*g_prev));
	if (!g_cur || !g_prev)
		return -ENOMEM;
	g_ncur = g_nprev = 0;
	snprintf(g_dir, sizeof(g_dir), "%s", state_dir ? state_dir : "");
	int32_t st = 0;
	char path[PATH_MAX + 32];
	if (g_dir[0]) {
		snprintf(path, sizeof(path), "%s/nsm-state", g_dir);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%d", &st) != 1 || st < 0)
				st = 0;
			fclose(f);
		}
	}
	st = (st | 1) + 2;
	if (st < 0 || st > 0x7ffffff0)
		st = 1;
	atomic_store(&g_state, st);
	if (!g_dir[0])
		return 0;
	char text[32];
	int n = snprintf(text, sizeof(text), "%d\n", st);
	int rc = fs_write_file(path, text, (size_t)n, 0600);
	if (rc < 0)
		fs_log_at(LOG_WARNING,
			  "lock manager: cannot write %s (%s): clients may not see the next "
			  "restart; check the state dir",
			  path, strerror(-rc));
	snprintf(path, sizeof(path), "%s/nsm-clients", g_dir);
	if ((rc = read_clients(path)) < 0)
		fs_log_at(LOG_WARNING, "lock manager: cannot read %s (%s): its clients are not "
			  "told of this restart", path, strerror(-rc));
	memcpy(g_prev, g_cur, sizeof(*g_cur) * g_ncur);
	g_nprev = g_ncur;
	return 0;
}

int32_t fs_nsm_state(void)
{
	return atomic_load(&g_state);
}

bool fs_nsm_in_grace(void)
{
	double end = atomic_load(&g_grace_end);
	if (end == 0)
		return false;
	if (mono() < end)
		return true;
	atomic_store(&g_grace_end, 0.0);
	fs_log_at(LOG_NOTICE, "lock manager: grace period over, new locks are granted");
	return false;
}

void fs_nsm_grace_start(unsigned secs)
{
	if (!g_nprev || !secs)
		return;
	atomic_store(&g_grace_end, mono() + secs);
	fs_log_at(LOG_NOTICE,
		  "lock manager: state %d; %u client%s of the previous run may reclaim their "
		  "locks for %u s (new locks wait until then)",
		  fs_nsm_state(), g_nprev, g_nprev == 1 ? "" : "s", secs);
}

void fs_nsm_client_add(const struct sockaddr_storage *addr, const char *name)
{
	pthread_mutex_lock(&g_lock);
	for (unsigned i = 0; i < g_ncur; i++)
		if (same_addr(&g_cur[i].addr, addr) && !strcmp(g_cur[i].name, name)) {
			pthread_mutex_unlock(&g_lock);
			return;
		}
	if (!g_cur || g_ncur >= FS_NSM_MAX_CLIENTS) {
		pthread_mutex_unlock(&g_lock);
		atomic_fetch_add(&g_clients_full, 1);
		return;
	}
	struct client *c = &g_cur[g_ncur++];
	memset(c, 0, sizeof(*c));
	c->addr = *addr;
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (g_dir[0]) {
		char path[PATH_MAX + 32], ip[INET6_ADDRSTRLEN];
		snprintf(path, sizeof(path), "%s/nsm-clients", g_dir);
		fs_addr_text(addr, ip, sizeof(ip));
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0) {
			/* the name is the client's text: one line, no blanks taken apart */
			char line[NLM_MAXNAME + 80];
			int n = snprintf(line, sizeof(line), "%s ", ip);
			for (const char *p = name; *p && n < (int)sizeof(line) - 2; p++)
				line[n++] = (*p == '\n' || *p == '\r') ? '?' : *p;
			line[n++] = '\n';
			if (write(fd, line, (size_t)n) != n)
				fs_log_at(LOG_WARNING, "lock manager: cannot append to %s", path);
			close(fd);
		}
	}
	pthread_mutex_unlock(&g_lock);
}

/* One SM_NOTIFY to @c: 0 or -errno. */
static int notify(const struct client *c)
{
	int port = fs_rpc_getport(&c->addr, NSM_PROG, NSM_VERS);
	if (port <= 0)
		return port < 0 ? port : -EPROTONOSUPPORT;
	int fd = fs_rpc_connect(&c->addr, (uint16_t)port);
	if (fd < 0)
		return fd;
	struct sockaddr_storage me;
	socklen_t ml = sizeof(me);
	struct nlm_notify n = {.state = fs_nsm_state()};
	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	fs_addr_text(&me, n.name, sizeof(n.name));
	uint8_t args[NLM_MAXNAME + 16], buf[512];
	struct rrr_xdr x;
	rrr_xdr_init(&x, args, sizeof(args), RRR_XDR_ENCODE);
	int rc = nlm_enc_notify(&x, &n);
	if (rc == 0)
		rc = fs_rpc_call(fd, NSM_PROG, NSM_VERS, NSM_NOTIFY, args, rrr_xdr_pos(&x), buf,
				 sizeof(buf), &x);
	close(fd);
	return rc;
}

bool fs_nsm_notify_step(void)
{
	bool all = true;
	double t = mono();
	for (unsigned i = 0; i < g_nprev; i++) {
		struct client *c = &g_prev[i];
		if (c->done)
			continue;
		if (t < c->next) {
			all = false;
			continue;
		}
		int rc = notify(c);
		char ip[INET6_ADDRSTRLEN], nb[RRR__LOG_PEER_SIZE];
		fs_addr_text(&c->addr, ip, sizeof(ip));
		if (rc == 0) {
			c->done = true;
			atomic_fetch_add(&g_notified, 1);
			fs_log_at(LOG_INFO, "lock manager: told %s (%s) of the restart", ip,
				  fs_log_peer(c->name, nb));
			continue;
		}
		if (++c->tries >= NOTIFY_TRIES) {
			static struct fs_lograte rl = FS_LOGRATE("SM_NOTIFY not delivered");
			c->done = true;
			atomic_fetch_add(&g_notify_failed, 1);
			fs_log_limited(&rl, LOG_WARNING,
				       "lock manager: could not tell %s (%s) of the restart (%s): "
				       "its locks are lost unless it reclaims them on its own",
				       ip, fs_log_peer(c->name, nb), strerror(-rc));
			continue;
		}
		c->next = t + NOTIFY_GAP_S;
		all = false;
	}
	return all;
}

void fs_nsm_print(FILE *f)
{
	fprintf(f, "  nsm.state %d\n", fs_nsm_state());
	fprintf(f, "  nsm.clients %u\n", g_ncur);
	fprintf(f, "  nsm.notified %llu\n", (unsigned long long)atomic_load(&g_notified));
	fprintf(f, "  nsm.notify_failed %llu\n", (unsigned long long)atomic_load(&g_notify_failed));
	fprintf(f, "  nsm.clients_full %llu\n", (unsigned long long)atomic_load(&g_clients_full));
	fprintf(f, "  nsm.in_grace %d\n", fs_nsm_in_grace() ? 1 : 0);
}
