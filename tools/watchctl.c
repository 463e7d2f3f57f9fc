/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchctl - the command-line client of watchd
 *
 * What inotifywait is to inotify, watchctl is to watchd: "watch" subscribes
 * to paths and prints events as they arrive, one a line; "list" shows the
 * subscriptions as the daemon holds them; "stats" prints its counters;
 * "clients" the programs it serves.
 *
 * watchctl is libwatchd's first user: a WatchdClient on the bus, one
 * WatchdSubscription a PATH. The library delivers each subscription's events
 * (a rename as one event, paths as bytes), says when events were lost, and
 * follows the daemon: when org.example.Inotify vanishes and comes back it
 * adds every watch again, and watchctl says on stderr that events may have
 * been missed in between.
 *
 * Exit status (documented in watchctl(1)): 0 done (--count reached, stopped by
 * a signal, or the output closed), 1 error, 2 usage error, 3 --timeout reached
 * first, 4 the daemon removed every watch (deleted or unmounted).
 */

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>

#include "config.h"
#include "inotify_dev.h"
#include "event-format.h"
#include "path_escape.h"
#include <watchd.h>


enum {
        EXIT_OK = 0,
        EXIT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_TIMEOUT = 3,
        EXIT_NO_WATCHES = 4,
};

/* --timeout is kept in milliseconds in a guint. */
#define TIMEOUT_MAX_SECONDS 4000000.0

typedef struct Context Context;

typedef struct Watch {
        Context *c;
        char *path;    /* absolute, bytes */
        char *display; /* path as printed: escaped (event_path_display) */
        WatchdSubscription *sub;
} Watch;

struct Context {
        /* bus options */
        gboolean opt_system;
        gboolean opt_no_stream;
        gboolean opt_session;
        char *opt_address;

        /* watch and list options */
        gboolean opt_recursive;
        gboolean opt_onlydir;
        gboolean opt_dont_follow;
        gboolean opt_oneshot;
        gboolean opt_persist;
        gboolean opt_no_poll;
        gboolean opt_json;
        gboolean opt_quiet;
        char **opt_events;
        char *opt_format;
        char *opt_count;
        char *opt_timeout;
        char **opt_paths;
        char *opt_since;
        char *opt_journal;
        gboolean opt_until_caught_up;

        uint32_t mask;
        uint32_t flags;
        guint64 count;    /* 0: no limit */
        guint timeout_ms; /* 0: none */
        EventFormat *format;

        WatchdClient *client;
        GDateTime *gone_since; /* when the daemon left, NULL while it is here */
        GPtrArray *watches;    /* Watch*, in command-line order */
        GPtrArray *lost;       /* Watch* whose overflow is to be said in one line */
        guint lost_idle;

        guint64 printed;
        gboolean stopping;      /* quit() was called: print nothing more */
        gboolean output_failed; /* stdout could not be written */
        int exit_status;
        GMainLoop *loop;
};

static void watch_free(Watch *w) {
        if (w->sub) {
                g_signal_handlers_disconnect_by_data(w->sub, w);
                watchd_subscription_cancel(w->sub);
                g_object_unref(w->sub);
        }
        g_free(w->path);
        g_free(w->display);
        g_free(w);
}

static void context_done(Context *c) {
        if (c->lost_idle)
                g_source_remove(c->lost_idle);
        g_clear_pointer(&c->lost, g_ptr_array_unref);
        g_clear_pointer(&c->watches, g_ptr_array_unref);
        if (c->client) {
                g_signal_handlers_disconnect_by_data(c->client, c);
                watchd_client_close(c->client);
                g_clear_object(&c->client);
        }
        g_clear_pointer(&c->gone_since, g_date_time_unref);
        g_clear_pointer(&c->loop, g_main_loop_unref);
        g_clear_pointer(&c->format, event_format_free);
        g_free(c->opt_address);
        g_strfreev(c->opt_events);
        g_free(c->opt_format);
        g_free(c->opt_count);
        g_free(c->opt_timeout);
        g_strfreev(c->opt_paths);
        g_free(c->opt_since);
        g_free(c->opt_journal);
}

/* ------------------------------------------------------------------------ */
/* Messages */

static int usage_error(const char *command, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int usage_error(const char *command, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fputs("watchctl: ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'watchctl%s%s --help'.\n", command ? " " : "", command ? command : "");
        return EXIT_USAGE;
}

static void warn(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void warn(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fputs("watchctl: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static const char *bus_description(const Context *c) {
        if (c->opt_address)
                return "the bus at the given address";
        return c->opt_session ? "the session bus" : "the system bus";
}

/* How to start the daemon on the bus in use; why activation failed, if it did. */
static void warn_not_running(const Context *c, const char *why) {
        g_autofree char *failed = why ? g_strdup_printf(" (starting it failed: %s)", why) : g_strdup("");

        if (c->opt_address)
                warn("watchd is not running on the bus at %s%s: start it with `watchd --address %s`", c->opt_address,
                     failed, c->opt_address);
        else if (c->opt_session)
                warn("watchd is not running on the session bus%s: start it with `watchd --session`", failed);
        else
                warn("watchd is not running on the system bus%s: start it with `systemctl start watchd`", failed);
}

static gboolean error_means_not_running(const GError *error, const char *remote) {
        if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
            g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER))
                return TRUE;
        /* Bus activation that failed: no unit, no binary, the daemon exited. */
        return remote &&
                (g_str_has_prefix(remote, "org.freedesktop.DBus.Error.Spawn.") ||
                 g_str_has_prefix(remote, "org.freedesktop.systemd1."));
}

/* One line a person understands for a failed call about subject (a path, or
 * NULL); returns the exit status. */
static int report_call_error(const Context *c, const char *subject, const GError *error) {
        g_autofree char *remote = g_dbus_error_get_remote_error(error);
        g_autoptr(GError) stripped = g_error_copy(error);
        const char *message, *shortname, *prefix = subject ? subject : "watchd";

        g_dbus_error_strip_remote_error(stripped);
        message = stripped->message;
        shortname = remote ? (strrchr(remote, '.') ? strrchr(remote, '.') + 1 : remote) : NULL;

        if (error_means_not_running(error, remote))
                warn_not_running(c,
                                 g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
                                                 g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ?
                                         NULL :
                                         message);
        else if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY))
                warn("watchd stopped or did not answer (%s)", message);
        else if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
                warn("watchd did not answer in time: is it stuck? (%s)", message);
        else if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED))
                warn("lost the connection to %s", bus_description(c));
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0 &&
                 g_str_has_prefix(message, "Rejected send message"))
                /* The bus, not the daemon, refused: its policy file is missing. */
                warn("%s refused the call to watchd (AccessDenied): is watchd's D-Bus policy installed?",
                     bus_description(c));
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0)
                warn("%s: permission denied (AccessDenied)", prefix);
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.FileNotFound") == 0)
                warn("%s: no such file or directory (FileNotFound)", prefix);
        else if (g_strcmp0(remote, WATCHD_ERROR_NO_SUCH_WATCH) == 0)
                warn("%s: no such watch (NoSuchWatch)", prefix);
        else if (shortname) {
                /* InvalidArgs, LimitsExceeded: the daemon's message says what and why. */
                size_t n = strlen(message);

                warn("%s: %.*s (%s)", prefix, (int) (n > 0 && message[n - 1] == '.' ? n - 1 : n), message, shortname);
        } else
                warn("%s: %s", prefix, message);
        return EXIT_ERROR;
}

