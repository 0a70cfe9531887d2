/* SPDX-License-Identifier: MIT */
/*
 * server/svc_boot.c - the server's boot verifier: one 64-bit value drawn
 * when the first server of the process is created, the same for every
 * server and request of that process, and different (with overwhelming
 * likelihood) in the next process. A program's protocol carries it in
 * its replies, as NFS carries the write verifier, so that a client can
 * tell that the server it reconnected to is a new instance (whose
 * volatile state, an in-memory disk, is gone) and not the old one behind a
 * new connection: the transport cannot tell the two apart, and the
 * client's connection events (rrr/client.h) only say that the connection
 * was re-established.
 *
 * Drawn from getrandom(), mixed with the realtime clock and the process id
 * when getrandom() fails; never 0. Recovery: none needed.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rrr/server.h>

#include "common/rrr_impl.h"

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;
static uint64_t boot_verf;

static void boot_draw(void)
{
	struct timespec ts;
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		v = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec << 20 ^
		    (uint64_t)getpid();
	}
	boot_verf = v ? v : 1;
}

uint64_t rrr_svc_boot_verifier(const struct rrr_svc *svc)
{
	(void)svc;
	pthread_once(&boot_once, boot_draw);
	return boot_verf;
}

uint64_t rrr_svc_req_boot_verifier(const struct rrr_svc_req *req)
{
	(void)req;
	return rrr_svc_boot_verifier(NULL);
}
