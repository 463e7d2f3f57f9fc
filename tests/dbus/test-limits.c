/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-limits - the watch limits, as clients of several uids meet them
 *
 * The real watchd on a private bus (tests/dbus's harness). A client of
 * another uid is a child process that becomes that uid and calls AddWatch
 * over sd-bus, one line of result per call on a pipe ("ok ID" or "err NAME
 * MESSAGE"). Needs root for those (skipped otherwise).
 */

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "watchd-api.h"
#include "watchd-test.h"

/* A directory every uid may read, holding n subdirectories d0 ... */
static char *make_dirs(unsigned n) {
        char *dir = wt_make_fast_dir();

        g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
        for (unsigned i = 0; i < n; i++) {
                g_autofree char *d = g_strdup_printf("%s/d%u", dir, i);

                g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
        }
        return dir;
}

/* In a child: becomes uid, calls AddWatch(path) for each path, writes one line each to fd. */
_Noreturn static void child_add_watches(WtBus *bus, uid_t uid, const char *const *paths, int fd) {
        sd_bus *b = NULL;
        FILE *out = fdopen(fd, "w");

        if (!out || setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)
                _exit(126);
        /* After setuid(), which clears it. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
                _exit(127);
        if (sd_bus_new(&b) < 0 || sd_bus_set_address(b, bus->address) < 0 || sd_bus_set_bus_client(b, 1) < 0 ||
            sd_bus_start(b) < 0)
                _exit(125);
        for (const char *const *p = paths; *p; p++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                sd_bus_message *reply = NULL;
                uint32_t id = 0;

                if (sd_bus_call_method(b, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch", &error,
                                       &reply, "suu", *p, (uint32_t) IN_CREATE, 0u) >= 0 &&
                    sd_bus_message_read(reply, "u", &id) >= 0)
                        fprintf(out, "ok %u\n", id);
                else
                        fprintf(out, "err %s %s\n", error.name, error.message);
                sd_bus_error_free(&error);
                sd_bus_message_unref(reply);
        }
        fclose(out);
        /* The connection, and so the watches, live until the test ends the process (leave()). */
        for (;;)
                pause();
}

/* The result lines of a client of uid that adds each of paths; it is still
 * connected (its watches held) until leave(*ret_pid). */
static char **add_watches_as(WtBus *bus, uid_t uid, const char *const *paths, pid_t *ret_pid) {
        g_autoptr(GString) text = g_string_new(NULL);
        char buf[512];
        int p[2];
        pid_t pid;
        ssize_t n;

        g_assert_cmpint(pipe2(p, O_CLOEXEC), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(p[0]);
                child_add_watches(bus, uid, paths, p[1]);
        }
        close(p[1]);
        while ((n = read(p[0], buf, sizeof(buf))) > 0)
                g_string_append_len(text, buf, n);
        close(p[0]);
        *ret_pid = pid;
        g_strchomp(text->str);
        return g_strsplit(text->str, "\n", -1);
}

static void leave(pid_t pid) {
        int status;

        g_assert_cmpint(kill(pid, SIGTERM), ==, 0);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

static gboolean line_is(const char *line, const char *prefix, const char *needle) {
        return g_str_has_prefix(line, prefix) && (!needle || strstr(line, needle));
}

/*
 * Users other than root together may hold max_watches_unprivileged: a
 * second user meets that limit, named in the error, while root does not.
 * Before it, every uid could hold max_watches_per_user, all charged to
 * root's budget in the kernel, with no overall cap.
 */
static void test_unprivileged(void) {
        WtBus *bus;
        WtDaemon *d;
        g_autofree char *dir = make_dirs(8);
        g_autofree char *d0 = g_strdup_printf("%s/d0", dir), *d1 = g_strdup_printf("%s/d1", dir);
        g_autofree char *d2 = g_strdup_printf("%s/d2", dir), *d3 = g_strdup_printf("%s/d3", dir);
        g_autofree char *d4 = g_strdup_printf("%s/d4", dir), *d5 = g_strdup_printf("%s/d5", dir);
        const char *const first[] = { d0, d1, d2, d3, NULL }, *const second[] = { d4, d5, NULL };
        g_auto(GStrv) r1 = NULL, r2 = NULL, r3 = NULL;
        GDBusConnection *c;
        WatchdInotify *root;
        pid_t p1, p2, p3;

        /* Two users the bus knows (it refuses a uid without a passwd entry). */
        struct passwd *pw = getpwnam("daemon");
        uid_t other = pw ? pw->pw_uid : 0;

        if (geteuid() != 0 || other == 0 || !getpwuid(65534)) {
                g_test_skip("needs root, and the users nobody and daemon, to run clients as other uids");
                wt_remove_tree(dir);
                return;
        }
        bus = wt_bus_start();
        d = wt_daemon_start(
                bus, "[limits]\nmax_watches_per_client = 10\nmax_watches_per_user = 3\nmax_watches_unprivileged = 4\n");
        c = wt_connect(bus);
        root = wt_proxy(c);

        /* nobody: three, then its own limit. */
        r1 = add_watches_as(bus, 65534, first, &p1);
        g_assert_cmpuint(g_strv_length(r1), ==, 4);
        for (int i = 0; i < 3; i++)
                g_assert_true(line_is(r1[i], "ok ", NULL));
        g_assert_true(line_is(r1[3], "err " WATCHD_ERROR_LIMITS_EXCEEDED, "max_watches_per_user"));

        /* Another uid: one, then the limit of all users but root, named. */
        r2 = add_watches_as(bus, other, second, &p2);
        g_assert_cmpuint(g_strv_length(r2), ==, 2);
        g_assert_true(line_is(r2[0], "ok ", NULL));
        g_assert_true(line_is(r2[1], "err " WATCHD_ERROR_LIMITS_EXCEEDED, "max_watches_unprivileged"));
        g_assert_cmpuint(wt_stat(root, "users"), ==, 2);

        /* Root's clients are not held back by them (only by the per-user limit, 3 here too). */
        for (int i = 0; i < 3; i++) {
                g_autofree char *p = g_strdup_printf("%s/d%d", dir, i);
                g_autoptr(GError) error = NULL;
                guint32 id;

                g_assert_true(watchd_inotify_call_add_watch_sync(root, p, IN_DELETE, 0, &id, NULL, &error));
                g_assert_no_error(error);
        }

        /* A user that leaves gives its share back. */
        leave(p1);
        g_assert_true(wt_await_stat(root, "users", 2, 5000)); /* p2 and root */
        r3 = add_watches_as(bus, other, second, &p3);
        g_assert_true(line_is(r3[0], "ok ", NULL));
        g_assert_true(line_is(r3[1], "ok ", NULL));
        leave(p3);
        leave(p2);

        g_object_unref(root);
        g_object_unref(c);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
        wt_remove_tree(dir);
}

/*
 * The defaults come from the kernel's limit, and serve an indexer: one
 * client watching a tree of 10,000 directories RECURSIVE needs no edit of
 * watchd.conf (before, max_watches_per_client was 8,192 and it failed).
 */
static void test_default_sizes(void) {
        g_autofree char *dir = make_dirs(0), *text = NULL, *log = NULL, *want = NULL;
        g_autoptr(GError) error = NULL;
        GDBusConnection *c;
        WatchdInotify *p;
        guint64 kernel, reserve;
        WtBus *bus;
        WtDaemon *d;
        guint32 id;

        g_assert_true(g_file_get_contents("/proc/sys/fs/inotify/max_user_watches", &text, NULL, NULL));
        kernel = g_ascii_strtoull(text, NULL, 10);
        reserve = MAX(kernel / 16, MIN(1024, kernel / 4));
        if (kernel - 2 * reserve < 10001) {
                g_test_skip("the kernel's max_user_watches is too small for a tree of 10,000 directories");
                wt_remove_tree(dir);
                return;
        }
        for (unsigned i = 0; i < 100; i++)
                for (unsigned j = 0; j < 100; j++) {
                        g_autofree char *sub = g_strdup_printf("%s/a%u/b%u", dir, i, j);

                        g_assert_cmpint(g_mkdir_with_parents(sub, 0755), ==, 0);
                }

        bus = wt_bus_start();
        d = wt_daemon_start(bus, NULL);
        c = wt_connect(bus);
        p = wt_proxy(c);
        g_assert_true(watchd_inotify_call_add_watch_sync(p, dir, IN_CREATE, WATCHD_FLAG_RECURSIVE, &id, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(wt_stat(p, "kernel_watches"), ==, 1 + 100 + 100 * 100);

        log = wt_daemon_log(d);
        want = g_strdup_printf("Watch limits: %" G_GUINT64_FORMAT " a client, %" G_GUINT64_FORMAT
                               " a user, %" G_GUINT64_FORMAT
                               " for all users but root (the kernel allows %" G_GUINT64_FORMAT ").",
                               kernel - 2 * reserve, kernel - 2 * reserve, kernel - reserve, kernel);
        g_assert_nonnull(strstr(log, want));

        g_object_unref(p);
        g_object_unref(c);
        g_assert_cmpint(wt_daemon_stop(d), ==, 0);
        wt_bus_stop(bus);
        wt_remove_tree(dir);
}

int main(int argc, char *argv[]) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/limits/unprivileged", test_unprivileged);
        g_test_add_func("/limits/default-sizes", test_default_sizes);
        return g_test_run();
}
