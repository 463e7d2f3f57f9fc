/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * move_pairer - a client's delivery queue, with renames paired
 *
 * Records enter in kernel order and leave in the same order. An IN_MOVED_TO
 * whose IN_MOVED_FROM (same cookie, same subscription) is still queued is
 * folded into it: the pair leaves as one record with both bits, the old path
 * and the new path. Each subscription of the owner gets its pair
 * ("pair-per-subscription", watchd(8)): every IN_MOVED_FROM of the cookie
 * still waiting takes the new path too, and an IN_MOVED_TO whose own
 * subscription saw no IN_MOVED_FROM becomes a pair of its own (the old path
 * from the IN_MOVED_FROM side), queued in its place, after that side's.
 * An unpaired IN_MOVED_FROM at the head holds the queue back, but only until
 * it is timeout_usec old or max_distance records wait behind it; it then
 * leaves alone ("moved out"). A lone IN_MOVED_TO is "moved in".
 *
 * Pure: no I/O, no clock. The caller passes the time in.
 *
 * Invariant: the head of the queue is held back iff it is an unpaired
 * IN_MOVED_FROM that is younger than the timeout and has fewer than
 * max_distance records behind it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

typedef struct MovePairer {
        RecordArena arena; /* the queue's records are cut from it (record_new_in()) */
        Record **items;    /* ring buffer: items[(head + i) % cap], i < n */
        size_t head, n, cap;
        size_t bytes; /* record_bytes() of the records in it */
        uint64_t timeout_usec;
        size_t max_distance;
} MovePairer;

void move_pairer_init(MovePairer *p, uint64_t timeout_usec, size_t max_distance);
void move_pairer_done(MovePairer *p);
void move_pairer_set_limits(MovePairer *p, uint64_t timeout_usec, size_t max_distance);

/* Takes ownership of rec (also on failure, when it is freed). Return: 0, or -ENOMEM. */
int move_pairer_push(MovePairer *p, Record *rec);

/* The next record that may be delivered at now_usec (ownership to the caller), or NULL. */
Record *move_pairer_pop(MovePairer *p, uint64_t now_usec);

/* The head again, delivered at once whatever it waits for (for flushes before an overflow). */
Record *move_pairer_pop_force(MovePairer *p);

/* When the held head will be released, or UINT64_MAX if nothing is held. */
uint64_t move_pairer_next_deadline(const MovePairer *p);

static inline size_t move_pairer_size(const MovePairer *p) {
        return p->n;
}

/* The bytes its records hold (record_bytes()), and its ring of pointers. */
static inline size_t move_pairer_bytes(const MovePairer *p) {
        return p->bytes + p->cap * sizeof(Record *);
}

/* Drops every RECORD_EVENT (notices stay), calling fn with each dropped id. Return: how many. */
size_t move_pairer_drop_events(MovePairer *p, void (*fn)(uint32_t id, void *userdata), void *userdata);
