/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchd-module - the process's part of the module (see gwatchd-module.h)
 *
 * The probe: the first is_supported() starts the module's thread, which
 * looks for watchd on the system bus (DBUS_SYSTEM_BUS_ADDRESS or the
 * standard socket), else on the session bus (DBUS_SESSION_BUS_ADDRESS, or
 * $XDG_RUNTIME_DIR/bus: a session bus is never autolaunched); when neither
 * answers within GWATCHD_PROBE_TIMEOUT_MS (or WATCHD_GIO_PROBE_TIMEOUT_MS), the answer is no and GLib uses
 * inotify. The thread then runs the context of the process's one
 * WatchdClient, where every event of every monitor arrives, and of the
 * in-process inotify.
 *
 * Following watchd: when it leaves the bus (or the bus connection closes),
 * every live monitor is told (daemon_gone) and moves to the in-process
 * inotify; when it is back, libwatchd adds the subscriptions again and each
 * monitor moves back (gwatchd-monitor.c), and those the module must start
 * itself are told (daemon_back).
 *
 * Which program this is: Tracker (tracker-miner-fs-3, localsearch-3)
 * accepts only the monitor type names it knows; in it the type is named as
 * it wants (gwatchd_module_monitor_type_name(), docs/CLIENTS.md).
 */

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gwatchd-module.h"

gboolean gwatchd_debug_on;

typedef enum ProbeState {
        PROBE_NOT_STARTED,
        PROBE_RUNNING,
        PROBE_DONE,
} ProbeState;

static struct {
        GWatchdModuleCallbacks cb;
        GWatchdInotifyCallbacks inotify_cb;
        GWatchdProcessKind kind;
        gboolean inotify_only; /* WATCHD_GIO_INOTIFY=1 */
        int probe_timeout_ms;  /* WATCHD_GIO_PROBE_TIMEOUT_MS, else GWATCHD_PROBE_TIMEOUT_MS */

        GMutex lock; /* everything below */
        GCond cond;
        ProbeState probe;
        gboolean abandoned; /* is_supported() stopped waiting: the answer was no */
        gboolean supported;
        WatchdClient *client; /* set once, never freed (a module is never unloaded) */
        gboolean closed;      /* the client's bus connection closed */
        GMainContext *context;
        gint64 probe_usec;
        GWatchdInotify *inotify;
        gboolean inotify_failed;
        GHashTable *monitors; /* monitor -> itself (references): the live ones */
        GHashTable *missing;  /* monitor -> itself (references) */
        GSource *missing_timer;
} module;

/* ------------------------------------------------------------------------ */
/* Which program */

/* Indexers that take a GFileMonitor's type name for its backend and refuse
 * one they do not know: Tracker 3 (tracker-monitor-glib.c) and its renamed
 * successor, localsearch (src/indexer/tracker-monitor-glib.c). */
static const char *const name_sniffers[] = {
        "tracker-miner-fs-3",
        "localsearch-3",
        "tracker-miner-fs",
};

static GWatchdProcessKind detect_process_kind(void) {
        const char *env = g_getenv("WATCHD_GIO_TRACKER_COMPAT");
        g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
        g_autofree char *base = NULL;
        const char *prg = g_get_prgname();

        if (env && g_str_equal(env, "1"))
                return GWATCHD_PROCESS_TRACKER;
        if (env && g_str_equal(env, "0"))
                return GWATCHD_PROCESS_ANY;
        base = exe ? g_path_get_basename(exe) : g_strdup(prg ? prg : "");
        for (size_t i = 0; i < G_N_ELEMENTS(name_sniffers); i++)
                if (g_str_equal(base, name_sniffers[i]))
                        return GWATCHD_PROCESS_TRACKER;
        return GWATCHD_PROCESS_ANY;
}

GWatchdProcessKind gwatchd_module_get_process_kind(void) {
        return module.kind;
}

gboolean gwatchd_module_inotify_only(void) {
        return module.inotify_only;
}

/* Tracker enables live monitoring only for "GInotifyDirectoryMonitor" and
 * "GInotifyFileMonitor" (and names of other systems' backends); the first is
 * free since GLib 2.46 (GLib's inotify monitor is the second). */
const char *gwatchd_module_monitor_type_name(void) {
        if (module.kind == GWATCHD_PROCESS_TRACKER && g_type_from_name("GInotifyDirectoryMonitor") == 0)
                return "GInotifyDirectoryMonitor";
        return "GWatchdFileMonitor";
}

