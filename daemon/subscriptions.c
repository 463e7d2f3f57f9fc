/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * subscriptions - a subscription's life, and the daemon's decisions about it
 *
 * Ending a subscription takes it out of three places: the missing-path
 * follower if it is pending, its owner's list, and the watch table (its
 * links, and the kernel watches no one needs any more). A notice, when the
 * daemon ends it, is queued before, so that its owner hears it after the
 * subscription's last records.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
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
#include "path.h"
#include "subscriptions.h"

struct Subscriptions {
        WatchTable *table;
        Accounting *accounting;
        Delivery *delivery;
        Tree *tree;
        Missing *missing;
        Events *events;
        Fanotify *fanotify;  /* serves the RECURSIVE trees it can; NULL: inotify only */
        GHashTable *clients; /* name -> Client (owned) */
};

static void client_destroy(gpointer p) {
        client_free(p);
}

int subscriptions_new(WatchTable *table, Accounting *accounting, Delivery *delivery, Tree *tree, Missing *missing,
                      Events *events, Subscriptions **ret) {
        Subscriptions *subs = malloc(sizeof(Subscriptions));

        if (!subs)
                return -ENOMEM;
        *subs = (Subscriptions) {
                .table = table,
                .accounting = accounting,
                .delivery = delivery,
                .tree = tree,
                .missing = missing,
                .events = events,
                .clients = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, client_destroy),
        };
        *ret = subs;
        return 0;
}

void subscriptions_set_fanotify(Subscriptions *subs, Fanotify *f) {
        subs->fanotify = f;
}

Subscriptions *subscriptions_free(Subscriptions *subs) {
        if (!subs)
                return NULL;
        g_hash_table_destroy(subs->clients);
        free(subs);
        return NULL;
}

Client *subscriptions_get_client(Subscriptions *subs, const char *name) {
        return g_hash_table_lookup(subs->clients, name);
}

int subscriptions_new_client(Subscriptions *subs, const char *name, const Caller *caller, Client **ret) {
        Client *c;
        int r;

        r = client_new(subs->accounting, subs->delivery, name, caller, &c);
        if (r < 0)
                return r;
        g_hash_table_insert(subs->clients, c->name, c);
        *ret = c;
        return 0;
}

void subscriptions_client_gone(Subscriptions *subs, Client *c) {
        log_debug("Client %s is gone, ending its %u subscriptions.", c->name, c->n_subscriptions);
        while (c->subscriptions)
                subscriptions_end(subs, c->subscriptions);
        g_hash_table_remove(subs->clients, c->name);
}

void subscriptions_reload(Subscriptions *subs) {
        GHashTableIter i;
        gpointer v;

        g_hash_table_iter_init(&i, subs->clients);
        while (g_hash_table_iter_next(&i, NULL, &v))
                delivery_queue_update(subs->delivery, &((Client *) v)->queue);
}

void subscriptions_overflow_all(Subscriptions *subs) {
        GHashTableIter i;
        gpointer v;

        /* The daemon's own followers lost events too: the pending paths look
         * again, and every RECURSIVE tree is walked again for directories not watched. */
        missing_recheck(subs->missing);
        g_hash_table_iter_init(&i, subs->clients);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Client *c = v;

                LIST_FOREACH(owner, s, c->subscriptions)
                        tree_rescan(subs->tree, s);
                client_queue_lost_all(c);
        }
}

void subscriptions_get_stats(const Subscriptions *subs, uid_t uid, SubscriptionsStats *ret) {
        SubscriptionsStats st = {};
        GHashTableIter i;
        gpointer v;

        g_hash_table_iter_init(&i, subs->clients);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Client *c = v;

                if (uid != (uid_t) -1 && c->account.uid != uid)
                        continue;
                st.clients++;
                st.subscriptions += c->n_subscriptions;
                st.watches += c->account.n_watches;
                st.events_delivered += c->queue.sent;
                st.pending_events += delivery_queue_size(&c->queue);
                st.events_dropped += c->queue.n_dropped;
                st.overflows += c->queue.n_overflows;
        }
        *ret = st;
}

void subscriptions_end(Subscriptions *subs, Subscription *s) {
        if (s->pending)
                missing_remove(subs->missing, s);
        if (s->fanotify && subs->fanotify)
                fanotify_detach(subs->fanotify, s);
        client_unlink_subscription(s->owner, s);
        watch_table_unsubscribe(subs->table, s);
}

