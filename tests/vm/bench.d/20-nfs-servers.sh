# vm-timeout: 1500
# The Linux kernel NFSv3/RDMA client (rxe0) against rrr-server (verbs provider)
# and against the kernel's own nfsd, measured with fio, the servers taking
# turns: rrr-server, knfsd, rrr-server, knfsd, ... (RRR_VM_BENCH_ROUNDS rounds),
# so that the drift of a TCG run lands on both. Then, optionally, rrr-bench io
# (rrr's own client, RPC-over-RDMA and NFS over TCP) against both servers.
#
# Same conditions for both servers:
#   - each exports its own tmpfs of the same size (RRR_VM_BENCH_TMPFS_MB) holding
#     the same file (RRR_VM_BENCH_MB MiB, written locally before the rounds);
#   - the same mount options ($MOPTS below; rsize/wsize are whatever each server
#     offers: the negotiated values are recorded);
#   - 2 server threads each (rrr-server --threads 2, rpc.nfsd 2: one per vCPU;
#     nfsd's own default would be 8, RRR_VM_BENCH_KNFSD_THREADS), MOUNT over TCP
#     on port 20048 (rrr-server's own, rpc.mountd -p 20048 for knfsd);
#   - each round starts the server, mounts, runs every cell, unmounts and stops
#     the server (rrr-server: SIGTERM, it prints its counters; nfsd: rpc.nfsd 0).
# Cells (fio, ioengine=libaio, direct=1, time-based): write and read, sequential,
# 1 MiB and 4 KiB blocks, iodepth 1 and 16, and 4 KiB randwrite/randread at
# iodepth 1 and 16 (RRR_VM_BENCH_RAND=0 leaves those out). Without fio: dd
# (sequential QD1 only, and the script says so).
#
# Knobs (host environment; run.sh passes RRR_VM_BENCH_* into the VM):
#   RRR_VM_BENCH_ROUNDS   rounds per server (default 3)
#   RRR_VM_BENCH_SECONDS  measured seconds per cell (default 5)
#   RRR_VM_BENCH_RAMP     fio ramp seconds before each cell (default 1)
#   RRR_VM_BENCH_MB       file size in MiB (default 32; dd: MiB per 1 MiB run)
#   RRR_VM_BENCH_MB_4K    dd only: MiB per 4 KiB run (default 2)
#   RRR_VM_BENCH_TMPFS_MB size of each export's tmpfs (default 256)
#   RRR_VM_BENCH_RAND     1: add the 4 KiB random cells (default 1; 0 saves ~25%)
#   RRR_VM_BENCH_IO       1: also rrr-bench io against both servers (default 1;
#                         about 100 s)
#   RRR_VM_BENCH_CELLS    only these cells, e.g. "write 1M 1,read 4k 16" (fio)
#   RRR_VM_BENCH_MOUNT_EXTRA  appended to the mount options of both servers
#                         (e.g. rsize=262144,wsize=262144: nfsd's size for both)
#   RRR_VM_BENCH_KNFSD_THREADS  nfsd threads (default 2, like rrr-server's)
#   RRR_VM_BENCH_SERVER_ARGS    appended to rrr-server's command line, e.g.
#                               "--wait event" (word-split; default none)
#   RRR_VM_BENCH_SERVER_PROVIDER  rrr-server's provider: verbs (on the VM's
#                               device, default) or soft (user-space iWARP,
#                               for the kernel client over siw0)
#   RRR_VM_BENCH_NAME           result file prefix (default vm-nfs-servers)
#
# Results in $RRR_VM_RESULTS: vm-nfs-servers.{txt,json} (per cell: median, min,
# max of each server over the rounds, ratio of the medians rrr/knfsd, goal >=
# 1.0), vm-nfs-servers.rounds (one line per server, round and cell),
# vm-nfs-counters.log (rxe0 hw counters and nfsd's rpc stats per server-round,
# rrr-server's final counters per round), vm-io-{rrr,knfsd}.{json,txt}.
# rrr-bench io uses 4 KiB and 256 KiB: nfsd in this 2 GiB VM advertises 256 KiB
# per READ/WRITE (FSINFO; it answered 1 MiB WRITEs with RDMA_ERROR / a TCP reset).
set -u
S="$RRR_BUILD/rrr-server"
B="$RRR_BUILD/rrr-bench"
for p in "$S" "$B"; do [ -x "$p" ] || { echo "missing $p (make all)"; exit 1; }; done
command -v mount.nfs >/dev/null || [ -x /sbin/mount.nfs ] ||
	{ echo "mount.nfs missing (nfs-common: make deps-vm)"; exit 77; }
