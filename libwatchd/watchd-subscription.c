/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-subscription - one watch, as a program holds it
 *
 * The object is what a program keeps and connects to; the client's core
 * (watchd-core.h) does the work and holds its state under the client's
 * lock (SubPrivate): this file calls down into it (watchd-start.h), and it
 * emits the subscription's signals through the client, never through a
 * call back into this file's callers. A subscription outlives watchd's
 * restarts: its id changes, the object does not.
 *
 * Lifetime: the client holds a started subscription until it ends
 * (watchd_subscription_cancel(), or removed by the daemon): dropping the
 * program's last reference does not end it, as a GSource attached to a
 * context is not destroyed by its unref. A subscription holds its client.
 */

#include "watchd-core.h"
#include "watchd-start.h"

enum {
        PROP_0,
        PROP_CLIENT,
        PROP_PATH,
        PROP_MASK,
        PROP_FLAGS,
        PROP_ID,
        N_PROPS,
};
static GParamSpec *props[N_PROPS];

enum {
        SIGNAL_EVENTS,
        SIGNAL_OVERFLOW,
        SIGNAL_REMOVED,
        N_SIGNALS,
};
static guint signals[N_SIGNALS];

G_DEFINE_TYPE(WatchdSubscription, watchd_subscription, G_TYPE_OBJECT)

/* How watchd writes a subscription's path in its records: repeated slashes
 * and a trailing one dropped (watchd(8), ARCHITECTURE.md "Paths in
 * records"). Used to tell which subscription a path belongs to. */
char *watchd_canonical_path(const char *path) {
        GString *s = g_string_sized_new(strlen(path));

        for (const char *p = path; *p; p++)
                if (*p != '/' || s->len == 0 || s->str[s->len - 1] != '/')
                        g_string_append_c(s, *p);
        if (s->len > 1 && s->str[s->len - 1] == '/')
                g_string_truncate(s, s->len - 1);
        return g_string_free(s, FALSE);
}

void watchd_subscription_emit_events(WatchdSubscription *sub, GPtrArray *events) {
        g_signal_emit(sub, signals[SIGNAL_EVENTS], 0, events);
}

void watchd_subscription_emit_overflow(WatchdSubscription *sub, WatchdOverflowReason reason) {
        g_signal_emit(sub, signals[SIGNAL_OVERFLOW], 0, reason);
}

void watchd_subscription_emit_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                                      const GError *error) {
        g_signal_emit(sub, signals[SIGNAL_REMOVED], 0, reason, detail, error);
}

static void watchd_subscription_finalize(GObject *object) {
        WatchdSubscription *sub = WATCHD_SUBSCRIPTION(object);

        g_free(sub->path);
        g_free(sub->priv.canonical);
        g_free(sub->priv.current);
        g_clear_object(&sub->client);
        G_OBJECT_CLASS(watchd_subscription_parent_class)->finalize(object);
}

