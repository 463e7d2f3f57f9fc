/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-system-bus - flow control on a bus whose policy is the system bus's
 *
 * watchd sends a client at most max_pending_events_per_client records that
 * it has not confirmed reading, and learns what the client has read from its
 * answer to the org.freedesktop.DBus.Peer.Ping sent after them. That Ping is
 * a method call from root to the client: Debian's system.conf denies every
 * method call that no policy file allows, so before our policy allowed it,
 * the bus answered each Ping with AccessDenied, watchd took that error for
 * the client's answer, and a client that never read was sent everything: in
 * the attack that found it, 200,300 records, no Overflow, dbus-daemon from
 * 4.8 to 67 MB and then signals dropped without a word.
 *
 * These tests run on a bus built from Debian's own system.conf with our
 * installed policy (wt_system_bus_start(), watchd as root), and the same
 * checks on the session-style bus of the other D-Bus tests:
 *   - a client (nobody) that stops reading while a storm runs gets at most
 *     its window and then Overflow when it reads again, watchd's and
 *     dbus-daemon's memory stay bounded, and a client that reads gets every
 *     record (stuck-client); the same after the client was stuck through
 *     many of sd-bus's timeouts: the bus holds one Ping for it, not one a
 *     timeout (stuck-client-long);
 *   - a client that reads gets a storm many windows long whole: each window
 *     needs a confirmed Ping, so its Pings get through and count; the same
 *     when its library answers Ping with an error of its own (reader);
 *   - with a policy that denies the Ping (ours without its Ping rule), the
 *     bus's error confirms nothing: a client that stops reading still gets
 *     no more than its window, and watchd says why in its log (ping-denied);
 *   - 128 clients of one user that never read do not take all the replies
 *     the bus lets watchd await: another user's reader is served (crowd);
 *   - the test bus really is strict, and our rule is narrow: a method call
 *     between two clients is denied, root may send Peer.Ping and nothing
 *     else of Peer (policy);
 *   - 128 clients of nobody that never read, subscribed to a directory
 *     whose paths are 4 KB long, through a storm there: watchd's RSS grows
 *     by at most max_pending_bytes_per_user and a constant, and root's
 *     reader of the same directory gets every record (memory-crowd).
 *
 * The hung-* cases, on the same bus, are in test-hung-calls.c and
 * test-hung-changes.c; the fixture, the reading client and the parent's
 * end of the child below are in system-bus-fixture.c, shared with them.
 *
 * The client that stops reading is a child process (fork, no exec) that
 * becomes nobody, connects with sd-bus, subscribes, tells the parent, and
 * then blocks on a pipe without reading its bus socket, so the bus buffers
 * what is sent to it; told to go on, it reads everything and reports.
 */

#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "system-bus-fixture.h"

#define E_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"

/* How much watchd and dbus-daemon may grow (VmRSS) while a client is stuck.
 * The stuck client's share is bounded by the window: WINDOW records on the
 * bus and WINDOW in watchd's queue, about 0.3 MB each. Before the fix the
 * bus kept every record of the storm for it: 60,000 records, about 25 MB
 * (measured: see the commit that added this test). The bound leaves room for
 * malloc's arenas and the reading client's traffic, far below that. */
#define RSS_GROWTH_MAX_KB (4u * 1024u)

/* What dbus-daemon may hold for the stuck client (Debug.Stats'
 * PeakOutgoingBytes of its connection): its window, about 0.3 MB, and room.
 * Before the fix it held the whole storm, about 16 MB. */
#define BUS_HELD_MAX (1024u * 1024u)

/* ---------------------------------------------------------------- the client that stops reading */

