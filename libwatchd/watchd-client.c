/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-client - a connection to watchd and the subscriptions made on it
 *
 * The GObject and its public functions; how it works inside is told in
 * watchd-core.h.
 */

#include <gio/gunixfdlist.h>

#include "watchd-call.h"
#include "watchd-core.h"
#include "watchd-owner.h"
#include "watchd-receive.h"
#include "watchd-start.h"
#include "watchd-wire.h"

#define DEFAULT_MAX_QUEUED_EVENTS 65536
#define DEFAULT_MAX_QUEUED_BYTES  (32u * 1024 * 1024)
#define DEFAULT_CALL_TIMEOUT_MS   25000
#define MAX_UNCLAIMED             65536

/**
 * watchd_error_quark:
 *
 * Returns: the %WATCHD_ERROR domain
 */
GQuark watchd_error_quark(void) {
        return g_quark_from_static_string("watchd-error-quark");
}

enum {
        PROP_0,
        PROP_BUS_TYPE,
        PROP_ADDRESS,
        PROP_CONNECTION,
        PROP_DAEMON_RUNNING,
        PROP_MAX_QUEUED_EVENTS,
        PROP_MAX_QUEUED_BYTES,
        PROP_CALL_TIMEOUT,
        PROP_USE_STREAM,
        N_PROPS,
};
static GParamSpec *props[N_PROPS];

enum {
        SIGNAL_DAEMON_VANISHED,
        SIGNAL_DAEMON_RESTARTED,
        SIGNAL_CLOSED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

static void client_initable_iface_init(GInitableIface *iface);

G_DEFINE_TYPE_WITH_CODE(WatchdClient, watchd_client, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(G_TYPE_INITABLE, client_initable_iface_init)
                                G_IMPLEMENT_INTERFACE(G_TYPE_ASYNC_INITABLE, NULL))

static void client_emit(WatchdClient *client, Item *it) {
        switch (it->kind) {
        case ITEM_EVENTS:
                watchd_subscription_emit_events(it->sub, it->events);
                break;
        case ITEM_OVERFLOW:
                watchd_subscription_emit_overflow(it->sub, it->reason);
                break;
        case ITEM_REMOVED:
                watchd_subscription_emit_removed(it->sub, it->reason, it->detail, it->error);
                break;
        case ITEM_DAEMON_VANISHED:
                if (client) {
                        g_signal_emit(client, signals[SIGNAL_DAEMON_VANISHED], 0);
                        g_object_notify_by_pspec(G_OBJECT(client), props[PROP_DAEMON_RUNNING]);
                }
                break;
        case ITEM_DAEMON_APPEARED:
                if (client)
                        g_object_notify_by_pspec(G_OBJECT(client), props[PROP_DAEMON_RUNNING]);
                break;
        case ITEM_DAEMON_RESTARTED:
                if (client)
                        g_signal_emit(client, signals[SIGNAL_DAEMON_RESTARTED], 0);
                break;
        case ITEM_CLOSED:
                if (client)
                        g_signal_emit(client, signals[SIGNAL_CLOSED], 0, it->error);
                break;
        }
}

/* ------------------------------------------------------------------------ */
/* GObject */

static gboolean client_initable_init(GInitable *initable, GCancellable *cancellable, GError **error) {
        WatchdClient *client = WATCHD_CLIENT(initable);
        Core *core = client->core;
        g_autoptr(GDBusConnection) connection = NULL;
        gboolean private_connection = FALSE;
        gint64 deadline;

        if (client->initialized) {
                g_set_error_literal(error, WATCHD_ERROR, WATCHD_ERROR_STATE, "The client is initialized already");
                return FALSE;
        }
        client->initialized = TRUE;

        if (client->given_connection)
                connection = g_object_ref(client->given_connection);
        else {
                g_autofree char *address = NULL;

                if (client->address)
                        address = g_strdup(client->address);
                else if (client->bus_type == G_BUS_TYPE_SYSTEM || client->bus_type == G_BUS_TYPE_SESSION)
                        address = g_dbus_address_get_for_bus_sync(client->bus_type, cancellable, error);
                else
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                    "A client needs the system bus, the session bus or an address");
                if (!address)
                        return FALSE;
                /* A connection of our own: the library's filter and signals
                 * do not meet the program's, and closing it is ours to do. */
                connection = g_dbus_connection_new_for_address_sync(
                        address,
                        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                        NULL, cancellable, error);
                if (!connection)
                        return FALSE;
                g_dbus_connection_set_exit_on_close(connection, FALSE);
                private_connection = TRUE;
        }

