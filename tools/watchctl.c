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
 *
 * The files: watchctl.c (this one: main and the command table, above all
 * the others), watchctl-common.c (messages, output, the bus options and
 * connection), watchctl-watch.c (the watches and "watch"),
 * watchctl-report.c ("list", "stats", "clients"), watchctl-durable.c
 * ("durable"); watchctl-common.h, which they share, gives their layers.
 */

#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <gio/gio.h>

#include "config.h"
#include "event-format.h"
#include "watchctl-common.h"
#include <watchd.h>

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
        /* A reader that goes away is seen as EPIPE by watchctl_flush_output(). */
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
        watchctl_add_bus_entries(octx, &c);
        if (!g_option_context_parse(octx, &argc, &argv, &error)) {
                r = watchctl_usage_error(NULL, "%s", error->message);
                goto out;
        }
        if (opt_version) {
                printf("watchctl %s\n", PACKAGE_VERSION);
                r = EXIT_OK;
                goto out;
        }
        if (argc < 2) {
                r = watchctl_usage_error(NULL, "no command (watch, list, stats, clients or durable)");
                goto out;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
                if (g_str_equal(argv[1], commands[i].name)) {
                        /* The command's parser sees "watchctl OPTIONS... ARGS...". */
                        argv[1] = argv[0];
                        r = commands[i].run(&c, argc - 1, argv + 1);
                        goto out;
                }
        r = watchctl_usage_error(NULL, "unknown command \"%s\" (watch, list, stats, clients or durable)", argv[1]);
out:
        context_done(&c);
        return r;
}
