/* SPDX-License-Identifier: MIT */
/*
 * server/fs/rpcb.c - rrr-server registers its programs with the local
 * rpcbind (RFC 1833, version 4), so that clients find them as they find
 * any NFS server's: mount.nfs asks the server host's rpcbind for the
 * ports of MOUNT v3 and NFS v3 ("tcp", or "rdma" for proto=rdma), the
 * kernel's lockd for those of NLM v4.
 *
 * Normal operation: at start, after the listeners are bound, main.c hands
 * the mappings (program, version, netid, universal address) to
 * fs_rpcb_start(), which talks to rpcbind over its unix socket
 * (the abstract @/run/rpcbind.sock of this network namespace where rpcbind
 * has one, else /run/rpcbind.sock): rpcbind accepts SET and UNSET only from a local
 * caller, and learns who we are from the socket's peer credentials. Each
 * mapping is one SET; a SET that rpcbind refuses means another server holds
 * the mapping (the kernel's nfsd, lockd, or another rrr-server): it is
 * left alone, and one line names the address the other one registered
 * (NSM held by the host's rpc.statd gets a line of its own: that is the
 * usual case on a host that also mounts NFS, not a conflict to resolve).
 * What was registered is written to STATE_DIR/rpcbind, one mapping per
 * line. At exit, fs_rpcb_stop() unsets each of our mappings that rpcbind
 * still gives our address for, and removes the file.
 *
 * Recovery: a server that crashed left its mappings in rpcbind (pointing
 * at ports nobody listens on, or worse, that another program now holds)
 * and its record in the state dir; the next start reads the record and
 * unsets every mapping whose address is still the recorded one, before it
 * registers its own. A mapping that changed since belongs to someone else
 * and stays. Without rpcbind (no socket, no answer within 2 s) one line
 * says so and what a client must then give (port=, mountport=); the server
 * serves as before. rpcbind restarted later forgets our mappings: restart
 * rrr-server (or send nothing: the clients that already know the ports
 * keep them).
 *
 * Wire (RPCBPROG 100000, version 4, over record marking on the socket):
 *
 *   SET/UNSET (proc 1/2) take an rpcb:
 *   +---------+---------+-----------+-----------+------------+
 *   | r_prog  | r_vers  | r_netid   | r_addr    | r_owner    |
 *   | u32     | u32     | string    | string    | string     |
 *   +---------+---------+-----------+-----------+------------+
 *   reply: bool (TRUE: done). r_owner is ignored by rpcbind for a local
 *   caller (it takes the socket's uid); we send "rrr-server". Who holds a
 *   mapping is read from DUMP (proc 4, rpcb_lookup).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <rrr/oncrpc.h>
#include <rrr/xdr.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"
#include "server/fs/rpc_call.h"
#include "server/fs/rpcb.h"

#define RPCB_PROG 100000u
#define RPCB_VERS 4u
#define RPCB_SET 1u
#define RPCB_UNSET 2u
#define RPCB_DUMP 4u
#define RPCB_MSG 1024u
#define RPCB_DUMP_MAX (256u << 10) /* the largest DUMP reply read */
#define NSM_PROG_NUM 100024u

static const char *const sockets[] = {"/run/rpcbind.sock", "/var/run/rpcbind.sock"};

static struct fs_rpcb_reg g_done[FS_RPCB_MAX_REGS];
static unsigned g_ndone;
static char g_record[4096];

bool fs_rpcb_uaddr(int family, const char *host, uint16_t port, char *out)
{
	struct in_addr a4;
	struct in6_addr a6;
	char ip[INET6_ADDRSTRLEN];
	if (host && inet_pton(AF_INET, host, &a4) == 1) {
		if (family != AF_INET)
			return false;
		inet_ntop(AF_INET, &a4, ip, sizeof(ip));
	} else if (host && inet_pton(AF_INET6, host, &a6) == 1) {
		if (family != AF_INET6)
			return false;
		inet_ntop(AF_INET6, &a6, ip, sizeof(ip));
	} else {
		snprintf(ip, sizeof(ip), "%s", family == AF_INET6 ? "::" : "0.0.0.0");
	}
	snprintf(out, FS_RPCB_UADDR, "%s.%u.%u", ip, port >> 8, port & 0xffu);
	return true;
}

/* rpcbind's abstract socket first (it belongs to this network namespace,
 * as the kernel's lockd looks for it), then its socket files. */
