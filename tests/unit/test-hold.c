/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-hold - the records of the clients a probe concerns, waiting for it
 *
 * Two clients with sink transports, pending subscriptions of the watch
 * table (the fake backend's): what a held client is queued waits, another
 * client's goes on; what the probe finds (queued between
 * holds_apply_begin() and _end()) goes before what waited, after the record
 * that set it off (hold_mark()), at the place of its own hold among several; a hold past its time lets its records go and
 * names what it waited for in an Overflow; a side queue past the client's
 * limit drops its events with an Overflow; a client that goes while held
 * takes its records with it. Thousands of holds of one client (the burst of
 * new directories in a recursive subscription), ended in a random order or
 * by their time: what goes on at each step is what no live hold of the
 * client waits for, each record once, in order.
 */

#include <glib.h>
#include <sys/inotify.h>

#include "client.h"
#include "fake-backend.h"
#include "hold.h"
#include "log.h"
#include "sink.h"

typedef struct Fixture {
        FakeBackend *fake;
        WatchTable *table;
        Accounting *accounting;
        Delivery *delivery;
        Holds *holds;
        Client *c1, *c2;
        Sink sink1, sink2;
        Subscription *s1, *s2, *s3; /* c1's, c1's, c2's */
} Fixture;

static const DeliveryLimits limits = {
        .max_pending = 8,
        .max_bytes = UINT64_MAX,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 64,
        .pair_timeout_usec = 1000000,
        .pair_max_distance = 16,
};

static void on_lost(uint32_t id, void *userdata) {
        Fixture *f = userdata;

        client_queue_lost(watch_table_get_subscription(f->table, id));
}

static Subscription *subscribe(Fixture *f, Client *c, const char *path) {
        Subscription *s = NULL;

        g_assert_cmpint(watch_table_subscribe_pending(f->table, path, c, NULL, IN_ALL_EVENTS, 0, &s), ==, 0);
        client_link_subscription(c, s);
        return s;
}

static void setup(Fixture *f, gconstpointer data) {
        AccountingLimits al = {
                .max_watches_per_client = 100,
                .max_watches_per_user = 100,
                .max_watches_unprivileged = 1000,
                .max_clients_per_user = 4,
        };
        gid_t gid = 100;
        Caller caller = { .uid = 1000, .gid = gid, .gids = &gid, .n_gids = 1 };

        log_set_max_level(LOG_ERR);
        f->fake = fake_backend_new();
        g_assert_cmpint(watch_table_new(&f->fake->backend, &f->table), ==, 0);
        g_assert_cmpint(accounting_new(&al, &f->accounting), ==, 0);
        g_assert_cmpint(delivery_new(&limits, &f->delivery), ==, 0);
        g_assert_cmpint(holds_new(&(HoldsOps) { .lost = on_lost }, f, &f->holds), ==, 0);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.1", &caller, &f->c1), ==, 0);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.2", &caller, &f->c2), ==, 0);
        sink_init(&f->sink1);
        sink_init(&f->sink2);
        delivery_queue_set_transport(&f->c1->queue, &sink_ops, &f->sink1);
        delivery_queue_set_transport(&f->c2->queue, &sink_ops, &f->sink2);
        f->s1 = subscribe(f, f->c1, "/p/one");
        f->s2 = subscribe(f, f->c1, "/p/two");
        f->s3 = subscribe(f, f->c2, "/p/three");
}

static void client_gone(Fixture *f, Client **c) {
        Subscription *s;

        if (!*c)
                return;
        while ((s = (*c)->subscriptions)) {
                client_unlink_subscription(*c, s);
                watch_table_unsubscribe(f->table, s);
        }
        *c = client_free(*c);
}

static void teardown(Fixture *f, gconstpointer data) {
        client_gone(f, &f->c1);
        client_gone(f, &f->c2);
        f->holds = holds_free(f->holds);
        watch_table_free(f->table);
        delivery_free(f->delivery);
        accounting_free(f->accounting);
        fake_backend_free(f->fake);
        sink_done(&f->sink1);
        sink_done(&f->sink2);
}

