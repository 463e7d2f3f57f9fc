/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gwatchdfilemonitor - GLib's file monitors through watchd (libgiowatchd.so)
 *
 * A GLocalFileMonitor on the "gio-local-file-monitor" extension point,
 * named "watchd", priority 30 (inotify's is 20): GLib picks it when
 * GIO_USE_FILE_MONITOR=watchd, and otherwise whenever its is_supported()
 * finds watchd on a bus (gwatchd-module.c). GLib asks once per process.
 *
 * This file is the module's composition root: the GObject subclass GLib
 * makes a monitor of, the module's entry points, and the wiring of the
 * layers below it:
 *   - gwatchd-monitor.c: one monitor, served by watchd or by the module's
 *     own inotify, with what its path held kept to report what changed
 *     when the one serving it changes or lost events;
 *   - gwatchd-module.c: what the process's monitors share (the thread, the
 *     WatchdClient, following watchd on the bus), told about the monitors
 *     through the callbacks given here;
 *   - gwatchd-inotify.c: the module's own inotify;
 *   - gwatchd-map.c: watchd's records as GLib's inotify backend says them.
 *
 * The type's name is "GWatchdFileMonitor", but in Tracker, which enables
 * live monitoring only for the type names it knows (docs/CLIENTS.md).
 */

#include <gio/gio.h>
#include <watchd.h>

#include "glocalfilemonitor-layout.h"
#include "gwatchd-module.h"
#include "gwatchd-monitor.h"

#define GWATCHD_PRIORITY 30

/* ------------------------------------------------------------------------ */
/* The GLocalFileMonitor subclass */

typedef struct GWatchdFileMonitor {
        GLocalFileMonitor parent_instance;
        GWatchdMonitor *monitor;
} GWatchdFileMonitor;

typedef struct GWatchdFileMonitorClass {
        GLocalFileMonitorClass parent_class;
} GWatchdFileMonitorClass;

static gpointer g_watchd_file_monitor_parent_class;

static void g_watchd_file_monitor_start(GLocalFileMonitor *local_monitor, const gchar *dirname, const gchar *basename,
                                        const gchar *filename, GFileMonitorSource *source) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) local_monitor;

        self->monitor = gwatchd_monitor_new(source, dirname, basename, filename);
        gwatchd_monitor_start(self->monitor);
}

static gboolean g_watchd_file_monitor_cancel(GFileMonitor *monitor) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) monitor;

        if (self->monitor)
                gwatchd_monitor_cancel(self->monitor);
        return TRUE;
}

static void g_watchd_file_monitor_finalize(GObject *object) {
        GWatchdFileMonitor *self = (GWatchdFileMonitor *) object;

        if (self->monitor) {
                gwatchd_monitor_cancel(self->monitor);
                gwatchd_monitor_unref(self->monitor);
        }
        G_OBJECT_CLASS(g_watchd_file_monitor_parent_class)->finalize(object);
}

static gboolean g_watchd_file_monitor_is_supported(void) {
        return gwatchd_module_is_supported();
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
        return gwatchd_module_is_supported() && gwatchd_module_get_client() &&
                (watchd_client_get_capabilities(gwatchd_module_get_client()) & WATCHD_CAPABILITY_REMOTE_POLLING);
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

G_MODULE_EXPORT void g_io_module_load(GIOModule *io_module);
G_MODULE_EXPORT void g_io_module_unload(GIOModule *io_module);
G_MODULE_EXPORT char **g_io_module_query(void);

G_MODULE_EXPORT void g_io_module_load(GIOModule *io_module) {
        static GType local_type, nfs_type;

        static const GWatchdModuleCallbacks monitor_callbacks = {
                .daemon_gone = gwatchd_monitor_daemon_gone,
                .daemon_back = gwatchd_monitor_daemon_back,
                .missing_tick = gwatchd_monitor_missing_tick,
                .ref = gwatchd_monitor_ref_cb,
                .unref = gwatchd_monitor_unref_cb,
        };
        static const GWatchdInotifyCallbacks inotify_callbacks = {
                .events = gwatchd_monitor_inotify_events,
                .gone = gwatchd_monitor_inotify_gone,
                .overflow = gwatchd_monitor_inotify_overflow,
                .ref = gwatchd_monitor_ref_cb,
                .unref = gwatchd_monitor_unref_cb,
        };

        /* Resident: its types are static, its thread runs until exit. */
        g_type_module_use(G_TYPE_MODULE(io_module));
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
                gwatchd_module_setup(&monitor_callbacks, &inotify_callbacks);
                local_type = g_type_register_static(G_TYPE_LOCAL_FILE_MONITOR, gwatchd_module_monitor_type_name(),
                                                    &local_info, 0);
                nfs_type = g_type_register_static(local_type, "GWatchdNfsFileMonitor", &nfs_info, 0);
        }
        g_io_extension_point_implement(G_LOCAL_FILE_MONITOR_EXTENSION_POINT_NAME, local_type, "watchd", GWATCHD_PRIORITY);
        g_io_extension_point_implement(G_NFS_FILE_MONITOR_EXTENSION_POINT_NAME, nfs_type, "watchd", GWATCHD_PRIORITY);
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
