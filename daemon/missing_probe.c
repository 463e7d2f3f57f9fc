/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing_probe - the probes of pending paths' components
 *
 * Work is done by probe(): with the chain's credentials, open the top and
 * go down the chain to a node one openat() a level, checking that each
 * directory is still the node's inode (a node that is not is cut off with
 * everything below it, and its waiters climb); then descend(): from that
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
 * before anything below it is looked up, as before. A chain has one job at
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
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_bits.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "missing_internal.h"

void missing_probe_job_free(ProbeJob *j) {
        if (!j)
                return;
        for (size_t k = 0; k < j->n_way; k++)
                free(j->way[k]);
        free(j->way);
        free(j->devs);
        free(j->inos);
        for (size_t k = 0; k < j->n_comps; k++) {
                free(j->comps[k].name);
                safe_close(j->comps[k].fd);
        }
        free(j->comps);
        safe_close(j->fd);
        free(j);
}

static bool comp_same(const ProbeComp *pc, const char *name, size_t len, bool last, bool only_dir, bool no_follow) {
        return pc->last == last && pc->only_dir == only_dir && pc->no_follow == no_follow &&
                strncmp(pc->name, name, len) == 0 && pc->name[len] == '\0';
}

/* Whether pc is what w wants next (w still waiting). */
static bool comp_wanted_by(const ProbeComp *pc, const Waiter *w) {
        const char *comp = w->s->path + w->rest;
        size_t cl = missing_component_len(comp);
        bool last = comp[cl] == '\0';

        if (w->ready || w->error < 0)
                return false;
        return last ?
                comp_same(pc, comp, cl, true, w->s->flags & WATCHD_FLAG_ONLYDIR, w->s->flags & WATCHD_FLAG_DONT_FOLLOW) :
                comp_same(pc, comp, cl, false, true, false);
}

/*
 * A probe of node: what its waiters want next, each once; with walk, the way
 * down to it from the top too (then fd is -EBADF), else fd (taken) is open on
 * node. NULL: out of memory.
 */
ProbeJob *missing_probe_job_new(Missing *m, Chain *c, WatchLink *node, bool walk, int fd) {
        _cleanup_close_ int dfd = fd;
        ProbeJob *j;
        size_t n = 0, cap = 0;

        j = calloc(1, sizeof(ProbeJob));
        if (!j)
                return NULL;
        j->fd = -EBADF;
        if (walk) {
                size_t depth = 0;

                for (WatchLink *l = node; l; l = l->parent)
                        depth++;
                j->way = calloc(depth, sizeof(char *));
                j->devs = calloc(depth, sizeof(dev_t));
                j->inos = calloc(depth, sizeof(ino_t));
                if (!j->way || !j->devs || !j->inos)
                        goto oom;
                j->n_way = depth;
                for (WatchLink *l = node; l; l = l->parent) {
                        depth--;
                        j->way[depth] = strdup(l->name);
                        if (!j->way[depth])
                                goto oom;
                        j->devs[depth] = l->watch->dev;
                        j->inos[depth] = l->watch->ino;
                }
        } else
                j->fd = TAKE_FD(dfd);

        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
                const char *comp = w->s->path + w->rest;
                size_t cl = missing_component_len(comp);
                bool last = comp[cl] == '\0';
                bool only_dir = !last || (w->s->flags & WATCHD_FLAG_ONLYDIR);
                bool no_follow = last && (w->s->flags & WATCHD_FLAG_DONT_FOLLOW);
                bool seen = false;

                if (w->ready || w->error < 0)
                        continue;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = comp_same(&j->comps[k], comp, cl, last, only_dir, no_follow);
                if (seen)
                        continue;
                if (n == cap) {
                        ProbeComp *more = reallocarray(j->comps, cap ? 2 * cap : 4, sizeof(ProbeComp));

                        if (!more)
                                goto oom;
                        j->comps = more;
                        cap = cap ? 2 * cap : 4;
                }
                j->comps[n] = (ProbeComp) {
                        .name = strndup(comp, cl),
                        .last = last,
                        .only_dir = only_dir,
                        .no_follow = no_follow,
                        .fd = -EBADF,
                };
                j->n_comps = ++n;
                if (!j->comps[n - 1].name)
                        goto oom;
        }
        c->n_waiters++;
        j->chain = c;
        watch_link_hold(node);
        j->node = node;
        j->gen = c->gen;
        return j;
oom:
        missing_probe_job_free(j);
        return NULL;
}

