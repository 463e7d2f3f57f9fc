/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-core - the state of a client of watchd, under one lock
 *
 * How the library's client works, whichever of its files does each part.
 *
 * Files, from the top down; a file calls only those below it, and what the
 * core must tell the objects above it (an item to emit) goes through the
 * CoreEmitFunc the client gave core_new():
 *   watchd-durable.c   WatchdDurable and the client's durable calls (it asks
 *                      the client for its connection, owner and router)
 *   watchd-client.c, watchd-subscription.c   the GObjects, the public API
 *   watchd-owner.c     who owns the bus name: its properties, restarts
 *   watchd-receive.c   the daemon's signals and record stream, read
 *   watchd-start.c     AddWatch: start, add again, follow, cancel
 *   watchd-route.c     a record to the subscriptions it is for
 *   watchd-call.c      calls waited for in the caller's thread
 *   watchd-core.c      the Core: its tables, its queue, the dispatch source
 * and below them the bus (watchd-bus.c), the stream's reader
 * (watchd-stream.c), the paths' wire form (watchd-wire.c), the events, and
 * the DurableRouter (watchd-durable-router.c, watchd-private.h) that takes
 * the stream's durable frames to the WatchdDurables' queues.
 *
 * Threads. Three kinds meet here:
 *   - GDBus's worker thread reads every message (watchd-bus.c's filter) and
 *     calls core_on_*(): replies to AddWatch, the name's owner changes, the
 *     daemon's signals. It turns them into Items on one queue, in the order
 *     the messages came, under core->lock.
 *   - The client's GMainContext (the thread-default context of the thread
 *     that made the client) runs the dispatch source, which takes the Items
 *     off the queue and emits the signals of the client and of its
 *     subscriptions, without the lock. Every signal is emitted there.
 *   - Any thread may call the public functions: they take core->lock for a
 *     moment, send a call, and the _sync ones wait on core->cond for the
 *     worker thread to handle the reply. None needs a main loop to run.
 * The lock is never held while a signal is emitted or a GTask completes.
 *
 * Why a Core apart from the GObject: GDBus may run a filter once more after
 * it was removed, so what the filter touches (the Core) is freed by the
 * filter's destroy notify, not by the client's finalize.
 *
 * Ids. watchd names a subscription by the id AddWatch returns, and may send
 * events of that id before the answer (a RECURSIVE walk does). While an
 * AddWatch is waiting, records of ids not known yet are kept (unclaimed)
 * and handed to the subscription when its answer comes; once none waits,
 * they are dropped (they belong to subscriptions already cancelled).
 *
 * Restarts. When the owner of org.example.Inotify changes, every active
 * subscription waits; when an owner appears, each is added again, then
 * emits "overflow" (WATCHD_OVERFLOW_RESTARTED) before its new events, and
 * the client emits "daemon-restarted" once all are back (or removed, if the
 * new daemon refused one).
 *
 * The stream. A watchd whose Capabilities say "stream" is asked, once its
 * properties are read, for this connection's record stream (OpenStream,
 * watchd(8) STREAM): from its reply on, the records come on that socket,
 * read by a thread of watchd-stream.c, and no longer as signals. Signals
 * before the reply are handled before it (the filter sees them in order),
 * the stream's records after it: one order, as the daemon sent them. The
 * records of either way go through the same core_on_record() and friends,
 * the stream's with the name of the daemon that gave it as their sender.
 * A reader is freed (its thread joined) without core->lock held, since its
 * thread takes the lock for each read.
 */

#include "watchd-private.h"
#include "watchd-bus.h"
#include "watchd-paths.h"
#include "watchd-stream.h"

#define MAX_UNCLAIMED 65536
/* Ids of ended subscriptions remembered, so that their late records are
 * dropped without a word (watchd sends until it reads the RemoveWatch). */
#define ENDED_IDS_MAX 4096

