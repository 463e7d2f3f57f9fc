/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-watchctl - the real watchctl against a real watchd on a private bus
 *
 * The private dbus-daemon and watchd (syscall backend) come from the shared
 * harness of tests/dbus (watchd-test.h); each test process starts its own.
 * A test runs the watchctl binary with GSubprocess, waits for "watches
 * established" on its stderr, changes real files, and checks the lines and
 * the exit status. Nothing sleeps: every wait is for an output line, an exit
 * or a bus name, with a deadline that fails the test loudly and shows what
 * the process said.
 *
 * Environment: WATCHCTL (the binary under test) and WATCHD (for the harness).
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "path_escape.h"
#include "watchd-api.h"
#include "wt-fixture.h"

#define DEADLINE_SECONDS 20

typedef struct Env {
        const char *watchctl;
        WtBus *bus;          /* its directory also holds the tests' files */
        const char *address; /* of the private bus */
        WtDaemon *daemon;
        GDBusConnection *conn; /* the test's own, to see the bus name */
        char *owner;           /* unique name of org.example.Inotify, or NULL */
        guint counter;
} Env;

static Env env;

/* ------------------------------------------------------------------------ */
/* Processes whose output is read line by line as it comes */

typedef struct Proc {
        char *name;
        GSubprocess *sp;
        GString *out, *err;
        GDataInputStream *out_in, *err_in;
        gboolean out_eof, err_eof;
        gboolean exited;
        int status; /* exit status, or 128 + signal */
} Proc;

static void read_next_line(Proc *p, GDataInputStream *in);

static void on_line(GObject *source, GAsyncResult *res, gpointer userdata) {
        Proc *p = userdata;
        GDataInputStream *in = G_DATA_INPUT_STREAM(source);
        g_autoptr(GError) error = NULL;
        g_autofree char *line = g_data_input_stream_read_line_finish_utf8(in, res, NULL, &error);
        GString *buf = in == p->out_in ? p->out : p->err;

        if (!line) {
                if (error)
                        g_string_append_printf(buf, "[read error: %s]\n", error->message);
                if (in == p->out_in)
                        p->out_eof = TRUE;
                else
                        p->err_eof = TRUE;
                return;
        }
        g_string_append(buf, line);
        g_string_append_c(buf, '\n');
        read_next_line(p, in);
}

static void read_next_line(Proc *p, GDataInputStream *in) {
        g_data_input_stream_read_line_async(in, G_PRIORITY_DEFAULT, NULL, on_line, p);
}

static void on_proc_exit(GObject *source, GAsyncResult *res, gpointer userdata) {
        Proc *p = userdata;

        g_subprocess_wait_finish(p->sp, res, NULL);
        p->exited = TRUE;
        if (g_subprocess_get_if_exited(p->sp))
                p->status = g_subprocess_get_exit_status(p->sp);
        else
                p->status = 128 + g_subprocess_get_term_sig(p->sp);
}

/* Starts argv (with var=value in its environment if var is set), as nobody
 * if as_nobody; returns NULL, the test skipped, if nobody cannot run it here. */
static Proc *proc_start_full(gboolean as_nobody, const char *var, const char *value, const char *const *argv) {
        g_autoptr(GSubprocessLauncher)
                l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr(GStrvBuilder) args = g_strv_builder_new();
        g_auto(GStrv) run = NULL;
        g_autoptr(GError) error = NULL;
        Proc *p;

        if (var)
                g_subprocess_launcher_setenv(l, var, value, TRUE);

        g_strv_builder_addv(args, (const char **) argv);
        run = g_strv_builder_end(args);
        if (as_nobody) {
                /* A copy nobody can reach, wherever the build tree is. */
                char *copy = wt_launcher_as_nobody(l, env.bus, argv[0], &error);

                if (!copy) {
                        g_test_skip(error->message);
                        return NULL;
                }
                g_free(run[0]);
                run[0] = copy;
        } else
                g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
        p = g_new0(Proc, 1);
        p->name = g_path_get_basename(argv[0]);
        p->sp = g_subprocess_launcher_spawnv(l, (const char *const *) run, &error);
        g_assert_no_error(error);
        p->out = g_string_new(NULL);
        p->err = g_string_new(NULL);
        p->out_in = g_data_input_stream_new(g_subprocess_get_stdout_pipe(p->sp));
        p->err_in = g_data_input_stream_new(g_subprocess_get_stderr_pipe(p->sp));
        read_next_line(p, p->out_in);
        read_next_line(p, p->err_in);
        g_subprocess_wait_async(p->sp, NULL, on_proc_exit, p);
        return p;
}

static void proc_free(Proc *p) {
        if (!p)
                return;
        if (!p->exited)
                g_subprocess_force_exit(p->sp);
        /* Let the pending reads and the wait finish before freeing. */
        while (!(p->exited && p->out_eof && p->err_eof))
                g_main_context_iteration(NULL, TRUE);
        g_object_unref(p->out_in);
        g_object_unref(p->err_in);
        g_object_unref(p->sp);
        g_string_free(p->out, TRUE);
        g_string_free(p->err, TRUE);
        g_free(p->name);
        g_free(p);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Proc, proc_free)

/* Iterates the main loop until cond(data) holds; fails loudly at the
 * deadline, showing what p (if any) printed. */
static void wait_until(const char *what, gboolean (*cond)(gpointer), gpointer data, Proc *p) {
        gint64 deadline = g_get_monotonic_time() + DEADLINE_SECONDS * G_USEC_PER_SEC;

        while (!cond(data)) {
                if (g_get_monotonic_time() > deadline) {
                        if (p)
                                g_printerr("--- %s stdout:\n%s--- %s stderr:\n%s---\n", p->name, p->out->str, p->name,
                                           p->err->str);
                        g_error("timed out after %d s waiting for %s", DEADLINE_SECONDS, what);
                }
                g_main_context_iteration(NULL, TRUE);
        }
}

typedef struct {
        Proc *p;
        const char *text;
} Wanted;

static gboolean has_stderr(gpointer data) {
        Wanted *w = data;

        return strstr(w->p->err->str, w->text) != NULL;
}

static void wait_stderr(Proc *p, const char *text) {
        Wanted w = { p, text };
        g_autofree char *what = g_strdup_printf("\"%s\" on the stderr of %s", text, p->name);

        wait_until(what, has_stderr, &w, p);
}

static gboolean has_stdout(gpointer data) {
        Wanted *w = data;

        return strstr(w->p->out->str, w->text) != NULL;
}

static void wait_stdout(Proc *p, const char *text) {
        Wanted w = { p, text };
        g_autofree char *what = g_strdup_printf("\"%s\" on the stdout of %s", text, p->name);

        wait_until(what, has_stdout, &w, p);
}

static gboolean proc_done(gpointer data) {
        Proc *p = data;

        return p->exited && p->out_eof && p->err_eof;
}

