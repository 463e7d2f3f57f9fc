/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * bus - the bus layer's own state, shared by its files
 *
 * The bus layer is dbus_iface.c (the object, its vtable, its life) and the
 * files it calls: bus_caller.c (credentials, argument checks, errors),
 * bus_methods.c (the clients on the bus and the methods on subscriptions),
 * bus_properties.c, bus_signals.c (the signal transport and its flow
 * control), bus_stream.c (the stream transport), bus_durable.c (the
 * durable subscriptions' methods and the transports of their replays). They share the DbusIface
 * and, per client, a BusClient: the transport data of its delivery queue.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "client.h"
#include "durable.h"
#include "list.h"
#include "manager.h"
#include "stream_loop.h"

typedef struct DbusIface DbusIface;
typedef struct BusClient BusClient;
typedef struct PendingAdd PendingAdd;

static inline void message_unrefp(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}

struct DbusIface {
        Manager *manager;
        sd_bus *bus;
        sd_event *event;
        sd_bus_slot *vtable_slot;
        bool stalled;                        /* the bus was congested at the last look */
        GHashTable *pings;                   /* uid -> Peer.Pings in flight to its clients (see bus_ask_confirm()) */
        unsigned n_streams;                  /* clients reading a stream (OpenStream) */
        Durable *durable;                    /* durable subscriptions (durable.h) */
        LIST_HEAD(BusClient, clients);       /* the manager's clients that are bus connections */
        LIST_HEAD(PendingAdd, pending_adds); /* AddWatch calls answered later (bus_methods.c) */
};

/* A client on the bus: its connection's tracking and its outstanding Ping;
 * the transport data of its delivery queue. */
struct BusClient {
        DbusIface *iface;
        Client *client;
        sd_bus_track *track; /* ends the client when its connection goes */
        sd_bus_slot *ping;   /* the outstanding Peer.Ping, or NULL */
        /* After an answer that confirmed nothing (the bus's error), or while
         * its uid has PINGS_PER_USER_MAX in flight, the next Ping waits on this
         * timer, ping_retry_usec, doubling each time. */
        sd_event_source *ping_retry;
        uint64_t ping_retry_usec;
        bool ping_refusal_logged; /* the bus's refusal is logged once per client */
        /* Its record stream (OpenStream), or NULL: its records go as signals.
         * The queue's transport data stays this BusClient either way. */
        StreamLoop *stream;
        bool stream_durable; /* the stream takes its durable frames too (option "durable") */

        /* The DurableEvents signal being built for it (durable.h's pump), or
         * the name its durable frames are for. */
        sd_bus_message *durable_msg;
        char *durable_name;
        size_t durable_n, durable_size;
        /* The Ping that confirms its replays' signals (bus_durable.c), and
         * when the next may go after an answer that confirmed nothing. */
        sd_bus_slot *durable_ping;
        uint64_t durable_ping_retry_usec, durable_ping_not_before;

        LIST_FIELDS(BusClient, clients);
};
