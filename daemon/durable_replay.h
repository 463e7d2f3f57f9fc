/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * durable_replay - what durable.c (the subscriptions' life: loaded, created,
 * removed, resumed, listed; watching with the recorded credentials; the
 * pump the manager's hooks call, and every function of durable.h),
 * durable_journal.c (each owner's transport: its journal, written; the gaps
 * appended) and durable_replay.c (the attachments of the clients that
 * resumed one: freed, stopped, and pumped from their journal readers under
 * a flow control of their own) share: the Durable, a subscription, an
 * attachment, and what durable_journal.c and durable_replay.c give
 * durable.c. For those three files only.
 *
 * They stand in layers, each calling only those before it:
 * durable_replay.c, durable_journal.c (neither calls the other),
 * durable.c.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "delivery.h"
#include "durable_store.h"
#include "durable_types.h"
#include "list.h"
#include "manager.h"

typedef struct WalkToken WalkToken;

typedef enum DurableState {
        DURABLE_WATCHING,
        DURABLE_WALKING,
        DURABLE_NO_ACCESS,
        DURABLE_OPENING, /* its path's open waits in a worker */
} DurableState;

typedef struct DurableSub DurableSub;

typedef struct Attach {
        DurableSub *sub;
        Client *client;
        JournalReader *reader;
        const DurableOps *ops; /* its transport, and its data */
        void *data;
        bool caught_up;

        /* Flow control: entries sent, and how many the client confirmed
         * reading; the count at the request in flight. */
        uint64_t sent, read, confirm_at;
        /* The same in bytes (a record's weight: record_bytes()), held to
         * max_pending_bytes_per_client as live records are. */
        uint64_t sent_bytes, read_bytes, confirm_bytes;
        bool confirming;
} Attach;

struct DurableSub {
        Durable *d;
        char *key; /* "UID/NAME": in d->subs */
        DurableDef def;
        Journal *journal;
        Client *owner;
        uint32_t sub_id; /* its subscription in the watch table; 0: none */
        DurableState state;
        bool readd;         /* its watch ended: placed again at the next pump */
        WalkToken *opening; /* its open in a worker, until it returns */
        Attach *attach;
};

struct Durable {
        Manager *m;
        char *state_dir;       /* NULL: disabled */
        GHashTable *subs;      /* "UID/NAME" -> DurableSub (owned) */
        GPtrArray *attaches;   /* Attach (owned) */
        GHashTable *cap_dirty; /* uids whose journals grew since their cap was checked */
        LIST_HEAD(WalkToken, tokens);
        uint64_t wake_at; /* when the pump wants a turn */
};

/* durable_replay.c */

void durable_attach_free(Durable *d, Attach *a);
/* Tells a's client why its replay ends (its transport's stopped()), and frees a. */
void durable_attach_stop(Durable *d, Attach *a, const char *reason);
/* Sends each attachment what its window lets go now; another turn soon
 * (d->wake_at) if one has more. */
void durable_replay_pump(Durable *d, uint64_t now);

/* durable_journal.c */

/* The transport of each owner's queue: its journal. */
extern const DeliveryOps durable_journal_ops;
/* Marks uid's journals for the pump to keep within their cap. */
void durable_journal_mark_cap_dirty(Durable *d, uid_t uid);
/* Flushes s's journal (a loss is the journal's to log), and marks its user's cap to check. */
void durable_journal_flush_logged(DurableSub *s);
/* Appends a gap of reason to s's journal, and flushes it. */
void durable_journal_append_gap(DurableSub *s, JournalGapReason reason);
