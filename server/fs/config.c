/* SPDX-License-Identifier: MIT */
/*
 * server/fs/config.c - rrr-server's config file (rrr-server.conf(5)).
 *
 * Normal operation: the file is INI-like, one setting a line:
 *
 *     # comment (a line whose first non-blank is '#' or ';')
 *     [server]
 *     rdma-port = 20049
 *     [export /srv/nfs]
 *     allow = 127.0.0.1 10.0.0.0/8
 *
 * Keys before any section belong to [server]. Values run to the end of the
 * line with blanks trimmed (no inline comments: paths may hold '#'). Every
 * key maps to one enum fs_conf_key, the same one a command-line flag sets,
 * so main.c parses the file into one struct fs_conf, the flags into
 * another, and merges the flags over the file (fs_conf_merge).
 *
 * Exports: each [export DIR] section is one export, with its own keys
 * (name, read-only, allow, root-squash, anon-uid, anon-gid). The first one
 * lives in fs_conf's top-level fields, where the command line's export
 * flags (--export, --read-only, --allow, ...) also land, so a one-export
 * server reads as it always did; the later ones go to fs_conf.more[].
 * fs_conf_export_get() gives every export the same shape. Whether two
 * exports overlap (the same directory by another path, one inside the
 * other, the same name) needs their real paths: main.c checks that.
 *
 * Hostile input: the file is read whole, at most FS_CONF_MAX_SIZE bytes; a
 * NUL byte, a line over FS_CONF_MAX_LINE bytes, an unknown section or key, a
 * key given twice in one section, a number out of range or with trailing
 * junk, more than FS_CONF_MAX_EXPORTS exports, the same export directory
 * twice, or more than FS_CONF_MAX_ALLOW networks is an error naming the
 * file and line. Nothing is applied from a file
 * that fails: the caller parses into a scratch struct and keeps the old one
 * (that is how a bad file on SIGHUP leaves the running server unchanged).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "server/fs/config.h"

enum kind { K_STR, K_PORT, K_BOOL, K_U32, K_OTHER };

static const struct key {
	const char *name;
	bool export_section; /* belongs to [export DIR] */
	bool live;           /* a reload applies it */
	enum kind kind;
} keys[FS_K_COUNT] = {
	[FS_K_LISTEN] = {"listen", false, false, K_STR},
	[FS_K_RDMA_PORT] = {"rdma-port", false, false, K_PORT},
	[FS_K_MOUNT_PORT] = {"mount-port", false, false, K_PORT},
	[FS_K_TCP_PORT] = {"tcp-port", false, false, K_OTHER},
	[FS_K_RDMA] = {"rdma", false, false, K_BOOL},
	[FS_K_PROVIDER] = {"provider", false, false, K_OTHER},
	[FS_K_POPTS] = {"provider-opts", false, false, K_STR},
	[FS_K_THREADS] = {"threads", false, false, K_U32},
	[FS_K_STATE_DIR] = {"state-dir", false, false, K_STR},
	[FS_K_LOG_LEVEL] = {"log-level", false, true, K_OTHER},
	[FS_K_STATS_SOCKET] = {"stats-socket", false, false, K_STR},
	[FS_K_WAIT] = {"wait", false, false, K_OTHER},
	[FS_K_SPIN_US] = {"spin-us", false, false, K_U32},
	[FS_K_MAX_REQUESTS] = {"max-requests", false, false, K_U32},
	[FS_K_INLINE_SEND] = {"inline-send", false, false, K_U32},
	[FS_K_INLINE_RECV] = {"inline-recv", false, false, K_U32},
	[FS_K_MAX_SEGS] = {"max-segs", false, false, K_U32},
	[FS_K_MAX_PAYLOAD] = {"max-payload", false, false, K_U32},
	[FS_K_PORT_FILE] = {"port-file", false, false, K_STR},
	[FS_K_DRC_ENTRIES] = {"drc-entries", false, false, K_U32},
	[FS_K_MAX_CONNS] = {"max-conns", false, false, K_U32},
	[FS_K_MAX_CONNS_PER_ADDR] = {"max-conns-per-addr", false, false, K_U32},
	[FS_K_IDLE_TIMEOUT] = {"idle-timeout", false, false, K_U32},
	[FS_K_SETUP_TIMEOUT] = {"setup-timeout", false, false, K_U32},
	[FS_K_MAX_SETUP] = {"max-setup", false, false, K_U32},
	[FS_K_DIRECT_WRITE] = {"direct-write", false, false, K_U32},
	[FS_K_RPCBIND] = {"rpcbind", false, false, K_BOOL},
	[FS_K_GRACE] = {"grace", false, false, K_U32},
	[FS_K_EXPORT] = {"export", true, false, K_STR},
	[FS_K_NAME] = {"name", true, false, K_STR},
	[FS_K_READ_ONLY] = {"read-only", true, true, K_BOOL},
	[FS_K_ALLOW] = {"allow", true, true, K_OTHER},
	[FS_K_ROOT_SQUASH] = {"root-squash", true, false, K_BOOL},
	[FS_K_ANON_UID] = {"anon-uid", true, false, K_U32},
	[FS_K_ANON_GID] = {"anon-gid", true, false, K_U32},
};

