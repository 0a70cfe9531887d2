/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nsm_udp.c - rrr-server's status monitor over UDP: where a
 * client that restarted sends SM_NOTIFY. Linux's sm-notify asks the
 * server host's rpcbind for NSM (100024 v1) over UDP and sends its
 * notification there; the TCP listeners (nsm_svc.c) cannot take it.
 *
 * Normal operation: one UDP socket per listen address (the wildcard: one
 * dual-stack socket, as the TCP listeners), bound to the port number of
 * the TCP listener that serves the lock manager (the mount port), or to
 * a free port when that one is taken on UDP (logged); main.c registers
 * the port with rpcbind as NSM v1 "udp"/"udp6". One thread polls the
 * sockets and a wake pipe, and answers each datagram in turn to its
 * source address: no state is kept between datagrams, nothing is
 * allocated. An SM_NOTIFY goes to nsm_svc.c, which releases the client's
 * locks, exactly as over TCP.
 *
 * Hostile peers: each datagram is taken in a fixed buffer (NSM_DGRAM_MAX;
 * a larger one is dropped whole, never read in part). A source that no
 * export's allow list admits gets no answer at all and changes nothing,
 * so the listener reflects nothing to forged addresses outside the lists.
 * Then the whole datagram is decoded (nsm_dgram_decode in nlm_xdr.c):
 * what is not an ONC RPC call is dropped without an answer; another
 * program, version or procedure gets PROG_UNAVAIL, PROG_MISMATCH or
 * PROC_UNAVAIL, an SM_NOTIFY with a bad or oversized mon_name or bytes
 * after its arguments GARBAGE_ARGS (RFC 5531), and has no effect. Each
 * kind is counted (nsm.udp.*) and logged at most once a second. A flood
 * costs one thread's time, never the NFS workers'.
 *
 * Recovery: nothing to recover - a reply that cannot be sent is counted
 * and the client's sm-notify sends again. Without rpcbind the socket is
 * still served (a client finds it only through rpcbind, though). A
 * listener that cannot be bound at all is logged and the server runs
 * without it: clients are then noticed at their next LOCK.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <rrr/oncrpc.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"
#include "server/fs/nlm.h"

#define BURST 64 /* datagrams of one socket per wake-up, so no socket starves */

static int g_fd[FS_CONF_MAX_LISTEN];
static unsigned g_nfd;
static int g_wake[2] = {-1, -1};
static pthread_t g_thread;
static bool g_running;
static atomic_uint_fast64_t c_dgrams, c_garbage, c_unavail, c_oversized, c_send_failed;

/* A UDP socket bound to @host (NULL: every address) and @port: the
 * descriptor, or -errno. */
static int bind_one(const char *host, uint16_t port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
	char ps[8];
	snprintf(ps, sizeof(ps), "%u", port);
	if (getaddrinfo(host, ps, &hints, &res) != 0)
		return -EADDRNOTAVAIL;
	int fd = -1, rc = -EADDRNOTAVAIL, zero = 0;
	/* IPv6 first: for the wildcard, one dual-stack socket */
	for (int pass = 0; pass < 2 && fd < 0; pass++)
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			if ((pass == 0) != (ai->ai_family == AF_INET6))
				continue;
			fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				rc = -errno;
				continue;
			}
			if (ai->ai_family == AF_INET6 && !host)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			rc = -errno;
			close(fd);
			fd = -1;
		}
	freeaddrinfo(res);
	return fd >= 0 ? fd : rc;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

/* One datagram of @fd, if one is waiting: false when none is. */
static bool serve_one(int fd)
{
	static uint8_t in[NSM_DGRAM_MAX], out[64];
	static struct nsm_dgram d;
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	/* MSG_TRUNC: the datagram's real length, so a larger one is seen */
	ssize_t n = recvfrom(fd, in, sizeof(in), MSG_TRUNC | MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fl);
	if (n < 0)
		return errno == EINTR;
	atomic_fetch_add(&c_dgrams, 1);
	if (!fs_nsm_admitted(&from, "UDP"))
		return true;
	if ((size_t)n > sizeof(in) || nsm_dgram_decode(in, (size_t)n, &d) < 0) {
		static struct fs_lograte rl = FS_LOGRATE("lock manager: a UDP datagram that is no NSM call");
		bool big = (size_t)n > sizeof(in);
		atomic_fetch_add(big ? &c_oversized : &c_garbage, 1);
		fs_log_limited(&rl, LOG_NOTICE,
			       "lock manager: dropped a %zd-byte UDP datagram on the status "
			       "monitor port: %s (a client that is not an NFS client?)",
			       n, big ? "larger than any NSM call" : "not an ONC RPC call");
		return true;
	}
	if (d.accept_stat == RRR_RPC_GARBAGE_ARGS) {
		static struct fs_lograte rl = FS_LOGRATE("lock manager: an SM_NOTIFY with bad arguments");
		atomic_fetch_add(&c_garbage, 1);
		fs_log_limited(&rl, LOG_NOTICE,
			       "lock manager: answered GARBAGE_ARGS to an NSM call over UDP (a "
			       "mon_name empty or over %u bytes, or bytes after the arguments): "
			       "nothing released",
			       NLM_MAXNAME);
	} else if (d.accept_stat != RRR_RPC_SUCCESS) {
		atomic_fetch_add(&c_unavail, 1);
	} else if (d.proc == NSM_NOTIFY) {
		fs_nsm_notified(&from, &d.notify, "UDP");
	}
	struct rrr_xdr x;
	rrr_xdr_init(&x, out, sizeof(out), RRR_XDR_ENCODE);
	if (nsm_dgram_reply(&x, &d) < 0 ||
	    sendto(fd, out, rrr_xdr_pos(&x), MSG_DONTWAIT | MSG_NOSIGNAL,
		   (struct sockaddr *)&from, fl) < 0)
		atomic_fetch_add(&c_send_failed, 1);
	return true;
}

