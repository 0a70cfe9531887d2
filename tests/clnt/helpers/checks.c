/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/checks.c - verified calls to the client test servers'
 * procedures (see checks.h).
 */
#include "checks.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"

void tc_check_echo(const struct tc_target *t, const uint8_t *src, uint32_t n, bool ddp)
{
	uint8_t *dst = malloc(n + 3);
	struct iovec s = {(void *)src, n};
	struct tc_pay p = {&s, 1, n, 0};
	struct tc_got g = {.copy = dst};
	struct rrr_call c;

	cr_assert(dst);
	tc_call_init(&c, t->prog, t->echo);
	tc_codec(&c, tc_enc_pay, &p, tc_dec_pay, &g);
	if (ddp)
		tc_payload(&c, RRR_DDP_TO_SERVER, &s, 1);
	else
		c.reply_hint = n + 64; /* not DDP: the args are just large */
	cr_assert_eq(rrr_clnt_call(t->clnt, &c), 0);
	cr_assert_eq(g.len, n);
	cr_assert_eq(memcmp(src, dst, n), 0);
	free(dst);
}

void tc_check_sum(const struct tc_target *t, const struct iovec *iov, unsigned niov, uint32_t tag)
{
	uint32_t n = 0;
	struct tc_pay p;
	struct tc_got g = {0};
	struct rrr_call c;

	for (unsigned i = 0; i < niov; i++)
		n += (uint32_t)iov[i].iov_len;
	p = (struct tc_pay){iov, niov, n, tag};
	tc_call_init(&c, t->prog, t->sum);
	tc_codec(&c, tc_enc_pay_tag, &p, tc_dec_3u32, &g);
	tc_payload(&c, RRR_DDP_TO_SERVER, iov, niov);
	cr_assert_eq(rrr_clnt_call(t->clnt, &c), 0);
	cr_assert_eq(g.w[0], n);
	cr_assert_eq(g.w[1], tc_iov_sum(iov, niov));
	cr_assert_eq(g.w[2], tag, "the word after the payload survived the splice");
}

int tc_fill(const struct tc_target *t, uint8_t *dst, uint32_t n, uint32_t cap, unsigned pieces)
{
	struct iovec d[2] = {{dst, cap}, {NULL, 0}};
	struct tc_got g = {0};
	struct rrr_call c;
	int rc;

	if (pieces == 2)
		d[0].iov_len = cap / 3, d[1] = (struct iovec){dst + cap / 3, cap - cap / 3};
	tc_call_init(&c, t->prog, t->fill);
	tc_codec(&c, tc_enc_u32, &n, tc_dec_pay, &g);
	tc_payload(&c, RRR_DDP_FROM_SERVER, d, pieces);
	rc = rrr_clnt_call(t->clnt, &c);
	if (rc == 0) {
		cr_assert_eq(g.len, n);
		cr_assert_eq(c.payload_len, n);
		for (uint32_t i = 0; i < n; i++)
			cr_assert_eq(dst[i], (uint8_t)(i * 7 + 3), "byte %u", i);
	}
	return rc;
}

void tc_check_big(const struct tc_target *t, uint32_t n)
{
	uint8_t *dst = malloc(n + 4);
	struct tc_got g = {.copy = dst};
	struct rrr_call c;

	cr_assert(dst);
	tc_call_init(&c, t->prog, t->big);
	tc_codec(&c, tc_enc_u32, &n, tc_dec_opaque, &g);
	c.reply_hint = n + 64;
	cr_assert_eq(rrr_clnt_call(t->clnt, &c), 0);
	cr_assert_eq(g.len, n);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(dst[i], (uint8_t)(i * 5 + 1));
	free(dst);
}
