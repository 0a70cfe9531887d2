/* SPDX-License-Identifier: MIT */
/*
 * transport/provider.c - generic layer of the provider interface.
 *
 * Normal operation: rrr_device_open() finds the provider by name in a
 * static table and calls its device_open; every other public call
 * dispatches through the object's dev->ops after the checks that are common
 * to all providers (NULL objects, counts, private data length). An ops slot
 * a provider leaves NULL answers -EOPNOTSUPP.
 *
 * Errors carry a thread-local human-readable reason (rrr_last_error(),
 * recorded with rrr__set_error() of common/error.c) so programs can tell
 * an operator what failed and what to do.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "provider_impl.h"

static const struct rrr__provider_ops *const providers[] = {
	&rrr__soft_ops,
	&rrr__verbs_ops,
};

const char *rrr_provider_names(void)
{
	return "soft,verbs";
}

int rrr_device_open(const char *provider, const char *opts, struct rrr_device **out)
{
	size_t i;

	if (!out)
		return -EINVAL;
	*out = NULL;
	rrr__clear_error();
	if (!provider)
		provider = "soft";
	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++) {
		if (strcmp(providers[i]->name, provider) == 0) {
			int rc = providers[i]->device_open(opts, out);

			if (rc == 0)
				(*out)->ops = providers[i];
			return rc;
		}
	}
	return rrr__set_error(-ENOENT, "unknown provider '%s' (available: %s)", provider,
			      rrr_provider_names());
}

void rrr_device_close(struct rrr_device *dev)
{
	if (dev)
		dev->ops->device_close(dev);
}

int rrr_device_query(struct rrr_device *dev, struct rrr_device_attr *attr)
{
	if (!dev || !attr)
		return -EINVAL;
	*attr = dev->attr;
	return 0;
}

#define DISPATCH(obj_dev, slot, ...)                                                         \
	do {                                                                                 \
		if (!(obj_dev)->ops->slot)                                                   \
			return -EOPNOTSUPP;                                                  \
		return (obj_dev)->ops->slot(__VA_ARGS__);                                    \
	} while (0)

int rrr_pd_alloc(struct rrr_device *dev, struct rrr_pd **out)
{
	if (!dev || !out)
		return -EINVAL;
	DISPATCH(dev, pd_alloc, dev, out);
}

int rrr_pd_free(struct rrr_pd *pd)
{
	if (!pd)
		return 0;
	DISPATCH(pd->dev, pd_free, pd);
}

int rrr_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out)
{
	if (!dev || !out || depth == 0)
		return -EINVAL;
	DISPATCH(dev, cq_create, dev, depth, out);
}

int rrr_cq_destroy(struct rrr_cq *cq)
{
	if (!cq)
		return 0;
	DISPATCH(cq->dev, cq_destroy, cq);
}

int rrr_cq_poll(struct rrr_cq *cq, struct rrr_wc *wc, int n)
{
	if (!cq || !wc || n <= 0)
		return -EINVAL;
	DISPATCH(cq->dev, cq_poll, cq, wc, n);
}

int rrr_cq_fd(struct rrr_cq *cq)
{
	if (!cq)
		return -EINVAL;
	DISPATCH(cq->dev, cq_fd, cq);
}

int rrr_cq_ack_event(struct rrr_cq *cq)
{
	if (!cq)
		return -EINVAL;
	DISPATCH(cq->dev, cq_ack_event, cq);
}

int rrr_cq_arm(struct rrr_cq *cq)
{
	if (!cq)
		return -EINVAL;
	DISPATCH(cq->dev, cq_arm, cq);
}

/* The sleeping half of a wait, for a caller whose last poll found the CQ
 * empty: arm, poll once more (a completion that came before the arm
 * notifies nobody), then sleep on the fd. Not polling again before the arm
 * saves a soft CQ a progress step (a read() that says EAGAIN) per wait. */
