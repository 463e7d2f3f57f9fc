/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-bus - the library's D-Bus layer (see watchd-bus.h)
 *
 * Calls are sent with g_dbus_connection_send_message() and their replies
 * caught by the filter, rather than with g_dbus_connection_call(): GDBus
 * would hand a reply to the GMainContext of the thread that called, after
 * signals that arrived later had been handed elsewhere, and a reply would
 * wait for that context to run. Here a reply is handled on GDBus's worker
 * thread in wire order with the signals around it, which is what lets the
 * client know, for each event, whether the subscription it names exists.
 */

#include "watchd-private.h"
#include "watchd-bus.h"

typedef struct BusCall {
        WatchdBusReplyFunc done;
        WatchdBusReplyFdsFunc done_fds; /* instead of done: the reply's descriptors too */
        gpointer userdata;
} BusCall;

static void call_done(BusCall *call, const char *sender, GVariant *body, GUnixFDList *fds, const GError *error) {
        if (call->done_fds)
                call->done_fds(call->userdata, sender, body, fds, error);
        else
                call->done(call->userdata, sender, body, error);
}

struct WatchdBus {
        gint ref_count; /* the owner's, the filter's, the closed handler's */
        GDBusConnection *connection;
        gboolean private_connection; /* the signals are ours alone: the filter eats them */
        WatchdBusCallbacks cb;
        gpointer userdata;
        GDestroyNotify userdata_free;
        guint filter_id;
        gulong closed_handler;

        GMutex lock;       /* protects calls and closed */
        GHashTable *calls; /* serial -> BusCall* */
        gboolean closed;
};

static void bus_handle_reply(WatchdBus *bus, GDBusMessage *m, BusCall *call) {
        g_autoptr(GError) error = NULL;
        GVariant *body;

        if (g_dbus_message_to_gerror(m, &error)) {
                call_done(call, g_dbus_message_get_sender(m), NULL, NULL, error);
                return;
        }
        body = g_dbus_message_get_body(m);
        if (body)
                call_done(call, g_dbus_message_get_sender(m), body, g_dbus_message_get_unix_fd_list(m), NULL);
        else {
                g_autoptr(GVariant) empty = g_variant_ref_sink(g_variant_new("()"));

                call_done(call, g_dbus_message_get_sender(m), empty, g_dbus_message_get_unix_fd_list(m), NULL);
        }
}

static void bus_handle_name_owner_changed(WatchdBus *bus, GDBusMessage *m) {
        GVariant *body = g_dbus_message_get_body(m);
        const char *name, *old_owner, *new_owner;

        if (!body || !g_variant_is_of_type(body, G_VARIANT_TYPE("(sss)")))
                return;
        g_variant_get(body, "(&s&s&s)", &name, &old_owner, &new_owner);
        if (!g_str_equal(name, WATCHD_BUS_NAME))
                return;
        bus->cb.owner_changed(bus->userdata, *new_owner ? new_owner : NULL);
}

/* GDBus's worker thread, for every message in and out. */
static GDBusMessage *bus_filter(GDBusConnection *connection, GDBusMessage *m, gboolean incoming, gpointer userdata) {
        WatchdBus *bus = userdata;
        BusCall *call;

        if (!incoming)
                return m;
        switch (g_dbus_message_get_message_type(m)) {
        case G_DBUS_MESSAGE_TYPE_METHOD_RETURN:
        case G_DBUS_MESSAGE_TYPE_ERROR:
                g_mutex_lock(&bus->lock);
                call = g_hash_table_lookup(bus->calls, GUINT_TO_POINTER(g_dbus_message_get_reply_serial(m)));
                if (call)
                        g_hash_table_steal(bus->calls, GUINT_TO_POINTER(g_dbus_message_get_reply_serial(m)));
                g_mutex_unlock(&bus->lock);
                if (!call)
                        return m; /* someone else's call on a shared connection */
                bus_handle_reply(bus, m, call);
                g_free(call);
                g_object_unref(m);
                return NULL;

        case G_DBUS_MESSAGE_TYPE_SIGNAL:
                if (g_strcmp0(g_dbus_message_get_sender(m), "org.freedesktop.DBus") == 0 &&
                    g_strcmp0(g_dbus_message_get_interface(m), "org.freedesktop.DBus") == 0 &&
                    g_strcmp0(g_dbus_message_get_member(m), "NameOwnerChanged") == 0) {
                        bus_handle_name_owner_changed(bus, m);
                        return m;
                }
                if (g_strcmp0(g_dbus_message_get_interface(m), WATCHD_INTERFACE) != 0 ||
                    g_strcmp0(g_dbus_message_get_path(m), WATCHD_OBJECT_PATH) != 0 || !g_dbus_message_get_sender(m) ||
                    !g_dbus_message_get_member(m))
                        return m;
                /* A durable subscription's records are a WatchdDurable's own
                 * (watchd-durable.c subscribes to them): GDBus dispatches them. */
                if (g_str_has_prefix(g_dbus_message_get_member(m), "Durable"))
                        return m;
                {
                        g_autoptr(GVariant) empty = NULL;
                        GVariant *body = g_dbus_message_get_body(m);

                        if (!body)
                                body = empty = g_variant_ref_sink(g_variant_new("()"));
                        bus->cb.signal(bus->userdata, g_dbus_message_get_sender(m), g_dbus_message_get_member(m), body);
                }
                if (!bus->private_connection)
                        return m;
                g_object_unref(m);
                return NULL;

        default:
                return m;
        }
}

