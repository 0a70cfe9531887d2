#!/usr/bin/env bash
# scripts/check-layers-nm.sh BUILD
#
# The layer rule of docs/design.md, checked at link level (run by `make
# test`, target test-includes, after scripts/check-includes.sh): the
# include check sees what a file names, this one what an object file
# actually references. Every global symbol an object of the library
# leaves undefined (nm -u) and another library object defines must be
# defined in the same layer or one below it:
#
#   layer   folders (objects under BUILD/obj/)
#   0       common/
#   1       xdr/
#   2       transport/ transport/soft/ transport/verbs/
#   3       client/        3       server/
#
# client/ and server/ are siblings: neither references the other, and the
# two providers never reference each other (each is reached through the
# ops table of transport/provider_impl.h). Symbols of the system and of
# other libraries are not ours and are skipped. Exit 1 with one line per
# crossing: the object, the symbol and the folder that defines it.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
obj=$build/obj

layer() {
	case $1 in
	common/*) echo 0 ;;
	xdr/*) echo 1 ;;
	transport/*) echo 2 ;;
	client/cli/* | server/fs/*) echo prog ;;
	client/* | server/*) echo 3 ;;
	*) echo prog ;;
	esac
}

# the library's objects: folders of LIB_SRCS (programs and tests are not the library)
mapfile -t objs < <(cd "$obj" && find common xdr transport client server -maxdepth 2 -name '*.o' \
	! -path 'client/cli/*' ! -path 'server/fs/*' ! -path 'transport/verbs/devcheck/*' 2>/dev/null | sort)
if ((${#objs[@]} == 0)); then
	echo "check-layers-nm: SKIP: no library objects under $obj (build first: make lib)" >&2
	exit 0
fi
command -v nm > /dev/null || { echo "check-layers-nm: SKIP: no nm (binutils)" >&2; exit 0; }

declare -A def
for o in "${objs[@]}"; do
	while read -r _ _ s; do
		def[$s]=$o
	done < <(nm --defined-only -g "$obj/$o" | awk 'NF == 3 && $2 ~ /[TDBRVW]/')
done

fails=0
refs=0
for o in "${objs[@]}"; do
	lo=$(layer "$o")
	dir=${o%/*}
	while read -r s; do
		d=${def[$s]:-}
		[[ -n $d ]] || continue
		refs=$((refs + 1))
		ld=$(layer "$d")
		ddir=${d%/*}
		bad=""
		if ((ld > lo)); then
			bad="a higher layer"
		elif ((ld == lo && lo == 3)) && [[ ${dir%%/*} != "${ddir%%/*}" ]]; then
			bad="a sibling layer"
		elif [[ $dir == transport/soft && $ddir == transport/verbs ]] ||
			[[ $dir == transport/verbs && $ddir == transport/soft ]]; then
			bad="the other provider"
		fi
		if [[ -n $bad ]]; then
			echo "check-layers-nm: FAIL: $o references $s, defined in $d ($bad; docs/design.md, Layers)" >&2
			fails=$((fails + 1))
		fi
	done < <(nm -u "$obj/$o" | awk '{print $NF}')
done

if ((fails > 0)); then
	echo "check-layers-nm: $fails reference(s) cross the layer rule" >&2
	exit 1
fi
echo "check-layers-nm: OK ($refs references between ${#objs[@]} library objects follow the layer rule)"
