/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nsm_svc.c - the status monitor calls rrr-server answers itself
 * (NSM, program 100024 version 1): NULL and SM_NOTIFY, the call a client's
 * statd (sm-notify on Linux) sends to every server it held locks on once
 * it has restarted. Over TCP they come through the server library like the
 * lock manager's calls (fs_nsm_procs, on the same listeners); over UDP,
 * which is what sm-notify uses, through nsm_udp.c. Both end here.
 *
 * Normal operation: SM_NOTIFY carries the client's name (mon_name, the
 * name it gives as caller_name in its LOCKs) and its new NSM state. The
 * lock manager (nlm.c) releases everything that client held - the
 * entries of that name from that address, as FREE_ALL - unless the state
 * is the one its last LOCK carried (a retransmitted notification that
 * arrives after the client locked again must not undo that). Blocked
 * locks of other clients are tried again at once.
 *
 * Hostile peers: a caller that no export's allow list admits changes
 * nothing (counted in nsm.notify_refused; a line at most once a second);
 * over TCP such a connection is normally closed at accept already. Names
 * are bounded by the decoder (1024 bytes) and logged only escaped and cut.
 * A UDP source address is not proof of who sent it: like any statd, this
 * trusts it as far as the allow lists and the (name, address) match go.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <syslog.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"
#include "server/fs/nlm.h"

static atomic_uint_fast64_t c_notify, c_released, c_refused;


bool fs_nsm_admitted(const struct sockaddr_storage *from, const char *via)
{
	if (fs_access_admit(NULL, from))
		return true;
	static struct fs_lograte rl = FS_LOGRATE("lock manager: an NSM call from outside the allow lists");
	char ip[INET6_ADDRSTRLEN];
	fs_addr_text(from, ip, sizeof(ip));
	atomic_fetch_add(&c_refused, 1);
	fs_log_limited(&rl, LOG_NOTICE,
		       "lock manager: ignored an NSM call over %s from %s, which no export's "
		       "allow list admits (add it to an allow list if it is a client)",
		       via, ip);
	return false;
}

unsigned fs_nsm_notified(const struct sockaddr_storage *from, const struct nlm_notify *n,
			 const char *via)
{
	atomic_fetch_add(&c_notify, 1);
	unsigned dropped = fs_nlm_host_rebooted(n->name, from, n->state);
	if (!dropped)
		return 0;
	static struct fs_lograte rl = FS_LOGRATE("lock manager: SM_NOTIFY released a client's locks");
	char nb[RRR__LOG_PEER_SIZE], ip[INET6_ADDRSTRLEN];
	fs_addr_text(from, ip, sizeof(ip));
	atomic_fetch_add(&c_released, dropped);
	fs_log_limited(&rl, LOG_INFO,
		       "lock manager: client %s (%s) restarted (SM_NOTIFY over %s, state %d): "
		       "its old locks are released",
		       fs_log_peer(n->name, nb), ip, via, n->state);
	return dropped;
}

/* ------------------------------------------------------- over TCP (svc) */

static int p_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	return 0;
}

static int p_notify(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	static __thread struct nlm_notify n;
	struct sockaddr_storage ss = {0};
	(void)res;
	if (nlm_dec_notify(args, &n) < 0 || !n.name[0])
		return RRR_SVC_GARBAGE_ARGS;
	if (rrr_svc_req_peer(req, &ss) < 0 || !fs_nsm_admitted(&ss, "TCP"))
		return 0; /* void either way: an outsider learns nothing */
	fs_nsm_notified(&ss, &n, "TCP");
	return 0;
}

const struct rrr_svc_proc fs_nsm_procs[NSM_NPROCS] = {
	[NSM_NULL] = {"NULL", p_null},
	[NSM_STAT] = {"STAT", NULL},
	[NSM_MON] = {"MON", NULL},
	[NSM_UNMON] = {"UNMON", NULL},
	[NSM_UNMON_ALL] = {"UNMON_ALL", NULL},
	[NSM_SIMU_CRASH] = {"SIMU_CRASH", NULL},
	[NSM_NOTIFY] = {"NOTIFY", p_notify},
};

void fs_nsm_svc_print(FILE *f)
{
	fprintf(f, "  nsm.notify_calls %llu\n", (unsigned long long)atomic_load(&c_notify));
	fprintf(f, "  nsm.notify_released %llu\n", (unsigned long long)atomic_load(&c_released));
	fprintf(f, "  nsm.notify_refused %llu\n", (unsigned long long)atomic_load(&c_refused));
}
