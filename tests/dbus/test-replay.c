/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-replay - a durable subscription's replay larger than the window
 * (issue 22), on a bus built from Debian's system.conf and our policy
 *
 * The daemon runs with a window of 1,000 records
 * (max_pending_events_per_client) and the journal holds 20,000: a resume
 * must send every record, in order, each once, then DurableCaughtUp, under
 * the client's flow control, however it reads:
 *
 *   /replay/signals              as signals, the client on the bus only;
 *   /replay/signals-bytes        the same with a byte window smaller than
 *                                the record window
 *                                (max_pending_bytes_per_client = 64K, about
 *                                400 of these records): it binds first;
 *   /replay/signals-stream-open  as signals, the client also reading a
 *                                stream of its live records (OpenStream
 *                                without "durable"), which keep flowing;
 *   /replay/stream               in the stream (OpenStream "durable"),
 *                                live records of the same stream flowing
 *                                during the replay;
 *   /replay/client-killed/...    watchctl killed in the middle of the
 *                                replay, then resumed from the last record
 *                                it printed: the rest, none twice, none
 *                                missing (over the stream and as signals);
 *   /replay/daemon-killed        watchd SIGKILLed in the middle of the
 *                                replay, started again, resumed from the
 *                                last record printed: the rest, then the
 *                                daemon-down rescan, then caught up.
 *
 * A replay is awaited while it makes progress: a case fails once nothing
 * has come for IDLE_MS, however slow the machine, instead of after a
 * fixed time. Run as root (the system-style bus lets only root own the
 * name); skipped otherwise.
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <gio/gunixinputstream.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "stream_frame.h"
#include "watchd-api.h"
#include "wt-fixture.h"

#define WINDOW 1000u
#define CONFIG "[limits]\nmax_pending_events_per_client = 1000\n"
static const char BYTES_CONFIG[] = "[limits]\nmax_pending_events_per_client = 1000\nmax_pending_bytes_per_client = 64K\n";
#define JOURNAL_RECORDS 20000u
#define CHUNK           2000u /* files made before the journal is awaited: below the kernel's queue */
#define KILL_AT         7000u /* records printed before a kill */
#define LIVE_RECORDS    20u
#define IDLE_MS         30000 /* no progress for this long: stalled */
#define CALL_TIMEOUT_MS 60000

/* ---------------------------------------------------------------- the fixture */

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        char *dir; /* on tmpfs: tree/ (journaled) and live/ */
        char *tree, *live;
        GDBusConnection *conn;
        WatchdInotify *proxy;
        char *journal; /* of "idx" */
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        if (geteuid() != 0) {
                g_test_skip("the system-style bus lets only root own org.example.Inotify: run as root");
                return;
        }
        f->dir = wt_make_fast_dir();
        g_assert_cmpint(g_chmod(f->dir, 0755), ==, 0);
        f->tree = g_build_filename(f->dir, "tree", NULL);
        f->live = g_build_filename(f->dir, "live", NULL);
        g_assert_cmpint(g_mkdir(f->tree, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(f->live, 0755), ==, 0);
        f->bus = wt_system_bus_start();
        f->daemon = wt_daemon_start(f->bus, data == BYTES_CONFIG ? BYTES_CONFIG : CONFIG);
        f->conn = wt_connect(f->bus);
        f->proxy = wt_proxy(f->conn);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        if (!f->bus)
                return;
        g_clear_object(&f->proxy);
        if (f->conn)
                g_dbus_connection_close_sync(f->conn, NULL, NULL);
        g_clear_object(&f->conn);
        if (f->daemon)
                g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        wt_bus_stop(f->bus);
        wt_remove_tree(f->dir);
        g_free(f->dir);
        g_free(f->tree);
        g_free(f->live);
        g_free(f->journal);
}

/* ListDurable's last id of "idx". */
static guint64 last_id(Fixture *f) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        GVariantIter it;
        const char *name;
        guint64 last, found = 0;

        g_assert_true(watchd_inotify_call_list_durable_sync(f->proxy, &list, NULL, &error));
        g_assert_no_error(error);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&s&suu&stttb&s)", &name, NULL, NULL, NULL, NULL, NULL, &last, NULL, NULL, NULL))
                if (strcmp(name, "idx") == 0)
                        found = last;
        return found;
}

