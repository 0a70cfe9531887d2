/* SPDX-License-Identifier: MIT */
/*
 * tests/tsan/shim/criterion_arena.c - lets Criterion start under
 * ThreadSanitizer. Linked into the Criterion test binaries only when the
 * tree is built with SANITIZE=thread (see the Makefile's test_rule).
 *
 * Why: Criterion (via BoxFort) maps its "inheritable arena" with MAP_FIXED
 * at base 0x200000000000 + (rand_r() & 0x3fffff) * 16 MiB. On x86-64 almost
 * all of that window is TSan's shadow, meta-shadow or protected gaps, and
 * TSan's mmap interceptor refuses a MAP_FIXED mapping outside application
 * memory, so the runner aborts with "Could not initialize inheritable
 * arena: Resource temporarily unavailable" (Snaipe/Criterion#274). Neither
 * setarch -R (ASLR off), --jobs 1, die_after_fork=0 nor clang change that.
 *
 * Fix: this executable defines rand_r(), which interposes on libc's (and
 * on TSan's interceptor) for every caller in the process. It returns
 * offsets that place the arena in 0x5600_0000_0000..0x5680_0000_0000, the
 * part of the window TSan treats as application memory (where PIE
 * binaries live); successive calls walk 16 MiB steps, so BoxFort's
 * "already mapped, try another" loop still terminates. The library does
 * not call rand_r(); tests must not rely on it being random.
 *
 * Recovery: if a future TSan moves its application ranges, the runner
 * aborts again with the same message, and this file is where to look.
 */
#include <stdatomic.h>
#include <stdlib.h>

/* default visibility: the tree builds with -fvisibility=hidden, and only an
 * exported definition interposes on libcriterion's call */
__attribute__((visibility("default"))) int rand_r(unsigned int *seed)
{
	static atomic_uint step;

	(void)seed;
	return (int)(0x360000u + atomic_fetch_add(&step, 1) % 0x8000u);
}
