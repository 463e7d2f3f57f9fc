/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * watchd-test - a private dbus-daemon and a real watchd, for tests
 *
 * Used by tests/dbus and tests/watchctl. Everything lives in one temporary
 * directory (mode 0755, so a client running as nobody can reach the bus
 * socket): the bus config and socket, watchd's config and its log.
 *
 *   WtBus *bus = wt_bus_start();                   // dbus-daemon --nofork
 *   WtDaemon *d = wt_daemon_start(bus, "[limits]\nmax_watches_per_client = 10\n");
 *   GDBusConnection *c = wt_connect(bus);          // a new private connection
 *   WatchdInotify *p = wt_proxy(c);                // generated from the API XML
 *   ...
 *   wt_daemon_stop(d);                             // SIGTERM; returns the exit status
 *   wt_bus_stop(bus);
 *
 * Failures to set up abort the test with a message (g_error): a test that
 * cannot start its daemon must not pass. watchd is found in $WATCHD, else at
 * the path the build gave (WATCHD_EXE). $WATCHD_TEST_WRAPPER, if set, is a
 * command line put before watchd's (e.g. "valgrind --error-exitcode=99"):
 * tests/robustness/valgrind-dbus uses it.
 */

#include <gio/gio.h>
#include <sys/types.h>

#include "watchd-gdbus.h"

typedef struct WtBus {
        char *dir;     /* temporary directory, removed by wt_bus_stop() */
        char *address; /* unix:path=... */
        GSubprocess *process;
} WtBus;

typedef struct WtDaemon {
        WtBus *bus;
        char *config_path;
        char *log_path;
        GSubprocess *process;
} WtDaemon;

WtBus *wt_bus_start(void);
void wt_bus_stop(WtBus *bus);
/* rm -rf dir (symbolic links are removed, not followed). */
void wt_remove_tree(const char *dir);
/* A new directory on tmpfs (/dev/shm) if there is one, else in TMPDIR: big
 * trees are made fast there. The caller removes it (wt_remove_tree). */
char *wt_make_fast_dir(void);

/* Writes config (may be NULL: defaults) and starts "watchd --address ... --config ...
 * --backend syscall" plus extra_args (and "--state-dir BUS_DIR/state" unless they
 * have a --state-dir: durable subscriptions never go to /var/lib/watchd from a
 * test); returns once it owns org.example.Inotify. */
WtDaemon *wt_daemon_start(WtBus *bus, const char *config);
WtDaemon *wt_daemon_start_full(WtBus *bus, const char *config, const char *const *extra_args);
/* SIGTERM and wait; returns the exit status (or 128+signal). Frees d. */
int wt_daemon_stop(WtDaemon *d);
/* watchd's stderr so far (caller frees). */
char *wt_daemon_log(WtDaemon *d);

/* Whether the tests' bounds on time hold here: not when watchd runs under a
 * wrapper (valgrind, tens of times slower) nor when it is built with
 * sanitizers (tests/robustness/sanitize sets WATCHD_TEST_NO_TIMING=1). */
gboolean wt_timing_checked(void);

/* Whether the kernel's inotify queue (max_queued_events, stored in *ret_max)
 * is small enough to overflow quickly; if not, the test is skipped. */
gboolean wt_can_overflow(guint *ret_max);
/* Stops watchd (SIGSTOP, pid) and overflows the kernel's queue with files
 * made and removed in dir, which it watches: what happens next is lost
 * until the caller sends SIGCONT. */
void wt_stop_and_overflow(pid_t pid, const char *dir, guint max);
/* watchd's path, as used by wt_daemon_start(). */
const char *wt_watchd_path(void);

/* A new private connection to the bus (registered with the bus driver). */
GDBusConnection *wt_connect(WtBus *bus);
/* The generated proxy for org.example.Inotify on c (no autostart). */
WatchdInotify *wt_proxy(GDBusConnection *c);

/* One GetStats value as a number ("clients", "kernel_watches", ...); fails the test if absent. */
guint64 wt_stat(WatchdInotify *proxy, const char *key);
/* Polls GetStats until key == value or timeout_ms passes. Returns whether it got there. */
gboolean wt_await_stat(WatchdInotify *proxy, const char *key, guint64 value, int timeout_ms);

/* Iterates the default main context until *flag is set or timeout_ms passes. */
gboolean wt_await_flag(gboolean *flag, int timeout_ms);
/* The same for a condition computed by fn. */
gboolean wt_await(gboolean (*fn)(gpointer), gpointer data, int timeout_ms);

/* A GSubprocessLauncher child setup (user_data NULL) that becomes nobody (65534) with no groups. */
void wt_child_become_nobody(gpointer user_data);

/*
 * A bus configured like Debian's system bus, for the tests of what the
 * system bus's policy changes (tests/dbus/test-system-bus.c; the hung-*
 * cases of test-hung-calls.c and test-hung-changes.c run on it too).
 *
 * Its configuration is Debian's own /usr/share/dbus-1/system.conf, read at
 * run time, with its default-deny policy and its limits unchanged (method
 * calls denied unless a policy file allows them, no name owned unless
 * allowed, 128 pending replies per connection, the default memory limits),
 * and with our installed policy, data/org.example.Inotify.conf, as the only
 * policy file. What a test must change, and nothing else, is changed: see
 * wt_system_bus_start_with_policy() in watchd-test.c for the list and the
 * reasons. The daemon must run as root to own its name there, as on a real
 * system (wt_daemon_start() on this bus needs a root test).
 */
WtBus *wt_system_bus_start(void);
/* The same with policy_path (a copy of our policy a test has changed) instead of ours. */
WtBus *wt_system_bus_start_with_policy(const char *policy_path);
/* data/org.example.Inotify.conf in the source tree: the file "meson install" installs. */
const char *wt_policy_path(void);

/* wt_daemon_start() with env ("NAME=value" strings, NULL-terminated) added to
 * watchd's environment: the test's own environment cannot be changed once
 * threads run (setenv is not thread-safe). */
WtDaemon *wt_daemon_start_env(WtBus *bus, const char *config, const char *const *env);
