/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manager - the daemon's one context
 *
 * The path of an event: the kernel fd becomes readable -> on_kernel() reads
 * it through the backend (bounded: at most KERNEL_READ_ROUNDS reads per
 * wake-up, so a busy writer cannot keep the loop from serving the bus) ->
 * event_decode() -> handle_event() finds the Watch by wd and makes a Record
 * for each matching subscription, queued on its owner -> once the kernel
 * queue is drained (or the round budget spent), manager_flush() sends each
 * client what its queue lets go, through dbus_iface_flush_client(). No fixed
 * delay is added: an unpaired IN_MOVED_FROM waits, for at most
 * move_pair_timeout_ms, and the pairing timer wakes the loop for it; and a
 * client that has not yet confirmed reading its last signal (its Peer.Ping
 * is in flight) has its new records held until it answers, so that they go
 * out as one signal: at most one round trip of the client's own, see
 * dbus_iface.c.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dbus_iface.h"
#include "event_bits.h"
#include "event_decode.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "tree.h"

#define KERNEL_READ_BUF (64u * 1024u)
#define KERNEL_READ_ROUNDS 16
/* A slice of the RECURSIVE walks, between two looks at the kernel and the bus. */
#define WALK_SLICE_USEC 5000u

/* Messages sd-bus may hold unsent before we stop handing it more. Past it
 * the bus is not reading us: records stay in the clients' queues, which are
 * bounded (max_pending_events_per_client, then Overflow), and we try again
 * after BUS_RETRY_USEC. */
#define BUS_WRITE_QUEUE_HIGH 4096u
#define BUS_RETRY_USEC 10000u

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
        m->read_buf_size = KERNEL_READ_BUF;
        m->read_buf = malloc(m->read_buf_size);
        m->dents_buf = malloc(TREE_DENTS_BUF);
        if (!m->config_path || !m->read_buf || !m->dents_buf) {
                manager_free(m);
                return -ENOMEM;
        }
        m->clients = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, client_destroy);
        m->dirty = g_ptr_array_new();
        m->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, free);
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        GHashTableIter i;
        gpointer v;

        if (!m)
                return NULL;
        /* Walks, moves and retries hold links: they go before the table. */
        tree_moves_end(m);
        tree_retries_free(m);
        tree_walks_free(m);
        m->walker = sd_event_source_disable_unref(m->walker);
        if (m->clients) {
                g_hash_table_iter_init(&i, m->clients);
                while (g_hash_table_iter_next(&i, NULL, &v)) {
                        Client *c = v;
                        c->track = sd_bus_track_unref(c->track);
                }
                g_hash_table_destroy(m->clients);
        }
        if (m->users)
                g_hash_table_destroy(m->users);
        if (m->dirty)
                g_ptr_array_unref(m->dirty);
        if (m->tree_moves)
                g_array_unref(m->tree_moves);
        if (m->dir_move_old)
                g_ptr_array_unref(m->dir_move_old);
        if (m->scanned)
                g_hash_table_destroy(m->scanned);
        m->table = watch_table_free(m->table);
        m->kernel_source = sd_event_source_disable_unref(m->kernel_source);
        m->pair_timer = sd_event_source_disable_unref(m->pair_timer);
        m->backend = backend_free(m->backend);
        m->bus = sd_bus_unref(m->bus);
        m->event = sd_event_unref(m->event);
        config_done(&m->config);
        free(m->config_path);
        free(m->read_buf);
        free(m->dents_buf);
        free(m);
        return NULL;
}

uint64_t manager_now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static UserAccount *user_get(Manager *m, uid_t uid, bool create) {
        UserAccount *u = g_hash_table_lookup(m->users, GUINT_TO_POINTER(uid));

        if (u || !create)
                return u;
        u = calloc(1, sizeof(UserAccount));
        if (!u)
                return NULL;
        u->uid = uid;
        g_hash_table_insert(m->users, GUINT_TO_POINTER(uid), u);
        return u;
}

static void user_put(Manager *m, UserAccount *u) {
        if (u->n_clients == 0 && u->n_watches == 0)
                g_hash_table_remove(m->users, GUINT_TO_POINTER(u->uid));
}

int manager_get_client(Manager *m, const char *name, Client **ret) {
        Client *c = g_hash_table_lookup(m->clients, name);

        if (!c)
                return -ENOENT;
        *ret = c;
        return 0;
}

