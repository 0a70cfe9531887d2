/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/checks.h - one verified call of each shape to the
 * procedures every client test server has (helpers/rdma_srv.c and the
 * server of clnt/svc.c): ECHO answers its payload, SUM answers the length,
 * the byte sum and the tag after the payload, FILL answers n bytes
 * (i * 7 + 3) as a payload, BIG answers n bytes (i * 5 + 1) as an opaque.
 */
#ifndef TESTS_CLNT_CHECKS_H
#define TESTS_CLNT_CHECKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/client.h>

/* Where the calls go: @clnt, program @prog (version 1), the procedure
 * numbers of ECHO, SUM, FILL and BIG there. */
struct tc_target {
	struct rrr_clnt *clnt;
	uint32_t prog;
	uint32_t echo, sum, fill, big;
};

/* ECHO of @src[@n]: as a DDP payload (@ddp), else as plain arguments with
 * room for the reply (the RDMA_NOMSG/reply-chunk path); asserts the same
 * bytes came back. */
void tc_check_echo(const struct tc_target *t, const uint8_t *src, uint32_t n, bool ddp);

/* SUM of the payload @iov[@niov] followed by @tag; asserts the answer. */
void tc_check_sum(const struct tc_target *t, const struct iovec *iov, unsigned niov, uint32_t tag);

/* FILL of @n bytes into @dst (@cap bytes, offered as @pieces pieces: 1 or
 * 2, the first a third): the call's status; when 0, asserted that @n bytes
 * came, each as FILL makes it. */
int tc_fill(const struct tc_target *t, uint8_t *dst, uint32_t n, uint32_t cap, unsigned pieces);

/* BIG of @n bytes (a reply chunk); asserts every byte. */
void tc_check_big(const struct tc_target *t, uint32_t n);

#endif
