# rrr's soft provider against rrr's verbs provider on the kernel's
# soft-iWARP device siw0, in both roles, with the MPA CRC on and off: put and
# get with checksums (rrr-client --verify) and cmp on the server's copy. The
# Linux siw initiator sends an MPA Request without the peer-to-peer bit;
# rrr's soft responder must then send nothing before siw's first FPDU. Each
# leg is captured and decoded by Wireshark.
set -u
W=/tmp/siw-roles
. "$RRR_ROOT/tests/vm/siw-lib.sh"
EXP="$W/exp"
mkdir -p "$EXP"
head -c 3000001 /dev/urandom > "$W/src.bin"

# leg NAME "SERVER PROVIDER ARGS" "CLIENT PROVIDER ARGS"
leg() {
	local name=$1 sp=$2 cp=$3
	echo "== $name"
	rm -rf "${EXP:?}"/* "$W/back.bin"
	# shellcheck disable=SC2086
	server_start "$EXP" $sp
	capture_start "$name"
	# shellcheck disable=SC2086
	local CL=("$C" $cp --server "$ADDR" --port 20049 --mount-port 20048 --export "$EXP"
		  --no-progress)
	"${CL[@]}" --verify put "$W/src.bin" f.bin || fail "$name: put"
	cmp "$W/src.bin" "$EXP/f.bin" || fail "$name: the server's copy differs"
	"${CL[@]}" --verify --stats get f.bin "$W/back.bin" || fail "$name: get"
	cmp "$W/src.bin" "$W/back.bin" || fail "$name: read back differs"
	capture_check
	server_stop
	grep -E 'refused an|cannot set up an' "$W/server.log" && fail "$name: the server refused a connection"
	: > "$W/server.log"
}

leg soft-client-siw-server-crc "--provider verbs --provider-opts dev=$DEV" \
	"--transport rdma --provider soft --provider-opts crc=1"
leg soft-client-siw-server-nocrc "--provider verbs --provider-opts dev=$DEV" \
	"--transport rdma --provider soft --provider-opts crc=0"
leg siw-client-soft-server-crc "--provider soft --provider-opts crc=1" \
	"--transport rdma --provider verbs --provider-opts dev=$DEV"
leg siw-client-soft-server-nocrc "--provider soft --provider-opts crc=0" \
	"--transport rdma --provider verbs --provider-opts dev=$DEV"
echo "rrr soft <-> rrr verbs on siw0, both roles, CRC on and off: OK"
