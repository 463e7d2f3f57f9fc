/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * wt-fixture - what every D-Bus test does with the harness of watchd-test.h
 *
 * One fixture (a private bus, watchd with a config text, two clients of the
 * test's uid, each with its connection, proxy and collector of signals), one
 * AddWatch, one collector of Events, Overflow and WatchRemoved with waits for
 * a count or a condition (never a sleep), and a way to run a program of the
 * build tree as nobody. Used by tests/dbus, tests/robustness and
 * tests/watchctl.
 *
 * A test program registers each case once, in main():
 *
 *   WT_CASE("/dbus/events", NULL, test_events);              // with a WtFixture
 *   WT_CASE("/dbus/limits", "[limits]\n...", test_limits);  // config: watchd.conf text
 *   WT_CASE_FUNC("/dbus/command-line", test_command_line);  // no fixture
 *
 * tests/meson.build reads these lines from the source (the first string of
 * each WT_CASE or WT_CASE_FUNC, or of a plain g_test_add or g_test_add_func)
 * and makes each case a meson test of its own, run as "PROGRAM --tap -p
 * PATH", so that a case that aborts fails alone. Its "<program>/cases" test
 * checks that the program's own list (-l) is exactly what meson runs. So:
 * one call a case, its whole path a literal (not built by a macro). Adding
 * a program is one line in its directory's meson.build.
 */

#include "watchd-test.h"

/* ---------------------------------------------------------------- collecting signals */

typedef struct WtRecord {
        guint32 id, mask, cookie;
        char *path, *new_path; /* new_path "" unless a paired rename */
        gboolean packed;       /* came in EventsPacked (paths as bytes), not Events */
} WtRecord;

typedef struct WtCollector {
        gboolean count_only;    /* set before events come: count records, keep none (storms) */
        GArray *records;        /* WtRecord, in arrival order */
        guint64 n_records;      /* records received, kept or not */
        guint n_signals;        /* Events and EventsPacked signals */
        guint n_packed;         /* EventsPacked signals of them */
        gsize max_packed_bytes; /* the most frames' bytes in one EventsPacked */
        guint max_batch;        /* most records in one Events signal */
        GArray *overflow_ids;   /* guint32: the ids of every Overflow signal, together */
        guint n_overflows;      /* Overflow signals */
        GPtrArray *removed;     /* "ID REASON" of each WatchRemoved */

        /* Where the signals come from: a proxy's GObject signals, or a connection's subscription. */
        WatchdInotify *proxy;
        gulong handlers[4];
        GDBusConnection *conn;
        guint subscription;
} WtCollector;

/* Collects what proxy's client receives (the proxy's own signals: from watchd only). */
void wt_collector_init(WtCollector *c, WatchdInotify *proxy);
/* Collects every org.example.Inotify signal that the bus routes to conn, from any
 * sender: a match rule on the interface only, for listeners that never call watchd. */
void wt_collector_init_listener(WtCollector *c, GDBusConnection *conn);
/* Disconnects and frees what was collected. */
void wt_collector_clear(WtCollector *c);

/* The index of the first record with this path and all of these mask bits, or -1. */
int wt_collector_find(WtCollector *c, const char *path, guint32 mask);
WtRecord *wt_collector_record(WtCollector *c, guint i);
gboolean wt_collector_has_removed(WtCollector *c, guint32 id, const char *reason);
gboolean wt_collector_has_overflow_id(WtCollector *c, guint32 id);
/* How many IN_CREATE records each path got (path -> count), over all of c's records. */
GHashTable *wt_collector_create_counts(WtCollector *c);
/* Every path in want was reported created exactly once. */
void wt_collector_assert_created_once(WtCollector *c, GPtrArray *want);

/* Awaits a record for path with all of mask's bits; returns it, or fails the test at timeout_ms. */
WtRecord *wt_await_record(WtCollector *c, const char *path, guint32 mask, int timeout_ms);
/* Awaits n_records >= n, n_overflows >= n, WatchRemoved(id, reason); FALSE at timeout_ms. */
gboolean wt_await_records(WtCollector *c, guint64 n, int timeout_ms);
gboolean wt_await_overflows(WtCollector *c, guint n, int timeout_ms);
gboolean wt_await_removed(WtCollector *c, guint32 id, const char *reason, int timeout_ms);

/* ---------------------------------------------------------------- clients */

/* A client of its own: a new connection, the proxy on it, and what it receives. */
typedef struct WtClient {
        GDBusConnection *conn;
        WatchdInotify *proxy;
        WtCollector events;
} WtClient;

WtClient *wt_client_new(WtBus *bus);
void wt_client_free(WtClient *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WtClient, wt_client_free)

/* AddWatch, synchronously. Returns the id; on failure returns 0 with *error set,
 * or, if error is NULL, fails the test saying why. */
guint32 wt_add_watch(WatchdInotify *p, const char *path, guint32 mask, guint32 flags, GError **error);
/* Asserts that AddWatch fails with the D-Bus error name want. */
void wt_add_watch_fails(WatchdInotify *p, const char *path, guint32 mask, guint32 flags, const char *want);
/* Another client is answered within a second: the daemon serves everyone. */
void wt_assert_responsive(WatchdInotify *other);

/* ---------------------------------------------------------------- the fixture */

typedef struct WtFixture {
        WtBus *bus;
        WtDaemon *daemon;              /* a test may stop it and set NULL, or start another */
        GDBusConnection *conn, *conn2; /* two clients of the test's uid */
        WatchdInotify *proxy, *proxy2;
        WtCollector a, b; /* what proxy and proxy2 received */
        char *dir;        /* BUS_DIR/files, mode 0755: the test's files */
        char *fast;       /* wt_fixture_fast_dir(): on tmpfs, made on first use */
} WtFixture;

/* g_test_add()'s setup and teardown; config is watchd.conf's text (NULL: defaults).
 * The teardown fails the test unless watchd exits with status 0 on SIGTERM. */
void wt_fixture_setup(WtFixture *f, gconstpointer config);
void wt_fixture_teardown(WtFixture *f, gconstpointer config);
/* A directory on tmpfs (/dev/shm) for big trees and storms, removed by the teardown. */
const char *wt_fixture_fast_dir(WtFixture *f);
/* DIR/name (the caller frees). */
char *wt_fixture_path(WtFixture *f, const char *name);
/* mkdir -p DIR/rel. */
void wt_fixture_mkdir_p(WtFixture *f, const char *rel);

#define WT_CASE(path, config, fn) g_test_add((path), WtFixture, (config), wt_fixture_setup, (fn), wt_fixture_teardown)
#define WT_CASE_FUNC(path, fn)    g_test_add_func((path), (fn))

/* ---------------------------------------------------------------- files and processes */

/* Creates path if need be and closes it: IN_CREATE the first time, IN_CLOSE_WRITE. */
void wt_touch(const char *path);
/* The pid of a running child (watchd, dbus-daemon, a helper). */
pid_t wt_process_pid(GSubprocess *p);
/* A "Key:" line of /proc/PID/status as a number (hexadecimal for Cap*);
 * pid: "self" or a process id. */
guint64 wt_proc_status(const char *pid, const char *key);
/* A GSubprocessLauncher child setup (user_data NULL): the child dies with the test. */
/* The pid of the bindfs serving mnt (it daemonizes: found by its command line), 0 if none. */
pid_t wt_bindfs_pid(const char *mnt);
void wt_child_die_with_parent(gpointer user_data);

/*
 * Makes l run program as nobody (65534, no groups) and returns the path to
 * run (the caller frees). The build tree may sit in a directory nobody
 * cannot enter (a clone in /root, mode 0700), so program is copied into a
 * new directory under bus->dir, which anyone can enter, and so is every
 * shared library it loads from a directory nobody cannot enter (found
 * beside it through LD_LIBRARY_PATH). Returns NULL with *error set if
 * nobody cannot reach bus->dir either (TMPDIR in such a directory): the
 * test then skips, saying so.
 */
char *wt_launcher_as_nobody(GSubprocessLauncher *l, WtBus *bus, const char *program, GError **error);
