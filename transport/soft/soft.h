/* SPDX-License-Identifier: MIT */
/*
 * transport/soft/soft.h - private structures of the soft (iWARP over TCP)
 * provider, shared by the files of transport/soft/ only.
 *
 * Files (one concern each; the MPA CRC32c is the library's rrr_crc32c(),
 * transport/crc32c.c), top to bottom: a file calls only files below it
 * (scripts/check-soft-layers.sh, run by make test, checks the objects):
 *   device.c    device open/options, PDs, the ops table
 *   cm.c        connection management over TCP (MPA setup, events), binds
 *               QPs to connection ids (rrr__soft_cm_qp_create/destroy)
 *   cm_limits.c set-up deadlines, caps, admission, refusal counting
 *   mr.c        memory registration ops (reg, alloc, map_sg, dereg, recover)
 *   qp.c        QP object, post_send/post_recv, attach/detach
 *   progress.c  who drives a QP: one step, rrr_cq_poll, the progress thread
 *   rx.c        receive engine (header checks, direct placement with readv)
 *   tx.c        transmit engine (FPDU building, writev, read responses),
 *               the QP's error state (rrr__soft_qp_fatal: drain, flush)
 *   qp_state.c  epoll membership, MULPDU, SQ completion, local key checks
 *   cq.c        completion queue ring and notification
 *   mpa.c       MPA Request/Reply frames (RFC 5044 + RFC 6581), RTR
 *               messages, every FPDU's trailer (pad, CRC make and check)
 *   ddp_rdmap.c DDP (RFC 5041) and RDMAP (RFC 5040) headers, Terminate codes
 *   stag.c      STag table, the access check + in-flight guard, invalidation
 *   fault.c     fault injection (fault_* options): drop, delay, stall
 * A lower file reports up through return values, or, for the one event
 * that must go up from under qp->lock (the QP's connection ended), the
 * hook qp->conn_lost that cm.c sets.
 *
 * Lock order (outer to inner):
 *   cq->prog_lock  ->  cm->lock  ->  qp->lock  ->  cq->lock, cm->evlock, dev->lock (leaves)
 * qp->lock is never held while taking cm->lock or a prog_lock; the one
 * prog_lock taken under cq->lock (rrr__soft_cq_poll) is a try-lock, which
 * cannot wait, so it adds no edge against this order. The progress
 * thread holds no lock across epoll_wait (see progress.c, rrr__soft_dev_quiesce).
 */
#ifndef RRR_TRANSPORT_SOFT_SOFT_H
#define RRR_TRANSPORT_SOFT_SOFT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rrr/crc32c.h>

#include "transport/provider_impl.h"

/* ------------------------------------------------------------ limits */
#define SOFT_MAX_STAGS (1u << 24)       /* the 24-bit index space of an STag */
#define SOFT_STAG_CHUNK_SHIFT 16u       /* the table grows 65,536 entries at a time */
#define SOFT_STAG_CHUNK (1u << SOFT_STAG_CHUNK_SHIFT)
#define SOFT_STAG_CHUNKS (SOFT_MAX_STAGS >> SOFT_STAG_CHUNK_SHIFT)
#define SOFT_MAX_QP_WR 4096u
#define SOFT_MAX_SGE 8u
#define SOFT_MAX_ORD 32u
#define SOFT_DEF_ORD 16u
#define SOFT_MAX_FR_PAGES_DEF 256u
#define SOFT_PL_SHIFT 12u         /* map_model=page_list: 4 KiB pages */
#define SOFT_PL_MASK ((UINT64_C(1) << SOFT_PL_SHIFT) - 1)
#define SOFT_MAX_FR_PAGES_MAX 65536u
#define SOFT_MULPDU_DEF 65520u          /* max ULPDU (DDP header + payload) */
#define SOFT_MULPDU_MIN 128u
#define SOFT_MULPDU_MAX 65535u
#define SOFT_MPA_PD_MAX 512u            /* MPA private data incl. IRD/ORD */
#define SOFT_PAY_IOV 64                 /* payload iovecs per readv/writev */
#define SOFT_RX_STAGE 16384             /* one read of queued small messages */
#define SOFT_RX_SMALL 8448              /* an FPDU this long or shorter is small:
					 * an 8 KiB inline message and headers */
#define SOFT_TX_BATCH 64                /* FPDUs per writev: most tx_batch= allows */
#define SOFT_TX_BATCH_DEF 32            /* default: 1-2 MiB of loopback FPDUs (32-64 KiB: the MSS) */
#define SOFT_MSS_REFRESH_NS 1000000ull /* MSS re-read before bulk messages, at most this often */
#define SOFT_TX_LEAD_DEF (256u << 10)   /* bytes per sendmsg of a message nothing waits behind */
#define SOFT_TX_LEAD_MAX (64u << 20)
#define SOFT_TX_BYTES_DEF (64u << 10)   /* bytes a batch is closed at (cache-sized; see tx.c batch_room) */
#define SOFT_TX_BYTES_MAX (64u << 20)
#define SOFT_TX_IOV (8 * (SOFT_PAY_IOV + 2)) /* iovecs per writev: <= IOV_MAX */

