/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus_signals - a client's records as signals, and what counts as read
 */

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "bus.h"
#include "delivery.h"

/* The transport of a client's queue while its records go as signals (data: its BusClient). */
extern const DeliveryOps bus_delivery_ops;

/* A signal of ours named member, to c only if unicast. */
int bus_signal_new(DbusIface *d, Client *c, const char *member, bool unicast, sd_bus_message **ret);

/* bc's Ping is answered, or bc is gone: it no longer holds one of its uid's Pings. */
void bus_ping_end(BusClient *bc);
