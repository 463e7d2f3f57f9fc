/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-hostile - libwatchd against a watchd that breaks the protocol
 *
 * With watchd off the system bus, any process of the user may own
 * org.example.Inotify on the session bus, where programs look next: what it
 * says is input, not truth (docs/CLIENTS.md, "What a program can trust").
 * Each case starts a private dbus-daemon and a fake watchd on it
 * (fake-watchd.h), makes a WatchdClient for the bus, and has the fake say
 * one thing a real watchd never does: AddWatch answered with 0 or with an
 * id in use, records of ids it never gave, paths longer than PATH_MAX, not
 * canonical or outside the subscription, signals of the wrong type, a
 * flood. The library must fail the call, or drop the record with one
 * warning (g_test_expect_message: a second one would be fatal), emit
 * nothing it should not, hold no more than its cap, and not crash (the
 * sanitize suite runs these under ASan).
 *
 * Most cases run twice: the records as D-Bus signals ("/hostile/signals/")
 * and over the client's record stream ("/hostile/stream/"), the two ways
 * records reach the library. A barrier makes each check exact: a GetStats
 * round trip for signals (the fake answers after what it sent before), a
 * record of a sentinel subscription for the stream.
 */

#include <limits.h>
#include <string.h>

#include <watchd.h>

#include "fake-watchd.h"
#include "watchd-test.h"

#define TIMEOUT_MS 20000
#define MOVE       (WATCHD_EVENT_MOVED_FROM | WATCHD_EVENT_MOVED_TO)

typedef struct Params {
        gboolean stream;
        guint max_queued_bytes; /* 0: the default */
} Params;

static const Params signals_default = { .stream = FALSE };
static const Params stream_default = { .stream = TRUE };
static const Params signals_small = { .stream = FALSE, .max_queued_bytes = 1024 * 1024 };
static const Params stream_small = { .stream = TRUE, .max_queued_bytes = 1024 * 1024 };

/* What one subscription emitted, in order: "E path[>new]" or "O reason" or "R reason". */
typedef struct Rec {
        GPtrArray *log;
        guint n_events;
        guint n_overflows;
        gboolean removed;
        GError *removed_error;
} Rec;

typedef struct Fixture {
        const Params *p;
        WtBus *bus;
        FakeWatchd *fake;
        WatchdClient *client;
        char *client_name;            /* the client's unique name: where signals go */
        WatchdSubscription *sentinel; /* id 1: its records are the stream's barrier */
        Rec sentinel_rec;
        guint sentinel_n;
} Fixture;

static void rec_init(Rec *r) {
        *r = (Rec) { .log = g_ptr_array_new_with_free_func(g_free) };
}

static void rec_clear(Rec *r) {
        g_ptr_array_unref(r->log);
        g_clear_error(&r->removed_error);
}

static void on_events(WatchdSubscription *sub, GPtrArray *events, gpointer data) {
        Rec *r = data;

        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                const char *np = watchd_event_get_new_path(e);

                g_ptr_array_add(r->log, g_strdup_printf("E %s%s%s", watchd_event_get_path(e), np ? ">" : "", np ?: ""));
                r->n_events++;
        }
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer data) {
        Rec *r = data;

        g_ptr_array_add(r->log, g_strdup_printf("O %d", reason));
        r->n_overflows++;
}

static void on_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail, const GError *error,
                       gpointer data) {
        Rec *r = data;

        g_ptr_array_add(r->log, g_strdup_printf("R %d", reason));
        r->removed = TRUE;
        r->removed_error = error ? g_error_copy(error) : NULL;
}

static WatchdSubscription *new_sub(Fixture *f, Rec *r, const char *path, WatchdWatchFlags flags) {
        WatchdSubscription *sub = watchd_subscription_new(f->client, path, WATCHD_EVENT_ALL, flags);

        rec_init(r);
        g_signal_connect(sub, "events", G_CALLBACK(on_events), r);
        g_signal_connect(sub, "overflow", G_CALLBACK(on_overflow), r);
        g_signal_connect(sub, "removed", G_CALLBACK(on_removed), r);
        return sub;
}

/* A subscription the fake accepted (with the next id, or the one queued). */
static WatchdSubscription *watch(Fixture *f, Rec *r, const char *path, WatchdWatchFlags flags) {
        g_autoptr(GError) error = NULL;
        WatchdSubscription *sub = new_sub(f, r, path, flags);

        g_assert_true(watchd_subscription_start_sync(sub, NULL, &error));
        g_assert_no_error(error);
        return sub;
}

static const char *rec_line(Rec *r, guint i) {
        return i < r->log->len ? r->log->pdata[i] : "(nothing)";
}

static char *rec_dump(Rec *r) {
        GString *s = g_string_new(NULL);

        for (guint i = 0; i < r->log->len && i < 20; i++)
                g_string_append_printf(s, "  %s\n", rec_line(r, i));
        if (r->log->len > 20)
                g_string_append_printf(s, "  ... %u lines\n", r->log->len);
        return g_string_free(s, FALSE);
}