static void flush(Fixture *f) {
        delivery_flush(f->delivery, UINT64_MAX);
}

static void event(Subscription *s, const char *name) {
        client_queue_event(s, IN_CREATE, 0, "/p", name, strlen(name), 1);
}

/* The names of what sink got, in order, joined by spaces. */
static char *names(const Sink *sink) {
        GString *t = g_string_new(NULL);

        for (guint i = 0; i < sink->events->len; i++)
                g_string_append_printf(t, "%s%s", i ? " " : "", strrchr(sink_event(sink, i)->path, '/') + 1);
        return g_string_free(t, FALSE);
}

static void assert_names(const Sink *sink, const char *want) {
        g_autofree char *got = names(sink);

        g_assert_cmpstr(got, ==, want);
}

/* A held client's records wait; another's go on; what the probe found goes first. */
static void test_order(Fixture *f, gconstpointer data) {
        Hold *h = hold_new(f->holds, 0), *previous;

        event(f->s1, "before");
        client_hold(f->c1, h);
        event(f->s1, "a");
        event(f->s3, "other");
        event(f->s2, "b");
        flush(f);
        assert_names(&f->sink1, "before");
        assert_names(&f->sink2, "other");

        previous = holds_apply_begin(f->holds, h);
        event(f->s2, "found");
        holds_apply_end(f->holds, previous);
        flush(f);
        assert_names(&f->sink1, "before found"); /* nothing before it waits; what is after does */

        hold_unref(h);
        flush(f);
        assert_names(&f->sink1, "before found a b");
        g_assert_null(f->c1->hold);
        event(f->s1, "after");
        flush(f);
        assert_names(&f->sink1, "before found a b after");
        g_assert_cmpuint(f->sink1.notices->len, ==, 0);
}

/* A hold marked after the record that set it off: what the probe finds
 * goes after that record, before what came later; all of it waits. A hold
 * merged into another moves that one's mark after its own record. */
static void test_mark(Fixture *f, gconstpointer data) {
        Hold *h = hold_new(f->holds, 0), *t = NULL, *previous;

        client_hold(f->c1, h);
        event(f->s1, "trigger");
        hold_mark(h);
        event(f->s1, "later");
        previous = holds_apply_begin(f->holds, h);
        event(f->s2, "found");
        holds_apply_end(f->holds, previous);
        flush(f);
        assert_names(&f->sink1, "");

        t = hold_new(f->holds, 0);
        client_hold(f->c2, t);
        event(f->s3, "trigger2");
        hold_mark(t);
        hold_merge(h, t);
        t = hold_unref(t);
        event(f->s3, "later2");
        previous = holds_apply_begin(f->holds, h);
        event(f->s2, "found2");
        holds_apply_end(f->holds, previous);
        flush(f);
        assert_names(&f->sink1, "");
        assert_names(&f->sink2, "");

        hold_unref(h);
        flush(f);
        assert_names(&f->sink1, "trigger found later found2");
        assert_names(&f->sink2, "trigger2 later2");
}

/* Two holds of one client: each probe's findings at its own place; nothing
 * goes before the earlier one ends, and its own go first then. */
static void test_two(Fixture *f, gconstpointer data) {
        Hold *h1 = hold_new(f->holds, 0), *h2, *previous;

        client_hold(f->c1, h1);
        event(f->s1, "a");
        h2 = hold_new(f->holds, 0);
        client_hold(f->c1, h2);
        event(f->s1, "b");

        previous = holds_apply_begin(f->holds, h2);
        event(f->s2, "found2");
        holds_apply_end(f->holds, previous);
        hold_unref(h2);
        flush(f);
        assert_names(&f->sink1, "");

        previous = holds_apply_begin(f->holds, h1);
        event(f->s2, "found1");
        holds_apply_end(f->holds, previous);
        event(f->s1, "c");
        hold_unref(h1);
        flush(f);
        assert_names(&f->sink1, "found1 a found2 b c");
}

