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
 *     reader of the same directory gets every record (memory-crowd);
 *   - nobody's polled subscription on a FUSE mount that stops answering
 *     (bindfs, SIGSTOP), and nobody's AddWatch of a path there: root's
 *     GetStats and root's events go on, nobody's AddWatch waits, nobody is
 *     told (Overflow) and answered once the file system answers
 *     (hung-fuse);
 *   - the other hung cases, each with a bindfs nobody mounts itself
 *     (allow_other, which fusermount grants where /etc/fuse.conf says
 *     user_allow_other: the test binds such a file over it in a mount
 *     namespace of its own, and restarts watchd there) and stops: nobody's
 *     RECURSIVE walk into it (hung-walk), nobody's pending path that a
 *     symbolic link leads into it (hung-pending), nobody's AddWatch of a
 *     pending path whose look-up waits for it (hung-pending-add, as
 *     /remote/hung-pending-add), nobody's durable
 *     subscription there while watchd restarts (hung-durable), a directory
 *     made in nobody's RECURSIVE tree there, whose scan's parent open waits
 *     for it (hung-new-dir: nobody told once its records waited the hold's
 *     bound), nobody's PERSIST file deleted there, its path looked up again
 *     (hung-persist: told too); root's GetStats and root's events go on (figures: worst of
 *     20), and nobody's call is answered, its path followed, its
 *     subscription watched once the file system answers.
 *
 * The client that stops reading is a child process (fork, no exec) that
 * becomes nobody, connects with sd-bus, subscribes, tells the parent, and
 * then blocks on a pipe without reading its bus socket, so the bus buffers
 * what is sent to it; told to go on, it reads everything and reports.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "watchd-api.h"
#include "watchd-test.h"
#include "wt-fixture.h"

#define E_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"

#define TIMEOUT_MS 60000
#define NOBODY     65534

/* Records a client may have unconfirmed, and its queue's limit (watchd.conf's
 * max_pending_events_per_client): small, so that a storm is many windows long. */
#define WINDOW        1024u
#define WINDOW_CONFIG "[limits]\nmax_pending_events_per_client = 1024\n"

/* A storm: STORM_PAIRS files created and removed (two records each), in
 * rounds of ROUND_PAIRS that the reading client receives before the next
 * round starts (so the kernel's queue, 16,384 records by default, never
 * overflows however slow the machine, and each round is less than a
 * window's queue). Names are long, so that each record weighs on the bus
 * what a deep path would: about 250 bytes. */
#define STORM_PAIRS 30000u
#define ROUND_PAIRS 256u
#define NAME_PAD    200

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

typedef enum PingMode {
        PING_ANSWER, /* GDBus answers, as every D-Bus library does */
        PING_ERROR,  /* answered with UnknownMethod by the client itself */
} PingMode;

typedef struct Params {
        gboolean system;    /* the system-style bus, else the session-style one */
        gboolean deny_ping; /* on it, our policy without its Ping rule */
        PingMode mode;      /* how the reading client answers Pings */
        /* sd-bus's default method call timeout in watchd (SYSTEMD_BUS_TIMEOUT),
         * and how long the client stays stuck before the storm. */
        const char *bus_timeout;
        int stuck_ms;
        const char *config; /* watchd.conf, else WINDOW_CONFIG */
} Params;

/* ---------------------------------------------------------------- the reading client */

typedef struct Reader {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        guint filter;
        PingMode mode;
        guint32 id;
        gint n_pings; /* Pings received (GDBus's worker thread) */
        guint n_records, n_overflows;
} Reader;

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

static void reader_init(Reader *r, WtBus *bus, PingMode mode) {
        *r = (Reader) { .mode = mode };
        r->conn = wt_connect(bus);
        r->filter = g_dbus_connection_add_filter(r->conn, reader_filter, r, NULL);
        r->proxy = wt_proxy(r->conn);
        g_signal_connect(r->proxy, "events", G_CALLBACK(on_events), r);
        g_signal_connect(r->proxy, "overflow", G_CALLBACK(on_overflow), r);
}

static void reader_done(Reader *r) {
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
static void await_records(Reader *r, guint n) {
        Count w = { r, n };

        if (!wt_await(count_met, &w, TIMEOUT_MS) || r->n_overflows > 0)
                g_error("The reading client got %u records and %u Overflow, wanted %u records within %d ms "
                        "(%d Pings reached it)",
                        r->n_records, r->n_overflows, n, TIMEOUT_MS, g_atomic_int_get(&r->n_pings));
}

/* ---------------------------------------------------------------- the client that stops reading */

typedef struct Stuck {
        pid_t pid;
        int report_fd; /* the child's lines: its subscription id and name, then its report */
        int go_fd;     /* one byte: read on */
        guint32 id;
        char *name; /* its unique bus name */
} Stuck;

typedef struct StuckReport {
        unsigned records, records_after_overflow, overflows, overflow_id;
        unsigned pings_before_overflow; /* Pings the bus held for it while it was stuck */
        bool done;
        bool until_quiet; /* no marker will come: stop after a quiet second */
} StuckReport;

static int stuck_on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
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

/* A line from the child, within TIMEOUT_MS. */
static char *stuck_read_line(Stuck *st) {
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

/* Lets the child read; returns its report once it is done. */
static void stuck_go(Stuck *st) {
        g_assert_cmpint(write(st->go_fd, "g", 1), ==, 1);
}

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

/* Under a wrapper (valgrind) watchd's RSS is the tool's, so bounds on it
 * say nothing, and it runs tens of times slower. */
static gboolean watchd_wrapped(void) {
        const char *w = g_getenv("WATCHD_TEST_WRAPPER");
        return w && *w;
}

/* Whether watchd's RSS is its own figure: not under a wrapper, and not
 * under ASan, whose quarantine and shadow memory grow it
 * (tests/robustness/sanitize sets ROBUSTNESS_MEMORY_BOUND_KB=0 for that). */
static gboolean watchd_rss_meaningful(void) {
        return !watchd_wrapped() && g_strcmp0(g_getenv("ROBUSTNESS_MEMORY_BOUND_KB"), "0") != 0;
}

/* ---------------------------------------------------------------- fixture */

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        char *dir;    /* the storm's directory: tmpfs, 0755 (nobody watches it) */
        char *policy; /* a changed copy of our policy, or NULL */
} Fixture;

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

static void fixture_setup(Fixture *f, gconstpointer data) {
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

static void fixture_teardown(Fixture *f, gconstpointer data) {
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
static void create_remove(Fixture *f, const char *prefix, guint i) {
        g_autofree char *p = storm_name(f, prefix, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create '%s': %s", p, g_strerror(errno));
        g_assert_cmpint(close(fd), ==, 0);
        g_assert_cmpint(unlink(p), ==, 0);
}

static guint32 add_watch(WatchdInotify *proxy, const char *path) {
        g_autoptr(GError) error = NULL;
        guint id = 0;

        if (!watchd_inotify_call_add_watch_sync(proxy, path, IN_CREATE | IN_DELETE, 0, &id, NULL, &error))
                g_error("AddWatch '%s': %s", path, error->message);
        return id;
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

/* ---------------------------------------------------------------- a file system that stops answering */

#define HUNG_CONFIG "[poll]\nfuse = 1\n"

/*
 * The child, as nobody: subscribes to mnt (polled), says "ID NAME"; told to
 * go on, asks for a watch of fresh (a path on mnt never looked up, so its
 * lookup reaches the FUSE daemon) and says "added ID" or "failed ..." when
 * answered; then reads what came meanwhile and after for 3 s and says
 * "overflows N" (Overflow signals naming its first subscription).
 */
static void hung_child(const char *address, const char *mnt, const char *fresh, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *call = NULL, *reply = NULL;
        StuckReport s = {};
        sd_bus *bus = NULL;
        const char *name;
        uint32_t id, id2;
        uint64_t end;
        char c;

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        if (sd_bus_call_method(bus, "org.example.Inotify", "/org/example/Inotify", "org.example.Inotify", "AddWatch",
                               &error, &reply, "suu", mnt, (uint32_t) IN_CREATE, (uint32_t) 0) < 0 ||
            sd_bus_message_read(reply, "u", &id) < 0) {
                dprintf(report_fd, "AddWatch failed: %s\n", error.message ? error.message : "?");
                _exit(4);
        }
        reply = sd_bus_message_unref(reply);
        if (sd_bus_add_filter(bus, NULL, stuck_on_message, &s) < 0 || sd_bus_get_unique_name(bus, &name) < 0)
                _exit(5);
        dprintf(report_fd, "%u %s\n", id, name);
        if (read(go_fd, &c, 1) != 1)
                _exit(6);

        /* Answered when the file system answers: a timeout far past the test's. */
        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                           "org.example.Inotify", "AddWatch") < 0 ||
            sd_bus_message_append(call, "suu", fresh, (uint32_t) IN_CREATE, (uint32_t) 0) < 0)
                _exit(7);
        if (sd_bus_call(bus, call, (uint64_t) 10 * TIMEOUT_MS * 1000, &error, &reply) < 0 ||
            sd_bus_message_read(reply, "u", &id2) < 0)
                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
        else
                dprintf(report_fd, "added %u\n", id2);

        end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
        while ((uint64_t) g_get_monotonic_time() < end) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        _exit(8);
                if (r == 0)
                        (void) sd_bus_wait(bus, 100000);
        }
        dprintf(report_fd, "overflows %u %u\n", s.overflows, s.overflow_id);
        _exit(0);
}

/* Whether fd has something to read now. */
static gboolean readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, 0) > 0;
}

