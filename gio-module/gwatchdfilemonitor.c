/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchdfilemonitor - GLib's file monitors through watchd (libgiowatchd.so)
 *
 * A GLocalFileMonitor on the "gio-local-file-monitor" extension point,
 * named "watchd", priority 30 (inotify's is 20): GLib picks it when
 * GIO_USE_FILE_MONITOR=watchd, and otherwise whenever its is_supported()
 * finds watchd on the system bus (DBUS_SYSTEM_BUS_ADDRESS or the standard
 * socket), else on the session bus (DBUS_SESSION_BUS_ADDRESS, or
 * $XDG_RUNTIME_DIR/bus: a session bus is never autolaunched). When neither
 * answers within GWATCHD_PROBE_TIMEOUT_MS, it says no and GLib uses inotify.
 * GLib asks once per process.
 *
 * Threads: the module has one thread of its own, started by the first
 * is_supported(): it probes the buses, then runs the GMainContext of the
 * process's one WatchdClient, where every event of every monitor arrives
 * and is handed to g_file_monitor_source_handle_event() (thread-safe; the
 * GFileMonitorSource then emits "changed" in the monitor's own context).
 * GLib calls start() and cancel() from whatever thread makes or drops a
 * monitor: start() adds the watch synchronously (so an event right after
 * g_file_monitor() returns is reported, as with inotify), bounded by the
 * client's call-timeout.
 *
 * What GLib's inotify backend would say is computed by gwatchd-map.c; this
 * file holds the subscriptions. A monitor watches its directory; with
 * WATCH_HARD_LINKS also the file itself, whose subscription moves to the new
 * file when the name is created or renamed over again.
 *
 * A GLib monitor outlives its directory: deleted, unmounted or renamed
 * away, GLib's backend puts it on its missing list and says CREATED when the
 * path is back. A watchd whose Capabilities say "persistent" does that
 * itself: the directory's subscription has PERSIST (watchd(8), MISSING
 * PATHS), and with "report-appearance" the return is a record
 * (gwatchd-map.c says CREATED for it). With an older watchd, which ends the
 * subscription, the module adds the path again at once, as a pending path:
 * it then reports again once the directory is back, but not the return
 * itself nor what was made before the new watch was placed.
 */

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <gio/gio.h>
#include <watchd.h>

#include "glocalfilemonitor-layout.h"
#include "gwatchd-map.h"

#define GWATCHD_PRIORITY 30
#define GWATCHD_PROBE_TIMEOUT_MS 500
#define GWATCHD_CALL_TIMEOUT_MS 5000
#define G_LOG_DOMAIN_WATCHD "watchd-gio"

/* G_MESSAGES_DEBUG=watchd-gio shows what the module does, an event a line;
 * decided once, so that nothing is formatted otherwise. */
static gboolean gw_debug_on;
#define gw_debug(...)                                                                                    \
        do {                                                                                             \
                if (G_UNLIKELY(gw_debug_on))                                                             \
                        g_log(G_LOG_DOMAIN_WATCHD, G_LOG_LEVEL_DEBUG, __VA_ARGS__);                      \
        } while (0)

/* ------------------------------------------------------------------------ */
/* The module: its thread and its client */

typedef enum ProbeState {
        PROBE_NOT_STARTED,
        PROBE_RUNNING,
        PROBE_DONE,
} ProbeState;

typedef struct MonitorState MonitorState;

static struct {
        GMutex lock;
        GCond cond;
        ProbeState probe;
        gboolean abandoned;     /* is_supported() stopped waiting: the answer was no */
        gboolean supported;
        WatchdClient *client;   /* set once, never freed (a module is never unloaded) */
        GMainContext *context;
        GPtrArray *waiting;     /* MonitorState* (references) to start once watchd is back */
        gint64 probe_usec;
        gboolean tracker_compat; /* WATCHD_GIO_TRACKER_COMPAT=1: Tracker's ways (monitor_type_name()) */
} module;

static void monitor_state_start(MonitorState *st, gboolean sync);

/* The session bus, if there is one: never autolaunched from a monitor. */
static char *session_bus_address(void) {
        const char *env = g_getenv("DBUS_SESSION_BUS_ADDRESS");
        const char *runtime = g_getenv("XDG_RUNTIME_DIR");
        g_autofree char *path = NULL, *escaped = NULL;
        struct stat st;

        if (env && *env)
                return g_strdup(env);
        if (!runtime || !*runtime)
                return NULL;
        path = g_build_filename(runtime, "bus", NULL);
        if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
                return NULL;
        escaped = g_dbus_address_escape_value(path);
        return g_strconcat("unix:path=", escaped, NULL);
}

static char *system_bus_address(void) {
        const char *env = g_getenv("DBUS_SYSTEM_BUS_ADDRESS");

        return g_strdup(env && *env ? env : "unix:path=/var/run/dbus/system_bus_socket");
}

/* A client on the first bus where watchd runs, or NULL. */
static WatchdClient *probe_buses(void) {
        char *addresses[2] = { system_bus_address(), session_bus_address() };
        WatchdClient *found = NULL;

        for (size_t i = 0; i < G_N_ELEMENTS(addresses) && !found; i++) {
                g_autoptr(GError) error = NULL;
                WatchdClient *c;

                if (!addresses[i])
                        continue;
                c = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", addresses[i], "call-timeout",
                                   GWATCHD_CALL_TIMEOUT_MS, NULL);
                if (!c) {
                        gw_debug("no bus at %s: %s", addresses[i], error->message);
                        continue;
                }
                if (watchd_client_get_daemon_running(c)) {
                        gw_debug("watchd found on %s", addresses[i]);
                        found = c;
                } else {
                        gw_debug("watchd is not running on %s", addresses[i]);
                        watchd_client_close(c);
                        g_object_unref(c);
                }
        }
        g_free(addresses[0]);
        g_free(addresses[1]);
        return found;
}

