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
#include "wt-fixture.h"

#define TIMEOUT_MS  20000
#define STORM_MASK  (IN_CREATE | IN_DELETE)
#define BATCH_PAIRS 500 /* a batch: 500 files created and deleted, 1000 events */

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

/* A client of the shared harness that counts what it receives: a storm's records are not kept. */
static WtClient *counter_new(WtBus *bus) {
        WtClient *c = wt_client_new(bus);

        c->events.count_only = TRUE;
        return c;
}

/* ---------------------------------------------------------------- the storm and the daemon's memory */

/* One batch: BATCH_PAIRS files created and deleted in dir (2 events each). */
static void storm_batch(const char *dir, guint batch) {
        char path[PATH_MAX];

        for (guint i = 0; i < BATCH_PAIRS; i++) {
                /* Names cycle, so the directory stays small; consecutive events differ, so none merge. */
                g_snprintf(path, sizeof(path), "%s/f%u", dir, (batch * BATCH_PAIRS + i) % 4096);
                wt_touch(path);
                g_assert_cmpint(unlink(path), ==, 0);
        }
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
        g_assert_cmpint(sd_bus_call_method(s->bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch",
                                           &error, &reply, "suu", dir, (guint32) STORM_MASK, (guint32) 0),
                        >=, 0);
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
static void test_slow_client(WtFixture *f, gconstpointer data) {
        WatchdInotify *stats = f->proxy;
        guint n = storm_events(), batches = n / (2 * BATCH_PAIRS);
        pid_t pid = wt_process_pid(f->daemon->process), bus_pid = wt_process_pid(f->bus->process);
        guint64 rss0, rss_max = 0, hwm, bus_hwm, before;
        WtClient *a = counter_new(f->bus);
        SlowClient s = {};
        gint64 t0;
        char after[PATH_MAX];

        wt_add_watch(a->proxy, f->dir, STORM_MASK, 0, NULL);
        slow_connect(&s, f->bus, f->dir);
        rss0 = status_kb(pid, "VmRSS:");

        t0 = g_get_monotonic_time();
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (!wt_await_records(&a->events, (guint64) (b + 1) * 2 * BATCH_PAIRS, TIMEOUT_MS))
                        g_error("The reading client got %" G_GUINT64_FORMAT " of %u events", a->events.n_records,
                                (b + 1) * 2 * BATCH_PAIRS);
                rss_max = MAX(rss_max, status_kb(pid, "VmRSS:"));
        }
        hwm = status_kb(pid, "VmHWM:");
        bus_hwm = status_kb(bus_pid, "VmHWM:");
        g_test_message("figure: slow-client storm: %u events in %.1f s; reading client got %" G_GUINT64_FORMAT
                       " events, %" G_GUINT64_FORMAT " Overflow",
                       batches * 2 * BATCH_PAIRS, (g_get_monotonic_time() - t0) / 1e6, a->events.n_records,
                       (guint64) a->events.n_overflows);
        g_test_message("figure: slow-client memory: watchd VmRSS %" G_GUINT64_FORMAT " kB before, %" G_GUINT64_FORMAT
                       " kB at most during the storm, VmHWM %" G_GUINT64_FORMAT
                       " kB; dbus-daemon VmHWM %" G_GUINT64_FORMAT " kB",
                       rss0, rss_max, hwm, bus_hwm);
        g_test_message("figure: slow-client daemon stats: events_read %" G_GUINT64_FORMAT
                       ", events_delivered %" G_GUINT64_FORMAT ", events_dropped %" G_GUINT64_FORMAT
                       ", overflows %" G_GUINT64_FORMAT ", pending %" G_GUINT64_FORMAT,
                       wt_stat(stats, "events_read"), wt_stat(stats, "events_delivered"),
                       wt_stat(stats, "events_dropped"), wt_stat(stats, "overflows"), wt_stat(stats, "pending_events"));

        /* Every event reached the client that reads, and nothing was lost for it. */
        g_assert_cmpuint(a->events.n_records, ==, (guint64) batches * 2 * BATCH_PAIRS);
        g_assert_cmpuint(a->events.n_overflows, ==, 0);
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
        wt_touch(after);
        slow_want_records = before + 1;
        g_assert_true(slow_read_until(&s, slow_has_records, TIMEOUT_MS));

        sd_bus_flush_close_unref(s.bus);
        wt_client_free(a);
}

