/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-clients - ListClients: who watchd serves, and who may see it
 *
 * On a bus built from Debian's system.conf and our policy
 * (wt_system_bus_start(), watchd as root), as on a real system:
 *   - root (the test) holds two subscriptions; a child that becomes nobody
 *     holds one; another nobody child holds none;
 *   - root's ListClients shows both clients, each with the pid the bus
 *     reported (the test's own, the child's), its uid, its subscriptions and
 *     its kernel watches;
 *   - each nobody child's ListClients shows nobody's client only (root's is
 *     not there); the child with no subscription is not a client itself;
 *   - a client that disconnects leaves the list.
 * The children are forked (no exec) and speak sd-bus, as test-system-bus's
 * do: each reports its view on a pipe, then waits for the parent.
 */

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "watchd-api.h"
#include "watchd-test.h"

#define NOBODY     65534
#define TIMEOUT_MS 30000

typedef struct Entry {
        char *name;
        guint32 pid, uid, subscriptions, watches;
} Entry;

static void entry_free(Entry *e) {
        g_free(e->name);
        g_free(e);
}

static const Entry *find_pid(GPtrArray *entries, guint32 pid) {
        for (guint i = 0; i < entries->len; i++)
                if (((Entry *) entries->pdata[i])->pid == pid)
                        return entries->pdata[i];
        return NULL;
}

/* ---------------------------------------------------------------- the nobody children */

/* Writes its ListClients as lines "name pid uid subscriptions watches",
 * then "end", and waits for go_fd to close. Never returns; exit status 0,
 * or 2 to 6 for the step that failed. */
static void nobody_child(const char *address, const char *dir, int report_fd, int go_fd) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        sd_bus *bus = NULL;
        const char *name;
        uint32_t pid, uid, subs, watches;
        char c;
        int r;

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                _exit(2);
        if (sd_bus_new(&bus) < 0 || sd_bus_set_address(bus, address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
            sd_bus_start(bus) < 0)
                _exit(3);
        if (dir &&
            sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "AddWatch", &error, &reply,
                               "suu", dir, (uint32_t) IN_CREATE, (uint32_t) 0) < 0) {
                dprintf(report_fd, "AddWatch failed: %s\n", error.message ? error.message : "?");
                _exit(4);
        }
        reply = sd_bus_message_unref(reply);
        if (sd_bus_call_method(bus, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "ListClients", &error,
                               &reply, NULL) < 0) {
                dprintf(report_fd, "ListClients failed: %s\n", error.message ? error.message : "?");
                _exit(5);
        }
        if (sd_bus_message_enter_container(reply, 'a', "(suuuu)") < 0)
                _exit(6);
        while ((r = sd_bus_message_read(reply, "(suuuu)", &name, &pid, &uid, &subs, &watches)) > 0)
                dprintf(report_fd, "%s %u %u %u %u\n", name, pid, uid, subs, watches);
        if (r < 0)
                _exit(6);
        dprintf(report_fd, "end\n");
        /* Connected (a client) until the parent is done with it. */
        (void) read(go_fd, &c, 1);
        _exit(0);
}

typedef struct Child {
        pid_t pid;
        int go_fd;       /* closed: exit */
        GPtrArray *view; /* Entry*: what its ListClients said */
} Child;

static void child_start(Child *ch, WtBus *bus, const char *dir) {
        int report[2], go[2];
        g_autoptr(GIOChannel) in = NULL;
        g_autofree char *line = NULL;

        g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
        g_assert_cmpint(pipe2(go, O_CLOEXEC), ==, 0);
        ch->pid = fork();
        g_assert_cmpint(ch->pid, >=, 0);
        if (ch->pid == 0) {
                close(report[0]);
                close(go[1]);
                nobody_child(bus->address, dir, report[1], go[0]);
        }
        close(report[1]);
        close(go[0]);
        ch->go_fd = go[1];
        ch->view = g_ptr_array_new_with_free_func((GDestroyNotify) entry_free);
        in = g_io_channel_unix_new(report[0]);
        g_io_channel_set_close_on_unref(in, TRUE);
        for (;;) {
                g_auto(GStrv) f = NULL;
                Entry *e;

                g_free(g_steal_pointer(&line));
                if (g_io_channel_read_line(in, &line, NULL, NULL, NULL) != G_IO_STATUS_NORMAL)
                        g_error("the nobody child ended its report early");
                g_strchomp(line);
                if (g_str_equal(line, "end"))
                        break;
                f = g_strsplit(line, " ", -1);
                if (g_strv_length(f) != 5)
                        g_error("the nobody child says: %s", line);
                e = g_new0(Entry, 1);
                e->name = g_strdup(f[0]);
                e->pid = (guint32) g_ascii_strtoull(f[1], NULL, 10);
                e->uid = (guint32) g_ascii_strtoull(f[2], NULL, 10);
                e->subscriptions = (guint32) g_ascii_strtoull(f[3], NULL, 10);
                e->watches = (guint32) g_ascii_strtoull(f[4], NULL, 10);
                g_ptr_array_add(ch->view, e);
        }
}

