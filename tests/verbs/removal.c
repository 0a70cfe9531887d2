/* SPDX-License-Identifier: MIT */
/*
 * tests/verbs/removal.c - RRR_CM_EVENT_DEVICE_REMOVAL: the device goes
 * away under a live connection (rdma link delete), both sides are told, and
 * tearing everything down works (90-device-removal.sh then checks that the
 * device is gone once this process has exited).
 *
 * Destructive (it deletes the device), so it runs only when RRR_VERBS_REMOVAL
 * is set: tests/vm/tests.d/90-device-removal.sh does that, last, and creates
 * rxe0 again afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers/pair.h"

static void expect_removal(struct rrr_cm *cm)
{
	struct rrr_cm_event ev;
	int i, rc;

	for (i = 0; i < 8; i++) {
		rc = rrr_cm_wait_event(cm, &ev, VP_TIMEOUT_MS);
		cr_assert_eq(rc, 0, "no DEVICE_REMOVAL event: %d", rc);
		if (ev.type == RRR_CM_EVENT_DEVICE_REMOVAL) {
			cr_assert_lt(ev.status, 0);
			return;
		}
		cr_assert_eq(ev.type, RRR_CM_EVENT_DISCONNECTED, "unexpected %s",
			     rrr_cm_event_str(ev.type));
	}
	cr_assert_fail("no DEVICE_REMOVAL among 8 events");
}

Test(verbs_removal, device_removal_event, .timeout = 120)
{
	char cmd[160];
	const char *dev = getenv("RRR_VERBS_DEV");
	struct vp p;

	if (!getenv("RRR_VERBS_REMOVAL"))
		cr_skip_test("destructive (deletes the device): run by "
			     "tests/vm/tests.d/90-device-removal.sh");
	cr_assert_not_null(dev, "RRR_VERBS_DEV must name the device to delete");
	vp_open_connected(&p, NULL);
	snprintf(cmd, sizeof(cmd), "rdma link delete %s >/dev/null 2>&1 &", dev);
	cr_assert_eq(system(cmd), 0);
	expect_removal(p.ccm);
	expect_removal(p.scm);
	/* tear down after removal: no call may hang or crash */
	vp_close(&p);
	/* librdmacm keeps its device context until the process exits, so the
	 * device's disappearance is checked by the calling script. */
}
