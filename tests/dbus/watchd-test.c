/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchd-test - a private dbus-daemon and a real watchd, for tests
 *
 * The bus allows any uid to connect and send (the nobody tests need that),
 * with EXTERNAL authentication only. Its pending-reply limit is raised from
 * dbus-daemon's default of 128 so that a flood of calls reaches watchd and
 * is limited by watchd's own limits, which is what the tests check.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "watchd-test.h"

#ifndef WATCHD_EXE
#define WATCHD_EXE "watchd"
#endif

/* clang-format off */
static const char bus_config[] =
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
        " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
        "<busconfig>\n"
        "  <type>session</type>\n"
        "  <listen>unix:path=%s/bus</listen>\n"
        "  <auth>EXTERNAL</auth>\n"
        "  <limit name=\"max_replies_per_connection\">50000</limit>\n"
        "  <limit name=\"max_incoming_bytes\">1000000000</limit>\n"
        "  <policy context=\"default\">\n"
        "    <allow user=\"*\"/>\n"
        "    <allow own=\"*\"/>\n"
        "    <allow send_destination=\"*\"/>\n"
        "    <allow receive_sender=\"*\"/>\n"
        "  </policy>\n"
        "</busconfig>\n";
/* clang-format on */

/* Children die with the test: a failed assertion must not leave a daemon
 * holding the test's output pipe open (meson would wait for it). */
static void child_die_with_parent(gpointer user_data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

const char *wt_watchd_path(void) {
        const char *p = g_getenv("WATCHD");
        return p && *p ? p : WATCHD_EXE;
}

WtBus *wt_bus_start(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GDataInputStream) in = NULL;
        g_autofree char *conf = NULL, *conf_path = NULL, *line = NULL;
        WtBus *bus = g_new0(WtBus, 1);

        bus->dir = g_dir_make_tmp("watchd-test-XXXXXX", &error);
        g_assert_no_error(error);
        g_assert_cmpint(g_chmod(bus->dir, 0755), ==, 0);

        conf = g_strdup_printf(bus_config, bus->dir);
        conf_path = g_build_filename(bus->dir, "bus.conf", NULL);
        g_file_set_contents(conf_path, conf, -1, &error);
        g_assert_no_error(error);

        {
                g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                             G_SUBPROCESS_FLAGS_STDERR_SILENCE);
                g_subprocess_launcher_set_child_setup(l, child_die_with_parent, NULL, NULL);
                bus->process = g_subprocess_launcher_spawn(l, &error, "dbus-daemon", "--nofork", "--print-address",
                                                           "--config-file", conf_path, NULL);
        }
        if (!bus->process)
                g_error("Cannot start dbus-daemon: %s", error->message);

        in = g_data_input_stream_new(g_subprocess_get_stdout_pipe(bus->process));
        line = g_data_input_stream_read_line(in, NULL, NULL, &error);
        if (!line)
                g_error("dbus-daemon printed no address: %s", error ? error->message : "end of file");
        bus->address = g_strdup(g_strstrip(line));
        return bus;
}

void wt_remove_tree(const char *dir) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;

        if (!d)
                return;
        while ((name = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(dir, name, NULL);

                if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
                        wt_remove_tree(p);
                else
                        (void) g_unlink(p);
        }
        (void) g_rmdir(dir);
}

char *wt_make_fast_dir(void) {
        g_autoptr(GError) error = NULL;
        char *d;

        if (access("/dev/shm", W_OK) == 0) {
                d = g_build_filename("/dev/shm", "watchd-test-XXXXXX", NULL);
                if (g_mkdtemp(d))
                        return d;
                g_free(d);
        }
        d = g_dir_make_tmp("watchd-test-XXXXXX", &error);
        g_assert_no_error(error);
        return d;
}

void wt_bus_stop(WtBus *bus) {
        if (!bus)
                return;
        g_subprocess_send_signal(bus->process, SIGTERM);
        (void) g_subprocess_wait(bus->process, NULL, NULL);
        g_object_unref(bus->process);
        wt_remove_tree(bus->dir);
        g_free(bus->dir);
        g_free(bus->address);
        g_free(bus);
}

