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
 * below is unlinked: missing_prune()), so a chain holds exactly the
 * directories its waiters' paths go through.
 *
 * How a chain is probed (the walk down from its top, and the descent from
 * a node, inline or off the loop in ProbeJobs) is told at the top of
 * missing_probe.c, which does it; how a new waiter's top is looked up in a
 * worker (StartJob), at the top of missing_start.c. What the three files
 * share is in missing_internal.h.
 * A waiter whose AddWatch waits (w->answer) is answered through ops->found
 * once it is at rest: waiting where the next component is not there,
 * placed, or failed.
 * missing_add() (a PERSIST subscription whose object left, and without
 * workers) still looks its path up on the loop, at once.
 */

#include <assert.h>
#include <errno.h>
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
#include "missing_internal.h"

/* How long an event goes down a path before the rest of the way is left to
 * the loop (missing_run(), which the event path runs before its next record). */
#define EVENT_SLICE_USEC 1000u

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
                missing_probe_step_free(m, st);
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
                        missing_probe_step_free(m, st);
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
        more = missing_probe_run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
        (void) missing_finish(m, NULL);
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
int missing_chain_get(Missing *m, const Caller *caller, const char *top, Chain **ret) {
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

void missing_chain_put(Missing *m, Chain *c) {
        if (c->n_waiters > 0)
                return;
        g_hash_table_remove(m->by_chain, c->s);
        g_hash_table_remove(m->chains, c->key); /* frees it */
}

Waiter *missing_waiters_at(Missing *m, WatchLink *node) {
        return g_hash_table_lookup(m->at, node);
}

static void node_set_waiters(Missing *m, WatchLink *node, Waiter *first) {
        if (first)
                g_hash_table_insert(m->at, node, first);
        else
                g_hash_table_remove(m->at, node);
}

void missing_waiter_unplace(Missing *m, Waiter *w) {
        Waiter *head;

        if (!w->node)
                return;
        head = missing_waiters_at(m, w->node);
        LIST_REMOVE(node, head, w);
        node_set_waiters(m, w->node, head);
        w->node = NULL;
}

void missing_waiter_place(Missing *m, Waiter *w, WatchLink *node) {
        Waiter *head = missing_waiters_at(m, node);

        LIST_PREPEND(node, head, w);
        node_set_waiters(m, node, head);
        w->node = node;
}

/* Unlinks node and the directories above it that no one waits in or below any more. */
void missing_prune(Missing *m, WatchLink *node) {
        while (node && !node->dead && !node->children && !missing_waiters_at(m, node)) {
                WatchLink *parent = node->parent;

                (void) watch_table_unlink(m->table, node);
                node = parent;
        }
}

/* The length of the path component at p. */
size_t missing_component_len(const char *p) {
        return strcspn(p, "/");
}

/*
 * Moves the waiters of every node below top (top included) up into
 * top->parent, or, for the chain's top link, out of the chain (then they
 * start again: *restart), and unlinks top with everything below it.
 */
void missing_cut(Missing *m, Chain *c, WatchLink *top, GPtrArray *restart) {
        WatchLink *parent = top->parent;

        for (WatchLink *l = top; l;) {
                Waiter *w;

                while ((w = missing_waiters_at(m, l))) {
                        unsigned up = 0;
                        size_t rest = w->rest;

                        missing_waiter_unplace(m, w);
                        /* Climb from l to parent: each level gives back its name and its charge. */
                        for (WatchLink *k = l; k != parent; k = k->parent) {
                                up++;
                                rest -= k->parent ? strlen(k->name) + 1 : rest;
                        }
                        account_uncharge(w->s->account, up);
                        w->charged -= up;
                        w->rest = rest;
                        if (parent)
                                missing_waiter_place(m, w, parent);
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
                cl = missing_component_len(p);
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
                LIST_FOREACH(node, w, missing_waiters_at(m, node))
                        if (components_start_with(w->s->path + w->rest, name, name_len))
                                return true;
                return false;
        }
        /* dir is below node, not linked yet: what node's waiters want next starts with it and name. */
        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
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
void missing_chain_kick(Missing *m, Chain *c) {
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
                        missing_probe_step_free(m, st);
                } else if (c->todo->len > 0) {
                        node = g_ptr_array_steal_index(c->todo, 0);
                        c->n_waiters--; /* its hold, ours now */
                } else
                        break;
                j = NULL;
                if (!node->dead && missing_waiters_at(m, node)) {
                        bool walk = fd < 0; /* before TAKE_FD(): the arguments' order is unspecified */

                        j = missing_probe_job_new(m, c, node, walk, TAKE_FD(fd));
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
                r = m->fswork ?
                        fswork_submit(m->fswork, lane, &c->caller, missing_probe_job_run, missing_probe_job_done, j) :
                        -EAGAIN;
                if (r >= 0) {
                        c->job = j;
                        m->n_jobs++;
                        continue;
                }
                /* No worker: here, as before there were any. */
                missing_probe_job_inline(m, j, false);
                missing_probe_job_release(m, j);
                missing_probe_job_free(j);
                (void) missing_finish(m, NULL);
        }
        if (c->job)
                chain_hold(m, c);
        c->n_waiters--;
        missing_chain_put(m, c);
}

/* node to be probed from the top (after an event about it), once c can. */
static void chain_request(Missing *m, Chain *c, WatchLink *node) {
        if (!g_ptr_array_find(c->todo, node, NULL)) {
                watch_link_hold(node);
                c->n_waiters++;
                g_ptr_array_add(c->todo, node);
        }
        missing_chain_kick(m, c);
}

static void waiter_free(Missing *m, Waiter *w) {
        Chain *c = w->chain;

        missing_waiter_unplace(m, w);
        w->fd = safe_close(w->fd);
        if (w->charged > 0)
                account_uncharge(w->s->account, w->charged);
        w->charged = 0;
        w->chain = NULL;
        if (c) {
                c->n_waiters--;
                missing_chain_put(m, c);
        }
}

/* w is no longer followed: out of every list, its charge returned, freed. */
void missing_waiter_destroy(Missing *m, Waiter *w) {
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
                missing_prune(m, node);
                watch_link_release(node);
        }
}

static int waiter_add(Missing *m, Subscription *s, const Caller *caller, bool sync);

/* missing_probe_run() for budget_usec; what is left waits for missing_run(). */
static void run_slice(Missing *m, uint64_t budget_usec) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) missing_probe_run(m, (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u + budget_usec);
}

