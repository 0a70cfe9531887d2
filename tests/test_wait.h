/* SPDX-License-Identifier: MIT */
/*
 * tests/test_wait.h - tests wait for conditions, never for time.
 *
 * A test that must let another thread or process reach a state (a call
 * received, a handler entered, a counter moved) polls that state with
 * TEST_WAIT_UNTIL(cond, ms): the condition is evaluated at once and then
 * every millisecond until it holds or @ms milliseconds of the monotonic
 * clock have passed. The macro evaluates to the condition's last value, so
 * the caller asserts on it with its own message:
 *
 *     cr_assert(TEST_WAIT_UNTIL(st_now().recv_bytes >= want, 5000),
 *               "the server received every call");
 *
 * The bound is a failure deadline, not a synchronisation delay: on a fast
 * machine the wait ends as soon as the state is reached, on a slow one
 * (sanitizers, a loaded CI host) it still ends when it is reached.
 *
 * Header only, included by path ("../test_wait.h").
 */
#ifndef RRR_TESTS_TEST_WAIT_H
#define RRR_TESTS_TEST_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* TEST_ALLOC_SANITIZER: built under a sanitizer with its own allocator
 * (ASan, TSan), where page faults and RSS say nothing about the code. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_ALLOC_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_ALLOC_SANITIZER 1
#endif
#endif

static inline uint64_t test_wait_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void test_wait_tick(void)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000000};

	nanosleep(&ts, NULL);
}

#define TEST_WAIT_UNTIL(cond, ms)                                                                  \
	__extension__({                                                                            \
		uint64_t tw_end_ = test_wait_now_ms() + (uint64_t)(ms);                            \
		bool tw_ok_;                                                                       \
		while (!(tw_ok_ = (cond)) && test_wait_now_ms() < tw_end_)                         \
			test_wait_tick();                                                          \
		tw_ok_;                                                                            \
	})

#endif
