/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing_follow - the probes of pending paths and the look-ups of new
 * waiters, applied on the loop
 *
 * Work is done by probe() (missing_events.c): with the chain's
 * credentials, open the top and go down the chain to a node one openat() a
 * level, checking that each directory is still the node's inode (a node
 * that is not is cut off with everything below it, and its waiters climb);
 * then the descent (missing_job_run(), applied by job_apply()): from that
 * node, for each next component its waiters want, one openat(); if it is
 * there, the waiters that want it move down together (one new link, or the
 * existing one), and so on below; a last component that is there places the
 * waiter (ops->appeared, once the credentials are back). So one event costs
 * the depth of the node it is about plus the levels that appeared, once for
 * all the waiters that share them.
 *
 * Off the loop: with a worker pool (missing_set_fswork()), what an event,
 * an overflow or a dropped watch sets off runs as jobs (ProbeJob), each in
 * a worker as the chain's caller on that user's own lane
 * (FSWORK_USER_LANE: a walk down may cross a symlink or a mount point into
 * any file system), and its result is applied on the loop: a job walks down
 * from the top to a node (if asked) and opens the next components its
 * waiters want; the loop links what was there (its watch placed), moves the
 * waiters, and queues a job for each new node, so a directory is watched
 * before anything below it is looked up, as before. On a file system that
 * may stop answering the job places those watches itself (ProbeJob.table,
 * WatchPlaced in watch_table.h), the path's own too when it appears (for
 * its first waiter's root link, Waiter.placed), and the loop links with
 * them: it asks that file system nothing. A chain has one job at
 * a time (what else it is asked waits in its queue): its results apply in
 * the order they were looked up. A result that a change of the chain made
 * meanwhile on the loop (a directory cut off, a descent of missing_add())
 * may have made stale is dropped, and the node probed again. A file system
 * that does not answer so holds its lane and that chain, not the loop.
 * While a chain's jobs run, the records of the clients they concern (its
 * waiters' owners, and those that heard the event that set them off) wait
 * for them, HOLD_USEC at most (Chain.hold, hold.h): what a job finds goes
 * before those clients' later records, as inline, on a file system that
 * answers; every other client's records go on.
 * The look-up of a new waiter (missing_start(), for AddWatch), and of one
 * cut off at its chain's top (missing_restart_all()), runs so too: a
 * StartJob opens the prefixes of its path from "/" as its caller, in a
 * worker on its lane, until one may be read; on the loop, the waiter joins
 * (or makes) the chain of that top and its descent is queued as the
 * chain's. A waiter whose
 * AddWatch waits (w->answer) is answered through ops->found once it is at
 * rest: waiting where the next component is not there, placed, or failed.
 * missing_add() (without workers, or when none can be had:
 * missing_start()) still looks its path up on the loop, at once; a PERSIST
 * subscription whose object left is looked up in workers too
 * (missing_follow_again()).
 *
 * Split out of missing.c, which keeps the chains and waiters this file
 * moves; what the jobs open is missing_open.c's. Neither calls this file
 * (the jobs' completions, job_done() and start_done(), are here, so the
 * files below call nothing above them); missing_events.c sets the probes
 * off.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "error.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "missing.h"
#include "missing_internal.h"
#include "path.h"

/* Placements, climbs and retries one probe may chain before it gives up on
 * a waiter: a path whose directories are replaced faster than it can look. */
#define PROBE_ROUNDS 64u

static bool run(Missing *m, uint64_t deadline);
static void chain_kick(Missing *m, Chain *c);
static int waiter_add(Missing *m, Subscription *s, const Caller *caller, bool sync);
static int waiter_add_async(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds);

bool missing_run(Missing *m, uint64_t budget_usec) {
        struct timespec ts;
        bool more;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        more = run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
        (void) missing_finish(m, NULL);
        return more;
}

/*
 * On the loop: what j found, applied to its chain. The walk: a level that is
 * not the link's directory any more is cut off with everything below it (its
 * waiters climb; cut off at the top, they start again), and the descent goes
 * on from the level above it. Then each component: a last one that is there
 * makes its waiters ready (with the fd), one that is a directory is linked
 * (its watch placed before anything below it is looked up), the waiters that
 * want it moved down and charged, and a descent queued from it (inline: in
 * m->steps, else the chain's). Waiters that cannot go on get their error.
 * Both are collected in m->done.
 */
