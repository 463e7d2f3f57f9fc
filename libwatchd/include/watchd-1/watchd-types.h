/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-types - the words of the watchd API, for programs
 *
 * The values are those of the D-Bus API (data/org.example.Inotify.xml,
 * watchd(8)): the event bits are inotify's IN_* bits, the watch flags are
 * AddWatch's flags. They are GFlags/GEnum types so that bindings (Python
 * through GObject-Introspection) see names, not numbers.
 */

#if !defined(WATCHD_INSIDE) && !defined(WATCHD_COMPILATION)
#error "Only <watchd.h> can be included directly."
#endif

#include <glib-object.h>

G_BEGIN_DECLS

#ifndef WATCHD_EXPORT
#define WATCHD_EXPORT __attribute__((visibility("default"))) extern
#endif

/**
 * WatchdEventMask:
 * @WATCHD_EVENT_NONE: no event
 * @WATCHD_EVENT_ACCESS: a file was read (IN_ACCESS)
 * @WATCHD_EVENT_MODIFY: a file was written (IN_MODIFY)
 * @WATCHD_EVENT_ATTRIB: metadata changed: permissions, timestamps, owner,
 *   link count (IN_ATTRIB)
 * @WATCHD_EVENT_CLOSE_WRITE: a file opened for writing was closed (IN_CLOSE_WRITE)
 * @WATCHD_EVENT_CLOSE_NOWRITE: a file not opened for writing was closed (IN_CLOSE_NOWRITE)
 * @WATCHD_EVENT_OPEN: a file was opened (IN_OPEN)
 * @WATCHD_EVENT_MOVED_FROM: a name left a watched directory (IN_MOVED_FROM)
 * @WATCHD_EVENT_MOVED_TO: a name arrived in a watched directory (IN_MOVED_TO)
 * @WATCHD_EVENT_CREATE: a name was created in a watched directory (IN_CREATE)
 * @WATCHD_EVENT_DELETE: a name was deleted from a watched directory (IN_DELETE)
 * @WATCHD_EVENT_DELETE_SELF: the watched object itself was deleted (IN_DELETE_SELF)
 * @WATCHD_EVENT_MOVE_SELF: the object of a %WATCHD_WATCH_PERSIST subscription
 *   was renamed away from its path (IN_MOVE_SELF; only in records, to a
 *   subscription that asks for %WATCHD_EVENT_DELETE_SELF)
 * @WATCHD_EVENT_UNMOUNT: the file system of the watched object was unmounted
 *   (IN_UNMOUNT; always reported, never asked for)
 * @WATCHD_EVENT_IGNORED: the kernel dropped the watch (IN_IGNORED; only in
 *   records, never asked for)
 * @WATCHD_EVENT_POLLED: found by watchd polling a directory on a remote or
 *   FUSE file system, up to the poll interval after the change (only in
 *   records; watchd(8), REMOTE FILE SYSTEMS)
 * @WATCHD_EVENT_RESCANNED: made by this library, not sent by watchd: a
 *   difference a #WatchdSnapshot found between what it knew and what the
 *   path holds now, after events were lost (watchd_snapshot_rescan())
 * @WATCHD_EVENT_ISDIR: the object of the event is a directory (IN_ISDIR;
 *   only in records)
 * @WATCHD_EVENT_CLOSE: both close events
 * @WATCHD_EVENT_MOVE: both halves of a rename
 * @WATCHD_EVENT_ALL: every event that can be asked for
 *
 * The events of a subscription: what watchd_subscription_new() asks for, and
 * what a #WatchdEvent reports. A rename whose two halves were both seen is
 * one event with %WATCHD_EVENT_MOVED_FROM and %WATCHD_EVENT_MOVED_TO set
 * and both paths (see watchd_event_is_rename()).
 */