static void on_daemon_running(WatchdClient *client, GParamSpec *pspec, gpointer data) {
        g_autoptr(GPtrArray) waiting = NULL;

        if (!watchd_client_get_daemon_running(client))
                return;
        g_mutex_lock(&module.lock);
        waiting = g_steal_pointer(&module.waiting);
        module.waiting = g_ptr_array_new();
        g_mutex_unlock(&module.lock);
        for (guint i = 0; i < waiting->len; i++)
                monitor_state_start(waiting->pdata[i], FALSE);
        g_ptr_array_set_free_func(waiting, NULL);
}

static gpointer module_thread(gpointer data) {
        gint64 start = g_get_monotonic_time();
        WatchdClient *client;
        GMainLoop *loop;

        g_main_context_push_thread_default(module.context);
        client = probe_buses();

        g_mutex_lock(&module.lock);
        module.probe_usec = g_get_monotonic_time() - start;
        module.probe = PROBE_DONE;
        if (client && !module.abandoned) {
                module.client = client;
                module.supported = TRUE;
        }
        g_cond_broadcast(&module.cond);
        g_mutex_unlock(&module.lock);

        if (!module.supported) {
                if (client) {
                        watchd_client_close(client);
                        g_object_unref(client);
                }
                g_main_context_pop_thread_default(module.context);
                return NULL;
        }
        g_signal_connect(client, "notify::daemon-running", G_CALLBACK(on_daemon_running), NULL);
        /* Runs for the life of the process: the client's signals come here. */
        loop = g_main_loop_new(module.context, FALSE);
        g_main_loop_run(loop);
        g_main_loop_unref(loop);
        return NULL;
}

