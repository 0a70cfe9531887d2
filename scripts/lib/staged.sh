# shellcheck shell=bash disable=SC2154,SC2034 # the caller's variables, set for the caller
# scripts/lib/staged.sh - sourced by the scripts that install the tree into
# a temporary DESTDIR and use it as a user outside the tree would
# (check-install.sh, test-example.sh, test-blkstore.sh, bench-blkstore.sh).
#
# Sets top (the tree) and make (${MAKE:-make}). The functions use build
# (BUILD_DIR), dest (the DESTDIR), prefix and tmp (a scratch folder), set
# by staged_init or the caller, and call the caller's fail MESSAGE, which
# must exit. Every wait is bounded.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
make=${MAKE:-make}

# staged_init NAME "$@": exit 2 with the usage line unless a BUILD_DIR is
# given; else sets build (BUILD_DIR: the caller shifts it off), tmp (a new
# scratch folder, rrr-NAME.XXXXXX), dest=$tmp/root, prefix=/usr/local and
# the EXIT trap staged_cleanup.
staged_init() {
	if [[ $# -lt 2 ]]; then
		echo "usage: $0 BUILD_DIR [make VAR=value ...]" >&2
		exit 2
	fi
	build=$2
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/rrr-$1.XXXXXX")
	dest=$tmp/root
	prefix=/usr/local
	srv_pid=
	cli_pid=
	trap staged_cleanup EXIT
}

# staged_cleanup: SIGKILL to the server and client ($srv_pid, $cli_pid)
# when still there, then $tmp removed.
staged_cleanup() {
	for p in $srv_pid $cli_pid; do
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}

# staged_make TARGET WHAT [make VAR=value ...]: `make TARGET` of the tree
# built in $build, PREFIX=$prefix DESTDIR=$dest; its output in
# $tmp/TARGET.log, shown before fail "WHAT failed" when make fails.
staged_make() {
	local target=$1 what=$2
	shift 2
	"$make" -C "$top" -s BUILD="$build" PREFIX="$prefix" DESTDIR="$dest" "$@" "$target" \
		>"$tmp/$target.log" 2>&1 || { cat "$tmp/$target.log" >&2; fail "$what failed"; }
}

# use_staged: pkg-config and the dynamic linker find librrr in $dest only.
use_staged() {
	export PKG_CONFIG_PATH=$dest$prefix/lib/pkgconfig
	export PKG_CONFIG_SYSROOT_DIR=$dest
	export PKG_CONFIG_LIBDIR=$dest$prefix/lib/pkgconfig
	export LD_LIBRARY_PATH=$dest$prefix/lib
}

# build_example NAME [make VAR=value ...]: examples/NAME built with its own
# Makefile (pkg-config, after use_staged) into $tmp/bin.
build_example() {
	local name=$1
	shift
	mkdir -p "$tmp/bin"
	"$make" -s -C "$top/examples/$name" OUT="$tmp/bin" "$@" >"$tmp/build.log" 2>&1 ||
		{ cat "$tmp/build.log" >&2; fail "building examples/$name with pkg-config failed"; }
}

# wait_ports PID FILE WHAT: wait (10 s) until the server WHAT (PID) wrote
# "... rdma port R tcp port T" to FILE; sets rport and tport.
wait_ports() {
	local pid=$1 file=$2 what=$3 line
	for _ in $(seq 100); do
		grep -q "rdma port" "$file" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || fail "$what exited early"
		sleep 0.1
	done
	line=$(grep "rdma port" "$file") || fail "$what did not report its ports"
	rport=$(echo "$line" | awk '{print $4}')
	tport=$(echo "$line" | awk '{print $7}')
}

# stop_server PID WHAT: SIGTERM to the server WHAT (PID); it must exit 0
# within 10 s.
stop_server() {
	kill -TERM "$1"
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && fail "$2 did not stop within 10 s of SIGTERM"
	wait "$1" || fail "$2 exited with status $?"
}
