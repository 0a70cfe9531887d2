/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/device.c - the soft device: options, attributes, PDs,
 * the optional progress thread, and the provider ops table.
 *
 * Normal operation: rrr_device_open("soft", opts) parses
 *   crc=0|1              offer CRC32c in MPA (default 1; used if either side asks)
 *   progress_thread=0|1  a device thread drives every QP socket (default 0:
 *                        rrr_cq_poll() drives the sockets of its QPs)
 *   mulpdu=N             largest ULPDU sent, 128..65535 (default 65520)
 *   tx_batch=N           FPDUs handed to one sendmsg, 1..64 (default 32;
 *                        below tx_bytes it only bounds batches of FPDUs
 *                        under 2 KiB)
 *   tx_lead=N            bytes per sendmsg while the message being sent is
 *                        all the QP has to send (the peer waits for it):
 *                        the CRC pass of the next batch then overlaps the
 *                        peer's receive of this one (default 262144; 0: off)
 *   tx_bytes=N           a batch takes no more FPDUs once it holds N bytes,
 *                        0..64 MiB (default 65536; 0: only tx_batch counts):
 *                        each FPDU is copied into the socket right after
 *                        its CRC pass, while its bytes are still cached
 *   tx_refill=0|1        a partly written batch drops the FPDUs already out
 *                        and takes new ones behind the rest (default 1; 0 is
 *                        the older behaviour, kept for side-by-side runs)
 *   max_fr_pages=N       page-list depth of fast-reg MRs (default 256)
 *   map_model=gaps|page_list  gaps (default): SG_GAPS, a registration is a
 *                        list of arbitrary (addr, len) chunks; page_list:
 *                        behave like an FRWR page list (rrr_mr_map_sg stops
 *                        at page holes, max_fr_pages counts pages), so the
 *                        registration engine's hole splitting runs on soft
 *   fault_seed=N, fault_drop_ppm=N, fault_delay_us=N, fault_delay_ppm=N,
 *   fault_stall_ms=N, fault_stall_ppm=N
 *                        fault injection, off by default (fault.c)
 * and reports the attributes callers plan with: the map model, Send with
 * Invalidate supported, RDMA READ sinks need REMOTE_WRITE (iWARP).
 *
 * The progress thread (its body is progress.c's, rrr__soft_progress_main)
 * sleeps in epoll_wait() on the device's epoll set (all QP sockets plus a
 * wake-up eventfd) and drives ready QPs, taking only each QP's lock. It
 * counts finished passes (dev->epoch); a QP being destroyed leaves the set
 * and then waits for two more passes (rrr__soft_dev_quiesce), so the
 * thread never touches a freed QP, and no lock is held across
 * epoll_wait() (a mutex held there starved destroyers). It wakes at least
 * every 20 ms to notice a stop request.
 *
 * This file is the top of the provider: the ops table names the entry
 * points of the other files, and none of them calls this one (the QP
 * entries are cm.c's, which binds a QP to its connection id).
 *
 * fork(): rrr_device_open() returns only after the progress thread has
 * registered with liburcu, so a fork right after it cannot copy a held
 * registry lock. Forking while other threads are inside the provider is
 * not supported (as with verbs without ibv_fork_init); a child must open
 * its own device and not touch the parent's objects.
 *
 * Recovery: closing the device stops the thread; objects still alive are
 * a caller bug, reported on stderr (an operator can act on the leak).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "soft.h"

static int parse_u32(const char *val, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 0);
	if (errno || *end || end == val || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int opt(void *arg, const char *key, const char *val)
{
	struct soft_dev *d = arg;
	uint32_t v;

	if (strcmp(key, "crc") == 0 && !parse_u32(val, 0, 1, &v)) {
		d->crc = v;
	} else if (strcmp(key, "progress_thread") == 0 && !parse_u32(val, 0, 1, &v)) {
		d->progress_thread = v;
	} else if (strcmp(key, "mulpdu") == 0 &&
		   !parse_u32(val, SOFT_MULPDU_MIN, SOFT_MULPDU_MAX, &v)) {
		d->mulpdu = v;
	} else if (strcmp(key, "tx_batch") == 0 && !parse_u32(val, 1, SOFT_TX_BATCH, &v)) {
		d->tx_batch = v;
	} else if (strcmp(key, "tx_lead") == 0 && !parse_u32(val, 0, SOFT_TX_LEAD_MAX, &v)) {
		d->tx_lead = v;
	} else if (strcmp(key, "tx_bytes") == 0 && !parse_u32(val, 0, SOFT_TX_BYTES_MAX, &v)) {
		d->tx_bytes = v;
	} else if (strcmp(key, "tx_refill") == 0 && !parse_u32(val, 0, 1, &v)) {
		d->tx_refill = v;
	} else if (strcmp(key, "map_model") == 0 &&
		   (strcmp(val, "page_list") == 0 || strcmp(val, "gaps") == 0)) {
		d->page_list = strcmp(val, "page_list") == 0;
	} else if (strcmp(key, "max_fr_pages") == 0 &&
		   !parse_u32(val, 1, SOFT_MAX_FR_PAGES_MAX, &v)) {
		d->max_fr_pages = v;
	} else if (strcmp(key, "fault_seed") == 0 && !parse_u32(val, 0, UINT32_MAX, &v)) {
		d->fault_seed = v;
	} else if (strcmp(key, "fault_drop_ppm") == 0 && !parse_u32(val, 0, 1000000, &v)) {
		d->fault_drop_ppm = v;
	} else if (strcmp(key, "fault_delay_us") == 0 && !parse_u32(val, 0, 1000000, &v)) {
		d->fault_delay_us = v;
	} else if (strcmp(key, "fault_delay_ppm") == 0 && !parse_u32(val, 0, 1000000, &v)) {
		d->fault_delay_ppm = v;
	} else if (strcmp(key, "fault_stall_ms") == 0 && !parse_u32(val, 0, 60000, &v)) {
		d->fault_stall_ms = v;
	} else if (strcmp(key, "fault_stall_ppm") == 0 && !parse_u32(val, 0, 1000000, &v)) {
		d->fault_stall_ppm = v;
	} else {
		rrr__log_warn("rrr soft: bad option '%s=%s' (known: crc=0|1, progress_thread=0|1, "
			      "mulpdu=%u..%u, tx_batch=1..%u, tx_lead=0..%u, tx_bytes=0..%u, tx_refill=0|1, "
			      "max_fr_pages=1..%u, "
			      "map_model=page_list|gaps, fault_seed=N, fault_drop_ppm=0..1000000, "
			      "fault_delay_us=0..1000000, fault_delay_ppm=N, fault_stall_ms=0..60000, "
			      "fault_stall_ppm=N)",
			      key, val, SOFT_MULPDU_MIN, SOFT_MULPDU_MAX, SOFT_TX_BATCH, SOFT_TX_LEAD_MAX,
			      SOFT_TX_BYTES_MAX, SOFT_MAX_FR_PAGES_MAX);
		return rrr__set_error(-EINVAL, "soft: bad option '%s=%s'", key, val);
	}
	return 0;
}

static void dev_free(struct soft_dev *d)
{
	if (d->ep >= 0)
		close(d->ep);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	if (d->ready_fd >= 0)
		close(d->ready_fd);
	pthread_mutex_destroy(&d->lock);
	rrr__soft_stag_table_free(d);
	free(d);
}

static int soft_device_open(const char *opts, struct rrr_device **out)
{
	struct soft_dev *d = calloc(1, sizeof(*d));
	struct rrr_device_attr *a;
	int rc;

	if (!d)
		return -ENOMEM;
	d->ep = -1;
	d->wake_fd = -1;
	d->ready_fd = -1;
	d->crc = true;
	d->mulpdu = SOFT_MULPDU_DEF;
	d->tx_batch = SOFT_TX_BATCH_DEF;
	d->tx_lead = SOFT_TX_LEAD_DEF;
	d->tx_bytes = SOFT_TX_BYTES_DEF;
	d->tx_refill = true;
	d->max_fr_pages = SOFT_MAX_FR_PAGES_DEF;
	d->fault_seed = 1;
	d->fault_delay_ppm = 1000000;
	d->fault_stall_ppm = 1000;
	pthread_mutex_init(&d->lock, NULL);
	rc = rrr__opts_parse(opts, opt, d);
	if (rc) {
		dev_free(d);
		return rc;
	}
	d->fault_on = (d->fault_drop_ppm > 0) || (d->fault_delay_us && d->fault_delay_ppm) ||
		      (d->fault_stall_ms && d->fault_stall_ppm);
	d->next_idx = 1; /* the STag table grows from its first registration */
	atomic_init(&d->seed, 0);
	/* initial keys of STags must not be guessable by a peer (they are
	 * the only secret in a handle the peer did not receive) */
	if (getrandom(&d->key_secret, sizeof(d->key_secret), 0) != sizeof(d->key_secret)) {
		rc = errno ? -errno : -EIO;
		dev_free(d);
		return rrr__set_error(rc, "soft: getrandom() for STag keys failed");
	}
	/* always readable (a count of 1 nobody reads): a CQ that could not
	 * have an eventfd of its own signals through it (cq.c) */
	d->ready_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->ready_fd < 0) {
		rc = -errno;
		dev_free(d);
		return rrr__set_error(rc, "soft: cannot create an eventfd (raise ulimit -n)");
	}
	if (d->progress_thread) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

		d->ep = epoll_create1(EPOLL_CLOEXEC);
		d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (d->ep < 0 || d->wake_fd < 0 ||
		    epoll_ctl(d->ep, EPOLL_CTL_ADD, d->wake_fd, &ev) < 0) {
			rc = -errno;
			dev_free(d);
			return rc;
		}
		rc = pthread_create(&d->thr, NULL, rrr__soft_progress_main, d);
		if (rc) {
			dev_free(d);
			return rrr__set_error(-rc, "soft: cannot start the progress thread");
		}
		d->thr_running = true;
		/* return only once the thread is an RCU reader: liburcu's
		 * registry lock must not be held by it if the caller forks */
		while (!atomic_load(&d->thr_ready))
			usleep(100);
	}
	a = &d->base.attr;
	snprintf(a->provider, sizeof(a->provider), "soft");
	snprintf(a->name, sizeof(a->name), "soft0");
	snprintf(a->strategy, sizeof(a->strategy), "frwr");
	a->page_size = 4096;
	a->max_fr_pages = d->max_fr_pages;
	a->max_sge = SOFT_MAX_SGE;
	a->max_qp_wr = SOFT_MAX_QP_WR;
	a->max_private_data = RRR_CM_MAX_PRIVATE_DATA;
	a->map_model = d->page_list ? RRR_MAP_PAGE_LIST : RRR_MAP_SG_GAPS;
	a->sg_gaps = !d->page_list;
	a->send_with_inv = true;
	a->read_sink_remote_write = true;
	a->safe = true;
	*out = &d->base;
	return 0;
}

