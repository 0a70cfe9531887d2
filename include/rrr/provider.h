/* SPDX-License-Identifier: MIT */
/*
 * rrr/provider.h - the small verbs-like interface every provider implements.
 *
 * Two providers exist: "soft" (user-space iWARP over TCP: MPA/DDP/RDMAP) and
 * "verbs" (libibverbs + librdmacm). Callers pick one by name at run time
 * with rrr_device_open(). Everything above this interface (registration
 * engine, RPC-over-RDMA, client/server) is provider-agnostic.
 *
 * Object model (as in verbs):
 *   device -> pd -> mr (long-lived local, or fast-registration)
 *   device -> cq (poll + fd for epoll)
 *   device -> cm (event fd) -> cm_id (listen / connection) -> qp
 *
 * Errors: every function returns 0 (or a count) on success and a negative
 * errno on failure. Unsupported operations return -EOPNOTSUPP.
 *
 * Threading: one object may be used from several threads only where a
 * function says so. rrr_qp_post_send/post_recv on one QP and rrr_cq_poll on
 * one CQ are each serialised by the caller (the RPC layer owns a QP from a
 * single thread at a time), exactly like verbs without a lock.
 *
 * Memory registrations and the handle (STag / rkey) format: a 32-bit handle
 * is a 24-bit index and an 8-bit key (low byte). Fast-registration MRs
 * rotate the key on every rrr_mr_map_sg(), so a stale handle of a previous
 * registration of the same MR does not match (until the 8-bit key wraps
 * after 256 registrations of that MR).
 *
 * Fast registration lifecycle of one MR (FRWR style):
 *   INVALID --rrr_mr_map_sg()--> MAPPED (new key; iova/length set)
 *   MAPPED  --REG_MR WR completes--> VALID (remote peer may access)
 *   VALID   --LOCAL_INV WR completes, or peer's SEND_WITH_INV--> INVALID
 *   any     --QP error / flush--> must be re-mapped; see rrr_mr_recover()
 * Providers that register synchronously (verbs reg_mr strategy) may make the
 * registration valid at map time; the contract to callers is only that it is
 * valid no later than the REG_MR WR completes and invalid no later than the
 * LOCAL_INV WR (or remote invalidation) completes.
 */
#ifndef RRR_PROVIDER_H
#define RRR_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rrr/log.h>
#include <rrr/wait.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

struct rrr_device;
struct rrr_pd;
struct rrr_cq;
struct rrr_qp;
struct rrr_mr;
struct rrr_cm;
struct rrr_cm_id;

/* Maximum private data carried by connect/accept/reject (MPA allows 512). */
#define RRR_CM_MAX_PRIVATE_DATA 196

/* How a registration may map a scatterlist; the registration engine splits
 * the list into segments where the model says there is a hole. */
enum rrr_map_model {
	/* FRWR page list: entries after the first must start on a page
	 * boundary and entries before the last must end on one. */
	RRR_MAP_PAGE_LIST = 0,
	/* One virtually contiguous range (memory windows, reg_mr): any
	 * virtual discontinuity between entries is a hole. */
	RRR_MAP_VIRT_CONTIG = 1,
	/* Arbitrary gaps allowed (SG_GAPS-like): one registration maps the
	 * whole list, up to max_fr_pages pages/entries. */
	RRR_MAP_SG_GAPS = 2,
};

struct rrr_device_attr {
	char provider[16];           /* "soft" or "verbs" */
	char name[64];               /* device name (e.g. "soft0", "rxe0") */
	char strategy[32];           /* registration strategy in use */
	uint32_t page_size;          /* registration page size (4096) */
	uint32_t max_fr_pages;       /* max page-list depth per registration */
	uint32_t max_sge;            /* max SGEs per send/recv WR */
	uint32_t max_qp_wr;          /* max WRs per queue */
	uint32_t max_private_data;   /* bytes of CM private data */
	enum rrr_map_model map_model;
	bool sg_gaps;                /* == (map_model == RRR_MAP_SG_GAPS) */
	bool send_with_inv;          /* SEND_WITH_INV usable (and not opted out) */
	bool read_sink_remote_write; /* RDMA READ sink needs REMOTE_WRITE (iWARP) */
	bool safe;                   /* strategy protects: false for "persistent" */
};

