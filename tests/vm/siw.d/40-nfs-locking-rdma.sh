# vm-timeout: 1200
# The Linux kernel client mounts rrr-server over RDMA (the kernel's
# soft-iWARP) with exactly `-o vers=3,proto=rdma,port=20049` and locks files
# on it; then the same against the kernel's nfsd, side by side. The lock
# cases and the lock program are tests/vm/lock-lib.sh's, as in
# tests.d/80-nfs-locking.sh, which runs them over TCP (rxe works in the
# initial network namespace only, so its RDMA mount cannot be beside a
# server in another namespace).
#
# Here the roles of the namespaces are swapped: siw's kernel sockets are made
# in the namespace of the thread that connects, and the NFS client connects
# from a kworker of the initial namespace, so the CLIENT stays in the initial
# namespace (siw device siwv0 on veth0, 10.9.0.2; its rpcbind and rpc.statd)
# and the SERVERS run in the namespace "srv" (veth1, 10.9.0.1) with a private
# /run, /var/lib/nfs and /proc/fs/nfsd and their own rpcbind: rrr-server on
# the soft provider (user-space iWARP over TCP, which siw talks to), then the
# kernel's nfsd over RDMA through a siw device on veth1 made in "srv"
# (siwv1, `rdma 20049` in its portlist). Where the kernel cannot serve RDMA
# there, its RDMA rows say "not run" with the kernel's reason and the kernel
# nfsd's cases run over TCP in the same layout instead.
#
# NLM for an RDMA mount goes over TCP (the client's lockd): expected; the
# point is that an RDMA mount made with only those options locks.
#
# Cases, per server: lockf and flock, exclusive and shared; conflict between
# two processes; a waiting lock taken when the holder releases; a lock
# waiting on the server behind a local process's lock, granted by the GRANTED
# callback; a local lock on the server's file seen by the client; SQLite with
# two processes writing one database (integrity_check, row count); a lock
# held across a server restart, reclaimed in the grace period after
# SM_NOTIFY (the kernel's nfsd: a reboot as lock-lib.sh's reboot-knfsd plays
# it).
set -u
ME=$(readlink -f "$0")
S="$RRR_BUILD/rrr-server"
SRV=10.9.0.1
CLI=10.9.0.2
EXP=/srv/rrr-lkr
MNT=/tmp/rrr-lkr-mnt
ST=/tmp/rrr-lkr-state
RES=/tmp/rrr-lkr-results
HOLDER=/tmp/rrr-lkr-srv.pid
RDMA_OPTS="vers=3,proto=rdma,port=20049"
LK_RRR_ARGS=(--provider soft --listen "$SRV")
. "$(dirname "$ME")/../lock-lib.sh"

# ------------------------------------------------------------- server side
# the servers' namespaces (network and mount) and root (the guest's root is
# a chroot), held by one process that sleeps in them
srv() { nsenter -t "$(cat "$HOLDER")" -m -n -r -w -- bash "$ME" --srv "$@"; }

srv_action() {
	case "$1" in
	holder) # run by ip netns exec: the servers' side, then sleep in it
		ip addr add $SRV/24 dev veth1 && ip link set veth1 up && ip link set lo up || exit 1
		mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind || exit 1
		mount -t tmpfs tmpfs /var/lib/nfs &&
			mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/statd /var/lib/nfs/v4recovery ||
			exit 1
		# nfsd's files show the namespace of who mounted them
		while mountpoint -q /proc/fs/nfsd; do umount /proc/fs/nfsd || exit 1; done
		mount -t nfsd nfsd /proc/fs/nfsd || exit 1
		rpcbind -w 2>/dev/null || rpcbind || exit 1
		echo $$ > "$HOLDER"
		exec sleep 100000 ;;
	start-knfsd) # with an rpc.statd of its own (its lockd monitors the client)
		rpc.statd --no-notify && lk_srv_action start-knfsd ;;
	knfsd-rdma) # a siw device on this side of the veth, then nfsd's RDMA listener
		rdma dev show siwv1 >/dev/null 2>&1 || rdma link add siwv1 type siw netdev veth1 ||
			return 1
		lk_srv_action knfsd-rdma && cat /proc/fs/nfsd/portlist ;;
	stop-knfsd)
		lk_srv_action stop-knfsd
		[ -s /run/rpc.statd.pid ] && kill "$(cat /run/rpc.statd.pid)"
		rm -f /run/rpc.statd.pid; : ;;
	*) lk_srv_action "$@" ;;
	esac
}

if [ "${1:-}" = --srv ]; then
	shift
	srv_action "$@"
	exit $?
fi

# ------------------------------------------------------------- client side
# one mount and the cases on it: TRANSPORT KIND
mount_cases() {
	local t=$1 k=$2 o
	case $t in
	rdma) o=$RDMA_OPTS ;;
	tcp) o=vers=3 ;;
	esac
	if ! timeout 120 mount -t nfs -o $o "$SRV:$EXP" "$MNT" 2>/tmp/rrr-lkr-mount.err; then
		cat /tmp/rrr-lkr-mount.err
		bad "mount -t nfs -o $o" $t $k "$(tail -n 1 /tmp/rrr-lkr-mount.err)"
		return 1
	fi
	# the mount's transport, and a write through it that the server's file shows
	grep " $MNT " /proc/mounts
	grep -q " $MNT nfs .*proto=$t," /proc/mounts && echo "$k $t" > "$MNT/w.txt" && sync &&
		[ "$(cat "$EXP/w.txt")" = "$k $t" ] && ok "mount -t nfs -o $o" $t $k ||
		bad "mount -t nfs -o $o" $t $k "not proto=$t, or the write did not reach the server"
	lock_cases $k $t
	restart_case $k $t
	umount "$MNT" || umount -f "$MNT"
	return 0
}

