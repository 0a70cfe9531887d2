#!/usr/bin/env bash
# scripts/check-soft-layers.sh BUILD
#
# The soft provider's files call each other one way (run by `make test`,
# target test-includes, after scripts/check-layers-nm.sh). Every global
# symbol an object of transport/soft/ leaves undefined (nm -u) and another
# object of transport/soft/ defines is an edge from the first file to the
# second; the edges must form no loop: no two objects reference each
# other, and no longer cycle either (a -> b -> c -> a). The order the
# files keep is drawn in docs/soft-provider.md, "Files": device.c (the
# ops table) on top, then cm.c over cm_limits.c, qp.c, progress.c, the
# engines (rx.c over tx.c), qp_state.c and cq.c, with the codecs, the
# STag table and fault injection at the bottom. A lower file reports to a
# higher one through return values or the QP's one hook (qp->conn_lost),
# never by calling it.
#
# Exit 1 with one line per pair of objects that reference each other (the
# symbols each way), or with the objects of a longer loop.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
dir=$build/obj/transport/soft

mapfile -t objs < <(cd "$dir" 2> /dev/null && find . -maxdepth 1 -name '*.o' -printf '%f\n' | sort)
if ((${#objs[@]} == 0)); then
	echo "check-soft-layers: SKIP: no objects under $dir (build first: make lib)" >&2
	exit 0
fi
command -v nm > /dev/null || { echo "check-soft-layers: SKIP: no nm (binutils)" >&2; exit 0; }
command -v tsort > /dev/null || { echo "check-soft-layers: SKIP: no tsort (coreutils)" >&2; exit 0; }

declare -A def   # symbol -> object defining it
for o in "${objs[@]}"; do
	while read -r _ _ s; do
		def[$s]=${o%.o}
	done < <(nm --defined-only -g "$dir/$o" | awk 'NF == 3 && $2 ~ /[TDBRVW]/')
done

declare -A syms  # "a b" -> symbols a references in b
for o in "${objs[@]}"; do
	a=${o%.o}
	while read -r s; do
		b=${def[$s]:-}
		[[ -n $b && $b != "$a" ]] || continue
		syms["$a $b"]+=" $s"
	done < <(nm -u "$dir/$o" | awk '{print $NF}')
done

fails=0
for e in "${!syms[@]}"; do
	read -r a b <<< "$e"
	[[ $a < $b ]] || continue
	if [[ -n ${syms["$b $a"]:-} ]]; then
		echo "check-soft-layers: FAIL: $a.o and $b.o reference each other:" \
			"$a ->${syms[$e]}; $b ->${syms["$b $a"]}" >&2
		fails=$((fails + 1))
	fi
done

if ((fails == 0)) && ((${#syms[@]} > 0)); then
	if ! loop=$(printf '%s\n' "${!syms[@]}" | tsort 2>&1 > /dev/null); then
		echo "check-soft-layers: FAIL: the soft objects' references form a loop:" >&2
		echo "$loop" | sed 's/^/  /' >&2
		fails=1
	fi
fi

if ((fails > 0)); then
	echo "check-soft-layers: the soft provider's calls must run one way (docs/soft-provider.md, Files)" >&2
	exit 1
fi
echo "check-soft-layers: OK (${#syms[@]} edges between ${#objs[@]} soft objects, no loop)"
