/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-daemon - watchd as a service on a private dbus-daemon: who hears a
 * client's signals (unicast, broadcast), a flood of calls and the limits,
 * SIGHUP's reload, sd_notify, backend=auto, the bus going away, the command
 * line, a name already taken, and clients in other processes (killed, or
 * running as nobody)
 *
 * /dbus/ cases split out of test-dbus.c, on its fixture (wt-fixture.h) or
 * with a bus and daemon of their own (WT_CASE_FUNC). Cases that need a
 * second uid or a process to kill run this binary again as a helper
 * (--helper ...), as nobody where needed (a copy that nobody can reach,
 * wherever the build tree is).
 */

#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "watchd-api.h"
#include "wt-fixture.h"

#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- who hears a client's signals */

/* A passive listener: a connection of its own that never calls watchd, with
 * a match rule for every signal of org.example.Inotify (its collector's),
 * and a filter that counts every message of that interface the bus routes
 * to it, whatever GDBus would make of it. */
typedef struct Listener {
        GDBusConnection *conn;
        guint filter;
        gint n_messages; /* atomic: the filter runs in GDBus's worker thread */
        WtCollector heard;
} Listener;

static GDBusMessage *listener_filter(GDBusConnection *conn, GDBusMessage *msg, gboolean incoming, gpointer data) {
        Listener *l = data;

        if (incoming && g_strcmp0(g_dbus_message_get_interface(msg), WATCHD_INTERFACE) == 0)
                g_atomic_int_inc(&l->n_messages);
        return msg;
}

static GVariant *bus_call(GDBusConnection *c, const char *method, GVariant *args) {
        g_autoptr(GError) error = NULL;
        GVariant *r;

        r = g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        method, args, NULL, G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, NULL, &error);
        g_assert_no_error(error);
        return r;
}

static void listener_start(Listener *l, WtBus *bus, gboolean eavesdrop) {
        l->conn = wt_connect(bus);
        l->filter = g_dbus_connection_add_filter(l->conn, listener_filter, l, NULL);
        if (eavesdrop) {
                /* The most a client may ask for: messages addressed to others
                 * too. The bus takes the rule; its policy, like the system
                 * bus's, gives no one the right to eavesdrop. */
                g_autoptr(GVariant) r = bus_call(l->conn, "AddMatch",
                                                 g_variant_new("(s)",
                                                               "type='signal',interface='org.example.Inotify',"
                                                               "eavesdrop=true"));
        }
        wt_collector_init_listener(&l->heard, l->conn); /* its match rule holds on return */
}

static void listener_stop(Listener *l) {
        wt_collector_clear(&l->heard);
        g_dbus_connection_remove_filter(l->conn, l->filter);
        g_dbus_connection_close_sync(l->conn, NULL, NULL);
        g_object_unref(l->conn);
}

/* Everything the bus routed to c before now has reached c's filters and
 * its signal handlers: the bus queues its answer to this call after it,
 * and GDBus attaches a signal's dispatch to the main context when it reads
 * the signal, before it reads the answer. */
static void connection_sync(GDBusConnection *c) {
        g_autoptr(GVariant) r = bus_call(c, "GetId", NULL);

        while (g_main_context_iteration(NULL, FALSE))
                ;
}

/* The owner's client (f->a) gets 20 records of f->dir, one of a ONESHOT
 * watch and its WatchRemoved, then a sentinel record after all of them:
 * once the owner has the sentinel, the bus has routed every signal before
 * it, to whoever it was going to. */