static void job_apply(Missing *m, ProbeJob *j, bool inline_) {
        Chain *c = j->chain;
        WatchLink *node = j->node;

        if (node->dead)
                return;
        if (j->reached < j->n_way) {
                g_autoptr(GPtrArray) way = g_ptr_array_new(), restart = g_ptr_array_new();
                WatchLink *bad, *at;

                for (WatchLink *l = node; l; l = watch_link_parent(l))
                        g_ptr_array_add(way, l);
                assert(way->len == j->n_way);
                bad = way->pdata[way->len - 1 - j->reached];
                at = j->reached > 0 ? way->pdata[way->len - j->reached] : NULL;
                if (at)
                        watch_link_hold(at);
                missing_cut(m, c, bad, restart);
                if (at)
                        missing_step_push(m, c, at, TAKE_FD(j->fd), inline_);
                missing_restart_all(m, restart);
                if (at) {
                        if (!at->dead)
                                missing_prune(m, at);
                        watch_link_release(at);
                }
                return;
        }
        if (inline_)
                c->gen++;

        for (size_t k = 0; k < j->n_comps && !node->dead; k++) {
                ProbeComp *pc = &j->comps[k];
                size_t cl = strlen(pc->name);
                WatchLink *child;
                Waiter *w, *n;
                int r;

                if (pc->last) {
                        /* The path itself: it is there, checked for the flags, or it is not. */
                        if (pc->fd == -ENOENT) {
                                missing_waiters_settle(m, node, pc);
                                continue;
                        }
                        for (w = missing_waiters_at(m, node); w; w = n) {
                                n = w->node_next;
                                if (!missing_comp_wanted_by(pc, w))
                                        continue;
                                if (pc->fd < 0) {
                                        missing_waiter_fail(m, w, pc->fd);
                                        continue;
                                }
                                w->fd = fcntl(pc->fd, F_DUPFD_CLOEXEC, 3);
                                if (w->fd < 0) {
                                        missing_waiter_fail(m, w, -errno);
                                        continue;
                                }
                                w->st = pc->st;
                                w->hint = pc->hint;
                                /* Its watch, if placed, for the first of them: the
                                 * others' root links find it in the table. */
                                w->placed = pc->placed;
                                pc->placed.valid = false;
                                w->ready = true;
                                g_ptr_array_add(m->done, w);
                        }
                        continue;
                }
                if (pc->fd == -ENOENT || pc->fd == -ENOTDIR) {
                        missing_waiters_settle(m, node, pc); /* not there (yet): its waiters wait here */
                        continue;
                }
                if (pc->fd < 0) {
                        /* EACCES: a directory it may not read cannot be watched; it starts
                         * again below it (waiter_start), as the path is looked up afresh. */
                        missing_waiters_fail(m, node, pc, pc->fd);
                        continue;
                }
                child = watch_link_child(node, pc->name, cl);
                if (child && (child->watch->dev != pc->st.st_dev || child->watch->ino != pc->st.st_ino)) {
                        /* Replaced, and the event not read yet: the new one is what the path leads to. */
                        g_autoptr(GPtrArray) none = g_ptr_array_new();

                        missing_cut(m, c, child, none);
                        child = NULL;
                }
                if (!child) {
                        watch_table_set_placed(m->table, &pc->placed);
                        r = watch_table_link(m->table, c->s, node, pc->fd, &pc->st, pc->name, cl, &child);
                        watch_table_set_placed(m->table, NULL);
                        if (r == -WATCHD_E_PLACED_GONE) {
                                /* The loop removed the watch the job found: node is probed again. */
                                missing_step_push(m, c, node, -EBADF, inline_);
                                continue;
                        }
                        if (r < 0) {
                                missing_waiters_fail(m, node, pc, r);
                                continue;
                        }
                }
                /* Every waiter here that wants this component goes down. */
                for (w = missing_waiters_at(m, node); w; w = n) {
                        n = w->node_next;
                        if (!missing_comp_wanted_by(pc, w))
                                continue;
                        r = account_charge(w->s->account, 1);
                        if (r < 0) {
                                missing_waiter_fail(m, w, r);
                                continue;
                        }
                        w->charged++;
                        missing_waiter_unplace(m, w);
                        w->rest += cl + 1;
                        missing_waiter_place(m, w, child);
                }
                if (missing_waiters_at(m, child))
                        missing_step_push(m, c, child, TAKE_FD(pc->fd), inline_);
                else
                        missing_prune(m, child); /* made for waiters that all failed their charge */
        }
        if (node->dead || inline_)
                return;
        /* Waiters that came to node after the job was made: looked at again. */
        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
                bool covered = w->ready || w->error < 0;

                for (size_t k = 0; k < j->n_comps && !covered; k++)
                        covered = missing_comp_wanted_by(&j->comps[k], w);
                if (!covered) {
                        missing_step_push(m, c, node, j->fd >= 0 ? TAKE_FD(j->fd) : -EBADF, false);
                        break;
                }
        }
}

