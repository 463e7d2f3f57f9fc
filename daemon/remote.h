/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * remote - directories the kernel cannot watch for everything, polled
 *
 * On NFS, SMB/CIFS, 9p, AFS, Ceph, Coda and FUSE (fstype.h) the kernel
 * reports what changes through this machine, and nothing of what another
 * client, the server or a FUSE daemon's backing store changes. Every link
 * the watch table makes (a subscription's root, each directory of a
 * RECURSIVE tree) is looked at as it is made: one fstatfs for a root or a
 * directory on another device than its parent's, nothing for one on its
 * parent's device. A directory on such a file system, with a poll interval
 * for its kind in watchd.conf's [poll] (0: not polled), keeps its kernel
 * watch and is also polled (poller.h): in one group per subscription and
 * device, read with the subscription owner's credentials (access_become()
 * around every stretch of reads), relative to the directory's own fd, at
 * most max_polled_dirs_per_user directories for a uid.
 *
 * What polling finds is delivered like the kernel's records
 * (RemoteOps.deliver, events_deliver() above), with WATCHD_IN_POLLED in
 * the mask; a move is two records of one cookie (0xC0000000 and up: not
 * the kernel's), paired by delivery into one. In a RECURSIVE tree, a
 * directory found created is linked (and polled, its names then reported as
 * created), one found deleted is unlinked, one found moved keeps its links.
 *
 * A record the kernel reports for a polled directory is noted
 * (remote_on_event()), so that the poller does not report the same change
 * again. The poller's own reads of a directory make the kernel queue
 * IN_OPEN, IN_ACCESS and IN_CLOSE_NOWRITE (with IN_ISDIR) for its watch and
 * its parent's: each is told to self_events.h, which drops those records.
 *
 * Over the budget: an AddWatch whose root would be polled fails
 * (-WATCHD_E_USER_POLLED); a directory found later (a tree's, or a pending
 * path's root) is watched by the kernel only, and the owner gets Overflow.
 *
 * A remote directory that is not polled (NO_POLL, an interval of 0, over
 * the budget) is remembered all the same, so that ListWatches can say the
 * subscription is REMOTE: its owner learns that this kernel does not see
 * every change there.
 */

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "event_decode.h"
#include "fswork.h"
#include "poller.h"
#include "remote_types.h"
#include "self_events.h"
#include "watch_table.h"

/*
 * With fswork (not NULL), every read of a polled directory is made in a
 * worker thread, in its file system's lane, as its subscriber (fswork.h):
 * a file system that stops answering holds its own subscriptions' polls,
 * and nothing else. Those subscriptions are sent Overflow when its lane
 * stalls and again when it answers (a rescan then sees what it missed).
 * Without it (unit tests), reads are made in poller_run().
 */
int remote_new(WatchTable *table, SelfEvents *self, const Config *config, FsWork *fswork, const RemoteOps *ops,
               void *userdata, Remote **ret);
/* A RemoteHint (remote_types.h) of the root open at fd, in the worker that opened it. */
void remote_hint_probe(int fd, const struct stat *st, RemoteHint *ret);
/* The hint for the links made until it is set again (NULL: none). */
void remote_set_hint(Remote *r, const RemoteHint *hint);

/* Whether first snapshots of s's directories are being taken in a worker:
 * a change made after AddWatch answers must be found by the next poll, so
 * the answer waits for RemoteOps.primed. */
bool remote_priming(const Remote *r, const Subscription *s);
/* The lane of dev stalled, or answers again (FsWorkOps.stalled): every
 * subscription polled there gets Overflow. */
void remote_lane_stalled(Remote *r, dev_t dev, bool stalled);
Remote *remote_free(Remote *r);

/* New intervals (for subscriptions made from now on) and budget. */
void remote_reload(Remote *r, const Config *config);

/* The watch table's link hooks, with the Remote as their userdata: remote_link_added(), remote_link_gone(). */
extern const WatchTableOps remote_table_ops;
int remote_link_added(Remote *r, WatchLink *l, int fd, const struct stat *st);
void remote_link_gone(Remote *r, WatchLink *l);
/* What l's directory is on, as remote_link_added() found it (FS_LOCAL also
 * for what it did not look at: a pending path's chain). No system call. */
FsKind remote_link_kind(const Remote *r, const WatchLink *l);

/* A kernel record for w (not IN_IGNORED nor IN_Q_OVERFLOW): its name is noted in every directory polled on w. */
void remote_on_event(Remote *r, const Watch *w, const RawEvent *ev);
/* Whether the record was caused by a read of a polled directory in a worker
 * (fswork.h: self_events.h notes the loop's own reads only): then no one
 * gets it. What a worker's read may cause is announced when it is submitted
 * (an open, a close, any number of IN_ACCESS, on the directory's watch and
 * its parent's), and kept until its reading ends and the kernel queue is
 * next read empty (remote_queue_read_empty()). */
bool remote_own_read(Remote *r, const Watch *w, const RawEvent *ev);
void remote_queue_read_empty(Remote *r);

/* Polling due at now: runs for at most budget_usec. Return: whether more is due at once. */
bool remote_run(Remote *r, uint64_t budget_usec);
/* When polling is next due (CLOCK_MONOTONIC µs; UINT64_MAX: never). */
uint64_t remote_next(const Remote *r);

/* Whether some directory of s is polled (ListWatches' WATCHD_FLAG_POLLED). */
bool remote_subscription_polled(const Remote *r, const Subscription *s);
/* Whether some directory of s is on a remote file system, polled or not (WATCHD_FLAG_REMOTE). */
bool remote_subscription_remote(const Remote *r, const Subscription *s);

typedef struct RemoteStats {
        unsigned polled_dirs;
        uint64_t poll_syscalls; /* open, getdents64, statx made by polling since start */
} RemoteStats;
void remote_get_stats(const Remote *r, RemoteStats *ret);
