/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "access.h"
#include "client.h"
#include "event_bits.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "tree.h"
#include "tree_internal.h"

/*
 * tree_open - where a tree's walks start, and the opens of its directories
 * by path in workers (split out of tree_jobs.c and tree.c)
 *
 * A walk starts below a root open at an fd (tree_walk_below(): AddWatch;
 * tree_appeared(): a pending path placed; tree_rescan(): the tree again
 * after an overflow, its root opened by its path) or at a name below a
 * parent opened by its path (tree_add_at(), tree_add_opened(): a directory
 * that appeared). Its first slice runs here, on the loop, or it is handed
 * to workers (tree_jobs.c); what is left goes on from the loop (tree.c).
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

/* Runs w's first slice, or hands w to workers (tree_walk_start_in_worker());
 * what a reporting walk leaves after its first slice goes on in workers
 * (tree_walk_go_on_in_worker()), or from the loop (manager's list). */
static int walk_start(TreeWalk *w, TreeWalk **ret) {
        Tree *t = w->tree;
        Subscription *s = watch_table_get_subscription(t->table, w->id);

        if (s && tree_walk_start_in_worker(w, s) > 0) {
                if (ret)
                        *ret = w;
                return 0;
        }

        /* Here its first slice reports in step with the records (under the
         * hold applied by the caller, if any): the hold is not needed after. */
        w->hold = hold_unref(w->hold);
        if (tree_walk_run(w, now_usec() + FIRST_SLICE_USEC)) {
                if (ret)
                        *ret = NULL;
                return tree_walk_end(w);
        }
        if (ret)
                *ret = w;
        if (s && tree_walk_go_on_in_worker(w, s) > 0)
                return 0;
        LIST_APPEND(walks, t->walks, w);
        return 0;
}

/* A reporting walk w of s reads in workers (off_loop): hold, the hold
 * applied now (not a reference), holds its owner's records from now on,
 * as tree_add_opened()'s walk holds them (tree_jobs.c), so that what it
 * reports goes before them. Without one (the probe that found the path outlasted its hold, or
 * its lane was stalled: its owner's records went on), s is told: what the
 * scan reports comes after some of them. Without workers or holds, w stays
 * on the loop for its first slice. */
static void hold_off_loop(Tree *t, Subscription *s, Hold *hold, TreeWalk *w) {
        if (!t->fswork || !t->holds || !s->owner)
                return;
        if (hold && !hold_over(hold)) {
                w->hold = hold_ref(hold);
                w->hold_until = now_usec() + WALK_HOLD_USEC;
                client_hold(s->owner, hold);
                hold_note_subscription(hold, s->id); /* past its time, s gets Overflow */
        } else {
                log_debug("Subscription %" PRIu32 " scans '%s' after records that came later; it gets Overflow.", s->id,
                          s->path);
                tree_overflow(t, s);
        }
        w->off_loop = true;
}

static int walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, bool synthesize, bool one_level,
                      bool rescan, uint64_t now_usec, bool off_loop, Hold *hold, TreeWalk **ret) {
        TreeWalk *w;
        AccessSaved saved;
        int dfd, r;

        w = tree_walk_new(t, s, synthesize, now_usec);
        if (!w)
                return -ENOMEM;
        w->initial = all_or_nothing;
        w->one_level = one_level;
        w->rescan = rescan;
        if (synthesize && off_loop)
                hold_off_loop(t, s, hold, w);
        if (tree_walk_below_in_worker(w, s, fd) > 0) {
                if (ret)
                        *ret = w;
                return 0;
        }

        /* The root is read through an fd of our own: fd may be O_PATH, or the
         * client's (whose offset is not ours to move). */
        r = access_become(&s->owner->caller, &saved);
        if (r >= 0) {
                self_events_before(t->self);
                dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                if (dfd < 0)
                        r = negative_errno();
                else {
                        SelfDir d;

                        self_events_root(t->self, &d, dfd, s->links->watch->dev, s->links->watch->ino, s->path);
                        self_events_did(t->self, IN_OPEN, &d);
                        r = tree_frame_push(w, s, s->links, dfd, &d, strlen(s->path), NULL);
                }
                access_restore(&saved);
        }
        if (r < 0) {
                tree_walk_free(w);
                if (ret)
                        *ret = NULL;
                return r;
        }
        return walk_start(w, ret);
}

