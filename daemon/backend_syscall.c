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
 * IN_CLOSE_NOWRITE from the daemon. In a batch of directory watches (a
 * RECURSIVE walk), the directory is made the working directory and "." is
 * watched instead: the same object, found in one step instead of four in
 * procfs.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "backend.h"
#include "log.h"
#include "macro.h"

typedef struct SyscallBackend {
        Backend backend;
        int cwd_fd; /* the working directory the daemon started in, -1: no batches */
        bool batch; /* in a run of directory watches (backend_batch) */
        bool moved; /* the working directory is not cwd_fd's */
} SyscallBackend;

static SyscallBackend *syscall_backend(Backend *b) {
        return (SyscallBackend *) b;
}

/* Through /proc/self/fd/N: touches nothing of the process's but the inotify fd. */
static int syscall_add_watch_proc(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        char path[sizeof("/proc/self/fd/") + 12];
        int wd;

        snprintf(path, sizeof(path), "/proc/self/fd/%i", fd);
        wd = inotify_add_watch(b->fd, path, mask);
        if (wd < 0)
                return negative_errno();
        *ret_wd = wd;
        return 0;
}

static int syscall_add_watch(Backend *b, int fd, uint32_t mask, int *ret_wd) {
        SyscallBackend *sb = syscall_backend(b);
        int wd;

        /* In a batch, the directory open at fd as the working directory and
         * ".": the same object as /proc/self/fd/N (no second lookup of any
         * path, so no race), found in one step. fchdir() refuses a file,
         * and a directory the current credentials may not search: then
         * /proc. */
        if (sb->batch && sb->cwd_fd >= 0 && fchdir(fd) >= 0) {
                sb->moved = true;
                wd = inotify_add_watch(b->fd, ".", mask | IN_ONLYDIR);
                if (wd >= 0) {
                        *ret_wd = wd;
                        return 0;
                }
                if (errno != EACCES)
                        return negative_errno();
        }
        return syscall_add_watch_proc(b, fd, mask, ret_wd);
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
                return -EIO; /* an inotify fd never reaches end of file */
        return n;
}

static int syscall_pending(Backend *b, size_t *ret) {
        int n;

        if (ioctl(b->fd, FIONREAD, &n) < 0)
                return negative_errno();
        *ret = n > 0 ? (size_t) n : 0;
        return 0;
}

static void syscall_batch(Backend *b, bool begin) {
        SyscallBackend *sb = syscall_backend(b);

        sb->batch = begin;
        /* A working directory left in a watched tree would keep its
         * filesystem busy: back to where the daemon started as soon as the
         * run ends. */
        if (!begin && sb->moved) {
                if (fchdir(sb->cwd_fd) < 0)
                        log_warning_errno(-errno, "Failed to go back to the working directory, ignoring: %m");
                sb->moved = false;
        }
}

static void syscall_free(Backend *b) {
        safe_close(syscall_backend(b)->cwd_fd);
        safe_close(b->fd);
        free(b->limit_hint);
        free(b);
}

static const BackendOps syscall_ops = {
        .name = "syscall",
        .add_watch = syscall_add_watch,
        .add_watch_any_thread = syscall_add_watch_proc,
        .rm_watch = syscall_rm_watch,
        .read = syscall_read,
        .free = syscall_free,
        .batch = syscall_batch,
        .pending = syscall_pending,
};

int backend_syscall_new(Backend **ret) {
        SyscallBackend *sb;
        Backend *b;

        sb = calloc(1, sizeof(SyscallBackend));
        if (!sb)
                return -ENOMEM;
        b = &sb->backend;
        /* Without it no batch moves the working directory (/proc is used). */
        sb->cwd_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        b->ops = &syscall_ops;
        b->mask_add = true; /* IN_MASK_CREATE: Linux 4.18 */
        b->limit_hint = strdup("/proc/sys/fs/inotify/max_user_watches (sysctl fs.inotify.max_user_watches)");
        b->limit_path = "/proc/sys/fs/inotify/max_user_watches";
        b->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (b->fd < 0 || !b->limit_hint) {
                int r = b->fd < 0 ? negative_errno() : -ENOMEM;
                syscall_free(b);
                return r;
        }
        *ret = b;
        return 0;
}
