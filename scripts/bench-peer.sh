#!/usr/bin/env bash
# scripts/bench-peer.sh BUILD [OUT] - rrr-client against NFS-Ganesha + libnfs nfs-cp
# (make bench-peer; make bench runs it too).
#
# What a user would run instead of rrr on this machine is NFS-Ganesha over TCP
# and libnfs's nfs-cp. This script puts both side by side on one file:
#
#   - one scratch export directory, exported by BOTH servers, so every
#     contender reads literally the same file (PEER_SIZE_MIB, default 256 MiB
#     of random bytes, warm in the page cache);
#   - NFS-Ganesha (FSAL VFS, NFSv3 over TCP only) with its own temporary config
#     on private loopback ports (never 2049), registered with rpcbind (started
#     here with `rpcbind -f -w` when none runs, and stopped again);
#   - rrr-server (soft provider) on ephemeral ports (--port 0 --mount-port 0).
#
# Per rep (PEER_REPS, default 5) the contenders take turns, round-robin, with
# the starting contender rotated every rep so that background noise lands on
# all alike:
#
#   read   nfs-cp nfs://127.0.0.1/EXPORT/src.bin?version=3&... LOCAL
#          rrr-client --transport rdma get src.bin LOCAL     (soft RDMA)
#          rrr-client --transport tcp  get src.bin LOCAL     (rrr's NFSv3/TCP)
#   write  nfs-cp LOCAL nfs://.../w-ganesha-REP.bin          (fresh name each run)
#          rrr-client --transport rdma|tcp put LOCAL w-...-REP.bin
#
# and a fourth contender with no network at all, the same copy done locally
# with dd (1 MiB blocks): read = export file -> local target, write = local
# source -> export, conv=fsync (as durable as a put's final COMMIT). It says
# what the disk and page cache of this machine allow: when it is not much
# faster than Ganesha, no network copy can be much faster either, and the
# report says so beside the goal.
#
# Each figure is the whole process's wall time (start-up, mount, transfer,
# COMMIT, exit), measured with bash's EPOCHREALTIME around the command. Every
# local target is in one scratch directory on the same filesystem for all
# contenders and is removed before its run. After the timed runs of a rep (never
# inside them) every copy is compared with the source (cmp) and then removed,
# which bounds the disk space to one rep; any difference fails the run loudly.
#
# The report (stdout; and OUT/peer.txt + OUT/peer.json when OUT is given as
# the second argument or PEER_OUT) gives per operation and contender the median,
# min and max seconds, MB/s (10^6 bytes) of the median, and the speed ratio
# ganesha_median / rrr_median (the target: >= 2.0 for rrr over soft RDMA),
# plus the command that reproduces it, the date, and the machine (nproc, CPU
# model, kernel, load average at start and end).
#
# Recovery: a trap stops everything this script started (rrr-server, then
# ganesha.nfsd, then rpcbind if it was started here: SIGTERM, bounded wait,
# SIGKILL) and removes the temporary directory, on success, failure or ^C.
# If Ganesha cannot start, the tail of its log is printed with what to check.
#
# Environment:
#   PEER_SIZE_MIB     file size in MiB (default 256; 16 with PEER_QUICK=1)
#   PEER_REPS         timed reps per contender and operation (default 5; 1 quick)
#   PEER_QUICK=1      smoke run: small file, one rep (figures are meaningless)
#   PEER_OUT          output directory for peer.txt/peer.json (or argument 2)
#   PEER_TIMEOUT      seconds one timed command may take (default 300)
#   PEER_GANESHA_PORT first NFS port to try for Ganesha (default 12049; MOUNT
#                     takes the next free one)
#   PEER_TMP          where the scratch directory goes (default ${TMPDIR:-/tmp})
#   PEER_KEEP=1       keep the scratch directory (logs, config) for inspection
#   GANESHA_NFSD      the ganesha.nfsd binary (default: ganesha.nfsd on PATH)
#   PEER_BASELINE     another rrr-client binary (e.g. one built from an older
#                     commit) run as another contender, "rrr-client rdma
#                     baseline", with the same options over soft RDMA: a
#                     before/after comparison inside one round-robin run
# Needs root (Ganesha's VFS FSAL opens files by handle) and the Debian packages
# of `make deps-peer`: nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind.
set -euo pipefail
export LC_ALL=C

BUILD=${1:-build}
OUT=${2:-${PEER_OUT:-}}
QUICK=${PEER_QUICK:-0}
if [[ $QUICK == 1 ]]; then
	SIZE_MIB=${PEER_SIZE_MIB:-16}
	REPS=${PEER_REPS:-1}
