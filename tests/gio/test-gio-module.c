/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-gio-module - the GIO module loaded by the installed GLib
 *
 * Each case runs in a process of its own under tests/gio/with-watchd (a
 * private system bus in DBUS_SYSTEM_BUS_ADDRESS, watchd on it unless
 * --no-watchd, the module's build directory in GIO_EXTRA_MODULES): GLib
 * chooses a file monitor implementation once per process. The cases check
 * which implementation GLib chose (by its type name), that the events come
 * through watchd (its GetStats), how long is_supported() takes when watchd
 * cannot be reached, and that monitors survive a restart of watchd and the
 * deletion of their directory.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "fake-watchd.h"
#include "glocalfilemonitor-layout.h"

#define TIMEOUT_MS 10000

typedef struct Seen {
        GFileMonitorEvent event;
        char *name;
        char *other;
        GThread *thread;
} Seen;

static GPtrArray *seen; /* Seen* */
static GMutex seen_lock;

static void seen_free(Seen *s) {
        g_free(s->name);
        g_free(s->other);
        g_free(s);
}

static void on_changed(GFileMonitor *m, GFile *file, GFile *other, GFileMonitorEvent event, gpointer data) {
        Seen *s = g_new0(Seen, 1);

        s->event = event;
        s->name = g_file_get_basename(file);
        s->other = other ? g_file_get_basename(other) : NULL;
        s->thread = g_thread_self();
        g_mutex_lock(&seen_lock);
        g_ptr_array_add(seen, s);
        g_mutex_unlock(&seen_lock);
}

static Seen *find_seen(GFileMonitorEvent event, const char *name) {
        Seen *found = NULL;

        g_mutex_lock(&seen_lock);
        for (guint i = 0; i < seen->len && !found; i++) {
                Seen *s = seen->pdata[i];

                if (s->event == event && g_str_equal(s->name, name))
                        found = s;
        }
        g_mutex_unlock(&seen_lock);
        return found;
}

/* Runs context until event on name was seen. */
static Seen *await_seen(GMainContext *context, GFileMonitorEvent event, const char *name) {
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        Seen *s;

        while (!(s = find_seen(event, name))) {
                if (g_get_monotonic_time() > deadline)
                        g_error("no event %d on %s within %d ms", event, name, TIMEOUT_MS);
                g_main_context_iteration(context, FALSE);
                g_usleep(1000);
        }
        return s;
}

static char *make_dir(void) {
        g_autoptr(GError) error = NULL;
        char *d = g_dir_make_tmp("gio-module-XXXXXX", &error);

        g_assert_no_error(error);
        return d;
}

static void touch(const char *dir, const char *name) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        close(fd);
}

static GFileMonitor *monitor_dir(const char *dir, gint64 *ret_usec) {
        g_autoptr(GFile) f = g_file_new_for_path(dir);
        g_autoptr(GError) error = NULL;
        gint64 start = g_get_monotonic_time();
        GFileMonitor *m = g_file_monitor_directory(f, G_FILE_MONITOR_WATCH_MOVES, NULL, &error);

        if (ret_usec)
                *ret_usec = g_get_monotonic_time() - start;
        g_assert_no_error(error);
        g_signal_connect(m, "changed", G_CALLBACK(on_changed), NULL);
        return m;
}

/* A GetStats counter of the watchd on the test's bus. */
static guint64 watchd_stat(const char *key) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GDBusConnection) c = g_dbus_connection_new_for_address_sync(
                g_getenv("DBUS_SYSTEM_BUS_ADDRESS"),
                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL,
                NULL, &error);
        g_autoptr(GVariant) reply = NULL, stats = NULL, v = NULL;

        g_assert_no_error(error);
        reply = g_dbus_connection_call_sync(c, "org.example.Inotify", "/org/example/Inotify", "org.example.Inotify",
                                            "GetStats", NULL, G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, 5000,
                                            NULL, &error);
        g_assert_no_error(error);
        stats = g_variant_get_child_value(reply, 0);
        v = g_variant_lookup_value(stats, key, NULL);
        g_assert_nonnull(v);
        return g_variant_is_of_type(v, G_VARIANT_TYPE_UINT32) ? g_variant_get_uint32(v) : g_variant_get_uint64(v);
}

