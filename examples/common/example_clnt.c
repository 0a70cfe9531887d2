/* SPDX-License-Identifier: MIT */
/*
 * example_clnt.c - the example clients' options and counters (see
 * example_clnt.h).
 */
#include <stdio.h>

#include "example_clnt.h"
#include "example_opt.h"

int ex_clnt_getopt(int argc, char **argv, const struct option *lo, struct rrr_clnt_opts *o)
{
	const struct ex_str_opt map[] = {
	    {'T', &o->transport}, {'p', &o->provider}, {'H', &o->host}, {'P', &o->port}};
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		if (ex_str_opt_set(map, sizeof(map) / sizeof(map[0]), c, optarg))
			return c;
	return -1;
}

void ex_clnt_print_stats(const char *name, struct rrr_clnt *c)
{
	struct rrr_xprt_stats st;
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "%s: ", name);
	rrr_clnt_stats(c, &st);
	rrr_xprt_stats_print(stdout, prefix, &st);
}