/* j made, run and applied here, with the chain's credentials taken for the run. */
void missing_job_inline(Missing *m, ProbeJob *j, bool inline_) {
        AccessSaved saved;
        int r;

        r = access_become(&j->chain->caller, &saved);
        if (r < 0) {
                log_warning_errno(r, "Failed to take a caller's credentials, not following its paths: %m");
                return;
        }
        missing_job_run(j);
        access_restore(&saved);
        job_apply(m, j, inline_);
}

/*
 * Goes on with the descents inline until deadline (µs, CLOCK_MONOTONIC),
 * deepest first, each under its chain's credentials. Return: whether any is
 * left.
 */
static bool run(Missing *m, uint64_t deadline) {
        Step *st;

        while ((st = m->steps)) {
                struct timespec ts;

                (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u >= deadline)
                        break;
                LIST_REMOVE(steps, m->steps, st);
                if (!st->node->dead && missing_waiters_at(m, st->node)) {
                        bool walk = st->fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */
                        ProbeJob *j = missing_job_new(m, st->chain, st->node, walk, TAKE_FD(st->fd));

                        if (j) {
                                missing_job_inline(m, j, true);
                                missing_job_release(m, j);
                                missing_job_free(j);
                        } else
                                log_warning("Out of memory following a pending path, ignoring.");
                }
                missing_step_free(m, st);
        }
        return m->steps != NULL;
}

/* The watches j placed that no link took are let go of (WatchPlaced);
 * return: whether it counted as placing (watch_table_placing(), to be
 * ended by the caller once what it found is placed). */
static bool job_placed_done(Missing *m, ProbeJob *j) {
        if (!j->table)
                return false;
        for (size_t k = 0; k < j->n_comps; k++)
                watch_table_placed_done(m->table, &j->comps[k].placed);
        j->table = NULL;
        return true;
}

/* A job of c's is over, in a worker: its result applied, unless the chain
 * changed meanwhile (then its node is probed again), and c's next one. */
static void job_done(void *data, int error) {
        ProbeJob *j = data;
        Chain *c = j->chain;
        Hold *previous;
        bool placing;
        Missing *m;

        if (!c) {
                missing_job_free(j); /* the follower is gone, and its table */
                return;
        }
        m = c->missing;
        if (error == -ESHUTDOWN) {
                /* The pool is freed (the follower is not, or chain would be NULL): nothing more is asked of it. */
                c->job = NULL;
                c->hold = hold_unref(c->hold);
                m->n_jobs--;
                if (job_placed_done(m, j))
                        watch_table_placing(m->table, false);
                missing_job_release(m, j);
                missing_job_free(j);
                return;
        }
        assert(c->job == j);
        c->job = NULL;
        m->n_jobs--;
        c->n_waiters++;
        /* What it finds goes before the records that wait for it, and so does
         * what the next job finds (set off by this one: the same moment). */
        previous = m->holds ? holds_apply_begin(m->holds, c->hold) : NULL;
        if (error < 0)
                log_warning_errno(error, "Failed to take a caller's credentials, not following its paths: %m");
        else if (j->gen != c->gen) {
                /* Cut or descended inline meanwhile: what it found may be stale. */
                if (!j->node->dead && missing_waiters_at(m, j->node))
                        missing_step_push(m, c, j->node, -EBADF, false);
        } else
                job_apply(m, j, false);
        placing = job_placed_done(m, j);
        missing_job_release(m, j);
        missing_job_free(j);
        (void) missing_finish(m, NULL); /* the paths it found placed, with their watches */
        if (placing)
                watch_table_placing(m->table, false);
        chain_kick(m, c);
        if (m->holds)
                holds_apply_end(m->holds, previous);
        /* Nothing more of c's in a worker: the records that waited for it go on. */
        if (!c->job)
                c->hold = hold_unref(c->hold);
        c->n_waiters--;
        missing_chain_put(m, c);
}

