/* SPDX-License-Identifier: MIT */
/*
 * client/clnt_group.c - progress threads shared by many clients
 * (rrr_clnt_group_create, opts.group).
 *
 * Normal operation. Without a group each client has a progress thread of
 * its own, asleep in epoll on the client's set (its eventfd and transport
 * fds, clnt.c). A program with hundreds of connections then has hundreds
 * of threads, and every call costs a context switch. A group thread holds
 * many clients instead: each member's transport fds (CQ and CM, or its
 * socket) are in the thread's own set, their data the member's slot and
 * the fd's tag (rrr__clnt_watch, clnt.c), so one epoll_wait says which fds
 * of which clients are ready, and the thread runs their progress rounds
 * one after another (rrr__clnt_round_begin/_end: the code a client's own
 * thread runs, given the fd that was ready, or none when the member runs
 * for a kick or its due time: the set is level-triggered, so an fd still
 * ready is named again by the next wait). A member's own epoll set and
 * eventfd are not used while it is in the group: no second epoll level,
 * and no epoll_wait per member.
 * A round also says when the client wants to be looked at again (its
 * nearest call deadline, a reconnect, the 200 ms tick; now, when it found
 * more work): those due times live in a binary min-heap of slots, so a
 * pass costs its ready and expired members and a log(N) re-key each,
 * never a scan of all members.
 *
 *   rrr_clnt_create (any thread)         group thread
 *   ----------------------------         ------------
 *   connect; take a slot (t->lock);      pass: take the pending slots into
 *   move c's fds to t->ep; queue the       the heap (due now); wait on t->ep
 *   slot as pending; write t->wakefd       (until the heap's top is due);
 *                                          run each ready member, then each
 *                                          expired one; re-key each
 *
 * Ownership. Slots live in chunks that never move (a joining thread adds
 * a chunk under t->lock; the pointer is published with a release store),
 * so the group thread reads them without the lock. A slot's client
 * pointer is written by the joiner before it is queued; everything else
 * of a slot (due time, heap position) and the heap belong to the group
 * thread. An event for a slot the thread has not taken in yet, or has let
 * go of in this pass, is skipped (the slot is not in the heap); let-go
 * slots return to the free list only at the start of the next pass, after
 * every event of the batch that named them.
 *
 * Leaving. rrr_clnt_destroy() sets the client's stopping flag and wakes
 * it; its next round returns STOP, the thread runs the last round
 * (rrr__clnt_round_stop: calls fail with -ECANCELED, the transport
 * closes), takes the client's set out of its own, and sets group_left
 * under the client's lock; it never touches the client again, and
 * destroy, which waits for that, frees it. A destroy called on the group
 * thread itself (a callback of another member) does all that there and
 * then (rrr__clnt_group_leave_here), since waiting would wait for itself.
 *
 * Bounds: a thread holds up to GROUP_SLOTS_MAX clients (slots cost 32
 * bytes each, in chunks of 256); the group's threads are fixed at create.
 *
 * Recovery: none of its own: a client's connection losses are its own
 * rounds' business (clnt.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rrr/client.h>

#include "client/clnt_impl.h"
#include "common/rrr_impl.h"

#define GROUP_THREADS_MAX 64u
#define CHUNK_SLOTS	  256u
#define GROUP_CHUNKS	  1024u /* slots per thread: CHUNK_SLOTS x this */
#define GROUP_SLOTS_MAX	  (CHUNK_SLOTS * GROUP_CHUNKS)
#define NO_POS		  UINT32_MAX
#define WAKE_TAG	  UINT64_MAX
#define GROUP_TICK_MS	  200

struct slot {
	struct rrr_clnt *c; /* set by the joiner before the slot is queued */
	uint64_t due_ns;    /* group thread only, like pos */
	uint32_t pos;	    /* index in the heap, NO_POS while not in it */
	uint32_t next;	    /* free / pending / let-go lists (t->lock) */
	uint32_t knext;	    /* kick list (t->lock) */
	bool waiting;	    /* between the halves of a round (group thread) */
	bool gone;	    /* let go of; its client may be freed (group thread) */
};