/* The durable subscription "idx" on tree/ (IN_CREATE: a record a file), and n files made there. */
static void make_journal(Fixture *f, guint n) {
        g_autoptr(GError) error = NULL;
        guint64 cursor;

        g_assert_true(watchd_inotify_call_create_durable_sync(f->proxy, "idx", f->tree, IN_CREATE, 0, &f->journal,
                                                              &cursor, NULL, &error));
        g_assert_no_error(error);
        for (guint done = 0; done < n;) {
                guint chunk = MIN(CHUNK, n - done);
                gint64 deadline;

                for (guint k = 0; k < chunk; k++, done++) {
                        g_autofree char *p = g_strdup_printf("%s/f%06u", f->tree, done);
                        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

                        g_assert_cmpint(fd, >=, 0);
                        g_assert_cmpint(close(fd), ==, 0);
                }
                /* Journaled before the next chunk: the kernel's queue never overflows. */
                deadline = g_get_monotonic_time() + (gint64) IDLE_MS * 1000;
                while (last_id(f) < done) {
                        if (g_get_monotonic_time() > deadline) {
                                g_autofree char *log = wt_daemon_log(f->daemon);

                                g_error("the journal has %" G_GUINT64_FORMAT " records of %u; watchd's log:\n%s",
                                        last_id(f), done, log);
                        }
                        g_usleep(5000);
                }
        }
        g_assert_cmpuint(last_id(f), ==, n);
}

/* ---------------------------------------------------------------- a client that resumes */

typedef struct Resumer {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        gulong handler;
        GArray *ids;      /* guint64: each event's id, in arrival order */
        GPtrArray *paths; /* each event's path */
        guint64 caught_up_id;
        gboolean caught_up;
        char *stopped;
        guint rescans;
        guint n_signals;    /* Durable* signals */
        guint caught_up_at; /* ids->len when caught up */

        /* Its stream, if it opened one: live records and, with "durable", its durable frames. */
        int fd;
        guint source;
        StreamFrameReader rd;
        guint n_live;                /* EVENT frames */
        guint live_before_caught_up; /* of them, before the DURABLE_CAUGHT_UP frame */
        guint durable_frames;
        gboolean stream_ended;
        size_t read_size; /* bytes a read takes at most: small, so that the replay lasts */
} Resumer;

static void take_event(Resumer *r, guint64 id, const char *path) {
        g_array_append_val(r->ids, id);
        g_ptr_array_add(r->paths, g_strdup(path));
}

static void on_signal(GDBusProxy *proxy, const char *sender, const char *signal, GVariant *params, gpointer data) {
        Resumer *r = data;

        if (!g_str_has_prefix(signal, "Durable"))
                return;
        r->n_signals++;
        if (strcmp(signal, "DurableEvents") == 0) {
                g_autoptr(GVariantIter) it = NULL;
                const char *path, *new_path;
                guint64 id;
                guint32 mask, cookie;

                g_variant_get(params, "(&sa(tuuss))", NULL, &it);
                while (g_variant_iter_next(it, "(tuu&s&s)", &id, &mask, &cookie, &path, &new_path))
                        take_event(r, id, path);
        } else if (strcmp(signal, "DurableRescan") == 0)
                r->rescans++;
        else if (strcmp(signal, "DurableCaughtUp") == 0) {
                g_variant_get(params, "(&st)", NULL, &r->caught_up_id);
                r->caught_up = TRUE;
                r->caught_up_at = r->ids->len;
        } else if (strcmp(signal, "DurableStopped") == 0) {
                const char *reason;

                g_variant_get(params, "(&s&s)", NULL, &reason);
                r->stopped = g_strdup(reason);
        }
}

static Resumer *resumer_new(Fixture *f) {
        Resumer *r = g_new0(Resumer, 1);

        r->conn = wt_connect(f->bus);
        r->proxy = wt_proxy(r->conn);
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(r->proxy), CALL_TIMEOUT_MS);
        r->ids = g_array_new(FALSE, FALSE, sizeof(guint64));
        r->paths = g_ptr_array_new_with_free_func(g_free);
        r->handler = g_signal_connect(r->proxy, "g-signal", G_CALLBACK(on_signal), r);
        r->fd = -1;
        r->read_size = 65536;
        stream_frame_reader_init(&r->rd);
        return r;
}