static void soft_device_close(struct rrr_device *dev)
{
	struct soft_dev *d = soft_dev(dev);

	if (d->thr_running) {
		atomic_store(&d->thr_stop, true);
		pthread_join(d->thr, NULL);
	}
	if (atomic_load(&d->nobj))
		rrr__log_warn("rrr soft: device closed with %d objects still alive",
			      atomic_load(&d->nobj));
	dev_free(d);
}

int rrr__soft_pd_alloc(struct rrr_device *dev, struct rrr_pd **out)
{
	struct soft_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.dev = dev;
	atomic_fetch_add(&soft_dev(dev)->nobj, 1);
	*out = &pd->base;
	return 0;
}

int rrr__soft_pd_free(struct rrr_pd *base)
{
	struct soft_pd *pd = container_of(base, struct soft_pd, base);

	if (atomic_load(&pd->refs))
		return rrr__set_error(-EBUSY, "soft: PD still used by %d MRs/QPs",
				      atomic_load(&pd->refs));
	atomic_fetch_sub(&soft_dev(base->dev)->nobj, 1);
	free(pd);
	return 0;
}

const struct rrr__provider_ops rrr__soft_ops = {
	.name = "soft",
	.device_open = soft_device_open,
	.device_close = soft_device_close,
	.pd_alloc = rrr__soft_pd_alloc,
	.pd_free = rrr__soft_pd_free,
	.cq_create = rrr__soft_cq_create,
	.cq_destroy = rrr__soft_cq_destroy,
	.cq_poll = rrr__soft_cq_poll,
	.cq_fd = rrr__soft_cq_fd,
	.cq_ack_event = rrr__soft_cq_ack_event,
	.cq_arm = rrr__soft_cq_arm,
	.mr_reg = rrr__soft_mr_reg,
	.mr_alloc = rrr__soft_mr_alloc,
	.mr_dereg = rrr__soft_mr_dereg,
	.mr_map_sg = rrr__soft_mr_map_sg,
	.mr_recover = rrr__soft_mr_recover,
	.qp_create = rrr__soft_cm_qp_create,
	.qp_destroy = rrr__soft_cm_qp_destroy,
	.post_send = rrr__soft_post_send,
	.post_recv = rrr__soft_post_recv,
	.cm_create = rrr__soft_cm_create,
	.cm_destroy = rrr__soft_cm_destroy,
	.cm_fd = rrr__soft_cm_fd,
	.cm_get_event = rrr__soft_cm_get_event,
	.cm_id_create = rrr__soft_cm_id_create,
	.cm_id_destroy = rrr__soft_cm_id_destroy,
	.cm_peer_addr = rrr__soft_cm_peer_addr,
	.cm_local_addr = rrr__soft_cm_local_addr,
	.cm_listen = rrr__soft_cm_listen,
	.cm_set_source = rrr__soft_cm_set_source,
	.cm_resolve = rrr__soft_cm_resolve,
	.cm_connect = rrr__soft_cm_connect,
	.cm_accept = rrr__soft_cm_accept,
	.cm_reject = rrr__soft_cm_reject,
	.cm_set_limits = rrr__soft_cm_set_limits,
	.cm_limit_stats = rrr__soft_cm_limit_stats,
	.cm_disconnect = rrr__soft_cm_disconnect,
};

/* A device's fault counters (fault.c injects; the device is known to be
 * soft by its ops table, which is this file's). */
int rrr__soft_fault_dev_stats(struct rrr_device *dev, struct rrr__soft_fault_stats *st)
{
	struct soft_dev *d;

	if (!dev || !dev->ops || dev->ops != &rrr__soft_ops)
		return -EINVAL;
	d = soft_dev(dev);
	st->points = 0; /* per device only the faults are counted */
	st->drops = atomic_load(&d->fault_drops);
	st->delays = atomic_load(&d->fault_delays);
	st->stalls = atomic_load(&d->fault_stalls);
	return 0;
}