int tree_walk_below(Tree *t, Subscription *s, int fd, bool all_or_nothing, TreeWalk **ret) {
        return walk_below(t, s, fd, all_or_nothing, /* synthesize= */ false, /* one_level= */ false,
                          /* rescan= */ false, 0, /* off_loop= */ false, NULL, ret);
}

/* After an overflow, s's root open at fd (as its owner, by its path): walked again. */
static void tree_rescan_opened(Tree *t, Subscription *s, int fd, const struct stat *st) {
        int r;

        if (fd < 0 || st->st_dev != s->links->watch->dev || st->st_ino != s->links->watch->ino)
                return; /* its root moved or went: its own events (still queued) say so */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, /* synthesize= */ false, /* one_level= */ false,
                       /* rescan= */ true, 0, /* off_loop= */ false, NULL, NULL);
        if (r < 0)
                log_info_errno(r, "Subscription %" PRIu32 " cannot walk its tree again after an overflow: %m.", s->id);
}

void tree_appeared(Tree *t, Subscription *s, int fd, bool report, uint64_t now_usec) {
        bool recursive = s->flags & WATCHD_FLAG_RECURSIVE;
        int r;

        if (!recursive && !report)
                return;
        /* The subscription is placed, and stays: what cannot be walked or
         * reported (a limit, the directory unreadable) is said with
         * Overflow, as for a directory moved into a tree. */
        /* On a file system that may stop answering, the scan is read in jobs,
         * and what it reports goes before the owner's records that wait for
         * the probe that found the path (the hold applied now); elsewhere its
         * first slice runs here. */
        r = walk_below(t, s, fd, /* all_or_nothing= */ false, report, !recursive, /* rescan= */ false, now_usec,
                       tree_may_stop(t, s->links), t->holds ? holds_get_applying(t->holds) : NULL, NULL);
        if (r < 0) {
                log_info_errno(r, "Subscription %" PRIu32 " cannot read '%s' (%m); it gets Overflow.", s->id, s->path);
                tree_overflow(t, s);
        }
}

#define TREE_RETRIES_MAX 4096u

/*
 * Walks name below parent (a link of s), parent open at pfd (an O_PATH fd
 * from its path, as the owner: taken) or pfd the open's -errno. Return: 0,
 * or -ESTALE if parent's path does not lead to parent's directory now (a
 * rename not yet read), or another error (the caller gives Overflow).
 */
int tree_add_opened(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, uint64_t now_usec,
                    int pfd, const struct stat *st, bool off_loop, Hold *hold) {
        _cleanup_close_ int fd = pfd;
        char pathbuf[PATH_MAX];
        const char *ppath;
        TreeWalk *w;
        char *names;
        Frame frame;

        /* If its path leads elsewhere, a rename of it (or above) is still in the kernel queue. */
        if (fd == -ENOENT || fd == -ENOTDIR ||
            (fd >= 0 && (st->st_dev != parent->watch->dev || st->st_ino != parent->watch->ino)))
                return -ESTALE;
        if (fd < 0)
                return fd;
        ppath = watch_link_get_path(parent, pathbuf);
        if (!ppath)
                return -ENAMETOOLONG;

        /* A frame on the parent holding just this name: the walk's first step opens it. */
        w = tree_walk_new(t, s, synthesize, now_usec);
        names = strdup(name);
        if (!w || !names) {
                free(names);
                if (w)
                        tree_walk_free(w);
                return -ENOMEM;
        }
        watch_link_hold(parent);
        frame = (Frame) {
                .link = parent,
                .fd = TAKE_FD(fd),
                .quiet = true,                                   /* O_PATH: its close is no event */
                .dir = { .dev = st->st_dev, .ino = st->st_ino }, /* the parent of what the walk opens */
                .names = names,                                  /* the frame owns it now */
                .len = strlen(names) + 1,
                .path_len = strlen(ppath),
                .read = true,
        };
        g_array_append_val(w->frames, frame);
        if (synthesize && off_loop) {
                /* Opened and read in jobs, the owner's records held (hold), or
                 * told (tree_open_submit() gave Overflow: its lane stalled). */
                w->off_loop = true;
                w->hold = hold_ref(hold);
                w->hold_until = now_usec + WALK_HOLD_USEC; /* from the record that found it */
        }
        (void) walk_start(w, NULL); /* a limit gives Overflow (walk_end) */
        return 0;
}

