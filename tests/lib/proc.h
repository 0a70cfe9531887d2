/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/proc.h - what a process holds, from /proc: the entries of a
 * directory such as /proc/PID/fd (descriptors) or /proc/self/task
 * (threads).
 */
#ifndef TESTS_LIB_PROC_H
#define TESTS_LIB_PROC_H

#include <sys/types.h>

/* Entries of directory @path, "." and ".." aside (and, when reading
 * /proc/self/fd, the directory's own descriptor); -1 when it cannot be
 * read. */
long th_dir_entries(const char *path);
/* Descriptors process @pid holds (0: this one); -1 when unknown. */
long th_open_fds(pid_t pid);
/* Threads of this process. */
long th_threads(void);

#endif
