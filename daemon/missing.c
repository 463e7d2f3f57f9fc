/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing - following paths that do not exist yet
 *
 * A Waiter is a pending subscription in a Chain: the link (node) of the
 * deepest directory of its path that the chain holds, and where in its path
 * the part below that directory starts. Nodes are the chain's WatchLinks:
 * the top link holds the top's absolute path, every other link the name of
 * its directory in its parent's, as in a RECURSIVE tree.
 *
 * Invariant: every leaf of a chain has waiters (a node no one waits in or
 * below is unlinked: prune()), so a chain holds exactly the directories its
 * waiters' paths go through.
 *
 * Work is done by probe(): with the chain's credentials, open the top and
 * go down the chain to a node one openat() a level, checking that each
 * directory is still the node's inode (a node that is not is cut off with
 * everything below it, and its waiters climb); then the descent (job_run(),
 * applied by job_apply()): from that node, for each next component its
 * waiters want, one openat(); if it is
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
 * The look-up of a new waiter (missing_start(), for AddWatch), and of one
 * cut off at its chain's top (restart_all()), runs so too: a StartJob opens
 * the prefixes of its path from "/" as its caller, in a worker on its lane,
 * until one may be read; on the loop, the waiter joins (or makes) the chain
 * of that top and its descent is queued as the chain's. A waiter whose
 * AddWatch waits (w->answer) is answered through ops->found once it is at
 * rest: waiting where the next component is not there, placed, or failed.
 * missing_add() (without workers, or when none can be had:
 * missing_start()) still looks its path up on the loop, at once; a PERSIST
 * subscription whose object left is looked up in workers too
 * (missing_follow_again()).
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "event_bits.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "missing.h"
#include "path.h"

/* Placements, climbs and retries one probe may chain before it gives up on
 * a waiter: a path whose directories are replaced faster than it can look. */
#define PROBE_ROUNDS 64u
/* How long an event goes down a path before the rest of the way is left to
 * the loop (missing_run(), which the event path runs before its next record). */
#define EVENT_SLICE_USEC 1000u

typedef struct Chain Chain;
typedef struct Waiter Waiter;
typedef struct Step Step;
typedef struct ProbeJob ProbeJob;
typedef struct StartJob StartJob;

struct Chain {
        Missing *missing;
        char *key;       /* credentials and top, see chain_key() */
        Caller caller;   /* whose credentials every open is made with (owns gids) */
        Subscription *s; /* the chain in the watch table; s->links is the top */
        unsigned n_waiters;
        uint64_t gen;           /* changes made to its links on the loop (cut(), a descent inline) */
        ProbeJob *job;          /* in a worker (fswork) */
        LIST_HEAD(Step, steps); /* descents waiting for a job, deepest first */
        GPtrArray *todo;        /* nodes to probe from the top (held), in order */
        Hold *hold;             /* while it has jobs in workers: what waits for them (a reference) */
};

struct Waiter {
        Subscription *s;
        const Caller *caller; /* its owner's (which outlives s) */
        Chain *chain;
        WatchLink *node;  /* the deepest directory of s->path the chain holds */
        size_t rest;      /* s->path + rest: the part below node's directory */
        unsigned charged; /* watches charged to s's account: the nodes from the top to node */
        bool ready;       /* its path is there (fd): placed once the credentials are back */
        int fd;           /* ready: its path open (st), checked for its flags */
        struct stat st;
        int error;                 /* it cannot be followed: gone once the credentials are back */
        StartJob *start;           /* its top looked up in a worker: in no chain yet */
        bool answer;               /* ops->found is owed (missing_start()), once it is at rest */
        unsigned rounds;           /* its look-ups begun again (a top replaced meanwhile) */
        LIST_FIELDS(Waiter, node); /* the waiters of node */
};

/* The look-up of a waiter's top, as its caller in a worker: the prefixes of
 * its path from "/" opened until one may be read (top_open()'s loop). */
struct StartJob {
        Missing *missing; /* NULL once the follower is gone */
        Waiter *w;        /* NULL once it is no longer followed */
        char *path;       /* the waiter's (a copy) */
        size_t end;       /* the top found: path[0, end) */
        int fd;           /* the top open, or -errno: what the look-up ends with */
        struct stat st;
        Hold *hold; /* a PERSIST path followed again: its owner's records wait (hold.h), or NULL */
        LIST_FIELDS(StartJob, starts);
};

/* A directory a descent has reached and will go on from: its node (held)
 * and an fd open on it, made with the chain's credentials (or -EBADF: it is
 * walked to from the top first). */
struct Step {
        Chain *chain; /* held (n_waiters) */
        WatchLink *node;
        int fd;
        LIST_FIELDS(Step, steps);
};