/* ------------------------------------------------------------ mpa.c */
#define SOFT_MPA_HDR 20u  /* key(16) + flags(1) + rev(1) + pd_len(2) */
#define SOFT_MPA_KEY_REQ "MPA ID Req Frame"
#define SOFT_MPA_KEY_REP "MPA ID Rep Frame"
#define SOFT_MPA_FLAG_M 0x80
#define SOFT_MPA_FLAG_C 0x40
#define SOFT_MPA_FLAG_R 0x20
#define SOFT_MPA_FLAG_H 0x10 /* RFC 6581: enhanced connection setup */
#define SOFT_MPA_IRD_P2P 0x8000u       /* I: peer-to-peer, an RTR message follows */
#define SOFT_MPA_IRD_RTR_SEND 0x4000u  /* zero-length Send as RTR */
#define SOFT_MPA_ORD_RTR_WRITE 0x8000u /* zero-length RDMA Write as RTR */
#define SOFT_MPA_ORD_RTR_READ 0x4000u  /* zero-length RDMA Read as RTR */
#define SOFT_MPA_IRDORD_MASK 0x3fffu

/* Ready-to-receive message types (RFC 6581), as a bit mask: a Request
 * offers several, a Reply chooses one. */
enum soft_rtr {
	SOFT_RTR_NONE = 0,
	SOFT_RTR_SEND = 1,
	SOFT_RTR_WRITE = 2,
	SOFT_RTR_READ = 4,
};
#define SOFT_MPA_RTR_MAX (SOFT_HDR_UNTAGGED + SOFT_READ_REQ_LEN + 4) /* longest RTR frame */

struct soft_mpa_rr {
	bool reply;            /* Rep frame (else Req) */
	bool crc, reject, markers;
	bool enhanced;         /* rev 2 with H: the IRD/ORD words are present */
	bool p2p;              /* enhanced: the I (peer-to-peer) bit */
	uint8_t rtr;           /* enhanced: RTR types offered (Req) or chosen (Rep) */
	uint8_t rev;
	uint16_t ird, ord;     /* enhanced */
	uint16_t ird_flags, ord_flags; /* the raw control bits of the two words */
	uint16_t pd_len;       /* user private data (after IRD/ORD) */
	uint16_t pd_wire;      /* PD_Length of the frame as received */
	uint8_t pd[SOFT_MPA_PD_MAX];
};

struct soft_read_req;

/* What one connection's set-up agreed (both roles). */
struct soft_mpa_neg {
	uint8_t rev;        /* 1 or 2: the revision of the Reply */
	bool enhanced;      /* IRD/ORD words exchanged */
	uint8_t rtr;        /* the one RTR message (enum soft_rtr), or NONE */
	bool crc;           /* CRC32c in every FPDU, both ways */
	bool hold_tx;       /* responder without RTR: send nothing before the first FPDU */
	uint16_t ird, ord;  /* the peer's, 0 when not exchanged */
};

/* Encode a frame into @buf (>= SOFT_MPA_HDR + SOFT_MPA_PD_MAX); returns length.
 * rr->rev == 1, or 2 without rr->enhanced: no IRD/ORD words, no H bit. */
size_t rrr__soft_mpa_encode(const struct soft_mpa_rr *rr, uint8_t *buf);
/* Parse the fixed header: sets total length needed in *total. -EPROTO bad
 * key, -EMSGSIZE PD_Length over SOFT_MPA_PD_MAX. */
int rrr__soft_mpa_parse_hdr(const uint8_t *buf, bool reply, size_t *total);
/* Parse a complete frame of @len bytes. -EPROTO/-EMSGSIZE on bad frames. */
int rrr__soft_mpa_parse(const uint8_t *buf, size_t len, bool reply, struct soft_mpa_rr *rr);
/*
 * Responder: decide the answer to the parsed Request @req (RFC 5044 and
 * RFC 6581; the table is in docs/soft-provider.md). @want_crc: this side
 * asks for CRC. 0 and *neg to accept, or -EPROTO with *reason (enum
 * rrr_cm_refusal) and *why (a static sentence) to refuse. Pure.
 */
int rrr__soft_mpa_answer(const struct soft_mpa_rr *req, bool want_crc, struct soft_mpa_neg *neg,
			 int *reason, const char **why);
/* Initiator: check the parsed Reply @rep against our Request @mine; as
 * rrr__soft_mpa_answer(). A reject is not checked here. Pure. */
int rrr__soft_mpa_check_reply(const struct soft_mpa_rr *mine, const struct soft_mpa_rr *rep,
			      struct soft_mpa_neg *neg, int *reason, const char **why);
/* Pad bytes after an FPDU whose ULPDU is @ulpdu_len bytes. */
static inline unsigned soft_mpa_pad(uint32_t ulpdu_len)
{
	return (4u - ((2u + ulpdu_len) & 3u)) & 3u;
}
/* The trailer of a transmitted FPDU into @trl (8 bytes): @pad zero bytes,
 * then the CRC field: with @crc the CRC32c of the @n iovecs @v (the MPA
 * length, header and payload) and the pad, least significant byte first;
 * zero without @crc. */
void rrr__soft_mpa_trailer(uint8_t *trl, unsigned pad, const struct iovec *v, int n, bool crc);
/* A received FPDU's CRC check: @crc is the CRC32c of its MPA length,
 * header and payload (summed as they are placed), @trl its trailer (@pad
 * bytes of pad, then the CRC field). True if the field matches. */
bool rrr__soft_mpa_trailer_ok(uint32_t crc, const uint8_t *trl, unsigned pad);
/* The RTR message of @type (one bit of enum soft_rtr) into @buf (>=
 * SOFT_MPA_RTR_MAX): zero-length Write (STag 0, TO 0), zero-length Send
 * (QN 0, MSN 1) or zero-length Read Request (QN 1, MSN 1, sink STag 0).
 * The CRC field is always present (zero without @crc). Returns its length. */
