# vm-timeout: 600
# rrr-client and the fio engine rrr-fio.so on the soft provider against the
# kernel's nfsd exported over the kernel's soft-iWARP (siw0): put, ls, get
# with checksums; fio with CRC32C verify (4k-256k: nfsd in the 2 GiB VM takes
# 256 KiB per READ/WRITE); captured and decoded by Wireshark.
set -u
W=/tmp/siw-knfsd
. "$RRR_ROOT/tests/vm/siw-lib.sh"
. "$RRR_ROOT/tests/vm/nfs-lib.sh"
need_knfsd
EXP=/srv/siw-kexp
mkdir -p "$EXP"
mountpoint -q "$EXP" || mount -t tmpfs -o size=256m tmpfs "$EXP"
knfsd_export "$EXP" 78
grep -q rdma /proc/fs/nfsd/portlist || echo 'rdma 20049' > /proc/fs/nfsd/portlist ||
	fail "cannot add the rdma port to nfsd"
cat /proc/fs/nfsd/portlist
knfsd_fail() { rpc.nfsd 0; fail "$@"; }

head -c 5000003 /dev/urandom > "$W/src.bin"
for crc in 1 0; do
	echo "== rrr-client (soft, crc=$crc) -> knfsd over siw0"
	CL=("$C" --transport rdma --provider soft --provider-opts "crc=$crc" --server "$ADDR"
	    --port 20049 --mount-port 20048 --export "$EXP" --no-progress)
	rm -rf "${EXP:?}"/* "$W/back.bin"
	capture_start "rrr-client-knfsd-crc$crc"
	"${CL[@]}" --verify --qd 8 put "$W/src.bin" k.bin || knfsd_fail "put"
	cmp "$W/src.bin" "$EXP/k.bin" || knfsd_fail "the kernel server's copy differs"
	"${CL[@]}" ls | grep k.bin || knfsd_fail "ls"
	"${CL[@]}" --verify --stats get k.bin "$W/back.bin" || knfsd_fail "get"
	cmp "$W/src.bin" "$W/back.bin" || knfsd_fail "read back differs"
	capture_check
done

E="$RRR_BUILD/rrr-fio.so"
if command -v fio >/dev/null && [ -f "$E" ]; then
	echo "== rrr-fio.so (soft) -> knfsd over siw0"
	timeout -k 5 300 fio --ioengine=external:"$E" --transport=rdma --provider=soft \
		--host="$ADDR" --port=20049 --mount_port=20048 --export="$EXP" \
		--name=siw-verify --filename=siw-verify.dat --rw=randwrite --bsrange=4k-256k \
		--iodepth=8 --size=8m --verify=crc32c --verify_fatal=1 --output-format=terse \
		>"$W/fio.terse" 2>"$W/fio.err" || { tail -n 20 "$W/fio.err"; knfsd_fail "fio engine"; }
	bad=$(awk -F';' '/^3;/ && $5 != 0 {print $3 " error " $5}' "$W/fio.terse")
	[ -z "$bad" ] || knfsd_fail "fio engine: $bad"
	echo "rrr-fio.so against knfsd over siw0, CRC32C verified: OK"
else
	echo "no fio or no $E: the fio engine leg is skipped (make deps-fio)"
fi
rpc.nfsd 0
echo "rrr-client and rrr-fio.so (soft) -> the kernel's nfsd over siw0: OK"