/* A component a node's waiters want next, and what opening it gave. */
typedef struct ProbeComp {
        char *name;
        bool last; /* the waiter's whole path: opened with its flags */
        bool only_dir, no_follow;
        int fd; /* the result: open, or -errno */
        struct stat st;
} ProbeComp;

/* The file system's part of a probe, made as the chain's caller (in a worker,
 * or inline), and what it found, applied on the loop (job_apply()). */
struct ProbeJob {
        Chain *chain;    /* held (n_waiters); NULL once the follower is gone */
        WatchLink *node; /* held */
        uint64_t gen;    /* chain->gen when it was made */
        /* The walk (n_way > 0): from the top (way[0], absolute) down to node,
         * each level checked to be the link's directory (devs, inos). */
        char **way;
        dev_t *devs;
        ino_t *inos;
        size_t n_way, reached; /* the levels found as they were */
        int fd;                /* the directory descended from: given, or the walk's deepest */
        ProbeComp *comps;
        size_t n_comps;
};

static void step_free(Missing *m, Step *st);
static bool run(Missing *m, uint64_t deadline);
static int finish(Missing *m, Waiter *w_sync);
static void chain_kick(Missing *m, Chain *c);

struct Missing {
        WatchTable *table;
        MissingOps ops;
        void *userdata;
        GHashTable *chains;          /* key -> Chain (owned) */
        GHashTable *by_chain;        /* chain Subscription -> Chain */
        GHashTable *waiters;         /* pending Subscription -> Waiter (owned) */
        GHashTable *at;              /* WatchLink (a node) -> its first Waiter */
        GPtrArray *done;             /* Waiters to place or end after a probe */
        LIST_HEAD(Step, steps);      /* descents inline to go on with, deepest first */
        FsWork *fswork;              /* NULL: every probe inline, on the loop */
        unsigned n_jobs;             /* in workers */
        Holds *holds;                /* NULL: no records wait for probes */
        LIST_HEAD(StartJob, starts); /* in workers */
};

static void chain_free(Chain *c) {
        if (!c)
                return;
        assert(!c->job && !c->steps && (!c->todo || c->todo->len == 0));
        if (c->todo)
                g_ptr_array_unref(c->todo);
        hold_unref(c->hold);
        watch_table_chain_free(c->missing->table, c->s);
        free(c->caller.gids);
        free(c->key);
        free(c);
}

static void chain_destroy(gpointer p) {
        chain_free(p);
}

int missing_new(WatchTable *table, const MissingOps *ops, void *userdata, Missing **ret) {
        Missing *m;

        m = calloc(1, sizeof(Missing));
        if (!m)
                return -ENOMEM;
        m->table = table;
        m->ops = *ops;
        m->userdata = userdata;
        m->chains = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, chain_destroy);
        m->by_chain = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->waiters = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, free);
        m->at = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->done = g_ptr_array_new();
        *ret = m;
        return 0;
}

static void job_free(ProbeJob *j);

void missing_set_fswork(Missing *m, FsWork *w) {
        m->fswork = w;
}

void missing_set_holds(Missing *m, Holds *holds) {
        m->holds = holds;
}

bool missing_in_workers(const Missing *m) {
        return m->fswork != NULL;
}

Missing *missing_free(Missing *m) {
        g_autoptr(GPtrArray) chains = NULL;
        GHashTableIter i;
        gpointer v;

        if (!m)
                return NULL;
        while (m->steps) {
                Step *st = m->steps;

                LIST_REMOVE(steps, m->steps, st);
                step_free(m, st);
        }
        /* What the chains wait for: dropped; a job in a worker is left to its
         * completion, which frees it (if the pool still calls it). */
        chains = g_ptr_array_new();
        g_hash_table_iter_init(&i, m->chains);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                ((Chain *) v)->n_waiters++; /* not freed by what follows */
                g_ptr_array_add(chains, v);
        }
        for (guint k = 0; k < chains->len; k++) {
                Chain *c = chains->pdata[k];

                while (c->steps) {
                        Step *st = c->steps;

                        LIST_REMOVE(steps, c->steps, st);
                        step_free(m, st);
                }
                for (guint n = 0; n < c->todo->len; n++) {
                        watch_link_release(c->todo->pdata[n]);
                        c->n_waiters--;
                }
                g_ptr_array_set_size(c->todo, 0);
                if (c->job) {
                        watch_link_release(c->job->node);
                        c->job->node = NULL;
                        c->job->chain = NULL;
                        c->job = NULL;
                }
        }
        /* Look-ups still in a worker (past the pool's deadline at exit): left to it. */
        while (m->starts) {
                StartJob *j = m->starts;

                LIST_REMOVE(starts, m->starts, j);
                j->missing = NULL;
                j->w = NULL;
                j->hold = hold_unref(j->hold);
        }
        g_hash_table_destroy(m->waiters);
        g_hash_table_destroy(m->at);
        g_hash_table_destroy(m->by_chain);
        g_hash_table_destroy(m->chains); /* unlinks them */
        g_ptr_array_unref(m->done);
        free(m);
        return NULL;
}

