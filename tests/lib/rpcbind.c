/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/rpcbind.c - the local rpcbind of the tests (see rpcbind.h).
 */
#include "rpcbind.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nfs_helpers.h"
#include "tests/test_wait.h"

static pid_t started = -1; /* the rpcbind started here, if any */
static int lock_fd = -1;

bool th_rpcbind_up(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/run/rpcbind.sock");
	bool up = fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	if (fd >= 0)
		close(fd);
	return up;
}

bool th_rpcbind_need(void)
{
	lock_fd = open("/tmp/rrr-test-rpcbind.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (lock_fd >= 0) {
		bool held = TEST_WAIT_UNTIL(flock(lock_fd, LOCK_EX | LOCK_NB) == 0, 60000);
		cr_assert(held, "another test held /tmp/rrr-test-rpcbind.lock for 60 s");
	}
	if (th_rpcbind_up())
		return true;
	if (access("/usr/sbin/rpcbind", X_OK) != 0 || geteuid() != 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		execl("/usr/sbin/rpcbind", "rpcbind", "-f", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return false;
	started = pid;
	for (double end = th_now() + 10; th_now() < end; usleep(20000))
		if (th_rpcbind_up())
			return true;
	return false;
}

void th_rpcbind_release(void)
{
	if (started > 0) {
		kill(started, SIGTERM);
		waitpid(started, NULL, 0);
		started = -1;
		/* what it saves for a warm start (-w) would name our test programs */
		unlink("/run/rpcbind/rpcbind.xdr");
		unlink("/run/rpcbind/portmap.xdr");
	}
	if (lock_fd >= 0)
		close(lock_fd);
	lock_fd = -1;
}
