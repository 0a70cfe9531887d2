/* SPDX-License-Identifier: MIT */
/*
 * tests/nfs/nsm_udp.c - a client that restarted tells rrr-server so with
 * SM_NOTIFY (NSM, program 100024 v1, procedure 6) over UDP, as Linux's
 * sm-notify does, or over TCP (server/fs/nsm_udp.c, nsm_svc.c), against a
 * real server process on real sockets.
 *
 * What is checked: a client holds a lock (NLM over TCP, made by hand with
 * the client library); an SM_NOTIFY datagram from its address with its
 * name and a new state releases it (another client's LOCK is then
 * granted), and the reply comes back to the sender; the same notification
 * again, once the client has locked anew under that state, releases
 * nothing; NULL is answered, another program, version or procedure gets
 * PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL. A garbage datagram, one
 * larger than any NSM call, an oversized, empty or cut mon_name and bytes
 * after the arguments change nothing, and the server keeps answering. A
 * sender outside the export's allow list gets no answer and changes
 * nothing. SM_NOTIFY over TCP releases the locks too. Wireshark decodes
 * the SM_NOTIFY datagram and its reply as NSM. The server runs
 * without rpcbind (its registration is checked in rpcbind.c).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/nfs3_client.h>
#include <rrr/oncrpc.h>

#include "server/fs/nlm_xdr.h"
#include "tests/lib/nfs_helpers.h"
#include "tests/lib/tshark.h"

static struct th_server srv;
static struct rrr_nfs3_fh fh;
static struct rrr_clnt *clnt;

/* ------------------------------------------------------ the lock client */

static int enc_lock(struct rrr_xdr *x, const void *p)
{
	return nlm4_enc_args(x, NLM4_LOCK, p);
}

static int dec_res(struct rrr_xdr *x, void *p)
{
	return nlm4_dec_res(x, false, p);
}

/* An exclusive LOCK of the whole file by client @caller in NSM state
 * @state: the nlm4_stats answered. */
static uint32_t lock(const char *caller, int32_t state)
{
	static struct nlm4_args a;
	static struct nlm4_res r;
	memset(&a, 0, sizeof(a));
	a.cookie.len = 4;
	a.exclusive = true;
	snprintf(a.lock.caller, sizeof(a.lock.caller), "%s", caller);
	a.lock.fh.len = fh.len;
	memcpy(a.lock.fh.data, fh.data, fh.len);
	a.lock.oh.len = (uint32_t)snprintf((char *)a.lock.oh.data, 64, "1@%s", caller);
	a.lock.svid = 1;
	a.state = state;
	struct rrr_call k = {.prog = NLM_PROG, .vers = NLM_VERS4, .proc = NLM4_LOCK,
			     .encode = enc_lock, .args = &a, .decode = dec_res, .res = &r,
			     .timeout_ms = 10000};
	int rc = rrr_clnt_call(clnt, &k);
	cr_assert_eq(rc, 0, "LOCK failed: %d (%s)", rc, rrr_last_error());
	return r.stat;
}

/* Start the server (with @extra options), find the handle of a file and
 * connect the lock client over TCP. */
static void start(const char *const *extra)
{
	th_need_server();
	cr_assert_eq(th_mkdirs(&srv), 0);
	char path[400];
	snprintf(path, sizeof(path), "%s/f", srv.export_dir);
	int fd = open(path, O_CREAT | O_RDWR, 0666);
	cr_assert_geq(fd, 0);
	close(fd);
	srv.extra_args = extra;
	cr_assert_eq(th_server_start(&srv, false), 0);
	struct th_mount m;
	th_mount_opts(&srv, false, &m);
	struct rrr_nfs3 *nfs = th_nfs_mount(&m);
	cr_assert_eq(rrr_nfs3_lookup(nfs, rrr_nfs3_root(nfs), "f", &fh, NULL), 0);
	rrr_nfs3_umount(nfs);
	struct rrr_clnt_opts co;
	rrr_clnt_opts_init(&co);
	co.transport = "tcp";
	co.host = "127.0.0.1";
	co.port = m.port; /* over TCP: the mount port */
	co.timeout_ms = 10000;
	cr_assert_eq(rrr_clnt_create(&co, &clnt), 0, "connect: %s", rrr_last_error());
}

static void fini(void)
{
	if (clnt)
		rrr_clnt_destroy(clnt);
	clnt = NULL;
	th_cleanup(&srv);
	memset(&srv, 0, sizeof(srv));
}

