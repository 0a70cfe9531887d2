# The Soft-RoCE device exists and libibverbs (rdma-core, from the host) sees it.
set -e
ibv_devinfo -d "$RRR_VERBS_DEV" -v | grep -E 'transport|state|max_mw|device_cap|GID\[ *1\]' 
ibv_devinfo -d "$RRR_VERBS_DEV" | grep -q PORT_ACTIVE
