/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/tcp_payload.c - TO_SERVER payloads over ONC RPC/TCP are
 * sent from the caller's buffers (sendmsg gathers them; client/clnt_tcp.c),
 * not copied into the encode buffer:
 *   - odd lengths and several iovecs (pad bytes zero) arrive byte-exact,
 *     also when the encoder's iovec array lives on its own stack;
 *   - more iovecs than the transport gathers are copied inline instead;
 *   - a call whose record is half written when it times out is finished
 *     from a private copy: the caller frees its payload after the
 *     callback, and the peer still receives the original bytes;
 *   - a steady stream of 1 MiB calls reuses its requests' buffers (the
 *     process takes no page fault per call).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rrr/client.h>
#include <rrr/oncrpc.h>

#include "../test_wait.h"
#include "helpers/calls.h"
#include "helpers/tcp_srv.h"


static struct tsrv *srv;
static struct rrr_clnt *clnt;

static void setup(void)
{
	tsrv_start_clnt(&srv, &clnt, 10000, false);
}

static void teardown(void)
{
	tsrv_stop_clnt(&srv, &clnt);
}

TestSuite(tcp_payload, .init = setup, .fini = teardown, .timeout = 60);

struct src_args {
	const struct iovec *iov;
	unsigned niov;
	uint32_t len;
	uint32_t trailer; /* encoded after the payload */
};

static int enc_src(struct rrr_xdr *x, const void *a)
{
	const struct src_args *s = a;
	int rc = rrr_xdr_encode_payload(x, s->iov, s->niov, s->len);

	return rc ? rc : rrr_xdr_put_u32(x, s->trailer);
}

/* The payload given as one iovec built on the encoder's stack (as the
 * NFS path codecs do). */
static int enc_src_stack(struct rrr_xdr *x, const void *a)
{
	const struct src_args *s = a;
	struct iovec one = {s->iov[0].iov_base, s->len};
	int rc = rrr_xdr_encode_payload(x, &one, 1, s->len);

	return rc ? rc : rrr_xdr_put_u32(x, s->trailer);
}

struct copy_res {
	uint8_t *buf;
	uint32_t cap, len;
};

/* The echoed payload (no sink: described in place), copied out. */
static int dec_copy(struct rrr_xdr *x, void *r)
{
	struct copy_res *c = r;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	unsigned niov = RRR_XDR_PAYLOAD_MAX_IOV;
	uint32_t len, off = 0;
	int rc = rrr_xdr_decode_payload(x, c->cap, &len, iov, &niov);

	if (rc)
		return rc;
	for (unsigned i = 0; i < niov; i++) {
		memcpy(c->buf + off, iov[i].iov_base, iov[i].iov_len);
		off += (uint32_t)iov[i].iov_len;
	}
	c->len = len;
	return 0;
}

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(i * 13u + seed + (i >> 10));
}

static void init_call(struct rrr_call *c, uint32_t proc)
{
	tc_call_init(c, TSRV_PROG, proc);
}

/* ECHO of @len bytes given in @nparts iovecs (some empty) */
static void echo_parts(uint32_t len, unsigned nparts, bool stack_iov)
{
	uint8_t *src = malloc(len + 1), *dst = malloc(len + 8);
	struct iovec *iov = calloc(nparts, sizeof(*iov));
	struct copy_res cr = {dst, len + 8, 0};
	struct src_args sa;
	struct rrr_call c;
	uint32_t off = 0;

	cr_assert(src && dst && iov);
	for (uint32_t i = 0; i < len; i++)
		src[i] = pat(len, i);
	for (unsigned k = 0; k < nparts; k++) {
		uint32_t n = k + 1 == nparts ? len - off : (k % 3 == 1 ? 0 : (len - off) / 2);

		iov[k] = (struct iovec){src + off, n};
		off += n;
	}
	sa = (struct src_args){iov, nparts, len, 0xabcdef01u};
	init_call(&c, TSRV_ECHO);
	tc_codec(&c, stack_iov ? enc_src_stack : enc_src, &sa, dec_copy, &cr);
	c.ddp = RRR_DDP_TO_SERVER;
	/* more pieces than a call declares: the encoder's payload is the one
	 * declaration (payload NULL) */
	c.payload = nparts <= RRR_XDR_PAYLOAD_MAX_IOV ? iov : NULL;
	c.npayload = nparts <= RRR_XDR_PAYLOAD_MAX_IOV ? nparts : 0;
	cr_assert_eq(rrr_clnt_call(clnt, &c), 0, "len %u parts %u", len, nparts);
	cr_assert_eq(cr.len, len);
	cr_assert_eq(memcmp(dst, src, len), 0, "len %u parts %u: bytes differ", len, nparts);
	free(iov);
	free(src);
	free(dst);
}

Test(tcp_payload, odd_lengths_and_iovecs)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 5, 4095, 4097, 65537, 1u << 20};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		echo_parts(sizes[i], 1, false);
		echo_parts(sizes[i], 5, false);
		echo_parts(sizes[i], 1, true);
	}
}

