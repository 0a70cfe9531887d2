# rrr-bench reg on the verbs provider (rxe0): per-I/O registration +
# invalidation per strategy the device offers (memory windows, ibv_reg_mr
# per I/O, UMR where present) beside the persistent baseline. A strategy the
# device lacks is reported as skipped by rrr-bench itself.
# Results: $RRR_VM_RESULTS/vm-reg-verbs.{json,txt}.
set -u
B="$RRR_BUILD/rrr-bench"
[ -x "$B" ] || { echo "missing $B (make all)"; exit 1; }
D=${RRR_VERBS_DEV:-rxe0}
OUT=${RRR_VM_RESULTS:-/tmp}
"$B" reg --provider verbs --addr "${RRR_VM_ADDR:-10.0.2.15}" \
	--strategy "mw:dev=$D,strategy=mw" \
	--strategy "regmr:dev=$D,strategy=regmr" \
	--strategy "umr:dev=$D,strategy=umr" \
	--strategy "persistent:dev=$D" \
	--sizes 4k,64k,1m --iters 2000 --batch 50 \
	--json "$OUT/vm-reg-verbs.json" | tee "$OUT/vm-reg-verbs.txt"
rc=${PIPESTATUS[0]}
# A strategy that fails mid-run is a finding, not a harness failure: the
# table says FAILED and why; only a crash or usage error fails the script.
[ "$rc" -le 1 ] || exit 1
[ -s "$OUT/vm-reg-verbs.json" ] || exit 1
exit 0
