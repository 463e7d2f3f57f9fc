/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-names - file names that are not UTF-8, against a real watchd
 *
 * Linux names are bytes; a D-Bus string is UTF-8 (and sd-bus refuses the
 * noncharacters as well). A path that cannot go as it is goes escaped, with
 * WATCHD_PATH_ESCAPED in the record's mask (in the flags of a ListWatches
 * entry), and the exact bytes come back with path_unescape(). These tests
 * check that every such event reaches its subscriber and costs no other
 * record, that ListWatches answers whatever the watched paths are, that
 * AddWatch takes an escaped path, and that a burst of the longest such
 * records is cut into signals the bus accepts.
 *
 * Each test starts its own bus and daemon. Events are awaited, never slept
 * for.
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path_escape.h"
#include "watchd-test.h"

#define E_INVALID_ARGS "org.freedesktop.DBus.Error.InvalidArgs"

#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- a client */

typedef struct Rec {
        guint32 id, mask, cookie;
        char *path, *new_path; /* bytes: unescaped if the record said so */
        char *wire_path;       /* as it came */
} Rec;

typedef struct Client {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        guint filter;
        GArray *recs;         /* Rec, in arrival order */
        GArray *overflow_ids; /* guint32, all Overflow signals together */
        guint n_signals;

        /* Written by the filter, in GDBus's worker thread. */
        gint hold_pings; /* keep Pings unanswered, in held */
        gint n_pings;
        gint largest_signal; /* bytes of the largest Events signal */
        GAsyncQueue *held;   /* GDBusMessage* Pings not answered yet */
} Client;

static void rec_clear(gpointer p) {
        Rec *r = p;

        g_free(r->path);
        g_free(r->new_path);
        g_free(r->wire_path);
}

static char *unescape_or_die(const char *s) {
        char *out = NULL;

        if (path_unescape(s, &out) < 0)
                g_error("watchd sent a path marked escaped that does not unescape: \"%s\"", s);
        return out;
}

static void on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        Client *c = data;
        GVariantIter it;
        const char *path, *new_path;
        guint32 id, mask, cookie;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                bool escaped = mask & WATCHD_PATH_ESCAPED;
                Rec *r;

                g_array_set_size(c->recs, c->recs->len + 1);
                r = &g_array_index(c->recs, Rec, c->recs->len - 1);
                *r = (Rec) {
                        .id = id,
                        .mask = mask,
                        .cookie = cookie,
                        .wire_path = g_strdup(path),
                        .path = escaped ? unescape_or_die(path) : g_strdup(path),
                        .new_path = escaped ? unescape_or_die(new_path) : g_strdup(new_path),
                };
        }
        c->n_signals++;
}

static void on_overflow(WatchdInotify *p, GVariant *ids, gpointer data) {
        Client *c = data;
        GVariantIter it;
        guint32 id;

        g_variant_iter_init(&it, ids);
        while (g_variant_iter_next(&it, "u", &id))
                g_array_append_val(c->overflow_ids, id);
}

static GDBusMessage *filter(GDBusConnection *conn, GDBusMessage *msg, gboolean incoming, gpointer data) {
        Client *c = data;
        GDBusMessageType type = g_dbus_message_get_message_type(msg);

        if (!incoming)
                return msg;
        if (type == G_DBUS_MESSAGE_TYPE_METHOD_CALL &&
            g_strcmp0(g_dbus_message_get_interface(msg), "org.freedesktop.DBus.Peer") == 0) {
                g_atomic_int_inc(&c->n_pings);
                g_main_context_wakeup(NULL);
                if (g_atomic_int_get(&c->hold_pings)) {
                        g_async_queue_push(c->held, msg); /* answered by release_pings() */
                        return NULL;
                }
        }
        if (type == G_DBUS_MESSAGE_TYPE_SIGNAL && g_strcmp0(g_dbus_message_get_member(msg), "Events") == 0) {
                gsize size = 0;
                g_autofree guchar *blob = g_dbus_message_to_blob(msg, &size, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);

                if ((gint) size > g_atomic_int_get(&c->largest_signal))
                        g_atomic_int_set(&c->largest_signal, (gint) size);
        }
        return msg;
}

