/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-snapshot - what a watched path held, as last known, to tell what
 * changed across a gap
 *
 * Events say what changed while they flow. When they stop for a while (an
 * Overflow, a restart of watchd, a program that watched by other means in
 * between), what changed meanwhile is lost unless something remembers what
 * was there. A WatchdSnapshot does: the entries of a directory (or of its
 * tree, or one file), each with its identity (device, inode, type) and the
 * attributes a change moves (size, mtime, ctime, mode, owner). It is kept
 * current from the events the program handles (watchd_snapshot_note_event:
 * an event says whether a name is there; a stat says what it is), and
 * watchd_snapshot_rescan() reads the path again and returns the
 * differences as ordinary events marked WATCHD_EVENT_RESCANNED: what is
 * gone (DELETE, or DELETE_SELF for the path itself), what came (CREATE),
 * what was renamed (the inode found under a new name: one rename event),
 * what was written (MODIFY, CLOSE_WRITE) and what had only its metadata
 * changed (ATTRIB).
 *
 * watchd_snapshot_follow() ties one to a subscription: noted from its
 * events, rescanned at each of its overflows (whatever the reason, a
 * restart of watchd included), the differences emitted as its "events"
 * right after "overflow". The GIO module keeps one a monitor the same way
 * (gio-module/gwatchd-monitor.c) to move between watchd and inotify with
 * no silent gap.
 *
 * Memory is bounded: at most max-entries entries (a scan past it fails and
 * the snapshot forgets what it knew). Not thread-safe: use it from one
 * thread (the client's context when following).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watchd-private.h"
#include "watchd-snapshot.h"
#include "watchd-snapshot-diff.h"

struct _WatchdSnapshot {
        GObject parent_instance;
        char *path; /* canonical: no repeated or trailing slash */
        gboolean recursive;
        guint max_entries;
        gboolean known; /* scanned, and not forgotten since */
        State state;
};

enum {
        PROP_0,
        PROP_PATH,
        PROP_RECURSIVE,
        PROP_MAX_ENTRIES,
        N_PROPS,
};
static GParamSpec *props[N_PROPS];

G_DEFINE_TYPE(WatchdSnapshot, watchd_snapshot, G_TYPE_OBJECT)

static GHashTable *entries_new(void) {
        return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static void state_clear(State *st) {
        g_clear_pointer(&st->entries, g_hash_table_unref);
        st->present = FALSE;
}

static gint64 ns(const struct statx_timestamp *t) {
        return t->tv_sec * G_GINT64_CONSTANT(1000000000) + t->tv_nsec;
}

/* What is at name in dirfd (or at the path itself), with its birth time
 * where the file system keeps one: an inode number reused by a new file
 * or directory is then told from the old one. */
static gboolean entry_read(Entry *e, int dirfd, const char *name, int flags) {
        struct statx sx;

        if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
                return FALSE;
        *e = (Entry) {
                .dev = ((guint64) sx.stx_dev_major << 32) | sx.stx_dev_minor,
                .ino = sx.stx_ino,
                .size = sx.stx_size,
                .mtime_ns = ns(&sx.stx_mtime),
                .ctime_ns = ns(&sx.stx_ctime),
                .btime_ns = (sx.stx_mask & STATX_BTIME) ? ns(&sx.stx_btime) : 0,
                .mode = sx.stx_mode,
                .uid = sx.stx_uid,
                .gid = sx.stx_gid,
                .stated = TRUE,
        };
        return TRUE;
}

/* Where path is under the root: "" for the root, "a/b" below it, NULL
 * outside (or deeper than a direct child, for a snapshot that is not
 * recursive). */
static const char *rel_of(WatchdSnapshot *s, const char *path) {
        size_t n = strlen(s->path);
        const char *rel;

        if (!path || strncmp(path, s->path, n) != 0)
                return NULL;
        if (path[n] == '\0')
                return "";
        if (n == 1)
                rel = path + 1; /* the root is "/" */
        else if (path[n] == '/')
                rel = path + n + 1;
        else
                return NULL;
        if (!*rel || (!s->recursive && strchr(rel, '/')))
                return NULL;
        return rel;
}

/* ------------------------------------------------------------------------ */
/* Reading the path */

/* A directory below the root, opened without following a symbolic link on
 * the way (RESOLVE_NO_SYMLINKS; openat() with O_NOFOLLOW where openat2()
 * is missing). */
static int open_below(int root_fd, const char *rel) {
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int) syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));

        if (fd < 0 && (errno == ENOSYS || errno == EPERM))
                fd = openat(root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd;
}