static void *udp_main(void *arg)
{
	(void)arg;
	struct pollfd p[FS_CONF_MAX_LISTEN + 1];
	p[0] = (struct pollfd){.fd = g_wake[0], .events = POLLIN};
	for (unsigned i = 0; i < g_nfd; i++)
		p[i + 1] = (struct pollfd){.fd = g_fd[i], .events = POLLIN};
	for (;;) {
		int n = poll(p, g_nfd + 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[0].revents)
			break;
		for (unsigned i = 0; i < g_nfd; i++)
			if (p[i + 1].revents)
				for (int k = 0; k < BURST && serve_one(g_fd[i]); k++)
					;
	}
	return NULL;
}

static void close_all(void)
{
	for (unsigned i = 0; i < g_nfd; i++)
		close(g_fd[i]);
	g_nfd = 0;
	for (int i = 0; i < 2; i++)
		if (g_wake[i] >= 0)
			close(g_wake[i]);
	g_wake[0] = g_wake[1] = -1;
}

int fs_nsm_udp_start(const char *const *hosts, unsigned nhosts, uint16_t port, uint16_t *bound)
{
	*bound = 0;
	g_nfd = 0;
	for (unsigned i = 0; i < nhosts && i < FS_CONF_MAX_LISTEN; i++) {
		const char *h = hosts[i];
		int fd = bind_one(h, port);
		if (fd == -EADDRINUSE && i == 0 && port) {
			fs_log_at(LOG_NOTICE, "lock manager: UDP port %u is taken: the status "
				  "monitor (SM_NOTIFY over UDP) takes a free port, registered "
				  "with rpcbind", port);
			fd = bind_one(h, 0);
		}
		if (fd < 0) {
			fs_log_at(LOG_WARNING,
				  "lock manager: cannot listen for SM_NOTIFY on UDP %s port %u (%s): "
				  "restarted clients are noticed at their next LOCK instead; free "
				  "the port or change --mount-port",
				  h ? h : "*", port, strerror(-fd));
			close_all();
			return fd;
		}
		g_fd[g_nfd++] = fd;
		if (i == 0)
			port = bound_port(fd); /* the same port on every address */
	}
	int rc = g_nfd && pipe2(g_wake, O_CLOEXEC) < 0 ? -errno : 0;
	if (rc == 0 && g_nfd)
		rc = -pthread_create(&g_thread, NULL, udp_main, NULL);
	if (rc < 0) {
		fs_log_at(LOG_WARNING, "lock manager: cannot start the SM_NOTIFY listener (%s): "
			  "restarted clients are noticed at their next LOCK instead",
			  strerror(-rc));
		close_all();
		return rc;
	}
	g_running = g_nfd > 0;
	*bound = g_running ? port : 0;
	return 0;
}

void fs_nsm_udp_stop(void)
{
	if (!g_running)
		return;
	char b = 1;
	if (write(g_wake[1], &b, 1) != 1) {
		/* a pipe with room for one byte does not fail; join anyway */
	}
	pthread_join(g_thread, NULL);
	g_running = false;
	close_all();
}

void fs_nsm_udp_print(FILE *f)
{
	fprintf(f, "  nsm.udp.datagrams %llu\n", (unsigned long long)atomic_load(&c_dgrams));
	fprintf(f, "  nsm.udp.garbage %llu\n", (unsigned long long)atomic_load(&c_garbage));
	fprintf(f, "  nsm.udp.oversized %llu\n", (unsigned long long)atomic_load(&c_oversized));
	fprintf(f, "  nsm.udp.unavail %llu\n", (unsigned long long)atomic_load(&c_unavail));
	fprintf(f, "  nsm.udp.send_failed %llu\n", (unsigned long long)atomic_load(&c_send_failed));
}
