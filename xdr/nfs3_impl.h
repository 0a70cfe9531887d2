/* SPDX-License-Identifier: MIT */
/*
 * xdr/nfs3_impl.h - bidirectional XDR primitives shared by the NFSv3 and
 * MOUNT v3 codecs (xdr/nfs3.c, xdr/mount3.c). Each helper encodes or
 * decodes depending on the stream's direction, so one description of a
 * type serves both sides. Internal to the library.
 */
#ifndef RRR_XDR_NFS3_IMPL_H
#define RRR_XDR_NFS3_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <rrr/xdr.h>

int rrr__x_u32(struct rrr_xdr *x, uint32_t *v);
int rrr__x_u64(struct rrr_xdr *x, uint64_t *v);
int rrr__x_bool(struct rrr_xdr *x, bool *v);
/* enum with an upper bound checked on decode */
int rrr__x_enum(struct rrr_xdr *x, uint32_t max, uint32_t *v);
int rrr__x_fixed(struct rrr_xdr *x, void *p, uint32_t n);
/* string<max> into a NUL-terminated buffer of max+1 bytes */
int rrr__x_string(struct rrr_xdr *x, char *s, uint32_t max);
static inline bool rrr__x_enc(const struct rrr_xdr *x) { return x->op == RRR_XDR_ENCODE; }

#define RRR__X(expr)                                                                       \
	do {                                                                               \
		int rrr__x_rc = (expr);                                                   \
		if (rrr__x_rc < 0)                                                        \
			return rrr__x_rc;                                                 \
	} while (0)

#endif