static void watchd_subscription_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec) {
        WatchdSubscription *sub = WATCHD_SUBSCRIPTION(object);

        switch (prop_id) {
        case PROP_CLIENT:
                sub->client = g_value_dup_object(value);
                break;
        case PROP_PATH:
                sub->path = g_value_dup_string(value);
                break;
        case PROP_MASK:
                sub->mask = g_value_get_flags(value);
                break;
        case PROP_FLAGS:
                sub->flags = g_value_get_flags(value);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_subscription_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec) {
        WatchdSubscription *sub = WATCHD_SUBSCRIPTION(object);

        switch (prop_id) {
        case PROP_CLIENT:
                g_value_set_object(value, sub->client);
                break;
        case PROP_PATH:
                g_value_set_string(value, sub->path);
                break;
        case PROP_MASK:
                g_value_set_flags(value, sub->mask);
                break;
        case PROP_FLAGS:
                g_value_set_flags(value, sub->flags);
                break;
        case PROP_ID:
                g_value_set_uint(value, watchd_subscription_get_id(sub));
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
        }
}

static void watchd_subscription_constructed(GObject *object) {
        WatchdSubscription *sub = WATCHD_SUBSCRIPTION(object);

        G_OBJECT_CLASS(watchd_subscription_parent_class)->constructed(object);
        g_assert(sub->client && sub->path);
        sub->priv.canonical = watchd_canonical_path(sub->path);
}

static void watchd_subscription_init(WatchdSubscription *sub) {
        sub->priv.state = SUB_NEW;
}

static void watchd_subscription_class_init(WatchdSubscriptionClass *klass) {
        GObjectClass *object_class = G_OBJECT_CLASS(klass);

        object_class->finalize = watchd_subscription_finalize;
        object_class->set_property = watchd_subscription_set_property;
        object_class->get_property = watchd_subscription_get_property;
        object_class->constructed = watchd_subscription_constructed;

        /**
         * WatchdSubscription:client:
         *
         * The client the subscription is made on.
         */
        props[PROP_CLIENT] = g_param_spec_object("client", "Client", "The client", WATCHD_TYPE_CLIENT,
                                                 G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSubscription:path: (type filename)
         *
         * The watched path, bytes in the GLib file name encoding.
         */
        props[PROP_PATH] = g_param_spec_string("path", "Path", "The watched path", NULL,
                                               G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSubscription:mask:
         *
         * The events asked for.
         */
        props[PROP_MASK] = g_param_spec_flags("mask", "Mask", "The events asked for", WATCHD_TYPE_EVENT_MASK,
                                              WATCHD_EVENT_ALL,
                                              G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSubscription:flags:
         *
         * How the path is watched.
         */
        props[PROP_FLAGS] = g_param_spec_flags("flags", "Flags", "How the path is watched", WATCHD_TYPE_WATCH_FLAGS,
                                               WATCHD_WATCH_NONE,
                                               G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
        /**
         * WatchdSubscription:id:
         *
         * The id watchd gave the subscription at its last AddWatch (see
         * watchd_subscription_get_id()). Not notified.
         */
        props[PROP_ID] = g_param_spec_uint("id", "Id", "watchd's id", 0, G_MAXUINT32, 0,
                                           G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties(object_class, N_PROPS, props);

        /**
         * WatchdSubscription::events:
         * @subscription: the subscription
         * @events: (element-type WatchdEvent): the events, in the order they happened
         *
         * Events of the subscription, in a batch as watchd sent them. Emitted
         * in the client's #GMainContext.
         */
        signals[SIGNAL_EVENTS] = g_signal_new("events", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                              NULL, G_TYPE_NONE, 1, G_TYPE_PTR_ARRAY);
        /**
         * WatchdSubscription::overflow:
         * @subscription: the subscription
         * @reason: why events may be missing
         *
         * Events of the subscription may have been lost (watchd overflowed,
         * the client's context did not run, or watchd restarted): a program
         * that keeps state about the watched files should rescan them. Loss
         * is never silent. Emitted in the client's #GMainContext, in order
         * with the events.
         */
        signals[SIGNAL_OVERFLOW] = g_signal_new("overflow", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                                NULL, G_TYPE_NONE, 1, WATCHD_TYPE_OVERFLOW_REASON);
        /**
         * WatchdSubscription::removed:
         * @subscription: the subscription
         * @reason: why it ended
         * @detail: watchd's word for the reason ("deleted", "unmounted",
         *   "oneshot"), or the error's message
         * @error: (nullable): for %WATCHD_REMOVED_ERROR, the error watchd
         *   answered when the subscription was added again after a restart
         *
         * The subscription ended by itself; it emits nothing more. Not
         * emitted for watchd_subscription_cancel().
         */
        signals[SIGNAL_REMOVED] = g_signal_new("removed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                               NULL, G_TYPE_NONE, 3, WATCHD_TYPE_REMOVED_REASON, G_TYPE_STRING,
                                               G_TYPE_ERROR);
}

/**
 * watchd_subscription_new:
 * @client: a #WatchdClient
 * @path: (type filename): an absolute path, bytes in the GLib file name
 *   encoding (any bytes: a path that is not UTF-8 is escaped for a watchd
 *   that takes that form, else sent as a file descriptor)
 * @mask: the events to report
 * @flags: how to watch
 *
 * A subscription, not started yet: connect to its signals, then call
 * watchd_subscription_start() or watchd_subscription_start_sync(). This
 * order is safe from any thread.
 *
 * Returns: (transfer full): the subscription
 */
WatchdSubscription *watchd_subscription_new(WatchdClient *client, const char *path, WatchdEventMask mask,
                                            WatchdWatchFlags flags) {
        g_return_val_if_fail(WATCHD_IS_CLIENT(client), NULL);
        g_return_val_if_fail(path != NULL, NULL);
        return g_object_new(WATCHD_TYPE_SUBSCRIPTION, "client", client, "path", path, "mask", mask, "flags", flags, NULL);
}

/**
 * watchd_subscription_start:
 * @subscription: a new #WatchdSubscription
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the answer, in the thread-default #GMainContext of
 *   the caller
 * @user_data: data for @callback
 *
 * Asks watchd for the subscription. Cancelling @cancellable makes it fail
 * with %G_IO_ERROR_CANCELLED at once; if watchd had made the subscription
 * meanwhile, it is removed when its answer comes, and nothing is emitted.
 * A subscription whose start failed may be started again.
 */
void watchd_subscription_start(WatchdSubscription *subscription, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data) {
        GTask *task;

        g_return_if_fail(WATCHD_IS_SUBSCRIPTION(subscription));
        task = g_task_new(subscription, cancellable, callback, user_data);
        g_task_set_source_tag(task, watchd_subscription_start);
        core_start_subscription(subscription->client->core, subscription, FALSE, cancellable, task);
}

/**
 * watchd_subscription_start_finish:
 * @subscription: a #WatchdSubscription
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Returns: whether the subscription is active; %FALSE with @error set
 *   (watchd's errors come as #G_DBUS_ERROR or with their D-Bus name, see
 *   g_dbus_error_get_remote_error())
 */
gboolean watchd_subscription_start_finish(WatchdSubscription *subscription, GAsyncResult *result, GError **error) {
        g_return_val_if_fail(g_task_is_valid(result, subscription), FALSE);
        return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * watchd_subscription_start_sync:
 * @subscription: a new #WatchdSubscription
 * @cancellable: (nullable): a #GCancellable
 * @error: return location for a #GError
 *
 * Asks watchd for the subscription and waits for the answer. Any thread may
 * call it, and no main loop needs to run meanwhile; the events are emitted
 * in the client's context.
 *
 * Returns: whether the subscription is active; %FALSE with @error set
 */
gboolean watchd_subscription_start_sync(WatchdSubscription *subscription, GCancellable *cancellable, GError **error) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), FALSE);
        return core_start_subscription_sync(subscription->client->core, subscription, cancellable, error);
}

/**
 * watchd_subscription_cancel:
 * @subscription: a #WatchdSubscription
 *
 * Ends the subscription (RemoveWatch, without waiting for the answer). A
 * start in progress fails with %G_IO_ERROR_CANCELLED. Called in the
 * client's context, no signal of the subscription is emitted after it
 * returns; called from another thread, an emission already running ends
 * first. Safe to call more than once, and from a signal handler.
 */
void watchd_subscription_cancel(WatchdSubscription *subscription) {
        g_return_if_fail(WATCHD_IS_SUBSCRIPTION(subscription));
        core_cancel_subscription(subscription->client->core, subscription);
}

/**
 * watchd_subscription_get_id:
 * @subscription: a #WatchdSubscription
 *
 * The id watchd gave the subscription at its last AddWatch: it changes when
 * watchd restarts, and is kept once the subscription has ended (so that a
 * #WatchdSubscription::removed handler can name it). Whether watchd holds it
 * now is watchd_subscription_is_active().
 *
 * Returns: the id, 0 before the subscription was first active
 */
guint32 watchd_subscription_get_id(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), 0);
        return core_get_last_id(subscription->client->core, subscription);
}

/**
 * watchd_subscription_is_active:
 * @subscription: a #WatchdSubscription
 *
 * Returns: whether watchd holds the subscription now (not while it is being
 *   started, while watchd is away, or after it ended)
 */
gboolean watchd_subscription_is_active(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), FALSE);
        return core_is_active(subscription->client->core, subscription);
}

/**
 * watchd_subscription_get_client:
 * @subscription: a #WatchdSubscription
 *
 * Returns: (transfer none): its client
 */
WatchdClient *watchd_subscription_get_client(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), NULL);
        return subscription->client;
}

/**
 * watchd_subscription_get_path:
 * @subscription: a #WatchdSubscription
 *
 * Returns: (type filename): the watched path, as given
 */
const char *watchd_subscription_get_path(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), NULL);
        return subscription->path;
}

/**
 * watchd_subscription_get_mask:
 * @subscription: a #WatchdSubscription
 *
 * Returns: the events asked for
 */
WatchdEventMask watchd_subscription_get_mask(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), 0);
        return subscription->mask;
}

/**
 * watchd_subscription_get_flags:
 * @subscription: a #WatchdSubscription
 *
 * Returns: how the path is watched
 */
WatchdWatchFlags watchd_subscription_get_flags(WatchdSubscription *subscription) {
        g_return_val_if_fail(WATCHD_IS_SUBSCRIPTION(subscription), 0);
        return subscription->flags;
}