static gboolean module_is_supported(void) {
        gint64 deadline;
        gboolean supported;

        g_mutex_lock(&module.lock);
        if (module.probe == PROBE_NOT_STARTED) {
                module.probe = PROBE_RUNNING;
                module.context = g_main_context_new();
                module.waiting = g_ptr_array_new();
                g_thread_unref(g_thread_new("gio-watchd", module_thread, NULL));
        }
        deadline = g_get_monotonic_time() + GWATCHD_PROBE_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;
        while (module.probe != PROBE_DONE && !module.abandoned)
                if (!g_cond_wait_until(&module.cond, &module.lock, deadline)) {
                        gw_debug("no answer from the buses in %d ms: not supported", GWATCHD_PROBE_TIMEOUT_MS);
                        module.abandoned = TRUE;
                }
        supported = module.supported;
        if (module.probe == PROBE_DONE)
                gw_debug("probe: %s in %" G_GINT64_FORMAT " us", supported ? "supported" : "not supported",
                         module.probe_usec);
        g_mutex_unlock(&module.lock);
        return supported;
}

/* ------------------------------------------------------------------------ */
/* One monitor's subscriptions */

struct MonitorState {
        gint ref_count;
        GFileMonitorSource *source;     /* a reference: GLib's outlives the monitor if need be */
        char *dirname, *basename, *filename;
        gboolean hard_links;

        GMutex lock;                    /* below */
        gboolean cancelled;
        WatchdSubscription *dir_sub;
        WatchdSubscription *file_sub;
        gboolean name_linked;           /* hard links: see gwatchd_map_file_event() */
};

static MonitorState *monitor_state_ref(MonitorState *st) {
        g_atomic_int_inc(&st->ref_count);
        return st;
}

static void monitor_state_unref(gpointer p) {
        MonitorState *st = p;

        if (!g_atomic_int_dec_and_test(&st->ref_count))
                return;
        g_assert(!st->dir_sub && !st->file_sub);
        g_source_unref((GSource *) st->source);
        g_free(st->dirname);
        g_free(st->basename);
        g_free(st->filename);
        g_mutex_clear(&st->lock);
        g_free(st);
}

static void closure_unref(gpointer data, GClosure *closure) {
        monitor_state_unref(data);
}

static GWatchdTarget monitor_target(MonitorState *st) {
        return (GWatchdTarget) {
                .dirname = st->dirname,
                .basename = st->basename,
                .hard_links = st->hard_links,
                .caps = watchd_client_get_capabilities(module.client),
        };
}

static void apply_actions(MonitorState *st, GArray *actions);

static void on_dir_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        MonitorState *st = data;
        GWatchdTarget t = monitor_target(st);
        g_autoptr(GArray) actions = g_array_new(FALSE, TRUE, sizeof(GWatchdAction));

        g_array_set_clear_func(actions, (GDestroyNotify) gwatchd_action_clear);
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                guint32 mask = watchd_event_get_mask(e);

                gw_debug("directory event 0x%x %s%s%s", mask, watchd_event_get_path(e),
                         watchd_event_get_new_path(e) ? " -> " : "",
                         watchd_event_get_new_path(e) ? watchd_event_get_new_path(e) : "");
                if (st->hard_links && (mask & (WATCHD_EVENT_DELETE | WATCHD_EVENT_MOVED_FROM))) {
                        g_autofree char *name = g_path_get_basename(watchd_event_get_path(e));

                        g_mutex_lock(&st->lock);
                        if (g_str_equal(name, st->basename))
                                st->name_linked = FALSE;
                        g_mutex_unlock(&st->lock);
                }
                gwatchd_map_dir_event(&t, e, actions);
        }
        apply_actions(st, actions);
}

