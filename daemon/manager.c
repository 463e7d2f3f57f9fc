/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manager - the daemon's core, put together
 *
 * The parts, from the bottom: the backend (the kernel), the watch table
 * (subscriptions and the kernel watches they share), the accounting (the
 * limits), delivery (each client's queue to its transport), the tree
 * follower (RECURSIVE), the missing-path follower (pending paths), the
 * rename follower, the event path on top of them, and the subscriptions'
 * life above all (subscriptions.h). Each lower part asks for what only a
 * part above it can do through callbacks wired here: end a subscription
 * (tree, events, missing, remote), place one whose path appeared (missing),
 * follow one whose object left (events), deliver a polled change (remote),
 * give every client Overflow (events). Nothing below calls up.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "event_bits.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "manager_internal.h"
#include "subscriptions.h"

int waiters_add(GHashTable **table, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        Waiter *w;
        GPtrArray *ws;

        if (!*table)
                *table = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_ptr_array_unref);
        w = malloc(sizeof(Waiter));
        if (!w)
                return -ENOMEM;
        *w = (Waiter) { cb, userdata };
        ws = g_hash_table_lookup(*table, GUINT_TO_POINTER(id));
        if (!ws) {
                ws = g_ptr_array_new_with_free_func(free);
                g_hash_table_insert(*table, GUINT_TO_POINTER(id), ws);
        }
        g_ptr_array_add(ws, w);
        return 1;
}

void waiters_cancel(GHashTable *table, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        GPtrArray *ws = table ? g_hash_table_lookup(table, GUINT_TO_POINTER(id)) : NULL;

        if (!ws)
                return;
        for (guint i = 0; i < ws->len; i++) {
                Waiter *w = g_ptr_array_index(ws, i);

                if (w->cb == cb && w->userdata == userdata) {
                        g_ptr_array_remove_index(ws, i);
                        break;
                }
        }
        if (ws->len == 0)
                g_hash_table_remove(table, GUINT_TO_POINTER(id));
}

GPtrArray *waiters_take(GHashTable *table, uint32_t id) {
        GPtrArray *ws = NULL;

        if (table)
                (void) g_hash_table_steal_extended(table, GUINT_TO_POINTER(id), NULL, (gpointer *) &ws);
        return ws;
}

void waiters_tell(GPtrArray *ws, int r) {
        if (!ws)
                return;
        for (guint i = 0; i < ws->len; i++) {
                Waiter *w = g_ptr_array_index(ws, i);

                w->cb(r, w->userdata);
        }
        g_ptr_array_unref(ws);
}

void waiters_free(GHashTable *table) {
        GHashTableIter i;
        gpointer v;

        if (!table)
                return;
        g_hash_table_iter_init(&i, table);
        while (g_hash_table_iter_next(&i, NULL, &v))
                for (guint k = 0; k < ((GPtrArray *) v)->len; k++) {
                        Waiter *w = g_ptr_array_index((GPtrArray *) v, k);

                        w->cb(-ESHUTDOWN, w->userdata);
                }
        g_hash_table_unref(table);
}

int manager_new(Config *config, Manager **ret) {
        Manager *m;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->config = *config;
        *config = (Config) {};
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        /* Every link goes now: no narrowing of a watch, on the loop or in a worker. */
        if (m->table)
                watch_table_closing(m->table);
        m->events = events_free(m->events);
        /* It points to subscriptions, and tells no one of anything. */
        if (m->subs)
                subscriptions_set_fanotify(m->subs, NULL);
        m->fanotify = fanotify_free(m->fanotify);
        /* Walks, moves, retries and descents hold links: they go before the table. */
        m->tree = tree_free(m->tree);
        m->missing = missing_free(m->missing);
        m->moves = moves_free(m->moves);
        /* Polled directories follow links (and keep fds): after what unlinks, and the table
         * tells no one of what goes after it. */
        if (m->table)
                watch_table_set_ops(m->table, &(WatchTableOps) {}, NULL);
        m->remote = remote_free(m->remote);
        waiters_free(g_steal_pointer(&m->primed_waiters));
        waiters_free(g_steal_pointer(&m->lookup_waiters));
        m->self_events = self_events_free(m->self_events);
        /* Clients before the table's links are freed without being unlinked:
         * their accounts return what is charged. */
        m->subs = subscriptions_free(m->subs);
        /* After the clients (their records waiting) and the chains (their holds). */
        m->holds = holds_free(m->holds);
        m->table = watch_table_free(m->table);
        m->delivery = delivery_free(m->delivery);
        m->accounting = accounting_free(m->accounting);
        m->backend = backend_free(m->backend);
        config_done(&m->config);
        free(m);
        return NULL;
}