size_t rrr__soft_mpa_rtr(uint8_t *buf, unsigned type, bool crc);
/* Length of the RTR frame of @type. */
size_t rrr__soft_mpa_rtr_len(unsigned type);
/* True if @buf (rrr__soft_mpa_rtr_len(@type) bytes) is an RTR of @type
 * from any conforming peer (any STag/TO on a Write; CRC checked with
 * @crc). For a Read RTR the Read Request goes to *@rd (may be NULL). */
bool rrr__soft_mpa_is_rtr(const uint8_t *buf, unsigned type, bool crc, struct soft_read_req *rd);
/* The zero-length Read Response that answers the Read RTR @rd; returns
 * its length (SOFT_HDR_TAGGED + 4). */
size_t rrr__soft_mpa_rtr_read_resp(uint8_t *buf, const struct soft_read_req *rd, bool crc);
/* True if @buf (SOFT_HDR_TAGGED + 4 bytes) answers our Read RTR. */
bool rrr__soft_mpa_is_rtr_read_resp(const uint8_t *buf, bool crc);

/* Write every page of a freshly allocated (zeroed) ring once, so its page
 * faults happen when the QP or CQ is made, not on the first pass of the
 * data path over it (rrr-bench io reports faults per I/O: flt.c, flt.s).
 * Stores zeros: the contents do not change. */
static inline void soft_prefault(void *p, size_t len)
{
	volatile uint8_t *b = p;

	for (size_t off = 0; off < len; off += 4096)
		b[off] = 0;
	if (len)
		b[len - 1] = 0;
}

/* ------------------------------------------------------------ ddp_rdmap.c */
#define SOFT_DDP_T 0x80
#define SOFT_DDP_L 0x40
#define SOFT_DDP_V 0x01
#define SOFT_RDMAP_V 0x40
enum soft_op {
	SOFT_OP_WRITE = 0,
	SOFT_OP_READ_REQ = 1,
	SOFT_OP_READ_RESP = 2,
	SOFT_OP_SEND = 3,
	SOFT_OP_SEND_INV = 4,
	SOFT_OP_SEND_SE = 5,
	SOFT_OP_SEND_SE_INV = 6,
	SOFT_OP_TERMINATE = 7,
};
#define SOFT_HDR_TAGGED 16u   /* MPA len(2) + ctl(2) + STag(4) + TO(8) */
#define SOFT_HDR_UNTAGGED 20u /* MPA len(2) + ctl(2) + inv(4) + QN(4) + MSN(4) + MO(4) */
#define SOFT_READ_REQ_LEN 28u
#define SOFT_QN_SEND 0u
#define SOFT_QN_READ 1u
#define SOFT_QN_TERM 2u

struct soft_hdr {
	uint16_t ulpdu_len;
	bool tagged, last;
	uint8_t ddp_ver, rdmap_ver, opcode;
	uint32_t stag;     /* tagged: STag; untagged: invalidate STag */
	uint64_t to;       /* tagged */
	uint32_t qn, msn, mo;
};

