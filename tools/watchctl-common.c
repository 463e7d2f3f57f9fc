/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watchctl-common - what every command of watchctl uses: the messages on
 * stderr (a usage error, a warning, one line for a failed call), the output
 * (quitting the main loop, flushing stdout, a JSON line), what ends the main
 * loop of "watch" and "durable resume" (a signal, stdout closed, the bus
 * lost), and the bus options, the paths of the command line and the
 * connection to the bus.
 *
 * The lowest of watchctl's files (watchctl-common.h gives their order): it calls
 * none of the others.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "watchctl-common.h"
#include <watchd.h>

/* ------------------------------------------------------------------------ */
/* Messages */

int watchctl_usage_error(const char *command, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fputs("watchctl: ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'watchctl%s%s --help'.\n", command ? " " : "", command ? command : "");
        return EXIT_USAGE;
}

void watchctl_warn(const char *fmt, ...) {
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
                watchctl_warn("watchd is not running on the bus at %s%s: start it with `watchd --address %s`",
                              c->opt_address, failed, c->opt_address);
        else if (c->opt_session)
                watchctl_warn("watchd is not running on the session bus%s: start it with `watchd --session`", failed);
        else
                watchctl_warn("watchd is not running on the system bus%s: start it with `systemctl start watchd`",
                              failed);
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
int watchctl_report_call_error(const Context *c, const char *subject, const GError *error) {
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
                watchctl_warn("watchd stopped or did not answer (%s)", message);
        else if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
                watchctl_warn("watchd did not answer in time: is it stuck? (%s)", message);
        else if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED))
                watchctl_warn("lost the connection to %s", bus_description(c));
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0 &&
                 g_str_has_prefix(message, "Rejected send message"))
                /* The bus, not the daemon, refused: its policy file is missing. */
                watchctl_warn("%s refused the call to watchd (AccessDenied): is watchd's D-Bus policy installed?",
                              bus_description(c));
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0)
                watchctl_warn("%s: permission denied (AccessDenied)", prefix);
        else if (g_strcmp0(remote, "org.freedesktop.DBus.Error.FileNotFound") == 0)
                watchctl_warn("%s: no such file or directory (FileNotFound)", prefix);
        else if (g_strcmp0(remote, WATCHD_ERROR_NO_SUCH_WATCH) == 0)
                watchctl_warn("%s: no such watch (NoSuchWatch)", prefix);
        else if (shortname) {
                /* InvalidArgs, LimitsExceeded: the daemon's message says what and why. */
                size_t n = strlen(message);

                watchctl_warn("%s: %.*s (%s)", prefix, (int) (n > 0 && message[n - 1] == '.' ? n - 1 : n), message,
                              shortname);
        } else
                watchctl_warn("%s: %s", prefix, message);
        return EXIT_ERROR;
}

/* ------------------------------------------------------------------------ */
/* Output */

void watchctl_quit(Context *c, int status) {
        if (c->stopping)
                return; /* the first reason to stop is the one reported */
        c->stopping = TRUE;
        c->exit_status = status;
        if (c->loop)
                g_main_loop_quit(c->loop);
}

/* Flushes stdout; a reader that went away (head -n 1) ends the watch, any
 * other write error too, said once. */
gboolean watchctl_flush_output(Context *c) {
        int e;

        if (c->output_failed)
                return FALSE;
        errno = 0;
        if (fflush(stdout) == 0 && !ferror(stdout))
                return TRUE;
        e = errno;
        c->output_failed = TRUE;
        if (e == EPIPE)
                watchctl_quit(c, EXIT_OK);
        else {
                watchctl_warn("cannot write to standard output: %s", e ? g_strerror(e) : "write error");
                watchctl_quit(c, EXIT_ERROR);
        }
        return FALSE;
}

void watchctl_print_json(JsonBuilder *b) {
        g_autoptr(JsonGenerator) gen = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(b);
        g_autofree char *text = NULL;

        json_generator_set_root(gen, root);
        text = json_generator_to_data(gen, NULL);
        puts(text);
}

/* ------------------------------------------------------------------------ */
/* What ends the main loop of "watch" and "durable resume" */

void watchctl_on_client_closed(WatchdClient *client, const GError *error, gpointer userdata) {
        Context *c = userdata;

        watchctl_warn("lost the connection to %s%s%s", bus_description(c), error ? ": " : "",
                      error ? error->message : "");
        watchctl_quit(c, EXIT_ERROR);
}

/* The reader of a pipe on stdout went away (head -n 1): stop now rather
 * than at the next event. Terminals and files never report this. */
gboolean watchctl_on_stdout_error(int fd, GIOCondition condition, gpointer userdata) {
        watchctl_quit(userdata, EXIT_OK);
        return G_SOURCE_REMOVE;
}

gboolean watchctl_on_stop_signal(gpointer userdata) {
        watchctl_quit(userdata, EXIT_OK);
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
void watchctl_add_bus_entries(GOptionContext *octx, Context *c) {
        GOptionEntry entries[G_N_ELEMENTS(bus_entries)];

        memcpy(entries, bus_entries, sizeof(entries));
        entries[0].arg_data = &c->opt_system;
        entries[1].arg_data = &c->opt_session;
        entries[2].arg_data = &c->opt_address;
        entries[3].arg_data = &c->opt_no_stream;
        g_option_context_add_main_entries(octx, entries, NULL);
}

/* Parses argv of one command; returns -1 to go on, else the exit status. */
int watchctl_parse_command(Context *c, const char *command, const char *params, const char *summary,
                           const GOptionEntry *entries, int *argc, char ***argv) {
        g_autoptr(GOptionContext) octx = g_option_context_new(params);
        g_autoptr(GError) error = NULL;
        g_autofree char *prgname = g_strdup_printf("watchctl %s", command);

        g_set_prgname(prgname);
        g_option_context_set_summary(octx, summary);
        if (entries)
                g_option_context_add_main_entries(octx, entries, NULL);
        watchctl_add_bus_entries(octx, c);
        /* GLib overwrites a string option without freeing what another
         * context (the main one) stored there: the last --address wins. */
        g_autofree char *main_address = c->opt_address;
        gboolean parsed = g_option_context_parse(octx, argc, argv, &error);
        if (c->opt_address == main_address)
                main_address = NULL; /* not replaced: still c's */
        if (!parsed)
                return watchctl_usage_error(command, "%s", error->message);
        if ((c->opt_system + c->opt_session + (c->opt_address != NULL)) > 1)
                return watchctl_usage_error(command, "--system, --session and --address exclude each other");
        if (c->opt_address && !g_dbus_is_address(c->opt_address))
                return watchctl_usage_error(command, "--address \"%s\" is not a D-Bus address (e.g. unix:path=/run/x)",
                                            c->opt_address);
        return -1;
}

/* The daemon wants absolute paths. A relative one is taken from the current
 * directory, its directory part resolved by realpath(3) so that "./x" and
 * "../x" read well in events; the last component is kept as given, so that
 * --no-dereference still sees (and refuses) a symbolic link. */
char *watchctl_absolute_path(const char *p) {
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

int watchctl_connect_bus(Context *c) {
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
                        watchctl_warn("cannot connect to the bus at %s: %s", c->opt_address, error->message);
                else
                        watchctl_warn("cannot connect to %s (is dbus running?): %s", bus_description(c), error->message);
                return EXIT_ERROR;
        }
        return -1;
}