static void on_end(Subscription *s, void *userdata) {
        subscriptions_end(((Manager *) userdata)->subs, s);
}

static bool on_may_stop(const WatchLink *l, void *userdata) {
        Manager *m = userdata;

        return m->remote && remote_link_kind(m->remote, l) != FS_LOCAL;
}

static void on_tree_hint(const RemoteHint *hint, void *userdata) {
        Manager *m = userdata;

        if (m->remote)
                remote_set_hint(m->remote, hint);
}

static void on_end_with_notice(Subscription *s, const char *reason, uint64_t now, void *userdata) {
        subscriptions_end_with_notice(((Manager *) userdata)->subs, s, reason, now);
}

static void on_object_gone(Subscription *s, const char *reason, void *userdata) {
        subscriptions_object_gone(((Manager *) userdata)->subs, s, reason);
}

/* A probe outlasted its hold (hold.h): what it waited for may come after later records. */
static void on_hold_lost(uint32_t id, void *userdata) {
        Manager *m = userdata;
        Subscription *s = watch_table_get_subscription(m->table, id);

        if (s && s->owner)
                client_queue_lost(s);
}

static void on_overflow_all(void *userdata) {
        subscriptions_overflow_all(((Manager *) userdata)->subs);
}

/* The missing-path follower found s's path: its own watch now. */
static int on_missing_appeared(Subscription *s, int fd, const struct stat *st, const RemoteHint *hint, void *userdata) {
        Manager *m = userdata;
        int r;

        remote_set_hint(m->remote, hint);
        r = subscriptions_appeared(m->subs, s, fd, st);
        remote_set_hint(m->remote, NULL);
        return r;
}

/* s cannot be followed (something that cannot be watched appeared, a
 * limit): it ends with WatchRemoved "deleted". */
static void on_missing_gone(Subscription *s, int r, void *userdata) {
        Manager *m = userdata;

        log_debug_errno(r, "Pending subscription %" PRIu32 " cannot be followed (%m), ending it.", s->id);
        subscriptions_end_with_notice(m->subs, s, WATCHD_REASON_DELETED, now_usec());
}

/* The look-up of s's pending path in workers (missing_start()) is over:
 * whoever waits for it (an AddWatch's answer) goes on. Failed (r < 0), s
 * ends: with no notice if its AddWatch waits (answered with r), else as a
 * path that cannot be followed. */
static void on_missing_found(uint32_t id, int r, void *userdata) {
        Manager *m = userdata;
        Subscription *s = watch_table_get_subscription(m->table, id);
        GPtrArray *ws = waiters_take(m->lookup_waiters, id);

        if (r < 0 && r != -ECANCELED && s) { /* -ECANCELED: it ends already */
                if (ws) {
                        log_debug_errno(r,
                                        "Pending subscription %" PRIu32 " cannot be followed (%m): its AddWatch "
                                        "is answered so.",
                                        id);
                        subscriptions_end(m->subs, s);
                } else
                        on_missing_gone(s, r, m);
        }
        waiters_tell(ws, r);
}

/* A change found by polling, delivered as the kernel's are. */
static bool on_remote_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                              size_t name_len, uint64_t now, void *userdata) {
        Manager *m = userdata;

        return events_deliver(m->events, s, mask, cookie, dir, name, name_len, now);
}

/* A watched directory's mode, owner or ACL changed: checked again as its owner. */
static void on_access_changed(Subscription *s, WatchLink *l, void *userdata) {
        Manager *m = userdata;

        subscriptions_access_changed(m->subs, m->fswork, s, l);
}

/* s's first snapshots are taken: whoever waited for them (an AddWatch's answer) goes on. */
static void on_remote_primed(Subscription *s, void *userdata) {
        Manager *m = userdata;

        waiters_tell(waiters_take(m->primed_waiters, s->id), 0);
}