/* What r emitted is want, overflows in a row counted once: when the
 * program's context runs between two losses with nothing between them
 * (the stream's records come in reads of their own), each has its own. */
static void assert_log(Rec *r, const char *const *want) {
        g_autoptr(GPtrArray) got = g_ptr_array_new();
        guint n = g_strv_length((char **) want);

        for (guint i = 0; i < r->log->len; i++)
                if (!g_str_has_prefix(r->log->pdata[i], "O ") || got->len == 0 ||
                    !g_str_equal(got->pdata[got->len - 1], r->log->pdata[i]))
                        g_ptr_array_add(got, r->log->pdata[i]);
        for (guint i = 0; i < MAX(n, got->len); i++)
                if (i >= n || i >= got->len || !g_str_equal(want[i], got->pdata[i])) {
                        g_autofree char *dump = rec_dump(r);

                        g_error("line %u: want \"%s\", got \"%s\"; all:\n%s", i, i < n ? want[i] : "(nothing)",
                                i < got->len ? (const char *) got->pdata[i] : "(nothing)", dump);
                }
}

/* ------------------------------------------------------------------------ */
/* Sending, the transport of the case */

typedef struct Record {
        guint32 id, mask, cookie;
        const char *path, *new_path;
} Record;

static void send_records(Fixture *f, const Record *recs, size_t n) {
        GVariantBuilder b;

        if (f->p->stream) {
                for (size_t i = 0; i < n; i++)
                        fake_watchd_stream_event(f->fake, recs[i].id, recs[i].mask, recs[i].cookie, recs[i].path,
                                                 recs[i].new_path);
                return;
        }
        g_variant_builder_init(&b, G_VARIANT_TYPE("a(uuuss)"));
        for (size_t i = 0; i < n; i++)
                g_variant_builder_add(&b, "(uuuss)", recs[i].id, recs[i].mask, recs[i].cookie, recs[i].path,
                                      recs[i].new_path ?: "");
        fake_watchd_signal(f->fake, f->client_name, "Events", g_variant_new("(a(uuuss))", &b));
}

static void send_record(Fixture *f, guint32 id, guint32 mask, const char *path, const char *new_path) {
        Record r = { .id = id, .mask = mask, .path = path, .new_path = new_path };

        send_records(f, &r, 1);
}

static void send_overflow(Fixture *f, guint32 id) {
        if (f->p->stream)
                fake_watchd_stream_overflow(f->fake, &id, 1);
        else
                fake_watchd_signal(f->fake, f->client_name, "Overflow", g_variant_new_parsed("([%u],)", id));
}

static void send_removed(Fixture *f, guint32 id, const char *reason) {
        if (f->p->stream)
                fake_watchd_stream_removed(f->fake, id, reason);
        else
                fake_watchd_signal(f->fake, f->client_name, "WatchRemoved", g_variant_new("(us)", id, reason));
}

static gboolean sentinel_seen(gpointer data) {
        Fixture *f = data;
        g_autofree char *want = g_strdup_printf("E /sentinel/%u", f->sentinel_n);

        for (guint i = 0; i < f->sentinel_rec.log->len; i++)
                if (g_str_equal(f->sentinel_rec.log->pdata[i], want))
                        return TRUE;
        return FALSE;
}

static void drain(void) {
        while (g_main_context_iteration(NULL, FALSE))
                ;
}

/* Everything sent so far was handled by the client and emitted. */
static void barrier(Fixture *f) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) stats = NULL;

        if (f->p->stream) {
                g_autofree char *path = g_strdup_printf("/sentinel/%u", ++f->sentinel_n);

                fake_watchd_stream_event(f->fake, watchd_subscription_get_id(f->sentinel), WATCHD_EVENT_CREATE, 0, path,
                                         NULL);
                g_assert_true(wt_await(sentinel_seen, f, TIMEOUT_MS));
        }
        /* Signals: answered after what the fake sent before, on the same
         * connection; and again, after the ListWatches a record may have
         * made the client send before the first answer (what it held for
         * that is then released). Both: what the client called before
         * (RemoveWatch) has reached the fake. */
        for (int i = 0; i < 2; i++) {
                g_clear_pointer(&stats, g_variant_unref);
                stats = watchd_client_get_stats_sync(f->client, NULL, &error);
                g_assert_no_error(error);
        }
        drain();
}

/* The same without running the client's context: what it holds stays held.
 * The stream's: the sentinel removed (its state changes under the lock,
 * before anything is emitted). */
static void barrier_held(Fixture *f) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) stats = NULL;
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;

        if (f->p->stream) {
                fake_watchd_stream_removed(f->fake, watchd_subscription_get_id(f->sentinel), "deleted");
                while (watchd_subscription_is_active(f->sentinel)) {
                        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                        g_usleep(1000);
                }
        } else
                for (int i = 0; i < 2; i++) {
                        g_clear_pointer(&stats, g_variant_unref);
                        stats = watchd_client_get_stats_sync(f->client, NULL, &error);
                        g_assert_no_error(error);
                }
}

