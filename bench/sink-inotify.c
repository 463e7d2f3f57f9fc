/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sink-inotify: the baseline, raw inotify(7) in one process.
 *
 * It does what any watcher must do and nothing more: read in large buffers,
 * pair renames by cookie (a MOVED_TO right after its MOVED_FROM, as the kernel
 * queues them), walk a tree to watch it recursively. Every other system is
 * compared with it, measured in the same run.
 *
 * With --extra /dev/inotify it reads the 2005 character device instead of the
 * syscalls (the VM run of the device backend): same records, watches placed
 * with the INOTIFY_WATCH ioctl on an open descriptor.
 *
 * With --extra watchd-reads it reads as watchd does (daemon/events.c): woken
 * by epoll, into a 64 KiB buffer, reading again only while a read came back
 * full (within the longest record of the end). Its CPU per event is then
 * that of the same system calls watchd makes for the kernel's side, and
 * bench/run's W6 gives watchd's ratio to both baselines: the plain one's
 * CPU is mostly its wake-ups, as many as the writer lets it have.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "inotify_dev.h"
#include "sink.h"

#define TREE_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVE | IN_CLOSE_WRITE | IN_ATTRIB)

/* The device wants an open descriptor; the syscalls a path. */
static int add_watch(int fd, bool device, const char *path, uint32_t mask) {
        struct inotify_watch_request req = { .mask = mask & ~(uint32_t) IN_ONLYDIR };
        int wd;

        if (!device)
                return inotify_add_watch(fd, path, mask);
        req.fd = open(path, O_RDONLY | O_CLOEXEC | ((mask & IN_ONLYDIR) ? O_DIRECTORY : 0));
        if (req.fd < 0)
                return -1;
        wd = ioctl(fd, INOTIFY_WATCH, &req);
        close(req.fd);
        return wd;
}

typedef struct Pending {
        uint32_t cookie; /* 0: no MOVED_FROM waiting */
        char path[4096];
} Pending;

static const char *wd_dir(const Sink *s, int wd, int wd2) {
        return wd == wd2 && s->dir2 ? s->dir2 : s->dir;
}

static void flush_pending(Sink *s, Pending *p) {
        if (p->cookie != 0)
                sink_half(s, SINK_MOVE_FROM, p->path);
        p->cookie = 0;
}

static void handle_rename(Sink *s, Pending *p, const struct inotify_event *ev, int wd2) {
        char path[4096];

        snprintf(path, sizeof path, "%s/%s", wd_dir(s, ev->wd, wd2), ev->name);
        if (ev->mask & IN_MOVED_FROM) {
                flush_pending(s, p);
                p->cookie = ev->cookie;
                memcpy(p->path, path, sizeof path);
        } else if (ev->mask & IN_MOVED_TO) {
                if (p->cookie != 0 && p->cookie == ev->cookie) {
                        sink_pair(s, p->path, path);
                        p->cookie = 0;
                } else {
                        flush_pending(s, p);
                        sink_half(s, SINK_MOVE_TO, path);
                }
        } else
                sink_other(s);
}

/* Watches every directory under root; returns the number of watches or -errno. */
static long watch_tree(int fd, bool device, const char *root) {
        size_t n = 0, alloc = 1024;
        char **stack = malloc(alloc * sizeof(char *));
        long watches = 0;

        if (!stack)
                return -ENOMEM;
        stack[n++] = strdup(root);
        while (n > 0) {
                char *dir = stack[--n];
                struct dirent *de;
                DIR *d;

                if (!dir || add_watch(fd, device, dir, TREE_MASK | IN_ONLYDIR) < 0) {
                        fprintf(stderr, "cannot watch \"%s\": %m\n", dir ? dir : "?");
                        free(dir);
                        continue;
                }
                watches++;
                d = opendir(dir);
                if (!d) {
                        free(dir);
                        continue;
                }
                while ((de = readdir(d))) {
                        char *child;

                        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        if (asprintf(&child, "%s/%s", dir, de->d_name) < 0)
                                continue;
                        if (n == alloc) {
                                char **bigger = realloc(stack, alloc * 2 * sizeof(char *));

                                if (!bigger) {
                                        free(child);
                                        continue;
                                }
                                stack = bigger;
                                alloc *= 2;
                        }
                        stack[n++] = child;
                }
                closedir(d);
                free(dir);
        }
        free(stack);
        return watches;
}

