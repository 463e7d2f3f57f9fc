/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-paths - the paths of watchd's records, checked and looked up in one pass
 * (see watchd-paths.h)
 *
 * The index is a hash table keyed by (hash, length, bytes) rather than by
 * C strings: the hash of every prefix of a path is had in one pass (each
 * byte folded once into the running hash, djb2 as g_str_hash()), and a
 * lookup needs no NUL where the prefix ends, so nothing is copied.
 */

#include <limits.h>
#include <string.h>

#include "watchd-paths.h"

#define HASH_INIT       5381u
#define HASH_STEP(h, c) ((h) *33u + (guint8) (c))

gboolean watchd_path_is_canonical(const char *path, size_t len) {
        size_t start = 1;

        if (len == 0 || len >= PATH_MAX || path[0] != '/')
                return FALSE;
        if (len == 1)
                return TRUE;
        if (path[len - 1] == '/')
                return FALSE;
        /* Each component: from after a '/' to the next '/' or the end. */
        for (size_t i = 1; i <= len; i++)
                if (i == len || path[i] == '/') {
                        size_t n = i - start;

                        if (n == 0 || (n == 1 && path[start] == '.') ||
                            (n == 2 && path[start] == '.' && path[start + 1] == '.'))
                                return FALSE;
                        start = i + 1;
                }
        return memchr(path, '\0', len) == NULL;
}

typedef struct PathKey {
        guint hash;
        size_t len;
        const char *bytes;
} PathKey;

/* The items under one path. */
typedef struct PathEntry {
        PathKey key; /* bytes: path below */
        char *path;
        GPtrArray *items;
} PathEntry;

struct PathIndex {
        GHashTable *entries; /* PathKey* (in its PathEntry) -> PathEntry* */
        PathIndexStats stats;
};

static guint key_hash(gconstpointer p) {
        return ((const PathKey *) p)->hash;
}

static gboolean key_equal(gconstpointer a, gconstpointer b) {
        const PathKey *x = a, *y = b;

        return x->len == y->len && memcmp(x->bytes, y->bytes, x->len) == 0;
}

static void entry_free(PathEntry *e) {
        g_ptr_array_unref(e->items);
        g_free(e->path);
        g_free(e);
}

static guint hash_bytes(const char *s, size_t len) {
        guint h = HASH_INIT;

        for (size_t i = 0; i < len; i++)
                h = HASH_STEP(h, s[i]);
        return h;
}

PathIndex *path_index_new(void) {
        PathIndex *ix = g_new0(PathIndex, 1);

        ix->entries = g_hash_table_new_full(key_hash, key_equal, NULL, (GDestroyNotify) entry_free);
        return ix;
}

void path_index_free(PathIndex *ix) {
        if (!ix)
                return;
        g_hash_table_destroy(ix->entries);
        g_free(ix);
}

void path_index_add(PathIndex *ix, const char *path, gpointer item) {
        size_t len = strlen(path);
        PathKey key = { .hash = hash_bytes(path, len), .len = len, .bytes = path };
        PathEntry *e = g_hash_table_lookup(ix->entries, &key);

        if (!e) {
                e = g_new0(PathEntry, 1);
                e->path = g_strndup(path, len);
                e->key = (PathKey) { .hash = key.hash, .len = len, .bytes = e->path };
                e->items = g_ptr_array_new();
                g_hash_table_insert(ix->entries, &e->key, e);
        }
        g_ptr_array_add(e->items, item);
}

void path_index_remove(PathIndex *ix, const char *path, gpointer item) {
        size_t len = strlen(path);
        PathKey key = { .hash = hash_bytes(path, len), .len = len, .bytes = path };
        PathEntry *e = g_hash_table_lookup(ix->entries, &key);

        if (!e)
                return;
        g_ptr_array_remove(e->items, item);
        if (e->items->len == 0)
                g_hash_table_remove(ix->entries, &e->key);
}

/* One prefix of the path that may be a subscription's directory. */
typedef struct Prefix {
        guint32 len;
        guint hash;
} Prefix;

static gboolean visit(PathIndex *ix, const char *path, const Prefix *p, PathRelation rel, PathIndexFunc fn,
                      gpointer userdata) {
        PathKey key = { .hash = p->hash, .len = p->len, .bytes = path };
        PathEntry *e;

        ix->stats.lookups++;
        e = g_hash_table_lookup(ix->entries, &key);
        if (!e)
                return TRUE;
        ix->stats.bytes += p->len; /* the comparison that found it */
        for (guint i = 0; i < e->items->len; i++)
                if (!fn(e->items->pdata[i], rel, userdata))
                        return FALSE;
        return TRUE;
}

void path_index_foreach_above(PathIndex *ix, const char *path, size_t len, PathIndexFunc fn, gpointer userdata) {
        /* A canonical path is shorter than PATH_MAX: at most one directory
         * every two bytes. */
        Prefix dirs[PATH_MAX / 2 + 1], self;
        size_t n = 0;
        guint h = HASH_INIT;

        g_return_if_fail(len > 0 && len < PATH_MAX && path[0] == '/');
        for (size_t i = 0; i < len; i++) {
                if (path[i] == '/' && i + 1 < len)
                        /* The directory up to this '/' ("/" itself for the first). */
                        dirs[n++] = (Prefix) { .len = i == 0 ? 1 : (guint32) i, .hash = i == 0 ? HASH_STEP(h, '/') : h };
                h = HASH_STEP(h, path[i]);
        }
        ix->stats.bytes += len;
        self = (Prefix) { .len = (guint32) len, .hash = h };
        if (!visit(ix, path, &self, PATH_SELF, fn, userdata))
                return;
        for (size_t k = n; k > 0; k--)
                if (!visit(ix, path, &dirs[k - 1], k == n ? PATH_PARENT : PATH_ANCESTOR, fn, userdata))
                        return;
}

const PathIndexStats *path_index_get_stats(PathIndex *ix) {
        return &ix->stats;
}
