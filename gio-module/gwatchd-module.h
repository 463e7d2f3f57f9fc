/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * gwatchd-module - what the process's monitors share: the module's thread
 * and its context, the one WatchdClient, the in-process inotify, the
 * monitors that wait for watchd or for their directory
 *
 * The lower layer of the module: it knows no GLib monitor. The layer above
 * (gwatchd-monitor.c, through the composition root gwatchdfilemonitor.c)
 * gives it, at gwatchd_module_setup(), the callbacks it calls when watchd
 * leaves or comes back, and those of the in-process inotify.
 */

#include <gio/gio.h>
#include <watchd.h>

#include "gwatchd-inotify.h"

#define GWATCHD_LOG_DOMAIN "watchd-gio"

/* G_MESSAGES_DEBUG=watchd-gio shows what the module does, an event a line;
 * decided once, so that nothing is formatted otherwise. */
extern gboolean gwatchd_debug_on;
#define gw_debug(...)                                                              \
        do {                                                                       \
                if (G_UNLIKELY(gwatchd_debug_on))                                  \
                        g_log(GWATCHD_LOG_DOMAIN, G_LOG_LEVEL_DEBUG, __VA_ARGS__); \
        } while (0)

/* How long is_supported() waits for the buses, and the calls to watchd. */
#define GWATCHD_PROBE_TIMEOUT_MS     500
#define GWATCHD_PROBE_TIMEOUT_MAX_MS 30000
#define GWATCHD_CALL_TIMEOUT_MS      5000
/* How often a missing directory is looked for while the module watches it
 * with its own inotify (GLib's inotify-missing.c: SCAN_MISSING_TIME). */
#define GWATCHD_MISSING_SECONDS 4

typedef struct GWatchdModuleCallbacks {
        /* In the module's thread, for each live monitor: watchd left (or the
         * bus connection closed: closed is TRUE, it will not come back). */
        void (*daemon_gone)(gpointer monitor, gboolean closed);
        /* watchd is on the bus again (subscriptions libwatchd held are added
         * again by it; this is for those the module must start itself). */
        void (*daemon_back)(gpointer monitor);
        /* Every GWATCHD_MISSING_SECONDS for a monitor on the missing list. */
        void (*missing_tick)(gpointer monitor);
        gpointer (*ref)(gpointer monitor);
        void (*unref)(gpointer monitor);
} GWatchdModuleCallbacks;

typedef enum GWatchdProcessKind {
        GWATCHD_PROCESS_ANY,
        GWATCHD_PROCESS_TRACKER, /* an indexer that knows monitor types by name (docs/CLIENTS.md) */
} GWatchdProcessKind;

/* Once, at g_io_module_load(): reads the environment and the program. */
void gwatchd_module_setup(const GWatchdModuleCallbacks *monitor_callbacks,
                          const GWatchdInotifyCallbacks *inotify_callbacks);

/* Whether this process's monitors go through the module (GLib asks once). */
gboolean gwatchd_module_is_supported(void);

/* The process's client of watchd; NULL when there is none (WATCHD_GIO_INOTIFY=1). */
WatchdClient *gwatchd_module_get_client(void);
/* Whether watchd serves now (on the bus, and the bus connection open). */
gboolean gwatchd_module_daemon_serves(void);
/* Whether the client's bus connection closed (watchd will not come back). */
gboolean gwatchd_module_is_closed(void);
GMainContext *gwatchd_module_get_context(void);
/* The in-process inotify, made at the first call; NULL if the process has
 * no inotify instance left (logged once). */
GWatchdInotify *gwatchd_module_get_inotify(void);
GWatchdProcessKind gwatchd_module_get_process_kind(void);
/* WATCHD_GIO_INOTIFY=1: every monitor on the in-process inotify. */
gboolean gwatchd_module_inotify_only(void);

/* The live monitors (references), told when watchd leaves and comes back. */
void gwatchd_module_add_monitor(gpointer monitor);
void gwatchd_module_remove_monitor(gpointer monitor);
/* A monitor whose directory is missing while the in-process inotify serves
 * it: missing_tick() every GWATCHD_MISSING_SECONDS until removed. */
void gwatchd_module_add_missing(gpointer monitor);
void gwatchd_module_remove_missing(gpointer monitor);

/* The monitor type's name: "GWatchdFileMonitor", or for Tracker the name
 * it accepts (docs/CLIENTS.md). */
const char *gwatchd_module_monitor_type_name(void);