static int cq_sleep(struct rrr_cq *cq, struct rrr_wc *wc, int n, int timeout_ms)
{
	struct pollfd pfd;
	int rc, fd;

	rc = rrr_cq_arm(cq);
	if (rc < 0)
		return rc;
	rc = rrr_cq_poll(cq, wc, n);
	if (rc != 0)
		return rc;
	fd = rrr_cq_fd(cq);
	if (fd < 0)
		return fd;
	pfd.fd = fd;
	pfd.events = POLLIN;
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return -errno;
	if (rc == 0)
		return 0;
	rc = rrr_cq_ack_event(cq);
	if (rc < 0 && rc != -EAGAIN)
		return rc;
	return rrr_cq_poll(cq, wc, n);
}

int rrr_cq_wait(struct rrr_cq *cq, struct rrr_wc *wc, int n, int timeout_ms)
{
	int rc = rrr_cq_poll(cq, wc, n);

	if (rc != 0)
		return rc;
	return cq_sleep(cq, wc, n, timeout_ms);
}

int rrr_cq_wait_mode(struct rrr_cq *cq, struct rrr_wc *wc, int n, int timeout_ms,
		     enum rrr_wait_mode mode, uint32_t spin_us)
{
	uint64_t t0, now, budget = 0;
	int rc;

	if (!cq || mode > RRR_WAIT_SPIN)
		return -EINVAL;
	rc = rrr_cq_poll(cq, wc, n);
	if (rc != 0 || timeout_ms == 0) {
		if (rc > 0)
			cq->hot = true;
		return rc;
	}
	if (!spin_us)
		spin_us = RRR_WAIT_SPIN_US_DEFAULT;
	if (spin_us > RRR_WAIT_SPIN_US_MAX)
		spin_us = RRR_WAIT_SPIN_US_MAX;
	if (mode == RRR_WAIT_SPIN || (mode == RRR_WAIT_ADAPTIVE && cq->hot))
		budget = (uint64_t)spin_us * 1000u;
	if (timeout_ms > 0 && budget > (uint64_t)timeout_ms * 1000000ull)
		budget = (uint64_t)timeout_ms * 1000000ull;
	t0 = now = rrr__mono_ns();
	while (now - t0 < budget) {
		sched_yield();
		rc = rrr_cq_poll(cq, wc, n);
		if (rc != 0) {
			if (rc > 0)
				cq->hot = true;
			return rc;
		}
		now = rrr__mono_ns();
	}
	if (timeout_ms > 0) {
		uint64_t spent = (now - t0) / 1000000ull;

		timeout_ms = spent >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)spent;
	}
	/* the poll above (or the spin's last) found nothing: no third one */
	rc = cq_sleep(cq, wc, n, timeout_ms);
	/* hot when a spin of the usual budget would have found it */
	cq->hot = rc > 0 && rrr__mono_ns() - t0 < (uint64_t)spin_us * 1000u;
	return rc;
}

const char *rrr_wc_status_str(enum rrr_wc_status st)
{
	static const char *const names[] = {
		[RRR_WC_SUCCESS] = "success",
		[RRR_WC_LOC_LEN_ERR] = "local length error",
		[RRR_WC_LOC_PROT_ERR] = "local protection error",
		[RRR_WC_WR_FLUSH_ERR] = "work request flushed",
		[RRR_WC_MW_BIND_ERR] = "memory window bind error",
		[RRR_WC_REM_INV_REQ_ERR] = "remote invalid request",
		[RRR_WC_REM_ACCESS_ERR] = "remote access error",
		[RRR_WC_REM_OP_ERR] = "remote operation error",
		[RRR_WC_RETRY_EXC_ERR] = "transport retry exceeded",
		[RRR_WC_FATAL_ERR] = "fatal error",
		[RRR_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned)st < sizeof(names) / sizeof(names[0]) && names[st])
		return names[st];
	return "unknown status";
}

int rrr_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access, struct rrr_mr **out)
{
	if (!pd || !addr || !len || !out)
		return -EINVAL;
	DISPATCH(pd->dev, mr_reg, pd, addr, len, access, out);
}

int rrr_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out)
{
	if (!pd || !out || max_pages == 0)
		return -EINVAL;
	DISPATCH(pd->dev, mr_alloc, pd, max_pages, out);
}

