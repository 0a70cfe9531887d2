/* SPDX-License-Identifier: MIT */
/* tests/bench/common_impl.c - the benchmark helpers under test (bench/common.c
 * is part of rrr-bench, not of the library, so the test builds its own copy). */
#include "bench/common.c"
