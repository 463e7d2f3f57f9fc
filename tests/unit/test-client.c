/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-client - an owner of subscriptions, and the one way into its queue
 *
 * Clients made against the accounting (max_clients_per_user counted per
 * uid, root apart from the others), their subscription lists, and what each
 * of client_queue_event(), client_queue_removed(), client_queue_lost() and
 * client_queue_lost_all() puts in the queue, as a sink transport receives
 * it: the record's path built from the directory and the name, renames
 * paired, a notice after the records before it, an Overflow naming the ids
 * (each once), and the backlog limit reached through it like any record.
 * No bus, no kernel: subscriptions are made by hand, as the watch table
 * would hand them over.
 */

#include <glib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "client.h"
#include "error.h"
#include "log.h"
#include "sink.h"
#include "watchd-api.h"

typedef struct Fixture {
        Accounting *accounting;
        Delivery *delivery;
        Client *c;
        Sink sink;
        Subscription subs[3];
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

static Caller caller_of(uid_t uid, gid_t *gid) {
        return (Caller) { .uid = uid, .gid = *gid, .gids = gid, .n_gids = 1 };
}

static void setup(Fixture *f, gconstpointer data) {
        AccountingLimits al = {
                .max_watches_per_client = 100,
                .max_watches_per_user = 100,
                .max_watches_unprivileged = 1000,
                .max_clients_per_user = 2,
        };
        gid_t gid = 100;
        Caller caller = caller_of(1000, &gid);

        log_set_max_level(LOG_ERR);
        g_assert_cmpint(accounting_new(&al, &f->accounting), ==, 0);
        g_assert_cmpint(delivery_new(&limits, &f->delivery), ==, 0);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.7", &caller, &f->c), ==, 0);
        sink_init(&f->sink);
        delivery_queue_set_transport(&f->c->queue, &sink_ops, &f->sink);
        for (unsigned i = 0; i < G_N_ELEMENTS(f->subs); i++) {
                f->subs[i] = (Subscription) { .id = 10 + i, .owner = f->c, .mask = IN_ALL_EVENTS };
                client_link_subscription(f->c, &f->subs[i]);
        }
}

static void teardown(Fixture *f, gconstpointer data) {
        for (unsigned i = 0; i < G_N_ELEMENTS(f->subs); i++)
                if (f->subs[i].owner)
                        client_unlink_subscription(f->c, &f->subs[i]);
        client_free(f->c);
        delivery_free(f->delivery);
        accounting_free(f->accounting);
        sink_done(&f->sink);
}

static void flush(Fixture *f) {
        delivery_flush(f->delivery, UINT64_MAX);
}

/* What client_new() copies, and the subscriptions it keeps count of. */
static void test_new(Fixture *f, gconstpointer data) {
        g_assert_cmpstr(f->c->name, ==, ":1.7");
        g_assert_cmpuint(f->c->caller.uid, ==, 1000);
        g_assert_cmpuint(f->c->caller.n_gids, ==, 1);
        g_assert_cmpuint(f->c->caller.gids[0], ==, 100);
        g_assert_cmpuint(f->c->account.uid, ==, 1000);
        g_assert_cmpuint(f->c->n_subscriptions, ==, 3);
        client_unlink_subscription(f->c, &f->subs[1]);
        f->subs[1].owner = NULL;
        g_assert_cmpuint(f->c->n_subscriptions, ==, 2);
        LIST_FOREACH(owner, s, f->c->subscriptions)
                g_assert_true(s != &f->subs[1]);
}

/* max_clients_per_user (2 here): a uid's third client is refused, another uid's is not; a freed one frees its slot. */
static void test_clients_per_user(Fixture *f, gconstpointer data) {
        gid_t gid = 100;
        Caller same = caller_of(1000, &gid), other = caller_of(1001, &gid);
        Client *second = NULL, *third = NULL, *elsewhere = NULL;

        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.8", &same, &second), ==, 0);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.9", &same, &third), ==, -WATCHD_E_USER_CLIENTS);
        g_assert_null(third);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.10", &other, &elsewhere), ==, 0);
        client_free(second);
        g_assert_cmpint(client_new(f->accounting, f->delivery, ":1.9", &same, &third), ==, 0);
        client_free(third);
        client_free(elsewhere);
}

