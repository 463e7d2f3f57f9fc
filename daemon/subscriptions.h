/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * subscriptions - the clients, their subscriptions' life, and the daemon's decisions about them
 *
 * The clients (owners of subscriptions: a bus connection, a durable
 * subscription's journal) are kept here by name. A subscription is made
 * from a path opened as its owner, from a
 * descriptor its owner opened, or pending on a path that does not exist yet
 * (missing.h); it is ended by its owner, or by the daemon with a
 * WatchRemoved notice. The decisions on the way are here: the limits before
 * any open, a RECURSIVE tree whole or not at all, a pending path's
 * appearance reported ("report-appearance") and its tree walked, and what
 * happens when its object leaves its path (it ends, or with PERSIST follows
 * the path again). The parts below ask for these through the callbacks the
 * manager wires to them (TreeOps, MissingOps, EventsOps, RemoteOps).
 */

#include <stdint.h>
#include <sys/stat.h>

#include "accounting.h"
#include "client.h"
#include "delivery.h"
#include "events.h"
#include "fanotify.h"
#include "fswork.h"
#include "missing.h"
#include "tree.h"
#include "watch_table.h"

typedef struct Subscriptions Subscriptions;

int subscriptions_new(WatchTable *table, Accounting *accounting, Delivery *delivery, Tree *tree, Missing *missing,
                      Events *events, Subscriptions **ret);
/* Frees the clients without ending their subscriptions (at exit: the table goes next). */
Subscriptions *subscriptions_free(Subscriptions *subs);
/* The fanotify backend (fanotify.h) that serves the RECURSIVE subscriptions it can; NULL: none. */
void subscriptions_set_fanotify(Subscriptions *subs, Fanotify *f);

/* The client of that name, or NULL. */
Client *subscriptions_get_client(Subscriptions *subs, const char *name);
/* A new client, with the caller's credentials. Limits: -WATCHD_E_USER_CLIENTS. */
int subscriptions_new_client(Subscriptions *subs, const char *name, const Caller *caller, Client **ret);
/* The client is gone: end its subscriptions, free it. */
void subscriptions_client_gone(Subscriptions *subs, Client *c);
/* The delivery's limits changed: every client's queue takes them. */
void subscriptions_reload(Subscriptions *subs);

/* The kernel lost records (EventsOps.overflow_all): every client gets one
 * Overflow naming all its subscriptions, and the daemon's own followers
 * look again (pending paths, RECURSIVE trees). */
void subscriptions_overflow_all(Subscriptions *subs);

/* What the clients of uid hold, for its GetStats (uid_t -1: all clients). */
typedef struct SubscriptionsStats {
        uint32_t clients, subscriptions, watches;
        uint64_t events_delivered, pending_events, events_dropped, overflows;
} SubscriptionsStats;
void subscriptions_get_stats(const Subscriptions *subs, uid_t uid, SubscriptionsStats *ret);

/*
 * Subscribes c to path (opened with c's credentials) or to fd (already open
 * by the client). With RECURSIVE on a directory, every directory below is
 * watched too, each counting against the limits; if that walk is not done
 * within its first slice, *ret_walk is set and the walk goes on from the
 * loop (the caller sets its completion with tree_walk_set_done()). A path
 * that does not exist yet is pending (missing.h).
 * Return: 0, or -errno: see access_open_as() and access_check_fd(), the
 * limits of account_check(), -ENOSPC the kernel's watch limit.
 */
int subscriptions_add_path(Subscriptions *subs, Client *c, const char *path, uint32_t mask, uint32_t flags,
                           uint32_t *ret_id, TreeWalk **ret_walk);
int subscriptions_add_fd(Subscriptions *subs, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk);
/* The rest of subscriptions_add_path() once path (simplified) was opened as
 * c elsewhere (a worker: fswork.h): fd (taken) and st are what
 * access_open_as() gave, or fd is its -errno (-ENOENT: pending); hint what
 * that worker asked of its file system (remote_hint_probe()), or NULL. */
int subscriptions_add_opened(Subscriptions *subs, Client *c, const char *path, int fd, const struct stat *st,
                             uint32_t mask, uint32_t flags, const RemoteHint *hint, uint32_t *ret_id,
                             TreeWalk **ret_walk);
/* Ends c's subscription id. Return: 0, or -WATCHD_E_NO_SUCH_WATCH if c has no such subscription. */
int subscriptions_remove(Subscriptions *subs, Client *c, uint32_t id);

/* Ends s, no notice queued (TreeOps.end: its AddWatch is answered with the error). */
void subscriptions_end(Subscriptions *subs, Subscription *s);
/* The daemon ends s by itself and tells its owner why: WatchRemoved(reason). */
void subscriptions_end_with_notice(Subscriptions *subs, Subscription *s, const char *reason, uint64_t now_usec);

/* s's object left its path (EventsOps.object_gone): s ends with
 * WatchRemoved(reason), or, with PERSIST, follows its path again. */
void subscriptions_object_gone(Subscriptions *subs, Subscription *s, const char *reason);

/* s's pending path appeared, fd open on it (MissingOps.appeared): its own
 * watch now, its appearance reported, its tree walked. Return: 0, or
 * -errno (missing.c then ends it). */
int subscriptions_appeared(Subscriptions *subs, Subscription *s, int fd, const struct stat *st);

/* A watched directory's mode, owner or ACL changed (l, a link of s): may s's
 * owner still read it? Checked as the owner, by its path, in a worker of
 * fswork's lane for the directory's file system (here without fswork);
 * meanwhile, and after if access is gone, nothing from there is delivered. */
void subscriptions_access_changed(Subscriptions *subs, FsWork *fswork, Subscription *s, WatchLink *l);
