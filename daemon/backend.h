/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * backend - the kernel interface, behind one small interface
 *
 * Two implementations: "device" (/dev/inotify from the inotify_dev module,
 * inotify 0.23 ABI: ioctl INOTIFY_WATCH with an open fd, INOTIFY_IGNORE with
 * a pointer to the wd) and "syscall" (inotify_init1(2)). Both hand back
 * the same record bytes (struct inotify_event), decoded by event_decode.
 * Only the backend touches the kernel fd; the rest of the daemon cannot tell
 * the two apart, except by the name and the limit hint used in messages.
 *
 * A watch is always placed through an fd the daemon has opened (with the
 * caller's credentials), never by path, so the object checked is the object
 * watched. That fd may be O_PATH (access_open_as() returns one) and both
 * backends use it as it is, so placing a watch generates no event; only with
 * an older build of the module, which refuses O_PATH fds, does the device
 * backend reopen it for reading. Masks are the eleven 0.23 events, and
 * IN_MOVE_SELF for a PERSIST root (the syscalls have it, and a module of ABI
 * version 2 through INOTIFY_ADD_WATCH; an older one has not): ONESHOT is the
 * daemon's.
 *
 * What the daemon does itself is an event like anyone's to the syscalls: its
 * reads of the directories it scans are accounted for above (self_events.h).
 * The device asks the module to leave all of it out (INOTIFY_DEV_EXCL_SELF)
 * and says so in excludes_self.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

typedef struct Backend Backend;

typedef struct BackendOps {
        const char *name; /* "device" or "syscall" */
        int (*add_watch)(Backend *b, int fd, uint32_t mask, int *ret_wd);
        int (*rm_watch)(Backend *b, int wd);
        /* Return: bytes read (> 0), or -EAGAIN when nothing is queued, or -errno. */
        ssize_t (*read)(Backend *b, void *buf, size_t size);
        void (*free)(Backend *b);
        /* Optional: many watches on directories in a row (a RECURSIVE walk's slice). */
        void (*batch)(Backend *b, bool begin);
        /* Optional: the bytes a read would return now (FIONREAD). */
        int (*pending)(Backend *b, size_t *ret);
        /* Optional: add_watch safe from any thread, also during another
         * thread's batch (NULL: add_watch is). */
        int (*add_watch_any_thread)(Backend *b, int fd, uint32_t mask, int *ret_wd);
} BackendOps;

struct Backend {
        const BackendOps *ops;
        int fd;                 /* the kernel fd, -1 for a fake */
        char *limit_hint;       /* how to raise the kernel's watch limit */
        const char *limit_path; /* the file that holds that limit, or NULL (a fake) */
        bool excludes_self;     /* the kernel leaves out what the daemon's own process does */
        bool mask_add;          /* add_watch takes IN_MASK_ADD and IN_MASK_CREATE */
};

/* BACKEND_AUTO: the device if it can be opened, else the syscalls. */
int backend_new(BackendType type, const char *device, Backend **ret);
int backend_device_new(const char *device, Backend **ret);
int backend_syscall_new(Backend **ret);
Backend *backend_free(Backend *b);

/* The kernel's limit on the watches of the daemon's uid (read from
 * limit_path). Return: 0, or -errno (-ENOENT: no such file, a fake). */
int backend_watch_limit(const Backend *b, uint32_t *ret);

/* The smallest read buffer: one record with the longest name (16 + 256). */
#define BACKEND_MIN_READ 272u

static inline const char *backend_name(const Backend *b) {
        return b->ops->name;
}

/* The fd to poll for readability. */
static inline int backend_get_fd(const Backend *b) {
        return b->fd;
}

/* Watches the object open at fd for mask; the same inode gives the same wd. Return: 0 or -errno. */
static inline int backend_add_watch(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        return b->ops->add_watch(b, fd, mask, ret_wd);
}

/* backend_add_watch() from a worker thread: it does not use the batch's
 * working directory, which is the whole process's (backend_batch()). */
static inline int backend_add_watch_any_thread(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        return (b->ops->add_watch_any_thread ? b->ops->add_watch_any_thread : b->ops->add_watch)(b, fd, mask, ret_wd);
}

/* Removes a watch; the kernel queues IN_IGNORED for it. Return: 0 or -errno (-EINVAL: unknown wd). */
static inline int backend_rm_watch(Backend *b, int wd) {
        return b->ops->rm_watch(b, wd);
}

/*
 * Brackets a run of backend_add_watch() calls on directories with nothing
 * else in between (a slice of a RECURSIVE walk): the syscall backend then
 * places each watch through the directory itself (its fd made the
 * process's working directory, and ".") instead of /proc/self/fd/N, whose
 * lookup costs about 2 µs more a directory; the working directory is put
 * back where the daemon started at the end of the run.
 */
static inline void backend_batch(Backend *b, bool begin) {
        if (b->ops->batch)
                b->ops->batch(b, begin);
}

static inline ssize_t backend_read(Backend *b, void *buf, size_t size) {
        return b->ops->read(b, buf, size);
}

/* The bytes of records queued in the kernel now, as read() would return
 * them. Return: 0, or -errno (-EOPNOTSUPP: the backend cannot say). */
static inline int backend_pending(Backend *b, size_t *ret) {
        return b->ops->pending ? b->ops->pending(b, ret) : -EOPNOTSUPP;
}
