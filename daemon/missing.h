/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * missing - following paths that do not exist yet
 *
 * A pending subscription (watchd(8), "MISSING PATHS") waits in the deepest
 * existing directory of its path, and every existing directory above it is
 * watched, so that it sees the next component appear and any component go.
 * Those directories are a chain: the links of one internal subscription of
 * the watch table (watch_table_chain_new), a tree of directories from a top
 * ("/") down, shared by every pending subscription of the same credentials
 * (uid and groups: they see the same directories) whose paths have a
 * prefix in common. A pending subscription itself holds no link; it is
 * charged one watch for each directory of the chain from the top to where
 * it waits, as if it had them alone.
 *
 * An event costs work in proportion to what changed, not to the depth of
 * the paths times the subscriptions: a directory of a chain that goes away
 * takes the part of the chain below it along, and its waiters climb to its
 * parent; a component that appears is followed down from the directory it
 * appeared in, one openat() a level with the owner's credentials, once for
 * all the waiters that share it; a directory that leads elsewhere than its
 * link (a rename not read yet) is found by walking down from the top, one
 * level at a time. What the follower finds it tells the layer above through
 * the callbacks it was made with: a path that appeared, a subscription that
 * cannot be followed any further. The probes an event sets off run in
 * worker threads (fswork.h), as the chain's caller, and what they find is
 * applied on the loop: a file system that does not answer holds its lane,
 * not the daemon.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "access.h"
#include "fswork.h"
#include "hold.h"
#include "missing_types.h"
#include "watch_table.h"

int missing_new(WatchTable *table, const MissingOps *ops, void *userdata, Missing **ret);
Missing *missing_free(Missing *m);
/* The worker pool that probes after events run in (NULL, and without it:
 * inline, on the loop's thread). */
void missing_set_fswork(Missing *m, FsWork *w);

/*
 * Follows pending s (no link of its own) for caller. Looks its path up at
 * once: if it exists, s is placed through ops->appeared (before this
 * returns). Return: 0 (waiting, or placed), or -errno: -EACCES (no
 * directory of the path may be read), an error of access_open_at() for the
 * path, a limit of account_charge(), an error of ops->appeared. On error s
 * is not followed, and ops->gone is not called.
 */
int missing_add(Missing *m, Subscription *s, const Caller *caller);
/*
 * missing_add() with the look-up in workers (AddWatch): the prefixes of the
 * path opened as caller in a job on caller's lane (FSWORK_USER_LANE), the
 * descent from the first that may be read in the chain's jobs, the rest on
 * the loop. Return: 1 (ops->found tells the outcome later; s is followed
 * meanwhile: missing_remove() as for any), or what missing_add() returns
 * (no worker pool, no found callback, or no worker could take it: looked
 * up here, at once).
 */
int missing_start(Missing *m, Subscription *s, const Caller *caller);
/*
 * Follows pending s again (a PERSIST subscription whose object left): as
 * missing_start(), the look-up in workers where there are any, but no one
 * waits for it: a failure is told through ops->gone (s ends), as for a
 * path that can no longer be followed.
 */
void missing_follow_again(Missing *m, Subscription *s, const Caller *caller);
/* Whether s's look-up begun by missing_start() is still going on (ops->found not called yet). */
bool missing_looking_up(const Missing *m, const Subscription *s);
/* s ended (RemoveWatch, its client gone): it is no longer followed. */
void missing_remove(Missing *m, Subscription *s);

/* An event (mask, and the name it is about) on l, a link of a chain. */
void missing_on_event(Missing *m, WatchLink *l, uint32_t mask, const char *name, size_t name_len);
/* The kernel dropped the watch of l, a link of a chain (IN_IGNORED). */
void missing_on_watch_gone(Missing *m, WatchLink *l);
/* The kernel's queue overflowed: every waiter's way is looked at again (what appeared is followed). */
void missing_recheck(Missing *m);

/* Goes on with the descents left for at most budget_usec. Return: whether any is left. */
bool missing_run(Missing *m, uint64_t budget_usec);
/* Whether descents are left (for missing_run()). */
bool missing_has_work(const Missing *m);

/* Whether probes run in workers: the records of the clients they concern
 * wait for them (hold.h), from the record that sets them off. */
bool missing_in_workers(const Missing *m);
/* While a chain's probes run in workers, what they find goes before the
 * later records of the clients they concern: its waiters' owners and, for
 * a probe an event set off, those that heard that event
 * (holds_get_trigger()). */
void missing_set_holds(Missing *m, Holds *holds);
/* A record about dir/name (its name came or went) goes to hearer: if a
 * chain whose probes run in workers follows a path through dir/name (or to
 * it) from a directory it has not linked yet, hearer waits for that chain's
 * probes too. The record may be what made the path appear, read before the
 * chain's watch on dir was placed: a client that heard it may count on the
 * path's subscription being placed, as it did inline. */
void missing_hold_hearer(Missing *m, Client *hearer, const char *dir, const char *name, size_t name_len);

/* Pending subscriptions followed, and the directories their chains hold. */
unsigned missing_n_waiting(const Missing *m);
unsigned missing_n_links(const Missing *m);
