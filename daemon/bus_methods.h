/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_methods - the clients on the bus, and the methods on their subscriptions
 *
 * AddWatch, AddWatchFd, RemoveWatch, ListWatches, GetStats and ListClients, for
 * dbus_iface.c's vtable (userdata: the DbusIface); and each connection's
 * Client: made at its first call, tracked, ended when it leaves the bus.
 */

#include <systemd/sd-bus.h>

#include "bus.h"

/* The caller's Client: found, or made with its credentials from the bus
 * (AccessDenied if the bus does not say) and tracked so that it ends when
 * its connection does. Return: 0, or an error (set in error, or -ENOMEM). */
int bus_client_for_call(DbusIface *d, sd_bus_message *msg, Client **ret, sd_bus_error *error);
/* c's connection is gone: its Ping, its durable attachments, its subscriptions, its BusClient. */
void bus_client_end(DbusIface *d, Client *c);
/* What the bus holds for a client (its Client stays the manager's). */
BusClient *bus_client_free(BusClient *bc);
/* The daemon exits: every AddWatch still waiting for its walk, its pending
 * path's look-up or its first snapshots is let go of (its walk and its waiter told nothing more), before
 * the manager ends them. Its answer is tried; sd-bus has closed the
 * connection at the loop's exit, so the caller has NoReply from the bus. */
void bus_pending_adds_end(DbusIface *d);

int bus_method_add_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_method_add_watch_fd(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_method_remove_watch(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_method_list_watches(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_method_get_stats(sd_bus_message *msg, void *userdata, sd_bus_error *error);
int bus_method_list_clients(sd_bus_message *msg, void *userdata, sd_bus_error *error);
