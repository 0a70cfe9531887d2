/* SPDX-License-Identifier: MIT */
/*
 * common/opts.c - "key=value,key=value" option lists (provider options,
 * client and server transport options).
 *
 * Normal operation: the list is copied to a bounded stack buffer, split at
 * ',' and each pair at its first '='; the caller's callback sees every pair
 * in order and decides what a key means.
 *
 * Recovery: a list that is too long or a token without '=' is refused with
 * -EINVAL and a sentence naming the offending token; the first nonzero value
 * of the callback stops the walk and is returned as is (the callback
 * records its own sentence).
 */
#include <errno.h>
#include <string.h>

#include "common/rrr_impl.h"

int rrr__opts_parse(const char *opts, int (*fn)(void *arg, const char *key, const char *val),
		    void *arg)
{
	char buf[512], *save = NULL, *tok;

	if (!opts || !*opts)
		return 0;
	if (strlen(opts) >= sizeof(buf))
		return rrr__set_error(-EINVAL, "provider options too long (max %zu bytes)",
				      sizeof(buf) - 1);
	strcpy(buf, opts);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int rc;

		if (!eq || eq == tok)
			return rrr__set_error(-EINVAL,
					      "provider option '%s' is not key=value", tok);
		*eq = '\0';
		rc = fn(arg, tok, eq + 1);
		if (rc)
			return rc;
	}
	return 0;
}
