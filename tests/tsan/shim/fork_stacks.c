/* SPDX-License-Identifier: MIT */
/*
 * tests/tsan/shim/fork_stacks.c - lets Criterion tests that fork and start
 * threads in the child run under ThreadSanitizer. Linked into the Criterion
 * test binaries only when the tree is built with SANITIZE=thread.
 *
 * Why: a Criterion test body runs in a worker process that already has
 * threads of Criterion's own (its nng messaging). After fork() the child
 * has one thread, but glibc keeps the dead threads' stacks in its stack
 * cache and TSan (die_after_fork=0) still lists those threads. The first
 * pthread_create() in the child takes a cached stack, so its pthread_t
 * equals a listed thread's and TSan aborts with "dup thread with used id"
 * (exit 66) - a TSan limitation, not a race in the code under test.
 *
 * Fix: a pthread_atfork() child handler raises the default thread stack
 * size above the cached stacks' size (2x + 1 MiB), so glibc maps fresh
 * stacks (new addresses, new pthread_t values) in the child. Threads that
 * ask for an explicit stack size are not affected; nothing in rrr does.
 *
 * Recovery: none needed; if the handler cannot read or set the default
 * attributes it leaves them alone and the old abort comes back.
 */
#include <pthread.h>

static void child_fresh_stacks(void)
{
	pthread_attr_t a;
	size_t sz = 0;

	if (pthread_getattr_default_np(&a))
		return;
	if (!pthread_attr_getstacksize(&a, &sz) &&
	    !pthread_attr_setstacksize(&a, 2 * sz + (1u << 20)))
		pthread_setattr_default_np(&a);
	pthread_attr_destroy(&a);
}

__attribute__((constructor)) static void fork_stacks_init(void)
{
	pthread_atfork(NULL, NULL, child_fresh_stacks);
}
