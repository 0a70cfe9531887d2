/* SPDX-License-Identifier: MIT */
/*
 * server/fs/drc.c - duplicate request cache (DRC) for the NFSv3 procedures
 * that are not idempotent: SETATTR, WRITE, CREATE, MKDIR, SYMLINK, MKNOD,
 * REMOVE, RMDIR, RENAME, LINK.
 *
 * Why. The rrr client (like the kernel's on a hard mount) re-sends every
 * call still outstanding after a reconnect, with the same xid. A REMOVE
 * that the server executed but whose reply was lost with the connection
 * would, executed again, answer NFS3ERR_NOENT for a file the caller did
 * remove; a GUARDED CREATE would answer NFS3ERR_EXIST; a RENAME would
 * fail. The cache answers such a re-sent call with the reply of the first
 * execution instead of executing it twice.
 *
 * Normal operation. fs_drc_init() builds a copy of the NFSv3 dispatch
 * table whose non-idempotent entries point at drc_handler(). The handler
 * runs after the transport has the whole call: over TCP the record, over
 * RDMA the call rebuilt with every read chunk pulled into place (the WRITE
 * data included, server/svc_rdma_rw.c), so the argument stream it is given
 * is every byte of the arguments. A reply is replayed only for the same
 * call, which is, all of them equal:
 *   - the client's address AND port (a client that reconnects binds its
 *     previous port again, as Linux's does and rrr_clnt does: that is how a
 *     re-sent call finds its reply; two clients behind one address are two
 *     callers);
 *   - xid, program, version, procedure;
 *   - the credential: flavor, and for AUTH_SYS uid, gid and the group list
 *     as they are, plus a CRC32C of the rest (stamp, machine name, body
 *     length) - a user who re-uses another's xid is not answered with the
 *     other user's reply;
 *   - the length of the arguments and a 64-bit XXH3 (libxxhash, which picks
 *     the CPU's widest vector unit at run time) of ALL of them, the data of
 *     a WRITE included: a new call that re-uses an xid with the same header
 *     and other data runs. (Linux nfsd sums only the first 256 bytes; all
 *     of them cost ~0.06 us per 4 KiB and ~17 us per 1 MiB here, `rrr-bench
 *     crc`, docs/reliability.md. XXH3 rather than the CRC32C of the small
 *     sums: at least as fast on hardware, 64 bits instead of 32, and a
 *     seventh of the cost where the CPU is emulated, as in the VM tests.)
 *     A new call, the usual case, is found to be new by everything else;
 *     its checksum is taken after its reply went out
 *     (rrr_svc_req_after_reply), off the reply's latency, while its
 *     arguments are still there. A call that
 *     finds an entry of the same header sums its own arguments and, if
 *     that entry is not summed yet, sums the entry's too (they stay valid
 *     until the entry's after-reply step has taken the lock).
 * A miss inserts an entry "in progress", runs the real handler without the
 * lock, then stores the encoded results (the bytes the handler put in the
 * result stream, at most FS_DRC_REPLY_MAX: every non-idempotent reply is a
 * few hundred bytes) and marks it done. A hit on a done entry copies those
 * bytes into the result stream and returns the original verdict: the
 * procedure does not run again. A hit on an entry in progress (a re-send
 * that arrived on a new connection, served by another worker, while the
 * original still runs) waits for it, up to FS_DRC_WAIT_MS, then answers
 * from the cache - the procedure is never executed twice at once; if the
 * original did not finish by then the duplicate is dropped (no reply; the
 * client re-sends or times out). A call with the xid of a finished entry
 * of the same client address and port but anything else different is a
 * new call (the client has moved on from the old one): it is executed and
 * its entry replaces the old one (counted as a mismatch).
 *
 * Bounds. A fixed table of `entries` (--drc-entries, default 1024; 0 turns
 * the cache off) allocated at start, about 1.1 KiB each; a new entry
 * replaces the least recently used finished one (evictions). When every
 * entry is in progress the call runs uncached (counted). Handler failures
 * (SYSTEM_ERR, GARBAGE_ARGS, DROP, a negative errno) are not cached: the
 * entry is removed and a re-sent call runs again.
 *
 * Locking: one mutex and one condition variable for the whole cache; the
 * handler itself runs without them.
 */
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#if defined(__x86_64__)
#include <xxh_x86dispatch.h> /* XXH3_64bits_dispatch: libxxhash on x86-64 */
#else
#include <xxhash.h>
#endif

