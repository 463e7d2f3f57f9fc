/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * event_bits - the IN_* values and the API's flag and mask rules
 *
 * The values come from the module's uapi header (the same as the merged
 * syscalls' for every bit the API has). The API accepts exactly the eleven
 * events of /dev/inotify 0.23 in a mask and the four flags of design.md §3.
 */

#include <sys/inotify.h>
#include "inotify_dev.h"
#include "path_escape.h"

/* Event bits a client may ask for. */
#define WATCHD_MASK_VALID INOTIFY_DEV_ALL_EVENTS

#define WATCHD_FLAG_RECURSIVE   0x1u
#define WATCHD_FLAG_ONLYDIR     0x2u
#define WATCHD_FLAG_DONT_FOLLOW 0x4u
#define WATCHD_FLAG_ONESHOT     0x8u
#define WATCHD_FLAGS_VALID      0xfu

/* Not a request flag but how a path is written (shared/path_escape.h): in
 * AddWatch's flags, the path is escaped; in a ListWatches entry, so is its
 * path. The same bit marks an escaped Events record in its mask. */
#define WATCHD_FLAG_PATH_ESCAPED WATCHD_PATH_ESCAPED
