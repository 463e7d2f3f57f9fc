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
#include "subscriptions.h"

/* The kernel's records are handled for at most this long at a time. */
#define KERNEL_SLICE_USEC 5000u

struct Manager {
        Config config;
        uint32_t kernel_watch_limit; /* the kernel's, read at start: "auto" limits are sized from it */

        Backend *backend;
        WatchTable *table;
        Accounting *accounting;
        Delivery *delivery;
        Tree *tree;              /* RECURSIVE subscriptions */
        Missing *missing;        /* pending paths */
        Moves *moves;            /* renamed directories */
        Remote *remote;          /* directories on remote file systems, polled */
        SelfEvents *self_events; /* the daemon's own reads of directories, not reported */
        Events *events;          /* the kernel's records */
        Fanotify *fanotify;      /* RECURSIVE trees on one mark a filesystem; NULL: inotify only */
        Subscriptions *subs;     /* the clients and their subscriptions */

        FsWork *fswork;             /* file system work off the loop; NULL: on it (unit tests) */
        GHashTable *primed_waiters; /* Subscription -> GPtrArray of PrimedWaiter */

        ManagerHooks hooks;
        void *hooks_userdata;
};

typedef struct PrimedWaiter {
        void (*cb)(void *userdata);
        void *userdata;
} PrimedWaiter;

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
        if (m->primed_waiters)
                g_hash_table_unref(m->primed_waiters);
        m->self_events = self_events_free(m->self_events);
        /* Clients before the table's links are freed without being unlinked:
         * their accounts return what is charged. */
        m->subs = subscriptions_free(m->subs);
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

static void on_end_with_notice(Subscription *s, const char *reason, uint64_t now, void *userdata) {
        subscriptions_end_with_notice(((Manager *) userdata)->subs, s, reason, now);
}

static void on_object_gone(Subscription *s, const char *reason, void *userdata) {
        subscriptions_object_gone(((Manager *) userdata)->subs, s, reason);
}

static void on_overflow_all(void *userdata) {
        subscriptions_overflow_all(((Manager *) userdata)->subs);
}

/* The missing-path follower found s's path: its own watch now. */
static int on_missing_appeared(Subscription *s, int fd, const struct stat *st, void *userdata) {
        return subscriptions_appeared(((Manager *) userdata)->subs, s, fd, st);
}

/* s cannot be followed (something that cannot be watched appeared, a
 * limit): it ends with WatchRemoved "deleted". */
static void on_missing_gone(Subscription *s, int r, void *userdata) {
        Manager *m = userdata;

        log_debug_errno(r, "Pending subscription %" PRIu32 " cannot be followed (%m), ending it.", s->id);
        subscriptions_end_with_notice(m->subs, s, WATCHD_REASON_DELETED, now_usec());
}

/* A change found by polling, delivered as the kernel's are. */
static bool on_remote_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                              size_t name_len, uint64_t now, void *userdata) {
        Manager *m = userdata;

        return events_deliver(m->events, s, mask, cookie, dir, name, name_len, now);
}

/*
 * A watched directory's mode, owner or ACL changed: may its subscriber still
 * read it? Checked as the subscriber (in a worker of its file system's lane,
 * like every open as a caller), by its path, as AddWatch checked it. Until
 * the answer, nothing from the directory or below it is delivered
 * (WatchLink.checking); then, if access is gone, nothing more until it comes
 * back (WatchLink.denied). Each change of state is told with an Overflow
 * naming the subscription, and so is an event held back by the check; with
 * access back, a RECURSIVE tree is walked again for what it missed.
 */
typedef struct AccessCheck {
        Manager *m;
        uint32_t id;
        dev_t dev; /* the directory's watch: its link is found again at the end */
        ino_t ino;
        char path[PATH_MAX];
        int result; /* 0: readable, the same directory; -errno */
} AccessCheck;

static void access_check_run(void *data) {
        AccessCheck *a = data;
        struct stat st;
        int fd;

        fd = access_open_at(AT_FDCWD, a->path, /* only_dir= */ true, /* no_follow= */ false, &st);
        if (fd < 0) {
                a->result = fd;
                return;
        }
        safe_close(fd);
        a->result = st.st_dev == a->dev && st.st_ino == a->ino ? 0 : -ESTALE;
}

