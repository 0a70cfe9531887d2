#!/usr/bin/env bash
# scripts/test-blkstore.sh BUILD_DIR [make VAR=value ...]
#
# The blkstore example (examples/blkstore) as a user outside the tree sees it:
#   1. `make install` into a temporary DESTDIR (PREFIX=/usr/local) from
#      BUILD_DIR (extra arguments go to make);
#   2. build examples/blkstore with its own Makefile, only through
#      `pkg-config --cflags --libs rrr`, out of tree;
#   3. run blkserver (soft provider, 64 MiB disk, ephemeral ports) and
#      blkclient: 16 MiB written at QD8 and read back into scatterlists
#      with holes, verified - completions on the library's thread with the
#      gaps registration model, on the client's own poll loop with the
#      page-list model, and over TCP; chunks and registrations must show
#      in the client's counters;
#   4. a restart: the client makes a pass, then the server is killed
#      (SIGKILL) and started again on the same port; the client must hear
#      of it through its connection events and the boot verifier, write
#      again and verify;
#   5. stop the server with SIGTERM; it must exit 0 with its counters.
# Every wait is bounded. Exits non-zero with a message on the first failure.
set -euo pipefail
# shellcheck source=scripts/lib/staged.sh
. "$(dirname "$0")/lib/staged.sh"

staged_init blkstore "$@"
shift

fail() {
	echo "test-blkstore: FAIL: $*" >&2
	for f in "$tmp"/*.out "$tmp"/*.err; do
		[[ -f $f ]] && { echo "  $f:" >&2; tail -n 30 "$f" | sed 's/^/  | /' >&2; }
	done
	exit 1
}

# 1. install
staged_make install "make install" "$@"

# 2. build against the installed library only
use_staged
build_example blkstore CFLAGS="-O2 -g -Werror"

# start_server [RDMA_PORT [TCP_PORT]]: sets srv_pid, rport, tport
start_server() {
	"$tmp/bin/blkserver" --host 127.0.0.1 --rdma-port "${1:-0}" --tcp-port "${2:-0}" \
		--threads 2 >"$tmp/server.out" 2>"$tmp/server.err" &
	srv_pid=$!
	wait_ports "$srv_pid" "$tmp/server.out" blkserver
	[[ $rport -gt 0 && $tport -gt 0 ]] || fail "bad ports: rdma $rport tcp $tport"
}

counter() { awk -v k="$2" '$2 == k {print $3}' "$1"; }

# 3. the three shapes
start_server
cli() { timeout 120 "$tmp/bin/blkclient" --host 127.0.0.1 "$@"; }
cli --port "$rport" --loop lib --model gaps --passes 2 >"$tmp/lib.out" 2>&1 ||
	fail "blkclient --loop lib --model gaps"
cli --port "$rport" --loop app --model page_list >"$tmp/app.out" 2>&1 ||
	fail "blkclient --loop app --model page_list"
for f in lib app; do
	grep -q "blkclient: ok: " "$tmp/$f.out" || fail "$f: no ok line"
	[[ $(counter "$tmp/$f.out" read_chunks) -gt 0 && $(counter "$tmp/$f.out" write_chunks) -gt 0 &&
		$(counter "$tmp/$f.out" registrations) -gt 0 ]] ||
		fail "$f: WRITE data did not go by read chunk or READ data by write chunk"
	[[ $(counter "$tmp/$f.out" bad_replies) -eq 0 ]] || fail "$f: bad replies"
done
cli --transport tcp --port "$tport" --loop app --mib 4 >"$tmp/tcp.out" 2>&1 ||
	fail "blkclient over TCP"

# 4. a restart in the middle of a run
cli --port "$rport" --until-restart 60 >"$tmp/restart.out" 2>&1 &
cli_pid=$!
for _ in $(seq 600); do
	grep -q "waiting for a server restart" "$tmp/restart.out" 2>/dev/null && break
	kill -0 "$cli_pid" 2>/dev/null || fail "blkclient exited before the restart"
	sleep 0.1
done
grep -q "waiting for a server restart" "$tmp/restart.out" || fail "the first pass did not finish"
kill -KILL "$srv_pid"
wait "$srv_pid" 2>/dev/null || true
mv "$tmp/server.out" "$tmp/server1.out.old"
start_server "$rport" "$tport"
wait "$cli_pid" || fail "blkclient did not survive the server restart"
cli_pid=
grep -q "connection re-established" "$tmp/restart.out" || fail "no connection event"
grep -q "server restarted (boot" "$tmp/restart.out" || fail "the new server instance went unnoticed"
grep -q "restart(s) handled" "$tmp/restart.out" || fail "no ok line after the restart"

# 5. graceful stop
stop_server "$srv_pid" blkserver
srv_pid=
grep -q "blkserver: calls" "$tmp/server.out" || fail "blkserver printed no counters"

# 6. zero copy: WRITE data pulled straight into the disk, READ data written
# to the client from the disk's own memory
"$tmp/bin/blkserver" --host 127.0.0.1 --rdma-port 0 --tcp-port - --threads 2 --zero-copy \
	>"$tmp/server.out" 2>"$tmp/server.err" &
srv_pid=$!
wait_ports "$srv_pid" "$tmp/server.out" "blkserver --zero-copy"
cli --port "$rport" --loop app --model page_list --read-passes 2 >"$tmp/zc.out" 2>&1 ||
	fail "blkclient against blkserver --zero-copy"
grep -q "read pass 2 verified" "$tmp/zc.out" || fail "zero copy: no verified read pass"
stop_server "$srv_pid" "blkserver --zero-copy"
srv_pid=
# every READ reply registered the disk memory (on top of the WRITE sinks),
# and every registration was invalidated
regs=$(counter "$tmp/server.out" registrations)
[[ $regs -ge $(($(counter "$tmp/server.out" read_chunks) + $(counter "$tmp/server.out" write_chunks))) &&
	$(counter "$tmp/server.out" local_inv) -eq $regs ]] ||
	fail "zero copy: READ replies were not sent from registered disk memory"
echo "test-blkstore: ok (lib/gaps, app/page_list, tcp, restart handled, zero copy)"