/* Past its time: the records go on, what it waited for gets Overflow, and
 * what the probe finds later comes when it comes. A merged hold holds the
 * other's clients too. */
static void test_expire(Fixture *f, gconstpointer data) {
        Hold *h = hold_new(f->holds, 1000), *trigger = hold_new(f->holds, 2000), *previous;
        g_autofree char *want = g_strdup_printf("overflow %u,", f->s2->id);

        client_hold(f->c2, trigger);
        hold_merge(h, trigger);
        trigger = hold_unref(trigger);
        hold_note_subscription(h, f->s2->id);
        client_hold(f->c1, h);
        event(f->s1, "a");
        event(f->s3, "x");
        g_assert_cmpuint(holds_next_deadline(f->holds), ==, 1000 + HOLD_USEC);
        holds_expire(f->holds, 1000 + HOLD_USEC - 1);
        flush(f);
        assert_names(&f->sink1, "");
        assert_names(&f->sink2, "");
        g_assert_false(hold_over(h));

        holds_expire(f->holds, 1000 + HOLD_USEC);
        flush(f);
        g_assert_true(hold_over(h));
        g_assert_cmpuint(holds_next_deadline(f->holds), ==, UINT64_MAX);
        assert_names(&f->sink1, "a");
        assert_names(&f->sink2, "x");
        g_assert_cmpuint(f->sink1.notices->len, ==, 1);
        g_assert_cmpstr(f->sink1.notices->pdata[0], ==, want);
        g_assert_cmpuint(f->sink2.notices->len, ==, 0);

        previous = holds_apply_begin(f->holds, h);
        event(f->s2, "late");
        holds_apply_end(f->holds, previous);
        flush(f);
        assert_names(&f->sink1, "a late");
        hold_unref(h);
}

/* A side queue past max_pending (8): its events go, their subscriptions hear; what comes after waits. */
static void test_limit(Fixture *f, gconstpointer data) {
        Hold *h = hold_new(f->holds, 0);
        g_autofree char *want = NULL;

        client_hold(f->c1, h);
        for (unsigned i = 0; i < limits.max_pending; i++)
                event(f->s1, "a");
        event(f->s2, "b");
        event(f->s1, "c");
        flush(f);
        assert_names(&f->sink1, "");
        g_assert_cmpuint(f->sink1.notices->len, ==, 1);
        want = g_strdup_printf("overflow %u,%u,", MIN(f->s1->id, f->s2->id), MAX(f->s1->id, f->s2->id));
        g_assert_cmpstr(f->sink1.notices->pdata[0], ==, want);
        hold_unref(h);
        flush(f);
        assert_names(&f->sink1, "c");
}

/* A client that goes while held: its records with it; the hold goes on for the others. */
static void test_client_gone(Fixture *f, gconstpointer data) {
        Hold *h = hold_new(f->holds, 0);

        client_hold(f->c1, h);
        client_hold(f->c2, h);
        event(f->s1, "a");
        event(f->s3, "x");
        client_gone(f, &f->c1);
        flush(f);
        assert_names(&f->sink2, "");
        hold_unref(h);
        flush(f);
        assert_names(&f->sink2, "x");
}

/* The burst: N holds of c1, one made after each record of c1's (r<i>); c2
 * waits for some of them, a third from its first record on (h0 among them,
 * so all of c2's records s<i> wait), the rest of its share added later in a
 * shuffled order (c2's holds are not made in the order of their start).
 * They end in a shuffled order, each after reporting one record for each
 * of its clients (f<i>, g<i>) with its hold applied; a record of each (l<j>, m<j>)
 * after each end. After each end a client has had what was made before its
 * earliest live hold started: for c1, r0..r<min> and f<j> for j below min
 * (ended, so reported); for c2, s<j> for j below its min and g<j> for its
 * holds below it. At the end every record once, in the order of the holds. */
#define MANY 3000u

