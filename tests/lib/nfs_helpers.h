/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/nfs_helpers.h - real rrr-server / rrr-client processes
 * for the NFS integration tests: start a server on a fresh temporary export
 * with free ports, run the client, stop the server. Every wait is bounded.
 */
#ifndef RRR_TESTS_NFS_HELPERS_H
#define RRR_TESTS_NFS_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rrr/nfs3_client.h>

struct th_server {
	pid_t pid;
	char dir[256];      /* temporary directory: export/, state/, log, ports */
	char export_dir[300];
	char state_dir[300];
	char log[300];
	unsigned rdma_port, mount_port;
	const char *const *extra_args; /* more rrr-server options (NULL-terminated), or NULL */
	unsigned nofile;               /* the server's RLIMIT_NOFILE soft limit, 0: inherited */
	bool root_squash;   /* false (th_mkdirs): start with --no-root-squash, so
			     * tests running as root act as root on the export */
	uid_t run_uid;      /* not 0: the server runs as this uid and run_gid (no
			     * supplementary groups), an ordinary user; the test
			     * chowns what the server must write (th_chown_tree) */
	gid_t run_gid;
	bool rpcbind;       /* false: --no-rpcbind --tcp-port none (the servers of
			     * parallel tests neither register nor take 2049) */
};

/* $RRR_BUILD/<prog>, or NULL when RRR_BUILD is unset or the file is missing. */
const char *th_prog(const char *prog, char *buf, size_t len);
/* Skips the test unless rrr-server is built. */
void th_need_server(void);
/* Skips the test unless rrr-server and rrr-client are built; the client's
 * path into @client (th_prog). */
void th_need_server_and_client(char client[512]);
/* Make a fresh temporary directory with export/ and state/ inside. */
int th_mkdirs(struct th_server *s);
/* Start rrr-server on s->export_dir (--no-rdma when !rdma); waits for the
 * port file up to 10 s. 0 or -errno. */
int th_server_start(struct th_server *s, bool rdma);
/* SIGTERM, wait up to 10 s (SIGKILL after); returns the exit status or -1. */
int th_server_stop(struct th_server *s);
/* After the fork of server @s (s->pid): waits up to 10 s for the ports file
 * @ports ("rdma=R mount=M tcp=T") into s->rdma_port/mount_port: 0, -ECHILD
 * when the server exited first (s->pid = -1), -ETIMEDOUT (server stopped). */
int th_server_wait_ports(struct th_server *s, const char *ports);
/* The start of a server process for @s: $RRR_BUILD/rrr-server into @prog,
 * its ports file s->dir/ports into @ports (removed), then a fork whose child
 * writes to s->log and holds no descriptor above 2. The pid (0 in the
 * child, which goes on to exec @prog), or -errno. */
pid_t th_server_fork(struct th_server *s, char prog[512], char ports[320]);
/* The monotonic clock in seconds. */
double th_now(void);
/* chown -R s->dir to @uid:@gid (a server that runs as them). 0 or -errno. */
int th_chown_tree(struct th_server *s, uid_t uid, gid_t gid);
/* Remove the temporary tree. */
void th_cleanup(struct th_server *s);
/* Run a command (argv, NULL-terminated) with a timeout; stdout goes to
 * @out_path when non-NULL. Returns the exit status, or -1. */
int th_run(char *const argv[], const char *out_path, int timeout_s);
/* Write @len pseudo-random bytes (seeded) to @path. */
int th_random_file(const char *path, size_t len, uint32_t seed);
/* 0 when both files have equal contents. */
int th_cmp_files(const char *a, const char *b);
/* Whether @path's contents contain @needle. */
bool th_file_contains(const char *path, const char *needle);
/* Lines of the file at @path that contain @needle; -1 if it cannot be read. */
int th_count_lines(const char *path, const char *needle);

/* The result of an rrr_nfs3_* call just made on this thread, for asserting
 * the server's exact status: when it failed with an NFS error, checks that
 * the -errno is the one rrr_nfs3_stat_to_errno() gives and returns the
 * POSITIVE nfsstat3 (rrr_nfs3_last_status()); otherwise returns @rc. */
int th_nfs_st(int rc);

/* A client's mount options for server @s: over TCP (its port, MNT over it
 * too) or RPC-over-RDMA on the soft provider (its RDMA port, MNT over TCP
 * to its mount port), host 127.0.0.1, its export, a 10 s timeout. o.port
 * and o.mount_port point into @m: use @m in place, never a copy. Change
 * any field of m->o before th_nfs_mount(). */
struct th_mount {
	struct rrr_nfs3_opts o;
	char port[16], mport[16];
};
void th_mount_opts(const struct th_server *s, bool rdma, struct th_mount *m);
/* rrr_nfs3_mount(&m->o, ...): the mount, or a failed assertion that quotes
 * the library's sentence. */
struct rrr_nfs3 *th_nfs_mount(struct th_mount *m);
/* th_nfs_mount() of @s's export over @rdma or TCP as AUTH_SYS @uid/@gid. */
struct rrr_nfs3 *th_nfs_mount_as(const struct th_server *s, bool rdma, uint32_t uid, uint32_t gid);

/* Two tests of @suite, @timeout s each: tcp_@name runs @fn(false) and
 * soft_rdma_@name runs @fn(true) (the bool: over RPC-over-RDMA). */
#define TH_TEST_BOTH(suite, name, fn, timeout_s)                                                   \
	Test(suite, tcp_##name, .timeout = timeout_s)                                              \
	{                                                                                          \
		fn(false);                                                                         \
	}                                                                                          \
	Test(suite, soft_rdma_##name, .timeout = timeout_s)                                        \
	{                                                                                          \
		fn(true);                                                                          \
	}

#endif