static void client_init(Client *c, WtBus *bus) {
        *c = (Client) {
                .recs = g_array_new(FALSE, TRUE, sizeof(Rec)),
                .overflow_ids = g_array_new(FALSE, TRUE, sizeof(guint32)),
                .held = g_async_queue_new_full(g_object_unref),
        };
        g_array_set_clear_func(c->recs, rec_clear);
        c->conn = wt_connect(bus);
        c->filter = g_dbus_connection_add_filter(c->conn, filter, c, NULL);
        c->proxy = wt_proxy(c->conn);
        g_signal_connect(c->proxy, "events", G_CALLBACK(on_events), c);
        g_signal_connect(c->proxy, "overflow", G_CALLBACK(on_overflow), c);
}

/* Answers the held Pings, and holds no more. */
static void release_pings(Client *c) {
        GDBusMessage *ping;

        g_atomic_int_set(&c->hold_pings, 0);
        while ((ping = g_async_queue_try_pop(c->held))) {
                g_autoptr(GDBusMessage) reply = g_dbus_message_new_method_reply(ping);

                g_assert_true(g_dbus_connection_send_message(c->conn, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL));
                g_object_unref(ping);
        }
}

static void client_done(Client *c) {
        release_pings(c);
        g_object_unref(c->proxy);
        g_dbus_connection_remove_filter(c->conn, c->filter);
        g_dbus_connection_close_sync(c->conn, NULL, NULL);
        g_object_unref(c->conn);
        g_array_unref(c->recs);
        g_array_unref(c->overflow_ids);
        g_async_queue_unref(c->held);
}

static Rec *rec_at(Client *c, guint i) {
        return &g_array_index(c->recs, Rec, i);
}

typedef struct Count {
        Client *c;
        guint n;
} Count;

static gboolean count_met(gpointer data) {
        Count *w = data;
        return w->c->recs->len >= w->n || w->c->overflow_ids->len > 0;
}

/* Awaits n records in all; fails on timeout or on any Overflow. */
static void await_records(Client *c, guint n, int timeout_ms) {
        Count w = { c, n };

        if (!wt_await(count_met, &w, timeout_ms) || c->overflow_ids->len > 0)
                g_error("Got %u records and %u ids in Overflow, wanted %u records within %d ms", c->recs->len,
                        c->overflow_ids->len, n, timeout_ms);
}

static gboolean pings_met(gpointer data) {
        Count *w = data;
        return (guint) g_atomic_int_get(&w->c->n_pings) >= w->n;
}

static guint32 add_watch(Client *c, const char *path, guint32 mask, guint32 flags) {
        g_autoptr(GError) error = NULL;
        guint id = 0;

        if (!watchd_inotify_call_add_watch_sync(c->proxy, path, mask, flags, &id, NULL, &error))
                g_error("AddWatch \"%s\": %s", path, error->message);
        return id;
}

/* AddWatchFd on the directory at path; returns the id or sets *error. */
static guint32 try_add_watch_fd(Client *c, const char *path, guint32 mask, guint32 flags, GError **error) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) reply = NULL;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        guint32 id = 0;

        if (fd < 0)
                g_error("Failed to open \"%s\": %s", path, g_strerror(errno));
        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        close(fd);
        reply = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(c->proxy), "AddWatchFd",
                                                         g_variant_new("(huu)", 0, mask, flags), G_DBUS_CALL_FLAGS_NONE,
                                                         TIMEOUT_MS, fds, NULL, NULL, error);
        if (reply)
                g_variant_get(reply, "(u)", &id);
        return id;
}

static guint32 add_watch_fd(Client *c, const char *path, guint32 mask, guint32 flags) {
        g_autoptr(GError) error = NULL;
        guint32 id = try_add_watch_fd(c, path, mask, flags, &error);

        if (!id)
                g_error("AddWatchFd \"%s\": %s", path, error->message);
        return id;
}

typedef struct Listed {
        guint32 id, flags;
        char *path; /* bytes */
} Listed;

