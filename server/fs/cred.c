/* SPDX-License-Identifier: MIT */
/*
 * server/fs/cred.c - rrr-server acts as the caller of each request.
 *
 * Like knfsd and NFS-Ganesha, the server does the work of a request with
 * the identity the request carries, so that the kernel's own permission
 * checks (open, create, remove, rename, chmod, chown, utimes...) decide,
 * not the client's goodwill. On Linux the file system identity is per
 * thread: setfsuid(2)/setfsgid(2) change only the calling thread, and the
 * raw SYS_setgroups system call changes only the calling thread's
 * supplementary groups (glibc's setgroups() would change every thread of
 * the process, which is why it is not used here).
 *
 * Why not on the worker thread itself: the kernel's RDMA character devices
 * (ib_uverbs, rdma_ucm) refuse a write(2) from a thread whose credentials
 * are not the very ones the device was opened with ("changed security
 * contexts after opening file descriptor"; the check compares the cred
 * pointers, so even changing back does not help), and the verbs provider
 * (rxe posts every send that way) runs on the workers. So each worker
 * thread gets an agent thread, created on its first request, and
 * fs_as_caller() hands it the file system part of a request and waits: the
 * agent takes the caller's identity, does the work, and the worker's own
 * credentials are never touched. READ and WRITE through the descriptor
 * cache stay on the worker (the descriptor was opened, and its permission
 * checked, by the same identity: fdcache.c).
 *
 * Normal operation: nfs3_proc.c computes the identity with
 * fs_cred_of_call() and runs the procedure through fs_as_caller(), which
 * calls fs_cred_enter() on the agent before it and fs_cred_leave() after. The identity is the AUTH_SYS uid, gid and gids, with root
 * squashing: uid 0 becomes the anonymous uid, gid 0 (also in the group
 * list) the anonymous gid, unless the export was started with
 * --no-root-squash. AUTH_NONE (and any other flavor) is anonymous. Each
 * thread remembers what it set last, so a stream of requests from one user
 * costs one setfsuid() at the start and one at the end of each request
 * (fsuid 0 between requests: the transport code never runs as a client).
 *
 * Handles are resolved with the server's privilege (fs_priv_begin/end:
 * open_by_handle_at needs CAP_DAC_READ_SEARCH, which the kernel removes
 * from the effective set while fsuid is not 0, and restores when it goes
 * back to 0), as on knfsd a handle gives access without search permission
 * on the directories above the object; everything after that runs as the
 * caller.
 *
 * Not root: a server started by an ordinary user cannot change identity;
 * fs_cred_init() notices and every request runs as that user (the
 * start-up line says so). fs_cred_enter() still records the squashed
 * identity (fs_cred_current), and attr.c and nfs3_proc.c make the decisions
 * the kernel would have made (chown, set-ID bits, devices, ACCESS) for that
 * identity, never for the raw AUTH_SYS uid: a squashed root is the
 * anonymous user there too.
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/fs/fs.h"

static _Thread_local struct {
	bool set;          /* something other than the server's identity is set */
	uint32_t fsuid;    /* what the thread's fsuid is now */
	struct fs_cred cur;
	bool have_cur;     /* cur holds the fsgid and groups in force */
	unsigned priv;     /* nesting of fs_priv_begin */
	uint32_t saved_fsuid;
} tl;

void fs_cred_init(struct fs_export *ex)
{
	ex->as_caller = geteuid() == 0;
	if (!ex->anon_uid)
		ex->anon_uid = 65534;
	if (!ex->anon_gid)
		ex->anon_gid = 65534;
}