/* Waits for p to exit (and its output to be read); returns its status. */
static int wait_exit(Proc *p) {
        g_autofree char *what = g_strdup_printf("%s to exit", p->name);

        wait_until(what, proc_done, p, p);
        return p->status;
}

static void assert_exit(Proc *p, int status) {
        int got = wait_exit(p);

        if (got != status) {
                g_printerr("--- %s stdout:\n%s--- %s stderr:\n%s---\n", p->name, p->out->str, p->name, p->err->str);
                g_error("%s exited with status %d, expected %d", p->name, got, status);
        }
}

static gboolean has_lines(gpointer data) {
        Wanted *w = data;
        guint n = 0;

        for (const char *s = w->p->out->str; *s; s++)
                n += *s == '\n';
        return n >= GPOINTER_TO_UINT(w->text);
}

static void wait_stdout_lines(Proc *p, guint n) {
        Wanted w = { p, GUINT_TO_POINTER(n) };
        g_autofree char *what = g_strdup_printf("%u lines on the stdout of %s", n, p->name);

        wait_until(what, has_lines, &w, p);
}

/* ------------------------------------------------------------------------ */
/* The private bus and the daemon */

static void on_name_appeared(GDBusConnection *c, const char *name, const char *owner, gpointer userdata) {
        g_free(env.owner);
        env.owner = g_strdup(owner);
}

static void on_name_vanished(GDBusConnection *c, const char *name, gpointer userdata) {
        g_clear_pointer(&env.owner, g_free);
}

static gboolean name_owned(gpointer data) {
        return env.owner != NULL;
}

static gboolean name_free(gpointer data) {
        return env.owner == NULL;
}

static void start_bus(void) {
        env.bus = wt_bus_start();
        env.address = env.bus->address;
        env.conn = wt_connect(env.bus);
        g_bus_watch_name_on_connection(env.conn, WATCHD_BUS_NAME, G_BUS_NAME_WATCHER_FLAGS_NONE, on_name_appeared,
                                       on_name_vanished, NULL, NULL);
}

/* Starts watchd with conf_text as its config file (NULL: defaults). */
static void start_watchd_with(const char *conf_text) {
        g_assert_null(env.daemon);
        env.daemon = wt_daemon_start(env.bus, conf_text);
        wait_until("the test to see watchd on the bus", name_owned, NULL, NULL);
}

static void start_watchd(void) {
        start_watchd_with(NULL);
}

static void stop_watchd(void) {
        g_assert_nonnull(env.daemon);
        g_assert_cmpint(wt_daemon_stop(g_steal_pointer(&env.daemon)), ==, 0);
        wait_until("the bus to see watchd gone", name_free, NULL, NULL);
}

/* ------------------------------------------------------------------------ */
/* Helpers of the tests */

/* watchctl --address ADDR ARGS... (args ends with NULL) */
static Proc *watchctl_as(gboolean as_nobody, const char *const *args) {
        g_autoptr(GPtrArray) argv = g_ptr_array_new();

        g_ptr_array_add(argv, (gpointer) env.watchctl);
        g_ptr_array_add(argv, "--address");
        g_ptr_array_add(argv, (gpointer) env.address);
        for (const char *const *a = args; *a; a++)
                g_ptr_array_add(argv, (gpointer) *a);
        g_ptr_array_add(argv, NULL);
        return proc_start_full(as_nobody, NULL, NULL, (const char *const *) argv->pdata);
}
#define WATCHCTL_AS(as, ...) watchctl_as((as), (const char *const[]) { __VA_ARGS__, NULL })
#define WATCHCTL(...)        WATCHCTL_AS(FALSE, __VA_ARGS__)

/* A fresh directory for one test, readable by everyone. */
static char *make_dir(void) {
        char *d = g_strdup_printf("%s/t%u", env.bus->dir, ++env.counter);

        g_assert_cmpint(mkdir(d, 0755), ==, 0);
        return d;
}

static void write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t) strlen(text));
        g_assert_cmpint(close(fd), ==, 0);
}

static void start_watch_established(Proc *p) {
        wait_stderr(p, "watchctl: watches established\n");
}

/* ------------------------------------------------------------------------ */
/* The tests */

static void test_create_modify_delete(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s\nMODIFY %s\nDELETE %s\n", f, f, f);
        g_autoptr(Proc) p = WATCHCTL("watch", "-e", "create,modify,delete", "--count", "3", dir);
        int fd;

        start_watch_established(p);
        fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, "x", 1), ==, 1);
        g_assert_cmpint(close(fd), ==, 0);
        g_assert_cmpint(unlink(f), ==, 0);
        assert_exit(p, 0);
        g_assert_cmpstr(p->out->str, ==, want);
}

static void test_rename_one_line(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *a = g_build_filename(dir, "a", NULL);
        g_autofree char *b = g_build_filename(dir, "b c", NULL);
        g_autofree char *want = g_strdup_printf("MOVED_FROM,MOVED_TO %s -> %s\n", a, b);
        g_autoptr(Proc) p = NULL;

        write_file(a, "x");
        p = WATCHCTL("watch", "-e", "moved", "--count", "1", dir);
        start_watch_established(p);
        g_assert_cmpint(rename(a, b), ==, 0);
        assert_exit(p, 0);
        g_assert_cmpstr(p->out->str, ==, want);
}

static void test_event_filter(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *want = g_strdup_printf("DELETE %s\n", f);
        g_autoptr(Proc) p = WATCHCTL("watch", "-e", "DELETE", "--count", "1", dir);

        start_watch_established(p);
        write_file(f, "created, written, closed: none of it asked for");
        g_assert_cmpint(chmod(f, 0600), ==, 0);
        g_assert_cmpint(unlink(f), ==, 0);
        assert_exit(p, 0);
        g_assert_cmpstr(p->out->str, ==, want);
}

static void test_format(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *sub = g_build_filename(dir, "sub", NULL);
        g_autoptr(Proc)
                p = WATCHCTL("watch", "-e", "create", "--count", "1", "--format", "%w|%f|%e|%:e|%c|%p|[%n]|%%|%i", dir);
        g_autofree char *prefix = g_strdup_printf("%s|sub|CREATE,ISDIR|CREATE:ISDIR|0|%s|[]|%%|", dir, sub);
        const char *id;
        guint64 n;

        start_watch_established(p);
        g_assert_cmpint(mkdir(sub, 0755), ==, 0);
        assert_exit(p, 0);
        g_assert_true(g_str_has_prefix(p->out->str, prefix));
        id = p->out->str + strlen(prefix);
        g_assert_true(g_str_has_suffix(id, "\n"));
        g_autofree char *idtext = g_strndup(id, strlen(id) - 1);
        g_assert_true(g_ascii_string_to_unsigned(idtext, 10, 1, G_MAXUINT32, &n, NULL));
}