for t in rpc.nfsd rpc.mountd exportfs rpcbind; do
	command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] ||
		{ echo "$t missing (nfs-kernel-server, rpcbind: make deps-vm)"; exit 77; }
done
ADDR=${RRR_VM_ADDR:-10.0.2.15}
D=${RRR_VERBS_DEV:-rxe0}
OUT=${RRR_VM_RESULTS:-/tmp}
ROUNDS=${RRR_VM_BENCH_ROUNDS:-3}
SECS=${RRR_VM_BENCH_SECONDS:-5}
RAMP=${RRR_VM_BENCH_RAMP:-1}
MB=${RRR_VM_BENCH_MB:-32}
MB4K=${RRR_VM_BENCH_MB_4K:-2}
TMPFS_MB=${RRR_VM_BENCH_TMPFS_MB:-256}
RAND=${RRR_VM_BENCH_RAND:-1}
DO_IO=${RRR_VM_BENCH_IO:-1}
KTHREADS=${RRR_VM_BENCH_KNFSD_THREADS:-2}
SERVER_ARGS=${RRR_VM_BENCH_SERVER_ARGS:-}
MOPTS="vers=3,proto=rdma,port=20049,mountproto=tcp,mountport=20048,nolock,soft,timeo=300,retrans=2"
[ -n "${RRR_VM_BENCH_MOUNT_EXTRA:-}" ] && MOPTS="$MOPTS,$RRR_VM_BENCH_MOUNT_EXTRA"
MNT=/tmp/bench-mnt
REXP=/srv/bench-rrr   # rrr-server's export (a tmpfs)
KEXP=/srv/bench-kexp  # knfsd's export (a tmpfs of the same size)
FILE=bench-file
NAME=${RRR_VM_BENCH_NAME:-vm-nfs-servers}
SPROV=${RRR_VM_BENCH_SERVER_PROVIDER:-verbs}
case "$SPROV" in
verbs) SPROV_ARGS=(--provider verbs --provider-opts "dev=$D") ;;
soft) SPROV_ARGS=(--provider soft) ;;
*) echo "RRR_VM_BENCH_SERVER_PROVIDER: verbs or soft, not '$SPROV'"; exit 1 ;;
esac
ROUNDS_F="$OUT/$NAME.rounds"
CNT="$OUT/${NAME%-servers*}-counters${NAME#vm-nfs-servers}.log"
: > "$ROUNDS_F"
: > "$CNT"
rm -f "$OUT/$NAME.txt" "$OUT/$NAME.json"
mkdir -p "$MNT" "$REXP" "$KEXP" /tmp/bench-state /var/lib/nfs /run/rpcbind /proc/fs/nfsd

TOOL=fio
FIO=$(command -v fio)
if [ -z "$FIO" ]; then
	TOOL="dd"
	echo "NOTE: fio is not installed (make deps-vm installs it): falling back to dd,"
	echo "NOTE: sequential QD1 only (write then read, $MB MiB at 1 MiB, $MB4K MiB at 4 KiB)."
fi
# cells: "rw bs qd" (rw as fio spells it)
CELLS=()
if [ "$TOOL" = fio ]; then
	for bs in 1M 4k; do
		for qd in 1 16; do CELLS+=("write $bs $qd" "read $bs $qd"); done
	done
	if [ "$RAND" = 1 ]; then
		for qd in 1 16; do CELLS+=("randwrite 4k $qd" "randread 4k $qd"); done
	fi
else
	CELLS=("write 1M 1" "read 1M 1" "write 4k 1" "read 4k 1")