/* ------------------------------------------------------------------------ */
/* Output */

static void quit(Context *c, int status) {
        if (c->stopping)
                return; /* the first reason to stop is the one reported */
        c->stopping = TRUE;
        c->exit_status = status;
        if (c->loop)
                g_main_loop_quit(c->loop);
}

/* Flushes stdout; a reader that went away (head -n 1) ends the watch, any
 * other write error too, said once. */
static gboolean flush_output(Context *c) {
        int e;

        if (c->output_failed)
                return FALSE;
        errno = 0;
        if (fflush(stdout) == 0 && !ferror(stdout))
                return TRUE;
        e = errno;
        c->output_failed = TRUE;
        if (e == EPIPE)
                quit(c, EXIT_OK);
        else {
                warn("cannot write to standard output: %s", e ? g_strerror(e) : "write error");
                quit(c, EXIT_ERROR);
        }
        return FALSE;
}

static void print_json(JsonBuilder *b) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *text = NULL;

        json_generator_set_root(gen, root);
        text = json_generator_to_data(gen, NULL);
        puts(text);
}

static char *time_of_day(GDateTime *t) {
        return g_date_time_format(t, "%H:%M:%S");
}

/* ------------------------------------------------------------------------ */
/* The watches */

static void drop_watch(Context *c, Watch *w) {
        if (c->lost)
                g_ptr_array_remove(c->lost, w);
        g_ptr_array_remove(c->watches, w); /* frees w */
        if (c->watches->len == 0) {
                if (!c->opt_quiet)
                        warn("no watch left");
                quit(c, c->opt_oneshot ? EXIT_OK : EXIT_NO_WATCHES);
        }
}

/* ------------------------------------------------------------------------ */
/* What the library says */

static void on_events(WatchdSubscription *sub, GPtrArray *events, gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        if (c->stopping)
                return;
        for (guint i = 0; i < events->len; i++) {
                WatchdEvent *e = events->pdata[i];
                EventRecord r = {
                        .id = watchd_subscription_get_id(sub),
                        .mask = watchd_event_get_mask(e),
                        .cookie = watchd_event_get_cookie(e),
                        .path = watchd_event_get_path(e),
                        .new_path = watchd_event_get_new_path(e) ? watchd_event_get_new_path(e) : "",
                        .watch = w->path,
                };
                g_autofree char *line = c->opt_json ? event_format_json(&r) : event_format_record(c->format, &r);

                puts(line);
                c->printed++;
                if (c->count > 0 && c->printed >= c->count) {
                        quit(c, EXIT_OK);
                        break;
                }
        }
        flush_output(c);
}

/* The subscriptions that lost events in one go (one Overflow of watchd
 * names them all) are said in one line, once the library has emitted them. */
static gboolean say_lost(gpointer userdata) {
        Context *c = userdata;
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(GString) paths = g_string_new(NULL);

        c->lost_idle = 0;
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, "overflow");
        json_builder_set_member_name(b, "ids");
        json_builder_begin_array(b);
        for (guint i = 0; i < c->lost->len; i++) {
                Watch *w = c->lost->pdata[i];

                json_builder_add_int_value(b, watchd_subscription_get_id(w->sub));
                g_string_append_printf(paths, "%s\"%s\"", paths->len ? ", " : "", w->display);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
        g_ptr_array_set_size(c->lost, 0);
        if (paths->len == 0 || c->stopping)
                return G_SOURCE_REMOVE;
        warn("events were lost under %s (overflow): rescan if you keep state", paths->str);
        if (c->opt_json) {
                print_json(b);
                flush_output(c);
        }
        return G_SOURCE_REMOVE;
}

static void on_overflow(WatchdSubscription *sub, WatchdOverflowReason reason, gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        /* A restart is said once for all watches, by on_daemon_restarted(). */
        if (reason == WATCHD_OVERFLOW_RESTARTED)
                return;
        if (!g_ptr_array_find(c->lost, w, NULL))
                g_ptr_array_add(c->lost, w);
        if (!c->lost_idle)
                c->lost_idle = g_idle_add(say_lost, c);
}

static void on_removed(WatchdSubscription *sub, WatchdRemovedReason reason, const char *detail, const GError *error,
                       gpointer userdata) {
        Watch *w = userdata;
        Context *c = w->c;

        if (c->stopping)
                return;
        if (reason == WATCHD_REMOVED_ERROR) {
                /* The daemon that came back refused it. */
                report_call_error(c, w->display, error);
                warn("\"%s\" is no longer watched", w->display);
                drop_watch(c, w);
                return;
        }
        if (!c->opt_quiet || reason != WATCHD_REMOVED_ONESHOT)
                warn("\"%s\" is no longer watched (%s)", w->display, detail);
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "type");
                json_builder_add_string_value(b, "removed");
                json_builder_set_member_name(b, "id");
                json_builder_add_int_value(b, watchd_subscription_get_id(sub));
                event_json_add_path(b, "watch", w->path, path_needs_escape(w->path));
                json_builder_set_member_name(b, "reason");
                json_builder_add_string_value(b, detail);
                json_builder_set_member_name(b, "escaped");
                json_builder_add_boolean_value(b, path_needs_escape(w->path));
                json_builder_end_object(b);
                print_json(b);
                if (!flush_output(c))
                        return;
        }
        drop_watch(c, w);
}

/* ------------------------------------------------------------------------ */
/* Daemon restarts */

static void on_daemon_vanished(WatchdClient *client, gpointer userdata) {
        Context *c = userdata;
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *when = time_of_day(now);

        if (c->stopping)
                return;
        warn("watchd left the bus at %s; waiting for it to come back", when);
        /* If it left again while the watches were being added again, the
         * events have been unwatched since the first time. */
        if (!c->gone_since)
                c->gone_since = g_steal_pointer(&now);
}

static void on_daemon_restarted(WatchdClient *client, gpointer userdata) {
        Context *c = userdata;
        g_autoptr(GDateTime) now = g_date_time_new_now_local();
        g_autofree char *from = NULL, *until = time_of_day(now);

        if (c->stopping || !c->gone_since || c->watches->len == 0)
                return;
        from = time_of_day(c->gone_since);
        warn("watchd restarted; events between %s and %s may have been missed", from, until);
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();
                g_autofree char *from_iso = g_date_time_format_iso8601(c->gone_since);
                g_autofree char *until_iso = g_date_time_format_iso8601(now);

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "type");
                json_builder_add_string_value(b, "restarted");
                json_builder_set_member_name(b, "missed_from");
                json_builder_add_string_value(b, from_iso);
                json_builder_set_member_name(b, "missed_until");
                json_builder_add_string_value(b, until_iso);
                json_builder_end_object(b);
                print_json(b);
                flush_output(c);
        }
        g_clear_pointer(&c->gone_since, g_date_time_unref);
}

static void on_client_closed(WatchdClient *client, const GError *error, gpointer userdata) {
        Context *c = userdata;

        warn("lost the connection to %s%s%s", bus_description(c), error ? ": " : "", error ? error->message : "");
        quit(c, EXIT_ERROR);
}