typedef enum /*< flags,prefix=WATCHD_EVENT >*/ {
        WATCHD_EVENT_NONE = 0,
        WATCHD_EVENT_ACCESS = 0x1,
        WATCHD_EVENT_MODIFY = 0x2,
        WATCHD_EVENT_ATTRIB = 0x4,
        WATCHD_EVENT_CLOSE_WRITE = 0x8,
        WATCHD_EVENT_CLOSE_NOWRITE = 0x10,
        WATCHD_EVENT_OPEN = 0x20,
        WATCHD_EVENT_MOVED_FROM = 0x40,
        WATCHD_EVENT_MOVED_TO = 0x80,
        WATCHD_EVENT_CREATE = 0x100,
        WATCHD_EVENT_DELETE = 0x200,
        WATCHD_EVENT_DELETE_SELF = 0x400,
        WATCHD_EVENT_MOVE_SELF = 0x800,
        WATCHD_EVENT_UNMOUNT = 0x2000,
        WATCHD_EVENT_IGNORED = 0x8000,
        WATCHD_EVENT_POLLED = 0x00200000,
        WATCHD_EVENT_RESCANNED = 0x00800000,
        WATCHD_EVENT_ISDIR = 0x40000000,
        WATCHD_EVENT_CLOSE = 0x18,
        WATCHD_EVENT_MOVE = 0xc0,
        WATCHD_EVENT_ALL = 0x7ff,
} WatchdEventMask;

/**
 * WatchdWatchFlags:
 * @WATCHD_WATCH_NONE: a plain watch of one file or directory
 * @WATCHD_WATCH_RECURSIVE: the directory and every directory below it,
 *   following new ones
 * @WATCHD_WATCH_ONLYDIR: refuse a path that is not a directory
 * @WATCHD_WATCH_DONT_FOLLOW: refuse a path that is a symbolic link
 * @WATCHD_WATCH_ONESHOT: end the subscription after its first event
 * @WATCHD_WATCH_PERSIST: follow the path, not the object: when the object is
 *   deleted, unmounted or renamed away, the subscription waits for the path
 *   to come back (its return is reported as %WATCHD_EVENT_CREATE of the path
 *   itself) instead of being removed. A watchd without
 *   %WATCHD_CAPABILITY_PERSISTENT does not know the flag: the library then
 *   sends the subscription without it, and when watchd removes it (deleted,
 *   unmounted) adds the path again itself and emits
 *   #WatchdSubscription::overflow (%WATCHD_OVERFLOW_FOLLOWED) instead of
 *   #WatchdSubscription::removed; a rename away is not seen then, and the
 *   return is reported only by a watchd with
 *   %WATCHD_CAPABILITY_REPORT_APPEARANCE.
 * @WATCHD_WATCH_NO_POLL: do not have watchd poll the subscription's
 *   directories on remote or FUSE file systems (only what this machine's
 *   kernel sees is reported there)
 *
 * AddWatch's flags (watchd(8)).
 */
typedef enum /*< flags,prefix=WATCHD_WATCH >*/ {
        WATCHD_WATCH_NONE = 0,
        WATCHD_WATCH_RECURSIVE = 0x1,
        WATCHD_WATCH_ONLYDIR = 0x2,
        WATCHD_WATCH_DONT_FOLLOW = 0x4,
        WATCHD_WATCH_ONESHOT = 0x8,
        WATCHD_WATCH_PERSIST = 0x10,
        WATCHD_WATCH_NO_POLL = 0x40,
} WatchdWatchFlags;

/**
 * WatchdOverflowReason:
 * @WATCHD_OVERFLOW_DAEMON: watchd lost events: the kernel's queue overflowed,
 *   or this client fell too far behind (the daemon's Overflow signal)
 * @WATCHD_OVERFLOW_CLIENT: this library dropped events it had received
 *   because the client's #GMainContext did not run for too long (more than
 *   #WatchdClient:max-queued-events were waiting)
 * @WATCHD_OVERFLOW_RESTARTED: watchd stopped and came back; the
 *   subscription was added again, and events between the two are not known
 * @WATCHD_OVERFLOW_FOLLOWED: the object of a %WATCHD_WATCH_PERSIST
 *   subscription went and a watchd without %WATCHD_CAPABILITY_PERSISTENT
 *   ended it; the library added its path again, and what happened at the
 *   path in between is not known
 *
 * Why a subscription's events may be incomplete. Whatever the reason, a
 * program that keeps state about the watched files should rescan them.
 */
typedef enum {
        WATCHD_OVERFLOW_DAEMON,
        WATCHD_OVERFLOW_CLIENT,
        WATCHD_OVERFLOW_RESTARTED,
        WATCHD_OVERFLOW_FOLLOWED,
} WatchdOverflowReason;