static int rpcb_connect(void)
{
	for (size_t i = 0; i <= sizeof(sockets) / sizeof(sockets[0]); i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		socklen_t len = sizeof(sun);
		if (i == 0) { /* "@/run/rpcbind.sock" */
			size_t n = strlen(sockets[0]);
			memcpy(sun.sun_path + 1, sockets[0], n);
			len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
		} else {
			snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sockets[i - 1]);
		}
		if (connect(fd, (struct sockaddr *)&sun, len) == 0)
			return fd;
		close(fd);
	}
	return -ECONNREFUSED;
}

/* Send one call of @proc (with @r unless DUMP) and read its reply record
 * into @buf (@cap bytes): the results' decoder in @x. 0 or -errno. */
static int rpcb_call(int fd, uint32_t proc, const struct fs_rpcb_reg *r, uint8_t *buf,
		     uint32_t cap, struct rrr_xdr *x)
{
	uint8_t args[RPCB_MSG];
	rrr_xdr_init(x, args, sizeof(args), RRR_XDR_ENCODE);
	if (proc != RPCB_DUMP &&
	    (rrr_xdr_put_u32(x, r->prog) < 0 || rrr_xdr_put_u32(x, r->vers) < 0 ||
	     rrr_xdr_put_string(x, r->netid) < 0 ||
	     rrr_xdr_put_string(x, proc == RPCB_SET ? r->uaddr : "") < 0 ||
	     rrr_xdr_put_string(x, "rrr-server") < 0))
		return -EMSGSIZE;
	return fs_rpc_call(fd, RPCB_PROG, RPCB_VERS, proc, args, rrr_xdr_pos(x), buf, cap, x);
}

/* SET or UNSET @r: 1 done, 0 refused, or -errno. */
static int rpcb_change(int fd, uint32_t proc, const struct fs_rpcb_reg *r)
{
	uint8_t buf[RPCB_MSG];
	struct rrr_xdr x;
	bool ok = false;
	int rc = rpcb_call(fd, proc, r, buf, sizeof(buf), &x);
	if (rc < 0)
		return rc;
	return rrr_xdr_get_bool(&x, &ok) < 0 ? -EPROTO : ok;
}

/*
 * The address rpcbind maps (@r->prog, vers, netid) to, into @addr
 * (FS_RPCB_UADDR; "" when none). GETADDR answers for the netid of the
 * transport it is asked over (here "local"), so this reads DUMP:
 *
 *   rpcblist: { bool more=1 | rpcb (as above) }* bool more=0
 */
static int rpcb_lookup(int fd, const struct fs_rpcb_reg *r, char *addr)
{
	uint8_t *buf = malloc(RPCB_DUMP_MAX);
	if (!buf)
		return -ENOMEM;
	struct rrr_xdr x;
	addr[0] = 0;
	int rc = rpcb_call(fd, RPCB_DUMP, NULL, buf, RPCB_DUMP_MAX, &x);
	for (bool more = true; rc == 0;) {
		struct fs_rpcb_reg e;
		char owner[256];
		if (rrr_xdr_get_bool(&x, &more) < 0) {
			rc = -EPROTO;
			break;
		}
		if (!more)
			break;
		if (rrr_xdr_get_u32(&x, &e.prog) < 0 || rrr_xdr_get_u32(&x, &e.vers) < 0 ||
		    rrr_xdr_get_string(&x, e.netid, sizeof(e.netid)) < 0 ||
		    rrr_xdr_get_string(&x, e.uaddr, sizeof(e.uaddr)) < 0 ||
		    rrr_xdr_get_string(&x, owner, sizeof(owner)) < 0) {
			rc = -EPROTO;
			break;
		}
		if (e.prog == r->prog && e.vers == r->vers && !strcmp(e.netid, r->netid)) {
			snprintf(addr, FS_RPCB_UADDR, "%s", e.uaddr);
			break;
		}
	}
	free(buf);
	return rc;
}

static const char *prog_name(uint32_t prog)
{
	switch (prog) {
	case 100003: return "NFS";
	case 100005: return "MOUNT";
	case 100021: return "NLM";
	case 100024: return "NSM";
	default: return "program";
	}
}

/* Unset @r when rpcbind still maps it to @r->uaddr: 0, or -errno. */
static int unset_if_ours(int fd, const struct fs_rpcb_reg *r)
{
	char now[FS_RPCB_UADDR];
	int rc = rpcb_lookup(fd, r, now);
	if (rc < 0 || strcmp(now, r->uaddr))
		return rc;
	rc = rpcb_change(fd, RPCB_UNSET, r);
	return rc < 0 ? rc : 0;
}