/* The polled root of s is gone (the kernel of this machine cannot say so). */
static void on_remote_gone(Subscription *s, void *userdata) {
        subscriptions_end_with_notice(((Manager *) userdata)->subs, s, WATCHD_REASON_DELETED, now_usec());
}

/* What fanotify found for s, delivered as the kernel's records are. */
static bool on_fanotify_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                                size_t name_len, uint64_t now, void *userdata) {
        Manager *m = userdata;

        return events_deliver(m->events, s, mask, cookie, dir, name, name_len, now);
}

static void on_fanotify_lost(Subscription *s, void *userdata) {
        client_queue_lost(s);
}

static Subscription *on_fanotify_get(uint32_t id, void *userdata) {
        return watch_table_get_subscription(((Manager *) userdata)->table, id);
}

/* The tree backend (tree_backend): fanotify where it can serve, if the
 * helper gives a group. */
static int start_fanotify(Manager *m) {
        const char *helper = m->config.fanotify_helper;
        int r;

        if (m->config.tree_backend == TREE_BACKEND_INOTIFY) {
                log_info("RECURSIVE subscriptions are served by inotify (tree_backend = inotify).");
                return 0;
        }
        r = fanotify_new(helper,
                         &(FanotifyOps) {
                                 .deliver = on_fanotify_deliver,
                                 .lost = on_fanotify_lost,
                                 .get = on_fanotify_get,
                         },
                         m, &m->fanotify);
        if (r < 0 && m->config.tree_backend == TREE_BACKEND_FANOTIFY)
                return log_error_errno(r, "tree_backend = fanotify, but the helper at '%s' gave no fanotify group: %m",
                                       helper);
        if (r < 0) {
                log_info_errno(r,
                               "No fanotify group from the helper at '%s' (%m): RECURSIVE subscriptions are "
                               "served by inotify.",
                               helper);
                return 0;
        }
        log_info("RECURSIVE subscriptions are served by fanotify where it can serve (the helper at '%s').", helper);
        subscriptions_set_fanotify(m->subs, m->fanotify);
        return 0;
}

/* The config's limits, each "auto" sized from the kernel's limit read at start. */
static void limits_from_config(const Manager *m, AccountingLimits *ret_accounting, DeliveryLimits *ret_delivery) {
        *ret_accounting = (AccountingLimits) {
                .max_watches_per_client = m->config.max_watches_per_client,
                .max_watches_per_user = m->config.max_watches_per_user,
                .max_watches_unprivileged = m->config.max_watches_unprivileged,
                .max_clients_per_user = m->config.max_clients_per_user,
        };
        accounting_limits_size(ret_accounting, m->kernel_watch_limit);
        *ret_delivery = (DeliveryLimits) {
                .max_pending = m->config.max_pending_events_per_client,
                .max_bytes = m->config.max_pending_bytes_per_client,
                .max_pending_user = m->config.max_pending_events_per_user,
                .max_bytes_user = m->config.max_pending_bytes_per_user,
                .batch_max = m->config.batch_max_events,
                .pair_timeout_usec = (uint64_t) m->config.move_pair_timeout_ms * 1000u,
                .pair_max_distance = m->config.move_pair_max_distance,
        };
}

