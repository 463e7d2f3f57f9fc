/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * access - opening a path with the caller's credentials
 *
 * The daemon runs as root and watches on behalf of any user, so it must not
 * lend its own access: the path is opened with the caller's uid, gids and
 * supplementary groups (from the bus, see dbus_iface.c) as the process's
 * filesystem credentials, which are restored before returning. The daemon
 * is single-threaded, so nothing else runs under the borrowed credentials.
 *
 * The object is first opened O_PATH, which opens nothing: only a directory
 * or a regular file is then reopened for reading (through /proc/self/fd, a
 * full open with permission checks). FIFOs, sockets and device nodes are
 * refused with -EMEDIUMTYPE, so the daemon never blocks on a FIFO or opens a
 * device; a symbolic link with DONT_FOLLOW is refused with -ELOOP.
 */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct Caller {
        uid_t uid;
        gid_t gid;
        gid_t *gids;            /* supplementary groups, as the bus reported them */
        size_t n_gids;
} Caller;

/*
 * Opens path for reading as caller. only_dir and no_follow are the ONLYDIR
 * and DONT_FOLLOW flags. On success returns the fd (O_RDONLY|O_NONBLOCK|
 * O_CLOEXEC) and fills *ret_st.
 * Return: fd, or -errno: -EACCES/-EPERM (not allowed), -ENOENT, -ENOTDIR,
 * -ELOOP, -ENAMETOOLONG, -EMEDIUMTYPE (not a file or directory).
 */
int access_open_as(const Caller *caller, const char *path, bool only_dir, bool no_follow,
                   struct stat *ret_st);

/* Whether an fd received from a client may be watched: open for reading, not O_PATH, a file or directory. */
int access_check_fd(int fd, struct stat *ret_st);
