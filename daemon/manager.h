/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * manager - the daemon's core, put together
 *
 * Builds the parts (backend, watch table, accounting, delivery, the tree,
 * missing-path and rename followers, the event path), wires each lower one
 * to the higher through the callbacks it takes, and serves the API's
 * operations on clients and subscriptions. It knows no event loop and no
 * bus: the loop glue (loop.c) asks it to handle the kernel's records, to
 * flush, when it next needs a turn, and to run its walks; the bus layer
 * (dbus_iface.c) asks it for clients and subscriptions, and registers each
 * client's transport.
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
#include "missing.h"
#include "moves.h"
#include "remote.h"
#include "tree.h"
#include "watch_table.h"

/* What a layer above the manager (durable.c) does at the manager's own
 * moments, given with manager_set_hooks(): it calls nothing up. */
typedef struct ManagerHooks {
        /* After each flush of the clients' queues. */
        void (*after_flush)(void *userdata);
        /* When it next needs a flush for time (CLOCK_MONOTONIC µs), UINT64_MAX: not for time. */
        uint64_t (*next_deadline)(void *userdata);
} ManagerHooks;

typedef struct Manager {
        Config config;
        char *config_path;
        uint32_t kernel_watch_limit;    /* the kernel's, read at start: "auto" limits are sized from it */

        Backend *backend;
        WatchTable *table;
        Accounting *accounting;
        Delivery *delivery;
        Tree *tree;                     /* RECURSIVE subscriptions */
        Missing *missing;               /* pending paths */
        Moves *moves;                   /* renamed directories */
        Remote *remote;                 /* directories on remote file systems, polled */
        Events *events;                 /* the kernel's records */
        Fanotify *fanotify;             /* RECURSIVE trees on one mark a filesystem; NULL: inotify only */

        GHashTable *clients;            /* name -> Client (owned) */

        ManagerHooks hooks;
        void *hooks_userdata;
} Manager;

/* Takes over *config (it is reset). */
int manager_new(Config *config, const char *config_path, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Opens the backend (per config, unless one was set in m->backend) and builds the parts; logs its failures. */
int manager_start(Manager *m);

/* Applies a re-read config; the backend and device stay until restart. */
void manager_reload(Manager *m, Config *config);

void manager_set_hooks(Manager *m, const ManagerHooks *hooks, void *userdata);

/* For the loop glue. */
int manager_kernel_fd(const Manager *m);
/* A turn of the kernel: a slice of its records. Return: whether some are left (read, or to read). */
bool manager_on_kernel_readable(Manager *m);
/* The fanotify group's fd, -1 without one; a turn of it, as the kernel's. */
int manager_fanotify_fd(const Manager *m);
bool manager_on_fanotify_readable(Manager *m);
/* How long to wait before the group is read again (fanotify_pause_usec()). */
uint64_t manager_fanotify_pause_usec(const Manager *m);
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

/* The client of that name, or NULL. */
Client *manager_get_client(Manager *m, const char *name);
/* A new client, with the caller's credentials. Limits: -WATCHD_E_USER_CLIENTS. */
int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret);
/* The client is gone: end its subscriptions, free it. */
void manager_client_gone(Manager *m, Client *c);
/* Queues one Overflow naming every subscription of c (its records were lost on the way). */
void manager_client_lost_all(Manager *m, Client *c);

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
int manager_add_watch_path(Manager *m, Client *c, const char *path, uint32_t mask, uint32_t flags,
                           uint32_t *ret_id, TreeWalk **ret_walk);
int manager_add_watch_fd(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         TreeWalk **ret_walk);

/* Ends c's subscription id. Return: 0, or -WATCHD_E_NO_SUCH_WATCH if c has no such subscription. */
int manager_remove_watch(Manager *m, Client *c, uint32_t id);

/* ListWatches' WATCHD_FLAG_REMOTE (some directory of s is on a remote file
 * system) and WATCHD_FLAG_POLLED (some is polled) for s. */
uint32_t manager_subscription_remote_flags(const Manager *m, const Subscription *s);

/* Counters for GetStats. */
typedef struct ManagerStats {
        unsigned clients, users, subscriptions, kernel_watches;
        uint64_t events_read, events_delivered, signals_sent, overflows, kernel_overflows, events_dropped;
        uint64_t pending_events;        /* records queued for clients, not sent yet */
        unsigned polled_dirs;           /* directories on remote file systems polled */
        uint64_t poll_syscalls;         /* system calls polling made */
        FanotifyStats fanotify;         /* all 0 without fanotify */
} ManagerStats;
void manager_get_stats(const Manager *m, ManagerStats *ret);