GDBusConnection *wt_connect(WtBus *bus) {
        g_autoptr(GError) error = NULL;
        GDBusConnection *c;

        c = g_dbus_connection_new_for_address_sync(bus->address,
                                                   G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                           G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                   NULL, NULL, &error);
        if (!c)
                g_error("Cannot connect to %s: %s", bus->address, error->message);
        g_dbus_connection_set_exit_on_close(c, FALSE);
        return c;
}

WatchdInotify *wt_proxy(GDBusConnection *c) {
        g_autoptr(GError) error = NULL;
        WatchdInotify *p;

        p = watchd_inotify_proxy_new_sync(c, G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START, "org.example.Inotify",
                                          "/org/example/Inotify", NULL, &error);
        if (!p)
                g_error("Cannot make the proxy: %s", error->message);
        /* The flood tests keep many calls in flight: no client-side timeout shorter than the test's. */
        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(p), 60000);
        return p;
}

static gboolean name_has_owner(GDBusConnection *c, const char *name) {
        g_autoptr(GVariant) r = NULL;
        gboolean has = FALSE;

        r = g_dbus_connection_call_sync(c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "NameHasOwner", g_variant_new("(s)", name), G_VARIANT_TYPE("(b)"),
                                        G_DBUS_CALL_FLAGS_NONE, 5000, NULL, NULL);
        if (r)
                g_variant_get(r, "(b)", &has);
        return has;
}

/* "NAME=value" strings added to watchd's environment (wt_daemon_start_env()). */
static const char *const *daemon_env;

WtDaemon *wt_daemon_start_full(WtBus *bus, const char *config, const char *const *extra_args) {
        g_autoptr(GSubprocessLauncher) l = NULL;
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(GError) error = NULL;
        g_auto(GStrv) wrapper_argv = NULL;
        const char *wrapper = g_getenv("WATCHD_TEST_WRAPPER");
        WtDaemon *d = g_new0(WtDaemon, 1);
        g_autofree char *state_dir = g_build_filename(bus->dir, "state", NULL);
        gboolean has_state_dir = FALSE;
        gint64 deadline;

        d->bus = bus;
        d->config_path = g_build_filename(bus->dir, "watchd.conf", NULL);
        d->log_path = g_build_filename(bus->dir, "watchd.log", NULL);
        /* RECURSIVE trees on inotify, as the tests expect, whatever helper
         * this machine runs at fanotify_helper's default (an installed
         * watchd's): a test of the fanotify backend says tree_backend itself
         * (tests/dbus/test-fanotify.c), and this line comes first. */
        {
                g_autofree char *text = g_strconcat(
                        config && strstr(config, "tree_backend") ? "" : "[daemon]\ntree_backend = inotify\n",
                        config ? config : "", NULL);

                g_file_set_contents(d->config_path, text, -1, &error);
        }
        g_assert_no_error(error);

        /* WATCHD_TEST_WRAPPER="valgrind --leak-check=full ..." runs watchd under it. */
        if (wrapper && *wrapper) {
                if (!g_shell_parse_argv(wrapper, NULL, &wrapper_argv, &error))
                        g_error("WATCHD_TEST_WRAPPER: %s", error->message);
                for (size_t i = 0; wrapper_argv[i]; i++)
                        g_ptr_array_add(argv, wrapper_argv[i]);
        }
        g_ptr_array_add(argv, (gpointer) wt_watchd_path());
        g_ptr_array_add(argv, (gpointer) "--address");
        g_ptr_array_add(argv, bus->address);
        g_ptr_array_add(argv, (gpointer) "--config");
        g_ptr_array_add(argv, d->config_path);
        g_ptr_array_add(argv, (gpointer) "--backend");
        g_ptr_array_add(argv, (gpointer) "syscall");
        for (size_t i = 0; extra_args && extra_args[i]; i++) {
                g_ptr_array_add(argv, (gpointer) extra_args[i]);
                has_state_dir = has_state_dir || strcmp(extra_args[i], "--state-dir") == 0;
        }
        /* Durable subscriptions in the test's directory, never in /var/lib/watchd. */
        if (!has_state_dir) {
                g_ptr_array_add(argv, (gpointer) "--state-dir");
                g_ptr_array_add(argv, state_dir);
        }
        g_ptr_array_add(argv, NULL);

        l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
        for (size_t i = 0; daemon_env && daemon_env[i]; i++) {
                g_auto(GStrv) kv = g_strsplit(daemon_env[i], "=", 2);
                g_subprocess_launcher_setenv(l, kv[0], kv[1] ? kv[1] : "", TRUE);
        }
        g_subprocess_launcher_set_stderr_file_path(l, d->log_path);
        g_subprocess_launcher_set_child_setup(l, child_die_with_parent, NULL, NULL);
        d->process = g_subprocess_launcher_spawnv(l, (const char *const *) argv->pdata, &error);
        if (!d->process)
                g_error("Cannot start %s: %s", wt_watchd_path(), error->message);

        /* Await the name; stop early if watchd died. */
        c = wt_connect(bus);
        deadline = g_get_monotonic_time() + (wrapper && *wrapper ? 60 : 10) * G_USEC_PER_SEC;
        while (!name_has_owner(c, "org.example.Inotify")) {
                if (g_get_monotonic_time() > deadline || !g_subprocess_get_identifier(d->process)) {
                        g_autofree char *log = wt_daemon_log(d);
                        g_error("watchd did not take its name. Its log:\n%s", log);
                }
                g_usleep(5000);
        }
        g_dbus_connection_close_sync(c, NULL, NULL);
        return d;
}