/*
 * rrr_device_open - open a device of provider @provider ("soft" or "verbs").
 * @opts: NULL or a comma-separated "key=value" list, provider specific, e.g.
 *        soft:  "crc=1,progress_thread=0,mulpdu=16384,max_fr_pages=256"
 *        verbs: "dev=rxe0,strategy=mw|regmr|umr|persistent,remote_inv=0"
 *        Unknown keys fail with -EINVAL (and a message on stderr naming it).
 * Errors: -ENOENT unknown provider; -ENODEV no such device (verbs: "no RDMA
 * device"); -EINVAL bad option. May block (device probing).
 */
int rrr_device_open(const char *provider, const char *opts, struct rrr_device **out);
/* Close; every object created from the device must be destroyed first. */
void rrr_device_close(struct rrr_device *dev);
int rrr_device_query(struct rrr_device *dev, struct rrr_device_attr *attr);
/* Comma-separated names of compiled-in providers, e.g. "soft,verbs". */
const char *rrr_provider_names(void);
/* rrr_last_error() (the sentence of the last failure on this thread, e.g.
 * "rdma_cm could not resolve 10.0.2.15: No such device") is in <rrr/log.h>. */

/* --- protection domains --------------------------------------------------- */
/* Allocate a protection domain of @dev into *@out (owned by the caller, freed
 * with rrr_pd_free() before the device is closed). Errors: -EINVAL (NULL
 * argument), -ENOMEM, the provider's (a sentence in rrr_last_error()).
 * Thread-safe; does not block. */
int rrr_pd_alloc(struct rrr_device *dev, struct rrr_pd **out);
/* Free @pd (NULL: 0). -EBUSY while MRs or QPs still use it (then nothing is
 * freed). Does not block; no other call may use @pd at the same time. */
int rrr_pd_free(struct rrr_pd *pd);

/* --- completion queues ----------------------------------------------------- */
enum rrr_wc_status {
	RRR_WC_SUCCESS = 0,
	RRR_WC_LOC_LEN_ERR,
	RRR_WC_LOC_PROT_ERR,
	RRR_WC_WR_FLUSH_ERR,
	RRR_WC_MW_BIND_ERR,
	RRR_WC_REM_INV_REQ_ERR,
	RRR_WC_REM_ACCESS_ERR,
	RRR_WC_REM_OP_ERR,
	RRR_WC_RETRY_EXC_ERR,
	RRR_WC_FATAL_ERR,
	RRR_WC_GENERAL_ERR,
};
enum rrr_wc_opcode {
	RRR_WC_SEND = 0,
	RRR_WC_RDMA_WRITE,
	RRR_WC_RDMA_READ,
	RRR_WC_REG_MR,
	RRR_WC_LOCAL_INV,
	RRR_WC_RECV = 128,
};
#define RRR_WC_WITH_INV 0x1u /* RECV: the sender invalidated invalidated_rkey */
#define RRR_WC_SOLICITED 0x2u

struct rrr_wc {
	uint64_t wr_id;
	enum rrr_wc_status status;
	enum rrr_wc_opcode opcode;
	uint32_t byte_len;          /* RECV: bytes received */
	uint32_t wc_flags;          /* RRR_WC_WITH_INV ... */
	uint32_t invalidated_rkey;  /* valid with RRR_WC_WITH_INV */
	struct rrr_qp *qp;
	uint32_t vendor_err;        /* provider detail (e.g. Terminate code) */
};
/* Name of a completion status ("RRR_WC_SUCCESS" ...): a static string,
 * never NULL (a placeholder for unknown values). Pure; never blocks. */
const char *rrr_wc_status_str(enum rrr_wc_status st);

/* Create a completion queue of @dev with room for @depth completions into
 * *@out (owned by the caller: rrr_cq_destroy()). The caller sizes it for
 * every work request that may complete before it polls (a full CQ is an
 * overrun: the QPs on it go to error). Errors: -EINVAL (NULL argument,
 * @depth 0 or above the provider's limit), -ENOMEM, the provider's (a
 * sentence in rrr_last_error()). Thread-safe; does not block. */
int rrr_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out);
/* Destroy @cq (NULL: 0) and its fd. -EBUSY while a QP still uses it (then
 * nothing is destroyed). No other call may use @cq at the same time; does
 * not block. */
