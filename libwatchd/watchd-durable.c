/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-durable - durable subscriptions, for programs
 *
 * Create, list and remove are calls; a resume is a WatchdDurable that
 * emits what the daemon sends for it (a replay of the journal, rescans,
 * "caught up", then what comes live; "stopped") in the thread-default main
 * context of the thread that resumed, paths as bytes (the escaped form
 * undone). The records come from the owner of org.example.Inotify only,
 * as the Durable* signals or, when the client reads a stream that takes
 * them (WATCHD_CAPABILITY_DURABLE_STREAM), as the stream's durable frames.
 *
 * Batches and flow control. Either way the records are put, as they
 * arrive (GDBus's worker thread for the signals, through a filter of the
 * connection; the stream reader's thread for the frames, through the
 * client's DurableRouter), on a queue of the WatchdDurable's own, in
 * batches of at most BATCH_MAX records; a source in the main context, of
 * idle priority, emits one batch a dispatch ("events", and "event" for
 * each record if anyone listens), so that a replay of a million records
 * never keeps the main loop from its other sources: those of a higher
 * priority go first, those of the same take turns with it. The queue holds at most about
 * QUEUE_HIGH records: past that, the daemon is not told that more were
 * read (the Pings it sends after its signals are answered once the queue
 * has gone down to QUEUE_LOW, and the stream's reader stops reading, which
 * fills the socket): the daemon sends no more than it is let, and the
 * program's memory is bounded whatever the journal holds.
 *
 * Threads and lifetimes: what the filter, the router and the source touch
 * is a DurableCore (reference counted; the filter and the router hold
 * one), the GObject is only reached through a weak reference, from the
 * main context.
 *
 * The DurableCore, the router and the filter, which fill the queue from
 * those threads, are in watchd-durable-router.c, below the client's core;
 * this file, above the client, empties the queue and is the object and
 * the calls (watchd-durable-router.h).
 */

#include "watchd-private.h"
#include "watchd-bus.h"
#include "watchd-durable.h"
#include "watchd-durable-router.h"
#include "watchd-wire.h"

struct _WatchdDurable {
        GObject parent_instance;
        DurableCore *core;
        char *name;
        char *journal;
        guint64 cursor;
        gboolean caught_up;
};

enum {
        SIGNAL_EVENT,
        SIGNAL_EVENTS,
        SIGNAL_RESCAN,
        SIGNAL_CAUGHT_UP,
        SIGNAL_STOPPED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

G_DEFINE_TYPE(WatchdDurable, watchd_durable, G_TYPE_OBJECT)

/* ------------------------------------------------------------------------ */
/* The core's queue, emptied in the main context of the resume */

/* The Pings held back, answered: what came before each has been taken. Lock not held. */
static void core_answer_pings(DurableCore *c, GQueue *pings) {
        GDBusMessage *ping;

        while ((ping = g_queue_pop_head(pings))) {
                g_autoptr(GDBusMessage) reply = g_dbus_message_new_method_reply(ping);
                g_autoptr(GError) error = NULL;

                if (!g_dbus_connection_send_message(c->connection, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, &error))
                        g_debug("libwatchd: cannot answer watchd's Ping: %s", error->message);
                g_object_unref(ping);
        }
}

static void emit(WatchdDurable *d, DurableItem *it) {
        switch (it->kind) {
        case DURABLE_ITEM_EVENTS:
                if (it->events->len == 0)
                        break;
                d->cursor = watchd_event_get_id(it->events->pdata[it->events->len - 1]);
                g_signal_emit(d, signals[SIGNAL_EVENTS], 0, it->events);
                if (g_signal_has_handler_pending(d, signals[SIGNAL_EVENT], 0, FALSE))
                        for (guint i = 0; i < it->events->len && d->core; i++) {
                                WatchdEvent *e = it->events->pdata[i];

                                g_signal_emit(d, signals[SIGNAL_EVENT], 0, watchd_event_get_id(e),
                                              (guint) watchd_event_get_mask(e), watchd_event_get_cookie(e),
                                              watchd_event_get_path(e), watchd_event_get_new_path(e));
                        }
                break;
        case DURABLE_ITEM_RESCAN:
                d->cursor = it->id;
                g_signal_emit(d, signals[SIGNAL_RESCAN], 0, it->id, it->reason, it->dirs);
                break;
        case DURABLE_ITEM_CAUGHT_UP:
                d->caught_up = TRUE;
                g_signal_emit(d, signals[SIGNAL_CAUGHT_UP], 0, it->id);
                break;
        case DURABLE_ITEM_STOPPED:
                g_signal_emit(d, signals[SIGNAL_STOPPED], 0, it->reason);
                break;
        }
}

/* The main context of the resume: one item a dispatch, so that other sources run between batches. */
static gboolean on_dispatch(GSource *source, GSourceFunc callback, gpointer userdata) {
        DurableCore *c = userdata;
        g_autoptr(WatchdDurable) d = NULL;
        GQueue pings = G_QUEUE_INIT;
        gboolean resume = FALSE;
        DurableItem *it;

        g_source_set_ready_time(source, -1);
        g_mutex_lock(&c->lock);
        it = g_queue_pop_head(&c->items);
        if (it && it->kind == DURABLE_ITEM_EVENTS)
                c->queued -= it->events->len;
        if (c->queued <= QUEUE_LOW) {
                pings = c->held_pings;
                g_queue_init(&c->held_pings);
                resume = TRUE;
        }
        if (!g_queue_is_empty(&c->items))
                g_source_set_ready_time(source, 0);
        g_mutex_unlock(&c->lock);

        core_answer_pings(c, &pings);
        if (resume && c->router) {
                g_mutex_lock(&c->router->lock);
                watchd_durable_router_resume(c->router);
                g_mutex_unlock(&c->router->lock);
        }
        if (!it)
                return G_SOURCE_CONTINUE;
        d = g_weak_ref_get(&c->object);
        if (d)
                emit(d, it);
        durable_item_free(it);
        return G_SOURCE_CONTINUE;
}

static GSourceFuncs dispatch_funcs = {
        .dispatch = on_dispatch,
};

/* ------------------------------------------------------------------------ */
/* The object */

static void watchd_durable_dispose(GObject *object) {
        WatchdDurable *d = WATCHD_DURABLE(object);
        DurableCore *c = g_steal_pointer(&d->core);
        GQueue pings = G_QUEUE_INIT;

        if (c) {
                if (c->filter)
                        g_dbus_connection_remove_filter(c->connection, c->filter);
                if (c->router)
                        watchd_durable_router_remove(c->router, c);
                g_mutex_lock(&c->lock);
                c->ended = TRUE;
                pings = c->held_pings;
                g_queue_init(&c->held_pings);
                g_mutex_unlock(&c->lock);
                /* Nothing held back for a program that no longer reads. */
                core_answer_pings(c, &pings);
                g_source_destroy(c->source);
                durable_core_unref(c);
        }
        G_OBJECT_CLASS(watchd_durable_parent_class)->dispose(object);
}

static void watchd_durable_finalize(GObject *object) {
        WatchdDurable *d = WATCHD_DURABLE(object);

        g_free(d->name);
        g_free(d->journal);
        G_OBJECT_CLASS(watchd_durable_parent_class)->finalize(object);
}

static void watchd_durable_class_init(WatchdDurableClass *klass) {
        GObjectClass *oc = G_OBJECT_CLASS(klass);

        oc->dispose = watchd_durable_dispose;
        oc->finalize = watchd_durable_finalize;

        /**
         * WatchdDurable::events:
         * @durable: the #WatchdDurable
         * @events: (element-type WatchdEvent): records, in the journal's order,
         *   each with its id (watchd_event_get_id())
         *
         * A batch of records (at most 1024), emitted one batch a dispatch of
         * the main context, at %G_PRIORITY_DEFAULT_IDLE: a replay of any length
         * lets the program's other sources run between them. The cheaper way
         * to take a replay; #WatchdDurable::event follows for each record if
         * anyone listens.
         */
        signals[SIGNAL_EVENTS] = g_signal_new("events", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 1, G_TYPE_PTR_ARRAY);
        /**
         * WatchdDurable::event:
         * @durable: the #WatchdDurable
         * @id: the record's id in the journal
         * @mask: its IN_* bits (a paired rename: MOVED_FROM|MOVED_TO)
         * @cookie: the kernel's rename cookie, or 0
         * @path: (type filename): the path it is about, bytes
         * @new_path: (type filename) (nullable): a paired rename's new path
         *
         * One record, in the journal's order, after the #WatchdDurable::events
         * of its batch.
         */
        signals[SIGNAL_EVENT] = g_signal_new("event", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                             G_TYPE_NONE, 5, G_TYPE_UINT64, G_TYPE_UINT, G_TYPE_UINT, G_TYPE_STRING,
                                             G_TYPE_STRING);
        /**
         * WatchdDurable::rescan:
         * @durable: the #WatchdDurable
         * @id: the cursor to keep once rescanned
         * @reason: why: "daemon-down", "overflow", "disk-full", "corrupt",
         *   "history-lost", "foreign", "access", "removed"
         * @directories: a #GVariant of type `a(ayu)`: the directories (bytes)
         *   and their flags (0x1: the whole tree below); empty: everything
         *
         * Records were lost: rescan @directories, or the whole subscription.
         */
        signals[SIGNAL_RESCAN] = g_signal_new("rescan", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 3, G_TYPE_UINT64, G_TYPE_STRING, G_TYPE_VARIANT);
        /**
         * WatchdDurable::caught-up:
         * @durable: the #WatchdDurable
         * @id: the id of the last record sent
         *
         * Everything the journal held was sent: what follows is live.
         */
        signals[SIGNAL_CAUGHT_UP] = g_signal_new("caught-up", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                                 NULL, NULL, G_TYPE_NONE, 1, G_TYPE_UINT64);
        /**
         * WatchdDurable::stopped:
         * @durable: the #WatchdDurable
         * @reason: "removed", "resumed-elsewhere" or "error" (resume again)
         *
         * Nothing more comes.
         */
        signals[SIGNAL_STOPPED] = g_signal_new("stopped", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                               NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void watchd_durable_init(WatchdDurable *d) {
}

static GVariant *call(WatchdClient *client, const char *method, GVariant *params, const GVariantType *reply_type,
                      GCancellable *cancellable, GError **error) {
        GDBusConnection *c = watchd_client_get_connection(client);

        if (!c) {
                g_variant_ref_sink(params);
                g_variant_unref(params);
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return NULL;
        }
        return g_dbus_connection_call_sync(c, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, method, params,
                                           reply_type, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, cancellable, error);
}

/**
 * watchd_client_create_durable_sync:
 * @client: a #WatchdClient
 * @name: the subscription's name: 1 to 64 of A-Z a-z 0-9 _ . -, not starting with "."
 * @path: (type filename): the absolute path to watch, bytes
 * @mask: the events
 * @flags: %WATCHD_WATCH_RECURSIVE, %WATCHD_WATCH_ONLYDIR, %WATCHD_WATCH_DONT_FOLLOW
 * @out_journal: (out) (optional): the journal's identity
 * @out_cursor: (out) (optional): the cursor to resume from
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Makes a durable subscription (CreateDurable): kept by the daemon, with
 * the caller's credentials, until watchd_client_remove_durable_sync().
 *
 * Returns: whether it was made
 */
gboolean watchd_client_create_durable_sync(WatchdClient *client, const char *name, const char *path,
                                           WatchdEventMask mask, WatchdWatchFlags flags, char **out_journal,
                                           guint64 *out_cursor, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL;
        g_autofree char *escaped = NULL;
        guint32 wire_flags = flags;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), FALSE);
        if (watchd_wire_path_needs_escape(path)) {
                escaped = watchd_wire_path_escape(path);
                wire_flags |= WATCHD_WIRE_PATH_ESCAPED;
        }
        reply = call(client, "CreateDurable", g_variant_new("(ssuu)", name, escaped ?: path, (guint32) mask, wire_flags),
                     G_VARIANT_TYPE("(st)"), cancellable, error);
        if (!reply)
                return FALSE;
        g_variant_get(reply, "(st)", out_journal, out_cursor);
        return TRUE;
}

/**
 * watchd_client_remove_durable_sync:
 * @client: a #WatchdClient
 * @name: the subscription's name
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Removes a durable subscription, journal and all (RemoveDurable).
 *
 * Returns: whether it was removed
 */
gboolean watchd_client_remove_durable_sync(WatchdClient *client, const char *name, GCancellable *cancellable,
                                           GError **error) {
        g_autoptr(GVariant) reply = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), FALSE);
        reply = call(client, "RemoveDurable", g_variant_new("(s)", name), NULL, cancellable, error);
        return reply != NULL;
}