/* Bounds of the numeric keys (inclusive). */
static void bounds(enum fs_conf_key k, uint32_t *lo, uint32_t *hi)
{
	*lo = 0;
	*hi = UINT32_MAX;
	switch (k) {
	case FS_K_THREADS: *hi = 1024; break;
	case FS_K_SPIN_US: *hi = RRR_WAIT_SPIN_US_MAX; break;
	case FS_K_MAX_REQUESTS: *lo = 1; *hi = 1024; break;
	case FS_K_INLINE_SEND:
	case FS_K_INLINE_RECV: *lo = 1024; *hi = 1u << 20; break;
	case FS_K_MAX_SEGS: *lo = 1; *hi = 1024; break;
	case FS_K_MAX_PAYLOAD: *lo = 4096; *hi = 64u << 20; break;
	case FS_K_ANON_UID:
	case FS_K_ANON_GID: *hi = 0xfffffffeu; break;
	case FS_K_DRC_ENTRIES: *hi = 65536; break; /* FS_DRC_MAX_ENTRIES */
	case FS_K_DIRECT_WRITE: *hi = 64u << 20; break;
	case FS_K_GRACE: *hi = 3600; break;
	case FS_K_MAX_CONNS:
	case FS_K_MAX_CONNS_PER_ADDR:
	case FS_K_IDLE_TIMEOUT: *hi = RRR_SVC_UNLIMITED - 1; break;
	case FS_K_SETUP_TIMEOUT:
	case FS_K_MAX_SETUP: *lo = 1; *hi = RRR_SVC_UNLIMITED - 1; break;
	default: break;
	}
}

const char *fs_conf_key_name(enum fs_conf_key k)
{
	return (unsigned)k < FS_K_COUNT ? keys[k].name : "?";
}

void fs_conf_defaults(struct fs_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->rdma_port = 20049;
	c->mount_port = 20048;
	c->tcp_port = 2049; /* used when free unless the key is given (main.c) */
	c->rdma = true;
	c->rpcbind = true;
	c->grace = 90;
	snprintf(c->provider, sizeof(c->provider), "soft");
	c->log_level = LOG_NOTICE;
	c->wait_mode = RRR_WAIT_ADAPTIVE;
	c->root_squash = true;
	c->anon_uid = c->anon_gid = 65534;
}

/* The keys of an [export DIR] section, as fs_conf.set bits. */
static uint64_t export_keys(void)
{
	uint64_t m = 0;
	for (unsigned k = 0; k < FS_K_COUNT; k++)
		if (keys[k].export_section)
			m |= 1ull << k;
	return m;
}

/* The first export's fields of @c as an fs_conf_export. */
static void first_get(const struct fs_conf *c, struct fs_conf_export *e)
{
	e->set = c->set & export_keys();
	e->line = c->export_line;
	memcpy(e->dir, c->export_dir, sizeof(e->dir));
	memcpy(e->name, c->name, sizeof(e->name));
	e->read_only = c->read_only;
	e->root_squash = c->root_squash;
	e->anon_uid = c->anon_uid;
	e->anon_gid = c->anon_gid;
	e->nallow = c->nallow;
	memcpy(e->allow, c->allow, sizeof(e->allow[0]) * c->nallow);
}

unsigned fs_conf_nexports(const struct fs_conf *c)
{
	return c->export_dir[0] ? 1 + c->nmore : 0;
}

