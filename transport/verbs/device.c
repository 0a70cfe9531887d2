/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/device.c - opening a verbs device, its capabilities, the
 * choice of registration strategy, protection domains, and the ops table.
 *
 * Normal operation: rrr_device_open("verbs", "dev=rxe0,strategy=auto,...")
 * asks librdmacm for its device contexts (rdma_get_devices) so that PDs,
 * CQs and MRs live on the very ibv_context that rdma_cm ids bind to; it picks
 * the named device (or the first), queries it, detects known quirks, and
 * chooses the per-I/O registration strategy:
 *
 *   strategy=auto (default) decides from a known-quirk table keyed on what
 *   the device reports (vendor id 0xFFFFFF or a name starting with "rxe" is
 *   Soft-RoCE). It picks "mw" (type-2 memory windows) when the device
 *   advertises MEM_WINDOW_TYPE_2A/2B AND is not known to skip the window
 *   bounds check; otherwise "regmr" (ibv_reg_mr per I/O), which is safe
 *   everywhere. The table holds what rrr-devcheck measured; a device it does
 *   not know is trusted on its word, so run rrr-devcheck once on new hardware
 *   (docs/verbs.md). The reason is recorded in the device ("auto_reason").
 *   An explicit strategy is honoured; "mw" on a device whose window bounds are
 *   known not to hold is allowed but reports attr.safe = false and warns;
 *   "persistent" always warns and reports safe = false.
 *
 *   remote_inv=0|1 (default 1 unless the device is on the broken list) says
 *   whether Send With Invalidate is used; it is only offered with the mw
 *   strategy, because an ibv_reg_mr registration cannot be invalidated by a
 *   peer.
 *
 * Recovery: nothing is left open on failure (reverse-order cleanup). Errors
 * name what failed and what to do (no device: load rdma_rxe or make test-vm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_impl.h"

#define RXE_VENDOR_ID	       0xFFFFFFu
#define BROADCOM_VENDOR_ID     0x14E4u
#define VERBS_MAX_PRIVATE_DATA VERBS_CONNECT_PDATA
#define VERBS_MAX_FR_PAGES     65536u

const char *rrr__verbs_strategy_name(enum vstrategy s)
{
	switch (s) {
	case VSTRAT_MW:
		return "mw";
	case VSTRAT_REGMR:
		return "regmr";
	case VSTRAT_UMR:
		return "umr";
	case VSTRAT_PERSISTENT:
		return "persistent";
	}
	return "?";
}

struct vopts {
	char dev[64];
	int strategy;	/* -1 auto */
	int remote_inv; /* -1 default */
};

static int parse_opt(void *arg, const char *key, const char *val)
{
	struct vopts *o = arg;

	if (strcmp(key, "dev") == 0) {
		if (strlen(val) >= sizeof(o->dev))
			return rrr__set_error(-EINVAL, "verbs: dev=%s: name too long", val);
		strcpy(o->dev, val);
		return 0;
	}
	if (strcmp(key, "strategy") == 0) {
		if (strcmp(val, "auto") == 0)
			o->strategy = -1;
		else if (strcmp(val, "mw") == 0)
			o->strategy = VSTRAT_MW;
		else if (strcmp(val, "regmr") == 0)
			o->strategy = VSTRAT_REGMR;
		else if (strcmp(val, "umr") == 0)
			o->strategy = VSTRAT_UMR;
		else if (strcmp(val, "persistent") == 0)
			o->strategy = VSTRAT_PERSISTENT;
		else {
			rrr__log_warn("rrr verbs: unknown strategy '%s'", val);
			return rrr__set_error(-EINVAL,
					      "verbs: strategy=%s: use auto, mw, regmr, umr or "
					      "persistent",
					      val);
		}
		return 0;
	}
	if (strcmp(key, "remote_inv") == 0) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			return rrr__set_error(-EINVAL, "verbs: remote_inv=%s: use 0 or 1", val);
		o->remote_inv = val[0] == '1';
		return 0;
	}
	rrr__log_warn("rrr verbs: unknown option '%s'", key);
	return rrr__set_error(-EINVAL, "verbs: unknown option '%s' (dev, strategy, remote_inv)",
			      key);
}

static void detect_quirks(struct vdev *d, const char *name)
{
	const struct ibv_device_attr *a = &d->dattr.orig_attr;

	memset(&d->quirks, 0, sizeof(d->quirks));
	if (a->vendor_id == RXE_VENDOR_ID || strncmp(name, "rxe", 3) == 0) {
		/* Measured with rrr-devcheck on Debian 6.1 and 6.12 rxe. */
		d->quirks.mw_bounds_unchecked = true;
		d->quirks.wc_inv_as_csum = true;
	}
	if (a->vendor_id == BROADCOM_VENDOR_ID || strncmp(name, "bnxt_re", 7) == 0)
		d->quirks.remote_inv_broken = true;
}

