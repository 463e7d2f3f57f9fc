/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-robustness - watchd under storms, slow and dying clients, restarts,
 * deletions, unmounts and kernel queue overflows
 *
 * The real daemon (syscall backend) on a private dbus-daemon, as in
 * tests/dbus (the same harness). Clients are GIO connections, a raw sd-bus
 * connection for the client that stops reading (GDBus reads its socket in
 * a thread of its own whatever the application does; sd-bus reads only when
 * asked), and the real watchctl for the clients that are killed and the one
 * that lives through a restart. Storms are written in batches, each awaited
 * at a client that keeps reading, so the kernel queue does not overflow
 * unless a test wants it to, and nothing is slept for.
 *
 * The storm size is $ROBUSTNESS_STORM events (default 200000), the bound on
 * watchd's peak RSS $ROBUSTNESS_MEMORY_BOUND_KB (default 65536, 0: not
 * checked, for sanitizer builds). Figures
 * (events, peak memory, losses and how they were signalled) are printed as
 * TAP comments "# figure: ..." for docs/RELIABILITY.md.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "watchd-api.h"
#include "watchd-test.h"

#define TIMEOUT_MS 20000
#define STORM_MASK (IN_CREATE | IN_DELETE)
#define BATCH_PAIRS 500         /* a batch: 500 files created and deleted, 1000 events */

static guint storm_events(void) {
        const char *s = g_getenv("ROBUSTNESS_STORM");
        guint64 n = s && *s ? g_ascii_strtoull(s, NULL, 10) : 200000;

        return (guint) MAX(n, 2 * BATCH_PAIRS);
}

static guint64 memory_bound_kb(void) {
        const char *s = g_getenv("ROBUSTNESS_MEMORY_BOUND_KB");
        return s && *s ? g_ascii_strtoull(s, NULL, 10) : 64 * 1024;
}

/* ---------------------------------------------------------------- a GIO client that counts */

typedef struct Counter {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        guint64 records;
        guint64 overflows;
        GArray *overflow_ids;   /* guint32 */
        GPtrArray *removed;     /* "id reason" */
        GHashTable *paths;      /* basename seen, for tests that look for one file */
} Counter;

static void on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        Counter *c = data;
        GVariantIter it;
        const char *path, *new_path;
        guint32 id, mask, cookie;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                c->records++;
                if (c->paths)
                        g_hash_table_add(c->paths, g_path_get_basename(path));
        }
}

static void on_overflow(WatchdInotify *p, GVariant *ids, gpointer data) {
        Counter *c = data;
        GVariantIter it;
        guint32 id;

        g_variant_iter_init(&it, ids);
        while (g_variant_iter_next(&it, "u", &id))
                g_array_append_val(c->overflow_ids, id);
        c->overflows++;
}

static void on_removed(WatchdInotify *p, guint id, const char *reason, gpointer data) {
        Counter *c = data;

        g_ptr_array_add(c->removed, g_strdup_printf("%u %s", id, reason));
}

static Counter *counter_new(WtBus *bus) {
        Counter *c = g_new0(Counter, 1);

        c->conn = wt_connect(bus);
        c->proxy = wt_proxy(c->conn);
        c->overflow_ids = g_array_new(FALSE, FALSE, sizeof(guint32));
        c->removed = g_ptr_array_new_with_free_func(g_free);
        g_signal_connect(c->proxy, "events", G_CALLBACK(on_events), c);
        g_signal_connect(c->proxy, "overflow", G_CALLBACK(on_overflow), c);
        g_signal_connect(c->proxy, "watch-removed", G_CALLBACK(on_removed), c);
        return c;
}

static void counter_free(Counter *c) {
        g_object_unref(c->proxy);
        g_dbus_connection_close_sync(c->conn, NULL, NULL);
        g_object_unref(c->conn);
        g_array_unref(c->overflow_ids);
        g_ptr_array_unref(c->removed);
        if (c->paths)
                g_hash_table_unref(c->paths);
        g_free(c);
}

