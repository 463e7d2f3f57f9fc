/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vmtest.h - the little the VM test programs share: running each test in its
 * own child with a time limit, reporting "PASS name" / "FAIL name: why" on
 * stdout (one write per line, so that lines stay whole on the serial
 * console), reading the module's sysfs files, and an event reader.
 */
#ifndef VMTEST_H
#define VMTEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inotify_dev.h"

#define SYSFS_DIR "/sys/class/misc/inotify"

/* Writes one whole line to stdout. */
static inline void vt_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void vt_line(const char *fmt, ...) {
        char line[1024];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if (n > (int) sizeof(line) - 2)
                n = (int) sizeof(line) - 2;
        line[n++] = '\n';
        if (write(STDOUT_FILENO, line, (size_t) n) < 0)
                _exit(3);
}

/* The reason a test failed, set by vt_fail() and printed by the runner. */
static char vt_why[512];

static inline int vt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int vt_fail(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(vt_why, sizeof(vt_why), fmt, ap);
        va_end(ap);
        return -1;
}

/* Checks a condition; on failure records where and what, and returns -1. */
#define CHECK(cond, ...)                                                                                   \
        do {                                                                                               \
                if (!(cond)) {                                                                             \
                        char _m[400];                                                                      \
                        snprintf(_m, sizeof(_m), __VA_ARGS__);                                             \
                        return vt_fail("line %d: %s (errno %d %s)", __LINE__, _m, errno, strerror(errno)); \
                }                                                                                          \
        } while (0)

struct vt_test {
        const char *name;
        int (*fn)(void);
        unsigned timeout_s;
};

/*
 * Runs one test in a child process, killed after its timeout; prints its
 * result line. Returns true if it passed.
 */
static inline bool vt_run(const struct vt_test *t) {
        int pipefd[2], status = 0, limit_ms = (int) (t->timeout_s ? t->timeout_s : 20) * 1000;
        char why[sizeof(vt_why)] = "";
        struct pollfd pfd;
        ssize_t n = 0;
        pid_t pid;

        if (pipe(pipefd) < 0) {
                vt_line("FAIL %s: pipe: %s", t->name, strerror(errno));
                return false;
        }
        pid = fork();
        if (pid < 0) {
                vt_line("FAIL %s: fork: %s", t->name, strerror(errno));
                return false;
        }
        if (pid == 0) {
                int r;

                close(pipefd[0]);
                r = t->fn();
                if (r < 0 && write(pipefd[1], vt_why, strlen(vt_why)) < 0)
                        _exit(2);
                _exit(r < 0 ? 1 : 0);
        }
        close(pipefd[1]);
        /* The child's end closes when it exits: a hang cannot stall the suite. */
        pfd.fd = pipefd[0];
        pfd.events = POLLIN;
        if (poll(&pfd, 1, limit_ms) == 1)
                n = read(pipefd[0], why, sizeof(why) - 1);
        else
                kill(pid, SIGKILL);
        why[n > 0 ? n : 0] = '\0';
        close(pipefd[0]);
        if (waitpid(pid, &status, 0) < 0) {
                vt_line("FAIL %s: waitpid: %s", t->name, strerror(errno));
                return false;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                vt_line("PASS %s", t->name);
                return true;
        }
        if (WIFSIGNALED(status))
                vt_line("FAIL %s: killed by signal %d%s", t->name, WTERMSIG(status),
                        WTERMSIG(status) == SIGKILL ? " (timed out)" : "");
        else
                vt_line("FAIL %s: %s", t->name, why[0] ? why : "failed");
        return false;
}

/* Reads a number from a sysfs file; -1 on error. */
static inline long vt_sysfs_get(const char *path) {
        char buf[64] = "";
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        return strtol(buf, NULL, 10);
}

/* Writes a string to a sysfs file; 0 or -errno. */
static inline int vt_sysfs_set(const char *path, const char *val) {
        ssize_t n;
        int fd, e;

        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = write(fd, val, strlen(val));
        e = errno;
        close(fd);
        return n < 0 ? -e : 0;
}

/* A buffered event reader over /dev/inotify or an inotify_init1() fd. */
struct vt_reader {
        int fd;
        size_t len, off;
        char buf[65536] __attribute__((aligned(8)));
};

/*
 * Returns the next record, waiting up to timeout_ms for one; NULL on
 * timeout or error (errno says which: ETIMEDOUT on timeout).
 */
static inline const struct inotify_event *vt_next(struct vt_reader *r, int timeout_ms) {
        const struct inotify_event *ev;
        struct pollfd p = { .fd = r->fd, .events = POLLIN };
        ssize_t n;

        if (r->off >= r->len) {
                int k = poll(&p, 1, timeout_ms);

                if (k == 0)
                        errno = ETIMEDOUT;
                if (k <= 0)
                        return NULL;
                n = read(r->fd, r->buf, sizeof(r->buf));
                if (n <= 0) {
                        if (n == 0)
                                errno = ENODATA;
                        return NULL;
                }
                r->len = (size_t) n;
                r->off = 0;
        }
        ev = (const struct inotify_event *) (r->buf + r->off);
        r->off += sizeof(*ev) + ev->len;
        return ev;
}

static inline double vt_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

#endif /* VMTEST_H */
