/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/place.c - zero-copy arguments (rrr_svc_set_place): a WRITE's
 * data is pulled by RDMA READ straight into the memory the server's place
 * function chose (two pieces of a 1 MiB "disk", split at an odd offset),
 * the handler finds it there, the memory was registered for the I/O and
 * invalidated before the handler ran, and the release callback runs once
 * per call with status 0. A place function that declines, or returns
 * memory that does not add up, leaves the data in library memory (the
 * latter's release runs at once with -EINVAL); inline calls and TCP never
 * call it; the data is right in every case. The server runs in a forked
 * process over the soft provider (both registration models).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/server.h>

#include "helpers/calls.h"

#define PL_PROG 0x20000097u
enum { PL_NULL, PL_WRITE, PL_STAT };
enum { MODE_PLACE, MODE_DECLINE, MODE_SHORT };

/* --- server process ------------------------------------------------------- */

static struct rrr_svc *child_svc;
static uint8_t disk[1u << 20];
static atomic_uint places, placed_seen, released_ok, released_err, last_err;

static void pl_release(void *arg, int status)
{
	(void)arg;
	if (status == 0) {
		atomic_fetch_add(&released_ok, 1);
	} else {
		atomic_fetch_add(&released_err, 1);
		atomic_store(&last_err, (unsigned)-status);
	}
}

/* args: offset, mode, then the payload (its length word ends @args) */
static int pl_place(struct rrr_svc_req *r, struct rrr_xdr *a, uint32_t len,
		    struct rrr_svc_place *out)
{
	uint32_t off, mode, half;

	(void)r;
	if (rrr_xdr_get_u32(a, &off) || rrr_xdr_get_u32(a, &mode) || off > sizeof(disk) ||
	    len > sizeof(disk) - off)
		return -ERANGE;
	if (mode == MODE_DECLINE)
		return -EBUSY;
	atomic_fetch_add(&places, 1);
	half = len / 3 + 1; /* an odd split, contiguous: merged into one registration */
	out->iov[0] = (struct iovec){disk + off, half};
	out->iov[1] = (struct iovec){disk + off + half, len - half};
	out->niov = 2;
	if (mode == MODE_SHORT)
		out->iov[1].iov_len--;
	out->release = pl_release;
	return 0;
}

/* args: offset, mode, payload; result: placed (0/1), the disk's byte sum
 * over the payload's range */
static int h_write(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	uint32_t off, mode, len, placed;
	unsigned niov = 0;
	uint8_t *p;

	(void)r;
	if (rrr_xdr_get_u32(a, &off) || rrr_xdr_get_u32(a, &mode) ||
	    rrr_xdr_decode_payload(a, 1u << 20, &len, iov, &niov) || off > sizeof(disk) ||
	    len > sizeof(disk) - off)
		return RRR_SVC_GARBAGE_ARGS;
	placed = niov && iov[0].iov_base == disk + off;
	if (placed) {
		atomic_fetch_add(&placed_seen, 1);
	} else {
		p = disk + off;
		for (unsigned i = 0; i < niov; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
	}
	return rrr_xdr_put_u32(s, placed) || rrr_xdr_put_u32(s, tc_iov_sum(&(struct iovec){
								     disk + off, len}, 1))
		   ? RRR_SVC_SYSTEM_ERR
		   : 0;
}

/* result: places, placed_seen, released ok, released with an error, the
 * last error, the server's registrations and LOCAL_INVs */
static int h_stat(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct rrr_xprt_stats st;
	uint32_t w[7];

	(void)r;
	(void)a;
	rrr_svc_stats(child_svc, &st);
	w[0] = atomic_load(&places);
	w[1] = atomic_load(&placed_seen);
	w[2] = atomic_load(&released_ok);
	w[3] = atomic_load(&released_err);
	w[4] = atomic_load(&last_err);
	w[5] = (uint32_t)st.registrations;
	w[6] = (uint32_t)st.local_inv;
	for (int i = 0; i < 7; i++)
		if (rrr_xdr_put_u32(s, w[i]))
			return -EIO;
	return 0;
}

static const struct rrr_svc_proc procs[] = {
    [PL_NULL] = {"null", tc_h_null},
    [PL_WRITE] = {"write", h_write},
    [PL_STAT] = {"stat", h_stat},
};

static void child_main(int wfd, const void *arg)
{
	struct rrr_svc_program prog = {PL_PROG, 1, procs, sizeof(procs) / sizeof(procs[0]), NULL};
	struct rrr_svc_opts o;

	(void)arg;
	rrr_svc_opts_init(&o);
	o.nthreads = 1;
	child_svc = tc_child_svc(&o, &prog);
	if (rrr_svc_set_place(child_svc, PL_PROG, 1, PL_WRITE, pl_place))
		tc_child_fail();
	tc_child_serve_both(child_svc, wfd);
}

/* --- client side ---------------------------------------------------------- */

static pid_t child;
static uint16_t ports[2];
static struct rrr_clnt *clnt;

static void start(const char *transport, const char *provider_opts)
{
	child = tc_fork_server(child_main, NULL, ports, sizeof(ports));
	tc_connect(&clnt, transport, ports, provider_opts);
}

static void init_rdma(void)
{
	start("rdma", NULL);
}

static void init_page_list(void)
{
	start("rdma", "map_model=page_list");
}

static void init_tcp(void)
{
	start("tcp", NULL);
}

static void stop_all(void)
{
	tc_disconnect_stop(&clnt, &child);
}

TestSuite(place, .fini = stop_all, .timeout = 60);

static int enc_write(struct rrr_xdr *x, const void *a)
{
	const uint32_t *v = a;

	return rrr_xdr_put_u32(x, v[0]) || rrr_xdr_put_u32(x, v[1]) ||
		       rrr_xdr_encode_payload(x, NULL, 0, 0)
		   ? -EMSGSIZE
		   : 0;
}

static int dec_words(struct rrr_xdr *x, void *r, int n)
{
	uint32_t *w = r;

	for (int i = 0; i < n; i++)
		if (rrr_xdr_get_u32(x, &w[i]))
			return -EBADMSG;
	return 0;
}

static int dec_2(struct rrr_xdr *x, void *r)
{
	return dec_words(x, r, 2);
}

static int dec_7(struct rrr_xdr *x, void *r)
{
	return dec_words(x, r, 7);
}

/* WRITE @len bytes (seeded by @seed) at @off with @mode; asserts the
 * server's sum over the range and returns whether the data was placed. */
static uint32_t write_one(uint32_t off, uint32_t len, uint32_t mode, uint8_t seed)
{
	uint8_t *buf = malloc(len);
	struct iovec iov = {buf, len};
	uint32_t args[2] = {off, mode}, res[2];
	struct rrr_call c;

	cr_assert_not_null(buf);
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 13 + seed);
	tc_call_init(&c, PL_PROG, PL_WRITE);
	tc_codec(&c, enc_write, args, dec_2, res);
	tc_payload(&c, RRR_DDP_TO_SERVER, &iov, 1);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "write %u at %u: %s", len, off, c.error);
	cr_assert_eq(res[1], tc_iov_sum(&iov, 1), "the data of %u bytes at %u reached the disk",
		     len, off);
	free(buf);
	return res[0];
}