const char *rrr__verbs_quirks_str(struct rrr_device *dev, char *buf, size_t len)
{
	const struct vquirks *q = &VDEV(dev)->quirks;
	size_t n;

	snprintf(buf, len, "%s%s%s",
		 q->mw_bounds_unchecked ? "window bounds unchecked (auto avoids mw); " : "",
		 q->wc_inv_as_csum ? "WITH_INV reported as IP_CSUM_OK (read as WITH_INV); " : "",
		 q->remote_inv_broken ? "Send With Invalidate broken (remote_inv=0); " : "");
	n = strlen(buf);
	if (n >= 2 && buf[n - 2] == ';')
		buf[n - 2] = '\0';
	return buf;
}

static bool has_mw2(const struct vdev *d)
{
	uint64_t f = d->dattr.orig_attr.device_cap_flags;

	return (f & IBV_DEVICE_MEM_WINDOW) &&
	       (f & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B));
}

static int choose_strategy(struct vdev *d, const struct vopts *o, const char *name)
{
	if (o->strategy < 0) {
		if (!has_mw2(d)) {
			d->strategy = VSTRAT_REGMR;
			snprintf(d->auto_reason, sizeof(d->auto_reason),
				 "%s lacks type-2 memory windows: regmr", name);
		} else if (d->quirks.mw_bounds_unchecked) {
			d->strategy = VSTRAT_REGMR;
			snprintf(d->auto_reason, sizeof(d->auto_reason),
				 "%s does not enforce window bounds (known quirk, "
				 "rrr-devcheck): regmr",
				 name);
		} else {
			d->strategy = VSTRAT_MW;
			snprintf(d->auto_reason, sizeof(d->auto_reason),
				 "%s has type-2 memory windows: mw", name);
		}
		return 0;
	}
	d->strategy = (enum vstrategy)o->strategy;
	snprintf(d->auto_reason, sizeof(d->auto_reason), "strategy=%s requested",
		 rrr__verbs_strategy_name(d->strategy));
	switch (d->strategy) {
	case VSTRAT_MW:
		if (!has_mw2(d))
			return rrr__set_error(-EOPNOTSUPP,
					      "verbs: device %s lacks memory windows (type 2): "
					      "use strategy=regmr or auto",
					      name);
		if (d->quirks.mw_bounds_unchecked)
			rrr__log_warn("rrr verbs: WARNING: %s does not enforce memory window "
				      "bounds; strategy=mw does not protect memory here "
				      "(see rrr-devcheck)",
				      name);
		return 0;
	case VSTRAT_UMR:
		return rrr__set_error(-EOPNOTSUPP,
				      "verbs: strategy=umr (mlx5dv UMR lists) is not built in "
				      "this version: use auto, mw or regmr");
	case VSTRAT_PERSISTENT:
		rrr__log_warn("rrr verbs: WARNING: strategy=persistent leaves memory "
			      "remotely accessible after each I/O; for benchmarks only, UNSAFE");
		return 0;
	case VSTRAT_REGMR:
		return 0;
	}
	return -EINVAL;
}

static void fill_attr(struct vdev *d, const char *name)
{
	struct rrr_device_attr *at = &d->pub.attr;
	const struct ibv_device_attr *a = &d->dattr.orig_attr;

	memset(at, 0, sizeof(*at));
	snprintf(at->provider, sizeof(at->provider), "verbs");
	snprintf(at->name, sizeof(at->name), "%s", name);
	snprintf(at->strategy, sizeof(at->strategy), "%s", rrr__verbs_strategy_name(d->strategy));
	at->page_size = 4096;
	at->max_fr_pages = VERBS_MAX_FR_PAGES;
	at->max_sge = a->max_sge > 0 ? (uint32_t)a->max_sge : 1;
	at->max_qp_wr = a->max_qp_wr > 0 ? (uint32_t)a->max_qp_wr : 1;
	at->max_private_data = VERBS_MAX_PRIVATE_DATA;
	at->map_model = RRR_MAP_VIRT_CONTIG;
	at->sg_gaps = false;
	at->send_with_inv = d->remote_inv && d->strategy == VSTRAT_MW;
	at->read_sink_remote_write = d->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	at->safe = d->strategy == VSTRAT_REGMR ||
		   (d->strategy == VSTRAT_MW && !d->quirks.mw_bounds_unchecked);
}

