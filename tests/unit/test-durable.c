/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-durable - subscriptions that outlive their client and the daemon
 *
 * durable.c in the core without a bus: the manager on the fake backend, a
 * state directory in a temporary directory, and in place of the bus's
 * transport a DurableOps that writes down, a line each, what a resumed
 * client is sent ("events N: path,path", "rescan REASON", "caught-up ID",
 * "stopped REASON"), and whose confirmations the test gives
 * (durable_confirmed()), as the bus does with a Ping. Records are queued
 * in the kernel's byte layout. Covers creation and its refusals (name,
 * ONESHOT, a name taken, the per-user limit, no state directory), records
 * reaching the journal and a resumed client after its cursor, the window
 * of unconfirmed records (the replay's own: the client's live queue is not
 * touched), a burst larger than the window kept whole, removal while
 * attached, and a restart (the definition loaded again, a daemon-down gap
 * before anything newer).
 */

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "durable.h"
#include "error.h"
#include "event_bits.h"
#include "fake-backend.h"
#include "log.h"
#include "manager.h"
#include "sink.h"
#include "watchd-api.h"

typedef struct Fixture {
        FakeBackend *fake;
        Manager *m;
        Durable *d;
        Client *reader;  /* the client that resumes */
        Sink sink;       /* its live records (none expected) */
        GPtrArray *sent; /* what DurableOps sent it, a line each */
        GString *batch;
        size_t batch_n;
        unsigned asked; /* confirmations asked of it */
        char *dir, *state, *watched;
        Caller caller;
        gid_t gid;
} Fixture;

static int ops_events_begin(Client *c, const char *name, void *userdata) {
        Fixture *f = userdata;

        g_assert_null(f->batch);
        f->batch = g_string_new("events");
        f->batch_n = 0;
        return 0;
}

static int ops_events_add(Client *c, const JournalEntry *e, void *userdata) {
        Fixture *f = userdata;

        g_string_append_printf(f->batch, " %s", e->path + strlen(f->watched));
        f->batch_n++;
        return 0;
}

static int ops_events_end(Client *c, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->sent, g_string_free(f->batch, FALSE));
        f->batch = NULL;
        return 0;
}

static int ops_rescan(Client *c, const char *name, const JournalEntry *e, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->sent, g_strdup_printf("rescan %s", journal_gap_reason_to_string(e->reason)));
        return 0;
}

static int ops_caught_up(Client *c, const char *name, uint64_t id, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->sent, g_strdup("caught-up"));
        return 0;
}

static int ops_stopped(Client *c, const char *name, const char *reason, void *userdata) {
        Fixture *f = userdata;

        g_ptr_array_add(f->sent, g_strdup_printf("stopped %s", reason));
        return 0;
}

/* The replay's confirmations are asked here, and given by the test (durable_confirmed()). */
static int ops_ask_confirm(Client *c, void *userdata) {
        Fixture *f = userdata;

        f->asked++;
        return 0;
}

static const DurableOps ops = {
        .events_begin = ops_events_begin,
        .events_add = ops_events_add,
        .events_end = ops_events_end,
        .rescan = ops_rescan,
        .caught_up = ops_caught_up,
        .stopped = ops_stopped,
        .ask_confirm = ops_ask_confirm,
};

static int reader_events(DeliveryQueue *q, Record **recs, size_t n, void *data) {
        return sink_ops.send_events(q, recs, n, &((Fixture *) data)->sink);
}

static int reader_notice(DeliveryQueue *q, const Record *rec, const uint32_t *ids, size_t n, void *data) {
        return sink_ops.send_notice(q, rec, ids, n, &((Fixture *) data)->sink);
}

static const DeliveryOps reader_ops = {
        .send_events = reader_events,
        .send_notice = reader_notice,
};

static void start(Fixture *f, const char *state_dir) {
        g_assert_cmpint(durable_new(f->m, state_dir, &f->d), ==, 0);
}

static int resume(Fixture *f, const char *name, const char *journal, uint64_t cursor,
                  char current[static JOURNAL_ID_STRING_MAX]) {
        return durable_resume(f->d, f->reader, name, journal, cursor, &ops, f, current);
}

