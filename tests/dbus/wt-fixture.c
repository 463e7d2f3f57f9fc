/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wt-fixture - the fixture, AddWatch, the signal collector and nobody's
 * programs, shared by the D-Bus test programs (see wt-fixture.h)
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream_frame.h"
#include "wt-fixture.h"

#define WATCHD_INTERFACE "org.example.Inotify"

/* ---------------------------------------------------------------- collecting signals */

static void record_clear(gpointer p) {
        WtRecord *r = p;

        g_free(r->path);
        g_free(r->new_path);
}

static void collector_add_events(WtCollector *c, GVariant *events) {
        const char *path, *new_path;
        guint32 id, mask, cookie;
        GVariantIter it;
        guint n = 0;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                if (!c->count_only) {
                        WtRecord *r;

                        g_array_set_size(c->records, c->records->len + 1);
                        r = &g_array_index(c->records, WtRecord, c->records->len - 1);
                        *r = (WtRecord) { id, mask, cookie, g_strdup(path), g_strdup(new_path) };
                }
                n++;
        }
        c->n_records += n;
        c->n_signals++;
        c->max_batch = MAX(c->max_batch, n);
}

/* EventsPacked: the stream's EVENT frames in an ay (shared/stream_frame.h); a
 * frame that does not decode fails the test. */
static void collector_add_packed(WtCollector *c, GVariant *frames) {
        gsize size = 0;
        const guint8 *p = g_variant_get_fixed_array(frames, &size, 1);
        guint n = 0;

        c->max_packed_bytes = MAX(c->max_packed_bytes, size);
        while (size > 0) {
                StreamFrame f;
                int k = stream_frame_decode(p, size, &f);

                g_assert_cmpint(k, >, 0);
                if (f.type == STREAM_FRAME_EVENT) {
                        if (!c->count_only) {
                                WtRecord *r;

                                g_array_set_size(c->records, c->records->len + 1);
                                r = &g_array_index(c->records, WtRecord, c->records->len - 1);
                                *r = (WtRecord) { f.id,
                                                  f.mask,
                                                  f.cookie,
                                                  g_strndup(f.path, f.path_len),
                                                  g_strndup(f.new_path, f.new_path_len),
                                                  TRUE };
                        }
                        n++;
                }
                p += k;
                size -= (gsize) k;
        }
        c->n_records += n;
        c->n_signals++;
        c->n_packed++;
        c->max_batch = MAX(c->max_batch, n);
}

static void collector_add_overflow(WtCollector *c, GVariant *ids) {
        GVariantIter it;
        guint32 id;

        g_variant_iter_init(&it, ids);
        while (g_variant_iter_next(&it, "u", &id))
                g_array_append_val(c->overflow_ids, id);
        c->n_overflows++;
}

static void collector_add_removed(WtCollector *c, guint32 id, const char *reason) {
        g_ptr_array_add(c->removed, g_strdup_printf("%u %s", id, reason));
}

static void on_proxy_events(WatchdInotify *p, GVariant *events, gpointer data) {
        collector_add_events(data, events);
}

static void on_proxy_events_packed(WatchdInotify *p, GVariant *frames, gpointer data) {
        collector_add_packed(data, frames);
}

static void on_proxy_overflow(WatchdInotify *p, GVariant *ids, gpointer data) {
        collector_add_overflow(data, ids);
}

static void on_proxy_removed(WatchdInotify *p, guint id, const char *reason, gpointer data) {
        collector_add_removed(data, id, reason);
}