/* ------------------------------------------------------------------------ */

static WatchdClient *make_client(Fixture *f) {
        g_autoptr(GError) error = NULL;
        WatchdClient *c;

        if (f->p->max_queued_bytes)
                c = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", f->bus->address, "use-stream",
                                   f->p->stream, "max-queued-bytes", f->p->max_queued_bytes, NULL);
        else
                c = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", f->bus->address, "use-stream",
                                   f->p->stream, NULL);
        g_assert_no_error(error);
        return c;
}

static const char *const caps_signals[] = { "persistent", "report-appearance", NULL };
static const char *const caps_stream[] = { "persistent", "report-appearance", "stream", NULL };

static void setup(Fixture *f, gconstpointer data) {
        gboolean streaming = FALSE;

        f->p = data;
        f->bus = wt_bus_start();
        f->fake = fake_watchd_start(f->bus->address, f->p->stream ? caps_stream : caps_signals);
        f->client = make_client(f);
        f->client_name = g_strdup(g_dbus_connection_get_unique_name(watchd_client_get_connection(f->client)));
        g_object_get(f->client, "use-stream", &streaming, NULL);
        g_assert_cmpint(streaming, ==, f->p->stream);
        g_assert_true(f->p->stream == fake_watchd_has_stream(f->fake));
        f->sentinel = watch(f, &f->sentinel_rec, "/sentinel", 0);
        g_assert_cmpuint(watchd_subscription_get_id(f->sentinel), ==, 1);
}

static void teardown(Fixture *f, gconstpointer data) {
        if (f->sentinel) {
                watchd_subscription_cancel(f->sentinel);
                g_object_unref(f->sentinel);
        }
        if (f->client) {
                watchd_client_close(f->client);
                g_object_unref(f->client);
        }
        drain();
        rec_clear(&f->sentinel_rec);
        fake_watchd_stop(f->fake);
        wt_bus_stop(f->bus);
        g_free(f->client_name);
}

static void expect_warning(const char *pattern) {
        g_test_expect_message("libwatchd", G_LOG_LEVEL_WARNING, pattern);
}

/* ------------------------------------------------------------------------ */
/* AddWatch answered with what cannot be an id */

/* The report of issue 25: AddWatch answered with 0, then WatchRemoved(0)
 * and Events for 0. The id was stored and never removed; the subscription
 * freed, its events reached it (a use-after-free). Now the call fails, and
 * records of 0 are records of an id watchd never gave. */
static void test_add_zero(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) bad = NULL, good = NULL;
        g_autoptr(GError) error = NULL;
        Rec rb, rg;

        fake_watchd_push_add_reply(f->fake, g_variant_new("(u)", 0), NULL);
        bad = new_sub(f, &rb, "/w", 0);
        g_assert_false(watchd_subscription_start_sync(bad, NULL, &error));
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        g_assert_false(watchd_subscription_is_active(bad));
        good = watch(f, &rg, "/v", 0);

        expect_warning("*never made*");
        send_removed(f, 0, "deleted");
        send_record(f, 0, WATCHD_EVENT_CREATE, "/w/x", NULL);
        send_overflow(f, 0);
        send_record(f, watchd_subscription_get_id(good), WATCHD_EVENT_CREATE, "/v/y", NULL);
        barrier(f);
        g_test_assert_expected_messages();
        assert_log(&rb, (const char *const[]) { NULL });
        assert_log(&rg, (const char *const[]) { "E /v/y", NULL });
        /* The subscription whose start failed may be started again. */
        g_assert_true(watchd_subscription_start_sync(bad, NULL, NULL));
        watchd_subscription_cancel(bad);
        watchd_subscription_cancel(good);
        rec_clear(&rb);
        rec_clear(&rg);
}

/* AddWatch answered with the id of a live subscription: the call fails, the
 * other subscription keeps its id and its records, and no RemoveWatch of that
 * id is sent (it would end the other one). */
static void test_add_in_use(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL, b = NULL;
        g_autoptr(GError) error = NULL;
        guint32 id;
        Rec ra, rb;

        a = watch(f, &ra, "/a", 0);
        id = watchd_subscription_get_id(a);
        fake_watchd_push_add_reply(f->fake, g_variant_new("(u)", id), NULL);
        b = new_sub(f, &rb, "/b", 0);
        g_assert_false(watchd_subscription_start_sync(b, NULL, &error));
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        /* The sentinel's id too. */
        g_clear_error(&error);
        fake_watchd_push_add_reply(f->fake, g_variant_new("(u)", 1), NULL);
        g_assert_false(watchd_subscription_start_sync(b, NULL, &error));
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);

        send_record(f, id, WATCHD_EVENT_CREATE, "/a/x", NULL);
        barrier(f);
        g_assert_false(fake_watchd_was_removed(f->fake, id));
        g_assert_false(fake_watchd_was_removed(f->fake, 1));
        g_assert_true(watchd_subscription_is_active(a));
        g_assert_cmpuint(watchd_subscription_get_id(a), ==, id);
        assert_log(&ra, (const char *const[]) { "E /a/x", NULL });
        assert_log(&rb, (const char *const[]) { NULL });
        watchd_subscription_cancel(a);
        rec_clear(&ra);
        rec_clear(&rb);
}

