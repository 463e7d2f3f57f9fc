/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree_life - a tree made and freed: the top of the tree files
 * (tree_internal.h), above every other, so that each of them calls down only
 *
 * tree_new() gives the layers below what they must call up through: a
 * job's completion (tree_jobs.c) walks a tree again with tree_rescan()
 * (tree_open.c), which opens its root in a job and starts its walk there.
 * tree_free() lets go of what each layer holds (moves, retries, opens,
 * walks in workers and on the loop) before the watch table goes.
 */

#include <errno.h>
#include <glib.h>
#include <stdlib.h>

#include "list.h"
#include "tree.h"
#include "tree_internal.h"

static void tree_walks_free(Tree *t);

int tree_new(WatchTable *table, Backend *backend, SelfEvents *self, const TreeOps *ops, void *userdata, Tree **ret) {
        Tree *t = calloc(1, sizeof(Tree));

        if (!t)
                return -ENOMEM;
        *t = (Tree) {
                .table = table,
                .backend = backend,
                .self = self,
                .ops = *ops,
                .userdata = userdata,
                .rescan = tree_rescan,
                .dents_buf = malloc(TREE_DENTS_BUF),
        };
        if (!t->dents_buf) {
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

Tree *tree_free(Tree *t) {
        if (!t)
                return NULL;
        /* Walks, moves and retries hold links: they go before the table. */
        tree_moves_end(t);
        tree_retries_free(t);
        tree_opens_free(t);
        tree_walks_free(t);
        if (t->moves)
                g_array_unref(t->moves);
        if (t->scanned)
                g_hash_table_destroy(t->scanned);
        tree_unread_clear(&t->unread);
        free(t->dents_buf);
        free(t);
        return NULL;
}

void tree_set_fswork(Tree *t, FsWork *fswork) {
        t->fswork = fswork;
}

void tree_set_holds(Tree *t, Holds *holds) {
        t->holds = holds;
}

static void tree_walks_free(Tree *t) {
        TreeWalk *w;

        tree_jobs_free(t);
        while ((w = LIST_POP(walks, t->walks))) {
                w->error = -ECANCELED;
                while (w->frames->len > 0)
                        tree_frame_pop(w);
                if (w->done)
                        w->done(w->id, -ECANCELED, w->userdata);
                tree_walk_free(w);
        }
}
