/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-delivery - a queue's records to a fake transport (a sink that keeps
 * what it is sent): batches, the backlog limit and Overflow, holding a
 * burst behind an unanswered confirmation, congestion, notices in order
 */

#include <glib.h>
#include <sys/inotify.h>

#include "delivery.h"

typedef struct Sink {
        GPtrArray *batches; /* GArray of record ids, one per batch */
        GArray *notices;    /* kinds, in order */
        GArray *lost;       /* the ids of the last Overflow */
        unsigned asked;     /* confirmation requests */
        bool congested;
} Sink;

/* The batch's ids kept, its records freed. */
static void keep_batch(Sink *s, Record **recs, size_t n) {
        GArray *ids = g_array_new(FALSE, FALSE, sizeof(uint32_t));

        for (size_t i = 0; i < n; i++) {
                g_array_append_val(ids, recs[i]->id);
                record_free(recs[i]);
        }
        g_ptr_array_add(s->batches, ids);
}

static int sink_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        keep_batch(data, recs, n);
        delivery_sent(q, n);
        return 0;
}

static int sink_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n, void *data) {
        Sink *s = data;
        int kind = rec->kind;

        g_array_append_val(s->notices, kind);
        if (kind == RECORD_OVERFLOW) {
                g_array_set_size(s->lost, 0);
                g_array_append_vals(s->lost, ids, (guint) n);
        }
        return 0;
}

static int sink_ask(DeliveryQueue *q, void *data) {
        ((Sink *) data)->asked++;
        return 0;
}

static bool sink_congested(void *data) {
        return ((Sink *) data)->congested;
}

static const DeliveryOps sink_ops = {
        .send_events = sink_events,
        .send_notice = sink_notice,
        .ask_confirm = sink_ask,
        .congested = sink_congested,
};

typedef struct Fixture {
        Delivery *d;
        DeliveryQueue q;
        Sink sink;
} Fixture;

static void setup(Fixture *f, gconstpointer data) {
        const DeliveryLimits *l = data;

        g_assert_cmpint(delivery_new(l, &f->d), ==, 0);
        g_assert_cmpint(delivery_queue_init(f->d, &f->q, "client", 1000), ==, 0);
        f->sink = (Sink) {
                .batches = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref),
                .notices = g_array_new(FALSE, FALSE, sizeof(int)),
                .lost = g_array_new(FALSE, FALSE, sizeof(uint32_t)),
        };
        delivery_queue_set_transport(&f->q, &sink_ops, &f->sink);
}

static void teardown(Fixture *f, gconstpointer data) {
        delivery_queue_done(f->d, &f->q);
        delivery_free(f->d);
        g_ptr_array_unref(f->sink.batches);
        g_array_unref(f->sink.notices);
        g_array_unref(f->sink.lost);
}

static void submit(Fixture *f, uint32_t id, uint32_t mask, uint32_t cookie, uint64_t t) {
        /* Cut from the queue's arena, as client.c makes them. */
        delivery_submit(f->d, &f->q,
                        record_new_in(delivery_queue_arena(&f->q), RECORD_EVENT, id, mask, cookie, t, "/d", "f", 1));
}

static unsigned sent(const Fixture *f) {
        unsigned n = 0;

        for (guint i = 0; i < f->sink.batches->len; i++)
                n += ((GArray *) f->sink.batches->pdata[i])->len;
        return n;
}

static const DeliveryLimits limits = {
        .max_pending = 100,
        .max_bytes = UINT64_MAX,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 10,
        .pair_timeout_usec = 1000,
        .pair_max_distance = 100,
};

/* Records go in batches of at most batch_max, in order; then a confirmation is asked for. */
static void test_batches(Fixture *f, gconstpointer data) {
        for (uint32_t i = 1; i <= 25; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.batches->len, ==, 3);
        g_assert_cmpuint(((GArray *) f->sink.batches->pdata[2])->len, ==, 5);
        g_assert_cmpuint(g_array_index((GArray *) f->sink.batches->pdata[1], uint32_t, 0), ==, 11);
        g_assert_cmpuint(f->sink.asked, ==, 1);
        g_assert_cmpuint(delivery_get_stats(f->d)->events_delivered, ==, 25);
        g_assert_cmpuint(delivery_get_stats(f->d)->batches_sent, ==, 3);
        g_assert_cmpuint(delivery_next_deadline(f->d), ==, UINT64_MAX);
        /* A queue that drained keeps no memory for records. */
        g_assert_cmpuint(record_arena_n_chunks(delivery_queue_arena(&f->q)), ==, 0);
}