bool missing_run(Missing *m, uint64_t budget_usec) {
        struct timespec ts;
        bool more;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        more = run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
        (void) finish(m, NULL);
        return more;
}

bool missing_has_work(const Missing *m) {
        return m->steps != NULL;
}

unsigned missing_n_waiting(const Missing *m) {
        return g_hash_table_size(m->waiters);
}

unsigned missing_n_links(const Missing *m) {
        GHashTableIter i;
        gpointer v;
        unsigned n = 0;

        g_hash_table_iter_init(&i, m->chains);
        while (g_hash_table_iter_next(&i, NULL, &v))
                n += ((Chain *) v)->s->n_links;
        return n;
}

/* "uid:gid:g1,g2,...\n" + top: waiters with the same credentials see the
 * same directories, and may share a chain. */
static char *chain_key(const Caller *caller, const char *top) {
        GString *k = g_string_new(NULL);

        g_string_append_printf(k, "%u:%u:", (unsigned) caller->uid, (unsigned) caller->gid);
        for (size_t i = 0; i < caller->n_gids; i++)
                g_string_append_printf(k, "%u,", (unsigned) caller->gids[i]);
        g_string_append_c(k, '\n');
        g_string_append(k, top);
        return g_string_free(k, FALSE);
}

/* The chain of caller from top, with no link yet if it is new. */
static int chain_get(Missing *m, const Caller *caller, const char *top, Chain **ret) {
        _cleanup_free_ char *key = chain_key(caller, top);
        Chain *c;
        int r;

        c = g_hash_table_lookup(m->chains, key);
        if (c) {
                *ret = c;
                return 0;
        }
        c = calloc(1, sizeof(Chain));
        if (!c)
                return -ENOMEM;
        c->missing = m;
        c->caller = *caller;
        c->caller.gids = calloc(caller->n_gids + 1, sizeof(gid_t));
        if (!c->caller.gids) {
                free(c);
                return -ENOMEM;
        }
        if (caller->n_gids > 0)
                memcpy(c->caller.gids, caller->gids, caller->n_gids * sizeof(gid_t));
        c->todo = g_ptr_array_new();
        r = watch_table_chain_new(m->table, top, &c->s);
        if (r < 0) {
                chain_free(c);
                return r;
        }
        c->key = TAKE_PTR(key);
        g_hash_table_insert(m->chains, c->key, c);
        g_hash_table_insert(m->by_chain, c->s, c);
        *ret = c;
        return 0;
}

static void chain_put(Missing *m, Chain *c) {
        if (c->n_waiters > 0)
                return;
        g_hash_table_remove(m->by_chain, c->s);
        g_hash_table_remove(m->chains, c->key); /* frees it */
}

static Waiter *waiters_at(Missing *m, WatchLink *node) {
        return g_hash_table_lookup(m->at, node);
}

static void node_set_waiters(Missing *m, WatchLink *node, Waiter *first) {
        if (first)
                g_hash_table_insert(m->at, node, first);
        else
                g_hash_table_remove(m->at, node);
}

static void waiter_unplace(Missing *m, Waiter *w) {
        Waiter *head;

        if (!w->node)
                return;
        head = waiters_at(m, w->node);
        LIST_REMOVE(node, head, w);
        node_set_waiters(m, w->node, head);
        w->node = NULL;
}

static void waiter_place(Missing *m, Waiter *w, WatchLink *node) {
        Waiter *head = waiters_at(m, node);

        LIST_PREPEND(node, head, w);
        node_set_waiters(m, node, head);
        w->node = node;
}

/* Unlinks node and the directories above it that no one waits in or below any more. */
static void prune(Missing *m, WatchLink *node) {
        while (node && !node->dead && !node->children && !waiters_at(m, node)) {
                WatchLink *parent = node->parent;

                (void) watch_table_unlink(m->table, node);
                node = parent;
        }
}

/* The length of the path component at p. */
static size_t component_len(const char *p) {
        return strcspn(p, "/");
}

/*
 * Moves the waiters of every node below top (top included) up into
 * top->parent, or, for the chain's top link, out of the chain (then they
 * start again: *restart), and unlinks top with everything below it.
 */
static void cut(Missing *m, Chain *c, WatchLink *top, GPtrArray *restart) {
        WatchLink *parent = top->parent;

        for (WatchLink *l = top; l;) {
                Waiter *w;

                while ((w = waiters_at(m, l))) {
                        unsigned up = 0;
                        size_t rest = w->rest;

                        waiter_unplace(m, w);
                        /* Climb from l to parent: each level gives back its name and its charge. */
                        for (WatchLink *k = l; k != parent; k = k->parent) {
                                up++;
                                rest -= k->parent ? strlen(k->name) + 1 : rest;
                        }
                        account_uncharge(w->s->account, up);
                        w->charged -= up;
                        w->rest = rest;
                        if (parent)
                                waiter_place(m, w, parent);
                        else
                                g_ptr_array_add(restart, w);
                }
                /* Pre-order, staying below top. */
                if (l->children)
                        l = l->children;
                else {
                        while (l != top && !l->sib_next)
                                l = l->parent;
                        l = l == top ? NULL : l->sib_next;
                }
        }
        (void) watch_table_unlink(m->table, top);
        c->gen++;
}

