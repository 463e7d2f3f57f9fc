/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * moves - the paths of subscriptions follow their directories' renames
 *
 * A watched directory's parent reports its rename as IN_MOVED_FROM and
 * IN_MOVED_TO (one cookie, in a row). When both halves are seen, the path of
 * every placed subscription at or below the old path follows it
 * (watch_table_rename_paths), so records and ListWatches name the directory
 * by where it is. Within one directory each link keeps its own spelling of
 * the path; across two, the new directory's first link gives the new
 * spelling. A RECURSIVE tree follows the renames inside it by itself
 * (tree.c: its links move); pending paths keep the path they asked for, and
 * so do PERSIST subscriptions: at the IN_MOVED_FROM, those at or below the
 * old path are named to the caller, whose objects have left their paths.
 */

#include <glib.h>

#include "event_decode.h"
#include "watch_table.h"

typedef struct Moves Moves;

int moves_new(WatchTable *table, Moves **ret);
Moves *moves_free(Moves *mv);

/* A record of w: an IN_MOVED_FROM/IN_MOVED_TO of a directory (IN_ISDIR, a
 * name, a cookie) is followed. At an IN_MOVED_FROM, the ids (uint32_t) of the
 * placed PERSIST subscriptions at or below the old path are appended to
 * ret_left (if not NULL), maybe more than once. */
void moves_on_event(Moves *mv, Watch *w, const RawEvent *ev, GArray *ret_left);
