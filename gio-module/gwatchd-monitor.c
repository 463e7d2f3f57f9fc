/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchd-monitor - one GLib file monitor (see gwatchd-monitor.h)
 *
 * Who serves a monitor:
 *   - watchd: its subscriptions are active. A watchd whose Capabilities say
 *     "persistent" follows a deleted or renamed-away directory's path itself
 *     (PERSIST), else the module adds the path again when watchd ends the
 *     subscription (a pending path).
 *   - the module's inotify (on_inotify), when watchd left the bus (libwatchd
 *     keeps the subscriptions and adds them again when it is back: their
 *     "overflow" RESTARTED hands the monitor back), when the monitor was made
 *     while watchd was away (waiting: started when it is back), when watchd
 *     refused it (LimitsExceeded or anything else: GLib's backend would have
 *     watched it, so inotify does, for good), and when the bus connection
 *     closed (for good). A directory that is not there is looked for every
 *     GWATCHD_MISSING_SECONDS, as GLib's backend does.
 * A change of hands places the new watch first, then compares the path with
 * the snapshot (resync()), then drops the old one: the changes in between are
 * reported once by the comparison, or twice (by the comparison and by an
 * event of the watch that was still there), never not at all.
 *
 * Tracker (gwatchd-module.h, GWATCHD_PROCESS_TRACKER) is given a directory
 * renamed away as nothing rather than as DELETED, without PERSIST: Tracker
 * 3.4 drops a directory it is told is deleted, moved or not (docs/CLIENTS.md).
 */

#include <errno.h>
#include <sys/stat.h>

#include <watchd.h>

#include "gwatchd-map.h"
#include "gwatchd-module.h"
#include "gwatchd-monitor.h"

struct GWatchdMonitor {
        gint ref_count;
        GFileMonitorSource *source; /* a reference: GLib's outlives the monitor if need be */
        char *dirname, *basename, *filename;
        char *root; /* what the snapshot keeps: the directory, or the file */
        gboolean hard_links;
        gboolean tracker;

        GMutex lock; /* below */
        gboolean cancelled;
        WatchdSubscription *dir_sub, *file_sub;
        gboolean waiting;    /* to start on watchd when it is back */
        gboolean refused;    /* watchd would not serve it: inotify for good */
        gboolean on_inotify; /* the module's inotify serves it */
        GWatchdInotifyWatch *dir_watch, *file_watch;
        gboolean missing;     /* on inotify, its directory is not there: looked for */
        gboolean name_linked; /* hard links: see gwatchd_map_file_event() */

        /* The module's thread only. */
        WatchdSnapshot *known; /* what the path held, as reported */
};

GWatchdMonitor *gwatchd_monitor_ref(GWatchdMonitor *m) {
        g_atomic_int_inc(&m->ref_count);
        return m;
}

void gwatchd_monitor_unref(GWatchdMonitor *m) {
        if (!g_atomic_int_dec_and_test(&m->ref_count))
                return;
        g_assert(!m->dir_sub && !m->file_sub && !m->dir_watch && !m->file_watch);
        g_source_unref((GSource *) m->source);
        g_clear_object(&m->known);
        g_free(m->dirname);
        g_free(m->basename);
        g_free(m->filename);
        g_free(m->root);
        g_mutex_clear(&m->lock);
        g_free(m);
}

gpointer gwatchd_monitor_ref_cb(gpointer monitor) {
        return gwatchd_monitor_ref(monitor);
}

void gwatchd_monitor_unref_cb(gpointer monitor) {
        gwatchd_monitor_unref(monitor);
}

static void closure_unref(gpointer data, GClosure *closure) {
        gwatchd_monitor_unref(data);
}

GWatchdMonitor *gwatchd_monitor_new(GFileMonitorSource *source, const char *dirname, const char *basename,
                                    const char *filename) {
        GWatchdMonitor *m = g_new0(GWatchdMonitor, 1);

        m->ref_count = 1;
        m->name_linked = TRUE;
        m->source = (GFileMonitorSource *) g_source_ref((GSource *) source);
        m->tracker = gwatchd_module_get_process_kind() == GWATCHD_PROCESS_TRACKER;
        g_mutex_init(&m->lock);
        if (filename) {
                /* WATCH_HARD_LINKS: GLib gives the file's path alone. */
                m->hard_links = TRUE;
                m->filename = g_strdup(filename);
                m->dirname = g_path_get_dirname(filename);
                m->basename = g_path_get_basename(filename);
                m->root = g_strdup(filename);
        } else {
                m->dirname = g_strdup(dirname);
                m->basename = g_strdup(basename);
                m->root = basename ? g_build_filename(dirname, basename, NULL) : g_strdup(dirname);
        }
        return m;
}

