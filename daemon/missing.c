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
 * everything below it, and its waiters climb); then descend(): from that
 * node, for each next component its waiters want, one openat(); if it is
 * there, the waiters that want it move down together (one new link, or the
 * existing one), and so on below; a last component that is there places the
 * waiter (ops->appeared, once the credentials are back). So one event costs
 * the depth of the node it is about plus the levels that appeared, once for
 * all the waiters that share them.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event_bits.h"
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

struct Chain {
        Missing *missing;
        char *key;       /* credentials and top, see chain_key() */
        Caller caller;   /* whose credentials every open is made with (owns gids) */
        Subscription *s; /* the chain in the watch table; s->links is the top */
        unsigned n_waiters;
};

struct Waiter {
        Subscription *s;
        const Caller *caller; /* its owner's (which outlives s) */
        Chain *chain;
        WatchLink *node;           /* the deepest directory of s->path the chain holds */
        size_t rest;               /* s->path + rest: the part below node's directory */
        unsigned charged;          /* watches charged to s's account: the nodes from the top to node */
        uint64_t looked;           /* the descend() pass that last found its next component missing */
        bool ready;                /* its path is there: placed once the credentials are back */
        int error;                 /* it cannot be followed: gone once the credentials are back */
        LIST_FIELDS(Waiter, node); /* the waiters of node */
};

/* A directory a descent has reached and will go on from: its node (held)
 * and an fd open on it, made with the chain's credentials. */
typedef struct Step Step;
struct Step {
        Chain *chain; /* held (n_waiters) */
        WatchLink *node;
        int fd;
        LIST_FIELDS(Step, steps);
};

static void step_free(Missing *m, Step *st);
static bool run(Missing *m, uint64_t deadline);
static int finish(Missing *m, Waiter *w_sync);

struct Missing {
        WatchTable *table;
        MissingOps ops;
        void *userdata;
        GHashTable *chains;     /* key -> Chain (owned) */
        GHashTable *by_chain;   /* chain Subscription -> Chain */
        GHashTable *waiters;    /* pending Subscription -> Waiter (owned) */
        GHashTable *at;         /* WatchLink (a node) -> its first Waiter */
        GPtrArray *done;        /* Waiters to place or end after a probe */
        uint64_t pass;          /* descend() calls so far */
        LIST_HEAD(Step, steps); /* descents to go on with, deepest first */
};

