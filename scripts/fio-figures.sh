#!/usr/bin/env bash
# scripts/fio-figures.sh BUILD [OUT_FILE] - fio with the rrr engine next to
# rrr-bench io, the same cells: READ and WRITE, 4 KiB and 1 MiB, queue depth
# 1 and 32, one connection, modes rdma (per-I/O registration), bounce and
# nfs-tcp, all on the soft provider over loopback.
#
# fio: one rrr-server on a temporary export (ephemeral ports), one fio run per
# mode over the 8 cells (time-based, FIO_FIG_SECONDS each, default 2, after
# 0.2 s ramp; 32 MiB file; rw=read / rw=write sequential). rrr-bench io spawns
# its own server and keeps qd calls in flight over qd x size bytes (each slot
# its own range). Prints a table (IOPS, MB/s = 10^6 bytes/s) and writes it to
# OUT_FILE (default docs/bench/fio.txt) with the commands and the machine
# line. These figures are from whatever machine runs this, loaded or not.
set -euo pipefail
build=${1:?usage: fio-figures.sh BUILD [OUT_FILE]}
out=${2:-docs/bench/fio.txt}
secs=${FIO_FIG_SECONDS:-2}
case $build in /*) ;; *) build=$PWD/$build ;; esac
eng=$build/rrr-fio.so
[[ -f $eng ]] || { echo "fio-figures: no $eng (make deps-fio && make)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio-figures: fio not installed (make deps-fio)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/rrr-fio-fig.XXXXXX)
spid=
cleanup() { [[ -n $spid ]] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/export" "$tmp/state"
"$build/rrr-server" --export "$tmp/export" --state-dir "$tmp/state" --no-root-squash --listen 127.0.0.1 \
	--port 0 --mount-port 0 --port-file "$tmp/ports" >"$tmp/server.log" 2>&1 &
spid=$!
for _ in $(seq 1 100); do [[ -s $tmp/ports ]] && break; sleep 0.1; done
read -r rdma_p mount_p _ < <(sed 's/rdma=\([0-9]*\) mount=\([0-9]*\) tcp=\([0-9]*\)/\1 \2 \3/' "$tmp/ports")
[[ -n ${mount_p:-} ]] || { cat "$tmp/server.log" >&2; exit 1; }

job=$tmp/cells.fio
{
	printf '[global]\nfilename=fig.dat\nsize=32m\nstonewall\ntime_based\nruntime=%s\nramp_time=200ms\n' "$secs"
	for op in read write; do for bs in 4k 1m; do for qd in 1 32; do
		printf '[%s-%s-%s]\nrw=%s\nbs=%s\niodepth=%s\n' $op $bs $qd $op $bs $qd
	done; done; done
} >"$job"
fiocmd() { # mode
	case $1 in
	rdma) echo "--transport=rdma --port=$rdma_p --reg=per-io" ;;
	bounce) echo "--transport=rdma --port=$rdma_p --reg=bounce" ;;
	nfs-tcp) echo "--transport=tcp --port=$mount_p" ;;
	esac
}
for m in rdma bounce nfs-tcp; do
	# shellcheck disable=SC2046
	fio --ioengine=external:"$eng" --host=127.0.0.1 --mount_port="$mount_p" $(fiocmd $m) \
		--output-format=terse "$job" >"$tmp/fio-$m.terse" 2>"$tmp/fio-$m.err" ||
		{ cat "$tmp/fio-$m.err" >&2; exit 1; }
done
benchcmd="rrr-bench io --provider soft --modes rdma,bounce,nfs-tcp --ops read,write --sizes 4k,1m --qd 1,32 --seconds $secs --rounds 1 --warmup 0.2"
# shellcheck disable=SC2086
"$build/"$benchcmd >"$tmp/bench.txt" 2>"$tmp/bench.err" || { cat "$tmp/bench.err" >&2; exit 1; }

{
	echo "# fio (rrr engine) vs rrr-bench io, soft provider, loopback, one connection"
	echo "# machine: nproc=$(nproc) kernel=$(uname -r) loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" (shared, loaded: compare columns, not machines)"
	echo "# fio: fio --ioengine=external:$eng --host=127.0.0.1 --port=P --mount_port=P --transport=rdma|tcp --reg=per-io|bounce job.fio"
	echo "#      (job: 32 MiB file, rw=read|write, bs=4k|1m, iodepth=1|32, time_based runtime=${secs}s, ramp 0.2 s; from scripts/fio-figures.sh)"
	echo "# bench: $benchcmd"
	printf '%-6s %5s %3s  %-8s %10s %10s %10s %10s %7s\n' op size qd mode "fio IOPS" "fio MB/s" "bench IOPS" "bench MB/s" "fio/b"
	for m in rdma bounce nfs-tcp; do
		awk -F';' -v m=$m '/^3;/ { split($3, c, "-"); op = c[1]; bs = c[2]; qd = c[3]
			if (op == "read") { iops = $8; kib = $7 } else { iops = $49; kib = $48 }
			printf "%s %s %s %s %.0f %.1f\n", op, bs, qd, m, iops, kib * 1024 / 1e6 }' "$tmp/fio-$m.terse"
	done | sort -k1,1r -k2,2 -k3,3n -k4,4r | while read -r op bs qd m fi fm; do
		b=$(awk -v op=$op -v bs=$bs -v qd=$qd -v m=$m '$1 == op && $2 == bs && $3 == qd && $4 == 1 && $5 == m {print $6, $7; exit}' "$tmp/bench.txt")
		bi=${b% *}
		bm=${b#* }
		printf '%-6s %5s %3s  %-8s %10s %10s %10s %10s %7s\n' "$op" "$bs" "$qd" "$m" "$fi" "$fm" "${bi:--}" "${bm:--}" \
			"$(awk -v a="$fi" -v b="${bi:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
	done
} | tee "$out"
