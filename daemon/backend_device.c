/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend_device - the kernel interface on /dev/inotify (inotify 0.23 ABI, and version 2)
 *
 * The differences from the syscalls that matter here (docs/KERNEL-MODULE.md, "Behaviour"):
 * wd 0 is valid; a read() whose buffer is too small for the next record
 * returns 0 rather than EINVAL, which cannot happen with the daemon's buffer
 * (>= BACKEND_MIN_READ) but is not mistaken for end of file either.
 * INOTIFY_IGNORE gets a pointer to the wd, the 2005 form that the module
 * reads unambiguously for any wd.
 *
 * At start the module is asked what it has (INOTIFY_GET_INFO). A module of
 * ABI version 2 takes the syscalls' mask through INOTIFY_ADD_WATCH, so a
 * PERSIST root gets IN_MOVE_SELF as on the syscalls, and is asked to leave
 * out everything the daemon's own process does (INOTIFY_SET_FLAGS,
 * INOTIFY_DEV_EXCL_SELF): its scans, polls and journal writes are nobody's
 * events (Backend.excludes_self). An older module answers ENOTTY: then the
 * eleven 0.23 events only (INOTIFY_WATCH silently drops IN_MOVE_SELF, and
 * IN_ONESHOT, which the daemon does itself for both backends), and the
 * daemon's reads are accounted for as on the syscalls (self_events.h).
 *
 * INOTIFY_WATCH is given the daemon's O_PATH fd as it is: the module takes
 * it (fget_raw) and checks read permission itself, so placing a watch opens
 * nothing, as with the syscalls. An older build of the module refuses O_PATH
 * fds with EBADF; then, for the rest of the backend's life (the open device
 * pins the module), the fd is reopened for reading, which its watchers see
 * (ARCHITECTURE.md, "The daemon's own opens").
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"

typedef struct DeviceBackend {
        Backend backend;
        bool reopen_path_fds; /* the module refuses O_PATH fds: an older build (atomic: workers add watches too) */
        bool add_watch;       /* INOTIFY_ADD_WATCH: ABI version 2 */
} DeviceBackend;

static DeviceBackend *device_backend(Backend *b) {
        return (DeviceBackend *) ((char *) b - offsetof(DeviceBackend, backend));
}

static int device_watch(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        bool v2 = device_backend(b)->add_watch;
        struct inotify_watch_request req = {
                .fd = fd,
                /* The events the module knows: on an older one the 0.23
                 * events only (IN_MOVE_SELF, which a PERSIST root asks for,
                 * is not one of them). */
                .mask = mask & (v2 ? INOTIFY_DEV_EVENTS : INOTIFY_DEV_ALL_EVENTS),
        };

        if (b->mask_add)
                req.mask |= mask & (IN_MASK_ADD | IN_MASK_CREATE);
        int wd;

        wd = ioctl(b->fd, v2 ? INOTIFY_ADD_WATCH : INOTIFY_WATCH, &req);
        if (wd < 0)
                return negative_errno();
        *ret_wd = wd;
        return 0;
}

/* The older module's way: an fd open for reading, through /proc/self/fd.
 * That open and its close are seen like anyone's: the watchers of this
 * inode (the new watch only the close) get IN_OPEN/IN_CLOSE_NOWRITE. */
static int device_watch_reopened(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        _cleanup_close_ int rfd = -1;
        char proc[sizeof("/proc/self/fd/") + 12];

        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
        rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (rfd < 0)
                return negative_errno();
        return device_watch(b, rfd, mask, ret_wd);
}

static int device_add_watch(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        DeviceBackend *d = device_backend(b);
        int fl, r;

        fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return negative_errno();
        if (!(fl & O_PATH))
                return device_watch(b, fd, mask, ret_wd);
        if (!__atomic_load_n(&d->reopen_path_fds, __ATOMIC_RELAXED)) {
                r = device_watch(b, fd, mask, ret_wd);
                /* fd is open (F_GETFL said so): EBADF is the module refusing O_PATH. */
                if (r != -EBADF)
                        return r;
                __atomic_store_n(&d->reopen_path_fds, true, __ATOMIC_RELAXED);
        }
        return device_watch_reopened(b, fd, mask, ret_wd);
}

