/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-stream - the stream transport (daemon/stream.c) on a real socket pair,
 * with the real delivery queue and no bus
 *
 * What a client reads is decoded with shared/stream_frame.h: events and
 * notices in their order, one write a batch; a socket that fills makes the
 * transport congested (no retry timer: the loop waits for room), keeps the
 * records in the queue up to the limit, then Overflow, which the client
 * finds in the stream after what it had not read; a client end that is
 * closed makes the stream dead, which takes nothing more.
 */

#include <errno.h>
#include <glib.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include "delivery.h"
#include "stream.h"
#include "stream_frame.h"

static const DeliveryLimits limits = {
        .max_pending = 64,
        .max_bytes = UINT64_MAX,
        .max_pending_user = UINT32_MAX,
        .max_bytes_user = UINT64_MAX,
        .batch_max = 16,
        .pair_timeout_usec = 10000,
        .pair_max_distance = 10,
};

typedef struct Fixture {
        Delivery *d;
        DeliveryQueue q;
        Stream *s;
        int peer;     /* the client's end */
        int watching; /* the last want_writable(): -1 none yet */
        StreamFrameReader rd;
        GArray *got; /* "E<id>", "O<ids>", "R<id>" for each frame read */
} Fixture;

static void want_writable(bool on, void *userdata) {
        ((Fixture *) userdata)->watching = on;
}

static const StreamOps ops = {
        .want_writable = want_writable,
};

static void free_string(gpointer p) {
        g_free(*(char **) p);
}

static void setup(Fixture *f, gconstpointer data) {
        int fds[2];

        g_assert_cmpint(delivery_new(&limits, &f->d), ==, 0);
        g_assert_cmpint(delivery_queue_init(f->d, &f->q, "client", 1000), ==, 0);
        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), ==, 0);
        f->peer = fds[1];
        f->watching = -1;
        g_assert_cmpint(stream_new(fds[0], 1, &f->q, &ops, f, &f->s), ==, 0);
        delivery_queue_set_transport(&f->q, &stream_delivery_ops, f->s);
        stream_frame_reader_init(&f->rd);
        f->got = g_array_new(FALSE, FALSE, sizeof(char *));
        g_array_set_clear_func(f->got, free_string);
        /* The header waits for room, as if the loop had been asked to watch. */
        stream_on_writable(f->s);
        g_assert_cmpint(f->watching, ==, 0);
}

static void teardown(Fixture *f, gconstpointer data) {
        delivery_queue_done(f->d, &f->q);
        stream_free(f->s);
        delivery_free(f->d);
        if (f->peer >= 0)
                close(f->peer);
        stream_frame_reader_done(&f->rd);
        g_array_unref(f->got);
}

static void submit(Fixture *f, uint32_t id, const char *name) {
        delivery_submit(f->d, &f->q, record_new(RECORD_EVENT, id, IN_CREATE, 0, 1, "/dir", name, strlen(name)));
}

/* Reads everything there is at the client's end; returns the bytes read. */
static size_t client_read(Fixture *f) {
        size_t total = 0;

        for (;;) {
                StreamFrame fr;
                void *p;
                size_t n;
                ssize_t k;
                int r;

                g_assert_cmpint(stream_frame_reader_space(&f->rd, 65536, &p, &n), ==, 0);
                k = recv(f->peer, p, n, MSG_DONTWAIT);
                if (k < 0 && errno == EAGAIN)
                        return total;
                g_assert_cmpint(k, >, 0);
                total += (size_t) k;
                stream_frame_reader_commit(&f->rd, (size_t) k);
                while ((r = stream_frame_reader_next(&f->rd, &fr)) > 0) {
                        char *s = NULL;

                        if (fr.type == STREAM_FRAME_EVENT) {
                                g_assert_true(g_str_has_prefix(fr.path, "/dir/"));
                                s = g_strdup_printf("E%u", fr.id);
                        } else if (fr.type == STREAM_FRAME_REMOVED)
                                s = g_strdup_printf("R%u %s", fr.id, fr.reason);
                        else if (fr.type == STREAM_FRAME_OVERFLOW) {
                                GString *g = g_string_new("O");

                                for (size_t i = 0; i < fr.n_ids; i++)
                                        g_string_append_printf(g, "%s%u", i ? "," : "", stream_frame_overflow_id(&fr, i));
                                s = g_string_free(g, FALSE);
                        }
                        g_assert_nonnull(s);
                        g_array_append_val(f->got, s);
                }
                g_assert_cmpint(r, ==, 0);
        }
}

static const char *got(Fixture *f, guint i) {
        g_assert_cmpuint(i, <, f->got->len);
        return g_array_index(f->got, char *, i);
}