static guint32 add_watch(Counter *c, const char *path, guint32 mask) {
        g_autoptr(GError) error = NULL;
        guint32 id = 0;

        watchd_inotify_call_add_watch_sync(c->proxy, path, mask, 0, &id, NULL, &error);
        g_assert_no_error(error);
        return id;
}

typedef struct AtLeast {
        guint64 *value;
        guint64 want;
} AtLeast;

static gboolean at_least_met(gpointer data) {
        AtLeast *a = data;
        return *a->value >= a->want;
}

static gboolean await_at_least(guint64 *value, guint64 want, int timeout_ms) {
        AtLeast a = { value, want };
        return wt_await(at_least_met, &a, timeout_ms);
}

static gboolean has_removed(Counter *c, guint32 id, const char *reason) {
        g_autofree char *want = g_strdup_printf("%u %s", id, reason);

        for (guint i = 0; i < c->removed->len; i++)
                if (g_str_equal(c->removed->pdata[i], want))
                        return TRUE;
        return FALSE;
}

static gboolean has_overflow_id(Counter *c, guint32 id) {
        for (guint i = 0; i < c->overflow_ids->len; i++)
                if (g_array_index(c->overflow_ids, guint32, i) == id)
                        return TRUE;
        return FALSE;
}

typedef struct RemovedWant {
        Counter *c;
        guint32 id;
        const char *reason;
} RemovedWant;

static gboolean removed_met(gpointer data) {
        RemovedWant *w = data;
        return has_removed(w->c, w->id, w->reason);
}

static void await_removed(Counter *c, guint32 id, const char *reason) {
        RemovedWant w = { c, id, reason };

        if (!wt_await(removed_met, &w, TIMEOUT_MS))
                g_error("No WatchRemoved(%u, \"%s\") within %d ms (%u notices)", id, reason, TIMEOUT_MS,
                        c->removed->len);
}

/* ---------------------------------------------------------------- the storm and the daemon's memory */

/* One batch: BATCH_PAIRS files created and deleted in dir (2 events each). */
static void storm_batch(const char *dir, guint batch) {
        char path[PATH_MAX];

        for (guint i = 0; i < BATCH_PAIRS; i++) {
                int fd;

                /* Names cycle, so the directory stays small; consecutive events differ, so none merge. */
                g_snprintf(path, sizeof(path), "%s/f%u", dir, (batch * BATCH_PAIRS + i) % 4096);
                fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                g_assert_cmpint(fd, >=, 0);
                close(fd);
                g_assert_cmpint(unlink(path), ==, 0);
        }
}

static pid_t process_pid(GSubprocess *p) {
        const char *id = g_subprocess_get_identifier(p);

        g_assert_nonnull(id);
        return (pid_t) g_ascii_strtoll(id, NULL, 10);
}

/* A field of /proc/PID/status in kB (VmRSS, VmHWM). */
static guint64 status_kb(pid_t pid, const char *field) {
        g_autofree char *path = g_strdup_printf("/proc/%d/status", (int) pid), *text = NULL;
        const char *p;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        p = strstr(text, field);
        g_assert_nonnull(p);
        return g_ascii_strtoull(p + strlen(field) + 1, NULL, 10);
}

/* ---------------------------------------------------------------- fixture */

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        char *dir;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer config) {
        f->bus = wt_bus_start();
        f->daemon = wt_daemon_start(f->bus, config);
        f->dir = g_build_filename(f->bus->dir, "files", NULL);
        g_assert_cmpint(g_mkdir(f->dir, 0755), ==, 0);
}

static void fixture_teardown(Fixture *f, gconstpointer config) {
        if (f->daemon) {
                int status = wt_daemon_stop(f->daemon);

                g_assert_cmpint(status, ==, 0);         /* a clean exit after all of it */
        }
        wt_bus_stop(f->bus);
        g_free(f->dir);
}

static WatchdInotify *stats_proxy(Fixture *f, GDBusConnection **ret_conn) {
        *ret_conn = wt_connect(f->bus);
        return wt_proxy(*ret_conn);
}

/* ---------------------------------------------------------------- a client that stops reading */

typedef struct SlowClient {
        sd_bus *bus;
        guint64 records;
        guint64 overflows;
        gboolean overflow_named_id;
        guint32 id;
} SlowClient;

