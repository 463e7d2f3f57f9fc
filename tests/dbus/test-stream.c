/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-stream - the record stream (OpenStream, watchd(8) STREAM), against a real watchd
 *
 * A client asks for its stream and reads its records from the socket it
 * gets, frames decoded with shared/stream_frame.h, the same decoder the
 * clients use. The cases: what a stream carries (events with both paths of
 * a rename, names as bytes, removals, nothing of another client's, nothing
 * as signals); the switch from signals with no record lost or repeated; a
 * client that stops reading gets its Overflow in the stream when it reads
 * again while another is served in full; a client that closes its end, or
 * writes on it, ends its stream and nothing else (it falls back to signals,
 * with an Overflow if records were in flight; watchd keeps serving, its
 * memory unchanged); a killed client's stream and subscriptions go; a
 * hundred stream clients at once; the options and a second OpenStream.
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_frame.h"
#include "wt-fixture.h"

#define TIMEOUT_MS     10000
#define E_INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"
#define E_LIMITS       "org.freedesktop.DBus.Error.LimitsExceeded"

/* ---------------------------------------------------------------- a stream client */

typedef struct Stream {
        int fd;
        guint source; /* reading while set */
        StreamFrameReader rd;
        uint16_t version;
        GArray *records; /* WtRecord */
        guint64 n_records;
        GArray *overflow_ids; /* guint32 */
        guint n_overflows;
        guint64 records_before_overflow; /* n_records when the first OVERFLOW came */
        GPtrArray *removed;              /* "ID REASON" */
        gboolean ended;                  /* end of stream read */
        int error;                       /* -errno of a malformed stream */
        gboolean keep;                   /* keep records (else count them) */
} Stream;

static void stream_take(Stream *s, const StreamFrame *f) {
        switch (f->type) {
        case STREAM_FRAME_EVENT:
                if (s->keep) {
                        WtRecord r = {
                                .id = f->id,
                                .mask = f->mask,
                                .cookie = f->cookie,
                                .path = g_strndup(f->path, f->path_len),
                                .new_path = g_strndup(f->new_path, f->new_path_len),
                        };
                        g_array_append_val(s->records, r);
                }
                s->n_records++;
                break;
        case STREAM_FRAME_OVERFLOW:
                if (s->n_overflows++ == 0)
                        s->records_before_overflow = s->n_records;
                for (size_t i = 0; i < f->n_ids; i++) {
                        guint32 id = stream_frame_overflow_id(f, i);

                        g_array_append_val(s->overflow_ids, id);
                }
                break;
        case STREAM_FRAME_REMOVED:
                g_ptr_array_add(s->removed, g_strdup_printf("%u %.*s", f->id, (int) f->reason_len, f->reason));
                break;
        default:
                g_error("a frame of type %u, which watchd does not send to a version 1 client", f->type);
        }
}

/* Reads what is there; returns FALSE at the end of the stream or on an error. */
static gboolean stream_read(Stream *s) {
        for (;;) {
                StreamFrame f;
                void *p;
                size_t n;
                ssize_t k;
                int r;

                g_assert_cmpint(stream_frame_reader_space(&s->rd, 65536, &p, &n), ==, 0);
                k = read(s->fd, p, n);
                if (k < 0 && errno == EAGAIN)
                        return TRUE;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        s->ended = TRUE;
                        return FALSE;
                }
                stream_frame_reader_commit(&s->rd, (size_t) k);
                while ((r = stream_frame_reader_next(&s->rd, &f)) > 0)
                        stream_take(s, &f);
                if (!s->version && s->rd.header_seen)
                        s->version = s->rd.version;
                if (r < 0) {
                        s->error = r;
                        return FALSE;
                }
        }
}

static gboolean on_stream(int fd, GIOCondition cond, gpointer data) {
        Stream *s = data;

        if (stream_read(s))
                return G_SOURCE_CONTINUE;
        s->source = 0;
        return G_SOURCE_REMOVE;
}

/* Reads s in the main loop (on) or lets it fill (off). */
static void stream_reading(Stream *s, gboolean on) {
        if (on && !s->source && !s->ended)
                s->source = g_unix_fd_add(s->fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stream, s);
        else if (!on && s->source) {
                g_source_remove(s->source);
                s->source = 0;
        }
}