static gboolean on_timeout(gpointer userdata) {
        Context *c = userdata;

        /* Without --count the goal was one event at least. */
        quit(c, c->printed > 0 && c->count == 0 ? EXIT_OK : EXIT_TIMEOUT);
        return G_SOURCE_REMOVE;
}

/* The reader of a pipe on stdout went away (head -n 1): stop now rather
 * than at the next event. Terminals and files never report this. */
static gboolean on_stdout_error(int fd, GIOCondition condition, gpointer userdata) {
        quit(userdata, EXIT_OK);
        return G_SOURCE_REMOVE;
}

static gboolean on_stop_signal(gpointer userdata) {
        quit(userdata, EXIT_OK);
        return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------------ */
/* Options */

static GOptionEntry bus_entries[] = {
        { "system", 0, 0, G_OPTION_ARG_NONE, NULL, "Talk to watchd on the system bus (the default)", NULL },
        { "session", 0, 0, G_OPTION_ARG_NONE, NULL, "Talk to watchd on the session bus", NULL },
        { "address", 0, 0, G_OPTION_ARG_STRING, NULL, "Talk to watchd on the bus at ADDR", "ADDR" },
        { "no-stream", 0, 0, G_OPTION_ARG_NONE, NULL, "Take the records as D-Bus signals, not from a record stream",
          NULL },
        { NULL }
};

/* The bus options are accepted before and after the command. */
static void add_bus_entries(GOptionContext *octx, Context *c) {
        GOptionEntry entries[G_N_ELEMENTS(bus_entries)];

        memcpy(entries, bus_entries, sizeof(entries));
        entries[0].arg_data = &c->opt_system;
        entries[1].arg_data = &c->opt_session;
        entries[2].arg_data = &c->opt_address;
        entries[3].arg_data = &c->opt_no_stream;
        g_option_context_add_main_entries(octx, entries, NULL);
}

/* Parses argv of one command; returns -1 to go on, else the exit status. */
static int parse_command(Context *c, const char *command, const char *params, const char *summary,
                         const GOptionEntry *entries, int *argc, char ***argv) {
        g_autoptr(GOptionContext) octx = g_option_context_new(params);
        g_autoptr(GError) error = NULL;
        g_autofree char *prgname = g_strdup_printf("watchctl %s", command);

        g_set_prgname(prgname);
        g_option_context_set_summary(octx, summary);
        if (entries)
                g_option_context_add_main_entries(octx, entries, NULL);
        add_bus_entries(octx, c);
        /* GLib overwrites a string option without freeing what another
         * context (the main one) stored there: the last --address wins. */
        g_autofree char *main_address = c->opt_address;
        gboolean parsed = g_option_context_parse(octx, argc, argv, &error);
        if (c->opt_address == main_address)
                main_address = NULL; /* not replaced: still c's */
        if (!parsed)
                return usage_error(command, "%s", error->message);
        if ((c->opt_system + c->opt_session + (c->opt_address != NULL)) > 1)
                return usage_error(command, "--system, --session and --address exclude each other");
        if (c->opt_address && !g_dbus_is_address(c->opt_address))
                return usage_error(command, "--address \"%s\" is not a D-Bus address (e.g. unix:path=/run/x)",
                                   c->opt_address);
        return -1;
}

/* The daemon wants absolute paths. A relative one is taken from the current
 * directory, its directory part resolved by realpath(3) so that "./x" and
 * "../x" read well in events; the last component is kept as given, so that
 * --no-dereference still sees (and refuses) a symbolic link. */
static char *absolute_path(const char *p) {
        g_autofree char *cwd = NULL, *joined = NULL, *dir = NULL, *base = NULL;
        char *real;

        if (g_path_is_absolute(p))
                return g_strdup(p);
        cwd = g_get_current_dir();
        joined = g_build_filename(cwd, p, NULL);
        base = g_path_get_basename(joined);
        if (g_str_equal(base, ".") || g_str_equal(base, "..")) {
                real = realpath(joined, NULL);
                return real ? real : g_steal_pointer(&joined);
        }
        dir = g_path_get_dirname(joined);
        real = realpath(dir, NULL);
        if (!real)
                return g_steal_pointer(&joined); /* the daemon will say why */
        g_free(g_steal_pointer(&joined));
        joined = g_build_filename(real, base, NULL);
        free(real);
        return g_steal_pointer(&joined);
}

static gboolean watch_path_equal(gconstpointer a, gconstpointer b) {
        return g_str_equal(((const Watch *) a)->path, ((const Watch *) b)->path);
}

/* The watch selection shared by "watch" and "list": mask, flags, paths. */
static int check_selection(Context *c, const char *command, gboolean need_paths) {
        g_autoptr(GError) error = NULL;

        c->mask = 0;
        for (char **e = c->opt_events; e && *e; e++)
                if (!event_mask_parse(*e, &c->mask, &error))
                        return usage_error(command, "-e: %s", error->message);
        if (!c->opt_events)
                c->mask = INOTIFY_DEV_ALL_EVENTS;
        else if (c->mask == 0)
                return usage_error(command, "-e: no event to watch (unmount is always reported: name another event)");

        c->flags = (c->opt_recursive ? WATCHD_FLAG_RECURSIVE : 0) | (c->opt_onlydir ? WATCHD_FLAG_ONLYDIR : 0) |
                (c->opt_dont_follow ? WATCHD_FLAG_DONT_FOLLOW : 0) | (c->opt_oneshot ? WATCHD_FLAG_ONESHOT : 0) |
                (c->opt_persist ? WATCHD_FLAG_PERSIST : 0) | (c->opt_no_poll ? WATCHD_FLAG_NO_POLL : 0);

        if (need_paths && (!c->opt_paths || !c->opt_paths[0]))
                return usage_error(command, "no PATH to watch");

        c->watches = g_ptr_array_new_with_free_func((GDestroyNotify) watch_free);
        c->lost = g_ptr_array_new();
        for (char **p = c->opt_paths; p && *p; p++) {
                Watch *w;

                if (!**p)
                        return usage_error(command, "empty PATH");
                w = g_new0(Watch, 1);
                w->path = absolute_path(*p);
                w->display = event_path_display(w->path);
                /* The same path twice would print each event twice. */
                if (g_ptr_array_find_with_equal_func(c->watches, w, watch_path_equal, NULL)) {
                        watch_free(w);
                        continue;
                }
                g_ptr_array_add(c->watches, w);
        }
        return -1;
}

static int connect_bus(Context *c) {
        g_autoptr(GError) error = NULL;

        if (c->opt_address)
                c->client = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "address", c->opt_address, "use-stream",
                                           !c->opt_no_stream, NULL);
        else
                c->client = g_initable_new(WATCHD_TYPE_CLIENT, NULL, &error, "bus-type",
                                           c->opt_session ? G_BUS_TYPE_SESSION : G_BUS_TYPE_SYSTEM, "use-stream",
                                           !c->opt_no_stream, NULL);
        if (!c->client) {
                if (c->opt_address)
                        warn("cannot connect to the bus at %s: %s", c->opt_address, error->message);
                else
                        warn("cannot connect to %s (is dbus running?): %s", bus_description(c), error->message);
                return EXIT_ERROR;
        }
        return -1;
}