static void owner_signals(WtFixture *f) {
        g_autofree char *once = wt_fixture_path(f, "once"), *once_x = wt_fixture_path(f, "once/x");
        g_autofree char *sentinel = wt_fixture_path(f, "sentinel");
        guint32 id, id_once;

        g_assert_cmpint(g_mkdir(once, 0755), ==, 0);
        id = wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        id_once = wt_add_watch(f->proxy, once, IN_CREATE, 8 /* ONESHOT */, NULL);
        for (int i = 0; i < 20; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%d", f->dir, i);
                wt_touch(p);
        }
        wt_touch(once_x);
        g_assert_true(wt_await_removed(&f->a, id_once, "oneshot", TIMEOUT_MS));
        wt_touch(sentinel);
        g_assert_cmpuint(wt_await_record(&f->a, sentinel, IN_CREATE, TIMEOUT_MS)->id, ==, id);

        /* All of them, each once. */
        g_assert_cmpuint(f->a.records->len, ==, 22);
        for (int i = 0; i < 20; i++) {
                g_autofree char *p = g_strdup_printf("%s/f-%d", f->dir, i);
                int k = wt_collector_find(&f->a, p, IN_CREATE);

                g_assert_cmpint(k, >=, 0);
                g_assert_cmpuint(wt_collector_record(&f->a, k)->id, ==, id);
        }
        g_assert_cmpint(wt_collector_find(&f->a, once_x, IN_CREATE), >=, 0);
        g_assert_cmpuint(f->a.removed->len, ==, 1);
        g_assert_cmpuint(f->a.n_overflows, ==, 0);
}

/* Unicast (the default): a client's Events and WatchRemoved reach it alone.
 * Neither a listener with a match rule for every signal of the interface
 * and an eavesdrop rule, nor the other client of the same uid (whose proxy
 * listens to watchd's signals), receives any of them. */
static void test_unicast(WtFixture *f, gconstpointer data) {
        Listener l = {};

        listener_start(&l, f->bus, TRUE);
        owner_signals(f);
        connection_sync(l.conn);
        connection_sync(f->conn2);

        if (g_atomic_int_get(&l.n_messages) != 0)
                g_error("A listener received %d messages of org.example.Inotify (%u records, %u WatchRemoved) "
                        "sent to another client",
                        g_atomic_int_get(&l.n_messages), l.heard.records->len, l.heard.removed->len);
        g_assert_cmpuint(l.heard.n_signals + l.heard.removed->len + l.heard.n_overflows, ==, 0);
        g_assert_cmpuint(f->b.n_signals + f->b.removed->len + f->b.n_overflows, ==, 0);
        listener_stop(&l);
}

/* delivery=broadcast (allowed on a private bus): a passive listener, with a
 * match rule only and no call to watchd ever, receives every Events signal
 * of the owner, each record in the owner's order. WatchRemoved stays the
 * owner's own. */
static void test_broadcast(WtFixture *f, gconstpointer data) {
        Listener l = {};

        listener_start(&l, f->bus, FALSE);
        owner_signals(f);
        connection_sync(l.conn);

        g_assert_cmpuint(l.heard.n_signals, ==, f->a.n_signals);
        g_assert_cmpuint(l.heard.records->len, ==, f->a.records->len);
        for (guint i = 0; i < f->a.records->len; i++) {
                WtRecord *want = wt_collector_record(&f->a, i), *got = wt_collector_record(&l.heard, i);

                g_assert_cmpuint(got->id, ==, want->id);
                g_assert_cmpuint(got->mask, ==, want->mask);
                g_assert_cmpuint(got->cookie, ==, want->cookie);
                g_assert_cmpstr(got->path, ==, want->path);
                g_assert_cmpstr(got->new_path, ==, want->new_path);
        }
        g_assert_cmpuint(l.heard.removed->len, ==, 0);
        /* And nothing but those Events signals reached it. */
        g_assert_cmpint(g_atomic_int_get(&l.n_messages), ==, (gint) l.heard.n_signals);
        listener_stop(&l);
}

/* ---------------------------------------------------------------- a flood, the limits and the daemon as a service */

/* 10,000 calls, 1,000 in flight at any time: eight times what the system
 * bus lets one connection have pending (max_replies_per_connection, 128),
 * so watchd, not the bus, is what limits the flood. */
#define FLOOD_CALLS  10000u
#define FLOOD_WINDOW 1000u

typedef struct Flood {
        WatchdInotify *proxy;
        const char *path;
        guint sent, done, ok, limited, other;
        char *other_error;
} Flood;