static uint64_t digest(const struct fs_cred *c)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t v[3 + RRR_RPC_AUTH_SYS_MAX_GIDS] = {c->uid, c->gid, c->ngids};
	for (uint32_t i = 0; i < c->ngids; i++)
		v[3 + i] = c->gids[i];
	for (uint32_t i = 0; i < 3 + c->ngids; i++) {
		h ^= v[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

void fs_cred_of_call(const struct fs_export *ex, const struct rrr_rpc_call *call,
		     struct fs_cred *c)
{
	memset(c, 0, sizeof(*c));
	c->uid = ex->anon_uid;
	c->gid = ex->anon_gid;
	if (call && call->cred.flavor == RRR_AUTH_SYS) {
		const struct rrr_auth_sys *s = &call->cred.sys;
		bool squash = !ex->no_root_squash;
		c->uid = squash && s->uid == 0 ? ex->anon_uid : s->uid;
		c->gid = squash && s->gid == 0 ? ex->anon_gid : s->gid;
		uint32_t n = s->ngids < RRR_RPC_AUTH_SYS_MAX_GIDS ? s->ngids
								  : RRR_RPC_AUTH_SYS_MAX_GIDS;
		for (uint32_t i = 0; i < n; i++)
			c->gids[i] = squash && s->gids[i] == 0 ? ex->anon_gid : s->gids[i];
		c->ngids = n;
	}
	c->who = digest(c);
}

int fs_cred_enter(const struct fs_export *ex, const struct fs_cred *c)
{
	if (!ex->as_caller) {
		tl.cur = *c;
		tl.have_cur = false;
		return 0;
	}
	if (!tl.have_cur || tl.cur.who != c->who || tl.cur.gid != c->gid ||
	    tl.cur.ngids != c->ngids || memcmp(tl.cur.gids, c->gids, c->ngids * sizeof(c->gids[0]))) {
		if (tl.fsuid != 0) {
			setfsuid(0);
			tl.fsuid = 0;
		}
		gid_t g[RRR_RPC_AUTH_SYS_MAX_GIDS];
		for (uint32_t i = 0; i < c->ngids; i++)
			g[i] = c->gids[i];
		/* the raw system call: per thread (glibc's wrapper is per process) */
		if (syscall(SYS_setgroups, (size_t)c->ngids, g) < 0) {
			tl.have_cur = false;
			return -errno;
		}
		setfsgid(c->gid);
		if ((uint32_t)setfsgid((gid_t)-1) != c->gid) {
			tl.have_cur = false;
			return -EPERM;
		}
		tl.cur = *c;
		tl.have_cur = true;
	}
	if (tl.fsuid != c->uid) {
		setfsuid(c->uid);
		if ((uint32_t)setfsuid((uid_t)-1) != c->uid)
			return -EPERM;
		tl.fsuid = c->uid;
	}
	tl.set = true;
	return 0;
}

void fs_cred_leave(void)
{
	if (tl.set && tl.fsuid != 0) {
		setfsuid(0);
		tl.fsuid = 0;
	}
	tl.set = false;
}

void fs_priv_begin(void)
{
	if (tl.priv++ == 0) {
		tl.saved_fsuid = tl.fsuid;
		if (tl.fsuid != 0) {
			setfsuid(0);
			tl.fsuid = 0;
		}
	}
}

void fs_priv_end(void)
{
	if (tl.priv && --tl.priv == 0 && tl.saved_fsuid != tl.fsuid) {
		setfsuid(tl.saved_fsuid);
		tl.fsuid = tl.saved_fsuid;
	}
}

const struct fs_cred *fs_cred_current(void)
{
	return &tl.cur;
}

/* ------------------------------------------------------------ agents */
struct fs_agent {
	pthread_t thread;
	sem_t go, done;
	bool quit;
	const struct fs_export *ex;
	const struct fs_cred *cred;
	void (*fn)(void *);
	void *arg;
	int rc;
};

static pthread_key_t agent_key;
static pthread_once_t agent_once = PTHREAD_ONCE_INIT;
static _Thread_local struct fs_agent *my_agent;

static void *agent_main(void *p)
{
	struct fs_agent *a = p;
	for (;;) {
		while (sem_wait(&a->go) < 0 && errno == EINTR)
			;
		if (a->quit)
			break;
		a->rc = fs_cred_enter(a->ex, a->cred);
		if (a->rc == 0)
			a->fn(a->arg);
		fs_cred_leave();
		sem_post(&a->done);
	}
	return NULL;
}

/* The worker thread ends: stop its agent. */
static void agent_stop(void *p)
{
	struct fs_agent *a = p;
	a->quit = true;
	sem_post(&a->go);
	pthread_join(a->thread, NULL);
	sem_destroy(&a->go);
	sem_destroy(&a->done);
	free(a);
}

static void agent_key_init(void)
{
	(void)pthread_key_create(&agent_key, agent_stop);
}

static struct fs_agent *agent_get(void)
{
	if (my_agent)
		return my_agent;
	pthread_once(&agent_once, agent_key_init);
	struct fs_agent *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	if (sem_init(&a->go, 0, 0) < 0 || sem_init(&a->done, 0, 0) < 0) {
		free(a);
		return NULL;
	}
	if (pthread_create(&a->thread, NULL, agent_main, a) != 0) {
		sem_destroy(&a->go);
		sem_destroy(&a->done);
		free(a);
		return NULL;
	}
	(void)pthread_setname_np(a->thread, "rrr-fs-agent");
	(void)pthread_setspecific(agent_key, a);
	my_agent = a;
	return a;
}

int fs_as_caller(const struct fs_export *ex, const struct fs_cred *c, void (*fn)(void *),
		 void *arg)
{
	if (!ex->as_caller) {
		int rc = fs_cred_enter(ex, c); /* records the identity only */
		fn(arg);
		return rc;
	}
	struct fs_agent *a = agent_get();
	if (!a)
		return -ENOMEM;
	a->ex = ex;
	a->cred = c;
	a->fn = fn;
	a->arg = arg;
	sem_post(&a->go);
	while (sem_wait(&a->done) < 0 && errno == EINTR)
		;
	return a->rc;
}
