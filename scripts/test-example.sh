#!/usr/bin/env bash
# scripts/test-example.sh BUILD_DIR [make VAR=value ...]
#
# The embedding example as a user outside the tree sees it:
#   1. `make install` into a temporary DESTDIR (PREFIX=/usr/local) from
#      BUILD_DIR (extra arguments go to make, e.g. LIB_DIRS=... PROGRAMS=);
#   2. build examples/kvstore with its own Makefile, only through
#      `pkg-config --cflags --libs rrr` (PKG_CONFIG_SYSROOT_DIR maps the
#      DESTDIR), out of tree;
#   3. run kvserver (soft provider, ephemeral ports) and kvclient selftest
#      over RPC-over-RDMA and over TCP, plus single put/get/del commands;
#   4. stop the server with SIGTERM and check it exits 0 with its counters.
# Every wait is bounded. Exits non-zero with a message on the first failure.
set -euo pipefail
# shellcheck source=scripts/lib/staged.sh
. "$(dirname "$0")/lib/staged.sh"

staged_init example "$@"
shift

fail() {
	echo "test-example: FAIL: $*" >&2
	for f in "$tmp"/server.out "$tmp"/server.err; do
		[[ -f $f ]] && sed 's/^/  | /' "$f" >&2
	done
	exit 1
}

# 1. install
staged_make install "make install" "$@"

# 2. build the example against the installed library only
use_staged
build_example kvstore
# (no pipe into grep -q: with pipefail, ldd's SIGPIPE would fail the check)
ldd "$tmp/bin/kvclient" >"$tmp/ldd.out" 2>&1 || true
grep -q "$dest$prefix/lib/librrr.so" "$tmp/ldd.out" ||
	fail "kvclient is not linked against the installed librrr.so"

# 3. run
"$tmp/bin/kvserver" --host 127.0.0.1 --rdma-port 0 --tcp-port 0 --threads 2 \
	>"$tmp/server.out" 2>"$tmp/server.err" &
srv_pid=$!
wait_ports "$srv_pid" "$tmp/server.out" kvserver
[[ $rport -gt 0 && $tport -gt 0 ]] || fail "bad ports: rdma $rport tcp $tport"

cli() { timeout 60 "$tmp/bin/kvclient" --host 127.0.0.1 "$@"; }
cli --transport rdma --port "$rport" selftest 24 >"$tmp/rdma.out" 2>&1 ||
	{ cat "$tmp/rdma.out" >&2; fail "selftest over RDMA"; }
grep -q "selftest ok" "$tmp/rdma.out" || fail "selftest over RDMA did not report ok"
# large values must have moved by RDMA, not inline
rd=$(awk '$2 == "read_chunks" {print $3}' "$tmp/rdma.out")
wr=$(awk '$2 == "write_chunks" {print $3}' "$tmp/rdma.out")
[[ ${rd:-0} -gt 0 && ${wr:-0} -gt 0 ]] || fail "no read/write chunks used over RDMA (read=$rd write=$wr)"
cli --transport tcp --port "$tport" selftest 16 >"$tmp/tcp.out" 2>&1 ||
	{ cat "$tmp/tcp.out" >&2; fail "selftest over TCP"; }
cli --transport rdma --port "$rport" put greeting "hello, rdma" || fail "put"
got=$(cli --transport tcp --port "$tport" get greeting) || fail "get"
[[ $got == "hello, rdma" ]] || fail "get returned '$got'"
cli --transport rdma --port "$rport" del greeting || fail "del"
if cli --transport rdma --port "$rport" get greeting >/dev/null 2>&1; then
	fail "get after del succeeded"
fi

# 4. graceful stop
stop_server "$srv_pid" kvserver
srv_pid=
grep -q "kvserver: calls" "$tmp/server.out" || fail "kvserver printed no counters"
echo "test-example: ok (kvstore over rdma port $rport and tcp port $tport)"