int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret) {
        UserAccount *u;
        Client *c;
        int r;

        u = user_get(m, caller->uid, true);
        if (!u)
                return -ENOMEM;
        if (u->n_clients >= m->config.max_clients_per_user) {
                user_put(m, u);
                return -EUSERS;
        }
        r = client_new(name, caller, (uint64_t) m->config.move_pair_timeout_ms * 1000u,
                       m->config.move_pair_max_distance, &c);
        if (r < 0) {
                user_put(m, u);
                return r;
        }
        c->manager = m;
        g_hash_table_insert(m->clients, c->name, c);
        u->n_clients++;
        *ret = c;
        return 0;
}

/* Ends s: no notice is queued (the caller queues one if the daemon ended it). */
void manager_subscription_end(Manager *m, Subscription *s) {
        Client *c = s->owner;
        UserAccount *u = user_get(m, c->uid, false);

        c->n_watches -= s->n_links;
        client_unlink_subscription(c, s);
        if (u) {
                u->n_watches -= s->n_links;
                user_put(m, u);
        }
        watch_table_unsubscribe(m->table, s);
}

/* Whether c may hold one more watch (a subscription, or a directory of a RECURSIVE one). */
static int watch_allowed(Manager *m, Client *c, UserAccount **ret_user) {
        UserAccount *u;

        if (c->n_watches >= m->config.max_watches_per_client)
                return -EDQUOT;
        u = user_get(m, c->uid, true);
        if (!u)
                return -ENOMEM;
        if (u->n_watches >= m->config.max_watches_per_user)
                return -EMLINK;
        *ret_user = u;
        return 0;
}

int manager_link(Manager *m, Subscription *s, WatchLink *parent, int fd, const struct stat *st,
                 const char *name, size_t name_len, WatchLink **ret) {
        Client *c = s->owner;
        UserAccount *u;
        WatchLink *l;
        int r;

        r = watch_allowed(m, c, &u);
        if (r < 0)
                return r;
        if (parent)
                r = watch_table_link(m->table, s, parent, fd, st, name, name_len, &l);
        else
                r = watch_table_link_pending(m->table, s, fd, st, name, &l);
        if (r < 0)
                return r;
        c->n_watches++;
        u->n_watches++;
        if (ret)
                *ret = l;
        return 0;
}

void manager_unlink(Manager *m, WatchLink *l) {
        Client *c = l->subscription->owner;
        UserAccount *u = user_get(m, c->uid, false);
        unsigned n;

        n = watch_table_unlink(m->table, l);
        c->n_watches -= n;
        if (u)
                u->n_watches -= n;
}

void manager_queue_overflow(Manager *m, Subscription *s) {
        if (client_queue_overflow(s->owner, s->id) < 0)
                log_warning("Out of memory queueing Overflow for %s, ignoring.", ((Client *) s->owner)->name);
        manager_mark_dirty(m, s->owner);
}

void manager_client_gone(Manager *m, Client *c) {
        UserAccount *u;

        log_debug("Client %s is gone, ending its %u subscriptions.", c->name, c->n_subscriptions);
        while (c->subscriptions)
                manager_subscription_end(m, c->subscriptions);
        c->track = sd_bus_track_unref(c->track);
        u = user_get(m, c->uid, false);
        if (u) {
                u->n_clients--;
                user_put(m, u);
        }
        if (c->dirty)
                g_ptr_array_remove_fast(m->dirty, c);
        g_hash_table_remove(m->clients, c->name);
}

static int subscribe(Manager *m, Client *c, int fd, const struct stat *st, const char *path,
                     uint32_t mask, uint32_t flags, uint32_t *ret_id, TreeWalk **ret_walk) {
        Subscription *s;
        UserAccount *u;
        int r;

        r = watch_allowed(m, c, &u);
        if (r < 0)
                return r;

        r = watch_table_subscribe(m->table, fd, st, path, c, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);
        c->n_watches++;
        u->n_watches++;

        *ret_id = s->id;
        *ret_walk = NULL;
        if ((flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st->st_mode)) {
                /* The whole tree, or nothing: a limit met half-way undoes it (tree.c). */
                uint32_t id = s->id;

                r = tree_walk_below(m, s, fd, /* all_or_nothing= */ true, ret_walk);
                if (r < 0) {
                        s = watch_table_get_subscription(m->table, id);
                        if (s)
                                manager_subscription_end(m, s);
                        return r;
                }
        }
        return 0;
}

/* "//a///b/" -> "/a/b": records are built as path + "/" + name, so no
 * doubled or trailing slashes. ".." is left to the kernel, which resolves it
 * with the caller's credentials. */