int manager_start(Manager *m) {
        AccountingLimits al;
        DeliveryLimits dl;
        int r;

        /* A unit test gives a fake (tests/unit/fake-backend.h). */
        if (!m->backend) {
                r = backend_new(m->config.backend, m->config.device, &m->backend);
                if (r < 0) {
                        if (m->config.backend == BACKEND_DEVICE)
                                return log_error_errno(r, "Failed to open '%s': %m", m->config.device);
                        return log_error_errno(r, "Failed to set up the inotify syscalls: %m");
                }
        }
        if (strcmp(backend_name(m->backend), "device") == 0)
                log_info("Using the device backend ('%s').", m->config.device);
        else
                log_info("Using the syscall backend (inotify_init1).");

        r = backend_watch_limit(m->backend, &m->kernel_watch_limit);
        if (r < 0) {
                /* The kernel's own minimum: whatever the kernel allows, no less. */
                m->kernel_watch_limit = 8192;
                log_warning_errno(r, "Failed to read the kernel's watch limit from %s (%m), taking %" PRIu32 ".",
                                  strna(m->backend->limit_path), m->kernel_watch_limit);
        }
        limits_from_config(m, &al, &dl);
        log_info("Watch limits: %" PRIu32 " a client, %" PRIu32 " a user, %" PRIu32 " for all users but root "
                 "(the kernel allows %" PRIu32 ").",
                 al.max_watches_per_client, al.max_watches_per_user, al.max_watches_unprivileged, m->kernel_watch_limit);

        r = accounting_new(&al, &m->accounting);
        if (r >= 0)
                r = delivery_new(&dl, &m->delivery);
        if (r >= 0)
                r = watch_table_new(m->backend, &m->table);
        if (r >= 0)
                r = holds_new(&(HoldsOps) { .lost = on_hold_lost }, m, &m->holds);
        if (r >= 0) {
                r = self_events_new(m->table, m->backend, &m->self_events);
                if (r >= 0)
                        self_events_set_enabled(m->self_events, !m->backend->excludes_self);
        }
        if (r >= 0)
                r = tree_new(m->table, m->backend, m->self_events,
                             &(TreeOps) { .end = on_end, .may_stop = on_may_stop, .hint = on_tree_hint }, m, &m->tree);
        if (r >= 0) {
                tree_set_fswork(m->tree, m->fswork);
                tree_set_holds(m->tree, m->holds);
                watch_table_set_fswork(m->table, m->fswork);
        }
        if (r >= 0)
                r = missing_new(m->table,
                                &(MissingOps) {
                                        .appeared = on_missing_appeared,
                                        .gone = on_missing_gone,
                                        .found = on_missing_found,
                                },
                                m, &m->missing);
        if (r >= 0) {
                missing_set_fswork(m->missing, m->fswork);
                missing_set_holds(m->missing, m->holds);
        }
        if (r >= 0)
                r = moves_new(m->table, &m->moves);
        if (r >= 0)
                r = remote_new(m->table, m->self_events, &m->config, m->fswork,
                               &(RemoteOps) {
                                       .deliver = on_remote_deliver,
                                       .gone = on_remote_gone,
                                       .primed = on_remote_primed,
                               },
                               m, &m->remote);
        if (r >= 0)
                watch_table_set_ops(m->table, &remote_table_ops, m->remote);
        if (r >= 0)
                r = events_new(m->backend, m->table, m->tree, m->missing, m->moves, m->remote, m->self_events,
                               &(EventsOps) {
                                       .end = on_end_with_notice,
                                       .object_gone = on_object_gone,
                                       .overflow_all = on_overflow_all,
                                       .access_changed = on_access_changed,
                               },
                               m, &m->events);
        if (r >= 0)
                events_set_holds(m->events, m->holds);
        if (r >= 0)
                r = subscriptions_new(m->table, m->accounting, m->delivery, m->tree, m->missing, m->events, &m->subs);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the daemon's core: %m");
        return start_fanotify(m);
}

void manager_reload(Manager *m, Config *config) {
        AccountingLimits al;
        DeliveryLimits dl;

        if (config->backend != m->config.backend || strcmp(config->device, m->config.device) != 0)
                log_notice("The backend and device settings take effect at the next start, ignoring their change.");
        config->backend = m->config.backend;
        free(config->device);
        config->device = TAKE_PTR(m->config.device);
        if (config->tree_backend != m->config.tree_backend ||
            strcmp(config->fanotify_helper, m->config.fanotify_helper) != 0)
                log_notice("The tree_backend and fanotify_helper settings take effect at the next start, ignoring "
                           "their change.");
        config->tree_backend = m->config.tree_backend;
        free(config->fanotify_helper);
        config->fanotify_helper = TAKE_PTR(m->config.fanotify_helper);

        config_done(&m->config);
        m->config = *config;
        *config = (Config) {};
        log_set_max_level(m->config.log_level);

        limits_from_config(m, &al, &dl);
        accounting_set_limits(m->accounting, &al);
        delivery_set_limits(m->delivery, &dl);
        remote_reload(m->remote, &m->config);
        subscriptions_reload(m->subs);
}