static JsonObject *parse_line(JsonParser *parser, const char *line) {
        g_autoptr(GError) error = NULL;

        if (!json_parser_load_from_data(parser, line, -1, &error))
                g_error("not JSON: '%s': %s", line, error->message);
        g_assert_true(JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)));
        return json_node_get_object(json_parser_get_root(parser));
}

static void test_json(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *a = g_build_filename(dir, "a", NULL);
        g_autofree char *b = g_build_filename(dir, "q\"uote\\d", NULL);
        g_autoptr(Proc) p = WATCHCTL("watch", "--json", "-e", "create,move", "--count", "2", dir);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_auto(GStrv) lines = NULL;
        JsonObject *o;
        JsonArray *events;

        start_watch_established(p);
        write_file(a, "");
        g_assert_cmpint(rename(a, b), ==, 0);
        assert_exit(p, 0);

        lines = g_strsplit(p->out->str, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 3); /* two lines and "" */
        g_assert_cmpstr(lines[2], ==, "");

        o = parse_line(parser, lines[0]);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "event");
        g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, a);
        g_assert_cmpstr(json_object_get_string_member(o, "watch"), ==, dir);
        g_assert_cmpstr(json_object_get_string_member(o, "file"), ==, "a");
        g_assert_cmpint(json_object_get_int_member(o, "mask"), ==, 0x100);
        g_assert_true(json_object_get_null_member(o, "new_path"));
        g_assert_cmpint(json_object_get_int_member(o, "cookie"), ==, 0);
        g_assert_cmpint(json_object_get_int_member(o, "id"), >, 0);
        /* UTF-8 names, quote and backslash included, go as they are. */
        g_assert_false(json_object_get_boolean_member(o, "escaped"));
        events = json_object_get_array_member(o, "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 1);
        g_assert_cmpstr(json_array_get_string_element(events, 0), ==, "CREATE");

        o = parse_line(parser, lines[1]);
        g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, a);
        g_assert_cmpstr(json_object_get_string_member(o, "new_path"), ==, b);
        g_assert_cmpint(json_object_get_int_member(o, "mask"), ==, 0xc0);
        g_assert_cmpint(json_object_get_int_member(o, "cookie"), !=, 0);
        events = json_object_get_array_member(o, "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(events, 0), ==, "MOVED_FROM");
        g_assert_cmpstr(json_array_get_string_element(events, 1), ==, "MOVED_TO");
}

/* The bytes of a path in watchctl's escaped form. */
static char *unescape(const char *s) {
        char *out = NULL;

        if (path_unescape(s, &out) < 0)
                g_error("not in the escaped form: \"%s\"", s);
        return out;
}

/*
 * Names that are not UTF-8, a control character and a backslash: the
 * watched directory itself is one (so watchctl sends it escaped, with
 * PATH_ESCAPED), every event is printed, each path in the escaped form and
 * on its one line, and --json stays valid JSON from which the bytes come
 * back. list shows the path the same way.
 */
static void test_non_utf8(void) {
        g_autofree char *top = make_dir();
        g_autofree char *dir = g_build_filename(top, "w\xff", NULL);
        g_autofree char *x = g_build_filename(dir, "x\xff", NULL);
        g_autofree char *ab = g_build_filename(dir, "a\\b", NULL);
        g_autofree char *nl = g_build_filename(dir, "n\nl", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s/w\\xff/x\\xff\n"
                                                "MOVED_FROM,MOVED_TO %s/w\\xff/x\\xff -> %s/w\\xff/a\\\\b\n"
                                                "CREATE %s/w\\xff/n\\x0al\n",
                                                top, top, top, top);
        g_autofree char *list_end = g_strdup_printf(" CREATE - %s/w\\xff\n", top);
        g_autoptr(Proc) p = NULL, j = NULL, l = NULL, lj = NULL;
        g_autoptr(JsonParser) parser = json_parser_new();
        g_auto(GStrv) lines = NULL;
        const char *const files[] = { x, x, nl };
        JsonObject *o;

        g_assert_cmpint(mkdir(dir, 0755), ==, 0);
        p = WATCHCTL("watch", "-e", "create,move", "--count", "3", dir);
        j = WATCHCTL("watch", "--json", "-e", "create,move", "--count", "3", dir);
        start_watch_established(p);
        start_watch_established(j);
        write_file(x, "");
        g_assert_cmpint(rename(x, ab), ==, 0);
        write_file(nl, "");
        assert_exit(p, 0);
        assert_exit(j, 0);
        g_assert_cmpstr(p->out->str, ==, want);

        lines = g_strsplit(j->out->str, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 4);
        for (guint i = 0; i < 3; i++) {
                g_autofree char *watch = NULL, *path = NULL, *file = NULL;

                o = parse_line(parser, lines[i]);
                /* The watch is not UTF-8: every object is escaped, each of its paths. */
                g_assert_true(json_object_get_boolean_member(o, "escaped"));
                watch = unescape(json_object_get_string_member(o, "watch"));
                path = unescape(json_object_get_string_member(o, "path"));
                file = unescape(json_object_get_string_member(o, "file"));
                g_assert_cmpstr(watch, ==, dir);
                g_assert_cmpstr(path, ==, files[i]);
                g_assert_cmpstr(file, ==, files[i] + strlen(dir) + 1);
                if (i == 1) {
                        g_autofree char *new_path = unescape(json_object_get_string_member(o, "new_path"));

                        g_assert_cmpstr(new_path, ==, ab);
                } else
                        g_assert_true(json_object_get_null_member(o, "new_path"));
        }
        /* The mask is the events', without the daemon's escape bit. */
        g_assert_cmpint(json_object_get_int_member(o, "mask"), ==, 0x100);

        l = WATCHCTL("list", "-e", "create", dir);
        lj = WATCHCTL("list", "--json", "-e", "create", dir);
        assert_exit(l, 0);
        assert_exit(lj, 0);
        g_assert_true(g_str_has_suffix(l->out->str, list_end));
        o = parse_line(parser, lj->out->str);
        g_assert_true(json_object_get_boolean_member(o, "escaped"));
        g_assert_cmpint(json_object_get_int_member(o, "flags"), ==, 0);
        {
                g_autofree char *path = unescape(json_object_get_string_member(o, "path"));
                g_assert_cmpstr(path, ==, dir);
        }
}

