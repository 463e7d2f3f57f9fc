/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events - the kernel's records, to the subscriptions they are for
 *
 * The walk over a watch's links may not change them: what an event makes
 * the followers do (a tree grows or moves, a chain of pending paths is
 * followed, a ONESHOT subscription ends) is collected as follow-ups during
 * the walk and done after it, each subscription looked up again by its id
 * (it may have ended meanwhile), each chain link held.
 */

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "client.h"
#include "event_bits.h"
#include "events.h"
#include "log.h"
#include "macro.h"
#include "path.h"

#define KERNEL_READ_BUF (64u * 1024u)
/* The longest record the kernel queues: its header and a name of NAME_MAX bytes, NUL-padded. */
#define KERNEL_RECORD_MAX (EVENT_HEADER_SIZE + NAME_MAX + 1)

/* Work an event leaves for after the walk over the watch's links. */
typedef struct Followup {
        enum {
                FOLLOW_ONESHOT,         /* its first record went: it ends */
                FOLLOW_TREE_ADD_NEW,    /* a directory was created in a RECURSIVE tree */
                FOLLOW_TREE_MOVED_FROM, /* a directory was moved out of its place in it */
                FOLLOW_TREE_MOVED_TO,   /* a directory was moved in (from it, or from elsewhere) */
                FOLLOW_CHAIN,           /* an event on a directory of pending paths */
                FOLLOW_MOVED_SELF,      /* PERSIST: the kernel's IN_MOVE_SELF went, it follows its path */
                FOLLOW_MOVED_AWAY,      /* PERSIST: its object was renamed away (its parent's watch saw it) */
                FOLLOW_ACCESS,          /* its directory's mode, owner or ACL changed: access checked again */
        } what;
        uint32_t id; /* the subscription, looked up again */
        uint32_t cookie;
        char *path;
        WatchLink *link; /* FOLLOW_CHAIN, FOLLOW_ACCESS: held */
} Followup;

struct Events {
        Backend *backend;
        WatchTable *table;
        Tree *tree;
        Missing *missing;
        Moves *moves;
        Remote *remote;
        SelfEvents *self;
        Holds *holds; /* NULL: no records wait for probes */
        EventsOps ops;
        void *userdata;
        EventsStats stats;

        uint8_t *buf; /* the last read: buf[off, len) not handled yet */
        size_t off, len;
        uint64_t read_time; /* when it was read: the time of its records */
        bool drained;       /* that read found the queue empty (it was short) */

        GArray *followups; /* Followup, of the record being handled */
        GArray *left;      /* uint32_t: PERSIST subscriptions a rename took the object of */
        bool in_event;
};