static gboolean client_restarted(gpointer data) {
        return *(gboolean *) data;
}

static void on_restarted(WatchdClient *c, gpointer data) {
        *(gboolean *) data = TRUE;
}

/* After a restart, the new watchd answers the second add again with the id
 * it gave the first: that subscription ends (removed, ERROR), the other one
 * keeps the id. */
static void test_readd_in_use(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL, b = NULL;
        g_autoptr(GVariant) stats = NULL;
        gboolean restarted = FALSE;
        Rec ra, rb, *lost;

        a = watch(f, &ra, "/a", 0);
        b = watch(f, &rb, "/b", 0);
        watchd_subscription_cancel(f->sentinel);
        g_signal_connect(f->client, "daemon-restarted", G_CALLBACK(on_restarted), &restarted);
        fake_watchd_stop(f->fake);
        f->fake = fake_watchd_new(f->bus->address, caps_signals);
        /* a and b are added again in some order: the second gets the first's id. */
        fake_watchd_push_add_reply(f->fake, g_variant_new("(u)", 11), NULL);
        fake_watchd_push_add_reply(f->fake, g_variant_new("(u)", 11), NULL);
        fake_watchd_take_name(f->fake);
        g_assert_true(wt_await(client_restarted, &restarted, TIMEOUT_MS));
        lost = ra.removed ? &ra : &rb;
        g_assert_true(ra.removed != rb.removed);
        g_assert_error(lost->removed_error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        g_assert_cmpuint(watchd_subscription_get_id(lost == &ra ? b : a), ==, 11);
        g_assert_true(watchd_subscription_is_active(lost == &ra ? b : a));
        stats = watchd_client_get_stats_sync(f->client, NULL, NULL);
        g_assert_false(fake_watchd_was_removed(f->fake, 11));
        watchd_subscription_cancel(a);
        watchd_subscription_cancel(b);
        rec_clear(&ra);
        rec_clear(&rb);
}

/* ------------------------------------------------------------------------ */
/* Records of ids the client does not hold */

/* Ids watchd never gave: dropped, one warning for all of them. */
static void test_unknown_id(Fixture *f, gconstpointer data) {
        expect_warning("*never made*");
        for (int i = 0; i < 3; i++)
                send_record(f, 77, WATCHD_EVENT_CREATE, "/x/1", NULL);
        send_overflow(f, 77);
        send_removed(f, 78, "deleted");
        send_record(f, 1, WATCHD_EVENT_CREATE, "/sentinel/a", NULL);
        barrier(f);
        g_test_assert_expected_messages();
        g_assert_cmpstr(rec_line(&f->sentinel_rec, 0), ==, "E /sentinel/a");
        g_assert_cmpuint(f->sentinel_rec.n_overflows, ==, 0);
}

/* Records of a subscription the program cancelled a moment ago are what a
 * real watchd sends until it reads the RemoveWatch: dropped without a word. */
static void test_cancelled_quiet(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL;
        guint32 id;
        Rec ra;

        a = watch(f, &ra, "/a", 0);
        id = watchd_subscription_get_id(a);
        watchd_subscription_cancel(a);
        send_record(f, id, WATCHD_EVENT_CREATE, "/a/x", NULL);
        send_overflow(f, id);
        send_removed(f, id, "deleted");
        barrier(f);
        assert_log(&ra, (const char *const[]) { NULL });
        g_assert_true(fake_watchd_was_removed(f->fake, id));
        rec_clear(&ra);
}

/* The fake counts calls on its connection's thread: nothing of this
 * thread's context to wait on. */
static void await_adds(FakeWatchd *fw, guint n) {
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;

        while (fake_watchd_n_adds(fw) < n) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(1000);
        }
}

static void on_started(GObject *source, GAsyncResult *result, gpointer data) {
        g_autoptr(GError) error = NULL;

        g_assert_true(watchd_subscription_start_finish(WATCHD_SUBSCRIPTION(source), result, &error));
        g_assert_no_error(error);
        *(gboolean *) data = TRUE;
}

/* Records before the AddWatch answer are kept for the id it will give (a
 * RECURSIVE walk sends some); once no call waits, what no answer claimed
 * was for an id watchd never gave: dropped, one warning. */