static void setup(void) {
        seen = g_ptr_array_new_with_free_func((GDestroyNotify) seen_free);
}

/* ------------------------------------------------------------------------ */

/* watchd runs: GLib picks the module by priority (or by GIO_USE_FILE_MONITOR,
 * as meson sets it for /gio-module/forced), and events come through watchd. */
static void test_chosen(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        gint64 usec;

        setup();
        m = monitor_dir(dir, &usec);
        g_test_message("first monitor (is_supported() included): %" G_GINT64_FORMAT " us", usec);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        g_assert_cmpuint(watchd_stat("subscriptions"), ==, 1);
        touch(dir, "a");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "a");
        g_assert_cmpuint(watchd_stat("events_delivered"), >=, 1);
        g_file_monitor_cancel(m);
        {
                g_autofree char *a = g_build_filename(dir, "a", NULL);

                g_unlink(a);
                g_rmdir(dir);
        }
}

/* Where watchd cannot be reached, GLib falls back to inotify, and the
 * module's is_supported() answers within its bound (500 ms) plus a margin
 * for a loaded machine. bound_ms: what the case allows. */
static void check_fallback(int max_ms) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        gint64 usec;

        setup();
        m = monitor_dir(dir, &usec);
        g_test_message("first monitor (is_supported() included): %.1f ms", usec / 1000.0);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GInotifyFileMonitor");
        /* Not under sanitizers (tests/robustness/sanitize), whose slowdown is not the module's. */
        if (g_strcmp0(g_getenv("WATCHD_TEST_NO_TIMING"), "1") != 0)
                g_assert_cmpint(usec / 1000, <, max_ms);
        touch(dir, "a");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "a");
        g_file_monitor_cancel(m);
        {
                g_autofree char *a = g_build_filename(dir, "a", NULL);

                g_unlink(a);
                g_rmdir(dir);
        }
}

/* A bus without watchd (with-watchd --no-watchd). */
static void test_no_daemon(void) {
        check_fallback(200);
}

/* No bus at all: the system bus socket does not exist. */
static void test_no_bus(void) {
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/watchd-test-bus", TRUE);
        check_fallback(200);
}

/* A bus that accepts the connection and never answers: is_supported()
 * gives up after its bound. */
static void test_hung_bus(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *path = g_build_filename(dir, "hung", NULL);
        g_autofree char *address = g_strdup_printf("unix:path=%s", path);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        g_assert_cmpint(fd, >=, 0);
        g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
        g_assert_cmpint(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), ==, 0);
        g_assert_cmpint(listen(fd, 16), ==, 0);
        g_setenv("DBUS_SYSTEM_BUS_ADDRESS", address, TRUE);
        check_fallback(1500);
        close(fd);
        g_unlink(path);
        g_rmdir(dir);
}

static gboolean name_has_owner(void) {
        g_autoptr(GDBusConnection) c = g_dbus_connection_new_for_address_sync(
                g_getenv("DBUS_SYSTEM_BUS_ADDRESS"),
                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL,
                NULL, NULL);
        g_autoptr(GVariant) r = g_dbus_connection_call_sync(
                c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                g_variant_new("(s)", "org.example.Inotify"), G_VARIANT_TYPE("(b)"), 0, 5000, NULL, NULL);
        gboolean has = FALSE;

        if (r)
                g_variant_get(r, "(b)", &has);
        return has;
}

