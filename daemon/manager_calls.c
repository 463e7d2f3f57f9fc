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
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "access.h"
#include "error.h"
#include "event_bits.h"
#include "fswork.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "manager_internal.h"
#include "path.h"

int manager_when_primed(Manager *m, Client *c, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        Subscription *s = watch_table_get_subscription(m->table, id);

        if (!s || s->owner != c || !remote_priming(m->remote, s))
                return 0;
        return waiters_add(&m->primed_waiters, id, cb, userdata);
}

void manager_when_primed_cancel(Manager *m, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        waiters_cancel(m->primed_waiters, id, cb, userdata);
}

int manager_when_looked_up(Manager *m, Client *c, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        Subscription *s = watch_table_get_subscription(m->table, id);

        if (!s || s->owner != c || !s->pending || !missing_looking_up(m->missing, s))
                return 0;
        return waiters_add(&m->lookup_waiters, id, cb, userdata);
}

void manager_when_looked_up_cancel(Manager *m, uint32_t id, ManagerWaitFunc cb, void *userdata) {
        waiters_cancel(m->lookup_waiters, id, cb, userdata);
}

void manager_set_fswork(Manager *m, FsWork *w) {
        m->fswork = w;
        if (m->tree)
                tree_set_fswork(m->tree, w);
        if (m->table)
                watch_table_set_fswork(m->table, w);
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

uint64_t manager_read_pause_usec(const Manager *m) {
        return m->config.read_pause_us;
}

int manager_fanotify_fd(const Manager *m) {
        return m->fanotify ? fanotify_fd(m->fanotify) : -1;
}

bool manager_on_fanotify_readable(Manager *m) {
        return fanotify_slice(m->fanotify, KERNEL_SLICE_USEC);
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
        uint64_t t, now;

        if (events_backlog(m->events, &t))
                return;
        now = now_usec();
        /* A probe that outlasted its hold: the records that waited for it go on. */
        holds_expire(m->holds, now);
        /* A directory moved out of its place whose IN_MOVED_TO did not come. */
        tree_expire(m->tree, now);
        delivery_flush(m->delivery, now);
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
        t = MIN(t, holds_next_deadline(m->holds));
        t = MIN(t, tree_next_deadline(m->tree));
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
        r = subscriptions_add_opened(m->subs, c, path, fd, st, mask, flags, hint, ret_id, ret_walk);
        remote_set_hint(m->remote, NULL);
        return r;
}

/*
 * manager_add_watch_path() with its open in a worker: the open of the path
 * as the client, and what remote.c asks of its file system
 * (remote_hint_probe()), in a lane of the client's uid (the file system is
 * not known before the open: one user's opens wait behind each other, no
 * one else's); the rest on the loop, if the client is still there. AddWatch
 * (bus_methods.c) and the durable subscriptions' opens (durable.c) go
 * through it.
 */
struct ManagerOpen {
        Manager *m;
        char *client; /* its name: it may be gone at the end */
        char *path;   /* simplified; by a descriptor: where it points, found in the job */
        uint32_t mask, flags;
        int in_fd; /* AddWatchFd: a copy of the client's descriptor, checked in the job; else -EBADF */
        int fd;    /* or -errno */
        struct stat st;
        RemoteHint hint;
        WatchTable *place;  /* not NULL: the job places the watch, on a file system that may stop answering */
        WatchPlaced placed; /* watch_table.h */
        ManagerOpenDone done;
        void *userdata;
        bool cancelled; /* done is not called: what the open gives is closed unused */
};

static void manager_open_free(ManagerOpen *o) {
        safe_close(o->in_fd);
        safe_close(o->fd);
        free(o->client);
        free(o->path);
        free(o);
}

/* AddWatchFd's checks of the client's descriptor, and the path its records
 * are built from (where it points now). Return: the descriptor, or -errno. */
static int manager_check_fd(ManagerOpen *o) {
        int r = access_check_fd_path(o->in_fd, o->flags & WATCHD_FLAG_ONLYDIR, &o->st, &o->path);

        return r < 0 ? r : TAKE_FD(o->in_fd);
}

static void manager_open_run(void *data) {
        ManagerOpen *o = data;

        if (o->in_fd >= 0)
                o->fd = manager_check_fd(o);
        else
                o->fd = access_open_at(AT_FDCWD, o->path, o->flags & WATCHD_FLAG_ONLYDIR,
                                       o->flags & WATCHD_FLAG_DONT_FOLLOW, &o->st);
        if (o->fd < 0)
                return;
        remote_hint_probe(o->fd, &o->st, &o->hint);
        /* Placing it on the loop would wait for such a file system (watch_table.h). */
        if (o->place && o->hint.valid && o->hint.kind != FS_LOCAL)
                watch_table_place(o->place, o->fd, &o->st,
                                  watch_table_need_mask(o->mask, o->flags, S_ISDIR(o->st.st_mode), /* root= */ true),
                                  &o->placed);
}

/* The loop is done with what the job placed (watch_table.h). */
static void manager_open_placed_done(ManagerOpen *o) {
        if (!o->place)
                return;
        watch_table_placed_done(o->m->table, &o->placed);
        watch_table_placing(o->m->table, false);
}

static void manager_open_done(void *data, int error) {
        ManagerOpen *o = data;
        TreeWalk *walk = NULL;
        uint32_t id = 0;
        Client *c;
        int r;

        if (error == -ESHUTDOWN) {
                /* At exit (fswork_free()): the layers above may be gone. The
                 * owner frees its data, touching nothing else. */
                if (!o->cancelled)
                        o->done(NULL, error, 0, NULL, o->userdata);
                manager_open_free(o);
                return;
        }
        if (o->cancelled) {
                log_debug("Open of %s for %s returned after it was given up (%s), closed unused.", o->path, o->client,
                          error < 0          ? "not run" :
                                  o->fd >= 0 ? "opened" :
                                               "failed");
                manager_open_placed_done(o);
                manager_open_free(o);
                return;
        }
        c = subscriptions_get_client(o->m->subs, o->client);
        if (!c)
                r = -ESRCH; /* gone meanwhile: its subscriptions went with it */
        else if (error < 0)
                r = error;
        else if (o->fd < 0 && !o->path)
                r = o->fd; /* a descriptor refused: no path to be pending at */
        else {
                watch_table_set_placed(o->m->table, &o->placed);
                r = manager_add_watch_opened(o->m, c, o->path, o->fd, &o->st, &o->hint, o->mask, o->flags, &id, &walk);
                watch_table_set_placed(o->m->table, NULL);
                o->fd = -EBADF; /* taken */
                if (r >= 0 && o->placed.lost) {
                        Subscription *s = watch_table_get_subscription(o->m->table, id);

                        if (s)
                                client_queue_lost(s);
                }
        }
        manager_open_placed_done(o);
        o->done(c, r, id, walk, o->userdata);
        manager_open_free(o);
}

/* An open by path: a lane of the caller's uid (the file system is not known
 * before the open: one user's opens wait behind each other, no one else's).
 * A descriptor: its file system's lane, as a walk's; its device asked
 * without a request to the file system (no attribute wanted, none synced:
 * FUSE and NFS answer from the inode). */
static dev_t add_watch_lane(const Client *c, const char *path, int fd) {
        struct statx stx;

        if (!path && statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) == 0)
                return makedev(stx.stx_dev_major, stx.stx_dev_minor);
        return FSWORK_USER_LANE(c->caller.uid);
}