/* The child: never returns. Exit status: 0 done, 2 to 6 a step that failed. */
static void stuck_child(const char *address, const char *dir, bool until_quiet, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        StuckReport s = { .until_quiet = until_quiet };
        sd_bus *bus = NULL;
        uint64_t deadline, quiet_since;
        const char *name;
        uint32_t id;
        char c;

        /* The death signal is cleared when the credentials change: set after. */
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        if (sd_bus_call_method(bus, "org.example.Inotify", "/org/example/Inotify", "org.example.Inotify", "AddWatch",
                               &error, &reply, "suu", dir, (uint32_t) (IN_CREATE | IN_DELETE), (uint32_t) 0) < 0 ||
            sd_bus_message_read(reply, "u", &id) < 0) {
                dprintf(report_fd, "AddWatch failed: %s\n", error.message ? error.message : "?");
                _exit(4);
        }
        if (sd_bus_add_filter(bus, NULL, stuck_on_message, &s) < 0 || sd_bus_get_unique_name(bus, &name) < 0)
                _exit(5);
        dprintf(report_fd, "%u %s\n", id, name);

        /* Stuck: the bus socket is not read until the parent says so. */
        if (read(go_fd, &c, 1) != 1)
                _exit(6);

        deadline = g_get_monotonic_time() + (uint64_t) TIMEOUT_MS * 1000;
        quiet_since = g_get_monotonic_time();
        while (!s.done && (uint64_t) g_get_monotonic_time() < deadline) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        _exit(7);
                if (r > 0) {
                        quiet_since = g_get_monotonic_time();
                        continue;
                }
                if (s.until_quiet && (uint64_t) g_get_monotonic_time() - quiet_since > G_USEC_PER_SEC)
                        break;
                (void) sd_bus_wait(bus, 100000);
        }
        dprintf(report_fd, "%u %u %u %u %u %d\n", s.records, s.records_after_overflow, s.overflows, s.overflow_id,
                s.pings_before_overflow, s.done);
        _exit(0);
}

/* A crowd of clients that never read: n connections of nobody, each with a
 * subscription to dir. The child never returns: it waits for the parent to
 * go (its end of go_fd closes), then exits, and so do its connections. */
static void crowd_child(const char *address, const char *dir, unsigned n, int report_fd, int go_fd) {
        char c;

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        for (unsigned i = 0; i < n; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus *bus = NULL;

                if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
                    sd_bus_start(bus) < 0)
                        _exit(3);
                if (sd_bus_call_method(bus, "org.example.Inotify", "/org/example/Inotify", "org.example.Inotify",
                                       "AddWatch", &error, NULL, "suu", dir, (uint32_t) IN_CREATE, (uint32_t) 0) < 0) {
                        dprintf(report_fd, "AddWatch %u failed: %s\n", i, error.message ? error.message : "?");
                        _exit(4);
                }
                /* Kept open, never read again. */
        }
        dprintf(report_fd, "%u 0\n", n);
        (void) read(go_fd, &c, 1);
        _exit(0);
}