fi
if [ "$TOOL" = fio ] && [ -n "${RRR_VM_BENCH_CELLS:-}" ]; then
	IFS=, read -r -a CELLS <<< "$RRR_VM_BENCH_CELLS"
fi
est=$(( ROUNDS * 2 * (${#CELLS[@]} * (SECS + RAMP + 4) + 25) ))
[ "$DO_IO" = 1 ] && est=$(( est + 150 ))
echo "== $TOOL, ${#CELLS[@]} cells x $ROUNDS rounds x 2 servers, ${SECS}s (+${RAMP}s ramp) per cell:" \
	"about ${est}s (this script may take ${RRR_VM_SCRIPT_TIMEOUT:-?}s)"
echo "== mount options (both servers): $MOPTS"
echo "== server threads: rrr-server 2, knfsd $KTHREADS"
[ -n "$SERVER_ARGS" ] && echo "== rrr-server extra arguments: $SERVER_ARGS"
T_START=$(date +%s)

# ---------------------------------------------------------------- results
# one line per measurement in $ROUNDS_F:
#   server round rw bs qd mb_per_s iops lat_mean_us error
summarize() {
	[ -s "$ROUNDS_F" ] || return 0
	local fio_v=$TOOL
	[ "$TOOL" = fio ] && fio_v=$("$FIO" --version 2>/dev/null)
	awk -v tool="$fio_v" -v rounds="$ROUNDS" -v secs="$SECS" -v ramp="$RAMP" -v mb="$MB" \
	    -v tmpfs="$TMPFS_MB" -v mopts="$MOPTS" -v kthr="$KTHREADS" -v rneg="${NEG_rrr:-}" -v kneg="${NEG_knfsd:-}" -v sargs="$SERVER_ARGS" \
	    -v dev="$D" -v sprov="$SPROV" -v txt="$OUT/$NAME.txt" -v json="$OUT/$NAME.json" '
	function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
	function med(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	function stats(key, what,   n, a, i, s) {  # -> S_med S_min S_max S_list
		n = cnt[key]; S_list = ""
		for (i = 1; i <= n; i++) { a[i] = val[key, what, i]; S_list = S_list (i > 1 ? ", " : "") val[key, what, i] }
		if (n == 0) { S_med = S_min = S_max = -1; return 0 }
		sort(a, n); S_med = med(a, n); S_min = a[1]; S_max = a[n]; return n
	}
	$9 != 0 { errs[$1 " " $3 " " $4 " " $5] = errs[$1 " " $3 " " $4 " " $5] " r" $2 "=" $9; next }
	{
		cell = $3 " " $4 " " $5
		if (!(cell in seen)) { seen[cell] = 1; order[++ncell] = cell }
		key = $1 SUBSEP cell; i = ++cnt[key]
		val[key, "mb", i] = $6 + 0; val[key, "iops", i] = $7 + 0; val[key, "lat", i] = $8 + 0
		byround[$1, cell, $2] = $6 + 0; if ($2 > maxr) maxr = $2
	}
	END {
		printf "== kernel NFSv3/RDMA client on %s (qemu TCG), %s, O_DIRECT, libaio; rrr-server on %s\n", dev, tool, sprov > txt
		printf "== %d rounds alternating rrr-server / knfsd, %ss per cell (+%ss ramp), %d MiB file,\n", rounds, secs, ramp, mb > txt
		printf "== each server exports a %d MiB tmpfs; mount -o %s\n", tmpfs, mopts > txt
		printf "== negotiated: rrr-server %s; knfsd %s; threads: rrr-server 2, knfsd %d\n", rneg, kneg, kthr > txt
		if (sargs != "") printf "== rrr-server extra arguments: %s\n", sargs > txt
		printf "== median over the rounds (min-max); ratio = rrr median / knfsd median; goal >= 1.0\n" > txt
		printf "== round ratios: rrr / knfsd of the same round (the two ran back to back)\n" > txt
		printf "%-16s %21s %21s %9s %9s %6s %15s %4s  %s\n", "cell", "rrr MB/s (min-max)", "knfsd MB/s (min-max)", "rrr IOPS", "knfsd IOPS", "ratio", "round ratios", "won", "goal" > txt
		printf "{\n  \"benchmark\": \"vm-nfs-servers\",\n  \"tool\": \"%s\",\n  \"rounds\": %d,\n  \"seconds_per_cell\": %s,\n  \"ramp_seconds\": %s,\n  \"file_mib\": %d,\n  \"export_fs\": \"tmpfs %d MiB (each server its own)\",\n  \"mount_options\": \"%s\",\n  \"negotiated\": {\"rrr-server\": \"%s\", \"knfsd\": \"%s\"},\n  \"threads\": {\"rrr-server\": 2, \"knfsd\": %d},\n  \"rrr_server_args\": \"%s\",\n  \"goal_ratio\": 1.0,\n  \"cells\": [", tool, rounds, secs, ramp, mb, tmpfs, mopts, rneg, kneg, kthr, sargs > json
		sep = ""
		for (c = 1; c <= ncell; c++) {
			cell = order[c]; split(cell, f, " ")
			line = ""; jl = ""
			for (s = 1; s <= 2; s++) {
				srv = s == 1 ? "rrr-server" : "knfsd"; key = srv SUBSEP cell
				n = stats(key, "mb"); m[s] = S_med; mn[s] = S_min; mx[s] = S_max; ml = S_list
				stats(key, "iops"); im[s] = S_med; il = S_list
				stats(key, "lat"); lm[s] = S_med
				txtc[s] = n ? sprintf("%.2f (%.2f-%.2f)", m[s], mn[s], mx[s]) : "-"
				txti[s] = n ? sprintf("%.0f", im[s]) : "-"
				jl = jl sprintf("%s\n      \"%s\": {\"n\": %d, \"mb_per_s_median\": %.3f, \"mb_per_s_min\": %.3f, \"mb_per_s_max\": %.3f, \"iops_median\": %.1f, \"lat_mean_us_median\": %.1f, \"mb_per_s_rounds\": [%s], \"iops_rounds\": [%s]}", s == 1 ? "" : ",", srv, n, m[s], mn[s], mx[s], im[s], lm[s], ml, il)
			}
			ratio = (m[1] > 0 && m[2] > 0) ? m[1] / m[2] : -1
			np = 0; won = 0; rl = ""; rmin = 1e9; rmax = 0
			for (rr = 1; rr <= maxr; rr++) {
				if (!(("rrr-server", cell, rr) in byround) || !(("knfsd", cell, rr) in byround) || byround["knfsd", cell, rr] <= 0) continue
				q = byround["rrr-server", cell, rr] / byround["knfsd", cell, rr]
				np++; won += q >= 1.0; rl = rl (np > 1 ? ", " : "") sprintf("%.3f", q)
				if (q < rmin) rmin = q; if (q > rmax) rmax = q
			}
			rtxt = np ? sprintf("%.2f-%.2f", rmin, rmax) : "-"
			verdict = ratio < 0 ? "n/a" : (ratio >= 1.0 ? "met" : "NOT met")
			e = errs["rrr-server " cell] errs["knfsd " cell]
			printf "%-16s %21s %21s %9s %9s %6.2f %15s %4s  %s%s\n", f[1] " " f[2] " qd" f[3], txtc[1], txtc[2], txti[1], txti[2], ratio, rtxt, won "/" np, verdict, e != "" ? "  (errors:" e ")" : "" > txt
			printf "%s\n    {\"rw\": \"%s\", \"bs\": \"%s\", \"iodepth\": %d,%s,\n      \"ratio_rrr_knfsd\": %.3f, \"round_ratios\": [%s], \"rounds_won\": %d, \"goal_met\": %s%s}", sep, f[1], f[2], f[3], jl, ratio, rl, won, ratio < 0 ? "null" : (ratio >= 1.0 ? "true" : "false"), e != "" ? sprintf(", \"errors\": \"%s\"", e) : "" > json
			sep = ","
		}
		printf "\n  ]\n}\n" > json
	}' "$ROUNDS_F"
	{
		echo
		echo "== every measurement: server round cell MB/s IOPS lat_mean_us error"
		cat "$ROUNDS_F"
	} >> "$OUT/$NAME.txt"
}

# ---------------------------------------------------------------- servers
SPID=
MPID=
KNFSD_UP=0
cleanup() {
	summarize
	umount -f "$MNT" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	[ "$KNFSD_UP" = 1 ] && timeout 20 rpc.nfsd 0 2>/dev/null
	[ -n "$MPID" ] && kill "$MPID" 2>/dev/null
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

start_rrr() { # ROUND
	rm -f /tmp/bench-ports
	"$S" --export "$REXP" "${SPROV_ARGS[@]}" --listen "$ADDR" \
		--port 20049 --mount-port 20048 --state-dir /tmp/bench-state \
		--port-file /tmp/bench-ports --threads 2 --no-root-squash $SERVER_ARGS \
		> "/tmp/bench-rrr-server.$1.log" 2>&1 &
	SPID=$!
	for _ in $(seq 1 300); do [ -s /tmp/bench-ports ] && return 0; sleep 0.1; done
	cat "/tmp/bench-rrr-server.$1.log"
	fail "rrr-server did not start (round $1)"
}
stop_rrr() { # ROUND
	kill -TERM "$SPID"
	for _ in $(seq 1 300); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$SPID" 2>/dev/null; then
		echo "WARNING: rrr-server did not stop in 30 s after SIGTERM (round $1): SIGKILL"
		kill -KILL "$SPID"
	fi
	wait "$SPID"
	echo "rrr-server round $1 exit status $?"
	SPID=
	{ echo "---- rrr-server round $1 (log and final counters)"; cat "/tmp/bench-rrr-server.$1.log"; } >> "$CNT"
}
knfsd_setup() {
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	echo "$KEXP *(rw,no_root_squash,insecure,no_subtree_check,fsid=78)" > /etc/exports
	rpcbind -w 2>/dev/null || rpcbind
	exportfs -ra || fail "exportfs"
}
start_knfsd() {
	rpc.mountd -F -p 20048 -N 2 -N 4 > /tmp/bench-mountd.log 2>&1 &
	MPID=$!
	rpc.nfsd -N 4 "$KTHREADS" || fail "rpc.nfsd"
	KNFSD_UP=1
	grep -q rdma /proc/fs/nfsd/portlist || echo 'rdma 20049' > /proc/fs/nfsd/portlist ||
		fail "cannot add the rdma port to nfsd"
	# rpc.mountd listening on 20048 before the mount asks it
	for _ in $(seq 1 100); do
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$2 ~ /:4E50$/ && $4 == "0A" { f = 1 } END { exit !f }' && return 0
		sleep 0.1
	done
	echo "WARNING: rpc.mountd not seen listening on 20048 after 10 s"
}
stop_knfsd() {
	timeout 60 rpc.nfsd 0 || echo "WARNING: rpc.nfsd 0 failed"
	KNFSD_UP=0
	kill -TERM "$MPID" 2>/dev/null
	wait "$MPID" 2>/dev/null
	MPID=
}

# ---------------------------------------------------------------- counters
rxe_counters() { # -> "name value" lines of rxe0's hw counters
	local f
	for f in /sys/class/infiniband/"$D"/ports/1/hw_counters/*; do
		[ -f "$f" ] && echo "$(basename "$f") $(cat "$f")"
	done
}
counters_delta() { # BEFORE_FILE AFTER_FILE -> changed counters
	awk 'NR == FNR { b[$1] = $2; next } $2 != b[$1] { printf "  %s +%d\n", $1, $2 - b[$1] }' "$1" "$2"
}

# ---------------------------------------------------------------- workloads
# fio_cells SERVER ROUND: every cell as one stonewalled job of one fio run
fio_cells() {
	local srv=$1 r=$2 jf=/tmp/bench.fio c rw bs qd
	{
		printf '[global]\nioengine=libaio\ndirect=1\nfilename=%s\nsize=%dM\n' "$MNT/$FILE" "$MB"
		printf 'time_based=1\nruntime=%s\nramp_time=%s\nrandrepeat=0\n' "$SECS" "$RAMP"
		for c in "${CELLS[@]}"; do
			read -r rw bs qd <<< "$c"
			printf '[%s-%s-qd%s]\nrw=%s\nbs=%s\niodepth=%s\nstonewall\n' "$rw" "$bs" "$qd" "$rw" "$bs" "$qd"
		done
	} > "$jf"
	local to=$(( ${#CELLS[@]} * (SECS + RAMP + 30) + 60 ))
	timeout -k 10 "$to" "$FIO" --output-format=terse --terse-version=3 "$jf" > /tmp/bench-fio.out 2>/tmp/bench-fio.err
	local rc=$?
	[ $rc -ne 0 ] && { echo "WARNING: fio exited $rc ($srv round $r)"; cat /tmp/bench-fio.err; }
	# terse v3: 3 jobname, 5 error; read 7 bw KiB/s, 8 iops, 40 lat mean us;
	# write 48 bw KiB/s, 49 iops, 81 lat mean us
	awk -F';' -v srv="$srv" -v r="$r" '$1 == 3 {
		split($3, j, "-"); qd = substr(j[3], 3)
		if (j[1] ~ /read/) { bw = $7; io = $8; lat = $40 } else { bw = $48; io = $49; lat = $81 }
		printf "%s %d %s %s %s %.3f %.1f %.1f %d\n", srv, r, j[1], j[2], qd, bw * 1024 / 1e6, io, lat, $5
	}' /tmp/bench-fio.out | tee -a "$ROUNDS_F"
	# a cell fio never reported is an error line
	for c in "${CELLS[@]}"; do
		read -r rw bs qd <<< "$c"
		grep -q "^$srv $r $rw $bs $qd " "$ROUNDS_F" ||
			{ echo "$srv $r $rw $bs $qd 0 0 0 -1" | tee -a "$ROUNDS_F"; }
	done
}
now() { date +%s%N; }
# dd_cells SERVER ROUND: QD1 sequential write then read with O_DIRECT
dd_cells() {
	local srv=$1 r=$2 bs cnt t0 t1 mib rc
	for bs in 1M 4k; do
		case $bs in 1M) mib=$MB; cnt=$MB ;; 4k) mib=$MB4K; cnt=$((MB4K * 256)) ;; esac
		t0=$(now)
		dd if=/dev/zero of="$MNT/dd-$bs" bs=$bs count=$cnt oflag=direct conv=notrunc status=none
		rc=$?; t1=$(now)
		awk -v s="$srv" -v r="$r" -v bs="$bs" -v b=$((mib << 20)) -v n="$cnt" -v ns=$((t1 - t0)) -v rc=$rc \
			'BEGIN { printf "%s %d write %s 1 %.3f %.1f %.1f %d\n", s, r, bs, b / (ns / 1e9) / 1e6, n / (ns / 1e9), ns / 1e3 / n, rc }' |
			tee -a "$ROUNDS_F"
		t0=$(now)
		dd if="$MNT/dd-$bs" of=/dev/null bs=$bs iflag=direct status=none
		rc=$?; t1=$(now)
		awk -v s="$srv" -v r="$r" -v bs="$bs" -v b=$((mib << 20)) -v n="$cnt" -v ns=$((t1 - t0)) -v rc=$rc \
			'BEGIN { printf "%s %d read %s 1 %.3f %.1f %.1f %d\n", s, r, bs, b / (ns / 1e9) / 1e6, n / (ns / 1e9), ns / 1e3 / n, rc }' |
			tee -a "$ROUNDS_F"
	done
}

# measure SERVER ROUND EXPORT: mount, run the cells, unmount; counters around it
measure() {
	local srv=$1 r=$2 exp=$3 t0
	t0=$(date +%s)
	rxe_counters > /tmp/bench-cnt.before
	cp /proc/net/rpc/nfsd /tmp/bench-nfsd.before 2>/dev/null
	mount -t nfs -o "$MOPTS" "$ADDR:$exp" "$MNT" || fail "mount $srv (round $r)"
	if [ "$r" = 1 ]; then
		local neg
		neg=$(awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts | tr ',' '\n' |
			grep -E '^(rsize|wsize)=' | paste -sd, -)
		echo "$srv: negotiated $neg"
		eval "NEG_${srv%%-*}=\$neg"
	fi
	local t1 t2
	t1=$(date +%s)
	if [ "$TOOL" = fio ]; then fio_cells "$srv" "$r"; else dd_cells "$srv" "$r"; fi
	t2=$(date +%s)
	umount "$MNT" || { sleep 1; umount -f "$MNT"; } || fail "umount $srv (round $r)"
	rxe_counters > /tmp/bench-cnt.after
	{
		echo "---- $srv round $r: rxe0 hw counters that changed"
		counters_delta /tmp/bench-cnt.before /tmp/bench-cnt.after
		if [ "$srv" = knfsd ] && [ -f /tmp/bench-nfsd.before ]; then
			echo "  /proc/net/rpc/nfsd after (before: th/io/rpc lines)"
			grep -E '^(th|io|rpc|net) ' /tmp/bench-nfsd.before | sed 's/^/    before /'
			grep -E '^(th|io|rpc|net) ' /proc/net/rpc/nfsd | sed 's/^/    after  /'
		fi
	} >> "$CNT"
	echo "== $srv round $r: $(( $(date +%s) - t0 ))s (mount $((t1 - t0))s, $TOOL $((t2 - t1))s, umount $(( $(date +%s) - t2 ))s)"
}

# ---------------------------------------------------------------- set-up
for e in "$REXP" "$KEXP"; do
	mountpoint -q "$e" || mount -t tmpfs -o "size=${TMPFS_MB}m" tmpfs "$e" || fail "tmpfs $e"
	dd if=/dev/zero of="$e/$FILE" bs=1M count="$MB" status=none || fail "cannot write $e/$FILE"
done
knfsd_setup

# ---------------------------------------------------------------- rounds
for r in $(seq 1 "$ROUNDS"); do
	start_rrr "$r"
	measure rrr-server "$r" "$REXP"
	stop_rrr "$r"
	start_knfsd
	measure knfsd "$r" "$KEXP"
	stop_knfsd
done
T_ROUNDS=$(( $(date +%s) - T_START ))
summarize
echo "== kernel client against both servers: ${T_ROUNDS}s"
cat "$OUT/$NAME.txt"

# ---------------------------------------------------------------- rrr-bench io
if [ "$DO_IO" = 1 ]; then
	t0=$(date +%s)
	start_rrr io
	timeout 200 "$B" io --provider verbs --provider-opts "dev=$D" --host "$ADDR" --port 20049 \
		--mount-port 20048 --export "$REXP" --modes rdma,nfs-tcp --sizes 4k,256k --qd 1,8 \
		--seconds 2 --rounds 1 --warmup 0.5 --json "$OUT/vm-io-rrr.json" | tee "$OUT/vm-io-rrr.txt"
	stop_rrr io
	start_knfsd
	# --no-remote-inv: with Send With Invalidate offered, knfsd's remote
	# invalidation of a regmr registration puts the rxe QP in error
	# ("rxe_invalidate_mr: mr->type (3) is wrong type" in dmesg) and every call
	# fails with a connection reset (the known issue of tests.d/40).
	timeout 200 "$B" io --provider verbs --provider-opts "dev=$D" --no-remote-inv --host "$ADDR" \
		--port 20049 --mount-port 20048 --tcp-port 2049 --export "$KEXP" --modes rdma,nfs-tcp \
		--sizes 4k,256k --qd 1,8 --seconds 2 --rounds 1 --warmup 0.5 \
		--json "$OUT/vm-io-knfsd.json" | tee "$OUT/vm-io-knfsd.txt"
	stop_knfsd
	echo "== rrr-bench io against both servers: $(( $(date +%s) - t0 ))s"
else
	echo "== rrr-bench io skipped (RRR_VM_BENCH_IO=0)"
fi
echo "== total $(( $(date +%s) - T_START ))s"
# a cell with an error in any round fails the script (the tables say which)
if awk '$9 != 0 { bad = 1 } END { exit !bad }' "$ROUNDS_F"; then
	echo "FAIL: some cells reported errors (see the error column of $ROUNDS_F)"
	exit 1
fi
exit 0
