/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * gwatchd-monitor - one GLib file monitor, served by watchd or, while it
 * cannot be, by the module's own inotify, with no silent gap between
 *
 * A monitor is watched through watchd's subscriptions (its directory; with
 * WATCH_HARD_LINKS also the file). When watchd goes away, refuses the
 * monitor, or the bus is gone, the module's inotify serves it instead
 * (gwatchd-inotify.c, watched as GLib's backend watches); when watchd is
 * back, watchd again. What the monitor's path held is kept in a
 * WatchdSnapshot (libwatchd), noted from every event reported: at each
 * change of hands, and after an Overflow (of watchd, or of the inotify
 * queue), the path is compared with it and the differences are reported as
 * ordinary GFileMonitor events (created, deleted, changed, renamed). Either
 * way the events go through gwatchd-map.c, as GLib's backend would say them.
 *
 * Threads: start and cancel from the thread GLib calls them in; every event,
 * change of hands and comparison in the module's thread.
 */

#include <gio/gio.h>

#include "glocalfilemonitor-layout.h"
#include "gwatchd-inotify.h"

typedef struct GWatchdMonitor GWatchdMonitor;

/* GLib's start(): dirname (a directory monitor), dirname and basename (a
 * file monitor), or filename alone (WATCH_HARD_LINKS). */
GWatchdMonitor *gwatchd_monitor_new(GFileMonitorSource *source, const char *dirname, const char *basename,
                                    const char *filename);
GWatchdMonitor *gwatchd_monitor_ref(GWatchdMonitor *m);
void gwatchd_monitor_unref(GWatchdMonitor *m);

/* Watches, synchronously: an event right after GLib's g_file_monitor*()
 * returns is reported, as with inotify. */
void gwatchd_monitor_start(GWatchdMonitor *m);
void gwatchd_monitor_cancel(GWatchdMonitor *m);

/* For gwatchd_module_setup() (gwatchd-module.h), in the module's thread. */
void gwatchd_monitor_daemon_gone(gpointer monitor, gboolean closed);
void gwatchd_monitor_daemon_back(gpointer monitor);
void gwatchd_monitor_missing_tick(gpointer monitor);
gpointer gwatchd_monitor_ref_cb(gpointer monitor);
void gwatchd_monitor_unref_cb(gpointer monitor);

/* For the in-process inotify's callbacks (gwatchd-inotify.h). */
void gwatchd_monitor_inotify_events(gpointer monitor, GWatchdInotifyWatch *watch, GPtrArray *events);
void gwatchd_monitor_inotify_gone(gpointer monitor, GWatchdInotifyWatch *watch);
void gwatchd_monitor_inotify_overflow(gpointer monitor);
