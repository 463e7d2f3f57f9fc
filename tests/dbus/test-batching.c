/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-batching - how Events signals are cut, against a real watchd
 *
 * watchd holds a client's records while the client has not answered the
 * Peer.Ping sent after its last signal, and sends what gathered as one
 * signal when it answers. It asks (pings) only once CONFIRM_MIN records are
 * unconfirmed. These tests check the two ends of that: a storm arrives
 * complete, in order, in few signals; and a record after a quiet moment
 * goes alone, with no Ping after it, and, for a client that answers Ping
 * with an error or not at all, is not held.
 *
 * Each client sees its connection's traffic through a GDBus filter (run in
 * GDBus's worker thread): the Pings watchd sends it, the answers it gives,
 * and how many Pings it had seen when each Events signal came. The filter
 * can also answer Ping with an error, or drop it, as a client library
 * without Peer would.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* The storm: STORM_FILES creations, in rounds of STORM_ROUND (the client
 * receives each round before the next starts, so the kernel queue, 16384 by
 * default, never overflows however slow the machine). */
#define STORM_FILES 20000u
#define STORM_ROUND 4000u
/* Events signals the storm may take at most. Before backpressure batching
 * watchd sent one per kernel read: on a 2-core machine this storm took 3,054
 * to 7,355 signals (2.7 to 6.5 records each, 11 runs). With it, a signal
 * carries what gathered during one round trip to the client: 210 to 686
 * signals (29 to 95 records each, 11 runs). The bound sits between, with
 * room on both sides for a loaded machine. */
#define STORM_MAX_SIGNALS (STORM_FILES / 10u)

typedef enum PingMode {
        PING_ANSWER, /* GDBus answers, as every D-Bus library does */
        PING_ERROR,  /* answered with UnknownMethod */
        PING_DROP,   /* never answered */
} PingMode;

/* What a client's connection saw of watchd's Pings, through a GDBus filter.
 * Its records are in the fixture's collector (f->a). */
typedef struct Pings {
        GDBusConnection *conn;
        guint filter;
        gulong handler;
        PingMode mode;

        /* Written by the filter, in GDBus's worker thread. */
        gint n_pings;         /* Pings received */
        gint n_answered;      /* answers sent to them (by GDBus or by us) */
        gint ping_serial;     /* the last Ping's serial */
        gint pings_at_signal; /* n_pings when the last Events signal came */

        /* Written by the signal handler, in the main thread. */
        gint pings_at_record; /* pings_at_signal for the record awaited, see await_records() */
} Pings;

static gboolean send_ping_error(gpointer data) {
        GDBusMessage *ping = data;
        g_autoptr(GDBusMessage) reply = NULL;
        Pings *c = g_object_get_data(G_OBJECT(ping), "client");

        reply = g_dbus_message_new_method_error(ping, "org.freedesktop.DBus.Error.UnknownMethod",
                                                "No Peer interface here.");
        g_assert_true(g_dbus_connection_send_message(c->conn, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL));
        g_atomic_int_inc(&c->n_answered);
        g_object_unref(ping);
        return G_SOURCE_REMOVE;
}

static GDBusMessage *filter(GDBusConnection *conn, GDBusMessage *msg, gboolean incoming, gpointer data) {
        Pings *c = data;
        GDBusMessageType type = g_dbus_message_get_message_type(msg);

        if (incoming && type == G_DBUS_MESSAGE_TYPE_METHOD_CALL &&
            g_strcmp0(g_dbus_message_get_interface(msg), "org.freedesktop.DBus.Peer") == 0 &&
            g_strcmp0(g_dbus_message_get_member(msg), "Ping") == 0) {
                g_atomic_int_set(&c->ping_serial, (gint) g_dbus_message_get_serial(msg));
                g_atomic_int_inc(&c->n_pings);
                g_main_context_wakeup(NULL);
                switch (c->mode) {
                case PING_ANSWER:
                        return msg;
                case PING_ERROR:
                        /* Answered from the main thread: the filter must not send. */
                        g_object_set_data(G_OBJECT(msg), "client", c);
                        g_main_context_invoke(NULL, send_ping_error, msg);
                        return NULL;
                case PING_DROP:
                        g_object_unref(msg);
                        return NULL;
                }
        }
        if (incoming && type == G_DBUS_MESSAGE_TYPE_SIGNAL && g_strcmp0(g_dbus_message_get_member(msg), "Events") == 0)
                g_atomic_int_set(&c->pings_at_signal, g_atomic_int_get(&c->n_pings));
        if (!incoming && type == G_DBUS_MESSAGE_TYPE_METHOD_RETURN && c->mode == PING_ANSWER &&
            g_dbus_message_get_reply_serial(msg) == (guint32) g_atomic_int_get(&c->ping_serial)) {
                /* Queued on the connection before anything the test sends after seeing it. */
                g_atomic_int_inc(&c->n_answered);
                g_main_context_wakeup(NULL);
        }
        return msg;
}