int rrr_cq_destroy(struct rrr_cq *cq);
/* Poll up to @n completions into @wc. Returns the count (0 if none) or
 * -errno. For the soft provider polling also makes progress (reads sockets,
 * places data) unless the device runs a progress thread. Never blocks. */
int rrr_cq_poll(struct rrr_cq *cq, struct rrr_wc *wc, int n);
/* A file descriptor that becomes readable when completions may be pending
 * or progress is needed; put it in epoll (level-triggered). Owned by the CQ. */
int rrr_cq_fd(struct rrr_cq *cq);
/* After the fd was readable: consume the notification (never blocks). */
int rrr_cq_ack_event(struct rrr_cq *cq);
/* Request a notification for the next completion (like ibv_req_notify_cq:
 * completions already queued do not notify). Callers poll again after
 * arming to close the race, and sleep only when that poll found nothing: a
 * completion a poll returns may leave no event behind (the soft provider
 * writes none for completions its caller-driven progress step produced and
 * the same poll returned). Never blocks. */
int rrr_cq_arm(struct rrr_cq *cq);
/* Convenience: poll; if empty, wait on the fd up to @timeout_ms (-1 forever)
 * and poll again. MAY BLOCK. Returns count, 0 on timeout, or -errno. */
int rrr_cq_wait(struct rrr_cq *cq, struct rrr_wc *wc, int n, int timeout_ms);
/* rrr_cq_wait under a wait mode (rrr/wait.h): before sleeping, poll again
 * (yielding the CPU in between) for up to @spin_us (0: the default) when
 * @mode is RRR_WAIT_SPIN, or RRR_WAIT_ADAPTIVE and the previous wait on
 * this CQ ended within that budget. One waiting thread per CQ. MAY BLOCK.
 * Returns count, 0 on timeout, or -errno (-EINVAL for a bad mode). */
int rrr_cq_wait_mode(struct rrr_cq *cq, struct rrr_wc *wc, int n, int timeout_ms,
		     enum rrr_wait_mode mode, uint32_t spin_us);

/* --- memory ----------------------------------------------------------------- */
enum rrr_access {
	RRR_ACCESS_LOCAL_WRITE = 1u << 0,
	RRR_ACCESS_REMOTE_WRITE = 1u << 1,
	RRR_ACCESS_REMOTE_READ = 1u << 2,
};

/* One scatterlist entry: the data is at (char *)page + offset, @length bytes.
 * @page need not be page aligned (an iovec is {base, 0, len}). */
struct rrr_sg {
	void *page;
	uint32_t offset;
	uint32_t length;
};

/* Long-lived registration of [addr, addr+len) for local use as send/recv
 * buffers and RDMA sources/sinks, optionally with remote rights. MAY BLOCK. */
int rrr_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
	       struct rrr_mr **out);
/* Fast-registration MR able to map up to @max_pages pages. MAY BLOCK. */
int rrr_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out);
/* Destroy either kind; -EBUSY if a fast-reg MR is still VALID/MAPPED on a
 * live QP (invalidate first). */
int rrr_mr_dereg(struct rrr_mr *mr);
uint32_t rrr_mr_lkey(const struct rrr_mr *mr);
/* Handle for the wire (rkey / STag), including the current key byte. */
uint32_t rrr_mr_rkey(const struct rrr_mr *mr);
/* Address of the first mapped byte (RFC 8166 segment "offset"). */
uint64_t rrr_mr_iova(const struct rrr_mr *mr);
uint64_t rrr_mr_length(const struct rrr_mr *mr);
/*
 * rrr_mr_map_sg - set the page list of a fast-registration MR.
 * Maps a prefix of @sg[0..nents) allowed by the device's map model and the
 * MR's max_pages, rotates the key, sets iova/length, and returns how many
 * entries were mapped (>= 1), or -errno (-EINVAL: MR not INVALID, or first
 * entry empty). A partially mapped entry is not possible: the returned count
 * covers whole entries. Zero-length entries are consumed and mapped nothing.
 * @access: rights granted when the REG_MR WR executes.
 */
int rrr_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access);
/* After a flush or QP error: return the MR to INVALID with a fresh key so no
 * old handle can match. The provider guarantees no remote access is possible
 * after this returns. MAY BLOCK. */
