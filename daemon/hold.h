/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * hold - the records of the clients a probe concerns, waiting for it
 *
 * A pending path's probe runs in a worker (missing_open.c, ProbeJob); what it
 * finds (a path that appeared) belongs, in the kernel's order, right after
 * the record that set it off. A Hold is that moment: it starts when the
 * record is handled, and the clients it concerns (the owners of the chain's
 * waiters, and those that heard the record itself) have every record queued
 * for them after that wait, in order, in a side queue of theirs
 * (ClientHold) instead of their delivery queue. What the probe finds is
 * queued while the hold is applied (holds_apply_begin()): it goes after the
 * record that set it off (hold_mark()) and before what came after. When the last reference goes (the chain has no more work set
 * off by it), the waiting records go on to the delivery queue, up to where
 * another hold of the client starts. Every other client's records flow on.
 *
 * Bounded: a hold ends at the latest HOLD_USEC after it started
 * (holds_expire()); its records go on as they are, and the waiters'
 * subscriptions it notes get Overflow (what the probe finds later comes
 * after records that were made after it). A client's side queue holds at
 * most its delivery limits (max_pending_events_per_client,
 * max_pending_bytes_per_client): past them its events there are dropped and
 * their subscriptions get Overflow.
 */

#include <stdbool.h>
#include <stdint.h>

#include "delivery.h"
#include "macro.h"
#include "record.h"

typedef struct Holds Holds;
typedef struct Hold Hold;
typedef struct ClientHold ClientHold;

/* The longest a probe holds the records of the clients it concerns. */
#define HOLD_USEC (500u * 1000u)

typedef struct HoldsOps {
        /* A hold past its time noted subscription id: it gets Overflow (if it is still there). */
        void (*lost)(uint32_t id, void *userdata);
} HoldsOps;

int holds_new(const HoldsOps *ops, void *userdata, Holds **ret);
/* Every hold ends (its records go on); the clients' side queues stay theirs until they go. */
Holds *holds_free(Holds *hs);

/* A hold that starts now, ends at now + HOLD_USEC at the latest (not before
 * a hold made before it, given a later time: hold.c); one reference. */
Hold *hold_new(Holds *hs, uint64_t now_usec);
Hold *hold_ref(Hold *h);
/* At the last reference the hold ends: its clients' records go on. */
Hold *hold_unref(Hold *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Hold *, hold_unref);
/* A client's records from now on wait for h (nothing if h ended): *slot is
 * the client's (NULL while it is not held), d and q its delivery, name its
 * name for logs. client_hold() (client.h) says it for a Client. */
void hold_add(Hold *h, ClientHold **slot, Delivery *d, DeliveryQueue *q, const char *name);
/* What the probe finds goes after the records queued so far for h's
 * clients (the record that set it off), not before them; they still wait. */
void hold_mark(Hold *h);
/* The clients of from wait for into too, and what into's probes find goes
 * after from's mark (never before the record that set a probe off). */
void hold_merge(Hold *into, Hold *from);
/* s is what h waits for: if h outlasts HOLD_USEC, s gets Overflow. */
void hold_note_subscription(Hold *h, uint32_t id);
/* It ended (past its time): nothing waits for it any more. */
bool hold_over(const Hold *h);

/* The hold of the record being handled (events.c), NULL if none; not a reference. */
void holds_set_trigger(Holds *hs, Hold *h);
Hold *holds_get_trigger(const Holds *hs);
/* What is queued until holds_apply_end() is what h waited for: it goes before
 * the records that wait for h. Returns the previous one, for holds_apply_end(). */
Hold *holds_apply_begin(Holds *hs, Hold *h);
void holds_apply_end(Holds *hs, Hold *previous);
/* The hold applied now (between holds_apply_begin() and holds_apply_end()), or NULL; not a reference. */
Hold *holds_get_applying(const Holds *hs);

/* When the first hold ends by its time (UINT64_MAX: none). */
uint64_t holds_next_deadline(const Holds *hs);
/* Ends the holds past their time. */
void holds_expire(Holds *hs, uint64_t now_usec);

/* client.c: rec (taken) waits in c's side queue if c is held. Return: whether it was taken. */
bool client_hold_defer(ClientHold *ch, Record *rec);
/* client.c: c goes; what waits for it is dropped. */
void client_hold_detach(ClientHold *ch);
