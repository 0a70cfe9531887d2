/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/helpers/wbuf.h - the XDR tests' hand writer of wire bytes:
 * big-endian words appended to a fixed buffer, for messages no encoder of
 * the library would produce (malformed credentials, hostile headers).
 */
#ifndef RRR_TESTS_XDR_WBUF_H
#define RRR_TESTS_XDR_WBUF_H

#include <stddef.h>
#include <stdint.h>

struct wbuf {
	uint8_t b[4096];
	size_t n; /* bytes written */
};

/* Appends @v big-endian; asserts it fits. */
void w32(struct wbuf *w, uint32_t v);
/* Appends the @n uint32_t values that follow, each as w32() does. */
void w32s(struct wbuf *w, unsigned n, ...);

#endif
