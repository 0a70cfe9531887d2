#!/usr/bin/env bash
# fio/fio-config.sh FIO_SRC - generate FIO_SRC/config-host.h the way Debian's
# build did (debian/rules: ./configure --disable-native --prefix=/usr ...),
# then check the result against the installed fio binary.
#
# The engine includes fio.h, whose structs (thread_data, io_u) change layout
# with configure's answers: CONFIG_LIBAIO, CONFIG_POSIXAIO, CONFIG_RDMA add
# members to io_u's engine union, CONFIG_LIBNUMA and CONFIG_CUDA to
# thread_data (debian/rules' --enable-gfio --enable-libnbd change none of
# the structs the engine touches, so they are left out). configure answers from the -dev packages installed here, so
# each of those must say what the installed /usr/bin/fio was built with:
# its I/O engine list (fio --enghelp) and its libraries (ldd). A mismatch
# fails with the package to install. Also writes FIO_SRC/rrr-fio-version
# (the version string fio's headers are from, e.g. fio-3.33).
set -euo pipefail
src=${1:?usage: fio-config.sh FIO_SRC}
fio=${FIO:-$(command -v fio || true)}
cd "$src"
if [[ ! -f config-host.h ]]; then
	./configure --disable-native --prefix=/usr >configure.log 2>&1 ||
		{ tail -n 20 configure.log >&2; echo "fio-config: fio's ./configure failed" >&2; exit 1; }
fi
ver=$(sed -n 's/^DEF_VER=//p' FIO-VERSION-GEN)
[[ -n $ver ]] || { echo "fio-config: no DEF_VER in $src/FIO-VERSION-GEN" >&2; exit 1; }
if [[ -n $fio ]]; then
	engines=$("$fio" --enghelp 2>/dev/null || true)
	libs=$(ldd "$fio" 2>/dev/null || true)
	bad=0
	check() { # CONFIG_X has-it-in-binary(0/1) package
		local have=0
		grep -q "^#define $1\$" config-host.h && have=1
		if [[ $have != "$2" ]]; then
			echo "fio-config: $fio was built with$([[ $2 == 1 ]] || echo out) $1, this config-host.h has it $([[ $have == 1 ]] && echo on || echo off); install $3 and run make deps-fio again (rm $src/config-host.h)" >&2
			bad=1
		fi
	}
	grep -qx $'\tlibaio' <<<"$engines" && a=1 || a=0
	check CONFIG_LIBAIO $a libaio-dev
	grep -qx $'\tposixaio' <<<"$engines" && a=1 || a=0
	check CONFIG_POSIXAIO $a libc6-dev
	grep -qx $'\trdma' <<<"$engines" && a=1 || a=0
	check CONFIG_RDMA $a "librdmacm-dev libibverbs-dev"
	grep -q libnuma <<<"$libs" && a=1 || a=0
	check CONFIG_LIBNUMA $a libnuma-dev
	grep -q libcuda <<<"$libs" && a=1 || a=0
	check CONFIG_CUDA $a "(CUDA)"
	if [[ $bad == 1 ]]; then rm -f config-host.h; exit 1; fi
	run=$("$fio" --version)
	[[ $run == "$ver" ]] || echo "fio-config: warning: installed fio says $run, the source is $ver" >&2
fi
echo "$ver" >rrr-fio-version
