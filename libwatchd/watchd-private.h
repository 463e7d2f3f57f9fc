/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * watchd-private - what the library's files share and programs do not see
 */

#include <string.h>

#ifndef WATCHD_COMPILATION
#define WATCHD_COMPILATION
#endif
#include "watchd-types.h"
#include "watchd-enum-types.h"
#include "watchd-event.h"
#include "watchd-client.h"
#include "watchd-subscription.h"

/* The state a subscription is in; under the client's lock. */
typedef enum SubState {
        SUB_NEW,                /* made, not started (or its start failed) */
        SUB_STARTING,           /* AddWatch sent, no answer yet */
        SUB_ACTIVE,             /* watchd holds it under id */
        SUB_WAITING,            /* watchd left; added again when it comes back */
        SUB_ENDED,              /* cancelled or removed: nothing more */
} SubState;

/* The parts of a subscription the client's internals read and write, under
 * the client's lock (watchd-core.h); the rest of the object is
 * watchd-subscription.c's. */
typedef struct SubPrivate {
        char *canonical;        /* path as watchd spells it in records ("//a/" -> "/a") */
        char *current;          /* the same as watchd holds it now (it follows renames); the core's */
        gpointer last_overflow; /* its Item of an overflow with nothing of it queued after, or NULL */
        SubState state;
        guint32 id;             /* 0 unless SUB_ACTIVE */
        guint32 last_id;        /* the id of its last AddWatch, kept when it ends */
        gboolean held;          /* its events wait until watchd_client_add_watch() has returned it */
        gboolean cancelled;
        gpointer start;         /* the StartOp in flight */
} SubPrivate;

/* The object (watchd-subscription.c). The client's internals read client,
 * path, mask and flags, which never change once it is made, and priv under
 * the client's lock; they call none of its functions. */
struct _WatchdSubscription {
        GObject parent_instance;
        WatchdClient *client;
        char *path;
        WatchdEventMask mask;
        WatchdWatchFlags flags;
        SubPrivate priv;
};

#define PRIV(sub) (&((WatchdSubscription *) (sub))->priv)

/* watchd-subscription.c, for watchd-client.c: emit a signal (client's context). */
void watchd_subscription_emit_events(WatchdSubscription *sub, GPtrArray *events);
void watchd_subscription_emit_overflow(WatchdSubscription *sub, WatchdOverflowReason reason);
void watchd_subscription_emit_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                                      const GError *error);
