# vm-timeout: 900
# Path-handle mode (file systems that give no kernel handles) is as correct
# as kernel-handle mode under the kernel client's workloads. Two exports
# that give no handles, each served by rrr-server and mounted by the Linux
# NFSv3/RDMA client:
#   ovl-9p: a directory of the VM's own root, an overlayfs whose lower layer
#           is the host's root over 9p (as in VMs and containers with 9p or
#           virtiofs lowers) and whose upper layer is a tmpfs;
#   ovl-noexport: an overlayfs of two tmpfs layers with nfs_export=off.
# On each: fio randrw with verify on one file, untar of a source tree and
# diff -r, the same tar extracted again over the existing files (tar
# unlinks, then creates with O_EXCL), a directory rename, and a server
# restart under the live mount.
set -u
. "$RRR_ROOT/tests/vm/nfs-lib.sh"
need_built "$S"
need_mount_nfs
DEV=${RRR_VERBS_DEV:-rxe0}
W=/tmp/ph
MNT=$W/mnt
mkdir -p "$W/state" "$MNT"
SPID=
fail() {
	echo "FAIL: $*"
	tail -n 40 "$W/server.log"
	umount -f "$MNT" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	exit 1
}
start() { # EXPORT
	rm -f "$W/ports"
	# the ports of the first start again after a restart; free ones at first
	# (an earlier script's rpc.mountd may hold 20048)
	"$S" --export "$1" --provider verbs --provider-opts "dev=$DEV" --listen "$ADDR" \
		--port "${RP:-0}" --mount-port "${MP:-0}" --state-dir "$W/state" \
		--port-file "$W/ports" --threads 2 --no-root-squash >>"$W/server.log" 2>&1 &
	SPID=$!
	for _ in $(seq 1 200); do [ -s "$W/ports" ] && break; sleep 0.1; done
	[ -s "$W/ports" ] || fail "rrr-server did not start"
	RP=$(sed -n 's/.*rdma=\([0-9]*\).*/\1/p' "$W/ports")
	MP=$(sed -n 's/.*mount=\([0-9]*\).*/\1/p' "$W/ports")
}
stop() {
	kill -TERM "$SPID"
	wait "$SPID" || fail "rrr-server exit status $?"
	SPID=
}
tar -C /usr/include -cf "$W/tree.tar" linux asm-generic || fail "tar on the VM side"
head -c $((8 << 20)) /dev/urandom > "$W/big.bin"

run_case() { # NAME EXPORT
	local name=$1 exp=$2
	echo "== $name: $exp"
	: > "$W/server.log"
	rm -rf "$W/state"/*
	RP= MP=
	start "$exp"
	grep -q 'file handles: path' "$W/server.log" || { cat "$W/server.log"; fail "$name: not in path-handle mode"; }
	mount -t nfs -o "vers=3,proto=rdma,port=$RP,mountproto=tcp,mountport=$MP,nolock" \
		"$ADDR:$exp" "$MNT" || fail "$name: mount"
	if command -v fio >/dev/null; then
		timeout -k 5 300 fio --name=ph --directory="$MNT" --filename=fio.dat --rw=randrw \
			--bsrange=4k-256k --iodepth=8 --ioengine=libaio --direct=1 --size=16m \
			--verify=crc32c --verify_fatal=1 --output-format=terse >"$W/fio.terse" \
			2>"$W/fio.err" || { tail "$W/fio.err"; fail "$name: fio verify"; }
		echo "$name: fio randrw verify OK"
	fi
	mkdir "$MNT/tree" || fail "$name: mkdir tree"
	tar -C "$MNT/tree" -xf "$W/tree.tar" 2>"$W/tar.err" || { head "$W/tar.err"; fail "$name: untar"; }
	diff -r /usr/include/linux "$MNT/tree/linux" >/dev/null || fail "$name: diff linux"
	diff -r /usr/include/asm-generic "$MNT/tree/asm-generic" >/dev/null || fail "$name: diff asm-generic"
	echo "$name: untar + diff OK"
	tar -C "$MNT/tree" -xf "$W/tree.tar" 2>"$W/tar.err" || { head "$W/tar.err"; fail "$name: untar over existing files"; }
	diff -r /usr/include/linux "$MNT/tree/linux" >/dev/null || fail "$name: diff after the second untar"
	echo "$name: extraction over existing files OK"
	mv "$MNT/tree/linux" "$MNT/tree/linux-moved" || fail "$name: rename a directory"
	diff -r /usr/include/linux "$MNT/tree/linux-moved" >/dev/null || fail "$name: diff after rename"
	cp "$W/big.bin" "$MNT/keep.bin" && sync || fail "$name: cp"
	stop
	start "$exp"
	echo 3 > /proc/sys/vm/drop_caches
	timeout 120 cmp "$W/big.bin" "$MNT/keep.bin" || fail "$name: read after the restart"
	timeout 120 diff -r /usr/include/asm-generic "$MNT/tree/asm-generic" >/dev/null ||
		fail "$name: diff after the restart"
	echo "$name: rename and server restart OK"
	rm -rf "${MNT:?}"/* || fail "$name: rm -r"
	umount "$MNT" || fail "$name: umount"
	stop
	grep -E 'stale|STALE' "$W/server.log" | head -5
}

# 1. a directory of the VM's root overlay (9p lower, tmpfs upper)
mkdir -p /var/tmp/rrr-ph-export
run_case ovl-9p /var/tmp/rrr-ph-export

# 2. overlayfs of two tmpfs layers without nfs_export
O=$W/ovl
mkdir -p "$O/l" "$O/u" "$O/w" "$O/m"
mount -t tmpfs -o size=256m tmpfs "$O/l" && mkdir -p "$O/l/export" || fail "tmpfs lower"
mount -t tmpfs -o size=256m tmpfs "$O/u" && mkdir -p "$O/u/u" "$O/u/w" || fail "tmpfs upper"
mount -t overlay -o "lowerdir=$O/l,upperdir=$O/u/u,workdir=$O/u/w,nfs_export=off,index=off" \
	overlay "$O/m" || fail "overlay mount"
run_case ovl-noexport "$O/m/export"
umount "$O/m" "$O/u" "$O/l"
echo "path-handle mode on overlays: OK"