Test(tcp_payload, more_iovecs_than_gathered_copied_inline)
{
	/* the encoder hands 100 pieces: copied into the record instead */
	echo_parts(100003, 100, false);
}

/* --- a peer that does not read: the call is aborted half written --------- */

static int listen_any(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;

	cr_assert_geq(fd, 0);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static int read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, 5000) != 1)
			return -ETIMEDOUT;
		r = read(fd, b, n);
		if (r <= 0)
			return -EPIPE;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

Test(tcp_payload_abort, half_written_record_finished_from_copy, .timeout = 60)
{
	const uint32_t len = 24u << 20; /* more than the socket buffers take */
	struct rrr_clnt_opts o;
	struct rrr_clnt *c;
	struct tc_once d = {0};
	struct src_args sa;
	struct rrr_call call;
	struct iovec iov;
	uint8_t *src = malloc(len), *rec;
	uint8_t mark[4];
	uint16_t port;
	char ps[16];
	int lfd = listen_any(&port), fd;
	uint32_t rm, rlen;

	cr_assert_not_null(src);
	for (uint32_t i = 0; i < len; i++)
		src[i] = pat(7, i);
	snprintf(ps, sizeof(ps), "%u", port);
	rrr_clnt_opts_init(&o);
	o.transport = "tcp";
	o.host = "127.0.0.1";
	o.port = ps;
	cr_assert_eq(rrr_clnt_create(&o, &c), 0, "%s", rrr_last_error());

	iov = (struct iovec){src, len};
	sa = (struct src_args){&iov, 1, len, 0x0badcafeu};
	init_call(&call, TSRV_ECHO);
	call.encode = enc_src;
	call.args = &sa;
	tc_payload(&call, RRR_DDP_TO_SERVER, &iov, 1);
	/* long enough that connecting and the first writes happen before it
	 * on a loaded machine (the peer never reads: the record stays half
	 * written however long the call waits) */
	call.timeout_ms = 2000;
	cr_assert_eq(rrr_clnt_call_async(c, &call, tc_once_done, &d), 0);
	for (int i = 0; i < 700 && !atomic_load(&d.runs); i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&d.runs), 1);
	cr_assert_eq(atomic_load(&d.status), -ETIMEDOUT);
	/* the call is over: the caller may reuse or free its payload */
	memset(src, 0xee, len);
	free(src);

	/* now read: the whole record, with the original bytes */
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read_full(fd, mark, 4), 0);
	rm = (uint32_t)mark[0] << 24 | (uint32_t)mark[1] << 16 | (uint32_t)mark[2] << 8 | mark[3];
	cr_assert(rm & RRR_RPC_RM_LAST);
	rlen = rm & RRR_RPC_RM_LEN_MASK;
	cr_assert_gt(rlen, len + 4);
	rec = malloc(rlen);
	cr_assert_not_null(rec);
	cr_assert_eq(read_full(fd, rec, rlen), 0, "the rest of the record was not sent");
	/* call header, payload length word, payload, trailer */
	{
		size_t at = rlen - 4 - len - 4;
		uint32_t plen = (uint32_t)rec[at] << 24 | (uint32_t)rec[at + 1] << 16 |
				(uint32_t)rec[at + 2] << 8 | rec[at + 3];

		cr_assert_eq(plen, len);
		for (uint32_t i = 0; i < len; i++)
			if (rec[at + 4 + i] != pat(7, i))
				cr_assert_fail("payload byte %u differs", i);
		cr_assert_eq(memcmp(rec + rlen - 4, "\x0b\xad\xca\xfe", 4), 0);
	}
	free(rec);
	rrr_clnt_destroy(c);
	close(fd);
	close(lfd);
}

/* --- no per-call memory churn ------------------------------------------------ */

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

Test(tcp_payload, steady_1mib_calls_take_no_page_faults)
{
#ifdef TEST_ALLOC_SANITIZER
	cr_skip_test("a sanitizer's allocator hands out fresh memory on every malloc: page "
		     "faults say nothing there");
#endif
	const uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = malloc(len + 8);
	struct copy_res cr = {dst, len + 8, 0};
	struct iovec iov = {src, len};
	struct src_args sa = {&iov, 1, len, 1};
	struct rrr_call c;
	long f0 = 0;
	const int warm = 20, n = 100;

	cr_assert(src && dst);
	memset(src, 0x3c, len);
	memset(dst, 0, len + 8);
	init_call(&c, TSRV_ECHO);
	tc_codec(&c, enc_src, &sa, dec_copy, &cr);
	tc_payload(&c, RRR_DDP_TO_SERVER, &iov, 1);
	for (int i = 0; i < warm + n; i++) {
		if (i == warm)
			f0 = minflt();
		cr_assert_eq(rrr_clnt_call(clnt, &c), 0);
	}
	/* this process also runs the test server, which reads each call
	 * into its own (kept) buffer: both sides together */
	long per100 = (minflt() - f0) * 100 / n;
	cr_assert_lt(per100, 50, "%ld.%02ld page faults per 1 MiB call", per100 / 100,
		     per100 % 100);
	free(src);
	free(dst);
}