struct chunk {
	struct slot s[CHUNK_SLOTS];
	uint32_t heap[CHUNK_SLOTS]; /* heap positions of this chunk's range */
};

struct rrr__clnt_gthread {
	struct rrr_clnt_group *g;
	pthread_t thread;
	bool started;
	int ep, wakefd;
	struct rrr__waiter waiter;
	_Atomic(struct chunk *) chunks[GROUP_CHUNKS];
	atomic_uint nmembers;
	/* t->lock: */
	pthread_mutex_t lock;
	uint32_t nslots;		   /* slots made */
	uint32_t free_head, pending_head, gone_head;
	uint32_t kick_head; /* members asked to run (rrr__clnt_group_kick) */
	bool stop;
	/* the kick handshake (rrr__clnt_group_kick): a kicker sets kicks,
	 * then writes wakefd only if the thread is sleeping; the thread sets
	 * sleeping, then waits without a timeout only if kicks is clear */
	atomic_bool kicks, sleeping;
	/* group thread only: */
	uint32_t nheap;
};

struct rrr_clnt_group {
	unsigned nthreads;
	struct rrr__clnt_gthread t[];
};

/* The group thread running on this thread, NULL elsewhere. */
static _Thread_local struct rrr__clnt_gthread *tls_gthread;

static struct slot *slot_of(struct rrr__clnt_gthread *t, uint32_t s)
{
	struct chunk *ch = atomic_load_explicit(&t->chunks[s / CHUNK_SLOTS], memory_order_acquire);

	return ch ? &ch->s[s % CHUNK_SLOTS] : NULL;
}

static uint32_t *heap_at(struct rrr__clnt_gthread *t, uint32_t k)
{
	struct chunk *ch = atomic_load_explicit(&t->chunks[k / CHUNK_SLOTS], memory_order_acquire);

	return &ch->heap[k % CHUNK_SLOTS];
}

/* --- the heap of due times (group thread only) ----------------------------- */

static uint64_t due_at(struct rrr__clnt_gthread *t, uint32_t k)
{
	return slot_of(t, *heap_at(t, k))->due_ns;
}

static void heap_set(struct rrr__clnt_gthread *t, uint32_t k, uint32_t s)
{
	*heap_at(t, k) = s;
	slot_of(t, s)->pos = k;
}

