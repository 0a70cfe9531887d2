/* SPDX-License-Identifier: MIT */
/*
 * client/cli/cli.h - shared pieces of rrr-client: the progress bar
 * (util.c), exit codes, the get/put data path (xfer.c); checksums are
 * rrr_crc32c() (rrr/crc32c.h).
 */
#ifndef RRR_CLIENT_CLI_H
#define RRR_CLIENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rrr/crc32c.h>
#include <rrr/nfs3_client.h>

enum cli_exit {
	EXIT_OK = 0,
	EXIT_NFS = 1,      /* the server answered with an NFS error */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_CONN = 3,     /* could not connect, mount, or the connection failed */
	EXIT_VERIFY = 4,   /* --verify found different bytes */
	EXIT_LOCAL = 5,    /* local file error */
};

struct cli_progress {
	bool on;
	const char *label;
	uint64_t total;
	double t0;
	double last;
};

double cli_now(void);
void cli_progress_start(struct cli_progress *p, bool on, const char *label, uint64_t total);
/* Callback shape of rrr_nfs3_progress_fn; @arg is a struct cli_progress. */
void cli_progress_update(void *arg, uint64_t done);
void cli_progress_end(struct cli_progress *p, uint64_t done);

/*
 * One pipelined transfer of bytes [0, size) between a remote file and a
 * local one (xfer.c explains the pipeline). The caller opens (and for put
 * may map) the local file; cli_xfer_run() moves the bytes. MAY BLOCK.
 */
/* O_DIRECT alignment rrr-client asks of a file system (offset, length, memory). */
#define CLI_DIO_ALIGN 4096u

struct cli_xfer {
	/* in */
	struct rrr_nfs3 *nfs;
	const struct rrr_nfs3_fh *fh;
	bool put;	   /* false: READ remote -> local; true: local -> WRITE */
	uint64_t size;	   /* bytes to move (get: stops early at EOF) */
	unsigned qd;	   /* calls in flight = worker threads */
	uint32_t split;	   /* > 0: each call's payload as two buffers cut here */
	uint32_t stable;   /* put: rrr_nfs3_stable of the WRITEs */
	const uint8_t *map; /* put: the source mapped read-only, or NULL: pread
			     * from @fd through the ring */
	int fd;		   /* get: written in order with write() (-1: discard);
			    * put without @map: pread at the offset */
	bool pos_io;	   /* get: @fd is a regular file written with pwrite() */
	int dfd;	   /* get: the same regular file opened O_DIRECT, or -1:
			    * whole aligned chunks go there (pwrite; see xfer.c) */
	bool crc_on;	   /* compute @crc over the bytes, in file order */
	struct cli_progress *pg; /* or NULL; updated from the calling thread */
	/* out */
	uint64_t done;	   /* bytes moved (get: where the remote file ended) */
	uint32_t crc;	   /* CRC32C of the bytes moved, when @crc_on */
	int rc;		   /* 0, negative errno (transport), positive nfsstat3 (cli_nfs_rc) */
	char emsg[256];	   /* the sentence for @rc */
	int lerr;	   /* errno of the first local I/O failure, 0 none */
	const char *lwhat; /* what failed on the local file ("write to", ...) */
};
/* Returns x->rc; a local failure sets x->lerr instead. */
int cli_xfer_run(struct cli_xfer *x);

/* util.c: @rc of an rrr_nfs3_* call just made on this thread in the CLI's
 * convention: the positive nfsstat3 when the server answered with an NFS
 * error (rrr_nfs3_last_status()), else @rc unchanged. */
int cli_nfs_rc(int rc);

#endif
