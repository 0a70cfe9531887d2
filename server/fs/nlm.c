/* SPDX-License-Identifier: MIT */
/*
 * server/fs/nlm.c - rrr-server's lock manager: NLM version 4 (program
 * 100021) over TCP and RDMA, the byte-range locks of NFSv3 clients.
 *
 * Normal operation: a lock belongs to an owner - (client, owner handle,
 * svid) as the client names it - and is placed on the server's own file
 * as an open file description lock (F_OFD_SETLK) on a descriptor held for
 * that (client, owner, file): OFD locks of different descriptors conflict
 * with each other and with every process's fcntl/lockf locks on the server,
 * and the locks of one descriptor merge and split like one process's, so
 * two NFS clients and a local program see one set of locks. The entry and
 * its descriptor stay until the owner unlocks the whole file (what a close
 * does), the client's locks are dropped, or the server stops.
 *
 *   LOCK     the range on the owner's descriptor; GRANTED, or DENIED, or
 *            (block set) BLOCKED and queued: the background thread tries
 *            queued locks again whenever an NLM unlock happens and every
 *            FS_NLM_RETRY_MS (for a local process's unlock), and once one is
 *            taken calls GRANTED on the client's lock manager (its port
 *            from its portmapper; over TCP, as Linux's lockd does, whatever
 *            transport the LOCK came on). The client answering anything but
 *            GRANTED means it no longer waits: the lock is released. A
 *            client that cannot be reached keeps the lock: it sends its
 *            LOCK again (every 30 s on Linux) and gets GRANTED.
 *   UNLOCK   the range; GRANTED even when nothing was held (idempotent).
 *   CANCEL   forget a queued LOCK (and release it if it was taken but not
 *            yet confirmed by GRANTED).
 *   TEST     F_OFD_GETLK: GRANTED, or DENIED with the holder's range.
 *   SHARE    DOS share reservations, kept in a table (no server-side effect
 *            on local programs); UNSHARE removes one.
 *   FREE_ALL drop everything of the clients of that name.
 *
 * A client's NSM state comes with each LOCK: a state different from the
 * one recorded for the client means it rebooted, and what it held before
 * is dropped first; its statd's SM_NOTIFY (nsm_svc.c, over TCP or UDP)
 * drops it as soon as the client is up again. The grace period after a restart (nsm.c) lets reclaims
 * in and makes other LOCKs, TESTs and SHAREs wait (DENIED_GRACE_PERIOD).
 * The calls obey the export allow lists (a client outside the list of the
 * export its file handle names gets NLM4_FAILED) and read-only exports
 * refuse exclusive locks (NLM4_ROFS).
 *
 * Bounds (hostile peers): FS_NLM_MAX_HOSTS clients, FS_NLM_MAX_FILES
 * (owner, file) descriptors per client and FS_NLM_MAX_ALL_FILES in all,
 * FS_NLM_MAX_BLOCKED queued LOCKs and FS_NLM_MAX_SHARES reservations per
 * client: past them a call gets DENIED_NOLOCKS, counted, and logged at most
 * once a second per kind. The _MSG/_RES (asynchronous, UDP-era) procedures
 * are not served (PROC_UNAVAIL).
 *
 * Locking: one mutex over the tables; fcntl(F_OFD_SETLK) never blocks, and
 * nothing slow (opening a file, a callback) runs under it except the open
 * of a new entry's descriptor. The NFS data path never touches any of it.
 *
 * Recovery: locks live in the kernel's lock table, attached to descriptors
 * this process holds; when the server stops or crashes they are gone, and
 * the next start tells the clients (nsm.c), which reclaim them in the grace
 * period.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "server/fs/config.h"
#include "server/fs/fs.h"
#include "server/fs/nlm.h"
#include "server/fs/rpc_call.h"

struct nlm_owner {
	uint32_t ohlen;
	uint8_t oh[NLM_MAXOBJ];
	int32_t svid;
};

/* One (owner, file): the descriptor its locks are placed on. */
struct nlm_file {
	struct nlm_file *next;
	struct nlm_owner *owner;
	dev_t dev;
	ino_t ino;
	int fd;
	bool writable;
};

struct nlm_block {
	struct nlm_block *next;
	struct nlm_file *f;  /* the owner's entry (kept while queued) */
	struct nlm4_args args;
	bool taken;          /* locked, GRANTED callback not yet answered */
};

struct nlm_share {
	struct nlm_share *next;
	dev_t dev;
	ino_t ino;
	struct nlm_owner *owner;
	uint32_t mode, access;
};