static void test_unclaimed_unknown(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) b = NULL, c = NULL;
        gboolean b_started = FALSE, c_started = FALSE;
        Rec rb, rc;

        fake_watchd_hold_adds(f->fake, TRUE);
        b = new_sub(f, &rb, "/b", 0);
        c = new_sub(f, &rc, "/c", 0);
        watchd_subscription_start(b, NULL, on_started, &b_started);
        watchd_subscription_start(c, NULL, on_started, &c_started);
        await_adds(f->fake, 3);
        send_record(f, 2, WATCHD_EVENT_CREATE, "/b/early", NULL);
        send_record(f, 9, WATCHD_EVENT_CREATE, "/b/bogus", NULL);
        send_record(f, 3, WATCHD_EVENT_CREATE, "/c/early", NULL);
        barrier_held(f);
        expect_warning("*never made*");
        fake_watchd_hold_adds(f->fake, FALSE);
        g_assert_true(wt_await_flag(&b_started, TIMEOUT_MS));
        g_assert_true(wt_await_flag(&c_started, TIMEOUT_MS));
        drain();
        g_test_assert_expected_messages();
        assert_log(&rb, (const char *const[]) { "E /b/early", NULL });
        assert_log(&rc, (const char *const[]) { "E /c/early", NULL });
        watchd_subscription_cancel(b);
        watchd_subscription_cancel(c);
        rec_clear(&rb);
        rec_clear(&rc);
}

/* ------------------------------------------------------------------------ */
/* Paths */

/* Longer than PATH_MAX, or not absolute and canonical: dropped (the
 * subscription hears an overflow), one warning for all. */
static void test_bad_paths(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL;
        g_autofree char *pad = g_strnfill(PATH_MAX - 3, 'a');
        g_autofree char *too_long = g_strconcat("/w/", pad, NULL); /* PATH_MAX bytes, without the NUL */
        g_autofree char *fits = g_strconcat("/w/", pad + 1, NULL); /* PATH_MAX - 1 */
        g_autofree char *want_fits = NULL;
        static const char *const bad[] = {
                "/w/../etc/passwd", "/w/./x", "/w//x", "w/x", "/w/x/", "", "/w/..", NULL,
        };
        guint32 id;
        Rec ra;

        a = watch(f, &ra, "/w", 0);
        id = watchd_subscription_get_id(a);
        expect_warning("*malformed record*");
        send_record(f, id, WATCHD_EVENT_CREATE, too_long, NULL);
        for (size_t i = 0; bad[i]; i++)
                send_record(f, id, WATCHD_EVENT_CREATE, bad[i], NULL);
        /* A new path in a record that is not a rename, and a rename's too long. */
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/x", "/w/y");
        send_record(f, id, MOVE, "/w/x", too_long);
        send_record(f, id, WATCHD_EVENT_CREATE, fits, NULL);
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/ok", NULL);
        barrier(f);
        g_test_assert_expected_messages();
        want_fits = g_strconcat("E ", fits, NULL);
        assert_log(&ra, (const char *const[]) { "O 0", want_fits, "E /w/ok", NULL }); /* WATCHD_OVERFLOW_DAEMON */
        watchd_subscription_cancel(a);
        rec_clear(&ra);
}

/* Outside the subscription it names (not below a recursive one, not in a
 * plain one's directory): watchd is asked where its subscriptions are now
 * (ListWatches: a directory renamed, a watch on its parent saw it); still
 * outside, the record is dropped with one warning. */
static void test_outside(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL, r = NULL;
        guint32 id, rid;
        Rec ra, rr;

        a = watch(f, &ra, "/w", 0);
        r = watch(f, &rr, "/t", WATCHD_WATCH_RECURSIVE);
        id = watchd_subscription_get_id(a);
        rid = watchd_subscription_get_id(r);
        expect_warning("*outside the subscription*");
        send_record(f, id, WATCHD_EVENT_CREATE, "/etc/passwd", NULL);
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/d/x", NULL); /* two levels down */
        send_record(f, id, WATCHD_EVENT_CREATE, "/wx", NULL);
        send_record(f, rid, WATCHD_EVENT_CREATE, "/tt/x", NULL);
        send_record(f, id, WATCHD_EVENT_CREATE, "/w", NULL); /* the directory itself */
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/ok", NULL);
        send_record(f, rid, WATCHD_EVENT_CREATE, "/t/a/b/c", NULL);
        /* A rename whose other end is under none of the client's subscriptions. */
        send_record(f, id, MOVE, "/w/x", "/elsewhere/x");
        send_record(f, id, MOVE, "/w/x", "/t/x");
        barrier(f);
        g_test_assert_expected_messages();
        /* One overflow for the records dropped in a row, another for the one
         * dropped after records were delivered. */
        assert_log(&ra, (const char *const[]) { "O 0", "E /w", "E /w/ok", "O 0", "E /w/x>/t/x", NULL });
        assert_log(&rr, (const char *const[]) { "O 0", "E /t/a/b/c", "E /w/x>/t/x", NULL });
        g_assert_cmpuint(fake_watchd_n_list_calls(f->fake), >=, 1);
        watchd_subscription_cancel(a);
        watchd_subscription_cancel(r);
        rec_clear(&ra);
        rec_clear(&rr);
}