static void on_file_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        MonitorState *st = data;
        GWatchdTarget t = monitor_target(st);
        g_autoptr(GArray) actions = g_array_new(FALSE, TRUE, sizeof(GWatchdAction));
        gboolean linked;

        g_array_set_clear_func(actions, (GDestroyNotify) gwatchd_action_clear);
        g_mutex_lock(&st->lock);
        linked = st->name_linked;
        g_mutex_unlock(&st->lock);
        for (guint i = 0; i < events->len; i++) {
                gw_debug("file event (id %u) 0x%x %s", watchd_subscription_get_id(sub), watchd_event_get_mask(events->pdata[i]),
                         watchd_event_get_path(events->pdata[i]));
                gwatchd_map_file_event(&t, events->pdata[i], linked, actions);
        }
        apply_actions(st, actions);
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer data) {
        /* GFileMonitor has no event for "events were lost": GLib's inotify
         * backend drops IN_Q_OVERFLOW too. Said for whoever debugs. */
        gw_debug("events under \"%s\" may have been lost (%s)", watchd_subscription_get_path(sub),
                 reason == WATCHD_OVERFLOW_RESTARTED ? "watchd restarted" : "overflow");
}

static void on_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                       const GError *error, gpointer data) {
        MonitorState *st = data;
        gboolean again = FALSE;

        gw_debug("watchd ended the watch of \"%s\" (%s)", watchd_subscription_get_path(sub), detail);
        g_mutex_lock(&st->lock);
        if (sub == st->dir_sub) {
                g_clear_object(&st->dir_sub);
                /* The directory went: watch its path again, pending until
                 * it is back (a GLib monitor outlives its directory). Not
                 * with PERSIST: watchd follows the path itself, and ends it
                 * only when the path cannot be followed at all. */
                again = !st->cancelled && !(watchd_subscription_get_flags(sub) & WATCHD_WATCH_PERSIST) &&
                        (reason == WATCHD_REMOVED_DELETED || reason == WATCHD_REMOVED_UNMOUNTED);
        } else if (sub == st->file_sub)
                g_clear_object(&st->file_sub);
        g_mutex_unlock(&st->lock);
        if (again)
                monitor_state_start(st, FALSE);
}

static WatchdSubscription *new_sub(MonitorState *st, const char *path, WatchdEventMask mask, gboolean file) {
        WatchdCapabilities caps = watchd_client_get_capabilities(module.client);
        WatchdWatchFlags flags = file ? 0 : WATCHD_WATCH_ONLYDIR;
        WatchdSubscription *sub;

        /* Not for Tracker: with PERSIST a directory renamed away is DELETED,
         * as GLib's backend says for IN_MOVE_SELF, and Tracker 3.4 then
         * drops the moved directory from its index (it does so on GLib's
         * inotify backend too; tests/gio/test-tracker, "move a directory").
         * Without it watchd follows the directory to its new name silently,
         * and a deleted one is added again as a pending path (above). */
        if (!file && (caps & WATCHD_CAPABILITY_PERSISTENT) && !module.tracker_compat)
                flags |= WATCHD_WATCH_PERSIST;
        sub = watchd_subscription_new(module.client, path, mask, flags);
        g_signal_connect_data(sub, "events", file ? G_CALLBACK(on_file_events) : G_CALLBACK(on_dir_events),
                              monitor_state_ref(st), closure_unref, 0);
        g_signal_connect(sub, "overflow", G_CALLBACK(on_overflow), st);
        g_signal_connect_data(sub, "removed", G_CALLBACK(on_removed), monitor_state_ref(st), closure_unref, 0);
        return sub;
}

static gboolean error_means_not_running(const GError *error) {
        return g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
               g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
               g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) ||
               g_error_matches(error, WATCHD_ERROR, WATCHD_ERROR_DAEMON_GONE);
}

/* A start that failed: wait for watchd if it is away; else the monitor is
 * silent, as GLib's inotify backend is for a path it cannot watch. */
static void start_failed(MonitorState *st, WatchdSubscription *sub, const GError *error) {
        gboolean wait = error_means_not_running(error);

        gw_debug("cannot watch \"%s\": %s%s", watchd_subscription_get_path(sub), error->message,
                 wait ? " (added when watchd is back)" : "");
        g_mutex_lock(&st->lock);
        if (sub == st->dir_sub)
                g_clear_object(&st->dir_sub);
        if (sub == st->file_sub)
                g_clear_object(&st->file_sub);
        g_mutex_unlock(&st->lock);
        if (wait) {
                g_mutex_lock(&module.lock);
                g_ptr_array_add(module.waiting, monitor_state_ref(st));
                g_mutex_unlock(&module.lock);
        }
}

