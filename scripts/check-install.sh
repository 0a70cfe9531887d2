#!/usr/bin/env bash
# scripts/check-install.sh BUILD_DIR [make VAR=value ...]
#
# Checks `make install` the way a user outside the tree sees it:
#   1. installs into a temporary DESTDIR (PREFIX=/usr/local) with the build
#      directory BUILD_DIR (extra arguments are passed on to make, e.g.
#      LIB_DIRS=xdr PROGRAMS=);
#   2. checks the files: public headers, librrr.so.X.Y.Z with soname
#      librrr.so.X and the two symlinks, librrr.a, pkgconfig/rrr.pc;
#   3. builds a tiny program outside the tree with
#      `pkg-config --cflags --libs rrr` (PKG_CONFIG_SYSROOT_DIR maps the
#      DESTDIR), runs it against the installed shared library, then links
#      the same program statically against librrr.a and runs it again;
#   4. checks that the shared library exports only rrr_ symbols (no rrr__
#      internals, nothing else);
#   5. checks the operator's files: man pages (rendered by groff without
#      warnings), the systemd unit (paths filled in, `systemd-analyze verify`
#      clean when systemd-analyze is there), the sample config in
#      /etc/rrr/ (accepted by `rrr-server --check-config`, never overwritten
#      by a second install, kept by uninstall once edited);
#   5b. when the build has the fio engine (BUILD_DIR/rrr-fio.so): it is
#      installed as $prefix/lib/rrr/rrr-fio.so, exports only `ioengine`,
#      and, when fio is installed, fio loads it and lists its options;
#   6. runs `make uninstall` and checks that no rrr file is left behind.
# Exits non-zero with a message on the first failure.
set -euo pipefail
# shellcheck source=scripts/lib/staged.sh
. "$(dirname "$0")/lib/staged.sh"

staged_init install "$@"
shift
cc=${CC:-cc}
lib=$dest$prefix/lib
inc=$dest$prefix/include

fail() {
	echo "check-install: FAIL: $*" >&2
	exit 1
}

# 1. install
staged_make install "make install" "$@"

# 2. files
for h in "$top"/include/rrr/*.h; do
	[[ -f $inc/rrr/$(basename "$h") ]] || fail "header $(basename "$h") not installed"
done
real=$(cd "$lib" && ls librrr.so.*.*.* 2>/dev/null | head -n 1)
[[ -n $real ]] || fail "no versioned librrr.so.X.Y.Z in $prefix/lib"
major=${real#librrr.so.}
major=${major%%.*}
soname=$(readelf -d "$lib/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "librrr.so.$major" ]] || fail "soname is '$soname', want librrr.so.$major"
[[ $(readlink "$lib/librrr.so.$major") == "$real" ]] || fail "librrr.so.$major does not point at $real"
[[ $(readlink "$lib/librrr.so") == "librrr.so.$major" ]] || fail "librrr.so does not point at librrr.so.$major"
[[ -f $lib/librrr.a ]] || fail "librrr.a not installed"
[[ -f $lib/pkgconfig/rrr.pc ]] || fail "rrr.pc not installed"
grep -q "^libdir=$prefix/lib\$" "$lib/pkgconfig/rrr.pc" || fail "rrr.pc libdir is not $prefix/lib"
if grep -q '@[A-Z]*@' "$lib/pkgconfig/rrr.pc"; then fail "rrr.pc has unsubstituted @VARS@"; fi

# 3. a program outside the tree
mkdir -p "$tmp/app"
cat >"$tmp/app/main.c" <<'PROG'
#include <stdio.h>
#include <string.h>

#include <rrr/crc32c.h>
#include <rrr/oncrpc.h>
#include <rrr/rpcrdma.h>
#include <rrr/xdr.h>

int main(void)
{
	unsigned char buf[64];
	struct rrr_xdr x;
	struct rrr_rdma_cm_pd pd = {.remote_inv = true, .send_size = 4096, .recv_size = 8192}, back;
	uint32_t v = 0;

	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_ENCODE);
	if (rrr_xdr_put_u32(&x, 0xC0FFEE) || rrr_rpc_encode_call(&x, 1, 100003, 3, 0, NULL))
		return 1;
	rrr_xdr_init(&x, buf, sizeof(buf), RRR_XDR_DECODE);
	if (rrr_xdr_get_u32(&x, &v) || v != 0xC0FFEE)
		return 2;
	rrr_rdma_cm_pd_encode(buf, &pd);
	if (!rrr_rdma_cm_pd_decode(buf, RRR_RDMA_PD_LEN, &back) || back.recv_size != 8192)
		return 3;
	/* CRC32C is ISA-L inside: a static link needs -lisal from Libs.private */
	if (rrr_crc32c(0, "123456789", 9) != 0xE3069283u)
		return 4;
	puts("rrr-install-ok");
	return 0;
}
PROG
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig
command -v pkg-config >/dev/null || fail "pkg-config not found (apt-get install pkg-config)"
pkg-config --exists rrr || fail "pkg-config does not find rrr"
cflags=$(pkg-config --cflags rrr)
libs=$(pkg-config --libs rrr)
(cd "$tmp/app" && $cc -std=c11 -Wall -Werror $cflags main.c -o app-shared $libs) ||
	fail "could not build against the installed library ($cflags $libs)"
out=$(LD_LIBRARY_PATH=$lib "$tmp/app/app-shared") || fail "app (shared) exited $?"
[[ $out == rrr-install-ok ]] || fail "app (shared) printed '$out'"
# (ldd's output into a variable first: grep -q stops reading at the first
# match, and under pipefail the SIGPIPE of a longer ldd listing failed this)
deps=$(LD_LIBRARY_PATH=$lib ldd "$tmp/app/app-shared")
grep -q "librrr.so.$major => $lib/" <<<"$deps" ||
	fail "app (shared) did not resolve librrr.so.$major from the install"