static int slow_on_message(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SlowClient *s = userdata;
        int r;

        if (sd_bus_message_is_signal(m, WATCHD_INTERFACE, "Events")) {
                g_assert_cmpint(sd_bus_message_enter_container(m, 'a', "(uuuss)"), >=, 0);
                while ((r = sd_bus_message_skip(m, "(uuuss)")) > 0)
                        s->records++;
                g_assert_cmpint(r, >=, 0);
        } else if (sd_bus_message_is_signal(m, WATCHD_INTERFACE, "Overflow")) {
                const guint32 *ids;
                size_t sz;

                g_assert_cmpint(sd_bus_message_read_array(m, 'u', (const void **) &ids, &sz), >=, 0);
                for (size_t i = 0; i < sz / sizeof(guint32); i++)
                        if (ids[i] == s->id)
                                s->overflow_named_id = TRUE;
                s->overflows++;
        }
        return 0;
}

static void slow_connect(SlowClient *s, WtBus *bus, const char *dir) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;

        g_assert_cmpint(sd_bus_new(&s->bus), >=, 0);
        g_assert_cmpint(sd_bus_set_address(s->bus, bus->address), >=, 0);
        g_assert_cmpint(sd_bus_set_bus_client(s->bus, 1), >=, 0);
        g_assert_cmpint(sd_bus_start(s->bus), >=, 0);
        g_assert_cmpint(sd_bus_add_filter(s->bus, NULL, slow_on_message, s), >=, 0);
        g_assert_cmpint(sd_bus_call_method(s->bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH,
                                           WATCHD_INTERFACE, "AddWatch", &error, &reply, "suu",
                                           dir, (guint32) STORM_MASK, (guint32) 0), >=, 0);
        g_assert_cmpint(sd_bus_message_read(reply, "u", &s->id), >=, 0);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
}

/* Reads again until pred holds (or timeout_ms). */
static gboolean slow_read_until(SlowClient *s, gboolean (*pred)(SlowClient *s), int timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        while (!pred(s)) {
                int r = sd_bus_process(s->bus, NULL);

                g_assert_cmpint(r, >=, 0);
                if (r > 0)
                        continue;
                if (g_get_monotonic_time() > deadline)
                        return FALSE;
                g_assert_cmpint(sd_bus_wait(s->bus, 100000), >=, 0);
        }
        return TRUE;
}

static gboolean slow_has_overflow(SlowClient *s) {
        return s->overflows > 0;
}

static guint64 slow_want_records;
static gboolean slow_has_records(SlowClient *s) {
        return s->records >= slow_want_records;
}

/*
 * 200,000 events with one client that keeps reading and one that has
 * stopped: the reading one gets every event, the daemon's memory stays
 * under a bound, and the stopped one, when it reads again, finds an
 * Overflow naming its subscription, then is served as before.
 */