static void on_listener_signal(GDBusConnection *conn, const char *sender, const char *path, const char *iface,
                               const char *member, GVariant *params, gpointer data) {
        WtCollector *c = data;

        if (g_str_equal(member, "Events") && g_variant_is_of_type(params, G_VARIANT_TYPE("(a(uuuss))"))) {
                g_autoptr(GVariant) events = g_variant_get_child_value(params, 0);
                collector_add_events(c, events);
        } else if (g_str_equal(member, "EventsPacked") && g_variant_is_of_type(params, G_VARIANT_TYPE("(ay)"))) {
                g_autoptr(GVariant) frames = g_variant_get_child_value(params, 0);
                collector_add_packed(c, frames);
        } else if (g_str_equal(member, "Overflow") && g_variant_is_of_type(params, G_VARIANT_TYPE("(au)"))) {
                g_autoptr(GVariant) ids = g_variant_get_child_value(params, 0);
                collector_add_overflow(c, ids);
        } else if (g_str_equal(member, "WatchRemoved") && g_variant_is_of_type(params, G_VARIANT_TYPE("(us)"))) {
                guint32 id;
                const char *reason;

                g_variant_get(params, "(u&s)", &id, &reason);
                collector_add_removed(c, id, reason);
        } else
                g_error("Unexpected signal %s.%s%s from %s", iface, member, g_variant_get_type_string(params), sender);
}

static void collector_alloc(WtCollector *c) {
        *c = (WtCollector) {
                .records = g_array_new(FALSE, TRUE, sizeof(WtRecord)),
                .overflow_ids = g_array_new(FALSE, TRUE, sizeof(guint32)),
                .removed = g_ptr_array_new_with_free_func(g_free),
        };
        g_array_set_clear_func(c->records, record_clear);
}

void wt_collector_init(WtCollector *c, WatchdInotify *proxy) {
        collector_alloc(c);
        c->proxy = g_object_ref(proxy);
        c->handlers[0] = g_signal_connect(proxy, "events", G_CALLBACK(on_proxy_events), c);
        c->handlers[1] = g_signal_connect(proxy, "overflow", G_CALLBACK(on_proxy_overflow), c);
        c->handlers[2] = g_signal_connect(proxy, "watch-removed", G_CALLBACK(on_proxy_removed), c);
        c->handlers[3] = g_signal_connect(proxy, "events-packed", G_CALLBACK(on_proxy_events_packed), c);
}

void wt_collector_init_listener(WtCollector *c, GDBusConnection *conn) {
        g_autoptr(GVariant) r = NULL;
        g_autoptr(GError) error = NULL;

        collector_alloc(c);
        c->conn = g_object_ref(conn);
        c->subscription = g_dbus_connection_signal_subscribe(conn, NULL, WATCHD_INTERFACE, NULL, NULL, NULL,
                                                             G_DBUS_SIGNAL_FLAGS_NONE, on_listener_signal, c, NULL);
        /* GDBus sends AddMatch without awaiting its answer; the bus handles a
         * connection's messages in order, so after this round trip the rule holds. */
        r = g_dbus_connection_call_sync(conn, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "GetId", NULL, G_VARIANT_TYPE("(s)"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        g_assert_no_error(error);
}

void wt_collector_clear(WtCollector *c) {
        if (c->proxy) {
                for (size_t i = 0; i < G_N_ELEMENTS(c->handlers); i++)
                        g_signal_handler_disconnect(c->proxy, c->handlers[i]);
                g_clear_object(&c->proxy);
        }
        if (c->conn) {
                g_dbus_connection_signal_unsubscribe(c->conn, c->subscription);
                g_clear_object(&c->conn);
        }
        g_clear_pointer(&c->records, g_array_unref);
        g_clear_pointer(&c->overflow_ids, g_array_unref);
        g_clear_pointer(&c->removed, g_ptr_array_unref);
}

WtRecord *wt_collector_record(WtCollector *c, guint i) {
        g_assert_cmpuint(i, <, c->records->len);
        return &g_array_index(c->records, WtRecord, i);
}

int wt_collector_find(WtCollector *c, const char *path, guint32 mask) {
        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = &g_array_index(c->records, WtRecord, i);

                if (g_strcmp0(r->path, path) == 0 && (r->mask & mask) == mask)
                        return (int) i;
        }
        return -1;
}

gboolean wt_collector_has_removed(WtCollector *c, guint32 id, const char *reason) {
        g_autofree char *want = g_strdup_printf("%u %s", id, reason);

        for (guint i = 0; i < c->removed->len; i++)
                if (g_str_equal(c->removed->pdata[i], want))
                        return TRUE;
        return FALSE;
}

gboolean wt_collector_has_overflow_id(WtCollector *c, guint32 id) {
        for (guint i = 0; i < c->overflow_ids->len; i++)
                if (g_array_index(c->overflow_ids, guint32, i) == id)
                        return TRUE;
        return FALSE;
}

GHashTable *wt_collector_create_counts(WtCollector *c) {
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

        for (guint i = 0; i < c->records->len; i++) {
                WtRecord *r = &g_array_index(c->records, WtRecord, i);
                if (r->mask & IN_CREATE)
                        g_hash_table_insert(h, g_strdup(r->path),
                                            GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(h, r->path)) + 1));
        }
        return h;
}