/* watchd stops and another starts: the monitor goes on. */
static void test_restart(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *conf = g_build_filename(g_getenv("WATCHD_TEST_DIR"), "watchd.conf", NULL);
        g_autoptr(GFileMonitor) m = NULL;
        g_autoptr(GSubprocess) again = NULL;
        g_autoptr(GError) error = NULL;
        pid_t pid = (pid_t) g_ascii_strtoll(g_getenv("WATCHD_TEST_PID"), NULL, 10);
        gint64 deadline;

        setup();
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        while (name_has_owner())
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        again = g_subprocess_new(G_SUBPROCESS_FLAGS_NONE, &error, g_getenv("WATCHD"), "--address",
                                 g_getenv("DBUS_SYSTEM_BUS_ADDRESS"), "--backend", "syscall", "--config", conf, NULL);
        g_assert_no_error(error);
        while (!name_has_owner())
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        /* Added again by the library once it sees the new owner. */
        while (watchd_stat("subscriptions") != 1) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(2000);
        }
        touch(dir, "after");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "after");
        g_file_monitor_cancel(m);
        g_subprocess_send_signal(again, SIGTERM);
        g_subprocess_wait(again, NULL, NULL);
}

/* Whether watchd's log (with-watchd, log_level = debug) has line, and how many times. */
static guint watchd_log_count(const char *needle) {
        g_autofree char *path = g_build_filename(g_getenv("WATCHD_TEST_DIR"), "watchd.log", NULL);
        g_autofree char *log = NULL;
        guint n = 0;

        g_assert_true(g_file_get_contents(path, &log, NULL, NULL));
        for (const char *p = log; (p = strstr(p, needle)); p++)
                n++;
        return n;
}

/* A monitored directory deleted and made again: a GLib monitor outlives
 * it. watchd says "persistent": the module's subscription has PERSIST, so
 * watchd follows the path itself (its log says so) and the module adds
 * nothing again (one AddWatch of the path in all); the re-creation is
 * reported (CREATED of the directory, "report-appearance", as GLib's
 * ih_not_missing_callback says it), and so is a file made right after it,
 * whatever the race with the new watch (the scan). Twice. */
static void test_dir_recreated(void) {
        g_autofree char *parent = make_dir();
        g_autofree char *dir = g_build_filename(parent, "d", NULL);
        g_autofree char *added = g_strdup_printf("on %s, mask", dir);
        g_autofree char *again = g_strdup_printf("following '%s' again", dir);
        g_autoptr(GFileMonitor) m = NULL;

        setup();
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        m = monitor_dir(dir, NULL);
        g_assert_cmpuint(watchd_log_count(added), ==, 1);
        g_assert_cmpuint(watchd_log_count(", flags 0x92"), ==, 1); /* ONLYDIR | PERSIST | PACKED (libwatchd's) */
        for (int round = 0; round < 2; round++) {
                g_autofree char *name = g_strdup_printf("x%d", round);
                g_autofree char *last = g_strdup_printf("%s/x%d", dir, round - 1);

                if (round > 0)
                        g_assert_cmpint(g_unlink(last), ==, 0);
                g_assert_cmpint(g_rmdir(dir), ==, 0);
                await_seen(NULL, G_FILE_MONITOR_EVENT_DELETED, "d");
                g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
                touch(dir, name);
                await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "d");
                await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, name);
                g_assert_cmpuint(watchd_log_count(again), ==, (guint) round + 1);
                g_assert_cmpuint(watchd_stat("subscriptions"), ==, 1);
                g_mutex_lock(&seen_lock);
                g_ptr_array_set_size(seen, 0);
                g_mutex_unlock(&seen_lock);
        }
        /* The module never added the path again: watchd followed it. */
        g_assert_cmpuint(watchd_log_count(added), ==, 1);
        g_file_monitor_cancel(m);
}

/* File names are bytes: a directory and a file whose names are not UTF-8
 * reach the monitor as they are (watchd sends them escaped). */
static void test_non_utf8(void) {
        g_autofree char *parent = make_dir();
        g_autofree char *dir = g_build_filename(parent, "d\xff", NULL);
        g_autoptr(GFileMonitor) m = NULL;

        setup();
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        touch(dir, "x\xfe\\y");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "x\xfe\\y");
        g_file_monitor_cancel(m);
}

typedef struct ThreadData {
        const char *dir;
        GMainContext *context;
        gboolean done;
        GThread *thread;
} ThreadData;