static void on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        Pings *c = data;

        /* Signals are dispatched in arrival order, after the filter saw them
         * (and after the collector, connected first, took their records). */
        c->pings_at_record = g_atomic_int_get(&c->pings_at_signal);
}

/* Watches f's first client (f->conn, f->proxy) and treats its Pings as mode says. */
static void pings_attach(Pings *c, WtFixture *f, PingMode mode) {
        *c = (Pings) { .conn = f->conn, .mode = mode };
        c->filter = g_dbus_connection_add_filter(c->conn, filter, c, NULL);
        c->handler = g_signal_connect(f->proxy, "events", G_CALLBACK(on_events), c);
}

static void pings_detach(Pings *c, WtFixture *f) {
        g_signal_handler_disconnect(f->proxy, c->handler);
        g_dbus_connection_remove_filter(c->conn, c->filter);
}

/* How many records of f->a have a mask other than IN_CREATE. */
static guint bad_masks(WtFixture *f) {
        guint n = 0;

        for (guint i = 0; i < f->a.records->len; i++)
                n += wt_collector_record(&f->a, i)->mask != IN_CREATE;
        return n;
}

static char *storm_path(WtFixture *f, guint i) {
        return g_strdup_printf("%s/f-%05u", wt_fixture_fast_dir(f), i);
}

static void create(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create '%s': %s", path, g_strerror(errno));
        g_assert_cmpint(close(fd), ==, 0);
}

typedef struct Count {
        WtCollector *c;
        guint n;
} Count;

static gboolean count_met(gpointer data) {
        Count *w = data;
        return w->c->records->len >= w->n || w->c->n_overflows > 0;
}

/* Awaits n records of f->a; an Overflow fails the test at once. */
static void await_records(WtFixture *f, guint n, int timeout_ms) {
        Count w = { &f->a, n };

        if (!wt_await(count_met, &w, timeout_ms) || f->a.n_overflows > 0)
                g_error("Got %u records and %u Overflow, wanted %u records within %d ms", f->a.records->len,
                        f->a.n_overflows, n, timeout_ms);
}

static const char *record_path(WtFixture *f, guint i) {
        return wt_collector_record(&f->a, i)->path;
}

/* A storm arrives whole, in order, once, in signals that carry many records. */
static void test_storm(WtFixture *f, gconstpointer data) {
        Pings c;
        guint64 signals, delivered;
        gint64 t0;

        pings_attach(&c, f, PING_ANSWER);
        wt_add_watch(f->proxy, wt_fixture_fast_dir(f), IN_CREATE, 0, NULL);
        t0 = g_get_monotonic_time();
        for (guint i = 0; i < STORM_FILES; i++) {
                g_autofree char *p = storm_path(f, i);

                create(p);
                if ((i + 1) % STORM_ROUND == 0)
                        await_records(f, i + 1, 60000);
        }

        for (guint i = 0; i < f->a.records->len && i < STORM_FILES; i++) {
                g_autofree char *want = storm_path(f, i);

                if (strcmp(record_path(f, i), want) != 0)
                        g_error("Record %u is '%s', not '%s'", i, record_path(f, i), want);
        }
        g_assert_cmpuint(f->a.records->len, ==, STORM_FILES);
        g_assert_cmpuint(bad_masks(f), ==, 0);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);

        signals = wt_stat(f->proxy, "signals_sent");
        delivered = wt_stat(f->proxy, "events_delivered");
        g_test_message("storm: %u records in %" G_GUINT64_FORMAT " signals (%.1f a signal, largest %u) "
                       "in %" G_GINT64_FORMAT " ms; %d Pings",
                       STORM_FILES, signals, (double) STORM_FILES / (double) signals, f->a.max_batch,
                       (g_get_monotonic_time() - t0) / 1000, g_atomic_int_get(&c.n_pings));
        g_assert_cmpuint(delivered, ==, STORM_FILES);
        g_assert_cmpuint(signals, ==, f->a.n_signals);
        g_assert_cmpuint(signals, <=, STORM_MAX_SIGNALS);
        pings_detach(&c, f);
}

