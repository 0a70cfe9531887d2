/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/mr.c - memory registration: long-lived MRs and the
 * per-I/O (fast registration) strategies of the verbs provider.
 *
 * User-space verbs has no FRWR work request, so an rrr fast-registration MR
 * is implemented by one of these strategies (chosen in device.c):
 *
 *  mw          A type-2 memory window. rrr_mr_map_sg picks the MR the window
 *              will be bound over: a long-lived MR of the PD (rrr_mr_reg,
 *              registered with MW_BIND) that covers the range, else a private
 *              backing MR registered for the range (kept while it still covers
 *              the next mapping). It computes the next key with ibv_inc_rkey.
 *              REG_MR becomes IBV_WR_BIND_MW, LOCAL_INV stays LOCAL_INV; a
 *              peer's Send With Invalidate (seen on our receive completion)
 *              invalidates too. rxe quirk 1: after a bind the provider stores
 *              the new rkey in the ibv_mw itself, and every bind uses a fresh
 *              key byte. Safe only where the device checks window bounds; rxe
 *              does not (quirk 2), see rrr-devcheck.
 *  regmr       ibv_reg_mr at map time (valid at once: allowed by the
 *              contract), ibv_dereg_mr when the LOCAL_INV is posted (invalid
 *              no later than it completes). REG_MR and LOCAL_INV complete
 *              synthetically, in order (qp_cq.c). Works on every device; a
 *              peer cannot invalidate such keys, so send_with_inv is off.
 *              Local WRs still in flight that use this MR's lkey must finish
 *              before its LOCAL_INV is posted (rrr's engines wait for them).
 *  persistent  Like regmr, but LOCAL_INV keeps the registration (re-used if
 *              the next mapping is the same range): the key stays valid after
 *              the I/O. UNSAFE; benchmarks only; attr.safe is false.
 *  umr         mlx5dv UMR lists: not built (device.c refuses it).
 *
 * Mapping model: one registration is one virtually contiguous range, so
 * map_sg maps the longest prefix of entries that abut in virtual memory and
 * fit max_pages (zero-length entries are consumed).
 *
 * State (vdev.lock): INVALID --map_sg--> MAPPED --REG_MR posted--> VALID
 * --LOCAL_INV posted / remote invalidation--> INVALID. Fast MRs are kept in a
 * table by current rkey so LOCAL_INV and remote invalidation find them.
 *
 * Recovery: rrr_mr_recover deallocates and reallocates the window (new
 * index and key: no old handle can match) or deregisters the MR. Before a
 * QP is destroyed every window bound through it is replaced the same way
 * (rxe quirk 4: destroying a QP with a bound type-2 window hangs ~50 s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_impl.h"

#define VPAGE 4096u

static unsigned bucket(uint32_t rkey)
{
	return (rkey >> 8) % VMR_HASH;
}

/* All three: caller holds d->lock. */
static void hash_insert(struct vdev *d, struct vmr *m)
{
	unsigned b = bucket(m->pub.rkey);

	m->next = d->by_rkey[b];
	d->by_rkey[b] = m;
	m->hashed = true;
}

static void hash_remove(struct vdev *d, struct vmr *m)
{
	struct vmr **pp;

	if (!m->hashed)
		return;
	for (pp = &d->by_rkey[bucket(m->pub.rkey)]; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	m->hashed = false;
	m->next = NULL;
}

static struct vmr *hash_find(struct vdev *d, uint32_t rkey)
{
	struct vmr *m;

	for (m = d->by_rkey[bucket(rkey)]; m; m = m->next)
		if (m->pub.rkey == rkey)
			return m;
	return NULL;
}

/* The remote rights of rrr access flags @a, as ibverbs access flags (what
 * a memory window is bound with). */
static unsigned mw_access(unsigned a)
{
	return (a & RRR_ACCESS_REMOTE_WRITE ? IBV_ACCESS_REMOTE_WRITE : 0u) |
	       (a & RRR_ACCESS_REMOTE_READ ? IBV_ACCESS_REMOTE_READ : 0u);
}

/* A registration's ibverbs access flags: local write and the remote rights. */
static int ibv_access(unsigned a)
{
	return (int)(IBV_ACCESS_LOCAL_WRITE | mw_access(a));
}

int rrr__verbs_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
		      struct rrr_mr **out)
{
	struct vdev *d = VDEV(pd->dev);
	struct vpd *p = VPD(pd);
	struct vmr *m = calloc(1, sizeof(*m));
	int f = ibv_access(access);

	if (!m)
		return -ENOMEM;
	if (d->strategy == VSTRAT_MW)
		f |= IBV_ACCESS_MW_BIND;
	m->mr = ibv_reg_mr(p->pd, addr, len, f);
	if (!m->mr) {
		int rc = rrr__verbs_err(-1);

		free(m);
		return rrr__set_error(rc,
				      "verbs: ibv_reg_mr of %zu bytes failed: %s (memlock "
				      "limit? ulimit -l)",
				      len, strerror(-rc));
	}
	m->pub.dev = pd->dev;
	m->pub.pd = pd;
	m->pub.lkey = m->mr->lkey;
	m->pub.rkey = m->mr->rkey;
	m->pub.iova = (uint64_t)(uintptr_t)addr;
	m->pub.length = len;
	m->pub.access = access;
	pthread_mutex_lock(&p->lock);
	if (d->strategy == VSTRAT_MW) {
		m->next = p->long_mrs;
		p->long_mrs = m;
	}
	p->nmr++;
	pthread_mutex_unlock(&p->lock);
	*out = &m->pub;
	return 0;
}

int rrr__verbs_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out)
{
	struct vdev *d = VDEV(pd->dev);
	struct vpd *p = VPD(pd);
	struct vmr *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	if (d->strategy == VSTRAT_MW) {
		m->mw = ibv_alloc_mw(p->pd, IBV_MW_TYPE_2);
		if (!m->mw) {
			int rc = rrr__verbs_err(-1);

			free(m);
			return rrr__set_error(rc,
					      "verbs: ibv_alloc_mw failed: %s (device lacks "
					      "memory windows? use strategy=regmr)",
					      strerror(-rc));
		}
		m->pub.rkey = m->mw->rkey;
	}
	m->fast = true;
	m->pub.dev = pd->dev;
	m->pub.pd = pd;
	m->pub.max_pages = max_pages;
	pthread_mutex_lock(&d->lock);
	if (m->mw)
		hash_insert(d, m);
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&p->lock);
	p->nmr++;
	pthread_mutex_unlock(&p->lock);
	*out = &m->pub;
	return 0;
}

