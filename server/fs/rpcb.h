/* SPDX-License-Identifier: MIT */
/*
 * server/fs/rpcb.h - rrr-server's registrations with the local rpcbind
 * (rpcb.c): what a client finds when it asks this host for the NFS, MOUNT
 * and lock managers' ports.
 */
#ifndef RRR_SERVER_FS_RPCB_H
#define RRR_SERVER_FS_RPCB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_RPCB_MAX_REGS 16u
#define FS_RPCB_UADDR 64u /* "a.b.c.d.p1.p2", "ipv6.p1.p2" with room */

/* One (program, version, netid) -> universal address mapping (RFC 1833). */
struct fs_rpcb_reg {
	uint32_t prog, vers;
	char netid[8];               /* "tcp", "tcp6", "rdma", "rdma6" */
	char uaddr[FS_RPCB_UADDR];
};

/* The universal address of @port on @host (an IPv4 or IPv6 literal; NULL or
 * a name: the wildcard of @family, AF_INET or AF_INET6) into @out
 * (FS_RPCB_UADDR bytes). False (nothing written) when @host is a literal
 * of the other family: that netid has no address then. */
bool fs_rpcb_uaddr(int family, const char *host, uint16_t port, char *out);

/* Register @n mappings with the local rpcbind (its unix socket). Entries
 * a previous run of this server left behind (it crashed) are removed first:
 * those recorded in @state_dir/rpcbind that rpcbind still maps to the same
 * address. A mapping another server holds (the kernel's nfsd, a second
 * rrr-server) is left alone and logged. Without rpcbind, one line says so and
 * nothing is registered. Never fails: the server serves either way.
 * MAY BLOCK (a few round trips to rpcbind, 2 s each at most). Not
 * thread-safe: at start, before the workers. */
void fs_rpcb_start(const char *state_dir, const struct fs_rpcb_reg *regs, unsigned n);
/* Remove what fs_rpcb_start registered, when rpcbind still maps it to our
 * address, and the record in the state dir. MAY BLOCK. */
void fs_rpcb_stop(void);
/* How many mappings fs_rpcb_start made (0 without rpcbind). */
unsigned fs_rpcb_registered(void);

#endif
