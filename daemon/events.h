/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * events - the kernel's records, to the subscriptions they are for
 *
 * Reads the kernel through the backend in slices (events_slice()), decodes
 * each record, finds the watch by its wd, and goes through the watch's
 * links: a subscription whose mask matches gets a record
 * (events_deliver()), a directory of a RECURSIVE tree that appears or moves
 * is handed to the tree follower, an event on a directory of pending paths
 * to the missing-path follower, a directory's rename to the rename follower.
 * IN_IGNORED tells the layer above that what was rooted on the watch lost
 * its object, and so does a PERSIST subscription's object renamed away
 * (IN_MOVE_SELF, from the kernel or made here when its parent's watch saw
 * the rename); IN_Q_OVERFLOW gives every client Overflow. On a polled
 * directory (remote.h), the record is noted for the poller. A record the
 * daemon's own read of a directory caused (a scan, a poll: self_events.h)
 * is no one's, and is not there at all. What only the layer above can do
 * (end a subscription, follow a path again, reach every client) it asks
 * through the callbacks given at construction.
 */

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "event_decode.h"
#include "missing.h"
#include "moves.h"
#include "remote.h"
#include "self_events.h"
#include "tree.h"
#include "watch_table.h"

typedef struct Events Events;

typedef struct EventsOps {
        /* The daemon ends s, and its owner hears why (WatchRemoved: reason):
         * ONESHOT after its first record. */
        void (*end)(Subscription *s, const char *reason, uint64_t now_usec, void *userdata);
        /* s's own object has left its path: the kernel dropped its watch
         * (reason: WATCHD_REASON_DELETED, or _UNMOUNTED after IN_UNMOUNT), or,
         * PERSIST, it was renamed away (IN_MOVE_SELF delivered; reason
         * "deleted"). Its last records are queued. The layer above ends s
         * with WatchRemoved(reason), or follows its path again (PERSIST). */
        void (*object_gone)(Subscription *s, const char *reason, void *userdata);
        /* The kernel lost records: every client gets Overflow naming all its subscriptions. */
        void (*overflow_all)(void *userdata);
        /* The mode, owner or ACL of l's directory changed (IN_ATTRIB on it): s's
         * access is to be checked again. l is held for the call only. Optional. */
        void (*access_changed)(Subscription *s, WatchLink *l, void *userdata);
} EventsOps;

typedef struct EventsStats {
        uint64_t events_read;      /* records read from the kernel */
        uint64_t kernel_reads;     /* read()s of the kernel queue that brought records */
        uint64_t kernel_overflows; /* IN_Q_OVERFLOW records */
} EventsStats;

int events_new(Backend *backend, WatchTable *table, Tree *tree, Missing *missing, Moves *moves, Remote *remote,
               SelfEvents *self, const EventsOps *ops, void *userdata, Events **ret);
Events *events_free(Events *e);

/*
 * Reads and handles the kernel's records for at most budget_usec: a writer
 * that keeps the queue full, or records that each cost much, cannot keep
 * the loop from the bus and the signals. What is left of a read is kept for
 * the next call; the descents of pending paths left by earlier records are
 * finished before the next record. A slice makes one read at most, and
 * ends when its records are handled: the loop flushes them before the next.
 * Nothing is left when a read finds the queue empty, or leaves room for the
 * longest record (it took everything there was: a record queued since makes
 * the fd readable again), unless what waits for an empty read (tree.h,
 * remote.h) needs one. Return: whether anything is left.
 */
bool events_slice(Events *e, uint64_t budget_usec);
/* The next slice reads until the kernel says the queue is empty, even after
 * a short read: the loop comes for something else than the fd (a pairing
 * deadline), and what the kernel holds must be read first. */
void events_read_again(Events *e);

/*
 * The one way a change reaches a subscription's owner, whatever found it
 * (the kernel today; a poller of a remote filesystem later): mask (and the
 * name, in the directory at dir) for s, if s asks for it. ONESHOT ends s
 * after it. Return: whether a record was queued.
 */
bool events_deliver(Events *e, Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                    size_t name_len, uint64_t now_usec);

/* Whether records of the last read are still to be handled (a slice ended
 * in it), and when it was read. */
bool events_backlog(const Events *e, uint64_t *ret_read_time);
/* A record that sets off a pending path's probe in a worker holds the
 * clients that hear it (hold.h: holds_get_trigger() while it is handled). */
void events_set_holds(Events *e, Holds *holds);

const EventsStats *events_get_stats(const Events *e);