/* watchd's read (daemon/events.c): its buffer, and a read shorter than it by the longest record took everything. */
#define WATCHD_READ_BUF (64 * 1024)
#define RECORD_MAX      (sizeof(struct inotify_event) + NAME_MAX + 1)

static void handle(Sink *s, Pending *pending, const char *buf, ssize_t len, int wd2) {
        for (const char *p = buf; p < buf + len;) {
                const struct inotify_event *ev = (const struct inotify_event *) p;

                if (ev->mask & IN_Q_OVERFLOW)
                        sink_lost(s);
                else if (s->mode == SINK_RENAME)
                        handle_rename(s, pending, ev, wd2);
                else if (s->mode == SINK_TREE)
                        sink_other(s);
                else
                        sink_file(s, ev->len > 0 ? ev->name : "");
                p += sizeof(struct inotify_event) + ev->len;
        }
}

int main(int argc, char **argv) {
        static char buf[256 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        Pending *pending = calloc(1, sizeof(Pending));
        int fd, ep = -1, wd2 = -1, r = 0;
        bool device, watchd_reads;
        Sink s;

        sink_parse(&s, argc, argv);
        device = s.extra && strcmp(s.extra, "/dev/inotify") == 0;
        watchd_reads = s.extra && strcmp(s.extra, "watchd-reads") == 0;
        if (device)
                fd = open(s.extra, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        else
                fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0 || !pending) {
                fprintf(stderr, "%s: %m\n", device ? s.extra : "inotify_init1");
                return 1;
        }
        if (watchd_reads) {
                struct epoll_event e = { .events = EPOLLIN };

                ep = epoll_create1(EPOLL_CLOEXEC);
                if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0) {
                        fprintf(stderr, "epoll: %m\n");
                        free(pending);
                        return 1;
                }
        }

        switch (s.mode) {
        case SINK_STORM:
                r = add_watch(fd, device, s.dir, IN_CLOSE_WRITE);
                break;
        case SINK_LATENCY:
                r = add_watch(fd, device, s.dir, IN_MODIFY);
                break;
        case SINK_RENAME:
                r = add_watch(fd, device, s.dir, IN_MOVE);
                if (r >= 0 && s.dir2) {
                        wd2 = add_watch(fd, device, s.dir2, IN_MOVE);
                        r = wd2;
                }
                break;
        case SINK_TREE:
                r = (int) watch_tree(fd, device, s.dir);
                break;
        }
        if (r < 0) {
                fprintf(stderr, "cannot watch \"%s\": %m\n", s.dir);
                return 1;
        }
        sink_ready(&s, 0);

        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                struct epoll_event ee;
                int timeout, k;
                ssize_t len;

                timeout = sink_wait_ms(&s);
                if (timeout == 0)
                        break;
                if (pending->cookie != 0 && timeout > 10)
                        timeout = 10; /* a MOVED_FROM alone is delivered after 10 ms */
                k = watchd_reads ? epoll_wait(ep, &ee, 1, timeout) : poll(&pfd, 1, timeout);
                if (k < 0 && errno != EINTR)
                        break;
                if (watchd_reads && k <= 0) {
                        flush_pending(&s, pending);
                        continue;
                }

                do {
                        len = read(fd, buf, watchd_reads ? WATCHD_READ_BUF : sizeof buf);
                        if (len < 0)
                                break;
                        handle(&s, pending, buf, len, wd2);
                } while (watchd_reads && (size_t) len > WATCHD_READ_BUF - RECORD_MAX);
                if (len < 0) {
                        if (errno == EAGAIN || errno == EINTR) {
                                flush_pending(&s, pending);
                                continue;
                        }
                        fprintf(stderr, "read: %m\n");
                        break;
                }
        }
        flush_pending(&s, pending);

        r = sink_report(&s);
        sink_free(&s);
        free(pending);
        if (ep >= 0)
                close(ep);
        close(fd);
        return r < 0 ? 1 : 0;
}
