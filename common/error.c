/* SPDX-License-Identifier: MIT */
/*
 * common/error.c - the sentence that goes with a negative errno.
 *
 * Normal operation: a function about to return an error a person will see
 * records why with rrr__set_error() into a thread-local buffer;
 * rrr_last_error() returns it on the same thread. Nothing is allocated, so
 * recording can neither fail nor leak; a sentence longer than the buffer is
 * cut.
 *
 * Recovery: there is none to do. A new failure overwrites the old sentence;
 * calls that start a fresh attempt (rrr_device_open()) clear it first so a
 * stale sentence is never reported for a later success.
 */
#include <stdarg.h>
#include <stdio.h>

#include "common/rrr_impl.h"

static _Thread_local char last_error[256];

int rrr__set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

void rrr__clear_error(void)
{
	last_error[0] = '\0';
}

const char *rrr_last_error(void)
{
	return last_error[0] ? last_error : NULL;
}