/* Reads the entries of the directory at rel into st, and queues its
 * subdirectories (recursive). A directory that went or cannot be read is
 * left out, not an error: what it holds is unknown. */
static gboolean read_dir(WatchdSnapshot *s, int root_fd, const char *rel, State *st, GQueue *dirs, GError **error) {
        int fd = *rel ? open_below(root_fd, rel) : fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        struct dirent *de;
        DIR *d;

        if (fd < 0)
                return TRUE;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return TRUE;
        }
        while ((de = readdir(d))) {
                Entry sb;
                Entry *e;
                char *key;

                if (g_str_equal(de->d_name, ".") || g_str_equal(de->d_name, ".."))
                        continue;
                if (!entry_read(&sb, dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT))
                        continue; /* gone meanwhile */
                if (g_hash_table_size(st->entries) >= s->max_entries) {
                        closedir(d);
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
                                    "\"%s\" holds more than %u entries (max-entries)", s->path, s->max_entries);
                        return FALSE;
                }
                key = *rel ? g_strconcat(rel, "/", de->d_name, NULL) : g_strdup(de->d_name);
                e = g_memdup2(&sb, sizeof(sb));
                g_hash_table_replace(st->entries, key, e);
                if (s->recursive && S_ISDIR(sb.mode))
                        g_queue_push_tail(dirs, g_strdup(key));
        }
        closedir(d);
        return TRUE;
}

/* Reads what the path holds now into st (and below rel only, into an
 * existing st, for a directory moved into a recursive snapshot). */
static gboolean read_state(WatchdSnapshot *s, const char *below, State *st, GError **error) {
        g_autoptr(GQueue) dirs = g_queue_new();
        gboolean ok = TRUE;
        char *rel;
        int root_fd;

        if (!below) {
                st->entries = entries_new();
                st->present = FALSE;
                if (!entry_read(&st->root, AT_FDCWD, s->path, AT_NO_AUTOMOUNT)) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                return TRUE; /* known: not there */
                        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "Cannot read \"%s\": %s", s->path,
                                    g_strerror(errno));
                        return FALSE;
                }
                st->present = TRUE;
                if (!S_ISDIR(st->root.mode))
                        return TRUE;
        }
        root_fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                if (below || errno == ENOENT || errno == ENOTDIR)
                        return TRUE; /* went meanwhile */
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "Cannot read \"%s\": %s", s->path,
                            g_strerror(errno));
                return FALSE;
        }
        g_queue_push_tail(dirs, g_strdup(below ? below : ""));
        while (ok && (rel = g_queue_pop_head(dirs))) {
                ok = read_dir(s, root_fd, rel, st, dirs, error);
                g_free(rel);
        }
        close(root_fd);
        while ((rel = g_queue_pop_head(dirs)))
                g_free(rel);
        return ok;
}

/* ------------------------------------------------------------------------ */
/* Keeping it current */

static void stat_into(WatchdSnapshot *s, const char *rel, Entry *e) {
        g_autofree char *path = snapshot_full_path(s->path, rel);
        Entry now;

        /* The root is followed as the subscription follows it; entries are
         * what the directory holds (a symbolic link is itself). Gone: what
         * was known stays, for the rescan to find it gone. */
        if (entry_read(&now, AT_FDCWD, path, AT_NO_AUTOMOUNT | (*rel ? AT_SYMLINK_NOFOLLOW : 0)))
                *e = now;
        else if (!e->stated)
                *e = (Entry) { .stated = FALSE };
}

static gboolean is_below(const char *key, const char *dir) {
        size_t n = strlen(dir);

        return strncmp(key, dir, n) == 0 && key[n] == '/';
}

static void forget(WatchdSnapshot *s, const char *rel) {
        Entry *e = g_hash_table_lookup(s->state.entries, rel);
        gboolean dir = !e || !e->stated || S_ISDIR(e->mode);
        GHashTableIter it;
        gpointer key;

        g_hash_table_remove(s->state.entries, rel);
        if (!s->recursive || !dir)
                return;
        g_hash_table_iter_init(&it, s->state.entries);
        while (g_hash_table_iter_next(&it, &key, NULL))
                if (is_below(key, rel))
                        g_hash_table_iter_remove(&it);
}

