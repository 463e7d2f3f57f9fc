/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * remote_internal - what remote.c (polled directories, the poller's
 * callbacks, the announcements of its own reads) and remote_own.c (the
 * kernel's records: noted for the next poll, or told to be the poller's
 * own) share. For those two files only.
 *
 * They stand in layers, each calling only those before it: remote.c,
 * remote_own.c.
 */

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "access.h"
#include "fstype.h"
#include "fswork.h"
#include "poller_types.h"
#include "remote_types.h"
#include "self_events.h"
#include "watch_table.h"

typedef struct RemoteGroup {
        Remote *remote;
        Subscription *s;
        dev_t dev;
        FsKind kind;
        PollGroup *pg;
        unsigned n_dirs;
} RemoteGroup;

typedef struct RemoteDir {
        Remote *remote;
        RemoteGroup *group;
        Subscription *s;
        Watch *w;
        PollDir *pd;
        /* A root's parent directory, where its own reads show up too (under
         * the last component of its path); a tree's directory finds it
         * through its link's parent. */
        dev_t pdev;
        ino_t pino;
        bool have_parent;
        bool overflowed; /* the owner was told this one cannot be read */
        bool priming;    /* its first snapshot is taken in a worker */
        /* Read in a worker: the own-read keys announced for it (OwnRead.pinned). */
        bool announced;
        int own_wd, parent_wd;
        char *parent_name;
} RemoteDir;

/* Records the poller's reads in a worker may make the kernel queue, not yet
 * seen. Reads made on the loop are self_events.h's; a worker's cannot be
 * (its notes are single-threaded): they are announced here instead. */
typedef struct OwnRead {
        int wd;
        char *name; /* NULL: the directory's own watch */
        unsigned open, access, close;
        /* Reads of it in a worker: they make their records at any time until they end, so
         * what they announced is kept past the kernel queue being read empty. */
        unsigned pinned;
} OwnRead;

/* What a read in a worker announces on each watch: one open and one close,
 * and the getdents64 calls, as many as they are (the kernel merges the
 * IN_ACCESS of calls in a row: counted as one each, some are never met). */
#define OWN_ACCESS_MANY 65536u

typedef struct Key {
        const void *a;
        uintptr_t b;
} Key;

struct Remote {
        WatchTable *table;
        RemoteOps ops;
        void *userdata;
        Poller *poller;
        uint32_t interval_sec[_FS_KIND_MAX];

        GHashTable *dirs;        /* Key{Subscription, Watch} -> RemoteDir (owned) */
        GHashTable *groups;      /* Key{Subscription, dev} -> RemoteGroup (owned) */
        GHashTable *by_watch;    /* Watch -> GPtrArray of RemoteDir on it */
        GHashTable *subs;        /* Subscription -> directories of it polled */
        GHashTable *unpolled;    /* Key{Subscription, Watch} -> FsKind: remote directories not polled
                                  * (NO_POLL, an interval of 0, over the budget) */
        GHashTable *remote_subs; /* Subscription -> directories of it on remote file systems, polled or not */
        SelfEvents *self;        /* the poller's own reads of directories */
        GArray *own_reads;       /* OwnRead: those of reads in workers */
        unsigned n_dirs;
        FsWork *fswork;      /* NULL: reads in poller_run() */
        GHashTable *priming; /* Subscription -> its directories' first snapshots in workers */

        RemoteHint hint;    /* remote_set_hint() */
        AccessSaved saved;  /* between begin and end */
        bool linking_found; /* remote_link_added() for a directory found by polling */
        uint32_t cookie;
};

WatchLink *remote_dir_link(const RemoteDir *d);
/* The announcement for name on wd (NULL: the directory's own watch); add: made if none. */
OwnRead *remote_own_read_get(Remote *r, int wd, const char *name, size_t name_len, bool add);
