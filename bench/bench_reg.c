/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_reg.c - rrr-bench reg: what per-I/O registration + invalidation
 * costs, per strategy, side by side with a persistent registration.
 *
 * Normal operation. Each strategy is a device opened with its own provider
 * options (soft: page-list FRWR, and SG_GAPS mode when asked; verbs: memory
 * windows, ibv_reg_mr per I/O, UMR) plus "persistent": one long-lived
 * registration of the whole buffer, the unsafe baseline. For each strategy
 * the benchmark connects a loopback QP pair on the device (both ends in this
 * process), creates the registration engine's MR pool on it and then, per
 * I/O, does exactly what the RPC layer does around an I/O, minus the wire:
 *
 *   rrr_reg_map()          scatterlist -> MRs, REG_MR WR chain
 *   rrr_qp_post_send()     the REG_MRs
 *   rrr_reg_build_inv()    chained LOCAL_INVs, the last one signaled
 *   rrr_qp_post_send()     the LOCAL_INVs
 *   rrr_cq_poll() ...      until the signaled LOCAL_INV completes
 *   rrr_reg_inv_done()     MRs back to the pool
 *
 * The persistent baseline only describes the buffer as RFC 8166 segments of
 * its one registration: that is all a persistent client does per I/O. The
 * I/O never crosses the network, so the figure is the registration cost
 * itself, not a round trip.
 *
 * Measurement. Work is organised in cells (I/O size x layout). Within a
 * cell the strategies run round-robin in batches of --batch I/Os, repeated
 * until each did --iters I/Os, so machine noise lands on all of them alike.
 * Wall time is taken per I/O (CLOCK_MONOTONIC, ~20 ns, included in every
 * figure, the baseline's too); CPU time per batch (thread and whole-process
 * CPU clocks are system calls) divided by the batch size, so CPU median and
 * p99 are over batches. Process CPU counts every thread (a provider's
 * progress thread, a deferred-free thread), which is the honest figure.
 *
 * Layouts: contiguous (page-aligned start), fbo (one entry starting --fbo
 * bytes into its first page) and holes (entries of --hole-every pages,
 * each starting --fbo bytes into a page of its own region: a hole before
 * every entry for page-list and virtually-contiguous models; none for
 * SG_GAPS).
 *
 * Recovery. A failed work completion or a failed call ends that strategy's
 * part of the cell: the I/O's MRs are recovered (rrr_reg_recover), the error
 * is shown in the table and JSON, and the other strategies continue. Every
 * object is torn down in reverse order at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rrr/provider.h>
#include <rrr/reg_engine.h>

#include "bench.h"
#include "bench_common.h"
#include "transport/loop_pair.h"

#define MAX_STRATS 8
#define MAX_SIZES  16
#define PAGE	   4096u

enum layout { L_CONTIG = 0, L_FBO, L_HOLES, L_NUM };
static const char *const layout_names[L_NUM] = {"contig", "fbo", "holes"};

struct strat {
	char name[32];
	char opts[256];
	bool persistent;
	/* objects */
	struct rrr_device *dev;
	struct rrr_device_attr attr;
	struct rrr_pd *pd;
	struct rrr_cq *cq, *scq;	/* client side, server side */
	struct rrr__loop_pair loop; /* transport/loop_pair.c */
	struct rrr_qp *cqp;	/* = loop.c.qp: the side that registers */
	struct rrr_mrpool *pool;
	struct rrr_mr *mr; /* persistent */
	int setup_err;
	char setup_msg[256];
};

struct stat_cell {
	struct rrr__bench_samples wall, cpu, tcpu;
	uint64_t ios, segs;
	int err;
	char msg[160];
};

struct run_cfg {
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	bool layouts[L_NUM];
	uint32_t fbo;
	uint32_t hole_every;
	unsigned iters, batch;
	unsigned access;
};

static uint8_t *g_buf;
static size_t g_buf_len;
static const char *g_addr = "127.0.0.1"; /* where the loopback pair connects */

