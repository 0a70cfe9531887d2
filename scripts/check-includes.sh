#!/usr/bin/env bash
# scripts/check-includes.sh
#
# The include rule of docs/design.md ("Layers"), checked (run by `make
# test`, target test-includes). Every #include "..." (and #include <dir/...>
# of a project folder) in a C file or header outside tests/ is resolved as
# the compiler does (the including file's folder first, then the top of the
# tree); includes that resolve to no file of the tree (system, fio's source)
# are not ours and are skipped. The resolved path must be one the including
# folder may use:
#
#   folder                      may include (besides <rrr/...> and the system)
#   include/rrr/                nothing but <rrr/...>
#   common/                     common/
#   xdr/                        common/ xdr/
#   transport/                  common/ xdr/ transport/*.h
#   transport/soft/             common/ transport/*.h transport/soft/
#   transport/verbs/            common/ transport/*.h transport/verbs/
#   client/                     common/ xdr/oncrpc_rm.h transport/wait.h client/*.h
#   server/                     common/ xdr/oncrpc_rm.h transport/wait.h server/*.h
#   server/fs/ (rrr-server)     common/ server/fs/
#   client/cli/ (rrr-client)    common/ client/cli/
#   bench/ (rrr-bench)          common/ transport/loop_pair.h bench/
#   transport/verbs/devcheck/   common/ transport/loop_pair.h transport/verbs/*.h
#     (rrr-devcheck, the verbs    transport/verbs/devcheck/
#      provider's own tool)
#   fio/, examples/             their own folder (examples/*/ also
#                               examples/common/)
#
# Public headers have layers too, and a folder uses only the public
# headers of its layer and below (<rrr/rrr.h>, the umbrella, and the
# programs use any):
#   common   <rrr/log.h> <rrr/stats.h>
#   xdr      + <rrr/xdr.h> <rrr/oncrpc.h> <rrr/rpcrdma.h> <rrr/nfs3_xdr.h>
#   transport+ <rrr/provider.h> <rrr/reg_engine.h> <rrr/wait.h> <rrr/crc32c.h>
#   client   + <rrr/client.h> <rrr/nfs3_client.h>   (never <rrr/server.h>)
#   server   + <rrr/server.h>                      (never <rrr/client.h>)
# scripts/check-layers-nm.sh checks the same layers at link level.
#
# So nothing above transport/ sees a provider's private header
# (transport/provider_impl.h, transport/soft/, transport/verbs/), xdr/ does
# not depend on transport/, and the programs use the public API. tests/ may
# include anything (they test internals). Exit 1 with one line per crossing.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# allowed FOLDER: space-separated patterns (shell globs on the resolved path)
allowed() {
	case $1 in
	include/rrr) echo "" ;;
	common) echo "common/*" ;;
	xdr) echo "common/* xdr/*" ;;
	transport) echo "common/* xdr/* transport/*.h" ;;
	transport/soft) echo "common/* transport/*.h transport/soft/*" ;;
	transport/verbs) echo "common/* transport/*.h transport/verbs/*.h" ;;
	transport/verbs/devcheck) echo "common/* transport/loop_pair.h transport/verbs/*.h transport/verbs/devcheck/*" ;;
	client) echo "common/* xdr/oncrpc_rm.h transport/wait.h client/*.h" ;;
	server) echo "common/* xdr/oncrpc_rm.h transport/wait.h server/*.h" ;;
	server/fs) echo "common/* server/fs/*" ;;
	client/cli) echo "common/* client/cli/*" ;;
	bench) echo "common/* transport/loop_pair.h bench/*" ;;
	fio) echo "fio/*" ;;
	examples/*) echo "$1/* examples/common/*" ;;
	*) echo "UNKNOWN" ;;
	esac
}

# public_allowed FILE: the <rrr/...> headers FILE may include ("" = any).
# The public headers have the layers of their folders: a header (and a
# folder) uses only the public headers of its layer and the ones below.
L0="log.h stats.h"
L1="$L0 xdr.h oncrpc.h rpcrdma.h nfs3_xdr.h"
L2="$L1 provider.h reg_engine.h wait.h crc32c.h"
public_allowed() {
	case $1 in
	common/* | include/rrr/log.h | include/rrr/stats.h) echo "$L0" ;;
	xdr/* | include/rrr/xdr.h | include/rrr/oncrpc.h | include/rrr/rpcrdma.h | include/rrr/nfs3_xdr.h)
		echo "$L1" ;;
	transport/verbs/devcheck/*) echo "" ;;
	transport/* | include/rrr/provider.h | include/rrr/reg_engine.h | include/rrr/wait.h | include/rrr/crc32c.h)
		echo "$L2" ;;
	client/cli/* | server/fs/*) echo "" ;;
	client/* | include/rrr/client.h | include/rrr/nfs3_client.h) echo "$L2 client.h nfs3_client.h" ;;
	server/* | include/rrr/server.h) echo "$L2 server.h" ;;
	*) echo "" ;;
	esac
}

fails=0
checked=0
while IFS= read -r f; do
	dir=$(dirname "$f")
	rules=$(allowed "$dir")
	pub=$(public_allowed "$f")
	if [[ $rules == UNKNOWN ]]; then
		echo "check-includes: FAIL: $f: folder $dir has no include rule (add it to" \
		     "scripts/check-includes.sh and docs/design.md)" >&2
		fails=$((fails + 1))
		continue
	fi
	while IFS= read -r line; do
		n=${line%%:*}
		inc=${line#*:}
		if [[ $inc =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
			name=${BASH_REMATCH[1]}
			if [[ -f $dir/$name ]]; then
				path=$(realpath -m --relative-to=. "$dir/$name")
			elif [[ -f $name ]]; then
				path=$(realpath -m --relative-to=. "$name")
			else
				continue # not a file of this tree
			fi
		elif [[ -n $pub && $inc =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<rrr/([^\>]+)\> ]]; then
			name=${BASH_REMATCH[1]}
			checked=$((checked + 1))
			if [[ " $pub " != *" $name "* ]]; then
				echo "check-includes: FAIL: $f:$n includes <rrr/$name>; $f may include only" \
				     "<rrr/...> headers of its layer or below: $pub (docs/design.md, Layers)" >&2
				fails=$((fails + 1))
			fi
			continue
		elif [[ $inc =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<((common|xdr|transport|client|server|bench|fio|tests)/[^\>]+)\> ]]; then
			path=${BASH_REMATCH[1]}
		else
			continue
		fi
		checked=$((checked + 1))
		ok=0
		for pat in $rules; do
			# a glob's * stands for one path component: same depth as the pattern
			slashes_pat=${pat//[^\/]/}
			slashes_path=${path//[^\/]/}
			# shellcheck disable=SC2053 # glob match on purpose
			if [[ $path == $pat && ${#slashes_pat} == "${#slashes_path}" ]]; then
				ok=1
				break
			fi
		done
		if [[ $ok == 0 ]]; then
			echo "check-includes: FAIL: $f:$n includes $path; $dir/ may include only" \
			     "<rrr/...>${rules:+ and $rules} (docs/design.md, Layers)" >&2
			fails=$((fails + 1))
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" || true)
done < <(git ls-files -co --exclude-standard -- '*.c' '*.h' | grep -v '^tests/' | sort)

if [[ $fails -gt 0 ]]; then
	echo "check-includes: $fails include(s) cross the layer rule" >&2
	exit 1
fi
echo "check-includes: OK ($checked project includes follow the layer rule)"
