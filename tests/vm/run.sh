#!/bin/bash
# tests/vm/run.sh [--bench] [--siw] [--shell-cmd CMD] BUILD
#
# Boot Debian's 6.1 kernel under qemu (TCG), create Soft-RoCE device rxe0 on
# the VM's eth0, and run the VM test scripts inside it against the host's own
# build (the host root is shared read-only over 9p, with a tmpfs overlay).
# With --siw the VM gets the kernel's soft-iWARP device siw0 instead of rxe0
# (siw.ko built out of tree from Debian's source by tests/vm/siw-build.sh,
# cached beside the kernel) and runs tests/vm/siw.d/*.sh (bench-siw.d with
# --bench); where siw cannot be built here the run says why and skips.
#
# Normal operation:
#   1. Cache (RRR_VM_CACHE, default build/vm-cache; never committed): the newest
#      linux-image-6.1.0-N-amd64 from apt (apt-get download + dpkg-deb -x), depmod.
#   2. Initramfs ($BUILD/vm/initramfs.cpio): busybox-static, the kernel modules the
#      VM needs plus their modules.dep closure (decompressed), loaded in order by
#      tests/vm/init.sh.
#   3. qemu -accel tcg, 2 vCPUs, 2 GiB, no network beyond a restricted user netdev;
#      a second writable 9p share ($BUILD/vm/results) brings back logs and statuses.
#   4. Inside: tests/vm/guest.sh creates rxe0, waits for it, runs every
#      tests/vm/tests.d/*.sh (or tests/vm/bench.d/*.sh with --bench) in name order,
#      each under its own timeout, and writes its exit status.
#
# Recovery: every step is bounded (RRR_VM_TIMEOUT for the whole VM, default 2400 s;
# RRR_VM_TEST_TIMEOUT per script, default 300 s; a script that needs longer says so
# in a header line `# vm-timeout: SECONDS` and gets the larger of the two). On any
# failure the console log and the failing scripts' logs are printed and the exit
# status is non-zero.
#
# Adding a test: drop an executable-or-not `NN-name.sh` into tests/vm/tests.d/.
# It runs inside the VM as root with cwd = repository root and these variables:
#   RRR_BUILD (absolute build dir), RRR_VM=1, RRR_VM_ADDR=10.0.2.15,
#   RRR_VERBS_DEV=rxe0, RRR_VM_RESULTS (writable dir that comes back to the host),
#   RRR_VM_SCRIPT_TIMEOUT (the seconds it has), and every RRR_VM_BENCH_* variable
#   of the host's environment (the bench scripts' knobs) and RRR_VM_NFILES
#   (60-nfs-exports.sh's large directory).
# Exit 0 = pass, 77 = skipped (print why), anything else = fail.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODE=tests
SIW=""
SHELL_CMD=""
while [ $# -gt 0 ]; do
	case "$1" in
	--bench) MODE=bench; shift ;;
	--siw) SIW=1; shift ;;
	--shell-cmd) SHELL_CMD="$2"; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
