/* SPDX-License-Identifier: MIT */
/*
 * example_svc.c - the example servers' options, start, run and stop (see
 * example_svc.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_opt.h"
#include "example_svc.h"

static struct rrr_svc *g_svc;

static void on_signal(int sig)
{
	(void)sig;
	rrr_svc_stop(g_svc); /* async-signal-safe */
}

void ex_svc_cfg_init(struct ex_svc_cfg *cfg, uint32_t max_payload)
{
	memset(cfg, 0, sizeof(*cfg));
	rrr_svc_opts_init(&cfg->opts);
	cfg->opts.max_payload = max_payload;
	cfg->rport = "0";
	cfg->tport = "0";
}

int ex_svc_getopt(int argc, char **argv, const struct option *lo, struct ex_svc_cfg *cfg)
{
	const struct ex_str_opt map[] = {
	    {'H', &cfg->host}, {'r', &cfg->rport}, {'t', &cfg->tport}, {'p', &cfg->opts.provider}};
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (c == 'n')
			cfg->opts.nthreads = (unsigned)atoi(optarg);
		else if (ex_str_opt_set(map, sizeof(map) / sizeof(map[0]), c, optarg))
			return c;
	}
	return -1;
}

int ex_svc_start(const char *name, struct ex_svc_cfg *cfg, const struct rrr_svc_program *prog,
		 struct rrr_svc **out)
{
	struct sigaction sa;
	int rc;

	/* 1. a server object, 2. programs, 3. listeners, 4. run */
	rc = rrr_svc_create(&cfg->opts, &g_svc);
	if (!rc)
		rc = rrr_svc_register(g_svc, prog);
	if (!rc && cfg->setup)
		rc = cfg->setup(g_svc);
	if (!rc && strcmp(cfg->rport, "-"))
		rc = rrr_svc_listen_rdma(g_svc, cfg->host, cfg->rport, &cfg->rp);
	if (!rc && strcmp(cfg->tport, "-"))
		rc = rrr_svc_listen_tcp(g_svc, cfg->host, cfg->tport, &cfg->tp);
	if (rc) {
		fprintf(stderr, "%s: %s (%s)\n", name,
			rrr_last_error() ? rrr_last_error() : "error", strerror(-rc));
		rrr_svc_destroy(g_svc);
		g_svc = NULL;
		return rc;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	*out = g_svc;
	return 0;
}

int ex_svc_run(const char *name, struct rrr_svc *svc)
{
	struct rrr_xprt_stats st;
	char prefix[64];
	int rc = rrr_svc_run(svc); /* returns after rrr_svc_stop() */

	snprintf(prefix, sizeof(prefix), "%s: ", name);
	rrr_svc_stats(svc, &st);
	rrr_xprt_stats_print(stdout, prefix, &st);
	return rc;
}

int ex_svc_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	return 0;
}
