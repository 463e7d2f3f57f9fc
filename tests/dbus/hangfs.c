/* SPDX-License-Identifier: GPL-2.0-or-later */

/*
 * hangfs - a FUSE file system that stops answering on demand (issue 24)
 *
 *   HANGFS_NAME=NAME [HANGFS_STATFS=1 [HANGFS_STATFS_SKIP=N]] [HANGFS_TID=TID] hangfs BACK MNT [FUSE OPTION...]
 *
 * Serves BACK at MNT, as the user it runs as, in the foreground. An open of
 * a directory named NAME for reading (FUSE_OPENDIR: never answered from the
 * kernel's caches), and with HANGFS_STATFS every statfs (FUSE_STATFS, never
 * cached either) but the first N since the start or the last SIGUSR1, is
 * not answered while hangfs hangs: from its start, and after SIGUSR1;
 * SIGUSR2 lets it (and every later one) go. Everything else
 * is answered at once, so a test can make exactly the request it means wait,
 * where bindfs and SIGSTOP stop every request at once.
 *
 * With HANGFS_TID, every request the thread TID makes (the kernel names the
 * thread in each request) is not answered while hangfs hangs either: a
 * process's event loop on its main thread (TID its pid) stops at the first
 * request it makes, its other threads are answered. It answers FUSE_ACCESS
 * (access(2), chdir(2) without -o default_permissions) as well, which a file
 * system without an access operation answers once with ENOSYS for ever.
 */

#define FUSE_USE_VERSION 26

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int back_fd = -1;
static const char *hang_name;
static bool hang_statfs;
static unsigned statfs_skip;
static unsigned statfs_seen; /* since the start or the last SIGUSR1 (atomic) */
static pid_t hang_tid;
static volatile sig_atomic_t hanging = 1;

static void on_signal(int sig) {
        if (sig == SIGUSR1)
                __atomic_store_n(&statfs_seen, 0, __ATOMIC_SEQ_CST);
        hanging = sig == SIGUSR1;
}

/* path ("/a/b") relative to BACK. */
static const char *rel(const char *path) {
        return path[1] ? path + 1 : ".";
}

static int neg(int r) {
        return r < 0 ? -errno : 0;
}

/* Waits while hanging if the request is the thread HANGFS_TID's. */
static void tid_wait(void) {
        while (hanging && hang_tid > 0 && fuse_get_context()->pid == hang_tid)
                usleep(10 * 1000);
}

static int hfs_getattr(const char *path, struct stat *st) {
        tid_wait();
        return neg(fstatat(back_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int hfs_opendir(const char *path, struct fuse_file_info *fi) {
        const char *base = strrchr(path, '/') + 1;
        DIR *d;
        int fd;

        tid_wait();
        while (hanging && hang_name && strcmp(base, hang_name) == 0)
                usleep(10 * 1000);
        fd = openat(back_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                int r = -errno;

                close(fd);
                return r;
        }
        fi->fh = (uint64_t) (uintptr_t) d;
        return 0;
}

static int hfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi) {
        DIR *d = (DIR *) (uintptr_t) fi->fh;
        struct dirent *de;

        rewinddir(d);
        while ((de = readdir(d)))
                if (fill(buf, de->d_name, NULL, 0))
                        break;
        return 0;
}

static int hfs_releasedir(const char *path, struct fuse_file_info *fi) {
        closedir((DIR *) (uintptr_t) fi->fh);
        return 0;
}

static int hfs_mkdir(const char *path, mode_t mode) {
        return neg(mkdirat(back_fd, rel(path), mode));
}

static int hfs_rmdir(const char *path) {
        return neg(unlinkat(back_fd, rel(path), AT_REMOVEDIR));
}

static int hfs_unlink(const char *path) {
        return neg(unlinkat(back_fd, rel(path), 0));
}

static int hfs_rename(const char *from, const char *to) {
        return neg(renameat(back_fd, rel(from), back_fd, rel(to)));
}

static int hfs_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
        int fd = openat(back_fd, rel(path), fi->flags | O_CREAT | O_CLOEXEC, mode);

        if (fd < 0)
                return -errno;
        fi->fh = (uint64_t) fd;
        return 0;
}

static int hfs_open(const char *path, struct fuse_file_info *fi) {
        int fd = openat(back_fd, rel(path), fi->flags | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        fi->fh = (uint64_t) fd;
        return 0;
}

static int hfs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        ssize_t n = pread((int) fi->fh, buf, size, off);

        return n < 0 ? -errno : (int) n;
}

static int hfs_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        ssize_t n = pwrite((int) fi->fh, buf, size, off);

        return n < 0 ? -errno : (int) n;
}

static int hfs_release(const char *path, struct fuse_file_info *fi) {
        close((int) fi->fh);
        return 0;
}

static int hfs_truncate(const char *path, off_t size) {
        int fd = openat(back_fd, rel(path), O_WRONLY | O_CLOEXEC), r;

        if (fd < 0)
                return -errno;
        r = neg(ftruncate(fd, size));
        close(fd);
        return r;
}

static int hfs_utimens(const char *path, const struct timespec tv[2]) {
        return neg(utimensat(back_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int hfs_chmod(const char *path, mode_t mode) {
        return neg(fchmodat(back_fd, rel(path), mode, 0));
}

static int hfs_access(const char *path, int mode) {
        tid_wait();
        return neg(faccessat(back_fd, rel(path), mode, AT_SYMLINK_NOFOLLOW));
}

static int hfs_statfs(const char *path, struct statvfs *sv) {
        bool skip = __atomic_fetch_add(&statfs_seen, 1, __ATOMIC_SEQ_CST) < statfs_skip;

        tid_wait();
        while (hanging && hang_statfs && !skip)
                usleep(10 * 1000);
        return neg(fstatvfs(back_fd, sv));
}

static const struct fuse_operations ops = {
        .getattr = hfs_getattr,
        .opendir = hfs_opendir,
        .readdir = hfs_readdir,
        .releasedir = hfs_releasedir,
        .mkdir = hfs_mkdir,
        .rmdir = hfs_rmdir,
        .unlink = hfs_unlink,
        .rename = hfs_rename,
        .create = hfs_create,
        .open = hfs_open,
        .read = hfs_read,
        .write = hfs_write,
        .release = hfs_release,
        .truncate = hfs_truncate,
        .utimens = hfs_utimens,
        .chmod = hfs_chmod,
        .statfs = hfs_statfs,
        .access = hfs_access,
};

int main(int argc, char **argv) {
        struct sigaction sa = { .sa_handler = on_signal };
        char *args[64];
        int n = 0;

        if (argc < 3 || argc > 60) {
                fprintf(stderr, "usage: HANGFS_NAME=NAME %s BACK MNT [FUSE OPTION...]\n", argv[0]);
                return 2;
        }
        back_fd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (back_fd < 0) {
                perror(argv[1]);
                return 1;
        }
        hang_name = getenv("HANGFS_NAME");
        hang_statfs = getenv("HANGFS_STATFS");
        if (getenv("HANGFS_TID"))
                hang_tid = (pid_t) strtol(getenv("HANGFS_TID"), NULL, 10);
        if (getenv("HANGFS_STATFS_SKIP"))
                statfs_skip = (unsigned) strtoul(getenv("HANGFS_STATFS_SKIP"), NULL, 10);
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0) {
                perror("sigaction");
                return 1;
        }
        args[n++] = argv[0];
        args[n++] = argv[2];
        args[n++] = (char *) "-f";
        for (int i = 3; i < argc; i++)
                args[n++] = argv[i];
        args[n] = NULL;
        return fuse_main(n, args, &ops, NULL);
}