static void test_overflow(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(Proc) p = NULL;
        g_autoptr(JsonParser) parser = json_parser_new();
        g_auto(GStrv) lines = NULL;
        JsonObject *o = NULL;
        pid_t pid;

        /* A daemon that may hold 16 records for a client, frozen while 200
         * events queue up in the kernel: it reads them all at once and must
         * say that it dropped some. */
        stop_watchd();
        start_watchd_with("[limits]\nmax_pending_events_per_client = 16\n");
        p = WATCHCTL("watch", "--json", "-e", "create", dir);
        start_watch_established(p);
        pid = (pid_t) g_ascii_strtoll(g_subprocess_get_identifier(env.daemon->process), NULL, 10);
        g_assert_cmpint(kill(pid, SIGSTOP), ==, 0);
        for (int i = 0; i < 200; i++) {
                g_autofree char *f = g_strdup_printf("%s/f%d", dir, i);

                write_file(f, "");
        }
        g_assert_cmpint(kill(pid, SIGCONT), ==, 0);
        wait_stderr(p, "\" (overflow): rescan if you keep state\n");
        g_subprocess_send_signal(p->sp, SIGTERM);
        assert_exit(p, 0);

        /* The JSON stream says it too, among the events. */
        lines = g_strsplit(p->out->str, "\n", -1);
        for (char **l = lines; *l && **l; l++) {
                o = parse_line(parser, *l);
                if (g_strcmp0(json_object_get_string_member(o, "type"), "overflow") == 0)
                        break;
                g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "event");
                o = NULL;
        }
        if (!o)
                g_error("no overflow object on stdout:\n%s", p->out->str);
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(o, "ids")), ==, 1);
        stop_watchd();
        start_watchd();
}

/* Like "watchctl watch DIR | head -n 1": once the reader has gone, watchctl
 * stops at once with status 0, without waiting for another event. */
static void test_stdout_closed(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s", f);
        const char *argv[] = { env.watchctl, "--address", env.address, "watch", "-e", "create", dir, NULL };
        g_autoptr(GSubprocessLauncher)
                l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr(GSubprocess) sp = NULL;
        g_autoptr(GDataInputStream) out = NULL, err = NULL;
        g_autofree char *established = NULL, *line = NULL;
        g_autoptr(GError) error = NULL;

        g_subprocess_launcher_set_child_setup(l, wt_child_die_with_parent, NULL, NULL);
        sp = g_subprocess_launcher_spawnv(l, argv, &error);
        g_assert_no_error(error);
        out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(sp));
        err = g_data_input_stream_new(g_subprocess_get_stderr_pipe(sp));
        /* Blocking reads: the meson timeout ends a test that hangs here. */
        established = g_data_input_stream_read_line_utf8(err, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(established, ==, "watchctl: watches established");
        write_file(f, "");
        line = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(line, ==, want);
        g_assert_true(g_input_stream_close(G_INPUT_STREAM(out), NULL, &error));
        g_assert_true(g_subprocess_wait(sp, NULL, &error));
        g_assert_true(g_subprocess_get_if_exited(sp));
        g_assert_cmpint(g_subprocess_get_exit_status(sp), ==, 0);
}

static void test_oneshot(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s\n", f);
        g_autoptr(Proc) p = WATCHCTL("watch", "--oneshot", "-e", "create", dir);

        start_watch_established(p);
        write_file(f, "");
        /* The daemon ends the watch after one event; with no watch left,
         * watchctl is done, and that is a success with --oneshot. */
        assert_exit(p, 0);
        g_assert_cmpstr(p->out->str, ==, want);
        g_assert_nonnull(strstr(p->err->str, "is no longer watched (oneshot)\n"));
}

/*
 * --persist on a file renamed away: MOVE_SELF, then the file made again at
 * the path is the watch's again (CREATE). The same command as the e2e test
 * runs on /dev/inotify (tests/e2e/self, persist-renamed-file).
 */
static void test_persist(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL), *g = g_build_filename(dir, "g", NULL);
        g_autofree char *want = NULL;
        g_autoptr(Proc) p = NULL;

        write_file(f, "");
        want = g_strdup_printf("MOVE_SELF %s\nCREATE %s\n", f, f);
        p = WATCHCTL("watch", "--persist", "-e", "delete_self,create", "--count", "2", f);
        start_watch_established(p);
        g_assert_cmpint(rename(f, g), ==, 0);
        write_file(f, "");
        assert_exit(p, 0);
        g_assert_cmpstr(p->out->str, ==, want);
}

static void child_setup_close_stdout(gpointer userdata) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(STDOUT_FILENO);
}

/* "watchctl watch ... >&-": the bus socket must not become fd 1, or event
 * lines would be written into the D-Bus stream. */