void fs_conf_export_get(const struct fs_conf *c, unsigned i, struct fs_conf_export *out)
{
	if (i == 0) {
		first_get(c, out);
		return;
	}
	const struct fs_conf_export *e = &c->more[i - 1];
	size_t head = offsetof(struct fs_conf_export, allow);
	memcpy(out, e, head);
	memcpy(out->allow, e->allow, sizeof(e->allow[0]) * e->nallow);
}

void fs_conf_export_set_live(struct fs_conf *c, unsigned i, const struct fs_conf_export *e)
{
	uint64_t allow = 1ull << FS_K_ALLOW;
	if (i == 0) {
		c->read_only = e->read_only;
		c->nallow = e->nallow;
		memcpy(c->allow, e->allow, sizeof(c->allow[0]) * e->nallow);
		c->set = (c->set & ~allow) | (e->set & allow);
		return;
	}
	struct fs_conf_export *d = &c->more[i - 1];
	d->read_only = e->read_only;
	d->nallow = e->nallow;
	memcpy(d->allow, e->allow, sizeof(d->allow[0]) * e->nallow);
	d->set = (d->set & ~allow) | (e->set & allow);
}

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fs_cidr_parse(const char *s, struct fs_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	char *slash = strchr(buf, '/');
	long bits = -1;
	if (slash) {
		*slash++ = '\0';
		char *end;
		if (*slash < '0' || *slash > '9' || strlen(slash) > 3)
			return -EINVAL;
		bits = strtol(slash, &end, 10);
		if (*end)
			return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		if (bits > 32)
			return -EINVAL;
		out->bits = bits < 0 ? 32 : (unsigned)bits;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		if (bits > 128)
			return -EINVAL;
		out->bits = bits < 0 ? 128 : (unsigned)bits;
		/* ::ffff:a.b.c.d/N is the IPv4 network a.b.c.d/(N-96) */
		if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)out->addr) && out->bits >= 96) {
			memmove(out->addr, out->addr + 12, 4);
			memset(out->addr + 4, 0, 12);
			out->family = AF_INET;
			out->bits -= 96;
		}
	} else {
		return -EINVAL;
	}
	return 0;
}

bool fs_cidr_match(const struct fs_cidr *n, const struct sockaddr_storage *ss)
{
	/* an IPv4-mapped IPv6 peer (dual-stack listener) is both: its IPv4
	 * address for IPv4 networks, ::ffff:a.b.c.d for IPv6 ones */
	const uint8_t *a4 = NULL, *a6 = NULL;
	if (ss->ss_family == AF_INET) {
		a4 = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *in6 = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		a6 = in6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(in6))
			a4 = a6 + 12;
	}
	const uint8_t *a = n->family == AF_INET ? a4 : n->family == AF_INET6 ? a6 : NULL;
	if (!a)
		return false;
	unsigned full = n->bits / 8, rest = n->bits % 8;
	if (memcmp(a, n->addr, full))
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xffu << (8 - rest));
		if ((a[full] & mask) != (n->addr[full] & mask))
			return false;
	}
	return true;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *yes[] = {"yes", "true", "on", "1"}, *no[] = {"no", "false", "off", "0"};
	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	if (*v < '0' || *v > '9')
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int set_str(char *dst, size_t cap, const char *v, const char *key, char *err,
		   size_t errlen)
{
	if (strlen(v) >= cap)
		return fail(err, errlen, "%s is longer than %zu bytes", key, cap - 1);
	snprintf(dst, cap, "%s", v);
	return 0;
}

/* listen: up to FS_CONF_MAX_LISTEN host names or addresses. */
static int check_listen(const char *v, char *err, size_t errlen)
{
	char buf[FS_CONF_MAX_LINE];
	snprintf(buf, sizeof(buf), "%s", v);
	unsigned n = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
		if (++n > FS_CONF_MAX_LISTEN)
			return fail(err, errlen, "listen has more than %u addresses", FS_CONF_MAX_LISTEN);
		for (const char *q = t; *q; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			      (*q >= '0' && *q <= '9') || strchr(".:-_%[]", *q)))
				return fail(err, errlen, "listen: '%.64s' is not an address or host name", t);
	}
	return 0;
}