void gwatchd_module_setup(const GWatchdModuleCallbacks *monitor_callbacks,
                          const GWatchdInotifyCallbacks *inotify_callbacks) {
        const char *only = g_getenv("WATCHD_GIO_INOTIFY");
        const char *probe = g_getenv("WATCHD_GIO_PROBE_TIMEOUT_MS");
        guint64 ms;

        gwatchd_debug_on = !g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, GWATCHD_LOG_DOMAIN);
        module.cb = *monitor_callbacks;
        module.inotify_cb = *inotify_callbacks;
        module.kind = detect_process_kind();
        module.inotify_only = only && g_str_equal(only, "1");
        /* A slow machine (an emulator, a loaded build host) may need longer
         * than a desktop's half second; bounded so no program waits a minute. */
        module.probe_timeout_ms = GWATCHD_PROBE_TIMEOUT_MS;
        if (probe && g_ascii_string_to_unsigned(probe, 10, 1, GWATCHD_PROBE_TIMEOUT_MAX_MS, &ms, NULL))
                module.probe_timeout_ms = (int) ms;
        else if (probe)
                g_warning("watchd GIO module: WATCHD_GIO_PROBE_TIMEOUT_MS=%s is not a number of milliseconds "
                          "from 1 to %d; %d it is",
                          probe, GWATCHD_PROBE_TIMEOUT_MAX_MS, GWATCHD_PROBE_TIMEOUT_MS);
        module.monitors = g_hash_table_new_full(g_direct_hash, g_direct_equal, module.cb.unref, NULL);
        module.missing = g_hash_table_new_full(g_direct_hash, g_direct_equal, module.cb.unref, NULL);
}

/* ------------------------------------------------------------------------ */
/* The live monitors */

void gwatchd_module_add_monitor(gpointer monitor) {
        g_mutex_lock(&module.lock);
        g_hash_table_add(module.monitors, module.cb.ref(monitor));
        g_mutex_unlock(&module.lock);
}

void gwatchd_module_remove_monitor(gpointer monitor) {
        g_mutex_lock(&module.lock);
        g_hash_table_remove(module.monitors, monitor);
        g_mutex_unlock(&module.lock);
}

/* The live monitors now (references); the caller unrefs them. */
static GPtrArray *live_monitors(GHashTable *table) {
        GPtrArray *all = g_ptr_array_new_with_free_func(module.cb.unref);
        GHashTableIter it;
        gpointer key;

        g_mutex_lock(&module.lock);
        g_hash_table_iter_init(&it, table);
        while (g_hash_table_iter_next(&it, &key, NULL))
                g_ptr_array_add(all, module.cb.ref(key));
        g_mutex_unlock(&module.lock);
        return all;
}

static gboolean on_missing_timer(gpointer data) {
        g_autoptr(GPtrArray) all = live_monitors(module.missing);

        for (guint i = 0; i < all->len; i++)
                module.cb.missing_tick(all->pdata[i]);
        g_mutex_lock(&module.lock);
        if (g_hash_table_size(module.missing) == 0) {
                g_source_destroy(module.missing_timer);
                g_clear_pointer(&module.missing_timer, g_source_unref);
                g_mutex_unlock(&module.lock);
                return G_SOURCE_REMOVE;
        }
        g_mutex_unlock(&module.lock);
        return G_SOURCE_CONTINUE;
}

void gwatchd_module_add_missing(gpointer monitor) {
        g_mutex_lock(&module.lock);
        if (!g_hash_table_contains(module.missing, monitor))
                g_hash_table_add(module.missing, module.cb.ref(monitor));
        if (!module.missing_timer) {
                module.missing_timer = g_timeout_source_new_seconds(GWATCHD_MISSING_SECONDS);
                g_source_set_callback(module.missing_timer, on_missing_timer, NULL, NULL);
                g_source_attach(module.missing_timer, module.context);
        }
        g_mutex_unlock(&module.lock);
}

void gwatchd_module_remove_missing(gpointer monitor) {
        g_mutex_lock(&module.lock);
        g_hash_table_remove(module.missing, monitor);
        g_mutex_unlock(&module.lock);
}

GWatchdInotify *gwatchd_module_get_inotify(void) {
        g_autoptr(GError) error = NULL;
        GWatchdInotify *in;

        g_mutex_lock(&module.lock);
        if (!module.inotify && !module.inotify_failed) {
                module.inotify = gwatchd_inotify_new(module.context, &module.inotify_cb, &error);
                if (!module.inotify) {
                        module.inotify_failed = TRUE;
                        g_message("watchd GIO module: no inotify for the monitors watchd does not serve: %s",
                                  error->message);
                }
        }
        in = module.inotify;
        g_mutex_unlock(&module.lock);
        return in;
}

/* ------------------------------------------------------------------------ */
/* Following watchd */