/*
 * c's next probe, if none is in a worker: a descent waiting (deepest first),
 * else a node to probe from the top. In a worker on the caller's lane;
 * where no worker can take it, inline.
 */
static void chain_kick(Missing *m, Chain *c) {
        c->n_waiters++;
        while (!c->job) {
                WatchLink *node;
                ProbeJob *j;
                int fd = -EBADF;
                dev_t lane;
                int r;

                if (c->steps) {
                        Step *st = c->steps;

                        LIST_REMOVE(steps, c->steps, st);
                        node = st->node;
                        watch_link_hold(node);
                        fd = TAKE_FD(st->fd);
                        missing_step_free(m, st);
                } else if (c->todo->len > 0) {
                        node = g_ptr_array_steal_index(c->todo, 0);
                        c->n_waiters--; /* its hold, ours now */
                } else
                        break;
                j = NULL;
                if (!node->dead && missing_waiters_at(m, node)) {
                        bool walk = fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */

                        j = missing_job_new(m, c, node, walk, TAKE_FD(fd));
                        if (!j)
                                log_warning("Out of memory following a pending path, ignoring.");
                }
                safe_close(fd);
                if (!node->dead)
                        missing_prune(m, node);
                watch_link_release(node);
                if (!j)
                        continue;
                /* The caller's own lane: the walk down may cross a symlink or a
                 * mount point into a file system that does not answer (a FUSE
                 * mount of the caller's), which must hold no one else's probes. */
                lane = FSWORK_USER_LANE(c->caller.uid);
                if (m->fswork && watch_table_can_place(m->table)) {
                        j->table = m->table;
                        watch_table_placing(m->table, true);
                }
                r = m->fswork ? fswork_submit(m->fswork, lane, &c->caller, missing_job_run, job_done, j) : -EAGAIN;
                if (r >= 0) {
                        c->job = j;
                        m->n_jobs++;
                        continue;
                }
                if (job_placed_done(m, j))
                        watch_table_placing(m->table, false);
                /* No worker: here, as before there were any. */
                missing_job_inline(m, j, false);
                missing_job_release(m, j);
                missing_job_free(j);
                (void) missing_finish(m, NULL);
        }
        if (c->job)
                missing_chain_hold(m, c);
        c->n_waiters--;
        missing_chain_put(m, c);
}

/* node to be probed from the top (after an event about it), once c can. */
void missing_chain_request(Missing *m, Chain *c, WatchLink *node) {
        if (!g_ptr_array_find(c->todo, node, NULL)) {
                watch_link_hold(node);
                c->n_waiters++;
                g_ptr_array_add(c->todo, node);
        }
        chain_kick(m, c);
}


/* run() for budget_usec; what is left waits for missing_run(). */
void missing_run_slice(Missing *m, uint64_t budget_usec) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
}


/* s (no longer followed) looked up afresh: in a worker, or here if none can
 * take it. A failure is told. */
static void waiter_restart(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds) {
        int r = m->fswork ? waiter_add_async(m, s, caller, answer, rounds) : -EAGAIN;

        if (r == -EAGAIN) {
                /* With answer, its own outcome is returned here, and told. */
                uint32_t id = s->id; /* an appearance may end it (ONESHOT) */

                r = waiter_add(m, s, caller, answer);
                if (answer) {
                        m->ops.found(id, r, m->userdata);
                        return;
                }
        }
        if (r < 0)
                missing_tell(m, s, s->id, r, answer);
}