else
	SIZE_MIB=${PEER_SIZE_MIB:-256}
	REPS=${PEER_REPS:-5}
fi
TIMEOUT=${PEER_TIMEOUT:-300}
START_TIMEOUT=30
GANESHA=${GANESHA_NFSD:-ganesha.nfsd}
SERVER="$BUILD/rrr-server"
CLIENT="$BUILD/rrr-client"
ME=bench-peer

die() {
	echo "$ME: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- checks
[[ $SIZE_MIB =~ ^[1-9][0-9]*$ ]] || die "PEER_SIZE_MIB must be a positive integer (got '$SIZE_MIB')"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "PEER_REPS must be a positive integer (got '$REPS')"
for p in "$SERVER" "$CLIENT"; do
	[[ -x $p ]] || die "$p not found; run 'make BUILD=$BUILD all' first"
done
for c in "$GANESHA" nfs-cp rpcbind rpcinfo cmp timeout flock; do
	command -v "$c" >/dev/null ||
		die "'$c' not found; install the peer packages as root: make deps-peer" \
			"(nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind)"
done
[[ $(id -u) -eq 0 ]] ||
	die "must run as root: ganesha.nfsd's VFS FSAL needs CAP_DAC_READ_SEARCH (open_by_handle_at)"

SIZE=$((SIZE_MIB * 1024 * 1024))
BASE=${PEER_TMP:-${TMPDIR:-/tmp}}
CLIENT_ABS=$(cd "$(dirname "$CLIENT")" && pwd)/$(basename "$CLIENT")
SERVER_ABS=$(cd "$(dirname "$SERVER")" && pwd)/$(basename "$SERVER")
BASELINE=${PEER_BASELINE:-}
if [[ -n $BASELINE ]]; then
	[[ -x $BASELINE ]] || die "PEER_BASELINE=$BASELINE is not an executable rrr-client"
	BASELINE=$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")
fi

# One run at a time: two runs would share rpcbind and fight over ports and CPUs.
exec 9>"$BASE/rrr-bench-peer.lock"
flock -w 60 9 || die "another bench-peer run holds $BASE/rrr-bench-peer.lock (waited 60 s)"

T=$(mktemp -d "$BASE/rrr-peer.XXXXXX")
T=$(cd "$T" && pwd -P)
EXP=$T/export   # exported by both servers
LDIR=$T/local   # local sources and targets, same filesystem for all contenders
mkdir -p "$EXP" "$LDIR" "$T/logs" "$T/times" "$T/state"

SPID='' GPID='' RPID=''
# stop NAME PID SECONDS: SIGTERM, wait up to SECONDS, then SIGKILL; reap.
stop() {
	local name=$1 pid=$2 secs=$3 i
	[[ -n $pid ]] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < secs * 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "$ME: $name (pid $pid) ignored SIGTERM for $secs s; sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop rrr-server "$SPID" 10
	stop ganesha.nfsd "$GPID" 20
	stop rpcbind "$RPID" 5
	if [[ ${PEER_KEEP:-0} == 1 ]]; then
		echo "$ME: kept $T (PEER_KEEP=1)" >&2
	else
		rm -rf "$T"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The machine, as bench/bench_common.c prints it.
cpu_model() { awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
NPROC=$(nproc)
CPU=$(cpu_model)
KERNEL=$(uname -r)
LOAD_START=$(loadavg)
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
V_GANESHA=$(pkgver nfs-ganesha)
V_LIBNFS=$(pkgver libnfs-utils)
RRR_COMMIT=$(git describe --always --dirty 2>/dev/null || echo "?")
CMD="PEER_SIZE_MIB=$SIZE_MIB PEER_REPS=$REPS"
[[ -n $BASELINE ]] && CMD+=" PEER_BASELINE=$BASELINE"
[[ $QUICK == 1 ]] && CMD+=" PEER_QUICK=1"
CMD+=" scripts/bench-peer.sh $BUILD${OUT:+ $OUT}"

# ---------------------------------------------------------------- data
echo "== $ME: $SIZE_MIB MiB random file in $EXP"
head -c "$SIZE" /dev/urandom >"$LDIR/src.bin"
cp "$LDIR/src.bin" "$EXP/src.bin"
cmp "$LDIR/src.bin" "$EXP/src.bin" || die "copying the source into the export failed"
# Written back now, so the flusher does not write them during the timed runs.
sync "$LDIR/src.bin" "$EXP/src.bin"
head -c 4096 /dev/urandom >"$EXP/probe.bin"

# ---------------------------------------------------------------- rpcbind
# Ganesha 4.3 registers its programs with the portmapper and will not serve
# without one. `rpcbind -h 127.0.0.1` crashes on Debian 12 (double free), so
# it is started plainly, in the foreground (-f) so that its pid is ours.
if rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
	echo "== $ME: using the rpcbind already running"
else
	echo "== $ME: starting rpcbind -f -w"
	rpcbind -f -w 9>&- >"$T/logs/rpcbind.log" 2>&1 &
	RPID=$!
	for ((i = 0; i < START_TIMEOUT * 10; i++)); do
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.1
	done
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || {
		cat "$T/logs/rpcbind.log" >&2
		die "rpcbind did not answer on 127.0.0.1 within $START_TIMEOUT s; start it yourself (rpcbind -w) and retry"
	}
fi

# ---------------------------------------------------------------- Ganesha
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p=$1
	while port_busy "$p" || [[ $p == "${2:-}" ]]; do
		((p++))
		((p < $1 + 200)) || die "no free TCP port in $1..$((p - 1)) for Ganesha; set PEER_GANESHA_PORT"
	done
	echo "$p"
}
GN=$(free_port "${PEER_GANESHA_PORT:-12049}")
GM=$(free_port "$((GN + 1))" "$GN")
GLOG=$T/logs/ganesha.log
cat >"$T/ganesha.conf" <<EOF
# Written by scripts/bench-peer.sh; removed with its scratch directory.
NFS_CORE_PARAM {
	Protocols = 3;
	NFS_Port = $GN;
	MNT_Port = $GM;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Bind_addr = 127.0.0.1;
}
NFSV4 {
	Graceless = true;
}
EXPORT {
	Export_Id = 77;
	Path = $EXP;
	Pseudo = /rrr-bench-peer;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Protocols = 3;
	Transports = TCP;
	FSAL {
		Name = VFS;
	}
}
EOF
ganesha_failed() {
	echo "$ME: NFS-Ganesha failed: $*" >&2
	if [[ -s $GLOG ]]; then
		# Without D-Bus and Kerberos, Ganesha logs CRIT lines that are harmless here.
		echo "$ME: errors in its log ($GLOG), D-Bus and Kerberos noise left out:" >&2
		grep -E ':(CRIT|MAJ|FATAL) :' "$GLOG" | grep -vE ':DBUS :|gssd|principal nfs' >&2 || echo "  (none)" >&2
		echo "$ME: last lines of its log:" >&2
		tail -n 15 "$GLOG" >&2
	else
		echo "$ME: it wrote no log ($GLOG)" >&2
	fi
	echo "$ME: what to do: check that TCP ports $GN/$GM are free (PEER_GANESHA_PORT=N picks" \
		"others), that rpcbind answers (rpcinfo -p 127.0.0.1), that no other ganesha.nfsd runs" \
		"(pgrep -a ganesha), and that the packages are installed (make deps-peer);" \
		"PEER_KEEP=1 keeps the config and logs" >&2
	exit 1
}
echo "== $ME: starting $GANESHA on 127.0.0.1 NFS port $GN, MOUNT port $GM"
"$GANESHA" -F -f "$T/ganesha.conf" -L "$GLOG" -p "$T/ganesha.pid" -N NIV_EVENT 9>&- \
	>"$T/logs/ganesha.out" 2>&1 &
GPID=$!
ready=0
for ((i = 0; i < START_TIMEOUT * 10; i++)); do
	kill -0 "$GPID" 2>/dev/null || { cat "$T/logs/ganesha.out" >>"$GLOG" 2>/dev/null; ganesha_failed "ganesha.nfsd exited during start-up"; }
	if grep -q 'NFS SERVER INITIALIZED' "$GLOG" 2>/dev/null && port_busy "$GN" && port_busy "$GM"; then
		ready=1
		break
	fi
	sleep 0.1
done
[[ $ready == 1 ]] || ganesha_failed "not serving on ports $GN/$GM within $START_TIMEOUT s"
gurl() { echo "nfs://127.0.0.1$EXP/$1?version=3&nfsport=$GN&mountport=$GM"; }
if ! timeout "$START_TIMEOUT" nfs-cp "$(gurl probe.bin)" "$LDIR/probe-ganesha.bin" \
	>"$T/logs/probe-ganesha.log" 2>&1 || ! cmp -s "$EXP/probe.bin" "$LDIR/probe-ganesha.bin"; then
	cat "$T/logs/probe-ganesha.log" >&2
	ganesha_failed "a first nfs-cp read of a 4 KiB probe file did not return it"
fi

# ---------------------------------------------------------------- rrr-server
echo "== $ME: starting rrr-server (soft provider) on ephemeral ports"
"$SERVER_ABS" --export "$EXP" --provider soft --port 0 --mount-port 0 \
	--state-dir "$T/state" --port-file "$T/ports" --no-root-squash 9>&- >"$T/logs/rrr-server.log" 2>&1 &
SPID=$!
for ((i = 0; i < START_TIMEOUT * 10; i++)); do
	[[ -s $T/ports ]] && break
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
if [[ ! -s $T/ports ]]; then
	cat "$T/logs/rrr-server.log" >&2
	die "rrr-server did not write its port file within $START_TIMEOUT s (its output is above)"
fi
read -r RP RM < <(sed -E 's/rdma=([0-9]+) mount=([0-9]+).*/\1 \2/' "$T/ports")
RRR=("$CLIENT_ABS" --server 127.0.0.1 --mount-port "$RM" --export "$EXP" --no-progress)
RRR_RDMA=("${RRR[@]}" --transport rdma --port "$RP")
RRR_TCP=("${RRR[@]}" --transport tcp --port "$RM")
RRR_BASE=("${BASELINE:-$CLIENT_ABS}" "${RRR_RDMA[@]:1}")
PROBES=(rdma tcp)
[[ -n $BASELINE ]] && PROBES+=(base)
for t in "${PROBES[@]}"; do
	case $t in
	rdma) CMDV=("${RRR_RDMA[@]}") ;;
	tcp) CMDV=("${RRR_TCP[@]}") ;;
	base) CMDV=("${RRR_BASE[@]}") ;;
	esac
	if ! timeout "$START_TIMEOUT" "${CMDV[@]}" get probe.bin "$LDIR/probe-$t.bin" \
		>"$T/logs/probe-$t.log" 2>&1 || ! cmp -s "$EXP/probe.bin" "$LDIR/probe-$t.bin"; then
		cat "$T/logs/probe-$t.log" "$T/logs/rrr-server.log" >&2
		die "a first rrr-client get over $t of a 4 KiB probe file did not return it (output above)"
	fi