/* A record now and then is sent alone: confirmation is asked for only once
 * 16 are unconfirmed (half the window if less), and only once more after
 * the answer when 16 more are. */
static void test_confirm_lazily(Fixture *f, gconstpointer data) {
        for (uint32_t i = 1; i <= 15; i++) {
                submit(f, i, IN_CREATE, 0, 0);
                delivery_flush(f->d, 0);
        }
        g_assert_cmpuint(sent(f), ==, 15);
        g_assert_cmpuint(f->sink.batches->len, ==, 15);
        g_assert_cmpuint(f->sink.asked, ==, 0);
        submit(f, 16, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.asked, ==, 1);
        delivery_confirmed(f->d, &f->q, true, 0);
        submit(f, 17, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 17); /* not held: 1 unconfirmed */
        g_assert_cmpuint(f->sink.asked, ==, 1);
}

/* A small window is asked about at half of it. */
static void test_confirm_small_window(Fixture *f, gconstpointer data) {
        for (uint32_t i = 1; i <= 4; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.asked, ==, 1);
}

/* A burst behind an unanswered confirmation waits for the answer, and goes as one batch. */
static void test_hold(Fixture *f, gconstpointer data) {
        for (uint32_t i = 1; i <= 20; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 20);
        /* The first answer shows the client answers; 20 are unconfirmed again after the next burst. */
        delivery_confirmed(f->d, &f->q, true, 0);
        for (uint32_t i = 21; i <= 40; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 40);
        for (uint32_t i = 41; i <= 45; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 40); /* held: 20 unconfirmed, a request in flight */
        delivery_confirmed(f->d, &f->q, true, 0);
        g_assert_cmpuint(sent(f), ==, 45); /* one batch at the answer */
        g_assert_cmpuint(((GArray *) f->sink.batches->pdata[f->sink.batches->len - 1])->len, ==, 5);

        /* A client that does not answer (a timeout) is not held for. */
        delivery_confirmed(f->d, &f->q, false, 0);
        for (uint32_t i = 46; i <= 70; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 70);
}

static const DeliveryLimits small = {
        .max_pending = 4,
        .max_bytes = UINT64_MAX,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 10,
        .pair_timeout_usec = 1000,
        .pair_max_distance = 100,
};

/* Past max_pending queued, the events are dropped and Overflow names their ids; notices stay. */
static void test_backlog(Fixture *f, gconstpointer data) {
        Record *rec;

        for (uint32_t i = 1; i <= 4; i++)
                submit(f, i % 2 ? 7 : 8, IN_CREATE, 0, 0);
        rec = record_new(RECORD_REMOVED, 9, 0, 0, 0, NULL, NULL, 0);
        rec->reason = "deleted";
        delivery_submit(f->d, &f->q, rec);
        g_assert_cmpuint(delivery_get_stats(f->d)->events_dropped, ==, 4);
        submit(f, 5, IN_CREATE, 0, 0); /* room again: the notices only are queued */
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.notices->len, ==, 2);
        g_assert_cmpint(g_array_index(f->sink.notices, int, 0), ==, RECORD_REMOVED);
        g_assert_cmpint(g_array_index(f->sink.notices, int, 1), ==, RECORD_OVERFLOW);
        g_assert_cmpuint(f->sink.lost->len, ==, 2); /* 7 and 8, once each */
        g_assert_cmpuint(g_array_index(f->sink.lost, uint32_t, 0), ==, 7);
        g_assert_cmpuint(g_array_index(f->sink.lost, uint32_t, 1), ==, 8);
        g_assert_cmpuint(sent(f), ==, 1); /* after them */
        g_assert_cmpuint(delivery_get_stats(f->d)->overflows, ==, 1);

        /* delivery_lost: an Overflow naming one id. */
        delivery_lost(f->d, &f->q, 42);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.lost->len, ==, 1);
        g_assert_cmpuint(g_array_index(f->sink.lost, uint32_t, 0), ==, 42);
}

static int journal_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        keep_batch(data, recs, n);
        return 0; /* as a journal: nothing to count, nothing unread */
}

static const DeliveryOps journal_like_ops = {
        .send_events = journal_events,
        .send_notice = sink_notice,
        .reads_at_once = true,
};

/*
 * A transport that takes whatever it is sent at once (a durable
 * subscription's journal) is never dropped from: a queue that fills
 * between two flushes (a kernel read of many records, handled in slices,
 * is flushed once) goes to it then, in order, and no Overflow is queued.
 */
