#!/usr/bin/env bash
# scripts/check-contracts.sh
#
# Every exported function declared in include/rrr/*.h has a contract
# comment (DEVELOPERS.md, Conventions: contract, errors, locking, ownership,
# whether it MAY BLOCK). Run by `make test` (target test-contracts).
#
# A declaration passes when the line right above it ends a /* ... */
# comment that is not a section divider ("/* --- name --- */"), or when it
# directly follows (no blank line) a declaration that passes: a group of
# related declarations (rsize/wsize) shares the comment above the group.
# Exit 1 with one line per declaration that has none.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

out=$(awk '
function flush_decl(ok) {
	ndecl++
	if (!ok) {
		printf "%s:%d: %s has no contract comment above it\n", FILENAME, dline, dname
		nbad++
	}
	last = ok ? "decl_ok" : "decl_bad"
}
FNR == 1 { last = "other"; in_comment = 0; in_decl = 0 }
{
	line = $0
	if (in_decl) {
		if (line ~ /;[[:space:]]*(\/\*.*)?$/) { in_decl = 0; flush_decl(decl_ok) }
		next
	}
	if (in_comment) {
		if (line ~ /\*\//) { in_comment = 0; last = "comment" }
		next
	}
	if (line ~ /^[[:space:]]*$/) { last = "blank"; next }
	if (line ~ /^[[:space:]]*\/\*/) {
		if (line ~ /\*\//) {
			# one-line comment; a divider "/* --- x --- */" says nothing
			last = (line ~ /^[[:space:]]*\/\* *-+/) ? "other" : "comment"
		} else {
			in_comment = 1
		}
		next
	}
	if (line ~ /^[A-Za-z_][A-Za-z0-9_ \t*]*[ \t*]rrr_[a-z0-9_]+\(/ &&
	    line !~ /^(typedef|static|extern "C"|#)/) {
		dname = line
		sub(/\(.*/, "", dname)
		sub(/.*[ \t*]/, "", dname)
		dline = FNR
		decl_ok = (last == "comment" || last == "decl_ok")
		if (line ~ /;[[:space:]]*(\/\*.*)?$/) flush_decl(decl_ok)
		else in_decl = 1
		next
	}
	last = "other"
}
END { printf "TOTAL %d %d\n", ndecl, nbad }
' include/rrr/*.h)

total=$(sed -n 's/^TOTAL \([0-9]*\) \([0-9]*\)$/\1 \2/p' <<<"$out")
read -r ndecl nbad <<<"$total"
if [[ ${nbad:-0} -gt 0 ]]; then
	grep -v '^TOTAL ' <<<"$out" | sed 's/^/check-contracts: FAIL: /' >&2
	echo "check-contracts: $nbad of $ndecl exported declarations lack a contract comment" >&2
	exit 1
fi
echo "check-contracts: OK ($ndecl exported declarations in include/rrr/*.h, each with its contract)"