static void step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_);
static void restart_all(Missing *m, GPtrArray *restart);

static void job_free(ProbeJob *j) {
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
        size_t cl = component_len(comp);
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
static ProbeJob *job_new(Missing *m, Chain *c, WatchLink *node, bool walk, int fd) {
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

        LIST_FOREACH(node, w, waiters_at(m, node)) {
                const char *comp = w->s->path + w->rest;
                size_t cl = component_len(comp);
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
        job_free(j);
        return NULL;
}

/*
 * The file system's part, as the chain's caller (in a worker, or inline with
 * the credentials taken): the walk from the top, each level checked, then one
 * openat() for each component wanted. Touches nothing but j.
 */
static void job_run(void *data) {
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
 * those whose AddWatch waits are answered (finish()). pc NULL: every one. */
static void waiters_settle(Missing *m, WatchLink *node, const ProbeComp *pc) {
        LIST_FOREACH(node, w, waiters_at(m, node))
                if (w->answer && !w->ready && w->error >= 0 && (!pc || comp_wanted_by(pc, w)))
                        g_ptr_array_add(m->done, w);
}

/* Every waiter of node that wants pc cannot go on: error. */
static void waiters_fail(Missing *m, WatchLink *node, const ProbeComp *pc, int error) {
        Waiter *w, *n;

        for (w = waiters_at(m, node); w; w = n) {
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
                cut(m, c, bad, restart);
                if (at)
                        step_push(m, c, at, TAKE_FD(j->fd), inline_);
                restart_all(m, restart);
                if (at) {
                        if (!at->dead)
                                prune(m, at);
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
                        for (w = waiters_at(m, node); w; w = n) {
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
                         * again below it (waiter_start), as the path is looked up afresh. */
                        waiters_fail(m, node, pc, pc->fd);
                        continue;
                }
                child = watch_link_child(node, pc->name, cl);
                if (child && (child->watch->dev != pc->st.st_dev || child->watch->ino != pc->st.st_ino)) {
                        /* Replaced, and the event not read yet: the new one is what the path leads to. */
                        g_autoptr(GPtrArray) none = g_ptr_array_new();

                        cut(m, c, child, none);
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
                for (w = waiters_at(m, node); w; w = n) {
                        n = w->node_next;
                        if (!comp_wanted_by(pc, w))
                                continue;
                        r = account_charge(w->s->account, 1);
                        if (r < 0) {
                                waiter_fail(m, w, r);
                                continue;
                        }
                        w->charged++;
                        waiter_unplace(m, w);
                        w->rest += cl + 1;
                        waiter_place(m, w, child);
                }
                if (waiters_at(m, child))
                        step_push(m, c, child, TAKE_FD(pc->fd), inline_);
                else
                        prune(m, child); /* made for waiters that all failed their charge */
        }
        if (node->dead || inline_)
                return;
        /* Waiters that came to node after the job was made: looked at again. */
        LIST_FOREACH(node, w, waiters_at(m, node)) {
                bool covered = w->ready || w->error < 0;

                for (size_t k = 0; k < j->n_comps && !covered; k++)
                        covered = comp_wanted_by(&j->comps[k], w);
                if (!covered) {
                        step_push(m, c, node, j->fd >= 0 ? TAKE_FD(j->fd) : -EBADF, false);
                        break;
                }
        }
}

/* j made, run and applied here, with the chain's credentials taken for the run. */
static void job_inline(Missing *m, ProbeJob *j, bool inline_) {
        AccessSaved saved;
        int r;

        r = access_become(&j->chain->caller, &saved);
        if (r < 0) {
                log_warning_errno(r, "Failed to take a caller's credentials, not following its paths: %m");
                return;
        }
        job_run(j);
        access_restore(&saved);
        job_apply(m, j, inline_);
}

/* The job is over: the chain's and node's holds given back. */
static void job_release(Missing *m, ProbeJob *j) {
        Chain *c = j->chain;
        WatchLink *node = j->node;

        j->chain = NULL;
        j->node = NULL;
        if (node) {
                if (!node->dead)
                        prune(m, node);
                watch_link_release(node);
        }
        if (c) {
                c->n_waiters--;
                chain_put(m, c);
        }
}

static void step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_) {
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

static void step_free(Missing *m, Step *st) {
        Chain *c = st->chain;
        WatchLink *node = st->node;

        safe_close(st->fd);
        free(st);
        if (!node->dead)
                prune(m, node);
        watch_link_release(node);
        c->n_waiters--;
        chain_put(m, c);
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
                if (!st->node->dead && waiters_at(m, st->node)) {
                        bool walk = st->fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */
                        ProbeJob *j = job_new(m, st->chain, st->node, walk, TAKE_FD(st->fd));

                        if (j) {
                                job_inline(m, j, true);
                                job_release(m, j);
                                job_free(j);
                        } else
                                log_warning("Out of memory following a pending path, ignoring.");
                }
                step_free(m, st);
        }
        return m->steps != NULL;
}

/* A job of c's is over, in a worker: its result applied, unless the chain
 * changed meanwhile (then its node is probed again), and c's next one. */
static void job_done(void *data, int error) {
        ProbeJob *j = data;
        Chain *c = j->chain;
        Hold *previous;
        Missing *m;

        if (!c) {
                job_free(j); /* the follower is gone */
                return;
        }
        m = c->missing;
        if (error == -ESHUTDOWN) {
                /* The pool is freed (the follower is not, or chain would be NULL): nothing more is asked of it. */
                c->job = NULL;
                c->hold = hold_unref(c->hold);
                m->n_jobs--;
                job_release(m, j);
                job_free(j);
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
                if (!j->node->dead && waiters_at(m, j->node))
                        step_push(m, c, j->node, -EBADF, false);
        } else
                job_apply(m, j, false);
        job_release(m, j);
        job_free(j);
        (void) finish(m, NULL);
        chain_kick(m, c);
        if (m->holds)
                holds_apply_end(m->holds, previous);
        /* Nothing more of c's in a worker: the records that waited for it go on. */
        if (!c->job)
                c->hold = hold_unref(c->hold);
        c->n_waiters--;
        chain_put(m, c);
}

/* Whether p (components, no leading "/") starts with the components of
 * prefix (n bytes, no trailing "/"). */
static bool components_start_with(const char *p, const char *prefix, size_t n) {
        return strncmp(p, prefix, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

/*
 * Whether dir/name is on the way of a waiter of c: a directory of c's, or
 * below the deepest one of c's that it goes through (node), the start of a
 * path that a waiter of node wants next. A path string, as the waiters'
 * are: a client that names the directory by another path (a symlink, a
 * bind mount) is not matched.
 */
static bool chain_on_way(Missing *m, Chain *c, const char *dir, const char *name, size_t name_len) {
        WatchLink *node = c->s->links;
        const char *top, *p = dir;
        size_t tl, dl;

        if (!node || node->dead)
                return false;
        top = node->name;
        tl = strlen(top);
        while (tl > 1 && top[tl - 1] == '/')
                tl--;
        if (!(tl == 1 && top[0] == '/')) {
                if (strncmp(p, top, tl) != 0 || (p[tl] != '/' && p[tl] != '\0'))
                        return false;
                p += tl;
        }
        /* Down c's links, a component of dir at a time. */
        for (;;) {
                WatchLink *child;
                size_t cl;

                while (*p == '/')
                        p++;
                if (*p == '\0')
                        break;
                cl = component_len(p);
                child = watch_link_child(node, p, cl);
                if (!child || child->dead)
                        break;
                node = child;
                p += cl;
        }
        dl = strlen(p);
        while (dl > 0 && p[dl - 1] == '/')
                dl--;
        if (dl == 0) {
                /* dir is c's node: name is one of its children, or a waiter's next component. */
                if (watch_link_child(node, name, name_len))
                        return true;
                LIST_FOREACH(node, w, waiters_at(m, node))
                        if (components_start_with(w->s->path + w->rest, name, name_len))
                                return true;
                return false;
        }
        /* dir is below node, not linked yet: what node's waiters want next starts with it and name. */
        LIST_FOREACH(node, w, waiters_at(m, node)) {
                const char *rest = w->s->path + w->rest;

                if (strncmp(rest, p, dl) == 0 && rest[dl] == '/' && components_start_with(rest + dl + 1, name, name_len))
                        return true;
        }
        return false;
}

void missing_hold_hearer(Missing *m, Client *hearer, const char *dir, const char *name, size_t name_len) {
        GHashTableIter i;
        gpointer v;

        if (!m->holds || m->n_jobs == 0 || !hearer || !dir)
                return;
        g_hash_table_iter_init(&i, m->chains);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Chain *c = v;

                if (c->job && !hold_over(c->hold) && chain_on_way(m, c, dir, name, name_len))
                        client_hold(hearer, c->hold);
        }
}

/* c has a job in a worker: the records of the clients it concerns wait for
 * its jobs (hold.h): its waiters' owners, and those that heard the event that
 * set it off (holds_get_trigger()). Not on a lane that does not answer
 * already: there it would hold them for nothing. */
static void chain_hold(Missing *m, Chain *c) {
        GHashTableIter i;
        Hold *trigger;
        gpointer v;

        if (!m->holds)
                return;
        if (hold_over(c->hold) || fswork_stalled(m->fswork, FSWORK_USER_LANE(c->caller.uid))) {
                c->hold = hold_unref(c->hold);
                if (fswork_stalled(m->fswork, FSWORK_USER_LANE(c->caller.uid)))
                        return;
        }
        trigger = holds_get_trigger(m->holds);
        if (!c->hold)
                c->hold = trigger ? hold_ref(trigger) : hold_new(m->holds, now_usec());
        else if (trigger)
                hold_merge(c->hold, trigger);
        if (!c->hold)
                return;
        g_hash_table_iter_init(&i, m->waiters);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                const Waiter *w = v;

                /* One whose AddWatch is not answered yet has no record to
                 * order, and its id is not its client's yet: no Overflow. */
                if (w->chain != c || !w->s->owner || w->answer)
                        continue;
                client_hold(w->s->owner, c->hold);
                hold_note_subscription(c->hold, w->s->id);
        }
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
                        step_free(m, st);
                } else if (c->todo->len > 0) {
                        node = g_ptr_array_steal_index(c->todo, 0);
                        c->n_waiters--; /* its hold, ours now */
                } else
                        break;
                j = NULL;
                if (!node->dead && waiters_at(m, node)) {
                        bool walk = fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */

                        j = job_new(m, c, node, walk, TAKE_FD(fd));
                        if (!j)
                                log_warning("Out of memory following a pending path, ignoring.");
                }
                safe_close(fd);
                if (!node->dead)
                        prune(m, node);
                watch_link_release(node);
                if (!j)
                        continue;
                /* The caller's own lane: the walk down may cross a symlink or a
                 * mount point into a file system that does not answer (a FUSE
                 * mount of the caller's), which must hold no one else's probes. */
                lane = FSWORK_USER_LANE(c->caller.uid);
                r = m->fswork ? fswork_submit(m->fswork, lane, &c->caller, job_run, job_done, j) : -EAGAIN;
                if (r >= 0) {
                        c->job = j;
                        m->n_jobs++;
                        continue;
                }
                /* No worker: here, as before there were any. */
                job_inline(m, j, false);
                job_release(m, j);
                job_free(j);
                (void) finish(m, NULL);
        }
        if (c->job)
                chain_hold(m, c);
        c->n_waiters--;
        chain_put(m, c);
}

/* node to be probed from the top (after an event about it), once c can. */
static void chain_request(Missing *m, Chain *c, WatchLink *node) {
        if (!g_ptr_array_find(c->todo, node, NULL)) {
                watch_link_hold(node);
                c->n_waiters++;
                g_ptr_array_add(c->todo, node);
        }
        chain_kick(m, c);
}

static void waiter_free(Missing *m, Waiter *w) {
        Chain *c = w->chain;

        waiter_unplace(m, w);
        w->fd = safe_close(w->fd);
        if (w->charged > 0)
                account_uncharge(w->s->account, w->charged);
        w->charged = 0;
        w->chain = NULL;
        if (c) {
                c->n_waiters--;
                chain_put(m, c);
        }
}

/* w is no longer followed: out of every list, its charge returned, freed. */
static void waiter_destroy(Missing *m, Waiter *w) {
        WatchLink *node = w->node;

        if (node)
                watch_link_hold(node);
        if (w->start)
                w->start->w = NULL; /* its completion closes what it opened */
        g_hash_table_steal(m->waiters, w->s);
        while (g_ptr_array_remove(m->done, w))
                ;
        waiter_free(m, w);
        free(w);
        if (node) {
                prune(m, node);
                watch_link_release(node);
        }
}

static int waiter_add(Missing *m, Subscription *s, const Caller *caller, bool sync);

/* run() for budget_usec; what is left waits for missing_run(). */
static void run_slice(Missing *m, uint64_t budget_usec) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
}

/* What became of s told: to whoever waits for its look-up (answer), else an end. */
static void tell(Missing *m, Subscription *s, uint32_t id, int r, bool answer) {
        if (answer)
                m->ops.found(id, r, m->userdata);
        else if (r < 0)
                m->ops.gone(s, r, m->userdata);
}

static int waiter_add_async(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds);

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
                tell(m, s, s->id, r, answer);
}

