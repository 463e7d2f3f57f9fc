/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-security - the ways in that an unprivileged user had, each closed
 *
 * The daemon runs as root (this test's uid) on the syscall backend; the
 * attacker is this binary run again as nobody (--helper ADDRESS), driven
 * line by line through its stdin:
 *
 *   watch PATH      AddWatch(PATH, CREATE) -> "ok ID" or "err ERROR-NAME"
 *   watchr PATH     the same, RECURSIVE
 *   await           prints "rec ID PATH" for each record received, until
 *                   one whose path ends in "/done" -> "end"; an Overflow
 *                   received prints "overflow ID..." where it comes
 *   stats           GetStats -> "KEY=VALUE" lines (GVariant text), "end"
 *
 * A leak is looked for, not waited out: the attacker also watches a
 * directory it may read, the test creates the secret names first and then
 * "done" there, and records keep kernel order, so once "done" has arrived
 * any record of a secret name would have arrived before it.
 * See docs/RELIABILITY.md, "Security".
 */

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixfdlist.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "watchd-api.h"
#include "watchd-test.h"
#include "wt-fixture.h"

#define E_INVALID_ARGS  "org.freedesktop.DBus.Error.InvalidArgs"
#define E_ACCESS_DENIED "org.freedesktop.DBus.Error.AccessDenied"

#define TIMEOUT_MS 5000

/* ---------------------------------------------------------------- fixture */

typedef struct Fixture {
        WtBus *bus;
        WtDaemon *daemon;
        GDBusConnection *conn;
        WatchdInotify *proxy; /* a client as root */
        char *dir;            /* files for the test, mode 0755 */
        char *fast;           /* a tmpfs directory for big trees, or NULL */
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        f->bus = wt_bus_start();
        f->daemon = wt_daemon_start(f->bus, data);
        f->conn = wt_connect(f->bus);
        f->proxy = wt_proxy(f->conn);
        f->dir = g_build_filename(f->bus->dir, "files", NULL);
        g_assert_cmpint(g_mkdir(f->dir, 0755), ==, 0);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        g_object_unref(f->proxy);
        g_dbus_connection_close_sync(f->conn, NULL, NULL);
        g_object_unref(f->conn);
        /* NULL when a test stopped the fixture's daemon and could not start its own. */
        if (f->daemon)
                g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        wt_bus_stop(f->bus);
        g_free(f->dir);
        if (f->fast)
                wt_remove_tree(f->fast);
        g_free(f->fast);
}

static char *path_in(Fixture *f, const char *name) {
        return g_build_filename(f->dir, name, NULL);
}

static void touch(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        close(fd);
}

static const char *daemon_pid(Fixture *f) {
        const char *pid = g_subprocess_get_identifier(f->daemon->process);

        g_assert_nonnull(pid);
        return pid;
}

/* The D-Bus error name of a failed call, or NULL if it succeeded. */
static char *add_watch_error(WatchdInotify *p, const char *path, guint32 flags, guint32 *ret_id) {
        g_autoptr(GError) error = NULL;
        guint id = 0;

        if (watchd_inotify_call_add_watch_sync(p, path, IN_CREATE, flags, &id, NULL, &error)) {
                if (ret_id)
                        *ret_id = id;
                return NULL;
        }
        g_test_message("AddWatch('%s'): %s", path, error->message);
        return g_dbus_error_get_remote_error(error);
}

/* ---------------------------------------------------------------- the attacker, as nobody */

typedef struct Attacker {
        GSubprocess *process;
        GOutputStream *in;
        GDataInputStream *out;
} Attacker;

/* Starts this binary as nobody; NULL (and the test skipped) where that cannot be done. */
static Attacker *attacker_start(Fixture *f) {
        g_autoptr(GSubprocessLauncher)
                l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr(GError) error = NULL;
        g_autofree char *self = NULL, *prog = NULL;
        Attacker *a;

        if (geteuid() != 0) {
                g_test_skip("needs root: the daemon as root, the attacker as nobody");
                return NULL;
        }
        self = g_file_read_link("/proc/self/exe", &error);
        g_assert_no_error(error);
        /* A copy nobody can run, wherever the build tree is (a clone in /root). */
        prog = wt_launcher_as_nobody(l, f->bus, self, &error);
        a = g_new0(Attacker, 1);
        if (prog)
                a->process = g_subprocess_launcher_spawn(l, &error, prog, "--helper", f->bus->address, NULL);
        if (!a->process) {
                g_autofree char *why = g_strdup_printf("nobody cannot run %s (%s): is a parent directory "
                                                       "closed to others?",
                                                       self, error->message);
                g_free(a);
                g_test_skip(why);
                return NULL;
        }
        a->in = g_subprocess_get_stdin_pipe(a->process);
        a->out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(a->process));
        return a;
}

static char *attacker_line(Attacker *a) {
        g_autoptr(GError) error = NULL;
        char *l = g_data_input_stream_read_line(a->out, NULL, NULL, &error);

        g_assert_no_error(error);
        if (!l)
                g_error("The attacker (as nobody) exited early");
        return l;
}