static gpointer monitor_thread(gpointer data) {
        ThreadData *t = data;
        g_autoptr(GFileMonitor) m = NULL;
        Seen *s;

        g_main_context_push_thread_default(t->context);
        m = monitor_dir(t->dir, NULL);
        touch(t->dir, "from-thread");
        s = await_seen(t->context, G_FILE_MONITOR_EVENT_CREATED, "from-thread");
        g_assert_true(s->thread == g_thread_self());
        g_file_monitor_cancel(m);
        g_main_context_pop_thread_default(t->context);
        return NULL;
}

/* The module's fallback for a watchd that ends the subscription of a
 * deleted directory (no "persistent"): it adds the path again itself, as a
 * pending path, and reports again once the directory is back. Run with WATCHD_GIO_TRACKER_COMPAT=1 (meson), under which
 * the module does not ask for PERSIST, so that the fallback runs against
 * this watchd. */
static void test_dir_recreated_fallback(void) {
        g_autofree char *parent = make_dir();
        g_autofree char *dir = g_build_filename(parent, "d", NULL);
        g_autofree char *added = g_strdup_printf("on %s, mask", dir);
        g_autoptr(GFileMonitor) m = NULL;
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;

        g_assert_cmpstr(g_getenv("WATCHD_GIO_TRACKER_COMPAT"), ==, "1");
        setup();
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        m = monitor_dir(dir, NULL);
        g_assert_cmpuint(watchd_log_count(added), ==, 1);
        g_assert_cmpuint(watchd_log_count(", flags 0x82."), ==, 1); /* ONLYDIR | PACKED, no PERSIST */
        g_assert_cmpint(g_rmdir(dir), ==, 0);
        await_seen(NULL, G_FILE_MONITOR_EVENT_DELETED, "d");
        /* watchd ended it; the module's new subscription is pending on the path. */
        while (watchd_log_count(added) != 2 || watchd_stat("subscriptions") != 1) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_main_context_iteration(NULL, FALSE);
                g_usleep(2000);
        }
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        /* Placed once the path exists: files made from then on are seen.
         * New names until one is. */
        deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        for (int i = 0;; i++) {
                g_autofree char *name = g_strdup_printf("x%d", i);
                gint64 wait = g_get_monotonic_time() + 100 * 1000;

                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                touch(dir, name);
                while (!find_seen(G_FILE_MONITOR_EVENT_CREATED, name) && g_get_monotonic_time() < wait) {
                        g_main_context_iteration(NULL, FALSE);
                        g_usleep(1000);
                }
                if (find_seen(G_FILE_MONITOR_EVENT_CREATED, name)) {
                        g_test_message("seen from x%d on", i);
                        break;
                }
        }
        /* The return: this watchd reports the appearance of the pending
         * path the module added ("report-appearance"; one without it would
         * not, which is the fallback's gap). */
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "d");
        g_file_monitor_cancel(m);
}

/* A monitor made in another thread emits in that thread's context (its
 * GFileMonitorSource), whatever thread watchd's events arrive on. */
static void test_thread(void) {
        g_autofree char *dir = make_dir();
        ThreadData t = { .dir = dir, .context = g_main_context_new() };
        GThread *thread;

        setup();
        thread = g_thread_new("monitor", monitor_thread, &t);
        g_thread_join(thread);
        g_main_context_unref(t.context);
        // cppcheck-suppress memleak ; g_thread_join() freed thread
}

/* The inotify watches this process holds (its instances' fdinfo lines):
 * the module's own inotify, as GLib's backend is not loaded here. */
static guint inotify_watches(void) {
        g_autoptr(GDir) fds = g_dir_open("/proc/self/fd", 0, NULL);
        const char *name;
        guint n = 0;

        g_assert_nonnull(fds);
        while ((name = g_dir_read_name(fds))) {
                g_autofree char *link = g_strdup_printf("/proc/self/fd/%s", name);
                g_autofree char *target = g_file_read_link(link, NULL);
                g_autofree char *info = g_strdup_printf("/proc/self/fdinfo/%s", name);
                g_autofree char *text = NULL;

                if (!target || !g_str_equal(target, "anon_inode:inotify") ||
                    !g_file_get_contents(info, &text, NULL, NULL))
                        continue;
                for (const char *p = text; (p = strstr(p, "inotify wd:")); p++)
                        n++;
        }
        return n;
}