/* What a real watchd does: the watched directory renamed where a watch on
 * its parent (another program's, maybe) sees it, and the subscription's
 * records name the new path. The library asks ListWatches once and follows. */
static void test_renamed(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL;
        guint32 id;
        Rec ra;

        a = watch(f, &ra, "/w/d", 0);
        id = watchd_subscription_get_id(a);
        fake_watchd_set_list_reply(f->fake,
                                   g_variant_new_parsed("([(uint32 1, '/sentinel', uint32 0, uint32 0), "
                                                        "(%u, '/w/e', uint32 0, uint32 0)],)",
                                                        id));
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/e/x", NULL);
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/e/y", NULL);
        barrier(f);
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/e/z", NULL);
        barrier(f);
        assert_log(&ra, (const char *const[]) { "E /w/e/x", "E /w/e/y", "E /w/e/z", NULL });
        g_assert_cmpuint(fake_watchd_n_list_calls(f->fake), ==, 1);
        watchd_subscription_cancel(a);
        rec_clear(&ra);
}

/* One record whose new path has 100,000 components (issue 25: 8.6 s of
 * client CPU, with the lock held, to walk its ancestors a copy a level):
 * longer than PATH_MAX, it is dropped at once. One of 2,000 components
 * (within PATH_MAX) is handed to every subscription that sees only its new
 * path, its ancestors walked in place (tests/libwatchd/test-paths.c counts
 * that work). */
static void test_deep_rename(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL, deep = NULL, plain = NULL;
        g_autoptr(GString) huge = g_string_new("/w");
        g_autoptr(GString) long_path = g_string_new("/w");
        g_autoptr(GString) deep_dir = g_string_new("/w");
        g_autofree char *want = NULL;
        gint64 start;
        Rec ra, rd, rp;

        for (int i = 0; i < 100000; i++)
                g_string_append(huge, "/a");
        for (int i = 0; i < 2000; i++)
                g_string_append(long_path, "/a");
        g_string_append(deep_dir, long_path->str + 2); /* the new path's directory */
        g_string_append(long_path, "/f");
        g_assert_cmpuint(long_path->len, <, PATH_MAX);
        a = watch(f, &ra, "/w", WATCHD_WATCH_RECURSIVE);
        deep = watch(f, &rd, deep_dir->str, 0);
        plain = watch(f, &rp, "/w/a", 0);

        expect_warning("*malformed record*");
        start = g_get_monotonic_time();
        send_record(f, watchd_subscription_get_id(a), MOVE, "/w/old", huge->str);
        send_record(f, watchd_subscription_get_id(a), MOVE, "/w/old", long_path->str);
        barrier(f);
        g_test_message("both records sent, handled and emitted in %" G_GINT64_FORMAT " ms",
                       (g_get_monotonic_time() - start) / 1000);
        if (wt_timing_checked())
                g_assert_cmpint(g_get_monotonic_time() - start, <, 2 * G_USEC_PER_SEC);
        g_test_assert_expected_messages();
        want = g_strdup_printf("E /w/old>%s", long_path->str);
        assert_log(&ra, (const char *const[]) { "O 0", want, NULL });
        assert_log(&rd, (const char *const[]) { want, NULL });
        assert_log(&rp, (const char *const[]) { NULL });
        watchd_subscription_cancel(a);
        watchd_subscription_cancel(deep);
        watchd_subscription_cancel(plain);
        rec_clear(&ra);
        rec_clear(&rd);
        rec_clear(&rp);
}

/* The program lets go of its client and subscriptions, without closing,
 * while the client waits for ListWatches: what it holds for that answer
 * keeps no subscription alive, so the client goes at once, in the program's
 * thread. (Held by reference, the last subscription was finalized on GDBus's
 * thread under the client's lock when the answer came, and the client's
 * dispose then took the lock again: a deadlock fuzz-libwatchd found.) */
static void test_last_reference(Fixture *f, gconstpointer data) {
        WatchdSubscription *a;
        gpointer client = f->client;
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;
        Rec ra;

        a = watch(f, &ra, "/w", 0);
        fake_watchd_hold_lists(f->fake, TRUE);
        send_record(f, watchd_subscription_get_id(a), WATCHD_EVENT_CREATE, "/elsewhere/x", NULL);
        while (fake_watchd_n_list_calls(f->fake) < 1) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(1000);
        }
        g_object_add_weak_pointer(G_OBJECT(client), &client);
        watchd_subscription_cancel(a);
        watchd_subscription_cancel(f->sentinel);
        g_object_unref(a);
        g_clear_object(&f->sentinel);
        g_clear_object(&f->client);
        drain();
        g_assert_null(client);
        fake_watchd_hold_lists(f->fake, FALSE);
        drain();
        assert_log(&ra, (const char *const[]) { NULL });
        rec_clear(&ra);
}

