/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * move_pairer - a client's delivery queue, with renames paired
 *
 * A ring buffer of Record pointers. A MOVED_TO looks for its MOVED_FROM
 * among the last max_distance records only: an older one has been, or is
 * about to be, released alone, so the search costs O(max_distance) at worst.
 * A paired MOVED_FROM carries IN_MOVED_TO in its mask, which is how the head
 * check tells "waiting" from "paired"; a pair queued for the MOVED_TO side
 * alone carries both bits from the start.
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
        record_arena_done(&p->arena);
        free(p->items);
        *p = (MovePairer) {};
}

static Record **at(MovePairer *p, size_t i) {
        return &p->items[(p->head + i) % p->cap];
}

static bool is_waiting_from(const Record *r) {
        return r->kind == RECORD_EVENT && (r->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == IN_MOVED_FROM && r->cookie != 0;
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

/*
 * rec, an IN_MOVED_TO, against the IN_MOVED_FROM side of its rename queued
 * before it (pair-per-subscription, move_pairer.h). Going back from the
 * tail, at most max_distance records: the records of one kernel record are
 * queued in a row, so the IN_MOVED_FROM side of a rename (one record a
 * subscription that saw it, with the IN_MOVED_TO side's own records after
 * them) is a run of records of its cookie, and the search stops at the
 * first record past that run. Return: 1 rec was taken (folded, or queued as
 * a pair of its own: *ret_pair), 0 no IN_MOVED_FROM side (rec is "moved
 * in"), or -ENOMEM (rec is freed).
 */
static int pair_moved_to(MovePairer *p, Record *rec, Record **ret_pair) {
        size_t lim = p->n < p->max_distance ? p->n : p->max_distance;
        Record *own = NULL, *latest = NULL;
        size_t first = 0, last = 0; /* the run: at(p->n - last) .. at(p->n - first) */

        *ret_pair = NULL;
        for (size_t k = 1; k <= lim; k++) {
                Record *c = *at(p, p->n - k);
                bool from_side = c->cookie == rec->cookie && (c->mask & IN_MOVED_FROM);

                if (c->kind != RECORD_EVENT)
                        continue; /* a notice queued among them */
                if (!from_side) {
                        if (latest)
                                break; /* past the run */
                        continue;
                }
                if (!latest) {
                        latest = c;
                        first = k;
                }
                last = k;
                if (c->id == rec->id && !own)
                        own = c;
        }
        if (!latest)
                return 0;

        /* Every subscription that saw the IN_MOVED_FROM gets the new path:
         * it may see no IN_MOVED_TO of its own (it does not watch there). */
        for (size_t k = first; k <= last; k++) {
                Record *c = *at(p, p->n - k);

                if (!is_waiting_from(c) || c->cookie != rec->cookie || c == own)
                        continue;
                c->new_path = strdup(rec->path);
                if (!c->new_path) {
                        record_free(rec);
                        return -ENOMEM;
                }
                p->bytes += strlen(c->new_path) + 1;
                c->mask |= rec->mask; /* IN_MOVED_TO, and IN_ISDIR as the kernel said */
        }
        if (own) {
                /* Its own IN_MOVED_FROM: the pair is one record, with the
                 * new path as this subscription spells it. */
                char *n = strdup(rec->path);

                if (!n) {
                        record_free(rec);
                        return -ENOMEM;
                }
                p->bytes -= record_bytes(own);
                free(own->new_path);
                own->new_path = n;
                p->bytes += record_bytes(own);
                own->mask |= rec->mask;
                record_free(rec);
                return 1;
        }
        /* Only the IN_MOVED_TO side: a pair of its own, under its own id,
         * after the IN_MOVED_FROM side's. */
        *ret_pair = record_new_in(&p->arena, RECORD_EVENT, rec->id, rec->mask | IN_MOVED_FROM, rec->cookie,
                                  rec->time_usec, latest->path, NULL, 0);
        if (*ret_pair) {
                (*ret_pair)->packed = rec->packed; /* its subscription's, as its id */
                (*ret_pair)->new_path = strdup(rec->path);
        }
        if (!*ret_pair || !(*ret_pair)->new_path) {
                *ret_pair = record_free(*ret_pair);
                record_free(rec);
                return -ENOMEM;
        }
        record_free(rec);
        return 1;
}

int move_pairer_push(MovePairer *p, Record *rec) {
        int r;

        if (rec->kind == RECORD_EVENT && (rec->mask & (IN_MOVED_FROM | IN_MOVED_TO)) == IN_MOVED_TO && rec->cookie != 0) {
                Record *pair;

                r = pair_moved_to(p, rec, &pair);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (!pair)
                                return 0;
                        rec = pair;
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
        p->bytes += record_bytes(rec);
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
        p->bytes -= record_bytes(r);
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
                        p->bytes -= record_bytes(r);
                        record_free(r);
                        dropped++;
                } else
                        *at(p, kept++) = r;
        }
        p->n = kept;
        return dropped;
}
