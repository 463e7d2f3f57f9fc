/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-snapshot-diff - two states of a snapshot's path compared, as events
 *
 * The half of WatchdSnapshot (watchd-snapshot.c) that reads nothing and
 * keeps nothing: given what the path held before and what it holds now,
 * it says what changed as ordinary events marked WATCHD_EVENT_RESCANNED,
 * in the order watchd_snapshot_rescan() documents. An inode found under
 * another name is a rename (directories first, what they held going with
 * them, then files, which must also keep their mtime and size); what is
 * left went or came; what is the same object under the same name says
 * whether it was written or had only its metadata changed.
 *
 * It sits below watchd-snapshot.c and calls nothing of it: the object
 * hands it the two states and the path they are under.
 */

#include <sys/stat.h>

#include "watchd-private.h"
#include "watchd-snapshot-diff.h"

/* The path of rel under the root ("" is the root itself). */
char *snapshot_full_path(const char *root, const char *rel) {
        if (!*rel)
                return g_strdup(root);
        if (g_str_equal(root, "/"))
                return g_strconcat("/", rel, NULL);
        return g_strconcat(root, "/", rel, NULL);
}

static gboolean same_object(const Entry *a, const Entry *b) {
        return a->stated && b->stated && a->dev == b->dev && a->ino == b->ino &&
                (a->mode & S_IFMT) == (b->mode & S_IFMT) &&
                (a->btime_ns == 0 || b->btime_ns == 0 || a->btime_ns == b->btime_ns);
}

/* Whether the name's old entry is still its object now (then only what
 * changed in it is said). One an event put there whose stat failed is
 * taken for the file there now (said changed), a directory excepted. */
static gboolean still_there(const Entry *old, const Entry *now) {
        return same_object(old, now) || (!old->stated && !S_ISDIR(now->mode));
}

static guint depth(const char *rel) {
        guint n = 0;

        for (; *rel; rel++)
                n += *rel == '/';
        return n;
}

static int shallow_first(gconstpointer a, gconstpointer b) {
        const char *x = *(const char *const *) a, *y = *(const char *const *) b;
        guint dx = depth(x), dy = depth(y);

        return dx != dy ? (dx < dy ? -1 : 1) : strcmp(x, y);
}

static int deep_first(gconstpointer a, gconstpointer b) {
        const char *x = *(const char *const *) a, *y = *(const char *const *) b;
        guint dx = depth(x), dy = depth(y);

        return dx != dy ? (dx > dy ? -1 : 1) : strcmp(x, y);
}

typedef struct Diff {
        const char *root; /* the snapshot's path */
        GPtrArray *out;   /* WatchdEvent* */
} Diff;

static void emit(Diff *d, guint32 mask, const char *rel, const char *new_rel, const Entry *e) {
        g_autofree char *path = snapshot_full_path(d->root, rel);
        g_autofree char *new_path = new_rel ? snapshot_full_path(d->root, new_rel) : NULL;

        if (e && e->stated && S_ISDIR(e->mode))
                mask |= WATCHD_EVENT_ISDIR;
        g_ptr_array_add(d->out, watchd_event_new(mask | WATCHD_EVENT_RESCANNED, 0, path, new_path));
}

/* What happened to the object at rel that is the same before and after.
 * renamed: it was, and a rename moves its ctime. */
static void emit_changes(Diff *d, const char *rel, const Entry *old, const Entry *now, gboolean renamed) {
        if (!old->stated || (!S_ISDIR(now->mode) && (old->mtime_ns != now->mtime_ns || old->size != now->size))) {
                /* Written (or not known well enough to say it was not). A
                 * directory's mtime moves with its entries: not a write. */
                emit(d, WATCHD_EVENT_MODIFY, rel, NULL, now);
                emit(d, WATCHD_EVENT_CLOSE_WRITE, rel, NULL, now);
        } else if (old->mode != now->mode || old->uid != now->uid || old->gid != now->gid ||
                   (!S_ISDIR(now->mode) && !renamed && old->ctime_ns != now->ctime_ns))
                emit(d, WATCHD_EVENT_ATTRIB, rel, NULL, now);
}

/* Where a renamed directory above it took rel (recursive): "a/x" -> "b/x"
 * when "a" -> "b" was found; NULL if none did. */
