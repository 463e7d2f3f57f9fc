/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * manager - the daemon's core, put together
 *
 * Builds the parts (backend, watch table, accounting, delivery, the tree,
 * missing-path and rename followers, the event path), wires each lower one
 * to the higher through the callbacks it takes, and serves the API's
 * operations on clients and subscriptions (subscriptions.h). Its struct is
 * its own (manager_internal.h, for manager.c, which builds the core, and
 * manager_calls.c, which serves the calls below): the layers above ask through
 * functions. It knows no event loop and no
 * bus: the loop glue (loop.c) asks it to handle the kernel's records, to
 * flush, when it next needs a turn, and to run its walks; the bus layer
 * (dbus_iface.c and its bus_*.c) asks it for clients and subscriptions,
 * and registers each client's transport.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "access.h"
#include "accounting.h"
#include "backend.h"
#include "client.h"
#include "config.h"
#include "macro.h"
#include "delivery.h"
#include "events.h"
#include "fanotify.h"
#include "manager_types.h"
#include "missing.h"
#include "moves.h"
#include "remote.h"
#include "subscriptions.h"
#include "tree.h"
#include "watch_table.h"

/* Takes over *config (it is reset). */
int manager_new(Config *config, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Opens the backend (per config, unless one was given with manager_set_backend()) and builds the parts; logs
 * its failures. */
int manager_start(Manager *m);

/* Applies a re-read config; the backend and device stay until restart. */
void manager_reload(Manager *m, Config *config);

void manager_set_hooks(Manager *m, const ManagerHooks *hooks, void *userdata);

/* For the loop glue. */
int manager_kernel_fd(const Manager *m);
/* A turn of the kernel: a slice of its records. Return: whether some are left (read, or to read). */
bool manager_on_kernel_readable(Manager *m);
/*
 * How long the loop lets the kernel fd, or the fanotify group's, rest after
 * a turn that left nothing (its queue was read empty): [events]
 * read_pause_us. A read at once would find what a writer made since, a
 * record or three in a storm, and send it on: a send to each client and a
 * wake-up of each, and of the bus, for just those. The rest lets a storm's
 * records gather, a full read at most, and costs a record that comes within
 * it at most the rest in latency; one after a quiet moment is read at once
 * (the rest follows a read, it never precedes one). A pairing deadline reads
 * the kernel's queue whatever the rest (manager_on_deadline()).
 */
uint64_t manager_read_pause_usec(const Manager *m);
/* The fanotify group's fd, -1 without one; a turn of it, as the kernel's. */
int manager_fanotify_fd(const Manager *m);
bool manager_on_fanotify_readable(Manager *m);
/* The turn for a deadline of manager_next_deadline(): first a slice of the
 * kernel's records, so that a partner already queued is paired, not
 * expired. Return: as manager_on_kernel_readable(). */
bool manager_on_deadline(Manager *m);
/* Sends what the clients' queues let go now. */
void manager_flush(Manager *m);
/* When the manager next needs a turn (CLOCK_MONOTONIC µs), UINT64_MAX: not for time. */
uint64_t manager_next_deadline(const Manager *m);
/* Runs the RECURSIVE walks, pending-path descents and polls due for at most budget_usec. Return: whether any is left. */
bool manager_run_walks(Manager *m, uint64_t budget_usec);
bool manager_has_walks(const Manager *m);

/* The clients: subscriptions_get_client(), subscriptions_new_client(), subscriptions_client_gone(). */
Client *manager_get_client(Manager *m, const char *name);
int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret);
void manager_client_gone(Manager *m, Client *c);

/* The API's operations on subscriptions: subscriptions_add_path(), subscriptions_add_fd(), subscriptions_remove(). */
/* manager_add_watch_path() after its open was made in a worker (fd taken, or
 * the open's -errno), with what the worker asked the file system (hint). */
int manager_add_watch_opened(Manager *m, Client *c, const char *path, int fd, const struct stat *st,
                             const RemoteHint *hint, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                             TreeWalk **ret_walk);
int manager_add_watch_path(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                           TreeWalk **ret_walk);
/*
 * manager_add_watch_path() with the open, as c, in a worker (a lane of c's
 * uid), and the rest on the loop: then done(c, r, id, walk, userdata), c NULL
 * if it went meanwhile (r -ESRCH), or at exit (r -ESHUTDOWN, from
 * fswork_free(): free the data, touch nothing else). Return: 1 (done comes; *ret, if given,
 * until then), -EOPNOTSUPP (no workers), -EAGAIN, -ENOMEM (the caller opens
 * on the loop, or fails).
 */