struct soft_read_req {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

/* Terminate layer/type/code (RFC 5040 section 7, RFC 5041 section 7). */
#define SOFT_TERM_LAYER_RDMAP 0
#define SOFT_TERM_LAYER_DDP 1
#define SOFT_TERM_LAYER_LLP 2
#define SOFT_TERM_RDMAP_LOCAL_CATA 0
#define SOFT_TERM_RDMAP_REM_PROT 1
#define SOFT_TERM_RDMAP_REM_OP 2
#define SOFT_TERM_DDP_CATA 0
#define SOFT_TERM_DDP_TAGGED 1
#define SOFT_TERM_DDP_UNTAGGED 2
#define SOFT_TERM_DDP_RSVD 3
/* RDMAP remote protection / operation codes */
#define SOFT_ECODE_INV_STAG 0x00
#define SOFT_ECODE_BOUNDS 0x01
#define SOFT_ECODE_ACCESS 0x02
#define SOFT_ECODE_STAG_PD 0x03
#define SOFT_ECODE_TO_WRAP 0x04
#define SOFT_ECODE_BAD_VERSION 0x05
#define SOFT_ECODE_UNEXP_OP 0x06
#define SOFT_ECODE_CATA_STREAM 0x07
#define SOFT_ECODE_CANT_INV 0x09
#define SOFT_ECODE_UNSPEC 0xff
/* DDP untagged codes */
/* DDP tagged buffer errors (RFC 5041 section 7.2) number differently */
#define SOFT_ECODE_T_INV_STAG 0x00
#define SOFT_ECODE_T_BOUNDS 0x01
#define SOFT_ECODE_T_STAG_ASSOC 0x02 /* STag not associated with the stream */
#define SOFT_ECODE_T_TO_WRAP 0x03
#define SOFT_ECODE_T_BAD_VER 0x04
#define SOFT_ECODE_UT_INV_QN 0x01
#define SOFT_ECODE_UT_NO_BUF 0x02
#define SOFT_ECODE_UT_MSN_RANGE 0x03
#define SOFT_ECODE_UT_INV_MO 0x04
#define SOFT_ECODE_UT_TOO_LONG 0x05
#define SOFT_ECODE_UT_BAD_VER 0x06
/* LLP (MPA) codes */
#define SOFT_ECODE_LLP_CRC 0x02
#define SOFT_ECODE_LLP_MARKER 0x03
#define SOFT_ECODE_LLP_BAD_ULPDU 0x04

/* Packed 24-bit layer:4|type:4|code:8, as the QP records it. */
#define SOFT_TERM(l, t, c) ((uint32_t)(((l) & 0xf) << 12 | ((t) & 0xf) << 8 | ((c) & 0xff)))
#define SOFT_TERM_LAYER(x) (((x) >> 12) & 0xf)
#define SOFT_TERM_TYPE(x) (((x) >> 8) & 0xf)
#define SOFT_TERM_CODE(x) ((x) & 0xff)

/* Encoders write the MPA length field too; return header length. */
size_t rrr__soft_hdr_tagged(uint8_t *b, uint8_t op, bool last, uint32_t stag, uint64_t to,
			    uint32_t payload);
size_t rrr__soft_hdr_untagged(uint8_t *b, uint8_t op, bool last, uint32_t inv_stag,
			      uint32_t qn, uint32_t msn, uint32_t mo, uint32_t payload);
/* Decode the first 4 bytes: header length needed (16 or 20). */
size_t rrr__soft_hdr_len(const uint8_t *b);
/* Decode a whole header. -EPROTO when ulpdu_len is too small for the header. */
int rrr__soft_hdr_decode(const uint8_t *b, struct soft_hdr *h);
void rrr__soft_read_req_encode(uint8_t *b, const struct soft_read_req *r);
void rrr__soft_read_req_decode(const uint8_t *b, struct soft_read_req *r);
/* Terminate payload (4 bytes): layer/type/code, no copied headers. */
void rrr__soft_term_encode(uint8_t *b, uint32_t term);
uint32_t rrr__soft_term_decode(const uint8_t *b);
/* Work completion status a peer's Terminate maps to. */
enum rrr_wc_status rrr__soft_term_wc_status(uint32_t term);

/* ------------------------------------------------------------ device.c */
struct soft_qp;

struct soft_dev {
	struct rrr_device base;
	pthread_mutex_t lock;            /* stag allocator, qp list */
	bool crc;
	bool progress_thread;
	bool page_list;                  /* map_model=page_list: FRWR-like holes */
	uint32_t mulpdu;
	bool tx_refill;             /* refill a partly written batch */
	uint32_t tx_batch;           /* FPDUs per sendmsg, 1..SOFT_TX_BATCH */
	uint32_t tx_lead;            /* bytes per sendmsg when nothing waits behind; 0: off */
	uint32_t tx_bytes;           /* a batch takes no FPDU once it holds this many bytes; 0: off */
	uint32_t max_fr_pages;
	/* fault injection (fault.c): drop, delay or stall configured (the
	 * rest is further down); beside the fields every post and every
	 * lookup reads, so a device that thousands of connections' calls go
	 * through in turn costs them one cache line less */
	bool fault_on;
	/* bumped each time a registration leaves VALID (invalidation,
	 * recovery, deregistration): a send WR whose keys passed the post-time
	 * check needs no second check when it starts if this has not moved */
	atomic_uint_fast64_t key_gen;
	/* STag table: chunks of SOFT_STAG_CHUNK slots made as next_idx
	 * reaches them (under lock), published with a release store, never
	 * freed before the device; index 0 unused */
	_Atomic(struct soft_mr *) *_Atomic stag_chunk[SOFT_STAG_CHUNKS];
	uint32_t *free_idx;              /* room for every index below next_idx */
	uint32_t nfree, next_idx;
	atomic_uint seed;                /* counter of STag allocations */
	uint64_t key_secret;             /* getrandom() at open: keys of new STags */
	atomic_int nobj;                 /* live pds/cqs/mrs/qps/cms */
	/* progress thread */
	int ep;                          /* epoll of all QP sockets (thread mode) */
	int wake_fd;
	int ready_fd;                    /* always readable: CQs' fallback signal */
	pthread_t thr;
	bool thr_running;
	atomic_bool thr_stop;
	atomic_bool thr_ready;            /* the thread registered with liburcu */
	atomic_uint_fast64_t epoch;      /* finished progress-thread passes */
	/* fault injection (fault.c); all zero unless a fault_* option is set */
	uint64_t fault_seed;
	uint32_t fault_drop_ppm, fault_delay_ppm, fault_stall_ppm;
	uint32_t fault_delay_us, fault_stall_ms;
	atomic_uint_fast64_t fault_qps;  /* QPs created: each one's stream */
	atomic_uint_fast64_t fault_drops, fault_delays, fault_stalls;
};

struct soft_pd {
	struct rrr_pd base;
	atomic_int refs;
};

static inline struct soft_dev *soft_dev(struct rrr_device *d)
{
	return container_of(d, struct soft_dev, base);
}

/* progress.c: progress thread mode: return once the thread can no longer
 * hold an epoll event for a socket the caller removed from the set. MAY
 * BLOCK (~a pass of the thread). No-op without the thread. */
void rrr__soft_dev_quiesce(struct soft_dev *d);
/* progress.c: the progress thread's body (@arg: the struct soft_dev). */
void *rrr__soft_progress_main(void *arg);
/* Make the calling thread an RCU reader (idempotent, cheap). */
void rrr__soft_rcu_thread(void);

/* ------------------------------------------------------------ stag.c / mr.c */
enum soft_mr_state {
	SOFT_MR_INVALID = 0,
	SOFT_MR_MAPPED,
	SOFT_MR_VALID,
	SOFT_MR_INVALIDATING,
};

/* Pieces a fast-registration MR maps without its big array. */
#define SOFT_MR_INLINE 4u

struct soft_mr {
	struct rrr_mr base;
	struct soft_dev *dev;
	uint32_t index;
	bool fast;                  /* fast-registration MR */
	atomic_int state;
	atomic_uint inflight;       /* placements/reads running now */
	uint8_t key;                /* key of the current registration */
	unsigned rights;            /* access of the current registration */
	uint64_t iova, length;
	uint32_t nchunks, maxchunks;
	struct iovec *chunks;       /* (addr, len) of each mapped piece: inl or big */
	struct iovec *big;          /* maxchunks entries, made on the first map
	                             * of more than SOFT_MR_INLINE pieces */
	struct iovec inl[SOFT_MR_INLINE]; /* long-lived MRs, small maps */
	struct soft_mr *free_next;  /* recycled records (mr.c) */
};

/* Give @mr a free index of the STag table (growing it) and an initial key.
 * 0 or -ENOMEM. */
int rrr__soft_stag_alloc(struct soft_dev *dev, struct soft_mr *mr);
/* Free the STag table (device close, every registration gone). */
void rrr__soft_stag_table_free(struct soft_dev *dev);
/* Deregistered MR records kept for reuse, process-wide: how many now
 * (tests); at most SOFT_MR_FREE_MAX. */
#define SOFT_MR_FREE_MAX 1024u
unsigned rrr__soft_mr_free_count(void);
/* Remove from the table and wait an RCU grace period (MAY BLOCK). */
void rrr__soft_stag_free(struct soft_dev *dev, struct soft_mr *mr);

/*
 * A checked, guarded access to [to, to+len) of registration @handle.
 * rrr__soft_mr_get() returns 0 with *out referenced (inflight) or a
 * packed Terminate code (SOFT_TERM(...)) | 0x80000000 on a violation.
 * The caller places/reads, then calls rrr__soft_mr_put().
 */
#define SOFT_GET_FAIL 0x80000000u
uint32_t rrr__soft_mr_get(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd,
			  unsigned rights, uint64_t to, uint64_t len, bool rdmap_layer,
			  struct soft_mr **out);
void rrr__soft_mr_put(struct soft_mr *mr);
/* Build iovecs covering [to, to+len) of a referenced MR; returns count. */
int rrr__soft_mr_iov(const struct soft_mr *mr, uint64_t to, uint64_t len, struct iovec *iov,
		     int max);
/* Invalidate registration @handle (key must match; pd if non-NULL). Waits
 * until no placement into it runs. Returns 0, -ENOENT (no such handle or
 * key), -EACCES (pd), -EPERM (not a fast-reg MR and !allow_long). */
int rrr__soft_invalidate(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd,
			 bool allow_long);
/* Would rrr__soft_invalidate() of a peer's Send with Invalidate succeed?
 * Same errors; changes nothing (checked before any payload is placed). */
int rrr__soft_inv_check(struct soft_dev *dev, uint32_t handle, struct rrr_pd *pd);
/* REG_MR work request: MAPPED -> VALID. */
int rrr__soft_mr_validate(struct soft_mr *mr, struct rrr_pd *pd, unsigned access);

/* ------------------------------------------------------------ cq.c */
struct soft_cq {
	struct rrr_cq base;
	pthread_mutex_t lock;    /* ring */
	pthread_mutex_t prog_lock;
	struct rrr_wc *ring;
	uint32_t depth, head, count;
	bool armed;
	bool overflow;
	bool quiet;              /* a poller's own progress step is running */
	bool quieted;            /* ... and took a notification for itself */
	bool skip_step;          /* armed with the solo QP's rx idle: the next
				  * poll checks the ring only (rrr__soft_cq_arm) */
	atomic_bool ev_set;      /* signalled since the last ack */
	unsigned nqp;            /* QP sockets in the epoll set (under lock) */
	struct soft_qp *solo;    /* the one when nqp == 1 */
	int ep;                  /* the CQ fd */
	atomic_int evfd;         /* -1 until the first notification (cq.c) */
	pthread_mutex_t ev_lock; /* making evfd; ready_in */
	atomic_bool ready_in;    /* dev->ready_fd is in ep (no evfd could be made) */
	atomic_int refs;
};

static inline struct soft_cq *soft_cq(struct rrr_cq *c)
{
	return container_of(c, struct soft_cq, base);
}

void rrr__soft_cq_push(struct soft_cq *cq, const struct rrr_wc *wc);
/* Signal the CQ's fd (a notification): its eventfd, made on first use. */
void rrr__soft_cq_notify(struct soft_cq *cq);
/* A QP's socket joined / left the CQ's epoll set (caller-driven progress). */
void rrr__soft_cq_qp_add(struct soft_cq *cq, struct soft_qp *qp);
void rrr__soft_cq_qp_del(struct soft_cq *cq, struct soft_qp *qp);

/* ------------------------------------------------------------ qp.c / tx.c / rx.c */
enum soft_qp_state {
	SOFT_QP_IDLE = 0,
	SOFT_QP_RTS,
	SOFT_QP_ERROR,
};

enum soft_wqe_state {
	SOFT_WQE_QUEUED = 0, /* not started */
	SOFT_WQE_ACTIVE,     /* partially transmitted */
	SOFT_WQE_WAIT_RESP,  /* READ sent, awaiting response */
	SOFT_WQE_DONE,
};

struct soft_swqe {
	uint64_t wr_id;
	enum rrr_wr_opcode opcode;
	unsigned flags;
	uint32_t num_sge;
	struct rrr_sge sge[SOFT_MAX_SGE];
	uint64_t remote_addr;
	uint32_t rkey;            /* WRITE/READ rkey, SEND_INV/LOCAL_INV handle */
	struct soft_mr *mr;       /* REG_MR */
	unsigned access;
	uint64_t total;
	uint64_t done_bytes;      /* transmitted (or READ: received) */
	uint64_t key_gen;         /* dev->key_gen read before the keys passed at post */
	bool keys_checked;        /* ... and they did (not left to execution) */
	uint32_t msn;
	enum soft_wqe_state st;
	enum rrr_wc_status status;
	uint32_t vendor_err;
};

struct soft_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct rrr_sge sge[SOFT_MAX_SGE];
	uint64_t total;
};