#include <rrr/crc32c.h>
#include <rrr/oncrpc.h>

#include "server/fs/drc.h"

/* Everything that makes a call the same call (see the top of this file).
 * Built with memset first: compared with memcmp, no padding. */
struct key {
	/* the client's call: the hash, and what a mismatch shares */
	uint32_t xid;
	uint32_t fam;
	uint16_t port, pad;
	uint8_t addr[16];
	/* the rest of the call */
	uint32_t prog, vers, proc;
	uint32_t flavor, uid, gid, ngids;
	uint32_t gids[RRR_RPC_AUTH_SYS_MAX_GIDS];
	uint32_t cred_sum; /* CRC32C of the AUTH_SYS stamp, machine name, body length */
	uint32_t arg_len;  /* bytes of arguments */
	uint64_t arg_sum;  /* XXH3 of all of them (compared apart: see drc_handler) */
};
#define KEY_CLIENT_BYTES offsetof(struct key, prog)
/* memcmp up to arg_sum must see no padding */
_Static_assert(offsetof(struct key, arg_sum) == offsetof(struct key, arg_len) + 4,
	       "struct key has padding before arg_sum");

/* The checksum of a call's arguments (see the top of this file). libxxhash
 * has a run-time dispatcher on x86-64 only; elsewhere its one build. */
static uint64_t args_sum(const void *p, size_t len)
{
#if defined(__x86_64__)
	return XXH3_64bits_dispatch(p, len);
#else
	return XXH3_64bits(p, len);
#endif
}

struct ent {
	struct ent *hnext;	   /* hash chain, or free list */
	struct ent *lprev, *lnext; /* LRU list, newest first */
	struct key k;
	uint64_t gen; /* bumped when the entry is removed */
	bool used, done;
	bool summed; /* k.arg_sum is known (after the reply: sum_after_reply) */
	/* until summed: the arguments, valid until sum_after_reply has taken
	 * the lock (the transport frees them only after it returns) */
	const void *args;
	uint32_t args_len;
	int rc;
	uint32_t len;
	uint8_t reply[FS_DRC_REPLY_MAX];
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ent *ents;
	struct ent **bucket;
	unsigned nbucket;
	unsigned cap;
	struct ent *free;
	struct ent lru; /* sentinel */
	const struct rrr_svc_proc *base;
	struct rrr_svc_proc tab[RRR_NFS3_NPROCS];
	struct fs_drc_stats st;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

bool fs_drc_cached_proc(uint32_t proc)
{
	switch (proc) {
	case RRR_NFS3_SETATTR:
	case RRR_NFS3_WRITE:
	case RRR_NFS3_CREATE:
	case RRR_NFS3_MKDIR:
	case RRR_NFS3_SYMLINK:
	case RRR_NFS3_MKNOD:
	case RRR_NFS3_REMOVE:
	case RRR_NFS3_RMDIR:
	case RRR_NFS3_RENAME:
	case RRR_NFS3_LINK:
		return true;
	default:
		return false;
	}
}

static unsigned key_hash(const struct key *k)
{
	return rrr_crc32c(0, k, KEY_CLIENT_BYTES) % g.nbucket;
}

/* The same xid from the same client address and port. */
static bool same_client_xid(const struct key *a, const struct key *b)
{
	return !memcmp(a, b, KEY_CLIENT_BYTES);
}

/* The same call but perhaps for the arguments' checksum. */
static bool key_eq_but_sum(const struct key *a, const struct key *b)
{
	return a->xid == b->xid && !memcmp(a, b, offsetof(struct key, arg_sum));
}

static void cred_key(const struct rrr_rpc_cred *c, struct key *k)
{
	uint32_t sum = rrr_crc32c(0, &c->body_len, sizeof(c->body_len));

	k->flavor = c->flavor;
	if (c->flavor == RRR_AUTH_SYS) {
		const struct rrr_auth_sys *s = &c->sys;

		k->uid = s->uid;
		k->gid = s->gid;
		k->ngids = s->ngids < RRR_RPC_AUTH_SYS_MAX_GIDS ? s->ngids : RRR_RPC_AUTH_SYS_MAX_GIDS;
		memcpy(k->gids, s->gids, k->ngids * sizeof(k->gids[0]));
		sum = rrr_crc32c(sum, &s->stamp, sizeof(s->stamp));
		sum = rrr_crc32c(sum, s->machinename,
				 strnlen(s->machinename, sizeof(s->machinename)));
	}
	k->cred_sum = sum;
}

static int make_key(struct rrr_svc_req *req, const struct rrr_rpc_call *call,
		    const struct rrr_xdr *args, struct key *k)
{
	struct sockaddr_storage ss;
	size_t n = rrr_xdr_remaining(args);

	memset(k, 0, sizeof(*k));
	if (rrr_svc_req_peer(req, &ss) || n > UINT32_MAX)
		return -ENOTCONN;
	k->fam = ss.ss_family;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;

		memcpy(k->addr, &sin->sin_addr, 4);
		k->port = sin->sin_port;
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;

		memcpy(k->addr, &sin6->sin6_addr, 16);
		k->port = sin6->sin6_port;
	} else {
		return -EAFNOSUPPORT;
	}
	k->xid = call->xid;
	k->prog = call->prog;
	k->vers = call->vers;
	k->proc = call->proc;
	cred_key(&call->cred, k);
	k->arg_len = (uint32_t)n;
	return 0;
}