/* The side queues are not what is tested: no bound. */
static void unbounded(Fixture *f) {
        DeliveryLimits l = limits;

        l.max_pending = UINT32_MAX;
        delivery_set_limits(f->delivery, &l);
}

static guint earliest(Hold *const *h, const bool *of) {
        for (guint i = 0; i < MANY; i++)
                if (h[i] && of[i])
                        return i;
        return MANY;
}

static void test_many(Fixture *f, gconstpointer data) {
        g_autofree Hold **h = g_new0(Hold *, MANY);
        g_autofree guint *order = g_new(guint, MANY);
        g_autofree bool *all = g_new(bool, MANY), *of2 = g_new0(bool, MANY);
        g_autoptr(GString) want1 = g_string_new(NULL), want2 = g_string_new(NULL);
        GRand *rand = g_rand_new_with_seed(27);
        guint n2 = 0;

        unbounded(f);
        for (guint i = 0; i < MANY; i++) {
                g_autofree char *r = g_strdup_printf("r%u", i), *s = g_strdup_printf("s%u", i);

                all[i] = true;
                order[i] = i;
                event(f->s1, r);
                h[i] = hold_new(f->holds, i);
                client_hold(f->c1, h[i]);
                if (i % 3 == 0) {
                        client_hold(f->c2, h[i]);
                        of2[i] = true;
                }
                event(f->s3, s);
        }
        for (guint i = MANY; i > 1; i--) {
                guint j = (guint) g_rand_int_range(rand, 0, (gint32) i), t = order[i - 1];

                order[i - 1] = order[j];
                order[j] = t;
        }
        for (guint k = 0; k < MANY; k++)
                if (order[k] % 3 == 1) {
                        client_hold(f->c2, h[order[k]]);
                        client_hold(f->c2, h[order[k]]); /* once is enough */
                        of2[order[k]] = true;
                }
        for (guint i = 0; i < MANY; i++)
                n2 += of2[i];
        flush(f);
        g_assert_cmpuint(f->sink1.events->len, ==, 1);
        g_assert_cmpuint(f->sink2.events->len, ==, 0);
        g_assert_cmpuint(holds_next_deadline(f->holds), ==, HOLD_USEC);

        for (guint k = 0; k < MANY; k++) {
                guint i = order[k], min1, min2, want_n2 = 0;
                g_autofree char *fi = g_strdup_printf("f%u", i), *gi = g_strdup_printf("g%u", i),
                                *l = g_strdup_printf("l%u", k), *m = g_strdup_printf("m%u", k);
                Hold *previous = holds_apply_begin(f->holds, h[i]);

                event(f->s2, fi);
                if (of2[i])
                        event(f->s3, gi);
                holds_apply_end(f->holds, previous);
                h[i] = hold_unref(h[i]);
                event(f->s1, l);
                event(f->s3, m);
                flush(f);

                min1 = earliest(h, all);
                min2 = earliest(h, of2);
                g_assert_cmpuint(holds_next_deadline(f->holds), ==, min1 < MANY ? min1 + HOLD_USEC : UINT64_MAX);
                if (min1 < MANY)
                        g_assert_cmpuint(f->sink1.events->len, ==, 2 * min1 + 1);
                else
                        g_assert_cmpuint(f->sink1.events->len, ==, 2 * MANY + (k + 1));
                for (guint j = 0; j < min2; j++)
                        want_n2 += 1 + of2[j];
                if (min2 < MANY)
                        g_assert_cmpuint(f->sink2.events->len, ==, want_n2);
                else
                        g_assert_cmpuint(f->sink2.events->len, ==, MANY + n2 + (k + 1));
        }
        g_assert_null(f->c1->hold);
        g_assert_null(f->c2->hold);

        for (guint i = 0; i < MANY; i++) {
                g_string_append_printf(want1, "%sr%u f%u", i ? " " : "", i, i);
                if (of2[i])
                        g_string_append_printf(want2, "%sg%u", i ? " " : "", i);
                g_string_append_printf(want2, "%ss%u", i || of2[i] ? " " : "", i);
        }
        for (guint k = 0; k < MANY; k++) {
                g_string_append_printf(want1, " l%u", k);
                g_string_append_printf(want2, " m%u", k);
        }
        assert_names(&f->sink1, want1->str);
        assert_names(&f->sink2, want2->str);
        g_assert_cmpuint(f->sink1.notices->len, ==, 0);
        g_rand_free(rand);
}

