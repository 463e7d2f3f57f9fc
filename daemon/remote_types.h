/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * remote_types - the words of remote.h that remote_internal.h needs too:
 * the Remote (opaque here), the callbacks it is given (RemoteOps) and the
 * hint of a root's file system (RemoteHint), both of which the Remote
 * holds. remote.h and remote_internal.h include it; it includes no header
 * of the remote polling.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fstype.h"
#include "watch_table_types.h"

typedef struct Remote Remote;

typedef struct RemoteOps {
        /* A change found by polling, for s: as events_deliver(). */
        bool (*deliver)(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                        size_t name_len, uint64_t now_usec, void *userdata);
        /* The polled root of s is gone (deleted on the server, ESTALE): s ends with WatchRemoved "deleted". */
        void (*gone)(Subscription *s, void *userdata);
        /* Every first snapshot of s's directories taken in a worker is taken (or failed): see remote_priming(). */
        void (*primed)(Subscription *s, void *userdata);
} RemoteOps;

/* What remote_link_added() asks the file system of a subscription's root,
 * asked in the worker that opened it (remote_hint_probe(), no Remote state
 * touched), so that a file system that does not answer holds that worker
 * and not the loop: its kind (fstatfs, mountinfo) and its parent. */
typedef struct RemoteHint {
        bool valid;
        dev_t dev;
        ino_t ino;
        FsKind kind;
        uint64_t fsid; /* statfs f_fsid (0: not known): fanotify_can_serve()'s */
        bool have_parent;
        dev_t pdev;
        ino_t pino;
} RemoteHint;
