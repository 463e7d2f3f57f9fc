/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-call - a call to watchd waited for in the calling thread (see watchd-call.h)
 */

#include "watchd-call.h"

typedef struct SyncCall {
        Core *core;
        gboolean done;
        GVariant *body;
        GError *error;
} SyncCall;

static void sync_call_on_reply(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        SyncCall *call = userdata;

        g_mutex_lock(&call->core->lock);
        call->body = body ? g_variant_ref(body) : NULL;
        call->error = error ? g_error_copy(error) : NULL;
        call->done = TRUE;
        g_cond_broadcast(&call->core->cond);
        g_mutex_unlock(&call->core->lock);
}

typedef struct SyncCancel {
        WatchdBus *bus;
        guint32 serial;
} SyncCancel;

static void sync_call_on_cancelled(GCancellable *cancellable, gpointer userdata) {
        SyncCancel *c = userdata;
        g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");

        (void) watchd_bus_call_fail(c->bus, c->serial, error);
}

/* A call to watchd, waited for in this thread; the reply's body of type
 * reply_type, or NULL with error. */
GVariant *core_call_sync(Core *core, const char *interface, const char *method, GVariant *params,
                         const GVariantType *reply_type, GCancellable *cancellable, GError **error) {
        SyncCall call = { .core = core };
        SyncCancel cancel = { 0 };
        gulong cancel_id = 0;
        gint64 deadline;

        if (g_cancellable_set_error_if_cancelled(cancellable, error))
                return NULL;
        g_mutex_lock(&core->lock);
        cancel.bus = core->bus;
        g_mutex_unlock(&core->lock);
        if (!cancel.bus) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "The client is closed");
                return NULL;
        }
        cancel.serial = watchd_bus_call(core->bus, WATCHD_BUS_NAME, interface, method, params, NULL, TRUE,
                                        sync_call_on_reply, &call, error);
        if (cancel.serial == 0)
                return NULL;
        if (cancellable)
                cancel_id = g_cancellable_connect(cancellable, G_CALLBACK(sync_call_on_cancelled), &cancel, NULL);

        g_mutex_lock(&core->lock);
        deadline = g_get_monotonic_time() + (gint64) core->call_timeout_ms * G_TIME_SPAN_MILLISECOND;
        while (!call.done)
                if (!g_cond_wait_until(&core->cond, &core->lock, deadline)) {
                        g_autoptr(GError) timeout = g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                                                "watchd did not answer in %u ms", core->call_timeout_ms);

                        g_mutex_unlock(&core->lock);
                        (void) watchd_bus_call_fail(core->bus, cancel.serial, timeout);
                        g_mutex_lock(&core->lock);
                        /* Either failed now, or the reply won the race: done either way. */
                        while (!call.done)
                                g_cond_wait(&core->cond, &core->lock);
                }
        g_mutex_unlock(&core->lock);
        if (cancel_id)
                g_cancellable_disconnect(cancellable, cancel_id);

        if (call.error) {
                g_propagate_error(error, call.error);
                g_clear_pointer(&call.body, g_variant_unref);
                return NULL;
        }
        if (!g_variant_is_of_type(call.body, reply_type)) {
                g_set_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL, "%s answered with type %s", method,
                            g_variant_get_type_string(call.body));
                g_variant_unref(call.body);
                return NULL;
        }
        return call.body;
}