static void write_text(const char *dir, const char *name, const char *text) {
        g_autofree char *p = g_build_filename(dir, name, NULL);

        g_assert_true(g_file_set_contents(p, text, -1, NULL));
}

/* Appends to a file and moves its mtime a second on (whatever the clock's
 * granularity), as a write a comparison must see. */
static void append_text(const char *dir, const char *name, const char *text) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
        struct timespec times[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
        struct stat sb;

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t) strlen(text));
        g_assert_cmpint(fstat(fd, &sb), ==, 0);
        times[1].tv_sec = sb.st_mtim.tv_sec + 1;
        g_assert_cmpint(futimens(fd, times), ==, 0);
        close(fd);
}

static GSubprocess *start_watchd_again(void) {
        g_autofree char *conf = g_build_filename(g_getenv("WATCHD_TEST_DIR"), "watchd.conf", NULL);
        g_autoptr(GError) error = NULL;
        GSubprocess *p = g_subprocess_new(G_SUBPROCESS_FLAGS_NONE, &error, g_getenv("WATCHD"), "--address",
                                          g_getenv("DBUS_SYSTEM_BUS_ADDRESS"), "--backend", "syscall", "--config", conf,
                                          NULL);

        g_assert_no_error(error);
        return p;
}

/* Runs the context until watchd's subscriptions number n and this process
 * holds inotify_n inotify watches. */
static void await_served(guint64 n, guint inotify_n) {
        gint64 deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;

        while (!(name_has_owner() && watchd_stat("subscriptions") == n && inotify_watches() == inotify_n)) {
                if (g_get_monotonic_time() > deadline)
                        g_error("watchd holds %" G_GUINT64_FORMAT " subscriptions (want %" G_GUINT64_FORMAT
                                "), the process %u inotify watches (want %u)",
                                name_has_owner() ? watchd_stat("subscriptions") : 0, n, inotify_watches(), inotify_n);
                g_main_context_iteration(NULL, FALSE);
                g_usleep(2000);
        }
}

/* A running monitor is never deaf: watchd is killed (SIGKILL, no goodbye)
 * and the monitor moves to the module's own inotify, reporting what was
 * made at once (before or after the move: the comparison of the directory
 * with what was reported closes the gap) and what is done while watchd is
 * away; when watchd is back it moves back (no inotify watch left, watchd
 * holds its subscription) and goes on. Before issue 26 it reported
 * nothing after the kill. */
static void test_never_deaf(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        g_autoptr(GSubprocess) again = NULL;
        pid_t pid = (pid_t) g_ascii_strtoll(g_getenv("WATCHD_TEST_PID"), NULL, 10);
        gint64 deadline;

        setup();
        write_text(dir, "old", "o");
        write_text(dir, "changed", "c");
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        await_served(1, 0);

        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        touch(dir, "at-once");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "at-once");
        deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        while (inotify_watches() != 1) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(2000);
        }
        touch(dir, "while-away");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "while-away");
        append_text(dir, "changed", "more");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CHANGED, "changed");
        {
                g_autofree char *old = g_build_filename(dir, "old", NULL);

                g_assert_cmpint(g_unlink(old), ==, 0);
        }
        await_seen(NULL, G_FILE_MONITOR_EVENT_DELETED, "old");

        again = start_watchd_again();
        await_served(1, 0);
        touch(dir, "after-return");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "after-return");
        g_assert_cmpuint(watchd_stat("events_delivered"), >=, 1);
        g_file_monitor_cancel(m);
        g_subprocess_send_signal(again, SIGTERM);
        g_subprocess_wait(again, NULL, NULL);
}

/* No silent gap across a restart: a file made, one changed and one deleted
 * while no watchd runs are reported once one is back, by a monitor made
 * while watchd was away too (served by the module's inotify, then handed
 * to watchd). */
