/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/tcp_srv.h - a tiny ONC RPC over TCP server for the
 * client tests: a thread serving loopback connections one at a time.
 *
 * Program TSRV_PROG version 1:
 *   0 NULL       empty reply
 *   1 ECHO       args: payload opaque; reply: payload opaque (same bytes)
 *   2 SILENT     never replies (timeouts, cancel)
 *   3 HANGUP     closes the connection without replying
 *   4 UNAVAIL    PROC_UNAVAIL
 *   5 GARBAGE    reply record with garbage after the xid
 *   6 FILL       args: u32 n; reply: payload of n bytes (byte i = i*7+3)
 */
#ifndef TESTS_CLNT_TCP_SRV_H
#define TESTS_CLNT_TCP_SRV_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/client.h>

#define TSRV_PROG 0x20000099u
enum { TSRV_NULL, TSRV_ECHO, TSRV_SILENT, TSRV_HANGUP, TSRV_UNAVAIL, TSRV_GARBAGE, TSRV_FILL };

struct tsrv;
/* Start on 127.0.0.1, ephemeral port (written to *port). */
int tsrv_start(struct tsrv **out, uint16_t *port);
void tsrv_stop(struct tsrv *s);
/* Connections accepted so far. */
unsigned tsrv_accepts(struct tsrv *s);
/* Calls seen so far. */
unsigned tsrv_calls(struct tsrv *s);

/* Starts a server into *@srv and a TCP client of it into *@clnt (@timeout_ms
 * per call, @fail_fast), asserting both. */
void tsrv_start_clnt(struct tsrv **srv, struct rrr_clnt **clnt, uint32_t timeout_ms, bool fail_fast);
/* Destroys *@clnt and stops *@srv; both NULL after. */
void tsrv_stop_clnt(struct tsrv **srv, struct rrr_clnt **clnt);

#endif
