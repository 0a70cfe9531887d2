# DEVICE_REMOVAL under a live verbs connection (tests/verbs/removal.c).
# Runs last: it deletes rxe0, then creates it again for any later script.
set -u
t="$RRR_BUILD/tests/verbs"
[ -x "$t" ] || { echo "missing $t (make tests)"; exit 1; }
RRR_VERBS_REMOVAL=1 "$t" --verbose --filter 'verbs_removal/*' 2>&1 | tee /tmp/removal.out
rc=${PIPESTATUS[0]}
grep -q '^\[PASS\] verbs_removal::device_removal_event' /tmp/removal.out || rc=1
# once the process is gone, nothing holds the device: the removal completes
for _ in $(seq 1 200); do [ -e /sys/class/infiniband/rxe0 ] || break; sleep 0.1; done
if [ -e /sys/class/infiniband/rxe0 ]; then
	echo "rxe0 still present 20 s after the test exited"; rc=1
fi
# put the device back (bounded wait for ACTIVE)
[ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev eth0
for _ in $(seq 1 100); do
	grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
	sleep 0.1
done
exit $rc