/* Sends one command; returns the first line of its answer. */
static char *attacker_ask(Attacker *a, const char *cmd) {
        g_autoptr(GError) error = NULL;

        g_assert_true(g_output_stream_write_all(a->in, cmd, strlen(cmd), NULL, NULL, &error) &&
                      g_output_stream_write_all(a->in, "\n", 1, NULL, NULL, &error) &&
                      g_output_stream_flush(a->in, NULL, &error));
        g_assert_no_error(error);
        return attacker_line(a);
}

/* Asks the attacker to watch path; returns its answer ("ok ID" or "err NAME"). */
static char *attacker_watch(Attacker *a, const char *path) {
        g_autofree char *cmd = g_strconcat("watch ", path, NULL);
        char *answer = attacker_ask(a, cmd);

        g_test_message("nobody: AddWatch('%s') -> %s", path, answer);
        return answer;
}

/*
 * A refusal of a path through a magic link: InvalidArgs (the daemon follows
 * none), or AccessDenied where the kernel itself stops the caller at the
 * link (it may not ptrace the process: /proc/PID/ of root's as nobody, now
 * that the daemon keeps no CAP_SYS_PTRACE).
 */
static void assert_refused(const char *answer) {
        if (strcmp(answer, "err " E_INVALID_ARGS) != 0 && strcmp(answer, "err " E_ACCESS_DENIED) != 0)
                g_error("The attacker was not refused: %s", answer);
}

/* Awaits the attacker's "done" record; fails the test on any record that
 * names one of the secrets (NULL-terminated). Returns the records seen, and
 * counts the Overflow signals in *overflows (if not NULL; else none may come). */
static guint attacker_await_full(Attacker *a, const char *const *secrets, guint *overflows, GPtrArray *seen) {
        g_autofree char *line = attacker_ask(a, "await");
        guint n = 0;

        while (strcmp(line, "end") != 0) {
                g_test_message("nobody received: %s", line);
                if (strcmp(line, "timeout") == 0)
                        g_error("The attacker's own 'done' record did not come");
                if (overflows && g_str_has_prefix(line, "overflow")) {
                        (*overflows)++;
                        g_free(line);
                        line = attacker_line(a);
                        continue;
                }
                g_assert_true(g_str_has_prefix(line, "rec "));
                if (seen)
                        g_ptr_array_add(seen, g_strdup(strchr(line + 4, ' ') + 1));
                for (size_t i = 0; secrets[i]; i++)
                        if (strstr(line, secrets[i]))
                                g_error("nobody was told the secret name '%s': %s", secrets[i], line);
                n++;
                g_free(line);
                line = attacker_line(a);
        }
        return n;
}

static guint attacker_await(Attacker *a, const char *const *secrets) {
        return attacker_await_full(a, secrets, NULL, NULL);
}

static void attacker_stop(Attacker *a) {
        g_autoptr(GError) error = NULL;

        if (!a)
                return;
        g_assert_true(g_output_stream_close(a->in, NULL, &error));
        g_assert_no_error(error);
        g_assert_true(g_subprocess_wait_check(a->process, NULL, &error));
        g_assert_no_error(error);
        g_object_unref(a->out);
        g_object_unref(a->process);
        g_free(a);
}

static void helper_on_events(WatchdInotify *p, GVariant *events, gpointer data) {
        gboolean *done = data;
        GVariantIter it;
        guint32 id, mask, cookie;
        const char *path, *new_path;

        g_variant_iter_init(&it, events);
        while (g_variant_iter_next(&it, "(uuu&s&s)", &id, &mask, &cookie, &path, &new_path)) {
                printf("rec %u %s\n", id, path);
                if (g_str_has_suffix(path, "/done"))
                        *done = TRUE;
        }
}

static void helper_on_overflow(WatchdInotify *p, GVariant *ids, gpointer data) {
        GVariantIter it;
        guint32 id;

        printf("overflow");
        g_variant_iter_init(&it, ids);
        while (g_variant_iter_next(&it, "u", &id))
                printf(" %u", id);
        printf("\n");
}

/* The attacker: runs as nobody, answers the commands on its stdin. */
static int helper_main(int argc, char *argv[]) {
        g_autoptr(GDBusConnection) c = NULL;
        g_autoptr(WatchdInotify) p = NULL;
        gboolean done = FALSE;
        WtBus bus = {};
        char line[8192];

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc != 3)
                return 2;
        bus.address = argv[2];
        c = wt_connect(&bus);
        p = wt_proxy(c);
        g_signal_connect(p, "events", G_CALLBACK(helper_on_events), &done);
        g_signal_connect(p, "overflow", G_CALLBACK(helper_on_overflow), NULL);

        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = '\0';
                if (g_str_has_prefix(line, "watch ") || g_str_has_prefix(line, "watchr ")) {
                        g_autoptr(GError) error = NULL;
                        gboolean recursive = line[5] == 'r';
                        guint id;

                        if (watchd_inotify_call_add_watch_sync(p, line + (recursive ? 7 : 6), IN_CREATE,
                                                               recursive ? WATCHD_FLAG_RECURSIVE : 0, &id, NULL, &error))
                                printf("ok %u\n", id);
                        else {
                                g_autofree char *name = g_dbus_error_get_remote_error(error);

                                printf("err %s\n", name ? name : error->message);
                        }
                } else if (strcmp(line, "stats") == 0) {
                        g_autoptr(GVariant) stats = NULL;
                        g_autoptr(GError) error = NULL;
                        GVariantIter it;
                        const char *key;
                        GVariant *value;

                        if (!watchd_inotify_call_get_stats_sync(p, &stats, NULL, &error)) {
                                printf("err %s\n", error->message);
                                continue;
                        }
                        g_variant_iter_init(&it, stats);
                        while (g_variant_iter_next(&it, "{&sv}", &key, &value)) {
                                g_autofree char *text = g_variant_print(value, FALSE);

                                printf("%s=%s\n", key, text);
                                g_variant_unref(value);
                        }
                        printf("end\n");
                } else if (strcmp(line, "await") == 0) {
                        done = FALSE;
                        printf(wt_await_flag(&done, TIMEOUT_MS) ? "end\n" : "timeout\n");
                } else
                        return 2;
        }
        return 0;
}