void subscriptions_end_with_notice(Subscriptions *subs, Subscription *s, const char *reason, uint64_t now_usec) {
        client_queue_removed(s, reason, now_usec);
        subscriptions_end(subs, s);
}

/*
 * s's object left its path: deleted, unmounted, or renamed away. A
 * subscription ends (WatchRemoved: reason), unless it has PERSIST: then it
 * follows its path, not the object, and is pending on it again as at
 * AddWatch (its ancestors watched, charged to it), placed again with its
 * appearance reported when the path is back, at once if it is there
 * already (an atomic save renamed a new file over it; a mount point whose
 * file system went). It ends only if the path cannot be followed: no
 * directory of it the owner may read, a limit, or what is there now cannot
 * be watched (WatchRemoved "deleted", as for any pending path).
 */
void subscriptions_object_gone(Subscriptions *subs, Subscription *s, const char *reason) {
        if (!(s->flags & WATCHD_FLAG_PERSIST))
                return subscriptions_end_with_notice(subs, s, reason, now_usec());
        log_debug("Subscription %" PRIu32 " lost its object (%s): following '%s' again.", s->id, reason, s->path);
        watch_table_unplace(subs->table, s);
        /* In a worker: its path may be on a file system that stopped answering. */
        missing_follow_again(subs->missing, s, &s->owner->caller);
}

/*
 * "report-appearance" (watchd(8), MISSING PATHS): if s asks for IN_CREATE,
 * the path's appearance is a record of its own, (id, IN_CREATE [|IN_ISDIR],
 * path, ""), before any other record of s, and what a directory already
 * holds follows as IN_CREATE records from a scan, each entry once: so a
 * client sees "mkdir -p D && touch D/f" whole, whatever the race with the
 * placing of the watch. Its tree, with RECURSIVE, is walked like a
 * directory moved in: a limit gives Overflow.
 */
int subscriptions_appeared(Subscriptions *subs, Subscription *s, int fd, const struct stat *st) {
        bool report = s->mask & IN_CREATE;
        uint64_t now = now_usec();
        uint32_t id = s->id;
        int r;

        r = watch_table_link_root(subs->table, s, fd, st);
        if (r < 0)
                return r;
        if (report) {
                (void) events_deliver(subs->events, s, IN_CREATE | (S_ISDIR(st->st_mode) ? IN_ISDIR : 0), 0, s->path,
                                      NULL, 0, now);
                s = watch_table_get_subscription(subs->table, id);
                if (!s)
                        return 0; /* ONESHOT: that was its event */
        }
        if (S_ISDIR(st->st_mode))
                tree_appeared(subs->tree, s, fd, report, now);
        return 0;
}

static int subscribe(Subscriptions *subs, Client *c, int fd, const struct stat *st, const char *path, uint32_t mask,
                     uint32_t flags, const RemoteHint *hint, uint32_t *ret_id, TreeWalk **ret_walk) {
        Subscription *s;
        int r;

        *ret_walk = NULL;
        /* A tree fanotify can serve: its root link only, and the mark. If
         * the filesystem cannot be marked after all, inotify serves it. */
        if ((flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st->st_mode) && subs->fanotify &&
            fanotify_can_serve(subs->fanotify, fd, st, flags, mask, &c->caller, hint)) {
                r = watch_table_subscribe_fanotify(subs->table, fd, st, path, c, &c->account, mask, flags, &s);
                if (r < 0) {
                        fanotify_release_unused(subs->fanotify);
                        return r;
                }
                client_link_subscription(c, s);
                r = fanotify_attach(subs->fanotify, s, fd, &c->caller);
                if (r >= 0) {
                        *ret_id = s->id;
                        return 0;
                }
                log_info_errno(r, "fanotify cannot serve '%s' (%m): inotify serves it.", path);
                subscriptions_end(subs, s);
                fanotify_release_unused(subs->fanotify);
        }

        r = watch_table_subscribe(subs->table, fd, st, path, c, &c->account, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);

        *ret_id = s->id;
        if ((flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st->st_mode)) {
                /* The whole tree, or nothing: a limit met half-way ends s (TreeOps.end),
                 * and a walk that could not start does too. */
                uint32_t id = s->id;

                r = tree_walk_below(subs->tree, s, fd, /* all_or_nothing= */ true, ret_walk);
                if (r < 0) {
                        s = watch_table_get_subscription(subs->table, id);
                        if (s)
                                subscriptions_end(subs, s);
                        return r;
                }
        }
        return 0;
}

