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
 * This file is the ground the rest stands on: the follower, its chains
 * (made, shared by credentials and top, held, freed), its waiters (placed
 * at a node, moved, cut off with what is below, pruned, settled or failed
 * after a probe, ended) and the descents queued (Step). The probes and the
 * look-ups of new waiters are applied in missing_follow.c, what they open
 * (as the caller, in a worker or inline) is in missing_open.c, what the
 * kernel tells a chain is taken in missing_events.c; the structs they
 * share are in missing_internal.h. This file calls none of them.
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "event_bits.h"
#include "fswork.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "missing.h"
#include "missing_internal.h"

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
                missing_step_free(m, st);
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
                        missing_step_free(m, st);
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
                WatchLink *parent = watch_link_parent(node);

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
 * top's parent, or, for the chain's top link, out of the chain (then they
 * start again: *restart), and unlinks top with everything below it.
 */
void missing_cut(Missing *m, Chain *c, WatchLink *top, GPtrArray *restart) {
        WatchLink *parent = watch_link_parent(top);

        for (WatchLink *l = top; l;) {
                Waiter *w;

                while ((w = missing_waiters_at(m, l))) {
                        unsigned up = 0;
                        size_t rest = w->rest;

                        missing_waiter_unplace(m, w);
                        /* Climb from l to parent: each level gives back its name and its charge. */
                        for (WatchLink *k = l; k != parent; k = watch_link_parent(k)) {
                                up++;
                                rest -= k->top ? rest : strlen(k->name) + 1;
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
                                l = watch_link_parent(l);
                        l = l == top ? NULL : l->sib_next;
                }
        }
        (void) watch_table_unlink(m->table, top);
        c->gen++;
}

bool missing_comp_same(const ProbeComp *pc, const char *name, size_t len, bool last, bool only_dir, bool no_follow) {
        return pc->last == last && pc->only_dir == only_dir && pc->no_follow == no_follow &&
                strncmp(pc->name, name, len) == 0 && pc->name[len] == '\0';
}

/* Whether pc is what w wants next (w still waiting). */
bool missing_comp_wanted_by(const ProbeComp *pc, const Waiter *w) {
        const char *comp = w->s->path + w->rest;
        size_t cl = missing_component_len(comp);
        bool last = comp[cl] == '\0';

        if (w->ready || w->error < 0)
                return false;
        return last ? missing_comp_same(pc, comp, cl, true, w->s->flags & WATCHD_FLAG_ONLYDIR,
                                        w->s->flags & WATCHD_FLAG_DONT_FOLLOW) :
                      missing_comp_same(pc, comp, cl, false, true, false);
}

void missing_waiter_fail(Missing *m, Waiter *w, int error) {
        w->error = error;
        g_ptr_array_add(m->done, w);
}

/* The waiters of node that want pc wait there (it is not there yet), at rest:
 * those whose AddWatch waits are answered (missing_finish()). pc NULL: every one. */
void missing_waiters_settle(Missing *m, WatchLink *node, const ProbeComp *pc) {
        LIST_FOREACH(node, w, missing_waiters_at(m, node))
                if (w->answer && !w->ready && w->error >= 0 && (!pc || missing_comp_wanted_by(pc, w)))
                        g_ptr_array_add(m->done, w);
}

/* Every waiter of node that wants pc cannot go on: error. */
void missing_waiters_fail(Missing *m, WatchLink *node, const ProbeComp *pc, int error) {
        Waiter *w, *n;

        for (w = missing_waiters_at(m, node); w; w = n) {
                n = w->node_next;
                if (missing_comp_wanted_by(pc, w))
                        missing_waiter_fail(m, w, error);
        }
}

/* The job is over: the chain's and node's holds given back. */
void missing_job_release(Missing *m, ProbeJob *j) {
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

void missing_step_push(Missing *m, Chain *c, WatchLink *node, int fd, bool inline_) {
        Step *st = malloc(sizeof(Step));

        if (!st) {
                /* The waiters stay where they are, until the next event there. */
                log_warning("Out of memory following a pending path, ignoring.");
                safe_close(fd);
                missing_waiters_settle(m, node, NULL);
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

void missing_step_free(Missing *m, Step *st) {
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
void missing_chain_hold(Missing *m, Chain *c) {
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

static void waiter_free(Missing *m, Waiter *w) {
        Chain *c = w->chain;

        missing_waiter_unplace(m, w);
        w->fd = safe_close(w->fd);
        watch_table_placed_done(m->table, &w->placed); /* ready, and not placed after all */
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

/* What became of s told: to whoever waits for its look-up (answer), else an end. */
void missing_tell(Missing *m, Subscription *s, uint32_t id, int r, bool answer) {
        if (answer)
                m->ops.found(id, r, m->userdata);
        else if (r < 0)
                m->ops.gone(s, r, m->userdata);
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