static void test_slow_client(Fixture *f, gconstpointer data) {
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        guint n = storm_events(), batches = n / (2 * BATCH_PAIRS);
        pid_t pid = process_pid(f->daemon->process), bus_pid = process_pid(f->bus->process);
        guint64 rss0, rss_max = 0, hwm, bus_hwm, before;
        Counter *a = counter_new(f->bus);
        SlowClient s = {};
        gint64 t0;
        char after[PATH_MAX];
        int fd;

        add_watch(a, f->dir, STORM_MASK);
        slow_connect(&s, f->bus, f->dir);
        rss0 = status_kb(pid, "VmRSS:");

        t0 = g_get_monotonic_time();
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (!await_at_least(&a->records, (guint64) (b + 1) * 2 * BATCH_PAIRS, TIMEOUT_MS))
                        g_error("The reading client got %" G_GUINT64_FORMAT " of %u events", a->records,
                                (b + 1) * 2 * BATCH_PAIRS);
                rss_max = MAX(rss_max, status_kb(pid, "VmRSS:"));
        }
        hwm = status_kb(pid, "VmHWM:");
        bus_hwm = status_kb(bus_pid, "VmHWM:");
        g_test_message("figure: slow-client storm: %u events in %.1f s; reading client got %" G_GUINT64_FORMAT
                       " events, %" G_GUINT64_FORMAT " Overflow",
                       batches * 2 * BATCH_PAIRS, (g_get_monotonic_time() - t0) / 1e6, a->records, a->overflows);
        g_test_message("figure: slow-client memory: watchd VmRSS %" G_GUINT64_FORMAT " kB before, %" G_GUINT64_FORMAT
                       " kB at most during the storm, VmHWM %" G_GUINT64_FORMAT " kB; dbus-daemon VmHWM %"
                       G_GUINT64_FORMAT " kB", rss0, rss_max, hwm, bus_hwm);
        g_test_message("figure: slow-client daemon stats: events_read %" G_GUINT64_FORMAT ", events_delivered %"
                       G_GUINT64_FORMAT ", events_dropped %" G_GUINT64_FORMAT ", overflows %" G_GUINT64_FORMAT
                       ", pending %" G_GUINT64_FORMAT,
                       wt_stat(stats, "events_read"), wt_stat(stats, "events_delivered"),
                       wt_stat(stats, "events_dropped"), wt_stat(stats, "overflows"), wt_stat(stats, "pending_events"));

        /* Every event reached the client that reads, and nothing was lost for it. */
        g_assert_cmpuint(a->records, ==, (guint64) batches * 2 * BATCH_PAIRS);
        g_assert_cmpuint(a->overflows, ==, 0);
        /* The bound: 64 MiB. The daemon keeps at most max_pending_events_per_client
         * (65536) records of about 100 bytes for a client that does not read,
         * about 7 MiB, and as many again are in flight in the bus; the rest is
         * its code and heap (about 5 MiB at rest). Measured: under 12 MiB.
         * Without the limit the backlog grows with the storm (20 MiB per
         * 200,000 events in the bus). A sanitizer build sets
         * ROBUSTNESS_MEMORY_BOUND_KB=0: its allocator's quarantine and shadow
         * memory say nothing about the daemon's. */
        if (memory_bound_kb() > 0)
                g_assert_cmpuint(hwm, <, memory_bound_kb());
        else
                g_test_message("memory bound not checked (ROBUSTNESS_MEMORY_BOUND_KB=0)");

        /* The stopped client reads again: first what was in flight, then Overflow. */
        if (!slow_read_until(&s, slow_has_overflow, TIMEOUT_MS))
                g_error("The client that stopped reading got %" G_GUINT64_FORMAT " of %u events and no Overflow",
                        s.records, batches * 2 * BATCH_PAIRS);
        g_assert_true(s.overflow_named_id);
        g_test_message("figure: slow-client: the stopped client got %" G_GUINT64_FORMAT " events then Overflow(%u)",
                       s.records, s.id);
        g_assert_cmpuint(s.records, <, (guint64) batches * 2 * BATCH_PAIRS);

        /* And it is served again. */
        before = s.records;
        g_snprintf(after, sizeof(after), "%s/after", f->dir);
        fd = open(after, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        close(fd);
        slow_want_records = before + 1;
        g_assert_true(slow_read_until(&s, slow_has_records, TIMEOUT_MS));

        sd_bus_flush_close_unref(s.bus);
        counter_free(a);
}

/* ---------------------------------------------------------------- clients killed in a storm */

static GSubprocess *watchctl_spawn(Fixture *f, const char *out_path, const char *err_path, const char *dir) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
        g_autoptr(GError) error = NULL;
        const char *watchctl = g_getenv("WATCHCTL");
        GSubprocess *p;

        g_assert_nonnull(watchctl);
        g_subprocess_launcher_set_stdout_file_path(l, out_path);
        g_subprocess_launcher_set_stderr_file_path(l, err_path);
        p = g_subprocess_launcher_spawn(l, &error, watchctl, "--address", f->bus->address, "watch", dir, NULL);
        g_assert_no_error(error);
        return p;
}

/* Four watchctl clients killed with SIGKILL halfway through a storm: the
 * daemon ends their subscriptions and releases the kernel watch. */
