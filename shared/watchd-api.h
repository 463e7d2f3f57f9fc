/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-api - the words of the org.example.Inotify API, written once
 *
 * What the daemon, watchctl, the tests, the benchmark sinks (and the coming
 * client library) share: the bus name, object path and interface, the error
 * names a method may return, the AddWatch flags, the event bits a mask may
 * hold and the reasons a WatchRemoved gives. data/org.example.Inotify.xml and
 * watchd(8) are the contract; this header is its C spelling. It needs nothing
 * but the C compiler: it may be installed as it is for the client library.
 *
 * The event bits are those of inotify (the 2005 /dev/inotify ABI, the same
 * values as the syscalls' <sys/inotify.h> for every bit the API has); the
 * daemon checks at compile time that they agree (daemon/event_bits.h).
 */

/* Where the service is. */
#define WATCHD_BUS_NAME    "org.example.Inotify"
#define WATCHD_OBJECT_PATH "/org/example/Inotify"
#define WATCHD_INTERFACE   "org.example.Inotify"

/* The errors a method returns: the API's own, and the standard ones it uses. */
#define WATCHD_ERROR_NO_SUCH_WATCH   "org.example.Inotify.Error.NoSuchWatch"
#define WATCHD_ERROR_INVALID_ARGS    "org.freedesktop.DBus.Error.InvalidArgs"
#define WATCHD_ERROR_ACCESS_DENIED   "org.freedesktop.DBus.Error.AccessDenied"
#define WATCHD_ERROR_FILE_NOT_FOUND  "org.freedesktop.DBus.Error.FileNotFound"
#define WATCHD_ERROR_LIMITS_EXCEEDED "org.freedesktop.DBus.Error.LimitsExceeded"
#define WATCHD_ERROR_NOT_SUPPORTED   "org.freedesktop.DBus.Error.NotSupported"
#define WATCHD_ERROR_DURABLE_EXISTS  "org.example.Inotify.Error.DurableExists"
#define WATCHD_ERROR_NO_SUCH_DURABLE "org.example.Inotify.Error.NoSuchDurable"

/* AddWatch/AddWatchFd flags. */
#define WATCHD_FLAG_RECURSIVE   0x1u  /* the directory and every directory below it */
#define WATCHD_FLAG_ONLYDIR     0x2u  /* refuse anything but a directory */
#define WATCHD_FLAG_DONT_FOLLOW 0x4u  /* do not follow a symbolic link in the last component */
#define WATCHD_FLAG_ONESHOT     0x8u  /* end after the first event */
#define WATCHD_FLAG_PERSIST     0x10u /* follow the path: pending again when the object goes (AddWatch only) */
#define WATCHD_FLAG_NO_POLL     0x40u /* do not poll its directories on remote file systems */
#define WATCHD_FLAG_PACKED      0x80u /* as signals, its records go in EventsPacked (packed-events) */
#define WATCHD_FLAGS_VALID      0xdfu

/* Event bits: what a mask may ask for (the eleven events of /dev/inotify 0.23). */
#define WATCHD_IN_ACCESS        0x00000001u
#define WATCHD_IN_MODIFY        0x00000002u
#define WATCHD_IN_ATTRIB        0x00000004u
#define WATCHD_IN_CLOSE_WRITE   0x00000008u
#define WATCHD_IN_CLOSE_NOWRITE 0x00000010u
#define WATCHD_IN_OPEN          0x00000020u
#define WATCHD_IN_MOVED_FROM    0x00000040u
#define WATCHD_IN_MOVED_TO      0x00000080u
#define WATCHD_IN_CREATE        0x00000100u
#define WATCHD_IN_DELETE        0x00000200u
#define WATCHD_IN_DELETE_SELF   0x00000400u
#define WATCHD_MASK_VALID       0x000007ffu

/* Not a request flag but how a path is written (shared/path_escape.h, the
 * escaped form of a name that is not UTF-8): in AddWatch's flags, the path
 * is escaped; in a ListWatches entry, so is its path; in an Events record's
 * mask, its paths are. Not in WATCHD_FLAGS_VALID. */
#define WATCHD_FLAG_PATH_ESCAPED 0x00100000u

/* In an Events record's mask: found by polling a directory on a remote or
 * FUSE file system (watchd(8), REMOTE FILE SYSTEMS), up to the poll interval
 * after the change. Not in WATCHD_MASK_VALID. */
#define WATCHD_IN_POLLED 0x00200000u

/* Never sent by watchd: the bit libwatchd marks the records it makes itself
 * with, by comparing a directory with what it held before events were lost
 * (WatchdSnapshot, WATCHD_EVENT_RESCANNED). Not in WATCHD_MASK_VALID. */
#define WATCHD_IN_RESCANNED 0x00800000u

/* In a ListWatches entry's flags: the subscription's file, or some directory
 * of it, is on a remote or FUSE file system, where the kernel does not see
 * every change (polled or not: a file, NO_POLL, an interval of 0, the
 * budget). Not in WATCHD_FLAGS_VALID. */
#define WATCHD_FLAG_REMOTE 0x00400000u

/* In a ListWatches entry's flags: some of those directories are polled (the
 * bit of WATCHD_IN_POLLED). Not in WATCHD_FLAGS_VALID. */
#define WATCHD_FLAG_POLLED WATCHD_IN_POLLED

/* In a ListWatches entry's flags: a RECURSIVE subscription whose tree one
 * fanotify mark on its filesystem follows (watchd(8), FANOTIFY), not an
 * inotify watch on each directory. Not in WATCHD_FLAGS_VALID. */
#define WATCHD_FLAG_FANOTIFY 0x00800000u

/* Bits a record carries besides the events asked for. */
#define WATCHD_IN_MOVE_SELF \
        0x00000800u                   /* PERSIST: the object was renamed away from the path
                                       * (with IN_DELETE_SELF in the mask; not asked for itself) */
#define WATCHD_IN_UNMOUNT 0x00002000u /* sent to every subscriber, asked for or not */
#define WATCHD_IN_ISDIR   0x40000000u /* the object is a directory */

/* DurableRescan(name, id, reason, directories): a directory's flag, the directory's whole tree. */
#define WATCHD_RESCAN_RECURSIVE 0x1u

/* DurableStopped(name, reason): why nothing more comes for a durable subscription. */
#define WATCHD_DURABLE_STOPPED_REMOVED   "removed"           /* RemoveDurable */
#define WATCHD_DURABLE_STOPPED_ELSEWHERE "resumed-elsewhere" /* another connection resumed it */
#define WATCHD_DURABLE_STOPPED_ERROR     "error"             /* its journal could not be read or sent: resume again */

/* WatchRemoved(id, reason): why the daemon ended a subscription. */
#define WATCHD_REASON_DELETED   "deleted"   /* the object (or a directory of a pending path) is gone */
#define WATCHD_REASON_UNMOUNTED "unmounted" /* its filesystem was unmounted */
#define WATCHD_REASON_ONESHOT   "oneshot"   /* ONESHOT, after its first event */

/* The words of the Capabilities property (as): what the daemon offers
 * beyond its first API. A daemon without the property offers none. (Not
 * WATCHD_CAPABILITY_*: libwatchd's flags of the same names are those.) */
#define WATCHD_CAP_PAIR_PER_SUBSCRIPTION "pair-per-subscription" /* a rename reaches each subscription it concerns */
#define WATCHD_CAP_REPORT_APPEARANCE     "report-appearance"     /* a pending path's appearance is a record */
#define WATCHD_CAP_PERSISTENT            "persistent"            /* AddWatch takes WATCHD_FLAG_PERSIST */
#define WATCHD_CAP_STREAM                "stream"                /* OpenStream (watchd-stream(5)) */
#define WATCHD_CAP_DURABLE_STREAM        "durable-stream" /* OpenStream's option "durable": replays in the stream */
#define WATCHD_CAP_PACKED_EVENTS         "packed-events"  /* AddWatch takes PACKED: records in EventsPacked */
#define WATCHD_CAP_REMOTE_POLLING \
        "remote-polling" /* remote and FUSE file systems are polled
                          * (some [poll] interval is not 0) */
