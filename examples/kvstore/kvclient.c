/* SPDX-License-Identifier: MIT */
/*
 * kvclient.c - the kvstore example client.
 *
 *   kvclient [--transport rdma|tcp] [--provider soft|verbs] --host H --port P CMD
 *     CMD: put KEY VALUE | get KEY | del KEY | selftest N
 *
 * "selftest N" stores N values of assorted sizes (0 bytes to 1 MiB, odd
 * lengths included, so the XDR pad is exercised), reads each back and
 * compares, deletes half and checks they are gone, then prints the
 * connection counters. Exit status: 0 success, 1 failure, 2 usage.
 *
 * A value goes to the server as a DDP payload (RRR_DDP_TO_SERVER: on RDMA
 * the library registers it and the server pulls it with RDMA READ) and
 * comes back into a caller-provided sink (RRR_DDP_FROM_SERVER: the server
 * RDMA WRITEs into it). Over TCP the same calls simply copy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/rrr.h>

#include "../common/example_clnt.h"
#include "kv.h"

struct put_args {
	const char *key;
	struct iovec val;
};

struct key_args {
	const char *key;
};

struct get_res {
	uint32_t stat;
	uint32_t len;
};

static int enc_put(struct rrr_xdr *x, const void *a)
{
	const struct put_args *p = a;
	int rc = rrr_xdr_put_string(x, p->key);

	/* the value is call.payload: declared there, placed here */
	return rc ? rc : rrr_xdr_encode_payload(x, NULL, 0, 0);
}

static int enc_key(struct rrr_xdr *x, const void *a)
{
	return rrr_xdr_put_string(x, ((const struct key_args *)a)->key);
}

static int dec_stat(struct rrr_xdr *x, void *r)
{
	return rrr_xdr_get_enum(x, KV_NOSPC, r);
}

static int dec_get(struct rrr_xdr *x, void *r)
{
	struct get_res *g = r;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = 0;
	int rc = rrr_xdr_get_enum(x, KV_NOSPC, &g->stat);

	if (rc || g->stat != KV_OK)
		return rc;
	/* the library has placed the bytes in the call's sink already */
	return rrr_xdr_decode_payload(x, KV_MAX_VALUE, &g->len, iov, &niov);
}

/* Call KV procedure @proc: @args encoded by @enc, results decoded by @dec
 * into @res; @payload (NULL: none) is the DDP item, moved as @ddp says. */
static int kv_call(struct rrr_clnt *c, uint32_t proc, rrr_xdr_encode_fn enc, const void *args,
		   rrr_xdr_decode_fn dec, void *res, enum rrr_ddp_dir ddp,
		   const struct iovec *payload)
{
	struct rrr_call call = {
	    .prog = KV_PROG, .vers = KV_VERS, .proc = proc, .encode = enc, .args = args,
	    .decode = dec, .res = res, .ddp = ddp, .payload = payload, .npayload = payload ? 1 : 0,
	};

	return rrr_clnt_call(c, &call);
}

static int kv_put(struct rrr_clnt *c, const char *key, const void *val, uint32_t len,
		  uint32_t *stat)
{
	struct put_args a = {key, {(void *)val, len}};

	return kv_call(c, KV_PUT, enc_put, &a, dec_stat, stat, RRR_DDP_TO_SERVER, &a.val);
}

static int kv_get(struct rrr_clnt *c, const char *key, void *sink, uint32_t cap,
		  struct get_res *res)
{
	struct key_args a = {key};
	struct iovec iov = {sink, cap};

	memset(res, 0, sizeof(*res));
	return kv_call(c, KV_GET, enc_key, &a, dec_get, res, RRR_DDP_FROM_SERVER, &iov);
}

static int kv_del(struct rrr_clnt *c, const char *key, uint32_t *stat)
{
	struct key_args a = {key};

	return kv_call(c, KV_DEL, enc_key, &a, dec_stat, stat, RRR_DDP_NONE, NULL);
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "kvclient: %s: %s (%s)\n", what, strerror(-rc),
		rrr_last_error() ? rrr_last_error() : "no detail");
	return 1;
}

