/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manager_calls - what the layers above ask of the core
 *
 * The loop glue (loop.c) hands it the kernel's and fanotify's fds when they
 * are readable, its timer and its walker's turns; the bus layer asks for
 * clients, subscriptions, their limits and the counters. Each call goes to the
 * one part that does it; the parts were built and wired in manager.c.
 */

#include <errno.h>
#include <stdlib.h>

#include "event_bits.h"
#include "macro.h"
#include "manager_internal.h"

int manager_when_primed(Manager *m, Client *c, uint32_t id, void (*cb)(void *userdata), void *userdata) {
        Subscription *s = watch_table_get_subscription(m->table, id);
        PrimedWaiter *w;
        GPtrArray *ws;

        if (!s || s->owner != c || !remote_priming(m->remote, s))
                return 0;
        if (!m->primed_waiters)
                m->primed_waiters = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                          (GDestroyNotify) g_ptr_array_unref);
        w = malloc(sizeof(PrimedWaiter));
        if (!w)
                return -ENOMEM;
        *w = (PrimedWaiter) { cb, userdata };
        ws = g_hash_table_lookup(m->primed_waiters, s);
        if (!ws) {
                ws = g_ptr_array_new_with_free_func(free);
                g_hash_table_insert(m->primed_waiters, s, ws);
        }
        g_ptr_array_add(ws, w);
        return 1;
}

void manager_set_fswork(Manager *m, FsWork *w) {
        m->fswork = w;
        if (m->tree)
                tree_set_fswork(m->tree, w);
}

FsWork *manager_get_fswork(const Manager *m) {
        return m->fswork;
}

void manager_lane_stalled(Manager *m, dev_t dev, bool stalled) {
        if (m->remote)
                remote_lane_stalled(m->remote, dev, stalled);
}

int manager_kernel_fd(const Manager *m) {
        return backend_get_fd(m->backend);
}

bool manager_on_kernel_readable(Manager *m) {
        return events_slice(m->events, KERNEL_SLICE_USEC);
}

int manager_fanotify_fd(const Manager *m) {
        return m->fanotify ? fanotify_fd(m->fanotify) : -1;
}

bool manager_on_fanotify_readable(Manager *m) {
        return fanotify_slice(m->fanotify, KERNEL_SLICE_USEC);
}

uint64_t manager_fanotify_pause_usec(const Manager *m) {
        return fanotify_pause_usec(m->fanotify);
}

/*
 * A pairing deadline passed. The kernel queues a rename's two halves one
 * after the other, and a read can come between them; when the daemon next
 * runs after the deadline (descheduled, or slow under valgrind) the
 * IN_MOVED_TO may be waiting in the kernel while the timer and the fd are
 * both ready, and the timer may be served first. So the kernel is read
 * before the lone half is let go: a slice, as any turn (the flush waits for
 * the read's last slice).
 */
bool manager_on_deadline(Manager *m) {
        events_read_again(m->events);
        return manager_on_kernel_readable(m);
}

/* A read handled in slices is flushed once, after its last slice, as a
 * read handled at once was: a rename's IN_MOVED_TO may be in the part not
 * handled yet (the kernel queues both halves at once), and a client's
 * records of one read count against its backlog limit together. */
void manager_flush(Manager *m) {
        uint64_t t;

        if (events_backlog(m->events, &t))
                return;
        delivery_flush(m->delivery, now_usec());
        if (m->hooks.after_flush)
                m->hooks.after_flush(m->hooks_userdata);
}

uint64_t manager_next_deadline(const Manager *m) {
        uint64_t t, poll;

        if (events_backlog(m->events, &t))
                return UINT64_MAX; /* the flush after the read's last slice sets it */
        /* A poll due already is the walker's work (manager_has_walks()), not the timer's:
         * a timer in the past would be dispatched before the walker, for ever. */
        poll = remote_next(m->remote);
        t = MIN(delivery_next_deadline(m->delivery), poll > now_usec() ? poll : UINT64_MAX);
        if (m->hooks.next_deadline)
                t = MIN(t, m->hooks.next_deadline(m->hooks_userdata));
        return t;
}

void manager_set_hooks(Manager *m, const ManagerHooks *hooks, void *userdata) {
        m->hooks = hooks ? *hooks : (ManagerHooks) {};
        m->hooks_userdata = userdata;
}