/* ---------------------------------------------------------------- magic links */

/* A child that must not outlive a failed test (it would hold its output open). */
static void child_die_with_parent(gpointer user_data) {
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/*
 * A root process whose working directory is below a 0700 directory: nobody
 * may not reach it by path, and /proc/PID/cwd, which the kernel resolves for
 * whoever may ptrace PID (the daemon, with CAP_SYS_PTRACE), must not take
 * it there. Refused for root too (the rule is about the link, not the
 * caller), who opens it itself and uses AddWatchFd instead.
 */
static void test_proc_pid_cwd(Fixture *f, gconstpointer data) {
        g_autofree char *secret = path_in(f, "secret"), *sub = path_in(f, "secret/sub");
        g_autofree char *name = path_in(f, "secret/sub/secret-name"), *shared = path_in(f, "shared");
        g_autofree char *done = path_in(f, "shared/done"), *cwd = NULL, *root_err = NULL;
        g_autofree char *answer = NULL, *shared_answer = NULL;
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
        g_autoptr(GSubprocess) sleeper = NULL;
        g_autoptr(GError) error = NULL;
        const char *const secrets[] = { "secret-name", NULL };
        Attacker *a;

        g_assert_cmpint(g_mkdir(secret, 0700), ==, 0);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        a = attacker_start(f);
        if (!a)
                return;
        g_subprocess_launcher_set_cwd(l, sub);
        g_subprocess_launcher_set_child_setup(l, child_die_with_parent, NULL, NULL);
        sleeper = g_subprocess_launcher_spawn(l, &error, "sleep", "600", NULL);
        g_assert_no_error(error);
        cwd = g_strdup_printf("/proc/%s/cwd", g_subprocess_get_identifier(sleeper));

        shared_answer = attacker_watch(a, shared);
        g_assert_true(g_str_has_prefix(shared_answer, "ok "));
        answer = attacker_watch(a, cwd);
        touch(name);
        touch(done);
        g_assert_cmpuint(attacker_await(a, secrets), ==, 1); /* "done" only */
        assert_refused(answer);
        attacker_stop(a);

        /* Root is refused too: the kernel now stops the daemon at that link
         * (it may not ptrace a process with more capabilities than its
         * own), and where the kernel lets it through, at its own
         * /proc/self/cwd, the rule on magic links does: it is about the
         * link, not the caller... */
        root_err = add_watch_error(f->proxy, cwd, 0, NULL);
        g_assert_true(g_strcmp0(root_err, E_INVALID_ARGS) == 0 || g_strcmp0(root_err, E_ACCESS_DENIED) == 0);
        g_free(root_err);
        root_err = add_watch_error(f->proxy, "/proc/self/cwd", 0, NULL);
        g_assert_cmpstr(root_err, ==, E_INVALID_ARGS);
        /* ...and may watch what it opened itself. */
        {
                g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
                g_autoptr(GVariant) r = NULL;
                int fd = open(cwd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                g_assert_cmpint(fd, >=, 0);
                g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
                close(fd);
                r = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(f->proxy), "AddWatchFd",
                                                             g_variant_new("(huu)", 0, IN_CREATE, 0),
                                                             G_DBUS_CALL_FLAGS_NONE, TIMEOUT_MS, fds, NULL, NULL, &error);
                g_assert_no_error(error);
        }
        g_subprocess_force_exit(sleeper);
        (void) g_subprocess_wait(sleeper, NULL, NULL);
}

/* The fd of the daemon's that points at path, or -1. */
static int daemon_fd_at(Fixture *f, const char *path) {
        g_autofree char *fds = g_strdup_printf("/proc/%s/fd", daemon_pid(f));
        g_autoptr(GDir) d = g_dir_open(fds, 0, NULL);
        const char *n;

        if (!d)
                return -1;
        while ((n = g_dir_read_name(d))) {
                g_autofree char *link = g_build_filename(fds, n, NULL);
                g_autofree char *target = g_file_read_link(link, NULL);

                if (g_strcmp0(target, path) == 0)
                        return (int) g_ascii_strtoll(n, NULL, 10);
        }
        return -1;
}

typedef struct AsyncAdd {
        gboolean done;
        GError *error;
} AsyncAdd;

static void on_add_watch_done(GObject *source, GAsyncResult *res, gpointer data) {
        AsyncAdd *a = data;
        guint id;

        (void) watchd_inotify_call_add_watch_finish(WATCHD_INOTIFY(source), &id, res, &a->error);
        a->done = TRUE;
}

/*
 * The directories a RECURSIVE walk of root's holds open between its slices
 * are the daemon's own fds: /proc/self/fd/N and /dev/fd/N (as the daemon
 * resolves them) and /proc/DAEMON/fd/N must not give nobody the tree below
 * a 0700 directory, nor a path still missing below one of them.
 */
static void test_proc_self_fd(Fixture *f, gconstpointer data) {
        g_autofree char *top = NULL, *tree = NULL, *name = NULL, *answer = NULL;
        g_autofree char *shared = path_in(f, "shared"), *done = path_in(f, "shared/done");
        g_autofree char *self = NULL, *dev = NULL, *pid = NULL;
        const char *const secrets[] = { "secret-name", NULL };
        char *answers[4] = {};
        AsyncAdd add = {};
        Attacker *a;
        int fd = -1;

        f->fast = wt_make_fast_dir();
        g_assert_cmpint(g_chmod(f->fast, 0700), ==, 0);
        top = g_build_filename(f->fast, "top", NULL);
        tree = g_build_filename(top, "tree", NULL);
        name = g_build_filename(tree, "secret-name", NULL);
        g_assert_cmpint(g_mkdir(top, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(tree, 0755), ==, 0);
        /* Big enough that the walk is still going while the attacker asks. */
        for (guint i = 0; i < 300; i++) {
                g_autofree char *d = g_strdup_printf("%s/d%03u", tree, i);

                g_assert_cmpint(mkdir(d, 0755), ==, 0);
                for (guint j = 0; j < 150; j++) {
                        g_autofree char *s = g_strdup_printf("%s/s%03u", d, j);

                        g_assert_cmpint(mkdir(s, 0755), ==, 0);
                }
        }
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        a = attacker_start(f);
        if (!a)
                return;
        answer = attacker_watch(a, shared);
        g_assert_true(g_str_has_prefix(answer, "ok "));

        g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(f->proxy), 600000); /* under valgrind too */
        watchd_inotify_call_add_watch(f->proxy, top, IN_CREATE, 1 /* RECURSIVE */, NULL, on_add_watch_done, &add);
        while (!add.done && (fd = daemon_fd_at(f, tree)) < 0) {
                g_main_context_iteration(NULL, FALSE);
                g_usleep(500);
        }
        if (fd < 0)
                g_error("The walk ended before the test found its fd on '%s'", tree);
        g_test_message("The walk holds '%s' as the daemon's fd %d", tree, fd);

        self = g_strdup_printf("/proc/self/fd/%d", fd);
        dev = g_strdup_printf("/dev/fd/%d", fd);
        pid = g_strdup_printf("/proc/%s/fd/%d", daemon_pid(f), fd);
        answers[0] = attacker_watch(a, self);
        answers[1] = attacker_watch(a, dev);
        answers[2] = attacker_watch(a, pid);
        /* Not there yet: it would be pending on the tree (MISSING PATHS in watchd(8)). */
        {
                g_autofree char *pending = g_strdup_printf("%s/not-yet", self);

                answers[3] = attacker_watch(a, pending);
        }
        /* Still walking, the fd still on the tree: the calls met what they aimed at. */
        g_main_context_iteration(NULL, FALSE);
        if (add.done || daemon_fd_at(f, tree) != fd)
                g_error("The walk ended while the attacker asked: the test proves nothing; make the tree bigger");

        touch(name);
        touch(done);
        g_assert_cmpuint(attacker_await(a, secrets), ==, 1); /* "done" only */
        /* The daemon's own fds: the kernel lets it through /proc/self, so
         * only the rule on magic links stops these. */
        g_assert_cmpstr(answers[0], ==, "err " E_INVALID_ARGS);
        g_assert_cmpstr(answers[1], ==, "err " E_INVALID_ARGS);
        g_assert_cmpstr(answers[3], ==, "err " E_INVALID_ARGS);
        assert_refused(answers[2]);
        for (size_t i = 0; i < G_N_ELEMENTS(answers); i++)
                g_free(answers[i]);
        attacker_stop(a);
        g_assert_true(wt_await_flag(&add.done, 600000));
        g_assert_no_error(add.error);
}

/* ---------------------------------------------------------------- AddWatchFd */

/* AddWatchFd(fd, CREATE); returns NULL and the id, or the D-Bus error name and its message. */
static char *add_watch_fd_error(WatchdInotify *p, int fd, guint32 *ret_id, char **ret_message) {
        g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
        g_autoptr(GVariant) r = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_cmpint(g_unix_fd_list_append(fds, fd, NULL), ==, 0);
        r = g_dbus_proxy_call_with_unix_fd_list_sync(G_DBUS_PROXY(p), "AddWatchFd",
                                                     g_variant_new("(huu)", 0, IN_CREATE, 0), G_DBUS_CALL_FLAGS_NONE,
                                                     TIMEOUT_MS, fds, NULL, NULL, &error);
        if (r) {
                if (ret_id)
                        g_variant_get(r, "(u)", ret_id);
                return NULL;
        }
        if (ret_message) {
                g_dbus_error_strip_remote_error(error);
                *ret_message = g_strdup(error->message);
        }
        return g_dbus_error_get_remote_error(error);
}

/*
 * AddWatchFd takes what is not a file of a mounted file system: a memfd
 * (its path reads "/memfd:... (deleted)"), and with it other objects whose
 * events could be reported under no path. Each must be InvalidArgs with a
 * message that says why; files and directories still work.
 */
static void test_add_watch_fd_nameless(Fixture *f, gconstpointer data) {
        g_autofree char *gone = path_in(f, "gone"), *rmdir_me = path_in(f, "rmdir-me"), *file = path_in(f, "file");
        struct {
                const char *what;
                int fd;
        } cases[8];
        size_t n = 0;
        int sv[2], fd;

        fd = (int) syscall(SYS_memfd_create, "secret-memfd", MFD_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, "x", 1), ==, 1);
        cases[n++] = (typeof(cases[0])) { "memfd", fd };

        touch(gone);
        fd = open(gone, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(unlink(gone), ==, 0);
        cases[n++] = (typeof(cases[0])) { "deleted file", fd };

        fd = open(f->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        cases[n++] = (typeof(cases[0])) { "O_TMPFILE file", fd };

        g_assert_cmpint(g_mkdir(rmdir_me, 0755), ==, 0);
        fd = open(rmdir_me, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(rmdir(rmdir_me), ==, 0);
        cases[n++] = (typeof(cases[0])) { "removed directory", fd };

        fd = eventfd(0, EFD_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        cases[n++] = (typeof(cases[0])) { "eventfd (anonymous inode)", fd };

        fd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        if (fd >= 0)
                cases[n++] = (typeof(cases[0])) { "pidfd", fd };

        g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        close(sv[1]);
        cases[n++] = (typeof(cases[0])) { "socket", sv[0] };

        fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        cases[n++] = (typeof(cases[0])) { "namespace file (nsfs)", fd };

        for (size_t i = 0; i < n; i++) {
                g_autofree char *message = NULL, *err = NULL;
                guint32 id = 0;

                err = add_watch_fd_error(f->proxy, cases[i].fd, &id, &message);
                g_test_message("AddWatchFd(%s): %s: %s", cases[i].what, err ? err : "granted", message ? message : "");
                if (!err)
                        g_error("AddWatchFd of a %s was granted (subscription %u)", cases[i].what, id);
                g_assert_cmpstr(err, ==, E_INVALID_ARGS);
                close(cases[i].fd);
        }
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 0);

        /* A file and a directory with names still work. */
        touch(file);
        fd = open(file, O_RDONLY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_null(add_watch_fd_error(f->proxy, fd, NULL, NULL));
        close(fd);
        fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        g_assert_cmpint(fd, >=, 0);
        g_assert_null(add_watch_fd_error(f->proxy, fd, NULL, NULL));
        close(fd);
        g_assert_cmpuint(wt_stat(f->proxy, "subscriptions"), ==, 2);
}

/* ---------------------------------------------------------------- GetStats */

/* The attacker's GetStats: key -> value as text. */
static GHashTable *attacker_stats(Attacker *a) {
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        char *line = attacker_ask(a, "stats");

        while (strcmp(line, "end") != 0) {
                char *eq = strchr(line, '=');

                if (!eq)
                        g_error("GetStats failed for the attacker: %s", line);
                *eq = '\0';
                g_hash_table_insert(h, line, g_strdup(eq + 1));
                line = attacker_line(a);
        }
        g_free(line);
        return h;
}

static guint64 stat_of(GHashTable *h, const char *key) {
        const char *v = g_hash_table_lookup(h, key);

        if (!v)
                g_error("GetStats has no '%s' for this caller", key);
        return g_ascii_strtoull(v, NULL, 10);
}

/*
 * GetStats told any caller the daemon's counters of events: what every
 * user's watched files do (polling events_read shows when someone's file
 * changes). A non-root caller now sees the totals (sizes) and its own
 * uid's share only; root sees everything, and its own share too.
 */
static void test_stats_scoped(Fixture *f, gconstpointer data) {
        static const char *const totals[] = {
                "backend",
                "clients",
                "users",
                "subscriptions",
                "kernel_watches",
                "streams",
                "polled_directories",
                "fanotify_marks",
                "fanotify_subscriptions",
        };
        static const char *const own[] = {
                "own_clients",        "own_subscriptions",  "own_watches",   "own_events_delivered",
                "own_pending_events", "own_events_dropped", "own_overflows",
        };
        static const char *const root_only[] = {
                "events_read",          "events_delivered",    "signals_sent",
                "pending_events",       "events_dropped",      "overflows",
                "kernel_overflows",     "bus_queued_messages", "poll_syscalls",
                "fanotify_events_read", "fanotify_own_events", "fanotify_overflows",
                "fanotify_lookups",
        };
        g_autofree char *busy = path_in(f, "busy"), *shared = path_in(f, "shared"), *a1 = path_in(f, "shared/a");
        g_autofree char *done = path_in(f, "shared/done"), *answer = NULL;
        g_autoptr(GHashTable) mine = NULL;
        const char *const secrets[] = { NULL };
        const char *pid = daemon_pid(f);
        Attacker *a;

        g_assert_cmpint(g_mkdir(busy, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        a = attacker_start(f);
        if (!a)
                return;
        g_assert_null(add_watch_error(f->proxy, busy, 0, NULL));
        answer = attacker_watch(a, shared);
        g_assert_true(g_str_has_prefix(answer, "ok "));

        /* Root's activity: 100 records for a backlog of 16 (dropped, Overflow);
         * nobody's: two records. */
        g_assert_cmpint(kill((pid_t) g_ascii_strtoll(pid, NULL, 10), SIGSTOP), ==, 0);
        for (int i = 0; i < 100; i++) {
                g_autofree char *n = g_strdup_printf("%s/f-%d", busy, i);

                touch(n);
        }
        touch(a1);
        touch(done);
        g_assert_cmpint(kill((pid_t) g_ascii_strtoll(pid, NULL, 10), SIGCONT), ==, 0);
        g_assert_cmpuint(attacker_await(a, secrets), ==, 2);

        mine = attacker_stats(a);
        for (size_t i = 0; i < G_N_ELEMENTS(root_only); i++)
                if (g_hash_table_contains(mine, root_only[i]))
                        g_error("GetStats shows nobody the daemon-wide '%s' = %s", root_only[i],
                                (const char *) g_hash_table_lookup(mine, root_only[i]));
        for (size_t i = 0; i < G_N_ELEMENTS(totals); i++)
                g_assert_true(g_hash_table_contains(mine, totals[i]));
        g_assert_cmpuint(g_hash_table_size(mine), ==, G_N_ELEMENTS(totals) + G_N_ELEMENTS(own));
        /* Its own share... */
        g_assert_cmpuint(stat_of(mine, "own_clients"), ==, 1);
        g_assert_cmpuint(stat_of(mine, "own_subscriptions"), ==, 1);
        g_assert_cmpuint(stat_of(mine, "own_watches"), ==, 1);
        g_assert_cmpuint(stat_of(mine, "own_events_delivered"), ==, 2);
        g_assert_cmpuint(stat_of(mine, "own_pending_events"), ==, 0);
        g_assert_cmpuint(stat_of(mine, "own_events_dropped"), ==, 0);
        g_assert_cmpuint(stat_of(mine, "own_overflows"), ==, 0);
        /* ...and the totals, root's and its own together. */
        g_assert_cmpuint(stat_of(mine, "clients"), ==, 2);
        g_assert_cmpuint(stat_of(mine, "users"), ==, 2);
        g_assert_cmpuint(stat_of(mine, "subscriptions"), ==, 2);
        g_assert_cmpuint(stat_of(mine, "kernel_watches"), ==, 2);
        attacker_stop(a);

        /* Root sees everything, and its own share. */
        g_assert_true(wt_await_stat(f->proxy, "own_overflows", 1, TIMEOUT_MS));
        for (size_t i = 0; i < G_N_ELEMENTS(root_only); i++)
                (void) wt_stat(f->proxy, root_only[i]);
        g_assert_cmpuint(wt_stat(f->proxy, "events_read"), >=, 102);
        g_assert_cmpuint(wt_stat(f->proxy, "overflows"), >=, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "own_clients"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "own_subscriptions"), ==, 1);
        g_assert_cmpuint(wt_stat(f->proxy, "own_events_dropped"), >, 0);
        g_assert_cmpuint(wt_stat(f->proxy, "own_events_dropped"), ==, wt_stat(f->proxy, "events_dropped"));
}

/* ---------------------------------------------------------------- capabilities */

#define CAP_DAC_READ_SEARCH 2
#define CAP_SETGID          6
#define CAP_SETUID          7
#define CAP_SETPCAP         8
#define KEPT_BY_ROOT        ((1u << CAP_DAC_READ_SEARCH) | (1u << CAP_SETGID) | (1u << CAP_SETUID))

/*
 * The daemon, started by root with every capability (as by hand or by a
 * test, not by the unit), keeps only those it uses, in every set, and
 * no_new_privs; and still serves: a root caller reads what only
 * CAP_DAC_READ_SEARCH lets it (no CAP_DAC_OVERRIDE), a non-root caller is
 * switched to (CAP_SETUID, CAP_SETGID: the other tests).
 */
static void test_capabilities(Fixture *f, gconstpointer data) {
        const char *pid = daemon_pid(f);
        guint64 mine = wt_proc_status("self", "CapEff"), want = KEPT_BY_ROOT & mine;
        g_autofree char *log = NULL, *closed = path_in(f, "closed"), *file = path_in(f, "closed/file");
        g_autofree char *err = NULL;

        if (geteuid() != 0) {
                g_test_skip("needs root: a daemon started by root");
                return;
        }
        g_test_message("daemon %s: CapEff %" G_GINT64_MODIFIER "x CapPrm %" G_GINT64_MODIFIER
                       "x CapBnd %" G_GINT64_MODIFIER "x",
                       pid, wt_proc_status(pid, "CapEff"), wt_proc_status(pid, "CapPrm"), wt_proc_status(pid, "CapBnd"));
        g_assert_cmphex(wt_proc_status(pid, "CapEff"), ==, want);
        g_assert_cmphex(wt_proc_status(pid, "CapPrm"), ==, want);
        g_assert_cmphex(wt_proc_status(pid, "CapInh"), ==, 0);
        g_assert_cmphex(wt_proc_status(pid, "CapAmb"), ==, 0);
        if (mine & (1u << CAP_SETPCAP))
                g_assert_cmphex(wt_proc_status(pid, "CapBnd"), ==, want);
        else
                g_test_message("no CAP_SETPCAP here: the daemon's bounding set cannot be checked");
        g_assert_cmpuint(wt_proc_status(pid, "NoNewPrivs"), ==, 1);
        log = wt_daemon_log(f->daemon);
        g_assert_nonnull(strstr(log, "Capabilities kept: cap_dac_read_search cap_setgid cap_setuid;"));

        /* A directory of nobody's, mode 0700, and a file in it mode 0000:
         * root's reach, with CAP_DAC_READ_SEARCH alone. */
        g_assert_cmpint(g_mkdir(closed, 0700), ==, 0);
        touch(file);
        g_assert_cmpint(chmod(file, 0), ==, 0);
        g_assert_cmpint(chown(closed, 65534, 65534), ==, 0);
        g_assert_cmpint(chown(file, 65534, 65534), ==, 0);
        err = add_watch_error(f->proxy, closed, 0, NULL);
        g_assert_null(err);
        err = add_watch_error(f->proxy, file, 0, NULL);
        g_assert_null(err);
}

/* Starts watchd as nobody on f's bus, as wt_daemon_start() does as root. */
static WtDaemon *daemon_start_as_nobody(Fixture *f) {
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
        g_autoptr(GDBusConnection) c = wt_connect(f->bus);
        g_autoptr(GError) error = NULL;
        g_autofree char *prog = NULL;
        WtDaemon *d = g_new0(WtDaemon, 1);
        gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

        d->bus = f->bus;
        d->config_path = g_build_filename(f->dir, "nobody.conf", NULL);
        d->log_path = g_build_filename(f->dir, "nobody.log", NULL);
        g_assert_true(g_file_set_contents(d->config_path, "", -1, &error));
        g_subprocess_launcher_set_stderr_file_path(l, d->log_path);
        prog = wt_launcher_as_nobody(l, f->bus, wt_watchd_path(), &error);
        if (prog)
                d->process = g_subprocess_launcher_spawn(l, &error, prog, "--address", f->bus->address, "--config",
                                                         d->config_path, "--backend", "syscall", NULL);
        if (!d->process) {
                g_autofree char *why = g_strdup_printf("nobody cannot run %s (%s)", wt_watchd_path(), error->message);

                g_test_skip(why);
                g_free(d->config_path);
                g_free(d->log_path);
                g_free(d);
                return NULL;
        }
        for (;;) {
                g_autoptr(GVariant) r = g_dbus_connection_call_sync(
                        c, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                        g_variant_new("(s)", "org.example.Inotify"), G_VARIANT_TYPE("(b)"), G_DBUS_CALL_FLAGS_NONE,
                        TIMEOUT_MS, NULL, NULL);
                gboolean has = FALSE;

                if (r)
                        g_variant_get(r, "(b)", &has);
                if (has)
                        return d;
                if (g_get_monotonic_time() > deadline || !g_subprocess_get_identifier(d->process)) {
                        g_autofree char *log = wt_daemon_log(d);

                        g_error("watchd as nobody did not take its name. Its log:\n%s", log);
                }
                g_usleep(5000);
        }
}

/*
 * A daemon started as another user than root keeps no capability, sets
 * no_new_privs, and serves its own uid only: nobody's watch works, root's
 * is refused.
 */
static void test_non_root_daemon(Fixture *f, gconstpointer data) {
        g_autofree char *shared = path_in(f, "shared"), *done = path_in(f, "shared/done");
        g_autofree char *answer = NULL, *err = NULL, *log = NULL;
        const char *const secrets[] = { NULL };
        const char *pid;
        Attacker *a;

        if (geteuid() != 0) {
                g_test_skip("needs root to start the daemon as nobody");
                return;
        }
        g_assert_cmpint(g_mkdir(shared, 0755), ==, 0);
        /* The fixture's daemon (root's) leaves the name to nobody's. */
        g_assert_cmpint(wt_daemon_stop(f->daemon), ==, 0);
        f->daemon = daemon_start_as_nobody(f);
        if (!f->daemon)
                return;
        pid = daemon_pid(f);
        g_assert_cmpuint(wt_proc_status(pid, "Uid"), ==, 65534);
        g_assert_cmphex(wt_proc_status(pid, "CapEff"), ==, 0);
        g_assert_cmphex(wt_proc_status(pid, "CapPrm"), ==, 0);
        g_assert_cmphex(wt_proc_status(pid, "CapAmb"), ==, 0);
        g_assert_cmpuint(wt_proc_status(pid, "NoNewPrivs"), ==, 1);

        a = attacker_start(f);
        if (!a)
                return;
        answer = attacker_watch(a, shared);
        g_assert_true(g_str_has_prefix(answer, "ok "));
        {
                /* A proxy of its own: f->proxy may not have seen the name change owner yet. */
                g_autoptr(WatchdInotify) root = wt_proxy(f->conn);

                err = add_watch_error(root, shared, 0, NULL);
                g_assert_cmpstr(err, ==, E_ACCESS_DENIED);
        }
        touch(done);
        g_assert_cmpuint(attacker_await(a, secrets), ==, 1);
        attacker_stop(a);
        log = wt_daemon_log(f->daemon);
        g_assert_nonnull(strstr(log, "Running as uid 65534: no capabilities kept"));
}

/* ---------------------------------------------------------------- a lost permission */

/* The attacker's marker: "done" made anew in dir, awaited, the records and Overflows counted. */
static void marker(Attacker *a, const char *done, const char *const *secrets, guint *overflows, GPtrArray *seen) {
        (void) unlink(done);
        touch(done);
        (void) attacker_await_full(a, secrets, overflows, seen);
}

static gboolean seen_has(GPtrArray *seen, const char *path) {
        for (guint i = 0; i < seen->len; i++)
                if (g_str_equal(seen->pdata[i], path))
                        return TRUE;
        return FALSE;
}

/*
 * Issue 25, item 5: nobody watches a directory tree it may read, RECURSIVE;
 * root then makes the tree's root 0700, and later a directory inside it:
 * names made there afterwards reach nobody no more (the kernel's watch is
 * still there), nobody is told (Overflow), and when the mode is given back
 * it is told again and names come again.
 */
static void test_lost_permission(Fixture *f, gconstpointer data) {
        g_autofree char *dir = path_in(f, "perm"), *sub = g_build_filename(dir, "sub", NULL);
        g_autofree char *open_dir = path_in(f, "open"), *done = g_build_filename(open_dir, "done", NULL);
        g_autofree char *first = g_build_filename(dir, "first", NULL);
        g_autofree char *secret = g_build_filename(dir, "secret-1", NULL);
        g_autofree char *secret2 = g_build_filename(sub, "secret-2", NULL);
        g_autofree char *visible = g_build_filename(dir, "visible", NULL);
        g_autofree char *hidden = g_build_filename(sub, "secret-3", NULL);
        g_autofree char *beside = g_build_filename(dir, "beside", NULL);
        const char *const secrets[] = { "secret-", NULL };
        const char *const none[] = { NULL };
        g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *answer = NULL, *answer2 = NULL;
        guint overflows = 0;
        Attacker *a;

        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
        g_assert_cmpint(g_mkdir(open_dir, 0755), ==, 0);
        a = attacker_start(f);
        if (!a)
                return;
        {
                g_autofree char *cmd = g_strconcat("watchr ", dir, NULL);

                answer = attacker_ask(a, cmd);
        }
        g_assert_true(g_str_has_prefix(answer, "ok "));
        answer2 = attacker_watch(a, open_dir);
        g_assert_true(g_str_has_prefix(answer2, "ok "));
        touch(first);
        marker(a, done, none, &overflows, seen);
        g_assert_true(seen_has(seen, first));
        g_assert_cmpuint(overflows, ==, 0);

        /* The root of the tree closed to others. */
        g_assert_cmpint(g_chmod(dir, 0700), ==, 0);
        touch(secret);
        touch(secret2);
        /* Told: awaited through markers, never a secret among what comes. */
        for (int i = 0; i < 200 && overflows == 0; i++)
                marker(a, done, secrets, &overflows, seen);
        g_assert_cmpuint(overflows, >=, 1);
        touch(secret);
        marker(a, done, secrets, &overflows, seen);

        /* Open again: told, and followed again. */
        overflows = 0;
        g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
        for (int i = 0; i < 200 && overflows == 0; i++)
                marker(a, done, secrets, &overflows, seen);
        g_assert_cmpuint(overflows, >=, 1);
        touch(visible);
        marker(a, done, secrets, &overflows, seen);
        g_assert_true(seen_has(seen, visible));

        /* A directory inside the tree closed: its names go, its parent's stay. */
        overflows = 0;
        g_assert_cmpint(g_chmod(sub, 0700), ==, 0);
        for (int i = 0; i < 200 && overflows == 0; i++)
                marker(a, done, secrets, &overflows, seen);
        g_assert_cmpuint(overflows, >=, 1);
        touch(hidden);
        touch(beside);
        marker(a, done, secrets, &overflows, seen);
        g_assert_true(seen_has(seen, beside));
        attacker_stop(a);
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "--helper") == 0)
                return helper_main(argc, argv);

        g_test_init(&argc, &argv, NULL);

        g_test_add("/security/proc-pid-cwd", Fixture, NULL, fixture_setup, test_proc_pid_cwd, fixture_teardown);
        g_test_add("/security/proc-self-fd", Fixture,
                   "[limits]\nmax_watches_per_client = 100000\nmax_watches_per_user = 200000\n"
                   "add_watch_timeout_ms = 600000\n", /* its walk, under valgrind too */
                   fixture_setup, test_proc_self_fd, fixture_teardown);
        g_test_add("/security/add-watch-fd-nameless", Fixture, NULL, fixture_setup, test_add_watch_fd_nameless,
                   fixture_teardown);
        g_test_add("/security/stats-scoped", Fixture, "[limits]\nmax_pending_events_per_client = 16\n", fixture_setup,
                   test_stats_scoped, fixture_teardown);
        g_test_add("/security/capabilities", Fixture, NULL, fixture_setup, test_capabilities, fixture_teardown);
        g_test_add("/security/non-root-daemon", Fixture, NULL, fixture_setup, test_non_root_daemon, fixture_teardown);
        g_test_add("/security/lost-permission", Fixture, NULL, fixture_setup, test_lost_permission, fixture_teardown);

        return g_test_run();
}