static gboolean is_cancelled(GWatchdMonitor *m) {
        gboolean c;

        g_mutex_lock(&m->lock);
        c = m->cancelled;
        g_mutex_unlock(&m->lock);
        return c;
}

/* ------------------------------------------------------------------------ */
/* Reporting */

static GWatchdTarget target(GWatchdMonitor *m, gboolean own_events) {
        WatchdClient *c = gwatchd_module_get_client();

        return (GWatchdTarget) {
                .dirname = m->dirname,
                .basename = m->basename,
                .hard_links = m->hard_links,
                /* What the module says itself (its inotify, a comparison)
                 * includes a directory's return, as GLib's backend says it. */
                .caps = (c ? watchd_client_get_capabilities(c) : 0) |
                        (own_events ? WATCHD_CAPABILITY_REPORT_APPEARANCE : 0),
        };
}

static void retarget(GWatchdMonitor *m);

static void apply_actions(GWatchdMonitor *m, GArray *actions) {
        gint64 now = g_get_monotonic_time();
        gboolean again = FALSE;

        if (is_cancelled(m))
                return;
        for (guint i = 0; i < actions->len; i++) {
                GWatchdAction *a = &g_array_index(actions, GWatchdAction, i);
                g_autoptr(GFile) other = a->other ? g_file_new_for_path(a->other) : NULL;

                gw_debug("-> GLib event %d %s%s%s", a->event, a->child ? a->child : "(the directory)",
                         a->rename_to ? " -> " : "", a->rename_to ? a->rename_to : "");
                g_file_monitor_source_handle_event(m->source, a->event, a->child, a->rename_to, other, now);
                if (a->done_unless_created) {
                        /* ih_event_callback: creat() is followed by
                         * IN_CLOSE_WRITE; mkdir(), link(), mknod() are not. */
                        g_autofree char *path = g_build_filename(m->dirname, a->child, NULL);
                        struct stat sb;

                        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
                                g_file_monitor_source_handle_event(m->source, G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT,
                                                                   a->child, NULL, NULL, now);
                }
                again |= a->retarget;
        }
        if (again)
                retarget(m);
}

/* Events of the directory's watch (watchd's or the module's), as GLib's
 * backend would report them; the snapshot notes them. */
static void handle_dir_events(GWatchdMonitor *m, GPtrArray *events, gboolean own_events) {
        GWatchdTarget t = target(m, own_events);
        g_autoptr(GArray) actions = g_array_new(FALSE, TRUE, sizeof(GWatchdAction));

        g_array_set_clear_func(actions, (GDestroyNotify) gwatchd_action_clear);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                guint32 mask = watchd_event_get_mask(e);

                gw_debug("directory event 0x%x %s%s%s", mask, watchd_event_get_path(e),
                         watchd_event_get_new_path(e) ? " -> " : "",
                         watchd_event_get_new_path(e) ? watchd_event_get_new_path(e) : "");
                if (m->hard_links && (mask & (WATCHD_EVENT_DELETE | WATCHD_EVENT_MOVED_FROM))) {
                        g_autofree char *name = g_path_get_basename(watchd_event_get_path(e));

                        g_mutex_lock(&m->lock);
                        if (g_str_equal(name, m->basename))
                                m->name_linked = FALSE;
                        g_mutex_unlock(&m->lock);
                }
                if (m->known)
                        watchd_snapshot_note_event(m->known, e);
                gwatchd_map_dir_event(&t, e, actions);
        }
        apply_actions(m, actions);
}

