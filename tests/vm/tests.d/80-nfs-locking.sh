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
# over RDMA itself is covered by tests/nfs/nlm.c). The client side (its rpcbind, rpc.statd, private /run and
# /var/lib/nfs, the mounts, the lock programs) runs in one session in the
# namespace "cli"; it acts on the servers' side through nsenter (into the
# namespaces and root of the script that started it).
#
# Cases, per server and transport: lockf and flock, exclusive and shared;
# conflict between two processes; a waiting lock taken when the holder
# releases; a lock waiting on the server behind a local process's lock,
# granted at release (GRANTED callback: well under the client's 30 s
# re-poll); a local lock on the server's file seen by the client; SQLite's own locking with two
# processes writing one database (PRAGMA integrity_check, row count). For
# rrr-server also: a lock held across a restart, reclaimed in the grace
# period after SM_NOTIFY, still excluding others afterwards.
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
PY=/usr/bin/python3
LK=/tmp/rrr-lk.py

# ------------------------------------------------------------- server side
# the orchestrating shell's namespaces and root (the guest's root is a chroot)
srv() { nsenter -t "$RRR_LK_ORCH" -m -n -r -w -- bash "$ME" --srv "$@"; }

srv_action() {
	case "$1" in
	start-rrr)
		rm -f /tmp/rrr-lk-ports
		"$S" --export "$EXP" --provider verbs --provider-opts "dev=${RRR_VERBS_DEV:-rxe0}" \
			--state-dir "$ST" --port-file /tmp/rrr-lk-ports --threads 2 --no-root-squash \
			--grace "${2:-15}" >> /tmp/rrr-lk-server.log 2>&1 &
		echo $! > /tmp/rrr-lk-server.pid
		# up (its port file written) within 60 s even on a loaded host
		for _ in $(seq 1 600); do [ -s /tmp/rrr-lk-ports ] && break; sleep 0.1; done
		[ -s /tmp/rrr-lk-ports ] || { tail -n 5 /tmp/rrr-lk-server.log; false; } ;;
	stop-rrr)
		local p
		p=$(cat /tmp/rrr-lk-server.pid 2>/dev/null) || return 0
		kill "$p" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		! kill -0 "$p" 2>/dev/null ;;
	stat-rrr) # NAME: the counter's value
		"$S" --stats --state-dir "$ST" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }' ;;
	start-knfsd)
		echo "$EXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=78)" > /etc/exports
		mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
		echo 5 > /proc/sys/fs/nfs/nlm_grace_period 2>/dev/null
		rm -f /tmp/rrr-lk-mountd.pid
		exportfs -ra && { pgrep -x rpc.mountd >/dev/null ||
				  { rpc.mountd -p 20048 -N 2 && pgrep -x rpc.mountd > /tmp/rrr-lk-mountd.pid; }; } &&
			rpc.nfsd -N 4 4 && { grep -q rdma /proc/fs/nfsd/portlist ||
				echo 'rdma 20049' > /proc/fs/nfsd/portlist; } ;;
	stop-knfsd)
		rpc.nfsd 0
		[ -s /tmp/rrr-lk-mountd.pid ] && kill $(cat /tmp/rrr-lk-mountd.pid) # ours only
		rm -f /tmp/rrr-lk-mountd.pid
		exportfs -ua; : ;;
	hold) # FILE MODE: a local process on the server holds a lock
		"$PY" "$LK" hold "$2" "$3" /tmp/rrr-lk-local.ready /tmp/rrr-lk-local.release &
		for _ in $(seq 1 100); do [ -e /tmp/rrr-lk-local.ready ] && break; sleep 0.1; done
		[ -e /tmp/rrr-lk-local.ready ] ;;
	release)
		touch /tmp/rrr-lk-local.release
		for _ in $(seq 1 100); do [ -e /tmp/rrr-lk-local.ready ] || break; sleep 0.1; done
		rm -f /tmp/rrr-lk-local.release ;;
	mount-rdma) # from this namespace (rxe works in the initial one only)
		mkdir -p /tmp/rrr-lk-mnt2
		timeout 120 mount -t nfs -o vers=3,proto=rdma,port=20049 "$ADDR:$EXP" /tmp/rrr-lk-mnt2 ||
			return 1
		grep " /tmp/rrr-lk-mnt2 " /proc/mounts
		echo rdma > /tmp/rrr-lk-mnt2/r.txt && sync && [ "$(cat "$EXP/r.txt")" = rdma ]
		local r=$?
		umount /tmp/rrr-lk-mnt2 || umount -f /tmp/rrr-lk-mnt2
		return $r ;;
	blocked) # KIND: a client's lock waits on the server
		if [ "$2" = rrr ]; then
			[ "$(srv_action stat-rrr nlm.blocked)" -ge 1 ] 2>/dev/null
		else
			grep -q -- '->' /proc/locks
		fi ;;
	esac
}

if [ "${1:-}" = --srv ]; then
	shift
	srv_action "$@"
	exit $?
fi

