/* SPDX-License-Identifier: MIT */
/*
 * transport/verbs/devcheck/main.c - rrr-devcheck: does this RDMA device
 * enforce the protections rrr's per-I/O registration relies on?
 *
 * Normal operation: pick the device (-d, default the first) and an IPv4
 * address of its netdev (-a, default: found through sysfs + getifaddrs),
 * run every check of checks.c for each strategy over a loopback connection,
 * print a verdict table, which strategies are SAFE, and what strategy=auto
 * picks on this device and whether that pick passed.
 *
 * Exit status: 0 the default (auto) strategy passed every check; 1 it failed
 * one (configure strategy=regmr and report the device); 2 the checks could not
 * run (usage, no device, no address, a setup error).
 *
 * Recovery: every check is independent and bounded in time; an ERROR verdict
 * says which step failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devcheck.h"
#include "transport/verbs/verbs_impl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: rrr-devcheck [-d DEVICE] [-a IPV4] [-h]\n"
		   "Verifies by loopback on one RDMA device that registrations are enforced:\n"
		   "MR/window bounds, access rights, LOCAL_INV, remote invalidation, key\n"
		   "rotation; prints which rrr registration strategies are SAFE there.\n"
		   "  -d, --device DEV   verbs device (default: the first one)\n"
		   "  -a, --addr IPV4    address of the device's netdev (default: found via\n"
		   "                     /sys/class/infiniband/DEV/ports/1/gid_attrs/ndevs/0)\n"
		   "  -h, --help         this text\n"
		   "exit status: 0 strategy=auto is safe here, 1 it is not (use strategy=regmr),\n"
		   "             2 the checks could not run\n");
}

static int find_addr(const char *dev, char *out, size_t len)
{
	char path[256], ndev[IF_NAMESIZE + 1] = "";
	struct ifaddrs *ifa, *i;
	FILE *f;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", dev);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (!fgets(ndev, sizeof(ndev), f))
		ndev[0] = '\0';
	fclose(f);
	ndev[strcspn(ndev, "\n")] = '\0';
	if (!ndev[0] || getifaddrs(&ifa))
		return -ENOENT;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, ndev) == 0) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
				  (socklen_t)len);
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

static const char *vstr(enum dc_verdict v)
{
	switch (v) {
	case DC_PASS:
		return "PASS";
	case DC_FAIL:
		return "FAIL";
	case DC_NA:
		return "n/a";
	case DC_ERROR:
		return "ERROR";
	}
	return "?";
}

/* SAFE (all PASS/n-a), UNSAFE (a FAIL), UNKNOWN (an ERROR), n/a (not here). */
static const char *strategy_verdict(const struct dc_result *r, int n, const char *s,
				    const char **why)
{
	bool err = false, any = false;
	int i;

	*why = "";
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].strategy, s) != 0)
			continue;
		if (r[i].verdict == DC_FAIL) {
			*why = r[i].check;
			return "UNSAFE";
		}
		if (r[i].verdict == DC_ERROR) {
			err = true;
			*why = r[i].check;
		}
		if (r[i].verdict == DC_PASS)
			any = true;
	}
	if (err)
		return "UNKNOWN";
	return any ? "SAFE" : "n/a";
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"device", required_argument, NULL, 'd'},
	    {"addr", required_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *const strategies[] = {"regmr", "mw", "persistent"};
	struct dc_result res[DC_MAX_RESULTS];
	struct rrr_device_attr at;
	struct rrr_device *dev;
	char devname[64] = "", addr[64] = "", opts[96], quirks[256];
	const char *why, *auto_v;
	int c, n, i, rc;

	while ((c = getopt_long(argc, argv, "d:a:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			snprintf(devname, sizeof(devname), "%s", optarg);
			break;
		case 'a':
			snprintf(addr, sizeof(addr), "%s", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	snprintf(opts, sizeof(opts), "%s%s", devname[0] ? "dev=" : "", devname);
	rc = rrr_device_open("verbs", opts, &dev);
	if (rc) {
		fprintf(stderr, "rrr-devcheck: %s\n",
			rrr_last_error() ? rrr_last_error() : strerror(-rc));
		return 2;
	}
	rrr_device_query(dev, &at);
	rrr__verbs_quirks_str(dev, quirks, sizeof(quirks));
	rrr_device_close(dev);
	snprintf(devname, sizeof(devname), "%s", at.name);
	if (!addr[0] && find_addr(devname, addr, sizeof(addr))) {
		fprintf(stderr,
			"rrr-devcheck: no IPv4 address found for %s's netdev: give one "
			"with -a\n",
			devname);
		return 2;
	}
	printf("rrr-devcheck: device %s, loopback through %s\n", devname, addr);
	fflush(stdout);
	n = dc_run_checks(devname, addr, res, DC_MAX_RESULTS);

	printf("\n%-12s %-13s %-7s %s\n", "strategy", "check", "verdict", "detail");
	for (i = 0; i < n; i++)
		printf("%-12s %-13s %-7s %s\n", res[i].strategy, res[i].check, vstr(res[i].verdict),
		       res[i].detail);
	printf("\nstrategies on %s:\n", devname);
	for (i = 0; i < (int)(sizeof(strategies) / sizeof(strategies[0])); i++) {
		const char *v = strategy_verdict(res, n, strategies[i], &why);

		printf("  %-11s %s%s%s%s\n", strategies[i], v, why[0] ? " (" : "", why,
		       why[0] ? ")" : "");
	}
	printf("  %-11s not built (mlx5dv UMR lists)\n", "umr");
	if (strcmp(strategy_verdict(res, n, "mw", &why), "UNSAFE") == 0)
		printf("  -> memory windows do NOT protect on this device: do not use "
		       "strategy=mw here\n");
	auto_v = strategy_verdict(res, n, at.strategy, &why);
	if (quirks[0])
		printf("known quirks of %s, handled by the provider: %s\n", devname, quirks);
	printf("strategy=auto picks %s on %s: %s\n", at.strategy, devname, auto_v);
	if (strcmp(auto_v, "SAFE") == 0)
		return 0;
	if (strcmp(auto_v, "UNSAFE") == 0) {
		printf("rrr-devcheck: the default strategy is NOT safe here: use "
		       "strategy=regmr and report this device\n");
		return 1;
	}
	return 2;
}