/* Events and a notice, in order, each batch one write. */
static void test_records(Fixture *f, gconstpointer data) {
        submit(f, 1, "a");
        submit(f, 2, "b");
        Record *removed = record_new(RECORD_REMOVED, 2, 0, 0, 1, NULL, NULL, 0);

        removed->reason = "deleted";
        delivery_submit(f->d, &f->q, removed);
        submit(f, 1, "c");
        delivery_flush(f->d, 2);
        g_assert_cmpuint(delivery_queue_size(&f->q), ==, 0);
        client_read(f);
        g_assert_cmpuint(f->rd.version, ==, 1);
        g_assert_cmpuint(f->got->len, ==, 4);
        g_assert_cmpstr(got(f, 0), ==, "E1");
        g_assert_cmpstr(got(f, 1), ==, "E2");
        g_assert_cmpstr(got(f, 2), ==, "R2 deleted");
        g_assert_cmpstr(got(f, 3), ==, "E1");
        /* Everything the socket took counts as read: no confirmation is awaited. */
        g_assert_cmpuint(f->q.read, ==, f->q.sent);
        g_assert_false(f->q.confirming);
        g_assert_true(stream_carried_records(f->s));
        g_assert_cmpint(f->watching, ==, 0);
}

/* A client that does not read: the socket fills, the transport is congested
 * and waits for room without a timer, the queue holds the limit, then its
 * backlog is dropped for an Overflow that follows what the client had not
 * read, and the records after it follow the Overflow. */
static void test_full_socket(Fixture *f, gconstpointer data) {
        int small = 4096;
        uint32_t k = 0;
        guint i, overflow_at = 0;

        g_assert_cmpint(setsockopt(stream_fd(f->s), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), ==, 0);
        while (f->watching != 1) {
                g_autofree char *name = g_strdup_printf("f%05u", k);

                g_assert_cmpuint(k, <, 100000);
                submit(f, 7, name);
                k++;
                delivery_flush(f->d, 2);
        }
        g_assert_true(stream_delivery_ops.congested(f->s));
        g_assert_cmpuint(stream_pending_bytes(f->s), >, 0);
        /* Congested, but not a retry after a timer: the loop waits for room. */
        g_assert_cmpuint(delivery_next_deadline(f->d), ==, UINT64_MAX);

        /* The queue fills up to the limit and is dropped: Overflow queued. */
        for (uint32_t j = 0; j < limits.max_pending + 10; j++) {
                g_autofree char *name = g_strdup_printf("g%05u", j);

                submit(f, 7, name);
                delivery_flush(f->d, 2);
        }
        g_assert_cmpuint(delivery_queue_size(&f->q), <=, limits.max_pending);
        g_assert_true(f->q.overflow_queued);

        /* The client reads: room, the rest of the frames, then the queue. */
        for (int round = 0; round < 1000 && (f->watching == 1 || delivery_queue_size(&f->q) > 0); round++) {
                client_read(f);
                stream_on_writable(f->s);
                delivery_flush(f->d, 3);
        }
        client_read(f);
        g_assert_cmpuint(delivery_queue_size(&f->q), ==, 0);
        submit(f, 7, "late");
        delivery_flush(f->d, 4);
        client_read(f);

        for (i = 0; i < f->got->len; i++)
                if (got(f, i)[0] == 'O') {
                        g_assert_cmpuint(overflow_at, ==, 0);
                        overflow_at = i;
                }
        g_assert_cmpuint(overflow_at, >, 0);
        g_assert_cmpstr(got(f, overflow_at), ==, "O7");
        /* Everything the socket had taken came before it: nothing lost silently. */
        g_assert_cmpuint(overflow_at, >=, k - 1);
        g_assert_cmpstr(got(f, f->got->len - 1), ==, "E7");
}

/* The client's end closed: the next write fails, the stream is dead and
 * congested, and the records stay in the queue for the signals. */
static void test_dead(Fixture *f, gconstpointer data) {
        submit(f, 3, "a");
        delivery_flush(f->d, 2);
        close(f->peer);
        f->peer = -1;
        submit(f, 3, "b");
        delivery_flush(f->d, 2);
        g_assert_true(stream_is_dead(f->s));
        g_assert_true(stream_delivery_ops.congested(f->s));
        submit(f, 3, "c");
        delivery_flush(f->d, 2);
        g_assert_cmpuint(delivery_queue_size(&f->q), ==, 1);
        g_assert_true(stream_carried_records(f->s));
        g_assert_cmpuint(stream_pending_bytes(f->s), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/stream/records", Fixture, NULL, setup, test_records, teardown);
        g_test_add("/stream/full-socket", Fixture, NULL, setup, test_full_socket, teardown);
        g_test_add("/stream/dead", Fixture, NULL, setup, test_dead, teardown);
        return g_test_run();
}