typedef enum ItemKind {
        ITEM_EVENTS,           /* a subscription's "events" */
        ITEM_OVERFLOW,         /* a subscription's "overflow" */
        ITEM_REMOVED,          /* a subscription's "removed"; it has ended */
        ITEM_DAEMON_VANISHED,  /* the client's "daemon-vanished", notify::daemon-running */
        ITEM_DAEMON_APPEARED,  /* notify::daemon-running */
        ITEM_DAEMON_RESTARTED, /* the client's "daemon-restarted" */
        ITEM_CLOSED,           /* the client's "closed" */
} ItemKind;

typedef struct Item {
        ItemKind kind;
        WatchdSubscription *sub; /* reference; NULL for the client's own items */
        GPtrArray *events;       /* ITEM_EVENTS: WatchdEvent* */
        gsize bytes;             /* ITEM_EVENTS: what they cost (Core.held_bytes) */
        int reason;              /* WatchdOverflowReason, WatchdRemovedReason */
        char *detail;            /* ITEM_REMOVED */
        GError *error;           /* ITEM_REMOVED, ITEM_CLOSED */
} Item;

/* A record or notice of the daemon held back: for an id not known yet
 * (unclaimed, with its sender), or while the daemon is asked where its
 * subscriptions are (held). By id, not by subscription: a subscription
 * that ends meanwhile is then simply not found, and nothing held keeps one
 * alive (its last reference must never go under the lock: see
 * core_drop_sub()). */
typedef struct Held {
        char *sender; /* unclaimed: who sent it */
        guint32 id;
        ItemKind kind; /* ITEM_EVENTS (one event), ITEM_OVERFLOW or ITEM_REMOVED */
        WatchdEvent *event;
        char *reason;
        gsize bytes; /* what it costs (Core.held_bytes) */
} Held;

/* What a daemon may get wrong; each kind is warned about once per daemon. */
typedef enum Violation {
        VIOLATION_UNKNOWN_ID = 1 << 0, /* records of an id it never gave */
        VIOLATION_MALFORMED = 1 << 1,  /* a path not canonical, too long, badly escaped */
        VIOLATION_OUTSIDE = 1 << 2,    /* a path outside the subscription it names */
        VIOLATION_SIGNATURE = 1 << 3,  /* a signal or an answer of the wrong type */
} Violation;

typedef struct Core Core;

/* Emits it (a signal of the client or of one of its subscriptions), in the
 * client's context, without the lock; client is NULL once it is disposed. */
typedef void (*CoreEmitFunc)(WatchdClient *client, Item *it);

struct Core {
        gint ref_count;
        GWeakRef client; /* the WatchdClient, to emit its signals */
        CoreEmitFunc emit;
        GMainContext *context;
        GSource *dispatch;
        WatchdBus *bus;

        GMutex lock; /* everything below */
        GCond cond;
        gboolean owner_known; /* GetNameOwner answered */
        char *owner;          /* unique name of watchd, NULL if none */
        gboolean gone;        /* the owner left; its subscriptions wait to be added again */
        guint generation;     /* bumped at each change of owner */
        guint readds_pending;
        gboolean props_pending; /* GetAll sent, not answered */
        char *version;
        WatchdCapabilities caps;
        GHashTable *by_id;  /* id -> WatchdSubscription* (the reference is in live) */
        GHashTable *live;   /* WatchdSubscription* -> itself, referenced: started, not ended */
        PathIndex *by_path; /* current path -> live WatchdSubscription* */
        GHashTable *ended;  /* ids of the owner's subscriptions ended lately (a set) */
        GQueue ended_order; /* the same ids, the oldest first */
        guint warned;       /* Violation: the kinds said already of this owner */
        guint adds_in_flight;
        GQueue unclaimed;           /* Held*: records of ids no AddWatch answered yet */
        gboolean unclaimed_lost;    /* some were dropped (MAX_UNCLAIMED, the cap, unreadable) */
        gboolean unclaimed_orphans; /* an AddWatch in flight failed: some may be its */
        GQueue held;                /* Held*: records waiting for the answer of ListWatches */
        gboolean resync_pending;    /* ListWatches sent to see where subscriptions are */
        GQueue items;               /* Item*, for the dispatch source */
        GHashTable *doomed;         /* WatchdSubscription* -> itself: references to drop without the lock */
        guint queued_events;
        guint max_queued_events; /* the client's "max-queued-events" */
        gsize held_bytes;        /* what the records in items, unclaimed and held cost */
        gsize max_held_bytes;    /* the client's "max-queued-bytes" */
        guint call_timeout_ms;
        gboolean closed;
        gboolean use_stream;           /* the client's "use-stream" */
        gboolean shared_connection;    /* the program's: other clients' records come on it too */
        gboolean stream_pending;       /* OpenStream sent, not answered */
        WatchdStreamReader *stream;    /* the stream of stream_owner, or NULL */
        char *stream_owner;            /* the daemon that gave it; NULL once it ended */
        WatchdDurableRouter *durables; /* the stream's durable frames, to the WatchdDurables */
};