int events_new(Backend *backend, WatchTable *table, Tree *tree, Missing *missing, Moves *moves, Remote *remote,
               SelfEvents *self, const EventsOps *ops, void *userdata, Events **ret) {
        Events *e = calloc(1, sizeof(Events));

        if (!e)
                return -ENOMEM;
        *e = (Events) {
                .backend = backend,
                .table = table,
                .tree = tree,
                .missing = missing,
                .moves = moves,
                .remote = remote,
                .self = self,
                .ops = *ops,
                .userdata = userdata,
                .buf = malloc(KERNEL_READ_BUF),
                .followups = g_array_new(FALSE, FALSE, sizeof(Followup)),
                .left = g_array_new(FALSE, FALSE, sizeof(uint32_t)),
        };
        if (!e->buf) {
                events_free(e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

Events *events_free(Events *e) {
        if (!e)
                return NULL;
        g_array_unref(e->followups);
        g_array_unref(e->left);
        free(e->buf);
        free(e);
        return NULL;
}

void events_set_holds(Events *e, Holds *holds) {
        e->holds = holds;
}

bool events_backlog(const Events *e, uint64_t *ret_read_time) {
        if (e->off >= e->len)
                return false;
        *ret_read_time = e->read_time;
        return true;
}

const EventsStats *events_get_stats(const Events *e) {
        return &e->stats;
}

static void followup_add(Events *e, int what, uint32_t id, uint32_t cookie, char *path, WatchLink *link) {
        g_array_append_val(e->followups, ((Followup) { what, id, cookie, path, link }));
}

/* The events s gets: its mask, and IN_MOVE_SELF for a PERSIST subscription
 * that asks for IN_DELETE_SELF (its object left its path either way). */
static uint32_t wanted(const Subscription *s) {
        uint32_t m = s->mask & WATCHD_MASK_VALID;

        if ((s->flags & WATCHD_FLAG_PERSIST) && (m & IN_DELETE_SELF))
                m |= IN_MOVE_SELF;
        return m;
}

bool events_deliver(Events *e, Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                    size_t name_len, uint64_t now_usec) {
        /* What a walk's job out in this directory must know, whatever s wants. */
        tree_unread_note(e->tree, s, dir, mask, name, name_len);
        /* IN_UNMOUNT reaches every subscriber, as the kernel sends it to every watch. */
        if (!(mask & wanted(s)) && !(mask & IN_UNMOUNT))
                return false;
        if (tree_scanned_check(e->tree, s, dir, mask, name, name_len))
                return false;
        /* A record that sets off a pending path's probe: what its hearers get
         * after it waits for what the probe finds (hold.h), as it did inline. */
        if (e->holds && holds_get_trigger(e->holds))
                client_hold(s->owner, holds_get_trigger(e->holds));
        /* A record read before the chain that will find its path linked its
         * directory: its hearers wait for that chain's probes too. */
        if (e->holds && name && (mask & WATCH_PENDING_BITS))
                missing_hold_hearer(e->missing, s->owner, dir, name, name_len);
        client_queue_event(s, mask, cookie, dir, name, name_len, now_usec);
        /* ONESHOT is the daemon's (an older device has none, and a shared kernel
         * watch must outlive one subscriber's first event). */
        if (s->flags & WATCHD_FLAG_ONESHOT) {
                if (e->in_event)
                        followup_add(e, FOLLOW_ONESHOT, s->id, 0, NULL, NULL);
                else
                        e->ops.end(s, WATCHD_REASON_ONESHOT, now_usec, e->userdata);
        }
        return true;
}

/* The kernel removed a watch (deleted, unmounted): subscriptions rooted on
 * it have lost their object, which the layer above decides about
 * (ops.object_gone: they end and hear why, or, PERSIST, follow their path
 * again); directories below a RECURSIVE root just drop out (their parent
 * already reported the deletion); a directory of pending paths is the
 * missing-path follower's. */
static void watch_ignored(Events *e, Watch *w, uint64_t now) {
        const char *reason = w->unmounted ? WATCHD_REASON_UNMOUNTED : WATCHD_REASON_DELETED;
        g_autoptr(GPtrArray) links = g_ptr_array_new();

        /* Ending one link can end others of w (the follower cuts a chain below
         * a link, and one directory may be on it twice); the last frees w.
         * So: hold them all, and look at w no more. */
        LIST_FOREACH(watch, l, w->links) {
                watch_link_hold(l);
                g_ptr_array_add(links, l);
        }
        watch_table_watch_gone(e->table, w);
        for (guint k = 0; k < links->len; k++) {
                WatchLink *l = links->pdata[k];
                Subscription *s = watch_link_subscription(l);

                if (l->dead)
                        ;
                else if (s->chain)
                        missing_on_watch_gone(e->missing, l);
                else if (!watch_link_is_root(l))
                        (void) watch_table_unlink(e->table, l);
                else
                        e->ops.object_gone(s, reason, e->userdata);
                watch_link_release(l);
        }
}

static void run_followups(Events *e, const RawEvent *ev, uint64_t now) {
        if (e->followups->len == 0)
                return;
        for (guint k = 0; k < e->followups->len; k++) {
                Followup *f = &g_array_index(e->followups, Followup, k);
                Subscription *s = f->what == FOLLOW_CHAIN ? NULL : watch_table_get_subscription(e->table, f->id);

                switch (f->what) {
                case FOLLOW_CHAIN:
                        if (!f->link->dead)
                                missing_on_event(e->missing, f->link, ev->mask, ev->name, ev->name_len);
                        watch_link_release(f->link);
                        break;
                case FOLLOW_ACCESS:
                        if (s && !f->link->dead && e->ops.access_changed)
                                e->ops.access_changed(s, f->link, e->userdata);
                        watch_link_release(f->link);
                        break;
                case FOLLOW_ONESHOT:
                        if (s)
                                e->ops.end(s, WATCHD_REASON_ONESHOT, now, e->userdata);
                        break;
                case FOLLOW_TREE_ADD_NEW:
                        if (s)
                                tree_add(e->tree, s, f->path, /* synthesize= */ true, now);
                        break;
                case FOLLOW_TREE_MOVED_FROM:
                        if (s)
                                tree_moved_from(e->tree, s, f->path, f->cookie);
                        break;
                case FOLLOW_TREE_MOVED_TO:
                        if (s)
                                tree_moved_to(e->tree, s, f->path, f->cookie, now);
                        break;
                case FOLLOW_MOVED_AWAY:
                case FOLLOW_MOVED_SELF:
                        if (!s || s->pending)
                                break; /* ended, or followed again already (named twice) */
                        if (f->what == FOLLOW_MOVED_AWAY) {
                                /* The kernel's IN_MOVE_SELF comes after the rename's two
                                 * halves, and not at all on an older device: the record is
                                 * made here, as the kernel makes it (no IN_ISDIR). */
                                (void) events_deliver(e, s, IN_MOVE_SELF, 0, s->path, NULL, 0, now);
                                s = watch_table_get_subscription(e->table, f->id); /* ONESHOT */
                        }
                        if (s)
                                e->ops.object_gone(s, WATCHD_REASON_DELETED, e->userdata);
                        break;
                }
                free(f->path);
        }
        g_array_set_size(e->followups, 0);
}

static void handle_event(Events *e, const RawEvent *ev, size_t off, uint64_t now) {
        _cleanup_(hold_unrefp) Hold *trigger = NULL;
        char buf[PATH_MAX];
        Watch *w;

        e->stats.events_read++;

        /* The daemon's own read of a directory (a scan, a poll): not an
         * event of anyone's, nor a record between two others. */
        if (self_events_check(e->self, ev, off))
                return;

        /* A directory moved out of its place in a tree is moved within it
         * only if the very next record is its IN_MOVED_TO. */
        if (!((ev->mask & IN_MOVED_TO) && tree_moves_pending(e->tree, ev->cookie)))
                tree_moves_end(e->tree);

        if (ev->mask & IN_Q_OVERFLOW) {
                e->stats.kernel_overflows++;
                log_warning("The kernel's event queue overflowed: every client gets Overflow.");
                e->ops.overflow_all(e->userdata);
                return;
        }

        w = watch_table_get_watch(e->table, ev->wd);
        if (!w)
                return; /* a watch we have released; its last records still trickle in */
        if (ev->mask & IN_IGNORED)
                return watch_ignored(e, w, now);
        /* A worker's read of a polled directory: nobody's event either. */
        if (remote_own_read(e->remote, w, ev))
                return;
        /* What the kernel reported, the poller does not report again. */
        remote_on_event(e->remote, w, ev);
        if (ev->mask & IN_UNMOUNT)
                w->unmounted = true;
        moves_on_event(e->moves, w, ev, e->left);
        if (e->left->len > 0) {
                for (guint k = 0; k < e->left->len; k++)
                        followup_add(e, FOLLOW_MOVED_AWAY, g_array_index(e->left, uint32_t, k), 0, NULL, NULL);
                g_array_set_size(e->left, 0);
        }

        /* A name that comes or goes in a directory of pending paths, whose
         * probe runs in a worker: the record's hearers are held for it. */
        if (e->holds && ev->name && (ev->mask & WATCH_PENDING_BITS) && missing_in_workers(e->missing))
                LIST_FOREACH(watch, l, w->links)
                        if (watch_link_subscription(l)->chain) {
                                trigger = hold_new(e->holds, now);
                                break;
                        }
        if (trigger)
                holds_set_trigger(e->holds, trigger);

        e->in_event = true;
        LIST_FOREACH(watch, l, w->links) {
                Subscription *s = watch_link_subscription(l);
                bool tree = (s->flags & WATCHD_FLAG_RECURSIVE) && ev->name && (ev->mask & IN_ISDIR);
                const char *dir;

                /* A directory of pending paths: nothing is delivered, the follower looks. */
                if (s->chain) {
                        if (ev->name && (ev->mask & WATCH_PENDING_BITS)) {
                                watch_link_hold(l);
                                followup_add(e, FOLLOW_CHAIN, 0, 0, NULL, l);
                        }
                        continue;
                }

                /* The directory's mode, owner or ACL changed: who may read it is
                 * checked again (a directory found closed too: it may be open again). */
                if ((ev->mask & IN_ATTRIB) && !ev->name && w->is_dir) {
                        watch_link_hold(l);
                        followup_add(e, FOLLOW_ACCESS, s->id, 0, NULL, l);
                }
                /* Its owner may no longer read there (or is being checked): nothing from it. */
                if (watch_link_blocked(l, s)) {
                        s->missed = true;
                        continue;
                }
                dir = watch_link_get_path(l, buf);
                if (!dir) {
                        client_queue_lost(s); /* deeper than PATH_MAX */
                        continue;
                }
                /* A directory below a RECURSIVE root: what happens to the
                 * directory itself is reported by its parent's link. */
                if (!watch_link_is_root(l) && !ev->name && !(ev->mask & IN_UNMOUNT))
                        continue;
                /* A tree fanotify follows: what happens in the root, and to
                 * it, comes from there; only what the mark does not report
                 * comes here (another subscription may have widened the watch). */
                if (s->fanotify && (ev->name || !(ev->mask & (WATCH_FANOTIFY_ROOT_BITS | IN_UNMOUNT))))
                        continue;
                if (events_deliver(e, s, ev->mask, ev->cookie, dir, ev->name, ev->name_len, now) &&
                    (s->flags & WATCHD_FLAG_ONESHOT))
                        continue;
                /* The syscalls' IN_MOVE_SELF (a PERSIST root asks for it): its
                 * object was renamed, away from its path. */
                if ((ev->mask & IN_MOVE_SELF) && !ev->name && (s->flags & WATCHD_FLAG_PERSIST) && watch_link_is_root(l))
                        followup_add(e, FOLLOW_MOVED_SELF, s->id, 0, NULL, NULL);

                if (tree && (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM))) {
                        char *path = path_join(dir, ev->name, ev->name_len);

                        if (!path) {
                                client_queue_lost(s);
                                continue;
                        }
                        followup_add(e,
                                     ev->mask & IN_MOVED_FROM     ? FOLLOW_TREE_MOVED_FROM :
                                             ev->mask & IN_CREATE ? FOLLOW_TREE_ADD_NEW :
                                                                    FOLLOW_TREE_MOVED_TO,
                                     s->id, ev->cookie, path, NULL);
                }
        }
        e->in_event = false;
        /* What the probes find goes after this record, which waits with them. */
        if (trigger)
                hold_mark(trigger);
        run_followups(e, ev, now);
        if (trigger)
                holds_set_trigger(e->holds, NULL); /* the probes it set off took their references */

        /* Its IN_MOVED_TO was this record: what it did not take into a tree
         * left it, and the new directories whose parent's path it made stale
         * are scanned now. */
        if (ev->mask & IN_MOVED_TO) {
                tree_moves_end(e->tree);
                tree_retries_try(e->tree);
        }
}

void events_read_again(Events *e) {
        e->drained = false;
}

/* Whether the next record of the read is an IN_MOVED_TO (a rename's second half). */
static bool next_is_moved_to(const Events *e) {
        size_t off = e->off;
        RawEvent ev;

        return e->off < e->len && event_decode(e->buf, e->len, &off, &ev) > 0 && (ev.mask & IN_MOVED_TO);
}

bool events_slice(Events *e, uint64_t budget_usec) {
        uint64_t deadline = now_usec() + budget_usec;
        /* A read whose records an earlier slice left (its time ran out) counts as
         * this slice's read: they are flushed before the next read is made. */
        bool read = e->off < e->len;

        for (;;) {
                RawEvent ev;
                size_t at;
                int r;

                /* The descents of pending paths that earlier records started go
                 * first: a later record must find the chains they build, as the
                 * kernel's order says (a client that heard of the record that
                 * made a path appear may count on its watch being placed). */
                if (missing_has_work(e->missing)) {
                        uint64_t now = now_usec();

                        if (now >= deadline || missing_run(e->missing, deadline - now))
                                return true;
                }
                if (e->off == e->len) {
                        ssize_t n;

                        self_events_handled(e->self);

                        /* A read that left room for the longest record took all
                         * there was: a record queued since makes the fd readable
                         * again, so the read that would get EAGAIN is not made (a
                         * system call of the seven each wake-up of a storm cost).
                         * Unless something waits for the queue to be read empty:
                         * that needs a read after the records handled, which may
                         * have queued more. */
                        if (e->drained && !tree_waits_read_empty(e->tree)) {
                                e->drained = false;
                                return false;
                        }
                        /* One read a slice: the loop flushes what it held before the
                         * next, and comes back to the bus between them. A backlog in
                         * the kernel goes on to the clients 64 KiB of records at a
                         * time, not a megabyte (sixteen reads, as it was: the queues
                         * then held some 30,000 records, whose memory malloc took from
                         * the system and gave back at each slice, a page fault for
                         * every 4 KiB of it). */
                        if (read)
                                return true;
                        self_events_read(e->self);
                        n = backend_read(e->backend, e->buf, KERNEL_READ_BUF);
                        self_events_read_done(e->self, n, KERNEL_READ_BUF);
                        e->drained = false;
                        if (n == -EAGAIN) {
                                tree_queue_read_empty(e->tree);
                                remote_queue_read_empty(e->remote);
                                return false;
                        }
                        if (n < 0) {
                                log_error_errno((int) n, "Failed to read the kernel's events: %m");
                                return false;
                        }
                        e->off = 0;
                        e->len = (size_t) n;
                        e->stats.kernel_reads++;
                        e->drained = e->len <= KERNEL_READ_BUF - KERNEL_RECORD_MAX;
                        e->read_time = now_usec();
                        read = true;
                }
                at = e->off;
                r = event_decode(e->buf, e->len, &e->off, &ev);
                if (r <= 0) {
                        if (r < 0)
                                log_error("Malformed record from the kernel at offset %zu of %zu bytes, "
                                          "dropping the rest of the read.",
                                          e->off, e->len);
                        e->off = e->len;
                        continue;
                }
                handle_event(e, &ev, at, e->read_time);
                /* Not between a rename's two halves: a subscription made
                 * meanwhile (AddWatch is served) would be taken for one the
                 * rename moved. */
                if (now_usec() >= deadline && !next_is_moved_to(e))
                        return true;
        }
}