struct soft_irq {            /* inbound RDMA READ to answer */
	struct soft_read_req rr;
	uint64_t off;
};

enum soft_rx_state {
	SOFT_RX_HDR = 0,
	SOFT_RX_PAY,
	SOFT_RX_DEAD,
};

enum soft_tx_kind {
	SOFT_TXK_NONE = 0,
	SOFT_TXK_SQ,
	SOFT_TXK_IRQ,
};

struct soft_qp {
	struct rrr_qp base;
	struct soft_dev *dev;
	struct soft_cq *scq, *rcq;
	pthread_mutex_t lock;
	enum soft_qp_state state;
	int fd;
	bool crc;
	bool in_ep;
	bool want_out;              /* EPOLLOUT armed */
	/* the receive engine last stopped for want of socket bytes with none
	 * staged (or the QP stopped receiving): until it runs again only the
	 * socket's readiness can give it work (rrr__soft_cq_arm) */
	atomic_bool rx_idle;
	bool tx_hold;               /* MPA rev 1 responder (RFC 5044): send nothing
				     * before the initiator's first FPDU arrived */
	uint32_t ord, ird;          /* outstanding READs allowed out / in */
	uint32_t mulpdu;            /* largest ULPDU sent: device option, <= MSS
				     * (read again before a multi-FPDU message,
				     * at most every SOFT_MSS_REFRESH_NS) */
	uint64_t mss_ns;            /* CLOCK_MONOTONIC of the last refresh */
	/* transmit counters (under lock; read by tests): sendmsg calls made,
	 * batches ended by the tx_lead rule (tx.c batch_room), FPDUs built */
	uint64_t tx_calls, tx_lead_cuts, tx_fpdus;
	uint64_t rx_read_reqs;      /* Read Requests accepted (under lock; tests) */
	uint64_t bytes_placed;      /* tagged payload bytes placed (under lock) */
	uint32_t max_send_sge, max_recv_sge;