/* Waiters that were cut off at their chain's top: each looked up afresh. */
void missing_restart_all(Missing *m, GPtrArray *restart) {
        for (guint k = 0; k < restart->len; k++) {
                Waiter *w = restart->pdata[k];
                Subscription *s = w->s;
                const Caller *caller = w->caller;
                bool answer = w->answer;

                missing_waiter_destroy(m, w);
                waiter_restart(m, s, caller, answer, 0);
        }
}

/*
 * w joins the chain of its top (the first end bytes of its path, open at fd,
 * taken), made if need be: placed at the top, charged, and its descent from
 * there queued (inline_: in m->steps, for run(); else the chain's, kicked).
 * Return: 0, -ESTALE (the chain's top was replaced: its waiters start again,
 * and so must w), or -errno (w is in no chain then).
 */
static int waiter_join(Missing *m, Waiter *w, size_t end, int fd_in, const struct stat *st, bool inline_) {
        _cleanup_close_ int fd = fd_in;
        _cleanup_free_ char *top = strndup(w->s->path, end);
        Subscription *s = w->s;
        Chain *c;
        int r;

        if (!top)
                return -ENOMEM;
        r = missing_chain_get(m, w->caller, top, &c);
        if (r < 0)
                return r;
        if (!c->s->links) {
                WatchLink *l;

                r = watch_table_link_pending(m->table, c->s, fd, st, top, &l);
                if (r < 0) {
                        missing_chain_put(m, c);
                        return r;
                }
        } else if (c->s->links->watch->dev != st->st_dev || c->s->links->watch->ino != st->st_ino) {
                /* The top itself was replaced: every waiter of the chain starts again. */
                g_autoptr(GPtrArray) restart = g_ptr_array_new();

                c->n_waiters++;
                missing_cut(m, c, c->s->links, restart);
                missing_restart_all(m, restart);
                c->n_waiters--;
                missing_chain_put(m, c);
                return -ESTALE;
        }
        r = account_charge(s->account, 1);
        if (r < 0) {
                missing_prune(m, c->s->links);
                missing_chain_put(m, c);
                return r;
        }
        w->chain = c;
        c->n_waiters++;
        w->charged = 1;
        w->rest = path_prefix_len(top) + 1;
        missing_waiter_place(m, w, c->s->links);
        missing_step_push(m, c, c->s->links, TAKE_FD(fd), inline_);
        if (!inline_)
                chain_kick(m, c); /* may place or end w: not touched after */
        return 0;
}

/*
 * Looks w's path up from the top, as its caller, here: the first directory
 * of it that may be read is its chain's top (normally "/"), and w descends
 * from there. Runs with the daemon's credentials (it switches for itself).
 * Return: 0, -ESTALE (the chain's top was replaced: try again), or -errno
 * (w is in no chain then).
 */
static int waiter_start(Missing *m, Waiter *w) {
        AccessSaved saved;
        struct stat st;
        size_t end = 0;
        int fd, r;

        r = access_become(w->caller, &saved);
        if (r < 0)
                return r;
        fd = missing_top_open(w->s->path, &end, &st);
        access_restore(&saved);
        if (fd < 0)
                return fd;
        return waiter_join(m, w, end, fd, &st, /* inline_= */ true);
}

/* On the loop: the waiter (if still followed) joins the chain of the top
 * found, or starts again (its top replaced meanwhile), or is told it fails. */