typedef struct Answered {
        Pings *c;
        gint n;
} Answered;

static gboolean answered_met(gpointer data) {
        Answered *a = data;
        return g_atomic_int_get(&a->c->n_answered) >= a->n;
}

static gboolean pinged_met(gpointer data) {
        return g_atomic_int_get(&((Pings *) data)->n_pings) > 0;
}

/* Records a client may have unconfirmed before watchd asks it (daemon/delivery.c
 * CONFIRM_MIN_UNREAD, with the default window). */
#define CONFIRM_MIN 16u

/*
 * A record now and then goes at once and alone: no Peer.Ping follows it
 * (before, every signal was followed by one: three bus messages a record),
 * until CONFIRM_MIN records are unconfirmed. mode says how the client
 * treats that Ping: one that answers has none in flight once it answered;
 * one that does not answer (an error, or nothing) must not have its records
 * held for an answer that is not coming. Either way the next record goes at
 * once, without a Ping before it.
 */
static void test_quiet(WtFixture *f, PingMode mode) {
        const char *dir = wt_fixture_fast_dir(f);
        g_autofree char *a = g_build_filename(dir, "a", NULL), *z = g_build_filename(dir, "z", NULL);
        Pings c;
        gint pings;

        pings_attach(&c, f, mode);
        wt_add_watch(f->proxy, dir, IN_CREATE, 0, NULL);

        create(a);
        await_records(f, 1, TIMEOUT_MS);
        g_assert_cmpint(c.pings_at_record, ==, 0);
        /* A Ping sent after "a" would reach us before this call's reply. */
        g_assert_cmpuint(wt_stat(f->proxy, "signals_sent"), ==, 1);
        g_assert_cmpint(g_atomic_int_get(&c.n_pings), ==, 0);

        /* CONFIRM_MIN unconfirmed: watchd asks whether they were read; the client answers (or not). */
        for (guint i = 1; i < CONFIRM_MIN; i++) {
                g_autofree char *p = storm_path(f, i);
                create(p);
        }
        await_records(f, CONFIRM_MIN, TIMEOUT_MS);
        g_assert_true(wt_await(pinged_met, &c, TIMEOUT_MS));
        if (mode != PING_DROP) {
                Answered w = { &c, 1 };
                g_assert_true(wt_await(answered_met, &w, TIMEOUT_MS));
        }
        /* The answer went out before this call, so watchd has read it when it replies. */
        (void) wt_stat(f->proxy, "signals_sent");
        pings = g_atomic_int_get(&c.n_pings);
        g_assert_cmpint(pings, ==, 1);

        create(z);
        /* No fixed bound on latency is asserted: 1 s only catches a record
         * held for an answer (sd-bus waits 25 s for one). */
        await_records(f, CONFIRM_MIN + 1, 1000);
        g_assert_cmpstr(record_path(f, CONFIRM_MIN), ==, z);
        /* And it came without a Ping round trip before it. */
        g_assert_cmpint(c.pings_at_record, ==, pings);
        g_assert_cmpint(g_atomic_int_get(&c.n_pings), ==, pings);
        pings_detach(&c, f);
}

static void test_quiet_answer(WtFixture *f, gconstpointer data) {
        test_quiet(f, PING_ANSWER);
}

static void test_quiet_ping_error(WtFixture *f, gconstpointer data) {
        test_quiet(f, PING_ERROR);
}

static void test_quiet_ping_dropped(WtFixture *f, gconstpointer data) {
        test_quiet(f, PING_DROP);
}

/* A client that answers Ping with an error has read what came before: its storm flows, batched. */
static void test_storm_ping_error(WtFixture *f, gconstpointer data) {
        Pings c;
        guint64 signals;

        pings_attach(&c, f, PING_ERROR);
        wt_add_watch(f->proxy, wt_fixture_fast_dir(f), IN_CREATE, 0, NULL);
        for (guint i = 0; i < STORM_ROUND; i++) {
                g_autofree char *p = storm_path(f, i);
                create(p);
        }
        await_records(f, STORM_ROUND, 60000);
        g_assert_cmpuint(f->a.records->len, ==, STORM_ROUND);
        for (guint i = 0; i < STORM_ROUND; i++) {
                g_autofree char *want = storm_path(f, i);
                g_assert_cmpstr(record_path(f, i), ==, want);
        }
        signals = wt_stat(f->proxy, "signals_sent");
        g_test_message("storm, Ping answered with an error: %u records in %" G_GUINT64_FORMAT " signals, %d Pings",
                       STORM_ROUND, signals, g_atomic_int_get(&c.n_pings));
        g_assert_cmpint(g_atomic_int_get(&c.n_pings), >, 0);
        pings_detach(&c, f);
}