BUILD=${1:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
CACHE=${RRR_VM_CACHE:-$ROOT/build/vm-cache}
VMDIR="$BUILD/vm${SIW:+-siw}"
VM_TIMEOUT=${RRR_VM_TIMEOUT:-2400}
TEST_TIMEOUT=${RRR_VM_TEST_TIMEOUT:-300}

die() { echo "test-vm: $*" >&2; exit 1; }
log() { echo "test-vm: $*"; }

for t in qemu-system-x86_64 busybox cpio depmod dpkg-deb apt-get xz; do
	command -v "$t" >/dev/null || [ -x "/sbin/$t" ] || [ -x "/usr/sbin/$t" ] ||
		die "missing '$t' (run: make deps-vm)"
done
BUSYBOX=$(command -v busybox)
file -L "$BUSYBOX" 2>/dev/null | grep -q 'dynamically' &&
	die "$BUSYBOX is not static (install busybox-static)"
PATH=$PATH:/sbin:/usr/sbin

# ---------------------------------------------------------------- 1. kernel
mkdir -p "$CACHE" "$VMDIR" || die "cannot create $CACHE / $VMDIR"
KROOT="$CACHE/kernel"
# one download/extraction at a time when several builds share the cache
exec 9>"$CACHE/.lock"
flock -w 900 9 || die "cannot lock $CACHE/.lock"
if ! ls "$KROOT"/boot/vmlinuz-* >/dev/null 2>&1; then
	deb=$(ls "$CACHE"/linux-image-6.1.0-*-amd64_*.deb 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$deb" ]; then
		find_pkg() {
			apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
				awk '{print $1}' | sort -V | tail -n 1
		}
		pkg=$(find_pkg)
		if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
			log "no kernel package in the apt lists: apt-get update"
			timeout 300 apt-get update -qq || true
			pkg=$(find_pkg)
		fi
		[ -n "$pkg" ] || die "no linux-image-6.1.0-*-amd64 in apt (run apt-get update)"
		log "downloading $pkg into $CACHE"
		(cd "$CACHE" && timeout 600 apt-get download "$pkg" > "$CACHE/download.log" 2>&1) ||
			{ cat "$CACHE/download.log"; die "apt-get download $pkg failed"; }
		deb=$(ls "$CACHE"/linux-image-6.1.0-*-amd64_*.deb | sort -V | tail -n 1)
	fi
	rm -rf "$KROOT.tmp"
	dpkg-deb -x "$deb" "$KROOT.tmp" || die "dpkg-deb -x $deb failed"
	kv=$(ls "$KROOT.tmp/lib/modules" | head -n 1)
	depmod -b "$KROOT.tmp" "$kv" || die "depmod failed"
	mv "$KROOT.tmp" "$KROOT"
fi
flock -u 9
KVER=$(ls "$KROOT/lib/modules" | head -n 1)
KDEB=$(ls "$CACHE"/linux-image-6.1.0-*-amd64_*.deb 2>/dev/null | sort -V | tail -n 1)
SIWKO=""
if [ -n "$SIW" ]; then
	[ -n "$KDEB" ] || die "no kernel .deb left in $CACHE to build siw against"
	flock -w 1800 9 || die "cannot lock $CACHE/.lock"
	SIWKO=$("$ROOT/tests/vm/siw-build.sh" "$KROOT" "$KDEB" "$CACHE")
	src=$?
	flock -u 9
	if [ $src -eq 77 ]; then
		log "SKIP: siw cannot be built here (above); the siw cases did not run"
		exit 0
	fi
	[ $src -eq 0 ] && [ -f "$SIWKO" ] || die "building siw.ko failed"
	log "siw: $SIWKO"
fi
VMLINUZ="$KROOT/boot/vmlinuz-$KVER"
[ -f "$VMLINUZ" ] || die "no $VMLINUZ"

# ---------------------------------------------------------------- 2. initramfs
MODS="virtio_pci virtio_net 9pnet_virtio 9p overlay ib_uverbs rdma_ucm rdma_cm ib_cm iw_cm
      crc32_generic crc32_pclmul rdma_rxe sunrpc rpcrdma nfs nfsv3 nfsv4 nfsd veth
      loop crc32c_generic libcrc32c ext4 xfs btrfs"
IRD="$VMDIR/initramfs"
rm -rf "$IRD"
mkdir -p "$IRD"/{bin,dev,proc,sys,mnt/lower,mnt/upper,newroot,results,modules} || die mkdir
cp "$BUSYBOX" "$IRD/bin/busybox"
for a in sh mount umount mkdir insmod sleep cat echo poweroff ln ls chroot switch_root; do
	ln -sf busybox "$IRD/bin/$a"
done
MDEP="$KROOT/lib/modules/$KVER/modules.dep"
declare -A LOADED=()
ORDER=()
mod_path() { # name -> relative path in modules.dep
	local n=${1//-/_}
	awk -F: -v n="$n" '{ p=$1; b=p; sub(/.*\//,"",b); sub(/\.ko(\.xz|\.zst|\.gz)?$/,"",b);
		gsub(/-/,"_",b); if (b==n) { print p; exit } }' "$MDEP"
}
add_mod() { # relative path; dependencies first
	local p=$1 d
	[ -n "${LOADED[$p]:-}" ] && return
	LOADED[$p]=1
	for d in $(awk -F: -v p="$p" '$1==p { print $2 }' "$MDEP"); do add_mod "$d"; done
	ORDER+=("$p")
}
for m in $MODS; do
	p=$(mod_path "$m")
	if [ -z "$p" ]; then
		# built into the kernel (modules.builtin) or absent
		grep -q "/${m}.ko" "$KROOT/lib/modules/$KVER/modules.builtin" 2>/dev/null ||
			log "note: module $m not found"
		continue
	fi
	add_mod "$p"
done
: > "$IRD/modules/order"
for p in "${ORDER[@]}"; do
	b=$(basename "$p"); out=${b%.xz}; out=${out%.zst}; out=${out%.gz}
	case "$b" in
	*.xz) xz -dc "$KROOT/lib/modules/$KVER/$p" > "$IRD/modules/$out" ;;
	*.zst) zstd -dcq "$KROOT/lib/modules/$KVER/$p" > "$IRD/modules/$out" ;;
	*) cp "$KROOT/lib/modules/$KVER/$p" "$IRD/modules/$out" ;;
	esac || die "cannot unpack module $p"
	echo "$out" >> "$IRD/modules/order"
