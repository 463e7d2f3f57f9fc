/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access - opening a path with the caller's credentials
 *
 * setfsuid()/setfsgid() change only the credentials the kernel checks file
 * access with; moving fsuid away from 0 also drops the filesystem
 * capabilities (CAP_DAC_OVERRIDE...) from the effective set, and moving it
 * back restores them. setgroups() replaces the supplementary groups, which
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

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "access.h"
#include "log.h"
#include "macro.h"

#define GROUPS_MAX 65536

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

        if (setgroups(c->n_gids, c->gids) < 0)
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
                return;         /* nothing was changed */
        }
        /* Failing to get our own credentials back would leave the daemon
         * acting as a client: there is no safe way to continue. */
        (void) setfsuid(saved->fsuid);
        (void) setfsgid(saved->fsgid);
        if ((uid_t) setfsuid((uid_t) -1) != saved->fsuid ||
            (gid_t) setfsgid((gid_t) -1) != saved->fsgid ||
            setgroups((size_t) saved->n_groups, saved->groups) < 0) {
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
        return -EMEDIUMTYPE;
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

/*
 * The kernel says -ELOOP both for a magic link and for too many levels of
 * symbolic links (or, without O_PATH, a last component that is a link and
 * O_NOFOLLOW). To tell a client which, the path is resolved again without
 * RESOLVE_NO_MAGICLINKS, O_PATH only (which opens nothing), and that fd is
 * closed unused: whatever it finds, the answer is a refusal, -ELOOP if it
 * loops too, else -EXDEV.
 */
int access_open_path(const char *path, int flags) {
        int fd;

        fd = openat2_fd(AT_FDCWD, path, (uint64_t) flags, RESOLVE_NO_MAGICLINKS);
        if (fd != -ELOOP)
                return fd;
        fd = openat2_fd(AT_FDCWD, path, O_PATH | O_CLOEXEC | ((uint64_t) flags & (O_NOFOLLOW | O_DIRECTORY)), 0);
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
static int open_checked(const char *path, bool only_dir, bool no_follow, struct stat *ret_st) {
        _cleanup_close_ int pfd = -1;
        struct stat st;
        int r;

        pfd = access_open_path(path, O_PATH | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0) | (only_dir ? O_DIRECTORY : 0));
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

int access_open_as(const Caller *caller, const char *path, bool only_dir, bool no_follow,
                   struct stat *ret_st) {
        AccessSaved saved;
        int fd, r;

        r = access_become(caller, &saved);
        if (r < 0)
                return r;
        fd = open_checked(path, only_dir, no_follow, ret_st);
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

int access_check_fd(int fd, struct stat *ret_st) {
        int fl;

        fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return negative_errno();
        if (fl & O_PATH)
                return -EBADFD;
        if ((fl & O_ACCMODE) == O_WRONLY)
                return -EBADF;
        if (fstat(fd, ret_st) < 0)
                return negative_errno();
        return check_type(ret_st, false);
}
