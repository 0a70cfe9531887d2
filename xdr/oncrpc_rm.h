/* SPDX-License-Identifier: MIT */
/*
 * xdr/oncrpc_rm.h - ONC RPC record marking (RFC 5531 section 11), both
 * directions, without a socket: reassembly of records from a byte stream,
 * and the layout of an outgoing record. Internal to the library
 * (client/clnt_tcp.c sends calls, server/svc_tcp.c replies), its tests and
 * fuzzers.
 *
 * A record is one or more fragments, each preceded by a 4-byte big-endian
 * marker: the top bit set on the last fragment, the low 31 bits the
 * fragment's length. The reassembler concatenates fragments into one
 * buffer it owns until the last one is in, then reports the record.
 *
 * Two ways to feed it, over the same state:
 *  - rrr__rm_feed(): bytes the caller has already read (copied in);
 *  - rrr__rm_want() + rrr__rm_commit(): read straight into the buffer -
 *    want() says where and at most how much (the rest of the marker or of
 *    the fragment, never past the current record), commit() accounts the
 *    bytes read there.
 *
 * Hostile peers: each marker is checked against the maximum record size
 * the caller gave (rrr__rm_init) before anything is allocated for its
 * fragment, so no record ever exceeds it; a record that would is refused
 * with -EMSGSIZE and the stream is then unusable (drop the connection).
 * Zero-length fragments are accepted and add nothing; a record may be
 * empty (a last fragment of length 0 with nothing before it): callers
 * decide what an empty message means. The buffer grows geometrically from
 * 4 KiB, never beyond the maximum record size, and is kept for the next
 * record - unless the caller takes it with the record (rrr__rm_take: a
 * call that outlives the reading of the next one), and may give it back
 * (rrr__rm_give) when it is done with it.
 *
 * Sending (struct rrr__rm_out). Both sides send a record as one fragment:
 *
 *   [marker][buf 4..split)[payload iovecs][pad to 4][buf split..blen)
 *
 * the message encoded in a buffer whose first 4 bytes are reserved for the
 * marker, an opaque payload (a READ's data, a WRITE's data) gathered from
 * the caller's iovecs at its XDR position, without a copy.
 * rrr__rm_out_set() writes the marker and the record's length;
 * rrr__rm_out_iov() gives the unwritten rest as iovecs for one sendmsg();
 * the caller adds what the socket took to @off and is done when it reaches
 * @len (a partial write resumes where it stopped).
 *
 * Not thread-safe: one reassembler per connection, used by one thread.
 */
#ifndef RRR_XDR_ONCRPC_RM_H
#define RRR_XDR_ONCRPC_RM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/xdr.h>

struct rrr__rm {
	uint32_t max_record; /* bytes of one record, fragments together */
	uint8_t mark[4];     /* marker bytes read so far */
	unsigned mark_have;
	bool in_frag;	    /* reading fragment bytes */
	bool last_frag;	    /* the current fragment ends the record */
	bool complete;	    /* a record is in rec[0..len): rrr__rm_next() */
	bool broken;	    /* a refused record: the stream is unusable */
	uint32_t frag_left; /* bytes still to come of the current fragment */
	uint8_t *rec;
	size_t len, cap;
};

/* Initialise @r for records of at most @max_record bytes (1 ..
 * RRR_RPC_RM_LEN_MASK; larger values are clamped). Allocates nothing. */
void rrr__rm_init(struct rrr__rm *r, uint32_t max_record);
/* Free @r's buffer; @r may be initialised again. */
void rrr__rm_fini(struct rrr__rm *r);
/* Forget any partial record and a refusal (a new connection on the same
 * state); the buffer is kept. */
void rrr__rm_reset(struct rrr__rm *r);

/* Where the next bytes of the stream go, and at most how many (*@len > 0).
 * NULL when a complete record waits for rrr__rm_next() or the stream was
 * refused. */
void *rrr__rm_want(struct rrr__rm *r, size_t *len);
/* @n bytes (at most the *len of the last rrr__rm_want()) were read where
 * it said. Returns 1 when a record is now complete (r->rec, r->len until
 * rrr__rm_next()), 0 when more is needed, -EMSGSIZE for a record beyond
 * the maximum, -ENOMEM when its buffer cannot grow (both final). */
int rrr__rm_commit(struct rrr__rm *r, size_t n);
/* Copy in up to @n bytes of @p, stopping at the end of a record. *@used
 * gets the bytes consumed. Returns as rrr__rm_commit(); on 1 the rest of
 * @p belongs to the next record: call rrr__rm_next(), then feed it. */
int rrr__rm_feed(struct rrr__rm *r, const void *p, size_t n, size_t *used);
/* The complete record was consumed: start the next one (buffer kept). */
void rrr__rm_next(struct rrr__rm *r);
/* Take the complete record's buffer (r->rec; the caller free()s it or
 * gives it back) and start the next record without one; *@cap gets its
 * size. NULL (and *@cap 0) when no record is complete or it has no
 * buffer (an empty record that never needed one). */
void *rrr__rm_take(struct rrr__rm *r, size_t *cap);
/* Give back @buf (@cap bytes, from rrr__rm_take on @r, or NULL): kept
 * for the next records when @r has no buffer (none of the record being
 * read is in a buffer then), else freed. */
void rrr__rm_give(struct rrr__rm *r, void *buf, size_t cap);

/* One outgoing record (see the essay). */
struct rrr__rm_out {
	const uint8_t *buf;	   /* marker + message */
	size_t blen, split;	   /* bytes of buf; where the payload goes */
	const struct iovec *piov; /* payload, NULL: none */
	unsigned pniov;
	uint32_t plen, pad;
	size_t len, off; /* record bytes in all; written */
};

/* iovecs the rest of any record takes: head, payload, pad, tail. */
#define RRR__RM_OUT_IOV_MAX (RRR_XDR_PAYLOAD_MAX_IOV + 3)

/* Lay out @o: the message @buf[0..@blen) with its first 4 bytes reserved,
 * and, when @piov is not NULL, @pniov iovecs of @plen payload bytes in all
 * at @split (4 <= @split <= @blen), padded to 4. Writes the marker (one
 * fragment, the last) into @buf[0..4) and sets @o->off to 0. Returns 0,
 * -EINVAL for a split outside the message or more than
 * RRR_XDR_PAYLOAD_MAX_IOV iovecs, -EMSGSIZE for a record longer than a
 * marker can say. @buf and the iovecs must stay until the record is out. */
int rrr__rm_out_set(struct rrr__rm_out *o, uint8_t *buf, size_t blen, size_t split,
		    const struct iovec *piov, unsigned pniov, uint32_t plen);
/* The unwritten rest of @o (from @o->off) as at most RRR__RM_OUT_IOV_MAX
 * iovecs into @iov; returns how many (0 when all is written). */
unsigned rrr__rm_out_iov(const struct rrr__rm_out *o, struct iovec *iov);
/* A payload that is not gathered (a second one, or more iovecs than
 * RRR_XDR_PAYLOAD_MAX_IOV): copy the @niov iovecs of @iov, @len bytes in
 * all, into the message at @xdr's position, zero-padded to 4. 0, or the
 * -errno of rrr_xdr_skip() (-EMSGSIZE when there is no room). */
int rrr__rm_out_copy(struct rrr_xdr *xdr, const struct iovec *iov, unsigned niov, uint32_t len);

#endif /* RRR_XDR_ONCRPC_RM_H */