struct nlm_host {
	struct nlm_host *next;
	char name[NLM_MAXNAME + 1];
	struct sockaddr_storage addr;
	int32_t state; /* the client's NSM state, 0: not known */
	struct nlm_file *files;
	unsigned nfiles;
	struct nlm_block *blocked;
	unsigned nblocked;
	struct nlm_share *shares;
	unsigned nshares;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER;
static struct nlm_host *g_hosts;
static unsigned g_nhosts, g_nfiles;
static bool g_kick, g_stop, g_running;
static pthread_t g_thread;
static char g_myname[256];

static atomic_uint_fast64_t c_calls[NLM4_NPROCS], c_granted, c_denied, c_blocked, c_limit,
	c_cb_ok, c_cb_failed, c_reboots, c_refused;

/* --------------------------------------------------------------- helpers */

/* A v4-mapped address is its IPv4 address. */
static void unmap(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
			struct sockaddr_in a4 = {.sin_family = AF_INET};
			memcpy(&a4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
			memset(ss, 0, sizeof(*ss));
			memcpy(ss, &a4, sizeof(a4));
		}
	}
}

static void peer_addr(struct rrr_svc_req *req, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (rrr_svc_req_peer(req, ss) < 0)
		ss->ss_family = AF_UNSPEC;
	unmap(ss);
}

static bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			       &((const struct sockaddr_in *)b)->sin_addr, 4);
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

static bool owner_is(const struct nlm_owner *o, const struct nlm_obj *oh, int32_t svid)
{
	return o->svid == svid && o->ohlen == oh->len && !memcmp(o->oh, oh->data, oh->len);
}

static void limit_hit(const char *what, const struct nlm_host *h)
{
	static struct fs_lograte rl = FS_LOGRATE("lock manager: a client's limit reached");
	char nb[RRR__LOG_PEER_SIZE];
	atomic_fetch_add(&c_limit, 1);
	fs_log_limited(&rl, LOG_WARNING,
		       "lock manager: %s of client %s reached: DENIED_NOLOCKS (a client "
		       "leaking locks, or raise the limit in server/fs/nlm.h)",
		       what, fs_log_peer(h ? h->name : "?", nb));
}

/* The host of (@name, @addr), created when @create (NULL: none, or the
 * limit: then logged). Under g_lock. */
static struct nlm_host *host_get(const char *name, const struct sockaddr_storage *addr,
				 bool create)
{
	for (struct nlm_host *h = g_hosts; h; h = h->next)
		if (!strcmp(h->name, name) && same_ip(&h->addr, addr))
			return h;
	if (!create)
		return NULL;
	if (g_nhosts >= FS_NLM_MAX_HOSTS) {
		limit_hit("the number of clients (FS_NLM_MAX_HOSTS)", NULL);
		return NULL;
	}
	struct nlm_host *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->addr = *addr;
	h->next = g_hosts;
	g_hosts = h;
	g_nhosts++;
	return h;
}

static void file_free(struct nlm_file *f)
{
	if (f->fd >= 0)
		close(f->fd); /* the kernel drops the OFD locks with the last descriptor */
	free(f->owner);
	free(f);
	g_nfiles--;
}

/* Drop everything @h holds (its locks go with the descriptors). Under g_lock. */
static void host_clear(struct nlm_host *h)
{
	while (h->blocked) {
		struct nlm_block *b = h->blocked;
		h->blocked = b->next;
		free(b);
	}
	h->nblocked = 0;
	while (h->files) {
		struct nlm_file *f = h->files;
		h->files = f->next;
		file_free(f);
	}
	h->nfiles = 0;
	while (h->shares) {
		struct nlm_share *s = h->shares;
		h->shares = s->next;
		free(s->owner);
		free(s);
	}
	h->nshares = 0;
}

