#!/usr/bin/env bash
# scripts/deps-fio.sh SRC_ROOT [PKG...] - fio and fio's own source tree, for
# the fio engine (PKG...: the Debian packages it needs, default fio dpkg-dev
# libaio-dev libnuma-dev; the Makefile passes DEB_PKGS_FIO).
#
# The fio external ioengine (fio/rrr_engine.c -> BUILD/rrr-fio.so) is compiled
# against the headers of the fio that runs it: fio has no stable plugin ABI,
# struct thread_data / io_u / fio_file change between releases, and their layout
# depends on fio's configure output (config-host.h). So this script:
#   1. installs Debian's fio binary package, and the -dev packages fio's
#      configure needs to answer as Debian's build did (as root; otherwise
#      says how);
#   2. adds a deb-src entry for the same registry and suite the installed fio
#      came from (/etc/apt/sources.list.d/rrr-deb-src.list), runs apt-get update;
#   3. fetches Debian's source package of exactly that version with
#      `apt-get source fio=VERSION` into SRC_ROOT (default .deps/), which gives
#      SRC_ROOT/fio-UPSTREAM/ with Debian's patches applied;
#   4. generates config-host.h there by running fio's own ./configure the way
#      debian/rules does (see fio/fio-config.sh).
# Leaves SRC_ROOT/fio-src -> fio-UPSTREAM. It never fails the caller: when any
# step cannot be done (not root, no network, no deb-src) it prints why and
# exits 0; the Makefile then skips the engine and the fio tests skip with a
# message.
set -uo pipefail

root=${1:-.deps}
shift || true
pkgs=("$@")
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(fio dpkg-dev libaio-dev libnuma-dev)
top=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "rrr: deps-fio: $*" >&2; }
skip() {
	say "$*"
	say "the fio engine (rrr-fio.so) will not be built and its tests skip"
	exit 0
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# apt-get with a bounded wait on the dpkg/apt locks (other users of apt on the
# same machine): retry for up to 3 minutes.
apt_retry() {
	local i
	for i in $(seq 1 18); do
		if apt-get -o DPkg::Lock::Timeout=10 "$@"; then return 0; fi
		if ! pgrep -x apt-get >/dev/null && ! pgrep -x dpkg >/dev/null && ! pgrep -x apt >/dev/null; then
			return 1
		fi
		sleep 10
	done
	return 1
}

# 1. the binary and the -dev packages
missing=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
if [[ ${#missing[@]} -gt 0 ]]; then
	[[ $(id -u) -eq 0 ]] || skip "missing Debian packages; as root run: apt-get install -y ${missing[*]}"
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt_retry install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		skip "apt-get install ${missing[*]} failed"
fi
ver=$(dpkg-query -W -f='${Version}' fio)
up=${ver#*:}
up=${up%-*}
src=$root/fio-$up
if [[ -f $src/fio.h && -f $src/config-host.h && -f $src/rrr-fio-version ]]; then
	ln -sfn "fio-$up" "$root/fio-src"
	exit 0
fi

# 2. a deb-src entry matching where the installed fio came from
if [[ ! -f $src/fio.h ]]; then
	[[ $(id -u) -eq 0 ]] || skip "fio's source is not in $src; as root run: make deps-fio"
	# "  500 http://deb.debian.org/debian bookworm/main amd64 Packages" under
	# the installed version's line of apt-cache policy.
	origin=$(apt-cache policy fio | awk -v v="$ver" '
		$0 ~ "^ *(\\*\\*\\* )?" v " " { on = 1; next }
		on && $3 ~ "/" && $NF == "Packages" { print $2, $3; exit }
		on && $1 !~ /^[0-9]+$/ { on = 0 }')
	[[ -n $origin ]] || skip "could not tell which registry fio $ver came from (apt-cache policy fio)"
	uri=${origin% *}
	suite=${origin#* }
	comp=${suite#*/}
	suite=${suite%%/*}
	list=/etc/apt/sources.list.d/rrr-deb-src.list
	line="deb-src $uri $suite $comp"
	kr=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ -f $kr ]] && line="deb-src [signed-by=$kr] $uri $suite $comp"
	if ! grep -qsF "$line" "$list"; then
		say "adding '$line' to $list"
		echo "$line" >>"$list"
	fi
	if ! apt-get source --print-uris -qq "fio=$ver" 2>/dev/null | grep -q "fio_$up"; then
		say "apt-get update (for the new deb-src entry)"
		apt_retry update -qq || say "apt-get update failed; trying anyway"
	fi

	# 3. the source package of the installed version
	mkdir -p "$root"
	(cd "$root" && apt_retry source -qq "fio=$ver" >apt-source.log 2>&1) ||
		{ cat "$root/apt-source.log" >&2; skip "apt-get source fio=$ver failed"; }
	[[ -f $src/fio.h ]] || skip "apt-get source fio=$ver did not produce $src/fio.h"
fi

# 4. config-host.h, as Debian's build generated it
"$top/fio/fio-config.sh" "$src" || skip "could not generate $src/config-host.h"
ln -sfn "fio-$up" "$root/fio-src"
say "fio $ver source ready in $root/fio-src"