/* Adds every watch of the selection; returns -1 on success, else the status. */
static int add_all_watches(Context *c) {
        for (guint i = 0; i < c->watches->len; i++) {
                Watch *w = c->watches->pdata[i];
                g_autoptr(GError) error = NULL;

                w->c = c;
                w->sub = watchd_subscription_new(c->client, w->path, c->mask, c->flags);
                g_signal_connect(w->sub, "events", G_CALLBACK(on_events), w);
                g_signal_connect(w->sub, "overflow", G_CALLBACK(on_overflow), w);
                g_signal_connect(w->sub, "removed", G_CALLBACK(on_removed), w);
                if (!watchd_subscription_start_sync(w->sub, NULL, &error))
                        return report_call_error(c, w->display, error);
        }
        return -1;
}

/* ------------------------------------------------------------------------ */
/* Commands */

static int cmd_watch(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive,
                  "Watch whole trees, following new directories", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "Watch only these events (comma-separated; repeatable)", "EVENTS" },
                { "format", 0, 0, G_OPTION_ARG_STRING, &c->opt_format,
                  "Print each event by FMT: %w %f %e %Xe %c %p %n %i %%", "FMT" },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object an event", NULL },
                { "count", 'c', 0, G_OPTION_ARG_STRING, &c->opt_count, "Exit after N events", "N" },
                { "timeout", 't', 0, G_OPTION_ARG_STRING, &c->opt_timeout,
                  "Exit after SECONDS (status 3 if --count was not reached)", "SECONDS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "Refuse a PATH that is not a directory", NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "Refuse a PATH that is a symbolic link instead of following it", NULL },
                { "oneshot", 0, 0, G_OPTION_ARG_NONE, &c->opt_oneshot, "End each watch after its first event", NULL },
                { "persist", 0, 0, G_OPTION_ARG_NONE, &c->opt_persist,
                  "Follow each PATH, not the object: watch what appears there again", NULL },
                { "no-poll", 0, 0, G_OPTION_ARG_NONE, &c->opt_no_poll,
                  "Do not poll directories on remote file systems (NFS, SMB, FUSE...)", NULL },
                { "quiet", 'q', 0, G_OPTION_ARG_NONE, &c->opt_quiet,
                  "Do not say on stderr when watches are established", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "PATH..." },
                { NULL }
        };
        g_autoptr(GError) error = NULL;
        int r;

        r = parse_command(c, "watch", NULL,
                          "Print the events under each PATH as they arrive, one a line.\n"
                          "Events: access, modify, attrib, close_write, close_nowrite, close, open,\n"
                          "moved_from, moved_to, move (or moved), create, delete, delete_self, unmount, all.\n"
                          "Exit status: 0 done, 1 error, 2 usage, 3 timeout, 4 no watch left.",
                          entries, &argc, &argv);
        if (r >= 0)
                return r;
        r = check_selection(c, "watch", TRUE);
        if (r >= 0)
                return r;
        if (c->opt_json && c->opt_format)
                return usage_error("watch", "--format and --json exclude each other");
        c->format = event_format_new(c->opt_format, &error);
        if (!c->format)
                return usage_error("watch", "--format: %s", error->message);
        if (c->opt_count && !g_ascii_string_to_unsigned(c->opt_count, 10, 1, G_MAXUINT64, &c->count, &error))
                return usage_error("watch", "--count: %s", error->message);
        if (c->opt_timeout) {
                char *end = NULL;
                double s = g_ascii_strtod(c->opt_timeout, &end);

                if (end == c->opt_timeout || *end || !(s > 0) || s > TIMEOUT_MAX_SECONDS)
                        return usage_error("watch", "--timeout: \"%s\" is not a number of seconds in (0, %.0f]",
                                           c->opt_timeout, TIMEOUT_MAX_SECONDS);
                c->timeout_ms = MAX(1, (guint) (s * 1000.0));
        }

        r = connect_bus(c);
        if (r >= 0)
                return r;
        g_signal_connect(c->client, "closed", G_CALLBACK(on_client_closed), c);
        g_signal_connect(c->client, "daemon-vanished", G_CALLBACK(on_daemon_vanished), c);
        g_signal_connect(c->client, "daemon-restarted", G_CALLBACK(on_daemon_restarted), c);
        /* The handlers are connected before each watch starts: no event is
         * missed, and none is emitted before the main loop runs. */
        r = add_all_watches(c);
        if (r >= 0)
                return r;

        c->loop = g_main_loop_new(NULL, FALSE);
        g_unix_signal_add(SIGINT, on_stop_signal, c);
        g_unix_signal_add(SIGTERM, on_stop_signal, c);
        g_unix_fd_add(STDOUT_FILENO, G_IO_ERR, on_stdout_error, c);
        if (c->timeout_ms)
                g_timeout_add(c->timeout_ms, on_timeout, c);
        if (!c->opt_quiet)
                warn("watches established");

        c->exit_status = EXIT_OK;
        g_main_loop_run(c->loop);
        flush_output(c);
        return c->exit_status;
}

static int compare_watch_ids(gconstpointer a, gconstpointer b) {
        guint32 x, y;

        g_variant_get_child(*(GVariant *const *) a, 0, "u", &x);
        g_variant_get_child(*(GVariant *const *) b, 0, "u", &y);
        return x < y ? -1 : x > y;
}

static int cmd_list(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive, "Add the watches recursive", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "Events to ask for (comma-separated; repeatable)", "EVENTS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "Refuse a PATH that is not a directory", NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "Refuse a PATH that is a symbolic link", NULL },
                { "oneshot", 0, 0, G_OPTION_ARG_NONE, &c->opt_oneshot, "Add the watches oneshot", NULL },
                { "persist", 0, 0, G_OPTION_ARG_NONE, &c->opt_persist, "Add the watches following their paths", NULL },
                { "no-poll", 0, 0, G_OPTION_ARG_NONE, &c->opt_no_poll, "Add the watches without polling", NULL },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a subscription", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "PATH..." },
                { NULL }
        };
        g_autoptr(GVariant) list = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_variant_unref);
        GVariant *entry;
        GVariantIter it;
        guint32 id, mask, flags;
        int r;

        r = parse_command(c, "list", NULL,
                          "Add a watch on each PATH as \"watch\" would, then print the subscriptions\n"
                          "of this connection as watchd holds them: id, events, flags, path.\n"
                          "Subscriptions belong to a connection, so those of other watchctl\n"
                          "processes are not shown (see \"stats\" for the totals).",
                          entries, &argc, &argv);
        if (r >= 0)
                return r;
        r = check_selection(c, "list", FALSE);
        if (r >= 0)
                return r;
        if (c->watches->len == 0)
                /* Still asked, so that "list" checks that watchd answers. */
                warn("no PATH: subscriptions belong to the connection that made them, so this "
                     "list is empty; 'watchctl stats' counts those of all clients");
        r = connect_bus(c);
        if (r >= 0)
                return r;
        r = add_all_watches(c);
        if (r >= 0)
                return r;
        list = watchd_client_list_watches_sync(c->client, NULL, &error);
        if (!list)
                return report_call_error(c, NULL, error);

        /* In id order, which is the order they were made in. */
        g_variant_iter_init(&it, list);
        while ((entry = g_variant_iter_next_value(&it)))
                g_ptr_array_add(rows, entry);
        g_ptr_array_sort(rows, compare_watch_ids);
        for (guint i = 0; i < rows->len; i++) {
                g_autofree char *events = NULL, *flagnames = NULL;
                g_autoptr(GVariant) path = NULL;
                const char *bytes;

                /* The path as bytes; the library has unescaped it. */
                g_variant_get(rows->pdata[i], "(u@ayuu)", &id, &path, &mask, &flags);
                bytes = g_variant_get_bytestring(path);
                events = event_mask_to_string(mask, ',');
                flagnames = event_flags_to_string(flags);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "id");
                        json_builder_add_int_value(b, id);
                        event_json_add_path(b, "path", bytes, path_needs_escape(bytes));
                        event_json_add_mask(b, mask);
                        json_builder_set_member_name(b, "flags");
                        json_builder_add_int_value(b, flags);
                        json_builder_set_member_name(b, "escaped");
                        json_builder_add_boolean_value(b, path_needs_escape(bytes));
                        /* What follows the tree of a RECURSIVE subscription. */
                        if (flags & WATCHD_FLAG_RECURSIVE) {
                                json_builder_set_member_name(b, "tree");
                                json_builder_add_string_value(b, flags & WATCHD_FLAG_FANOTIFY ? "fanotify" : "inotify");
                        }
                        json_builder_end_object(b);
                        print_json(b);
                } else {
                        g_autofree char *display = event_path_display(bytes);

                        printf("%" G_GUINT32_FORMAT " %s %s %s\n", id, events, flagnames, display);
                }
        }
        return flush_output(c) ? EXIT_OK : c->exit_status;
}