done
echo "== $ME: rrr-server rdma port $RP, NFS+MOUNT/TCP port $RM; Ganesha $GN/$GM"

# ---------------------------------------------------------------- timed runs
CONTENDERS=(ganesha rdma tcp local)
[[ -n $BASELINE ]] && CONTENDERS+=(base)
declare -A LABEL=([ganesha]="ganesha + nfs-cp" [rdma]="rrr-client rdma (soft)" [tcp]="rrr-client tcp"
	[local]="local dd (no network)" [base]="rrr-client rdma baseline")

# cmd_read C DST / cmd_write C NAME: the argv of one contender's run, into CMDV.
cmd_read() {
	case $1 in
	ganesha) CMDV=(nfs-cp "$(gurl src.bin)" "$2") ;;
	rdma) CMDV=("${RRR_RDMA[@]}" get src.bin "$2") ;;
	tcp) CMDV=("${RRR_TCP[@]}" get src.bin "$2") ;;
	base) CMDV=("${RRR_BASE[@]}" get src.bin "$2") ;;
	local) CMDV=(dd if="$EXP/src.bin" of="$2" bs=1M status=none) ;;
	esac
}
cmd_write() {
	case $1 in
	ganesha) CMDV=(nfs-cp "$LDIR/src.bin" "$(gurl "$2")") ;;
	rdma) CMDV=("${RRR_RDMA[@]}" put "$LDIR/src.bin" "$2") ;;
	tcp) CMDV=("${RRR_TCP[@]}" put "$LDIR/src.bin" "$2") ;;
	base) CMDV=("${RRR_BASE[@]}" put "$LDIR/src.bin" "$2") ;;
	local) CMDV=(dd if="$LDIR/src.bin" of="$EXP/$2" bs=1M conv=fsync status=none) ;;
	esac
}

