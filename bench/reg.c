/* SPDX-License-Identifier: MIT */
/* bench/reg.c - placeholder until the benchmark lands. */
#include <stdio.h>

#include "bench.h"

int rrr__bench_reg_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "rrr-bench reg: not implemented yet\n");
	return 1;
}
