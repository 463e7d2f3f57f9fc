/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access - opening a path with the caller's credentials
 *
 * setfsuid()/setfsgid() change only the credentials the kernel checks file
 * access with; moving fsuid away from 0 also drops the filesystem
 * capabilities (CAP_DAC_READ_SEARCH, the one kept: capability.h) from the
 * effective set, and moving it back restores them. setgroups() replaces the supplementary groups, which
 * the kernel checks together with fsgid. When the daemon is not root it
 * cannot borrow anyone's credentials: it then serves its own uid only, and
 * refuses everyone else (-EPERM), so it never lends its access.
 *
 * Paths are resolved with openat2(RESOLVE_NO_MAGICLINKS). A "magic link"
 * (/proc/PID/cwd, /proc/PID/root, /proc/PID/fd/N, /proc/self/fd/N and so
 * /dev/fd/N, /proc/PID/map_files/...) is not resolved by its path but by the
 * kernel handing over an object it found for whoever may ptrace PID: it
 * skips every directory permission on the way to that object. Followed by
 * the daemon, it would give a client the daemon's reach instead of its own:
 * another process's working directory past a 0700 parent (the daemon may
 * ptrace any process), or the daemon's own open fds (the directories of
 * another user's RECURSIVE walk). So no path a client gives is followed
 * through one, whoever the client is; a client that may use such a link
 * opens it itself and passes the fd (AddWatchFd). Ordinary symbolic links
 * are followed as the kernel does (DONT_FOLLOW: not the last component).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "access.h"
#include "error.h"
#include "log.h"
#include "macro.h"

#define GROUPS_MAX 65536

/* The supplementary groups of the calling thread only. glibc's setgroups()
 * sets them in every thread of the process (it signals each one: the POSIX
 * rule), which would hand one worker's caller's groups to every other
 * thread (fswork.h): the kernel keeps credentials per thread, and so do we. */
static int thread_setgroups(size_t n, const gid_t *gids) {
        return (int) syscall(SYS_setgroups, n, gids);
}

static int creds_switch(const Caller *c, AccessSaved *saved) {
        int n;

        n = getgroups(0, NULL);
        if (n < 0)
                return negative_errno();
        saved->groups = calloc((size_t) n + 1, sizeof(gid_t));
        if (!saved->groups)
                return -ENOMEM;
        n = getgroups(n, saved->groups);
        if (n < 0)
                return negative_errno();
        saved->n_groups = n;
        saved->fsuid = geteuid();
        saved->fsgid = getegid();
        saved->saved = true;

        if (thread_setgroups(c->n_gids, c->gids) < 0)
                return negative_errno();
        /* setfs*id() return the old value and cannot report failure directly:
         * ask again (-1 changes nothing) to see whether it took. */
        (void) setfsgid(c->gid);
        if ((gid_t) setfsgid((gid_t) -1) != c->gid)
                return -EPERM;
        (void) setfsuid(c->uid);
        if ((uid_t) setfsuid((uid_t) -1) != c->uid)
                return -EPERM;
        return 0;
}

static void creds_restore(AccessSaved *saved) {
        if (!saved->saved) {
                free(saved->groups);
                saved->groups = NULL;
                return; /* nothing was changed */
        }
        /* Failing to get our own credentials back would leave the daemon
         * acting as a client: there is no safe way to continue. */
        (void) setfsuid(saved->fsuid);
        (void) setfsgid(saved->fsgid);
        if ((uid_t) setfsuid((uid_t) -1) != saved->fsuid || (gid_t) setfsgid((gid_t) -1) != saved->fsgid ||
            thread_setgroups((size_t) saved->n_groups, saved->groups) < 0) {
                log_error("Failed to restore the daemon's credentials, aborting.");
                abort();
        }
        free(saved->groups);
        saved->groups = NULL;
}

static int check_type(const struct stat *st, bool only_dir) {
        if (S_ISDIR(st->st_mode))
                return 0;
        if (only_dir)
                return -ENOTDIR;
        if (S_ISREG(st->st_mode))
                return 0;
        if (S_ISLNK(st->st_mode))
                return -ELOOP;
        return -WATCHD_E_NOT_WATCHABLE;
}

/* glibc 2.36 (Debian 12) has no openat2() wrapper. */
static int openat2_fd(int dfd, const char *path, uint64_t flags, uint64_t resolve) {
        struct open_how how = {
                .flags = flags,
                .resolve = resolve,
        };
        int fd;

        fd = (int) syscall(SYS_openat2, dfd, path, &how, sizeof(how));
        return fd < 0 ? negative_errno() : fd;
}

