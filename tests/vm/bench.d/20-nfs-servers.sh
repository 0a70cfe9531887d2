# The same kernel NFS/RDMA client and the same O_DIRECT dd workload against
# rrr-server (verbs provider on rxe0) and against the kernel's nfsd (RDMA
# port 20049), one after the other; then rrr-bench io (rrr's own client over
# RPC-over-RDMA and over TCP) against both servers.
# Results: $RRR_VM_RESULTS/vm-nfs-servers.{json,txt}, vm-io-{rrr,knfsd}.{json,txt}.
# Under TCG emulation absolute figures are small; compare the servers.
# rrr-bench io uses 4 KiB and 256 KiB: nfsd in a 2 GiB VM takes at most 512 KiB per
# READ/WRITE (it answered 1 MiB WRITEs with RDMA_ERROR / a TCP reset).
set -u
S="$RRR_BUILD/rrr-server"
B="$RRR_BUILD/rrr-bench"
for p in "$S" "$B"; do [ -x "$p" ] || { echo "missing $p (make all)"; exit 1; }; done
command -v mount.nfs >/dev/null || [ -x /sbin/mount.nfs ] ||
	{ echo "mount.nfs missing (nfs-common: make deps-vm)"; exit 77; }
for t in rpc.nfsd rpc.mountd exportfs rpcbind; do
	command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] ||
		{ echo "$t missing (nfs-kernel-server, rpcbind: make deps-vm)"; exit 77; }
done
ADDR=${RRR_VM_ADDR:-10.0.2.15}
D=${RRR_VERBS_DEV:-rxe0}
OUT=${RRR_VM_RESULTS:-/tmp}
RES="$OUT/vm-nfs-servers.txt"
: > "$RES"
# TCG emulation moves a few MB/s: keep the volumes small.
MB=${RRR_VM_BENCH_MB:-16}     # MiB per 1 MiB-block run
MB4K=${RRR_VM_BENCH_MB_4K:-2} # MiB per 4 KiB-block run
MNT=/tmp/bench-mnt
mkdir -p "$MNT" /tmp/bench-state
# the side-by-side table as JSON (also when a step failed: what was measured)
write_json() {
	[ -f "$RES" ] || return 0
	awk -v mb="$MB" -v mb4k="$MB4K" 'BEGIN { printf "{\n  \"benchmark\": \"vm-nfs-servers\",\n  \"mib_1m_runs\": %d,\n  \"mib_4k_runs\": %d,\n  \"results\": [", mb, mb4k; sep = "" }
		{ printf "%s\n    {\"server\": \"%s\", \"op\": \"%s\", \"bs\": \"%s\", \"mb_per_s\": %s}", sep, $1, $2, $3, $4; sep = "," }
		END { printf "\n  ]\n}\n" }' "$RES" > "$OUT/vm-nfs-servers.json"
}
SPID=
cleanup() {
	write_json
	umount -f "$MNT" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	timeout 20 rpc.nfsd 0 2>/dev/null
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
now() { date +%s%N; }

# dd_bench SERVER: write then read with O_DIRECT, $MB MiB at 1 MiB, $MB4K at 4 KiB
dd_bench() {
	local srv=$1 bs cnt t0 t1 mbs mib
	for bs in 1M 4k; do
		case $bs in 1M) mib=$MB; cnt=$MB ;; 4k) mib=$MB4K; cnt=$((MB4K * 256)) ;; esac
		t0=$(now)
		dd if=/dev/zero of="$MNT/bench-$bs" bs=$bs count=$cnt oflag=direct status=none ||
			fail "$srv: dd write $bs"
		t1=$(now)
		mbs=$(awk -v b=$((mib << 20)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", b / (ns / 1e9) / 1e6 }')
		echo "$srv write $bs $mbs" | tee -a "$RES"
		t0=$(now)
		dd if="$MNT/bench-$bs" of=/dev/null bs=$bs iflag=direct status=none ||
			fail "$srv: dd read $bs"
		t1=$(now)
		mbs=$(awk -v b=$((mib << 20)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", b / (ns / 1e9) / 1e6 }')
		echo "$srv read $bs $mbs" | tee -a "$RES"
		rm -f "$MNT/bench-$bs"
	done
}

# 1. rrr-server (verbs, rxe0)
EXP=/tmp/bench-rrr
mkdir -p "$EXP"
"$S" --export "$EXP" --provider verbs --provider-opts "dev=$D" --listen "$ADDR" \
	--port 20049 --mount-port 20048 --state-dir /tmp/bench-state \
	--port-file /tmp/bench-ports --threads 2 > /tmp/bench-rrr-server.log 2>&1 &
SPID=$!
for _ in $(seq 1 100); do [ -s /tmp/bench-ports ] && break; sleep 0.1; done
[ -s /tmp/bench-ports ] || { cat /tmp/bench-rrr-server.log; fail "rrr-server did not start"; }
mount -t nfs -o vers=3,proto=rdma,port=20049,mountproto=tcp,mountport=20048,nolock \
	"$ADDR:$EXP" "$MNT" || fail "mount rrr-server"
dd_bench rrr-server
umount "$MNT" || fail "umount rrr-server"
timeout 200 "$B" io --provider verbs --provider-opts "dev=$D" --host "$ADDR" --port 20049 \
	--mount-port 20048 --export "$EXP" --modes rdma,nfs-tcp --sizes 4k,256k --qd 1,8 \
	--seconds 2 --rounds 1 --warmup 0.5 --json "$OUT/vm-io-rrr.json" | tee "$OUT/vm-io-rrr.txt"
kill -TERM "$SPID"; wait "$SPID"; SPID=

# 2. the kernel's nfsd over RDMA
KEXP=/srv/bench-kexp
mkdir -p "$KEXP" /var/lib/nfs /run/rpcbind /proc/fs/nfsd
mount -t tmpfs -o size=512m tmpfs "$KEXP"
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
echo "$KEXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=78)" > /etc/exports
rpcbind -w 2>/dev/null || rpcbind
exportfs -ra || fail "exportfs"
pgrep -x rpc.mountd >/dev/null || rpc.mountd -p 20048 -N 2 -N 4 || fail "rpc.mountd"
rpc.nfsd -N 4 2 || fail "rpc.nfsd"
grep -q rdma /proc/fs/nfsd/portlist || echo 'rdma 20049' > /proc/fs/nfsd/portlist ||
	fail "cannot add the rdma port to nfsd"
mount -t nfs -o vers=3,proto=rdma,port=20049,mountproto=tcp,mountport=20048,nolock \
	"$ADDR:$KEXP" "$MNT" || fail "mount knfsd"
dd_bench knfsd
umount "$MNT" || fail "umount knfsd"
# --no-remote-inv: with Send With Invalidate offered, knfsd's remote
# invalidation of a regmr registration puts the rxe QP in error
# ("rxe_invalidate_mr: mr->type (3) is wrong type" in dmesg) and every call
# fails with a connection reset (the known issue of tests.d/40).
timeout 200 "$B" io --provider verbs --provider-opts "dev=$D" --no-remote-inv --host "$ADDR" --port 20049 \
	--mount-port 20048 --tcp-port 2049 --export "$KEXP" --modes rdma,nfs-tcp \
	--sizes 4k,256k --qd 1,8 --seconds 2 --rounds 1 --warmup 0.5 --json "$OUT/vm-io-knfsd.json" |
	tee "$OUT/vm-io-knfsd.txt"
timeout 20 rpc.nfsd 0

echo "== kernel client, O_DIRECT, MB/s"
cat "$RES"