static void record_clear(gpointer p) {
        WtRecord *r = p;

        g_free(r->path);
        g_free(r->new_path);
}

/* OpenStream(options) on p: the fd, or -1 with *error set. */
static int open_stream(WatchdInotify *p, GVariant *options, GError **error) {
        g_autoptr(GUnixFDList) fds = NULL;
        g_autoptr(GVariant) r = NULL;
        gint32 index;

        if (!options)
                options = g_variant_new("a{sv}", NULL);
        r = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(p), "OpenStream", g_variant_new_tuple(&options, 1),
                                                     G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &fds, NULL, error);
        if (!r)
                return -1;
        g_variant_get(r, "(h)", &index);
        g_assert_nonnull(fds);
        return g_unix_fd_list_get(fds, index, error);
}

/* A stream of p's client, read in the main loop. */
static Stream *stream_open(WatchdInotify *p) {
        g_autoptr(GError) error = NULL;
        Stream *s = g_new0(Stream, 1);

        s->fd = open_stream(p, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpint(s->fd, >=, 0);
        g_assert_true(g_unix_set_fd_nonblocking(s->fd, TRUE, NULL));
        stream_frame_reader_init(&s->rd);
        s->records = g_array_new(FALSE, TRUE, sizeof(WtRecord));
        g_array_set_clear_func(s->records, record_clear);
        s->overflow_ids = g_array_new(FALSE, FALSE, sizeof(guint32));
        s->removed = g_ptr_array_new_with_free_func(g_free);
        s->keep = TRUE;
        stream_reading(s, TRUE);
        return s;
}

static void stream_close(Stream *s) {
        if (!s)
                return;
        stream_reading(s, FALSE);
        if (s->fd >= 0)
                close(s->fd);
        stream_frame_reader_done(&s->rd);
        g_array_unref(s->records);
        g_array_unref(s->overflow_ids);
        g_ptr_array_unref(s->removed);
        g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stream, stream_close)

static int stream_find(Stream *s, const char *path, guint32 mask) {
        for (guint i = 0; i < s->records->len; i++) {
                WtRecord *r = &g_array_index(s->records, WtRecord, i);

                if (strcmp(r->path, path) == 0 && (r->mask & mask) == mask)
                        return (int) i;
        }
        return -1;
}

typedef struct Want {
        Stream *s;
        const char *path;
        guint32 mask;
        guint64 n;
} Want;

static gboolean have_record(gpointer data) {
        Want *w = data;

        return stream_find(w->s, w->path, w->mask) >= 0;
}

static gboolean have_records(gpointer data) {
        Want *w = data;

        return w->s->n_records >= w->n;
}

static gboolean have_overflow(gpointer data) {
        Want *w = data;

        return w->s->n_overflows > 0;
}

static gboolean have_removed(gpointer data) {
        Want *w = data;

        return w->s->removed->len > 0;
}

static gboolean have_end(gpointer data) {
        Want *w = data;

        return w->s->ended;
}

static WtRecord *await_stream_record(Stream *s, const char *path, guint32 mask) {
        Want w = { .s = s, .path = path, .mask = mask };

        if (!wt_await(have_record, &w, TIMEOUT_MS))
                g_error("no record of \"%s\" with mask 0x%x in the stream (%" G_GUINT64_FORMAT " records)", path, mask,
                        s->n_records);
        return &g_array_index(s->records, WtRecord, stream_find(s, path, mask));
}

static gboolean await_stream_records(Stream *s, guint64 n, int timeout_ms) {
        Want w = { .s = s, .n = n };

        return wt_await(have_records, &w, timeout_ms);
}

static gboolean await_stream_overflow(Stream *s) {
        Want w = { .s = s };

        return wt_await(have_overflow, &w, TIMEOUT_MS);
}

static gboolean await_stream_end(Stream *s) {
        Want w = { .s = s };

        return wt_await(have_end, &w, TIMEOUT_MS);
}

static guint64 watchd_rss_kb(WtDaemon *d) {
        g_autofree char *pid = g_strdup_printf("%d", (int) wt_process_pid(d->process));

        return wt_proc_status(pid, "VmRSS");
}

static void make_files(const char *dir, const char *prefix, guint n) {
        for (guint i = 0; i < n; i++) {
                g_autofree char *p = g_strdup_printf("%s/%s%06u", dir, prefix, i);

                wt_touch(p);
        }
}

/* ---------------------------------------------------------------- cases */

/* Events, a paired rename with both paths, a name that is not UTF-8 as its
 * bytes, a removal; nothing as signals while the stream is open. */
static void test_records(WtFixture *f, gconstpointer data) {
        g_autoptr(Stream) s = stream_open(f->proxy);
        g_autofree char *a = wt_fixture_path(f, "a");
        g_autofree char *b = wt_fixture_path(f, "b");
        g_autofree char *odd = wt_fixture_path(f, "caf\xe9\n");
        g_autofree char *sub = wt_fixture_path(f, "sub");
        guint32 id, sub_id;
        WtRecord *r;

        id = wt_add_watch(f->proxy, f->dir, IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO, 0, NULL);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        sub_id = wt_add_watch(f->proxy, sub, IN_CREATE, 0, NULL);

        wt_touch(a);
        r = await_stream_record(s, a, IN_CREATE);
        g_assert_cmpuint(r->id, ==, id);
        g_assert_cmpstr(r->new_path, ==, "");
        g_assert_cmpuint(s->version, ==, 1);

        g_assert_cmpint(g_rename(a, b), ==, 0);
        r = await_stream_record(s, a, IN_MOVED_FROM | IN_MOVED_TO);
        g_assert_cmpstr(r->new_path, ==, b);
        g_assert_cmpuint(r->cookie, !=, 0);

        wt_touch(odd);
        r = await_stream_record(s, odd, IN_CREATE);
        g_assert_cmpuint(r->mask & 0x00100000u, ==, 0); /* never PATH_ESCAPED: bytes as they are */

        g_assert_cmpint(g_rmdir(sub), ==, 0);
        {
                g_autofree char *want = g_strdup_printf("%u deleted", sub_id);
                Want w = { .s = s };

                g_assert_true(wt_await(have_removed, &w, TIMEOUT_MS));
                g_assert_cmpuint(s->removed->len, ==, 1);
                g_assert_cmpstr(g_ptr_array_index(s->removed, 0), ==, want);
        }

        /* None of it came as signals. */
        g_assert_cmpuint(f->a.n_records, ==, 0);
        g_assert_cmpuint(f->a.n_signals, ==, 0);
        g_assert_cmpuint(s->n_overflows, ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "streams"), ==, 1);
}

