# vm-timeout: 900
# The Linux kernel NFSv3/RDMA client over the kernel's soft-iWARP (siw0)
# mounts rrr-server on the soft provider (user-space iWARP): dd + cmp, fio
# verify (libaio, direct, 4k-1m, QD1 and QD16), untar + diff of a source
# tree, and a server restart under the live mount; captured and decoded by
# Wireshark. siw's Request has no peer-to-peer bit, so this is the case that
# needs rrr's responder to send nothing before the client's first FPDU.
set -u
W=/tmp/siw-kclient
. "$RRR_ROOT/tests/vm/siw-lib.sh"
command -v mount.nfs >/dev/null || [ -x /sbin/mount.nfs ] ||
	{ echo "mount.nfs missing (nfs-common: make deps-vm)"; exit 77; }
EXP=/srv/siw-exp
MNT=/tmp/siw-mnt
mkdir -p "$EXP" "$MNT"
mountpoint -q "$EXP" || mount -t tmpfs -o size=512m tmpfs "$EXP"

# CRC on (the soft provider asks for it; siw follows) for the whole run
server_start "$EXP" --provider soft --provider-opts crc=1
capture_start kernel-client-soft
mount -t nfs -o vers=3,proto=rdma,port=20049,mountproto=tcp,mountport=20048,nolock \
	"$ADDR:$EXP" "$MNT" || fail "mount over siw0"
grep " $MNT " /proc/mounts
head -c 300001 /dev/urandom > /tmp/siw-small.bin
cp /tmp/siw-small.bin "$MNT/small.bin" && sync || fail "cp small.bin"
echo 3 > /proc/sys/vm/drop_caches
cmp /tmp/siw-small.bin "$MNT/small.bin" || fail "small.bin read back differs"
capture_check

# dd + cmp, O_DIRECT at 1 MiB and 4 KiB
head -c $((16 << 20)) /dev/urandom > /tmp/siw-big.bin
for bs in 1M 4k; do
	dd if=/tmp/siw-big.bin of="$MNT/big-$bs" bs=$bs oflag=direct status=none || fail "dd write $bs"
	cmp /tmp/siw-big.bin "$EXP/big-$bs" || fail "the server's copy differs ($bs)"
	dd if="$MNT/big-$bs" of=/tmp/siw-back.bin bs=$bs iflag=direct status=none || fail "dd read $bs"
	cmp /tmp/siw-big.bin /tmp/siw-back.bin || fail "read back differs ($bs)"
	rm "$MNT/big-$bs" || fail "rm big-$bs"
done
echo "dd + cmp at 1M and 4k: OK"

# fio verify, libaio direct, 4k-1m, QD1 and QD16
if command -v fio >/dev/null; then
	for qd in 1 16; do
		timeout -k 5 300 fio --name=verify-qd$qd --directory="$MNT" --ioengine=libaio \
			--direct=1 --rw=randwrite --bsrange=4k-1m --iodepth=$qd --size=16m \
			--verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse \
			>"$W/fio-qd$qd.terse" 2>"$W/fio-qd$qd.err" || {
			tail -n 20 "$W/fio-qd$qd.err"; fail "fio verify QD$qd"; }
		bad=$(awk -F';' '/^3;/ && $5 != 0 {print $3 " error " $5}' "$W/fio-qd$qd.terse")
		[ -z "$bad" ] || fail "fio QD$qd: $bad"
		echo "fio verify QD$qd (libaio, direct, 4k-1m): OK"
	done
	rm -f "$MNT"/verify-qd*
else
	echo "fio is not installed: the fio verify leg is skipped (make deps-fio)"
fi

# untar + diff of a source tree with its directories
tar -C /usr/include -cf /tmp/siw-tree.tar linux asm-generic || fail "tar on the host side"
mkdir "$MNT/tree" || fail "mkdir tree"
tar -C "$MNT/tree" -xf /tmp/siw-tree.tar || fail "untar onto the mount"
diff -r /usr/include/linux "$MNT/tree/linux" >/dev/null || fail "diff linux"
diff -r /usr/include/asm-generic "$MNT/tree/asm-generic" >/dev/null || fail "diff asm-generic"
echo "untar + diff of $(tar -tf /tmp/siw-tree.tar | wc -l) entries: OK"

# a server restart under the live mount: the client reconnects, nothing lost
cp /tmp/siw-big.bin "$MNT/keep.bin" && sync || fail "cp keep.bin"
server_stop
server_start "$EXP" --provider soft --provider-opts crc=1
echo 3 > /proc/sys/vm/drop_caches
timeout 120 cmp /tmp/siw-big.bin "$MNT/keep.bin" || fail "read after the server restart"
timeout 120 cp /tmp/siw-big.bin "$MNT/after.bin" && sync || fail "write after the server restart"
cmp /tmp/siw-big.bin "$EXP/after.bin" || fail "the server's copy after the restart differs"
echo "server restart under the live mount: OK"

rm -rf "${MNT:?}"/* || fail "rm -r"
umount "$MNT" || fail umount
server_stop
if grep -E 'refused an|cannot set up an' "$W/server.log"; then fail "the server refused a connection"; fi
echo "kernel NFSv3/RDMA client over siw0 -> rrr-server (soft): OK"