static void handle_file_events(GWatchdMonitor *m, GPtrArray *events, gboolean own_events) {
        GWatchdTarget t = target(m, own_events);
        g_autoptr(GArray) actions = g_array_new(FALSE, TRUE, sizeof(GWatchdAction));
        gboolean linked;

        g_array_set_clear_func(actions, (GDestroyNotify) gwatchd_action_clear);
        g_mutex_lock(&m->lock);
        linked = m->name_linked;
        g_mutex_unlock(&m->lock);
        for (guint i = 0; i < events->len; i++) {
                gw_debug("file event 0x%x %s", watchd_event_get_mask(events->pdata[i]),
                         watchd_event_get_path(events->pdata[i]));
                if (m->known)
                        watchd_snapshot_note_event(m->known, events->pdata[i]);
                gwatchd_map_file_event(&t, events->pdata[i], linked, actions);
        }
        apply_actions(m, actions);
}

static gboolean scan_now(gpointer data) {
        GWatchdMonitor *m = data;
        g_autoptr(GError) error = NULL;

        if (is_cancelled(m))
                return G_SOURCE_REMOVE;
        if (!m->known)
                m->known = watchd_snapshot_new(m->root, FALSE);
        if (!watchd_snapshot_is_known(m->known) && !watchd_snapshot_scan(m->known, &error))
                gw_debug("cannot keep what \"%s\" holds (%s): a gap will not be compared", m->root, error->message);
        return G_SOURCE_REMOVE;
}

/* In the module's thread: the path compared with what was reported, the
 * differences reported as GLib's backend would have. why: for the log. */
static void resync(GWatchdMonitor *m, const char *why) {
        g_autoptr(GPtrArray) events = NULL, mapped = NULL;
        g_autoptr(GError) error = NULL;

        if (is_cancelled(m))
                return;
        if (!m->known || !watchd_snapshot_is_known(m->known)) {
                gw_debug("\"%s\": %s, nothing known to compare with", m->root, why);
                scan_now(m);
                return;
        }
        events = watchd_snapshot_rescan(m->known, &error);
        if (!events) {
                gw_debug("\"%s\": %s, cannot compare: %s", m->root, why, error->message);
                return;
        }
        gw_debug("\"%s\": %s: %u differences", m->root, why, events->len);
        if (events->len == 0)
                return;
        /* A file monitor's file is the snapshot's path itself: gone is
         * what its directory says, DELETE of the name. */
        mapped = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                guint32 mask = watchd_event_get_mask(e);

                if (m->basename && (mask & WATCHD_EVENT_DELETE_SELF))
                        g_ptr_array_add(mapped,
                                        watchd_event_new((mask & ~WATCHD_EVENT_DELETE_SELF) | WATCHD_EVENT_DELETE, 0,
                                                         watchd_event_get_path(e), NULL));
                else
                        g_ptr_array_add(mapped, watchd_event_ref(e));
        }
        handle_dir_events(m, mapped, TRUE);
}

/* ------------------------------------------------------------------------ */
/* The module's inotify */

/* Places what the monitor lacks on the module's inotify; a directory that
 * is not there goes on the missing list. Any thread. Whether the directory
 * is watched now. */
static gboolean inotify_place(GWatchdMonitor *m) {
        GWatchdInotify *in = gwatchd_module_get_inotify();
        GWatchdInotifyWatch *dir = NULL, *file = NULL;
        gboolean need_dir, need_file, placed;
        int err = 0;

        g_mutex_lock(&m->lock);
        need_dir = in && !m->cancelled && m->on_inotify && !m->dir_watch;
        need_file = in && !m->cancelled && m->on_inotify && m->hard_links && !m->file_watch;
        g_mutex_unlock(&m->lock);
        if (need_dir)
                dir = gwatchd_inotify_add(
                        in, m->dirname,
                        m->hard_links ? (GWATCHD_INOTIFY_DIR_MASK & ~(WATCHD_EVENT_MODIFY | WATCHD_EVENT_CLOSE_WRITE)) :
                                        GWATCHD_INOTIFY_DIR_MASK,
                        FALSE, m, &err);
        if (need_file && (dir || !need_dir))
                file = gwatchd_inotify_add(in, m->filename,
                                           WATCHD_EVENT_MODIFY | WATCHD_EVENT_ATTRIB | WATCHD_EVENT_CLOSE_WRITE |
                                                   WATCHD_EVENT_DELETE_SELF,
                                           TRUE, m, &(int) { 0 });
        g_mutex_lock(&m->lock);
        if (dir && !m->dir_watch && m->on_inotify && !m->cancelled)
                m->dir_watch = g_steal_pointer(&dir);
        if (file && !m->file_watch && m->on_inotify && !m->cancelled)
                m->file_watch = g_steal_pointer(&file);
        placed = m->dir_watch != NULL;
        if (need_dir && !placed && m->on_inotify && !m->cancelled && !m->missing) {
                gw_debug("\"%s\" cannot be watched (%s): looked for every %d s", m->dirname, g_strerror(-err),
                         GWATCHD_MISSING_SECONDS);
                m->missing = TRUE;
                gwatchd_module_add_missing(m);
        } else if (placed && m->missing) {
                m->missing = FALSE;
                gwatchd_module_remove_missing(m);
        }
        g_mutex_unlock(&m->lock);
        if (dir)
                gwatchd_inotify_remove(in, dir);
        if (file)
                gwatchd_inotify_remove(in, file);
        return placed;
}