static void put(WatchdSnapshot *s, const char *rel) {
        Entry *e = g_hash_table_lookup(s->state.entries, rel);

        if (!e) {
                e = g_new0(Entry, 1);
                g_hash_table_insert(s->state.entries, g_strdup(rel), e);
        }
        stat_into(s, rel, e);
}

/* A directory came into a recursive snapshot with its contents (moved in):
 * its entries are what it holds now. */
static void read_below(WatchdSnapshot *s, const char *rel) {
        g_autoptr(GError) error = NULL;
        Entry *e = g_hash_table_lookup(s->state.entries, rel);

        if (s->recursive && e && e->stated && S_ISDIR(e->mode) && !read_state(s, rel, &s->state, &error)) {
                g_debug("Forgetting what \"%s\" held: %s", s->path, error->message);
                s->known = FALSE;
                state_clear(&s->state);
        }
}

static void move(WatchdSnapshot *s, const char *from, const char *to) {
        g_autoptr(GPtrArray) moved = g_ptr_array_new();
        gpointer key, value;
        GHashTableIter it;
        Entry *e;

        if (!g_hash_table_steal_extended(s->state.entries, from, &key, &value)) {
                put(s, to);
                read_below(s, to);
                return;
        }
        g_free(key);
        forget(s, to);
        e = value;
        g_hash_table_insert(s->state.entries, g_strdup(to), e);
        stat_into(s, to, e);
        if (!s->recursive || !S_ISDIR(e->mode))
                return;
        g_hash_table_iter_init(&it, s->state.entries);
        while (g_hash_table_iter_next(&it, &key, NULL))
                if (is_below(key, from))
                        g_ptr_array_add(moved, key);
        for (guint i = 0; i < moved->len; i++) {
                char *old = moved->pdata[i];

                g_hash_table_steal_extended(s->state.entries, old, &key, &value);
                g_hash_table_insert(s->state.entries, g_strconcat(to, old + strlen(from), NULL), value);
                g_free(key);
        }
}

static void root_gone(WatchdSnapshot *s) {
        s->state.present = FALSE;
        g_hash_table_remove_all(s->state.entries);
}

/**
 * watchd_snapshot_note_event:
 * @snapshot: a #WatchdSnapshot
 * @event: an event the program has handled
 *
 * Keeps @snapshot current: the names the event says are there (CREATE,
 * MOVED_TO) or gone (DELETE, MOVED_FROM, and DELETE_SELF, MOVE_SELF or
 * UNMOUNT of the path itself) are added or forgotten, and what is there is
 * read again (a stat). Events outside the snapshot's path, and those
 * marked %WATCHD_EVENT_RESCANNED (made by watchd_snapshot_rescan(), which
 * has applied them), are ignored. Nothing is done before the first scan.
 */
void watchd_snapshot_note_event(WatchdSnapshot *snapshot, const WatchdEvent *event) {
        WatchdSnapshot *s = snapshot;
        guint32 mask;
        const char *rel, *to;

        g_return_if_fail(WATCHD_IS_SNAPSHOT(s));
        g_return_if_fail(event != NULL);
        mask = watchd_event_get_mask(event);
        if (!s->known || (mask & WATCHD_EVENT_RESCANNED))
                return;
        rel = rel_of(s, watchd_event_get_path(event));

        if (watchd_event_is_rename(event)) {
                to = rel_of(s, watchd_event_get_new_path(event));
                if (rel && !*rel)
                        root_gone(s);
                else if (to && !*to) {
                        s->state.present = TRUE;
                        stat_into(s, "", &s->state.root);
                } else if (rel && to)
                        move(s, rel, to);
                else if (rel)
                        forget(s, rel);
                else if (to) {
                        put(s, to);
                        read_below(s, to);
                }
                return;
        }
        if (!rel)
                return;
        if (!*rel) {
                if (mask &
                    (WATCHD_EVENT_DELETE_SELF | WATCHD_EVENT_MOVE_SELF | WATCHD_EVENT_UNMOUNT | WATCHD_EVENT_IGNORED |
                     WATCHD_EVENT_DELETE | WATCHD_EVENT_MOVED_FROM))
                        root_gone(s);
                else if (mask & (WATCHD_EVENT_CREATE | WATCHD_EVENT_MOVED_TO)) {
                        s->state.present = TRUE;
                        stat_into(s, "", &s->state.root);
                } else if (mask & (WATCHD_EVENT_MODIFY | WATCHD_EVENT_ATTRIB | WATCHD_EVENT_CLOSE_WRITE))
                        stat_into(s, "", &s->state.root);
                return;
        }
        if (mask & (WATCHD_EVENT_DELETE | WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_DELETE_SELF | WATCHD_EVENT_MOVE_SELF))
                forget(s, rel);
        else if (mask & (WATCHD_EVENT_CREATE | WATCHD_EVENT_MOVED_TO)) {
                put(s, rel);
                if (mask & WATCHD_EVENT_MOVED_TO)
                        read_below(s, rel);
        } else if (mask & (WATCHD_EVENT_MODIFY | WATCHD_EVENT_ATTRIB | WATCHD_EVENT_CLOSE_WRITE)) {
                Entry *e = g_hash_table_lookup(s->state.entries, rel);

                if (e)
                        stat_into(s, rel, e);
                else
                        put(s, rel); /* a name the snapshot missed: what is there */
        }
}