static char *path_simplify(const char *path) {
        char *p = malloc(strlen(path) + 1), *o = p;

        if (!p)
                return NULL;
        for (const char *i = path; *i; i++)
                if (*i != '/' || o == p || o[-1] != '/')
                        *o++ = *i;
        if (o > p + 1 && o[-1] == '/')
                o--;
        *o = '\0';
        return p;
}

/*
 * Links pending s to each existing directory of its path, top down (see
 * pending_place). *ret_complete: every directory of the path exists, only
 * the path itself (its last component) does not.
 */
static int pending_chain(Manager *m, Subscription *s, bool *ret_complete) {
        Client *c = s->owner;
        WatchLink *prev = NULL;
        size_t end = 1, start;  /* the prefix of s->path looked at: "/" first */

        *ret_complete = false;
        for (;;) {
                _cleanup_free_ char *prefix = strndup(s->path, end);
                _cleanup_close_ int fd = -1;
                const char *name;
                struct stat st;
                WatchLink *l;
                size_t nl;
                int r;

                if (!prefix)
                        return -ENOMEM;
                fd = access_open_as(&c->caller, prefix, /* only_dir= */ true, /* no_follow= */ false, &st);
                if (fd == -ENOENT || fd == -ENOTDIR)
                        break;          /* the deepest directory is prev */
                if (fd < 0 && fd != -EACCES)
                        return fd;
                if (fd == -EACCES) {
                        if (s->links)
                                manager_unlink(m, s->links);
                        prev = NULL;
                } else {
                        name = prev ? strrchr(prefix, '/') + 1 : prefix;
                        nl = strlen(name);
                        r = manager_link(m, s, prev, fd, &st, name, nl, &l);
                        if (r == -EEXIST)
                                break;  /* an inode twice on the path: follow no further */
                        if (r < 0)
                                return r;
                        prev = l;
                }
                /* The next prefix: up to the end of the next component. */
                start = end == 1 ? 1 : end + 1;
                end = start + strcspn(s->path + start, "/");
                if (s->path[end] == '\0') {
                        *ret_complete = prev != NULL;
                        break;  /* that is the path itself: pending_place opens it */
                }
        }
        if (!s->links)
                return -EACCES;         /* no directory of the path may be read */
        return 0;
}

/*
 * A path that does not exist yet (see watchd(8), "MISSING PATHS"): the
 * subscription keeps its path and is linked, as a non-root link counted like
 * any other, to the deepest existing directory of it (opened as the caller),
 * whose watch only needs WATCH_PENDING_BITS. When the next component appears
 * there, this runs again and goes down; once the whole path opens it places
 * the subscription's real (root) watch. After each link the next component is
 * looked up again: one created before the watch was placed sends nothing.
 * Return: 0 (pending, or placed), or -errno (the caller ends s).
 */
static int pending_place(Manager *m, Subscription *s) {
        Client *c = s->owner;

        for (unsigned round = 0; round < 64; round++) {
                _cleanup_close_ int fd = -1;
                bool complete;
                struct stat st;
                UserAccount *u;
                int r;

                while (s->links)
                        manager_unlink(m, s->links);

                fd = access_open_as(&c->caller, s->path, s->flags & WATCHD_FLAG_ONLYDIR,
                                    s->flags & WATCHD_FLAG_DONT_FOLLOW, &st);
                if (fd >= 0) {
                        r = watch_allowed(m, c, &u);
                        if (r < 0)
                                return r;
                        r = watch_table_link_root(m->table, s, fd, &st);
                        if (r < 0)
                                return r;
                        c->n_watches++;
                        u->n_watches++;
                        /* Its tree is walked like a directory moved in: a limit gives Overflow. */
                        if ((s->flags & WATCHD_FLAG_RECURSIVE) && S_ISDIR(st.st_mode))
                                return tree_walk_below(m, s, fd, /* all_or_nothing= */ false, NULL);
                        return 0;
                }
                if (fd != -ENOENT)
                        return fd;

                /* Every existing directory of the path, from the top down, each
                 * linked before the next is looked up: the deepest waits for the
                 * next component to appear, the ones above for a component to go
                 * away (deleted or renamed: then the subscription climbs back),
                 * and nothing created in between is missed. An ancestor the
                 * caller may not read cannot be watched: the chain starts again
                 * below it. */
                r = pending_chain(m, s, &complete);
                if (r < 0)
                        return r;
                if (!complete)
                        return 0;
                /* Every directory of the path exists: did the path itself
                 * appear before the watch on its directory was placed? */
                fd = access_open_as(&c->caller, s->path, false, s->flags & WATCHD_FLAG_DONT_FOLLOW, &st);
                if (fd == -ENOENT)
                        return 0;
        }
        return -ELOOP;
}

