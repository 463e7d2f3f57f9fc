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
 */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "access.h"
#include "error.h"
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
        return -WATCHD_E_NOT_WATCHABLE;
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

        pfd = openat(dirfd, path, O_PATH | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0) | (only_dir ? O_DIRECTORY : 0));
        if (pfd < 0)
                return negative_errno();
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

int access_check_fd(int fd, struct stat *ret_st) {
        int fl;

        fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return negative_errno();
        if (fl & O_PATH)
                return -WATCHD_E_FD_PATH;
        if ((fl & O_ACCMODE) == O_WRONLY)
                return -WATCHD_E_FD_WRITE_ONLY;
        if (fstat(fd, ret_st) < 0)
                return negative_errno();
        return check_type(ret_st, false);
}
