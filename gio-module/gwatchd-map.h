/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * gwatchd-map - watchd's events as GLib's inotify backend reports them
 *
 * Pure: an event of libwatchd in, the calls to
 * g_file_monitor_source_handle_event() GLib's own inotify backend
 * (gio/inotify/inotify-helper.c, ih_event_callback and
 * ih_not_missing_callback, GLib 2.74) would make out. No I/O, no clock:
 * tests/gio/test-gio-map.c replays tables through it. GLib then applies the
 * monitor's flags (WATCH_MOVES, rate limit, CHANGES_DONE timers) in
 * g_file_monitor_source_handle_event() itself.
 *
 * A monitor is watched as GLib's inotify backend watches it: through its
 * directory. A directory monitor (dirname) gets the directory's children;
 * a file monitor (dirname + basename) gets the directory's events and GLib
 * keeps those of the one name; a monitor with WATCH_HARD_LINKS (filename)
 * gets the directory's events for the name plus the file's own (its inode:
 * a write through another link), like inotify-path.c's ip_watched_file_t.
 */

#include <gio/gio.h>
#include <watchd.h>

/* The events a monitor's subscriptions ask for (inotify-path.c's
 * IP_INOTIFY_DIR_MASK without IN_MOVE_SELF, which is not an event one asks
 * watchd for: a PERSIST subscription with IN_DELETE_SELF gets it). */
#define GWATCHD_DIR_MASK                                                                                  \
        (WATCHD_EVENT_MODIFY | WATCHD_EVENT_ATTRIB | WATCHD_EVENT_CLOSE_WRITE | WATCHD_EVENT_MOVED_FROM | \
         WATCHD_EVENT_MOVED_TO | WATCHD_EVENT_CREATE | WATCHD_EVENT_DELETE | WATCHD_EVENT_DELETE_SELF)
/* With hard links the file's own subscription reports the writes (so that
 * one through another link is seen) and its deletion: the directory's must
 * not report them again. IN_ATTRIB is left to the directory, so that
 * link() and unlink() of another name (which change the link count) are
 * not reported, as GLib's backend does not. */
#define GWATCHD_HARD_LINKS_DIR_MASK  (GWATCHD_DIR_MASK & ~(WATCHD_EVENT_MODIFY | WATCHD_EVENT_CLOSE_WRITE))
#define GWATCHD_HARD_LINKS_FILE_MASK (WATCHD_EVENT_MODIFY | WATCHD_EVENT_CLOSE_WRITE | WATCHD_EVENT_DELETE_SELF)

/* What a record's mask says besides its event: a directory, found by
 * watchd's polling of a remote file system, found by comparing a directory
 * with what was reported (WatchdSnapshot). An event either way. */
#define GWATCHD_NOT_EVENT_BITS (WATCHD_EVENT_ISDIR | WATCHD_EVENT_POLLED | WATCHD_EVENT_RESCANNED)

typedef struct GWatchdTarget {
        const char *dirname;  /* the directory watched */
        const char *basename; /* file monitors and hard links: the name; NULL for a directory monitor */
        gboolean hard_links;
        WatchdCapabilities caps;
} GWatchdTarget;

typedef struct GWatchdAction {
        GFileMonitorEvent event;
        char *child;                  /* a name in dirname; NULL: the monitored directory itself */
        char *rename_to;              /* RENAMED: the new name */
        char *other;                  /* MOVED_IN/MOVED_OUT: the other end's path (a GFile for GLib), or NULL */
        gboolean done_unless_created; /* CREATED: add CHANGES_DONE_HINT now unless creat() made it
                                         (a regular file with one link), as ih_event_callback does */
        gboolean retarget;            /* hard links: the name is now another inode; watch that one */
} GWatchdAction;

void gwatchd_action_clear(GWatchdAction *a);

/* Appends to actions (GWatchdAction) what an event of the directory's
 * subscription becomes. */
void gwatchd_map_dir_event(const GWatchdTarget *t, const WatchdEvent *e, GArray *actions);

/* The same for an event of the file's own subscription (hard links).
 * name_linked: the monitor's name still links the file (no DELETE or
 * MOVED_FROM of it seen since it was created or moved there). The kernel
 * reports a file's DELETE_SELF before its directory's DELETE, so a
 * DELETE_SELF while the name links it is the unlink of the name itself,
 * which the directory's DELETE reports next; otherwise the last link went
 * under another name, and it is said here. */
void gwatchd_map_file_event(const GWatchdTarget *t, const WatchdEvent *e, gboolean name_linked, GArray *actions);