/* Fails every waiting call; the callbacks run without the lock. */
static void bus_fail_all(WatchdBus *bus, const GError *error) {
        g_autoptr(GHashTable) calls = NULL;
        GHashTableIter it;
        gpointer value;

        g_mutex_lock(&bus->lock);
        bus->closed = TRUE;
        calls = g_steal_pointer(&bus->calls);
        bus->calls = g_hash_table_new_full(NULL, NULL, NULL, g_free);
        g_mutex_unlock(&bus->lock);

        g_hash_table_iter_init(&it, calls);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
                BusCall *call = value;

                call_done(call, NULL, NULL, NULL, error);
        }
        g_hash_table_destroy(g_steal_pointer(&calls));
}

static void bus_on_closed(GDBusConnection *connection, gboolean remote_peer_vanished, GError *error, gpointer userdata) {
        WatchdBus *bus = userdata;
        g_autoptr(GError) closed = error ?
                g_error_copy(error) :
                g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CLOSED, "The connection is closed");

        bus_fail_all(bus, closed);
        bus->cb.closed(bus->userdata, closed);
}

static WatchdBus *bus_ref(WatchdBus *bus) {
        g_atomic_int_inc(&bus->ref_count);
        return bus;
}

static void bus_unref(gpointer p) {
        WatchdBus *bus = p;

        if (!g_atomic_int_dec_and_test(&bus->ref_count))
                return;
        if (bus->userdata_free)
                bus->userdata_free(bus->userdata);
        g_object_unref(bus->connection);
        g_hash_table_destroy(bus->calls);
        g_mutex_clear(&bus->lock);
        g_free(bus);
}

static void bus_closure_unref(gpointer data, GClosure *closure) {
        bus_unref(data);
}

WatchdBus *watchd_bus_new(GDBusConnection *connection, gboolean private_connection, const WatchdBusCallbacks *callbacks,
                          gpointer userdata, GDestroyNotify userdata_free) {
        WatchdBus *bus = g_new0(WatchdBus, 1);

        bus->ref_count = 1;
        bus->connection = g_object_ref(connection);
        bus->private_connection = private_connection;
        bus->cb = *callbacks;
        bus->userdata = userdata;
        bus->userdata_free = userdata_free;
        g_mutex_init(&bus->lock);
        bus->calls = g_hash_table_new_full(NULL, NULL, NULL, g_free);
        bus->filter_id = g_dbus_connection_add_filter(connection, bus_filter, bus_ref(bus), bus_unref);
        bus->closed_handler = g_signal_connect_data(connection, "closed", G_CALLBACK(bus_on_closed), bus_ref(bus),
                                                    bus_closure_unref, 0);
        return bus;
}

void watchd_bus_close(WatchdBus *bus) {
        if (!bus)
                return;
        g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CLOSED, "The client was closed");

        g_dbus_connection_remove_filter(bus->connection, bus->filter_id);
        g_signal_handler_disconnect(bus->connection, bus->closed_handler);
        bus_fail_all(bus, error);
        if (bus->private_connection)
                g_dbus_connection_close(bus->connection, NULL, NULL, NULL);
        bus_unref(bus);
}

GDBusConnection *watchd_bus_get_connection(WatchdBus *bus) {
        return bus->connection;
}

