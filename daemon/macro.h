/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * macro - the small helpers every watchd file uses
 *
 * Cleanup attributes in the style of systemd: a variable declared with
 * _cleanup_free_ or _cleanup_close_ is released when it goes out of scope,
 * and TAKE_PTR()/TAKE_FD() hand ownership on so it is not.
 */

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -1;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_PTR(p)                      \
        ({                               \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;              \
                _p_;                     \
        })

#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -1;       \
                _fd_;            \
        })

/* Declares fooptr(Foo **p) calling foo_free(*p), for _cleanup_(fooptr). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }

/* CLOCK_MONOTONIC in µs: the time of records, deadlines and slices. */
static inline uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

/* -errno of the last libc failure, never 0 (a missing errno is a bug; EIO then). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* A DIR on fd, which it takes: closed on failure too (fd < 0: the failure
 * of the call that gave it, from errno). */
static inline int fdopendir_take(int fd, DIR **ret) {
        DIR *d;
        int r;

        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        *ret = d;
        return 0;
}
