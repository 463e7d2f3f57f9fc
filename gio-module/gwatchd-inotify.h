/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * gwatchd-inotify - the module's own inotify, for monitors watchd cannot
 * serve
 *
 * When watchd goes away (or refuses a monitor, or the bus itself is gone),
 * the module watches as GLib's inotify backend would, in the process: one
 * inotify instance, a watch a monitored directory (and a file, for
 * WATCH_HARD_LINKS), the masks of gio/inotify/inotify-path.c. The records
 * are handed on as libwatchd's WatchdEvent, paths joined and renames
 * paired (the two halves of one cookie in one read, or a MOVED_FROM held
 * up to GWATCHD_INOTIFY_PAIR_MS for its partner, as inotify-kernel.c
 * does), so that gwatchd-map.c turns them into what GLib's backend says,
 * whichever way they came.
 *
 * Threads: add and remove from any thread (a lock); the instance is read,
 * and every callback runs, in the GMainContext given at creation, without
 * the lock held. After gwatchd_inotify_remove() returns, no callback for
 * that watch starts (one already running in the context's thread ends).
 */

#include <gio/gio.h>
#include <watchd.h>

#define GWATCHD_INOTIFY_PAIR_MS 10

typedef struct GWatchdInotify GWatchdInotify;
typedef struct GWatchdInotifyWatch GWatchdInotifyWatch;

typedef struct GWatchdInotifyCallbacks {
        /* Events of a watch (paths under its path; a rename with both
         * paths when both halves were seen), in kernel order. */
        void (*events)(gpointer owner, GWatchdInotifyWatch *watch, GPtrArray *events);
        /* The kernel dropped the watch (its object deleted or unmounted) or
         * its object was renamed away (then the module drops it, as GLib's
         * backend does): the watch is freed after this returns. */
        void (*gone)(gpointer owner, GWatchdInotifyWatch *watch);
        /* The instance's queue overflowed: events of every watch were lost. */
        void (*overflow)(gpointer owner);
        gpointer (*ref)(gpointer owner);
        void (*unref)(gpointer owner);
} GWatchdInotifyCallbacks;

/* NULL with errno's error if inotify_init1() fails. */
GWatchdInotify *gwatchd_inotify_new(GMainContext *context, const GWatchdInotifyCallbacks *callbacks, GError **error);

/* Watches path (a directory, or with file a file) for mask (IN_* bits; a
 * directory's IN_ONLYDIR is added here). NULL with -errno in *ret_error if
 * inotify_add_watch() failed. Watches of one inode share its kernel watch
 * (IN_MASK_ADD); each gets only the events of its own mask. */
GWatchdInotifyWatch *gwatchd_inotify_add(GWatchdInotify *in, const char *path, guint32 mask, gboolean file,
                                         gpointer owner, int *ret_error);
void gwatchd_inotify_remove(GWatchdInotify *in, GWatchdInotifyWatch *watch);

gboolean gwatchd_inotify_watch_is_file(const GWatchdInotifyWatch *watch);

/* The masks GLib's inotify backend asks for (inotify-path.c). */
#define GWATCHD_INOTIFY_DIR_MASK                                                                       \
        (WATCHD_EVENT_MODIFY | WATCHD_EVENT_ATTRIB | WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO | \
         WATCHD_EVENT_DELETE | WATCHD_EVENT_CREATE | WATCHD_EVENT_DELETE_SELF | WATCHD_EVENT_UNMOUNT | \
         WATCHD_EVENT_MOVE_SELF | WATCHD_EVENT_CLOSE_WRITE)