static void test_made_while_away(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        g_autoptr(GSubprocess) again = NULL;
        pid_t pid = (pid_t) g_ascii_strtoll(g_getenv("WATCHD_TEST_PID"), NULL, 10);

        setup();
        /* The process's client first (GLib asks is_supported() once). */
        m = monitor_dir(dir, NULL);
        g_file_monitor_cancel(m);
        g_clear_object(&m);
        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        while (name_has_owner())
                g_usleep(2000);

        m = monitor_dir(dir, NULL);
        g_assert_cmpuint(inotify_watches(), ==, 1);
        touch(dir, "made-away");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "made-away");
        again = start_watchd_again();
        await_served(1, 0);
        touch(dir, "after");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "after");
        g_file_monitor_cancel(m);
        g_subprocess_send_signal(again, SIGTERM);
        g_subprocess_wait(again, NULL, NULL);
}

/* No silent gap across an overflow: watchd stopped (SIGSTOP) while more
 * happens in the directory than the client's backlog holds (with-watchd
 * runs it with max_pending_events_per_client = 16), so watchd drops them and
 * sends Overflow; the module compares the directory with what it reported
 * and reports the differences: a deleted file, a changed one, a new one.
 * Before issue 26 the module only logged the Overflow. */
static void test_overflow_resync(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        pid_t pid = (pid_t) g_ascii_strtoll(g_getenv("WATCHD_TEST_PID"), NULL, 10);

        setup();
        write_text(dir, "gone", "g");
        write_text(dir, "changed", "c");
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        await_served(1, 0);
        /* The module's thread has read the directory (its first scan). */
        touch(dir, "first");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "first");

        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 100; i++) {
                g_autofree char *n = g_strdup_printf("churn-%d", i);
                g_autofree char *p = g_build_filename(dir, n, NULL);

                touch(dir, n);
                g_assert_cmpint(g_unlink(p), ==, 0);
        }
        {
                g_autofree char *gone = g_build_filename(dir, "gone", NULL);

                g_assert_cmpint(g_unlink(gone), ==, 0);
        }
        append_text(dir, "changed", "more");
        touch(dir, "kept");
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        await_seen(NULL, G_FILE_MONITOR_EVENT_DELETED, "gone");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "kept");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CHANGED, "changed");
        g_assert_cmpuint(inotify_watches(), ==, 0);
        g_file_monitor_cancel(m);
}

/* watchd refuses a monitor (its limit of watches a client is 1 here:
 * LimitsExceeded): GLib's backend would have watched it, so the module's
 * inotify does. Before issue 26 that monitor was silent. */
static void test_refused(void) {
        g_autofree char *d1 = make_dir(), *d2 = make_dir();
        g_autoptr(GFileMonitor) m1 = NULL, m2 = NULL;

        setup();
        m1 = monitor_dir(d1, NULL);
        m2 = monitor_dir(d2, NULL);
        g_assert_cmpuint(watchd_stat("subscriptions"), ==, 1);
        g_assert_cmpuint(inotify_watches(), ==, 1);
        touch(d1, "served-by-watchd");
        touch(d2, "served-by-inotify");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "served-by-watchd");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "served-by-inotify");
        g_file_monitor_cancel(m1);
        g_file_monitor_cancel(m2);
}

/* The bus itself goes (dbus-daemon killed): the monitor moves to the
 * module's inotify for good. */
static void test_bus_gone(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL, later = NULL;
        pid_t bus = (pid_t) g_ascii_strtoll(g_getenv("WATCHD_TEST_BUS_PID"), NULL, 10);
        g_autofree char *dir2 = make_dir();
        gint64 deadline;

        setup();
        m = monitor_dir(dir, NULL);
        g_assert_cmpuint(inotify_watches(), ==, 0);
        g_assert_cmpint(bus, >, 0);
        g_assert_cmpint(kill(bus, SIGKILL), ==, 0);
        deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        while (inotify_watches() != 1) {
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(2000);
        }
        touch(dir, "no-bus");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "no-bus");
        /* A monitor made now is the module's inotify's at once. */
        later = monitor_dir(dir2, NULL);
        touch(dir2, "later");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "later");
        g_file_monitor_cancel(m);
        g_file_monitor_cancel(later);
}

/* WATCHD_GIO_INOTIFY=1 (meson sets it, and runs no watchd): the module is
 * chosen and serves every monitor with its own inotify. */