static void on_flood_reply(GObject *src, GAsyncResult *res, gpointer data);

static void flood_send(Flood *fl) {
        fl->sent++;
        watchd_inotify_call_add_watch(fl->proxy, fl->path, IN_CREATE, 0, NULL, on_flood_reply, fl);
}

static void on_flood_reply(GObject *src, GAsyncResult *res, gpointer data) {
        Flood *fl = data;
        g_autoptr(GError) error = NULL;
        guint id;

        if (watchd_inotify_call_add_watch_finish(WATCHD_INOTIFY(src), &id, res, &error))
                fl->ok++;
        else {
                g_autofree char *name = g_dbus_error_get_remote_error(error);
                if (g_strcmp0(name, WATCHD_ERROR_LIMITS_EXCEEDED) == 0 && strstr(error->message, "max_watches_per_client"))
                        fl->limited++;
                else {
                        fl->other++;
                        if (!fl->other_error)
                                fl->other_error = g_strdup(error->message);
                }
        }
        fl->done++;
        if (fl->sent < FLOOD_CALLS)
                flood_send(fl);
}

static gboolean flood_done(gpointer data) {
        return ((Flood *) data)->done == FLOOD_CALLS;
}

typedef struct Pinger {
        WtBus *bus;
        volatile gint stop;
        gint64 worst_usec;
        guint n;
} Pinger;

/* Another client, on its own thread and connection, asks GetStats all along. */
static gpointer pinger_thread(gpointer data) {
        Pinger *p = data;
        g_autoptr(GMainContext) ctx = g_main_context_new();
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) proxy = NULL;

        g_main_context_push_thread_default(ctx);
        c = wt_connect(p->bus);
        proxy = wt_proxy(c);
        while (!g_atomic_int_get(&p->stop)) {
                g_autoptr(GVariant) stats = NULL;
                gint64 t0 = g_get_monotonic_time(), dt;

                g_assert_true(watchd_inotify_call_get_stats_sync(proxy, &stats, NULL, NULL));
                dt = g_get_monotonic_time() - t0;
                p->worst_usec = MAX(p->worst_usec, dt);
                p->n++;
                g_usleep(5000);
        }
        g_dbus_connection_close_sync(c, NULL, NULL);
        g_main_context_pop_thread_default(ctx);
        return NULL;
}

/* CPU time (user + system) of a process so far, in microseconds. */
static gint64 cpu_usec(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid), *s = NULL;
        g_auto(GStrv) fields = NULL;
        const char *after;

        g_assert_true(g_file_get_contents(path, &s, NULL, NULL));
        after = strrchr(s, ')'); /* the command name may hold spaces */
        g_assert_nonnull(after);
        fields = g_strsplit(after + 2, " ", -1);
        /* fields[0] is field 3 (state); utime and stime are fields 14 and 15. */
        return (g_ascii_strtoll(fields[11], NULL, 10) + g_ascii_strtoll(fields[12], NULL, 10)) * G_USEC_PER_SEC /
                sysconf(_SC_CLK_TCK);
}

/* 10,000 AddWatch calls from one client: past the limit, LimitsExceeded; others answered within 1 s. */
static void test_flood(WtFixture *f, gconstpointer data) {
        Flood fl = {};
        Pinger p = { .bus = f->bus };
        gint64 cpu0 = cpu_usec(wt_process_pid(f->daemon->process)), t0 = g_get_monotonic_time();
        GThread *t;

        t = g_thread_new("pinger", pinger_thread, &p);
        fl.proxy = f->proxy;
        fl.path = f->dir;
        while (fl.sent < FLOOD_WINDOW)
                flood_send(&fl);
        g_assert_true(wt_await(flood_done, &fl, 60000));
        g_atomic_int_set(&p.stop, 1);
        g_thread_join(t);

        g_test_message("flood: %u ok, %u limited, %u other in %" G_GINT64_FORMAT " ms, watchd CPU %" G_GINT64_FORMAT
                       " ms; GetStats worst %" G_GINT64_FORMAT " us over %u calls",
                       fl.ok, fl.limited, fl.other, (g_get_monotonic_time() - t0) / 1000,
                       (cpu_usec(wt_process_pid(f->daemon->process)) - cpu0) / 1000, p.worst_usec, p.n);
        if (fl.other)
                g_error("unexpected error in the flood: %s", fl.other_error);
        g_assert_cmpuint(fl.ok, ==, 8192); /* max_watches_per_client here (the old default) */
        g_assert_cmpuint(fl.limited, ==, FLOOD_CALLS - 8192);
        g_assert_cmpuint(p.n, >, 0);
        if (wt_timing_checked())
                g_assert_cmpint(p.worst_usec, <, G_USEC_PER_SEC);
        g_assert_cmpuint(wt_stat(f->proxy2, "kernel_watches"), ==, 1);
        g_free(fl.other_error);
}