/* Two stream clients: each stream carries its own client's records only. */
static void test_own_records_only(WtFixture *f, gconstpointer data) {
        g_autoptr(Stream) sa = stream_open(f->proxy);
        g_autoptr(Stream) sb = stream_open(f->proxy2);
        g_autofree char *d1 = wt_fixture_path(f, "one");
        g_autofree char *d2 = wt_fixture_path(f, "two");
        guint32 ida, idb;

        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        ida = wt_add_watch(f->proxy, d1, IN_CREATE, 0, NULL);
        idb = wt_add_watch(f->proxy2, d2, IN_CREATE, 0, NULL);
        make_files(d1, "a", 50);
        make_files(d2, "b", 50);
        g_assert_true(await_stream_records(sa, 50, TIMEOUT_MS));
        g_assert_true(await_stream_records(sb, 50, TIMEOUT_MS));
        /* One more round trip to the daemon: anything else would have come by now. */
        (void) wt_stat(f->proxy, "clients");
        while (g_main_context_iteration(NULL, FALSE))
                ;
        g_assert_cmpuint(sa->n_records, ==, 50);
        g_assert_cmpuint(sb->n_records, ==, 50);
        for (guint i = 0; i < 50; i++) {
                g_assert_cmpuint(g_array_index(sa->records, WtRecord, i).id, ==, ida);
                g_assert_true(g_str_has_prefix(g_array_index(sa->records, WtRecord, i).path, d1));
                g_assert_cmpuint(g_array_index(sb->records, WtRecord, i).id, ==, idb);
                g_assert_true(g_str_has_prefix(g_array_index(sb->records, WtRecord, i).path, d2));
        }
}