	/* send queue ring */
	struct soft_swqe *sq;
	uint32_t sq_size, sq_head, sq_count;
	uint32_t sq_tx;             /* ring index offset from head of next to transmit */
	uint32_t reads_out;
	uint32_t tx_msn_send, tx_msn_read, tx_msn_term;
	/* receive queue ring */
	struct soft_rwqe *rq;
	uint32_t rq_size, rq_head, rq_count;
	/* inbound read queue */
	struct soft_irq *irq;
	uint32_t irq_size, irq_head, irq_count;

	/* The engines' state, scalars first: one call's progress reads and
	 * writes these few lines (the receive engine's before the transmit
	 * engine's, both right after the rings), where the buffers below
	 * them span pages; at thousands of connections each call finds its
	 * QP cold, and every line it touches is a miss then. */

	/* receive engine */
	struct {
		enum soft_rx_state st;
		uint32_t have, need;        /* header bytes */
		uint32_t pay_len, pay_done; /* this FPDU */
		uint32_t trl_len, trl_have;
		uint8_t trl[8];
		uint32_t crc;
		int kind;                   /* placement kind */
		uint32_t msn_send, msn_read, msn_term; /* expected next */
		uint64_t msg_off;           /* current Send message offset */
		bool in_msg;
		bool small;                 /* the last FPDU was small: stage reads */
		uint32_t handle;            /* tagged target */
		uint64_t to;
		uint32_t st_off, st_len;    /* unread bytes staged at stp */
		uint8_t *stp;               /* rxb.stage or the thread's (rx.c) */
		uint8_t hb[SOFT_HDR_UNTAGGED];
		struct soft_hdr h;
		uint8_t inl[64];            /* Read Request / Terminate payload */
	} rx;

	/* transmit: a batch of up to SOFT_TX_BATCH FPDUs handed to one writev
	 * (its headers, trailers and iovec in txb below) */
	struct {
		bool active;
		bool lead_busy;             /* lead cap reached with work behind: fill on */
		bool lead_cut;              /* the batch was ended by the lead rule */
		bool src_guard;
		bool irq_more;              /* batch continues one Read Response */
		bool term_pending, term_sent;
		enum soft_tx_kind kind;     /* message in progress */
		int niov, idx;
		int nf, fdone;              /* FPDUs in the batch, fully written */
		uint64_t bytes;             /* wire bytes of the FPDUs in the batch */
		uint32_t src_handle;        /* read response source, re-checked per writev */
		uint32_t term;
		uint64_t src_to, src_len;
		struct {
			int end;            /* iov index after this FPDU */
			uint32_t len;       /* its wire bytes */
			enum soft_tx_kind kind;
			bool last;
			uint32_t slot;      /* SQ ring index */
		} f[SOFT_TX_BATCH];
	} tx;
	struct {
		uint8_t hdr[SOFT_TX_BATCH][SOFT_HDR_UNTAGGED + SOFT_READ_REQ_LEN];
		uint8_t trl[SOFT_TX_BATCH][8];
		struct iovec iov[SOFT_TX_IOV];
	} txb;
	struct {
		uint8_t stage[SOFT_RX_STAGE];
	} rxb;