static void setup(Fixture *f, gconstpointer data) {
        const uint32_t *window = data;
        Config config;

        log_set_max_level(LOG_ERR);
        f->fake = fake_backend_new();
        g_assert_cmpint(config_init(&config), ==, 0);
        config.journal_max_subscriptions_per_user = 2;
        config.max_pending_events_per_client = window ? *window : 1000;
        config.batch_max_events = 3;
        g_assert_cmpint(manager_new(&config, &f->m), ==, 0);
        config_done(&config);
        manager_set_backend(f->m, &f->fake->backend);
        g_assert_cmpint(manager_start(f->m), ==, 0);

        f->dir = g_dir_make_tmp("test-durable-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
        f->state = g_build_filename(f->dir, "state", NULL);
        f->watched = g_build_filename(f->dir, "w", NULL);
        g_assert_cmpint(g_mkdir(f->watched, 0755), ==, 0);
        f->gid = getgid();
        f->caller = (Caller) { .uid = getuid(), .gid = f->gid, .gids = &f->gid, .n_gids = 1 };
        f->sent = g_ptr_array_new_with_free_func(g_free);
        sink_init(&f->sink);
        start(f, f->state);
        g_assert_cmpint(manager_new_client(f->m, ":1.5", &f->caller, &f->reader), ==, 0);
        delivery_queue_set_transport(&f->reader->queue, &reader_ops, f);
}

static void teardown(Fixture *f, gconstpointer data) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", f->dir);

        durable_free(f->d);
        manager_free(f->m);
        fake_backend_free(f->fake);
        sink_done(&f->sink);
        g_ptr_array_unref(f->sent);
        g_assert_cmpint(system(cmd), ==, 0);
        g_free(f->watched);
        g_free(f->state);
        g_free(f->dir);
}

/* The kernel's records read, the queues flushed (and the durable pump run after). */
static void turn(Fixture *f) {
        while (manager_on_kernel_readable(f->m))
                ;
        manager_flush(f->m);
}

static int create(Fixture *f, const char *name, uint32_t flags, char journal[static JOURNAL_ID_STRING_MAX]) {
        uint64_t cursor;

        return durable_create(f->d, &f->caller, name, f->watched, IN_CREATE | IN_DELETE, flags, NULL, NULL, journal,
                              &cursor);
}

static void kernel_creates(Fixture *f, const char *first, unsigned n) {
        int wd = fake_backend_wd(f->fake, f->watched);

        g_assert_cmpint(wd, >=, 0);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *name = g_strdup_printf("%s%u", first, i);

                fake_backend_push(f->fake, wd, IN_CREATE, 0, name);
        }
        turn(f);
}

static int list_count(const DurableInfo *i, void *userdata) {
        GPtrArray *names = userdata;

        g_ptr_array_add(names, g_strdup_printf("%s %s", i->name, i->state));
        return 0;
}

static GPtrArray *list(Fixture *f) {
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

        g_assert_cmpint(durable_list(f->d, f->caller.uid, list_count, names), ==, 0);
        return names;
}

static void assert_sent(Fixture *f, const char *const *want) {
        guint n = 0;

        for (; want[n]; n++) {
                g_assert_cmpuint(n, <, f->sent->len);
                g_assert_cmpstr(f->sent->pdata[n], ==, want[n]);
        }
        g_assert_cmpuint(f->sent->len, ==, n);
}

/* What durable_create() refuses, and what it makes. */
static void test_create(Fixture *f, gconstpointer data) {
        char journal[JOURNAL_ID_STRING_MAX];
        g_autoptr(GPtrArray) names = NULL;
        Durable *none = NULL;
        uint64_t cursor;

        g_assert_cmpint(create(f, ".hidden", 0, journal), ==, -EINVAL);
        g_assert_cmpint(create(f, "a/b", 0, journal), ==, -EINVAL);
        g_assert_cmpint(create(f, "one", WATCHD_FLAG_ONESHOT, journal), ==, -EINVAL);
        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        g_assert_cmpuint(strlen(journal), ==, 32);
        g_assert_cmpint(create(f, "idx", 0, journal), ==, -WATCHD_E_DURABLE_EXISTS);
        g_assert_cmpint(create(f, "two", 0, journal), ==, 0);
        g_assert_cmpint(create(f, "three", 0, journal), ==, -WATCHD_E_DURABLE_LIMIT); /* 2 a user here */
        names = list(f);
        g_assert_cmpuint(names->len, ==, 2);
        g_assert_true(g_str_equal(names->pdata[0], "idx watching") || g_str_equal(names->pdata[1], "idx watching"));
        g_assert_true(durable_enabled(f->d));

        /* Without a state directory: none, and it says so. */
        durable_free(f->d);
        f->d = NULL;
        start(f, NULL);
        g_assert_false(durable_enabled(f->d));
        g_assert_cmpint(durable_create(f->d, &f->caller, "idx", f->watched, IN_CREATE, 0, NULL, NULL, journal, &cursor),
                        ==, -WATCHD_E_NO_STATE_DIR);
        (void) none;
}

