# The client/server end-to-end suites that run on soft in `make test`
# (tests/clnt rdma.c + svc.c, tests/svc rdma.c + hostile.c,
# tests/reg soft.c) run here on the verbs provider over rxe0 (see
# tests/test_env.h: RRR_TEST_PROVIDER, RRR_TEST_PROVIDER_OPTS, RRR_TEST_ADDR).
#
# Legs:
#   regmr  strategy=regmr (what strategy=auto picks on rxe): every RDMA test
#          of those suites.
#   mw     strategy=mw (window bounds are not enforced on rxe, so it is not
#          safe there, but it is the strategy with Send With Invalidate and
#          8-bit key rotation): the tests that exercise remote invalidation,
#          key rotation and recovery.
# Only the soft-specific tests may be skipped (they say why); any other skip
# is a failure. Time under TCG: about two minutes (Criterion --jobs 1; every
# binary under its own timeout).
set -u
B="$RRR_BUILD/tests"
for t in clnt svc reg; do
	[ -x "$B/$t" ] || { echo "missing $B/$t (make tests)"; exit 1; }
done
export RRR_TEST_PROVIDER=verbs RRR_TEST_ADDR="${RRR_VM_ADDR:-10.0.2.15}"
DEV=${RRR_VERBS_DEV:-rxe0}
# soft-only tests (TENV_SOFT_ONLY / no Send With Invalidate under regmr)
# svc::rdma_call_survives_server_restart: not answered on rxe yet (known gap, see the test)
ALLOWED_SKIPS='rdma_segs::multi_segment_chunks|rdma_segs::long_chains_wait_for_send_queue_room|svc_rdma::sink_split_across_registrations|soft::key_wraps_after_256_maps|svc::rdma_call_survives_server_restart'
ALLOWED_SKIPS_REGMR='soft::remote_invalidation|soft::foreign_remote_invalidation'
fails=0
out=/tmp/rpc-on-rxe.out

# run LEG BIN FILTER [extra allowed skips]
run() {
	local leg=$1 bin=$2 filter=$3 allow=$ALLOWED_SKIPS s rc
	[ -n "${4:-}" ] && allow="$allow|$4"
	s=$(date +%s)
	timeout --kill-after=5 120 "$B/$bin" --jobs 1 --verbose --filter "$filter" > "$out" 2>&1
	rc=$?
	grep -E '^\[(RUN|PASS|SKIP|FAIL|----|====)\]' "$out" | grep -v '^\[RUN \]' | grep -v -- '----\] *$'
	echo "== $leg $bin '$filter': status $rc, $(( $(date +%s) - s ))s"
	if [ $rc -ne 0 ]; then
		echo "---- full output"; tail -n 80 "$out"; fails=$((fails + 1))
	fi
	if ! grep -q '^\[====\] Synthesis: Tested: [1-9]' "$out"; then
		echo "$leg $bin '$filter': no test ran"; fails=$((fails + 1))
	fi
	bad=$(grep '^\[SKIP\]' "$out" | grep -v 'Test is disabled' | grep -Ev "$allow")
	if [ -n "$bad" ]; then
		echo "$leg: unexpected skips:"; echo "$bad"; fails=$((fails + 1))
	fi
}

export RRR_TEST_PROVIDER_OPTS="dev=$DEV,strategy=regmr"
run regmr clnt 'rdma*/*'
run regmr clnt 'svc/rdma_*'
run regmr svc 'svc_rdma/*'
run regmr svc 'svc_hostile/*'
run regmr reg 'soft/*' "$ALLOWED_SKIPS_REGMR"

export RRR_TEST_PROVIDER_OPTS="dev=$DEV,strategy=mw"
run mw clnt 'rdma/@(negotiation_and_null|read_chunk_odd_length|write_chunk|stale_handle_places_nothing|foreign_invalidation_disconnects|cancel_invalidates)'
run mw clnt 'svc/rdma_all_shapes'
run mw svc 'svc_rdma/send_with_invalidate'
run mw reg 'soft/@(write_and_read_through_handles|write_after_local_inv_refused|remote_invalidation|foreign_remote_invalidation|key_rotation_old_handle_refused|recovery_after_flush)'

[ $fails -eq 0 ] || { echo "$fails leg(s) failed"; exit 1; }
echo "RPC suites on $DEV (regmr, mw): OK"
