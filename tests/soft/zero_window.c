/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/zero_window.c - a peer that stops reading must not block a
 * local invalidation. The peer (a raw socket speaking MPA itself, with a
 * small receive buffer) asks with one RDMA Read Request for 16 MiB of a
 * registration, then never reads its socket again: the victim's Read
 * Response stalls on a zero window. A timed-out call's LOCAL_INV of that
 * registration must still complete at once (it needs no wire), and the
 * stalled Read Response must then abort the connection instead of sending
 * more bytes of the invalidated memory. Before the fix the LOCAL_INV waited
 * behind the Read Response forever.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rrr/crc32c.h>

#include "helpers/harness.h"
#include "transport/soft/soft.h"

#define PG     4096u
#define NPAGES 4096u /* 16 MiB */

/* The peer: MPA Request / Reply / RTR, one Read Request, then it only
 * waits on the control socket, never reading the connection. */
static int stalled_peer(int oob)
{
	struct soft_read_req q;
	struct th_key k;
	uint8_t f[128];
	uint16_t port;
	size_t n;
	int fd;
	char c;

	if (th_oob_recv(oob, &port, sizeof(port), TH_TIMEOUT_MS))
		return 2;
	fd = th_raw_mpa_connect(port, 4096);
	if (fd < 0)
		return 3;
	if (th_oob_recv(oob, &k, sizeof(k), TH_TIMEOUT_MS))
		return 6;
	q = (struct soft_read_req){.sink_stag = 0x4242,
				   .sink_to = 0,
				   .size = (uint32_t)k.len,
				   .src_stag = k.rkey,
				   .src_to = k.addr};
	n = rrr__soft_hdr_untagged(f, SOFT_OP_READ_REQ, true, 0, SOFT_QN_READ, 1, 0,
				   SOFT_READ_REQ_LEN);
	rrr__soft_read_req_encode(f + n, &q);
	n += SOFT_READ_REQ_LEN;
	uint32_t crc = rrr_crc32c(0, f, n);
	f[n] = (uint8_t)crc, f[n + 1] = (uint8_t)(crc >> 8), f[n + 2] = (uint8_t)(crc >> 16);
	f[n + 3] = (uint8_t)(crc >> 24);
	if (th_oob_send(fd, f, n + 4))
		return 7;
	c = 's';
	if (th_oob_send(oob, &c, 1))
		return 8;
	/* never read fd: the victim's Read Response meets a zero window */
	if (th_oob_recv(oob, &c, 1, 30000))
		return 9;
	close(fd);
	return 0;
}

Test(soft_zero_window, local_inv_not_blocked_by_a_stalled_read_response, .timeout = 60)
{
	uint8_t *buf = aligned_alloc(PG, (size_t)NPAGES * PG);
	struct rrr_sg sg = {buf, 0, NPAGES * PG};
	struct rrr_send_wr inv = {
	    .wr_id = 77, .opcode = RRR_WR_LOCAL_INV, .flags = RRR_SEND_SIGNALED};
	struct rrr_mr *fr;
	struct rrr_wc wc;
	struct th_ep s;
	struct th_key k;
	uint16_t port;
	int sv[2], status, st = 0;
	pid_t pid;
	char c;

	cr_assert_not_null(buf);
	memset(buf, 0x5a, (size_t)NPAGES * PG);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork(); /* before any device exists (see harness.c) */
	cr_assert(pid >= 0);
	if (pid == 0) {
		alarm(40);
		close(sv[0]);
		_exit(stalled_peer(sv[1]));
	}
	close(sv[1]);
	cr_assert_eq(th_open(&s, "max_fr_pages=4096"), 0);
	cr_assert_eq(th_listen(&s, &port), 0);
	cr_assert_eq(th_oob_send(sv[0], &port, sizeof(port)), 0);
	cr_assert_eq(th_accept(&s, NULL, 0), 0);
	cr_assert_eq(rrr_mr_alloc(s.pd, NPAGES, &fr), 0);
	cr_assert_eq(rrr_mr_map_sg(fr, &sg, 1, RRR_ACCESS_REMOTE_READ), 1);
	cr_assert_eq(th_post_reg(&s, fr, RRR_ACCESS_REMOTE_READ, 1), 0);
	k = (struct th_key){(uintptr_t)buf, (uint64_t)NPAGES * PG, rrr_mr_rkey(fr), 0};
	cr_assert_eq(th_oob_send(sv[0], &k, sizeof(k)), 0);
	cr_assert_eq(th_oob_recv(sv[0], &c, 1, TH_TIMEOUT_MS), 0, "peer sent its Read Request");
	/* drive the Read Response until it stalls (no completion is due) */
	cr_assert_eq(th_wc(&s, &wc, 500), 0);
	cr_assert_eq(rrr__soft_qp_info(s.qp, NULL, NULL, &st), 0);
	cr_assert_eq(st, SOFT_QP_RTS, "still up, blocked on the peer's zero window");

	/* the call timed out: invalidate its registration */
	inv.u.inv.rkey = rrr_mr_rkey(fr);
	cr_assert_eq(rrr_qp_post_send(s.qp, &inv, NULL), 0);
	cr_assert_eq(th_wc(&s, &wc, 2000), 1,
		     "the LOCAL_INV waited behind the stalled Read Response");
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.status, RRR_WC_SUCCESS, "%s", rrr_wc_status_str(wc.status));
	/* the rest of the Read Response would come from invalidated memory: the
	 * connection is aborted instead (at the next send attempt) */
	for (int i = 0; i < 40 && st != SOFT_QP_ERROR; i++) {
		th_wc(&s, &wc, 50);
		cr_assert_eq(rrr__soft_qp_info(s.qp, NULL, NULL, &st), 0);
	}
	cr_assert_eq(st, SOFT_QP_ERROR, "the stalled Read Response was aborted");

	c = 'd';
	th_oob_send(sv[0], &c, 1);
	waitpid(pid, &status, 0);
	close(sv[0]);
	rrr_qp_destroy(s.qp);
	s.qp = NULL;
	rrr_mr_dereg(fr);
	th_close(&s);
	free(buf);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "peer status 0x%x", status);
}
