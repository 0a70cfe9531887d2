#!/usr/bin/env bash
# scripts/bench.sh BUILD - the standard benchmark set behind `make bench`.
#
# Runs a short, fixed set of rrr-bench commands (a few minutes in total on a
# 2-core machine), writes their JSON into docs/bench/*.json, the tables they
# print into docs/bench/*.txt, and renders PNG plots with gnuplot into
# docs/bench/*.png. Nothing is tuned or edited: the figures are whatever this
# machine measured, next to the exact command that measured them (in each
# JSON's "command" member and in the .txt header). Last, scripts/bench-peer.sh
# puts rrr-client side by side with NFS-Ganesha + nfs-cp (docs/bench/peer.*).
#
# Environment: BENCH_OUT (default docs/bench), BENCH_QUICK=1 for a smoke run
# (tiny iteration counts; the figures are then meaningless).
set -uo pipefail

BUILD=${1:-build}
OUT=${BENCH_OUT:-docs/bench}
BENCH="$BUILD/rrr-bench"
QUICK=${BENCH_QUICK:-0}

if [[ ! -x $BENCH ]]; then
	echo "bench.sh: $BENCH not found; run 'make BUILD=$BUILD all' first" >&2
	exit 1
fi
mkdir -p "$OUT"
export RRR_BUILD=$(cd "$BUILD" && pwd)

fail=0
# run NAME ARGS...: rrr-bench ARGS --json OUT/NAME.json, table to OUT/NAME.txt
run() {
	local name=$1
	shift
	echo "== rrr-bench $* --json $OUT/$name.json"
	if "$BENCH" "$@" --json "$OUT/$name.json" | tee "$OUT/$name.txt"; then
		return 0
	fi
	echo "bench.sh: rrr-bench $1 reported a failure (see $OUT/$name.txt)" >&2
	fail=1
	return 1
}

if [[ $QUICK == 1 ]]; then
	REG_ITERS=500
	IO_SECS=0.2
	IO_ROUNDS=1
	NC_SECS=0.1
	SCALE_CONNS=1,16,64
	SCALE_SECS=0.2
else
	REG_ITERS=5000
	IO_SECS=1
	IO_ROUNDS=3
	NC_SECS=0.5
	SCALE_CONNS=1,16,64,256,1024
	SCALE_SECS=0.5
fi

# 1. registration cost per strategy (soft provider), every layout.
# frwr-pt: the same device with a progress thread (CQ polls do no progress step).
run reg reg --provider soft --strategy frwr --strategy frwr-pt:progress_thread=1 \
	--strategy persistent --sizes 4k,16k,64k,256k,1m --iters "$REG_ITERS" --batch 100

# 2. end-to-end NFSv3 READ/WRITE: per-I/O vs persistent vs bounce vs TCP.
run io io --provider soft --sizes 4k,1m --qd 1,32 --seconds "$IO_SECS" \
	--rounds "$IO_ROUNDS" --warmup 0.2

# 2b. the same over 1, 2 and 4 connections per mode (nconnect), deep queues only
# (where spreading can pay): ~20 s. OUT/io-nconnect.*; not in the plots or goals.
run io-nconnect io --provider soft --modes rdma,nfs-tcp --sizes 4k,1m --qd 32 \
	--nconnect 1,2,4 --seconds "$NC_SECS" --rounds 1 --warmup 0.2

# 2c. one server, many connections (bench/scale.c): 4 KiB READs, about one in
# flight per connection, soft RDMA beside NFS over TCP; a fresh server per count
# (~1 min). OUT/scale.*, plotted below.
run scale scale --provider soft --conns "$SCALE_CONNS" --seconds "$SCALE_SECS" --warmup 0.2

# 3. raw provider figures (bench/raw.c), if that subcommand takes --json.
# raw: both sides wait as the library does by default (adaptive); raw-event:
# ping-pong only, sleeping in poll() as the TCP side sleeps in read().
if "$BENCH" raw --help 2>/dev/null | grep -q -- '--json'; then
	run raw raw --wait adaptive
	run raw-event raw --wait event --sizes 4k --total 16m
fi