static void stat_now(uint32_t w[7])
{
	struct rrr_call c;

	tc_call_init(&c, PL_PROG, PL_STAT);
	tc_codec(&c, NULL, NULL, dec_7, w);
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "%s", c.error);
}

static void placed_case(void)
{
	static const uint32_t sizes[] = {9000, 100000, 1u << 19, (1u << 20) - 8};
	uint32_t w[7];

	for (unsigned t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		uint32_t off = sizes[t] > 1000000 ? 8 : 1004;

		cr_assert_eq(write_one(off, sizes[t], MODE_PLACE, (uint8_t)t), 1,
			     "%u bytes landed in the place function's memory", sizes[t]);
	}
	stat_now(w);
	cr_assert_eq(w[0], 4, "placed four times");
	cr_assert_eq(w[1], 4, "the handler found the data in place four times");
	cr_assert_eq(w[2], 4, "released once per call, status 0");
	cr_assert_eq(w[3], 0);
	cr_assert_geq(w[5], 4, "registered for each call (%u)", w[5]);
	cr_assert_eq(w[6], w[5], "every registration invalidated");
}

Test(place, write_data_lands_in_application_memory, .init = init_rdma)
{
	placed_case();
}

Test(place, write_data_lands_in_application_memory_page_list, .init = init_page_list)
{
	placed_case();
}

Test(place, declined_or_bad_memory_takes_the_library_buffer, .init = init_rdma)
{
	uint32_t w[7];

	cr_assert_eq(write_one(4096, 200000, MODE_DECLINE, 1), 0, "declined: library memory");
	cr_assert_eq(write_one(8192, 200000, MODE_SHORT, 2), 0, "short iov: library memory");
	cr_assert_eq(write_one(0, 200000, MODE_PLACE, 3), 1, "and the next one is placed");
	stat_now(w);
	cr_assert_eq(w[1], 1);
	cr_assert_eq(w[2], 1, "the placed one released with 0");
	cr_assert_eq(w[3], 1, "the short one released at once with an error");
	cr_assert_eq(w[4], EINVAL);
}

Test(place, inline_calls_are_not_placed, .init = init_rdma)
{
	uint32_t w[7];

	cr_assert_eq(write_one(100, 512, MODE_PLACE, 4), 0, "inline: in the receive buffer");
	stat_now(w);
	cr_assert_eq(w[0], 0, "the place function was not called");
}

Test(place, tcp_never_places, .init = init_tcp)
{
	uint32_t w[7];

	cr_assert_eq(write_one(4096, 300000, MODE_PLACE, 5), 0, "TCP: in the record");
	stat_now(w);
	cr_assert_eq(w[0], 0, "the place function was not called");
	cr_assert_eq(w[2] + w[3], 0);
}