/* Files being created while the client switches: each is reported once,
 * by a signal before the switch or in the stream after it. */
typedef struct Writer {
        char *dir;
        guint n;
        gint done;
        gint opened; /* set once the stream is open: the second half is written after it */
} Writer;

/* Files s000000 ... in order; the second half only once the stream is open,
 * so that some records must go by it however slow the daemon is (under
 * valgrind the first half can all have gone as signals by then). */
static gpointer writer_thread(gpointer data) {
        Writer *w = data;

        for (guint i = 0; i < w->n; i++) {
                g_autofree char *p = g_strdup_printf("%s/s%06u", w->dir, i);

                while (i == w->n / 2 && !g_atomic_int_get(&w->opened))
                        g_usleep(1000);
                wt_touch(p);
        }
        g_atomic_int_set(&w->done, 1);
        return NULL;
}

typedef struct Both {
        WtCollector *signals;
        Stream *s;
        guint64 n;
} Both;

static gboolean have_both(gpointer data) {
        Both *b = data;

        return b->signals->n_records + b->s->n_records >= b->n;
}

/* The index in the file name make_files() gave. */
static guint file_index(const char *path) {
        return (guint) g_ascii_strtoull(strrchr(path, '/') + 2, NULL, 10);
}

static void test_switch(WtFixture *f, gconstpointer data) {
        const char *dir = wt_fixture_fast_dir(f);
        Writer w = { .dir = g_strdup(dir), .n = 3000 };
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(Stream) s = NULL;
        guint last_signalled = 0, first_streamed = G_MAXUINT;
        GThread *t;
        Both both;

        (void) wt_add_watch(f->proxy, dir, IN_CREATE, 0, NULL);
        t = g_thread_new("writer", writer_thread, &w);
        /* Some go as signals first. */
        g_assert_true(wt_await_records(&f->a, 100, TIMEOUT_MS));
        s = stream_open(f->proxy);
        g_atomic_int_set(&w.opened, 1);
        g_thread_join(t);
        both = (Both) { .signals = &f->a, .s = s, .n = w.n };
        g_assert_true(wt_await(have_both, &both, TIMEOUT_MS));
        (void) wt_stat(f->proxy, "clients");
        while (g_main_context_iteration(NULL, FALSE))
                ;

        /* Each file once, by one way or the other, and none lost. */
        g_assert_cmpuint(f->a.n_records + s->n_records, ==, w.n);
        g_assert_cmpuint(s->n_records, >, 0);
        for (guint i = 0; i < f->a.records->len; i++) {
                const char *p = wt_collector_record(&f->a, i)->path;

                g_assert_true(g_hash_table_add(seen, g_strdup(p)));
                last_signalled = MAX(last_signalled, file_index(p));
        }
        for (guint i = 0; i < s->records->len; i++) {
                const char *p = g_array_index(s->records, WtRecord, i).path;

                g_assert_true(g_hash_table_add(seen, g_strdup(p)));
                first_streamed = MIN(first_streamed, file_index(p));
        }
        g_assert_cmpuint(g_hash_table_size(seen), ==, w.n);
        /* In kernel order: the signals stop where the stream begins. */
        g_assert_cmpuint(last_signalled, <, first_streamed);
        g_assert_cmpuint(f->a.n_overflows + s->n_overflows, ==, 0);
        g_free(w.dir);
}

/* A client that stops reading: its socket fills, its queue reaches the
 * limit and is dropped; when it reads again it finds Overflow in the stream,
 * after the records that had gone before, and the later ones after it.
 * Meanwhile another stream client gets every record, and watchd holds no
 * more than the limit. */
/* Rounds of SLOW_ROUND files, each awaited at the client that reads: it
 * never has more than a round unread, below its limit, so it never
 * overflows however slow the machine; the one that does not read has
 * far more than its limit and its socket's buffer hold. */
#define SLOW_CONFIG "[limits]\nmax_pending_events_per_client = 1000\n"
#define SLOW_FILES  20000u
#define SLOW_ROUND  500u

