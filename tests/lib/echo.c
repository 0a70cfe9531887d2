/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/echo.c - see echo.h.
 */
#include <string.h>

#include "tests/lib/echo.h"

int th_h_echo(struct rrr_svc_req *r, struct rrr_xdr *a, struct rrr_xdr *s)
{
	struct iovec iov[RRR_XDR_PAYLOAD_MAX_IOV], out;
	unsigned niov = 0;
	uint32_t len, off = 0;
	uint8_t *buf;

	if (rrr_xdr_decode_payload(a, 16u << 20, &len, iov, &niov))
		return RRR_SVC_GARBAGE_ARGS;
	buf = rrr_svc_req_alloc(r, len ? len : 1);
	if (!buf)
		return RRR_SVC_SYSTEM_ERR;
	for (unsigned i = 0; i < niov && off < len; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += (uint32_t)iov[i].iov_len;
	}
	out = (struct iovec){buf, len};
	return rrr_xdr_encode_payload(s, &out, 1, len) ? RRR_SVC_SYSTEM_ERR : 0;
}