static void test_limits(WtFixture *f, gconstpointer data) {
        g_autoptr(GDBusConnection) c3 = wt_connect(f->bus);
        g_autoptr(WatchdInotify) p3 = wt_proxy(c3);

        /* max_watches_per_client = 3, max_watches_per_user = 5, max_clients_per_user = 2 */
        for (int i = 0; i < 3; i++)
                wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
        wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch(f->proxy2, f->dir, IN_CREATE, 0, NULL);
        wt_add_watch_fails(f->proxy2, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED); /* per user */
        wt_add_watch_fails(p3, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED); /* a third client of the uid */
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);
        g_dbus_connection_close_sync(c3, NULL, NULL);
}

/* SIGHUP re-reads the config; a bad file on reload keeps the old settings. */
static void test_reload(WtFixture *f, gconstpointer data) {
        pid_t pid = wt_process_pid(f->daemon->process);
        g_autofree char *log = NULL;

        wt_add_watch(f->proxy, f->dir, IN_CREATE, 0, NULL);
        g_assert_true(g_file_set_contents(f->daemon->config_path, "[limits]\nmax_watches_per_client = 1\n", -1, NULL));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        /* The reload is done when the daemon answers again after the signal; poll with a deadline. */
        {
                gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
                gboolean limited = FALSE;
                while (!limited && g_get_monotonic_time() < deadline) {
                        g_autoptr(GError) error = NULL;
                        guint id;
                        if (!watchd_inotify_call_add_watch_sync(f->proxy2, f->dir, IN_CREATE, 0, &id, NULL, &error))
                                limited = TRUE;
                        else
                                g_usleep(2000);
                        if (limited)
                                g_assert_true(g_dbus_error_is_remote_error(error));
                }
                g_assert_true(limited);
        }
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);

        g_assert_true(g_file_set_contents(f->daemon->config_path, "[limits]\nmax_watches_per_client = 1\nbogus = 1\n",
                                          -1, NULL));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        {
                gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
                do {
                        g_free(log);
                        log = wt_daemon_log(f->daemon);
                        if (strstr(log, "keeping the old settings"))
                                break;
                        g_usleep(2000);
                } while (g_get_monotonic_time() < deadline);
        }
        g_assert_nonnull(strstr(log, "watchd.conf:3: unknown key 'bogus' in section [limits]; keeping the old settings"));
        wt_add_watch_fails(f->proxy, f->dir, IN_CREATE, 0, WATCHD_ERROR_LIMITS_EXCEEDED);
}

/* The systemd protocol: READY=1, WATCHDOG=1 pings, RELOADING=1 on SIGHUP, STOPPING=1 on SIGTERM. */
static gboolean notify_await(GSocket *sock, const char *want, GString *seen) {
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;

        while (g_get_monotonic_time() < deadline) {
                char buf[4096];
                gssize n;

                if (!g_socket_condition_timed_wait(sock, G_IO_IN, deadline - g_get_monotonic_time(), NULL, NULL))
                        break;
                n = g_socket_receive(sock, buf, sizeof(buf) - 1, NULL, NULL);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                g_string_append_printf(seen, "[%s]", buf);
                {
                        g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
                        if (g_strv_contains((const char *const *) lines, want))
                                return TRUE;
                }
        }
        return FALSE;
}

