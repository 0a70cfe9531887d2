/* SPDX-License-Identifier: MIT */
/*
 * server/fs/drc.h - rrr-server's duplicate request cache for the NFSv3
 * procedures that must not run twice (see drc.c).
 */
#ifndef RRR_SERVER_FS_DRC_H
#define RRR_SERVER_FS_DRC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rrr/nfs3_xdr.h>
#include <rrr/server.h>

#define FS_DRC_DEFAULT_ENTRIES 1024u  /* --drc-entries default */
#define FS_DRC_MAX_ENTRIES     65536u /* --drc-entries upper bound */
#define FS_DRC_REPLY_MAX       1024u  /* larger replies are not cached */
#define FS_DRC_WAIT_MS	       10000  /* a duplicate waits this long for the original */

struct fs_drc_stats {
	uint64_t hits;	    /* re-sent calls answered from the cache */
	uint64_t misses;    /* non-idempotent calls executed (and cached) */
	uint64_t mismatches; /* ... of them with the xid of a cached call of the same client
			      * address and port, anything else different (it was replaced) */
	uint64_t waits;	    /* re-sent calls that arrived while the original ran */
	uint64_t drops;	    /* ... and were dropped: the original did not finish in time */
	uint64_t evictions; /* finished entries pushed out by newer ones */
	uint64_t uncached;  /* executed without an entry (every entry in progress) */
	uint32_t entries;   /* entries in use now */
	uint32_t capacity;
};

/*
 * fs_drc_init - size the cache (@entries, 0 turns it off: every call
 * runs) and build the dispatch table fs_drc_nfs3_procs() returns from
 * @base. Not thread-safe; call once before the server runs. 0 or -ENOMEM.
 */
int fs_drc_init(const struct rrr_svc_proc *base, unsigned entries);
/* The NFSv3 dispatch table to register: @base of fs_drc_init() with the
 * non-idempotent procedures wrapped by the cache. */
const struct rrr_svc_proc *fs_drc_nfs3_procs(void);
/* Whether @proc (NFSv3) goes through the cache. */
bool fs_drc_cached_proc(uint32_t proc);
/* Counter snapshot; thread-safe. */
void fs_drc_stats(struct fs_drc_stats *st);
/* Print the counters as "  drc.NAME VALUE" lines. */
void fs_drc_print(FILE *f);
/* Free the cache (after the server stopped). */
void fs_drc_fini(void);

#endif