/* A component of pending s's path appeared or went: place s again from its
 * path. If that fails (it appeared as something that cannot be watched, or
 * over a limit), s ends with WatchRemoved "deleted". */
static void pending_follow(Manager *m, Subscription *s, uint64_t now) {
        Record *rec;

        if (pending_place(m, s) >= 0)
                return;
        rec = record_new(RECORD_REMOVED, s->id, 0, 0, now, NULL, NULL, 0);
        if (rec)
                rec->reason = "deleted";
        manager_queue_record(m, s->owner, rec);
        manager_subscription_end(m, s);
}

/* Whether name (appeared in or left the directory at link path dir) is a component of pending s's path. */
static bool pending_next(const Subscription *s, const char *dir, const char *name, size_t name_len) {
        size_t dl = strlen(dir);
        const char *p;

        if (dl == 1)
                dl = 0;         /* "/" */
        if (strncmp(s->path, dir, dl) != 0 || s->path[dl] != '/')
                return false;
        p = s->path + dl + 1;
        return strncmp(p, name, name_len) == 0 && (p[name_len] == '/' || p[name_len] == '\0');
}

static bool has_dotdot(const char *path) {
        for (const char *p = strstr(path, "/.."); p; p = strstr(p + 1, "/.."))
                if (p[3] == '/' || p[3] == '\0')
                        return true;
        return false;
}

static int subscribe_pending(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags,
                             uint32_t *ret_id) {
        Subscription *s;
        int r;

        r = watch_table_subscribe_pending(m->table, path, c, mask, flags, &s);
        if (r < 0)
                return r;
        client_link_subscription(c, s);
        r = pending_place(m, s);
        if (r < 0) {
                manager_subscription_end(m, s);
                return r;
        }
        *ret_id = s->id;
        return 0;
}

int manager_add_watch_path(Manager *m, Client *c, const char *path_in,
                           uint32_t mask, uint32_t flags, uint32_t *ret_id, TreeWalk **ret_walk) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;

        /* Cheap limit checks first: a client over its limit costs no open(). */
        if (c->n_watches >= m->config.max_watches_per_client)
                return -EDQUOT;

        path = path_simplify(path_in);
        if (!path)
                return -ENOMEM;
        fd = access_open_as(&c->caller, path, flags & WATCHD_FLAG_ONLYDIR, flags & WATCHD_FLAG_DONT_FOLLOW, &st);
        /* Not there yet: pending on its deepest existing directory. With "..",
         * which the kernel resolves, there is no such directory to name. */
        *ret_walk = NULL;
        if (fd == -ENOENT && !has_dotdot(path))
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

        if (c->n_watches >= m->config.max_watches_per_client)
                return -EDQUOT;
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
                return -ENOLINK;        /* not in the filesystem tree (pipe:, anon_inode:...) */

        return subscribe(m, c, fd, &st, path, mask, flags, ret_id, ret_walk);
}

int manager_remove_watch(Manager *m, Client *c, uint32_t id) {
        Subscription *s = watch_table_get_subscription(m->table, id);

        if (!s || s->owner != c)
                return -ESRCH;
        manager_subscription_end(m, s);
        return 0;
}

void manager_queue_record(Manager *m, Client *c, Record *rec) {
        bool overflowing = c->overflow_queued;
        int r;

        if (!rec) {
                log_warning("Out of memory queueing a record for %s, ignoring.", c->name);
                return;
        }
        r = client_enqueue(c, rec, m->config.max_pending_events_per_client);
        if (r < 0)
                log_warning_errno(r, "Failed to queue a record for %s, ignoring: %m", c->name);
        else if (r > 0) {
                m->stats.events_dropped += (uint64_t) r;
                c->events_dropped += (uint64_t) r;
                if (!overflowing)       /* once per Overflow, not once per dropped record */
                        log_info("Client %s is %u records behind: dropped its backlog, it gets Overflow.",
                                 c->name, m->config.max_pending_events_per_client);
        }
        manager_mark_dirty(m, c);
}

void manager_mark_dirty(Manager *m, Client *c) {
        if (!c->dirty && move_pairer_size(&c->queue) > 0) {
                c->dirty = true;
                g_ptr_array_add(m->dirty, c);
        }
}

