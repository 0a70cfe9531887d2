#!/usr/bin/env bash
# scripts/bench-blkstore.sh BUILD_DIR [ROUNDS]
#
# Server CPU per byte of the blkstore example, data copied (the default:
# WRITE data pulled into library memory and copied into the disk, READ
# data copied into request memory) against zero-copy (blkserver
# --zero-copy: WRITE data pulled straight into the disk through a place
# function, rrr_svc_set_place; READ data written from the disk's own memory,
# rrr_svc_req_encode_payload_zc): installs BUILD_DIR into a temporary
# DESTDIR, builds examples/blkstore with pkg-config, then per round (ROUNDS,
# default 3, alternating which goes first) and per workload starts a
# one-thread blkserver on the soft provider, runs blkclient, stops the
# server and reads the CPU time it used (user + sys, getrusage). Workloads:
# "read" (64 MiB written at QD8, then read 4 more times: 64 MiB of WRITE
# and 320 MiB of READ data) and "write" (4 passes of 64 MiB, each written
# then read: 256 MiB each way), all verified by the client. Prints per
# round and the medians: server CPU ms, and ns of server CPU per KiB moved.
# On a shared machine compare medians of several rounds; the client's
# verification runs on the other core. Exit status 0, or 1 when a run
# failed.
set -euo pipefail
# shellcheck source=scripts/lib/staged.sh
. "$(dirname "$0")/lib/staged.sh"

build=${1:?usage: $0 BUILD_DIR [ROUNDS]}
rounds=${2:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rrr-blkbench.XXXXXX")
srv_pid=
trap '[[ -n $srv_pid ]] && kill -KILL "$srv_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
dest=$tmp/root
prefix=/usr/local
fail() {
	echo "bench-blkstore: $*" >&2
	exit 1
}
staged_make install "make install"
use_staged
build_example blkstore

# one MODE (copy | zero-copy) of one WORKLOAD (read | write): prints "cpu_ms"
run() {
	local flag= work=(--read-passes 4)
	[[ $1 == zero-copy ]] && flag=--zero-copy
	[[ $2 == write ]] && work=(--passes 4)
	"$tmp/bin/blkserver" --host 127.0.0.1 --rdma-port 0 --tcp-port - --threads 1 $flag \
		>"$tmp/srv.out" 2>&1 &
	srv_pid=$!
	for _ in $(seq 300); do
		grep -q "rdma port" "$tmp/srv.out" 2>/dev/null && break
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.1
	done
	local port
	port=$(awk '/rdma port/ {print $4}' "$tmp/srv.out")
	[[ -n $port ]] || { echo "blkserver did not start:" >&2; cat "$tmp/srv.out" >&2; return 1; }
	timeout 300 "$tmp/bin/blkclient" --host 127.0.0.1 --port "$port" --mib 64 "${work[@]}" \
		>"$tmp/cli.out" 2>&1 || { cat "$tmp/cli.out" >&2; return 1; }
	kill -TERM "$srv_pid"
	wait "$srv_pid"
	srv_pid=
	awk '/cpu_ms/ {print $4 + $6}' "$tmp/srv.out"
}

for work in read write; do
	copy=() zc=()
	for ((i = 0; i < rounds; i++)); do
		if ((i % 2 == 0)); then
			copy+=("$(run copy $work)")
			zc+=("$(run zero-copy $work)")
		else
			zc+=("$(run zero-copy $work)")
			copy+=("$(run copy $work)")
		fi
		echo "$work round $((i + 1)): server cpu ms: copy ${copy[-1]}, zero-copy ${zc[-1]}"
	done
	python3 - "$work" "${copy[*]}" "${zc[*]}" <<'PY'
import statistics as st, sys
work = sys.argv[1]
c = [float(x) for x in sys.argv[2].split()]
z = [float(x) for x in sys.argv[3].split()]
# KiB moved: read = WRITE 64 MiB + READ 5 x 64 MiB; write = 4 x (64 + 64) MiB
kib = (64 + 5 * 64) * 1024 if work == "read" else 4 * 128 * 1024
mc, mz = st.median(c), st.median(z)
print(f"{work}: median server cpu: copy {mc:.0f} ms ({mc * 1e6 / kib:.0f} ns/KiB), "
      f"zero-copy {mz:.0f} ms ({mz * 1e6 / kib:.0f} ns/KiB), zero-copy/copy {mz / mc:.2f}")
PY
done