/* ------------------------------------------------------------------------ */
/* Signals of the wrong type */

static void test_signature(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL, b = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) list = NULL;
        guint32 id;
        Rec ra, rb;

        a = watch(f, &ra, "/w", 0);
        id = watchd_subscription_get_id(a);
        expect_warning("*with the arguments*");
        fake_watchd_signal(f->fake, f->client_name, "Events",
                           g_variant_new_parsed("([(%u, uint32 256, uint32 0, '/w/x')],)", id));
        fake_watchd_signal(f->fake, f->client_name, "Events", g_variant_new("(s)", "/w/x"));
        fake_watchd_signal(f->fake, f->client_name, "Events", NULL);
        fake_watchd_signal(f->fake, f->client_name, "Overflow", g_variant_new("(u)", id));
        fake_watchd_signal(f->fake, f->client_name, "WatchRemoved", g_variant_new("(uu)", id, 0));
        fake_watchd_signal(f->fake, f->client_name, "WatchRemoved", g_variant_new("(su)", "deleted", id));
        barrier(f);
        g_test_assert_expected_messages();
        assert_log(&ra, (const char *const[]) { NULL });
        g_assert_true(watchd_subscription_is_active(a));
        send_record(f, id, WATCHD_EVENT_CREATE, "/w/ok", NULL);
        barrier(f);
        assert_log(&ra, (const char *const[]) { "E /w/ok", NULL });

        /* Answers of the wrong type: the call fails. */
        fake_watchd_push_add_reply(f->fake, g_variant_new("(s)", "7"), NULL);
        b = new_sub(f, &rb, "/b", 0);
        g_assert_false(watchd_subscription_start_sync(b, NULL, &error));
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        g_clear_error(&error);
        fake_watchd_push_add_reply(f->fake, g_variant_new("(uu)", 7, 7), NULL);
        g_assert_false(watchd_subscription_start_sync(b, NULL, &error));
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        g_clear_error(&error);
        fake_watchd_set_list_reply(f->fake, g_variant_new_parsed("([(uint32 1, '/sentinel')],)"));
        list = watchd_client_list_watches_sync(f->client, NULL, &error);
        g_assert_error(error, WATCHD_ERROR, WATCHD_ERROR_PROTOCOL);
        g_assert_null(list);
        watchd_subscription_cancel(a);
        rec_clear(&ra);
        rec_clear(&rb);
}

/* OpenStream answered with something else than a descriptor: the client
 * stays on signals, with the same events. */
static void test_stream_answer(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdClient) c = NULL;
        g_autoptr(WatchdSubscription) a = NULL;
        g_autoptr(GVariant) stats = NULL;
        g_autoptr(GError) error = NULL;
        gboolean streaming = TRUE;
        Rec ra;

        fake_watchd_set_stream_reply(f->fake, g_variant_new("(s)", "not a descriptor"));
        expect_warning("*with the arguments*");
        c = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", f->bus->address, NULL);
        g_assert_no_error(error);
        g_test_assert_expected_messages();
        g_object_get(c, "use-stream", &streaming, NULL);
        g_assert_false(streaming);
        a = watchd_subscription_new(c, "/w", WATCHD_EVENT_ALL, 0);
        rec_init(&ra);
        g_signal_connect(a, "events", G_CALLBACK(on_events), &ra);
        g_assert_true(watchd_subscription_start_sync(a, NULL, NULL));
        fake_watchd_signal(
                f->fake, g_dbus_connection_get_unique_name(watchd_client_get_connection(c)), "Events",
                g_variant_new_parsed("([(%u, uint32 256, uint32 0, '/w/x', '')],)", watchd_subscription_get_id(a)));
        stats = watchd_client_get_stats_sync(c, NULL, &error);
        g_assert_no_error(error);
        drain();
        assert_log(&ra, (const char *const[]) { "E /w/x", NULL });
        watchd_subscription_cancel(a);
        watchd_client_close(c);
        rec_clear(&ra);
}

/* ------------------------------------------------------------------------ */
/* Memory */

/* 12 batches of 1,000 records of about 1 KB (12 MB) while the program's
 * context does not run, a cap of 1 MiB (max-queued-bytes): what is emitted
 * once it runs is an overflow, then at most 1 MiB of the last records. */
static void flood(Fixture *f, guint32 id, guint *ret_last) {
        g_autofree char *pad = g_strnfill(1000, 'p');
        GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
        Record *recs = g_new0(Record, 1000);
        guint n = 0;

        for (int batch = 0; batch < 12; batch++) {
                g_ptr_array_set_size(paths, 0);
                for (int i = 0; i < 1000; i++) {
                        char *p = g_strdup_printf("/w/%s%06u", pad, n++);

                        g_ptr_array_add(paths, p);
                        recs[i] = (Record) { .id = id, .mask = WATCHD_EVENT_CREATE, .path = p };
                }
                send_records(f, recs, 1000);
        }
        *ret_last = n - 1;
        g_free(recs);
        g_ptr_array_unref(paths);
}

