/* SPDX-License-Identifier: MIT */
/*
 * tests/test_env.h - which provider, provider options and address the
 * end-to-end suites (tests/clnt, tests/svc, tests/reg) run on.
 *
 * Normal operation: on the host (make test) nothing is set and every suite
 * runs on the soft provider over 127.0.0.1. Inside the VM
 * (tests/vm/tests.d/50-rpc-on-rxe.sh) the same binaries run on the verbs
 * provider over rxe0 with
 *   RRR_TEST_PROVIDER       provider name (default "soft")
 *   RRR_TEST_PROVIDER_OPTS  options for rrr_device_open() (default none;
 *                           RRR_TEST_SOFT_OPTS is still honoured on soft)
 *   RRR_TEST_ADDR           IPv4 address to listen on and connect to
 *                           (default 127.0.0.1; rdma_cm needs the RDMA
 *                           device's own address, e.g. 10.0.2.15)
 * A test that exercises something only soft has (soft device options,
 * SG_GAPS, 8-bit key wrap) calls TENV_SOFT_ONLY(why) and is skipped with
 * that reason elsewhere; a test whose expected behaviour depends on the
 * device asks tenv_attr() and asserts accordingly.
 *
 * Header only, included by path ("../test_env.h"), so each suite binary
 * links nothing more.
 */
#ifndef RRR_TESTS_TEST_ENV_H
#define RRR_TESTS_TEST_ENV_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/provider.h>

/* Provider the suites run on: $RRR_TEST_PROVIDER or "soft". */
static inline const char *tenv_provider(void)
{
	const char *p = getenv("RRR_TEST_PROVIDER");

	return p && *p ? p : "soft";
}

static inline bool tenv_is_soft(void)
{
	return strcmp(tenv_provider(), "soft") == 0;
}

/* Provider options: $RRR_TEST_PROVIDER_OPTS, else (soft only) the older
 * $RRR_TEST_SOFT_OPTS, else NULL. */
static inline const char *tenv_provider_opts(void)
{
	const char *o = getenv("RRR_TEST_PROVIDER_OPTS");

	if (o && *o)
		return o;
	o = getenv("RRR_TEST_SOFT_OPTS");
	return o && *o && tenv_is_soft() ? o : NULL;
}

/* Address to listen on and connect to: $RRR_TEST_ADDR or "127.0.0.1". */
static inline const char *tenv_addr(void)
{
	const char *a = getenv("RRR_TEST_ADDR");

	return a && *a ? a : "127.0.0.1";
}

/* The attributes of the device the suites run on (opened and closed
 * here). Returns 0 or the -errno of rrr_device_open/query. MAY BLOCK. */
static inline int tenv_attr(struct rrr_device_attr *attr)
{
	struct rrr_device *dev;
	int rc;

	memset(attr, 0, sizeof(*attr));
	rc = rrr_device_open(tenv_provider(), tenv_provider_opts(), &dev);
	if (rc)
		return rc;
	rc = rrr_device_query(dev, attr);
	rrr_device_close(dev);
	return rc;
}

/* Skip the calling Criterion test unless it runs on the soft provider. */
#define TENV_SOFT_ONLY(why)                                                                        \
	do {                                                                                       \
		if (!tenv_is_soft())                                                               \
			cr_skip_test("soft-specific (%s); running on provider %s", (why),          \
				     tenv_provider());                                             \
	} while (0)

#endif /* RRR_TESTS_TEST_ENV_H */