static void resumer_free(Resumer *r) {
        if (r->source)
                g_source_remove(r->source);
        if (r->fd >= 0)
                close(r->fd);
        stream_frame_reader_done(&r->rd);
        g_signal_handler_disconnect(r->proxy, r->handler);
        g_object_unref(r->proxy);
        g_dbus_connection_close_sync(r->conn, NULL, NULL);
        g_object_unref(r->conn);
        g_array_unref(r->ids);
        g_ptr_array_unref(r->paths);
        g_free(r->stopped);
        g_free(r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Resumer, resumer_free)

static void stream_take(Resumer *r, const StreamFrame *fr) {
        switch (fr->type) {
        case STREAM_FRAME_EVENT:
                r->n_live++;
                if (!r->caught_up)
                        r->live_before_caught_up++;
                break;
        case STREAM_FRAME_DURABLE_EVENT:
                r->durable_frames++;
                g_assert_cmpstr(fr->name, ==, "idx");
                take_event(r, fr->cursor, fr->path);
                break;
        case STREAM_FRAME_DURABLE_RESCAN:
                r->durable_frames++;
                r->rescans++;
                break;
        case STREAM_FRAME_DURABLE_CAUGHT_UP:
                r->durable_frames++;
                g_assert_cmpstr(fr->name, ==, "idx");
                r->caught_up_id = fr->cursor;
                r->caught_up = TRUE;
                r->caught_up_at = r->ids->len;
                break;
        case STREAM_FRAME_DURABLE_STOPPED:
                r->durable_frames++;
                r->stopped = g_strndup(fr->reason, fr->reason_len);
                break;
        default:
                g_error("a frame of type %u in the stream", fr->type);
        }
}

/* One read of the stream (at most read_size bytes), its frames taken. */
static gboolean on_stream(int fd, GIOCondition cond, gpointer data) {
        Resumer *r = data;
        StreamFrame fr;
        void *p;
        size_t n;
        ssize_t k;
        int x;

        g_assert_cmpint(stream_frame_reader_space(&r->rd, r->read_size, &p, &n), ==, 0);
        k = read(r->fd, p, MIN(n, r->read_size));
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return G_SOURCE_CONTINUE;
        if (k <= 0) {
                r->stream_ended = TRUE;
                r->source = 0;
                return G_SOURCE_REMOVE;
        }
        stream_frame_reader_commit(&r->rd, (size_t) k);
        while ((x = stream_frame_reader_next(&r->rd, &fr)) > 0)
                stream_take(r, &fr);
        g_assert_cmpint(x, ==, 0);
        return G_SOURCE_CONTINUE;
}

/* OpenStream: with "durable", the durable frames too. Read in the main loop. */
static void resumer_open_stream(Resumer *r, gboolean durable) {
        g_autoptr(GUnixFDList) fds = NULL;
        g_autoptr(GVariant) reply = NULL;
        g_autoptr(GError) error = NULL;
        GVariantBuilder b;
        gint32 index;

        g_variant_builder_init(&b, G_VARIANT_TYPE("a{sv}"));
        if (durable)
                g_variant_builder_add(&b, "{sv}", "durable", g_variant_new_boolean(TRUE));
        reply = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(r->proxy), "OpenStream",
                                                         g_variant_new("(a{sv})", &b), G_DBUS_CALL_FLAGS_NONE,
                                                         CALL_TIMEOUT_MS, NULL, &fds, NULL, &error);
        g_assert_no_error(error);
        g_variant_get(reply, "(h)", &index);
        r->fd = g_unix_fd_list_get(fds, index, &error);
        g_assert_no_error(error);
        g_assert_true(g_unix_set_fd_nonblocking(r->fd, TRUE, NULL));
        r->source = g_unix_fd_add(r->fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stream, r);
}

