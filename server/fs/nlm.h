/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nlm.h - rrr-server's lock manager (NLM v4, nlm.c) and the
 * status-monitor side of a restart (nsm.c): the state number, the clients
 * told of a restart, the grace period.
 */
#ifndef RRR_SERVER_FS_NLM_H
#define RRR_SERVER_FS_NLM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <rrr/server.h>

#include "server/fs/nlm_xdr.h"

#define FS_NLM_MAX_HOSTS 256u     /* clients holding state at once */
#define FS_NLM_MAX_FILES 256u     /* (owner, file) pairs of one client: open descriptors */
#define FS_NLM_MAX_ALL_FILES 4096u /* ... of all clients together */
#define FS_NLM_MAX_BLOCKED 32u    /* blocked LOCKs of one client */
#define FS_NLM_MAX_SHARES 64u     /* share reservations of one client */
#define FS_NLM_RETRY_MS 100       /* blocked locks are tried again at least this often */
#define FS_NSM_MAX_CLIENTS 1024u  /* clients remembered for SM_NOTIFY */

/* nlm.c */
extern const struct rrr_svc_proc fs_nlm_procs[NLM4_NPROCS];
/* Start the lock manager: the state number and the grace period (nsm.c,
 * @grace_s seconds when clients are to reclaim), the thread that retries
 * blocked locks and makes the callbacks. 0 or -errno. */
int fs_nlm_start(const char *state_dir, unsigned grace_s);
/* Stop the thread, drop every lock (descriptors closed). */
void fs_nlm_stop(void);
/* The client @name at @from (a v4-mapped address is its IPv4 one) said it
 * restarted with NSM state @state: release everything of that name from
 * that address whose recorded state is not @state (as FREE_ALL), and retry
 * the blocked locks. The number of clients released. Thread-safe. */
unsigned fs_nlm_host_rebooted(const char *name, const struct sockaddr_storage *from,
			      int32_t state);
/* "  nlm.NAME value" lines. */
void fs_nlm_print(FILE *f);

/* nsm.c (see its essay). Not thread-safe unless said. */
/* Read and advance the state number (odd: up), read the clients of the
 * previous run: 0 or -errno (the server runs without; logged). */
int fs_nsm_init(const char *state_dir);
/* This run's state number. Thread-safe. */
int32_t fs_nsm_state(void);
/* Whether the grace period is on (new locks wait, reclaims go). Thread-safe. */
bool fs_nsm_in_grace(void);
/* Start the grace period of @secs seconds, or none when no client of the
 * previous run is to reclaim. */
void fs_nsm_grace_start(unsigned secs);
/* Remember @addr / @name as a client holding locks (persisted: told at the
 * next start). Thread-safe; MAY BLOCK briefly (a small file write). */
void fs_nsm_client_add(const struct sockaddr_storage *addr, const char *name);
/* Send SM_NOTIFY to the previous run's clients (their statd over TCP),
 * retrying those that did not answer: call from the background thread
 * until it returns true (all done). MAY BLOCK. */
bool fs_nsm_notify_step(void);
/* "  nsm.NAME value" lines. */
void fs_nsm_print(FILE *f);

/* nsm_svc.c: the NSM calls rrr-server answers (NULL, SM_NOTIFY). */
extern const struct rrr_svc_proc fs_nsm_procs[NSM_NPROCS];
/* Whether some export's allow list admits @from; if not, counted and
 * logged (rate-limited) as an NSM call over @via ("TCP", "UDP") ignored.
 * Thread-safe. */
bool fs_nsm_admitted(const struct sockaddr_storage *from, const char *via);
/* SM_NOTIFY @n from @from over @via, already admitted: the client's locks
 * are released (fs_nlm_host_rebooted; logged, rate-limited). The number
 * of clients released. Thread-safe. */
unsigned fs_nsm_notified(const struct sockaddr_storage *from, const struct nlm_notify *n,
			 const char *via);
/* "  nsm.notify_* value" lines. */
void fs_nsm_svc_print(FILE *f);

/* nsm_udp.c: SM_NOTIFY over UDP. */
/* Bind a UDP socket on each of @hosts (@nhosts, up to FS_CONF_MAX_LISTEN;
 * NULL: every address) at @port (a free one when @port is taken; the same
 * on every address) and start the thread that answers NSM calls there.
 * 0 with the port in @bound, or -errno (logged; the server runs without,
 * @bound 0). Not thread-safe: at start. */
int fs_nsm_udp_start(const char *const *hosts, unsigned nhosts, uint16_t port, uint16_t *bound);
/* Stop the thread and close the sockets (nothing when not started). */
void fs_nsm_udp_stop(void);
/* "  nsm.udp.NAME value" lines. */
void fs_nsm_udp_print(FILE *f);

#endif