static void tshark_fini(void)
{
	th_tshark_stop();
	fini();
}

/* ------------------------------------------------------- the datagrams */

static uint32_t g_xid = 0x5a000000u;

/* An NSM-shaped call header for @prog/@vers/@proc into @x (a buffer of
 * @cap bytes at @buf). */
static void header(struct rrr_xdr *x, uint8_t *buf, size_t cap, uint32_t prog, uint32_t vers,
		   uint32_t proc)
{
	rrr_xdr_init(x, buf, cap, RRR_XDR_ENCODE);
	cr_assert_eq(rrr_rpc_encode_call(x, ++g_xid, prog, vers, proc, NULL), 0);
}

/* SM_NOTIFY(@name, @state) into @buf: its length. */
static size_t notify_msg(uint8_t *buf, size_t cap, const char *name, int32_t state)
{
	struct rrr_xdr x;
	header(&x, buf, cap, NSM_PROG, NSM_VERS, NSM_NOTIFY);
	struct nlm_notify n = {.state = state};
	snprintf(n.name, sizeof(n.name), "%s", name);
	cr_assert_eq(nlm_enc_notify(&x, &n), 0);
	return rrr_xdr_pos(&x);
}

/*
 * Send @len bytes of @msg over UDP from @src (an IPv4 literal) to the
 * server's NSM port (the mount port) and wait @ms for an answer: its
 * accept_stat, or -1 when none came. An answer must be an accepted reply
 * to the last xid, sent to our own address.
 */
static int udp_call(const char *src, const void *msg, size_t len, int ms)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in me = {.sin_family = AF_INET};
	cr_assert_eq(inet_pton(AF_INET, src, &me.sin_addr), 1);
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) {
		close(fd);
		cr_skip_test("cannot bind a UDP socket to %s (%s)", src, strerror(errno));
	}
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.mount_port)};
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(sendto(fd, msg, len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)len);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int st = -1;
	if (poll(&p, 1, ms) == 1) {
		uint8_t buf[512];
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		cr_assert_gt(n, 0);
		cr_assert_eq(from.sin_port, to.sin_port, "the reply comes from the NSM port");
		struct rrr_xdr x;
		struct rrr_rpc_reply r;
		rrr_xdr_init(&x, buf, (size_t)n, RRR_XDR_DECODE);
		cr_assert_eq(rrr_rpc_decode_reply(&x, &r), 0, "a well-formed reply");
		cr_assert_eq(r.xid, g_xid, "the reply to our call");
		cr_assert_eq(r.stat, RRR_RPC_MSG_ACCEPTED);
		if (r.accept_stat == RRR_RPC_PROG_MISMATCH)
			cr_assert(r.mismatch_low == 1 && r.mismatch_high == 1, "NSM v1 only");
		if (r.accept_stat == RRR_RPC_SUCCESS)
			cr_assert_eq(rrr_xdr_remaining(&x), 0, "NULL and SM_NOTIFY return void");
		st = (int)r.accept_stat;
	}
	close(fd);
	return st;
}

static int notify(const char *src, const char *name, int32_t state)
{
	uint8_t buf[2048];
	size_t n = notify_msg(buf, sizeof(buf), name, state);
	return udp_call(src, buf, n, 5000);
}

/* --------------------------------------------------------------- tests */

static const char *const info[] = {"--log-level", "info", NULL};

