/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-durable - durable subscriptions, for programs
 *
 * Create, list and remove are calls; a resume is a WatchdDurable that
 * emits what the daemon sends for it (DurableEvents, DurableRescan,
 * DurableCaughtUp, DurableStopped) in the thread-default main context of
 * the thread that resumed, paths as bytes (the escaped form undone). The
 * signals are taken from the owner of org.example.Inotify only.
 */

#include "watchd-private.h"
#include "watchd-bus.h"
#include "watchd-durable.h"
#include "watchd-wire.h"

struct _WatchdDurable {
        GObject parent_instance;
        GDBusConnection *connection;
        guint subscription;
        char *name;
        char *journal;
        guint64 cursor;
        gboolean caught_up;
};

enum {
        SIGNAL_EVENT,
        SIGNAL_RESCAN,
        SIGNAL_CAUGHT_UP,
        SIGNAL_STOPPED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

G_DEFINE_TYPE(WatchdDurable, watchd_durable, G_TYPE_OBJECT)

static void watchd_durable_dispose(GObject *object) {
        WatchdDurable *d = WATCHD_DURABLE(object);

        if (d->subscription)
                g_dbus_connection_signal_unsubscribe(d->connection, d->subscription);
        d->subscription = 0;
        g_clear_object(&d->connection);
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
         * WatchdDurable::event:
         * @durable: the #WatchdDurable
         * @id: the record's id in the journal
         * @mask: its IN_* bits (a paired rename: MOVED_FROM|MOVED_TO)
         * @cookie: the kernel's rename cookie, or 0
         * @path: (type filename): the path it is about, bytes
         * @new_path: (type filename) (nullable): a paired rename's new path
         *
         * One record, in the journal's order.
         */
        signals[SIGNAL_EVENT] = g_signal_new("event", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                             NULL, G_TYPE_NONE, 5, G_TYPE_UINT64, G_TYPE_UINT, G_TYPE_UINT,
                                             G_TYPE_STRING, G_TYPE_STRING);
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
        signals[SIGNAL_STOPPED] = g_signal_new("stopped", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
                                               NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void watchd_durable_init(WatchdDurable *d) {
}

static void on_signal(GDBusConnection *connection, const char *sender, const char *object, const char *interface,
                      const char *member, GVariant *body, gpointer userdata) {
        WatchdDurable *d = userdata;
        const char *name = NULL;

        /* Every Durable* signal starts with the subscription's name. */
        if (!g_str_has_prefix(g_variant_get_type_string(body), "(s"))
                return;
        g_variant_get_child(body, 0, "&s", &name);
        if (!g_str_equal(name, d->name))
                return;

        g_object_ref(d);
        if (g_str_equal(member, "DurableEvents") && g_variant_is_of_type(body, G_VARIANT_TYPE("(sa(tuuss))"))) {
                g_autoptr(GVariantIter) it = NULL;
                const char *p, *np;
                guint64 id;
                guint32 mask, cookie;

                g_variant_get(body, "(&sa(tuuss))", NULL, &it);
                while (g_variant_iter_next(it, "(tuu&s&s)", &id, &mask, &cookie, &p, &np)) {
                        gboolean escaped = (mask & WATCHD_WIRE_PATH_ESCAPED) != 0;
                        g_autofree char *path = watchd_wire_path_decode(p, escaped, NULL);
                        g_autofree char *new_path = *np ? watchd_wire_path_decode(np, escaped, NULL) : NULL;

                        if (!path)
                                continue;
                        d->cursor = id;
                        g_signal_emit(d, signals[SIGNAL_EVENT], 0, id, mask & ~WATCHD_WIRE_PATH_ESCAPED, cookie,
                                      path, new_path);
                }
        } else if (g_str_equal(member, "DurableRescan") && g_variant_is_of_type(body, G_VARIANT_TYPE("(stsa(su))"))) {
                g_autoptr(GVariantIter) it = NULL;
                g_autoptr(GVariant) dirs = NULL;
                gboolean whole = FALSE;
                GVariantBuilder b;
                const char *reason, *dir;
                guint64 id;
                guint32 flags;

                g_variant_get(body, "(&st&sa(su))", NULL, &id, &reason, &it);
                g_variant_builder_init(&b, G_VARIANT_TYPE("a(ayu)"));
                while (g_variant_iter_next(it, "(&su)", &dir, &flags)) {
                        g_autofree char *bytes = watchd_wire_path_decode(dir, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0,
                                                                         NULL);

                        if (!bytes) {
                                /* A directory that cannot be named is not left out of the
                                 * scope: the whole subscription is to be rescanned. */
                                whole = TRUE;
                                continue;
                        }
                        g_variant_builder_add(&b, "(@ayu)", g_variant_new_bytestring(bytes),
                                              flags & ~WATCHD_WIRE_PATH_ESCAPED);
                }
                dirs = g_variant_ref_sink(g_variant_builder_end(&b));
                if (whole) {
                        g_variant_unref(dirs);
                        dirs = g_variant_ref_sink(g_variant_new_array(G_VARIANT_TYPE("(ayu)"), NULL, 0));
                }
                d->cursor = id;
                g_signal_emit(d, signals[SIGNAL_RESCAN], 0, id, reason, dirs);
        } else if (g_str_equal(member, "DurableCaughtUp") && g_variant_is_of_type(body, G_VARIANT_TYPE("(st)"))) {
                guint64 id;

                g_variant_get(body, "(&st)", NULL, &id);
                d->caught_up = TRUE;
                g_signal_emit(d, signals[SIGNAL_CAUGHT_UP], 0, id);
        } else if (g_str_equal(member, "DurableStopped") && g_variant_is_of_type(body, G_VARIANT_TYPE("(ss)"))) {
                const char *reason;

                g_variant_get(body, "(&s&s)", NULL, &reason);
                g_signal_emit(d, signals[SIGNAL_STOPPED], 0, reason);
        }
        g_object_unref(d);
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
 * emits what followed @cursor, #WatchdDurable::caught-up, then what comes
 * live, in the thread-default main context of the caller, until it is
 * freed or #WatchdDurable::stopped.
 *
 * Returns: (transfer full): a #WatchdDurable, or %NULL with @error set
 */
WatchdDurable *watchd_client_resume_durable_sync(WatchdClient *client, const char *name, const char *journal,
                                                 guint64 cursor, GCancellable *cancellable, GError **error) {
        g_autoptr(WatchdDurable) d = NULL;
        g_autoptr(GVariant) reply = NULL;
        GDBusConnection *c;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        c = watchd_client_get_connection(client);
        if (!c) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return NULL;
        }
        d = g_object_new(WATCHD_TYPE_DURABLE, NULL);
        d->connection = g_object_ref(c);
        d->name = g_strdup(name);
        d->cursor = cursor;
        /* Before the call: nothing it sends is missed. */
        d->subscription = g_dbus_connection_signal_subscribe(c, WATCHD_BUS_NAME, WATCHD_INTERFACE, NULL,
                                                             WATCHD_OBJECT_PATH, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
                                                             on_signal, d, NULL);
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
