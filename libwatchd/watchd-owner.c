/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * watchd-owner - the daemon behind the bus name: who, what it offers, restarts (see watchd-owner.h)
 */

#include "watchd-owner.h"
#include "watchd-receive.h"
#include "watchd-start.h"

static void core_on_props(gpointer userdata, const char *sender, GVariant *body, const GError *error) {
        Core *core = userdata;
        g_autoptr(GVariant) dict = NULL, version = NULL, caps = NULL;

        g_mutex_lock(&core->lock);
        core->props_pending = FALSE;
        if (body && g_variant_is_of_type(body, G_VARIANT_TYPE("(a{sv})")) && g_strcmp0(sender, core->owner) == 0) {
                dict = g_variant_get_child_value(body, 0);
                version = g_variant_lookup_value(dict, "Version", G_VARIANT_TYPE_STRING);
                caps = g_variant_lookup_value(dict, "Capabilities", G_VARIANT_TYPE_STRING_ARRAY);
                g_free(core->version);
                core->version = version ? g_variant_dup_string(version, NULL) : NULL;
                core->caps = WATCHD_CAPABILITY_NONE;
                for (gsize i = 0; caps && i < g_variant_n_children(caps); i++) {
                        const char *name;

                        g_variant_get_child(caps, i, "&s", &name);
                        if (g_str_equal(name, "report-appearance"))
                                core->caps |= WATCHD_CAPABILITY_REPORT_APPEARANCE;
                        else if (g_str_equal(name, "persistent"))
                                core->caps |= WATCHD_CAPABILITY_PERSISTENT;
                        else if (g_str_equal(name, "pair-per-subscription"))
                                core->caps |= WATCHD_CAPABILITY_PAIR_PER_SUBSCRIPTION;
                        else if (g_str_equal(name, "remote-polling"))
                                core->caps |= WATCHD_CAPABILITY_REMOTE_POLLING;
                        else if (g_str_equal(name, "stream"))
                                core->caps |= WATCHD_CAPABILITY_STREAM;
                        else if (g_str_equal(name, "durable-stream"))
                                core->caps |= WATCHD_CAPABILITY_DURABLE_STREAM;
                        else if (g_str_equal(name, "packed-events"))
                                core->caps |= WATCHD_CAPABILITY_PACKED_EVENTS;
                }
                core_open_stream(core);
        }
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        core_unref(core);
}

/* Lock held: a new daemon took the name; add every waiting subscription again. */
static void core_readd_all(Core *core) {
        g_autoptr(GPtrArray) waiting = g_ptr_array_new();
        GHashTableIter it;
        gpointer key;

        g_hash_table_iter_init(&it, core->live);
        while (g_hash_table_iter_next(&it, &key, NULL))
                if (PRIV(key)->state == SUB_WAITING)
                        g_ptr_array_add(waiting, key);
        core->readds_pending = 0;
        for (guint i = 0; i < waiting->len; i++)
                core_readd_one(core, waiting->pdata[i]);
        if (core->readds_pending == 0) {
                core->gone = FALSE;
                core_queue_notice(core, ITEM_DAEMON_RESTARTED, NULL, 0, NULL, NULL);
        }
}

static void core_on_owner_changed(gpointer userdata, const char *owner) {
        Core *core = userdata;
        g_autofree char *old = NULL;
        WatchdStreamReader *stream = NULL;

        g_mutex_lock(&core->lock);
        core->owner_known = TRUE;
        if (g_strcmp0(core->owner, owner) == 0) {
                g_cond_broadcast(&core->cond);
                g_mutex_unlock(&core->lock);
                return;
        }
        old = g_steal_pointer(&core->owner);
        core->owner = g_strdup(owner);
        core->generation++;
        if (old) {
                GHashTableIter it;
                gpointer key;

                /* Its ids mean nothing to the next one. Subscriptions being
                 * started get an error from their call. */
                g_hash_table_iter_init(&it, core->live);
                while (g_hash_table_iter_next(&it, &key, NULL))
                        if (PRIV(key)->state == SUB_ACTIVE) {
                                core_forget_id(core, key);
                                PRIV(key)->state = SUB_WAITING;
                        }
                core_forget_ended(core);
                (void) core_drop_unclaimed(core, NULL);
                core->unclaimed_orphans = FALSE;
                /* Held for its answer to ListWatches: lost with it (the
                 * subscriptions hear RESTARTED when they are back). */
                core_drop_held(core);
                core->warned = 0;
                stream = core_steal_stream(core);
                core->gone = TRUE;
                core->readds_pending = 0;
                core_queue_notice(core, ITEM_DAEMON_VANISHED, NULL, 0, NULL, NULL);
        }
        if (owner && core->bus) {
                core->props_pending = TRUE;
                if (!watchd_bus_call(core->bus, WATCHD_BUS_NAME, "org.freedesktop.DBus.Properties", "GetAll",
                                     g_variant_new("(s)", WATCHD_INTERFACE), NULL, FALSE, core_on_props, core_ref(core),
                                     NULL)) {
                        core->props_pending = FALSE;
                        core_unref(core);
                }
                if (core->gone)
                        core_readd_all(core);
                core_queue_notice(core, ITEM_DAEMON_APPEARED, NULL, 0, NULL, NULL);
        }
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
}

static void core_on_closed(gpointer userdata, const GError *error) {
        Core *core = userdata;
        WatchdStreamReader *stream;

        g_mutex_lock(&core->lock);
        if (!core->closed) {
                core->closed = TRUE;
                core_queue_notice(core, ITEM_CLOSED, NULL, 0, NULL, error);
        }
        g_free(g_steal_pointer(&core->owner));
        stream = core_steal_stream(core);
        g_cond_broadcast(&core->cond);
        g_mutex_unlock(&core->lock);
        watchd_stream_reader_free(stream);
}

const WatchdBusCallbacks core_bus_callbacks = {
        .owner_changed = core_on_owner_changed,
        .signal = core_on_signal,
        .closed = core_on_closed,
};