static void resume(Resumer *r, const char *journal, guint64 cursor) {
        g_autoptr(GError) error = NULL;
        g_autofree char *current = NULL;

        g_assert_true(watchd_inotify_call_resume_durable_sync(r->proxy, "idx", journal, cursor, &current, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(current, ==, journal);
}

/* Iterates the main loop until cond(data), failing once *progress has not moved for IDLE_MS. */
static void await_until(const char *what, gboolean (*cond)(gpointer), gpointer data, const guint *progress) {
        guint last = *progress;
        gint64 idle_since = g_get_monotonic_time();

        while (!cond(data)) {
                g_main_context_iteration(NULL, FALSE);
                if (*progress != last) {
                        last = *progress;
                        idle_since = g_get_monotonic_time();
                } else if (g_get_monotonic_time() - idle_since > (gint64) IDLE_MS * 1000)
                        g_error("%s: stalled after %u records (nothing for %d ms)", what, *progress, IDLE_MS);
                else if (!g_main_context_pending(NULL))
                        g_usleep(1000);
        }
}

static gboolean flag_set(gpointer data) {
        return *(const gboolean *) data;
}

/* Until *done, failing once *progress has not moved for IDLE_MS. */
static void await_progress(const char *what, const gboolean *done, const guint *progress) {
        await_until(what, flag_set, (gpointer) done, progress);
}

/* ids are 1..n, in order, each once, for the files f000000..; then caught up at n. */
static void assert_whole(Fixture *f, Resumer *r, guint n) {
        g_assert_cmpuint(r->ids->len, ==, n);
        for (guint i = 0; i < n; i++) {
                g_autofree char *p = g_strdup_printf("%s/f%06u", f->tree, i);

                if (g_array_index(r->ids, guint64, i) != i + 1)
                        g_error("record %u has id %" G_GUINT64_FORMAT, i, g_array_index(r->ids, guint64, i));
                g_assert_cmpstr(r->paths->pdata[i], ==, p);
        }
        g_assert_true(r->caught_up);
        g_assert_cmpuint(r->caught_up_at, ==, n);
        g_assert_cmpuint(r->caught_up_id, ==, n);
        g_assert_cmpuint(r->rescans, ==, 0);
        g_assert_null(r->stopped);
}

/* ---------------------------------------------------------------- the cases */

/* On the bus only: Ping answered by GDBus, window after window. */
static void test_signals(Fixture *f, gconstpointer data) {
        g_autoptr(Resumer) r = NULL;

        make_journal(f, JOURNAL_RECORDS);
        r = resumer_new(f);
        resume(r, f->journal, 0);
        await_progress("the replay as signals", &r->caught_up, &r->ids->len);
        assert_whole(f, r, JOURNAL_RECORDS);
}

static void touch_live(Fixture *f, guint i) {
        g_autofree char *p = g_strdup_printf("%s/l%03u", f->live, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(close(fd), ==, 0);
}

static void add_live_watch(Fixture *f, Resumer *r) {
        g_autoptr(GError) error = NULL;
        guint32 id;

        g_assert_true(watchd_inotify_call_add_watch_sync(r->proxy, f->live, IN_CREATE, 0, &id, NULL, &error));
        g_assert_no_error(error);
}

static gboolean have_live(gpointer data) {
        return ((Resumer *) data)->n_live >= LIVE_RECORDS;
}

/*
 * A client reading its live records from a stream, which did not ask for
 * durable frames (as libwatchd did): the replay comes as signals, under
 * its own flow control, and its live records keep coming on the stream.
 */
static void test_signals_stream_open(Fixture *f, gconstpointer data) {
        g_autoptr(Resumer) r = NULL;

        make_journal(f, JOURNAL_RECORDS);
        r = resumer_new(f);
        resumer_open_stream(r, FALSE);
        add_live_watch(f, r);
        resume(r, f->journal, 0);
        /* Once the replay runs, live records are made: they reach the stream. */
        while (r->ids->len == 0)
                g_main_context_iteration(NULL, TRUE);
        for (guint i = 0; i < LIVE_RECORDS; i++)
                touch_live(f, i);
        await_progress("the replay as signals, a stream open", &r->caught_up, &r->ids->len);
        assert_whole(f, r, JOURNAL_RECORDS);
        g_assert_cmpuint(r->durable_frames, ==, 0);
        await_until("the live records in the stream", have_live, r, &r->n_live);
        g_assert_cmpuint(r->n_live, ==, LIVE_RECORDS);
}

/*
 * The replay in the stream ("durable"): DURABLE_EVENT frames, then
 * DURABLE_CAUGHT_UP, and no Durable* signal. The client reads 4 KiB at a
 * time; once it has 1,000 records, live records are made, and each reaches
 * the same stream before the replay ends.
 */
static void test_stream(Fixture *f, gconstpointer data) {
        g_autoptr(Resumer) r = NULL;

        make_journal(f, JOURNAL_RECORDS);
        r = resumer_new(f);
        r->read_size = 4096;
        resumer_open_stream(r, TRUE);
        add_live_watch(f, r);
        resume(r, f->journal, 0);
        while (r->ids->len < WINDOW) {
                g_assert_false(r->caught_up);
                g_main_context_iteration(NULL, TRUE);
        }
        for (guint i = 0; i < LIVE_RECORDS; i++)
                touch_live(f, i);
        /* watchd has read them (they wait in its queue for the client, or in the stream already). */
        {
                gint64 deadline = g_get_monotonic_time() + (gint64) IDLE_MS * 1000;

                while (wt_stat(f->proxy, "events_read") < JOURNAL_RECORDS + LIVE_RECORDS) {
                        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                        g_usleep(2000);
                }
        }
        await_progress("the replay in the stream", &r->caught_up, &r->ids->len);
        assert_whole(f, r, JOURNAL_RECORDS);
        g_assert_cmpuint(r->n_signals, ==, 0);
        g_assert_cmpuint(r->live_before_caught_up, ==, LIVE_RECORDS);
}

/* ---------------------------------------------------------------- watchctl, killed or not */

typedef struct Watchctl {
        GSubprocess *sp;
        GInputStream *out;
        GString *partial; /* a line not ended yet: not printed whole, not handled */
        gboolean eof, exited;
        int status;
        GArray *ids;        /* guint64: the events printed */
        GPtrArray *rescans; /* "ID REASON" */
        guint64 caught_up_id;
        gboolean caught_up;
        guint caught_up_at;
        GString *text; /* every line but the events' */
} Watchctl;

static void watchctl_read(Watchctl *w);

/* "ID EVENTS PATH", "ID rescan REASON SCOPE", "ID caught-up" */
static void watchctl_line(Watchctl *w, const char *line) {
        guint64 id;
        char kind[64];
        int n = 0;

        if (sscanf(line, "%" G_GUINT64_FORMAT " %63s %n", &id, kind, &n) < 2)
                g_error("watchctl printed \"%s\"", line);
        if (strcmp(kind, "rescan") == 0)
                g_ptr_array_add(w->rescans, g_strdup_printf("%" G_GUINT64_FORMAT " %s", id, line + n));
        else if (strcmp(kind, "caught-up") == 0) {
                w->caught_up = TRUE;
                w->caught_up_id = id;
                w->caught_up_at = w->ids->len;
        } else
                g_array_append_val(w->ids, id);
        if (strcmp(kind, "CREATE") != 0)
                g_string_append_printf(w->text, "%s\n", line);
}

static void on_read(GObject *source, GAsyncResult *res, gpointer data) {
        Watchctl *w = data;
        g_autoptr(GBytes) bytes = g_input_stream_read_bytes_finish(w->out, res, NULL);
        const char *p, *nl;
        gsize size;

        if (!bytes || g_bytes_get_size(bytes) == 0) {
                w->eof = TRUE; /* a line cut by a kill stays in partial, not handled */
                return;
        }
        p = g_bytes_get_data(bytes, &size);
        g_string_append_len(w->partial, p, (gssize) size);
        p = w->partial->str;
        while ((nl = strchr(p, '\n'))) {
                g_autofree char *line = g_strndup(p, (gsize) (nl - p));

                watchctl_line(w, line);
                p = nl + 1;
        }
        g_string_erase(w->partial, 0, p - w->partial->str);
        watchctl_read(w);
}

static void watchctl_read(Watchctl *w) {
        g_input_stream_read_bytes_async(w->out, 65536, G_PRIORITY_DEFAULT, NULL, on_read, w);
}

static void on_watchctl_exit(GObject *source, GAsyncResult *res, gpointer data) {
        Watchctl *w = data;

        g_subprocess_wait_finish(w->sp, res, NULL);
        w->exited = TRUE;
        w->status = g_subprocess_get_if_exited(w->sp) ? g_subprocess_get_exit_status(w->sp) :
                                                        128 + g_subprocess_get_term_sig(w->sp);
}

/* watchctl --address BUS [--no-stream] durable resume idx [ARGS...] */
static Watchctl *watchctl_resume(Fixture *f, gboolean no_stream, const char *const *args) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_autoptr(GError) error = NULL;
        const char *exe = g_getenv("WATCHCTL");
        Watchctl *w = g_new0(Watchctl, 1);
        int fds[2];

        /* Its stdout a pipe of one page: what it printed past the records the
         * test has read is at most a page, so a kill once KILL_AT records are
         * read comes before it caught up, however fast the replay. (With a
         * 64 KiB pipe and short lines, the rest of a quick replay fitted in
         * the pipe and the test's last reads: replay/client-killed/signals
         * failed so once, 'w->caught_up' should be FALSE.) */
        g_assert_cmpint(pipe2(fds, O_CLOEXEC), ==, 0);
        g_assert_cmpint(fcntl(fds[0], F_SETPIPE_SZ, 4096), >=, 0);
        g_subprocess_launcher_take_stdout_fd(l, fds[1]);

        g_assert_nonnull(exe);
        g_ptr_array_add(argv, (gpointer) exe);
        g_ptr_array_add(argv, (gpointer) "--address");
        g_ptr_array_add(argv, f->bus->address);
        if (no_stream)
                g_ptr_array_add(argv, (gpointer) "--no-stream");
        g_ptr_array_add(argv, (gpointer) "durable");
        g_ptr_array_add(argv, (gpointer) "resume");
        for (; *args; args++)
                g_ptr_array_add(argv, (gpointer) *args);
        g_ptr_array_add(argv, (gpointer) "idx");
        g_ptr_array_add(argv, NULL);
        g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
        w->sp = g_subprocess_launcher_spawnv(l, (const char *const *) argv->pdata, &error);
        g_assert_no_error(error);
        w->out = g_unix_input_stream_new(fds[0], TRUE);
        w->partial = g_string_new(NULL);
        w->ids = g_array_new(FALSE, FALSE, sizeof(guint64));
        w->rescans = g_ptr_array_new_with_free_func(g_free);
        w->text = g_string_new(NULL);
        watchctl_read(w);
        g_subprocess_wait_async(w->sp, NULL, on_watchctl_exit, w);
        return w;
}

static void watchctl_free(Watchctl *w) {
        if (!w->exited)
                g_subprocess_force_exit(w->sp);
        while (!(w->exited && w->eof))
                g_main_context_iteration(NULL, TRUE);
        g_object_unref(w->out);
        g_object_unref(w->sp);
        g_string_free(w->partial, TRUE);
        g_array_unref(w->ids);
        g_ptr_array_unref(w->rescans);
        g_string_free(w->text, TRUE);
        g_free(w);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Watchctl, watchctl_free)

typedef struct Enough {
        Watchctl *w;
        guint n;
} Enough;

static gboolean watchctl_has(gpointer data) {
        Enough *e = data;

        return e->w->ids->len >= e->n || e->w->eof;
}

static gboolean watchctl_done(gpointer data) {
        Watchctl *w = data;

        return w->exited && w->eof;
}

/* The second run, from after the last id the first one printed: exits 0 once caught up. */
static Watchctl *watchctl_rest(Fixture *f, gboolean no_stream, guint64 since) {
        g_autofree char *s = g_strdup_printf("%" G_GUINT64_FORMAT, since);
        const char *args[] = { "--journal", f->journal, "--since", s, "--until-caught-up", NULL };
        Watchctl *w = watchctl_resume(f, no_stream, args);

        await_until("the second watchctl", watchctl_done, w, &w->ids->len);
        if (w->status != 0)
                g_error("watchctl exited with %d: %s", w->status, w->text->str);
        g_assert_true(w->caught_up);
        return w;
}

/* watchctl resuming from the start, awaited until it has printed n records. */
static Watchctl *watchctl_until(Fixture *f, gboolean no_stream, guint n) {
        const char *none[] = { NULL };
        Watchctl *w = watchctl_resume(f, no_stream, none);
        Enough e = { w, n };

        await_until("the first watchctl", watchctl_has, &e, &w->ids->len);
        g_assert_cmpuint(w->ids->len, >=, n);
        return w;
}

/* w SIGKILLed: what it printed is what it handled. Returns the last id it printed. */
static guint64 watchctl_kill(Watchctl *w) {
        g_subprocess_send_signal(w->sp, SIGKILL);
        while (!(w->exited && w->eof))
                g_main_context_iteration(NULL, TRUE);
        g_assert_cmpint(w->status, ==, 128 + SIGKILL);
        g_assert_false(w->caught_up);
        return g_array_index(w->ids, guint64, w->ids->len - 1);
}

/*
 * watchctl, the client a script uses, SIGKILLed once it has printed
 * KILL_AT records, then run again from the last one it printed: together
 * every id once, the second run starting right after the first.
 */
static void test_client_killed(Fixture *f, gconstpointer data) {
        gboolean no_stream = GPOINTER_TO_INT(data);
        g_autoptr(Watchctl) w1 = NULL;
        g_autoptr(Watchctl) w2 = NULL;
        guint64 last;

        make_journal(f, JOURNAL_RECORDS);
        w1 = watchctl_until(f, no_stream, KILL_AT);
        last = watchctl_kill(w1);

        w2 = watchctl_rest(f, no_stream, last);
        g_assert_cmpuint(w2->rescans->len, ==, 0);
        g_assert_cmpuint(w1->ids->len + w2->ids->len, ==, JOURNAL_RECORDS);
        for (guint i = 0; i < w1->ids->len; i++)
                g_assert_cmpuint(g_array_index(w1->ids, guint64, i), ==, i + 1);
        for (guint i = 0; i < w2->ids->len; i++)
                g_assert_cmpuint(g_array_index(w2->ids, guint64, i), ==, last + 1 + i);
        g_assert_cmpuint(w2->caught_up_id, ==, JOURNAL_RECORDS);
}

/*
 * watchd SIGKILLed in the middle of a replay to watchctl, started again on
 * the same state directory; watchctl run again from the last record it
 * printed gets the rest, then the daemon-down rescan, then caught up.
 */
static void test_daemon_killed(Fixture *f, gconstpointer data) {
        g_autoptr(Watchctl) w1 = NULL;
        g_autoptr(Watchctl) w2 = NULL;
        guint64 last;

        make_journal(f, JOURNAL_RECORDS);
        w1 = watchctl_until(f, FALSE, KILL_AT);
        g_assert_cmpint(kill(wt_process_pid(f->daemon->process), SIGKILL), ==, 0);
        g_assert_true(g_subprocess_wait(f->daemon->process, NULL, NULL));
        /* The harness's record of it, without its SIGTERM. */
        g_object_unref(f->daemon->process);
        g_free(f->daemon->config_path);
        g_free(f->daemon->log_path);
        g_free(f->daemon);
        f->daemon = NULL;
        /* It waits for watchd to come back: killed too. */
        last = watchctl_kill(w1);
        g_assert_cmpuint(last, <, JOURNAL_RECORDS);

        f->daemon = wt_daemon_start(f->bus, CONFIG);
        w2 = watchctl_rest(f, FALSE, last);
        g_assert_cmpuint(w2->ids->len, ==, JOURNAL_RECORDS - last);
        for (guint i = 0; i < w2->ids->len; i++)
                g_assert_cmpuint(g_array_index(w2->ids, guint64, i), ==, last + 1 + i);
        /* After the last record: the daemon's down time, then caught up. */
        g_assert_cmpuint(w2->rescans->len, ==, 1);
        if (!strstr(w2->rescans->pdata[0], " daemon-down"))
                g_error("not a daemon-down rescan: %s", (char *) w2->rescans->pdata[0]);
        g_assert_cmpuint(w2->caught_up_at, ==, w2->ids->len);
        g_assert_cmpuint(w2->caught_up_id, >, JOURNAL_RECORDS);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/replay/signals", Fixture, NULL, fixture_setup, test_signals, fixture_teardown);
        g_test_add("/replay/signals-bytes", Fixture, BYTES_CONFIG, fixture_setup, test_signals, fixture_teardown);
        g_test_add("/replay/signals-stream-open", Fixture, NULL, fixture_setup, test_signals_stream_open,
                   fixture_teardown);
        g_test_add("/replay/stream", Fixture, NULL, fixture_setup, test_stream, fixture_teardown);
        g_test_add("/replay/client-killed/stream", Fixture, GINT_TO_POINTER(FALSE), fixture_setup, test_client_killed,
                   fixture_teardown);
        g_test_add("/replay/client-killed/signals", Fixture, GINT_TO_POINTER(TRUE), fixture_setup, test_client_killed,
                   fixture_teardown);
        g_test_add("/replay/daemon-killed", Fixture, NULL, fixture_setup, test_daemon_killed, fixture_teardown);
        return g_test_run();
}
