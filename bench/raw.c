/* SPDX-License-Identifier: MIT */
/* bench/raw.c - placeholder until the benchmark lands. */
#include <stdio.h>

#include "bench.h"

int rrr__bench_raw_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "rrr-bench raw: not implemented yet\n");
	return 1;
}
