#!/bin/bash
# tests/vm/posix.sh DIR - a compact POSIX semantics suite (the shape of
# pjdfstest, which Debian does not package): chmod, chown, open, link,
# unlink, rename, mkdir, mknod, truncate, utimes and symlink expectations,
# including EPERM/EACCES for users other than the owner (setpriv), run in
# DIR (a fresh directory, normally on an NFS mount; run as root).
# Prints one line per case, "PASS name" or "FAIL name: why", and exits 0.
# 70-posix-nfs.sh runs it through the kernel client against rrr-server and
# against the kernel's nfsd and compares.
set -u
D=${1:?usage: posix.sh DIR}
cd "$D" || exit 1
umask 022
U1=1001 U2=1002 G=3000
u1() { setpriv --reuid $U1 --regid $U1 --clear-groups "$@"; }
u2() { setpriv --reuid $U2 --regid $U2 --clear-groups "$@"; }
u1g() { setpriv --reuid $U1 --regid $U1 --groups $U1,$G "$@"; }
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; }
# expect NAME ERROR cmd...: ERROR is 0 (must succeed), '*' (must fail), or
# the strerror text the command must print.
expect() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$@" 2>&1); rc=$?
	if [ "$want" = 0 ]; then
		[ $rc -eq 0 ] && ok "$name" || bad "$name" "wanted success, got: $out"
	elif [ $rc -eq 0 ]; then
		bad "$name" "wanted '$want', it succeeded"
	elif [ "$want" = '*' ] || printf '%s' "$out" | grep -q "$want"; then
		ok "$name"
	else
		bad "$name" "wanted '$want', got: $out"
	fi
}
# check NAME WANT GOT
check() { [ "$2" = "$3" ] && ok "$1" || bad "$1" "wanted '$2', got '$3'"; }
EPERM="Operation not permitted" EACCES="Permission denied" EEXIST="File exists"
ENOENT="No such file or directory" ENOTEMPTY="Directory not empty"
EINVAL="Invalid argument" EISDIR="Is a directory"

# fixtures: a directory and files of user 1, a sticky world-writable directory
mkdir own && chown $U1:$U1 own && chmod 0755 own
mkdir sticky && chmod 1777 sticky
mkdir team && chown 0:$G team && chmod 2775 team
for f in own/f0600 own/f0644 own/f0666 sticky/f1; do : > "$f"; chown $U1:$U1 "$f"; done
chmod 0600 own/f0600; chmod 0644 own/f0644 sticky/f1; chmod 0666 own/f0666

# ---- chmod
expect chmod.owner 0 u1 chmod 0640 own/f0644
check chmod.owner.mode 640 "$(stat -c %a own/f0644)"
chmod 0644 own/f0644
expect chmod.other "$EPERM" u2 chmod 0777 own/f0644
check chmod.other.unchanged 644 "$(stat -c %a own/f0644)"
expect chmod.root 0 chmod 0604 own/f0644
chmod 0644 own/f0644
chgrp $G own/f0666
u1 chmod 2666 own/f0666 2>/dev/null
check chmod.sgid_not_member 666 "$(stat -c %a own/f0666)"
chgrp $U1 own/f0666 && chmod 0666 own/f0666
u1g sh -c ": > team/g1 && chmod 2664 team/g1"
check chmod.sgid_member 2664 "$(stat -c %a team/g1)"

# ---- chown
expect chown.user_to_other "$EPERM" u1 chown $U2 own/f0644
expect chown.group_member 0 u1g chgrp $G own/f0644
check chown.group_member.gid $G "$(stat -c %g own/f0644)"
expect chown.group_not_member "$EPERM" u1 chgrp 4000 own/f0644
expect chown.root 0 chown $U2:$U2 own/f0644
check chown.root.uid $U2 "$(stat -c %u own/f0644)"
chown $U1:$U1 own/f0644
: > own/suid && chown $U1:$U1 own/suid && chmod 4755 own/suid
chown $U2 own/suid
check chown.clears_suid 755 "$(stat -c %a own/suid)"

# ---- open
expect open.read_0600_other "$EACCES" u2 cat own/f0600
expect open.write_0644_other "$EACCES" u2 sh -c 'echo x >> own/f0644'
expect open.write_0666_other 0 u2 sh -c 'echo x >> own/f0666'
expect open.create_in_others_dir "$EACCES" u2 sh -c ': > own/new'
expect open.excl_existing '*' sh -c 'set -C; : > own/f0644'
expect open.excl_new 0 sh -c 'set -C; : > own/excl'
expect open.dir_for_write "$EISDIR" sh -c ': > own'
mkdir nox && chown $U1:$U1 nox && chmod 0666 nox
expect open.create_no_search "$EACCES" u1 sh -c ': > nox/f'
mkdir priv && chown $U1:$U1 priv && chmod 0700 priv && : > priv/f
expect open.lookup_no_search "$EACCES" u2 cat priv/f
expect open.trunc_with_write 0 u2 sh -c ': > own/f0666'
check open.trunc_with_write.size 0 "$(stat -c %s own/f0666)"
u1 sh -c 'umask 0; : > own/mode0640; chmod 0640 own/mode0640'
check open.create_mode 640 "$(stat -c %a own/mode0640)"
check open.create_owner "$U1:$U1" "$(stat -c %u:%g own/mode0640)"