static void test_no_stdout(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        const char *argv[] = { env.watchctl, "--address", env.address, "watch", "-e",
                               "create",     "--count",   "1",         dir,     NULL };
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr(GSubprocess) sp = NULL;
        g_autoptr(GDataInputStream) err = NULL;
        g_autofree char *line = NULL, *rest = NULL;
        g_autoptr(GError) error = NULL;

        g_subprocess_launcher_set_child_setup(l, child_setup_close_stdout, NULL, NULL);
        sp = g_subprocess_launcher_spawnv(l, argv, &error);
        g_assert_no_error(error);
        err = g_data_input_stream_new(g_subprocess_get_stderr_pipe(sp));
        /* Blocking reads: the meson timeout ends a test that hangs here. */
        line = g_data_input_stream_read_line_utf8(err, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(line, ==, "watchctl: watches established");
        write_file(f, "");
        rest = g_data_input_stream_read_line_utf8(err, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(rest, ==, NULL); /* end of stderr: no complaint */
        g_assert_true(g_subprocess_wait(sp, NULL, &error));
        g_assert_true(g_subprocess_get_if_exited(sp));
        g_assert_cmpint(g_subprocess_get_exit_status(sp), ==, 0);
}

/* mkdir -p a/b/c && touch a/b/c/f under a -r watch: every level and the
 * file are reported (the daemon scans a new directory once it watches it),
 * with paths relative to the watched root in %f. A file may be reported
 * twice (seen by the scan and by the kernel), so lines are looked for, not
 * counted. */
static void test_recursive(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *deep = g_build_filename(dir, "a/b/c", NULL);
        g_autofree char *f = g_build_filename(deep, "f", NULL);
        g_autoptr(Proc) p = WATCHCTL("watch", "-r", "-e", "create", "--format", "%f %e", dir);

        start_watch_established(p);
        g_assert_cmpint(g_mkdir_with_parents(deep, 0755), ==, 0);
        write_file(f, "");
        wait_stdout(p, "a/b/c/f CREATE\n");
        g_subprocess_send_signal(p->sp, SIGTERM);
        assert_exit(p, 0);
        g_assert_true(g_str_has_prefix(p->out->str, "a CREATE,ISDIR\n"));
        g_assert_nonnull(strstr(p->out->str, "\na/b CREATE,ISDIR\n"));
        g_assert_nonnull(strstr(p->out->str, "\na/b/c CREATE,ISDIR\n"));
}

static void test_timeout(void) {
        g_autofree char *dir = make_dir();
        g_autoptr(Proc) quiet = WATCHCTL("watch", "-e", "create", "--timeout", "0.3", dir);
        g_autoptr(Proc) short_of_count = NULL;
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s\n", f);

        /* Nothing happens: status 3, nothing printed. */
        assert_exit(quiet, 3);
        g_assert_cmpstr(quiet->out->str, ==, "");

        /* One event of the two asked for: status 3, the one printed. */
        short_of_count = WATCHCTL("watch", "-e", "create", "--count", "2", "--timeout", "2", dir);
        start_watch_established(short_of_count);
        write_file(f, "");
        assert_exit(short_of_count, 3);
        g_assert_cmpstr(short_of_count->out->str, ==, want);
}

static void test_list(void) {
        g_autofree char *d1 = make_dir();
        g_autofree char *d2 = make_dir();
        g_autoptr(Proc) p = WATCHCTL("list", "-e", "create,delete", d1, d2);
        g_autoptr(Proc) j = WATCHCTL("list", "--json", "--oneshot", "-e", "moved", d1);
        g_autofree char *line1 = g_strdup_printf(" CREATE,DELETE - %s", d1);
        g_autofree char *line2 = g_strdup_printf(" CREATE,DELETE - %s", d2);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_auto(GStrv) lines = NULL;
        guint64 id1, id2;
        char *end;
        JsonObject *o;
        JsonArray *events;

        /* "ID EVENTS FLAGS PATH", in the order they were added */
        assert_exit(p, 0);
        lines = g_strsplit(p->out->str, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 3);
        g_assert_true(g_str_has_suffix(lines[0], line1));
        g_assert_true(g_str_has_suffix(lines[1], line2));
        id1 = g_ascii_strtoull(lines[0], &end, 10);
        g_assert_true(end != lines[0] && *end == ' ');
        id2 = g_ascii_strtoull(lines[1], &end, 10);
        g_assert_true(end != lines[1] && *end == ' ');
        g_assert_cmpuint(id1, <, id2);

        assert_exit(j, 0);
        o = parse_line(parser, j->out->str);
        g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, d1);
        g_assert_cmpint(json_object_get_int_member(o, "mask"), ==, 0xc0);
        g_assert_cmpint(json_object_get_int_member(o, "flags"), ==, 0x8);
        g_assert_cmpint(json_object_get_int_member(o, "id"), >, 0);
        events = json_object_get_array_member(o, "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(events, 0), ==, "MOVED_FROM");
}

/* Durable subscriptions: create, list, resume (a script's JSON), remove. */
static void test_durable(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *a = g_build_filename(dir, "a", NULL), *b = g_build_filename(dir, "b", NULL);
        g_autoptr(Proc) create = WATCHCTL("durable", "create", "-e", "create,move,close_write", "--json", "docs", dir);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(Proc) list = NULL, resume = NULL, again = NULL, text = NULL, foreign = NULL, rm = NULL, gone = NULL;
        g_auto(GStrv) lines = NULL;
        g_autofree char *journal = NULL, *since = NULL, *want = NULL;
        JsonObject *o;
        gint64 cursor, last = 0;

        assert_exit(create, 0);
        o = parse_line(parser, create->out->str);
        g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, "docs");
        journal = g_strdup(json_object_get_string_member(o, "journal"));
        g_assert_cmpuint(strlen(journal), ==, 32);
        cursor = json_object_get_int_member(o, "cursor");

        /* Made while no one resumes. */
        write_file(a, "x");
        g_assert_cmpint(rename(a, b), ==, 0);
        list = WATCHCTL("durable", "list");
        assert_exit(list, 0);
        want = g_strdup_printf("docs watching %s %" G_GINT64_FORMAT " ", journal, cursor);
        g_assert_true(g_str_has_prefix(list->out->str, want));

        /* What an indexer script reads: resumed, the records, caught up. */
        since = g_strdup_printf("%" G_GINT64_FORMAT, cursor);
        for (int tries = 0;; tries++) {
                g_clear_pointer(&resume, proc_free);
                resume = WATCHCTL("durable", "resume", "docs", "--journal", journal, "--since", since,
                                  "--until-caught-up", "--json");
                assert_exit(resume, 0);
                g_strfreev(lines);
                lines = g_strsplit(resume->out->str, "\n", -1);
                if (g_strv_length(lines) >= 6 || tries > 100)
                        break;
                g_usleep(20000); /* the rename may not be journaled yet */
        }
        g_assert_cmpuint(g_strv_length(lines), ==, 6);
        o = parse_line(parser, lines[0]);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "resumed");
        g_assert_cmpstr(json_object_get_string_member(o, "journal"), ==, journal);
        for (int i = 1; i <= 3; i++) {
                static const char *const masks[] = { NULL, "CREATE", "CLOSE_WRITE", "MOVED_FROM" };
                JsonArray *events;

                o = parse_line(parser, lines[i]);
                g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "event");
                g_assert_cmpint(json_object_get_int_member(o, "id"), >, last);
                last = json_object_get_int_member(o, "id");
                g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, a);
                events = json_object_get_array_member(o, "events");
                g_assert_cmpstr(json_array_get_string_element(events, 0), ==, masks[i]);
        }
        g_assert_cmpstr(json_object_get_string_member(o, "new_path"), ==, b);
        o = parse_line(parser, lines[4]);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "caught-up");
        g_assert_cmpint(json_object_get_int_member(o, "id"), ==, last);

        /* From the last id: nothing new. */
        g_free(since);
        since = g_strdup_printf("%" G_GINT64_FORMAT, last);
        again = WATCHCTL("durable", "resume", "docs", "--journal", journal, "--since", since, "-u");
        assert_exit(again, 0);
        g_free(want);
        want = g_strdup_printf("%s caught-up\n", since);
        g_assert_cmpstr(again->out->str, ==, want);

        /* Text lines; another journal's cursor: rescan everything. */
        text = WATCHCTL("durable", "resume", "docs", "-u");
        assert_exit(text, 0);
        g_free(want);
        want = g_strdup_printf(" CREATE %s\n", a);
        g_assert_nonnull(strstr(text->out->str, want));
        g_free(want);
        want = g_strdup_printf(" MOVED_FROM,MOVED_TO %s -> %s\n", a, b);
        g_assert_nonnull(strstr(text->out->str, want));
        foreign = WATCHCTL("durable", "resume", "docs", "--journal", "0123456789abcdef0123456789abcdef", "-s", "1", "-u");
        assert_exit(foreign, 0);
        g_free(want);
        want = g_strdup_printf("%s rescan foreign whole\n%s caught-up\n", since, since);
        g_assert_cmpstr(foreign->out->str, ==, want);

        rm = WATCHCTL("durable", "remove", "docs");
        assert_exit(rm, 0);
        gone = WATCHCTL("durable", "remove", "docs");
        assert_exit(gone, 1);
        g_assert_nonnull(strstr(gone->err->str, "NoSuchDurable"));
}

/*
 * --timeout on resume: status 3 if it passes before the replay was caught
 * up, whatever was printed; 0 if it was. A daemon of the test's own stands
 * in for watchd (it owns the name on the private bus and answers
 * ResumeDurable with one record, then DurableCaughtUp or nothing), so that
 * "not caught up yet" does not hang on timing.
 */