/* The module's inotify serves the monitor from now on. */
static void inotify_start(GWatchdMonitor *m, const char *why) {
        g_mutex_lock(&m->lock);
        if (!m->on_inotify)
                gw_debug("\"%s\": the module's inotify serves it (%s)", m->root, why);
        m->on_inotify = TRUE;
        g_mutex_unlock(&m->lock);
        inotify_place(m);
}

/* It does no longer. */
static void inotify_stop(GWatchdMonitor *m) {
        GWatchdInotifyWatch *dir, *file;
        gboolean missing;

        g_mutex_lock(&m->lock);
        m->on_inotify = FALSE;
        dir = g_steal_pointer(&m->dir_watch);
        file = g_steal_pointer(&m->file_watch);
        missing = m->missing;
        m->missing = FALSE;
        g_mutex_unlock(&m->lock);
        if (missing)
                gwatchd_module_remove_missing(m);
        if (dir)
                gwatchd_inotify_remove(gwatchd_module_get_inotify(), dir);
        if (file)
                gwatchd_inotify_remove(gwatchd_module_get_inotify(), file);
}

void gwatchd_monitor_inotify_events(gpointer monitor, GWatchdInotifyWatch *watch, GPtrArray *events) {
        GWatchdMonitor *m = monitor;
        g_autoptr(GPtrArray) kept = NULL;
        gboolean file;

        g_mutex_lock(&m->lock);
        file = watch == m->file_watch;
        if (m->cancelled || !m->on_inotify || (watch != m->dir_watch && watch != m->file_watch)) {
                g_mutex_unlock(&m->lock);
                return;
        }
        g_mutex_unlock(&m->lock);
        if (file) {
                handle_file_events(m, events, TRUE);
                return;
        }
        /* Tracker: a directory renamed away is not said (see the top). */
        kept = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];

                if (m->tracker && (watchd_event_get_mask(e) & WATCHD_EVENT_MOVE_SELF))
                        continue;
                g_ptr_array_add(kept, watchd_event_ref(e));
        }
        handle_dir_events(m, kept, TRUE);
}

void gwatchd_monitor_inotify_gone(gpointer monitor, GWatchdInotifyWatch *watch) {
        GWatchdMonitor *m = monitor;
        GWatchdInotifyWatch *dropped = NULL;
        gboolean dir;

        g_mutex_lock(&m->lock);
        dir = FALSE;
        if (watch == m->dir_watch) {
                dropped = g_steal_pointer(&m->dir_watch);
                /* The directory went (deleted, unmounted, renamed away): on
                 * the missing list, as GLib's backend puts it, whose return
                 * is said when it is found (gwatchd_monitor_missing_tick). */
                dir = m->on_inotify && !m->cancelled && !m->missing;
                if (dir)
                        m->missing = TRUE;
        } else if (watch == m->file_watch)
                dropped = g_steal_pointer(&m->file_watch);
        g_mutex_unlock(&m->lock);
        if (dropped)
                gwatchd_inotify_remove(gwatchd_module_get_inotify(), dropped);
        if (dir)
                gwatchd_module_add_missing(m);
}

void gwatchd_monitor_inotify_overflow(gpointer monitor) {
        resync(monitor, "the module's inotify overflowed");
}