bool manager_run_walks(Manager *m, uint64_t budget_usec) {
        bool more = tree_walks_run(m->tree, budget_usec);

        more = missing_run(m->missing, budget_usec) || more;
        /* Polling is due work of the same kind: bounded, from the walker. */
        if (remote_next(m->remote) <= now_usec())
                more = remote_run(m->remote, budget_usec) || more;
        return more;
}

bool manager_has_walks(const Manager *m) {
        return tree_has_walks(m->tree) || missing_has_work(m->missing) || remote_next(m->remote) <= now_usec();
}

uint32_t manager_subscription_remote_flags(const Manager *m, const Subscription *s) {
        return (remote_subscription_remote(m->remote, s) ? WATCHD_FLAG_REMOTE : 0) |
                (remote_subscription_polled(m->remote, s) ? WATCHD_FLAG_POLLED : 0);
}

int manager_add_watch_opened(Manager *m, Client *c, const char *path, int fd, const struct stat *st,
                             const RemoteHint *hint, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                             TreeWalk **ret_walk) {
        int r;

        remote_set_hint(m->remote, hint);
        r = subscriptions_add_opened(m->subs, c, path, fd, st, mask, flags, ret_id, ret_walk);
        remote_set_hint(m->remote, NULL);
        return r;
}

Client *manager_get_client(Manager *m, const char *name) {
        return subscriptions_get_client(m->subs, name);
}

int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret) {
        return subscriptions_new_client(m->subs, name, caller, ret);
}

void manager_client_gone(Manager *m, Client *c) {
        subscriptions_client_gone(m->subs, c);
}

int manager_add_watch_path(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                           TreeWalk **ret_walk) {
        return subscriptions_add_path(m->subs, c, path, mask, flags, ret_id, ret_walk);
}

int manager_add_watch_fd(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk) {
        return subscriptions_add_fd(m->subs, c, fd, mask, flags, ret_id, ret_walk);
}

int manager_remove_watch(Manager *m, Client *c, uint32_t id) {
        return subscriptions_remove(m->subs, c, id);
}

void manager_get_stats(const Manager *m, ManagerStats *ret) {
        const DeliveryStats *ds = delivery_get_stats(m->delivery);
        const EventsStats *es = events_get_stats(m->events);
        SubscriptionsStats ss;
        SelfEventsStats sel;
        RemoteStats rs;

        remote_get_stats(m->remote, &rs);
        self_events_get_stats(m->self_events, &sel);
        subscriptions_get_stats(m->subs, (uid_t) -1, &ss);
        *ret = (ManagerStats) {
                .clients = ss.clients,
                .users = accounting_n_users(m->accounting),
                .subscriptions = watch_table_n_subscriptions(m->table),
                .kernel_watches = watch_table_n_watches(m->table),
                .events_read = es->events_read,
                .events_delivered = ds->events_delivered,
                .signals_sent = ds->batches_sent,
                .overflows = ds->overflows,
                .kernel_overflows = es->kernel_overflows,
                .events_dropped = ds->events_dropped,
                .pending_events = ss.pending_events,
                .polled_dirs = rs.polled_dirs,
                .poll_syscalls = rs.poll_syscalls,
                .self_events_dropped = sel.dropped,
        };
        if (m->fanotify)
                fanotify_get_stats(m->fanotify, &ret->fanotify);
}

void manager_get_user_stats(const Manager *m, uid_t uid, SubscriptionsStats *ret) {
        subscriptions_get_stats(m->subs, uid, ret);
}

const Config *manager_get_config(const Manager *m) {
        return &m->config;
}

const Backend *manager_get_backend(const Manager *m) {
        return m->backend;
}

const AccountingLimits *manager_get_limits(const Manager *m) {
        return accounting_get_limits(m->accounting);
}

Subscription *manager_get_subscription(Manager *m, uint32_t id) {
        return watch_table_get_subscription(m->table, id);
}

void manager_flush_all(Manager *m) {
        delivery_flush(m->delivery, UINT64_MAX);
}

void manager_set_backend(Manager *m, Backend *backend) {
        m->backend = backend;
}

Missing *manager_get_missing(Manager *m) {
        return m->missing;
}