static void lru_unlink(struct ent *e)
{
	e->lprev->lnext = e->lnext;
	e->lnext->lprev = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_front(struct ent *e)
{
	e->lnext = g.lru.lnext;
	e->lprev = &g.lru;
	g.lru.lnext->lprev = e;
	g.lru.lnext = e;
}

/* The entry of @k (its checksum aside), or NULL; then *@other gets an
 * entry of the same client address, port and xid with another key, if
 * there is one. */
static struct ent *lookup(const struct key *k, struct ent **other)
{
	*other = NULL;
	for (struct ent *e = g.bucket[key_hash(k)]; e; e = e->hnext) {
		if (key_eq_but_sum(&e->k, k))
			return e;
		if (same_client_xid(&e->k, k))
			*other = e;
	}
	return NULL;
}

/* Unhash, unlink and put @e on the free list (lock held). */
static void remove_ent(struct ent *e)
{
	struct ent **pp = &g.bucket[key_hash(&e->k)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru_unlink(e);
	e->used = e->done = e->summed = false;
	e->gen++;
	e->hnext = g.free;
	g.free = e;
	g.st.entries--;
}

/* A free entry, evicting the least recently used finished one if needed;
 * NULL when every entry is in progress (lock held). */
static struct ent *take_ent(void)
{
	struct ent *e = g.free;

	if (!e) {
		for (e = g.lru.lprev; e != &g.lru && !e->done; e = e->lprev)
			;
		if (e == &g.lru)
			return NULL;
		remove_ent(e);
		g.st.evictions++;
		e = g.free;
	}
	g.free = e->hnext;
	e->hnext = NULL;
	return e;
}

static int replay(const struct ent *e, struct rrr_xdr *res)
{
	if (rrr_xdr_remaining(res) < e->len)
		return RRR_SVC_SYSTEM_ERR;
	memcpy(rrr_xdr_cursor(res), e->reply, e->len);
	res->pos += e->len;
	return e->rc;
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* What the after-reply step needs to sum an entry's arguments. */
struct later_sum {
	struct ent *e;
	uint64_t gen;
	const void *args;
	size_t len;
};

/* After the reply went out (rrr_svc_req_after_reply), the arguments still
 * valid: their checksum completes the entry. */
static void sum_after_reply(void *arg, bool replied)
{
	struct later_sum *ls = arg;
	uint64_t sum = args_sum(ls->args, ls->len);

	(void)replied; /* a call whose reply was lost is re-sent: keep it */
	pthread_mutex_lock(&g.mu);
	if (ls->e->gen == ls->gen && !ls->e->summed) {
		ls->e->k.arg_sum = sum;
		ls->e->summed = true;
		ls->e->args = NULL;
	}
	pthread_mutex_unlock(&g.mu);
}

/* A call whose entry exists (a re-send, or an xid used again): wait until
 * that entry's call was executed, then replay it if the arguments are the
 * same, else run the call as new. An entry not summed yet is summed here,
 * from its call's arguments, which stay valid while the lock is held (its
 * sum_after_reply may be waiting for the lock, on the very worker that
 * would have to run it after this one: no waiting for it). Lock held;
 * returns the handler's verdict, or -1 to run the call as a miss (*@k
 * summed). */
static int resent(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res,
		  struct ent *e, struct key *k)
{
	uint64_t gen = e->gen;
	struct timespec ts;
	uint64_t sum;

	(void)req;
	pthread_mutex_unlock(&g.mu);
	sum = args_sum(rrr_xdr_cursor(args), k->arg_len);
	pthread_mutex_lock(&g.mu);
	k->arg_sum = sum;
	if (e->gen != gen)
		return -1; /* gone meanwhile (a failure, an eviction): new */
	if (!e->done) {
		g.st.waits++;
		deadline_in(&ts, FS_DRC_WAIT_MS);
		while (e->gen == gen && !e->done)
			if (pthread_cond_timedwait(&g.cv, &g.mu, &ts))
				break;
		if (e->gen != gen)
			return -1;
		if (!e->done) {
			g.st.drops++;
			return RRR_SVC_DROP;
		}
	}
	if (!e->summed) {
		e->k.arg_sum = args_sum(e->args, e->args_len);
		e->summed = true;
		e->args = NULL;
	}
	if (e->k.arg_sum != sum) {
		/* the same header with other arguments: a new call */
		g.st.mismatches++;
		remove_ent(e);
		return -1;
	}
	g.st.hits++;
	lru_unlink(e);
	lru_front(e);
	return replay(e, res);
}

/*
 * The cache around a non-idempotent procedure. The arguments' checksum,
 * a pass over all of them (a 1 MiB WRITE's data too), is the one cost
 * that grows with the call, so a new call, the usual case, does not wait
 * for it: its entry is found by everything else, executed, and summed
 * after its reply went out (sum_after_reply; a re-send that arrives before
 * then waits, as for a call still running). Only a call that finds an
 * entry of the same header sums its own arguments before deciding.
 */
static int drc_handler(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	const struct rrr_rpc_call *call = rrr_svc_req_call(req);
	rrr_svc_handler_fn fn = g.base[call->proc].fn;
	size_t start = rrr_xdr_pos(res);
	struct later_sum *ls;
	struct ent *e, *other;
	bool summed = false;
	struct key k;
	int rc;

	if (make_key(req, call, args, &k))
		return fn(req, args, res);
	pthread_mutex_lock(&g.mu);
	e = lookup(&k, &other);
	if (e) {
		rc = resent(req, args, res, e, &k);
		if (rc >= 0) {
			pthread_mutex_unlock(&g.mu);
			return rc;
		}
		summed = true;
		e = lookup(&k, &other); /* the one found is gone: no other of it */
		if (e) {
			/* another re-send took its place meanwhile: run this one
			 * uncached rather than wait again */
			g.st.uncached++;
			pthread_mutex_unlock(&g.mu);
			return fn(req, args, res);
		}
	}
	if (other) {
		/* the xid of an earlier call, anything else different: a new
		 * call; a finished entry of the old one gives way to it */
		g.st.mismatches++;
		if (other->done)
			remove_ent(other);
	}
	e = take_ent();
	if (!e) {
		g.st.uncached++;
		pthread_mutex_unlock(&g.mu);
		return fn(req, args, res);
	}
	e->k = k;
	e->used = true;
	e->done = false;
	e->summed = summed;
	e->args = rrr_xdr_cursor(args);
	e->args_len = k.arg_len;
	e->hnext = g.bucket[key_hash(&k)];
	g.bucket[key_hash(&k)] = e;
	lru_front(e);
	g.st.entries++;
	g.st.misses++;
	pthread_mutex_unlock(&g.mu);

	/* the checksum after the reply, of the arguments as they are now */
	ls = summed ? NULL : rrr_svc_req_alloc(req, sizeof(*ls));
	if (ls) {
		*ls = (struct later_sum){e, e->gen, rrr_xdr_cursor(args), k.arg_len};
		if (rrr_svc_req_after_reply(req, sum_after_reply, ls))
			ls = NULL;
	}
	if (!summed && !ls)
		k.arg_sum = args_sum(rrr_xdr_cursor(args), k.arg_len);

	rc = fn(req, args, res);

	pthread_mutex_lock(&g.mu);
	if (rc == 0 && rrr_xdr_pos(res) >= start && rrr_xdr_pos(res) - start <= FS_DRC_REPLY_MAX) {
		e->len = (uint32_t)(rrr_xdr_pos(res) - start);
		memcpy(e->reply, res->buf + start, e->len);
		e->rc = rc;
		e->done = true;
		if (!ls) {
			e->k.arg_sum = k.arg_sum;
			e->summed = true;
			e->args = NULL;
		}
	} else {
		remove_ent(e); /* failures run again when re-sent */
	}
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	return rc;
}

int fs_drc_init(const struct rrr_svc_proc *base, unsigned entries)
{
	g.base = base;
	memcpy(g.tab, base, sizeof(g.tab));
	g.lru.lnext = g.lru.lprev = &g.lru;
	g.cap = entries > FS_DRC_MAX_ENTRIES ? FS_DRC_MAX_ENTRIES : entries;
	g.st.capacity = g.cap;
	if (!g.cap)
		return 0;
	g.nbucket = g.cap;
	g.ents = calloc(g.cap, sizeof(*g.ents));
	g.bucket = calloc(g.nbucket, sizeof(*g.bucket));
	if (!g.ents || !g.bucket) {
		fs_drc_fini();
		return -ENOMEM;
	}
	for (unsigned i = g.cap; i-- > 0;) {
		g.ents[i].hnext = g.free;
		g.free = &g.ents[i];
	}
	for (uint32_t p = 0; p < RRR_NFS3_NPROCS; p++)
		if (fs_drc_cached_proc(p) && base[p].fn)
			g.tab[p].fn = drc_handler;
	return 0;
}

const struct rrr_svc_proc *fs_drc_nfs3_procs(void)
{
	return g.tab;
}

void fs_drc_stats(struct fs_drc_stats *st)
{
	pthread_mutex_lock(&g.mu);
	*st = g.st;
	pthread_mutex_unlock(&g.mu);
}

void fs_drc_print(FILE *f)
{
	struct fs_drc_stats s;

	fs_drc_stats(&s);
	fprintf(f,
		"  drc.hits %llu\n  drc.misses %llu\n  drc.mismatches %llu\n  drc.waits %llu\n"
		"  drc.drops %llu\n  drc.evictions %llu\n  drc.uncached %llu\n  drc.entries %u\n"
		"  drc.capacity %u\n",
		(unsigned long long)s.hits, (unsigned long long)s.misses,
		(unsigned long long)s.mismatches, (unsigned long long)s.waits,
		(unsigned long long)s.drops,
		(unsigned long long)s.evictions, (unsigned long long)s.uncached, s.entries,
		s.capacity);
}

void fs_drc_fini(void)
{
	free(g.ents);
	free(g.bucket);
	g.ents = NULL;
	g.bucket = NULL;
	g.free = NULL;
	g.cap = 0;
	g.lru.lnext = g.lru.lprev = &g.lru;
	memset(&g.st, 0, sizeof(g.st));
}