static char *moved_with(GHashTable *dir_renames, const char *rel) {
        g_autofree char *p = g_strdup(rel);
        char *slash;

        while ((slash = strrchr(p, '/'))) {
                const char *q;

                *slash = '\0';
                q = g_hash_table_lookup(dir_renames, p);
                if (q)
                        return g_strconcat(q, rel + strlen(p), NULL);
        }
        return NULL;
}

typedef struct Pair {
        const char *from, *to;
        gboolean implied; /* its directory's rename says it */
} Pair;

static int pair_shallow_first(gconstpointer a, gconstpointer b) {
        return shallow_first(&((const Pair *) a)->from, &((const Pair *) b)->from);
}

static GBytes *inode_key(const Entry *e) {
        guint64 id[2] = { e->dev, e->ino };

        return g_bytes_new(id, sizeof(id));
}

/* Pairs what went with what came by inode, once an inode (a number seen
 * twice among either is no evidence). Directories by inode and type; other
 * files also by mtime and size, which a rename keeps and a new file that
 * got a freed inode number does not. */
static void pair_by_inode(GHashTable *old, GHashTable *now, GPtrArray *gone, GPtrArray *came, gboolean dirs,
                          GHashTable *paired_gone, GHashTable *paired_came, GArray *pairs) {
        g_autoptr(GHashTable)
                by_inode = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);

        for (guint i = 0; i < gone->len; i++) {
                Entry *e = g_hash_table_lookup(old, gone->pdata[i]);
                g_autoptr(GBytes) k = NULL;

                if (!e->stated || !S_ISDIR(e->mode) != !dirs || g_hash_table_contains(paired_gone, gone->pdata[i]))
                        continue;
                k = inode_key(e);
                g_hash_table_insert(by_inode, g_bytes_ref(k), g_hash_table_contains(by_inode, k) ? NULL : gone->pdata[i]);
        }
        for (guint i = 0; i < came->len; i++) {
                Entry *e = g_hash_table_lookup(now, came->pdata[i]), *o;
                g_autoptr(GBytes) k = NULL;
                const char *from;

                if (!S_ISDIR(e->mode) != !dirs || g_hash_table_contains(paired_came, came->pdata[i]))
                        continue;
                k = inode_key(e);
                from = g_hash_table_lookup(by_inode, k);
                g_hash_table_insert(by_inode, g_bytes_ref(k), NULL); /* once an inode, either way */
                if (!from)
                        continue;
                o = g_hash_table_lookup(old, from);
                if (!same_object(o, e) || (!dirs && (o->mtime_ns != e->mtime_ns || o->size != e->size)))
                        continue;
                g_hash_table_add(paired_gone, (gpointer) from);
                g_hash_table_add(paired_came, came->pdata[i]);
                g_array_append_val(pairs, ((Pair) { from, came->pdata[i], FALSE }));
        }
}