# Static: the archive plus Libs.private.
privlibs=$(pkg-config --static --libs-only-l rrr | sed 's/-lrrr\b//')
(cd "$tmp/app" && $cc -std=c11 -Wall -Werror $cflags main.c -o app-static "$lib/librrr.a" $privlibs) ||
	fail "could not link statically against librrr.a ($privlibs)"
out=$("$tmp/app/app-static") || fail "app (static) exited $?"
[[ $out == rrr-install-ok ]] || fail "app (static) printed '$out'"

# 4. exported symbols
syms=$(nm -D --defined-only "$lib/$real" | awk '{print $3}' | sed 's/@.*//' | sort -u)
grep -qx rrr_xdr_init <<<"$syms" || fail "rrr_xdr_init is not exported"
grep -qx rrr_crc32c <<<"$syms" || fail "rrr_crc32c is not exported"
bad=$(grep -v '^rrr_[a-z0-9]' <<<"$syms" | grep -v '^RRR_[0-9]*$' || true)
[[ -z $bad ]] || fail "symbols other than rrr_* exported: $(echo $bad)"

# 5b. the fio engine
case $build in /*) bdir=$build ;; *) bdir=$top/$build ;; esac
if [[ -f $bdir/rrr-fio.so ]]; then
	eng=$lib/rrr/rrr-fio.so
	[[ -f $eng ]] || fail "fio engine not installed as $prefix/lib/rrr/rrr-fio.so"
	esyms=$(nm -D --defined-only "$eng" | awk '$2 != "w" {print $3}' | sort -u)
	[[ $esyms == ioengine ]] || fail "rrr-fio.so exports more than ioengine: $(echo $esyms)"
	if command -v fio >/dev/null; then
		fio --enghelp="$eng" 2>&1 | grep -q '^transport ' ||
			fail "fio does not load $eng (fio --enghelp=$eng)"
		fioeng="fio engine ok"
	else
		fioeng="fio engine installed (fio absent: not loaded)"
	fi
else
	fioeng="no fio engine in this build"
fi

# 5. man pages, unit, config (only when the programs were built and installed)
mandir=$dest$prefix/share/man
unit=$dest$prefix/lib/systemd/system/rrr-server.service
conf=$dest/etc/rrr/rrr-server.conf
extra=""
if [[ -x $dest$prefix/bin/rrr-server ]]; then
	for m in "$top"/man/*.[158]; do
		n=$(basename "$m")
		f=$mandir/man${n##*.}/$n
		[[ -f $f ]] || fail "man page $n not installed in $prefix/share/man/man${n##*.}"
		w=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "groff cannot render the installed $n"
		[[ -z $w ]] || fail "the installed $n renders with warnings: $w"
	done
	[[ -f $unit ]] || fail "rrr-server.service not installed in $prefix/lib/systemd/system"
	if grep -q '@[A-Z]*@' "$unit"; then fail "rrr-server.service has unsubstituted @VARS@"; fi
	grep -q "^ExecStart=$prefix/bin/rrr-server --config /etc/rrr/rrr-server.conf\$" "$unit" ||
		fail "rrr-server.service does not start $prefix/bin/rrr-server with /etc/rrr/rrr-server.conf"
	for k in ProtectSystem=strict CapabilityBoundingSet= NoNewPrivileges=yes StateDirectory=rrr-server \
		ExecReload=; do
		grep -q "^$k" "$unit" || fail "rrr-server.service lacks $k"
	done
	if command -v systemd-analyze >/dev/null; then
		# the unit as it would be in place: binaries of the DESTDIR, its man pages
		sed "s|$prefix/bin/|$dest$prefix/bin/|g" "$unit" >"$tmp/rrr-server.service"
		out=$(MANPATH=$mandir systemd-analyze verify "$tmp/rrr-server.service" 2>&1) ||
			fail "systemd-analyze verify rrr-server.service: $out"
		[[ -z $out ]] || fail "systemd-analyze verify rrr-server.service says: $out"
		extra+=", unit verified"
	fi
	[[ -f $conf ]] || fail "rrr-server.conf not installed in /etc/rrr"
	cmp -s "$conf" "$top/dist/rrr-server.conf" || fail "the installed rrr-server.conf is not the sample"
	out=$("$dest$prefix/bin/rrr-server" --config "$conf" --export "$tmp" --check-config 2>&1) ||
		fail "rrr-server --check-config refuses the sample config: $out"
	echo "# edited by the operator" >>"$conf"
	staged_make install "a second make install" "$@"
	grep -q "edited by the operator" "$conf" || fail "a second make install overwrote /etc/rrr/rrr-server.conf"
	staged_make uninstall "make uninstall" "$@"
	[[ -f $conf ]] || fail "make uninstall removed an edited /etc/rrr/rrr-server.conf"
	cp "$top/dist/rrr-server.conf" "$conf"
	extra+=", $(ls "$top"/man/*.[158] | wc -l) man pages, unit, config"
fi

# 6. uninstall
staged_make uninstall "make uninstall" "$@"
left=$(find "$dest" \( -name 'librrr*' -o -name rrr.pc -o -path '*/include/rrr*' -o -name 'rrr-*' \
	-o -path '*/etc/rrr*' \) -print)
[[ -z $left ]] || fail "left after uninstall: $left"

echo "check-install: ok ($real, soname librrr.so.$major, $(wc -l <<<"$syms") exported symbols$extra; $fioeng)"