/* Records reach the journal; a client that resumes after a cursor gets what follows, in batches, then caught-up. */
static void test_resume(Fixture *f, gconstpointer data) {
        static const char *const want[] = {
                "events /a0 /a1 /a2", "events /a3 /a4", "caught-up", "events /b0", NULL,
        };
        char journal[JOURNAL_ID_STRING_MAX], current[JOURNAL_ID_STRING_MAX];

        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        kernel_creates(f, "a", 5);
        g_assert_cmpuint(f->sent->len, ==, 0); /* no one attached */
        g_assert_cmpint(resume(f, "idx", journal, 0, current), ==, 0);
        g_assert_cmpstr(current, ==, journal);
        manager_flush(f->m);
        /* Then live: what comes next follows, as it comes. */
        kernel_creates(f, "b", 1);
        assert_sent(f, want);
        g_assert_cmpuint(f->sink.events->len, ==, 0); /* none of it as live records */

        /* Resuming after the fourth record gives only the rest. */
        g_ptr_array_set_size(f->sent, 0);
        g_assert_cmpint(resume(f, "idx", journal, 4, current), ==, 0);
        manager_flush(f->m);
        g_assert_cmpuint(f->sent->len, ==, 2);
        g_assert_cmpstr(f->sent->pdata[0], ==, "events /a4 /b0");
        g_assert_cmpstr(f->sent->pdata[1], ==, "caught-up");

        g_assert_cmpint(resume(f, "nothing", journal, 0, current), ==, -WATCHD_E_NO_SUCH_DURABLE);
        g_assert_cmpint(resume(f, "idx", "not-hex", 0, current), ==, -EINVAL);
}

/*
 * The window (4 here): no more than 4 sent and not confirmed; a
 * confirmation lets the next ones go. The replay's window is its own: the
 * client's live queue counts none of it (a client whose live records wait
 * for their confirmation, or go to a stream, does not hold it up).
 */
static void test_window(Fixture *f, gconstpointer data) {
        char journal[JOURNAL_ID_STRING_MAX], current[JOURNAL_ID_STRING_MAX];
        DeliveryQueue *q = &f->reader->queue;

        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        kernel_creates(f, "a", 4);
        kernel_creates(f, "b", 4);
        kernel_creates(f, "c", 4);
        g_assert_cmpint(resume(f, "idx", journal, 0, current), ==, 0);
        for (int i = 0; i < 5; i++)
                manager_flush(f->m);           /* nothing more without a confirmation */
        g_assert_cmpuint(f->sent->len, ==, 2); /* four records, in two messages (batches of 3) */
        g_assert_cmpuint(f->asked, ==, 1);
        g_assert_cmpstr(f->sent->pdata[0], ==, "events /a0 /a1 /a2");
        g_assert_cmpstr(f->sent->pdata[1], ==, "events /a3");
        /* Four more at each confirmation: b0-b3, c0-c3, then caught-up. */
        for (int i = 0; i < 3; i++) {
                guint before = f->sent->len;

                durable_confirmed(f->d, f->reader, true);
                manager_flush(f->m);
                g_assert_cmpuint(f->sent->len, >, before);
        }
        g_assert_cmpuint(f->sent->len, ==, 7);
        g_assert_cmpstr(f->sent->pdata[5], ==, "events /c3");
        g_assert_cmpstr(f->sent->pdata[6], ==, "caught-up");
        g_assert_cmpuint(q->sent, ==, 0); /* the live queue's window: none of it */
        /* Live: caught-up and d0-d2 fill the window again (d3 waits); an answer that
         * confirms nothing (the bus's error) lets nothing more go, the client's own does. */
        kernel_creates(f, "d", 4);
        manager_flush(f->m);
        kernel_creates(f, "e", 1);
        g_assert_cmpuint(f->sent->len, ==, 8);
        g_assert_cmpstr(f->sent->pdata[7], ==, "events /d0 /d1 /d2");
        g_assert_cmpuint(f->asked, ==, 4);
        durable_confirmed(f->d, f->reader, false);
        manager_flush(f->m);
        g_assert_cmpuint(f->sent->len, ==, 8);
        durable_confirmed(f->d, f->reader, true);
        manager_flush(f->m);
        g_assert_cmpuint(f->sent->len, ==, 9);
        g_assert_cmpstr(f->sent->pdata[8], ==, "events /d3 /e0");
        g_assert_cmpuint(q->sent, ==, 0);
}