/* ---------------------------------------------------------------- clients killed in a storm */

static GSubprocess *watchctl_spawn(WtFixture *f, const char *out_path, const char *err_path, const char *dir) {
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
static void test_killed_clients(WtFixture *f, gconstpointer data) {
        WatchdInotify *stats = f->proxy;
        GSubprocess *clients[4];
        guint batches = MAX(storm_events() / 10 / (2 * BATCH_PAIRS), 4);
        WtClient *a = counter_new(f->bus);
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
                       "subscriptions, clients and kernel watches back to 0",
                       batches / 2 * 2 * BATCH_PAIRS, batches * 2 * BATCH_PAIRS);

        /* And the daemon serves the next client as before. */
        id = wt_add_watch(a->proxy, f->dir, STORM_MASK, 0, NULL);
        g_assert_cmpuint(id, >, 0);
        storm_batch(f->dir, 0);
        g_assert_true(wt_await_records(&a->events, 2 * BATCH_PAIRS, TIMEOUT_MS));
        wt_client_free(a);
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
static void test_restart_under_load(WtFixture *f, gconstpointer data) {
        g_autofree char *out = g_build_filename(f->bus->dir, "watchctl.out", NULL);
        g_autofree char *err = g_build_filename(f->bus->dir, "watchctl.err", NULL);
        g_autofree char *marker = g_build_filename(f->dir, "after-restart", NULL);
        g_autoptr(WtClient) after = NULL; /* a client of the new daemon */
        WatchdInotify *stats = f->proxy;
        guint batches = MAX(storm_events() / 10 / (2 * BATCH_PAIRS), 4);
        GSubprocess *w = watchctl_spawn(f, out, err, f->dir);

        g_assert_true(wt_await_stat(stats, "subscriptions", 1, TIMEOUT_MS));
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (b == batches / 3) {
                        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0); /* no crash under load */
                        f->daemon = NULL;
                }
                if (b == 2 * batches / 3)
                        f->daemon = wt_daemon_start(f->bus, NULL);
        }
        after = wt_client_new(f->bus);
        g_assert_true(wt_await_stat(after->proxy, "subscriptions", 1, TIMEOUT_MS)); /* re-added by watchctl */
        g_assert_true(await_file_has(err, "watchd restarted"));

        wt_touch(marker);
        g_assert_true(await_file_has(out, "after-restart"));
        g_test_message("figure: restart: watchd stopped (exit 0) and started during a storm of %u events; "
                       "watchctl re-added its watch and warned",
                       batches * 2 * BATCH_PAIRS);

        g_subprocess_send_signal(w, SIGTERM);
        g_assert_true(g_subprocess_wait(w, NULL, NULL));
        g_object_unref(w);
}

/* ---------------------------------------------------------------- the object goes away */

/* A watched directory deleted in the middle of a storm: WatchRemoved(id, "deleted"). */
static void test_deleted_in_storm(WtFixture *f, gconstpointer data) {
        g_autofree char *sub = g_build_filename(f->dir, "sub", NULL);
        WatchdInotify *stats = f->proxy;
        WtClient *a = counter_new(f->bus), *b = counter_new(f->bus);
        guint32 ida, idb;
        char path[PATH_MAX];

        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        ida = wt_add_watch(a->proxy, sub, 0x7ff, 0, NULL); /* the eleven events of the API */
        idb = wt_add_watch(b->proxy, sub, IN_DELETE_SELF, 0, NULL);
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

        g_assert_true(wt_await_removed(&a->events, ida, "deleted", TIMEOUT_MS));
        g_assert_true(wt_await_removed(&b->events, idb, "deleted", TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "subscriptions", 0, TIMEOUT_MS));
        wt_client_free(a);
        wt_client_free(b);
}