static void test_sd_notify(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSocket) sock = NULL;
        g_autoptr(GSocketAddress) addr = NULL;
        g_autoptr(GString) seen = g_string_new("");
        g_autofree char *path = NULL;
        WtBus *bus = wt_bus_start();
        WtDaemon *d;
        pid_t pid;

        path = g_build_filename(bus->dir, "notify", NULL);
        sock = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
        g_assert_no_error(error);
        addr = g_unix_socket_address_new(path);
        g_assert_true(g_socket_bind(sock, addr, TRUE, &error));

        g_setenv("NOTIFY_SOCKET", path, TRUE);
        g_setenv("WATCHDOG_USEC", "200000", TRUE);
        d = wt_daemon_start(bus, NULL);
        g_unsetenv("NOTIFY_SOCKET");
        g_unsetenv("WATCHDOG_USEC");
        pid = (pid_t) g_ascii_strtoll(g_subprocess_get_identifier(d->process), NULL, 10);

        g_assert_true(notify_await(sock, "READY=1", seen));
        g_assert_true(notify_await(sock, "WATCHDOG=1", seen));
        g_assert_cmpint(kill(pid, SIGHUP), ==, 0);
        g_assert_true(notify_await(sock, "RELOADING=1", seen));
        g_assert_true(notify_await(sock, "READY=1", seen));
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        if (!notify_await(sock, "STOPPING=1", seen))
                g_error("no STOPPING=1; seen: %s", seen->str);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
}

/* backend=auto with something that is not an inotify device: the syscalls, and the log says why. */
static void test_backend_auto(void) {
        const char *const args[] = { "--backend", "auto", NULL }; /* after the harness's --backend syscall */
        WtBus *bus = wt_bus_start();
        WtDaemon *d = wt_daemon_start_full(bus, "[daemon]\ndevice = /dev/null\n", args);
        g_autoptr(GDBusConnection) c = wt_connect(bus);
        g_autoptr(WatchdInotify) p = wt_proxy(c);
        g_autofree char *log = NULL;

        g_assert_cmpstr(watchd_inotify_get_backend(p), ==, "syscall");
        log = wt_daemon_log(d);
        g_assert_nonnull(strstr(log, "Cannot use '/dev/null'"));
        g_assert_nonnull(strstr(log, "Using the syscall backend"));
        g_dbus_connection_close_sync(c, NULL, NULL);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
}

static void on_exited(GObject *src, GAsyncResult *res, gpointer data) {
        (void) g_subprocess_wait_finish(G_SUBPROCESS(src), res, NULL);
        *(gboolean *) data = TRUE;
}

/* The bus goes away: watchd exits (systemd restarts it) instead of serving no one. */
static void test_bus_gone(void) {
        WtBus *bus = wt_bus_start();
        WtDaemon *d = wt_daemon_start(bus, NULL);
        gboolean exited = FALSE;

        g_subprocess_wait_async(d->process, NULL, on_exited, &exited);
        g_subprocess_send_signal(bus->process, SIGTERM);
        g_assert_true(wt_await_flag(&exited, TIMEOUT_MS));
        g_assert_false(g_subprocess_get_if_signaled(d->process));
        g_assert_cmpint(g_subprocess_get_exit_status(d->process), !=, 0);
        (void) wt_daemon_stop(d);
        wt_bus_stop(bus);
}

/* ---------------------------------------------------------------- command line */

static int run_watchd(const char *const *argv, char **ret_stderr) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSubprocess) p = NULL;
        g_autoptr(GBytes) err = NULL;

        p = g_subprocess_newv(argv, G_SUBPROCESS_FLAGS_STDERR_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
        g_assert_no_error(error);
        g_subprocess_communicate(p, NULL, NULL, NULL, &err, &error);
        g_assert_no_error(error);
        *ret_stderr = g_strndup(g_bytes_get_data(err, NULL), g_bytes_get_size(err));
        return g_subprocess_get_exit_status(p);
}

