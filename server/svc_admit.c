/* SPDX-License-Identifier: MIT */
/*
 * server/svc_admit.c - what keeps one peer (or a flood of stalled TCP
 * connects) from locking every other client out of the server: admission
 * of connections (max_conns in total, max_conns_per_addr per peer IP
 * address), the idle timeout's bookkeeping, connection set-up limits
 * handed to the provider's CM, shedding when the process runs out of file
 * descriptors, the counters of all of these, and the log lines an
 * operator reads when a limit is hit. (What one RPC-over-RDMA header may
 * carry - segments, chunks - is bounded where it is decoded:
 * rrr_rdma_hdr_decode() in xdr/rpcrdma.c, with the limits the connection
 * passes, svc_rdma_transport.c.)
 *
 * Normal operation. The accept thread admits every new connection before
 * it allocates anything for it (RDMA: at CONNECT_REQUEST, which is then
 * rejected; TCP: right after accept(), then closed): one lock, a count in
 * total and a small hash table of counts per address. A connection holds
 * its admission until its worker reaps it (rrr__svc_unadmit). Set-up
 * limits (setup_timeout_ms, max_setup) are enforced by the provider's CM
 * (rrr_cm_set_limits: soft closes connections that never send their MPA
 * Request and pushes out the oldest when max_setup are waiting); the
 * accept thread reads the CM's counters after each batch of CM events and
 * logs when they moved. Idle connections are found by their worker
 * (svc.c) and counted here.
 *
 * Log lines are rate-limited: at most one per kind every 10 s, with the
 * count since the last one, so a flood cannot flood the log too.
 *
 * Descriptors are counted per connection as they are admitted: an idle
 * soft-RDMA connection holds 2 (its socket and its CQ's epoll set; the
 * CQ's eventfd comes with its first notification, and where none can be
 * made the soft provider signals without it), a TCP connection 1. A
 * connection that would take the count past the fd limit, less 128 left
 * to the application (e.g. rrr-server's descriptor cache of up to 96) and
 * max_setup for connections in set-up, is refused like one past
 * max_conns: 5,000 soft-RDMA and 5,000 TCP connections fit an fd limit of
 * 20,000, and 9,808 soft-RDMA ones alone.
 *
 * Defaults (rrr/server.h): setup 10 s, 256 in set-up, idle 6 min, 128 per
 * address, and max_conns from what the host can hold, the least of:
 *  - the fd limit: what it leaves for connections (as above), at one
 *    descriptor each (19,616 at 20,000; the descriptor count above then
 *    holds soft-RDMA connections to half of that);
 *  - memory: half the physical memory over RRR_SVC_CONN_MEM (256 KiB, what
 *    an idle soft-RDMA connection may cost at most; it costs ~210 KiB, a TCP
 *    one ~2 KiB);
 *  - registrations: the soft device's STag space (2^24 - 1; its table grows
 *    as registrations need it) over (credits + 4) x 4 + 4 per connection.
 * No other cap. rrr_svc_limits_describe() says which one it was, for the
 * operator's log line at start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/svc_impl.h"
#include "server/svc_rdma_impl.h"

#define LOG_EVERY_MS 10000

struct rrr__svc_peer {
	struct rrr__svc_peer *next;
	uint32_t fam;
	uint8_t addr[16];
	uint32_t n;
};

/* Descriptors the fd limit leaves for connections; *@nofile: the limit. */
static uint64_t fd_room(const struct rrr_svc_opts *o, uint64_t *nofile)
{
	uint64_t reserve = 128u + (o->max_setup == RRR_SVC_UNLIMITED ? 256u : o->max_setup);
	struct rlimit rl;

	*nofile = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		*nofile = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur;
	return *nofile > reserve ? *nofile - reserve : 0;
}