int rrr_mr_recover(struct rrr_mr *mr);

/* --- queue pairs and work requests ------------------------------------------ */
enum rrr_wr_opcode {
	RRR_WR_SEND = 0,
	RRR_WR_SEND_WITH_INV,
	RRR_WR_RDMA_WRITE,
	RRR_WR_RDMA_READ,
	RRR_WR_REG_MR,
	RRR_WR_LOCAL_INV,
};
enum rrr_send_flags {
	RRR_SEND_SIGNALED = 1u << 0,
	RRR_SEND_FENCE = 1u << 1,     /* wait for prior RDMA READs */
	RRR_SEND_SOLICITED = 1u << 2, /* Send with Solicited Event */
};

struct rrr_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct rrr_send_wr {
	struct rrr_send_wr *next;
	uint64_t wr_id;
	enum rrr_wr_opcode opcode;
	unsigned flags;
	struct rrr_sge *sg_list;
	uint32_t num_sge;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;              /* RDMA_WRITE, RDMA_READ */
		struct {
			uint32_t invalidate_rkey;
		} send;              /* SEND_WITH_INV */
		struct {
			struct rrr_mr *mr;
			unsigned access;
		} reg;               /* REG_MR: uses the MR's mapped list and key */
		struct {
			uint32_t rkey;
		} inv;               /* LOCAL_INV */
	} u;
};

struct rrr_recv_wr {
	struct rrr_recv_wr *next;
	uint64_t wr_id;
	struct rrr_sge *sg_list;
	uint32_t num_sge;
};

struct rrr_qp_init_attr {
	struct rrr_pd *pd;
	struct rrr_cq *send_cq;
	struct rrr_cq *recv_cq;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_rd_atomic;      /* outstanding RDMA READs (ORD/IRD) */
	void *ctx;                   /* returned by rrr_qp_ctx() */
};

/* Create the QP of a connection id (before connect / accept). MAY BLOCK. */
int rrr_qp_create(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr,
		  struct rrr_qp **out);
/* Destroy; outstanding WRs are flushed first. MAY BLOCK. */
int rrr_qp_destroy(struct rrr_qp *qp);
void *rrr_qp_ctx(const struct rrr_qp *qp);
/* Post a chain. On error *bad points to the first WR not posted and no WR
 * from it on was posted. Completions are delivered in posting order
 * (RC semantics). Never blocks. */
int rrr_qp_post_send(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad);
int rrr_qp_post_recv(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad);

/* --- connection management ---------------------------------------------------- */
enum rrr_cm_event_type {
	RRR_CM_EVENT_RESOLVED = 1,        /* address+route resolved: create the QP */
	RRR_CM_EVENT_CONNECT_REQUEST,     /* on a listener: ev.id is the new id */
	RRR_CM_EVENT_ESTABLISHED,
	RRR_CM_EVENT_REJECTED,            /* private data of the reject, if any */
	RRR_CM_EVENT_UNREACHABLE,         /* resolve/connect failed: ev.status */
	RRR_CM_EVENT_DISCONNECTED,
	RRR_CM_EVENT_DEVICE_REMOVAL,
};

struct rrr_cm_event {
	enum rrr_cm_event_type type;
	struct rrr_cm_id *id;             /* connection the event is about */
	struct rrr_cm_id *listen_id;      /* CONNECT_REQUEST: the listener */
	int status;                       /* 0 or -errno */
	uint32_t private_data_len;
	uint8_t private_data[RRR_CM_MAX_PRIVATE_DATA];
	uint32_t ird, ord;                /* peer's values (CONNECT_REQUEST/ESTABLISHED) */
};

struct rrr_conn_param {
	const void *private_data;
	uint32_t private_data_len;        /* <= RRR_CM_MAX_PRIVATE_DATA */
	uint32_t ird;                     /* responder resources */
	uint32_t ord;                     /* initiator depth */
};

/* Name of a CM event type ("RRR_CM_EVENT_ESTABLISHED" ...): a static
 * string, never NULL. Pure; never blocks. */
const char *rrr_cm_event_str(enum rrr_cm_event_type t);

