#!/bin/bash
# scripts/syscalls-per-io.sh RRR_BENCH OP MODE [rrr-bench io options...]
#
# System calls per I/O of the two busiest threads (the client's progress
# thread and the server worker) over one `rrr-bench io` run of 4 KiB at
# QD1 under strace -f. Counts, unlike times, do not depend on the load of
# the machine, so they compare builds and transports on a noisy host
# (docs/benchmarks.md, "rrr-bench io"). Needs strace.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 RRR_BENCH read|write MODE [io options...]" >&2; exit 2; }
bench=$1 op=$2 mode=$3
shift 3
command -v strace >/dev/null || { echo "$0: strace is not installed (apt-get install strace)" >&2; exit 1; }
f=$(mktemp)
trap 'rm -f "$f" "$f.c"' EXIT
out=$(timeout 120 strace -f -o "$f" "$bench" io "$@" --modes "$mode" --sizes 4k --qd 1 --ops "$op" \
	--seconds 1 --rounds 1 --warmup 0.1 2>&1 | grep "^$op")
ops=$(echo "$out" | awk -v m="$mode" '{for (i = 1; i < NF; i++) if ($i == m) {print $(i + 1); exit}}')
[ -n "$ops" ] || { echo "$0: no result line from $bench" >&2; exit 1; }
# the run lasts 1.1 s (warm-up included) at about $ops I/O per second
awk '{split($2, a, "("); if (a[1] !~ /resumed|<\.\.\./) print $1, a[1]}' "$f" | sort | uniq -c > "$f.c"
echo "# $bench io $* --modes $mode --sizes 4k --qd 1 --ops $op: $ops IOPS under strace"
for p in $(awk '{c[$2] += $1} END {for (p in c) print c[p], p}' "$f.c" | sort -rn | head -2 | awk '{print $2}'); do
	awk -v p="$p" -v o="$ops" '$2 == p {t += $1; if ($1 > o / 8) s = s sprintf(" %s=%.2f", $3, $1 / (o * 1.1))}
		END {printf "thread %s: %.1f per I/O:%s\n", p, t / (o * 1.1), s}' "$f.c"
done