void rrr__svc_limits_defaults(struct rrr_svc_opts *o, char *why, size_t len)
{
	if (!o->setup_timeout_ms)
		o->setup_timeout_ms = RRR_CM_SETUP_TIMEOUT_MS;
	if (!o->max_setup)
		o->max_setup = RRR_CM_MAX_SETUP;
	if (!o->idle_timeout_ms)
		o->idle_timeout_ms = RRR_SVC_IDLE_TIMEOUT_MS;
	if (!o->max_conns_per_addr)
		o->max_conns_per_addr = RRR_SVC_MAX_CONNS_PER_ADDR;
	if (!o->max_conns) {
		uint64_t nofile, n_fd, n_mem, n_stag, n, mem;
		uint64_t per_stag = (uint64_t)(o->max_requests + SVC_RDMA_CTX_SLACK) * 4u + 4u;
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		const char *by;

		n_fd = fd_room(o, &nofile);
		mem = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 1ull << 30;
		n_mem = mem / 2 / RRR_SVC_CONN_MEM;
		/* each connection may hold 4 READ-sink registrations per
		 * request context (iWARP) plus its own few */
		n_stag = RRR_SVC_STAG_BUDGET / per_stag;
		n = n_fd;
		by = "the fd limit";
		if (n_mem < n) {
			n = n_mem;
			by = "memory";
		}
		if (n_stag < n) {
			n = n_stag;
			by = "registrations";
		}
		if (n < 16)
			n = 16;
		if (n > UINT32_MAX - 1)
			n = UINT32_MAX - 1;
		o->max_conns = (uint32_t)n;
		if (why)
			snprintf(why, len,
				 "from %s: the fd limit %llu allows %llu (%u descriptors per "
				 "soft-RDMA connection, 1 per TCP one: %llu soft-RDMA ones at most, "
				 "%llu kept back), %llu MiB of memory allows %llu "
				 "(half of it at %u KiB per idle connection), the STag space allows %llu "
				 "(%llu registrations per connection)",
				 by, (unsigned long long)nofile, (unsigned long long)n_fd,
				 RRR_SVC_CONN_FDS, (unsigned long long)(n_fd / RRR_SVC_CONN_FDS),
				 (unsigned long long)(nofile - n_fd),
				 (unsigned long long)(mem >> 20), (unsigned long long)n_mem,
				 RRR_SVC_CONN_MEM >> 10, (unsigned long long)n_stag,
				 (unsigned long long)per_stag);
	} else if (why) {
		snprintf(why, len, "as set (max_conns; rrr-server --max-conns N)");
	}
}

int rrr_svc_limits_describe(struct rrr_svc *svc, char *buf, size_t len)
{
	const struct rrr__svc_limits *L;
	char mc[16], pa[16], idle[32];

	if (!svc || (!buf && len))
		return -EINVAL;
	L = rrr__svc_limits(svc);
	snprintf(mc, sizeof(mc), L->max_conns == RRR_SVC_UNLIMITED ? "any number of" : "%u",
		 L->max_conns);
	snprintf(pa, sizeof(pa), L->max_per_addr == RRR_SVC_UNLIMITED ? "any number" : "%u",
		 L->max_per_addr);
	if (L->idle_ms == RRR_SVC_UNLIMITED)
		snprintf(idle, sizeof(idle), "never closed");
	else
		snprintf(idle, sizeof(idle), "closed after %u s", L->idle_ms / 1000u);
	return snprintf(buf, len, "up to %s connections (RDMA + TCP) %s; %s per address; idle ones %s",
			mc, L->why, pa, idle);
}

int rrr__svc_limits_init(struct rrr__svc_limits *L, const struct rrr_svc_opts *o,
			 const char *why)
{
	uint64_t nofile;

	memset(L, 0, sizeof(*L));
	snprintf(L->why, sizeof(L->why), "%s", why ? why : "");
	pthread_mutex_init(&L->lock, NULL);
	L->max_conns = o->max_conns;
	L->max_per_addr = o->max_conns_per_addr;
	L->fd_room = fd_room(o, &nofile);
	L->idle_ms = o->idle_timeout_ms;
	L->admit = o->admit;
	L->admit_ctx = o->admit_ctx;
	L->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (int k = 0; k < RRR__SVC_LOG_KINDS; k++)
		L->last_log[k] = -LOG_EVERY_MS;
	return 0;
}