/* crowd > 0: crowd_child() with that many connections, else stuck_child(). */
static void stuck_start_full(Stuck *st, WtBus *bus, const char *dir, bool until_quiet, unsigned crowd) {
        int report[2], go[2];
        g_autofree char *line = NULL;

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        st->pid = fork();
        g_assert_cmpint(st->pid, >=, 0);
        if (st->pid == 0) {
                close(report[0]);
                close(go[1]);
                if (crowd > 0)
                        crowd_child(bus->address, dir, crowd, report[1], go[0]);
                stuck_child(bus->address, dir, until_quiet, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        st->report_fd = report[0];
        st->go_fd = go[1];
        line = stuck_read_line(st);
        if (!g_ascii_isdigit(line[0]) || !strchr(line, ' '))
                g_error("The stuck client could not subscribe: %s", line);
        st->id = (guint32) g_ascii_strtoull(line, NULL, 10);
        st->name = g_strdup(strchr(line, ' ') + 1);
}

static void stuck_start(Stuck *st, WtBus *bus, const char *dir, bool until_quiet) {
        stuck_start_full(st, bus, dir, until_quiet, 0);
}

/* Ends a crowd: its connections close with it. */
static void crowd_end(Stuck *st) {
        int status = 0;

        close(st->go_fd);
        g_assert_cmpint(waitpid(st->pid, &status, 0), ==, st->pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st->report_fd);
        g_free(st->name);
}

/* The child's report, once it is done (stuck_go() let it read). */
static StuckReport stuck_finish(Stuck *st) {
        g_autofree char *line = stuck_read_line(st);
        StuckReport s = {};
        int done = 0, status = 0;

        if (sscanf(line, "%u %u %u %u %u %d", &s.records, &s.records_after_overflow, &s.overflows, &s.overflow_id,
                   &s.pings_before_overflow, &done) != 6)
                g_error("The stuck client's report is '%s'", line);
        s.done = done;
        g_assert_cmpint(waitpid(st->pid, &status, 0), ==, st->pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st->report_fd);
        close(st->go_fd);
        g_free(st->name);
        return s;
}

/* ---------------------------------------------------------------- memory */

static guint64 rss_kb(pid_t pid) {
        g_autofree char *id = g_strdup_printf("%d", (int) pid);

        return wt_proc_status(id, "VmRSS");
}

typedef struct Rss {
        pid_t pid;
        guint64 base, peak;
} Rss;

static void rss_start(Rss *r, GSubprocess *p) {
        const char *id = g_subprocess_get_identifier(p);

        g_assert_nonnull(id);
        r->pid = (pid_t) g_ascii_strtoll(id, NULL, 10);
        r->base = r->peak = rss_kb(r->pid);
}

static void rss_sample(Rss *r) {
        r->peak = MAX(r->peak, rss_kb(r->pid));
}

/* The most bytes dbus-daemon held for connection name at once, waiting for it
 * to read them (its Debug.Stats interface, which system.conf lets root use). */
static guint64 bus_peak_outgoing(GDBusConnection *c, const char *name) {
        g_autoptr(GVariant) r = NULL, stats = NULL;
        g_autoptr(GError) error = NULL;
        guint32 peak = 0;

        r = g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus.Debug.Stats", "GetConnectionStats",
                                        g_variant_new("(s)", name), G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                        5000, NULL, &error);
        g_assert_no_error(error);
        stats = g_variant_get_child_value(r, 0);
        g_assert_true(g_variant_lookup(stats, "PeakOutgoingBytes", "u", &peak));
        return peak;
}

/* Whether watchd's RSS is its own figure: not under a wrapper, and not
 * under ASan, whose quarantine and shadow memory grow it
 * (tests/robustness/sanitize sets ROBUSTNESS_MEMORY_BOUND_KB=0 for that). */
static gboolean watchd_rss_meaningful(void) {
        return !watchd_wrapped() && g_strcmp0(g_getenv("ROBUSTNESS_MEMORY_BOUND_KB"), "0") != 0;
}

/* ---------------------------------------------------------------- tests */

static gboolean never(gpointer data) {
        return FALSE;
}

/*
 * A client that stops reading during a storm: it is sent its window, its
 * backlog is dropped, it gets Overflow when it reads again (and what came
 * after); watchd and dbus-daemon stay small; the reading client gets all.
 *
 * With stuck_ms, the client is stuck that long before the storm, with a
 * Ping pending and sd-bus's default timeout in watchd cut from 25 s to
 * bus_timeout: a stuck client must cost one pending Ping at the bus, not one
 * per timeout. dbus-daemon never expires a pending reply and lets our
 * connection await 128 (max_replies_per_connection), then refuses every
 * further Ping, to every client, with LimitsExceeded: at 25 s a timeout, one
 * stuck client would take them all in 53 minutes.
 */
static void test_stuck_client(Fixture *f, gconstpointer data) {
        const Params *p = data;
        Reader reader;
        Stuck stuck;
        StuckReport s;
        Rss bus_rss, daemon_rss;
        guint64 dropped, bus_held;

        if (!f->bus)
                return;
        stuck_start(&stuck, f->bus, f->dir, false);
        reader_init(&reader, f->bus, p->mode);
        reader.id = add_watch(reader.proxy, f->dir);
        if (p->stuck_ms > 0) {
                /* A few records, so that a Ping follows them and waits at the bus. */
                for (guint i = 0; i < 8; i++)
                        create_remove(f, "before", i);
                await_records(&reader, 16);
                /* Nothing to await: this is the time in which nothing may go wrong. */
                (void) wt_await(never, NULL, p->stuck_ms);
                reader.n_records = 0;
        }
        rss_start(&bus_rss, f->bus->process);
        rss_start(&daemon_rss, f->daemon->process);

        for (guint i = 0; i < STORM_PAIRS; i++) {
                create_remove(f, "s", i);
                if ((i + 1) % ROUND_PAIRS == 0 || i + 1 == STORM_PAIRS) {
                        await_records(&reader, 2 * (i + 1));
                        rss_sample(&bus_rss);
                        rss_sample(&daemon_rss);
                }
        }
        g_assert_cmpuint(reader.n_records, ==, 2 * STORM_PAIRS);
        g_assert_cmpuint(reader.n_overflows, ==, 0);
        /* What watchd still holds for the stuck client went to the bus by now, if it was going. */
        (void) wt_stat(reader.proxy, "clients");
        rss_sample(&bus_rss);
        rss_sample(&daemon_rss);
        bus_held = bus_peak_outgoing(reader.conn, stuck.name);

        g_test_message("stuck client: the bus held at most %" G_GUINT64_FORMAT " bytes for it; "
                       "dbus-daemon %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " kB, "
                       "watchd %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " kB over %u records; "
                       "the reader answered %d Pings",
                       bus_held, bus_rss.base, bus_rss.peak, daemon_rss.base, daemon_rss.peak, 2 * STORM_PAIRS,
                       g_atomic_int_get(&reader.n_pings));

        /* It reads again: a marker is made every 50 ms until it has seen Overflow and a marker after it. */
        stuck_go(&stuck);
        for (guint i = 0;; i++) {
                struct pollfd pfd = { .fd = stuck.report_fd, .events = POLLIN };

                create_remove(f, "end", i);
                if (poll(&pfd, 1, 50) > 0 || i > TIMEOUT_MS / 50)
                        break;
        }
        s = stuck_finish(&stuck);
        dropped = wt_stat(reader.proxy, "events_dropped");
        g_test_message("stuck client: %u records (%u after its Overflow), %u Overflow, %u Pings before it; %" G_GUINT64_FORMAT
                       " records dropped",
                       s.records, s.records_after_overflow, s.overflows, s.pings_before_overflow, dropped);

        if (!s.done)
                g_error("The stuck client got no Overflow and marker after it when it read again: "
                        "%u records, %u Overflow",
                        s.records, s.overflows);
        g_assert_cmpuint(s.overflows, ==, 1);
        g_assert_cmpuint(s.overflow_id, ==, stuck.id);
        /* The bus held one Ping for it, however long it was stuck. */
        g_assert_cmpuint(s.pings_before_overflow, ==, 1);
        /* Its window before the Overflow, and at most its queue's worth after it. */
        g_assert_cmpuint(s.records - s.records_after_overflow, <=, WINDOW);
        g_assert_cmpuint(s.records_after_overflow, <=, WINDOW + TIMEOUT_MS / 50);
        g_assert_cmpuint(dropped, >=, 2 * STORM_PAIRS - 2 * WINDOW);
        g_assert_cmpuint(wt_stat(reader.proxy, "overflows"), ==, 1);

        g_assert_cmpuint(bus_held, <, BUS_HELD_MAX);
        g_assert_cmpuint(bus_rss.peak - bus_rss.base, <, RSS_GROWTH_MAX_KB);
        if (watchd_rss_meaningful())
                g_assert_cmpuint(daemon_rss.peak - daemon_rss.base, <, RSS_GROWTH_MAX_KB);
        else
                g_test_message("watchd's RSS bound not checked (a wrapper or ASan owns its memory)");
        /* The reader's Pings reached it (its records did not go unconfirmed). */
        g_assert_cmpint(g_atomic_int_get(&reader.n_pings), >, 0);
        reader_done(&reader);
}

/*
 * A client that reads gets a storm thirty windows long, whole: every window
 * after the first needs a Ping it answered, so its Pings reach it and count
 * (with the answer GDBus gives, or an error the client sends itself).
 */
static void test_reader(Fixture *f, gconstpointer data) {
        const Params *p = data;
        const guint pairs = 16 * WINDOW;
        g_autofree char *log = NULL;
        Reader reader;

        if (!f->bus)
                return;
        reader_init(&reader, f->bus, p->mode);
        reader.id = add_watch(reader.proxy, f->dir);
        for (guint i = 0; i < pairs; i++) {
                create_remove(f, "r", i);
                if ((i + 1) % ROUND_PAIRS == 0)
                        await_records(&reader, 2 * (i + 1));
        }
        g_assert_cmpuint(reader.n_records, ==, 2 * pairs);
        g_assert_cmpuint(reader.n_overflows, ==, 0);
        g_assert_cmpint(g_atomic_int_get(&reader.n_pings), >=, (gint) (2 * pairs / WINDOW) - 1);
        g_assert_cmpuint(wt_stat(reader.proxy, "events_dropped"), ==, 0);
        log = wt_daemon_log(f->daemon);
        g_assert_null(strstr(log, "refused our Ping"));
        g_test_message("reader: %u records, %d Pings answered", reader.n_records, g_atomic_int_get(&reader.n_pings));
        reader_done(&reader);
}

/*
 * With a policy that denies root's Ping, the bus answers each Ping with
 * AccessDenied, which confirms nothing: a client that stops reading, and
 * one that reads, are each sent at most their window, and no more (their
 * later records are dropped; an Overflow would wait for a confirmation that
 * cannot come: see docs/RELIABILITY.md). watchd's log says why.
 */
static void test_ping_denied(Fixture *f, gconstpointer data) {
        const guint pairs = 6 * WINDOW; /* 12,288 records: below the kernel's queue */
        g_autofree char *log = NULL;
        Reader reader;
        Stuck stuck;
        StuckReport s;
        Rss bus_rss;

        if (!f->bus)
                return;
        stuck_start(&stuck, f->bus, f->dir, true);
        reader_init(&reader, f->bus, PING_ANSWER);
        reader.id = add_watch(reader.proxy, f->dir);
        rss_start(&bus_rss, f->bus->process);

        for (guint i = 0; i < pairs; i++)
                create_remove(f, "d", i);
        if (!wt_await_stat(reader.proxy, "events_read", 2 * pairs, TIMEOUT_MS))
                g_error("watchd read %" G_GUINT64_FORMAT " of %u events", wt_stat(reader.proxy, "events_read"),
                        2 * pairs);
        /* watchd flushed what it read before it answered that GetStats, and
         * the bus routed what it sent before it routed the answer. */
        rss_sample(&bus_rss);

        stuck_go(&stuck);
        s = stuck_finish(&stuck);
        /* The reader's signals, received by GDBus's thread by the GetStats answer, are handled here. */
        while (g_main_context_iteration(NULL, FALSE))
                ;
        g_test_message("Ping denied: the stuck client got %u records, the reader %u; dbus-daemon %" G_GUINT64_FORMAT
                       " -> %" G_GUINT64_FORMAT " kB; %d Pings reached the reader",
                       s.records, reader.n_records, bus_rss.base, bus_rss.peak, g_atomic_int_get(&reader.n_pings));
        g_assert_cmpint(g_atomic_int_get(&reader.n_pings), ==, 0);
        g_assert_cmpuint(s.records, <=, WINDOW);
        g_assert_cmpuint(reader.n_records, <=, WINDOW);
        g_assert_cmpuint(wt_stat(reader.proxy, "events_dropped"), >, 0);
        g_assert_cmpuint(bus_rss.peak - bus_rss.base, <, RSS_GROWTH_MAX_KB);

        log = wt_daemon_log(f->daemon);
        if (!strstr(log, E_ACCESS_DENIED))
                g_error("watchd's log does not say that the bus denied its Ping:\n%s", log);
        reader_done(&reader);
}

/*
 * 128 clients of one user (nobody: max_clients_per_user) that never read,
 * each with a Ping waiting at the bus, and then a client of another user
 * that reads: its storm arrives whole. dbus-daemon lets our connection await
 * 128 replies; if the crowd's Pings took them all, the bus would refuse the
 * reader's Ping (LimitsExceeded), which confirms nothing, and the reader
 * would be held to its window. The crowd holds at most PINGS_PER_USER_MAX.
 */
static void test_crowd(Fixture *f, gconstpointer data) {
        const guint crowd = 128, pairs = 8 * WINDOW;
        g_autofree char *quiet = g_build_filename(f->dir, "quiet", NULL), *q = NULL;
        Reader reader;
        Stuck st;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir(quiet, 0755), ==, 0);
        stuck_start_full(&st, f->bus, quiet, false, crowd);
        reader_init(&reader, f->bus, PING_ANSWER);
        reader.id = add_watch(reader.proxy, f->dir);

        /* One record for each of the crowd, and a Ping after it. */
        q = g_build_filename(quiet, "q", NULL);
        g_assert_cmpint(g_mkdir(q, 0755), ==, 0);
        if (!wt_await_stat(reader.proxy, "events_delivered", crowd, TIMEOUT_MS))
                g_error("%" G_GUINT64_FORMAT " records went to the crowd, not %u",
                        wt_stat(reader.proxy, "events_delivered"), crowd);
        /* The Pings went out before that answer: the bus holds them now. */

        for (guint i = 0; i < pairs; i++) {
                create_remove(f, "c", i);
                if ((i + 1) % ROUND_PAIRS == 0)
                        await_records(&reader, 2 * (i + 1));
        }
        g_assert_cmpuint(reader.n_records, ==, 2 * pairs);
        g_assert_cmpuint(reader.n_overflows, ==, 0);
        g_test_message("crowd of %u stuck clients: the reader got %u records, %d Pings", crowd, reader.n_records,
                       g_atomic_int_get(&reader.n_pings));
        reader_done(&reader);
        crowd_end(&st);
}