WtDaemon *wt_daemon_start(WtBus *bus, const char *config) {
        return wt_daemon_start_full(bus, config, NULL);
}

char *wt_daemon_log(WtDaemon *d) {
        char *s = NULL;

        if (!g_file_get_contents(d->log_path, &s, NULL, NULL))
                s = g_strdup("(no log)");
        return s;
}

gboolean wt_timing_checked(void) {
        const char *w = g_getenv("WATCHD_TEST_WRAPPER");

        return (!w || !*w) && g_strcmp0(g_getenv("WATCHD_TEST_NO_TIMING"), "1") != 0;
}

gboolean wt_can_overflow(guint *ret_max) {
        g_autofree char *s = NULL;

        g_assert_true(g_file_get_contents("/proc/sys/fs/inotify/max_queued_events", &s, NULL, NULL));
        *ret_max = (guint) g_ascii_strtoull(s, NULL, 10);
        if (*ret_max > 40000) {
                g_test_skip("max_queued_events is too large to overflow quickly");
                return FALSE;
        }
        return TRUE;
}

void wt_stop_and_overflow(pid_t pid, const char *dir, guint max) {
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (guint i = 0; i < max / 2 + 16; i++) {
                g_autofree char *p = g_strdup_printf("%s/%u", dir, i);
                int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

                g_assert_cmpint(fd, >=, 0);
                close(fd);
                g_assert_cmpint(unlink(p), ==, 0);
        }
}

int wt_daemon_stop(WtDaemon *d) {
        int status;

        if (g_subprocess_get_identifier(d->process))
                g_subprocess_send_signal(d->process, SIGTERM);
        (void) g_subprocess_wait(d->process, NULL, NULL);
        if (g_subprocess_get_if_signaled(d->process))
                status = 128 + g_subprocess_get_term_sig(d->process);
        else
                status = g_subprocess_get_exit_status(d->process);
        g_object_unref(d->process);
        g_free(d->config_path);
        g_free(d->log_path);
        g_free(d);
        return status;
}

guint64 wt_stat(WatchdInotify *proxy, const char *key) {
        g_autoptr(GVariant) stats = NULL, v = NULL;
        g_autoptr(GError) error = NULL;

        watchd_inotify_call_get_stats_sync(proxy, &stats, NULL, &error);
        g_assert_no_error(error);
        v = g_variant_lookup_value(stats, key, NULL);
        if (!v)
                g_error("GetStats has no '%s'", key);
        if (g_variant_is_of_type(v, G_VARIANT_TYPE_UINT32))
                return g_variant_get_uint32(v);
        if (g_variant_is_of_type(v, G_VARIANT_TYPE_UINT64))
                return g_variant_get_uint64(v);
        g_error("GetStats '%s' is not a number", key);
}

gboolean wt_await_stat(WatchdInotify *proxy, const char *key, guint64 value, int timeout_ms) {
        gint64 deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;

        for (;;) {
                if (wt_stat(proxy, key) == value)
                        return TRUE;
                if (g_get_monotonic_time() > deadline)
                        return FALSE;
                g_usleep(2000);
        }
}