/* A watched tmpfs unmounted while events flow: WatchRemoved(id, "unmounted") for every subscriber. */
static void test_unmounted(WtFixture *f, gconstpointer data) {
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *sub = g_build_filename(mnt, "sub", NULL);
        WatchdInotify *stats = f->proxy;
        WtClient *a, *b;
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
        ida = wt_add_watch(a->proxy, mnt, STORM_MASK, 0, NULL);
        ida2 = wt_add_watch(a->proxy, sub, STORM_MASK, 0, NULL);
        idb = wt_add_watch(b->proxy, mnt, IN_CREATE, 0, NULL);
        storm_batch(mnt, 0);
        storm_batch(sub, 1);
        g_assert_cmpint(umount2(mnt, 0), ==, 0);

        g_assert_true(wt_await_removed(&a->events, ida, "unmounted", TIMEOUT_MS));
        g_assert_true(wt_await_removed(&a->events, ida2, "unmounted", TIMEOUT_MS));
        g_assert_true(wt_await_removed(&b->events, idb, "unmounted", TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "kernel_watches", 0, TIMEOUT_MS));
        g_assert_true(wt_await_stat(stats, "subscriptions", 0, TIMEOUT_MS));
        wt_client_free(a);
        wt_client_free(b);
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
static void test_kernel_overflow(WtFixture *f, gconstpointer data) {
        g_autofree char *d1 = g_build_filename(f->dir, "one", NULL);
        g_autofree char *d2 = g_build_filename(f->dir, "two", NULL);
        g_autoptr(WtClient) s = NULL; /* a client of the new daemon, for GetStats */
        guint64 saved;
        WtClient *a, *b;
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

        s = wt_client_new(f->bus);
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        a = counter_new(f->bus);
        b = counter_new(f->bus);
        ida1 = wt_add_watch(a->proxy, d1, STORM_MASK, 0, NULL);
        ida2 = wt_add_watch(a->proxy, d2, IN_CREATE, 0, NULL);
        idb = wt_add_watch(b->proxy, d2, STORM_MASK, 0, NULL);

        pid = wt_process_pid(f->daemon->process);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        storm_batch(d1, 0);
        storm_batch(d2, 1);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);

        g_assert_true(wt_await_overflows(&a->events, 1, TIMEOUT_MS));
        g_assert_true(wt_await_overflows(&b->events, 1, TIMEOUT_MS));
        g_assert_true(wt_collector_has_overflow_id(&a->events, ida1));
        g_assert_true(wt_collector_has_overflow_id(&a->events, ida2));
        g_assert_false(wt_collector_has_overflow_id(&a->events, idb));
        g_assert_true(wt_collector_has_overflow_id(&b->events, idb));
        g_assert_false(wt_collector_has_overflow_id(&b->events, ida1));
        g_assert_false(wt_collector_has_overflow_id(&b->events, ida2));
        g_assert_cmpuint(wt_stat(s->proxy, "kernel_overflows"), >=, 1);
        g_test_message("figure: kernel-overflow: 2000 events into a 128-event kernel queue; "
                       "%" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " events delivered, every client got Overflow "
                       "naming its own subscriptions",
                       a->events.n_records, b->events.n_records);

        /* Events flow again (one at a time: the queue is still 128 events). */
        for (guint i = 0; i < 8; i++) {
                g_autofree char *p = g_strdup_printf("%s/again%u", d1, i);
                guint64 before = a->events.n_records;

                g_assert_true(g_file_set_contents(p, "", 0, NULL));
                g_assert_true(wt_await_records(&a->events, before + 1, TIMEOUT_MS));
        }
        wt_client_free(a);
        wt_client_free(b);
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
 * the flooder is held to max_watches_per_client (LimitsExceeded past it)
 * and the client that reads still gets every event, none lost.
 */
static void test_flood_during_storm(WtFixture *f, gconstpointer data) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        WatchdInotify *stats = f->proxy;
        g_autoptr(GSubprocess) flooder = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree char *self = g_file_read_link("/proc/self/exe", NULL), *out = NULL;
        g_autofree char *quiet = g_build_filename(f->bus->dir, "quiet", NULL);
        guint batches = MAX(storm_events() / 2 / (2 * BATCH_PAIRS), 4);
        guint64 calls = 0, ok = 0, limited = 0, other = 0;
        WtClient *a = counter_new(f->bus);
        gint64 t0;

        g_assert_cmpint(g_mkdir(quiet, 0755), ==, 0);
        wt_add_watch(a->proxy, f->dir, STORM_MASK, 0, NULL);
        flooder = g_subprocess_launcher_spawn(l, &error, self, "--flood", f->bus->address, quiet, NULL);
        g_assert_no_error(error);
        /* The flooder reaches its limit: 8192 subscriptions (max_watches_per_client here: the
         * default is sized from the kernel's limit, more than a flood needs to show), +1 for a. */
        g_assert_true(wt_await_stat(stats, "subscriptions", 8192 + 1, 60000));

        t0 = g_get_monotonic_time();
        for (guint b = 0; b < batches; b++) {
                storm_batch(f->dir, b);
                if (!wt_await_records(&a->events, (guint64) (b + 1) * 2 * BATCH_PAIRS, TIMEOUT_MS))
                        g_error("Under the flood the reading client got %" G_GUINT64_FORMAT " of %u events",
                                a->events.n_records, (b + 1) * 2 * BATCH_PAIRS);
        }
        g_subprocess_send_signal(flooder, SIGTERM);
        g_assert_true(g_subprocess_communicate_utf8(flooder, NULL, NULL, &out, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpint(sscanf(out, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT,
                               &calls, &ok, &limited, &other),
                        ==, 4);
        g_test_message("figure: flood: %u events in %.1f s while one client made %" G_GUINT64_FORMAT " AddWatch calls "
                       "(%" G_GUINT64_FORMAT " accepted, %" G_GUINT64_FORMAT " LimitsExceeded); the reading client got "
                       "%" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT " Overflow",
                       batches * 2 * BATCH_PAIRS, (g_get_monotonic_time() - t0) / 1e6, calls, ok, limited,
                       a->events.n_records, (guint64) a->events.n_overflows);
        g_assert_cmpuint(ok, ==, 8192);
        g_assert_cmpuint(other, ==, 0);
        g_assert_cmpuint(limited, >, 0);
        g_assert_cmpuint(a->events.n_records, ==, (guint64) batches * 2 * BATCH_PAIRS);
        g_assert_cmpuint(a->events.n_overflows, ==, 0);
        wt_client_free(a);
}

int main(int argc, char *argv[]) {
        if (argc == 4 && g_str_equal(argv[1], "--flood"))
                return flood_main(argv[2], argv[3]);
        g_test_init(&argc, &argv, NULL);

        WT_CASE("/robustness/slow-client", NULL, test_slow_client);
        WT_CASE("/robustness/killed-clients", NULL, test_killed_clients);
        WT_CASE("/robustness/restart-under-load", NULL, test_restart_under_load);
        WT_CASE("/robustness/deleted-in-storm", NULL, test_deleted_in_storm);
        WT_CASE("/robustness/unmounted", NULL, test_unmounted);
        WT_CASE("/robustness/kernel-overflow", NULL, test_kernel_overflow);
        WT_CASE("/robustness/flood-during-storm", "[limits]\nmax_watches_per_client = 8192\n", test_flood_during_storm);
        return g_test_run();
}