static void test_killed_clients(Fixture *f, gconstpointer data) {
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        GSubprocess *clients[4];
        guint batches = MAX(storm_events() / 10 / (2 * BATCH_PAIRS), 4);
        Counter *a = counter_new(f->bus);
        guint32 id;

        for (guint i = 0; i < G_N_ELEMENTS(clients); i++)
                clients[i] = watchctl_spawn(f, "/dev/null", "/dev/null", f->dir);
        g_assert_true(wt_await_stat(stats, "subscriptions", G_N_ELEMENTS(clients), TIMEOUT_MS));
        g_assert_cmpuint(wt_stat(stats, "kernel_watches"), ==, 1);

        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (b == batches / 2)
                        for (guint i = 0; i < G_N_ELEMENTS(clients); i++)
                                g_subprocess_send_signal(clients[i], SIGKILL);
        }
        for (guint i = 0; i < G_N_ELEMENTS(clients); i++) {
                g_assert_true(g_subprocess_wait(clients[i], NULL, NULL));
                g_assert_true(g_subprocess_get_if_signaled(clients[i]));
                g_object_unref(clients[i]);
        }

        /* Nothing left of them: no client, no subscription, no kernel watch. */
        g_assert_true(wt_await_stat(stats, "subscriptions", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "clients", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "kernel_watches", 0, TIMEOUT_MS));
        g_test_message("figure: killed-clients: 4 watchctl killed with SIGKILL after %u of %u events; "
                       "subscriptions, clients and kernel watches back to 0", batches / 2 * 2 * BATCH_PAIRS,
                       batches * 2 * BATCH_PAIRS);

        /* And the daemon serves the next client as before. */
        id = add_watch(a, f->dir, STORM_MASK);
        g_assert_cmpuint(id, >, 0);
        storm_batch(f->dir, 0);
        g_assert_true(await_at_least(&a->records, 2 * BATCH_PAIRS, TIMEOUT_MS));
        counter_free(a);
}

/* ---------------------------------------------------------------- a restart under load */

typedef struct FileHas {
        const char *path;
        const char *needle;
} FileHas;

static gboolean file_has_met(gpointer data) {
        FileHas *w = data;
        g_autofree char *text = NULL;

        return g_file_get_contents(w->path, &text, NULL, NULL) && strstr(text, w->needle);
}

static gboolean await_file_has(const char *path, const char *needle) {
        FileHas w = { path, needle };
        return wt_await(file_has_met, &w, TIMEOUT_MS);
}

/*
 * watchd stopped and started again while a storm goes on and watchctl
 * watches: the daemon exits cleanly (status 0), watchctl re-adds its watch
 * on the new daemon, says events may have been missed, and prints what
 * happens after.
 */
static void test_restart_under_load(Fixture *f, gconstpointer data) {
        g_autofree char *out = g_build_filename(f->bus->dir, "watchctl.out", NULL);
        g_autofree char *err = g_build_filename(f->bus->dir, "watchctl.err", NULL);
        g_autofree char *marker = g_build_filename(f->dir, "after-restart", NULL);
        g_autoptr(GDBusConnection) sconn = NULL, sconn2 = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        g_autoptr(WatchdInotify) stats2 = NULL;
        guint batches = MAX(storm_events() / 10 / (2 * BATCH_PAIRS), 4);
        GSubprocess *w = watchctl_spawn(f, out, err, f->dir);
        int fd;

        g_assert_true(wt_await_stat(stats, "subscriptions", 1, TIMEOUT_MS));
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (b == batches / 3) {
                        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);     /* no crash under load */
                        f->daemon = NULL;
                }
                if (b == 2 * batches / 3)
                        f->daemon = wt_daemon_start(f->bus, NULL);
        }
        stats2 = stats_proxy(f, &sconn2);
        g_assert_true(wt_await_stat(stats2, "subscriptions", 1, TIMEOUT_MS));    /* re-added by watchctl */
        g_assert_true(await_file_has(err, "watchd restarted"));

        fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        close(fd);
        g_assert_true(await_file_has(out, "after-restart"));
        g_test_message("figure: restart: watchd stopped (exit 0) and started during a storm of %u events; "
                       "watchctl re-added its watch and warned", batches * 2 * BATCH_PAIRS);

        g_subprocess_send_signal(w, SIGTERM);
        g_assert_true(g_subprocess_wait(w, NULL, NULL));
        g_object_unref(w);
}