static void heap_fix(struct rrr__clnt_gthread *t, uint32_t k)
{
	uint32_t s = *heap_at(t, k);
	uint64_t d = slot_of(t, s)->due_ns;

	while (k > 0 && due_at(t, (k - 1) / 2) > d) {
		heap_set(t, k, *heap_at(t, (k - 1) / 2));
		k = (k - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * k + 1, m = l;

		if (l >= t->nheap)
			break;
		if (l + 1 < t->nheap && due_at(t, l + 1) < due_at(t, l))
			m = l + 1;
		if (due_at(t, m) >= d)
			break;
		heap_set(t, k, *heap_at(t, m));
		k = m;
	}
	heap_set(t, k, s);
}

static void heap_add(struct rrr__clnt_gthread *t, uint32_t s, uint64_t due)
{
	slot_of(t, s)->due_ns = due;
	heap_set(t, t->nheap++, s);
	heap_fix(t, t->nheap - 1);
}

static void heap_del(struct rrr__clnt_gthread *t, uint32_t s)
{
	struct slot *sl = slot_of(t, s);
	uint32_t k = sl->pos, last = *heap_at(t, --t->nheap);

	sl->pos = NO_POS;
	if (k == t->nheap)
		return;
	heap_set(t, k, last);
	heap_fix(t, k);
}

static void rekey(struct rrr__clnt_gthread *t, uint32_t s, uint64_t due)
{
	slot_of(t, s)->due_ns = due;
	heap_fix(t, slot_of(t, s)->pos);
}

/* --- the thread ------------------------------------------------------------ */

/* Let go of @c in slot @s (group thread): out of the heap (or the pending
 * list), out of the epoll set, its last round run, the slot back to the
 * free list after this pass; rrr_clnt_destroy() may free @c afterwards. */
static void let_go(struct rrr__clnt_gthread *t, uint32_t s, struct rrr_clnt *c)
{
	struct slot *sl = slot_of(t, s);

	pthread_mutex_lock(&t->lock);
	/* off the kick list: a slot is given to a new client at the next
	 * pass, and a kick of that client must not find it there twice */
	for (uint32_t *pp = &t->kick_head; *pp != NO_POS; pp = &slot_of(t, *pp)->knext)
		if (*pp == s) {
			*pp = sl->knext;
			break;
		}
	if (sl->pos == NO_POS) {
		/* not taken in yet: still on the pending list */
		for (uint32_t *pp = &t->pending_head; *pp != NO_POS; pp = &slot_of(t, *pp)->next)
			if (*pp == s) {
				*pp = sl->next;
				break;
			}
	}
	pthread_mutex_unlock(&t->lock);
	if (sl->pos != NO_POS)
		heap_del(t, s);
	sl->gone = true;
	for (unsigned i = 0; i < c->nwatch; i++)
		(void)epoll_ctl(t->ep, EPOLL_CTL_DEL, c->watch[i].fd, NULL);
	c->gdirect = false; /* what its last round unwatches is not in t->ep */
	rrr__clnt_round_stop(c);
	pthread_mutex_lock(&t->lock);
	sl->next = t->gone_head;
	t->gone_head = s;
	pthread_mutex_unlock(&t->lock);
	atomic_fetch_sub(&t->nmembers, 1);
	pthread_mutex_lock(&c->lock);
	c->group_left = true; /* destroy may free it from here on */
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* The member in slot @s (in the heap) is ready (its fd @ev, tagged) or due
 * or kicked (@ev NULL): finish the round it waits in, and begin the next,
 * which says when it wants to be looked at again. The same sequence as a
 * client's own thread, whose wait falls between the halves. */
static void run_member(struct rrr__clnt_gthread *t, uint32_t s, const struct epoll_event *ev)
{
	struct slot *sl = slot_of(t, s);
	struct rrr_clnt *c = sl->c;
	int ms, st;

	if (sl->waiting)
		rrr__clnt_round_end(c, ev, ev ? 1 : 0);
	/* AGAIN at most 15 times in a row (clnt.c), then WAIT with 0 */
	while ((st = rrr__clnt_round_begin(c, &ms)) == RRR__CLNT_ROUND_AGAIN)
		;
	sl->waiting = st == RRR__CLNT_ROUND_WAIT;
	if (st == RRR__CLNT_ROUND_STOP) {
		let_go(t, s, c);
		return;
	}
	rrr__clnt_round_leave();
	rekey(t, s, rrr__clnt_now_ns() + (uint64_t)ms * 1000000ull);
}

/* Run the members on the kick list. A member's kicked flag is cleared
 * before its round, so a kick that comes during the round queues it again
 * (for the next pass, which then does not sleep). A let-go member is
 * skipped without touching its client, which may be freed by now; one not
 * taken in yet runs at the next pass's start anyway. */
static void run_kicked(struct rrr__clnt_gthread *t)
{
	uint32_t s, next;

	if (!atomic_load_explicit(&t->kicks, memory_order_relaxed))
		return;
	pthread_mutex_lock(&t->lock);
	s = t->kick_head;
	t->kick_head = NO_POS;
	atomic_store(&t->kicks, false);
	pthread_mutex_unlock(&t->lock);
	for (; s != NO_POS; s = next) {
		struct slot *sl = slot_of(t, s);

		next = sl->knext;
		if (sl->gone || !sl->c)
			continue;
		atomic_store(&sl->c->kicked, false);
		if (sl->pos != NO_POS)
			run_member(t, s, NULL);
	}
}

void rrr__clnt_group_kick(struct rrr_clnt *c)
{
	struct rrr__clnt_gthread *t = c->gthr;
	uint64_t one = 1;

	if (atomic_exchange(&c->kicked, true))
		return; /* on the list already, not yet run */
	pthread_mutex_lock(&t->lock);
	slot_of(t, c->gslot)->knext = t->kick_head;
	t->kick_head = c->gslot;
	atomic_store(&t->kicks, true);
	pthread_mutex_unlock(&t->lock);
	if (tls_gthread != t && atomic_load(&t->sleeping) &&
	    write(t->wakefd, &one, sizeof(one)) < 0) {
		/* counter full: the thread is awake anyway */
	}
}

/* Take pending members in, give let-go slots back; false once stopped. */
static bool pass_start(struct rrr__clnt_gthread *t, uint64_t now)
{
	uint32_t s, next;
	bool go_on;

	pthread_mutex_lock(&t->lock);
	for (s = t->pending_head; s != NO_POS; s = next) {
		next = slot_of(t, s)->next;
		slot_of(t, s)->waiting = false;
		heap_add(t, s, now);
	}
	t->pending_head = NO_POS;
	for (s = t->gone_head; s != NO_POS; s = next) {
		struct slot *sl = slot_of(t, s);

		next = sl->next;
		sl->c = NULL;
		sl->gone = false;
		sl->next = t->free_head;
		t->free_head = s;
	}
	t->gone_head = NO_POS;
	go_on = !t->stop;
	pthread_mutex_unlock(&t->lock);
	return go_on;
}

static void *gthread_main(void *arg)
{
	struct rrr__clnt_gthread *t = arg;
	struct epoll_event evs[64];

	tls_gthread = t;
	for (;;) {
		uint64_t now = rrr__clnt_now_ns();
		int timeout = GROUP_TICK_MS, n;

		if (!pass_start(t, now))
			break;
		if (t->nheap) {
			uint64_t d = due_at(t, 0);

			timeout = d <= now ? 0 : (int)((d - now + 999999ull) / 1000000ull);
			if (timeout > GROUP_TICK_MS)
				timeout = GROUP_TICK_MS;
		}
		atomic_store(&t->sleeping, true);
		if (atomic_load(&t->kicks))
			timeout = 0;
		n = rrr__wait_epoll(&t->waiter, t->ep, evs, 64, timeout);
		atomic_store(&t->sleeping, false);
		now = rrr__clnt_now_ns();
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			struct slot *sl;

			if (tag == WAKE_TAG) {
				uint64_t v;

				if (read(t->wakefd, &v, sizeof(v)) < 0) {
					/* EAGAIN: already read */
				}
				continue;
			}
			/* not taken in yet, or let go of in this pass */
			sl = slot_of(t, (uint32_t)tag);
			if (sl && sl->pos != NO_POS) {
				struct epoll_event ev = {.events = evs[i].events,
							 .data.u32 = (uint32_t)(tag >> 32)};

				run_member(t, (uint32_t)tag, &ev);
			}
		}
		run_kicked(t);
		/* then the members whose time came (each run re-keys its
		 * member past @now, so this ends) */
		while (t->nheap && due_at(t, 0) <= now)
			run_member(t, *heap_at(t, 0), NULL);
	}
	return NULL;
}

/* --- joining and the public API ------------------------------------------- */

/* The event data of fd @tag of the member in slot @s: what gthread_main
 * splits again. */
static uint64_t ev_data(uint32_t s, uint32_t tag)
{
	return (uint64_t)tag << 32 | s;
}

/* Move @c's transport fds (every watched fd but its eventfd, tag 0) from
 * its own set into t->ep as slot @s: 0, or -errno with none moved. */
static int move_fds(struct rrr__clnt_gthread *t, struct rrr_clnt *c, uint32_t s)
{
	unsigned i;

	for (i = 0; i < c->nwatch; i++) {
		struct epoll_event ev = {.events = c->watch[i].events,
					 .data.u64 = ev_data(s, c->watch[i].tag)};

		if (c->watch[i].tag && epoll_ctl(t->ep, EPOLL_CTL_ADD, c->watch[i].fd, &ev) < 0)
			break;
	}
	if (i < c->nwatch) {
		int err = -errno;

		while (i-- > 0)
			if (c->watch[i].tag)
				(void)epoll_ctl(t->ep, EPOLL_CTL_DEL, c->watch[i].fd, NULL);
		return err;
	}
	for (i = 0; i < c->nwatch; i++)
		if (c->watch[i].tag)
			(void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->watch[i].fd, NULL);
	return 0;
}

int rrr__clnt_group_epfd(const struct rrr_clnt *c)
{
	return c->gthr->ep;
}

uint64_t rrr__clnt_group_data(const struct rrr_clnt *c, uint32_t tag)
{
	return ev_data(c->gslot, tag);
}

int rrr__clnt_group_join(struct rrr_clnt_group *g, struct rrr_clnt *c)
{
	struct rrr__clnt_gthread *t = &g->t[0];
	uint64_t one = 1;
	uint32_t s;
	int err;

	for (unsigned i = 1; i < g->nthreads; i++)
		if (atomic_load(&g->t[i].nmembers) < atomic_load(&t->nmembers))
			t = &g->t[i];
	pthread_mutex_lock(&t->lock);
	if (t->free_head == NO_POS) {
		struct chunk *ch;

		if (t->nslots >= GROUP_SLOTS_MAX) {
			pthread_mutex_unlock(&t->lock);
			return rrr__set_error(-ENOSPC, "rrr_clnt_create: the group thread holds %u "
						       "clients already: make a group with more threads",
					      GROUP_SLOTS_MAX);
		}
		ch = calloc(1, sizeof(*ch));
		if (!ch) {
			pthread_mutex_unlock(&t->lock);
			return rrr__set_error(-ENOMEM, "rrr_clnt_create: out of memory");
		}
		for (uint32_t i = CHUNK_SLOTS; i-- > 0;) {
			ch->s[i].pos = NO_POS;
			ch->s[i].next = t->free_head;
			t->free_head = t->nslots + i;
		}
		atomic_store_explicit(&t->chunks[t->nslots / CHUNK_SLOTS], ch,
				      memory_order_release);
		t->nslots += CHUNK_SLOTS;
	}
	s = t->free_head;
	err = move_fds(t, c, s);
	if (err) {
		pthread_mutex_unlock(&t->lock);
		return rrr__set_error(err, "rrr_clnt_create: cannot add the client to its group "
					   "thread's epoll set: %s", strerror(-err));
	}
	t->free_head = slot_of(t, s)->next;
	slot_of(t, s)->c = c;
	slot_of(t, s)->next = t->pending_head;
	t->pending_head = s;
	c->gthr = t;
	c->gslot = s;
	c->gdirect = true;
	atomic_fetch_add(&t->nmembers, 1);
	pthread_mutex_unlock(&t->lock);
	if (write(t->wakefd, &one, sizeof(one)) < 0) {
		/* counter full: the thread is awake anyway */
	}
	return 0;
}

bool rrr__clnt_group_here(const struct rrr_clnt *c)
{
	return tls_gthread && tls_gthread == c->gthr;
}

void rrr__clnt_group_leave_here(struct rrr_clnt *c)
{
	let_go(c->gthr, c->gslot, c);
}

static void gthread_fini(struct rrr__clnt_gthread *t)
{
	if (t->ep >= 0)
		close(t->ep);
	if (t->wakefd >= 0)
		close(t->wakefd);
	for (unsigned i = 0; i < GROUP_CHUNKS; i++)
		free(atomic_load(&t->chunks[i]));
	pthread_mutex_destroy(&t->lock);
}

static void group_stop(struct rrr_clnt_group *g)
{
	uint64_t one = 1;

	for (unsigned i = 0; i < g->nthreads; i++) {
		struct rrr__clnt_gthread *t = &g->t[i];

		pthread_mutex_lock(&t->lock);
		t->stop = true;
		pthread_mutex_unlock(&t->lock);
		if (t->started && write(t->wakefd, &one, sizeof(one)) < 0) {
			/* counter full: the thread is awake anyway */
		}
	}
	for (unsigned i = 0; i < g->nthreads; i++) {
		if (g->t[i].started)
			pthread_join(g->t[i].thread, NULL);
		gthread_fini(&g->t[i]);
	}
	free(g);
}

int rrr_clnt_group_create(unsigned nthreads, enum rrr_wait_mode mode,
			  struct rrr_clnt_group **out)
{
	struct rrr_clnt_group *g;
	int rc = 0;

	if (!out)
		return rrr__set_error(-EINVAL, "rrr_clnt_group_create: no place for the group (out)");
	*out = NULL;
	if (mode > RRR_WAIT_SPIN)
		return rrr__set_error(-EINVAL, "rrr_clnt_group_create: wait mode %d out of range",
				      (int)mode);
	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (unsigned)n : 1;
	}
	if (nthreads > GROUP_THREADS_MAX)
		nthreads = GROUP_THREADS_MAX;
	g = calloc(1, sizeof(*g) + nthreads * sizeof(g->t[0]));
	if (!g)
		return rrr__set_error(-ENOMEM, "rrr_clnt_group_create: out of memory");
	g->nthreads = nthreads;
	for (unsigned i = 0; i < nthreads; i++) {
		struct rrr__clnt_gthread *t = &g->t[i];

		t->g = g;
		t->ep = t->wakefd = -1;
		t->free_head = t->pending_head = t->gone_head = t->kick_head = NO_POS;
		atomic_init(&t->kicks, false);
		atomic_init(&t->sleeping, false);
		pthread_mutex_init(&t->lock, NULL);
		rrr__waiter_init(&t->waiter, mode, 0);
	}
	for (unsigned i = 0; i < nthreads; i++) {
		struct rrr__clnt_gthread *t = &g->t[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_TAG};

		t->ep = epoll_create1(EPOLL_CLOEXEC);
		t->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (t->ep < 0 || t->wakefd < 0 ||
		    epoll_ctl(t->ep, EPOLL_CTL_ADD, t->wakefd, &ev) < 0) {
			rc = rrr__set_error(-errno, "rrr_clnt_group_create: cannot create an epoll "
						    "set or eventfd: %s (raise ulimit -n?)",
					    strerror(errno));
			break;
		}
	}
	for (unsigned i = 0; !rc && i < nthreads; i++) {
		rc = -pthread_create(&g->t[i].thread, NULL, gthread_main, &g->t[i]);
		if (rc)
			rrr__set_error(rc, "rrr_clnt_group_create: cannot start a thread: %s",
				       strerror(-rc));
		else
			g->t[i].started = true;
	}
	if (rc) {
		group_stop(g);
		return rc;
	}
	*out = g;
	return 0;
}

int rrr_clnt_group_destroy(struct rrr_clnt_group *g)
{
	if (!g)
		return 0;
	for (unsigned i = 0; i < g->nthreads; i++) {
		if (tls_gthread == &g->t[i])
			return rrr__set_error(-EDEADLK, "rrr_clnt_group_destroy from a callback of "
							"one of its clients would wait for itself");
		if (atomic_load(&g->t[i].nmembers))
			return rrr__set_error(-EBUSY, "rrr_clnt_group_destroy: %u clients of the "
						      "group are alive: destroy them first",
					      atomic_load(&g->t[i].nmembers));
	}
	group_stop(g);
	return 0;
}
