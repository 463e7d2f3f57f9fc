// SPDX-License-Identifier: GPL-2.0
/*
 * inotify-dev-shim.c - the inotify syscalls of a program, on /dev/inotify
 *
 * An LD_PRELOAD library: a program written for inotify(7) runs unchanged on
 * the inotify_dev module, each call mapped onto the device's own:
 *
 *   inotify_init(), inotify_init1(flags)   open("/dev/inotify"), IN_CLOEXEC and
 *                                          IN_NONBLOCK as O_CLOEXEC and O_NONBLOCK
 *   inotify_add_watch(fd, path, mask)      open(path, O_PATH, O_NOFOLLOW with
 *                                          IN_DONT_FOLLOW, O_DIRECTORY with
 *                                          IN_ONLYDIR), then ioctl(INOTIFY_ADD_WATCH)
 *                                          with the mask as it is (ABI version 2)
 *   inotify_rm_watch(fd, wd)               ioctl(INOTIFY_IGNORE, &wd)
 *
 * both through glibc's wrappers and through syscall(2) (LTP calls the
 * syscalls that way), and the files of /proc/sys/fs/inotify/ opened with
 * fopen() or open() are those of the module, /sys/class/misc/inotify/
 * (max_user_instances is max_user_devices there). read(), poll(), FIONREAD
 * and close() need nothing: the device answers them as inotify does.
 *
 * An errno of the device that inotify_add_watch(2) does not give for the
 * same cause is turned into the syscall's: ENOTTY (fd is not an instance)
 * is EINVAL. Used to run LTP's inotify tests on the module
 * (docs/KERNEL-MODULE.md, "LTP's inotify tests, on the device"); a test tool, not installed.
 *
 *   cc -shared -fPIC -O2 -Ikmod/uapi -o inotify-dev-shim.so tests/vm/shim/inotify-dev-shim.c -ldl
 *   LD_PRELOAD=./inotify-dev-shim.so PROGRAM...
 *
 * INOTIFY_DEV: the device (default /dev/inotify).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inotify_dev.h"

static const char *device(void) {
        const char *d = getenv("INOTIFY_DEV");

        return d && *d ? d : "/dev/inotify";
}

int inotify_init1(int flags) {
        if (flags & ~(IN_CLOEXEC | IN_NONBLOCK)) {
                errno = EINVAL;
                return -1;
        }
        return open(device(), O_RDONLY | (flags & IN_CLOEXEC ? O_CLOEXEC : 0) | (flags & IN_NONBLOCK ? O_NONBLOCK : 0));
}

int inotify_init(void) {
        return inotify_init1(0);
}

int inotify_add_watch(int fd, const char *path, uint32_t mask) {
        struct inotify_watch_request req = { .mask = mask };
        int wd, e;

        /* The lookup inotify_add_watch(2) makes, here: O_PATH opens nothing. */
        req.fd = open(path,
                      O_PATH | O_CLOEXEC | (mask & IN_DONT_FOLLOW ? O_NOFOLLOW : 0) |
                              (mask & IN_ONLYDIR ? O_DIRECTORY : 0));
        if (req.fd < 0)
                return -1;
        wd = ioctl(fd, INOTIFY_ADD_WATCH, &req);
        e = errno;
        close(req.fd);
        errno = wd < 0 && e == ENOTTY ? EINVAL : e;
        return wd;
}

int inotify_rm_watch(int fd, int wd) {
        int r = ioctl(fd, INOTIFY_IGNORE, &wd);

        if (r < 0 && errno == ENOTTY)
                errno = EINVAL;
        return r;
}

/* syscall(2), as LTP's tst_syscall() calls it: ours for the four, the real one for the rest. */
long syscall(long nr, ...) {
        static long (*real)(long, ...);
        long a[6];
        va_list ap;

        va_start(ap, nr);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);

        switch (nr) {
#ifdef SYS_inotify_init
        case SYS_inotify_init:
                return inotify_init();
#endif
        case SYS_inotify_init1:
                return inotify_init1((int) a[0]);
        case SYS_inotify_add_watch:
                return inotify_add_watch((int) a[0], (const char *) a[1], (uint32_t) a[2]);
        case SYS_inotify_rm_watch:
                return inotify_rm_watch((int) a[0], (int) a[1]);
        }
        if (!real)
                real = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
        return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* /proc/sys/fs/inotify/NAME -> the module's knob of the same meaning, or path itself. */
static const char *knob(const char *path) {
        static const struct {
                const char *proc, *sys;
        } map[] = {
                { "/proc/sys/fs/inotify/max_queued_events", "/sys/class/misc/inotify/max_queued_events" },
                { "/proc/sys/fs/inotify/max_user_watches", "/sys/class/misc/inotify/max_user_watches" },
                { "/proc/sys/fs/inotify/max_user_instances", "/sys/class/misc/inotify/max_user_devices" },
        };

        for (size_t i = 0; path && i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(path, map[i].proc) == 0)
                        return map[i].sys;
        return path;
}

FILE *fopen(const char *path, const char *mode) {
        static FILE *(*real)(const char *, const char *);

        if (!real)
                real = (FILE * (*) (const char *, const char *) ) dlsym(RTLD_NEXT, "fopen");
        return real(knob(path), mode);
}

FILE *fopen64(const char *path, const char *mode) {
        return fopen(path, mode);
}

/* open()'s third argument, there only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                         \
        do {                                           \
                va_list ap;                            \
                                                       \
                if ((flags) & (O_CREAT | O_TMPFILE)) { \
                        va_start(ap, flags);           \
                        mode = va_arg(ap, mode_t);     \
                        va_end(ap);                    \
                }                                      \
        } while (0)

int open(const char *path, int flags, ...) {
        static int (*real)(const char *, int, ...);
        mode_t mode = 0;

        OPEN_MODE(flags, mode);
        if (!real)
                real = (int (*)(const char *, int, ...)) dlsym(RTLD_NEXT, "open");
        return real(knob(path), flags, mode);
}

int open64(const char *path, int flags, ...) {
        mode_t mode = 0;

        OPEN_MODE(flags, mode);
        return open(path, flags, mode);
}