/**
 * WatchdRemovedReason:
 * @WATCHD_REMOVED_DELETED: the watched object was deleted
 * @WATCHD_REMOVED_UNMOUNTED: its file system was unmounted
 * @WATCHD_REMOVED_ONESHOT: a %WATCHD_WATCH_ONESHOT subscription had its event
 * @WATCHD_REMOVED_ERROR: watchd restarted and refused to add the
 *   subscription again (the #GError says why)
 * @WATCHD_REMOVED_OTHER: a reason this library does not know (the detail
 *   string is watchd's word for it)
 *
 * Why a subscription ended without being cancelled.
 */
typedef enum {
        WATCHD_REMOVED_DELETED,
        WATCHD_REMOVED_UNMOUNTED,
        WATCHD_REMOVED_ONESHOT,
        WATCHD_REMOVED_ERROR,
        WATCHD_REMOVED_OTHER,
} WatchdRemovedReason;

/**
 * WatchdCapabilities:
 * @WATCHD_CAPABILITY_NONE: the API of watchd 0.1 (file names that are not
 *   UTF-8 included: every watchd takes and sends them escaped)
 * @WATCHD_CAPABILITY_REPORT_APPEARANCE: the appearance of a path that did
 *   not exist is reported, as %WATCHD_EVENT_CREATE of the path itself
 *   (watchd(8), MISSING PATHS)
 * @WATCHD_CAPABILITY_PERSISTENT: subscriptions may outlive their path's
 *   object: %WATCHD_WATCH_PERSIST (watchd(8), MISSING PATHS)
 * @WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION: a rename whose halves belong to
 *   two subscriptions of one client is delivered to both (watchd(8), Events)
 * @WATCHD_CAPABILITY_REMOTE_POLLING: paths on remote file systems (NFS, SMB,
 *   FUSE) are polled, so changes made elsewhere are seen (issue 17)
 * @WATCHD_CAPABILITY_STREAM: a client may have its records over a socket of
 *   its own (OpenStream, watchd(8) STREAM); the client does so unless
 *   #WatchdClient:use-stream is %FALSE or its connection was given to it
 * @WATCHD_CAPABILITY_DURABLE_STREAM: the stream takes the replays of
 *   durable subscriptions too (#WatchdDurable), which then need no round
 *   trip through the bus
 * @WATCHD_CAPABILITY_PACKED_EVENTS: records read as signals may come packed
 *   (the flag PACKED, the EventsPacked signal, watchd(8)), which costs the
 *   daemon and the bus less an event; the client asks for it by itself
 *
 * What the running watchd offers beyond its first API, as it says in its
 * Capabilities property (see watchd_client_get_capabilities()).
 */
typedef enum /*< flags,prefix=WATCHD_CAPABILITY >*/ {
        WATCHD_CAPABILITY_NONE = 0,
        WATCHD_CAPABILITY_REPORT_APPEARANCE = 1 << 0,
        WATCHD_CAPABILITY_PERSISTENT = 1 << 1,
        WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION = 1 << 2,
        WATCHD_CAPABILITY_REMOTE_POLLING = 1 << 3,
        WATCHD_CAPABILITY_STREAM = 1 << 4,
        WATCHD_CAPABILITY_DURABLE_STREAM = 1 << 5,
        WATCHD_CAPABILITY_PACKED_EVENTS = 1 << 6,
} WatchdCapabilities;

/**
 * WATCHD_ERROR:
 *
 * The error domain of this library's own errors (those of the daemon come as
 * #G_DBUS_ERROR or with their D-Bus name, see g_dbus_error_get_remote_error()).
 */
#define WATCHD_ERROR (watchd_error_quark())
WATCHD_EXPORT GQuark watchd_error_quark(void);

/**
 * WatchdError:
 * @WATCHD_ERROR_NOT_RUNNING: watchd is not on the bus (and could not be started)
 * @WATCHD_ERROR_DAEMON_GONE: watchd left the bus before it answered
 * @WATCHD_ERROR_INVALID_PATH: the path cannot be sent to this watchd (not
 *   absolute, or not UTF-8 and not openable)
 * @WATCHD_ERROR_PROTOCOL: watchd's answer did not have the expected form
 * @WATCHD_ERROR_STATE: the call does not fit the object's state (starting a
 *   subscription twice, or one that ended)
 *
 * Errors of the %WATCHD_ERROR domain.
 */
typedef enum {
        WATCHD_ERROR_NOT_RUNNING,
        WATCHD_ERROR_DAEMON_GONE,
        WATCHD_ERROR_INVALID_PATH,
        WATCHD_ERROR_PROTOCOL,
        WATCHD_ERROR_STATE,
} WatchdError;

G_END_DECLS