static int set_allow(struct fs_conf *c, const char *v, char *err, size_t errlen)
{
	char buf[FS_CONF_MAX_LINE];
	snprintf(buf, sizeof(buf), "%s", v);
	unsigned n = 0;
	char *save = NULL;
	for (char *t = strtok_r(buf, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save)) {
		if (n == FS_CONF_MAX_ALLOW)
			return fail(err, errlen, "allow lists more than %u networks", FS_CONF_MAX_ALLOW);
		if (!strcmp(t, "*") || !strcasecmp(t, "all")) {
			/* everyone: 0.0.0.0/0 and ::/0 */
			if (n + 2 > FS_CONF_MAX_ALLOW)
				return fail(err, errlen, "allow lists more than %u networks",
					    FS_CONF_MAX_ALLOW);
			fs_cidr_parse("0.0.0.0/0", &c->allow[n++]);
			fs_cidr_parse("::/0", &c->allow[n++]);
			continue;
		}
		if (fs_cidr_parse(t, &c->allow[n]) < 0)
			return fail(err, errlen,
				    "allow: '%.64s' is not an address or network (e.g. 192.0.2.7, "
				    "10.0.0.0/8, fd00::/8, *)",
				    t);
		n++;
	}
	c->nallow = n; /* an empty list allows nobody */
	return 0;
}

int fs_conf_set(struct fs_conf *c, enum fs_conf_key k, const char *v, char *err, size_t errlen)
{
	const char *name = fs_conf_key_name(k);
	uint32_t lo, hi, u;
	bool b;
	int rc = 0;
	if ((unsigned)k >= FS_K_COUNT)
		return fail(err, errlen, "no such setting");
	bounds(k, &lo, &hi);
	switch (keys[k].kind) {
	case K_PORT:
		if (parse_u32(v, 0, 65535, &u) < 0)
			return fail(err, errlen, "%s '%.64s' is not a port (0..65535)", name, v);
		if (k == FS_K_RDMA_PORT)
			c->rdma_port = (int)u;
		else
			c->mount_port = (int)u;
		break;
	case K_BOOL:
		if (parse_bool(v, &b) < 0)
			return fail(err, errlen, "%s '%.64s' is not yes or no", name, v);
		if (k == FS_K_RDMA)
			c->rdma = b;
		else if (k == FS_K_RPCBIND)
			c->rpcbind = b;
		else if (k == FS_K_READ_ONLY)
			c->read_only = b;
		else
			c->root_squash = b;
		break;
	case K_U32:
		if (parse_u32(v, lo, hi, &u) < 0)
			return fail(err, errlen, "%s '%.64s' is not a number in %u..%u", name, v, lo,
				    hi);
		switch (k) {
		case FS_K_THREADS: c->threads = u; break;
		case FS_K_SPIN_US: c->spin_us = u; break;
		case FS_K_MAX_REQUESTS: c->max_requests = u; break;
		case FS_K_INLINE_SEND: c->inline_send = u; break;
		case FS_K_INLINE_RECV: c->inline_recv = u; break;
		case FS_K_MAX_SEGS: c->max_segs = u; break;
		case FS_K_DRC_ENTRIES: c->drc_entries = u; break;
		case FS_K_DIRECT_WRITE: c->direct_write = u; break;
		case FS_K_GRACE: c->grace = u; break;
		case FS_K_MAX_CONNS: c->max_conns = u; break;
		case FS_K_MAX_CONNS_PER_ADDR: c->max_conns_per_addr = u; break;
		case FS_K_IDLE_TIMEOUT: c->idle_timeout_ms = u; break;
		case FS_K_SETUP_TIMEOUT: c->setup_timeout_ms = u; break;
		case FS_K_MAX_SETUP: c->max_setup = u; break;
		case FS_K_ANON_UID: c->anon_uid = u; break;
		case FS_K_ANON_GID: c->anon_gid = u; break;
		default: c->max_payload = u; break;
		}
		break;
	case K_STR:
		switch (k) {
		case FS_K_LISTEN:
			rc = set_str(c->listen, sizeof(c->listen), v, name, err, errlen);
			if (rc == 0)
				rc = check_listen(v, err, errlen);
			break;
		case FS_K_POPTS:
			rc = set_str(c->provider_opts, sizeof(c->provider_opts), v, name, err, errlen);
			break;
		case FS_K_STATE_DIR:
			rc = set_str(c->state_dir, sizeof(c->state_dir), v, name, err, errlen);
			break;
		case FS_K_STATS_SOCKET:
			rc = set_str(c->stats_socket, sizeof(c->stats_socket), v, name, err, errlen);
			break;
		case FS_K_PORT_FILE:
			rc = set_str(c->port_file, sizeof(c->port_file), v, name, err, errlen);
			break;
		case FS_K_EXPORT:
			rc = set_str(c->export_dir, sizeof(c->export_dir), v, name, err, errlen);
			break;
		default: rc = set_str(c->name, sizeof(c->name), v, name, err, errlen); break;
		}
		if (rc == 0 && !*v && k != FS_K_POPTS && k != FS_K_LISTEN)
			return fail(err, errlen, "%s is empty", name);
		break;
	case K_OTHER:
		if (k == FS_K_TCP_PORT) {
			if (!strcasecmp(v, "none") || !strcmp(v, "-1"))
				c->tcp_port = -1;
			else if (parse_u32(v, 0, 65535, &u) == 0)
				c->tcp_port = (int)u;
			else
				return fail(err, errlen, "tcp-port '%.64s' is not a port (0..65535) or none",
					    v);
		} else if (k == FS_K_PROVIDER) {
			if (strcmp(v, "soft") && strcmp(v, "verbs"))
				return fail(err, errlen, "provider '%.64s' is not soft or verbs", v);
			snprintf(c->provider, sizeof(c->provider), "%s", v);
		} else if (k == FS_K_LOG_LEVEL) {
			int l = fs_log_level_parse(v);
			if (l < 0)
				return fail(err, errlen,
					    "log-level '%.64s' is not error, warning, notice, info or debug",
					    v);
			c->log_level = l;
		} else if (k == FS_K_WAIT) {
			if (rrr_wait_mode_parse(v, &c->wait_mode))
				return fail(err, errlen, "wait '%.64s' is not event, adaptive or spin", v);
		} else {
			rc = set_allow(c, v, err, errlen);
		}
		break;
	}
	if (rc == 0)
		c->set |= 1ull << k;
	return rc;
}