void gwatchd_monitor_missing_tick(gpointer monitor) {
        GWatchdMonitor *m = monitor;
        gboolean wanted;

        g_mutex_lock(&m->lock);
        wanted = m->on_inotify && !m->cancelled && m->missing;
        g_mutex_unlock(&m->lock);
        if (!wanted) {
                gwatchd_module_remove_missing(m);
                return;
        }
        if (!inotify_place(m))
                return;
        /* Back: said as GLib's backend says it (ih_not_missing_callback:
         * CREATED and CHANGES_DONE_HINT of the monitor's name, or of the
         * directory), and what it holds is the state to compare with from
         * now on (GLib's backend does not list it). */
        {
                g_autoptr(GPtrArray) back = g_ptr_array_new_with_free_func((GDestroyNotify) watchd_event_unref);
                g_autoptr(GError) error = NULL;

                g_ptr_array_add(back, watchd_event_new(WATCHD_EVENT_CREATE | WATCHD_EVENT_ISDIR, 0, m->dirname, NULL));
                handle_dir_events(m, back, TRUE);
                if (m->known && !watchd_snapshot_scan(m->known, &error))
                        gw_debug("cannot keep what \"%s\" holds (%s)", m->root, error->message);
        }
}

/* ------------------------------------------------------------------------ */
/* watchd */

static void on_dir_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        handle_dir_events(data, events, FALSE);
}

static void on_file_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        handle_file_events(data, events, FALSE);
}

/* watchd serves it again (its subscription was added again after a
 * restart, or started once watchd was back): the module's inotify is
 * dropped after the comparison. */
static void back_on_watchd(GWatchdMonitor *m, const char *why) {
        gboolean was;

        g_mutex_lock(&m->lock);
        was = m->on_inotify && !m->refused;
        g_mutex_unlock(&m->lock);
        resync(m, why);
        if (was) {
                gw_debug("\"%s\": watchd serves it again", m->root);
                inotify_stop(m);
        }
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer data) {
        GWatchdMonitor *m = data;

        if (reason == WATCHD_OVERFLOW_RESTARTED)
                back_on_watchd(m, "watchd restarted");
        else
                resync(m, reason == WATCHD_OVERFLOW_FOLLOWED ? "its path was followed" : "events were lost");
}

static void start_subs(GWatchdMonitor *m, gboolean sync);

static void on_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail, const GError *error,
                       gpointer data) {
        GWatchdMonitor *m = data;
        gboolean again = FALSE, refused = FALSE;

        gw_debug("watchd ended the watch of \"%s\" (%s)", watchd_subscription_get_path(sub), detail);
        g_mutex_lock(&m->lock);
        if (sub == m->dir_sub) {
                g_clear_object(&m->dir_sub);
                /* The directory went: watch its path again, pending until
                 * it is back (a GLib monitor outlives its directory). Not
                 * with PERSIST: watchd follows the path itself, and ends it
                 * only when the path cannot be followed at all. */
                again = !m->cancelled && !(watchd_subscription_get_flags(sub) & WATCHD_WATCH_PERSIST) &&
                        (reason == WATCHD_REMOVED_DELETED || reason == WATCHD_REMOVED_UNMOUNTED);
        } else if (sub == m->file_sub)
                g_clear_object(&m->file_sub);
        /* Refused after a restart: GLib's backend would watch it. */
        if (reason == WATCHD_REMOVED_ERROR && !m->cancelled) {
                refused = TRUE;
                m->refused = TRUE;
        }
        g_mutex_unlock(&m->lock);
        if (again)
                start_subs(m, FALSE);
        if (refused) {
                inotify_start(m, error ? error->message : detail);
                resync(m, "watchd refused it after a restart");
        }
}

static WatchdSubscription *new_sub(GWatchdMonitor *m, const char *path, WatchdEventMask mask, gboolean file) {
        WatchdClient *client = gwatchd_module_get_client();
        WatchdCapabilities caps = watchd_client_get_capabilities(client);
        WatchdWatchFlags flags = file ? 0 : WATCHD_WATCH_ONLYDIR;
        WatchdSubscription *sub;

        /* Not for Tracker: with PERSIST a directory renamed away is DELETED,
         * as GLib's backend says for IN_MOVE_SELF, and Tracker 3.4 then
         * drops the moved directory from its index (it does so on GLib's
         * inotify backend too; tests/gio/test-tracker, "move a directory").
         * Without it watchd follows the directory to its new name silently,
         * and a deleted one is added again as a pending path (above). */
        if (!file && (caps & WATCHD_CAPABILITY_PERSISTENT) && !m->tracker)
                flags |= WATCHD_WATCH_PERSIST;
        sub = watchd_subscription_new(client, path, mask, flags);
        g_signal_connect_data(sub, "events", file ? G_CALLBACK(on_file_events) : G_CALLBACK(on_dir_events),
                              gwatchd_monitor_ref(m), closure_unref, 0);
        g_signal_connect_data(sub, "overflow", G_CALLBACK(on_overflow), gwatchd_monitor_ref(m), closure_unref, 0);
        g_signal_connect_data(sub, "removed", G_CALLBACK(on_removed), gwatchd_monitor_ref(m), closure_unref, 0);
        return sub;
}