/* What tree_add_opened() returned for name below parent: -ESTALE is tried again
 * once the kernel queue is read empty (up to TREE_STALE_RETRIES times; retry:
 * how many times it was tried before), another error gives Overflow. */
void tree_add_result(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, unsigned retry,
                     uint64_t now, int r) {
        if (r == -ESTALE && retry < TREE_STALE_RETRIES && (!t->retries || t->retries->len < TREE_RETRIES_MAX)) {
                TreeRetry rt = { s->id, parent, strdup(name), synthesize, retry + 1, now };

                if (rt.name) {
                        if (!t->retries)
                                t->retries = g_array_new(FALSE, FALSE, sizeof(TreeRetry));
                        watch_link_hold(parent);
                        g_array_append_val(t->retries, rt);
                        /* A rename's records may be queued only after the queue was
                         * read empty, and may be the last records to come; and from a
                         * job's completion (open_done()) the queue may have been read
                         * empty already. So the queue is read again at a deadline,
                         * not at the next record: the last try, and its Overflow,
                         * come even if no record does. */
                        if (t->retries_until == 0)
                                t->retries_until = now_usec() + TREE_STALE_RETRY_USEC;
                        return;
                }
        }
        if (r >= 0)
                return;
        log_info_errno(r, "Subscription %" PRIu32 " cannot follow '%s' (%m); it gets Overflow.", s->id, name);
        tree_overflow(t, s);
}

/* tree_add_at() where no job can be had: parent opened on the loop. */
static void tree_add_here(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize,
                          unsigned retry, uint64_t now_usec) {
        char pathbuf[PATH_MAX];
        const char *ppath;
        struct stat st;
        int pfd;

        ppath = watch_link_get_path(parent, pathbuf);
        if (!ppath)
                return tree_add_result(t, s, parent, name, synthesize, retry, now_usec, -ENAMETOOLONG);
        pfd = access_open_as(&s->owner->caller, ppath, /* only_dir= */ true, /* no_follow= */ false, &st);
        tree_add_result(t, s, parent, name, synthesize, retry, now_usec,
                        tree_add_opened(t, s, parent, name, synthesize, now_usec, pfd, &st, /* off_loop= */ false, NULL));
}

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
                if (r == -ESTALE && o->retry == 0) {
                        /* The records were read meanwhile: a rename that made it stale
                         * may be among them. Opened again, the owner still held. */
                        if (tree_open_submit(t, s, o->link, o->name, o->synthesize, /* retry= */ 1, o->now, o->hold) >= 0)
                                o->hold = NULL; /* the retry's now */
                        else
                                tree_add_here(t, s, o->link, o->name, o->synthesize, /* retry= */ 1, o->now);
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
int tree_open_submit(Tree *t, Subscription *s, WatchLink *link, const char *name, bool synthesize, unsigned retry,
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

void tree_rescan(Tree *t, Subscription *s) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (!(s->flags & WATCHD_FLAG_RECURSIVE) || s->pending || !s->links || s->fanotify)
                return;
        if (tree_open_submit(t, s, s->links, NULL, /* synthesize= */ false, /* retry= */ 0, 0, NULL) >= 0)
                return;
        fd = access_open_as(&s->owner->caller, s->path, /* only_dir= */ true, /* no_follow= */ false, &st);
        tree_rescan_opened(t, s, fd, &st);
}

/* name appeared below parent (a link of s): parent opened by its path as
 * the owner, in a job (tree_open_submit(); for a directory just created,
 * synthesize, with its owner held: see tree_open.c), or
 * here where no job can be had. */
void tree_add_at(Tree *t, Subscription *s, WatchLink *parent, const char *name, bool synthesize, unsigned retry,
                 uint64_t now_usec) {
        if (tree_open_submit(t, s, parent, name, synthesize, retry, now_usec, NULL) >= 0)
                return;
        tree_add_here(t, s, parent, name, synthesize, retry, now_usec);
}
