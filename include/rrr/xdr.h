/* SPDX-License-Identifier: MIT */
/*
 * rrr/xdr.h - bounded XDR streams (RFC 4506).
 *
 * A struct rrr_xdr is a cursor over a caller-owned buffer. The same type
 * encodes and decodes; which one is fixed at init. Every decoder checks
 * the remaining length BEFORE it reads, and every count taken from the wire
 * is compared against a caller-supplied maximum BEFORE any arithmetic is done
 * with it (see CVE-2024-53151: a count multiplied before it was bounded).
 *
 * Errors (all functions return 0 or a negative errno):
 *   -EMSGSIZE  encode: the buffer has no room for the item
 *   -EBADMSG   decode: the buffer ends before the item does
 *   -E2BIG     decode: a count or length on the wire exceeds the caller's max
 *   -EINVAL    bad arguments, or a bool/enum word outside its range
 *
 * After an error the stream position is unspecified; callers discard it.
 *
 * Ownership: the stream never allocates and never frees. Pointers returned
 * by the *_inline decoders point into the caller's buffer and live as long
 * as it does.
 *
 * Locking: none. One stream is used by one thread at a time.
 *
 * DDP payloads (RFC 8166 section 6, RFC 8267): an item that an upper layer
 * marks "DDP-eligible" (NFS READ/WRITE data, READLINK/SYMLINK paths) is
 * encoded/decoded with rrr_xdr_encode_payload()/rrr_xdr_decode_payload().
 * Without a hook they behave exactly like variable-length opaque. With a
 * hook (installed by the RPC-over-RDMA transport), the transport decides:
 * move the bytes by RDMA (read chunk / write chunk) and leave only the
 * length word in the inline stream, or copy them inline.
 */
#ifndef RRR_XDR_H
#define RRR_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define RRR_XDR_UNIT 4u
/* Round n up to a multiple of 4, in the type of n (32- or 64-bit); callers
 * bound n first so the addition cannot wrap. */
#define RRR_XDR_PAD(n) (((n) + 3u) & ~(__typeof__((n) + 3u))3u)

enum rrr_xdr_op { RRR_XDR_ENCODE = 1, RRR_XDR_DECODE = 2 };

struct rrr_xdr;

/*
 * struct rrr_xdr_ddp - transport hook for DDP-eligible items.
 * @encode: called by rrr_xdr_encode_payload() AFTER the length word was
 *          written; must either append the bytes (+pad) to @xdr or arrange
 *          to move them out of band. The iovecs must stay valid until the
 *          RPC using them completes (see client.h / server.h).
 * @decode: called by rrr_xdr_decode_payload() AFTER the length word was read
 *          and checked against the caller's max; must either consume the
 *          bytes (+pad) from @xdr and describe them in @iov/@niov, or
 *          describe where the transport already placed them (@niov may be 0
 *          when the data went straight to a caller-provided sink).
 */
struct rrr_xdr_ddp {
	int (*encode)(struct rrr_xdr *xdr, void *ctx, const struct iovec *iov,
		      unsigned niov, uint32_t len);
	int (*decode)(struct rrr_xdr *xdr, void *ctx, uint32_t len,
		      struct iovec *iov, unsigned *niov);
	void *ctx;
	/* the payload the transport's call declared (client: struct
	 * rrr_call.payload of a TO_SERVER call), or NULL: what
	 * rrr_xdr_encode_payload(xdr, NULL, 0, 0) encodes */
	const struct iovec *payload;
	unsigned npayload;
};

/* Public so it can live on the stack; treat the fields as read-only. */
struct rrr_xdr {
	uint8_t *buf;            /* start of the buffer */
	size_t len;              /* bytes usable in buf */
	size_t pos;              /* cursor, always <= len and a multiple of 4 */
	enum rrr_xdr_op op;
	const struct rrr_xdr_ddp *ddp; /* NULL: payloads are plain opaque */
	size_t ddp_pos;          /* position of the last payload's length word */
};

/* Initialise @xdr over @buf/@len for @op. Never fails. */
void rrr_xdr_init(struct rrr_xdr *xdr, void *buf, size_t len, enum rrr_xdr_op op);
/* Install (or clear, with NULL) the DDP hook. */
void rrr_xdr_set_ddp(struct rrr_xdr *xdr, const struct rrr_xdr_ddp *ddp);
static inline size_t rrr_xdr_pos(const struct rrr_xdr *xdr) { return xdr->pos; }
static inline size_t rrr_xdr_remaining(const struct rrr_xdr *xdr) { return xdr->len - xdr->pos; }
/* Pointer to the current position (for callers that copy whole regions). */
static inline uint8_t *rrr_xdr_cursor(const struct rrr_xdr *xdr) { return xdr->buf + xdr->pos; }

