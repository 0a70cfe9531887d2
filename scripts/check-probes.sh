#!/usr/bin/env bash
# scripts/check-probes.sh BUILD_DIR [CC]
#
# Checks the USDT probes of the library (run by `make test`, target
# test-probes; common/probes.h, docs/tracing.md):
#   1. the built shared library carries a stapsdt note for every probe
#      of provider "rrr" that docs/tracing.md lists, and no other;
#   2. the static archive carries the same probes.
# Skips (exit 0, with the reason) when readelf is missing, or when the
# compiler has no <sys/sdt.h> (the probes then compile to nothing:
# apt-get install systemtap-sdt-dev, or make deps).
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 BUILD_DIR [CC]" >&2
	exit 2
fi
build=$1
cc=${2:-cc}
top=$(cd "$(dirname "$0")/.." && pwd)
doc=$top/docs/tracing.md
fail() {
	echo "check-probes: FAIL: $*" >&2
	exit 1
}
skip() {
	echo "check-probes: SKIP: $*"
	exit 0
}

command -v readelf >/dev/null || skip "readelf not found (apt-get install binutils)"
echo '#include <sys/sdt.h>' | "$cc" -E -x c - >/dev/null 2>&1 ||
	skip "$cc has no <sys/sdt.h>: the library was built without probes (apt-get install systemtap-sdt-dev)"
so=$(ls -t "$build"/librrr.so.*.*.* 2>/dev/null | head -n 1) # the newest: an old build dir may hold earlier versions
[[ -n $so ]] || fail "no shared library in $build (make all)"
[[ -f $doc ]] || fail "docs/tracing.md is missing"

notes() { # file -> sorted unique probe names of provider rrr
	readelf -n "$1" 2>/dev/null |
		awk '/Provider:/ { p = $2 } /Name:/ { if (p == "rrr") print $2 }' | sort -u
}
# probes documented: level-3 headings "### rrr:name"
documented=$(sed -n 's/^### rrr:\([a-z_0-9]*\).*/\1/p' "$doc" | sort -u)
[[ -n $documented ]] || fail "docs/tracing.md lists no probe (### rrr:NAME headings)"

have=$(notes "$so")
[[ -n $have ]] || fail "$so has no stapsdt notes of provider rrr although <sys/sdt.h> is there"
missing=$(comm -23 <(echo "$documented") <(echo "$have"))
extra=$(comm -13 <(echo "$documented") <(echo "$have"))
[[ -z $missing ]] || fail "documented in docs/tracing.md but not in $so: $missing"
[[ -z $extra ]] || fail "in $so but not documented in docs/tracing.md: $extra"
if [[ -f $build/librrr.a ]]; then
	ahave=$(notes "$build/librrr.a")
	[[ $ahave == "$have" ]] || fail "librrr.a and $(basename "$so") carry different probes"
fi
echo "check-probes: $(echo "$have" | wc -l) probes of provider rrr in $(basename "$so"), all documented"