static void test_stopped_reader(WtFixture *f, gconstpointer data) {
        g_autoptr(Stream) slow = stream_open(f->proxy);
        g_autoptr(Stream) fast = stream_open(f->proxy2);
        const char *dir = wt_fixture_fast_dir(f);
        g_autofree char *late = g_strdup_printf("%s/late", dir);
        guint32 id_slow;
        int unread = 0;

        slow->keep = fast->keep = FALSE;
        stream_reading(slow, FALSE);
        id_slow = wt_add_watch(f->proxy, dir, IN_CREATE, 0, NULL);
        (void) wt_add_watch(f->proxy2, dir, IN_CREATE, 0, NULL);

        for (guint k = 0; k < SLOW_FILES; k += SLOW_ROUND) {
                g_autofree char *prefix = g_strdup_printf("f%05u-", k);

                make_files(dir, prefix, SLOW_ROUND);
                if (!await_stream_records(fast, k + SLOW_ROUND, TIMEOUT_MS))
                        g_error("the client that reads has %" G_GUINT64_FORMAT " of %u records (%u overflows), "
                                "ended %d, error %d; watchd has %" G_GUINT64_FORMAT " pending",
                                fast->n_records, k + SLOW_ROUND, fast->n_overflows, fast->ended, fast->error,
                                wt_stat(f->proxy, "pending_events"));
                /* What watchd keeps for the stuck client stays within its limit. */
                g_assert_cmpuint(wt_stat(f->proxy, "pending_events"), <=, 1000);
        }
        g_assert_cmpuint(fast->n_records, ==, SLOW_FILES);
        g_assert_cmpuint(fast->n_overflows, ==, 0);

        /* The stuck client's socket holds what the kernel's buffer holds, not the storm. */
        g_assert_cmpint(ioctl(slow->fd, FIONREAD, &unread), ==, 0);
        g_assert_cmpint(unread, >, 0);
        g_assert_cmpint(unread, <, (int) (SLOW_FILES * 40));
        g_assert_cmpuint(slow->n_records, ==, 0);

        stream_reading(slow, TRUE);
        g_assert_true(await_stream_overflow(slow));
        g_assert_cmpuint(slow->overflow_ids->len, ==, 1);
        g_assert_cmpuint(g_array_index(slow->overflow_ids, guint32, 0), ==, id_slow);
        g_assert_cmpuint(slow->records_before_overflow, >, 0);
        g_assert_cmpuint(slow->records_before_overflow, <, SLOW_FILES);

        /* And it is served again. */
        slow->keep = TRUE;
        wt_touch(late);
        (void) await_stream_record(slow, late, IN_CREATE);
        g_assert_cmpuint(f->a.n_records + f->b.n_records, ==, 0);
}

/* A client that closes its end: its stream ends, and its records come as
 * signals again, the first an Overflow if records had gone to the stream. */
static void test_closed(WtFixture *f, gconstpointer data) {
        g_autoptr(Stream) other = stream_open(f->proxy2);
        Stream *s = stream_open(f->proxy);
        g_autofree char *a = wt_fixture_path(f, "a");
        g_autofree char *b = wt_fixture_path(f, "b");
        guint32 id;

        id = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        (void) wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_touch(a);
        (void) await_stream_record(s, a, IN_CREATE);
        stream_close(s);
        g_assert_true(wt_await_stat(f->proxy, "streams", 1, TIMEOUT_MS));

        wt_touch(b);
        (void) wt_await_record(&f->a, b, IN_CREATE, TIMEOUT_MS);
        g_assert_true(wt_collector_has_overflow_id(&f->a, id));
        g_assert_cmpuint(f->a.n_records, ==, 1);
        /* The other client's stream goes on. */
        (void) await_stream_record(other, b, IN_CREATE);
        g_assert_cmpuint(other->n_overflows, ==, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);
}