/* The state dir's record of a previous run: unset what is still its. */
static void clean_previous(int fd)
{
	FILE *f = fopen(g_record, "r");
	if (!f)
		return;
	char line[160];
	unsigned n = 0;
	while (fgets(line, sizeof(line), f) && n < 4 * FS_RPCB_MAX_REGS) {
		struct fs_rpcb_reg r = {0};
		if (sscanf(line, "%u %u %7s %63s", &r.prog, &r.vers, r.netid, r.uaddr) != 4)
			continue;
		if (unset_if_ours(fd, &r) == 0)
			n++;
	}
	fclose(f);
	unlink(g_record);
	if (n)
		fs_log_at(LOG_NOTICE, "rpcbind: removed the mappings of a previous run (%s)", g_record);
}

static void write_record(void)
{
	if (!g_record[0] || !g_ndone)
		return;
	char text[FS_RPCB_MAX_REGS * 96];
	size_t off = 0;
	for (unsigned i = 0; i < g_ndone; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%u %u %s %s\n",
					g_done[i].prog, g_done[i].vers, g_done[i].netid,
					g_done[i].uaddr);
	int rc = fs_write_file(g_record, text, off, 0600);
	if (rc < 0)
		fs_log_at(LOG_WARNING,
			  "rpcbind: cannot record the mappings in %s (%s): after a crash, remove "
			  "them by hand (rpcinfo -d)",
			  g_record, strerror(-rc));
}

void fs_rpcb_start(const char *state_dir, const struct fs_rpcb_reg *regs, unsigned n)
{
	g_ndone = 0;
	g_record[0] = 0;
	if (state_dir && state_dir[0])
		snprintf(g_record, sizeof(g_record), "%.4000s/rpcbind", state_dir);
	int fd = rpcb_connect();
	if (fd < 0) {
		fs_log_at(LOG_NOTICE,
			  "rpcbind is not running (no %s): nothing registered, so clients must "
			  "give the ports (mount -o port=,mountport=,nolock); start rpcbind "
			  "and restart rrr-server to be found",
			  sockets[0]);
		return;
	}
	if (g_record[0])
		clean_previous(fd);
	char held[4 * (FS_RPCB_UADDR + 32)];
	size_t off = 0;
	unsigned nheld = 0, nsm_held = 0;
	for (unsigned i = 0; i < n && i < FS_RPCB_MAX_REGS; i++) {
		const struct fs_rpcb_reg *r = &regs[i];
		int rc = rpcb_change(fd, RPCB_SET, r);
		if (rc < 0) {
			fs_log_at(LOG_WARNING,
				  "rpcbind did not answer SET of %s v%u %s (%s): clients may not "
				  "find this server; is rpcbind healthy (rpcinfo -p)?",
				  prog_name(r->prog), r->vers, r->netid, strerror(-rc));
			break;
		}
		if (rc == 1) {
			g_done[g_ndone++] = *r;
			continue;
		}
		if (r->prog == NSM_PROG_NUM) { /* the host's rpc.statd, normally: its own */
			nsm_held++;
			continue;
		}
		char other[FS_RPCB_UADDR] = "";
		rpcb_lookup(fd, r, other);
		if (nheld++ < 4)
			off += (size_t)snprintf(held + off, sizeof(held) - off, "%s%s v%u %s at %s",
						nheld > 1 ? ", " : "", prog_name(r->prog), r->vers,
						r->netid, other[0] ? other : "?");
	}
	close(fd);
	if (nheld)
		fs_log_at(LOG_NOTICE,
			  "rpcbind: %u mapping%s held by another server (%s%s): clients that ask "
			  "rpcbind find that one; stop it (the kernel's nfsd or lockd?) or give "
			  "clients this server's ports",
			  nheld, nheld > 1 ? "s" : "", held, nheld > 4 ? ", ..." : "");
	if (nsm_held)
		fs_log_at(LOG_INFO,
			  "rpcbind: NSM is registered by another status monitor (this host's "
			  "rpc.statd?): restarted clients send SM_NOTIFY there, and rrr-server "
			  "notices them at their next LOCK");
	write_record();
	if (g_ndone)
		fs_log_at(LOG_INFO, "rpcbind: registered %u mappings", g_ndone);
}

void fs_rpcb_stop(void)
{
	if (!g_ndone)
		return;
	int fd = rpcb_connect();
	if (fd >= 0) {
		for (unsigned i = 0; i < g_ndone; i++)
			if (unset_if_ours(fd, &g_done[i]) < 0)
				break;
		close(fd);
	}
	if (g_record[0])
		unlink(g_record);
	g_ndone = 0;
}

unsigned fs_rpcb_registered(void)
{
	return g_ndone;
}
