/* SPDX-License-Identifier: MIT */
/*
 * client/cli/util.c - the clock and the progress bar of rrr-client.
 * (Checksums are the library's rrr_crc32c(), rrr/crc32c.h: CRC32C detects
 * any corruption a transfer could plausibly introduce; it is not a defence
 * against an adversary.)
 *
 * Progress: a one-line bar on stderr redrawn at most ten times a second,
 * only when enabled (rrr-client turns it on for a terminal or --progress),
 * so scripts reading stdout never see it.
 */
#include <stdio.h>
#include <time.h>

#include "client/cli/cli.h"

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_start(struct cli_progress *p, bool on, const char *label, uint64_t total)
{
	p->on = on;
	p->label = label;
	p->total = total;
	p->t0 = p->last = cli_now();
}

static void draw(struct cli_progress *p, uint64_t done, bool final)
{
	double dt = cli_now() - p->t0;
	double pct = p->total ? 100.0 * (double)done / (double)p->total : 100.0;
	if (pct > 100.0)
		pct = 100.0;
	int fill = (int)(pct / 100.0 * 30);
	char bar[31];
	for (int i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	double mib = (double)done / (1024.0 * 1024.0);
	fprintf(stderr, "\r%s [%s] %5.1f%% %.1f MiB %.1f MiB/s%s", p->label, bar, pct, mib,
		dt > 0 ? mib / dt : 0.0, final ? "\n" : "");
	fflush(stderr);
}

void cli_progress_update(void *arg, uint64_t done)
{
	struct cli_progress *p = arg;
	if (!p->on)
		return;
	double t = cli_now();
	if (t - p->last < 0.1)
		return;
	p->last = t;
	draw(p, done, false);
}

void cli_progress_end(struct cli_progress *p, uint64_t done)
{
	if (p->on)
		draw(p, done, true);
}

int cli_nfs_rc(int rc)
{
	uint32_t st = rrr_nfs3_last_status();

	return rc < 0 && st != RRR_NFS3_OK ? (int)st : rc;
}