static void on_started(GObject *source, GAsyncResult *result, gpointer data) {
        MonitorState *st = data;
        g_autoptr(GError) error = NULL;

        if (!watchd_subscription_start_finish(WATCHD_SUBSCRIPTION(source), result, &error) &&
            !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                start_failed(st, WATCHD_SUBSCRIPTION(source), error);
        monitor_state_unref(st);
}

static void start_sub(MonitorState *st, WatchdSubscription *sub, gboolean sync) {
        g_autoptr(GError) error = NULL;

        if (!sync) {
                watchd_subscription_start(sub, NULL, on_started, monitor_state_ref(st));
                return;
        }
        if (!watchd_subscription_start_sync(sub, NULL, &error))
                start_failed(st, sub, error);
}

/* Adds what the monitor lacks: its directory's subscription, and the
 * file's with hard links. sync: in start() (any thread), else async (the
 * module's thread, whose context must not block). */
static void monitor_state_start(MonitorState *st, gboolean sync) {
        g_autoptr(WatchdSubscription) dir_sub = NULL, file_sub = NULL;

        g_mutex_lock(&st->lock);
        if (!st->cancelled && !st->dir_sub)
                dir_sub = st->dir_sub =
                        new_sub(st, st->dirname, st->hard_links ? GWATCHD_HARD_LINKS_DIR_MASK : GWATCHD_DIR_MASK,
                                FALSE);
        if (!st->cancelled && st->hard_links && !st->file_sub)
                file_sub = st->file_sub = new_sub(st, st->filename, GWATCHD_HARD_LINKS_FILE_MASK, TRUE);
        if (dir_sub)
                g_object_ref(dir_sub);
        if (file_sub)
                g_object_ref(file_sub);
        g_mutex_unlock(&st->lock);
        if (dir_sub)
                start_sub(st, dir_sub, sync);
        if (file_sub)
                start_sub(st, file_sub, sync);
}

/* Hard links: the name is another inode now (created, renamed over). */
static void monitor_state_retarget(MonitorState *st) {
        WatchdSubscription *old;

        g_mutex_lock(&st->lock);
        old = g_steal_pointer(&st->file_sub);
        st->name_linked = TRUE;
        g_mutex_unlock(&st->lock);
        if (old) {
                watchd_subscription_cancel(old);
                g_object_unref(old);
        }
        monitor_state_start(st, FALSE);
}

static void monitor_state_cancel(MonitorState *st) {
        WatchdSubscription *subs[2];

        g_mutex_lock(&st->lock);
        st->cancelled = TRUE;
        subs[0] = g_steal_pointer(&st->dir_sub);
        subs[1] = g_steal_pointer(&st->file_sub);
        g_mutex_unlock(&st->lock);
        for (size_t i = 0; i < G_N_ELEMENTS(subs); i++)
                if (subs[i]) {
                        watchd_subscription_cancel(subs[i]);
                        g_object_unref(subs[i]);
                }
}

static void apply_actions(MonitorState *st, GArray *actions) {
        gint64 now = g_get_monotonic_time();
        gboolean retarget = FALSE, cancelled;

        g_mutex_lock(&st->lock);
        cancelled = st->cancelled;
        g_mutex_unlock(&st->lock);
        if (cancelled)
                return;
        for (guint i = 0; i < actions->len; i++) {
                GWatchdAction *a = &g_array_index(actions, GWatchdAction, i);
                g_autoptr(GFile) other = a->other ? g_file_new_for_path(a->other) : NULL;

                g_file_monitor_source_handle_event(st->source, a->event, a->child, a->rename_to, other, now);
                if (a->done_unless_created) {
                        /* ih_event_callback: creat() is followed by
                         * IN_CLOSE_WRITE; mkdir(), link(), mknod() are not. */
                        g_autofree char *path = g_build_filename(st->dirname, a->child, NULL);
                        struct stat sb;

                        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
                                g_file_monitor_source_handle_event(st->source,
                                                                   G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT,
                                                                   a->child, NULL, NULL, now);
                }
                retarget |= a->retarget;
        }
        if (retarget)
                monitor_state_retarget(st);
}

/* ------------------------------------------------------------------------ */
/* The GLocalFileMonitor subclass */

typedef struct GWatchdFileMonitor {
        GLocalFileMonitor parent_instance;
        MonitorState *state;
} GWatchdFileMonitor;

typedef struct GWatchdFileMonitorClass {
        GLocalFileMonitorClass parent_class;
} GWatchdFileMonitorClass;

static gpointer g_watchd_file_monitor_parent_class;

static void g_watchd_file_monitor_start(GLocalFileMonitor *local_monitor, const gchar *dirname,
                                        const gchar *basename, const gchar *filename, GFileMonitorSource *source) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) local_monitor;
        MonitorState *st = g_new0(MonitorState, 1);

        st->ref_count = 1;
        st->name_linked = TRUE;
        st->source = (GFileMonitorSource *) g_source_ref((GSource *) source);
        g_mutex_init(&st->lock);
        if (filename) {
                /* WATCH_HARD_LINKS: GLib gives the file's path alone. */
                st->hard_links = TRUE;
                st->filename = g_strdup(filename);
                st->dirname = g_path_get_dirname(filename);
                st->basename = g_path_get_basename(filename);
        } else {
                st->dirname = g_strdup(dirname);
                st->basename = g_strdup(basename);
        }
        self->state = st;
        if (!module.client) {
                /* Chosen without is_supported() having said yes (cannot
                 * happen with GLib's choice): a silent monitor. */
                gw_debug("no watchd: \"%s\" is not monitored", st->dirname);
                return;
        }
        monitor_state_start(st, TRUE);
}

