/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/rpcbind.c - rrr-server is found through this host's rpcbind
 * (server/fs/rpcb.c), checked with Debian's rpcbind and rpcinfo.
 *
 * A server registers NFS v3 on tcp, tcp6, rdma, rdma6, MOUNT v3 on tcp
 * and tcp6, and NSM v1 (SM_NOTIFY) on udp, udp6 and tcp with its bound
 * ports (NSM only where no rpc.statd holds it); SIGTERM unregisters them; a server killed
 * with SIGKILL leaves them, and the next start on the same state directory
 * replaces them with its own. Without rpcbind the server says so in one
 * line and serves. The default NFS port 2049 is taken when free, and a
 * server whose 2049 is taken serves on the mount port and says so.
 *
 * rpcbind is the host's: the one running, or one this test starts (and
 * stops) when none runs and the binary is installed; the case without
 * rpcbind runs first when none runs. Only that test's servers register.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/nfs_helpers.h"
#include "tests/lib/rpcbind.h"

struct mapping {
	unsigned prog, vers;
	char netid[16], addr[64];
};

/* rpcinfo's table (program, version, netid, address, ...): how many rows. */
static int rpcinfo(struct mapping *m, int cap)
{
	char out[] = "/tmp/rrr-rpcinfo-XXXXXX";
	int fd = mkstemp(out);
	cr_assert_geq(fd, 0);
	close(fd);
	char *argv[] = {"rpcinfo", NULL};
	cr_assert_eq(th_run(argv, out, 10), 0, "rpcinfo failed");
	FILE *f = fopen(out, "r");
	cr_assert_not_null(f);
	char line[256];
	int n = 0;
	while (fgets(line, sizeof(line), f) && n < cap)
		if (sscanf(line, "%u %u %15s %63s", &m[n].prog, &m[n].vers, m[n].netid,
			   m[n].addr) == 4)
			n++;
	fclose(f);
	unlink(out);
	return n;
}

/* The address @prog v@vers on @netid has ("" when none) into @addr. */
static void lookup(unsigned prog, unsigned vers, const char *netid, char *addr)
{
	struct mapping m[128];
	int n = rpcinfo(m, 128);
	addr[0] = 0;
	for (int i = 0; i < n; i++)
		if (m[i].prog == prog && m[i].vers == vers && !strcmp(m[i].netid, netid))
			snprintf(addr, 64, "%s", m[i].addr);
}

static void uaddr(const char *ip, unsigned port, char *out)
{
	snprintf(out, 64, "%s.%u.%u", ip, port >> 8, port & 255);
}

struct ports {
	unsigned rdma, mount, tcp;
};

static void read_ports(const struct th_server *s, struct ports *p)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/ports", s->dir);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "rdma=%u mount=%u tcp=%u", &p->rdma, &p->mount, &p->tcp), 3);
	fclose(f);
}

static bool g_nsm_free; /* no status monitor (rpc.statd) held NSM before the test */

static void expect_registered(const struct ports *p)
{
	const struct {
		unsigned prog;
		const char *netid, *ip, *what;
		unsigned port;
	} rows[] = {
		{100003, "tcp", "0.0.0.0", "NFS v3 tcp", p->tcp},
		{100003, "tcp6", "::", "NFS v3 tcp6", p->tcp},
		{100003, "rdma", "0.0.0.0", "NFS v3 rdma", p->rdma},
		{100005, "tcp", "0.0.0.0", "MOUNT v3 tcp", p->mount},
		{100005, "tcp6", "::", "MOUNT v3 tcp6", p->mount},
	};
	char want[64], got[64];

	if (g_nsm_free) { /* SM_NOTIFY: NSM v1 on udp and tcp at the mount port */
		uaddr("0.0.0.0", p->mount, want);
		lookup(100024, 1, "udp", got);
		cr_assert_str_eq(got, want, "NSM v1 udp");
		lookup(100024, 1, "tcp", got);
		cr_assert_str_eq(got, want, "NSM v1 tcp");
		uaddr("::", p->mount, want);
		lookup(100024, 1, "udp6", got);
		cr_assert_str_eq(got, want, "NSM v1 udp6");
	}
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uaddr(rows[i].ip, rows[i].port, want);
		lookup(rows[i].prog, 3, rows[i].netid, got);
		cr_assert_str_eq(got, want, "%s", rows[i].what);
	}
}