/*
 * The file system's part, as the chain's caller (in a worker, or inline with
 * the credentials taken): the walk from the top, each level checked, then one
 * openat() for each component wanted. Touches nothing but j.
 */
void missing_probe_job_run(void *data) {
        ProbeJob *j = data;
        struct stat st;

        for (size_t k = 0; k < j->n_way; k++) {
                int nfd = access_open_at(k == 0 ? AT_FDCWD : j->fd, j->way[k], /* only_dir= */ true,
                                         /* no_follow= */ false, &st);

                if (nfd < 0 || st.st_dev != j->devs[k] || st.st_ino != j->inos[k]) {
                        safe_close(nfd);
                        return; /* the components are not looked at */
                }
                safe_close(j->fd);
                j->fd = nfd;
                j->reached = k + 1;
        }
        for (size_t k = 0; k < j->n_comps; k++) {
                ProbeComp *pc = &j->comps[k];

                pc->fd = access_open_at(j->fd, pc->name, pc->only_dir, pc->no_follow, &pc->st);
        }
}

static void waiter_fail(Missing *m, Waiter *w, int error) {
        w->error = error;
        g_ptr_array_add(m->done, w);
}

/* The waiters of node that want pc wait there (it is not there yet), at rest:
 * those whose AddWatch waits are answered (missing_finish()). pc NULL: every one. */
static void waiters_settle(Missing *m, WatchLink *node, const ProbeComp *pc) {
        LIST_FOREACH(node, w, missing_waiters_at(m, node))
                if (w->answer && !w->ready && w->error >= 0 && (!pc || comp_wanted_by(pc, w)))
                        g_ptr_array_add(m->done, w);
}

/* Every waiter of node that wants pc cannot go on: error. */
static void waiters_fail(Missing *m, WatchLink *node, const ProbeComp *pc, int error) {
        Waiter *w, *n;

        for (w = missing_waiters_at(m, node); w; w = n) {
                n = w->node_next;
                if (comp_wanted_by(pc, w))
                        waiter_fail(m, w, error);
        }
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

                for (WatchLink *l = node; l; l = l->parent)
                        g_ptr_array_add(way, l);
                assert(way->len == j->n_way);
                bad = way->pdata[way->len - 1 - j->reached];
                at = j->reached > 0 ? way->pdata[way->len - j->reached] : NULL;
                if (at)
                        watch_link_hold(at);
                missing_cut(m, c, bad, restart);
                if (at)
                        missing_probe_step_push(m, c, at, TAKE_FD(j->fd), inline_);
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
                                waiters_settle(m, node, pc);
                                continue;
                        }
                        for (w = missing_waiters_at(m, node); w; w = n) {
                                n = w->node_next;
                                if (!comp_wanted_by(pc, w))
                                        continue;
                                if (pc->fd < 0) {
                                        waiter_fail(m, w, pc->fd);
                                        continue;
                                }
                                w->fd = fcntl(pc->fd, F_DUPFD_CLOEXEC, 3);
                                if (w->fd < 0) {
                                        waiter_fail(m, w, -errno);
                                        continue;
                                }
                                w->st = pc->st;
                                w->ready = true;
                                g_ptr_array_add(m->done, w);
                        }
                        continue;
                }
                if (pc->fd == -ENOENT || pc->fd == -ENOTDIR) {
                        waiters_settle(m, node, pc); /* not there (yet): its waiters wait here */
                        continue;
                }
                if (pc->fd < 0) {
                        /* EACCES: a directory it may not read cannot be watched; it starts
                         * again below it (missing_waiter_start), as the path is looked up afresh. */
                        waiters_fail(m, node, pc, pc->fd);
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
                        r = watch_table_link(m->table, c->s, node, pc->fd, &pc->st, pc->name, cl, &child);
                        if (r < 0) {
                                waiters_fail(m, node, pc, r);
                                continue;
                        }
                }
                /* Every waiter here that wants this component goes down. */
                for (w = missing_waiters_at(m, node); w; w = n) {
                        n = w->node_next;
                        if (!comp_wanted_by(pc, w))
                                continue;
                        r = account_charge(w->s->account, 1);
                        if (r < 0) {
                                waiter_fail(m, w, r);
                                continue;
                        }
                        w->charged++;
                        missing_waiter_unplace(m, w);
                        w->rest += cl + 1;
                        missing_waiter_place(m, w, child);
                }
                if (missing_waiters_at(m, child))
                        missing_probe_step_push(m, c, child, TAKE_FD(pc->fd), inline_);
                else
                        missing_prune(m, child); /* made for waiters that all failed their charge */
        }
        if (node->dead || inline_)
                return;
        /* Waiters that came to node after the job was made: looked at again. */
        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
                bool covered = w->ready || w->error < 0;

                for (size_t k = 0; k < j->n_comps && !covered; k++)
                        covered = comp_wanted_by(&j->comps[k], w);
                if (!covered) {
                        missing_probe_step_push(m, c, node, j->fd >= 0 ? TAKE_FD(j->fd) : -EBADF, false);
                        break;
                }
        }
}

