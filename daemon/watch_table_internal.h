/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watch_table_internal - the WatchTable itself, for the files of the table
 * only: watch_table.c, which makes and frees it, places and removes its
 * links and watches, and watch_rename.c, which reads its subscriptions at
 * a rename (watch_table.h says what each function does).
 *
 * The module's files stand in layers, each calling only those before it:
 * watch_placed.c and watch_narrow.c (each on its own, telling the table
 * through a callback), watch_link.c, watch_table.c, watch_rename.c.
 *
 * It includes neither watch_table.h nor watch_link.h (the records, and
 * WatchTableOps, are in watch_table_types.h), so that it stands below
 * watch_table.h.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "ptr_set.h"
#include "watch_narrow.h"
#include "watch_placed.h"
#include "watch_table_types.h"

struct WatchTable {
        Backend *backend;
        PtrSet by_wd;              /* wd -> Watch (owned) */
        Watch *last;               /* the last found by wd: a storm's records are mostly of one watch */
        PtrSet by_inode;           /* (dev, ino) -> Watch (not stale ones) */
        GHashTable *subscriptions; /* id -> Subscription (owned) */
        uint32_t next_id;
        WatchTableOps ops; /* told of links made and removed */
        void *ops_userdata;
        unsigned n_persist; /* subscriptions with PERSIST: none, no search at a rename */
        Narrower *narrower; /* the narrowings in workers (watch_narrow.h) */
        bool closing;       /* watch_table_closing(): no more narrowing */
        /* Watches placed in workers (WatchPlaced in watch_table.h): */
        struct WatchPlaced *placed; /* for the links made now (watch_table_set_placed()) */
        PlacedLedger ledger;        /* what the loop keeps of them (watch_placed.h) */
};