static gboolean g_watchd_file_monitor_cancel(GFileMonitor *monitor) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) monitor;

        if (self->state)
                monitor_state_cancel(self->state);
        return TRUE;
}

static void g_watchd_file_monitor_finalize(GObject *object) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) object;

        if (self->state) {
                monitor_state_cancel(self->state);
                monitor_state_unref(self->state);
        }
        G_OBJECT_CLASS(g_watchd_file_monitor_parent_class)->finalize(object);
}

static gboolean g_watchd_file_monitor_is_supported(void) {
        return module_is_supported();
}

static void g_watchd_file_monitor_class_init(gpointer klass, gpointer data) {
        GLocalFileMonitorClass *local_class = klass;

        g_watchd_file_monitor_parent_class = g_type_class_peek_parent(klass);
        G_OBJECT_CLASS(klass)->finalize = g_watchd_file_monitor_finalize;
        G_FILE_MONITOR_CLASS(klass)->cancel = g_watchd_file_monitor_cancel;
        local_class->is_supported = g_watchd_file_monitor_is_supported;
        local_class->start = g_watchd_file_monitor_start;
        /* watchd reports unmounts (IN_UNMOUNT): no mount table polling. */
        local_class->mount_notify = TRUE;
}

/* For the "gio-nfs-file-monitor" point (issue 17): only a watchd that polls
 * remote file systems is better there than GLib's own 5 s poll of a file,
 * so this one says yes only to a watchd with "remote-polling". */
static gboolean g_watchd_nfs_file_monitor_is_supported(void) {
        return module_is_supported() &&
               (watchd_client_get_capabilities(module.client) & WATCHD_CAPABILITY_REMOTE_POLLING);
}

