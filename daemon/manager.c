/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manager - the daemon's core, put together
 *
 * The parts, from the bottom: the backend (the kernel), the watch table
 * (subscriptions and the kernel watches they share), the accounting (the
 * limits), delivery (each client's queue to its transport), the tree
 * follower (RECURSIVE), the missing-path follower (pending paths), the
 * rename follower, and the event path on top of them. Each lower part tells
 * the manager what only it can do through callbacks given here: end a
 * subscription (tree, events, missing), place one whose path appeared
 * (missing), give every client Overflow (events). Nothing below calls up.
 */

#include <errno.h>
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
#include "path.h"

/* The kernel's records are handled for at most this long at a time. */
#define KERNEL_SLICE_USEC 5000u

static void client_destroy(gpointer p) {
        client_free(p);
}

int manager_new(Config *config, const char *config_path, Manager **ret) {
        Manager *m;

        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->config = *config;
        *config = (Config) {};
        m->config_path = strdup(config_path);
        if (!m->config_path) {
                manager_free(m);
                return -ENOMEM;
        }
        m->clients = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, client_destroy);
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->events = events_free(m->events);
        /* It points to subscriptions, and tells no one of anything. */
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
        /* Clients before the table's links are freed without being unlinked:
         * their accounts return what is charged. */
        g_hash_table_destroy(m->clients);
        m->table = watch_table_free(m->table);
        m->delivery = delivery_free(m->delivery);
        m->accounting = accounting_free(m->accounting);
        m->backend = backend_free(m->backend);
        config_done(&m->config);
        free(m->config_path);
        free(m);
        return NULL;
}

/* Ends s: no notice is queued (the caller queues one if the daemon ended it). */
static void subscription_end(Manager *m, Subscription *s) {
        if (s->pending)
                missing_remove(m->missing, s);
        if (s->fanotify)
                fanotify_detach(m->fanotify, s);
        client_unlink_subscription(s->owner, s);
        watch_table_unsubscribe(m->table, s);
}

/* The daemon ends s by itself, and tells its owner why. */
static void end_with_notice(Manager *m, Subscription *s, const char *reason) {
        Record *rec = record_new(RECORD_REMOVED, s->id, 0, 0, now_usec(), NULL, NULL, 0);

        if (rec)
                rec->reason = reason;
        delivery_submit(m->delivery, &s->owner->queue, rec);
        subscription_end(m, s);
}

static void on_end(Subscription *s, void *userdata) {
        subscription_end(userdata, s);
}

void manager_client_lost_all(Manager *m, Client *c) {
        g_autofree uint32_t *ids = NULL;
        size_t n = 0;

        if (c->n_subscriptions == 0)
                return;
        ids = calloc(c->n_subscriptions, sizeof(uint32_t));
        if (!ids) {
                log_warning("Out of memory queueing Overflow for %s, ignoring.", c->name);
                return;
        }
        LIST_FOREACH(owner, s, c->subscriptions)
                ids[n++] = s->id;
        delivery_lost_all(m->delivery, &c->queue, ids, n);
}

static void on_overflow_all(void *userdata) {
        Manager *m = userdata;
        GHashTableIter i;
        gpointer v;

        /* The daemon's own followers lost events too: the pending paths look
         * again, and every RECURSIVE tree is walked again for directories not watched. */
        missing_recheck(m->missing);
        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Client *c = v;

                LIST_FOREACH(owner, s, c->subscriptions)
                        tree_rescan(m->tree, s);
                manager_client_lost_all(m, c);
        }
}

/*
 * The missing-path follower found s's path (missing.h): its own watch now.
 * "report-appearance" (watchd(8), MISSING PATHS): if s asks for IN_CREATE,
 * the path's appearance is a record of its own, (id, IN_CREATE [|IN_ISDIR],
 * path, ""), before any other record of s, and what a directory already
 * holds follows as IN_CREATE records from a scan, each entry once: so a
 * client sees "mkdir -p D && touch D/f" whole, whatever the race with the
 * placing of the watch. Its tree, with RECURSIVE, is walked like a
 * directory moved in: a limit gives Overflow.
 */
