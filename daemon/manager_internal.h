/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * manager_internal - the manager's struct, shared by manager.c (building
 * the core and wiring its callbacks) and manager_calls.c (what the loop and
 * the bus layer ask of it). Nothing else includes it: the Manager is opaque
 * to the layers above.
 *
 * What it shares with manager.h (the Manager typedef, ManagerHooks,
 * ManagerWaitFunc) is in manager_types.h: it does not include manager.h,
 * which both files include beside it.
 */

#include <glib.h>
#include <stdint.h>

#include "accounting.h"
#include "backend.h"
#include "config.h"
#include "delivery.h"
#include "events.h"
#include "fanotify.h"
#include "fswork.h"
#include "hold.h"
#include "manager_types.h"
#include "missing.h"
#include "moves.h"
#include "remote.h"
#include "self_events.h"
#include "subscriptions.h"
#include "tree.h"
#include "watch_table.h"

/* The kernel's records are handled for at most this long at a time. */
#define KERNEL_SLICE_USEC 5000u

struct Manager {
        Config config;
        uint32_t kernel_watch_limit; /* the kernel's, read at start: "auto" limits are sized from it */

        Backend *backend;
        WatchTable *table;
        Accounting *accounting;
        Delivery *delivery;
        Tree *tree;              /* RECURSIVE subscriptions */
        Missing *missing;        /* pending paths */
        Moves *moves;            /* renamed directories */
        Remote *remote;          /* directories on remote file systems, polled */
        SelfEvents *self_events; /* the daemon's own reads of directories, not reported */
        Events *events;          /* the kernel's records */
        Holds *holds;            /* records waiting for probes of pending paths in workers */
        Fanotify *fanotify;      /* RECURSIVE trees on one mark a filesystem; NULL: inotify only */
        Subscriptions *subs;     /* the clients and their subscriptions */

        FsWork *fswork;             /* file system work off the loop; NULL: on it (unit tests) */
        GHashTable *primed_waiters; /* subscription id -> GPtrArray of Waiter: first snapshots */
        GHashTable *lookup_waiters; /* subscription id -> GPtrArray of Waiter: pending path looked up */

        ManagerHooks hooks;
        void *hooks_userdata;
};

/* Someone waiting for something of a subscription (manager_when_primed(),
 * manager_when_looked_up()): cb(r, userdata) once, when it is done. */
typedef struct Waiter {
        ManagerWaitFunc cb;
        void *userdata;
} Waiter;

/* manager.c: a table of them by subscription id (*table made at the first). */
int waiters_add(GHashTable **table, uint32_t id, ManagerWaitFunc cb, void *userdata);
void waiters_cancel(GHashTable *table, uint32_t id, ManagerWaitFunc cb, void *userdata);
/* Those of id, taken out of table (a waiter told may wait again), or NULL. */
GPtrArray *waiters_take(GHashTable *table, uint32_t id);
/* Each of ws (NULL: none) told r; ws freed. */
void waiters_tell(GPtrArray *ws, int r);
/* At exit: each told -ESHUTDOWN (it frees what it holds, touching nothing else). */
void waiters_free(GHashTable *table);