/* ---------------------------------------------------------------- the object goes away */

/* A watched directory deleted in the middle of a storm: WatchRemoved(id, "deleted"). */
static void test_deleted_in_storm(Fixture *f, gconstpointer data) {
        g_autofree char *sub = g_build_filename(f->dir, "sub", NULL);
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        Counter *a = counter_new(f->bus), *b = counter_new(f->bus);
        guint32 ida, idb;
        char path[PATH_MAX];

        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        ida = add_watch(a, sub, 0x7ff);        /* the eleven events of the API */
        idb = add_watch(b, sub, IN_DELETE_SELF);
        storm_batch(sub, 0);
        for (guint i = 0; i < 64; i++) {
                g_snprintf(path, sizeof(path), "%s/f%u", sub, i);
                g_assert_true(g_file_set_contents(path, "x", 1, NULL));
        }
        /* rm -r while the daemon is still working through the storm */
        for (guint i = 0; i < 64; i++) {
                g_snprintf(path, sizeof(path), "%s/f%u", sub, i);
                g_assert_cmpint(unlink(path), ==, 0);
        }
        g_assert_cmpint(rmdir(sub), ==, 0);

        await_removed(a, ida, "deleted");
        await_removed(b, idb, "deleted");
        g_assert_true(wt_await_stat(stats, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "subscriptions", 0, TIMEOUT_MS));
        counter_free(a);
        counter_free(b);
}

/* A watched tmpfs unmounted while events flow: WatchRemoved(id, "unmounted") for every subscriber. */
static void test_unmounted(Fixture *f, gconstpointer data) {
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *sub = g_build_filename(mnt, "sub", NULL);
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        Counter *a, *b;
        guint32 ida, ida2, idb;

        if (geteuid() != 0) {
                g_test_skip("mounting a tmpfs needs root");
                return;
        }
        g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);
        if (mount("watchd-test", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m") < 0) {
                g_test_skip_printf("cannot mount a tmpfs: %s", g_strerror(errno));
                return;
        }
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        a = counter_new(f->bus);
        b = counter_new(f->bus);
        ida = add_watch(a, mnt, STORM_MASK);
        ida2 = add_watch(a, sub, STORM_MASK);
        idb = add_watch(b, mnt, IN_CREATE);
        storm_batch(mnt, 0);
        storm_batch(sub, 1);
        g_assert_cmpint(umount2(mnt, 0), ==, 0);

        await_removed(a, ida, "unmounted");
        await_removed(a, ida2, "unmounted");
        await_removed(b, idb, "unmounted");
        g_assert_true(wt_await_stat(stats, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "subscriptions", 0, TIMEOUT_MS));
        counter_free(a);
        counter_free(b);
}

/* ---------------------------------------------------------------- the kernel queue overflows */

static guint64 read_sysctl(const char *path) {
        g_autofree char *text = NULL;

        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        return g_ascii_strtoull(text, NULL, 10);
}

static void write_sysctl(const char *path, guint64 v) {
        g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT "\n", v);
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        /* Not g_file_set_contents(): /proc takes no temporary file and rename. */
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (gssize) strlen(text));
        close(fd);
}

#define MAX_QUEUED "/proc/sys/fs/inotify/max_queued_events"

/*
 * The daemon's kernel queue made small (max_queued_events is read when an
 * inotify instance is created, so it is lowered for watchd's start only and
 * restored at once), the daemon stopped while 2000 events happen, then let
 * go: every client with a subscription gets Overflow naming exactly its own
 * subscriptions, and events flow again afterwards.
 */
