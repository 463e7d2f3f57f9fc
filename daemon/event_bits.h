/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * event_bits - the kernel's IN_* values, and the API's (watchd-api.h) checked against them
 *
 * The values come from the module's uapi header (the same as the merged
 * syscalls' for every bit the API has). The API accepts exactly the eleven
 * events of /dev/inotify 0.23 in a mask, and the four flags of watchd(8).
 */

#include <assert.h>
#include <sys/inotify.h>

#include "inotify_dev.h"
#include "path_escape.h"
#include "watchd-api.h"

static_assert(WATCHD_MASK_VALID == INOTIFY_DEV_ALL_EVENTS, "the API's mask is the 0.23 events");
static_assert(WATCHD_IN_ACCESS == IN_ACCESS && WATCHD_IN_MODIFY == IN_MODIFY && WATCHD_IN_ATTRIB == IN_ATTRIB &&
                      WATCHD_IN_CLOSE_WRITE == IN_CLOSE_WRITE && WATCHD_IN_CLOSE_NOWRITE == IN_CLOSE_NOWRITE &&
                      WATCHD_IN_OPEN == IN_OPEN && WATCHD_IN_MOVED_FROM == IN_MOVED_FROM &&
                      WATCHD_IN_MOVED_TO == IN_MOVED_TO && WATCHD_IN_CREATE == IN_CREATE &&
                      WATCHD_IN_DELETE == IN_DELETE && WATCHD_IN_DELETE_SELF == IN_DELETE_SELF &&
                      WATCHD_IN_UNMOUNT == IN_UNMOUNT && WATCHD_IN_ISDIR == IN_ISDIR,
              "the API's event bits are inotify's");
/* Not in the 0.23 ABI (a module of ABI version 2 has it): the syscalls' bit, which the
 * daemon also makes itself for a PERSIST subscription (events.c). */
static_assert(WATCHD_IN_MOVE_SELF == IN_MOVE_SELF, "IN_MOVE_SELF is the syscalls'");
