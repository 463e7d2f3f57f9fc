/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tree_moves - directories that appear in a RECURSIVE tree and directories
 * renamed within it, and what waits for the kernel queue to be read empty
 * (split out of tree.c)
 *
 * IN_MOVED_FROM of a directory notes its link (or that it had none yet),
 * and the IN_MOVED_TO of the same cookie moves that link under its new
 * parent and name, with what is below it: nothing is walked again. A
 * directory created and moved before it was linked is scanned where it is
 * now; one that comes from outside the tree is walked without reporting; one
 * whose IN_MOVED_TO does not follow (moved out of the tree) is unlinked with
 * everything below it (tree_moves_end(), at any other record and when the
 * queue is read empty: tree.h).
 *
 * A directory that appears (tree_add()) is walked from its parent, opened
 * by its path (tree_add_at(), tree_open.c); if that path does not lead to
 * the parent yet (a rename still in the kernel queue), it is tried again
 * once a rename is read (tree_retries_try()) or the queue is read empty
 * (tree_retries_run()). What the queue read empty settles (the scanned
 * names, the moves past their grace, the retries) is here too: it calls
 * both.
 */

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "access.h"
#include "client.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "path.h"
#include "tree.h"
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

void tree_add(Tree *t, Subscription *s, const char *path, bool synthesize, uint64_t now_usec) {
        const char *name = path_basename(path, NULL);
        _cleanup_free_ char *dir = NULL;
        WatchLink *parent;

        dir = path_dirname(path);
        if (!dir) {
                log_info_errno(-ENOMEM, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id,
                               path);
                return tree_overflow(t, s);
        }
        parent = tree_find(s, dir);
        if (!parent)
                return; /* its parent left the tree meanwhile */
        tree_add_at(t, s, parent, name, synthesize, /* retry= */ 0, now_usec);
}

void tree_retries_run(Tree *t) {
        g_autoptr(GArray) retries = NULL;

        t->retries_until = 0;
        if (!t->retries || t->retries->len == 0)
                return;
        retries = TAKE_PTR(t->retries);
        for (guint k = 0; k < retries->len; k++) {
                TreeRetry *rt = &g_array_index(retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(t->table, rt->id);

                /* A parent that left the tree, or a subscription that ended, takes the directory along. */
                if (s && !rt->parent->dead)
                        tree_add_at(t, s, rt->parent, rt->name, rt->synthesize, rt->retry, rt->now);
                watch_link_release(rt->parent);
                free(rt->name);
        }
        /* Those whose parent's path still leads elsewhere wait again, at the
         * deadline tree_add_result() set (TREE_STALE_RETRIES). */
}

void tree_retries_try(Tree *t) {
        /* A rename was just read (its IN_MOVED_TO): the scans of new
         * directories that waited for their parent's path to lead to it again
         * (-ESTALE) go now if it does, right after the rename's record, not
         * after the later records the queue holds until it is read empty (a
         * client that heard of those, a marker of its own, would find the
         * new directory's files not reported yet). Those whose path still
         * leads elsewhere keep waiting for the read-empty retry. Opened on
         * the loop: whether the path leads there again is asked here, in
         * step with the rename just read (a parent on a file system that
         * does not answer holds the loop here still; RELIABILITY.md). With
         * workers, retries wait here only when no job could be had
         * (open_done() submits an -ESTALE open again at once), so a job for
         * this open would most likely not be had either. */
        if (!t->retries || t->retries->len == 0)
                return;
        for (guint k = 0; t->retries && k < t->retries->len;) {
                TreeRetry *rt = &g_array_index(t->retries, TreeRetry, k);
                Subscription *s = watch_table_get_subscription(t->table, rt->id);
                TreeRetry r = *rt;
                char pathbuf[PATH_MAX];
                const char *ppath;
                struct stat st;
                int pfd;

                if (!rt->synthesize || !s || rt->parent->dead) {
                        k++;
                        continue;
                }
                ppath = watch_link_get_path(rt->parent, pathbuf);
                if (!ppath) {
                        k++;
                        continue;
                }
                pfd = access_open_as(&s->owner->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
                if (pfd == -ENOENT || pfd == -ENOTDIR ||
                    (pfd >= 0 && (st.st_dev != rt->parent->watch->dev || st.st_ino != rt->parent->watch->ino))) {
                        safe_close(pfd);
                        k++;
                        continue;
                }
                g_array_remove_index(t->retries, k); /* the array may grow in what follows: r is a copy */
                tree_add_result(t, s, r.parent, r.name, r.synthesize, r.retry, r.now,
                                tree_add_opened(t, s, r.parent, r.name, r.synthesize, r.now, pfd, &st,
                                                /* off_loop= */ false, NULL));
                watch_link_release(r.parent);
                free(r.name);
        }
}

void tree_retries_free(Tree *t) {
        if (!t->retries)
                return;
        for (guint k = 0; k < t->retries->len; k++) {
                TreeRetry *rt = &g_array_index(t->retries, TreeRetry, k);

                watch_link_release(rt->parent);
                free(rt->name);
        }
        g_clear_pointer(&t->retries, g_array_unref);
}

bool tree_waits_read_empty(const Tree *t) {
        return (t->scanned && g_hash_table_size(t->scanned) > 0) || (t->moves && t->moves->len > 0) ||
                (t->retries && t->retries->len > 0);
}

void tree_queue_read_empty(Tree *t) {
        /* Everything queued before any scan so far has been read. */
        if (t->scanned)
                g_hash_table_remove_all(t->scanned);
        /* A rename's second half may not be queued yet: the kernel queues
         * IN_MOVED_FROM and IN_MOVED_TO one after the other, and a read can
         * come between them. Ended as if it left the tree, a directory
         * renamed within it would be walked again at its new name, without
         * reporting what was made in it meanwhile. So it waits, for its
         * IN_MOVED_TO, any other record, or the grace. */
        if (t->moves && t->moves->len > 0) {
                if (t->moves_until == 0)
                        t->moves_until = now_usec() + TREE_MOVE_GRACE_USEC;
                return;
        }
        /* Every rename is read: their new parents' paths are right now. */
        tree_retries_run(t);
}

static uint64_t moves_deadline(const Tree *t) {
        return t->moves && t->moves->len > 0 && t->moves_until > 0 ? t->moves_until : UINT64_MAX;
}

uint64_t tree_next_deadline(const Tree *t) {
        /* At the retries' deadline the loop reads the queue (manager_on_deadline()):
         * read empty, they are tried again. */
        return MIN(moves_deadline(t), t->retries_until > 0 ? t->retries_until : UINT64_MAX);
}

void tree_expire(Tree *t, uint64_t now_usec) {
        if (moves_deadline(t) > now_usec)
                return;
        log_debug("A directory moved out of its place had no IN_MOVED_TO within %u ms: it left the tree.",
                  TREE_MOVE_GRACE_USEC / 1000u);
        tree_moves_end(t);
        tree_retries_run(t);
}