static void host_drop(struct nlm_host *h)
{
	host_clear(h);
	for (struct nlm_host **p = &g_hosts; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	g_nhosts--;
	free(h);
}

/* The NFS file handle in an NLM netobj: NFS3_OK with the export and @o
 * resolved, or an nlm4_stats. */
static uint32_t resolve(const struct nlm_obj *fhobj, struct fs_export **exp, struct fs_obj *o)
{
	struct rrr_nfs3_fh fh;
	if (fhobj->len == 0 || fhobj->len > RRR_NFS3_FHSIZE)
		return NLM4_STALE_FH;
	fh.len = fhobj->len;
	memcpy(fh.data, fhobj->data, fh.len);
	struct fs_export *ex = fs_exports_by_fh(&fh);
	if (!ex)
		return NLM4_STALE_FH;
	*exp = ex;
	uint32_t st = fs_resolve(ex, &fh, o);
	if (st != RRR_NFS3_OK)
		return st == RRR_NFS3ERR_STALE || st == RRR_NFS3ERR_BADHANDLE ? NLM4_STALE_FH
									     : NLM4_FAILED;
	if (!S_ISREG(o->st.st_mode))
		return NLM4_FAILED;
	return RRR_NFS3_OK;
}

/* The (owner, file) entry of @h, created with its descriptor when @o is
 * given: NULL when none, or past a limit (@st says which nlm4_stats). */
static struct nlm_file *file_get(struct nlm_host *h, const struct nlm4_lock *l,
				 const struct fs_obj *o, bool read_only, uint32_t *st)
{
	for (struct nlm_file *f = h->files; f; f = f->next)
		if (f->dev == o->st.st_dev && f->ino == o->st.st_ino && owner_is(f->owner, &l->oh, l->svid))
			return f;
	if (h->nfiles >= FS_NLM_MAX_FILES || g_nfiles >= FS_NLM_MAX_ALL_FILES) {
		limit_hit(h->nfiles >= FS_NLM_MAX_FILES ? "the locked files of one client "
							  "(FS_NLM_MAX_FILES)"
							: "the locked files of all clients "
							  "(FS_NLM_MAX_ALL_FILES)",
			  h);
		*st = NLM4_DENIED_NOLOCKS;
		return NULL;
	}
	struct nlm_file *f = calloc(1, sizeof(*f));
	struct nlm_owner *ow = malloc(sizeof(*ow));
	if (!f || !ow) {
		free(f);
		free(ow);
		*st = NLM4_DENIED_NOLOCKS;
		return NULL;
	}
	ow->ohlen = l->oh.len;
	memcpy(ow->oh, l->oh.data, l->oh.len);
	ow->svid = l->svid;
	f->owner = ow;
	f->dev = o->st.st_dev;
	f->ino = o->st.st_ino;
	f->writable = !read_only;
	f->fd = read_only ? -1 : fs_reopen(o, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (f->fd < 0) {
		f->writable = false;
		f->fd = fs_reopen(o, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	}
	if (f->fd < 0) {
		free(ow);
		free(f);
		*st = NLM4_FAILED;
		return NULL;
	}
	f->next = h->files;
	h->files = f;
	h->nfiles++;
	g_nfiles++;
	return f;
}

static void file_unlink(struct nlm_host *h, struct nlm_file *f)
{
	for (struct nlm_file **p = &h->files; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	h->nfiles--;
	for (struct nlm_block **p = &h->blocked; *p;) {
		if ((*p)->f == f) {
			struct nlm_block *b = *p;
			*p = b->next;
			h->nblocked--;
			free(b);
		} else {
			p = &(*p)->next;
		}
	}
	file_free(f);
}

/* An NLM range as a struct flock: false when it starts past what off_t holds. */
static bool to_flock(const struct nlm4_lock *l, bool exclusive, short type, struct flock *fl)
{
	memset(fl, 0, sizeof(*fl));
	if (l->offset > (uint64_t)INT64_MAX)
		return false;
	fl->l_type = type ? type : exclusive ? F_WRLCK : F_RDLCK;
	fl->l_whence = SEEK_SET;
	fl->l_start = (off_t)l->offset;
	/* a range that runs past the largest offset runs to the end (0) */
	fl->l_len = (l->len && l->len - 1 <= (uint64_t)INT64_MAX - l->offset) ? (off_t)l->len : 0;
	return true;
}

static uint32_t set_lock(struct nlm_file *f, const struct nlm4_lock *l, bool exclusive)
{
	struct flock fl;
	if (!to_flock(l, exclusive, 0, &fl))
		return NLM4_FBIG;
	if (exclusive && !f->writable)
		return NLM4_ROFS;
	if (fcntl(f->fd, F_OFD_SETLK, &fl) == 0)
		return NLM4_GRANTED_ST;
	if (errno == EAGAIN || errno == EACCES)
		return NLM4_DENIED;
	if (errno == ENOLCK)
		return NLM4_DENIED_NOLOCKS;
	return NLM4_FAILED;
}

static void unlock_range(struct nlm_file *f, const struct nlm4_lock *l)
{
	struct flock fl;
	if (to_flock(l, false, F_UNLCK, &fl))
		(void)fcntl(f->fd, F_OFD_SETLK, &fl);
}

static bool same_block(const struct nlm4_args *a, const struct nlm4_args *b)
{
	return a->exclusive == b->exclusive && a->lock.offset == b->lock.offset &&
	       a->lock.len == b->lock.len && a->lock.svid == b->lock.svid &&
	       a->lock.oh.len == b->lock.oh.len &&
	       !memcmp(a->lock.oh.data, b->lock.oh.data, a->lock.oh.len) &&
	       a->lock.fh.len == b->lock.fh.len &&
	       !memcmp(a->lock.fh.data, b->lock.fh.data, a->lock.fh.len);
}

/* ------------------------------------------------------------ procedures */

static int reply(struct rrr_xdr *res, bool test, struct nlm4_res *r)
{
	return nlm4_enc_res(res, test, r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

/* The checks every call on a file passes: NFS3_OK with @ex and @o, else the
 * nlm4_stats to answer. */
static uint32_t admit(struct rrr_svc_req *req, const struct nlm_obj *fh, struct fs_export **ex,
		      struct fs_obj *o, bool *read_only)
{
	uint32_t st = resolve(fh, ex, o);
	if (st != RRR_NFS3_OK)
		return st;
	if (!fs_access_allowed(req, *ex, read_only)) {
		static struct fs_lograte rl = FS_LOGRATE("lock manager: a client outside the allow list");
		atomic_fetch_add(&c_refused, 1);
		fs_log_limited(&rl, LOG_NOTICE,
			       "lock manager: refused a lock call from a client outside the "
			       "allow list of %s", (*ex)->name);
		return NLM4_FAILED;
	}
	return RRR_NFS3_OK;
}

static int p_null(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)req;
	(void)args;
	(void)res;
	atomic_fetch_add(&c_calls[NLM4_NULL], 1);
	return 0;
}

static int p_test(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	static __thread struct nlm4_args a;
	static __thread struct nlm4_res r;
	atomic_fetch_add(&c_calls[NLM4_TEST], 1);
	if (nlm4_dec_args(args, NLM4_TEST, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	memset(&r, 0, sizeof(r));
	r.cookie = a.cookie;
	if (fs_nsm_in_grace()) {
		r.stat = NLM4_DENIED_GRACE_PERIOD;
		return reply(res, true, &r);
	}
	struct fs_export *ex = NULL;
	struct fs_obj o = {.fd = -1};
	bool ro = false;
	r.stat = admit(req, &a.lock.fh, &ex, &o, &ro);
	struct flock fl;
	if (r.stat == RRR_NFS3_OK && !to_flock(&a.lock, a.exclusive, 0, &fl))
		r.stat = NLM4_FBIG;
	if (r.stat == RRR_NFS3_OK) {
		struct sockaddr_storage ss;
		peer_addr(req, &ss);
		pthread_mutex_lock(&g_lock);
		struct nlm_host *h = host_get(a.lock.caller, &ss, false);
		int fd = -1;
		for (struct nlm_file *f = h ? h->files : NULL; f; f = f->next)
			if (f->dev == o.st.st_dev && f->ino == o.st.st_ino &&
			    owner_is(f->owner, &a.lock.oh, a.lock.svid))
				fd = f->fd;
		int own = fd < 0 ? fs_reopen(&o, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
		int rc = fcntl(fd >= 0 ? fd : own, F_OFD_GETLK, &fl);
		pthread_mutex_unlock(&g_lock);
		if (own >= 0)
			close(own);
		if (rc < 0) {
			r.stat = NLM4_FAILED;
		} else if (fl.l_type == F_UNLCK) {
			r.stat = NLM4_GRANTED_ST;
		} else {
			r.stat = NLM4_DENIED;
			r.holder.exclusive = fl.l_type == F_WRLCK;
			r.holder.svid = fl.l_pid > 0 ? fl.l_pid : 0;
			r.holder.offset = (uint64_t)fl.l_start;
			r.holder.len = (uint64_t)fl.l_len;
		}
	}
	fs_obj_close(&o);
	return reply(res, true, &r);
}

static int p_lock(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	static __thread struct nlm4_args a;
	static __thread struct nlm4_res r;
	atomic_fetch_add(&c_calls[NLM4_LOCK], 1);
	if (nlm4_dec_args(args, NLM4_LOCK, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	memset(&r, 0, sizeof(r));
	r.cookie = a.cookie;
	bool grace = fs_nsm_in_grace();
	if (grace != a.reclaim) { /* as Linux: reclaims only in the grace period, only they */
		r.stat = NLM4_DENIED_GRACE_PERIOD;
		return reply(res, false, &r);
	}
	struct fs_export *ex = NULL;
	struct fs_obj o = {.fd = -1};
	bool ro = false;
	r.stat = admit(req, &a.lock.fh, &ex, &o, &ro);
	if (r.stat == RRR_NFS3_OK && ro && a.exclusive)
		r.stat = NLM4_ROFS;
	if (r.stat != RRR_NFS3_OK) {
		fs_obj_close(&o);
		return reply(res, false, &r);
	}
	struct sockaddr_storage ss;
	peer_addr(req, &ss);
	bool first = false;
	pthread_mutex_lock(&g_lock);
	struct nlm_host *h = host_get(a.lock.caller, &ss, true);
	if (h && a.state && h->state && a.state != h->state) {
		/* the client rebooted: what it held before is no longer its */
		char nb[RRR__LOG_PEER_SIZE];
		atomic_fetch_add(&c_reboots, 1);
		fs_log_at(LOG_INFO, "lock manager: client %s restarted (state %d -> %d): its old "
			  "locks are released", fs_log_peer(h->name, nb), h->state, a.state);
		host_clear(h);
	}
	struct nlm_file *f = NULL;
	if (!h) {
		r.stat = NLM4_DENIED_NOLOCKS;
	} else {
		if (a.state)
			h->state = a.state;
		f = file_get(h, &a.lock, &o, ro, &r.stat);
	}
	if (f) {
		r.stat = set_lock(f, &a.lock, a.exclusive);
		if (r.stat == NLM4_GRANTED_ST) {
			/* a retransmitted LOCK of a queued one: it is taken now */
			for (struct nlm_block **p = &h->blocked; *p; p = &(*p)->next)
				if (same_block(&(*p)->args, &a) && !(*p)->taken) {
					struct nlm_block *b = *p;
					*p = b->next;
					h->nblocked--;
					free(b);
					break;
				}
			first = true;
		} else if (r.stat == NLM4_DENIED && a.block) {
			bool queued = false;
			for (struct nlm_block *b = h->blocked; b && !queued; b = b->next)
				queued = same_block(&b->args, &a);
			if (queued) {
				r.stat = NLM4_BLOCKED;
			} else if (h->nblocked >= FS_NLM_MAX_BLOCKED) {
				limit_hit("the blocked locks of one client (FS_NLM_MAX_BLOCKED)", h);
				r.stat = NLM4_DENIED_NOLOCKS;
			} else {
				struct nlm_block *b = malloc(sizeof(*b));
				if (!b) {
					r.stat = NLM4_DENIED_NOLOCKS;
				} else {
					b->f = f;
					b->args = a;
					b->taken = false;
					b->next = h->blocked;
					h->blocked = b;
					h->nblocked++;
					r.stat = NLM4_BLOCKED;
				}
			}
		}
	}
	pthread_mutex_unlock(&g_lock);
	fs_obj_close(&o);
	if (r.stat == NLM4_GRANTED_ST) {
		atomic_fetch_add(&c_granted, 1);
		if (first)
			fs_nsm_client_add(&ss, a.lock.caller);
	} else if (r.stat == NLM4_BLOCKED) {
		atomic_fetch_add(&c_blocked, 1);
	} else {
		atomic_fetch_add(&c_denied, 1);
	}
	return reply(res, false, &r);
}

/* The owner's entry for @l's file (no descriptor is opened). Under g_lock. */
static struct nlm_file *find_file(struct nlm_host *h, const struct nlm4_lock *l,
				  const struct fs_obj *o)
{
	for (struct nlm_file *f = h ? h->files : NULL; f; f = f->next)
		if (f->dev == o->st.st_dev && f->ino == o->st.st_ino && owner_is(f->owner, &l->oh, l->svid))
			return f;
	return NULL;
}

static int p_unlock_cancel(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res,
			   uint32_t proc)
{
	static __thread struct nlm4_args a;
	static __thread struct nlm4_res r;
	atomic_fetch_add(&c_calls[proc], 1);
	if (nlm4_dec_args(args, proc, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	memset(&r, 0, sizeof(r));
	r.cookie = a.cookie;
	struct fs_export *ex = NULL;
	struct fs_obj o = {.fd = -1};
	bool ro = false;
	r.stat = admit(req, &a.lock.fh, &ex, &o, &ro);
	if (r.stat == NLM4_STALE_FH && proc == NLM4_UNLOCK)
		r.stat = NLM4_GRANTED_ST; /* the file is gone, and its locks with it */
	if (r.stat != RRR_NFS3_OK) {
		fs_obj_close(&o);
		return reply(res, false, &r);
	}
	struct sockaddr_storage ss;
	peer_addr(req, &ss);
	pthread_mutex_lock(&g_lock);
	struct nlm_host *h = host_get(a.lock.caller, &ss, false);
	struct nlm_file *f = find_file(h, &a.lock, &o);
	bool found = false;
	if (h && f) {
		for (struct nlm_block **p = &h->blocked; *p; p = &(*p)->next) {
			struct nlm_block *b = *p;
			bool match = proc == NLM4_CANCEL ? same_block(&b->args, &a)
							 : b->f == f && b->taken;
			if (!match)
				continue;
			if (b->taken) /* taken, not yet confirmed: the client no longer wants it */
				unlock_range(f, &b->args.lock);
			*p = b->next;
			h->nblocked--;
			free(b);
			found = true;
			break;
		}
		if (proc == NLM4_UNLOCK) {
			unlock_range(f, &a.lock);
			if (a.lock.offset == 0 && a.lock.len == 0)
				file_unlink(h, f); /* the whole file: what a close does */
		}
	}
	g_kick = true;
	pthread_cond_signal(&g_wake);
	pthread_mutex_unlock(&g_lock);
	fs_obj_close(&o);
	r.stat = proc == NLM4_CANCEL && !found ? NLM4_DENIED : NLM4_GRANTED_ST;
	return reply(res, false, &r);
}

static int p_cancel(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return p_unlock_cancel(req, args, res, NLM4_CANCEL);
}

static int p_unlock(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return p_unlock_cancel(req, args, res, NLM4_UNLOCK);
}

static int p_share(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res,
		   bool share)
{
	static __thread struct nlm4_shareargs a;
	atomic_fetch_add(&c_calls[share ? NLM4_SHARE : NLM4_UNSHARE], 1);
	if (nlm4_dec_shareargs(args, &a) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct nlm4_shareres r = {.cookie = a.cookie, .stat = NLM4_GRANTED_ST};
	if (share && fs_nsm_in_grace() && !a.reclaim) {
		r.stat = NLM4_DENIED_GRACE_PERIOD;
		return nlm4_enc_shareres(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
	}
	struct fs_export *ex = NULL;
	struct fs_obj o = {.fd = -1};
	bool ro = false;
	uint32_t st = admit(req, &a.share.fh, &ex, &o, &ro);
	if (st != RRR_NFS3_OK) {
		r.stat = st;
		fs_obj_close(&o);
		return nlm4_enc_shareres(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
	}
	struct sockaddr_storage ss;
	peer_addr(req, &ss);
	pthread_mutex_lock(&g_lock);
	struct nlm_host *h = host_get(a.share.caller, &ss, share);
	struct nlm_share **mine = NULL;
	for (struct nlm_share **p = h ? &h->shares : NULL; p && *p; p = &(*p)->next)
		if ((*p)->dev == o.st.st_dev && (*p)->ino == o.st.st_ino &&
		    (*p)->owner->ohlen == a.share.oh.len &&
		    !memcmp((*p)->owner->oh, a.share.oh.data, a.share.oh.len))
			mine = p;
	if (!share) {
		if (mine) {
			struct nlm_share *s = *mine;
			*mine = s->next;
			h->nshares--;
			free(s->owner);
			free(s);
		}
	} else if (!h) {
		r.stat = NLM4_DENIED_NOLOCKS;
	} else {
		/* a conflict: one's access meets the other's deny mode */
		for (struct nlm_host *o2 = g_hosts; o2 && r.stat == NLM4_GRANTED_ST; o2 = o2->next)
			for (struct nlm_share *s = o2->shares; s; s = s->next)
				if (s->dev == o.st.st_dev && s->ino == o.st.st_ino &&
				    (!mine || s != *mine) &&
				    ((s->access & a.share.mode) || (s->mode & a.share.access))) {
					r.stat = NLM4_DENIED;
					break;
				}
		if (r.stat == NLM4_GRANTED_ST && mine) {
			(*mine)->mode = a.share.mode;
			(*mine)->access = a.share.access;
		} else if (r.stat == NLM4_GRANTED_ST && h->nshares >= FS_NLM_MAX_SHARES) {
			limit_hit("the share reservations of one client (FS_NLM_MAX_SHARES)", h);
			r.stat = NLM4_DENIED_NOLOCKS;
		} else if (r.stat == NLM4_GRANTED_ST) {
			struct nlm_share *s = calloc(1, sizeof(*s));
			struct nlm_owner *ow = malloc(sizeof(*ow));
			if (!s || !ow) {
				free(s);
				free(ow);
				r.stat = NLM4_DENIED_NOLOCKS;
			} else {
				ow->ohlen = a.share.oh.len;
				memcpy(ow->oh, a.share.oh.data, a.share.oh.len);
				ow->svid = 0;
				s->owner = ow;
				s->dev = o.st.st_dev;
				s->ino = o.st.st_ino;
				s->mode = a.share.mode;
				s->access = a.share.access;
				s->next = h->shares;
				h->shares = s;
				h->nshares++;
			}
		}
	}
	pthread_mutex_unlock(&g_lock);
	fs_obj_close(&o);
	return nlm4_enc_shareres(res, &r) < 0 ? RRR_SVC_SYSTEM_ERR : 0;
}

static int p_share_on(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return p_share(req, args, res, true);
}

static int p_unshare(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	return p_share(req, args, res, false);
}

static int p_free_all(struct rrr_svc_req *req, struct rrr_xdr *args, struct rrr_xdr *res)
{
	(void)res;
	struct nlm_notify n;
	atomic_fetch_add(&c_calls[NLM4_FREE_ALL], 1);
	if (nlm_dec_notify(args, &n) < 0)
		return RRR_SVC_GARBAGE_ARGS;
	struct sockaddr_storage ss;
	peer_addr(req, &ss);
	pthread_mutex_lock(&g_lock);
	/* only the client itself frees its locks: the name and the address */
	for (struct nlm_host *h = g_hosts, *next; h; h = next) {
		next = h->next;
		if (!strcmp(h->name, n.name) && same_ip(&h->addr, &ss))
			host_drop(h);
	}
	g_kick = true;
	pthread_cond_signal(&g_wake);
	pthread_mutex_unlock(&g_lock);
	return 0;
}

unsigned fs_nlm_host_rebooted(const char *name, const struct sockaddr_storage *from,
			      int32_t state)
{
	struct sockaddr_storage ss = *from;
	unsigned n = 0;
	unmap(&ss);
	pthread_mutex_lock(&g_lock);
	/* as FREE_ALL: only the client itself (its name from its address); a
	 * repeated SM_NOTIFY of a state already seen in a LOCK is not a reboot */
	for (struct nlm_host *h = g_hosts, *next; h; h = next) {
		next = h->next;
		if (strcmp(h->name, name) || !same_ip(&h->addr, &ss) || h->state == state)
			continue;
		host_drop(h);
		n++;
	}
	g_kick = true;
	pthread_cond_signal(&g_wake);
	pthread_mutex_unlock(&g_lock);
	if (n)
		atomic_fetch_add(&c_reboots, n);
	return n;
}

const struct rrr_svc_proc fs_nlm_procs[NLM4_NPROCS] = {
	[NLM4_NULL] = {"NULL", p_null},
	[NLM4_TEST] = {"TEST", p_test},
	[NLM4_LOCK] = {"LOCK", p_lock},
	[NLM4_CANCEL] = {"CANCEL", p_cancel},
	[NLM4_UNLOCK] = {"UNLOCK", p_unlock},
	[NLM4_GRANTED] = {"GRANTED", NULL},
	[NLM4_SHARE] = {"SHARE", p_share_on},
	[NLM4_UNSHARE] = {"UNSHARE", p_unshare},
	[NLM4_NM_LOCK] = {"NM_LOCK", p_lock},
	[NLM4_FREE_ALL] = {"FREE_ALL", p_free_all},
};

/* ---------------------------------------------------- the background thread */

/* A taken lock to report: copied out of the table, called without g_lock. */
struct granted {
	struct sockaddr_storage addr;
	struct nlm4_args args;
};

/* GRANTED on the client's lock manager: its nlm4_res stat, or -errno. */
static int call_granted(const struct granted *g)
{
	int port = fs_rpc_getport(&g->addr, NLM_PROG, NLM_VERS4);
	if (port <= 0)
		return port < 0 ? port : -EPROTONOSUPPORT;
	int fd = fs_rpc_connect(&g->addr, (uint16_t)port);
	if (fd < 0)
		return fd;
	static uint8_t out[FS_RPC_MSG], buf[4096];
	static struct nlm4_args a;
	a = g->args;
	snprintf(a.lock.caller, sizeof(a.lock.caller), "%s", g_myname);
	struct rrr_xdr x;
	rrr_xdr_init(&x, out, sizeof(out), RRR_XDR_ENCODE);
	int rc = nlm4_enc_args(&x, NLM4_GRANTED, &a);
	if (rc == 0)
		rc = fs_rpc_call(fd, NLM_PROG, NLM_VERS4, NLM4_GRANTED, out, rrr_xdr_pos(&x), buf,
				 sizeof(buf), &x);
	close(fd);
	static struct nlm4_res r;
	if (rc == 0)
		rc = nlm4_dec_res(&x, false, &r) < 0 ? -EPROTO : (int)r.stat;
	return rc;
}

/* Try the queued locks; the first one taken is copied into @g (one callback
 * per pass keeps the table lock short). Under g_lock. */
static bool retry_blocked(struct granted *g)
{
	for (struct nlm_host *h = g_hosts; h; h = h->next)
		for (struct nlm_block *b = h->blocked; b; b = b->next) {
			if (b->taken)
				continue;
			if (set_lock(b->f, &b->args.lock, b->args.exclusive) != NLM4_GRANTED_ST)
				continue;
			b->taken = true;
			g->addr = h->addr;
			g->args = b->args;
			return true;
		}
	return false;
}

/* After the callback: forget the queued entry; release it if the client
 * said it no longer waits. Under g_lock. */
static void settle(const struct granted *g, int rc)
{
	for (struct nlm_host *h = g_hosts; h; h = h->next) {
		if (!same_ip(&h->addr, &g->addr))
			continue;
		for (struct nlm_block **p = &h->blocked; *p; p = &(*p)->next) {
			struct nlm_block *b = *p;
			if (!b->taken || !same_block(&b->args, &g->args))
				continue;
			if (rc > 0) /* DENIED & co: it does not want it any more */
				unlock_range(b->f, &b->args.lock);
			*p = b->next;
			h->nblocked--;
			free(b);
			return;
		}
	}
}

static void *bg_main(void *arg)
{
	(void)arg;
	static struct granted g;
	bool notified = false;
	pthread_mutex_lock(&g_lock);
	while (!g_stop) {
		if (!notified) {
			pthread_mutex_unlock(&g_lock);
			notified = fs_nsm_notify_step();
			pthread_mutex_lock(&g_lock);
		}
		while (!g_stop && retry_blocked(&g)) {
			pthread_mutex_unlock(&g_lock);
			int rc = call_granted(&g);
			if (rc < 0) {
				static struct fs_lograte rl = FS_LOGRATE("lock manager: GRANTED not delivered");
				atomic_fetch_add(&c_cb_failed, 1);
				fs_log_limited(&rl, LOG_NOTICE,
					       "lock manager: GRANTED callback to a client failed (%s): "
					       "it keeps the lock and gets it when it asks again",
					       strerror(-rc));
			} else {
				atomic_fetch_add(&c_cb_ok, 1);
			}
			pthread_mutex_lock(&g_lock);
			settle(&g, rc < 0 ? 0 : rc);
		}
		if (g_stop)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += FS_NLM_RETRY_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!g_kick)
			pthread_cond_timedwait(&g_wake, &g_lock, &ts);
		g_kick = false;
	}
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

int fs_nlm_start(const char *state_dir, unsigned grace_s)
{
	if (gethostname(g_myname, sizeof(g_myname) - 1) < 0)
		snprintf(g_myname, sizeof(g_myname), "rrr-server");
	int rc = fs_nsm_init(state_dir);
	if (rc < 0)
		return rc;
	fs_nsm_grace_start(grace_s);
	g_stop = false;
	rc = pthread_create(&g_thread, NULL, bg_main, NULL);
	if (rc)
		return -rc;
	g_running = true;
	return 0;
}

void fs_nlm_stop(void)
{
	if (g_running) {
		pthread_mutex_lock(&g_lock);
		g_stop = true;
		pthread_cond_signal(&g_wake);
		pthread_mutex_unlock(&g_lock);
		pthread_join(g_thread, NULL);
		g_running = false;
	}
	pthread_mutex_lock(&g_lock);
	while (g_hosts)
		host_drop(g_hosts);
	pthread_mutex_unlock(&g_lock);
}

void fs_nlm_print(FILE *f)
{
	static const char *const names[NLM4_NPROCS] = {
		[NLM4_NULL] = "null", [NLM4_TEST] = "test", [NLM4_LOCK] = "lock",
		[NLM4_CANCEL] = "cancel", [NLM4_UNLOCK] = "unlock", [NLM4_SHARE] = "share",
		[NLM4_UNSHARE] = "unshare", [NLM4_FREE_ALL] = "free_all"};
	for (unsigned i = 0; i < NLM4_NPROCS; i++)
		if (names[i])
			fprintf(f, "  nlm.calls.%s %llu\n", names[i],
				(unsigned long long)atomic_load(&c_calls[i]));
	fprintf(f, "  nlm.granted %llu\n", (unsigned long long)atomic_load(&c_granted));
	fprintf(f, "  nlm.denied %llu\n", (unsigned long long)atomic_load(&c_denied));
	fprintf(f, "  nlm.blocked %llu\n", (unsigned long long)atomic_load(&c_blocked));
	fprintf(f, "  nlm.callbacks_ok %llu\n", (unsigned long long)atomic_load(&c_cb_ok));
	fprintf(f, "  nlm.callbacks_failed %llu\n", (unsigned long long)atomic_load(&c_cb_failed));
	fprintf(f, "  nlm.limit_reached %llu\n", (unsigned long long)atomic_load(&c_limit));
	fprintf(f, "  nlm.refused %llu\n", (unsigned long long)atomic_load(&c_refused));
	fprintf(f, "  nlm.client_reboots %llu\n", (unsigned long long)atomic_load(&c_reboots));
	pthread_mutex_lock(&g_lock);
	fprintf(f, "  nlm.clients %u\n", g_nhosts);
	fprintf(f, "  nlm.files %u\n", g_nfiles);
	pthread_mutex_unlock(&g_lock);
	fs_nsm_print(f);
	fs_nsm_svc_print(f);
	fs_nsm_udp_print(f);
}