/* ListWatches, with each path in bytes; fails the test if the call fails. */
static GArray *list_watches(Client *c) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        GArray *out = g_array_new(FALSE, TRUE, sizeof(Listed));
        GVariantIter it;
        const char *path;
        guint32 id, mask, flags;

        if (!watchd_inotify_call_list_watches_sync(c->proxy, &list, NULL, &error))
                g_error("ListWatches: %s", error->message);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(u&suu)", &id, &path, &mask, &flags)) {
                Listed l = {
                        .id = id,
                        .flags = flags,
                        .path = flags & WATCHD_PATH_ESCAPED ? unescape_or_die(path) : g_strdup(path),
                };

                g_array_append_val(out, l);
        }
        return out;
}

/* The path ListWatches gives for id, in bytes, and its flags. */
static char *listed_path(Client *c, guint32 id, guint32 *ret_flags) {
        g_autoptr(GArray) list = list_watches(c);
        char *path = NULL;

        for (guint i = 0; i < list->len; i++) {
                Listed *l = &g_array_index(list, Listed, i);

                if (l->id == id) {
                        path = g_steal_pointer(&l->path);
                        *ret_flags = l->flags;
                }
                g_free(l->path);
        }
        if (!path)
                g_error("ListWatches has no subscription %u", id);
        return path;
}

/* ---------------------------------------------------------------- fixture */

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        Client c;
        char *dir; /* files for the test */
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer config) {
        f->bus = wt_bus_start();
        f->daemon = wt_daemon_start(f->bus, config);
        client_init(&f->c, f->bus);
        f->dir = wt_make_fast_dir();
}

static void fixture_teardown(Fixture *f, gconstpointer config) {
        client_done(&f->c);
        /* A clean SIGTERM shutdown: the daemon lived through it all. */
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        wt_bus_stop(f->bus);
        wt_remove_tree(f->dir);
        g_free(f->dir);
}

static void create(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create \"%s\": %s", path, g_strerror(errno));
        g_assert_cmpint(close(fd), ==, 0);
}

static void rename_or_die(const char *from, const char *to) {
        if (rename(from, to) < 0)
                g_error("Failed to rename \"%s\": %s", from, g_strerror(errno));
}

/* ---------------------------------------------------------------- tests */

/* Names that sd-bus refuses, and names that only look odd. */
static const struct {
        const char *name;
        bool escaped;
} odd_names[] = {
        { "x\xff", true },        /* not UTF-8 */
        { "caf\xe9", true },      /* Latin-1 */
        { "\xef\xbf\xbe", true }, /* U+FFFE: UTF-8, but a noncharacter sd-bus refuses */
        { "back\\slash", false }, /* goes as it is */
        { "x\\xff", false },      /* looks escaped, is not */
        { "new\nline", false },   { "\xc3\xa9t\xc3\xa9", false },
};

#define BURST 100u

/*
 * A burst of creations with the odd names in the middle: every record
 * arrives, in order, each odd one escaped and its bytes exact, and nothing
 * is lost. Before the escape, the first name sd-bus refused spoiled the
 * signal being built: that record and every other in its batch vanished,
 * with no Overflow.
 */
static void test_burst(Fixture *f, gconstpointer data) {
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        guint32 id = add_watch(&f->c, f->dir, IN_CREATE, 0);

        for (guint i = 0; i < BURST; i++) {
                guint k = i - BURST / 2;

                g_ptr_array_add(names,
                                k < G_N_ELEMENTS(odd_names) ? g_strdup(odd_names[k].name) : g_strdup_printf("f%03u", i));
        }
        for (guint i = 0; i < BURST; i++) {
                g_autofree char *p = g_build_filename(f->dir, names->pdata[i], NULL);
                create(p);
        }
        await_records(&f->c, BURST, TIMEOUT_MS);

        g_assert_cmpuint(f->c.recs->len, ==, BURST);
        for (guint i = 0; i < BURST; i++) {
                g_autofree char *want = g_build_filename(f->dir, names->pdata[i], NULL);
                Rec *r = rec_at(&f->c, i);
                guint k = i - BURST / 2;
                bool escaped = k < G_N_ELEMENTS(odd_names) && odd_names[k].escaped;

                g_assert_cmpuint(r->id, ==, id);
                g_assert_cmpuint(r->mask & ~WATCHD_PATH_ESCAPED, ==, IN_CREATE);
                g_assert_cmpstr(r->path, ==, want);
                g_assert_cmpstr(r->new_path, ==, "");
                g_assert_cmpint(!!(r->mask & WATCHD_PATH_ESCAPED), ==, escaped);
                /* A name that goes as it is goes byte for byte. */
                if (!escaped)
                        g_assert_cmpstr(r->wire_path, ==, want);
        }
        g_assert_cmpuint(wt_stat(f->c.proxy, "events_dropped"), ==, 0);
        g_assert_cmpuint(wt_stat(f->c.proxy, "overflows"), ==, 0);
}

