#!/usr/bin/env bash
# scripts/demo.sh BUILD_DIR - the rrr "main job" demo (make demo).
#
# Starts rrr-server on a temporary export with the soft provider (user-space
# iWARP over TCP: real RDMA semantics, no RDMA hardware or kernel module
# needed) on free ports, then with rrr-client: puts a multi-megabyte file of
# odd size from a buffer that is not page aligned, lists the export, gets
# the file back, and verifies checksums (CRC32C read-back in the client,
# SHA-256 of both local copies here). Prints the connection counters
# (registrations, hole splits, invalidations, chunks), stops the server with
# SIGTERM and shows its final counters. Exits non-zero on any failure.
set -euo pipefail

BUILD=${1:-build}
SERVER="$BUILD/rrr-server"
CLIENT="$BUILD/rrr-client"
SIZE=$(( 8 * 1024 * 1024 + 12345 ))   # 8 MiB + an odd tail

for p in "$SERVER" "$CLIENT"; do
	if [[ ! -x "$p" ]]; then
		echo "demo: $p is missing; build first (make all)" >&2
		exit 1
	fi
done

T=$(mktemp -d /tmp/rrr-demo.XXXXXX)
SPID=
cleanup() {
	if [[ -n "$SPID" ]] && kill -0 "$SPID" 2>/dev/null; then
		kill -TERM "$SPID" 2>/dev/null || true
		wait "$SPID" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/export" "$T/state"

step() { printf '\n== %s\n' "$*"; }

step "starting rrr-server (soft provider) on $T/export"
"$SERVER" --export "$T/export" --provider soft --port 0 --mount-port 0 \
	--state-dir "$T/state" --port-file "$T/ports" --threads 2 --no-root-squash >"$T/server.log" 2>&1 &
SPID=$!
for _ in $(seq 1 100); do
	[[ -s "$T/ports" ]] && break
	if ! kill -0 "$SPID" 2>/dev/null; then
		cat "$T/server.log" >&2
		echo "demo: rrr-server exited during start-up" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ ! -s "$T/ports" ]]; then
	cat "$T/server.log" >&2
	echo "demo: rrr-server did not start listening within 10 s" >&2
	exit 1
fi
read -r RDMA_PORT MOUNT_PORT _ < <(sed -E 's/rdma=([0-9]+) mount=([0-9]+) tcp=([0-9]+)/\1 \2 \3/' "$T/ports")
cat "$T/server.log"

# map_model=page_list: the soft device maps like a FRWR page-list device, so
# the 1000-byte split of each payload (it ends mid-page) is a hole that starts
# a new registration; max_fr_pages=64: each MR maps at most 256 KiB, so every
# 1 MiB READ/WRITE needs several registrations. Both show in the counters.
CL=("$CLIENT" --transport rdma --provider soft --provider-opts map_model=page_list,max_fr_pages=64
    --server 127.0.0.1 --port "$RDMA_PORT" --mount-port "$MOUNT_PORT"
    --export "$T/export" --timeout 30000)

step "making a $SIZE-byte test file"
head -c "$SIZE" /dev/urandom >"$T/source.bin"

step "put (8 calls in flight, 1 MiB WRITEs through read chunks, payload split into two buffers)"
"${CL[@]}" --qd 8 --split 1000 --verify put "$T/source.bin" demo.bin

step "ls"
"${CL[@]}" ls

step "get (1 MiB READs through write chunks) with --stats"
"${CL[@]}" --qd 8 --split 1000 --verify --stats get demo.bin "$T/back.bin" | tee "$T/get.out"

step "checking"
A=$(sha256sum <"$T/source.bin" | cut -d' ' -f1)
B=$(sha256sum <"$T/back.bin" | cut -d' ' -f1)
C=$(sha256sum <"$T/export/demo.bin" | cut -d' ' -f1)
echo "sha256 source   $A"
echo "sha256 on server $C"
echo "sha256 got back $B"
if [[ "$A" != "$B" || "$A" != "$C" ]]; then
	echo "demo: FAILED: checksums differ" >&2
	exit 1
fi
for k in registrations hole_splits local_inv remote_inv write_chunks; do
	grep -E "^  $k " "$T/get.out" >/dev/null || { echo "demo: counter $k missing" >&2; exit 1; }
done
regs=$(awk '$1=="registrations"{print $2}' "$T/get.out")
if [[ "${regs:-0}" -lt 9 ]]; then
	echo "demo: FAILED: expected the READs to register memory (registrations=$regs)" >&2
	exit 1
fi
echo "connection counters: registrations $regs," \
	"hole_splits $(awk '$1=="hole_splits"{print $2}' "$T/get.out")," \
	"invalidations local $(awk '$1=="local_inv"{print $2}' "$T/get.out")" \
	"remote $(awk '$1=="remote_inv"{print $2}' "$T/get.out")"

step "stopping rrr-server (SIGTERM)"
kill -TERM "$SPID"
rc=0
wait "$SPID" || rc=$?
SPID=
tail -n +2 "$T/server.log" | grep -v '^rrr-server: exporting' || true
if [[ $rc -ne 0 ]]; then
	echo "demo: FAILED: rrr-server exited with status $rc" >&2
	exit 1
fi
printf '\ndemo: OK - %d bytes put, listed and read back over RPC-over-RDMA (soft), checksums equal\n' "$SIZE"
