/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * access - opening a path with the caller's credentials
 *
 * The daemon runs as root and watches on behalf of any user, so it must not
 * lend its own access: the path is opened with the caller's uid, gids and
 * supplementary groups (from the bus, see bus_caller.c) as the process's
 * filesystem credentials, which are restored before returning. The daemon
 * is single-threaded, so nothing else runs under the borrowed credentials.
 *
 * The object is opened O_PATH only, which opens nothing: no IN_OPEN is
 * generated, and closing it gives no IN_CLOSE_NOWRITE, so a client never
 * sees the daemon's own look at a path it watches. Read permission is
 * checked with faccessat2(fd, "", R_OK, AT_EACCESS|AT_EMPTY_PATH) under the
 * borrowed credentials (the object itself, not the path again). Only a
 * directory or a regular file is accepted: FIFOs, sockets and device nodes
 * are refused with -WATCHD_E_NOT_WATCHABLE; a symbolic link with DONT_FOLLOW is refused
 * with -ELOOP. Both backends place a watch through the O_PATH fd itself
 * (the device backend reopens it only for an older module that refuses
 * O_PATH fds); a RECURSIVE walk reads the root through openat(fd, ".")
 * as the caller (tree.c).
 *
 * The path is resolved with openat2(RESOLVE_NO_MAGICLINKS): through no link
 * that the kernel resolves by privilege rather than by path (/proc/PID/cwd,
 * /proc/self/fd/N, /dev/fd/N...), for any caller, root included; such a path
 * is refused with -EXDEV. Ordinary symbolic links are followed. Everything a
 * walk opens below a watched directory is one name from its directory
 * listing, opened O_NOFOLLOW: no link at all is followed there.
 */

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct Caller {
        uid_t uid;
        gid_t gid;
        gid_t *gids; /* supplementary groups, as the bus reported them */
        size_t n_gids;
} Caller;

/*
 * Opens path O_PATH|O_CLOEXEC, plus O_DIRECTORY and O_NOFOLLOW if in flags
 * (nothing else is allowed), with the current filesystem credentials,
 * through no magic link: such a path is -EXDEV. For every path that comes
 * from a client, or is built from one. Return: fd, or -errno.
 */
int access_open_path(const char *path, int flags);
/* The same relative to dirfd (path may also be one name in it). */
int access_open_path_at(int dirfd, const char *path, int flags);
/* The same without openat2(), a component at a time: what access_open_path()
 * falls back on where the kernel (or valgrind) lacks it. Exposed for its test. */
int access_open_path_userspace(const char *path, int flags);
int access_open_path_userspace_at(int dirfd, const char *path, int flags);

/*
 * Opens path O_PATH as caller, if caller may read it. only_dir and no_follow
 * are the ONLYDIR and DONT_FOLLOW flags. On success returns the fd
 * (O_PATH|O_CLOEXEC) and fills *ret_st.
 * Return: fd, or -errno: -EACCES/-EPERM (not allowed), -ENOENT, -ENOTDIR,
 * -ELOOP, -ENAMETOOLONG, -WATCHD_E_NOT_WATCHABLE (not a file or directory),
 * -EXDEV (the path goes through a magic link).
 */
int access_open_as(const Caller *caller, const char *path, bool only_dir, bool no_follow, struct stat *ret_st);

/*
 * The same, relative to dirfd (AT_FDCWD: path is absolute), with the
 * credentials in force: between access_become() and access_restore(), the
 * caller's. A missing path below a directory open at dirfd is followed
 * down one name at a time this way (missing_open.c), not by its whole path again.
 */
int access_open_at(int dirfd, const char *path, bool only_dir, bool no_follow, struct stat *ret_st);

/*
 * For a stretch of work done as caller (a slice of a RECURSIVE walk): from
 * access_become() to access_restore(), everything the kernel checks (opens,
 * inotify_add_watch's read check) is checked with the caller's filesystem
 * credentials. They are the calling thread's only (the raw setgroups system
 * call, not glibc's, which changes every thread): a worker thread (fswork.h)
 * works as its job's caller while the loop's thread stays the daemon. Nothing
 * else of the thread may run in between: the stretch must not reach the bus
 * or log files by path. For a root
 * caller, or a daemon that is not root and serves only its own uid, nothing
 * is switched. Return: 0, or -errno (then nothing is switched).
 */
typedef struct AccessSaved {
        uid_t fsuid;
        gid_t fsgid;
        gid_t *groups;
        int n_groups;
        bool saved; /* the above hold the daemon's own credentials */
} AccessSaved;

int access_become(const Caller *caller, AccessSaved *saved);
void access_restore(AccessSaved *saved);

/*
 * Whether an fd received from a client may be watched: open for reading, not
 * O_PATH, a file or directory, with a name on a mounted file system (so that
 * its events can be reported under a path). Fills *ret_st.
 * Return: 0, or -WATCHD_E_FD_PATH (O_PATH), -WATCHD_E_FD_WRITE_ONLY
 * (write-only), -WATCHD_E_NOT_WATCHABLE (not a file or directory: FIFO,
 * socket, device, most anonymous inodes), -WATCHD_E_NO_NAME (no name: a
 * memfd, an O_TMPFILE or deleted file, a removed directory, a file of an
 * internal file system such as anon_inodefs or pidfs).
 */
int access_check_fd(int fd, struct stat *ret_st);
/* What AddWatchFd asks of fd: access_check_fd(), ONLYDIR (only_dir), and the
 * path its records are built from (where fd points now, in the file system
 * tree: else WATCHD_E_NOT_WATCHABLE), allocated. Return: 0 or -errno. */
int access_check_fd_path(int fd, bool only_dir, struct stat *ret_st, char **ret_path);
