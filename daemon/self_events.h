/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * self_events - the records the daemon's own reads of directories make the kernel queue
 *
 * inotify reports every open, read and close of a watched directory, the
 * daemon's own too: a RECURSIVE walk reads each directory it links, the
 * poller reads the directories it polls, a pending path that appears is
 * scanned. Clients must not hear of those: to them an OPEN|ISDIR is a user's
 * ls. On the device backend the module leaves out everything the daemon's
 * thread group does (INOTIFY_DEV_EXCL_SELF; Backend.excludes_self), and this
 * module is off. Elsewhere (the syscalls, an older module) it keeps account:
 *
 * - Where the daemon opens, lists (one getdents64) or closes a directory,
 *   it calls self_events_before() just before and self_events_did() just
 *   after, with what it did (IN_OPEN, IN_ACCESS, IN_CLOSE_NOWRITE) and the
 *   directory (SelfDir). The kernel queued the records before the system
 *   call returned: on the directory's own watch and, first, on its parent's
 *   watch under its name, each if that watch's kernel mask asks for it. Each
 *   is noted as an expectation: (wd, mask with IN_ISDIR, name), in the order
 *   made, with where the kernel's queue ended before the call (one FIONREAD
 *   in self_events_before(), at most once between two kernel reads) and the
 *   number of kernel reads issued so far.
 *
 * - events.c tells of each read (self_events_read() before it,
 *   self_events_read_done() after) and asks self_events_check() of each
 *   record, with where it is in the kernel's stream: a record is the
 *   daemon's own if it equals the oldest expectation of its key, and lies
 *   past where the queue ended before the daemon's call (what was queued
 *   before, a user's ls read late because the daemon is behind, is not the
 *   daemon's). Then that expectation, and every older one of any key, is
 *   done with: the kernel queue keeps the order of the daemon's system
 *   calls, so an older one not met by now was merged by the kernel into an
 *   identical record before it (two getdents64 in a row give one IN_ACCESS)
 *   and never comes.
 *
 * - A read that leaves the queue empty (EAGAIN, or a read shorter than its
 *   buffer by a whole record) has brought every record queued before it:
 *   once its records are handled, what was noted before it and not met is
 *   forgotten. So is what an IN_Q_OVERFLOW may have taken.
 *
 * So the daemon's records are dropped and nothing else, with one window,
 * which is the kernel's: it merges a record identical to the one before it
 * in the queue. Another process's open, list or close of the same directory
 * queued after the queue's end was taken and next to the daemon's identical
 * record is merged with it, or taken for it, and not reported; that needs
 * the other process's event to fall between the daemon's last kernel read
 * (or its open of the directory, if later) and the daemon's system call on
 * that very directory: microseconds, at most a slice of a walk (5 ms) or
 * the rest of the kernel fd after a read (read_pause_us, at most 5 ms too).
 * An access before that, or after the daemon's own records of the
 * directory, is always reported (tests/unit/test-self-events.c plays each
 * case on the kernel's inotify).
 *
 * Single-threaded: the daemon's system calls are made in the order they are
 * noted, and reads happen between them. The reads of a walk in a worker
 * thread (tree.c, "Walks in workers") are announced instead, for the time
 * of their job: self_events_announce() below.
 *
 * The noted records are bounded (SELF_EVENTS_MAX): past that the oldest are
 * forgotten, and their records, if they still come, are reported: never a
 * user's event lost for want of memory.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backend.h"
#include "event_decode.h"
#include "watch_table.h"

typedef struct SelfEvents SelfEvents;

/* At most this many records noted and not yet met. */
#define SELF_EVENTS_MAX 65536u

/*
 * A directory the daemon reads, as the kernel reports what is done to it:
 * on its own watch, and on its parent's under name (the parent in the same
 * file system: a mount's root has none). name is borrowed for the call.
 */
typedef struct SelfDir {
        dev_t dev;
        ino_t ino;
        bool has_parent;
        dev_t pdev;
        ino_t pino;
        const char *name; /* its name in the parent (has_parent) */
        size_t name_len;
} SelfDir;

int self_events_new(WatchTable *table, Backend *backend, SelfEvents **ret);
SelfEvents *self_events_free(SelfEvents *se);

/* Whether to keep account: off when the kernel leaves out the daemon's own
 * events (Backend.excludes_self). On at first. */
void self_events_set_enabled(SelfEvents *se, bool enabled);
bool self_events_enabled(const SelfEvents *se);

/*
 * The daemon is about to open, list or close a directory it reads: where
 * the kernel's queue ends now, once after each kernel read (one FIONREAD).
 */
void self_events_before(SelfEvents *se);

/*
 * The daemon has just done what (IN_OPEN, IN_ACCESS: one getdents64, or
 * IN_CLOSE_NOWRITE) to the directory d. Looks its watches up now (a
 * directory opened before its watch was placed has only its parent's).
 */
void self_events_did(SelfEvents *se, uint32_t what, const SelfDir *d);

/*
 * The directory open at fd (inode dev, ino) is the root of what is read, at
 * path (its last component is its name): its parent is found with ".." (one
 * fstatat, only when keeping account). Fills ret, which borrows path.
 */
void self_events_root(SelfEvents *se, SelfDir *ret, int fd, dev_t dev, ino_t ino, const char *path);

/* events.c: a kernel read is about to be issued; it returned n (bytes, or
 * -errno: -EAGAIN, the queue was empty) into a buffer of size bytes. */
void self_events_read(SelfEvents *se);
void self_events_read_done(SelfEvents *se, ssize_t n, size_t size);
/* events.c: every record read so far is handled (the last read's buffer is
 * used up). */
void self_events_handled(SelfEvents *se);

/*
 * A worker thread reads directories (tree.c's walks): its system calls make
 * their records at any time until the job returns, so they cannot be noted
 * as above (the notes are the loop's thread's). They are announced on the
 * loop before the job (token) is submitted: on the watch wd (-1: any watch), under
 * name (NULL: the directory's own records; any_name: any name), that many
 * IN_OPEN, IN_ACCESS and IN_CLOSE_NOWRITE records (with IN_ISDIR) are the
 * daemon's own if they lie past where the queue ended at the announcement.
 * self_events_unannounce() at the job's completion; what is not met by then
 * is forgotten when the kernel queue is next read empty. While announced, a
 * user's identical record queued after the announcement is taken for the
 * daemon's: the window is the job's run, not one system call
 * (docs/RECURSION.md).
 */
void self_events_announce(SelfEvents *se, uint64_t token, int wd, const char *name, size_t name_len, bool any_name,
                          unsigned open, unsigned access, unsigned close);
/* The job token announced for has ended. */
void self_events_unannounce(SelfEvents *se, uint64_t token);

/* Whether ev, the record at offset off of the last read, is the daemon's
 * own: then no one gets it. IN_Q_OVERFLOW: forgets what the overflow may
 * have taken. */
bool self_events_check(SelfEvents *se, const RawEvent *ev, size_t off);

typedef struct SelfEventsStats {
        uint64_t dropped;   /* records dropped as the daemon's own */
        unsigned pending;   /* noted, not met yet */
        unsigned announced; /* workers' announcements kept (self_events_announce()) */
} SelfEventsStats;
void self_events_get_stats(const SelfEvents *se, SelfEventsStats *ret);