/**
 * watchd_client_list_durable_sync:
 * @client: a #WatchdClient
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * The caller's durable subscriptions (ListDurable): name, path (bytes),
 * mask, flags, journal identity, oldest cursor that resumes without loss,
 * last id, bytes on disk, attached, state.
 *
 * Returns: (transfer full): a #GVariant of type `a(sayuustttbs)`, or %NULL with @error set
 */
GVariant *watchd_client_list_durable_sync(WatchdClient *client, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL, list = NULL;
        GVariantBuilder b;
        GVariantIter it;
        const char *name, *path, *journal, *state;
        guint32 mask, flags;
        guint64 oldest, last, bytes;
        gboolean attached;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        reply = call(client, "ListDurable", NULL, G_VARIANT_TYPE("(a(ssuustttbs))"), cancellable, error);
        if (!reply)
                return NULL;
        list = g_variant_get_child_value(reply, 0);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(sayuustttbs)"));
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&s&suu&stttb&s)", &name, &path, &mask, &flags, &journal, &oldest, &last,
                                   &bytes, &attached, &state)) {
                g_autofree char *p = watchd_wire_path_decode(path, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0, error);

                if (!p) {
                        g_variant_builder_clear(&b);
                        return NULL;
                }
                g_variant_builder_add(&b, "(s@ayuustttbs)", name, g_variant_new_bytestring(p), mask,
                                      flags & ~WATCHD_WIRE_PATH_ESCAPED, journal, oldest, last, bytes, attached, state);
        }
        return g_variant_ref_sink(g_variant_builder_end(&b));
}