static int device_rm_watch(Backend *b, int wd) {
        if (ioctl(b->fd, INOTIFY_IGNORE, &wd) < 0)
                return negative_errno();
        return 0;
}

static ssize_t device_read(Backend *b, void *buf, size_t size) {
        ssize_t n;

        if (size < BACKEND_MIN_READ)
                return -ENOBUFS;
        n = read(b->fd, buf, size);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();
        if (n == 0)
                return -ENOBUFS; /* 0.23: the next record does not fit */
        return n;
}

static int device_pending(Backend *b, size_t *ret) {
        int n;

        if (ioctl(b->fd, FIONREAD, &n) < 0)
                return negative_errno();
        *ret = n > 0 ? (size_t) n : 0;
        return 0;
}

static void device_free(Backend *b) {
        safe_close(b->fd);
        free(b->limit_hint);
        free(device_backend(b));
}

static const BackendOps device_ops = {
        .name = "device",
        .add_watch = device_add_watch,
        .rm_watch = device_rm_watch,
        .read = device_read,
        .free = device_free,
        .pending = device_pending,
};

/* Whether fd is an inotify device: a character device that answers FIONREAD
 * (the module does; /dev/null or a tty given by mistake does not, or not so). */
static int device_check(int fd) {
        struct stat st;
        int n;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISCHR(st.st_mode))
                return -ENOTTY;
        if (ioctl(fd, FIONREAD, &n) < 0)
                return negative_errno();
        return 0;
}

/* What the module has beyond 0.23 (INOTIFY_GET_INFO; ENOTTY from an older
 * one): INOTIFY_ADD_WATCH, and the daemon's own events left out. */
static void device_features(DeviceBackend *d, const char *device) {
        Backend *b = &d->backend;
        struct inotify_dev_info info = {};
        uint32_t flags = INOTIFY_DEV_EXCL_SELF;

        if (ioctl(b->fd, INOTIFY_GET_INFO, &info) < 0 || info.version < 2) {
                log_info("'%s' has the 0.23 ABI only (an older module): no IN_MOVE_SELF, and the daemon's "
                         "own reads are told from others' by accounting.",
                         device);
                return;
        }
        d->add_watch = (info.mask & IN_MOVE_SELF) != 0;
        b->mask_add = d->add_watch && (info.mask & (IN_MASK_ADD | IN_MASK_CREATE)) == (IN_MASK_ADD | IN_MASK_CREATE);
        if (!(info.flags & INOTIFY_DEV_EXCL_SELF))
                ;
        else if (ioctl(b->fd, INOTIFY_SET_FLAGS, &flags) >= 0)
                b->excludes_self = true;
        else
                log_warning_errno(-errno,
                                  "Failed to have '%s' leave out the daemon's own events, "
                                  "accounting for them instead: %m",
                                  device);
        log_info("'%s' has ABI version %" PRIu32 ": IN_MOVE_SELF %s, the daemon's own events %s.", device, info.version,
                 d->add_watch ? "reported" : "not reported", b->excludes_self ? "left out" : "accounted for");
}

int backend_device_new(const char *device, Backend **ret) {
        DeviceBackend *d;
        Backend *b;
        int r;

        d = calloc(1, sizeof(DeviceBackend));
        if (!d)
                return -ENOMEM;
        b = &d->backend;
        b->ops = &device_ops;
        b->fd = open(device, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        r = b->fd < 0 ? negative_errno() : device_check(b->fd);
        if (r < 0) {
                device_free(b);
                return r;
        }
        device_features(d, device);
        b->limit_path = "/sys/class/misc/inotify/max_user_watches";
        if (asprintf(&b->limit_hint, "%s", b->limit_path) < 0) {
                b->limit_hint = NULL;
                device_free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}
