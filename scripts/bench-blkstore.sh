#!/usr/bin/env bash
# scripts/bench-blkstore.sh BUILD_DIR [ROUNDS]
#
# Server CPU per byte of the blkstore example, READ data copied into request
# memory (the default) against written from the disk's own memory
# (blkserver --zero-copy, rrr_svc_req_encode_payload_zc): installs BUILD_DIR
# into a temporary DESTDIR, builds examples/blkstore with pkg-config, then
# per round (ROUNDS, default 3, alternating which goes first) starts a
# one-thread blkserver on the soft provider, runs blkclient (64 MiB written
# at QD8, then read 4 more times: 384 MiB of READ and 64 MiB of WRITE data,
# all verified by the client), stops the server and reads the CPU time it
# used (user + sys, getrusage). Prints per round and the medians: server
# CPU ms, and ns of server CPU per KiB moved. On a shared machine compare
# medians of several rounds; the client's verification runs on the other
# core. Exit status 0, or 1 when a run failed.
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [ROUNDS]}
rounds=${2:-3}
make=${MAKE:-make}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rrr-blkbench.XXXXXX")
srv_pid=
trap '[[ -n $srv_pid ]] && kill -KILL "$srv_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
dest=$tmp/root
"$make" -C "$top" -s BUILD="$build" PREFIX=/usr/local DESTDIR="$dest" install >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; exit 1; }
export PKG_CONFIG_PATH=$dest/usr/local/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_LIBDIR=$dest/usr/local/lib/pkgconfig LD_LIBRARY_PATH=$dest/usr/local/lib
mkdir -p "$tmp/bin"
"$make" -s -C "$top/examples/blkstore" OUT="$tmp/bin" >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log" >&2; exit 1; }

# one MODE (copy | zero-copy): prints "cpu_ms"
run() {
	local flag=
	[[ $1 == zero-copy ]] && flag=--zero-copy
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
	timeout 300 "$tmp/bin/blkclient" --host 127.0.0.1 --port "$port" --mib 64 --read-passes 4 \
		>"$tmp/cli.out" 2>&1 || { cat "$tmp/cli.out" >&2; return 1; }
	kill -TERM "$srv_pid"
	wait "$srv_pid"
	srv_pid=
	awk '/cpu_ms/ {print $4 + $6}' "$tmp/srv.out"
}

declare -a copy zc
for ((i = 0; i < rounds; i++)); do
	if ((i % 2 == 0)); then
		copy+=("$(run copy)")
		zc+=("$(run zero-copy)")
	else
		zc+=("$(run zero-copy)")
		copy+=("$(run copy)")
	fi
	echo "round $((i + 1)): server cpu ms: copy ${copy[-1]}, zero-copy ${zc[-1]}"
done
python3 - "${copy[*]}" "${zc[*]}" <<'PY'
import statistics as st, sys
c = [float(x) for x in sys.argv[1].split()]
z = [float(x) for x in sys.argv[2].split()]
kib = (64 + 5 * 64) * 1024  # WRITE 64 MiB, READ 5 x 64 MiB
mc, mz = st.median(c), st.median(z)
print(f"median server cpu: copy {mc:.0f} ms ({mc * 1e6 / kib:.0f} ns/KiB), "
      f"zero-copy {mz:.0f} ms ({mz * 1e6 / kib:.0f} ns/KiB), zero-copy/copy {mz / mc:.2f}")
PY