/**
 * watchd_snapshot_note_events:
 * @snapshot: a #WatchdSnapshot
 * @events: (element-type WatchdEvent): events the program has handled
 *
 * watchd_snapshot_note_event() for each, in order.
 */
void watchd_snapshot_note_events(WatchdSnapshot *snapshot, GPtrArray *events) {
        g_return_if_fail(events != NULL);
        for (guint i = 0; i < events->len; i++)
                watchd_snapshot_note_event(snapshot, events->pdata[i]);
}

/* ------------------------------------------------------------------------ */
/* Scanning, and comparing (watchd-snapshot-diff.c) */

/**
 * watchd_snapshot_scan:
 * @snapshot: a #WatchdSnapshot
 * @error: return location for a #GError
 *
 * Reads what the path holds now, as the state to compare with later,
 * reporting nothing. A path that does not exist is a state too (it is not
 * there). Scan once the path is watched, so that what changes after the
 * scan is in the events.
 *
 * Returns: whether the state is known; %FALSE with @error set if the path
 *   cannot be read (permission) or holds more than
 *   #WatchdSnapshot:max-entries entries
 */
gboolean watchd_snapshot_scan(WatchdSnapshot *snapshot, GError **error) {
        State st = { 0 };

        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), FALSE);
        if (!read_state(snapshot, NULL, &st, error)) {
                state_clear(&st);
                state_clear(&snapshot->state);
                snapshot->known = FALSE;
                return FALSE;
        }
        state_clear(&snapshot->state);
        snapshot->state = st;
        snapshot->known = TRUE;
        return TRUE;
}

/**
 * watchd_snapshot_rescan:
 * @snapshot: a #WatchdSnapshot
 * @error: return location for a #GError
 *
 * Reads the path again and compares it with what @snapshot knew: the
 * differences, as events marked %WATCHD_EVENT_RESCANNED (cookie 0), in
 * this order: renames (an inode found under another name: one event with
 * both paths; the entries of a renamed directory follow it without an
 * event of their own), what went (DELETE, deepest first), what came
 * (CREATE, shallowest first), what was written (MODIFY then CLOSE_WRITE)
 * or had only its metadata changed (ATTRIB). The path itself: DELETE_SELF
 * if it went, CREATE if it came (then every entry is a CREATE), both if
 * another object is there now. %WATCHD_EVENT_ISDIR marks directories.
 * What it read is then what @snapshot knows. Never scanned (or forgotten
 * after an error): it scans, and returns no event.
 *
 * Returns: (transfer container) (element-type WatchdEvent): the
 *   differences (the array holds its events: g_ptr_array_unref() frees
 *   them), or %NULL with @error set as for watchd_snapshot_scan() (the
 *   snapshot then knows nothing until a scan succeeds)
 */