Test(nfs_nsm_udp, sm_notify_releases_the_clients_locks, .fini = fini, .timeout = 60)
{
	start(info);
	cr_assert_eq(lock("cli1", 5), NLM4_GRANTED_ST);
	cr_assert_eq(lock("cli2", 9), NLM4_DENIED, "cli1 holds the file");
	/* another client's name, or cli1's state unchanged: nothing released */
	cr_assert_eq(notify("127.0.0.1", "cli3", 7), RRR_RPC_SUCCESS);
	cr_assert_eq(notify("127.0.0.1", "cli1", 5), RRR_RPC_SUCCESS);
	cr_assert_eq(lock("cli2", 9), NLM4_DENIED, "cli1 still holds the file");
	/* cli1 restarted: state 7 */
	cr_assert_eq(notify("127.0.0.1", "cli1", 7), RRR_RPC_SUCCESS);
	cr_assert_eq(lock("cli2", 9), NLM4_GRANTED_ST, "cli1's lock is gone");
	/* cli2 restarts, cli1 takes the file under its new state; the same
	 * notification again (a retransmission) leaves that lock alone */
	cr_assert_eq(notify("127.0.0.1", "cli2", 11), RRR_RPC_SUCCESS);
	cr_assert_eq(lock("cli1", 7), NLM4_GRANTED_ST);
	cr_assert_eq(notify("127.0.0.1", "cli1", 7), RRR_RPC_SUCCESS);
	cr_assert_eq(lock("cli2", 11), NLM4_DENIED, "a repeated SM_NOTIFY releases nothing");

	/* NULL, and what is not served */
	uint8_t buf[256];
	struct rrr_xdr x;
	header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, NSM_NULL);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_SUCCESS);
	header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, NSM_MON);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_PROC_UNAVAIL);
	header(&x, buf, sizeof(buf), NSM_PROG, 2, NSM_NOTIFY);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_PROG_MISMATCH);
	header(&x, buf, sizeof(buf), NLM_PROG, NLM_VERS4, NLM4_FREE_ALL);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_PROG_UNAVAIL,
		     "only NSM over UDP");
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "client cli1 (127.0.0.1) restarted (SM_NOTIFY over UDP"));
	cr_assert(th_file_contains(srv.log, "nsm.notify_calls 5"));
	cr_assert(th_file_contains(srv.log, "nsm.notify_released 2"));
	cr_assert(th_file_contains(srv.log, "nsm.udp.unavail 3"));
}

Test(nfs_nsm_udp, garbage_and_oversized_names_change_nothing, .fini = fini, .timeout = 60)
{
	start(NULL);
	cr_assert_eq(lock("cli1", 5), NLM4_GRANTED_ST);
	static uint8_t buf[4096];
	struct rrr_xdr x;

	/* not an RPC call: no answer */
	for (size_t i = 0; i < 200; i++)
		buf[i] = (uint8_t)(i * 37u + 11u);
	cr_assert_eq(udp_call("127.0.0.1", buf, 200, 500), -1, "garbage is not answered");
	cr_assert_eq(udp_call("127.0.0.1", buf, 3, 500), -1, "nor three bytes");
	/* larger than any NSM call: dropped whole, unanswered */
	notify_msg(buf, sizeof(buf), "cli1", 7); /* that begins like a good call */
	cr_assert_eq(udp_call("127.0.0.1", buf, 3000, 500), -1, "an oversized datagram");

	/* mon_name over SM_MAXSTRLEN (1025 bytes) */
	header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, NSM_NOTIFY);
	char big[1026];
	memset(big, 'a', 1025);
	big[1025] = 0;
	memcpy(big, "cli1", 4);
	cr_assert_eq(rrr_xdr_put_string(&x, big), 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 7), 0);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_GARBAGE_ARGS,
		     "a mon_name of 1025 bytes");
	/* a length word far past the datagram */
	header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, NSM_NOTIFY);
	cr_assert_eq(rrr_xdr_put_u32(&x, 0x7fffffffu), 0);
	cr_assert_eq(rrr_xdr_put_u32(&x, 0x636c6931u), 0);
	cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_GARBAGE_ARGS,
		     "a mon_name cut short");
	/* an empty mon_name; no state; bytes after the arguments */
	size_t n = notify_msg(buf, sizeof(buf), "", 7);
	cr_assert_eq(udp_call("127.0.0.1", buf, n, 5000), RRR_RPC_GARBAGE_ARGS, "empty mon_name");
	n = notify_msg(buf, sizeof(buf), "cli1", 7);
	cr_assert_eq(udp_call("127.0.0.1", buf, n - 4, 5000), RRR_RPC_GARBAGE_ARGS, "no state");
	memset(buf + n, 0, 4);
	cr_assert_eq(udp_call("127.0.0.1", buf, n + 4, 5000), RRR_RPC_GARBAGE_ARGS,
		     "bytes after the arguments");

	cr_assert_eq(lock("cli2", 9), NLM4_DENIED, "none of it released cli1's lock");
	cr_assert_eq(notify("127.0.0.1", "cli1", 7), RRR_RPC_SUCCESS, "still answering");
	cr_assert_eq(lock("cli2", 9), NLM4_GRANTED_ST);
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "nsm.udp.garbage 7"));
	cr_assert(th_file_contains(srv.log, "nsm.udp.oversized 1"));
	cr_assert(th_file_contains(srv.log, "nsm.notify_calls 1"));
}

