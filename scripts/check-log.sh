#!/usr/bin/env bash
# scripts/check-log.sh
#
# The library never prints on its own (run by `make test`, target
# test-log): lines for an operator go through the log hook of <rrr/log.h>
# (rrr__log() in common/rrr_impl.h), which an embedding program redirects.
# Fails when a library source (common/ xdr/ transport/ transport/soft/
# transport/verbs/ server/*.c client/*.c) writes to stdout or stderr with
# printf, puts, perror or an f*printf/fputs/fputc/fwrite on stdout/stderr.
# Printing to a FILE the caller passes (rrr_xprt_stats_print) is fine.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

pat='(^|[^a-z_])(printf|vprintf|puts|perror)[[:space:]]*\(|(fprintf|vfprintf|fputs|fputc|fwrite|dprintf)[[:space:]]*\([^;]*(stderr|stdout|[^a-z_]2[[:space:]]*,)|write[[:space:]]*\([[:space:]]*[12][[:space:]]*,'
# common/log.c is the default handler: the one place that writes to stderr.
hits=$(grep -nE "$pat" common/*.c xdr/*.c transport/*.c transport/soft/*.c \
	transport/verbs/*.c server/*.c client/*.c | grep -v '^common/log\.c:' || true)
if [[ -n $hits ]]; then
	sed 's/^/check-log: FAIL: /' <<<"$hits" >&2
	echo "check-log: the library prints; use rrr__log() (common/rrr_impl.h) instead" >&2
	exit 1
fi
echo "check-log: OK (the library writes no line of its own outside the log hook)"