/* Holds end by their time in the order of it, whichever ended before; one
 * made with an older time than the one before it (events.c's, the time of
 * its read) ends with that one, not before. */
static void test_expire_many(Fixture *f, gconstpointer data) {
        g_autofree Hold **h = g_new0(Hold *, MANY);
        g_autofree bool *ended = g_new0(bool, MANY);
        GRand *rand = g_rand_new_with_seed(27);
        Hold *a, *b;

        unbounded(f);
        for (guint i = 0; i < MANY; i++) {
                g_autofree char *r = g_strdup_printf("r%u", i);

                event(f->s3, r);
                h[i] = hold_new(f->holds, 1000u * i);
                client_hold(f->c2, h[i]);
        }
        /* A third end before their time, in a shuffled order. */
        for (guint k = 0; k < MANY / 3; k++) {
                guint i = (guint) g_rand_int_range(rand, 0, MANY);

                if (!ended[i]) {
                        h[i] = hold_unref(h[i]); /* its one reference: it ends */
                        ended[i] = true;
                }
        }
        for (uint64_t now = 0, end = 1000u * (MANY - 1) + HOLD_USEC;; now = MIN(now + 7919, end)) {
                uint64_t next = UINT64_MAX;
                guint first = MANY;

                holds_expire(f->holds, now);
                for (guint i = 0; i < MANY; i++) {
                        if (ended[i])
                                continue;
                        g_assert_cmpint(hold_over(h[i]), ==, 1000u * i + HOLD_USEC <= now);
                        if (!hold_over(h[i]) && first == MANY) {
                                next = 1000u * i + HOLD_USEC;
                                first = i;
                        }
                }
                g_assert_cmpuint(holds_next_deadline(f->holds), ==, next);
                flush(f);
                /* r0 went on (nobody held c2); r<i> waits for the holds made before it. */
                g_assert_cmpuint(f->sink2.events->len, ==, first < MANY ? first + 1 : MANY);
                if (now == end)
                        break;
        }
        g_assert_null(f->c2->hold);
        g_assert_cmpuint(f->sink2.events->len, ==, MANY);
        for (guint i = 0; i < MANY; i++)
                if (!ended[i])
                        hold_unref(h[i]);

        a = hold_new(f->holds, 5000);
        b = hold_new(f->holds, 1000);
        g_assert_cmpuint(holds_next_deadline(f->holds), ==, 5000 + HOLD_USEC);
        holds_expire(f->holds, 1000 + HOLD_USEC);
        g_assert_false(hold_over(a));
        g_assert_false(hold_over(b));
        holds_expire(f->holds, 5000 + HOLD_USEC);
        g_assert_true(hold_over(a));
        g_assert_true(hold_over(b));
        hold_unref(a);
        hold_unref(b);
        g_rand_free(rand);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/hold/order", Fixture, NULL, setup, test_order, teardown);
        g_test_add("/hold/mark", Fixture, NULL, setup, test_mark, teardown);
        g_test_add("/hold/two", Fixture, NULL, setup, test_two, teardown);
        g_test_add("/hold/expire", Fixture, NULL, setup, test_expire, teardown);
        g_test_add("/hold/limit", Fixture, NULL, setup, test_limit, teardown);
        g_test_add("/hold/client-gone", Fixture, NULL, setup, test_client_gone, teardown);
        g_test_add("/hold/many", Fixture, NULL, setup, test_many, teardown);
        g_test_add("/hold/expire-many", Fixture, NULL, setup, test_expire_many, teardown);
        return g_test_run();
}
