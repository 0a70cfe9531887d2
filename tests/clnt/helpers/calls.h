/* SPDX-License-Identifier: MIT */
/*
 * tests/clnt/helpers/calls.h - what the client tests build their calls
 * with (a zeroed struct rrr_call, the codecs of the test programs'
 * arguments and results), and a server library instance in a forked
 * process: started with its ports handed back through a pipe, stopped by
 * SIGTERM (or killed), never outliving a broken test.
 */
#ifndef TESTS_CLNT_CALLS_H
#define TESTS_CLNT_CALLS_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rrr/client.h>
#include <rrr/server.h>

/* @c zeroed, then program @prog version 1, procedure @proc. */
void tc_call_init(struct rrr_call *c, uint32_t prog, uint32_t proc);

/* @c's codecs: @enc encodes @args, @dec decodes the result into @res. */
void tc_codec(struct rrr_call *c, rrr_xdr_encode_fn enc, const void *args, rrr_xdr_decode_fn dec,
	      void *res);
/* @c's payload: @iov[@n], its direction @ddp. */
void tc_payload(struct rrr_call *c, enum rrr_ddp_dir ddp, const struct iovec *iov, unsigned n);

/* Encoder of one uint32_t (@a points to it). */
int tc_enc_u32(struct rrr_xdr *x, const void *a);

/* A payload argument: @iov[@niov] of @len bytes, then (tc_enc_pay_tag) @tag. */
struct tc_pay {
	const struct iovec *iov;
	unsigned niov;
	uint32_t len, tag;
};
/* Encoders of struct tc_pay: the payload alone, or the payload and the tag. */
int tc_enc_pay(struct rrr_xdr *x, const void *a);
int tc_enc_pay_tag(struct rrr_xdr *x, const void *a);

/* A decoded result: a payload (its pieces, copied to @copy when set), an
 * opaque into @copy, or three words. */
struct tc_got {
	uint32_t len;
	unsigned niov;
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV];
	uint8_t *copy; /* when set: the data copied here */
	uint32_t w[3];
};
/* Decoders into struct tc_got: a payload, an opaque (into ->copy), three u32. */
int tc_dec_pay(struct rrr_xdr *x, void *r);
int tc_dec_opaque(struct rrr_xdr *x, void *r);
int tc_dec_3u32(struct rrr_xdr *x, void *r);

/* How an asynchronous call ended: how many times its callback ran, and the
 * status it got (tc_once_done, with the struct as its argument, records). */
struct tc_once {
	atomic_int runs, status;
};
void tc_once_done(struct rrr_call *call, int status, void *arg);

/* Runs @fn on @n threads (thread t gets @arg + t * @stride bytes), joins
 * them all and asserts that each returned NULL. */
void tc_run_threads(unsigned n, void *(*fn)(void *), void *arg, size_t stride);

/* The outcome of a concurrent run's calls: how many completed and how many
 * of those were verified good (tc_tally_add counts one call). */
struct tc_tally {
	atomic_int ok, done;
};
void tc_tally_add(struct tc_tally *t, bool good);
/* Zero @t, run @fn on @n threads as tc_run_threads() does (they post calls
 * whose callbacks count into @t), then wait up to 30 s until @total calls
 * are done and assert that all @total were good. */
void tc_run_tallied(struct tc_tally *t, unsigned n, void *(*fn)(void *), void *arg, size_t stride,
		    int total);

/* The sum of the bytes of @iov[@n] (what the SUM procedures answer). */
uint32_t tc_iov_sum(const struct iovec *iov, unsigned n);

/* A handler's answer of @n bytes: with @ddp byte i is i * 7 + 3 and they
 * go as a payload (FILL), else i * 5 + 1 as an opaque (BIG). Returns the
 * handler's status. */
int tc_answer_pattern(struct rrr_svc_req *r, struct rrr_xdr *s, uint32_t n, bool ddp);

/* A handler that accepts anything and answers an empty result. */
int tc_h_null(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s);
/* A handler that takes the call and never answers it (RRR_SVC_DROP): the
 * call stays outstanding at the client. */
int tc_h_drop(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s);

/* Forks a server process: the child (alarm 60 s) runs @child_main(wfd, @arg),
 * which must end in tc_child_serve(); the parent reads the @len bytes it
 * writes (its ports) into @ports, asserting they come. Returns the child. */
pid_t tc_fork_server(void (*child_main)(int wfd, const void *arg), const void *arg, void *ports,
		     size_t len);
/* In the child: hands @ports (@len bytes) to the parent through @wfd, then
 * runs @svc until SIGTERM, destroys it and exits 0 (3 when the write fails;
 * under ASan 5 when memory leaked). */
_Noreturn void tc_child_serve(struct rrr_svc *svc, int wfd, const void *ports, size_t len);
/* In the child: says why the server could not be set up (rrr_last_error())
 * and exits 2. */
_Noreturn void tc_child_fail(void);
/* In the child: a server made with @o, @prog registered (else tc_child_fail()). */
struct rrr_svc *tc_child_svc(const struct rrr_svc_opts *o, const struct rrr_svc_program *prog);
/* In the child: @svc listening on RDMA (soft) and TCP at ephemeral ports of
 * 127.0.0.1 (else tc_child_fail()), handed to the parent as uint16_t[2]
 * (RDMA, TCP); then as tc_child_serve(). */
_Noreturn void tc_child_serve_both(struct rrr_svc *svc, int wfd);
/* Forks a server process (as tc_fork_server()) of @nthreads workers waiting
 * for events, with @prog, serving as tc_child_serve_both(); its ports
 * (RDMA, TCP) into @ports. Returns the child. */
pid_t tc_fork_program(const struct rrr_svc_program *prog, unsigned nthreads, uint16_t ports[2]);

/* Connects *@clnt to the forked server's @ports (RDMA, TCP) at 127.0.0.1
 * over @transport ("rdma" or "tcp") with @provider_opts (NULL: none), 10 s
 * per call and 3 s to connect, asserting it. */
void tc_connect(struct rrr_clnt **clnt, const char *transport, const uint16_t ports[2],
		const char *provider_opts);
/* Destroys *@clnt (*@clnt = NULL), then tc_stop_child(@child). */
void tc_disconnect_stop(struct rrr_clnt **clnt, pid_t *child);
/* SIGTERM to *@pid (when > 0), up to 3 s for it to exit, else SIGKILL; *@pid = 0. */
void tc_stop_child(pid_t *pid);
/* tc_stop_child(), returning the child's exit status (-1 when it did not
 * exit by itself, or there was none). */
int tc_stop_child_status(pid_t *pid);
/* SIGKILL to *@pid and reap it; *@pid = 0. */
void tc_kill_child(pid_t *pid);

#endif