static gboolean error_means_not_running(const GError *error) {
        return g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
                g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
                g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) ||
                g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED) ||
                g_error_matches(error, WATCHD_ERROR, WATCHD_ERROR_NOT_RUNNING) ||
                g_error_matches(error, WATCHD_ERROR, WATCHD_ERROR_DAEMON_GONE);
}

static gboolean daemon_back_once(gpointer data) {
        gwatchd_monitor_daemon_back(data);
        return G_SOURCE_REMOVE;
}

/* A start that failed: the module's inotify serves the monitor, until
 * watchd is back if it is away, for good if watchd refused it (GLib's
 * backend would have watched it: a path over a limit of watchd's, one
 * watchd may not open, ...). */
static void start_failed(GWatchdMonitor *m, WatchdSubscription *sub, const GError *error) {
        gboolean wait = error_means_not_running(error);

        gw_debug("watchd does not watch \"%s\": %s%s", watchd_subscription_get_path(sub), error->message,
                 wait ? " (started when watchd is back)" : "");
        g_mutex_lock(&m->lock);
        if (sub == m->dir_sub)
                g_clear_object(&m->dir_sub);
        if (sub == m->file_sub)
                g_clear_object(&m->file_sub);
        if (wait)
                m->waiting = TRUE;
        else
                m->refused = TRUE;
        g_mutex_unlock(&m->lock);
        inotify_start(m, error->message);
        /* Back before it was waiting: the module's thread starts it. */
        if (wait && gwatchd_module_daemon_serves())
                g_main_context_invoke_full(gwatchd_module_get_context(), G_PRIORITY_DEFAULT, daemon_back_once,
                                           gwatchd_monitor_ref(m), (GDestroyNotify) gwatchd_monitor_unref);
}

static void on_started(GObject *source, GAsyncResult *result, gpointer data) {
        GWatchdMonitor *m = data;
        g_autoptr(GError) error = NULL;

        if (watchd_subscription_start_finish(WATCHD_SUBSCRIPTION(source), result, &error))
                back_on_watchd(m, "watchd is back");
        else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                start_failed(m, WATCHD_SUBSCRIPTION(source), error);
        gwatchd_monitor_unref(m);
}

static void start_sub(GWatchdMonitor *m, WatchdSubscription *sub, gboolean sync) {
        g_autoptr(GError) error = NULL;

        if (!sync) {
                watchd_subscription_start(sub, NULL, on_started, gwatchd_monitor_ref(m));
                return;
        }
        if (!watchd_subscription_start_sync(sub, NULL, &error))
                start_failed(m, sub, error);
}

/* Adds what the monitor lacks on watchd: its directory's subscription, and
 * the file's with hard links. sync: in start() (any thread), else async
 * (the module's thread, whose context must not block). */
static void start_subs(GWatchdMonitor *m, gboolean sync) {
        g_autoptr(WatchdSubscription) dir_sub = NULL, file_sub = NULL;

        g_mutex_lock(&m->lock);
        if (!m->cancelled && !m->refused && !m->dir_sub)
                dir_sub = m->dir_sub = new_sub(m, m->dirname,
                                               m->hard_links ? GWATCHD_HARD_LINKS_DIR_MASK : GWATCHD_DIR_MASK, FALSE);
        if (!m->cancelled && !m->refused && m->hard_links && !m->file_sub)
                file_sub = m->file_sub = new_sub(m, m->filename, GWATCHD_HARD_LINKS_FILE_MASK, TRUE);
        if (dir_sub)
                g_object_ref(dir_sub);
        if (file_sub)
                g_object_ref(file_sub);
        m->waiting = FALSE;
        g_mutex_unlock(&m->lock);
        if (dir_sub)
                start_sub(m, dir_sub, sync);
        if (file_sub)
                start_sub(m, file_sub, sync);
}

