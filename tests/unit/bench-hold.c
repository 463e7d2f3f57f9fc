/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-hold - the cost of many holds on one client (not a test: meson builds it, nobody runs it)
 *
 * The burst of new directories in a recursive subscription (cp -r, tar x,
 * mkdir -p): each new directory's record is queued for the owner, then its
 * scan starts a hold of the owner (tree_open_submit()), so the owner is held
 * by as many holds as scans are queued. Here N such records and holds are
 * made, 64 to a loop turn (a slice of the kernel's read), and then the N
 * scans complete, 64 to a turn, in the order they were started ("fifo") or
 * in a shuffled one ("random"): each reports one entry with its hold applied
 * (holds_apply_begin()), then its hold ends. Each turn ends as the loop's
 * does: holds_expire(), a flush of the delivery, holds_next_deadline(). The
 * clock does not move, so no hold expires: what is timed is the hold
 * bookkeeping (and the delivery to a sink that keeps every record).
 *
 * Usage: bench-hold [fifo|random] N...   prints, for each N, the seconds
 * (wall and CPU) and checks that all 2N records came out.
 */

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/resource.h>

#include "client.h"
#include "fake-backend.h"
#include "hold.h"
#include "log.h"
#include "sink.h"

#define TURN 64u

static const DeliveryLimits limits = {
        .max_pending = 65536, /* the daemon's default max_pending_events_per_client */
        .max_bytes = UINT64_MAX,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 64,
        .pair_timeout_usec = 1000000,
        .pair_max_distance = 16,
};

static double cpu_seconds(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec +
                (double) ru.ru_stime.tv_usec / 1e6;
}

static void turn_end(Holds *hs, Delivery *d) {
        holds_expire(hs, 1);
        delivery_flush(d, UINT64_MAX);
        (void) holds_next_deadline(hs);
}

static void run(unsigned n, bool shuffle) {
        AccountingLimits al = {
                .max_watches_per_client = 100,
                .max_watches_per_user = 100,
                .max_watches_unprivileged = 1000,
                .max_clients_per_user = 4,
        };
        gid_t gid = 100;
        Caller caller = { .uid = 1000, .gid = gid, .gids = &gid, .n_gids = 1 };
        FakeBackend *fake = fake_backend_new();
        WatchTable *table = NULL;
        Accounting *accounting = NULL;
        Delivery *delivery = NULL;
        Holds *holds = NULL;
        Client *c = NULL;
        Subscription *s = NULL;
        Sink sink;
        Hold **h = calloc(n, sizeof(Hold *));
        GRand *rand = g_rand_new_with_seed(27);
        gint64 t0;
        double cpu0;

        g_assert_nonnull(h);
        g_assert_cmpint(watch_table_new(&fake->backend, &table), ==, 0);
        g_assert_cmpint(accounting_new(&al, &accounting), ==, 0);
        g_assert_cmpint(delivery_new(&limits, &delivery), ==, 0);
        g_assert_cmpint(holds_new(&(HoldsOps) {}, NULL, &holds), ==, 0);
        g_assert_cmpint(client_new(accounting, delivery, ":1.1", &caller, &c), ==, 0);
        sink_init(&sink);
        delivery_queue_set_transport(&c->queue, &sink_ops, &sink);
        g_assert_cmpint(watch_table_subscribe_pending(table, "/p", c, NULL, IN_ALL_EVENTS, 0, &s), ==, 0);
        client_link_subscription(c, s);

        t0 = g_get_monotonic_time();
        cpu0 = cpu_seconds();
        for (unsigned i = 0; i < n; i++) {
                client_queue_event(s, IN_CREATE | IN_ISDIR, 0, "/p", "d", 1, 1);
                h[i] = hold_new(holds, 1);
                client_hold(c, h[i]);
                hold_note_subscription(h[i], s->id);
                if ((i + 1) % TURN == 0)
                        turn_end(holds, delivery);
        }
        turn_end(holds, delivery);
        if (shuffle)
                for (unsigned i = n; i > 1; i--) {
                        unsigned j = (unsigned) g_rand_int_range(rand, 0, (gint32) i);
                        Hold *t = h[i - 1];

                        h[i - 1] = h[j];
                        h[j] = t;
                }
        for (unsigned i = 0; i < n; i++) {
                Hold *previous = holds_apply_begin(holds, h[i]);

                client_queue_event(s, IN_CREATE, 0, "/p/d", "f", 1, 1);
                holds_apply_end(holds, previous);
                hold_unref(h[i]);
                if ((i + 1) % TURN == 0)
                        turn_end(holds, delivery);
        }
        turn_end(holds, delivery);
        printf("%s N=%u: %.3f s wall, %.3f s CPU, %u records out\n", shuffle ? "random" : "fifo", n,
               (double) (g_get_monotonic_time() - t0) / 1e6, cpu_seconds() - cpu0, sink.events->len);
        g_assert_cmpuint(sink.events->len, ==, 2 * n);
        g_assert_null(c->hold);

        client_unlink_subscription(c, s);
        watch_table_unsubscribe(table, s);
        client_free(c);
        holds_free(holds);
        watch_table_free(table);
        delivery_free(delivery);
        accounting_free(accounting);
        fake_backend_free(fake);
        sink_done(&sink);
        g_rand_free(rand);
        free(h);
}

int main(int argc, char **argv) {
        bool shuffle = false;
        int k = 1;

        log_set_max_level(LOG_ERR);
        if (k < argc && g_str_equal(argv[k], "random")) {
                shuffle = true;
                k++;
        } else if (k < argc && g_str_equal(argv[k], "fifo"))
                k++;
        if (k == argc) {
                fprintf(stderr, "usage: %s [fifo|random] N...\n", argv[0]);
                return 2;
        }
        for (; k < argc; k++) {
                guint64 n;

                if (!g_ascii_string_to_unsigned(argv[k], 10, 1, 1000000, &n, NULL)) {
                        fprintf(stderr, "Not a number of holds from 1 to 1000000: \"%s\"\n", argv[k]);
                        return 2;
                }
                run((unsigned) n, shuffle);
        }
        return 0;
}
