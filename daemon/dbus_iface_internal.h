/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * dbus_iface_internal - what the bus layer's files share: the bus object,
 * a client's bus state (BusClient), and the helpers every handler uses to
 * read a call, name its caller and answer with an error. dbus_iface.c
 * defines them; bus_durable.c (the durable subscriptions' handlers and
 * their transport) uses them. Nothing outside the bus layer includes this.
 */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "client.h"
#include "durable.h"
#include "manager.h"
#include "stream_loop.h"

typedef struct DbusIface DbusIface;     /* dbus_iface.h */

struct DbusIface {
        Manager *manager;
        sd_bus *bus;
        sd_event *event;
        sd_bus_slot *vtable_slot;
        bool stalled;                   /* the bus was congested at the last look */
        GHashTable *pings;              /* uid -> Peer.Pings in flight to its clients (see bus_ask_confirm()) */
        unsigned n_streams;             /* clients reading a stream (OpenStream) */
        Durable *durable;               /* durable subscriptions (durable.h) */
};

/* A client on the bus: its connection's tracking and its outstanding Ping;
 * the transport data of its delivery queue. */
typedef struct BusClient {
        DbusIface *iface;
        Client *client;
        sd_bus_track *track;            /* ends the client when its connection goes */
        sd_bus_slot *ping;              /* the outstanding Peer.Ping, or NULL */
        /* After an answer that confirmed nothing (the bus's error), or while
         * its uid has PINGS_PER_USER_MAX in flight, the next Ping waits on this
         * timer, ping_retry_usec, doubling each time. */
        sd_event_source *ping_retry;
        uint64_t ping_retry_usec;
        bool ping_refusal_logged;       /* the bus's refusal is logged once per client */
        /* Its record stream (OpenStream), or NULL: its records go as signals.
         * The queue's transport data stays this BusClient either way. */
        StreamLoop *stream;
        bool stream_durable;            /* the stream takes its durable frames too (option "durable") */

        /* The DurableEvents signal being built for it (durable.h's pump), or
         * the name its durable frames are for. */
        sd_bus_message *durable_msg;
        char *durable_name;
        size_t durable_n, durable_size;
        /* The Ping that confirms its replays' signals (bus_durable.c), and
         * when the next may go after an answer that confirmed nothing. */
        sd_bus_slot *durable_ping;
        uint64_t durable_ping_retry_usec, durable_ping_not_before;
} BusClient;

static inline void message_unrefp(sd_bus_message **m) {
        sd_bus_message_unref(*m);
}

/* The D-Bus error for a -errno or -WATCHD_E_* r about what ("'path'"), in error; returns its -errno. */
int error_for(DbusIface *d, int r, const char *what, sd_bus_error *error);
/* InvalidArgs for a mask or flags watchd does not know. */
int validate(uint32_t mask, uint32_t flags, sd_bus_error *error);
/* "'path'", or "the descriptor" for NULL (the caller frees). */
char *what_of(const char *path);
/* Bytes of s to quote in a message, at most max, not cutting a UTF-8 character. */
int quote_len(const char *s, size_t max);
#define QUOTE_MAX 200
/* A path from a call as bytes (escaped with PATH_ESCAPED or not), absolute and short enough. */
int path_from_call(const char *sent, bool escaped, char **ret, sd_bus_error *error);
/* The caller's Client, made (credentials from the bus) and tracked at its first call. */
int client_for_call(DbusIface *d, sd_bus_message *msg, Client **ret, sd_bus_error *error);
/* The sender's uid as the bus reports it (never from /proc), or -EPERM. */
int sender_uid(sd_bus_message *msg, uid_t *ret);
/* A signal of ours, to c only if unicast. */
int signal_new(DbusIface *d, Client *c, const char *member, bool unicast, sd_bus_message **ret);
/* The bus is not reading our messages: hold back what can wait. */
bool bus_congested(void *data);

/* Sends bc's client a Peer.Ping (no timeout), its slot in *slot, its answer to
 * callback(reply, userdata); one of its uid's PINGS_PER_USER_MAX in flight:
 * -EAGAIN when they all are. */
int bus_ping(BusClient *bc, sd_bus_slot **slot, sd_bus_message_handler_t callback, void *userdata);
/* The Ping of *slot was answered, or bc goes: its slot freed, its uid's count down. */
void bus_ping_end(BusClient *bc, sd_bus_slot **slot);
/* Whether an answer to a Ping confirms reading: the client itself sent it. */
bool ping_confirms(const BusClient *bc, sd_bus_message *reply);
