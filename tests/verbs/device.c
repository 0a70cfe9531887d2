/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/device.c - opening the verbs provider: options, attributes,
 * the automatic strategy choice, and the error a host without RDMA gets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers/pair.h"

static struct rrr_device *open_or_skip(const char *opts)
{
	struct rrr_device *d = NULL;
	int rc = rrr_device_open("verbs", opts, &d);

	if (rc == -ENODEV && !strstr(opts ? opts : "", "nope"))
		cr_skip_test("no RDMA device: run make test-vm (%s)", rrr_last_error());
	cr_assert_eq(rc, 0, "open(%s): %d %s", opts ? opts : "", rc, rrr_last_error());
	return d;
}

Test(verbs_device, no_device_says_what_to_do)
{
	struct rrr_device *d = NULL;
	int rc = rrr_device_open("verbs", NULL, &d);

	if (rc == 0) {
		rrr_device_close(d);
		cr_skip_test("an RDMA device exists here: the no-device message is for hosts "
			     "without one");
	}
	cr_assert_eq(rc, -ENODEV);
	cr_assert_not_null(rrr_last_error());
	cr_assert(strstr(rrr_last_error(), "no RDMA device"), "%s", rrr_last_error());
	cr_assert(strstr(rrr_last_error(), "make test-vm"), "%s", rrr_last_error());
}

Test(verbs_device, option_errors)
{
	struct rrr_device *d = NULL;

	cr_assert_eq(rrr_device_open("verbs", "bogus=1", &d), -EINVAL);
	cr_assert(strstr(rrr_last_error(), "bogus"));
	cr_assert_eq(rrr_device_open("verbs", "strategy=fast", &d), -EINVAL);
	cr_assert_eq(rrr_device_open("verbs", "remote_inv=2", &d), -EINVAL);
	cr_assert_eq(rrr_device_open("verbs", "novalue", &d), -EINVAL);
	cr_assert_null(d);
}

Test(verbs_device, unknown_device_name)
{
	struct rrr_device *d = NULL;
	int rc = rrr_device_open("verbs", "dev=nope9", &d);

	cr_assert_eq(rc, -ENODEV);
	cr_assert_null(d);
	cr_assert_not_null(rrr_last_error());
}

Test(verbs_device, auto_attrs)
{
	struct rrr_device *d = open_or_skip(vp_opts(NULL));
	struct rrr_device_attr a;

	cr_assert_eq(rrr_device_query(d, &a), 0);
	cr_assert_str_eq(a.provider, "verbs");
	cr_assert_eq(a.map_model, RRR_MAP_VIRT_CONTIG);
	cr_assert_eq(a.sg_gaps, false);
	cr_assert_eq(a.page_size, 4096u);
	cr_assert_gt(a.max_fr_pages, 0u);
	cr_assert_gt(a.max_sge, 0u);
	cr_assert_gt(a.max_private_data, 0u);
	cr_assert(a.safe, "strategy=auto must pick a safe strategy (got %s)", a.strategy);
	if (strncmp(a.name, "rxe", 3) == 0) {
		/* rxe does not check window bounds: auto must not pick mw */
		cr_assert_str_eq(a.strategy, "regmr");
		cr_assert_eq(a.send_with_inv, false);
	}
	rrr_device_close(d);
}

Test(verbs_device, explicit_strategies)
{
	struct rrr_device *d = open_or_skip(vp_opts("regmr"));
	struct rrr_device_attr a;
	char opts[160];
	int rc;

	cr_assert_eq(rrr_device_query(d, &a), 0);
	cr_assert_str_eq(a.strategy, "regmr");
	cr_assert(a.safe);
	rrr_device_close(d);

	d = open_or_skip(vp_opts("persistent"));
	cr_assert_eq(rrr_device_query(d, &a), 0);
	cr_assert_str_eq(a.strategy, "persistent");
	cr_assert_not(a.safe, "persistent must report safe=false");
	rrr_device_close(d);

	rc = rrr_device_open("verbs", vp_opts("umr"), &d);
	cr_assert_eq(rc, -EOPNOTSUPP);
	cr_assert(strstr(rrr_last_error(), "umr"));

	d = NULL;
	rc = rrr_device_open("verbs", vp_opts("mw"), &d);
	if (rc == -EOPNOTSUPP) {
		cr_assert(strstr(rrr_last_error(), "lacks memory windows"));
		return;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(rrr_device_query(d, &a), 0);
	cr_assert_str_eq(a.strategy, "mw");
	if (strncmp(a.name, "rxe", 3) == 0)
		cr_assert_not(a.safe, "mw on rxe does not protect (window bounds unchecked)");
	cr_assert(a.send_with_inv);
	rrr_device_close(d);

	snprintf(opts, sizeof(opts), "%s,remote_inv=0", vp_opts("mw"));
	cr_assert_eq(rrr_device_open("verbs", opts, &d), 0);
	cr_assert_eq(rrr_device_query(d, &a), 0);
	cr_assert_not(a.send_with_inv);
	rrr_device_close(d);
}