/* Primitive items. Encode variants take values, decode variants pointers. */
int rrr_xdr_put_u32(struct rrr_xdr *xdr, uint32_t v);
int rrr_xdr_get_u32(struct rrr_xdr *xdr, uint32_t *v);
int rrr_xdr_put_u64(struct rrr_xdr *xdr, uint64_t v);
int rrr_xdr_get_u64(struct rrr_xdr *xdr, uint64_t *v);
int rrr_xdr_put_bool(struct rrr_xdr *xdr, bool v);
/* Decodes 0 or 1; any other word is -EINVAL. */
int rrr_xdr_get_bool(struct rrr_xdr *xdr, bool *v);
/* Enums are int32 on the wire; get_enum rejects values > @max with -EINVAL. */
int rrr_xdr_put_enum(struct rrr_xdr *xdr, uint32_t v);
int rrr_xdr_get_enum(struct rrr_xdr *xdr, uint32_t max, uint32_t *v);

/* Fixed-length opaque[n]: n bytes then zero pad to 4. */
int rrr_xdr_put_fixed(struct rrr_xdr *xdr, const void *p, uint32_t n);
int rrr_xdr_get_fixed(struct rrr_xdr *xdr, void *p, uint32_t n);
/* Variable-length opaque<max>: length word, bytes, pad. */
int rrr_xdr_put_opaque(struct rrr_xdr *xdr, const void *p, uint32_t n);
/* Copies into @p (capacity @max); *n receives the length. */
int rrr_xdr_get_opaque(struct rrr_xdr *xdr, void *p, uint32_t max, uint32_t *n);
/* Zero-copy decode: *p points into the stream buffer. */
int rrr_xdr_get_opaque_inline(struct rrr_xdr *xdr, uint32_t max, const void **p, uint32_t *n);
/* string<max>: like opaque; get_string NUL-terminates into @s (capacity max+1)
 * and rejects embedded NUL bytes with -EINVAL. */
int rrr_xdr_put_string(struct rrr_xdr *xdr, const char *s);
int rrr_xdr_get_string(struct rrr_xdr *xdr, char *s, uint32_t max);

/* Array count: put writes it; get reads it and fails with -E2BIG if > max,
 * and with -EBADMSG if count * min_elem_bytes exceeds what is left (checked
 * without overflow) - a cheap early reject of impossible counts. */
int rrr_xdr_put_count(struct rrr_xdr *xdr, uint32_t count);
int rrr_xdr_get_count(struct rrr_xdr *xdr, uint32_t max, uint32_t min_elem_bytes, uint32_t *count);

/* Reserve @nwords 4-byte words now (e.g. a length to fill later); *pos gets
 * their offset. */
int rrr_xdr_reserve(struct rrr_xdr *xdr, uint32_t nwords, size_t *pos);
/* Overwrite the word at @pos (must have been reserved or written). */
int rrr_xdr_fill_u32(struct rrr_xdr *xdr, size_t pos, uint32_t v);
/* Skip @n bytes (+pad) when decoding, or emit @n zero bytes (+pad) when encoding. */
int rrr_xdr_skip(struct rrr_xdr *xdr, uint32_t n);

#define RRR_XDR_PAYLOAD_MAX_IOV 64
/* DDP-eligible variable opaque (see the comment at the top of this file).
 * encode: @len must equal the sum of the iovec lengths. @iov NULL with
 * @niov 0 encodes the payload the call declared (the hook's payload, the
 * client's struct rrr_call.payload: declared once, @len ignored); -EINVAL
 * when the stream has none.
 * decode: fails with -E2BIG when the length word exceeds @max. Without a
 * hook *niov is 1 and iov[0] points into the stream. @iov must have room for
 * at least RRR_XDR_PAYLOAD_MAX_IOV entries. Errors otherwise those of the
 * other codecs (-EMSGSIZE, -EINVAL); the iovecs are not copied: the bytes
 * stay where they are (the caller's or the transport's buffers). No
 * locking; never blocks. */
int rrr_xdr_encode_payload(struct rrr_xdr *xdr, const struct iovec *iov, unsigned niov,
			   uint32_t len);
int rrr_xdr_decode_payload(struct rrr_xdr *xdr, uint32_t max, uint32_t *len,
			   struct iovec *iov, unsigned *niov);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_XDR_H */