/* Whether the symbolic link open (O_PATH|O_NOFOLLOW) at fd is a magic one.
 * Only procfs has them (nd_jump_link()), and its ordinary links ("self",
 * "thread-self", "mounts" -> "self/mounts", ...) all have a relative target
 * without ':'; a magic link reads as an absolute path or "pipe:[N]",
 * "mnt:[N]", "anon_inode:..." . Anything else on procfs counts as magic:
 * refusing too much is the safe side. */
static int link_is_magic(int fd, const char *target) {
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return negative_errno();
        if ((unsigned long) sf.f_type != PROC_SUPER_MAGIC)
                return false;
        return target[0] == '/' || strchr(target, ':') != NULL;
}

#define LINKS_MAX 40 /* the kernel's MAXSYMLINKS */

/* Each component is opened O_PATH|O_NOFOLLOW from the directory before it, so
 * the kernel checks search permission on every directory as it would, and
 * every symbolic link is seen here: a magic one is -EXDEV, an ordinary one is
 * read and its target resolved in its place (from "/" if absolute), at most
 * LINKS_MAX of them. One difference from the kernel's own walk: an automount
 * point is not triggered by the component that names it. */
int access_open_path_userspace(const char *path, int flags) {
        return access_open_path_userspace_at(AT_FDCWD, path, flags);
}

int access_open_path_userspace_at(int dirfd, const char *path, int flags) {
        g_autofree char *buf = g_strdup(path); /* what is left to resolve */
        _cleanup_close_ int dfd = -1;
        unsigned links = 0;
        const char *p;

        if (path[0] == '/' || dirfd == AT_FDCWD)
                dfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        else
                dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return negative_errno();
        for (p = buf;;) {
                g_autofree char *comp = NULL;
                _cleanup_close_ int fd = -1;
                size_t len, skip;
                bool last, slash;
                struct stat st;

                while (*p == '/')
                        p++;
                if (*p == '\0')
                        break; /* "/", or ending in "/" or "/.": dfd is the object */
                len = strcspn(p, "/");
                skip = strspn(p + len, "/");
                last = p[len + skip] == '\0';
                slash = last && skip > 0; /* a trailing slash: a directory, links followed */
                comp = g_strndup(p, len);
                p += len;
                if (strcmp(comp, ".") == 0)
                        continue;

                fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                if (fstat(fd, &st) < 0)
                        return negative_errno();
                if (S_ISLNK(st.st_mode) && !(last && !slash && (flags & O_NOFOLLOW))) {
                        char target[PATH_MAX];
                        ssize_t n;
                        int r;

                        n = readlinkat(fd, "", target, sizeof(target) - 1);
                        if (n < 0)
                                return negative_errno();
                        target[n] = '\0';
                        r = link_is_magic(fd, target);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return -EXDEV;
                        if (++links > LINKS_MAX)
                                return -ELOOP;
                        /* Go on with the target, then what was left after the link ("" or "/..."). */
                        {
                                char *next = g_strconcat(target, p, NULL);

                                g_free(buf);
                                p = buf = next;
                        }
                        if (target[0] == '/') {
                                safe_close(dfd);
                                dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                                if (dfd < 0)
                                        return negative_errno();
                        }
                        continue;
                }
                if (!last || slash) {
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                        safe_close(dfd);
                        dfd = TAKE_FD(fd);
                        continue;
                }
                if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                return TAKE_FD(fd);
        }
        return TAKE_FD(dfd);
}

/*
 * The kernel says -ELOOP both for a magic link and for too many levels of
 * symbolic links. To tell a client which, the path is resolved again
 * without RESOLVE_NO_MAGICLINKS (O_PATH opens nothing) and that fd is
 * closed unused: whatever it finds, the answer is a refusal, -ELOOP if it
 * loops too, else -EXDEV. Without openat2() (before Linux 5.6, and under
 * valgrind 3.19, which does not know it) the path is resolved a component
 * at a time instead (access_open_path_userspace()).
 */
int access_open_path(const char *path, int flags) {
        return access_open_path_at(AT_FDCWD, path, flags);
}

int access_open_path_at(int dirfd, const char *path, int flags) {
        static bool no_openat2 = false; /* a property of the kernel: asked once */
        uint64_t f = O_PATH | O_CLOEXEC | ((uint64_t) flags & (O_DIRECTORY | O_NOFOLLOW));
        int fd;

        assert((flags & ~(O_PATH | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW)) == 0);
        if (no_openat2)
                return access_open_path_userspace_at(dirfd, path, flags);
        fd = openat2_fd(dirfd, path, f, RESOLVE_NO_MAGICLINKS);
        if (fd == -ENOSYS) {
                log_info("The kernel has no openat2() (Linux < 5.6, or valgrind): paths are resolved a "
                         "component at a time.");
                no_openat2 = true;
                return access_open_path_userspace_at(dirfd, path, flags);
        }
        if (fd != -ELOOP)
                return fd;
        fd = openat2_fd(dirfd, path, f, 0);
        if (fd == -ELOOP)
                return fd;
        safe_close(fd);
        return -EXDEV;
}