/* A stats value as text: strings bare, the rest in GVariant text form. */
static char *variant_to_text(GVariant *v) {
        if (g_variant_is_of_type(v, G_VARIANT_TYPE_STRING))
                return g_variant_dup_string(v, NULL);
        return g_variant_print(v, FALSE);
}

static int compare_strings(gconstpointer a, gconstpointer b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int cmd_stats(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = { { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print one JSON object", NULL },
                                         { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL,
                                           NULL },
                                         { NULL } };
        g_autoptr(GVariant) stats = NULL, version = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) keys = g_ptr_array_new();
        GVariantIter it;
        const char *key;
        GVariant *value;
        int r;

        r = parse_command(c, "stats", NULL,
                          "Print watchd's version and counters: clients, subscriptions,\n"
                          "kernel watches, events read and delivered, overflows, backend.",
                          entries, &argc, &argv);
        if (r >= 0)
                return r;
        if (c->opt_paths && c->opt_paths[0])
                return usage_error("stats", "unexpected argument \"%s\"", c->opt_paths[0]);
        r = connect_bus(c);
        if (r >= 0)
                return r;
        stats = watchd_client_get_stats_sync(c->client, NULL, &error);
        if (!stats)
                return report_call_error(c, NULL, error);
        version = watchd_client_get_daemon_property_sync(c->client, "Version", NULL, &error);
        if (!version)
                return report_call_error(c, NULL, error);

        g_variant_iter_init(&it, stats);
        while (g_variant_iter_next(&it, "{&sv}", &key, NULL))
                g_ptr_array_add(keys, (gpointer) key);
        g_ptr_array_sort(keys, compare_strings);

        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();
                g_autoptr(GVariant) v = g_variant_ref(version);

                json_builder_begin_object(b);
                json_builder_set_member_name(b, "version");
                json_builder_add_value(b, json_gvariant_serialize(v));
                for (guint i = 0; i < keys->len; i++) {
                        g_autoptr(GVariant) sv = g_variant_lookup_value(stats, keys->pdata[i], NULL);

                        json_builder_set_member_name(b, keys->pdata[i]);
                        json_builder_add_value(b, json_gvariant_serialize(sv));
                }
                json_builder_end_object(b);
                print_json(b);
        } else {
                g_autofree char *text = variant_to_text(version);

                printf("%-24s %s\n", "version", text);
                for (guint i = 0; i < keys->len; i++) {
                        g_autofree char *vt = NULL;

                        value = g_variant_lookup_value(stats, keys->pdata[i], NULL);
                        vt = variant_to_text(value);
                        g_variant_unref(value);
                        printf("%-24s %s\n", (const char *) keys->pdata[i], vt);
                }
        }
        return flush_output(c) ? EXIT_OK : c->exit_status;
}

/* ------------------------------------------------------------------------ */
/* The clients watchd serves (ListClients) */

typedef struct ClientRow {
        char *name;
        guint32 pid, uid, subscriptions, watches;
        char *command; /* /proc/PID/cmdline, arguments joined by spaces (bytes); NULL if unreadable */
} ClientRow;

static void client_row_free(ClientRow *row) {
        g_free(row->name);
        g_free(row->command);
        g_free(row);
}

static int compare_client_rows(gconstpointer a, gconstpointer b) {
        const ClientRow *x = *(ClientRow *const *) a, *y = *(ClientRow *const *) b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* The command line of pid as far as this process may read it (watchd does
 * not send it: its unit hides other users' processes from it), NULL if it
 * cannot. A pid may have been reused since the client connected. */
static char *command_of(guint32 pid) {
        g_autofree char *path = g_strdup_printf("/proc/%" G_GUINT32_FORMAT "/cmdline", pid);
        g_autofree char *raw = NULL;
        gsize len;

        if (pid == 0 || !g_file_get_contents(path, &raw, &len, NULL) || len == 0)
                return NULL;
        while (len > 0 && raw[len - 1] == '\0')
                len--;
        for (gsize i = 0; i < len; i++)
                if (raw[i] == '\0')
                        raw[i] = ' ';
        return g_strndup(raw, len);
}

static int cmd_clients(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a client", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, NULL },
                { NULL }
        };
        g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify) client_row_free);
        g_autoptr(GVariant) reply = NULL, list = NULL;
        g_autoptr(GError) error = NULL;
        GVariantIter it;
        const char *name;
        guint32 pid, uid, subs, watches;
        int r;

        r = parse_command(c, "clients", NULL,
                          "Print the programs watchd serves: pid, uid, subscriptions, kernel\n"
                          "watches, bus name and command. Root sees every client, another user\n"
                          "only their own.",
                          entries, &argc, &argv);
        if (r >= 0)
                return r;
        if (c->opt_paths && c->opt_paths[0])
                return usage_error("clients", "unexpected argument \"%s\"", c->opt_paths[0]);
        r = connect_bus(c);
        if (r >= 0)
                return r;
        reply = g_dbus_connection_call_sync(watchd_client_get_connection(c->client), WATCHD_BUS_NAME,
                                            WATCHD_OBJECT_PATH, WATCHD_INTERFACE, "ListClients", NULL,
                                            G_VARIANT_TYPE("(a(suuuu))"), G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
        if (!reply) {
                if (g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD)) {
                        warn("this watchd does not know ListClients (it is older than watchctl)");
                        return EXIT_ERROR;
                }
                return report_call_error(c, NULL, error);
        }
        list = g_variant_get_child_value(reply, 0);
        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&suuuu)", &name, &pid, &uid, &subs, &watches)) {
                ClientRow *row = g_new0(ClientRow, 1);

                *row = (ClientRow) {
                        .name = g_strdup(name),
                        .pid = pid,
                        .uid = uid,
                        .subscriptions = subs,
                        .watches = watches,
                        .command = command_of(pid),
                };
                g_ptr_array_add(rows, row);
        }
        g_ptr_array_sort(rows, compare_client_rows);

        if (!c->opt_json)
                printf("%7s %6s %13s %7s %-9s %s\n", "PID", "UID", "SUBSCRIPTIONS", "WATCHES", "NAME", "COMMAND");
        for (guint i = 0; i < rows->len; i++) {
                const ClientRow *row = rows->pdata[i];

                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, row->name);
                        json_builder_set_member_name(b, "pid");
                        json_builder_add_int_value(b, row->pid);
                        json_builder_set_member_name(b, "uid");
                        json_builder_add_int_value(b, row->uid);
                        json_builder_set_member_name(b, "subscriptions");
                        json_builder_add_int_value(b, row->subscriptions);
                        json_builder_set_member_name(b, "watches");
                        json_builder_add_int_value(b, row->watches);
                        if (row->command) {
                                event_json_add_path(b, "command", row->command, path_needs_escape(row->command));
                                json_builder_set_member_name(b, "escaped");
                                json_builder_add_boolean_value(b, path_needs_escape(row->command));
                        } else {
                                json_builder_set_member_name(b, "command");
                                json_builder_add_null_value(b);
                        }
                        json_builder_end_object(b);
                        print_json(b);
                } else {
                        g_autofree char *display = row->command ? event_path_display(row->command) : NULL;

                        printf("%7" G_GUINT32_FORMAT " %6" G_GUINT32_FORMAT " %13" G_GUINT32_FORMAT
                               " %7" G_GUINT32_FORMAT " %-9s %s\n",
                               row->pid, row->uid, row->subscriptions, row->watches, row->name, display ? display : "-");
                }
        }
        return flush_output(c) ? EXIT_OK : c->exit_status;
}

