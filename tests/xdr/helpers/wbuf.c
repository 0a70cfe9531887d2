/* SPDX-License-Identifier: MIT */
/*
 * tests/xdr/helpers/wbuf.c - the hand writer of wire bytes (see wbuf.h).
 */
#include "wbuf.h"

#include <criterion/criterion.h>
#include <stdarg.h>

void w32(struct wbuf *w, uint32_t v)
{
	cr_assert_leq(w->n + 4, sizeof(w->b));
	w->b[w->n++] = (uint8_t)(v >> 24);
	w->b[w->n++] = (uint8_t)(v >> 16);
	w->b[w->n++] = (uint8_t)(v >> 8);
	w->b[w->n++] = (uint8_t)v;
}

void w32s(struct wbuf *w, unsigned n, ...)
{
	va_list ap;

	va_start(ap, n);
	while (n--)
		w32(w, va_arg(ap, uint32_t));
	va_end(ap);
}