# ---------------------------------------------------------------- plots
# The JSON writer puts one member per line; flatten every object of the
# "results" array into one whitespace-separated record of KEY=VALUE.
flatten() {
	awk '
	/"results": \[/ { inres = 1; next }
	inres && /^  \]/ { inres = 0 }
	inres && /^    \{/ { rec = ""; next }
	inres && /^    \}/ { print rec; next }
	inres && /^      "/ {
		line = $0
		sub(/^ +"/, "", line)
		key = line; sub(/".*/, "", key)
		val = line; sub(/^[^:]*: */, "", val); sub(/,$/, "", val); gsub(/"/, "", val)
		gsub(/ /, "_", val)
		rec = rec key "=" val " "
	}' "$1"
}

# records JSON [AWK-OPTION...] PROGRAM: awk PROGRAM over the flattened
# records of JSON (flatten), each record's members in f[KEY] before its rules run
records() {
	local json=$1 prog=${!#}
	flatten "$json" | awk "${@:2:$#-2}" '
	{
		delete f
		for (i = 1; i <= NF; i++) { split($i, a, "="); f[a[1]] = a[2] }
	}
	'"$prog"
}

# get KEY from a flattened record on stdin lines
field() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) { print a[2]; next } } print "-" }'; }

plot_reg() {
	local json=$OUT/reg.json dat=$OUT/reg.dat
	[[ -s $json ]] || return 0
	records "$json" '
	{
		if (f["error"] != "" || f["cpu_median_ns"] == "") next
		print f["layout"], f["strategy"], f["size"], f["cpu_median_ns"], f["wall_median_ns"], f["wall_p99_ns"]
	}' >"$dat"
	local strategies
	strategies=$(awk '{ print $2 }' "$dat" | awk '!seen[$0]++')
	for layout in contig fbo holes; do
		grep -q "^$layout " "$dat" || continue
		local p="" s
		for s in $strategies; do
			p+="${p:+, }'< grep \"^$layout $s \" $dat' using 3:4 with linespoints title '$s'"
		done
		gnuplot <<-EOF
			set terminal pngcairo size 800,500 noenhanced
			set output '$OUT/reg-$layout.png'
			set title 'rrr-bench reg: registration + invalidation CPU per I/O ($layout layout)'
			set logscale xy
			set xlabel 'I/O size (bytes)'
			set ylabel 'CPU ns per I/O (median)'
			set key top left
			set grid
			plot $p
		EOF
	done
}

plot_io() {
	local json=$OUT/io.json dat=$OUT/io.dat
	[[ -s $json ]] || return 0
	# rows: cell label; columns: MB/s and median latency per mode
	records "$json" '
	{
		sz = f["size"] >= 1048576 ? (f["size"] / 1048576) "m" : (f["size"] / 1024) "k"
		cell = f["op"] "-" sz "-qd" f["qd"]
		if (!(cell in seen)) { seen[cell] = 1; order[++nc] = cell }
		if (!(f["mode"] in mseen)) { mseen[f["mode"]] = 1; modes[++nm] = f["mode"] }
		mb[cell, f["mode"]] = f["error"] != "" ? "-" : f["mb_per_s"]
		lat[cell, f["mode"]] = f["error"] != "" ? "-" : f["lat_median_us"]
	}
	END {
		printf "cell"
		for (m = 1; m <= nm; m++) printf " %s", modes[m]
		for (m = 1; m <= nm; m++) printf " lat-%s", modes[m]
		printf "\n"
		for (c = 1; c <= nc; c++) {
			printf "%s", order[c]
			for (m = 1; m <= nm; m++) printf " %s", mb[order[c], modes[m]]
			for (m = 1; m <= nm; m++) printf " %s", lat[order[c], modes[m]]
			printf "\n"
		}
	}' >"$dat"
	local nm
	nm=$(head -1 "$dat" | awk '{ print (NF - 1) / 2 }')
	[[ $nm -ge 1 ]] || return 0
	gnuplot <<-EOF
		set terminal pngcairo size 1000,500 noenhanced
		set datafile missing '-'
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set key autotitle columnhead top left
		set xtics rotate by -30
		set grid ytics
		set output '$OUT/io-throughput.png'
		set title 'rrr-bench io: MB/s per mode (higher is better)'
		set logscale y
		set ylabel 'MB/s'
		plot for [i=2:$((nm + 1))] '$dat' using i:xtic(1)
		set output '$OUT/io-latency.png'
		set title 'rrr-bench io: median latency per mode (lower is better)'
		set ylabel 'us'
		plot for [i=$((nm + 2)):$((2 * nm + 1))] '$dat' using i:xtic(1)
	EOF
}

