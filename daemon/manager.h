/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * manager - the daemon's one context: it ties the backend, the decoder,
 * the watch table, the clients and their queues together
 *
 * It owns the event loop sources for the kernel fd and the pairing timer,
 * turns kernel records into per-client records, and asks dbus_iface.c to
 * send them. It knows nothing of D-Bus messages; dbus_iface.c knows nothing
 * of the kernel.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "access.h"
#include "backend.h"
#include "client.h"
#include "config.h"
#include "watch_table.h"

typedef struct Stats {
        uint64_t events_read;           /* records read from the kernel */
        uint64_t events_delivered;      /* records sent in Events signals */
        uint64_t overflows;             /* Overflow signals sent */
        uint64_t kernel_overflows;      /* IN_Q_OVERFLOW records read */
        uint64_t events_dropped;        /* records dropped from clients' backlogs */
        uint64_t signals_sent;          /* Events signals sent */
} Stats;

typedef struct UserAccount {
        uid_t uid;
        unsigned n_clients;
        unsigned n_watches;             /* links of all its clients' subscriptions */
        unsigned n_pings;               /* Peer.Pings in flight to its clients (dbus_iface.c) */
} UserAccount;

struct TreeWalk;

typedef struct Manager {
        Config config;
        char *config_path;

        sd_event *event;
        sd_bus *bus;                    /* set by dbus_iface_attach() */
        bool bus_stalled;               /* sd-bus's write queue is past its high-water mark */
        bool system_bus;

        Backend *backend;
        sd_event_source *kernel_source;
        sd_event_source *pair_timer;
        WatchTable *table;

        GHashTable *clients;            /* unique name -> Client (owned) */
        GHashTable *users;              /* uid -> UserAccount (owned) */
        GPtrArray *dirty;               /* Clients with records queued (not owned) */

        /* The last IN_MOVED_FROM of a directory, until its IN_MOVED_TO. */
        uint32_t dir_move_cookie;
        const Watch *dir_move_watch;    /* compared only: it may be freed meanwhile */
        GPtrArray *dir_move_old;        /* old path as each link of its parent spells it */

        /* "id:path" of each entry a scan of a new directory reported as
         * IN_CREATE, until the kernel queue is next read empty: the kernel's
         * own IN_CREATE/IN_MOVED_TO for it, queued before the scan saw it,
         * is then not reported again (tree.h). NULL until first used. */
        GHashTable *scanned;

        /* RECURSIVE walks in progress (tree.c), run in slices by the walker
         * source, which has a lower priority than the kernel fd and the bus. */
        struct TreeWalk *walks, *walks_tail;
        GArray *tree_moves;             /* TreeMove (tree.c): directories moved out of their
                                         * place in a tree, until their IN_MOVED_TO */
        GArray *tree_retries;           /* TreeRetry (tree.c): new directories to walk once the
                                         * kernel queue is read empty */
        sd_event_source *walker;
        uint8_t *dents_buf;             /* getdents64 buffer of the walks */

        Stats stats;
        uint8_t *read_buf;
        size_t read_buf_size;
} Manager;

/* A scan reported dir/name to subscription id as IN_CREATE (see Manager.scanned). */
void manager_scanned_add(Manager *m, uint32_t id, const char *dir, const char *name, size_t name_len);

/* Takes over *config (it is reset). */
int manager_new(Config *config, const char *config_path, Manager **ret);
Manager *manager_free(Manager *m);

/* Opens the backend (per config) and starts reading it on event. */
int manager_start(Manager *m, sd_event *event);

/* The client for a bus name, or -ENOENT. */
int manager_get_client(Manager *m, const char *name, Client **ret);
/* A new client for a bus name, with the caller's credentials. Limits: -EUSERS. */
int manager_new_client(Manager *m, const char *name, const Caller *caller, Client **ret);
/* The client's connection went away: end its subscriptions, free it. */
void manager_client_gone(Manager *m, Client *c);

/*
 * Subscribes c to path (opened with c's credentials) or to fd (already open by the client).
 * With RECURSIVE on a directory, every directory below is watched too, and
 * each counts against the limits like a subscription; if that walk is not
 * done within its first slice, *ret_walk is set and the walk goes on from the
 * loop (the caller sets its completion with tree_walk_set_done()).
 * Return: 0, or -errno: see access_open_as(); -EDQUOT over
 * max_watches_per_client, -EMLINK over max_watches_per_user, -ENOSPC the
 * kernel's watch limit, -EBADFD an O_PATH fd, -EBADF a write-only fd.
 */
int manager_add_watch_path(Manager *m, Client *c, const char *path,
                           uint32_t mask, uint32_t flags, uint32_t *ret_id, struct TreeWalk **ret_walk);
int manager_add_watch_fd(Manager *m, Client *c, int fd, uint32_t mask, uint32_t flags, uint32_t *ret_id,
                         struct TreeWalk **ret_walk);

/* Ends c's subscription id. Return: 0, or -ESRCH if c has no such subscription. */
int manager_remove_watch(Manager *m, Client *c, uint32_t id);

/* Applies a re-read config; the backend and device stay until restart. */
void manager_reload(Manager *m, Config *config);

/* Sends what each client's queue lets go now, and re-arms the pairing timer. */
void manager_flush(Manager *m);

uint64_t manager_pending_events(Manager *m);

/* CLOCK_MONOTONIC in µs: the time of records, deadlines and walk slices. */
uint64_t manager_now_usec(void);

/* For tree.c: one more directory for a RECURSIVE subscription (name in
 * parent's directory), within the owner's limits. Return: 0, -EDQUOT/-EMLINK
 * (limits), -EEXIST (already linked), or -errno from the kernel. */
int manager_link(Manager *m, Subscription *s, WatchLink *parent, int fd, const struct stat *st,
                 const char *name, size_t name_len, WatchLink **ret);
/* Removes l and everything below it. */
void manager_unlink(Manager *m, WatchLink *l);
/* A walk is waiting: run it from the loop. */
void manager_walks_wake(Manager *m);
void manager_subscription_end(Manager *m, Subscription *s);
void manager_queue_record(Manager *m, Client *c, Record *rec);
/* Puts c on the list manager_flush() walks, if it has records queued. */
void manager_mark_dirty(Manager *m, Client *c);
/* Queues Overflow(s->id): s lost events, or coverage of part of its tree. */
void manager_queue_overflow(Manager *m, Subscription *s);