static const char fake_xml[] = "<node><interface name='" WATCHD_INTERFACE "'>"
                               "<method name='ResumeDurable'><arg type='s' direction='in'/><arg type='s' direction='in'/>"
                               "<arg type='t' direction='in'/><arg type='s' direction='out'/></method>"
                               "<signal name='DurableEvents'><arg type='s'/><arg type='a(tuuss)'/></signal>"
                               "<signal name='DurableCaughtUp'><arg type='s'/><arg type='t'/></signal>"
                               "</interface></node>";

static void fake_call(GDBusConnection *c, const char *sender, const char *path, const char *iface, const char *method,
                      GVariant *params, GDBusMethodInvocation *inv, gpointer userdata) {
        gboolean catch_up = GPOINTER_TO_INT(userdata);
        const char *name;

        g_variant_get(params, "(&s&st)", &name, NULL, NULL);
        g_dbus_method_invocation_return_value(inv, g_variant_new("(s)", "0123456789abcdef0123456789abcdef"));
        g_assert_true(g_dbus_connection_emit_signal(
                c, sender, WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "DurableEvents",
                g_variant_new_parsed("(%s, [(@t 1, @u 256, @u 0, '/x/a', '')])", name), NULL));
        if (catch_up)
                g_assert_true(g_dbus_connection_emit_signal(c, sender, WATCHD_OBJECT_PATH, WATCHD_INTERFACE,
                                                            "DurableCaughtUp", g_variant_new("(st)", name, 1), NULL));
}

static const GDBusInterfaceVTable fake_vtable = { .method_call = fake_call };

static void test_durable_timeout(void) {
        g_autoptr(GDBusNodeInfo) node = g_dbus_node_info_new_for_xml(fake_xml, NULL);

        stop_watchd();
        for (int catch_up = 0; catch_up <= 1; catch_up++) {
                g_autoptr(Proc) p = NULL;
                guint reg = g_dbus_connection_register_object(env.conn, WATCHD_OBJECT_PATH, node->interfaces[0],
                                                              &fake_vtable, GINT_TO_POINTER(catch_up), NULL, NULL);
                guint own = g_bus_own_name_on_connection(env.conn, WATCHD_BUS_NAME, G_BUS_NAME_OWNER_FLAGS_NONE, NULL,
                                                         NULL, NULL, NULL);

                g_assert_cmpuint(reg, >, 0);
                wait_until("the test to own the name", name_owned, NULL, NULL);
                p = WATCHCTL("durable", "resume", "docs", "--timeout", "1");
                /* A record printed, then (only once caught up) caught-up; no -u: the timeout ends it. */
                assert_exit(p, catch_up ? 0 : 3);
                g_assert_cmpstr(p->out->str, ==, catch_up ? "1 CREATE /x/a\n1 caught-up\n" : "1 CREATE /x/a\n");
                g_bus_unown_name(own);
                g_assert_true(g_dbus_connection_unregister_object(env.conn, reg));
                wait_until("the name to be free", name_free, NULL, NULL);
        }
        start_watchd();
}

static void test_durable_usage(void) {
        const char *const *const bad[] = {
                (const char *const[]) { "durable", NULL },
                (const char *const[]) { "durable", "bogus", NULL },
                (const char *const[]) { "durable", "create", "x", NULL },
                (const char *const[]) { "durable", "list", "x", NULL },
                (const char *const[]) { "durable", "resume", NULL },
                (const char *const[]) { "durable", "resume", "x", "--since", "minus", NULL },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(Proc) p = watchctl_as(FALSE, bad[i]);

                assert_exit(p, 2);
        }
}

static void test_stats(void) {
        g_autoptr(Proc) text = WATCHCTL("stats");
        g_autoptr(Proc) json = WATCHCTL("stats", "--json");
        g_autoptr(JsonParser) parser = json_parser_new();
        static const char *const keys[] = {
                "version",     "clients",          "subscriptions", "kernel_watches",
                "events_read", "events_delivered", "overflows",     "backend",
        };
        g_autoptr(Proc) version = WATCHCTL("--version");
        JsonObject *o;

        assert_exit(version, 0);
        g_assert_true(g_regex_match_simple("^watchctl [0-9]+\\.[0-9]+\\.[0-9]+\n$", version->out->str, 0, 0));

        assert_exit(text, 0);
        g_assert_true(g_regex_match_simple("^version +[0-9]", text->out->str, G_REGEX_MULTILINE, 0));
        g_assert_true(g_regex_match_simple("^backend +syscall$", text->out->str, G_REGEX_MULTILINE, 0));
        g_assert_true(g_regex_match_simple("^subscriptions +[0-9]+$", text->out->str, G_REGEX_MULTILINE, 0));

        assert_exit(json, 0);
        o = parse_line(parser, json->out->str);
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
                if (!json_object_has_member(o, keys[i]))
                        g_error("stats --json has no \"%s\": %s", keys[i], json->out->str);
        g_assert_cmpstr(json_object_get_string_member(o, "backend"), ==, "syscall");
}

/* The line of "watchctl clients" whose PID column is pid, or NULL. */
static char *clients_line(const char *out, const char *pid) {
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);

        for (char **l = lines; *l; l++) {
                const char *first = *l + strspn(*l, " ");

                if (g_str_has_prefix(first, pid) && first[strlen(pid)] == ' ')
                        return g_strdup(first);
        }
        return NULL;
}

/* "watchctl clients": a watchctl watching two directories is listed with
 * its pid, uid, 2 subscriptions, 2 kernel watches and its command line;
 * --json says the same; as nobody, root's client is not shown. */
