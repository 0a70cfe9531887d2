# tests/vm/siw-lib.sh - sourced by tests/vm/siw.d/*.sh: starting and stopping
# rrr-server, and captures of loopback that Wireshark must decode as iWARP
# (MPA Request and Reply, DDP/RDMAP) and RPC-over-RDMA.
# Callers set W (their scratch directory) before sourcing.
S="$RRR_BUILD/rrr-server"
C="$RRR_BUILD/rrr-client"
ADDR=${RRR_VM_ADDR:-10.0.2.15}
DEV=${RRR_VERBS_DEV:-siw0}
[ -x "$S" ] && [ -x "$C" ] || { echo "missing $S or $C (make all)"; exit 1; }
mkdir -p "$W/state"
SPID= TPID=
fail() {
	echo "FAIL: $*"
	[ -f "$W/server.log" ] && tail -n 30 "$W/server.log"
	dmesg | tail -n 15
	[ -n "${MNT:-}" ] && umount -f "$MNT" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ -n "$TPID" ] && kill "$TPID" 2>/dev/null
	exit 1
}

# server_start EXPORT PROVIDER_ARGS...: rrr-server on ports 20049 (RDMA) and
# 20048 (MOUNT and NFS over TCP); returns when it listens.
server_start() {
	local exp=$1
	shift
	rm -f "$W/ports"
	"$S" --export "$exp" "$@" --listen "$ADDR" --port 20049 --mount-port 20048 \
		--state-dir "$W/state" --port-file "$W/ports" --threads 2 --no-root-squash \
		>>"$W/server.log" 2>&1 &
	SPID=$!
	for _ in $(seq 1 200); do [ -s "$W/ports" ] && return 0; sleep 0.1; done
	fail "rrr-server did not start"
}

server_stop() {
	local rc
	kill -TERM "$SPID"
	wait "$SPID"
	rc=$?
	SPID=
	[ $rc -eq 0 ] || fail "rrr-server exit status $rc"
}

# capture_start NAME: tshark on lo, TCP port 20049, into $W/NAME.pcap (at most
# 3,000 frames: set-up and the first calls are what is checked; decoding more
# under TCG takes minutes)
capture_start() {
	CAP="$W/$1.pcap"
	command -v tshark >/dev/null || { CAP=; echo "no tshark: no capture"; return 0; }
	rm -f "$CAP" "$W/tshark.err"
	tshark -i lo -f 'tcp port 20049' -c 3000 -w "$CAP" -q 2>"$W/tshark.err" &
	TPID=$!
	for _ in $(seq 1 100); do grep -q Capturing "$W/tshark.err" 2>/dev/null && return 0; sleep 0.1; done
	fail "tshark did not start: $(cat "$W/tshark.err")"
}

# capture_check: the capture decodes as iWARP carrying RPC-over-RDMA
capture_check() {
	local req rep ddp rpc bad
	[ -n "$CAP" ] || return 0
	sleep 0.5 # the last frames reach the file
	kill -INT "$TPID" 2>/dev/null
	wait "$TPID"
	TPID=
	n() { tshark -r "$CAP" --enable-heuristic iwarp_mpa_tcp -Y "$1" -T fields -e frame.number 2>/dev/null | wc -l; }
	req=$(n iwarp_mpa.req)
	rep=$(n iwarp_mpa.rep)
	ddp=$(n iwarp_ddp_rdmap)
	rpc=$(n rpcordma)
	bad=$(n '_ws.malformed && !nfs')
	echo "capture $(basename "$CAP"): MPA requests $req, replies $rep, DDP/RDMAP frames $ddp, RPC-over-RDMA $rpc, malformed (not NFS) $bad"
	[ "$req" -ge 1 ] && [ "$rep" -ge 1 ] && [ "$ddp" -ge 1 ] && [ "$rpc" -ge 1 ] ||
		fail "Wireshark did not decode $(basename "$CAP") as iWARP + RPC-over-RDMA"
	[ "$bad" -eq 0 ] || fail "Wireshark found $bad malformed frames in $(basename "$CAP")"
	cp "$CAP" "${RRR_VM_RESULTS:-/tmp}/" 2>/dev/null || true
}
