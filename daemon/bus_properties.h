/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_properties - Version, Backend and Capabilities, for dbus_iface.c's vtable (userdata: the DbusIface)
 */

#include <systemd/sd-bus.h>

#include "bus.h"

int bus_property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error);
int bus_property_get_capabilities(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error);

/* The config was reloaded: Capabilities may have changed (PropertiesChanged). */
void bus_properties_reloaded(DbusIface *d);