static void test_clients(void) {
        g_autofree char *d1 = make_dir(), *d2 = make_dir();
        g_autoptr(Proc) w = WATCHCTL("watch", d1, d2);
        g_autoptr(Proc) text = NULL, json = NULL, other = NULL;
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autofree char *uid = g_strdup_printf("%u", (unsigned) getuid());
        g_autofree char *cmd = g_strdup_printf(" %s --address %s watch %s %s", env.watchctl, env.address, d1, d2);
        g_autofree char *line = NULL, *header = NULL;
        g_auto(GStrv) lines = NULL;
        const char *pid;
        gboolean found = FALSE;

        start_watch_established(w);
        pid = g_subprocess_get_identifier(w->sp);
        g_assert_nonnull(pid);

        text = WATCHCTL("clients");
        assert_exit(text, 0);
        lines = g_strsplit(text->out->str, "\n", 2);
        header = g_strdup(lines[0]);
        g_assert_true(g_regex_match_simple("^ *PID +UID +SUBSCRIPTIONS +WATCHES +NAME +COMMAND$", header, 0, 0));
        line = clients_line(text->out->str, pid);
        if (!line)
                g_error("no line for pid %s in:\n%s", pid, text->out->str);
        g_assert_true(g_str_has_suffix(line, cmd));
        {
                g_autofree char *want = g_strdup_printf("^%s +%s +2 +2 +:[0-9.]+ ", pid, uid);

                if (!g_regex_match_simple(want, line, 0, 0))
                        g_error("'%s' does not match /%s/", line, want);
        }

        json = WATCHCTL("clients", "--json");
        assert_exit(json, 0);
        lines = (g_strfreev(lines), g_strsplit(json->out->str, "\n", -1));
        for (char **l = lines; *l && **l; l++) {
                JsonObject *o = parse_line(parser, *l);

                if (json_object_get_int_member(o, "pid") != g_ascii_strtoll(pid, NULL, 10))
                        continue;
                found = TRUE;
                g_assert_cmpint(json_object_get_int_member(o, "uid"), ==, getuid());
                g_assert_cmpint(json_object_get_int_member(o, "subscriptions"), ==, 2);
                g_assert_cmpint(json_object_get_int_member(o, "watches"), ==, 2);
                g_assert_true(g_str_has_prefix(json_object_get_string_member(o, "name"), ":"));
                g_assert_true(g_str_has_suffix(json_object_get_string_member(o, "command"), cmd + 1));
                g_assert_false(json_object_get_boolean_member(o, "escaped"));
        }
        g_assert_true(found);

        if (geteuid() != 0) {
                g_test_message("not root: the view of another user is not checked");
                return;
        }
        other = WATCHCTL_AS(TRUE, "clients");
        if (!other)
                return; /* skipped, saying why */
        assert_exit(other, 0);
        g_assert_null(clients_line(other->out->str, pid));
        /* Only nobody's own: that watchctl itself (its stream makes it a
         * client of watchd, with no subscription). */
        g_strfreev(lines);
        lines = g_strsplit(other->out->str, "\n", -1);
        g_assert_cmpstr(lines[0], ==, header);
        g_assert_cmpuint(g_strv_length(lines), >=, 2);
        for (char **l = lines + 1; *l && **l; l++)
                if (!g_regex_match_simple("^ *[0-9]+ +65534 +0 +0 ", *l, 0, 0))
                        g_error("nobody is shown '%s'", *l);
}

/* Every counter the daemon reports is explained in watchd(8). */
static void test_stats_documented(void) {
        const char *man = g_getenv("WATCHD_MAN8");
        g_autoptr(Proc) json = WATCHCTL("stats", "--json");
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GList) members = NULL;
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;

        g_assert_nonnull(man);
        g_assert_true(g_file_get_contents(man, &text, NULL, &error));
        assert_exit(json, 0);
        members = json_object_get_members(parse_line(parser, json->out->str));
        for (GList *m = members; m; m = m->next) {
                g_autofree char *item = g_strdup_printf("*%s*", (const char *) m->data);

                if (g_str_equal(m->data, "version"))
                        continue; /* the Version property, not a counter */
                if (!strstr(text, item))
                        g_error("GetStats reports \"%s\", which %s does not explain", (const char *) m->data, man);
        }
}

static void test_missing_path(void) {
        g_autofree char *dir = make_dir();
        /* A missing path is pending (watchd(8), MISSING PATHS); through ".." it is not found. */
        g_autofree char *nope = g_strdup_printf("%s/nope/../nope", dir);
        g_autofree char *want = g_strdup_printf("watchctl: %s: no such file or directory (FileNotFound)\n", nope);
        g_autoptr(Proc) p = WATCHCTL("watch", dir, nope);

        assert_exit(p, 1);
        g_assert_cmpstr(p->err->str, ==, want);
        g_assert_cmpstr(p->out->str, ==, "");
}

/* A refusal the daemon explains itself: its message, then the error name. */
static void test_invalid_args(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "f", NULL);
        g_autofree char *prefix = g_strdup_printf("watchctl: %s: ", f);
        g_autoptr(Proc) p = NULL;

        write_file(f, "");
        p = WATCHCTL("watch", "--onlydir", f);
        assert_exit(p, 1);
        g_assert_true(g_str_has_prefix(p->err->str, prefix));
        g_assert_true(g_str_has_suffix(p->err->str, " (InvalidArgs)\n"));
        g_assert_cmpstr(strchr(p->err->str, '\n'), ==, "\n"); /* one line */
}

static void test_permission_denied(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *secret = g_build_filename(dir, "secret", NULL);
        g_autofree char *want = g_strdup_printf("watchctl: %s: permission denied (AccessDenied)\n", secret);
        g_autoptr(Proc) p = NULL;

        if (geteuid() != 0) {
                g_test_skip("needs root to run watchctl as nobody");
                return;
        }
        g_assert_cmpint(mkdir(secret, 0700), ==, 0);
        p = WATCHCTL_AS(TRUE, "watch", secret);
        if (!p)
                return; /* skipped, saying why */
        assert_exit(p, 1);
        g_assert_cmpstr(p->err->str, ==, want);
}

static void test_not_running(void) {
        g_autofree char *want = g_strdup_printf(
                "watchctl: watchd is not running on the bus at %s: start it with `watchd --address %s`\n", env.address,
                env.address);
        const char *system_argv[] = { env.watchctl, "--system", "stats", NULL };
        const char *session_argv[] = { env.watchctl, "stats", "--session", NULL };
        g_autoptr(Proc) p = NULL, system = NULL, session = NULL;

        stop_watchd();
        p = WATCHCTL("stats");
        assert_exit(p, 1);
        g_assert_cmpstr(p->err->str, ==, want);

        /* The private bus standing in for the system and the session bus:
         * each message says how to start watchd there. */
        system = proc_start_full(FALSE, "DBUS_SYSTEM_BUS_ADDRESS", env.address, system_argv);
        assert_exit(system, 1);
        g_assert_cmpstr(system->err->str, ==,
                        "watchctl: watchd is not running on the system bus: start it with `systemctl start watchd`\n");
        session = proc_start_full(FALSE, "DBUS_SESSION_BUS_ADDRESS", env.address, session_argv);
        assert_exit(session, 1);
        g_assert_cmpstr(session->err->str, ==,
                        "watchctl: watchd is not running on the session bus: start it with `watchd --session`\n");
        start_watchd();
}

static void test_no_bus(void) {
        g_autofree char *nowhere = g_strdup_printf("unix:path=%s/no-bus-here", env.bus->dir);
        const char *argv[] = { env.watchctl, "stats", NULL };
        g_autoptr(Proc) p = proc_start_full(FALSE, "DBUS_SYSTEM_BUS_ADDRESS", nowhere, argv);

        assert_exit(p, 1);
        g_assert_true(g_str_has_prefix(p->err->str, "watchctl: cannot connect to the system bus (is dbus running?): "));
        g_assert_nonnull(strchr(p->err->str, '\n'));
        g_assert_cmpstr(strchr(p->err->str, '\n'), ==, "\n"); /* one line */
}