GPtrArray *watchd_snapshot_rescan(WatchdSnapshot *snapshot, GError **error) {
        State now = { 0 };
        GPtrArray *out;

        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), NULL);
        out = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
        if (!snapshot->known) {
                if (!watchd_snapshot_scan(snapshot, error)) {
                        g_ptr_array_unref(out);
                        return NULL;
                }
                return out;
        }
        if (!read_state(snapshot, NULL, &now, error)) {
                state_clear(&now);
                state_clear(&snapshot->state);
                snapshot->known = FALSE;
                g_ptr_array_unref(out);
                return NULL;
        }
        snapshot_diff(snapshot->path, &snapshot->state, &now, out);
        state_clear(&snapshot->state);
        snapshot->state = now;
        return out;
}

/* ------------------------------------------------------------------------ */
/* Following a subscription */

static void follow_on_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        watchd_snapshot_note_events(data, events);
}

static void follow_on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer data) {
        WatchdSnapshot *s = data;
        g_autoptr(GPtrArray) events = NULL;
        g_autoptr(GError) error = NULL;

        events = watchd_snapshot_rescan(s, &error);
        if (!events) {
                g_warning("Cannot compare \"%s\" with what it held before events were lost: %s", s->path, error->message);
                return;
        }
        if (events->len > 0 && watchd_subscription_is_active(sub))
                watchd_subscription_emit_events(sub, events);
}

/**
 * watchd_snapshot_follow:
 * @snapshot: a #WatchdSnapshot of the subscription's path (recursive for a
 *   %WATCHD_WATCH_RECURSIVE subscription)
 * @subscription: the #WatchdSubscription to follow
 *
 * Ties @snapshot to @subscription, which holds it from then on (one
 * snapshot a subscription: another replaces it). @snapshot is noted from
 * the subscription's #WatchdSubscription::events, and after each
 * #WatchdSubscription::overflow (watchd overflowed, the client's context
 * fell behind, watchd restarted, a path was followed) it is rescanned and
 * the differences are emitted as #WatchdSubscription::events, each marked
 * %WATCHD_EVENT_RESCANNED, right after the overflow's handlers ran: a
 * program that handles events learns what changed across the gap without
 * a rescan of its own. A change made around the overflow may be reported
 * twice (by the rescan and by an event that was on its way); none is
 * missed. Call it in the client's context, once the subscription is
 * started (it scans then if @snapshot never did).
 */
void watchd_snapshot_follow(WatchdSnapshot *snapshot, WatchdSubscription *subscription) {
        g_autoptr(GError) error = NULL;

        g_return_if_fail(WATCHD_IS_SNAPSHOT(snapshot));
        g_return_if_fail(WATCHD_IS_SUBSCRIPTION(subscription));
        /* The previous one's handlers go with it (connect_object). */
        g_object_set_data_full(G_OBJECT(subscription), "watchd-snapshot", g_object_ref(snapshot), g_object_unref);
        g_signal_connect_object(subscription, "events", G_CALLBACK(follow_on_events), snapshot, 0);
        g_signal_connect_object(subscription, "overflow", G_CALLBACK(follow_on_overflow), snapshot, G_CONNECT_AFTER);
        if (!snapshot->known && !watchd_snapshot_scan(snapshot, &error))
                g_warning("Cannot read \"%s\" to compare it later: %s", snapshot->path, error->message);
}

/* ------------------------------------------------------------------------ */
/* The object */

static void watchd_snapshot_finalize(GObject *object) {
        WatchdSnapshot *s = WATCHD_SNAPSHOT(object);

        state_clear(&s->state);
        g_free(s->path);
        G_OBJECT_CLASS(watchd_snapshot_parent_class)->finalize(object);
}

