/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch_rename - what a rename does to the watch table
 *
 * A directory renamed keeps its watches: the inode does not change, and
 * neither do its links' names below it. What changes is above: a link moved
 * inside its tree (watch_table_move_link(): a new parent, a new name, maybe
 * a new allocation), the paths of the placed subscriptions at or below the
 * old path (watch_table_rename_paths(): a root link's path is its
 * subscription's), and the PERSIST subscriptions whose object left their
 * path (watch_table_persist_at(): the caller ends or follows them).
 *
 * Above watch_table.c: it reads the table's subscriptions
 * (watch_table_internal.h) and the links' memory (watch_link.h), and
 * nothing of the table calls it.
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "event_bits.h"
#include "list.h"
#include "macro.h"
#include "path.h"
#include "watch_table.h"
#include "watch_table_internal.h"

WatchLink *watch_table_move_link(WatchTable *t, WatchLink *l, WatchLink *new_parent, const char *name, size_t name_len) {
        assert(!l->top && watch_link_subscription(new_parent) == watch_link_subscription(l));
        /* The name's length says where a link's memory is from
         * (watch_link_dealloc()): another pool, another allocation. */
        if (!watch_link_fits(l, name_len)) {
                WatchLink *n = watch_link_alloc(name_len);

                if (!n)
                        return NULL;
                SLIST_REMOVE(watch, l->watch->links, l);
                LIST_REMOVE(sib, l->up.parent->children, l);
                *n = *l;
                SLIST_PREPEND(watch, n->watch->links, n);
                LIST_PREPEND(sib, n->up.parent->children, n);
                LIST_FOREACH(sib, c, n->children)
                        c->up.parent = n;
                watch_link_dealloc(l);
                l = n;
        }

        /* Out of its old parent's children, into the new one's. */
        LIST_REMOVE(sib, l->up.parent->children, l);
        l->up.parent = new_parent;
        LIST_PREPEND(sib, new_parent->children, l);
        memcpy(l->name, name, name_len);
        l->name[name_len] = '\0';
        return l;
}

int watch_table_rename_paths(WatchTable *t, const char *old_path, const char *new_path) {
        bool oom = false;
        GHashTableIter i;
        gpointer v;
        int n = 0;

        g_hash_table_iter_init(&i, t->subscriptions);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Subscription *s = v;
                _cleanup_free_ char *p = NULL;

                /* A pending subscription keeps the path it asked for: a rename of a
                 * directory of it is seen by its own links, which place it again.
                 * So does a PERSIST one: its object left the path at the
                 * IN_MOVED_FROM (watch_table_persist_at()). */
                if (s->pending || (s->flags & WATCHD_FLAG_PERSIST))
                        continue;
                bool o;

                p = path_rebase(s->path, old_path, new_path, &o);
                oom = oom || o;
                if (p) {
                        free(s->path); /* a root link's path (watch_link_path) */
                        s->path = TAKE_PTR(p);
                        n++;
                }
        }
        return oom ? -ENOMEM : n;
}

int watch_table_persist_at(WatchTable *t, const char *path, GArray *ids) {
        GHashTableIter i;
        gpointer v;
        int n = 0;

        if (t->n_persist == 0)
                return 0;
        g_hash_table_iter_init(&i, t->subscriptions);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Subscription *s = v;

                if (!(s->flags & WATCHD_FLAG_PERSIST) || s->pending || !path_startswith(s->path, path))
                        continue;
                g_array_append_val(ids, s->id);
                n++;
        }
        return n;
}