/* Opens path O_PATH (which opens nothing: no IN_OPEN, and no IN_CLOSE_NOWRITE
 * when it is closed) and checks that the current filesystem credentials may
 * read it: faccessat2() with AT_EACCESS checks with the current credentials
 * (fsuid, fsgid, groups), not the real ids, and with AT_EMPTY_PATH it checks
 * the object open at pfd itself, so no second lookup of the path. */
int access_open_at(int dirfd, const char *path, bool only_dir, bool no_follow, struct stat *ret_st) {
        _cleanup_close_ int pfd = -1;
        struct stat st;
        int r;

        pfd = access_open_path_at(dirfd, path, (no_follow ? O_NOFOLLOW : 0) | (only_dir ? O_DIRECTORY : 0));
        if (pfd < 0)
                return pfd;
        if (fstat(pfd, &st) < 0)
                return negative_errno();
        r = check_type(&st, only_dir);
        if (r < 0)
                return r;
        if (faccessat(pfd, "", R_OK, AT_EACCESS | AT_EMPTY_PATH) < 0)
                return negative_errno();
        *ret_st = st;
        return TAKE_FD(pfd);
}

int access_open_as(const Caller *caller, const char *path, bool only_dir, bool no_follow, struct stat *ret_st) {
        AccessSaved saved;
        int fd, r;

        r = access_become(caller, &saved);
        if (r < 0)
                return r;
        fd = access_open_at(AT_FDCWD, path, only_dir, no_follow, ret_st);
        access_restore(&saved);
        return fd;
}

int access_become(const Caller *caller, AccessSaved *saved) {
        int r;

        *saved = (AccessSaved) {};
        if (caller->n_gids > GROUPS_MAX)
                return -EINVAL;
        if (geteuid() != 0)
                return caller->uid == geteuid() ? 0 : -EPERM;
        /* A root caller would get fsuid 0, and with it the daemon's own
         * capabilities: the same access as not switching, for fewer syscalls. */
        if (caller->uid == 0)
                return 0;
        r = creds_switch(caller, saved);
        if (r < 0)
                creds_restore(saved);
        return r;
}

void access_restore(AccessSaved *saved) {
        creds_restore(saved);
}

#ifndef PID_FS_MAGIC
#define PID_FS_MAGIC 0x50494446 /* pidfs, Linux 6.9 */
#endif

/* The kernel's internal file systems, mounted nowhere: their files have no
 * path. (A memfd lives on an internal tmpfs, which shares TMPFS_MAGIC with
 * /dev/shm: it is told by its link count instead.) */
static bool fs_is_internal(int fd) {
        static const unsigned long internal[] = {
                ANON_INODE_FS_MAGIC, DMA_BUF_MAGIC,   NSFS_MAGIC,   PID_FS_MAGIC,
                PIPEFS_MAGIC,        SECRETMEM_MAGIC, SOCKFS_MAGIC,
        };
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return false; /* fstat worked: the checks on the object itself decide */
        for (size_t i = 0; i < ELEMENTSOF(internal); i++)
                if ((unsigned long) sf.f_type == internal[i])
                        return true;
        return false;
}

int access_check_fd(int fd, struct stat *ret_st) {
        int fl, r;

        fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return negative_errno();
        if (fl & O_PATH)
                return -WATCHD_E_FD_PATH;
        if ((fl & O_ACCMODE) == O_WRONLY)
                return -WATCHD_E_FD_WRITE_ONLY;
        if (fstat(fd, ret_st) < 0)
                return negative_errno();
        r = check_type(ret_st, false);
        if (r < 0)
                return r;
        /* No name left to report its events under: a memfd, an O_TMPFILE
         * file, a file or directory deleted since it was opened (and a
         * watch on it would end as soon as the client closes it). */
        if (ret_st->st_nlink == 0 || fs_is_internal(fd))
                return -WATCHD_E_NO_NAME;
        return 0;
}

int access_check_fd_path(int fd, bool only_dir, struct stat *ret_st, char **ret_path) {
        char proc[sizeof("/proc/self/fd/") + 12], path[PATH_MAX];
        ssize_t n;
        int r;

        r = access_check_fd(fd, ret_st);
        if (r < 0)
                return r;
        if (only_dir && !S_ISDIR(ret_st->st_mode))
                return -ENOTDIR;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
        n = readlink(proc, path, sizeof(path) - 1);
        if (n < 0)
                return negative_errno();
        path[n] = '\0';
        if (path[0] != '/')
                return -WATCHD_E_NOT_WATCHABLE; /* not in the filesystem tree (pipe:, anon_inode:...) */
        *ret_path = strdup(path);
        return *ret_path ? 0 : -ENOMEM;
}
