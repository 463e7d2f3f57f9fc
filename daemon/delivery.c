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
#define HOLD_MIN_UNREAD    16u
#define CONFIRM_MIN_UNREAD HOLD_MIN_UNREAD

struct Delivery {
        DeliveryLimits limits;
        DeliveryStats stats;
        GHashTable *users; /* uid -> DeliveryUser, while it has a queue */
        LIST_HEAD(DeliveryQueue, dirty);
        bool congested; /* the last flush found a transport congested */
        uint64_t retry_at;
        Record **batch; /* limits.batch_max slots */
};

const DeliveryLimits *delivery_get_limits(const Delivery *d) {
        return &d->limits;
}

int delivery_new(const DeliveryLimits *limits, Delivery **ret) {
        Delivery *d = calloc(1, sizeof(Delivery));

        if (!d)
                return -ENOMEM;
        d->limits = *limits;
        d->batch = calloc(MAX(limits->batch_max, 1u), sizeof(Record *));
        d->users = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, free);
        if (!d->batch || !d->users) {
                free(d->batch);
                if (d->users)
                        g_hash_table_unref(d->users);
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
        assert(g_hash_table_size(d->users) == 0);
        g_hash_table_unref(d->users);
        free(d->batch);
        free(d);
        return NULL;
}

void delivery_set_limits(Delivery *d, const DeliveryLimits *limits) {
        Record **b = realloc(d->batch, MAX(limits->batch_max, 1u) * sizeof(Record *));

        if (!b) {
                log_warning("Out of memory applying batch_max_events, keeping %" PRIu32 ".", d->limits.batch_max);
                uint32_t batch_max = d->limits.batch_max;

                d->limits = *limits;
                d->limits.batch_max = batch_max;
                return;
        }
        d->batch = b;
        d->limits = *limits;
}

const DeliveryStats *delivery_get_stats(const Delivery *d) {
        return &d->stats;
}

int delivery_queue_init(Delivery *d, DeliveryQueue *q, const char *name, uid_t uid) {
        DeliveryUser *u = g_hash_table_lookup(d->users, GUINT_TO_POINTER(uid));

        if (!u) {
                u = calloc(1, sizeof(DeliveryUser));
                if (!u)
                        return -ENOMEM;
                u->uid = uid;
                g_hash_table_insert(d->users, GUINT_TO_POINTER(uid), u);
        }
        *q = (DeliveryQueue) {
                .name = name,
                .delivery = d,
                .user = u,
        };
        LIST_PREPEND(by_user, u->queues, q);
        move_pairer_init(&q->pairer, d->limits.pair_timeout_usec, d->limits.pair_max_distance);
        return 0;
}

/* What q holds, queued or sent and not confirmed, into its user's sums. */
static void user_sync(DeliveryQueue *q) {
        DeliveryUser *u = q->user;
        uint64_t n = delivery_queue_size(q) + (q->sent - q->read);
        uint64_t b = delivery_queue_bytes(q) + (q->sent_bytes - q->read_bytes);

        if (!u)
                return;
        u->held = u->held - q->counted + n;
        u->held_bytes = u->held_bytes - q->counted_bytes + b;
        q->counted = n;
        q->counted_bytes = b;
}

void delivery_queue_done(Delivery *d, DeliveryQueue *q) {
        DeliveryUser *u = q->user;

        if (q->dirty)
                LIST_REMOVE(dirty, d->dirty, q);
        if (u) {
                u->held -= q->counted;
                u->held_bytes -= q->counted_bytes;
                LIST_REMOVE(by_user, u->queues, q);
                if (!u->queues)
                        g_hash_table_remove(d->users, GUINT_TO_POINTER(u->uid));
        }
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
        q->read_bytes = q->sent_bytes;
        user_sync(q);
}

void delivery_window(const DeliveryQueue *q, uint64_t *ret_records, uint64_t *ret_bytes) {
        const DeliveryLimits *l = &q->delivery->limits;
        uint64_t unread = q->sent - q->read, unread_bytes = q->sent_bytes - q->read_bytes;

        *ret_records = unread < l->max_pending ? l->max_pending - unread : 0;
        *ret_bytes = unread_bytes < l->max_bytes ? l->max_bytes - unread_bytes : 0;
        if (q->user) {
                /* The user's other clients hold their share: what is left is this one's. */
                *ret_records = MIN(*ret_records,
                                   q->user->held < l->max_pending_user ? l->max_pending_user - q->user->held : 0);
                *ret_bytes = MIN(*ret_bytes,
                                 q->user->held_bytes < l->max_bytes_user ? l->max_bytes_user - q->user->held_bytes : 0);
        }
}