static void test_usage_errors(void) {
        static const char *const cases[][6] = {
                { "watch", "-e", "crate", "/", NULL },
                { "watch", "-e", "unmount", "/", NULL },
                { "watch", "--format", "%z", "/", NULL },
                { "watch", "--json", "--format", "%e", "/", NULL },
                { "watch", "--count", "0", "/", NULL },
                { "watch", "--timeout", "soon", "/", NULL },
                { "watch", NULL },
                { "frobnicate", NULL },
                { "stats", "--bogus", NULL },
                { "stats", "--session", NULL }, /* and --address */
                { "stats", "--address", "no-such-transport", NULL },
        };

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autoptr(Proc) p = watchctl_as(FALSE, cases[i]);

                g_test_message("watchctl %s %s ...", cases[i][0], cases[i][1] ? cases[i][1] : "");
                assert_exit(p, 2);
                /* one line saying what is wrong, one saying where to look */
                g_assert_true(g_str_has_prefix(p->err->str, "watchctl: "));
                g_assert_nonnull(strstr(p->err->str, "--help"));
                g_assert_cmpstr(p->out->str, ==, "");
        }
}

static void test_watch_removed(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *sub = g_build_filename(dir, "sub", NULL);
        g_autofree char *want = g_strdup_printf("watchctl: \"%s\" is no longer watched (deleted)\n"
                                                "watchctl: no watch left\n",
                                                sub);
        g_autoptr(Proc) p = NULL;

        g_assert_cmpint(mkdir(sub, 0755), ==, 0);
        p = WATCHCTL("watch", "-e", "create", sub);
        start_watch_established(p);
        g_assert_cmpint(rmdir(sub), ==, 0);
        assert_exit(p, 4);
        g_assert_true(g_str_has_suffix(p->err->str, want));
}

static void test_restart(void) {
        g_autofree char *dir = make_dir();
        g_autofree char *f = g_build_filename(dir, "after-restart", NULL);
        g_autofree char *missed = g_build_filename(dir, "missed", NULL);
        g_autofree char *want = g_strdup_printf("CREATE %s\n", f);
        g_autoptr(Proc) p = WATCHCTL("watch", "-e", "create", dir);
        g_autoptr(Proc) j = WATCHCTL("watch", "--json", "-e", "create", dir);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_auto(GStrv) lines = NULL;
        JsonObject *o;

        start_watch_established(p);
        start_watch_established(j);
        stop_watchd();
        wait_stderr(p, "watchctl: watchd left the bus at");
        wait_stderr(j, "watchctl: watchd left the bus at");
        write_file(missed, "made while watchd was away");
        start_watchd();
        wait_stderr(p, "watchctl: watchd restarted; events between ");
        wait_stderr(j, "watchctl: watchd restarted; events between ");
        g_assert_true(g_regex_match_simple("watchd restarted; events between [0-9:]{8} and [0-9:]{8} "
                                           "may have been missed\n",
                                           p->err->str, 0, 0));
        write_file(f, "");
        wait_stdout_lines(p, 1);
        wait_stdout_lines(j, 2);
        g_assert_cmpstr(p->out->str, ==, want);
        g_subprocess_send_signal(p->sp, SIGTERM);
        g_subprocess_send_signal(j->sp, SIGTERM);
        assert_exit(p, 0);
        assert_exit(j, 0);

        /* --json: a "restarted" object, then the event of the new daemon. */
        lines = g_strsplit(j->out->str, "\n", -1);
        g_assert_cmpuint(g_strv_length(lines), ==, 3);
        o = parse_line(parser, lines[0]);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "restarted");
        g_assert_true(g_str_has_prefix(json_object_get_string_member(o, "missed_from"), "20"));
        g_assert_true(g_str_has_prefix(json_object_get_string_member(o, "missed_until"), "20"));
        o = parse_line(parser, lines[1]);
        g_assert_cmpstr(json_object_get_string_member(o, "type"), ==, "event");
        g_assert_cmpstr(json_object_get_string_member(o, "path"), ==, f);
}

/* Whether GLib is asked to list the cases (-l): then no bus and no daemon. */
static gboolean listing(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                if (g_str_equal(argv[i], "-l"))
                        return TRUE;
        return FALSE;
}

int main(int argc, char **argv) {
        gboolean list = listing(argc, argv);
        int r;

        g_test_init(&argc, &argv, NULL);
        env.watchctl = g_getenv("WATCHCTL");
        if (!env.watchctl && !list) {
                g_printerr("WATCHCTL must name the watchctl binary under test\n");
                return 1;
        }

        WT_CASE_FUNC("/watchctl/watch/create-modify-delete", test_create_modify_delete);
        WT_CASE_FUNC("/watchctl/watch/rename-one-line", test_rename_one_line);
        WT_CASE_FUNC("/watchctl/watch/event-filter", test_event_filter);
        WT_CASE_FUNC("/watchctl/watch/format", test_format);
        WT_CASE_FUNC("/watchctl/watch/json", test_json);
        WT_CASE_FUNC("/watchctl/watch/timeout", test_timeout);
        WT_CASE_FUNC("/watchctl/watch/oneshot", test_oneshot);
        WT_CASE_FUNC("/watchctl/watch/persist", test_persist);
        WT_CASE_FUNC("/watchctl/watch/recursive", test_recursive);
        WT_CASE_FUNC("/watchctl/watch/overflow", test_overflow);
        WT_CASE_FUNC("/watchctl/watch/stdout-closed", test_stdout_closed);
        WT_CASE_FUNC("/watchctl/watch/no-stdout", test_no_stdout);
        WT_CASE_FUNC("/watchctl/watch/watch-removed", test_watch_removed);
        WT_CASE_FUNC("/watchctl/watch/non-utf8", test_non_utf8);
        WT_CASE_FUNC("/watchctl/list", test_list);
        WT_CASE_FUNC("/watchctl/stats", test_stats);
        WT_CASE_FUNC("/watchctl/clients", test_clients);
        WT_CASE_FUNC("/watchctl/durable", test_durable);
        WT_CASE_FUNC("/watchctl/durable-usage", test_durable_usage);
        WT_CASE_FUNC("/watchctl/durable-timeout", test_durable_timeout);
        WT_CASE_FUNC("/watchctl/stats-documented", test_stats_documented);
        WT_CASE_FUNC("/watchctl/errors/missing-path", test_missing_path);
        WT_CASE_FUNC("/watchctl/errors/permission-denied", test_permission_denied);
        WT_CASE_FUNC("/watchctl/errors/invalid-args", test_invalid_args);
        WT_CASE_FUNC("/watchctl/errors/not-running", test_not_running);
        WT_CASE_FUNC("/watchctl/errors/no-bus", test_no_bus);
        WT_CASE_FUNC("/watchctl/errors/usage", test_usage_errors);
        WT_CASE_FUNC("/watchctl/restart", test_restart);
        if (list)
                return g_test_run();

        /* One bus and one watchd for the process: meson runs one case a process (-p). */
        start_bus();
        start_watchd();
        r = g_test_run();

        if (env.daemon)
                stop_watchd();
        g_clear_object(&env.conn);
        wt_bus_stop(env.bus);
        return r;
}