typedef struct ManagerOpen ManagerOpen;
typedef void (*ManagerOpenDone)(Client *c, int r, uint32_t id, TreeWalk *walk, void *userdata);
int manager_add_watch_path_async(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags,
                                 ManagerOpenDone done, void *userdata, ManagerOpen **ret);
/* AddWatchFd's: its checks of fd (a copy is kept: the caller's may close),
 * and what remote.c asks of its file system, in the job; as above. -EBADF:
 * fd could not be copied. */
int manager_add_watch_fd_async(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, ManagerOpenDone done,
                               void *userdata, ManagerOpen **ret);
/* Gives o up: done is not called, and what the open gives is closed unused when it returns. */
void manager_add_watch_cancel(ManagerOpen *o);
int manager_add_watch_fd(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk);

int manager_remove_watch(Manager *m, Client *c, uint32_t id);

/* ListWatches' WATCHD_FLAG_REMOTE (some directory of s is on a remote file
 * system) and WATCHD_FLAG_POLLED (some is polled) for s. */
uint32_t manager_subscription_remote_flags(const Manager *m, const Subscription *s);

/* Counters for GetStats. */
typedef struct ManagerStats {
        unsigned clients, users, subscriptions, kernel_watches;
        uint64_t events_read, kernel_reads, events_delivered, signals_sent, overflows, kernel_overflows, events_dropped;
        uint64_t pending_events;      /* records queued for clients, not sent yet */
        unsigned polled_dirs;         /* directories on remote file systems polled */
        uint64_t poll_syscalls;       /* system calls polling made */
        uint64_t self_events_dropped; /* records of the daemon's own reads, dropped (self_events.h) */
        FanotifyStats fanotify;       /* all 0 without fanotify */
} ManagerStats;
void manager_get_stats(const Manager *m, ManagerStats *ret);
/* What the clients of uid hold (GetStats' own_*). */
void manager_get_user_stats(const Manager *m, uid_t uid, SubscriptionsStats *ret);

/* For the layers above, which do not read the struct. */
const Config *manager_get_config(const Manager *m);

/* File system work off the loop (fswork.h): given by watchd.c before
 * manager_start(); without it (unit tests) polls read on the loop. */
void manager_set_fswork(Manager *m, FsWork *w);
FsWork *manager_get_fswork(const Manager *m);
/* FsWorkOps.stalled: the subscriptions polled on dev are told. */
void manager_lane_stalled(Manager *m, dev_t dev, bool stalled);
/* If c's subscription id waits for first snapshots taken in workers, cb(0,
 * userdata) is called once they are (or the subscription ended), cb(-ESHUTDOWN,
 * userdata) at exit: return 1. Else 0: now; -ENOMEM. */
int manager_when_primed(Manager *m, Client *c, uint32_t id, ManagerWaitFunc cb, void *userdata);
/* The wait of manager_when_primed() given up: cb is not called. */
void manager_when_primed_cancel(Manager *m, uint32_t id, ManagerWaitFunc cb, void *userdata);
/* If c's subscription id is pending and its path is looked up in workers
 * (missing_start(), at AddWatch), cb(r, userdata) is called once it is over:
 * r 0 (waiting or placed), -errno (the look-up failed: the subscription is
 * ended, nothing told to its owner; answer with r), -ECANCELED (it ended
 * first), -ESHUTDOWN (at exit: free what it holds, touch nothing else).
 * Return 1; 0 if nothing waits (now), -ENOMEM. */
int manager_when_looked_up(Manager *m, Client *c, uint32_t id, ManagerWaitFunc cb, void *userdata);
/* The wait of manager_when_looked_up() given up: cb is not called. */
void manager_when_looked_up_cancel(Manager *m, uint32_t id, ManagerWaitFunc cb, void *userdata);
const Backend *manager_get_backend(const Manager *m);
/* The limits in force ("auto" sized from the kernel's). */
const AccountingLimits *manager_get_limits(const Manager *m);
Subscription *manager_get_subscription(Manager *m, uint32_t id);
/* Sends everything queued, rename halves still waiting for a partner too (at exit). */
void manager_flush_all(Manager *m);

/* For unit tests: a fake backend, given before manager_start() (freed with the manager); the pending paths. */
void manager_set_backend(Manager *m, Backend *backend);
Missing *manager_get_missing(Manager *m);