/* Create a connection manager of @dev into *@out (owned by the caller:
 * rrr_cm_destroy()): the event channel of its cm ids, with an fd for epoll
 * (rrr_cm_fd()). Errors: -EINVAL (NULL argument), -ENOMEM, the provider's
 * (a sentence in rrr_last_error()). Thread-safe; does not block. */
int rrr_cm_create(struct rrr_device *dev, struct rrr_cm **out);
/* Destroy @cm (NULL is ignored) and its pending events; its cm ids must be
 * destroyed first. No other call may use @cm at the same time. May wait
 * for the provider's threads to let go of it (briefly). */
void rrr_cm_destroy(struct rrr_cm *cm);
/* Readable (level-triggered) when rrr_cm_get_event() has something. */
int rrr_cm_fd(struct rrr_cm *cm);
/* Non-blocking; -EAGAIN when no event is pending. */
int rrr_cm_get_event(struct rrr_cm *cm, struct rrr_cm_event *ev);
/* MAY BLOCK up to @timeout_ms for the next event; -ETIMEDOUT. */
int rrr_cm_wait_event(struct rrr_cm *cm, struct rrr_cm_event *ev, int timeout_ms);

/* Create a cm id (a listener or one connection) on @cm into *@out, owned
 * by the caller (rrr_cm_id_destroy()); @ctx is the caller's, returned by
 * rrr_cm_id_ctx() and in its events, never touched by the library.
 * Errors: -EINVAL (NULL argument), -ENOMEM, the provider's. Thread-safe;
 * does not block. */
int rrr_cm_id_create(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out);
/* Destroys the id (and disconnects it if needed); its QP must be destroyed first. */
void rrr_cm_id_destroy(struct rrr_cm_id *id);
/* The caller's context of @id (rrr_cm_id_create(), rrr_cm_id_set_ctx();
 * for an id a listener accepted, NULL until set), and its QP (NULL before
 * rrr_qp_create()). Plain field accesses: never fail or block; the caller
 * serialises a set with the reads. */
void *rrr_cm_id_ctx(const struct rrr_cm_id *id);
void rrr_cm_id_set_ctx(struct rrr_cm_id *id, void *ctx);
struct rrr_qp *rrr_cm_id_qp(const struct rrr_cm_id *id);
/* Peer and local addresses of a connected id. */
int rrr_cm_id_peer_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
int rrr_cm_id_local_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);

/* Bind and listen (port 0 = ephemeral; read it back with local_addr). */
int rrr_cm_listen(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len,
		  int backlog);
/* The local address (and port) a connection id connects from, before
 * rrr_cm_resolve(): a wish, not a requirement - when it is taken (a port
 * still in use), the connect picks one as without it. A client that
 * reconnects from its previous port lets the server know it as the same
 * client (a duplicate request cache keys on address and port, like Linux
 * nfsd's). Errors: -EINVAL (NULL or oversized address, or an id that is
 * resolved, connecting or listening), -EOPNOTSUPP (a provider without
 * it). Does not block. */
int rrr_cm_set_source(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len);
/* Start resolving @dst; RESOLVED or UNREACHABLE follows. */
int rrr_cm_resolve(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len,
		   int timeout_ms);
/* Connect a resolved id whose QP exists; ESTABLISHED, REJECTED or UNREACHABLE. */
int rrr_cm_connect(struct rrr_cm_id *id, const struct rrr_conn_param *param);
/* Accept a CONNECT_REQUEST id whose QP exists; ESTABLISHED follows. */
int rrr_cm_accept(struct rrr_cm_id *id, const struct rrr_conn_param *param);
int rrr_cm_reject(struct rrr_cm_id *id, const void *private_data, uint32_t len);
/* Start an orderly disconnect; DISCONNECTED follows; the QP moves to error
 * and its outstanding WRs complete with RRR_WC_WR_FLUSH_ERR. */
int rrr_cm_disconnect(struct rrr_cm_id *id);

/*
 * Limits on passive connection set-up (connections a listener accepted
 * whose set-up - on soft: the MPA Request, and after rrr_cm_accept() the
 * initiator's ready-to-receive message - is not finished). A connection
 * that does not finish set-up within setup_timeout_ms is closed (before
 * CONNECT_REQUEST: silently; after rrr_cm_accept(): UNREACHABLE with
 * -ETIMEDOUT). At most max_setup connections are in set-up at once: a new
 * one pushes out the oldest that has not sent its Request yet, so a flood
 * of stalled connections cannot keep a well-behaved peer out. When the
 * process runs out of file descriptors, a pending connection is accepted
 * and closed at once (shed) instead of staying in the backlog.
 */
