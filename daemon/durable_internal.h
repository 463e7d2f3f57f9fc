/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * durable_internal - what durable.c and durable_replay.c share, and no one else
 *
 * durable.c: the subscriptions' life (loaded, created, removed, resumed,
 * listed), each owner's journal transport, watching with the recorded
 * credentials. durable_replay.c: the attachments of the clients that
 * resumed one, pumped from their journal readers after every flush of the
 * manager, under a flow control of their own; the journals' caps.
 */

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "durable.h"
#include "durable_store.h"
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

/* durable.c */

/* Flushes s's journal (a loss is the journal's to log), and marks its user's cap to check. */
void durable_journal_flush_logged(DurableSub *s);
/* Watches s's path as its owner. Return: 0 placed (or pending), 1 opened in a worker or walked, -errno. */
int durable_sub_watch(DurableSub *s, bool down_gap, DurableCreated done, void *userdata);
/* What follows placing s: its state, and a gap if it cannot be watched (or down_gap). */
void durable_sub_placed(DurableSub *s, int r, bool down_gap);

/* durable_replay.c */

void durable_attach_free(Durable *d, Attach *a);
/* Tells a's client why its replay ends (its transport's stopped()), and frees a. */
void durable_attach_stop(Durable *d, Attach *a, const char *reason);
/* The ManagerHooks: after each flush, and when the pump wants a turn. */
void durable_pump(void *userdata);
uint64_t durable_next_deadline(void *userdata);