/* --- set-up ---------------------------------------------------------------- */

static int fail(struct strat *s, int rc, const char *what)
{
	const char *e = rrr_last_error();

	s->setup_err = rc ? rc : -EIO;
	snprintf(s->setup_msg, sizeof(s->setup_msg), "%s: %s%s%s", what, strerror(-s->setup_err),
		 e ? ": " : "", e ? e : "");
	return s->setup_err;
}

/* Connect a QP pair on loopback (g_addr), both ends in this process. */
static int connect_loopback(struct strat *s)
{
	struct rrr__loop_opts lo = {
	    .c_pd = s->pd,
	    .s_pd = s->pd,
	    .c_cq = s->cq,
	    .s_cq = s->scq,
	    .qp =
		{
		    .max_send_wr = 4 * RRR_REG_MAX_SEGS,
		    .max_recv_wr = 4,
		    .max_send_sge = 1,
		    .max_recv_sge = 1,
		    .max_rd_atomic = 1,
		},
	    .connect = {.ird = 1, .ord = 1},
	    .accept = {.ird = 1, .ord = 1},
	    .timeout_ms = 10000,
	};
	int rc;

	if ((rc = rrr__loop_listen(&s->loop, s->dev, g_addr)) ||
	    (rc = rrr__loop_connect(&s->loop, &lo)))
		return fail(s, rc, "loopback connection");
	s->cqp = s->loop.c.qp;
	return 0;
}

static int strat_setup(struct strat *s, const char *provider)
{
	struct rrr_mrpool_opts po = {.max_mrs = 2 * RRR_REG_MAX_SEGS, .pages_per_mr = 0};
	int rc;

	if ((rc = rrr_device_open(provider, s->opts[0] ? s->opts : NULL, &s->dev)))
		return fail(s, rc, "rrr_device_open");
	if ((rc = rrr_device_query(s->dev, &s->attr)))
		return fail(s, rc, "rrr_device_query");
	if ((rc = rrr_pd_alloc(s->dev, &s->pd)))
		return fail(s, rc, "rrr_pd_alloc");
	if (s->persistent) {
		if ((rc = rrr_mr_reg(s->pd, g_buf, g_buf_len,
				     RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE |
					 RRR_ACCESS_REMOTE_READ,
				     &s->mr)))
			return fail(s, rc, "rrr_mr_reg");
		return 0;
	}
	if ((rc = rrr_cq_create(s->dev, 8 * RRR_REG_MAX_SEGS, &s->cq)) ||
	    (rc = rrr_cq_create(s->dev, 16, &s->scq)))
		return fail(s, rc, "rrr_cq_create");
	if ((rc = connect_loopback(s)))
		return rc;
	if ((rc = rrr_mrpool_create(s->pd, &po, &s->pool)))
		return fail(s, rc, "rrr_mrpool_create");
	return 0;
}

static void strat_teardown(struct strat *s)
{
	if (s->pool)
		rrr_mrpool_destroy(s->pool);
	if (s->mr)
		rrr_mr_dereg(s->mr);
	if (s->loop.c.id && s->cqp)
		rrr_cm_disconnect(s->loop.c.id);
	rrr__loop_close(&s->loop);
	s->cqp = NULL;
	if (s->scq)
		rrr_cq_destroy(s->scq);
	if (s->cq)
		rrr_cq_destroy(s->cq);
	if (s->pd)
		rrr_pd_free(s->pd);
	if (s->dev)
		rrr_device_close(s->dev);
	memset(&s->dev, 0, sizeof(*s) - offsetof(struct strat, dev));
}

/* --- layouts --------------------------------------------------------------- */

/* Bytes of buffer a layout of @size needs. */
static size_t layout_span(enum layout l, uint64_t size, const struct run_cfg *c)
{
	uint64_t per = (uint64_t)c->hole_every * PAGE, n;

	switch (l) {
	case L_CONTIG:
		return size;
	case L_FBO:
		return size + c->fbo + PAGE;
	case L_HOLES:
	default:
		n = (size + per - 1) / per;
		/* each entry gets a region of its pages + 2 (start offset, gap) */
		return n * (per + 2 * PAGE) + PAGE;
	}
}