static int on_missing_appeared(Subscription *s, int fd, const struct stat *st, void *userdata) {
        Manager *m = userdata;
        bool report = s->mask & IN_CREATE;
        uint64_t now = now_usec();
        uint32_t id = s->id;
        int r;

        r = watch_table_link_root(m->table, s, fd, st);
        if (r < 0)
                return r;
        if (report) {
                (void) events_deliver(m->events, s, IN_CREATE | (S_ISDIR(st->st_mode) ? IN_ISDIR : 0), 0, s->path,
                                      NULL, 0, now);
                s = watch_table_get_subscription(m->table, id);
                if (!s)
                        return 0;       /* ONESHOT: that was its event */
        }
        if (S_ISDIR(st->st_mode))
                tree_appeared(m->tree, s, fd, report, now);
        return 0;
}

/* s cannot be followed (something that cannot be watched appeared, a
 * limit): it ends with WatchRemoved "deleted". */
static void on_missing_gone(Subscription *s, int r, void *userdata) {
        log_debug_errno(r, "Pending subscription %" PRIu32 " cannot be followed (%m), ending it.", s->id);
        end_with_notice(userdata, s, WATCHD_REASON_DELETED);
}

/*
 * s's object left its path (EventsOps.object_gone): deleted, unmounted, or
 * renamed away. A subscription ends (WatchRemoved: reason), unless it has
 * PERSIST: then it follows its path, not the object, and is pending on it
 * again as at AddWatch (its ancestors watched, charged to it), placed again
 * with its appearance reported when the path is back, at once if it is
 * there already (an atomic save renamed a new file over it; a mount point
 * whose file system went). It ends only if the path cannot be followed: no
 * directory of it the owner may read, a limit, or what is there now cannot
 * be watched (WatchRemoved "deleted", as for any pending path).
 */
static void on_object_gone(Subscription *s, const char *reason, void *userdata) {
        Manager *m = userdata;
        uint32_t id = s->id;
        int r;

        if (!(s->flags & WATCHD_FLAG_PERSIST))
                return end_with_notice(m, s, reason);
        log_debug("Subscription %" PRIu32 " lost its object (%s): following '%s' again.", id, reason, s->path);
        watch_table_unplace(m->table, s);
        r = missing_add(m->missing, s, &s->owner->caller);
        if (r >= 0)
                return;
        log_debug_errno(r, "Subscription %" PRIu32 " cannot follow its path again (%m), ending it.", id);
        /* Placed and ended meanwhile (ONESHOT on its appearance)? Then it is gone already. */
        s = watch_table_get_subscription(m->table, id);
        if (s)
                end_with_notice(m, s, WATCHD_REASON_DELETED);
}

/* A change found by polling, delivered as the kernel's are. */
static bool on_remote_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                              size_t name_len, uint64_t now, void *userdata) {
        Manager *m = userdata;

        return events_deliver(m->events, s, mask, cookie, dir, name, name_len, now);
}

/* The polled root of s is gone (the kernel of this machine cannot say so). */
static void on_remote_gone(Subscription *s, void *userdata) {
        Manager *m = userdata;
        Record *rec = record_new(RECORD_REMOVED, s->id, 0, 0, now_usec(), NULL, NULL, 0);

        if (rec)
                rec->reason = WATCHD_REASON_DELETED;
        delivery_submit(m->delivery, &s->owner->queue, rec);
        subscription_end(m, s);
}

/* What fanotify found for s, delivered as the kernel's records are. */
static bool on_fanotify_deliver(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                                size_t name_len, uint64_t now, void *userdata) {
        Manager *m = userdata;

        return events_deliver(m->events, s, mask, cookie, dir, name, name_len, now);
}

static void on_fanotify_lost(Subscription *s, void *userdata) {
        Manager *m = userdata;

        delivery_lost(m->delivery, &s->owner->queue, s->id);
}

static Subscription *on_fanotify_get(uint32_t id, void *userdata) {
        Manager *m = userdata;

        return watch_table_get_subscription(m->table, id);
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
        r = fanotify_new(helper, &(FanotifyOps) {
                                 .deliver = on_fanotify_deliver,
                                 .lost = on_fanotify_lost,
                                 .get = on_fanotify_get,
                         }, m, &m->fanotify);
        if (r < 0 && m->config.tree_backend == TREE_BACKEND_FANOTIFY)
                return log_error_errno(r, "tree_backend = fanotify, but the helper at '%s' gave no fanotify group: %m",
                                       helper);
        if (r < 0)
                log_info_errno(r, "No fanotify group from the helper at '%s' (%m): RECURSIVE subscriptions are "
                               "served by inotify.", helper);
        else
                log_info("RECURSIVE subscriptions are served by fanotify where it can serve (the helper at '%s').",
                         helper);
        return 0;
}

