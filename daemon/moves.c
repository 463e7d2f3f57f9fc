/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * moves - the paths of subscriptions follow their directories' renames
 *
 * Between the two halves only the old paths are kept, as each link of the
 * parent spells them, and the IN_MOVED_FROM's watch as a pointer that is
 * compared, never followed (it may be gone by the IN_MOVED_TO).
 */

#include <errno.h>
#include <glib.h>
#include <limits.h>
#include <stdlib.h>

#include "event_bits.h"
#include "log.h"
#include "moves.h"
#include "path.h"

struct Moves {
        WatchTable *table;
        uint32_t cookie;      /* of the last IN_MOVED_FROM of a directory, 0: none */
        const Watch *from;    /* its watch: compared only */
        GPtrArray *old_paths; /* its old path as each link of its parent spells it */
};

int moves_new(WatchTable *table, Moves **ret) {
        Moves *mv = calloc(1, sizeof(Moves));

        if (!mv)
                return -ENOMEM;
        mv->table = table;
        *ret = mv;
        return 0;
}

Moves *moves_free(Moves *mv) {
        if (!mv)
                return NULL;
        if (mv->old_paths)
                g_ptr_array_unref(mv->old_paths);
        free(mv);
        return NULL;
}

/* The path of name in w's directory, as each link of w spells it (NULL where it would not fit). */
static GPtrArray *paths_of(Watch *w, const RawEvent *ev) {
        GPtrArray *paths = g_ptr_array_new_with_free_func(free);
        char buf[PATH_MAX];

        LIST_FOREACH(watch, l, w->links) {
                const char *dir = watch_link_get_path(l, buf);

                g_ptr_array_add(paths, dir ? path_join(dir, ev->name, ev->name_len) : NULL);
        }
        return paths;
}

void moves_on_event(Moves *mv, Watch *w, const RawEvent *ev, GArray *ret_left) {
        g_autoptr(GPtrArray) new_paths = NULL;
        bool same_dir;

        if (!(ev->mask & IN_ISDIR) || !ev->name || !ev->cookie || !(ev->mask & IN_MOVE))
                return;
        if (ev->mask & IN_MOVED_FROM) {
                g_clear_pointer(&mv->old_paths, g_ptr_array_unref);
                mv->old_paths = paths_of(w, ev);
                mv->cookie = ev->cookie;
                mv->from = w;
                /* PERSIST subscriptions follow their paths: what was at or
                 * below the old path has left theirs, wherever it went. */
                for (guint i = 0; ret_left && i < mv->old_paths->len; i++) {
                        const char *o = g_ptr_array_index(mv->old_paths, i);

                        if (o)
                                (void) watch_table_persist_at(mv->table, o, ret_left);
                }
                return;
        }
        if (!mv->old_paths || ev->cookie != mv->cookie)
                return;

        new_paths = paths_of(w, ev);
        same_dir = mv->from == w && new_paths->len == mv->old_paths->len;
        for (guint i = 0; i < mv->old_paths->len && new_paths->len > 0; i++) {
                const char *o = g_ptr_array_index(mv->old_paths, i);
                const char *n = g_ptr_array_index(new_paths, same_dir ? i : 0);

                if (!o || !n || watch_table_rename_paths(mv->table, o, n) < 0)
                        log_warning("Out of memory following a directory rename, ignoring.");
        }
        mv->cookie = 0;
        g_clear_pointer(&mv->old_paths, g_ptr_array_unref);
}