void fs_conf_merge(struct fs_conf *dst, const struct fs_conf *src)
{
	for (unsigned k = 0; k < FS_K_COUNT; k++) {
		if (!(src->set & (1ull << k)))
			continue;
		dst->set |= 1ull << k;
		switch ((enum fs_conf_key)k) {
		case FS_K_LISTEN: memcpy(dst->listen, src->listen, sizeof(dst->listen)); break;
		case FS_K_RDMA_PORT: dst->rdma_port = src->rdma_port; break;
		case FS_K_MOUNT_PORT: dst->mount_port = src->mount_port; break;
		case FS_K_TCP_PORT: dst->tcp_port = src->tcp_port; break;
		case FS_K_RDMA: dst->rdma = src->rdma; break;
		case FS_K_PROVIDER: memcpy(dst->provider, src->provider, sizeof(dst->provider)); break;
		case FS_K_POPTS:
			memcpy(dst->provider_opts, src->provider_opts, sizeof(dst->provider_opts));
			break;
		case FS_K_THREADS: dst->threads = src->threads; break;
		case FS_K_STATE_DIR: memcpy(dst->state_dir, src->state_dir, sizeof(dst->state_dir)); break;
		case FS_K_LOG_LEVEL: dst->log_level = src->log_level; break;
		case FS_K_STATS_SOCKET:
			memcpy(dst->stats_socket, src->stats_socket, sizeof(dst->stats_socket));
			break;
		case FS_K_WAIT: dst->wait_mode = src->wait_mode; break;
		case FS_K_SPIN_US: dst->spin_us = src->spin_us; break;
		case FS_K_MAX_REQUESTS: dst->max_requests = src->max_requests; break;
		case FS_K_INLINE_SEND: dst->inline_send = src->inline_send; break;
		case FS_K_INLINE_RECV: dst->inline_recv = src->inline_recv; break;
		case FS_K_MAX_SEGS: dst->max_segs = src->max_segs; break;
		case FS_K_MAX_PAYLOAD: dst->max_payload = src->max_payload; break;
		case FS_K_DRC_ENTRIES: dst->drc_entries = src->drc_entries; break;
		case FS_K_DIRECT_WRITE: dst->direct_write = src->direct_write; break;
		case FS_K_RPCBIND: dst->rpcbind = src->rpcbind; break;
		case FS_K_GRACE: dst->grace = src->grace; break;
		case FS_K_MAX_CONNS: dst->max_conns = src->max_conns; break;
		case FS_K_MAX_CONNS_PER_ADDR: dst->max_conns_per_addr = src->max_conns_per_addr; break;
		case FS_K_IDLE_TIMEOUT: dst->idle_timeout_ms = src->idle_timeout_ms; break;
		case FS_K_SETUP_TIMEOUT: dst->setup_timeout_ms = src->setup_timeout_ms; break;
		case FS_K_MAX_SETUP: dst->max_setup = src->max_setup; break;
		case FS_K_PORT_FILE: memcpy(dst->port_file, src->port_file, sizeof(dst->port_file)); break;
		case FS_K_EXPORT: memcpy(dst->export_dir, src->export_dir, sizeof(dst->export_dir)); break;
		case FS_K_NAME: memcpy(dst->name, src->name, sizeof(dst->name)); break;
		case FS_K_READ_ONLY: dst->read_only = src->read_only; break;
		case FS_K_ALLOW:
			dst->nallow = src->nallow;
			memcpy(dst->allow, src->allow, sizeof(dst->allow[0]) * src->nallow);
			break;
		case FS_K_ROOT_SQUASH: dst->root_squash = src->root_squash; break;
		case FS_K_ANON_UID: dst->anon_uid = src->anon_uid; break;
		case FS_K_ANON_GID: dst->anon_gid = src->anon_gid; break;
		case FS_K_COUNT: break;
		}
	}
	if (src->set & (1ull << FS_K_EXPORT))
		dst->export_line = src->export_line;
	if (src->nmore) {
		dst->nmore = src->nmore;
		for (unsigned i = 0; i < src->nmore; i++)
			fs_conf_export_get(src, i + 1, &dst->more[i]);
	}
}