/* ------------------------------------------------------------------------ */
/* Durable subscriptions (watchd(8), DURABLE SUBSCRIPTIONS) */

typedef struct Resume {
        Context *c;
        WatchdDurable *d;
        gboolean caught_up;
        GHashTable *masks; /* mask -> its names, as printed ("CREATE,ISDIR") */
        GString *out;      /* the text lines of a batch */
} Resume;

static void json_begin(JsonBuilder *b, const char *type, guint64 id) {
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, type);
        json_builder_set_member_name(b, "id");
        json_builder_add_int_value(b, (gint64) id);
}

/* Appends a path as the text lines show it to out: as it is when it is
 * printable ASCII with no backslash (most paths, with no copy of their
 * own), else in the escaped form. */
static void append_display_path(GString *out, const char *path) {
        const unsigned char *p = (const unsigned char *) path;

        while (*p >= 0x20 && *p < 0x7f && *p != '\\')
                p++;
        if (*p == '\0')
                g_string_append_len(out, path, (gssize) ((const char *) p - path));
        else {
                g_autofree char *e = event_path_display(path);

                g_string_append(out, e);
        }
}

/* One record: "ID EVENTS PATH", "ID EVENTS OLD -> NEW"; or a JSON object. A
 * replay prints a million of these: a line is built in out (the events'
 * names made once a mask) and the batch written at once. */
static void print_durable_event(Resume *res, WatchdEvent *e, GString *out) {
        Context *c = res->c;
        guint64 id = watchd_event_get_id(e);
        guint mask = watchd_event_get_mask(e);
        const char *path = watchd_event_get_path(e), *new_path = watchd_event_get_new_path(e);
        const char *events;
        char num[24], *n = num + sizeof num;

        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "event", id);
                event_json_add_path(b, "path", path, path_needs_escape(path));
                if (new_path)
                        event_json_add_path(b, "new_path", new_path, path_needs_escape(new_path));
                event_json_add_mask(b, mask);
                json_builder_set_member_name(b, "cookie");
                json_builder_add_int_value(b, watchd_event_get_cookie(e));
                json_builder_set_member_name(b, "escaped");
                json_builder_add_boolean_value(b, path_needs_escape(path) || (new_path && path_needs_escape(new_path)));
                json_builder_end_object(b);
                print_json(b);
                return;
        }
        events = g_hash_table_lookup(res->masks, GUINT_TO_POINTER(mask));
        if (!events) {
                char *names = event_mask_to_string(mask, ',');

                g_hash_table_insert(res->masks, GUINT_TO_POINTER(mask), names);
                events = names;
        }
        do
                *--n = (char) ('0' + id % 10);
        while ((id /= 10) > 0);
        g_string_append_len(out, n, num + sizeof num - n);
        g_string_append_c(out, ' ');
        g_string_append(out, events);
        g_string_append_c(out, ' ');
        append_display_path(out, path);
        if (new_path) {
                g_string_append_len(out, " -> ", 4);
                append_display_path(out, new_path);
        }
        g_string_append_c(out, '\n');
}

/* A batch of records, in the journal's order. */
static void on_durable_events(WatchdDurable *d, GPtrArray *events, gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        g_string_truncate(res->out, 0);
        for (guint i = 0; i < events->len && !c->stopping; i++) {
                print_durable_event(res, events->pdata[i], res->out);
                c->printed++;
                if (c->count && c->printed >= c->count)
                        quit(c, EXIT_OK);
        }
        fwrite(res->out->str, 1, res->out->len, stdout);
        flush_output(c);
}

/* "ID rescan REASON DIR..." (a tree: DIR followed by slash and two stars; "whole" for everything), or a JSON object. */
static void on_durable_rescan(WatchdDurable *d, guint64 id, const char *reason, GVariant *dirs, gpointer userdata) {
        Context *c = ((Resume *) userdata)->c;
        GVariantIter it;
        GVariant *path;
        guint32 flags;

        if (c->stopping)
                return;
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "rescan", id);
                json_builder_set_member_name(b, "reason");
                json_builder_add_string_value(b, reason);
                json_builder_set_member_name(b, "whole");
                json_builder_add_boolean_value(b, g_variant_n_children(dirs) == 0);
                json_builder_set_member_name(b, "directories");
                json_builder_begin_array(b);
                g_variant_iter_init(&it, dirs);
                while (g_variant_iter_next(&it, "(@ayu)", &path, &flags)) {
                        const char *bytes = g_variant_get_bytestring(path);

                        json_builder_begin_object(b);
                        event_json_add_path(b, "path", bytes, path_needs_escape(bytes));
                        json_builder_set_member_name(b, "recursive");
                        json_builder_add_boolean_value(b, flags & WATCHD_RESCAN_RECURSIVE);
                        json_builder_end_object(b);
                        g_variant_unref(path);
                }
                json_builder_end_array(b);
                json_builder_end_object(b);
                print_json(b);
        } else {
                printf("%" G_GUINT64_FORMAT " rescan %s", id, reason);
                if (g_variant_n_children(dirs) == 0)
                        printf(" whole");
                g_variant_iter_init(&it, dirs);
                while (g_variant_iter_next(&it, "(@ayu)", &path, &flags)) {
                        g_autofree char *p = event_path_display(g_variant_get_bytestring(path));

                        printf(" %s%s", p, flags & WATCHD_RESCAN_RECURSIVE ? "/**" : "");
                        g_variant_unref(path);
                }
                printf("\n");
        }
}