void gwatchd_monitor_daemon_gone(gpointer monitor, gboolean closed) {
        GWatchdMonitor *m = monitor;
        gboolean already;

        g_mutex_lock(&m->lock);
        already = m->on_inotify;
        if (closed)
                m->refused = TRUE; /* no watchd on a closed connection: for good */
        g_mutex_unlock(&m->lock);
        if (is_cancelled(m) || already)
                return;
        /* The new watch first, then what happened since the last event. */
        inotify_start(m, closed ? "the bus connection closed" : "watchd left the bus");
        resync(m, "watchd left");
}

void gwatchd_monitor_daemon_back(gpointer monitor) {
        GWatchdMonitor *m = monitor;
        gboolean waiting;

        g_mutex_lock(&m->lock);
        waiting = m->waiting && !m->cancelled && !m->refused;
        g_mutex_unlock(&m->lock);
        if (waiting)
                start_subs(m, FALSE);
}

/* Hard links: the name is another inode now (created, renamed over). */
static void retarget(GWatchdMonitor *m) {
        WatchdSubscription *old;
        GWatchdInotifyWatch *old_watch;
        gboolean on_inotify;

        g_mutex_lock(&m->lock);
        old = g_steal_pointer(&m->file_sub);
        old_watch = g_steal_pointer(&m->file_watch);
        on_inotify = m->on_inotify;
        m->name_linked = TRUE;
        g_mutex_unlock(&m->lock);
        if (old) {
                watchd_subscription_cancel(old);
                g_object_unref(old);
        }
        if (old_watch)
                gwatchd_inotify_remove(gwatchd_module_get_inotify(), old_watch);
        if (on_inotify)
                inotify_place(m);
        if (gwatchd_module_get_client() && gwatchd_module_daemon_serves())
                start_subs(m, FALSE);
}

/* ------------------------------------------------------------------------ */

void gwatchd_monitor_start(GWatchdMonitor *m) {
        WatchdClient *client = gwatchd_module_get_client();
        GSource *idle;

        gwatchd_module_add_monitor(m);
        if (!client || gwatchd_module_is_closed()) {
                g_mutex_lock(&m->lock);
                m->refused = TRUE;
                g_mutex_unlock(&m->lock);
                inotify_start(m, client ? "the bus connection closed" : "WATCHD_GIO_INOTIFY=1");
        } else
                /* Also while watchd is away: an activatable one is started
                 * by the call; else it fails at once (start_failed()). */
                start_subs(m, TRUE);
        /* Once it is watched: the state to compare with later (before the
         * events that follow, of the same priority). */
        idle = g_idle_source_new();
        g_source_set_priority(idle, G_PRIORITY_DEFAULT);
        g_source_set_callback(idle, scan_now, gwatchd_monitor_ref(m), (GDestroyNotify) gwatchd_monitor_unref);
        g_source_attach(idle, gwatchd_module_get_context());
        g_source_unref(idle);
}

void gwatchd_monitor_cancel(GWatchdMonitor *m) {
        WatchdSubscription *subs[2];
        GWatchdInotifyWatch *watches[2];
        gboolean missing;

        g_mutex_lock(&m->lock);
        if (m->cancelled) {
                g_mutex_unlock(&m->lock);
                return;
        }
        m->cancelled = TRUE;
        subs[0] = g_steal_pointer(&m->dir_sub);
        subs[1] = g_steal_pointer(&m->file_sub);
        watches[0] = g_steal_pointer(&m->dir_watch);
        watches[1] = g_steal_pointer(&m->file_watch);
        missing = m->missing;
        m->missing = FALSE;
        g_mutex_unlock(&m->lock);
        for (size_t i = 0; i < G_N_ELEMENTS(subs); i++)
                if (subs[i]) {
                        watchd_subscription_cancel(subs[i]);
                        g_object_unref(subs[i]);
                }
        for (size_t i = 0; i < G_N_ELEMENTS(watches); i++)
                if (watches[i])
                        gwatchd_inotify_remove(gwatchd_module_get_inotify(), watches[i]);
        if (missing)
                gwatchd_module_remove_missing(m);
        gwatchd_module_remove_monitor(m);
}
