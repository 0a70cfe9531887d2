/* SPDX-License-Identifier: MIT */
/*
 * tests/reg/helpers/fake_provider.h - a memory-only provider for the
 * registration engine's unit tests.
 *
 * Not a substitute for the soft provider (tests/reg/soft.c runs the engine
 * on it end to end); this exists for what a real provider cannot be made to
 * do on demand: every map model (soft has one), failures injected at a
 * chosen call, and a record of exactly which entries the engine handed to
 * rrr_mr_map_sg(). Its map_sg applies the stop rules of provider.h written
 * independently of transport/reg_plan.c, so the two cross-check.
 */
#ifndef RRR_TESTS_REG_FAKE_PROVIDER_H
#define RRR_TESTS_REG_FAKE_PROVIDER_H

#include <stdbool.h>

#include "transport/provider_impl.h"

enum fake_mr_state { FAKE_INVALID = 0, FAKE_MAPPED, FAKE_VALID };

#define FAKE_MAX_MRS 1024

#define FAKE_REC_ENTS 64

struct fake_mr {
	struct rrr_mr mr;
	unsigned index;
	enum fake_mr_state state;
	unsigned maps; /* rrr_mr_map_sg() calls that succeeded */
	unsigned recovers;
	int last_nents; /* what the last map was given */
	struct rrr_sg last[FAKE_REC_ENTS];
};

struct fake_dev {
	struct rrr_device dev;
	struct rrr_pd pd;
	unsigned mrs_alive;
	unsigned next_index;
	unsigned map_calls;
	int fail_map_call;  /* 1-based map call that fails (-ENOMEM); 0 none */
	int short_map_call; /* 1-based map call that maps one entry fewer */
	bool fail_recover;  /* rrr_mr_recover() fails */
	bool fail_alloc;    /* rrr_mr_alloc() fails */
	unsigned deregs;
	struct fake_mr *mrs[FAKE_MAX_MRS]; /* by index */
};

/* Set up a fake device with @model, 4 KiB pages and @max_pages depth. */
void fake_dev_init(struct fake_dev *fd, enum rrr_map_model model, uint32_t max_pages);

/* The live MR whose current handle is @rkey, or NULL. */
struct fake_mr *fake_find(struct fake_dev *fd, uint32_t rkey);
/* "Execute" a chain of REG_MR / LOCAL_INV WRs as a device would. */
int fake_execute(struct fake_dev *fd, const struct rrr_send_wr *wr);

static inline struct fake_mr *fake_mr_of(struct rrr_mr *mr)
{
	return container_of(mr, struct fake_mr, mr);
}

#endif
