# vm-timeout: 1200
# The Linux kernel client mounts rrr-server as it mounts any NFS server, with
# only `-o vers=3` (TCP), only `-o vers=3,proto=rdma,port=20049`, and with no
# option at all, and locks files on it; then the same cases against the
# kernel's nfsd, side by side.
#
# Client and servers are in two network namespaces joined by a veth pair
# (10.9.0.2 -> 10.9.0.1): a host's NFS client and its NFS server cannot share
# one rpcbind, whose NLM mapping the client's own lockd takes. rxe works in
# the initial namespace only (its UDP socket lives there), so the RDMA mount
# is made there, beside the servers, after the lock cases (its lockd then
# takes NLM in that namespace); the kernel's NLM goes over TCP for an RDMA
# mount too, so the lock cases over TCP are the RDMA mount's as well (NLM
# over RDMA itself is covered by tests/nfs/nlm.c; the same cases on an RDMA
# mount, over siw: siw.d/40-nfs-locking-rdma.sh). The cases and the lock
# program are tests/vm/lock-lib.sh's. The client side (its rpcbind,
# rpc.statd, private /run and /var/lib/nfs, the mounts, the lock programs)
# runs in one session in the namespace "cli"; it acts on the servers' side
# through nsenter (into the namespaces and root of the script that started
# it).
#
# Cases, per server and transport: lockf and flock, exclusive and shared;
# conflict between two processes; a waiting lock taken when the holder
# releases; a lock waiting on the server behind a local process's lock,
# granted at release (GRANTED callback: well under the client's 30 s
# re-poll); a local lock on the server's file seen by the client; SQLite's own locking with two
# processes writing one database (PRAGMA integrity_check, row count); a lock
# held across a server restart (rrr-server: the process; the kernel's nfsd:
# a reboot as lock-lib.sh's reboot-knfsd plays it), reclaimed in the grace
# period after SM_NOTIFY, and excluding a local process on the server until
# the client releases it.
set -u
ME=$(readlink -f "$0")
S="$RRR_BUILD/rrr-server"
SRV=10.9.0.1
CLI=10.9.0.2
ADDR=${RRR_VM_ADDR:-10.0.2.15}
EXP=/srv/rrr-lk
MNT=/tmp/rrr-lk-mnt
ST=/tmp/rrr-lk-state
RES=/tmp/rrr-lk-results
LK_RRR_ARGS=(--provider verbs --provider-opts "dev=${RRR_VERBS_DEV:-rxe0}")
. "$(dirname "$ME")/../lock-lib.sh"

# ------------------------------------------------------------- server side
# the orchestrating shell's namespaces and root (the guest's root is a chroot)
srv() { nsenter -t "$RRR_LK_ORCH" -m -n -r -w -- bash "$ME" --srv "$@"; }

srv_action() {
	case "$1" in
	start-knfsd) lk_srv_action start-knfsd && lk_srv_action knfsd-rdma ;;
	mount-rdma) # from this namespace (rxe works in the initial one only)
		mkdir -p /tmp/rrr-lk-mnt2
		timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049 "$ADDR:$EXP" /tmp/rrr-lk-mnt2 ||
			return 1
		grep " /tmp/rrr-lk-mnt2 " /proc/mounts
		echo rdma > /tmp/rrr-lk-mnt2/r.txt && sync && [ "$(cat "$EXP/r.txt")" = rdma ]
		local r=$?
		umount /tmp/rrr-lk-mnt2 || umount -f /tmp/rrr-lk-mnt2
		return $r ;;
	*) lk_srv_action "$@" ;;
	esac
}

if [ "${1:-}" = --srv ]; then
	shift
	srv_action "$@"
	exit $?
fi

# ------------------------------------------------------------- client side
client_main() {
	FAILED=0
	mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind || return 1
	mount -t tmpfs tmpfs /var/lib/nfs && mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/statd
	ip link set lo up
	rpcbind || { echo "client rpcbind failed"; return 1; }
	rpc.statd --no-notify || { echo "client rpc.statd failed"; return 1; }
	mkdir -p "$MNT"
	for k in rrr knfsd; do
		: > "$RES.$k"
		rm -rf "${EXP:?}"/* && : > "$EXP/f"
		srv start-$k || { echo "cannot start $k"; FAILED=1; continue; }
		local opts
		for t in tcp none; do
			case $t in
			tcp) opts="-o vers=3" ;;
			none) opts="" ;;
			esac
			if timeout 120 mount -t nfs $opts "$SRV:$EXP" "$MNT"; then
				ok "mount -t nfs ${opts:-(no options)}" $t $k
				grep " $MNT " /proc/mounts
				[ $t = none ] || lock_cases $k $t
				[ $t = tcp ] && restart_case $k tcp
				umount "$MNT" || umount -f "$MNT"
			else
				bad "mount -t nfs ${opts:-(no options)}" $t $k
			fi
		done
		# RDMA last: this mount's lockd, in the servers' namespace, takes NLM there
		local c="mount -t nfs -o vers=3,proto=rdma,port=20049"
		srv mount-rdma && ok "$c" rdma $k || bad "$c" rdma $k
		srv stop-$k
	done
	lk_table
	return $FAILED
}

if [ "${1:-}" = --client ]; then
	client_main
	exit $?
fi

# ------------------------------------------------------------ orchestration
[ -x "$S" ] || { echo "missing $S (make all)"; exit 1; }
lk_need
modprobe veth 2>/dev/null
ip link add veth0 type veth peer name veth1 ||
	{ echo "no veth (the VM's initramfs lacks veth.ko?)"; exit 77; }
ip netns add cli || exit 1
cleanup() {
	ip netns pids cli 2>/dev/null | xargs -r kill 2>/dev/null
	srv_action stop-rrr; srv_action stop-knfsd
	ip link del veth0 2>/dev/null
	ip netns del cli 2>/dev/null
}
trap cleanup EXIT
ip link set veth1 netns cli
ip addr add $SRV/24 dev veth0 && ip link set veth0 up
ip netns exec cli sh -c "ip addr add $CLI/24 dev veth1 && ip link set veth1 up && ip link set lo up"
mkdir -p "$EXP" "$ST"
mountpoint -q "$EXP" || mount -t tmpfs -o size=128m tmpfs "$EXP"
: > /tmp/rrr-lk-server.log
# the kernel's nfsd and an rpc.mountd that earlier scripts left running hold
# 2049 and 20048 and their rpcbind mappings: rrr-server goes first here
rpc.nfsd 0 2>/dev/null
exportfs -ua 2>/dev/null
pkill -x rpc.mountd && for _ in $(seq 1 100); do pgrep -x rpc.mountd >/dev/null || break; sleep 0.1; done
pgrep -x rpcbind >/dev/null || rpcbind -w 2>/dev/null || rpcbind
rpcinfo -p 2>/dev/null | grep -q nlockmgr &&
	echo "note: a kernel lockd already holds NLM in this namespace: $(rpcinfo -p | grep nlockmgr | head -1)"

lk_write_helper

RRR_LK_ORCH=$$ ip netns exec cli bash "$ME" --client
rc=$?
echo "--- rrr-server log (without the counters)"
grep -v '^  ' /tmp/rrr-lk-server.log | tail -n 60
[ $rc -eq 0 ] && echo "locking through the kernel client, rrr-server and kernel nfsd: OK"
exit $rc