static void test_inotify_only(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;

        g_assert_cmpstr(g_getenv("WATCHD_GIO_INOTIFY"), ==, "1");
        setup();
        write_text(dir, "a", "a");
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, "GWatchdFileMonitor");
        g_assert_cmpuint(inotify_watches(), ==, 1);
        touch(dir, "b");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "b");
        {
                g_autofree char *a = g_build_filename(dir, "a", NULL), *c = g_build_filename(dir, "c", NULL);

                g_assert_cmpint(g_rename(a, c), ==, 0);
        }
        await_seen(NULL, G_FILE_MONITOR_EVENT_RENAMED, "a");
        g_file_monitor_cancel(m);
        g_assert_cmpuint(inotify_watches(), ==, 0);
}

/* Tracker takes a monitor's type name for its backend and enables live
 * monitoring only for the names it knows: in a process named as Tracker's
 * miner (this program, copied under that name by main()), the module's type
 * is "GInotifyDirectoryMonitor", with nothing set; watchd serves it all the
 * same. WATCHD_GIO_TRACKER_COMPAT=0 keeps the module's own name there
 * (/gio-module/type-name-override). */
static void test_type_name(void) {
        g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
        g_autofree char *base = g_path_get_basename(exe);
        g_autofree char *dir = make_dir();
        g_autoptr(GFileMonitor) m = NULL;
        gboolean override = g_strcmp0(g_getenv("WATCHD_GIO_TRACKER_COMPAT"), "0") == 0;

        g_assert_cmpstr(base, ==, "tracker-miner-fs-3");
        setup();
        m = monitor_dir(dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(m), ==, override ? "GWatchdFileMonitor" : "GInotifyDirectoryMonitor");
        await_served(1, 0);
        touch(dir, "x");
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "x");
        g_file_monitor_cancel(m);
}

/* GLib's "gio-nfs-file-monitor" point (files in an NFS home directory): the
 * module's monitor there says yes only to a watchd that polls remote file
 * systems (Capabilities "remote-polling"); WANT_NFS says which this run's
 * watchd is (meson runs it with the default config and with every [poll]
 * interval 0). */
static void test_nfs_point(void) {
        g_autoptr(GFile) f = g_file_new_for_path("/");
        g_autoptr(GFileMonitor) m = NULL;
        GIOExtensionPoint *point;
        GIOExtension *ext;
        GLocalFileMonitorClass *klass;
        gboolean want = g_strcmp0(g_getenv("WANT_NFS"), "1") == 0;

        /* GLib loads its modules when a monitor is first asked for. */
        m = g_file_monitor_directory(f, G_FILE_MONITOR_NONE, NULL, NULL);
        point = g_io_extension_point_lookup(G_NFS_FILE_MONITOR_EXTENSION_POINT_NAME);
        g_assert_nonnull(point);
        ext = g_io_extension_point_get_extension_by_name(point, "watchd");
        g_assert_nonnull(ext);
        klass = g_type_class_ref(g_io_extension_get_type(ext));
        g_assert_true(G_TYPE_CHECK_CLASS_TYPE(klass, G_TYPE_LOCAL_FILE_MONITOR));
        g_assert_cmpint(klass->is_supported(), ==, want);
        g_type_class_unref(klass);
}

/* The type-name cases run as a copy of this program named as Tracker's
 * miner (the module looks at /proc/self/exe). */
static void run_as_tracker(int argc, char **argv) {
        g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
        g_autofree char *base = g_path_get_basename(exe);
        g_autofree char *copy = NULL, *bytes = NULL;
        gboolean wanted = FALSE;
        gsize len;

        for (int i = 1; i < argc; i++)
                wanted |= g_str_has_prefix(argv[i], "/gio-module/type-name");
        if (!wanted || g_str_equal(base, "tracker-miner-fs-3"))
                return;
        copy = g_build_filename(g_getenv("WATCHD_TEST_DIR"), "tracker-miner-fs-3", NULL);
        if (!g_file_get_contents(exe, &bytes, &len, NULL) || !g_file_set_contents(copy, bytes, (gssize) len, NULL) ||
            g_chmod(copy, 0755) < 0)
                g_error("cannot copy %s to %s", exe, copy);
        argv[0] = copy;
        execv(copy, argv);
        g_error("execv %s: %s", copy, g_strerror(errno));
}