static void start_done(void *data, int error) {
        StartJob *j = data;
        Missing *m = j->missing;
        Waiter *w = j->w;
        Hold *hold, *previous = NULL, *trigger = NULL;
        Subscription *s;
        const Caller *caller;
        bool answer;
        unsigned rounds;
        int r;

        if (m)
                LIST_REMOVE(starts, m->starts, j);
        if (w)
                w->start = NULL;
        if (!m || !w || error == -ESHUTDOWN) {
                /* No longer followed (its fd closed unused), or at exit: nothing more is asked. */
                missing_start_free(j);
                return;
        }
        /* What it finds goes before the records that waited for it; a job of
         * the chain it joins holds them on (its hold is this one, or takes
         * its clients: the trigger's, as for a record's probe). */
        hold = TAKE_PTR(j->hold);
        if (hold) {
                previous = holds_apply_begin(m->holds, hold);
                trigger = holds_get_trigger(m->holds);
                holds_set_trigger(m->holds, hold);
        }
        r = error < 0 ? error : j->fd;
        if (r >= 0)
                r = waiter_join(m, w, j->end, TAKE_FD(j->fd), &j->st, /* inline_= */ false);
        missing_start_free(j);
        if (r >= 0)
                (void) missing_finish(m, NULL); /* what an inline descent (no worker) found */
        else {
                s = w->s;
                caller = w->caller;
                answer = w->answer;
                rounds = w->rounds + 1;
                missing_waiter_destroy(m, w);
                if (r == -ESTALE && rounds < PROBE_ROUNDS)
                        waiter_restart(m, s, caller, answer, rounds);
                else
                        missing_tell(m, s, s->id, r == -ESTALE ? -ELOOP : r, answer);
        }
        if (hold) {
                holds_set_trigger(m->holds, trigger);
                holds_apply_end(m->holds, previous);
                hold_unref(hold);
        }
}

/* A waiter for s whose top is looked up in a worker. Return: 0, -EAGAIN (no
 * worker could take it: nothing made), -errno. */
static int waiter_add_async(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds) {
        StartJob *j;
        Waiter *w;
        int r;

        assert(s->pending && !s->links);
        w = calloc(1, sizeof(Waiter));
        j = calloc(1, sizeof(StartJob));
        if (!w || !j) {
                free(w);
                free(j);
                return -ENOMEM;
        }
        *j = (StartJob) {
                .missing = m,
                .w = w,
                .path = strdup(s->path),
                .fd = -EBADF,
        };
        if (!j->path) {
                free(w);
                missing_start_free(j);
                return -ENOMEM;
        }
        /* The caller's own lane: a prefix may cross a symlink or a mount point
         * into a file system that does not answer (a FUSE mount of the
         * caller's), which must hold no one else's work. */
        r = fswork_submit(m->fswork, FSWORK_USER_LANE(caller->uid), caller, missing_start_run, start_done, j);
        if (r < 0) {
                free(w);
                missing_start_free(j);
                return r;
        }
        /* Followed again (no AddWatch waits): a PERSIST path whose object
         * left, where an atomic save's new file may be already. What the
         * look-up finds goes before the owner's records read after it, as
         * it did inline; not on a lane that does not answer already. */
        if (!answer && m->holds && s->owner && !fswork_stalled(m->fswork, FSWORK_USER_LANE(caller->uid))) {
                Hold *trigger = holds_get_trigger(m->holds);

                j->hold = trigger ? hold_ref(trigger) : hold_new(m->holds, now_usec());
                if (j->hold) {
                        client_hold(s->owner, j->hold);
                        hold_note_subscription(j->hold, s->id);
                }
        }
        w->s = s;
        w->caller = caller;
        w->fd = -EBADF;
        w->start = j;
        w->answer = answer;
        w->rounds = rounds;
        g_hash_table_insert(m->waiters, s, w);
        LIST_PREPEND(starts, m->starts, j);
        return 0;
}

/* What the probes left in m->done (job_apply()): placed, or ended. w_sync's result is
 * returned rather than told (waiter_add's own waiter, for its caller). */