static void g_watchd_nfs_file_monitor_class_init(gpointer klass, gpointer data) {
        ((GLocalFileMonitorClass *) klass)->is_supported = g_watchd_nfs_file_monitor_is_supported;
}

/* ------------------------------------------------------------------------ */
/* The module's entry points */

/* Whether GLib's GLocalFileMonitor has the layout restated in
 * glocalfilemonitor-layout.h. */
static gboolean gwatchd_layout_matches(void) {
        GTypeQuery q;

        g_type_query(G_TYPE_LOCAL_FILE_MONITOR, &q);
        if (q.type == G_TYPE_LOCAL_FILE_MONITOR && q.class_size == sizeof(GLocalFileMonitorClass) &&
            q.instance_size == sizeof(GLocalFileMonitor))
                return TRUE;
        g_message("watchd GIO module: this GLib's GLocalFileMonitor (class %u, instance %u bytes) is not the one "
                  "the module was built for (%zu, %zu): not used",
                  q.class_size, q.instance_size, sizeof(GLocalFileMonitorClass), sizeof(GLocalFileMonitor));
        return FALSE;
}

/* Tracker 3.4 (tracker-monitor-glib.c) enables live monitoring only for
 * monitor type names it knows. WATCHD_GIO_TRACKER_COMPAT=1 in a program's
 * environment registers the monitor as "GInotifyDirectoryMonitor", a name
 * GLib has not used since 2.46 and that Tracker takes for inotify (see
 * docs/CLIENTS.md). */
static const char *monitor_type_name(void) {
        const char *compat = g_getenv("WATCHD_GIO_TRACKER_COMPAT");

        module.tracker_compat = compat && g_str_equal(compat, "1");
        return module.tracker_compat ? "GInotifyDirectoryMonitor" : "GWatchdFileMonitor";
}

G_MODULE_EXPORT void g_io_module_load(GIOModule *io_module);
G_MODULE_EXPORT void g_io_module_unload(GIOModule *io_module);
G_MODULE_EXPORT char **g_io_module_query(void);

G_MODULE_EXPORT void g_io_module_load(GIOModule *io_module) {
        static GType local_type, nfs_type;

        /* Resident: its types are static, its thread runs until exit. */
        g_type_module_use(G_TYPE_MODULE(io_module));
        gw_debug_on = !g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN_WATCHD);
        if (!local_type) {
                const GTypeInfo local_info = {
                        .class_size = sizeof(GWatchdFileMonitorClass),
                        .class_init = g_watchd_file_monitor_class_init,
                        .instance_size = sizeof(GWatchdFileMonitor),
                };
                const GTypeInfo nfs_info = {
                        .class_size = sizeof(GWatchdFileMonitorClass),
                        .class_init = g_watchd_nfs_file_monitor_class_init,
                        .instance_size = sizeof(GWatchdFileMonitor),
                };

                if (!gwatchd_layout_matches())
                        return;
                local_type = g_type_register_static(G_TYPE_LOCAL_FILE_MONITOR, monitor_type_name(), &local_info, 0);
                nfs_type = g_type_register_static(local_type, "GWatchdNfsFileMonitor", &nfs_info, 0);
        }
        g_io_extension_point_implement(G_LOCAL_FILE_MONITOR_EXTENSION_POINT_NAME, local_type, "watchd",
                                       GWATCHD_PRIORITY);
        g_io_extension_point_implement(G_NFS_FILE_MONITOR_EXTENSION_POINT_NAME, nfs_type, "watchd",
                                       GWATCHD_PRIORITY);
}

G_MODULE_EXPORT void g_io_module_unload(GIOModule *io_module) {
}

G_MODULE_EXPORT char **g_io_module_query(void) {
        char *points[] = {
                G_LOCAL_FILE_MONITOR_EXTENSION_POINT_NAME,
                G_NFS_FILE_MONITOR_EXTENSION_POINT_NAME,
                NULL,
        };

        return g_strdupv(points);
}