void rrr__svc_limits_fini(struct rrr__svc_limits *L)
{
	for (unsigned b = 0; b < RRR__SVC_PEER_BUCKETS; b++) {
		struct rrr__svc_peer *p, *n;

		for (p = L->peers[b]; p; p = n) {
			n = p->next;
			free(p);
		}
		L->peers[b] = NULL;
	}
	if (L->reserve_fd >= 0)
		close(L->reserve_fd);
	L->reserve_fd = -1;
	pthread_mutex_destroy(&L->lock);
}

static void addr_of(const struct sockaddr_storage *ss, uint32_t *fam, uint8_t addr[16])
{
	memset(addr, 0, 16);
	*fam = ss->ss_family;
	if (ss->ss_family == AF_INET)
		memcpy(addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/* The peer's address as people write it (an IPv4 client of a dual-stack
 * listener as IPv4). */
static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	int fam = ss->ss_family == AF_INET6 ? AF_INET6 : AF_INET;
	const void *a = fam == AF_INET6 ? (const void *)a6
					 : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;

	if (fam == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6)) {
		fam = AF_INET;
		a = &a6->s6_addr[12];
	}
	if (!inet_ntop(fam, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static unsigned bucket_of(uint32_t fam, const uint8_t addr[16])
{
	uint32_t h = fam * 2654435761u;

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	return h % RRR__SVC_PEER_BUCKETS;
}

/* Rate-limited operator log (lock held): kind @k, @n events since the last line. */
__attribute__((format(printf, 3, 4)))
static void log_limit(struct rrr__svc_limits *L, int k, const char *fmt, ...)
{
	int64_t now = rrr__mono_ms();
	char text[400];
	va_list ap;

	L->pending_log[k]++;
	if (now - L->last_log[k] < LOG_EVERY_MS)
		return;
	L->last_log[k] = now;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (L->pending_log[k] > 1)
		rrr__log_warn("rrr server: %s (%llu times since the last such line)", text,
			      (unsigned long long)L->pending_log[k]);
	else
		rrr__log_warn("rrr server: %s", text);
	L->pending_log[k] = 0;
}

void rrr__svc_refused_addr(struct rrr__svc_limits *L, const struct sockaddr_storage *peer,
			   const char *transport)
{
	char who[64];

	addr_str(peer, who, sizeof(who));
	pthread_mutex_lock(&L->lock);
	L->st.refused_addr++;
	log_limit(L, RRR__SVC_LOG_ADDR,
		  "refused a %s connection from %s: the address is not admitted (in rrr-server, "
		  "no export's allow list names it)",
		  transport, who);
	pthread_mutex_unlock(&L->lock);
}

/* Refuse @c at a limit (L->lock held; released here): counted in *@n,
 * logged (kind @k, rate-limited) with @why after who it was. -EBUSY. */
static int refuse(struct rrr__svc_limits *L, uint64_t *n, int k, const struct rrr__svc_conn *c,
		  const char *transport, const char *why)
{
	char who[64];

	(*n)++;
	addr_str(&c->peer, who, sizeof(who));
	log_limit(L, k, "refused a %s connection from %s: %s", transport, who, why);
	pthread_mutex_unlock(&L->lock);
	return -EBUSY;
}

int rrr__svc_admit(struct rrr__svc_limits *L, struct rrr__svc_conn *c, const char *transport,
		   unsigned fds)
{
	struct rrr__svc_peer *p;
	uint8_t addr[16];
	uint32_t fam;
	unsigned b;
	char why[200];

	if (L->admit && !L->admit(L->admit_ctx, &c->peer)) {
		rrr__svc_refused_addr(L, &c->peer, transport);
		return -EACCES;
	}
	addr_of(&c->peer, &fam, addr);
	b = bucket_of(fam, addr);
	pthread_mutex_lock(&L->lock);
	if (L->max_conns != RRR_SVC_UNLIMITED && L->nconns >= L->max_conns) {
		snprintf(why, sizeof(why),
			 "%u connections are open (max_conns; rrr-server --max-conns N, or raise "
			 "ulimit -n)", L->nconns);
		return refuse(L, &L->st.refused_max_conns, RRR__SVC_LOG_MAX_CONNS, c, transport,
			      why);
	}
	if (L->fds + fds > L->fd_room) {
		snprintf(why, sizeof(why),
			 "the %u connections open hold the %llu descriptors the fd limit leaves "
			 "for connections (raise ulimit -n)",
			 L->nconns, (unsigned long long)L->fd_room);
		return refuse(L, &L->st.refused_max_conns, RRR__SVC_LOG_MAX_CONNS, c, transport,
			      why);
	}
	for (p = L->peers[b]; p; p = p->next)
		if (p->fam == fam && !memcmp(p->addr, addr, 16))
			break;
	if (p && L->max_per_addr != RRR_SVC_UNLIMITED && p->n >= L->max_per_addr) {
		snprintf(why, sizeof(why),
			 "it has %u open (max_conns_per_addr; rrr-server --max-conns-per-addr N)",
			 p->n);
		return refuse(L, &L->st.refused_per_addr, RRR__SVC_LOG_PER_ADDR, c, transport, why);
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&L->lock);
			return -ENOMEM;
		}
		p->fam = fam;
		memcpy(p->addr, addr, 16);
		p->next = L->peers[b];
		L->peers[b] = p;
	}
	p->n++;
	L->nconns++;
	L->fds += fds;
	c->admit_fds = (uint8_t)fds;
	c->admitted = true;
	pthread_mutex_unlock(&L->lock);
	return 0;
}

void rrr__svc_unadmit(struct rrr__svc_limits *L, struct rrr__svc_conn *c)
{
	struct rrr__svc_peer *p, **pp;
	uint8_t addr[16];
	uint32_t fam;

	if (!c->admitted)
		return;
	c->admitted = false;
	addr_of(&c->peer, &fam, addr);
	pthread_mutex_lock(&L->lock);
	for (pp = &L->peers[bucket_of(fam, addr)]; (p = *pp); pp = &p->next)
		if (p->fam == fam && !memcmp(p->addr, addr, 16))
			break;
	if (p && --p->n == 0) {
		*pp = p->next;
		free(p);
	}
	if (L->nconns)
		L->nconns--;
	L->fds -= L->fds >= c->admit_fds ? c->admit_fds : L->fds;
	pthread_mutex_unlock(&L->lock);
}

void rrr__svc_idle_closed(struct rrr__svc_limits *L, uint32_t idle_ms)
{
	pthread_mutex_lock(&L->lock);
	L->st.idle_closed++;
	log_limit(L, RRR__SVC_LOG_IDLE,
		  "closed a connection without traffic for %u ms (idle_timeout_ms; "
		  "rrr-server --idle-timeout MS)",
		  idle_ms);
	pthread_mutex_unlock(&L->lock);
}

void rrr__svc_setup_seen(struct rrr__svc_limits *L, const struct rrr_cm_limit_stats *before,
			 const struct rrr_cm_limit_stats *now, uint32_t setup_ms,
			 uint32_t max_setup)
{
	uint64_t t = now->setup_timeouts - before->setup_timeouts;
	uint64_t e = now->setup_evicted - before->setup_evicted;
	uint64_t s = now->accept_shed - before->accept_shed;

	if (!t && !e && !s)
		return;
	pthread_mutex_lock(&L->lock);
	log_limit(L, RRR__SVC_LOG_SETUP,
		  "closed RDMA connections in set-up: %llu without MPA set-up within %u ms "
		  "(setup_timeout_ms), %llu pushed out by newer ones (max_setup %u), %llu shed "
		  "for lack of file descriptors: a peer connects and sends nothing "
		  "(rrr-server --setup-timeout MS, --max-setup N)",
		  (unsigned long long)t, setup_ms, (unsigned long long)e, max_setup,
		  (unsigned long long)s);
	pthread_mutex_unlock(&L->lock);
}

void rrr__svc_accept_failed(struct rrr__svc_limits *L, const struct sockaddr_storage *peer,
			    const char *transport, int err)
{
	const char *why = rrr_last_error();
	char who[64];

	if (err == -EBUSY || err == -EACCES)
		return; /* a limit or the address: rrr__svc_admit() said so */
	addr_str(peer, who, sizeof(who));
	pthread_mutex_lock(&L->lock);
	log_limit(L, RRR__SVC_LOG_ACCEPT, "refused a %s connection from %s: %s (%s)", transport,
		  who, strerror(-err), why ? why : "no further detail");
	pthread_mutex_unlock(&L->lock);
}

void rrr__svc_cm_add(struct rrr_cm_limit_stats *dst, const struct rrr_cm_limit_stats *src)
{
	dst->setup_timeouts += src->setup_timeouts;
	dst->setup_evicted += src->setup_evicted;
	dst->accept_shed += src->accept_shed;
	for (int r = 0; r < RRR_CM_REFUSED_NREASONS; r++)
		dst->refused[r] += src->refused[r];
}

void rrr__svc_fold_cm(struct rrr__svc_limits *L, const struct rrr_cm_limit_stats *st)
{
	rrr__svc_cm_add(&L->cm_folded, st);
}

void rrr__svc_limit_stats_fill(const struct rrr__svc_limits *L,
			       const struct rrr_cm_limit_stats *cm, struct rrr_svc_limit_stats *st)
{
	*st = L->st;
	st->setup_timeouts += cm->setup_timeouts;
	st->setup_evicted += cm->setup_evicted;
	st->accept_shed += cm->accept_shed;
	for (int r = 0; r < RRR_CM_REFUSED_NREASONS; r++)
		st->refused_setup[r] += cm->refused[r];
	st->refused_addr += cm->refused[RRR_CM_REFUSED_ADDRESS]; /* soft: closed at accept */
	st->conns = L->nconns;
	st->max_conns = L->max_conns;
	st->max_conns_per_addr = L->max_per_addr;
}

bool rrr__svc_shed(struct rrr__svc_limits *L, int lfd)
{
	int fd;
	bool ok;

	pthread_mutex_lock(&L->lock);
	if (L->reserve_fd < 0) {
		pthread_mutex_unlock(&L->lock);
		return false;
	}
	close(L->reserve_fd);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		L->st.accept_shed++;
		log_limit(L, RRR__SVC_LOG_SHED,
			  "out of file descriptors: closed a new TCP connection at once "
			  "(raise ulimit -n, or lower max_conns)");
	}
	L->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ok = fd >= 0 && L->reserve_fd >= 0;
	pthread_mutex_unlock(&L->lock);
	return ok;
}

void rrr_svc_limit_stats_print(FILE *f, const char *prefix, const struct rrr_svc_limit_stats *st)
{
	if (!prefix)
		prefix = "";
#define P(x) fprintf(f, "%s%s %llu\n", prefix, #x, (unsigned long long)st->x)
	P(refused_max_conns);
	P(refused_per_addr);
	P(refused_addr);
	P(idle_closed);
	P(setup_timeouts);
	P(setup_evicted);
	P(accept_shed);
	for (int r = 0; r < RRR_CM_REFUSED_NREASONS; r++)
		fprintf(f, "%srefused_setup.%s %llu\n", prefix, rrr_cm_refusal_name(r),
			(unsigned long long)st->refused_setup[r]);
	P(conns);
	P(max_conns);
	P(max_conns_per_addr);
#undef P
}
