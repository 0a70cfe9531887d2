/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/after_reply.c - rrr_svc_req_after_reply(): the function a
 * handler leaves runs once, after the reply was handed to the transport,
 * with the arguments still as the handler saw them (a 256 KiB payload that
 * came by read chunk over RDMA, or in the record over TCP: its bytes are
 * summed there and match what the client sent), and for a call the
 * handler dropped (no reply) with replied = false; a second one per
 * request is refused. The server runs in a forked process (soft provider
 * and TCP); what its after-reply functions saw comes back by a STAT call.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "../test_wait.h"
#include "helpers/calls.h"

#define AR_PROG 0x20000098u
enum { AR_NULL, AR_SUM, AR_DROP, AR_STAT };
#define PAY_LEN (256u << 10)

/* --- server process ------------------------------------------------------- */

struct seen {
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov;
	int second; /* what a second rrr_svc_req_after_reply() returned */
};

static atomic_uint runs, replied_runs, last_sum;

static void after(void *arg, bool replied)
{
	struct seen *s = arg;

	atomic_store(&last_sum, s ? tc_iov_sum(s->iov, s->niov) : 0);
	atomic_fetch_add(&runs, 1);
	if (replied)
		atomic_fetch_add(&replied_runs, 1);
}

static int h_sum(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct seen *sn = rrr_svc_req_alloc(r, sizeof(*sn));
	uint32_t len;

	(void)s;
	if (!sn || rrr_xdr_decode_payload(a, 1u << 20, &len, sn->iov, &sn->niov))
		return RRR_SVC_GARBAGE_ARGS;
	if (rrr_svc_req_after_reply(r, after, sn))
		return -EIO;
	sn->second = rrr_svc_req_after_reply(r, after, NULL);
	return sn->second == -EINVAL ? 0 : -EIO;
}

static int h_drop(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)a;
	(void)s;
	return rrr_svc_req_after_reply(r, after, NULL) ? -EIO : RRR_SVC_DROP;
}

/* result: runs, runs after a reply, the last sum */
static int h_stat(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	(void)r;
	(void)a;
	return rrr_xdr_put_u32(s, atomic_load(&runs)) ||
			   rrr_xdr_put_u32(s, atomic_load(&replied_runs)) ||
			   rrr_xdr_put_u32(s, atomic_load(&last_sum))
		   ? -EIO
		   : 0;
}

static const struct rrr_svc_proc procs[] = {
    [AR_NULL] = {"null", tc_h_null},
    [AR_SUM] = {"sum", h_sum},
    [AR_DROP] = {"drop", h_drop},
    [AR_STAT] = {"stat", h_stat},
};

static const struct rrr_svc_program prog = {AR_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]),
					    NULL};

/* --- client side ---------------------------------------------------------- */

static pid_t child;
static struct rrr_clnt *clnt;

static void start(const char *transport)
{
	uint16_t ports[2];

	child = tc_fork_program(&prog, 1, ports);
	tc_connect(&clnt, transport, ports, NULL);
}

static void start_rdma(void)
{
	start("rdma");
}

static void start_tcp(void)
{
	start("tcp");
}

static void stop(void)
{
	tc_disconnect_stop(&clnt, &child);
}

TestSuite(after_reply, .fini = stop, .timeout = 60);

static void stat3(uint32_t w[3])
{
	struct rrr_call c;
	struct tc_got g = {0};

	tc_call_init(&c, AR_PROG, AR_STAT);
	tc_codec(&c, NULL, NULL, tc_dec_3u32, &g);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	memcpy(w, g.w, sizeof(g.w));
}

static void runs_after_the_reply(void)
{
	static uint8_t buf[PAY_LEN];
	struct iovec iov = {buf, sizeof(buf)};
	struct tc_pay p = {&iov, 1, PAY_LEN, 0};
	struct rrr_call c;
	uint32_t w[3];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + 7);
	tc_call_init(&c, AR_PROG, AR_SUM);
	tc_codec(&c, tc_enc_pay, &p, NULL, NULL);
	tc_payload(&c, RRR_DDP_TO_SERVER, &iov, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
	/* the reply may reach us before the function ran: wait for it */
	cr_assert(TEST_WAIT_UNTIL((stat3(w), w[0] >= 1), 5000), "the after-reply function ran");
	cr_assert_eq(w[0], 1, "once");
	cr_assert_eq(w[1], 1, "after a reply");
	cr_assert_eq(w[2], tc_iov_sum(&iov, 1), "over the arguments as sent");

	/* a dropped call: no reply, the function runs with replied = false */
	tc_call_init(&c, AR_PROG, AR_DROP);
	c.timeout_ms = 200;
	cr_assert_eq(rrr_clnt_call(clnt, &c), -ETIMEDOUT);
	cr_assert(TEST_WAIT_UNTIL((stat3(w), w[0] >= 2), 5000));
	cr_assert_eq(w[0], 2);
	cr_assert_eq(w[1], 1, "the dropped call's ran without a reply");
}

Test(after_reply, rdma_read_chunk, .init = start_rdma)
{
	runs_after_the_reply();
}

Test(after_reply, tcp, .init = start_tcp)
{
	runs_after_the_reply();
}
