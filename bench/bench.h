/* SPDX-License-Identifier: MIT */
/* bench/bench.h - rrr-bench subcommands (one file each). */
#ifndef RRR_BENCH_H
#define RRR_BENCH_H

/* Each returns a process exit status: 0 ok, 1 failure, 2 usage. */
int rrr__bench_raw_main(int argc, char **argv); /* bench/raw.c: provider WRITE/READ/SEND vs TCP */
int rrr__bench_reg_main(int argc, char **argv); /* bench/bench_reg.c: per-I/O registration cost */
int rrr__bench_io_main(int argc, char **argv);  /* bench/io.c: end-to-end NFSv3 I/O */
int rrr__bench_crc_main(int argc, char **argv); /* bench/crc.c: CRC32C vs memcpy GB/s */
int rrr__bench_soak_main(int argc, char **argv); /* bench/soak.c: faults, restart, verify */
int rrr__bench_scale_main(int argc, char **argv); /* bench/scale.c: N connections, one server */

#endif