static int on_link_added(WatchLink *l, int fd, const struct stat *st, void *userdata) {
        Manager *m = userdata;

        return remote_link_added(m->remote, l, fd, st);
}

static void on_link_gone(WatchLink *l, void *userdata) {
        Manager *m = userdata;

        remote_link_gone(m->remote, l);
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
                 "(the kernel allows %" PRIu32 ").", al.max_watches_per_client, al.max_watches_per_user,
                 al.max_watches_unprivileged, m->kernel_watch_limit);

        r = accounting_new(&al, &m->accounting);
        if (r >= 0)
                r = delivery_new(&dl, &m->delivery);
        if (r >= 0)
                r = watch_table_new(m->backend, &m->table);
        if (r >= 0)
                r = tree_new(m->table, m->backend, m->delivery, &(TreeOps) { .end = on_end }, m, &m->tree);
        if (r >= 0)
                r = missing_new(m->table, &(MissingOps) {
                                        .appeared = on_missing_appeared,
                                        .gone = on_missing_gone,
                                }, m, &m->missing);
        if (r >= 0)
                r = moves_new(m->table, &m->moves);
        if (r >= 0)
                r = remote_new(m->table, m->delivery, &m->config, &(RemoteOps) {
                                       .deliver = on_remote_deliver,
                                       .gone = on_remote_gone,
                               }, m, &m->remote);
        if (r >= 0)
                watch_table_set_ops(m->table, &(WatchTableOps) {
                                            .link_added = on_link_added,
                                            .link_gone = on_link_gone,
                                    }, m);
        if (r >= 0)
                r = events_new(m->backend, m->table, m->delivery, m->tree, m->missing, m->moves, m->remote,
                               &(EventsOps) {
                                       .end = on_end,
                                       .object_gone = on_object_gone,
                                       .overflow_all = on_overflow_all,
                               }, m, &m->events);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the daemon's core: %m");
        return start_fanotify(m);
}

void manager_reload(Manager *m, Config *config) {
        AccountingLimits al;
        DeliveryLimits dl;
        GHashTableIter i;
        gpointer v;

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
        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v))
                delivery_queue_update(m->delivery, &((Client *) v)->queue);
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
                return UINT64_MAX;      /* the flush after the read's last slice sets it */
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

Client *manager_get_client(Manager *m, const char *name) {
        return g_hash_table_lookup(m->clients, name);
}

int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret) {
        Client *c;
        int r;

        r = client_new(m->accounting, m->delivery, name, caller, &c);
        if (r < 0)
                return r;
        g_hash_table_insert(m->clients, c->name, c);
        *ret = c;
        return 0;
}

void manager_client_gone(Manager *m, Client *c) {
        log_debug("Client %s is gone, ending its %u subscriptions.", c->name, c->n_subscriptions);
        while (c->subscriptions)
                subscription_end(m, c->subscriptions);
        g_hash_table_remove(m->clients, c->name);
}

static int subscribe(Manager *m, Client *c, int fd, const struct stat *st, const char *path,
                     uint32_t mask, uint32_t flags, uint32_t *ret_id, TreeWalk **ret_walk) {
        Subscription *s;
        int r;

        *ret_walk = NULL;
        /* A tree fanotify can serve: its root link only, and the mark. If
         * the filesystem cannot be marked after all, inotify serves it. */
        if ((flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st->st_mode) && m->fanotify &&
            fanotify_can_serve(m->fanotify, fd, st, flags, mask, &c->caller)) {
                r = watch_table_subscribe_fanotify(m->table, fd, st, path, c, &c->account, mask, flags, &s);
                if (r < 0) {
                        fanotify_release_unused(m->fanotify);
                        return r;
                }
                client_link_subscription(c, s);
                r = fanotify_attach(m->fanotify, s, fd, &c->caller);
                if (r >= 0) {
                        *ret_id = s->id;
                        return 0;
                }
                log_info_errno(r, "fanotify cannot serve '%s' (%m): inotify serves it.", path);
                subscription_end(m, s);
                fanotify_release_unused(m->fanotify);
        }

        r = watch_table_subscribe(m->table, fd, st, path, c, &c->account, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);

        *ret_id = s->id;
        if ((flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st->st_mode)) {
                /* The whole tree, or nothing: a limit met half-way ends s (TreeOps.end),
                 * and a walk that could not start does too. */
                uint32_t id = s->id;

                r = tree_walk_below(m->tree, s, fd, /* all_or_nothing= */ true, ret_walk);
                if (r < 0) {
                        s = watch_table_get_subscription(m->table, id);
                        if (s)
                                subscription_end(m, s);
                        return r;
                }
        }
        return 0;
}

