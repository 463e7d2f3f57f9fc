/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * missing_events - what the kernel tells a chain of pending paths
 *
 * An event about a link of a chain (a directory its waiters want appeared,
 * or one of the chain went), the kernel's queue overflowed, or a link's
 * watch dropped: the node concerned is probed again (probe(): inline, or
 * queued as the chain's job), cut off first if it went. Split out of
 * missing.c; it sets off what missing_follow.c applies, and nothing calls
 * it but the layer above (missing.h).
 */

#include <glib.h>
#include <string.h>

#include "event_bits.h"
#include "list.h"
#include "log.h"
#include "missing.h"
#include "missing_internal.h"

/* How long an event goes down a path before the rest of the way is left to
 * the loop (missing_run(), which the event path runs before its next record). */
#define EVENT_SLICE_USEC 1000u

/*
 * Brings the chain's nodes from the top to node up to date, as the chain's
 * caller, and descends from node, inline: see the top of missing_follow.c.
 * A node on the way that is not what its path leads to now is cut off (its
 * waiters climb, and the descent starts from its parent instead).
 */
static void probe(Missing *m, Chain *c, WatchLink *node) {
        ProbeJob *j = missing_job_new(m, c, node, /* walk= */ true, -EBADF);

        if (!j) {
                log_warning("Out of memory following a pending path, ignoring.");
                return;
        }
        missing_job_inline(m, j, true);
        missing_job_release(m, j);
        missing_job_free(j);
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
                missing_chain_request(m, c, node);
                return;
        }
        watch_link_hold(node);
        probe(m, c, node);
        missing_run_slice(m, EVENT_SLICE_USEC);
        (void) missing_finish(m, NULL);
        if (!node->dead)
                missing_prune(m, node);
        watch_link_release(node);
}

void missing_on_event(Missing *m, WatchLink *l, uint32_t mask, const char *name, size_t name_len) {
        Chain *c = g_hash_table_lookup(m->by_chain, watch_link_subscription(l));
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
                Chain *c = l->dead ? NULL : g_hash_table_lookup(m->by_chain, watch_link_subscription(l));

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
        Chain *c = g_hash_table_lookup(m->by_chain, watch_link_subscription(l));
        g_autoptr(GPtrArray) restart = g_ptr_array_new();
        WatchLink *parent;

        if (!c || l->dead)
                return;
        parent = watch_link_parent(l);
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
