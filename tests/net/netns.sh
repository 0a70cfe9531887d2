#!/usr/bin/env bash
# tests/net/netns.sh BUILD_DIR - two hosts on a real network path (make test-netns,
# run by .ci/run as root).
#
# Makes two network namespaces joined by a veth pair (10.231.0.1 server,
# 10.231.0.2 client), each end with netem delay (NETNS_DELAY, default 2ms
# with 1ms jitter) and loss (NETNS_LOSS, default 1%), so both directions see
# them. Starts rrr-server (soft provider) in one; from the other runs the
# demo's put/get (scripts/demo.sh: an 8 MiB file of odd size, QD8, payloads
# split in two, CRC32C read-back, SHA-256 of both local copies) and the short
# soak (rrr-bench soak --host: NETNS_SOAK_CLIENTS x NETNS_SOAK_QD for
# NETNS_SOAK_SECONDS, default 2 x 8 for 20 s, with the soft provider's
# injected drops; no server restart, the server is not the soak's child).
#
# Without netem in the kernel (CONFIG_NET_SCH_NETEM unset: no sch_netem
# module) the loss is made with nftables instead (numgen random, the same
# rate on each side's output) and there is no delay; the script says so, and
# NETNS_STRICT=1 makes that a failure. Not root, or namespaces that cannot be
# made: it says why and exits 0 (a skip). Every wait is bounded (timeout).
# Exits non-zero on any failure.
set -euo pipefail

BUILD=${1:-build}
SERVER="$BUILD/rrr-server"
CLIENT="$BUILD/rrr-client"
BENCH="$BUILD/rrr-bench"
DELAY=${NETNS_DELAY:-2ms 1ms}
LOSS=${NETNS_LOSS:-1%}
SOAK_CLIENTS=${NETNS_SOAK_CLIENTS:-2}
SOAK_QD=${NETNS_SOAK_QD:-8}
SOAK_SECONDS=${NETNS_SOAK_SECONDS:-20}
SIZE=$(( 8 * 1024 * 1024 + 12345 ))
NS_S="rrr-srv-$$"
NS_C="rrr-cli-$$"
IF_S="rrrs$$"
IF_C="rrrc$$"
IP_S=10.231.0.1
IP_C=10.231.0.2

skip() { echo "netns: SKIP: $*"; exit 0; }
fail() { echo "netns: FAIL: $*" >&2; exit 1; }
step() { printf '\n== netns: %s\n' "$*"; }

for p in "$SERVER" "$CLIENT" "$BENCH"; do
	[[ -x "$p" ]] || fail "$p is missing; build first (make all)"
done
[[ "$(id -u)" -eq 0 ]] || skip "needs root (ip netns, veth, tc); run as root or in CI"
command -v ip >/dev/null || skip "ip (iproute2) is not installed: make deps-netns"

