/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/verbs_impl.h - private objects of the "verbs" provider
 * (libibverbs + librdmacm).
 *
 * Every private struct embeds its public struct (provider_impl.h) first;
 * the V*() macros get back with container_of(). The files of this directory:
 *   device.c  open by name, options, capabilities, strategy choice, ops table
 *   cm.c      librdmacm event channel, ids, resolve/listen/connect/accept
 *   qp_cq.c   QPs, CQs (completion channel + eventfd), post, poll translation
 *   mr.c      long-lived MRs and per-I/O registration strategies
 *
 * Locking: vdev.lock protects the rkey table of fast-registration MRs and
 * their state; vpd.lock protects the PD's list of long-lived MRs; vcq.lock
 * protects the CQ's synthetic completions and QP list. Everything else follows
 * the public contract (callers serialise per QP and per CQ).
 */
#ifndef RRR_TRANSPORT_VERBS_IMPL_H
#define RRR_TRANSPORT_VERBS_IMPL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "transport/provider_impl.h"

enum vstrategy {
	VSTRAT_MW = 0,	   /* type-2 memory windows over long-lived MRs */
	VSTRAT_REGMR,	   /* ibv_reg_mr / ibv_dereg_mr per I/O */
	VSTRAT_UMR,	   /* mlx5dv UMR lists: not built (see docs/verbs.md) */
	VSTRAT_PERSISTENT, /* one long-lived registration per buffer: UNSAFE */
};

/* Known deviations of a device from the verbs specification. */
struct vquirks {
	bool mw_bounds_unchecked; /* rxe: only the MR range is checked */
	bool wc_inv_as_csum;	  /* rxe: WITH_INV arrives as IBV_WC_IP_CSUM_OK */
	bool remote_inv_broken;	  /* advertise but fail (bnxt_re, SPDK #3926) */
};

#define VMR_HASH 1024u

/* rdma_cm private data limits over IB CM (RoCE): REQ 92-36, REJ 148. */
#define VERBS_CONNECT_PDATA 56u
#define VERBS_REJECT_PDATA  148u

struct vmr;

struct vdev {
	struct rrr_device pub;
	struct ibv_context **list; /* rdma_get_devices(); freed at close */
	struct ibv_context *ctx;   /* librdmacm's context of the device */
	struct ibv_device_attr_ex dattr;
	enum vstrategy strategy;
	bool remote_inv; /* peers may invalidate our keys; we may send WITH_INV */
	struct vquirks quirks;
	char auto_reason[160]; /* why strategy=auto chose what it chose */
	pthread_mutex_t lock;
	struct vmr *by_rkey[VMR_HASH]; /* fast-reg MRs by current rkey */
};

struct vpd {
	struct rrr_pd pub;
	struct ibv_pd *pd;
	pthread_mutex_t lock;
	struct vmr *long_mrs; /* long-lived MRs usable as window backing */
	unsigned nmr, nqp;
};

enum vmr_state { VMR_INVALID = 0, VMR_MAPPED, VMR_VALID };

struct vmr {
	struct rrr_mr pub;
	struct ibv_mr *mr;	/* long-lived, per-I/O (regmr/persistent) */
	struct ibv_mr *backing; /* mw: private backing MR if no long-lived covers */
	struct ibv_mw *mw;	/* mw strategy */
	struct ibv_mr *bind_mr; /* mw: the MR the window is (to be) bound over */
	struct vqp *bound_qp;	/* mw: QP the window was bound through */
	enum vmr_state state;
	unsigned map_access;
	bool fast;
	bool hashed;
	struct vmr *next; /* vpd.long_mrs (long) or vdev.by_rkey (fast) */
};

struct sbatch;
struct vsynth; /* a completion made up by the provider (regmr strategy) */

struct vqp;

struct vcq {
	struct rrr_cq pub;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int efd;  /* eventfd: synthetic completions queued */
	int epfd; /* rrr_cq_fd(): epoll over ch->fd and efd */
	pthread_mutex_t lock;
	struct vsynth *synth_head, **synth_tail;
	struct vqp *sq_qps; /* QPs whose send CQ this is (vqp.next_send) */
	struct vqp *rq_qps; /* QPs whose recv CQ this is (vqp.next_recv) */
	unsigned nqp;
	unsigned unacked;
};

struct vqp {
	struct rrr_qp pub;
	struct ibv_qp *qp;
	uint32_t max_send_sge, max_recv_sge;
	uint64_t sig_posted;		   /* real signaled send WRs posted */
	uint64_t sig_done;		   /* send completions polled */
	bool errored;			   /* a completion failed: the QP is in error */
	struct sbatch *batch;		   /* post_send scratch (posts are serialised per QP) */
	struct vqp *next_send, *next_recv; /* vcq.qps chains */
};

struct vcm {
	struct rrr_cm pub;
	struct rdma_event_channel *ch;
};

