/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-paths - the paths of watchd's records, checked and looked up in one pass
 *
 * A record's path comes from the daemon, and the daemon may be anyone who
 * owns the bus name (docs/CLIENTS.md): before the library believes it, it
 * must be what watchd sends, an absolute path spelled canonically and
 * shorter than PATH_MAX. Then the subscriptions it may belong to are those
 * at the path itself, at its directory, or RECURSIVE above it: PathIndex
 * finds them all in one pass over the path, hashing each byte once and
 * copying nothing, so a record costs work in proportion to its length
 * (bounded by PATH_MAX), whatever its depth. Pure: no lock, no I/O;
 * tests/libwatchd/test-paths.c counts its work.
 */

#include <glib.h>

/* Whether path[0..len) is absolute, holds no empty, "." or ".." component
 * and no trailing '/' (but "/" itself), and is shorter than PATH_MAX. */
gboolean watchd_path_is_canonical(const char *path, size_t len);

typedef enum PathRelation {
        PATH_SELF,     /* the item's path is the path itself */
        PATH_PARENT,   /* the directory the path is in */
        PATH_ANCESTOR, /* a directory above that */
} PathRelation;

typedef struct PathIndex PathIndex;

/* Work done, for the tests: bytes hashed or compared, and lookups. */
typedef struct PathIndexStats {
        guint64 bytes;
        guint64 lookups;
} PathIndexStats;

PathIndex *path_index_new(void);
void path_index_free(PathIndex *ix);
/* item under path (canonical); an item may be under one path only. */
void path_index_add(PathIndex *ix, const char *path, gpointer item);
void path_index_remove(PathIndex *ix, const char *path, gpointer item);

/* Called for each item at path or above it, the nearest first; returns
 * FALSE to stop. Items must not be added or removed meanwhile. */
typedef gboolean (*PathIndexFunc)(gpointer item, PathRelation relation, gpointer userdata);
/* path[0..len) must be canonical (watchd_path_is_canonical()). */
void path_index_foreach_above(PathIndex *ix, const char *path, size_t len, PathIndexFunc fn, gpointer userdata);

const PathIndexStats *path_index_get_stats(PathIndex *ix);
