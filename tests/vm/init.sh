#!/bin/sh
# tests/vm/init.sh - /init of the test VM's initramfs (busybox).
# Loads the modules listed in /modules/order (dependencies first), mounts the
# host root (9p, read-only) under a tmpfs overlay, mounts the results share,
# binds the checkout where the guest's own tmpfs mounts would hide it, and
# runs tests/vm/guest.sh inside that root. Powers off when done, whatever
# happens, so qemu exits; run.sh bounds the whole run with a timeout.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod /modules/$m 2>/dev/null || echo "init: insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /mnt/lower ||
	{ echo "init: cannot mount host root"; poweroff -f; }
mount -t tmpfs -o size=1024m tmpfs /mnt/upper
mkdir -p /mnt/upper/u /mnt/upper/w
mount -t overlay -o lowerdir=/mnt/lower,upperdir=/mnt/upper/u,workdir=/mnt/upper/w overlay /newroot ||
	{ echo "init: overlay mount failed"; poweroff -f; }
mkdir -p /newroot/rrr-results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap results /newroot/rrr-results ||
	echo "init: cannot mount results share"
. /newroot/rrr-results/env
# The guest mounts its own tmpfs on /tmp, /run and /dev/shm below, which
# would hide a checkout or build directory there (a clone under /tmp): bind
# them first to /rrr-root and /rrr-build and tell guest.sh (/etc/rrr-vm-paths).
hidden() { case "$1" in /tmp|/tmp/*|/run|/run/*|/dev/shm|/dev/shm/*) return 0 ;; esac; return 1; }
: > /newroot/etc/rrr-vm-paths
if hidden "$RRR_ROOT"; then
	mkdir -p /newroot/rrr-root
	mount -o bind "/newroot$RRR_ROOT" /newroot/rrr-root || echo "init: cannot bind $RRR_ROOT"
	case "$RRR_BUILD" in "$RRR_ROOT"/*) RRR_BUILD="/rrr-root${RRR_BUILD#"$RRR_ROOT"}" ;; esac
	RRR_ROOT=/rrr-root
	echo "RRR_ROOT=$RRR_ROOT" >> /newroot/etc/rrr-vm-paths
fi
if hidden "$RRR_BUILD"; then
	mkdir -p /newroot/rrr-build
	mount -o bind "/newroot$RRR_BUILD" /newroot/rrr-build || echo "init: cannot bind $RRR_BUILD"
	RRR_BUILD=/rrr-build
fi
echo "RRR_BUILD=$RRR_BUILD" >> /newroot/etc/rrr-vm-paths
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm /newroot/tmp /newroot/run
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs tmpfs /newroot/tmp
mount -t tmpfs tmpfs /newroot/run
chroot /newroot /bin/bash "$RRR_ROOT/tests/vm/guest.sh" </dev/console >/dev/console 2>&1
echo "init: guest.sh exited with $?"
sync
poweroff -f