        /* The daemon knows a connection, not the clients on it: the stream of a
         * connection the program shares would carry the records of its other
         * clients (another WatchdClient, its own calls) to this one alone. */
        if (!private_connection) {
                core->use_stream = FALSE;
                /* Other clients' records come on it too: an id of none of
                 * ours is not the daemon's mistake. */
                core->shared_connection = TRUE;
        }
        core->bus = watchd_bus_new(connection, private_connection, &core_bus_callbacks, core_ref(core), core_unref);
        if (!watchd_bus_start(core->bus, error))
                return FALSE;

        /* The owner (and, if there is one, its version and capabilities)
         * before the client is handed out. */
        g_mutex_lock(&core->lock);
        deadline = g_get_monotonic_time() + (gint64) core->call_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while ((!core->owner_known || core->props_pending || core->stream_pending) && !core->closed)
                if (!g_cond_wait_until(&core->cond, &core->lock, deadline))
                        break;
        if (!core->owner_known || core->closed) {
                g_mutex_unlock(&core->lock);
                g_set_error_literal(error, G_IO_ERROR, core->closed ? G_IO_ERROR_CLOSED : G_IO_ERROR_TIMED_OUT,
                                    core->closed ? "The connection to the bus closed" :
                                                   "The bus did not answer GetNameOwner in time");
                return FALSE;
        }
        g_mutex_unlock(&core->lock);
        return TRUE;
}

static void client_initable_iface_init(GInitableIface *iface) {
        iface->init = client_initable_init;
}

static void watchd_client_init(WatchdClient *client) {
        Core *core = core_new(client, client_emit);

        core->max_queued_events = DEFAULT_MAX_QUEUED_EVENTS;
        core->max_held_bytes = DEFAULT_MAX_QUEUED_BYTES;
        core->call_timeout_ms = DEFAULT_CALL_TIMEOUT_MS;
        core->use_stream = TRUE;
        client->core = core;
        client->bus_type = G_BUS_TYPE_SYSTEM;
}

static void watchd_client_dispose(GObject *object) {
        WatchdClient *client = WATCHD_CLIENT(object);
        Core *core = client->core;
        WatchdStreamReader *stream;
        WatchdBus *bus;

        /* Live subscriptions hold the client: none is left. */
        g_mutex_lock(&core->lock);
        bus = g_steal_pointer(&core->bus);
        core->closed = TRUE;
        stream = core_steal_stream(core);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
        watchd_bus_close(bus);
        /* Nothing more is emitted: no client to emit on. */
        g_source_destroy(core->dispatch);
        G_OBJECT_CLASS(watchd_client_parent_class)->dispose(object);
}

static void watchd_client_finalize(GObject *object) {
        WatchdClient *client = WATCHD_CLIENT(object);

        g_free(client->address);
        g_clear_object(&client->given_connection);
        core_unref(client->core);
        G_OBJECT_CLASS(watchd_client_parent_class)->finalize(object);
}

