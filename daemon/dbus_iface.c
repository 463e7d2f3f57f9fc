/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dbus_iface - org.example.Inotify on the bus
 *
 * The object: its vtable (the methods of bus_methods.c, bus_stream.c and
 * bus_durable.c; the signals; bus_properties.c's properties), publishing it
 * and taking the name, and the bus layer's life. bus.h says which file of
 * the layer does what.
 */

#include <errno.h>
#include <stdlib.h>

#include "bus.h"
#include "bus_caller.h"
#include "bus_durable.h"
#include "bus_methods.h"
#include "bus_properties.h"
#include "bus_signals.h"
#include "bus_stream.h"
#include "dbus_iface.h"
#include "durable.h"
#include "error.h"
#include "log.h"
#include "macro.h"
#include "watchd-api.h"

/* clang-format off */
static const sd_bus_vtable watchd_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("AddWatch",
                                SD_BUS_ARGS("s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                bus_method_add_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddWatchFd",
                                SD_BUS_ARGS("h", fd, "u", mask, "u", flags),
                                SD_BUS_RESULT("u", id),
                                bus_method_add_watch_fd,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveWatch",
                                SD_BUS_ARGS("u", id),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_watch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListWatches",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(usuu)", watches),
                                bus_method_list_watches,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetStats",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a{sv}", stats),
                                bus_method_get_stats,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListClients",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(suuuu)", clients),
                                bus_method_list_clients,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenStream",
                                SD_BUS_ARGS("a{sv}", options),
                                SD_BUS_RESULT("h", stream),
                                bus_method_open_stream,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateDurable",
                                SD_BUS_ARGS("s", name, "s", path, "u", mask, "u", flags),
                                SD_BUS_RESULT("s", journal, "t", cursor),
                                method_create_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResumeDurable",
                                SD_BUS_ARGS("s", name, "s", journal, "t", cursor),
                                SD_BUS_RESULT("s", journal),
                                method_resume_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveDurable",
                                SD_BUS_ARGS("s", name),
                                SD_BUS_NO_RESULT,
                                method_remove_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListDurable",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssuustttbs)", subscriptions),
                                method_list_durable,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Events", SD_BUS_ARGS("a(uuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("EventsPacked", SD_BUS_ARGS("ay", frames), 0),
        SD_BUS_SIGNAL_WITH_ARGS("Overflow", SD_BUS_ARGS("au", ids), 0),
        SD_BUS_SIGNAL_WITH_ARGS("WatchRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableEvents", SD_BUS_ARGS("s", name, "a(tuuss)", events), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableRescan", SD_BUS_ARGS("s", name, "t", id, "s", reason, "a(su)", directories), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableCaughtUp", SD_BUS_ARGS("s", name, "t", id), 0),
        SD_BUS_SIGNAL_WITH_ARGS("DurableStopped", SD_BUS_ARGS("s", name, "s", reason), 0),
        SD_BUS_PROPERTY("Version", "s", bus_property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", bus_property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Capabilities", "as", bus_property_get_capabilities, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_VTABLE_END,
};
/* clang-format on */

void dbus_iface_reloaded(DbusIface *d) {
        bus_properties_reloaded(d);
}

DbusIface *dbus_iface_free(DbusIface *d) {
        if (!d)
                return NULL;
        /* The durable subscriptions went first (watchd.c): their owners, their journals closed cleanly.
         * The clients stay the manager's; what the bus held for them goes. */
        bus_pending_adds_end(d);
        while (d->clients) {
                BusClient *bc = d->clients;
                Client *c = bc->client;

                bus_pings_end(bc);
                bus_client_free(bc);
                delivery_queue_set_transport(&c->queue, NULL, NULL);
        }
        sd_bus_slot_unref(d->vtable_slot);
        sd_bus_unref(d->bus);
        sd_event_unref(d->event);
        if (d->pings)
                g_hash_table_destroy(d->pings);
        free(d);
        return NULL;
}

int dbus_iface_new(Manager *m, sd_bus *bus, sd_event *event, DbusIface **ret) {
        DbusIface *d;

        d = calloc(1, sizeof(DbusIface));
        if (!d)
                return log_error_errno(-ENOMEM, "Out of memory.");
        d->manager = m;
        d->bus = sd_bus_ref(bus);
        d->event = sd_event_ref(event);
        d->pings = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        *ret = d;
        return 0;
}

int dbus_iface_start(DbusIface *d, Durable *durable) {
        sd_bus *bus = d->bus;
        int r;

        d->durable = durable;
        r = sd_bus_add_object_vtable(bus, &d->vtable_slot, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, watchd_vtable, d);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s: %m", WATCHD_OBJECT_PATH);

        r = sd_bus_request_name(bus, WATCHD_BUS_NAME, 0);
        if (r == -EEXIST)
                return log_error_errno(r, "The name %s is already taken: is another watchd running?", WATCHD_BUS_NAME);
        if (r < 0)
                return log_error_errno(r, "Failed to take the name %s: %m", WATCHD_BUS_NAME);

        r = sd_bus_attach_event(bus, d->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        return 0;
}