static void test_kernel_overflow(Fixture *f, gconstpointer data) {
        g_autofree char *d1 = g_build_filename(f->dir, "one", NULL);
        g_autofree char *d2 = g_build_filename(f->dir, "two", NULL);
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = NULL;
        guint64 saved;
        Counter *a, *b;
        guint32 ida1, ida2, idb;
        pid_t pid;

        if (geteuid() != 0) {
                g_test_skip("lowering max_queued_events needs root");
                return;
        }
        /* A daemon of our own, started with a 128-event kernel queue. */
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        saved = read_sysctl(MAX_QUEUED);
        write_sysctl(MAX_QUEUED, 128);
        f->daemon = wt_daemon_start(f->bus, NULL);
        write_sysctl(MAX_QUEUED, saved);
        g_assert_cmpuint(read_sysctl(MAX_QUEUED), ==, saved);

        stats = stats_proxy(f, &sconn);
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        a = counter_new(f->bus);
        b = counter_new(f->bus);
        ida1 = add_watch(a, d1, STORM_MASK);
        ida2 = add_watch(a, d2, IN_CREATE);
        idb = add_watch(b, d2, STORM_MASK);

        pid = process_pid(f->daemon->process);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        storm_batch(d1, 0);
        storm_batch(d2, 1);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        g_assert_true(await_at_least(&a->overflows, 1, TIMEOUT_MS));
        g_assert_true(await_at_least(&b->overflows, 1, TIMEOUT_MS));
        g_assert_true(has_overflow_id(a, ida1));
        g_assert_true(has_overflow_id(a, ida2));
        g_assert_false(has_overflow_id(a, idb));
        g_assert_true(has_overflow_id(b, idb));
        g_assert_false(has_overflow_id(b, ida1));
        g_assert_false(has_overflow_id(b, ida2));
        g_assert_cmpuint(wt_stat(stats, "kernel_overflows"), >=, 1);
        g_test_message("figure: kernel-overflow: 2000 events into a 128-event kernel queue; "
                       "%" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " events delivered, every client got Overflow "
                       "naming its own subscriptions", a->records, b->records);

        /* Events flow again (one at a time: the queue is still 128 events). */
        for (guint i = 0; i < 8; i++) {
                g_autofree char *p = g_strdup_printf("%s/again%u", d1, i);
                guint64 before = a->records;

                g_assert_true(g_file_set_contents(p, "", 0, NULL));
                g_assert_true(await_at_least(&a->records, before + 1, TIMEOUT_MS));
        }
        counter_free(a);
        counter_free(b);
}

/* ---------------------------------------------------------------- a client that floods calls */

/* The helper process (test-robustness --flood ADDRESS DIR): keeps FLOOD_WINDOW
 * AddWatch calls in flight on one connection until SIGTERM, then prints
 * "calls ok limited other". */
#define FLOOD_WINDOW 1000

typedef struct Flooder {
        WatchdInotify *proxy;
        const char *dir;
        guint64 ok, limited, other;
        gboolean stop;
} Flooder;

static void flood_send(Flooder *fl);

static void on_flood_reply(GObject *source, GAsyncResult *res, gpointer data) {
        Flooder *fl = data;
        g_autoptr(GError) error = NULL;
        g_autofree char *name = NULL;
        guint32 id;

        if (watchd_inotify_call_add_watch_finish(fl->proxy, &id, res, &error))
                fl->ok++;
        else if ((name = g_dbus_error_get_remote_error(error)) &&
                 g_str_equal(name, "org.freedesktop.DBus.Error.LimitsExceeded"))
                fl->limited++;
        else
                fl->other++;
        if (!fl->stop)
                flood_send(fl);
}

static void flood_send(Flooder *fl) {
        watchd_inotify_call_add_watch(fl->proxy, fl->dir, IN_CREATE, 0, NULL, on_flood_reply, fl);
}

static G_GNUC_NORETURN gboolean on_flood_sigterm(gpointer data) {
        Flooder *fl = data;

        fl->stop = TRUE;
        printf("%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT "\n",
               fl->ok + fl->limited + fl->other, fl->ok, fl->limited, fl->other);
        fflush(stdout);
        exit(0);
}

