#!/bin/bash
# scripts/ab-io.sh N BUILD_A BUILD_B [rrr-bench io options...]
#
# Before/after in one run: runs `rrr-bench io --seconds 1 --rounds 1
# OPTIONS` of two builds (each its own rrr-bench and rrr-server) N times
# each, alternating in ABBA order (A B, B A, A B, ...) so that neither build
# always runs first, and prints per cell the median IOPS of each build and
# B/A. On a shared machine the run-to-run spread of one build can exceed a
# small change: read B/A of the cells the change cannot touch (nfs-tcp for a
# provider change) as the noise floor of the same run.
#
#   git worktree add /tmp/before HEAD~1 && make -C /tmp/before
#   scripts/ab-io.sh 10 /tmp/before/build build --modes rdma,nfs-tcp --sizes 4k --qd 1
#
# The JSON of every run stays in a temporary directory whose name is
# printed (its medians of CPU per I/O and latency can be read from there).
# Needs python3. Exit status: 0, or 1 when a run failed (the others are still
# summarised), 2 on a usage error.
set -uo pipefail

usage() {
	echo "usage: $0 N BUILD_A BUILD_B [rrr-bench io options...]" >&2
	exit 2
}
[[ $# -ge 3 ]] || usage
N=$1 A=$2 B=$3
shift 3
[[ $N =~ ^[1-9][0-9]*$ ]] || usage
for d in "$A" "$B"; do
	[[ -x $d/rrr-bench && -x $d/rrr-server ]] ||
		{ echo "$0: $d has no rrr-bench and rrr-server (build it first)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "$0: needs python3" >&2; exit 2; }

D=$(mktemp -d /tmp/ab-io.XXXXXX)
failed=0
for ((i = 1; i <= N; i++)); do
	order="A B"
	((i % 2 == 0)) && order="B A"
	for t in $order; do
		dir=$A
		[[ $t == B ]] && dir=$B
		if ! "$dir/rrr-bench" io --server "$dir/rrr-server" --seconds 1 --rounds 1 "$@" \
			--json "$D/$t.$i.json" >"$D/$t.$i.txt" 2>&1; then
			echo "$0: run $i of $t failed (see $D/$t.$i.txt)" >&2
			failed=1
		fi
	done
done

python3 - "$D" "$N" "$A" "$B" "$*" <<'EOF'
import glob, json, statistics as st, sys
d, n, a, b, args = sys.argv[1:]
cells = {}
for f in sorted(glob.glob(d + '/*.json')):
    t = f.rsplit('/', 1)[1].split('.')[0]
    try:
        res = json.load(open(f))['results']
    except (OSError, ValueError, KeyError):
        continue
    for r in res:
        k = (r['op'], r['size'], r['qd'], r['mode'])
        cells.setdefault(k, {'A': [], 'B': []})[t].append(r['iops'])
print(f"# {n} ABBA alternations of: rrr-bench io --seconds 1 --rounds 1 {args}")
print(f"# A = {a}, B = {b}; medians of IOPS; runs in {d}")
print(f"{'op':6}{'size':>9}{'qd':>4}  {'mode':12}{'A':>10}{'B':>10}{'B/A':>7}")
for k in sorted(cells):
    va, vb = cells[k]['A'], cells[k]['B']
    if not va or not vb:
        continue
    ma, mb = st.median(va), st.median(vb)
    print(f"{k[0]:6}{k[1]:>9}{k[2]:>4}  {k[3]:12}{ma:10.0f}{mb:10.0f}{mb / ma if ma else 0:7.2f}")
EOF
exit $failed