static void check_flooded(Rec *r, guint last) {
        g_autofree char *dump = rec_dump(r);
        g_autofree char *tail = g_strdup_printf("%06u", last);

        if (r->n_overflows != 1 || !g_str_equal(rec_line(r, 0), "O 1") || r->n_events > 1024 ||
            !g_str_has_suffix(rec_line(r, r->log->len - 1), tail))
                g_error("%u overflows and %u events (the last record sent: %u):\n%s", r->n_overflows, r->n_events, last,
                        dump);
}

static void test_memory(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL;
        guint last;
        Rec ra;

        a = watch(f, &ra, "/w", 0);
        flood(f, watchd_subscription_get_id(a), &last);
        barrier_held(f);
        drain();
        check_flooded(&ra, last);
        watchd_subscription_cancel(a);
        rec_clear(&ra);
}

/* The same flood for an id whose AddWatch has not answered yet: kept for
 * it, within the same cap, and what was dropped said as an overflow first. */
static void test_memory_unclaimed(Fixture *f, gconstpointer data) {
        g_autoptr(WatchdSubscription) a = NULL;
        gboolean started = FALSE;
        guint last;
        Rec ra;

        fake_watchd_hold_adds(f->fake, TRUE);
        a = new_sub(f, &ra, "/w", 0);
        watchd_subscription_start(a, NULL, on_started, &started);
        await_adds(f->fake, 2);
        flood(f, 2, &last);
        barrier_held(f);
        fake_watchd_hold_adds(f->fake, FALSE);
        g_assert_true(wt_await_flag(&started, TIMEOUT_MS));
        drain();
        check_flooded(&ra, last);
        watchd_subscription_cancel(a);
        rec_clear(&ra);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);

        g_test_add("/hostile/signals/add-zero", Fixture, &signals_default, setup, test_add_zero, teardown);
        g_test_add("/hostile/stream/add-zero", Fixture, &stream_default, setup, test_add_zero, teardown);
        g_test_add("/hostile/signals/add-in-use", Fixture, &signals_default, setup, test_add_in_use, teardown);
        g_test_add("/hostile/signals/readd-in-use", Fixture, &signals_default, setup, test_readd_in_use, teardown);
        g_test_add("/hostile/signals/unknown-id", Fixture, &signals_default, setup, test_unknown_id, teardown);
        g_test_add("/hostile/stream/unknown-id", Fixture, &stream_default, setup, test_unknown_id, teardown);
        g_test_add("/hostile/signals/cancelled-quiet", Fixture, &signals_default, setup, test_cancelled_quiet, teardown);
        g_test_add("/hostile/stream/cancelled-quiet", Fixture, &stream_default, setup, test_cancelled_quiet, teardown);
        g_test_add("/hostile/signals/unclaimed-unknown", Fixture, &signals_default, setup, test_unclaimed_unknown,
                   teardown);
        g_test_add("/hostile/stream/unclaimed-unknown", Fixture, &stream_default, setup, test_unclaimed_unknown,
                   teardown);
        g_test_add("/hostile/signals/bad-paths", Fixture, &signals_default, setup, test_bad_paths, teardown);
        g_test_add("/hostile/stream/bad-paths", Fixture, &stream_default, setup, test_bad_paths, teardown);
        g_test_add("/hostile/signals/outside", Fixture, &signals_default, setup, test_outside, teardown);
        g_test_add("/hostile/stream/outside", Fixture, &stream_default, setup, test_outside, teardown);
        g_test_add("/hostile/signals/renamed", Fixture, &signals_default, setup, test_renamed, teardown);
        g_test_add("/hostile/stream/renamed", Fixture, &stream_default, setup, test_renamed, teardown);
        g_test_add("/hostile/signals/deep-rename", Fixture, &signals_default, setup, test_deep_rename, teardown);
        g_test_add("/hostile/stream/deep-rename", Fixture, &stream_default, setup, test_deep_rename, teardown);
        g_test_add("/hostile/signals/last-reference", Fixture, &signals_default, setup, test_last_reference, teardown);
        g_test_add("/hostile/stream/last-reference", Fixture, &stream_default, setup, test_last_reference, teardown);
        g_test_add("/hostile/signals/signature", Fixture, &signals_default, setup, test_signature, teardown);
        g_test_add("/hostile/stream/stream-answer", Fixture, &stream_default, setup, test_stream_answer, teardown);
        g_test_add("/hostile/signals/memory", Fixture, &signals_small, setup, test_memory, teardown);
        g_test_add("/hostile/stream/memory", Fixture, &stream_small, setup, test_memory, teardown);
        g_test_add("/hostile/signals/memory-unclaimed", Fixture, &signals_small, setup, test_memory_unclaimed, teardown);
        g_test_add("/hostile/stream/memory-unclaimed", Fixture, &stream_small, setup, test_memory_unclaimed, teardown);
        return g_test_run();
}
