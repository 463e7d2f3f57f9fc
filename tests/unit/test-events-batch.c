/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-events-batch - Events signals that no one record can spoil
 *
 * The batch is driven with records and real sd-bus messages (of a bus that
 * never connects, which is all sd-bus needs to build them); "sending" a
 * signal seals it and reads it back. Each case says which records go in,
 * which one fails to append (the test's append does what sd-bus does with a
 * string it refuses: fails, and leaves the message unusable), and what must
 * come out: the signals, their records in order, and the ids named lost.
 */

#include <errno.h>
#include <glib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include "events_batch.h"
#include "path_escape.h"

typedef struct Out {
        guint32 id, mask;
        char *path, *new_path; /* as on the bus */
} Out;

typedef struct Harness {
        sd_bus *bus;
        uint64_t cookie;
        GPtrArray *signals; /* GArray of Out, one a signal sent */
        GArray *lost;       /* guint32 */
        guint32 fail_id;    /* append fails for this id (0: none) */
        guint n_appends;
        gboolean fail_send;
} Harness;

static void out_clear(gpointer p) {
        Out *o = p;
        g_free(o->path);
        g_free(o->new_path);
}

static int h_new_signal(void *userdata, sd_bus_message **ret) {
        Harness *h = userdata;
        return sd_bus_message_new_signal(h->bus, ret, "/org/example/Inotify", "org.example.Inotify", "Events");
}

static int h_send(void *userdata, sd_bus_message *msg, size_t n) {
        Harness *h = userdata;
        GArray *recs;
        guint32 id, mask, cookie;
        const char *path, *new_path;
        int r;

        if (h->fail_send)
                return -ECONNRESET;
        recs = g_array_new(FALSE, TRUE, sizeof(Out));
        g_array_set_clear_func(recs, out_clear);
        g_assert_cmpint(sd_bus_message_seal(msg, ++h->cookie, 0), >=, 0);
        g_assert_cmpint(sd_bus_message_rewind(msg, true), >=, 0);
        g_assert_cmpint(sd_bus_message_enter_container(msg, 'a', "(uuuss)"), >, 0);
        while ((r = sd_bus_message_read(msg, "(uuuss)", &id, &mask, &cookie, &path, &new_path)) > 0) {
                Out o = { id, mask, g_strdup(path), g_strdup(new_path) };
                g_array_append_val(recs, o);
        }
        g_assert_cmpint(r, ==, 0);
        g_assert_cmpuint(recs->len, ==, n);
        g_ptr_array_add(h->signals, recs);
        return 0;
}

static void h_lost(void *userdata, uint32_t id) {
        Harness *h = userdata;
        g_array_append_val(h->lost, id);
}

/* The Harness of the running case: append has no userdata. */
static Harness *current;

/* sd_bus_message_append, except for fail_id: then the string sd-bus refuses,
 * which fails the append and spoils the message, as a bad name once did. */
static int h_append_failing(sd_bus_message *msg, uint32_t id, uint32_t mask, uint32_t cookie, const char *path,
                            const char *new_path) {
        current->n_appends++;
        if (id == current->fail_id)
                return sd_bus_message_append(msg, "(uuuss)", id, mask, cookie, "/x\xff", "");
        return sd_bus_message_append(msg, "(uuuss)", id, mask, cookie, path, new_path);
}

static const EventsBatchOps ops = {
        .new_signal = h_new_signal,
        .send = h_send,
        .lost = h_lost,
        .append = h_append_failing,
};

static void harness_init(Harness *h) {
        int sv[2];

        *h = (Harness) {
                .signals = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref),
                .lost = g_array_new(FALSE, TRUE, sizeof(guint32)),
        };
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_assert_cmpint(sd_bus_new(&h->bus), >=, 0);
        g_assert_cmpint(sd_bus_set_fd(h->bus, sv[0], sv[0]), >=, 0);
        g_assert_cmpint(sd_bus_start(h->bus), >=, 0);
        close(sv[1]);
        current = h;
}

static void harness_done(Harness *h) {
        sd_bus_flush_close_unref(h->bus);
        g_ptr_array_unref(h->signals);
        g_array_unref(h->lost);
        current = NULL;
}

static Record *event(guint32 id, guint32 mask, const char *path, const char *new_path) {
        Record *rec = record_new(RECORD_EVENT, id, mask, 0, 0, path, NULL, 0);

        g_assert_nonnull(rec);
        if (new_path)
                rec->new_path = strdup(new_path); /* freed by record_free() */
        return rec;
}

static Out *out_at(Harness *h, guint signal, guint i) {
        GArray *recs = h->signals->pdata[signal];

        g_assert_cmpuint(i, <, recs->len);
        return &g_array_index(recs, Out, i);
}

static guint n_in(Harness *h, guint signal) {
        return ((GArray *) h->signals->pdata[signal])->len;
}

