/* SPDX-License-Identifier: GPL-2.0-or-later */

/*
 * system-bus-fixture - the fixture, root's reading client and the parent's
 * end of nobody's child, for the programs of the system-style bus
 *
 * See system-bus-fixture.h. Linked into test-system-bus, test-hung-calls
 * and test-hung-changes (the system-bus-test library of meson.build).
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "system-bus-fixture.h"

/* ---------------------------------------------------------------- the reading client */

static gboolean send_ping_error(gpointer data) {
        GDBusMessage *ping = data;
        g_autoptr(GDBusMessage) reply = NULL;
        GDBusConnection *conn = g_object_get_data(G_OBJECT(ping), "conn");

        reply = g_dbus_message_new_method_error(ping, "org.freedesktop.DBus.Error.UnknownMethod",
                                                "No Peer interface here.");
        if (!g_dbus_connection_is_closed(conn))
                g_assert_true(g_dbus_connection_send_message(conn, reply, G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL));
        g_object_unref(ping);
        return G_SOURCE_REMOVE;
}

static GDBusMessage *reader_filter(GDBusConnection *conn, GDBusMessage *msg, gboolean incoming, gpointer data) {
        Reader *r = data;

        if (incoming && g_dbus_message_get_message_type(msg) == G_DBUS_MESSAGE_TYPE_METHOD_CALL &&
            g_strcmp0(g_dbus_message_get_interface(msg), "org.freedesktop.DBus.Peer") == 0 &&
            g_strcmp0(g_dbus_message_get_member(msg), "Ping") == 0) {
                g_atomic_int_inc(&r->n_pings);
                if (r->mode == PING_ERROR) {
                        /* Answered from the main thread: a filter must not send. */
                        g_object_set_data_full(G_OBJECT(msg), "conn", g_object_ref(conn), g_object_unref);
                        g_main_context_invoke(NULL, send_ping_error, msg);
                        return NULL;
                }
        }
        return msg;
}

static void on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        ((Reader *) data)->n_records += (guint) g_variant_n_children(events);
}

static void on_overflow(WatchdInotify *p, GVariant *ids, gpointer data) {
        ((Reader *) data)->n_overflows++;
}

void reader_init(Reader *r, WtBus *bus, PingMode mode) {
        *r = (Reader) { .mode = mode };
        r->conn = wt_connect(bus);
        r->filter = g_dbus_connection_add_filter(r->conn, reader_filter, r, NULL);
        r->proxy = wt_proxy(r->conn);
        g_signal_connect(r->proxy, "events", G_CALLBACK(on_events), r);
        g_signal_connect(r->proxy, "overflow", G_CALLBACK(on_overflow), r);
}

void reader_done(Reader *r) {
        while (g_main_context_iteration(NULL, FALSE))
                ; /* answers still to send, before the connection goes */
        g_object_unref(r->proxy);
        g_dbus_connection_remove_filter(r->conn, r->filter);
        g_dbus_connection_close_sync(r->conn, NULL, NULL);
        g_object_unref(r->conn);
}

typedef struct Count {
        Reader *r;
        guint n;
} Count;

static gboolean count_met(gpointer data) {
        Count *w = data;
        return w->r->n_records >= w->n || w->r->n_overflows > 0;
}

/* Awaits n records in all; fails the test on Overflow or timeout. */
void await_records(Reader *r, guint n) {
        Count w = { r, n };

        if (!wt_await(count_met, &w, TIMEOUT_MS) || r->n_overflows > 0)
                g_error("The reading client got %u records and %u Overflow, wanted %u records within %d ms "
                        "(%d Pings reached it)",
                        r->n_records, r->n_overflows, n, TIMEOUT_MS, g_atomic_int_get(&r->n_pings));
}

/* ---------------------------------------------------------------- the client that stops reading */

int stuck_on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        StuckReport *s = userdata;
        const char *path, *new_path;
        uint32_t id, mask, cookie;
        int r;

        if (sd_bus_message_is_signal(m, "org.example.Inotify", "Events")) {
                r = sd_bus_message_enter_container(m, 'a', "(uuuss)");
                if (r < 0)
                        return r;
                while ((r = sd_bus_message_read(m, "(uuuss)", &id, &mask, &cookie, &path, &new_path)) > 0) {
                        s->records++;
                        if (s->overflows > 0) {
                                s->records_after_overflow++;
                                if (strstr(path, "/end-"))
                                        s->done = true;
                        }
                }
                return r < 0 ? r : 0;
        }
        if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Peer", "Ping") && s->overflows == 0)
                s->pings_before_overflow++;
        if (sd_bus_message_is_signal(m, "org.example.Inotify", "Overflow")) {
                r = sd_bus_message_read(m, "au", 1, &id);
                if (r < 0)
                        return r;
                s->overflows++;
                s->overflow_id = id;
        }
        return 0; /* and sd-bus answers Peer.Ping by itself, after what came before it */
}

