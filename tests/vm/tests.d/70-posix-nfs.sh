# vm-timeout: 900
# The POSIX semantics suite tests/vm/posix.sh through the kernel NFSv3
# client, side by side in the same run on the same kind of export file
# system (two directories of one tmpfs): rrr-server over RDMA (rxe0) and the
# kernel's own nfsd. Both export with root not squashed (the suite makes its
# fixtures as root and plays other users with setpriv). rrr-server must fail
# no case that nfsd passes; the cases that fail on both are what NFSv3 (or
# the Linux client) cannot do, and are listed.
set -u
. "$RRR_ROOT/tests/vm/nfs-lib.sh"
need_built "$S"
need_mount_nfs
command -v setpriv >/dev/null || { echo "setpriv missing (util-linux)"; exit 77; }
need_knfsd
W=/srv/rrr-posix
SUITE="$RRR_ROOT/tests/vm/posix.sh"
SPID=
fail() {
	echo "FAIL: $*"
	tail -n 30 "$W/server.log" 2>/dev/null
	umount -f "$W/m-rrr" "$W/m-knfsd" 2>/dev/null
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	rpc.nfsd 0 2>/dev/null
	exit 1
}
mkdir -p "$W"
mountpoint -q "$W" || mount -t tmpfs -o size=128m tmpfs "$W"
mkdir -p "$W/rrr" "$W/knfsd" "$W/m-rrr" "$W/m-knfsd" "$W/state"
chmod 0755 "$W/rrr" "$W/knfsd"

# the kernel's nfsd on TCP 2049 (rpc.mountd may already run from 40-*.sh)
knfsd_export "$W/knfsd" 78
mount -t nfs -o vers=3,proto=tcp,nolock "$ADDR:$W/knfsd" "$W/m-knfsd" || fail "mount knfsd"

# rrr-server over RDMA, its MOUNT on another port than rpc.mountd's
"$S" --export "$W/rrr" --provider verbs --provider-opts "dev=${RRR_VERBS_DEV:-rxe0}" \
	--listen "$ADDR" --port 20051 --mount-port 20052 --state-dir "$W/state" \
	--port-file "$W/ports" --threads 2 --no-root-squash > "$W/server.log" 2>&1 &
SPID=$!
for _ in $(seq 1 200); do [ -s "$W/ports" ] && break; sleep 0.1; done
[ -s "$W/ports" ] || fail "rrr-server did not start"
mount -t nfs -o vers=3,proto=rdma,port=20051,mountproto=tcp,mountport=20052,nolock \
	"$ADDR:$W/rrr" "$W/m-rrr" || fail "mount rrr-server"

mkdir "$W/m-rrr/t" "$W/m-knfsd/t" || fail "mkdir"
bash "$SUITE" "$W/m-knfsd/t" > "$W/knfsd.out" 2>&1
bash "$SUITE" "$W/m-rrr/t" > "$W/rrr.out" 2>&1
mkdir -p "$W/local" && bash "$SUITE" "$W/local" > "$W/local.out" 2>&1

umount "$W/m-rrr" || fail "umount rrr"
umount "$W/m-knfsd" || fail "umount knfsd"
kill -TERM "$SPID"; wait "$SPID"; rc=$?; SPID=
rpc.nfsd 0
[ $rc -eq 0 ] || fail "rrr-server exit status $rc"

total=$(grep -c '^PASS\|^FAIL' "$W/knfsd.out")
echo "cases: $total"
echo "local tmpfs: $(grep -c '^PASS' "$W/local.out") pass, $(grep -c '^FAIL' "$W/local.out") fail"
echo "knfsd:       $(grep -c '^PASS' "$W/knfsd.out") pass, $(grep -c '^FAIL' "$W/knfsd.out") fail"
echo "rrr-server:  $(grep -c '^PASS' "$W/rrr.out") pass, $(grep -c '^FAIL' "$W/rrr.out") fail"
echo "== failing on both (what NFSv3 through the Linux client cannot do):"
worse=0
while read -r verdict name rest; do
	case $verdict in PASS|FAIL) ;; *) continue ;; esac
	name=${name%:}
	r=$(grep -E "^(PASS|FAIL) $name(:|$)" "$W/rrr.out" | head -n 1)
	case "$verdict/$r" in
	PASS/FAIL*) echo "  rrr-server fails what knfsd passes: $r"; worse=$((worse + 1)) ;;
	FAIL/FAIL*) echo "  $name: knfsd '$rest' / rrr-server '${r#FAIL $name: }'" ;;
	FAIL/PASS*) echo "  ($name passes on rrr-server only)" ;;
	esac
done < "$W/knfsd.out"
[ "$(grep -c '^PASS\|^FAIL' "$W/rrr.out")" -eq "$total" ] || fail "the suite did not run to the end on rrr-server"
[ $worse -eq 0 ] || fail "$worse cases fail on rrr-server and pass on knfsd"
echo "POSIX suite: rrr-server fails no case that the kernel's nfsd passes: OK"