plot_scale() {
	local json=$OUT/scale.json dat=$OUT/scale.dat
	[[ -s $json ]] || return 0
	# rows: mode conns iops p99_us server_kib client_kib cpu_us
	records "$json" '
	{
		if (f["error"] != "") next
		print f["mode"], f["conns"], f["iops"], f["lat_p99_us"], f["server_rss_kib_per_conn"], f["client_rss_kib_per_conn"], f["cpu_us_per_op"]
	}' >"$dat"
	[[ -s $dat ]] || return 0
	local p1="" p2="" p3="" m
	for m in $(awk '{ print $1 }' "$dat" | awk '!seen[$0]++'); do
		p1+="${p1:+, }'< grep \"^$m \" $dat' using 2:3 with linespoints title '$m IOPS', '< grep \"^$m \" $dat' using 2:4 axes x1y2 with linespoints dashtype 2 title '$m p99 us'"
		p2+="${p2:+, }'< grep \"^$m \" $dat' using 2:5 with linespoints title '$m server', '< grep \"^$m \" $dat' using 2:6 with linespoints dashtype 2 title '$m client'"
		p3+="${p3:+, }'< grep \"^$m \" $dat' using 2:7 with linespoints title '$m'"
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1000,1000 noenhanced
		set output '$OUT/scale.png'
		set multiplot layout 3,1 title 'rrr-bench scale: one server, N connections, 4 KiB READs, ~1 in flight each'
		set logscale x 2
		set xlabel 'connections'
		set grid
		set key outside right
		set ylabel 'IOPS (aggregate)'
		set y2label 'p99 latency (us)'
		set y2tics
		set logscale y2
		plot $p1
		unset y2tics
		unset y2label
		unset logscale y2
		set ylabel 'RSS KiB per connection'
		plot $p2
		set ylabel 'CPU us per I/O'
		plot $p3
		unset multiplot
	EOF
}