static void chain_free(Chain *c) {
        if (!c)
                return;
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

Missing *missing_free(Missing *m) {
        if (!m)
                return NULL;
        while (m->steps) {
                Step *st = m->steps;

                LIST_REMOVE(steps, m->steps, st);
                step_free(m, st);
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
        (void) c;
}

static void step_push(Missing *m, Chain *c, WatchLink *node, int fd);

/*
 * One level down from node, open at fd (as the chain's caller): each next
 * component its waiters want is opened once for all the waiters that want
 * it; those that are there are linked, the waiters moved into them, and a
 * step pushed for each, to go on from. Waiters whose path is there are
 * marked ready, those that cannot go on get their error; both are collected
 * in m->done.
 */
static void descend(Missing *m, Chain *c, WatchLink *node, int fd) {
        uint64_t pass = ++m->pass;
        Waiter *w, *n;
        bool again = true;

        /* Each round takes one component (that of the first waiter still
         * to be looked at); waiters that move down leave the list. */
        while (again) {
                again = false;
                LIST_FOREACH_SAFE(node, i, nn, waiters_at(m, node)) {
                        const char *comp = i->s->path + i->rest;
                        size_t cl = component_len(comp);
                        _cleanup_close_ int cfd = -1;
                        _cleanup_free_ char *name = NULL;
                        WatchLink *child;
                        struct stat st;
                        int r;

                        if (i->ready || i->error < 0 || i->looked == pass)
                                continue;
                        if (comp[cl] == '\0') {
                                /* The path itself: it is there, checked for the flags, or it is not. */
                                cfd = access_open_at(fd, comp, i->s->flags & WATCHD_FLAG_ONLYDIR,
                                                     i->s->flags & WATCHD_FLAG_DONT_FOLLOW, &st);
                                if (cfd == -ENOENT) {
                                        i->looked = pass;
                                        continue;
                                }
                                if (cfd < 0)
                                        i->error = cfd;
                                else
                                        i->ready = true;
                                g_ptr_array_add(m->done, i);
                                continue;
                        }
                        name = strndup(comp, cl);
                        if (!name) {
                                i->error = -ENOMEM;
                                g_ptr_array_add(m->done, i);
                                continue;
                        }
                        cfd = access_open_at(fd, name, /* only_dir= */ true, /* no_follow= */ false, &st);
                        if (cfd == -ENOENT || cfd == -ENOTDIR) {
                                i->looked = pass; /* not there (yet): it waits here */
                                continue;
                        }
                        if (cfd < 0) {
                                /* EACCES: a directory it may not read cannot be watched; it starts
                                 * again below it (waiter_start), as the path is looked up afresh. */
                                i->error = cfd;
                                g_ptr_array_add(m->done, i);
                                continue;
                        }
                        child = watch_link_child(node, name, cl);
                        if (child && (child->watch->dev != st.st_dev || child->watch->ino != st.st_ino)) {
                                /* Replaced, and the event not read yet: the new one is what the path leads to. */
                                GPtrArray *none = g_ptr_array_new();

                                cut(m, c, child, none);
                                g_ptr_array_unref(none);
                                child = NULL;
                        }
                        if (!child) {
                                r = watch_table_link(m->table, c->s, node, cfd, &st, name, cl, &child);
                                if (r < 0) {
                                        i->error = r;
                                        g_ptr_array_add(m->done, i);
                                        continue;
                                }
                        }
                        /* Every waiter here that wants this component goes down. */
                        for (w = waiters_at(m, node); w; w = n) {
                                const char *wc = w->s->path + w->rest;

                                n = w->node_next;
                                if (w->ready || w->error < 0 || strncmp(wc, name, cl) != 0 || wc[cl] != '/')
                                        continue;
                                r = account_charge(w->s->account, 1);
                                if (r < 0) {
                                        w->error = r;
                                        g_ptr_array_add(m->done, w);
                                        continue;
                                }
                                w->charged++;
                                waiter_unplace(m, w);
                                w->rest += cl + 1;
                                waiter_place(m, w, child);
                        }
                        if (waiters_at(m, child))
                                step_push(m, c, child, TAKE_FD(cfd));
                        else
                                prune(m, child); /* made for waiters that all failed their charge */
                        again = true;
                        break; /* the list changed: look at it again */
                }
        }
}

static void step_push(Missing *m, Chain *c, WatchLink *node, int fd) {
        Step *st = malloc(sizeof(Step));

        if (!st) {
                /* The waiters stay where they are, until the next event there. */
                log_warning("Out of memory following a pending path, ignoring.");
                safe_close(fd);
                return;
        }
        *st = (Step) {
                .chain = c,
                .node = node,
                .fd = fd,
        };
        c->n_waiters++;
        watch_link_hold(node);
        LIST_PREPEND(steps, m->steps, st);
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
 * Goes on with the descents until deadline (µs, CLOCK_MONOTONIC), deepest
 * first, each under its chain's credentials (switched when the chain
 * changes). Return: whether any is left.
 */
static bool run(Missing *m, uint64_t deadline) {
        Chain *as = NULL;
        AccessSaved saved = {};
        Step *st;

        while ((st = m->steps)) {
                struct timespec ts;

                (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u >= deadline)
                        break;
                LIST_REMOVE(steps, m->steps, st);
                if (!st->node->dead && waiters_at(m, st->node)) {
                        if (as != st->chain) {
                                if (as)
                                        access_restore(&saved);
                                as = access_become(&st->chain->caller, &saved) >= 0 ? st->chain : NULL;
                        }
                        if (as)
                                descend(m, st->chain, st->node, st->fd);
                }
                step_free(m, st);
        }
        if (as)
                access_restore(&saved);
        return m->steps != NULL;
}

static void waiter_free(Missing *m, Waiter *w) {
        Chain *c = w->chain;

        waiter_unplace(m, w);
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

/* Waiters that were cut off at their chain's top: each looked up afresh. */
static void restart_all(Missing *m, GPtrArray *restart) {
        for (guint k = 0; k < restart->len; k++) {
                Waiter *w = restart->pdata[k];
                Subscription *s = w->s;
                const Caller *caller = w->caller;
                int r;

                waiter_destroy(m, w);
                r = waiter_add(m, s, caller, false);
                if (r < 0)
                        m->ops.gone(s, r, m->userdata);
        }
}

/* The prefix of path after the one that ends at end: "/" (end 1), "/a", "/a/b"... */
static size_t next_prefix(const char *path, size_t end) {
        if (end == 1)
                return 1 + component_len(path + 1);
        return end + 1 + component_len(path + end + 1);
}

/*
 * Looks w's path up from the top, as its caller: the first directory of it
 * that may be read is its chain's top (normally "/"), and w descends from
 * there. Runs with the daemon's credentials (it switches for itself).
 * Return: 0, -ESTALE (the chain's top was replaced: try again), or -errno
 * (w is in no chain then).
 */
static int waiter_start(Missing *m, Waiter *w) {
        Subscription *s = w->s;

        for (size_t end = 1; s->path[end] != '\0'; end = next_prefix(s->path, end)) {
                _cleanup_free_ char *top = strndup(s->path, end);
                _cleanup_close_ int fd = -1;
                struct stat st;
                Chain *c;
                int r;

                if (!top)
                        return -ENOMEM;
                fd = access_open_as(w->caller, top, /* only_dir= */ true, /* no_follow= */ false, &st);
                if (fd == -ENOENT || fd == -ENOTDIR)
                        break; /* nothing above it could be watched */
                if (fd == -EACCES)
                        continue; /* not readable: the chain starts below it; renames above are not seen */
                if (fd < 0)
                        return fd;

                r = chain_get(m, w->caller, top, &c);
                if (r < 0)
                        return r;
                if (!c->s->links) {
                        WatchLink *l;

                        r = watch_table_link_pending(m->table, c->s, fd, &st, top, &l);
                        if (r < 0) {
                                chain_put(m, c);
                                return r;
                        }
                } else if (c->s->links->watch->dev != st.st_dev || c->s->links->watch->ino != st.st_ino) {
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
                step_push(m, c, c->s->links, TAKE_FD(fd));
                return 0;
        }
        return -EACCES; /* no directory of the path may be read */
}

/* What descend() left in m->done: placed, or ended. w_sync's result is
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
                int r;

                /* An earlier one's callback may have ended it, or started it again. */
                if (w != done->pdata[k] || (!w->ready && w->error >= 0))
                        continue;
                caller = w->caller;
                r = w->error;
                if (w->ready) {
                        /* Opened again, now by its whole path: descend()'s directory fd is gone,
                         * and this is once per placement. */
                        fd = access_open_as(caller, s->path, s->flags & WATCHD_FLAG_ONLYDIR,
                                            s->flags & WATCHD_FLAG_DONT_FOLLOW, &st);
                        r = fd;
                }
                if (r == -ENOENT) {
                        /* Gone again meanwhile: it waits on. */
                        w->ready = false;
                        w->error = 0;
                        continue;
                }
                waiter_destroy(m, w);
                if (r == -EACCES && !sync) {
                        /* A directory of the path it may not read: looked up afresh (the chain starts below it). */
                        r = waiter_add(m, s, caller, false);
                        if (r < 0)
                                m->ops.gone(s, r, m->userdata);
                        continue;
                }
                if (r >= 0)
                        r = m->ops.appeared(s, fd, &st, m->userdata);
                if (sync)
                        ret = r;
                else if (r < 0)
                        m->ops.gone(s, r, m->userdata);
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

void missing_remove(Missing *m, Subscription *s) {
        Waiter *w = g_hash_table_lookup(m->waiters, s);

        if (w)
                waiter_destroy(m, w);
}

/*
 * Brings the chain's nodes from the top to node up to date, as the chain's
 * caller, and descends from node: see the top of the file. A node on the
 * way that is not what its path leads to now is cut off (its waiters climb,
 * and the descent starts from its parent instead).
 */
static void probe(Missing *m, Chain *c, WatchLink *node) {
        g_autoptr(GPtrArray) way = g_ptr_array_new(), restart = g_ptr_array_new();
        _cleanup_close_ int fd = -1;
        AccessSaved saved;
        WatchLink *at;
        struct stat st;
        int r;

        for (WatchLink *l = node; l; l = l->parent)
                g_ptr_array_add(way, l);
        at = way->pdata[way->len - 1]; /* the top */

        r = access_become(&c->caller, &saved);
        if (r < 0) {
                log_warning_errno(r, "Failed to take a caller's credentials, not following its paths: %m");
                return;
        }
        fd = access_open_at(AT_FDCWD, at->name, /* only_dir= */ true, /* no_follow= */ false, &st);
        if (fd < 0 || st.st_dev != at->watch->dev || st.st_ino != at->watch->ino) {
                cut(m, c, at, restart); /* the top itself is gone: all start again */
                at = NULL;
        }
        for (guint k = way->len - 1; at && k > 0; k--) {
                WatchLink *next = way->pdata[k - 1];
                int nfd = access_open_at(fd, next->name, /* only_dir= */ true, /* no_follow= */ false, &st);

                if (nfd < 0 || st.st_dev != next->watch->dev || st.st_ino != next->watch->ino) {
                        safe_close(nfd);
                        cut(m, c, next, restart);
                        break;
                }
                safe_close(fd);
                fd = nfd;
                at = next;
        }
        access_restore(&saved);
        if (at)
                step_push(m, c, at, TAKE_FD(fd));

        if (at)
                watch_link_hold(at);
        restart_all(m, restart);
        if (at) {
                if (!at->dead)
                        prune(m, at);
                watch_link_release(at);
        }
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

/* probe() from node, then place or end what it found. The caller holds c
 * (n_waiters), which may lose its last waiter meanwhile. */
static void probe_and_finish(Missing *m, Chain *c, WatchLink *node) {
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
