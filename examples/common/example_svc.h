/* SPDX-License-Identifier: MIT */
/*
 * example_svc.h - what the example servers share: the options each takes
 * (--host, --rdma-port, --tcp-port, --provider, --threads, --help), the
 * server with its listeners, a graceful stop on SIGINT/SIGTERM, and the
 * counters printed at the end. Only the public API (<rrr/rrr.h>).
 */
#ifndef EXAMPLE_SVC_H
#define EXAMPLE_SVC_H

#include <getopt.h>
#include <stdint.h>

#include <rrr/rrr.h>

/* The options of an example server, before and after the start. */
struct ex_svc_cfg {
	struct rrr_svc_opts opts;
	const char *host;  /* NULL = any address */
	const char *rport; /* "0" = ephemeral, "-" = no listener of that kind */
	const char *tport;
	uint16_t rp, tp; /* the bound ports, set by ex_svc_start() */
	/* NULL, or run by ex_svc_start() after the program is registered and
	 * before the listeners: 0 or -errno (the start fails) */
	int (*setup)(struct rrr_svc *svc);
};

/* The long options every example server takes ('H', 'r', 't', 'p', 'n',
 * 'h'), with the table's terminator: the last entries of its table. */
#define EX_SVC_LONGOPTS                                                                            \
	{"host", required_argument, NULL, 'H'}, {"rdma-port", required_argument, NULL, 'r'},       \
	    {"tcp-port", required_argument, NULL, 't'},                                            \
	    {"provider", required_argument, NULL, 'p'}, {"threads", required_argument, NULL, 'n'}, \
	    {"help", no_argument, NULL, 'h'},                                                      \
	{                                                                                          \
		NULL, 0, NULL, 0                                                                   \
	}

/* Default @cfg: the library's server options with payloads of up to
 * @max_payload bytes, any address, ephemeral ports. */
void ex_svc_cfg_init(struct ex_svc_cfg *cfg, uint32_t max_payload);

/* getopt_long() over @argv with the options @lo (ending in
 * EX_SVC_LONGOPTS) that takes those of EX_SVC_LONGOPTS but --help into
 * @cfg itself: the next other option character ('h' for --help, '?' for
 * an unknown one; its argument in optarg), or -1 after the last. */
int ex_svc_getopt(int argc, char **argv, const struct option *lo, struct ex_svc_cfg *cfg);

/* Create a server with @cfg serving @prog, run cfg->setup, listen as @cfg
 * says (the bound ports into cfg->rp and cfg->tp) and let SIGINT/SIGTERM
 * stop it. 0 with
 * the server in *@out, or -errno after "NAME: why" on stderr (nothing is
 * left to destroy). One server per process. */
int ex_svc_start(const char *name, struct ex_svc_cfg *cfg, const struct rrr_svc_program *prog,
		 struct rrr_svc **out);

/* Serve until SIGINT/SIGTERM, then print the counters ("NAME: ..."). 0 or
 * the -errno of rrr_svc_run(); the caller destroys @svc. MAY BLOCK. */
int ex_svc_run(const char *name, struct rrr_svc *svc);

/* The NULL procedure of a program: no arguments, no results. Always 0. */
int ex_svc_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res);

#endif /* EXAMPLE_SVC_H */
