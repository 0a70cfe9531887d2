/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/tshark.c - see tshark.h. tshark's "Capturing on" line on its
 * standard error says the capture is live; every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/tshark.h"

static pid_t g_tshark = -1;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int th_tshark_start(const char *filter, const char *pcap, char *why, size_t len)
{
	char line[512] = "";
	size_t have = 0;
	int p[2];

	if (pipe(p) < 0)
		return -errno;
	g_tshark = fork();
	if (g_tshark == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(p[1], 2);
		close(p[0]);
		/* a 64 MiB kernel buffer holds a whole test's session, so a
		 * capture process that is not scheduled for a while (parallel
		 * tests on a small machine) loses nothing */
		execlp("tshark", "tshark", "-i", "lo", "-B", "64", "-f", filter, "-w", pcap,
		       (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	double end = mono_s() + 20;

	while (mono_s() < end && have < sizeof(line) - 1) {
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 500) <= 0)
			continue;
		n = read(p[0], line + have, sizeof(line) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		line[have] = 0;
		if (strstr(line, "Capturing on")) {
			struct stat st;

			close(p[0]); /* tshark's later stderr writes get EPIPE: harmless */
			/* until dumpcap has written the file's header */
			while ((stat(pcap, &st) || st.st_size <= 0) && mono_s() < end)
				poll(NULL, 0, 1);
			return 0;
		}
	}
	close(p[0]);
	kill(g_tshark, SIGKILL);
	waitpid(g_tshark, NULL, 0);
	g_tshark = -1;
	snprintf(why, len, "tshark cannot capture on lo: %.200s", line);
	return -EPERM;
}

pid_t th_tshark_pid(void)
{
	return g_tshark > 0 ? g_tshark : 0;
}

void th_tshark_stop(void)
{
	if (g_tshark <= 0)
		return;
	kill(g_tshark, SIGINT);
	waitpid(g_tshark, NULL, 0);
	g_tshark = -1;
}

long th_tshark_frames(const char *pcap, const char *f)
{
	char cmd[1024];
	FILE *p;
	long n = -1;

	snprintf(cmd, sizeof(cmd), "tshark -r '%s' -Y '%s' 2>/dev/null | wc -l", pcap, f);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%ld", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}
