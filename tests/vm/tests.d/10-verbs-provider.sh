# The verbs-provider Criterion suite (tests/verbs/) on rxe0: every test must
# run for real here. The only skips allowed are the test for hosts without a
# device and the destructive removal test (run by 90-device-removal.sh).
set -u
t="$RRR_BUILD/tests/verbs"
[ -x "$t" ] || { echo "missing $t (make tests)"; exit 1; }
"$t" --jobs 2 --verbose > /tmp/verbs.out 2>&1
rc=$?
grep -v 'rrr verbs: WARNING' /tmp/verbs.out
[ $rc -eq 0 ] || exit $rc
bad=$(grep '^\[SKIP\]' /tmp/verbs.out | grep -v -e 'no_device_says_what_to_do' \
	-e 'verbs_removal::')
if [ -n "$bad" ]; then
	echo "tests skipped inside the VM:"; echo "$bad"; exit 1
fi
grep -q '^\[PASS\] verbs_reg::mw_remote_invalidation' /tmp/verbs.out ||
	{ echo "remote invalidation test did not pass"; exit 1; }