struct rrr_cm_limits {
	uint32_t setup_timeout_ms; /* default RRR_CM_SETUP_TIMEOUT_MS; 0: keep */
	uint32_t max_setup;	   /* default RRR_CM_MAX_SETUP; 0: keep */
	/* Admission by address (NULL: keep; soft only): called right after
	 * accept() with the peer's address; false closes the connection at
	 * once, before its MPA Request is read (counted as
	 * RRR_CM_REFUSED_ADDRESS, logged). Runs on the thread that calls
	 * rrr_cm_get_event(); must not block. */
	bool (*admit)(void *ctx, const struct sockaddr_storage *peer);
	void *admit_ctx;
};
#define RRR_CM_SETUP_TIMEOUT_MS 10000u
#define RRR_CM_MAX_SETUP	256u

/*
 * Why a connection was refused or dropped during set-up (soft: MPA,
 * RFC 5044/6581). Each refusal is counted under one reason and logged
 * (RRR_LOG_WARN, at most one line per reason and second, with the count
 * of the lines held back); an initiator's rrr_last_error() names the
 * reason too. Timeouts and limits are counted in the fields above them.
 */
enum rrr_cm_refusal {
	RRR_CM_REFUSED_REVISION = 0, /* MPA revision other than 1 or 2 */
	RRR_CM_REFUSED_RTR,          /* peer-to-peer: no usable ready-to-receive message */
	RRR_CM_REFUSED_CRC,          /* CRC32c could not be agreed */
	RRR_CM_REFUSED_MARKERS,      /* MPA markers asked for (not supported) */
	RRR_CM_REFUSED_PRIVATE_DATA, /* private data too long or IRD/ORD words missing */
	RRR_CM_REFUSED_PROTOCOL,     /* not an MPA frame (bad key), closed or reset mid set-up */
	RRR_CM_REFUSED_APP,          /* the application rejected it (rrr_cm_reject) */
	RRR_CM_REFUSED_ADDRESS,      /* its address is not admitted (rrr_cm_limits.admit) */
	RRR_CM_REFUSED_NREASONS
};
/* "revision", "rtr", "crc", "markers", "private_data", "protocol", "app",
 * "address"; "?" otherwise. */
const char *rrr_cm_refusal_name(enum rrr_cm_refusal r);

struct rrr_cm_limit_stats {
	uint64_t setup_timeouts; /* closed: set-up not finished in time */
	uint64_t setup_evicted;	 /* closed: pushed out by a newer connection (max_setup) */
	uint64_t accept_shed;	 /* accepted and closed at once: out of file descriptors */
	uint32_t setup_now;	 /* connections in set-up now */
	uint64_t refused[RRR_CM_REFUSED_NREASONS]; /* refused in set-up, by reason */
};

/* Set @cm's set-up limits (every listener of @cm). -EOPNOTSUPP where the
 * provider does not manage set-up itself (verbs: the kernel does). */
int rrr_cm_set_limits(struct rrr_cm *cm, const struct rrr_cm_limits *lim);
/* Counters of those limits; -EOPNOTSUPP as above. Thread-safe. */
int rrr_cm_limit_stats(struct rrr_cm *cm, struct rrr_cm_limit_stats *st);

/*
 * Fault injection of the soft provider (its fault_* options, see
 * docs/soft-provider.md): what was injected in this process, over every
 * soft device, since it started. All zero when no device injects.
 * Never blocks; thread-safe; counters only grow.
 */
struct rrr_soft_fault_stats {
	uint64_t points; /* fault points passed with injection on */
	uint64_t drops, delays, stalls;
};
/* Copy the process-wide fault injection totals into *@st (the caller's). */
void rrr_soft_fault_totals(struct rrr_soft_fault_stats *st);

/* Resolve "host" and "port" strings into a sockaddr (numeric or name). */
int rrr_addr_parse(const char *host, const char *port, struct sockaddr_storage *ss,
		   socklen_t *len);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif /* RRR_PROVIDER_H */