# ------------------------------------------------------------- client side
row() { printf '%s|%s|%s\n' "$1" "$2" "$3" >> "$RES.$4"; }
ok() { row "$1" "$2" PASS "$3"; }
bad() { row "$1" "$2" "FAIL${4:+ ($4)}" "$3"; FAILED=1; }

# try MODE: the client takes the lock without waiting (0), or not (1)
try() { timeout 120 "$PY" "$LK" try "$MNT/f" "$1"; }

hold() { # MODE: a client process holds a lock until release
	rm -f /tmp/rrr-lk-c.ready /tmp/rrr-lk-c.release
	"$PY" "$LK" hold "$MNT/f" "$1" /tmp/rrr-lk-c.ready /tmp/rrr-lk-c.release &
	HPID=$!
	# (the kernel's nfsd makes new locks wait out its grace period at start)
	for _ in $(seq 1 1200); do [ -e /tmp/rrr-lk-c.ready ] && return 0; sleep 0.1; done
	return 1
}
release() {
	touch /tmp/rrr-lk-c.release
	wait "$HPID" 2>/dev/null
	rm -f /tmp/rrr-lk-c.release
}

lock_cases() { # KIND TRANSPORT
	local k=$1 t=$2 c
	for m in lockf-ex flock-ex; do
		c="$t: $m against $m of another process"
		if hold $m; then
			try $m; [ $? -eq 1 ] && ok "$c" "$t" "$k" || bad "$c" "$t" "$k"
			release
			try $m && ok "$t: $m free after release" "$t" "$k" ||
				bad "$t: $m free after release" "$t" "$k"
		else
			bad "$c" "$t" "$k" "cannot hold"; release
		fi
	done
	c="$t: lockf-sh beside lockf-sh, lockf-ex refused"
	if hold lockf-sh; then
		try lockf-sh && { try lockf-ex; [ $? -eq 1 ]; } && ok "$c" "$t" "$k" || bad "$c" "$t" "$k"
		release
	else
		bad "$c" "$t" "$k" "cannot hold"; release
	fi
	# two processes of the client: the client's kernel makes the second wait
	# on the first locally, then asks the server
	c="$t: a waiting lockf-ex of a second process, granted at release"
	if hold lockf-ex; then
		timeout 300 "$PY" "$LK" wait "$MNT/f" lockf-ex & local w=$!
		# the waiter shows in /proc/locks ("->") once it waits on the first
		for _ in $(seq 1 100); do grep -q -- '->' /proc/locks && break; sleep 0.1; done
		local t0=$(date +%s)
		release
		wait $w; local wr=$?
		local dt=$(( $(date +%s) - t0 ))
		[ $wr -eq 0 ] && [ $dt -lt 25 ] && ok "$c" "$t" "$k" ||
			bad "$c" "$t" "$k" "exit $wr after ${dt}s"
	else
		bad "$c" "$t" "$k" "cannot hold"; release
	fi
	# a lock that waits on the server (a local process there holds the range):
	# granted by the server's GRANTED callback, well before the client's 30 s re-poll
	c="$t: a lock waiting on the server, GRANTED at release"
	if srv hold "$EXP/f" lockf-ex; then
		timeout 300 "$PY" "$LK" wait "$MNT/f" lockf-ex & local w=$!
		local seen=0 end=$(( $(date +%s) + 60 ))
		while [ "$(date +%s)" -lt $end ]; do
			srv blocked "$k" && { seen=1; break; }
			sleep 0.2
		done
		local t0=$(date +%s)
		srv release
		wait $w; local wr=$?
		local dt=$(( $(date +%s) - t0 ))
		local info="waiting seen=$seen, exit $wr after ${dt}s"
		[ $k = rrr ] && info="$info, callbacks ok=$(srv stat-rrr nlm.callbacks_ok) failed=$(srv stat-rrr nlm.callbacks_failed)"
		echo "$c: $info"
		[ $wr -eq 0 ] && [ $seen -eq 1 ] && [ $dt -lt 25 ] && ok "$c" "$t" "$k" ||
			bad "$c" "$t" "$k" "$info"
	else
		bad "$c" "$t" "$k" "cannot hold on the server"
	fi
	c="$t: a local lock on the server excludes the client"
	if srv hold "$EXP/f" lockf-ex; then
		try lockf-ex; local r=$?
		srv release
		[ $r -eq 1 ] && try lockf-ex && ok "$c" "$t" "$k" || bad "$c" "$t" "$k" "try=$r"
	else
		bad "$c" "$t" "$k" "cannot hold on the server"
	fi
	c="$t: SQLite, two writers, integrity_check"
	rm -f "$MNT"/db.sqlite*
	"$PY" "$LK" sqlite "$MNT/db.sqlite" 1 & local s1=$!
	"$PY" "$LK" sqlite "$MNT/db.sqlite" 2 & local s2=$!
	local sr=0
	wait $s1 || sr=1
	wait $s2 || sr=1
	local chk=$("$PY" "$LK" check "$MNT/db.sqlite" 2>&1)
	[ $sr -eq 0 ] && [ "$chk" = "ok 200" ] && ok "$c" "$t" "$k" || bad "$c" "$t" "$k" "$chk"
}