void wt_collector_assert_created_once(WtCollector *c, GPtrArray *want) {
        g_autoptr(GHashTable) h = wt_collector_create_counts(c);

        for (guint i = 0; i < want->len; i++) {
                const char *p = g_ptr_array_index(want, i);
                guint n = GPOINTER_TO_UINT(g_hash_table_lookup(h, p));

                if (n != 1)
                        g_error("'%s' reported created %u times (want 1)", p, n);
        }
        g_assert_cmpuint(g_hash_table_size(h), ==, want->len);
}

typedef struct Want {
        WtCollector *c;
        const char *path, *reason;
        guint32 mask, id;
        guint64 n;
} Want;

static gboolean record_met(gpointer data) {
        Want *w = data;
        return wt_collector_find(w->c, w->path, w->mask) >= 0;
}

WtRecord *wt_await_record(WtCollector *c, const char *path, guint32 mask, int timeout_ms) {
        Want w = { .c = c, .path = path, .mask = mask };

        if (!wt_await(record_met, &w, timeout_ms))
                g_error("No record for '%s' with mask 0x%x within %d ms (%u records)", path, mask, timeout_ms,
                        c->records->len);
        return wt_collector_record(c, (guint) wt_collector_find(c, path, mask));
}

static gboolean records_met(gpointer data) {
        Want *w = data;
        return w->c->n_records >= w->n;
}

gboolean wt_await_records(WtCollector *c, guint64 n, int timeout_ms) {
        Want w = { .c = c, .n = n };
        return wt_await(records_met, &w, timeout_ms);
}

static gboolean overflows_met(gpointer data) {
        Want *w = data;
        return w->c->n_overflows >= w->n;
}

gboolean wt_await_overflows(WtCollector *c, guint n, int timeout_ms) {
        Want w = { .c = c, .n = n };
        return wt_await(overflows_met, &w, timeout_ms);
}

static gboolean removed_met(gpointer data) {
        Want *w = data;
        return wt_collector_has_removed(w->c, w->id, w->reason);
}

gboolean wt_await_removed(WtCollector *c, guint32 id, const char *reason, int timeout_ms) {
        Want w = { .c = c, .id = id, .reason = reason };
        return wt_await(removed_met, &w, timeout_ms);
}

/* ---------------------------------------------------------------- clients */

WtClient *wt_client_new(WtBus *bus) {
        WtClient *c = g_new0(WtClient, 1);

        c->conn = wt_connect(bus);
        c->proxy = wt_proxy(c->conn);
        wt_collector_init(&c->events, c->proxy);
        return c;
}

void wt_client_free(WtClient *c) {
        if (!c)
                return;
        wt_collector_clear(&c->events);
        g_object_unref(c->proxy);
        (void) g_dbus_connection_close_sync(c->conn, NULL, NULL);
        g_object_unref(c->conn);
        g_free(c);
}

guint32 wt_add_watch(WatchdInotify *p, const char *path, guint32 mask, guint32 flags, GError **error) {
        g_autoptr(GError) e = NULL;
        guint id = 0;

        if (!watchd_inotify_call_add_watch_sync(p, path, mask, flags, &id, NULL, &e)) {
                if (!error)
                        g_error("AddWatch('%.80s', 0x%x, 0x%x): %s", path, mask, flags, e->message);
                g_propagate_error(error, g_steal_pointer(&e));
                return 0;
        }
        g_assert_cmpuint(id, >, 0);
        return id;
}

