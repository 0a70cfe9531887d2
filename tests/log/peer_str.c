/* SPDX-License-Identifier: MIT */
/*
 * tests/log/peer_str.c - rrr__log_peer_str(), what every string a peer sent
 * goes through before it reaches a log line: control characters, DEL, C1
 * controls and bytes that are not UTF-8 become \xNN, a backslash \\, a
 * leading '<' \x3c; valid UTF-8 stays; the text is cut at
 * RRR__LOG_PEER_MAX bytes with "..." and never mid-escape.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "common/rrr_impl.h"

static const char *esc(const char *s)
{
	static char out[RRR__LOG_PEER_SIZE];
	memset(out, 'Z', sizeof(out));
	return rrr__log_peer_str(s, out);
}

Test(log_peer_str, escapes)
{
	cr_assert_str_eq(esc("plain/path name"), "plain/path name");
	cr_assert_str_eq(esc(""), "");
	cr_assert_str_eq(esc(NULL), "");
	cr_assert_str_eq(esc("a\nb\r\t\x1b[0m\x7f"), "a\\x0ab\\x0d\\x09\\x1b[0m\\x7f");
	cr_assert_str_eq(esc("back\\slash"), "back\\\\slash");
	cr_assert_str_eq(esc("<0>x"), "\\x3c0>x", "a leading '<' cannot be a priority");
	cr_assert_str_eq(esc("a<0>"), "a<0>", "elsewhere '<' is harmless");
	cr_assert_str_eq(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "UTF-8 kept");
	cr_assert_str_eq(esc("\xff\xfe"), "\\xff\\xfe");
	cr_assert_str_eq(esc("\xc3"), "\\xc3", "a cut sequence");
	cr_assert_str_eq(esc("\xc0\xaf"), "\\xc0\\xaf", "an overlong '/'");
	cr_assert_str_eq(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80", "a surrogate");
	cr_assert_str_eq(esc("\xc2\x85"), "\\xc2\\x85", "C1 control NEL");
	cr_assert_str_eq(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80", "beyond U+10FFFF");
}

Test(log_peer_str, cut_with_a_marker)
{
	char in[400], want[RRR__LOG_PEER_SIZE];
	memset(in, 'a', sizeof(in) - 1);
	in[sizeof(in) - 1] = '\0';
	snprintf(want, sizeof(want), "%.*s...", (int)RRR__LOG_PEER_MAX, in);
	cr_assert_str_eq(esc(in), want);
	in[RRR__LOG_PEER_MAX] = '\0';
	cr_assert_str_eq(esc(in), in, "exactly the limit: no marker");
	/* an escape is never cut in half */
	memset(in, '\n', 200);
	in[200] = '\0';
	const char *o = esc(in);
	cr_assert_eq(strlen(o), (RRR__LOG_PEER_MAX / 4) * 4 + 3);
	cr_assert_str_eq(o + strlen(o) - 7, "\\x0a...");
}
