/* SPDX-License-Identifier: MIT */
/*
 * example_clnt.h - what the example clients share: the options each takes
 * to reach its server (--transport, --provider, --host, --port, --help)
 * and the counters printed at the end. Only the public API (<rrr/rrr.h>).
 */
#ifndef EXAMPLE_CLNT_H
#define EXAMPLE_CLNT_H

#include <getopt.h>

#include <rrr/rrr.h>

/* The long options every example client takes ('T', 'p', 'H', 'P', 'h'),
 * with the table's terminator: the last entries of its table. */
#define EX_CLNT_LONGOPTS                                                                           \
	{"transport", required_argument, NULL, 'T'}, {"provider", required_argument, NULL, 'p'},   \
	    {"host", required_argument, NULL, 'H'}, {"port", required_argument, NULL, 'P'},        \
	    {"help", no_argument, NULL, 'h'},                                                      \
	{                                                                                          \
		NULL, 0, NULL, 0                                                                   \
	}

/* getopt_long() over @argv with the options @lo (ending in
 * EX_CLNT_LONGOPTS) that takes those of EX_CLNT_LONGOPTS but --help into
 * @o itself: the next other option character ('h' for --help, '?' for an
 * unknown one; its argument in optarg), or -1 after the last. */
int ex_clnt_getopt(int argc, char **argv, const struct option *lo, struct rrr_clnt_opts *o);

/* Print the counters of @c to stdout as "NAME: key value" lines. */
void ex_clnt_print_stats(const char *name, struct rrr_clnt *c);

#endif /* EXAMPLE_CLNT_H */