static void test_reads_at_once(Fixture *f, gconstpointer data) {
        delivery_queue_set_transport(&f->q, &journal_like_ops, &f->sink);
        for (uint32_t i = 1; i <= 10; i++)
                submit(f, i, IN_CREATE, 0, 0);
        delivery_flush(f->d, 0);
        g_assert_cmpuint(delivery_get_stats(f->d)->events_dropped, ==, 0);
        g_assert_cmpuint(f->sink.notices->len, ==, 0);
        g_assert_cmpuint(sent(f), ==, 10);
        for (guint b = 0, k = 1; b < f->sink.batches->len; b++) {
                GArray *ids = f->sink.batches->pdata[b];

                for (guint i = 0; i < ids->len; i++, k++)
                        g_assert_cmpuint(g_array_index(ids, uint32_t, i), ==, k);
        }
}

/* A congested transport gets nothing, and the queue asks to be tried again. */
static void test_congested(Fixture *f, gconstpointer data) {
        f->sink.congested = true;
        submit(f, 1, IN_CREATE, 0, 0);
        delivery_flush(f->d, 1000);
        g_assert_cmpuint(sent(f), ==, 0);
        g_assert_cmpuint(delivery_next_deadline(f->d), ==, 1000 + DELIVERY_RETRY_USEC);
        f->sink.congested = false;
        delivery_flush(f->d, 1000 + DELIVERY_RETRY_USEC);
        g_assert_cmpuint(sent(f), ==, 1);
        g_assert_cmpuint(delivery_next_deadline(f->d), ==, UINT64_MAX);
}

/* A lone IN_MOVED_FROM waits for its partner until the pairing deadline. */
static void test_pairing(Fixture *f, gconstpointer data) {
        submit(f, 1, IN_MOVED_FROM, 77, 100);
        delivery_flush(f->d, 100);
        g_assert_cmpuint(sent(f), ==, 0);
        g_assert_cmpuint(delivery_next_deadline(f->d), ==, 100 + limits.pair_timeout_usec);
        delivery_flush(f->d, 100 + limits.pair_timeout_usec);
        g_assert_cmpuint(sent(f), ==, 1);
}

/* A record of a path of len bytes: its weight in the caps. */
static Record *long_record(uint32_t id, size_t len) {
        g_autofree char *name = g_strnfill(len, 'n');

        return record_new(RECORD_EVENT, id, IN_CREATE, 0, 0, "/d", name, len);
}

static const DeliveryLimits bytes_small = {
        .max_pending = 1000,
        .max_bytes = 64 * 1024,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 10,
        .pair_timeout_usec = 1000,
        .pair_max_distance = 100,
};

/* Past max_bytes queued, the backlog is dropped and Overflow sent, whatever the count of records. */
static void test_bytes_client(Fixture *f, gconstpointer data) {
        size_t weight;
        Record *rec;

        f->sink.congested = true; /* it reads nothing */
        rec = long_record(1, 4000);
        weight = record_bytes(rec);
        delivery_submit(f->d, &f->q, rec);
        for (uint32_t i = 2; i <= 64; i++) {
                delivery_submit(f->d, &f->q, long_record(1, 4000));
                g_assert_cmpuint(delivery_queue_bytes(&f->q), <=, bytes_small.max_bytes);
        }
        /* 16 fit in 64 KiB: the 17th found it full, and so on. */
        g_assert_cmpuint(delivery_get_stats(f->d)->events_dropped, >=, 64 - 64 * 1024 / weight);
        f->sink.congested = false;
        delivery_flush(f->d, 0);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpint(g_array_index(f->sink.notices, int, 0), ==, RECORD_OVERFLOW);
}

/* What was sent and not confirmed is bounded in bytes too: the rest waits for the answer. */
static void test_bytes_window(Fixture *f, gconstpointer data) {
        for (uint32_t i = 1; i <= 7; i++)
                delivery_submit(f->d, &f->q, long_record(1, 8000));
        delivery_flush(f->d, 0);
        g_assert_cmpuint(sent(f), ==, 7); /* 56 KB unconfirmed */
        for (uint32_t i = 1; i <= 7; i++)
                delivery_submit(f->d, &f->q, long_record(1, 8000));
        delivery_flush(f->d, 0);
        /* 8 KB each: the 8th fits under 64 KiB, the 9th passes the mark; the rest waits for the answer. */
        g_assert_cmpuint(sent(f), ==, 9);
        g_assert_cmpuint(delivery_queue_size(&f->q), ==, 5);
        g_assert_cmpuint(f->sink.asked, ==, 1);
        delivery_confirmed(f->d, &f->q, true, 0);
        g_assert_cmpuint(sent(f), ==, 14);
        g_assert_cmpuint(delivery_get_stats(f->d)->events_dropped, ==, 0);
}

