/* SPDX-License-Identifier: MIT */
/*
 * transport/provider_impl.h - what a provider implements.
 *
 * The public objects (struct rrr_device, rrr_pd, ...) are defined here and
 * EMBEDDED as the first member of each provider's private struct; providers
 * get back to their own struct with container_of(). The generic layer
 * (provider.c) dispatches every public call through dev->ops and does the
 * argument checks that are common to all providers, so a provider's ops
 * may assume non-NULL objects and in-range basic arguments.
 *
 * An ops slot left NULL means "not supported": the generic layer returns
 * -EOPNOTSUPP for it.
 *
 * Private to transport/: only the generic layer (the .c files of transport/) and the
 * providers (transport/soft/, transport/verbs/) include this header; the
 * layers above see the objects only through <rrr/provider.h> and share
 * errors, options and logging through common/rrr_impl.h
 * (scripts/check-includes.sh).
 */
#ifndef RRR_TRANSPORT_PROVIDER_IMPL_H
#define RRR_TRANSPORT_PROVIDER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <rrr/provider.h>

#include "common/rrr_impl.h" /* container_of, rrr__set_error, rrr__opts_parse, rrr__log */

struct rrr__provider_ops;

struct rrr_device {
	const struct rrr__provider_ops *ops;
	struct rrr_device_attr attr;
};

struct rrr_pd {
	struct rrr_device *dev;
};

struct rrr_cq {
	struct rrr_device *dev;
	bool hot; /* rrr_cq_wait_mode: the last wait ended soon after it began */
};

struct rrr_mr {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	uint32_t lkey;
	uint32_t rkey;
	uint64_t iova;
	uint64_t length;
	uint32_t max_pages; /* 0 for long-lived registrations */
	unsigned access;
};

struct rrr_qp {
	struct rrr_device *dev;
	struct rrr_pd *pd;
	struct rrr_cq *send_cq;
	struct rrr_cq *recv_cq;
	struct rrr_cm_id *id;
	void *ctx;
};

struct rrr_cm {
	struct rrr_device *dev;
};

struct rrr_cm_id {
	struct rrr_cm *cm;
	struct rrr_qp *qp;
	void *ctx;
};

struct rrr__provider_ops {
	const char *name;
	int (*device_open)(const char *opts, struct rrr_device **out);
	void (*device_close)(struct rrr_device *dev);

	int (*pd_alloc)(struct rrr_device *dev, struct rrr_pd **out);
	int (*pd_free)(struct rrr_pd *pd);

	int (*cq_create)(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out);
	int (*cq_destroy)(struct rrr_cq *cq);
	int (*cq_poll)(struct rrr_cq *cq, struct rrr_wc *wc, int n);
	int (*cq_fd)(struct rrr_cq *cq);
	int (*cq_ack_event)(struct rrr_cq *cq);
	int (*cq_arm)(struct rrr_cq *cq);

	int (*mr_reg)(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
		      struct rrr_mr **out);
	int (*mr_alloc)(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out);
	int (*mr_dereg)(struct rrr_mr *mr);
	int (*mr_map_sg)(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access);
	int (*mr_recover)(struct rrr_mr *mr);

	int (*qp_create)(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr,
			 struct rrr_qp **out);
	int (*qp_destroy)(struct rrr_qp *qp);
	int (*post_send)(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad);
	int (*post_recv)(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad);

	int (*cm_create)(struct rrr_device *dev, struct rrr_cm **out);
	void (*cm_destroy)(struct rrr_cm *cm);
	int (*cm_fd)(struct rrr_cm *cm);
	int (*cm_get_event)(struct rrr_cm *cm, struct rrr_cm_event *ev);
	int (*cm_id_create)(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out);
	void (*cm_id_destroy)(struct rrr_cm_id *id);
	int (*cm_peer_addr)(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
	int (*cm_local_addr)(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
	int (*cm_listen)(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len,
			 int backlog);
	int (*cm_set_source)(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len);
	int (*cm_resolve)(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len,
			  int timeout_ms);
	int (*cm_connect)(struct rrr_cm_id *id, const struct rrr_conn_param *param);
	int (*cm_accept)(struct rrr_cm_id *id, const struct rrr_conn_param *param);
	int (*cm_reject)(struct rrr_cm_id *id, const void *pdata, uint32_t len);
	int (*cm_disconnect)(struct rrr_cm_id *id);
	int (*cm_set_limits)(struct rrr_cm *cm, const struct rrr_cm_limits *lim);
	int (*cm_limit_stats)(struct rrr_cm *cm, struct rrr_cm_limit_stats *st);
};

/* The two providers (defined in transport/soft/ and transport/verbs/). */
extern const struct rrr__provider_ops rrr__soft_ops;
extern const struct rrr__provider_ops rrr__verbs_ops;

#endif /* RRR_TRANSPORT_PROVIDER_IMPL_H */