static G_GNUC_NORETURN int flood_main(const char *address, const char *dir) {
        WtBus bus = { .address = (char *) address };
        GDBusConnection *c = wt_connect(&bus);
        Flooder fl = { .proxy = wt_proxy(c), .dir = dir };

        g_unix_signal_add(SIGTERM, on_flood_sigterm, &fl);
        for (int i = 0; i < FLOOD_WINDOW; i++)
                flood_send(&fl);
        for (;;)
                g_main_context_iteration(NULL, TRUE);
}

/*
 * A storm while another client keeps 1,000 calls in flight without pause:
 * the flooder is held to max_watches_per_client (set to 8192, the old
 * default: the new one, sized from the kernel's limit, is more than a flood
 * needs to show; LimitsExceeded past it)
 * and the client that reads still gets every event, none lost.
 */
static void test_flood_during_storm(Fixture *f, gconstpointer data) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GDBusConnection) sconn = NULL;
        g_autoptr(WatchdInotify) stats = stats_proxy(f, &sconn);
        g_autoptr(GSubprocess) flooder = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *self = g_file_read_link("/proc/self/exe", NULL), *out = NULL;
        g_autofree char *quiet = g_build_filename(f->bus->dir, "quiet", NULL);
        guint batches = MAX(storm_events() / 2 / (2 * BATCH_PAIRS), 4);
        guint64 calls = 0, ok = 0, limited = 0, other = 0;
        Counter *a = counter_new(f->bus);
        gint64 t0;

        g_assert_cmpint(g_mkdir(quiet, 0755), ==, 0);
        add_watch(a, f->dir, STORM_MASK);
        flooder = g_subprocess_launcher_spawn(l, &error, self, "--flood", f->bus->address, quiet, NULL);
        g_assert_no_error(error);
        /* The flooder reaches its limit: 8192 subscriptions (max_watches_per_client here), +1 for a. */
        g_assert_true(wt_await_stat(stats, "subscriptions", 8192 + 1, 60000));

        t0 = g_get_monotonic_time();
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (!await_at_least(&a->records, (guint64) (b + 1) * 2 * BATCH_PAIRS, TIMEOUT_MS))
                        g_error("Under the flood the reading client got %" G_GUINT64_FORMAT " of %u events",
                                a->records, (b + 1) * 2 * BATCH_PAIRS);
        }
        g_subprocess_send_signal(flooder, SIGTERM);
        g_assert_true(g_subprocess_communicate_utf8(flooder, NULL, NULL, &out, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpint(sscanf(out, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT
                               " %" G_GUINT64_FORMAT, &calls, &ok, &limited, &other), ==, 4);
        g_test_message("figure: flood: %u events in %.1f s while one client made %" G_GUINT64_FORMAT " AddWatch calls "
                       "(%" G_GUINT64_FORMAT " accepted, %" G_GUINT64_FORMAT " LimitsExceeded); the reading client got "
                       "%" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " Overflow",
                       batches * 2 * BATCH_PAIRS, (g_get_monotonic_time() - t0) / 1e6, calls, ok, limited,
                       a->records, a->overflows);
        g_assert_cmpuint(ok, ==, 8192);
        g_assert_cmpuint(other, ==, 0);
        g_assert_cmpuint(limited, >, 0);
        g_assert_cmpuint(a->records, ==, (guint64) batches * 2 * BATCH_PAIRS);
        g_assert_cmpuint(a->overflows, ==, 0);
        counter_free(a);
}

int main(int argc, char *argv[]) {
        if (argc == 4 && g_str_equal(argv[1], "--flood"))
                return flood_main(argv[2], argv[3]);
        g_test_init(&argc, &argv, NULL);

#define T(name, config, fn) \
        g_test_add("/robustness/" name, Fixture, config, fixture_setup, fn, fixture_teardown)

        T("slow-client", NULL, test_slow_client);
        T("killed-clients", NULL, test_killed_clients);
        T("restart-under-load", NULL, test_restart_under_load);
        T("deleted-in-storm", NULL, test_deleted_in_storm);
        T("unmounted", NULL, test_unmounted);
        T("kernel-overflow", NULL, test_kernel_overflow);
        T("flood-during-storm", "[limits]\nmax_watches_per_client = 8192\n", test_flood_during_storm);
        return g_test_run();
}