void delivery_user_held(const Delivery *d, uid_t uid, uint64_t *ret_records, uint64_t *ret_bytes) {
        const DeliveryUser *u = g_hash_table_lookup(d->users, GUINT_TO_POINTER(uid));

        *ret_records = u ? u->held : 0;
        *ret_bytes = u ? u->held_bytes : 0;
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

/* Whether q's own backlog is full for one more record of bytes. */
static bool queue_full(const Delivery *d, const DeliveryQueue *q, size_t bytes) {
        return delivery_queue_size(q) >= d->limits.max_pending || delivery_queue_bytes(q) + bytes > d->limits.max_bytes;
}

/* Whether q's user holds all it may, for one more record of bytes. */
static bool user_full(const Delivery *d, const DeliveryQueue *q, size_t bytes) {
        return q->user &&
                (q->user->held >= d->limits.max_pending_user || q->user->held_bytes + bytes > d->limits.max_bytes_user);
}

/* The queue of q's user whose backlog weighs most. */
static DeliveryQueue *user_largest(DeliveryQueue *q) {
        DeliveryQueue *best = q;

        LIST_FOREACH(by_user, x, q->user->queues)
                if (delivery_queue_bytes(x) > delivery_queue_bytes(best))
                        best = x;
        return best;
}

/* Drops q's queued events: the client hears of them in an Overflow, which
 * the caller queues (after the record that made room, if it is a notice). */
static void drop_backlog(Delivery *d, DeliveryQueue *q, const char *why) {
        size_t lost;

        lost = move_pairer_drop_events(&q->pairer, on_dropped, q);
        lost_ids_compact(q);
        d->stats.events_dropped += lost;
        q->n_dropped += lost;
        if (!q->overflow_queued) /* once per Overflow, not once per dropped record */
                log_info("Client %s is %s: dropped its backlog, it gets Overflow.", q->name, why);
        user_sync(q);
}

static void overflow(Delivery *d, DeliveryQueue *q) {
        int r;

        r = queue_overflow(q);
        if (r < 0)
                log_warning_errno(r, "Failed to queue Overflow for %s, ignoring: %m", q->name);
        user_sync(q);
        mark_dirty(d, q);
}

void delivery_submit(Delivery *d, DeliveryQueue *q, Record *rec) {
        bool lost = false;
        size_t bytes;
        int r;

        if (!rec) {
                log_warning("Out of memory queueing a record for %s, ignoring.", q->name);
                return;
        }
        bytes = record_bytes(rec);
        /* A transport that takes everything at once (a journal) is handed a full
         * queue now rather than dropped from: only a rename half waiting for
         * its partner stays (time 0: no pairing deadline counts as passed). */
        if (queue_full(d, q, bytes) && q->ops && q->ops->reads_at_once)
                flush_queue(d, q, 0);
        if (queue_full(d, q, bytes)) {
                drop_backlog(d, q, "too far behind (max_pending_events_per_client, max_pending_bytes_per_client)");
                lost = true;
        } else if (user_full(d, q, bytes)) {
                /* The user's clients hold all it may: the heaviest backlog goes,
                 * whichever of them it is. */
                DeliveryQueue *x = user_largest(q);

                if (delivery_queue_size(x) > x->n_notices) {
                        drop_backlog(d, x,
                                     "the largest backlog of a user at its limit "
                                     "(max_pending_events_per_user, max_pending_bytes_per_user)");
                        if (x == q)
                                lost = true;
                        else
                                overflow(d, x);
                }
        }
        if (rec->kind == RECORD_EVENT && (queue_full(d, q, bytes) || user_full(d, q, bytes))) {
                /* Still no room (what the user holds was sent, not queued): this one goes. */
                on_dropped(rec->id, q);
                record_free(rec);
                d->stats.events_dropped++;
                q->n_dropped++;
                lost = true;
        } else {
                /* Notices are never dropped: one per subscription's end, one Overflow at a time. */
                r = queue_push(q, rec);
                if (r < 0)
                        log_warning_errno(r, "Failed to queue a record for %s, ignoring: %m", q->name);
        }
        if (lost)
                overflow(d, q);
        user_sync(q);
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
        user_sync(q);
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
                return false; /* nothing to wait for, or an answer that may never come */
        if (q->sent - q->read < HOLD_MIN_UNREAD)
                return false; /* not a burst: a record every few ms goes at once, whatever the round trip */
        if (q->n_notices > 0)
                return false; /* notices go now, and the events before them first */
        if (delivery_queue_size(q) >= enough)
                return false; /* a full batch gains nothing by waiting */
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

        if (!q->ops || !q->ops->ask_confirm || q->confirming)
                return;
        /* Few records, or half the byte window: a window of long paths fills before 16 records. */
        if (q->sent - q->read < confirm_min(q->delivery) &&
            q->sent_bytes - q->read_bytes < q->delivery->limits.max_bytes / 2)
                return;
        r = q->ops->ask_confirm(q, q->data);
        if (r == -EAGAIN)
                return; /* the transport asks later (delivery_ask_confirm()) */
        if (r < 0) {
                /* Then nothing more is held for it until the next record tries again. */
                log_warning_errno(r, "Failed to ask %s whether it reads its events, ignoring: %m", q->name);
                return;
        }
        q->confirming = true;
        q->confirm_at = q->sent;
        q->confirm_at_bytes = q->sent_bytes;
}

void delivery_sent_bytes(DeliveryQueue *q, size_t n, uint64_t bytes) {
        q->delivery->stats.events_delivered += n;
        if (n > 0)
                q->delivery->stats.batches_sent++;
        q->sent += n;
        q->sent_bytes += bytes;
        user_sync(q);
}

void delivery_sent(DeliveryQueue *q, size_t n) {
        uint64_t bytes = 0;

        /* Records of the batch being sent: each message its share of the batch's bytes. */
        if (q->batch_n > 0) {
                bytes = n >= q->batch_n ? q->batch_bytes : q->batch_bytes * n / q->batch_n;
                q->batch_n -= MIN((size_t) q->batch_n, n);
                q->batch_bytes -= bytes;
        }
        delivery_sent_bytes(q, n, bytes);
        if (n == 0)
                q->delivery->stats.batches_sent++;
}

void delivery_ask_confirm(DeliveryQueue *q) {
        ask_confirm(q);
}

void delivery_all_read(DeliveryQueue *q) {
        q->read = q->sent;
        q->read_bytes = q->sent_bytes;
        user_sync(q);
}

static void send_batch(Delivery *d, DeliveryQueue *q, Record **batch, size_t *n, uint64_t *bytes) {
        if (*n == 0)
                return;
        q->batch_n = *n;
        q->batch_bytes = *bytes;
        /* The records are the transport's now; what it cannot send it names in an Overflow. */
        (void) q->ops->send_events(q, batch, *n, q->data);
        q->batch_n = 0;
        q->batch_bytes = 0;
        *n = 0;
        *bytes = 0;
}

static void send_notice(Delivery *d, DeliveryQueue *q, Record *rec) {
        g_autoptr(GArray) ids = NULL;

        if (rec->kind == RECORD_OVERFLOW) {
                lost_ids_compact(q);
                ids = TAKE_PTR(q->lost_ids);
                q->n_lost_compacted = 0;
                q->overflow_queued = false;
        }
        if (q->ops->send_notice(q, rec, ids ? (const uint32_t *) ids->data : NULL, ids ? ids->len : 0, q->data) >= 0 &&
            rec->kind == RECORD_OVERFLOW) {
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
        uint64_t bytes = 0;
        size_t n = 0;
        Record *rec;

        if (!q->ops || hold(d, q, now_usec))
                return;
        /* A last batch that could not be sent queues its Overflow: that goes now, once. */
        for (int round = 0; round < 2; round++) {
                size_t notices;

                /* The window in bytes as in records; a record alone always fits. */
                while (q->sent + n - q->read < d->limits.max_pending &&
                       (q->sent_bytes + bytes == q->read_bytes ||
                        q->sent_bytes + bytes - q->read_bytes < d->limits.max_bytes) &&
                       (rec = move_pairer_pop(&q->pairer, now_usec))) {
                        if (rec->kind != RECORD_EVENT) {
                                /* Notices keep their place: what came before goes first. */
                                assert(q->n_notices > 0);
                                q->n_notices--;
                                send_batch(d, q, batch, &n, &bytes);
                                send_notice(d, q, rec);
                                record_free(rec);
                                continue;
                        }
                        bytes += record_bytes(rec);
                        batch[n++] = rec;
                        if (n >= d->limits.batch_max)
                                send_batch(d, q, batch, &n, &bytes);
                }
                notices = q->n_notices;
                send_batch(d, q, batch, &n, &bytes);
                if (q->n_notices == notices)
                        break;
        }
        user_sync(q);
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
        if (answered) {
                q->read = q->confirm_at;
                q->read_bytes = q->confirm_at_bytes;
                user_sync(q);
        }
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
