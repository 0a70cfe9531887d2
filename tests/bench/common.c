/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/common.c - the helpers every rrr-bench figure goes
 * through: order statistics, size parsing, the reproducing command line,
 * the JSON writer (byte-exact), and the TCP baseline (counts and bounds).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_common.h"

Test(bench_samples, nearest_rank_quantiles)
{
	struct rrr__bench_samples s;

	cr_assert_eq(rrr__bench_samples_init(&s, 0), 0);
	cr_assert_eq(rrr__bench_samples_median(&s), 0); /* empty */
	/* added in reverse to check sorting; 1..100 */
	for (int i = 100; i >= 1; i--)
		cr_assert_eq(rrr__bench_samples_add(&s, i), 0);
	cr_assert_eq(s.n, 100);
	cr_assert_eq(rrr__bench_samples_median(&s), 50);
	cr_assert_eq(rrr__bench_samples_p99(&s), 99);
	cr_assert_eq(rrr__bench_samples_min(&s), 1);
	cr_assert_eq(rrr__bench_samples_quantile(&s, 1.0), 100);
	cr_assert_float_eq(rrr__bench_samples_mean(&s), 50.5, 1e-9);
	/* adding after sorting re-sorts */
	cr_assert_eq(rrr__bench_samples_add(&s, 0.5), 0);
	cr_assert_eq(rrr__bench_samples_min(&s), 0.5);
	rrr__bench_samples_free(&s);
}

Test(bench_samples, merge_and_growth)
{
	struct rrr__bench_samples a, b;

	rrr__bench_samples_init(&a, 1);
	rrr__bench_samples_init(&b, 0);
	for (int i = 0; i < 5000; i++)
		cr_assert_eq(rrr__bench_samples_add(&b, i), 0);
	cr_assert_eq(rrr__bench_samples_merge(&a, &b), 0);
	cr_assert_eq(a.n, 5000);
	cr_assert_eq(rrr__bench_samples_quantile(&a, 0.5), 2499);
	rrr__bench_samples_free(&a);
	rrr__bench_samples_free(&b);
}