/* path, or fd (path NULL). */
static int add_watch_async(Manager *m, Client *c, const char *path, int fd, uint32_t mask, uint32_t flags,
                           ManagerOpenDone done, void *userdata, ManagerOpen **ret) {
        ManagerOpen *o;
        int r;

        if (!m->fswork)
                return -EOPNOTSUPP;
        o = calloc(1, sizeof(ManagerOpen));
        if (!o)
                return -ENOMEM;
        *o = (ManagerOpen) {
                .m = m,
                .client = strdup(c->name),
                .path = path ? path_simplify(path) : NULL,
                .mask = mask,
                .flags = flags,
                .in_fd = path ? -EBADF : fcntl(fd, F_DUPFD_CLOEXEC, 3),
                .fd = -EBADF,
                .done = done,
                .userdata = userdata,
        };
        if (!path && o->in_fd < 0) {
                r = negative_errno();
                manager_open_free(o);
                return r == -EBADF ? r : -ENOMEM;
        }
        if (!o->client || (path && !o->path)) {
                manager_open_free(o);
                return -ENOMEM;
        }
        o->place = watch_table_can_place(m->table) ? m->table : NULL;
        r = fswork_submit(m->fswork, add_watch_lane(c, path, fd), &c->caller, manager_open_run, manager_open_done, o);
        if (r < 0) {
                manager_open_free(o);
                return r;
        }
        if (o->place)
                watch_table_placing(m->table, true);
        if (ret)
                *ret = o;
        return 1;
}

int manager_add_watch_path_async(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags,
                                 ManagerOpenDone done, void *userdata, ManagerOpen **ret) {
        return add_watch_async(m, c, path, -EBADF, mask, flags, done, userdata, ret);
}

int manager_add_watch_fd_async(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, ManagerOpenDone done,
                               void *userdata, ManagerOpen **ret) {
        /* PERSIST follows a path; a descriptor names an object. */
        if (flags & WATCHD_FLAG_PERSIST)
                return -EINVAL;
        return add_watch_async(m, c, NULL, fd, mask, flags, done, userdata, ret);
}

void manager_add_watch_cancel(ManagerOpen *o) {
        if (o)
                o->cancelled = true;
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
                .kernel_reads = es->kernel_reads,
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