typedef struct Move {
        const char *from, *to;
        bool escaped;
} Move;

/* A rename to and from a name that is not UTF-8 is one paired record; the
 * one flag covers both paths. */
static void test_rename(Fixture *f, gconstpointer data) {
        static const Move moves[] = {
                { "a", "x\xff", true },      { "x\xff", "b", true },          { "b", "c\\d", false },
                { "c\\d", "caf\xe9", true }, { "caf\xe9", "\xff\xfe", true },
        };
        g_autofree char *first = g_build_filename(f->dir, moves[0].from, NULL);

        add_watch(&f->c, f->dir, IN_MOVE, 0);
        create(first);
        for (guint i = 0; i < G_N_ELEMENTS(moves); i++) {
                g_autofree char *from = g_build_filename(f->dir, moves[i].from, NULL);
                g_autofree char *to = g_build_filename(f->dir, moves[i].to, NULL);

                rename_or_die(from, to);
        }
        await_records(&f->c, G_N_ELEMENTS(moves), TIMEOUT_MS);

        g_assert_cmpuint(f->c.recs->len, ==, G_N_ELEMENTS(moves));
        for (guint i = 0; i < G_N_ELEMENTS(moves); i++) {
                g_autofree char *from = g_build_filename(f->dir, moves[i].from, NULL);
                g_autofree char *to = g_build_filename(f->dir, moves[i].to, NULL);
                Rec *r = rec_at(&f->c, i);

                g_assert_cmpuint(r->mask & ~WATCHD_PATH_ESCAPED, ==, IN_MOVED_FROM | IN_MOVED_TO);
                g_assert_cmpuint(r->cookie, !=, 0);
                g_assert_cmpstr(r->path, ==, from);
                g_assert_cmpstr(r->new_path, ==, to);
                g_assert_cmpint(!!(r->mask & WATCHD_PATH_ESCAPED), ==, moves[i].escaped);
        }
}

/* AddWatchFd on a directory whose name is not UTF-8: ListWatches answers,
 * with the path escaped and flagged, and its events arrive. */
static void test_list_fd(Fixture *f, gconstpointer data) {
        g_autofree char *d = g_build_filename(f->dir, "d\xff", NULL);
        g_autofree char *plain = g_build_filename(f->dir, "plain", NULL);
        g_autofree char *file = g_build_filename(d, "g\xfe", NULL);
        g_autofree char *listed = NULL, *listed_plain = NULL;
        guint32 id, id_plain, flags = 0, flags_plain = 0;

        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(plain, 0755), ==, 0);
        id = add_watch_fd(&f->c, d, IN_CREATE, 0);
        id_plain = add_watch(&f->c, plain, IN_CREATE, 0);

        listed = listed_path(&f->c, id, &flags);
        g_assert_cmpstr(listed, ==, d);
        g_assert_cmpuint(flags, ==, WATCHD_PATH_ESCAPED);
        /* The others in the same answer are untouched. */
        listed_plain = listed_path(&f->c, id_plain, &flags_plain);
        g_assert_cmpstr(listed_plain, ==, plain);
        g_assert_cmpuint(flags_plain, ==, 0);

        create(file);
        await_records(&f->c, 1, TIMEOUT_MS);
        g_assert_cmpstr(rec_at(&f->c, 0)->path, ==, file);
        g_assert_cmpuint(rec_at(&f->c, 0)->mask, ==, IN_CREATE | WATCHD_PATH_ESCAPED);
}

/*
 * Paths that become non-UTF-8 after the watch was added: a RECURSIVE root
 * renamed (its parent watched too, so the daemon follows it) and a
 * directory renamed above a plain subscription. ListWatches answers with
 * the new paths, escaped, and events come with them.
 */