# the rrr-server's rows of TRANSPORT, "not run (WHY)" for the kernel's nfsd
not_run() {
	awk -F'|' -v t="$1" -v w="$2" '$2 == t { print $1 "|" $2 "|not run (" w ")" }' \
		"$RES.rrr" >> "$RES.knfsd"
}

client_main() {
	FAILED=0
	mkdir -p "$MNT"

	: > "$RES.rrr"
	rm -rf "${EXP:?}"/* && : > "$EXP/f"
	if srv start-rrr; then
		mount_cases rdma rrr
		srv stop-rrr
	else
		bad "rrr-server starts" rdma rrr; echo "cannot start rrr-server"
	fi

	: > "$RES.knfsd"
	rm -rf "${EXP:?}"/* && : > "$EXP/f"
	if srv start-knfsd; then
		local why
		if ! why=$(srv knfsd-rdma 2>&1); then
			why="nfsd in a network namespace, RDMA listener on siw: ${why:-no reason given}"
			echo "knfsd over RDMA: $why"
			not_run rdma "$why"
			mount_cases tcp knfsd
		elif echo "knfsd's portlist: $why" && ! mount_cases rdma knfsd; then
			# the mount row says why (the kernel's answer); the cases then over TCP
			why="no RDMA mount: $(tail -n 1 /tmp/rrr-lkr-mount.err)"
			echo "knfsd over RDMA: $why"; dmesg | tail -n 20
			sed -i '/|rdma|/d' "$RES.knfsd"
			not_run rdma "$why"
			mount_cases tcp knfsd
		fi
		srv stop-knfsd
	else
		bad "the kernel's nfsd starts" rdma knfsd; echo "cannot start the kernel's nfsd"
	fi
	lk_table
	return $FAILED
}

# ------------------------------------------------------------ orchestration
[ -x "$S" ] || { echo "missing $S (make all)"; exit 1; }
lk_need
command -v rdma >/dev/null || { echo "rdma (iproute2) missing"; exit 77; }
[ -e /sys/module/siw ] || { echo "no siw module in this VM (tests/vm/run.sh --siw)"; exit 77; }
modprobe veth 2>/dev/null
ip link add veth0 type veth peer name veth1 ||
	{ echo "no veth (the VM's initramfs lacks veth.ko?)"; exit 77; }
ip netns add srv || exit 1
OURS_STATD=
cleanup() {
	umount -f "$MNT" 2>/dev/null
	if [ -s "$HOLDER" ] && kill -0 "$(cat "$HOLDER")" 2>/dev/null; then
		srv stop-rrr; srv stop-knfsd
	fi
	ip netns pids srv 2>/dev/null | xargs -r kill 2>/dev/null
	rdma link del siwv1 2>/dev/null
	rdma link del siwv0 2>/dev/null
	ip link del veth0 2>/dev/null
	ip netns del srv 2>/dev/null
	[ -n "$OURS_STATD" ] && kill "$OURS_STATD" 2>/dev/null
	rm -f "$HOLDER"
}
trap cleanup EXIT
ip link set veth1 netns srv
ip addr add $CLI/24 dev veth0 && ip link set veth0 up || exit 1
mkdir -p "$EXP" "$ST"
mountpoint -q "$EXP" || mount -t tmpfs -o size=128m tmpfs "$EXP"
: > /tmp/rrr-lk-server.log
lk_write_helper

# the client: its rpcbind and rpc.statd (siw below, once the veth is up)
NS=(--ns $$ --nslist net)
pgrep "${NS[@]}" -x rpcbind >/dev/null || rpcbind -w 2>/dev/null || rpcbind ||
	{ echo "client rpcbind failed"; exit 1; }
mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak
if ! pgrep "${NS[@]}" -x rpc.statd >/dev/null; then
	rpc.statd --no-notify || { echo "client rpc.statd failed"; exit 1; }
	OURS_STATD=$(pgrep "${NS[@]}" -x rpc.statd)
fi
rpcinfo -p 2>/dev/null | grep -q nlockmgr &&
	echo "note: a kernel lockd already holds NLM in this namespace: $(rpcinfo -p | grep nlockmgr | head -1)"

# the servers' side
rm -f "$HOLDER"
ip netns exec srv bash "$ME" --srv holder &
for _ in $(seq 1 300); do [ -s "$HOLDER" ] && break; sleep 0.1; done
[ -s "$HOLDER" ] || { echo "the servers' namespace did not come up"; exit 1; }
# the client's siw device on its side of the veth, now up at both ends (siw
# takes the port's state from the link's carrier at creation)
for _ in $(seq 1 100); do
	[ "$(cat /sys/class/net/veth0/carrier 2>/dev/null)" = 1 ] && break; sleep 0.1
done
rdma link add siwv0 type siw netdev veth0 || { echo "cannot add siw on veth0"; exit 1; }
for _ in $(seq 1 100); do
	grep -q ACTIVE /sys/class/infiniband/siwv0/ports/1/state 2>/dev/null && break; sleep 0.1
done
echo "client: siwv0 on veth0: $(cat /sys/class/infiniband/siwv0/ports/1/state)"

client_main
rc=$?
echo "--- rrr-server log (without the counters)"
grep -v '^  ' /tmp/rrr-lk-server.log | tail -n 60
echo "--- dmesg (siw, rpcrdma, lockd, nfs)"
dmesg | grep -iE 'siw|rpcrdma|lockd|nfs|svcrdma' | tail -n 30
[ $rc -eq 0 ] && echo "locking on an RDMA mount (siw), rrr-server and kernel nfsd: OK"
exit $rc
