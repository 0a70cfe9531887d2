/* SPDX-License-Identifier: MIT */
/* tests/reg/helpers/fake_provider.c - see fake_provider.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_provider.h"

static int fake_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out)
{
	struct fake_dev *fd = container_of(pd->dev, struct fake_dev, dev);
	struct fake_mr *m;

	if (fd->fail_alloc)
		return -ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->index = ++fd->next_index;
	m->mr.dev = pd->dev;
	m->mr.pd = pd;
	m->mr.max_pages = max_pages;
	m->mr.rkey = m->index << 8;
	m->mr.lkey = m->mr.rkey;
	fd->mrs_alive++;
	if (m->index < FAKE_MAX_MRS)
		fd->mrs[m->index] = m;
	*out = &m->mr;
	return 0;
}

static int fake_mr_dereg(struct rrr_mr *mr)
{
	struct fake_dev *fd = container_of(mr->dev, struct fake_dev, dev);

	fd->mrs_alive--;
	fd->deregs++;
	if (fake_mr_of(mr)->index < FAKE_MAX_MRS)
		fd->mrs[fake_mr_of(mr)->index] = NULL;
	free(fake_mr_of(mr));
	return 0;
}

/* The stop rules of provider.h, written from its text. */
static int fake_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access)
{
	struct fake_dev *fd = container_of(mr->dev, struct fake_dev, dev);
	struct fake_mr *m = fake_mr_of(mr);
	const uint64_t ps = mr->dev->attr.page_size;
	enum rrr_map_model model = mr->dev->attr.map_model;
	uint64_t iova = 0, end = 0, len = 0, pages = 0;
	int i, mapped = 0;

	fd->map_calls++;
	if (m->state != FAKE_INVALID || sg[0].length == 0)
		return -EINVAL;
	if ((int)fd->map_calls == fd->fail_map_call)
		return -ENOMEM;
	m->last_nents = nents;
	memcpy(m->last, sg,
	       sizeof(sg[0]) * (size_t)(nents < FAKE_REC_ENTS ? nents : FAKE_REC_ENTS));
	for (i = 0; i < nents; i++) {
		uint64_t a = (uint64_t)(uintptr_t)sg[i].page + sg[i].offset;
		uint64_t e = a + sg[i].length, p;

		if (sg[i].length == 0) {
			mapped++;
			continue;
		}
		if (len) {
			if (model == RRR_MAP_PAGE_LIST && (end % ps || a % ps))
				break;
			if (model == RRR_MAP_VIRT_CONTIG && a != end)
				break;
		}
		if (model == RRR_MAP_VIRT_CONTIG) {
			/* the one range's pages, first byte to last */
			p = (e + ps - 1) / ps - (len ? iova : a) / ps;
			if (p > mr->max_pages)
				break;
			pages = p;
		} else {
			p = (e + ps - 1) / ps - a / ps;
			if (pages + p > mr->max_pages)
				break;
			pages += p;
		}
		if (!len)
			iova = a;
		len += sg[i].length;
		end = e;
		mapped++;
	}
	if (mapped == 0)
		return -EINVAL;
	if ((int)fd->map_calls == fd->short_map_call && mapped > 0)
		mapped--;
	m->state = FAKE_MAPPED;
	m->maps++;
	mr->rkey = (m->index << 8) | ((mr->rkey + 1) & 0xff);
	mr->lkey = mr->rkey;
	mr->iova = iova;
	mr->length = len;
	mr->access = access;
	return mapped;
}

static int fake_mr_recover(struct rrr_mr *mr)
{
	struct fake_dev *fd = container_of(mr->dev, struct fake_dev, dev);
	struct fake_mr *m = fake_mr_of(mr);

	if (fd->fail_recover)
		return -EIO;
	m->recovers++;
	m->state = FAKE_INVALID;
	mr->rkey = (m->index << 8) | ((mr->rkey + 1) & 0xff);
	return 0;
}

static const struct rrr__provider_ops fake_ops = {
    .name = "fake",
    .mr_alloc = fake_mr_alloc,
    .mr_dereg = fake_mr_dereg,
    .mr_map_sg = fake_mr_map_sg,
    .mr_recover = fake_mr_recover,
};

void fake_dev_init(struct fake_dev *fd, enum rrr_map_model model, uint32_t max_pages)
{
	memset(fd, 0, sizeof(*fd));
	fd->dev.ops = &fake_ops;
	strcpy(fd->dev.attr.provider, "fake");
	strcpy(fd->dev.attr.name, "fake0");
	fd->dev.attr.page_size = 4096;
	fd->dev.attr.max_fr_pages = max_pages;
	fd->dev.attr.map_model = model;
	fd->dev.attr.sg_gaps = model == RRR_MAP_SG_GAPS;
	fd->dev.attr.safe = true;
	fd->pd.dev = &fd->dev;
}

struct fake_mr *fake_find(struct fake_dev *fd, uint32_t rkey)
{
	unsigned idx = rkey >> 8;

	if (idx >= FAKE_MAX_MRS || !fd->mrs[idx] || fd->mrs[idx]->mr.rkey != rkey)
		return NULL;
	return fd->mrs[idx];
}

int fake_execute(struct fake_dev *fd, const struct rrr_send_wr *wr)
{
	for (; wr; wr = wr->next) {
		struct fake_mr *m;

		switch (wr->opcode) {
		case RRR_WR_REG_MR:
			if (fake_mr_of(wr->u.reg.mr)->state != FAKE_MAPPED)
				return -EINVAL;
			fake_mr_of(wr->u.reg.mr)->state = FAKE_VALID;
			break;
		case RRR_WR_LOCAL_INV:
			m = fake_find(fd, wr->u.inv.rkey);
			if (!m)
				return -ENOENT;
			m->state = FAKE_INVALID;
			break;
		default:
			return -EOPNOTSUPP;
		}
	}
	return 0;
}