static gboolean on_timeout(gpointer data) {
        *(gboolean *) data = TRUE;
        return G_SOURCE_REMOVE;
}

gboolean wt_await(gboolean (*fn)(gpointer), gpointer data, int timeout_ms) {
        gboolean timed_out = FALSE;
        guint id = g_timeout_add(timeout_ms, on_timeout, &timed_out);

        while (!fn(data) && !timed_out)
                g_main_context_iteration(NULL, TRUE);
        if (!timed_out)
                g_source_remove(id);
        return fn(data);
}

static gboolean flag_is_set(gpointer data) {
        return *(gboolean *) data;
}

gboolean wt_await_flag(gboolean *flag, int timeout_ms) {
        return wt_await(flag_is_set, flag, timeout_ms);
}

void wt_child_become_nobody(gpointer user_data) {
        /* After fork, before exec: only async-signal-safe calls. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                _exit(126);
}

/* ---------------------------------------------------------------- a bus like the system bus */

#ifndef WATCHD_POLICY
#define WATCHD_POLICY "data/org.example.Inotify.conf"
#endif
#define SYSTEM_CONF "/usr/share/dbus-1/system.conf"

const char *wt_policy_path(void) {
        return WATCHD_POLICY;
}

/* text made safe as XML character data and as a GRegex replacement (backslashes). */
static char *conf_literal(const char *text) {
        g_autofree char *xml = g_markup_escape_text(text, -1);
        g_auto(GStrv) parts = g_strsplit(xml, "\\", -1);
        return g_strjoinv("\\\\", parts);
}

/* Replaces every match of pattern in *conf by replacement (a GRegex
 * replacement, \0 for the match) and fails the test unless there were
 * exactly want matches: if Debian's system.conf changes shape, the test bus
 * must not quietly become something else. */
static void conf_edit(char **conf, const char *pattern, const char *replacement, int want) {
        g_autoptr(GRegex) re = g_regex_new(pattern, G_REGEX_MULTILINE, 0, NULL);
        g_autoptr(GMatchInfo) mi = NULL;
        g_autoptr(GError) error = NULL;
        char *edited;
        int n = 0;

        g_assert_nonnull(re);
        for (g_regex_match(re, *conf, 0, &mi); g_match_info_matches(mi); g_match_info_next(mi, NULL))
                n++;
        if (n != want)
                g_error("%s: '%s' occurs %d times, the test bus expects %d: update wt_system_bus_start_with_policy()",
                        SYSTEM_CONF, pattern, n, want);
        edited = g_regex_replace(re, *conf, -1, 0, replacement, 0, &error);
        g_assert_no_error(error);
        g_free(*conf);
        *conf = edited;
}

/*
 * Debian's system.conf, changed only where a test must differ from a
 * booted system:
 *   <user>messagebus</user>    removed: the bus runs as the test's user (a
 *                              bus that switched to messagebus could not
 *                              be stopped and cleaned up by the test, and
 *                              who runs the bus plays no part in its policy);
 *   <fork/>                    removed: the test runs it with --nofork and
 *                              reads its address on stdout;
 *   <pidfile>, <syslog/>       removed: no /run/dbus/pid (the real bus's),
 *                              no test messages in the system log;
 *   <listen>                   a socket in the test's directory instead of
 *                              /run/dbus/system_bus_socket (the real bus's);
 *   <standard_system_servicedirs/>, <servicehelper>
 *                              removed: no activation, the test starts
 *                              watchd itself (and the setuid helper would
 *                              start the installed one);
 *   <includedir>system.d</includedir>, <includedir>/etc/dbus-1/system.d</includedir>
 *                              replaced by one <include> of policy_path:
 *                              our policy, as "meson install" installs it,
 *                              is the only service policy, so every hole in
 *                              the default-deny rules is one we punched;
 *   <include>/etc/dbus-1/system.conf</include>, <include>/etc/dbus-1/system-local.conf</include>
 *                              removed: this host's local changes are not
 *                              what the test is about.
 * Everything else stays: <type>system</type>, EXTERNAL authentication, the
 * default-deny policy (method calls, name ownership), the rules for root,
 * the built-in limits (max_replies_per_connection 128, the memory limits)
 * and the SELinux include (ignored when SELinux is off).
 */
WtBus *wt_system_bus_start_with_policy(const char *policy_path) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GDataInputStream) in = NULL;
        g_autoptr(GSubprocessLauncher) l = NULL;
        g_autofree char *conf = NULL, *conf_path = NULL, *line = NULL, *listen = NULL, *include = NULL,
                        *abs_policy = NULL;
        WtBus *bus;

        if (!g_file_get_contents(SYSTEM_CONF, &conf, NULL, &error))
                g_error("The system-style test bus is built from %s: %s", SYSTEM_CONF, error->message);
        abs_policy = g_canonicalize_filename(policy_path, NULL);
        if (!g_file_test(abs_policy, G_FILE_TEST_IS_REGULAR))
                g_error("No policy file %s", abs_policy);

        bus = g_new0(WtBus, 1);
        bus->dir = g_dir_make_tmp("watchd-test-XXXXXX", &error);
        g_assert_no_error(error);
        g_assert_cmpint(g_chmod(bus->dir, 0755), ==, 0);

        {
                g_autofree char *dir = conf_literal(bus->dir), *policy = conf_literal(abs_policy);
                listen = g_strdup_printf("<listen>unix:path=%s/bus</listen>", dir);
                include = g_strdup_printf("<include>%s</include>", policy);
        }
        conf_edit(&conf, "^\\s*<user>messagebus</user>\\s*$", "", 1);
        conf_edit(&conf, "^\\s*<fork/>\\s*$", "", 1);
        conf_edit(&conf, "^\\s*<pidfile>[^<]*</pidfile>\\s*$", "", 1);
        conf_edit(&conf, "^\\s*<syslog/>\\s*$", "", 1);
        conf_edit(&conf, "<listen>[^<]*</listen>", listen, 1);
        conf_edit(&conf, "^\\s*<standard_system_servicedirs/>\\s*$", "", 1);
        conf_edit(&conf, "^\\s*<servicehelper>[^<]*</servicehelper>\\s*$", "", 1);
        conf_edit(&conf, "^\\s*<include ignore_missing=\"yes\">/etc/dbus-1/system(-local)?\\.conf</include>\\s*$", "", 2);
        conf_edit(&conf, "^\\s*<includedir>/etc/dbus-1/system\\.d</includedir>\\s*$", "", 1);
        conf_edit(&conf, "<includedir>system\\.d</includedir>", include, 1);

        conf_path = g_build_filename(bus->dir, "bus.conf", NULL);
        g_file_set_contents(conf_path, conf, -1, &error);
        g_assert_no_error(error);

        /* dbus-daemon's stderr goes to a file: a config it refuses is explained there. */
        l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_subprocess_launcher_set_child_setup(l, child_die_with_parent, NULL, NULL);
        {
                g_autofree char *log = g_build_filename(bus->dir, "bus.log", NULL);
                g_subprocess_launcher_set_stderr_file_path(l, log);
        }
        bus->process = g_subprocess_launcher_spawn(l, &error, "dbus-daemon", "--nofork", "--print-address",
                                                   "--config-file", conf_path, NULL);
        if (!bus->process)
                g_error("Cannot start dbus-daemon: %s", error->message);

        in = g_data_input_stream_new(g_subprocess_get_stdout_pipe(bus->process));
        line = g_data_input_stream_read_line(in, NULL, NULL, &error);
        if (!line) {
                g_autofree char *log = g_build_filename(bus->dir, "bus.log", NULL), *text = NULL;
                (void) g_file_get_contents(log, &text, NULL, NULL);
                g_error("dbus-daemon (config %s) printed no address: %s", conf_path, text ? text : "no log");
        }
        bus->address = g_strdup(g_strstrip(line));
        return bus;
}

WtBus *wt_system_bus_start(void) {
        return wt_system_bus_start_with_policy(wt_policy_path());
}

WtDaemon *wt_daemon_start_env(WtBus *bus, const char *config, const char *const *env) {
        WtDaemon *d;

        daemon_env = env;
        d = wt_daemon_start_full(bus, config, NULL);
        daemon_env = NULL;
        return d;
}