/*
 * Issue 24, item 1, as nobody on the system-policy bus. Root mounts bindfs
 * (allow_other) and nobody subscribes there, polled; the FUSE daemon is
 * stopped and nobody asks for a watch of a path on it. The daemon must not
 * wait for it: root's GetStats round trips and root's events on a local
 * directory go on (their worst of 20 is the figure), nobody's AddWatch is
 * not answered while the file system does not answer (both lanes, the poll's
 * and nobody's opens, show in fs_stalled), nobody's polled subscription is
 * told (Overflow), and after SIGCONT nobody's AddWatch is answered with an
 * id. Before AddWatch's open was made in a worker, the first GetStats timed
 * out; before the poller's reads were, none answered at all.
 */
static void test_hung_fuse(Fixture *f, gconstpointer data) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *local = g_build_filename(f->dir, "local", NULL), *fresh = NULL, *mfresh = NULL;
        g_autofree char *line = NULL, *line2 = NULL;
        g_autoptr(GError) error = NULL;
        gint64 worst_stats = 0, worst_event = 0;
        guint overflows = 0, overflow_id = 0, added = 0;
        int status = -1;
        pid_t fuse_pid;
        Reader reader;
        Stuck st = {};
        int report[2], go[2];

        /* Under valgrind (tests/robustness/valgrind-dbus) GetStats timed out
         * during the hang: the loop thread waited too. Not understood yet;
         * valgrind runs one thread at a time, and may hold its lock across a
         * worker's system call on the stopped mount. Natively and under ASan
         * the case passes. */
        if (watchd_wrapped()) {
                g_test_skip("under a wrapper (valgrind) the hang stops watchd's loop too: not understood yet");
                return;
        }
        if (!f->bus)
                return;
        if (!bindfs || access("/dev/fuse", R_OK | W_OK) != 0) {
                g_test_skip("no FUSE mount here: bindfs missing, or /dev/fuse unusable");
                return;
        }
        g_assert_cmpint(g_mkdir(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(mnt, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        fresh = g_build_filename(back, "fresh", NULL);
        mfresh = g_build_filename(mnt, "fresh", NULL);
        g_assert_cmpint(g_mkdir(fresh, 0755), ==, 0); /* never looked up through the mount */
        g_assert_true(g_spawn_sync(NULL, (char *[]) { bindfs, (char *) "-o", (char *) "allow_other", back, mnt, NULL },
                                   NULL, 0, NULL, NULL, NULL, NULL, &status, &error));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        fuse_pid = wt_bindfs_pid(mnt);
        g_assert_cmpint(fuse_pid, >, 0);

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        st.pid = fork();
        g_assert_cmpint(st.pid, >=, 0);
        if (st.pid == 0) {
                close(report[0]);
                close(go[1]);
                hung_child(f->bus->address, mnt, mfresh, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        st.report_fd = report[0];
        st.go_fd = go[1];
        line = stuck_read_line(&st);
        if (!g_ascii_isdigit(line[0]))
                g_error("nobody could not subscribe to the FUSE mount: %s", line);

        reader_init(&reader, f->bus, PING_ANSWER);
        reader.id = add_watch(reader.proxy, local);
        {
                /* Resumed by a watcher even if this test aborts. */
                g_autofree char *script = g_strdup_printf("while kill -0 %d 2>/dev/null; do sleep 1; done; "
                                                          "kill -CONT %d",
                                                          (int) getpid(), (int) fuse_pid);

                g_assert_true(g_spawn_async(NULL, (char *[]) { (char *) "/bin/sh", (char *) "-c", script, NULL }, NULL,
                                            0, NULL, NULL, NULL, &error));
        }
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);

        /* The poll's lane and nobody's opens' lane stop answering; root is served. */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 2, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 2", wt_stat(reader.proxy, "fs_stalled"));
        for (guint i = 0; i < 20; i++) {
                gint64 t0 = g_get_monotonic_time();

                (void) wt_stat(reader.proxy, "clients");
                worst_stats = MAX(worst_stats, g_get_monotonic_time() - t0);
                t0 = g_get_monotonic_time();
                create_remove(f, "local/hung", i);
                await_records(&reader, 2 * (i + 1));
                worst_event = MAX(worst_event, g_get_monotonic_time() - t0);
        }
        g_test_message("figure: hung-fuse: while nobody's FUSE mount does not answer, root's GetStats round trip "
                       "worst of 20 %" G_GINT64_FORMAT
                       " us, root's create+delete on tmpfs delivered worst of 20 %" G_GINT64_FORMAT " us",
                       worst_stats, worst_event);
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch still waits */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_free(line);
        line = stuck_read_line(&st);
        if (sscanf(line, "added %u", &added) != 1)
                g_error("nobody's AddWatch on the FUSE mount: %s", line);
        g_assert_cmpuint(added, >, 0);
        line2 = stuck_read_line(&st);
        g_assert_cmpint(sscanf(line2, "overflows %u %u", &overflows, &overflow_id), ==, 2);
        g_assert_cmpuint(overflows, >=, 1);
        g_assert_cmpint(waitpid(st.pid, &status, 0), ==, st.pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st.report_fd);
        close(st.go_fd);
        g_assert_cmpuint(wt_stat(reader.proxy, "fs_stalled"), ==, 0);
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* ---------------------------------------------------------------- nobody's own FUSE mount */

#define HUNG_INOTIFY_CONFIG "[poll]\nfuse = 0\n"

/* As a GSpawnChildSetupFunc too. */
static void become_nobody(gpointer unused) {
        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                _exit(2);
}

/* nobody's bindfs of back on mnt (both made here, nobody's), once
 * nobody_mounts_bindfs() has set the namespace up: the FUSE daemon's pid. */
static pid_t nobody_bindfs(char *bindfs, const char *back, const char *mnt) {
        g_autoptr(GError) error = NULL;
        pid_t pid;
        int status = -1;

        g_assert_cmpint(g_mkdir_with_parents(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(mnt, 0755), ==, 0);
        g_assert_cmpint(chown(back, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(chown(mnt, NOBODY, NOBODY), ==, 0);
        g_assert_true(g_spawn_sync(
                NULL, (char *[]) { bindfs, (char *) "-o", (char *) "allow_other", (char *) back, (char *) mnt, NULL },
                NULL, 0, become_nobody, NULL, NULL, NULL, &status, &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        pid = wt_bindfs_pid(mnt);
        g_assert_cmpint(pid, >, 0);
        {
                /* Resumed by a watcher even if this test aborts, and ended if still
                 * there: its mount is in this process's namespace, gone with it. */
                g_autofree char *script = g_strdup_printf(
                        "while kill -0 %d 2>/dev/null; do sleep 1; done; kill -CONT %d; "
                        "[ \"$(cat /proc/%d/comm 2>/dev/null)\" = bindfs ] && kill -TERM %d",
                        (int) getpid(), (int) pid, (int) pid, (int) pid);

                g_assert_true(g_spawn_async(NULL, (char *[]) { (char *) "/bin/sh", (char *) "-c", script, NULL }, NULL,
                                            0, NULL, NULL, NULL, &error));
        }
        return pid;
}

/*
 * Issue 24's attacker mounts the file system itself: nobody runs bindfs -o
 * allow_other, which fusermount grants only where /etc/fuse.conf says
 * user_allow_other. This machine's does not, and a test does not change
 * /etc: the test moves into a mount namespace of its own, binds such a
 * fuse.conf over /etc/fuse.conf there, and restarts watchd in it (the bus
 * stays) so that it sees the mount. back and mnt (made here) become
 * nobody's. Returns the FUSE daemon's pid, or 0 with the case skipped.
 */
static bool nobody_may_mount(Fixture *f, const char *config, const char *program) {
        g_autofree char *conf = g_build_filename(f->dir, "fuse.conf", NULL);

        if (watchd_wrapped()) {
                g_test_skip("under a wrapper (valgrind) the hang stops watchd's loop too: not understood yet");
                return false;
        }
        if (!f->bus)
                return false;
        if (!program || access("/dev/fuse", R_OK | W_OK) != 0 || access("/etc/fuse.conf", F_OK) != 0) {
                g_test_skip("no FUSE mount here: bindfs (or hangfs) or /etc/fuse.conf missing, or /dev/fuse unusable");
                return false;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                g_test_skip("no mount namespace of its own here");
                return false;
        }
        g_assert_true(g_file_set_contents(conf, "user_allow_other\n", -1, NULL));
        /* An earlier case of this process bound its own, gone with its directory (ENOENT). */
        (void) umount2("/etc/fuse.conf", MNT_DETACH);
        g_assert_cmpint(mount(conf, "/etc/fuse.conf", NULL, MS_BIND, NULL), ==, 0);
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        f->daemon = wt_daemon_start(f->bus, config);
        return true;
}

static pid_t nobody_mounts_bindfs(Fixture *f, const char *config, const char *back, const char *mnt) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");

        if (!nobody_may_mount(f, config, bindfs))
                return 0;
        return nobody_bindfs(bindfs, back, mnt);
}

static void become_nobody_dying_with_parent(gpointer unused) {
        become_nobody(NULL);
        /* After the setuid, which clears it. */
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/*
 * As nobody_mounts_bindfs(), with hangfs (tests/dbus/hangfs.c) serving
 * back at mnt as nobody: its opens of a directory named hang for reading
 * (and, with statfs, its statfs calls) wait until it gets SIGUSR2 (SIGUSR1:
 * again). loop: every request of watchd's event loop (its main thread)
 * waits as well. options: more -o options (NULL: none). Returns its
 * pid, or 0 with the case skipped.
 */
static pid_t hangfs_mount(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang,
                          bool statfs, bool loop, const char *options) {
#ifdef HANGFS
        g_autoptr(GError) error = NULL;
        g_autofree char *env = g_strconcat("HANGFS_NAME=", hang, NULL), *tid_env = NULL;
        g_autofree char *opts = g_strconcat("allow_other", options ? "," : NULL, options, NULL);
        g_autofree char *exe = g_build_filename(f->dir, "hangfs", NULL), *text = NULL;
        struct stat sb, mb;
        gsize len;
        GPid pid;

        if (!nobody_may_mount(f, config, HANGFS))
                return 0;
        /* watchd as it runs now (nobody_may_mount() started it again): its loop is its main thread. */
        tid_env = g_strdup_printf("HANGFS_TID=%d", loop ? (int) wt_process_pid(f->daemon->process) : 0);
        /* A copy nobody may run: the build tree may be below a directory it
         * cannot enter (a clone in /root, 0700). */
        g_assert_true(g_file_get_contents(HANGFS, &text, &len, NULL));
        g_assert_true(g_file_set_contents(exe, text, (gssize) len, NULL));
        g_assert_cmpint(chmod(exe, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(back, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(mnt, 0755), ==, 0);
        g_assert_cmpint(chown(back, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(chown(mnt, NOBODY, NOBODY), ==, 0);
        g_assert_cmpint(stat(mnt, &sb), ==, 0); /* its device before the mount */
        g_assert_true(g_spawn_async(NULL, (char *[]) { exe, (char *) back, (char *) mnt, (char *) "-o", opts, NULL },
                                    (char *[]) { env, tid_env, statfs ? (char *) "HANGFS_STATFS=1" : NULL, NULL },
                                    G_SPAWN_DO_NOT_REAP_CHILD, become_nobody_dying_with_parent, NULL, &pid, &error));
        g_assert_no_error(error);
        for (int i = 0; i < 500 && stat(mnt, &mb) == 0 && mb.st_dev == sb.st_dev; i++)
                g_usleep(10 * 1000);
        g_assert_cmpint(mb.st_dev, !=, sb.st_dev);
        return pid;
#else
        g_test_skip("built without libfuse's headers: no hangfs");
        return 0;
#endif
}

static pid_t nobody_mounts_hangfs(Fixture *f, const char *config, const char *back, const char *mnt, const char *hang,
                                  bool statfs) {
        return hangfs_mount(f, config, back, mnt, hang, statfs, /* loop= */ false, NULL);
}

/* nobody's tree (made here, nobody's) beside nobody's bindfs mount, as
 * nobody_mounts_bindfs(); 0 with the case skipped (no bus, no bindfs). */
static pid_t nobody_tree_and_mount(Fixture *f, const char *config, const char *tree, const char *back, const char *mnt) {
        if (!f->bus)
                return 0;
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
        return nobody_mounts_bindfs(f, config, back, mnt);
}

typedef struct Seen {
        const char *path;
        uint32_t mask; /* IN_CREATE, or IN_DELETE_SELF */
        bool seen;
        bool told; /* an Overflow came */
} Seen;

static int seen_on_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Seen *w = userdata;
        const char *path, *new_path;
        uint32_t id, mask, cookie;
        int r;

        if (sd_bus_message_is_signal(m, "org.example.Inotify", "Overflow"))
                w->told = true;
        if (!sd_bus_message_is_signal(m, "org.example.Inotify", "Events"))
                return 0;
        r = sd_bus_message_enter_container(m, 'a', "(uuuss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(uuuss)", &id, &mask, &cookie, &path, &new_path)) > 0)
                if (strcmp(path, w->path) == 0 && (mask & w->mask))
                        w->seen = true;
        return r < 0 ? r : 0;
}

/*
 * The child, as nobody, runs steps (argv-like, NULL-terminated) and says
 * how each went, a line each:
 *   "watch PATH FLAGS [MASK]"
 *                         AddWatch (MASK, or IN_CREATE | IN_DELETE_SELF): "id N"
 *                         or "failed MESSAGE"
 *   "durable NAME PATH"   CreateDurable (IN_CREATE): "created" or "failed MESSAGE"
 *   "open PATH"           opens the directory PATH (O_RDONLY), kept for "watchfd":
 *                         "opened" or "failed MESSAGE"
 *   "watchfd FLAGS"       AddWatchFd of that descriptor (IN_CREATE | IN_DELETE_SELF):
 *                         "id N" or "failed MESSAGE"
 *   "go"                  waits for the test's byte
 *   "await PATH"          reads its bus until a CREATE of PATH comes (30 s):
 *                         "seen" or "not seen"
 *   "await-told PATH"     the same until an Overflow came too: "seen told",
 *                         or what was missing at the end ("seen untold",
 *                         "not seen told", "not seen untold")
 *   "gone-told PATH"      as await-told, for an IN_DELETE_SELF of PATH
 * Calls wait far past the test's bounds: they are answered when watchd answers.
 */
static void nobody_child(const char *address, const char *const *steps, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        const uint64_t timeout = (uint64_t) 10 * TIMEOUT_MS * 1000;
        int dir_fd = -1;
        char c;

        become_nobody(NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        for (; *steps; steps++) {
                g_auto(GStrv) w = g_strsplit(*steps, " ", 4);
                sd_bus_message *call = NULL;
                uint32_t id;

                if (strcmp(w[0], "go") == 0) {
                        if (read(go_fd, &c, 1) != 1)
                                _exit(4);
                } else if (strcmp(w[0], "open") == 0) {
                        dir_fd = open(w[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (dir_fd < 0)
                                dprintf(report_fd, "failed %s\n", g_strerror(errno));
                        else
                                dprintf(report_fd, "opened\n");
                } else if (strcmp(w[0], "watchfd") == 0) {
                        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                                           "org.example.Inotify", "AddWatchFd") < 0 ||
                            sd_bus_message_append(call, "huu", dir_fd, (uint32_t) (IN_CREATE | IN_DELETE_SELF),
                                                  (uint32_t) strtoul(w[1], NULL, 0)) < 0)
                                _exit(5);
                        if (sd_bus_call(bus, call, timeout, &error, &reply) < 0)
                                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
                        else if (sd_bus_message_read(reply, "u", &id) >= 0)
                                dprintf(report_fd, "id %u\n", id);
                        else
                                _exit(6);
                        sd_bus_error_free(&error);
                        reply = sd_bus_message_unref(reply);
                        sd_bus_message_unref(call);
                } else if (strcmp(w[0], "watch") == 0 || strcmp(w[0], "durable") == 0) {
                        bool watch = strcmp(w[0], "watch") == 0;

                        if (sd_bus_message_new_method_call(bus, &call, "org.example.Inotify", "/org/example/Inotify",
                                                           "org.example.Inotify",
                                                           watch ? "AddWatch" : "CreateDurable") < 0 ||
                            (watch ? sd_bus_message_append(call, "suu", w[1],
                                                           w[3] ? (uint32_t) strtoul(w[3], NULL, 0) :
                                                                  (uint32_t) (IN_CREATE | IN_DELETE_SELF),
                                                           (uint32_t) strtoul(w[2], NULL, 0)) :
                                     sd_bus_message_append(call, "ssuu", w[1], w[2], (uint32_t) IN_CREATE,
                                                           (uint32_t) 0)) < 0)
                                _exit(5);
                        if (sd_bus_call(bus, call, timeout, &error, &reply) < 0)
                                dprintf(report_fd, "failed %s\n", error.message ? error.message : "?");
                        else if (!watch)
                                dprintf(report_fd, "created\n");
                        else if (sd_bus_message_read(reply, "u", &id) >= 0)
                                dprintf(report_fd, "id %u\n", id);
                        else
                                _exit(6);
                        sd_bus_error_free(&error);
                        reply = sd_bus_message_unref(reply);
                        sd_bus_message_unref(call);
                } else if (strcmp(w[0], "await") == 0 || strcmp(w[0], "await-told") == 0 ||
                           strcmp(w[0], "gone-told") == 0) {
                        bool told = g_str_has_suffix(w[0], "-told");
                        Seen seen = { .path = w[1], .mask = strcmp(w[0], "gone-told") == 0 ? IN_DELETE_SELF : IN_CREATE };
                        uint64_t end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
                        sd_bus_slot *slot = NULL;

                        if (sd_bus_add_filter(bus, &slot, seen_on_message, &seen) < 0)
                                _exit(7);
                        while (!(seen.seen && (seen.told || !told)) && (uint64_t) g_get_monotonic_time() < end) {
                                int r = sd_bus_process(bus, NULL);

                                if (r < 0)
                                        _exit(8);
                                if (r == 0)
                                        (void) sd_bus_wait(bus, 100000);
                        }
                        dprintf(report_fd, "%s%s\n", seen.seen ? "seen" : "not seen",
                                !told             ? "" :
                                        seen.told ? " told" :
                                                    " untold");
                        sd_bus_slot_unref(slot);
                } else
                        _exit(9);
        }
        _exit(0);
}

static void nobody_start(Stuck *st, Fixture *f, const char *const *steps) {
        int report[2], go[2];

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        st->pid = fork();
        g_assert_cmpint(st->pid, >=, 0);
        if (st->pid == 0) {
                close(report[0]);
                close(go[1]);
                nobody_child(f->bus->address, steps, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        st->report_fd = report[0];
        st->go_fd = go[1];
}

static void nobody_end(Stuck *st) {
        int status = -1;

        g_assert_cmpint(waitpid(st->pid, &status, 0), ==, st->pid);
        g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(st->report_fd);
        close(st->go_fd);
}

/* Root's GetStats round trips and root's create+delete on f->dir/local, worst
 * of 20 each, with the bounds that say "not frozen" (the daemon used to wait
 * for the file system: seconds, or for ever). */
static void root_goes_on(Fixture *f, Reader *reader, const char *what) {
        gint64 worst_stats = 0, worst_event = 0;
        g_autofree char *prefix = g_strconcat("local/", what, NULL);

        for (guint i = 0; i < 20; i++) {
                gint64 t0 = g_get_monotonic_time();

                (void) wt_stat(reader->proxy, "clients");
                worst_stats = MAX(worst_stats, g_get_monotonic_time() - t0);
                t0 = g_get_monotonic_time();
                create_remove(f, prefix, i);
                await_records(reader, reader->n_records + 2);
                worst_event = MAX(worst_event, g_get_monotonic_time() - t0);
        }
        g_test_message("figure: %s: while nobody's FUSE mount does not answer, root's GetStats round trip worst of 20 "
                       "%" G_GINT64_FORMAT " us, root's create+delete on tmpfs delivered worst of 20 %" G_GINT64_FORMAT
                       " us",
                       what, worst_stats, worst_event);
        g_assert_cmpint(worst_stats, <, 2 * G_USEC_PER_SEC);
        g_assert_cmpint(worst_event, <, 2 * G_USEC_PER_SEC);
}

/* path made (empty) as root; the test ends if it cannot be. */
static void make_file(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0)
                g_error("Failed to create '%s': %s", path, g_strerror(errno));
        close(fd);
}

/* nobody's last step, an "await": it saw its record; then nobody, root's
 * reader and the mount go. line: the test's last line read (freed). */
static void nobody_sees_last(Stuck *st, Reader *reader, const char *mnt, char *line) {
        g_free(line);
        line = stuck_read_line(st);
        g_assert_cmpstr(line, ==, "seen");
        g_free(line);
        nobody_end(st);
        reader_done(reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* A lane of nobody's stalls (fs_stalled 1) and root goes on; then the FUSE
 * daemon goes on, make (if not NULL) is made (as root, through the mount), and nobody's
 * next step, its last, an "await" of it, sees it. line: as nobody_sees_last(). */
static void stalled_then_seen(Fixture *f, Reader *reader, Stuck *st, pid_t fuse_pid, const char *what, const char *mnt,
                              const char *make, char *line) {
        if (!wt_await_stat(reader->proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader->proxy, "fs_stalled"));
        root_goes_on(f, reader, what);
        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader->proxy, "fs_stalled", 0, TIMEOUT_MS));
        if (make)
                make_file(make);
        stuck_go(st);
        nobody_sees_last(st, reader, mnt, line);
}

static void reader_on_local(Fixture *f, Reader *reader) {
        g_autofree char *local = g_build_filename(f->dir, "local", NULL);

        g_assert_cmpint(g_mkdir(local, 0755), ==, 0);
        reader_init(reader, f->bus, PING_ANSWER);
        reader->id = add_watch(reader->proxy, local);
}

/* Issue 24 item 1 as nobody: its RECURSIVE AddWatch of its tree, which holds
 * its own stopped FUSE mount (watched by inotify, [poll] fuse = 0, so the
 * walk reads it): the walk waits in a worker of the mount's lane, root goes
 * on, nobody's call is answered with an id once the file system answers. */
static void test_hung_walk(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(tree, "mnt", NULL), *deep = g_build_filename(back, "a", "b", NULL);
        g_autofree char *ldeep = g_build_filename(tree, "l", "m", NULL), *step = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        guint id = 0;
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(ldeep, 0755), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE);
        nobody_start(&st, f, (const char *const[]) { "go", step, NULL });

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);
        /* The walk has reached the mount: its job waits past the lane's deadline. */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-walk");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its walk */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        line = stuck_read_line(&st);
        if (sscanf(line, "id %u", &id) != 1)
                g_error("nobody's RECURSIVE AddWatch: %s", line);
        g_assert_cmpuint(id, >, 0);
        nobody_end(&st);
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/* As nobody: a PERSIST path waits for "link" in nobody's tree; link appears,
 * a symbolic link into nobody's stopped FUSE mount: the probe that follows it
 * waits in a worker of nobody's lane, root goes on, and once the file system
 * answers the path is followed down and its file reported to nobody. */
static void test_hung_pending(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL), *link = g_build_filename(tree, "link", NULL);
        g_autofree char *sub = g_build_filename(back, "sub", NULL), *mx = g_build_filename(mnt, "sub", "x", NULL);
        g_autofree char *pending = g_build_filename(link, "sub", "x", NULL), *step = NULL, *await = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        g_assert_cmpint(chown(sub, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", pending, (unsigned) WATCHD_FLAG_PERSIST);
        await = g_strconcat("await ", pending, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's pending AddWatch: %s", line);

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        /* link appears: following the path opens the mount's root, which waits. */
        g_assert_cmpint(symlink(mnt, link), ==, 0);
        /* Then it answers: the probe goes down to sub, where x is awaited, and x
         * made through the mount (the kernel hears of it) is reported to nobody. */
        stalled_then_seen(f, &reader, &st, fuse_pid, "hung-pending", mnt, mx, g_steal_pointer(&line));
}

/* As nobody: AddWatch PERSIST of a path missing below a directory of
 * nobody's FUSE mount ([poll] fuse = 0), the look-up after the path's own
 * open made to reach the stopped FUSE daemon (watchd stopped while that open
 * waits in a worker, the FUSE daemon let answer it, stopped again, its
 * caches let age, watchd resumed, as /remote/hung-pending-add): the look-up
 * waits in a worker of nobody's lane (stalled a second time), root goes on,
 * nobody's AddWatch waits; once the file system answers, it is answered
 * with an id and the path, created, is reported to nobody. */
static void test_hung_pending_add(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(f->dir, "mnt", NULL), *sub = g_build_filename(back, "sub", NULL);
        g_autofree char *pending = g_build_filename(mnt, "sub", "missing", NULL), *step = NULL, *await = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0); /* never looked up through the mount */
        g_assert_cmpint(chown(sub, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", pending, (unsigned) WATCHD_FLAG_PERSIST);
        await = g_strconcat("await ", pending, NULL);
        nobody_start(&st, f, (const char *const[]) { "go", step, await, NULL });

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&st);
        /* The path's own open waits in a worker of nobody's lane... */
        if (!wt_await_stat(reader.proxy, "fs_stalls", 1, TIMEOUT_MS))
                g_error("fs_stalls is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalls"));
        /* ...is answered (ENOENT) while watchd is stopped; the FUSE daemon is
         * stopped again, and its entries and attributes let age (1 s in libfuse). */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_usleep(300 * 1000);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(1500 * 1000);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        /* The look-up that follows waits for the FUSE daemon, in a worker. */
        if (!wt_await_stat(reader.proxy, "fs_stalls", 2, TIMEOUT_MS))
                g_error("fs_stalls is %" G_GUINT64_FORMAT ", not 2", wt_stat(reader.proxy, "fs_stalls"));
        root_goes_on(f, &reader, "hung-pending-add");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its look-up */

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's pending AddWatch: %s", line);
        make_file(pending);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/* The kernel revalidates a name of a FUSE mount once its entry timeout (1 s,
 * libfuse's default, which bindfs keeps) is over: a path walk through it
 * then asks the FUSE daemon (as in test-remote.c). */
#define ENTRY_TIMEOUT_US (1500 * 1000)

/* The FUSE daemon stopped while watchd is (pid), its entries let age past
 * ENTRY_TIMEOUT_US, then watchd goes on: its next look-up there waits. */
static void resume_past_fuse_stop(pid_t pid, pid_t fuse_pid) {
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
}

/* nobody's own bindfs of back on mnt ([poll] fuse = 0) with a, a directory
 * of back, made nobody's (and file in it, if not NULL), root's reader on
 * local, and nobody's steps started, the first a watch whose answer must be
 * an id (*line, the caller's). Returns the FUSE daemon's pid, 0 with the
 * case skipped. */
static pid_t nobody_watch_in_mount(Fixture *f, const char *back, const char *mnt, const char *a, const char *file,
                                   Reader *reader, Stuck *st, const char *const *steps, char **line) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL);
        pid_t fuse_pid;

        fuse_pid = nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt);
        if (fuse_pid <= 0)
                return 0;
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(chown(a, NOBODY, NOBODY), ==, 0);
        if (file) {
                make_file(file);
                g_assert_cmpint(chown(file, NOBODY, NOBODY), ==, 0);
        }
        reader_on_local(f, reader);
        nobody_start(st, f, steps);
        *line = stuck_read_line(st);
        if (!g_str_has_prefix(*line, "id "))
                g_error("nobody's AddWatch: %s", *line);
        return fuse_pid;
}

/* watchd went on with nobody's FUSE daemon stopped, nobody's next step let
 * go (an "await-told" or "gone-told"): watchd's look-up waits in a worker
 * past its lane's deadline, root goes on, nobody gets its record after the
 * hold's bound and is told (Overflow). Then the FUSE daemon goes on, remake
 * (if not NULL) is made, and nobody's last "await" sees its record. */
static void nobody_told_while_hung(Fixture *f, Reader *reader, Stuck *st, pid_t fuse_pid, const char *what,
                                   const char *mnt, const char *remake, char *line) {
        stuck_go(st);
        if (!wt_await_stat(reader->proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader->proxy, "fs_stalled"));
        root_goes_on(f, reader, what);
        g_free(line);
        line = stuck_read_line(st);
        g_assert_cmpstr(line, ==, "seen told");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader->proxy, "fs_stalled", 0, TIMEOUT_MS));
        if (remake)
                make_file(remake);
        stuck_go(st);
        nobody_sees_last(st, reader, mnt, line);
}

/*
 * As nobody, on nobody's own bindfs ([poll] fuse = 0), a look-up of watchd's
 * made to wait for the stopped FUSE daemon: the change is made through the
 * mount while watchd is stopped, then the FUSE daemon is stopped and its
 * entries let age, and watchd goes on (nobody_told_while_hung() says what
 * must follow). As /remote/hung-new-dir and /remote/hung-persist, which run
 * as root on a session bus.
 *
 * persist false (hung-new-dir): nobody's RECURSIVE subscription of a; a
 * directory made in it with a file inside, then a file beside it (mark).
 * The open of the new directory's parent by its path, for the scan that
 * reports its file, waits in a worker of nobody's lane; nobody gets mark
 * after the hold's bound, and Overflow (the scan's record will come late);
 * once the file system answers the scan reports the new directory's file.
 *
 * persist true (hung-persist): nobody's PERSIST subscription of a/file,
 * deleted: its IN_DELETE_SELF is delivered with Overflow, the path's look-up
 * again (subscriptions_object_gone()) waiting in a worker of nobody's lane;
 * once the file system answers, the file made again is reported.
 */
static void hung_look_up(Fixture *f, bool persist) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *file = g_build_filename(a, "file", NULL);
        g_autofree char *ma = g_build_filename(mnt, "a", NULL), *mfile = g_build_filename(ma, "file", NULL);
        g_autofree char *mnew = g_build_filename(ma, "new", NULL), *mark = g_build_filename(ma, "mark", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL), *step = NULL, *told = NULL, *seen = NULL;
        g_autofree char *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;

        step = persist ? g_strdup_printf("watch %s %u", mfile, (unsigned) WATCHD_FLAG_PERSIST) :
                         g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE);
        told = persist ? g_strconcat("gone-told ", mfile, NULL) : g_strconcat("await-told ", mark, NULL);
        seen = g_strconcat("await ", persist ? mfile : nfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, persist ? file : NULL, &reader, &st,
                                         (const char *const[]) { step, "go", told, "go", seen, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);

        /* Made through the mount (the kernel hears of it) while watchd is stopped. */
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        if (persist)
                g_assert_cmpint(unlink(mfile), ==, 0);
        else {
                g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0);
                make_file(nfile);
                make_file(mark);
        }
        resume_past_fuse_stop(pid, fuse_pid);
        nobody_told_while_hung(f, &reader, &st, fuse_pid, persist ? "hung-persist" : "hung-new-dir", mnt,
                               persist ? mfile : NULL, g_steal_pointer(&line));
}

static void test_hung_new_dir(Fixture *f, gconstpointer data) {
        hung_look_up(f, false);
}

static void test_hung_persist(Fixture *f, gconstpointer data) {
        hung_look_up(f, true);
}

/*
 * Issue 24 item 1 as nobody: a kernel watch narrowed when one of its
 * subscriptions ends. Two of nobody's clients watch a, a directory of
 * nobody's own bindfs ([poll] fuse = 0), the second for every event: one
 * kernel watch with the union of the masks. The FUSE daemon is stopped, its
 * entries let age, and the second client goes: the watch is narrowed to
 * the first's mask, which re-opens its path (there is no caller's fd then)
 * and re-adds it. That path walk and the add's permission check wait for
 * the FUSE daemon: on the loop they froze watchd for everyone (root's
 * GetStats never answered); now they wait in a worker of the mount's lane
 * (fs_stalled 1), root goes on, and once the FUSE daemon answers the first
 * client still hears of a file made in a.
 */
static void test_hung_narrow(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mfile = g_build_filename(ma, "after", NULL), *step = NULL, *wide = NULL, *await = NULL;
        g_autofree char *line = NULL, *wide_line = NULL;
        Reader reader;
        Stuck st = {}, wst = {};
        pid_t fuse_pid;

        step = g_strdup_printf("watch %s 0", ma);
        wide = g_strdup_printf("watch %s 0 %u", ma, (unsigned) (IN_ALL_EVENTS & ~IN_MOVE_SELF));
        await = g_strconcat("await ", mfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        nobody_start(&wst, f, (const char *const[]) { wide, "go", NULL });
        wide_line = stuck_read_line(&wst);
        if (!g_str_has_prefix(wide_line, "id "))
                g_error("nobody's second AddWatch: %s", wide_line);

        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        stuck_go(&wst); /* it goes: its subscription ends, the watch is narrowed */
        nobody_end(&wst);
        stalled_then_seen(f, &reader, &st, fuse_pid, "hung-narrow", mnt, mfile, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody: AddWatchFd of a directory of nobody's own
 * bindfs ([poll] fuse = 0), its FUSE daemon stopped after nobody opened it.
 * What AddWatchFd asks of the descriptor's file system (access_check_fd()'s
 * fstat and its fstatfs for an internal file system, remote.c's fs_detect()
 * and parent fstatat) ran on the loop, and the fstatfs is a FUSE_STATFS
 * request, sent every time (no cache), which the stopped FUSE daemon never
 * answers: watchd froze for everyone (root's GetStats was not answered).
 * Now those run in a job in the lane of the descriptor's file system
 * (manager_add_watch_fd_async()): it stalls (fs_stalled 1), root goes on,
 * the call is answered once the FUSE daemon answers, and nobody's first
 * client still hears of a file made in a.
 */
static void test_hung_add_watch_fd(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mfile = g_build_filename(ma, "after", NULL), *step = NULL, *open_step = NULL, *await = NULL;
        g_autofree char *line = NULL, *fd_line = NULL;
        Reader reader;
        Stuck st = {}, fst = {};
        pid_t fuse_pid;

        step = g_strdup_printf("watch %s 0", ma);
        open_step = g_strconcat("open ", ma, NULL);
        await = g_strconcat("await ", mfile, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        nobody_start(&fst, f, (const char *const[]) { open_step, "go", "watchfd 0", NULL });
        fd_line = stuck_read_line(&fst);
        if (strcmp(fd_line, "opened") != 0)
                g_error("nobody's open of %s: %s", ma, fd_line);

        /* No wait for the attributes to age: FUSE_STATFS is never answered from a cache. */
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        stuck_go(&fst); /* AddWatchFd of the descriptor opened before the stop */
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-add-watch-fd");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        g_free(fd_line);
        fd_line = stuck_read_line(&fst);
        if (!g_str_has_prefix(fd_line, "id "))
                g_error("nobody's AddWatchFd: %s", fd_line);
        nobody_end(&fst);
        make_file(mfile);
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody, on its own bindfs ([poll] fuse = 0): a
 * directory new is made in a through the mount (the kernel hears of it)
 * while watchd is stopped, the way down to it made fresh in the kernel's
 * caches (entries and attributes last 1 s; the mkdir made a's stale), the
 * FUSE daemon stopped, and watchd goes on at once. What the caches answer
 * (the look-ups, by path, in a job) is answered; what they never answer
 * was asked on the loop and froze watchd for everyone (root's GetStats
 * timed out). Now it is asked in a job: the lane stalls, root goes on, and
 * once the FUSE daemon answers nobody hears of it.
 *
 * tree false (hung-appeared): new is a pending path of nobody's. Placing
 * the subscription once the probe found it asked the file system's kind on
 * the loop (remote.c's fs_detect(): an fstatfs, a FUSE_STATFS); it is asked
 * in the probe's job (remote_hint_probe()). nobody hears of new.
 *
 * tree true (hung-new-dir-open): a is nobody's RECURSIVE subscription, and
 * new has a file. The open of new below a (a FUSE_OPENDIR) and its read for
 * the scan that reports the file ran on the loop, in the completion of a's
 * open by path; on a file system that may stop answering they are jobs of
 * the mount's lane. nobody hears of new/file.
 */
static void hung_made_fresh(Fixture *f, bool tree) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *ma = g_build_filename(mnt, "a", NULL);
        g_autofree char *mnew = g_build_filename(ma, "new", NULL), *nfile = g_build_filename(mnew, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid, pid;
        struct stat sb;

        step = tree ? g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE) :
                      g_strdup_printf("watch %s 0", mnew);
        await = g_strconcat("await ", tree ? nfile : mnew, NULL);
        fuse_pid = nobody_watch_in_mount(f, back, mnt, a, NULL, &reader, &st,
                                         (const char *const[]) { step, "go", await, NULL }, &line);
        if (fuse_pid <= 0)
                return;
        pid = wt_process_pid(f->daemon->process);

        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0);
        if (tree)
                make_file(nfile);
        g_assert_cmpint(stat(mnt, &sb), ==, 0);
        g_assert_cmpint(stat(ma, &sb), ==, 0);
        g_assert_cmpint(stat(mnew, &sb), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        stalled_then_seen(f, &reader, &st, fuse_pid, tree ? "hung-new-dir-open" : "hung-appeared", mnt, NULL,
                          g_steal_pointer(&line));
}

static void test_hung_appeared(Fixture *f, gconstpointer data) {
        hung_made_fresh(f, false);
}

static void test_hung_new_dir_open(Fixture *f, gconstpointer data) {
        hung_made_fresh(f, true);
}

/*
 * Issue 24 item 1 as nobody: a pending RECURSIVE path of nobody's, a/new on
 * a FUSE mount of its own that does not answer an open of new for reading
 * (hangfs: bindfs and SIGSTOP cannot stop that request alone). new appears
 * with a file in it, made through the mount: the probe that finds it opens
 * it O_PATH (no request) and asks the file system's kind (answered). The
 * scan that reports what it holds (report-appearance) opened it for
 * reading on the loop, in the probe's completion, and froze watchd for
 * everyone (root's GetStats timed out). Now, on a file system that may
 * stop answering, it is read in jobs of the mount's lane: the lane stalls,
 * root goes on, and once the file system answers the scan reports new/file.
 */
static void test_hung_appeared_scan(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *a = g_build_filename(back, "a", NULL), *mnew = g_build_filename(mnt, "a", "new", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL), *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        fs_pid = nobody_mounts_hangfs(f, HUNG_INOTIFY_CONFIG, back, mnt, "new", /* statfs= */ false);
        if (fs_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
        g_assert_cmpint(chown(a, NOBODY, NOBODY), ==, 0);
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", mnew, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", nfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);

        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0); /* through the mount: the kernel hears of it */
        make_file(nfile);
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-appeared-scan");
        g_assert_cmpint(kill(fs_pid, SIGUSR2), ==, 0); /* it answers */
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/*
 * Issue 24 item 1 as nobody: nobody's RECURSIVE AddWatch of its tree, which
 * holds a FUSE mount of its own that does not answer statfs (hangfs). The
 * walk opens the mount's root in a job of the mount's lane (answered); what
 * kind of file system it is (an fstatfs, a FUSE_STATFS, never cached) was
 * asked on the loop as the crossing was linked, and froze watchd for
 * everyone (root's GetStats timed out). Now it is asked in the job
 * (remote_hint_probe()): the lane stalls, root goes on, nobody's AddWatch
 * waits for its walk, and once the file system answers it is answered and
 * a file made in the mount is heard of.
 */
static void test_hung_crossing(Fixture *f, gconstpointer data) {
        g_autofree char *tree = g_build_filename(f->dir, "tree", NULL), *back = g_build_filename(f->dir, "back", NULL);
        g_autofree char *mnt = g_build_filename(tree, "m", NULL), *file = g_build_filename(mnt, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *line = NULL;
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
        fs_pid = nobody_mounts_hangfs(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ true);
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", file, NULL);
        nobody_start(&st, f, (const char *const[]) { "go", step, "go", await, NULL });

        stuck_go(&st);
        if (!wt_await_stat(reader.proxy, "fs_stalled", 1, TIMEOUT_MS))
                g_error("fs_stalled is %" G_GUINT64_FORMAT ", not 1", wt_stat(reader.proxy, "fs_stalled"));
        root_goes_on(f, &reader, "hung-crossing");
        g_assert_false(readable(st.report_fd)); /* nobody's AddWatch waits for its walk */

        g_assert_cmpint(kill(fs_pid, SIGUSR2), ==, 0); /* it answers */
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        make_file(file);
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

/* The state of root's ListDurable entry NAME ("UID/NAME" for another user's), or NULL. */
#define MANY_MOUNTS 20u

/*
 * Issue 24 item 1 as nobody: one user's share of the threads that wait on
 * file systems is bounded. nobody mounts MANY_MOUNTS bindfs of its own
 * ([poll] fuse = 0), each in a tree of its own, stops every FUSE daemon,
 * and makes a RECURSIVE AddWatch of each tree from a client of its own:
 * each walk's open of its mount waits in a worker of the mount's lane. At
 * most FSWORK_USER_STUCK_MAX (8) lanes of nobody's are held stalled, and the
 * 4 that ran when it was reached: fs_stalled never goes past 12 in 12 s
 * (unbounded, 4 more lanes stalled every 2 s, up to all 20 mounts, and with
 * 64 such mounts every thread was nobody's, everyone's work then falling
 * back to the loop). Root goes on; once the mounts answer, every one of
 * nobody's calls is answered (the walks that waited for the bound run).
 */
static void test_hung_many(Fixture *f, gconstpointer data) {
        g_autofree char *bindfs = g_find_program_in_path("bindfs");
        g_autoptr(GPtrArray) mnts = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) steps = g_ptr_array_new_with_free_func(g_free);
        pid_t pids[MANY_MOUNTS];
        Stuck st[MANY_MOUNTS] = {};
        guint64 most = 0;
        Reader reader;

        for (guint i = 0; i < MANY_MOUNTS; i++) {
                g_autofree char *tree = g_strdup_printf("%s/tree%u", f->dir, i);
                g_autofree char *back = g_strdup_printf("%s/back%u", f->dir, i);
                g_autofree char *sub = g_strdup_printf("%s/a", back);
                char *mnt = g_strdup_printf("%s/mnt", tree);

                g_ptr_array_add(mnts, mnt);
                pids[i] = i == 0 ? nobody_tree_and_mount(f, HUNG_INOTIFY_CONFIG, tree, back, mnt) : 0;
                if (i > 0) {
                        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
                        g_assert_cmpint(chown(tree, NOBODY, NOBODY), ==, 0);
                        pids[i] = nobody_bindfs(bindfs, back, mnt);
                }
                if (pids[i] <= 0)
                        return;
                g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
                g_ptr_array_add(steps, g_strdup_printf("watch %s %u", tree, (unsigned) WATCHD_FLAG_RECURSIVE));
        }
        reader_on_local(f, &reader);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                nobody_start(&st[i], f, (const char *const[]) { "go", steps->pdata[i], NULL });
        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(kill(pids[i], SIGSTOP), ==, 0);
        g_usleep(ENTRY_TIMEOUT_US);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                stuck_go(&st[i]);

        for (gint64 end = g_get_monotonic_time() + 12 * G_USEC_PER_SEC; g_get_monotonic_time() < end;) {
                most = MAX(most, wt_stat(reader.proxy, "fs_stalled"));
                g_usleep(100000);
        }
        g_test_message("figure: hung-many: nobody's walks of %u stopped FUSE mounts: at most %" G_GUINT64_FORMAT
                       " stalled lanes in 12 s",
                       MANY_MOUNTS, most);
        g_assert_cmpuint(most, >=, 8);
        g_assert_cmpuint(most, <=, 12);
        root_goes_on(f, &reader, "hung-many");

        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(kill(pids[i], SIGCONT), ==, 0);
        for (guint i = 0; i < MANY_MOUNTS; i++) {
                g_autofree char *line = stuck_read_line(&st[i]);

                /* An id, or the documented Timeout of a call its file system held too long. */
                if (!g_str_has_prefix(line, "id ") && !strstr(line, "did not answer"))
                        g_error("nobody's RECURSIVE AddWatch of tree%u: %s", i, line);
                nobody_end(&st[i]);
        }
        g_assert_true(wt_await_stat(reader.proxy, "fs_stalled", 0, TIMEOUT_MS));
        reader_done(&reader);
        for (guint i = 0; i < MANY_MOUNTS; i++)
                g_assert_cmpint(umount2(mnts->pdata[i], MNT_DETACH), ==, 0);
}

static char *durable_state_of(WatchdInotify *p, const char *name) {
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_true(watchd_inotify_call_list_durable_sync(p, &list, NULL, &error));
        for (gsize i = 0; i < g_variant_n_children(list); i++) {
                const char *n, *state;

                g_variant_get_child(list, i, "(&s&suu&stttb&s)", &n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    &state);
                if (g_str_equal(n, name))
                        return g_strdup(state);
        }
        return NULL;
}

/* As nobody, whom our policy lets call CreateDurable on the system bus: a
 * durable subscription on nobody's FUSE mount, stopped while watchd
 * restarts. The new watchd takes its name and root goes on; the
 * subscription is "opening" until the file system answers, then watched. */
static void test_hung_durable(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *dir = g_build_filename(back, "dir", NULL), *mdir = g_build_filename(mnt, "dir", NULL);
        g_autofree char *step = NULL, *line = NULL, *state = NULL;
        g_autofree char *name = g_strdup_printf("%u/hung", (unsigned) NOBODY);
        Reader reader;
        Stuck st = {};
        pid_t fuse_pid;
        gint64 t0, started;

        if (!f->bus)
                return;
        fuse_pid = nobody_mounts_bindfs(f, HUNG_CONFIG, back, mnt);
        if (fuse_pid <= 0)
                return;
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        g_assert_cmpint(chown(dir, NOBODY, NOBODY), ==, 0);
        step = g_strconcat("durable hung ", mdir, NULL);
        nobody_start(&st, f, (const char *const[]) { step, NULL });
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "created");
        nobody_end(&st);

        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        g_assert_cmpint(kill(fuse_pid, SIGSTOP), ==, 0);
        t0 = g_get_monotonic_time();
        f->daemon = wt_daemon_start(f->bus, HUNG_CONFIG);
        started = g_get_monotonic_time() - t0;
        g_test_message("figure: hung-durable: watchd restarted with nobody's durable subscription on its stopped "
                       "FUSE mount: name owned after %" G_GINT64_FORMAT " ms",
                       started / 1000);
        reader_on_local(f, &reader);
        root_goes_on(f, &reader, "hung-durable");
        state = durable_state_of(reader.proxy, name);
        g_assert_cmpstr(state, ==, "opening");

        g_assert_cmpint(kill(fuse_pid, SIGCONT), ==, 0);
        for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;;) {
                g_free(state);
                state = durable_state_of(reader.proxy, name);
                if (g_strcmp0(state, "watching") == 0)
                        break;
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(20000);
        }
        reader_done(&reader);
        g_assert_cmpint(umount2(mnt, MNT_DETACH), ==, 0);
}

/*
 * Issue 24 item 1 as nobody: a FUSE mount of nobody's that answers every
 * request but those of watchd's event loop (hangfs, HANGFS_TID: the kernel
 * names the thread that asks), which it never answers while it hangs. So
 * whatever watchd asks that file system on the loop freezes it, and a test
 * of nobody's RECURSIVE tree there, a new directory with a file in it, and
 * a file made deeper, shows that nothing is. Two ways a user's FUSE server
 * can be asked by the kernel when a watch is placed:
 *
 * getattr false (hung-loop-access): without -o default_permissions, a
 * chdir() asks FUSE_ACCESS. A walk's completion made each directory its
 * working directory to place its watch by "." (backend_syscall.c's batch).
 *
 * getattr true (hung-loop-getattr): with -o default_permissions and
 * attributes that never stay cached (attr_timeout=0), inotify_add_watch()'s
 * check of the right to read asks FUSE_GETATTR.
 *
 * Both froze watchd for everyone (root's GetStats timed out) as it placed
 * the watches of nobody's walk on the loop. On a file system that may stop
 * answering, the watch is placed in the job that opened the directory.
 */
static void hung_loop(Fixture *f, bool getattr) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *deep = g_build_filename(back, "a", "x", "y", NULL);
        g_autofree char *ma = g_build_filename(mnt, "a", NULL), *mnew = g_build_filename(ma, "new", NULL);
        g_autofree char *nfile = g_build_filename(mnew, "file", NULL);
        g_autofree char *yfile = g_build_filename(ma, "x", "y", "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *await2 = NULL, *line = NULL;
        const char *what = getattr ? "hung-loop-getattr" : "hung-loop-access";
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        for (char *p = deep; strlen(p) > strlen(back); *strrchr(p, '/') = '\0')
                g_assert_cmpint(chown(p, NOBODY, NOBODY), ==, 0);
        fs_pid = hangfs_mount(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ false, /* loop= */ true,
                              getattr ? "default_permissions,attr_timeout=0,entry_timeout=0" : NULL);
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strdup_printf("watch %s %u", ma, (unsigned) WATCHD_FLAG_RECURSIVE);
        await = g_strconcat("await ", nfile, NULL);
        await2 = g_strconcat("await ", yfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, "go", await2, NULL });
        root_goes_on(f, &reader, what);
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch: %s", line);

        g_assert_cmpint(g_mkdir(mnew, 0755), ==, 0); /* through the mount: the kernel hears of it */
        make_file(nfile);
        root_goes_on(f, &reader, what);
        stuck_go(&st);
        g_free(line);
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "seen");
        make_file(yfile);                                            /* below the tree's first walk */
        g_assert_cmpint(wt_stat(reader.proxy, "fs_stalled"), ==, 0); /* nothing of nobody's waited either */
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

static void test_hung_loop_access(Fixture *f, gconstpointer data) {
        hung_loop(f, false);
}

static void test_hung_loop_getattr(Fixture *f, gconstpointer data) {
        hung_loop(f, true);
}

/*
 * The same hang (as hung-loop-getattr: FUSE_GETATTR at every check of the
 * right to read), for a pending path on nobody's mount (MISSING PATHS in
 * watchd(8)): an AddWatch of mnt/a/p/q while only a is there, then p
 * made, then q, then a file in q. The links of the path's chain (the
 * mount's root, a, then p) and q's own watch when it appears were placed
 * on the loop (missing_follow.c), and froze it in inotify_add_watch() as
 * the walk's did. (Without default_permissions placing a watch asks FUSE
 * nothing, and the chain's links were never placed by fchdir().)
 */
static void test_hung_loop_pending(Fixture *f, gconstpointer data) {
        g_autofree char *back = g_build_filename(f->dir, "back", NULL), *mnt = g_build_filename(f->dir, "mnt", NULL);
        g_autofree char *ba = g_build_filename(back, "a", NULL), *mp = g_build_filename(mnt, "a", "p", NULL);
        g_autofree char *mq = g_build_filename(mp, "q", NULL), *qfile = g_build_filename(mq, "file", NULL);
        g_autofree char *step = NULL, *await = NULL, *await2 = NULL, *line = NULL;
        const char *what = "hung-loop-pending";
        Reader reader;
        Stuck st = {};
        pid_t fs_pid;

        if (!f->bus)
                return;
        g_assert_cmpint(g_mkdir_with_parents(ba, 0755), ==, 0);
        g_assert_cmpint(chown(ba, NOBODY, NOBODY), ==, 0);
        fs_pid = hangfs_mount(f, HUNG_INOTIFY_CONFIG, back, mnt, "-", /* statfs= */ false, /* loop= */ true,
                              "default_permissions,attr_timeout=0,entry_timeout=0");
        if (fs_pid <= 0)
                return;
        reader_on_local(f, &reader);
        step = g_strconcat("watch ", mq, " 0", NULL);
        await = g_strconcat("await ", mq, NULL); /* its appearance */
        await2 = g_strconcat("await ", qfile, NULL);
        nobody_start(&st, f, (const char *const[]) { step, "go", await, "go", await2, NULL });
        line = stuck_read_line(&st);
        if (!g_str_has_prefix(line, "id "))
                g_error("nobody's AddWatch of a pending path: %s", line);
        root_goes_on(f, &reader, what);

        g_assert_cmpint(g_mkdir(mp, 0755), ==, 0); /* through the mount: the kernel hears of it */
        root_goes_on(f, &reader, what);
        g_assert_cmpint(g_mkdir(mq, 0755), ==, 0);
        root_goes_on(f, &reader, what);
        stuck_go(&st);
        g_free(line);
        line = stuck_read_line(&st);
        g_assert_cmpstr(line, ==, "seen");
        make_file(qfile);
        root_goes_on(f, &reader, what);
        g_assert_cmpint(wt_stat(reader.proxy, "fs_stalled"), ==, 0); /* nothing of nobody's waited either */
        stuck_go(&st);
        nobody_sees_last(&st, &reader, mnt, g_steal_pointer(&line));
}

int main(int argc, char *argv[]) {
        static const Params system_bus = { .system = TRUE }, session_bus = { .system = FALSE },
                            system_bus_error = { .system = TRUE, .mode = PING_ERROR },
                            system_bus_denied = { .system = TRUE, .deny_ping = TRUE },
                            system_bus_long = { .system = TRUE, .bus_timeout = "250ms", .stuck_ms = 3000 },
                            system_bus_caps = { .system = TRUE, .config = CROWD_CONFIG },
                            system_bus_hung = { .system = TRUE, .config = HUNG_CONFIG },
                            system_bus_hung_inotify = { .system = TRUE, .config = HUNG_INOTIFY_CONFIG };

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
        g_test_add("/system-bus/hung-fuse", Fixture, &system_bus_hung, fixture_setup, test_hung_fuse, fixture_teardown);
        g_test_add("/system-bus/hung-walk", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_walk,
                   fixture_teardown);
        g_test_add("/system-bus/hung-pending", Fixture, &system_bus_hung, fixture_setup, test_hung_pending,
                   fixture_teardown);
        g_test_add("/system-bus/hung-durable", Fixture, &system_bus_hung, fixture_setup, test_hung_durable,
                   fixture_teardown);
        g_test_add("/system-bus/hung-many", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_many,
                   fixture_teardown);
        g_test_add("/system-bus/hung-pending-add", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_pending_add, fixture_teardown);
        g_test_add("/system-bus/hung-new-dir", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_new_dir,
                   fixture_teardown);
        g_test_add("/system-bus/hung-persist", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_persist,
                   fixture_teardown);
        g_test_add("/system-bus/hung-narrow", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_narrow,
                   fixture_teardown);
        g_test_add("/system-bus/hung-add-watch-fd", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_add_watch_fd, fixture_teardown);
        g_test_add("/system-bus/hung-appeared", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_appeared,
                   fixture_teardown);
        g_test_add("/system-bus/hung-new-dir-open", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_new_dir_open, fixture_teardown);
        g_test_add("/system-bus/hung-appeared-scan", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_appeared_scan, fixture_teardown);
        g_test_add("/system-bus/hung-crossing", Fixture, &system_bus_hung_inotify, fixture_setup, test_hung_crossing,
                   fixture_teardown);
        g_test_add("/system-bus/hung-loop-access", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_access, fixture_teardown);
        g_test_add("/system-bus/hung-loop-getattr", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_getattr, fixture_teardown);
        g_test_add("/system-bus/hung-loop-pending", Fixture, &system_bus_hung_inotify, fixture_setup,
                   test_hung_loop_pending, fixture_teardown);
        return g_test_run();
}
