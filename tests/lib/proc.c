/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/proc.c - see proc.h.
 */
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/lib/proc.h"

long th_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

long th_open_fds(pid_t pid)
{
	char path[64];

	if (pid == 0 || pid == getpid())
		return th_dir_entries("/proc/self/fd") - 1; /* the directory's own */
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return th_dir_entries(path);
}

long th_threads(void)
{
	return th_dir_entries("/proc/self/task");
}
