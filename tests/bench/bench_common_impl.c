/* SPDX-License-Identifier: MIT */
/* tests/bench/bench_common_impl.c - the benchmark helpers under test (bench/bench_common.c
 * is part of rrr-bench, not of the library, so the test builds its own copy). */
#include "bench/bench_common.c"
