/* SPDX-License-Identifier: MIT */
/*
 * tests/fio/helpers/server.c - the NFS suite's process helpers (start
 * rrr-server on a temporary export with free ports, run a command with a
 * timeout, stop and clean up), compiled into this suite too: one copy of
 * the code, two test binaries.
 */
#include "tests/nfs/helpers/nfs_helpers.c"
