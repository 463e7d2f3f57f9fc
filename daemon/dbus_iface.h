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

#include "durable.h"
#include "macro.h"
#include "manager.h"
#include "watchd-api.h"

typedef struct DbusIface DbusIface;

/* The bus layer for m on bus, its timers on event; nothing published yet. */
int dbus_iface_new(Manager *m, sd_bus *bus, sd_event *event, DbusIface **ret);
/* Publishes the object (its durable methods served by durable), takes the
 * name and attaches the bus to the loop. Logs its failures. */
int dbus_iface_start(DbusIface *d, Durable *durable);
/* The manager's config was reloaded: properties that follow it are invalidated. */
void dbus_iface_reloaded(DbusIface *d);
/* After the durable subscriptions, before the manager: what the bus holds for its clients goes. */
DbusIface *dbus_iface_free(DbusIface *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DbusIface *, dbus_iface_free);