/* What became of s told: to whoever waits for its look-up (answer), else an end. */
void missing_tell(Missing *m, Subscription *s, uint32_t id, int r, bool answer) {
        if (answer)
                m->ops.found(id, r, m->userdata);
        else if (r < 0)
                m->ops.gone(s, r, m->userdata);
}


/* s (no longer followed) looked up afresh: in a worker, or here if none can
 * take it. A failure is told. */
void missing_waiter_restart(Missing *m, Subscription *s, const Caller *caller, bool answer, unsigned rounds) {
        int r = m->fswork ? missing_waiter_add_async(m, s, caller, answer, rounds) : -EAGAIN;

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
                missing_waiter_restart(m, s, caller, answer, 0);
        }
}

/* What descend() left in m->done: placed, or ended. w_sync's result is
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
                missing_waiter_destroy(m, w);
                if (r == -EACCES && !sync && !answer) {
                        /* A directory of the path it may not read: looked up afresh (the chain starts below it). */
                        missing_waiter_restart(m, s, caller, false, 0);
                        continue;
                }
                /* Whose AddWatch waits is answered with EACCES, as at once. */
                if (r >= 0)
                        r = m->ops.appeared(s, fd, &st, m->userdata);
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
                r = missing_waiter_start(m, w);
                if (r >= 0) {
                        /* Followed down at once, to the end: AddWatch answers with
                         * its chain in place (or its error), as a client may count
                         * on. It costs one open a level of the path, at most. */
                        (void) missing_probe_run(m, UINT64_MAX);
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
        r = missing_waiter_add_async(m, s, caller, /* answer= */ true, 0);
        if (r == -EAGAIN)
                return missing_add(m, s, caller); /* no worker: here, as before there were any */
        return r < 0 ? r : 1;
}

void missing_follow_again(Missing *m, Subscription *s, const Caller *caller) {
        missing_waiter_restart(m, s, caller, /* answer= */ false, 0);
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
        missing_waiter_destroy(m, w);
        if (answer)
                m->ops.found(s->id, -ECANCELED, m->userdata); /* ended before its look-up did */
}

/*
 * Brings the chain's nodes from the top to node up to date, as the chain's
 * caller, and descends from node, inline: see the top of missing_probe.c.
 * A node on the way that is not what its path leads to now is cut off (its
 * waiters climb, and the descent starts from its parent instead).
 */
static void probe(Missing *m, Chain *c, WatchLink *node) {
        ProbeJob *j = missing_probe_job_new(m, c, node, /* walk= */ true, -EBADF);

        if (!j) {
                log_warning("Out of memory following a pending path, ignoring.");
                return;
        }
        missing_probe_job_inline(m, j, true);
        missing_probe_job_release(m, j);
        missing_probe_job_free(j);
}

/* Whether a waiter of node wants name next. */
static bool wanted(Missing *m, WatchLink *node, const char *name, size_t name_len) {
        LIST_FOREACH(node, w, missing_waiters_at(m, node)) {
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
        (void) missing_finish(m, NULL);
        if (!node->dead)
                missing_prune(m, node);
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
                missing_cut(m, c, child, none);
                probe_and_finish(m, c, l);
                c->n_waiters--;
                missing_chain_put(m, c);
                return;
        }
        if (child || wanted(m, l, name, name_len)) {
                /* Appeared (or replaced): follow it down from l. */
                c->n_waiters++;
                probe_and_finish(m, c, l);
                c->n_waiters--;
                missing_chain_put(m, c);
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
                if (c && missing_waiters_at(m, l)) {
                        c->n_waiters++;
                        probe_and_finish(m, c, l);
                        c->n_waiters--;
                        missing_chain_put(m, c);
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
        missing_cut(m, c, l, restart);
        missing_restart_all(m, restart);
        if (parent) {
                if (!parent->dead)
                        probe_and_finish(m, c, parent);
                watch_link_release(parent);
        }
        c->n_waiters--;
        missing_chain_put(m, c);
}