/**
 * watchd_client_resume_durable_sync:
 * @client: a #WatchdClient
 * @name: the subscription's name
 * @journal: (nullable): the journal identity @cursor came with; %NULL or "" for none
 * @cursor: the id of the last record processed (0: from the start)
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Resumes a durable subscription (ResumeDurable): the returned object
 * emits what followed @cursor (#WatchdDurable::events, in batches),
 * #WatchdDurable::caught-up, then what comes live, in the thread-default
 * main context of the caller, until it is freed or #WatchdDurable::stopped.
 * The records come in the client's record stream when it reads one that
 * takes them (%WATCHD_CAPABILITY_DURABLE_STREAM), else as signals; either
 * way the daemon sends no more than the program has taken, give or take
 * a bounded queue.
 *
 * Returns: (transfer full): a #WatchdDurable, or %NULL with @error set
 */
WatchdDurable *watchd_client_resume_durable_sync(WatchdClient *client, const char *name, const char *journal,
                                                 guint64 cursor, GCancellable *cancellable, GError **error) {
        g_autoptr(WatchdDurable) d = NULL;
        g_autoptr(GVariant) reply = NULL;
        GDBusConnection *conn;
        DurableCore *c;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        conn = watchd_client_get_connection(client);
        if (!conn) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return NULL;
        }
        d = g_object_new(WATCHD_TYPE_DURABLE, NULL);
        d->name = g_strdup(name);
        d->cursor = cursor;
        c = g_new0(DurableCore, 1);
        c->ref_count = 1;
        g_weak_ref_init(&c->object, d);
        c->connection = g_object_ref(conn);
        c->name = g_strdup(name);
        c->owner = watchd_client_dup_daemon_owner(client);
        g_mutex_init(&c->lock);
        g_queue_init(&c->items);
        g_queue_init(&c->held_pings);
        c->source = g_source_new(&dispatch_funcs, sizeof(GSource));
        g_source_set_callback(c->source, NULL, c, NULL); /* no reference: the core owns the source */
        g_source_set_static_name(c->source, "WatchdDurable dispatch");
        /* Below every source of the program's own (redraws included), one batch a turn. */
        g_source_set_priority(c->source, G_PRIORITY_DEFAULT_IDLE);
        g_source_attach(c->source, g_main_context_get_thread_default());
        d->core = c;
        if (!c->owner) {
                g_set_error_literal(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN, "watchd is not running");
                return NULL;
        }
        /* Before the call: nothing it sends is missed, whichever way it comes. */
        c->router = watchd_client_get_durable_router(client);
        if (c->router)
                watchd_durable_router_add(c->router, c);
        c->filter = g_dbus_connection_add_filter(conn, durable_core_on_filter, durable_core_ref(c), durable_core_unref);
        reply = call(client, "ResumeDurable", g_variant_new("(sst)", name, journal ?: "", cursor),
                     G_VARIANT_TYPE("(s)"), cancellable, error);
        if (!reply)
                return NULL;
        g_variant_get(reply, "(s)", &d->journal);
        return g_steal_pointer(&d);
}