void wt_add_watch_fails(WatchdInotify *p, const char *path, guint32 mask, guint32 flags, const char *want) {
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;

        g_assert_cmpuint(wt_add_watch(p, path, mask, flags, &error), ==, 0);
        g_assert_nonnull(error);
        name = g_dbus_error_get_remote_error(error);
        if (g_strcmp0(name, want) != 0)
                g_error("AddWatch('%.60s', 0x%x, 0x%x): want %s, got %s (%s)", path, mask, flags, want, name,
                        error->message);
}

void wt_assert_responsive(WatchdInotify *other) {
        gint64 t0 = g_get_monotonic_time();

        (void) wt_stat(other, "clients");
        g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
}

/* ---------------------------------------------------------------- the fixture */

void wt_fixture_setup(WtFixture *f, gconstpointer config) {
        f->bus = wt_bus_start();
        f->daemon = wt_daemon_start(f->bus, config);
        f->conn = wt_connect(f->bus);
        f->conn2 = wt_connect(f->bus);
        f->proxy = wt_proxy(f->conn);
        f->proxy2 = wt_proxy(f->conn2);
        wt_collector_init(&f->a, f->proxy);
        wt_collector_init(&f->b, f->proxy2);
        f->dir = g_build_filename(f->bus->dir, "files", NULL);
        g_assert_cmpint(g_mkdir(f->dir, 0755), ==, 0);
}

void wt_fixture_teardown(WtFixture *f, gconstpointer config) {
        wt_collector_clear(&f->a);
        wt_collector_clear(&f->b);
        g_clear_object(&f->proxy);
        g_clear_object(&f->proxy2);
        (void) g_dbus_connection_close_sync(f->conn, NULL, NULL);
        (void) g_dbus_connection_close_sync(f->conn2, NULL, NULL);
        g_clear_object(&f->conn);
        g_clear_object(&f->conn2);
        /* A clean SIGTERM shutdown, every time, whatever the test did. */
        if (f->daemon)
                g_assert_cmpint(wt_daemon_stop(g_steal_pointer(&f->daemon)), ==, 0);
        wt_bus_stop(f->bus);
        g_free(f->dir);
        if (f->fast) {
                wt_remove_tree(f->fast);
                g_assert_false(g_file_test(f->fast, G_FILE_TEST_EXISTS));
                g_free(f->fast);
        }
}

const char *wt_fixture_fast_dir(WtFixture *f) {
        if (!f->fast) {
                f->fast = wt_make_fast_dir();
                g_assert_cmpint(g_chmod(f->fast, 0755), ==, 0);
        }
        return f->fast;
}

char *wt_fixture_path(WtFixture *f, const char *name) {
        return g_build_filename(f->dir, name, NULL);
}

void wt_fixture_mkdir_p(WtFixture *f, const char *rel) {
        g_autofree char *p = wt_fixture_path(f, rel);
        g_assert_cmpint(g_mkdir_with_parents(p, 0755), ==, 0);
}

/* ---------------------------------------------------------------- files and processes */

void wt_touch(const char *path) {
        int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Cannot create '%s': %s", path, g_strerror(errno));
        g_assert_cmpint(close(fd), ==, 0);
}

pid_t wt_process_pid(GSubprocess *p) {
        const char *id = g_subprocess_get_identifier(p);

        g_assert_nonnull(id);
        return (pid_t) g_ascii_strtoll(id, NULL, 10);
}

guint64 wt_proc_status(const char *pid, const char *key) {
        g_autofree char *path = g_strdup_printf("/proc/%s/status", pid), *text = NULL;
        g_autofree char *want = g_strdup_printf("\n%s:\t", key);
        g_autoptr(GError) error = NULL;
        const char *p;

        g_assert_true(g_file_get_contents(path, &text, NULL, &error));
        p = strstr(text, want);
        if (!p)
                g_error("%s has no %s", path, key);
        return g_ascii_strtoull(p + strlen(want), NULL, g_str_has_prefix(key, "Cap") ? 16 : 10);
}

