# tests/vm/nfs-lib.sh - sourced by the VM test scripts that run rrr-server
# or rrr-client with the kernel's NFS client or server: the checks that
# skip (exit 77) or fail (exit 1) a script whose tools are missing, and the
# kernel's nfsd set up to export one directory. Sets S and C (the server
# and client programs of the build) and ADDR (the guest's address).
S="$RRR_BUILD/rrr-server"
C="$RRR_BUILD/rrr-client"
ADDR=${RRR_VM_ADDR:-10.0.2.15}

# need_built FILE...: exit 1 when a program of the build is missing.
need_built() {
	local f
	for f in "$@"; do
		[ -x "$f" ] || { echo "missing $f (make all)"; exit 1; }
	done
}

# need_mount_nfs: exit 77 (skipped) when mount.nfs is missing.
need_mount_nfs() {
	command -v mount.nfs >/dev/null || [ -x /sbin/mount.nfs ] ||
		{ echo "mount.nfs missing (nfs-common: make deps-vm)"; exit 77; }
}

# need_knfsd: exit 77 (skipped) when the kernel NFS server's tools are missing.
need_knfsd() {
	local t
	for t in rpc.nfsd rpc.mountd exportfs rpcbind; do
		command -v $t >/dev/null || [ -x /usr/sbin/$t ] || [ -x /sbin/$t ] ||
			{ echo "$t missing (nfs-kernel-server, rpcbind: make deps-vm)"; exit 77; }
	done
}

# knfsd_export DIR FSID: the kernel's nfsd (NFSv3 on TCP 2049, rpc.mountd
# on 20048 unless one runs already) exports DIR alone, as FSID; any step
# that fails ends in the caller's fail().
knfsd_export() {
	mkdir -p /var/lib/nfs /run/rpcbind /proc/fs/nfsd
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	echo "$1 *(rw,no_root_squash,insecure,no_subtree_check,fsid=$2)" > /etc/exports
	rpcbind -w 2>/dev/null || rpcbind
	exportfs -ra || fail "exportfs"
	pgrep -x rpc.mountd >/dev/null || rpc.mountd -p 20048 -N 2 -N 4 || fail "rpc.mountd"
	rpc.nfsd -N 4 2 || fail "rpc.nfsd"
}