int rrr_mr_dereg(struct rrr_mr *mr)
{
	if (!mr)
		return 0;
	DISPATCH(mr->dev, mr_dereg, mr);
}

uint32_t rrr_mr_lkey(const struct rrr_mr *mr) { return mr->lkey; }
uint32_t rrr_mr_rkey(const struct rrr_mr *mr) { return mr->rkey; }
uint64_t rrr_mr_iova(const struct rrr_mr *mr) { return mr->iova; }
uint64_t rrr_mr_length(const struct rrr_mr *mr) { return mr->length; }

int rrr_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access)
{
	if (!mr || !sg || nents <= 0 || mr->max_pages == 0)
		return -EINVAL;
	DISPATCH(mr->dev, mr_map_sg, mr, sg, nents, access);
}

int rrr_mr_recover(struct rrr_mr *mr)
{
	if (!mr)
		return -EINVAL;
	DISPATCH(mr->dev, mr_recover, mr);
}

int rrr_qp_create(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr, struct rrr_qp **out)
{
	if (!id || !attr || !out || !attr->pd || !attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	DISPATCH(id->cm->dev, qp_create, id, attr, out);
}

int rrr_qp_destroy(struct rrr_qp *qp)
{
	if (!qp)
		return 0;
	DISPATCH(qp->dev, qp_destroy, qp);
}

void *rrr_qp_ctx(const struct rrr_qp *qp) { return qp->ctx; }

int rrr_qp_post_send(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad)
{
	struct rrr_send_wr *dummy;

	if (!bad)
		bad = &dummy;
	*bad = wr;
	if (!qp || !wr)
		return -EINVAL;
	DISPATCH(qp->dev, post_send, qp, wr, bad);
}

int rrr_qp_post_recv(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad)
{
	struct rrr_recv_wr *dummy;

	if (!bad)
		bad = &dummy;
	*bad = wr;
	if (!qp || !wr)
		return -EINVAL;
	DISPATCH(qp->dev, post_recv, qp, wr, bad);
}

const char *rrr_cm_event_str(enum rrr_cm_event_type t)
{
	switch (t) {
	case RRR_CM_EVENT_RESOLVED: return "RESOLVED";
	case RRR_CM_EVENT_CONNECT_REQUEST: return "CONNECT_REQUEST";
	case RRR_CM_EVENT_ESTABLISHED: return "ESTABLISHED";
	case RRR_CM_EVENT_REJECTED: return "REJECTED";
	case RRR_CM_EVENT_UNREACHABLE: return "UNREACHABLE";
	case RRR_CM_EVENT_DISCONNECTED: return "DISCONNECTED";
	case RRR_CM_EVENT_DEVICE_REMOVAL: return "DEVICE_REMOVAL";
	}
	return "UNKNOWN";
}

int rrr_cm_create(struct rrr_device *dev, struct rrr_cm **out)
{
	if (!dev || !out)
		return -EINVAL;
	DISPATCH(dev, cm_create, dev, out);
}

void rrr_cm_destroy(struct rrr_cm *cm)
{
	if (cm && cm->dev->ops->cm_destroy)
		cm->dev->ops->cm_destroy(cm);
}

int rrr_cm_fd(struct rrr_cm *cm)
{
	if (!cm)
		return -EINVAL;
	DISPATCH(cm->dev, cm_fd, cm);
}

int rrr_cm_get_event(struct rrr_cm *cm, struct rrr_cm_event *ev)
{
	if (!cm || !ev)
		return -EINVAL;
	DISPATCH(cm->dev, cm_get_event, cm, ev);
}

int rrr_cm_wait_event(struct rrr_cm *cm, struct rrr_cm_event *ev, int timeout_ms)
{
	struct pollfd pfd;
	int rc;

	for (;;) {
		rc = rrr_cm_get_event(cm, ev);
		if (rc != -EAGAIN)
			return rc;
		pfd.fd = rrr_cm_fd(cm);
		if (pfd.fd < 0)
			return pfd.fd;
		pfd.events = POLLIN;
		rc = poll(&pfd, 1, timeout_ms);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
	}
}

int rrr_cm_id_create(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out)
{
	if (!cm || !out)
		return -EINVAL;
	DISPATCH(cm->dev, cm_id_create, cm, ctx, out);
}

void rrr_cm_id_destroy(struct rrr_cm_id *id)
{
	if (id && id->cm->dev->ops->cm_id_destroy)
		id->cm->dev->ops->cm_id_destroy(id);
}

void *rrr_cm_id_ctx(const struct rrr_cm_id *id) { return id->ctx; }
void rrr_cm_id_set_ctx(struct rrr_cm_id *id, void *ctx) { id->ctx = ctx; }
struct rrr_qp *rrr_cm_id_qp(const struct rrr_cm_id *id) { return id->qp; }

int rrr_cm_id_peer_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss)
{
	if (!id || !ss)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_peer_addr, id, ss);
}

