#!/bin/sh
# scripts/deps.sh PKG... - install the Debian packages that are missing.
# As root: apt-get installs them. Otherwise: print the exact command, fail.
set -e
missing=""
for p in "$@"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "rrr: missing Debian packages:$missing" >&2
	echo "rrr: run as root:  apt-get install -y$missing" >&2
	exit 1
fi
echo "rrr: installing missing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "rrr: apt-get update failed; trying the install anyway" >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
