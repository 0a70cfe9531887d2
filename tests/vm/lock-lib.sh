# tests/vm/lock-lib.sh - sourced by the VM lock scripts
# (tests.d/80-nfs-locking.sh, siw.d/40-nfs-locking-rdma.sh): the kernel NFS
# client locks files on rrr-server and on the kernel's nfsd, which run in
# another network namespace than the client (a host's NFS client and server
# cannot share one rpcbind: the client's lockd takes the NLM mapping).
#
# The caller sets, before sourcing:
#   S (rrr-server), EXP (the export, on a tmpfs both namespaces see), ST
#   (rrr-server's state directory), MNT (the client's mount point), RES
#   (results prefix: RES.rrr, RES.knfsd), LK_RRR_ARGS (array: rrr-server's
#   provider and listen arguments)
# and defines srv ACTION ARGS...: runs lk_srv_action (or its own actions)
# on the servers' side, whichever namespace that is.
#
# Server side: lk_srv_action start-rrr [GRACE] | stop-rrr | stat-rrr NAME |
#   start-knfsd (TCP) | knfsd-rdma (adds 'rdma 20049' to nfsd's portlist) |
#   stop-knfsd | reboot-knfsd | locked FILE | try FILE MODE | hold FILE MODE |
#   release | blocked KIND; 2 for another word.
# Client side: lk_write_helper, lock_cases KIND TRANSPORT, restart_case KIND
#   TRANSPORT, ok/bad/row (results), lk_table (the two columns side by side).
PY=/usr/bin/python3
LK=/tmp/rrr-lk.py

# ------------------------------------------------------------- server side
lk_srv_action() {
	case "$1" in
	start-rrr)
		rm -f /tmp/rrr-lk-ports
		"$S" --export "$EXP" "${LK_RRR_ARGS[@]}" \
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
		# (an rpc.mountd of this network namespace: another one's is no use)
		local ns=(--ns $$ --nslist net)
		# an rpc.statd that its rpcbind knows (lockd monitors the clients
		# through it; one started while rrr-server held the NSM mapping
		# runs unregistered)
		if ! rpcinfo -p 2>/dev/null | grep -qw status; then
			pkill "${ns[@]}" -x rpc.statd
			rpc.statd --no-notify && pgrep "${ns[@]}" -x rpc.statd > /tmp/rrr-lk-statd.pid
		fi
		exportfs -ra && { pgrep "${ns[@]}" -x rpc.mountd >/dev/null ||
				  { rpc.mountd -p 20048 -N 2 &&
				    pgrep "${ns[@]}" -x rpc.mountd > /tmp/rrr-lk-mountd.pid; }; } &&
			rpc.nfsd -N 4 4 ;;
	knfsd-rdma) # the kernel's answer on stderr when it cannot
		grep -q rdma /proc/fs/nfsd/portlist || echo 'rdma 20049' > /proc/fs/nfsd/portlist ;;
	stop-knfsd)
		rpc.nfsd 0
		[ -s /tmp/rrr-lk-mountd.pid ] && kill $(cat /tmp/rrr-lk-mountd.pid) # ours only
		rm -f /tmp/rrr-lk-mountd.pid
		[ -s /tmp/rrr-lk-statd.pid ] && kill $(cat /tmp/rrr-lk-statd.pid) # ours only
		rm -f /tmp/rrr-lk-statd.pid
		exportfs -ua; : ;;
	reboot-knfsd) # FILE: the kernel's nfsd as after a reboot of its host,
		# played as its cluster fail-over does: the locks taken through
		# the server's address go (unlock_ip: stopping nfsd alone keeps
		# lockd's locks), nfsd and lockd stop (lockd has statd forget the
		# clients), the monitor records come back as a reboot finds them
		# on disk, nfsd starts again (lockd in its grace period) and
		# sm-notify, with a new state number and the address the clients
		# know the server by, tells them; they reclaim.
		local sm=/var/lib/nfs/sm ns=(--ns $$ --nslist net) rd
		rd=$(grep -m1 '^rdma ' /proc/fs/nfsd/portlist) # listeners nfsd had
		rm -rf /tmp/rrr-lk-sm && cp -a "$sm" /tmp/rrr-lk-sm || return 1
		ls /tmp/rrr-lk-sm | grep -q . || {
			echo "reboot-knfsd: statd monitors nobody in $sm"
			rpcinfo -p | grep -E 'status|nlockmgr'; pgrep -a rpc.statd; dmesg | grep -E 'lockd|statd' | tail -n 5
			return 1; }
		echo "$SRV" > /proc/fs/nfsd/unlock_ip || return 1
		rpc.nfsd 0
		for _ in $(seq 1 100); do lk_srv_action locked "$2" || break; sleep 0.1; done
		# (on failure nfsd comes back, so that the client's unlock and
		# unmount do not wait on a stopped server)
		lk_srv_action locked "$2" &&
			{ echo "reboot-knfsd: the lock outlived unlock_ip:"; cat /proc/locks
			  lk_knfsd_up "$rd"; return 1; }
		cp -a /tmp/rrr-lk-sm/. "$sm"/
		pgrep "${ns[@]}" -x rpc.statd >/dev/null || rpc.statd --no-notify || return 1
		lk_knfsd_up "$rd" || { echo "reboot-knfsd: nfsd did not start again"; return 1; }
		# (-d: in the foreground, its messages on stderr; done once the
		# clients answered. sm-notify wants a name for the address, as a
		# host on a network has; the VM's /etc is its own.)
		grep -q "^$SRV " /etc/hosts || echo "$SRV rrr-lk-server" >> /etc/hosts
		timeout 120 sm-notify -d -f -v "$SRV" ||
			{ echo "reboot-knfsd: sm-notify failed ($?)"; return 1; } ;;
	locked) # FILE: a lock (not a waiter) on FILE in the server's /proc/locks
		local di d i
		di=$(stat -c '%d %i' "$2") || return 1
		d=${di% *} i=${di#* }
		# (/proc/locks names a file MAJOR:MINOR:INODE, the first two in hex)
		grep -v -- '->' /proc/locks |
			grep -q " $(printf '%02x:%02x:%s' $(( (d >> 8) & 0xfff )) \
				$(( (d & 0xff) | ((d >> 12) & 0xfff00) )) "$i") " ;;
	try) # FILE MODE: a local process on the server takes the lock (0) or not (1)
		timeout 60 "$PY" "$LK" try "$2" "$3" ;;
	hold) # FILE MODE: a local process on the server holds a lock
		"$PY" "$LK" hold "$2" "$3" /tmp/rrr-lk-local.ready /tmp/rrr-lk-local.release &
		for _ in $(seq 1 100); do [ -e /tmp/rrr-lk-local.ready ] && break; sleep 0.1; done
		[ -e /tmp/rrr-lk-local.ready ] ;;
	release)
		touch /tmp/rrr-lk-local.release
		for _ in $(seq 1 100); do [ -e /tmp/rrr-lk-local.ready ] || break; sleep 0.1; done
		rm -f /tmp/rrr-lk-local.release ;;
	blocked) # KIND: a client's lock waits on the server
		if [ "$2" = rrr ]; then
			[ "$(lk_srv_action stat-rrr nlm.blocked)" -ge 1 ] 2>/dev/null
		else
			grep -q -- '->' /proc/locks
		fi ;;
	*) return 2 ;;
	esac
}