/* j made, run and applied here, with the chain's credentials taken for the run. */
void missing_probe_job_inline(Missing *m, ProbeJob *j, bool inline_) {
        AccessSaved saved;
        int r;

        r = access_become(&j->chain->caller, &saved);
        if (r < 0) {
                log_warning_errno(r, "Failed to take a caller's credentials, not following its paths: %m");
                return;
        }
        missing_probe_job_run(j);
        access_restore(&saved);
        job_apply(m, j, inline_);
}

/* The job is over: the chain's and node's holds given back. */
void missing_probe_job_release(Missing *m, ProbeJob *j) {
        Chain *c = j->chain;
        WatchLink *node = j->node;

        j->chain = NULL;
        j->node = NULL;
        if (node) {
                if (!node->dead)
                        missing_prune(m, node);
                watch_link_release(node);
        }
        if (c) {
                c->n_waiters--;
                missing_chain_put(m, c);
        }
}

void missing_probe_step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_) {
        Step *st = malloc(sizeof(Step));

        if (!st) {
                /* The waiters stay where they are, until the next event there. */
                log_warning("Out of memory following a pending path, ignoring.");
                safe_close(fd);
                waiters_settle(m, node, NULL);
                return;
        }
        *st = (Step) {
                .chain = c,
                .node = node,
                .fd = fd,
        };
        c->n_waiters++;
        watch_link_hold(node);
        if (inline_)
                LIST_PREPEND(steps, m->steps, st);
        else
                LIST_PREPEND(steps, c->steps, st);
}

void missing_probe_step_free(Missing *m, Step *st) {
        Chain *c = st->chain;
        WatchLink *node = st->node;

        safe_close(st->fd);
        free(st);
        if (!node->dead)
                missing_prune(m, node);
        watch_link_release(node);
        c->n_waiters--;
        missing_chain_put(m, c);
}

/*
 * Goes on with the descents inline until deadline (µs, CLOCK_MONOTONIC),
 * deepest first, each under its chain's credentials. Return: whether any is
 * left.
 */
bool missing_probe_run(Missing *m, uint64_t deadline) {
        Step *st;

        while ((st = m->steps)) {
                struct timespec ts;

                (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u >= deadline)
                        break;
                LIST_REMOVE(steps, m->steps, st);
                if (!st->node->dead && missing_waiters_at(m, st->node)) {
                        bool walk = st->fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */
                        ProbeJob *j = missing_probe_job_new(m, st->chain, st->node, walk, TAKE_FD(st->fd));

                        if (j) {
                                missing_probe_job_inline(m, j, true);
                                missing_probe_job_release(m, j);
                                missing_probe_job_free(j);
                        } else
                                log_warning("Out of memory following a pending path, ignoring.");
                }
                missing_probe_step_free(m, st);
        }
        return m->steps != NULL;
}

/* A job of c's is over, in a worker: its result applied, unless the chain
 * changed meanwhile (then its node is probed again), and c's next one. */
void missing_probe_job_done(void *data, int error) {
        ProbeJob *j = data;
        Chain *c = j->chain;
        Hold *previous;
        Missing *m;

        if (!c) {
                missing_probe_job_free(j); /* the follower is gone */
                return;
        }
        m = c->missing;
        if (error == -ESHUTDOWN) {
                /* The pool is freed (the follower is not, or chain would be NULL): nothing more is asked of it. */
                c->job = NULL;
                c->hold = hold_unref(c->hold);
                m->n_jobs--;
                missing_probe_job_release(m, j);
                missing_probe_job_free(j);
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
                        missing_probe_step_push(m, c, j->node, -EBADF, false);
        } else
                job_apply(m, j, false);
        missing_probe_job_release(m, j);
        missing_probe_job_free(j);
        (void) missing_finish(m, NULL);
        missing_chain_kick(m, c);
        if (m->holds)
                holds_apply_end(m->holds, previous);
        /* Nothing more of c's in a worker: the records that waited for it go on. */
        if (!c->job)
                c->hold = hold_unref(c->hold);
        c->n_waiters--;
        missing_chain_put(m, c);
}