int rrr__verbs_mr_dereg(struct rrr_mr *mr)
{
	struct vdev *d = VDEV(mr->dev);
	struct vpd *p = VPD(mr->pd);
	struct vmr *m = VMR(mr), **pp;
	int rc;

	if (!m->fast) {
		rc = ibv_dereg_mr(m->mr);
		if (rc)
			return rrr__verbs_err(rc);
		pthread_mutex_lock(&p->lock);
		for (pp = &p->long_mrs; *pp; pp = &(*pp)->next)
			if (*pp == m) {
				*pp = m->next;
				break;
			}
		p->nmr--;
		pthread_mutex_unlock(&p->lock);
		free(m);
		return 0;
	}
	pthread_mutex_lock(&d->lock);
	if (m->state == VMR_VALID || (m->state == VMR_MAPPED && d->strategy != VSTRAT_MW &&
				      d->strategy != VSTRAT_PERSISTENT)) {
		pthread_mutex_unlock(&d->lock);
		return -EBUSY;
	}
	hash_remove(d, m);
	pthread_mutex_unlock(&d->lock);
	if (m->mw)
		ibv_dealloc_mw(m->mw);
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->backing)
		ibv_dereg_mr(m->backing);
	pthread_mutex_lock(&p->lock);
	p->nmr--;
	pthread_mutex_unlock(&p->lock);
	free(m);
	return 0;
}

/* The longest prefix that is one virtual range within @max_pages pages. */
static int contig_prefix(const struct rrr_sg *sg, int nents, uint32_t max_pages, uint64_t *start,
			 uint64_t *end)
{
	uint64_t s, e;
	int i;

	if (sg[0].length == 0 || !sg[0].page)
		return -EINVAL;
	s = (uint64_t)(uintptr_t)sg[0].page + sg[0].offset;
	e = s + sg[0].length;
	if (e < s || ((e + VPAGE - 1) / VPAGE - s / VPAGE) > max_pages)
		return -EINVAL;
	for (i = 1; i < nents; i++) {
		uint64_t si, ei;

		if (sg[i].length == 0)
			continue;
		si = (uint64_t)(uintptr_t)sg[i].page + sg[i].offset;
		ei = si + sg[i].length;
		if (si != e || ei < si || ((ei + VPAGE - 1) / VPAGE - s / VPAGE) > max_pages)
			break;
		e = ei;
	}
	*start = s;
	*end = e;
	return i;
}