static void test_command_line(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp("watchd-cmdline-XXXXXX", &error);
        g_autofree char *conf = g_build_filename(dir, "bad.conf", NULL);
        g_autofree char *err = NULL, *conf2 = g_build_filename(dir, "broadcast.conf", NULL);
        const char *exe = wt_watchd_path();
        int rc;

        g_assert_true(
                g_file_set_contents(conf, "[daemon]\nbackend = syscall\n[events]\nbatch_max_events = 0\n", -1, NULL));
        {
                const char *argv[] = { exe, "--config", conf, "--address", "unix:path=/nonexistent", NULL };
                g_autofree char *want = g_strdup_printf("%s:4: batch_max_events: 0 is out of range (1-65536)", conf);
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 78);
                g_assert_nonnull(strstr(err, want));
                g_clear_pointer(&err, g_free);
        }
        g_assert_true(g_file_set_contents(conf2, "[events]\ndelivery = broadcast\n", -1, NULL));
        {
                const char *argv[] = { exe, "--config", conf2, NULL }; /* the system bus */
                g_autofree char *want = g_strdup_printf("%s:2: delivery=broadcast is not allowed on the system bus",
                                                        conf2);
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 78);
                g_assert_nonnull(strstr(err, want));
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--bogus", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, !=, 0);
                g_clear_pointer(&err, g_free);
        }
        {
                /* --backend device where there is no device: a clear message, exit 1 */
                const char *argv2[] = { exe,      "--config",  "/nonexistent",           "--backend",
                                        "device", "--address", "unix:path=/nonexistent", NULL };
                g_autofree char *err2 = NULL;
                rc = run_watchd(argv2, &err2);
                g_assert_cmpint(rc, ==, 1);
                g_assert_nonnull(strstr(err2, "Failed to open '/dev/inotify'"));
        }
        {
                const char *argv[] = { exe, "--backend", "kernel", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 1);
                g_assert_nonnull(strstr(err, "'kernel' is not one of auto, device, syscall"));
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--version", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 0);
                g_clear_pointer(&err, g_free);
        }
        {
                const char *argv[] = { exe, "--help", NULL };
                rc = run_watchd(argv, &err);
                g_assert_cmpint(rc, ==, 0);
                g_clear_pointer(&err, g_free);
        }
        g_unlink(conf);
        g_unlink(conf2);
        g_rmdir(dir);
}

/* A second watchd on the same bus exits with a clear message: the name is taken. */
static void test_name_taken(WtFixture *f, gconstpointer data) {
        g_autofree char *err = NULL;
        const char *argv[] = { wt_watchd_path(),       "--address", f->bus->address, "--config",
                               f->daemon->config_path, "--backend", "syscall",       NULL };
        int rc;

        rc = run_watchd(argv, &err);
        g_assert_cmpint(rc, ==, 1);
        g_assert_nonnull(strstr(err, "The name org.example.Inotify is already taken"));
        wt_assert_responsive(f->proxy);
}

/* ---------------------------------------------------------------- helpers in other processes */

/* Runs this test program again as a helper (--helper ARGS...), as nobody if
 * as_nobody. Returns NULL, the test skipped saying why, if nobody cannot
 * run it here. */
static GSubprocess *spawn_helper(WtFixture *f, gboolean as_nobody, GDataInputStream **ret_out, const char *const *args) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) error = NULL;
        g_autofree char *self = g_file_read_link("/proc/self/exe", &error);
        GSubprocess *p;

        g_assert_no_error(error);
        if (as_nobody) {
                /* A copy nobody can reach, wherever the build tree is. */
                char *copy = wt_launcher_as_nobody(l, f->bus, self, &error);

                if (!copy) {
                        g_test_skip(error->message);
                        return NULL;
                }
                g_ptr_array_add(argv, copy);
        } else {
                g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
                g_ptr_array_add(argv, g_steal_pointer(&self));
        }
        g_ptr_array_add(argv, g_strdup("--helper"));
        for (size_t i = 0; args[i]; i++)
                g_ptr_array_add(argv, g_strdup(args[i]));
        g_ptr_array_add(argv, NULL);
        p = g_subprocess_launcher_spawnv(l, (const char *const *) argv->pdata, &error);
        g_assert_no_error(error);
        *ret_out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p));
        return p;
}