static void diff_entries(Diff *d, GHashTable *old, GHashTable *now) {
        g_autoptr(GPtrArray) gone = g_ptr_array_new(), came = g_ptr_array_new(), kept = g_ptr_array_new();
        g_autoptr(GHashTable) paired_gone = g_hash_table_new(g_str_hash, g_str_equal); /* the ends of pairs */
        g_autoptr(GHashTable) paired_came = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GHashTable) dir_renames = g_hash_table_new(g_str_hash, g_str_equal); /* from -> to */
        g_autoptr(GHashTable) came_set = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GArray) pairs = g_array_new(FALSE, FALSE, sizeof(Pair));
        g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func(g_free);
        GHashTableIter it;
        gpointer key, value;

        g_hash_table_iter_init(&it, old);
        while (g_hash_table_iter_next(&it, &key, &value)) {
                Entry *n = g_hash_table_lookup(now, key);

                g_ptr_array_add(n && still_there(value, n) ? kept : gone, key);
        }
        g_hash_table_iter_init(&it, now);
        while (g_hash_table_iter_next(&it, &key, &value)) {
                Entry *o = g_hash_table_lookup(old, key);

                if (!o || !still_there(o, value)) {
                        g_ptr_array_add(came, key);
                        g_hash_table_add(came_set, key);
                }
        }
        g_ptr_array_sort(gone, shallow_first);
        g_ptr_array_sort(came, shallow_first);

        /* Renamed directories; what they held went with them (a name found
         * where the rename took it, the same object: no event of its own);
         * then renamed files. */
        pair_by_inode(old, now, gone, came, TRUE, paired_gone, paired_came, pairs);
        for (guint i = 0; i < pairs->len; i++) {
                Pair *p = &g_array_index(pairs, Pair, i);

                g_hash_table_insert(dir_renames, (gpointer) p->from, (gpointer) p->to);
        }
        for (guint i = 0; i < gone->len; i++) {
                char *to = moved_with(dir_renames, gone->pdata[i]);
                gpointer orig = NULL;

                if (!to)
                        continue;
                g_ptr_array_add(owned, to);
                if (!g_hash_table_lookup_extended(came_set, to, &orig, NULL) ||
                    !same_object(g_hash_table_lookup(old, gone->pdata[i]), g_hash_table_lookup(now, to)))
                        continue;
                if (g_hash_table_contains(paired_gone, gone->pdata[i])) {
                        /* A directory found by inode too: implied, not said. */
                        for (guint j = 0; j < pairs->len; j++)
                                if (g_array_index(pairs, Pair, j).from == gone->pdata[i])
                                        g_array_index(pairs, Pair, j).implied = TRUE;
                        continue;
                }
                g_hash_table_add(paired_gone, gone->pdata[i]);
                g_hash_table_add(paired_came, orig);
                g_array_append_val(pairs, ((Pair) { gone->pdata[i], orig, TRUE }));
        }
        pair_by_inode(old, now, gone, came, FALSE, paired_gone, paired_came, pairs);

        /* Renames, shallow first; then what went, deepest first; what came,
         * shallow first; what changed in place (and in what was renamed). */
        g_array_sort(pairs, pair_shallow_first);
        for (guint i = 0; i < pairs->len; i++) {
                Pair *p = &g_array_index(pairs, Pair, i);

                if (!p->implied)
                        emit(d, WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO, p->from, p->to,
                             g_hash_table_lookup(now, p->to));
                emit_changes(d, p->to, g_hash_table_lookup(old, p->from), g_hash_table_lookup(now, p->to), TRUE);
        }
        /* Not what a rename came over: that one says it went (as inotify's
         * MOVED_TO over a name does). */
        g_ptr_array_sort(gone, deep_first);
        for (guint i = 0; i < gone->len; i++)
                if (!g_hash_table_contains(paired_gone, gone->pdata[i]) &&
                    !g_hash_table_contains(paired_came, gone->pdata[i]))
                        emit(d, WATCHD_EVENT_DELETE, gone->pdata[i], NULL, g_hash_table_lookup(old, gone->pdata[i]));
        for (guint i = 0; i < came->len; i++)
                if (!g_hash_table_contains(paired_came, came->pdata[i]))
                        emit(d, WATCHD_EVENT_CREATE, came->pdata[i], NULL, g_hash_table_lookup(now, came->pdata[i]));
        g_ptr_array_sort(kept, shallow_first);
        for (guint i = 0; i < kept->len; i++)
                emit_changes(d, kept->pdata[i], g_hash_table_lookup(old, kept->pdata[i]),
                             g_hash_table_lookup(now, kept->pdata[i]), FALSE);
}

static void diff(Diff *d, const State *old, const State *now) {
        g_autoptr(GPtrArray) all = NULL;
        GHashTableIter it;
        gpointer key;

        if (old->present && now->present && same_object(&old->root, &now->root)) {
                if (!S_ISDIR(now->root.mode))
                        emit_changes(d, "", &old->root, &now->root, FALSE);
                else if (old->root.mode != now->root.mode || old->root.uid != now->root.uid ||
                         old->root.gid != now->root.gid)
                        emit(d, WATCHD_EVENT_ATTRIB, "", NULL, &now->root);
                diff_entries(d, old->entries, now->entries);
                return;
        }
        /* Gone, came, or another object now: said of the path itself, then
         * all it holds is new. */
        if (old->present)
                emit(d, WATCHD_EVENT_DELETE_SELF, "", NULL, &old->root);
        if (!now->present)
                return;
        emit(d, WATCHD_EVENT_CREATE, "", NULL, &now->root);
        all = g_ptr_array_new();
        g_hash_table_iter_init(&it, now->entries);
        while (g_hash_table_iter_next(&it, &key, NULL))
                g_ptr_array_add(all, key);
        g_ptr_array_sort(all, shallow_first);
        for (guint i = 0; i < all->len; i++)
                emit(d, WATCHD_EVENT_CREATE, all->pdata[i], NULL, g_hash_table_lookup(now->entries, all->pdata[i]));
}

void snapshot_diff(const char *root, const State *old, const State *now, GPtrArray *out) {
        Diff d = { root, out };

        diff(&d, old, now);
}