done
if [ -n "$SIWKO" ]; then # after ib_core and libcrc32c, which it needs
	cp "$SIWKO" "$IRD/modules/siw.ko" && echo siw.ko >> "$IRD/modules/order" ||
		die "cannot add siw.ko"
fi
cp "$ROOT/tests/vm/init.sh" "$IRD/init" && chmod 755 "$IRD/init"
(cd "$IRD" && find . | cpio -o -H newc --quiet) > "$VMDIR/initramfs.cpio" ||
	die "cpio failed"

# ---------------------------------------------------------------- 3. boot
RES="$VMDIR/results"
rm -rf "$RES" && mkdir -p "$RES" || die "cannot create $RES"
{
	echo "RRR_ROOT=$ROOT"
	echo "RRR_BUILD=$BUILD"
	echo "RRR_VM_MODE=$MODE"
	echo "RRR_VM_RDMA=${SIW:+siw}"
	echo "RRR_VM_TEST_TIMEOUT=$TEST_TIMEOUT"
	printf 'RRR_VM_SHELL_CMD=%q\n' "$SHELL_CMD"
	# the bench scripts' knobs travel into the VM
	for v in $(compgen -v RRR_VM_BENCH_) $(compgen -v RRR_VM_NFILES); do
		printf 'export %s=%q\n' "$v" "${!v}"
	done
} > "$RES/env"
CONSOLE="$VMDIR/console.log"
log "booting $KVER under qemu TCG (timeout ${VM_TIMEOUT}s; console: $CONSOLE)"
start=$(date +%s)
timeout --kill-after=10 "$VM_TIMEOUT" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -smp 2 -m 2048 \
	-nographic -no-reboot -monitor none -serial "file:$CONSOLE" \
	-kernel "$VMLINUZ" -initrd "$VMDIR/initramfs.cpio" \
	-append "console=ttyS0 panic=-1 loglevel=6 rdinit=/init" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$RES,mount_tag=results,security_model=none" \
	-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0 \
	</dev/null >"$VMDIR/qemu.log" 2>&1
qrc=$?
log "VM finished in $(( $(date +%s) - start ))s (qemu status $qrc)"

# ---------------------------------------------------------------- 4. verdict
fail=0
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	log "TIMEOUT: the VM ran past ${VM_TIMEOUT}s"; fail=1
fi
if [ ! -f "$RES/summary" ]; then
	log "no summary from the VM (it did not reach the tests)"; fail=1
else
	cat "$RES/summary"
	grep -q '^FAIL' "$RES/summary" && fail=1
	grep -q '^PASS' "$RES/summary" || { log "no test passed"; fail=1; }
fi
if [ "$fail" -ne 0 ]; then
	echo "----- qemu output"; cat "$VMDIR/qemu.log"
	echo "----- console log (last 200 lines of $CONSOLE)"; tail -n 200 "$CONSOLE"
	for f in "$RES"/*.log; do
		[ -f "$f" ] || continue
		n=$(basename "$f" .log)
		grep -q "^FAIL $n" "$RES/summary" 2>/dev/null || [ ! -f "$RES/summary" ] || continue
		echo "----- $f (last 150 lines)"; tail -n 150 "$f"
	done
	log "FAILED (logs in $RES)"
	exit 1
fi
log "all VM tests passed (logs in $RES)"
exit 0