	uint32_t term_sent, term_rcvd;  /* packed codes, 0x80000000 flag when set */
	struct soft_id *id;
	/* the QP's one report upward, set with id by cm.c (rrr__soft_cm_qp_create):
	 * its connection ended; called under qp->lock, when id is set */
	void (*conn_lost)(struct soft_id *id, int status);
	uint64_t fault_rng;             /* fault.c: this QP's draws (0: off) */
};

static inline struct soft_qp *soft_qp(struct rrr_qp *q)
{
	return container_of(q, struct soft_qp, base);
}

/* progress.c: drive the QP's socket: receive and transmit what is possible
 * without blocking. Takes qp->lock. @events: EPOLLIN/EPOLLOUT/... */
void rrr__soft_qp_progress(struct soft_qp *qp, uint32_t events);
/* Under qp->lock: transmit as much as possible. */
void rrr__soft_tx(struct soft_qp *qp);
/* Under qp->lock: receive as much as possible (bounded budget); sets
 * qp->rx_idle to whether it stopped for want of socket bytes. */
void rrr__soft_rx(struct soft_qp *qp);
/* tx.c, under qp->lock: QP to error, send Terminate @term if @send_term,
 * flush, report the lost connection (qp->conn_lost). */
void rrr__soft_qp_fatal(struct soft_qp *qp, uint32_t term, bool send_term);
/* The same; the first started SQ WR completes with @first (peer Terminate). */
void rrr__soft_qp_fatal_status(struct soft_qp *qp, uint32_t term, bool send_term,
			       enum rrr_wc_status first, uint32_t vendor);
/* qp_state.c, under qp->lock: generate completions at the SQ head in order. */
void rrr__soft_sq_complete(struct soft_qp *qp);
/* qp_state.c: the local key check of @n SGEs (no Terminate: a local error).
 * With !@keys only the lengths are summed into *@total (the keys are then
 * checked when the WR executes). 0, -EINVAL or -EMSGSIZE. */
int rrr__soft_sge_check(struct soft_qp *qp, const struct rrr_sge *sg, uint32_t n,
			unsigned rights, bool keys, uint64_t *total);
/* The rights a send WR's local SGEs need. */
static inline unsigned soft_sge_rights(enum rrr_wr_opcode op)
{
	/* iWARP: a READ sink is written by the peer's Read Response */
	return op == RRR_WR_RDMA_READ ? RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE : 0;
}
/* Execution-time check of a SEND/WRITE/READ WR's local keys, bounds and
 * rights (an RNIC checks them when the WR runs, after earlier REG_MR /
 * LOCAL_INV in the same queue): 0 or -EINVAL. Caller holds qp->lock. */
int rrr__soft_sq_keys_ok(struct soft_qp *qp, const struct soft_swqe *w);
/* qp_state.c, under qp->lock: arm/disarm EPOLLOUT on the QP socket. */
void rrr__soft_qp_want_out(struct soft_qp *qp, bool on);
/* qp_state.c, under qp->lock: put the socket into the CQs' epoll sets
 * (or the progress thread's) for EPOLLIN, or take it out of them. */
void rrr__soft_qp_ep_add(struct soft_qp *qp);
void rrr__soft_qp_ep_del(struct soft_qp *qp);
/* Set qp->mulpdu from the device option and the socket's current MSS
 * (one getsockopt). Caller holds qp->lock; qp->fd is attached. */
void rrr__soft_qp_mulpdu_update(struct soft_qp *qp);
/* The same, unless the last refresh is less than SOFT_MSS_REFRESH_NS old. */
void rrr__soft_qp_mulpdu_refresh(struct soft_qp *qp);
/* How the CM hands a connection to its QP. */
struct soft_attach {
	bool crc;
	uint32_t ird, ord; /* the peer's ORD and IRD as our limits; 0: keep the QP's */
	bool hold_tx;      /* send nothing until a first valid FPDU was received
			    * (a responder without RTR, RFC 5044) */
	uint8_t rtr_in;    /* the RTR the CM consumed from the peer (enum soft_rtr):
			    * a Send or Read RTR took MSN 1 of its queue */
	uint8_t rtr_out;   /* the RTR the CM sent: the same on our side */
};
/* CM hands over an established socket. Takes qp->lock. */
int rrr__soft_qp_attach(struct soft_qp *qp, int fd, const struct soft_attach *a);
/* Detach the socket from every epoll (before close). Takes prog locks. */
void rrr__soft_qp_detach(struct soft_qp *qp);
/* A new QP for connection id @id (@sid, its soft id; NULL: none) that
 * reports its lost connection through @conn_lost (cm.c binds them:
 * rrr__soft_cm_qp_create). */
int rrr__soft_qp_new(struct rrr_cm_id *id, struct soft_id *sid,
		     void (*conn_lost)(struct soft_id *sid, int status),
		     const struct rrr_qp_init_attr *attr, struct rrr_qp **out);
/* Free a detached QP (rrr__soft_cm_qp_destroy detaches it first). */
int rrr__soft_qp_free(struct rrr_qp *qp);
/* Internal test hooks: last Terminate sent/received (packed), state. */
int rrr__soft_qp_info(struct rrr_qp *qp, uint32_t *term_sent, uint32_t *term_rcvd,
		      int *state);