Test(bench_opts, sizes)
{
	uint64_t v, l[8];

	cr_assert_eq(rrr__bench_parse_size("4096", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(rrr__bench_parse_size("4k", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(rrr__bench_parse_size("1M", &v), 0);
	cr_assert_eq(v, 1u << 20);
	cr_assert_eq(rrr__bench_parse_size("1MiB", &v), 0);
	cr_assert_eq(v, 1u << 20);
	cr_assert_eq(rrr__bench_parse_size("", &v), -EINVAL);
	cr_assert_eq(rrr__bench_parse_size("-1", &v), -EINVAL);
	cr_assert_eq(rrr__bench_parse_size("4x", &v), -EINVAL);
	cr_assert_eq(rrr__bench_parse_size("k", &v), -EINVAL);
	cr_assert_eq(rrr__bench_parse_size("17179869184g", &v), -ERANGE);
	cr_assert_eq(rrr__bench_parse_sizes("4k,64k,1m", l, 8), 3);
	cr_assert(l[0] == 4096 && l[1] == 65536 && l[2] == 1048576);
	cr_assert_eq(rrr__bench_parse_sizes("4k,zz", l, 8), -EINVAL);
	cr_assert_eq(rrr__bench_parse_sizes("1,2,3,4", l, 2), 2); /* bounded by max */

	char b[16];
	cr_assert_str_eq(rrr__bench_fmt_size(4096, b, sizeof(b)), "4k");
	cr_assert_str_eq(rrr__bench_fmt_size(1u << 20, b, sizeof(b)), "1m");
	cr_assert_str_eq(rrr__bench_fmt_size(1536, b, sizeof(b)), "1536");
}

Test(bench_run, command_line_is_shell_quoted)
{
	char *argv[] = {"io", "--sizes", "4k,1m", "--provider-opts", "a b", "it's"};
	char buf[256];

	cr_assert_str_eq(rrr__bench_cmdline(6, argv, buf, sizeof(buf)),
			 "rrr-bench io --sizes 4k,1m --provider-opts 'a b' 'it'\\''s'");
	/* truncation never overflows */
	cr_assert_eq(strlen(rrr__bench_cmdline(6, argv, buf, 12)) < 12, true);
}

Test(bench_json, writer_output_is_exact)
{
	char path[] = "/tmp/rrr-bench-json-XXXXXX", got[512];
	struct rrr__bench_json j;
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(rrr__bench_json_open(&j, path), 0);
	rrr__bench_json_obj_begin(&j, NULL);
	rrr__bench_json_str(&j, "s", "a\"b\\c\n");
	rrr__bench_json_int(&j, "i", -3);
	rrr__bench_json_num(&j, "x", 1.5);
	rrr__bench_json_num(&j, "nan", 0.0 / 0.0);
	rrr__bench_json_arr_begin(&j, "a");
	rrr__bench_json_bool(&j, NULL, true);
	rrr__bench_json_obj_begin(&j, NULL);
	rrr__bench_json_obj_end(&j);
	rrr__bench_json_arr_end(&j);
	rrr__bench_json_obj_end(&j);
	cr_assert_eq(rrr__bench_json_close(&j), 0);
	f = fopen(path, "r");
	n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	unlink(path);
	got[n] = '\0';
	cr_assert_str_eq(got, "{\n"
			      "  \"s\": \"a\\\"b\\\\c\\n\",\n"
			      "  \"i\": -3,\n"
			      "  \"x\": 1.5,\n"
			      "  \"nan\": null,\n"
			      "  \"a\": [\n"
			      "    true,\n"
			      "    {}\n"
			      "  ]\n"
			      "}\n");
}

Test(bench_json, unbalanced_is_an_error)
{
	struct rrr__bench_json j;

	cr_assert_eq(rrr__bench_json_open(&j, "/dev/null"), 0);
	rrr__bench_json_obj_begin(&j, NULL);
	cr_assert_eq(rrr__bench_json_close(&j), -EINVAL);
	cr_assert_eq(rrr__bench_json_open(&j, "/nonexistent-dir/x.json"), -ENOENT);
}

Test(bench_tcp, echo_counts_every_operation, .timeout = 30)
{
	struct rrr__bench_tcp_opts o = {
	    .size = 65536,
	    .small = 128,
	    .qd = 4,
	    .write = false,
	    .max_ops = 300,
	    .warmup_ops = 20,
	};
	struct rrr__bench_tcp_result r;

	cr_assert_eq(rrr__bench_tcp_echo(&o, &r), 0);
	cr_assert_eq(r.ops, 300);
	cr_assert_eq(r.lat_ns.n, 300);
	cr_assert(r.wall_s > 0);
	cr_assert(r.cpu_ns_per_op > 0);
	cr_assert(rrr__bench_samples_min(&r.lat_ns) > 0);
	rrr__bench_samples_free(&r.lat_ns);

	o.write = true;
	o.qd = 1;
	o.max_ops = 50;
	o.warmup_ops = 0;
	cr_assert_eq(rrr__bench_tcp_echo(&o, &r), 0);
	cr_assert_eq(r.ops, 50);
	rrr__bench_samples_free(&r.lat_ns);

	o.size = 128u << 20; /* beyond the echo's bound: refused before any I/O */
	cr_assert_eq(rrr__bench_tcp_echo(&o, &r), -E2BIG);
}

Test(bench_tcp, echo_stops_at_the_deadline, .timeout = 30)
{
	struct rrr__bench_tcp_opts o = {.size = 4096, .small = 128, .qd = 8, .seconds = 0.2};
	struct rrr__bench_tcp_result r;

	cr_assert_eq(rrr__bench_tcp_echo(&o, &r), 0);
	cr_assert(r.ops > 0);
	cr_assert(r.wall_s >= 0.2 && r.wall_s < 5, "wall %f", r.wall_s);
	rrr__bench_samples_free(&r.lat_ns);
}