static void on_durable_caught_up(WatchdDurable *d, guint64 id, gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        res->caught_up = TRUE;
        if (c->stopping)
                return;
        if (c->opt_json) {
                g_autoptr(JsonBuilder) b = json_builder_new();

                json_begin(b, "caught-up", id);
                json_builder_end_object(b);
                print_json(b);
        } else
                printf("%" G_GUINT64_FORMAT " caught-up\n", id);
        flush_output(c);
        if (c->opt_until_caught_up)
                quit(c, EXIT_OK);
}

/* --timeout: status 3 unless it was caught up (or printed its --count): a
 * script tells "caught up" from "gave up" by the status alone. */
static gboolean on_resume_timeout(gpointer userdata) {
        Resume *res = userdata;
        Context *c = res->c;

        quit(c, (c->count ? c->printed >= c->count : res->caught_up) ? EXIT_OK : EXIT_TIMEOUT);
        return G_SOURCE_REMOVE;
}

static void on_durable_stopped(WatchdDurable *d, const char *reason, gpointer userdata) {
        Context *c = ((Resume *) userdata)->c;

        if (c->stopping)
                return;
        warn("durable subscription %s stopped: %s", watchd_durable_get_name(d), reason);
        quit(c, strcmp(reason, WATCHD_DURABLE_STOPPED_REMOVED) == 0 ? EXIT_NO_WATCHES : EXIT_ERROR);
}

static void print_durable_list(Context *c, GVariant *list) {
        GVariantIter it;
        GVariant *path;
        const char *name, *journal, *state;
        guint32 mask, flags;
        guint64 oldest, last, bytes;
        gboolean attached;

        g_variant_iter_init(&it, list);
        while (g_variant_iter_next(&it, "(&s@ayuu&stttb&s)", &name, &path, &mask, &flags, &journal, &oldest, &last,
                                   &bytes, &attached, &state)) {
                const char *p = g_variant_get_bytestring(path);

                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        event_json_add_path(b, "path", p, path_needs_escape(p));
                        event_json_add_mask(b, mask);
                        json_builder_set_member_name(b, "flags");
                        json_builder_add_int_value(b, flags);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, journal);
                        json_builder_set_member_name(b, "oldest_cursor");
                        json_builder_add_int_value(b, (gint64) oldest);
                        json_builder_set_member_name(b, "last_id");
                        json_builder_add_int_value(b, (gint64) last);
                        json_builder_set_member_name(b, "bytes");
                        json_builder_add_int_value(b, (gint64) bytes);
                        json_builder_set_member_name(b, "attached");
                        json_builder_add_boolean_value(b, attached);
                        json_builder_set_member_name(b, "state");
                        json_builder_add_string_value(b, state);
                        json_builder_end_object(b);
                        print_json(b);
                } else {
                        g_autofree char *events = event_mask_to_string(mask, ',');
                        g_autofree char *flagnames = event_flags_to_string(flags);
                        g_autofree char *display = event_path_display(p);

                        printf("%s %s %s %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %s %s %s %s\n",
                               name, state, journal, oldest, last, bytes, attached ? "attached" : "-", events,
                               flagnames, display);
                }
                g_variant_unref(path);
        }
}

