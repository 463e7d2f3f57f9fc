/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * client - one bus connection that holds subscriptions
 *
 * A connection becomes a client at its first AddWatch and stays one until it
 * disconnects (its bus name is tracked by dbus_iface.c with sd_bus_track).
 * The client owns its delivery queue (a MovePairer) and the set of
 * subscription ids whose events it lost, to be named in its next Overflow.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "access.h"
#include "move_pairer.h"
#include "watch_table.h"

struct Manager;

typedef struct Client {
        struct Manager *manager;
        char *name;                     /* unique bus name, ":1.42" */
        uid_t uid;
        Caller caller;                  /* as the bus reported it at the first call (owns gids) */
        sd_bus_track *track;            /* set and released by dbus_iface.c */

        Subscription *subscriptions;    /* list through owner_next */
        unsigned n_subscriptions;
        unsigned n_watches;             /* links of its subscriptions: what the limits count */

        MovePairer queue;               /* records not yet sent, kernel order */
        uint32_t *lost_ids;             /* ids for the next Overflow, unsorted, may repeat */
        size_t n_lost_ids, cap_lost_ids;
        bool overflow_queued;           /* a RECORD_OVERFLOW is in the queue */
        size_t n_notices;               /* RECORD_OVERFLOW and RECORD_REMOVED in the queue: they are never held */

        /* Flow control (dbus_iface.c, ping_confirms()): records sent in Events
         * signals, and how many of them the client has read, known when the
         * client itself answers a Peer.Ping sent after them. The bus would
         * otherwise buffer without bound for a client that stops reading, or
         * drop its signals without a word. */
        uint64_t sent, read;
        uint64_t ping_at;               /* sent, when the outstanding Ping went out */
        sd_bus_slot *ping;              /* the outstanding Ping, or NULL */
        /* Its last Ping was answered by the client itself. Records are held
         * behind a Ping in flight only for such a client: one that does not
         * answer would otherwise hold them for an answer that is not coming. */
        bool answers_ping;
        /* After an answer that confirmed nothing (the bus's error), the next
         * Ping waits on this timer, ping_retry_usec, doubling each time. */
        sd_event_source *ping_retry;
        uint64_t ping_retry_usec;
        bool ping_refusal_logged;       /* the bus's refusal is logged once per client */
        bool dirty;                     /* on the manager's list of clients to flush */

        /* Its share of the daemon's Stats, for its uid's own GetStats keys. */
        uint64_t events_dropped;        /* records dropped from its backlog */
        uint64_t overflows;             /* Overflow signals sent to it */
} Client;

/* Copies caller. */
int client_new(const char *name, const Caller *caller, uint64_t pair_timeout_usec, size_t pair_max_distance,
               Client **ret);
/* Frees the client and its queue; its subscriptions must have been ended. */
Client *client_free(Client *c);

void client_link_subscription(Client *c, Subscription *s);
void client_unlink_subscription(Client *c, Subscription *s);

/*
 * Queues rec (ownership taken). If the queue already holds max_pending
 * records, the client's queued events are dropped instead and an Overflow
 * naming their subscriptions (and rec's) is queued.
 * Return: 0 queued, > 0 the backlog was dropped (how many events were lost), -ENOMEM.
 */
int client_enqueue(Client *c, Record *rec, size_t max_pending);

/* Queues an Overflow naming subscription id. */
int client_queue_overflow(Client *c, uint32_t id);

/* Queues an Overflow naming every subscription of the client (the kernel lost events). */
int client_queue_overflow_all(Client *c, uint64_t now_usec);

/* Takes the ids for an Overflow: sorted, without repeats (caller frees). */
uint32_t *client_take_lost_ids(Client *c, size_t *ret_n);