/* The method Introspect, from one client to another; NULL if the bus allowed it, else the error's name. */
static char *call_error(GDBusConnection *from, GDBusConnection *to, const char *iface, const char *method) {
        g_autoptr(GVariant) r = NULL;
        g_autoptr(GError) error = NULL;

        r = g_dbus_connection_call_sync(from, g_dbus_connection_get_unique_name(to), "/", iface, method, NULL, NULL,
                                        G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
        return r ? NULL : g_dbus_error_get_remote_error(error);
}

/*
 * The test bus is as strict as the system bus, and our rule opens only what
 * watchd needs: root may send Peer.Ping to a client, not Peer's other method
 * and not Introspect; on the session-style bus everything is allowed.
 */
static void test_policy(Fixture *f, gconstpointer data) {
        const Params *p = data;
        g_autoptr(GDBusConnection) a = NULL, b = NULL;
        g_autofree char *ping = NULL, *machine_id = NULL, *introspect = NULL;

        if (!f->bus)
                return;
        a = wt_connect(f->bus);
        b = wt_connect(f->bus);
        ping = call_error(a, b, "org.freedesktop.DBus.Peer", "Ping");
        machine_id = call_error(a, b, "org.freedesktop.DBus.Peer", "GetMachineId");
        introspect = call_error(a, b, "org.freedesktop.DBus.Introspectable", "Introspect");
        g_assert_null(ping);
        if (p->system) {
                g_assert_cmpstr(machine_id, ==, E_ACCESS_DENIED);
                g_assert_cmpstr(introspect, ==, E_ACCESS_DENIED);
        } else {
                /* GDBus answers GetMachineId itself; an object-less "/" has no Introspect data but answers. */
                g_assert_null(machine_id);
                g_assert_null(introspect);
        }
        g_dbus_connection_close_sync(a, NULL, NULL);
        g_dbus_connection_close_sync(b, NULL, NULL);
}

/* The byte caps of memory-crowd: small, so that a storm passes them many times. */
#define CROWD_CLIENT_BYTES (4u << 20)
#define CROWD_USER_BYTES   (16u << 20)
#define CROWD_CONFIG       "[limits]\nmax_pending_bytes_per_client = 4M\nmax_pending_bytes_per_user = 16M\n"
/* What watchd may grow by, past the user's cap: malloc's arenas and free
 * lists, sd-bus's buffers, the reader's traffic. */
#define CROWD_RSS_CONSTANT_KB (16u * 1024u)

/* A directory under f->dir whose path is about len bytes long. */
static char *deep_dir(Fixture *f, size_t len) {
        g_autofree char *comp = g_strnfill(200, 'd');
        char *path = g_strdup(f->dir);

        while (strlen(path) + 201 < len) {
                char *next = g_build_filename(path, comp, NULL);

                g_assert_cmpint(g_mkdir(next, 0755), ==, 0);
                g_free(path);
                path = next;
        }
        return path;
}

static void test_memory_crowd(Fixture *f, gconstpointer data) {
        const guint crowd = 128, pairs = 24 * ROUND_PAIRS;
        g_autofree char *deep = NULL, *pad = g_strnfill(200, 'f');
        guint64 held_records = 0, dropped;
        Reader reader;
        Stuck st;
        Rss rss;

        if (!f->bus)
                return;
        deep = deep_dir(f, 3900);
        stuck_start_full(&st, f->bus, deep, false, crowd);
        reader_init(&reader, f->bus, PING_ANSWER);
        reader.id = add_watch(reader.proxy, deep);
        rss_start(&rss, f->daemon->process);

        for (guint i = 0; i < pairs; i++) {
                g_autofree char *p = g_strdup_printf("%s/%06u-%s", deep, i, pad);
                int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

                g_assert_cmpint(fd, >=, 0);
                g_assert_cmpint(close(fd), ==, 0);
                g_assert_cmpint(unlink(p), ==, 0);
                if ((i + 1) % ROUND_PAIRS == 0) {
                        await_records(&reader, 2 * (i + 1));
                        rss_sample(&rss);
                }
        }
        g_assert_cmpuint(reader.n_records, ==, 2 * pairs);
        g_assert_cmpuint(reader.n_overflows, ==, 0);
        rss_sample(&rss);
        dropped = wt_stat(reader.proxy, "events_dropped");
        (void) held_records;
        g_test_message("figure: memory-crowd: %u clients of nobody that never read, records of %zu-byte paths, "
                       "%u created: watchd's RSS %" G_GUINT64_FORMAT " -> peak %" G_GUINT64_FORMAT
                       " kB (+%" G_GUINT64_FORMAT " kB; cap per user %u kB), %" G_GUINT64_FORMAT " records dropped",
                       crowd, strlen(deep) + 1 + 207, pairs, rss.base, rss.peak, rss.peak - rss.base,
                       CROWD_USER_BYTES / 1024, dropped);
        /* Without the byte caps every client of the crowd held 1024 of them queued and
         * 1024 unconfirmed: 128 x 2048 x 4.3 KB, about 1.1 GB. */
        if (watchd_rss_meaningful())
                g_assert_cmpuint(rss.peak - rss.base, <=, CROWD_USER_BYTES / 1024 + CROWD_RSS_CONSTANT_KB);
        g_assert_cmpuint(dropped, >, 0);
        reader_done(&reader);
        crowd_end(&st);
}

int main(int argc, char *argv[]) {
        static const Params system_bus = { .system = TRUE }, session_bus = { .system = FALSE },
                            system_bus_error = { .system = TRUE, .mode = PING_ERROR },
                            system_bus_denied = { .system = TRUE, .deny_ping = TRUE },
                            system_bus_long = { .system = TRUE, .bus_timeout = "250ms", .stuck_ms = 3000 },
                            system_bus_caps = { .system = TRUE, .config = CROWD_CONFIG };

        g_test_init(&argc, &argv, NULL);

        g_test_add("/system-bus/policy", Fixture, &system_bus, fixture_setup, test_policy, fixture_teardown);
        g_test_add("/session-bus/policy", Fixture, &session_bus, fixture_setup, test_policy, fixture_teardown);
        g_test_add("/system-bus/stuck-client", Fixture, &system_bus, fixture_setup, test_stuck_client, fixture_teardown);
        g_test_add("/session-bus/stuck-client", Fixture, &session_bus, fixture_setup, test_stuck_client,
                   fixture_teardown);
        g_test_add("/system-bus/stuck-client-long", Fixture, &system_bus_long, fixture_setup, test_stuck_client,
                   fixture_teardown);
        g_test_add("/system-bus/reader", Fixture, &system_bus, fixture_setup, test_reader, fixture_teardown);
        g_test_add("/system-bus/reader-ping-error", Fixture, &system_bus_error, fixture_setup, test_reader,
                   fixture_teardown);
        g_test_add("/session-bus/reader", Fixture, &session_bus, fixture_setup, test_reader, fixture_teardown);
        g_test_add("/system-bus/ping-denied", Fixture, &system_bus_denied, fixture_setup, test_ping_denied,
                   fixture_teardown);
        g_test_add("/system-bus/crowd", Fixture, &system_bus, fixture_setup, test_crowd, fixture_teardown);
        g_test_add("/system-bus/memory-crowd", Fixture, &system_bus_caps, fixture_setup, test_memory_crowd,
                   fixture_teardown);
        return g_test_run();
}