static int subscribe_pending(Subscriptions *subs, Client *c, const char *path, uint32_t mask, uint32_t flags,
                             uint32_t *ret_id) {
        Subscription *s;
        int r;

        r = watch_table_subscribe_pending(subs->table, path, c, &c->account, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);
        /* Its id now: if the path appears meanwhile, the appearance may be its
         * ONESHOT event, which ends it (the client hears WatchRemoved). Its
         * look-up runs in workers (missing_start() returns 1): the layer above
         * waits for its outcome (manager_when_looked_up()). */
        *ret_id = s->id;
        r = missing_start(subs->missing, s, &c->caller);
        if (r < 0) {
                subscriptions_end(subs, s);
                return r;
        }
        return 0;
}

int subscriptions_add_path(Subscriptions *subs, Client *c, const char *path_in, uint32_t mask, uint32_t flags,
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
                return subscribe_pending(subs, c, path, mask, flags, ret_id);
        if (fd < 0)
                return fd;
        return subscribe(subs, c, fd, &st, path, mask, flags, NULL, ret_id, ret_walk);
}

int subscriptions_add_opened(Subscriptions *subs, Client *c, const char *path, int fd_in, const struct stat *st,
                             uint32_t mask, uint32_t flags, const RemoteHint *hint, uint32_t *ret_id,
                             TreeWalk **ret_walk) {
        _cleanup_close_ int fd = fd_in;
        int r;

        *ret_walk = NULL;
        /* Checked again: the client may have subscribed meanwhile. */
        r = account_check(&c->account, 1);
        if (r < 0)
                return r;
        if (fd == -ENOENT && !path_has_dotdot(path))
                return subscribe_pending(subs, c, path, mask, flags, ret_id);
        if (fd < 0)
                return fd;
        return subscribe(subs, c, fd, st, path, mask, flags, hint, ret_id, ret_walk);
}

int subscriptions_add_fd(Subscriptions *subs, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        /* PERSIST follows a path; a descriptor names an object. */
        if (flags & WATCHD_FLAG_PERSIST)
                return -EINVAL;
        r = account_check(&c->account, 1);
        if (r < 0)
                return r;
        r = access_check_fd_path(fd, flags & WATCHD_FLAG_ONLYDIR, &st, &path);
        if (r < 0)
                return r;
        return subscribe(subs, c, fd, &st, path, mask, flags, NULL, ret_id, ret_walk);
}

int subscriptions_remove(Subscriptions *subs, Client *c, uint32_t id) {
        Subscription *s = watch_table_get_subscription(subs->table, id);

        if (!s || s->owner != c)
                return -WATCHD_E_NO_SUCH_WATCH;
        subscriptions_end(subs, s);
        return 0;
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
        Subscriptions *subs;
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
        Subscription *s;

        if (error == -ESHUTDOWN) {
                free(a); /* at exit: the tables may be gone */
                return;
        }
        s = watch_table_get_subscription(a->subs->table, a->id);
        Watch *w = s ? watch_table_find_watch(a->subs->table, a->dev, a->ino) : NULL;
        WatchLink *l = NULL;
        int r = error < 0 ? error : a->result;

        /* Not held meanwhile (a rename may move it to a new allocation): found again. */
        if (w)
                LIST_FOREACH(watch, x, w->links)
                        if (watch_link_subscription(x) == s)
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
                        tree_rescan(a->subs->tree, s);
        }
        free(a);
}

void subscriptions_access_changed(Subscriptions *subs, FsWork *fswork, Subscription *s, WatchLink *l) {
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
        *a = (AccessCheck) { .subs = subs, .id = s->id, .dev = l->watch->dev, .ino = l->watch->ino };
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
        if (fswork && fswork_submit(fswork, a->dev, &s->owner->caller, access_check_run, access_check_done, a) >= 0)
                return;
        /* No worker (unit tests, or none could start): here. */
        r = access_become(&s->owner->caller, &saved);
        if (r >= 0) {
                access_check_run(a);
                access_restore(&saved);
        }
        access_check_done(a, r < 0 ? r : 0);
}
