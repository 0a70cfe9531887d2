/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/echo.h - a server handler the tests share: ECHO answers the
 * payload argument (up to 16 MiB) with the same bytes, copied into request
 * memory. Built without Criterion, so that the stress programs of
 * tests/tsan link it too.
 */
#ifndef TESTS_LIB_ECHO_H
#define TESTS_LIB_ECHO_H

#include <rrr/server.h>

int th_h_echo(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s);

#endif
