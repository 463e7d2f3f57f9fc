/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * delivery - the records of each owner's queue, to its transport
 *
 * Only queues with records are looked at: they are on the dirty list from
 * their first record until a flush leaves them empty. A queue whose head is
 * an unpaired IN_MOVED_FROM stays on it, and the earliest such deadline is
 * what the loop's timer waits for (delivery_next_deadline()).
 */

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "delivery.h"
#include "log.h"
#include "macro.h"

/* Records a client may have unconfirmed before its next ones wait for the
 * answer to its request: below it nothing is held, so a slow client's round
 * trip never adds to the latency of events that come one at a time. */
#define HOLD_MIN_UNREAD 16u
#define CONFIRM_MIN_UNREAD HOLD_MIN_UNREAD

struct Delivery {
        DeliveryLimits limits;
        DeliveryStats stats;
        LIST_HEAD(DeliveryQueue, dirty);
        bool congested;                 /* the last flush found a transport congested */
        uint64_t retry_at;
        Record **batch;                 /* limits.batch_max slots */
};

int delivery_new(const DeliveryLimits *limits, Delivery **ret) {
        Delivery *d = calloc(1, sizeof(Delivery));

        if (!d)
                return -ENOMEM;
        d->limits = *limits;
        d->batch = calloc(MAX(limits->batch_max, 1u), sizeof(Record *));
        if (!d->batch) {
                free(d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

Delivery *delivery_free(Delivery *d) {
        if (!d)
                return NULL;
        /* Queues belong to their owners, which are freed first. */
        assert(!d->dirty);
        free(d->batch);
        free(d);
        return NULL;
}

void delivery_set_limits(Delivery *d, const DeliveryLimits *limits) {
        Record **b = realloc(d->batch, MAX(limits->batch_max, 1u) * sizeof(Record *));

        if (!b) {
                log_warning("Out of memory applying batch_max_events, keeping %" PRIu32 ".", d->limits.batch_max);
                d->limits = (DeliveryLimits) { .batch_max = d->limits.batch_max, .max_pending = limits->max_pending,
                                               .pair_timeout_usec = limits->pair_timeout_usec,
                                               .pair_max_distance = limits->pair_max_distance };
                return;
        }
        d->batch = b;
        d->limits = *limits;
}

const DeliveryStats *delivery_get_stats(const Delivery *d) {
        return &d->stats;
}

void delivery_queue_init(Delivery *d, DeliveryQueue *q, const char *name) {
        *q = (DeliveryQueue) {
                .name = name,
                .delivery = d,
        };
        move_pairer_init(&q->pairer, d->limits.pair_timeout_usec, d->limits.pair_max_distance);
}

void delivery_queue_done(Delivery *d, DeliveryQueue *q) {
        if (q->dirty)
                LIST_REMOVE(dirty, d->dirty, q);
        move_pairer_done(&q->pairer);
        if (q->lost_ids)
                g_array_unref(q->lost_ids);
        *q = (DeliveryQueue) {};
}

void delivery_queue_update(Delivery *d, DeliveryQueue *q) {
        move_pairer_set_limits(&q->pairer, d->limits.pair_timeout_usec, d->limits.pair_max_distance);
}

void delivery_queue_set_transport(DeliveryQueue *q, const DeliveryOps *ops, void *data) {
        q->ops = ops;
        q->data = data;
        /* An answer the old transport awaited will not come through the new one. */
        q->confirming = false;
        q->read = q->sent;
}

static void mark_dirty(Delivery *d, DeliveryQueue *q) {
        if (!q->dirty && delivery_queue_size(q) > 0) {
                q->dirty = true;
                LIST_APPEND(dirty, d->dirty, q);
        }
}

static void lost_id_add(DeliveryQueue *q, uint32_t id) {
        if (!q->lost_ids)
                q->lost_ids = g_array_sized_new(FALSE, FALSE, sizeof(uint32_t), 16);
        g_array_append_val(q->lost_ids, id);
}

static size_t n_lost_ids(const DeliveryQueue *q) {
        return q->lost_ids ? q->lost_ids->len : 0;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* Sorted, without repeats: a flood of drops must not grow the list without bound. */
static void lost_ids_compact(DeliveryQueue *q) {
        uint32_t *ids;
        size_t k = 0;

        if (n_lost_ids(q) == 0) {
                q->n_lost_compacted = 0;
                return;
        }
        ids = (uint32_t *) q->lost_ids->data;
        qsort(ids, q->lost_ids->len, sizeof(uint32_t), cmp_u32);
        for (size_t i = 0; i < q->lost_ids->len; i++)
                if (k == 0 || ids[k - 1] != ids[i])
                        ids[k++] = ids[i];
        g_array_set_size(q->lost_ids, k);
        q->n_lost_compacted = k;
}

static void on_dropped(uint32_t id, void *userdata) {
        DeliveryQueue *q = userdata;

        /* The ids repeat a lot: compact when the list doubles past its distinct ids. */
        if (n_lost_ids(q) >= 2 * q->n_lost_compacted + 64)
                lost_ids_compact(q);
        lost_id_add(q, id);
}

/* Every push goes through here, so that n_notices stays true (the flush counts the pops). */
static int queue_push(DeliveryQueue *q, Record *rec) {
        bool notice = rec->kind != RECORD_EVENT;
        int r;

        r = move_pairer_push(&q->pairer, rec);
        if (r >= 0 && notice)
                q->n_notices++;
        return r;
}

static int queue_overflow(DeliveryQueue *q) {
        Record *o;

        if (q->overflow_queued)
                return 0;
        /* An overflow never waits: its time is unused. */
        o = record_new_in(delivery_queue_arena(q), RECORD_OVERFLOW, 0, 0, 0, 0, NULL, NULL, 0);
        if (!o)
                return -ENOMEM;
        q->overflow_queued = true;
        return queue_push(q, o);
}

static void flush_queue(Delivery *d, DeliveryQueue *q, uint64_t now_usec);

void delivery_submit(Delivery *d, DeliveryQueue *q, Record *rec) {
        bool overflowing = q->overflow_queued;
        size_t lost;
        int r;

        if (!rec) {
                log_warning("Out of memory queueing a record for %s, ignoring.", q->name);
                return;
        }
        /* A transport that takes everything at once (a journal) is handed a full
         * queue now rather than dropped from: only a rename half waiting for
         * its partner stays (time 0: no pairing deadline counts as passed). */
        if (delivery_queue_size(q) >= d->limits.max_pending && q->ops && q->ops->reads_at_once)
                flush_queue(d, q, 0);
        if (delivery_queue_size(q) < d->limits.max_pending) {
                r = queue_push(q, rec);
                if (r < 0)
                        log_warning_errno(r, "Failed to queue a record for %s, ignoring: %m", q->name);
                mark_dirty(d, q);
                return;
        }

        /* Its backlog is full: it is dropped, and the client hears it. */
        lost = move_pairer_drop_events(&q->pairer, on_dropped, q) + (rec->kind == RECORD_EVENT);
        if (rec->kind == RECORD_EVENT) {
                lost_id_add(q, rec->id);
                record_free(rec);
                r = 0;
        } else
                r = queue_push(q, rec);                 /* notices are never dropped */
        lost_ids_compact(q);
        if (r >= 0)
                r = queue_overflow(q);
        if (r < 0)
                log_warning_errno(r, "Failed to queue a record for %s, ignoring: %m", q->name);
        d->stats.events_dropped += lost;
        q->n_dropped += lost;
        if (!overflowing)       /* once per Overflow, not once per dropped record */
                log_info("Client %s is %" PRIu32 " records behind: dropped its backlog, it gets Overflow.",
                         q->name, d->limits.max_pending);
        mark_dirty(d, q);
}

void delivery_lost_all(Delivery *d, DeliveryQueue *q, const uint32_t *ids, size_t n) {
        int r;

        for (size_t i = 0; i < n; i++)
                lost_id_add(q, ids[i]);
        lost_ids_compact(q);
        r = queue_overflow(q);
        if (r < 0)
                log_warning("Out of memory queueing Overflow for %s, ignoring.", q->name);
        mark_dirty(d, q);
}

void delivery_lost(Delivery *d, DeliveryQueue *q, uint32_t id) {
        delivery_lost_all(d, q, &id, 1);
}

void delivery_dropped(DeliveryQueue *q, uint32_t id) {
        q->delivery->stats.events_dropped++;
        q->n_dropped++;
        delivery_lost(q->delivery, q, id);
}

/*
 * Whether q's queued records wait for the answer to its request rather than
 * go now: see the top of delivery.h. Without this, each kernel read of a few
 * events became a batch of its own, and the per-message costs (the bus, the
 * client's dispatch) were most of the CPU under a storm.
 */
static bool hold(Delivery *d, DeliveryQueue *q, uint64_t now_usec) {
        /* Half the backlog limit: holding must never be what overflows it. */
        size_t enough = MIN((size_t) d->limits.batch_max, (size_t) d->limits.max_pending / 2);

        if (!q->confirming || !q->answers)
                return false;   /* nothing to wait for, or an answer that may never come */
        if (q->sent - q->read < HOLD_MIN_UNREAD)
                return false;   /* not a burst: a record every few ms goes at once, whatever the round trip */
        if (q->n_notices > 0)
                return false;   /* notices go now, and the events before them first */
        if (delivery_queue_size(q) >= enough)
                return false;   /* a full batch gains nothing by waiting */
        /* A rename half whose pairing time is up goes now: the timer would
         * otherwise fire again at once, for as long as the answer waits. */
        return move_pairer_next_deadline(&q->pairer) > now_usec;
}

/* Unconfirmed records before the client is asked to confirm: a client that
 * reads a record now and then is not asked after each one (one message each
 * way through the bus, and a wake-up of the client, per record). Half the
 * window at most, so that a small window is still confirmed before it fills. */
static uint64_t confirm_min(const Delivery *d) {
        return MAX(MIN((uint64_t) CONFIRM_MIN_UNREAD, (uint64_t) d->limits.max_pending / 2), 1u);
}

static void ask_confirm(DeliveryQueue *q) {
        int r;

        if (!q->ops || !q->ops->ask_confirm || q->confirming || q->sent - q->read < confirm_min(q->delivery))
                return;
        r = q->ops->ask_confirm(q, q->data);
        if (r == -EAGAIN)
                return;         /* the transport asks later (delivery_ask_confirm()) */
        if (r < 0) {
                /* Then nothing more is held for it until the next record tries again. */
                log_warning_errno(r, "Failed to ask %s whether it reads its events, ignoring: %m", q->name);
                return;
        }
        q->confirming = true;
        q->confirm_at = q->sent;
}

void delivery_sent(DeliveryQueue *q, size_t n) {
        q->delivery->stats.events_delivered += n;
        q->delivery->stats.batches_sent++;
        q->sent += n;
}

void delivery_ask_confirm(DeliveryQueue *q) {
        ask_confirm(q);
}

void delivery_all_read(DeliveryQueue *q) {
        q->read = q->sent;
}

static void send_batch(Delivery *d, DeliveryQueue *q, Record **batch, size_t *n) {
        if (*n == 0)
                return;
        /* The records are the transport's now; what it cannot send it names in an Overflow. */
        (void) q->ops->send_events(q, batch, *n, q->data);
        *n = 0;
}

static void send_notice(Delivery *d, DeliveryQueue *q, Record *rec) {
        g_autoptr(GArray) ids = NULL;

        if (rec->kind == RECORD_OVERFLOW) {
                lost_ids_compact(q);
                ids = TAKE_PTR(q->lost_ids);
                q->n_lost_compacted = 0;
                q->overflow_queued = false;
        }
        if (q->ops->send_notice(q, rec, ids ? (const uint32_t *) ids->data : NULL, ids ? ids->len : 0,
                                q->data) >= 0 && rec->kind == RECORD_OVERFLOW) {
                d->stats.overflows++;
                q->n_overflows++;
        }
}

/*
 * Sends q what its queue lets go, but never more than max_pending records
 * that q has not confirmed: past that its records wait in its queue, which
 * is bounded by the same limit (then its backlog is dropped and it gets
 * Overflow, sent once it reads again). So a client that stops reading costs
 * at most twice that many records, in the daemon and the transport
 * together, and the other clients are not delayed.
 */
static void flush_queue(Delivery *d, DeliveryQueue *q, uint64_t now_usec) {
        Record **batch = d->batch;
        size_t n = 0;
        Record *rec;

        if (!q->ops || hold(d, q, now_usec))
                return;
        /* A last batch that could not be sent queues its Overflow: that goes now, once. */
        for (int round = 0; round < 2; round++) {
                size_t notices;

                while (q->sent + n - q->read < d->limits.max_pending &&
                       (rec = move_pairer_pop(&q->pairer, now_usec))) {
                        if (rec->kind != RECORD_EVENT) {
                                /* Notices keep their place: what came before goes first. */
                                assert(q->n_notices > 0);
                                q->n_notices--;
                                send_batch(d, q, batch, &n);
                                send_notice(d, q, rec);
                                record_free(rec);
                                continue;
                        }
                        batch[n++] = rec;
                        if (n >= d->limits.batch_max)
                                send_batch(d, q, batch, &n);
                }
                notices = q->n_notices;
                send_batch(d, q, batch, &n);
                if (q->n_notices == notices)
                        break;
        }
        ask_confirm(q);
}

void delivery_flush(Delivery *d, uint64_t now_usec) {
        d->congested = false;
        LIST_FOREACH_SAFE(dirty, q, next, d->dirty) {
                if (q->ops && q->ops->congested && q->ops->congested(q->data)) {
                        /* The transport is not reading: records stay in the queues,
                         * which are bounded (then Overflow); try again soon, or
                         * when the transport's own event comes. */
                        if (!q->ops->wakes_itself) {
                                d->congested = true;
                                d->retry_at = now_usec + DELIVERY_RETRY_USEC;
                        }
                        continue;
                }
                flush_queue(d, q, now_usec);
                if (delivery_queue_size(q) == 0) {
                        q->dirty = false;
                        LIST_REMOVE(dirty, d->dirty, q);
                        record_arena_trim(delivery_queue_arena(q));
                }
        }
}

uint64_t delivery_next_deadline(const Delivery *d) {
        uint64_t next = d->congested ? d->retry_at : UINT64_MAX;

        LIST_FOREACH(dirty, q, d->dirty)
                next = MIN(next, move_pairer_next_deadline(&q->pairer));
        return next;
}

void delivery_confirmed(Delivery *d, DeliveryQueue *q, bool answered, uint64_t now_usec) {
        q->confirming = false;
        q->answers = answered;
        if (answered)
                q->read = q->confirm_at;
        /* What was held back for it goes now, as one batch, and only then the
         * next request: sent first, it would vouch for none of it and hold it
         * for one more round trip. The flush asks again itself if it sent
         * anything; the call below is for records sent before this request
         * went out and not yet vouched for. */
        mark_dirty(d, q);
        if (q->dirty && !(q->ops && q->ops->congested && q->ops->congested(q->data))) {
                flush_queue(d, q, now_usec);
                if (delivery_queue_size(q) == 0) {
                        q->dirty = false;
                        LIST_REMOVE(dirty, d->dirty, q);
                        record_arena_trim(delivery_queue_arena(q));
                }
        }
        ask_confirm(q);
}