static int subscribe_pending(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags,
                             uint32_t *ret_id) {
        Subscription *s;
        int r;

        r = watch_table_subscribe_pending(m->table, path, c, &c->account, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);
        /* Its id now: if the path appears meanwhile, the appearance may be its
         * ONESHOT event, which ends it (the client hears WatchRemoved). */
        *ret_id = s->id;
        r = missing_add(m->missing, s, &c->caller);
        if (r < 0) {
                subscription_end(m, s);
                return r;
        }
        return 0;
}

int manager_add_watch_path(Manager *m, Client *c, const char *path_in, uint32_t mask, uint32_t flags,
                           uint32_t *ret_id, TreeWalk **ret_walk) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        /* The limits first: a client over them costs no open(). */
        r = account_check(&c->account, 1);
        if (r < 0)
                return r;

        path = path_simplify(path_in);
        if (!path)
                return -ENOMEM;
        fd = access_open_as(&c->caller, path, flags & WATCHD_FLAG_ONLYDIR, flags & WATCHD_FLAG_DONT_FOLLOW, &st);
        /* Not there yet: pending on its deepest existing directory. With "..",
         * which the kernel resolves, there is no such directory to name. */
        *ret_walk = NULL;
        if (fd == -ENOENT && !path_has_dotdot(path))
                return subscribe_pending(m, c, path, mask, flags, ret_id);
        if (fd < 0)
                return fd;
        return subscribe(m, c, fd, &st, path, mask, flags, ret_id, ret_walk);
}

int manager_add_watch_fd(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk) {
        char proc[sizeof("/proc/self/fd/") + 12], path[PATH_MAX];
        struct stat st;
        ssize_t n;
        int r;

        /* PERSIST follows a path; a descriptor names an object. */
        if (flags & WATCHD_FLAG_PERSIST)
                return -EINVAL;
        r = account_check(&c->account, 1);
        if (r < 0)
                return r;
        r = access_check_fd(fd, &st);
        if (r < 0)
                return r;
        if ((flags & WATCHD_FLAG_ONLYDIR) && !S_ISDIR(st.st_mode))
                return -ENOTDIR;

        /* The path records are built from: where the fd points now. */
        snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
        n = readlink(proc, path, sizeof(path) - 1);
        if (n < 0)
                return negative_errno();
        path[n] = '\0';
        if (path[0] != '/')
                return -WATCHD_E_NOT_WATCHABLE;        /* not in the filesystem tree (pipe:, anon_inode:...) */

        return subscribe(m, c, fd, &st, path, mask, flags, ret_id, ret_walk);
}

int manager_remove_watch(Manager *m, Client *c, uint32_t id) {
        Subscription *s = watch_table_get_subscription(m->table, id);

        if (!s || s->owner != c)
                return -WATCHD_E_NO_SUCH_WATCH;
        subscription_end(m, s);
        return 0;
}

void manager_get_stats(const Manager *m, ManagerStats *ret) {
        const DeliveryStats *ds = delivery_get_stats(m->delivery);
        const EventsStats *es = events_get_stats(m->events);
        GHashTableIter i;
        gpointer v;
        uint64_t pending = 0;
        RemoteStats rs;

        remote_get_stats(m->remote, &rs);
        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v))
                pending += delivery_queue_size(&((Client *) v)->queue);
        *ret = (ManagerStats) {
                .clients = g_hash_table_size(m->clients),
                .users = accounting_n_users(m->accounting),
                .subscriptions = watch_table_n_subscriptions(m->table),
                .kernel_watches = watch_table_n_watches(m->table),
                .events_read = es->events_read,
                .events_delivered = ds->events_delivered,
                .signals_sent = ds->batches_sent,
                .overflows = ds->overflows,
                .kernel_overflows = es->kernel_overflows,
                .events_dropped = ds->events_dropped,
                .pending_events = pending,
                .polled_dirs = rs.polled_dirs,
                .poll_syscalls = rs.poll_syscalls,
        };
        if (m->fanotify)
                fanotify_get_stats(m->fanotify, &ret->fanotify);
}