/* Waiters that were cut off at their chain's top: each looked up afresh. */
static void restart_all(Missing *m, GPtrArray *restart) {
        for (guint k = 0; k < restart->len; k++) {
                Waiter *w = restart->pdata[k];
                Subscription *s = w->s;
                const Caller *caller = w->caller;
                bool answer = w->answer;

                waiter_destroy(m, w);
                waiter_restart(m, s, caller, answer, 0);
        }
}

/* The prefix of path after the one that ends at end: "/" (end 1), "/a", "/a/b"... */
static size_t next_prefix(const char *path, size_t end) {
        if (end == 1)
                return 1 + component_len(path + 1);
        return end + 1 + component_len(path + end + 1);
}

/*
 * Opens the first prefix of path from "/" that the caller (whose
 * credentials are taken) may read: its length in *ret_end. Return: the fd
 * (st), -EACCES (no directory of the path may be read), or -errno.
 */
static int top_open(const char *path, size_t *ret_end, struct stat *st) {
        for (size_t end = 1; path[end] != '\0'; end = next_prefix(path, end)) {
                _cleanup_free_ char *top = strndup(path, end);
                int fd;

                if (!top)
                        return -ENOMEM;
                fd = access_open_at(AT_FDCWD, top, /* only_dir= */ true, /* no_follow= */ false, st);
                if (fd == -ENOENT || fd == -ENOTDIR)
                        break; /* nothing above it could be watched */
                if (fd == -EACCES)
                        continue; /* not readable: the chain starts below it; renames above are not seen */
                if (fd >= 0)
                        *ret_end = end;
                return fd;
        }
        return -EACCES; /* no directory of the path may be read */
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
        r = chain_get(m, w->caller, top, &c);
        if (r < 0)
                return r;
        if (!c->s->links) {
                WatchLink *l;

                r = watch_table_link_pending(m->table, c->s, fd, st, top, &l);
                if (r < 0) {
                        chain_put(m, c);
                        return r;
                }
        } else if (c->s->links->watch->dev != st->st_dev || c->s->links->watch->ino != st->st_ino) {
                /* The top itself was replaced: every waiter of the chain starts again. */
                g_autoptr(GPtrArray) restart = g_ptr_array_new();

                c->n_waiters++;
                cut(m, c, c->s->links, restart);
                restart_all(m, restart);
                c->n_waiters--;
                chain_put(m, c);
                return -ESTALE;
        }
        r = account_charge(s->account, 1);
        if (r < 0) {
                prune(m, c->s->links);
                chain_put(m, c);
                return r;
        }
        w->chain = c;
        c->n_waiters++;
        w->charged = 1;
        w->rest = path_prefix_len(top) + 1;
        waiter_place(m, w, c->s->links);
        step_push(m, c, c->s->links, TAKE_FD(fd), inline_);
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
        fd = top_open(w->s->path, &end, &st);
        access_restore(&saved);
        if (fd < 0)
                return fd;
        return waiter_join(m, w, end, fd, &st, /* inline_= */ true);
}

