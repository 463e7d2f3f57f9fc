/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "access.h"
#include "client.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "tree_internal.h"

/*
 * tree_open - the opens of a tree's directories by path in workers (split
 * out of tree_jobs.c)
 *
 * The opens by path (tree_add_at()'s parent, tree_rescan()'s root) in a job: as
 * the owner, in a lane of the owner's uid (FSWORK_USER_LANE: the path may
 * cross a symbolic link or a mount point into any file system, and one that
 * does not answer then holds that user's lane, not the loop); the rest on
 * the loop, in the completion, if the subscription and the link are still
 * there (the link is held meanwhile). The open is O_PATH: it queues no
 * record, so nothing is announced to self_events.h.
 *
 * A directory just created (synthesize: its scan reports what it holds)
 * has its parent opened here too, but its scan's records must come before
 * the kernel's records read after it: from the submission on, the
 * subscription's owner is held (hold.h: its records wait in a side queue,
 * every other client's flow on), and the completion queues the scan's
 * records with the hold applied (holds_apply_begin()), before what waited;
 * then the hold goes and that follows. The scan's first slice runs in the
 * completion (its open and read of the new directory, on the loop); what
 * a long scan reports after it comes after later records, from walk jobs
 * (tree_walk_go_on_in_worker()). On a file system that may stop answering
 * (TreeOps.may_stop), the scan's open and reads are jobs from the start,
 * and the hold is the walk's until it ends (tree_jobs.c). A hold lasts HOLD_USEC at most (a file system that does not
 * answer): the records go on and the subscription gets Overflow, which
 * covers what the scan reports late. On a lane that is stalled already,
 * the owner is not held for nothing: the subscription gets Overflow at once.
 * A directory moved in from outside the tree, and a tree's root after an
 * overflow, are walked without reporting: no order to keep.
 */

static void open_free(TreeOpen *o) {
        hold_unref(o->hold); /* the owner's records that waited for the scan go on */
        safe_close(o->fd);
        free(o->name);
        free(o->path);
        free(o);
}

static void open_run(void *data) {
        TreeOpen *o = data;

        o->fd = access_open_at(AT_FDCWD, o->path, /* only_dir= */ true, /* no_follow= */ false, &o->st);
}

static void open_done(void *data, int error) {
        TreeOpen *o = data;
        Tree *t = o->tree;
        bool held = o->hold;
        Hold *previous = NULL;
        Subscription *s;
        int fd, r;

        if (error == -ESHUTDOWN || !t) {
                /* At exit: the link (and the hold) are the tree's to let go of, before its table. */
                o->fd = safe_close(o->fd);
                if (t)
                        o->discarded = true;
                else
                        open_free(o);
                return;
        }
        LIST_REMOVE(opens, t->opens, o);
        s = watch_table_get_subscription(t->table, o->id);
        fd = error < 0 ? error : TAKE_FD(o->fd);
        /* What the scan reports goes before the owner's records that waited for it. */
        if (o->hold)
                previous = holds_apply_begin(t->holds, o->hold);
        if (!s || o->link->dead)
                safe_close(fd); /* ended, or the link left the tree: nothing to follow */
        else if (!o->name) {
                if (s->links == o->link && !s->pending)
                        tree_rescan_opened(t, s, fd, &o->st);
                safe_close(fd);
        } else {
                r = tree_add_opened(t, s, o->link, o->name, o->synthesize, o->now, fd, &o->st,
                                    tree_may_stop(t, o->link), o->hold);
                if (r == -ESTALE && !o->retry) {
                        /* The records were read meanwhile: a rename that made it stale
                         * may be among them. Opened again, the owner still held. */
                        if (tree_open_submit(t, s, o->link, o->name, o->synthesize, /* retry= */ true, o->now,
                                             o->hold) >= 0)
                                o->hold = NULL; /* the retry's now */
                        else
                                tree_add_here(t, s, o->link, o->name, o->synthesize, /* retry= */ true, o->now);
                } else
                        tree_add_result(t, s, o->link, o->name, o->synthesize, o->retry, o->now, r);
        }
        if (held)
                holds_apply_end(t->holds, previous);
        watch_link_release(o->link);
        open_free(o);
}

/* link's path opened as s's owner in a job, then tree_add_opened() (name) or
 * tree_rescan_opened() (name NULL) on the loop. Return: 0, or -errno: no job (the
 * caller opens it itself). */
int tree_open_submit(Tree *t, Subscription *s, WatchLink *link, const char *name, bool synthesize, bool retry,
                     uint64_t now, Hold *hold) {
        _cleanup_(hold_unrefp) Hold *started = NULL;
        bool stalled = false;
        char pathbuf[PATH_MAX];
        const char *path;
        TreeOpen *o;
        int r;

        if (!t->fswork)
                return -EOPNOTSUPP;
        /* A scan reports what the new directory holds: its records must come
         * before those the kernel queues for its owner from now on. Without
         * holds, it is opened on the loop, as before. */
        if (name && synthesize && !hold) {
                if (!t->holds || !s->owner)
                        return -EOPNOTSUPP;
                stalled = fswork_stalled(t->fswork, FSWORK_USER_LANE(s->owner->caller.uid));
                if (!stalled) {
                        started = hold_new(t->holds, now_usec());
                        if (!started)
                                return -ENOMEM;
                        client_hold(s->owner, started);
                        hold_note_subscription(started, s->id);
                        hold = started;
                }
        }
        path = name ? watch_link_get_path(link, pathbuf) : s->path;
        if (!path)
                return -ENAMETOOLONG;
        o = calloc(1, sizeof(TreeOpen));
        if (!o)
                return -ENOMEM;
        *o = (TreeOpen) {
                .tree = t,
                .id = s->id,
                .link = link,
                .name = name ? strdup(name) : NULL,
                .path = strdup(path),
                .synthesize = synthesize,
                .retry = retry,
                .now = now,
                .uid = s->owner->caller.uid,
                .lane = FSWORK_USER_LANE(s->owner->caller.uid),
                .fd = -EBADF,
        };
        if ((name && !o->name) || !o->path) {
                open_free(o);
                return -ENOMEM;
        }
        r = fswork_submit(t->fswork, o->lane, &s->owner->caller, open_run, open_done, o);
        if (r < 0) {
                open_free(o);
                return r;
        }
        /* The hold is the open's now: the caller's, or the one started here. */
        o->hold = hold;
        TAKE_PTR(started);
        watch_link_hold(link);
        LIST_APPEND(opens, t->opens, o);
        if (stalled) {
                /* Its lane waits for a file system that does not answer: holding
                 * the owner would only delay its records by HOLD_USEC. They go on,
                 * and what the scan reports will come after some: it is told. */
                log_debug("Subscription %" PRIu32 " scans a new directory behind a stalled open; it gets Overflow.",
                          s->id);
                tree_overflow(t, s);
        }
        return 0;
}

/* At exit: the links let go of before the table; an open still in a worker
 * frees itself in its completion, one fswork_free() dropped is freed here. */
void tree_opens_free(Tree *t) {
        TreeOpen *o;

        while ((o = LIST_POP(opens, t->opens))) {
                watch_link_release(o->link);
                o->hold = hold_unref(o->hold); /* before the holds, its clients' records go on */
                if (o->discarded)
                        open_free(o);
                else
                        o->tree = NULL;
        }
}
