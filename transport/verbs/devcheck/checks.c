/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/devcheck/checks.c - the protection checks of rrr-devcheck.
 *
 * Normal operation: each check opens its own loopback connection (a check
 * that succeeds in proving a protection kills the client QP with a remote
 * access error), registers a 4 KiB range of the server buffer through the
 * strategy under test (rrr_mr_alloc + rrr_mr_map_sg + REG_MR; with "mw" the
 * window is bound over a long-lived MR covering the whole 256 KiB buffer, as
 * the provider does in production), and has the client try the access that
 * must work, then the access that must be refused:
 *
 *   bounds        WRITE one byte just past the registration: refused?
 *   rights        WRITE through a registration granting REMOTE_READ only
 *   local_inv     WRITE with the key after LOCAL_INV
 *   key_rotation  a second map of the same range has a new key and the old
 *                 key is refused once the new registration is valid
 *   remote_inv    (mw) Send With Invalidate: the receive reports the key and
 *                 a WRITE with it afterwards is refused
 *
 * A refused access that still changed memory is a FAIL too. A check that
 * cannot run (setup error, timeout) is ERROR, not PASS.
 *
 * Recovery: nothing persists between checks; every wait is bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "devcheck.h"

#define WIN_OFF (64 * 1024)
#define WIN_LEN 4096u

struct ctx {
	struct dc_loop l;
	struct rrr_mr *mr;
	uint32_t key;
	uint64_t iova;
};

static enum dc_verdict setup(struct ctx *c, const char *dev, const char *strategy, const char *addr,
			     unsigned access, char *d, size_t dl)
{
	struct rrr_sg sg;
	struct rrr_send_wr wr;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = dc_loop_open(&c->l, dev, strategy, addr, d, dl);
	if (rc)
		return rc == -EOPNOTSUPP ? DC_NA : DC_ERROR;
	rc = rrr_mr_alloc(c->l.pd, 4, &c->mr);
	if (rc) {
		snprintf(d, dl, "rrr_mr_alloc: %d", rc);
		return DC_ERROR;
	}
	sg = (struct rrr_sg){c->l.sbuf + WIN_OFF, 0, WIN_LEN};
	rc = rrr_mr_map_sg(c->mr, &sg, 1, access);
	if (rc != 1) {
		snprintf(d, dl, "rrr_mr_map_sg: %d", rc);
		return DC_ERROR;
	}
	c->key = rrr_mr_rkey(c->mr);
	c->iova = rrr_mr_iova(c->mr);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_REG_MR;
	wr.u.reg.mr = c->mr;
	wr.u.reg.access = access;
	if (dc_server_post(&c->l, &wr) != RRR_WC_SUCCESS) {
		snprintf(d, dl, "REG_MR did not complete successfully");
		return DC_ERROR;
	}
	return DC_PASS;
}

static void teardown(struct ctx *c)
{
	if (c->mr && rrr_mr_dereg(c->mr) == -EBUSY) {
		rrr_mr_recover(c->mr);
		rrr_mr_dereg(c->mr);
	}
	dc_loop_close(&c->l);
}