/* Issue 25: a watchd that answers AddWatch with 0, then sends WatchRemoved(0)
 * and Events for 0 (a use-after-free in libwatchd, `gio monitor` killed by
 * SIGSEGV). Played by the test on the bus (with-watchd --no-watchd): the
 * monitor it refused is silent, one warning says what watchd did, and the
 * process goes on with another monitor. */
static void test_hostile(void) {
        static const char *const caps[] = { "persistent", "report-appearance", NULL };
        g_autofree char *bad_dir = make_dir(), *good_dir = make_dir();
        g_autofree char *x = g_build_filename(bad_dir, "x", NULL), *y = g_build_filename(good_dir, "y", NULL);
        g_autofree char *client = NULL;
        g_autoptr(GFileMonitor) bad = NULL, good = NULL;
        FakeWatchd *fake = fake_watchd_start(g_getenv("DBUS_SYSTEM_BUS_ADDRESS"), caps);

        setup();
        fake_watchd_push_add_reply(fake, g_variant_new("(u)", 0), NULL);
        bad = monitor_dir(bad_dir, NULL);
        g_assert_cmpstr(G_OBJECT_TYPE_NAME(bad), ==, "GWatchdFileMonitor");
        client = fake_watchd_dup_last_caller(fake);
        g_test_expect_message("libwatchd", G_LOG_LEVEL_WARNING, "*never made*");
        fake_watchd_signal(fake, client, "WatchRemoved", g_variant_new("(us)", 0, "deleted"));
        fake_watchd_signal(fake, client, "Events",
                           g_variant_new_parsed("([(uint32 0, uint32 256, uint32 0, %s, '')],)", x));
        good = monitor_dir(good_dir, NULL);
        fake_watchd_signal(fake, client, "Events",
                           g_variant_new_parsed("([(uint32 1, uint32 256, uint32 0, %s, '')],)", y));
        await_seen(NULL, G_FILE_MONITOR_EVENT_CREATED, "y");
        g_test_assert_expected_messages();
        g_assert_null(find_seen(G_FILE_MONITOR_EVENT_CREATED, "x"));
        g_file_monitor_cancel(bad);
        g_file_monitor_cancel(good);
        fake_watchd_stop(fake);
        g_rmdir(bad_dir);
        g_rmdir(good_dir);
}

int main(int argc, char **argv) {
        run_as_tracker(argc, argv);
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/gio-module/chosen", test_chosen);
        g_test_add_func("/gio-module/forced", test_chosen);
        g_test_add_func("/gio-module/no-daemon", test_no_daemon);
        g_test_add_func("/gio-module/no-bus", test_no_bus);
        g_test_add_func("/gio-module/hung-bus", test_hung_bus);
        g_test_add_func("/gio-module/restart", test_restart);
        g_test_add_func("/gio-module/dir-recreated", test_dir_recreated);
        g_test_add_func("/gio-module/dir-recreated-fallback", test_dir_recreated_fallback);
        g_test_add_func("/gio-module/thread", test_thread);
        g_test_add_func("/gio-module/non-utf8", test_non_utf8);
        g_test_add_func("/gio-module/type-name-tracker", test_type_name);
        g_test_add_func("/gio-module/type-name-override", test_type_name);
        g_test_add_func("/gio-module/never-deaf", test_never_deaf);
        g_test_add_func("/gio-module/made-while-away", test_made_while_away);
        g_test_add_func("/gio-module/overflow-resync", test_overflow_resync);
        g_test_add_func("/gio-module/refused", test_refused);
        g_test_add_func("/gio-module/bus-gone", test_bus_gone);
        g_test_add_func("/gio-module/inotify-only", test_inotify_only);
        g_test_add_func("/gio-module/nfs-point", test_nfs_point);
        g_test_add_func("/gio-module/nfs-point-off", test_nfs_point);
        g_test_add_func("/gio-module/hostile", test_hostile);
        return g_test_run();
}