restart_case() { # KIND: a lock held across a restart is reclaimed
	local k=$1 c="tcp: a lock held across a restart, reclaimed"
	[ "$k" = rrr ] || { row "$c" tcp "not run (needs sm-notify on the server)" "$k"; return; }
	if ! hold lockf-ex; then bad "$c" tcp "$k" "cannot hold"; release; return; fi
	srv stop-rrr && srv start-rrr 15 || { bad "$c" tcp "$k" "restart"; release; return; }
	local n=0
	for _ in $(seq 1 600); do
		n=$(srv stat-rrr nsm.notified); [ "${n:-0}" -ge 1 ] && break; sleep 0.1
	done
	local g=0
	for _ in $(seq 1 600); do
		g=$(srv stat-rrr nlm.granted); [ "${g:-0}" -ge 1 ] && break; sleep 0.1
	done
	try lockf-ex; local r=$? # waits out the grace period, then meets the reclaimed lock
	release
	try lockf-ex; local r2=$?
	[ "${n:-0}" -ge 1 ] && [ "${g:-0}" -ge 1 ] && [ $r -eq 1 ] && [ $r2 -eq 0 ] &&
		ok "$c" tcp "$k" || bad "$c" tcp "$k" "notified=$n reclaimed=$g try=$r,$r2"
}

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
				[ $t = tcp ] && restart_case $k
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
	echo
	printf '%-52s %-6s %-30s %s\n' case via rrr-server "kernel nfsd"
	awk -F'|' 'FNR == NR { k[$1 "|" $2] = $3; order[++n] = $1 "|" $2; next }
		   { key = $1 "|" $2; if (!(key in k)) { order[++n] = key } kn[key] = $3 }
		   END { for (i = 1; i <= n; i++) { split(order[i], p, "|");
			 printf "%-52s %-6s %-30s %s\n", p[1], p[2], k[order[i]], kn[order[i]] } }' \
		"$RES.rrr" "$RES.knfsd"
	return $FAILED
}

if [ "${1:-}" = --client ]; then
	client_main
	exit $?
fi

# ------------------------------------------------------------ orchestration
[ -x "$S" ] || { echo "missing $S (make all)"; exit 1; }
for t in rpcbind rpc.statd mount.nfs rpc.nfsd rpc.mountd exportfs nsenter "$PY"; do
	command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] ||
		{ echo "$t missing (rpcbind, nfs-common, nfs-kernel-server: make deps-vm)"; exit 77; }
done
"$PY" -c 'import sqlite3, fcntl' || { echo "python3 without sqlite3 (make deps-vm)"; exit 77; }
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

cat > "$LK" <<'EOF'
import fcntl, os, sqlite3, sys, time
cmd, path = sys.argv[1], sys.argv[2]
def take(fd, mode, block):
    kind, sh = mode.split('-')
    if kind == 'lockf':
        if sh == 'sh':  # lockf has no shared lock: fcntl F_RDLCK
            fcntl.lockf(fd, fcntl.LOCK_SH | (0 if block else fcntl.LOCK_NB))
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    else:
        fcntl.flock(fd, (fcntl.LOCK_SH if sh == 'sh' else fcntl.LOCK_EX) | (0 if block else fcntl.LOCK_NB))
if cmd in ('hold', 'try', 'wait'):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        take(fd, sys.argv[3], cmd == 'wait')
    except (BlockingIOError, PermissionError):
        sys.exit(1)
    except OSError as e:
        print("lock error:", e); sys.exit(2)
    if cmd == 'hold':
        ready, release = sys.argv[4], sys.argv[5]
        open(ready, 'w').close()
        while not os.path.exists(release):
            time.sleep(0.05)
        os.close(fd)
        os.unlink(ready)
    sys.exit(0)
if cmd == 'sqlite':
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    db.execute('CREATE TABLE IF NOT EXISTS t (w INTEGER, i INTEGER, pad TEXT)')
    for i in range(100):
        db.execute('BEGIN IMMEDIATE')
        db.execute('INSERT INTO t VALUES (?, ?, ?)', (int(sys.argv[3]), i, 'x' * 500))
        db.execute('COMMIT')
    db.close()
    sys.exit(0)
if cmd == 'check':
    db = sqlite3.connect(path, timeout=60)
    print(db.execute('PRAGMA integrity_check').fetchone()[0], db.execute('SELECT count(*) FROM t').fetchone()[0])
EOF

RRR_LK_ORCH=$$ ip netns exec cli bash "$ME" --client
rc=$?
echo "--- rrr-server log (without the counters)"
grep -v '^  ' /tmp/rrr-lk-server.log | tail -n 60
[ $rc -eq 0 ] && echo "locking through the kernel client, rrr-server and kernel nfsd: OK"
exit $rc