static void watchd_client_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
        WatchdClient *client = WATCHD_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                client->bus_type = g_value_get_enum(value);
                break;
        case PROP_ADDRESS:
                g_free(client->address);
                client->address = g_value_dup_string(value);
                break;
        case PROP_CONNECTION:
                g_clear_object(&client->given_connection);
                client->given_connection = g_value_dup_object(value);
                break;
        case PROP_MAX_QUEUED_EVENTS:
                g_mutex_lock(&client->core->lock);
                client->core->max_queued_events = g_value_get_uint(value);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_MAX_QUEUED_BYTES:
                g_mutex_lock(&client->core->lock);
                client->core->max_held_bytes = g_value_get_uint(value);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_CALL_TIMEOUT:
                g_mutex_lock(&client->core->lock);
                client->core->call_timeout_ms = g_value_get_uint(value);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_USE_STREAM:
                client->core->use_stream = g_value_get_boolean(value);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_client_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
        WatchdClient *client = WATCHD_CLIENT(object);

        switch (prop_id) {
        case PROP_BUS_TYPE:
                g_value_set_enum(value, client->bus_type);
                break;
        case PROP_ADDRESS:
                g_value_set_string(value, client->address);
                break;
        case PROP_CONNECTION:
                g_value_set_object(value, watchd_client_get_connection(client));
                break;
        case PROP_DAEMON_RUNNING:
                g_value_set_boolean(value, watchd_client_get_daemon_running(client));
                break;
        case PROP_MAX_QUEUED_EVENTS:
                g_mutex_lock(&client->core->lock);
                g_value_set_uint(value, client->core->max_queued_events);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_MAX_QUEUED_BYTES:
                g_mutex_lock(&client->core->lock);
                g_value_set_uint(value, (guint) client->core->max_held_bytes);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_CALL_TIMEOUT:
                g_mutex_lock(&client->core->lock);
                g_value_set_uint(value, client->core->call_timeout_ms);
                g_mutex_unlock(&client->core->lock);
                break;
        case PROP_USE_STREAM:
                g_mutex_lock(&client->core->lock);
                g_value_set_boolean(value, client->core->stream_owner != NULL);
                g_mutex_unlock(&client->core->lock);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_client_class_init(WatchdClientClass *klass) {
        GObjectClass *object_class = G_OBJECT_CLASS(klass);

        object_class->dispose = watchd_client_dispose;
        object_class->finalize = watchd_client_finalize;
        object_class->set_property = watchd_client_set_property;
        object_class->get_property = watchd_client_get_property;

        /**
         * WatchdClient:bus-type:
         *
         * The bus watchd is on: %G_BUS_TYPE_SYSTEM (the default) or
         * %G_BUS_TYPE_SESSION. Unused if #WatchdClient:address or
         * #WatchdClient:connection is set.
         */
        props[PROP_BUS_TYPE] = g_param_spec_enum("bus-type", "Bus type", "The bus watchd is on", G_TYPE_BUS_TYPE,
                                                 G_BUS_TYPE_SYSTEM,
                                                 G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:address:
         *
         * The D-Bus address of the message bus watchd is on, for a private
         * bus (tests) or one started by hand.
         */
        props[PROP_ADDRESS] = g_param_spec_string("address", "Address", "D-Bus address of the bus", NULL,
                                                  G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:connection:
         *
         * A message bus connection to use rather than one of the client's
         * own. Without it, the client makes its own connection.
         */
        props[PROP_CONNECTION] = g_param_spec_object("connection", "Connection", "The bus connection",
                                                     G_TYPE_DBUS_CONNECTION,
                                                     G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:daemon-running:
         *
         * Whether watchd is on the bus. Notified in the client's context
         * when it leaves or comes back.
         */
        props[PROP_DAEMON_RUNNING] = g_param_spec_boolean("daemon-running", "Daemon running",
                                                          "Whether watchd is on the bus", FALSE,
                                                          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:max-queued-events:
         *
         * How many events may wait for the client's #GMainContext to run.
         * Past it, the waiting events are dropped and their subscriptions
         * emit #WatchdSubscription::overflow with %WATCHD_OVERFLOW_CLIENT:
         * memory stays bounded when the context is blocked.
         */
        props[PROP_MAX_QUEUED_EVENTS] = g_param_spec_uint(
                "max-queued-events", "Maximum queued events", "Events that may wait for the main context", 1, G_MAXUINT,
                DEFAULT_MAX_QUEUED_EVENTS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:max-queued-bytes:
         *
         * How many bytes of records the client may hold: those waiting for
         * its #GMainContext to run, those received for a subscription whose
         * start has not been answered yet, and those held while watchd is
         * asked where its subscriptions are (32 MiB by default). Past it, as
         * past #WatchdClient:max-queued-events, every record held is
         * dropped and each subscription that lost some emits
         * #WatchdSubscription::overflow with %WATCHD_OVERFLOW_CLIENT, as
         * watchd does for a client that falls behind: whatever watchd
         * sends, the client's memory stays bounded (docs/CLIENTS.md).
         */
        props[PROP_MAX_QUEUED_BYTES] = g_param_spec_uint(
                "max-queued-bytes", "Maximum queued bytes", "Bytes of records the client may hold", 4096, G_MAXUINT,
                DEFAULT_MAX_QUEUED_BYTES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:call-timeout:
         *
         * How long, in milliseconds, a call to watchd may wait for its
         * answer before it fails with %G_IO_ERROR_TIMED_OUT.
         */
        props[PROP_CALL_TIMEOUT] = g_param_spec_uint("call-timeout", "Call timeout",
                                                     "Milliseconds a call waits for its answer", 1, G_MAXUINT,
                                                     DEFAULT_CALL_TIMEOUT_MS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdClient:use-stream:
         *
         * Whether the records come over a socket of the client's own when
         * watchd offers one (%WATCHD_CAPABILITY_STREAM; watchd(8), STREAM),
         * rather than as D-Bus signals: cheaper for both sides, and not held
         * up by the bus. Set at construction (default %TRUE); read, it says
         * whether they do now (a watchd without the capability, or a stream
         * that could not be read, gives signals, with the same events). A
         * client on a connection given to it (#WatchdClient:connection) never
         * uses the stream: the daemon would send the records of every client
         * of that connection there.
         */
        props[PROP_USE_STREAM] = g_param_spec_boolean(
                "use-stream", "Use the stream", "Whether records come over a stream of the client's own", TRUE,
                G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties(object_class, N_PROPS, props);

        /**
         * WatchdClient::daemon-vanished:
         * @client: the client
         *
         * watchd left the bus. Its subscriptions wait and are added again
         * when it (or another watchd) takes the name back; see
         * #WatchdClient::daemon-restarted.
         */
        signals[SIGNAL_DAEMON_VANISHED] = g_signal_new("daemon-vanished", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                                       0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        /**
         * WatchdClient::daemon-restarted:
         * @client: the client
         *
         * watchd came back after #WatchdClient::daemon-vanished and every
         * waiting subscription was added again (each emitted
         * #WatchdSubscription::overflow with %WATCHD_OVERFLOW_RESTARTED) or
         * removed (#WatchdSubscription::removed with %WATCHD_REMOVED_ERROR).
         */
        signals[SIGNAL_DAEMON_RESTARTED] = g_signal_new("daemon-restarted", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                                        0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        /**
         * WatchdClient::closed:
         * @client: the client
         * @error: (nullable): why
         *
         * The connection to the bus closed: nothing more will come.
         */
        signals[SIGNAL_CLOSED] = g_signal_new("closed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

/* ------------------------------------------------------------------------ */
/* Public functions */

/**
 * watchd_client_new:
 * @bus_type: %G_BUS_TYPE_SYSTEM or %G_BUS_TYPE_SESSION
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the client is ready
 * @user_data: data for @callback
 *
 * Connects to watchd on a message bus, asynchronously. The client's
 * signals, and those of its subscriptions, are emitted in the thread-default
 * #GMainContext of the thread calling this.
 */
void watchd_client_new(GBusType bus_type, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data) {
        g_async_initable_new_async(WATCHD_TYPE_CLIENT, G_PRIORITY_DEFAULT, cancellable, callback, user_data, "bus-type",
                                   bus_type, NULL);
}

/**
 * watchd_client_new_for_address:
 * @address: a D-Bus address
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when the client is ready
 * @user_data: data for @callback
 *
 * Connects to watchd on the message bus at @address, asynchronously.
 */
void watchd_client_new_for_address(const char *address, GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data) {
        g_async_initable_new_async(WATCHD_TYPE_CLIENT, G_PRIORITY_DEFAULT, cancellable, callback, user_data, "address",
                                   address, NULL);
}

/**
 * watchd_client_new_finish:
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_finish(GAsyncResult *result, GError **error) {
        g_autoptr(GObject) source = g_async_result_get_source_object(result);
        GObject *object = g_async_initable_new_finish(G_ASYNC_INITABLE(source), result, error);

        return object ? WATCHD_CLIENT(object) : NULL;
}

/**
 * watchd_client_new_sync:
 * @bus_type: %G_BUS_TYPE_SYSTEM or %G_BUS_TYPE_SESSION
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Connects to watchd on a message bus. It is not an error that watchd is
 * not running (see #WatchdClient:daemon-running): adding a watch starts it
 * if the bus can (D-Bus activation), and a client follows watchd as it
 * leaves and comes back.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_sync(GBusType bus_type, GCancellable *cancellable, GError **error) {
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "bus-type", bus_type, NULL);
}

/**
 * watchd_client_new_for_address_sync:
 * @address: a D-Bus address
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Connects to watchd on the message bus at @address.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_for_address_sync(const char *address, GCancellable *cancellable, GError **error) {
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "address", address, NULL);
}

/**
 * watchd_client_new_for_connection_sync:
 * @connection: a message bus connection
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Uses @connection rather than a connection of the client's own. The
 * client leaves the program's other messages alone on it.
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
WatchdClient *watchd_client_new_for_connection_sync(GDBusConnection *connection, GCancellable *cancellable,
                                                    GError **error) {
        g_return_val_if_fail(G_IS_DBUS_CONNECTION(connection), NULL);
        return g_initable_new(WATCHD_TYPE_CLIENT, cancellable, error, "connection", connection, NULL);
}

/**
 * watchd_client_get_connection:
 * @client: a #WatchdClient
 *
 * Returns: (transfer none) (nullable): the bus connection, %NULL before the
 *   client is initialized or after it was closed
 */
GDBusConnection *watchd_client_get_connection(WatchdClient *client) {
        GDBusConnection *c;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        c = client->core->bus ? watchd_bus_get_connection(client->core->bus) : NULL;
        g_mutex_unlock(&client->core->lock);
        return c;
}

/**
 * watchd_client_get_main_context:
 * @client: a #WatchdClient
 *
 * Returns: (transfer none): the #GMainContext the signals of @client and of
 *   its subscriptions are emitted in
 */
GMainContext *watchd_client_get_main_context(WatchdClient *client) {
        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        return client->core->context;
}

/**
 * watchd_client_get_daemon_running:
 * @client: a #WatchdClient
 *
 * Returns: whether watchd is on the bus now
 */
gboolean watchd_client_get_daemon_running(WatchdClient *client) {
        gboolean running;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), FALSE);
        g_mutex_lock(&client->core->lock);
        running = client->core->owner != NULL;
        g_mutex_unlock(&client->core->lock);
        return running;
}

/**
 * watchd_client_dup_daemon_owner:
 * @client: a #WatchdClient
 *
 * Returns: (transfer full) (nullable): the unique bus name of watchd, %NULL
 *   if it is not running
 */
char *watchd_client_dup_daemon_owner(WatchdClient *client) {
        char *s;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        s = g_strdup(client->core->owner);
        g_mutex_unlock(&client->core->lock);
        return s;
}

/**
 * watchd_client_dup_daemon_version:
 * @client: a #WatchdClient
 *
 * Returns: (transfer full) (nullable): watchd's Version property, as read
 *   when it took the bus name; %NULL if it is not running
 */
char *watchd_client_dup_daemon_version(WatchdClient *client) {
        char *s;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_mutex_lock(&client->core->lock);
        s = g_strdup(client->core->owner ? client->core->version : NULL);
        g_mutex_unlock(&client->core->lock);
        return s;
}

WatchdDurableRouter *watchd_client_get_durable_router(WatchdClient *client) {
        return watchd_durable_router_ref(client->core->durables);
}

/**
 * watchd_client_get_capabilities:
 * @client: a #WatchdClient
 *
 * What the running watchd offers beyond its first API (its Capabilities
 * property; a watchd without it offers none).
 *
 * Returns: the capabilities
 */
WatchdCapabilities watchd_client_get_capabilities(WatchdClient *client) {
        WatchdCapabilities caps;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), WATCHD_CAPABILITY_NONE);
        g_mutex_lock(&client->core->lock);
        caps = client->core->caps;
        g_mutex_unlock(&client->core->lock);
        return caps;
}

static void add_watch_done(GObject *source, GAsyncResult *result, gpointer userdata) {
        gpointer *data = userdata; /* callback, user data, subscription */
        GAsyncReadyCallback callback = (GAsyncReadyCallback) data[0];
        WatchdSubscription *sub = data[2];

        if (callback)
                callback(source, result, data[1]);
        /* The caller has connected its handlers: the events may go. */
        core_release_hold(WATCHD_CLIENT(source)->core, sub);
        g_object_unref(sub);
        g_free(data);
}

/**
 * watchd_client_add_watch:
 * @client: a #WatchdClient
 * @path: (type filename): an absolute path, bytes in the GLib file name
 *   encoding
 * @mask: the events to report
 * @flags: how to watch
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the answer, in the thread-default #GMainContext
 *   of the caller
 * @user_data: data for @callback
 *
 * Adds a watch: watchd_subscription_new() and watchd_subscription_start()
 * in one. No event of the new subscription is emitted before @callback has
 * returned, so that it can connect its handlers. Cancelling it makes the
 * call fail with %G_IO_ERROR_CANCELLED at once; if watchd had made the
 * subscription meanwhile, it is removed when its answer comes.
 */
void watchd_client_add_watch(WatchdClient *client, const char *path, WatchdEventMask mask, WatchdWatchFlags flags,
                             GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data) {
        WatchdSubscription *sub;
        gpointer *data;
        GTask *task;

        g_return_if_fail(WATCHD_IS_CLIENT(client));
        g_return_if_fail(path != NULL);
        sub = watchd_subscription_new(client, path, mask, flags);
        data = g_new(gpointer, 3);
        data[0] = (gpointer) callback;
        data[1] = user_data;
        data[2] = sub;
        task = g_task_new(client, cancellable, add_watch_done, data);
        g_task_set_source_tag(task, watchd_client_add_watch);
        core_start_subscription(client->core, sub, TRUE, cancellable, task);
}

/**
 * watchd_client_add_watch_finish:
 * @client: a #WatchdClient
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the subscription, started; %NULL with @error set
 */
WatchdSubscription *watchd_client_add_watch_finish(WatchdClient *client, GAsyncResult *result, GError **error) {
        g_return_val_if_fail(g_task_is_valid(result, client), NULL);
        return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * watchd_client_add_watch_sync:
 * @client: a #WatchdClient
 * @path: (type filename): an absolute path
 * @mask: the events to report
 * @flags: how to watch
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Adds a watch and waits for watchd's answer (any thread may call this; no
 * main loop needs to run). Its events are emitted in the client's context:
 * from the thread of that context, connect the handlers before returning to
 * it; from another thread, use watchd_subscription_new(), connect, then
 * watchd_subscription_start_sync().
 *
 * Returns: (transfer full): the subscription, started; %NULL with @error set
 */
WatchdSubscription *watchd_client_add_watch_sync(WatchdClient *client, const char *path, WatchdEventMask mask,
                                                 WatchdWatchFlags flags, GCancellable *cancellable, GError **error) {
        g_autoptr(WatchdSubscription) sub = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_return_val_if_fail(path != NULL, NULL);
        sub = watchd_subscription_new(client, path, mask, flags);
        if (!watchd_subscription_start_sync(sub, cancellable, error))
                return NULL;
        return g_steal_pointer(&sub);
}

/**
 * watchd_client_list_watches_sync:
 * @client: a #WatchdClient
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * The subscriptions of this client's connection as watchd holds them
 * (ListWatches): an array of (id, path, mask, flags), the path as a byte
 * string (`ay`, a file name), in watchd's order.
 *
 * Returns: (transfer full): a #GVariant of type `a(uayuu)`, or %NULL with
 *   @error set
 */
GVariant *watchd_client_list_watches_sync(WatchdClient *client, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL, list = NULL;
        GVariantBuilder b;
        GVariantIter it;
        const char *path;
        guint32 id, mask, flags;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        reply = core_call_sync(client->core, WATCHD_INTERFACE, "ListWatches", NULL, G_VARIANT_TYPE("(a(usuu))"),
                               cancellable, error);
        if (!reply)
                return NULL;
        list = g_variant_get_child_value(reply, 0);
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(uayuu)"));
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &id, &path, &mask, &flags)) {
                g_autofree char *bytes = watchd_wire_path_decode(path, (flags & WATCHD_WIRE_PATH_ESCAPED) != 0, error);

                if (!bytes) {
                        g_variant_builder_clear(&b);
                        return NULL;
                }
                g_variant_builder_add(
                        &b, "(u@ayuu)", id, g_variant_new_bytestring(bytes), mask,
                        flags & ~(WATCHD_WIRE_PATH_ESCAPED | WATCHD_WIRE_PACKED)); /* the library's, not the caller's */
        }
        return g_variant_ref_sink(g_variant_builder_end(&b));
}

/**
 * watchd_client_get_stats_sync:
 * @client: a #WatchdClient
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * watchd's counters (GetStats; watchd(8) lists them).
 *
 * Returns: (transfer full): a #GVariant of type `a{sv}`, or %NULL with
 *   @error set
 */
GVariant *watchd_client_get_stats_sync(WatchdClient *client, GCancellable *cancellable, GError **error) {
        g_autoptr(GVariant) reply = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        reply = core_call_sync(client->core, WATCHD_INTERFACE, "GetStats", NULL, G_VARIANT_TYPE("(a{sv})"), cancellable,
                               error);
        return reply ? g_variant_get_child_value(reply, 0) : NULL;
}

/**
 * watchd_client_get_daemon_property_sync:
 * @client: a #WatchdClient
 * @name: a property of org.example.Inotify ("Version", "Backend", ...)
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Reads a property of watchd now (starting watchd if the bus can), rather
 * than the values kept since it took the name.
 *
 * Returns: (transfer full): the property's value, or %NULL with @error set
 */
GVariant *watchd_client_get_daemon_property_sync(WatchdClient *client, const char *name, GCancellable *cancellable,
                                                 GError **error) {
        g_autoptr(GVariant) reply = NULL;
        GVariant *value = NULL;

        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_return_val_if_fail(name != NULL, NULL);
        reply = core_call_sync(client->core, "org.freedesktop.DBus.Properties", "Get",
                               g_variant_new("(ss)", WATCHD_INTERFACE, name), G_VARIANT_TYPE("(v)"), cancellable, error);
        if (reply)
                g_variant_get(reply, "(v)", &value);
        return value;
}

/**
 * watchd_client_close:
 * @client: a #WatchdClient
 *
 * Cancels every subscription of @client and closes its connection (if it
 * is the client's own). Subscriptions hold their client, so a client with
 * subscriptions is only freed once they are cancelled or removed; this does
 * it for all of them.
 */
void watchd_client_close(WatchdClient *client) {
        g_autoptr(GPtrArray) subs = g_ptr_array_new_with_free_func(g_object_unref);
        WatchdStreamReader *stream;
        GHashTableIter it;
        gpointer key;
        WatchdBus *bus;

        g_return_if_fail(WATCHD_IS_CLIENT(client));
        g_mutex_lock(&client->core->lock);
        g_hash_table_iter_init(&it, client->core->live);
        while (g_hash_table_iter_next(&it, &key, NULL))
                g_ptr_array_add(subs, g_object_ref(key));
        g_mutex_unlock(&client->core->lock);
        for (guint i = 0; i < subs->len; i++)
                watchd_subscription_cancel(subs->pdata[i]);

        g_mutex_lock(&client->core->lock);
        bus = g_steal_pointer(&client->core->bus);
        client->core->closed = TRUE;
        stream = core_steal_stream(client->core);
        g_mutex_unlock(&client->core->lock);
        watchd_stream_reader_free(stream);
        watchd_bus_close(bus);
}