/* Closed before any record went to it: nothing was lost, no Overflow. */
static void test_closed_unused(WtFixture *f, gconstpointer data) {
        Stream *s = stream_open(f->proxy);
        g_autofree char *a = wt_fixture_path(f, "a");

        (void) wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        stream_close(s);
        g_assert_true(wt_await_stat(f->proxy, "streams", 0, TIMEOUT_MS));
        wt_touch(a);
        (void) wt_await_record(&f->a, a, IN_CREATE, TIMEOUT_MS);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* A client that writes on its stream: its end cannot write (EPIPE), nothing
 * of it reaches watchd, whose memory does not move, and the stream goes on. */
static void test_garbage(WtFixture *f, gconstpointer data) {
        g_autoptr(Stream) s = stream_open(f->proxy);
        g_autoptr(Stream) other = stream_open(f->proxy2);
        g_autofree char *a = wt_fixture_path(f, "a");
        g_autofree char *b = wt_fixture_path(f, "b");
        char junk[65536];
        guint64 rss_before;

        (void) wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        (void) wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_touch(a);
        (void) await_stream_record(s, a, IN_CREATE);
        (void) await_stream_record(other, a, IN_CREATE);
        rss_before = watchd_rss_kb(f->daemon);

        memset(junk, 'x', sizeof junk);
        for (int i = 0; i < 4096; i++) {
                ssize_t k = send(s->fd, junk, sizeof junk, MSG_NOSIGNAL | MSG_DONTWAIT);

                g_assert_cmpint(k, ==, -1);
                g_assert_cmpint(errno, ==, EPIPE);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "streams"), ==, 2);

        /* Both streams go on, watchd's memory as it was. */
        wt_touch(b);
        (void) await_stream_record(s, b, IN_CREATE);
        (void) await_stream_record(other, b, IN_CREATE);
        g_assert_false(s->ended);
        g_assert_cmpint(s->error, ==, 0);
        g_assert_cmpuint(f->a.n_records + f->b.n_records, ==, 0);
        g_assert_cmpuint(watchd_rss_kb(f->daemon), <, rss_before + 1024);
}

/* The stream is its connection's: closing the connection ends it (the client
 * reads the end of the stream) with the client's subscriptions. */
static void test_connection_closed(WtFixture *f, gconstpointer data) {
        WtClient *c = wt_client_new(f->bus);
        g_autoptr(Stream) s = stream_open(c->proxy);
        g_autofree char *a = wt_fixture_path(f, "a");

        (void) wt_add_watch(c->proxy, f->dir, IN_CREATE, 0, NULL);
        wt_touch(a);
        (void) await_stream_record(s, a, IN_CREATE);
        wt_client_free(c);
        g_assert_true(await_stream_end(s));
        g_assert_cmpint(s->error, ==, 0);
        g_assert_cmpuint(stream_frame_reader_pending(&s->rd), ==, 0);
        g_assert_true(wt_await_stat(f->proxy, "streams", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 0, TIMEOUT_MS));
}

/* A client killed with its stream open: the stream, the subscriptions and the
 * kernel watch go with its connection. */
static void test_killed(WtFixture *f, gconstpointer data) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GSubprocess) p = NULL;
        g_autoptr(GDataInputStream) out = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *line = NULL;

        g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
        p = g_subprocess_launcher_spawn(l, &error, STREAM_CLIENT, f->bus->address, f->dir, NULL);
        g_assert_no_error(error);
        out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p));
        line = g_data_input_stream_read_line(out, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(line, ==, "ready");
        g_assert_cmpuint(wt_stat(f->proxy, "streams"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);

        g_subprocess_send_signal(p, SIGKILL);
        g_assert_true(g_subprocess_wait(p, NULL, NULL));
        g_assert_true(wt_await_stat(f->proxy, "streams", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "clients", 0, TIMEOUT_MS));
}

/* A hundred clients, each with its stream and its subscription of one directory. */
#define HUNDRED       100
#define HUNDRED_FILES 300u

static void test_hundred(WtFixture *f, gconstpointer data) {
        WtClient *c[HUNDRED];
        Stream *s[HUNDRED];
        const char *dir = wt_fixture_fast_dir(f);

        for (int i = 0; i < HUNDRED; i++) {
                c[i] = wt_client_new(f->bus);
                s[i] = stream_open(c[i]->proxy);
                s[i]->keep = FALSE;
                (void) wt_add_watch(c[i]->proxy, dir, IN_CREATE, 0, NULL);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "streams"), ==, HUNDRED);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 1);
        make_files(dir, "h", HUNDRED_FILES);
        for (int i = 0; i < HUNDRED; i++) {
                g_assert_true(await_stream_records(s[i], HUNDRED_FILES, TIMEOUT_MS));
                g_assert_cmpuint(s[i]->n_overflows, ==, 0);
        }
        for (int i = 0; i < HUNDRED; i++) {
                g_assert_cmpuint(s[i]->n_records, ==, HUNDRED_FILES);
                g_assert_cmpuint(c[i]->events.n_records, ==, 0);
                stream_close(s[i]);
                wt_client_free(c[i]);
        }
        g_assert_true(wt_await_stat(f->proxy, "streams", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 0, TIMEOUT_MS));
}