int rrr__verbs_device_open(const char *opts, struct rrr_device **out)
{
	struct vopts o = {.strategy = -1, .remote_inv = -1};
	struct ibv_context **list;
	struct vdev *d;
	int rc, n = 0, i;
	const char *name = NULL;

	rc = rrr__opts_parse(opts, parse_opt, &o);
	if (rc)
		return rc;
	list = rdma_get_devices(&n);
	if (!list || n <= 0) {
		int nv = 0;
		struct ibv_device **vl = ibv_get_device_list(&nv);

		if (list)
			rdma_free_devices(list);
		if (vl)
			ibv_free_device_list(vl);
		if (nv > 0)
			return rrr__set_error(-ENODEV,
					      "no RDMA device usable through rdma_cm although "
					      "verbs sees %d: load rdma_ucm (modprobe rdma_ucm)",
					      nv);
		return rrr__set_error(-ENODEV,
				      "no RDMA device: load rdma_rxe and create one (rdma link "
				      "add rxe0 type rxe netdev eth0), or run make test-vm");
	}
	for (i = 0; i < n; i++) {
		const char *nm = ibv_get_device_name(list[i]->device);

		if (!o.dev[0] || (nm && strcmp(nm, o.dev) == 0)) {
			name = nm;
			break;
		}
	}
	if (i == n) {
		rdma_free_devices(list);
		return rrr__set_error(-ENODEV, "no RDMA device named '%s' (see ibv_devices)",
				      o.dev);
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		rdma_free_devices(list);
		return -ENOMEM;
	}
	d->list = list;
	d->ctx = list[i];
	rc = ibv_query_device_ex(d->ctx, NULL, &d->dattr);
	if (rc) {
		rc = rrr__verbs_err(rc);
		rrr__set_error(rc, "verbs: cannot query device %s", name);
		goto err_free;
	}
	detect_quirks(d, name);
	rc = choose_strategy(d, &o, name);
	if (rc)
		goto err_free;
	if (o.remote_inv < 0)
		d->remote_inv = !d->quirks.remote_inv_broken;
	else
		d->remote_inv = o.remote_inv == 1;
	rc = pthread_mutex_init(&d->lock, NULL);
	if (rc) {
		rc = -rc;
		goto err_free;
	}
	fill_attr(d, name);
	*out = &d->pub;
	return 0;

err_free:
	free(d);
	rdma_free_devices(list);
	return rc;
}

void rrr__verbs_device_close(struct rrr_device *dev)
{
	struct vdev *d = VDEV(dev);

	pthread_mutex_destroy(&d->lock);
	rdma_free_devices(d->list);
	free(d);
}

int rrr__verbs_pd_alloc(struct rrr_device *dev, struct rrr_pd **out)
{
	struct vdev *d = VDEV(dev);
	struct vpd *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->pd = ibv_alloc_pd(d->ctx);
	if (!p->pd) {
		rc = rrr__verbs_err(-1);
		free(p);
		return rrr__set_error(rc, "verbs: ibv_alloc_pd failed on %s", dev->attr.name);
	}
	rc = pthread_mutex_init(&p->lock, NULL);
	if (rc) {
		ibv_dealloc_pd(p->pd);
		free(p);
		return -rc;
	}
	p->pub.dev = dev;
	*out = &p->pub;
	return 0;
}

int rrr__verbs_pd_free(struct rrr_pd *pd)
{
	struct vpd *p = VPD(pd);
	int rc;

	pthread_mutex_lock(&p->lock);
	rc = (p->nmr || p->nqp) ? -EBUSY : 0;
	pthread_mutex_unlock(&p->lock);
	if (rc)
		return rc;
	rc = ibv_dealloc_pd(p->pd);
	if (rc)
		return rrr__verbs_err(rc);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return 0;
}

const struct rrr__provider_ops rrr__verbs_ops = {
    .name = "verbs",
    .device_open = rrr__verbs_device_open,
    .device_close = rrr__verbs_device_close,
    .pd_alloc = rrr__verbs_pd_alloc,
    .pd_free = rrr__verbs_pd_free,
    .cq_create = rrr__verbs_cq_create,
    .cq_destroy = rrr__verbs_cq_destroy,
    .cq_poll = rrr__verbs_cq_poll,
    .cq_fd = rrr__verbs_cq_fd,
    .cq_ack_event = rrr__verbs_cq_ack_event,
    .cq_arm = rrr__verbs_cq_arm,
    .mr_reg = rrr__verbs_mr_reg,
    .mr_alloc = rrr__verbs_mr_alloc,
    .mr_dereg = rrr__verbs_mr_dereg,
    .mr_map_sg = rrr__verbs_mr_map_sg,
    .mr_recover = rrr__verbs_mr_recover,
    .qp_create = rrr__verbs_qp_create,
    .qp_destroy = rrr__verbs_qp_destroy,
    .post_send = rrr__verbs_post_send,
    .post_recv = rrr__verbs_post_recv,
    .cm_create = rrr__verbs_cm_create,
    .cm_destroy = rrr__verbs_cm_destroy,
    .cm_fd = rrr__verbs_cm_fd,
    .cm_get_event = rrr__verbs_cm_get_event,
    .cm_id_create = rrr__verbs_cm_id_create,
    .cm_id_destroy = rrr__verbs_cm_id_destroy,
    .cm_peer_addr = rrr__verbs_cm_peer_addr,
    .cm_local_addr = rrr__verbs_cm_local_addr,
    .cm_listen = rrr__verbs_cm_listen,
    .cm_set_source = rrr__verbs_cm_set_source,
    .cm_resolve = rrr__verbs_cm_resolve,
    .cm_connect = rrr__verbs_cm_connect,
    .cm_accept = rrr__verbs_cm_accept,
    .cm_reject = rrr__verbs_cm_reject,
    .cm_disconnect = rrr__verbs_cm_disconnect,
};