/* More than the window (4 here) in one read: the journal's own queue, whose
 * limit is the window too, is written when it fills rather than dropped from
 * (delivery's reads_at_once): every record kept, no overflow gap, and the
 * replay hands them over window by window. Before, the journal held an
 * overflow gap in their place. */
static void test_burst(Fixture *f, gconstpointer data) {
        static const char *const want[] = {
                "events /a0 /a1 /a2", "events /a3", "events /a4 /a5 /a6", "events /a7", "events /a8", "caught-up", NULL,
        };
        char journal[JOURNAL_ID_STRING_MAX], current[JOURNAL_ID_STRING_MAX];

        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        kernel_creates(f, "a", 9);
        g_assert_cmpint(resume(f, "idx", journal, 0, current), ==, 0);
        manager_flush(f->m);
        for (int i = 0; i < 2; i++) {
                durable_confirmed(f->d, f->reader, true);
                manager_flush(f->m);
        }
        assert_sent(f, want);
}

/* Removed while attached: the client is told, the name is free again, the definition gone. */
static void test_remove(Fixture *f, gconstpointer data) {
        char journal[JOURNAL_ID_STRING_MAX], current[JOURNAL_ID_STRING_MAX];
        g_autoptr(GPtrArray) names = NULL;

        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        g_assert_cmpint(resume(f, "idx", journal, 0, current), ==, 0);
        manager_flush(f->m);
        g_assert_cmpint(durable_remove(f->d, f->caller.uid, "idx"), ==, 0);
        g_assert_cmpstr(f->sent->pdata[f->sent->len - 1], ==, "stopped " WATCHD_DURABLE_STOPPED_REMOVED);
        g_assert_cmpint(durable_remove(f->d, f->caller.uid, "idx"), ==, -WATCHD_E_NO_SUCH_DURABLE);
        names = list(f);
        g_assert_cmpuint(names->len, ==, 0);
        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
}

/* A restart: the definition is loaded and watched again, and a daemon-down gap comes before anything newer. */
static void test_restart(Fixture *f, gconstpointer data) {
        static const char *const want[] = { "events /a0 /a1", "rescan daemon-down", "events /b0", "caught-up", NULL };
        char journal[JOURNAL_ID_STRING_MAX], current[JOURNAL_ID_STRING_MAX];
        g_autoptr(GPtrArray) names = NULL;

        g_assert_cmpint(create(f, "idx", 0, journal), ==, 0);
        kernel_creates(f, "a", 2);
        durable_free(f->d);
        f->d = NULL;
        g_assert_cmpuint(fake_backend_n_live(f->fake), ==, 0); /* its watch went with its owner */
        start(f, f->state);
        names = list(f);
        g_assert_cmpuint(names->len, ==, 1);
        g_assert_cmpstr(names->pdata[0], ==, "idx watching");
        kernel_creates(f, "b", 1);
        g_assert_cmpint(resume(f, "idx", journal, 0, current), ==, 0);
        g_assert_cmpstr(current, ==, journal); /* the same journal */
        manager_flush(f->m);
        assert_sent(f, want);
}

int main(int argc, char *argv[]) {
        static const uint32_t window = 4;

        g_test_init(&argc, &argv, NULL);
        g_test_add("/durable/create", Fixture, NULL, setup, test_create, teardown);
        g_test_add("/durable/resume", Fixture, NULL, setup, test_resume, teardown);
        g_test_add("/durable/window", Fixture, &window, setup, test_window, teardown);
        g_test_add("/durable/burst", Fixture, &window, setup, test_burst, teardown);
        g_test_add("/durable/remove", Fixture, NULL, setup, test_remove, teardown);
        g_test_add("/durable/restart", Fixture, NULL, setup, test_restart, teardown);
        return g_test_run();
}
