#!/usr/bin/env bash
# scripts/check-help.sh
#
# `make help` names every target a user can type: each target defined in
# the Makefile (a rule whose name is a plain word, not a file pattern) must
# appear in help's output as "  NAME ". Run by `make test` (test-help).
# Exit 1 with the missing names.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

help=$(make -s --no-print-directory help)
missing=()
while IFS= read -r t; do
	[[ $help == *" $t "* || $help == *" $t"$'\n'* ]] || missing+=("$t")
done < <(grep -oE '^[a-z][a-zA-Z0-9_-]*:' Makefile | tr -d : | sort -u)

if ((${#missing[@]})); then
	echo "check-help: FAIL: make help does not name: ${missing[*]} (add a line to the help target)" >&2
	exit 1
fi
echo "check-help: OK (make help names every target)"