static const DeliveryLimits user_small = {
        .max_pending = 100,
        .max_bytes = UINT64_MAX,
        .max_pending_user = 30,
        .max_bytes_user = 128 * 1024,
        .batch_max = 10,
        .pair_timeout_usec = 1000,
        .pair_max_distance = 100,
};

/* Many clients of one uid hold what the user may, together: a second
 * client's records push out the first's backlog, and another uid is not
 * touched. */
static void test_user_caps(Fixture *f, gconstpointer data) {
        DeliveryQueue q2, other;
        Sink s2 = {
                .batches = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref),
                .notices = g_array_new(FALSE, FALSE, sizeof(int)),
                .lost = g_array_new(FALSE, FALSE, sizeof(uint32_t)),
                .congested = true,
        };
        uint64_t held, held_bytes;

        g_assert_cmpint(delivery_queue_init(f->d, &q2, "client2", 1000), ==, 0);
        g_assert_cmpint(delivery_queue_init(f->d, &other, "other", 2000), ==, 0);
        delivery_queue_set_transport(&q2, &sink_ops, &s2);
        delivery_queue_set_transport(&other, &sink_ops, &s2);
        f->sink.congested = true;

        /* Records: the user holds at most 30, its clients 100 each. */
        for (uint32_t i = 0; i < 25; i++)
                submit(f, 1, IN_CREATE, 0, 0);
        for (uint32_t i = 0; i < 10; i++) {
                delivery_submit(f->d, &q2, record_new(RECORD_EVENT, 2, IN_CREATE, 0, 0, "/d", "f", 1));
                delivery_user_held(f->d, 1000, &held, &held_bytes);
                g_assert_cmpuint(held, <=, user_small.max_pending_user + 1); /* + the Overflow notice */
        }
        g_assert_cmpuint(delivery_queue_size(&q2), ==, 10);
        g_assert_cmpuint(f->q.n_dropped, ==, 25); /* the largest backlog went */

        /* Bytes: 128 KiB for the user, whatever its clients. */
        for (uint32_t i = 0; i < 100; i++) {
                delivery_submit(f->d, i % 2 ? &q2 : &f->q, long_record(i % 2 ? 2 : 1, 4000));
                delivery_user_held(f->d, 1000, &held, &held_bytes);
                g_assert_cmpuint(held_bytes, <=, user_small.max_bytes_user + 1024);
        }
        /* The other uid has its own share. */
        for (uint32_t i = 0; i < 20; i++)
                delivery_submit(f->d, &other, long_record(3, 4000));
        g_assert_cmpuint(delivery_queue_size(&other), ==, 20);
        g_assert_cmpuint(other.n_dropped, ==, 0);

        delivery_queue_done(f->d, &q2);
        delivery_queue_done(f->d, &other);
        delivery_user_held(f->d, 2000, &held, &held_bytes);
        g_assert_cmpuint(held, ==, 0);
        g_ptr_array_unref(s2.batches);
        g_array_unref(s2.notices);
        g_array_unref(s2.lost);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/delivery/batches", Fixture, &limits, setup, test_batches, teardown);
        g_test_add("/delivery/hold", Fixture, &limits, setup, test_hold, teardown);
        g_test_add("/delivery/confirm-lazily", Fixture, &limits, setup, test_confirm_lazily, teardown);
        g_test_add("/delivery/confirm-small-window", Fixture, &small, setup, test_confirm_small_window, teardown);
        g_test_add("/delivery/backlog", Fixture, &small, setup, test_backlog, teardown);
        g_test_add("/delivery/reads-at-once", Fixture, &small, setup, test_reads_at_once, teardown);
        g_test_add("/delivery/congested", Fixture, &limits, setup, test_congested, teardown);
        g_test_add("/delivery/pairing", Fixture, &limits, setup, test_pairing, teardown);
        g_test_add("/delivery/bytes-client", Fixture, &bytes_small, setup, test_bytes_client, teardown);
        g_test_add("/delivery/bytes-window", Fixture, &bytes_small, setup, test_bytes_window, teardown);
        g_test_add("/delivery/user-caps", Fixture, &user_small, setup, test_user_caps, teardown);
        return g_test_run();
}
