/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/rpcbind.h - the local rpcbind for the tests that register
 * with it: found on its unix socket, or started (as root) and stopped
 * again, one test at a time across processes.
 */
#ifndef RRR_TESTS_LIB_RPCBIND_H
#define RRR_TESTS_LIB_RPCBIND_H

#include <stdbool.h>

/* True when an rpcbind answers on /run/rpcbind.sock. */
bool th_rpcbind_up(void);

/* Takes /tmp/rrr-test-rpcbind.lock (asserting it comes within 60 s; the
 * rpcbind started here does not inherit it), then makes sure an rpcbind
 * runs: true, or false (skip) when none does and none can be started
 * (not installed, not root, or it did not come up within 10 s). */
bool th_rpcbind_need(void);

/* Stops the rpcbind th_rpcbind_need() started (and removes what it saved
 * for a warm start), if any, and releases the lock. */
void th_rpcbind_release(void);

#endif