# ---- link
: > l.src
expect link.file 0 link l.src l.dst
check link.nlink 2 "$(stat -c %h l.src)"
check link.same_inode "$(stat -c %i l.src)" "$(stat -c %i l.dst)"
expect link.dir "$EPERM" link own own.lnk
expect link.into_others_dir "$EACCES" u2 link own/f0666 own/f0666.lnk
expect link.existing "$EEXIST" link l.src l.dst
expect link.missing "$ENOENT" link nothing l.none
expect link.unlink_keeps_other 0 unlink l.src
check link.nlink_after_unlink 1 "$(stat -c %h l.dst)"

# ---- unlink, rmdir
expect unlink.in_others_dir "$EACCES" u2 rm -f own/f0600
: > sticky/f2 && chown $U2:$U2 sticky/f2
expect unlink.sticky_others "$EPERM" u2 rm -f sticky/f1
expect unlink.sticky_own 0 u2 rm -f sticky/f2
mkdir full && : > full/x
expect rmdir.not_empty "$ENOTEMPTY" rmdir full
expect unlink.dir '*' unlink full
expect rmdir.file '*' rmdir full/x
expect rmdir.empty 0 sh -c 'rm full/x && rmdir full'

# ---- rename
mkdir ra rb && : > ra/f
expect rename.across_dirs 0 mv ra/f rb/f
[ -e rb/f ] && [ ! -e ra/f ] && ok rename.across_dirs.moved || bad rename.across_dirs.moved "not moved"
mkdir -p rc/sub
expect rename.into_own_subdir "Invalid argument" \
	python3 -c 'import os; os.rename("rc", "rc/sub/rc")'
expect rename.file_over_dir '*' mv -T rb/f ra
mkdir -p rd/x re
expect rename.dir_over_nonempty '*' mv -T re rd
expect rename.dir_over_empty 0 mv -T rd/x re
: > sticky/r1 && chown $U1:$U1 sticky/r1
expect rename.sticky_others "$EPERM" u2 mv sticky/r1 sticky/r2
expect rename.from_others_dir "$EACCES" u2 mv own/f0666 sticky/stolen
: > ro1 && : > ro2 && echo two > ro2
expect rename.over_file 0 mv ro2 ro1
check rename.over_file.content two "$(cat ro1)"

# ---- mkdir
expect mkdir.existing "$EEXIST" mkdir own
expect mkdir.mode 0 sh -c 'umask 0; mkdir -m 0701 m701'
check mkdir.mode.bits 701 "$(stat -c %a m701)"
expect mkdir.in_others_dir "$EACCES" u2 mkdir own/sub
u1g mkdir team/sub
check mkdir.sgid_inherited "2755:$G" "$(stat -c %a:%g team/sub)"

# ---- mknod
expect mknod.fifo 0 mkfifo fifo
check mknod.fifo.type "fifo" "$(stat -c %F fifo)"
expect mknod.fifo_user 0 u1 mkfifo own/ufifo
check mknod.fifo_user.owner $U1 "$(stat -c %u own/ufifo)"
expect mknod.chr_root 0 mknod null c 1 3
check mknod.chr.rdev "1:3" "$(stat -c '%Hr:%Lr' null)"
expect mknod.blk_root 0 mknod blk b 7 0
expect mknod.chr_user "$EPERM" u1 mknod own/unull c 1 3
expect mknod.fifo_in_others_dir "$EACCES" u2 mkfifo own/f2

# ---- truncate
printf abc > t1
expect truncate.grow 0 truncate -s 100 t1
check truncate.grow.size 100 "$(stat -c %s t1)"
check truncate.grow.zeros "abc" "$(tr -d '\0' < t1)"
expect truncate.shrink 0 truncate -s 1 t1
check truncate.shrink.content "a" "$(cat t1)"
expect truncate.other_no_write "$EACCES" u2 truncate -s 0 own/f0644
expect truncate.owner_0444 "$EACCES" u1 sh -c ': > own/ro && chmod 0444 own/ro && truncate -s 5 own/ro'
expect truncate.dir '*' truncate -s 0 own

# ---- utimes
expect utimes.explicit_other "$EPERM" u2 touch -d 2000-01-01 own/f0666
expect utimes.now_with_write 0 u2 touch own/f0666
expect utimes.now_no_write "$EACCES" u2 touch own/f0644
expect utimes.explicit_owner 0 u1 touch -d 2000-01-01 own/f0644
check utimes.explicit_owner.year 2000 "$(date -r own/f0644 +%Y)"

# ---- symlink
expect symlink.create 0 ln -s some/where/../x sl
check symlink.readlink "some/where/../x" "$(readlink sl)"
expect symlink.in_others_dir "$EACCES" u2 ln -s x own/sl
check symlink.lstat_type "symbolic link" "$(stat -c %F sl)"
expect symlink.dangling_open "$ENOENT" cat sl
exit 0