static int selftest(struct rrr_clnt *c, unsigned n)
{
	static const uint32_t sizes[] = {0, 1, 3, 4096, 4099, 65541, 300001, KV_MAX_VALUE};
	const unsigned nsizes = sizeof(sizes) / sizeof(sizes[0]);
	uint8_t *val = malloc(KV_MAX_VALUE), *sink = malloc(KV_MAX_VALUE);
	unsigned long long bytes = 0;
	char key[32];
	unsigned i;
	uint32_t k;
	int rc;

	if (!val || !sink)
		return fail("selftest", -ENOMEM);
	for (i = 0; i < n; i++) {
		uint32_t len = sizes[i % nsizes], stat;

		for (k = 0; k < len; k++)
			val[k] = (uint8_t)(k * 31 + i);
		snprintf(key, sizeof(key), "key-%u", i);
		rc = kv_put(c, key, val, len, &stat);
		if (rc || stat != KV_OK)
			return fail("put", rc ? rc : -EIO);
		bytes += len;
	}
	for (i = 0; i < n; i++) {
		uint32_t len = sizes[i % nsizes];
		struct get_res g;

		snprintf(key, sizeof(key), "key-%u", i);
		memset(sink, 0xee, KV_MAX_VALUE);
		rc = kv_get(c, key, sink, KV_MAX_VALUE, &g);
		if (rc || g.stat != KV_OK || g.len != len)
			return fail("get", rc ? rc : -EIO);
		for (k = 0; k < len; k++)
			if (sink[k] != (uint8_t)(k * 31 + i))
				return fail("get: value differs", -EIO);
		bytes += len;
	}
	for (i = 0; i < n; i += 2) {
		struct get_res g;
		uint32_t stat;

		snprintf(key, sizeof(key), "key-%u", i);
		rc = kv_del(c, key, &stat);
		if (rc || stat != KV_OK)
			return fail("del", rc ? rc : -EIO);
		rc = kv_get(c, key, sink, KV_MAX_VALUE, &g);
		if (rc || g.stat != KV_NOENT)
			return fail("get after del", rc ? rc : -EIO);
	}
	printf("kvclient: selftest ok: %u values, %llu bytes moved\n", n, bytes);
	free(val);
	free(sink);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: kvclient [--transport rdma|tcp] [--provider soft|verbs]\n"
			"                --host H --port P put KEY VALUE | get KEY | del KEY |"
			" selftest N\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {EX_CLNT_LONGOPTS};
	struct rrr_clnt_opts o;
	struct rrr_clnt *c;
	int ch, rc, status = 0;

	rrr_clnt_opts_init(&o);
	o.timeout_ms = 10000;
	ch = ex_clnt_getopt(argc, argv, lo, &o);
	if (ch != -1) {
		usage();
		return ch == 'h' ? 0 : 2;
	}
	if (!o.host || optind >= argc) {
		usage();
		return 2;
	}
	rc = rrr_clnt_create(&o, &c);
	if (rc)
		return fail("connect", rc);

	if (!strcmp(argv[optind], "put") && optind + 2 < argc) {
		uint32_t stat;

		rc = kv_put(c, argv[optind + 1], argv[optind + 2],
			    (uint32_t)strlen(argv[optind + 2]), &stat);
		status = rc ? fail("put", rc) : stat != KV_OK;
	} else if (!strcmp(argv[optind], "get") && optind + 1 < argc) {
		static uint8_t sink[KV_MAX_VALUE];
		struct get_res g;

		rc = kv_get(c, argv[optind + 1], sink, sizeof(sink), &g);
		if (rc)
			status = fail("get", rc);
		else if (g.stat != KV_OK)
			status = 1;
		else
			fwrite(sink, 1, g.len, stdout);
	} else if (!strcmp(argv[optind], "del") && optind + 1 < argc) {
		uint32_t stat;

		rc = kv_del(c, argv[optind + 1], &stat);
		status = rc ? fail("del", rc) : stat != KV_OK;
	} else if (!strcmp(argv[optind], "selftest") && optind + 1 < argc) {
		status = selftest(c, (unsigned)atoi(argv[optind + 1]));
		ex_clnt_print_stats("kvclient", c);
	} else {
		usage();
		status = 2;
	}
	rrr_clnt_destroy(c);
	return status;
}
