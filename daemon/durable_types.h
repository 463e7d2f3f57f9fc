/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * durable_types - the words of durable.h that its attachments' pump
 * (durable_replay.c) needs too: the Durable (opaque here), how an attached
 * client is sent its records (DurableOps) and the reasons it is told its
 * replay stopped. durable.h includes it; it includes no other header of
 * the durable subscriptions.
 */

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "journal.h"
#include "watchd-api.h"

typedef struct Durable Durable;

/*
 * How an attached client is sent its records: the layer above gives one at
 * each resume (with its data, passed back to each call), and an attachment
 * keeps it. Strings of e are valid during the call only. A call that fails
 * ends the attachment ("error": the client resumes again from its cursor).
 */
typedef struct DurableOps {
        /* A batch of events for subscription name: begun, each event added, ended (sent). */
        int (*events_begin)(Client *c, const char *name, void *data);
        int (*events_add)(Client *c, const JournalEntry *e, void *data);
        int (*events_end)(Client *c, void *data);
        /* A gap: rescan its scope (whole, or e->scope). */
        int (*rescan)(Client *c, const char *name, const JournalEntry *e, void *data);
        /* Everything after the cursor was sent: live from here. */
        int (*caught_up)(Client *c, const char *name, uint64_t id, void *data);
        /* Nothing more comes for name: it was removed, resumed by another client, or could not be read. */
        int (*stopped)(Client *c, const char *name, const char *reason, void *data);

        /* Flow control. Optional: the transport takes nothing now; with
         * wakes_itself its own event brings a flush when it does again (a
         * socket writable), else the pump tries again after
         * DELIVERY_RETRY_USEC. */
        bool (*congested)(Client *c, void *data);
        bool wakes_itself;
        /* Asks the client to confirm it has read what was sent so far.
         * Return: 0 asked (the answer is durable_confirmed()), 1 read
         * already (the transport bounds what is unread itself: a socket's
         * buffer), -EAGAIN not now (asked again at a later turn), -errno.
         * NULL: as 1. */
        int (*ask_confirm)(Client *c, void *data);
} DurableOps;

#define DURABLE_STOPPED_REMOVED   WATCHD_DURABLE_STOPPED_REMOVED
#define DURABLE_STOPPED_ELSEWHERE WATCHD_DURABLE_STOPPED_ELSEWHERE
#define DURABLE_STOPPED_ERROR     WATCHD_DURABLE_STOPPED_ERROR