static const char *const free_tcp[] = {"--tcp-port", "0", NULL};

Test(nfs_rpcbind, registers_unregisters_and_cleans_after_a_crash, .timeout = 120)
{
	char got[64];
	th_need_server();
	if (!th_rpcbind_up()) { /* first without rpcbind: one line, and it serves */
		struct th_server n = {0};
		cr_assert_eq(th_mkdirs(&n), 0);
		n.rpcbind = true;
		n.extra_args = free_tcp;
		cr_assert_eq(th_server_start(&n, false), 0);
		cr_assert_eq(th_count_lines(n.log, "rpcbind is not running"), 1);
		cr_assert_eq(th_server_stop(&n), 0);
		th_cleanup(&n);
	}
	if (!th_rpcbind_need())
		cr_skip_test("no rpcbind on this host (apt-get install rpcbind), or not root to start it");
	lookup(100003, 3, "tcp", got);
	if (got[0]) {
		th_rpcbind_release();
		cr_skip_test("another NFS server (%s) is registered with this host's rpcbind", got);
	}
	lookup(100024, 1, "udp", got);
	g_nsm_free = !got[0];
	struct th_server s = {0};
	cr_assert_eq(th_mkdirs(&s), 0);
	s.rpcbind = true;
	s.extra_args = free_tcp;
	cr_assert_eq(th_server_start(&s, true), 0);
	struct ports p1, p2;
	read_ports(&s, &p1);
	cr_assert_neq(p1.tcp, 0u);
	expect_registered(&p1);

	/* a crash leaves the mappings; the next start replaces them */
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	s.pid = -1;
	expect_registered(&p1);
	cr_assert_eq(th_server_start(&s, true), 0);
	read_ports(&s, &p2);
	cr_assert(p2.tcp != p1.tcp || p2.mount != p1.mount, "free ports differ between starts");
	expect_registered(&p2);
	cr_assert(th_file_contains(s.log, "removed the mappings of a previous run"));

	/* a second server on the same rpcbind leaves the first one's mappings */
	struct th_server o = {0};
	cr_assert_eq(th_mkdirs(&o), 0);
	o.rpcbind = true;
	o.extra_args = free_tcp;
	cr_assert_eq(th_server_start(&o, true), 0);
	expect_registered(&p2);
	cr_assert_eq(th_count_lines(o.log, "held by another server"), 1);
	cr_assert_eq(th_server_stop(&o), 0);
	expect_registered(&p2);
	th_cleanup(&o);

	/* SIGTERM unregisters */
	cr_assert_eq(th_server_stop(&s), 0);
	lookup(100003, 3, "tcp", got);
	cr_assert_str_eq(got, "", "NFS v3 tcp left after exit");
	lookup(100005, 3, "tcp", got);
	cr_assert_str_eq(got, "", "MOUNT v3 tcp left after exit");
	lookup(100003, 3, "rdma", got);
	cr_assert_str_eq(got, "", "NFS v3 rdma left after exit");
	if (g_nsm_free) {
		lookup(100024, 1, "udp", got);
		cr_assert_str_eq(got, "", "NSM v1 udp left after exit");
	}
	th_cleanup(&s);
	th_rpcbind_release();
}

Test(nfs_rpcbind, nfs_port_2049_when_free, .timeout = 60)
{
	th_need_server();
	/* hold 2049 (or find it held): the server must say so and serve on the mount port */
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	int zero = 0;
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(2049),
				 .sin6_addr = IN6ADDR_ANY_INIT};
	bool mine = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 1) == 0;
	if (!mine && errno != EADDRINUSE) {
		close(fd);
		cr_skip_test("cannot bind TCP port 2049 here (%s)", strerror(errno));
	}
	struct th_server s = {0};
	const char *const args[] = {"--no-rpcbind", NULL};
	cr_assert_eq(th_mkdirs(&s), 0);
	s.rpcbind = true; /* the default ports */
	s.extra_args = args;
	cr_assert_eq(th_server_start(&s, false), 0);
	struct ports pt;
	read_ports(&s, &pt);
	cr_assert_eq(pt.tcp, 0u, "2049 is taken: no NFS port of its own");
	cr_assert_eq(th_count_lines(s.log, "TCP port 2049 is taken"), 1);
	cr_assert_eq(th_server_stop(&s), 0);
	close(fd);
	th_cleanup(&s);
}