/* Build the scatterlist of @size bytes in layout @l over g_buf. */
static int layout_build(enum layout l, uint64_t size, const struct run_cfg *c, struct rrr_sg *sg,
			unsigned max)
{
	uint64_t per = (uint64_t)c->hole_every * PAGE, left = size;
	unsigned n = 0;

	switch (l) {
	case L_CONTIG:
		sg[0] = (struct rrr_sg){g_buf, 0, (uint32_t)size};
		return 1;
	case L_FBO:
		sg[0] = (struct rrr_sg){g_buf, c->fbo, (uint32_t)size};
		return 1;
	case L_HOLES:
	default:
		while (left) {
			uint64_t len = left < per ? left : per;

			if (n == max)
				return -E2BIG;
			sg[n] = (struct rrr_sg){g_buf + (size_t)n * (per + 2 * PAGE), c->fbo,
						(uint32_t)len};
			left -= len;
			n++;
		}
		return (int)n;
	}
}

/* --- one batch --------------------------------------------------------------- */

/* Poll until the signaled LOCAL_INV @wr_id completes. A failed completion
 * returns -EIO with its status in *st. Bounded: -ETIMEDOUT after 5 s. */
static int check_wc(const struct rrr_wc *wc, int n, uint64_t wr_id, enum rrr_wc_status *st)
{
	for (int i = 0; i < n; i++) {
		if (wc[i].status != RRR_WC_SUCCESS) {
			*st = wc[i].status;
			return -EIO;
		}
		if (wc[i].wr_id == wr_id)
			return 1;
	}
	return 0;
}

static int wait_inv(struct strat *s, uint64_t wr_id, enum rrr_wc_status *st)
{
	struct rrr_wc wc[16];
	uint64_t spins = 0;
	int n, rc;

	for (;;) {
		n = rrr_cq_poll(s->cq, wc, 16);
		if (n < 0)
			return n;
		if ((rc = check_wc(wc, n, wr_id, st)))
			return rc < 0 ? rc : 0;
		/* Busy-poll as a latency-bound I/O path does; only a stuck
		 * completion (~1 M empty polls) falls back to waiting. */
		if (!n && ++spins > 1000000) {
			n = rrr_cq_wait(s->cq, wc, 16, 5000);
			if (n < 0)
				return n;
			if (!n)
				return -ETIMEDOUT;
			if ((rc = check_wc(wc, n, wr_id, st)))
				return rc < 0 ? rc : 0;
		}
	}
}

/* One I/O with the registration engine. */
static int io_once(struct strat *s, const struct rrr_sg *sg, unsigned nsg, unsigned access,
		   struct rrr_reg_io *io, uint64_t wr_id, struct stat_cell *sc, uint32_t *nsegs)
{
	struct rrr_send_wr *inv, *bad = NULL;
	enum rrr_wc_status st = RRR_WC_SUCCESS;
	int rc;

	if ((rc = rrr_reg_map(s->pool, sg, nsg, access, io))) {
		snprintf(sc->msg, sizeof(sc->msg), "rrr_reg_map: %s", strerror(-rc));
		return rc;
	}
	*nsegs = io->nsegs;
	if ((rc = rrr_qp_post_send(s->cqp, &io->reg_wr[0], &bad))) {
		snprintf(sc->msg, sizeof(sc->msg), "post REG_MR: %s", strerror(-rc));
		rrr_reg_recover(s->pool, io);
		return rc;
	}
	inv = rrr_reg_build_inv(s->pool, io, wr_id);
	if (!inv) {
		rrr_reg_inv_done(s->pool, io);
		return 0;
	}
	if ((rc = rrr_qp_post_send(s->cqp, inv, &bad))) {
		snprintf(sc->msg, sizeof(sc->msg), "post LOCAL_INV: %s", strerror(-rc));
		rrr_reg_recover(s->pool, io);
		return rc;
	}
	if ((rc = wait_inv(s, wr_id, &st))) {
		snprintf(sc->msg, sizeof(sc->msg), "completion: %s",
			 rc == -EIO ? rrr_wc_status_str(st) : strerror(-rc));
		rrr_reg_recover(s->pool, io);
		return rc;
	}
	rrr_reg_inv_done(s->pool, io);
	return 0;
}