static void test_list_renamed(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL);
        g_autofree char *tree2 = g_build_filename(f->dir, "tree\xff", NULL);
        g_autofree char *a = g_build_filename(f->dir, "a", NULL);
        g_autofree char *ab = g_build_filename(a, "b", NULL);
        g_autofree char *a2 = g_build_filename(f->dir, "a\xc0", NULL);
        g_autofree char *a2b = g_build_filename(a2, "b", NULL);
        g_autofree char *in_tree = g_build_filename(tree2, "new", NULL);
        g_autofree char *in_b = g_build_filename(a2b, "new", NULL);
        g_autofree char *p_tree = NULL, *p_b = NULL;
        guint32 id_tree, id_b, flags = 0;

        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(ab, 0755), ==, 0);
        add_watch(&f->c, f->dir, IN_MOVE, 0);
        id_tree = add_watch(&f->c, tree, IN_CREATE, 0x1 /* RECURSIVE */);
        id_b = add_watch(&f->c, ab, IN_CREATE, 0);

        rename_or_die(tree, tree2);
        rename_or_die(a, a2);
        await_records(&f->c, 2, TIMEOUT_MS);

        p_tree = listed_path(&f->c, id_tree, &flags);
        g_assert_cmpstr(p_tree, ==, tree2);
        g_assert_cmpuint(flags, ==, 0x1 | WATCHD_PATH_ESCAPED);
        p_b = listed_path(&f->c, id_b, &flags);
        g_assert_cmpstr(p_b, ==, a2b);
        g_assert_cmpuint(flags, ==, WATCHD_PATH_ESCAPED);

        create(in_tree);
        create(in_b);
        await_records(&f->c, 4, TIMEOUT_MS);
        g_assert_cmpstr(rec_at(&f->c, 2)->path, ==, in_tree);
        g_assert_cmpuint(rec_at(&f->c, 2)->id, ==, id_tree);
        g_assert_cmpstr(rec_at(&f->c, 3)->path, ==, in_b);
        g_assert_cmpuint(rec_at(&f->c, 3)->id, ==, id_b);
}

/* AddWatch with PATH_ESCAPED: a client that holds only bytes can watch
 * them; its flag is not kept as a request flag; a bad escape is refused. */
static void test_add_escaped(Fixture *f, gconstpointer data) {
        g_autofree char *d = g_build_filename(f->dir, "d\xff\xef\xbf\xbe", NULL);
        g_autofree char *file = g_build_filename(d, "f", NULL);
        g_autofree char *escaped = path_escape(d);
        g_autofree char *listed = NULL;
        g_autofree char *plain_escaped = g_strdup_printf("%s/plain\\\\name", f->dir);
        g_autofree char *plain = g_strdup_printf("%s/plain\\name", f->dir);
        static const char *const bad[] = { "\\", "\\q", "\\x0", "\\x00", "\\xzz", "\\u00ff" };
        guint32 id, flags = 0;

        g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(plain, 0755), ==, 0);
        id = add_watch(&f->c, escaped, IN_CREATE, WATCHD_PATH_ESCAPED);
        listed = listed_path(&f->c, id, &flags);
        g_assert_cmpstr(listed, ==, d);
        g_assert_cmpuint(flags, ==, WATCHD_PATH_ESCAPED);
        create(file);
        await_records(&f->c, 1, TIMEOUT_MS);
        g_assert_cmpstr(rec_at(&f->c, 0)->path, ==, file);

        /* An escaped path that needed no escape is the same path. */
        id = add_watch(&f->c, plain_escaped, IN_CREATE, WATCHD_PATH_ESCAPED);
        g_clear_pointer(&listed, g_free);
        listed = listed_path(&f->c, id, &flags);
        g_assert_cmpstr(listed, ==, plain);
        g_assert_cmpuint(flags, ==, 0);

        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *p = g_strdup_printf("%s/x%s", f->dir, bad[i]);
                g_autoptr(GError) error = NULL;
                g_autofree char *remote = NULL;
                guint bad_id;

                g_assert_false(watchd_inotify_call_add_watch_sync(f->c.proxy, p, IN_CREATE, WATCHD_PATH_ESCAPED,
                                                                  &bad_id, NULL, &error));
                remote = g_dbus_error_get_remote_error(error);
                g_test_message("\"%s\": %s", p, error->message);
                g_assert_cmpstr(remote, ==, E_INVALID_ARGS);
        }
        /* Relative once unescaped is still relative. */
        {
                g_autoptr(GError) error = NULL;
                guint bad_id;

                g_assert_false(watchd_inotify_call_add_watch_sync(f->c.proxy, "x\\xff", IN_CREATE, WATCHD_PATH_ESCAPED,
                                                                  &bad_id, NULL, &error));
                g_assert_true(g_dbus_error_is_remote_error(error));
        }
        /* AddWatchFd has no path to escape. */
        {
                g_autoptr(GError) error = NULL;
                g_autofree char *remote = NULL;

                g_assert_cmpuint(try_add_watch_fd(&f->c, f->dir, IN_CREATE, WATCHD_PATH_ESCAPED, &error), ==, 0);
                remote = g_dbus_error_get_remote_error(error);
                g_assert_cmpstr(remote, ==, E_INVALID_ARGS);
        }
}

