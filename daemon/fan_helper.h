/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fan_helper - what watchd and watchd-fanotify (its helper) say to each other
 *
 * A fanotify filesystem mark needs CAP_SYS_ADMIN, which watchd does not
 * keep (capability.h; docs/RECURSION.md, "The sandbox", says why, with the
 * measurements). The helper, watchd-fanotify, is a service of its own that
 * keeps only CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH, and does two things for
 * a root peer on its Unix socket (SOCK_SEQPACKET, one request and one reply
 * a message, fixed sizes):
 *
 *   HELLO     makes a fanotify group, always of one kind (a notification
 *             group reporting directory handles and names:
 *             FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME_TARGET, non-blocking,
 *             its queue bounded), and sends it with the reply (SCM_RIGHTS):
 *             watchd reads it, the helper keeps its own copy to mark with;
 *   MARK      adds mask (FAN_HELPER_MASK_ALLOWED only) to the group's mark on
 *   UNMARK    the filesystem of the directory whose fd comes with the
 *             request, or removes mask from it.
 *
 * Nothing else: the helper opens no path, reads no event, and makes no group
 * that could block or read a file (no permission events, no event fds). A
 * group lives as long as its connection and watchd's copy; each connection
 * has one. A reply's error is 0 or a positive errno, from the kernel or
 * from the helper's checks (EINVAL: a bad request, EBADF: no fd with it).
 */

#include <fcntl.h>
#include <stdint.h>
#include <sys/fanotify.h>

#define FAN_HELPER_MAGIC 0x31464e57u /* "WNF1" */

#define FAN_HELPER_HELLO  1u
#define FAN_HELPER_MARK   2u
#define FAN_HELPER_UNMARK 3u

/* The socket systemd makes for the helper (watchd-fanotify.socket). */
#define FAN_HELPER_SOCKET "/run/watchd-fanotify.sock"

/* The events a mark may ask for: those that only notify. */
#define FAN_HELPER_MASK_ALLOWED                                                                                   \
        (FAN_ACCESS | FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE | FAN_OPEN | FAN_MOVED_FROM | \
         FAN_MOVED_TO | FAN_CREATE | FAN_DELETE | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_RENAME | FAN_ONDIR)

/* The group the helper makes (fanotify_init's flags, and its event_f_flags). */
#define FAN_HELPER_INIT_FLAGS    (FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET)
#define FAN_HELPER_EVENT_F_FLAGS (O_RDONLY | O_CLOEXEC)

typedef struct FanHelperRequest {
        uint32_t magic;
        uint32_t op;
        uint64_t mask; /* MARK, UNMARK */
} FanHelperRequest;

typedef struct FanHelperReply {
        uint32_t magic;
        uint32_t op;   /* the request's */
        int32_t error; /* 0, or a positive errno */
        uint32_t reserved;
} FanHelperReply;