struct _WatchdClient {
        GObject parent_instance;
        GBusType bus_type;
        char *address;
        GDBusConnection *given_connection;
        Core *core;
        gboolean initialized;
};

/* A core for client, its signals emitted by emit in the thread-default
 * context of the caller. */
Core *core_new(WatchdClient *client, CoreEmitFunc emit);
Core *core_ref(Core *core);
void core_unref(gpointer p);
void item_free(Item *it);
void held_free(Held *h);
void core_wake(Core *core);

/* The rest: lock held. */

/* Queues ev (taken) for sub's "events". Past max-queued-events or
 * max-queued-bytes, every record the core holds is dropped and each
 * subscription that lost some gets one overflow (WATCHD_OVERFLOW_CLIENT). */
void core_queue_event(Core *core, WatchdSubscription *sub, WatchdEvent *ev);
/* Queues a notice; an overflow right after another of sub (DAEMON or
 * CLIENT, nothing of sub between) is the same one and is not queued again. */
void core_queue_notice(Core *core, ItemKind kind, WatchdSubscription *sub, int reason, const char *detail,
                       const GError *error);

/* Says once per daemon that it broke the protocol in this way (a warning);
 * later ones are logged at debug level. */
void core_violation(Core *core, Violation kind, const char *format, ...) G_GNUC_PRINTF(3, 4);

void core_add_live(Core *core, WatchdSubscription *sub);
WatchdSubscription *core_steal_live(Core *core, WatchdSubscription *sub);
/* sub (live) is at path now, as watchd says (canonical). */
void core_set_current_path(Core *core, WatchdSubscription *sub, const char *path);
/* sub's id means nothing any more (remembered as ended, for its late records). */
void core_forget_id(Core *core, WatchdSubscription *sub);
gboolean core_id_ended(Core *core, guint32 id);
void core_remember_ended(Core *core, guint32 id);
void core_forget_ended(Core *core);
void core_end_sub(Core *core, WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                  const GError *error);

/* Records of ids not known yet: kept (ev taken), dropped (TRUE if some were
 * of sender, who should have claimed them), dropped for one id (quietly). */
void core_keep_unclaimed(Core *core, const char *sender, guint32 id, ItemKind kind, WatchdEvent *ev, const char *reason);
gboolean core_drop_unclaimed(Core *core, const char *sender);
void core_drop_unclaimed_id(Core *core, guint32 id);

/* Records held while watchd is asked where the subscriptions are: one
 * more (ev taken), all of them (to release, in order), none. */
void core_hold(Core *core, WatchdSubscription *sub, ItemKind kind, WatchdEvent *ev, const char *reason);
void core_take_held(Core *core, GQueue *ret);
void core_drop_held(Core *core);

/* Under the lock, for any thread. */
guint32 core_get_last_id(Core *core, WatchdSubscription *sub);
gboolean core_is_active(Core *core, WatchdSubscription *sub);
