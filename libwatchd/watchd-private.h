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

struct StreamFrame;

/* The state a subscription is in; under the client's lock. */
typedef enum SubState {
        SUB_NEW,      /* made, not started (or its start failed) */
        SUB_STARTING, /* AddWatch sent, no answer yet */
        SUB_ACTIVE,   /* watchd holds it under id */
        SUB_WAITING,  /* watchd left; added again when it comes back */
        SUB_ENDED,    /* cancelled or removed: nothing more */
} SubState;

/* The parts of a subscription the client's internals read and write, under
 * the client's lock (watchd-core.h); the rest of the object is
 * watchd-subscription.c's. */
typedef struct SubPrivate {
        char *canonical;        /* path as watchd spells it in records ("//a/" -> "/a") */
        char *current;          /* the same as watchd holds it now (it follows renames); the core's */
        gpointer last_overflow; /* its Item of an overflow with nothing of it queued after, or NULL */
        SubState state;
        guint32 id;      /* 0 unless SUB_ACTIVE */
        guint32 last_id; /* the id of its last AddWatch, kept when it ends */
        gboolean held;   /* its events wait until watchd_client_add_watch() has returned it */
        gboolean cancelled;
        gpointer start; /* the StartOp in flight */
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

/* watchd-subscription.c: a path as watchd writes it in records ("//a/" ->
 * "/a"), for the subscription and watchd-snapshot.c. */
char *watchd_canonical_path(const char *path);

/* watchd-subscription.c, for watchd-client.c: emit a signal (client's context). */
void watchd_subscription_emit_events(WatchdSubscription *sub, GPtrArray *events);
void watchd_subscription_emit_overflow(WatchdSubscription *sub, WatchdOverflowReason reason);
void watchd_subscription_emit_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail,
                                      const GError *error);

/* watchd-event.c: an event of a durable subscription, with its id in the journal. */
WatchdEvent *watchd_event_new_with_id(guint64 id, WatchdEventMask mask, guint32 cookie, const char *path,
                                      const char *new_path);

/*
 * watchd-durable-router.c, for the core (watchd-core.c makes one a client,
 * watchd-receive.c feeds it): a client's WatchdDurables by name, for the
 * durable frames of its record stream. It calls nothing of the core, so
 * it sits below it (WatchdDurable, in watchd-durable.c, is above the
 * client). Reference counted; any thread. _frames() takes the durable
 * frames of one read of the stream (its reader's thread) and returns
 * whether the reader may read on; a reader told no waits until something
 * is written to the eventfd given with _set_stream() (a dup, taken; -1: no
 * stream).
 */
typedef struct WatchdDurableRouter WatchdDurableRouter;
WatchdDurableRouter *watchd_durable_router_new(void);
WatchdDurableRouter *watchd_durable_router_ref(WatchdDurableRouter *r);
void watchd_durable_router_unref(WatchdDurableRouter *r);
void watchd_durable_router_set_stream(WatchdDurableRouter *r, int resume_fd);
gboolean watchd_durable_router_frames(WatchdDurableRouter *r, const struct StreamFrame *frames, guint n);

/* watchd-client.c, for watchd-durable.c: the client's router (a new reference). */
WatchdDurableRouter *watchd_client_get_durable_router(WatchdClient *client);
