/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * dbus_iface - org.example.Inotify on the bus: the vtable, its handlers,
 * and the signals
 *
 * The only file that speaks D-Bus. Handlers read, validate, authorize (the
 * caller's credentials from the bus), call the manager, and reply; errors
 * become D-Bus errors only here (error_for()). For each client it registers
 * the transport of its delivery queue: building and sending Events,
 * Overflow and WatchRemoved signals, the Peer.Ping that confirms reading,
 * and the bus's congestion. It never touches the kernel fd.
 */

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "manager.h"
#include "watchd-api.h"

typedef struct DbusIface DbusIface;

/* Loads the durable subscriptions in state_dir (NULL: none), publishes the
 * object on bus for m, takes the name and attaches the bus to event. Logs its failures. */
int dbus_iface_new(Manager *m, sd_bus *bus, sd_event *event, const char *state_dir, DbusIface **ret);
/* The manager's config was reloaded: properties that follow it are invalidated. */
void dbus_iface_reloaded(DbusIface *d);
/* The durable subscriptions (for a reload). */
struct Durable *dbus_iface_durable(DbusIface *d);
/* Before the manager: what the bus holds for its clients goes. */
DbusIface *dbus_iface_free(DbusIface *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DbusIface *, dbus_iface_free);