/* Compare one key of two configs (only restart-only keys are asked). */
static bool differs(const struct fs_conf *a, const struct fs_conf *b, enum fs_conf_key k)
{
	switch (k) {
	case FS_K_LISTEN: return strcmp(a->listen, b->listen) != 0;
	case FS_K_RDMA_PORT: return a->rdma_port != b->rdma_port;
	case FS_K_MOUNT_PORT: return a->mount_port != b->mount_port;
	case FS_K_TCP_PORT: return a->tcp_port != b->tcp_port;
	case FS_K_RDMA: return a->rdma != b->rdma;
	case FS_K_PROVIDER: return strcmp(a->provider, b->provider) != 0;
	case FS_K_POPTS: return strcmp(a->provider_opts, b->provider_opts) != 0;
	case FS_K_THREADS: return a->threads != b->threads;
	case FS_K_STATE_DIR: return strcmp(a->state_dir, b->state_dir) != 0;
	case FS_K_STATS_SOCKET: return strcmp(a->stats_socket, b->stats_socket) != 0;
	case FS_K_WAIT: return a->wait_mode != b->wait_mode;
	case FS_K_SPIN_US: return a->spin_us != b->spin_us;
	case FS_K_MAX_REQUESTS: return a->max_requests != b->max_requests;
	case FS_K_INLINE_SEND: return a->inline_send != b->inline_send;
	case FS_K_INLINE_RECV: return a->inline_recv != b->inline_recv;
	case FS_K_MAX_SEGS: return a->max_segs != b->max_segs;
	case FS_K_MAX_PAYLOAD: return a->max_payload != b->max_payload;
	case FS_K_DRC_ENTRIES: return a->drc_entries != b->drc_entries;
	case FS_K_DIRECT_WRITE: return a->direct_write != b->direct_write;
	case FS_K_RPCBIND: return a->rpcbind != b->rpcbind;
	case FS_K_GRACE: return a->grace != b->grace;
	case FS_K_MAX_CONNS: return a->max_conns != b->max_conns;
	case FS_K_MAX_CONNS_PER_ADDR: return a->max_conns_per_addr != b->max_conns_per_addr;
	case FS_K_IDLE_TIMEOUT: return a->idle_timeout_ms != b->idle_timeout_ms;
	case FS_K_SETUP_TIMEOUT: return a->setup_timeout_ms != b->setup_timeout_ms;
	case FS_K_MAX_SETUP: return a->max_setup != b->max_setup;
	case FS_K_PORT_FILE: return strcmp(a->port_file, b->port_file) != 0;
	case FS_K_EXPORT: return strcmp(a->export_dir, b->export_dir) != 0;
	case FS_K_NAME: return strcmp(a->name, b->name) != 0;
	case FS_K_ROOT_SQUASH: return a->root_squash != b->root_squash;
	case FS_K_ANON_UID: return a->anon_uid != b->anon_uid;
	case FS_K_ANON_GID: return a->anon_gid != b->anon_gid;
	default: return false;
	}
}

