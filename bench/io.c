/* SPDX-License-Identifier: MIT */
/* bench/io.c - placeholder until the benchmark lands. */
#include <stdio.h>

#include "bench.h"

int rrr__bench_io_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "rrr-bench io: not implemented yet\n");
	return 1;
}
