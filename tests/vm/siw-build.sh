#!/bin/bash
# tests/vm/siw-build.sh KROOT KDEB CACHE - build the kernel's soft-iWARP
# module (siw.ko) for the test VM's kernel, out of tree, and print its path.
#
# Debian builds its kernels with CONFIG_RDMA_SIW unset, but the driver's
# source is in Debian's linux-source-6.1 and builds against the headers of
# the VM's kernel in about a minute:
#   1. headers: linux-headers-$KVER, installed with apt-get (root) when
#      missing; their package version must equal the kernel image's (KDEB).
#   2. source: linux-source-6.1 (apt-get download), of which only
#      drivers/infiniband/sw/siw is unpacked.
#   3. make -C /usr/src/linux-headers-$KVER M=<dir> CONFIG_RDMA_SIW=m modules
#      (the driver's own Makefile serves as the Kbuild file), then the
#      module's vermagic is checked against the VM kernel's iw_cm.ko.
# The result is cached as CACHE/siw/KVER_VERSION/siw.ko and rebuilt when the
# kernel package changes.
#
# Exit 0: the path on stdout. Exit 77: it cannot be built here (the reason on
# stderr: no headers for that kernel, no source package, not root); the VM
# then runs without the siw cases and says so. Anything else: a real failure.
set -u
KROOT=$1 KDEB=$2 CACHE=$(cd "$3" && pwd) || exit 1
say() { echo "siw-build: $*" >&2; }
skip() { say "$* - the siw cases are skipped"; exit 77; }

KVER=$(ls "$KROOT/lib/modules" | head -n 1)
KPKGVER=$(dpkg-deb -f "$KDEB" Version 2>/dev/null) || skip "cannot read $KDEB"
OUT="$CACHE/siw/${KVER}_$KPKGVER"
if [ -f "$OUT/siw.ko" ]; then
	echo "$OUT/siw.ko"
	exit 0
fi
HDR=/usr/src/linux-headers-$KVER
hver() { dpkg-query -W -f='${Version}' "linux-headers-$KVER" 2>/dev/null; }
if [ "$(hver)" != "$KPKGVER" ]; then
	[ "$(id -u)" -eq 0 ] || skip "linux-headers-$KVER $KPKGVER is not installed (run as root: apt-get install linux-headers-$KVER)"
	say "installing linux-headers-$KVER"
	DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends \
		"linux-headers-$KVER=$KPKGVER" >"$CACHE/siw-headers.log" 2>&1 ||
		{ tail -n 5 "$CACHE/siw-headers.log" >&2; skip "cannot install linux-headers-$KVER=$KPKGVER"; }
fi
[ -d "$HDR" ] || skip "no $HDR"

SRC="$CACHE/siw/src"
mkdir -p "$SRC" || exit 1
deb=$(ls "$SRC"/linux-source-6.1_*.deb 2>/dev/null | sort -V | tail -n 1)
if [ -z "$deb" ]; then
	say "downloading linux-source-6.1"
	(cd "$SRC" && timeout 900 apt-get download linux-source-6.1 >"$SRC/download.log" 2>&1) ||
		{ tail -n 5 "$SRC/download.log" >&2; skip "cannot download linux-source-6.1"; }
	deb=$(ls "$SRC"/linux-source-6.1_*.deb | sort -V | tail -n 1)
fi
sver=$(dpkg-deb -f "$deb" Version)
[ "$sver" = "$KPKGVER" ] ||
	say "note: linux-source-6.1 is $sver, the kernel $KPKGVER (siw rarely changes between them)"

B=$(mktemp -d "$CACHE/siw/build.XXXXXX") || exit 1
trap 'rm -rf "$B"' EXIT
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz | xz -dc |
	tar -x -C "$B" --strip-components=5 --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*' ||
	{ say "cannot unpack the siw source from $deb"; exit 1; }
[ -f "$B/siw_main.c" ] || { say "no siw_main.c in $deb"; exit 1; }
say "building siw.ko for $KVER"
make -C "$HDR" M="$B" CONFIG_RDMA_SIW=m modules >"$B/build.log" 2>&1 ||
	{ tail -n 30 "$B/build.log" >&2; say "the siw build failed"; exit 1; }
want=$(find "$KROOT/lib/modules/$KVER" -name 'iw_cm.ko*' | head -n 1)
if [ -n "$want" ]; then
	case "$want" in
	*.xz) wv=$(xz -dc "$want" > "$B/iw_cm.ko" && modinfo -F vermagic "$B/iw_cm.ko") ;;
	*) wv=$(modinfo -F vermagic "$want") ;;
	esac
	gv=$(modinfo -F vermagic "$B/siw.ko")
	[ "$wv" = "$gv" ] || { say "vermagic '$gv' is not the kernel's '$wv'"; exit 1; }
fi
mkdir -p "$OUT" && cp "$B/siw.ko" "$OUT/siw.ko" || exit 1
echo "$OUT/siw.ko"