/* The error (not the silence) a client gets for an odd path. */
static char *add_watch_error(Client *c, const char *path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL;
        g_autofree char *remote = NULL;

        /* Well below sd-bus's 25 s: an answer that is not coming fails here. */
        reply = g_dbus_proxy_call_sync(G_DBUS_PROXY(c->proxy), "AddWatch", g_variant_new("(suu)", path, IN_CREATE, 0),
                                       G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
        g_assert_null(reply);
        remote = g_dbus_error_get_remote_error(error);
        g_test_message("%s: %s", remote, error->message);
        g_assert_cmpstr(remote, ==, E_INVALID_ARGS);
        g_dbus_error_strip_remote_error(error);
        return g_strdup(error->message);
}

/*
 * A path with a noncharacter is UTF-8 to GLib and to the bus, but sd-bus
 * cannot read it: the answer says how to send it. And an error message that
 * quotes a long path does not cut a character in two: before, such a
 * message could not be sent, and the caller got no answer at all.
 */
static void test_errors(Fixture *f, gconstpointer data) {
        g_autofree char *nonchar = g_build_filename(f->dir, "\xef\xbf\xbe", NULL);
        g_autoptr(GString) relative = g_string_new("a");
        g_autofree char *m1 = NULL, *m2 = NULL;

        m1 = add_watch_error(&f->c, nonchar);
        g_assert_nonnull(strstr(m1, "PATH_ESCAPED"));

        for (guint i = 0; i < 150; i++)
                g_string_append(relative, "\xc3\xa9");
        m2 = add_watch_error(&f->c, relative->str);
        g_assert_nonnull(strstr(m2, "is not absolute"));
        g_assert_true(g_utf8_validate(m2, -1, NULL));
}

/*
 * The longest records there are, in one flush: paired renames of 255-byte
 * names that are not UTF-8, in a directory nearly PATH_MAX deep, each path
 * four times longer escaped (about 30 KB a record). The client holds a
 * Ping, so watchd keeps the records queued for it (all of them, or until
 * batch_max_events are queued) and sends them in one flush: as one signal
 * that would be about 40 MB, over the bus's max_message_size (32 MiB here,
 * as on the system bus by default), and the bus would cut watchd off.
 * They must come in signals the bus accepts, all of them, exact.
 */
#define LONG_BATCH      1280u
#define LONG_WARMUP     20u
#define LONG_CONFIG     "[events]\nbatch_max_events = 1280\n"
#define LONG_MAX_SIGNAL (1024 * 1024 + 64 * 1024) /* watchd's 1 MiB cut, a record more, headers */

static char *long_name(char tag, guint i) {
        char *s = g_malloc(256);

        memset(s, 0xff, 250);
        snprintf(s + 250, 6, "%c%04u", tag, i);
        return s;
}

static void long_renames(const char *dir, guint from, guint to) {
        for (guint i = from; i < to; i++) {
                g_autofree char *a = long_name('a', i), *b = long_name('b', i);
                g_autofree char *pa = g_build_filename(dir, a, NULL), *pb = g_build_filename(dir, b, NULL);

                rename_or_die(pa, pb);
        }
}

static gboolean ping_held(gpointer data) {
        return g_async_queue_length(((Client *) data)->held) > 0;
}

static void test_long_batch(Fixture *f, gconstpointer data) {
        g_autoptr(GString) deep = g_string_new(f->dir);
        g_autofree char *component = g_malloc0(251);
        const guint total = LONG_BATCH + 2 * LONG_WARMUP;
        Count w = { &f->c, 1 };

        /* A directory as deep as PATH_MAX allows, with room for a name. */
        memset(component, 0xfe, 250);
        while (deep->len + 1 + 250 + 1 + 255 < PATH_MAX - 1) {
                g_string_append_c(deep, '/');
                g_string_append(deep, component);
                g_assert_cmpint(g_mkdir(deep->str, 0755), ==, 0);
        }
        g_test_message("directory %zu bytes deep", deep->len);
        for (guint i = 0; i < total; i++) {
                g_autofree char *name = long_name('a', i);
                g_autofree char *p = g_build_filename(deep->str, name, NULL);
                create(p);
        }
        add_watch_fd(&f->c, deep->str, IN_MOVE, 0);

        /* Warm up: the client answers a Ping, so watchd will hold records for the next one. */
        long_renames(deep->str, 0, LONG_WARMUP);
        await_records(&f->c, LONG_WARMUP, TIMEOUT_MS);
        g_assert_true(wt_await(pings_met, &w, TIMEOUT_MS));
        /* Then a Ping is held: what follows waits for it. */
        g_atomic_int_set(&f->c.hold_pings, 1);
        long_renames(deep->str, LONG_WARMUP, 2 * LONG_WARMUP);
        g_assert_true(wt_await(ping_held, &f->c, TIMEOUT_MS));

        long_renames(deep->str, 2 * LONG_WARMUP, total);
        /* Every rename read (two events each): what is not sent yet is queued. */
        if (!wt_await_stat(f->c.proxy, "events_read", 2 * total, 60000))
                g_error("watchd read %" G_GUINT64_FORMAT " events of %u", wt_stat(f->c.proxy, "events_read"), 2 * total);
        release_pings(&f->c);
        await_records(&f->c, total, 60000);

        g_assert_cmpuint(f->c.recs->len, ==, total);
        for (guint i = 0; i < total; i++) {
                g_autofree char *a = long_name('a', i), *b = long_name('b', i);
                g_autofree char *pa = g_build_filename(deep->str, a, NULL), *pb = g_build_filename(deep->str, b, NULL);
                Rec *r = rec_at(&f->c, i);

                g_assert_cmpuint(r->mask, ==, IN_MOVED_FROM | IN_MOVED_TO | WATCHD_PATH_ESCAPED);
                g_assert_cmpstr(r->path, ==, pa);
                g_assert_cmpstr(r->new_path, ==, pb);
        }
        g_test_message("%u records of %zu bytes escaped in %u signals, the largest %d bytes", total,
                       2 * strlen(rec_at(&f->c, 0)->wire_path), f->c.n_signals, g_atomic_int_get(&f->c.largest_signal));
        g_assert_cmpint(g_atomic_int_get(&f->c.largest_signal), <=, LONG_MAX_SIGNAL);
        g_assert_cmpuint(wt_stat(f->c.proxy, "events_dropped"), ==, 0);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);

        g_test_add("/names/burst", Fixture, NULL, fixture_setup, test_burst, fixture_teardown);
        g_test_add("/names/rename", Fixture, NULL, fixture_setup, test_rename, fixture_teardown);
        g_test_add("/names/list-fd", Fixture, NULL, fixture_setup, test_list_fd, fixture_teardown);
        g_test_add("/names/list-renamed", Fixture, NULL, fixture_setup, test_list_renamed, fixture_teardown);
        g_test_add("/names/add-escaped", Fixture, NULL, fixture_setup, test_add_escaped, fixture_teardown);
        g_test_add("/names/errors", Fixture, NULL, fixture_setup, test_errors, fixture_teardown);
        g_test_add("/names/long-batch", Fixture, LONG_CONFIG, fixture_setup, test_long_batch, fixture_teardown);

        return g_test_run();
}