static guint32 bus_call(WatchdBus *bus, const char *destination, const char *interface, const char *method,
                        GVariant *params, GUnixFDList *fds, gboolean auto_start, WatchdBusReplyFunc done,
                        WatchdBusReplyFdsFunc done_fds, gpointer userdata, GError **error) {
        const char *path = g_str_equal(destination, WATCHD_BUS_NAME) ? WATCHD_OBJECT_PATH : "/org/freedesktop/DBus";
        g_autoptr(GDBusMessage) m = g_dbus_message_new_method_call(destination, path, interface, method);
        guint32 serial = 0;
        gboolean sent;

        if (params)
                g_dbus_message_set_body(m, params);
        if (fds)
                g_dbus_message_set_unix_fd_list(m, fds);
        if (!auto_start)
                g_dbus_message_set_flags(m, G_DBUS_MESSAGE_FLAGS_NO_AUTO_START);
        if (!done && !done_fds)
                g_dbus_message_set_flags(m, g_dbus_message_get_flags(m) | G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED);

        /* The lock is held across the send so that the filter, which may see
         * the reply before send_message() returns, finds the call. */
        g_mutex_lock(&bus->lock);
        if (bus->closed) {
                g_mutex_unlock(&bus->lock);
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The connection is closed");
                return 0;
        }
        sent = g_dbus_connection_send_message(bus->connection, m, G_DBUS_SEND_MESSAGE_FLAGS_NONE, &serial, error);
        if (sent && (done || done_fds)) {
                BusCall *call = g_new(BusCall, 1);

                call->done = done;
                call->done_fds = done_fds;
                call->userdata = userdata;
                g_hash_table_insert(bus->calls, GUINT_TO_POINTER(serial), call);
        }
        g_mutex_unlock(&bus->lock);
        return sent ? serial : 0;
}

guint32 watchd_bus_call(WatchdBus *bus, const char *destination, const char *interface, const char *method,
                        GVariant *params, GUnixFDList *fds, gboolean auto_start, WatchdBusReplyFunc done,
                        gpointer userdata, GError **error) {
        return bus_call(bus, destination, interface, method, params, fds, auto_start, done, NULL, userdata, error);
}

guint32 watchd_bus_call_fds(WatchdBus *bus, const char *destination, const char *interface, const char *method,
                            GVariant *params, WatchdBusReplyFdsFunc done, gpointer userdata, GError **error) {
        return bus_call(bus, destination, interface, method, params, NULL, FALSE, NULL, done, userdata, error);
}

gboolean watchd_bus_call_fail(WatchdBus *bus, guint32 serial, const GError *error) {
        BusCall *call;

        g_mutex_lock(&bus->lock);
        call = g_hash_table_lookup(bus->calls, GUINT_TO_POINTER(serial));
        if (call)
                g_hash_table_steal(bus->calls, GUINT_TO_POINTER(serial));
        g_mutex_unlock(&bus->lock);
        if (!call)
                return FALSE;
        call_done(call, NULL, NULL, NULL, error);
        g_free(call);
        return TRUE;
}

static void bus_on_name_owner(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        WatchdBus *bus = userdata;
        const char *owner = NULL;

        if (body && g_variant_is_of_type(body, G_VARIANT_TYPE("(s)")))
                g_variant_get(body, "(&s)", &owner);
        /* NameHasNoOwner, or any failure: no daemon known. A closed
         * connection is reported by closed(). */
        if (error && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED))
                return;
        bus->cb.owner_changed(bus->userdata, owner);
}

gboolean watchd_bus_start(WatchdBus *bus, GError **error) {
        static const char *const rules[] = {
                "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                "member='NameOwnerChanged',path='/org/freedesktop/DBus',arg0='" WATCHD_BUS_NAME "'",
                /* Events are unicast (no rule needed); this rule is for a daemon
                 * configured with delivery=broadcast on a private bus. */
                "type='signal',interface='" WATCHD_INTERFACE "',path='" WATCHD_OBJECT_PATH "'",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(rules); i++)
                if (!watchd_bus_call(bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "AddMatch",
                                     g_variant_new("(s)", rules[i]), NULL, FALSE, NULL, NULL, error))
                        return FALSE;
        /* Sent after the rules: any change after its answer is signalled. */
        return watchd_bus_call(bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "GetNameOwner",
                               g_variant_new("(s)", WATCHD_BUS_NAME), NULL, FALSE, bus_on_name_owner, bus, error) != 0;
}