/* A long-lived MR of @p (MW_BIND) covering [s, e), or NULL. */
static struct ibv_mr *find_backing(struct vpd *p, uint64_t s, uint64_t e)
{
	struct ibv_mr *found = NULL;
	struct vmr *m;

	pthread_mutex_lock(&p->lock);
	for (m = p->long_mrs; m; m = m->next) {
		uint64_t ms = (uint64_t)(uintptr_t)m->mr->addr;

		if (s >= ms && e <= ms + m->mr->length) {
			found = m->mr;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return found;
}

static bool covers(const struct ibv_mr *mr, uint64_t s, uint64_t e)
{
	uint64_t ms;

	if (!mr)
		return false;
	ms = (uint64_t)(uintptr_t)mr->addr;
	return s >= ms && e <= ms + mr->length;
}

int rrr__verbs_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access)
{
	struct vdev *d = VDEV(mr->dev);
	struct vpd *p = VPD(mr->pd);
	struct vmr *m = VMR(mr);
	uint64_t s, e;
	int n, rc = 0;

	if (!m->fast)
		return -EINVAL;
	n = contig_prefix(sg, nents, mr->max_pages, &s, &e);
	if (n < 0)
		return n;
	pthread_mutex_lock(&d->lock);
	if (m->state != VMR_INVALID) {
		rc = -EINVAL;
		goto out;
	}
	switch (d->strategy) {
	case VSTRAT_MW: {
		struct ibv_mr *b = find_backing(p, s, e);

		if (!b) {
			if (!covers(m->backing, s, e)) {
				struct ibv_mr *nb =
				    ibv_reg_mr(p->pd, (void *)(uintptr_t)s, e - s,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
				if (!nb) {
					rc = rrr__verbs_err(-1);
					goto out;
				}
				if (m->backing)
					ibv_dereg_mr(m->backing);
				m->backing = nb;
			}
			b = m->backing;
		}
		m->bind_mr = b;
		hash_remove(d, m);
		m->pub.rkey = ibv_inc_rkey(m->mw->rkey);
		hash_insert(d, m);
		m->pub.lkey = b->lkey;
		break;
	}
	case VSTRAT_PERSISTENT:
		if (m->mr && m->pub.iova == s && m->pub.length == e - s &&
		    (m->map_access | access) == m->map_access)
			break;
		/* different range or rights: register again */
		__attribute__((fallthrough));
	case VSTRAT_REGMR:
	default: {
		struct ibv_mr *nm =
		    ibv_reg_mr(p->pd, (void *)(uintptr_t)s, e - s, ibv_access(access));

		if (!nm) {
			rc = rrr__verbs_err(-1);
			rrr__set_error(rc, "verbs: ibv_reg_mr of %llu bytes failed",
				       (unsigned long long)(e - s));
			goto out;
		}
		hash_remove(d, m);
		if (m->mr)
			ibv_dereg_mr(m->mr);
		m->mr = nm;
		m->pub.lkey = nm->lkey;
		m->pub.rkey = nm->rkey;
		hash_insert(d, m);
		break;
	}
	}
	m->pub.iova = s;
	m->pub.length = e - s;
	m->pub.access = access;
	m->map_access = access;
	m->state = VMR_MAPPED;
	rc = n;
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int rrr__verbs_mr_prepare_wr(struct vqp *qp, const struct rrr_send_wr *wr, struct ibv_send_wr *out,
			     bool *real)
{
	struct vdev *d = VDEV(qp->pub.dev);
	int rc = 0;

	*real = false;
	pthread_mutex_lock(&d->lock);
	if (wr->opcode == RRR_WR_REG_MR) {
		struct vmr *m = wr->u.reg.mr ? VMR(wr->u.reg.mr) : NULL;

		if (!m || !m->fast || m->state != VMR_MAPPED || m->pub.dev != qp->pub.dev) {
			rc = rrr__set_error(-EINVAL, "verbs: REG_MR of an MR that is not mapped");
			goto out;
		}
		if (d->strategy == VSTRAT_MW) {
			unsigned a = wr->u.reg.access ? wr->u.reg.access : m->map_access;

			out->opcode = IBV_WR_BIND_MW;
			out->num_sge = 0;
			out->sg_list = NULL;
			out->bind_mw.mw = m->mw;
			out->bind_mw.rkey = m->pub.rkey;
			out->bind_mw.bind_info.mr = m->bind_mr;
			out->bind_mw.bind_info.addr = m->pub.iova;
			out->bind_mw.bind_info.length = m->pub.length;
			out->bind_mw.bind_info.mw_access_flags = mw_access(a);
			*real = true;
		}
	} else {
		if (d->strategy == VSTRAT_MW) {
			out->opcode = IBV_WR_LOCAL_INV;
			out->num_sge = 0;
			out->sg_list = NULL;
			out->invalidate_rkey = wr->u.inv.rkey;
			*real = true;
		} else if (!hash_find(d, wr->u.inv.rkey)) {
			rc = rrr__set_error(-EINVAL,
					    "verbs: LOCAL_INV of rkey 0x%x that is not "
					    "registered",
					    wr->u.inv.rkey);
		}
	}
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void rrr__verbs_mr_posted(struct vqp *qp, const struct rrr_send_wr *wr)
{
	struct vdev *d = VDEV(qp->pub.dev);
	struct vmr *m;

	pthread_mutex_lock(&d->lock);
	if (wr->opcode == RRR_WR_REG_MR) {
		m = VMR(wr->u.reg.mr);
		if (m->mw) {
			m->mw->rkey = m->pub.rkey; /* rxe quirk 1 */
			m->bound_qp = qp;
		}
		m->state = VMR_VALID;
		goto out;
	}
	m = hash_find(d, wr->u.inv.rkey);
	if (!m)
		goto out;
	if (d->strategy == VSTRAT_REGMR && m->mr) {
		hash_remove(d, m);
		ibv_dereg_mr(m->mr);
		m->mr = NULL;
	}
	/* A window stays bound to its QP in the device until this LOCAL_INV
	 * executes, which is not observable for an unsignaled WR and never
	 * happens when it is flushed (QP in error): keep bound_qp, so that
	 * rrr_mr_recover and rrr__verbs_mr_qp_gone still replace the window
	 * (rxe quirk 4: a QP destroyed with a bound window hangs ~50 s). */
	if (!m->mw)
		m->bound_qp = NULL;
	m->state = VMR_INVALID;
out:
	pthread_mutex_unlock(&d->lock);
}

void rrr__verbs_mr_remote_invalidated(struct vdev *d, uint32_t rkey)
{
	struct vmr *m;

	pthread_mutex_lock(&d->lock);
	m = hash_find(d, rkey);
	if (m && m->mw) {
		m->state = VMR_INVALID;
		m->bound_qp = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}

/* Replace the window of @m by a fresh one; caller holds d->lock. */
static int renew_window(struct vdev *d, struct vmr *m)
{
	struct ibv_mw *nw = ibv_alloc_mw(VPD(m->pub.pd)->pd, IBV_MW_TYPE_2);

	if (!nw)
		return rrr__verbs_err(-1);
	hash_remove(d, m);
	ibv_dealloc_mw(m->mw);
	m->mw = nw;
	m->pub.rkey = nw->rkey;
	hash_insert(d, m);
	m->bound_qp = NULL;
	m->state = VMR_INVALID;
	return 0;
}

int rrr__verbs_mr_recover(struct rrr_mr *mr)
{
	struct vdev *d = VDEV(mr->dev);
	struct vmr *m = VMR(mr);
	int rc = 0;

	if (!m->fast)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (m->mw) {
		if (m->state != VMR_INVALID || m->bound_qp)
			rc = renew_window(d, m);
	} else if (m->mr) {
		hash_remove(d, m);
		rc = ibv_dereg_mr(m->mr) ? rrr__verbs_err(-1) : 0;
		if (rc == 0)
			m->mr = NULL;
	}
	if (rc == 0)
		m->state = VMR_INVALID;
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void rrr__verbs_mr_qp_gone(struct vqp *qp)
{
	struct vdev *d = VDEV(qp->pub.dev);
	struct vmr *m, *next;
	unsigned b;

	if (d->strategy != VSTRAT_MW)
		return;
	pthread_mutex_lock(&d->lock);
	for (b = 0; b < VMR_HASH; b++) {
		for (m = d->by_rkey[b]; m; m = next) {
			next = m->next;
			/* not a MAPPED one: its new key is already handed out */
			if (m->bound_qp == qp && m->state != VMR_MAPPED && renew_window(d, m) != 0)
				rrr__log_err("rrr verbs: cannot replace a window bound to a "
					     "destroyed QP");
		}
	}
	pthread_mutex_unlock(&d->lock);
}