/* Every child's go_fd must be closed first: a child forked after another
 * holds that one's too. */
static void child_wait(Child *ch) {
        int status;

        g_assert_cmpint(waitpid(ch->pid, &status, 0), ==, ch->pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
        g_ptr_array_unref(ch->view);
}

/* ---------------------------------------------------------------- root's view */

static GPtrArray *list_clients(GDBusConnection *c) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GVariant) reply = NULL, list = NULL;
        GPtrArray *entries = g_ptr_array_new_with_free_func((GDestroyNotify) entry_free);
        GVariantIter it;
        const char *name;
        guint32 pid, uid, subs, watches;

        reply = g_dbus_connection_call_sync(c, WATCHD_BUS_NAME, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "ListClients", NULL,
                                            G_VARIANT_TYPE("(a(suuuu))"), G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
        g_assert_no_error(error);
        list = g_variant_get_child_value(reply, 0);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&suuuu)", &name, &pid, &uid, &subs, &watches)) {
                Entry *e = g_new0(Entry, 1);

                *e = (Entry) { g_strdup(name), pid, uid, subs, watches };
                g_ptr_array_add(entries, e);
        }
        return entries;
}

static guint32 add_watch(WatchdInotify *proxy, const char *path) {
        g_autoptr(GError) error = NULL;
        guint id = 0;

        if (!watchd_inotify_call_add_watch_sync(proxy, path, IN_CREATE, 0, &id, NULL, &error))
                g_error("AddWatch '%s': %s", path, error->message);
        return id;
}

static void test_system_bus(void) {
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) proxy = NULL;
        g_autoptr(GPtrArray) all = NULL;
        g_autofree char *dir = NULL, *d1 = NULL, *d2 = NULL;
        Child watcher, idle;
        const Entry *e;
        gint64 deadline;
        WtDaemon *daemon;
        WtBus *bus;

        if (geteuid() != 0) {
                g_test_skip("the system-style bus lets only root own org.example.Inotify, and the other "
                            "clients become nobody: run as root");
                return;
        }
        dir = wt_make_fast_dir();
        g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
        d1 = g_build_filename(dir, "1", NULL);
        d2 = g_build_filename(dir, "2", NULL);
        g_assert_cmpint(g_mkdir(d1, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(d2, 0755), ==, 0);
        bus = wt_system_bus_start();
        daemon = wt_daemon_start(bus, NULL);
        c = wt_connect(bus);
        proxy = wt_proxy(c);

        add_watch(proxy, d1);
        add_watch(proxy, d2);
        child_start(&watcher, bus, d1);
        child_start(&idle, bus, NULL);

        /* nobody with a subscription sees itself, and only itself. */
        g_assert_cmpuint(watcher.view->len, ==, 1);
        e = watcher.view->pdata[0];
        g_assert_cmpuint(e->pid, ==, (guint32) watcher.pid);
        g_assert_cmpuint(e->uid, ==, NOBODY);
        g_assert_cmpuint(e->subscriptions, ==, 1);
        g_assert_cmpuint(e->watches, ==, 1);
        g_assert_true(e->name[0] == ':');
        /* nobody without one is no client: it sees the other nobody's. */
        g_assert_cmpuint(idle.view->len, ==, 1);
        g_assert_cmpuint(((Entry *) idle.view->pdata[0])->pid, ==, (guint32) watcher.pid);

        /* Root sees both, each as the bus reported it. */
        all = list_clients(c);
        g_assert_cmpuint(all->len, ==, 2);
        e = find_pid(all, (guint32) getpid());
        g_assert_nonnull(e);
        g_assert_cmpuint(e->uid, ==, 0);
        g_assert_cmpuint(e->subscriptions, ==, 2);
        g_assert_cmpuint(e->watches, ==, 2);
        g_assert_cmpstr(e->name, ==, g_dbus_connection_get_unique_name(c));
        e = find_pid(all, (guint32) watcher.pid);
        g_assert_nonnull(e);
        g_assert_cmpuint(e->uid, ==, NOBODY);
        g_assert_cmpuint(e->subscriptions, ==, 1);
        g_assert_null(find_pid(all, (guint32) idle.pid));

        /* Gone with its connection. */
        close(watcher.go_fd);
        close(idle.go_fd);
        child_wait(&watcher);
        child_wait(&idle);
        deadline = g_get_monotonic_time() + TIMEOUT_MS * 1000;
        for (;;) {
                g_autoptr(GPtrArray) now = list_clients(c);

                if (now->len == 1 && find_pid(now, (guint32) getpid()))
                        break;
                g_assert_cmpint(g_get_monotonic_time(), <, deadline);
                g_usleep(10000);
        }

        g_clear_object(&proxy);
        g_dbus_connection_close_sync(c, NULL, NULL);
        g_assert_cmpint(wt_daemon_stop(daemon), ==, 0);
        wt_bus_stop(bus);
        wt_remove_tree(dir);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/clients/system-bus", test_system_bus);
        return g_test_run();
}