/* The kernel removed a watch (deleted, unmounted): subscriptions rooted on
 * it end and hear why; directories below a RECURSIVE root just drop out
 * (their parent already reported the deletion). */
static void watch_ignored(Manager *m, Watch *w, uint64_t now) {
        const char *reason = w->unmounted ? "unmounted" : "deleted";
        g_autoptr(GArray) climb = NULL;
        unsigned n = w->n_links;

        /* Each step removes exactly one link of w (a subscription has at most
         * one link per watch), and the last one frees w: count, and do not
         * look at w after it. */
        watch_table_watch_gone(m->table, w);
        while (n-- > 0) {
                WatchLink *l = w->links;
                Subscription *s = l->subscription;
                Record *rec;

                if (s->pending) {
                        /* A directory of its path went: it climbs back (below). */
                        manager_unlink(m, l);
                        if (!climb)
                                climb = g_array_new(FALSE, FALSE, sizeof(uint32_t));
                        g_array_append_val(climb, s->id);
                        continue;
                }
                if (!watch_link_is_root(l)) {
                        manager_unlink(m, l);
                        continue;
                }
                rec = record_new(RECORD_REMOVED, s->id, 0, 0, now, NULL, NULL, 0);
                if (rec)
                        rec->reason = reason;
                manager_queue_record(m, s->owner, rec);
                manager_subscription_end(m, s);
        }
        for (guint k = 0; climb && k < climb->len; k++) {
                Subscription *s = watch_table_get_subscription(m->table, g_array_index(climb, uint32_t, k));

                if (s && s->pending)
                        pending_follow(m, s, now);
        }
}

static void kernel_overflow(Manager *m, uint64_t now) {
        GHashTableIter i;
        gpointer v;

        m->stats.kernel_overflows++;
        log_warning("The kernel's event queue overflowed: every client gets Overflow.");
        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v)) {
                Client *c = v;

                if (c->n_subscriptions > 0 && client_queue_overflow_all(c, now) < 0)
                        log_warning("Out of memory queueing Overflow for %s, ignoring.", c->name);
                manager_mark_dirty(m, c);
        }
}

/* Work an event leaves for after the walk over the watch's links, which it may change. */
typedef struct Followup {
        uint32_t id;            /* the subscription, looked up again: it may have ended */
        enum {
                FOLLOW_ONESHOT,
                FOLLOW_TREE_ADD_NEW,    /* a directory was created in a RECURSIVE tree */
                FOLLOW_TREE_MOVED_FROM, /* a directory was moved out of its place in it */
                FOLLOW_TREE_MOVED_TO,   /* a directory was moved in (from it, or from elsewhere) */
                FOLLOW_PENDING,         /* the next component of a pending path appeared */
        } what;
        uint32_t cookie;
        char *path;
} Followup;

/*
 * A watched directory's parent reports its rename as IN_MOVED_FROM and
 * IN_MOVED_TO (one cookie, in a row). When both halves are seen, the paths
 * of every subscription at or below the old path follow it, so records keep
 * naming the directory by where it is. Within one directory each link keeps
 * its own spelling of the path; across two, the new directory's first link
 * gives the new spelling. A RECURSIVE tree follows its own renames too
 * (tree.c), this only catches what it did not.
 */
static void follow_dir_move(Manager *m, Watch *w, const RawEvent *ev) {
        g_autoptr(GPtrArray) new_paths = NULL;
        char buf[PATH_MAX];
        bool same_dir;

        if (ev->mask & IN_MOVED_FROM) {
                /* Remember where it was, as each link of its parent spells it. */
                g_clear_pointer(&m->dir_move_old, g_ptr_array_unref);
                m->dir_move_old = g_ptr_array_new_with_free_func(free);
                for (WatchLink *l = w->links; l; l = l->watch_next) {
                        const char *dir = tree_link_path(l, buf);

                        g_ptr_array_add(m->dir_move_old, dir ? tree_path_join(dir, ev->name, ev->name_len) : NULL);
                }
                m->dir_move_cookie = ev->cookie;
                m->dir_move_watch = w;
                return;
        }
        if (!m->dir_move_old || ev->cookie != m->dir_move_cookie)
                return;

        new_paths = g_ptr_array_new_with_free_func(free);
        for (WatchLink *l = w->links; l; l = l->watch_next) {
                const char *dir = tree_link_path(l, buf);

                g_ptr_array_add(new_paths, dir ? tree_path_join(dir, ev->name, ev->name_len) : NULL);
        }
        /* The MOVED_FROM's watch pointer is only compared, never followed: it may be gone. */
        same_dir = m->dir_move_watch == w && new_paths->len == m->dir_move_old->len;
        for (guint i = 0; i < m->dir_move_old->len && new_paths->len > 0; i++) {
                const char *o = g_ptr_array_index(m->dir_move_old, i);
                const char *n = g_ptr_array_index(new_paths, same_dir ? i : 0);

                if (!o || !n || watch_table_rename_paths(m->table, o, n) < 0)
                        log_warning("Out of memory following a directory rename, ignoring.");
        }
        m->dir_move_cookie = 0;
        g_clear_pointer(&m->dir_move_old, g_ptr_array_unref);
}

