/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * glocalfilemonitor-layout - what GLib's gio/glocalfilemonitor.h says, for a
 * module built outside GLib
 *
 * GLib does not install glocalfilemonitor.h, yet a file-monitor module must
 * subclass GLocalFileMonitor. The two structs below restate its layout as
 * GLib 2.74.6 (Debian 12) defines it in gio/glocalfilemonitor.h; the struct
 * bodies are byte for byte the same in 2.46.0, 2.56.0, 2.66.0, 2.74.6, 2.80.0
 * and GLib's main branch of 2024 (checked with git show TAG:gio/glocalfilemonitor.h).
 * The two functions are exported by libgio (g_local_file_monitor_get_type
 * since 2.30, g_file_monitor_source_handle_event since 2.44).
 *
 * A GLib that changed the layout would break the module silently, so
 * gwatchd_layout_matches() compares these sizes with the sizes GLib
 * registered for the type, and the module does not register itself if they
 * differ (GLib then uses inotify); tests/gio checks that the module is
 * chosen with the installed GLib.
 */

#include <gio/gio.h>
#include <gio/gunixmounts.h>

#define G_LOCAL_FILE_MONITOR_EXTENSION_POINT_NAME "gio-local-file-monitor"
#define G_NFS_FILE_MONITOR_EXTENSION_POINT_NAME   "gio-nfs-file-monitor"

typedef struct _GFileMonitorSource GFileMonitorSource;

typedef struct _GLocalFileMonitor {
        GFileMonitor parent_instance;

        GFileMonitorSource *source;
        GUnixMountMonitor *mount_monitor;
        gboolean was_mounted;
} GLocalFileMonitor;

typedef struct _GLocalFileMonitorClass {
        GFileMonitorClass parent_class;

        gboolean (*is_supported)(void);
        void (*start)(GLocalFileMonitor *local_monitor, const gchar *dirname, const gchar *basename,
                      const gchar *filename, GFileMonitorSource *source);

        gboolean mount_notify;
} GLocalFileMonitorClass;

GType g_local_file_monitor_get_type(void);
#define G_TYPE_LOCAL_FILE_MONITOR (g_local_file_monitor_get_type())

gboolean g_file_monitor_source_handle_event(GFileMonitorSource *fms, GFileMonitorEvent event_type, const gchar *child,
                                            const gchar *rename_to, GFile *other, gint64 event_time);