/**
 * watchd_durable_get_name:
 * @durable: a #WatchdDurable
 *
 * Returns: the subscription's name
 */
const char *watchd_durable_get_name(WatchdDurable *durable) {
        g_return_val_if_fail(WATCHD_IS_DURABLE(durable), NULL);
        return durable->name;
}

/**
 * watchd_durable_get_journal:
 * @durable: a #WatchdDurable
 *
 * Returns: the journal's identity, to store with the cursor
 */
const char *watchd_durable_get_journal(WatchdDurable *durable) {
        g_return_val_if_fail(WATCHD_IS_DURABLE(durable), NULL);
        return durable->journal;
}

/**
 * watchd_durable_get_cursor:
 * @durable: a #WatchdDurable
 *
 * Returns: the id of the last record or rescan emitted (the cursor to store
 *   once it is processed), or the cursor resumed from
 */
guint64 watchd_durable_get_cursor(WatchdDurable *durable) {
        g_return_val_if_fail(WATCHD_IS_DURABLE(durable), 0);
        return durable->cursor;
}

/**
 * watchd_durable_get_caught_up:
 * @durable: a #WatchdDurable
 *
 * Returns: whether #WatchdDurable::caught-up was emitted
 */
gboolean watchd_durable_get_caught_up(WatchdDurable *durable) {
        g_return_val_if_fail(WATCHD_IS_DURABLE(durable), FALSE);
        return durable->caught_up;
}
