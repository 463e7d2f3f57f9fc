/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-snapshot-diff - what a snapshot knows of its path, and the
 * comparison of two such states (watchd-snapshot-diff.c), for
 * watchd-snapshot.c only: neither installed nor introspected
 */

#include <glib.h>

typedef struct Entry {
        guint64 dev, ino, size;
        gint64 mtime_ns, ctime_ns;
        gint64 btime_ns; /* birth time, 0 where the file system does not say */
        guint32 mode, uid, gid;
        gboolean stated; /* attributes known (FALSE: an event said it is there, its stat failed) */
} Entry;

/* What a path holds: the path itself, and its entries. */
typedef struct State {
        gboolean present;
        Entry root;
        GHashTable *entries; /* path relative to the root ("a", "a/b") -> Entry* */
} State;

/* The path of rel under root ("" is root itself). */
char *snapshot_full_path(const char *root, const char *rel);

/* Appends to out (WatchdEvent*) the differences between old and now, the
 * states of the path root, as watchd_snapshot_rescan() says them. */
void snapshot_diff(const char *root, const State *old, const State *now, GPtrArray *out);
