/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/srcaddr.h - choose the source address of the test
 * process's outgoing IPv4 connections, so one process can be client
 * 127.0.0.1 and client 127.0.0.2 of the same server (access control tests).
 */
#ifndef RRR_TESTS_NFS_SRCADDR_H
#define RRR_TESTS_NFS_SRCADDR_H

/* Bind every later AF_INET connect() of this process to @addr ("127.0.0.2";
 * NULL: the kernel's choice again). */
void th_src_addr(const char *addr);

#endif