static void followup_add(GArray **a, uint32_t id, int what, uint32_t cookie, char *path) {
        if (!*a)
                *a = g_array_new(FALSE, FALSE, sizeof(Followup));
        g_array_append_val(*a, ((Followup) { id, what, cookie, path }));
}

static char *scanned_key(uint32_t id, const char *dir, const char *name, size_t name_len) {
        size_t dl = strlen(dir);

        if (dl == 1 && dir[0] == '/')
                dl = 0;
        return g_strdup_printf("%" PRIu32 ":%.*s/%.*s", id, (int) dl, dir, (int) name_len, name);
}

void manager_scanned_add(Manager *m, uint32_t id, const char *dir, const char *name, size_t name_len) {
        if (!m->scanned)
                m->scanned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_add(m->scanned, scanned_key(id, dir, name, name_len));
}

/* Whether the record of ev for s (at link path dir) was already reported by a scan. */
static bool scanned_check(Manager *m, const Subscription *s, const char *dir, const RawEvent *ev) {
        g_autofree char *key = NULL;

        if (!m->scanned || g_hash_table_size(m->scanned) == 0 || !ev->name ||
            !(s->flags & WATCHD_FLAG_RECURSIVE) || !(ev->mask & (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)))
                return false;
        key = scanned_key(s->id, dir, ev->name, ev->name_len);
        /* Gone again: a later IN_CREATE of the same name is a new object. */
        return g_hash_table_remove(m->scanned, key) && (ev->mask & (IN_CREATE | IN_MOVED_TO));
}