/* read_pause_us of the case below, its longest: long beside the pace of the
 * test's own writer, so that a pause gathers many records. */
#define PAUSE_USEC  5000
#define PAUSE_FILES 3000u
/* The kernel's read buffer (daemon/events.c KERNEL_READ_BUF) and the size of
 * a storm record ("f-NNNNN": 16 bytes and the name padded to 16). */
#define READ_BUF    65536u
#define RECORD_SIZE 32u

/*
 * A storm is read in batches (daemon/loop.c, read_pause_us): once a read has
 * emptied the kernel's queue, the fd rests for the pause. So a storm takes
 * at most one read a pause over its time, and those a full buffer needs;
 * without the rest it took one for every record or three, hundreds here.
 * A record after a quiet moment is read at once, not a pause later: of three
 * such records, one at least comes within the pause (every one would come a
 * pause late if each read waited for it). A rename made while the fd rests
 * comes paired.
 */
static void test_read_pause(WtFixture *f, gconstpointer data) {
        const char *dir = wt_fixture_fast_dir(f);
        g_autofree char *a = g_build_filename(dir, "a", NULL), *b = g_build_filename(dir, "b", NULL);
        gint64 t0, storm, fastest = G_MAXINT64;
        guint64 reads;
        WtRecord *r;
        guint n;

        wt_add_watch(f->proxy, dir, IN_CREATE | IN_MOVE, 0, NULL);
        reads = wt_stat(f->proxy, "kernel_reads");
        t0 = g_get_monotonic_time();
        for (guint i = 0; i < PAUSE_FILES; i++) {
                g_autofree char *p = storm_path(f, i);
                create(p);
        }
        await_records(f, PAUSE_FILES, 60000);
        storm = g_get_monotonic_time() - t0;
        reads = wt_stat(f->proxy, "kernel_reads") - reads;
        g_test_message("read pause: %u records in %" G_GUINT64_FORMAT " reads over %" G_GINT64_FORMAT " ms",
                       PAUSE_FILES, reads, storm / 1000);
        g_assert_cmpuint(reads, <=, storm / PAUSE_USEC + 1 + PAUSE_FILES * RECORD_SIZE / READ_BUF + 1);

        /* Not under valgrind or sanitizers: there the daemon alone may take longer. */
        for (guint k = 0; k < 3 && fastest >= PAUSE_USEC && wt_timing_checked(); k++) {
                g_autofree char *p = g_strdup_printf("%s/lone-%u", dir, k);

                n = f->a.records->len;
                g_usleep(2 * PAUSE_USEC); /* past the rest */
                t0 = g_get_monotonic_time();
                create(p);
                await_records(f, n + 1, TIMEOUT_MS);
                fastest = MIN(fastest, g_get_monotonic_time() - t0);
                g_assert_cmpstr(record_path(f, n), ==, p);
        }
        if (wt_timing_checked()) {
                g_test_message("read pause: a record after a quiet moment came in %" G_GINT64_FORMAT " us", fastest);
                g_assert_cmpint(fastest, <, PAUSE_USEC);
        }

        n = f->a.records->len;
        create(a);
        await_records(f, n + 1, TIMEOUT_MS);
        g_assert_cmpint(rename(a, b), ==, 0); /* the fd rests: "a" was read just now */
        r = wt_await_record(&f->a, a, IN_MOVED_FROM | IN_MOVED_TO, TIMEOUT_MS);
        g_assert_cmpstr(r->new_path, ==, b);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        WT_CASE("/batching/storm", "[limits]\nmax_pending_events_per_client = 200000\n", test_storm);
        WT_CASE("/batching/storm-ping-error", "[limits]\nmax_pending_events_per_client = 200000\n",
                test_storm_ping_error);
        WT_CASE("/batching/quiet", NULL, test_quiet_answer);
        WT_CASE("/batching/quiet-ping-error", NULL, test_quiet_ping_error);
        WT_CASE("/batching/quiet-ping-dropped", NULL, test_quiet_ping_dropped);
        WT_CASE("/batching/read-pause", "[events]\nread_pause_us = 5000\n", test_read_pause);

        return g_test_run();
}