# timed KEY: run CMDV, append its wall time in microseconds to times/KEY.
timed() {
	local key=$1 log=$T/logs/$1.last.log t0 t1
	t0=$EPOCHREALTIME
	if ! timeout "$TIMEOUT" "${CMDV[@]}" >"$log" 2>&1; then
		cat "$log" >&2
		die "$key run failed (or took over ${TIMEOUT} s): ${CMDV[*]}"
	fi
	t1=$EPOCHREALTIME
	echo $((${t1/./} - ${t0/./})) >>"$T/times/$key"
}

BAD=()
# One untimed warm-up read each (mount paths, server caches), then the reps.
for c in "${CONTENDERS[@]}"; do
	cmd_read "$c" "$LDIR/warm-$c.bin"
	timeout "$TIMEOUT" "${CMDV[@]}" >"$T/logs/warm-$c.log" 2>&1 ||
		{ cat "$T/logs/warm-$c.log" >&2; die "warm-up read failed: ${CMDV[*]}"; }
	rm -f "$LDIR/warm-$c.bin"
done
n=${#CONTENDERS[@]}
for ((rep = 1; rep <= REPS; rep++)); do
	order=()
	for ((k = 0; k < n; k++)); do order+=("${CONTENDERS[(rep - 1 + k) % n]}"); done
	printf '== %s: rep %d/%d, order %s\n' "$ME" "$rep" "$REPS" "${order[*]}"
	for c in "${order[@]}"; do
		dst=$LDIR/r-$c-$rep.bin
		rm -f "$dst"
		cmd_read "$c" "$dst"
		timed "read.$c"
	done
	for c in "${order[@]}"; do
		name=w-$c-$rep.bin
		rm -f "$EXP/$name"
		cmd_write "$c" "$name"
		timed "write.$c"
	done
	# After the rep's timed runs, never inside them: verify every copy, remove it.
	for c in "${order[@]}"; do
		for f in "$LDIR/r-$c-$rep.bin" "$EXP/w-$c-$rep.bin"; do
			if ! cmp "$LDIR/src.bin" "$f" >"$T/logs/cmp.log" 2>&1; then
				BAD+=("$f: $(head -c 300 "$T/logs/cmp.log")")
				echo "$ME: DATA MISMATCH: $f differs from the source" >&2
			fi
			[[ ${PEER_KEEP:-0} == 1 ]] || rm -f "$f"
		done
	done
done
LOAD_END=$(loadavg)

# ---------------------------------------------------------------- report
# stats KEY: "median min max" in seconds, and the list of seconds.
stats() {
	sort -n "$T/times/$1" | awk '
	{ v[NR] = $1 / 1e6; s = s (NR > 1 ? ", " : "") sprintf("%.3f", $1 / 1e6) }
	END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.6f %.6f %.6f %s\n", m, v[1], v[NR], s
	}'
}
TXT=$T/peer.txt
JSON=$T/peer.json
{
	echo "# command: $CMD   (make bench-peer)"
	echo "# date: $DATE  rrr commit $RRR_COMMIT; nfs-ganesha $V_GANESHA, libnfs-utils $V_LIBNFS"
	echo "# machine: nproc=$NPROC cpu=\"$CPU\" kernel=$KERNEL loadavg=\"$LOAD_START\" (start), \"$LOAD_END\" (end)"
	echo "# one $SIZE_MIB MiB file ($SIZE bytes), same export dir for both servers, warm page cache;"
	echo "# $REPS timed rep(s), contenders round-robin; whole-process wall time; MB/s = 10^6 B/s of the median;"
	echo "# xGanesha = ganesha median / this median (speed ratio; target >= 2.0 for rdma)"
	printf '%-6s %-24s %9s %9s %9s %9s %9s\n' op contender median_s min_s max_s MB/s xGanesha
} >"$TXT"
{
	echo "{"
	echo "  \"bench\": \"peer\","
	echo "  \"command\": \"$CMD\","
	echo "  \"date\": \"$DATE\","
	echo "  \"rrr_commit\": \"$RRR_COMMIT\","
	echo "  \"nfs_ganesha_version\": \"$V_GANESHA\","
	echo "  \"libnfs_utils_version\": \"$V_LIBNFS\","
	echo "  \"machine\": {\"nproc\": $NPROC, \"cpu\": \"$CPU\", \"kernel\": \"$KERNEL\", \"loadavg_start\": \"$LOAD_START\", \"loadavg_end\": \"$LOAD_END\"},"
	echo "  \"size_bytes\": $SIZE,"
	echo "  \"reps\": $REPS,"
	echo "  \"quick\": $([[ $QUICK == 1 ]] && echo true || echo false),"
	echo "  \"verified\": $([[ ${#BAD[@]} -eq 0 ]] && echo true || echo false),"
	echo "  \"results\": ["
} >"$JSON"
GOALS=()
first=1
for op in read write; do
	read -r gmed _ _ _ < <(stats "$op.ganesha")
	for c in "${CONTENDERS[@]}"; do
		read -r med min max list < <(stats "$op.$c")
		mbs=$(awk -v s="$SIZE" -v t="$med" 'BEGIN { printf "%.1f", s / t / 1e6 }')
		x=$(awk -v g="$gmed" -v t="$med" 'BEGIN { printf "%.2f", g / t }')
		printf '%-6s %-24s %9.3f %9.3f %9.3f %9s %9s\n' "$op" "${LABEL[$c]}" "$med" "$min" "$max" "$mbs" "$x" >>"$TXT"
		[[ $first == 1 ]] || echo "    }," >>"$JSON"
		first=0
		{
			echo "    {"
			echo "      \"op\": \"$op\","
			echo "      \"contender\": \"$c\","
			echo "      \"label\": \"${LABEL[$c]}\","
			echo "      \"times_s\": [$list],"
			echo "      \"median_s\": $med,"
			echo "      \"min_s\": $min,"
			echo "      \"max_s\": $max,"
			echo "      \"mb_per_s\": $mbs,"
			echo "      \"speed_vs_ganesha\": $x"
		} >>"$JSON"
		if [[ $c == local ]]; then
			GOALS+=("$(printf '%-5s local dd: the same copy with no network takes %.3f s = %sx Ganesha' \
				"$op" "$med" "$x")")
		elif [[ $c != ganesha ]]; then
			met=$(awk -v x="$x" 'BEGIN { print (x >= 2.0) ? "met" : "missed" }')
			GOALS+=("$(printf '%-5s rrr-client %-4s vs Ganesha + nfs-cp: %.3f s vs %.3f s = %sx%s' \
				"$op" "$c" "$med" "$gmed" "$x" "$([[ $c == rdma ]] && echo "; goal >= 2.0x: $met")")")
		fi
	done
	read -r rmed _ < <(stats "$op.rdma")
	read -r lmed _ < <(stats "$op.local")
	GOALS+=("$(awk -v o="$op" -v r="$rmed" -v l="$lmed" 'BEGIN { printf "%-5s rrr-client rdma vs the local dd: %.3f s vs %.3f s = %.2fx the speed of the local copy", o, r, l, l / r }')")
	if [[ -n $BASELINE ]]; then
		read -r bmed _ < <(stats "$op.base")
		GOALS+=("$(awk -v o="$op" -v r="$rmed" -v b="$bmed" 'BEGIN { printf "%-5s rrr-client rdma vs baseline: %.3f s vs %.3f s = %.2fx", o, r, b, b / r }')")
	fi
