/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree_moves - directories renamed within a RECURSIVE tree (split out of
 * tree.c)
 *
 * IN_MOVED_FROM of a directory notes its link (or that it had none yet),
 * and the IN_MOVED_TO of the same cookie moves that link under its new
 * parent and name, with what is below it: nothing is walked again. A
 * directory created and moved before it was linked is scanned where it is
 * now; one that comes from outside the tree is walked without reporting; one
 * whose IN_MOVED_TO does not follow (moved out of the tree) is unlinked with
 * everything below it (tree_moves_end(), at any other record and when the
 * queue is read empty: tree.h).
 */

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "path.h"
#include "tree_internal.h"

typedef struct TreeMove {
        uint32_t id; /* the subscription */
        uint32_t cookie;
        WatchLink *link; /* the moved directory's link (held), or NULL: it was not linked yet */
} TreeMove;

void tree_moved_from(Tree *t, Subscription *s, const char *path, uint32_t cookie) {
        WatchLink *l = tree_find(s, path);

        if (l && watch_link_is_root(l))
                return; /* the root itself: its subscription follows by its path */
        if (!t->moves)
                t->moves = g_array_new(FALSE, FALSE, sizeof(TreeMove));
        if (t->moves->len == 0)
                t->moves_until = 0; /* its grace starts at the next read that finds the queue empty */
        if (l)
                watch_link_hold(l);
        g_array_append_val(t->moves, ((TreeMove) { s->id, cookie, l }));
}

bool tree_moves_pending(Tree *t, uint32_t cookie) {
        return t->moves && t->moves->len > 0 && g_array_index(t->moves, TreeMove, 0).cookie == cookie;
}

static void frames_relink(GArray *frames, WatchLink *old, WatchLink *new) {
        for (guint i = 0; i < frames->len; i++) {
                Frame *f = &g_array_index(frames, Frame, i);

                if (f->link == old)
                        f->link = new;
        }
}

/* A walk in a moved link goes on in it: its frames follow a reallocation
 * (a job's too: the worker does not look at links), and so do the other
 * holders of links: the opens by path in workers and the retries. */
static void walks_relink(Tree *t, WatchLink *old, WatchLink *new) {
        LIST_FOREACH(opens, o, t->opens)
                if (o->link == old)
                        o->link = new;
        for (guint k = 0; t->retries && k < t->retries->len; k++)
                if (g_array_index(t->retries, TreeRetry, k).parent == old)
                        g_array_index(t->retries, TreeRetry, k).parent = new;
        LIST_FOREACH(walks, w, t->walks)
                frames_relink(w->frames, old, new);
        LIST_FOREACH(walks, w, t->working) {
                frames_relink(w->frames, old, new);
                for (unsigned i = 0; i < WALK_JOBS; i++)
                        if (w->jobs[i])
                                frames_relink(tree_job_frames(w->jobs[i]), old, new);
        }
}

void tree_moved_to(Tree *t, Subscription *s, const char *path, uint32_t cookie, uint64_t now_usec) {
        const char *name = path_basename(path, NULL);
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent, *l, *n;
        guint k;

        for (k = 0; t->moves && k < t->moves->len; k++) {
                TreeMove *mv = &g_array_index(t->moves, TreeMove, k);

                if (mv->id == s->id && mv->cookie == cookie)
                        break;
        }
        if (!t->moves || k == t->moves->len)
                return tree_add(t, s, path, /* synthesize= */ false, now_usec); /* from elsewhere */

        l = g_array_index(t->moves, TreeMove, k).link;
        g_array_remove_index_fast(t->moves, k);
        if (!l)
                /* Created and moved before it was linked: nothing in it was reported. */
                return tree_add(t, s, path, /* synthesize= */ true, now_usec);

        dir = path_dirname(path);
        parent = dir ? tree_find(s, dir) : NULL;
        if (l->dead || !parent) {
                if (!l->dead)
                        (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
                return tree_add(t, s, path, /* synthesize= */ false, now_usec);
        }
        n = watch_table_move_link(t->table, l, parent, name, strlen(name));
        if (!n) {
                (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
                return tree_add(t, s, path, /* synthesize= */ false, now_usec);
        }
        if (n != l)
                walks_relink(t, l, n);
        watch_link_release(n);
}

void tree_moves_end(Tree *t) {
        t->moves_until = 0;
        if (!t->moves || t->moves->len == 0)
                return;
        for (guint k = 0; k < t->moves->len; k++) {
                WatchLink *l = g_array_index(t->moves, TreeMove, k).link;

                if (!l)
                        continue;
                /* Moved out of the tree: unlinked with everything below it. */
                if (!l->dead)
                        (void) watch_table_unlink(t->table, l);
                watch_link_release(l);
        }
        g_array_set_size(t->moves, 0);
}