static bool clean(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static enum dc_verdict refused(struct ctx *c, uint64_t addr, uint32_t key, uint32_t len,
			       const uint8_t *watch, char *d, size_t dl, const char *what)
{
	enum rrr_wc_status st = dc_write(&c->l, addr, key, len);

	if (st == RRR_WC_SUCCESS) {
		snprintf(d, dl, "%s was ACCEPTED", what);
		return DC_FAIL;
	}
	if (!clean(watch, len)) {
		snprintf(d, dl, "%s failed (%s) but memory changed", what, rrr_wc_status_str(st));
		return DC_FAIL;
	}
	snprintf(d, dl, "%s refused: %s", what, rrr_wc_status_str(st));
	return DC_PASS;
}

static enum dc_verdict inside_ok(struct ctx *c, char *d, size_t dl)
{
	enum rrr_wc_status st = dc_write(&c->l, c->iova, c->key, 64);

	if (st != RRR_WC_SUCCESS || c->l.sbuf[WIN_OFF] != c->l.cbuf[0]) {
		snprintf(d, dl, "a WRITE inside the registration failed: %s",
			 rrr_wc_status_str(st));
		return DC_ERROR;
	}
	memset(c->l.sbuf + WIN_OFF, 0, 64);
	return DC_PASS;
}

static enum dc_verdict local_inv(struct ctx *c, uint32_t key)
{
	struct rrr_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_LOCAL_INV;
	wr.u.inv.rkey = key;
	return dc_server_post(&c->l, &wr) == RRR_WC_SUCCESS ? DC_PASS : DC_ERROR;
}

#define RW (RRR_ACCESS_LOCAL_WRITE | RRR_ACCESS_REMOTE_WRITE | RRR_ACCESS_REMOTE_READ)

static enum dc_verdict chk_bounds(const char *dev, const char *s, const char *a, char *d, size_t dl)
{
	struct ctx c;
	enum dc_verdict v = setup(&c, dev, s, a, RW, d, dl);

	if (v == DC_PASS)
		v = inside_ok(&c, d, dl);
	if (v == DC_PASS)
		v = refused(&c, c.iova + WIN_LEN, c.key, 1, c.l.sbuf + WIN_OFF + WIN_LEN, d, dl,
			    "a WRITE 1 byte past the end");
	teardown(&c);
	return v;
}

static enum dc_verdict chk_rights(const char *dev, const char *s, const char *a, char *d, size_t dl)
{
	struct ctx c;
	enum dc_verdict v = setup(&c, dev, s, a, RRR_ACCESS_REMOTE_READ, d, dl);

	if (v == DC_PASS)
		v = refused(&c, c.iova, c.key, 64, c.l.sbuf + WIN_OFF, d, dl,
			    "a WRITE through a read-only registration");
	teardown(&c);
	return v;
}

static enum dc_verdict chk_local_inv(const char *dev, const char *s, const char *a, char *d,
				     size_t dl)
{
	struct ctx c;
	enum dc_verdict v = setup(&c, dev, s, a, RW, d, dl);

	if (v == DC_PASS)
		v = inside_ok(&c, d, dl);
	if (v == DC_PASS && local_inv(&c, c.key) != DC_PASS) {
		snprintf(d, dl, "LOCAL_INV did not complete successfully");
		v = DC_ERROR;
	}
	if (v == DC_PASS)
		v = refused(&c, c.iova, c.key, 64, c.l.sbuf + WIN_OFF, d, dl,
			    "a WRITE after LOCAL_INV");
	teardown(&c);
	return v;
}

static enum dc_verdict chk_rotation(const char *dev, const char *s, const char *a, char *d,
				    size_t dl)
{
	struct rrr_sg sg;
	struct rrr_send_wr wr;
	struct ctx c;
	uint32_t old;
	enum dc_verdict v = setup(&c, dev, s, a, RW, d, dl);

	if (v == DC_PASS && local_inv(&c, c.key) != DC_PASS) {
		snprintf(d, dl, "LOCAL_INV did not complete successfully");
		v = DC_ERROR;
	}
	if (v != DC_PASS)
		goto out;
	old = c.key;
	sg = (struct rrr_sg){c.l.sbuf + WIN_OFF, 0, WIN_LEN};
	if (rrr_mr_map_sg(c.mr, &sg, 1, RW) != 1) {
		snprintf(d, dl, "second map failed");
		v = DC_ERROR;
		goto out;
	}
	c.key = rrr_mr_rkey(c.mr);
	if (c.key == old) {
		snprintf(d, dl, "the key did not change (0x%x)", old);
		v = DC_FAIL;
		goto out;
	}
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_REG_MR;
	wr.u.reg.mr = c.mr;
	wr.u.reg.access = RW;
	if (dc_server_post(&c.l, &wr) != RRR_WC_SUCCESS) {
		snprintf(d, dl, "second REG_MR failed");
		v = DC_ERROR;
		goto out;
	}
	v = inside_ok(&c, d, dl);
	if (v == DC_PASS)
		v = refused(&c, c.iova, old, 64, c.l.sbuf + WIN_OFF, d, dl,
			    "a WRITE with the previous key");
out:
	teardown(&c);
	return v;
}

static enum dc_verdict chk_remote_inv(const char *dev, const char *s, const char *a, char *d,
				      size_t dl)
{
	struct rrr_sge sge;
	struct rrr_recv_wr rw;
	struct rrr_send_wr wr;
	struct rrr_wc wc;
	struct ctx c;
	enum dc_verdict v = setup(&c, dev, s, a, RW, d, dl);

	if (v != DC_PASS)
		goto out;
	if (!c.l.attr.send_with_inv) {
		snprintf(d, dl, "remote invalidation is off for this device");
		v = DC_NA;
		goto out;
	}
	sge = (struct rrr_sge){(uintptr_t)c.l.sbuf, 64, rrr_mr_lkey(c.l.smr)};
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &sge;
	rw.num_sge = 1;
	if (rrr_qp_post_recv(c.l.sqp, &rw, NULL)) {
		v = DC_ERROR;
		goto out;
	}
	sge = (struct rrr_sge){(uintptr_t)c.l.cbuf, 8, rrr_mr_lkey(c.l.cmr)};
	memset(&wr, 0, sizeof(wr));
	wr.opcode = RRR_WR_SEND_WITH_INV;
	wr.flags = RRR_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.u.send.invalidate_rkey = c.key;
	if (rrr_qp_post_send(c.l.cqp, &wr, NULL) || !dc_wait(c.l.ccq, &wc) ||
	    wc.status != RRR_WC_SUCCESS) {
		snprintf(d, dl, "Send With Invalidate failed on the sender");
		v = DC_FAIL;
		goto out;
	}
	if (!dc_wait(c.l.scq, &wc) || wc.status != RRR_WC_SUCCESS) {
		snprintf(d, dl, "the receive of a Send With Invalidate failed");
		v = DC_FAIL;
		goto out;
	}
	if (!(wc.wc_flags & RRR_WC_WITH_INV) || wc.invalidated_rkey != c.key) {
		snprintf(d, dl, "the receive does not report the invalidated key");
		v = DC_FAIL;
		goto out;
	}
	memset(c.l.sbuf, 0, 64);
	v = refused(&c, c.iova, c.key, 64, c.l.sbuf + WIN_OFF, d, dl,
		    "a WRITE after remote invalidation");
out:
	teardown(&c);
	return v;
}

struct check {
	const char *name;
	enum dc_verdict (*fn)(const char *, const char *, const char *, char *, size_t);
	bool mw_only;
};

static const struct check checks[] = {
    {"bounds", chk_bounds, false},	  {"rights", chk_rights, false},
    {"local_inv", chk_local_inv, false},  {"key_rotation", chk_rotation, false},
    {"remote_inv", chk_remote_inv, true},
};

int dc_run_checks(const char *dev, const char *addr, struct dc_result *res, int max)
{
	static const char *const strategies[] = {"regmr", "mw", "persistent"};
	size_t s, k;
	int n = 0;

	for (s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
		for (k = 0; k < sizeof(checks) / sizeof(checks[0]) && n < max; k++) {
			struct dc_result *r = &res[n++];

			r->check = checks[k].name;
			r->strategy = strategies[s];
			r->detail[0] = '\0';
			if (checks[k].mw_only && strcmp(strategies[s], "mw") != 0) {
				snprintf(r->detail, sizeof(r->detail),
					 "a peer cannot invalidate ibv_reg_mr keys: not offered");
				r->verdict = DC_NA;
				continue;
			}
			r->verdict =
			    checks[k].fn(dev, strategies[s], addr, r->detail, sizeof(r->detail));
		}
	}
	return n;
}
