/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * backend_syscall - the kernel interface on inotify_init1(2)
 *
 * inotify_add_watch() takes a path; to watch exactly the object the daemon
 * opened with the caller's credentials, the path is /proc/self/fd/N, which
 * the kernel resolves to the open file itself (no second lookup of the
 * client's path, so no race between the check and the watch). fd may be
 * O_PATH (it usually is: see access.h), so placing a watch opens nothing
 * and neither the new watch nor the inode's other watchers see IN_OPEN or
 * IN_CLOSE_NOWRITE from the daemon.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "backend.h"
#include "macro.h"

static int syscall_add_watch(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        char path[sizeof("/proc/self/fd/") + 12];
        int wd;

        snprintf(path, sizeof(path), "/proc/self/fd/%i", fd);
        wd = inotify_add_watch(b->fd, path, mask);
        if (wd < 0)
                return negative_errno();
        *ret_wd = wd;
        return 0;
}

static int syscall_rm_watch(Backend *b, int wd) {
        if (inotify_rm_watch(b->fd, wd) < 0)
                return negative_errno();
        return 0;
}

static ssize_t syscall_read(Backend *b, void *buf, size_t size) {
        ssize_t n;

        n = read(b->fd, buf, size);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();
        if (n == 0)
                return -EIO;    /* an inotify fd never reaches end of file */
        return n;
}

static void syscall_free(Backend *b) {
        safe_close(b->fd);
        free(b->limit_hint);
        free(b);
}

static const BackendOps syscall_ops = {
        .name = "syscall",
        .add_watch = syscall_add_watch,
        .rm_watch = syscall_rm_watch,
        .read = syscall_read,
        .free = syscall_free,
};

int backend_syscall_new(Backend **ret) {
        Backend *b;

        b = calloc(1, sizeof(Backend));
        if (!b)
                return -ENOMEM;
        b->ops = &syscall_ops;
        b->limit_hint = strdup("/proc/sys/fs/inotify/max_user_watches (sysctl fs.inotify.max_user_watches)");
        b->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (b->fd < 0 || !b->limit_hint) {
                int r = b->fd < 0 ? negative_errno() : -ENOMEM;
                syscall_free(b);
                return r;
        }
        *ret = b;
        return 0;
}