static char *read_line(GDataInputStream *in) {
        g_autoptr(GError) error = NULL;
        char *l = g_data_input_stream_read_line(in, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_nonnull(l);
        return l;
}

/* A client killed with SIGKILL loses its subscriptions; the kernel watch goes with the last. */
static void test_sigkill(WtFixture *f, gconstpointer data) {
        g_autoptr(GDataInputStream) out = NULL;
        g_autoptr(GSubprocess) p = NULL;
        g_autofree char *line = NULL, *file = wt_fixture_path(f, "held");
        const char *args[] = { "hold", f->bus->address, f->dir, file, NULL };

        wt_touch(file);
        wt_add_watch(f->proxy, f->dir, IN_DELETE, 0, NULL); /* shares the helper's directory watch */
        p = spawn_helper(f, FALSE, &out, args);
        line = read_line(out);
        g_assert_true(g_str_has_prefix(line, "id "));
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 3);
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 2);
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 2);

        g_subprocess_force_exit(p); /* SIGKILL */
        g_assert_true(g_subprocess_wait(p, NULL, NULL));
        g_assert_true(g_subprocess_get_if_signaled(p));
        /* Its two subscriptions go; the file's kernel watch goes, the shared directory's stays. */
        g_assert_true(wt_await_stat(f->proxy, "subscriptions", 1, TIMEOUT_MS));
        g_assert_true(wt_await_stat(f->proxy, "kernel_watches", 1, TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(f->proxy, "clients"), ==, 1);
}

/* A client running as nobody: AccessDenied on a root-only directory, only its
 * own events, and a RECURSIVE subscription that does not enter what nobody
 * may not read. */
static void test_nobody(WtFixture *f, gconstpointer data) {
        g_autofree char *private = wt_fixture_path(f, "private"), *shared = wt_fixture_path(f, "shared");
        g_autofree char *secret = wt_fixture_path(f, "shared/secret"), *s_file = wt_fixture_path(f, "shared/secret/s");
        g_autofree char *o_file = wt_fixture_path(f, "shared/open/o");
        g_autofree char *x = NULL, *y = NULL, *done = NULL, *line = NULL, *want = NULL;
        g_autoptr(GDataInputStream) out = NULL;
        g_autoptr(GSubprocess) p = NULL;
        const char *args[] = { "nobody", f->bus->address, private, shared, NULL };
        guint32 root_id, nobody_id = 0;
        guint n_recs = 0;

        if (geteuid() != 0) {
                g_test_skip("needs root to run a client as nobody");
                return;
        }
        g_assert_cmpint(g_mkdir(private, 0700), ==, 0);
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        wt_fixture_mkdir_p(f, "shared/open");
        g_assert_cmpint(g_mkdir(secret, 0700), ==, 0);
        root_id = wt_add_watch(f->proxy, shared, IN_CREATE, 0, NULL);
        wt_add_watch(f->proxy, private, IN_CREATE, 0, NULL);

        p = spawn_helper(f, TRUE, &out, args);
        if (!p)
                return;
        line = read_line(out);
        g_assert_cmpstr(line, ==, "private " WATCHD_ERROR_ACCESS_DENIED);
        g_free(line);
        line = read_line(out);
        g_assert_true(g_str_has_prefix(line, "id "));
        nobody_id = (guint32) g_ascii_strtoull(line + 3, NULL, 10);
        g_assert_cmpuint(nobody_id, !=, root_id);
        /* shared and private for root; shared (the same) and shared/open for nobody; never shared/secret. */
        g_assert_cmpuint(wt_stat(f->proxy, "kernel_watches"), ==, 3);

        x = g_build_filename(shared, "x", NULL);
        y = g_build_filename(private, "y", NULL);
        done = g_build_filename(shared, "done", NULL);
        wt_touch(y);      /* root's only */
        wt_touch(x);      /* both */
        wt_touch(s_file); /* inside what nobody may not read */
        wt_touch(o_file); /* inside nobody's tree */
        wt_touch(done);
        wt_await_record(&f->a, done, IN_CREATE, TIMEOUT_MS);
        wt_await_record(&f->a, y, IN_CREATE, TIMEOUT_MS);

        /* The helper prints what it received: only its own id, never root's records. */
        for (;;) {
                g_free(line);
                line = read_line(out);
                if (strcmp(line, "end") == 0)
                        break;
                want = g_strdup_printf("rec %u ", nobody_id);
                g_assert_true(g_str_has_prefix(line, want));
                g_clear_pointer(&want, g_free);
                g_assert_null(strstr(line, "private"));
                g_assert_null(strstr(line, "secret"));
                n_recs++;
        }
        g_assert_cmpuint(n_recs, ==, 3); /* x, open/o and done */
        g_assert_true(g_subprocess_wait_check(p, NULL, NULL));
}

