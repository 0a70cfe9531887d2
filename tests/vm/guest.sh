#!/bin/bash
# tests/vm/guest.sh - runs inside the test VM (as root, in the overlay root).
#
# Normal operation: bring up lo and eth0 (10.0.2.15/24, no route out), create
# Soft-RoCE device rxe0 on eth0, wait until its port is ACTIVE and GID index 1
# (::ffff:10.0.2.15, RoCE v2) exists, then run each script of tests/vm/tests.d
# (bench.d with --bench) in name order under `timeout`, logging to
# (RRR_VM_RDMA=siw: soft-iWARP device siw0 instead, and siw.d / bench-siw.d;
# RRR_VERBS_DEV names the device for the scripts)
# /rrr-results/NAME.log and one line per script to /rrr-results/summary:
# "PASS name secs", "SKIP name secs", "FAIL name secs status".
# Recovery: a script that hangs is killed at RRR_VM_TEST_TIMEOUT, or at the
# `# vm-timeout: SECONDS` of its header when that is larger; a device that
# never comes up fails the run with a FAIL line (the host prints the logs).
set -u
. /rrr-results/env
# where init.sh bound a checkout that the guest's /tmp would hide
[ -f /etc/rrr-vm-paths ] && . /etc/rrr-vm-paths
export RRR_BUILD RRR_ROOT
export RRR_VM=1 RRR_VM_ADDR=10.0.2.15 RRR_VM_RESULTS=/rrr-results
export HOME=/tmp TMPDIR=/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
SUM=/rrr-results/summary
: > "$SUM"
cd "$RRR_ROOT" || { echo "FAIL setup 0 cd" >> "$SUM"; exit 1; }

ip link set lo up
ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up ||
	{ echo "FAIL setup 0 eth0" >> "$SUM"; exit 1; }
DEV=rxe0
[ "${RRR_VM_RDMA:-}" = siw ] && DEV=siw0
export RRR_VERBS_DEV=$DEV
if ! rdma link add $DEV type ${DEV%0} netdev eth0; then
	dmesg | tail -n 40
	echo "FAIL setup 0 rdma-link-add" >> "$SUM"
	exit 1
fi
ok=0
for _ in $(seq 1 300); do
	st=$(cat /sys/class/infiniband/$DEV/ports/1/state 2>/dev/null)
	gid=$(cat /sys/class/infiniband/$DEV/ports/1/gids/1 2>/dev/null)
	case "$st" in *ACTIVE*)
		[ "$DEV" = siw0 ] && ok=1 # iWARP: no RoCE GID table
		case "$gid" in ""|0000:0000:0000:0000:0000:0000:0000:0000) ;; *) ok=1 ;; esac ;;
	esac
	[ $ok -eq 1 ] && break
	sleep 0.1
done
if [ $ok -ne 1 ]; then
	echo "guest: $DEV not ready: state='$st' gid1='$gid'"
	echo "FAIL setup 0 $DEV-not-active" >> "$SUM"
	exit 1
fi
echo "guest: $DEV ACTIVE${gid:+, gid[1]=$gid}"

if [ -n "${RRR_VM_SHELL_CMD:-}" ]; then
	bash -c "$RRR_VM_SHELL_CMD" > /rrr-results/shell.log 2>&1
	rc=$?
	[ $rc -eq 0 ] && echo "PASS shell 0" >> "$SUM" || echo "FAIL shell 0 $rc" >> "$SUM"
	exit 0
fi

dir=tests/vm/tests.d
[ "$RRR_VM_MODE" = bench ] && dir=tests/vm/bench.d
if [ "$DEV" = siw0 ]; then
	dir=tests/vm/siw.d
	[ "$RRR_VM_MODE" = bench ] && dir=tests/vm/bench-siw.d
fi
for t in "$dir"/*.sh; do
	[ -f "$t" ] || continue
	n=$(basename "$t" .sh)
	echo "guest: == $n"
	to=$RRR_VM_TEST_TIMEOUT
	own=$(sed -n '1,30s/^# vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$t" | head -n 1)
	[ -n "$own" ] && [ "$own" -gt "$to" ] && to=$own
	export RRR_VM_SCRIPT_TIMEOUT=$to
	s=$(date +%s)
	timeout --kill-after=5 "$to" bash "$t" > "/rrr-results/$n.log" 2>&1
	rc=$?
	d=$(( $(date +%s) - s ))
	case $rc in
	0) echo "PASS $n ${d}s" >> "$SUM" ;;
	77) echo "SKIP $n ${d}s" >> "$SUM" ;;
	*) echo "FAIL $n ${d}s status=$rc" >> "$SUM" ;;
	esac
	tail -n 1 "$SUM"
done
sync
exit 0