/* What a persistent registration does per I/O: describe the memory. */
static void persistent_once(struct strat *s, const struct rrr_sg *sg, unsigned nsg,
			    struct rrr_reg_io *io)
{
	uint32_t h = rrr_mr_rkey(s->mr);

	io->nsegs = 0;
	for (unsigned i = 0; i < nsg && i < RRR_REG_MAX_SEGS; i++) {
		io->segs[i].handle = h;
		io->segs[i].length = sg[i].length;
		io->segs[i].offset = (uint64_t)(uintptr_t)sg[i].page + sg[i].offset;
		io->nsegs++;
	}
}

enum phase {
	PH_WARM, /* not recorded */
	PH_WALL, /* a timestamp pair around every I/O */
	PH_CPU,	 /* CPU clocks around the batch only, no per-I/O timestamps */
};

/* One batch of @n I/Os. Wall and CPU are measured in separate batches so
 * that the per-I/O timestamps (2 x ~20 ns) are not charged to the CPU
 * figure; the CPU clocks (system calls) are read once per batch. */
static int run_batch(struct strat *s, const struct rrr_sg *sg, unsigned nsg, unsigned n,
		     unsigned access, enum phase ph, struct stat_cell *sc)
{
	static struct rrr_reg_io io; /* large: keep it off the stack */
	static uint64_t wr_id;
	uint64_t c0 = 0, pc0 = 0, c1, pc1, segs = 0;
	int rc = 0;

	if (ph == PH_CPU) {
		c0 = rrr__bench_thread_cpu_ns();
		pc0 = rrr__bench_process_cpu_ns();
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = 0, b;

		if (ph == PH_WALL)
			a = rrr__bench_now_ns();
		uint32_t ns = 0;

		if (s->persistent) {
			persistent_once(s, sg, nsg, &io);
			ns = io.nsegs;
		} else if ((rc = io_once(s, sg, nsg, access, &io, ++wr_id, sc, &ns))) {
			return rc;
		}
		segs += ns;
		if (ph == PH_WALL) {
			b = rrr__bench_now_ns();
			rrr__bench_samples_add(&sc->wall, (double)(b - a));
		}
	}
	if (ph == PH_CPU) {
		c1 = rrr__bench_thread_cpu_ns();
		pc1 = rrr__bench_process_cpu_ns();
		rrr__bench_samples_add(&sc->tcpu, (double)(c1 - c0) / n);
		rrr__bench_samples_add(&sc->cpu, (double)(pc1 - pc0) / n);
	}
	if (ph == PH_WALL) {
		sc->ios += n;
		sc->segs += segs;
	}
	return 0;
}