# lk_knfsd_up [RDMA-LISTENER]: nfsd's threads again, with its RDMA listener
lk_knfsd_up() {
	rpc.nfsd -N 4 4 || return 1
	[ -z "$1" ] || grep -q '^rdma ' /proc/fs/nfsd/portlist || echo "$1" > /proc/fs/nfsd/portlist
}

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
	local k=$1 t=$2 c m
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

restart_case() { # KIND TRANSPORT: a lock held across a restart is reclaimed
	# The client holds a lock; the server restarts (rrr-server: the process;
	# the kernel's nfsd: reboot-knfsd) and drops it; the client, told by
	# SM_NOTIFY, reclaims it in the grace period. Seen from the server: a
	# local process cannot take the range until the client releases it.
	local k=$1 t=$2 c="$2: a lock held across a restart, reclaimed"
	if ! hold lockf-ex; then bad "$c" "$t" "$k" "cannot hold"; release; return; fi
	local held=0 back=0 n=- g=- r r2
	srv locked "$EXP/f" && held=1
	if [ "$k" = rrr ]; then
		srv stop-rrr && srv start-rrr 15
	else
		srv reboot-knfsd "$EXP/f"
	fi || { bad "$c" "$t" "$k" "restart"; release; return; }
	# the reclaim: the lock is back on the server's file
	for _ in $(seq 1 1200); do srv locked "$EXP/f" && { back=1; break; }; sleep 0.1; done
	if [ "$k" = rrr ]; then
		n=$(srv stat-rrr nsm.notified)
		g=$(srv stat-rrr nlm.granted)
	fi
	srv try "$EXP/f" lockf-ex; r=$?
	release
	for _ in $(seq 1 300); do srv locked "$EXP/f" || break; sleep 0.1; done
	srv try "$EXP/f" lockf-ex; r2=$?
	[ $held -eq 1 ] && [ $back -eq 1 ] && [ $r -eq 1 ] && [ $r2 -eq 0 ] &&
		{ [ "$k" != rrr ] || { [ "${n:-0}" -ge 1 ] && [ "${g:-0}" -ge 1 ]; }; } &&
		ok "$c" "$t" "$k" ||
		bad "$c" "$t" "$k" "held=$held reclaimed=$back notified=$n granted=$g server try=$r,$r2"
}

lk_table() { # the rows of RES.rrr and RES.knfsd side by side
	echo
	awk -F'|' 'FNR == NR { k[$1 "|" $2] = $3; order[++n] = $1 "|" $2 }
		   FNR != NR { key = $1 "|" $2; if (!(key in k)) { order[++n] = key } kn[key] = $3 }
		   length($1) > w { w = length($1) }
		   END { printf "%-*s %-6s %-30s %s\n", w, "case", "via", "rrr-server", "kernel nfsd"
			 for (i = 1; i <= n; i++) { split(order[i], p, "|");
			 printf "%-*s %-6s %-30s %s\n", w, p[1], p[2], k[order[i]], kn[order[i]] } }' \
		"$RES.rrr" "$RES.knfsd"
}

# lk_need: exit 77 (skipped) when a tool is missing
lk_need() {
	local t
	for t in rpcbind rpc.statd sm-notify mount.nfs rpc.nfsd rpc.mountd exportfs nsenter "$PY"; do
		command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] ||
			{ echo "$t missing (rpcbind, nfs-common, nfs-kernel-server: make deps-vm)"; exit 77; }
	done
	"$PY" -c 'import sqlite3, fcntl' || { echo "python3 without sqlite3 (make deps-vm)"; exit 77; }
}

# lk_write_helper: the lock program ($LK): hold FILE MODE READY RELEASE,
# try FILE MODE, wait FILE MODE, sqlite DB WRITER, check DB
lk_write_helper() {
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
}