static void handle_event(Manager *m, const RawEvent *ev, uint64_t now) {
        /* Rare (ONESHOT, directories in RECURSIVE trees): allocated on first use. */
        g_autoptr(GArray) followups = NULL;
        char buf[PATH_MAX];
        Watch *w;

        m->stats.events_read++;

        /* A directory moved out of its place in a tree is moved within it
         * only if the very next record is its IN_MOVED_TO. */
        if (!((ev->mask & IN_MOVED_TO) && tree_moves_pending(m, ev->cookie)))
                tree_moves_end(m);

        if (ev->mask & IN_Q_OVERFLOW)
                return kernel_overflow(m, now);

        w = watch_table_get_watch(m->table, ev->wd);
        if (!w)
                return;         /* a watch we have released; its last records still trickle in */

        if (ev->mask & IN_IGNORED)
                return watch_ignored(m, w, now);
        if (ev->mask & IN_UNMOUNT)
                w->unmounted = true;
        if ((ev->mask & IN_ISDIR) && ev->name && ev->cookie && (ev->mask & IN_MOVE))
                follow_dir_move(m, w, ev);

        for (WatchLink *l = w->links; l; l = l->watch_next) {
                Subscription *s = l->subscription;
                bool tree = (s->flags & WATCHD_FLAG_RECURSIVE) && ev->name && (ev->mask & IN_ISDIR);
                const char *dir = tree_link_path(l, buf);

                if (!dir) {
                        manager_queue_overflow(m, s);   /* deeper than PATH_MAX: cannot be named */
                        continue;
                }

                /* Pending: nothing is delivered, the path is only followed down. */
                if (s->pending) {
                        if (ev->name && (ev->mask & WATCH_PENDING_BITS) &&
                            pending_next(s, dir, ev->name, ev->name_len))
                                followup_add(&followups, s->id, FOLLOW_PENDING, 0, NULL);
                        continue;
                }

                /* A directory below a RECURSIVE root: what happens to the
                 * directory itself is reported by its parent's link. */
                if (!watch_link_is_root(l) && !ev->name && !(ev->mask & IN_UNMOUNT))
                        continue;
                /* IN_UNMOUNT reaches every subscriber, as the kernel sends it to every watch. */
                if (((ev->mask & s->mask & WATCHD_MASK_VALID) || (ev->mask & IN_UNMOUNT)) &&
                    !scanned_check(m, s, dir, ev)) {
                        manager_queue_record(m, s->owner, record_new(RECORD_EVENT, s->id, ev->mask, ev->cookie, now,
                                                                     dir, ev->name, ev->name_len));
                        if (s->flags & WATCHD_FLAG_ONESHOT) {
                                followup_add(&followups, s->id, FOLLOW_ONESHOT, 0, NULL);
                                continue;
                        }
                }

                if (tree && (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM))) {
                        char *path = tree_path_join(dir, ev->name, ev->name_len);

                        if (!path) {
                                manager_queue_overflow(m, s);
                                continue;
                        }
                        followup_add(&followups, s->id,
                                     ev->mask & IN_MOVED_FROM ? FOLLOW_TREE_MOVED_FROM :
                                     ev->mask & IN_CREATE ? FOLLOW_TREE_ADD_NEW : FOLLOW_TREE_MOVED_TO,
                                     ev->cookie, path);
                }
        }

        for (size_t k = 0; followups && k < followups->len; k++) {
                Followup *f = &g_array_index(followups, Followup, k);
                Subscription *s = watch_table_get_subscription(m->table, f->id);

                if (s)
                        switch (f->what) {
                        case FOLLOW_ONESHOT: {
                                /* ONESHOT is the daemon's (the device has none, and a shared
                                 * kernel watch must outlive one subscriber's first event). */
                                Record *rec = record_new(RECORD_REMOVED, s->id, 0, 0, now, NULL, NULL, 0);

                                if (rec)
                                        rec->reason = "oneshot";
                                manager_queue_record(m, s->owner, rec);
                                manager_subscription_end(m, s);
                                break;
                        }
                        case FOLLOW_TREE_ADD_NEW:
                                tree_add(m, s, f->path, /* synthesize= */ true, now);
                                break;
                        case FOLLOW_TREE_MOVED_FROM:
                                tree_moved_from(m, s, f->path, f->cookie);
                                break;
                        case FOLLOW_TREE_MOVED_TO:
                                tree_moved_to(m, s, f->path, f->cookie, now);
                                break;
                        case FOLLOW_PENDING:
                                if (s->pending)
                                        pending_follow(m, s, now);
                                break;
                        }
                free(f->path);
        }
        /* Its IN_MOVED_TO was this record: what it did not take into a tree left it. */
        if (ev->mask & IN_MOVED_TO)
                tree_moves_end(m);
}

static void handle_buffer(Manager *m, const uint8_t *buf, size_t size, uint64_t now) {
        size_t off = 0;
        RawEvent ev;
        int r;

        while ((r = event_decode(buf, size, &off, &ev)) > 0)
                handle_event(m, &ev, now);
        if (r < 0)
                log_error("Malformed record from the kernel at offset %zu of %zu bytes, dropping the rest of the read.",
                          off, size);
}

static int on_kernel(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        /* A finite number of reads: the loop must come back to the bus even
         * if a writer keeps the kernel queue full. The fd stays readable and
         * we are called again on the next iteration. */
        for (int i = 0; i < KERNEL_READ_ROUNDS; i++) {
                ssize_t n = backend_read(m->backend, m->read_buf, m->read_buf_size);

                if (n == -EAGAIN) {
                        /* Everything queued before any scan so far has been read. */
                        if (m->scanned)
                                g_hash_table_remove_all(m->scanned);
                        /* A rename queues both halves at once: none is coming. */
                        tree_moves_end(m);
                        /* Every rename is read: their new parents' paths are right now. */
                        tree_retries_run(m);
                        break;
                }
                if (n < 0) {
                        log_error_errno((int) n, "Failed to read the kernel's events: %m");
                        break;
                }
                handle_buffer(m, m->read_buf, (size_t) n, manager_now_usec());
        }

        manager_flush(m);
        return 0;
}

static int on_pair_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        manager_flush(userdata);
        return 0;
}

static int on_walker(sd_event_source *source, void *userdata) {
        Manager *m = userdata;

        if (!tree_walks_run(m, WALK_SLICE_USEC))
                (void) sd_event_source_set_enabled(m->walker, SD_EVENT_OFF);
        manager_flush(m);       /* what the walks reported, and answers to their AddWatch */
        return 0;
}

