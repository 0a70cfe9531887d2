/* SPDX-License-Identifier: MIT */
/*
 * bench/main.c - rrr-bench: dispatch to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{"raw", rrr__bench_raw_main, "provider RDMA WRITE/READ bandwidth and SEND latency vs plain TCP"},
	{"reg", rrr__bench_reg_main, "per-I/O registration + invalidation cost per strategy"},
	{"io", rrr__bench_io_main, "end-to-end NFSv3 READ/WRITE: per-I/O vs persistent vs bounce vs TCP"},
	{"crc", rrr__bench_crc_main, "CRC32C (rrr_crc32c) GB/s beside memcpy of the same bytes"},
	{"soak", rrr__bench_soak_main, "N clients x QD write/verify files through drops and a server restart"},
	{"scale", rrr__bench_scale_main, "one server, 1 .. 4096 client connections: IOPS, p99, RSS per connection"},
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: rrr-bench <command> [options]   (rrr-bench <command> --help)\n\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-5s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "rrr-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