Test(nfs_nsm_udp, a_sender_outside_the_allow_list_changes_nothing, .fini = fini, .timeout = 60)
{
	static const char *const allow[] = {"--allow", "127.0.0.1", NULL};
	start(allow);
	cr_assert_eq(lock("cli1", 5), NLM4_GRANTED_ST);
	cr_assert_eq(notify("127.0.0.2", "cli1", 7), -1, "an outsider gets no answer");
	uint8_t buf[256];
	struct rrr_xdr x;
	header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, NSM_NULL);
	cr_assert_eq(udp_call("127.0.0.2", buf, rrr_xdr_pos(&x), 500), -1, "not even to NULL");
	cr_assert_eq(lock("cli2", 9), NLM4_DENIED, "cli1's lock holds");
	cr_assert_eq(notify("127.0.0.1", "cli1", 7), RRR_RPC_SUCCESS);
	cr_assert_eq(lock("cli2", 9), NLM4_GRANTED_ST, "from the client itself it is released");
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "ignored an NSM call over UDP from 127.0.0.2"));
	cr_assert(th_file_contains(srv.log, "nsm.notify_refused 2"));
	cr_assert(th_file_contains(srv.log, "nsm.notify_calls 1"));
}

static int enc_notify(struct rrr_xdr *x, const void *p)
{
	return nlm_enc_notify(x, p);
}

Test(nfs_nsm_udp, sm_notify_over_tcp_too, .fini = fini, .timeout = 60)
{
	start(info);
	cr_assert_eq(lock("cli1", 5), NLM4_GRANTED_ST);
	struct nlm_notify n = {.state = 7};
	snprintf(n.name, sizeof(n.name), "cli1");
	struct rrr_call k = {.prog = NSM_PROG, .vers = NSM_VERS, .proc = NSM_NOTIFY,
			     .encode = enc_notify, .args = &n, .timeout_ms = 10000};
	cr_assert_eq(rrr_clnt_call(clnt, &k), 0, "SM_NOTIFY over TCP: %s", rrr_last_error());
	cr_assert_eq(lock("cli2", 9), NLM4_GRANTED_ST, "cli1's lock is gone");
	cr_assert_eq(th_server_stop(&srv), 0);
	cr_assert(th_file_contains(srv.log, "(SM_NOTIFY over TCP, state 7)"));
}

/* Wireshark decodes the datagrams: SM_NOTIFY over UDP, call and reply, as
 * NSM ("stat"), with the name and state sent, nothing malformed. */
Test(nfs_nsm_udp, tshark_decodes_sm_notify_over_udp, .fini = tshark_fini, .timeout = 120)
{
	char pcap[400], why[256], filter[64], f[128];
	long n = 0;

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		cr_skip_test("tshark is not installed (Debian package tshark)");
	start(NULL);
	snprintf(pcap, sizeof(pcap), "/tmp/rrr-nsm-%d.pcapng", (int)getpid());
	snprintf(filter, sizeof(filter), "udp port %u", srv.mount_port);
	if (th_tshark_start(filter, pcap, why, sizeof(why)) < 0)
		cr_skip_test("%s", why);
	/* the capture is live once a probe (NSM NULL) shows up in the file */
	for (int i = 0; i < 100 && n < 1; i++) {
		uint8_t buf[256];
		struct rrr_xdr x;

		header(&x, buf, sizeof(buf), NSM_PROG, NSM_VERS, 0);
		cr_assert_eq(udp_call("127.0.0.1", buf, rrr_xdr_pos(&x), 5000), RRR_RPC_SUCCESS);
		usleep(100000);
		n = th_tshark_frames(pcap, "stat.procedure_v1 == 0 && rpc.msgtyp == 1");
	}
	if (n < 1)
		cr_skip_test("tshark captured nothing on lo in 10 s");
	cr_assert_eq(notify("127.0.0.1", "client-7.example", 9), RRR_RPC_SUCCESS);
	snprintf(f, sizeof(f), "stat.procedure_v1 == 6 && rpc.msgtyp == 1");
	for (int i = 0; i < 100 && th_tshark_frames(pcap, f) < 1; i++)
		usleep(100000); /* dumpcap may still be writing */
	th_tshark_stop();
	cr_assert_eq(th_tshark_frames(pcap, "stat.procedure_v1 == 6 && rpc.msgtyp == 0 && "
					    "stat.mon_id.name == \"client-7.example\" && "
					    "stat.state == 9"),
		     1, "the SM_NOTIFY call decoded with its name and state");
	cr_assert_eq(th_tshark_frames(pcap, f), 1, "and its reply");
	cr_assert_eq(th_tshark_frames(pcap, "_ws.malformed || _ws.expert.severity >= \"Error\""),
		     0);
	unlink(pcap);
}