static void access_check_done(void *data, int error) {
        AccessCheck *a = data;
        Subscription *s = watch_table_get_subscription(a->m->table, a->id);
        Watch *w = s ? watch_table_find_watch(a->m->table, a->dev, a->ino) : NULL;
        WatchLink *l = NULL;
        int r = error < 0 ? error : a->result;

        /* Not held meanwhile (a rename may move it to a new allocation): found again. */
        if (w)
                LIST_FOREACH(watch, x, w->links)
                        if (x->subscription == s)
                                l = x;
        if (l && l->checking) {
                bool was = l->denied;
                bool denied = r == -EACCES || r == -EPERM ? true : r == 0 ? false : was;

                /* Any other answer (the path leads elsewhere: a rename not read yet) keeps what was. */
                watch_link_set_access(l, denied, false);
                if (denied != was)
                        log_info("Subscription %" PRIu32 " of %s: '%s' %s.", s->id, s->owner->name, a->path,
                                 denied ? "may no longer be read by its owner: nothing from there is delivered" :
                                          "may be read by its owner again");
                /* Lost, found again, or records held back while it was checked: the owner looks again. */
                if (denied != was || (s->missed && !denied))
                        client_queue_lost(s);
                if (s->n_blocked == 0)
                        s->missed = false;
                if (was && !denied)
                        tree_rescan(a->m->tree, s);
        }
        free(a);
}

static void on_access_changed(Subscription *s, WatchLink *l, void *userdata) {
        Manager *m = userdata;
        AccessCheck *a;
        AccessSaved saved;
        int r;

        if (!s->owner || l->checking)
                return; /* one check at a time: it reads the state of when it runs */
        a = calloc(1, sizeof(AccessCheck));
        if (!a) {
                log_warning("Out of memory checking subscription %" PRIu32 "'s access again, ignoring.", s->id);
                return;
        }
        *a = (AccessCheck) { .m = m, .id = s->id, .dev = l->watch->dev, .ino = l->watch->ino };
        {
                const char *path = watch_link_get_path(l, a->path); /* a root's is its subscription's */

                if (!path || strlen(path) >= sizeof(a->path)) {
                        free(a);
                        return;
                }
                if (path != a->path)
                        strcpy(a->path, path);
        }
        watch_link_set_access(l, l->denied, true);
        if (m->fswork && fswork_submit(m->fswork, a->dev, &s->owner->caller, access_check_run, access_check_done, a) >= 0)
                return;
        /* No worker (unit tests, or none could start): here. */
        r = access_become(&s->owner->caller, &saved);
        if (r >= 0) {
                access_check_run(a);
                access_restore(&saved);
        }
        access_check_done(a, r < 0 ? r : 0);
}

/* s's first snapshots are taken: whoever waited for them (an AddWatch's answer) goes on. */
static void on_remote_primed(Subscription *s, void *userdata) {
        Manager *m = userdata;
        GPtrArray *ws;

        if (!m->primed_waiters || !g_hash_table_steal_extended(m->primed_waiters, s, NULL, (gpointer *) &ws))
                return;
        for (guint i = 0; i < ws->len; i++) {
                PrimedWaiter *w = g_ptr_array_index(ws, i);

                w->cb(w->userdata);
        }
        g_ptr_array_unref(ws);
}

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
}

FsWork *manager_get_fswork(const Manager *m) {
        return m->fswork;
}

void manager_lane_stalled(Manager *m, dev_t dev, bool stalled) {
        if (m->remote)
                remote_lane_stalled(m->remote, dev, stalled);
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
        if (r >= 0) {
                r = self_events_new(m->table, m->backend, &m->self_events);
                if (r >= 0)
                        self_events_set_enabled(m->self_events, !m->backend->excludes_self);
        }
        if (r >= 0)
                r = tree_new(m->table, m->backend, m->self_events, &(TreeOps) { .end = on_end }, m, &m->tree);
        if (r >= 0)
                r = missing_new(m->table,
                                &(MissingOps) {
                                        .appeared = on_missing_appeared,
                                        .gone = on_missing_gone,
                                },
                                m, &m->missing);
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