int rrr_cm_id_local_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss)
{
	if (!id || !ss)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_local_addr, id, ss);
}

int rrr_cm_listen(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len, int backlog)
{
	if (!id || !addr)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_listen, id, addr, len, backlog);
}

int rrr_cm_set_source(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len)
{
	if (!id || !src || len < sizeof(sa_family_t) || len > sizeof(struct sockaddr_storage))
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_set_source, id, src, len);
}

int rrr_cm_resolve(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len, int timeout_ms)
{
	if (!id || !dst)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_resolve, id, dst, len, timeout_ms);
}

static int check_param(const struct rrr_conn_param *p)
{
	if (p && p->private_data_len > RRR_CM_MAX_PRIVATE_DATA)
		return rrr__set_error(-EINVAL, "private data of %u bytes exceeds %u",
				      p->private_data_len, RRR_CM_MAX_PRIVATE_DATA);
	return 0;
}

int rrr_cm_connect(struct rrr_cm_id *id, const struct rrr_conn_param *param)
{
	if (!id || check_param(param))
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_connect, id, param);
}

int rrr_cm_accept(struct rrr_cm_id *id, const struct rrr_conn_param *param)
{
	if (!id || check_param(param))
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_accept, id, param);
}

const char *rrr_cm_refusal_name(enum rrr_cm_refusal r)
{
	static const char *const names[] = {
		[RRR_CM_REFUSED_REVISION] = "revision",
		[RRR_CM_REFUSED_RTR] = "rtr",
		[RRR_CM_REFUSED_CRC] = "crc",
		[RRR_CM_REFUSED_MARKERS] = "markers",
		[RRR_CM_REFUSED_PRIVATE_DATA] = "private_data",
		[RRR_CM_REFUSED_PROTOCOL] = "protocol",
		[RRR_CM_REFUSED_APP] = "app",
		[RRR_CM_REFUSED_ADDRESS] = "address",
	};

	if ((unsigned)r < sizeof(names) / sizeof(names[0]) && names[r])
		return names[r];
	return "?";
}

int rrr_cm_set_limits(struct rrr_cm *cm, const struct rrr_cm_limits *lim)
{
	if (!cm || !lim)
		return -EINVAL;
	DISPATCH(cm->dev, cm_set_limits, cm, lim);
}

int rrr_cm_limit_stats(struct rrr_cm *cm, struct rrr_cm_limit_stats *st)
{
	if (!cm || !st)
		return -EINVAL;
	DISPATCH(cm->dev, cm_limit_stats, cm, st);
}

int rrr_cm_reject(struct rrr_cm_id *id, const void *private_data, uint32_t len)
{
	if (!id || len > RRR_CM_MAX_PRIVATE_DATA)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_reject, id, private_data, len);
}

int rrr_cm_disconnect(struct rrr_cm_id *id)
{
	if (!id)
		return -EINVAL;
	DISPATCH(id->cm->dev, cm_disconnect, id);
}

int rrr_addr_parse(const char *host, const char *port, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints, *res = NULL;
	int rc;

	if (!ss || !len)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = host ? 0 : AI_PASSIVE;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return rrr__set_error(-EHOSTUNREACH, "cannot resolve %s:%s: %s",
				      host ? host : "*", port ? port : "0", gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}