/* In a worker, as the waiter's caller. Touches nothing but j. */
static void start_run(void *data) {
        StartJob *j = data;

        j->fd = top_open(j->path, &j->end, &j->st);
}

static void start_free(StartJob *j) {
        hold_unref(j->hold);
        safe_close(j->fd);
        free(j->path);
        free(j);
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
                start_free(j);
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
        start_free(j);
        if (r >= 0)
                (void) finish(m, NULL); /* what an inline descent (no worker) found */
        else {
                s = w->s;
                caller = w->caller;
                answer = w->answer;
                rounds = w->rounds + 1;
                waiter_destroy(m, w);
                if (r == -ESTALE && rounds < PROBE_ROUNDS)
                        waiter_restart(m, s, caller, answer, rounds);
                else
                        tell(m, s, s->id, r == -ESTALE ? -ELOOP : r, answer);
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
                start_free(j);
                return -ENOMEM;
        }
        /* The caller's own lane: a prefix may cross a symlink or a mount point
         * into a file system that does not answer (a FUSE mount of the
         * caller's), which must hold no one else's work. */
        r = fswork_submit(m->fswork, FSWORK_USER_LANE(caller->uid), caller, start_run, start_done, j);
        if (r < 0) {
                free(w);
                start_free(j);
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
static int finish(Missing *m, Waiter *w_sync) {
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
                struct stat st;
                bool answer;
                uint32_t id;
                int r;

                /* An earlier one's callback may have ended it, or started it again. */
                if (w != done->pdata[k])
                        continue;
                if (!w->ready && w->error >= 0) {
                        /* At rest, waiting (waiters_settle()): its AddWatch is answered. */
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
                        r = fd;
                }
                waiter_destroy(m, w);
                if (r == -EACCES && !sync && !answer) {
                        /* A directory of the path it may not read: looked up afresh (the chain starts below it). */
                        waiter_restart(m, s, caller, false, 0);
                        continue;
                }
                /* Whose AddWatch waits is answered with EACCES, as at once. */
                if (r >= 0)
                        r = m->ops.appeared(s, fd, &st, m->userdata);
                if (sync)
                        ret = r;
                else
                        tell(m, s, id, r, answer);
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
                        return finish(m, sync ? w : NULL);
                }
                waiter_destroy(m, w);
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

bool missing_looking_up(const Missing *m, const Subscription *s) {
        const Waiter *w = g_hash_table_lookup(m->waiters, s);

        return w && w->answer;
}

void missing_remove(Missing *m, Subscription *s) {
        Waiter *w = g_hash_table_lookup(m->waiters, s);
        bool answer;

        if (!w)
                return;
        answer = w->answer;
        waiter_destroy(m, w);
        if (answer)
                m->ops.found(s->id, -ECANCELED, m->userdata); /* ended before its look-up did */
}

/*
 * Brings the chain's nodes from the top to node up to date, as the chain's
 * caller, and descends from node, inline: see the top of the file. A node on
 * the way that is not what its path leads to now is cut off (its waiters
 * climb, and the descent starts from its parent instead).
 */
static void probe(Missing *m, Chain *c, WatchLink *node) {
        ProbeJob *j = job_new(m, c, node, /* walk= */ true, -EBADF);

        if (!j) {
                log_warning("Out of memory following a pending path, ignoring.");
                return;
        }
        job_inline(m, j, true);
        job_release(m, j);
        job_free(j);
}

/* Whether a waiter of node wants name next. */
static bool wanted(Missing *m, WatchLink *node, const char *name, size_t name_len) {
        LIST_FOREACH(node, w, waiters_at(m, node)) {
                const char *comp = w->s->path + w->rest;

                if (strncmp(comp, name, name_len) == 0 && (comp[name_len] == '/' || comp[name_len] == '\0'))
                        return true;
        }
        return false;
}

/* probe() from node, then place or end what it found; with workers, queued
 * for one (done in its completion). The caller holds c (n_waiters), which
 * may lose its last waiter meanwhile. */
static void probe_and_finish(Missing *m, Chain *c, WatchLink *node) {
        if (m->fswork) {
                chain_request(m, c, node);
                return;
        }
        watch_link_hold(node);
        probe(m, c, node);
        run_slice(m, EVENT_SLICE_USEC);
        (void) finish(m, NULL);
        if (!node->dead)
                prune(m, node);
        watch_link_release(node);
}

void missing_on_event(Missing *m, WatchLink *l, uint32_t mask, const char *name, size_t name_len) {
        Chain *c = g_hash_table_lookup(m->by_chain, l->subscription);
        WatchLink *child;

        if (!c || !name || !(mask & WATCH_PENDING_BITS))
                return;
        child = watch_link_child(l, name, name_len);
        if (child && (mask & (IN_DELETE | IN_MOVED_FROM))) {
                /* A directory of the chain went: its waiters climb to l, and look again. */
                g_autoptr(GPtrArray) none = g_ptr_array_new();

                c->n_waiters++;
                cut(m, c, child, none);
                probe_and_finish(m, c, l);
                c->n_waiters--;
                chain_put(m, c);
                return;
        }
        if (child || wanted(m, l, name, name_len)) {
                /* Appeared (or replaced): follow it down from l. */
                c->n_waiters++;
                probe_and_finish(m, c, l);
                c->n_waiters--;
                chain_put(m, c);
        }
}

/*
 * The kernel's queue overflowed: any event about a chain may be lost (a
 * directory that appeared, or went), and a waiter would wait for an event
 * that has already happened. So every node that has waiters is looked at
 * again, as after an event about it: probe() checks the way down to it and
 * descends from it.
 */
void missing_recheck(Missing *m) {
        g_autoptr(GPtrArray) nodes = g_ptr_array_new();
        GHashTableIter i;
        gpointer k;

        g_hash_table_iter_init(&i, m->at);
        while (g_hash_table_iter_next(&i, &k, NULL)) {
                watch_link_hold(k);
                g_ptr_array_add(nodes, k);
        }
        for (guint n = 0; n < nodes->len; n++) {
                WatchLink *l = nodes->pdata[n];
                Chain *c = l->dead ? NULL : g_hash_table_lookup(m->by_chain, l->subscription);

                /* An earlier probe may have moved its waiters, or cut it. */
                if (c && waiters_at(m, l)) {
                        c->n_waiters++;
                        probe_and_finish(m, c, l);
                        c->n_waiters--;
                        chain_put(m, c);
                }
                watch_link_release(l);
        }
}

void missing_on_watch_gone(Missing *m, WatchLink *l) {
        Chain *c = g_hash_table_lookup(m->by_chain, l->subscription);
        g_autoptr(GPtrArray) restart = g_ptr_array_new();
        WatchLink *parent;

        if (!c || l->dead)
                return;
        parent = l->parent;
        c->n_waiters++;
        if (parent)
                watch_link_hold(parent);
        cut(m, c, l, restart);
        restart_all(m, restart);
        if (parent) {
                if (!parent->dead)
                        probe_and_finish(m, c, parent);
                watch_link_release(parent);
        }
        c->n_waiters--;
        chain_put(m, c);
}
