/* SPDX-License-Identifier: MIT */
/*
 * tests/soft/cq_notify.c - how a soft CQ's fd is signalled (cq.c): a CQ
 * holds one descriptor until its first notification (its epoll set; the
 * eventfd comes with the first completion on an armed CQ), so idle
 * connections cost two descriptors, not three; a completion on an armed
 * CQ makes the fd readable from another thread; and when the fd limit
 * leaves no descriptor for the eventfd, the notification still makes the
 * fd readable (the device's always-readable eventfd joins the set until
 * the ack), so no wake-up is lost.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rrr/provider.h>

#include "tests/lib/proc.h"
#include "transport/soft/soft.h"

static struct rrr_device *dev;
static struct rrr_cq *cq;

static void cq_open(void)
{
	cr_assert_eq(rrr_device_open("soft", NULL, &dev), 0, "%s", rrr_last_error());
}

static void cq_close(void)
{
	if (cq)
		rrr_cq_destroy(cq);
	cq = NULL;
	rrr_device_close(dev);
}

TestSuite(soft_cq_notify, .init = cq_open, .fini = cq_close, .timeout = 30);

static int open_fds(void)
{
	return (int)th_open_fds(0);
}

static bool readable(int ms)
{
	struct pollfd p = {.fd = rrr_cq_fd(cq), .events = POLLIN};

	return poll(&p, 1, ms) == 1;
}

static void push(uint64_t id)
{
	struct rrr_wc wc = {.wr_id = id, .status = RRR_WC_SUCCESS, .opcode = RRR_WC_SEND};

	rrr__soft_cq_push(soft_cq(cq), &wc);
}

static void *push_later(void *arg)
{
	usleep(20000);
	push((uint64_t)(uintptr_t)arg);
	return NULL;
}

/* arm, see nothing, sleep on the fd until another thread's completion;
 * ack and poll: that completion */
static void wait_for_push(uint64_t id)
{
	struct rrr_wc wc;
	pthread_t t;

	cr_assert_eq(rrr_cq_arm(cq), 0);
	cr_assert_eq(rrr_cq_poll(cq, &wc, 1), 0);
	cr_assert_eq(pthread_create(&t, NULL, push_later, (void *)(uintptr_t)id), 0);
	cr_assert(readable(5000), "the completion made the CQ fd readable");
	pthread_join(t, NULL);
	cr_assert_eq(rrr_cq_ack_event(cq), 0);
	cr_assert_eq(rrr_cq_poll(cq, &wc, 1), 1);
	cr_assert_eq(wc.wr_id, id);
}

Test(soft_cq_notify, an_idle_cq_holds_one_descriptor)
{
	int before = open_fds();

	cr_assert_eq(rrr_cq_create(dev, 64, &cq), 0);
	cr_assert_eq(open_fds(), before + 1, "the CQ's epoll set only");
	wait_for_push(1);
	cr_assert_eq(open_fds(), before + 2, "its eventfd came with the first notification");
	cr_assert_not(readable(0), "the ack left the fd quiet");
	wait_for_push(2);
	cr_assert_eq(open_fds(), before + 2, "and is kept");
}

Test(soft_cq_notify, no_descriptor_left_loses_no_wakeup)
{
	struct rlimit old, low;
	int fds[64], n = 0, i;

	cr_assert_eq(rrr_cq_create(dev, 64, &cq), 0);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	/* fill the descriptor table up to a lowered limit */
	low = old;
	low.rlim_cur = (rlim_t)open_fds() + 32;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	cr_assert_eq(errno, EMFILE, "the table is full (%d opened)", n);
	for (i = 0; i < 3; i++) {
		wait_for_push(10 + (uint64_t)i);
		cr_assert_not(readable(0), "the ack took the fallback signal out of the set");
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	/* with descriptors again, the CQ makes its own eventfd */
	wait_for_push(20);
	cr_assert_not(readable(0));
}
