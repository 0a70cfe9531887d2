/* SPDX-License-Identifier: MIT */
/*
 * tests/svc/helpers/svc_test.h - shared fixtures for the server tests: a
 * test RPC program, a server running on a thread of the test process (real
 * sockets on loopback, ephemeral ports), and a raw TCP record-marking client.
 */
#ifndef RRR_TESTS_SVC_TEST_H
#define RRR_TESTS_SVC_TEST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <rrr/server.h>

#define TPROG	 0x20000101u
#define TPROG_V1 1u
#define TPROG_V3 3u

enum tproc {
	TP_NULL = 0,
	TP_ECHO = 1,	/* opaque payload (DDP-eligible) -> same payload back */
	TP_GARBAGE = 2, /* handler says GARBAGE_ARGS */
	TP_SYSERR = 3,	/* handler says SYSTEM_ERR */
	TP_DROP = 4,	/* handler says DROP */
	TP_HOLE = 5,	/* NULL handler: PROC_UNAVAIL */
	TP_ADD = 6,	/* two u32 -> sum; also returns uid of AUTH_SYS (or ~0) */
	TP_FILL = 7,	/* u32 len, u32 byte -> payload of len bytes of byte */
	TP_SUM = 8,	/* DDP payload in -> u32 len, u32 fnv1a */
	TP_BIG = 9,	/* u32 n, u32 seed -> plain opaque of n pattern bytes */
	TP_HASHOP = 10, /* plain opaque in -> u32 len, u32 fnv1a */
	TP_STATIC = 11, /* u32 len -> payload of len bytes of tpat(99) from static memory */
	TP_SLOWSUM = 12, /* TP_SUM after TP_SLOW_MS of sleep (a handler doing slow I/O) */
	TP_NPROCS = 13,
};

#define TP_SLOW_MS 600u

struct tsvc {
	struct rrr_svc *svc;
	pthread_t th;
	int run_rc;
	uint16_t tcp_port;
	uint16_t rdma_port;
};

/* FNV-1a over @len bytes. */
uint32_t tfnv(const void *p, size_t len);
/* Pattern byte i of seed s. */
static inline uint8_t tpat(uint32_t s, size_t i)
{
	return (uint8_t)(i * 131u + s + (i >> 8));
}

/* Register the test program (versions 1 and 3) on @svc. */
int tprog_register(struct rrr_svc *svc);
/* Create, register, listen on TCP (and RDMA when @rdma), run on a thread. */
/* rrr_svc_opts_init(@o), then @nthreads threads on the provider and
 * provider options of tests/test_env.h. */
void tsvc_opts(struct rrr_svc_opts *o, unsigned nthreads);
int tsvc_start(struct tsvc *t, const struct rrr_svc_opts *opts, int rdma);
/* Stop and join (bounded: fails the test if run does not return in 10 s). */
int tsvc_stop(struct tsvc *t);

/* Raw TCP client. */
int tcp_connect_port(uint16_t port);
/* Send @len bytes as one record split in fragments of @frag bytes (0: one). */
int rm_send(int fd, const void *buf, size_t len, size_t frag);
/* Receive one record (bounded by 5 s); returns its length or -errno
 * (-EPIPE on EOF). */
long rm_recv(int fd, void *buf, size_t cap);

#endif