/* The D-Bus name of a remote error (the error is cleared). */
static char *take_remote_error(GError **error) {
        char *name;

        g_assert_nonnull(*error);
        g_assert_true(g_dbus_error_is_remote_error(*error));
        name = g_dbus_error_get_remote_error(*error);
        g_clear_error(error);
        return name;
}

/* The options, and a second stream while one is open. */
static void test_open(WtFixture *f, gconstpointer data) {
        g_autoptr(GError) error = NULL;
        g_autoptr(Stream) s = NULL;
        g_autofree char *name = NULL;
        GVariantBuilder b;
        int fd;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "version", g_variant_new_uint32(0));
        g_assert_cmpint(open_stream(f->proxy, g_variant_builder_end(&b), &error), ==, -1);
        name = take_remote_error(&error);
        g_assert_cmpstr(name, ==, E_INVALID_ARGS);
        g_clear_pointer(&name, g_free);

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "version", g_variant_new_string("1"));
        g_assert_cmpint(open_stream(f->proxy, g_variant_builder_end(&b), &error), ==, -1);
        name = take_remote_error(&error);
        g_assert_cmpstr(name, ==, E_INVALID_ARGS);
        g_clear_pointer(&name, g_free);

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "no-such-option", g_variant_new_boolean(TRUE));
        g_assert_cmpint(open_stream(f->proxy, g_variant_builder_end(&b), &error), ==, -1);
        name = take_remote_error(&error);
        g_assert_cmpstr(name, ==, E_INVALID_ARGS);
        g_clear_pointer(&name, g_free);

        /* A client that reads a later version gets the one watchd speaks. */
        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        g_variant_builder_add(&b, "{sv}", "version", g_variant_new_uint32(7));
        fd = open_stream(f->proxy, g_variant_builder_end(&b), &error);
        g_assert_no_error(error);
        {
                uint8_t h[STREAM_FRAME_HEADER_SIZE];
                uint16_t v = 0;

                g_assert_cmpint(read(fd, h, sizeof h), ==, (ssize_t) sizeof h);
                g_assert_cmpint(stream_frame_header_decode(h, sizeof h, &v), ==, STREAM_FRAME_HEADER_SIZE);
                g_assert_cmpuint(v, ==, 1);
        }

        /* One stream a connection. */
        g_assert_cmpint(open_stream(f->proxy, NULL, &error), ==, -1);
        name = take_remote_error(&error);
        g_assert_cmpstr(name, ==, E_LIMITS);
        g_clear_pointer(&name, g_free);

        /* Closed, it may be opened again at once (watchd sees the old one is gone). */
        close(fd);
        s = stream_open(f->proxy);
        g_assert_cmpuint(wt_stat(f->proxy, "streams"), ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        WT_CASE("/stream/records", NULL, test_records);
        WT_CASE("/stream/own-records-only", NULL, test_own_records_only);
        WT_CASE("/stream/switch", NULL, test_switch);
        WT_CASE("/stream/stopped-reader", SLOW_CONFIG, test_stopped_reader);
        WT_CASE("/stream/closed", NULL, test_closed);
        WT_CASE("/stream/closed-unused", NULL, test_closed_unused);
        WT_CASE("/stream/garbage", NULL, test_garbage);
        WT_CASE("/stream/connection-closed", NULL, test_connection_closed);
        WT_CASE("/stream/killed", NULL, test_killed);
        WT_CASE("/stream/hundred", NULL, test_hundred);
        WT_CASE("/stream/open", NULL, test_open);
        return g_test_run();
}
