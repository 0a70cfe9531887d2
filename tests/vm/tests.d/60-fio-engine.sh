# vm-timeout: 1200
# fio with the rrr external ioengine (build/rrr-fio.so) against rrr-server on
# the verbs provider (rxe0), and, side by side, the kernel NFS/RDMA client
# with fio's libaio engine (direct=1) on a mount of the same server: the same
# job files (examples/fio/), the same server, one after the other.
#   1. rrr engine, examples/fio/verify.fio: every write job reads its bytes
#      back and checks CRC32C (fio's verify), nconnect=4 included;
#   2. rrr engine, examples/fio/cells.fio, time-based;
#   3. kernel client (vers=3,proto=rdma), the same cells.fio with libaio;
#   4. a table of both (MiB/s and IOPS per cell) in $RRR_VM_RESULTS/vm-fio.txt.
# Every job must end with error 0. TCG figures: compare the columns with each
# other, not with hardware. Knobs: RRR_VM_FIO_SIZE (MiB, default 8; verify.fio
# gets an eighth), RRR_VM_FIO_RUNTIME (seconds per cell, default 2).
set -u
S="$RRR_BUILD/rrr-server"
E="$RRR_BUILD/rrr-fio.so"
[ -x "$S" ] || { echo "missing $S (make all)"; exit 1; }
command -v fio >/dev/null || { echo "fio is not installed (make deps-fio)"; exit 77; }
[ -f "$E" ] || { echo "missing $E (no fio source on the host: make deps-fio)"; exit 77; }
command -v mount.nfs >/dev/null || [ -x /sbin/mount.nfs ] ||
	{ echo "mount.nfs missing (nfs-common: make deps-vm)"; exit 77; }
ADDR=${RRR_VM_ADDR:-10.0.2.15}
DEV=${RRR_VERBS_DEV:-rxe0}
OUT=${RRR_VM_RESULTS:-/tmp}
SIZE=${RRR_VM_FIO_SIZE:-8}
RT=${RRR_VM_FIO_RUNTIME:-2}
EXP=/tmp/rrr-fio-export
MNT=/tmp/rrr-fio-mnt
W=/tmp/rrr-fio
mkdir -p "$EXP" "$MNT" "$W/state"
SPID=
fail() {
	echo "FAIL: $*"
	tail -n 30 "$W/server.log"
	dmesg | tail -n 15
	umount -f "$MNT" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	exit 1
}
# every job of a terse file ended with error 0
check() {
	local bad
	[ -s "$1" ] || fail "no fio output in $1"
	bad=$(awk -F';' '/^3;/ && $5 != 0 {print $3 " error " $5}' "$1")
	[ -z "$bad" ] || fail "$2: $bad"
}

# free ports (an earlier script's rpc.mountd may still hold 20048)
"$S" --export "$EXP" --provider verbs --provider-opts "dev=$DEV" \
	--listen "$ADDR" --port 0 --mount-port 0 --state-dir "$W/state" --no-root-squash \
	--port-file "$W/ports" --threads 2 >"$W/server.log" 2>&1 &
SPID=$!
for _ in $(seq 1 100); do [ -s "$W/ports" ] && break; sleep 0.1; done
[ -s "$W/ports" ] || fail "rrr-server did not start"
RP=$(sed -n 's/.*rdma=\([0-9]*\).*/\1/p' "$W/ports")
MP=$(sed -n 's/.*mount=\([0-9]*\).*/\1/p' "$W/ports")
[ -n "$RP" ] && [ -n "$MP" ] || fail "no ports in $W/ports: $(cat "$W/ports")"
echo "rrr-server on $ADDR: NFS/RDMA port $RP, MOUNT (and NFS/TCP) port $MP"

RRR="--ioengine=external:$E --transport=rdma --provider=verbs --provider_opts=dev=$DEV
	--host=$ADDR --port=$RP --mount_port=$MP"
# runfio NAME TIMEOUT ARGS...: fio under a timeout, terse output in $W/NAME.terse,
# a time-stamped line before and after; on failure fio's stderr and the
# server's log
runfio() {
	local name=$1 to=$2 t0 rc
	shift 2
	t0=$(date +%s)
	echo "$(date +%T) fio $name: start (timeout ${to}s)"
	timeout -k 5 "$to" fio "$@" --output-format=terse >"$W/$name.terse" 2>"$W/$name.err"
	rc=$?
	echo "$(date +%T) fio $name: exit $rc after $(( $(date +%s) - t0 ))s"
	if [ $rc -ne 0 ]; then
		tail -n 20 "$W/$name.err"
		cat "$W/$name.terse"
		fail "fio $name exited $rc"
	fi
	check "$W/$name.terse" "$name"
}
# 0. one small job first: does the engine work on $DEV at all
# shellcheck disable=SC2086
runfio sanity 120 $RRR --name=sanity --filename=sanity.dat --rw=write --bs=64k --size=256k \
	--iodepth=4 --verify=crc32c
# 1. verify
# shellcheck disable=SC2086
runfio verify 300 $RRR --size=$((SIZE / 8 > 0 ? SIZE / 8 : 1))m examples/fio/verify.fio
echo "rrr engine on $DEV: verify.fio, $(grep -c '^3;' "$W/verify.terse") jobs, CRC32C verified"

# 2. cells, rrr engine
# shellcheck disable=SC2086
runfio rrr 300 $RRR --size=${SIZE}m --time_based --runtime=$RT examples/fio/cells.fio

# 3. cells, kernel client + libaio on the same server
mount -t nfs -o vers=3,proto=rdma,port=$RP,mountproto=tcp,mountport=$MP,nolock \
	"$ADDR:$EXP" "$MNT" || fail "mount"
runfio kernel 300 --ioengine=libaio --direct=1 --directory="$MNT" --size=${SIZE}m \
	--time_based --runtime=$RT examples/fio/cells.fio
umount "$MNT" || fail umount

kill -TERM "$SPID"
wait "$SPID"; rc=$?
SPID=
[ $rc -eq 0 ] || fail "rrr-server exit status $rc"

# 4. the table (terse v3: read bw KiB/s $7, IOPS $8; write $48, $49)
{
	echo "fio on $DEV (qemu TCG, $(nproc) vCPUs): rrr engine (verbs, per-io registration)"
	echo "vs kernel NFSv3/RDMA client + libaio direct=1, same rrr-server, ${SIZE} MiB file,"
	echo "${RT} s per cell. MiB/s and IOPS (reads + writes)."
	echo
	printf '| %-20s | %12s | %10s | %12s | %10s |\n' cell "rrr MiB/s" "rrr IOPS" "kernel MiB/s" "kernel IOPS"
	printf '|%s|%s|%s|%s|%s|\n' ---------------------- -------------- ------------ -------------- ------------
	awk -F';' '
		FNR == 1 { f++ }
		/^3;/ { bw = ($7 + $48) / 1024; iops = $8 + $49
			if (f == 1) { order[++n] = $3; rb[$3] = bw; ri[$3] = iops }
			else { kb[$3] = bw; ki[$3] = iops } }
		END { for (i = 1; i <= n; i++) { c = order[i]
			printf "| %-20s | %12.1f | %10.0f | %12.1f | %10.0f |\n", c, rb[c], ri[c], kb[c], ki[c] } }
	' "$W/rrr.terse" "$W/kernel.terse"
} >"$W/vm-fio.txt"
cp "$W/vm-fio.txt" "$W/rrr.terse" "$W/kernel.terse" "$W/verify.terse" "$OUT/" 2>/dev/null
cat "$W/vm-fio.txt"
echo "fio: rrr engine on rxe and kernel client + libaio: OK"