/* Plain records go as they are, in order, in one signal. */
static void test_plain(void) {
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        for (guint32 id = 1; id <= 5; id++) {
                g_autofree char *p = g_strdup_printf("/d/f%u", id);
                g_assert_cmpint(events_batch_add(&b, event(id, IN_CREATE, p, NULL)), ==, 0);
        }
        g_assert_cmpint(events_batch_send(&b), ==, 5);
        g_assert_cmpint(events_batch_send(&b), ==, 0); /* nothing left */
        events_batch_done(&b);

        g_assert_cmpuint(h.signals->len, ==, 1);
        for (guint i = 0; i < 5; i++) {
                g_autofree char *p = g_strdup_printf("/d/f%u", i + 1);
                g_assert_cmpuint(out_at(&h, 0, i)->id, ==, i + 1);
                g_assert_cmpuint(out_at(&h, 0, i)->mask, ==, IN_CREATE);
                g_assert_cmpstr(out_at(&h, 0, i)->path, ==, p);
                g_assert_cmpstr(out_at(&h, 0, i)->new_path, ==, "");
        }
        g_assert_cmpuint(h.lost->len, ==, 0);
        harness_done(&h);
}

/* A path sd-bus refuses goes escaped and flagged; for a rename, both paths. */
static void test_escaped(void) {
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        g_assert_cmpint(events_batch_add(&b, event(1, IN_CREATE, "/d/x\xff", NULL)), ==, 0);
        g_assert_cmpint(events_batch_add(&b, event(2, IN_MOVED_FROM | IN_MOVED_TO, "/d/a\\b", "/d/\xef\xbf\xbe")), ==, 0);
        g_assert_cmpint(events_batch_add(&b, event(3, IN_MOVED_FROM | IN_MOVED_TO, "/d/a\\b", "/d/c")), ==, 0);
        g_assert_cmpint(events_batch_send(&b), ==, 3);
        events_batch_done(&b);

        g_assert_cmpuint(h.signals->len, ==, 1);
        g_assert_cmpuint(out_at(&h, 0, 0)->mask, ==, IN_CREATE | WATCHD_PATH_ESCAPED);
        g_assert_cmpstr(out_at(&h, 0, 0)->path, ==, "/d/x\\xff");
        g_assert_cmpstr(out_at(&h, 0, 0)->new_path, ==, "");
        g_assert_cmpuint(out_at(&h, 0, 1)->mask, ==, IN_MOVED_FROM | IN_MOVED_TO | WATCHD_PATH_ESCAPED);
        g_assert_cmpstr(out_at(&h, 0, 1)->path, ==, "/d/a\\\\b");
        g_assert_cmpstr(out_at(&h, 0, 1)->new_path, ==, "/d/\\xef\\xbf\\xbe");
        /* Nothing to escape: as it is, backslash and all. */
        g_assert_cmpuint(out_at(&h, 0, 2)->mask, ==, IN_MOVED_FROM | IN_MOVED_TO);
        g_assert_cmpstr(out_at(&h, 0, 2)->path, ==, "/d/a\\b");
        g_assert_cmpuint(h.lost->len, ==, 0);
        harness_done(&h);
}

/*
 * A record whose append fails costs only itself: the signal is built again
 * from the records before it, the batch goes on after it, and its id is
 * named lost. Before events_batch, the same failure spoiled the message and
 * every record in the batch was gone, unnamed.
 */
static void test_append_fails(void) {
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        h.fail_id = 4;
        for (guint32 id = 1; id <= 8; id++) {
                g_autofree char *p = g_strdup_printf("/d/f%u", id);
                int r = events_batch_add(&b, event(id, IN_CREATE, p, NULL));

                g_assert_cmpint(r, ==, id == 4 ? -EINVAL : 0);
        }
        g_assert_cmpint(events_batch_send(&b), ==, 7);
        events_batch_done(&b);

        g_assert_cmpuint(h.signals->len, ==, 1);
        g_assert_cmpuint(n_in(&h, 0), ==, 7);
        for (guint i = 0, id = 1; i < 7; i++, id++) {
                if (id == 4)
                        id++;
                g_assert_cmpuint(out_at(&h, 0, i)->id, ==, id);
        }
        g_assert_cmpuint(h.lost->len, ==, 1);
        g_assert_cmpuint(g_array_index(h.lost, guint32, 0), ==, 4);
        /* 8 appends, and the 3 before the failure once more. */
        g_assert_cmpuint(h.n_appends, ==, 8 + 3);
        harness_done(&h);
}