done
printf '    }\n  ],\n  "mismatches": [' >>"$JSON"
for ((k = 0; k < ${#BAD[@]}; k++)); do
	printf '%s"%s"' "$([[ $k -gt 0 ]] && echo ", ")" "$(echo "${BAD[k]}" | tr -d '"\\\n')" >>"$JSON"
done
printf ']\n}\n' >>"$JSON"
{
	echo "# per-run seconds, in rep order:"
	for op in read write; do
		for c in "${CONTENDERS[@]}"; do
			printf '#   %-5s %-24s %s\n' "$op" "${LABEL[$c]}" "$(awk '{ printf "%s%.3f", (NR > 1 ? " " : ""), $1 / 1e6 }' "$T/times/$op.$c")"
		done
	done
	printf '%s\n' "${GOALS[@]}"
	if [[ ${#BAD[@]} -eq 0 ]]; then
		echo "data: every copy ($((REPS * 2 * ${#CONTENDERS[@]})) files) equal to the source (cmp, after the timed runs)"
	else
		echo "data: MISMATCH in ${#BAD[@]} copies - the figures above are NOT valid:"
		printf '  %s\n' "${BAD[@]}"
	fi
} >>"$TXT"
[[ $QUICK == 1 ]] && echo "# PEER_QUICK=1: smoke run, the figures are meaningless" >>"$TXT"

cat "$TXT"
if [[ -n $OUT ]]; then
	mkdir -p "$OUT"
	cp "$TXT" "$OUT/peer.txt"
	cp "$JSON" "$OUT/peer.json"
	echo "$ME: wrote $OUT/peer.txt and $OUT/peer.json"
fi
[[ ${#BAD[@]} -eq 0 ]] || die "data mismatch in ${#BAD[@]} copies (listed above)"