/* Whether the later exports differ in anything a reload cannot apply. */
static bool more_differ(const struct fs_conf *a, const struct fs_conf *b)
{
	if (a->nmore != b->nmore)
		return true;
	for (unsigned i = 0; i < a->nmore; i++) {
		const struct fs_conf_export *x = &a->more[i], *y = &b->more[i];
		if (strcmp(x->dir, y->dir) || strcmp(x->name, y->name) ||
		    x->root_squash != y->root_squash || x->anon_uid != y->anon_uid ||
		    x->anon_gid != y->anon_gid)
			return true;
	}
	return false;
}

void fs_conf_restart_diff(const struct fs_conf *a, const struct fs_conf *b, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (unsigned k = 0; k <= FS_K_COUNT; k++) {
		const char *what;
		if (k == FS_K_COUNT) {
			if (!more_differ(a, b))
				continue;
			what = "exports";
		} else {
			if (keys[k].live || !differs(a, b, (enum fs_conf_key)k))
				continue;
			what = keys[k].name;
		}
		int n = snprintf(out + used, len - used, "%s%s", used ? ", " : "", what);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Read the whole file (bounded) into a NUL-terminated buffer. */
static int slurp(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open config file %s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "config file %s is not a regular file", path);
		return -EINVAL;
	}
	char *buf = malloc(FS_CONF_MAX_SIZE + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "out of memory reading %s", path);
		return -ENOMEM;
	}
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, FS_CONF_MAX_SIZE + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(e));
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > FS_CONF_MAX_SIZE) {
			snprintf(err, errlen, "config file %s is larger than %u bytes", path,
				 FS_CONF_MAX_SIZE);
			free(buf);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

int fs_conf_load(struct fs_conf *c, const char *path, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = slurp(path, &buf, &len, err, errlen);
	if (rc < 0)
		return rc;
	rc = fs_conf_parse(c, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

/* Open a new [export DIR] section on line @lineno: the first export goes to
 * @c's own fields, later ones to c->more[] through the scratch config *@t
 * (allocated here on first use). *@cur: 0 = first export, k = more[k-1]. */
static int export_begin(struct fs_conf *c, struct fs_conf **t, int *cur, const char *dir,
			const char *path, unsigned lineno, char *err, size_t errlen)
{
	char msg[512];
	if (*dir != '/')
		return fail(err, errlen, "%s:%u: the export '%.64s' is not an absolute path", path,
			    lineno, dir);
	for (unsigned i = 0; i < fs_conf_nexports(c); i++) {
		const char *d = i ? c->more[i - 1].dir : c->export_dir;
		unsigned l = i ? c->more[i - 1].line : c->export_line;
		if (l && !strcmp(d, dir))
			return fail(err, errlen, "%s:%u: the export %.64s is already on line %u",
				    path, lineno, dir, l);
	}
	if (!c->export_line) {
		/* the first section: over whatever the defaults hold */
		if (fs_conf_set(c, FS_K_EXPORT, dir, msg, sizeof(msg)) < 0)
			return fail(err, errlen, "%s:%u: %s", path, lineno, msg);
		c->export_line = lineno;
		*cur = 0;
		return 0;
	}
	if (c->nmore + 1 >= FS_CONF_MAX_EXPORTS)
		return fail(err, errlen, "%s:%u: more than %u exports (the most one server serves)",
			    path, lineno, FS_CONF_MAX_EXPORTS);
	if (!*t && !(*t = malloc(sizeof(**t))))
		return fail(err, errlen, "%s:%u: out of memory", path, lineno);
	fs_conf_defaults(*t);
	if (fs_conf_set(*t, FS_K_EXPORT, dir, msg, sizeof(msg)) < 0)
		return fail(err, errlen, "%s:%u: %s", path, lineno, msg);
	(*t)->export_line = lineno;
	first_get(*t, &c->more[c->nmore]);
	*cur = (int)++c->nmore;
	return 0;
}

int fs_conf_parse(struct fs_conf *c, const char *path, char *buf, size_t len, char *err,
		  size_t errlen)
{
	int rc;
	if (len > FS_CONF_MAX_SIZE)
		return fail(err, errlen, "config file %s is larger than %u bytes", path,
			    FS_CONF_MAX_SIZE);
	if (memchr(buf, '\0', len))
		return fail(err, errlen, "%s: a NUL byte in the file (not a text file?)", path);
	uint64_t file_set = 0, ekeys = export_keys();
	unsigned key_line[FS_K_COUNT] = {0};
	bool in_export = false;
	int cur = -1;             /* the export section being read (see export_begin) */
	struct fs_conf *t = NULL; /* scratch for the keys of later exports */
	c->export_line = 0;
	c->nmore = 0;
	unsigned lineno = 0;
	char *p = buf, msg[512];
	while (*p) {
		lineno++;
		char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		if (ll + 1 > FS_CONF_MAX_LINE) {
			rc = fail(err, errlen, "%s:%u: line longer than %u bytes", path, lineno,
				  FS_CONF_MAX_LINE - 1);
			goto out;
		}
		p[ll] = '\0';
		char *line = trim(p);
		p = nl ? nl + 1 : p + ll;
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			char *close = strchr(line, ']');
			if (!close || *trim(close + 1)) {
				rc = fail(err, errlen, "%s:%u: a section is '[server]' or '[export DIR]'",
					  path, lineno);
				goto out;
			}
			*close = '\0';
			char *sec = trim(line + 1);
			if (!strcmp(sec, "server")) {
				in_export = false;
				continue;
			}
			if (strncmp(sec, "export", 6) || (sec[6] != ' ' && sec[6] != '\t')) {
				rc = fail(err, errlen,
					  "%s:%u: unknown section '[%.64s]' (want [server] or "
					  "[export DIR])",
					  path, lineno, sec);
				goto out;
			}
			rc = export_begin(c, &t, &cur, trim(sec + 6), path, lineno, err, errlen);
			if (rc < 0)
				goto out;
			/* the export keys may be given again in the new section */
			file_set = (file_set & ~ekeys) | (1ull << FS_K_EXPORT);
			key_line[FS_K_EXPORT] = lineno;
			in_export = true;
			continue;
		}
		char *eq = strchr(line, '=');
		if (!eq) {
			rc = fail(err, errlen, "%s:%u: want 'key = value', '[section]' or '# comment'",
				  path, lineno);
			goto out;
		}
		*eq = '\0';
		char *key = trim(line), *val = trim(eq + 1);
		unsigned k;
		for (k = 0; k < FS_K_COUNT; k++)
			if (k != FS_K_EXPORT && !strcmp(keys[k].name, key))
				break;
		if (k == FS_K_COUNT) {
			rc = fail(err, errlen, "%s:%u: unknown key '%.64s'", path, lineno, key);
			goto out;
		}
		if (keys[k].export_section != in_export) {
			rc = fail(err, errlen, "%s:%u: '%s' belongs in %s", path, lineno, key,
				  keys[k].export_section ? "an [export DIR] section" : "[server]");
			goto out;
		}
		if (file_set & (1ull << k)) {
			rc = fail(err, errlen, "%s:%u: '%s' is already set on line %u", path, lineno,
				  key, key_line[k]);
			goto out;
		}
		struct fs_conf *target = in_export && cur > 0 ? t : c;
		if (fs_conf_set(target, (enum fs_conf_key)k, val, msg, sizeof(msg)) < 0) {
			rc = fail(err, errlen, "%s:%u: %s", path, lineno, msg);
			goto out;
		}
		if (target == t)
			first_get(t, &c->more[cur - 1]);
		file_set |= 1ull << k;
		key_line[k] = lineno;
	}
	rc = 0;
out:
	free(t);
	return rc;
}
