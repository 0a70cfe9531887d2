/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/cm_limits.c - what keeps hostile or stalled peers of the
 * soft provider's connection manager from holding resources, and how every
 * refusal is accounted for.
 *
 * Normal operation: a passive connection is in set-up from accept() until
 * its MPA Request arrived (CONNECT_REQUEST), and again after rrr_cm_accept()
 * until the initiator's RTR. Each has a deadline (setup_timeout_ms); while
 * any exists a periodic timerfd in the CM's epoll set makes the CM fd
 * readable and cm.c closes those past it (rrr__soft_cm_next_expired finds
 * them): unreported ones silently, accepted ones with UNREACHABLE
 * (-ETIMEDOUT). At most max_setup
 * are in set-up at once: accepting one more first closes the oldest that
 * sent no Request (evicted), so a flood of idle TCP connects costs each of
 * them its slot, not a well-behaved peer, whose Request arrives at once.
 * When accept() fails for lack of file descriptors the oldest such
 * connection is closed to make room; with none, a reserved descriptor is
 * given up to accept the connection and close it at once (shed). An
 * address the application does not admit (rrr_cm_limits.admit) is closed
 * right after accept(), before anything is held for it.
 *
 * Every refusal is counted under its reason (rrr_cm_limit_stats().refused[])
 * and logged at RRR_LOG_WARN with the peer's address, at most one line per
 * reason and second with the number held back (rrr__ratelimit_ok).
 *
 * Locking: called with cm->lock held (cm_impl.h).
 *
 * This file decides and counts; closing a connection and queueing its
 * event are cm.c's, which calls in here and acts on what is returned (the
 * connection to evict, each one past its deadline), so the two files
 * call each other one way only.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cm_impl.h"

/* Arm the sweep timer while connections are in set-up, disarm it after. */
static void timer_update(struct soft_cm *cm)
{
	struct itimerspec it;
	uint32_t ms;

	if (cm->tfd < 0 || (cm->nsetup > 0) == cm->timer_on)
		return;
	memset(&it, 0, sizeof(it));
	if (cm->nsetup) {
		ms = cm->setup_timeout_ms / 4;
		ms = ms < 20 ? 20 : ms > 1000 ? 1000 : ms;
		it.it_value.tv_sec = ms / 1000;
		it.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
		it.it_interval = it.it_value;
	}
	if (timerfd_settime(cm->tfd, 0, &it, NULL) == 0)
		cm->timer_on = cm->nsetup > 0;
}

void rrr__soft_cm_setup_begin(struct soft_cm *cm, struct soft_id *id)
{
	if (!id->in_setup) {
		id->in_setup = true;
		cm->nsetup++;
	}
	id->setup_deadline = rrr__mono_ns() + (uint64_t)cm->setup_timeout_ms * 1000000ull;
	timer_update(cm);
}

void rrr__soft_cm_setup_end(struct soft_cm *cm, struct soft_id *id)
{
	if (!id->in_setup)
		return;
	id->in_setup = false;
	cm->nsetup--;
	timer_update(cm);
}

/* Count a refused or failed set-up under @reason and log it (rate-limited). */
void rrr__soft_cm_refused(struct soft_cm *cm, struct soft_id *id, int reason, const char *why)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint64_t held;
	char who[80];

	if (reason < 0 || reason >= RRR_CM_REFUSED_NREASONS)
		reason = RRR_CM_REFUSED_PROTOCOL;
	cm->lst.refused[reason]++;
	if (!rrr__ratelimit_ok(&cm->rl[reason], RRR__LOG_EVERY_MS, &held))
		return;
	memset(&ss, 0, sizeof(ss));
	if (id->listener) {
		if (id->fd < 0 || getpeername(id->fd, (struct sockaddr *)&ss, &sl) < 0)
			ss.ss_family = AF_UNSPEC;
	} else if (id->dstlen) {
		memcpy(&ss, &id->dst, id->dstlen);
	}
	rrr__addr_str(&ss, who, sizeof(who));
	rrr__log_warn("rrr soft: %s %s: %s [%s]%s%.0llu%s", id->listener ? "refused an RDMA connection from"
							      : "cannot set up an RDMA connection to",
		      who, why, rrr_cm_refusal_name(reason), held ? " (" : "",
		      (unsigned long long)held, held ? " more such since the last line)" : "");
}

/* The oldest connection that has not sent its MPA Request yet (the one
 * to evict); NULL when there is none. */
struct soft_id *rrr__soft_cm_oldest_unrequested(struct soft_cm *cm)
{
	struct soft_id *old = NULL;