struct vcm_id {
	struct rrr_cm_id pub;
	struct rdma_cm_id *id;
	int resolve_timeout_ms;
	bool listening;
	struct sockaddr_storage src; /* connect from here if free (srclen 0: any) */
	socklen_t srclen;
};

#define VDEV(p) container_of((p), struct vdev, pub)
#define VPD(p)	container_of((p), struct vpd, pub)
#define VCQ(p)	container_of((p), struct vcq, pub)
#define VQP(p)	container_of((p), struct vqp, pub)
#define VMR(p)	container_of((p), struct vmr, pub)
#define VCM(p)	container_of((p), struct vcm, pub)
#define VID(p)	container_of((p), struct vcm_id, pub)

/* Positive errno (ibverbs return value) or -1 with errno -> -errno. */
static inline int rrr__verbs_err(int rc)
{
	if (rc > 0)
		return -rc;
	if (rc < 0)
		return errno ? -errno : -EIO;
	return 0;
}

const char *rrr__verbs_strategy_name(enum vstrategy s);

/* device.c */
/* The quirks the provider works around on @dev (a verbs device), as text:
 * "" when none. For rrr-devcheck's report. */
const char *rrr__verbs_quirks_str(struct rrr_device *dev, char *buf, size_t len);
int rrr__verbs_device_open(const char *opts, struct rrr_device **out);
void rrr__verbs_device_close(struct rrr_device *dev);
int rrr__verbs_pd_alloc(struct rrr_device *dev, struct rrr_pd **out);
int rrr__verbs_pd_free(struct rrr_pd *pd);

/* qp_cq.c */
int rrr__verbs_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out);
int rrr__verbs_cq_destroy(struct rrr_cq *cq);
int rrr__verbs_cq_poll(struct rrr_cq *cq, struct rrr_wc *wc, int n);
int rrr__verbs_cq_fd(struct rrr_cq *cq);
int rrr__verbs_cq_ack_event(struct rrr_cq *cq);
int rrr__verbs_cq_arm(struct rrr_cq *cq);
int rrr__verbs_qp_create(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr,
			 struct rrr_qp **out);
int rrr__verbs_qp_destroy(struct rrr_qp *qp);
int rrr__verbs_post_send(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad);
int rrr__verbs_post_recv(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad);
/* Queue a provider-made completion behind the QP's signaled WRs posted so far. */
int rrr__verbs_synth_queue(struct vqp *qp, const struct rrr_wc *wc);

/* mr.c */
int rrr__verbs_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
		      struct rrr_mr **out);
int rrr__verbs_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out);
int rrr__verbs_mr_dereg(struct rrr_mr *mr);
int rrr__verbs_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access);
int rrr__verbs_mr_recover(struct rrr_mr *mr);
/* Translate one REG_MR / LOCAL_INV WR for @qp. Sets *real to true and fills
 * @out when a real ibverbs WR must be posted; otherwise the provider made the
 * completion itself (rrr__verbs_synth_queue). Called before posting. */
int rrr__verbs_mr_prepare_wr(struct vqp *qp, const struct rrr_send_wr *wr, struct ibv_send_wr *out,
			     bool *real);
/* After a REG_MR / LOCAL_INV was posted (real) successfully. */
void rrr__verbs_mr_posted(struct vqp *qp, const struct rrr_send_wr *wr);
/* A receive completed with remote invalidation of @rkey. */
void rrr__verbs_mr_remote_invalidated(struct vdev *dev, uint32_t rkey);
/* Before destroying @qp: unbind every window bound through it (rxe quirk 4). */
void rrr__verbs_mr_qp_gone(struct vqp *qp);

/* cm.c */
int rrr__verbs_cm_create(struct rrr_device *dev, struct rrr_cm **out);
void rrr__verbs_cm_destroy(struct rrr_cm *cm);
int rrr__verbs_cm_fd(struct rrr_cm *cm);
int rrr__verbs_cm_get_event(struct rrr_cm *cm, struct rrr_cm_event *ev);
int rrr__verbs_cm_id_create(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out);
void rrr__verbs_cm_id_destroy(struct rrr_cm_id *id);
int rrr__verbs_cm_peer_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
int rrr__verbs_cm_local_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
int rrr__verbs_cm_listen(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len,
			 int backlog);
int rrr__verbs_cm_set_source(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len);
int rrr__verbs_cm_resolve(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len,
			  int timeout_ms);
int rrr__verbs_cm_connect(struct rrr_cm_id *id, const struct rrr_conn_param *param);
int rrr__verbs_cm_accept(struct rrr_cm_id *id, const struct rrr_conn_param *param);
int rrr__verbs_cm_reject(struct rrr_cm_id *id, const void *pdata, uint32_t len);
int rrr__verbs_cm_disconnect(struct rrr_cm_id *id);

#endif /* RRR_TRANSPORT_VERBS_IMPL_H */