T=$(mktemp -d /tmp/rrr-netns.XXXXXX)
SPID=
NFT_LOSS=0
cleanup() {
	if [[ -n "$SPID" ]] && kill -0 "$SPID" 2>/dev/null; then
		kill -TERM "$SPID" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SPID" 2>/dev/null || true
	fi
	ip netns del "$NS_C" 2>/dev/null || true
	ip netns del "$NS_S" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/export" "$T/state"

step "namespaces $NS_S ($IP_S) and $NS_C ($IP_C), veth $IF_S <-> $IF_C"
if ! ip netns add "$NS_S" 2>"$T/err" || ! ip netns add "$NS_C" 2>>"$T/err"; then
	skip "cannot create network namespaces: $(cat "$T/err")"
fi
ip link add "$IF_S" type veth peer name "$IF_C" 2>"$T/err" ||
	skip "cannot create a veth pair: $(cat "$T/err")"
ip link set "$IF_S" netns "$NS_S"
ip link set "$IF_C" netns "$NS_C"
ip -n "$NS_S" addr add "$IP_S/24" dev "$IF_S"
ip -n "$NS_C" addr add "$IP_C/24" dev "$IF_C"
for n in "$NS_S" "$NS_C"; do ip -n "$n" link set lo up; done
ip -n "$NS_S" link set "$IF_S" up
ip -n "$NS_C" link set "$IF_C" up

step "impairment: delay $DELAY, loss $LOSS on each side"
# shellcheck disable=SC2086
if ip netns exec "$NS_S" tc qdisc add dev "$IF_S" root netem delay $DELAY loss "$LOSS" 2>"$T/err" &&
   ip netns exec "$NS_C" tc qdisc add dev "$IF_C" root netem delay $DELAY loss "$LOSS" 2>>"$T/err"; then
	ip netns exec "$NS_S" tc qdisc show dev "$IF_S"
	ip netns exec "$NS_C" tc qdisc show dev "$IF_C"
else
	echo "netns: netem is not available ($(tr '\n' ' ' <"$T/err")): the kernel has no sch_netem"
	[[ "${NETNS_STRICT:-0}" == 1 ]] && fail "NETNS_STRICT=1 and no netem"
	command -v nft >/dev/null || fail "no netem and no nft (nftables) for the loss: make deps-netns"
	pct=${LOSS%\%}
	[[ "$pct" =~ ^[0-9]+$ && "$pct" -ge 1 && "$pct" -le 99 ]] ||
		fail "without netem NETNS_LOSS must be a whole percentage (1%..99%), not '$LOSS'"
	echo "netns: WARNING: loss $LOSS made with nftables (numgen random), NO delay"
	for n in "$NS_S" "$NS_C"; do
		ip netns exec "$n" nft add table inet rrrloss
		ip netns exec "$n" nft add chain inet rrrloss out '{ type filter hook output priority 0; }'
		ip netns exec "$n" nft add rule inet rrrloss out oifname "rrr*" numgen random mod 100 \< "$pct" counter drop
	done
	ip netns exec "$NS_C" nft list ruleset
	NFT_LOSS=1
fi

step "rrr-server (soft provider) in $NS_S"
ip netns exec "$NS_S" timeout 900 "$SERVER" --export "$T/export" --state-dir "$T/state" --no-root-squash \
	--listen "$IP_S" --port 0 --mount-port 0 --port-file "$T/ports" --threads 2 \
	>"$T/server.log" 2>&1 &
SPID=$!
for _ in $(seq 1 150); do
	[[ -s "$T/ports" ]] && break
	kill -0 "$SPID" 2>/dev/null || { cat "$T/server.log" >&2; fail "rrr-server exited during start-up"; }
	sleep 0.1
done
[[ -s "$T/ports" ]] || { cat "$T/server.log" >&2; fail "rrr-server did not listen within 15 s"; }
read -r RDMA_PORT MOUNT_PORT _ < <(sed -E 's/rdma=([0-9]+) mount=([0-9]+) tcp=([0-9]+)/\1 \2 \3/' "$T/ports")
echo "netns: server pid $SPID, rdma port $RDMA_PORT, mount port $MOUNT_PORT"

CL=(ip netns exec "$NS_C" timeout 300 "$CLIENT" --transport rdma --provider soft
    --server "$IP_S" --port "$RDMA_PORT" --mount-port "$MOUNT_PORT" --export "$T/export"
    --timeout 30000)

step "the demo's put/get from $NS_C ($SIZE bytes, QD8, payloads split at 1000)"
head -c "$SIZE" /dev/urandom >"$T/source.bin"
"${CL[@]}" --qd 8 --split 1000 --verify put "$T/source.bin" netns.bin ||
	{ tail -20 "$T/server.log" >&2; fail "put"; }
"${CL[@]}" ls | grep -q netns.bin || fail "ls does not show netns.bin"
"${CL[@]}" --qd 8 --split 1000 --verify --stats get netns.bin "$T/back.bin" ||
	{ tail -20 "$T/server.log" >&2; fail "get"; }
a=$(sha256sum <"$T/source.bin" | cut -d' ' -f1)
b=$(sha256sum <"$T/back.bin" | cut -d' ' -f1)
echo "netns: sha256 put $a"
echo "netns: sha256 got $b"
[[ "$a" == "$b" ]] || fail "the file came back different"

step "short soak from $NS_C: $SOAK_CLIENTS clients x QD$SOAK_QD, $SOAK_SECONDS s"
ip netns exec "$NS_C" timeout $(( SOAK_SECONDS + 240 )) "$BENCH" soak --host "$IP_S" \
	--port "$RDMA_PORT" --mount-port "$MOUNT_PORT" --export "$T/export" \
	--clients "$SOAK_CLIENTS" --qd "$SOAK_QD" --seconds "$SOAK_SECONDS" --timeout-ms 30000 \
	| tee "$T/soak.out" || { tail -20 "$T/server.log" >&2; fail "soak (exit status above)"; }
grep -q '^PASS' "$T/soak.out" || fail "soak did not pass"

step "stopping rrr-server (SIGTERM)"
kill -TERM "$SPID"
rc=0
for _ in $(seq 1 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SPID" 2>/dev/null && fail "rrr-server did not stop within 10 s of SIGTERM"
wait "$SPID" || rc=$?
SPID=
tail -5 "$T/server.log"
[[ "$rc" -eq 0 ]] || fail "rrr-server exited with $rc"
if [[ "$NFT_LOSS" == 1 ]]; then
	for n in "$NS_S" "$NS_C"; do
		echo "netns: dropped on the way out of $n: $(ip netns exec "$n" nft list chain inet rrrloss out | grep -o 'packets [0-9]* bytes [0-9]*')"
	done
else
	for n in "$NS_S" "$NS_C"; do
		echo "netns: netem in $n: $(ip netns exec "$n" tc -s qdisc show | grep -o 'dropped [0-9]*' | head -1)"
	done
fi
echo "netns: PASS"
