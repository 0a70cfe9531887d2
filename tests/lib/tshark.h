/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/tshark.h - captures that Wireshark must decode: tshark on the
 * loopback interface into a file (a 64 MiB capture buffer; started once
 * the file has its header), and counts of the frames of that file a
 * display filter matches. One capture at a time per test process.
 */
#ifndef TESTS_LIB_TSHARK_H
#define TESTS_LIB_TSHARK_H

#include <stddef.h>
#include <sys/types.h>

/* Start tshark capturing @filter (a capture filter, e.g. "port 2049") on
 * lo into @pcap: 0 once it captures, or -errno with a reason in @why
 * (tshark missing or not allowed to capture: the caller skips). */
int th_tshark_start(const char *filter, const char *pcap, char *why, size_t len);
/* The capturing tshark's pid, 0 when none runs. */
pid_t th_tshark_pid(void);
/* Stop the capture (SIGINT, so the file is complete); no-op when none. */
void th_tshark_stop(void);
/* Frames of @pcap that the display filter @f matches; -1 when tshark fails. */
long th_tshark_frames(const char *pcap, const char *f);

#endif