int missing_finish(Missing *m, Waiter *w_sync) {
        g_autoptr(GPtrArray) done = NULL, subs = NULL;
        int ret = 0;

        if (m->done->len == 0)
                return 0;
        done = g_ptr_array_new();
        subs = g_ptr_array_new();
        for (guint k = 0; k < m->done->len; k++) {
                Waiter *w = m->done->pdata[k];

                if (!g_ptr_array_find(done, w, NULL)) {
                        g_ptr_array_add(done, w);
                        g_ptr_array_add(subs, w->s);
                }
        }
        g_ptr_array_set_size(m->done, 0);

        for (guint k = 0; k < done->len; k++) {
                Subscription *s = subs->pdata[k];
                Waiter *w = g_hash_table_lookup(m->waiters, s);
                bool sync = w && w == w_sync;
                _cleanup_close_ int fd = -1;
                const Caller *caller;
                RemoteHint hint = {};
                WatchPlaced placed = {};
                struct stat st;
                bool answer;
                uint32_t id;
                int r;

                /* An earlier one's callback may have ended it, or started it again. */
                if (w != done->pdata[k])
                        continue;
                if (!w->ready && w->error >= 0) {
                        /* At rest, waiting (missing_waiters_settle()): its AddWatch is answered. */
                        if (w->answer) {
                                w->answer = false;
                                m->ops.found(s->id, 0, m->userdata);
                        }
                        continue;
                }
                caller = w->caller;
                answer = w->answer;
                id = s->id; /* its appearance may end it (ONESHOT) */
                r = w->error;
                if (w->ready) {
                        /* What the probe opened, as its caller, from the directory above it. */
                        fd = TAKE_FD(w->fd);
                        st = w->st;
                        hint = w->hint;
                        placed = w->placed;
                        w->placed.valid = false;
                        r = fd;
                }
                missing_waiter_destroy(m, w);
                if (r == -EACCES && !sync && !answer) {
                        /* A directory of the path it may not read: looked up afresh (the chain starts below it). */
                        waiter_restart(m, s, caller, false, 0);
                        continue;
                }
                /* Whose AddWatch waits is answered with EACCES, as at once. */
                if (r >= 0) {
                        watch_table_set_placed(m->table, &placed);
                        r = m->ops.appeared(s, fd, &st, &hint, m->userdata);
                        watch_table_set_placed(m->table, NULL);
                }
                watch_table_placed_done(m->table, &placed);
                if (r == -WATCHD_E_PLACED_GONE && !sync) {
                        /* The watch its job found went meanwhile (with another
                         * subscription): not linked, it is pending again. */
                        watch_table_unplace(m->table, s);
                        waiter_restart(m, s, caller, answer, 0);
                        continue;
                }
                if (r >= 0 && placed.lost) {
                        /* What happened in it before its watch was set again may be lost. */
                        Subscription *placed_s = watch_table_get_subscription(m->table, id);

                        if (placed_s)
                                client_queue_lost(placed_s);
                }
                if (sync)
                        ret = r;
                else
                        missing_tell(m, s, id, r, answer);
        }
        return ret;
}

/* Follows s; with sync, its own placement or failure is returned rather than told. */
static int waiter_add(Missing *m, Subscription *s, const Caller *caller, bool sync) {
        Waiter *w;
        int r = -ELOOP;

        assert(s->pending && !s->links);
        for (unsigned round = 0; round < PROBE_ROUNDS; round++) {
                w = calloc(1, sizeof(Waiter));
                if (!w)
                        return -ENOMEM;
                w->s = s;
                w->caller = caller;
                w->fd = -EBADF;
                g_hash_table_insert(m->waiters, s, w);
                r = waiter_start(m, w);
                if (r >= 0) {
                        /* Followed down at once, to the end: AddWatch answers with
                         * its chain in place (or its error), as a client may count
                         * on. It costs one open a level of the path, at most. */
                        (void) run(m, UINT64_MAX);
                        return missing_finish(m, sync ? w : NULL);
                }
                missing_waiter_destroy(m, w);
                if (r != -ESTALE)
                        return r;
        }
        return -ELOOP;
}

int missing_add(Missing *m, Subscription *s, const Caller *caller) {
        return waiter_add(m, s, caller, true);
}

int missing_start(Missing *m, Subscription *s, const Caller *caller) {
        int r;

        if (!m->fswork || !m->ops.found)
                return missing_add(m, s, caller);
        r = waiter_add_async(m, s, caller, /* answer= */ true, 0);
        if (r == -EAGAIN)
                return missing_add(m, s, caller); /* no worker: here, as before there were any */
        return r < 0 ? r : 1;
}

void missing_follow_again(Missing *m, Subscription *s, const Caller *caller) {
        waiter_restart(m, s, caller, /* answer= */ false, 0);
}
