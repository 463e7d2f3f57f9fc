/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-durable-router - a durable subscription's records, in
 *
 * What watchd-durable.c (the WatchdDurable, above the client) and
 * watchd-durable-router.c (below the client's core) share. The records of
 * a resumed durable subscription come in on threads of their own: the
 * stream reader's, through the client's DurableRouter, and GDBus's worker,
 * through a filter of the connection; either way they go on the queue of
 * its DurableCore. watchd-durable-router.c fills that queue and calls
 * nothing above it; watchd-durable.c empties it in the main context of the
 * resume and emits the WatchdDurable's signals. The two stand in layers:
 *   watchd-durable.c          the WatchdDurable, the durable calls of the client
 *   (watchd-client.c and the core, watchd-core.h)
 *   watchd-durable-router.c   the DurableRouter, the DurableCore's queue, the filter
 */

#include "watchd-private.h"

#define BATCH_MAX  1024u  /* records an "events" emission carries at most */
#define QUEUE_HIGH 16384u /* records queued before the daemon is held back */
#define QUEUE_LOW  4096u  /* ... and let go again */

typedef enum DurableItemKind {
        DURABLE_ITEM_EVENTS,
        DURABLE_ITEM_RESCAN,
        DURABLE_ITEM_CAUGHT_UP,
        DURABLE_ITEM_STOPPED,
} DurableItemKind;

typedef struct DurableItem {
        DurableItemKind kind;
        GPtrArray *events; /* DURABLE_ITEM_EVENTS: WatchdEvent* (with their ids) */
        guint64 id;        /* DURABLE_ITEM_RESCAN, DURABLE_ITEM_CAUGHT_UP */
        char *reason;      /* DURABLE_ITEM_RESCAN, DURABLE_ITEM_STOPPED */
        GVariant *dirs;    /* DURABLE_ITEM_RESCAN: a(ayu) */
} DurableItem;

typedef struct DurableCore {
        gint ref_count;
        GWeakRef object; /* the WatchdDurable */
        GDBusConnection *connection;
        char *name;
        char *owner;                 /* the daemon's unique name when it resumed */
        WatchdDurableRouter *router; /* its client's; NULL if none */
        GSource *source;             /* emits in the main context of the resume */
        guint filter;

        GMutex lock;       /* what follows */
        GQueue items;      /* DurableItem* */
        guint queued;      /* records in items */
        GQueue held_pings; /* GDBusMessage*: the owner's Pings not answered yet */
        gboolean ended;    /* disposed: nothing more is queued */
} DurableCore;

/* The client's (watchd-core.c makes it): its stream, to its WatchdDurables by name. */
struct WatchdDurableRouter {
        gint ref_count;
        GMutex lock;
        GHashTable *cores; /* name -> DurableCore* (referenced) */
        int resume_fd;     /* the stream reader's resume eventfd (a dup), or -1 */
        gboolean paused;
};

void durable_item_free(DurableItem *it);
DurableCore *durable_core_ref(DurableCore *c);
void durable_core_unref(gpointer p);
/* Any thread: it, with records of them, at the end of the queue. Returns
 * whether more may come (the queue is under QUEUE_HIGH). */
gboolean durable_core_push(DurableCore *c, DurableItem *it, guint records);
/* GDBus's worker thread: the filter of a resumed DurableCore (userdata). */
GDBusMessage *durable_core_on_filter(GDBusConnection *connection, GDBusMessage *m, gboolean incoming, gpointer userdata);

/* c (referenced) takes the records of its name; c no longer does. */
void watchd_durable_router_add(WatchdDurableRouter *r, DurableCore *c);
void watchd_durable_router_remove(WatchdDurableRouter *r, DurableCore *c);
/* Lock held: a paused stream reads again. */
void watchd_durable_router_resume(WatchdDurableRouter *r);
