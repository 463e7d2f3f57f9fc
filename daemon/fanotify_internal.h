/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * fanotify_internal - what fanotify.c (the group, its events) and
 * fanotify_marks.c (where it serves: filesystems, marks, lookups, callers)
 * share; no other part includes it.
 *
 * They stand in layers, each calling only those before it: fanotify.c,
 * fanotify_marks.c. fanotify.c owns the Fanotify and frees what it holds
 * (fan_fs_free() too); the directory cache's lookups in fanotify_marks.c
 * ask it for the read ahead.
 *
 * What it shares with fanotify.h (the Fanotify typedef, FanotifyOps,
 * FanotifyStats) is in fanotify_types.h: it does not include fanotify.h,
 * which both files include beside it.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "access.h"
#include "fan_decode.h"
#include "fan_dircache.h"
#include "fan_group.h"
#include "fanotify_types.h"
#include "list.h"
#include "watch_table.h"

/* What every mark carries, for the directory cache: directories created,
 * deleted and renamed (FAN_ONDIR: directories too). */
#define FAN_CACHE_MASK (FAN_CREATE | FAN_DELETE | FAN_RENAME | FAN_ONDIR)

typedef struct FanFs FanFs;
typedef struct FanSub FanSub;

typedef struct FanCaller {
        uint32_t id;   /* > 0 */
        Caller caller; /* owns gids */
        unsigned refs;
} FanCaller;

struct FanFs {
        Fanotify *fanotify;
        uint64_t fsid;
        dev_t dev;
        int mount_id;
        int mount_fd;  /* O_RDONLY directory: open_by_handle_at()'s, and the marks' */
        uint64_t mask; /* marked */
        FanDirCache *cache;
        LIST_HEAD(FanSub, subs);
};

struct FanSub {
        Subscription *subscription;
        FanFs *fs;
        FanDir *root;              /* pinned */
        uint32_t caller;           /* FanCaller.id, 0: root */
        LIST_FIELDS(FanSub, fs);   /* among fs->subs */
        LIST_FIELDS(FanSub, root); /* among root->roots */
};

struct Fanotify {
        FanGroup *group;
        FanotifyOps ops;
        void *userdata;
        pid_t self;
        GHashTable *filesystems; /* fsid (uint64_t *) -> FanFs */
        GHashTable *subs;        /* Subscription * -> FanSub */
        GPtrArray *callers;      /* FanCaller */
        uint32_t next_caller;
        GHashTable *refused; /* "dev:fsid" of filesystems the kernel would not mark */
        uint32_t next_cookie;
        uint8_t *buf; /* the read being handled: buf[off, len) not handled yet */
        size_t off, len;
        uint64_t base;  /* where buf starts in all the group's reads, bytes */
        uint64_t end;   /* where the last read ended, in the same count */
        GQueue ahead;   /* FanRead: read ahead of buf (fanotify_read_ahead()), in order */
        uint8_t *spare; /* a buffer of READ_BUF bytes for the next read ahead, or NULL */
        bool in_slice;  /* in fanotify_slice(): events are being handled */
        GArray *later;  /* Later: the directory renames and deletions of buf and ahead */
        /* Past the read ahead: it stopped at READ_AHEAD_MAX, not at an empty
         * queue. A directory looked up then was found where it is now, and a
         * rename or deletion of it queued before the lookup may be past what
         * was read: its handle is kept (unsure) until a read finds the queue
         * empty (all that was queued then is read and indexed), and such a
         * rename or deletion, when read, gives Overflow
         * (fanotify_note_lookup(), index_later()). */
        GHashTable *unsure; /* GBytes: the handles, NULL if none */
        bool unsure_all;    /* more than UNSURE_MAX: any directory's rename or deletion counts */
        bool misplaced;     /* one was read: Overflow once the event being handled is */
        FanotifyStats stats;
};

/*
 * A directory renamed or deleted by an event read and not handled yet:
 * where it was before. A directory looked up for an event (it was not
 * cached) is found where it is now, which a rename or a deletion queued
 * after that event has changed; where it was when the event happened is
 * where the first of those says it was (fs_lookup()). What the kernel
 * queued after the read being handled is read ahead for that, right after
 * the lookup (fanotify_read_ahead()).
 */
typedef struct Later {
        uint64_t pos;    /* of the event, counted as Fanotify.base */
        FanHandle child; /* the directory */
        FanHandle dir;   /* where it was */
        const char *name;
        size_t name_len;
} Later;

/* fanotify.c */
/* The first rename or deletion of directory h read after the event being
 * handled, or NULL. */
const Later *fanotify_later(const Fanotify *f, const FanHandle *h);
/* Reads what the group queued since the last read (a bounded amount:
 * fanotify.c's READ_AHEAD_MAX), to be handled after buf, and learns its
 * Laters. Returns whether it read anything. */
bool fanotify_read_ahead(Fanotify *f);
/* Directory h was just looked up, after fanotify_read_ahead(), and no Later
 * of it was found: if the read ahead could not read all that was queued,
 * h is kept to be checked against what is read later. */
void fanotify_note_lookup(Fanotify *f, const FanHandle *h);
/* Frees fs: its directory cache and its mount's fd. fanotify_free() frees
 * the filesystems left with it. */
void fan_fs_free(FanFs *fs);
