#!/usr/bin/env bash
# scripts/check-man.sh BUILD_DIR
#
# Checks the man pages in man/ (run by `make test`, target test-man):
#   1. groff -man -ww renders each page without a warning; mandoc -Tlint
#      finds nothing above style level when mandoc is installed;
#   2. each program's page documents every option its --help prints (for
#      rrr-bench: every subcommand's --help), so the two stay in sync;
#   3. the pages of rrr-server(8) and rrr-server.conf(5) name every key of
#      the sample config dist/rrr-server.conf.
# Exits non-zero with a message on the first failure.
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
build=$1
top=$(cd "$(dirname "$0")/.." && pwd)
man=$top/man
fail() {
	echo "check-man: FAIL: $*" >&2
	exit 1
}
command -v groff >/dev/null || fail "groff not found (apt-get install groff-base)"

pages=("$man"/*.[158])
[[ ${#pages[@]} -ge 5 ]] || fail "expected at least 5 pages in man/, found ${#pages[@]}"

# 1. warnings
for p in "${pages[@]}"; do
	w=$(groff -man -Tutf8 -ww -z "$p" 2>&1) || fail "groff failed on $(basename "$p"): $w"
	[[ -z $w ]] || fail "groff warnings in $(basename "$p"):"$'\n'"$w"
	if command -v mandoc >/dev/null; then
		w=$(mandoc -Tlint -Wwarning "$p" 2>&1 || true)
		[[ -z $w ]] || fail "mandoc -Tlint in $(basename "$p"):"$'\n'"$w"
	fi
done

# Plain text of a page: no hyphenation, long lines, no overstriking.
text() {
	groff -man -Tascii -rHY=0 -rLL=250n -P-c -P-b -P-u "$1" 2>/dev/null | sed 's/.\x08//g'
}

# 2. --help vs the page
check_opts() { # PAGE HELPTEXT
	local page=$1 help=$2 t o missing=""
	t=$(text "$man/$page")
	for o in $(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u); do
		grep -qF -- "$o" <<<"$t" || missing+=" $o"
	done
	[[ -z $missing ]] || fail "$page does not document:$missing (see the program's --help)"
}
for prog in rrr-server rrr-client rrr-devcheck rrr-bench; do
	[[ -x $build/$prog ]] || fail "$build/$prog not built"
done
check_opts rrr-server.8 "$("$build"/rrr-server --help)"
check_opts rrr-client.1 "$("$build"/rrr-client --help)"
check_opts rrr-devcheck.8 "$("$build"/rrr-devcheck --help)"
bench_help=$("$build"/rrr-bench --help 2>&1 || true)
for c in raw reg io crc; do
	grep -q "^  $c " <<<"$bench_help" || fail "rrr-bench --help no longer lists '$c'"
	bench_help+=$'\n'$("$build"/rrr-bench "$c" --help 2>&1 || true)
done
for c in $(awk '/^  [a-z]+ /{print $1}' <<<"$("$build"/rrr-bench --help 2>&1 || true)"); do
	grep -qw -- "$c" <<<"$(text "$man/rrr-bench.1")" || fail "rrr-bench.1 does not document the command '$c'"
done
check_opts rrr-bench.1 "$bench_help"

# 3. config keys
conf_text=$(text "$man/rrr-server.conf.5")
for k in $(sed -n 's/^#\{0,1\}\([a-z][a-z-]*\) = .*/\1/p' "$top/dist/rrr-server.conf" | sort -u); do
	grep -qF -- "$k" <<<"$conf_text" || fail "rrr-server.conf.5 does not document the key '$k'"
done

echo "check-man: ok (${#pages[@]} pages, options in sync with --help)"
