/* SPDX-License-Identifier: MIT */
/*
 * kvserver.c - the kvstore example server.
 *
 *   kvserver [--host ADDR] [--rdma-port P] [--tcp-port P] [--provider soft|verbs]
 *            [--threads N] [--max-keys N]
 *
 * Serves the KV program over RPC-over-RDMA and over TCP at once (port 0 =
 * ephemeral; the bound ports are printed as "kvserver: rdma port N tcp port
 * N"). SIGINT/SIGTERM stop it gracefully; it prints its counters on exit.
 *
 * Handlers run on the library's worker threads, several at once, so the
 * table has a mutex. Values returned by GET are copied into request memory
 * (rrr_svc_req_alloc) under the lock, because the library sends them after
 * the handler returns - by then another thread may have replaced the key.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rrr/rrr.h>

#include "../common/example_svc.h"
#include "kv.h"

struct entry {
	char key[KV_MAX_KEY + 1];
	uint8_t *val;
	uint32_t len;
	struct entry *next;
};

struct table {
	pthread_mutex_t lock;
	struct entry *head;
	unsigned n, max;
};

static struct entry **find(struct table *t, const char *key)
{
	struct entry **e;

	for (e = &t->head; *e; e = &(*e)->next)
		if (!strcmp((*e)->key, key))
			return e;
	return NULL;
}

static int kv_put(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct table *t = rrr_svc_req_program_ctx(req);
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	char key[KV_MAX_KEY + 1];
	unsigned niov = 0, i;
	uint32_t len, stat = KV_OK, off = 0;
	struct entry **pe, *e;
	uint8_t *val;

	/* the value arrives pulled by RDMA READ (read chunk) or inline: the
	 * handler cannot tell, and need not */
	if (rrr_xdr_get_string(args, key, KV_MAX_KEY) ||
	    rrr_xdr_decode_payload(args, KV_MAX_VALUE, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	val = malloc(len ? len : 1);
	if (!val)
		return RRR_SVC_SYSTEM_ERR;
	for (i = 0; i < niov; i++) {
		if (iov[i].iov_len > len - off) {
			free(val);
			return RRR_SVC_GARBAGE_ARGS;
		}
		memcpy(val + off, iov[i].iov_base, iov[i].iov_len);
		off += (uint32_t)iov[i].iov_len;
	}
	pthread_mutex_lock(&t->lock);
	pe = find(t, key);
	if (pe) {
		free((*pe)->val);
		(*pe)->val = val;
		(*pe)->len = len;
	} else if (t->n >= t->max || !(e = calloc(1, sizeof(*e)))) {
		stat = KV_NOSPC;
		free(val);
	} else {
		strcpy(e->key, key);
		e->val = val;
		e->len = len;
		e->next = t->head;
		t->head = e;
		t->n++;
	}
	pthread_mutex_unlock(&t->lock);
	return rrr_xdr_put_enum(res, stat);
}

static int kv_get(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct table *t = rrr_svc_req_program_ctx(req);
	char key[KV_MAX_KEY + 1];
	struct entry **pe;
	struct iovec iov;
	uint8_t *copy = NULL;
	uint32_t len = 0, stat = KV_OK;
	int rc;

	if (rrr_xdr_get_string(args, key, KV_MAX_KEY))
		return RRR_SVC_GARBAGE_ARGS;
	pthread_mutex_lock(&t->lock);
	pe = find(t, key);
	if (!pe) {
		stat = KV_NOENT;
	} else if ((*pe)->len > rrr_svc_req_max_payload(req)) {
		stat = KV_TOOBIG; /* the client's sink (write chunk) is too small */
	} else {
		len = (*pe)->len;
		copy = rrr_svc_req_alloc(req, len); /* freed after the reply is sent */
		if (copy)
			memcpy(copy, (*pe)->val, len);
	}
	pthread_mutex_unlock(&t->lock);
	if (stat == KV_OK && !copy)
		return RRR_SVC_SYSTEM_ERR;
	rc = rrr_xdr_put_enum(res, stat);
	if (rc || stat != KV_OK)
		return rc;
	iov.iov_base = copy;
	iov.iov_len = len;
	/* on RDMA the library pushes this into the client's write chunk */
	return rrr_xdr_encode_payload(res, &iov, 1, len);
}

static int kv_del(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	struct table *t = rrr_svc_req_program_ctx(req);
	char key[KV_MAX_KEY + 1];
	struct entry **pe, *e;
	uint32_t stat = KV_NOENT;

	if (rrr_xdr_get_string(args, key, KV_MAX_KEY))
		return RRR_SVC_GARBAGE_ARGS;
	pthread_mutex_lock(&t->lock);
	pe = find(t, key);
	if (pe) {
		e = *pe;
		*pe = e->next;
		t->n--;
		free(e->val);
		free(e);
		stat = KV_OK;
	}
	pthread_mutex_unlock(&t->lock);
	return rrr_xdr_put_enum(res, stat);
}

static const struct rrr_svc_proc kv_procs[KV_NPROCS] = {
    [KV_NULL] = {"null", ex_svc_null},
    [KV_PUT] = {"put", kv_put},
    [KV_GET] = {"get", kv_get},
    [KV_DEL] = {"del", kv_del},
};

static void usage(void)
{
	fprintf(stderr, "usage: kvserver [--host ADDR] [--rdma-port P] [--tcp-port P]\n"
			"                [--provider soft|verbs] [--threads N] [--max-keys N]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"max-keys", required_argument, NULL, 'm'},
	    EX_SVC_LONGOPTS,
	};
	struct table table = {.lock = PTHREAD_MUTEX_INITIALIZER, .max = 100000};
	struct rrr_svc_program prog = {
	    .prog = KV_PROG,
	    .vers = KV_VERS,
	    .procs = kv_procs,
	    .nprocs = KV_NPROCS,
	    .ctx = &table,
	};
	struct ex_svc_cfg cfg;
	struct rrr_svc *svc;
	int c, rc;

	ex_svc_cfg_init(&cfg, KV_MAX_VALUE);
	while ((c = ex_svc_getopt(argc, argv, lo, &cfg)) != -1) {
		if (c != 'm') {
			usage();
			return c == 'h' ? 0 : 2;
		}
		table.max = (unsigned)atoi(optarg);
	}

	if (ex_svc_start("kvserver", &cfg, &prog, &svc))
		return 1;
	printf("kvserver: rdma port %u tcp port %u\n", cfg.rp, cfg.tp);
	fflush(stdout);
	rc = ex_svc_run("kvserver", svc);
	rrr_svc_destroy(svc);
	while (table.head) {
		struct entry *e = table.head;

		table.head = e->next;
		free(e->val);
		free(e);
	}
	return rc ? 1 : 0;
}