/* The first record failing leaves nothing to build again. */
static void test_first_fails(void) {
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        h.fail_id = 1;
        g_assert_cmpint(events_batch_add(&b, event(1, IN_CREATE, "/d/a", NULL)), <, 0);
        g_assert_cmpint(events_batch_add(&b, event(2, IN_CREATE, "/d/b", NULL)), ==, 0);
        g_assert_cmpint(events_batch_send(&b), ==, 1);
        events_batch_done(&b);
        g_assert_cmpuint(h.signals->len, ==, 1);
        g_assert_cmpstr(out_at(&h, 0, 0)->path, ==, "/d/b");
        g_assert_cmpuint(h.lost->len, ==, 1);
        harness_done(&h);
}

/* "/" and n bytes 0xff: 4n + 1 bytes escaped. */
static char *not_utf8_path(size_t n) {
        char *p = g_malloc(n + 2);

        p[0] = '/';
        memset(p + 1, 0xff, n);
        p[n + 1] = '\0';
        return p;
}

/* Signals are cut at max_records and before EVENTS_BATCH_MAX_BYTES. */
static void test_cuts(void) {
        g_autofree char *long_path = not_utf8_path(100 * 1024); /* 400 KiB escaped */
        guint total = 0;
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 3);
        for (guint32 id = 1; id <= 7; id++)
                g_assert_cmpint(events_batch_add(&b, event(id, IN_CREATE, "/d/f", NULL)), ==, 0);
        /* Two signals of 3 went by themselves; the seventh waits. */
        g_assert_cmpuint(h.signals->len, ==, 2);
        g_assert_cmpint(events_batch_send(&b), ==, 1);
        events_batch_done(&b);
        g_assert_cmpuint(n_in(&h, 0), ==, 3);
        g_assert_cmpuint(n_in(&h, 2), ==, 1);
        harness_done(&h);

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        for (guint32 id = 1; id <= 10; id++)
                g_assert_cmpint(events_batch_add(&b, event(id, IN_CREATE, long_path, NULL)), ==, 0);
        g_assert_cmpint(events_batch_send(&b), >, 0);
        events_batch_done(&b);
        /* Two 400 KiB records a signal: a third would pass 1 MiB. */
        g_assert_cmpuint(h.signals->len, ==, 5);
        for (guint i = 0; i < h.signals->len; i++) {
                g_assert_cmpuint(n_in(&h, i), ==, 2);
                total += n_in(&h, i);
        }
        g_assert_cmpuint(total, ==, 10);
        g_assert_cmpuint(h.lost->len, ==, 0);
        harness_done(&h);
}

/* A record that no signal could carry is dropped alone, named lost. */
static void test_too_big(void) {
        g_autofree char *huge = not_utf8_path(300 * 1024); /* 1.2 MiB escaped */
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        g_assert_cmpint(events_batch_add(&b, event(1, IN_CREATE, "/d/a", NULL)), ==, 0);
        g_assert_cmpint(events_batch_add(&b, event(2, IN_CREATE, huge, NULL)), ==, -E2BIG);
        g_assert_cmpint(events_batch_add(&b, event(3, IN_CREATE, "/d/b", NULL)), ==, 0);
        g_assert_cmpint(events_batch_send(&b), ==, 2);
        events_batch_done(&b);
        g_assert_cmpuint(h.signals->len, ==, 1);
        g_assert_cmpuint(out_at(&h, 0, 0)->id, ==, 1);
        g_assert_cmpuint(out_at(&h, 0, 1)->id, ==, 3);
        g_assert_cmpuint(h.lost->len, ==, 1);
        g_assert_cmpuint(g_array_index(h.lost, guint32, 0), ==, 2);
        harness_done(&h);
}

/* A signal that cannot be sent names every record it held. */
static void test_send_fails(void) {
        Harness h;
        EventsBatch b;

        harness_init(&h);
        events_batch_init(&b, &ops, &h, 1024);
        g_assert_cmpint(events_batch_add(&b, event(7, IN_CREATE, "/d/a", NULL)), ==, 0);
        g_assert_cmpint(events_batch_add(&b, event(9, IN_CREATE, "/d/b", NULL)), ==, 0);
        h.fail_send = TRUE;
        g_assert_cmpint(events_batch_send(&b), ==, -ECONNRESET);
        events_batch_done(&b);
        g_assert_cmpuint(h.signals->len, ==, 0);
        g_assert_cmpuint(h.lost->len, ==, 2);
        g_assert_cmpuint(g_array_index(h.lost, guint32, 0), ==, 7);
        g_assert_cmpuint(g_array_index(h.lost, guint32, 1), ==, 9);
        harness_done(&h);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/events-batch/plain", test_plain);
        g_test_add_func("/events-batch/escaped", test_escaped);
        g_test_add_func("/events-batch/append-fails", test_append_fails);
        g_test_add_func("/events-batch/first-fails", test_first_fails);
        g_test_add_func("/events-batch/cuts", test_cuts);
        g_test_add_func("/events-batch/too-big", test_too_big);
        g_test_add_func("/events-batch/send-fails", test_send_fails);
        return g_test_run();
}