/* --- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rrr-bench reg [options]\n"
		"Per-I/O registration + invalidation cost per strategy, side by side with a\n"
		"persistent registration, on a loopback QP of the chosen provider.\n\n"
		"  --provider NAME       soft (default) or verbs\n"
		"  --strategy NAME[:OPTS] a strategy: a name and the provider options that\n"
		"                        select it (repeatable). \"persistent\" is the\n"
		"                        baseline. Defaults: soft: frwr (SG_GAPS map model),\n"
		"                        persistent; verbs: mw:strategy=mw, regmr:strategy=regmr,\n"
		"                        umr:strategy=umr, persistent. A strategy whose\n"
		"                        device does not open is reported and skipped.\n"
		"  --sizes LIST          I/O sizes (default 4k,16k,64k,256k,1m)\n"
		"  --layouts LIST        contig,fbo,holes (default all)\n"
		"  --fbo N               first-byte offset for fbo/holes (default 512)\n"
		"  --hole-every K        pages per entry in the holes layout (default 4)\n"
		"  --iters N             measured I/Os per strategy per cell (default 20000)\n"
		"  --batch N             I/Os per round-robin turn (default 100)\n"
		"  --addr IP             local address of the device for the loopback QP pair\n"
		"                        (default 127.0.0.1; verbs: the RDMA netdev's IP)\n"
		"  --json FILE           write the results as JSON\n"
		"  --help\n");
}

static int add_strategy(struct strat *st, int *n, const char *arg)
{
	const char *colon = strchr(arg, ':');
	size_t nl = colon ? (size_t)(colon - arg) : strlen(arg);
	struct strat *s;

	if (*n >= MAX_STRATS || !nl || nl >= sizeof(st->name) ||
	    (colon && strlen(colon + 1) >= sizeof(st->opts)))
		return -EINVAL;
	s = &st[(*n)++];
	memset(s, 0, sizeof(*s));
	memcpy(s->name, arg, nl);
	if (colon)
		strcpy(s->opts, colon + 1);
	s->persistent = !strcmp(s->name, "persistent");
	return 0;
}

int rrr__bench_reg_main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"provider", required_argument, NULL, 'P'},
	    {"strategy", required_argument, NULL, 'S'},
	    {"sizes", required_argument, NULL, 's'},
	    {"layouts", required_argument, NULL, 'l'},
	    {"fbo", required_argument, NULL, 'f'},
	    {"hole-every", required_argument, NULL, 'k'},
	    {"iters", required_argument, NULL, 'n'},
	    {"batch", required_argument, NULL, 'b'},
	    {"json", required_argument, NULL, 'j'},
	    {"addr", required_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct strat strats[MAX_STRATS];
	struct run_cfg cfg = {
	    .sizes = {4096, 16384, 65536, 262144, 1u << 20},
	    .nsizes = 5,
	    .layouts = {true, true, true},
	    .fbo = 512,
	    .hole_every = 4,
	    .iters = 20000,
	    .batch = 100,
	    .access = RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE,
	};
	struct rrr__bench_opts ob = {.cmd = "reg", .lopts = lopts, .usage = usage};
	const char *provider = "soft", *json;
	int nstrat = 0, opt, status = 0, base = -1;
	struct rrr_sg *sg = NULL;
	struct stat_cell *cells = NULL; /* [size][layout][strat] */
	size_t maxspan = 0;
	uint64_t goal_cpu = 0;
	bool goal_seen = false;

	while ((opt = rrr__bench_opt_next(&ob, argc, argv)) > 0) {
		switch (opt) {
		case 'P':
			provider = optarg;
			break;
		case 'S':
			if (add_strategy(strats, &nstrat, optarg)) {
				fprintf(stderr, "rrr-bench reg: bad --strategy '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			cfg.nsizes =
			    rrr__bench_opt_sizes("reg", "sizes", optarg, cfg.sizes, MAX_SIZES,
						 64u << 20, "sizes are 1 .. 64m");
			if (cfg.nsizes < 0)
				return 2;
			break;
		case 'l':
			memset(cfg.layouts, 0, sizeof(cfg.layouts));
			for (int l = 0; l < L_NUM; l++)
				cfg.layouts[l] = strstr(optarg, layout_names[l]) != NULL;
			if (!cfg.layouts[0] && !cfg.layouts[1] && !cfg.layouts[2]) {
				fprintf(stderr,
					"rrr-bench reg: --layouts takes contig,fbo,holes\n");
				return 2;
			}
			break;
		case 'f':
			if (rrr__bench_opt_count("reg", optarg, PAGE - 1, &cfg.fbo,
						 "--fbo is 1 .. 4095"))
				return 2;
			break;
		case 'k':
			if (rrr__bench_opt_count("reg", optarg, 4096, &cfg.hole_every,
						 "--hole-every is 1 .. 4096"))
				return 2;
			break;
		case 'n':
			if (rrr__bench_opt_count("reg", optarg, 100000000, &cfg.iters,
						 "bad --iters"))
				return 2;
			break;
		case 'b':
			if (rrr__bench_opt_count("reg", optarg, 1000000, &cfg.batch, "bad --batch"))
				return 2;
			break;
		case 'a':
			g_addr = optarg;
			break;
		}
	}
	if (opt < 0)
		return ob.exit;
	json = ob.json;
	if (cfg.batch > cfg.iters)
		cfg.batch = cfg.iters;
	if (!nstrat) {
		/* The soft provider maps with arbitrary gaps (SG_GAPS) and has no
		 * option for a page-list-only mode, so its one FRWR strategy is
		 * the default device. */
		static const char *const soft_def[] = {"frwr", "persistent"};
		static const char *const verbs_def[] = {"mw:strategy=mw", "regmr:strategy=regmr",
							"umr:strategy=umr", "persistent"};
		bool v = !strcmp(provider, "verbs");
		size_t nd = v ? 4 : 2;

		for (size_t i = 0; i < nd; i++)
			add_strategy(strats, &nstrat, v ? verbs_def[i] : soft_def[i]);
	}
	for (int i = 0; i < nstrat; i++)
		if (strats[i].persistent && base < 0)
			base = i;

	/* One buffer big enough for every layout of the largest size. */
	for (int i = 0; i < cfg.nsizes; i++)
		for (int l = 0; l < L_NUM; l++) {
			size_t sp = layout_span((enum layout)l, cfg.sizes[i], &cfg);

			maxspan = sp > maxspan ? sp : maxspan;
		}
	g_buf_len = (maxspan + PAGE - 1) / PAGE * PAGE;
	g_buf = aligned_alloc(PAGE, g_buf_len);
	sg = calloc(4096, sizeof(*sg));
	cells = calloc((size_t)cfg.nsizes * L_NUM * (size_t)nstrat, sizeof(*cells));
	if (!g_buf || !sg || !cells) {
		fprintf(stderr, "rrr-bench reg: out of memory\n");
		status = 1;
		goto out;
	}
	memset(g_buf, 0x3c, g_buf_len);

	rrr__bench_print_header(stdout, argc, argv);
	for (int i = 0; i < nstrat; i++) {
		struct strat *s = &strats[i];

		if (strat_setup(s, provider)) {
			printf("# strategy %s (%s): skipped: %s\n", s->name, s->opts, s->setup_msg);
			strat_teardown(s);
			continue;
		}
		printf("# strategy %-10s opts=\"%s\" device=%s strategy=%s map_model=%s "
		       "max_fr_pages=%u safe=%d\n",
		       s->name, s->opts, s->attr.name, s->attr.strategy,
		       s->attr.map_model == RRR_MAP_SG_GAPS	  ? "sg_gaps"
		       : s->attr.map_model == RRR_MAP_VIRT_CONTIG ? "virt_contig"
								  : "page_list",
		       s->attr.max_fr_pages, (int)s->attr.safe && !s->persistent);
	}
	printf("# %u I/Os per strategy per cell, round-robin batches of %u, each strategy\n"
	       "# alternating a wall batch (timestamps around every I/O: wall median, p99)\n"
	       "# and a CPU batch (process CPU clock around the batch / batch size: median\n"
	       "# and p99 over batches); ns per I/O; regs = registrations per I/O;\n"
	       "# x = median wall / persistent median wall; clock read ~%.0f ns (included\n"
	       "# once in every wall figure)\n",
	       cfg.iters, cfg.batch, rrr__bench_clock_overhead_ns());
	printf("%-6s %-7s %-10s %5s %9s %9s %9s %9s %8s\n", "size", "layout", "strategy", "regs",
	       "wall.med", "wall.p99", "cpu.med", "cpu.p99", "x");

	for (int si = 0; si < cfg.nsizes; si++)
		for (int l = 0; l < L_NUM; l++) {
			struct stat_cell *row = &cells[((size_t)si * L_NUM + l) * (size_t)nstrat];
			char szb[32];
			int nsg;
			double bwall = 0;

			if (!cfg.layouts[l])
				continue;
			nsg = layout_build((enum layout)l, cfg.sizes[si], &cfg, sg, 4096);
			if (nsg < 0)
				continue;
			for (int i = 0; i < nstrat; i++) {
				rrr__bench_samples_init(&row[i].wall, cfg.iters);
				rrr__bench_samples_init(&row[i].cpu, 0);
				rrr__bench_samples_init(&row[i].tcpu, 0);
				/* warm-up batch: pool allocation, caches */
				if (!strats[i].setup_err && strats[i].dev)
					row[i].err =
					    run_batch(&strats[i], sg, (unsigned)nsg, cfg.batch,
						      cfg.access, PH_WARM, &row[i]);
			}
			for (unsigned done = 0; done < cfg.iters; done += cfg.batch) {
				unsigned n =
				    cfg.iters - done < cfg.batch ? cfg.iters - done : cfg.batch;

				for (int i = 0; i < nstrat; i++) {
					if (strats[i].setup_err || !strats[i].dev || row[i].err)
						continue;
					row[i].err = run_batch(&strats[i], sg, (unsigned)nsg, n,
							       cfg.access, PH_WALL, &row[i]);
					if (!row[i].err)
						row[i].err =
						    run_batch(&strats[i], sg, (unsigned)nsg, n,
							      cfg.access, PH_CPU, &row[i]);
				}
			}
			if (base >= 0 && !row[base].err && row[base].ios)
				bwall = rrr__bench_samples_median(&row[base].wall);
			rrr__bench_fmt_size(cfg.sizes[si], szb, sizeof(szb));
			for (int i = 0; i < nstrat; i++) {
				struct stat_cell *c = &row[i];
				double wm;

				if (strats[i].setup_err || !strats[i].dev)
					continue;
				printf("%-6s %-7s %-10s ", szb, layout_names[l], strats[i].name);
				if (c->err) {
					printf("FAILED: %s\n",
					       c->msg[0] ? c->msg : strerror(-c->err));
					status = 1;
					continue;
				}
				wm = rrr__bench_samples_median(&c->wall);
				printf("%5.1f %9.0f %9.0f %9.0f %9.0f ",
				       c->ios ? (double)c->segs / (double)c->ios : 0, wm,
				       rrr__bench_samples_p99(&c->wall),
				       rrr__bench_samples_median(&c->cpu),
				       rrr__bench_samples_p99(&c->cpu));
				if (bwall > 0 && i != base)
					printf("%8.1f\n", wm / bwall);
				else
					printf("%8s\n", "-");
				if (!goal_seen && !strcmp(strats[i].name, "frwr") &&
				    cfg.sizes[si] == 65536 && l == L_CONTIG) {
					goal_seen = true;
					goal_cpu = (uint64_t)rrr__bench_samples_median(&c->cpu);
				}
			}
			fflush(stdout);
		}
	if (goal_seen)
		printf("# goal: soft reg+inv of a 64 KiB contiguous scatterlist <= 100 ns CPU "
		       "(strategy frwr): %llu ns (%s)\n",
		       (unsigned long long)goal_cpu, goal_cpu <= 100 ? "met" : "missed");

	if (json) {
		struct rrr__bench_json j;

		if (rrr__bench_json_begin(&j, json, "reg", argc, argv)) {
			status = 1;
			goto out;
		}
		rrr__bench_json_str(&j, "provider", provider);
		rrr__bench_json_int(&j, "iters", cfg.iters);
		rrr__bench_json_int(&j, "batch", cfg.batch);
		rrr__bench_json_int(&j, "fbo", cfg.fbo);
		rrr__bench_json_int(&j, "hole_every_pages", cfg.hole_every);
		rrr__bench_json_arr_begin(&j, "strategies");
		for (int i = 0; i < nstrat; i++) {
			struct strat *s = &strats[i];

			rrr__bench_json_obj_begin(&j, NULL);
			rrr__bench_json_str(&j, "name", s->name);
			rrr__bench_json_str(&j, "opts", s->opts);
			if (s->setup_err) {
				rrr__bench_json_str(&j, "skipped", s->setup_msg);
			} else {
				rrr__bench_json_str(&j, "device", s->attr.name);
				rrr__bench_json_str(&j, "device_strategy", s->attr.strategy);
				rrr__bench_json_int(&j, "map_model", s->attr.map_model);
				rrr__bench_json_int(&j, "max_fr_pages", s->attr.max_fr_pages);
			}
			rrr__bench_json_obj_end(&j);
		}
		rrr__bench_json_arr_end(&j);
		rrr__bench_json_arr_begin(&j, "results");
		for (int si = 0; si < cfg.nsizes; si++)
			for (int l = 0; l < L_NUM; l++) {
				struct stat_cell *row =
				    &cells[((size_t)si * L_NUM + l) * (size_t)nstrat];
				double bwall = 0, bcpu = 0;

				if (!cfg.layouts[l])
					continue;
				if (base >= 0 && !row[base].err && row[base].ios) {
					bwall = rrr__bench_samples_median(&row[base].wall);
					bcpu = rrr__bench_samples_median(&row[base].cpu);
				}
				for (int i = 0; i < nstrat; i++) {
					struct stat_cell *c = &row[i];
					double wm, cm;

					if (strats[i].setup_err)
						continue;
					rrr__bench_json_obj_begin(&j, NULL);
					rrr__bench_json_int(&j, "size", (long long)cfg.sizes[si]);
					rrr__bench_json_str(&j, "layout", layout_names[l]);
					rrr__bench_json_str(&j, "strategy", strats[i].name);
					if (c->err) {
						rrr__bench_json_str(&j, "error",
								    c->msg[0] ? c->msg
									      : strerror(-c->err));
						rrr__bench_json_obj_end(&j);
						continue;
					}
					wm = rrr__bench_samples_median(&c->wall);
					cm = rrr__bench_samples_median(&c->cpu);
					rrr__bench_json_int(&j, "ios", (long long)c->ios);
					rrr__bench_json_num(
					    &j, "regs_per_io",
					    c->ios ? (double)c->segs / (double)c->ios : 0);
					rrr__bench_json_num(&j, "wall_median_ns", wm);
					rrr__bench_json_num(&j, "wall_p99_ns",
							    rrr__bench_samples_p99(&c->wall));
					rrr__bench_json_num(&j, "cpu_median_ns", cm);
					rrr__bench_json_num(&j, "cpu_p99_ns",
							    rrr__bench_samples_p99(&c->cpu));
					rrr__bench_json_num(&j, "thread_cpu_median_ns",
							    rrr__bench_samples_median(&c->tcpu));
					if (bwall > 0)
						rrr__bench_json_num(&j, "wall_ratio_to_persistent",
								    wm / bwall);
					if (bcpu > 0)
						rrr__bench_json_num(&j, "cpu_ratio_to_persistent",
								    cm / bcpu);
					rrr__bench_json_obj_end(&j);
				}
			}
		rrr__bench_json_arr_end(&j);
		if (rrr__bench_json_end(&j, json, "reg"))
			status = 1;
	}
out:
	for (int i = 0; i < nstrat; i++)
		strat_teardown(&strats[i]);
	if (cells)
		for (size_t i = 0; i < (size_t)cfg.nsizes * L_NUM * (size_t)nstrat; i++) {
			rrr__bench_samples_free(&cells[i].wall);
			rrr__bench_samples_free(&cells[i].cpu);
			rrr__bench_samples_free(&cells[i].tcpu);
		}
	free(cells);
	free(sg);
	free(g_buf);
	return status;
}
