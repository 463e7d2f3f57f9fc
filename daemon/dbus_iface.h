/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * dbus_iface - org.example.Inotify on the bus: the vtable, its handlers,
 * and the signals
 *
 * The only file that speaks D-Bus. Handlers read, validate, authorize (the
 * caller's credentials from the bus), call the manager, and reply; errors
 * become D-Bus errors only here. It never touches the kernel fd.
 */

#include <systemd/sd-bus.h>

#include "manager.h"
#include "watchd-api.h"

/* Publishes the object on bus, takes the name and attaches the bus to the manager's loop. */
int dbus_iface_attach(Manager *m, sd_bus *bus);

/* Sends c the records its queue lets go at now_usec. */
void dbus_iface_flush_client(Manager *m, Client *c, uint64_t now_usec);