/* ------------------------------------------------------------ fault.c */
/* Injected faults: process-wide (every soft device) or one device's. */
struct rrr__soft_fault_stats {
	uint64_t points; /* fault points passed with injection on (totals only) */
	uint64_t drops, delays, stalls;
};

/* At QP creation: seed the QP's draws (no-op when injection is off). */
void rrr__soft_fault_qp_init(struct soft_qp *qp);
/* A fault point, under qp->lock, injection on: maybe delay or stall (MAY
 * BLOCK, qp->lock held), maybe drop the connection: then the socket is shut
 * down and true is returned; the caller moves the QP to error as on a
 * socket error (rrr__soft_qp_fatal(qp, 0, false)) and stops. */
bool rrr__soft_fault(struct soft_qp *qp);
/* Zero cost when off: one branch on a device field. */
static inline bool soft_fault_point(struct soft_qp *qp)
{
	return qp->dev->fault_on && rrr__soft_fault(qp);
}
/* Sums over every soft device of the process since it started. Thread-safe. */
void rrr__soft_fault_totals(struct rrr__soft_fault_stats *st);
/* One device's counters; -EINVAL if @dev is not a soft device. */
int rrr__soft_fault_dev_stats(struct rrr_device *dev, struct rrr__soft_fault_stats *st);

/* ------------------------------------------------------------ cm.c */
struct soft_id;
struct soft_id *rrr__soft_id_of(struct rrr_cm_id *id);

/* ------------------------------------------------------------ op entry points */
int rrr__soft_pd_alloc(struct rrr_device *dev, struct rrr_pd **out);
int rrr__soft_pd_free(struct rrr_pd *pd);
int rrr__soft_cq_create(struct rrr_device *dev, uint32_t depth, struct rrr_cq **out);
int rrr__soft_cq_destroy(struct rrr_cq *cq);
int rrr__soft_cq_poll(struct rrr_cq *cq, struct rrr_wc *wc, int n);
int rrr__soft_cq_fd(struct rrr_cq *cq);
int rrr__soft_cq_ack_event(struct rrr_cq *cq);
int rrr__soft_cq_arm(struct rrr_cq *cq);
int rrr__soft_mr_reg(struct rrr_pd *pd, void *addr, size_t len, unsigned access,
		     struct rrr_mr **out);
int rrr__soft_mr_alloc(struct rrr_pd *pd, uint32_t max_pages, struct rrr_mr **out);
int rrr__soft_mr_dereg(struct rrr_mr *mr);
int rrr__soft_mr_map_sg(struct rrr_mr *mr, const struct rrr_sg *sg, int nents, unsigned access);
int rrr__soft_mr_recover(struct rrr_mr *mr);
int rrr__soft_cm_qp_create(struct rrr_cm_id *id, const struct rrr_qp_init_attr *attr,
			   struct rrr_qp **out);
int rrr__soft_cm_qp_destroy(struct rrr_qp *qp);
int rrr__soft_post_send(struct rrr_qp *qp, struct rrr_send_wr *wr, struct rrr_send_wr **bad);
int rrr__soft_post_recv(struct rrr_qp *qp, struct rrr_recv_wr *wr, struct rrr_recv_wr **bad);
int rrr__soft_cm_create(struct rrr_device *dev, struct rrr_cm **out);
void rrr__soft_cm_destroy(struct rrr_cm *cm);
int rrr__soft_cm_fd(struct rrr_cm *cm);
int rrr__soft_cm_get_event(struct rrr_cm *cm, struct rrr_cm_event *ev);
int rrr__soft_cm_id_create(struct rrr_cm *cm, void *ctx, struct rrr_cm_id **out);
void rrr__soft_cm_id_destroy(struct rrr_cm_id *id);
int rrr__soft_cm_peer_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
int rrr__soft_cm_local_addr(const struct rrr_cm_id *id, struct sockaddr_storage *ss);
int rrr__soft_cm_listen(struct rrr_cm_id *id, const struct sockaddr *addr, socklen_t len,
			int backlog);
int rrr__soft_cm_set_source(struct rrr_cm_id *id, const struct sockaddr *src, socklen_t len);
int rrr__soft_cm_resolve(struct rrr_cm_id *id, const struct sockaddr *dst, socklen_t len,
			 int timeout_ms);
int rrr__soft_cm_connect(struct rrr_cm_id *id, const struct rrr_conn_param *param);
int rrr__soft_cm_accept(struct rrr_cm_id *id, const struct rrr_conn_param *param);
int rrr__soft_cm_reject(struct rrr_cm_id *id, const void *pdata, uint32_t len);
int rrr__soft_cm_set_limits(struct rrr_cm *cm, const struct rrr_cm_limits *lim);
int rrr__soft_cm_limit_stats(struct rrr_cm *cm, struct rrr_cm_limit_stats *st);
int rrr__soft_cm_disconnect(struct rrr_cm_id *id);

/* Big-endian helpers. */
static inline void soft_put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}
static inline void soft_put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}
static inline void soft_put64(uint8_t *b, uint64_t v)
{
	soft_put32(b, (uint32_t)(v >> 32));
	soft_put32(b + 4, (uint32_t)v);
}
static inline uint16_t soft_get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}
static inline uint32_t soft_get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
static inline uint64_t soft_get64(const uint8_t *b)
{
	return (uint64_t)soft_get32(b) << 32 | soft_get32(b + 4);
}

#endif /* RRR_TRANSPORT_SOFT_SOFT_H */
