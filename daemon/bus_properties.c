/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bus_properties - Version, Backend and Capabilities
 *
 * Version and Backend never change while the daemon runs; Capabilities
 * follows [poll] and is announced again after a reload.
 */

#include "bus.h"
#include "bus_properties.h"
#include "log.h"
#include "macro.h"
#include "watchd-api.h"

int bus_property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", WATCHD_VERSION);
}

int bus_property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        DbusIface *d = userdata;
        return sd_bus_message_append(reply, "s", backend_name(manager_get_backend(d->manager)));
}

/* What this daemon offers beyond the first API, a word each (the XML and
 * watchd(8) list them; tests/dbus/test-glib-semantics.c checks that the three
 * agree). libwatchd reads it when the daemon takes the name. */
int bus_property_get_capabilities(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        static const char *const words[] = {
                WATCHD_CAP_REPORT_APPEARANCE,     WATCHD_CAP_PERSISTENT,
                WATCHD_CAP_PAIR_PER_SUBSCRIPTION, WATCHD_CAP_STREAM,
                WATCHD_CAP_DURABLE_STREAM,        WATCHD_CAP_PACKED_EVENTS,
        };
        DbusIface *d = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "s");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(words); i++)
                r = sd_bus_message_append(reply, "s", words[i]);
        /* Follows [poll], hence not CONST: a reload may change it. */
        if (r >= 0 && config_polls_remote(manager_get_config(d->manager)))
                r = sd_bus_message_append(reply, "s", WATCHD_CAP_REMOTE_POLLING);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

void bus_properties_reloaded(DbusIface *d) {
        int r;

        /* Capabilities says whether remote file systems are polled, which [poll] decides. */
        r = sd_bus_emit_properties_changed(d->bus, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "Capabilities", NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to announce that Capabilities changed, ignoring: %m");
}
