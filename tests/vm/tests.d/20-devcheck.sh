# rrr-devcheck's verdicts on rxe: window bounds are not enforced there (quirk
# 2), so mw must be reported UNSAFE, regmr SAFE, persistent UNSAFE, and
# strategy=auto must pick regmr (exit status 0: the default is safe).
set -u
dc="$RRR_BUILD/rrr-devcheck"
[ -x "$dc" ] || { echo "missing $dc (make all)"; exit 1; }
"$dc" --help | grep -q 'exit status' || { echo "--help broken"; exit 1; }
out=$("$dc" -d "$RRR_VERBS_DEV" 2>&1); rc=$?
echo "$out"
fail() { echo "devcheck verdict check failed: $*"; exit 1; }
[ $rc -eq 0 ] || fail "exit status $rc, expected 0"
echo "$out" | grep -Eq '^ +regmr +SAFE$' || fail "regmr not SAFE"
echo "$out" | grep -Eq '^ +mw +UNSAFE \(bounds\)$' || fail "mw not UNSAFE (bounds) on rxe"
echo "$out" | grep -Eq '^ +persistent +UNSAFE' || fail "persistent not UNSAFE"
echo "$out" | grep -Eq '^mw +bounds +FAIL' || fail "mw bounds check not FAIL"
echo "$out" | grep -Eq '^mw +remote_inv +PASS' || fail "remote invalidation not PASS"
echo "$out" | grep -Eq '^mw +(rights|local_inv|key_rotation) +PASS' || fail "mw checks"
echo "$out" | grep -q 'strategy=auto picks regmr on rxe0: SAFE' || fail "auto pick"
"$dc" -d nope0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown device must exit 2"
echo "devcheck verdicts as expected"
