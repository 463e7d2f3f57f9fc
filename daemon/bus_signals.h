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
/* bc is gone: neither its Ping nor its replays' holds one any longer. */
void bus_pings_end(BusClient *bc);

/* The bus is not reading our messages: hold back what can wait (data: a BusClient). */
bool bus_congested(void *data);
/* Whether an answer to a Ping confirms reading: the client itself sent it. */
bool bus_ping_confirms(const BusClient *bc, sd_bus_message *reply);
/* Sends bc's client a Peer.Ping (no timeout), its slot in *slot, its answer to
 * callback(reply, userdata); one of its uid's PINGS_PER_USER_MAX in flight:
 * -EAGAIN when they all are. (The replays' Pings, bus_durable.c.) */
int bus_ping_send(BusClient *bc, sd_bus_slot **slot, sd_bus_message_handler_t callback, void *userdata);
/* The Ping of *slot was answered, or bc goes: its slot freed, its uid's count down. */
void bus_ping_slot_end(BusClient *bc, sd_bus_slot **slot);