# ---------------------------------------------------------------- goals
# The targets of the standard run, computed from the JSON just written
# (targets, not assertions): docs/bench/goals.txt.
goals() {
	local reg=$OUT/reg.json io=$OUT/io.json raw=$OUT/raw.json rawev=$OUT/raw-event.json
	local peer=$OUT/peer.json
	{
		echo "# targets of the standard run ($(date -u +%Y-%m-%dT%H:%M:%SZ)); computed from the JSON files next to this one"
		echo "# soft RDMA against TCP and against NFS-Ganesha: targets, not assertions"
		[[ -s $io ]] && records "$io" '
		{
			if (f["error"] != "" || (f["nconnect"] != "" && f["nconnect"] != 1)) next
			k = f["op"] "/" f["size"] "/" f["qd"] "/" f["mode"]
			iops[k] = f["iops"]; mbs[k] = f["mb_per_s"]; lat[k] = f["lat_median_us"]
			flt[k] = f["client_faults_per_op"] + f["server_faults_per_op"]
			regs[k] = f["ops"] > 0 ? f["client_registrations"] / f["ops"] : 0
		}
		function ratio(a, b) { return (b > 0) ? a / b : -1 }
		END {
			n = split("4096 1048576", sz, " ")
			for (op = 0; op < 2; op++) for (s = 1; s <= n; s++) for (qd = 1; qd <= 32; qd += 31) {
				o = op ? "write" : "read"
				base = o "/" sz[s] "/" qd
				r = base "/rdma"; t = base "/nfs-tcp"; c = base "/rdma-chunks"
				if (!(r in iops) || !(t in iops)) continue
				x = ratio(iops[r], iops[t])
				printf "vs-nfs-tcp: %s %s QD%d soft RDMA (per-I/O registration%s) vs NFS/TCP: %.0f / %.0f IOPS = %.2fx; target >= 1.0: %s", o, (sz[s] == 4096 ? "4 KiB" : "1 MiB"), qd, (regs[r] > 0.5 ? "" : ", inline: nothing registered"), iops[r], iops[t], x, (x >= 1.0 ? "met" : "missed")
				if (c in iops) printf " (rdma-chunks %.2fx)", ratio(iops[c], iops[t])
				printf "\n"
			}
			for (op = 0; op < 2; op++) {
				o = op ? "write" : "read"
				r = o "/1048576/1/rdma"; t = o "/1048576/1/tcp"
				if ((r in mbs) && (t in mbs)) {
					x = ratio(mbs[r], mbs[t])
					printf "vs-nfs-tcp: 1 MiB %s QD1 soft RDMA vs plain TCP stream: %.0f / %.0f MB/s = %.2fx; target >= 0.9: %s\n", o, mbs[r], mbs[t], x, (x >= 0.9 ? "met" : "missed")
				}
			}
			r = "read/4096/1/rdma"; t = "read/4096/1/tcp"
			if ((r in lat) && (t in lat)) {
				x = ratio(lat[r], lat[t])
				printf "latency: NFSv3 4 KiB READ QD1 latency over soft vs TCP round trip: %.1f / %.1f us = %.2fx; target <= 1.3x: %s\n", lat[r], lat[t], x, (x <= 1.3 ? "met" : "missed")
			}
			worst = 0
			for (k in flt) if (k ~ /\/rdma$/ && flt[k] > worst) { worst = flt[k]; wk = k }
			if (wk != "") printf "faults: page faults per I/O (client + server), worst rdma cell: %.2f (%s)\n", worst, wk
		}'
		for f in "$raw" "$rawev"; do
			[[ -s $f ]] || continue
			w=$(awk -F'"' '/"wait":/ { print $4 }' "$f")
			records "$f" -v w="$w" '
			{
				if (f["op"] == "pingpong" && f["provider_rtt_us"] != "") {
					x = f["provider_rtt_us"] / f["tcp_rtt_us"]
					printf "latency: soft SEND ping-pong %s B (wait %s) vs TCP round trip: %.1f / %.1f us = %.2fx; target <= 1.2x: %s\n", f["size"], w, f["provider_rtt_us"], f["tcp_rtt_us"], x, (x <= 1.2 ? "met" : "missed")
				}
			}'
		done
		[[ -s $OUT/scale.json ]] && records "$OUT/scale.json" '
		{
			if (f["error"] != "") next
			m = f["mode"]
			if (f["iops"] > peak[m]) peak[m] = f["iops"]
			if (f["conns"] + 0 > last[m]) { last[m] = f["conns"] + 0; liops[m] = f["iops"]; srv[m] = f["server_rss_kib_per_conn"] }
		}
		END {
			for (m in peak) {
				x = peak[m] > 0 ? liops[m] / peak[m] : -1
				printf "scale: %s IOPS at %d connections / peak: %.0f / %.0f = %.2f; target at 1024 >= 0.8: %s\n", m, last[m], liops[m], peak[m], x, (last[m] < 1024 ? "not measured" : (x >= 0.8 ? "met" : "missed"))
				if (m == "rdma") printf "scale: server RSS per idle soft-RDMA connection at %d: %.0f KiB; target <= 256: %s\n", last[m], srv[m], (srv[m] <= 256 ? "met" : "missed")
			}
		}'
		[[ -s $peer ]] && records "$peer" '
		{
			if (f["contender"] == "rdma")
				printf "vs-ganesha: rrr-client %s over soft RDMA vs Ganesha + nfs-cp (256 MiB, whole process): %.2fx; target >= 2.0: %s\n", f["op"], f["speed_vs_ganesha"], (f["speed_vs_ganesha"] >= 2.0 ? "met" : "missed")
			if (f["contender"] == "local")
				printf "vs-ganesha: (context) the same %s done locally with dd, no network: %.2fx Ganesha, what this disk allows\n", f["op"], f["speed_vs_ganesha"]
		}'
		true
	} >"$OUT/goals.txt"
	cat "$OUT/goals.txt"
}
if command -v gnuplot >/dev/null; then
	plot_reg || fail=1
	plot_io || fail=1
	plot_scale || fail=1
	ls -1 "$OUT"/*.png 2>/dev/null | sed 's/^/plot: /'
else
	echo "bench.sh: gnuplot not installed (Debian: gnuplot-nox); no plots" >&2
	fail=1
fi

# 4. rrr-client vs NFS-Ganesha + libnfs nfs-cp, one file (needs root and the
# packages of `make deps-peer`): OUT/peer.txt, OUT/peer.json.
echo "== scripts/bench-peer.sh $BUILD $OUT"
if ! PEER_QUICK=${PEER_QUICK:-$QUICK} "$(dirname "$0")/bench-peer.sh" "$BUILD" "$OUT"; then
	echo "bench.sh: bench-peer.sh failed (its message is above)" >&2
	fail=1
fi
goals || fail=1
exit $fail