static void watchd_snapshot_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
        WatchdSnapshot *s = WATCHD_SNAPSHOT(object);

        switch (prop_id) {
        case PROP_PATH:
                s->path = watchd_canonical_path(g_value_get_string(value));
                break;
        case PROP_RECURSIVE:
                s->recursive = g_value_get_boolean(value);
                break;
        case PROP_MAX_ENTRIES:
                s->max_entries = g_value_get_uint(value);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_snapshot_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
        WatchdSnapshot *s = WATCHD_SNAPSHOT(object);

        switch (prop_id) {
        case PROP_PATH:
                g_value_set_string(value, s->path);
                break;
        case PROP_RECURSIVE:
                g_value_set_boolean(value, s->recursive);
                break;
        case PROP_MAX_ENTRIES:
                g_value_set_uint(value, s->max_entries);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_snapshot_init(WatchdSnapshot *s) {
        s->max_entries = WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES;
}

static void watchd_snapshot_class_init(WatchdSnapshotClass *klass) {
        GObjectClass *object_class = G_OBJECT_CLASS(klass);

        object_class->finalize = watchd_snapshot_finalize;
        object_class->set_property = watchd_snapshot_set_property;
        object_class->get_property = watchd_snapshot_get_property;

        /**
         * WatchdSnapshot:path: (type filename)
         *
         * The path: a directory (its entries, or its tree), or a file.
         */
        props[PROP_PATH] = g_param_spec_string("path", "Path", "The path", "/",
                                               G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSnapshot:recursive:
         *
         * Whether the whole tree is kept, or a directory's own entries only.
         */
        props[PROP_RECURSIVE] = g_param_spec_boolean("recursive", "Recursive", "The whole tree", FALSE,
                                                     G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSnapshot:max-entries:
         *
         * The most entries kept (%WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES by
         * default, about 130 bytes each): a scan that finds more fails, and
         * the snapshot then knows nothing.
         */
        props[PROP_MAX_ENTRIES] = g_param_spec_uint("max-entries", "Max entries", "The most entries kept", 1, G_MAXUINT,
                                                    WATCHD_SNAPSHOT_DEFAULT_MAX_ENTRIES,
                                                    G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties(object_class, N_PROPS, props);
}

/**
 * watchd_snapshot_new:
 * @path: (type filename): an absolute path (bytes): a directory, whose
 *   entries are kept, or a file
 * @recursive: keep the directory's whole tree
 *
 * A snapshot that knows nothing yet: scan it (watchd_snapshot_scan()) once
 * the path is watched, or let watchd_snapshot_follow() do it.
 *
 * Returns: (transfer full): the snapshot
 */
WatchdSnapshot *watchd_snapshot_new(const char *path, gboolean recursive) {
        g_return_val_if_fail(path != NULL && path[0] == '/', NULL);
        return g_object_new(WATCHD_TYPE_SNAPSHOT, "path", path, "recursive", recursive, NULL);
}

/**
 * watchd_snapshot_get_path:
 * @snapshot: a #WatchdSnapshot
 *
 * Returns: (type filename): its path (without repeated or trailing slashes)
 */
const char *watchd_snapshot_get_path(WatchdSnapshot *snapshot) {
        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), NULL);
        return snapshot->path;
}

/**
 * watchd_snapshot_get_recursive:
 * @snapshot: a #WatchdSnapshot
 *
 * Returns: whether it keeps the whole tree
 */
gboolean watchd_snapshot_get_recursive(WatchdSnapshot *snapshot) {
        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), FALSE);
        return snapshot->recursive;
}

/**
 * watchd_snapshot_get_max_entries:
 * @snapshot: a #WatchdSnapshot
 *
 * Returns: the most entries it keeps
 */
guint watchd_snapshot_get_max_entries(WatchdSnapshot *snapshot) {
        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), 0);
        return snapshot->max_entries;
}

/**
 * watchd_snapshot_set_max_entries:
 * @snapshot: a #WatchdSnapshot
 * @max_entries: the most entries to keep (at least 1)
 *
 * Sets #WatchdSnapshot:max-entries, for the scans from now on.
 */
void watchd_snapshot_set_max_entries(WatchdSnapshot *snapshot, guint max_entries) {
        g_return_if_fail(WATCHD_IS_SNAPSHOT(snapshot));
        g_return_if_fail(max_entries >= 1);
        g_object_set(snapshot, "max-entries", max_entries, NULL);
}

/**
 * watchd_snapshot_is_known:
 * @snapshot: a #WatchdSnapshot
 *
 * Returns: whether it holds a state to compare with (scanned, and not
 *   forgotten after a failed scan)
 */
gboolean watchd_snapshot_is_known(WatchdSnapshot *snapshot) {
        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), FALSE);
        return snapshot->known;
}

/**
 * watchd_snapshot_get_n_entries:
 * @snapshot: a #WatchdSnapshot
 *
 * Returns: the entries it knows below its path (0 for a file)
 */
guint watchd_snapshot_get_n_entries(WatchdSnapshot *snapshot) {
        g_return_val_if_fail(WATCHD_IS_SNAPSHOT(snapshot), 0);
        return snapshot->known ? g_hash_table_size(snapshot->state.entries) : 0;
}
