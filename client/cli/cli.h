/* SPDX-License-Identifier: MIT */
/*
 * client/cli/cli.h - shared pieces of rrr-client: the progress bar
 * (util.c), exit codes; checksums are rrr_crc32c() (rrr/crc32c.h).
 */
#ifndef RRR_CLIENT_CLI_H
#define RRR_CLIENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rrr/crc32c.h>

enum cli_exit {
	EXIT_OK = 0,
	EXIT_NFS = 1,      /* the server answered with an NFS error */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_CONN = 3,     /* could not connect, mount, or the connection failed */
	EXIT_VERIFY = 4,   /* --verify found different bytes */
	EXIT_LOCAL = 5,    /* local file error */
};

struct cli_progress {
	bool on;
	const char *label;
	uint64_t total;
	double t0;
	double last;
};

double cli_now(void);
void cli_progress_start(struct cli_progress *p, bool on, const char *label, uint64_t total);
/* Callback shape of rrr_nfs3_progress_fn; @arg is a struct cli_progress. */
void cli_progress_update(void *arg, uint64_t done);
void cli_progress_end(struct cli_progress *p, uint64_t done);

#endif