/* A line from the child, within TIMEOUT_MS. */
char *stuck_read_line(Stuck *st) {
        GString *line = g_string_new(NULL);
        gint64 deadline = g_get_monotonic_time() + (gint64) TIMEOUT_MS * 1000;
        char c;

        for (;;) {
                struct pollfd p = { .fd = st->report_fd, .events = POLLIN };
                int left = (int) ((deadline - g_get_monotonic_time()) / 1000);

                if (left <= 0 || poll(&p, 1, left) <= 0)
                        g_error("The stuck client said nothing within %d ms (so far: '%s')", TIMEOUT_MS, line->str);
                if (read(st->report_fd, &c, 1) != 1)
                        g_error("The stuck client ended without a word (so far: '%s')", line->str);
                if (c == '\n')
                        return g_string_free(line, FALSE);
                g_string_append_c(line, c);
        }
}

/* Lets the child read. */
void stuck_go(Stuck *st) {
        g_assert_cmpint(write(st->go_fd, "g", 1), ==, 1);
}

/* ---------------------------------------------------------------- fixture */

/* Under a wrapper (valgrind) watchd's RSS is the tool's, so bounds on it
 * say nothing, and it runs tens of times slower. */
gboolean watchd_wrapped(void) {
        const char *w = g_getenv("WATCHD_TEST_WRAPPER");
        return w && *w;
}

/* Our policy without the rule that lets root send Peer.Ping. */
static char *policy_without_ping(const char *dir) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GRegex) re = NULL;
        g_autofree char *text = NULL, *edited = NULL;
        char *path = g_build_filename(dir, "policy-without-ping.conf", NULL);

        g_assert_true(g_file_get_contents(wt_policy_path(), &text, NULL, NULL));
        re = g_regex_new("<allow[^>]*send_member=\"Ping\"[^>]*/>", 0, 0, NULL);
        g_assert_true(g_regex_match(re, text, 0, NULL));
        edited = g_regex_replace_literal(re, text, -1, 0, "", 0, &error);
        g_assert_no_error(error);
        g_assert_false(g_regex_match(re, edited, 0, NULL));
        g_assert_true(g_file_set_contents(path, edited, -1, NULL));
        return path;
}

void fixture_setup(Fixture *f, gconstpointer data) {
        const Params *p = data;

        if (p->bus_timeout && watchd_wrapped()) {
                /* Its own calls (Hello) time out at that under valgrind. */
                g_test_skip("sd-bus's timeout is cut short in watchd: not under a wrapper");
                return;
        }
        if (geteuid() != 0) {
                g_test_skip("the system-style bus lets only root own org.example.Inotify, and the stuck "
                            "client becomes nobody: run as root");
                return;
        }
        f->dir = wt_make_fast_dir();
        g_assert_cmpint(g_chmod(f->dir, 0755), ==, 0);
        if (!p->system)
                f->bus = wt_bus_start();
        else if (p->deny_ping) {
                f->policy = policy_without_ping(f->dir);
                f->bus = wt_system_bus_start_with_policy(f->policy);
        } else
                f->bus = wt_system_bus_start();
        if (p->bus_timeout) {
                g_autofree char *timeout = g_strconcat("SYSTEMD_BUS_TIMEOUT=", p->bus_timeout, NULL);
                const char *env[] = { timeout, NULL };

                f->daemon = wt_daemon_start_env(f->bus, WINDOW_CONFIG, env);
        } else
                f->daemon = wt_daemon_start(f->bus, p->config ? p->config : WINDOW_CONFIG);
}

void fixture_teardown(Fixture *f, gconstpointer data) {
        if (!f->bus)
                return;
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        wt_bus_stop(f->bus);
        wt_remove_tree(f->dir);
        g_free(f->dir);
        g_free(f->policy);
}

static char *storm_name(Fixture *f, const char *prefix, guint i) {
        g_autofree char *pad = g_strnfill(NAME_PAD, 'x');
        return g_strdup_printf("%s/%s-%06u-%s", f->dir, prefix, i, pad);
}

/* Creates and removes file i: IN_CREATE then IN_DELETE. */
void create_remove(Fixture *f, const char *prefix, guint i) {
        g_autofree char *p = storm_name(f, prefix, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create '%s': %s", p, g_strerror(errno));
        g_assert_cmpint(close(fd), ==, 0);
        g_assert_cmpint(unlink(p), ==, 0);
}

guint32 add_watch(WatchdInotify *proxy, const char *path) {
        g_autoptr(GError) error = NULL;
        guint id = 0;

        if (!watchd_inotify_call_add_watch_sync(proxy, path, IN_CREATE | IN_DELETE, 0, &id, NULL, &error))
                g_error("AddWatch '%s': %s", path, error->message);
        return id;
}