pid_t wt_bindfs_pid(const char *mnt) {
        g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
        const char *e;

        g_assert_nonnull(proc);
        while ((e = g_dir_read_name(proc))) {
                g_autofree char *path = g_build_filename("/proc", e, "cmdline", NULL), *cmd = NULL;
                gsize len;
                gboolean is_bindfs = FALSE, has_mnt = FALSE;

                if (!g_ascii_isdigit(e[0]) || !g_file_get_contents(path, &cmd, &len, NULL))
                        continue;
                for (gsize off = 0; off < len; off += strlen(cmd + off) + 1) {
                        if (g_str_has_suffix(cmd + off, "bindfs"))
                                is_bindfs = TRUE;
                        if (g_str_equal(cmd + off, mnt))
                                has_mnt = TRUE;
                }
                if (is_bindfs && has_mnt)
                        return (pid_t) g_ascii_strtoll(e, NULL, 10);
        }
        return 0;
}

void wt_child_die_with_parent(gpointer user_data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Whether a user of no group of path's owners can reach path: every
 * directory above it searchable by others, and path itself with the mode
 * bits in want for others. (Groups and ACLs are not looked at: a path they
 * would open counts as out of reach, which only costs a copy.) */
static gboolean others_reach(const char *path, mode_t want) {
        g_autofree char *real = realpath(path, NULL);
        struct stat st;

        if (!real || stat(real, &st) < 0 || (st.st_mode & want) != want)
                return FALSE;
        for (char *p = g_path_get_dirname(real);;) {
                gboolean ok = stat(p, &st) == 0 && (st.st_mode & S_IXOTH);
                gboolean top = strcmp(p, "/") == 0;
                char *up = g_path_get_dirname(p);

                g_free(p);
                p = up;
                if (!ok || top) {
                        g_free(p);
                        return ok;
                }
        }
}

static void copy_file(const char *from, const char *to) {
        g_autoptr(GFile) src = g_file_new_for_path(from), dst = g_file_new_for_path(to);
        g_autoptr(GError) error = NULL;

        if (!g_file_copy(src, dst, G_FILE_COPY_NONE, NULL, NULL, NULL, &error))
                g_error("Cannot copy '%s' to '%s': %s", from, to, error->message);
        g_assert_cmpint(g_chmod(to, 0755), ==, 0);
}

/* Copies into dir each shared library that program loads from where
 * others cannot reach, as ldd(1) lists them (without running program's
 * code). Returns how many. */
static guint copy_unreachable_libraries(const char *program, const char *dir) {
        g_autoptr(GSubprocess) p = NULL;
        g_autofree char *out = NULL;
        g_auto(GStrv) lines = NULL;
        guint n = 0;

        p = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL, "ldd", program,
                             NULL);
        if (!p || !g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, NULL) || !out)
                return 0; /* no ldd, or not a dynamic program: then nothing is loaded from elsewhere */
        lines = g_strsplit(out, "\n", -1);
        for (char **line = lines; *line; line++) {
                /* "\tlibfoo.so.1 => /path/to/libfoo.so.1 (0x...)" */
                g_auto(GStrv) words = g_strsplit_set(g_strstrip(*line), " ", -1);
                g_autofree char *to = NULL;

                if (g_strv_length(words) < 3 || !g_str_equal(words[1], "=>") || words[2][0] != '/' ||
                    others_reach(words[2], S_IROTH))
                        continue;
                to = g_build_filename(dir, words[0], NULL);
                copy_file(words[2], to);
                n++;
        }
        return n;
}

char *wt_launcher_as_nobody(GSubprocessLauncher *l, WtBus *bus, const char *program, GError **error) {
        g_autofree char *dir = g_build_filename(bus->dir, "nobody-XXXXXX", NULL);
        g_autofree char *base = g_path_get_basename(program);
        char *copy;

        if (!others_reach(bus->dir, S_IXOTH)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                            "nobody cannot enter the test's directory '%s' (is TMPDIR in a directory only its owner "
                            "may enter?)",
                            bus->dir);
                return NULL;
        }
        g_assert_nonnull(g_mkdtemp(dir));
        g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
        copy = g_build_filename(dir, base, NULL);
        copy_file(program, copy);
        if (copy_unreachable_libraries(program, dir) > 0)
                g_subprocess_launcher_setenv(l, "LD_LIBRARY_PATH", dir, TRUE);
        g_subprocess_launcher_set_child_setup(l, wt_child_become_nobody, NULL, NULL);
        return copy;
}
