/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * move_pairer - a client's delivery queue, with renames paired
 *
 * A ring buffer of Record pointers. A MOVED_TO looks for its MOVED_FROM
 * among the last max_distance records only: an older one has been, or is
 * about to be, released alone, so the search costs O(max_distance) at worst.
 * A paired MOVED_FROM carries IN_MOVED_TO in its mask, which is how the head
 * check tells "waiting" from "paired".
 */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event_bits.h"
#include "move_pairer.h"

void move_pairer_init(MovePairer *p, uint64_t timeout_usec, size_t max_distance) {
        *p = (MovePairer) {};
        move_pairer_set_limits(p, timeout_usec, max_distance);
}

void move_pairer_set_limits(MovePairer *p, uint64_t timeout_usec, size_t max_distance) {
        p->timeout_usec = timeout_usec;
        p->max_distance = max_distance > 0 ? max_distance : 1;
}

void move_pairer_done(MovePairer *p) {
        for (size_t i = 0; i < p->n; i++)
                record_free(p->items[(p->head + i) % p->cap]);
        free(p->items);
        *p = (MovePairer) {};
}

static Record **at(MovePairer *p, size_t i) {
        return &p->items[(p->head + i) % p->cap];
}

static bool is_waiting_from(const Record *r) {
        return r->kind == RECORD_EVENT &&
               (r->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == IN_MOVED_FROM &&
               r->cookie != 0;
}

static int grow(MovePairer *p) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        Record **items;

        items = malloc(cap * sizeof(Record *));
        if (!items)
                return -ENOMEM;
        for (size_t i = 0; i < p->n; i++)
                items[i] = *at(p, i);
        free(p->items);
        p->items = items;
        p->cap = cap;
        p->head = 0;
        return 0;
}

int move_pairer_push(MovePairer *p, Record *rec) {
        int r;

        if (rec->kind == RECORD_EVENT &&
            (rec->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == IN_MOVED_TO && rec->cookie != 0) {
                size_t lim = p->n < p->max_distance ? p->n : p->max_distance;

                /* The latest waiting MOVED_FROM of this cookie; prefer the same subscription. */
                Record *match = NULL;
                for (size_t k = 1; k <= lim; k++) {
                        Record *c = *at(p, p->n - k);

                        if (!is_waiting_from(c) || c->cookie != rec->cookie)
                                continue;
                        if (c->id == rec->id) {
                                match = c;
                                break;
                        }
                        if (!match)
                                match = c;
                }
                if (match) {
                        match->new_path = strdup(rec->path);
                        if (!match->new_path) {
                                record_free(rec);
                                return -ENOMEM;
                        }
                        match->mask |= rec->mask;       /* IN_MOVED_TO, and IN_ISDIR as the kernel said */
                        record_free(rec);
                        return 0;
                }
        }

        if (p->n == p->cap) {
                r = grow(p);
                if (r < 0) {
                        record_free(rec);
                        return r;
                }
        }
        *at(p, p->n) = rec;
        p->n++;
        return 0;
}

static bool head_is_held(const MovePairer *p, uint64_t now_usec) {
        const Record *h;

        if (p->n == 0)
                return false;
        h = p->items[p->head];
        if (!is_waiting_from(h))
                return false;
        if (p->n - 1 >= p->max_distance)
                return false;
        return now_usec < h->time_usec + p->timeout_usec;
}

Record *move_pairer_pop_force(MovePairer *p) {
        Record *r;

        if (p->n == 0)
                return NULL;
        r = p->items[p->head];
        p->head = (p->head + 1) % p->cap;
        p->n--;
        return r;
}

Record *move_pairer_pop(MovePairer *p, uint64_t now_usec) {
        if (head_is_held(p, now_usec))
                return NULL;
        return move_pairer_pop_force(p);
}

uint64_t move_pairer_next_deadline(const MovePairer *p) {
        if (!head_is_held(p, 0))
                return UINT64_MAX;
        return p->items[p->head]->time_usec + p->timeout_usec;
}

size_t move_pairer_drop_events(MovePairer *p, void (*fn)(uint32_t id, void *userdata), void *userdata) {
        size_t kept = 0, dropped = 0;

        /* Compact in place: the notices move to the front, in order. */
        for (size_t i = 0; i < p->n; i++) {
                Record *r = *at(p, i);

                if (r->kind == RECORD_EVENT) {
                        if (fn)
                                fn(r->id, userdata);
                        record_free(r);
                        dropped++;
                } else
                        *at(p, kept++) = r;
        }
        p->n = kept;
        return dropped;
}
