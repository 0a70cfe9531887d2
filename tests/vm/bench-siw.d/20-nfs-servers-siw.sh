# vm-timeout: 1500
# The Linux kernel NFSv3/RDMA client over the kernel's soft-iWARP (siw0)
# against rrr-server on the soft provider (user-space iWARP over the same
# loopback TCP) and against the kernel's nfsd on siw0, side by side in one
# VM run: the servers take turns per round, fio libaio direct, sequential
# write and read at 1 MiB and 4 KiB, QD1 and QD16; MB/s, IOPS and the ratio
# rrr/knfsd in $RRR_VM_RESULTS/vm-nfs-servers-siw.{txt,json}. A benchmark:
# it reports, it does not judge. Every knob of bench.d/20-nfs-servers.sh
# applies (RRR_VM_BENCH_ROUNDS, _SECONDS, ...).
export RRR_VM_BENCH_SERVER_PROVIDER=soft
export RRR_VM_BENCH_NAME=vm-nfs-servers-siw
export RRR_VM_BENCH_RAND=${RRR_VM_BENCH_RAND:-0}
export RRR_VM_BENCH_IO=0 # rrr-bench io over siw0: the rxe run covers rrr's own client
exec bash "$RRR_ROOT/tests/vm/bench.d/20-nfs-servers.sh"
