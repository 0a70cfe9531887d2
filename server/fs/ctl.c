/* SPDX-License-Identifier: MIT */
/*
 * server/fs/ctl.c - rrr-server's control thread: SIGHUP (reload the config)
 * and the stats socket (`rrr-server --stats`).
 *
 * Normal operation: main.c blocks SIGHUP before any thread starts, so no
 * worker ever takes it; this thread reads it from a signalfd and calls the
 * reload callback, outside any signal handler, so reloading may allocate,
 * read files and log. The same thread listens on a unix stream socket
 * (default STATE_DIR/stats.sock, so every instance, which needs its own
 * state dir anyway, has its own socket; mode 0660): every connection gets the counters as text, the
 * same lines SIGTERM prints, and is closed. Nothing is read from the
 * client, so there is no request to parse; a client that does not read
 * cannot stall the thread past a 1 s send timeout.
 *
 * Every second the thread also writes the count lines of log kinds a peer
 * flooded (fs_log_rate_flush, log.c), so the count of what was held back
 * is written when a flood stops, not at the next flood.
 *
 * Start-up: a socket path that a live server answers on is an error (two
 * servers, one path: set stats-socket); a stale socket file left by a
 * crash is removed and bound again. When the default path (in the state
 * dir) cannot be bound, e.g. the state dir is not writable, the server
 * runs without the socket and says so, as it runs without a persistent
 * handle key then; a path the operator chose must work. Stop: a pipe wakes the thread, it
 * exits, the socket file is removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "server/fs/config.h"

struct fs_ctl {
	pthread_t thread;
	int sigfd, lfd, wake[2];
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	fs_ctl_reload_fn reload;
	fs_ctl_stats_fn stats;
	void *arg;
};

void fs_ctl_default_socket(const char *state_dir, char *out, size_t len)
{
	snprintf(out, len, "%s/stats.sock", state_dir);
}

void fs_ctl_block_sighup(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

static void serve_one(struct fs_ctl *c)
{
	int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct timeval tv = {.tv_sec = 1};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (m) {
		c->stats(m, c->arg);
		if (fclose(m) == 0) {
			size_t off = 0;
			while (off < len) {
				ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
		}
		free(text);
	}
	close(fd);
}

static void *ctl_main(void *arg)
{
	struct fs_ctl *c = arg;
	for (;;) {
		struct pollfd p[3] = {{.fd = c->wake[0], .events = POLLIN},
				      {.fd = c->sigfd, .events = POLLIN},
				      {.fd = c->lfd, .events = POLLIN}};
		/* wakes every second for the count lines of rate-limited kinds */
		int n = poll(p, c->lfd >= 0 ? 3 : 2, (int)RRR__LOG_EVERY_MS);
		fs_log_rate_flush(false);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[0].revents)
			break;
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(c->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && c->reload)
				c->reload(c->arg);
		}
		if (c->lfd >= 0 && (p[2].revents & POLLIN))
			serve_one(c);
	}
	return NULL;
}

static int listen_unix(struct fs_ctl *c, const char *path, int lvl)
{
	struct sockaddr_un sa;
	if (unix_addr(path, &sa) < 0) {
		fs_log_at(lvl, "stats socket path %s is too long (%zu bytes at most): set "
				   "stats-socket",
			  path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	/* e.g. /run/rrr-server outside systemd's RuntimeDirectory= */
	char dir[sizeof(sa.sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			fs_log_at(lvl, "cannot create %s for the stats socket: %s (set stats-socket, "
					   "or stats-socket = none)",
				  dir, strerror(e));
			return -e;
		}
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int brc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (brc < 0 && errno == EADDRINUSE) {
		/* live server, or a stale file from a crash? */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (probe >= 0)
			close(probe);
		if (live) {
			fs_log_at(LOG_ERR, "another rrr-server answers on the stats socket %s: give "
					   "this one its own stats-socket (or --stats-socket)",
				  path);
			close(fd);
			return -EADDRINUSE;
		}
		unlink(path);
		brc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (brc < 0) {
		int e = errno;
		fs_log_at(lvl, "cannot bind the stats socket %s: %s (set stats-socket, or "
				   "stats-socket = none)",
			  path, strerror(e));
		close(fd);
		return -e;
	}
	if (chmod(path, 0660) < 0 || listen(fd, 16) < 0) {
		int e = errno;
		fs_log_at(lvl, "cannot listen on the stats socket %s: %s", path, strerror(e));
		close(fd);
		unlink(path);
		return -e;
	}
	c->lfd = fd;
	snprintf(c->path, sizeof(c->path), "%s", path);
	return 0;
}

int fs_ctl_start(const char *sock_path, bool required, fs_ctl_reload_fn reload,
		 fs_ctl_stats_fn stats, void *arg, struct fs_ctl **out)
{
	struct fs_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->lfd = -1;
	c->wake[0] = c->wake[1] = -1;
	c->reload = reload;
	c->stats = stats;
	c->arg = arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	int rc;
	c->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c->sigfd < 0 || pipe2(c->wake, O_CLOEXEC) < 0) {
		rc = -errno;
		fs_log_at(LOG_ERR, "cannot set up SIGHUP handling: %s", strerror(-rc));
		goto fail;
	}
	if (sock_path && (rc = listen_unix(c, sock_path, required ? LOG_ERR : LOG_WARNING)) < 0) {
		if (required || rc == -EADDRINUSE)
			goto fail;
		fs_log_at(LOG_WARNING, "running without a stats socket (rrr-server --stats will not "
				       "reach this server): set a usable stats-socket or --state-dir");
	}
	rc = -pthread_create(&c->thread, NULL, ctl_main, c);
	if (rc < 0) {
		fs_log_at(LOG_ERR, "cannot start the control thread: %s", strerror(-rc));
		goto fail_sock;
	}
	*out = c;
	return 0;

fail_sock:
	if (c->lfd >= 0) {
		close(c->lfd);
		unlink(c->path);
	}
fail:
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	if (c->sigfd >= 0)
		close(c->sigfd);
	free(c);
	return rc;
}

void fs_ctl_stop(struct fs_ctl *c)
{
	if (!c)
		return;
	char b = 1;
	if (write(c->wake[1], &b, 1) != 1) {
		/* a pipe with room for one byte does not fail; join anyway */
	}
	pthread_join(c->thread, NULL);
	if (c->lfd >= 0) {
		close(c->lfd);
		unlink(c->path);
	}
	close(c->wake[0]);
	close(c->wake[1]);
	close(c->sigfd);
	free(c);
}

int fs_ctl_query(const char *sock_path)
{
	struct sockaddr_un sa;
	if (unix_addr(sock_path, &sa) < 0) {
		fprintf(stderr, "rrr-server: stats socket path %s is too long\n", sock_path);
		return 1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		fprintf(stderr,
			"rrr-server: no running rrr-server answers on %s: %s (is it running? "
			"same --stats-socket, --state-dir or --config as the server?)\n",
			sock_path, strerror(e));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[4096];
	ssize_t n;
	size_t total = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		total += (size_t)n;
	}
	int e = errno;
	close(fd);
	if (n < 0 || total == 0) {
		fprintf(stderr, "rrr-server: the server on %s sent no counters%s%s\n", sock_path,
			n < 0 ? ": " : "", n < 0 ? strerror(e) : "");
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