static int cmd_durable(Context *c, int argc, char **argv) {
        const GOptionEntry entries[] = {
                { "recursive", 'r', 0, G_OPTION_ARG_NONE, &c->opt_recursive,
                  "create: watch the whole tree, following new directories", NULL },
                { "event", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &c->opt_events,
                  "create: only these events (comma-separated; repeatable)", "EVENTS" },
                { "onlydir", 0, 0, G_OPTION_ARG_NONE, &c->opt_onlydir, "create: refuse a PATH that is not a directory",
                  NULL },
                { "no-dereference", 'P', 0, G_OPTION_ARG_NONE, &c->opt_dont_follow,
                  "create: refuse a PATH that is a symbolic link", NULL },
                { "since", 's', 0, G_OPTION_ARG_STRING, &c->opt_since,
                  "resume: after this id (the last one processed; default 0)", "ID" },
                { "journal", 'j', 0, G_OPTION_ARG_STRING, &c->opt_journal, "resume: the journal the id came from",
                  "JOURNAL" },
                { "until-caught-up", 'u', 0, G_OPTION_ARG_NONE, &c->opt_until_caught_up, "resume: exit once caught up",
                  NULL },
                { "count", 'c', 0, G_OPTION_ARG_STRING, &c->opt_count, "resume: exit after N events", "N" },
                { "timeout", 't', 0, G_OPTION_ARG_STRING, &c->opt_timeout, "resume: exit after SECONDS (status 3)",
                  "SECONDS" },
                { "json", 0, 0, G_OPTION_ARG_NONE, &c->opt_json, "Print JSON Lines, one object a line", NULL },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &c->opt_paths, NULL, "ACTION [NAME [PATH]]" },
                { NULL }
        };
        g_autoptr(GError) error = NULL;
        const char *action, *name;
        guint n = 0;
        int r;

        r = parse_command(c, "durable", NULL,
                          "Durable subscriptions: kept by watchd across disconnects and restarts,\n"
                          "their records in a journal, resumed where the client stopped.\n"
                          "  create NAME PATH   make one (-r, -e, --onlydir, -P); prints NAME JOURNAL CURSOR\n"
                          "  list               show yours: name, state, journal, oldest cursor, last id,\n"
                          "                     bytes, attached, events, flags, path\n"
                          "  resume NAME        print what followed --since, \"caught-up\", then live events\n"
                          "  remove NAME        remove one, journal and all\n"
                          "Exit status: 0 done, 1 error, 2 usage, 3 --timeout before caught up (or --count),\n"
                          "4 removed meanwhile.",
                          entries, &argc, &argv);
        if (r >= 0)
                return r;
        while (c->opt_paths && c->opt_paths[n])
                n++;
        if (n == 0)
                return usage_error("durable", "no action (create, list, resume or remove)");
        action = c->opt_paths[0];
        name = n > 1 ? c->opt_paths[1] : NULL;
        if (g_str_equal(action, "create")                                            ? n != 3 :
                    g_str_equal(action, "list")                                      ? n != 1 :
                    (g_str_equal(action, "resume") || g_str_equal(action, "remove")) ? n != 2 :
                                                                                       TRUE) {
                if (!g_str_equal(action, "create") && !g_str_equal(action, "list") && !g_str_equal(action, "resume") &&
                    !g_str_equal(action, "remove"))
                        return usage_error("durable", "unknown action \"%s\" (create, list, resume or remove)", action);
                return usage_error("durable", "%s takes %s", action,
                                   g_str_equal(action, "create")       ? "NAME PATH" :
                                           g_str_equal(action, "list") ? "nothing" :
                                                                         "NAME");
        }
        if (c->opt_count && !g_ascii_string_to_unsigned(c->opt_count, 10, 1, G_MAXUINT64, &c->count, &error))
                return usage_error("durable", "--count: %s", error->message);
        if (c->opt_timeout) {
                char *end = NULL;
                double s = g_ascii_strtod(c->opt_timeout, &end);

                if (end == c->opt_timeout || *end || !(s > 0) || s > TIMEOUT_MAX_SECONDS)
                        return usage_error("durable", "--timeout: \"%s\" is not a number of seconds in (0, %.0f]",
                                           c->opt_timeout, TIMEOUT_MAX_SECONDS);
                c->timeout_ms = MAX(1, (guint) (s * 1000.0));
        }

        if (g_str_equal(action, "create")) {
                g_autofree char *path = absolute_path(c->opt_paths[2]), *journal = NULL;
                guint64 cursor = 0;

                c->mask = 0;
                for (char **e = c->opt_events; e && *e; e++) {
                        uint32_t m = 0;

                        if (!event_mask_parse(*e, &m, &error))
                                return usage_error("durable", "-e: %s", error->message);
                        c->mask |= m;
                }
                if (!c->opt_events)
                        c->mask = INOTIFY_DEV_ALL_EVENTS;
                c->flags = (c->opt_recursive ? WATCHD_FLAG_RECURSIVE : 0) | (c->opt_onlydir ? WATCHD_FLAG_ONLYDIR : 0) |
                        (c->opt_dont_follow ? WATCHD_FLAG_DONT_FOLLOW : 0);
                r = connect_bus(c);
                if (r >= 0)
                        return r;
                if (!watchd_client_create_durable_sync(c->client, name, path, c->mask, c->flags, &journal, &cursor,
                                                       NULL, &error))
                        return report_call_error(c, name, error);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, journal);
                        json_builder_set_member_name(b, "cursor");
                        json_builder_add_int_value(b, (gint64) cursor);
                        json_builder_end_object(b);
                        print_json(b);
                } else
                        printf("%s %s %" G_GUINT64_FORMAT "\n", name, journal, cursor);
                return flush_output(c) ? EXIT_OK : c->exit_status;
        }

        r = connect_bus(c);
        if (r >= 0)
                return r;
        if (g_str_equal(action, "list")) {
                g_autoptr(GVariant) list = watchd_client_list_durable_sync(c->client, NULL, &error);

                if (!list)
                        return report_call_error(c, NULL, error);
                print_durable_list(c, list);
                return flush_output(c) ? EXIT_OK : c->exit_status;
        }
        if (g_str_equal(action, "remove")) {
                if (!watchd_client_remove_durable_sync(c->client, name, NULL, &error))
                        return report_call_error(c, name, error);
                return EXIT_OK;
        }

        /* resume */
        {
                g_autoptr(WatchdDurable) d = NULL;
                g_autoptr(GHashTable) masks = g_hash_table_new_full(NULL, NULL, NULL, g_free);
                g_autoptr(GString) out = g_string_sized_new(256 * 1024);
                Resume res = { .c = c, .masks = masks, .out = out };
                guint64 since = 0;

                if (c->opt_since && !g_ascii_string_to_unsigned(c->opt_since, 10, 0, G_MAXUINT64, &since, &error))
                        return usage_error("durable", "--since: %s", error->message);
                c->loop = g_main_loop_new(NULL, FALSE);
                d = watchd_client_resume_durable_sync(c->client, name, c->opt_journal, since, NULL, &error);
                if (!d)
                        return report_call_error(c, name, error);
                res.d = d;
                g_signal_connect(d, "events", G_CALLBACK(on_durable_events), &res);
                g_signal_connect(d, "rescan", G_CALLBACK(on_durable_rescan), &res);
                g_signal_connect(d, "caught-up", G_CALLBACK(on_durable_caught_up), &res);
                g_signal_connect(d, "stopped", G_CALLBACK(on_durable_stopped), &res);
                g_signal_connect(c->client, "closed", G_CALLBACK(on_client_closed), c);
                if (c->opt_json) {
                        g_autoptr(JsonBuilder) b = json_builder_new();

                        json_builder_begin_object(b);
                        json_builder_set_member_name(b, "type");
                        json_builder_add_string_value(b, "resumed");
                        json_builder_set_member_name(b, "name");
                        json_builder_add_string_value(b, name);
                        json_builder_set_member_name(b, "journal");
                        json_builder_add_string_value(b, watchd_durable_get_journal(d));
                        json_builder_set_member_name(b, "since");
                        json_builder_add_int_value(b, (gint64) since);
                        json_builder_end_object(b);
                        print_json(b);
                } else
                        warn("resuming %s after %" G_GUINT64_FORMAT " (journal %s)", name, since,
                             watchd_durable_get_journal(d));
                g_unix_signal_add(SIGINT, on_stop_signal, c);
                g_unix_signal_add(SIGTERM, on_stop_signal, c);
                g_unix_fd_add(STDOUT_FILENO, G_IO_ERR, on_stdout_error, c);
                if (c->timeout_ms)
                        g_timeout_add(c->timeout_ms, on_resume_timeout, &res);
                c->exit_status = EXIT_OK;
                g_main_loop_run(c->loop);
                flush_output(c);
                return c->exit_status;
        }
}

/* ------------------------------------------------------------------------ */

static const struct {
        const char *name;
        int (*run)(Context *c, int argc, char **argv);
} commands[] = {
        { "watch", cmd_watch },     { "list", cmd_list },       { "stats", cmd_stats },
        { "clients", cmd_clients }, { "durable", cmd_durable },
};

int main(int argc, char **argv) {
        Context c = { .exit_status = EXIT_OK };
        gboolean opt_version = FALSE;
        const GOptionEntry entries[] = {
                { "version", 0, 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL }, { NULL }
        };
        g_autoptr(GOptionContext) octx = g_option_context_new("COMMAND [OPTION...]");
        g_autoptr(GError) error = NULL;
        int r = -1;

        setlocale(LC_ALL, "");
        /* A closed stdin, stdout or stderr must not be taken by the bus
         * socket, or the event lines would be written into the D-Bus stream. */
        for (int fd = 0; fd <= 2; fd++)
                if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", (fd == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC) != fd)
                        return EXIT_ERROR;
        /* A reader that goes away is seen as EPIPE by flush_output(). */
        signal(SIGPIPE, SIG_IGN);

        g_option_context_set_summary(octx,
                                     "Watch files through watchd, the file-change notification service.\n\n"
                                     "Commands:\n"
                                     "  watch [OPTION...] PATH...   Print events under PATH as they arrive\n"
                                     "  list [OPTION...] [PATH...]  Add watches and show them as watchd holds them\n"
                                     "  stats [--json]              Print watchd's version and counters\n"
                                     "  clients [--json]            Print the programs watchd serves\n"
                                     "  durable ACTION [OPTION...]  Create, list, resume or remove durable subscriptions\n\n"
                                     "'watchctl COMMAND --help' shows the options of a command; see watchctl(1).");
        /* Stop at the command: its own options follow it. */
        g_option_context_set_strict_posix(octx, TRUE);
        g_option_context_add_main_entries(octx, entries, NULL);
        add_bus_entries(octx, &c);
        if (!g_option_context_parse(octx, &argc, &argv, &error)) {
                r = usage_error(NULL, "%s", error->message);
                goto out;
        }
        if (opt_version) {
                printf("watchctl %s\n", PACKAGE_VERSION);
                r = EXIT_OK;
                goto out;
        }
        if (argc < 2) {
                r = usage_error(NULL, "no command (watch, list, stats, clients or durable)");
                goto out;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
                if (g_str_equal(argv[1], commands[i].name)) {
                        /* The command's parser sees "watchctl OPTIONS... ARGS...". */
                        argv[1] = argv[0];
                        r = commands[i].run(&c, argc - 1, argv + 1);
                        goto out;
                }
        r = usage_error(NULL, "unknown command \"%s\" (watch, list, stats, clients or durable)", argv[1]);
out:
        context_done(&c);
        return r;
}