/* An event's path is the directory and the name, or the directory alone; a rename's halves pair in the queue. */
static void test_queue_event(Fixture *f, gconstpointer data) {
        Subscription *s = &f->subs[0];

        client_queue_event(s, IN_CREATE, 0, "/d", "new", 3, 1);
        client_queue_event(s, IN_DELETE_SELF, 0, "/d", NULL, 0, 2);
        /* The name is a length, not a C string: what follows it is not the record's. */
        client_queue_event(s, IN_MODIFY, 0, "/d", "fileXYZ", 4, 3);
        client_queue_event(s, IN_MOVED_FROM, 42, "/d", "a", 1, 4);
        client_queue_event(s, IN_MOVED_TO, 42, "/d", "b", 1, 4);
        flush(f);
        g_assert_cmpuint(f->sink.events->len, ==, 4);
        g_assert_cmpstr(sink_event(&f->sink, 0)->path, ==, "/d/new");
        g_assert_cmpuint(sink_event(&f->sink, 0)->mask, ==, IN_CREATE);
        g_assert_cmpuint(sink_event(&f->sink, 0)->id, ==, 10);
        g_assert_cmpstr(sink_event(&f->sink, 1)->path, ==, "/d");
        g_assert_cmpstr(sink_event(&f->sink, 2)->path, ==, "/d/file");
        g_assert_cmpuint(sink_event(&f->sink, 3)->mask, ==, IN_MOVE);
        g_assert_cmpstr(sink_event(&f->sink, 3)->path, ==, "/d/a");
        g_assert_cmpstr(sink_event(&f->sink, 3)->new_path, ==, "/d/b");
        g_assert_cmpuint(f->sink.notices->len, ==, 0);
}

/* A notice comes after the records queued before it, for its own subscription. */
static void test_queue_removed(Fixture *f, gconstpointer data) {
        client_queue_event(&f->subs[1], IN_CREATE, 0, "/d", "x", 1, 1);
        client_queue_removed(&f->subs[1], WATCHD_REASON_DELETED, 2);
        client_queue_removed(&f->subs[2], WATCHD_REASON_ONESHOT, 3);
        flush(f);
        g_assert_cmpuint(f->sink.events->len, ==, 1);
        g_assert_cmpuint(sink_event(&f->sink, 0)->id, ==, 11);
        g_assert_cmpuint(f->sink.notices->len, ==, 2);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, "removed 11 deleted");
        g_assert_cmpstr(f->sink.notices->pdata[1], ==, "removed 12 oneshot");
}

/* Losses: one Overflow naming each id once, whichever way they were lost. */
static void test_queue_lost(Fixture *f, gconstpointer data) {
        client_queue_lost(&f->subs[2]);
        client_queue_lost(&f->subs[0]);
        client_queue_lost(&f->subs[2]);
        flush(f);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, "overflow 10,12,");

        sink_clear(&f->sink);
        client_queue_lost(&f->subs[1]);
        client_queue_lost_all(f->c);
        flush(f);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, "overflow 10,11,12,");
}

/* A client with no subscriptions hears nothing from client_queue_lost_all(). */
static void test_lost_all_none(Fixture *f, gconstpointer data) {
        for (unsigned i = 0; i < G_N_ELEMENTS(f->subs); i++) {
                client_unlink_subscription(f->c, &f->subs[i]);
                f->subs[i].owner = NULL;
        }
        client_queue_lost_all(f->c);
        flush(f);
        g_assert_cmpuint(f->sink.notices->len, ==, 0);
        g_assert_cmpuint(delivery_queue_size(&f->c->queue), ==, 0);
}

/* Past max_pending (8) records queued, the backlog goes and an Overflow names it: the limit holds on this way in too. */
static void test_backlog(Fixture *f, gconstpointer data) {
        for (unsigned i = 0; i < 20; i++)
                client_queue_event(&f->subs[i % 2], IN_MODIFY, 0, "/d", "f", 1, i);
        g_assert_cmpuint(delivery_queue_size(&f->c->queue), <=, limits.max_pending + 1);
        flush(f);
        g_assert_cmpuint(f->sink.notices->len, ==, 1);
        g_assert_cmpstr(f->sink.notices->pdata[0], ==, "overflow 10,11,");
        g_assert_cmpuint(f->c->queue.n_dropped, >, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, setup, fn, teardown)
        ADD("/client/new", test_new);
        ADD("/client/clients-per-user", test_clients_per_user);
        ADD("/client/queue-event", test_queue_event);
        ADD("/client/queue-removed", test_queue_removed);
        ADD("/client/queue-lost", test_queue_lost);
        ADD("/client/lost-all-none", test_lost_all_none);
        ADD("/client/backlog", test_backlog);
        return g_test_run();
}