static void on_daemon_vanished(WatchdClient *client, gpointer data) {
        g_autoptr(GPtrArray) all = live_monitors(module.monitors);

        gw_debug("watchd left the bus: %u monitors to the module's inotify", all->len);
        for (guint i = 0; i < all->len; i++)
                module.cb.daemon_gone(all->pdata[i], FALSE);
}

static void on_daemon_running(WatchdClient *client, GParamSpec *pspec, gpointer data) {
        g_autoptr(GPtrArray) all = NULL;

        if (!watchd_client_get_daemon_running(client))
                return;
        all = live_monitors(module.monitors);
        gw_debug("watchd is on the bus");
        for (guint i = 0; i < all->len; i++)
                module.cb.daemon_back(all->pdata[i]);
}

static void on_closed(WatchdClient *client, const GError *error, gpointer data) {
        g_autoptr(GPtrArray) all = NULL;

        g_mutex_lock(&module.lock);
        module.closed = TRUE;
        g_mutex_unlock(&module.lock);
        all = live_monitors(module.monitors);
        gw_debug("the bus connection closed (%s): %u monitors to the module's inotify for good",
                 error ? error->message : "closed", all->len);
        for (guint i = 0; i < all->len; i++)
                module.cb.daemon_gone(all->pdata[i], TRUE);
}

WatchdClient *gwatchd_module_get_client(void) {
        return module.client;
}

gboolean gwatchd_module_daemon_serves(void) {
        gboolean closed;

        g_mutex_lock(&module.lock);
        closed = module.closed;
        g_mutex_unlock(&module.lock);
        return module.client && !closed && watchd_client_get_daemon_running(module.client);
}

gboolean gwatchd_module_is_closed(void) {
        gboolean closed;

        g_mutex_lock(&module.lock);
        closed = module.closed;
        g_mutex_unlock(&module.lock);
        return closed;
}

GMainContext *gwatchd_module_get_context(void) {
        return module.context;
}

/* ------------------------------------------------------------------------ */
/* The probe and the thread */

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

static gpointer module_thread(gpointer data) {
        gint64 start = g_get_monotonic_time();
        WatchdClient *client = NULL;
        GMainLoop *loop;

        g_main_context_push_thread_default(module.context);
        if (!module.inotify_only)
                client = probe_buses();

        g_mutex_lock(&module.lock);
        module.probe_usec = g_get_monotonic_time() - start;
        module.probe = PROBE_DONE;
        if ((client || module.inotify_only) && !module.abandoned) {
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
        if (client) {
                g_signal_connect(client, "daemon-vanished", G_CALLBACK(on_daemon_vanished), NULL);
                g_signal_connect(client, "notify::daemon-running", G_CALLBACK(on_daemon_running), NULL);
                g_signal_connect(client, "closed", G_CALLBACK(on_closed), NULL);
        }
        /* Runs for the life of the process: the client's signals and the
         * in-process inotify come here. */
        loop = g_main_loop_new(module.context, FALSE);
        g_main_loop_run(loop);
        g_main_loop_unref(loop);
        return NULL;
}

gboolean gwatchd_module_is_supported(void) {
        gint64 deadline;
        gboolean supported, said = FALSE;
        static gboolean told;

        g_mutex_lock(&module.lock);
        if (module.probe == PROBE_NOT_STARTED) {
                module.probe = PROBE_RUNNING;
                module.context = g_main_context_new();
                g_thread_unref(g_thread_new("gio-watchd", module_thread, NULL));
        }
        deadline = g_get_monotonic_time() + module.probe_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while (module.probe != PROBE_DONE && !module.abandoned)
                if (!g_cond_wait_until(&module.cond, &module.lock, deadline)) {
                        gw_debug("no answer from the buses in %d ms: not supported", module.probe_timeout_ms);
                        module.abandoned = TRUE;
                }
        supported = module.supported;
        if (module.probe == PROBE_DONE)
                gw_debug("probe: %s in %" G_GINT64_FORMAT " us%s", supported ? "supported" : "not supported",
                         module.probe_usec,
                         module.inotify_only ? " (WATCHD_GIO_INOTIFY=1: the module's own inotify)" : "");
        if (supported && !told && module.kind == GWATCHD_PROCESS_TRACKER) {
                told = said = TRUE;
        }
        g_mutex_unlock(&module.lock);
        /* Tracker logs "Monitor backend is Inotify" for the type name it is
         * given: one line beside it says what serves it. */
        if (said && !module.inotify_only)
                g_message("watchd GIO module: this process's file monitors go through watchd (type %s, as "
                          "Tracker needs; 'watchctl clients' lists the process)",
                          gwatchd_module_monitor_type_name());
        return supported;
}