static void helper_on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        gboolean *done = data;
        GVariantIter it;
        guint32 id, mask, cookie;
        const char *path, *new_path;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                printf("rec %u %s\n", id, path);
                if (g_str_has_suffix(path, "/done"))
                        *done = TRUE;
        }
}

static int helper_main(int argc, char *argv[]) {
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) p = NULL;
        g_autoptr(GError) error = NULL;
        WtBus bus = {};
        guint id;

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc < 4)
                return 2;
        bus.address = argv[3];
        c = wt_connect(&bus);
        p = wt_proxy(c);

        if (strcmp(argv[2], "hold") == 0) {
                id = wt_add_watch(p, argv[4], IN_CREATE, 0, NULL);
                wt_add_watch(p, argv[5], IN_MODIFY, 0, NULL); /* and a kernel watch of its own */
                printf("id %u\n", id);
                for (;;)
                        pause();
        }
        if (strcmp(argv[2], "nobody") == 0) {
                gboolean done = FALSE;
                g_autofree char *name = NULL;

                g_assert_false(watchd_inotify_call_add_watch_sync(p, argv[4], IN_CREATE, 0, &id, NULL, &error));
                name = g_dbus_error_get_remote_error(error);
                printf("private %s\n", name);
                g_signal_connect(p, "events", G_CALLBACK(helper_on_events), &done);
                id = wt_add_watch(p, argv[5], IN_CREATE, WATCHD_FLAG_RECURSIVE, NULL);
                printf("id %u\n", id);
                if (!wt_await_flag(&done, TIMEOUT_MS))
                        return 1;
                printf("end\n");
                return 0;
        }
        return 2;
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "--helper") == 0)
                return helper_main(argc, argv);

        g_test_init(&argc, &argv, NULL);

        WT_CASE("/dbus/unicast", NULL, test_unicast);
        WT_CASE("/dbus/broadcast", "[events]\ndelivery = broadcast\n", test_broadcast);
        WT_CASE("/dbus/limits",
                "[limits]\nmax_watches_per_client = 3\nmax_watches_per_user = 5\nmax_clients_per_user = 2\n",
                test_limits);
        WT_CASE("/dbus/flood", "[limits]\nmax_watches_per_client = 8192\n", test_flood);
        WT_CASE("/dbus/reload", NULL, test_reload);
        WT_CASE("/dbus/name-taken", NULL, test_name_taken);
        WT_CASE("/dbus/sigkill", NULL, test_sigkill);
        WT_CASE("/dbus/nobody", NULL, test_nobody);
        WT_CASE_FUNC("/dbus/command-line", test_command_line);
        WT_CASE_FUNC("/dbus/sd-notify", test_sd_notify);
        WT_CASE_FUNC("/dbus/backend-auto", test_backend_auto);
        WT_CASE_FUNC("/dbus/bus-gone", test_bus_gone);

        return g_test_run();
}
