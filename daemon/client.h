/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * client - an owner of subscriptions
 *
 * Today a bus connection (bus_methods.c makes one at its first AddWatch and
 * ends it when the connection goes), but nothing here knows that: a client
 * has a name for logs, the credentials everything is opened with, an
 * account its watches are charged to, its subscriptions, and a delivery
 * queue whose transport the layer above registers
 * (delivery_queue_set_transport()). A client of another kind (a stream
 * socket, a journal on disk) is the same object with another transport.
 */

#include <sys/types.h>

#include "access.h"
#include "accounting.h"
#include "delivery.h"
#include "hold.h"
#include "list.h"
#include "watch_table.h"

struct Client {
        char *name;      /* for logs, and the bus layer's key: ":1.42" */
        Caller caller;   /* as the bus reported it at the first call (owns gids) */
        pid_t pid;       /* the same; 0 if it did not say (ListClients shows it) */
        Account account; /* one watch per link of its subscriptions */
        LIST_HEAD(Subscription, subscriptions);
        unsigned n_subscriptions;
        DeliveryQueue queue; /* its records, to its transport */
        Delivery *delivery;
        ClientHold *hold; /* its records wait for a probe (hold.h); NULL: they go to its queue */
};

/* Copies name and caller; opens its account (-WATCHD_E_USER_CLIENTS: the limit). */
int client_new(Accounting *a, Delivery *d, const char *name, const Caller *caller, Client **ret);
/* Frees the client and drops its queue; its subscriptions must have been ended. */
Client *client_free(Client *c);

void client_link_subscription(Client *c, Subscription *s);
void client_unlink_subscription(Client *c, Subscription *s);

/*
 * The one way into a subscription's queue: whatever found a change (the
 * kernel's records in events.c, a tree's scan in tree.c, a poll in
 * remote.c) or decided a notice, the record is queued for s's owner here.
 * What s asks for, ONESHOT and the rest are decided before (events_deliver()).
 */
/* An event: mask (and the name in the directory at dir, or dir itself if name is NULL). */
void client_queue_event(Subscription *s, uint32_t mask, uint32_t cookie, const char *dir, const char *name,
                        size_t name_len, uint64_t now_usec);
/* WatchRemoved(s's id, reason): the daemon ended s (reason: a static string, WATCHD_REASON_*). */
void client_queue_removed(Subscription *s, const char *reason, uint64_t now_usec);
/* c's records from now on wait for h (hold.h), until it ends. */
void client_hold(Client *c, Hold *h);
/* Overflow naming s: it lost records, or part of what it watches is not followed. */
void client_queue_lost(Subscription *s);
/* One Overflow naming every subscription of c (the kernel lost records, or all of c's were on a stream that went). */
void client_queue_lost_all(Client *c);