	for (struct soft_id *id = cm->ids; id; id = id->next)
		if (id->in_setup && id->state == ID_REQ_WAIT &&
		    (!old || id->setup_deadline < old->setup_deadline))
			old = id;
	return old;
}

/* The timer ticked: consume it; returns the time deadlines are judged by. */
uint64_t rrr__soft_cm_sweep_begin(struct soft_cm *cm)
{
	uint64_t now = rrr__mono_ns(), v;

	if (read(cm->tfd, &v, sizeof(v)) < 0) {
		/* not expired yet: nothing to consume */
	}
	return now;
}

/* The next id from *@next on whose set-up deadline is past @now, counted
 * as a timeout; *@next moves past it (the caller may free it). */
struct soft_id *rrr__soft_cm_next_expired(struct soft_cm *cm, struct soft_id **next,
					  uint64_t now)
{
	for (struct soft_id *id = *next; id; id = id->next) {
		if (!id->in_setup || id->setup_deadline > now)
			continue;
		cm->lst.setup_timeouts++;
		*next = id->next;
		return id;
	}
	*next = NULL;
	return NULL;
}

/* An accepted connection past its deadline: out of set-up, closed,
 * logged (rate-limited); the caller reports UNREACHABLE. */
void rrr__soft_cm_timed_out(struct soft_cm *cm, struct soft_id *id)
{
	uint64_t held;

	rrr__soft_cm_setup_end(cm, id);
	id->state = ID_CLOSED;
	if (id->fd >= 0)
		shutdown(id->fd, SHUT_RDWR);
	rrr__set_error(-ETIMEDOUT, "soft: peer did not finish MPA set-up in %u ms",
		       cm->setup_timeout_ms);
	if (rrr__ratelimit_ok(&cm->rl[RRR_CM_REFUSED_NREASONS], RRR__LOG_EVERY_MS, &held))
		rrr__log_warn("rrr soft: an accepted RDMA connection sent no "
			      "ready-to-receive message within %u ms: closed "
			      "(setup_timeout_ms)%s%.0llu%s",
			      cm->setup_timeout_ms, held ? " (" : "",
			      (unsigned long long)held, held ? " more such)" : "");
}

/* accept() failed with EMFILE/ENFILE and no connection could be evicted:
 * give up the reserved descriptor to accept one and close it at once.
 * Returns true to retry. */
bool rrr__soft_cm_shed(struct soft_cm *cm, struct soft_id *l)
{
	int fd;

	if (cm->reserve_fd < 0)
		return false;
	close(cm->reserve_fd);
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		cm->lst.accept_shed++;
	}
	cm->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && cm->reserve_fd >= 0;
}

/* A connection whose address the application does not admit: closed at
 * once, counted and logged (rate-limited) like every refusal. */
void rrr__soft_cm_refuse_addr(struct soft_cm *cm, const struct sockaddr_storage *ss)
{
	uint64_t held;
	char who[80];

	cm->lst.refused[RRR_CM_REFUSED_ADDRESS]++;
	if (!rrr__ratelimit_ok(&cm->rl[RRR_CM_REFUSED_ADDRESS], RRR__LOG_EVERY_MS, &held))
		return;
	rrr__addr_str(ss, who, sizeof(who));
	rrr__log_warn("rrr soft: refused an RDMA connection from %s: the address is not "
		      "admitted [address]%s%.0llu%s",
		      who, held ? " (" : "", (unsigned long long)held,
		      held ? " more such since the last line)" : "");
}

int rrr__soft_cm_set_limits(struct rrr_cm *base, const struct rrr_cm_limits *lim)
{
	struct soft_cm *cm = soft_cm(base);

	pthread_mutex_lock(&cm->lock);
	if (lim->setup_timeout_ms)
		cm->setup_timeout_ms = lim->setup_timeout_ms;
	if (lim->max_setup)
		cm->max_setup = lim->max_setup;
	if (lim->admit) {
		cm->admit = lim->admit;
		cm->admit_ctx = lim->admit_ctx;
	}
	if (cm->timer_on) { /* re-arm with the new period */
		cm->timer_on = false;
		timer_update(cm);
	}
	pthread_mutex_unlock(&cm->lock);
	return 0;
}

int rrr__soft_cm_limit_stats(struct rrr_cm *base, struct rrr_cm_limit_stats *st)
{
	struct soft_cm *cm = soft_cm(base);

	pthread_mutex_lock(&cm->lock);
	*st = cm->lst;
	st->setup_now = cm->nsetup;
	pthread_mutex_unlock(&cm->lock);
	return 0;
}
