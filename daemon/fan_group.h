/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fan_group - watchd's side of fan_helper.h: its fanotify group, and the
 * marks the helper places on it
 *
 * A connection to watchd-fanotify's socket, and the group it sent. Requests
 * are answered at once (the helper makes one system call for each), so they
 * are synchronous, with a timeout of FAN_GROUP_TIMEOUT_SEC for a helper that
 * hangs. If the helper goes away, the group stays readable and its marks
 * stay; only new marks fail (-ECONNRESET, -EPIPE), and the filesystems they
 * were for are left to inotify.
 */

#include <stdint.h>

typedef struct FanGroup FanGroup;

#define FAN_GROUP_TIMEOUT_SEC 5

/* Connects to the helper at socket_path and asks for a group.
 * Return: 0, or -errno (-ENOENT, -ECONNREFUSED: no helper; another: what
 * fanotify_init() said, e.g. -EINVAL for a kernel before 5.17). */
int fan_group_new(const char *socket_path, FanGroup **ret);
FanGroup *fan_group_free(FanGroup *g);

/* The group's fd, to read events from (non-blocking). */
int fan_group_fd(const FanGroup *g);

/* Adds mask to (or removes it from) the group's mark on the filesystem of
 * the directory open at dirfd (O_PATH will do). Return: 0, or -errno: the
 * kernel's (-ENODEV: no fsid, -EXDEV: an fsid not unique to the filesystem,
 * -EOPNOTSUPP: no file handles, -EPERM) or the connection's. */
int fan_group_mark(FanGroup *g, int dirfd, uint64_t mask);
int fan_group_unmark(FanGroup *g, int dirfd, uint64_t mask);