void manager_walks_wake(Manager *m) {
        int r;

        r = sd_event_source_set_enabled(m->walker, SD_EVENT_ON);
        if (r < 0)
                log_warning_errno(r, "Failed to start the walker, ignoring: %m");
}

void manager_flush(Manager *m) {
        uint64_t now = manager_now_usec(), next = UINT64_MAX, queued = 0;
        int r;

        if (m->bus && sd_bus_get_n_queued_write(m->bus, &queued) >= 0 && queued > BUS_WRITE_QUEUE_HIGH) {
                if (!m->bus_stalled)
                        log_warning("The bus is not reading our messages (%" PRIu64 " queued): holding events back.",
                                    queued);
                m->bus_stalled = true;
                next = now + BUS_RETRY_USEC;
                goto arm;
        }
        m->bus_stalled = false;

        /* Only the clients with something queued; those left waiting for a
         * rename's partner stay on the list, compacted in place. */
        guint kept = 0;
        for (guint k = 0; k < m->dirty->len; k++) {
                Client *c = g_ptr_array_index(m->dirty, k);
                uint64_t d;

                dbus_iface_flush_client(m, c, now);
                if (move_pairer_size(&c->queue) == 0) {
                        c->dirty = false;
                        continue;
                }
                m->dirty->pdata[kept++] = c;
                d = move_pairer_next_deadline(&c->queue);
                if (d < next)
                        next = d;
        }
        g_ptr_array_set_size(m->dirty, kept);

arm:
        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(m->pair_timer, SD_EVENT_OFF);
                return;
        }
        r = sd_event_source_set_time(m->pair_timer, next);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->pair_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the pairing timer, ignoring: %m");
}

uint64_t manager_pending_events(Manager *m) {
        GHashTableIter i;
        gpointer v;
        uint64_t n = 0;

        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v))
                n += move_pairer_size(&((Client *) v)->queue);
        return n;
}

int manager_start(Manager *m, sd_event *event) {
        int r;

        m->event = sd_event_ref(event);

        r = backend_new(m->config.backend, m->config.device, &m->backend);
        if (r < 0) {
                if (m->config.backend == BACKEND_DEVICE)
                        return log_error_errno(r, "Failed to open '%s': %m", m->config.device);
                return log_error_errno(r, "Failed to set up the inotify syscalls: %m");
        }
        if (strcmp(backend_name(m->backend), "device") == 0)
                log_info("Using the device backend ('%s').", m->config.device);
        else
                log_info("Using the syscall backend (inotify_init1).");

        r = watch_table_new(m->backend, &m->table);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the watch table: %m");

        r = sd_event_add_io(event, &m->kernel_source, backend_get_fd(m->backend), EPOLLIN, on_kernel, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the kernel fd: %m");
        (void) sd_event_source_set_description(m->kernel_source, "kernel");

        /* Armed only while a client's queue waits for the partner of a rename. */
        r = sd_event_add_time(event, &m->pair_timer, CLOCK_MONOTONIC, UINT64_MAX, /* accuracy= */ 1, on_pair_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the pairing timer: %m");
        (void) sd_event_source_set_enabled(m->pair_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(m->pair_timer, "move-pairing");

        /* Enabled only while a RECURSIVE walk is in progress. Below the kernel
         * fd and the bus: each loop iteration serves them first. */
        r = sd_event_add_defer(event, &m->walker, on_walker, m);
        if (r >= 0)
                r = sd_event_source_set_priority(m->walker, SD_EVENT_PRIORITY_NORMAL + 10);
        if (r < 0)
                return log_error_errno(r, "Failed to add the walker: %m");
        (void) sd_event_source_set_enabled(m->walker, SD_EVENT_OFF);
        (void) sd_event_source_set_description(m->walker, "tree-walker");
        return 0;
}

void manager_reload(Manager *m, Config *config) {
        GHashTableIter i;
        gpointer v;

        if (config->backend != m->config.backend || strcmp(config->device, m->config.device) != 0)
                log_notice("The backend and device settings take effect at the next start, ignoring their change.");
        config->backend = m->config.backend;
        free(config->device);
        config->device = TAKE_PTR(m->config.device);

        config_done(&m->config);
        m->config = *config;
        *config = (Config) {};
        log_set_max_level(m->config.log_level);

        g_hash_table_iter_init(&i, m->clients);
        while (g_hash_table_iter_next(&i, NULL, &v))
                move_pairer_set_limits(&((Client *) v)->queue, (uint64_t) m->config.move_pair_timeout_ms * 1000u,
                                       m->config.move_pair_max_distance);
}
